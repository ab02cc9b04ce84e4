/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the host engine (host/src/engine.c), driven by hand: the test
 * plays the switch, building JOIN_ACK, RESULT, WAIT, ERROR and FIN_ACK packets
 * itself, and advances a virtual clock. Every packet the engine sends is
 * validated against the job and checked field by field. Covers the JOIN and
 * its backoff, refusal, the lane openers of f32 and i32, results, zero-fill of
 * skipped blocks, version bits, averages, stale and invalid packets,
 * retransmission, WAIT, timeouts and every error, FIN, LEAVE, in-place
 * operation and the deadline; rounds cut into sub-blocks (the DATA's mask
 * and values, masked RESULTs decoded, zero-filled, in place, averaged, in
 * f32, i32 and bf16, block-sparse, ssp); with a replica switch, the standby JOIN, the
 * silence that asks for a failover (and the WAITs that do not), the
 * takeover, and the goodbye to both; and after every test, that no buffer
 * leaked.
 */
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"
#include "ina/encode.h"
#include "ina/encoding.h"
#include "ina/log.h"
#include "ina/pkt.h"
#include "ina/subblock.h"
#include "ina/wire.h"
#include "wire_check.h"

#define NB_PKTS 64    /* packets in the test pool */
#define BUF_SIZE 2048 /* bytes per packet buffer */
#define MAX_TX 16     /* room for one engine_tx() */
#define MAXE 64	      /* largest tensor a test uses */

#define US 1000ull
#define MS 1000000ull
#define RTO (1 * MS)
#define RTO_MAX (8 * MS)
#define TIMEOUT (100 * MS)
#define T0 (1000 * MS)
#define SEC_NS (1000 * MS)

#define JOB 7u
#define TOKEN 0x0123456789abcdefull
#define EPOCH 5u
#define TENSOR 9u
#define EPOCH2 6u	   /* the replica's epoch after a takeover */
#define FAILOVER (20 * MS) /* failover_ns of the replica tests */

struct t {
	struct ina_pkt_pool *pool;
	struct engine_config cfg;
	struct engine *e;
	uint64_t now;
	/* The operation running, as the switch sees it. */
	uint32_t tensor_id;
	uint32_t round;
	uint32_t n;
	uint16_t bs;
	uint8_t sub_log;		/* the round's cut */
	uint32_t epoch;			/* the epoch the engine should use */
	const struct ina_peer *res_src; /* where RESULTs come from */
};

/* The packets of the last engine_tx(), copied and decoded. */
static struct wc_got g[MAX_TX];
static float in[MAXE], out[MAXE], other[MAXE], want[MAXE];

static int
setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	t->pool = ina_pkt_pool_create(NB_PKTS, BUF_SIZE);
	if (!t->pool) {
		free(t);
		return -1;
	}
	engine_config_init(&t->cfg);
	t->cfg.job_id = JOB;
	t->cfg.rank = 0;
	t->cfg.world = 2;
	t->cfg.lanes = 2;
	t->cfg.max_block = 4;
	t->cfg.encoding = INA_ENC_F32;
	t->cfg.token = TOKEN;
	t->cfg.sw.len = 16;
	for (int k = 0; k < 16; k++)
		t->cfg.sw.bytes[k] = (uint8_t)(0x40 + k);
	t->cfg.rto_ns = RTO;
	t->cfg.rto_min_ns = RTO;
	t->cfg.rto_max_ns = RTO_MAX;
	t->cfg.timeout_ns = TIMEOUT;
	t->cfg.pool = t->pool;
	t->now = T0;
	t->epoch = EPOCH;
	t->res_src = &t->cfg.sw;
	memset(in, 0, sizeof(in));
	memset(other, 0, sizeof(other));
	memset(out, 0x7f, sizeof(out)); /* garbage the results must replace */
	*state = t;
	return 0;
}

static int
teardown(void **state)
{
	struct t *t = *state;

	engine_destroy(t->e);
	ina_pkt_pool_destroy(t->pool);
	free(t);
	return 0;
}

static void
start(struct t *t)
{
	t->e = engine_create(&t->cfg);
	assert_non_null(t->e);
}

/* Every packet is back in the pool. */
static void
done(struct t *t)
{
	assert_int_equal(ina_pkt_pool_avail(t->pool), NB_PKTS);
}

static struct ina_job_params
params(const struct t *t)
{
	struct ina_job_params p = {
		.job_id = JOB,
		.epoch = engine_epoch(t->e),
		.token = TOKEN,
		.world = t->cfg.world,
		.lanes = t->cfg.lanes,
		.max_block = t->cfg.max_block,
		.encoding = t->cfg.encoding,
	};

	return p;
}

/* engine_tx() now: every packet is validated against the job, copied into
 * g[], and freed. Returns how many. */
static uint16_t
tx(struct t *t)
{
	struct ina_pkt *pkts[MAX_TX];
	struct ina_job_params p = params(t);
	uint16_t n = engine_tx(t->e, t->now, pkts, MAX_TX);

	for (uint16_t i = 0; i < n; i++) {
		struct ina_pkt *pkt = pkts[i];

		/* A FAILOVER is checked by hand (check_failover). */
		wc_decode(&g[i], pkt, pkt->data[1] == INA_T_FAILOVER ? NULL : &p);
		assert_true(ina_peer_equal(&pkt->peer, &t->cfg.sw) ||
			    (t->cfg.replica.len && ina_peer_equal(&pkt->peer, &t->cfg.replica)));
		assert_null(pkt->dsts);
		ina_pkt_free(pkt);
	}
	return n;
}

/* The one packet engine_tx() sends now. */
static const struct wc_got *
tx_one(struct t *t)
{
	assert_int_equal(tx(t), 1);
	return &g[0];
}

/* The packet of g[0..n) for 'lane'. */
static const struct wc_got *
for_lane(uint16_t n, uint16_t lane)
{
	const struct wc_got *r = NULL;

	for (uint16_t i = 0; i < n; i++) {
		if (g[i].h.lane == lane) {
			assert_null(r); /* one packet per lane */
			r = &g[i];
		}
	}
	assert_non_null(r);
	return r;
}

/* 'got' holds exactly the bits of 'exp' (n floats). */
static void
assert_floats(const float *got, const float *exp, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(&got[i], &exp[i], sizeof(float)) != 0)
			fail_msg("element %zu: got %.9g want %.9g", i, (double)got[i],
				 (double)exp[i]);
}

/* Fields every packet of this worker carries. */
static void
check_from_worker(const struct t *t, const struct wc_got *p, uint8_t type, uint32_t epoch)
{
	wc_assert_hdr(p, type, t->cfg.encoding, JOB, epoch, t->cfg.rank, TOKEN);
}

/* A DATA packet for 'block' of 'lane': with 'vals' (floats or int32s, the
 * block's elements) or, if NULL, empty. */
static void
check_data(const struct t *t, const struct wc_got *p, uint16_t lane, uint32_t block, uint8_t ver,
	   int retx, uint32_t next, int16_t exp, const void *vals)
{
	check_from_worker(t, p, INA_T_DATA, t->epoch);
	assert_int_equal(p->h.flags, ver | (retx ? INA_F_RETX : 0));
	assert_int_equal(p->h.lane, lane);
	assert_int_equal(p->h.tensor_id, t->tensor_id);
	assert_int_equal(p->h.round, t->round);
	assert_int_equal(p->h.tensor_len, t->n);
	assert_int_equal(p->h.block_size, t->bs);
	assert_int_equal(p->h.block, block);
	assert_int_equal(p->h.next, next);
	assert_int_equal(p->h.exp, exp);
	wc_assert_block(p, t->n, t->bs, block, vals);
}

/* A control packet (FIN, LEAVE) with no payload. */
static void
check_ctl(const struct t *t, const struct wc_got *p, uint8_t type, uint32_t round)
{
	check_from_worker(t, p, type, t->epoch);
	assert_int_equal(p->len, INA_HDR_SIZE);
	assert_int_equal(p->h.flags, 0);
	assert_int_equal(p->h.round, round);
	assert_int_equal(p->h.lane, 0);
	assert_int_equal(p->h.block, 0);
	assert_int_equal(p->h.next, 0);
}

/* ---- The switch's side ---- */

static struct ina_hdr
sw_hdr(const struct t *t, uint8_t type)
{
	return wc_hdr(type, t->cfg.encoding, JOB, type == INA_T_ERROR ? 0 : t->epoch,
		      INA_RANK_SWITCH, TOKEN);
}

/* Delivers one packet from 'src' with header 'h' and 'size' bytes of payload. */
static void
rx_from(struct t *t, const struct ina_peer *src, const struct ina_hdr *h, const void *payload,
	size_t size)
{
	struct ina_pkt *pkt = wc_mk_pkt(t->pool, src, h, payload, size);

	engine_rx(t->e, &pkt, 1, t->now);
}

/* The same from the switch. */
static void
rx_raw(struct t *t, const struct ina_hdr *h, const void *payload, size_t size)
{
	rx_from(t, &t->cfg.sw, h, payload, size);
}

static void
rx_join_ack(struct t *t, uint32_t epoch, uint16_t world, uint16_t lanes, uint16_t max_block)
{
	struct ina_hdr h = sw_hdr(t, INA_T_JOIN_ACK);
	uint8_t payload[sizeof(struct ina_wire_join)];

	h.epoch = epoch;
	ina_wire_encode_join(world, lanes, max_block, payload);
	rx_raw(t, &h, payload, sizeof(payload));
}

/* The header of a RESULT for the running operation. */
static struct ina_hdr
result_hdr(const struct t *t, uint16_t lane, uint32_t block, uint8_t flags, uint32_t next,
	   int16_t exp)
{
	struct ina_hdr h = sw_hdr(t, INA_T_RESULT);

	h.flags = flags;
	h.lane = lane;
	h.tensor_id = t->tensor_id;
	h.round = t->round;
	h.tensor_len = t->n;
	h.block_size = t->bs;
	h.sub_log = t->sub_log;
	h.block = block;
	h.next = next;
	h.exp = exp;
	return h;
}

/* Delivers a RESULT whose header is 'h': the sum 'vals' (floats or int32s)
 * or, if NULL, header-only. */
static void
rx_result_h(struct t *t, struct ina_hdr *h, const void *vals)
{
	uint8_t payload[BUF_SIZE];

	h->n_elems = vals && h->block != INA_BLOCK_OPEN
			     ? ina_wire_block_elems(h->tensor_len, h->block_size, h->block)
			     : 0;
	if (h->n_elems)
		wc_put_words(payload, vals, h->n_elems);
	rx_from(t, t->res_src, h, payload, (size_t)h->n_elems * 4);
}

static void
rx_result(struct t *t, uint16_t lane, uint32_t block, uint8_t flags, uint32_t next, int16_t exp,
	  const void *vals)
{
	struct ina_hdr h = result_hdr(t, lane, block, flags, next, exp);

	rx_result_h(t, &h, vals);
}

static void
rx_wait(struct t *t, uint16_t lane, uint32_t block, uint32_t round, uint8_t ver, uint64_t missing)
{
	struct ina_hdr h = sw_hdr(t, INA_T_WAIT);
	uint64_t be = htobe64(missing);

	h.flags = ver;
	h.lane = lane;
	h.tensor_id = t->tensor_id;
	h.round = round;
	h.tensor_len = t->n;
	h.block_size = t->bs;
	h.block = block;
	h.next = INA_BLOCK_END;
	rx_raw(t, &h, &be, sizeof(be));
}

static void
rx_error(struct t *t, uint16_t status, const char *msg, uint64_t token)
{
	struct ina_hdr h = sw_hdr(t, INA_T_ERROR);

	h.status = status;
	h.token = token;
	rx_raw(t, &h, msg, strlen(msg));
}

/* JOIN, JOIN_ACK: the engine is READY with epoch EPOCH. */
static void
join_ready(struct t *t)
{
	if (!t->e)
		start(t);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_int_equal(tx_one(t)->h.type, INA_T_JOIN);
	t->now += 10 * US;
	rx_join_ack(t, EPOCH, t->cfg.world, t->cfg.lanes, t->cfg.max_block);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_int_equal(engine_epoch(t->e), EPOCH);
}

/* Starts an allreduce of n floats in -> dst, in blocks of bs. */
static void
begin(struct t *t, const float *src, float *dst, uint32_t n, uint16_t bs, enum engine_op op)
{
	t->tensor_id = TENSOR;
	t->round = engine_round(t->e);
	t->n = n;
	t->bs = bs;
	t->sub_log = 0;
	assert_int_equal(engine_allreduce(t->e, TENSOR, src, dst, n, bs, op, t->now), 0);
	assert_int_equal(engine_phase(t->e), ENGINE_RUNNING);
}

/* Advances the clock to the engine's next deadline. */
static void
to_deadline(struct t *t)
{
	uint64_t d = engine_next_deadline(t->e);

	assert_true(d != UINT64_MAX);
	if (d > t->now)
		t->now = d;
}

static void
fill(float *x, uint32_t from, uint32_t n, float v0, float step)
{
	for (uint32_t i = 0; i < n; i++)
		x[from + i] = v0 + step * (float)i;
}

static void
add(float *dst, const float *a, const float *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		dst[i] = a[i] + b[i];
}

/* ---- Joining ---- */

static void
test_engine_join_backoff_and_timeout(void **state)
{
	struct t *t = *state;
	uint8_t first[INA_HDR_SIZE + 8];
	uint16_t world, lanes, max_block;
	uint64_t start_ns = t->now, last = t->now, gap = RTO;
	const struct wc_got *p;
	int sends = 1;

	t->cfg.rank = 1;
	t->cfg.world = 3;
	t->cfg.lanes = 5;
	t->cfg.max_block = 6;
	start(t);
	assert_int_equal(engine_phase(t->e), ENGINE_IDLE);
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);
	assert_int_equal(tx(t), 0);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_int_equal(engine_join(t->e, t->now), -EBUSY);
	assert_int_equal(engine_phase(t->e), ENGINE_JOINING);
	assert_true(engine_next_deadline(t->e) == 0);

	p = tx_one(t);
	check_from_worker(t, p, INA_T_JOIN, 0);
	assert_int_equal(p->h.flags, 0);
	assert_int_equal(p->h.block_size, 6);
	assert_int_equal(p->h.lane, 0);
	assert_int_equal(p->h.round, 0);
	assert_int_equal(p->h.tensor_len, 0);
	assert_int_equal(p->h.n_elems, 0);
	assert_int_equal(p->len, INA_HDR_SIZE + sizeof(struct ina_wire_join));
	ina_wire_decode_join(p->payload, &world, &lanes, &max_block);
	assert_int_equal(world, 3);
	assert_int_equal(lanes, 5);
	assert_int_equal(max_block, 6);
	assert_int_equal(wc_word_at(p->payload, 1) & 0xffff, 0); /* reserved */
	memcpy(first, p->bytes, sizeof(first));
	assert_int_equal(tx(t), 0);

	/* Resent with a doubling timeout, capped at rto_max, until the timeout. */
	for (;;) {
		uint64_t d = engine_next_deadline(t->e);

		assert_true(d == last + gap);
		t->now = d - 1;
		assert_int_equal(tx(t), 0);
		t->now = d;
		if (tx(t) == 0)
			break;
		/* Control packets are resent unmarked, with the same bytes. */
		assert_int_equal(g[0].len, sizeof(first));
		assert_memory_equal(g[0].bytes, first, sizeof(first));
		assert_true(t->now - start_ns < TIMEOUT);
		sends++;
		last = t->now;
		gap = gap * 2 > RTO_MAX ? RTO_MAX : gap * 2;
		assert_true(sends < 100);
	}
	/* Sends at 0, 1, 3, 7, 15, 23, ..., 95 ms; fails at the first due resend
	 * at or after the timeout. */
	assert_int_equal(sends, 4 + (TIMEOUT - 15 * MS + RTO_MAX - 1) / RTO_MAX);
	assert_true(t->now >= start_ns + TIMEOUT);
	assert_true(t->now <= start_ns + TIMEOUT + RTO_MAX);
	assert_int_equal(engine_error(t->e), ENGINE_ENOSWITCH);
	assert_int_equal(engine_phase(t->e), ENGINE_CLOSED);
	assert_int_equal(engine_stats(t->e)->retransmits, (uint64_t)sends - 1);
	assert_non_null(strstr(engine_error_msg(t->e), "did not answer the JOIN"));
	assert_non_null(strstr(engine_error_msg(t->e), "job 7 rank 1"));
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);
	/* Never joined: nothing to tell the switch. */
	engine_leave(t->e, t->now);
	t->now += RTO_MAX;
	assert_int_equal(tx(t), 0);
	assert_int_equal(engine_phase(t->e), ENGINE_CLOSED);
	done(t);
}

/* A JOIN_ACK flagged GRANT (ina-switch --share fair) admits the job with
 * fewer lanes: the engine deals its blocks over those lanes from then on.
 * Fewer lanes without the flag, or more with it, are refused. The JOIN
 * carries the weight in the payload's last byte. */
static void
test_engine_join_grant(void **state)
{
	struct t *t = *state;
	const struct wc_got *p;
	float sum[16];
	uint16_t n;

	t->cfg.lanes = 4;
	t->cfg.weight = 3;
	start(t);
	assert_int_equal(engine_lanes(t->e), 4);
	assert_int_equal(engine_join(t->e, t->now), 0);
	p = tx_one(t);
	assert_int_equal(p->h.type, INA_T_JOIN);
	assert_int_equal(ina_wire_join_weight(p->payload), 3);
	assert_int_equal(p->payload[7], 3);
	t->now += 10 * US;
	/* Two lanes, not flagged: refused. */
	rx_join_ack(t, EPOCH, 2, 2, 4);
	assert_int_equal(engine_stats(t->e)->bad, 1);
	/* Flagged, but more lanes than asked, or none: refused. */
	{
		struct ina_hdr h = sw_hdr(t, INA_T_JOIN_ACK);
		uint8_t payload[sizeof(struct ina_wire_join)];

		h.epoch = EPOCH;
		h.flags = INA_F_GRANT;
		ina_wire_encode_join(2, 5, 4, payload);
		rx_raw(t, &h, payload, sizeof(payload));
		assert_int_equal(engine_stats(t->e)->bad, 2);
		assert_int_equal(engine_phase(t->e), ENGINE_JOINING);
		/* Two lanes, flagged: admitted with two. */
		ina_wire_encode_join(2, 2, 4, payload);
		rx_raw(t, &h, payload, sizeof(payload));
	}
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_int_equal(engine_lanes(t->e), 2);
	assert_int_equal(engine_stats(t->e)->lanes_asked, 4);
	t->cfg.lanes = 2; /* the job as the test's switch sees it now */

	/* 16 elements in blocks of 4: lane 0 has blocks 0 and 2, lane 1 has 1 and 3. */
	fill(in, 0, 16, 1.0f, 1.0f);
	fill(other, 0, 16, 0.5f, 2.0f);
	add(sum, in, other, 16);
	begin(t, in, out, 16, 4, ENGINE_SUM);
	n = tx(t);
	assert_int_equal(n, 2);
	check_data(t, for_lane(n, 0), 0, 0, 0, 0, 2, 0, &in[0]);
	check_data(t, for_lane(n, 1), 1, 1, 0, 0, 3, 0, &in[4]);
	rx_result(t, 0, 0, 0, 2, 0, &sum[0]);
	rx_result(t, 1, 1, 0, 3, 0, &sum[4]);
	n = tx(t);
	assert_int_equal(n, 2);
	check_data(t, for_lane(n, 0), 0, 2, 1, 0, INA_BLOCK_END, 0, &in[8]);
	check_data(t, for_lane(n, 1), 1, 3, 1, 0, INA_BLOCK_END, 0, &in[12]);
	rx_result(t, 0, 2, 1, INA_BLOCK_END, 0, &sum[8]);
	rx_result(t, 1, 3, 1, INA_BLOCK_END, 0, &sum[12]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_floats(out, sum, 16);
	/* A packet for lane 2 of the 4 asked is past the job's lanes now. */
	{
		uint64_t bad = engine_stats(t->e)->bad;

		t->round = engine_round(t->e);
		rx_result(t, 2, 2, 0, INA_BLOCK_END, 0, &sum[8]);
		assert_int_equal(engine_stats(t->e)->bad, bad + 1);
	}
	done(t);
}

/* A JOIN_ACK flagged REDIRECT (the switch has no slots, ina-switch
 * --host-aggregator): the engine stops joining the switch and says where
 * the job goes; engine_redirect() joins there, and the job runs there.
 * A REDIRECT that does not echo the JOIN is invalid; a second one fails the
 * join; one after the join is invalid (epoch 0). */
static void
test_engine_join_redirect(void **state)
{
	struct t *t = *state;
	struct ina_peer agg = t->cfg.sw, sw0 = t->cfg.sw;
	struct ina_hdr h;
	uint8_t payload[sizeof(struct ina_wire_join) + sizeof(struct ina_wire_redirect)];
	const struct wc_got *p;
	uint32_t ip;
	uint16_t port;

	agg.bytes[0] ^= 0xff;
	start(t);
	assert_int_equal(engine_redirect(t->e, &agg, t->now), -EBUSY);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_int_equal(tx_one(t)->h.type, INA_T_JOIN);
	assert_int_equal(engine_redirect_target(t->e, &ip, &port), 0);
	h = sw_hdr(t, INA_T_JOIN_ACK);
	h.flags = INA_F_REDIRECT;
	h.epoch = 0;
	/* Not this worker's JOIN (3 lanes): invalid. */
	ina_wire_encode_join(2, 3, 4, payload);
	ina_wire_encode_redirect(0x7f000001u, 9301, payload + 8);
	rx_raw(t, &h, payload, sizeof(payload));
	assert_int_equal(engine_stats(t->e)->bad, 1);
	assert_int_equal(engine_phase(t->e), ENGINE_JOINING);
	/* Its JOIN echoed: redirected. */
	ina_wire_encode_join(2, 2, 4, payload);
	rx_raw(t, &h, payload, sizeof(payload));
	assert_int_equal(engine_phase(t->e), ENGINE_REDIRECTED);
	assert_int_equal(engine_redirect_target(t->e, &ip, &port), 1);
	assert_int_equal(ip, 0x7f000001u);
	assert_int_equal(port, 9301);
	/* Nothing to send, no timer, until the caller says where. */
	assert_int_equal(tx(t), 0);
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);
	/* A JOIN_ACK of the switch now is stale. */
	rx_join_ack(t, EPOCH, 2, 2, 4);
	assert_int_equal(engine_stats(t->e)->stale, 1);
	assert_int_equal(engine_redirect(t->e, &agg, t->now), 0);
	assert_int_equal(engine_stats(t->e)->redirects, 1);
	t->cfg.sw = agg; /* where the test sees the engine's packets go now */
	p = tx_one(t);
	assert_int_equal(p->h.type, INA_T_JOIN);
	assert_true(ina_peer_equal(&p->peer, &agg));
	/* The aggregator sends it on again: the join fails. */
	rx_from(t, &agg, &h, payload, sizeof(payload));
	assert_int_equal(engine_error(t->e), ENGINE_EREFUSED);
	assert_non_null(strstr(engine_error_msg(t->e), "127.0.0.1:9301"));
	engine_destroy(t->e);
	t->e = NULL;

	/* Again, the aggregator admitting the job: it runs there. */
	t->cfg.sw = sw0;
	start(t);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_int_equal(tx(t), 1);
	rx_raw(t, &h, payload, sizeof(payload));
	assert_int_equal(engine_phase(t->e), ENGINE_REDIRECTED);
	assert_int_equal(engine_redirect(t->e, &agg, t->now), 0);
	t->cfg.sw = agg; /* the test's switch is the aggregator now */
	assert_int_equal(tx(t), 1);
	rx_join_ack(t, EPOCH, 2, 2, 4);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	in[0] = 2;
	begin(t, in, out, 4, 4, ENGINE_SUM);
	p = tx_one(t);
	assert_true(ina_peer_equal(&p->peer, &agg));
	check_data(t, p, 0, 0, 0, 0, INA_BLOCK_END, 0, in);
	rx_result(t, 0, 0, 0, INA_BLOCK_END, 0, in);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	/* A late REDIRECT (epoch 0) fails validation against the job. */
	{
		uint64_t bad = engine_stats(t->e)->bad;

		rx_raw(t, &h, payload, sizeof(payload));
		assert_int_equal(engine_stats(t->e)->bad, bad + 1);
		assert_int_equal(engine_phase(t->e), ENGINE_READY);
	}
	done(t);
}

/* RESULTs flagged RESHAPE (the switch gives slots back, --share fair): the
 * engine finishes its round on its lanes and runs on 'status' lanes from
 * round 'bound'; a RESHAPE to as many lanes as it has is invalid. */
static void
test_engine_reshape(void **state)
{
	struct t *t = *state;
	struct ina_hdr h;
	float sum[16];
	uint16_t n;

	t->cfg.lanes = 4;
	join_ready(t);
	fill(in, 0, 16, 1.0f, 1.0f);
	fill(other, 0, 16, 3.0f, -1.0f);
	add(sum, in, other, 16);
	begin(t, in, out, 16, 4, ENGINE_SUM);
	n = tx(t);
	assert_int_equal(n, 4);
	/* Lane 0: RESHAPE to 4 lanes (not fewer): invalid. */
	h = result_hdr(t, 0, 0, INA_F_RESHAPE, INA_BLOCK_END, 0);
	h.status = 4;
	h.bound = 1;
	rx_result_h(t, &h, &sum[0]);
	assert_int_equal(engine_stats(t->e)->bad, 1);
	/* Every lane's result says "2 lanes from round 1". */
	for (uint16_t l = 0; l < 4; l++) {
		h = result_hdr(t, l, l, INA_F_RESHAPE, INA_BLOCK_END, 0);
		h.status = 2;
		h.bound = 1;
		rx_result_h(t, &h, &sum[4 * l]);
	}
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_floats(out, sum, 16);
	assert_int_equal(engine_lanes(t->e), 4); /* round 0 ended on 4 */
	/* Round 1 on 2 lanes: lane 0 blocks 0 and 2, lane 1 blocks 1 and 3. */
	t->cfg.lanes = 2;
	begin(t, in, out, 16, 4, ENGINE_SUM);
	assert_int_equal(engine_lanes(t->e), 2);
	assert_int_equal(engine_stats(t->e)->reshapes, 1);
	n = tx(t);
	assert_int_equal(n, 2);
	check_data(t, for_lane(n, 0), 0, 0, 1, 0, 2, 0, &in[0]);
	check_data(t, for_lane(n, 1), 1, 1, 1, 0, 3, 0, &in[4]);
	/* A late mark for round 1 changes nothing any more. */
	h = result_hdr(t, 0, 0, 1 | INA_F_RESHAPE, 2, 0);
	h.status = 1;
	h.bound = 1;
	rx_result_h(t, &h, &sum[0]);
	rx_result(t, 1, 1, 1, 3, 0, &sum[4]);
	n = tx(t);
	assert_int_equal(n, 2);
	rx_result(t, 0, 2, 0, INA_BLOCK_END, 0, &sum[8]);
	rx_result(t, 1, 3, 0, INA_BLOCK_END, 0, &sum[12]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_floats(out, sum, 16);
	begin(t, in, out, 16, 4, ENGINE_SUM);
	assert_int_equal(engine_lanes(t->e), 2);
	assert_int_equal(engine_stats(t->e)->reshapes, 1);
}

static void
test_engine_join_ack(void **state)
{
	struct t *t = *state;
	const struct wc_got *p;

	start(t);
	assert_int_equal(engine_allreduce(t->e, 0, in, out, 8, 4, ENGINE_SUM, t->now), -EBUSY);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_int_equal(tx(t), 1);
	t->now += 10 * US;
	/* Refused: wrong payload, epoch 0, wrong token, wrong job. */
	rx_join_ack(t, EPOCH, 2, 3, 4);
	rx_join_ack(t, EPOCH, 3, 2, 4);
	rx_join_ack(t, EPOCH, 2, 2, 8);
	rx_join_ack(t, 0, 2, 2, 4);
	{
		struct ina_hdr h = sw_hdr(t, INA_T_JOIN_ACK);
		uint8_t payload[sizeof(struct ina_wire_join)];

		ina_wire_encode_join(2, 2, 4, payload);
		h.token = TOKEN + 1;
		rx_raw(t, &h, payload, sizeof(payload));
		h.token = TOKEN;
		h.job_id = JOB + 1;
		rx_raw(t, &h, payload, sizeof(payload));
	}
	assert_int_equal(engine_stats(t->e)->bad, 6);
	assert_int_equal(engine_phase(t->e), ENGINE_JOINING);
	assert_int_equal(engine_epoch(t->e), 0);

	rx_join_ack(t, EPOCH, 2, 2, 4);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_int_equal(engine_epoch(t->e), EPOCH);
	assert_int_equal(engine_error(t->e), 0);
	/* No more JOINs, no timer. */
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);
	t->now += TIMEOUT * 2;
	assert_int_equal(tx(t), 0);
	/* A late duplicate JOIN_ACK changes nothing. */
	rx_join_ack(t, EPOCH, 2, 2, 4);
	assert_int_equal(engine_stats(t->e)->stale, 1);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	/* A JOIN_ACK of another epoch now fails validation. */
	rx_join_ack(t, EPOCH + 1, 2, 2, 4);
	assert_int_equal(engine_stats(t->e)->bad, 7);
	assert_int_equal(engine_epoch(t->e), EPOCH);

	/* The epoch is used afterwards: in DATA and in FIN. */
	in[0] = 1;
	begin(t, in, out, 4, 4, ENGINE_SUM);
	p = tx_one(t);
	check_data(t, p, 0, 0, 0, 0, INA_BLOCK_END, 0, in);
	rx_result(t, 0, 0, 0, INA_BLOCK_END, 0, in);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	engine_finish(t->e, t->now);
	check_ctl(t, tx_one(t), INA_T_FIN, 1);
	done(t);
}

static void
test_engine_join_refused(void **state)
{
	struct t *t = *state;
	const char *msg = "job 7: needs 64 contiguous slots (one per lane); 12 of 1024 are free";

	t->cfg.lanes = 64;
	start(t);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_int_equal(tx(t), 1);
	/* An ERROR for someone else is not trusted. */
	rx_error(t, INA_WERR_NO_SLOTS, "job 7: go away", TOKEN ^ 1);
	assert_int_equal(engine_stats(t->e)->bad, 1);
	assert_int_equal(engine_error(t->e), 0);
	assert_int_equal(engine_phase(t->e), ENGINE_JOINING);

	rx_error(t, INA_WERR_NO_SLOTS, msg, TOKEN);
	assert_int_equal(engine_error(t->e), ENGINE_EREFUSED);
	assert_int_equal(engine_phase(t->e), ENGINE_CLOSED);
	assert_non_null(strstr(engine_error_msg(t->e), msg));
	/* Nothing more is sent: no JOIN, and no goodbye. */
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);
	t->now += TIMEOUT * 2;
	assert_int_equal(tx(t), 0);
	engine_finish(t->e, t->now);
	assert_int_equal(tx(t), 0);
	engine_leave(t->e, t->now);
	assert_int_equal(tx(t), 0);
	assert_int_equal(engine_phase(t->e), ENGINE_CLOSED);
	assert_int_equal(engine_allreduce(t->e, 0, in, out, 8, 4, ENGINE_SUM, t->now),
			 ENGINE_EREFUSED);
	done(t);
}

/*
 * ERROR COOKIE (PROTOCOL 5.1): not a refusal. The JOIN goes again at once
 * with the cookie, every later JOIN carries it; a repeat of the same cookie
 * waits for the JOIN's timer; one for someone else, or out of the join, is
 * not taken.
 */
static void
test_engine_join_cookie(void **state)
{
	struct t *t = *state;
	struct ina_hdr h;
	const struct wc_got *p;

	start(t);
	assert_int_equal(engine_join(t->e, t->now), 0);
	p = tx_one(t);
	assert_int_equal(p->h.type, INA_T_JOIN);
	assert_true(ina_wire_cookie(&p->h) == 0);
	/* Another job's token: not trusted. */
	h = sw_hdr(t, INA_T_ERROR);
	h.status = INA_WERR_COOKIE;
	h.token = TOKEN ^ 1;
	ina_wire_set_cookie(&h, 0x1234567890abcdefull);
	rx_raw(t, &h, NULL, 0);
	assert_int_equal(engine_stats(t->e)->bad, 1);
	assert_int_equal(tx(t), 0);
	/* The switch's cookie: the JOIN again at once, echoing it. */
	h.token = TOKEN;
	rx_raw(t, &h, NULL, 0);
	assert_int_equal(engine_error(t->e), 0);
	assert_int_equal(engine_phase(t->e), ENGINE_JOINING);
	p = tx_one(t);
	assert_int_equal(p->h.type, INA_T_JOIN);
	assert_true(ina_wire_cookie(&p->h) == 0x1234567890abcdefull);
	/* The same cookie again: no JOIN before the timer. */
	rx_raw(t, &h, NULL, 0);
	assert_int_equal(tx(t), 0);
	/* The timer's resend carries it too. */
	t->now += TIMEOUT / 100;
	p = tx_one(t);
	assert_true(ina_wire_cookie(&p->h) == 0x1234567890abcdefull);
	t->now += 10 * US;
	rx_join_ack(t, EPOCH, t->cfg.world, t->cfg.lanes, t->cfg.max_block);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	/* Joined: a cookie is stale. */
	ina_wire_set_cookie(&h, 0x42);
	rx_raw(t, &h, NULL, 0);
	assert_int_equal(engine_stats(t->e)->stale, 1);
	assert_int_equal(engine_error(t->e), 0);
	assert_int_equal(tx(t), 0);
	done(t);
}

/* ---- The lane protocol ---- */

static void
test_engine_first_packets_f32(void **state)
{
	struct t *t = *state;
	uint16_t n;

	/* 4 lanes, B = 4, 22 elements: blocks 0..5, the last of 2 elements.
	 * Lane 0: blocks 0, 4; lane 1: 1, 5; lane 2: 2; lane 3: 3. */
	t->cfg.lanes = 4;
	join_ready(t);
	fill(in, 0, 4, 1.0f, 1.0f);   /* block 0 */
	fill(in, 16, 4, -1.0f, 0.5f); /* block 4 */
	fill(in, 20, 2, 7.0f, 1.0f);  /* block 5 (short) */
	for (int i = 12; i < 16; i++)
		in[i] = -0.0f; /* block 3: zero */
	assert_int_equal(engine_allreduce(t->e, TENSOR, in, out, 22, 5, ENGINE_SUM, t->now),
			 -EINVAL);
	assert_int_equal(engine_allreduce(t->e, TENSOR, in, out, 0, 4, ENGINE_SUM, t->now),
			 -EINVAL);
	assert_int_equal(engine_allreduce(t->e, TENSOR, in, out, 22, 0, ENGINE_SUM, t->now),
			 -EINVAL);
	begin(t, in, out, 22, 4, ENGINE_SUM);
	assert_int_equal(engine_allreduce(t->e, TENSOR, in, out, 22, 4, ENGINE_SUM, t->now),
			 -EBUSY);
	assert_true(engine_next_deadline(t->e) == 0);

	/* One packet per lane. */
	n = tx(t);
	assert_int_equal(n, 4);
	check_data(t, for_lane(n, 0), 0, 0, 0, 0, 4, 0, &in[0]);
	check_data(t, for_lane(n, 1), 1, 1, 0, 0, 5, 0, NULL);
	check_data(t, for_lane(n, 2), 2, 2, 0, 0, INA_BLOCK_END, 0, NULL);
	check_data(t, for_lane(n, 3), 3, 3, 0, 0, INA_BLOCK_END, 0, NULL);
	assert_int_equal(tx(t), 0);
	assert_int_equal(engine_stats(t->e)->data_sent, 1);
	assert_int_equal(engine_stats(t->e)->empty_sent, 4 - 1);
	assert_true(engine_next_deadline(t->e) == t->now + RTO);
	done(t);
}

static void
test_engine_inactive_lanes_send_nothing(void **state)
{
	struct t *t = *state;
	uint16_t n;

	/* 4 lanes, 10 elements in blocks of 4: lane 3 has no block. */
	t->cfg.lanes = 4;
	join_ready(t);
	fill(in, 8, 2, 3.0f, 1.0f);
	begin(t, in, out, 10, 4, ENGINE_SUM);
	n = tx(t);
	assert_int_equal(n, 3);
	check_data(t, for_lane(n, 0), 0, 0, 0, 0, INA_BLOCK_END, 0, NULL);
	check_data(t, for_lane(n, 1), 1, 1, 0, 0, INA_BLOCK_END, 0, NULL);
	check_data(t, for_lane(n, 2), 2, 2, 0, 0, INA_BLOCK_END, 0, &in[8]);
	rx_result(t, 0, 0, 0, INA_BLOCK_END, 0, NULL);
	rx_result(t, 1, 1, 0, INA_BLOCK_END, 0, NULL);
	rx_result(t, 2, 2, 0, INA_BLOCK_END, 0, &in[8]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	memset(want, 0, sizeof(want));
	memcpy(&want[8], &in[8], 2 * sizeof(float));
	assert_floats(out, want, 10);
	done(t);
}

static void
test_engine_first_packets_i32(void **state)
{
	struct t *t = *state;
	uint16_t n;

	t->cfg.encoding = INA_ENC_I32;
	t->cfg.lanes = 3;
	join_ready(t);
	/* B = 4, 40 elements: lane 0: 0, 3, 6, 9; lane 1: 1, 4, 7; lane 2: 2, 5, 8. */
	fill(in, 12, 4, 0.25f, 0.25f); /* block 3: max 1.0 -> e = 1 */
	fill(in, 4, 4, -5.0f, 1.0f);   /* block 1: max |-5| -> e = 3 */
	in[28] = 1e-3f;		       /* block 7 */
	begin(t, in, out, 40, 4, ENGINE_SUM);
	n = tx(t);
	assert_int_equal(n, 3);
	check_data(t, for_lane(n, 0), 0, INA_BLOCK_OPEN, 0, 0, 3, 1, NULL);
	check_data(t, for_lane(n, 1), 1, INA_BLOCK_OPEN, 0, 0, 1, 3, NULL);
	check_data(t, for_lane(n, 2), 2, INA_BLOCK_OPEN, 0, 0, INA_BLOCK_END, 0, NULL);
	assert_int_equal(for_lane(n, 1)->h.exp, ina_enc_i32_exp(&in[4], 4));
	assert_int_equal(engine_stats(t->e)->empty_sent, 3);
	assert_int_equal(engine_stats(t->e)->data_sent, 0);
	done(t);
}

/*
 * bf16: DATA carries each float rounded to bf16, 2 bytes an element; a
 * RESULT's bf16 payload widens exactly into the output; a payload of 4-byte
 * elements is a bad length, dropped and counted.
 */
static void
test_engine_round_bf16(void **state)
{
	struct t *t = *state;
	const struct wc_got *p;
	float sum[8];
	uint8_t bytes[16], payload[32];
	struct ina_hdr h;
	uint64_t bad;

	t->cfg.encoding = INA_ENC_BF16;
	t->cfg.lanes = 2;
	join_ready(t);
	/* B = 4, 8 elements: lane 0 block 0, lane 1 block 1. */
	in[0] = 1.0f + 0x1p-8f;	    /* a tie: rounds to even, 1 */
	in[1] = 1.0f + 3 * 0x1p-8f; /* a tie: rounds up, 1 + 2^-6 */
	in[2] = 0.1f;
	in[3] = -0.0f;
	fill(in, 4, 4, -3.0f, 0.5f);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	p = for_lane(2, 0);
	check_from_worker(t, p, INA_T_DATA, EPOCH);
	assert_int_equal(p->h.n_elems, 4);
	assert_int_equal(p->payload_size, 8);
	ina_enc_bf16_put(bytes, in, 4);
	assert_memory_equal(p->payload, bytes, 8);
	assert_int_equal(p->payload[0] << 8 | p->payload[1], 0x3f80);
	assert_int_equal(p->payload[2] << 8 | p->payload[3], 0x3f82);
	assert_int_equal(p->payload[6] << 8 | p->payload[7], 0x8000);
	p = for_lane(2, 1);
	assert_int_equal(p->payload_size, 8);
	ina_enc_bf16_put(bytes, &in[4], 4);
	assert_memory_equal(p->payload, bytes, 8);

	/* A RESULT with 4-byte elements: bad length, not taken. */
	bad = engine_stats(t->e)->bad;
	h = result_hdr(t, 0, 0, 0, INA_BLOCK_END, 0);
	h.n_elems = 4;
	memset(payload, 0, sizeof(payload));
	rx_raw(t, &h, payload, 16);
	assert_int_equal(engine_stats(t->e)->bad, bad + 1);
	assert_int_equal(engine_phase(t->e), ENGINE_RUNNING);

	/* The sums: bf16 values the engine widens exactly. */
	sum[0] = 2.0f;
	sum[1] = -0x1p-133f; /* the smallest bf16 subnormal */
	sum[2] = 258.0f;
	sum[3] = 0.0f;
	for (int i = 4; i < 8; i++)
		sum[i] = (float)(i * 8);
	for (int l = 0; l < 2; l++) {
		h = result_hdr(t, (uint16_t)l, (uint32_t)l, 0, INA_BLOCK_END, 0);
		h.n_elems = 4;
		ina_enc_bf16_put(payload, &sum[4 * l], 4);
		rx_raw(t, &h, payload, 8);
	}
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_floats(out, sum, 8);
	done(t);
}

/* The largest block is what fits a packet buffer at the encoding's element
 * size: twice as many elements in bf16 as in f32. */
static void
test_engine_max_block_by_encoding(void **state)
{
	struct t *t = *state;
	const uint16_t f32_max = (BUF_SIZE - INA_HDR_SIZE) / 4;
	const uint16_t bf16_max = (BUF_SIZE - INA_HDR_SIZE) / 2;
	struct engine *e;

	t->cfg.max_block = f32_max;
	e = engine_create(&t->cfg);
	assert_non_null(e);
	engine_destroy(e);
	t->cfg.max_block = f32_max + 1;
	assert_null(engine_create(&t->cfg));
	t->cfg.encoding = INA_ENC_BF16;
	e = engine_create(&t->cfg);
	assert_non_null(e);
	engine_destroy(e);
	t->cfg.max_block = bf16_max;
	e = engine_create(&t->cfg);
	assert_non_null(e);
	engine_destroy(e);
	t->cfg.max_block = bf16_max + 1;
	assert_null(engine_create(&t->cfg));
	t->cfg.encoding = 4; /* no such encoding */
	t->cfg.max_block = 4;
	assert_null(engine_create(&t->cfg));
}

static void
test_engine_round_f32(void **state)
{
	struct t *t = *state;
	const struct wc_got *p;
	float sum[MAXE];

	/* 2 lanes, B = 4, 26 elements: blocks 0..6, block 6 of 2 elements.
	 * Lane 0: 0, 2, 4, 6; lane 1: 1, 3, 5. Mine: 0, 5, 6 (3 is -0.0).
	 * The other rank's: 0, 2, 3, 6. Nobody has 1 or 4. */
	join_ready(t);
	fill(in, 0, 4, 1.0f, 1.0f);
	fill(in, 20, 4, 5.0f, 1.0f);
	fill(in, 24, 2, 0.5f, -0.75f);
	for (int i = 12; i < 16; i++)
		in[i] = -0.0f;
	fill(other, 0, 4, 0.5f, 0.0f);
	fill(other, 8, 4, 1.0f, 0.0f);
	fill(other, 12, 4, 2.0f, 0.0f);
	fill(other, 24, 2, 1.0f, 0.0f);
	add(sum, in, other, 26);

	begin(t, in, out, 26, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	check_data(t, for_lane(2, 0), 0, 0, 0, 0, 6, 0, &in[0]);
	check_data(t, for_lane(2, 1), 1, 1, 0, 0, 5, 0, NULL);

	/* Lane 0, block 0: the sum; block 2 is next, which I do not have. */
	t->now += 10 * US;
	rx_result(t, 0, 0, 0, 2, 0, &sum[0]);
	assert_floats(out, sum, 4);
	for (int i = 4; i < 26; i++)
		assert_true(out[i] > 1e38f); /* still the garbage */
	p = tx_one(t);
	check_data(t, p, 0, 2, 1, 0, 6, 0, NULL);

	/* Block 2, next 6: block 4 is zero-filled. */
	t->now += 10 * US;
	rx_result(t, 0, 2, INA_F_VER, 6, 0, &sum[8]);
	assert_floats(&out[8], &sum[8], 4);
	assert_floats(&out[16], &sum[16], 4);
	assert_true(out[4] > 1e38f);
	p = tx_one(t);
	check_data(t, p, 0, 6, 0, 0, INA_BLOCK_END, 0, &in[24]);

	/* Lane 1: a header-only result writes zeros; then 3 and 5. */
	rx_result(t, 1, 1, 0, 3, 0, NULL);
	assert_floats(&out[4], &sum[4], 4);
	p = tx_one(t);
	check_data(t, p, 1, 3, 1, 0, 5, 0, NULL);
	rx_result(t, 1, 3, INA_F_VER, 5, 0, &sum[12]);
	p = tx_one(t);
	check_data(t, p, 1, 5, 0, 0, INA_BLOCK_END, 0, &in[20]);

	/* END on lane 0: done there, the round goes on. */
	rx_result(t, 0, 6, 0, INA_BLOCK_END, 0, &sum[24]);
	assert_int_equal(tx(t), 0);
	assert_int_equal(engine_phase(t->e), ENGINE_RUNNING);
	assert_int_equal(engine_round(t->e), 0);
	rx_result(t, 1, 5, 0, INA_BLOCK_END, 0, &sum[20]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_int_equal(engine_round(t->e), 1);
	assert_int_equal(engine_stats(t->e)->rounds, 1);
	assert_floats(out, sum, 26);
	assert_int_equal(tx(t), 0);
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);
	assert_int_equal(engine_stats(t->e)->data_sent, 3);
	assert_int_equal(engine_stats(t->e)->empty_sent, 3);
	assert_int_equal(engine_stats(t->e)->retransmits, 0);
	assert_int_equal(engine_stats(t->e)->stale, 0);
	assert_int_equal(engine_stats(t->e)->bad, 0);

	/* Round 1, all zero: both lanes' version bits are 1 now (three results
	 * each), and header-only ENDs zero-fill every remaining block. */
	memset(in, 0, sizeof(in));
	memset(out, 0x7f, sizeof(out));
	begin(t, in, out, 26, 4, ENGINE_SUM);
	assert_int_equal(t->round, 1);
	assert_int_equal(tx(t), 2);
	check_data(t, for_lane(2, 0), 0, 0, 1, 0, INA_BLOCK_END, 0, NULL);
	check_data(t, for_lane(2, 1), 1, 1, 1, 0, INA_BLOCK_END, 0, NULL);
	rx_result(t, 0, 0, INA_F_VER, INA_BLOCK_END, 0, NULL);
	rx_result(t, 1, 1, INA_F_VER, INA_BLOCK_END, 0, NULL);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_int_equal(engine_round(t->e), 2);
	memset(want, 0, sizeof(want));
	assert_memory_equal(out, want, 26 * sizeof(float)); /* +0.0 everywhere */
	assert_true(out[26] > 1e38f);			    /* nothing past the tensor */
	done(t);
}

static void
test_engine_round_i32(void **state)
{
	struct t *t = *state;
	const struct wc_got *p;
	/* docs/PROTOCOL.md section 9: rank 0 of 2, scale s = 27 for e = 2. */
	const int32_t b0[4] = { 201326592, -268435456, 33554432, 402653184 };
	const int32_t b2_mine[2] = { 67108864, 134217728 };
	const int32_t b2_sum[2] = { 335544320, 33554432 };

	t->cfg.encoding = INA_ENC_I32;
	join_ready(t);
	in[0] = 1.5f;
	in[1] = -2.0f;
	in[2] = 0.25f;
	in[3] = 3.0f;
	in[8] = 0.5f;
	in[9] = 1.0f;
	begin(t, in, out, 10, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	check_data(t, for_lane(2, 0), 0, INA_BLOCK_OPEN, 0, 0, 0, 2, NULL);
	check_data(t, for_lane(2, 1), 1, INA_BLOCK_OPEN, 0, 0, INA_BLOCK_END, 0, NULL);

	/* An exponent no switch announces is refused, not clamped: counted
	 * as bad, nothing sent, nothing adopted. */
	rx_result(t, 0, INA_BLOCK_OPEN, 0, 0, INA_EXP_MAX + 1, NULL);
	rx_result(t, 0, INA_BLOCK_OPEN, 0, 0, INA_EXP_MIN - 1, NULL);
	assert_int_equal(engine_stats(t->e)->bad, 2);
	assert_int_equal(tx(t), 0);
	/* The OPEN's result announces block 0 with e = 2: I send it scaled. */
	rx_result(t, 0, INA_BLOCK_OPEN, 0, 0, 2, NULL);
	assert_true(out[0] > 1e38f);
	p = tx_one(t);
	check_data(t, p, 0, 0, 1, 0, 2, 1, b0);
	rx_result(t, 0, 0, INA_F_VER, 2, 2, b0);
	want[0] = 1.5f;
	want[1] = -2.0f;
	want[2] = 0.25f;
	want[3] = 3.0f;
	assert_floats(out, want, 4);
	p = tx_one(t);
	check_data(t, p, 0, 2, 0, 0, INA_BLOCK_END, 0, b2_mine);
	rx_result(t, 0, 2, 0, INA_BLOCK_END, 0, b2_sum);
	/* Lane 1's OPEN result: END, every block of the lane is zero. */
	rx_result(t, 1, INA_BLOCK_OPEN, 0, INA_BLOCK_END, 0, NULL);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	memset(&want[4], 0, 4 * sizeof(float));
	want[8] = 2.5f;
	want[9] = 0.25f;
	assert_floats(out, want, 10);

	/* Round 1: my block 0 is zero; the other rank's block 0 has e = 3.
	 * Lane 0's bit is 1 (three results), lane 1's is 1 (one). */
	memset(in, 0, sizeof(in));
	memset(out, 0x7f, sizeof(out));
	in[8] = 0.5f;
	in[9] = 1.0f;
	begin(t, in, out, 10, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	check_data(t, for_lane(2, 0), 0, INA_BLOCK_OPEN, 1, 0, 2, 1, NULL);
	check_data(t, for_lane(2, 1), 1, INA_BLOCK_OPEN, 1, 0, INA_BLOCK_END, 0, NULL);
	rx_result(t, 0, INA_BLOCK_OPEN, INA_F_VER, 0, 3, NULL);
	/* An empty ack for block 0 with my own next and exponent. */
	check_data(t, tx_one(t), 0, 0, 0, 0, 2, 1, NULL);
	{
		/* s = 30 - 1 - 3 = 26: 4.0 and -4.0. */
		const int32_t sum0[4] = { 268435456, 0, 0, -268435456 };

		rx_result(t, 0, 0, 0, 2, 1, sum0);
	}
	/* Block 2 at the agreed e = 1: s = 28. */
	{
		const int32_t mine2[2] = { 134217728, 268435456 };

		check_data(t, tx_one(t), 0, 2, 1, 0, INA_BLOCK_END, 0, mine2);
		rx_result(t, 0, 2, INA_F_VER, INA_BLOCK_END, 0, mine2);
	}
	rx_result(t, 1, INA_BLOCK_OPEN, INA_F_VER, INA_BLOCK_END, 0, NULL);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	memset(want, 0, sizeof(want));
	want[0] = 4.0f;
	want[3] = -4.0f;
	want[8] = 0.5f;
	want[9] = 1.0f;
	assert_floats(out, want, 10);
	assert_int_equal(engine_stats(t->e)->bad, 2) /* the two above */;
	assert_int_equal(engine_stats(t->e)->stale, 0);
	done(t);
}

static void
test_engine_average_once(void **state)
{
	struct t *t = *state;
	float sum[8];

	t->cfg.world = 3;
	t->cfg.rank = 2;
	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	fill(sum, 0, 8, 3.0f, 3.5f);
	begin(t, in, out, 8, 4, ENGINE_AVG);
	assert_int_equal(tx(t), 2);
	check_data(t, for_lane(2, 0), 0, 0, 0, 0, INA_BLOCK_END, 0, &in[0]);
	check_data(t, for_lane(2, 1), 1, 1, 0, 0, INA_BLOCK_END, 0, &in[4]);
	for (int i = 0; i < 8; i++)
		want[i] = sum[i] * (1.0f / 3.0f);
	rx_result(t, 0, 0, 0, INA_BLOCK_END, 0, &sum[0]);
	/* Each block is scaled when its result comes (no pass over the whole
	 * output at the end), and only then: a copy of the result changes
	 * nothing. */
	assert_floats(out, want, 4);
	rx_result(t, 0, 0, 0, INA_BLOCK_END, 0, &sum[0]);
	assert_floats(out, want, 4);
	rx_result(t, 1, 1, 0, INA_BLOCK_END, 0, &sum[4]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_floats(out, want, 8);
	done(t);
}

static void
test_engine_stale_result_ignored(void **state)
{
	struct t *t = *state;
	float sum[16], snap[MAXE];
	struct ina_hdr h;
	uint64_t stale = 0;

	/* 2 lanes, 16 elements: lane 0: 0, 2; lane 1: 1, 3. All mine. */
	join_ready(t);
	fill(in, 0, 16, 1.0f, 1.0f);
	fill(sum, 0, 16, 10.0f, 1.0f);
	begin(t, in, out, 16, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	memcpy(snap, out, sizeof(snap));

	/* Lane 0 waits for block 0, round 0, version 0, tensor 9. */
	for (int k = 0; k < 7; k++) {
		h = result_hdr(t, 0, 0, 0, 2, 0);
		switch (k) {
		case 0:
			h.round = 1;
			break;
		case 1:
			h.round = UINT32_MAX;
			break;
		case 2:
			h.block = 2;
			h.next = INA_BLOCK_END;
			break;
		case 3:
			h.flags = INA_F_VER;
			break;
		case 4:
			h.tensor_id = TENSOR + 1;
			break;
		case 5:
			h.tensor_len = 12;
			break;
		case 6:
			h.block_size = 2;
			break;
		}
		rx_result_h(t, &h, sum);
		stale++;
		if (engine_stats(t->e)->stale != stale)
			fail_msg("stale result %d was not counted as stale", k);
		assert_memory_equal(out, snap, sizeof(out));
		assert_int_equal(tx(t), 0);
		assert_int_equal(engine_phase(t->e), ENGINE_RUNNING);
	}
	assert_int_equal(engine_stats(t->e)->bad, 0);
	assert_true(engine_next_deadline(t->e) == t->now + RTO);

	/* The right one still works: the lane's bit did not move. */
	rx_result(t, 0, 0, 0, 2, 0, &sum[0]);
	check_data(t, tx_one(t), 0, 2, 1, 0, INA_BLOCK_END, 0, &in[8]);
	assert_floats(out, sum, 4);
	/* Its duplicate is stale now. */
	memcpy(snap, out, sizeof(snap));
	rx_result(t, 0, 0, 0, 2, 0, &sum[4]);
	assert_int_equal(engine_stats(t->e)->stale, ++stale);
	assert_memory_equal(out, snap, sizeof(out));
	assert_int_equal(tx(t), 0);

	rx_result(t, 0, 2, INA_F_VER, INA_BLOCK_END, 0, &sum[8]);
	/* Lane 0 is done: anything for it is stale. */
	rx_result(t, 0, 2, INA_F_VER, INA_BLOCK_END, 0, &sum[8]);
	assert_int_equal(engine_stats(t->e)->stale, ++stale);
	rx_result(t, 1, 1, 0, 3, 0, &sum[4]);
	check_data(t, tx_one(t), 1, 3, 1, 0, INA_BLOCK_END, 0, &in[12]);
	rx_result(t, 1, 3, INA_F_VER, INA_BLOCK_END, 0, &sum[12]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_floats(out, sum, 16);
	/* After the round, a late result is stale. */
	memcpy(snap, out, sizeof(snap));
	rx_result(t, 1, 3, INA_F_VER, INA_BLOCK_END, 0, &in[12]);
	assert_int_equal(engine_stats(t->e)->stale, ++stale);
	assert_memory_equal(out, snap, sizeof(out));
	assert_int_equal(engine_round(t->e), 1);
	assert_int_equal(tx(t), 0);
	done(t);
}

static void
test_engine_bad_packets_counted(void **state)
{
	struct t *t = *state;
	float sum[8], snap[MAXE];
	struct ina_hdr h;
	uint64_t bad = 0;

	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	fill(sum, 0, 8, 2.0f, 2.0f);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	memcpy(snap, out, sizeof(snap));

	for (int k = 0; k < 10; k++) {
		h = result_hdr(t, 0, 0, 0, INA_BLOCK_END, 0);
		switch (k) {
		case 0:
			h.token = TOKEN + 1;
			break;
		case 1:
			h.job_id = JOB + 1;
			break;
		case 2:
			h.epoch = EPOCH + 1;
			break;
		case 3:
			h.epoch = EPOCH - 1;
			break;
		case 4:
			h.rank = 1;
			break; /* not from the switch */
		case 5:
			h.lane = 2;
			break; /* past the lanes */
		case 6:
			h.encoding = INA_ENC_I32;
			break;
		case 7:
			h.version = 3;
			break;
		case 8:
			h.type = INA_T_DATA;
			h.rank = 1;
			break; /* a type workers never get */
		case 9:
			h.bound = 1;
			break; /* only DATA has one */
		}
		rx_result_h(t, &h, sum);
		bad++;
		if (engine_stats(t->e)->bad != bad)
			fail_msg("bad packet %d was not counted as bad", k);
		assert_memory_equal(out, snap, sizeof(out));
		assert_int_equal(tx(t), 0);
	}
	/* Truncated. */
	{
		struct ina_pkt *pkt = ina_pkt_alloc(t->pool);

		assert_non_null(pkt);
		h = result_hdr(t, 0, 0, 0, INA_BLOCK_END, 0);
		ina_wire_encode_hdr(&h, pkt->data);
		pkt->len = 20;
		engine_rx(t->e, &pkt, 1, t->now);
		assert_int_equal(engine_stats(t->e)->bad, ++bad);
	}
	/* A WAIT, FIN_ACK and ERROR with a wrong token. */
	h = sw_hdr(t, INA_T_FIN_ACK);
	h.token = 1;
	rx_raw(t, &h, NULL, 0);
	assert_int_equal(engine_stats(t->e)->bad, ++bad);
	rx_error(t, INA_WERR_LEFT, "job 7: rank 1 left the job", 1);
	assert_int_equal(engine_stats(t->e)->bad, ++bad);
	h = sw_hdr(t, INA_T_WAIT);
	h.token = 1;
	{
		uint64_t be = htobe64(2);

		rx_raw(t, &h, &be, sizeof(be));
	}
	assert_int_equal(engine_stats(t->e)->bad, ++bad);
	assert_int_equal(engine_stats(t->e)->waits, 0);
	assert_int_equal(engine_error(t->e), 0);
	assert_int_equal(engine_stats(t->e)->stale, 0);
	assert_memory_equal(out, snap, sizeof(out));

	/* Nothing changed: the right results complete the round. */
	rx_result(t, 0, 0, 0, INA_BLOCK_END, 0, &sum[0]);
	rx_result(t, 1, 1, 0, INA_BLOCK_END, 0, &sum[4]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_floats(out, sum, 8);
	assert_int_equal(engine_stats(t->e)->pkts_recv, bad + 2 + 1); /* + JOIN_ACK */
	done(t);
}

static void
test_engine_retransmit_backoff(void **state)
{
	struct t *t = *state;
	uint8_t first[2][INA_HDR_SIZE + 16];
	uint32_t len[2];
	uint64_t sent, gap = RTO;
	float sum[16];
	int k;

	/* Lane 0: blocks 0, 2 (mine); lane 1: blocks 1, 3 (zero here). */
	join_ready(t);
	fill(in, 0, 4, 1.0f, 1.0f);
	fill(in, 8, 4, 9.0f, 1.0f);
	fill(sum, 0, 16, 1.0f, 1.0f);
	sent = t->now;
	begin(t, in, out, 16, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	for (uint16_t l = 0; l < 2; l++) {
		const struct wc_got *p = for_lane(2, l);

		len[l] = p->len;
		memcpy(first[l], p->bytes, p->len);
		assert_int_equal(p->h.flags & INA_F_RETX, 0);
	}
	check_data(t, for_lane(2, 0), 0, 0, 0, 0, 2, 0, &in[0]);
	check_data(t, for_lane(2, 1), 1, 1, 0, 0, INA_BLOCK_END, 0, NULL);
	for (k = 0; k < 6; k++) {
		assert_true(engine_next_deadline(t->e) == sent + gap);
		t->now = sent + gap - 1;
		assert_int_equal(tx(t), 0);
		t->now = sent + gap;
		assert_int_equal(tx(t), 2);
		for (uint16_t l = 0; l < 2; l++) {
			const struct wc_got *p = for_lane(2, l);

			/* Same bytes, but for the RETX flag. */
			assert_int_equal(p->len, len[l]);
			assert_int_equal(p->bytes[3], first[l][3] | INA_F_RETX);
			assert_memory_equal(p->bytes, first[l], 3);
			assert_memory_equal(p->bytes + 4, first[l] + 4, len[l] - 4);
		}
		sent = t->now;
		/* 1, 2, 4, 8, 8, 8 ms */
		gap = gap * 2 > RTO_MAX ? RTO_MAX : gap * 2;
	}
	assert_int_equal(gap, RTO_MAX);
	assert_int_equal(engine_stats(t->e)->retransmits, 12);

	/* A result: the answer is a first send, not marked, and its timer starts
	 * again from the engine's timeout; lane 1 stays on its backoff. */
	t->now += 100 * US;
	rx_result(t, 0, 0, 0, 2, 0, &sum[0]);
	check_data(t, tx_one(t), 0, 2, 1, 0, INA_BLOCK_END, 0, &in[8]);
	assert_true(engine_next_deadline(t->e) == t->now + RTO);
	t->now += 10 * US;
	rx_result(t, 1, 1, 0, INA_BLOCK_END, 0, &sum[4]);
	rx_result(t, 0, 2, INA_F_VER, INA_BLOCK_END, 0, &sum[8]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_int_equal(engine_stats(t->e)->retransmits, 12);
	/* Next round: fresh timers, nothing marked. */
	begin(t, in, out, 16, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	assert_int_equal(g[0].h.flags & INA_F_RETX, 0);
	assert_int_equal(g[1].h.flags & INA_F_RETX, 0);
	assert_true(engine_next_deadline(t->e) == t->now + RTO);
	done(t);
}

/* rx_wait() with the WAIT's status (INA_WAIT_LIVE: the switch vouches). */
static void
rx_wait_live(struct t *t, uint16_t lane, uint32_t block, uint64_t missing)
{
	struct ina_hdr h = sw_hdr(t, INA_T_WAIT);
	uint64_t be = htobe64(missing);

	h.lane = lane;
	h.tensor_id = t->tensor_id;
	h.round = t->round;
	h.tensor_len = t->n;
	h.block_size = t->bs;
	h.block = block;
	h.next = INA_BLOCK_END;
	h.status = INA_WAIT_LIVE;
	rx_raw(t, &h, &be, sizeof(be));
}

/*
 * Keepalives: a joined engine that has sent nothing for keepalive_ns sends
 * one KEEPALIVE (the bare header: job, epoch, rank, token, its round) to the
 * switch, its deadline says when, and any packet sent restarts the period;
 * engine_keepalive() sends it alone; none before the join, after an error,
 * or with keepalive_ns 0.
 */
static void
test_engine_keepalive(void **state)
{
	struct t *t = *state;
	struct ina_pkt *p;
	uint64_t joined;

	t->cfg.keepalive_ns = 50 * MS;
	start(t);
	assert_true(engine_next_deadline(t->e) == UINT64_MAX); /* not joined */
	assert_int_equal(engine_keepalive(t->e, t->now + SEC_NS, &p, 1), 0);
	join_ready(t);
	/* The JOIN was the last packet sent. */
	joined = t->now - 10 * US;
	assert_true(engine_next_deadline(t->e) == joined + 50 * MS);
	t->now = joined + 50 * MS - 1;
	assert_int_equal(tx(t), 0);
	assert_int_equal(engine_keepalive(t->e, t->now, &p, 1), 0);
	t->now++;
	assert_int_equal(tx(t), 1);
	check_from_worker(t, &g[0], INA_T_KEEPALIVE, EPOCH);
	assert_int_equal(g[0].len, INA_HDR_SIZE);
	assert_int_equal(g[0].h.flags, 0);
	assert_int_equal(g[0].h.round, 0);
	assert_true(ina_peer_equal(&g[0].peer, &t->cfg.sw));
	assert_int_equal(engine_stats(t->e)->keepalives, 1);
	assert_true(engine_next_deadline(t->e) == t->now + 50 * MS);
	/* engine_keepalive(): the same packet, alone. */
	t->now += 50 * MS;
	assert_int_equal(engine_keepalive(t->e, t->now, &p, 1), 1);
	wc_decode(&g[0], p, NULL);
	check_from_worker(t, &g[0], INA_T_KEEPALIVE, EPOCH);
	ina_pkt_free(p);
	assert_int_equal(engine_keepalive(t->e, t->now, &p, 1), 0);
	assert_int_equal(engine_stats(t->e)->keepalives, 2);
	/* Data sent restarts the period: none while a round sends. */
	fill(in, 0, 8, 1.0f, 1.0f);
	t->now += 10 * MS;
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	t->now += 49 * MS;
	assert_int_equal(engine_keepalive(t->e, t->now, &p, 1), 0);
	/* After an error: nothing. */
	rx_error(t, INA_WERR_LEFT, "job 7: rank 1 left", TOKEN);
	assert_int_not_equal(engine_error(t->e), 0);
	t->now += SEC_NS;
	assert_int_equal(engine_keepalive(t->e, t->now, &p, 1), 0);
	assert_int_equal(engine_stats(t->e)->keepalives, 2);
	done(t);
}

static void
test_engine_keepalive_off(void **state)
{
	struct t *t = *state;
	struct ina_pkt *p;

	join_ready(t); /* keepalive_ns 0: the default */
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);
	t->now += 3600 * SEC_NS;
	assert_int_equal(tx(t), 0);
	assert_int_equal(engine_keepalive(t->e, t->now, &p, 1), 0);
	done(t);
}

/*
 * A WAIT flagged LIVE is progress for the timeout: an allreduce waiting on a
 * paused peer for ten timeouts does not fail while LIVE WAITs come (the
 * stall is reported once), fails ENGINE_EPEER at pause_ns, and a result then
 * ends the pause. Without LIVE WAITs (test_engine_wait_delays_resend) the
 * timeout holds.
 */
static void
test_engine_live_wait_is_progress(void **state)
{
	struct t *t = *state;
	uint64_t t0;

	t->cfg.world = 3;
	t->cfg.pause_ns = 20 * TIMEOUT;
	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	t0 = t->now;
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	while (t->now < t0 + 10 * TIMEOUT) {
		uint16_t n;

		to_deadline(t);
		n = tx(t);
		assert_int_equal(engine_error(t->e), 0);
		for (uint16_t i = 0; i < n; i++)
			if (g[i].h.type == INA_T_DATA)
				rx_wait_live(t, g[i].h.lane, g[i].h.block, 1u << 2);
	}
	assert_int_equal(engine_stats(t->e)->stalls, 1);
	assert_non_null(strstr(engine_stall(t->e), "missing rank(s) 2"));
	assert_null(engine_stall(t->e));
	/* The longest pause: 20 timeouts after the round began. */
	while (engine_error(t->e) == 0) {
		uint16_t n;

		to_deadline(t);
		assert_true(t->now <= t0 + 20 * TIMEOUT);
		n = tx(t);
		for (uint16_t i = 0; i < n && !engine_error(t->e); i++)
			if (g[i].h.type == INA_T_DATA)
				rx_wait_live(t, g[i].h.lane, g[i].h.block, 1u << 2);
	}
	assert_true(t->now == t0 + 20 * TIMEOUT);
	assert_int_equal(engine_error(t->e), ENGINE_EPEER);
	assert_non_null(strstr(engine_error_msg(t->e), "longest pause"));
	assert_non_null(strstr(engine_error_msg(t->e), "rank(s) 2"));
	done(t);
}

/* LIVE WAITs stop (the switch gone): the timeout runs from the last one. */
static void
test_engine_live_wait_then_silence(void **state)
{
	struct t *t = *state;
	uint64_t last;

	t->cfg.world = 3;
	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	t->now += 3 * TIMEOUT / 4;
	rx_wait_live(t, 0, 0, 1u << 2);
	last = t->now;
	while (engine_error(t->e) == 0) {
		to_deadline(t);
		assert_true(t->now <= last + TIMEOUT);
		tx(t);
	}
	assert_true(t->now == last + TIMEOUT);
	assert_int_equal(engine_error(t->e), ENGINE_ENOSWITCH);
	done(t);
}

static void
test_engine_wait_delays_resend(void **state)
{
	struct t *t = *state;
	uint64_t t0, waited;
	int lane0_sends = 0;

	t->cfg.world = 3;
	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	t0 = t->now;
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);

	/* A WAIT for another round or block changes no timer. */
	t->now += 50 * US;
	rx_wait(t, 0, 0, 1, 0, 1u << 2);
	rx_wait(t, 1, 3, 0, 0, 1u << 2);
	assert_true(engine_next_deadline(t->e) == t0 + RTO);

	/* The switch has lane 0's packet and waits on rank 2. */
	t->now += 50 * US;
	waited = t->now;
	rx_wait(t, 0, 0, 0, 0, 1u << 2);
	assert_int_equal(engine_stats(t->e)->waits, 3);
	/* Lane 1's timer is untouched; lane 0's restarts at the WAIT, so it
	 * resends one timeout after the WAIT (to ask the shadow, should the
	 * result be lost), not one after its send. */
	assert_true(engine_next_deadline(t->e) == t0 + RTO);
	while (t->now < waited + RTO) {
		uint16_t n;

		to_deadline(t);
		n = tx(t);
		for (uint16_t i = 0; i < n; i++) {
			if (g[i].h.lane == 0) {
				lane0_sends++;
				assert_true(t->now == waited + RTO);
				check_data(t, &g[i], 0, 0, 0, 1, INA_BLOCK_END, 0, &in[0]);
			}
		}
	}
	assert_int_equal(lane0_sends, 1);

	/* No progress for the timeout while the switch answers every resend
	 * with a WAIT naming rank 2: a peer is to blame. */
	while (engine_error(t->e) == 0) {
		to_deadline(t);
		assert_true(t->now <= t0 + TIMEOUT);
		tx(t);
		if (t->now < t0 + TIMEOUT) {
			assert_int_equal(engine_error(t->e), 0);
			rx_wait(t, 0, 0, 0, 0, 1u << 2);
		}
	}
	assert_true(t->now == t0 + TIMEOUT);
	assert_int_equal(engine_error(t->e), ENGINE_EPEER);
	assert_non_null(strstr(engine_error_msg(t->e), "rank(s) 2"));
	assert_non_null(strstr(engine_error_msg(t->e), "lane 0 block 0"));
	assert_non_null(strstr(engine_error_msg(t->e), "round 0"));
	assert_int_equal(tx(t), 0);
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);
	done(t);
}

static void
test_engine_timeout_no_switch(void **state)
{
	struct t *t = *state;
	uint64_t t0;

	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	t0 = t->now;
	begin(t, in, out, 8, 4, ENGINE_SUM);
	while (engine_error(t->e) == 0) {
		to_deadline(t);
		assert_true(t->now <= t0 + TIMEOUT);
		tx(t);
	}
	assert_true(t->now == t0 + TIMEOUT);
	assert_int_equal(engine_error(t->e), ENGINE_ENOSWITCH);
	assert_non_null(strstr(engine_error_msg(t->e), "did not answer"));
	assert_non_null(strstr(engine_error_msg(t->e), "round 0"));
	done(t);
}

static void
test_engine_error_left(void **state)
{
	struct t *t = *state;
	const char *msg = "job 7: rank 1 left the job";

	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	rx_error(t, INA_WERR_LEFT, msg, TOKEN);
	assert_int_equal(engine_error(t->e), ENGINE_ELEFT);
	assert_int_equal(engine_phase(t->e), ENGINE_CLOSED);
	assert_non_null(strstr(engine_error_msg(t->e), msg));
	/* The job is gone on the switch: no resend, no LEAVE. */
	t->now += TIMEOUT;
	assert_int_equal(tx(t), 0);
	engine_leave(t->e, t->now);
	assert_int_equal(tx(t), 0);
	assert_int_equal(engine_phase(t->e), ENGINE_CLOSED);
	assert_int_equal(engine_allreduce(t->e, 0, in, out, 8, 4, ENGINE_SUM, t->now),
			 ENGINE_ELEFT);
	done(t);
}

/* A stall is described once, at a quarter of the timeout: the lane and block
 * waited for, and what the switch last said (a WAIT naming rank 2). */
static void
test_engine_stall_described(void **state)
{
	struct t *t = *state;
	const char *m;

	t->cfg.lanes = 1;
	join_ready(t);
	fill(in, 0, 4, 1.0f, 1.0f);
	begin(t, in, out, 4, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 1);
	assert_null(engine_stall(t->e));
	rx_wait(t, 0, 0, engine_round(t->e), 0, 0x4);
	t->now += TIMEOUT / 4 - 1;
	tx(t);
	assert_null(engine_stall(t->e));
	t->now += 1;
	tx(t);
	m = engine_stall(t->e);
	assert_non_null(m);
	assert_non_null(strstr(m, "lane 0 waits for block 0"));
	assert_non_null(strstr(m, "WAIT for lane 0 block 0, missing rank(s) 2"));
	assert_null(engine_stall(t->e));
	assert_int_equal(engine_stats(t->e)->stalls, 1);
	/* Once per stall, not per timer. */
	t->now += TIMEOUT / 4;
	tx(t);
	assert_null(engine_stall(t->e));
	assert_int_equal(engine_error(t->e), 0);
	done(t);
}

/* The switch found a rank dead: the allreduce fails with ENGINE_EPEER and the
 * switch's sentence naming the rank; nothing is left to free on it. */
static void
test_engine_error_peer_dead(void **state)
{
	struct t *t = *state;
	const char *msg = "job 7: rank 2 silent for 3000 ms; round 0 aborted";

	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	rx_error(t, INA_WERR_PEER_DEAD, msg, TOKEN);
	assert_int_equal(engine_error(t->e), ENGINE_EPEER);
	assert_int_equal(engine_phase(t->e), ENGINE_CLOSED);
	assert_non_null(strstr(engine_error_msg(t->e), msg));
	t->now += TIMEOUT;
	assert_int_equal(tx(t), 0);
	done(t);
}

/*
 * The result filter: every DATA packet carries the bound (f32 bits here), a
 * DEFERRED result writes zeros and marks its block, a full result does not;
 * the next allreduce has no bound unless set again, and a DEFERRED result
 * for it fails the operation with ENGINE_EPROTO.
 */
static void
test_engine_result_filter(void **state)
{
	struct t *t = *state;
	uint8_t deferred[2];
	const float s1[4] = { 5, 6, 7, 8 };

	t->cfg.lanes = 2;
	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	memset(deferred, 0xee, sizeof(deferred));
	engine_set_result_filter(t->e, 0.5f, deferred);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(deferred[0], 0);
	assert_int_equal(tx(t), 2);
	assert_int_equal(g[0].h.bound, ina_enc_bound(INA_ENC_F32, 0.5f, 0));
	assert_int_equal(g[1].h.bound, ina_enc_bound(INA_ENC_F32, 0.5f, 0));
	rx_result(t, 0, 0, INA_F_DEFERRED, INA_BLOCK_END, 0, NULL);
	rx_result(t, 1, 1, 0, INA_BLOCK_END, 0, s1);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_int_equal(deferred[0], 1);
	assert_int_equal(deferred[1], 0);
	for (int i = 0; i < 4; i++)
		assert_true(out[i] == 0.0f && out[4 + i] == s1[i]);
	assert_int_equal(engine_stats(t->e)->deferred, 1);

	/* Next round: no bound announced, and a DEFERRED answer is refused. */
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	assert_int_equal(g[0].h.bound, 0);
	rx_result(t, 0, 0, INA_F_VER | INA_F_DEFERRED, INA_BLOCK_END, 0, NULL);
	assert_int_equal(engine_error(t->e), ENGINE_EPROTO);
	assert_non_null(strstr(engine_error_msg(t->e), "deferred"));
	done(t);
}

static void
test_engine_saturated(void **state)
{
	struct t *t = *state;
	const int32_t q[4] = { INT32_MAX, 1, 2, 3 };

	t->cfg.encoding = INA_ENC_I32;
	t->cfg.lanes = 1;
	join_ready(t);
	fill(in, 0, 4, 1.0f, 1.0f);
	begin(t, in, out, 4, 4, ENGINE_SUM);
	check_data(t, tx_one(t), 0, INA_BLOCK_OPEN, 0, 0, 0, 3, NULL);
	rx_result(t, 0, INA_BLOCK_OPEN, 0, 0, 3, NULL);
	assert_int_equal(tx_one(t)->h.n_elems, 4);
	rx_result(t, 0, 0, INA_F_VER | INA_F_SATURATED, INA_BLOCK_END, 0, q);
	assert_int_equal(engine_error(t->e), ENGINE_ESATURATED);
	assert_int_equal(engine_stats(t->e)->saturated, 1);
	assert_non_null(strstr(engine_error_msg(t->e), "saturated"));
	assert_int_equal(tx(t), 0);
	/* The goodbye after an error is a LEAVE. */
	engine_finish(t->e, t->now);
	assert_int_equal(engine_phase(t->e), ENGINE_LEAVING);
	check_ctl(t, tx_one(t), INA_T_LEAVE, engine_round(t->e));
	done(t);
}

static void
test_engine_nonfinite_i32(void **state)
{
	struct t *t = *state;

	t->cfg.encoding = INA_ENC_I32;
	join_ready(t);
	/* A NaN in the lane's first non-zero block: refused at once. */
	fill(in, 0, 16, 1.0f, 1.0f);
	in[2] = NAN;
	t->round = 0;
	assert_int_equal(engine_allreduce(t->e, TENSOR, in, out, 16, 4, ENGINE_SUM, t->now),
			 ENGINE_ENONFINITE);
	assert_int_equal(engine_error(t->e), ENGINE_ENONFINITE);
	assert_non_null(strstr(engine_error_msg(t->e), "NaN"));
	assert_non_null(strstr(engine_error_msg(t->e), "block 0"));
	assert_int_equal(tx(t), 0);
	assert_int_equal(engine_stats(t->e)->pkts_sent, 1); /* the JOIN */
	engine_destroy(t->e);
	t->e = NULL;

	/* An infinity in a later block (2, lane 0): found when block 0 is
	 * announced, before it is sent (its packet names block 2's exponent). */
	in[2] = 3.0f;
	in[9] = -INFINITY;
	join_ready(t);
	begin(t, in, out, 16, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	check_data(t, for_lane(2, 0), 0, INA_BLOCK_OPEN, 0, 0, 0, 3, NULL);
	rx_result(t, 0, INA_BLOCK_OPEN, 0, 0, 3, NULL);
	assert_int_equal(engine_error(t->e), ENGINE_ENONFINITE);
	assert_non_null(strstr(engine_error_msg(t->e), "block 2"));
	assert_int_equal(tx(t), 0);
	done(t);
}

/* ---- Goodbyes ---- */

/* A one-block round, so that FIN has a finished job to close. */
static void
one_round(struct t *t)
{
	fill(in, 0, 4, 1.0f, 1.0f);
	begin(t, in, out, 4, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 1);
	rx_result(t, 0, 0, g[0].h.flags & INA_F_VER, INA_BLOCK_END, 0, in);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
}

static void
test_engine_fin(void **state)
{
	struct t *t = *state;
	struct ina_hdr h;

	join_ready(t);
	one_round(t);
	one_round(t);
	engine_finish(t->e, t->now);
	assert_int_equal(engine_phase(t->e), ENGINE_FINISHING);
	assert_true(engine_next_deadline(t->e) == 0);
	check_ctl(t, tx_one(t), INA_T_FIN, 2);
	assert_int_equal(tx(t), 0);
	/* A FIN_ACK of another epoch is not trusted. */
	h = sw_hdr(t, INA_T_FIN_ACK);
	h.epoch = EPOCH + 1;
	rx_raw(t, &h, NULL, 0);
	assert_int_equal(engine_stats(t->e)->bad, 1);
	assert_int_equal(engine_phase(t->e), ENGINE_FINISHING);
	h.epoch = EPOCH;
	h.round = 2;
	rx_raw(t, &h, NULL, 0);
	assert_int_equal(engine_phase(t->e), ENGINE_CLOSED);
	assert_int_equal(engine_error(t->e), 0);
	t->now += TIMEOUT;
	assert_int_equal(tx(t), 0);
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);
	done(t);
}

static void
test_engine_fin_unanswered(void **state)
{
	struct t *t = *state;
	uint64_t t0;
	int fins = 0;

	join_ready(t);
	one_round(t);
	t0 = t->now;
	engine_finish(t->e, t->now);
	while (engine_phase(t->e) != ENGINE_CLOSED) {
		uint16_t n;

		to_deadline(t);
		n = tx(t);
		for (uint16_t i = 0; i < n; i++) {
			check_ctl(t, &g[i], INA_T_FIN, 1);
			fins++;
		}
		assert_true(fins <= 10);
	}
	assert_int_equal(fins, 4);
	/* Sent at 0, 1, 3, 7 ms; closed at 15 ms. */
	assert_true(t->now == t0 + 15 * MS);
	assert_int_equal(engine_error(t->e), 0);
	assert_int_equal(tx(t), 0);
	done(t);
}

static void
test_engine_leave_after_error(void **state)
{
	struct t *t = *state;
	uint64_t t0;
	int leaves = 0;

	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	while (engine_error(t->e) == 0) {
		to_deadline(t);
		tx(t);
	}
	assert_int_equal(engine_error(t->e), ENGINE_ENOSWITCH);
	t0 = t->now;
	engine_leave(t->e, t->now);
	assert_int_equal(engine_phase(t->e), ENGINE_LEAVING);
	assert_true(engine_next_deadline(t->e) == 0);
	while (engine_phase(t->e) != ENGINE_CLOSED) {
		uint16_t n;

		to_deadline(t);
		n = tx(t);
		for (uint16_t i = 0; i < n; i++) {
			check_ctl(t, &g[i], INA_T_LEAVE, 0);
			leaves++;
		}
		assert_true(leaves <= 10);
	}
	assert_int_equal(leaves, 4);
	assert_true(t->now == t0 + 15 * MS);
	/* The error stays. */
	assert_int_equal(engine_error(t->e), ENGINE_ENOSWITCH);
	done(t);
}

static void
test_engine_leave_while_running(void **state)
{
	struct t *t = *state;

	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	/* FIN in the middle of an operation is a LEAVE. */
	engine_finish(t->e, t->now);
	assert_int_equal(engine_phase(t->e), ENGINE_LEAVING);
	check_ctl(t, tx_one(t), INA_T_LEAVE, 0);
	/* Results that arrive now are not for a running operation. */
	rx_result(t, 0, 0, 0, INA_BLOCK_END, 0, in);
	assert_int_equal(engine_stats(t->e)->stale, 1);
	done(t);
}

/* ---- In place, deadlines, buffers ---- */

static void
test_engine_in_place(void **state)
{
	struct t *t = *state;
	float buf[16], orig[16], sum[16];

	/* Lane 0: blocks 0, 2; lane 1: 1, 3. Mine: all four; the other
	 * rank's: 0 and 3. */
	join_ready(t);
	fill(buf, 0, 16, 1.0f, 1.0f);
	memcpy(orig, buf, sizeof(orig));
	memset(other, 0, sizeof(other));
	fill(other, 0, 4, 100.0f, 0.0f);
	fill(other, 12, 4, -100.0f, 0.0f);
	add(sum, orig, other, 16);
	begin(t, buf, buf, 16, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	check_data(t, for_lane(2, 0), 0, 0, 0, 0, 2, 0, &orig[0]);
	check_data(t, for_lane(2, 1), 1, 1, 0, 0, 3, 0, &orig[4]);

	rx_result(t, 0, 0, 0, 2, 0, &sum[0]);
	assert_floats(buf, sum, 4);
	check_data(t, tx_one(t), 0, 2, 1, 0, INA_BLOCK_END, 0, &orig[8]);
	/* Retransmissions are rebuilt from the buffer: blocks 1 and 2 are
	 * still mine. */
	t->now += RTO;
	assert_int_equal(tx(t), 2);
	check_data(t, for_lane(2, 0), 0, 2, 1, 1, INA_BLOCK_END, 0, &orig[8]);
	check_data(t, for_lane(2, 1), 1, 1, 0, 1, 3, 0, &orig[4]);
	rx_result(t, 1, 1, 0, 3, 0, &sum[4]);
	check_data(t, tx_one(t), 1, 3, 1, 0, INA_BLOCK_END, 0, &orig[12]);
	rx_result(t, 0, 2, INA_F_VER, INA_BLOCK_END, 0, &sum[8]);
	rx_result(t, 1, 3, INA_F_VER, INA_BLOCK_END, 0, &sum[12]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_floats(buf, sum, 16);

	/* In place with an average and a skipped block. */
	memcpy(orig, buf, sizeof(orig));
	memset(&buf[8], 0, 4 * sizeof(float)); /* block 2: zero */
	begin(t, buf, buf, 16, 4, ENGINE_AVG);
	assert_int_equal(tx(t), 2);
	check_data(t, for_lane(2, 0), 0, 0, 0, 0, INA_BLOCK_END, 0, &orig[0]);
	check_data(t, for_lane(2, 1), 1, 1, 0, 0, 3, 0, &orig[4]);
	fill(sum, 0, 16, 2.0f, 2.0f);
	rx_result(t, 0, 0, 0, INA_BLOCK_END, 0, &sum[0]);
	rx_result(t, 1, 1, 0, 3, 0, &sum[4]);
	check_data(t, tx_one(t), 1, 3, 1, 0, INA_BLOCK_END, 0, &orig[12]);
	rx_result(t, 1, 3, INA_F_VER, INA_BLOCK_END, 0, &sum[12]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	memset(&sum[8], 0, 4 * sizeof(float));
	for (int i = 0; i < 16; i++)
		want[i] = sum[i] * 0.5f;
	assert_floats(buf, want, 16);
	done(t);
}


/* ---- Sub-blocks (docs/PROTOCOL.md 2.7) ---- */

/* begin() of a round cut into 2^sub_log sub-blocks. */
static void
begin_cut(struct t *t, const float *src, float *dst, uint32_t n, uint16_t bs, uint8_t sub_log,
	  enum engine_op op)
{
	t->tensor_id = TENSOR;
	t->round = engine_round(t->e);
	t->n = n;
	t->bs = bs;
	t->sub_log = sub_log;
	engine_set_cut(t->e, sub_log);
	assert_int_equal(engine_allreduce(t->e, TENSOR, src, dst, n, bs, op, t->now), 0);
	assert_int_equal(engine_phase(t->e), ENGINE_RUNNING);
}

/* The cut of block 'block' of the running round. */
static struct ina_sub_cut
cut_of(const struct t *t, uint32_t block)
{
	return ina_sub_cut(t->bs, t->sub_log, ina_wire_block_elems(t->n, t->bs, block));
}

static struct ina_sub_mask
mask_of(uint64_t bits)
{
	struct ina_sub_mask m = { { bits, 0 } };

	return m;
}

/* A DATA of the cut round for 'block' carries the mask 'bits' and the
 * values of those sub-blocks of 'x' (the whole block, floats) in the job's
 * encoding at 'scale': the packet's bytes are what the encoding table
 * gives, and the wire's validation passed (wc_decode). */
static void
check_sub_data(const struct t *t, const struct wc_got *p, uint32_t block, uint64_t bits,
	       const float *x, int scale)
{
	struct ina_sub_cut c = cut_of(t, block);
	struct ina_sub_mask m = mask_of(bits);
	uint8_t want_bytes[BUF_SIZE];
	size_t size = ina_sub_encode(want_bytes, x, &m, &c, ina_encoding(t->cfg.encoding), scale);

	assert_int_equal(p->h.type, INA_T_DATA);
	assert_int_equal(p->h.block, block);
	assert_int_equal(p->h.sub_log, t->sub_log);
	assert_int_equal(p->h.block_size, t->bs);
	assert_int_equal(p->h.n_elems, c.n);
	assert_int_equal(p->payload_size, size);
	assert_memory_equal(p->payload, want_bytes, size);
}

/* Delivers a RESULT of the cut round: the sub-blocks 'bits' of 'sum' (the
 * whole block, floats) at 'scale'. */
static void
rx_result_sub(struct t *t, struct ina_hdr *h, uint64_t bits, const float *sum, int scale)
{
	struct ina_sub_cut c = cut_of(t, h->block);
	struct ina_sub_mask m = mask_of(bits);
	uint8_t payload[BUF_SIZE];
	size_t size = ina_sub_encode(payload, sum, &m, &c, ina_encoding(t->cfg.encoding), scale);

	h->n_elems = (uint16_t)c.n;
	rx_from(t, t->res_src, h, payload, size);
}

/* Block 'b' (of 'bs' elements from 'x') with only the sub-blocks 'bits'
 * of b elements kept, the rest +0: what a cut result writes. */
static void
keep_subs(float *dst, const float *x, uint32_t n, uint32_t b, uint64_t bits)
{
	for (uint32_t i = 0; i < n; i++)
		dst[i] = bits >> (i / b) & 1 ? x[i] : 0.0f;
}

/*
 * f32, B = 8 cut in 4 sub-blocks of 2, 19 elements: blocks 0, 1 and 2 (3
 * elements: sub-blocks 0 and a short 1). Lane 0: blocks 0, 2; lane 1:
 * block 1. Mine: block 0's sub-blocks 0 and 2 (1 is -0.0), block 2's short
 * sub-block 1. The union of block 0 adds sub-block 1; block 1 comes back
 * with sub-block 3 alone (the other rank's).
 */
static void
test_engine_sub_blocks_f32(void **state)
{
	struct t *t = *state;
	const struct wc_got *p;
	float sum[MAXE];
	struct ina_hdr h;
	uint64_t stale;

	t->cfg.max_block = 8;
	join_ready(t);
	fill(in, 0, 2, 1.0f, 1.0f);
	in[2] = -0.0f;
	fill(in, 4, 2, 3.0f, 0.5f);
	in[18] = 7.0f;
	fill(sum, 0, 19, 10.0f, 1.0f);
	begin_cut(t, in, out, 19, 8, 2, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	p = for_lane(2, 0);
	check_sub_data(t, p, 0, 0x5, &in[0], 0);
	assert_int_equal(p->h.next, 2);
	assert_int_equal(p->payload_size, 4 + 4 * 4); /* the mask, 4 floats */
	assert_int_equal(p->payload[0], 0x5);
	p = for_lane(2, 1);
	assert_int_equal(p->h.sub_log, 2); /* header-only, the cut all the same */
	assert_int_equal(p->h.n_elems, 0);
	assert_int_equal(p->len, INA_HDR_SIZE);

	/* A result without the round's cut is another block's: stale. */
	stale = engine_stats(t->e)->stale;
	t->sub_log = 0;
	rx_result(t, 0, 0, 0, 2, 0, &sum[0]);
	t->sub_log = 2;
	assert_int_equal(engine_stats(t->e)->stale, stale + 1);
	assert_true(out[0] > 1e38f);

	/* Block 0: sub-blocks 0, 1, 2; 3 is zero-filled. */
	h = result_hdr(t, 0, 0, 0, 2, 0);
	rx_result_sub(t, &h, 0x7, &sum[0], 0);
	keep_subs(want, &sum[0], 8, 2, 0x7);
	assert_floats(out, want, 8);
	assert_true(out[8] > 1e38f);
	/* Block 2: my short sub-block alone, 1 float after the mask. */
	p = tx_one(t);
	check_sub_data(t, p, 2, 0x2, &in[16], 0);
	assert_int_equal(p->payload_size, 4 + 4);
	/* Block 1: a sub-block I did not have. */
	h = result_hdr(t, 1, 1, 0, INA_BLOCK_END, 0);
	rx_result_sub(t, &h, 0x8, &sum[8], 0);
	keep_subs(&want[8], &sum[8], 8, 2, 0x8);
	assert_floats(&out[8], &want[8], 8);
	h = result_hdr(t, 0, 2, INA_F_VER, INA_BLOCK_END, 0);
	rx_result_sub(t, &h, 0x3, &sum[16], 0);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	memcpy(&want[16], &sum[16], 3 * sizeof(float));
	assert_floats(out, want, 19);
	assert_true(out[19] > 1e38f); /* nothing past the tensor */
	assert_int_equal(engine_stats(t->e)->bad, 0);

	/* The cut was for that round only: the next one sends whole blocks. */
	begin(t, in, out, 19, 8, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	p = for_lane(2, 0);
	assert_int_equal(p->h.sub_log, 0);
	check_data(t, p, 0, 0, 0, 0, 2, 0, &in[0]);
	done(t);
}

/* A cut round's DEFERRED result: header-only, zeros and the flag, as uncut. */
static void
test_engine_sub_blocks_deferred(void **state)
{
	struct t *t = *state;
	uint8_t deferred[2];
	float sum[8];
	struct ina_hdr h;

	t->cfg.max_block = 8;
	join_ready(t);
	fill(in, 0, 2, 1.0f, 1.0f);
	fill(in, 12, 2, 1.0f, 1.0f);
	fill(sum, 0, 8, 3.0f, 1.0f);
	engine_set_result_filter(t->e, 0.5f, deferred);
	begin_cut(t, in, out, 16, 8, 2, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	check_sub_data(t, for_lane(2, 0), 0, 0x1, &in[0], 0);
	check_sub_data(t, for_lane(2, 1), 1, 0x4, &in[8], 0);
	h = result_hdr(t, 0, 0, INA_F_DEFERRED, INA_BLOCK_END, 0);
	rx_result_h(t, &h, NULL);
	h = result_hdr(t, 1, 1, 0, INA_BLOCK_END, 0);
	rx_result_sub(t, &h, 0x6, sum, 0);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_int_equal(deferred[0], 1);
	assert_int_equal(deferred[1], 0);
	memset(want, 0, 8 * sizeof(float));
	keep_subs(&want[8], sum, 8, 2, 0x6);
	assert_floats(out, want, 16);
	done(t);
}

/* In place with an average: absent sub-blocks keep the input's bits (a
 * -0.0 stays), present ones are the sum scaled once; a header-only result
 * zeroes its block and a skipped block is left alone, as uncut. */
static void
test_engine_sub_blocks_in_place_avg(void **state)
{
	struct t *t = *state;
	float buf[16], orig[16], sum[16];
	struct ina_hdr h;

	t->cfg.world = 4;
	t->cfg.rank = 1;
	t->cfg.max_block = 8;
	join_ready(t);
	memset(buf, 0, sizeof(buf));
	fill(buf, 0, 4, 1.0f, 1.0f); /* block 0: sub-blocks 0, 1 of 4 */
	buf[4] = -0.0f;
	buf[7] = -0.0f;
	buf[8] = -0.0f; /* block 1: zero */
	memcpy(orig, buf, sizeof(orig));
	fill(sum, 0, 16, 4.0f, 2.0f);
	begin_cut(t, buf, buf, 16, 8, 2, ENGINE_AVG);
	assert_int_equal(tx(t), 2);
	check_sub_data(t, for_lane(2, 0), 0, 0x3, &orig[0], 0);
	assert_int_equal(for_lane(2, 1)->h.n_elems, 0);
	h = result_hdr(t, 0, 0, 0, INA_BLOCK_END, 0);
	rx_result_sub(t, &h, 0x3, &sum[0], 0);
	for (int i = 0; i < 4; i++)
		want[i] = sum[i] * 0.25f;
	memcpy(&want[4], &orig[4], 4 * sizeof(float));
	assert_floats(buf, want, 8);
	/* Block 1 (mine zero): the others' sub-block 2 only. */
	h = result_hdr(t, 1, 1, 0, INA_BLOCK_END, 0);
	rx_result_sub(t, &h, 0x4, &sum[8], 0);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	memcpy(&want[8], &orig[8], 8 * sizeof(float));
	want[12] = sum[12] * 0.25f;
	want[13] = sum[13] * 0.25f;
	assert_floats(buf, want, 16);
	assert_true(signbit(buf[8]) && signbit(buf[4]));
	done(t);
}

/*
 * i32: one exponent per block, whatever its sub-blocks (the OPEN announces
 * the block's largest, the DATA and the RESULT scale every present
 * sub-block by it). B = 8 in 2 sub-blocks of 4, one block.
 */
static void
test_engine_sub_blocks_i32(void **state)
{
	struct t *t = *state;
	const struct wc_got *p;
	float sum[8];
	struct ina_hdr h;
	int e, scale;

	t->cfg.encoding = INA_ENC_I32;
	t->cfg.lanes = 1;
	t->cfg.max_block = 8;
	join_ready(t);
	in[4] = 3.0f;
	in[5] = -0.125f;
	in[7] = 1.5f;
	e = ina_enc_i32_exp(in, 8);
	scale = ina_enc_i32_scale(e, t->cfg.world);
	begin_cut(t, in, out, 8, 8, 1, ENGINE_SUM);
	p = tx_one(t);
	assert_int_equal(p->h.block, INA_BLOCK_OPEN);
	assert_int_equal(p->h.sub_log, 1);
	assert_int_equal(p->h.next, 0);
	assert_int_equal(p->h.exp, e);
	/* The other rank's block has a larger exponent: that one is agreed. */
	h = result_hdr(t, 0, INA_BLOCK_OPEN, 0, 0, (int16_t)(e + 1));
	rx_result_h(t, &h, NULL);
	scale = ina_enc_i32_scale(e + 1, t->cfg.world);
	p = tx_one(t);
	check_sub_data(t, p, 0, 0x2, in, scale);
	assert_int_equal(p->h.next, INA_BLOCK_END);
	assert_int_equal(wc_word_at(p->payload + 4, 0), (uint32_t)(int32_t)ldexpf(3.0f, scale));
	fill(sum, 0, 8, -2.0f, 0.75f);
	h = result_hdr(t, 0, 0, INA_F_VER, INA_BLOCK_END, 0);
	rx_result_sub(t, &h, 0x3, sum, scale);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_floats(out, sum, 8);
	done(t);
}

/* bf16: the present sub-blocks in 2-byte elements after the mask. */
static void
test_engine_sub_blocks_bf16(void **state)
{
	struct t *t = *state;
	const struct wc_got *p;
	float sum[8];
	struct ina_hdr h;

	t->cfg.encoding = INA_ENC_BF16;
	t->cfg.lanes = 1;
	t->cfg.max_block = 8;
	join_ready(t);
	in[2] = 1.0f + 0x1p-8f; /* a tie: rounds to even, 1 */
	in[3] = 0.1f;
	begin_cut(t, in, out, 8, 8, 2, ENGINE_SUM);
	p = tx_one(t);
	check_sub_data(t, p, 0, 0x2, in, 0);
	assert_int_equal(p->payload_size, 4 + 2 * 2);
	assert_int_equal(p->payload[4] << 8 | p->payload[5], 0x3f80);
	sum[0] = 2.0f;
	sum[1] = -0x1p-133f;
	sum[2] = 258.0f;
	sum[3] = 0.5f;
	fill(sum, 4, 4, 9.0f, 1.0f);
	h = result_hdr(t, 0, 0, 0, INA_BLOCK_END, 0);
	rx_result_sub(t, &h, 0xb, sum, 0);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	keep_subs(want, sum, 8, 2, 0xb);
	assert_floats(out, want, 8);
	done(t);
}

/*
 * Block-sparse with a cut: a listed all-zero block still goes out (its
 * first sub-block, zeros) so the union is the uncut one; the union's list
 * and the dense buffer get whole blocks, absent sub-blocks zero.
 */
static void
test_engine_sub_blocks_listed(void **state)
{
	struct t *t = *state;
	const uint32_t index[2] = { 0, 3 };
	float values[16], list[4 * 8], dense[32], sum[16];
	uint32_t chain[2], out_index[4], out_count = 0;
	struct engine_blocks b = {
		.index = index,
		.values = values,
		.count = 2,
		.chain = chain,
		.dense = dense,
		.out_index = out_index,
		.out_values = list,
		.capacity = 4,
		.out_count = &out_count,
	};
	const struct wc_got *p;
	struct ina_hdr h;

	t->cfg.max_block = 8;
	join_ready(t);
	memset(values, 0, sizeof(values));  /* block 0: zeros */
	fill(values, 8 + 4, 2, 1.0f, 1.0f); /* block 3: sub-block 2 */
	memset(list, 0x7f, sizeof(list));
	memset(dense, 0x7f, sizeof(dense));
	engine_set_blocks(t->e, &b);
	begin_cut(t, NULL, NULL, 32, 8, 2, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	check_sub_data(t, for_lane(2, 0), 0, 0x1, &values[0], 0);
	p = for_lane(2, 1); /* an empty ack for block 1 first */
	assert_int_equal(p->h.block, 1);
	assert_int_equal(p->h.next, 3);
	assert_int_equal(p->h.n_elems, 0);
	fill(sum, 0, 16, 1.0f, 1.0f);
	h = result_hdr(t, 0, 0, 0, 2, 0);
	rx_result_sub(t, &h, 0x1, &sum[0], 0);
	assert_int_equal(out_count, 1);
	assert_int_equal(out_index[0], 0);
	keep_subs(want, &sum[0], 8, 2, 0x1);
	assert_floats(list, want, 8);
	assert_floats(dense, want, 8);
	assert_int_equal(tx_one(t)->h.n_elems, 0); /* block 2: not mine */
	h = result_hdr(t, 0, 2, INA_F_VER, INA_BLOCK_END, 0);
	rx_result_h(t, &h, NULL); /* nobody had block 2: in no union */
	assert_int_equal(out_count, 1);
	h = result_hdr(t, 1, 1, 0, 3, 0);
	rx_result_h(t, &h, NULL);
	check_sub_data(t, tx_one(t), 3, 0x4, &values[8], 0);
	h = result_hdr(t, 1, 3, INA_F_VER, INA_BLOCK_END, 0);
	rx_result_sub(t, &h, 0xc, &sum[8], 0);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_int_equal(out_count, 2);
	assert_int_equal(out_index[1], 3);
	keep_subs(&want[8], &sum[8], 8, 2, 0xc);
	assert_floats(&list[8], &want[8], 8);
	assert_floats(&dense[24], &want[8], 8);
	for (int i = 8; i < 24; i++)
		assert_true(dense[i] > 1e38f); /* in no union: not written */
	done(t);
}

/* ssp:1 with a cut: the trailer of a PARTIAL result follows the mask and
 * the present sub-blocks, and a missed block is written all the same. */
static void
test_engine_sub_blocks_ssp(void **state)
{
	struct t *t = *state;
	uint8_t join[sizeof(struct ina_wire_join)], payload[BUF_SIZE], missed[2];
	struct ina_sub_cut c;
	struct ina_sub_mask m = mask_of(0x1);
	struct ina_hdr h;
	float sum[16];
	uint64_t contrib = htobe64(0x2); /* rank 1 only */
	size_t size;

	t->cfg.ssp = 1;
	t->cfg.max_block = 8;
	start(t);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_int_equal(tx_one(t)->h.type, INA_T_JOIN);
	h = sw_hdr(t, INA_T_JOIN_ACK);
	ina_wire_encode_join(t->cfg.world, t->cfg.lanes, t->cfg.max_block, join);
	ina_wire_join_set_ssp(join, 1);
	rx_raw(t, &h, join, sizeof(join));
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	fill(in, 0, 2, 1.0f, 1.0f);  /* block 0: sub-block 0 */
	fill(in, 14, 2, 5.0f, 1.0f); /* block 1: sub-block 3 */
	memset(missed, 0xee, sizeof(missed));
	engine_set_missed(t->e, missed);
	begin_cut(t, in, out, 16, 8, 2, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	check_sub_data(t, for_lane(2, 0), 0, 0x1, &in[0], 0);
	check_sub_data(t, for_lane(2, 1), 1, 0x8, &in[8], 0);
	fill(sum, 0, 16, 2.0f, 1.0f);
	/* Block 0 closed without me: the others' sub-block 0, then the bitmap. */
	h = result_hdr(t, 0, 0, INA_F_PARTIAL, INA_BLOCK_END, 0);
	c = cut_of(t, 0);
	size = ina_sub_encode(payload, sum, &m, &c, ina_encoding(INA_ENC_F32), 0);
	memcpy(payload + size, &contrib, sizeof(contrib));
	h.n_elems = 8;
	rx_raw(t, &h, payload, size + sizeof(contrib));
	assert_int_equal(engine_stats(t->e)->bad, 0);
	assert_int_equal(missed[0], 1);
	assert_int_equal(engine_stats(t->e)->ssp_missed, 1);
	h = result_hdr(t, 1, 1, 0, INA_BLOCK_END, 0);
	rx_result_sub(t, &h, 0xa, &sum[8], 0);
	assert_int_equal(engine_nb_in_flight(t->e), 0);
	assert_int_equal(missed[1], 0);
	keep_subs(want, sum, 8, 2, 0x1);
	keep_subs(&want[8], &sum[8], 8, 2, 0xa);
	assert_floats(out, want, 16);
	done(t);
}

/* The cut is checked: 2^sub_log must divide B, and a full block with its
 * mask must fit a packet buffer; a refused one is gone for the next call. */
static void
test_engine_sub_blocks_refused(void **state)
{
	struct t *t = *state;

	t->cfg.max_block = 12;
	join_ready(t);
	engine_set_cut(t->e, 3); /* 12 is no multiple of 8 */
	assert_int_equal(engine_allreduce(t->e, TENSOR, in, out, 24, 12, ENGINE_SUM, t->now),
			 -EINVAL);
	engine_set_cut(t->e, INA_SUB_LOG_MAX + 1);
	assert_int_equal(engine_allreduce(t->e, TENSOR, in, out, 24, 12, ENGINE_SUM, t->now),
			 -EINVAL);
	in[0] = 1.0f;
	begin(t, in, out, 24, 12, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	assert_int_equal(for_lane(2, 0)->h.sub_log, 0);
	engine_destroy(t->e);
	t->e = NULL;

	/* The largest f32 block fills a buffer: no room left for a mask. */
	t->cfg.max_block = (BUF_SIZE - INA_HDR_SIZE) / 4;
	join_ready(t);
	engine_set_cut(t->e, 1);
	assert_int_equal(engine_allreduce(t->e, TENSOR, in, out, 24, t->cfg.max_block, ENGINE_SUM,
					  t->now),
			 -EINVAL);
	engine_destroy(t->e);
	t->e = NULL;
	t->cfg.max_block = 256;
	join_ready(t);
	engine_set_cut(t->e, 7); /* 56 + 16 + 1024 bytes fit 2048 */
	assert_int_equal(engine_allreduce(t->e, TENSOR, in, out, 24, 256, ENGINE_SUM, t->now), 0);
	done(t);
}

static void
test_engine_next_deadline(void **state)
{
	struct t *t = *state;
	uint64_t t1, t2;

	t->cfg.timeout_ns = 6 * MS; /* shorter than rto_max */
	start(t);
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_true(engine_next_deadline(t->e) == 0);
	assert_int_equal(tx(t), 1);
	assert_true(engine_next_deadline(t->e) == t->now + RTO);
	t->now += 10 * US;
	rx_join_ack(t, EPOCH, 2, 2, 4);
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);

	fill(in, 0, 16, 1.0f, 1.0f);
	t1 = t->now;
	begin(t, in, out, 16, 4, ENGINE_SUM);
	assert_true(engine_next_deadline(t->e) == 0);
	assert_int_equal(tx(t), 2);
	assert_true(engine_next_deadline(t->e) == t1 + RTO);
	/* A result makes an answer due at once. */
	t->now = t2 = t1 + RTO / 2;
	rx_result(t, 0, 0, 0, 2, 0, in);
	assert_true(engine_next_deadline(t->e) == 0);
	assert_int_equal(tx(t), 1);
	assert_true(engine_next_deadline(t->e) == t1 + RTO); /* lane 1's */
	/* Lane 1 waited: its timer restarts from the WAIT with its own
	 * timeout (RTO), which is now the earliest; lane 0's runs on the
	 * measured round trip RTO/2: SRTT + 4 RTTVAR = RTO/2 + 4 RTO/4. */
	t->now += 100 * US;
	rx_wait(t, 1, 1, 0, 0, 2);
	assert_true(engine_next_deadline(t->e) == t2 + 100 * US + RTO);
	rx_wait(t, 0, 2, 0, 1, 2);
	assert_true(engine_next_deadline(t->e) == t2 + 100 * US + RTO);
	/* Resends go on; a WAIT keeps naming rank 1; the operation's
	 * timeout then ends it. */
	while (t->now < t2 + 6 * MS - 1) {
		to_deadline(t);
		if (t->now > t2 + 6 * MS - 1)
			t->now = t2 + 6 * MS - 1;
		tx(t);
		assert_int_equal(engine_error(t->e), 0);
		if (t->now >= t2 + 4 * MS && t->now < t2 + 5 * MS)
			rx_wait(t, 0, 2, 0, 1, 2);
	}
	assert_int_equal(tx(t), 0);
	assert_int_equal(engine_error(t->e), 0);
	t->now++;
	assert_int_equal(tx(t), 0);
	assert_int_equal(engine_error(t->e), ENGINE_EPEER);
	assert_non_null(strstr(engine_error_msg(t->e), "rank(s) 1"));
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);
	/* The goodbye's timer. */
	engine_leave(t->e, t->now);
	assert_true(engine_next_deadline(t->e) == 0);
	assert_int_equal(tx(t), 1);
	assert_true(engine_next_deadline(t->e) == t->now + RTO);
	done(t);
}

static void
test_engine_pool_empty_defers_send(void **state)
{
	struct t *t = *state;
	struct ina_pkt *held[NB_PKTS];
	unsigned nb = 0;
	uint16_t n;

	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	while (nb < NB_PKTS && (held[nb] = ina_pkt_alloc(t->pool)) != NULL)
		nb++;
	assert_int_equal(tx(t), 0);
	assert_true(engine_next_deadline(t->e) == 0); /* still due */
	ina_pkt_free_bulk(held, nb);
	n = tx(t);
	assert_int_equal(n, 2);
	check_data(t, for_lane(n, 0), 0, 0, 0, 0, INA_BLOCK_END, 0, &in[0]);
	check_data(t, for_lane(n, 1), 1, 1, 0, 0, INA_BLOCK_END, 0, &in[4]);
	done(t);
}

/*
 * A WAIT naming a lane the job does not have (lane >= L) is invalid
 * (docs/PROTOCOL.md 2.1: lane is 0..L-1 in DATA, RESULT and WAIT; section 4:
 * every field is validated, a packet that fails is dropped and counted). It
 * must not be used as an index into the engine's lanes. The block named here
 * is in no lane, so that the engine, if it reads past its lanes, is unlikely
 * to also write there (with block 0 it writes sent_ns and rto_ns past the
 * array and corrupts the heap).
 */
static void
test_engine_wait_lane_out_of_range(void **state)
{
	struct t *t = *state;

	join_ready(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	rx_wait(t, 2, 1001, 0, 0, 2);
	assert_int_equal(engine_stats(t->e)->waits, 0);
	assert_int_equal(engine_stats(t->e)->bad, 1);
	assert_true(engine_next_deadline(t->e) == t->now + RTO);
	done(t);
}

/* ---- A replica switch ---- */

/* The replica's address; results then come through it, as they do from a
 * primary with a replica. */
static void
with_replica(struct t *t)
{
	t->cfg.replica.len = 16;
	for (int k = 0; k < 16; k++)
		t->cfg.replica.bytes[k] = (uint8_t)(0x60 + k);
	t->cfg.failover_ns = FAILOVER;
	t->res_src = &t->cfg.replica;
}

static int
to_replica(const struct t *t, const struct wc_got *p)
{
	return ina_peer_equal(&p->peer, &t->cfg.replica);
}

static void
rx_join_ack_from(struct t *t, const struct ina_peer *src, uint8_t flags, uint32_t epoch)
{
	struct ina_hdr h = sw_hdr(t, INA_T_JOIN_ACK);
	uint8_t payload[sizeof(struct ina_wire_join)];

	h.flags = flags;
	h.epoch = epoch;
	ina_wire_encode_join(t->cfg.world, t->cfg.lanes, t->cfg.max_block, payload);
	rx_from(t, src, &h, payload, sizeof(payload));
}

/* The replica's announcement: taken over under 'epoch'. */
static void
rx_announce(struct t *t, const struct ina_peer *src, uint32_t epoch)
{
	struct ina_hdr h = wc_hdr(INA_T_FAILOVER, t->cfg.encoding, JOB, epoch, INA_RANK_SWITCH,
				  TOKEN);

	rx_from(t, src, &h, NULL, 0);
}

/* The STANDBY JOIN to the replica: the job's parameters and epoch EPOCH. */
static void
check_standby_join(const struct t *t, const struct wc_got *p)
{
	uint16_t world, lanes, max_block;

	assert_true(to_replica(t, p));
	check_from_worker(t, p, INA_T_JOIN, EPOCH);
	assert_int_equal(p->h.flags, INA_F_STANDBY);
	assert_int_equal(p->h.block_size, t->cfg.max_block);
	assert_int_equal(p->len, INA_HDR_SIZE + sizeof(struct ina_wire_join));
	ina_wire_decode_join(p->payload, &world, &lanes, &max_block);
	assert_int_equal(world, t->cfg.world);
	assert_int_equal(lanes, t->cfg.lanes);
	assert_int_equal(max_block, t->cfg.max_block);
}

/* A FAILOVER to the replica: header only, with the primary's epoch. */
static void
check_failover(const struct t *t, const struct wc_got *p)
{
	assert_true(to_replica(t, p));
	check_from_worker(t, p, INA_T_FAILOVER, EPOCH);
	assert_int_equal(p->len, INA_HDR_SIZE);
	assert_int_equal(p->h.flags, 0);
	assert_int_equal(p->h.lane, 0);
	assert_int_equal(p->h.block, 0);
	assert_int_equal(p->h.n_elems, 0);
}

/* JOIN to the primary, STANDBY JOIN to the replica: READY with EPOCH. */
static void
join_replica(struct t *t)
{
	const struct wc_got *p;

	with_replica(t);
	start(t);
	assert_int_equal(engine_join(t->e, t->now), 0);
	p = tx_one(t);
	assert_false(to_replica(t, p));
	check_from_worker(t, p, INA_T_JOIN, 0);
	t->now += 10 * US;
	rx_join_ack_from(t, &t->cfg.sw, 0, EPOCH);
	assert_int_equal(engine_phase(t->e), ENGINE_JOINING);
	check_standby_join(t, tx_one(t));
	t->now += 10 * US;
	rx_join_ack_from(t, &t->cfg.replica, INA_F_STANDBY, EPOCH);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_int_equal(engine_epoch(t->e), EPOCH);
}

/* Keepalives with a replica: to the primary and, standing by, to the
 * replica (its standby job must outlive a pause); after the takeover to the
 * replica alone, under its epoch. */
static void
test_engine_keepalive_replica(void **state)
{
	struct t *t = *state;

	t->cfg.keepalive_ns = 50 * MS;
	join_replica(t);
	t->now += 50 * MS;
	assert_int_equal(tx(t), 2);
	check_from_worker(t, &g[0], INA_T_KEEPALIVE, EPOCH);
	check_from_worker(t, &g[1], INA_T_KEEPALIVE, EPOCH);
	assert_true(!to_replica(t, &g[0]) && to_replica(t, &g[1]));
	rx_announce(t, &t->cfg.replica, EPOCH2);
	assert_true(engine_failed_over(t->e));
	t->now += 50 * MS;
	assert_int_equal(tx(t), 1);
	check_from_worker(t, &g[0], INA_T_KEEPALIVE, EPOCH2);
	assert_true(to_replica(t, &g[0]));
	assert_int_equal(engine_stats(t->e)->keepalives, 3);
	done(t);
}

/* The join completes only when the primary and then the replica answered;
 * each answer counts only from the switch that owes it. */
static void
test_engine_replica_standby_join(void **state)
{
	struct t *t = *state;
	uint8_t first[INA_HDR_SIZE + 8];
	const struct wc_got *p;
	uint64_t sent;

	with_replica(t);
	start(t);
	assert_int_equal(engine_join(t->e, t->now), 0);
	p = tx_one(t);
	assert_false(to_replica(t, p));
	check_from_worker(t, p, INA_T_JOIN, 0);
	assert_int_equal(p->h.flags, 0);
	t->now += 10 * US;
	/* The replica's word does not count before the primary's, nor a plain
	 * JOIN_ACK from the replica. */
	rx_join_ack_from(t, &t->cfg.replica, INA_F_STANDBY, EPOCH);
	rx_join_ack_from(t, &t->cfg.replica, 0, EPOCH);
	assert_int_equal(engine_stats(t->e)->stale, 2);
	assert_int_equal(engine_phase(t->e), ENGINE_JOINING);
	assert_int_equal(engine_epoch(t->e), 0);

	/* The primary admits the job: a STANDBY JOIN with its epoch goes to
	 * the replica at once, resent on the backoff with the same bytes. */
	rx_join_ack_from(t, &t->cfg.sw, 0, EPOCH);
	assert_int_equal(engine_phase(t->e), ENGINE_JOINING);
	assert_int_equal(engine_epoch(t->e), EPOCH);
	assert_true(engine_next_deadline(t->e) == 0);
	p = tx_one(t);
	check_standby_join(t, p);
	memcpy(first, p->bytes, sizeof(first));
	sent = t->now;
	assert_int_equal(tx(t), 0);
	assert_true(engine_next_deadline(t->e) == sent + RTO);
	t->now = sent + RTO;
	p = tx_one(t);
	assert_true(to_replica(t, p));
	assert_memory_equal(p->bytes, first, sizeof(first));
	/* A late JOIN_ACK of the primary, a STANDBY one from the primary's
	 * address, and one of another epoch change nothing. */
	rx_join_ack_from(t, &t->cfg.sw, 0, EPOCH);
	rx_join_ack_from(t, &t->cfg.sw, INA_F_STANDBY, EPOCH);
	assert_int_equal(engine_stats(t->e)->stale, 4);
	rx_join_ack_from(t, &t->cfg.replica, INA_F_STANDBY, EPOCH + 3);
	assert_int_equal(engine_stats(t->e)->bad, 1);
	assert_int_equal(engine_phase(t->e), ENGINE_JOINING);

	rx_join_ack_from(t, &t->cfg.replica, INA_F_STANDBY, EPOCH);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_int_equal(engine_epoch(t->e), EPOCH);
	assert_int_equal(engine_error(t->e), 0);
	assert_false(engine_failed_over(t->e));
	assert_true(engine_next_deadline(t->e) == UINT64_MAX);
	t->now += TIMEOUT * 2;
	assert_int_equal(tx(t), 0);
	done(t);
}

/* The replica took the job over before this worker asked it to stand by (a
 * late worker): its announcement completes the join, on the replica. */
static void
test_engine_replica_join_after_takeover(void **state)
{
	struct t *t = *state;
	uint16_t n;

	with_replica(t);
	start(t);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_int_equal(tx(t), 1);
	/* Before the primary's JOIN_ACK an announcement means nothing. */
	rx_announce(t, &t->cfg.replica, EPOCH2);
	assert_int_equal(engine_stats(t->e)->stale, 1);
	rx_join_ack_from(t, &t->cfg.sw, 0, EPOCH);
	check_standby_join(t, tx_one(t));
	rx_announce(t, &t->cfg.replica, EPOCH2);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_true(engine_failed_over(t->e));
	assert_int_equal(engine_epoch(t->e), EPOCH2);
	t->epoch = EPOCH2;
	fill(in, 0, 8, 1.0f, 1.0f);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	n = tx(t);
	assert_int_equal(n, 2);
	assert_true(to_replica(t, &g[0]) && to_replica(t, &g[1]));
	check_data(t, for_lane(n, 0), 0, 0, 0, 0, INA_BLOCK_END, 0, &in[0]);
	done(t);
}

/* A replica that never answers fails the join, naming the replica; the
 * primary, which holds the job, hears LEAVE. */
static void
test_engine_replica_join_unanswered(void **state)
{
	struct t *t = *state;
	uint64_t t0;
	int standby_joins = 0, leaves = 0;

	with_replica(t);
	start(t);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_int_equal(tx(t), 1);
	rx_join_ack_from(t, &t->cfg.sw, 0, EPOCH);
	t0 = t->now;
	while (engine_error(t->e) == 0) {
		uint16_t n;

		to_deadline(t);
		n = tx(t);
		for (uint16_t i = 0; i < n; i++) {
			check_standby_join(t, &g[i]);
			standby_joins++;
		}
		assert_true(standby_joins < 100);
	}
	assert_true(t->now >= t0 + TIMEOUT && t->now <= t0 + TIMEOUT + RTO_MAX);
	assert_int_equal(engine_error(t->e), ENGINE_ENOSWITCH);
	assert_non_null(strstr(engine_error_msg(t->e), "replica switch did not answer"));
	assert_int_equal(engine_phase(t->e), ENGINE_LEAVING);
	while (engine_phase(t->e) != ENGINE_CLOSED) {
		uint16_t n;

		to_deadline(t);
		n = tx(t);
		for (uint16_t i = 0; i < n; i++) {
			assert_false(to_replica(t, &g[i]));
			check_ctl(t, &g[i], INA_T_LEAVE, 0);
			leaves++;
		}
		assert_true(leaves <= 10);
	}
	assert_int_equal(leaves, 4);
	done(t);
}

/* A replica that refuses to stand by fails the join with its reason. */
static void
test_engine_replica_join_refused(void **state)
{
	struct t *t = *state;
	const char *msg = "job 7: the slot pool cannot hold the job's lanes";
	struct ina_hdr h;

	with_replica(t);
	start(t);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_int_equal(tx(t), 1);
	rx_join_ack_from(t, &t->cfg.sw, 0, EPOCH);
	check_standby_join(t, tx_one(t));
	h = sw_hdr(t, INA_T_ERROR);
	h.status = INA_WERR_NO_SLOTS;
	rx_from(t, &t->cfg.replica, &h, msg, strlen(msg));
	assert_int_equal(engine_error(t->e), ENGINE_EREFUSED);
	assert_non_null(strstr(engine_error_msg(t->e), "replica switch refused to stand by"));
	assert_non_null(strstr(engine_error_msg(t->e), msg));
	assert_int_equal(engine_phase(t->e), ENGINE_LEAVING);
	{
		const struct wc_got *p = tx_one(t);

		assert_false(to_replica(t, p));
		check_ctl(t, p, INA_T_LEAVE, 0);
	}
	done(t);
}

/*
 * The primary falls silent mid-round: RESULTs through the replica kept it
 * alive until then; after failover_ns of silence FAILOVER goes to the
 * replica on the backoff, and the stall names the replica. The announcement
 * moves the engine to the replica under the new epoch, every packet in flight
 * goes again at once, the primary is no longer heard, and the round ends on
 * the replica's results; the next round and the goodbye go to it alone.
 */
static void
test_engine_failover_on_silence(void **state)
{
	struct t *t = *state;
	uint64_t heard, last_fo, gap = RTO;
	float sum[16];
	const char *m;
	int fos = 0;
	uint16_t n;

	/* Lane 0: blocks 0, 2; lane 1: blocks 1, 3; all mine. */
	join_replica(t);
	fill(in, 0, 16, 1.0f, 1.0f);
	fill(sum, 0, 16, 3.0f, 2.0f);
	begin(t, in, out, 16, 4, ENGINE_SUM);
	n = tx(t);
	assert_int_equal(n, 2);
	for (uint16_t i = 0; i < n; i++)
		assert_false(to_replica(t, &g[i]));
	/* Block 0's result through the replica: the primary is alive. */
	t->now += 500 * US;
	heard = t->now;
	rx_result(t, 0, 0, 0, 2, 0, &sum[0]);
	check_data(t, tx_one(t), 0, 2, 1, 0, INA_BLOCK_END, 0, &in[8]);
	/* Nothing more from anyone: the lanes resend to the primary until
	 * failover_ns after the last word; then FAILOVER, on the backoff. */
	while (fos < 4) {
		to_deadline(t);
		n = tx(t);
		for (uint16_t i = 0; i < n; i++) {
			if (g[i].h.type == INA_T_DATA) {
				assert_false(to_replica(t, &g[i]));
				continue;
			}
			check_failover(t, &g[i]);
			if (fos == 0)
				assert_true(t->now == heard + FAILOVER);
			else
				assert_true(t->now == last_fo + gap);
			if (fos > 0)
				gap = gap * 2 > RTO_MAX ? RTO_MAX : gap * 2;
			last_fo = t->now;
			fos++;
		}
	}
	assert_int_equal(engine_stats(t->e)->failover_sent, 4);
	assert_int_equal(engine_error(t->e), 0);
	m = engine_stall(t->e);
	assert_non_null(m);
	assert_non_null(strstr(m, "waiting for the replica to take over"));
	assert_int_equal(engine_stats(t->e)->failovers, 0);

	/* The announcement from the primary's address is not the replica's. */
	rx_announce(t, &t->cfg.sw, EPOCH2);
	assert_false(engine_failed_over(t->e));
	rx_announce(t, &t->cfg.replica, EPOCH2);
	assert_true(engine_failed_over(t->e));
	assert_int_equal(engine_epoch(t->e), EPOCH2);
	assert_int_equal(engine_stats(t->e)->failovers, 1);
	t->epoch = EPOCH2;
	/* Both lanes' packets again at once, to the replica, new epoch, marked. */
	assert_true(engine_next_deadline(t->e) == 0);
	n = tx(t);
	assert_int_equal(n, 2);
	assert_true(to_replica(t, for_lane(n, 0)) && to_replica(t, for_lane(n, 1)));
	check_data(t, for_lane(n, 0), 0, 2, 1, 1, INA_BLOCK_END, 0, &in[8]);
	check_data(t, for_lane(n, 1), 1, 1, 0, 1, 3, 0, &in[4]);
	assert_int_equal(tx(t), 0);
	/* A fresh backoff from the measured timeout: 500 us + 4 x 250 us. */
	assert_true(engine_next_deadline(t->e) == t->now + 1500 * US);
	/* The primary is no longer heard, nor an old-epoch result; a repeated
	 * announcement changes nothing. */
	{
		uint64_t stale = engine_stats(t->e)->stale, bad = engine_stats(t->e)->bad;

		t->res_src = &t->cfg.sw;
		rx_result(t, 1, 1, 0, 3, 0, &sum[4]);
		t->res_src = &t->cfg.replica;
		rx_wait(t, 1, 1, 0, 0, 2);
		t->epoch = EPOCH;
		rx_result(t, 1, 1, 0, 3, 0, &sum[4]);
		t->epoch = EPOCH2;
		rx_announce(t, &t->cfg.replica, EPOCH2);
		rx_announce(t, &t->cfg.replica, EPOCH2 + 1);
		assert_int_equal(engine_stats(t->e)->stale, stale + 4);
		assert_int_equal(engine_stats(t->e)->bad, bad + 1);
		assert_int_equal(engine_epoch(t->e), EPOCH2);
		assert_int_equal(engine_stats(t->e)->failovers, 1);
	}
	/* The replica answers: the round ends with every sum. */
	rx_result(t, 1, 1, 0, 3, 0, &sum[4]);
	check_data(t, tx_one(t), 1, 3, 1, 0, INA_BLOCK_END, 0, &in[12]);
	rx_result(t, 0, 2, INA_F_VER, INA_BLOCK_END, 0, &sum[8]);
	rx_result(t, 1, 3, INA_F_VER, INA_BLOCK_END, 0, &sum[12]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_floats(out, sum, 16);
	/* No more FAILOVER, no silence watch: the replica is the switch now. */
	t->now += 10 * FAILOVER;
	assert_int_equal(tx(t), 0);
	begin(t, in, out, 16, 4, ENGINE_SUM);
	n = tx(t);
	assert_int_equal(n, 2);
	assert_true(to_replica(t, &g[0]) && to_replica(t, &g[1]));
	check_data(t, for_lane(n, 0), 0, 0, 0, 0, 2, 0, &in[0]);
	t->now += 3 * FAILOVER;
	while (engine_error(t->e) == 0 && t->now < T0 + 100 * TIMEOUT) {
		to_deadline(t);
		n = tx(t);
		for (uint16_t i = 0; i < n; i++)
			assert_int_equal(g[i].h.type, INA_T_DATA);
	}
	assert_int_equal(engine_error(t->e), ENGINE_ENOSWITCH);
	assert_non_null(strstr(engine_error_msg(t->e), "replica switch did not answer"));
	/* The goodbye: LEAVE to the replica alone. */
	engine_leave(t->e, t->now);
	{
		const struct wc_got *p = tx_one(t);

		assert_true(to_replica(t, p));
		check_ctl(t, p, INA_T_LEAVE, 1);
	}
	done(t);
}

/* A probe: lane 0's packet for block 0, resent, to the replica. */
static int
is_probe(const struct t *t, const struct wc_got *p)
{
	if (!to_replica(t, p))
		return 0;
	check_data(t, p, 0, 0, 0, 1, INA_BLOCK_END, 0, &in[0]);
	return 1;
}

/*
 * WAITs from the primary: a peer is slow, the primary alive. No FAILOVER
 * while they come (only a probe to the replica per failover time without
 * progress); FAILOVER when they stop; and FAILOVER stops again when the
 * primary speaks once more.
 */
static void
test_engine_wait_keeps_primary(void **state)
{
	struct t *t = *state;
	uint64_t t0, last_wait;
	int fos = 0, probes = 0;
	uint16_t n;

	t->cfg.world = 3;
	t->cfg.lanes = 1;
	join_replica(t);
	fill(in, 0, 4, 1.0f, 1.0f);
	t0 = t->now;
	begin(t, in, out, 4, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 1);
	/* Every resend answered with a WAIT naming rank 2, for 3 failover
	 * times (all of this within the operation's timeout). */
	last_wait = t->now;
	while (t->now < t0 + 3 * FAILOVER) {
		to_deadline(t);
		n = tx(t);
		for (uint16_t i = 0; i < n; i++) {
			assert_int_equal(g[i].h.type, INA_T_DATA);
			if (is_probe(t, &g[i])) {
				probes++;
				assert_true(t->now == t0 + (uint64_t)probes * FAILOVER);
				continue;
			}
			rx_wait(t, 0, 0, 0, 0, 1u << 2);
			last_wait = t->now;
		}
	}
	assert_true(probes >= 2);
	assert_int_equal(engine_stats(t->e)->probes, probes);
	assert_int_equal(engine_stats(t->e)->failover_sent, 0);
	/* The WAITs stop: FAILOVER failover_ns after the last one. */
	while (fos == 0) {
		to_deadline(t);
		n = tx(t);
		for (uint16_t i = 0; i < n; i++)
			if (g[i].h.type == INA_T_FAILOVER) {
				check_failover(t, &g[i]);
				assert_true(t->now == last_wait + FAILOVER);
				fos++;
			}
	}
	/* The primary answers again: no further FAILOVER while it does. */
	rx_wait(t, 0, 0, 0, 0, 1u << 2);
	last_wait = t->now;
	assert_true(engine_next_deadline(t->e) > t->now);
	while (t->now < last_wait + FAILOVER - RTO_MAX) {
		to_deadline(t);
		n = tx(t);
		for (uint16_t i = 0; i < n; i++) {
			assert_int_equal(g[i].h.type, INA_T_DATA);
			is_probe(t, &g[i]);
		}
	}
	assert_int_equal(engine_stats(t->e)->failover_sent, 1);
	assert_int_equal(engine_stats(t->e)->failovers, 0);
	assert_int_equal(engine_error(t->e), 0);
	done(t);
}

/*
 * Split views: the replica took the job over (another worker found the
 * primary silent for a moment) and its announcement to this worker was lost,
 * while the primary, alive, answers this worker with WAITs it can never
 * follow with a result. After a failover time without progress, the probe to
 * the replica brings the announcement, and the worker follows it.
 */
static void
test_engine_probe_finds_takeover(void **state)
{
	struct t *t = *state;
	uint64_t t0;
	int probed = 0;
	uint16_t n;

	t->cfg.lanes = 1;
	join_replica(t);
	fill(in, 0, 4, 1.0f, 1.0f);
	t0 = t->now;
	begin(t, in, out, 4, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 1);
	while (!probed) {
		to_deadline(t);
		assert_true(t->now <= t0 + FAILOVER);
		n = tx(t);
		for (uint16_t i = 0; i < n; i++) {
			if (is_probe(t, &g[i])) {
				probed = 1;
				continue;
			}
			rx_wait(t, 0, 0, 0, 0, 1u << 1);
		}
	}
	assert_true(t->now == t0 + FAILOVER);
	assert_int_equal(engine_stats(t->e)->failover_sent, 0);
	/* The replica, which took over, answers the old-epoch packet with the
	 * announcement. */
	rx_announce(t, &t->cfg.replica, EPOCH2);
	t->epoch = EPOCH2;
	assert_true(engine_failed_over(t->e));
	check_data(t, tx_one(t), 0, 0, 0, 1, INA_BLOCK_END, 0, &in[0]);
	assert_true(to_replica(t, &g[0]));
	rx_result(t, 0, 0, 0, INA_BLOCK_END, 0, &in[0]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_floats(out, in, 4);
	done(t);
}

/* An announcement before this worker noticed anything: the same takeover,
 * with no FAILOVER of its own. */
static void
test_engine_failover_announced_first(void **state)
{
	struct t *t = *state;
	uint16_t n;

	join_replica(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	t->now += 1 * MS;
	rx_announce(t, &t->cfg.replica, EPOCH2);
	t->epoch = EPOCH2;
	assert_int_equal(engine_stats(t->e)->failovers, 1);
	n = tx(t);
	assert_int_equal(n, 2);
	check_data(t, for_lane(n, 0), 0, 0, 0, 1, INA_BLOCK_END, 0, &in[0]);
	check_data(t, for_lane(n, 1), 1, 1, 0, 1, INA_BLOCK_END, 0, &in[4]);
	assert_true(to_replica(t, &g[0]) && to_replica(t, &g[1]));
	rx_result(t, 0, 0, 0, INA_BLOCK_END, 0, &in[0]);
	rx_result(t, 1, 1, 0, INA_BLOCK_END, 0, &in[4]);
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	assert_floats(out, in, 8);
	assert_int_equal(engine_stats(t->e)->failover_sent, 0);
	/* FIN to the replica alone; its FIN_ACK closes. */
	engine_finish(t->e, t->now);
	{
		const struct wc_got *p = tx_one(t);

		assert_true(to_replica(t, p));
		check_ctl(t, p, INA_T_FIN, 1);
	}
	{
		struct ina_hdr h = sw_hdr(t, INA_T_FIN_ACK);

		rx_from(t, &t->cfg.replica, &h, NULL, 0);
	}
	assert_int_equal(engine_phase(t->e), ENGINE_CLOSED);
	done(t);
}

/* A replica that never takes over: the operation fails at its timeout, and
 * the sentence says the primary is silent and the replica did not answer. */
static void
test_engine_failover_unanswered(void **state)
{
	struct t *t = *state;
	uint64_t t0;

	join_replica(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	t0 = t->now;
	begin(t, in, out, 8, 4, ENGINE_SUM);
	while (engine_error(t->e) == 0) {
		to_deadline(t);
		assert_true(t->now <= t0 + TIMEOUT);
		tx(t);
	}
	assert_true(t->now == t0 + TIMEOUT);
	assert_int_equal(engine_error(t->e), ENGINE_ENOSWITCH);
	assert_non_null(strstr(engine_error_msg(t->e), "the replica did not take over"));
	assert_true(engine_stats(t->e)->failover_sent > 3);
	assert_int_equal(engine_stats(t->e)->failovers, 0);
	done(t);
}

/* While the replica stands by, FIN and LEAVE go to both switches; only the
 * primary's FIN_ACK ends the goodbye. */
static void
test_engine_replica_goodbye(void **state)
{
	struct t *t = *state;
	struct ina_hdr h;
	uint16_t n;

	join_replica(t);
	one_round(t);
	engine_finish(t->e, t->now);
	n = tx(t);
	assert_int_equal(n, 2);
	assert_false(to_replica(t, &g[0]));
	assert_true(to_replica(t, &g[1]));
	check_ctl(t, &g[0], INA_T_FIN, 1);
	assert_int_equal(g[1].len, g[0].len);
	assert_memory_equal(g[1].bytes, g[0].bytes, g[0].len);
	h = sw_hdr(t, INA_T_FIN_ACK);
	rx_from(t, &t->cfg.replica, &h, NULL, 0);
	assert_int_equal(engine_phase(t->e), ENGINE_FINISHING);
	to_deadline(t);
	assert_int_equal(tx(t), 2);
	rx_from(t, &t->cfg.sw, &h, NULL, 0);
	assert_int_equal(engine_phase(t->e), ENGINE_CLOSED);
	engine_destroy(t->e);
	t->e = NULL;

	/* LEAVE in the middle of a round: to both. */
	join_replica(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	begin(t, in, out, 8, 4, ENGINE_SUM);
	assert_int_equal(tx(t), 2);
	engine_leave(t->e, t->now);
	n = tx(t);
	assert_int_equal(n, 2);
	check_ctl(t, &g[0], INA_T_LEAVE, 0);
	check_ctl(t, &g[1], INA_T_LEAVE, 0);
	assert_true(to_replica(t, &g[0]) != to_replica(t, &g[1]));
	done(t);
}

/* An ERROR from the replica standing by: the job goes on at the primary with
 * no replica left (no FAILOVER, a silent primary is a lost switch again). */
static void
test_engine_replica_error_drops_standby(void **state)
{
	struct t *t = *state;
	const char *msg = "job 7: the switch is shutting down";
	struct ina_hdr h;
	uint64_t t0;

	join_replica(t);
	h = sw_hdr(t, INA_T_ERROR);
	h.status = INA_WERR_SHUTDOWN;
	rx_from(t, &t->cfg.replica, &h, msg, strlen(msg));
	assert_int_equal(engine_error(t->e), 0);
	assert_int_equal(engine_stats(t->e)->standby_lost, 1);
	one_round(t);
	fill(in, 0, 8, 1.0f, 1.0f);
	t0 = t->now;
	begin(t, in, out, 8, 4, ENGINE_SUM);
	while (engine_error(t->e) == 0) {
		uint16_t n;

		to_deadline(t);
		n = tx(t);
		for (uint16_t i = 0; i < n; i++)
			assert_false(to_replica(t, &g[i]));
	}
	assert_true(t->now == t0 + TIMEOUT);
	assert_int_equal(engine_error(t->e), ENGINE_ENOSWITCH);
	assert_int_equal(engine_stats(t->e)->failover_sent, 0);
	/* Nor does an announcement count any more. */
	rx_announce(t, &t->cfg.replica, EPOCH2);
	assert_false(engine_failed_over(t->e));
	done(t);
}

/* Without a replica a FAILOVER is a bad packet, and a config naming the
 * switch as its own replica, or no failover time, is refused. */
static void
test_engine_no_replica_failover_bad(void **state)
{
	struct t *t = *state;
	struct engine_config c;

	join_ready(t);
	rx_announce(t, &t->cfg.sw, EPOCH2);
	assert_int_equal(engine_stats(t->e)->bad, 1);
	assert_int_equal(engine_epoch(t->e), EPOCH);
	assert_false(engine_failed_over(t->e));
	c = t->cfg;
	c.replica = c.sw;
	assert_null(engine_create(&c));
	c = t->cfg;
	with_replica(t);
	c.replica = t->cfg.replica;
	c.failover_ns = 0;
	assert_null(engine_create(&c));
	done(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_engine_join_backoff_and_timeout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_engine_join_ack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_join_grant, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_join_redirect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_reshape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_join_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_join_cookie, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_first_packets_f32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_inactive_lanes_send_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_engine_first_packets_i32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_max_block_by_encoding, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_round_bf16, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_round_f32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_round_i32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_average_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_stale_result_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_bad_packets_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_retransmit_backoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_wait_delays_resend, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_keepalive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_keepalive_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_keepalive_replica, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_live_wait_is_progress, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_live_wait_then_silence, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_engine_timeout_no_switch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_error_left, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_error_peer_dead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_stall_described, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_result_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_saturated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_nonfinite_i32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_fin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_fin_unanswered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_leave_after_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_leave_while_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_sub_blocks_f32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_sub_blocks_in_place_avg, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_engine_sub_blocks_i32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_sub_blocks_deferred, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_sub_blocks_bf16, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_sub_blocks_listed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_sub_blocks_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_sub_blocks_ssp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_next_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_pool_empty_defers_send, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_engine_replica_standby_join, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_replica_join_after_takeover, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_engine_replica_join_unanswered, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_engine_replica_join_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_failover_on_silence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_wait_keeps_primary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_probe_finds_takeover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_failover_announced_first, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_engine_failover_unanswered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_replica_goodbye, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_replica_error_drops_standby, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_engine_no_replica_failover_bad, setup,
						teardown),
		/* Last: under ASan, the out-of-bounds read it exposes aborts. */
		cmocka_unit_test_setup_teardown(test_engine_wait_lane_out_of_range, setup,
						teardown),
	};

	ina_log_set_level(INA_LOG_ERR);
	return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
