/* SPDX-License-Identifier: MIT */
/* The round-trip summary (rtt_hist.h): a log-scale histogram. */
#include "rtt_hist.h"

/*
 * Bucket of 'ns': below 2 x RTT_HIST_SUB one bucket a nanosecond; above, the
 * octave's first RTT_HIST_SUB_BITS bits after the leading one pick one of
 * RTT_HIST_SUB buckets in it.
 */
static unsigned
bucket_of(uint64_t ns)
{
	unsigned o;

	if (ns < 2 * RTT_HIST_SUB)
		return (unsigned)ns;
	o = 63u - (unsigned)__builtin_clzll(ns); /* ns in [2^o, 2^(o+1)) */
	if (o >= RTT_HIST_TOP)
		return RTT_HIST_BUCKETS - 1;
	return (o - RTT_HIST_SUB_BITS + 1) * RTT_HIST_SUB +
	       (unsigned)((ns >> (o - RTT_HIST_SUB_BITS)) & (RTT_HIST_SUB - 1));
}

/* The lowest value of bucket 'b' and its width. */
static void
bucket_span(unsigned b, uint64_t *lo, uint64_t *width)
{
	unsigned o;

	if (b < 2 * RTT_HIST_SUB) {
		*lo = b;
		*width = 1;
		return;
	}
	o = b / RTT_HIST_SUB + RTT_HIST_SUB_BITS - 1;
	*width = 1ull << (o - RTT_HIST_SUB_BITS);
	*lo = (1ull << o) + (uint64_t)(b % RTT_HIST_SUB) * *width;
}

void
rtt_hist_add(struct rtt_hist *h, uint64_t ns)
{
	if (!h->count || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->count++;
	h->sum_ns += ns;
	h->bucket[bucket_of(ns)]++;
}

void
rtt_hist_merge(struct rtt_hist *dst, const struct rtt_hist *src)
{
	if (!src->count)
		return;
	if (!dst->count || src->min_ns < dst->min_ns)
		dst->min_ns = src->min_ns;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
	dst->count += src->count;
	dst->sum_ns += src->sum_ns;
	for (unsigned b = 0; b < RTT_HIST_BUCKETS; b++)
		dst->bucket[b] += src->bucket[b];
}

uint64_t
rtt_hist_quantile(const struct rtt_hist *h, double q)
{
	uint64_t rank, seen = 0, lo, width, mid;
	unsigned b;

	if (!h->count)
		return 0;
	if (!(q > 0))
		return h->min_ns;
	if (q >= 1)
		return h->max_ns;
	/* The sample of rank ceil(q x count), counting from 1. */
	rank = (uint64_t)(q * (double)h->count);
	if ((double)rank < q * (double)h->count)
		rank++;
	if (rank == 0)
		rank = 1;
	for (b = 0; b < RTT_HIST_BUCKETS - 1; b++) {
		seen += h->bucket[b];
		if (seen >= rank)
			break;
	}
	bucket_span(b, &lo, &width);
	mid = b == RTT_HIST_BUCKETS - 1 ? h->max_ns : lo + width / 2;
	if (mid < h->min_ns)
		mid = h->min_ns;
	if (mid > h->max_ns)
		mid = h->max_ns;
	return mid;
}

double
rtt_hist_mean(const struct rtt_hist *h)
{
	return h->count ? (double)h->sum_ns / (double)h->count : 0.0;
}
