/* SPDX-License-Identifier: MIT */
/*
 * Workloads of ina-host (workload.h): synthetic block-sparse gradients with
 * exactly summable values, and real gradients from a .npy dump, each with the
 * check of a returned sum.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/encode.h"
#include "ina/npy.h"
#include "ina/wire.h"
#include "workload.h"

struct workload {
	int synthetic;
	uint32_t n;
	uint16_t world;
	/* synthetic */
	double density;
	uint64_t seed;
	uint16_t gen_block;
	/* real gradients */
	struct ina_npy *npy;
	uint64_t iters, workers;
	float *rows;		/* world rows of the current iteration */
	int64_t rows_iter;	/* iteration 'rows' holds, -1 none */
};

static uint64_t
splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The synthetic generator's hash of (seed, a, b, c) is mix_last(mix_base()):
 * the base depends only on (seed, round, rank), so loops over elements take it
 * once and pay one splitmix64 per element. */
static uint64_t
mix_base(uint64_t seed, uint64_t a, uint64_t b)
{
	return splitmix64(splitmix64(seed ^ a) ^ b);
}

static uint64_t
mix_last(uint64_t base, uint64_t c)
{
	return splitmix64(base ^ c);
}

struct workload *
workload_synth(uint32_t elements, double density, uint64_t seed, uint16_t world,
	       uint16_t block_size)
{
	struct workload *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->synthetic = 1;
	w->n = elements;
	w->density = density;
	w->seed = seed;
	w->world = world;
	w->gen_block = block_size;
	return w;
}

struct workload *
workload_npy(const char *path, uint16_t world, char *err, size_t err_size)
{
	struct workload *w;
	struct ina_npy *npy = ina_npy_open(path, err, err_size);

	if (!npy)
		return NULL;
	if (ina_npy_ndim(npy) != 3 || ina_npy_dim(npy, 2) == 0 || ina_npy_dim(npy, 2) >= UINT32_MAX ||
	    ina_npy_dim(npy, 0) == 0 || ina_npy_dim(npy, 1) == 0) {
		snprintf(err, err_size, "%s: want shape (iterations, workers, parameters)", path);
		ina_npy_close(npy);
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		ina_npy_close(npy);
		return NULL;
	}
	w->npy = npy;
	w->iters = ina_npy_dim(npy, 0);
	w->workers = ina_npy_dim(npy, 1);
	w->n = (uint32_t)ina_npy_dim(npy, 2);
	w->world = world;
	w->rows = malloc((size_t)world * w->n * sizeof(float));
	w->rows_iter = -1;
	if (!w->rows) {
		workload_destroy(w);
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	return w;
}

void
workload_destroy(struct workload *w)
{
	if (!w)
		return;
	ina_npy_close(w->npy);
	free(w->rows);
	free(w);
}

uint32_t
workload_elements(const struct workload *w)
{
	return w->n;
}

const char *
workload_kind(const struct workload *w)
{
	return w->synthetic ? "synthetic" : "gradients";
}

/* Synthetic: is block 'b' of (round, rank) non-zero? */
static int
synth_has_block(const struct workload *w, uint32_t round, uint16_t rank, uint32_t b)
{
	uint64_t h = mix_last(mix_base(w->seed, round, rank), (uint64_t)b << 1);

	return (double)(h >> 11) * 0x1.0p-53 < w->density;
}

/* Synthetic: element i of the (round, rank) whose mix_base() is 'base':
 * k * 2^-10 with k in [-1023, 1023] \ {0} (the product is exact). */
static inline float
synth_value(uint64_t base, uint32_t i)
{
	uint64_t h = mix_last(base, ((uint64_t)i << 1) | 1);
	int k = (int)(h % 2047) - 1023;

	return (float)(k ? k : 1) * 0x1p-10f;
}

static uint32_t
synth_nb_blocks(const struct workload *w)
{
	return (uint32_t)(((uint64_t)w->n + w->gen_block - 1) / w->gen_block);
}

/* Loads the rows of iteration 'it' for every rank (real gradients). */
static int
npy_load_iter(struct workload *w, uint64_t it)
{
	if (w->rows_iter == (int64_t)it)
		return 0;
	for (uint16_t r = 0; r < w->world; r++) {
		int ret = ina_npy_read_row(w->npy, it * w->workers + r % w->workers,
					   w->rows + (size_t)r * w->n, w->n);

		if (ret < 0)
			return ret;
	}
	w->rows_iter = (int64_t)it;
	return 0;
}

int
workload_fill(struct workload *w, uint32_t round, uint16_t rank, float *dst)
{
	if (!w->synthetic) {
		int ret = npy_load_iter(w, round % w->iters);

		if (ret < 0)
			return ret;
		memcpy(dst, w->rows + (size_t)rank * w->n, (size_t)w->n * sizeof(float));
		return 0;
	}
	uint64_t base = mix_base(w->seed, round, rank);

	memset(dst, 0, (size_t)w->n * sizeof(float));
	for (uint32_t b = 0; b < synth_nb_blocks(w); b++) {
		uint32_t lo = b * w->gen_block;
		uint32_t hi = lo + w->gen_block < w->n ? lo + w->gen_block : w->n;

		if (!synth_has_block(w, round, rank, b))
			continue;
		for (uint32_t i = lo; i < hi; i++)
			dst[i] = synth_value(base, i);
	}
	return 0;
}

static void
note_bad(struct verify_result *res, uint64_t i, float got, float want)
{
	if (res->mismatches++ == 0) {
		res->first_bad = i;
		res->got = got;
		res->want = want;
	}
}

/* Checks element i, 'got', against 'ref' within 'bound', and records the error. */
static void
check_bound(struct verify_result *res, uint64_t i, float got, double ref, double bound)
{
	double err = fabs((double)got - ref);

	if (err > res->max_err)
		res->max_err = err;
	if (bound > 0 && err / bound > res->max_err_ratio)
		res->max_err_ratio = err / bound;
	if (!(err <= bound))
		note_bad(res, i, got, (float)ref);
}

/*
 * bf16 has 8 significand bits, so k 2^-10 with |k| > 256 is in general not a
 * bf16 (1023 2^-10 is not), and sums need up to 17 bits: a synthetic bf16
 * result is checked against ina_enc_bf16_bound like real data, not bit for
 * bit.
 */
static void
verify_synth_bf16(struct workload *w, uint32_t lo, uint32_t hi, const uint64_t *bases,
		  const uint16_t *ranks, unsigned nr, const float *got, int average,
		  struct verify_result *res)
{
	for (uint32_t i = lo; i < hi; i++) {
		double ref = 0, sum_abs = 0, bound;

		for (unsigned k = 0; k < nr; k++) {
			double x = synth_value(bases[ranks[k]], i);

			ref += x;
			sum_abs += fabs(x);
		}
		if (average)
			ref /= w->world;
		/* A block nobody had must come back +0 exactly. */
		bound = nr ? ina_enc_bf16_bound(w->world, sum_abs, fabs(ref), average) : 0;
		if (!nr && signbit(got[i])) {
			note_bad(res, i, got[i], 0.0f);
			continue;
		}
		check_bound(res, i, got[i], ref, bound);
	}
}

static void
verify_synth(struct workload *w, uint32_t round, const float *got, int average,
	     uint8_t encoding, struct verify_result *res)
{
	float scale = 1.0f / (float)w->world;
	uint64_t bases[INA_MAX_WORLD];
	unsigned nr;
	uint16_t ranks[INA_MAX_WORLD];

	for (uint16_t r = 0; r < w->world; r++)
		bases[r] = mix_base(w->seed, round, r);

	for (uint32_t b = 0; b < synth_nb_blocks(w); b++) {
		uint32_t lo = b * w->gen_block;
		uint32_t hi = lo + w->gen_block < w->n ? lo + w->gen_block : w->n;
		nr = 0;
		for (uint16_t r = 0; r < w->world; r++)
			if (synth_has_block(w, round, r, b))
				ranks[nr++] = r;
		if (nr) {
			res->nonzero_blocks++;
		} else {
			/* Nobody had the block: the sum must be +0.0 everywhere. */
			uint32_t bits = 0;

			for (uint32_t i = lo; i < hi; i++) {
				uint32_t x;

				memcpy(&x, &got[i], sizeof(x));
				bits |= x;
			}
			if (bits == 0)
				continue;
		}
		if (encoding == INA_ENC_BF16) {
			verify_synth_bf16(w, lo, hi, bases, ranks, nr, got, average, res);
			continue;
		}
		for (uint32_t i = lo; i < hi; i++) {
			float want = 0.0f;
			uint32_t gb, wb;

			for (unsigned k = 0; k < nr; k++)
				want += synth_value(bases[ranks[k]], i);
			if (average)
				want *= scale;
			memcpy(&gb, &got[i], sizeof(gb));
			memcpy(&wb, &want, sizeof(wb));
			if (gb != wb)
				note_bad(res, i, got[i], want);
			if (fabs((double)got[i] - want) > res->max_err)
				res->max_err = fabs((double)got[i] - want);
		}
	}
}

static void
verify_real(struct workload *w, const float *got, int average, uint8_t encoding,
	    uint16_t block_size, struct verify_result *res)
{
	for (uint32_t lo = 0; lo < w->n; lo += block_size) {
		uint32_t hi = lo + block_size < w->n ? lo + block_size : w->n;
		int emax = INA_EXP_ZERO;
		int scale = 0;

		if (encoding == INA_ENC_I32) {
			for (uint16_t r = 0; r < w->world; r++) {
				int e = ina_enc_i32_exp(w->rows + (size_t)r * w->n + lo, hi - lo);

				if (e > emax)
					emax = e;
			}
			scale = ina_enc_i32_scale(emax, w->world);
		}
		for (uint32_t i = lo; i < hi; i++) {
			double ref = 0, sum_abs = 0, bound;

			for (uint16_t r = 0; r < w->world; r++) {
				double x = w->rows[(size_t)r * w->n + i];

				ref += x;
				sum_abs += fabs(x);
			}
			if (average)
				ref /= w->world;
			if (encoding == INA_ENC_I32)
				bound = emax == INA_EXP_ZERO ? 0
							     : ina_enc_i32_bound(w->world, scale,
										 fabs(ref), average);
			else if (encoding == INA_ENC_BF16)
				bound = ina_enc_bf16_bound(w->world, sum_abs, fabs(ref), average);
			else
				bound = ina_enc_f32_bound(w->world, sum_abs, average);
			check_bound(res, i, got[i], ref, bound);
		}
	}
}

int
workload_verify(struct workload *w, uint32_t round, const float *got, int average,
		uint8_t encoding, uint16_t block_size, struct verify_result *res)
{
	memset(res, 0, sizeof(*res));
	if (w->synthetic) {
		res->exact = encoding != INA_ENC_BF16;
		verify_synth(w, round, got, average, encoding, res);
	} else {
		int ret = npy_load_iter(w, round % w->iters);

		if (ret < 0)
			return ret;
		verify_real(w, got, average, encoding, block_size, res);
	}
	res->ok = res->mismatches == 0;
	return 0;
}
