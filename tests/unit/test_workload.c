/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of ina-host's workload check (host/src/workload.c) for bf16: the
 * synthetic values k * 2^-10 are not all bf16, so a bf16 job's results are
 * checked against ina_enc_bf16_bound, not bit for bit; results computed the
 * way a bf16 job computes them pass, sums or averages, and results off by
 * more than the bound, or a -0 where nobody had a block, do not.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "ina/encode.h"
#include "ina/wire.h"
#include "workload.h"

#define N 1000
#define WORLD 4
#define BLOCK 16

static float rows[WORLD][N], got[N];

static float
bf16(float x)
{
	uint32_t v = (uint32_t)ina_enc_bf16_round(x) << 16;
	float f;

	memcpy(&f, &v, sizeof(f));
	return f;
}

/* What a bf16 job returns: each worker rounds once, the switch adds in
 * binary32 and rounds once, an average multiplies by fl(1/N). */
static unsigned
bf16_job(struct workload *w, uint32_t round, int average)
{
	unsigned not_bf16 = 0;

	for (uint16_t r = 0; r < WORLD; r++)
		assert_int_equal(workload_fill(w, round, r, rows[r]), 0);
	for (uint32_t i = 0; i < N; i++) {
		float f = 0;

		for (uint16_t r = 0; r < WORLD; r++) {
			f += bf16(rows[r][i]);
			not_bf16 += bf16(rows[r][i]) != rows[r][i];
		}
		got[i] = bf16(f);
		if (average)
			got[i] *= 1.0f / (float)WORLD;
	}
	return not_bf16;
}

static void
test_workload_bf16_synthetic_bounded(void **state)
{
	struct workload *w = workload_synth(N, 0.5, 3, WORLD, BLOCK);
	struct verify_result vr;
	unsigned not_bf16 = 0;

	(void)state;
	assert_non_null(w);
	for (int average = 0; average <= 1; average++) {
		for (uint32_t round = 0; round < 4; round++) {
			not_bf16 += bf16_job(w, round, average);
			assert_int_equal(workload_verify(w, round, got, average, INA_ENC_BF16, BLOCK,
							 &vr), 0);
			assert_true(vr.ok);
			assert_false(vr.exact);
			assert_int_equal(vr.mismatches, 0);
			assert_true(vr.max_err_ratio <= 1.0);
			assert_true(vr.nonzero_blocks > 0);
		}
	}
	/* The synthetic values are not all bf16: the check must be a bound. */
	assert_true(not_bf16 > 0);
	assert_true(vr.max_err > 0);

	/* The same results checked bit for bit as f32 are wrong. */
	bf16_job(w, 0, 0);
	assert_int_equal(workload_verify(w, 0, got, 0, INA_ENC_F32, BLOCK, &vr), 0);
	assert_false(vr.ok);
	assert_true(vr.exact);
	workload_destroy(w);
}

static void
test_workload_bf16_outside_bound_caught(void **state)
{
	struct workload *w = workload_synth(N, 0.5, 5, WORLD, BLOCK);
	struct verify_result vr;
	uint32_t nz = N, zero = N;

	(void)state;
	assert_non_null(w);
	bf16_job(w, 1, 0);
	for (uint32_t i = 0; i < N; i++) {
		if (got[i] != 0 && nz == N)
			nz = i;
		if (i % BLOCK == 0 && zero == N) {
			uint32_t k = i;

			while (k < i + BLOCK && k < N && got[k] == 0)
				k++;
			if (k == i + BLOCK)
				zero = i;
		}
	}
	assert_true(nz < N);
	assert_true(zero < N);	/* a block nobody had (density 0.5, 4 workers) */

	/* Off by 1: far above the bound (about 2^-8 (sum|x| + |sum|) <= 2^-5). */
	got[nz] += 1.0f;
	assert_int_equal(workload_verify(w, 1, got, 0, INA_ENC_BF16, BLOCK, &vr), 0);
	assert_false(vr.ok);
	assert_int_equal(vr.mismatches, 1);
	assert_int_equal(vr.first_bad, nz);

	/* A -0 where nobody had a block. */
	bf16_job(w, 1, 0);
	got[zero] = -0.0f;
	assert_int_equal(workload_verify(w, 1, got, 0, INA_ENC_BF16, BLOCK, &vr), 0);
	assert_false(vr.ok);
	assert_int_equal(vr.first_bad, zero);
	workload_destroy(w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_workload_bf16_synthetic_bounded),
		cmocka_unit_test(test_workload_bf16_outside_bound_caught),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
