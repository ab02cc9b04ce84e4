/* SPDX-License-Identifier: MIT */
/*
 * The sparsifier through the public API (ina_allreduce over a udp port and a
 * real ina-switch): forks W ranks; each runs R rounds of a sparsified tensor
 * (block top-k, or the filter, or both) on deterministic dyadic inputs every
 * rank can recompute, then sums every rank's residual through a dense tensor.
 * Checks: the caller's 'in' is never modified; every rank gets the same bits;
 * sum over rounds of the results + sum of the residuals == sum of all inputs,
 * exactly; the stats' density and residual norm; -EINVAL for another n,
 * -EBUSY for options after first use; and no bound on tensors: MANY more
 * sparsified tensors, each with its own residual, conserve every input too.
 * Usage: api_sparse_check ADDR:PORT topk|filter|both   (exit 0: all passed)
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ina.h"
#include "rank_check.h"

#include "ina/util.h"

#define W 4
#define N 1000
#define R 6
#define T_SPARSE 7
#define T_RESID 8
#define MANY 300 /* tensors of a model's size: no fixed bound */
#define MANY_N 64
#define T_MANY 1000 /* their ids T_MANY .. T_MANY + MANY - 1 */
#define T_MANY_RESID 9

static float
input(int round, int rank, int i)
{
	uint64_t st = (uint64_t)round * 1000003u + (uint64_t)rank * N + (uint64_t)i;
	int k = (int)(ina_splitmix64(&st) % 2047) - 1023;

	return (float)k / 1024.0f;
}


/* MANY tensors with the job's sparsifier, one round each, every one with
 * its own residual; then every residual summed in one dense allreduce:
 * results + residuals == inputs for all of them. */
static int
many_tensors(struct ina_ctx *ctx, int rank)
{
	static float in[MANY][MANY_N], out[MANY][MANY_N], resid[MANY * MANY_N], sum[MANY * MANY_N];
	struct ina_sparsify dense = { .mode = INA_SPARSIFY_OFF };
	struct ina_stats before, after;
	int ret;

	ina_get_stats(ctx, &before);
	CHECK(ina_tensor_sparsify(ctx, T_MANY_RESID, &dense) == 0, "dense tensor: %s",
	      ina_last_error(ctx));
	for (int t = 0; t < MANY; t++) {
		for (int i = 0; i < MANY_N; i++)
			in[t][i] = input(100 + t, rank, i);
		ret = ina_allreduce(ctx, T_MANY + (uint32_t)t, in[t], out[t], MANY_N, INA_SUM);
		CHECK(ret == 0, "tensor %d of %d: %s (%s)", t, MANY, ina_strerror(ret),
		      ina_last_error(ctx));
	}
	for (int t = 0; t < MANY; t++) {
		size_t rn = 0;
		const float *r = ina_residual(ctx, T_MANY + (uint32_t)t, &rn);

		CHECK(r && rn == MANY_N, "tensor %d: no residual", t);
		memcpy(&resid[t * MANY_N], r, sizeof(float) * MANY_N);
	}
	ina_get_stats(ctx, &after);
	CHECK(after.sparse_rounds - before.sparse_rounds == MANY, "%llu sparsified rounds, not %d",
	      (unsigned long long)(after.sparse_rounds - before.sparse_rounds), MANY);
	ret = ina_allreduce(ctx, T_MANY_RESID, resid, sum, MANY * MANY_N, INA_SUM);
	CHECK(ret == 0, "residual sum: %s", ina_strerror(ret));
	for (int t = 0; t < MANY; t++) {
		for (int i = 0; i < MANY_N; i++) {
			double want = 0;

			for (int r = 0; r < W; r++)
				want += input(100 + t, r, i);
			CHECK((double)out[t][i] + sum[t * MANY_N + i] == want,
			      "tensor %d element %d: result %.9g + residuals %.9g != inputs %.9g",
			      t, i, (double)out[t][i], (double)sum[t * MANY_N + i], want);
		}
	}
	return 0;
}

static int
run_rank(const char *addr, enum ina_sparsify_mode mode, int rank)
{
	static float in[N], copy[N], out[N], resid[N];
	static double got[N], want[N];
	struct ina_config cfg;
	struct ina_ctx *ctx;
	struct ina_stats st;
	struct ina_sparsify dense = { .mode = INA_SPARSIFY_OFF };
	const float *res;
	size_t rn = 0;
	char err[256];
	int ret;

	ina_config_init(&cfg);
	cfg.switch_addr = addr;
	cfg.job_id = 77;
	cfg.rank = (uint16_t)rank;
	cfg.world = W;
	cfg.block_size = 16;
	cfg.lanes = 8;
	cfg.timeout_ms = 5000;
	CHECK(ina_token_from(NULL, &cfg.token, err, sizeof(err)) == 0, "%s", err);
	cfg.sparsify.mode = mode;
	cfg.sparsify.target = INA_TOPK_DENSITY;
	cfg.sparsify.density = 0.1;
	cfg.sparsify.filter_b0 = 0.5f;
	cfg.sparsify.filter_decay = 0.8;
	ret = ina_open(&cfg, &ctx, err, sizeof(err));
	CHECK(ret == 0, "ina_open: %s", err);
	CHECK(ina_tensor_sparsify(ctx, T_RESID, &dense) == 0, "dense tensor: %s",
	      ina_last_error(ctx));
	for (int k = 0; k < R; k++) {
		for (int i = 0; i < N; i++) {
			in[i] = input(k, rank, i);
			for (int r = 0; r < W; r++)
				want[i] += input(k, r, i);
		}
		memcpy(copy, in, sizeof(in));
		ret = ina_allreduce(ctx, T_SPARSE, in, out, N, INA_SUM);
		CHECK(ret == 0, "round %d: %s (%s)", k, ina_strerror(ret), ina_last_error(ctx));
		CHECK(memcmp(in, copy, sizeof(in)) == 0, "round %d: 'in' was modified", k);
		for (int i = 0; i < N; i++)
			got[i] += out[i];
		ina_get_stats(ctx, &st);
		CHECK(st.sparse_rounds == (uint64_t)k + 1 && st.sparse_blocks == 63u * (k + 1),
		      "round %d: sparse_rounds %llu blocks %llu", k,
		      (unsigned long long)st.sparse_rounds, (unsigned long long)st.sparse_blocks);
		if (mode == INA_SPARSIFY_TOPK)
			CHECK(st.density_sent > 0.09 && st.density_sent < 0.11,
			      "round %d: density_sent %g", k, st.density_sent);
		else
			CHECK(st.density_sent > 0 && st.density_sent <= 1, "density_sent %g",
			      st.density_sent);
	}
	/* ina_residual() and the stats' norm agree. */
	res = ina_residual(ctx, T_SPARSE, &rn);
	CHECK(res && rn == N, "no residual");
	{
		double m = 0;

		for (int i = 0; i < N; i++)
			m += (double)res[i] * res[i];
		CHECK(fabs(sqrt(m) - st.residual_norm) <= 1e-9 * (1 + sqrt(m)) && m > 0,
		      "residual norm %g, stats %g", sqrt(m), st.residual_norm);
	}
	/* Every rank's residual summed, dense: results + residuals == inputs. */
	ret = ina_allreduce(ctx, T_RESID, res, resid, N, INA_SUM);
	CHECK(ret == 0, "residual sum: %s", ina_strerror(ret));
	for (int i = 0; i < N; i++)
		CHECK(got[i] + resid[i] == want[i],
		      "element %d: results %.9g + residuals %.9g != inputs %.9g", i, got[i],
		      (double)resid[i], want[i]);
	/* The errors. */
	CHECK(ina_allreduce(ctx, T_SPARSE, in, out, N - 1, INA_SUM) == -EINVAL &&
		      strstr(ina_last_error(ctx), "made for"),
	      "another n: not -EINVAL (%s)", ina_last_error(ctx));
	CHECK(ina_tensor_sparsify(ctx, T_SPARSE, &dense) == -EBUSY,
	      "options after use: not -EBUSY");
	if (many_tensors(ctx, rank))
		return 1;
	ret = ina_close(ctx);
	CHECK(ret == 0, "close: %s", ina_strerror(ret));
	if (rank == 0)
		printf("api_sparse_check: mode %d: %d rounds, results + residuals == inputs, density "
		       "%.3f, residual norm %.4g, errors as documented, %d more tensors conserved\n",
		       (int)mode, R, (double)st.sparse_blocks_sent / (double)st.sparse_blocks,
		       st.residual_norm, MANY);
	fflush(stdout);
	return 0;
}

int
main(int argc, char **argv)
{
	enum ina_sparsify_mode mode;
	pid_t pids[W];
	int fail = 0, status;

	if (argc != 3) {
		fprintf(stderr, "usage: api_sparse_check ADDR:PORT topk|filter|both\n");
		return 2;
	}
	mode = !strcmp(argv[2], "topk")	    ? INA_SPARSIFY_TOPK
	       : !strcmp(argv[2], "filter") ? INA_SPARSIFY_FILTER
					    : INA_SPARSIFY_BOTH;
	fflush(NULL);
	for (int r = 0; r < W; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			return 1;
		if (pids[r] == 0)
			_exit(run_rank(argv[1], mode, r));
	}
	for (int r = 0; r < W; r++)
		if (waitpid(pids[r], &status, 0) != pids[r] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			fail = 1;
	return fail;
}
