/* SPDX-License-Identifier: MIT */
/*
 * The simulation (net.h): builds links, routes, nodes and jobs from a
 * topology, then runs the event loop. Packets hop link by link (a switch on
 * the way forwards at once); a packet that reaches its destination is handed
 * to that node's ops. Job-level steps (every host joined: start the rounds;
 * a job failed: stop its hosts) happen between events, never inside a
 * node's call, so nodes are never re-entered.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "events.h"
#include "ina/wire.h"
#include "net.h"
#include "node.h"
#include "pipeline.h"
#include "route.h"
#include "workload.h"

#define IP_UDP_BYTES 28
#define PEER_TAG 'S'

enum job_phase { JP_JOINING, JP_RUNNING, JP_CLOSING, JP_END };

struct sim_job {
	struct sim_net *net;
	struct sim_job_report *rep;
	const struct topo_job *tj;
	struct workload *workload;
	struct sim_node **hosts;	/* by rank (also in net->nodes) */
	uint16_t world;
	enum job_phase phase;
	uint16_t joined, finished, closed;
	uint8_t *rank_joined, *rank_closed;
	uint32_t *rank_rounds;		/* rounds each rank finished */
	uint64_t *round_end;		/* latest end of each round */
	/* The first checked result of the two rounds that can be open at
	 * once (a rank cannot end round r + 2 before all ended round r). */
	float *ref[2];
	int64_t ref_round[2];
	int failed;			/* rep->error says why */
	int start_due;			/* every rank joined: start the rounds */
	int stop_due;			/* failed: stop the hosts */
};

struct sim_net {
	const struct topology *t;
	struct sim_config cfg;
	struct sim_route route;
	struct sim_link *links;		/* 2 per topology link (route.h) */
	struct sim_link_stats *win_start;
	struct sim_node **nodes;	/* by node index; NULL: forwards only */
	struct sim_job *jobs;
	struct ina_pkt_pool *pool;
	struct sim_events q;
	uint64_t now;
	int window_open, window_closed;
	struct sim_report rep;
	const struct pipeline_stats **sw_stats;
	sim_tap_fn *tap;
	void *tap_arg;
};

void
sim_config_init(struct sim_config *cfg)
{
	cfg->seed = 1;
	cfg->queue_bytes = 0;
	cfg->rto_ns = 0;
	cfg->frame_overhead = 42;
	cfg->limit_ns = 600ull * 1000000000ull;
}

void
sim_net_peer(int index, struct ina_peer *peer)
{
	uint32_t v = (uint32_t)index;

	memset(peer, 0, sizeof(*peer));
	peer->len = 5;
	peer->bytes[0] = PEER_TAG;
	memcpy(&peer->bytes[1], &v, sizeof(v));
}

int
sim_net_peer_node(const struct ina_peer *peer)
{
	uint32_t v;

	if (peer->len != 5 || peer->bytes[0] != PEER_TAG)
		return -1;
	memcpy(&v, &peer->bytes[1], sizeof(v));
	return v > INT32_MAX ? -1 : (int)v;
}

struct ina_pkt_pool *
sim_net_pool(struct sim_net *net)
{
	return net->pool;
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

/* Puts 'pkt' on the next link from 'at' towards 'dst'. */
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
	ev = (struct sim_event){ .time = arrive, .pkt = pkt, .at = next, .src = src, .dst = dst,
				 .kind = SIM_EV_ARRIVE };
	push(net, &ev);
}

void
sim_net_send(struct sim_net *net, int src, int dst, struct ina_pkt *pkt, uint64_t now)
{
	hop(net, src, src, dst, pkt, now);
}

void
sim_net_wake(struct sim_net *net, struct sim_node *n, uint64_t t)
{
	struct sim_event ev = { .time = t, .at = n->index, .kind = SIM_EV_WAKE };

	if (n->wake_at == t)
		return;
	n->wake_at = t;
	push(net, &ev);
}

static void window_close(struct sim_net *net);
static int rounds_left(const struct sim_net *net);

/* Job callbacks (node.h): they record, the loop acts. */

static void
job_fail(struct sim_job *job, const char *msg)
{
	if (job->failed)
		return;
	job->failed = 1;
	snprintf(job->rep->error, sizeof(job->rep->error), "%s", msg);
	job->stop_due = 1;
}

void
sim_job_fail(struct sim_job *job, uint64_t now, const char *msg)
{
	(void)now;
	job_fail(job, msg);
}

int
sim_job_check(struct sim_job *job, uint16_t rank, uint32_t round, const float *out, char *msg,
	      size_t msglen)
{
	const struct topo_job *tj = job->tj;
	size_t n = job->rep->tensor_len, bytes = n * sizeof(float);
	unsigned slot = round & 1;
	struct verify_result res;
	int ret;

	if (job->ref_round[slot] == (int64_t)round) {
		if (memcmp(out, job->ref[slot], bytes) == 0)
			return 0;
		for (size_t i = 0; i < n; i++) {
			if (memcmp(&out[i], &job->ref[slot][i], sizeof(float)) == 0)
				continue;
			snprintf(msg, msglen,
				 "rank %u round %u: wrong sum: element %zu is %g where the checked "
				 "result of another rank has %g",
				 rank, round, i, (double)out[i], (double)job->ref[slot][i]);
			break;
		}
		return -1;
	}
	ret = workload_verify(job->workload, round, out, 0, tj->encoding, tj->block_size, &res);
	if (ret < 0) {
		snprintf(msg, msglen, "rank %u round %u: cannot check the sum: %s", rank, round,
			 strerror(-ret));
		return -1;
	}
	if (!res.ok) {
		snprintf(msg, msglen,
			 "rank %u round %u: wrong sum: %llu elements, first at %llu (got %g, want "
			 "%g)",
			 rank, round, (unsigned long long)res.mismatches,
			 (unsigned long long)res.first_bad, (double)res.got, (double)res.want);
		return -1;
	}
	if (!job->ref[slot] && !(job->ref[slot] = malloc(bytes))) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	memcpy(job->ref[slot], out, bytes);
	job->ref_round[slot] = round;
	return 0;
}

void
sim_job_round_done(struct sim_job *job, uint16_t rank, uint32_t round, uint64_t now)
{
	if (round >= job->tj->rounds || job->rank_rounds[rank] != round)
		return;
	job->rank_rounds[rank] = round + 1;
	job->rep->sums_checked++;
	if (now > job->round_end[round])
		job->round_end[round] = now;
	if (round + 1 == job->tj->rounds && ++job->finished == job->world) {
		job->rep->end_ns = now;
		job->phase = job->closed == job->world ? JP_END : JP_CLOSING;
		/* Before this host's FIN goes out: the window holds the rounds. */
		if (!rounds_left(job->net))
			window_close(job->net);
	}
}

void
sim_job_phase(struct sim_job *job, uint16_t rank, int phase, uint64_t now)
{
	(void)now;
	if (phase == ENGINE_READY && !job->rank_joined[rank]) {
		job->rank_joined[rank] = 1;
		if (++job->joined == job->world)
			job->start_due = 1;
	} else if (phase == ENGINE_CLOSED && !job->rank_closed[rank]) {
		job->rank_closed[rank] = 1;
		if (++job->closed == job->world && job->phase == JP_CLOSING)
			job->phase = JP_END;
	}
}

/* Building. */

static void job_refuse(struct sim_job_report *rep, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
job_refuse(struct sim_job_report *rep, const char *fmt, ...)
{
	va_list ap;

	rep->state = SIM_JOB_REFUSED;
	va_start(ap, fmt);
	vsnprintf(rep->why, sizeof(rep->why), fmt, ap);
	va_end(ap);
}

static uint32_t
elem_size(uint8_t encoding)
{
	return encoding == INA_ENC_BF16 ? 2 : 4;
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

/* A host's first retransmission timeout: the configured one, or what
 * ina-testbed gives ina-host (testbed/run.c): 4x the injected round-trip
 * delay plus 3x a lane's worth of frames at the link's rate, 5 ms to 10 s. */
static uint64_t
rto_of(const struct sim_config *cfg, const struct topo_link *l, const struct topo_job *tj)
{
	uint64_t delay_us = 2 * l->latency_ns / 1000, frame, queue_us = 0, us;

	if (cfg->rto_ns)
		return cfg->rto_ns;
	frame = 14 + 28 + INA_HDR_SIZE + (uint64_t)tj->block_size * elem_size(tj->encoding);
	if (l->bandwidth_bps)
		queue_us = (uint64_t)tj->lanes * frame * 8 * 1000000 / l->bandwidth_bps;
	us = 4 * delay_us + 3 * queue_us;
	us = us < 5000 ? 5000 : us > 10000000 ? 10000000 : us;
	return us * 1000;
}

/* Decides whether job 'k' can run here; fills its switch. */
static void
job_check(struct sim_net *net, uint32_t k, uint8_t *host_taken)
{
	const struct topology *t = net->t;
	const struct topo_job *tj = &t->jobs[k];
	struct sim_job_report *rep = &net->rep.jobs[k];
	int sw = -1;

	rep->switch_node = -1;
	if (tj->nb_hosts == 0) {
		job_refuse(rep, "job %s has no hosts", tj->name);
		return;
	}
	for (uint16_t r = 0; r < tj->nb_hosts; r++) {
		int h = tj->hosts[r];

		if (h < 0 || (uint32_t)h >= t->nb_nodes || t->nodes[h].kind != TOPO_HOST ||
		    net->route.up_link[h] < 0) {
			job_refuse(rep, "job %s: rank %u is not a host on a switch", tj->name, r);
			return;
		}
		if (sw < 0)
			sw = t->nodes[h].attach;
		if (t->nodes[h].attach != sw) {
			uint32_t nb_sw = 0;

			/* How many switches its hosts hang off, for the message. */
			for (uint32_t x = 0; x < t->nb_nodes; x++) {
				if (t->nodes[x].kind != TOPO_SWITCH)
					continue;
				for (uint16_t q = 0; q < tj->nb_hosts; q++) {
					if (t->nodes[tj->hosts[q]].attach == (int)x) {
						nb_sw++;
						break;
					}
				}
			}
			job_refuse(rep,
				   "job %s spans %u switches (%s, %s%s): aggregating it needs "
				   "hierarchical aggregation, a rack switch presenting itself "
				   "upstream as one worker (DESIGN.md), which the pipeline does not "
				   "have yet; its %u workers are not simulated",
				   tj->name, nb_sw, t->nodes[sw].name, t->nodes[t->nodes[h].attach].name,
				   nb_sw > 2 ? ", ..." : "", tj->nb_hosts);
			return;
		}
	}
	if (tj->nb_hosts > INA_MAX_WORLD) {
		job_refuse(rep, "job %s: %u workers on one switch exceed the %u its bitmaps hold",
			   tj->name, tj->nb_hosts, INA_MAX_WORLD);
		return;
	}
	for (uint16_t r = 0; r < tj->nb_hosts; r++) {
		int h = tj->hosts[r];
		const struct topo_link *l = &t->links[net->route.up_link[h]];

		if (host_taken[h]) {
			job_refuse(rep, "job %s: host %s is in another job too (one engine per "
					"host here)", tj->name, t->nodes[h].name);
			return;
		}
		if (l->mtu && INA_HDR_SIZE + (uint64_t)elem_size(tj->encoding) * tj->block_size +
				      IP_UDP_BYTES > l->mtu) {
			job_refuse(rep, "job %s: a block of %u does not fit the MTU of %s's link "
					"(%u)", tj->name, tj->block_size, t->nodes[h].name, l->mtu);
			return;
		}
	}
	if (!tj->block_size || !tj->lanes || !tj->rounds || tj->encoding < INA_ENC_F32 ||
	    tj->encoding > INA_ENC_MAX) {
		job_refuse(rep, "job %s: block size, lanes, rounds and encoding must be set",
			   tj->name);
		return;
	}
	for (uint16_t r = 0; r < tj->nb_hosts; r++)
		host_taken[tj->hosts[r]] = 1;
	rep->switch_node = sw;
}

static void
ring_for(struct sim_net *net, uint32_t k)
{
	struct sim_job_report *rep = &net->rep.jobs[k];
	const struct topo_job *tj = &net->t->jobs[k];
	struct topo_job copy = *tj;
	struct timespec a, b;

	/* A .npy job's tensor length is the file's (known once loaded). */
	copy.tensor_len = rep->tensor_len;
	clock_gettime(CLOCK_MONOTONIC, &a);
	rep->ring_ok = ring_model(net->t, &net->route, &copy, elem_size(tj->encoding),
				  net->cfg.frame_overhead, &rep->ring, rep->ring_error,
				  sizeof(rep->ring_error)) == 0;
	clock_gettime(CLOCK_MONOTONIC, &b);
	rep->ring_wall_ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull +
			    (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec;
}

static int
job_build(struct sim_net *net, uint32_t k, char *err, size_t errlen)
{
	const struct topo_job *tj = &net->t->jobs[k];
	struct sim_job *job = &net->jobs[k];
	struct sim_job_report *rep = &net->rep.jobs[k];
	char werr[256] = "";

	job->net = net;
	job->rep = rep;
	job->tj = tj;
	job->world = tj->nb_hosts;
	job->ref_round[0] = job->ref_round[1] = -1;
	if (tj->data == TOPO_DATA_FILE)
		job->workload = workload_npy(tj->path, tj->nb_hosts, werr, sizeof(werr));
	else
		job->workload = workload_synth(tj->tensor_len, tj->density, tj->seed,
					       tj->nb_hosts, tj->block_size);
	if (!job->workload) {
		rep->state = SIM_JOB_FAILED;
		snprintf(rep->error, sizeof(rep->error), "job %s: no data: %s", tj->name,
			 werr[0] ? werr : strerror(errno));
		return 0;
	}
	rep->tensor_len = workload_elements(job->workload);
	job->hosts = calloc(job->world, sizeof(*job->hosts));
	job->rank_joined = calloc(job->world, 1);
	job->rank_closed = calloc(job->world, 1);
	job->rank_rounds = calloc(job->world, sizeof(uint32_t));
	job->round_end = calloc(tj->rounds, sizeof(uint64_t));
	rep->round_ns = calloc(tj->rounds, sizeof(uint64_t));
	if (!job->hosts || !job->rank_joined || !job->rank_closed || !job->rank_rounds ||
	    !job->round_end || !rep->round_ns) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (uint16_t r = 0; r < job->world; r++) {
		struct host_node_config hc = {
			.index = tj->hosts[r],
			.switch_index = rep->switch_node,
			.job = job,
			.workload = job->workload,
			.rank = r,
			.world = job->world,
			.lanes = tj->lanes,
			.block_size = tj->block_size,
			.encoding = tj->encoding,
			.job_id = tj->job_id,
			.tensor_len = rep->tensor_len,
			.rounds = tj->rounds,
			.rto_ns = rto_of(&net->cfg, &net->t->links[net->route.up_link[tj->hosts[r]]],
					 tj),
		};

		job->hosts[r] = host_node_create(net, &hc);
		if (!job->hosts[r]) {
			snprintf(err, errlen, "job %s: rank %u: cannot create its engine: %s",
				 tj->name, r, strerror(errno));
			return -EINVAL;
		}
		net->nodes[tj->hosts[r]] = job->hosts[r];
	}
	return 0;
}

/* One pipeline per switch that aggregates a job, sized for its jobs. */
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
		for (uint32_t k = 0; k < t->nb_jobs; k++) {
			const struct topo_job *tj = &t->jobs[k];

			if (net->rep.jobs[k].switch_node != (int)s)
				continue;
			nb_jobs++;
			if (tj->block_size > max_b)
				max_b = tj->block_size;
			for (uint16_t r = 0; r < tj->nb_hosts; r++) {
				const struct topo_link *l =
					&t->links[net->route.up_link[tj->hosts[r]]];

				if (l->mtu && l->mtu - IP_UDP_BYTES < max_pkt)
					max_pkt = l->mtu - IP_UDP_BYTES;
			}
		}
		if (!nb_jobs)
			continue;
		pipeline_config_init(&pc);
		if (t->nodes[s].slots)
			pc.nb_slots = t->nodes[s].slots;
		pc.slot_elems = max_b;
		pc.max_pkt = max_pkt == UINT32_MAX ? 0 : max_pkt;
		pc.pool = net->pool;
		net->nodes[s] = switch_node_create(net, (int)s, &pc);
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
	net->sw_stats = calloc(t->nb_nodes + 1, sizeof(*net->sw_stats));
	net->jobs = calloc(t->nb_jobs + 1, sizeof(*net->jobs));
	net->rep.jobs = calloc(t->nb_jobs + 1, sizeof(*net->rep.jobs));
	net->rep.links = calloc(t->nb_links + 1, sizeof(*net->rep.links));
	taken = calloc(t->nb_nodes + 1, 1);
	if (!net->links || !net->win_start || !net->nodes || !net->sw_stats || !net->jobs ||
	    !net->rep.jobs || !net->rep.links || !taken) {
		snprintf(err, errlen, "out of memory");
		goto err;
	}
	net->rep.nb_jobs = t->nb_jobs;
	net->rep.nb_links = t->nb_links;
	net->rep.switches = net->sw_stats;
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
		job_check(net, k, taken);
		if (net->rep.jobs[k].state != SIM_JOB_REFUSED) {
			nb_pkts += (uint64_t)tj->nb_hosts * tj->lanes * 16;
			if (tj->block_size > max_b)
				max_b = tj->block_size;
		}
	}
	net->pool = ina_pkt_pool_create((unsigned)(nb_pkts < 1u << 22 ? nb_pkts : 1u << 22),
					INA_HDR_SIZE + 4u * max_b + 256);
	if (!net->pool) {
		snprintf(err, errlen, "out of memory for %llu packet buffers",
			 (unsigned long long)nb_pkts);
		goto err;
	}
	for (uint32_t k = 0; k < t->nb_jobs; k++) {
		if (net->rep.jobs[k].state != SIM_JOB_REFUSED &&
		    job_build(net, k, err, errlen) < 0)
			goto err;
		ring_for(net, k);
	}
	if (switches_build(net, err, errlen) < 0)
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
		struct sim_job *job = &net->jobs[k];

		workload_destroy(job->workload);
		free(job->hosts);
		free(job->rank_joined);
		free(job->rank_closed);
		free(job->rank_rounds);
		free(job->round_end);
		free(job->ref[0]);
		free(job->ref[1]);
	}
	for (uint32_t k = 0; net->rep.jobs && k < net->t->nb_jobs; k++)
		free(net->rep.jobs[k].round_ns);
	ina_pkt_pool_destroy(net->pool);
	sim_route_fini(&net->route);
	free(net->links);
	free(net->win_start);
	free(net->nodes);
	free(net->sw_stats);
	free(net->jobs);
	free(net->rep.jobs);
	free(net->rep.links);
	free(net);
}

/* The rounds window: link counters from the first round's start. */
static void
window_open(struct sim_net *net)
{
	if (net->window_open)
		return;
	net->window_open = 1;
	net->rep.window_ns = net->now;	/* the start, until the window closes */
	for (uint32_t d = 0; d < 2 * net->t->nb_links; d++)
		net->win_start[d] = net->links[d].st;
}

static void
window_close(struct sim_net *net)
{
	uint64_t start = net->rep.window_ns;

	if (!net->window_open || net->window_closed)
		return;
	net->window_closed = 1;
	net->rep.window_ns = net->now - start;
	for (uint32_t k = 0; k < net->t->nb_links; k++) {
		struct sim_link_report *lr = &net->rep.links[k];

		for (uint32_t d = 0; d < 2; d++) {
			const struct sim_link_stats *a = &net->win_start[2 * k + d];
			const struct sim_link_stats *b = &net->links[2 * k + d].st;

			lr->dir[d] = (struct sim_link_stats){
				.pkts = b->pkts - a->pkts,
				.bytes = b->bytes - a->bytes,
				.lost = b->lost - a->lost,
				.tail_drops = b->tail_drops - a->tail_drops,
				.busy_ns = b->busy_ns - a->busy_ns,
				.queue_max = b->queue_max,
			};
			lr->utilisation[d] = net->rep.window_ns ? (double)lr->dir[d].busy_ns /
									  (double)net->rep.window_ns
								: 0;
		}
	}
}

/* Whether some job still joins or runs rounds. */
static int
rounds_left(const struct sim_net *net)
{
	for (uint32_t k = 0; k < net->t->nb_jobs; k++) {
		const struct sim_job *job = &net->jobs[k];

		if (net->rep.jobs[k].state == SIM_JOB_REFUSED || !job->hosts || job->failed)
			continue;
		if (job->phase == JP_JOINING || job->phase == JP_RUNNING)
			return 1;
	}
	return 0;
}

/* Job-level steps between events. Returns 1 while some job is not over. */
static int
jobs_step(struct sim_net *net)
{
	int live = 0;

	for (uint32_t k = 0; k < net->t->nb_jobs; k++) {
		struct sim_job *job = &net->jobs[k];
		struct sim_job_report *rep = &net->rep.jobs[k];

		if (rep->state == SIM_JOB_REFUSED || !job->hosts)
			continue;
		if (job->stop_due) {
			job->stop_due = 0;
			job->phase = JP_END;
			for (uint16_t r = 0; r < job->world; r++)
				host_node_stop(job->hosts[r]);
		}
		if (job->start_due && job->phase == JP_JOINING) {
			job->start_due = 0;
			job->phase = JP_RUNNING;
			rep->start_ns = net->now;
			window_open(net);
			for (uint16_t r = 0; r < job->world; r++)
				host_node_start(job->hosts[r], net->now);
		}
		if (job->phase != JP_END)
			live = 1;
	}
	if (!rounds_left(net))
		window_close(net);
	return live;
}

static void
jobs_report(struct sim_net *net)
{
	for (uint32_t k = 0; k < net->t->nb_jobs; k++) {
		struct sim_job *job = &net->jobs[k];
		struct sim_job_report *rep = &net->rep.jobs[k];
		const struct topo_job *tj = job->tj;
		uint32_t done = UINT32_MAX;

		if (rep->state == SIM_JOB_REFUSED || !job->hosts)
			continue;
		rep->state = job->failed || job->phase != JP_END ? SIM_JOB_FAILED : SIM_JOB_OK;
		if (!job->failed && job->phase != JP_END) {
			snprintf(rep->error, sizeof(rep->error),
				 "job %s did not finish within %.3f s of simulated time (%u of %u "
				 "ranks joined, %u finished their rounds, %u closed)",
				 tj->name, (double)net->cfg.limit_ns * 1e-9, job->joined, job->world,
				 job->finished, job->closed);
		}
		for (uint16_t r = 0; r < job->world; r++) {
			const struct engine_stats *st = host_node_stats(job->hosts[r]);

			if (job->rank_rounds[r] < done)
				done = job->rank_rounds[r];
			rep->pkts_sent += st->pkts_sent;
			rep->bytes_sent += st->bytes_sent;
			rep->pkts_recv += st->pkts_recv;
			rep->bytes_recv += st->bytes_recv;
			rep->data_sent += st->data_sent;
			rep->empty_sent += st->empty_sent;
			rep->retransmits += st->retransmits;
			rep->waits += st->waits;
		}
		rep->rounds_done = done;
		for (uint32_t i = 0; i < done; i++)
			rep->round_ns[i] = job->round_end[i] -
					   (i ? job->round_end[i - 1] : rep->start_ns);
		if (done == tj->rounds && done) {
			rep->mean_round_ns = (double)(rep->end_ns - rep->start_ns) / done;
			if (rep->mean_round_ns > 0)
				rep->goodput_bps = (double)rep->tensor_len * 4 * 8 /
						   (rep->mean_round_ns * 1e-9);
		}
	}
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
	while (jobs_step(net) && sim_events_pop(&net->q, &ev)) {
		struct sim_node *n;

		if (ev.time > net->cfg.limit_ns) {
			ina_pkt_free(ev.pkt);
			break;
		}
		net->now = ev.time;
		net->rep.events++;
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
		sim_net_peer(ev.src, &ev.pkt->peer);
		if (net->tap)
			net->tap(net->tap_arg, ev.pkt, ev.src, ev.dst, net->now);
		n->ops->rx(n, ev.pkt, ev.src, net->now);
	}
	window_close(net);
	net->rep.end_ns = net->now;
	jobs_report(net);
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
