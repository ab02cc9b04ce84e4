/* SPDX-License-Identifier: MIT */
/*
 * mpi_allreduce: the baseline ina is measured against, in the loop OpenMPI's
 * own benchmarks use and bench_allreduce and gloo_allreduce copy: the input
 * made once, a warm-up, then per iteration MPI_Barrier and one timed
 * MPI_Allreduce (float32, MPI_SUM, input to a separate output), nothing made
 * or checked in between. After the loop every rank's times go to rank 0
 * (MPI_MAX per iteration), which prints the median over the iterations of the
 * slowest rank's time. --density makes the input block-sparse, as
 * bench_allreduce's; MPI still moves it dense, which is the point of the
 * comparison. bench/run starts it under mpirun beside ina's figures.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include "bench_stats.h"

#define MAX_REPS 1000

struct mpi_config {
	uint64_t elements;
	unsigned block_size;
	double density;
	unsigned reps;
	unsigned warmup;
	uint64_t seed;
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: mpirun -np N mpi_allreduce [options]\n"
		   "\n"
		   "Times MPI_Allreduce of a float32 tensor with MPI_SUM on every rank (a\n"
		   "barrier, then one timed allreduce, per iteration); rank 0 prints the\n"
		   "median of the slowest rank's milliseconds per allreduce.\n"
		   "\n"
		   "options:\n"
		   "  --elements M          tensor elements (default 16777216)\n"
		   "  --density D           fraction of non-zero blocks, 0..1 (default 1)\n"
		   "  --block B             elements per block for --density (default 1024)\n"
		   "  --reps R              timed allreduces (default 10)\n"
		   "  --warmup W            untimed allreduces first (default 2)\n"
		   "  --seed S              data seed (default 1)\n"
		   "  -h, --help            this text\n");
}

/* Returns 0 or -EINVAL; prints the reason on rank 0 only. */
static int
parse_args(int argc, char **argv, struct mpi_config *c, int rank)
{
	enum { O_ELEMENTS = 256, O_DENSITY, O_BLOCK, O_REPS, O_WARMUP, O_SEED };
	static const struct option longopts[] = {
		{ "elements", required_argument, NULL, O_ELEMENTS },
		{ "density", required_argument, NULL, O_DENSITY },
		{ "block", required_argument, NULL, O_BLOCK },
		{ "reps", required_argument, NULL, O_REPS },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "seed", required_argument, NULL, O_SEED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;
	char *end;

	c->elements = 16777216;
	c->block_size = 1024;
	c->density = 1.0;
	c->reps = 10;
	c->warmup = 2;
	c->seed = 1;
	opterr = rank == 0;
	/* "h": help; every other option is long-only. */
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		errno = 0;
		switch (opt) {
		case O_ELEMENTS:
			c->elements = strtoull(optarg, &end, 10);
			if (*end || errno || c->elements == 0 || c->elements > INT32_MAX)
				goto bad;
			break;
		case O_DENSITY:
			c->density = strtod(optarg, &end);
			if (*end || errno || !(c->density >= 0 && c->density <= 1))
				goto bad;
			break;
		case O_BLOCK:
			c->block_size = (unsigned)strtoul(optarg, &end, 10);
			if (*end || errno || c->block_size == 0 || c->block_size > 65535)
				goto bad;
			break;
		case O_REPS:
			c->reps = (unsigned)strtoul(optarg, &end, 10);
			if (*end || errno || c->reps == 0 || c->reps > MAX_REPS)
				goto bad;
			break;
		case O_WARMUP:
			c->warmup = (unsigned)strtoul(optarg, &end, 10);
			if (*end || errno || c->warmup > MAX_REPS)
				goto bad;
			break;
		case O_SEED:
			c->seed = strtoull(optarg, &end, 10);
			if (*end || errno)
				goto bad;
			break;
		case 'h':
			if (rank == 0)
				usage(stdout);
			return 1;
		default:
			if (rank == 0)
				usage(stderr);
			return -EINVAL;
		}
	}
	return 0;
bad:
	if (rank == 0)
		fprintf(stderr, "mpi_allreduce: bad value '%s' for an option\n", optarg);
	return -EINVAL;
}

/* splitmix64: a small, seedable generator, the same on every platform. */
static uint64_t
next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Block-sparse input: each block is non-zero with probability 'density'. */
static void
fill(float *x, const struct mpi_config *c, int rank)
{
	uint64_t s = c->seed * 1000003ull + (uint64_t)rank;

	for (uint64_t b = 0; b * c->block_size < c->elements; b++) {
		uint64_t start = b * c->block_size;
		uint64_t end = start + c->block_size < c->elements ? start + c->block_size
								   : c->elements;
		int on = c->density >= 1.0 || (double)(next_rand(&s) >> 11) * 0x1p-53 < c->density;

		for (uint64_t i = start; i < end; i++)
			x[i] = on ? (float)((int64_t)(next_rand(&s) % 2001) - 1000) * 1e-3f : 0.0f;
	}
}

int
main(int argc, char **argv)
{
	static double times[MAX_REPS], slowest[MAX_REPS];
	struct mpi_config c;
	int rank, size, ret;
	float *in, *out;
	double med;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	ret = parse_args(argc, argv, &c, rank);
	if (ret != 0) {
		MPI_Finalize();
		return ret > 0 ? 0 : 2;
	}
	in = malloc(c.elements * sizeof(float));
	out = malloc(c.elements * sizeof(float));
	if (!in || !out) {
		fprintf(stderr, "mpi_allreduce: rank %d: out of memory for %" PRIu64 " elements\n",
			rank, c.elements);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	fill(in, &c, rank);
	memset(out, 0, c.elements * sizeof(float));

	for (unsigned i = 0; i < c.warmup; i++)
		MPI_Allreduce(in, out, (int)c.elements, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	for (unsigned i = 0; i < c.reps; i++) {
		double t0;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		MPI_Allreduce(in, out, (int)c.elements, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		times[i] = MPI_Wtime() - t0;
	}
	MPI_Reduce(times, slowest, (int)c.reps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		qsort(slowest, c.reps, sizeof(slowest[0]), bench_cmp_double);
		med = c.reps % 2 ? slowest[c.reps / 2]
				 : (slowest[c.reps / 2 - 1] + slowest[c.reps / 2]) / 2;
		printf("mpi_allreduce ranks=%d elements=%" PRIu64 " density=%g reps=%u "
		       "median_ms=%.3f min_ms=%.3f max_ms=%.3f goodput_gbps=%.3f\n",
		       size, c.elements, c.density, c.reps, med * 1e3, slowest[0] * 1e3,
		       slowest[c.reps - 1] * 1e3, (double)c.elements * 32 / med / 1e9);
	}
	free(in);
	free(out);
	MPI_Finalize();
	return 0;
}
