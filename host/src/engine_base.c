/* SPDX-License-Identifier: MIT */
/*
 * The bottom layer of the host engine (engine_int.h): failing an operation
 * with a sentence, starting a control packet, the common header of the
 * packets a worker sends, a block's payload packed and unpacked (whole, or
 * cut into sub-blocks: docs/PROTOCOL.md 2.7), and the round-trip estimate
 * behind the adaptive retransmission timeout.
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine_int.h"
#include "ina/subblock.h"

void
engine_fail(struct engine *e, int err, const char *fmt, ...)
{
	va_list ap;

	if (e->err)
		return;
	e->err = err;
	va_start(ap, fmt);
	vsnprintf(e->errmsg, sizeof(e->errmsg), fmt, ap);
	va_end(ap);
}

void
engine_ctl_start(struct engine *e, int phase, uint64_t now)
{
	e->phase = phase;
	e->ctl_need_send = 1;
	e->ctl_tries = 0;
	e->ctl_rto_ns = e->cfg.rto_ns;
	e->ctl_start_ns = now;
}

/* Common header of a worker-sent packet. */
void
engine_fill_hdr(const struct engine *e, struct ina_hdr *h, uint8_t type)
{
	memset(h, 0, sizeof(*h));
	h->version = INA_WIRE_VERSION;
	h->type = type;
	h->encoding = e->cfg.encoding;
	h->job_id = e->cfg.job_id;
	h->epoch = e->params.epoch;
	h->rank = e->cfg.rank;
	h->token = e->cfg.token;
}

void
engine_set_cut(struct engine *e, uint8_t sub_log)
{
	e->next_sub_log = sub_log;
}

int
engine_cut_check(const struct engine *e, uint16_t block_size, uint8_t sub_log)
{
	if (!sub_log)
		return 0;
	/* A full block with its mask must fit a packet of the pool. */
	if (sub_log > INA_SUB_LOG_MAX || block_size & ((1u << sub_log) - 1) ||
	    (uint64_t)INA_HDR_SIZE + ina_wire_mask_bytes(sub_log) +
			    (uint64_t)block_size * e->enc->elem_size >
		    e->cfg.pool->buf_size)
		return -EINVAL;
	return 0;
}

size_t
engine_encode_block(const struct engine *e, uint8_t *payload, struct ina_hdr *h, const float *src,
		    int scale)
{
	struct ina_sub_cut c;
	struct ina_sub_mask m;

	if (!h->sub_log) {
		if (e->cfg.work)
			payload_work_encode(e->cfg.work, e->enc, payload, src, h->n_elems, scale);
		else
			e->enc->encode(payload, src, h->n_elems, scale);
		return (size_t)h->n_elems * e->enc->elem_size;
	}
	c = ina_sub_cut(h->block_size, h->sub_log, h->n_elems);
	ina_sub_mask_nonzero(&m, src, &c);
	/* A block sent as data is in the union, as without a cut: an
	 * all-zero one (a block-sparse list may hold one) carries its first
	 * sub-block, so a mask is never empty (PROTOCOL 2.7). */
	if (ina_sub_mask_empty(&m))
		m.w[0] = 1;
	return ina_sub_encode(payload, src, &m, &c, e->enc, scale);
}

/* Scales x[0..n) by 'avg' (1 / world), as the uncut path does. */
static void
scale_avg(float *x, uint32_t n, float avg)
{
	for (uint32_t i = 0; i < n; i++)
		x[i] *= avg;
}

size_t
engine_decode_block(const struct engine *e, float *dst, const struct ina_hdr *h,
		    const uint8_t *payload, uint16_t n, int scale, int zero_absent, float avg)
{
	struct ina_sub_cut c;
	struct ina_sub_mask m;
	uint32_t from = 0, first, len, present = 0;

	if (!h->sub_log) {
		e->enc->decode(dst, payload, n, scale);
		if (avg != 1.0f)
			scale_avg(dst, n, avg);
		return (size_t)n * e->enc->elem_size;
	}
	c = ina_sub_cut(h->block_size, h->sub_log, n);
	m = ina_sub_decode(dst, payload, &c, e->enc, scale, zero_absent);
	/* Only what is present is scaled: zeros stay what they are. */
	while (ina_sub_next_run(&m, &c, &from, &first, &len)) {
		uint32_t start, k;

		ina_sub_run_elems(&c, first, len, &start, &k);
		if (avg != 1.0f)
			scale_avg(dst + start, k, avg);
		present += k;
	}
	return c.mask_bytes + (size_t)present * e->enc->elem_size;
}

/*
 * Round-trip estimate (Jacobson/Karels, as TCP's RFC 6298) from results that
 * answer a packet sent once (Karn's rule). The round trip of a lane includes
 * waiting for the slowest worker, which is what the timeout must cover.
 * Every sample also goes into the stats' histogram (rtt_hist.h), the
 * latency a block sees from its send to its result.
 */
void
engine_rtt_sample(struct engine *e, uint64_t sample)
{
	uint64_t rto;

	rtt_hist_add(&e->st.rtt, sample);
	if (!e->srtt_ns) {
		e->srtt_ns = sample;
		e->rttvar_ns = sample / 2;
	} else {
		uint64_t dev = sample > e->srtt_ns ? sample - e->srtt_ns : e->srtt_ns - sample;

		e->rttvar_ns = (3 * e->rttvar_ns + dev) / 4;
		e->srtt_ns = (7 * e->srtt_ns + sample) / 8;
	}
	rto = e->srtt_ns + 4 * e->rttvar_ns;
	if (rto < e->cfg.rto_min_ns)
		rto = e->cfg.rto_min_ns;
	if (rto > e->cfg.rto_max_ns)
		rto = e->cfg.rto_max_ns;
	e->rto_ns = rto;
}

/*
 * What a current WAIT tells the engine, in both consistency modes: whom the
 * switch waits on, for which lane and block, and when it was heard. A LIVE
 * WAIT vouches that the ranks it names are paused, not dead (the switch
 * would have aborted the job): waiting on is progress.
 */
void
engine_note_wait(struct engine *e, const struct ina_hdr *h, const uint8_t *payload, uint64_t now)
{
	uint64_t missing_be;

	memcpy(&missing_be, payload, sizeof(missing_be));
	e->wait_missing = be64toh(missing_be);
	e->wait_lane = h->lane;
	e->wait_block = h->block;
	e->wait_heard_ns = now;
	if (h->status == INA_WAIT_LIVE && e->wait_missing)
		e->live_ns = now;
}
