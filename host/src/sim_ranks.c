/* SPDX-License-Identifier: MIT */
/*
 * Every rank's tensor round simulated on this host (sim_ranks.h): per rank a
 * tensor round and what it contributed to the last result.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/encode.h"
#include "ina/wire.h"
#include "sim_ranks.h"

struct sim_ranks {
	uint16_t world;
	uint32_t n;
	int in_round;				/* sim_ranks_round() done, result not yet */
	float *grad;				/* one rank's gradient (scratch) */
	struct tround *tr[INA_MAX_WORLD];	/* rank q's round state */
	struct tround_step step[INA_MAX_WORLD]; /* rank q's round in progress */
	float *sent[INA_MAX_WORLD];		/* what rank q contributed, deferred blocks 0 */
};

struct sim_ranks *
sim_ranks_create(const struct tround_config *tc, char *err, size_t err_size)
{
	struct sim_ranks *sm;

	if (tc->world == 0 || tc->world > INA_MAX_WORLD || tc->n == 0 || tc->n > UINT32_MAX) {
		snprintf(err, err_size, "cannot simulate %u ranks of %zu elements", tc->world,
			 tc->n);
		return NULL;
	}
	sm = calloc(1, sizeof(*sm));
	if (!sm) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	sm->world = tc->world;
	sm->n = (uint32_t)tc->n;
	sm->grad = malloc(tc->n * sizeof(float));
	for (uint16_t q = 0; q < sm->world; q++) {
		sm->tr[q] = tround_create(tc, err, err_size);
		sm->sent[q] = calloc(tc->n, sizeof(float));
		if (!sm->tr[q] || !sm->sent[q] || !sm->grad) {
			if (sm->tr[q])
				snprintf(err, err_size, "out of memory for %u simulated ranks",
					 sm->world);
			sim_ranks_destroy(sm);
			return NULL;
		}
	}
	return sm;
}

void
sim_ranks_destroy(struct sim_ranks *sm)
{
	if (!sm)
		return;
	for (uint16_t q = 0; q < sm->world; q++) {
		tround_destroy(sm->tr[q]);
		free(sm->sent[q]);
	}
	free(sm->grad);
	free(sm);
}

int
sim_ranks_round(struct sim_ranks *sm, struct workload *w, uint32_t round)
{
	for (uint16_t q = 0; q < sm->world; q++) {
		int ret = workload_fill(w, round, q, sm->grad);

		if (ret < 0)
			return ret;
		ret = tround_begin(sm->tr[q], sm->grad, &sm->step[q]);
		if (ret < 0)
			return ret;
		/* A dense round sends the gradient itself: keep it. */
		memcpy(sm->sent[q], sm->step[q].send, (size_t)sm->n * sizeof(float));
	}
	sm->in_round = 1;
	return 0;
}

uint16_t
sim_ranks_block_size(const struct sim_ranks *sm)
{
	return sm->step[0].block_size;
}

uint8_t
sim_ranks_sub_log(const struct sim_ranks *sm)
{
	return sm->step[0].sub_log;
}

/*
 * Was block [off, off + len) under 'bound' at the switch? The switch's sum
 * is the ranks' values added in arrival order (in bf16 after each rank's
 * rounding, in i32 after scaling), so outside exact data the rule is
 * checked with the room of the encoding's error: every |sum| below bound
 * plus 2^-7 of the sum of magnitudes (above the bf16 and i32 rounding of
 * N <= 64 addends).
 */
static int
block_under_bound(const struct sim_ranks *sm, uint32_t off, uint32_t len, float bound, int exact)
{
	int nonzero = 0;

	for (uint32_t i = off; i < off + len; i++) {
		float fs = 0;
		double s = 0, a = 0;

		for (uint16_t q = 0; q < sm->world; q++) {
			fs += sm->sent[q][i];
			s += sm->sent[q][i];
			a += fabs((double)sm->sent[q][i]);
		}
		if (exact ? !(fabsf(fs) < bound) : !(fabs(s) < (double)bound + a / 128))
			return 0;
		nonzero |= a != 0;
	}
	return nonzero;
}

int
sim_ranks_result(struct sim_ranks *sm, const float *got, const uint8_t *deferred, size_t n_blocks,
		 int exact, uint32_t *bad_block)
{
	uint16_t B = sm->step[0].block_size;
	uint32_t nb = ina_wire_nb_blocks(sm->n, B);

	if (!sm->in_round || (deferred && n_blocks != nb))
		return -EINVAL;
	sm->in_round = 0;
	for (uint32_t b = 0; deferred && b < nb; b++) {
		uint32_t off = b * B, len = ina_wire_block_elems(sm->n, B, b);

		if (!deferred[b])
			continue;
		if (!sm->step[0].deferred ||
		    !block_under_bound(sm, off, len, sm->step[0].bound, exact)) {
			*bad_block = b;
			return -EPROTO;
		}
		for (uint16_t q = 0; q < sm->world; q++) {
			sm->step[q].deferred[b] = 1; /* as the real engine marks it */
			memset(sm->sent[q] + off, 0, len * sizeof(float));
		}
	}
	for (uint16_t q = 0; q < sm->world; q++)
		tround_end(sm->tr[q], got);
	return 0;
}

const float *const *
sim_ranks_sent(const struct sim_ranks *sm)
{
	return (const float *const *)sm->sent;
}
