/* SPDX-License-Identifier: MIT */
/*
 * The sparsifier in front of the engine, as ina_allreduce() composes them
 * (sparsify_round on a copy, then the engine sends only the non-zero blocks),
 * over the in-process fabric (host engines and the switch): over several
 * rounds, with and without loss, the sum over rounds of the results plus the
 * sum of every worker's final residual equals the sum of every input, bit for
 * bit on dyadic data (no update lost), every worker receives the same bits,
 * and the bytes sent drop as the density does. With the result filter on, a
 * block comes back DEFERRED exactly when its sum is under the round's bound,
 * as zeros on every worker, and each worker's own part goes back to its
 * residual: the same equality holds, in f32 and in i32.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dyadic.h"
#include "fabric.h"
#include "ina/encode.h"
#include "ina/util.h"
#include "sparsify.h"

#define WORLD 4
#define N 1000
#define BLOCK 16
#define LANES 8
#define ROUNDS 8

static float grad[WORLD][N], sendbuf[WORLD][N], outs[WORLD][N];
static uint8_t deferred[WORLD][(N + BLOCK - 1) / BLOCK];
static double want[N], got[N];

/* The round's gradients (dyadic.h), near-cancelling in runs of a block. */
static void
make_grad(int round)
{
	dyadic_cancel_grads(&grad[0][0], WORLD, N, N, round, BLOCK);
}

/* Checks block 'b' of round's results against the sum of what was sent:
 * deferred (zeros, and the sum under 'bound') or the sum bit for bit.
 * Returns 1 if deferred. */
static int
check_block(uint32_t b, float bound, int filter)
{
	uint32_t off = b * BLOCK, len = N - off < BLOCK ? N - off : BLOCK;
	float s[BLOCK];

	for (uint32_t i = 0; i < len; i++) {
		s[i] = 0;
		for (int r = 0; r < WORLD; r++)
			s[i] += sendbuf[r][off + i];
	}
	for (int r = 1; r < WORLD; r++)
		assert_int_equal(deferred[r][b], deferred[0][b]);
	assert_int_equal(deferred[0][b], filter && ina_enc_f32_deferred(s, len, bound));
	for (uint32_t i = 0; i < len; i++) {
		float w = deferred[0][b] ? 0.0f : s[i];

		assert_memory_equal(&outs[0][off + i], &w, sizeof(float));
	}
	return deferred[0][b];
}

/* Runs ROUNDS sparsified rounds in 'enc', with the result filter if
 * 'filter'; returns bytes sent by all hosts. */
static uint64_t
run_enc(unsigned select, double density, double drop_rate, uint8_t enc, int filter)
{
	struct fabric f;
	struct sparsify *sp[WORLD];
	struct sparsify_config sc;
	float *in_p[WORLD], *out_p[WORLD];
	uint64_t bytes = 0, blocks_sent = 0, data_sent = 0, n_deferred = 0;
	uint32_t nb = (N + BLOCK - 1) / BLOCK;

	sparsify_config_init(&sc);
	sc.n_elems = N;
	sc.block_size = BLOCK;
	sc.select = select;
	sc.density = density;
	sc.bound0 = 0.25f;
	sc.decay = 0.8;
	fabric_init(&f, WORLD, LANES, BLOCK, enc, NULL, NULL);
	f.faults.drop_rate = drop_rate;
	f.faults.seed = 7;
	f.rng = 7;
	for (int r = 0; r < WORLD; r++) {
		sp[r] = sparsify_create(&sc);
		assert_non_null(sp[r]);
		in_p[r] = sendbuf[r];
		out_p[r] = outs[r];
	}
	memset(want, 0, sizeof(want));
	memset(got, 0, sizeof(got));
	memset(deferred, 0, sizeof(deferred));
	assert_int_equal(fabric_join(&f), 0);
	for (int k = 0; k < ROUNDS; k++) {
		float bound = 0;

		make_grad(k);
		for (int r = 0; r < WORLD; r++) {
			struct sparsify_stats st;

			for (int i = 0; i < N; i++)
				want[i] += grad[r][i];
			assert_int_equal(sparsify_round(sp[r], grad[r], sendbuf[r], (uint32_t)k,
							&st),
					 0);
			blocks_sent += st.blocks_sent;
			memset(outs[r], 0x7f, sizeof(outs[r]));
			bound = st.bound;
			if (filter)
				engine_set_result_filter(f.hosts[r], st.bound, deferred[r]);
		}
		assert_int_equal(fabric_allreduce(&f, 5, in_p, out_p, N, BLOCK, ENGINE_SUM), 0);
		for (int r = 1; r < WORLD; r++)
			assert_memory_equal(outs[r], outs[0], sizeof(outs[0]));
		for (uint32_t b = 0; b < nb; b++) {
			if (!check_block(b, bound, filter))
				continue;
			n_deferred++;
			for (int r = 0; r < WORLD; r++)
				assert_int_equal(sparsify_defer_block(sp[r], b,
								      sendbuf[r] + b * BLOCK),
						 0);
		}
		for (int i = 0; i < N; i++)
			got[i] += outs[0][i];
	}
	for (int r = 0; r < WORLD; r++) {
		const float *res = sparsify_residual(sp[r]);

		for (int i = 0; i < N; i++)
			got[i] += res[i];
		bytes += engine_stats(f.hosts[r])->bytes_sent;
		data_sent += engine_stats(f.hosts[r])->data_sent;
		sparsify_destroy(sp[r]);
	}
	/* No update lost: results + residuals == inputs, exactly. */
	for (int i = 0; i < N; i++)
		if (got[i] != want[i])
			fail_msg("element %d: results + residuals %.9g, inputs %.9g", i, got[i],
				 want[i]);
	/* The filter had something to hold back. */
	if (filter && n_deferred == 0)
		fail_msg("nothing deferred in %d rounds", ROUNDS);
	print_message("%s select %u: %llu blocks deferred\n", enc == INA_ENC_I32 ? "i32" : "f32",
		      select, (unsigned long long)n_deferred);
	/* Without loss, each block sent is one data packet. */
	if (drop_rate == 0)
		assert_int_equal(data_sent, blocks_sent);
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
	return bytes;
}

static uint64_t
run(unsigned select, double density, double drop_rate)
{
	return run_enc(select, density, drop_rate, INA_ENC_F32, 0);
}

static void
test_topk_no_update_lost(void **state)
{
	uint64_t dense, sparse;

	(void)state;
	dense = run(0, 1, 0);
	sparse = run(SPARSIFY_TOPK, 0.1, 0);
	/* 63 blocks, 6 per worker per round: its own blocks plus header-only
	 * answers for the others' blocks, well under half of dense. */
	if (!(sparse * 2 < dense))
		fail_msg("sparse bytes %llu not under half of dense %llu",
			 (unsigned long long)sparse, (unsigned long long)dense);
}

static void
test_filter_and_both_with_loss(void **state)
{
	(void)state;
	run(SPARSIFY_FILTER, 1, 0.05);
	run(SPARSIFY_TOPK | SPARSIFY_FILTER, 0.2, 0.05);
	run(SPARSIFY_TOPK, 0.05, 0.10);
}

/* DEFERRED results, f32 and i32, without and with loss. */
static void
test_result_filter_no_update_lost(void **state)
{
	(void)state;
	run_enc(SPARSIFY_FILTER, 1, 0, INA_ENC_F32, 1);
	run_enc(SPARSIFY_TOPK | SPARSIFY_FILTER, 0.3, 0.05, INA_ENC_F32, 1);
	run_enc(SPARSIFY_FILTER, 1, 0, INA_ENC_I32, 1);
	run_enc(SPARSIFY_TOPK | SPARSIFY_FILTER, 0.3, 0.05, INA_ENC_I32, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_result_filter_no_update_lost),
		cmocka_unit_test(test_topk_no_update_lost),
		cmocka_unit_test(test_filter_and_both_with_loss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
