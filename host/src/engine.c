/* SPDX-License-Identifier: MIT */
/*
 * The host engine (engine.h). Each lane has at most one packet in flight: the
 * packet for the block the switch last announced (or the lane's first). A
 * packet is never stored: it is built again from the caller's tensor when it
 * must be resent, so retransmission costs no memory. A result for the lane's
 * block writes the sum (or zeros for a header-only result) into the output,
 * zeroes the blocks the announced next pointer skips, and makes the lane send
 * its answer to the newly announced block.
 *
 * With a replica, the primary P and the replica R: the packets go to P, the
 * results come back through R, and P's silence while packets are outstanding
 * (no RESULT through R, no WAIT from P, for failover_ns) makes the engine ask
 * R to take over with FAILOVER. R's announcement (a FAILOVER with the new
 * epoch) switches the engine to R, which answers every resent packet either
 * into the block it opened afresh or from the result it stored last.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "ina.h"
#include "ina/block.h"
#include "ina/encode.h"
#include "ina/encoding.h"
#include "ina/lane.h"
#include "ina/util.h"

struct lane {
	uint8_t active;		/* has blocks this round */
	uint8_t done;		/* END received this round */
	uint8_t ver;		/* version bit of the slot's next block */
	uint8_t need_send;	/* a first send is due */
	uint8_t has_data;	/* my packet for 'block' carries a payload */
	uint8_t retx;		/* the packet in flight was resent (no RTT sample) */
	uint8_t resend;		/* resend now, whatever the timer (a failover) */
	int16_t cur_exp;	/* agreed exponent of 'block' (i32) */
	int16_t my_exp;		/* exponent of 'my_next' (i32) */
	uint32_t block;		/* the block my packet in flight answers */
	uint32_t my_next;	/* my next non-zero block after 'block' */
	uint64_t sent_ns;
	uint64_t rto_ns;
};

/* ssp: one lane of one round in flight (one block: the lane's). */
struct sop_lane {
	uint8_t active;		/* the round has this lane's block */
	uint8_t done;		/* its result accepted */
	uint8_t need_send;
	uint8_t retx;
	uint8_t has_data;	/* my block is non-zero */
	uint64_t sent_ns;
	uint64_t rto_ns;
};

/* ssp: one round in flight. */
struct sop {
	uint8_t active;
	enum engine_op op;
	uint32_t round;
	uint32_t tensor_id;
	uint32_t n;
	uint32_t nb_blocks;
	uint16_t block_size;
	uint16_t lanes_left;
	float bound;
	const float *in;
	float *out;
	uint8_t *missed;	/* per block: my part did not count */
	struct sop_lane *lanes;
};

struct engine {
	struct engine_config cfg;
	const struct ina_encoding_ops *enc; /* the row of cfg.encoding */
	struct ina_job_params params;
	int phase;		/* enum engine_phase */
	int err;		/* < 0 once failed */
	char errmsg[512];
	struct engine_stats st;

	/* Control packets (JOIN, FIN, LEAVE). */
	uint8_t ctl_need_send;
	uint32_t ctl_tries;
	uint64_t ctl_sent_ns;
	uint64_t ctl_rto_ns;
	uint64_t ctl_start_ns;

	/* The operation in progress. */
	uint32_t tensor_id;
	uint32_t round;
	const float *in;
	float *out;
	uint32_t n;
	uint16_t block_size;
	uint32_t nb_blocks;
	enum engine_op op;
	uint16_t lanes_left;
	uint16_t tx_cursor;	/* lane where the next engine_tx() scan starts */
	uint64_t srtt_ns;	/* smoothed round trip, 0 before the first sample */
	uint64_t rttvar_ns;
	uint64_t rto_ns;	/* current first timeout of a lane's packet */
	uint64_t last_progress_ns;
	uint64_t last_heard_ns;
	uint64_t wait_missing;	/* ranks the last WAIT named */
	uint64_t wait_heard_ns;	/* when */
	uint64_t live_ns;	/* the last WAIT flagged LIVE naming ranks: the
				 * switch vouches they live, which counts as
				 * progress for timeout_ns (not for pause_ns) */
	uint64_t last_tx_ns;	/* the last packet sent (keepalive_ns) */
	uint32_t wait_lane, wait_block;
	float bound;		/* the result filter's bound, 0 for none */
	uint8_t *deferred;	/* per block: came back DEFERRED */
	uint8_t last_type;	/* type of the last packet the switch sent us */
	uint8_t stall_reported;	/* this stall was described already */
	uint8_t stall_pending;	/* stall_msg not yet taken (engine_stall) */
	char stall_msg[512];
	float next_bound;	/* engine_set_result_filter(), for the next op */
	uint8_t *next_deferred;
	struct lane *lanes;

	/* ssp (cfg.ssp = S): S + 1 rounds in flight at most. */
	struct sop *sops;	/* S + 1 */
	struct sop_lane *sop_lanes;	/* (S + 1) x lanes */
	uint8_t *ssp_ver;	/* lanes x INA_SSP_SETS(S): version bit of each
				 * lane's slot of each set */
	uint8_t *next_missed;	/* engine_set_missed(), for the next round */
	uint16_t nb_sops;	/* rounds in flight */

	/* The replica (cfg.replica.len != 0). */
	uint8_t standby;	/* enum standby */
	uint8_t failed_over;	/* the switch followed is the replica */
	uint8_t fo_active;	/* the primary is silent: FAILOVERs go out */
	uint8_t fo_need_send;
	uint32_t fo_tries;
	uint64_t fo_sent_ns;
	uint64_t fo_rto_ns;
	uint64_t sw_heard_ns;	/* last packet for this job from the switch
				 * followed (for P: a RESULT through R too) */
	uint64_t probe_ns;	/* last probe of the replica (tx_probe) */

	/* Give-back (a RESULT flagged RESHAPE): from round reshape_round on,
	 * reshape_lanes lanes; 0: none pending. */
	uint16_t reshape_lanes;
	uint32_t reshape_round;

	/* A REDIRECT from the switch (no slots for the job there). */
	uint8_t redirected;	/* a REDIRECT came: the target below is set */
	uint32_t redirect_ipv4;
	uint16_t redirect_port;
};

enum standby {
	STANDBY_NONE = 0,	/* no replica, or it no longer stands by */
	STANDBY_JOINING,	/* P admitted the job: STANDBY JOIN to R */
	STANDBY_UP,		/* R stands by */
};

static int ssp_allreduce(struct engine *e, uint32_t tensor_id, const float *in, float *out,
			 size_t n, uint16_t block_size, enum engine_op op, uint64_t now);
static void ssp_on_result(struct engine *e, const struct ina_hdr *h, const uint8_t *payload,
			  uint64_t now);
static void ssp_on_wait(struct engine *e, const struct ina_hdr *h, const uint8_t *payload,
			uint64_t now);
static uint16_t ssp_tx(struct engine *e, uint64_t now, struct ina_pkt **out, uint16_t max);
static uint64_t ssp_deadline(const struct engine *e, uint64_t d);

/* FIN and LEAVE are tried this many times before the engine closes anyway. */
#define CTL_GOODBYE_TRIES 4

void
engine_config_init(struct engine_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->lanes = 64;
	cfg->max_block = 1024;
	cfg->encoding = INA_ENC_F32;
	cfg->world = 1;
	cfg->rto_ns = 5000000ull;
	cfg->rto_min_ns = 5000000ull;
	cfg->rto_max_ns = 200000000ull;
	cfg->timeout_ns = 10000000000ull;
	cfg->pause_ns = 600ull * 1000000000ull;
	cfg->failover_ns = 1000000000ull;
}

struct engine *
engine_create(const struct engine_config *cfg)
{
	struct engine *e;

	if (!cfg->pool || cfg->world == 0 || cfg->world > INA_MAX_WORLD || cfg->rank >= cfg->world ||
	    cfg->lanes == 0 || cfg->max_block == 0 || !ina_wire_elem_size(cfg->encoding) ||
	    cfg->ssp > INA_SSP_MAX ||
	    (cfg->ssp && (cfg->encoding == INA_ENC_I32 || cfg->replica.len)) ||
	    cfg->sw.len == 0 || cfg->rto_min_ns == 0 || cfg->rto_ns < cfg->rto_min_ns ||
	    cfg->rto_max_ns < cfg->rto_ns ||
	    (cfg->replica.len &&
	     (cfg->failover_ns == 0 || ina_peer_equal(&cfg->replica, &cfg->sw))) ||
	    (uint64_t)INA_HDR_SIZE + (uint64_t)cfg->max_block * ina_wire_elem_size(cfg->encoding) >
		    cfg->pool->buf_size) {
		errno = EINVAL;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->lanes = calloc(cfg->lanes, sizeof(*e->lanes));
	if (!e->lanes) {
		free(e);
		return NULL;
	}
	if (cfg->ssp) {
		size_t sets = cfg->ssp + 1u;

		e->sops = calloc(sets, sizeof(*e->sops));
		e->sop_lanes = calloc(sets * cfg->lanes, sizeof(*e->sop_lanes));
		e->ssp_ver = calloc((size_t)INA_SSP_SETS(cfg->ssp) * cfg->lanes, 1);
		if (!e->sops || !e->sop_lanes || !e->ssp_ver) {
			engine_destroy(e);
			errno = ENOMEM;
			return NULL;
		}
		for (size_t k = 0; k < sets; k++)
			e->sops[k].lanes = e->sop_lanes + k * cfg->lanes;
	}
	e->cfg = *cfg;
	e->enc = ina_encoding(cfg->encoding);
	e->params.job_id = cfg->job_id;
	e->params.token = cfg->token;
	e->params.world = cfg->world;
	e->params.lanes = cfg->lanes;
	e->params.max_block = cfg->max_block;
	e->params.encoding = cfg->encoding;
	e->phase = ENGINE_IDLE;
	e->rto_ns = cfg->rto_ns;
	return e;
}

void
engine_destroy(struct engine *e)
{
	if (!e)
		return;
	free(e->lanes);
	free(e->sops);
	free(e->sop_lanes);
	free(e->ssp_ver);
	free(e);
}

static void
fail(struct engine *e, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
fail(struct engine *e, int err, const char *fmt, ...)
{
	va_list ap;

	if (e->err)
		return;
	e->err = err;
	va_start(ap, fmt);
	vsnprintf(e->errmsg, sizeof(e->errmsg), fmt, ap);
	va_end(ap);
}

int
engine_phase(const struct engine *e)
{
	return e->phase;
}

int
engine_error(const struct engine *e)
{
	return e->err;
}

const char *
engine_error_msg(const struct engine *e)
{
	return e->errmsg;
}

uint16_t
engine_lanes(const struct engine *e)
{
	return e->cfg.lanes;
}

uint32_t
engine_round(const struct engine *e)
{
	return e->round;
}

uint32_t
engine_epoch(const struct engine *e)
{
	return e->params.epoch;
}

const struct engine_stats *
engine_stats(const struct engine *e)
{
	return &e->st;
}

int
engine_failed_over(const struct engine *e)
{
	return e->failed_over;
}

static int
has_replica(const struct engine *e)
{
	return e->cfg.replica.len != 0;
}

/* The switch this engine talks to: the primary, or the replica after a failover. */
static const struct ina_peer *
cur_sw(const struct engine *e)
{
	return e->failed_over ? &e->cfg.replica : &e->cfg.sw;
}

/* The replica stands by: it can take over, and hears the goodbye too. */
static int
standing_by(const struct engine *e)
{
	return e->standby == STANDBY_UP && !e->failed_over;
}

static void
ctl_start(struct engine *e, int phase, uint64_t now)
{
	e->phase = phase;
	e->ctl_need_send = 1;
	e->ctl_tries = 0;
	e->ctl_rto_ns = e->cfg.rto_ns;
	e->ctl_start_ns = now;
}

int
engine_join(struct engine *e, uint64_t now_ns)
{
	if (e->phase != ENGINE_IDLE || e->err)
		return -EBUSY;
	ctl_start(e, ENGINE_JOINING, now_ns);
	return 0;
}

int
engine_redirect_target(const struct engine *e, uint32_t *ipv4, uint16_t *port)
{
	if (!e->redirected)
		return 0;
	*ipv4 = e->redirect_ipv4;
	*port = e->redirect_port;
	return 1;
}

int
engine_redirect(struct engine *e, const struct ina_peer *peer, uint64_t now_ns)
{
	if (e->phase != ENGINE_REDIRECTED || e->err || !peer->len || peer->len >= INA_PEER_SIZE)
		return -EBUSY;
	e->cfg.sw = *peer;
	e->st.redirects++;
	ctl_start(e, ENGINE_JOINING, now_ns);
	return 0;
}

void
engine_finish(struct engine *e, uint64_t now_ns)
{
	if (e->err || e->phase == ENGINE_RUNNING || e->phase == ENGINE_JOINING ||
	    e->phase == ENGINE_REDIRECTED) {
		engine_leave(e, now_ns);
		return;
	}
	if (e->phase == ENGINE_READY)
		ctl_start(e, ENGINE_FINISHING, now_ns);
	else
		e->phase = ENGINE_CLOSED;
}

void
engine_leave(struct engine *e, uint64_t now_ns)
{
	/* Only a joined worker has anything to tell the switch. */
	if (e->params.epoch && e->phase != ENGINE_CLOSED)
		ctl_start(e, ENGINE_LEAVING, now_ns);
	else
		e->phase = ENGINE_CLOSED;
}

/* The scale of a block whose largest exponent is 'exp' (scaled encodings). */
static int
block_scale(const struct engine *e, int exp)
{
	return e->enc->scaled ? ina_enc_i32_scale(exp, e->cfg.world) : 0;
}

/* Exponent of block 'b' of my input (i32), INA_EXP_ZERO for END. */
static int16_t
block_exp(struct engine *e, uint32_t b)
{
	int x;

	if (!e->enc->scaled || b == INA_BLOCK_END)
		return 0;
	x = ina_enc_i32_exp(e->in + (size_t)b * e->block_size,
			    ina_wire_block_elems(e->n, e->block_size, b));
	if (x == INA_EXP_NONFINITE) {
		fail(e, INA_ENONFINITE,
		     "job %" PRIu32 " rank %u round %" PRIu32 ": block %" PRIu32
		     " holds a NaN or infinity, which the i32 encoding cannot carry",
		     e->cfg.job_id, e->cfg.rank, e->round, b);
		return 0;
	}
	return (int16_t)x;
}

static uint32_t
next_nonzero(const struct engine *e, uint32_t from)
{
	if (from >= e->nb_blocks)
		return INA_BLOCK_END;
	return ina_block_next_nonzero(e->in, e->n, e->block_size, e->cfg.lanes, from);
}

void
engine_set_result_filter(struct engine *e, float bound, uint8_t *deferred)
{
	e->next_bound = deferred && bound > 0.0f ? bound : 0.0f;
	e->next_deferred = e->next_bound > 0.0f ? deferred : NULL;
}

int
engine_allreduce(struct engine *e, uint32_t tensor_id, const float *in, float *out, size_t n,
		 uint16_t block_size, enum engine_op op, uint64_t now_ns)
{
	if (e->err)
		return e->err;
	if (e->cfg.ssp)
		return ssp_allreduce(e, tensor_id, in, out, n, block_size, op, now_ns);
	if (e->phase != ENGINE_READY)
		return -EBUSY;
	if (n == 0 || n >= INA_BLOCK_OPEN || block_size == 0 || block_size > e->cfg.max_block ||
	    !in || !out)
		return -EINVAL;
	if (e->reshape_lanes && (int32_t)(e->round - e->reshape_round) >= 0) {
		/* The switch gives slots back: fewer lanes from this round on. */
		e->cfg.lanes = e->reshape_lanes;
		e->params.lanes = e->reshape_lanes;
		e->reshape_lanes = 0;
		e->st.reshapes++;
	}
	e->tensor_id = tensor_id;
	e->in = in;
	e->out = out;
	e->n = (uint32_t)n;
	e->block_size = block_size;
	e->nb_blocks = ina_wire_nb_blocks(e->n, block_size);
	e->op = op;
	e->bound = e->next_bound;
	e->deferred = e->next_deferred;
	e->stall_reported = 0;
	e->next_bound = 0.0f;
	e->next_deferred = NULL;
	if (e->deferred)
		memset(e->deferred, 0, e->nb_blocks);
	e->lanes_left = 0;
	e->last_progress_ns = now_ns;
	e->wait_missing = 0;
	e->sw_heard_ns = now_ns;
	e->probe_ns = 0;
	e->fo_active = 0;
	for (uint16_t l = 0; l < e->cfg.lanes; l++) {
		struct lane *ln = &e->lanes[l];

		ln->active = ina_lane_active(l, e->nb_blocks);
		ln->done = !ln->active;
		if (!ln->active)
			continue;
		e->lanes_left++;
		ln->block = ina_lane_first(e->cfg.encoding, l);
		if (ln->block == INA_BLOCK_OPEN) {
			ln->my_next = next_nonzero(e, l);
			ln->has_data = 0;
		} else {
			uint32_t first = next_nonzero(e, l);

			ln->has_data = first == l;
			ln->my_next = ln->has_data ? next_nonzero(e, l + e->cfg.lanes) : first;
		}
		ln->my_exp = block_exp(e, ln->my_next);
		ln->need_send = 1;
		ln->resend = 0;
		ln->rto_ns = e->rto_ns;
	}
	if (e->err)
		return e->err;
	e->phase = ENGINE_RUNNING;
	return 0;
}

/* Common header of a worker-sent packet. */
static void
fill_hdr(const struct engine *e, struct ina_hdr *h, uint8_t type)
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

static struct ina_pkt *
build_ctl(struct engine *e)
{
	struct ina_pkt *p = ina_pkt_alloc(e->cfg.pool);
	struct ina_hdr h;

	if (!p)
		return NULL;
	switch (e->phase) {
	case ENGINE_JOINING:
		fill_hdr(e, &h, INA_T_JOIN);
		/* To the replica: stand by for the epoch the switch gave. */
		if (e->standby == STANDBY_JOINING)
			h.flags = INA_F_STANDBY;
		else
			h.epoch = 0;
		h.block_size = e->cfg.max_block;
		ina_wire_encode_hdr(&h, p->data);
		ina_wire_encode_join(e->cfg.world, e->cfg.lanes, e->cfg.max_block,
				     p->data + INA_HDR_SIZE);
		ina_wire_join_set_ssp(p->data + INA_HDR_SIZE, e->cfg.ssp);
		ina_wire_join_set_weight(p->data + INA_HDR_SIZE, e->cfg.weight);
		p->len = INA_HDR_SIZE + sizeof(struct ina_wire_join);
		p->peer = e->standby == STANDBY_JOINING ? e->cfg.replica : e->cfg.sw;
		return p;
	case ENGINE_FINISHING:
		fill_hdr(e, &h, INA_T_FIN);
		h.round = e->round;
		ina_wire_encode_hdr(&h, p->data);
		p->len = INA_HDR_SIZE;
		break;
	default:
		fill_hdr(e, &h, INA_T_LEAVE);
		h.round = e->round;
		ina_wire_encode_hdr(&h, p->data);
		p->len = INA_HDR_SIZE;
		break;
	}
	p->peer = *cur_sw(e);
	return p;
}

static struct ina_pkt *
build_data(struct engine *e, uint16_t l, int retx)
{
	struct lane *ln = &e->lanes[l];
	struct ina_pkt *p = ina_pkt_alloc(e->cfg.pool);
	struct ina_hdr h;
	uint16_t n = 0;

	if (!p)
		return NULL;
	fill_hdr(e, &h, INA_T_DATA);
	h.flags = (uint8_t)(ln->ver | (retx ? INA_F_RETX : 0));
	h.lane = l;
	h.tensor_id = e->tensor_id;
	h.round = e->round;
	h.tensor_len = e->n;
	h.block = ln->block;
	h.next = ln->my_next;
	h.block_size = e->block_size;
	h.exp = ln->my_exp;
	if (e->bound > 0.0f && ln->block != INA_BLOCK_OPEN)
		h.bound = ina_enc_bound(e->cfg.encoding, e->bound,
					ina_enc_i32_scale(ln->cur_exp, e->cfg.world));
	if (ln->has_data)
		n = ina_wire_block_elems(e->n, e->block_size, ln->block);
	h.n_elems = n;
	ina_wire_encode_hdr(&h, p->data);
	p->len = INA_HDR_SIZE;
	if (n) {
		const float *src = e->in + (size_t)ln->block * e->block_size;

		e->enc->encode(p->data + INA_HDR_SIZE, src, n, block_scale(e, ln->cur_exp));
		p->len += (uint32_t)(n * e->enc->elem_size);
		e->st.data_sent++;
	} else {
		e->st.empty_sent++;
	}
	p->peer = *cur_sw(e);
	return p;
}

static void
finish_op(struct engine *e)
{
	if (e->op == ENGINE_AVG) {
		float scale = 1.0f / (float)e->cfg.world;

		for (uint32_t i = 0; i < e->n; i++)
			e->out[i] *= scale;
	}
	e->st.rounds++;
	e->round++;
	e->phase = ENGINE_READY;
}

/*
 * Round-trip estimate (Jacobson/Karels, as TCP's RFC 6298) from results that
 * answer a packet sent once (Karn's rule). The round trip of a lane includes
 * waiting for the slowest worker, which is what the timeout must cover.
 */
static void
rtt_sample(struct engine *e, uint64_t sample)
{
	uint64_t rto;

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

static void
on_result(struct engine *e, const struct ina_hdr *h, const uint8_t *payload, uint64_t now)
{
	struct lane *ln = &e->lanes[h->lane];
	uint32_t zero_from;

	if (e->phase != ENGINE_RUNNING || !ln->active || ln->done || h->round != e->round ||
	    h->tensor_id != e->tensor_id || h->block != ln->block ||
	    (h->flags & INA_F_VER) != ln->ver || h->tensor_len != e->n ||
	    h->block_size != e->block_size) {
		e->st.stale++;
		return;
	}
	if (h->next > ln->my_next) {
		/* The switch announces the smallest next block of all workers
		 * (END the largest), so never one past this worker's own: that
		 * sum would lack this worker's block, and the lane would send
		 * packets whose next pointer is not past their block. */
		fail(e, INA_EPROTO,
		     "job %" PRIu32 " rank %u round %" PRIu32 ": lane %u block %" PRIu32
		     " came back with next block %" PRIu32 ", past this worker's next non-zero"
		     " block %" PRIu32,
		     e->cfg.job_id, e->cfg.rank, e->round, h->lane, h->block, h->next, ln->my_next);
		return;
	}
	if (h->block == INA_BLOCK_OPEN) {
		zero_from = h->lane;
	} else {
		float *dst = e->out + (size_t)h->block * e->block_size;
		uint16_t n = ina_wire_block_elems(e->n, e->block_size, h->block);

		if (h->flags & INA_F_DEFERRED) {
			if (!e->deferred) {
				fail(e, INA_EPROTO,
				     "job %" PRIu32 " rank %u round %" PRIu32 ": lane %u block %" PRIu32
				     " came back deferred, but this worker set no result filter",
				     e->cfg.job_id, e->cfg.rank, e->round, h->lane, h->block);
				return;
			}
			e->deferred[h->block] = 1;
			e->st.deferred++;
		}
		if (h->n_elems == 0)
			memset(dst, 0, (size_t)n * sizeof(float));
		else
			e->enc->decode(dst, payload, n, block_scale(e, ln->cur_exp));
		zero_from = h->block + e->cfg.lanes;
	}
	if (h->flags & INA_F_SATURATED) {
		e->st.saturated++;
		fail(e, INA_ESATURATED,
		     "job %" PRIu32 " rank %u round %" PRIu32 ": the i32 sum of lane %u block %" PRIu32
		     " saturated",
		     e->cfg.job_id, e->cfg.rank, e->round, h->lane, h->block);
	}
	ina_block_zero_range(e->out, e->n, e->block_size, e->cfg.lanes, zero_from, h->next);
	if (!ln->retx && now >= ln->sent_ns)
		rtt_sample(e, now - ln->sent_ns);
	ln->ver ^= 1;
	e->last_progress_ns = now;
	e->stall_reported = 0;
	e->wait_missing = 0;
	if (h->next == INA_BLOCK_END) {
		ln->done = 1;
		if (--e->lanes_left == 0)
			finish_op(e);
		return;
	}
	ln->block = h->next;
	ln->cur_exp = h->exp;
	if (ln->my_next == h->next) {
		ln->has_data = 1;
		ln->my_next = next_nonzero(e, h->next + e->cfg.lanes);
		ln->my_exp = block_exp(e, ln->my_next);
	} else {
		ln->has_data = 0;
	}
	ln->need_send = 1;
	ln->rto_ns = e->rto_ns;
}

/*
 * ssp (cfg.ssp = S): up to S + 1 rounds in flight, each in its own sop, each
 * lane one block (the lane's own) sent once and answered once. Round r uses
 * the switch's slot set r mod INA_SSP_SETS(S) of each lane, with a version
 * bit per lane and set. docs/PROTOCOL.md 6.7.
 */
void
engine_set_missed(struct engine *e, uint8_t *missed)
{
	e->next_missed = missed;
}

int
engine_in_flight(const struct engine *e, uint32_t round)
{
	if (!e->cfg.ssp)
		return e->phase == ENGINE_RUNNING && e->round == round;
	for (uint32_t k = 0; k <= e->cfg.ssp; k++)
		if (e->sops[k].active && e->sops[k].round == round)
			return 1;
	return 0;
}

uint16_t
engine_nb_in_flight(const struct engine *e)
{
	return e->cfg.ssp ? e->nb_sops : e->phase == ENGINE_RUNNING;
}

int
engine_can_start(const struct engine *e)
{
	int free_op = 0;

	if (e->err)
		return 0;
	if (!e->cfg.ssp)
		return e->phase == ENGINE_READY;
	if (e->phase != ENGINE_READY && e->phase != ENGINE_RUNNING)
		return 0;
	for (uint32_t k = 0; k <= e->cfg.ssp; k++) {
		if (!e->sops[k].active)
			free_op = 1;
		else if ((uint32_t)(e->round - e->sops[k].round) > e->cfg.ssp)
			return 0;
	}
	return free_op;
}

static struct sop *
ssp_op_of(struct engine *e, uint32_t round)
{
	for (uint32_t k = 0; k <= e->cfg.ssp; k++)
		if (e->sops[k].active && e->sops[k].round == round)
			return &e->sops[k];
	return NULL;
}

static uint8_t *
ssp_ver_of(struct engine *e, uint16_t lane, uint32_t round)
{
	uint32_t sets = INA_SSP_SETS(e->cfg.ssp);

	return &e->ssp_ver[(size_t)lane * sets + round % sets];
}

static int
ssp_allreduce(struct engine *e, uint32_t tensor_id, const float *in, float *out, size_t n,
	      uint16_t block_size, enum engine_op op, uint64_t now)
{
	struct sop *o = NULL;

	if (e->phase != ENGINE_READY && e->phase != ENGINE_RUNNING)
		return -EBUSY;
	if (n == 0 || n >= INA_BLOCK_OPEN || block_size == 0 || block_size > e->cfg.max_block ||
	    !in || !out || ina_wire_nb_blocks((uint32_t)n, block_size) > e->cfg.lanes)
		return -EINVAL;
	/* The bound: no round more than S back may still be in flight. */
	for (uint32_t k = 0; k <= e->cfg.ssp; k++) {
		if (!e->sops[k].active)
			o = o ? o : &e->sops[k];
		else if ((uint32_t)(e->round - e->sops[k].round) > e->cfg.ssp)
			return -EBUSY;
	}
	if (!o)
		return -EBUSY;
	o->active = 1;
	o->op = op;
	o->round = e->round++;
	o->tensor_id = tensor_id;
	o->n = (uint32_t)n;
	o->block_size = block_size;
	o->nb_blocks = ina_wire_nb_blocks(o->n, block_size);
	o->in = in;
	o->out = out;
	o->bound = e->next_bound;
	o->missed = e->next_missed ? e->next_missed : e->next_deferred;
	e->next_bound = 0.0f;
	e->next_deferred = NULL;
	e->next_missed = NULL;
	if (o->missed)
		memset(o->missed, 0, o->nb_blocks);
	o->lanes_left = 0;
	for (uint16_t l = 0; l < e->cfg.lanes; l++) {
		struct sop_lane *sl = &o->lanes[l];

		memset(sl, 0, sizeof(*sl));
		sl->active = l < o->nb_blocks;
		if (!sl->active)
			continue;
		sl->has_data = ina_block_next_nonzero(in, o->n, block_size, e->cfg.lanes, l) == l;
		sl->need_send = 1;
		sl->rto_ns = e->rto_ns;
		o->lanes_left++;
	}
	if (e->nb_sops++ == 0) {
		e->last_progress_ns = now;
		e->stall_reported = 0;
		e->wait_missing = 0;
	}
	e->phase = ENGINE_RUNNING;
	return 0;
}

static struct ina_pkt *
ssp_build(struct engine *e, const struct sop *o, uint16_t l, int retx)
{
	const struct sop_lane *sl = &o->lanes[l];
	struct ina_pkt *p = ina_pkt_alloc(e->cfg.pool);
	struct ina_hdr h;
	uint16_t n = 0;

	if (!p)
		return NULL;
	fill_hdr(e, &h, INA_T_DATA);
	h.flags = (uint8_t)(*ssp_ver_of(e, l, o->round) | (retx ? INA_F_RETX : 0));
	h.lane = l;
	h.tensor_id = o->tensor_id;
	h.round = o->round;
	h.tensor_len = o->n;
	h.block = l;
	h.next = INA_BLOCK_END;
	h.block_size = o->block_size;
	if (o->bound > 0.0f)
		h.bound = ina_enc_bound(e->cfg.encoding, o->bound, 0);
	if (sl->has_data)
		n = ina_wire_block_elems(o->n, o->block_size, l);
	h.n_elems = n;
	ina_wire_encode_hdr(&h, p->data);
	p->len = INA_HDR_SIZE;
	if (n) {
		const float *src = o->in + (size_t)l * o->block_size;

		e->enc->encode(p->data + INA_HDR_SIZE, src, n, 0);
		p->len += (uint32_t)(n * e->enc->elem_size);
		e->st.data_sent++;
	} else {
		e->st.empty_sent++;
	}
	p->peer = *cur_sw(e);
	return p;
}

static void
ssp_finish_op(struct engine *e, struct sop *o)
{
	if (o->op == ENGINE_AVG) {
		float scale = 1.0f / (float)e->cfg.world;

		for (uint32_t i = 0; i < o->n; i++)
			o->out[i] *= scale;
	}
	o->active = 0;
	e->st.rounds++;
	if (--e->nb_sops == 0)
		e->phase = ENGINE_READY;
}

static void
ssp_on_result(struct engine *e, const struct ina_hdr *h, const uint8_t *payload, uint64_t now)
{
	struct sop *o = ssp_op_of(e, h->round);
	struct sop_lane *sl = o ? &o->lanes[h->lane] : NULL;
	uint8_t *ver = ssp_ver_of(e, h->lane, h->round);
	size_t esize = e->enc->elem_size;
	int mine = 1;
	float *dst;
	uint16_t n;

	/* A result of a round not started here yet is stale: this rank's own
	 * packet asks for it again, and the switch keeps it (ssp.c). So is one
	 * for a lane whose packet has not gone out yet: the switch must see
	 * every rank's packet of every round, as it acknowledges the older
	 * results of the set (ssp.c); the answer to it is taken instead. */
	if (e->phase != ENGINE_RUNNING || !o || !sl->active || sl->done || sl->need_send ||
	    h->tensor_id != o->tensor_id || h->block != h->lane || h->next != INA_BLOCK_END ||
	    (h->flags & INA_F_VER) != *ver || h->tensor_len != o->n ||
	    h->block_size != o->block_size) {
		e->st.stale++;
		return;
	}
	if (h->flags & INA_F_PARTIAL) {
		uint64_t contrib_be;

		memcpy(&contrib_be, payload + (size_t)h->n_elems * esize, sizeof(contrib_be));
		mine = (int)(be64toh(contrib_be) >> e->cfg.rank & 1);
	}
	if (!mine || (h->flags & INA_F_DEFERRED)) {
		if (!o->missed) {
			fail(e, INA_EPROTO,
			     "job %" PRIu32 " rank %u round %" PRIu32 ": lane %u block %" PRIu32
			     " came back %s, but this worker has no residual for it",
			     e->cfg.job_id, e->cfg.rank, h->round, h->lane, h->block,
			     mine ? "deferred" : "without its part (ssp)");
			return;
		}
		o->missed[h->block] = 1;
		if (mine)
			e->st.deferred++;
		else
			e->st.ssp_missed++;
	}
	dst = o->out + (size_t)h->block * o->block_size;
	n = ina_wire_block_elems(o->n, o->block_size, h->block);
	if (h->n_elems == 0)
		memset(dst, 0, (size_t)n * sizeof(float));
	else
		e->enc->decode(dst, payload, n, 0);
	if (!sl->retx && now >= sl->sent_ns)
		rtt_sample(e, now - sl->sent_ns);
	*ver ^= 1;
	sl->done = 1;
	e->last_progress_ns = now;
	e->stall_reported = 0;
	e->wait_missing = 0;
	if (--o->lanes_left == 0)
		ssp_finish_op(e, o);
}

static void
ssp_on_wait(struct engine *e, const struct ina_hdr *h, const uint8_t *payload, uint64_t now)
{
	struct sop *o = ssp_op_of(e, h->round);
	uint64_t missing_be;

	e->st.waits++;
	if (e->phase != ENGINE_RUNNING || !o || !o->lanes[h->lane].active ||
	    o->lanes[h->lane].done || h->tensor_id != o->tensor_id || h->block != h->lane) {
		e->st.stale++;
		return;
	}
	memcpy(&missing_be, payload, sizeof(missing_be));
	e->wait_missing = be64toh(missing_be);
	e->wait_lane = h->lane;
	e->wait_block = h->block;
	o->lanes[h->lane].sent_ns = now;
	e->wait_heard_ns = now;
	if (h->status == INA_WAIT_LIVE && e->wait_missing)
		e->live_ns = now;
}

/* The packets due: first sends and retransmissions, oldest round first. */
static uint16_t
ssp_tx(struct engine *e, uint64_t now, struct ina_pkt **out, uint16_t max)
{
	uint16_t nb = 0;

	for (uint32_t age = e->cfg.ssp + 1u; age > 0 && nb < max; age--) {
		struct sop *o = ssp_op_of(e, e->round - age);

		if (!o)
			continue;
		for (uint16_t l = 0; l < e->cfg.lanes && nb < max; l++) {
			struct sop_lane *sl = &o->lanes[l];
			struct ina_pkt *p;
			int retx;

			if (!sl->active || sl->done)
				continue;
			retx = !sl->need_send;
			if (retx && now - sl->sent_ns < sl->rto_ns)
				continue;
			p = ssp_build(e, o, l, retx);
			if (!p)
				return nb;
			if (retx) {
				e->st.retransmits++;
				sl->rto_ns = sl->rto_ns * 2 > e->cfg.rto_max_ns ? e->cfg.rto_max_ns
										: sl->rto_ns * 2;
			}
			sl->need_send = 0;
			sl->retx = (uint8_t)retx;
			sl->sent_ns = now;
			out[nb++] = p;
		}
	}
	return nb;
}

static uint64_t
ssp_deadline(const struct engine *e, uint64_t d)
{
	for (uint32_t k = 0; k <= e->cfg.ssp; k++) {
		const struct sop *o = &e->sops[k];

		if (!o->active)
			continue;
		for (uint16_t l = 0; l < e->cfg.lanes; l++) {
			const struct sop_lane *sl = &o->lanes[l];

			if (!sl->active || sl->done)
				continue;
			if (sl->need_send)
				return 0;
			if (sl->sent_ns + sl->rto_ns < d)
				d = sl->sent_ns + sl->rto_ns;
		}
	}
	return d;
}

static void
on_wait(struct engine *e, const struct ina_hdr *h, const uint8_t *payload, uint64_t now)
{
	struct lane *ln = &e->lanes[h->lane];
	uint64_t missing_be;

	e->st.waits++;
	if (e->phase != ENGINE_RUNNING || ln->done || h->round != e->round ||
	    h->tensor_id != e->tensor_id || h->block != ln->block) {
		e->st.stale++;
		return;
	}
	memcpy(&missing_be, payload, sizeof(missing_be));
	e->wait_missing = be64toh(missing_be);
	e->wait_lane = h->lane;
	e->wait_block = h->block;
	/*
	 * The switch has my packet: restart the lane's timer. Resending still
	 * matters: the result may be lost on its way, and only a resend asks
	 * the shadow copy for it again. The lane's backoff goes on doubling.
	 */
	ln->sent_ns = now;
	e->wait_heard_ns = now;
	/* A LIVE WAIT: the ranks it names are paused, not dead (the switch
	 * would have aborted the job): waiting on is progress. */
	if (h->status == INA_WAIT_LIVE && e->wait_missing)
		e->live_ns = now;
}

static void
on_error(struct engine *e, const struct ina_hdr *h, const uint8_t *payload, uint32_t len)
{
	int n = (int)(len - INA_HDR_SIZE);
	int err = h->status == INA_WERR_LEFT	    ? INA_ELEFT
		  : h->status == INA_WERR_PEER_DEAD ? INA_EPEER
		  : h->status == INA_WERR_SHUTDOWN  ? INA_ENOSWITCH
						    : INA_EREFUSED;

	if (e->phase == ENGINE_CLOSED)
		return;
	fail(e, err, "switch: %.*s", n, (const char *)payload);
	/* A refused or abandoned job has nothing left on the switch to free. */
	e->phase = ENGINE_CLOSED;
}

/*
 * An ERROR from the replica before any failover. While it is asked to stand
 * by, the join fails (and the primary, which admitted the job, hears LEAVE);
 * later the job goes on at the primary without a replica.
 */
static void
on_replica_error(struct engine *e, const struct ina_hdr *h, const uint8_t *payload, uint32_t len,
		 uint64_t now)
{
	int n = (int)(len - INA_HDR_SIZE);

	if (e->standby == STANDBY_JOINING && e->phase == ENGINE_JOINING) {
		fail(e, h->status == INA_WERR_SHUTDOWN ? INA_ENOSWITCH : INA_EREFUSED,
		     "job %" PRIu32 " rank %u: the replica switch refused to stand by: %.*s",
		     e->cfg.job_id, e->cfg.rank, n, (const char *)payload);
		e->standby = STANDBY_NONE;
		ctl_start(e, ENGINE_LEAVING, now);
		return;
	}
	if (e->standby == STANDBY_UP) {
		e->standby = STANDBY_NONE;
		e->fo_active = 0;
		e->st.standby_lost++;
		return;
	}
	e->st.stale++;
}

/*
 * The replica's announcement: it has taken the job over under epoch
 * 'h->epoch'. From now on the engine talks to it alone, and every packet in
 * flight goes again at once with the new epoch: the replica counts it into
 * the block it opened or answers it from the result it stored.
 */
static void
on_failover(struct engine *e, const struct ina_hdr *h, uint64_t now)
{
	if (e->failed_over || e->standby == STANDBY_NONE || h->epoch == 0 ||
	    h->epoch == e->params.epoch || e->phase == ENGINE_CLOSED) {
		e->st.stale++;
		return;
	}
	e->failed_over = 1;
	e->fo_active = 0;
	e->params.epoch = h->epoch;
	e->st.failovers++;
	e->st.failover_silence_ns = now - e->sw_heard_ns;
	e->sw_heard_ns = now;
	e->last_heard_ns = now;
	if (e->phase == ENGINE_JOINING) {
		/* Still asking it to stand by: it has the job, so the join is done. */
		e->phase = ENGINE_READY;
		return;
	}
	if (e->phase == ENGINE_FINISHING || e->phase == ENGINE_LEAVING) {
		/* The goodbye starts over, to the replica. */
		ctl_start(e, e->phase, now);
		return;
	}
	if (e->phase != ENGINE_RUNNING)
		return;
	e->last_progress_ns = now;
	e->stall_reported = 0;
	e->wait_missing = 0;
	for (uint16_t l = 0; l < e->cfg.lanes; l++) {
		struct lane *ln = &e->lanes[l];

		if (ln->done)
			continue;
		ln->resend = 1;
		ln->rto_ns = e->rto_ns;
	}
}

/*
 * With a replica: whether a packet of 'type' may come from 'pkt's sender.
 * Before a failover the primary sends everything but what only the replica
 * sends (its STANDBY JOIN_ACK, FIN_ACK and ERROR to a worker standing by with
 * it, the FAILOVER announcement); RESULTs come from the replica, which sends
 * on the primary's. After a failover only the replica is heard. Sets '*from_r'.
 */
static int
sender_ok(const struct engine *e, const struct ina_pkt *pkt, const struct ina_hdr *h, int *from_r)
{
	int r = ina_peer_equal(&pkt->peer, &e->cfg.replica);
	int p = !r && ina_peer_equal(&pkt->peer, &e->cfg.sw);

	*from_r = r;
	if (e->failed_over)
		return r;
	switch (h->type) {
	case INA_T_RESULT:
		return r || p;
	case INA_T_FAILOVER:
		return r;
	case INA_T_JOIN_ACK:
		return (h->flags & INA_F_STANDBY) ? r : p;
	case INA_T_FIN_ACK:
	case INA_T_ERROR:
		return r || p;
	default:
		return p;
	}
}

/*
 * A JOIN_ACK flagged REDIRECT while joining: the switch has no slots for the
 * job and names a host aggregator. Followed once, without a replica, when it
 * echoes this worker's JOIN; the caller then resolves the target and calls
 * engine_redirect().
 */
static void
on_redirect(struct engine *e, const struct ina_hdr *h, const uint8_t *payload)
{
	uint16_t world, lanes, max_block;

	(void)h;
	ina_wire_decode_join(payload, &world, &lanes, &max_block);
	if (world != e->cfg.world || lanes != e->cfg.lanes || max_block != e->cfg.max_block ||
	    ina_wire_join_ssp(payload) != e->cfg.ssp || has_replica(e)) {
		e->st.bad++;
		return;
	}
	if (e->redirected) {
		fail(e, INA_EREFUSED,
		     "job %" PRIu32 " rank %u: the host aggregator %u.%u.%u.%u:%u sent the job on "
		     "again: a REDIRECT is followed once", e->cfg.job_id, e->cfg.rank,
		     e->redirect_ipv4 >> 24, e->redirect_ipv4 >> 16 & 0xff,
		     e->redirect_ipv4 >> 8 & 0xff, e->redirect_ipv4 & 0xff, e->redirect_port);
		e->phase = ENGINE_CLOSED;
		return;
	}
	ina_wire_decode_redirect(payload + sizeof(struct ina_wire_join), &e->redirect_ipv4,
				 &e->redirect_port);
	e->redirected = 1;
	e->phase = ENGINE_REDIRECTED;
}

static void
rx_one(struct engine *e, struct ina_pkt *pkt, uint64_t now)
{
	struct ina_hdr h;
	enum ina_wire_reason r;
	const uint8_t *payload = pkt->data + INA_HDR_SIZE;
	int joined = e->params.epoch != 0;
	int from_r = 0;

	e->st.pkts_recv++;
	e->st.bytes_recv += pkt->len;
	/* Before the JOIN_ACK the epoch is unknown, ERROR carries none, and the
	 * replica announces a new one in FAILOVER. */
	if (!joined ||
	    (pkt->len >= INA_HDR_SIZE &&
	     (pkt->data[1] == INA_T_ERROR || pkt->data[1] == INA_T_FAILOVER))) {
		r = ina_wire_validate(pkt->data, pkt->len, NULL, &h);
		if (r == INA_WIRE_OK && h.job_id != e->cfg.job_id)
			r = INA_WIRE_WRONG_JOB;
		else if (r == INA_WIRE_OK && h.token != e->cfg.token)
			r = INA_WIRE_WRONG_TOKEN;
		else if (r == INA_WIRE_OK && h.type == INA_T_FAILOVER && h.rank != INA_RANK_SWITCH)
			r = INA_WIRE_RANK_PAST_WORLD;
	} else {
		r = ina_wire_validate(pkt->data, pkt->len, &e->params, &h);
	}
	if (r != INA_WIRE_OK || (h.type == INA_T_FAILOVER && !has_replica(e)) ||
	    ((h.flags & INA_F_STANDBY) && !has_replica(e))) {
		e->st.bad++;
		return;
	}
	if (has_replica(e)) {
		if (!sender_ok(e, pkt, &h, &from_r)) {
			e->st.stale++;
			return;
		}
		/* The switch followed answers: for the primary, a RESULT sent
		 * on by the replica counts as its own. */
		if (e->failed_over || !from_r || h.type == INA_T_RESULT) {
			e->sw_heard_ns = now;
			/* No longer silent: engine_next_deadline() must not
			 * wait for the FAILOVER's resend (test_fuzz_found). */
			e->fo_active = 0;
		}
	}
	e->last_type = h.type;
	switch (h.type) {
	case INA_T_JOIN_ACK:
		if ((h.flags & INA_F_REDIRECT) && e->phase == ENGINE_JOINING) {
			on_redirect(e, &h, payload);
			return;
		}
		if ((h.flags & INA_F_REDIRECT) || e->phase == ENGINE_REDIRECTED) {
			e->st.stale++;
			return;
		}
		if (e->phase == ENGINE_JOINING &&
		    !!(h.flags & INA_F_STANDBY) == (e->standby == STANDBY_JOINING)) {
			uint16_t world, lanes, max_block;

			ina_wire_decode_join(payload, &world, &lanes, &max_block);
			/* Fewer lanes only as the primary's GRANT (--share fair). */
			if (world != e->cfg.world || max_block != e->cfg.max_block ||
			    h.epoch == 0 || ina_wire_join_ssp(payload) != e->cfg.ssp ||
			    (lanes != e->cfg.lanes &&
			     (!(h.flags & INA_F_GRANT) || lanes > e->cfg.lanes ||
			      e->standby == STANDBY_JOINING))) {
				e->st.bad++;
				return;
			}
			if (lanes != e->cfg.lanes) {
				/* The arrays keep the size asked; fewer
				 * lanes use their first entries. */
				e->st.lanes_asked = e->cfg.lanes;
				e->cfg.lanes = lanes;
				e->params.lanes = lanes;
			}
			e->last_heard_ns = now;
			if (e->standby == STANDBY_JOINING) {
				e->standby = STANDBY_UP;
				e->phase = ENGINE_READY;
				return;
			}
			e->params.epoch = h.epoch;
			if (has_replica(e)) {
				/* Now the replica, with the epoch. */
				e->standby = STANDBY_JOINING;
				ctl_start(e, ENGINE_JOINING, now);
				return;
			}
			e->phase = ENGINE_READY;
		} else {
			e->st.stale++;
		}
		return;
	case INA_T_RESULT:
		e->last_heard_ns = now;
		if ((h.flags & INA_F_RESHAPE) && !e->cfg.ssp &&
		    (int32_t)(h.bound - e->round) > 0 && h.status < e->cfg.lanes) {
			/* Runs on h.status lanes from round h.bound (after this one). */
			e->reshape_lanes = h.status;
			e->reshape_round = h.bound;
		}
		if (e->cfg.ssp)
			ssp_on_result(e, &h, payload, now);
		else
			on_result(e, &h, payload, now);
		return;
	case INA_T_WAIT:
		e->last_heard_ns = now;
		if (e->cfg.ssp)
			ssp_on_wait(e, &h, payload, now);
		else
			on_wait(e, &h, payload, now);
		return;
	case INA_T_FIN_ACK:
		/* Only the switch followed is waited for; the replica standing
		 * by hears the FIN as a courtesy. */
		if (e->phase == ENGINE_FINISHING && (e->failed_over || !from_r))
			e->phase = ENGINE_CLOSED;
		return;
	case INA_T_ERROR:
		if (from_r && !e->failed_over)
			on_replica_error(e, &h, payload, pkt->len, now);
		else
			on_error(e, &h, payload, pkt->len);
		return;
	case INA_T_FAILOVER:
		on_failover(e, &h, now);
		return;
	default:
		e->st.bad++;
		return;
	}
}

void
engine_rx(struct engine *e, struct ina_pkt **pkts, uint16_t n, uint64_t now_ns)
{
	for (uint16_t i = 0; i < n; i++) {
		rx_one(e, pkts[i], now_ns);
		ina_pkt_free(pkts[i]);
	}
}

/* The first lane still waiting for a result. */
static uint16_t
waiting_lane(const struct engine *e)
{
	uint16_t lane = 0;

	while (lane + 1u < e->cfg.lanes && e->lanes[lane].done)
		lane++;
	return lane;
}

/* Where the engine waits: the round, the first lane still waiting and its
 * block (under ssp: the oldest round in flight, its first lane). */
static void
waiting_at(const struct engine *e, uint32_t *round, uint16_t *lane, uint32_t *block)
{
	*round = e->round;
	*lane = waiting_lane(e);
	*block = e->lanes[*lane].block;
	for (uint32_t age = e->cfg.ssp + 1u; e->cfg.ssp && age > 0; age--) {
		for (uint32_t k = 0; k <= e->cfg.ssp; k++) {
			const struct sop *o = &e->sops[k];

			if (!o->active || o->round != e->round - age)
				continue;
			*round = o->round;
			for (uint16_t l = 0; l < e->cfg.lanes; l++)
				if (o->lanes[l].active && !o->lanes[l].done) {
					*lane = l;
					*block = l;
					return;
				}
		}
	}
}

/*
 * A stall, described once when a quarter of the timeout has passed without
 * progress, while the operation may still recover: what this worker waits
 * for, and what the switch last said. ina.c logs it (engine_stall()).
 */
static void
describe_stall(struct engine *e, uint64_t now)
{
	char said[320], ranks[160];
	uint64_t ago = (now - e->last_heard_ns) / 1000000;
	uint32_t round, block;
	uint16_t lane;

	waiting_at(e, &round, &lane, &block);

	if (e->last_type == INA_T_WAIT && e->wait_missing)
		snprintf(said, sizeof(said), "WAIT for lane %" PRIu32 " block %" PRIu32
			 ", missing rank(s) %s, %" PRIu64 " ms ago", e->wait_lane, e->wait_block,
			 ina_ranks_str(ranks, sizeof(ranks), e->wait_missing), ago);
	else
		snprintf(said, sizeof(said), "%s, %" PRIu64 " ms ago",
			 e->last_type ? ina_wire_type_name(e->last_type) : "nothing", ago);
	if (e->fo_active) {
		size_t len = strlen(said);

		snprintf(said + len, sizeof(said) - len,
			 "; the primary is silent for %" PRIu64 " ms, waiting for the replica to "
			 "take over (%" PRIu32 " FAILOVER sent)",
			 (now - e->sw_heard_ns) / 1000000, e->fo_tries);
	}
	snprintf(e->stall_msg, sizeof(e->stall_msg),
		 "job %" PRIu32 " rank %u round %" PRIu32 ": no progress for %" PRIu64
		 " ms: lane %u waits for block %" PRIu32 " (%" PRIu64 " retransmissions so far); "
		 "the %s last said: %s",
		 e->cfg.job_id, e->cfg.rank, round, (now - e->last_progress_ns) / 1000000, lane,
		 block, e->st.retransmits,
		 e->failed_over ? "replica switch" : "switch", said);
	e->stall_reported = 1;
	e->stall_pending = 1;
	e->st.stalls++;
}

const char *
engine_stall(struct engine *e)
{
	if (!e->stall_pending)
		return NULL;
	e->stall_pending = 0;
	return e->stall_msg;
}

/* Where the stall timeout counts from: the last result, or a LIVE WAIT. */
static uint64_t
progress_since(const struct engine *e)
{
	return e->live_ns > e->last_progress_ns ? e->live_ns : e->last_progress_ns;
}

static void
check_progress(struct engine *e, uint64_t now)
{
	char ranks[192];
	uint32_t round, block;
	uint16_t lane;

	if (!e->stall_reported && now - e->last_progress_ns >= e->cfg.timeout_ns / 4)
		describe_stall(e, now);
	if (now - progress_since(e) < e->cfg.timeout_ns) {
		/* Waiting on LIVE WAITs: paused peers, up to the longest pause. */
		if (!e->cfg.pause_ns || e->live_ns <= e->last_progress_ns ||
		    now - e->last_progress_ns < e->cfg.pause_ns)
			return;
		waiting_at(e, &round, &lane, &block);
		fail(e, INA_EPEER,
		     "job %" PRIu32 " rank %u: no progress for %" PRIu64 " ms, the longest pause "
		     "(pause_ms) a peer may take; the switch waits on rank(s) %s for lane %" PRIu32
		     " block %" PRIu32 " of round %" PRIu32,
		     e->cfg.job_id, e->cfg.rank, e->cfg.pause_ns / 1000000,
		     ina_ranks_str(ranks, sizeof(ranks), e->wait_missing), e->wait_lane,
		     e->wait_block, round);
		return;
	}
	waiting_at(e, &round, &lane, &block);
	/* Blame peers only while the switch still says it waits on them. */
	if (e->wait_missing && now - e->wait_heard_ns < e->cfg.timeout_ns / 2) {
		fail(e, INA_EPEER,
		     "job %" PRIu32 " rank %u: no progress for %" PRIu64 " ms; the switch waits on "
		     "rank(s) %s for lane %" PRIu32 " block %" PRIu32 " of round %" PRIu32,
		     e->cfg.job_id, e->cfg.rank, e->cfg.timeout_ns / 1000000,
		     ina_ranks_str(ranks, sizeof(ranks), e->wait_missing), e->wait_lane,
		     e->wait_block, round);
	} else if (e->fo_active) {
		fail(e, INA_ENOSWITCH,
		     "job %" PRIu32 " rank %u: no progress for %" PRIu64 " ms: the primary switch "
		     "is silent for %" PRIu64 " ms and the replica did not take over (%" PRIu32
		     " FAILOVER sent; round %" PRIu32 ", lane %" PRIu32
		     " waits for block %" PRIu32 ")",
		     e->cfg.job_id, e->cfg.rank, e->cfg.timeout_ns / 1000000,
		     (now - e->sw_heard_ns) / 1000000, e->fo_tries, round, lane, block);
	} else {
		fail(e, INA_ENOSWITCH,
		     "job %" PRIu32 " rank %u: the %s did not answer for %" PRIu64
		     " ms (round %" PRIu32 ", lane %" PRIu32 " waits for block %" PRIu32 ")",
		     e->cfg.job_id, e->cfg.rank, e->failed_over ? "replica switch" : "switch",
		     e->cfg.timeout_ns / 1000000, round, lane, block);
	}
}

static int
keepalive_on(const struct engine *e)
{
	return e->cfg.keepalive_ns && !e->err &&
	       (e->phase == ENGINE_READY || e->phase == ENGINE_RUNNING);
}

/* A KEEPALIVE to 'to'. */
static struct ina_pkt *
build_keepalive(struct engine *e, const struct ina_peer *to)
{
	struct ina_pkt *p = ina_pkt_alloc(e->cfg.pool);
	struct ina_hdr h;

	if (!p)
		return NULL;
	fill_hdr(e, &h, INA_T_KEEPALIVE);
	h.round = e->round;
	ina_wire_encode_hdr(&h, p->data);
	p->len = INA_HDR_SIZE;
	p->peer = *to;
	e->st.keepalives++;
	e->st.pkts_sent++;
	e->st.bytes_sent += p->len;
	return p;
}

/* A KEEPALIVE to the switch followed, when this engine has sent nothing
 * for keepalive_ns: the switch then knows a paused rank from a dead one. A
 * replica standing by gets one too, or its standby job would idle out in a
 * long pause (no REPL reaches it then) and with it the failover. */
uint16_t
engine_keepalive(struct engine *e, uint64_t now_ns, struct ina_pkt **out, uint16_t max)
{
	uint16_t nb = 0;

	if (!max || !keepalive_on(e) || now_ns - e->last_tx_ns < e->cfg.keepalive_ns)
		return 0;
	out[nb] = build_keepalive(e, cur_sw(e));
	if (!out[nb])
		return 0;
	nb++;
	if (standing_by(e) && max > 1) {
		out[nb] = build_keepalive(e, &e->cfg.replica);
		if (out[nb])
			nb++;
	}
	e->last_tx_ns = now_ns;
	return nb;
}

static uint16_t
tx_ctl(struct engine *e, uint64_t now, struct ina_pkt **out, uint16_t max)
{
	struct ina_pkt *p;
	int retx = !e->ctl_need_send;

	if (max == 0)
		return 0;
	if (!e->ctl_need_send && now - e->ctl_sent_ns < e->ctl_rto_ns)
		return 0;
	if (e->phase == ENGINE_JOINING && e->standby == STANDBY_JOINING &&
	    now - e->ctl_start_ns >= e->cfg.timeout_ns) {
		fail(e, INA_ENOSWITCH,
		     "job %" PRIu32 " rank %u: the replica switch did not answer the standby JOIN "
		     "for %" PRIu64 " ms (the switch admitted the job with epoch %" PRIu32 ")",
		     e->cfg.job_id, e->cfg.rank, e->cfg.timeout_ns / 1000000, e->params.epoch);
		/* The switch holds the job: free it. */
		e->standby = STANDBY_NONE;
		ctl_start(e, ENGINE_LEAVING, now);
		return 0;
	}
	if (e->phase == ENGINE_JOINING && now - e->ctl_start_ns >= e->cfg.timeout_ns &&
	    e->redirected) {
		fail(e, INA_ENOSWITCH,
		     "job %" PRIu32 " rank %u: the host aggregator %u.%u.%u.%u:%u the switch sent "
		     "the job to did not answer the JOIN for %" PRIu64 " ms", e->cfg.job_id,
		     e->cfg.rank, e->redirect_ipv4 >> 24, e->redirect_ipv4 >> 16 & 0xff,
		     e->redirect_ipv4 >> 8 & 0xff, e->redirect_ipv4 & 0xff, e->redirect_port,
		     e->cfg.timeout_ns / 1000000);
		e->phase = ENGINE_CLOSED;
		return 0;
	}
	if (e->phase == ENGINE_JOINING && now - e->ctl_start_ns >= e->cfg.timeout_ns) {
		fail(e, INA_ENOSWITCH,
		     "job %" PRIu32 " rank %u: the switch did not answer the JOIN for %" PRIu64 " ms",
		     e->cfg.job_id, e->cfg.rank, e->cfg.timeout_ns / 1000000);
		e->phase = ENGINE_CLOSED;
		return 0;
	}
	if (e->phase != ENGINE_JOINING && e->ctl_tries >= CTL_GOODBYE_TRIES) {
		e->phase = ENGINE_CLOSED;
		return 0;
	}
	p = build_ctl(e);
	if (!p)
		return 0;
	if (retx) {
		e->st.retransmits++;
		e->ctl_rto_ns = e->ctl_rto_ns * 2 > e->cfg.rto_max_ns ? e->cfg.rto_max_ns
								       : e->ctl_rto_ns * 2;
	}
	e->ctl_need_send = 0;
	e->ctl_sent_ns = now;
	e->ctl_tries++;
	out[0] = p;
	/* The goodbye goes to a replica standing by as well: its standby job
	 * is freed without waiting for its idle timeout. */
	if (e->phase != ENGINE_JOINING && standing_by(e) && max > 1) {
		struct ina_pkt *c = ina_pkt_alloc(e->cfg.pool);

		if (c) {
			memcpy(c->data, p->data, p->len);
			c->len = p->len;
			c->peer = e->cfg.replica;
			out[1] = c;
			return 2;
		}
	}
	return 1;
}

/*
 * The primary's silence: packets outstanding and nothing from it (or from
 * the replica on its behalf) for failover_ns. Then FAILOVER goes to the
 * replica, resent on the usual backoff until it announces the takeover or
 * the primary speaks again (a WAIT: it was slow, not dead).
 */
static uint16_t
tx_failover(struct engine *e, uint64_t now, struct ina_pkt **out, uint16_t max)
{
	struct ina_pkt *p;
	struct ina_hdr h;

	if (!standing_by(e) || max == 0)
		return 0;
	if (now - e->sw_heard_ns < e->cfg.failover_ns) {
		e->fo_active = 0;
		return 0;
	}
	if (!e->fo_active) {
		e->fo_active = 1;
		e->fo_need_send = 1;
		e->fo_tries = 0;
		e->fo_rto_ns = e->cfg.rto_ns;
	}
	if (!e->fo_need_send && now - e->fo_sent_ns < e->fo_rto_ns)
		return 0;
	p = ina_pkt_alloc(e->cfg.pool);
	if (!p)
		return 0;
	fill_hdr(e, &h, INA_T_FAILOVER);
	ina_wire_encode_hdr(&h, p->data);
	p->len = INA_HDR_SIZE;
	p->peer = e->cfg.replica;
	if (!e->fo_need_send)
		e->fo_rto_ns = e->fo_rto_ns * 2 > e->cfg.rto_max_ns ? e->cfg.rto_max_ns
								   : e->fo_rto_ns * 2;
	e->fo_need_send = 0;
	e->fo_sent_ns = now;
	e->fo_tries++;
	e->st.failover_sent++;
	out[0] = p;
	return 1;
}

/*
 * The primary answers (WAITs) but nothing progresses for failover_ns: either
 * a peer is slow, or the replica took the job over (another worker found the
 * primary silent, perhaps only for a moment) and its announcement to this
 * worker was lost; the primary, alive, can then never deliver a result again
 * (the replica drops what it sends). Once per failover_ns of no progress, the
 * packet of the first lane waiting goes to the replica too: standing by, it
 * drops it; having taken over, it answers with the announcement.
 */
static uint16_t
tx_probe(struct engine *e, uint64_t now, struct ina_pkt **out, uint16_t max)
{
	uint64_t since = e->probe_ns > e->last_progress_ns ? e->probe_ns : e->last_progress_ns;
	struct ina_pkt *p;

	if (!standing_by(e) || e->fo_active || max == 0 || now - since < e->cfg.failover_ns)
		return 0;
	p = build_data(e, waiting_lane(e), 1);
	if (!p)
		return 0;
	p->peer = e->cfg.replica;
	e->probe_ns = now;
	e->st.probes++;
	out[0] = p;
	return 1;
}

uint16_t
engine_tx(struct engine *e, uint64_t now_ns, struct ina_pkt **out, uint16_t max)
{
	uint16_t nb = 0;

	if (e->phase == ENGINE_JOINING || e->phase == ENGINE_FINISHING ||
	    e->phase == ENGINE_LEAVING)
		nb = tx_ctl(e, now_ns, out, max);
	if (e->phase != ENGINE_RUNNING || e->err)
		goto count;
	check_progress(e, now_ns);
	if (e->err)
		goto count;
	nb = (uint16_t)(nb + tx_failover(e, now_ns, out + nb, (uint16_t)(max - nb)));
	nb = (uint16_t)(nb + tx_probe(e, now_ns, out + nb, (uint16_t)(max - nb)));
	if (e->cfg.ssp) {
		nb = (uint16_t)(nb + ssp_tx(e, now_ns, out + nb, (uint16_t)(max - nb)));
		goto count;
	}
	for (uint16_t k = 0; k < e->cfg.lanes && nb < max; k++) {
		uint16_t l = (uint16_t)((e->tx_cursor + k) % e->cfg.lanes);
		struct lane *ln = &e->lanes[l];
		struct ina_pkt *p;
		int retx;

		if (ln->done)
			continue;
		retx = !ln->need_send;
		if (retx && !ln->resend && now_ns - ln->sent_ns < ln->rto_ns)
			continue;
		p = build_data(e, l, retx);
		if (!p)
			break;
		if (retx) {
			e->st.retransmits++;
			/* A resend to a new switch starts a fresh backoff. */
			if (!ln->resend)
				ln->rto_ns = ln->rto_ns * 2 > e->cfg.rto_max_ns ? e->cfg.rto_max_ns
										: ln->rto_ns * 2;
		}
		ln->need_send = 0;
		ln->resend = 0;
		ln->retx = (uint8_t)retx;
		ln->sent_ns = now_ns;
		out[nb++] = p;
	}
	e->tx_cursor = (uint16_t)((e->tx_cursor + 1) % e->cfg.lanes);
count:
	for (uint16_t i = 0; i < nb; i++) {
		e->st.pkts_sent++;
		e->st.bytes_sent += out[i]->len;
	}
	if (nb)
		e->last_tx_ns = now_ns;
	else
		nb = engine_keepalive(e, now_ns, out, max);
	return nb;
}

uint64_t
engine_next_deadline(const struct engine *e)
{
	uint64_t d = UINT64_MAX;

	if (e->phase == ENGINE_JOINING || e->phase == ENGINE_FINISHING ||
	    e->phase == ENGINE_LEAVING)
		return e->ctl_need_send ? 0 : e->ctl_sent_ns + e->ctl_rto_ns;
	if (keepalive_on(e))
		d = e->last_tx_ns + e->cfg.keepalive_ns;
	if (e->phase != ENGINE_RUNNING || e->err)
		return d;
	if (standing_by(e)) {
		if (!e->fo_active) {
			uint64_t since = e->probe_ns > e->last_progress_ns ? e->probe_ns
									   : e->last_progress_ns;

			if (e->sw_heard_ns + e->cfg.failover_ns < d)
				d = e->sw_heard_ns + e->cfg.failover_ns;
			if (since + e->cfg.failover_ns < d)
				d = since + e->cfg.failover_ns;
		} else if (e->fo_need_send) {
			d = 0;
		} else if (e->fo_sent_ns + e->fo_rto_ns < d) {
			d = e->fo_sent_ns + e->fo_rto_ns;
		}
	}
	if (e->cfg.ssp)
		d = ssp_deadline(e, d);
	for (uint16_t l = 0; l < e->cfg.lanes && !e->cfg.ssp; l++) {
		const struct lane *ln = &e->lanes[l];

		if (ln->done)
			continue;
		if (ln->need_send || ln->resend)
			return 0;
		if (ln->sent_ns + ln->rto_ns < d)
			d = ln->sent_ns + ln->rto_ns;
	}
	if (progress_since(e) + e->cfg.timeout_ns < d)
		d = progress_since(e) + e->cfg.timeout_ns;
	if (e->cfg.pause_ns && e->live_ns > e->last_progress_ns &&
	    e->last_progress_ns + e->cfg.pause_ns < d)
		d = e->last_progress_ns + e->cfg.pause_ns;
	return d;
}
