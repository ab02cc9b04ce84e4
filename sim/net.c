/* SPDX-License-Identifier: MIT */
/*
 * The simulation (net.h): builds links, routes and nodes from a topology
 * (job.c admits and builds the jobs), then runs the event loop. Packets hop
 * link by link (a switch on the way forwards at once); a packet that
 * reaches its destination is handed to that node's ops. Job-level steps (every host joined: start the rounds;
 * a job failed: stop its hosts) happen between events, never inside a
 * node's call, so nodes are never re-entered.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/wire.h"
#include "net_int.h"
#include "peer.h"
#include "pipeline.h"
#include "tenants.h"

void
sim_config_init(struct sim_config *cfg)
{
	cfg->seed = 1;
	cfg->queue_bytes = 0;
	cfg->rto_ns = 0;
	cfg->frame_overhead = 42;
	cfg->limit_ns = 600ull * 1000000000ull;
}

static void
push(struct sim_net *net, const struct sim_event *ev)
{
	if (sim_events_push(&net->q, ev) < 0) {
		/* No memory for the event: the packet is lost, as a full
		 * queue would lose it. */
		ina_pkt_free(ev->pkt);
		net->rep.lost_no_route++;
	}
}

/* Puts 'pkt' (from 'src', as its receiver will see it) on the next link
 * from 'at' towards 'dst'. */
static void
hop(struct sim_net *net, int at, int src, int dst, struct ina_pkt *pkt, uint64_t now)
{
	struct sim_event ev;
	uint32_t dir;
	uint64_t arrive;
	int next = sim_route_next(&net->route, at, dst, &dir);
	const struct topo_link *l;

	if (next < 0) {
		net->rep.lost_no_route++;
		ina_pkt_free(pkt);
		return;
	}
	l = &net->t->links[dir / 2];
	if (l->mtu && pkt->len + IP_UDP_BYTES > l->mtu) {
		/* Too big for the link: counted as a tail drop. */
		net->links[dir].st.tail_drops++;
		ina_pkt_free(pkt);
		return;
	}
	arrive = sim_link_send(&net->links[dir], now, pkt->len + net->cfg.frame_overhead);
	if (arrive == UINT64_MAX) {
		ina_pkt_free(pkt);
		return;
	}
	ev = (struct sim_event){ .time = arrive,
				 .pkt = pkt,
				 .at = next,
				 .src = src,
				 .dst = dst,
				 .kind = SIM_EV_ARRIVE };
	push(net, &ev);
}

/* The nodes' environment (node.h): a packet leaves its node on the first
 * hop towards its destination; a wake-up is an event at the node. */
static void
net_send(struct sim_net *net, int src, int dst, struct ina_pkt *pkt, uint64_t now)
{
	if (net->t->nb_attacks)
		sim_attacks_see(net, src, dst, pkt);
	hop(net, src, src, dst, pkt, now);
}

static void
net_send_from(struct sim_net *net, int at, int src, int dst, struct ina_pkt *pkt, uint64_t now)
{
	hop(net, at, src, dst, pkt, now);
}

static void
net_wake(struct sim_net *net, struct sim_node *n, uint64_t t)
{
	struct sim_event ev = { .time = t, .at = n->index, .kind = SIM_EV_WAKE };

	if (n->wake_at == t)
		return;
	n->wake_at = t;
	push(net, &ev);
}


/* A link direction's queue: the configured one, or ina-testbed's tbf
 * limit (testbed/netns.c: 50 ms at the rate plus a burst of 2 ms, at least
 * 4 frames; at least 64 KiB in all). */
static uint64_t
queue_of(const struct sim_config *cfg, const struct topo_link *l)
{
	uint64_t bytes_s = l->bandwidth_bps / 8, burst = bytes_s / 500, limit;
	uint64_t mtu = l->mtu ? l->mtu : 1500;

	if (cfg->queue_bytes)
		return cfg->queue_bytes;
	if (burst < 4 * (mtu + 14))
		burst = 4 * (mtu + 14);
	limit = bytes_s / 20 + burst;
	return limit < 64 * 1024 ? 64 * 1024 : limit;
}

/* One pipeline per switch that aggregates a job, sized for its jobs; a
 * switch below a job's root (a rack, or a spine under a core) is one
 * worker of each of its jobs on its parent (tiers.h), over its uplink. */
static int
switches_build(struct sim_net *net, char *err, size_t errlen)
{
	const struct topology *t = net->t;

	for (uint32_t s = 0; s < t->nb_nodes; s++) {
		struct pipeline_config pc;
		uint16_t max_b = 0;
		uint32_t max_pkt = UINT32_MAX;
		uint16_t nb_jobs = 0;

		if (t->nodes[s].kind != TOPO_SWITCH)
			continue;
		pipeline_config_init(&pc);
		for (uint32_t k = 0; k < t->nb_jobs; k++) {
			const struct topo_job *tj = &t->jobs[k];
			const struct tiers *tr = &net->jobs[k].tiers;

			if (net->rep.jobs[k].state == SIM_JOB_REFUSED || !tr->m ||
			    (net->rep.jobs[k].switch_node != (int)s && tr->m[s].up < 0))
				continue;
			nb_jobs++;
			if (tj->block_size > max_b)
				max_b = tj->block_size;
			/* Every link of this switch the job uses: its members'
			 * and its own uplink. */
			for (uint32_t x = 0; x < t->nb_nodes; x++) {
				const struct topo_link *l;

				if (tr->m[x].up != (int)s && !(x == s && tr->m[x].up >= 0))
					continue;
				l = &t->links[net->route.up_link[x]];
				if (l->mtu && l->mtu - IP_UDP_BYTES < max_pkt)
					max_pkt = l->mtu - IP_UDP_BYTES;
			}
			if (tr->m[s].up >= 0) {
				struct pipeline_uplink_job *uj = &pc.uplink_jobs[pc.nb_uplink_jobs];

				if (pc.nb_uplink_jobs == PIPELINE_UPLINK_JOBS) {
					snprintf(err, errlen,
						 "switch %s: more than %d jobs upstream",
						 t->nodes[s].name, PIPELINE_UPLINK_JOBS);
					return -EINVAL;
				}
				uj->job_id = sim_job_wire_id(tj);
				uj->rank = tr->m[s].rank;
				uj->world = tr->m[s].world;
				pc.nb_uplink_jobs++;
				sim_peer_set(tr->m[s].up, &pc.uplink);
			}
		}
		if (!nb_jobs)
			continue;
		if (t->nodes[s].slots)
			pc.nb_slots = t->nodes[s].slots;
		if (t->nodes[s].share == TOPO_SHARE_FAIR)
			pc.share.policy = SHARE_FAIR;
		pc.share.total = t->nodes[s].share_total;
		if (t->nodes[s].share_min_slots)
			pc.share.min_slots = t->nodes[s].share_min_slots;
		pc.slot_elems = max_b;
		pc.max_pkt = max_pkt == UINT32_MAX ? 0 : max_pkt;
		pc.tenants = net->tenants;
		if (net->tenants || t->nb_attacks) {
			/* As ina-switch runs by default: JOIN cookies, under a
			 * secret drawn from the seed. */
			pc.join_cookie = 1;
			sim_seeded_bytes(net->cfg.seed ^ 0xc00c1e5ull, pc.secret,
					 sizeof(pc.secret));
		}
		pc.pool = net->pool;
		net->nodes[s] = switch_node_create(&net->env, (int)s, &pc);
		if (!net->nodes[s]) {
			snprintf(err, errlen, "switch %s: cannot create its pipeline: %s",
				 t->nodes[s].name, strerror(errno));
			return -EINVAL;
		}
		net->sw_stats[s] = switch_node_stats(net->nodes[s]);
	}
	return 0;
}

struct sim_net *
sim_net_create(const struct topology *t, const struct sim_config *cfg, char *err, size_t errlen)
{
	struct sim_net *net = calloc(1, sizeof(*net));
	uint8_t *taken = NULL;
	uint64_t nb_pkts = 4096;
	uint16_t max_b = 16;

	if (!net) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	net->t = t;
	net->cfg = *cfg;
	sim_events_init(&net->q);
	if (sim_route_init(&net->route, t, err, errlen) < 0) {
		free(net);
		return NULL;
	}
	net->links = calloc(2 * (size_t)t->nb_links + 1, sizeof(*net->links));
	net->win_start = calloc(2 * (size_t)t->nb_links + 1, sizeof(*net->win_start));
	net->nodes = calloc(t->nb_nodes + 1, sizeof(*net->nodes));
	net->switch_role = calloc(t->nb_nodes + 1, 1);
	net->sw_stats = calloc(t->nb_nodes + 1, sizeof(*net->sw_stats));
	net->jobs = calloc(t->nb_jobs + 1, sizeof(*net->jobs));
	net->rep.jobs = calloc(t->nb_jobs + 1, sizeof(*net->rep.jobs));
	net->rep.links = calloc(t->nb_links + 1, sizeof(*net->rep.links));
	net->rep.attacks = calloc(t->nb_attacks + 1, sizeof(*net->rep.attacks));
	taken = calloc(t->nb_nodes + 1, 1);
	if (!net->links || !net->win_start || !net->nodes || !net->switch_role || !net->sw_stats ||
	    !net->jobs || !net->rep.jobs || !net->rep.links || !net->rep.attacks || !taken) {
		snprintf(err, errlen, "out of memory");
		goto err;
	}
	net->rep.nb_jobs = t->nb_jobs;
	net->rep.nb_links = t->nb_links;
	net->rep.nb_attacks = t->nb_attacks;
	net->rep.switches = net->sw_stats;
	if (sim_tenants_build(net, err, errlen) < 0)
		goto err;
	for (uint32_t k = 0; k < t->nb_links; k++) {
		const struct topo_link *l = &t->links[k];

		for (uint32_t d = 0; d < 2; d++)
			sim_link_init(&net->links[2 * k + d], l->bandwidth_bps, l->latency_ns,
				      l->loss, queue_of(cfg, l),
				      cfg->seed * 0x100000001b3ull + 2 * k + d);
	}
	for (uint32_t k = 0; k < t->nb_jobs; k++) {
		const struct topo_job *tj = &t->jobs[k];

		net->rep.jobs[k].job = tj;
		net->rep.jobs[k].tensor_len = tj->tensor_len;
		net->rep.jobs[k].state = SIM_JOB_FAILED;
		job_admit(net, k, taken);
		if (net->rep.jobs[k].state != SIM_JOB_REFUSED) {
			nb_pkts += ((uint64_t)tj->nb_hosts + net->jobs[k].tiers.nb_switches) *
				   tj->lanes * 16;
			if (tj->block_size > max_b)
				max_b = tj->block_size;
		}
	}
	nb_pkts += 256ull * t->nb_attacks; /* what attackers keep and send */
	net->pool = ina_pkt_pool_create((unsigned)(nb_pkts < 1u << 22 ? nb_pkts : 1u << 22),
					INA_HDR_SIZE + 4u * max_b + 256);
	if (!net->pool) {
		snprintf(err, errlen, "out of memory for %llu packet buffers",
			 (unsigned long long)nb_pkts);
		goto err;
	}
	net->env = (struct sim_node_env){ .net = net,
					  .send = net_send,
					  .send_from = net_send_from,
					  .wake = net_wake,
					  .pool = net->pool };
	for (uint32_t k = 0; k < t->nb_jobs; k++) {
		if (net->rep.jobs[k].state != SIM_JOB_REFUSED && job_build(net, k, err, errlen) < 0)
			goto err;
		job_ring(net, k);
	}
	if (switches_build(net, err, errlen) < 0 || sim_attacks_build(net, err, errlen) < 0)
		goto err;
	free(taken);
	return net;
err:
	free(taken);
	sim_net_destroy(net);
	return NULL;
}

void
sim_net_destroy(struct sim_net *net)
{
	struct sim_event ev;

	if (!net)
		return;
	while (sim_events_pop(&net->q, &ev))
		ina_pkt_free(ev.pkt);
	sim_events_fini(&net->q);
	for (uint32_t i = 0; net->nodes && i < net->t->nb_nodes; i++)
		if (net->nodes[i])
			net->nodes[i]->ops->destroy(net->nodes[i]);
	for (uint32_t k = 0; net->jobs && k < net->t->nb_jobs; k++) {
		job_fini(&net->jobs[k]);
	}
	for (uint32_t k = 0; net->rep.jobs && k < net->t->nb_jobs; k++)
		free(net->rep.jobs[k].round_ns);
	ina_pkt_pool_destroy(net->pool);
	sim_route_fini(&net->route);
	free(net->links);
	free(net->win_start);
	free(net->nodes);
	free(net->switch_role);
	free(net->sw_stats);
	free(net->jobs);
	free(net->rep.jobs);
	free(net->rep.links);
	free(net->rep.attacks);
	tenants_free(net->tenants);
	free(net);
}

int
sim_net_run(struct sim_net *net)
{
	struct sim_event ev;
	int ok = 1;

	net->now = 0;
	for (uint32_t k = 0; k < net->t->nb_jobs; k++) {
		struct sim_job *job = &net->jobs[k];

		if (net->rep.jobs[k].state == SIM_JOB_REFUSED || !job->hosts)
			continue;
		for (uint16_t r = 0; r < job->world; r++)
			host_node_join(job->hosts[r], net->now);
	}
	sim_attacks_start(net);
	while (jobs_step(net) && sim_events_pop(&net->q, &ev)) {
		struct sim_node *n;

		if (ev.time > net->cfg.limit_ns) {
			ina_pkt_free(ev.pkt);
			break;
		}
		net->now = ev.time;
		net->rep.events++;
		if (net->t->nb_attacks)
			sim_attacks_step(net);
		if (ev.kind == SIM_EV_WAKE) {
			n = net->nodes[ev.at];
			if (n && n->wake_at == ev.time) {
				n->wake_at = UINT64_MAX;
				n->ops->wake(n, net->now);
			}
			continue;
		}
		if (ev.at != ev.dst) {
			hop(net, ev.at, ev.src, ev.dst, ev.pkt, net->now);
			continue;
		}
		n = net->nodes[ev.at];
		if (!n) {
			net->rep.lost_no_route++;
			ina_pkt_free(ev.pkt);
			continue;
		}
		sim_peer_set(ev.src, &ev.pkt->peer);
		if (net->tap)
			net->tap(net->tap_arg, ev.pkt, ev.src, ev.dst, net->now);
		n->ops->rx(n, ev.pkt, ev.src, net->now);
	}
	sim_window_close(net);
	net->rep.end_ns = net->now;
	jobs_report(net);
	sim_attacks_report(net);
	for (uint32_t k = 0; k < net->t->nb_jobs; k++)
		if (net->rep.jobs[k].state == SIM_JOB_FAILED)
			ok = 0;
	return ok ? 0 : -1;
}

void
sim_net_set_tap(struct sim_net *net, sim_tap_fn *tap, void *arg)
{
	net->tap = tap;
	net->tap_arg = arg;
}

const struct sim_report *
sim_net_report(const struct sim_net *net)
{
	return &net->rep;
}
