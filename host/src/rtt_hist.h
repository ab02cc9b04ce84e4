/* SPDX-License-Identifier: MIT */
/*
 * A summary of round trips (a block's send to its result) that costs no
 * allocation and a few instructions a sample: a log-scale histogram with
 * RTT_HIST_SUB buckets an octave (each bucket spans 1/RTT_HIST_SUB of its
 * octave, so a quantile read from it is within 6.25% of the true value),
 * plus the exact count, sum, minimum and maximum. Pure: the engine keeps one
 * (struct engine_stats), libina reads its median, p99 and maximum.
 */
#ifndef INA_RTT_HIST_H
#define INA_RTT_HIST_H

#include <stdint.h>

#define RTT_HIST_SUB_BITS 3
#define RTT_HIST_SUB (1u << RTT_HIST_SUB_BITS)
/* Samples of 2^RTT_HIST_TOP ns (about 18 minutes) and more share one last
 * bucket, which reads as the maximum (exact). */
#define RTT_HIST_TOP 40
#define RTT_HIST_BUCKETS ((RTT_HIST_TOP - RTT_HIST_SUB_BITS + 1) * RTT_HIST_SUB + 1)

struct rtt_hist {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t min_ns; /* 0 when count is 0 */
	uint64_t max_ns;
	uint64_t bucket[RTT_HIST_BUCKETS];
};

/* Adds one sample of 'ns'. */
void rtt_hist_add(struct rtt_hist *h, uint64_t ns);

/* Adds every sample of 'src' into 'dst' (several switches' engines). */
void rtt_hist_merge(struct rtt_hist *dst, const struct rtt_hist *src);

/* The 'q'-quantile (0..1) in ns: the middle of the bucket that holds it,
 * clamped to [min, max] (so q = 0 and q = 1 are exact); 0 when empty. */
uint64_t rtt_hist_quantile(const struct rtt_hist *h, double q);

/* The mean in ns, 0 when empty. */
double rtt_hist_mean(const struct rtt_hist *h);

#endif
