/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the host engine (host/src/engine*.c) fed what a switch
 * sends, RESULT, WAIT, ERROR, JOIN_ACK and FIN_ACK, cut from the input; with
 * a replica switch (docs/PROTOCOL.md 5.9) also what the replica sends.
 *
 * Input: configuration bytes (world, with bit 0x80 a replica peer, bit 0x40
 * keepalives and a longest pause, and bits
 * 3-5 a packet pool of that few packets, so that allocations fail, rank,
 * lanes, largest B, encoding, timeouts, with a replica a byte of failover
 * time, with keepalives their period and the longest pause, the tensor's
 * length, B, how many non-zero elements), the tensor's
 * floats (mostly zero, so that blocks are skipped), then operations, each an
 * opcode byte and its arguments: run engine_tx, a JOIN_ACK (right or wrong;
 * a STANDBY one from the replica, or from the wrong peer), a RESULT for a
 * lane's open block (built from the last DATA the engine sent on it, with a
 * next pointer it announced or another, payload, flags SATURATED/DEFERRED
 * and exponent from the input; in a round cut into sub-blocks a mask from
 * the input, valid or not, and the present sub-blocks' values) from the primary or passed on by the replica,
 * a WAIT, an ERROR and a FIN_ACK from either, a raw packet from either, the
 * replica's FAILOVER announcement (new epoch or not, right job and token or
 * not, from the replica or not), the clock moved, a new allreduce (its cut
 * into 2^k sub-blocks from a byte, the largest k up to it that B and the
 * buffers take; dense, or
 * block-sparse: the tensor's non-zero blocks listed, or a list from the
 * input that may be out of order or past the end, the union into a list of
 * 0 to 7 entries and the dense output), FIN, LEAVE. The output buffer, the
 * lists and the deferred flags are heap allocations of
 * exactly their size, so any write past them is a report.
 *
 * Tenant mode (issue 19; a rank byte of 0x80 or more): every packet the
 * harness delivers is tagged under the job's key, every 7th under a wrong
 * key, and every packet the engine sends must carry its tag.
 *
 * Checked after every step:
 *  - tenant mode: every packet sent carries the job's tag; a packet with a
 *    wrong tag is counted (auth_fail) and changes nothing else (counters,
 *    phase, epoch, error);
 *  - every packet the engine sends is a valid worker packet of its job
 *    (validated alone, and against the job with the epoch the engine holds),
 *    from its rank, within its buffer, to the primary or the replica and to
 *    nothing else; every DATA of a round carries its cut; a DATA payload in
 *    f32 holds exactly the bits of the input block it names (cut: the mask
 *    of its non-zero sub-blocks, or the first for a zero block, and their
 *    bits);
 *  - a KEEPALIVE only with keepalives on, joined (READY or RUNNING, no
 *    error), when nothing was sent for the keepalive time, to the switch
 *    followed or to the replica standing by;
 *  - to the primary: JOIN (epoch 0), DATA, FIN, LEAVE, and nothing once the
 *    engine follows the replica; to the replica: a STANDBY JOIN with the
 *    primary's epoch, FAILOVER, FIN, LEAVE, and DATA only after the takeover
 *    or as the probe (counted in 'probes'); every packet but the JOIN to the
 *    primary carries the epoch the engine holds: the primary's JOIN_ACK's,
 *    then the accepted announcement's;
 *  - the engine's epoch changes only on a primary's JOIN_ACK while it had
 *    none, or on an announcement from the replica of its job with a new
 *    non-zero epoch, and only once each; a right announcement while the
 *    replica stands by (its STANDBY JOIN_ACK accepted, no ERROR from it since)
 *    is always taken;
 *  - engine_tx sends nothing before engine_next_deadline(), and when that
 *    has come it sends, changes phase or error, or moves the deadline on
 *    (no spinning transport); after a takeover in an operation the deadline
 *    is now (the resend);
 *  - the engine keeps no packet: the pool is empty after every step;
 *  - counters: packets received and sent as counted here, bad + stale at
 *    most the packets received, failovers 0 or 1 and equal to
 *    engine_failed_over(), FAILOVERs sent and probes as counted here, the
 *    round the rounds done; the phase is one of enum engine_phase, an error
 *    comes with a message, a stall with one, once.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "fuzz_util.h"
#include "ina/auth.h"
#include "ina/block.h"
#include "ina/encode.h"
#include "ina/log.h"
#include "ina/pkt.h"
#include "ina/subblock.h"
#include "ina/wire.h"

#define MAX_LANES 8
#define MAX_BLOCK 64
#define MAX_N 512
#define MAX_TX 16
#define MAX_OPS 256
#define RAW_MAX 400
#define JOB 7u
/* The job token; 0 in tenant mode, where the tag takes its field. */
static uint64_t fz_token;
#define TOKEN fz_token
#define MS 1000000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static int trace; /* INA_FUZZ_TRACE set: print what goes in and out */

/* What the last DATA on a lane said. */
struct lane_seen {
	int seen;
	struct ina_hdr h;
};

struct fz {
	struct fz_pool pool;
	struct engine_config cfg;
	uint64_t nb_tagged; /* tenant mode: packets delivered tagged */
	struct engine *e;
	uint64_t now;
	uint32_t epoch;		/* the switch's, once a JOIN_ACK was sent */
	uint32_t held;		/* the epoch the engine holds, as seen here */
	uint32_t primary_epoch; /* the primary's JOIN_ACK's */
	int has_replica;
	int standby_up; /* its STANDBY JOIN_ACK taken, no ERROR from it since */
	uint64_t fo_sent, probes;
	/* When the engine last heard the primary (the start, a valid packet
	 * from it, a valid RESULT from the replica), last progressed (the
	 * start, a RESULT neither bad nor stale) and last probed, as far as
	 * seen from here: never later than the engine's own. */
	uint64_t pri_heard_ns, progress_ns, probe_ns;
	uint64_t last_tx_ns; /* the last packet the engine sent */
	uint64_t keepalives; /* KEEPALIVEs sent */
	float *in, *out;
	uint8_t *deferred;
	/* A block-sparse round's lists (engine_set_blocks). */
	uint32_t *bidx, *bchain, *boidx, bcount;
	float *bvals, *bovals;
	uint32_t n;
	uint16_t bs;
	uint8_t cut; /* the round's sub_log */
	uint64_t recv, sent;
	struct lane_seen lanes[MAX_LANES];
};

static void
check_engine(const struct fz *f)
{
	const struct engine_stats *st = engine_stats(f->e);
	int phase = engine_phase(f->e);
	const char *stall;

	FZ_CHECK(f->pool.out == 0);
	FZ_CHECK(phase >= ENGINE_IDLE && phase <= ENGINE_REDIRECTED);
	FZ_CHECK(engine_lanes(f->e) >= 1 && engine_lanes(f->e) <= f->cfg.lanes);
	FZ_CHECK(st->pkts_recv == f->recv);
	FZ_CHECK(st->pkts_sent == f->sent);
	FZ_CHECK(st->bad + st->stale <= st->pkts_recv);
	FZ_CHECK(st->failovers <= 1 && st->failovers == (uint64_t)engine_failed_over(f->e));
	FZ_CHECK(st->failover_sent == f->fo_sent);
	FZ_CHECK(st->probes == f->probes);
	FZ_CHECK(st->keepalives == f->keepalives);
	FZ_CHECK(engine_epoch(f->e) == f->held);
	FZ_CHECK(engine_round(f->e) == (uint32_t)st->rounds);
	stall = engine_stall(f->e);
	if (stall) {
		/* Once per stall: a sentence, then nothing until the next. */
		FZ_CHECK(stall[0] && strlen(stall) < 1024);
		FZ_CHECK(engine_stall(f->e) == NULL);
	}
	if (!f->has_replica)
		FZ_CHECK(!st->failovers && !st->failover_sent && !st->probes && !st->standby_lost);
	if (engine_error(f->e))
		FZ_CHECK(engine_error_msg(f->e) && engine_error_msg(f->e)[0]);
	(void)engine_next_deadline(f->e);
}

static struct ina_job_params
params(const struct fz *f)
{
	struct ina_job_params p = {
		.job_id = JOB,
		.epoch = f->held,
		.token = TOKEN,
		.world = f->cfg.world,
		.lanes = engine_lanes(f->e), /* fewer after a GRANT */
		.max_block = f->cfg.max_block,
		.encoding = f->cfg.encoding,
	};
	return p;
}

static void
check_sent(struct fz *f, const struct ina_pkt *p)
{
	struct ina_job_params jp = params(f);
	struct ina_hdr h;
	enum ina_wire_reason r;
	int to_r = f->has_replica && ina_peer_equal(&p->peer, &f->cfg.replica);
	int fo = engine_failed_over(f->e);

	FZ_CHECK(p->len >= INA_HDR_SIZE && p->len <= p->cap);
	FZ_CHECK((to_r || ina_peer_equal(&p->peer, &f->cfg.sw)) && !p->dsts);
	r = ina_wire_validate(p->data, p->len, NULL, &h);
	if (r != INA_WIRE_OK)
		fprintf(stderr, "sent %s fails validation: %s\n", ina_wire_type_name(h.type),
			ina_wire_reason_name(r));
	FZ_CHECK(r == INA_WIRE_OK);
	if (trace)
		fprintf(stderr, "tx %s to %s epoch %u flags %#x\n", ina_wire_type_name(h.type),
			to_r ? "replica" : "primary", h.epoch, h.flags);
	FZ_CHECK(h.rank == f->cfg.rank && h.job_id == JOB && h.token == TOKEN);
	if (h.type == INA_T_KEEPALIVE) {
		/* Joined, nothing sent for the keepalive time; to the switch
		 * followed, and to the replica standing by. */
		FZ_CHECK(f->cfg.keepalive_ns && f->now - f->last_tx_ns >= f->cfg.keepalive_ns);
		FZ_CHECK(p->len == INA_HDR_SIZE && !engine_error(f->e) &&
			 (engine_phase(f->e) == ENGINE_READY ||
			  engine_phase(f->e) == ENGINE_RUNNING));
		FZ_CHECK(to_r || !fo);
		f->keepalives++;
	} else if (!to_r) {
		/* The primary: nothing once the engine follows the replica. */
		FZ_CHECK(!fo);
		FZ_CHECK(h.type == INA_T_JOIN || h.type == INA_T_DATA || h.type == INA_T_FIN ||
			 h.type == INA_T_LEAVE);
		if (h.type == INA_T_JOIN)
			FZ_CHECK(h.epoch == 0 && !(h.flags & INA_F_STANDBY));
	} else if (h.type == INA_T_JOIN) {
		FZ_CHECK(!fo && (h.flags & INA_F_STANDBY) && h.epoch == f->primary_epoch &&
			 h.epoch != 0);
	} else if (h.type == INA_T_FAILOVER) {
		/* Only while an operation runs and the primary is silent. */
		FZ_CHECK(!fo && p->len == INA_HDR_SIZE && engine_phase(f->e) == ENGINE_RUNNING);
		FZ_CHECK(f->now - f->pri_heard_ns >= f->cfg.failover_ns);
		f->fo_sent++;
	} else if (h.type == INA_T_DATA) {
		/* After the takeover, or as the probe of a replica standing by. */
		if (!fo) {
			/* Once per failover time without progress. */
			FZ_CHECK(f->now - f->progress_ns >= f->cfg.failover_ns);
			FZ_CHECK(!f->probe_ns || f->now - f->probe_ns >= f->cfg.failover_ns);
			f->probe_ns = f->now;
			f->probes++;
		}
	} else {
		FZ_CHECK(h.type == INA_T_FIN || h.type == INA_T_LEAVE);
	}
	if (!(h.type == INA_T_JOIN && !to_r)) {
		FZ_CHECK(h.epoch == f->held);
		if (f->held && h.type != INA_T_JOIN) {
			r = ina_wire_validate(p->data, p->len, &jp, &h);
			if (r != INA_WIRE_OK)
				fprintf(stderr, "sent %s fails the job's validation: %s\n",
					ina_wire_type_name(h.type), ina_wire_reason_name(r));
			FZ_CHECK(r == INA_WIRE_OK);
		}
	}
	if (h.type == INA_T_JOIN)
		FZ_CHECK(engine_phase(f->e) == ENGINE_JOINING);
	if (h.type != INA_T_DATA)
		return;
	FZ_CHECK(engine_phase(f->e) == ENGINE_RUNNING && !engine_error(f->e));
	FZ_CHECK(h.lane < f->cfg.lanes);
	FZ_CHECK(h.sub_log == f->cut);
	if (trace)
		fprintf(stderr, "tx data lane %u block %u next %u n %u flags %#x cut %u\n", h.lane,
			h.block, h.next, h.n_elems, h.flags, h.sub_log);
	if (h.lane < MAX_LANES) {
		f->lanes[h.lane].seen = 1;
		f->lanes[h.lane].h = h;
	}
	/* What an f32 DATA carries is the input block it names, bit for bit. */
	if (h.encoding == INA_ENC_F32 && h.n_elems && f->in && h.tensor_len == f->n &&
	    h.block_size == f->bs && !h.sub_log) {
		uint8_t want[4 * MAX_BLOCK];

		ina_enc_f32_put(want, f->in + (size_t)h.block * h.block_size, h.n_elems);
		FZ_CHECK(memcmp(want, p->data + INA_HDR_SIZE, 4u * h.n_elems) == 0);
	}
	if (h.encoding == INA_ENC_F32 && h.n_elems && f->in && h.tensor_len == f->n &&
	    h.block_size == f->bs && h.sub_log) {
		uint8_t want[16 + 4 * MAX_BLOCK];
		const float *x = f->in + (size_t)h.block * h.block_size;
		struct ina_sub_cut c = ina_sub_cut(h.block_size, h.sub_log, h.n_elems);
		struct ina_sub_mask m;
		size_t len;

		ina_sub_mask_nonzero(&m, x, &c);
		if (ina_sub_mask_empty(&m))
			m.w[0] = 1; /* a listed zero block: its first sub-block */
		len = ina_sub_encode(want, x, &m, &c, ina_encoding(INA_ENC_F32), 0);
		FZ_CHECK(p->len == INA_HDR_SIZE + len);
		FZ_CHECK(memcmp(want, p->data + INA_HDR_SIZE, len) == 0);
	}
}

static void
op_tx(struct fz *f, struct fz_in *in)
{
	struct ina_pkt *out[MAX_TX];
	uint16_t max = (uint16_t)(1 + fz_u8(in) % MAX_TX);
	uint64_t deadline = engine_next_deadline(f->e);
	int phase = engine_phase(f->e), err = engine_error(f->e);
	uint16_t nb = engine_tx(f->e, f->now, out, max);

	FZ_CHECK(nb <= max);
	/* Nothing to send before the deadline the engine gave: a transport
	 * that sleeps until then misses nothing. */
	if (deadline > f->now)
		FZ_CHECK(nb == 0);
	/* A deadline that has come does some work, or the transport, which
	 * sleeps only until a deadline in the future, would spin (unless the
	 * pool ran dry). */
	else if (nb == 0 && phase == engine_phase(f->e) && err == engine_error(f->e) &&
		 f->pool.limit > MAX_TX)
		FZ_CHECK(engine_next_deadline(f->e) > f->now);
	f->sent += nb;
	for (uint16_t i = 0; i < nb; i++) {
		if (f->cfg.auth)
			FZ_CHECK(ina_auth_check(&f->cfg.key, out[i]->data, out[i]->len));
		check_sent(f, out[i]);
		ina_pkt_free(out[i]);
	}
	if (nb)
		f->last_tx_ns = f->now;
}

/*
 * The engine's epoch after a packet: it may change only to a primary's
 * JOIN_ACK's while the engine held none, or to the new epoch of an
 * announcement from the replica (the takeover, once).
 */
static void
check_epoch(struct fz *f, const uint8_t *bytes, size_t len, int from_r, uint32_t ep0, int fo0,
	    int ph0)
{
	uint32_t ep = engine_epoch(f->e);
	int fo = engine_failed_over(f->e);
	struct ina_hdr h;

	FZ_CHECK(fo >= fo0);
	if (len >= INA_HDR_SIZE)
		ina_wire_decode_hdr(bytes, &h);
	if (fo != fo0) {
		/* The takeover: the replica's announcement of this job. */
		FZ_CHECK(len == INA_HDR_SIZE && f->has_replica && from_r);
		FZ_CHECK(h.type == INA_T_FAILOVER && h.rank == INA_RANK_SWITCH && h.job_id == JOB &&
			 h.token == TOKEN && !(h.flags & (INA_F_STANDBY | INA_F_DEFERRED)));
		FZ_CHECK(ep0 != 0 && h.epoch != 0 && h.epoch != ep0 && ep == h.epoch);
		FZ_CHECK(ph0 != ENGINE_CLOSED && ph0 != ENGINE_IDLE);
		if (trace)
			fprintf(stderr, "taken over: epoch %u -> %u\n", ep0, ep);
		/* What was in flight goes again at once, to the replica. */
		if (ph0 == ENGINE_RUNNING && engine_phase(f->e) == ENGINE_RUNNING &&
		    !engine_error(f->e))
			FZ_CHECK(engine_next_deadline(f->e) <= f->now);
		f->held = ep;
		f->epoch = ep;
		return;
	}
	if (ep != ep0) {
		/* The primary's JOIN_ACK. */
		FZ_CHECK(ep0 == 0 && !fo && len >= INA_HDR_SIZE && !from_r);
		FZ_CHECK(h.type == INA_T_JOIN_ACK && !(h.flags & INA_F_STANDBY) && h.epoch == ep &&
			 ph0 == ENGINE_JOINING);
		f->held = ep;
		f->primary_epoch = ep;
	}
	/* The replica's STANDBY JOIN_ACK completes the join. */
	if (from_r && !fo && ph0 == ENGINE_JOINING && engine_phase(f->e) == ENGINE_READY &&
	    len >= INA_HDR_SIZE && h.type == INA_T_JOIN_ACK) {
		FZ_CHECK(h.flags & INA_F_STANDBY);
		f->standby_up = 1;
	}
	if (from_r && len >= INA_HDR_SIZE && bytes[1] == INA_T_ERROR)
		f->standby_up = 0;
}

/* Delivers 'bytes' from the primary, or with 'from_r' from the replica. */
static void
deliver_from(struct fz *f, const uint8_t *bytes, size_t len, int from_r)
{
	struct ina_pkt *p = fz_pkt(&f->pool, bytes, len);
	uint32_t ep0 = engine_epoch(f->e);
	int fo0 = engine_failed_over(f->e), ph0 = engine_phase(f->e);
	uint64_t bad, stale;

	if (!p)
		return;
	if (len > p->cap)
		len = p->cap;
	from_r = from_r && f->has_replica;
	if (trace && len >= INA_HDR_SIZE) {
		struct ina_hdr h;

		ina_wire_decode_hdr(bytes, &h);
		fprintf(stderr, "rx %s from %s epoch %u lane %u block %u next %u n %u flags %#x\n",
			ina_wire_type_name(h.type), from_r ? "replica" : "primary", h.epoch, h.lane,
			h.block, h.next, h.n_elems, h.flags);
	}
	p->peer = from_r ? f->cfg.replica : f->cfg.sw;
	f->recv++;
	bad = engine_stats(f->e)->bad;
	stale = engine_stats(f->e)->stale;
	if (f->cfg.auth && p->len >= INA_HDR_SIZE) {
		/* What the engine sees once the tag checked: the field zero. */
		static uint8_t seen[INA_HDR_SIZE + 16 + 4 * MAX_BLOCK];
		struct ina_pkt *forged = fz_pkt(&f->pool, p->data, p->len);

		if (++f->nb_tagged % 7 == 0 && forged) {
			/* A forgery first, the same bytes under another key:
			 * nothing but auth_fail may change. */
			struct ina_job_key wrong;
			uint64_t fails = engine_stats(f->e)->auth_fail;
			int err = engine_error(f->e);

			forged->peer = p->peer;
			memset(&wrong, 0xa5, sizeof(wrong));
			ina_auth_sign(&wrong, forged->data, forged->len);
			engine_rx(f->e, &forged, 1, f->now);
			f->recv++;
			FZ_CHECK(engine_stats(f->e)->auth_fail == fails + 1);
			FZ_CHECK(engine_stats(f->e)->bad == bad &&
				 engine_stats(f->e)->stale == stale);
			FZ_CHECK(engine_epoch(f->e) == ep0 && engine_phase(f->e) == ph0 &&
				 engine_failed_over(f->e) == fo0 && engine_error(f->e) == err);
		} else if (forged) {
			ina_pkt_free(forged);
		}
		ina_auth_sign(&f->cfg.key, p->data, p->len);
		FZ_CHECK(len <= sizeof(seen));
		memcpy(seen, bytes, len);
		memset(seen + INA_TAG_OFFSET, 0, 8);
		bytes = seen;
	}
	engine_rx(f->e, &p, 1, f->now);
	if (len >= INA_HDR_SIZE && engine_stats(f->e)->bad == bad) {
		if (!fo0 && (from_r ? bytes[1] == INA_T_RESULT
				    : bytes[1] != INA_T_FAILOVER && !(bytes[3] & INA_F_STANDBY)))
			f->pri_heard_ns = f->now;
		if (bytes[1] == INA_T_RESULT && engine_stats(f->e)->stale == stale)
			f->progress_ns = f->now;
	}
	check_epoch(f, bytes, len, from_r, ep0, fo0, ph0);
}

static struct ina_hdr
sw_hdr(const struct fz *f, uint8_t type)
{
	struct ina_hdr h;

	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = type;
	h.encoding = f->cfg.encoding;
	h.job_id = JOB;
	h.epoch = f->epoch;
	h.rank = INA_RANK_SWITCH;
	h.token = TOKEN;
	return h;
}

static void
op_join_ack(struct fz *f, struct fz_in *in, uint8_t op)
{
	uint8_t pkt[INA_HDR_SIZE + sizeof(struct ina_wire_join)];
	struct ina_hdr h;
	uint16_t lanes = f->cfg.lanes;

	if (!f->epoch || (op & 0x10))
		f->epoch = 1 + fz_u8(in) % 3;
	h = sw_hdr(f, INA_T_JOIN_ACK);
	if (op & 0x20)
		lanes = (uint16_t)(lanes + 1); /* not the job the worker asked for */
	if (op & 0x40)
		h.flags = INA_F_STANDBY; /* the replica's answer to a standby JOIN */
	ina_wire_encode_hdr(&h, pkt);
	ina_wire_encode_join(f->cfg.world, lanes, f->cfg.max_block, pkt + INA_HDR_SIZE);
	/* From the replica if STANDBY, unless 0x80: from the wrong peer. */
	deliver_from(f, pkt, sizeof(pkt), !!(op & 0x40) != !!(op & 0x80));
}

static void
op_result(struct fz *f, struct fz_in *in, uint8_t op)
{
	static uint8_t pkt[INA_HDR_SIZE + 16 + 4 * MAX_BLOCK];
	uint8_t l = (uint8_t)(fz_u8(in) % f->cfg.lanes), sel = fz_u8(in);
	const struct lane_seen *ls = &f->lanes[l % MAX_LANES];
	struct ina_hdr h = sw_hdr(f, op & 0x80 ? INA_T_WAIT : INA_T_RESULT);
	uint32_t nb;
	size_t plen = 0;

	if (!ls->seen)
		return;
	h.flags = ls->h.flags & INA_F_VER;
	h.lane = l;
	h.tensor_id = ls->h.tensor_id;
	h.round = ls->h.round;
	h.tensor_len = ls->h.tensor_len;
	h.block_size = ls->h.block_size;
	h.sub_log = ls->h.sub_log;
	h.block = ls->h.block;
	nb = ina_wire_nb_blocks(h.tensor_len, h.block_size);
	if (h.type == INA_T_WAIT) {
		h.flags = sel & 1;
		/* LIVE (the switch vouches for the ranks named) or not. */
		h.status = sel & 2 ? INA_WAIT_LIVE : 0;
		ina_wire_encode_hdr(&h, pkt);
		fz_bytes(in, pkt + INA_HDR_SIZE, INA_WAIT_PAYLOAD);
		deliver_from(f, pkt, INA_HDR_SIZE + INA_WAIT_PAYLOAD, op & 0x10);
		return;
	}
	/* The next block: what the worker announced, END, or another of the lane. */
	switch (sel & 3) {
	case 0:
		h.next = ls->h.next;
		break;
	case 1:
		h.next = INA_BLOCK_END;
		break;
	default:
		h.next = (h.block == INA_BLOCK_OPEN ? l : h.block + f->cfg.lanes) +
			 (uint32_t)(fz_u8(in) % 4) * f->cfg.lanes;
		if (h.next >= nb)
			h.next = INA_BLOCK_END;
		break;
	}
	if (h.next != INA_BLOCK_END && f->cfg.encoding == INA_ENC_I32)
		h.exp = (int16_t)fz_u16(in);
	if (sel & 0x04)
		h.flags |= INA_F_SATURATED;
	if (sel & 0x08)
		h.flags ^= INA_F_VER; /* the other version: stale */
	if (h.block != INA_BLOCK_OPEN && !(sel & 0x10) && h.sub_log) {
		struct ina_sub_cut c;
		struct ina_sub_mask m;

		/* The union's mask from the input: 0x80 as it comes (maybe
		 * bad_mask), else its valid bits, at least one. */
		h.n_elems = ina_wire_block_elems(h.tensor_len, h.block_size, h.block);
		c = ina_sub_cut(h.block_size, h.sub_log, h.n_elems);
		fz_bytes(in, pkt + INA_HDR_SIZE, c.mask_bytes);
		ina_sub_mask_read(&m, pkt + INA_HDR_SIZE, &c);
		if (!(sel & 0x80)) {
			for (uint32_t i = c.count; i < INA_SUB_MAX; i++)
				m.w[i / 64] &= ~(1ull << (i % 64));
			if (ina_sub_mask_empty(&m))
				m.w[0] = 1;
			ina_sub_mask_write(pkt + INA_HDR_SIZE, &m, &c);
		}
		plen = c.mask_bytes +
		       (size_t)ina_sub_present_elems(&m, &c) * ina_wire_elem_size(h.encoding);
		if (INA_HDR_SIZE + plen > sizeof(pkt))
			return;
		if (sel & 0x40)
			h.round++; /* another round: stale */
		ina_wire_encode_hdr(&h, pkt);
		fz_bytes(in, pkt + INA_HDR_SIZE + c.mask_bytes, plen - c.mask_bytes);
		deliver_from(f, pkt, INA_HDR_SIZE + plen, op & 0x10);
		return;
	}
	if (h.block != INA_BLOCK_OPEN && !(sel & 0x10)) {
		h.n_elems = ina_wire_block_elems(h.tensor_len, h.block_size, h.block);
		plen = (size_t)h.n_elems * ina_wire_elem_size(h.encoding);
	} else if (h.block != INA_BLOCK_OPEN && (sel & 0x20)) {
		h.flags |= INA_F_DEFERRED;
	}
	if (sel & 0x40)
		h.round++; /* another round: stale */
	if (INA_HDR_SIZE + plen > sizeof(pkt))
		return;
	ina_wire_encode_hdr(&h, pkt);
	fz_bytes(in, pkt + INA_HDR_SIZE, plen);
	/* 0x10: passed on by the replica, as every RESULT is when there is one. */
	deliver_from(f, pkt, INA_HDR_SIZE + plen, op & 0x10);
}

static void
op_error(struct fz *f, struct fz_in *in, uint8_t op)
{
	uint8_t pkt[INA_HDR_SIZE + INA_ERROR_MSG_MAX];
	struct ina_hdr h = sw_hdr(f, INA_T_ERROR);
	size_t len = fz_u8(in) % (INA_ERROR_MSG_MAX + 1);

	h.epoch = 0;
	h.status = (uint16_t)(1 + fz_u8(in) % 5);
	ina_wire_encode_hdr(&h, pkt);
	fz_bytes(in, pkt + INA_HDR_SIZE, len);
	deliver_from(f, pkt, INA_HDR_SIZE + len, op & 0x10);
}

/*
 * The replica's FAILOVER announcement. 'sel': bits 0-1 the epoch (the one
 * held plus one, plus two, the one held, or 0), 0x04 another job, 0x08
 * another token, 0x10 from the primary, 0x20 from a rank, 0x40 the STANDBY
 * flag (bad_flags), 0x80 a payload byte too. Without any of these it is
 * right, and taken while the replica stands by. (A RETX or VER flag is no
 * reason to drop it: like every control packet's, ina_wire_validate()
 * ignores them.)
 */
static void
op_announce(struct fz *f, struct fz_in *in)
{
	uint8_t pkt[INA_HDR_SIZE + 1];
	uint8_t sel = fz_u8(in);
	struct ina_hdr h = sw_hdr(f, INA_T_FAILOVER);
	uint32_t held = engine_epoch(f->e);
	int right, ph0 = engine_phase(f->e), fo0 = engine_failed_over(f->e);

	switch (sel & 3) {
	case 0:
		h.epoch = held + 1;
		break;
	case 1:
		h.epoch = held + 2;
		break;
	case 2:
		h.epoch = held;
		break;
	default:
		h.epoch = 0;
		break;
	}
	if (sel & 0x04)
		h.job_id = JOB + 1;
	if (sel & 0x08)
		h.token = ~TOKEN;
	if (sel & 0x20)
		h.rank = f->cfg.rank;
	if (sel & 0x40)
		h.flags = INA_F_STANDBY;
	pkt[INA_HDR_SIZE] = 0;
	ina_wire_encode_hdr(&h, pkt);
	right = !(sel & 0xfc) && h.epoch != 0 && h.epoch != held;
	deliver_from(f, pkt, INA_HDR_SIZE + !!(sel & 0x80), !(sel & 0x10));
	if (right && f->has_replica && f->standby_up && !fo0 && ph0 != ENGINE_CLOSED)
		FZ_CHECK(engine_failed_over(f->e));
}

static void
op_raw(struct fz *f, struct fz_in *in, uint8_t op)
{
	uint8_t pkt[RAW_MAX];
	size_t len = fz_u16(in) % RAW_MAX;

	fz_bytes(in, pkt, len);
	deliver_from(f, pkt, len, op & 0x10);
}

/* A block-sparse round: the tensor's non-zero blocks listed, or (sel & 8)
 * a list made of the input, which may be out of order or past the end (the
 * engine refuses it); the union into a list of 0 to 7 entries (the engine
 * counts past it) and the dense output. */
static void
start_blocks(struct fz *f, struct fz_in *in, uint8_t sel, uint32_t nb)
{
	struct engine_blocks b = { 0 };
	uint32_t count = 0;

	free(f->bidx);
	free(f->bchain);
	free(f->boidx);
	free(f->bvals);
	free(f->bovals);
	f->bidx = calloc(nb, sizeof(*f->bidx));
	f->bchain = calloc(nb, sizeof(*f->bchain));
	f->boidx = calloc(8, sizeof(*f->boidx));
	f->bvals = calloc((size_t)nb * f->bs, sizeof(float));
	f->bovals = calloc((size_t)8 * f->bs, sizeof(float));
	if (!f->bidx || !f->bchain || !f->boidx || !f->bvals || !f->bovals)
		abort();
	if (sel & 8) {
		count = fz_u8(in) % (nb + 1);
		for (uint32_t i = 0; i < count; i++) {
			uint32_t k = fz_u8(in) % (nb + 2);

			f->bidx[i] = k;
			if (k < nb) /* the input's bits, as the DATA check wants */
				memcpy(f->bvals + (size_t)i * f->bs, f->in + (size_t)k * f->bs,
				       ina_wire_block_elems(f->n, f->bs, k) * sizeof(float));
		}
	} else {
		for (uint32_t k = 0; k < nb; k++) {
			uint32_t len = ina_wire_block_elems(f->n, f->bs, k);

			if (!ina_block_is_zero(f->in + (size_t)k * f->bs, len)) {
				memcpy(f->bvals + (size_t)count * f->bs, f->in + (size_t)k * f->bs,
				       len * sizeof(float));
				f->bidx[count++] = k;
			}
		}
	}
	f->bcount = 0;
	b.index = f->bidx;
	b.values = f->bvals;
	b.count = count;
	b.chain = f->bchain;
	b.dense = f->out;
	b.out_index = f->boidx;
	b.out_values = f->bovals;
	b.capacity = fz_u8(in) % 8;
	b.out_count = &f->bcount;
	engine_set_blocks(f->e, &b);
}

static void
start_op(struct fz *f, struct fz_in *in, uint8_t sel)
{
	float bound;
	uint32_t nb;
	uint8_t k;

	if (engine_phase(f->e) != ENGINE_READY)
		return;
	/* The cut: the largest k up to the byte's that B and a buffer take. */
	k = fz_u8(in) % (INA_SUB_LOG_MAX + 1);
	while (k && (f->bs % (1u << k) ||
		     INA_HDR_SIZE + ina_wire_mask_bytes(k) +
				     (size_t)f->bs * ina_wire_elem_size(f->cfg.encoding) >
			     f->pool.base.buf_size))
		k--;
	f->cut = k;
	engine_set_cut(f->e, k);
	free(f->out);
	free(f->deferred);
	f->out = malloc(f->n * sizeof(float));
	nb = ina_wire_nb_blocks(f->n, f->bs);
	f->deferred = malloc(nb);
	if (!f->out || !f->deferred)
		abort();
	memset(f->out, 0x7f, f->n * sizeof(float));
	if (sel & 1) {
		bound = (float)(1 + fz_u8(in)) / 16.0f;
		engine_set_result_filter(f->e, bound, f->deferred);
	}
	memset(f->lanes, 0, sizeof(f->lanes));
	if (sel & 4) {
		start_blocks(f, in, sel, nb);
		if (engine_allreduce(f->e, fz_u8(in), NULL, NULL, f->n, f->bs,
				     (sel & 2) ? ENGINE_AVG : ENGINE_SUM, f->now) == 0)
			f->pri_heard_ns = f->progress_ns = f->now;
		return;
	}
	if (engine_allreduce(f->e, fz_u8(in), f->in, f->out, f->n, f->bs,
			     (sel & 2) ? ENGINE_AVG : ENGINE_SUM, f->now) == 0) {
		f->pri_heard_ns = f->progress_ns = f->now;
		f->probe_ns = 0;
	} else {
		FZ_CHECK(engine_error(f->e));
	}
}

static void
run_ops(struct fz *f, struct fz_in *in)
{
	for (int k = 0; k < MAX_OPS && in->n; k++) {
		uint8_t op = fz_u8(in);

		switch (op & 0x0f) {
		case 0:
		case 1:
		case 2:
			op_tx(f, in);
			break;
		case 3:
			op_join_ack(f, in, op);
			break;
		case 4:
		case 5:
		case 6:
			op_result(f, in, op);
			break;
		case 7:
			op_error(f, in, op);
			break;
		case 8: {
			uint8_t pkt[INA_HDR_SIZE];
			struct ina_hdr h = sw_hdr(f, INA_T_FIN_ACK);

			ina_wire_encode_hdr(&h, pkt);
			deliver_from(f, pkt, sizeof(pkt), op & 0x10);
			break;
		}
		case 9:
			op_raw(f, in, op);
			break;
		case 10:
			f->now += (uint64_t)fz_u8(in) << ((op >> 4) * 2);
			break;
		case 11:
			start_op(f, in, op >> 4);
			break;
		case 12:
			engine_finish(f->e, f->now);
			break;
		case 13:
			engine_leave(f->e, f->now);
			break;
		case 14:
			op_announce(f, in);
			break;
		default:
			/* Past the next deadline. */
			if (engine_next_deadline(f->e) != UINT64_MAX &&
			    engine_next_deadline(f->e) > f->now)
				f->now = engine_next_deadline(f->e);
			break;
		}
		check_engine(f);
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	ina_log_set_level(INA_LOG_ERR);
	trace = getenv("INA_FUZZ_TRACE") != NULL;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz f;
	struct fz_in in = { data, size };
	uint8_t wb, nz, b;

	memset(&f, 0, sizeof(f));
	engine_config_init(&f.cfg);
	f.cfg.job_id = JOB;
	wb = fz_u8(&in);
	f.cfg.world = (uint16_t)(1 + wb % 8);
	f.has_replica = !!(wb & 0x80); /* a replica peer */
	/* Bits 3-5: a pool of only that many packets, so allocations fail. */
	fz_pool_init(&f.pool, (wb >> 3 & 7) ? (wb >> 3 & 7) : 4 * MAX_TX,
		     INA_HDR_SIZE + 16 + 4 * MAX_BLOCK);
	b = fz_u8(&in);
	f.cfg.rank = (uint16_t)((b & 0x7f) % f.cfg.world);
	f.cfg.auth = b >= 0x80; /* tenant mode */
	fz_token = f.cfg.auth ? 0 : 0x0123456789abcdefull;
	f.cfg.token = TOKEN;
	if (f.cfg.auth)
		memset(&f.cfg.key, 0x3c, sizeof(f.cfg.key));
	f.cfg.lanes = (uint16_t)(1 + fz_u8(&in) % MAX_LANES);
	f.cfg.max_block = (uint16_t)(1 + fz_u8(&in) % MAX_BLOCK);
	f.cfg.encoding = (uint8_t)(1 + fz_u8(&in) % INA_ENC_MAX);
	f.cfg.rto_ns = (1 + (uint64_t)fz_u8(&in)) * 100000ull;
	f.cfg.rto_min_ns = f.cfg.rto_ns;
	f.cfg.rto_max_ns = 8 * f.cfg.rto_ns;
	f.cfg.timeout_ns = (1 + (uint64_t)fz_u8(&in)) * MS;
	f.cfg.sw.len = 16;
	memset(f.cfg.sw.bytes, 0x42, 16);
	if (f.has_replica) {
		/* 1 to 256 first timeouts: below the backoff cap or above. */
		f.cfg.failover_ns = (1 + (uint64_t)fz_u8(&in)) * f.cfg.rto_ns;
		f.cfg.replica.len = 16;
		memset(f.cfg.replica.bytes, 0x43, 16);
	}
	if (wb & 0x40) {
		/* Keepalives every 1 to 256 first timeouts; the longest pause
		 * 1 to 8 timeouts. */
		f.cfg.keepalive_ns = (1 + (uint64_t)fz_u8(&in)) * f.cfg.rto_ns;
		f.cfg.pause_ns = (1 + (uint64_t)(fz_u8(&in) % 8)) * f.cfg.timeout_ns;
	}
	f.cfg.pool = &f.pool.base;
	f.n = 1 + fz_u16(&in) % MAX_N;
	f.bs = (uint16_t)(1 + fz_u8(&in) % f.cfg.max_block);
	nz = fz_u8(&in);
	/* The tensor: 'nz' of its elements set from the input, the rest zero. */
	f.in = calloc(f.n, sizeof(float));
	if (!f.in)
		return 0;
	for (unsigned i = 0; i < nz % 32; i++) {
		uint16_t at = fz_u16(&in);
		uint32_t bits = fz_u32(&in);

		memcpy(&f.in[at % f.n], &bits, sizeof(bits));
	}
	f.now = 1000 * MS;
	f.e = engine_create(&f.cfg);
	FZ_CHECK(f.e != NULL);
	FZ_CHECK(engine_join(f.e, f.now) == 0);
	run_ops(&f, &in);
	if (trace) {
		const struct engine_stats *st = engine_stats(f.e);

		fprintf(stderr,
			"phase %d error %d (%s) rounds %llu sent %llu recv %llu bad %llu"
			" stale %llu retx %llu waits %llu deferred %llu saturated %llu"
			" failovers %llu failover_sent %llu probes %llu standby_lost %llu\n",
			engine_phase(f.e), engine_error(f.e), engine_error_msg(f.e),
			(unsigned long long)st->rounds, (unsigned long long)st->pkts_sent,
			(unsigned long long)st->pkts_recv, (unsigned long long)st->bad,
			(unsigned long long)st->stale, (unsigned long long)st->retransmits,
			(unsigned long long)st->waits, (unsigned long long)st->deferred,
			(unsigned long long)st->saturated, (unsigned long long)st->failovers,
			(unsigned long long)st->failover_sent, (unsigned long long)st->probes,
			(unsigned long long)st->standby_lost);
	}
	engine_destroy(f.e);
	FZ_CHECK(f.pool.out == 0);
	free(f.in);
	free(f.out);
	free(f.bidx);
	free(f.bchain);
	free(f.boidx);
	free(f.bvals);
	free(f.bovals);
	free(f.deferred);
	return 0;
}
