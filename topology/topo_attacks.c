/* SPDX-License-Identifier: MIT */
/* A topology's attacks (ina-sim only): each from a host in no job and in no
 * other attack, against a job of the file, at a rate above 0, by default its
 * link's bandwidth (topo_ctx.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_ctx.h"
#include "topo_units.h"

#define DEFAULT_ATTACK_RATE 1000000000ULL /* bit/s, from an unshaped link */

/* The index of the job called 'name', or -1. */
static int
find_job(const struct topology *t, const char *name)
{
	for (uint32_t k = 0; k < t->nb_jobs; k++) {
		if (strcmp(t->jobs[k].name, name) == 0)
			return (int)k;
	}
	return -1;
}

/* Attack i's attacker: a host; 'role[n]' is 1 + the index of the job host n
 * is in, or -(1 + the index of the attack it is the attacker of), or 0. */
static int
attack_from(struct ctx *c, uint32_t i, const struct raw_attack *ra, int *role)
{
	const struct topology *t = c->t;
	char field[128], entry[64];
	int h = topo_find_node(c, ra->from);

	topo_pathf(entry, sizeof(entry), "attacks[%u]", i);
	topo_pathf(field, sizeof(field), "%s.from", entry);
	if (h < 0)
		return topo_fail(c, topo_line_of(c, field, entry), field, "no host called '%s'",
				 ra->from);
	if (t->nodes[h].kind != TOPO_HOST)
		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "'%s' is a switch: an attacker is a host", ra->from);
	if (role[h] > 0) {
		const struct topo_job *j = &t->jobs[role[h] - 1];

		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "host '%s' is in jobs[%d] ('%s', line %d): an attacker is in "
				 "no job",
				 ra->from, role[h] - 1, j->name, j->line);
	}
	if (role[h] < 0)
		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "host '%s' is already the attacker of attacks[%d] (line %d): one "
				 "attack per host",
				 ra->from, -role[h] - 1, t->attacks[-role[h] - 1].line);
	role[h] = -(int)(i + 1);
	return h;
}

int
topo_build_attacks(struct ctx *c)
{
	struct raw_topology *r = c->raw;
	struct topology *t = c->t;
	char field[128], entry[64];
	int *role = NULL, ret = -1;

	if (!r->attacks_count)
		return 0;
	t->attacks = calloc(r->attacks_count, sizeof(*t->attacks));
	role = calloc(t->nb_nodes, sizeof(*role));
	if (!t->attacks || !role) {
		topo_fail(c, 1, "", "out of memory");
		goto out;
	}
	for (uint32_t k = 0; k < t->nb_jobs; k++)
		for (uint16_t m = 0; m < t->jobs[k].nb_hosts; m++)
			if (!role[t->jobs[k].hosts[m]])
				role[t->jobs[k].hosts[m]] = (int)k + 1;
	for (uint32_t i = 0; i < r->attacks_count; i++) {
		const struct raw_attack *ra = &r->attacks[i];
		struct topo_attack *a = &t->attacks[i];
		const struct topo_link *l;
		int h, j;

		topo_pathf(entry, sizeof(entry), "attacks[%u]", i);
		a->line = topo_line_of(c, entry, NULL);
		t->nb_attacks = i + 1;
		h = attack_from(c, i, ra, role);
		if (h < 0)
			goto out;
		a->host = h;
		topo_pathf(field, sizeof(field), "%s.job", entry);
		j = find_job(t, ra->job);
		if (j < 0) {
			topo_fail(c, topo_line_of(c, field, entry), field, "no job called '%s'",
				  ra->job);
			goto out;
		}
		a->job = (uint32_t)j;
		topo_pathf(field, sizeof(field), "%s.rate", entry);
		if (ra->rate) {
			int e = topo_parse_rate(ra->rate, &a->rate_bps);

			if (e == -EINVAL) {
				topo_fail(c, topo_line_of(c, field, entry), field,
					  "'%s' is not a rate (e.g. 10Gbit, 100Mbit)", ra->rate);
				goto out;
			}
			if (e < 0) {
				topo_fail(c, topo_line_of(c, field, entry), field,
					  "'%s' is out of range (whole bit/s, at most 1Tbit)",
					  ra->rate);
				goto out;
			}
			if (!a->rate_bps) {
				topo_fail(c, topo_line_of(c, field, entry), field,
					  "'%s': an attack sends at a rate above 0 (leave it out "
					  "for the link's bandwidth)",
					  ra->rate);
				goto out;
			}
		} else {
			l = topo_link_between(c, h, t->nodes[h].attach);
			a->rate_bps = l && l->bandwidth_bps ? l->bandwidth_bps
							    : DEFAULT_ATTACK_RATE;
		}
	}
	ret = 0;
out:
	free(role);
	return ret;
}
