/* SPDX-License-Identifier: MIT */
/*
 * Every rank's tensor round, simulated on one ina-host: what each rank of the
 * job sent in a round of a sparsified (or planned) tensor, computed from the
 * deterministic workload with the same options and the same code
 * ina_allreduce() runs (tensor_round.h: planner, sparsifier, DEFERRED
 * take-back). The result of the round is then checked against the sum of
 * those vectors (workload_check). One job: simulate; the check is workload.c's.
 *
 * A round is two steps around the real allreduce: sim_ranks_round() plans
 * and sparsifies every rank's gradient; sim_ranks_result() takes the result
 * the job returned and the blocks it marked DEFERRED, checks that each
 * deferred block's sum was under the round's bound, gives every rank's part
 * of them back to its residual and makes the result the next round's planning
 * reference, as each real rank does.
 */
#ifndef INA_HOST_SIM_RANKS_H
#define INA_HOST_SIM_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "tensor_round.h"
#include "workload.h"

struct sim_ranks;

/* 'world' simulated ranks, each with a tensor round of 'tc' (tc->world is
 * the job's world). NULL with a sentence in 'err'. */
struct sim_ranks *sim_ranks_create(const struct tround_config *tc, char *err, size_t err_size);
void sim_ranks_destroy(struct sim_ranks *sm); /* Accepts NULL. */

/* Round 'round' on every simulated rank: its gradient from 'w' through its
 * tensor round. Call once per round, in order. 0 or -errno. */
int sim_ranks_round(struct sim_ranks *sm, struct workload *w, uint32_t round);

/* B of the round in progress (every rank's alike). */
uint16_t sim_ranks_block_size(const struct sim_ranks *sm);
/* Its cut: 2^sub_log sub-blocks a block (the planner's, or the job's). */
uint8_t sim_ranks_sub_log(const struct sim_ranks *sm);

/*
 * The round's result 'got' (n floats) and the job's DEFERRED marks
 * 'deferred' (one byte per block at the round's B, or NULL for none). Checks
 * every deferred block: the sum of what the ranks sent there is not all zero
 * and under the round's bound (exactly when 'exact', else with the room of
 * the encoding's rounding, see sim_ranks.c). Then ends the round on
 * every rank. Returns 0, -EPROTO if a deferred block was not under the bound
 * (the first such block in '*bad_block'), or -EINVAL (no round in progress).
 */
int sim_ranks_result(struct sim_ranks *sm, const float *got, const uint8_t *deferred,
		     size_t n_blocks, int exact, uint32_t *bad_block);

/* What every rank contributed to the last round's result: 'world' vectors of
 * n floats, what it sent with its deferred blocks zeroed (for
 * workload_check), owned by 'sm'; valid after sim_ranks_result(). */
const float *const *sim_ranks_sent(const struct sim_ranks *sm);

#endif
