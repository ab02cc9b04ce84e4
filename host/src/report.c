/* SPDX-License-Identifier: MIT */
/* The ina-host JSON report (report.h), built with jansson. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>

#include "report.h"

int
report_write(const char *path, const struct report *r)
{
	const struct ina_stats *s = &r->stats;
	double bytes_dense = (double)r->elements * 4.0 * r->rounds;
	double goodput = r->seconds > 0 ? bytes_dense * 8 / r->seconds / 1e9 : 0;
	json_t *rounds = json_array();
	json_t *root;
	int ret;

	for (uint32_t i = 0; i < r->rounds; i++) {
		const struct report_round *rr = &r->per_round[i];
		char hash[17];

		snprintf(hash, sizeof(hash), "%016" PRIx64, rr->sum_hash);

		json_array_append_new(
			rounds,
			json_pack("{s:I, s:f, s:I, s:I, s:I, s:f, s:f, s:I, s:I, s:I, s:I, s:b, "
				  "s:f, s:s}",
				  "round", (json_int_t)rr->round, "seconds", rr->seconds,
				  "bytes_sent", (json_int_t)rr->bytes_sent, "bytes_received",
				  (json_int_t)rr->bytes_received, "retransmits",
				  (json_int_t)rr->retransmits, "density_sent", rr->density_sent,
				  "residual_norm", rr->residual_norm, "block_size",
				  (json_int_t)rr->block_size, "sub_block",
				  (json_int_t)rr->sub_block, "blocks_deferred",
				  (json_int_t)rr->blocks_deferred, "partition_tag",
				  (json_int_t)rr->partition_tag, "verified", rr->verified,
				  "max_err_ratio", rr->max_err_ratio, "sum_hash", hash));
	}
	root = json_pack("{s:I, s:I, s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:b, s:I, s:I, s:I, "
			 "s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:I}",
			 "rounds", (json_int_t)r->rounds, "elements", (json_int_t)r->elements,
			 "world", (json_int_t)r->world, "transport", r->transport, "workload",
			 r->workload, "encoding", r->encoding, "job", (json_int_t)r->job, "rank",
			 (json_int_t)r->rank, "lanes", (json_int_t)r->lanes, "block_size",
			 (json_int_t)r->block_size, "verified", r->verified, "bytes_sent",
			 (json_int_t)s->bytes_sent, "bytes_received", (json_int_t)s->bytes_received,
			 "packets_sent", (json_int_t)s->packets_sent, "packets_received",
			 (json_int_t)s->packets_received, "retransmits", (json_int_t)s->retransmits,
			 "waits", (json_int_t)s->waits, "dropped", (json_int_t)s->dropped,
			 "mean_tx_batch",
			 s->tx_bursts ? (double)s->packets_sent / (double)s->tx_bursts : 0.0,
			 "mean_rx_batch",
			 s->rx_bursts ? (double)s->packets_received / (double)s->rx_bursts : 0.0,
			 "seconds", r->seconds, "goodput_gbps", goodput, "bytes_dense", bytes_dense,
			 "injected_drops", (json_int_t)s->inject_drop);
	if (!root || !rounds) {
		json_decref(root);
		json_decref(rounds);
		return -ENOMEM;
	}
	if (r->density >= 0)
		json_object_set_new(root, "density", json_real(r->density));
	json_object_set_new(root, "injected_dups", json_integer((json_int_t)s->inject_dup));
	json_object_set_new(root, "injected_reorders", json_integer((json_int_t)s->inject_reorder));
	json_object_set_new(root, "injected_delays", json_integer((json_int_t)s->inject_delay));
	json_object_set_new(root, "injected_corruptions",
			    json_integer((json_int_t)s->inject_corrupt));
	json_object_set_new(root, "checksum_drops", json_integer((json_int_t)s->csum_drops));
	json_object_set_new(root, "port", json_string(r->port ? r->port : ""));
	json_object_set_new(root, "sparsifier", json_string(r->sparsifier ? r->sparsifier : "off"));
	json_object_set_new(root, "density_sent",
			    json_real(s->sparse_blocks ? (double)s->sparse_blocks_sent /
								 (double)s->sparse_blocks
						       : 1.0));
	json_object_set_new(root, "residual_norm", json_real(s->residual_norm));
	json_object_set_new(root, "stalls", json_integer((json_int_t)s->stalls));
	json_object_set_new(root, "failovers", json_integer((json_int_t)s->failovers));
	json_object_set_new(root, "failover_silence_ms", json_real(s->failover_silence_ms));
	json_object_set_new(root, "blocks_deferred",
			    json_integer((json_int_t)s->sparse_blocks_deferred));
	json_object_set_new(root, "data_packets", json_integer((json_int_t)s->data_packets));
	json_object_set_new(root, "empty_packets", json_integer((json_int_t)s->empty_packets));
	json_object_set_new(root, "lanes_asked", json_integer((json_int_t)r->lanes_asked));
	/* A block's send to its result, over the run (ina_stats rtt_*). */
	json_object_set_new(root, "rtt_samples", json_integer((json_int_t)s->rtt_samples));
	json_object_set_new(root, "rtt_median_us", json_real(s->rtt_median_us));
	json_object_set_new(root, "rtt_p99_us", json_real(s->rtt_p99_us));
	json_object_set_new(root, "rtt_max_us", json_real(s->rtt_max_us));
	json_object_set_new(root, "rtt_mean_us", json_real(s->rtt_mean_us));
	/* Where the job was aggregated: "" on the switch, else the host aggregator. */
	json_object_set_new(root, "aggregator", json_string(s->aggregator));
	json_object_set_new(root, "per_round", rounds);
	ret = json_dump_file(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	json_decref(root);
	return ret == 0 ? 0 : -EIO;
}
