/* SPDX-License-Identifier: MIT */
/* The ina-testbed report (report.h): ina-host reports and veth counters, as JSON and text. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/wire.h"
#include "report.h"

static const char *
encoding_name(uint8_t e)
{
	const char *name = ina_wire_encoding_name(e);

	return name ? name : "?";
}

static double
num(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

static json_int_t
integer(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? json_integer_value(v) : (json_int_t)json_number_value(v);
}

/* Every round of the host report 'rep' has sum_hash equal to want[]. */
static int
hashes_match(const json_t *rep, const uint64_t *want, uint32_t rounds)
{
	const json_t *pr = json_object_get(rep, "per_round");

	if (json_array_size(pr) < rounds)
		return 0;
	for (uint32_t i = 0; i < rounds; i++) {
		const char *h = json_string_value(
			json_object_get(json_array_get(pr, i), "sum_hash"));
		char w[17];

		snprintf(w, sizeof(w), "%016" PRIx64, want[i]);
		if (!h || strcmp(h, w) != 0)
			return 0;
	}
	return 1;
}

static json_t *
job_build(const struct report_run *r, uint32_t j)
{
	const struct topology *t = r->t;
	const struct topo_job *job = &t->jobs[j];
	json_t *ranks = json_array(), *rounds = json_array(), *hosts = json_array();
	json_t *out, **reps = calloc(job->nb_hosts, sizeof(*reps));
	json_int_t retx = 0, sent = 0, received = 0;
	double sum = 0, min = 0, max = 0;
	uint32_t nb_rounds = 0, nb_rounds_done;
	int verified = 1;

	if (!reps || !ranks || !rounds || !hosts)
		goto nomem;
	for (uint16_t k = 0; k < job->nb_hosts; k++) {
		const struct report_rank *rk = &r->ranks[j][k];
		json_error_t je;
		json_t *o;

		json_array_append_new(hosts, json_string(t->nodes[rk->node].name));
		reps[k] = rk->report ? json_load_file(rk->report, 0, &je) : NULL;
		o = json_pack("{s:i, s:s, s:b, s:s, s:i}", "rank", (int)k, "host",
			      t->nodes[rk->node].name, "exited_ok", rk->exited_ok, "how", rk->how,
			      "rounds_done", rk->rounds_done);
		if (reps[k]) {
			int v = json_is_true(json_object_get(reps[k], "verified"));
			int exited_ok = rk->exited_ok;

			if (rk->want_hash) {
				v = hashes_match(reps[k], rk->want_hash, job->rounds);
				/* ina-host exits 1 on its own (partial) check. */
				exited_ok |= v && strcmp(rk->how, "exit 1") == 0;
				json_object_set_new(o, "checked_by", json_string("testbed"));
			}
			json_object_set_new(o, "verified", json_boolean(v));
			json_object_set_new(o, "seconds", json_real(num(reps[k], "seconds")));
			json_object_set_new(o, "retransmits",
					    json_integer(integer(reps[k], "retransmits")));
			json_object_set_new(o, "bytes_sent",
					    json_integer(integer(reps[k], "bytes_sent")));
			json_object_set_new(o, "bytes_received",
					    json_integer(integer(reps[k], "bytes_received")));
			json_object_set_new(o, "injected_drops",
					    json_integer(integer(reps[k], "injected_drops")));
			json_object_set_new(o, "injected_delays",
					    json_integer(integer(reps[k], "injected_delays")));
			json_object_set_new(o, "transport",
					    json_incref(json_object_get(reps[k], "transport")));
			verified &= v && exited_ok;
			retx += integer(reps[k], "retransmits");
			sent += integer(reps[k], "bytes_sent");
			received += integer(reps[k], "bytes_received");
		} else {
			json_object_set_new(o, "verified", json_false());
			verified = 0;
		}
		json_array_append_new(ranks, o);
	}
	/* A round takes as long as its slowest rank. */
	for (uint32_t i = 0; i < job->rounds; i++) {
		double secs = 0;
		json_int_t rr = 0, bytes = 0;
		int all = 1;

		for (uint16_t k = 0; k < job->nb_hosts; k++) {
			json_t *pr = json_array_get(json_object_get(reps[k], "per_round"), i);

			if (!pr) {
				all = 0;
				continue;
			}
			if (num(pr, "seconds") > secs)
				secs = num(pr, "seconds");
			rr += integer(pr, "retransmits");
			bytes += integer(pr, "bytes_sent") + integer(pr, "bytes_received");
		}
		if (!all)
			break;
		json_array_append_new(rounds,
				      json_pack("{s:i, s:f, s:I, s:I}", "round", (int)i, "seconds",
						secs, "retransmits", rr, "bytes", bytes));
		if (nb_rounds == 0 || secs < min)
			min = secs;
		if (secs > max)
			max = secs;
		sum += secs;
		nb_rounds++;
	}
	if (nb_rounds < job->rounds)
		verified = 0;
	/* Without every report (ranks stopped early write none), the rounds
	 * every rank printed. */
	if (nb_rounds == 0) {
		int least = -1;

		for (uint16_t k = 0; k < job->nb_hosts; k++)
			if (least < 0 || r->ranks[j][k].rounds_done < least)
				least = r->ranks[j][k].rounds_done;
		nb_rounds_done = least > 0 ? (uint32_t)least : 0;
	} else {
		nb_rounds_done = nb_rounds;
	}
	{
		double mean = nb_rounds ? sum / nb_rounds : 0;
		double dense = (double)job->tensor_len * 4;

		out = json_pack(
			"{s:s, s:I, s:s, s:o, s:i, s:i, s:I, s:s, s:i, s:i, s:b, s:{s:f, s:f, "
			"s:f}, s:f, s:I, s:I, s:I, s:o, s:o}",
			"name", job->name, "job_id", (json_int_t)job->job_id, "switch",
			t->nodes[job->root].name, "hosts", hosts, "rounds", (int)job->rounds,
			"rounds_done", (int)nb_rounds_done, "elements", (json_int_t)job->tensor_len,
			"encoding", encoding_name(job->encoding), "block_size",
			(int)job->block_size, "lanes", (int)job->lanes, "verified", verified,
			"round_seconds", "mean", mean, "min", min, "max", max, "goodput_gbps",
			mean > 0 ? dense * 8 / mean / 1e9 : 0.0, "retransmits", retx, "bytes_sent",
			sent, "bytes_received", received, "per_round", rounds, "ranks", ranks);
		if (out && job->tenant)
			json_object_set_new(out, "tenant", json_string(job->tenant));
	}
	for (uint16_t k = 0; k < job->nb_hosts; k++)
		json_decref(reps[k]);
	free(reps);
	return out;
nomem:
	free(reps);
	json_decref(ranks);
	json_decref(rounds);
	json_decref(hosts);
	return NULL;
}

static json_t *
direction(const struct netns_if_stats *from, const struct netns_if_stats *to, double seconds)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:f}", "shaper_drops",
			 (json_int_t)from->shaper_drops, "bytes_sent", (json_int_t)from->tx_bytes,
			 "bytes_received", (json_int_t)to->rx_bytes, "packets_sent",
			 (json_int_t)from->tx_packets, "packets_received",
			 (json_int_t)to->rx_packets, "mean_mbps",
			 seconds > 0 ? (double)from->tx_bytes * 8 / seconds / 1e6 : 0.0);
}

json_t *
report_build(const struct report_run *r)
{
	const struct topology *t = r->t;
	json_t *jobs = json_array(), *links = json_array(), *rep;
	int verified = 1;

	for (uint32_t j = 0; j < t->nb_jobs; j++) {
		json_t *job = job_build(r, j);

		if (!job)
			goto nomem;
		verified &= json_is_true(json_object_get(job, "verified"));
		json_array_append_new(jobs, job);
	}
	for (uint32_t i = 0; i < t->nb_links; i++) {
		const struct topo_link *l = &t->links[i];
		const struct report_link *rl = &r->links[i];
		json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:f, s:i, s:b}", "a",
				      t->nodes[l->a].name, "b", t->nodes[l->b].name,
				      "bandwidth_bps", (json_int_t)l->bandwidth_bps, "latency_ns",
				      (json_int_t)l->latency_ns, "loss", l->loss, "mtu",
				      (int)l->mtu, "counted", rl->have);

		if (!o)
			goto nomem;
		if (rl->have) {
			json_object_set_new(o, "a_to_b", direction(&rl->a, &rl->b, r->seconds));
			json_object_set_new(o, "b_to_a", direction(&rl->b, &rl->a, r->seconds));
		}
		json_array_append_new(links, o);
	}
	rep = json_pack("{s:s, s:s, s:s, s:f, s:s, s:b, s:o, s:o}", "topology",
			t->name ? t->name : "", "file", t->file ? t->file : "", "transport",
			r->transport, "seconds", r->seconds, "outcome", r->outcome, "verified",
			verified && t->nb_jobs > 0 && strcmp(r->outcome, "ok") == 0, "jobs", jobs,
			"links", links);
	return rep;
nomem:
	json_decref(jobs);
	json_decref(links);
	return NULL;
}

int
report_verified(const json_t *rep)
{
	return json_is_true(json_object_get(rep, "verified"));
}

static const char *
rate(uint64_t bps, char *buf, size_t size)
{
	if (bps == 0)
		snprintf(buf, size, "unshaped");
	else if (bps >= 1000000000ull && bps % 1000000000ull == 0)
		snprintf(buf, size, "%" PRIu64 " Gbit/s", (uint64_t)(bps / 1000000000u));
	else if (bps >= 1000000ull)
		snprintf(buf, size, "%g Mbit/s", (double)bps / 1e6);
	else
		snprintf(buf, size, "%g kbit/s", (double)bps / 1e3);
	return buf;
}

static void
print_job(const json_t *job, FILE *f)
{
	const json_t *rs = json_object_get(job, "round_seconds");
	const json_t *pr = json_object_get(job, "per_round"),
		     *hosts = json_object_get(job, "hosts");
	const json_t *ranks = json_object_get(job, "ranks"), *v;
	size_t i;

	const char *tenant = json_string_value(json_object_get(job, "tenant"));

	fprintf(f, "job %s (id %" JSON_INTEGER_FORMAT "%s%s) on switch %s, %zu hosts:",
		json_string_value(json_object_get(job, "name")), integer(job, "job_id"),
		tenant ? " of tenant " : "", tenant ? tenant : "",
		json_string_value(json_object_get(job, "switch")), json_array_size(hosts));
	json_array_foreach(hosts, i, v) fprintf(f, " %s", json_string_value(v));
	fprintf(f,
		"\n  %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT
		" rounds of %" JSON_INTEGER_FORMAT " %s elements (B %" JSON_INTEGER_FORMAT
		", %" JSON_INTEGER_FORMAT " lanes): %s\n",
		integer(job, "rounds_done"), integer(job, "rounds"), integer(job, "elements"),
		json_string_value(json_object_get(job, "encoding")), integer(job, "block_size"),
		integer(job, "lanes"),
		json_is_true(json_object_get(job, "verified")) ? "every sum verified" : "FAILED");
	fprintf(f,
		"  round time mean %.3f ms, min %.3f, max %.3f; goodput %.3f Gb/s per host; "
		"retransmits %" JSON_INTEGER_FORMAT "; bytes sent %.3f MB, received %.3f MB\n",
		num(rs, "mean") * 1e3, num(rs, "min") * 1e3, num(rs, "max") * 1e3,
		num(job, "goodput_gbps"), integer(job, "retransmits"),
		(double)integer(job, "bytes_sent") / 1e6,
		(double)integer(job, "bytes_received") / 1e6);
	json_array_foreach(pr, i, v)
	{
		if (i == 20) {
			fprintf(f, "    (%zu more rounds in the JSON report)\n",
				json_array_size(pr) - i);
			break;
		}
		fprintf(f,
			"    round %3" JSON_INTEGER_FORMAT "  %9.3f ms  retx %5" JSON_INTEGER_FORMAT
			"  %10.3f MB\n",
			integer(v, "round"), num(v, "seconds") * 1e3, integer(v, "retransmits"),
			(double)integer(v, "bytes") / 1e6);
	}
	json_array_foreach(ranks, i, v) if (!json_is_true(json_object_get(v, "verified")) ||
					    !json_is_true(json_object_get(v, "exited_ok")))
		fprintf(f, "  rank %zu on %s: %s, %s, %" JSON_INTEGER_FORMAT " rounds done\n", i,
			json_string_value(json_object_get(v, "host")),
			json_is_true(json_object_get(v, "verified")) ? "verified" : "not verified",
			json_string_value(json_object_get(v, "how")), integer(v, "rounds_done"));
}

void
report_print(const json_t *rep, FILE *f)
{
	const json_t *jobs = json_object_get(rep, "jobs"), *links = json_object_get(rep, "links");
	const json_t *v;
	size_t i;

	fprintf(f, "ina-testbed: %s (%s) over %s: %s in %.3f s\n",
		json_string_value(json_object_get(rep, "topology")),
		json_string_value(json_object_get(rep, "file")),
		json_string_value(json_object_get(rep, "transport")),
		json_string_value(json_object_get(rep, "outcome")), num(rep, "seconds"));
	json_array_foreach(jobs, i, v) print_job(v, f);
	fprintf(f,
		"links (bytes sent each way, as the veths counted them, mean rate over the run):\n");
	json_array_foreach(links, i, v)
	{
		const json_t *ab = json_object_get(v, "a_to_b"), *ba = json_object_get(v, "b_to_a");
		char bw[32];

		fprintf(f, "  %-8s <-> %-8s %-14s %7.3f ms %5.2f%% loss:",
			json_string_value(json_object_get(v, "a")),
			json_string_value(json_object_get(v, "b")),
			rate((uint64_t)integer(v, "bandwidth_bps"), bw, sizeof(bw)),
			(double)integer(v, "latency_ns") / 1e6, num(v, "loss") * 100);
		if (!ab || !ba) {
			fprintf(f, " not counted\n");
			continue;
		}
		fprintf(f, "  up %8.3f MB (%6.1f Mbit/s)  down %8.3f MB (%6.1f Mbit/s)",
			(double)integer(ab, "bytes_sent") / 1e6, num(ab, "mean_mbps"),
			(double)integer(ba, "bytes_sent") / 1e6, num(ba, "mean_mbps"));
		if (integer(ab, "shaper_drops") || integer(ba, "shaper_drops"))
			fprintf(f,
				"  shaper drops %" JSON_INTEGER_FORMAT " up, %" JSON_INTEGER_FORMAT
				" down",
				integer(ab, "shaper_drops"), integer(ba, "shaper_drops"));
		fputc('\n', f);
	}
}
