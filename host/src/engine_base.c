/* SPDX-License-Identifier: MIT */
/*
 * The bottom layer of the host engine (engine_int.h): failing an operation
 * with a sentence, starting a control packet, the common header of the
 * packets a worker sends, and the round-trip estimate behind the adaptive
 * retransmission timeout.
 */
#include <endian.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine_int.h"

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
