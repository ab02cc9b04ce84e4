/* SPDX-License-Identifier: MIT */
/*
 * topology_print(): the summary `ina-testbed check` shows (topology.h):
 * counts, the switches and what hangs under each, link shaping grouped
 * when many links share it, each job with its tenant and its tree, and the
 * attacks.
 */
#include <stdlib.h>
#include <string.h>

#include "ina/wire.h"
#include "topo_units.h"
#include "topology.h"

#define MAX_LISTED 8	  /* names listed in full before "... (N in all)" */
#define MAX_TREE_LINES 48 /* lines of one job's tree */
#define MAX_JOBS 32	  /* jobs printed in full */

const char *
topology_role_name(enum topo_role r)
{
	switch (r) {
	case TOPO_ROLE_RACK:
		return "rack";
	case TOPO_ROLE_SPINE:
		return "spine";
	case TOPO_ROLE_CORE:
		return "core";
	case TOPO_ROLE_REPLICA:
		return "replica";
	}
	return "?";
}

static const char *
enc_name(uint8_t e)
{
	const char *name = ina_wire_encoding_name(e);

	return name ? name : "?";
}

static void
print_shaping(const struct topo_link *l, FILE *f)
{
	char bw[32], lat[32];

	fprintf(f, "%s, latency %s, loss %g, mtu %u",
		l->bandwidth_bps ? topo_format_rate(l->bandwidth_bps, bw, sizeof(bw)) : "unshaped",
		topo_format_duration(l->latency_ns, lat, sizeof(lat)), l->loss, l->mtu);
}

static int
same_shaping(const struct topo_link *a, const struct topo_link *b)
{
	return a->bandwidth_bps == b->bandwidth_bps && a->latency_ns == b->latency_ns &&
	       a->loss == b->loss && a->mtu == b->mtu;
}

/* The children of switch 's' (hosts attached, switches uplinked), in
 * 'mark' nodes only when mark is not NULL. */
static void
print_children(const struct topology *t, int s, const uint8_t *mark, FILE *f)
{
	uint32_t nb_hosts = 0, nb_sw = 0;

	for (uint32_t i = 0; i < t->nb_nodes; i++) {
		const struct topo_node *n = &t->nodes[i];

		if (mark && !mark[i])
			continue;
		if (n->kind == TOPO_HOST && n->attach == s) {
			if (nb_hosts++ < MAX_LISTED)
				fprintf(f, "%s%s", nb_hosts + nb_sw > 1 ? " " : "", n->name);
		} else if (n->kind == TOPO_SWITCH && n->parent == s) {
			if (nb_sw++ < MAX_LISTED)
				fprintf(f, "%s%s", nb_hosts + nb_sw > 1 ? " " : "", n->name);
		}
	}
	if (nb_hosts + nb_sw > MAX_LISTED)
		fprintf(f, " ... (%u hosts, %u switches)", nb_hosts, nb_sw);
	if (!nb_hosts && !nb_sw)
		fprintf(f, "-");
}

/* The tree under 's', one line per switch, indented by depth; in a large
 * topology only the first two switches of each level are expanded, and a
 * tree prints at most MAX_TREE_LINES lines ('*budget' counts down). */
static void
print_tree(const struct topology *t, int s, const uint8_t *mark, int depth, int *budget, FILE *f)
{
	uint32_t shown = 0, more = 0;

	if (*budget <= 0 || depth > 16) {
		if (*budget > 0)
			fprintf(f, "    %*s...\n", depth * 2, "");
		*budget = 0;
		return;
	}
	(*budget)--;
	fprintf(f, "    %*s%s <- ", depth * 2, "", t->nodes[s].name);
	print_children(t, s, mark, f);
	fprintf(f, "\n");
	for (uint32_t i = 0; i < t->nb_nodes; i++) {
		if (t->nodes[i].kind != TOPO_SWITCH || t->nodes[i].parent != s ||
		    (mark && !mark[i]))
			continue;
		if ((shown < 2 || t->nb_nodes <= 64) && *budget > 0) {
			print_tree(t, (int)i, mark, depth + 1, budget, f);
			shown++;
		} else {
			more++;
		}
	}
	if (more)
		fprintf(f, "    %*s... and %u more like these\n", (depth + 1) * 2, "", more);
}

void
topology_print(const struct topology *t, FILE *f)
{
	uint32_t nb_sw = 0, nb_hosts = 0;
	uint8_t *mark;

	for (uint32_t i = 0; i < t->nb_nodes; i++)
		t->nodes[i].kind == TOPO_HOST ? nb_hosts++ : nb_sw++;
	fprintf(f, "topology %s (%s): %u switches, %u hosts, %u links, %u jobs", t->name,
		t->file ? t->file : "-", nb_sw, nb_hosts, t->nb_links, t->nb_jobs);
	if (t->nb_attacks)
		fprintf(f, ", %u attacks", t->nb_attacks);
	fprintf(f, "\n");
	fprintf(f, "switches:\n");
	for (uint32_t i = 0, listed = 0; i < t->nb_nodes; i++) {
		const struct topo_node *n = &t->nodes[i];

		if (n->kind != TOPO_SWITCH)
			continue;
		if (listed++ >= 16 && nb_sw > 20) {
			fprintf(f, "  ... and %u more\n", nb_sw - 16);
			break;
		}
		fprintf(f, "  %-12s %-7s slots %u, cores %u, uplink %s", n->name,
			topology_role_name(n->role), n->slots, n->cores,
			n->parent >= 0 ? t->nodes[n->parent].name : "- (a root)");
		if (n->replica_of >= 0)
			fprintf(f, ", replica of %s", t->nodes[n->replica_of].name);
		if (n->share == TOPO_SHARE_FAIR)
			fprintf(f, ", share fair (total %u, min %u slots)", n->share_total,
				n->share_min_slots ? n->share_min_slots : 1);
		else if (n->share == TOPO_SHARE_FIRST_COME)
			fprintf(f, ", share first-come");
		fprintf(f, "\n    under it: ");
		print_children(t, (int)i, NULL, f);
		fprintf(f, "\n");
	}
	/* Links, grouped by shaping: consecutive links alike print as one line. */
	fprintf(f, "links:\n");
	for (uint32_t i = 0; i < t->nb_links;) {
		uint32_t k = i + 1;

		while (k < t->nb_links && same_shaping(&t->links[i], &t->links[k]))
			k++;
		if (k - i == 1)
			fprintf(f, "  %s - %s: ", t->nodes[t->links[i].a].name,
				t->nodes[t->links[i].b].name);
		else
			fprintf(f, "  %u links, %s - %s to %s - %s: ", k - i,
				t->nodes[t->links[i].a].name, t->nodes[t->links[i].b].name,
				t->nodes[t->links[k - 1].a].name, t->nodes[t->links[k - 1].b].name);
		print_shaping(&t->links[i], f);
		fprintf(f, "\n");
		i = k;
	}
	fprintf(f, "jobs:\n");
	mark = calloc(t->nb_nodes ? t->nb_nodes : 1, 1);
	for (uint32_t i = 0; i < t->nb_jobs; i++) {
		const struct topo_job *j = &t->jobs[i];
		int budget = MAX_TREE_LINES;

		if (i == MAX_JOBS) {
			fprintf(f, "  ... and %u more jobs\n", t->nb_jobs - MAX_JOBS);
			break;
		}
		fprintf(f, "  %s (id %u", j->name, j->job_id);
		if (j->tenant)
			fprintf(f, ", tenant %s, index %u", j->tenant, j->tenant_index);
		fprintf(f, "): %u hosts, tensor %u %s, %u rounds, block %u, %u lanes, ",
			j->nb_hosts, j->tensor_len, enc_name(j->encoding), j->rounds, j->block_size,
			j->lanes);
		if (j->data == TOPO_DATA_FILE)
			fprintf(f, "data %s\n", j->path);
		else
			fprintf(f, "synthetic density %g seed %llu\n", j->density,
				(unsigned long long)j->seed);
		fprintf(f, "    root %s; tree:\n", t->nodes[j->root].name);
		if (!mark)
			continue;
		memset(mark, 0, t->nb_nodes);
		for (uint16_t k = 0; k < j->nb_hosts; k++) {
			int n = j->hosts[k];

			mark[n] = 1;
			for (n = t->nodes[n].attach; n >= 0 && !mark[n]; n = t->nodes[n].parent) {
				mark[n] = 1;
				if (n == j->root)
					break;
			}
		}
		print_tree(t, j->root, mark, 0, &budget, f);
	}
	free(mark);
	if (!t->nb_attacks)
		return;
	fprintf(f, "attacks:\n");
	for (uint32_t i = 0; i < t->nb_attacks; i++) {
		const struct topo_attack *a = &t->attacks[i];
		char rate[32];

		if (i == MAX_JOBS) {
			fprintf(f, "  ... and %u more attacks\n", t->nb_attacks - MAX_JOBS);
			break;
		}
		fprintf(f, "  %s on job %s at %s\n", t->nodes[a->host].name, t->jobs[a->job].name,
			topo_format_rate(a->rate_bps, rate, sizeof(rate)));
	}
}
