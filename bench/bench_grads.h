/* SPDX-License-Identifier: MIT */
/*
 * What bench_planner and bench_sparsify share: their command line (--input
 * FILE.npy, the real gradients, data/grads_cnn_digits_3it.npy by default;
 * --elements N, the synthetic tensor's length; --runs R), the gradients'
 * file opened and its shape checked, and the read they are measured against
 * (a sum of squares in double, one chain of adds). Header-only, as
 * bench_stats.h.
 */
#ifndef INA_BENCH_GRADS_H
#define INA_BENCH_GRADS_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ina/npy.h"

struct bench_grads_args {
	const char *input; /* the gradients, (iterations, workers, elements) */
	uint32_t elements; /* the synthetic tensor, 1024 .. 2^28 */
	int runs;	   /* 1 .. max_runs */
};

/* Fills 'a' from argv over the defaults it holds; 0, or 2 (the exit code)
 * after printing what is wrong and the usage of 'prog'. */
static inline int
bench_grads_args_parse(const char *prog, int argc, char **argv, struct bench_grads_args *a,
		       int max_runs)
{
	static const struct option opts[] = { { "input", required_argument, NULL, 'i' },
					      { "elements", required_argument, NULL, 'n' },
					      { "runs", required_argument, NULL, 'r' },
					      { NULL, 0, NULL, 0 } };
	unsigned long n = a->elements;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			a->input = optarg;
			break;
		case 'n':
			n = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			a->runs = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [--input FILE.npy] [--elements N] [--runs R]\n",
				prog);
			return 2;
		}
	}
	if (a->runs < 1 || a->runs > max_runs || n < 1024 || n > (1ul << 28)) {
		fprintf(stderr, "%s: runs 1..%d, elements 1024..%lu\n", prog, max_runs, 1ul << 28);
		return 2;
	}
	a->elements = (uint32_t)n;
	return 0;
}

/* The gradients of 'path', (iterations, workers, elements): the file with
 * its dimensions in its_out, ws_out and n_out, or NULL after printing why. */
static inline struct ina_npy *
bench_grads_open(const char *prog, const char *path, uint64_t *its_out, uint64_t *ws_out,
		 uint32_t *n_out)
{
	char err[256];
	struct ina_npy *npy = ina_npy_open(path, err, sizeof(err));

	if (!npy) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return NULL;
	}
	if (ina_npy_ndim(npy) != 3) {
		fprintf(stderr, "%s: %s: expected (iterations, workers, elements)\n", prog, path);
		ina_npy_close(npy);
		return NULL;
	}
	*its_out = ina_npy_dim(npy, 0);
	*ws_out = ina_npy_dim(npy, 1);
	*n_out = (uint32_t)ina_npy_dim(npy, 2);
	return npy;
}

/* The read a bench compares with: x's sum of squares in double, in one chain
 * of dependent adds, as a plain loop does. */
static inline double
bench_read_squares(const float *x, uint32_t n)
{
	double s = 0;

	for (uint32_t i = 0; i < n; i++)
		s += (double)x[i] * x[i];
	return s;
}

#endif
