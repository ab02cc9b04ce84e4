/* SPDX-License-Identifier: MIT */
/*
 * Every rank's sparsifier, simulated on one ina-host: what each rank of the
 * job sent in a round of a sparsified tensor, computed from the deterministic
 * workload with the same options and the same sparsifier code ina_allreduce()
 * runs (sparsify_opts.h, sparsify.h). The result of the round is then checked
 * against the sum of those vectors (workload_check). One job: simulate; the
 * check is workload.c's.
 *
 * Each rank keeps its own sparsifier (its residual) and the vector it sent in
 * the last round, so a DEFERRED result block can later go back into every
 * simulated rank's residual with sparsify_defer_block(rank's sparsifier,
 * block, rank's sent vector + block * B) before the next round.
 */
#ifndef INA_HOST_SIM_RANKS_H
#define INA_HOST_SIM_RANKS_H

#include <stdint.h>

#include "ina.h"
#include "workload.h"

struct sim_ranks;

/* 'world' simulated ranks, each with a sparsifier of options 'opt' over 'n'
 * elements in blocks of 'block_size'. NULL with errno EINVAL (bad options)
 * or ENOMEM. */
struct sim_ranks *sim_ranks_create(const struct ina_sparsify *opt, uint32_t n,
				   uint16_t block_size, uint16_t world);
void sim_ranks_destroy(struct sim_ranks *sm);	/* Accepts NULL. */

/* Round 'round' on every simulated rank: its gradient from 'w', through its
 * sparsifier, into what it sent. Call once per round, in order. 0 or -errno. */
int sim_ranks_round(struct sim_ranks *sm, struct workload *w, uint32_t round);

/* What every rank sent in the last round: 'world' vectors of n floats, owned
 * by 'sm' (for workload_check). */
const float *const *sim_ranks_sent(const struct sim_ranks *sm);

#endif
