/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of ina-host's result check (host/src/workload.c). bf16: the
 * synthetic values k * 2^-10 are not all bf16, so a bf16 job's results are
 * checked against ina_enc_bf16_bound, not bit for bit; results computed the
 * way a bf16 job computes them pass, sums or averages, and results off by
 * more than the bound, or a -0 where nobody had a block, do not.
 * Sparsified rounds (workload_check over what every simulated rank sent,
 * host/src/sim_ranks.c): on the real gradients, results computed the way an
 * f32, i32 or bf16 job computes them pass within the bound and a result off
 * by twice the bound is rejected; on synthetic data, f32 and i32 are checked
 * bit for bit and one ulp off is rejected; a block nobody sent must be +0.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ina/block.h"
#include "ina/encode.h"
#include "ina/wire.h"
#include "sim_ranks.h"
#include "workload.h"

#ifndef INA_SOURCE_DIR
#error "INA_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif
#define GRADS INA_SOURCE_DIR "/data/grads_cnn_digits_3it.npy"

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
			assert_int_equal(workload_verify(w, round, got, average, INA_ENC_BF16,
							 BLOCK, &vr),
					 0);
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
	assert_true(zero < N); /* a block nobody had (density 0.5, 4 workers) */

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

/* One block of a job's result, as the switch and the engine compute it:
 * only the ranks whose copy is not zero send; f32 and bf16 add in binary32
 * in reverse rank order (any arrival order is right), i32 in int32 at the
 * scale of the largest exponent. */
static void
job_block(const float *const *c, uint16_t world, uint32_t lo, uint32_t len, uint8_t enc, float *out)
{
	uint8_t wire[4 * 1024];
	int32_t acc[1024];
	int emax = INA_EXP_ZERO, scale, first = 1;

	assert_true(len <= 1024);
	memset(out + lo, 0, len * sizeof(float));
	memset(acc, 0, sizeof(acc));
	for (uint16_t r = 0; r < world; r++) {
		int e = ina_enc_i32_exp(c[r] + lo, len);

		emax = e > emax ? e : emax;
	}
	scale = ina_enc_i32_scale(emax, world);
	for (int r = world - 1; r >= 0; r--) {
		if (ina_block_is_zero(c[r] + lo, len))
			continue;
		if (enc == INA_ENC_F32) {
			ina_enc_f32_put(wire, c[r] + lo, len);
			ina_enc_f32_add(out + lo, wire, len);
		} else if (enc == INA_ENC_BF16) {
			ina_enc_bf16_put(wire, c[r] + lo, len);
			ina_enc_bf16_add(out + lo, wire, len);
		} else {
			ina_enc_i32_put(wire, c[r] + lo, len, scale);
			if (first)
				ina_enc_i32_load(acc, wire, len);
			else
				assert_int_equal(ina_enc_i32_add(acc, wire, len), 0);
		}
		first = 0;
	}
	if (first)
		return; /* nobody sent it: +0 */
	if (enc == INA_ENC_BF16) {
		ina_enc_bf16_put(wire, out + lo, len);
		ina_enc_bf16_get(out + lo, wire, len);
	} else if (enc == INA_ENC_I32) {
		ina_enc_i32_acc_get(out + lo, acc, len, scale);
	}
}

static void
job_result(const struct check_params *p, const float *const *c, float *out)
{
	for (uint32_t lo = 0; lo < p->n; lo += p->block_size) {
		uint32_t len = p->n - lo < p->block_size ? p->n - lo : p->block_size;

		job_block(c, p->world, lo, len, p->encoding, out);
	}
	if (p->average)
		for (uint32_t i = 0; i < p->n; i++)
			out[i] *= 1.0f / (float)p->world;
}

/* The binary64 reference of element i and its bound, as PROTOCOL.md 8.2;
 * -1 if nobody sent its block (then it must be +0). */
static double
ref_bound(const struct check_params *p, const float *const *c, uint32_t i, double *ref)
{
	uint32_t lo = i / p->block_size * p->block_size;
	uint32_t len = p->n - lo < p->block_size ? p->n - lo : p->block_size;
	double sum = 0, sum_abs = 0;
	int emax = INA_EXP_ZERO;

	for (uint16_t r = 0; r < p->world; r++) {
		int e = ina_enc_i32_exp(c[r] + lo, len);

		emax = e > emax ? e : emax;
		sum += c[r][i];
		sum_abs += fabs((double)c[r][i]);
	}
	*ref = p->average ? sum / p->world : sum;
	if (emax == INA_EXP_ZERO)
		return -1;
	if (p->encoding == INA_ENC_I32)
		return ina_enc_i32_bound(p->world, ina_enc_i32_scale(emax, p->world), fabs(*ref),
					 p->average);
	if (p->encoding == INA_ENC_BF16)
		return ina_enc_bf16_bound(p->world, sum_abs, fabs(*ref), p->average);
	return ina_enc_f32_bound(p->world, sum_abs, p->average);
}

static float *
alloc_floats(uint32_t n)
{
	float *x = calloc(n, sizeof(float));

	assert_non_null(x);
	return x;
}

/* 'world' simulated ranks with sparsifier options 'opt', B fixed. */
static struct sim_ranks *
sim_make(const struct ina_sparsify *opt, uint32_t n, uint16_t block_size)
{
	struct tround_config tc = {
		.n = n,
		.sp = *opt,
		.max_block = block_size,
		.encoding = INA_ENC_F32,
		.world = WORLD,
		.lanes = 8,
	};
	char err[256];
	struct sim_ranks *sm = sim_ranks_create(&tc, err, sizeof(err));

	if (!sm)
		fail_msg("%s", err);
	return sm;
}

/* Ends a simulated round on its result (no deferred blocks). */
static void
sim_end(struct sim_ranks *sm, const float *result)
{
	uint32_t bad;

	assert_int_equal(sim_ranks_result(sm, result, NULL, 0, 0, &bad), 0);
}

/* Rounds of real gradients through every rank's sparsifier (both selectors):
 * each encoding's result passes within its bound, sum and average; off by
 * half the bound passes, off by twice the bound is caught. */
static void
test_check_sparse_gradients_bounded(void **state)
{
	struct ina_sparsify opt = {
		.mode = INA_SPARSIFY_BOTH,
		.target = INA_TOPK_DENSITY,
		.density = 0.3,
		.mass = 0.5,
		.filter_b0 = 0.001f,
		.filter_decay = 0.9,
	};
	static const uint8_t encs[] = { INA_ENC_F32, INA_ENC_I32, INA_ENC_BF16 };
	char err[256];
	struct workload *w = workload_npy(GRADS, WORLD, err, sizeof(err));
	struct sim_ranks *sm;
	struct verify_result vr;
	struct check_params p = { .world = WORLD, .block_size = 64 };
	float *res;
	uint64_t zero_blocks = 0;
	unsigned caught;

	(void)state;
	assert_non_null(w);
	p.n = workload_elements(w);
	sm = sim_make(&opt, p.n, p.block_size);
	assert_non_null(sm);
	res = alloc_floats(p.n);
	for (uint32_t round = 0; round < 6; round++) {
		const float *const *c = sim_ranks_sent(sm);
		uint32_t nb = (p.n + p.block_size - 1) / p.block_size;

		assert_int_equal(sim_ranks_round(sm, w, round), 0);
		for (unsigned e = 0; e < 3; e++) {
			p.encoding = encs[e];
			p.average = (int)(round + e) % 2;
			job_result(&p, c, res);
			assert_int_equal(workload_check(&p, c, res, &vr), 0);
			assert_true(vr.ok);
			assert_false(vr.exact);
			assert_true(vr.max_err_ratio <= 1.0);
			zero_blocks += nb - vr.nonzero_blocks;

			/* The float nearest to half the bound off: right if it
			 * is within the bound (not so when the bound is under
			 * half an ulp); twice the bound off (or the next float
			 * out): wrong. */
			caught = 0;
			for (uint32_t i = 0; i < p.n; i += 1009) {
				double ref, bound = ref_bound(&p, c, i, &ref);
				float keep = res[i];

				if (bound <= 0)
					continue;
				res[i] = (float)(ref + 0.5 * bound);
				assert_int_equal(workload_check(&p, c, res, &vr), 0);
				assert_int_equal(vr.ok, fabs((double)res[i] - ref) <= bound);
				res[i] = (float)(ref + 2 * bound);
				while (fabs((double)res[i] - ref) <= bound)
					res[i] = nextafterf(res[i], INFINITY);
				assert_int_equal(workload_check(&p, c, res, &vr), 0);
				assert_false(vr.ok);
				assert_int_equal(vr.mismatches, 1);
				assert_int_equal(vr.first_bad, i);
				assert_true(vr.max_err_ratio > 1.0);
				res[i] = keep;
				caught++;
			}
			assert_true(caught >= 10);
		}
		sim_end(sm, res);
	}
	/* The sparsifier zeroed whole blocks that the check saw as not sent. */
	assert_true(zero_blocks > 0);
	free(res);
	sim_ranks_destroy(sm);
	workload_destroy(w);
}

/* Synthetic data through top-k: f32 and i32 results are checked bit for bit
 * (one ulp off is caught), bf16 within its bound. */
static void
test_check_sparse_synthetic_exact(void **state)
{
	struct ina_sparsify opt = {
		.mode = INA_SPARSIFY_TOPK,
		.target = INA_TOPK_DENSITY,
		.density = 0.1,
		.mass = 0.5,
		.filter_b0 = 0,
		.filter_decay = 1,
	};
	struct workload *w = workload_synth(N, 0.5, 9, WORLD, BLOCK);
	struct sim_ranks *sm = sim_make(&opt, N, BLOCK);
	struct check_params p = { .n = N, .world = WORLD, .block_size = BLOCK };
	struct verify_result vr;

	(void)state;
	assert_non_null(w);
	assert_non_null(sm);
	assert_true(workload_exact(w, INA_ENC_F32));
	assert_true(workload_exact(w, INA_ENC_I32));
	assert_false(workload_exact(w, INA_ENC_BF16));
	for (uint32_t round = 0; round < 8; round++) {
		const float *const *c = sim_ranks_sent(sm);

		assert_int_equal(sim_ranks_round(sm, w, round), 0);
		for (uint8_t enc = INA_ENC_F32; enc <= INA_ENC_BF16; enc++) {
			uint32_t i = 0;

			p.encoding = enc;
			p.average = round % 2;
			p.exact = workload_exact(w, enc);
			job_result(&p, c, got);
			assert_int_equal(workload_check(&p, c, got, &vr), 0);
			assert_true(vr.ok);
			assert_int_equal(vr.exact, enc != INA_ENC_BF16);
			if (!p.exact)
				continue;
			while (i < N && got[i] == 0)
				i++;
			assert_true(i < N);
			got[i] = nextafterf(got[i], INFINITY);
			assert_int_equal(workload_check(&p, c, got, &vr), 0);
			assert_false(vr.ok);
			assert_int_equal(vr.first_bad, i);
		}
		sim_end(sm, got);
	}
	sim_ranks_destroy(sm);
	workload_destroy(w);
}

/* A block no rank sent (all zero, -0.0 too) must come back +0 bit for bit,
 * in every encoding, exact or not. */
static void
test_check_nobody_sent_is_plus_zero(void **state)
{
	const float *c[WORLD];
	struct check_params p = { .n = N, .world = WORLD, .block_size = BLOCK };
	struct verify_result vr;

	(void)state;
	memset(rows, 0, sizeof(rows));
	for (uint16_t r = 0; r < WORLD; r++) {
		c[r] = rows[r];
		rows[r][5 * BLOCK + r] = 0.25f * (r + 1); /* block 5 is sent */
	}
	rows[1][7 * BLOCK] = -0.0f; /* block 7: nobody sent it */
	for (uint8_t enc = INA_ENC_F32; enc <= INA_ENC_BF16; enc++) {
		for (p.exact = 0; p.exact <= 1; p.exact++) {
			p.encoding = enc;
			job_result(&p, c, got);
			assert_int_equal(workload_check(&p, c, got, &vr), 0);
			assert_true(vr.ok);
			assert_int_equal(vr.nonzero_blocks, 1);
			got[7 * BLOCK + 3] = -0.0f;
			assert_int_equal(workload_check(&p, c, got, &vr), 0);
			assert_false(vr.ok);
			assert_int_equal(vr.first_bad, 7 * BLOCK + 3);
			got[7 * BLOCK + 3] = 0x1p-140f;
			assert_int_equal(workload_check(&p, c, got, &vr), 0);
			assert_false(vr.ok);
		}
	}
}

static void
test_check_bad_params(void **state)
{
	const float *c[WORLD] = { rows[0], rows[1], rows[2], rows[3] };
	struct check_params p = { .n = N,
				  .world = WORLD,
				  .block_size = BLOCK,
				  .encoding = INA_ENC_F32 };
	struct verify_result vr;

	(void)state;
	p.world = 0;
	assert_int_equal(workload_check(&p, c, got, &vr), -EINVAL);
	p.world = WORLD;
	p.block_size = 0;
	assert_int_equal(workload_check(&p, c, got, &vr), -EINVAL);
	p.block_size = BLOCK;
	p.encoding = 4;
	assert_int_equal(workload_check(&p, c, got, &vr), -EINVAL);
	assert_false(vr.ok);
}


int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_workload_bf16_synthetic_bounded),
		cmocka_unit_test(test_workload_bf16_outside_bound_caught),
		cmocka_unit_test(test_check_sparse_gradients_bounded),
		cmocka_unit_test(test_check_sparse_synthetic_exact),
		cmocka_unit_test(test_check_nobody_sent_is_plus_zero),
		cmocka_unit_test(test_check_bad_params),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
