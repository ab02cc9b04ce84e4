/* SPDX-License-Identifier: MIT */
/*
 * The check of a job over several switch tiers. Each ina-host there runs its
 * engine as a rank of its own switch (tiers.h) and checks the result against
 * its switch's ranks only, which is not the job's sum; so ina-testbed makes
 * the job's sum itself, from the same synthetic generator the hosts use
 * (host/src/workload.c: each host's data from its seed, round and rank on
 * its switch; plan_host_seed() gives each switch's hosts their own seed, so
 * no two racks send the same data), and compares its XXH3-64 with the
 * sum_hash every host reports for every round (the hash of its result,
 * bit for bit: synthetic f32 and i32 sums are exact in any order).
 */
#ifndef TB_EXPECT_H
#define TB_EXPECT_H

#include <stddef.h>
#include <stdint.h>

#include "tiers.h"
#include "topology.h"

/* 1 if 'job''s results can be checked this way (synthetic, not bf16). */
int expect_exact(const struct topo_job *job);

/*
 * Fills want[0 .. job->rounds) with the hash of each round's sum. 0, or -1
 * with a sentence in 'err' (out of memory, data that is not exact).
 */
int expect_hashes(const struct topo_job *job, const struct tiers *tr, uint64_t *want, char *err,
		  size_t errlen);

#endif
