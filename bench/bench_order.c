/* SPDX-License-Identifier: MIT */
/*
 * bench_order: the transfer order of the asynchronous API (ina.h,
 * cfg.sched) on a backpropagation workload. One process: a switch pipeline
 * on a UDP loopback port in a thread, and W worker threads, each with its
 * own libina context. Each step, every worker "computes" the gradients of L
 * layers of spread sizes in backpropagation order (the last layer first,
 * its compute time proportional to its size, a little slower on higher
 * ranks), submitting each with ina_iallreduce(priority = layer) as it is
 * ready and driving the context (ina_progress) while it computes; then
 * ina_flush() and ina_wait(). Per policy it prints the median over the runs
 * of the time from the start of backprop until layer 0's sum is ready
 * (what the next forward pass needs first) and until every sum is, on rank
 * 0, and both as ratios to fifo. A barrier lines the workers up before each
 * step; the policies take their steps in turn (one job each), so the load of
 * the machine falls on all alike; the first step of each is a warm-up, not
 * counted (it also gives magnitude its first norms).
 *
 * The "fused" rows fuse tensors under --fuse elements (16384) into one round
 * (cfg.fuse_elems).
 *
 * Usage: bench_order [--runs N] [--world W] [--scale F] [--compute-ms MS]
 *                    [--port P] [--fuse ELEMS]
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ina.h"
#include "ina/log.h"
#include "ina/port.h"
#include "ina/util.h"
#include "pipeline.h"
#include "bench_stats.h"

#define MAX_W 8
#define L 12

/* Parameters per layer of a small CNN-like model (front layers small, the
 * classifier large), times --scale. */
static const size_t base_sizes[L] = { 1728, 36864, 73728,  147456, 294912, 589824,
				      8192, 16384, 131072, 32768,  2048,   262144 };

struct conf {
	const char *name;
	enum ina_sched_policy policy;
	uint32_t window;
	int fuse; /* cfg.fuse_elems = --fuse */
};

static const struct conf confs[] = {
	{ "fifo", INA_SCHED_FIFO, 0, 0 },
	{ "priority (flush)", INA_SCHED_PRIORITY, 0, 0 },
	{ "priority (window 4)", INA_SCHED_PRIORITY, 4, 0 },
	{ "magnitude (flush)", INA_SCHED_MAGNITUDE, 0, 0 },
	{ "magnitude (window 4)", INA_SCHED_MAGNITUDE, 4, 0 },
	{ "fifo, fused", INA_SCHED_FIFO, 0, 1 },
	{ "priority (flush), fused", INA_SCHED_PRIORITY, 0, 1 },
};
#define NB_CONFS (sizeof(confs) / sizeof(confs[0]))

static struct {
	int runs, world, port, fuse;
	double scale, compute_ms;
	size_t sizes[L];
	size_t total;
	char addr[32];
	volatile int stop;
} g = { .runs = 5, .world = 4, .port = 9271, .scale = 0.25, .compute_ms = 40, .fuse = 16384 };

struct worker {
	pthread_t th;
	int rank;
	float *in[L], *out[L];
	double first_ms[NB_CONFS][64], all_ms[NB_CONFS][64];
	int ok;
};

static void *
switch_main(void *arg)
{
	struct ina_port *port = arg;
	struct pipeline_config pc;
	struct pipeline *p;
	struct ina_pkt *in[INA_MAX_BURST], *out[INA_MAX_BURST];
	uint64_t last_tick = 0;

	pipeline_config_init(&pc);
	pc.pool = port->pool;
	pc.max_pkt = port->max_pkt;
	p = pipeline_create(&pc);
	if (!p) {
		fprintf(stderr, "bench_order: cannot create the pipeline\n");
		exit(1);
	}
	while (!g.stop) {
		uint16_t nb_rx = ina_port_rx_burst(port, in, INA_MAX_BURST);
		uint64_t now = ina_now_ns();

		if (nb_rx)
			ina_port_tx_burst(port, out, pipeline_rx_burst(p, in, nb_rx, now, out));
		if (now - last_tick >= INA_NS_PER_MS) {
			pipeline_tick(p, now);
			last_tick = now;
		}
		if (!nb_rx)
			ina_port_wait(port, INA_NS_PER_MS);
	}
	pipeline_destroy(p);
	return NULL;
}

/* Drives the context until 'until' (the layer's compute time). */
static void
compute_until(struct ina_ctx *ctx, uint64_t until)
{
	uint64_t now;

	while ((now = ina_now_ns()) < until) {
		uint64_t left_us = (until - now) / 1000;

		ina_progress(ctx, (uint32_t)(left_us < 500 ? left_us : 500));
	}
}

/* One step of backprop on 'ctx' (step 's'): 0 or an error; the times of
 * layer 0's sum and of all sums into 'first' and 'all' (ms). */
static int
step(struct worker *w, struct ina_ctx *ctx, int s, double *first, double *all)
{
	/* Higher ranks compute a little slower: tensors become ready at
	 * different times on different workers. */
	double ns_per_elem = g.compute_ms * 1e6 / (double)g.total * (1.0 + 0.05 * w->rank);
	uint64_t h[L], t0, tf;
	int ret;

	if ((ret = ina_barrier(ctx)) < 0)
		return ret;
	t0 = ina_now_ns();
	for (int k = 0; k < L; k++) {
		int l = L - 1 - k;

		compute_until(ctx, ina_now_ns() + (uint64_t)(ns_per_elem * (double)g.sizes[l]));
		for (size_t i = 0; i < g.sizes[l]; i++)
			w->in[l][i] = (float)((int)((i + (size_t)s) % 5) - 2 + w->rank) *
				      (float)(l + 1);
		ret = ina_iallreduce(ctx, (uint32_t)l, w->in[l], w->out[l], g.sizes[l], INA_SUM, l,
				     &h[l]);
		if (ret < 0)
			return ret;
	}
	if ((ret = ina_flush(ctx)) < 0 || (ret = ina_wait(ctx, h[0])) < 0)
		return ret;
	tf = ina_now_ns();
	for (int l = 1; l < L; l++)
		if ((ret = ina_wait(ctx, h[l])) < 0)
			return ret;
	*first = (double)(tf - t0) / 1e6;
	*all = (double)(ina_now_ns() - t0) / 1e6;
	/* Layer 0's sum: a spot check. */
	{
		float want = 0;

		for (int r = 0; r < g.world; r++)
			want += (float)((int)((size_t)s % 5) - 2 + r);
		if (w->out[0][0] != want)
			return -EIO;
	}
	return 0;
}

/* A worker holds one context (one job) per policy and runs the steps of the
 * policies in turn, so that the machine's load falls on all alike. */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct ina_ctx *ctx[NB_CONFS] = { NULL };
	int ret = 0;
	size_t c;

	for (c = 0; c < NB_CONFS; c++) {
		struct ina_config cfg;
		char err[256];

		ina_config_init(&cfg);
		cfg.switch_addr = g.addr;
		cfg.job_id = 500 + (uint32_t)c;
		cfg.rank = (uint16_t)w->rank;
		cfg.world = (uint16_t)g.world;
		cfg.token = 0x5eed;
		cfg.sched = confs[c].policy;
		cfg.sched_window = confs[c].window;
		cfg.fuse_elems = confs[c].fuse ? (uint32_t)g.fuse : 0;
		cfg.timeout_ms = 30000;
		ret = ina_open(&cfg, &ctx[c], err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "rank %d: open (%s): %s\n", w->rank, confs[c].name, err);
			goto out;
		}
	}
	for (int s = 0; s <= g.runs; s++)
		for (c = 0; c < NB_CONFS; c++) {
			double f, a;

			ret = step(w, ctx[c], s, &f, &a);
			if (ret < 0) {
				fprintf(stderr, "rank %d (%s): %s: %s\n", w->rank, confs[c].name,
					ina_strerror(ret), ina_last_error(ctx[c]));
				goto out;
			}
			if (s > 0) {
				w->first_ms[c][s - 1] = f;
				w->all_ms[c][s - 1] = a;
			}
		}
	w->ok = 1;
out:
	for (c = 0; c < NB_CONFS; c++)
		ina_close(ctx[c]);
	return NULL;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "world", required_argument, NULL, 'w' },
		{ "scale", required_argument, NULL, 's' },
		{ "compute-ms", required_argument, NULL, 'c' },
		{ "port", required_argument, NULL, 'p' },
		{ "fuse", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	static struct worker ws[MAX_W];
	double fifo_first = 0, fifo_all = 0;
	struct ina_port *port;
	pthread_t sw;
	char spec[64], err[256];
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			g.runs = atoi(optarg);
			break;
		case 'w':
			g.world = atoi(optarg);
			break;
		case 's':
			g.scale = atof(optarg);
			break;
		case 'c':
			g.compute_ms = atof(optarg);
			break;
		case 'p':
			g.port = atoi(optarg);
			break;
		case 'f':
			g.fuse = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s [--runs N] [--world W] [--scale F] "
				"[--compute-ms MS] [--port P] [--fuse ELEMS]\n",
				argv[0]);
			return 2;
		}
	}
	if (g.runs < 1 || g.runs > 64 || g.world < 1 || g.world > MAX_W || g.scale <= 0 ||
	    g.compute_ms < 0 || g.fuse < 1 || g.fuse > (1 << 24)) {
		fprintf(stderr, "bench_order: runs 1..64, world 1..%d, scale > 0, fuse 1..2^24\n",
			MAX_W);
		return 2;
	}
	for (int l = 0; l < L; l++) {
		g.sizes[l] = (size_t)((double)base_sizes[l] * g.scale);
		if (g.sizes[l] == 0)
			g.sizes[l] = 1;
		g.total += g.sizes[l];
	}
	ina_log_set_level(INA_LOG_WARN);
	snprintf(g.addr, sizeof(g.addr), "127.0.0.1:%d", g.port);
	snprintf(spec, sizeof(spec), "udp:bind=%s", g.addr);
	if (ina_port_open(spec, &port, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_order: switch port %s: %s\n", spec, err);
		return 1;
	}
	pthread_create(&sw, NULL, switch_main, port);
	for (int r = 0; r < g.world; r++)
		for (int l = 0; l < L; l++) {
			ws[r].in[l] = calloc(g.sizes[l], sizeof(float));
			ws[r].out[l] = calloc(g.sizes[l], sizeof(float));
			if (!ws[r].in[l] || !ws[r].out[l])
				return 1;
		}
	printf("bench_order: %d workers, %d layers of %zu floats in all (%zu to %zu), backprop "
	       "%.0f ms, median of %d steps\n",
	       g.world, L, g.total, g.sizes[0] < g.sizes[10] ? g.sizes[0] : g.sizes[10], g.sizes[5],
	       g.compute_ms, g.runs);
	printf("%-26s %10s %10s %10s %10s\n", "policy", "first_ms", "all_ms", "first/fifo",
	       "all/fifo");
	for (int r = 0; r < g.world; r++) {
		ws[r].rank = r;
		pthread_create(&ws[r].th, NULL, worker_main, &ws[r]);
	}
	for (int r = 0; r < g.world; r++) {
		pthread_join(ws[r].th, NULL);
		if (!ws[r].ok) {
			printf("failed\n");
			g.stop = 1;
			pthread_join(sw, NULL);
			return 1;
		}
	}
	for (size_t c = 0; c < NB_CONFS; c++) {
		/* Rank 0's view: every rank ends a round at nearly the same time. */
		double mf = bench_median(ws[0].first_ms[c], g.runs),
		       ma = bench_median(ws[0].all_ms[c], g.runs);

		if (c == 0) {
			fifo_first = mf;
			fifo_all = ma;
		}
		printf("%-26s %10.1f %10.1f %10.2f %10.2f\n", confs[c].name, mf, ma,
		       fifo_first > 0 ? mf / fifo_first : 0, fifo_all > 0 ? ma / fifo_all : 0);
	}
	g.stop = 1;
	pthread_join(sw, NULL);
	ina_port_close(port);
	for (int r = 0; r < g.world; r++)
		for (int l = 0; l < L; l++) {
			free(ws[r].in[l]);
			free(ws[r].out[l]);
		}
	return 0;
}
