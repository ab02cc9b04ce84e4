/* SPDX-License-Identifier: MIT */
/* A job's aggregation tree over the switch tiers (tiers.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tiers.h"

void
tiers_fini(struct tiers *tr)
{
	free(tr->m);
	memset(tr, 0, sizeof(*tr));
}

int
tiers_build(const struct topology *t, const struct topo_job *job, uint32_t max_world,
	    struct tiers *tr, char *err, size_t errlen)
{
	uint8_t *in;	 /* switches taking part */
	uint32_t *count; /* members of each switch */

	memset(tr, 0, sizeof(*tr));
	tr->nb_nodes = t->nb_nodes;
	tr->m = calloc(t->nb_nodes + 1, sizeof(*tr->m));
	in = calloc(t->nb_nodes + 1, 1);
	count = calloc(t->nb_nodes + 1, sizeof(*count));
	if (!tr->m || !in || !count) {
		free(in);
		free(count);
		tiers_fini(tr);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < t->nb_nodes; i++)
		tr->m[i].up = -1;
	if (job->root < 0 || (uint32_t)job->root >= t->nb_nodes) {
		snprintf(err, errlen, "job %s has no root switch", job->name);
		goto bad;
	}
	/* Mark every switch from each host's up to the root. */
	for (uint16_t k = 0; k < job->nb_hosts; k++) {
		int h = job->hosts[k], s, hops = 0;
		uint32_t depth = 1;

		if (h < 0 || (uint32_t)h >= t->nb_nodes || t->nodes[h].kind != TOPO_HOST ||
		    t->nodes[h].attach < 0) {
			snprintf(err, errlen, "job %s: rank %u is not a host on a switch",
				 job->name, k);
			goto bad;
		}
		for (s = t->nodes[h].attach; s != job->root; s = t->nodes[s].parent, depth++) {
			if (s < 0 || ++hops > (int)t->nb_nodes) {
				snprintf(err, errlen,
					 "job %s: host %s's switches do not lead up to the job's "
					 "root %s",
					 job->name, t->nodes[h].name, t->nodes[job->root].name);
				goto bad;
			}
			in[s] = 1;
		}
		in[job->root] = 1;
		if (depth > tr->max_depth)
			tr->max_depth = depth;
	}
	/* Members of each switch: its hosts in rank order, then its switches
	 * in node order ('count': members so far). */
	for (uint16_t k = 0; k < job->nb_hosts; k++) {
		int h = job->hosts[k], s = t->nodes[h].attach;

		tr->m[h].up = s;
		tr->m[h].rank = (uint16_t)count[s]++;
	}
	for (uint32_t s = 0; s < t->nb_nodes; s++) {
		if (!in[s])
			continue;
		tr->nb_switches++;
		if ((int)s == job->root)
			continue;
		tr->m[s].up = t->nodes[s].parent;
		tr->m[s].rank = (uint16_t)count[t->nodes[s].parent]++;
	}
	for (uint32_t s = 0; s < t->nb_nodes; s++) {
		if (in[s] && count[s] > max_world) {
			snprintf(err, errlen,
				 "job %s: switch %s aggregates %u members, more than the %u a "
				 "switch's bitmaps hold",
				 job->name, t->nodes[s].name, count[s], max_world);
			goto bad;
		}
	}
	for (uint32_t i = 0; i < t->nb_nodes; i++)
		tr->m[i].world = tr->m[i].up >= 0 ? (uint16_t)count[tr->m[i].up] : 0;
	free(count);
	free(in);
	return 0;
bad:
	free(in);
	free(count);
	tiers_fini(tr);
	return -1;
}
