/* SPDX-License-Identifier: MIT */
/*
 * The host engine (engine.h): its public calls. Creating one, joining, the
 * goodbye and the REDIRECT; the received packets checked and handed to the
 * round in progress (engine_bsp.c, engine_ssp.c) or the replica's side
 * (engine_failover.c); the packets to send and the timers: control packets,
 * KEEPALIVEs, and the round's and failover's packets, after the stall check
 * (engine_stall.c). engine_int.h lists the files and their layers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "ina/util.h"

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

	if (!cfg->pool || cfg->world == 0 || cfg->world > INA_MAX_WORLD ||
	    cfg->rank >= cfg->world || cfg->lanes == 0 || cfg->max_block == 0 ||
	    cfg->max_block > INA_BLOCK_MAX || !ina_wire_elem_size(cfg->encoding) ||
	    cfg->ssp > INA_SSP_MAX ||
	    (cfg->ssp && (cfg->encoding == INA_ENC_I32 || cfg->replica.len)) || cfg->sw.len == 0 ||
	    cfg->rto_min_ns == 0 || cfg->rto_ns < cfg->rto_min_ns ||
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
	/* The map of non-zero blocks, for tensors of up to 65,536 blocks (64
	 * MiB in blocks of 1024) without allocating while a job runs; a larger
	 * tensor grows it once (engine_bsp.c). */
	e->nzmap_words = ENGINE_NZMAP_WORDS;
	e->nzmap = calloc(e->nzmap_words, sizeof(*e->nzmap));
	if (!e->lanes || !e->nzmap) {
		free(e->lanes);
		free(e->nzmap);
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
	if (cfg->auth) {
		snprintf(e->job_name, sizeof(e->job_name), "%" PRIu32 " of tenant %u",
			 cfg->job_id & INA_TENANT_JOB_MAX, ina_tenant_of(cfg->job_id));
		e->cfg.token = 0; /* the tag takes its field */
	} else {
		snprintf(e->job_name, sizeof(e->job_name), "%" PRIu32, cfg->job_id);
	}
	e->enc = ina_encoding(cfg->encoding);
	e->params.job_id = cfg->job_id;
	e->params.token = e->cfg.token;
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
	free(e->nzmap);
	free(e->lanes);
	free(e->sops);
	free(e->sop_lanes);
	free(e->ssp_ver);
	free(e);
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

int
engine_join(struct engine *e, uint64_t now_ns)
{
	if (e->phase != ENGINE_IDLE || e->err)
		return -EBUSY;
	engine_ctl_start(e, ENGINE_JOINING, now_ns);
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
	e->cookie[0] = 0; /* the first switch's: no use at the new one */
	e->st.redirects++;
	engine_ctl_start(e, ENGINE_JOINING, now_ns);
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
		engine_ctl_start(e, ENGINE_FINISHING, now_ns);
	else
		e->phase = ENGINE_CLOSED;
}

void
engine_leave(struct engine *e, uint64_t now_ns)
{
	/* Only a joined worker has anything to tell the switch. */
	if (e->params.epoch && e->phase != ENGINE_CLOSED)
		engine_ctl_start(e, ENGINE_LEAVING, now_ns);
	else
		e->phase = ENGINE_CLOSED;
}

void
engine_set_result_filter(struct engine *e, float bound, uint8_t *deferred)
{
	e->next_bound = deferred && bound > 0.0f ? bound : 0.0f;
	e->next_deferred = e->next_bound > 0.0f ? deferred : NULL;
}

void
engine_set_blocks(struct engine *e, const struct engine_blocks *b)
{
	e->next_sparse = 1;
	e->next_blk = *b;
}

int
engine_allreduce(struct engine *e, uint32_t tensor_id, const float *in, float *out, size_t n,
		 uint16_t block_size, enum engine_op op, uint64_t now_ns)
{
	if (e->err)
		return e->err;
	if (e->cfg.ssp) {
		if (e->next_sparse) {
			e->next_sparse = 0;
			return -EINVAL;
		}
		return engine_ssp_allreduce(e, tensor_id, in, out, n, block_size, op, now_ns);
	}
	return engine_bsp_allreduce(e, tensor_id, in, out, n, block_size, op, now_ns);
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
		engine_fill_hdr(e, &h, INA_T_JOIN);
		/* To the replica: stand by for the epoch the switch gave. */
		if (e->standby == STANDBY_JOINING)
			h.flags = INA_F_STANDBY;
		else
			h.epoch = 0;
		h.block_size = e->cfg.max_block;
		ina_wire_set_cookie(&h, e->cookie[e->standby == STANDBY_JOINING]);
		ina_wire_encode_hdr(&h, p->data);
		ina_wire_encode_join(e->cfg.world, e->cfg.lanes, e->cfg.max_block,
				     p->data + INA_HDR_SIZE);
		ina_wire_join_set_ssp(p->data + INA_HDR_SIZE, e->cfg.ssp);
		ina_wire_join_set_weight(p->data + INA_HDR_SIZE, e->cfg.weight);
		p->len = INA_HDR_SIZE + sizeof(struct ina_wire_join);
		p->peer = e->standby == STANDBY_JOINING ? e->cfg.replica : e->cfg.sw;
		return p;
	case ENGINE_FINISHING:
		engine_fill_hdr(e, &h, INA_T_FIN);
		h.round = e->round;
		ina_wire_encode_hdr(&h, p->data);
		p->len = INA_HDR_SIZE;
		break;
	default:
		engine_fill_hdr(e, &h, INA_T_LEAVE);
		h.round = e->round;
		ina_wire_encode_hdr(&h, p->data);
		p->len = INA_HDR_SIZE;
		break;
	}
	p->peer = *cur_sw(e);
	return p;
}

static void
on_error(struct engine *e, const struct ina_hdr *h, const uint8_t *payload, uint32_t len)
{
	int n = (int)(len - INA_HDR_SIZE);
	int err = h->status == INA_WERR_LEFT	    ? ENGINE_ELEFT
		  : h->status == INA_WERR_PEER_DEAD ? ENGINE_EPEER
		  : h->status == INA_WERR_SHUTDOWN  ? ENGINE_ENOSWITCH
						    : ENGINE_EREFUSED;

	if (e->phase == ENGINE_CLOSED)
		return;
	engine_fail(e, err, "switch: %.*s", n, (const char *)payload);
	/* A refused or abandoned job has nothing left on the switch to free. */
	e->phase = ENGINE_CLOSED;
}

/*
 * ERROR COOKIE (PROTOCOL 5.1): the switch joined (or the replica, for the
 * standby JOIN) asks this address to prove it receives. Not a refusal: the
 * cookie is kept for every later JOIN to it, and the JOIN goes again at
 * once when the cookie is new (a repeat waits for the JOIN's timer, so a
 * stream of them cannot make the worker send faster than it would). The
 * JOIN's timeout keeps running. Anything else is stale.
 */
static void
on_cookie(struct engine *e, const struct ina_hdr *h, int from_r)
{
	int to_r = e->standby == STANDBY_JOINING;
	uint64_t c = ina_wire_cookie(h);

	if (e->phase != ENGINE_JOINING || from_r != to_r || c == 0) {
		e->st.stale++;
		return;
	}
	if (e->cookie[to_r] != c) {
		e->cookie[to_r] = c;
		e->ctl_need_send = 1;
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
		engine_fail(e, ENGINE_EREFUSED,
			    "job %s rank %u: the host aggregator %u.%u.%u.%u:%u sent the job on "
			    "again: a REDIRECT is followed once",
			    e->job_name, e->cfg.rank, e->redirect_ipv4 >> 24,
			    e->redirect_ipv4 >> 16 & 0xff, e->redirect_ipv4 >> 8 & 0xff,
			    e->redirect_ipv4 & 0xff, e->redirect_port);
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
	if (!joined || (pkt->len >= INA_HDR_SIZE &&
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
		if (!engine_fo_sender_ok(e, pkt, &h, &from_r)) {
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
				engine_ctl_start(e, ENGINE_JOINING, now);
				return;
			}
			e->phase = ENGINE_READY;
		} else {
			e->st.stale++;
		}
		return;
	case INA_T_RESULT:
		e->last_heard_ns = now;
		if ((h.flags & INA_F_RESHAPE) && !e->cfg.ssp && (int32_t)(h.bound - e->round) > 0 &&
		    h.status < e->cfg.lanes) {
			/* Runs on h.status lanes from round h.bound (after this one). */
			e->reshape_lanes = h.status;
			e->reshape_round = h.bound;
		}
		if (e->cfg.ssp)
			engine_ssp_on_result(e, &h, payload, now);
		else
			engine_bsp_on_result(e, &h, payload, now);
		return;
	case INA_T_WAIT:
		e->last_heard_ns = now;
		if (e->cfg.ssp)
			engine_ssp_on_wait(e, &h, payload, now);
		else
			engine_bsp_on_wait(e, &h, payload, now);
		return;
	case INA_T_FIN_ACK:
		/* Only the switch followed is waited for; the replica standing
		 * by hears the FIN as a courtesy. */
		if (e->phase == ENGINE_FINISHING && (e->failed_over || !from_r))
			e->phase = ENGINE_CLOSED;
		return;
	case INA_T_ERROR:
		if (h.status == INA_WERR_COOKIE) {
			on_cookie(e, &h, from_r);
			return;
		}
		if (from_r && !e->failed_over)
			engine_fo_on_replica_error(e, &h, payload, pkt->len, now);
		else
			on_error(e, &h, payload, pkt->len);
		return;
	case INA_T_FAILOVER:
		engine_fo_on_failover(e, &h, now);
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
		/* Tenant mode: the tag before anything else. */
		if (e->cfg.auth && !ina_auth_check(&e->cfg.key, pkts[i]->data, pkts[i]->len)) {
			e->st.pkts_recv++;
			e->st.auth_fail++;
			ina_pkt_free(pkts[i]);
			continue;
		}
		rx_one(e, pkts[i], now_ns);
		/* A decode recorded in cfg.work reads it later. */
		if (e->cfg.work)
			payload_work_hold(e->cfg.work, pkts[i]);
		else
			ina_pkt_free(pkts[i]);
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
	engine_fill_hdr(e, &h, INA_T_KEEPALIVE);
	h.round = e->round;
	ina_wire_encode_hdr(&h, p->data);
	p->len = INA_HDR_SIZE;
	p->peer = *to;
	if (e->cfg.auth)
		ina_auth_sign(&e->cfg.key, p->data, p->len);
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
		engine_fail(e, ENGINE_ENOSWITCH,
			    "job %s rank %u: the replica switch did not answer the standby JOIN "
			    "for %" PRIu64 " ms (the switch admitted the job with epoch %" PRIu32
			    ")",
			    e->job_name, e->cfg.rank, e->cfg.timeout_ns / 1000000, e->params.epoch);
		/* The switch holds the job: free it. */
		e->standby = STANDBY_NONE;
		engine_ctl_start(e, ENGINE_LEAVING, now);
		return 0;
	}
	if (e->phase == ENGINE_JOINING && now - e->ctl_start_ns >= e->cfg.timeout_ns &&
	    e->redirected) {
		engine_fail(e, ENGINE_ENOSWITCH,
			    "job %s rank %u: the host aggregator %u.%u.%u.%u:%u the switch sent "
			    "the job to did not answer the JOIN for %" PRIu64 " ms",
			    e->job_name, e->cfg.rank, e->redirect_ipv4 >> 24,
			    e->redirect_ipv4 >> 16 & 0xff, e->redirect_ipv4 >> 8 & 0xff,
			    e->redirect_ipv4 & 0xff, e->redirect_port, e->cfg.timeout_ns / 1000000);
		e->phase = ENGINE_CLOSED;
		return 0;
	}
	if (e->phase == ENGINE_JOINING && now - e->ctl_start_ns >= e->cfg.timeout_ns) {
		engine_fail(e, ENGINE_ENOSWITCH,
			    "job %s rank %u: the switch did not answer the JOIN for %" PRIu64 " ms",
			    e->job_name, e->cfg.rank, e->cfg.timeout_ns / 1000000);
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

uint16_t
engine_tx(struct engine *e, uint64_t now_ns, struct ina_pkt **out, uint16_t max)
{
	uint16_t nb = 0;

	if (e->phase == ENGINE_JOINING || e->phase == ENGINE_FINISHING ||
	    e->phase == ENGINE_LEAVING)
		nb = tx_ctl(e, now_ns, out, max);
	if (e->phase != ENGINE_RUNNING || e->err)
		goto count;
	engine_check_progress(e, now_ns);
	if (e->err)
		goto count;
	nb = (uint16_t)(nb + engine_fo_tx(e, now_ns, out + nb, (uint16_t)(max - nb)));
	nb = (uint16_t)(nb + engine_fo_probe(e, now_ns, out + nb, (uint16_t)(max - nb)));
	if (e->cfg.ssp) {
		nb = (uint16_t)(nb + engine_ssp_tx(e, now_ns, out + nb, (uint16_t)(max - nb)));
		goto count;
	}
	nb = (uint16_t)(nb + engine_bsp_tx(e, now_ns, out + nb, (uint16_t)(max - nb)));
count:
	for (uint16_t i = 0; i < nb; i++) {
		/* Tenant mode: the packet's bytes are final here, or once
		 * cfg.work has run its encodes (which run the tags after). */
		if (e->cfg.auth && e->cfg.work)
			payload_work_sign(e->cfg.work, &e->cfg.key, out[i]->data, out[i]->len);
		else if (e->cfg.auth)
			ina_auth_sign(&e->cfg.key, out[i]->data, out[i]->len);
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
	d = engine_fo_deadline(e, d);
	if (e->cfg.ssp)
		d = engine_ssp_deadline(e, d);
	else
		d = engine_bsp_deadline(e, d);
	if (engine_progress_since(e) + e->cfg.timeout_ns < d)
		d = engine_progress_since(e) + e->cfg.timeout_ns;
	if (e->cfg.pause_ns && e->live_ns > e->last_progress_ns &&
	    e->last_progress_ns + e->cfg.pause_ns < d)
		d = e->last_progress_ns + e->cfg.pause_ns;
	return d;
}
