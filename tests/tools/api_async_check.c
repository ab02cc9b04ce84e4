/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous API (ina_iallreduce, ina_ibroadcast, ina_ibarrier,
 * ina_test, ina_wait, ina_flush, ina_progress) over a udp port and a real
 * ina-switch: forks W ranks, each submits a step of L tensors of spread
 * sizes in backpropagation order (the last layer first, priority = layer)
 * with a rank-dependent delay between them (ranks produce them at different
 * times), then a broadcast and a barrier, for S steps. Checks: every sum
 * exact (small integers) on every rank; the completion order is the
 * policy's (fifo: submission order; priority: layer 0 first; magnitude:
 * submission order in the first step, then the largest previous sum first),
 * seen through ina_test; the broadcast carries the root's bits; a blocking
 * ina_allreduce between async ones; a second test of a spent handle and a
 * handle never given are -EINVAL; max_pending gives -EBUSY; and a step where
 * one thread submits while another waits (the calls are thread-safe);
 * under priority and magnitude, a wait on a window nothing closes is
 * -EDEADLK after timeout_ms, and ends after ina_flush().
 * With "sparse" after the policy: the job's sparsifier (block top-k) and
 * the block planner run per operation while many are in flight: the sum over
 * steps of every result plus every rank's residual equals the sum of every
 * input, exactly (no update lost).
 * With "fuse": the same as without, small tensors fused (cfg.fuse_elems).
 * Usage: api_async_check ADDR:PORT fifo|priority|magnitude [sparse|fuse]
 * (exit 0: all passed)
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ina.h"
#include "rank_check.h"
#include "ina/util.h"

#define W 4
#define L 8
#define S 3
#define MAXN 6000

static const size_t sizes[L] = { 3000, 40, 5000, 700, 1, 2048, 300, 5999 };

/* Rank r's value of layer l, element i, step s: small integers, exact sums;
 * layer l's sum grows with l in step 0 and shrinks with it after, so the
 * magnitude order differs from the submission order. */
static float
value(int s, int r, int l, size_t i)
{
	int scale = s == 0 ? l + 1 : (L - l) * 3;

	return (float)(((int)(i % 7) - 3 + r) * scale);
}


static void
pause_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static double
sum_norm2(int s, int l)
{
	double ss = 0;

	for (size_t i = 0; i < sizes[l]; i++) {
		double v = 0;

		for (int r = 0; r < W; r++)
			v += value(s, r, l, i);
		ss += v * v;
	}
	return ss;
}

/* The expected order of step s's layers (their index in submission order:
 * k-th submitted is layer L-1-k). */
static void
expected_order(enum ina_sched_policy p, int s, int *layers)
{
	for (int k = 0; k < L; k++)
		layers[k] = L - 1 - k;
	if (p == INA_SCHED_PRIORITY) {
		for (int k = 0; k < L; k++)
			layers[k] = k;
	} else if (p == INA_SCHED_MAGNITUDE && s > 0) {
		/* Previous step's norms, largest first, ties in submission order. */
		for (int a = 1; a < L; a++)
			for (int b = a;
			     b > 0 && sum_norm2(s - 1, layers[b]) > sum_norm2(s - 1, layers[b - 1]);
			     b--) {
				int t = layers[b];

				layers[b] = layers[b - 1];
				layers[b - 1] = t;
			}
	}
}

/* Two threads on one context: the main thread submits, this one waits. */
struct waiter {
	struct ina_ctx *ctx;
	uint64_t h[L];
	atomic_int published; /* handles h[0 .. published) are valid */
	int failed;
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;

	for (int k = 0; k < L; k++) {
		while (atomic_load(&w->published) <= k)
			ina_progress(w->ctx, 100);
		if (ina_wait(w->ctx, w->h[k]) != 0)
			w->failed = 1;
	}
	return NULL;
}

static int
run_rank(const char *addr, enum ina_sched_policy policy, int rank, uint32_t fuse)
{
	static float in[L][MAXN], out[L][MAXN], bc[MAXN], x[4], y[4];
	struct ina_config cfg;
	struct ina_ctx *ctx;
	uint64_t h[L], hb, hbar, spent;
	char err[256];
	int ret;

	ina_config_init(&cfg);
	cfg.switch_addr = addr;
	cfg.job_id = 77 + (uint32_t)policy;
	cfg.rank = (uint16_t)rank;
	cfg.world = W;
	cfg.block_size = 256;
	cfg.lanes = 16;
	cfg.sched = policy;
	cfg.max_pending = 12;
	cfg.fuse_elems = fuse;
	cfg.timeout_ms = 20000;
	if (ina_token_from(NULL, &cfg.token, err, sizeof(err)) < 0)
		CHECK(0, "token: %s", err);
	ret = ina_open(&cfg, &ctx, err, sizeof(err));
	CHECK(ret == 0, "open: %s", err);
	for (int s = 0; s < S; s++) {
		int want[L], done[L] = { 0 }, nb_done = 0, order[L];

		for (int k = 0; k < L; k++) {
			int l = L - 1 - k;

			for (size_t i = 0; i < sizes[l]; i++)
				in[l][i] = value(s, rank, l, i);
			ret = ina_iallreduce(ctx, (uint32_t)l, in[l], out[l], sizes[l], INA_SUM, l,
					     &h[l]);
			CHECK(ret == 0, "step %d layer %d: iallreduce %s", s, l, ina_strerror(ret));
			/* Ranks produce their tensors at different paces. */
			pause_us(200 + 700 * rank);
		}
		ret = ina_flush(ctx);
		CHECK(ret == 0, "flush: %s", ina_strerror(ret));
		/* Completion order through ina_test: when a layer is seen done,
		 * every layer the policy puts before it is done too. */
		expected_order(policy, s, want);
		for (int k = 0; k < L; k++)
			order[want[k]] = k;
		for (int iter = 0; nb_done < L && iter < 2000000; iter++) {
			for (int l = 0; l < L; l++) {
				if (done[l])
					continue;
				ret = ina_test(ctx, h[l]);
				CHECK(ret >= 0, "step %d layer %d: test %s (%s)", s, l,
				      ina_strerror(ret), ina_last_error(ctx));
				if (ret == 0)
					continue;
				done[l] = 1;
				nb_done++;
				for (int k = 0; k < order[l]; k++) {
					int e = want[k];

					if (!done[e]) {
						ret = ina_test(ctx, h[e]);
						CHECK(ret == 1,
						      "step %d (%d): layer %d done before "
						      "layer %d, against the policy",
						      s, policy, l, e);
						done[e] = 1;
						nb_done++;
					}
				}
			}
			ina_progress(ctx, 200);
		}
		CHECK(nb_done == L, "step %d: not every layer ended", s);
		for (int l = 0; l < L; l++)
			for (size_t i = 0; i < sizes[l]; i++) {
				float v = 0;

				for (int r = 0; r < W; r++)
					v += value(s, r, l, i);
				CHECK(out[l][i] == v, "step %d layer %d elem %zu: %g, want %g", s,
				      l, i, (double)out[l][i], (double)v);
			}
		/* A spent handle, one never given. */
		CHECK(ina_test(ctx, h[0]) == -EINVAL, "a spent handle is not -EINVAL");
		CHECK(ina_wait(ctx, h[0]) == -EINVAL, "a spent handle is not -EINVAL");
		CHECK(ina_wait(ctx, 0) == -EINVAL, "handle 0 is not -EINVAL");
		/* A broadcast from rank s % W, then a barrier, then a blocking
		 * allreduce while nothing else runs. */
		for (size_t i = 0; i < MAXN; i++)
			bc[i] = rank == s % W ? (float)i * 0.37f - 11.0f : -1.0f;
		ret = ina_ibroadcast(ctx, 100, bc, MAXN, (uint16_t)(s % W), 0, &hb);
		CHECK(ret == 0, "ibroadcast: %s", ina_strerror(ret));
		ret = ina_ibarrier(ctx, &hbar);
		CHECK(ret == 0, "ibarrier: %s", ina_strerror(ret));
		CHECK(ina_wait(ctx, hbar) == 0, "barrier: %s", ina_last_error(ctx));
		/* The barrier is a fence: the broadcast ended before it. */
		CHECK(ina_test(ctx, hb) == 1, "the broadcast did not end before the barrier");
		for (size_t i = 0; i < MAXN; i++)
			CHECK(bc[i] == (float)i * 0.37f - 11.0f, "broadcast elem %zu: %g", i,
			      (double)bc[i]);
		x[0] = (float)rank;
		ret = ina_allreduce(ctx, 101, x, y, 1, INA_SUM);
		CHECK(ret == 0 && y[0] == (float)(W * (W - 1) / 2), "blocking allreduce: %s %g",
		      ina_strerror(ret), (double)y[0]);
	}
	/* One thread submits (and flushes), another waits. */
	{
		static struct waiter wt;
		pthread_t th;

		wt.ctx = ctx;
		atomic_store(&wt.published, 0);
		pthread_create(&th, NULL, waiter_main, &wt);
		for (int k = 0; k < L; k++) {
			int l = L - 1 - k;

			for (size_t i = 0; i < sizes[l]; i++)
				in[l][i] = value(S, rank, l, i);
			ret = ina_iallreduce(ctx, (uint32_t)l, in[l], out[l], sizes[l], INA_SUM, l,
					     &wt.h[k]);
			CHECK(ret == 0, "threaded layer %d: %s", l, ina_strerror(ret));
			atomic_store(&wt.published, k + 1);
			pause_us(300 + 500 * rank);
		}
		ina_flush(ctx);
		pthread_join(th, NULL);
		CHECK(!wt.failed, "threaded: a wait failed: %s", ina_last_error(ctx));
		for (int l = 0; l < L; l++)
			for (size_t i = 0; i < sizes[l]; i++) {
				float v = 0;

				for (int r = 0; r < W; r++)
					v += value(S, r, l, i);
				CHECK(out[l][i] == v, "threaded layer %d elem %zu: %g, want %g", l,
				      i, (double)out[l][i], (double)v);
			}
	}
	/* max_pending: 12 submitted and not waited for, the 13th is -EBUSY. */
	{
		uint64_t hs[12];
		int n = 0;

		for (; n < 12; n++) {
			ret = ina_iallreduce(ctx, 200, x, y, 1, INA_SUM, 0, &hs[n]);
			CHECK(ret == 0, "pending %d: %s", n, ina_strerror(ret));
		}
		ret = ina_iallreduce(ctx, 200, x, y, 1, INA_SUM, 0, &spent);
		CHECK(ret == -EBUSY, "beyond max_pending: %s", ina_strerror(ret));
		ina_flush(ctx);
		for (int k = n - 1; k >= 0; k--)
			CHECK(ina_wait(ctx, hs[k]) == 0, "pending wait %d: %s", k,
			      ina_last_error(ctx));
	}
	/* A wait on an operation whose window nothing closes: -EDEADLK after
	 * timeout_ms (a job of its own with a short one), the handle still
	 * valid; after a flush it ends. */
	if (policy != INA_SCHED_FIFO) {
		struct ina_config c2 = cfg;
		struct ina_ctx *ctx2;
		uint64_t hd;
		uint64_t t0;

		c2.job_id = cfg.job_id + 100;
		c2.timeout_ms = 300;
		ret = ina_open(&c2, &ctx2, err, sizeof(err));
		CHECK(ret == 0, "open 2: %s", err);
		x[0] = 1;
		ret = ina_iallreduce(ctx2, 5, x, y, 1, INA_SUM, 0, &hd);
		CHECK(ret == 0, "deadlock op: %s", ina_strerror(ret));
		t0 = ina_now_ns();
		ret = ina_wait(ctx2, hd);
		CHECK(ret == -EDEADLK, "a window nothing closes: %s, not -EDEADLK",
		      ina_strerror(ret));
		CHECK(ina_now_ns() - t0 >= 300 * INA_NS_PER_MS, "-EDEADLK before timeout_ms");
		CHECK(strstr(ina_last_error(ctx2), "ina_flush"), "the sentence: %s",
		      ina_last_error(ctx2));
		CHECK(ina_flush(ctx2) == 0, "flush 2");
		ret = ina_wait(ctx2, hd);
		CHECK(ret == 0 && y[0] == (float)W, "after the flush: %s %g", ina_strerror(ret),
		      (double)y[0]);
		CHECK(ina_close(ctx2) == 0, "close 2");
	}
	/* Fusion: fewer rounds than operations (each step's small tensors). */
	{
		struct ina_stats st;
		uint64_t ops = (uint64_t)S * (L + 3) + L + 12;

		ina_get_stats(ctx, &st);
		if (fuse)
			CHECK(st.rounds + S <= ops, "fusion: %llu rounds for %llu operations",
			      (unsigned long long)st.rounds, (unsigned long long)ops);
		else
			CHECK(st.rounds == ops, "%llu rounds for %llu operations",
			      (unsigned long long)st.rounds, (unsigned long long)ops);
	}
	ret = ina_close(ctx);
	CHECK(ret == 0, "close: %s", ina_strerror(ret));
	return 0;
}

/* The sparsifier and the planner per operation, with the steps' tensors in
 * flight together. */
static int
run_sparse(const char *addr, enum ina_sched_policy policy, int rank)
{
	static float in[L][MAXN], out[L][MAXN], resid[MAXN], rsum[MAXN];
	static double got[L][MAXN], want[L][MAXN];
	struct ina_sparsify dense = { .mode = INA_SPARSIFY_OFF };
	struct ina_config cfg;
	struct ina_ctx *ctx;
	uint64_t h[L];
	char err[256];
	int ret;

	ina_config_init(&cfg);
	cfg.switch_addr = addr;
	cfg.job_id = 90 + (uint32_t)policy;
	cfg.rank = (uint16_t)rank;
	cfg.world = W;
	cfg.block_size = 256;
	cfg.lanes = 16;
	cfg.sched = policy;
	cfg.sched_window = 3;
	cfg.timeout_ms = 20000;
	cfg.plan_blocks = 1;
	cfg.sparsify.mode = INA_SPARSIFY_TOPK;
	cfg.sparsify.target = INA_TOPK_DENSITY;
	cfg.sparsify.density = 0.3;
	if (ina_token_from(NULL, &cfg.token, err, sizeof(err)) < 0)
		CHECK(0, "token: %s", err);
	ret = ina_open(&cfg, &ctx, err, sizeof(err));
	CHECK(ret == 0, "open: %s", err);
	for (int l = 0; l < L; l++)
		CHECK(ina_tensor_sparsify(ctx, 1000 + (uint32_t)l, &dense) == 0,
		      "dense residual tensor");
	for (int s = 0; s < S + 2; s++) {
		for (int k = 0; k < L; k++) {
			int l = L - 1 - k;

			for (size_t i = 0; i < sizes[l]; i++) {
				in[l][i] = value(s, rank, l, i);
				for (int r = 0; r < W; r++)
					want[l][i] += value(s, r, l, i);
			}
			ret = ina_iallreduce(ctx, (uint32_t)l, in[l], out[l], sizes[l], INA_SUM, l,
					     &h[l]);
			CHECK(ret == 0, "sparse step %d layer %d: %s", s, l, ina_strerror(ret));
			pause_us(100 + 300 * rank);
		}
		ina_flush(ctx);
		for (int l = 0; l < L; l++) {
			ret = ina_wait(ctx, h[l]);
			CHECK(ret == 0, "sparse step %d layer %d: %s (%s)", s, l, ina_strerror(ret),
			      ina_last_error(ctx));
			for (size_t i = 0; i < sizes[l]; i++)
				got[l][i] += out[l][i];
		}
	}
	{
		/* The planner's last B and its cut: b a power-of-two divisor of
		 * B, into at most 128, at least 8 when cut. */
		struct ina_stats st;

		ina_get_stats(ctx, &st);
		CHECK(st.sub_block && st.block_size % st.sub_block == 0 &&
			      st.block_size / st.sub_block <= 128 &&
			      (st.sub_block == st.block_size || st.sub_block >= 8),
		      "stats: B %u, b %u", st.block_size, st.sub_block);
	}
	for (int l = 0; l < L; l++) {
		const float *r = ina_residual(ctx, (uint32_t)l, NULL);

		CHECK(r, "layer %d has no residual", l);
		memcpy(resid, r, sizes[l] * sizeof(float));
		ret = ina_allreduce(ctx, 1000 + (uint32_t)l, resid, rsum, sizes[l], INA_SUM);
		CHECK(ret == 0, "residual sum: %s", ina_strerror(ret));
		for (size_t i = 0; i < sizes[l]; i++)
			CHECK(got[l][i] + rsum[i] == want[l][i],
			      "layer %d elem %zu: results %g + residuals %g != inputs %g", l, i,
			      got[l][i], (double)rsum[i], want[l][i]);
	}
	ret = ina_close(ctx);
	CHECK(ret == 0, "close: %s", ina_strerror(ret));
	return 0;
}

int
main(int argc, char **argv)
{
	enum ina_sched_policy p;
	int failed = 0;

	int sparse = argc == 4 && strcmp(argv[3], "sparse") == 0;
	int fuse = argc == 4 && strcmp(argv[3], "fuse") == 0;

	if (argc != 3 && !sparse && !fuse) {
		fprintf(stderr, "usage: %s ADDR:PORT fifo|priority|magnitude [sparse|fuse]\n",
			argv[0]);
		return 2;
	}
	p = strcmp(argv[2], "fifo") == 0       ? INA_SCHED_FIFO
	    : strcmp(argv[2], "priority") == 0 ? INA_SCHED_PRIORITY
					       : INA_SCHED_MAGNITUDE;
	for (int r = 0; r < W; r++)
		if (fork() == 0)
			_exit(sparse ? run_sparse(argv[1], p, r)
				     : run_rank(argv[1], p, r, fuse ? 4096 : 0));
	for (int r = 0; r < W; r++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed = 1;
	}
	printf("%s%s: %s\n", argv[2],
	       sparse ? " sparse"
	       : fuse ? " fuse"
		      : "",
	       failed ? "FAILED" : "passed");
	return failed;
}
