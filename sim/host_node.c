/* SPDX-License-Identifier: MIT */
/*
 * A simulated host (node.h): the real host engine (host/src/engine.c) fed
 * with the packets its link delivers and woken at its own deadlines, and the
 * job's workload (host/src/workload.c, the generator ina-host uses). A
 * round's input is generated when the round starts, so a host holds one
 * tensor in and one out, never the job's whole history; every result is
 * checked (the job's check, host_job_ops) before the next round starts, and a wrong sum
 * fails the job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "node.h"
#include "peer.h"
#include "workload.h"

#define HOST_TX_BURST 32

struct host_node {
	struct sim_node node; /* first: the ops' handle */
	struct host_node_config cfg;
	struct engine *engine;
	float *in, *out; /* one round's tensor, allocated at round 0 */
	uint32_t round;	 /* the round running (or next to run) */
	int running;	 /* an allreduce of 'round' is in flight */
	int last_phase;
	int stopped;
};

static struct host_node *
host_of(struct sim_node *n)
{
	return (struct host_node *)n;
}

static void host_pump(struct host_node *h, uint64_t now);

static int
start_round(struct host_node *h, uint64_t now)
{
	char msg[200];
	int ret;

	if (!h->in) {
		h->in = malloc((size_t)h->cfg.tensor_len * sizeof(float));
		h->out = malloc((size_t)h->cfg.tensor_len * sizeof(float));
		if (!h->in || !h->out) {
			h->cfg.job_ops->fail(h->cfg.job, now, "out of memory for a host's tensor");
			return -ENOMEM;
		}
	}
	ret = workload_fill(h->cfg.workload, h->round, h->cfg.rank, h->in);
	if (ret < 0) {
		snprintf(msg, sizeof(msg), "rank %u round %u: no data: %s", h->cfg.rank, h->round,
			 strerror(-ret));
		h->cfg.job_ops->fail(h->cfg.job, now, msg);
		return ret;
	}
	if (h->cfg.job_ops->contribute(h->cfg.job, h->cfg.rank, h->round, h->in, msg, sizeof(msg)) <
	    0) {
		h->cfg.job_ops->fail(h->cfg.job, now, msg);
		return -EINVAL;
	}
	ret = engine_allreduce(h->engine, 0, h->in, h->out, h->cfg.tensor_len, h->cfg.block_size,
			       ENGINE_SUM, now);
	if (ret < 0) {
		snprintf(msg, sizeof(msg), "rank %u round %u: engine_allreduce: %s", h->cfg.rank,
			 h->round, strerror(-ret));
		h->cfg.job_ops->fail(h->cfg.job, now, msg);
		return ret;
	}
	h->running = 1;
	return 0;
}

/* The last round ended: FIN, as ina-host closes after its rounds; the
 * tensors are not needed any more (the engine is done with them). */
static void
host_done(struct host_node *h, uint64_t now)
{
	engine_finish(h->engine, now);
	free(h->in);
	free(h->out);
	h->in = h->out = NULL;
}

/* The allreduce of 'round' ended: check it, report it, start the next. */
static void
round_ended(struct host_node *h, uint64_t now)
{
	char msg[320];

	h->running = 0;
	if (h->cfg.job_ops->check(h->cfg.job, h->cfg.rank, h->round, h->out, msg, sizeof(msg)) <
	    0) {
		h->cfg.job_ops->fail(h->cfg.job, now, msg);
		return;
	}
	h->cfg.job_ops->round_done(h->cfg.job, h->cfg.rank, h->round, now);
	h->round++;
	if (h->round < h->cfg.rounds)
		start_round(h, now);
	else
		host_done(h, now);
}

static void
host_pump(struct host_node *h, uint64_t now)
{
	struct ina_pkt *out[HOST_TX_BURST];
	uint16_t nb;
	uint64_t d;
	int phase;

	for (int pass = 0; pass < 4 && !h->stopped; pass++) {
		do {
			nb = engine_tx(h->engine, now, out, HOST_TX_BURST);
			for (uint16_t i = 0; i < nb; i++)
				sim_node_send(&h->node, h->cfg.switch_index, out[i], now);
		} while (nb == HOST_TX_BURST);
		if (engine_error(h->engine)) {
			char msg[320];

			snprintf(msg, sizeof(msg), "rank %u: %s", h->cfg.rank,
				 engine_error_msg(h->engine));
			h->cfg.job_ops->fail(h->cfg.job, now, msg);
			return;
		}
		phase = engine_phase(h->engine);
		if (phase != h->last_phase) {
			h->last_phase = phase;
			h->cfg.job_ops->phase(h->cfg.job, h->cfg.rank, phase, now);
		}
		if (h->stopped)
			return;
		if (!(h->running && phase == ENGINE_READY))
			break;
		/* The op ended: the next one's first packets go out in the
		 * next pass. */
		round_ended(h, now);
	}
	if (h->stopped)
		return;
	d = engine_next_deadline(h->engine);
	if (d != UINT64_MAX)
		sim_node_wake(&h->node, d > now ? d : now + 1);
}

static void
host_rx(struct sim_node *n, struct ina_pkt *pkt, int src, uint64_t now)
{
	struct host_node *h = host_of(n);

	(void)src;
	if (h->stopped) {
		ina_pkt_free(pkt);
		return;
	}
	engine_rx(h->engine, &pkt, 1, now);
	host_pump(h, now);
}

static void
host_wake(struct sim_node *n, uint64_t now)
{
	struct host_node *h = host_of(n);

	if (!h->stopped)
		host_pump(h, now);
}

static void
host_destroy(struct sim_node *n)
{
	struct host_node *h = host_of(n);

	if (!h)
		return;
	engine_destroy(h->engine);
	free(h->in);
	free(h->out);
	free(h);
}

static const struct sim_node_ops host_ops = {
	.kind = "host",
	.rx = host_rx,
	.wake = host_wake,
	.destroy = host_destroy,
};

struct sim_node *
host_node_create(const struct sim_node_env *env, const struct host_node_config *cfg)
{
	struct host_node *h = calloc(1, sizeof(*h));
	struct engine_config ec;

	if (!h)
		return NULL;
	h->node = (struct sim_node){ .ops = &host_ops,
				     .env = env,
				     .index = cfg->index,
				     .wake_at = UINT64_MAX };
	h->cfg = *cfg;
	engine_config_init(&ec);
	ec.job_id = cfg->job_id;
	ec.rank = cfg->switch_rank;
	ec.world = cfg->switch_world;
	ec.lanes = cfg->lanes;
	ec.weight = cfg->weight;
	ec.max_block = cfg->block_size;
	ec.encoding = cfg->encoding;
	ec.token = cfg->auth ? 0 : 0x5eed0000ull + cfg->job_id;
	ec.auth = cfg->auth;
	ec.key = cfg->key;
	ec.pool = env->pool;
	if (cfg->rto_ns) {
		/* As ina.c applies ina-host's --rto-us. */
		ec.rto_ns = cfg->rto_ns;
		if (ec.rto_min_ns > ec.rto_ns)
			ec.rto_min_ns = ec.rto_ns;
		if (ec.rto_max_ns < ec.rto_ns)
			ec.rto_max_ns = ec.rto_ns;
	}
	sim_peer_set(cfg->switch_index, &ec.sw);
	h->engine = engine_create(&ec);
	if (!h->engine) {
		free(h);
		return NULL;
	}
	h->last_phase = engine_phase(h->engine);
	return &h->node;
}

const struct engine_stats *
host_node_stats(const struct sim_node *n)
{
	return engine_stats(((const struct host_node *)n)->engine);
}

void
host_node_join(struct sim_node *n, uint64_t now)
{
	struct host_node *h = host_of(n);

	engine_join(h->engine, now);
	host_pump(h, now);
}

void
host_node_start(struct sim_node *n, uint64_t now)
{
	struct host_node *h = host_of(n);

	h->round = 0;
	if (h->cfg.rounds && start_round(h, now) == 0)
		host_pump(h, now);
}

void
host_node_stop(struct sim_node *n)
{
	host_of(n)->stopped = 1;
}
