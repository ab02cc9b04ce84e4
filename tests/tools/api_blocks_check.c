/* SPDX-License-Identifier: MIT */
/*
 * The block-sparse allreduce through the public API (ina_allreduce_blocks
 * over a udp port and a real ina-switch, or two): forks W ranks; each runs R
 * rounds of a tensor whose blocks are on with a density that changes per
 * round (1% to 50%), once dense (ina_allreduce, the reference) and once as
 * the list of its non-zero blocks, out to a list and a dense buffer full of
 * garbage. Every rank recomputes every rank's input, so it knows the union.
 * Checks: the union is exactly the blocks some rank listed, ascending; its
 * sums are the dense sums bit for bit (sum and average); no other block of
 * the dense output is written; the asynchronous form under a dense
 * operation in flight; -ENOSPC with the count when the list is too short,
 * and the job goes on; -EINVAL for an unsorted list, an index past the
 * tensor, a block size above the JOIN's.
 * Usage: api_blocks_check ADDR:PORT[,ADDR:PORT] f32|i32|bf16   (exit 0: passed)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ina.h"
#include "rank_check.h"

#include "ina/util.h"

#define W 4
#define N 5003
#define B 64
#define NB ((N + B - 1) / B)
#define R 8
#define T_DENSE 5
#define T_BLOCKS 6

static int rank;
static const uint32_t garbage = 0x7fc00123u; /* a NaN no sum makes */

static double
density(int round)
{
	static const double d[] = { 0.01, 0.05, 0.5, 0.0, 0.2, 0.01, 1.0, 0.1 };

	return d[round % 8];
}

static int
block_on(int round, int r, uint32_t b)
{
	uint64_t st = (uint64_t)round * 7919u + (uint64_t)r * 104729u + b;

	return (double)(ina_splitmix64(&st) >> 11) * 0x1.0p-53 < density(round);
}

/* Rank r's input of 'round': k / 1024 in its blocks that are on. */
static void
make_input(int round, int r, float *x)
{
	for (uint32_t i = 0; i < N; i++) {
		uint64_t st = (uint64_t)round * 1000003u + (uint64_t)r * N + i;
		int k = (int)(ina_splitmix64(&st) % 2047) - 1023;

		x[i] = block_on(round, r, i / B) ? (float)(k ? k : 1) / 1024.0f : 0.0f;
	}
}

static uint32_t
elems(uint32_t b)
{
	return N - b * B < B ? N - b * B : B;
}

static void
fill_garbage(float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		memcpy(&x[i], &garbage, sizeof(garbage));
}

/* One round both ways; 0 when every check passed. */
static int
round_check(struct ina_ctx *ctx, int k, int async)
{
	static float in[N], ref[N], dense[N], vals[NB * B], list_vals[NB * B];
	static uint32_t idx[NB], list_idx[NB];
	enum ina_op op = k % 2 ? INA_AVG : INA_SUM;
	struct ina_blocks bin = { .n = N, .block_size = B, .index = idx, .values = vals };
	struct ina_blocks_out bout = { .index = list_idx,
				       .values = list_vals,
				       .dense = dense,
				       .capacity = NB };
	uint32_t want = 0, pos = 0;
	int ret;

	make_input(k, rank, in);
	for (uint32_t b = 0; b < NB; b++)
		if (block_on(k, rank, b)) {
			idx[bin.count] = b;
			memcpy(&vals[bin.count * B], &in[b * B], elems(b) * sizeof(float));
			bin.count++;
		}
	ret = ina_allreduce(ctx, T_DENSE, in, ref, N, op);
	CHECK(ret == 0, "round %d dense: %s (%s)", k, ina_strerror(ret), ina_last_error(ctx));
	fill_garbage(dense, N);
	if (async) {
		/* The blocks' form behind a dense one, both in flight. */
		static float in2[N], out2[N];
		uint64_t h1, h2;

		memcpy(in2, in, sizeof(in));
		CHECK(ina_iallreduce(ctx, T_DENSE, in2, out2, N, op, 0, &h1) == 0, "iallreduce");
		CHECK(ina_iallreduce_blocks(ctx, T_BLOCKS, &bin, &bout, op, 0, &h2) == 0,
		      "iallreduce_blocks: %s", ina_last_error(ctx));
		ina_flush(ctx);
		ret = ina_wait(ctx, h2);
		CHECK(ret == 0, "round %d blocks (async): %s (%s)", k, ina_strerror(ret),
		      ina_last_error(ctx));
		CHECK(ina_wait(ctx, h1) == 0, "round %d dense (async)", k);
		CHECK(memcmp(out2, ref, sizeof(ref)) == 0, "round %d: async dense differs", k);
	} else {
		ret = ina_allreduce_blocks(ctx, T_BLOCKS, &bin, &bout, op);
		CHECK(ret == 0, "round %d blocks: %s (%s)", k, ina_strerror(ret),
		      ina_last_error(ctx));
	}
	for (uint32_t b = 0; b < NB; b++) {
		int on = 0;

		for (int r = 0; r < W; r++)
			on |= block_on(k, r, b);
		if (!on) {
			CHECK(memcmp(&dense[b * B], &garbage, sizeof(garbage)) == 0,
			      "round %d: block %u is in no list but was written", k, b);
			continue;
		}
		want++;
		CHECK(pos < bout.count && list_idx[pos] == b, "round %d: entry %u is not block %u",
		      k, pos, b);
		CHECK(memcmp(&list_vals[pos * B], &ref[b * B], elems(b) * sizeof(float)) == 0,
		      "round %d: block %u's listed sum differs from the dense sum", k, b);
		CHECK(memcmp(&dense[b * B], &ref[b * B], elems(b) * sizeof(float)) == 0,
		      "round %d: block %u's dense sum differs from the dense sum", k, b);
		pos++;
	}
	CHECK(bout.count == want, "round %d: union of %zu blocks, want %u", k, bout.count, want);
	return 0;
}

/* Too short a list, then bad arguments: the job goes on after each. */
static int
errors_check(struct ina_ctx *ctx)
{
	static float vals[2 * B], list_vals[NB * B];
	uint32_t idx[2] = { (uint32_t)rank, (uint32_t)(W + rank) }, list_idx[NB];
	struct ina_blocks bin = { .n = N,
				  .block_size = B,
				  .count = 2,
				  .index = idx,
				  .values = vals };
	struct ina_blocks_out bout = { .index = list_idx, .values = list_vals, .capacity = 3 };
	int ret;

	for (int i = 0; i < 2 * B; i++)
		vals[i] = 1.0f;
	/* The union is 2 W blocks: 3 fit. */
	ret = ina_allreduce_blocks(ctx, T_BLOCKS, &bin, &bout, INA_SUM);
	CHECK(ret == -ENOSPC, "a short list: %s, not -ENOSPC", ina_strerror(ret));
	CHECK(bout.count == 2 * W, "a short list: count %zu, want %d", bout.count, 2 * W);
	/* The first three to come, in order, with their sums. */
	for (uint32_t i = 0; i < 3; i++)
		CHECK(list_idx[i] < 2 * W && (i == 0 || list_idx[i] > list_idx[i - 1]) &&
			      list_vals[i * B] == 1.0f,
		      "a short list: entry %u", i);
	bout.capacity = NB;
	CHECK(ina_allreduce_blocks(ctx, T_BLOCKS, &bin, &bout, INA_SUM) == 0 && bout.count == 2 * W,
	      "after -ENOSPC: %s", ina_last_error(ctx));
	idx[0] = W + 1;
	idx[1] = 1;
	CHECK(ina_allreduce_blocks(ctx, T_BLOCKS, &bin, &bout, INA_SUM) == -EINVAL, "unsorted");
	idx[0] = 1;
	idx[1] = NB;
	CHECK(ina_allreduce_blocks(ctx, T_BLOCKS, &bin, &bout, INA_SUM) == -EINVAL, "past the end");
	idx[1] = 2;
	bin.block_size = 2 * B;
	CHECK(ina_allreduce_blocks(ctx, T_BLOCKS, &bin, &bout, INA_SUM) == -EINVAL, "B too large");
	return 0;
}

static int
run_rank(const char *addr, const char *enc)
{
	struct ina_config cfg;
	struct ina_ctx *ctx;
	char err[256];
	int ret;

	ina_config_init(&cfg);
	cfg.switch_addr = addr;
	cfg.job_id = 78;
	cfg.rank = (uint16_t)rank;
	cfg.world = W;
	cfg.block_size = B;
	cfg.lanes = 8;
	cfg.timeout_ms = 10000;
	cfg.encoding = !strcmp(enc, "i32") ? INA_I32 : !strcmp(enc, "bf16") ? INA_BF16 : INA_F32;
	CHECK(ina_token_from(NULL, &cfg.token, err, sizeof(err)) == 0, "%s", err);
	ret = ina_open(&cfg, &ctx, err, sizeof(err));
	CHECK(ret == 0, "ina_open: %s", err);
	for (int k = 0; k < R; k++)
		if (round_check(ctx, k, k % 3 == 2))
			return 1;
	if (errors_check(ctx))
		return 1;
	CHECK(ina_close(ctx) == 0, "ina_close");
	return 0;
}

int
main(int argc, char **argv)
{
	pid_t pids[W];
	int fail = 0, status;

	if (argc != 3) {
		fprintf(stderr, "usage: api_blocks_check ADDR:PORT[,ADDR:PORT] f32|i32|bf16\n");
		return 2;
	}
	fflush(NULL);
	for (int r = 0; r < W; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			return 1;
		if (pids[r] == 0) {
			rank = r;
			_exit(run_rank(argv[1], argv[2]));
		}
	}
	for (int r = 0; r < W; r++)
		if (waitpid(pids[r], &status, 0) != pids[r] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			fail = 1;
	return fail;
}
