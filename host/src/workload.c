/* SPDX-License-Identifier: MIT */
/*
 * Workloads of ina-host (workload.h): synthetic block-sparse gradients with
 * exactly summable values, and real gradients from a .npy dump; and the one
 * check of a returned sum against per-rank contributions (workload_check),
 * bit for bit or within the encoding's bound.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/block.h"
#include "ina/encode.h"
#include "ina/encoding.h"
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
	/* every rank's contribution: world rows of one iteration (real), or of
	 * one round (synthetic, made for the dense check on first use) */
	float *rows;
	int64_t rows_iter; /* the iteration or round 'rows' holds, -1 none */
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
	w->rows_iter = -1;
	return w;
}

struct workload *
workload_npy(const char *path, uint16_t world, char *err, size_t err_size)
{
	struct workload *w;
	struct ina_npy *npy = ina_npy_open(path, err, err_size);

	if (!npy)
		return NULL;
	if (ina_npy_ndim(npy) != 3 || ina_npy_dim(npy, 2) == 0 ||
	    ina_npy_dim(npy, 2) >= UINT32_MAX || ina_npy_dim(npy, 0) == 0 ||
	    ina_npy_dim(npy, 1) == 0) {
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

/* Synthetic: fills 'rows' with every rank's gradient of 'round' (the dense
 * check's contributions), allocated on first use. */
static int
synth_load_round(struct workload *w, uint32_t round)
{
	if (w->rows_iter == (int64_t)round)
		return 0;
	if (!w->rows && !(w->rows = malloc((size_t)w->world * w->n * sizeof(float))))
		return -ENOMEM;
	for (uint16_t r = 0; r < w->world; r++)
		workload_fill(w, round, r, w->rows + (size_t)r * w->n);
	w->rows_iter = (int64_t)round;
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

/* 1 if some rank's block [lo, hi) is not zero (as the engine decides: -0.0
 * counts as zero), i.e. some rank sent it. */
static int
anyone_sent(const struct check_params *p, const float *const *contrib, uint32_t lo, uint32_t hi)
{
	for (uint16_t r = 0; r < p->world; r++)
		if (!ina_block_is_zero(contrib[r] + lo, hi - lo))
			return 1;
	return 0;
}

/* A block nobody sent comes back header-only: +0.0 everywhere, bit for bit. */
static void
check_plus_zero(const float *got, uint32_t lo, uint32_t hi, struct verify_result *res)
{
	for (uint32_t i = lo; i < hi; i++) {
		uint32_t bits;

		memcpy(&bits, &got[i], sizeof(bits));
		if (bits != 0)
			note_bad(res, i, got[i], 0.0f);
	}
}

/* Bit for bit against the float sum in rank order (times fl(1/N)): right
 * when every partial sum is exact (PROTOCOL.md 8.3). */
static void
check_exact(const struct check_params *p, const float *const *contrib, const float *got,
	    uint32_t lo, uint32_t hi, struct verify_result *res)
{
	float scale = 1.0f / (float)p->world;

	for (uint32_t i = lo; i < hi; i++) {
		float want = 0.0f;
		uint32_t gb, wb;

		for (uint16_t r = 0; r < p->world; r++)
			want += contrib[r][i];
		if (p->average)
			want *= scale;
		memcpy(&gb, &got[i], sizeof(gb));
		memcpy(&wb, &want, sizeof(wb));
		if (gb != wb)
			note_bad(res, i, got[i], want);
		if (fabs((double)got[i] - want) > res->max_err)
			res->max_err = fabs((double)got[i] - want);
	}
}

/* i32: the scale every rank used for block [lo, hi): from the largest
 * exponent of the ranks' copies (PROTOCOL.md 7.2, 7.3). */
static int
i32_block_scale(const struct check_params *p, const float *const *contrib, uint32_t lo, uint32_t hi)
{
	int emax = INA_EXP_ZERO;

	for (uint16_t r = 0; r < p->world; r++) {
		int e = ina_enc_i32_exp(contrib[r] + lo, hi - lo);

		if (e > emax)
			emax = e;
	}
	return ina_enc_i32_scale(emax, p->world);
}

/* Against a binary64 reference within the encoding's bound (PROTOCOL.md 8.2). */
static void
check_bounded(const struct check_params *p, const float *const *contrib, const float *got,
	      uint32_t lo, uint32_t hi, struct verify_result *res)
{
	const struct ina_encoding_ops *enc = ina_encoding(p->encoding);
	int scale = enc->scaled ? i32_block_scale(p, contrib, lo, hi) : 0;

	for (uint32_t i = lo; i < hi; i++) {
		double ref = 0, sum_abs = 0, bound;

		for (uint16_t r = 0; r < p->world; r++) {
			double x = contrib[r][i];

			ref += x;
			sum_abs += fabs(x);
		}
		if (p->average)
			ref /= p->world;
		bound = enc->bound(p->world, scale, sum_abs, fabs(ref), p->average);
		check_bound(res, i, got[i], ref, bound);
	}
}

int
workload_check(const struct check_params *p, const float *const *contrib, const float *got,
	       struct verify_result *res)
{
	memset(res, 0, sizeof(*res));
	if (p->world == 0 || p->world > INA_MAX_WORLD || p->block_size == 0 ||
	    !ina_encoding(p->encoding))
		return -EINVAL;
	res->exact = p->exact;
	for (uint32_t lo = 0; lo < p->n; lo += p->block_size) {
		uint32_t hi = p->n - lo > p->block_size ? lo + p->block_size : p->n;

		if (!anyone_sent(p, contrib, lo, hi)) {
			check_plus_zero(got, lo, hi, res);
			continue;
		}
		res->nonzero_blocks++;
		if (p->exact)
			check_exact(p, contrib, got, lo, hi, res);
		else
			check_bounded(p, contrib, got, lo, hi, res);
	}
	res->ok = res->mismatches == 0;
	return 0;
}

int
workload_exact_encoding(uint8_t encoding)
{
	const struct ina_encoding_ops *enc = ina_encoding(encoding);

	/* The synthetic values are exact in every encoding of binary32's
	 * width; a narrower one (bf16) rounds them. */
	return enc && enc->elem_size == sizeof(float);
}

int
workload_exact(const struct workload *w, uint8_t encoding)
{
	return w->synthetic && workload_exact_encoding(encoding);
}

int
workload_verify(struct workload *w, uint32_t round, const float *got, int average, uint8_t encoding,
		uint16_t block_size, struct verify_result *res)
{
	const float *contrib[INA_MAX_WORLD];
	struct check_params p = {
		.n = w->n,
		.world = w->world,
		.block_size = block_size,
		.encoding = encoding,
		.average = average,
		.exact = workload_exact(w, encoding),
	};
	int ret = w->synthetic ? synth_load_round(w, round) : npy_load_iter(w, round % w->iters);

	memset(res, 0, sizeof(*res));
	if (ret < 0)
		return ret;
	for (uint16_t r = 0; r < w->world; r++)
		contrib[r] = w->rows + (size_t)r * w->n;
	return workload_check(&p, contrib, got, res);
}
