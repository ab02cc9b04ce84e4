/* SPDX-License-Identifier: MIT */
/*
 * struct ina_stats by name, for bindings (ina.h: ina_stat_name, ina_stat):
 * one table of every numeric counter (its name as in ina.h, its type, its
 * offset), read out of ina_get_stats(). "size" is the struct's own and
 * "aggregator" a string (ina_stats_aggregator()): neither is a row.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ina.h"
#include "stat_names.h"

#define R(type, field) \
	{ \
#field, type, offsetof(struct ina_stats, field), \
			sizeof(((struct ina_stats *)0)->field) \
	}

static const struct stat_row rows[] = {
	R(ST_U64, rounds),
	R(ST_U64, bytes_sent),
	R(ST_U64, bytes_received),
	R(ST_U64, packets_sent),
	R(ST_U64, packets_received),
	R(ST_U64, data_packets),
	R(ST_U64, empty_packets),
	R(ST_U64, retransmits),
	R(ST_U64, stalls),
	R(ST_U64, waits),
	R(ST_U64, failovers),
	R(ST_DOUBLE, failover_silence_ms),
	R(ST_U64, dropped),
	R(ST_U64, stale),
	R(ST_U64, tx_bursts),
	R(ST_U64, rx_bursts),
	R(ST_U64, inject_drop),
	R(ST_U64, inject_dup),
	R(ST_U64, inject_reorder),
	R(ST_U64, inject_delay),
	R(ST_U64, inject_corrupt),
	R(ST_U64, csum_drops),
	R(ST_U64, sparse_rounds),
	R(ST_U64, sparse_blocks),
	R(ST_U64, sparse_blocks_sent),
	R(ST_U64, sparse_blocks_deferred),
	R(ST_DOUBLE, density_sent),
	R(ST_U16, block_size),
	R(ST_DOUBLE, residual_norm),
	R(ST_DOUBLE, residual_norm_total),
	R(ST_U64, ssp_missed),
	R(ST_U32, partition_tag),
	R(ST_U64, partition_rebalances),
	R(ST_U16, lanes),
	R(ST_U16, lanes_asked),
	R(ST_U64, rtt_samples),
	R(ST_DOUBLE, rtt_median_us),
	R(ST_DOUBLE, rtt_p99_us),
	R(ST_DOUBLE, rtt_max_us),
	R(ST_DOUBLE, rtt_mean_us),
	R(ST_U16, sub_block),
	R(ST_U16, max_block),
};

#undef R

unsigned
stat_row_count(void)
{
	return sizeof(rows) / sizeof(rows[0]);
}

const struct stat_row *
stat_row_at(unsigned i)
{
	return i < stat_row_count() ? &rows[i] : NULL;
}

const char *
ina_stat_name(unsigned i)
{
	return i < stat_row_count() ? rows[i].name : NULL;
}

/* The row's value in 's' as a double (exact up to 2^53). Read by memcpy:
 * the offset is the field's own, but the char pointer carries no alignment a
 * compiler could see (clang's -Wcast-align). */
static double
row_value(const struct stat_row *r, const struct ina_stats *s)
{
	const char *p = (const char *)s + r->offset;
	uint64_t u64;
	uint32_t u32;
	uint16_t u16;
	double d;

	switch (r->type) {
	case ST_U64:
		memcpy(&u64, p, sizeof(u64));
		return (double)u64;
	case ST_U32:
		memcpy(&u32, p, sizeof(u32));
		return u32;
	case ST_U16:
		memcpy(&u16, p, sizeof(u16));
		return u16;
	case ST_DOUBLE:
		memcpy(&d, p, sizeof(d));
		return d;
	}
	return 0;
}

int
ina_stat(const struct ina_ctx *ctx, const char *name, double *value)
{
	struct ina_stats s;

	if (!ctx || !name || !value)
		return -EINVAL;
	for (unsigned i = 0; i < stat_row_count(); i++) {
		if (strcmp(rows[i].name, name) == 0) {
			ina_get_stats(ctx, &s);
			*value = row_value(&rows[i], &s);
			return 0;
		}
	}
	return -EINVAL;
}
