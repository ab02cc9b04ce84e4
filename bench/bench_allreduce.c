/* SPDX-License-Identifier: MIT */
/*
 * bench_allreduce: ina's allreduce timed the way OpenMPI's and Gloo's own
 * benchmarks time theirs, through the C API (ina.h) only. One process is one
 * rank (bench/run starts W of them and one ina-switch). The input is made
 * once, before the loop; each iteration is a barrier (ina_barrier) and one
 * timed allreduce, input to a separate output, nothing made or checked in
 * between; the result is checked once, after the timed loop, and a wrong sum
 * fails the run (exit 1). Each rank's input has its own --density share of
 * non-zero blocks (all at 1), drawn from its seed; the form is dense
 * (ina_allreduce of the dense tensor) or block-sparse (ina_allreduce_blocks:
 * the rank lists its non-zero blocks and gets the union with the sums as a
 * list).
 * After the loop the ranks gather every rank's times (one more allreduce,
 * not timed) and rank 0 prints the median over the iterations of the
 * slowest rank's time, and the goodput: the tensor's bits over that time.
 *
 * Usage: bench_allreduce [EAL options --] --switch ADDR:PORT --job J
 *                        --rank R --world W [options]     (--help)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ina.h"
#include "bench_stats.h"

#define MAX_REPS 1000
#define TENSOR 1
#define TIMES_TENSOR 2

struct bench {
	const char *switch_addr, *port;
	uint32_t job;
	uint16_t rank, world, lanes, block, sub_block, threads;
	uint64_t elements, seed;
	double density;
	unsigned reps, warmup;
	int blocks; /* --form blocks: ina_allreduce_blocks */
	uint32_t timeout_ms;
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: bench_allreduce [EAL options --] --switch ADDR:PORT --job J --rank R\n"
		   "                       --world W [options]\n"
		   "\n"
		   "Times ina's allreduce of a float32 tensor (sum) as OpenMPI's and Gloo's\n"
		   "benchmarks do: input made once, then per iteration a barrier and one timed\n"
		   "allreduce; the sum checked once after the loop. Rank 0 prints the median of\n"
		   "the slowest rank's time per allreduce and the goodput (tensor bits / time).\n"
		   "EAL options before \"--\" start DPDK (ina_dpdk_start) for a \"dpdk:\" --port.\n"
		   "The job's secret comes from $INA_JOB_TOKEN.\n"
		   "\n"
		   "options:\n"
		   "  --switch ADDR:PORT    the switch (required)\n"
		   "  --job J, --rank R, --world W   the job, this rank, the ranks (required)\n"
		   "  --port SPEC           transport (default udp)\n"
		   "  --elements N          tensor elements (default 16777216)\n"
		   "  --form dense|blocks   ina_allreduce or ina_allreduce_blocks (default dense)\n"
		   "  --density D           each rank's share of non-zero blocks, drawn from\n"
		   "                        its seed; the others are zero (default 1)\n"
		   "  --block B             elements per block (default: the library's)\n"
		   "  --sub-block b         cut every block into sub-blocks of b (default: none)\n"
		   "  --lanes L             blocks in flight (default: the library's)\n"
		   "  --threads T           cores for the rank's per-byte work (default 1)\n"
		   "  --reps R              timed allreduces (default 10)\n"
		   "  --warmup K            untimed allreduces first (default 2)\n"
		   "  --seed S              data seed (default 1)\n"
		   "  --timeout-ms T        no progress this long fails (default 30000)\n"
		   "  -h, --help            this text\n");
}

static int
parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return *s && !*end && !errno && *v >= lo && *v <= hi ? 0 : -EINVAL;
}

/* 0, 1 (--help), or -EINVAL with the reason printed. */
static int
parse_args(int argc, char **argv, struct bench *b)
{
	enum {
		O_SWITCH = 256,
		O_JOB,
		O_RANK,
		O_WORLD,
		O_PORT,
		O_ELEMENTS,
		O_FORM,
		O_DENSITY,
		O_BLOCK,
		O_SUB_BLOCK,
		O_LANES,
		O_THREADS,
		O_REPS,
		O_WARMUP,
		O_SEED,
		O_TIMEOUT
	};
	static const struct option opts[] = {
		{ "switch", required_argument, NULL, O_SWITCH },
		{ "job", required_argument, NULL, O_JOB },
		{ "rank", required_argument, NULL, O_RANK },
		{ "world", required_argument, NULL, O_WORLD },
		{ "port", required_argument, NULL, O_PORT },
		{ "elements", required_argument, NULL, O_ELEMENTS },
		{ "form", required_argument, NULL, O_FORM },
		{ "density", required_argument, NULL, O_DENSITY },
		{ "block", required_argument, NULL, O_BLOCK },
		{ "sub-block", required_argument, NULL, O_SUB_BLOCK },
		{ "lanes", required_argument, NULL, O_LANES },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "reps", required_argument, NULL, O_REPS },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "seed", required_argument, NULL, O_SEED },
		{ "timeout-ms", required_argument, NULL, O_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int have = 0, o;
	uint64_t v;
	char *end;

	memset(b, 0, sizeof(*b));
	b->port = "udp";
	b->elements = 16777216;
	b->density = 1.0;
	b->reps = 10;
	b->warmup = 2;
	b->seed = 1;
	b->timeout_ms = 30000;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		v = 0;
		switch (o) {
		case O_SWITCH:
			b->switch_addr = optarg;
			have |= 1;
			break;
		case O_JOB:
			if (parse_u64(optarg, 0, UINT32_MAX, &v) < 0)
				goto bad;
			b->job = (uint32_t)v;
			have |= 2;
			break;
		case O_RANK:
			if (parse_u64(optarg, 0, 63, &v) < 0)
				goto bad;
			b->rank = (uint16_t)v;
			have |= 4;
			break;
		case O_WORLD:
			if (parse_u64(optarg, 1, 64, &v) < 0)
				goto bad;
			b->world = (uint16_t)v;
			have |= 8;
			break;
		case O_PORT:
			b->port = optarg;
			break;
		case O_ELEMENTS:
			if (parse_u64(optarg, 1, 1ull << 31, &b->elements) < 0)
				goto bad;
			break;
		case O_FORM:
			if (strcmp(optarg, "dense") == 0)
				b->blocks = 0;
			else if (strcmp(optarg, "blocks") == 0)
				b->blocks = 1;
			else
				goto bad;
			break;
		case O_DENSITY:
			errno = 0;
			b->density = strtod(optarg, &end);
			if (*end || errno || !(b->density > 0 && b->density <= 1))
				goto bad;
			break;
		case O_BLOCK:
			if (parse_u64(optarg, 1, 65535, &v) < 0)
				goto bad;
			b->block = (uint16_t)v;
			break;
		case O_SUB_BLOCK:
			if (parse_u64(optarg, 1, 65535, &v) < 0)
				goto bad;
			b->sub_block = (uint16_t)v;
			break;
		case O_LANES:
			if (parse_u64(optarg, 1, 4096, &v) < 0)
				goto bad;
			b->lanes = (uint16_t)v;
			break;
		case O_THREADS:
			if (parse_u64(optarg, 1, INA_THREADS_MAX, &v) < 0)
				goto bad;
			b->threads = (uint16_t)v;
			break;
		case O_REPS:
			if (parse_u64(optarg, 1, MAX_REPS, &v) < 0)
				goto bad;
			b->reps = (unsigned)v;
			break;
		case O_WARMUP:
			if (parse_u64(optarg, 0, MAX_REPS, &v) < 0)
				goto bad;
			b->warmup = (unsigned)v;
			break;
		case O_SEED:
			if (parse_u64(optarg, 0, UINT64_MAX, &b->seed) < 0)
				goto bad;
			break;
		case O_TIMEOUT:
			if (parse_u64(optarg, 100, 3600000, &v) < 0)
				goto bad;
			b->timeout_ms = (uint32_t)v;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench_allreduce: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (have != 15) {
		fprintf(stderr,
			"bench_allreduce: --switch, --job, --rank and --world are required\n");
		return -EINVAL;
	}
	if (b->rank >= b->world) {
		fprintf(stderr, "bench_allreduce: --rank %u is not below --world %u\n", b->rank,
			b->world);
		return -EINVAL;
	}
	return 0;
bad:
	fprintf(stderr, "bench_allreduce: bad value '%s' for --%s\n", optarg, opts[o - 256].name);
	return -EINVAL;
}

/* Element i of rank r's input where its block is non-zero: small integers,
 * so that every order of summation gives the same bits. */
static float
value(uint64_t i, unsigned r)
{
	return (float)((int)((i * 7 + r * 5) % 13) - 6);
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

/* Every rank's input, as every rank can make it: which of the nb blocks of
 * each rank are non-zero (--density of them, drawn from the rank's seed;
 * all at density 1), world x nb bytes. */
struct inputs {
	size_t n, nb;
	unsigned B, world;
	uint8_t *on;
};

static int
inputs_make(struct inputs *x, const struct bench *b)
{
	x->n = (size_t)b->elements;
	x->B = b->block;
	x->world = b->world;
	x->nb = (x->n + x->B - 1) / x->B;
	x->on = malloc((size_t)b->world * x->nb);
	if (!x->on)
		return -ENOMEM;
	for (unsigned r = 0; r < b->world; r++) {
		uint64_t s = b->seed * 1000003ull + r;

		for (size_t k = 0; k < x->nb; k++)
			x->on[(size_t)r * x->nb + k] = b->density >= 1.0 ||
						       (double)(next_rand(&s) >> 11) * 0x1p-53 <
							       b->density;
	}
	return 0;
}

/* Element i of rank r's input. */
static float
input(const struct inputs *x, size_t i, unsigned r)
{
	return x->on[(size_t)r * x->nb + i / x->B] ? value(i, r) : 0.0f;
}

/* The sum of element i over every rank's input, and whether any rank has
 * its block. */
static float
want_sum(const struct inputs *x, size_t i, int *any)
{
	float s = 0;

	*any = 0;
	for (unsigned r = 0; r < x->world; r++)
		if (x->on[(size_t)r * x->nb + i / x->B]) {
			s += value(i, r);
			*any = 1;
		}
	return s;
}

/* The dense run (ina_allreduce; at --density < 1 a dense tensor whose other
 * blocks are zero): 0, or a negative error (printed). */
static int
run_dense(struct ina_ctx *ctx, const struct bench *b, const struct inputs *x, double *times)
{
	size_t n = x->n;
	float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
	uint64_t bad = 0, first_bad = 0;
	int ret = -ENOMEM, any;

	if (!in || !out) {
		fprintf(stderr, "bench_allreduce: rank %u: out of memory\n", b->rank);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		in[i] = input(x, i, b->rank);
	memset(out, 0, n * sizeof(float));
	for (unsigned k = 0; k < b->warmup + b->reps; k++) {
		double t0;

		if ((ret = ina_barrier(ctx)) < 0)
			goto fail;
		t0 = bench_now_s();
		if ((ret = ina_allreduce(ctx, TENSOR, in, out, n, INA_SUM)) < 0)
			goto fail;
		if (k >= b->warmup)
			times[k - b->warmup] = bench_now_s() - t0;
	}
	for (size_t i = 0; i < n; i++)
		if (out[i] != want_sum(x, i, &any) && bad++ == 0)
			first_bad = i;
	if (bad) {
		fprintf(stderr,
			"bench_allreduce: rank %u: WRONG SUM: %" PRIu64 " of %zu elements, "
			"first at %" PRIu64 ": %g, not %g\n",
			b->rank, bad, n, first_bad, (double)out[first_bad],
			(double)want_sum(x, first_bad, &any));
		ret = -EIO;
	}
	goto out;
fail:
	fprintf(stderr, "bench_allreduce: rank %u: %s: %s\n", b->rank, ina_strerror(ret),
		ina_last_error(ctx));
out:
	free(in);
	free(out);
	return ret;
}

/* The block-sparse run (ina_allreduce_blocks): the rank lists its non-zero
 * blocks with their values and gets the union's blocks with their sums as a
 * list. 0, or a negative error (printed). */
static int
run_blocks(struct ina_ctx *ctx, const struct bench *b, const struct inputs *x, double *times)
{
	struct ina_blocks in = { .n = x->n, .block_size = x->B };
	struct ina_blocks_out out = { 0 };
	uint32_t *index = NULL;
	float *values = NULL;
	size_t cap = 0, count = 0, u = 0, bad = 0;
	int ret = -ENOMEM, any;

	for (size_t k = 0; k < (size_t)x->world * x->nb; k++)
		cap += x->on[k];
	for (size_t k = 0; k < x->nb; k++)
		count += x->on[(size_t)b->rank * x->nb + k];
	/* Room for every rank's blocks: the union is at most that. */
	index = malloc((count + 1) * sizeof(*index));
	values = malloc((count + 1) * x->B * sizeof(*values));
	out.index = malloc((cap + 1) * sizeof(*out.index));
	out.values = malloc((cap + 1) * x->B * sizeof(*out.values));
	if (!index || !values || !out.index || !out.values) {
		fprintf(stderr, "bench_allreduce: rank %u: out of memory\n", b->rank);
		goto out;
	}
	out.capacity = cap;
	count = 0;
	for (size_t k = 0; k < x->nb; k++) {
		if (!x->on[(size_t)b->rank * x->nb + k])
			continue;
		index[count] = (uint32_t)k;
		for (size_t j = 0; j < x->B; j++) {
			size_t i = k * x->B + j;

			values[count * x->B + j] = i < x->n ? input(x, i, b->rank) : 0.0f;
		}
		count++;
	}
	in.count = count;
	in.index = index;
	in.values = values;
	memset(out.index, 0, (cap + 1) * sizeof(*out.index));
	memset(out.values, 0, (cap + 1) * x->B * sizeof(*out.values));
	for (unsigned k = 0; k < b->warmup + b->reps; k++) {
		double t0;

		if ((ret = ina_barrier(ctx)) < 0)
			goto fail;
		t0 = bench_now_s();
		if ((ret = ina_allreduce_blocks(ctx, TENSOR, &in, &out, INA_SUM)) < 0)
			goto fail;
		if (k >= b->warmup)
			times[k - b->warmup] = bench_now_s() - t0;
	}
	/* The union, ascending, with the sums. */
	for (size_t k = 0; k < x->nb; k++) {
		size_t len = k * x->B + x->B <= x->n ? x->B : x->n - k * x->B;

		want_sum(x, k * x->B, &any);
		if (!any)
			continue;
		if (u >= out.count || out.index[u] != k) {
			fprintf(stderr,
				"bench_allreduce: rank %u: WRONG UNION: block %zu is listed %s, "
				"%zu blocks listed\n",
				b->rank, k, u < out.count ? "elsewhere" : "nowhere", out.count);
			ret = -EIO;
			goto out;
		}
		for (size_t j = 0; j < len; j++)
			if (out.values[u * x->B + j] != want_sum(x, k * x->B + j, &any))
				bad++;
		u++;
	}
	if (u != out.count) {
		fprintf(stderr, "bench_allreduce: rank %u: WRONG UNION: %zu blocks, not %zu\n",
			b->rank, out.count, u);
		ret = -EIO;
	} else if (bad) {
		fprintf(stderr, "bench_allreduce: rank %u: WRONG SUM: %zu elements\n", b->rank,
			bad);
		ret = -EIO;
	}
	goto out;
fail:
	fprintf(stderr, "bench_allreduce: rank %u: %s: %s\n", b->rank, ina_strerror(ret),
		ina_last_error(ctx));
out:
	free(index);
	free(values);
	free(out.index);
	free(out.values);
	return ret;
}

/* Every rank's times (one allreduce of world x reps floats, each rank its
 * row), then on rank 0 the slowest rank's per iteration into 'slowest'. */
static int
gather_times(struct ina_ctx *ctx, const struct bench *b, const double *times, double *slowest)
{
	size_t n = (size_t)b->world * b->reps;
	float *all = calloc(n, sizeof(float));
	int ret;

	if (!all)
		return -ENOMEM;
	for (unsigned k = 0; k < b->reps; k++)
		all[(size_t)b->rank * b->reps + k] = (float)(times[k] * 1e6); /* us */
	ret = ina_allreduce(ctx, TIMES_TENSOR, all, all, n, INA_SUM);
	if (ret == 0)
		for (unsigned k = 0; k < b->reps; k++) {
			slowest[k] = 0;
			for (unsigned r = 0; r < b->world; r++)
				if (all[(size_t)r * b->reps + k] * 1e-6 > slowest[k])
					slowest[k] = all[(size_t)r * b->reps + k] * 1e-6;
		}
	free(all);
	return ret;
}

int
main(int argc, char **argv)
{
	static double times[MAX_REPS], slowest[MAX_REPS];
	struct ina_config cfg;
	struct ina_ctx *ctx = NULL;
	struct inputs x = { 0 };
	struct bench b;
	int dpdk = 0, dd = -1, ret;
	char err[256];
	double med;

	/* "[EAL options] --": DPDK first, as ina's programs take it. */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dd = i;
			break;
		}
	if (dd > 0) {
		ret = ina_dpdk_start(dd, argv, err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "bench_allreduce: %s\n", err);
			return 2;
		}
		dpdk = 1;
		argv[dd] = argv[0];
		argc -= dd;
		argv += dd;
	}
	ret = parse_args(argc, argv, &b);
	if (ret != 0) {
		if (dpdk)
			ina_dpdk_stop();
		return ret > 0 ? 0 : 2;
	}

	ina_config_init(&cfg);
	cfg.switch_addr = b.switch_addr;
	cfg.port = b.port;
	cfg.job_id = b.job;
	cfg.rank = b.rank;
	cfg.world = b.world;
	cfg.timeout_ms = b.timeout_ms;
	if (b.block)
		cfg.block_size = b.block;
	if (b.lanes)
		cfg.lanes = b.lanes;
	cfg.sub_block = b.sub_block;
	if (b.threads)
		cfg.threads = b.threads;
	ret = ina_token_from(NULL, &cfg.token, err, sizeof(err));
	if (ret == 0)
		ret = ina_open(&cfg, &ctx, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "bench_allreduce: rank %u: %s\n", b.rank, err);
		goto out;
	}
	b.block = cfg.block_size;
	if (inputs_make(&x, &b) < 0) {
		fprintf(stderr, "bench_allreduce: rank %u: out of memory\n", b.rank);
		ret = -ENOMEM;
		goto out;
	}
	ret = b.blocks ? run_blocks(ctx, &b, &x, times) : run_dense(ctx, &b, &x, times);
	if (ret < 0)
		goto out;
	ret = gather_times(ctx, &b, times, slowest);
	if (ret < 0) {
		fprintf(stderr, "bench_allreduce: rank %u: gathering the times: %s\n", b.rank,
			ina_strerror(ret));
		goto out;
	}
	if (b.rank == 0) {
		qsort(slowest, b.reps, sizeof(slowest[0]), bench_cmp_double);
		med = b.reps % 2 ? slowest[b.reps / 2]
				 : (slowest[b.reps / 2 - 1] + slowest[b.reps / 2]) / 2;
		printf("bench_allreduce transport=%s ranks=%u elements=%" PRIu64
		       " form=%s density=%g reps=%u median_ms=%.3f min_ms=%.3f max_ms=%.3f "
		       "goodput_gbps=%.3f\n",
		       ina_transport(ctx), b.world, b.elements, b.blocks ? "blocks" : "dense",
		       b.density, b.reps, med * 1e3, slowest[0] * 1e3, slowest[b.reps - 1] * 1e3,
		       (double)b.elements * 32 / med / 1e9);
	}
out:
	if (ctx) {
		int r = ina_close(ctx);

		if (ret == 0 && r < 0)
			ret = r;
	}
	if (dpdk)
		ina_dpdk_stop();
	free(x.on);
	return ret < 0 ? 1 : 0;
}
