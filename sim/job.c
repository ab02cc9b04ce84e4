/* SPDX-License-Identifier: MIT */
/*
 * The jobs of a simulation (net_int.h): which can run here and why not, the
 * hosts and workload of each, the callbacks its hosts report through
 * (node.h: they record, the loop acts between events), the check of every
 * sum, and each job's figures at the end.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "ina/encoding.h"
#include "ina/wire.h"
#include "net_int.h"
#include "workload.h"

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

static void
sim_job_fail(struct sim_job *job, uint64_t now, const char *msg)
{
	(void)now;
	job_fail(job, msg);
}

static int
sim_job_contribute(struct sim_job *job, uint16_t rank, uint32_t round, const float *in, char *msg,
		   size_t msglen)
{
	size_t n = job->rep->tensor_len;
	unsigned slot = round & 1;
	float *acc;

	if (!job->exact)
		return 0;
	if (!job->acc[slot] && !(job->acc[slot] = malloc(n * sizeof(float)))) {
		snprintf(msg, msglen, "rank %u round %u: out of memory for the expected sum", rank,
			 round);
		return -1;
	}
	acc = job->acc[slot];
	if (job->acc_round[slot] != (int64_t)round) {
		/* Round - 2 is checked on every rank by now (a rank starts
		 * round r only after every rank ended r - 1, hence r - 2). */
		memset(acc, 0, n * sizeof(float));
		job->acc_round[slot] = round;
		job->acc_ranks[slot] = 0;
	}
	for (size_t i = 0; i < n; i++)
		acc[i] += in[i];
	job->acc_ranks[slot]++;
	return 0;
}

/* The exact check: 'out' bit for bit against the accumulated sum (every
 * partial sum of k * 2^-10 values is exact, so any order gives the bits
 * workload_check's rank-order sum would; a block nobody sent is +0.0). */
static int
check_acc(struct sim_job *job, uint16_t rank, uint32_t round, const float *out, char *msg,
	  size_t msglen)
{
	size_t n = job->rep->tensor_len, bad = 0, first = 0;
	unsigned slot = round & 1;
	const float *want = job->acc[slot];

	if (job->acc_round[slot] != (int64_t)round || job->acc_ranks[slot] != job->world) {
		snprintf(msg, msglen,
			 "rank %u round %u: a result before every rank's input was generated "
			 "(%u of %u)",
			 rank, round,
			 job->acc_round[slot] == (int64_t)round ? job->acc_ranks[slot] : 0,
			 job->world);
		return -1;
	}
	if (memcmp(out, want, n * sizeof(float)) == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (memcmp(&out[i], &want[i], sizeof(float)) == 0)
			continue;
		if (!bad++)
			first = i;
	}
	snprintf(msg, msglen,
		 "rank %u round %u: wrong sum: %zu elements, first at %zu (got %g, want %g)", rank,
		 round, bad, first, (double)out[first], (double)want[first]);
	return -1;
}

static int
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
	if (job->exact) {
		if (check_acc(job, rank, round, out, msg, msglen) < 0)
			return -1;
		goto keep;
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
keep:
	if (!job->ref[slot] && !(job->ref[slot] = malloc(bytes))) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	memcpy(job->ref[slot], out, bytes);
	job->ref_round[slot] = round;
	return 0;
}

static void
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
		if (!jobs_rounds_left(job->net))
			sim_window_close(job->net);
	}
}

static void
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

/* What a host reports to its job (node.h). */
static const struct host_job_ops job_ops = {
	.check = sim_job_check,
	.contribute = sim_job_contribute,
	.round_done = sim_job_round_done,
	.fail = sim_job_fail,
	.phase = sim_job_phase,
};

/* Admission and building. */

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

/* Bytes an element on the wire (4 for an encoding the job would refuse). */
static uint32_t
job_elem_size(uint8_t encoding)
{
	const struct ina_encoding_ops *enc = ina_encoding(encoding);

	return enc ? (uint32_t)enc->elem_size : 4;
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
	frame = 14 + 28 + INA_HDR_SIZE + (uint64_t)tj->block_size * job_elem_size(tj->encoding);
	if (l->bandwidth_bps)
		queue_us = (uint64_t)tj->lanes * frame * 8 * 1000000 / l->bandwidth_bps;
	us = 4 * delay_us + 3 * queue_us;
	us = us < 5000 ? 5000 : us > 10000000 ? 10000000 : us;
	return us * 1000;
}

void
job_admit(struct sim_net *net, uint32_t k, uint8_t *host_taken)
{
	const struct topology *t = net->t;
	const struct topo_job *tj = &t->jobs[k];
	struct sim_job_report *rep = &net->rep.jobs[k];
	struct tiers *tr = &net->jobs[k].tiers;
	char err[300];

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
	}
	if (tiers_build(t, tj, INA_MAX_WORLD, tr, err, sizeof(err)) < 0) {
		job_refuse(rep, "%s", err);
		return;
	}
	for (uint32_t s = 0; s < t->nb_nodes; s++) {
		if (tr->m[s].up < 0 || t->nodes[s].kind != TOPO_SWITCH)
			continue;
		if (net->switch_role[s] == SW_ROOT) {
			job_refuse(rep,
				   "job %s: switch %s would be one of its racks (under %s) and "
				   "the root of another job: a switch with an uplink runs only "
				   "the jobs it forwards upstream",
				   tj->name, t->nodes[s].name, t->nodes[tr->m[s].up].name);
			return;
		}
		if (job_elem_size(tj->encoding) < sizeof(float)) {
			/* Narrower than the switch's 32-bit sums: a rack's
			 * partial sum would be rounded twice. */
			job_refuse(rep,
				   "job %s spans %u switches in bf16: a rack switch does not "
				   "forward bf16 upstream",
				   tj->name, tr->nb_switches);
			return;
		}
	}
	if (net->switch_role[tj->root] == SW_RACK) {
		job_refuse(rep,
			   "job %s: its root %s is a rack of another job (a switch with an "
			   "uplink runs only the jobs it forwards upstream)",
			   tj->name, t->nodes[tj->root].name);
		return;
	}
	for (uint16_t r = 0; r < tj->nb_hosts; r++) {
		int h = tj->hosts[r];
		const struct topo_link *l = &t->links[net->route.up_link[h]];

		if (host_taken[h]) {
			job_refuse(rep,
				   "job %s: host %s is in another job too (one engine per "
				   "host here)",
				   tj->name, t->nodes[h].name);
			return;
		}
		if (l->mtu &&
		    INA_HDR_SIZE + (uint64_t)job_elem_size(tj->encoding) * tj->block_size +
				    IP_UDP_BYTES >
			    l->mtu) {
			job_refuse(rep,
				   "job %s: a block of %u does not fit the MTU of %s's link "
				   "(%u)",
				   tj->name, tj->block_size, t->nodes[h].name, l->mtu);
			return;
		}
	}
	if (!tj->block_size || !tj->lanes || !tj->rounds || !ina_encoding(tj->encoding)) {
		job_refuse(rep, "job %s: block size, lanes, rounds and encoding must be set",
			   tj->name);
		return;
	}
	for (uint16_t r = 0; r < tj->nb_hosts; r++)
		host_taken[tj->hosts[r]] = 1;
	for (uint32_t s = 0; s < t->nb_nodes; s++)
		if (tr->m[s].up >= 0 && t->nodes[s].kind == TOPO_SWITCH)
			net->switch_role[s] = SW_RACK;
	net->switch_role[tj->root] = SW_ROOT;
	rep->switch_node = tj->root;
	rep->nb_switches = tr->nb_switches;
	rep->tiers = tr->max_depth;
}

void
job_ring(struct sim_net *net, uint32_t k)
{
	struct sim_job_report *rep = &net->rep.jobs[k];
	const struct topo_job *tj = &net->t->jobs[k];
	struct topo_job copy = *tj;
	struct timespec a, b;

	/* A .npy job's tensor length is the file's (known once loaded). */
	copy.tensor_len = rep->tensor_len;
	clock_gettime(CLOCK_MONOTONIC, &a);
	rep->ring_ok = ring_model(net->t, &net->route, &copy, job_elem_size(tj->encoding),
				  net->cfg.frame_overhead, &rep->ring, rep->ring_error,
				  sizeof(rep->ring_error)) == 0;
	clock_gettime(CLOCK_MONOTONIC, &b);
	rep->ring_wall_ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull + (uint64_t)b.tv_nsec -
			    (uint64_t)a.tv_nsec;
}

int
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
		job->workload = workload_synth(tj->tensor_len, tj->density, tj->seed, tj->nb_hosts,
					       tj->block_size);
	if (!job->workload) {
		rep->state = SIM_JOB_FAILED;
		snprintf(rep->error, sizeof(rep->error), "job %s: no data: %s", tj->name,
			 werr[0] ? werr : strerror(errno));
		return 0;
	}
	rep->tensor_len = workload_elements(job->workload);
	job->exact = workload_exact(job->workload, tj->encoding);
	job->acc_round[0] = job->acc_round[1] = -1;
	if (!job->exact && job->world > INA_MAX_WORLD) {
		/* workload_verify holds every rank's contribution, 64 at most. */
		rep->state = SIM_JOB_FAILED;
		snprintf(rep->error, sizeof(rep->error),
			 "job %s: %u workers with data whose sums are not exact (a .npy file "
			 "or bf16): checking them needs every rank's contribution, %u at most",
			 tj->name, job->world, INA_MAX_WORLD);
		return 0;
	}
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
			.switch_index = job->tiers.m[tj->hosts[r]].up,
			.job = job,
			.job_ops = &job_ops,
			.workload = job->workload,
			.rank = r,
			.world = job->world,
			.switch_rank = job->tiers.m[tj->hosts[r]].rank,
			.switch_world = job->tiers.m[tj->hosts[r]].world,
			.lanes = tj->lanes,
			.weight = tj->weight,
			.block_size = tj->block_size,
			.encoding = tj->encoding,
			.job_id = sim_job_wire_id(tj),
			.tensor_len = rep->tensor_len,
			.rounds = tj->rounds,
			.rto_ns = rto_of(&net->cfg,
					 &net->t->links[net->route.up_link[tj->hosts[r]]], tj),
		};

		hc.auth = (uint8_t)sim_job_key(net, tj, &hc.key);
		job->hosts[r] = host_node_create(&net->env, &hc);
		if (!job->hosts[r]) {
			snprintf(err, errlen, "job %s: rank %u: cannot create its engine: %s",
				 tj->name, r, strerror(errno));
			return -EINVAL;
		}
		net->nodes[tj->hosts[r]] = job->hosts[r];
	}
	return 0;
}

int
jobs_rounds_left(const struct sim_net *net)
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

int
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
			sim_window_open(net);
			for (uint16_t r = 0; r < job->world; r++)
				host_node_start(job->hosts[r], net->now);
		}
		if (job->phase != JP_END)
			live = 1;
	}
	if (!jobs_rounds_left(net))
		sim_window_close(net);
	return live;
}

void
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
				 tj->name, (double)net->cfg.limit_ns * 1e-9, job->joined,
				 job->world, job->finished, job->closed);
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

void
job_fini(struct sim_job *job)
{
	workload_destroy(job->workload);
	free(job->hosts);
	free(job->rank_joined);
	free(job->rank_closed);
	free(job->rank_rounds);
	free(job->round_end);
	free(job->ref[0]);
	free(job->ref[1]);
	free(job->acc[0]);
	free(job->acc[1]);
	tiers_fini(&job->tiers);
}
