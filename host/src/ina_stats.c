/* SPDX-License-Identifier: MIT */
/*
 * What an open context tells (ina.h): its statistics, the host aggregator
 * it runs on, the last error's sentence, its epoch and transport.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ina_int.h"

void
ina_get_stats_size(const struct ina_ctx *ctx, struct ina_stats *out, size_t size)
{
	struct ina_stats full;
	struct ina_stats *s = &full;
	struct engine_stats est;
	const struct engine_stats *es = &est;
	const struct ina_port_stats *ps = &ctx->port->stats;

	pthread_mutex_lock((pthread_mutex_t *)&ctx->lock);
	egroup_stats(ctx->eg, &est);
	memset(s, 0, sizeof(*s));
	s->rounds = es->rounds;
	s->bytes_sent = es->bytes_sent;
	s->bytes_received = es->bytes_recv;
	s->packets_sent = es->pkts_sent;
	s->packets_received = es->pkts_recv;
	s->data_packets = es->data_sent;
	s->empty_packets = es->empty_sent;
	s->retransmits = es->retransmits;
	s->stalls = es->stalls;
	s->waits = es->waits;
	s->ssp_missed = es->ssp_missed;
	s->lanes = egroup_lanes(ctx->eg); /* after a give-back too */
	s->lanes_asked = ctx->lanes_asked;
	snprintf(s->aggregator, sizeof(s->aggregator), "%s", ctx->aggregator);
	s->failovers = es->failovers;
	s->failover_silence_ms = (double)es->failover_silence_ns / 1e6;
	s->dropped = es->bad;
	s->stale = es->stale;
	s->tx_bursts = ps->tx_bursts;
	s->rx_bursts = ps->rx_bursts;
	s->inject_drop = ps->inject_drop;
	s->inject_dup = ps->inject_dup;
	s->inject_reorder = ps->inject_reorder;
	s->inject_delay = ps->inject_delay;
	s->inject_corrupt = ps->inject_corrupt;
	s->csum_drops = ps->rx_csum_bad;
	s->sparse_rounds = ctx->sp.rounds;
	s->sparse_blocks = ctx->sp.blocks;
	s->sparse_blocks_sent = ctx->sp.blocks_sent;
	s->sparse_blocks_deferred = ctx->sp.blocks_deferred;
	s->density_sent = ctx->sp.density;
	s->block_size = ctx->last_block_size;
	s->max_block = ctx->block_size;
	s->sub_block = (uint16_t)(ctx->last_block_size >> ctx->last_sub_log);
	s->partition_tag = ctx->last_part_tag;
	s->residual_norm = ctx->sp.residual_norm;
	s->rtt_samples = es->rtt.count;
	s->rtt_median_us = (double)rtt_hist_quantile(&es->rtt, 0.5) / 1e3;
	s->rtt_p99_us = (double)rtt_hist_quantile(&es->rtt, 0.99) / 1e3;
	s->rtt_max_us = (double)es->rtt.max_ns / 1e3;
	s->rtt_mean_us = rtt_hist_mean(&es->rtt) / 1e3;
	{
		const struct sparse_tensor *t;
		uint32_t it = 0;
		double m = 0;

		while ((t = tensor_table_next(&ctx->tensors, &it))) {
			if (!t->tr)
				continue;
			s->partition_rebalances += tround_stats(t->tr)->rebalances;
			m += tround_stats(t->tr)->residual_mass;
		}
		s->residual_norm_total = sqrt(m);
	}
	pthread_mutex_unlock((pthread_mutex_t *)&ctx->lock);
	if (size < sizeof(full.size))
		return;
	full.size = (uint32_t)(size < sizeof(full) ? size : sizeof(full));
	memcpy(out, &full, full.size);
}

const char *
ina_stats_aggregator(const struct ina_ctx *ctx)
{
	return ctx->aggregator;
}

const char *
ina_last_error(const struct ina_ctx *ctx)
{
	return ctx->errmsg;
}

uint32_t
ina_epoch(const struct ina_ctx *ctx)
{
	return engine_epoch(ENG0(ctx));
}

const char *
ina_transport(const struct ina_ctx *ctx)
{
	return ctx->port->ops->type;
}
