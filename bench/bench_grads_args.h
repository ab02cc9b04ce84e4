/* SPDX-License-Identifier: MIT */
/*
 * The command line that bench_planner and bench_sparsify share: --input
 * FILE.npy (the real gradients, data/grads_cnn_digits_3it.npy by default),
 * --elements N (the synthetic tensor's length) and --runs R, parsed and
 * bounded. Header-only, as bench_stats.h.
 */
#ifndef INA_BENCH_GRADS_ARGS_H
#define INA_BENCH_GRADS_ARGS_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

#endif
