/* SPDX-License-Identifier: MIT */
/*
 * What block top-k by mass (host/src/sparsify.h) costs a worker each round,
 * against one read of the same gradient in the same run: sparsify_round() on
 * one worker's real gradients (each iteration of data/grads_cnn_digits_3it.npy,
 * 71,754 floats, residual carried from round to round) at mass 0.5 with
 * whole blocks of 1024 and cut into sub-blocks of 64, and on a large
 * synthetic tensor (--elements, 4 Mi by default, every value non-zero), beside
 * a pass that sums the gradient's squares in double (one chain of adds: what
 * a plain loop does). Medians of --runs, in µs.
 * Usage: bench_sparsify [--input FILE.npy] [--elements N] [--runs R]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ina/npy.h"
#include "bench_grads.h"
#include "bench_stats.h"
#include "sparsify.h"

#define MAX_RUNS 31

static volatile double sink;

/* One row: rounds of 'g' (n floats) through a fresh sparsifier; medians. */
static int
row(const char *name, const float *g, uint32_t n, uint32_t sub, int runs)
{
	struct sparsify_config c;
	struct sparsify_stats st = { 0 };
	double ts[MAX_RUNS], tr[MAX_RUNS], s_us, r_us;
	struct sparsify *s;
	float *out = malloc((size_t)n * sizeof(float));

	sparsify_config_init(&c);
	c.n_elems = n;
	c.block_size = 1024;
	c.sub_block = sub;
	c.select = SPARSIFY_TOPK;
	c.target = SPARSIFY_MASS;
	c.mass = 0.5;
	s = out ? sparsify_create(&c) : NULL;
	if (!s) {
		fprintf(stderr, "bench_sparsify: no sparsifier for %u elements\n", n);
		free(out);
		return -1;
	}
	for (int r = 0; r < runs; r++) {
		double t0 = bench_now_s();

		if (sparsify_round(s, g, out, (uint32_t)r, &st) < 0) {
			sparsify_destroy(s);
			free(out);
			return -1;
		}
		ts[r] = bench_now_s() - t0;
		t0 = bench_now_s();
		sink += bench_read_squares(g, n);
		tr[r] = bench_now_s() - t0;
	}
	s_us = bench_median(ts, (size_t)runs) * 1e6;
	r_us = bench_median(tr, (size_t)runs) * 1e6;
	printf("  %-26s b %4u  round %9.1f us  read %9.1f us  round/read %5.2f  (%u of %u units "
	       "sent in the last)\n",
	       name, sub ? sub : 1024, s_us, r_us, s_us / r_us, st.subs_sent,
	       (n + (sub ? sub : 1024) - 1) / (sub ? sub : 1024));
	sparsify_destroy(s);
	free(out);
	return 0;
}

int
main(int argc, char **argv)
{
	struct bench_grads_args a = { .input = INA_SOURCE_DIR "/data/grads_cnn_digits_3it.npy",
				      .elements = 4194304,
				      .runs = 15 };
	uint64_t its, ws;
	uint32_t n;
	int rc;
	struct ina_npy *npy;
	float *x;

	rc = bench_grads_args_parse("bench_sparsify", argc, argv, &a, MAX_RUNS);
	if (rc)
		return rc;
	npy = bench_grads_open("bench_sparsify", a.input, &its, &ws, &n);
	if (!npy)
		return 1;
	printf("bench_sparsify: sparsify_round(), top-k to mass 0.5, B 1024, against one read of "
	       "the gradient (sum of squares in double, one chain); medians of %d rounds\n",
	       a.runs);
	x = malloc((size_t)n * sizeof(float));
	for (uint64_t it = 0; x && rc == 0 && it < its; it++) {
		char name[64];

		/* worker 0's gradient of the iteration */
		if (ina_npy_read_row(npy, it * ws, x, n) < 0) {
			fprintf(stderr, "bench_sparsify: %s: row unreadable\n", a.input);
			rc = -1;
			break;
		}
		snprintf(name, sizeof(name), "real, iteration %llu", (unsigned long long)it);
		rc = row(name, x, n, 0, a.runs);
		if (rc == 0)
			rc = row(name, x, n, 64, a.runs);
	}
	free(x);
	ina_npy_close(npy);
	x = rc == 0 ? malloc((size_t)a.elements * sizeof(float)) : NULL;
	if (x) {
		char name[64];

		srand(1);
		for (uint32_t i = 0; i < a.elements; i++)
			x[i] = (float)rand() / RAND_MAX - 0.5f;
		snprintf(name, sizeof(name), "synthetic %u", a.elements);
		rc = row(name, x, a.elements, 0, a.runs);
		if (rc == 0)
			rc = row(name, x, a.elements, 64, a.runs);
		free(x);
	}
	return rc == 0 ? 0 : 1;
}
