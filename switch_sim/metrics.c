/* SPDX-License-Identifier: MIT */
/*
 * A switch snapshot as Prometheus text, format 0.0.4 (metrics.h). Tables
 * map each counter of pipeline.h, port.h and lcores.h to a metric name and
 * its help; a family is written once, its samples after its HELP and TYPE
 * lines. The tables must cover the counter structs: an assertion at compile
 * time fails when a counter is added to struct pipeline_stats, struct
 * ina_port_stats, the dpdk port's or an lcore's without a row here.
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "ina/wire.h"
#include "metrics.h"

/* One counter: the family it belongs to, a label of its own (NULL: none),
 * and where it is in its struct. Rows of one family are adjacent. */
struct row {
	const char *name;
	const char *help;
	const char *lkey, *lval;
	size_t off;
};

#define PS(field, name, help) \
	{ \
		"ina_switch_" name, help, NULL, NULL, offsetof(struct pipeline_stats, field) \
	}

static const struct row pipe_rows[] = {
	PS(rx_pkts, "packets_received_total", "Packets the pipeline received."),
	PS(tx_pkts, "packets_sent_total",
	   "Packets the pipeline sent (a result fanned out to a job counts once)."),
	PS(results, "results_total", "Blocks completed and sent to their job."),
	PS(results_empty, "results_empty_total", "Results sent header-only (a zero sum)."),
	PS(results_deferred, "results_deferred_total",
	   "Results sent header-only, DEFERRED under the result filter's bound."),
	PS(result_bytes, "result_bytes_total", "Payload bytes of results."),
	PS(results_partial, "results_partial_total", "ssp: results closed early, PARTIAL."),
	PS(ssp_late, "ssp_late_total",
	   "ssp: packets for a closed block from a rank it lacks, answered, not added."),
	PS(shadow_replies, "shadow_replies_total", "Retransmissions answered from a shadow copy."),
	PS(duplicates, "duplicates_total", "Data for the open block already counted."),
	PS(waits, "waits_sent_total", "WAIT packets sent."),
	PS(keepalives, "keepalives_total",
	   "KEEPALIVEs taken from a joined rank (a pause, not a death)."),
	PS(saturated, "saturated_additions_total", "i32 additions that saturated."),
	PS(joins, "joins_total", "JOIN packets received."),
	PS(fins, "fins_total", "FIN packets received."),
	PS(leaves, "leaves_total", "LEAVE packets received."),
	PS(jobs_admitted, "jobs_admitted_total", "Jobs admitted."),
	PS(jobs_refused, "jobs_refused_total", "Jobs refused."),
	PS(jobs_freed, "jobs_freed_total", "Jobs freed."),
	PS(jobs_expired, "jobs_expired_total", "Jobs freed for being idle."),
	PS(jobs_granted, "jobs_granted_total", "Jobs admitted with fewer lanes than asked."),
	PS(jobs_redirected, "jobs_redirected_total", "JOINs sent to the host aggregator."),
	PS(reshapes, "reshapes_total", "Jobs told to run on fewer lanes (give-back)."),
	PS(reshaped, "reshaped_total", "Reshapes done: every rank moved on, the slots freed."),
	PS(jobs_aborted, "jobs_aborted_total",
	   "Jobs aborted: a rank fell silent while others waited."),
	PS(replicated, "replicated_total", "Primary: results sent as REPL to the replica."),
	PS(repl_stored, "repl_stored_total", "Replica: REPLs stored as a lane's result."),
	PS(repl_sent, "repl_sent_total", "Replica: REPLs sent on as RESULT."),
	PS(standby_jobs, "standby_jobs_total", "Replica: jobs admitted in standby."),
	PS(takeovers, "takeovers_total", "Replica: jobs taken over on FAILOVER."),
	PS(announce_repeats, "announce_repeats_total", "Replica: FAILOVER sent again to one rank."),
	PS(up_joins, "uplink_joins_total", "Rack: JOINs sent to the spine."),
	PS(up_data, "uplink_data_total", "Rack: partial sums sent to the spine."),
	PS(up_resends, "uplink_resends_total", "Rack: partial sums resent to the spine."),
	PS(up_bytes, "uplink_bytes_total",
	   "Rack: payload bytes of partial sums sent to the spine."),
	PS(up_results, "uplink_results_total", "Rack: spine RESULTs stored and sent down."),
	PS(up_fins, "uplink_fins_total", "Rack: FINs sent to the spine."),
	PS(up_errors, "uplink_errors_total", "Rack: spine ERRORs sent down."),
	PS(up_leaves, "uplink_leaves_total", "Rack: LEAVEs sent to the spine."),
};
#undef PS

_Static_assert(sizeof(pipe_rows) / sizeof(pipe_rows[0]) * sizeof(uint64_t) +
			       sizeof(((struct pipeline_stats *)0)->drop_wire) +
			       sizeof(((struct pipeline_stats *)0)->drop) ==
		       sizeof(struct pipeline_stats),
	       "a counter of struct pipeline_stats has no row in metrics.c's pipe_rows");

#define PORT(field, name, help, k, v) \
	{ \
		"ina_switch_port_" name, help, k, v, offsetof(struct ina_port_stats, field) \
	}

static const struct row port_rows[] = {
	PORT(rx_pkts, "received_packets_total", "Packets the port received.", NULL, NULL),
	PORT(rx_bytes, "received_bytes_total", "Bytes the port received.", NULL, NULL),
	PORT(rx_bursts, "receive_bursts_total", "Receive calls that returned packets.", NULL, NULL),
	PORT(tx_pkts, "sent_packets_total", "Packets the port sent (per destination).", NULL, NULL),
	PORT(tx_bytes, "sent_bytes_total", "Bytes the port sent.", NULL, NULL),
	PORT(tx_bursts, "send_bursts_total", "Send calls.", NULL, NULL),
	PORT(rx_drop, "receive_drops_total", "Packets dropped on receive (errors, no buffer).",
	     NULL, NULL),
	PORT(tx_drop, "send_drops_total", "Packets that could not be sent.", NULL, NULL),
	PORT(inject_drop, "faults_injected_total",
	     "Faults injected on purpose (test port options), by kind.", "kind", "drop"),
	PORT(inject_dup, "faults_injected_total", NULL, "kind", "dup"),
	PORT(inject_reorder, "faults_injected_total", NULL, "kind", "reorder"),
	PORT(inject_delay, "faults_injected_total", NULL, "kind", "delay"),
	PORT(inject_corrupt, "faults_injected_total", NULL, "kind", "corrupt"),
	PORT(rx_csum_bad, "checksum_errors_total", "Packets that failed the UDP checksum, dropped.",
	     NULL, NULL),
};
#undef PORT

_Static_assert(sizeof(port_rows) / sizeof(port_rows[0]) * sizeof(uint64_t) ==
		       sizeof(struct ina_port_stats),
	       "a counter of struct ina_port_stats has no row in metrics.c's port_rows");

#define NB(field, name, help, k, v) \
	{ \
		"ina_switch_port_" name, help, k, v, \
			offsetof(struct ina_port_dpdk_neigh_stats, field) \
	}

static const struct row neigh_rows[] = {
	NB(arp_rx, "arp_received_total", "ARP frames received.", NULL, NULL),
	NB(arp_reply_tx, "arp_replies_sent_total", "ARP replies sent for the port's address.", NULL,
	   NULL),
	NB(arp_request_tx, "arp_requests_sent_total", "ARP requests sent to resolve a peer.", NULL,
	   NULL),
	NB(arp_learned, "arp_learned_total", "Neighbour entries added or changed.", NULL, NULL),
	NB(icmp_echo, "icmp_echo_replies_total", "ICMP echo requests answered.", NULL, NULL),
	NB(not_ip, "discards_total",
	   "Frames received and discarded, by reason (also in receive drops).", "reason", "not_ip"),
	NB(not_ours, "discards_total", NULL, "reason", "not_ours"),
	NB(malformed, "discards_total", NULL, "reason", "malformed"),
	NB(link_down, "link_down_total", "Link state changes to down.", NULL, NULL),
	NB(csum_partial, "checksum_partial_total",
	   "UDP checksums the local kernel left partial, accepted.", NULL, NULL),
};
#undef NB

_Static_assert(
	sizeof(neigh_rows) / sizeof(neigh_rows[0]) * sizeof(uint64_t) ==
		sizeof(struct ina_port_dpdk_neigh_stats),
	"a counter of struct ina_port_dpdk_neigh_stats has no row in metrics.c's neigh_rows");

#define LC(field, name, help, k, v) \
	{ \
		"ina_switch_lcore_" name, help, k, v, offsetof(struct switch_lcore_stats, field) \
	}

/* rx_pkts and tx_pkts are the port's; first_work_ns and last_work_ns are
 * times on the monotonic clock, not counters. */
static const struct row lcore_rows[] = {
	LC(polls, "polls_total", "Polls of the partition's loop.", NULL, NULL),
	LC(idle_polls, "idle_polls_total", "Polls that found no work.", NULL, NULL),
	LC(sleeps, "sleeps_total", "Idle sleeps of the lcore.", NULL, NULL),
	LC(steered_out, "steered_total", "Packets moved between partitions' rings, by direction.",
	   "direction", "out"),
	LC(steered_in, "steered_total", NULL, "direction", "in"),
	LC(steer_drop, "steer_drops_total",
	   "Packets dropped: the ring to another partition was full.", NULL, NULL),
	LC(ctl_copies, "control_copies_total",
	   "Partition 0: JOIN/FIN/LEAVE copies sent; others: copies processed.", NULL, NULL),
	LC(ctl_drop, "control_drops_total",
	   "Partition 0: control packets dropped (no room or buffer for a copy).", NULL, NULL),
	LC(ctl_unauth, "control_unauthenticated_total",
	   "Partition 0, tenant mode: control packets whose tag failed, not copied.", NULL, NULL),
	LC(jobs_followed, "jobs_followed_total",
	   "Partitions other than 0: jobs freed on partition 0's word.", NULL, NULL),
};
#undef LC

_Static_assert((sizeof(lcore_rows) / sizeof(lcore_rows[0]) + 4) * sizeof(uint64_t) ==
		       sizeof(struct switch_lcore_stats),
	       "a counter of struct switch_lcore_stats has no row in metrics.c's lcore_rows");

/* A label value with '\', '"' and newline escaped, as the format says. */
static void
put_label_value(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\')
			fputs("\\\\", f);
		else if (*v == '"')
			fputs("\\\"", f);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

/* "# HELP" (its text with '\' and newline escaped) and "# TYPE". */
static void
family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s ", name);
	for (const char *c = help; *c; c++) {
		if (*c == '\\')
			fputs("\\\\", f);
		else if (*c == '\n')
			fputs("\\n", f);
		else
			fputc(*c, f);
	}
	fprintf(f, "\n# TYPE %s %s\n", name, type);
}

/* "name{k1="v1",...} " for 'nb' pairs (NULL keys skipped), then the value
 * is the caller's. */
static void
sample_start(FILE *f, const char *name, const char *const *kv, int nb)
{
	int first = 1;

	fputs(name, f);
	for (int i = 0; i < nb; i++) {
		if (!kv[2 * i])
			continue;
		fprintf(f, "%s%s=\"", first ? "{" : ",", kv[2 * i]);
		put_label_value(f, kv[2 * i + 1]);
		fputc('"', f);
		first = 0;
	}
	fputs(first ? " " : "} ", f);
}

static void
sample_u64(FILE *f, const char *name, const char *const *kv, int nb, uint64_t v)
{
	sample_start(f, name, kv, nb);
	fprintf(f, "%" PRIu64 "\n", v);
}

static void
sample_f(FILE *f, const char *name, const char *const *kv, int nb, double v)
{
	sample_start(f, name, kv, nb);
	fprintf(f, "%.3f\n", v);
}

/*
 * Writes the counters of 'rows' from 'nb_src' structs, src[i] at 'base' +
 * i * 'stride', as counters; with more than one source, each sample also
 * carries partition="i" (and lcore="L" when 'with_lcore').
 */
static void
write_rows(FILE *f, const struct row *rows, size_t nb_rows, const struct metrics_snapshot *s,
	   const void *base, size_t stride, uint16_t nb_src, int with_lcore)
{
	char part[8], lcore[12];

	for (size_t r = 0; r < nb_rows; r++) {
		if (r == 0 || strcmp(rows[r].name, rows[r - 1].name) != 0)
			family(f, rows[r].name, "counter", rows[r].help);
		for (uint16_t i = 0; i < nb_src; i++) {
			const char *src = (const char *)base + i * stride;
			const char *kv[6] = { rows[r].lkey, rows[r].lval, NULL, NULL, NULL, NULL };
			uint64_t v;

			if (nb_src > 1) {
				snprintf(part, sizeof(part), "%u", i);
				kv[2] = "partition";
				kv[3] = part;
				if (with_lcore) {
					snprintf(lcore, sizeof(lcore), "%u", s->part[i].lcore);
					kv[4] = "lcore";
					kv[5] = lcore;
				}
			}
			memcpy(&v, src + rows[r].off, sizeof(v));
			sample_u64(f, rows[r].name, kv, 3, v);
		}
	}
}

static void
write_drops(FILE *f, const struct pipeline_stats *st)
{
	const char *kv[2] = { "reason", NULL };

	family(f, "ina_switch_drops_total", "counter",
	       "Packets the pipeline dropped, by reason (the wire format's and the pipeline's).");
	for (int r = 1; r < INA_WIRE_REASON_MAX; r++) {
		kv[1] = ina_wire_reason_name((enum ina_wire_reason)r);
		sample_u64(f, "ina_switch_drops_total", kv, 1, st->drop_wire[r]);
	}
	for (int d = 0; d < PDROP_MAX; d++) {
		kv[1] = pipeline_drop_name((enum pipeline_drop)d);
		sample_u64(f, "ina_switch_drops_total", kv, 1, st->drop[d]);
	}
}

static void
write_switch(FILE *f, const struct metrics_snapshot *s)
{
	const char *info[4] = { "transport", s->transport ? s->transport : "unknown", "role",
				s->role ? s->role : "switch" };
	uint16_t nb_src = s->nb_parts > 1 ? s->nb_parts : 1;
	char part[8];
	const char *kv[2] = { NULL, part };

	family(f, "ina_switch_info", "gauge", "The switch's transport and role (value 1).");
	sample_u64(f, "ina_switch_info", info, 2, 1);
	family(f, "ina_switch_start_time_seconds", "gauge", "When the switch started, Unix time.");
	sample_f(f, "ina_switch_start_time_seconds", NULL, 0, s->start_time_s);
	family(f, "ina_switch_partitions", "gauge", "Pipeline partitions (lcores of --lcores).");
	sample_u64(f, "ina_switch_partitions", NULL, 0, nb_src);
	family(f, "ina_switch_slots", "gauge", "Slots of each partition's pool.");
	sample_u64(f, "ina_switch_slots", NULL, 0, s->slots);
	family(f, "ina_switch_slots_free", "gauge", "Slots no job reserves, per partition.");
	for (uint16_t i = 0; i < nb_src; i++) {
		snprintf(part, sizeof(part), "%u", i);
		kv[0] = s->nb_parts > 1 ? "partition" : NULL;
		sample_u64(f, "ina_switch_slots_free", kv, 1, s->part[i].slots_free);
	}
	family(f, "ina_switch_jobs_max", "gauge", "Jobs the switch serves at once (--max-jobs).");
	sample_u64(f, "ina_switch_jobs_max", NULL, 0, s->max_jobs);
	family(f, "ina_switch_jobs", "gauge", "Jobs admitted now.");
	sample_u64(f, "ina_switch_jobs", NULL, 0, s->nb_jobs);
}

/*
 * A job's labels into kv (which has room for two more pairs after them):
 * job="5", and in tenant mode the tenant's own id and tenant="alice".
 * Returns the pairs written.
 */
static unsigned
job_labels(const struct pipeline_job_info *j, char id[static 12], const char **kv)
{
	kv[0] = "job";
	kv[1] = id;
	if (!j->tenant) {
		snprintf(id, 12, "%" PRIu32, j->job_id);
		return 1;
	}
	snprintf(id, 12, "%" PRIu32, j->job_id & INA_TENANT_JOB_MAX);
	kv[2] = "tenant";
	kv[3] = j->tenant;
	return 2;
}

/* One per-job gauge family: 'expr' is job j's value. */
#define JOB_GAUGE(name, help, expr) \
	do { \
		family(f, "ina_switch_job_" name, "gauge", help); \
		for (uint16_t i = 0; i < s->nb_jobs; i++) { \
			const struct pipeline_job_info *j = &s->jobs[i]; \
			unsigned n = job_labels(j, id, kv); \
			sample_u64(f, "ina_switch_job_" name, kv, n, (uint64_t)(expr)); \
		} \
	} while (0)

static void
write_jobs(FILE *f, const struct metrics_snapshot *s)
{
	char id[12], sync[12];
	const char *kv[8];
	uint16_t nb_src = s->nb_parts > 1 ? s->nb_parts : 1;

	family(f, "ina_switch_job_info", "gauge",
	       "An admitted job: its encoding and synchronisation (value 1).");
	for (uint16_t i = 0; i < s->nb_jobs; i++) {
		const struct pipeline_job_info *j = &s->jobs[i];
		unsigned n = job_labels(j, id, kv);

		if (j->ssp)
			snprintf(sync, sizeof(sync), "ssp:%u", j->ssp);
		else
			snprintf(sync, sizeof(sync), "bsp");
		kv[2 * n] = "encoding";
		kv[2 * n + 1] = ina_wire_encoding_name(j->encoding);
		kv[2 * n + 2] = "sync";
		kv[2 * n + 3] = sync;
		sample_u64(f, "ina_switch_job_info", kv, n + 2, 1);
	}
	family(f, "ina_switch_job_state", "gauge",
	       "A job's state: 1 for the one it is in, 0 for the others.");
	for (uint16_t i = 0; i < s->nb_jobs; i++) {
		const struct pipeline_job_info *j = &s->jobs[i];
		unsigned n = job_labels(j, id, kv);

		kv[2 * n] = "state";
		for (int st = 0; st < PJOB_STATE_MAX; st++) {
			kv[2 * n + 1] = pipeline_job_state_name((enum pipeline_job_state)st);
			sample_u64(f, "ina_switch_job_state", kv, n + 1, j->state == st);
		}
	}
	JOB_GAUGE("epoch", "The epoch the switch gave the job.", j->epoch);
	JOB_GAUGE("world", "Ranks of the job.", j->world);
	JOB_GAUGE("ranks_joined", "Ranks that joined.", j->ranks_joined);
	JOB_GAUGE("ranks_finished", "Ranks that sent FIN.", j->ranks_finished);
	JOB_GAUGE("lanes", "Lanes the job was granted.", j->lanes);
	JOB_GAUGE("lanes_requested", "Lanes the job's JOIN asked.", j->want_lanes);
	JOB_GAUGE("slots", "Slots the job holds (in all partitions).", (uint64_t)j->slots * nb_src);
	JOB_GAUGE("weight", "The job's weight in the fair share (0 counts as 1).", j->weight);
	family(f, "ina_switch_job_round", "gauge",
	       "The highest round of any DATA of the job so far.");
	for (uint16_t i = 0; i < s->nb_jobs; i++) {
		const struct pipeline_job_info *j = &s->jobs[i];

		if (!j->has_round)
			continue;
		sample_u64(f, "ina_switch_job_round", kv, job_labels(j, id, kv), j->max_round);
	}
	family(f, "ina_switch_job_idle_seconds", "gauge", "Time since the job's last packet.");
	for (uint16_t i = 0; i < s->nb_jobs; i++)
		sample_f(f, "ina_switch_job_idle_seconds", kv, job_labels(&s->jobs[i], id, kv),
			 (double)s->jobs[i].idle_ns / 1e9);
}
#undef JOB_GAUGE

#define NB_ROWS(t) (sizeof(t) / sizeof((t)[0]))

int
metrics_write(const struct metrics_snapshot *s, FILE *f)
{
	uint16_t nb_parts = s->nb_parts > 1 ? s->nb_parts : 1;
	size_t stride = sizeof(s->part[0]);

	if (nb_parts > METRICS_PARTS_MAX)
		return -1;
	write_switch(f, s);
	write_rows(f, pipe_rows, NB_ROWS(pipe_rows), s, &s->pipe, 0, 1, 0);
	write_drops(f, &s->pipe);
	write_rows(f, port_rows, NB_ROWS(port_rows), s, &s->part[0].port, stride, nb_parts, 0);
	if (s->has_neigh)
		write_rows(f, neigh_rows, NB_ROWS(neigh_rows), s, &s->part[0].neigh, stride,
			   nb_parts, 0);
	if (nb_parts > 1)
		write_rows(f, lcore_rows, NB_ROWS(lcore_rows), s, &s->part[0].lc, stride, nb_parts,
			   1);
	write_jobs(f, s);
	return ferror(f) ? -1 : 0;
}
