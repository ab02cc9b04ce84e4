/* SPDX-License-Identifier: MIT */
/*
 * The text and JSON reports of a simulation (report.h).
 */
#include <inttypes.h>
#include <string.h>

#include "ina/wire.h"
#include "pipeline.h"
#include "report.h"

static const char *
enc_name(uint8_t e)
{
	const char *name = ina_wire_encoding_name(e);

	return name ? name : "?";
}

static const char *
state_name(enum sim_job_state s)
{
	return s == SIM_JOB_OK ? "ok" : s == SIM_JOB_FAILED ? "failed" : "refused";
}

static void
link_names(const struct topology *t, uint32_t k, int dir, const char **from, const char **to)
{
	const struct topo_link *l = &t->links[k];

	*from = t->nodes[dir ? l->b : l->a].name;
	*to = t->nodes[dir ? l->a : l->b].name;
}

/* The links of one tier of the tree (its ends' kinds: host-rack,
 * rack-spine, spine-core), summed over the rounds; [0] up (a -> b: a host
 * or the child is 'a'), [1] down. */
struct tier_sum {
	char name[40];
	uint32_t links;
	uint64_t pkts[2], bytes[2];
	double max_util[2];
};

#define MAX_TIERS 16

static const char *
role_name(const struct topo_node *n)
{
	return n->kind == TOPO_HOST ? "host" : topology_role_name(n->role);
}

/* Fills 'ts' (MAX_TIERS at most, in order of first appearance); returns
 * how many. Links that carried nothing are left out. */
static uint32_t
tier_sums(const struct topology *t, const struct sim_report *rep, struct tier_sum *ts)
{
	uint32_t nb = 0;

	for (uint32_t k = 0; k < rep->nb_links; k++) {
		const struct topo_link *l = &t->links[k];
		char name[40];
		uint32_t i;

		if (!rep->links[k].dir[0].pkts && !rep->links[k].dir[1].pkts)
			continue;
		snprintf(name, sizeof(name), "%s-%s", role_name(&t->nodes[l->a]),
			 role_name(&t->nodes[l->b]));
		for (i = 0; i < nb && strcmp(ts[i].name, name) != 0; i++)
			;
		if (i == nb) {
			if (nb == MAX_TIERS)
				continue;
			memset(&ts[nb], 0, sizeof(ts[nb]));
			snprintf(ts[nb].name, sizeof(ts[nb].name), "%s", name);
			nb++;
		}
		ts[i].links++;
		for (int d = 0; d < 2; d++) {
			ts[i].pkts[d] += rep->links[k].dir[d].pkts;
			ts[i].bytes[d] += rep->links[k].dir[d].bytes;
			if (rep->links[k].utilisation[d] > ts[i].max_util[d])
				ts[i].max_util[d] = rep->links[k].utilisation[d];
		}
	}
	return nb;
}

static double
ring_ratio(const struct sim_job_report *j)
{
	return j->state == SIM_JOB_OK && j->ring_ok && j->mean_round_ns > 0
		       ? (double)j->ring.time_ns / j->mean_round_ns
		       : 0;
}

static void
job_text(const struct topology *t, const struct sim_job_report *j, FILE *f)
{
	const struct topo_job *tj = j->job;

	fprintf(f, "job %s (id %u%s%s): %u workers, %u elements x %u rounds, B %u, %u lanes, %s, ",
		tj->name, tj->job_id, tj->tenant ? " of tenant " : "", tj->tenant ? tj->tenant : "",
		tj->nb_hosts, j->tensor_len, tj->rounds, tj->block_size, tj->lanes,
		enc_name(tj->encoding));
	if (tj->data == TOPO_DATA_FILE)
		fprintf(f, "data %s\n", tj->path);
	else
		fprintf(f, "synthetic density %g seed %" PRIu64 "\n", tj->density, tj->seed);
	if (j->state == SIM_JOB_REFUSED) {
		fprintf(f, "  not simulated: %s\n", j->why);
	} else {
		fprintf(f, "  result        %s%s%s\n", state_name(j->state),
			j->state == SIM_JOB_FAILED ? ": " : "",
			j->state == SIM_JOB_FAILED ? j->error : "");
		if (j->nb_switches > 1)
			fprintf(f,
				"  switches      %u in %u tiers, %s at the top (the others "
				"aggregate their part and send it up)\n",
				j->nb_switches, j->tiers, t->nodes[j->switch_node].name);
		else
			fprintf(f, "  switch        %s\n", t->nodes[j->switch_node].name);
		if (j->rounds_done == tj->rounds && j->rounds_done) {
			fprintf(f, "  round time    %.3f ms mean (", j->mean_round_ns * 1e-6);
			for (uint32_t r = 0; r < j->rounds_done && r < 8; r++)
				fprintf(f, "%s%.3f", r ? " " : "", (double)j->round_ns[r] * 1e-6);
			fprintf(f, "%s ms)\n", j->rounds_done > 8 ? " ..." : "");
			fprintf(f, "  goodput       %.3f Gbit/s (%.3f MB of tensor per round)\n",
				j->goodput_bps * 1e-9, (double)j->tensor_len * 4 * 1e-6);
		}
		fprintf(f, "  sums          %" PRIu64 " checked (hosts x rounds), %s\n",
			j->sums_checked, j->state == SIM_JOB_OK ? "all right" : "see the error");
		fprintf(f,
			"  hosts sent    %" PRIu64 " packets (%" PRIu64 " with data, %" PRIu64
			" header-only), %" PRIu64 " bytes; retransmissions %" PRIu64
			", WAITs %" PRIu64 "\n",
			j->pkts_sent, j->data_sent, j->empty_sent, j->bytes_sent, j->retransmits,
			j->waits);
	}
	if (!j->ring_ok) {
		fprintf(f, "  ring          not modelled: %s\n", j->ring_error);
		return;
	}
	if (tj->nb_hosts < 2) {
		fprintf(f, "  ring          nothing to exchange (one worker)\n");
		return;
	}
	fprintf(f,
		"  ring          %.3f ms per allreduce on the same links (%u steps, %.3f MB "
		"sent per host",
		(double)j->ring.time_ns * 1e-6, j->ring.steps,
		(double)j->ring.wire_bytes_per_host * 1e-6);
	if (j->ring.bottleneck_link >= 0) {
		const char *a, *b;

		link_names(t, (uint32_t)j->ring.bottleneck_link, j->ring.bottleneck_dir, &a, &b);
		fprintf(f, ", slowest on %s->%s", a, b);
	}
	fprintf(f, ")\n");
	if (ring_ratio(j) > 0)
		fprintf(f, "  gain          in-network is %.2fx the ring's speed\n", ring_ratio(j));
}

static uint64_t
attack_sent(const struct attack_stats *st, uint64_t *bytes)
{
	uint64_t n = 0;

	*bytes = 0;
	for (int k = 0; k < ATTACK_KINDS; k++) {
		n += st->sent[k];
		*bytes += st->bytes_sent[k];
	}
	return n;
}

/* What the switch of the attacked job dropped, by reason, on one line. */
static void
drops_text(const struct pipeline_stats *st, FILE *f)
{
	const char *sep = "";

	for (int i = 0; i < PDROP_MAX; i++) {
		if (!st->drop[i])
			continue;
		fprintf(f, "%s%s %" PRIu64, sep, pipeline_drop_name((enum pipeline_drop)i),
			st->drop[i]);
		sep = ", ";
	}
	for (int i = 0; i < INA_WIRE_REASON_MAX; i++) {
		if (!st->drop_wire[i])
			continue;
		fprintf(f, "%s%s %" PRIu64, sep, ina_wire_reason_name((enum ina_wire_reason)i),
			st->drop_wire[i]);
		sep = ", ";
	}
	fprintf(f, "%s\n", *sep ? "" : "none");
}

static void
attack_text(const struct topology *t, const struct sim_report *rep,
	    const struct sim_attack_report *a, FILE *f)
{
	const struct attack_stats *st = &a->st;
	const struct sim_job_report *j = &rep->jobs[a->attack->job];
	uint64_t bytes, n = attack_sent(st, &bytes);

	fprintf(f, "attack from %s on job %s at %.3f Gbit/s\n", t->nodes[a->attack->host].name,
		t->jobs[a->attack->job].name, (double)a->attack->rate_bps * 1e-9);
	fprintf(f, "  sent          %" PRIu64 " packets, %" PRIu64 " bytes (", n, bytes);
	for (int k = 0; k < ATTACK_KINDS; k++)
		fprintf(f, "%s%s %" PRIu64, k ? ", " : "", attack_kind_names[k], st->sent[k]);
	fprintf(f, "); saw %" PRIu64 " of the job's\n", st->captured);
	fprintf(f,
		"  came back     %" PRIu64 " packets, %" PRIu64 " bytes: %.3f of the %" PRIu64
		" bytes it sent from its own address\n",
		st->pkts_back, st->bytes_back,
		st->bytes_sent_own ? (double)st->bytes_back / (double)st->bytes_sent_own : 0.0,
		st->bytes_sent_own);
	if (j->switch_node >= 0 && rep->switches[j->switch_node]) {
		fprintf(f, "  %-13s drops: ", t->nodes[j->switch_node].name);
		drops_text(rep->switches[j->switch_node], f);
	}
}

void
sim_report_text(const struct topology *t, const struct sim_config *cfg,
		const struct sim_report *rep, const struct sim_wall *wall, FILE *f)
{
	struct tier_sum ts[MAX_TIERS];
	uint32_t nb_ts;
	int any_link = 0;

	fprintf(f, "topology %s (%s): %u nodes, %u links, %u job%s; seed %" PRIu64 "\n",
		t->name ? t->name : "?", t->file ? t->file : "?", t->nb_nodes, t->nb_links,
		t->nb_jobs, t->nb_jobs == 1 ? "" : "s", cfg->seed);
	for (uint32_t k = 0; k < rep->nb_jobs; k++)
		job_text(t, &rep->jobs[k], f);
	for (uint32_t k = 0; k < rep->nb_links; k++)
		any_link |= rep->links[k].dir[0].pkts || rep->links[k].dir[1].pkts;
	if (any_link) {
		fprintf(f, "links over the rounds (%.3f ms):\n", (double)rep->window_ns * 1e-6);
		fprintf(f, "  %-24s %10s %14s %7s %7s %6s\n", "direction", "packets", "bytes",
			"lost", "drops", "util");
		if (rep->nb_links > 32)
			fprintf(f, "  (%u links: each in --json; by tier below)\n", rep->nb_links);
		for (uint32_t k = 0; rep->nb_links <= 32 && k < rep->nb_links; k++) {
			for (int d = 0; d < 2; d++) {
				const struct sim_link_stats *s = &rep->links[k].dir[d];
				const char *a, *b;
				char name[64];

				if (!s->pkts && !s->tail_drops)
					continue;
				link_names(t, k, d, &a, &b);
				snprintf(name, sizeof(name), "%s->%s", a, b);
				fprintf(f,
					"  %-24s %10" PRIu64 " %14" PRIu64 " %7" PRIu64 " %7" PRIu64
					" %5.1f%%\n",
					name, s->pkts, s->bytes, s->lost, s->tail_drops,
					rep->links[k].utilisation[d] * 100);
			}
		}
	}
	for (uint32_t k = 0; k < rep->nb_attacks; k++)
		attack_text(t, rep, &rep->attacks[k], f);
	nb_ts = tier_sums(t, rep, ts);
	if (nb_ts) {
		fprintf(f, "links by tier over the rounds (up: towards the root):\n");
		fprintf(f, "  %-14s %6s %14s %14s %8s %14s %14s %8s\n", "tier", "links", "up bytes",
			"per link", "max util", "down bytes", "per link", "max util");
		for (uint32_t i = 0; i < nb_ts; i++)
			fprintf(f,
				"  %-14s %6u %14" PRIu64 " %14" PRIu64 " %7.1f%% %14" PRIu64
				" %14" PRIu64 " %7.1f%%\n",
				ts[i].name, ts[i].links, ts[i].bytes[0],
				ts[i].bytes[0] / ts[i].links, ts[i].max_util[0] * 100,
				ts[i].bytes[1], ts[i].bytes[1] / ts[i].links,
				ts[i].max_util[1] * 100);
	}
	fprintf(f, "simulated %.6f s in %" PRIu64 " events", (double)rep->end_ns * 1e-9,
		rep->events);
	if (wall)
		fprintf(f,
			"; wall time %.3f s (build %.3f s, of which ring models %.6f s; run %.3f s)",
			wall->build_s + wall->run_s, wall->build_s, wall->ring_s, wall->run_s);
	fprintf(f, "\n");
}

static json_t *
link_json(const struct topology *t, const struct sim_report *rep, uint32_t k)
{
	json_t *o = json_object(), *dirs = json_array();

	json_object_set_new(o, "a", json_string(t->nodes[t->links[k].a].name));
	json_object_set_new(o, "b", json_string(t->nodes[t->links[k].b].name));
	json_object_set_new(o, "bandwidth_bps",
			    json_integer((json_int_t)t->links[k].bandwidth_bps));
	json_object_set_new(o, "latency_ns", json_integer((json_int_t)t->links[k].latency_ns));
	json_object_set_new(o, "loss", json_real(t->links[k].loss));
	for (int d = 0; d < 2; d++) {
		const struct sim_link_stats *s = &rep->links[k].dir[d];
		json_t *x = json_object();
		const char *a, *b;

		link_names(t, k, d, &a, &b);
		json_object_set_new(x, "from", json_string(a));
		json_object_set_new(x, "to", json_string(b));
		json_object_set_new(x, "packets", json_integer((json_int_t)s->pkts));
		json_object_set_new(x, "bytes", json_integer((json_int_t)s->bytes));
		json_object_set_new(x, "lost", json_integer((json_int_t)s->lost));
		json_object_set_new(x, "tail_drops", json_integer((json_int_t)s->tail_drops));
		json_object_set_new(x, "busy_ns", json_integer((json_int_t)s->busy_ns));
		json_object_set_new(x, "queue_max_bytes", json_integer((json_int_t)s->queue_max));
		json_object_set_new(x, "utilisation", json_real(rep->links[k].utilisation[d]));
		json_array_append_new(dirs, x);
	}
	json_object_set_new(o, "directions", dirs);
	return o;
}

static json_t *
job_json(const struct topology *t, const struct sim_job_report *j)
{
	const struct topo_job *tj = j->job;
	json_t *o = json_object(), *rounds = json_array(), *ring = json_object();

	json_object_set_new(o, "name", json_string(tj->name));
	json_object_set_new(o, "job_id", json_integer(tj->job_id));
	json_object_set_new(o, "tenant", tj->tenant ? json_string(tj->tenant) : json_null());
	json_object_set_new(o, "workers", json_integer(tj->nb_hosts));
	json_object_set_new(o, "elements", json_integer(j->tensor_len));
	json_object_set_new(o, "rounds", json_integer(tj->rounds));
	json_object_set_new(o, "block_size", json_integer(tj->block_size));
	json_object_set_new(o, "lanes", json_integer(tj->lanes));
	json_object_set_new(o, "encoding", json_string(enc_name(tj->encoding)));
	if (tj->data == TOPO_DATA_FILE) {
		json_object_set_new(o, "data", json_string(tj->path));
	} else {
		json_object_set_new(o, "density", json_real(tj->density));
		json_object_set_new(o, "data_seed", json_integer((json_int_t)tj->seed));
	}
	json_object_set_new(o, "state", json_string(state_name(j->state)));
	if (j->state == SIM_JOB_REFUSED)
		json_object_set_new(o, "why", json_string(j->why));
	if (j->state == SIM_JOB_FAILED)
		json_object_set_new(o, "error", json_string(j->error));
	if (j->state != SIM_JOB_REFUSED) {
		json_object_set_new(o, "switch",
				    j->switch_node >= 0 ? json_string(t->nodes[j->switch_node].name)
							: json_null());
		json_object_set_new(o, "switches", json_integer(j->nb_switches));
		json_object_set_new(o, "tiers", json_integer(j->tiers));
		json_object_set_new(o, "rounds_done", json_integer(j->rounds_done));
		for (uint32_t r = 0; r < j->rounds_done; r++)
			json_array_append_new(rounds, json_integer((json_int_t)j->round_ns[r]));
		json_object_set_new(o, "round_ns", rounds);
		rounds = NULL;
		json_object_set_new(o, "mean_round_ns", json_real(j->mean_round_ns));
		json_object_set_new(o, "goodput_bps", json_real(j->goodput_bps));
		json_object_set_new(o, "sums_checked", json_integer((json_int_t)j->sums_checked));
		json_object_set_new(o, "pkts_sent", json_integer((json_int_t)j->pkts_sent));
		json_object_set_new(o, "bytes_sent", json_integer((json_int_t)j->bytes_sent));
		json_object_set_new(o, "pkts_recv", json_integer((json_int_t)j->pkts_recv));
		json_object_set_new(o, "bytes_recv", json_integer((json_int_t)j->bytes_recv));
		json_object_set_new(o, "data_sent", json_integer((json_int_t)j->data_sent));
		json_object_set_new(o, "empty_sent", json_integer((json_int_t)j->empty_sent));
		json_object_set_new(o, "retransmits", json_integer((json_int_t)j->retransmits));
		json_object_set_new(o, "waits", json_integer((json_int_t)j->waits));
	}
	json_decref(rounds);
	if (j->ring_ok) {
		json_object_set_new(ring, "time_ns", json_integer((json_int_t)j->ring.time_ns));
		json_object_set_new(ring, "steps", json_integer(j->ring.steps));
		json_object_set_new(ring, "tensor_bytes",
				    json_integer((json_int_t)j->ring.tensor_bytes));
		json_object_set_new(ring, "wire_bytes_per_host",
				    json_integer((json_int_t)j->ring.wire_bytes_per_host));
		if (j->ring.bottleneck_link >= 0) {
			const char *a, *b;

			link_names(t, (uint32_t)j->ring.bottleneck_link, j->ring.bottleneck_dir, &a,
				   &b);
			json_object_set_new(ring, "slowest_from", json_string(a));
			json_object_set_new(ring, "slowest_to", json_string(b));
		}
		json_object_set_new(ring, "ratio_to_in_network", json_real(ring_ratio(j)));
	} else {
		json_object_set_new(ring, "error", json_string(j->ring_error));
	}
	json_object_set_new(o, "ring", ring);
	return o;
}

static json_t *
attacks_json(const struct topology *t, const struct sim_report *rep)
{
	json_t *arr = json_array();

	for (uint32_t i = 0; arr && i < rep->nb_attacks; i++) {
		const struct sim_attack_report *a = &rep->attacks[i];
		json_t *x = json_object(), *kinds = json_object();
		uint64_t bytes, n = attack_sent(&a->st, &bytes);

		for (int k = 0; kinds && k < ATTACK_KINDS; k++)
			json_object_set_new(kinds, attack_kind_names[k],
					    json_integer((json_int_t)a->st.sent[k]));
		json_object_set_new(x, "from", json_string(t->nodes[a->attack->host].name));
		json_object_set_new(x, "job", json_string(t->jobs[a->attack->job].name));
		json_object_set_new(x, "rate_bps", json_integer((json_int_t)a->attack->rate_bps));
		json_object_set_new(x, "pkts_sent", json_integer((json_int_t)n));
		json_object_set_new(x, "bytes_sent", json_integer((json_int_t)bytes));
		json_object_set_new(x, "bytes_sent_own",
				    json_integer((json_int_t)a->st.bytes_sent_own));
		json_object_set_new(x, "sent", kinds ? kinds : json_null());
		json_object_set_new(x, "captured", json_integer((json_int_t)a->st.captured));
		json_object_set_new(x, "pkts_back", json_integer((json_int_t)a->st.pkts_back));
		json_object_set_new(x, "bytes_back", json_integer((json_int_t)a->st.bytes_back));
		json_array_append_new(arr, x);
	}
	return arr ? arr : json_null();
}

json_t *
sim_report_json(const struct topology *t, const struct sim_config *cfg,
		const struct sim_report *rep, const struct sim_wall *wall)
{
	json_t *root = json_object(), *jobs = json_array(), *links = json_array(),
	       *sws = json_array(), *c = json_object();

	if (!root || !jobs || !links || !sws || !c) {
		json_decref(root);
		json_decref(jobs);
		json_decref(links);
		json_decref(sws);
		json_decref(c);
		return NULL;
	}
	json_object_set_new(root, "topology", json_string(t->name ? t->name : ""));
	json_object_set_new(c, "seed", json_integer((json_int_t)cfg->seed));
	json_object_set_new(c, "queue_bytes", json_integer((json_int_t)cfg->queue_bytes));
	json_object_set_new(c, "rto_ns", json_integer((json_int_t)cfg->rto_ns));
	json_object_set_new(c, "frame_overhead", json_integer(cfg->frame_overhead));
	json_object_set_new(c, "limit_ns", json_integer((json_int_t)cfg->limit_ns));
	json_object_set_new(root, "config", c);
	json_object_set_new(root, "simulated_ns", json_integer((json_int_t)rep->end_ns));
	json_object_set_new(root, "events", json_integer((json_int_t)rep->events));
	json_object_set_new(root, "window_ns", json_integer((json_int_t)rep->window_ns));
	json_object_set_new(root, "lost_no_route", json_integer((json_int_t)rep->lost_no_route));
	for (uint32_t k = 0; k < rep->nb_jobs; k++)
		json_array_append_new(jobs, job_json(t, &rep->jobs[k]));
	json_object_set_new(root, "jobs", jobs);
	for (uint32_t k = 0; k < rep->nb_links; k++)
		json_array_append_new(links, link_json(t, rep, k));
	json_object_set_new(root, "links", links);
	{
		struct tier_sum ts[MAX_TIERS];
		uint32_t nb_ts = tier_sums(t, rep, ts);
		json_t *tiers = json_array();

		for (uint32_t i = 0; tiers && i < nb_ts; i++) {
			json_t *x = json_object();

			json_object_set_new(x, "tier", json_string(ts[i].name));
			json_object_set_new(x, "links", json_integer(ts[i].links));
			json_object_set_new(x, "up_pkts", json_integer((json_int_t)ts[i].pkts[0]));
			json_object_set_new(x, "up_bytes",
					    json_integer((json_int_t)ts[i].bytes[0]));
			json_object_set_new(x, "up_max_utilisation", json_real(ts[i].max_util[0]));
			json_object_set_new(x, "down_pkts",
					    json_integer((json_int_t)ts[i].pkts[1]));
			json_object_set_new(x, "down_bytes",
					    json_integer((json_int_t)ts[i].bytes[1]));
			json_object_set_new(x, "down_max_utilisation",
					    json_real(ts[i].max_util[1]));
			json_array_append_new(tiers, x);
		}
		json_object_set_new(root, "link_tiers", tiers ? tiers : json_null());
	}
	for (uint32_t s = 0; s < t->nb_nodes; s++) {
		const struct pipeline_stats *st = rep->switches[s];
		json_t *x;
		uint64_t drops = 0;

		if (!st)
			continue;
		for (int i = 0; i < INA_WIRE_REASON_MAX; i++)
			drops += st->drop_wire[i];
		for (int i = 0; i < PDROP_MAX; i++)
			drops += st->drop[i];
		x = json_object();
		json_object_set_new(x, "name", json_string(t->nodes[s].name));
		json_object_set_new(x, "rx_pkts", json_integer((json_int_t)st->rx_pkts));
		json_object_set_new(x, "tx_pkts", json_integer((json_int_t)st->tx_pkts));
		json_object_set_new(x, "results", json_integer((json_int_t)st->results));
		json_object_set_new(x, "results_empty",
				    json_integer((json_int_t)st->results_empty));
		json_object_set_new(x, "shadow_replies",
				    json_integer((json_int_t)st->shadow_replies));
		json_object_set_new(x, "duplicates", json_integer((json_int_t)st->duplicates));
		json_object_set_new(x, "waits", json_integer((json_int_t)st->waits));
		json_object_set_new(x, "drops", json_integer((json_int_t)drops));
		json_object_set_new(x, "up_data", json_integer((json_int_t)st->up_data));
		json_object_set_new(x, "up_resends", json_integer((json_int_t)st->up_resends));
		json_object_set_new(x, "up_results", json_integer((json_int_t)st->up_results));
		json_array_append_new(sws, x);
	}
	json_object_set_new(root, "switches", sws);
	json_object_set_new(root, "attacks", attacks_json(t, rep));
	if (wall) {
		json_t *w = json_object();

		json_object_set_new(w, "build_s", json_real(wall->build_s));
		json_object_set_new(w, "run_s", json_real(wall->run_s));
		json_object_set_new(w, "ring_s", json_real(wall->ring_s));
		json_object_set_new(root, "wall", w);
	}
	return root;
}
