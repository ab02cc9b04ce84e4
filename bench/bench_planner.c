/* SPDX-License-Identifier: MIT */
/*
 * What the block planner (host/src/planner.h) costs a worker each round,
 * against one read of the same reference in the same run: planner_measure()
 * and planner_plan_measured() apart, as a tensor round calls them (B 16 .. 1024 cut into sub-blocks down to 8,
 * f32, 4 workers, 64 lanes) on the shipped real gradients (the workers' sum of
 * each iteration of data/grads_cnn_digits_3it.npy, 71,754 floats) and on a large synthetic
 * tensor (1% of its 256-element blocks non-zero, the rest zeros), at mass 1
 * (zero-skipping) and 0.5 (top-k by mass), beside a pass that sums the
 * reference's squares in double (the least any planner reads). Medians of
 * --runs.
 * Usage: bench_planner [--input FILE.npy] [--elements N] [--runs R]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ina/npy.h"
#include "ina/wire.h"
#include "bench_grads.h"
#include "bench_stats.h"
#include "planner.h"

#define MAX_RUNS 31

static volatile double sink;

/* One row: the plan of 'x' at 'mass' and the read, medians in µs. */
static int
row(const char *name, const float *x, uint32_t n, double mass, int runs)
{
	struct planner_config pc;
	struct planner_pick pick = { 0 };
	struct planner *p;
	double tm[MAX_RUNS], tp[MAX_RUNS], tr[MAX_RUNS], measure_us, plan_us, read_us;

	planner_config_init(&pc);
	pc.max_elems = n;
	pc.max_pkt = INA_HDR_SIZE + 1024 * 4;
	pc.frame_bytes = 42;
	pc.max_sub_log = PLANNER_MAX_SUB_LOG;
	pc.mask_room = INA_SUB_MAX / 8;
	p = planner_create(&pc);
	if (!p) {
		fprintf(stderr, "bench_planner: no planner for %u elements\n", n);
		return -1;
	}
	for (int r = 0; r < runs; r++) {
		double t0 = bench_now_s();

		if (planner_measure(p, x, n, mass, 0.0f) < 0) {
			planner_destroy(p);
			return -1;
		}
		tm[r] = bench_now_s() - t0;
		t0 = bench_now_s();
		if (planner_plan_measured(p, n, mass, &pick) < 0) {
			planner_destroy(p);
			return -1;
		}
		tp[r] = bench_now_s() - t0;
		t0 = bench_now_s();
		sink += bench_read_squares(x, n);
		tr[r] = bench_now_s() - t0;
	}
	measure_us = bench_median(tm, (size_t)runs) * 1e6;
	plan_us = bench_median(tp, (size_t)runs) * 1e6;
	read_us = bench_median(tr, (size_t)runs) * 1e6;
	printf("  %-22s mass %.1f  measure %9.1f  plan %9.1f us  read %8.1f us  "
	       "(measure+plan)/read %5.2f  picks B %u b %u (%u candidates)\n",
	       name, mass, measure_us, plan_us, read_us, (measure_us + plan_us) / read_us,
	       pick.block_size, pick.sub, planner_n_evaluated(p));
	planner_destroy(p);
	return 0;
}

int
main(int argc, char **argv)
{
	struct bench_grads_args a = { .input = INA_SOURCE_DIR "/data/grads_cnn_digits_3it.npy",
				      .elements = 16777216,
				      .runs = 9 };
	uint64_t its, ws;
	uint32_t n;
	int rc;
	struct ina_npy *npy;
	float *x, *g;

	rc = bench_grads_args_parse("bench_planner", argc, argv, &a, MAX_RUNS);
	if (rc)
		return rc;
	npy = bench_grads_open("bench_planner", a.input, &its, &ws, &n);
	if (!npy)
		return 1;
	printf("bench_planner: planner_measure() and planner_plan_measured() (B 16..1024, b >= 8, "
	       "f32, 4 workers, 64 lanes) against one read of the reference (sum of squares in "
	       "double); medians of %d runs\n",
	       a.runs);
	/* the reference of a round: the sum of the workers' gradients */
	g = malloc((size_t)n * sizeof(float));
	x = malloc((size_t)n * sizeof(float));
	for (uint64_t it = 0; x && g && rc == 0 && it < its; it++) {
		char name[64];

		for (uint32_t i = 0; i < n; i++)
			x[i] = 0;
		for (uint64_t w = 0; w < ws; w++) {
			if (ina_npy_read_row(npy, it * ws + w, g, n) < 0) {
				fprintf(stderr, "bench_planner: %s: row unreadable\n", a.input);
				rc = -1;
				break;
			}
			for (uint32_t i = 0; i < n; i++)
				x[i] += g[i];
		}
		snprintf(name, sizeof(name), "real, iteration %llu", (unsigned long long)it);
		if (rc == 0)
			rc = row(name, x, n, 1.0, a.runs);
		if (rc == 0)
			rc = row(name, x, n, 0.5, a.runs);
	}
	free(g);
	free(x);
	ina_npy_close(npy);
	x = rc == 0 ? calloc(a.elements, sizeof(float)) : NULL;
	if (x) {
		char name[64];

		srand(1);
		for (uint32_t b = 0; (uint64_t)b * 256 < a.elements; b += 100)
			for (uint32_t i = b * 256; i < b * 256 + 256 && i < a.elements; i++)
				x[i] = (float)rand() / RAND_MAX - 0.5f;
		snprintf(name, sizeof(name), "synthetic %u, 1%%", a.elements);
		rc = row(name, x, a.elements, 1.0, a.runs);
		if (rc == 0)
			rc = row(name, x, a.elements, 0.5, a.runs);
		free(x);
	}
	return rc == 0 ? 0 : 1;
}
