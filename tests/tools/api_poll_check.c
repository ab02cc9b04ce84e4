/* SPDX-License-Identifier: MIT */
/*
 * ina_poll() as a binding runs it, over a udp port and a real ina-switch:
 * forks W ranks; each opens its context through ina_config_new() and
 * ina_config_set() (the binding's way), starts a progress thread that does
 * nothing but ina_poll(), and submits N allreduces from the main thread
 * (retrying on -EBUSY while the poller frees slots), with a blocking
 * ina_allreduce() and ina_barrier() among them. Checks: every handle
 * reported exactly once and no other (the blocking calls' own operations
 * are not reported), in end order (fifo: submission order), every sum
 * exact, a reported handle spent for ina_test(); the counters by name
 * (ina_stat) agree with ina_get_stats().
 * With "kill SWITCH_PID": after a first part that ends well and a barrier
 * every rank has passed, rank 0 kills the switch; every operation pending then ends through ina_poll() with the
 * context's error, after which ina_poll() returns that error, and
 * submissions return it too; nothing hangs; the library's warnings about the
 * stall went to the callback of ina_set_logger(), not to stderr.
 * Usage: api_poll_check ADDR:PORT [kill SWITCH_PID]   (exit 0: all passed)
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ina.h"
#include "rank_check.h"

#define W 3
#define N 400	  /* allreduces of the first part */
#define N_KILL 60 /* ... submitted after the switch is killed */
#define TENSORS 50
#define MAXN 2000
#define MAX_PENDING 32
#define MAX_HANDLE 4096

static int rank;
/* Ranks past the barrier before the kill, shared by the forked ranks: rank 0
 * kills the switch only once every rank holds its barrier's result (with 1%
 * loss a rank may still wait for a resent one when rank 0 has its own). */
static atomic_int *past_barrier;


static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
pause_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static size_t
tensor_n(uint32_t t)
{
	return (size_t)(t * 397u) % MAXN + 1;
}

/* Rank r's element j of operation i: small integers, exact sums. */
static float
value(int r, int i, size_t j)
{
	return (float)((int)(j % 5) + r + i % 3);
}

static float in[N + N_KILL][MAXN], out[N + N_KILL][MAXN];

/* ina_set_logger()'s callback: counts the library's warnings. */
static atomic_int warnings;

static void
logger(int level, const char *line, void *arg)
{
	(void)arg;
	if (level == INA_LEVEL_WARN && strstr(line, "no progress"))
		atomic_fetch_add(&warnings, 1);
}

/* The poller thread's record, indexed by handle. */
struct poller {
	struct ina_ctx *ctx;
	atomic_int submitted; /* operations given a handle so far */
	atomic_int finished;  /* the main thread submits no more */
	atomic_int reported;
	int until_error;       /* poll on until ina_poll() returns an error */
	int times[MAX_HANDLE]; /* reports of each handle */
	int status[MAX_HANDLE];
	uint64_t last; /* the last handle reported */
	int out_of_order;
	int final; /* what ina_poll returned last */
	int polls;
};

static void *
poller_main(void *arg)
{
	struct poller *p = arg;
	double deadline = now_s() + 60;

	while (now_s() < deadline) {
		struct ina_completion done[16];
		int n = ina_poll(p->ctx, done, 16, 2000);

		p->polls++;
		p->final = n;
		for (int k = 0; k < n; k++) {
			uint64_t h = done[k].handle;

			if (h < MAX_HANDLE) {
				p->times[h]++;
				p->status[h] = done[k].status;
			} else {
				p->times[0]++; /* a handle never given */
			}
			if (h <= p->last)
				p->out_of_order++;
			p->last = h;
			atomic_fetch_add(&p->reported, 1);
		}
		if (atomic_load(&p->finished) &&
		    (n < 0 || (!p->until_error && p->reported == atomic_load(&p->submitted))))
			break;
	}
	return NULL;
}

/* Submits allreduce i, retrying while max_pending operations are not
 * reported yet: 0 and '*h', or the error. */
static int
submit(struct ina_ctx *ctx, int i, uint64_t *h)
{
	uint32_t t = (uint32_t)(i % TENSORS);
	size_t n = tensor_n(t);
	double deadline = now_s() + 30;
	int ret;

	for (size_t j = 0; j < n; j++)
		in[i][j] = value(rank, i, j);
	do {
		ret = ina_iallreduce(ctx, t, in[i], out[i], n, INA_SUM, 0, h);
		if (ret == -EBUSY)
			pause_us(200);
	} while (ret == -EBUSY && now_s() < deadline);
	return ret;
}

static int
check_sum(int i)
{
	size_t n = tensor_n((uint32_t)(i % TENSORS));

	for (size_t j = 0; j < n; j++) {
		float want = 0;

		for (int r = 0; r < W; r++)
			want += value(r, i, j);
		CHECK(out[i][j] == want, "operation %d element %zu: %g, want %g", i, j,
		      (double)out[i][j], (double)want);
	}
	return 0;
}

static int
set(struct ina_config *c, const char *key, const char *value)
{
	char err[256];
	int ret = ina_config_set(c, key, value, err, sizeof(err));

	CHECK(ret == 0, "config %s: %s", key, err);
	return 0;
}

/* The counters by name against the struct. */
static int
check_stats(struct ina_ctx *ctx)
{
	struct ina_stats s;
	double v;
	unsigned i;

	for (i = 0; ina_stat_name(i); i++)
		CHECK(ina_stat(ctx, ina_stat_name(i), &v) == 0, "stat %s", ina_stat_name(i));
	CHECK(i > 30, "only %u counters by name", i);
	ina_get_stats(ctx, &s);
	CHECK(ina_stat(ctx, "rounds", &v) == 0 && v >= (double)s.rounds && v >= N,
	      "rounds %g by name, %llu in the struct", v, (unsigned long long)s.rounds);
	CHECK(ina_stat(ctx, "lanes", &v) == 0 && v == s.lanes, "lanes %g", v);
	CHECK(ina_stat(ctx, "block_size", &v) == 0 && v == 256, "block_size %g", v);
	CHECK(ina_stat(ctx, "max_block", &v) == 0 && v == 256 && s.max_block == 256,
	      "max_block %g, %u in the struct", v, s.max_block);
	CHECK(ina_stat(ctx, "bytes_sent", &v) == 0 && v > 0 && v <= (double)s.bytes_sent + 1e9,
	      "bytes_sent %g", v);
	CHECK(ina_stat(ctx, "aggregator", &v) == -EINVAL, "aggregator is no number");
	CHECK(ina_stat(ctx, "no_such_counter", &v) == -EINVAL, "a counter that is none");
	CHECK(strcmp(ina_stats_aggregator(ctx), "") == 0, "aggregator '%s'",
	      ina_stats_aggregator(ctx));
	return 0;
}

static int
run_rank(const char *addr, pid_t kill_pid)
{
	static struct poller p;
	static float x[64], y[64];
	struct ina_config *cfg = ina_config_new();
	struct ina_ctx *ctx;
	uint64_t h[N + N_KILL];
	int given[N + N_KILL] = { 0 };
	char err[256], num[32];
	const char *secret = getenv("INA_JOB_TOKEN");
	pthread_t th;
	int ret, first = kill_pid ? N / 8 : N, last = first;

	CHECK(cfg && secret, "config (and INA_JOB_TOKEN)");
	if (kill_pid)
		ina_set_logger(logger, NULL, INA_LEVEL_WARN);
	snprintf(num, sizeof(num), "%d", rank);
	if (set(cfg, "switch_addr", addr) || set(cfg, "job_id", kill_pid ? "0x51" : "0x50") ||
	    set(cfg, "rank", num) || set(cfg, "world", "3") || set(cfg, "block_size", "256") ||
	    set(cfg, "lanes", "16") || set(cfg, "sched", "fifo") || set(cfg, "max_pending", "32") ||
	    set(cfg, "timeout_ms", kill_pid ? "1500" : "20000"))
		return 1;
	if (ina_token_from(NULL, &cfg->token, err, sizeof(err)) < 0)
		CHECK(0, "token: %s", err);
	ret = ina_open(cfg, &ctx, err, sizeof(err));
	ina_config_free(cfg);
	CHECK(ret == 0, "open: %s", err);
	p.ctx = ctx;
	p.until_error = kill_pid != 0;
	CHECK(pthread_create(&th, NULL, poller_main, &p) == 0, "thread");
	for (int i = 0; i < first; i++) {
		ret = submit(ctx, i, &h[i]);
		CHECK(ret == 0 && h[i] < MAX_HANDLE, "submit %d: %s (%s)", i, ina_strerror(ret),
		      ina_last_error(ctx));
		given[i] = 1;
		atomic_fetch_add(&p.submitted, 1);
		if (i == first / 2) {
			/* Blocking calls among them: their operations are
			 * theirs, never the poller's. */
			for (int j = 0; j < 64; j++)
				x[j] = (float)(j + rank);
			while ((ret = ina_allreduce(ctx, 999, x, y, 64, INA_SUM)) == -EBUSY)
				pause_us(200); /* max_pending: the poller frees slots */
			CHECK(ret == 0, "allreduce: %s", ina_strerror(ret));
			for (int j = 0; j < 64; j++)
				CHECK(y[j] == (float)(3 * j + 3), "allreduce %d: %g", j,
				      (double)y[j]);
			while ((ret = ina_barrier(ctx)) == -EBUSY)
				pause_us(200);
			CHECK(ret == 0, "barrier: %s", ina_strerror(ret));
		}
	}
	if (kill_pid) {
		/* Every rank past the first part, then the switch dies. */
		double deadline = now_s() + 30;

		while (atomic_load(&p.reported) < first && now_s() < deadline)
			pause_us(1000);
		CHECK(atomic_load(&p.reported) == first, "first part: %d of %d reported",
		      atomic_load(&p.reported), first);
		ret = ina_barrier(ctx);
		CHECK(ret == 0, "barrier: %s", ina_strerror(ret));
		atomic_fetch_add(past_barrier, 1);
		if (rank == 0) {
			while (atomic_load(past_barrier) < W && now_s() < deadline)
				pause_us(1000);
			CHECK(atomic_load(past_barrier) == W, "%d of %d ranks past the barrier",
			      atomic_load(past_barrier), W);
			CHECK(kill(kill_pid, SIGKILL) == 0, "kill the switch");
		}
		for (last = first; last < first + N_KILL; last++) {
			ret = submit(ctx, last, &h[last]);
			if (ret < 0)
				break;
			given[last] = 1;
			atomic_fetch_add(&p.submitted, 1);
		}
		CHECK(last > first, "no submission after the kill");
		CHECK(last == first + N_KILL || (ret < 0 && ret != -EBUSY),
		      "a submission after the error: %s, not the context's error",
		      ina_strerror(ret));
	}
	atomic_store(&p.finished, 1);
	pthread_join(th, NULL);
	CHECK(p.times[0] == 0, "%d handles reported that were never given", p.times[0]);
	CHECK(p.out_of_order == 0, "%d reports out of end order", p.out_of_order);
	CHECK(atomic_load(&p.reported) == last, "%d reported of %d submitted",
	      atomic_load(&p.reported), last);
	for (int i = 0; i < last; i++) {
		CHECK(given[i] && p.times[h[i]] == 1,
		      "operation %d (handle %llu) reported %d "
		      "times",
		      i, (unsigned long long)h[i], p.times[h[i]]);
		if (i < first) {
			CHECK(p.status[h[i]] == 0, "operation %d: %s", i,
			      ina_strerror(p.status[h[i]]));
			if (check_sum(i))
				return 1;
		} else {
			CHECK(p.status[h[i]] < 0, "operation %d after the kill ended well", i);
			CHECK(p.status[h[i]] == p.final, "operation %d: %s, the context %s", i,
			      ina_strerror(p.status[h[i]]), ina_strerror(p.final));
		}
		CHECK(ina_test(ctx, h[i]) == -EINVAL, "operation %d not spent", i);
	}
	if (kill_pid) {
		struct ina_completion c[4];

		CHECK(p.final < 0, "ina_poll returned %d after the error", p.final);
		CHECK(ina_poll(ctx, c, 4, 1000) == p.final, "ina_poll again: not the error");
		CHECK(ina_iallreduce(ctx, 1, x, y, 4, INA_SUM, 0, &h[0]) == p.final,
		      "a submission after the error");
		CHECK(atomic_load(&warnings) > 0, "no stall warning reached the logger");
		printf("rank %d: %d operations ended well, %d with %s (%s), %d polls, %d stall "
		       "warnings to the logger\n",
		       rank, first, last - first, ina_strerror(p.final), ina_last_error(ctx),
		       p.polls, atomic_load(&warnings));
		ina_close(ctx);
		return 0;
	}
	if (check_stats(ctx))
		return 1;
	printf("rank %d: %d operations reported once each, in end order, %d polls\n", rank,
	       atomic_load(&p.reported), p.polls);
	ret = ina_close(ctx);
	CHECK(ret == 0, "close: %s", ina_strerror(ret));
	return 0;
}

int
main(int argc, char **argv)
{
	pid_t kill_pid = 0;
	int failed = 0;

	if (argc == 4 && strcmp(argv[2], "kill") == 0)
		kill_pid = (pid_t)atoi(argv[3]);
	if (argc != 2 && kill_pid <= 0) {
		fprintf(stderr, "usage: %s ADDR:PORT [kill SWITCH_PID]\n", argv[0]);
		return 2;
	}
	past_barrier = mmap(NULL, sizeof(*past_barrier), PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (past_barrier == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	atomic_init(past_barrier, 0);
	for (int r = 0; r < W; r++) {
		if (fork() == 0) {
			int ret;

			rank = r;
			ret = run_rank(argv[1], kill_pid);
			fflush(stdout);
			_exit(ret);
		}
	}
	for (int r = 0; r < W; r++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed = 1;
	}
	printf("ina_poll%s: %s\n", kill_pid ? " with the switch killed" : "",
	       failed ? "FAILED" : "passed");
	return failed;
}
