/* SPDX-License-Identifier: MIT */
/*
 * A job's aggregation tree over the switch tiers (DESIGN.md, hierarchical
 * aggregation), as a pure function of the topology, so ina-testbed and
 * ina-sim configure the same ranks. Every switch on the path from one of
 * the job's hosts up to the job's root takes part; its members are first
 * the job's hosts that hang off it (in the job's rank order), then the
 * switches below it that take part (in node order). A member's rank is its
 * position there and its world the number of members: a host's engine runs
 * with that rank and world on its switch, and a switch below the root is
 * one worker of the same job upstream (ina-switch --uplink-job
 * JOB=RANK/WORLD). A job on one switch is that switch alone, its hosts
 * ranked as in the job.
 */
#ifndef TB_TIERS_H
#define TB_TIERS_H

#include <stddef.h>
#include <stdint.h>

#include "topology.h"

struct tiers_member {
	int up;		      /* node index of the switch it sends to, -1: the
				 * root, or not in the job */
	uint16_t rank, world; /* on 'up' */
};

struct tiers {
	uint32_t nb_nodes;
	struct tiers_member *m; /* by node index */
	uint32_t nb_switches;	/* switches taking part, the root included */
	uint32_t max_depth;	/* tiers of switches: 1 on one switch */
};

/*
 * Builds job 'job''s tree in 't'. 0, or -1 with a sentence in 'err': a rank
 * that is not a host on a switch, a switch whose chain of parents does not
 * reach the job's root, a switch with more than 'max_world' members (the
 * pipeline's bitmaps), out of memory.
 */
int tiers_build(const struct topology *t, const struct topo_job *job, uint32_t max_world,
		struct tiers *tr, char *err, size_t errlen);
void tiers_fini(struct tiers *tr); /* Accepts a zeroed one. */

#endif
