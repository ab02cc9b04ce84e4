/* SPDX-License-Identifier: MIT */
/*
 * Every rank's sparsifier simulated on this host (sim_ranks.h): per rank a
 * sparsifier and the vector it sent last.
 */
#include <errno.h>
#include <stdlib.h>

#include "ina/wire.h"
#include "sim_ranks.h"
#include "sparsify.h"
#include "sparsify_opts.h"

struct sim_ranks {
	uint16_t world;
	struct sparsify *s[INA_MAX_WORLD];	/* rank q's sparsifier and residual */
	float *sent[INA_MAX_WORLD];		/* what rank q sent in the last round */
};

struct sim_ranks *
sim_ranks_create(const struct ina_sparsify *opt, uint32_t n, uint16_t block_size, uint16_t world)
{
	struct sparsify_config sc;
	struct sim_ranks *sm;

	if (world == 0 || world > INA_MAX_WORLD ||
	    ina_sparsify_config(opt, n, block_size, &sc) < 0) {
		errno = EINVAL;
		return NULL;
	}
	sm = calloc(1, sizeof(*sm));
	if (!sm)
		return NULL;
	sm->world = world;
	for (uint16_t q = 0; q < world; q++) {
		sm->s[q] = sparsify_create(&sc);
		sm->sent[q] = calloc(n, sizeof(float));
		if (!sm->s[q] || !sm->sent[q]) {
			sim_ranks_destroy(sm);
			errno = ENOMEM;
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
		sparsify_destroy(sm->s[q]);
		free(sm->sent[q]);
	}
	free(sm);
}

int
sim_ranks_round(struct sim_ranks *sm, struct workload *w, uint32_t round)
{
	for (uint16_t q = 0; q < sm->world; q++) {
		int ret = workload_fill(w, round, q, sm->sent[q]);

		if (ret < 0)
			return ret;
		/* In place: the gradient in, what the rank sent out. */
		ret = sparsify_round(sm->s[q], sm->sent[q], sm->sent[q], round, NULL);
		if (ret < 0)
			return ret;
	}
	return 0;
}

const float *const *
sim_ranks_sent(const struct sim_ranks *sm)
{
	return (const float *const *)sm->sent;
}
