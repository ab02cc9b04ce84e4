/* SPDX-License-Identifier: MIT */
/*
 * A simulated switch (node.h): the real aggregation pipeline
 * (switch_sim/pipeline.c) for the jobs this switch aggregates; below a
 * job's root, with its uplink set (its partial sums go to the parent's
 * address, peer.h, like any destination). A result fanned out to a job
 * leaves as one copy per destination, each on its own link, as a port
 * replicates it. The pipeline is not told the time
 * except with each packet, so linger and idle frees happen on the next
 * packet, which is all a run here needs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"
#include "peer.h"
#include "pipeline.h"
#include "pipeline_log.h"

struct switch_node {
	struct sim_node node; /* first: the ops' handle */
	struct pipeline *pipe;
	uint64_t copy_fail; /* fan-out copies with no buffer */
};

static struct switch_node *
sw_of(struct sim_node *n)
{
	return (struct switch_node *)n;
}

static void
send_out(struct switch_node *s, struct ina_pkt *pkt, uint64_t now)
{
	if (!pkt->dsts) {
		sim_node_send(&s->node, sim_peer_node(&pkt->peer), pkt, now);
		return;
	}
	for (unsigned r = 0; r < 64; r++) {
		struct ina_pkt *c;

		if (!(pkt->dst_mask >> r & 1))
			continue;
		c = ina_pkt_copy_for(s->node.env->pool, pkt, r);
		if (!c) {
			s->copy_fail++;
			continue;
		}
		sim_node_send(&s->node, sim_peer_node(&c->peer), c, now);
	}
	ina_pkt_free(pkt);
}

static void
switch_rx(struct sim_node *n, struct ina_pkt *pkt, int src, uint64_t now)
{
	struct switch_node *s = sw_of(n);
	struct ina_pkt *out;

	(void)src;
	pkt->dsts = NULL;
	pkt->dst_mask = 0;
	if (pipeline_rx_burst(s->pipe, &pkt, 1, now, &out) == 1)
		send_out(s, out, now);
}

static void
switch_wake(struct sim_node *n, uint64_t now)
{
	pipeline_tick(sw_of(n)->pipe, now);
}

static void
switch_destroy(struct sim_node *n)
{
	struct switch_node *s = sw_of(n);

	if (!s)
		return;
	pipeline_destroy(s->pipe);
	free(s);
}

static const struct sim_node_ops switch_ops = {
	.kind = "switch",
	.rx = switch_rx,
	.wake = switch_wake,
	.destroy = switch_destroy,
};

struct sim_node *
switch_node_create(const struct sim_node_env *env, int index, const struct pipeline_config *cfg)
{
	struct switch_node *s = calloc(1, sizeof(*s));
	struct pipeline_config c = *cfg;

	c.on_event = pipeline_log_event; /* logged, as ina-switch does */
	if (!s)
		return NULL;
	s->node = (struct sim_node){ .ops = &switch_ops,
				     .env = env,
				     .index = index,
				     .wake_at = UINT64_MAX };
	s->pipe = pipeline_create(&c);
	if (!s->pipe) {
		free(s);
		return NULL;
	}
	return &s->node;
}

const struct pipeline_stats *
switch_node_stats(const struct sim_node *n)
{
	return pipeline_stats(((const struct switch_node *)n)->pipe);
}
