/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the switch's aggregation pipeline (switch_sim/pipeline.c),
 * driven packet by packet with hand-built packets and a hand-advanced clock.
 * Every packet that comes out is validated and decoded: type, fields, payload
 * and destination. Covers admission and its refusals, the lane protocol (next
 * pointers, empty answers, header-only results, i32 openers and exponents),
 * duplicates and WAIT, shadow replies, exact matching and every drop counter,
 * slot reuse, two jobs at once, FIN, linger, idle timeout and LEAVE, a primary
 * and its replica side by side (REPL, standby, FAILOVER and takeover), and
 * checks after every test that no packet buffer leaked.
 */
#include <endian.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "ina/encode.h"
#include "ina/lane.h"
#include "ina/log.h"
#include "ina/pkt.h"
#include "ina/wire.h"
#include "pipeline.h"
#include "pipeline_dump.h"
#include "wire_check.h"

#define NB_PKTS 64    /* packets in the test pool */
#define BUF_SIZE 2048 /* bytes per packet buffer */
#define MAX_BURST 8   /* largest burst a test sends */
#define SLOT_ELEMS 16 /* the pipeline's slot width, and the largest B */
#define MAXE 256      /* largest tensor the lane driver handles */
#define MAXW 8	      /* largest world the lane driver handles */
#define NB_PEERS 32

#define MS 1000000ull
#define SEC 1000000000ull
#define WAIT_NS 1000ull
#define LINGER_NS (5 * MS)
#define IDLE_NS (10 * SEC)

/* Transport addresses: distinct bytes per index, sockaddr_in-sized. */
static struct ina_peer peers[NB_PEERS];

struct t {
	struct ina_pkt_pool *pool;    /* NB_PKTS buffers, for inputs and outputs */
	struct ina_pkt_pool *in_pool; /* where test packets come from */
	struct pipeline_config cfg;
	struct pipeline *p;	      /* the switch packets go to */
	struct pipeline *prim, *repl; /* a primary and its replica, or NULL */
	uint64_t now;
	uint16_t nb_out;
	struct ina_pkt *out[MAX_BURST];
};

/* A job as its workers see it. */
struct tjob {
	uint32_t id;
	uint64_t token;
	uint32_t epoch; /* from the JOIN_ACK; 0 before */
	uint16_t world;
	uint16_t lanes;
	uint16_t max_block;
	uint8_t enc;
	uint8_t peer_base; /* rank r sends from peers[peer_base + r] */
};

/* The block a data packet names, and its version bit. */
struct blk {
	uint32_t tensor_id;
	uint32_t round;
	uint32_t tensor_len;
	uint16_t block_size;
	uint16_t lane;
	uint32_t block;
	uint8_t ver;
};

static uint64_t
rnd(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static void
peers_init(void)
{
	for (int i = 0; i < NB_PEERS; i++) {
		peers[i].len = 16;
		for (int k = 0; k < 16; k++)
			peers[i].bytes[k] = (uint8_t)(i * 31 + k * 7 + 1);
	}
}

static const struct ina_peer *
peer_of(const struct tjob *j, uint16_t rank)
{
	assert_true(j->peer_base + rank < NB_PEERS);
	return &peers[j->peer_base + rank];
}

static uint64_t
world_mask(uint16_t world)
{
	return world == 64 ? ~0ull : (1ull << world) - 1;
}

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
	t->in_pool = t->pool;
	pipeline_config_init(&t->cfg);
	t->cfg.pool = t->pool;
	t->cfg.nb_slots = 16;
	t->cfg.slot_elems = SLOT_ELEMS;
	t->cfg.max_jobs = 4;
	t->cfg.linger_ns = LINGER_NS;
	t->cfg.wait_interval_ns = WAIT_NS;
	t->cfg.job_idle_ns = IDLE_NS;
	t->now = 1 * SEC;
	*state = t;
	return 0;
}

static int
teardown(void **state)
{
	struct t *t = *state;

	for (uint16_t i = 0; i < t->nb_out; i++)
		ina_pkt_free(t->out[i]);
	if (t->prim || t->repl) {
		pipeline_destroy(t->prim);
		pipeline_destroy(t->repl);
	} else {
		pipeline_destroy(t->p);
	}
	ina_pkt_pool_destroy(t->pool);
	free(t);
	return 0;
}

static void
start(struct t *t)
{
	t->p = pipeline_create(&t->cfg);
	assert_non_null(t->p);
}

/* Every output was taken and every buffer is back in the pool. */
static void
done(struct t *t)
{
	assert_int_equal(t->nb_out, 0);
	assert_int_equal(ina_pkt_pool_avail(t->pool), NB_PKTS);
}

static uint16_t
rx_n(struct t *t, struct ina_pkt **pkts, uint16_t n)
{
	assert_int_equal(t->nb_out, 0); /* the previous outputs were taken */
	assert_true(n <= MAX_BURST);
	t->nb_out = pipeline_rx_burst(t->p, pkts, n, t->now, t->out);
	return t->nb_out;
}

static uint16_t
rx(struct t *t, struct ina_pkt *pkt)
{
	return rx_n(t, &pkt, 1);
}

static struct ina_pkt *
mk_pkt(struct t *t, const struct ina_peer *src, const struct ina_hdr *h, const void *payload,
       size_t size)
{
	return wc_mk_pkt(t->in_pool, src, h, payload, size);
}

/* Copies, validates (with no job) and frees output 'i'. */
static void
take(struct t *t, uint16_t i, struct wc_got *g)
{
	struct ina_pkt *pkt = t->out[i];

	wc_decode(g, pkt, NULL);
	ina_pkt_free(pkt);
	t->out[i] = NULL;
}

static void
take_one(struct t *t, struct wc_got *g)
{
	assert_int_equal(t->nb_out, 1);
	take(t, 0, g);
	t->nb_out = 0;
}

static void
assert_msg_has(const struct wc_got *g, const char *s)
{
	char msg[INA_ERROR_MSG_MAX + 1];
	size_t n = g->payload_size < INA_ERROR_MSG_MAX ? g->payload_size : INA_ERROR_MSG_MAX;

	memcpy(msg, g->payload, n);
	msg[n] = '\0';
	if (!strstr(msg, s))
		fail_msg("error message \"%s\" does not contain \"%s\"", msg, s);
}

static struct ina_hdr
base_hdr(const struct tjob *j, uint8_t type, uint16_t rank)
{
	return wc_hdr(type, j->enc, j->id, type == INA_T_JOIN ? 0 : j->epoch, rank, j->token);
}

static struct ina_hdr
data_hdr(const struct tjob *j, uint16_t rank, const struct blk *b, uint32_t next, int16_t exp,
	 int with_data)
{
	struct ina_hdr h = base_hdr(j, INA_T_DATA, rank);

	h.flags = b->ver;
	h.lane = b->lane;
	h.tensor_id = b->tensor_id;
	h.round = b->round;
	h.tensor_len = b->tensor_len;
	h.block_size = b->block_size;
	h.block = b->block;
	h.next = next;
	h.exp = exp;
	h.n_elems = with_data ? ina_wire_block_elems(b->tensor_len, b->block_size, b->block) : 0;
	return h;
}

/* A data packet from 'rank': 'vals' (floats or int32s) or, if NULL, empty. */
static struct ina_pkt *
mk_data_x(struct t *t, const struct tjob *j, uint16_t rank, const struct blk *b, uint32_t next,
	  int16_t exp, const void *vals)
{
	struct ina_hdr h = data_hdr(j, rank, b, next, exp, vals != NULL);
	uint8_t payload[SLOT_ELEMS * 4];

	assert_true(h.n_elems <= SLOT_ELEMS);
	if (vals)
		wc_put_words(payload, vals, h.n_elems);
	return mk_pkt(t, peer_of(j, rank), &h, payload, (size_t)h.n_elems * 4);
}

static struct ina_pkt *
mk_data(struct t *t, const struct tjob *j, uint16_t rank, const struct blk *b, uint32_t next,
	const void *vals)
{
	return mk_data_x(t, j, rank, b, next, 0, vals);
}

static uint16_t
push_x(struct t *t, const struct tjob *j, uint16_t rank, const struct blk *b, uint32_t next,
       int16_t exp, const void *vals)
{
	return rx(t, mk_data_x(t, j, rank, b, next, exp, vals));
}

static uint16_t
push(struct t *t, const struct tjob *j, uint16_t rank, const struct blk *b, uint32_t next,
     const void *vals)
{
	return push_x(t, j, rank, b, next, 0, vals);
}

/* push() with a result-filter bound in the header (raw, encode.h). */
static uint16_t
push_bound(struct t *t, const struct tjob *j, uint16_t rank, const struct blk *b, uint32_t next,
	   const void *vals, uint32_t bound)
{
	struct ina_hdr h = data_hdr(j, rank, b, next, 0, vals != NULL);
	uint8_t payload[SLOT_ELEMS * 4];

	h.bound = bound;
	if (vals)
		wc_put_words(payload, vals, h.n_elems);
	return rx(t, mk_pkt(t, peer_of(j, rank), &h, payload, (size_t)h.n_elems * 4));
}

static struct ina_pkt *
mk_join_as(struct t *t, const struct tjob *j, uint16_t rank, uint16_t world, uint16_t lanes,
	   uint16_t max_block, uint8_t enc, uint64_t token)
{
	struct ina_hdr h = base_hdr(j, INA_T_JOIN, rank);
	uint8_t payload[sizeof(struct ina_wire_join)];

	h.encoding = enc;
	h.token = token;
	ina_wire_encode_join(world, lanes, max_block, payload);
	return mk_pkt(t, peer_of(j, rank), &h, payload, sizeof(payload));
}

static uint16_t
send_join(struct t *t, const struct tjob *j, uint16_t rank)
{
	return rx(t, mk_join_as(t, j, rank, j->world, j->lanes, j->max_block, j->enc, j->token));
}

static uint16_t
send_ctl(struct t *t, const struct tjob *j, uint8_t type, uint16_t rank)
{
	struct ina_hdr h = base_hdr(j, type, rank);

	/* Types only the switch sends are sent from rank 0's address. */
	return rx(t, mk_pkt(t, peer_of(j, rank == INA_RANK_SWITCH ? 0 : rank), &h, NULL, 0));
}

/* Fields every packet the switch sends to job 'j' carries. */
static void
check_from_switch(const struct wc_got *g, const struct tjob *j, uint8_t type)
{
	wc_assert_hdr(g, type, j->enc, j->id, j->epoch, INA_RANK_SWITCH, j->token);
}

static void
check_unicast(const struct wc_got *g, const struct ina_peer *to)
{
	assert_false(g->fanout);
	assert_int_equal(g->dst_mask, 0);
	assert_true(ina_peer_equal(&g->peer, to));
}

/* The switch's next packet: a WAIT of job 'j' to 'rank' alone, naming the
 * ranks in 'missing'. */
static void
take_wait(struct t *t, const struct tjob *j, uint16_t rank, uint64_t missing)
{
	struct wc_got g;
	uint64_t missing_be;

	take_one(t, &g);
	check_from_switch(&g, j, INA_T_WAIT);
	check_unicast(&g, peer_of(j, rank));
	assert_int_equal(g.payload_size, INA_WAIT_PAYLOAD);
	memcpy(&missing_be, g.payload, sizeof(missing_be));
	assert_int_equal(be64toh(missing_be), missing);
}

/* A fan-out to every rank of 'j', at the address it joined from. */
static void
check_fanout(const struct wc_got *g, const struct tjob *j)
{
	assert_true(g->fanout);
	assert_int_equal(g->dst_mask, world_mask(j->world));
	for (uint16_t r = 0; r < j->world; r++)
		assert_true(ina_peer_equal(&g->dsts[r], peer_of(j, r)));
}

/* A RESULT (or a REPL to 'rank') for block 'b' with next pointer 'next' and
 * the sum 'vals' (floats or int32s), or header-only when 'vals' is NULL. */
static void
check_block(const struct wc_got *g, const struct tjob *j, uint8_t type, uint16_t rank,
	    const struct blk *b, uint32_t next, const void *vals)
{
	wc_assert_hdr(g, type, j->enc, j->id, j->epoch, rank, j->token);
	assert_int_equal(g->h.lane, b->lane);
	assert_int_equal(g->h.tensor_id, b->tensor_id);
	assert_int_equal(g->h.round, b->round);
	assert_int_equal(g->h.tensor_len, b->tensor_len);
	assert_int_equal(g->h.block_size, b->block_size);
	assert_int_equal(g->h.block, b->block);
	assert_int_equal(g->h.flags & INA_F_VER, b->ver);
	assert_int_equal(g->h.next, next);
	wc_assert_block(g, b->tensor_len, b->block_size, b->block, vals);
}

static void
check_result(const struct wc_got *g, const struct tjob *j, const struct blk *b, uint32_t next,
	     const void *vals)
{
	check_block(g, j, INA_T_RESULT, INA_RANK_SWITCH, b, next, vals);
}

/* An ERROR to one sender, for job 'id' with token 'token'. */
static void
check_error(const struct wc_got *g, uint32_t id, uint64_t token, uint16_t status)
{
	assert_int_equal(g->h.type, INA_T_ERROR);
	assert_int_equal(g->h.rank, INA_RANK_SWITCH);
	assert_int_equal(g->h.job_id, id);
	assert_true(g->h.token == token);
	assert_int_equal(g->h.status, status);
	assert_true(g->payload_size > 0 && g->payload_size <= INA_ERROR_MSG_MAX);
}

/* JOIN from 'rank' and its JOIN_ACK; sets or checks j->epoch. */
static void
join(struct t *t, struct tjob *j, uint16_t rank)
{
	uint16_t world, lanes, max_block;
	struct wc_got g;

	assert_int_equal(send_join(t, j, rank), 1);
	take_one(t, &g);
	assert_int_equal(g.h.type, INA_T_JOIN_ACK);
	assert_int_not_equal(g.h.epoch, 0);
	if (j->epoch)
		assert_int_equal(g.h.epoch, j->epoch);
	j->epoch = g.h.epoch;
	check_from_switch(&g, j, INA_T_JOIN_ACK);
	check_unicast(&g, peer_of(j, rank));
	assert_int_equal(g.payload_size, sizeof(struct ina_wire_join));
	ina_wire_decode_join(g.payload, &world, &lanes, &max_block);
	assert_int_equal(world, j->world);
	assert_int_equal(lanes, j->lanes);
	assert_int_equal(max_block, j->max_block);
}

static void
join_all(struct t *t, struct tjob *j)
{
	for (uint16_t r = 0; r < j->world; r++)
		join(t, j, r);
}

static void
fin(struct t *t, const struct tjob *j, uint16_t rank)
{
	struct wc_got g;

	assert_int_equal(send_ctl(t, j, INA_T_FIN, rank), 1);
	take_one(t, &g);
	check_from_switch(&g, j, INA_T_FIN_ACK);
	check_unicast(&g, peer_of(j, rank));
	assert_int_equal(g.payload_size, 0);
}

static void
fin_all(struct t *t, const struct tjob *j)
{
	for (uint16_t r = 0; r < j->world; r++)
		fin(t, j, r);
}

/* acc = v (first) or acc += v, in float, as the switch sums. */
static void
fadd(float *acc, const float *v, size_t n, int first)
{
	for (size_t i = 0; i < n; i++)
		acc[i] = first ? v[i] : acc[i] + v[i];
}

/* ---- The lane driver: every worker's side of the lane protocol. ---- */

struct round_in {
	const struct tjob *j;
	uint32_t tensor_id;
	uint32_t round;
	uint32_t tensor_len;
	uint16_t block_size;
	float data[MAXW][MAXE]; /* each rank's tensor */
	float got[MAXE];	/* what the results delivered */
	uint64_t rng;
};

struct lane_run {
	uint16_t lane;
	uint8_t ver; /* version bit of the lane's next block: kept across rounds */
	int done;
	uint32_t block;	      /* the block being aggregated */
	uint16_t sent;	      /* packets of 'block' sent so far */
	uint16_t order[MAXW]; /* order the ranks send 'block' in */
	int want_data;
	float want[SLOT_ELEMS]; /* the sum the switch must return, in arrival order */
};

static int
block_has(const struct round_in *ri, uint16_t r, uint32_t b)
{
	uint32_t s = b * ri->block_size;
	uint16_t n = ina_wire_block_elems(ri->tensor_len, ri->block_size, b);

	for (uint16_t i = 0; i < n; i++)
		if (ri->data[r][s + i] != 0.0f)
			return 1;
	return 0;
}

/* Rank r's next non-zero block of the lane after block 'b'. */
static uint32_t
next_has(const struct round_in *ri, uint16_t r, uint32_t b)
{
	uint32_t nb = ina_wire_nb_blocks(ri->tensor_len, ri->block_size);

	for (uint32_t k = b + ri->j->lanes; k < nb; k += ri->j->lanes)
		if (block_has(ri, r, k))
			return k;
	return INA_BLOCK_END;
}

static void
lane_block_begin(struct lane_run *lr, struct round_in *ri)
{
	uint16_t w = ri->j->world;

	lr->sent = 0;
	lr->want_data = 0;
	for (uint16_t i = 0; i < w; i++)
		lr->order[i] = i;
	for (uint16_t i = w; i > 1; i--) {
		uint16_t k = (uint16_t)(rnd(&ri->rng) % i), tmp = lr->order[i - 1];

		lr->order[i - 1] = lr->order[k];
		lr->order[k] = tmp;
	}
}

static void
lane_begin(struct lane_run *lr, struct round_in *ri)
{
	lr->done = !ina_lane_active(lr->lane, ina_wire_nb_blocks(ri->tensor_len, ri->block_size));
	lr->block = lr->lane;
	lane_block_begin(lr, ri);
}

/* Sends the next packet of the lane's open block; after the last, checks the
 * result and moves the lane to the announced block. */
static void
lane_step(struct t *t, struct lane_run *lr, struct round_in *ri)
{
	const struct tjob *j = ri->j;
	uint16_t r = lr->order[lr->sent++];
	uint16_t n = ina_wire_block_elems(ri->tensor_len, ri->block_size, lr->block);
	struct blk b = {
		.tensor_id = ri->tensor_id,
		.round = ri->round,
		.tensor_len = ri->tensor_len,
		.block_size = ri->block_size,
		.lane = lr->lane,
		.block = lr->block,
		.ver = lr->ver,
	};
	const float *vals = block_has(ri, r, lr->block) ? &ri->data[r][lr->block * ri->block_size]
							: NULL;
	uint32_t next = INA_BLOCK_END;
	struct wc_got g;

	if (vals) {
		fadd(lr->want, vals, n, !lr->want_data);
		lr->want_data = 1;
	}
	if (lr->sent < j->world) {
		assert_int_equal(push(t, j, r, &b, next_has(ri, r, lr->block), vals), 0);
		return;
	}
	assert_int_equal(push(t, j, r, &b, next_has(ri, r, lr->block), vals), 1);
	take_one(t, &g);
	for (uint16_t k = 0; k < j->world; k++) {
		uint32_t nk = next_has(ri, k, lr->block);

		if (nk < next)
			next = nk;
	}
	check_result(&g, j, &b, next, lr->want_data ? lr->want : NULL);
	check_fanout(&g, j);
	for (uint16_t i = 0; i < g.h.n_elems; i++) {
		uint32_t w = wc_word_at(g.payload, i);

		memcpy(&ri->got[lr->block * ri->block_size + i], &w, 4);
	}
	lr->ver ^= 1;
	if (next == INA_BLOCK_END) {
		lr->done = 1;
	} else {
		lr->block = next;
		lane_block_begin(lr, ri);
	}
}

/* Block-sparse data of exactly summable values k / 1024. */
static void
make_data(struct round_in *ri, double density)
{
	uint32_t nb = ina_wire_nb_blocks(ri->tensor_len, ri->block_size);

	memset(ri->data, 0, sizeof(ri->data));
	for (uint16_t r = 0; r < ri->j->world; r++) {
		for (uint32_t b = 0; b < nb; b++) {
			uint16_t n = ina_wire_block_elems(ri->tensor_len, ri->block_size, b);

			if ((double)(rnd(&ri->rng) >> 11) * 0x1.0p-53 >= density)
				continue;
			for (uint16_t i = 0; i < n; i++) {
				int k = (int)(rnd(&ri->rng) % 2047) - 1023;

				ri->data[r][b * ri->block_size + i] = (float)(k ? k : 1) / 1024.0f;
			}
		}
	}
}

/* Runs one round over every lane, interleaving the lanes' packets at random,
 * and compares what the results delivered with a naive reference sum. */
static void
run_round(struct t *t, struct round_in *ri, struct lane_run *lanes)
{
	uint16_t nb_lanes = ri->j->lanes, left = 0;

	memset(ri->got, 0, sizeof(ri->got));
	for (uint16_t l = 0; l < nb_lanes; l++) {
		lane_begin(&lanes[l], ri);
		left += !lanes[l].done;
	}
	while (left) {
		uint16_t l = (uint16_t)(rnd(&ri->rng) % nb_lanes);

		if (lanes[l].done)
			continue;
		lane_step(t, &lanes[l], ri);
		left -= lanes[l].done;
	}
	for (uint32_t i = 0; i < ri->tensor_len; i++) {
		float ref = 0.0f;

		for (uint16_t r = 0; r < ri->j->world; r++)
			ref += ri->data[r][i];
		if (memcmp(&ref, &ri->got[i], sizeof(ref)) != 0)
			fail_msg("round %u element %u: got %.9g want %.9g", ri->round, i,
				 (double)ri->got[i], (double)ref);
	}
}

/* ---- Admission ---- */

static void
test_pipeline_join_ack(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1001,
			  .token = 0x1111222233334444ull,
			  .world = 3,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct tjob moved = j;
	struct blk b = { .tensor_id = 1, .round = 1, .tensor_len = 8, .block_size = 4 };
	float v[4] = { 1, 2, 3, 4 };
	float sum[4] = { 3, 6, 9, 12 };
	struct wc_got g;

	start(t);
	assert_int_equal(pipeline_free_slots(t->p), 16);
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	join(t, &j, 0);
	assert_int_equal(pipeline_free_slots(t->p), 14);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	join(t, &j, 1);
	join(t, &j, 2);
	/* A repeated JOIN (its ACK was lost) is acked again, same epoch. */
	join(t, &j, 1);
	join(t, &j, 1);
	assert_int_equal(pipeline_free_slots(t->p), 14);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	assert_int_equal(pipeline_stats(t->p)->jobs_admitted, 1);
	assert_int_equal(pipeline_stats(t->p)->joins, 5);
	assert_int_equal(pipeline_stats(t->p)->jobs_refused, 0);

	/* A rank's address is bound for the epoch (PROTOCOL 5.1). DATA for
	 * rank 1 from another address counts for nothing, even first and with
	 * the token: dropped and counted; the real rank 1's counts, and the
	 * sum is exact. */
	moved.peer_base = 10;
	moved.epoch = j.epoch;
	assert_int_equal(rx(t, mk_data(t, &moved, 1, &b, INA_BLOCK_END, sum)), 0);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_WRONG_ADDR], 1);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(rx(t, mk_data(t, &moved, 1, &b, INA_BLOCK_END, sum)), 0);
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, v), 1);
	take_one(t, &g);
	check_result(&g, &j, &b, INA_BLOCK_END, sum);
	assert_int_equal(g.dst_mask, 7);
	assert_true(ina_peer_equal(&g.dsts[1], peer_of(&j, 1)));
	/* The shadow answers only the bound address. */
	assert_int_equal(rx(t, mk_data(t, &moved, 1, &b, INA_BLOCK_END, v)), 0);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_WRONG_ADDR], 3);
	assert_int_equal(pipeline_stats(t->p)->shadow_replies, 0);
	/* FIN, LEAVE and KEEPALIVE from another address: ignored, the job
	 * runs on. */
	assert_int_equal(send_ctl(t, &moved, INA_T_FIN, 1), 0);
	assert_int_equal(send_ctl(t, &moved, INA_T_LEAVE, 1), 0);
	assert_int_equal(send_ctl(t, &moved, INA_T_KEEPALIVE, 1), 0);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_WRONG_ADDR], 6);
	assert_int_equal(pipeline_stats(t->p)->fins, 0);
	assert_int_equal(pipeline_stats(t->p)->leaves, 0);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);

	/* Rank 1 joins again from a new address, with the token: never a
	 * silent move. The run ends: every rank still in it, rank 1 at its
	 * old address too, hears LEFT; the new address hears nothing. */
	assert_int_equal(send_join(t, &moved, 1), 1);
	take_one(t, &g);
	check_error(&g, j.id, j.token, INA_WERR_LEFT);
	assert_int_equal(g.dst_mask, 7);
	assert_true(ina_peer_equal(&g.dsts[1], peer_of(&j, 1)));
	assert_msg_has(&g, "another address");
	assert_int_equal(pipeline_stats(t->p)->jobs_aborted, 1);
	/* Until the tick frees it, nothing of the job counts; a JOIN waits. */
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(send_join(t, &moved, 1), 0);
	pipeline_tick(t->p, 1);
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	/* The JOIN's retry admits a new run under a new epoch. */
	{
		uint32_t old_epoch = j.epoch;

		moved.epoch = 0;
		join(t, &moved, 1);
		assert_int_not_equal(moved.epoch, old_epoch);
		j.epoch = moved.epoch;
		join(t, &j, 0);
		join(t, &j, 2);
		/* The old address's packets: of the old epoch, dropped as such;
		 * of the new one, as from the wrong address. */
		j.epoch = old_epoch;
		assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, v), 0);
		assert_int_equal(pipeline_stats(t->p)->drop_wire[INA_WIRE_WRONG_EPOCH], 1);
		j.epoch = moved.epoch;
		assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, sum), 0);
		assert_int_equal(pipeline_stats(t->p)->drop[PDROP_WRONG_ADDR], 7);
	}
	b.round = 0;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(rx(t, mk_data(t, &moved, 1, &b, INA_BLOCK_END, v)), 0);
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, v), 1);
	take_one(t, &g);
	check_result(&g, &j, &b, INA_BLOCK_END, sum);
	assert_true(ina_peer_equal(&g.dsts[0], peer_of(&j, 0)));
	assert_true(ina_peer_equal(&g.dsts[1], peer_of(&moved, 1)));
	assert_true(ina_peer_equal(&g.dsts[2], peer_of(&j, 2)));
	done(t);
}

/* JOIN of 'rank' of 'j' echoing 'cookie', from 'src'. */
static uint16_t
send_join_cookie(struct t *t, const struct tjob *j, uint16_t rank, const struct ina_peer *src,
		 uint64_t cookie)
{
	struct ina_hdr h = base_hdr(j, INA_T_JOIN, rank);
	uint8_t payload[sizeof(struct ina_wire_join)];

	ina_wire_set_cookie(&h, cookie);
	ina_wire_encode_join(j->world, j->lanes, j->max_block, payload);
	return rx(t, mk_pkt(t, src, &h, payload, sizeof(payload)));
}

/* An ERROR COOKIE for 'j': header-only, no larger than the JOIN; its cookie. */
static uint64_t
take_cookie(struct t *t, const struct tjob *j, const struct ina_peer *to)
{
	struct wc_got g;

	take_one(t, &g);
	assert_int_equal(g.h.type, INA_T_ERROR);
	assert_int_equal(g.h.status, INA_WERR_COOKIE);
	assert_int_equal(g.h.job_id, j->id);
	assert_true(g.h.token == j->token);
	assert_int_equal(g.payload_size, 0);
	assert_true(g.len <= INA_HDR_SIZE + sizeof(struct ina_wire_join));
	check_unicast(&g, to);
	assert_true(ina_wire_cookie(&g.h) != 0);
	return ina_wire_cookie(&g.h);
}

/*
 * JOIN cookies (PROTOCOL 5.1): a JOIN whose source has not proved it
 * receives gets only a header-only ERROR COOKIE (56 bytes to the JOIN's
 * 64: a reflection ratio under 1) and creates nothing, refused or not; the
 * cookie is its address's and job's, for its time bucket and the next; the
 * bound address needs none again; after proof, the refusal text tells
 * nothing of what is free.
 */
static void
test_pipeline_join_cookie(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 2001,
			  .token = 0x7777,
			  .world = 2,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct tjob big = j;
	struct wc_got g;
	uint64_t c0, c1, cb;

	big.id = 2002;
	big.lanes = 64; /* more than the 16 slots */
	big.peer_base = 4;
	t->cfg.join_cookie = 1;
	memset(t->cfg.secret, 0x5a, sizeof(t->cfg.secret));
	start(t);
	/* A flood of unproven JOINs: cookies, nothing kept. */
	for (int i = 0; i < 100; i++) {
		assert_int_equal(send_join(t, &j, 0), 1);
		c0 = take_cookie(t, &j, peer_of(&j, 0));
		assert_int_equal(send_join(t, &big, 0), 1);
		cb = take_cookie(t, &big, peer_of(&big, 0));
	}
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	assert_int_equal(pipeline_free_slots(t->p), 16);
	assert_int_equal(pipeline_stats(t->p)->jobs_refused, 0);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_JOIN_UNPROVEN], 200);
	/* The same address and job, the same bucket: the same cookie; another
	 * address or job: another. */
	assert_int_equal(send_join(t, &j, 1), 1);
	c1 = take_cookie(t, &j, peer_of(&j, 1));
	assert_true(c1 != c0 && cb != c0);
	/* Someone else's cookie proves nothing: rank 1 with rank 0's. */
	assert_int_equal(send_join_cookie(t, &j, 1, peer_of(&j, 1), c0), 1);
	assert_true(take_cookie(t, &j, peer_of(&j, 1)) == c1);
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	/* Echoed: admitted. */
	assert_int_equal(send_join_cookie(t, &j, 0, peer_of(&j, 0), c0), 1);
	take_one(t, &g);
	assert_int_equal(g.h.type, INA_T_JOIN_ACK);
	j.epoch = g.h.epoch;
	/* A lost JOIN_ACK: the bound address needs no cookie again. */
	join(t, &j, 0);
	/* Still valid one bucket later; not two. */
	t->now += 1ull << 34;
	assert_int_equal(send_join_cookie(t, &j, 1, peer_of(&j, 1), c1), 1);
	take_one(t, &g);
	assert_int_equal(g.h.type, INA_T_JOIN_ACK);
	t->now += 2ull << 34;
	assert_int_equal(send_join_cookie(t, &big, 0, peer_of(&big, 0), cb), 1);
	cb = take_cookie(t, &big, peer_of(&big, 0));
	/* Proven, a refusal: what is free is not told. */
	assert_int_equal(send_join_cookie(t, &big, 0, peer_of(&big, 0), cb), 1);
	take_one(t, &g);
	check_error(&g, big.id, big.token, INA_WERR_NO_SLOTS);
	assert_msg_has(&g, "no such run is free");
	assert_int_equal(pipeline_stats(t->p)->jobs_refused, 1);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	/* Rank 1 from a new address (5.1, "Bound addresses"): whatever cookie
	 * it echoes, it first gets that address's cookie for this run
	 * (rank_moved), nothing moved; with that one, the run ends: LEFT to the
	 * bound addresses. */
	{
		struct tjob moved = j;
		uint64_t cm;

		moved.peer_base = 10;
		assert_int_equal(send_join_cookie(t, &moved, 1, peer_of(&moved, 1), c1), 1);
		cm = take_cookie(t, &j, peer_of(&moved, 1));
		assert_true(cm != c1);
		assert_int_equal(pipeline_stats(t->p)->drop[PDROP_RANK_MOVED], 1);
		assert_int_equal(pipeline_stats(t->p)->jobs_aborted, 0);
		/* Another address's cookie for the run proves nothing. */
		assert_int_equal(send_join_cookie(t, &moved, 1, peer_of(&moved, 0), cm), 1);
		assert_true(take_cookie(t, &j, peer_of(&moved, 0)) != cm);
		assert_int_equal(send_join_cookie(t, &moved, 1, peer_of(&moved, 1), cm), 1);
		take_one(t, &g);
		check_error(&g, j.id, j.token, INA_WERR_LEFT);
		assert_int_equal(g.dst_mask, 3);
		assert_true(ina_peer_equal(&g.dsts[1], peer_of(&j, 1)));
		assert_int_equal(pipeline_stats(t->p)->drop[PDROP_RANK_MOVED], 2);
		assert_int_equal(pipeline_stats(t->p)->jobs_aborted, 1);
		pipeline_tick(t->p, t->now);
		assert_int_equal(pipeline_nb_jobs(t->p), 0);
	}
	done(t);
}

/*
 * The per-source budget (PROTOCOL 5.1): ERRORs to a JOIN's source and shadow
 * replies beyond 'reply_burst' at once are dropped and counted
 * (rate_limited), per source address; the budget refills at 'reply_rate'.
 */
static void
test_pipeline_reply_limit(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 2101,
			  .token = 0x99,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct tjob bad = j;
	struct blk b = { .tensor_id = 1, .round = 1, .tensor_len = 4, .block_size = 4 };
	float v[4] = { 1, 2, 3, 4 }, sum[4] = { 2, 4, 6, 8 };
	struct wc_got g;
	unsigned got = 0;

	t->cfg.reply_rate = 1000; /* one a ms */
	t->cfg.reply_burst = 8;
	start(t);
	join_all(t, &j);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, v), 1);
	take_one(t, &g);
	check_result(&g, &j, &b, INA_BLOCK_END, sum);
	/* Rank 0 asks the shadow 20 times at once: 8 answers. */
	for (int i = 0; i < 20; i++) {
		got += push(t, &j, 0, &b, INA_BLOCK_END, v);
		if (t->nb_out) {
			take_one(t, &g);
			check_result(&g, &j, &b, INA_BLOCK_END, sum);
		}
	}
	assert_int_equal(got, 8);
	assert_int_equal(pipeline_stats(t->p)->shadow_replies, 8);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_RATE_LIMITED], 12);
	/* Rank 1's budget is its own. */
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, v), 1);
	take_one(t, &g);
	/* 5 ms later, 5 more for rank 0. */
	t->now += 5 * 1000000ull;
	got = 0;
	for (int i = 0; i < 10; i++) {
		got += push(t, &j, 0, &b, INA_BLOCK_END, v);
		if (t->nb_out)
			take_one(t, &g);
	}
	assert_int_equal(got, 5);
	/* ERRORs to a JOIN's source: a mismatch asked 20 times at once. */
	bad.lanes = 3;
	bad.peer_base = 8;
	got = 0;
	for (int i = 0; i < 20; i++) {
		got += send_join(t, &bad, 0);
		if (t->nb_out) {
			take_one(t, &g);
			check_error(&g, j.id, j.token, INA_WERR_MISMATCH);
		}
	}
	assert_int_equal(got, 8);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_RATE_LIMITED], 12 + 5 + 12);
	t->now += SEC;
	fin_all(t, &j);
	done(t);
}

static void
test_pipeline_pool_full(void **state)
{
	struct t *t = *state;
	struct tjob a = { .id = 101,
			  .token = 0xa1,
			  .world = 2,
			  .lanes = 3,
			  .max_block = 4,
			  .enc = INA_ENC_F32,
			  .peer_base = 0 };
	struct tjob b = a, c = a, d = a;
	struct wc_got g;

	b.id = 102, b.token = 0xb2, b.peer_base = 2;
	c.id = 103, c.token = 0xc3, c.peer_base = 4;
	d.id = 104, d.token = 0xd4, d.peer_base = 6, d.lanes = 2;
	t->cfg.nb_slots = 10;
	t->cfg.max_jobs = 8;
	start(t);
	join_all(t, &a);
	join_all(t, &b);
	join_all(t, &c);
	assert_int_equal(pipeline_free_slots(t->p), 1);
	assert_int_equal(pipeline_nb_jobs(t->p), 3);

	/* Two lanes do not fit in one free slot. */
	assert_int_equal(send_join(t, &d, 0), 1);
	take_one(t, &g);
	check_error(&g, d.id, d.token, INA_WERR_NO_SLOTS);
	check_unicast(&g, peer_of(&d, 0));
	assert_msg_has(&g, "job 104");
	assert_msg_has(&g, "needs 2 contiguous slots");
	/* What is free is not told to a JOIN that proved nothing. */
	assert_msg_has(&g, "no such run is free");
	{
		char txt[INA_ERROR_MSG_MAX + 1] = { 0 };

		memcpy(txt, g.payload, g.payload_size);
		assert_null(strstr(txt, " of "));
	}
	assert_int_equal(pipeline_stats(t->p)->jobs_refused, 1);
	assert_int_equal(send_join(t, &d, 1), 1);
	take_one(t, &g);
	check_error(&g, d.id, d.token, INA_WERR_NO_SLOTS);
	check_unicast(&g, peer_of(&d, 1));
	assert_int_equal(pipeline_stats(t->p)->jobs_refused, 2);
	assert_int_equal(pipeline_nb_jobs(t->p), 3);
	assert_int_equal(pipeline_free_slots(t->p), 1);

	/* Job b finishes: its three slots come back and d fits. */
	fin_all(t, &b);
	assert_int_equal(pipeline_nb_jobs(t->p), 2);
	assert_int_equal(pipeline_free_slots(t->p), 4);
	join_all(t, &d);
	assert_int_equal(pipeline_free_slots(t->p), 2);
	assert_int_equal(pipeline_nb_jobs(t->p), 3);
	assert_int_equal(pipeline_stats(t->p)->jobs_admitted, 4);

	fin_all(t, &a);
	fin_all(t, &c);
	fin_all(t, &d);
	assert_int_equal(pipeline_free_slots(t->p), 10);
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	assert_int_equal(pipeline_stats(t->p)->jobs_freed, 4);
	done(t);
}

/*
 * A port that limits packets (max_pkt): the slot may hold more elements than
 * an f32 packet carries (it is sized for bf16), so an f32 job whose RESULT
 * would not fit is refused, and a bf16 job of the same block size admitted.
 */
static void
test_pipeline_join_max_pkt(void **state)
{
	struct t *t = *state;
	struct tjob f = { .id = 211,
			  .token = 0x1111,
			  .world = 1,
			  .lanes = 1,
			  .max_block = 16,
			  .enc = INA_ENC_F32 };
	struct tjob b = f;
	struct wc_got g;

	b.id = 212, b.token = 0x2222, b.enc = INA_ENC_BF16, b.peer_base = 2;
	t->cfg.max_pkt = INA_HDR_SIZE + 16 * 2; /* 16 bf16 elements, 8 f32 */
	start(t);
	assert_int_equal(send_join(t, &f, 0), 1);
	take_one(t, &g);
	check_error(&g, f.id, f.token, INA_WERR_UNSUPPORTED);
	assert_msg_has(&g, "16 f32 elements does not fit the switch's 88-byte packets");
	join_all(t, &b);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	done(t);
}

/* A JOIN of wire version 1 (PROTOCOL 2.8) gets an ERROR UNSUPPORTED in
 * version 1, no larger than the JOIN, and is counted as bad_version; a
 * shorter one, or another old version, gets nothing. */
static void
test_pipeline_join_old_version(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 213,
			  .token = 0x2131,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 16,
			  .enc = INA_ENC_F32 };
	const struct pipeline_stats *st;
	struct ina_pkt *pkt;
	struct ina_hdr h;

	start(t);
	st = pipeline_stats(t->p);
	pkt = mk_join_as(t, &j, 1, j.world, j.lanes, j.max_block, j.enc, j.token);
	pkt->data[0] = 1;
	assert_int_equal(rx(t, pkt), 1);
	assert_true(t->out[0]->len <= INA_HDR_SIZE + sizeof(struct ina_wire_join));
	assert_int_equal(t->out[0]->data[0], 1);
	t->out[0]->data[0] = INA_WIRE_VERSION; /* to read it with this version */
	assert_int_equal(ina_wire_validate(t->out[0]->data, t->out[0]->len, NULL, &h), INA_WIRE_OK);
	assert_int_equal(h.type, INA_T_ERROR);
	assert_int_equal(h.status, INA_WERR_UNSUPPORTED);
	assert_int_equal(h.job_id, j.id);
	assert_memory_equal(t->out[0]->data + INA_HDR_SIZE, "need v2", 7);
	ina_pkt_free(t->out[0]);
	t->nb_out = 0;
	assert_int_equal(st->drop_wire[INA_WIRE_BAD_VERSION], 1);
	/* Truncated to the header: no answer. Version 0: no answer. */
	pkt = mk_join_as(t, &j, 1, j.world, j.lanes, j.max_block, j.enc, j.token);
	pkt->data[0] = 1;
	pkt->len = INA_HDR_SIZE;
	assert_int_equal(rx(t, pkt), 0);
	pkt = mk_join_as(t, &j, 1, j.world, j.lanes, j.max_block, j.enc, j.token);
	pkt->data[0] = 0;
	assert_int_equal(rx(t, pkt), 0);
	assert_int_equal(st->drop_wire[INA_WIRE_BAD_VERSION], 3);
	/* The job is not there: a version-2 JOIN admits it. */
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	join_all(t, &j);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	done(t);
}

/* What the pipeline reported (pipeline_events.h), for test_pipeline_events. */
struct ev_log {
	uint16_t n;
	struct pipeline_event ev[8];
	char text[8][INA_ERROR_MSG_MAX + 1];
};

static void
ev_record(void *ctx, const struct pipeline_event *ev)
{
	struct ev_log *l = ctx;

	assert_true(l->n < 8);
	l->ev[l->n] = *ev;
	l->ev[l->n].text = NULL; /* valid during the call only: copied */
	if (ev->text)
		memcpy(l->text[l->n], ev->text, ev->text_len);
	l->text[l->n][ev->text ? ev->text_len : 0] = '\0';
	l->n++;
}

/* The pipeline reports instead of logging: a job admitted, a JOIN refused
 * (with the ERROR's text), a job freed; a follower's pipeline_rx_quiet()
 * reports nothing and counts nothing. */
static void
test_pipeline_events(void **state)
{
	struct t *t = *state;
	struct tjob a = { .id = 221,
			  .token = 0xa221,
			  .world = 1,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct tjob b = a;
	struct ev_log l = { 0 };
	struct pipeline_stats before;
	struct ina_pkt *pkt;
	struct wc_got g;

	b.id = 222, b.token = 0xb222, b.peer_base = 2;
	t->cfg.max_jobs = 1;
	t->cfg.on_event = ev_record;
	t->cfg.event_ctx = &l;
	start(t);
	join(t, &a, 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.ev[0].kind, PEV_ADMITTED);
	assert_int_equal(l.ev[0].job_id, a.id);
	assert_int_equal(l.ev[0].lanes, 2);
	assert_int_equal(l.ev[0].want_lanes, 2);
	assert_int_equal(l.ev[0].world, 1);
	assert_int_equal(l.ev[0].epoch, a.epoch);
	assert_int_equal(l.ev[0].max_block, 4);

	assert_int_equal(send_join(t, &b, 0), 1);
	take_one(t, &g);
	check_error(&g, b.id, b.token, INA_WERR_NO_JOBS);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.ev[1].kind, PEV_REFUSED);
	assert_int_equal(l.ev[1].job_id, b.id);
	assert_int_equal(l.ev[1].status, INA_WERR_NO_JOBS);
	assert_int_equal(l.ev[1].text_len, g.payload_size);
	assert_memory_equal(l.text[1], g.payload, g.payload_size);

	/* A follower: the same JOIN, quietly. */
	pkt = mk_join_as(t, &b, 0, b.world, b.lanes, b.max_block, b.enc, b.token);
	before = *pipeline_stats(t->p);
	pipeline_rx_quiet(t->p, &pkt, 1, t->now);
	assert_int_equal(l.n, 2);
	assert_memory_equal(&before, pipeline_stats(t->p), sizeof(before));

	fin(t, &a, 0);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.ev[2].kind, PEV_FREED);
	assert_int_equal(l.ev[2].job_id, a.id);
	assert_int_equal(l.ev[2].slots, 2);
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	done(t);
}

static void
test_pipeline_join_refusals(void **state)
{
	struct t *t = *state;
	struct tjob a = { .id = 201,
			  .token = 0xaaaa,
			  .world = 2,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32,
			  .peer_base = 0 };
	struct tjob b = a, c = a, d = a, wrong = a;
	struct blk blk = { .tensor_id = 1, .round = 1, .tensor_len = 8, .block_size = 4 };
	float v[4] = { 0.5f, 1, 2, 4 };
	float sum[4] = { 1, 2, 4, 8 };
	struct wc_got g;

	b.id = 202, b.token = 0xbbbb, b.peer_base = 2;
	c.id = 203, c.token = 0xcccc, c.peer_base = 4;
	d.id = 204, d.token = 0xdddd, d.peer_base = 6, d.max_block = SLOT_ELEMS + 1;
	t->cfg.max_jobs = 2;
	start(t);
	join_all(t, &a);
	join_all(t, &b);

	/* The job table is full. */
	assert_int_equal(send_join(t, &c, 0), 1);
	take_one(t, &g);
	check_error(&g, c.id, c.token, INA_WERR_NO_JOBS);
	check_unicast(&g, peer_of(&c, 0));
	assert_msg_has(&g, "job 203");
	assert_int_equal(pipeline_stats(t->p)->jobs_refused, 1);
	assert_int_equal(pipeline_nb_jobs(t->p), 2);

	/* A block larger than a slot holds. */
	fin_all(t, &b);
	assert_int_equal(send_join(t, &d, 1), 1);
	take_one(t, &g);
	check_error(&g, d.id, d.token, INA_WERR_UNSUPPORTED);
	check_unicast(&g, peer_of(&d, 1));
	assert_msg_has(&g, "job 204");
	assert_msg_has(&g, "17");
	assert_int_equal(pipeline_stats(t->p)->jobs_refused, 2);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	assert_int_equal(pipeline_free_slots(t->p), 14);

	/* JOINs that disagree with job a. */
	assert_int_equal(rx(t, mk_join_as(t, &a, 1, 3, 2, 4, INA_ENC_F32, a.token)), 1);
	take_one(t, &g);
	check_error(&g, a.id, a.token, INA_WERR_MISMATCH);
	check_unicast(&g, peer_of(&a, 1));
	assert_msg_has(&g, "job 201");
	assert_int_equal(rx(t, mk_join_as(t, &a, 1, 2, 3, 4, INA_ENC_F32, a.token)), 1);
	take_one(t, &g);
	check_error(&g, a.id, a.token, INA_WERR_MISMATCH);
	assert_int_equal(rx(t, mk_join_as(t, &a, 1, 2, 2, 4, INA_ENC_I32, a.token)), 1);
	take_one(t, &g);
	check_error(&g, a.id, a.token, INA_WERR_MISMATCH);
	assert_int_equal(rx(t, mk_join_as(t, &a, 1, 2, 2, 8, INA_ENC_F32, a.token)), 1);
	take_one(t, &g);
	check_error(&g, a.id, a.token, INA_WERR_MISMATCH);

	/* A JOIN with the wrong secret is never answered. */
	wrong.token = 0xbad;
	wrong.peer_base = 20;
	assert_int_equal(send_join(t, &wrong, 1), 0);
	assert_int_equal(pipeline_stats(t->p)->drop_wire[INA_WIRE_WRONG_TOKEN], 1);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	assert_int_equal(pipeline_free_slots(t->p), 14);

	/* Job a is untouched: same epoch, same peers, it still sums. */
	assert_int_equal(push(t, &a, 0, &blk, INA_BLOCK_END, v), 0);
	assert_int_equal(push(t, &a, 1, &blk, INA_BLOCK_END, v), 1);
	take_one(t, &g);
	check_result(&g, &a, &blk, INA_BLOCK_END, sum);
	check_fanout(&g, &a);
	done(t);
}

/* ---- The lane protocol ---- */

static void
test_pipeline_aggregate_f32(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 301,
			  .token = 0x3030303030303030ull,
			  .world = 3,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	/* 30 elements: 8 blocks of 4, the last (7, lane 1) holds 2. */
	struct blk b = { .tensor_id = 7, .round = 1, .tensor_len = 30, .block_size = 4 };
	struct blk b1 = b;
	const float w0[4] = { 1.5f, -2.0f, 0.1f, 1e-3f };
	const float w1[4] = { 0.25f, 3.0f, 0.2f, -7.5f };
	const float w2[4] = { -1.0f, 0.5f, 0.3f, 1e30f };
	const float x0[4] = { 2, 4, 6, 8 }, x2[4] = { 0.5f, 0.7f, -0.5f, 1e-7f };
	const float y1[4] = { 9, 8, 7, 6 }, z0[4] = { -1, -2, -3, -4 };
	const float t0[2] = { 1.25f, 2 }, t2[2] = { 3, -4.5f };
	float want[4];
	struct wc_got g;

	start(t);
	join_all(t, &j);

	/* Lane 0, block 0: nothing comes out until the third rank. */
	assert_int_equal(push(t, &j, 0, &b, 2, w0), 0);
	assert_int_equal(push(t, &j, 1, &b, 4, w1), 0);
	/* Lane 1 runs alongside: block 1, which nobody has. */
	b1.lane = 1;
	b1.block = 1;
	assert_int_equal(push(t, &j, 0, &b1, 7, NULL), 0);
	assert_int_equal(push(t, &j, 2, &b, 2, w2), 1);
	take_one(t, &g);
	fadd(want, w0, 4, 1);
	fadd(want, w1, 4, 0);
	fadd(want, w2, 4, 0);
	check_result(&g, &j, &b, 2, want);
	check_fanout(&g, &j);
	assert_int_equal(g.h.exp, 0);
	assert_int_equal(pipeline_stats(t->p)->results, 1);

	/* Block 2: rank 1's next is 4, so it answers empty with its own next. */
	b.block = 2;
	b.ver = 1;
	assert_int_equal(push(t, &j, 1, &b, 4, NULL), 0);
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, x2), 0);
	assert_int_equal(push(t, &j, 1, &b1, INA_BLOCK_END, NULL), 0);
	assert_int_equal(push(t, &j, 0, &b, 6, x0), 1);
	take_one(t, &g);
	fadd(want, x2, 4, 1);
	fadd(want, x0, 4, 0);
	check_result(&g, &j, &b, 4, want);
	check_fanout(&g, &j);
	assert_int_equal(push(t, &j, 2, &b1, 7, NULL), 1);
	take_one(t, &g);
	check_result(&g, &j, &b1, 7, NULL);
	check_fanout(&g, &j);
	assert_int_equal(pipeline_stats(t->p)->results_empty, 1);

	/* Block 4: only rank 1 has it. */
	b.block = 4;
	b.ver = 0;
	assert_int_equal(push(t, &j, 0, &b, 6, NULL), 0);
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, NULL), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, y1), 1);
	take_one(t, &g);
	check_result(&g, &j, &b, 6, y1);

	/* Lane 1, block 7: the tensor's 2-element tail. */
	b1.block = 7;
	b1.ver = 1;
	assert_int_equal(push(t, &j, 2, &b1, INA_BLOCK_END, t2), 0);
	assert_int_equal(push(t, &j, 1, &b1, INA_BLOCK_END, NULL), 0);
	assert_int_equal(push(t, &j, 0, &b1, INA_BLOCK_END, t0), 1);
	take_one(t, &g);
	fadd(want, t2, 2, 1);
	fadd(want, t0, 2, 0);
	check_result(&g, &j, &b1, INA_BLOCK_END, want);
	assert_int_equal(g.len, INA_HDR_SIZE + 8);

	/* Block 6, the lane's last: every next is END. */
	b.block = 6;
	b.ver = 1;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, z0), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, NULL), 0);
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, NULL), 1);
	take_one(t, &g);
	check_result(&g, &j, &b, INA_BLOCK_END, z0);
	check_fanout(&g, &j);

	/* The slot is idle: round 1's blocks no longer match. */
	b.ver = 0;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, z0), 0);
	b.block = 0;
	assert_int_equal(push(t, &j, 0, &b, 2, w0), 0);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_NO_MATCH], 2);

	/* Round 2 opens the lane again; nobody has block 0 or anything after. */
	b.round = 2;
	for (uint16_t r = 0; r < 2; r++)
		assert_int_equal(push(t, &j, r, &b, INA_BLOCK_END, NULL), 0);
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, NULL), 1);
	take_one(t, &g);
	check_result(&g, &j, &b, INA_BLOCK_END, NULL);
	check_fanout(&g, &j);
	assert_int_equal(pipeline_stats(t->p)->results_empty, 2);

	/* Round 3, the other version bit. */
	b.round = 3;
	b.ver = 1;
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, w2), 0);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w1), 1);
	take_one(t, &g);
	fadd(want, w2, 4, 1);
	fadd(want, w0, 4, 0);
	fadd(want, w1, 4, 0);
	check_result(&g, &j, &b, INA_BLOCK_END, want);

	assert_int_equal(pipeline_stats(t->p)->results, 8);
	assert_int_equal(pipeline_stats(t->p)->results_empty, 2);
	assert_int_equal(pipeline_stats(t->p)->duplicates, 0);
	assert_int_equal(pipeline_stats(t->p)->shadow_replies, 0);
	assert_int_equal(pipeline_stats(t->p)->result_bytes, 5 * 16 + 8);
	done(t);
}

static void expect_wire_drop(struct t *t, const struct tjob *j, uint16_t rank,
			     const struct ina_hdr *h, const void *payload, size_t size,
			     uint32_t len, enum ina_wire_reason reason);

/* A bf16 data packet from 'rank': 'vals' rounded to bf16, 2 bytes each. */
static struct ina_pkt *
mk_data_bf16(struct t *t, const struct tjob *j, uint16_t rank, const struct blk *b, uint32_t next,
	     const float *vals)
{
	struct ina_hdr h = data_hdr(j, rank, b, next, 0, vals != NULL);
	uint8_t payload[SLOT_ELEMS * 2];

	assert_true(h.n_elems <= SLOT_ELEMS);
	if (vals)
		ina_enc_bf16_put(payload, vals, h.n_elems);
	return mk_pkt(t, peer_of(j, rank), &h, payload, (size_t)h.n_elems * 2);
}

/*
 * bf16: 2 bytes an element each way; the slot sums the exactly widened
 * values in binary32 and the RESULT rounds once. Element 0 (1 + 2^-8 + 2^-8)
 * and element 1 (256 + 1 + 1) would lose both small addends if the switch
 * rounded to bf16 after each addition (every step is a tie to even); summed
 * in binary32 they come back as 1 + 2^-7 and 258, both bf16.
 */
static void
test_pipeline_aggregate_bf16(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 451,
			  .token = 0x4545,
			  .world = 3,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_BF16 };
	struct blk b = { .tensor_id = 5, .round = 1, .tensor_len = 32, .block_size = 4 };
	struct blk b1 = b;
	const float x0[4] = { 1.0f, 256.0f, -2.5f, 0x1p-130f };
	const float x1[4] = { 0x1p-8f, 1.0f, 2.5f, 0x1p-130f };
	const float x2[4] = { 0x1p-8f, 1.0f, 0.0f, 0x1p-131f };
	const float sum[4] = { 1.0f + 0x1p-7f, 258.0f, 0.0f, 5 * 0x1p-131f };
	/* A sum that is no bf16: 1 + 2^-8 + 2^-9 = 1 + 3 2^-9 rounds once, up. */
	const float y0[4] = { 1.0f, 0, 0, 0 }, y1[4] = { 0x1p-8f, 0, 0, 0 },
		    y2[4] = { 0x1p-9f, 0, 0, 0 };
	uint8_t want[8], pl[16];
	struct ina_pkt *pkt;
	struct ina_hdr h;
	struct wc_got g, r0;

	start(t);
	join_all(t, &j);

	/* Lane 0, block 0 (bf16 lanes open with their first block, as f32). */
	assert_int_equal(rx(t, mk_data_bf16(t, &j, 0, &b, 2, x0)), 0);
	/* A payload of 4-byte elements, or one byte short, is a bad length. */
	h = data_hdr(&j, 1, &b, 2, 0, 1);
	memset(pl, 0, sizeof(pl));
	ina_enc_f32_put(pl, x1, 4);
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_BAD_LENGTH);
	expect_wire_drop(t, &j, 1, &h, pl, 7, 0, INA_WIRE_BAD_LENGTH);
	assert_int_equal(pipeline_stats(t->p)->drop_wire[INA_WIRE_BAD_LENGTH], 2);
	assert_int_equal(rx(t, mk_data_bf16(t, &j, 1, &b, 2, x1)), 0);
	assert_int_equal(rx(t, mk_data_bf16(t, &j, 2, &b, INA_BLOCK_END, x2)), 1);
	take_one(t, &r0);
	check_from_switch(&r0, &j, INA_T_RESULT);
	check_fanout(&r0, &j);
	assert_int_equal(r0.h.block, 0);
	assert_int_equal(r0.h.next, 2);
	assert_int_equal(r0.h.n_elems, 4);
	assert_int_equal(r0.payload_size, 8);
	assert_int_equal(r0.len, INA_HDR_SIZE + 8);
	ina_enc_bf16_put(want, sum, 4);
	assert_memory_equal(r0.payload, want, 8);

	/* A retransmission: the shadow re-encodes the same binary32 sum, same bytes. */
	pkt = mk_data_bf16(t, &j, 1, &b, 2, x1);
	pkt->data[3] |= INA_F_RETX;
	assert_int_equal(rx(t, pkt), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 1));
	assert_int_equal(g.len, r0.len);
	assert_memory_equal(g.payload, r0.payload, 8);
	assert_int_equal(pipeline_stats(t->p)->shadow_replies, 1);

	/* Block 2: one rounding of a binary32 sum that is no bf16. */
	b.block = 2;
	b.ver = 1;
	assert_int_equal(rx(t, mk_data_bf16(t, &j, 0, &b, INA_BLOCK_END, y0)), 0);
	assert_int_equal(rx(t, mk_data_bf16(t, &j, 1, &b, INA_BLOCK_END, y1)), 0);
	assert_int_equal(rx(t, mk_data_bf16(t, &j, 2, &b, INA_BLOCK_END, y2)), 1);
	take_one(t, &g);
	assert_int_equal(g.payload_size, 8);
	assert_int_equal(g.payload[0], 0x3f);
	assert_int_equal(g.payload[1], 0x81); /* 1 + 2^-7: 1 + 3 2^-9 rounded up */
	assert_int_equal(g.payload[2] | g.payload[3], 0);

	/* Lane 1: nobody has anything, a header-only result. */
	b1.lane = 1;
	b1.block = 1;
	for (uint16_t r = 0; r < 2; r++)
		assert_int_equal(rx(t, mk_data_bf16(t, &j, r, &b1, INA_BLOCK_END, NULL)), 0);
	assert_int_equal(rx(t, mk_data_bf16(t, &j, 2, &b1, INA_BLOCK_END, NULL)), 1);
	take_one(t, &g);
	assert_int_equal(g.h.n_elems, 0);
	assert_int_equal(g.len, INA_HDR_SIZE);

	/* An f32 packet in a bf16 job is the wrong encoding. */
	b1.round = 2;
	b1.block = 1;
	h = data_hdr(&j, 0, &b1, INA_BLOCK_END, 0, 1);
	h.encoding = INA_ENC_F32;
	expect_wire_drop(t, &j, 0, &h, pl, 16, 0, INA_WIRE_WRONG_ENCODING);
	assert_int_equal(pipeline_stats(t->p)->results, 3);
	done(t);
}

static void
test_pipeline_aggregate_i32(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 401,
			  .token = 0x4040,
			  .world = 3,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_I32 };
	struct blk b = { .tensor_id = 9,
			 .round = 1,
			 .tensor_len = 32,
			 .block_size = 4,
			 .lane = 0,
			 .block = INA_BLOCK_OPEN };
	struct blk b1 = b;
	const int32_t a0[4] = { 100, -200, 1 << 20, -7 }, a2[4] = { 1, 2, 3, 4 };
	const int32_t s0[4] = { 101, -198, (1 << 20) + 3, -3 };
	const int32_t c0[4] = { 5, 5, 5, -5 };
	const int32_t c1[4] = { -5, 6, INT32_MAX - 5, INT32_MIN + 5 };
	const int32_t s2[4] = { 0, 11, INT32_MAX, INT32_MIN };
	const int32_t d0[4] = { INT32_MAX, INT32_MIN, 5, 0 }, d1[4] = { 1, -1, 6, 0 };
	const int32_t sd[4] = { INT32_MAX, INT32_MIN, 11, 0 };
	struct wc_got g;

	start(t);
	join_all(t, &j);

	/* A lane of an i32 job opens with INA_BLOCK_OPEN, not with its first block. */
	b.block = 0;
	assert_int_equal(push_x(t, &j, 0, &b, 2, 3, a0), 0);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_NO_MATCH], 1);
	b.block = INA_BLOCK_OPEN;

	/* Openers: the exponent of the smallest next wins, rank 1's is ignored. */
	assert_int_equal(push_x(t, &j, 0, &b, 0, 3, NULL), 0);
	assert_int_equal(push_x(t, &j, 1, &b, 2, 10, NULL), 0);
	assert_int_equal(push_x(t, &j, 2, &b, 0, 5, NULL), 1);
	take_one(t, &g);
	check_result(&g, &j, &b, 0, NULL);
	check_fanout(&g, &j);
	assert_int_equal(g.h.exp, 5);
	assert_int_equal(g.h.flags & INA_F_SATURATED, 0);

	/* Lane 1's openers: negative exponents, the larger one wins. */
	b1.lane = 1;
	assert_int_equal(push_x(t, &j, 0, &b1, 1, -5, NULL), 0);
	/* An exponent with next END names nothing: refused, not ignored. */
	assert_int_equal(push_x(t, &j, 2, &b1, INA_BLOCK_END, 40, NULL), 0);
	assert_int_equal(pipeline_stats(t->p)->drop_wire[INA_WIRE_BAD_EXP], 1);
	assert_int_equal(push_x(t, &j, 2, &b1, INA_BLOCK_END, 0, NULL), 0);
	/* Past INA_EXP_MAX, or below INA_EXP_MIN: refused, not clamped. */
	assert_int_equal(push_x(t, &j, 1, &b1, 1, INA_EXP_MAX + 1, NULL), 0);
	assert_int_equal(push_x(t, &j, 1, &b1, 1, INA_EXP_MIN - 1, NULL), 0);
	assert_int_equal(pipeline_stats(t->p)->drop_wire[INA_WIRE_BAD_EXP], 3);
	assert_int_equal(push_x(t, &j, 1, &b1, 1, -3, NULL), 1);
	take_one(t, &g);
	check_result(&g, &j, &b1, 1, NULL);
	assert_int_equal(g.h.exp, -3);

	/* Block 0: rank 1 answers empty; both ranks that name block 2 count. */
	b.block = 0;
	b.ver = 1;
	assert_int_equal(push_x(t, &j, 0, &b, 2, 7, a0), 0);
	assert_int_equal(push_x(t, &j, 1, &b, 2, 10, NULL), 0);
	assert_int_equal(push_x(t, &j, 2, &b, INA_BLOCK_END, 0, a2), 1);
	take_one(t, &g);
	check_result(&g, &j, &b, 2, s0);
	check_fanout(&g, &j);
	assert_int_equal(g.h.exp, 10);
	assert_int_equal(g.h.flags & INA_F_SATURATED, 0);

	/* Block 2: sums that reach the int32 limits exactly do not saturate. */
	b.block = 2;
	b.ver = 0;
	assert_int_equal(push_x(t, &j, 2, &b, INA_BLOCK_END, 0, NULL), 0);
	assert_int_equal(push_x(t, &j, 0, &b, INA_BLOCK_END, 0, c0), 0);
	assert_int_equal(push_x(t, &j, 1, &b, INA_BLOCK_END, 0, c1), 1);
	take_one(t, &g);
	check_result(&g, &j, &b, INA_BLOCK_END, s2);
	assert_int_equal(g.h.exp, 0);
	assert_int_equal(g.h.flags & INA_F_SATURATED, 0);
	assert_int_equal(pipeline_stats(t->p)->saturated, 0);

	/* Lane 1, block 1: two elements overflow, one each way. */
	b1.block = 1;
	b1.ver = 1;
	assert_int_equal(push_x(t, &j, 0, &b1, INA_BLOCK_END, 0, d0), 0);
	assert_int_equal(push_x(t, &j, 2, &b1, INA_BLOCK_END, 0, NULL), 0);
	assert_int_equal(push_x(t, &j, 1, &b1, INA_BLOCK_END, 0, d1), 1);
	take_one(t, &g);
	check_result(&g, &j, &b1, INA_BLOCK_END, sd);
	check_fanout(&g, &j);
	assert_int_equal(g.h.flags & INA_F_SATURATED, INA_F_SATURATED);
	assert_int_equal(pipeline_stats(t->p)->saturated, 2);

	/* The next round on that slot starts unsaturated. */
	b1.round = 2;
	b1.block = INA_BLOCK_OPEN;
	b1.ver = 0;
	assert_int_equal(push_x(t, &j, 0, &b1, 1, 4, NULL), 0);
	assert_int_equal(push_x(t, &j, 1, &b1, 1, 4, NULL), 0);
	assert_int_equal(push_x(t, &j, 2, &b1, 1, 4, NULL), 1);
	take_one(t, &g);
	check_result(&g, &j, &b1, 1, NULL);
	assert_int_equal(g.h.exp, 4);
	b1.block = 1;
	b1.ver = 1;
	assert_int_equal(push_x(t, &j, 0, &b1, INA_BLOCK_END, 0, a2), 0);
	assert_int_equal(push_x(t, &j, 1, &b1, INA_BLOCK_END, 0, NULL), 0);
	assert_int_equal(push_x(t, &j, 2, &b1, INA_BLOCK_END, 0, NULL), 1);
	take_one(t, &g);
	check_result(&g, &j, &b1, INA_BLOCK_END, a2);
	assert_int_equal(g.h.flags & INA_F_SATURATED, 0);
	assert_int_equal(pipeline_stats(t->p)->saturated, 2);
	done(t);
}

/*
 * A rank that dies: while the others only repeat themselves (duplicates
 * answered by WAIT), nothing happens before the peer timeout; after it, the
 * next repeat gets an ERROR fan-out naming the silent rank to every other
 * rank, the job takes no more packets, the next tick frees its slots, and
 * the survivors can join again with a smaller world under a new epoch.
 */
static void
test_pipeline_dead_rank(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 521,
			  .token = 0x5252,
			  .world = 3,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 1, .round = 0, .tensor_len = 8, .block_size = 4 };
	const float w[4] = { 1, 2, 3, 4 };
	const struct pipeline_stats *st;
	uint32_t free0, epoch0;
	struct wc_got g;

	t->cfg.peer_timeout_ns = 2 * SEC;
	start(t);
	st = pipeline_stats(t->p);
	free0 = pipeline_free_slots(t->p);
	join_all(t, &j);
	epoch0 = j.epoch;
	/* Ranks 0 and 1 send lane 0's block; rank 2 never does. */
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w), 0);
	t->now += 2 * SEC - 1;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w), 1);
	take_one(t, &g);
	check_from_switch(&g, &j, INA_T_WAIT);
	assert_int_equal(st->jobs_aborted, 0);
	/* Rank 1 repeats itself after rank 2's two silent seconds. */
	t->now += 1;
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w), 1);
	take_one(t, &g);
	check_error(&g, j.id, j.token, INA_WERR_PEER_DEAD);
	assert_true(g.fanout);
	assert_int_equal(g.dst_mask, 0x3);
	assert_msg_has(&g, "rank 2 silent for 2000 ms");
	assert_int_equal(st->jobs_aborted, 1);
	/* Nothing more of it is taken, and a JOIN waits until it is freed. */
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w), 0);
	assert_int_equal(st->drop[PDROP_ABORTED], 1);
	assert_true(pipeline_free_slots(t->p) < free0);
	pipeline_tick(t->p, t->now);
	assert_int_equal(pipeline_free_slots(t->p), free0);
	/* The survivors go on as a job of two, under a new epoch. */
	j.world = 2;
	j.epoch = 0;
	join_all(t, &j);
	assert_int_not_equal(j.epoch, epoch0);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w), 1);
	take_one(t, &g);
	check_from_switch(&g, &j, INA_T_RESULT);
	done(t);
}

/*
 * Pauses are not deaths: a rank that sends KEEPALIVEs while the others wait
 * on it stays alive for five peer timeouts, nothing answered; its silence
 * after that is still a death within the peer timeout. KEEPALIVEs of an
 * unknown job, with a wrong token or epoch, or from a rank that has not
 * joined are counted drops that keep nothing alive. Without a peer timeout
 * a WAIT vouches for nobody (status 0).
 */
static void
test_pipeline_keepalive(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 522,
			  .token = 0x5253,
			  .world = 3,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct tjob other = j;
	struct blk b = { .tensor_id = 1, .round = 0, .tensor_len = 4, .block_size = 4 };
	const float w[4] = { 1, 2, 3, 4 };
	const struct pipeline_stats *st;
	struct wc_got g;
	struct ina_hdr h;

	t->cfg.peer_timeout_ns = 2 * SEC;
	start(t);
	st = pipeline_stats(t->p);
	join(t, &j, 0);
	join(t, &j, 1);
	/* Rank 2 has not joined: its keepalive keeps nothing alive. */
	assert_int_equal(send_ctl(t, &j, INA_T_KEEPALIVE, 2), 0);
	assert_int_equal(st->drop[PDROP_NOT_JOINED], 1);
	assert_int_equal(st->keepalives, 0);
	join(t, &j, 2);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w), 0);
	/* Rank 2 pauses for ten seconds, one KEEPALIVE a second; ranks 0 and
	 * 1 wait and get WAITs that vouch for it. */
	for (int s = 1; s <= 10; s++) {
		t->now += SEC;
		assert_int_equal(send_ctl(t, &j, INA_T_KEEPALIVE, 2), 0); /* no answer */
		assert_int_equal(push(t, &j, (uint16_t)(s & 1), &b, INA_BLOCK_END, w), 1);
		take_one(t, &g);
		check_from_switch(&g, &j, INA_T_WAIT);
		assert_int_equal(g.h.status, INA_WAIT_LIVE);
	}
	assert_int_equal(st->keepalives, 10);
	assert_int_equal(st->jobs_aborted, 0);
	/* Bad keepalives are drops, and keep rank 2 alive no longer. */
	h = base_hdr(&j, INA_T_KEEPALIVE, 2);
	h.token ^= 1;
	assert_int_equal(rx(t, mk_pkt(t, peer_of(&j, 2), &h, NULL, 0)), 0);
	assert_int_equal(st->drop_wire[INA_WIRE_WRONG_TOKEN], 1);
	h = base_hdr(&j, INA_T_KEEPALIVE, 2);
	h.epoch++;
	assert_int_equal(rx(t, mk_pkt(t, peer_of(&j, 2), &h, NULL, 0)), 0);
	assert_int_equal(st->drop_wire[INA_WIRE_WRONG_EPOCH], 1);
	other.id = 999;
	assert_int_equal(send_ctl(t, &other, INA_T_KEEPALIVE, 2), 0);
	assert_int_equal(st->drop[PDROP_UNKNOWN_JOB], 1);
	h = base_hdr(&j, INA_T_KEEPALIVE, 2);
	h.flags = INA_F_RETX;
	assert_int_equal(rx(t, mk_pkt(t, peer_of(&j, 2), &h, NULL, 0)), 0);
	assert_int_equal(st->drop_wire[INA_WIRE_BAD_FLAGS], 1);
	assert_int_equal(st->keepalives, 10);
	/* Rank 2 dies: two seconds after its last keepalive, the job is
	 * aborted as before. */
	t->now += 2 * SEC - 1;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w), 1);
	take_one(t, &g);
	check_from_switch(&g, &j, INA_T_WAIT);
	t->now += 1;
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w), 1);
	take_one(t, &g);
	check_error(&g, j.id, j.token, INA_WERR_PEER_DEAD);
	assert_msg_has(&g, "rank 2 silent for 2000 ms");
	assert_int_equal(st->jobs_aborted, 1);
	/* A keepalive for the aborted job is dropped too. */
	assert_int_equal(send_ctl(t, &j, INA_T_KEEPALIVE, 2), 0);
	assert_int_equal(st->drop[PDROP_ABORTED], 1);
	done(t);
}

/* Without a peer timeout the switch vouches for nobody: WAIT status 0. */
static void
test_pipeline_wait_not_live(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 523,
			  .token = 0x5254,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 1, .round = 0, .tensor_len = 4, .block_size = 4 };
	const float w[4] = { 1, 2, 3, 4 };
	struct wc_got g;

	t->cfg.peer_timeout_ns = 0;
	start(t);
	join_all(t, &j);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w), 0);
	t->now += 20 * SEC;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w), 1);
	take_one(t, &g);
	check_from_switch(&g, &j, INA_T_WAIT);
	assert_int_equal(g.h.status, 0);
	done(t);
}

/*
 * A graceful stop: once draining, a new job's JOIN is refused with ERROR
 * SHUTDOWN while a running job still completes its blocks; the shutdown then
 * tells every rank of what is left (one fan-out) and frees it.
 */
static void
test_pipeline_drain_shutdown(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 531,
			  .token = 0x5353,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct tjob k = { .id = 532,
			  .token = 0x5454,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 1, .round = 0, .tensor_len = 4, .block_size = 4 };
	const float w[4] = { 1, 2, 3, 4 };
	struct ina_pkt *out[4];
	uint32_t free0;
	struct wc_got g;

	start(t);
	free0 = pipeline_free_slots(t->p);
	join_all(t, &j);
	pipeline_drain(t->p);
	assert_int_equal(send_join(t, &k, 0), 1);
	take_one(t, &g);
	check_error(&g, k.id, k.token, INA_WERR_SHUTDOWN);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w), 1);
	take_one(t, &g);
	check_from_switch(&g, &j, INA_T_RESULT);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	assert_int_equal(pipeline_shutdown(t->p, out, 4), 1);
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	assert_int_equal(pipeline_free_slots(t->p), free0);
	wc_decode(&g, out[0], NULL);
	check_error(&g, j.id, j.token, INA_WERR_SHUTDOWN);
	assert_true(g.fanout);
	assert_int_equal(g.dst_mask, 0x3);
	assert_msg_has(&g, "shutting down");
	ina_pkt_free(out[0]);
	assert_int_equal(pipeline_shutdown(t->p, out, 4), 0);
	done(t);
}

static void
test_pipeline_duplicates_wait(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 501,
			  .token = 0x5050,
			  .world = 3,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 1, .round = 1, .tensor_len = 4, .block_size = 4 };
	const float w0[4] = { 0.1f, 0.2f, 0.3f, 0.4f }, w1[4] = { 1e-3f, 7, -8, 1e20f };
	const float w1_other[4] = { 99, 99, 99, 99 }, w2[4] = { 3.3f, -0.2f, 5, -1e20f };
	const struct pipeline_stats *st;
	float want[4];
	struct wc_got g;
	uint64_t missing_be;

	start(t);
	st = pipeline_stats(t->p);
	join_all(t, &j);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 0);

	/* The same packet again: a WAIT to rank 0 alone, naming ranks 1 and 2. */
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 1);
	take_one(t, &g);
	check_from_switch(&g, &j, INA_T_WAIT);
	check_unicast(&g, peer_of(&j, 0));
	/* The peer timeout is on: the switch vouches the ranks named live. */
	assert_int_equal(g.h.status, INA_WAIT_LIVE);
	assert_int_equal(g.h.lane, 0);
	assert_int_equal(g.h.tensor_id, 1);
	assert_int_equal(g.h.round, 1);
	assert_int_equal(g.h.block, 0);
	assert_int_equal(g.h.flags & INA_F_VER, 0);
	assert_int_equal(g.payload_size, INA_WAIT_PAYLOAD);
	memcpy(&missing_be, g.payload, sizeof(missing_be));
	assert_int_equal(be64toh(missing_be), 0x6);
	assert_int_equal(st->duplicates, 1);
	assert_int_equal(st->waits, 1);

	/* A third copy within the interval: counted, not answered. */
	t->now += WAIT_NS / 2;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 0);
	assert_int_equal(st->duplicates, 2);
	assert_int_equal(st->waits, 1);
	/* Once the interval has passed: WAIT again. */
	t->now += WAIT_NS / 2;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 1);
	take_wait(t, &j, 0, 0x6);
	assert_int_equal(st->waits, 2);

	/* Rank 1 arrives, then repeats itself within the interval rank 0's
	 * WAIT began: the limit is per rank, so rank 1 gets a WAIT of its own
	 * (one per slot would leave it unanswered while rank 0 keeps asking,
	 * until its silence timeout), and then nothing more in the interval. */
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w1), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w1), 1);
	take_wait(t, &j, 1, 0x4);
	assert_int_equal(st->waits, 3);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w1), 0);
	assert_int_equal(st->waits, 3);
	/* Past the interval, once with other values: WAIT again. */
	t->now += WAIT_NS;
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w1_other), 1);
	take_wait(t, &j, 1, 0x4);
	assert_int_equal(st->duplicates, 7);
	assert_int_equal(st->waits, 4);

	/* The sum counts each rank once. */
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, w2), 1);
	take_one(t, &g);
	fadd(want, w0, 4, 1);
	fadd(want, w1, 4, 0);
	fadd(want, w2, 4, 0);
	check_result(&g, &j, &b, INA_BLOCK_END, want);
	check_fanout(&g, &j);
	assert_int_equal(st->results, 1);
	done(t);
}

static void
test_pipeline_lost_result(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 601,
			  .token = 0x6060,
			  .world = 3,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 2, .round = 5, .tensor_len = 8, .block_size = 4 };
	const float w0[4] = { 1.1f, 2.2f, 3.3f, 4.4f }, w1[4] = { -5, 0.5f, 1e-9f, 8 };
	const float w2[4] = { 0.7f, 0.8f, 0.9f, 1.0f }, v0[4] = { 3, 1, 4, 1 };
	const float v1[4] = { 5, 9, 2, 6 };
	const struct pipeline_stats *st;
	struct wc_got r0, r1, g;
	struct ina_pkt *pkt;

	start(t);
	st = pipeline_stats(t->p);
	join_all(t, &j);
	assert_int_equal(push(t, &j, 0, &b, 1, w0), 0);
	assert_int_equal(push(t, &j, 1, &b, 1, w1), 0);
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, w2), 1);
	take_one(t, &r0);
	check_fanout(&r0, &j);

	/* Rank 2 lost it and retransmits: the shadow answers rank 2 alone. */
	t->now += 10 * MS;
	pkt = mk_data(t, &j, 2, &b, INA_BLOCK_END, w2);
	pkt->data[3] |= INA_F_RETX;
	assert_int_equal(rx(t, pkt), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 2));
	assert_int_equal(g.len, r0.len);
	assert_memory_equal(g.bytes, r0.bytes, r0.len);
	assert_int_equal(st->shadow_replies, 1);
	assert_int_equal(st->results, 1);

	/* Block 1 runs; a retransmission of block 0 is still answered. */
	b.block = 1;
	b.ver = 1;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v0), 0);
	b.block = 0;
	b.ver = 0;
	assert_int_equal(push(t, &j, 1, &b, 1, w1), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 1));
	assert_memory_equal(g.bytes, r0.bytes, r0.len);
	b.block = 1;
	b.ver = 1;
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, v1), 0);
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, NULL), 1);
	take_one(t, &r1);
	{
		float want[4];

		fadd(want, v0, 4, 1);
		fadd(want, v1, 4, 0);
		check_result(&r1, &j, &b, INA_BLOCK_END, want);
	}

	/* Now the shadow is block 1: its retransmission is answered, block 0's is not. */
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v0), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 0));
	assert_int_equal(g.len, r1.len);
	assert_memory_equal(g.bytes, r1.bytes, r1.len);
	b.block = 0;
	b.ver = 0;
	assert_int_equal(push(t, &j, 0, &b, 1, w0), 0);
	assert_int_equal(st->drop[PDROP_NO_MATCH], 1);
	assert_int_equal(st->shadow_replies, 3);
	assert_int_equal(st->results, 2);
	assert_int_equal(st->duplicates, 0);
	done(t);
}

/*
 * The result filter (PROTOCOL.md 7.7): a sum whose every element is under the
 * smallest bound its packets announced goes down header-only and DEFERRED,
 * in the fan-out and in shadow replies alike; a sum at the bound, a zero sum,
 * a NaN, any packet without a bound, or a saturated i32 sum goes down whole.
 */
static void
test_pipeline_result_filter(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 611,
			  .token = 0x6161,
			  .world = 3,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 3, .round = 1, .tensor_len = 16, .block_size = 4 };
	const float a[4] = { 0.25f, -0.5f, 0, 0.125f }, c[4] = { 0.5f, 0, -0.25f, 0 };
	const float z[4] = { 0.25f, 0, 0, 0 }, zn[4] = { -0.25f, 0, 0, 0 };
	const float nan4[4] = { NAN, 0, 0, 0 };
	uint32_t one = ina_enc_bound(INA_ENC_F32, 1.0f, 0);
	uint32_t half = ina_enc_bound(INA_ENC_F32, 0.5f, 0);
	const struct pipeline_stats *st;
	struct wc_got g, r;
	struct ina_pkt *pkt;

	start(t);
	st = pipeline_stats(t->p);
	join_all(t, &j);
	/* Block 0: sum (0.75, -0.5, -0.25, 0.125), all under 1: deferred. */
	assert_int_equal(push_bound(t, &j, 0, &b, 1, a, one), 0);
	assert_int_equal(push_bound(t, &j, 1, &b, 1, NULL, one), 0);
	assert_int_equal(push_bound(t, &j, 2, &b, 1, c, one), 1);
	take_one(t, &r);
	check_result(&r, &j, &b, 1, NULL);
	check_fanout(&r, &j);
	assert_int_equal(r.h.flags & INA_F_DEFERRED, INA_F_DEFERRED);
	assert_int_equal(r.h.bound, 0);
	assert_int_equal(st->results_deferred, 1);
	assert_int_equal(st->result_bytes, 0);
	/* A lost result: the shadow answers DEFERRED too. */
	pkt = mk_data(t, &j, 2, &b, 1, c);
	assert_int_equal(rx(t, pkt), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 2));
	assert_int_equal(g.len, INA_HDR_SIZE);
	assert_memory_equal(g.bytes, r.bytes, r.len);
	/* Block 1: rank 1 announces 0.5, the smallest wins, 0.75 is not under it. */
	b.block = 1;
	b.ver = 1;
	assert_int_equal(push_bound(t, &j, 0, &b, 2, a, one), 0);
	assert_int_equal(push_bound(t, &j, 1, &b, 2, NULL, half), 0);
	assert_int_equal(push_bound(t, &j, 2, &b, 2, c, one), 1);
	take_one(t, &g);
	assert_int_equal(g.h.flags & INA_F_DEFERRED, 0);
	assert_int_equal(g.h.n_elems, 4);
	/* Block 2: a zero sum goes as an ordinary block; block 3: a rank without
	 * a bound turns the filter off. */
	b.block = 2;
	b.ver = 0;
	assert_int_equal(push_bound(t, &j, 0, &b, 3, z, one), 0);
	assert_int_equal(push_bound(t, &j, 1, &b, 3, zn, one), 0);
	assert_int_equal(push_bound(t, &j, 2, &b, 3, NULL, one), 1);
	take_one(t, &g);
	assert_int_equal(g.h.flags & INA_F_DEFERRED, 0);
	assert_int_equal(g.h.n_elems, 4);
	b.block = 3;
	b.ver = 1;
	assert_int_equal(push_bound(t, &j, 0, &b, INA_BLOCK_END, a, one), 0);
	assert_int_equal(push_bound(t, &j, 1, &b, INA_BLOCK_END, NULL, 0), 0);
	assert_int_equal(push_bound(t, &j, 2, &b, INA_BLOCK_END, c, one), 1);
	take_one(t, &g);
	assert_int_equal(g.h.flags & INA_F_DEFERRED, 0);
	assert_int_equal(g.h.n_elems, 4);
	/* Round 2: a NaN never defers. */
	b.round = 2;
	b.block = 0;
	b.ver = 0;
	assert_int_equal(push_bound(t, &j, 0, &b, INA_BLOCK_END, nan4, one), 0);
	assert_int_equal(push_bound(t, &j, 1, &b, INA_BLOCK_END, NULL, one), 0);
	assert_int_equal(push_bound(t, &j, 2, &b, INA_BLOCK_END, NULL, one), 1);
	take_one(t, &g);
	assert_int_equal(g.h.flags & INA_F_DEFERRED, 0);
	assert_int_equal(st->results_deferred, 1);
	done(t);
}

static void
test_pipeline_reordering(void **state)
{
	static const uint16_t perms[6][3] = {
		{ 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 },
	};
	struct t *t = *state;
	struct tjob j = { .id = 701,
			  .token = 0x7070,
			  .world = 3,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	const float b0[3][4] = { { 0.5f, -1.25f, 3, 0.125f }, { 0 }, { 1.75f, 2, -0.375f, 8 } };
	const float b1[3][4] = { { 0 }, { 1, 2, 3, 4 }, { 0.5f, 0.25f, -3, 100 } };
	const uint32_t next0[3] = { INA_BLOCK_END, 1, 1 };
	const float sum0[4] = { 2.25f, 0.75f, 2.625f, 8.125f }, sum1[4] = { 1.5f, 2.25f, 0, 104 };
	struct wc_got g, first0, first1;

	start(t);
	join_all(t, &j);
	for (uint32_t k = 0; k < 6; k++) {
		struct blk b = { .tensor_id = 3, .round = k + 1, .tensor_len = 8, .block_size = 4 };
		struct ina_pkt *pkts[3];

		for (int i = 0; i < 3; i++) {
			uint16_t r = perms[k][i];

			pkts[i] = mk_data(t, &j, r, &b, next0[r], r == 1 ? NULL : b0[r]);
		}
		assert_int_equal(rx_n(t, pkts, 3), 1);
		take_one(t, &g);
		check_result(&g, &j, &b, 1, sum0);
		check_fanout(&g, &j);
		if (k == 0)
			first0 = g;
		assert_memory_equal(g.bytes + INA_HDR_SIZE, first0.bytes + INA_HDR_SIZE, 16);

		b.block = 1;
		b.ver = 1;
		for (int i = 0; i < 3; i++) {
			uint16_t r = perms[(k + 3) % 6][i];

			pkts[i] = mk_data(t, &j, r, &b, INA_BLOCK_END, r == 0 ? NULL : b1[r]);
		}
		assert_int_equal(rx_n(t, pkts, 3), 1);
		take_one(t, &g);
		check_result(&g, &j, &b, INA_BLOCK_END, sum1);
		if (k == 0)
			first1 = g;
		assert_memory_equal(g.bytes + INA_HDR_SIZE, first1.bytes + INA_HDR_SIZE, 16);
	}
	assert_int_equal(pipeline_stats(t->p)->results, 12);
	done(t);
}

/* ---- Drops ---- */

static void
test_pipeline_exact_match(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 801,
			  .token = 0x8080,
			  .world = 3,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct tjob k = { .id = 802,
			  .token = 0x8282,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32,
			  .peer_base = 8 };
	struct tjob ghost = j;
	const struct blk b0 = { .tensor_id = 7, .round = 1, .tensor_len = 32, .block_size = 4 };
	struct blk b;
	const float w0[4] = { 1, 2, 3, 4 }, w1[4] = { 10, 20, 30, 40 };
	const float w2[4] = { 100, 200, 300, 400 }, sum[4] = { 111, 222, 333, 444 };
	const float bad[4] = { 1e9f, 1e9f, 1e9f, 1e9f };
	const struct pipeline_stats *st;
	struct ina_hdr h;
	uint8_t payload[16];
	struct wc_got g;

	start(t);
	st = pipeline_stats(t->p);
	join_all(t, &j);
	b = b0;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 0);

	/* Another round, tensor or block with the current version bit. */
	b.round = 2;
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, bad), 0);
	b = b0;
	b.tensor_id = 8;
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, bad), 0);
	b = b0;
	b.block = 2;
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, bad), 0);
	/* The other version bit, with no shadow yet. */
	b = b0;
	b.ver = 1;
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, bad), 0);
	assert_int_equal(st->drop[PDROP_NO_MATCH], 4);

	/* The same block with another shape. */
	b = b0;
	b.tensor_len = 36;
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, bad), 0);
	b = b0;
	b.block_size = 2;
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, bad), 0);
	assert_int_equal(st->drop[PDROP_SHAPE], 2);
	assert_int_equal(st->duplicates, 0);
	assert_int_equal(st->waits, 0);

	/* None of it counted: rank 1's real packet is not a duplicate. */
	b = b0;
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w1), 0);
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, w2), 1);
	take_one(t, &g);
	check_result(&g, &j, &b, INA_BLOCK_END, sum);
	assert_int_equal(st->duplicates, 0);

	/* The lane is idle (current version 1): stale packets of round 1 or 0,
	 * and a round-2 packet that is not the lane's first block, match nothing. */
	b = b0;
	b.ver = 1;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 0);
	b.round = 0;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 0);
	b.round = 2;
	b.block = 2;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 0);
	/* Round 2 with the shadow's version bit: not the shadow's block. */
	b.block = 0;
	b.ver = 0;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 0);
	assert_int_equal(st->drop[PDROP_NO_MATCH], 8);
	assert_int_equal(st->drop[PDROP_SHAPE], 2);
	assert_int_equal(st->shadow_replies, 0);

	/* Round 2 proper opens the lane again. */
	b.ver = 1;
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, w2), 0);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w1), 1);
	take_one(t, &g);
	{
		float want[4];

		fadd(want, w2, 4, 1);
		fadd(want, w0, 4, 0);
		fadd(want, w1, 4, 0);
		check_result(&g, &j, &b, INA_BLOCK_END, want);
	}

	/* A job that does not exist. */
	ghost.id = 999;
	ghost.peer_base = 20;
	assert_int_equal(push(t, &ghost, 0, &b0, INA_BLOCK_END, w0), 0);
	assert_int_equal(send_ctl(t, &ghost, INA_T_FIN, 0), 0);
	assert_int_equal(send_ctl(t, &ghost, INA_T_LEAVE, 0), 0);
	assert_int_equal(st->drop[PDROP_UNKNOWN_JOB], 3);

	/* Data from a rank that has not joined. */
	join(t, &k, 0);
	b = b0;
	b.tensor_len = 8;
	assert_int_equal(push(t, &k, 1, &b, INA_BLOCK_END, w1), 0);
	assert_int_equal(st->drop[PDROP_NOT_JOINED], 1);
	assert_int_equal(push(t, &k, 0, &b, INA_BLOCK_END, w0), 0);
	join(t, &k, 1);
	assert_int_equal(push(t, &k, 1, &b, INA_BLOCK_END, w1), 1);
	take_one(t, &g);
	{
		float want[4];

		fadd(want, w0, 4, 1);
		fadd(want, w1, 4, 0);
		check_result(&g, &k, &b, INA_BLOCK_END, want);
		check_fanout(&g, &k);
	}

	/* Types only the switch sends, sent to the switch. */
	h = base_hdr(&j, INA_T_JOIN_ACK, INA_RANK_SWITCH);
	ina_wire_encode_join(j.world, j.lanes, j.max_block, payload);
	assert_int_equal(rx(t, mk_pkt(t, peer_of(&j, 0), &h, payload, 8)), 0);
	b = b0;
	h = data_hdr(&j, INA_RANK_SWITCH, &b, INA_BLOCK_END, 0, 1);
	h.type = INA_T_RESULT;
	wc_put_words(payload, w0, 4);
	assert_int_equal(rx(t, mk_pkt(t, peer_of(&j, 0), &h, payload, 16)), 0);
	h = base_hdr(&j, INA_T_WAIT, INA_RANK_SWITCH);
	memset(payload, 0, sizeof(payload));
	assert_int_equal(rx(t, mk_pkt(t, peer_of(&j, 0), &h, payload, INA_WAIT_PAYLOAD)), 0);
	assert_int_equal(send_ctl(t, &j, INA_T_FIN_ACK, INA_RANK_SWITCH), 0);
	h = base_hdr(&j, INA_T_ERROR, INA_RANK_SWITCH);
	assert_int_equal(rx(t, mk_pkt(t, peer_of(&j, 0), &h, "no", 2)), 0);
	assert_int_equal(st->drop[PDROP_UNEXPECTED], 5);

	for (int r = 1; r < INA_WIRE_REASON_MAX; r++)
		assert_int_equal(st->drop_wire[r], 0);
	assert_int_equal(st->drop[PDROP_NO_BUFFER], 0);
	assert_int_equal(st->drop[PDROP_AFTER_FIN], 0);
	assert_int_equal(pipeline_nb_jobs(t->p), 2);
	done(t);
}

/* Sends 'h' (payload 'payload' of 'size' bytes, packet cut to 'len' bytes when
 * not 0) from rank 'rank' of 'j' and expects it dropped for 'reason'. */
static void
expect_wire_drop(struct t *t, const struct tjob *j, uint16_t rank, const struct ina_hdr *h,
		 const void *payload, size_t size, uint32_t len, enum ina_wire_reason reason)
{
	const struct pipeline_stats *st = pipeline_stats(t->p);
	uint64_t before[INA_WIRE_REASON_MAX], drops_before[PDROP_MAX];
	struct ina_pkt *pkt = mk_pkt(t, peer_of(j, rank), h, payload, size);

	memcpy(before, st->drop_wire, sizeof(before));
	memcpy(drops_before, st->drop, sizeof(drops_before));
	if (len)
		pkt->len = len;
	assert_int_equal(rx(t, pkt), 0);
	for (int r = 0; r < INA_WIRE_REASON_MAX; r++) {
		if (st->drop_wire[r] != before[r] + (r == (int)reason))
			fail_msg("expected a drop for %s, counter %s went %llu -> %llu",
				 ina_wire_reason_name(reason), ina_wire_reason_name(r),
				 (unsigned long long)before[r],
				 (unsigned long long)st->drop_wire[r]);
	}
	assert_memory_equal(drops_before, st->drop, sizeof(drops_before));
}

static void
test_pipeline_malformed(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 901,
			  .token = 0x9090,
			  .world = 3,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	const struct blk b = { .tensor_id = 4, .round = 1, .tensor_len = 32, .block_size = 4 };
	const float w0[4] = { 1, 1, 1, 1 }, w1[4] = { 2, 2, 2, 2 }, w2[4] = { 4, 4, 4, 4 };
	const float sum[4] = { 7, 7, 7, 7 };
	uint8_t pl[64];
	struct ina_hdr good, h;
	struct wc_got g;

	start(t);
	join_all(t, &j);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, w0), 0);
	good = data_hdr(&j, 1, &b, INA_BLOCK_END, 0, 1);
	memset(pl, 0, sizeof(pl));
	wc_put_words(pl, w1, 4);
	for (int i = 4; i < 16; i++)
		wc_put_words(pl + 4 * i, &w2[0], 1);

	h = good;
	expect_wire_drop(t, &j, 1, &h, pl, 16, INA_HDR_SIZE - 16, INA_WIRE_TRUNCATED);
	h.version = 3;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_BAD_VERSION);
	h = good;
	h.type = 0;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_BAD_TYPE);
	h = good;
	h.flags = 0x80;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_BAD_FLAGS);
	h = good;
	h.bound = 0xbf800000u; /* -1.0f */
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_BAD_BOUND);
	h = good;
	h.encoding = 7;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_BAD_ENCODING);
	h = good;
	expect_wire_drop(t, &j, 1, &h, pl, 12, 0, INA_WIRE_BAD_LENGTH);
	h = good;
	h.n_elems = 3;
	expect_wire_drop(t, &j, 1, &h, pl, 12, 0, INA_WIRE_BAD_BLOCK_SIZE);
	h = good;
	h.block = 8;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_BLOCK_PAST_TENSOR);
	h = good;
	h.next = 0;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_NEXT_NOT_PAST_BLOCK);
	h = good;
	h.next = 8;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_NEXT_PAST_TENSOR);
	h = good;
	h.block = 1;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_BLOCK_NOT_IN_LANE);
	h = good;
	h.next = 3;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_NEXT_NOT_IN_LANE);
	h = good;
	h.epoch = j.epoch + 1;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_WRONG_EPOCH);
	h.epoch = 0;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_WRONG_EPOCH);
	h = good;
	h.token ^= 1;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_WRONG_TOKEN);
	h = good;
	h.rank = 3;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_RANK_PAST_WORLD);
	h = good;
	h.lane = 2;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_LANE_PAST_LANES);
	h = good;
	h.encoding = INA_ENC_I32;
	expect_wire_drop(t, &j, 1, &h, pl, 16, 0, INA_WIRE_WRONG_ENCODING);
	h = good;
	h.block_size = 8;
	h.n_elems = 8;
	expect_wire_drop(t, &j, 1, &h, pl, 32, 0, INA_WIRE_BLOCK_TOO_BIG);
	h = base_hdr(&j, INA_T_FIN, 1);
	expect_wire_drop(t, &j, 1, &h, pl, 4, 0, INA_WIRE_BAD_LENGTH);
	h = base_hdr(&j, INA_T_JOIN, 1);
	ina_wire_encode_join(0, 2, 4, pl + 32);
	expect_wire_drop(t, &j, 1, &h, pl + 32, 8, 0, INA_WIRE_BAD_JOIN);
	assert_int_equal(pipeline_stats(t->p)->rx_pkts, 3 + 1 + 22);
	assert_int_equal(pipeline_stats(t->p)->tx_pkts, 3);

	/* The open block saw none of it. */
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, w1), 0);
	assert_int_equal(push(t, &j, 2, &b, INA_BLOCK_END, w2), 1);
	take_one(t, &g);
	check_result(&g, &j, &b, INA_BLOCK_END, sum);
	assert_int_equal(pipeline_stats(t->p)->duplicates, 0);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	done(t);
}

/* ---- Many rounds, many jobs ---- */

static void
test_pipeline_slot_reuse(void **state)
{
	static const uint16_t sizes[3] = { 4, 3, 2 };
	static const uint32_t lens[4] = { 10, 7, 12, 1 };
	struct t *t = *state;
	struct tjob j = { .id = 1001,
			  .token = 0xa0a0,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct round_in *ri = calloc(1, sizeof(*ri));
	struct lane_run lane = { .lane = 0 };
	uint64_t blocks = 0;

	assert_non_null(ri);
	start(t);
	join_all(t, &j);
	ri->j = &j;
	ri->rng = 0x1234567;
	for (uint32_t k = 0; k < 50; k++) {
		ri->tensor_id = k % 2 + 1;
		ri->round = k + 1;
		ri->block_size = sizes[k % 3];
		ri->tensor_len = lens[k % 4];
		make_data(ri, k % 5 == 0 ? 0.0 : 0.6);
		run_round(t, ri, &lane);
		blocks = pipeline_stats(t->p)->results;
	}
	/* Every round traveled at least its first block, and both version bits. */
	assert_true(blocks >= 50);
	assert_int_equal(pipeline_stats(t->p)->duplicates, 0);
	for (int d = 0; d < PDROP_MAX; d++)
		assert_int_equal(pipeline_stats(t->p)->drop[d], 0);
	fin_all(t, &j);
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	free(ri);
	done(t);
}

static void
test_pipeline_reference_sum(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1101,
			  .token = 0xb0b0b0b0b0b0b0b0ull,
			  .world = 4,
			  .lanes = 3,
			  .max_block = 16,
			  .enc = INA_ENC_F32 };
	struct round_in *ri = calloc(1, sizeof(*ri));
	struct lane_run lanes[3] = { { .lane = 0 }, { .lane = 1 }, { .lane = 2 } };

	assert_non_null(ri);
	start(t);
	join_all(t, &j);
	ri->j = &j;
	ri->rng = 42;
	for (uint32_t k = 0; k < 8; k++) {
		ri->tensor_id = 5;
		ri->round = 100 + k;
		ri->block_size = k % 2 ? 16 : 8;
		ri->tensor_len = 200 - 7 * k;
		make_data(ri, 0.1 + 0.12 * k);
		run_round(t, ri, lanes);
	}
	assert_int_equal(pipeline_stats(t->p)->duplicates, 0);
	for (int d = 0; d < PDROP_MAX; d++)
		assert_int_equal(pipeline_stats(t->p)->drop[d], 0);
	free(ri);
	done(t);
}

/* JOIN of 'j' rank 'rank' with 'weight', answered with a JOIN_ACK granting
 * 'grant' lanes (flagged GRANT when fewer than j->lanes asked). */
static void
join_granted(struct t *t, struct tjob *j, uint16_t rank, uint8_t weight, uint16_t grant)
{
	uint16_t world, lanes, max_block;
	struct ina_pkt *in = mk_join_as(t, j, rank, j->world, j->lanes, j->max_block, j->enc,
					j->token);
	struct wc_got g;

	ina_wire_join_set_weight(in->data + INA_HDR_SIZE, weight);
	assert_int_equal(rx(t, in), 1);
	take_one(t, &g);
	assert_int_equal(g.h.type, INA_T_JOIN_ACK);
	if (j->epoch)
		assert_int_equal(g.h.epoch, j->epoch);
	j->epoch = g.h.epoch;
	check_from_switch(&g, j, INA_T_JOIN_ACK);
	assert_int_equal(g.h.flags, grant < j->lanes ? INA_F_GRANT : 0);
	ina_wire_decode_join(g.payload, &world, &lanes, &max_block);
	assert_int_equal(lanes, grant);
	assert_int_equal(world, j->world);
	assert_int_equal(ina_wire_join_weight(g.payload), weight);
}

/* --share fair without give-back (--share-wait-ms 0): a job asking more
 * than its share is admitted with its share (GRANT), every rank hears the
 * same grant, a weight that differs
 * between ranks is a mismatch, --share-total keeps room for jobs to come,
 * a share under --share-min-slots is refused, and a granted job's rounds
 * sum exactly on its fewer lanes. */
static void
test_pipeline_fair_share(void **state)
{
	struct t *t = *state;
	struct tjob a = { .id = 151,
			  .token = 0xa1,
			  .world = 2,
			  .lanes = 8,
			  .max_block = 4,
			  .enc = INA_ENC_F32,
			  .peer_base = 0 };
	struct tjob b = a, c = a, d = a, e = a;
	struct round_in *ri = calloc(1, sizeof(*ri));
	struct lane_run lanes[8];
	struct wc_got g;

	assert_non_null(ri);
	b.id = 152, b.token = 0xb2, b.peer_base = 2;
	c.id = 153, c.token = 0xc3, c.peer_base = 4, c.lanes = 2;
	d.id = 154, d.token = 0xd4, d.peer_base = 6;
	e.id = 155, e.token = 0xe5, e.peer_base = 8;
	t->cfg.nb_slots = 12;
	t->cfg.max_jobs = 8;
	t->cfg.share.policy = SHARE_FAIR;
	t->cfg.share_wait_ns = 0; /* no give-back here: test_share_reshape */
	start(t);
	/* Alone: all it asks. */
	join_granted(t, &a, 0, 1, 8);
	join_granted(t, &a, 1, 1, 8);
	/* Its share with a is 6, but only 4 slots are free: 4 lanes. */
	join_granted(t, &b, 0, 1, 4);
	join_granted(t, &b, 1, 1, 4);
	join_granted(t, &b, 1, 1, 4); /* a repeated JOIN: the same grant */
	assert_int_equal(pipeline_free_slots(t->p), 0);
	assert_int_equal(pipeline_stats(t->p)->jobs_granted, 1);
	/* A rank of b with another weight: a mismatch. */
	{
		struct ina_pkt *in = mk_join_as(t, &b, 1, b.world, b.lanes, b.max_block, b.enc,
						b.token);

		ina_wire_join_set_weight(in->data + INA_HDR_SIZE, 3);
		assert_int_equal(rx(t, in), 1);
		take_one(t, &g);
		check_error(&g, b.id, b.token, INA_WERR_MISMATCH);
		assert_msg_has(&g, "weight 3");
	}
	/* c: no slot left: refused, saying why. */
	assert_int_equal(send_join(t, &c, 0), 1);
	take_one(t, &g);
	check_error(&g, c.id, c.token, INA_WERR_NO_SLOTS);
	assert_msg_has(&g, "fair share");

	/* b's rounds on its 4 lanes sum exactly. */
	b.lanes = 4;
	ri->j = &b;
	ri->rng = 7;
	for (uint16_t l = 0; l < 8; l++)
		memset(&lanes[l], 0, sizeof(lanes[l])), lanes[l].lane = l;
	for (uint32_t k = 0; k < 4; k++) {
		ri->tensor_id = 1;
		ri->round = k;
		ri->block_size = 4;
		ri->tensor_len = 61 - 3 * k;
		make_data(ri, 0.3 + 0.1 * k);
		run_round(t, ri, lanes);
	}
	b.lanes = 8;
	fin_all(t, &a);
	fin_all(t, &b);
	assert_int_equal(pipeline_free_slots(t->p), 12);
	pipeline_destroy(t->p);

	/* Three jobs expected, 12 slots: 4 each, whatever the order. */
	t->cfg.share.total = 3;
	t->cfg.share.min_slots = 2;
	start(t);
	a.epoch = b.epoch = c.epoch = 0;
	join_granted(t, &a, 0, 1, 4);
	join_granted(t, &b, 0, 1, 4);
	/* c asks 2: all of it. */
	join_granted(t, &c, 0, 1, 2);
	/* d: its share among four is 3 (2 for c, 10 / 3 for the others), 2 free:
	 * at least the minimum of 2, so 2 lanes. */
	join_granted(t, &d, 0, 1, 2);
	assert_int_equal(pipeline_free_slots(t->p), 0);
	/* e: nothing free. */
	assert_int_equal(send_join(t, &e, 0), 1);
	take_one(t, &g);
	check_error(&g, e.id, e.token, INA_WERR_NO_SLOTS);
	join_granted(t, &c, 1, 1, 2); /* a FIN needs a JOIN (5.1) */
	fin_all(t, &c);
	/* c's 2 slots back: e's share is 3, 2 free in one run, its minimum 2. */
	join_granted(t, &e, 0, 1, 2);
	join_granted(t, &a, 1, 1, 4);
	join_granted(t, &b, 1, 1, 4);
	join_granted(t, &d, 1, 1, 2);
	join_granted(t, &e, 1, 1, 2);
	fin_all(t, &a);
	fin_all(t, &b);
	fin_all(t, &d);
	fin_all(t, &e);
	pipeline_destroy(t->p);

	/* Weights 1:2 with room for 3 of weight 1 (total 3): 12 x 1/3 = 4, then
	 * 12 x 2/4 = 6; a minimum of 7 slots refuses the second. */
	t->cfg.share.total = 3;
	t->cfg.share.min_slots = 1;
	start(t);
	a.epoch = b.epoch = 0;
	join_granted(t, &a, 0, 1, 4);
	join_granted(t, &b, 0, 2, 6);
	join_granted(t, &a, 1, 1, 4);
	join_granted(t, &b, 1, 2, 6);
	fin_all(t, &a);
	fin_all(t, &b);
	pipeline_destroy(t->p);
	t->cfg.share.min_slots = 7;
	start(t);
	a.epoch = 0;
	a.lanes = 12;
	assert_int_equal(send_join(t, &a, 0), 1); /* share 4 < 7 */
	take_one(t, &g);
	check_error(&g, a.id, a.token, INA_WERR_NO_SLOTS);
	a.lanes = 3;
	join_granted(t, &a, 0, 1, 3); /* asks 3 < 7: 3 is its minimum */
	join_granted(t, &a, 1, 1, 3);
	fin_all(t, &a);
	free(ri);
	done(t);
}

/* JOIN of rank 'rank' of 'j' answered with a REDIRECT to 127.0.0.1:9301. */
static void
join_redirected(struct t *t, const struct tjob *j, uint16_t rank)
{
	uint16_t world, lanes, max_block, port;
	struct tjob z = *j;
	uint32_t ip;
	struct wc_got g;

	assert_int_equal(send_join(t, j, rank), 1);
	take_one(t, &g);
	z.epoch = 0;
	check_from_switch(&g, &z, INA_T_JOIN_ACK);
	check_unicast(&g, peer_of(j, rank));
	assert_int_equal(g.h.flags, INA_F_REDIRECT);
	assert_int_equal(g.payload_size, 16);
	ina_wire_decode_join(g.payload, &world, &lanes, &max_block);
	assert_int_equal(world, j->world);
	assert_int_equal(lanes, j->lanes);
	assert_int_equal(max_block, j->max_block);
	ina_wire_decode_redirect(g.payload + 8, &ip, &port);
	assert_int_equal(ip, 0x7f000001u);
	assert_int_equal(port, 9301);
}

/* --host-aggregator: a job that finds no room (first-come: not its lanes;
 * fair: not its minimum) is sent to the host aggregator, and so are its
 * other ranks, even once room is freed; without one it stays refused.
 * --host-mode: a job gets the lanes that fit (a GRANT), refused only when
 * no slot is free. */
static void
test_pipeline_host_aggregator(void **state)
{
	struct t *t = *state;
	struct tjob a = { .id = 161,
			  .token = 0xa1,
			  .world = 2,
			  .lanes = 8,
			  .max_block = 4,
			  .enc = INA_ENC_F32,
			  .peer_base = 0 };
	struct tjob b = a, c = a, d = a;
	struct wc_got g;
	struct pipeline *bad;

	b.id = 162, b.token = 0xb2, b.peer_base = 2;
	c.id = 163, c.token = 0xc3, c.peer_base = 4, c.lanes = 4;
	d.id = 164, d.token = 0xd4, d.peer_base = 6;
	t->cfg.nb_slots = 12;
	t->cfg.max_jobs = 8;
	/* An address needs a port; a host aggregator sends no job on. */
	t->cfg.host_aggregator_ipv4 = 0x7f000001u;
	assert_null(pipeline_create(&t->cfg));
	t->cfg.host_aggregator_port = 9301;
	t->cfg.host_mode = 1;
	bad = pipeline_create(&t->cfg);
	assert_null(bad);
	t->cfg.host_mode = 0;
	start(t);
	join_all(t, &a);
	join_redirected(t, &b, 0);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	assert_int_equal(pipeline_free_slots(t->p), 4);
	fin_all(t, &a);
	assert_int_equal(pipeline_free_slots(t->p), 12);
	/* Room now, but b's rank 0 went to the aggregator: rank 1 follows. */
	join_redirected(t, &b, 1);
	join_redirected(t, &b, 0);
	/* Another job gets in. */
	join_all(t, &c);
	assert_int_equal(pipeline_stats(t->p)->jobs_redirected, 3);
	assert_int_equal(pipeline_stats(t->p)->jobs_refused, 0);
	/* b is remembered for a minute, then it may run here. */
	t->now += 61 * SEC;
	fin_all(t, &c);
	b.epoch = 0;
	join_all(t, &b);
	fin_all(t, &b);
	pipeline_destroy(t->p);

	/* fair, minimum 8 slots: d's share with a is 6: the aggregator. */
	t->cfg.share.policy = SHARE_FAIR;
	t->cfg.share_wait_ns = 0;
	t->cfg.share.min_slots = 8;
	start(t);
	a.epoch = 0;
	join_all(t, &a);
	join_redirected(t, &d, 0);
	fin_all(t, &a);
	pipeline_destroy(t->p);

	/* No aggregator: refused as before. */
	t->cfg.share.policy = SHARE_FIRST_COME;
	t->cfg.share.min_slots = 1;
	t->cfg.host_aggregator_ipv4 = 0;
	t->cfg.host_aggregator_port = 0;
	start(t);
	a.epoch = 0;
	join_all(t, &a);
	d.epoch = 0;
	assert_int_equal(send_join(t, &d, 0), 1);
	take_one(t, &g);
	check_error(&g, d.id, d.token, INA_WERR_NO_SLOTS);
	assert_int_equal(pipeline_stats(t->p)->jobs_redirected, 0);
	fin_all(t, &a);
	pipeline_destroy(t->p);

	/* Host mode: 8, then the 4 that fit, then nothing. */
	t->cfg.host_mode = 1;
	start(t);
	a.epoch = b.epoch = 0;
	join_granted(t, &a, 0, 0, 8);
	join_granted(t, &b, 0, 0, 4);
	assert_int_equal(send_join(t, &d, 0), 1);
	take_one(t, &g);
	check_error(&g, d.id, d.token, INA_WERR_NO_SLOTS);
	assert_int_equal(pipeline_stats(t->p)->jobs_granted, 1);
	done(t);
}

static void
test_pipeline_two_jobs(void **state)
{
	struct t *t = *state;
	struct tjob a = { .id = 1201,
			  .token = 0xaaaa5555,
			  .world = 2,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32,
			  .peer_base = 0 };
	struct tjob b = { .id = 1202,
			  .token = 0xbbbb6666,
			  .world = 3,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32,
			  .peer_base = 8 };
	struct tjob forged = a;
	struct blk k = { .tensor_id = 1, .round = 1, .tensor_len = 16, .block_size = 4 };
	const float a0[4] = { 1, 2, 3, 4 }, a1[4] = { 0.5f, 0.5f, 0.5f, 0.5f };
	const float b0[4] = { 10, 20, 30, 40 }, b1[4] = { -1, -2, -3, -4 };
	const float b2[4] = { 0.25f, 0.25f, 0.25f, 0.25f };
	const float sa[4] = { 1.5f, 2.5f, 3.5f, 4.5f }, sb[4] = { 9.25f, 18.25f, 27.25f, 36.25f };
	struct blk k1 = k;
	struct wc_got g;

	start(t);
	join(t, &a, 0);
	join(t, &b, 0);
	join(t, &b, 1);
	join(t, &a, 1);
	join(t, &b, 2);
	assert_int_not_equal(a.epoch, b.epoch);
	assert_int_equal(pipeline_free_slots(t->p), 12);

	assert_int_equal(push(t, &a, 0, &k, 2, a0), 0);
	assert_int_equal(push(t, &b, 0, &k, INA_BLOCK_END, b0), 0);
	assert_int_equal(push(t, &b, 1, &k, INA_BLOCK_END, b1), 0);

	/* Job a's rank 1 claims job b with a's token: dropped, nothing counted. */
	forged.id = b.id;
	assert_int_equal(push(t, &forged, 1, &k, INA_BLOCK_END, a1), 0);
	forged.epoch = b.epoch;
	assert_int_equal(push(t, &forged, 1, &k, INA_BLOCK_END, a1), 0);
	assert_int_equal(pipeline_stats(t->p)->drop_wire[INA_WIRE_WRONG_TOKEN], 2);

	k1.lane = 1;
	k1.block = 1;
	assert_int_equal(push(t, &b, 2, &k1, INA_BLOCK_END, NULL), 0);
	assert_int_equal(push(t, &a, 1, &k1, INA_BLOCK_END, NULL), 0);
	assert_int_equal(push(t, &a, 1, &k, INA_BLOCK_END, a1), 1);
	take_one(t, &g);
	check_result(&g, &a, &k, 2, sa);
	check_fanout(&g, &a);
	assert_int_equal(push(t, &b, 2, &k, INA_BLOCK_END, b2), 1);
	take_one(t, &g);
	check_result(&g, &b, &k, INA_BLOCK_END, sb);
	check_fanout(&g, &b);
	assert_int_equal(push(t, &b, 1, &k1, INA_BLOCK_END, NULL), 0);
	assert_int_equal(push(t, &a, 0, &k1, INA_BLOCK_END, NULL), 1);
	take_one(t, &g);
	check_result(&g, &a, &k1, INA_BLOCK_END, NULL);
	check_fanout(&g, &a);
	assert_int_equal(push(t, &b, 0, &k1, INA_BLOCK_END, NULL), 1);
	take_one(t, &g);
	check_result(&g, &b, &k1, INA_BLOCK_END, NULL);
	check_fanout(&g, &b);

	/* Job b ends; job a goes on with block 2 and its own slots. */
	fin_all(t, &b);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	assert_int_equal(pipeline_free_slots(t->p), 14);
	k.block = 2;
	k.ver = 1;
	assert_int_equal(push(t, &a, 1, &k, INA_BLOCK_END, NULL), 0);
	assert_int_equal(push(t, &a, 0, &k, INA_BLOCK_END, a0), 1);
	take_one(t, &g);
	check_result(&g, &a, &k, INA_BLOCK_END, a0);
	check_fanout(&g, &a);
	done(t);
}

/* ---- End of a job ---- */

static void
test_pipeline_fin(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1301,
			  .token = 0x1313,
			  .world = 3,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct tjob l = j;
	struct blk b = { .tensor_id = 1, .round = 1, .tensor_len = 4, .block_size = 4 };
	const float v[4] = { 1, 2, 3, 4 }, s[4] = { 3, 6, 9, 12 };
	const struct pipeline_stats *st;
	struct wc_got r, g;
	uint64_t t0;

	start(t);
	st = pipeline_stats(t->p);
	join_all(t, &j);
	assert_int_equal(pipeline_free_slots(t->p), 14);
	fin(t, &j, 0);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	/* Data from a rank after its FIN. */
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(st->drop[PDROP_AFTER_FIN], 1);
	/* A repeated FIN (its ACK was lost) is acked again. */
	fin(t, &j, 0);
	fin(t, &j, 1);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	fin(t, &j, 2);
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	assert_int_equal(pipeline_free_slots(t->p), 16);
	assert_int_equal(st->fins, 4);
	assert_int_equal(st->jobs_freed, 1);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(st->drop[PDROP_UNKNOWN_JOB], 1);

	/* Linger: some ranks FIN, the shadows still answer, and the job is
	 * freed once it has been silent for linger_ns (every packet of the
	 * job restarts the linger). */
	l.id = 1302;
	join_all(t, &l);
	assert_int_not_equal(l.epoch, j.epoch);
	assert_int_equal(push(t, &l, 0, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(push(t, &l, 1, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(push(t, &l, 2, &b, INA_BLOCK_END, v), 1);
	take_one(t, &r);
	check_result(&r, &l, &b, INA_BLOCK_END, s);
	t0 = t->now;
	fin(t, &l, 0);
	t->now += LINGER_NS / 2;
	fin(t, &l, 1);
	pipeline_tick(t->p, t->now);
	assert_int_equal(push(t, &l, 2, &b, INA_BLOCK_END, v), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&l, 2));
	assert_memory_equal(g.bytes, r.bytes, r.len);
	t0 = t->now;
	pipeline_tick(t->p, t0 + LINGER_NS - 1);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	pipeline_tick(t->p, t0 + LINGER_NS);
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	assert_int_equal(pipeline_free_slots(t->p), 16);
	assert_int_equal(st->jobs_freed, 2);
	assert_int_equal(st->jobs_expired, 0);
	done(t);
}

static void
test_pipeline_idle_timeout(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1401,
			  .token = 0x1414,
			  .world = 2,
			  .lanes = 3,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 1, .round = 1, .tensor_len = 4, .block_size = 4 };
	const float v[4] = { 1, 2, 3, 4 };
	uint64_t t0;

	start(t);
	join_all(t, &j);
	t0 = t->now;
	pipeline_tick(t->p, t0 + IDLE_NS - 1);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	/* Any packet of the job keeps it alive. */
	t->now = t0 + IDLE_NS / 2;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v), 0);
	pipeline_tick(t->p, t0 + IDLE_NS);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	pipeline_tick(t->p, t->now + IDLE_NS - 1);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	assert_int_equal(pipeline_stats(t->p)->jobs_expired, 0);
	pipeline_tick(t->p, t->now + IDLE_NS);
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	assert_int_equal(pipeline_free_slots(t->p), 16);
	assert_int_equal(pipeline_stats(t->p)->jobs_expired, 1);
	assert_int_equal(pipeline_stats(t->p)->jobs_freed, 1);
	pipeline_destroy(t->p);
	t->p = NULL;

	/* job_idle_ns 0: never. */
	t->cfg.job_idle_ns = 0;
	start(t);
	j.epoch = 0;
	join_all(t, &j);
	pipeline_tick(t->p, t->now + 1000 * SEC);
	assert_int_equal(pipeline_nb_jobs(t->p), 1);
	assert_int_equal(pipeline_stats(t->p)->jobs_expired, 0);
	done(t);
}

static void
test_pipeline_leave(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1501,
			  .token = 0x1515,
			  .world = 4,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct tjob solo = { .id = 1502,
			     .token = 0x1516,
			     .world = 1,
			     .lanes = 1,
			     .max_block = 4,
			     .enc = INA_ENC_F32,
			     .peer_base = 10 };
	struct blk b = { .tensor_id = 1, .round = 1, .tensor_len = 16, .block_size = 4 };
	const float v[4] = { 1, 2, 3, 4 };
	struct wc_got g;

	start(t);
	join_all(t, &j);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(send_ctl(t, &j, INA_T_LEAVE, 2), 1);
	take_one(t, &g);
	check_error(&g, j.id, j.token, INA_WERR_LEFT);
	assert_true(g.fanout);
	assert_int_equal(g.dst_mask, 0xb);
	assert_true(ina_peer_equal(&g.dsts[0], peer_of(&j, 0)));
	assert_true(ina_peer_equal(&g.dsts[1], peer_of(&j, 1)));
	assert_true(ina_peer_equal(&g.dsts[3], peer_of(&j, 3)));
	assert_msg_has(&g, "job 1501");
	assert_msg_has(&g, "rank 2");
	assert_int_equal(pipeline_stats(t->p)->leaves, 1);
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	assert_int_equal(pipeline_free_slots(t->p), 16);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_UNKNOWN_JOB], 1);

	/* The only rank leaves: nobody to tell. */
	join(t, &solo, 0);
	assert_int_equal(send_ctl(t, &solo, INA_T_LEAVE, 0), 0);
	assert_int_equal(pipeline_nb_jobs(t->p), 0);
	assert_int_equal(pipeline_free_slots(t->p), 16);
	assert_int_equal(pipeline_stats(t->p)->jobs_freed, 2);
	done(t);
}

/* Input buffers too small for the answer, and an output pool that runs dry:
 * the state still advances, the drop is counted, retransmissions recover,
 * and every buffer goes back to its pool. */
static void
test_pipeline_no_buffer(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1601,
			  .token = 0x1616,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 1, .round = 1, .tensor_len = 4, .block_size = 4 };
	struct ina_pkt_pool *small = ina_pkt_pool_create(8, INA_HDR_SIZE + 8);
	struct ina_pkt_pool *outp = ina_pkt_pool_create(2, BUF_SIZE);
	struct ina_pkt *held[2];
	struct wc_got g;

	assert_non_null(small);
	assert_non_null(outp);
	t->in_pool = small;
	t->cfg.pool = outp;
	start(t);
	join_all(t, &j);
	assert_int_equal(ina_pkt_pool_avail(outp), 2);

	/* A header-only result does not fit a 64-byte input: it comes from outp. */
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, NULL), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, NULL), 1);
	assert_true(t->out[0]->pool == outp);
	take_one(t, &g);
	check_result(&g, &j, &b, INA_BLOCK_END, NULL);
	check_fanout(&g, &j);
	/* So does an ERROR, still to its sender. */
	assert_int_equal(rx(t, mk_join_as(t, &j, 1, 3, 1, 4, INA_ENC_F32, j.token)), 1);
	assert_true(t->out[0]->pool == outp);
	take_one(t, &g);
	check_error(&g, j.id, j.token, INA_WERR_MISMATCH);
	check_unicast(&g, peer_of(&j, 1));

	/* outp runs dry. */
	held[0] = ina_pkt_alloc(outp);
	held[1] = ina_pkt_alloc(outp);
	assert_non_null(held[0]);
	assert_non_null(held[1]);
	b.round = 2;
	b.ver = 1;
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, NULL), 0);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, NULL), 0);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_NO_BUFFER], 1);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, NULL), 0);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_NO_BUFFER], 2);
	ina_pkt_free(held[0]);
	assert_int_equal(push(t, &j, 1, &b, INA_BLOCK_END, NULL), 1);
	take_one(t, &g);
	check_result(&g, &j, &b, INA_BLOCK_END, NULL);
	check_unicast(&g, peer_of(&j, 1));
	assert_int_equal(pipeline_stats(t->p)->shadow_replies, 1);
	ina_pkt_free(held[1]);

	assert_int_equal(ina_pkt_pool_avail(small), 8);
	assert_int_equal(ina_pkt_pool_avail(outp), 2);
	pipeline_destroy(t->p);
	t->p = NULL;
	ina_pkt_pool_destroy(small);
	ina_pkt_pool_destroy(outp);
	done(t);
}

/* ---- Edge cases that found bugs ---- */

/* Time is an input and 0 is a valid time (a simulator starts there): the WAIT
 * rate limit must hold at t = 0 as at any other time. */
static void
test_pipeline_wait_rate_limit_at_time_zero(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1701,
			  .token = 0x1717,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 1, .round = 1, .tensor_len = 4, .block_size = 4 };
	const float v[4] = { 1, 2, 3, 4 };
	struct wc_got g;

	t->now = 0;
	start(t);
	join_all(t, &j);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v), 1);
	take_one(t, &g);
	check_from_switch(&g, &j, INA_T_WAIT);
	/* Same time, same slot: within the interval, so no second WAIT. */
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(pipeline_stats(t->p)->waits, 1);
	done(t);
}

/* A packet with the version bit of a half that never held a block matches
 * nothing: it counts as no_match, whatever tensor and round it names. */
static void
test_pipeline_unused_half_is_no_match(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1801,
			  .token = 0x1818,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 0, .round = 0, .tensor_len = 8, .block_size = 4, .ver = 1 };
	const float v[4] = { 1, 2, 3, 4 };

	start(t);
	join_all(t, &j);
	assert_int_equal(push(t, &j, 0, &b, INA_BLOCK_END, v), 0);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_SHAPE], 0);
	assert_int_equal(pipeline_stats(t->p)->drop[PDROP_NO_MATCH], 1);
	done(t);
}

/* ---- Replica and failover: a primary and its replica side by side. ---- */

#define PRIMARY_PEER (&peers[NB_PEERS - 2])
#define REPLICA_PEER (&peers[NB_PEERS - 1])

/* A primary replicating to REPLICA_PEER and a replica of PRIMARY_PEER; the
 * packets go to the primary. */
static void
start_pair(struct t *t)
{
	struct pipeline_config c = t->cfg;

	c.replica = *REPLICA_PEER;
	t->prim = pipeline_create(&c);
	assert_non_null(t->prim);
	c = t->cfg;
	c.primary = *PRIMARY_PEER;
	t->repl = pipeline_create(&c);
	assert_non_null(t->repl);
	t->p = t->prim;
}

static struct ina_pkt *
mk_standby_join(struct t *t, const struct tjob *j, uint16_t rank, uint32_t epoch)
{
	struct ina_hdr h = base_hdr(j, INA_T_JOIN, rank);
	uint8_t payload[sizeof(struct ina_wire_join)];

	h.flags = INA_F_STANDBY;
	h.epoch = epoch;
	ina_wire_encode_join(j->world, j->lanes, j->max_block, payload);
	return mk_pkt(t, peer_of(j, rank), &h, payload, sizeof(payload));
}

/* A standby JOIN from 'rank' with the job's epoch, and its STANDBY JOIN_ACK. */
static void
standby_join(struct t *t, const struct tjob *j, uint16_t rank)
{
	uint16_t world, lanes, max_block;
	struct wc_got g;

	assert_int_equal(rx(t, mk_standby_join(t, j, rank, j->epoch)), 1);
	take_one(t, &g);
	check_from_switch(&g, j, INA_T_JOIN_ACK);
	assert_int_equal(g.h.flags, INA_F_STANDBY);
	check_unicast(&g, peer_of(j, rank));
	ina_wire_decode_join(g.payload, &world, &lanes, &max_block);
	assert_int_equal(world, j->world);
	assert_int_equal(lanes, j->lanes);
	assert_int_equal(max_block, j->max_block);
}

/* A packet the switch sent ('g'), arriving at the next switch from 'src'. */
static struct ina_pkt *
resend(struct t *t, const struct wc_got *g, const struct ina_peer *src)
{
	return mk_pkt(t, src, &g->h, g->payload, g->payload_size);
}

/* A REPL of block 'b' from the primary, to the replica, for 'rank'. */
static void
check_repl(const struct wc_got *g, const struct tjob *j, uint16_t rank, const struct blk *b,
	   uint32_t next, const void *vals)
{
	check_block(g, j, INA_T_REPL, rank, b, next, vals);
	check_unicast(g, REPLICA_PEER);
}

/* 'g' is 'r' as the replica sends it on: the same bytes but type and rank. */
static void
check_sent_on(const struct wc_got *g, const struct wc_got *r)
{
	assert_int_equal(g->len, r->len);
	assert_int_equal(g->h.type, INA_T_RESULT);
	assert_int_equal(g->h.rank, INA_RANK_SWITCH);
	assert_memory_equal(g->bytes + 2, r->bytes + 2, 10);
	assert_memory_equal(g->bytes + 14, r->bytes + 14, r->len - 14);
}

static struct ina_pkt *
mk_failover(struct t *t, const struct tjob *j, uint16_t rank, uint32_t epoch)
{
	struct ina_hdr h = base_hdr(j, INA_T_FAILOVER, rank);

	h.epoch = epoch;
	return mk_pkt(t, peer_of(j, rank), &h, NULL, 0);
}

/* The replica's announcement of epoch j->epoch. */
static void
check_announce(const struct wc_got *g, const struct tjob *j)
{
	check_from_switch(g, j, INA_T_FAILOVER);
	assert_int_equal(g->len, INA_HDR_SIZE);
	assert_int_equal(g->h.flags, 0);
	assert_int_equal(g->h.lane, 0);
	assert_int_equal(g->h.block, 0);
}

/* Block 'b' completes at the primary (every rank sends 'vals[r]' with next
 * 'next'); its REPL reaches the replica, which fans it out. Returns the
 * RESULT in 'r'. */
static void
replicate_block(struct t *t, const struct tjob *j, const struct blk *b, uint32_t next,
		const float (*vals)[4], const float *sum, struct wc_got *r)
{
	struct wc_got g;

	t->p = t->prim;
	for (uint16_t k = 0; k < j->world; k++)
		assert_int_equal(push(t, j, k, b, next, vals ? vals[k] : NULL), k + 1 == j->world);
	take_one(t, &g);
	check_repl(&g, j, INA_RANK_ALL, b, next, sum);
	t->p = t->repl;
	assert_int_equal(rx(t, resend(t, &g, PRIMARY_PEER)), 1);
	take_one(t, r);
	check_result(r, j, b, next, sum);
	check_fanout(r, j);
	check_sent_on(r, &g);
}

/*
 * A primary and its replica, f32: every result leaves the primary as one
 * REPL, which the replica stores and fans out as the RESULT; a shadow reply
 * goes the same way to one rank. Standby drops DATA. The primary dies with a
 * block half aggregated; a FAILOVER makes the replica take over under a new
 * epoch, announced to every rank. Its lanes stand where the last stored
 * results left them: each rank's retransmission of a stored block is
 * answered from the shadow, the half-aggregated block is aggregated again at
 * the replica, each contribution once, bit for bit, and a lane whose round
 * ended opens for the next round. The primary's REPLs and old-epoch DATA
 * no longer count.
 */
static void
test_pipeline_replica_takeover(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 2001,
			  .token = 0x2020,
			  .world = 3,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct blk b0 = { .tensor_id = 7,
			  .round = 0,
			  .tensor_len = 16,
			  .block_size = 4,
			  .lane = 0,
			  .block = 0 };
	struct blk b2 = b0, b1 = b0, b3 = b0, n1 = b0;
	static const float a[3][4] = { { 1.1f, -2.5f, 3e-7f, 0 },
				       { 0.3f, 0.7f, 1e7f, 0 },
				       { -1.4f, 2.5f, 1.0f, 0 } };
	static const float c[3][4] = { { 0.1f, 0.2f, 0.3f, 1e-3f },
				       { 1e8f, 3.3f, -0.3f, 7 },
				       { -1e8f, 1e-8f, 0.25f, 1.5f } };
	static const float d[3][4] = { { 5, 6, 7, 8 }, { 0.5f, 0.5f, 0.5f, 0.5f }, { 1, 2, 3, 4 } };
	static const float e[3][4] = { { 9, 9, 9, 9 }, { 2, 2, 2, 2 }, { 1e-5f, 0, 0, 0 } };
	float sa[4], sc[4], sd[4], se[4];
	const struct pipeline_stats *ps, *rs;
	struct wc_got g, ra, rd, re, rep;
	struct tjob old;
	char buf[2048];
	FILE *f;

	b1.lane = 1;
	b1.block = 1;
	b3 = b1;
	b3.block = 3;
	b3.ver = 1;
	b2.block = 2;
	b2.ver = 1;
	fadd(sa, a[0], 4, 1);
	fadd(sa, a[1], 4, 0);
	fadd(sa, a[2], 4, 0);
	fadd(sd, d[0], 4, 1);
	fadd(sd, d[1], 4, 0);
	fadd(sd, d[2], 4, 0);
	fadd(se, e[0], 4, 1);
	fadd(se, e[1], 4, 0);
	fadd(se, e[2], 4, 0);
	start_pair(t);
	ps = pipeline_stats(t->prim);
	rs = pipeline_stats(t->repl);

	/* The job joins the primary, then stands by at the replica. */
	join_all(t, &j);
	t->p = t->repl;
	for (uint16_t r = 0; r < j.world; r++)
		standby_join(t, &j, r);
	standby_join(t, &j, 1); /* a repeat is acked again */
	assert_int_equal(rs->standby_jobs, 1);
	assert_int_equal(pipeline_nb_jobs(t->repl), 1);
	/* Standing by, the replica drops DATA. */
	assert_int_equal(push(t, &j, 0, &b0, 2, a[0]), 0);
	assert_int_equal(rs->drop[PDROP_STANDBY], 1);

	/* Lane 0, block 0 and lane 1, blocks 1 and 3 (the round's end). */
	replicate_block(t, &j, &b0, 2, a, sa, &ra);
	replicate_block(t, &j, &b1, 3, d, sd, &rd);
	replicate_block(t, &j, &b3, INA_BLOCK_END, e, se, &re);
	assert_int_equal(ps->replicated, 3);
	assert_int_equal(ps->results, 3);
	assert_int_equal(rs->repl_stored, 3);
	assert_int_equal(rs->repl_sent, 3);

	/* A shadow reply at the primary: a REPL to that rank, sent on to it
	 * alone and not stored again. */
	t->p = t->prim;
	assert_int_equal(push(t, &j, 2, &b3, INA_BLOCK_END, e[2]), 1);
	take_one(t, &rep);
	check_repl(&rep, &j, 2, &b3, INA_BLOCK_END, se);
	t->p = t->repl;
	assert_int_equal(rx(t, resend(t, &rep, PRIMARY_PEER)), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 2));
	assert_memory_equal(g.bytes, re.bytes, re.len);
	assert_int_equal(rs->repl_stored, 3);
	assert_int_equal(rs->repl_sent, 4);
	/* A late copy of an older result is sent on, not stored. */
	assert_int_equal(rx(t, resend(t, &rep, PRIMARY_PEER)), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 2));
	assert_int_equal(rs->repl_sent, 5);
	/* Only the primary's REPLs count. */
	assert_int_equal(rx(t, resend(t, &rep, peer_of(&j, 0))), 0);
	assert_int_equal(rx(t, resend(t, &rep, REPLICA_PEER)), 0);
	assert_int_equal(rs->drop[PDROP_NOT_PRIMARY], 2);
	assert_int_equal(rs->repl_stored, 3);

	/* The replica's dump shows the job standing by and its stored results. */
	f = fmemopen(buf, sizeof(buf), "w");
	assert_non_null(f);
	pipeline_dump(t->repl, f);
	fclose(f);
	assert_non_null(strstr(buf, "standing by for the primary"));
	assert_non_null(strstr(buf, "lane 0: stored result: tensor 7 round 0 block 0 next 2"));
	assert_non_null(
		strstr(buf, "lane 1: stored result: tensor 7 round 0 block 3 next 4294967295"));

	/* Block 2: ranks 0 and 1 reach the primary; then it dies. */
	t->p = t->prim;
	assert_int_equal(push(t, &j, 0, &b2, INA_BLOCK_END, c[0]), 0);
	assert_int_equal(push(t, &j, 1, &b2, INA_BLOCK_END, c[1]), 0);

	/* Rank 1 reports the primary silent: the replica takes over under the
	 * next epoch and tells every rank. */
	t->p = t->repl;
	t->now += 9 * SEC; /* past the peer timeout: silence before counts not */
	old = j;
	assert_int_equal(rx(t, mk_failover(t, &j, 1, j.epoch)), 1);
	j.epoch = old.epoch + 1;
	take_one(t, &g);
	check_announce(&g, &j);
	check_fanout(&g, &j);
	assert_int_equal(rs->takeovers, 1);
	f = fmemopen(buf, sizeof(buf), "w");
	assert_non_null(f);
	pipeline_dump(t->repl, f);
	fclose(f);
	snprintf(buf + 1024, 64, "taken over from the primary (its epoch %u)", old.epoch);
	assert_non_null(strstr(buf, buf + 1024));

	/* Block 2 again, at the replica: each rank once; a repeat waits on
	 * rank 2 (not dead: its silence counts from the takeover). */
	assert_int_equal(push(t, &j, 1, &b2, INA_BLOCK_END, c[1]), 0);
	assert_int_equal(push(t, &j, 0, &b2, INA_BLOCK_END, c[0]), 0);
	assert_int_equal(push(t, &j, 1, &b2, INA_BLOCK_END, c[1]), 1);
	take_one(t, &g);
	check_from_switch(&g, &j, INA_T_WAIT);

	/* The primary's REPLs no longer count, nor DATA of its epoch: that
	 * rank is told the new epoch instead, as is a rank asking again. */
	assert_int_equal(rx(t, resend(t, &rep, PRIMARY_PEER)), 0);
	assert_int_equal(rs->drop[PDROP_TAKEN_OVER], 1);
	assert_int_equal(push(t, &old, 2, &b2, INA_BLOCK_END, c[2]), 1);
	take_one(t, &g);
	check_announce(&g, &j);
	check_unicast(&g, peer_of(&j, 2));
	assert_int_equal(rx(t, mk_failover(t, &j, 0, old.epoch)), 1);
	take_one(t, &g);
	check_announce(&g, &j);
	check_unicast(&g, peer_of(&j, 0));
	assert_int_equal(rs->announce_repeats, 2);
	assert_int_equal(rs->takeovers, 1);
	/* FIN of the old epoch is not this job's any more. */
	assert_int_equal(send_ctl(t, &old, INA_T_FIN, 0), 0);
	assert_int_equal(rs->drop_wire[INA_WIRE_WRONG_EPOCH], 1);

	/* Every rank's retransmission of a stored block: from the shadow. */
	for (uint16_t r = 0; r < j.world; r++) {
		assert_int_equal(push(t, &j, r, &b3, INA_BLOCK_END, e[r]), 1);
		take_one(t, &g);
		check_unicast(&g, peer_of(&j, r));
		check_result(&g, &j, &b3, INA_BLOCK_END, se);
	}
	assert_int_equal(push(t, &j, 2, &b0, 2, a[2]), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 2));
	check_result(&g, &j, &b0, 2, sa);
	assert_int_equal(rs->shadow_replies, 4);

	/* Rank 2 completes block 2: the sum of each rank's part once. */
	assert_int_equal(push(t, &j, 2, &b2, INA_BLOCK_END, c[2]), 1);
	take_one(t, &g);
	fadd(sc, c[1], 4, 1);
	fadd(sc, c[0], 4, 0);
	fadd(sc, c[2], 4, 0);
	check_result(&g, &j, &b2, INA_BLOCK_END, sc);
	check_fanout(&g, &j);
	assert_int_equal(rs->duplicates, 1);
	assert_int_equal(rs->results, 1);

	/* Lane 1 ended its round before the takeover: round 1 opens it. */
	n1 = b1;
	n1.round = 1;
	n1.ver = 0;
	assert_int_equal(push(t, &j, 0, &n1, INA_BLOCK_END, d[0]), 0);
	assert_int_equal(push(t, &j, 1, &n1, INA_BLOCK_END, d[1]), 0);
	assert_int_equal(push(t, &j, 2, &n1, INA_BLOCK_END, d[2]), 1);
	take_one(t, &g);
	check_result(&g, &j, &n1, INA_BLOCK_END, sd);
	check_fanout(&g, &j);

	/* A replica after takeover is an ordinary switch: the job finishes. */
	assert_int_equal(rs->replicated, 0);
	fin_all(t, &j);
	assert_int_equal(pipeline_nb_jobs(t->repl), 0);
	assert_int_equal(pipeline_free_slots(t->repl), 16);
	done(t);
}

/*
 * The i32 encoding through a takeover. A lane's stored result may be its
 * OPEN (the open block is then the one it announces, under the agreed
 * exponent, which the shadow keeps) or a round's last block (the lane then
 * waits for the next round's OPEN); a saturated sum keeps its flag in the
 * shadow.
 */
static void
test_pipeline_replica_i32(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 2002,
			  .token = 0x2121,
			  .world = 2,
			  .lanes = 2,
			  .max_block = 4,
			  .enc = INA_ENC_I32 };
	struct blk o0 = { .tensor_id = 3,
			  .round = 1,
			  .tensor_len = 8,
			  .block_size = 4,
			  .lane = 0,
			  .block = INA_BLOCK_OPEN };
	struct blk o1 = o0, k0 = o0, k1 = o0;
	const int32_t d0[4] = { INT32_MAX, 5, -7, 0 }, d1[4] = { 1, 6, -1, 0 };
	const int32_t sd[4] = { INT32_MAX, 11, -8, 0 };
	const int32_t a0[4] = { 100, -200, 1 << 20, 0 }, a1[4] = { 1, 2, 3, 4 };
	const int32_t sa[4] = { 101, -198, (1 << 20) + 3, 4 };
	const int32_t e0[4] = { -3, 0, 9, 1 << 29 }, e1[4] = { 3, 0, -10, 1 << 29 };
	const int32_t se[4] = { 0, 0, -1, 1 << 30 };
	const struct pipeline_stats *rs;
	struct wc_got g, r;
	struct tjob old;

	o1.lane = 1;
	k0.block = 0;
	k0.ver = 1;
	k1.lane = 1;
	k1.block = 1;
	k1.ver = 1;
	start_pair(t);
	rs = pipeline_stats(t->repl);
	join_all(t, &j);
	t->p = t->repl;
	standby_join(t, &j, 0);
	standby_join(t, &j, 1);

	/* Both lanes open: lane 0 announces block 0 (exponent 5), lane 1
	 * block 1 (exponent 6). */
	t->p = t->prim;
	assert_int_equal(push_x(t, &j, 0, &o0, 0, 3, NULL), 0);
	assert_int_equal(push_x(t, &j, 1, &o0, 0, 5, NULL), 1);
	take_one(t, &g);
	check_repl(&g, &j, INA_RANK_ALL, &o0, 0, NULL);
	assert_int_equal(g.h.exp, 5);
	t->p = t->repl;
	assert_int_equal(rx(t, resend(t, &g, PRIMARY_PEER)), 1);
	take_one(t, &r);
	check_result(&r, &j, &o0, 0, NULL);
	assert_int_equal(r.h.exp, 5);
	t->p = t->prim;
	assert_int_equal(push_x(t, &j, 0, &o1, 1, 2, NULL), 0);
	assert_int_equal(push_x(t, &j, 1, &o1, 1, 6, NULL), 1);
	take_one(t, &g);
	t->p = t->repl;
	assert_int_equal(rx(t, resend(t, &g, PRIMARY_PEER)), 1);
	take_one(t, &r);
	check_result(&r, &j, &o1, 1, NULL);
	assert_int_equal(r.h.exp, 6);

	/* Block 0 saturates and ends lane 0's round. */
	t->p = t->prim;
	assert_int_equal(push_x(t, &j, 0, &k0, INA_BLOCK_END, 0, d0), 0);
	assert_int_equal(push_x(t, &j, 1, &k0, INA_BLOCK_END, 0, d1), 1);
	take_one(t, &g);
	check_repl(&g, &j, INA_RANK_ALL, &k0, INA_BLOCK_END, sd);
	assert_int_equal(g.h.flags & INA_F_SATURATED, INA_F_SATURATED);
	t->p = t->repl;
	assert_int_equal(rx(t, resend(t, &g, PRIMARY_PEER)), 1);
	take_one(t, &r);
	check_result(&r, &j, &k0, INA_BLOCK_END, sd);
	assert_int_equal(r.h.flags & INA_F_SATURATED, INA_F_SATURATED);

	/* Lane 1's block 1 reaches the primary from rank 0; it dies. */
	t->p = t->prim;
	assert_int_equal(push_x(t, &j, 0, &k1, INA_BLOCK_END, 0, e0), 0);
	t->p = t->repl;
	old = j;
	assert_int_equal(rx(t, mk_failover(t, &j, 0, j.epoch)), 1);
	j.epoch++;
	take_one(t, &g);
	check_announce(&g, &j);
	check_fanout(&g, &j);

	/* Rank 1 missed both lanes' last results: the shadows answer, the
	 * saturated sum and the OPEN with its agreed exponent. */
	assert_int_equal(push_x(t, &j, 1, &k0, INA_BLOCK_END, 0, d1), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 1));
	check_result(&g, &j, &k0, INA_BLOCK_END, sd);
	assert_int_equal(g.h.flags & INA_F_SATURATED, INA_F_SATURATED);
	assert_int_equal(push_x(t, &j, 1, &o1, 1, 6, NULL), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 1));
	check_result(&g, &j, &o1, 1, NULL);
	assert_int_equal(g.h.exp, 6);
	/* Old-epoch DATA: told, not counted. */
	assert_int_equal(push_x(t, &old, 1, &k1, INA_BLOCK_END, 0, e1), 1);
	take_one(t, &g);
	check_announce(&g, &j);

	/* Block 1 at the replica, each rank once. */
	assert_int_equal(push_x(t, &j, 0, &k1, INA_BLOCK_END, 0, e0), 0);
	assert_int_equal(push_x(t, &j, 1, &k1, INA_BLOCK_END, 0, e1), 1);
	take_one(t, &g);
	check_result(&g, &j, &k1, INA_BLOCK_END, se);
	check_fanout(&g, &j);

	/* Round 2 at the replica: both lanes open with an OPEN. */
	o0.round = o1.round = k0.round = 2;
	o0.ver = 0;
	assert_int_equal(push_x(t, &j, 1, &o0, 0, 4, NULL), 0);
	assert_int_equal(push_x(t, &j, 0, &o0, 0, 2, NULL), 1);
	take_one(t, &g);
	check_result(&g, &j, &o0, 0, NULL);
	assert_int_equal(g.h.exp, 4);
	assert_int_equal(push_x(t, &j, 0, &k0, INA_BLOCK_END, 0, a0), 0);
	assert_int_equal(push_x(t, &j, 1, &k0, INA_BLOCK_END, 0, a1), 1);
	take_one(t, &g);
	check_result(&g, &j, &k0, INA_BLOCK_END, sa);
	assert_int_equal(g.h.flags & INA_F_SATURATED, 0);
	o1.ver = 0;
	assert_int_equal(push_x(t, &j, 0, &o1, INA_BLOCK_END, 0, NULL), 0);
	assert_int_equal(push_x(t, &j, 1, &o1, INA_BLOCK_END, 0, NULL), 1);
	take_one(t, &g);
	check_result(&g, &j, &o1, INA_BLOCK_END, NULL);
	assert_int_equal(rs->takeovers, 1);
	assert_int_equal(rs->announce_repeats, 1);
	assert_int_equal(rs->shadow_replies, 2);
	assert_int_equal(rs->results, 4);
	done(t);
}

/* A REPL as the primary would send it, built by hand: 'vals' are the
 * payload's 4-byte words (two bf16 elements each in bf16). */
static struct ina_pkt *
mk_repl(struct t *t, const struct tjob *j, uint16_t rank, const struct blk *b, uint32_t next,
	const void *vals)
{
	struct ina_hdr h = data_hdr(j, rank, b, next, 0, vals != NULL);
	size_t size = (size_t)h.n_elems * ina_wire_elem_size(j->enc);
	uint8_t payload[SLOT_ELEMS * 4];

	h.type = INA_T_REPL;
	if (vals)
		wc_put_words(payload, vals, size / 4);
	return mk_pkt(t, PRIMARY_PEER, &h, payload, size);
}

/*
 * The replica's admission and its refusals: a standby JOIN needs a replica
 * and an epoch; a standby JOIN of a new epoch replaces the job standing by
 * (the application re-joined the primary); a job cannot both run and stand
 * by; REPL and FAILOVER only where they belong; a standby job is kept alive
 * by REPLs, freed by FIN or idleness like any other; and a bf16 result goes
 * through the store bit for bit.
 */
static void
test_pipeline_replica_admission(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 2003,
			  .token = 0x2222,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_BF16,
			  .epoch = 40 };
	struct tjob n = { .id = 2004,
			  .token = 0x2323,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 1, .round = 0, .tensor_len = 8, .block_size = 4 };
	/* bf16 elements 1, -2, 10, 0 as two words; rank 0's part as floats. */
	const int32_t bf[2] = { 0x3f80c000, 0x41200000 };
	const float x[4] = { 1, -1, 4, 0 };
	const struct pipeline_stats *ps, *rs;
	struct wc_got g, r;

	start_pair(t);
	ps = pipeline_stats(t->prim);
	rs = pipeline_stats(t->repl);

	/* Not a replica: a standby JOIN is refused, REPL and FAILOVER dropped. */
	assert_int_equal(rx(t, mk_standby_join(t, &j, 0, j.epoch)), 1);
	take_one(t, &g);
	check_error(&g, j.id, j.token, INA_WERR_UNSUPPORTED);
	assert_msg_has(&g, "no replica");
	assert_int_equal(rx(t, mk_repl(t, &j, INA_RANK_ALL, &b, INA_BLOCK_END, NULL)), 0);
	assert_int_equal(rx(t, mk_failover(t, &j, 0, j.epoch)), 0);
	assert_int_equal(ps->drop[PDROP_UNEXPECTED], 2);

	t->p = t->repl;
	/* A standby JOIN without an epoch. */
	assert_int_equal(rx(t, mk_standby_join(t, &j, 0, 0)), 0);
	assert_int_equal(rs->drop_wire[INA_WIRE_WRONG_EPOCH], 1);
	/* REPL and FAILOVER for a job not here. */
	assert_int_equal(rx(t, mk_repl(t, &j, INA_RANK_ALL, &b, INA_BLOCK_END, NULL)), 0);
	assert_int_equal(rx(t, mk_failover(t, &j, 0, j.epoch)), 0);
	assert_int_equal(rs->drop[PDROP_UNKNOWN_JOB], 2);

	/* A replica also runs jobs of its own; REPL and FAILOVER for them are
	 * dropped, and a job does not both run and stand by. */
	join_all(t, &n);
	assert_int_equal(rx(t, mk_repl(t, &n, INA_RANK_ALL, &b, INA_BLOCK_END, NULL)), 0);
	assert_int_equal(rx(t, mk_failover(t, &n, 1, n.epoch)), 0);
	assert_int_equal(rs->drop[PDROP_NOT_STANDBY], 2);
	assert_int_equal(rx(t, mk_standby_join(t, &n, 0, n.epoch)), 1);
	take_one(t, &g);
	check_error(&g, n.id, n.token, INA_WERR_MISMATCH);

	/* Both ranks stand by. */
	standby_join(t, &j, 0);
	standby_join(t, &j, 1);
	/* A normal JOIN for the job standing by: refused. */
	assert_int_equal(rx(t, mk_join_as(t, &j, 0, j.world, j.lanes, j.max_block, j.enc, j.token)),
			 1);
	take_one(t, &g);
	check_error(&g, j.id, j.token, INA_WERR_MISMATCH);

	assert_int_equal(rx(t, mk_repl(t, &j, INA_RANK_ALL, &b, INA_BLOCK_END, NULL)), 1);
	take_one(t, &r);
	check_fanout(&r, &j);
	assert_int_equal(rs->repl_stored, 1);

	/* The application re-joins the primary under epoch 41: the standby job
	 * of epoch 40 is replaced, and its REPLs are dropped. */
	{
		struct tjob j2 = j;

		j2.epoch = 41;
		standby_join(t, &j2, 1);
		assert_int_equal(rs->standby_jobs, 2);
		assert_int_equal(pipeline_nb_jobs(t->repl), 2);
		assert_int_equal(rx(t, mk_repl(t, &j, INA_RANK_ALL, &b, INA_BLOCK_END, NULL)), 0);
		assert_int_equal(rs->drop_wire[INA_WIRE_WRONG_EPOCH], 2);
		/* Rank 0 has not joined the new one. */
		assert_int_equal(rx(t, mk_repl(t, &j2, 0, &b, INA_BLOCK_END, NULL)), 0);
		assert_int_equal(rx(t, mk_failover(t, &j2, 0, j2.epoch)), 0);
		assert_int_equal(rs->drop[PDROP_NOT_JOINED], 2);
		/* A fresh lane: the first REPL of any block is stored. */
		b.block = 0;
		assert_int_equal(rx(t, mk_repl(t, &j2, 1, &b, INA_BLOCK_END, NULL)), 1);
		take_one(t, &g);
		check_unicast(&g, peer_of(&j2, 1));
		assert_int_equal(rs->repl_stored, 2);
		j = j2;
	}

	/* Idle: REPLs keep the standby job alive; silence frees it. */
	t->now += IDLE_NS - 1;
	assert_int_equal(rx(t, mk_repl(t, &j, 1, &b, INA_BLOCK_END, NULL)), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 1));
	t->now += IDLE_NS - 1;
	join_all(t, &n); /* keeps job n */
	pipeline_tick(t->repl, t->now);
	assert_int_equal(pipeline_nb_jobs(t->repl), 2);
	t->now += 1;
	standby_join(t, &j, 0);
	fin(t, &j, 0);
	fin(t, &j, 1);
	assert_int_equal(pipeline_nb_jobs(t->repl), 1);
	t->now += IDLE_NS;
	pipeline_tick(t->repl, t->now);
	assert_int_equal(pipeline_nb_jobs(t->repl), 0);

	/* A bf16 result, stored and sent on, answers from the shadow after a
	 * takeover bit for bit. */
	j.id = 2005;
	j.epoch = 50;
	standby_join(t, &j, 0);
	standby_join(t, &j, 1);
	assert_int_equal(rx(t, mk_repl(t, &j, INA_RANK_ALL, &b, INA_BLOCK_END, bf)), 1);
	take_one(t, &r);
	check_fanout(&r, &j);
	check_from_switch(&r, &j, INA_T_RESULT);
	assert_int_equal(rx(t, mk_failover(t, &j, 1, j.epoch)), 1);
	j.epoch++;
	take_one(t, &g);
	check_announce(&g, &j);
	check_fanout(&g, &j);
	assert_int_equal(rx(t, mk_data_bf16(t, &j, 0, &b, INA_BLOCK_END, x)), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 0));
	assert_int_equal(g.len, r.len);
	assert_memory_equal(g.payload, r.payload, r.payload_size);
	assert_int_equal(r.payload_size, 8);
	assert_int_equal(wc_word_at(r.payload, 0), (uint32_t)bf[0]);
	assert_int_equal(wc_word_at(r.payload, 1), (uint32_t)bf[1]);
	j.epoch--;

	/* A standby JOIN for a job taken over is a late copy: dropped. */
	assert_int_equal(rx(t, mk_standby_join(t, &j, 0, j.epoch)), 0);
	assert_int_equal(rs->drop[PDROP_TAKEN_OVER], 1);
	/* The switch's own announcement sent back to it: dropped. */
	j.epoch = 51;
	assert_int_equal(send_ctl(t, &j, INA_T_FAILOVER, INA_RANK_SWITCH), 0);
	assert_int_equal(rs->drop[PDROP_UNEXPECTED], 1);
	/* LEAVE works on a taken-over job, as on a standby one. */
	assert_int_equal(send_ctl(t, &j, INA_T_LEAVE, 0), 1);
	take_one(t, &g);
	check_error(&g, j.id, j.token, INA_WERR_LEFT);
	assert_int_equal(pipeline_nb_jobs(t->repl), 0);
	assert_int_equal(ps->replicated, 0);
	done(t);
}

/* A replica that stops frees its standby jobs without a word to their
 * workers (they run on the primary); a job it took over is aborted. A rank
 * that finished and asks for the takeover is told too. */
static void
test_pipeline_replica_shutdown(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 2006,
			  .token = 0x2424,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32,
			  .epoch = 7 };
	struct tjob k = j;
	struct ina_pkt *out[4];
	struct wc_got g;

	start_pair(t);
	t->p = t->repl;
	standby_join(t, &j, 0);
	standby_join(t, &j, 1);
	k.id = 2007;
	standby_join(t, &k, 0);
	standby_join(t, &k, 1);
	/* Rank 0 finished (its FIN to the replica too) and still asks: the
	 * announcement reaches it as well as rank 1. */
	fin(t, &k, 0);
	assert_int_equal(rx(t, mk_failover(t, &k, 0, k.epoch)), 1);
	k.epoch++;
	take_one(t, &g);
	check_announce(&g, &k);
	check_fanout(&g, &k);
	assert_int_equal(pipeline_shutdown(t->repl, out, 4), 1);
	wc_decode(&g, out[0], NULL);
	ina_pkt_free(out[0]);
	check_error(&g, k.id, k.token, INA_WERR_SHUTDOWN);
	assert_true(g.fanout);
	assert_int_equal(g.dst_mask, 2); /* rank 1: rank 0 finished */
	assert_int_equal(pipeline_nb_jobs(t->repl), 0);
	done(t);
}

/* The trace the model found (docs/PROTOCOL.md 5.9): the last result of the
 * job reaches the replica and rank 1, is lost on its way to rank 0, rank 1
 * finishes (its FIN to the replica too), and the primary dies. The replica
 * must still hold the job when rank 0 notices, a failover time later: a
 * standby job lingers standby_linger_ns, not linger_ns. */
static void
test_pipeline_replica_standby_linger(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 2008,
			  .token = 0x2525,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_F32,
			  .epoch = 9 };
	struct blk b = { .tensor_id = 1, .round = 0, .tensor_len = 4, .block_size = 4 };
	const float sum[4] = { 3, -1, 0.5f, 8 };
	const float x[4] = { 1, 2, 0.25f, 3 };
	struct wc_got g, r;

	t->cfg.standby_linger_ns = 20 * LINGER_NS;
	start_pair(t);
	t->p = t->repl;
	standby_join(t, &j, 0);
	standby_join(t, &j, 1);
	assert_int_equal(rx(t, mk_repl(t, &j, INA_RANK_ALL, &b, INA_BLOCK_END, sum)), 1);
	take_one(t, &r);
	check_fanout(&r, &j);
	fin(t, &j, 1);
	/* Past the ordinary linger the standby job is still there. */
	t->now += 2 * LINGER_NS;
	pipeline_tick(t->repl, t->now);
	assert_int_equal(pipeline_nb_jobs(t->repl), 1);
	/* Rank 0 asks; the replica takes over and answers its resend of the
	 * last block from the stored result, bit for bit. */
	assert_int_equal(rx(t, mk_failover(t, &j, 0, j.epoch)), 1);
	j.epoch++;
	take_one(t, &g);
	check_announce(&g, &j);
	assert_int_equal(rx(t, mk_data(t, &j, 0, &b, INA_BLOCK_END, x)), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 0));
	assert_int_equal(g.h.type, INA_T_RESULT);
	assert_memory_equal(g.payload, r.payload, r.payload_size);
	/* Taken over, the job lingers like any other: rank 0's FIN frees it. */
	fin(t, &j, 0);
	assert_int_equal(pipeline_nb_jobs(t->repl), 0);

	/* Without a takeover, a standby job with a FIN is freed once silent
	 * for standby_linger_ns. */
	j.id = 2009;
	j.epoch = 12;
	standby_join(t, &j, 0);
	standby_join(t, &j, 1);
	fin(t, &j, 1);
	pipeline_tick(t->repl, t->now + 20 * LINGER_NS - 1);
	assert_int_equal(pipeline_nb_jobs(t->repl), 1);
	pipeline_tick(t->repl, t->now + 20 * LINGER_NS);
	assert_int_equal(pipeline_nb_jobs(t->repl), 0);
	done(t);
}

/* A partitioned pipeline takes neither a replica nor a primary. */
static void
test_pipeline_replica_config(void **state)
{
	struct t *t = *state;
	struct pipeline_config c = t->cfg;
	struct pipeline *p;

	c.part_count = 2;
	c.replica = *REPLICA_PEER;
	assert_null(pipeline_create(&c));
	c.replica.len = 0;
	c.primary = *PRIMARY_PEER;
	assert_null(pipeline_create(&c));
	c.part_count = 1;
	p = pipeline_create(&c);
	assert_non_null(p);
	pipeline_destroy(p);
	c.primary.len = INA_PEER_SIZE;
	assert_null(pipeline_create(&c));
	done(t);
}

/* ---- Sub-blocks (docs/PROTOCOL.md 2.7) ---- */

/*
 * A DATA of block 'b' cut by 'sub_log' from 'rank': the block's floats 'x'
 * with the sub-blocks of 'm' (i32: integral values, at scale 0), or
 * header-only when 'm' is NULL; 'bound' is its result-filter bound.
 */
static struct ina_pkt *
mk_sub(struct t *t, const struct tjob *j, uint16_t rank, const struct blk *b, uint8_t sub_log,
       uint32_t next, int16_t exp, const float *x, const struct ina_sub_mask *m, uint32_t bound)
{
	struct ina_hdr h = data_hdr(j, rank, b, next, exp, m != NULL);
	uint8_t payload[INA_SUB_MAX / 8 + SLOT_ELEMS * 4];
	size_t size = 0;

	h.sub_log = sub_log;
	h.bound = bound;
	if (m)
		size = wc_put_masked(payload, x, h.n_elems, b->block_size, sub_log, m, j->enc);
	return mk_pkt(t, peer_of(j, rank), &h, payload, size);
}

static uint16_t
push_sub(struct t *t, const struct tjob *j, uint16_t rank, const struct blk *b, uint8_t sub_log,
	 uint32_t next, const float *x, const struct ina_sub_mask *m)
{
	return rx(t, mk_sub(t, j, rank, b, sub_log, next, 0, x, m, 0));
}

/* want[i] += x[i] over the sub-blocks of 'm' (b elements each, n in all),
 * in float as the switch sums; 'u' gets the union. */
static void
sub_ref(float *want, struct ina_sub_mask *u, const float *x, const struct ina_sub_mask *m,
	uint32_t n, uint32_t b)
{
	for (uint32_t i = 0; i < n; i++)
		if (ina_sub_mask_test(m, i / b))
			want[i] = ina_sub_mask_test(u, i / b) ? want[i] + x[i] : x[i];
	u->w[0] |= m->w[0];
	u->w[1] |= m->w[1];
}

/* A masked RESULT of block 'b' fanned out to every rank. */
static void
check_sub_result(const struct wc_got *g, const struct tjob *j, const struct blk *b, uint8_t sub_log,
		 uint32_t next, const float *want, const struct ina_sub_mask *u)
{
	check_from_switch(g, j, INA_T_RESULT);
	assert_int_equal(g->h.block, b->block);
	assert_int_equal(g->h.round, b->round);
	assert_int_equal(g->h.block_size, b->block_size);
	assert_int_equal(g->h.sub_log, sub_log);
	assert_int_equal(g->h.flags & INA_F_VER, b->ver);
	assert_int_equal(g->h.next, next);
	assert_int_equal(g->h.n_elems,
			 ina_wire_block_elems(b->tensor_len, b->block_size, b->block));
	wc_assert_masked(g, want, u, j->enc);
}

/*
 * f32 blocks of 16 cut into 4 sub-blocks of 4: ranks with different masks
 * (the RESULT holds the union's sums only), a rank with every sub-block (it
 * completes in place), a header-only rank, another cut of the same block
 * (counted, never added), the shadow's masked answer to a duplicate, the
 * short last block (10 elements: sub-blocks of 4, 4, 2), a later round whose
 * sub-blocks the union lacked are loaded over the last round's values, and
 * the result filter on the union's sub-blocks only.
 */
static void
test_pipeline_sub_f32(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1801,
			  .token = 0x1818,
			  .world = 4,
			  .lanes = 1,
			  .max_block = 16,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 7, .round = 1, .tensor_len = 26, .block_size = 16 };
	const struct ina_sub_mask m02 = wc_mask(0x5, 0), m23 = wc_mask(0xc, 0),
				  mall = wc_mask(0xf, 0), m0 = wc_mask(0x1, 0),
				  m1 = wc_mask(0x2, 0), m2 = wc_mask(0x4, 0), m3 = wc_mask(0x8, 0),
				  m01 = wc_mask(0x3, 0);
	uint32_t one = ina_enc_bound(INA_ENC_F32, 1.0f, 0);
	const struct pipeline_stats *st;
	float x[4][16], want[16], small[16];
	struct ina_sub_mask u;
	struct wc_got g, r;
	struct ina_pkt *pkt;

	for (int k = 0; k < 4; k++)
		for (int i = 0; i < 16; i++)
			x[k][i] = (float)((k + 1) * 64 + i) / 64.0f; /* 1 .. 5, exact sums */
	for (int i = 0; i < 16; i++)
		small[i] = i % 3 ? 0.25f : -0.125f;
	start(t);
	st = pipeline_stats(t->p);
	join_all(t, &j);

	/* Round 1, block 0. */
	memset(&u, 0, sizeof(u));
	assert_int_equal(push_sub(t, &j, 0, &b, 2, 1, x[0], &m02), 0);
	sub_ref(want, &u, x[0], &m02, 16, 4);
	/* Another cut of the same block (2 sub-blocks, or none): never added. */
	assert_int_equal(push_sub(t, &j, 3, &b, 1, 1, x[3], &m01), 0);
	assert_int_equal(push(t, &j, 3, &b, 1, x[3]), 0);
	assert_int_equal(st->drop[PDROP_SHAPE], 2);
	assert_int_equal(push_sub(t, &j, 2, &b, 2, 1, NULL, NULL), 0); /* header-only */
	assert_int_equal(push_sub(t, &j, 1, &b, 2, 1, x[1], &m23), 0);
	sub_ref(want, &u, x[1], &m23, 16, 4);
	/* Every sub-block: the union's; its buffer becomes the RESULT. */
	assert_int_equal(push_sub(t, &j, 3, &b, 2, 1, x[3], &mall), 1);
	sub_ref(want, &u, x[3], &mall, 16, 4);
	take_one(t, &r);
	check_sub_result(&r, &j, &b, 2, 1, want, &u);
	check_fanout(&r, &j);
	assert_int_equal(r.payload_size, 4 + 16 * 4);
	assert_int_equal(st->result_bytes, 4 + 16 * 4);
	assert_int_equal(st->saturated, 0);

	/* A duplicate: the shadow answers with the same masked RESULT. */
	assert_int_equal(push_sub(t, &j, 1, &b, 2, 1, x[1], &m23), 1);
	take_one(t, &g);
	check_unicast(&g, peer_of(&j, 1));
	assert_int_equal(g.len, r.len);
	assert_memory_equal(g.bytes, r.bytes, r.len);
	assert_int_equal(st->shadow_replies, 1);
	/* The shadow of another cut is a shape mismatch too. */
	assert_int_equal(push_sub(t, &j, 1, &b, 3, 1, x[1], &m23), 0);
	assert_int_equal(st->drop[PDROP_SHAPE], 3);

	/* Block 1, the short last block: sub-blocks 0 and 2 (2 elements). The
	 * last DATA lacks sub-block 2 of the union: the sums are stored. */
	b.block = 1;
	b.ver = 1;
	memset(&u, 0, sizeof(u));
	assert_int_equal(push_sub(t, &j, 0, &b, 2, INA_BLOCK_END, x[0], &m2), 0);
	sub_ref(want, &u, x[0], &m2, 10, 4);
	assert_int_equal(push_sub(t, &j, 1, &b, 2, INA_BLOCK_END, x[1], &m0), 0);
	sub_ref(want, &u, x[1], &m0, 10, 4);
	assert_int_equal(push_sub(t, &j, 3, &b, 2, INA_BLOCK_END, NULL, NULL), 0);
	assert_int_equal(push_sub(t, &j, 2, &b, 2, INA_BLOCK_END, x[2], &m0), 1);
	sub_ref(want, &u, x[2], &m0, 10, 4);
	take_one(t, &g);
	check_sub_result(&g, &j, &b, 2, INA_BLOCK_END, want, &u);
	assert_int_equal(g.payload_size, 4 + 6 * 4);

	/* Round 2: sub-block 0 is new to the union, loaded over round 1's sum;
	 * sub-block 1 is summed by every rank. */
	b.round = 2;
	b.block = 0;
	b.ver = 0;
	memset(&u, 0, sizeof(u));
	assert_int_equal(push_sub(t, &j, 1, &b, 2, INA_BLOCK_END, x[1], &m1), 0);
	sub_ref(want, &u, x[1], &m1, 16, 4);
	assert_int_equal(push_sub(t, &j, 0, &b, 2, INA_BLOCK_END, x[0], &m01), 0);
	sub_ref(want, &u, x[0], &m01, 16, 4);
	assert_int_equal(push_sub(t, &j, 2, &b, 2, INA_BLOCK_END, x[2], &m1), 0);
	sub_ref(want, &u, x[2], &m1, 16, 4);
	assert_int_equal(push_sub(t, &j, 3, &b, 2, INA_BLOCK_END, x[3], &m1), 1);
	sub_ref(want, &u, x[3], &m1, 16, 4);
	take_one(t, &g);
	check_sub_result(&g, &j, &b, 2, INA_BLOCK_END, want, &u);
	assert_int_equal(g.payload_size, 4 + 8 * 4);

	/* Round 3, the result filter: sub-block 3 sums under the bound, while
	 * the accumulator's other sub-blocks still hold round 2's large values:
	 * DEFERRED, header-only. */
	b.round = 3;
	b.ver = 1;
	for (uint16_t k = 0; k < 3; k++) {
		pkt = mk_sub(t, &j, k, &b, 2, INA_BLOCK_END, 0, small, k ? NULL : &m3, one);
		assert_int_equal(rx(t, pkt), 0);
	}
	pkt = mk_sub(t, &j, 3, &b, 2, INA_BLOCK_END, 0, small, &m3, one);
	assert_int_equal(rx(t, pkt), 1);
	take_one(t, &g);
	assert_int_equal(g.h.flags & INA_F_DEFERRED, INA_F_DEFERRED);
	assert_int_equal(g.h.n_elems, 0);
	assert_int_equal(g.len, INA_HDR_SIZE);
	assert_int_equal(st->results_deferred, 1);
	/* Its shadow answers DEFERRED too. */
	pkt = mk_sub(t, &j, 0, &b, 2, INA_BLOCK_END, 0, small, &m3, one);
	assert_int_equal(rx(t, pkt), 1);
	take_one(t, &g);
	assert_int_equal(g.h.flags & INA_F_DEFERRED, INA_F_DEFERRED);
	assert_int_equal(g.len, INA_HDR_SIZE);

	/* Round 4: one present sum over the bound, not deferred. */
	b.round = 4;
	b.ver = 0;
	memset(&u, 0, sizeof(u));
	for (uint16_t k = 0; k < 4; k++) {
		const struct ina_sub_mask *m = k == 2 ? &m1 : &m3;

		pkt = mk_sub(t, &j, k, &b, 2, INA_BLOCK_END, 0, k == 2 ? x[2] : small, m, one);
		sub_ref(want, &u, k == 2 ? x[2] : small, m, 16, 4);
		assert_int_equal(rx(t, pkt), k == 3);
	}
	take_one(t, &g);
	assert_int_equal(g.h.flags & INA_F_DEFERRED, 0);
	check_sub_result(&g, &j, &b, 2, INA_BLOCK_END, want, &u);
	assert_int_equal(st->results_deferred, 1);
	assert_int_equal(st->drop[PDROP_SHAPE], 3);
	assert_int_equal(st->drop[PDROP_NO_MATCH], 0);
	done(t);
}

/*
 * i32 blocks of 4 cut into 4 sub-blocks of 1 (the largest cut a small block
 * allows): the lane opens with a header-only OPEN of the same cut, sums
 * saturate and are counted in the sub-blocks that were added, and a later
 * block whose sub-block the union lacked loads it over a saturated sum
 * without saturating.
 */
static void
test_pipeline_sub_i32(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1802,
			  .token = 0x1819,
			  .world = 3,
			  .lanes = 1,
			  .max_block = 4,
			  .enc = INA_ENC_I32 };
	struct blk b = { .tensor_id = 9,
			 .round = 1,
			 .tensor_len = 8,
			 .block_size = 4,
			 .block = INA_BLOCK_OPEN };
	const struct ina_sub_mask m0 = wc_mask(0x1, 0), m01 = wc_mask(0x3, 0), m3 = wc_mask(0x8, 0),
				  m13 = wc_mask(0xa, 0);
	const float big[4] = { 0x1p30f, 0x1p30f, 5, 7 }, one4[4] = { 1, 1, 1, 1 };
	const struct pipeline_stats *st;
	uint32_t words[4];
	struct ina_sub_mask m;
	struct wc_got g;

	start(t);
	st = pipeline_stats(t->p);
	join_all(t, &j);
	for (uint16_t k = 0; k < 3; k++)
		assert_int_equal(rx(t, mk_sub(t, &j, k, &b, 2, 0, 3, NULL, NULL, 0)), k == 2);
	take_one(t, &g);
	assert_int_equal(g.h.sub_log, 2);
	assert_int_equal(g.h.n_elems, 0);

	/* Block 0: sub-block 0 saturates (2^30 three times), 1 and 3 do not. */
	b.block = 0;
	b.ver = 1;
	assert_int_equal(rx(t, mk_sub(t, &j, 0, &b, 2, 1, 3, big, &m01, 0)), 0);
	assert_int_equal(rx(t, mk_sub(t, &j, 1, &b, 2, 1, 3, big, &m0, 0)), 0);
	assert_int_equal(rx(t, mk_sub(t, &j, 2, &b, 2, 1, 3, one4, &m13, 0)), 1);
	take_one(t, &g);
	assert_int_equal(g.h.flags & INA_F_SATURATED, INA_F_SATURATED);
	assert_int_equal(st->saturated, 1);
	m = wc_get_masked(&g, words);
	assert_true(m.w[0] == 0xb && m.w[1] == 0);
	assert_int_equal((int32_t)words[0], INT32_MAX);
	assert_int_equal((int32_t)words[1], (1 << 30) + 1);
	assert_int_equal((int32_t)words[2], 0);
	assert_int_equal((int32_t)words[3], 1);
	assert_int_equal(g.payload_size, 4 + 3 * 4);

	/* Block 1 (the other half): sub-block 3 only, then round 2's block 0
	 * back in half 1: its sub-block 0 is loaded over the saturated sum. */
	b.block = 1;
	b.ver = 0;
	for (uint16_t k = 0; k < 3; k++)
		assert_int_equal(rx(t, mk_sub(t, &j, k, &b, 2, INA_BLOCK_END, 0, one4,
					      k == 1 ? NULL : &m3, 0)),
				 k == 2);
	take_one(t, &g);
	m = wc_get_masked(&g, words);
	assert_true(m.w[0] == 0x8);
	assert_int_equal((int32_t)words[3], 2);
	assert_int_equal(g.h.flags & INA_F_SATURATED, 0);

	b.round = 2;
	b.block = INA_BLOCK_OPEN;
	b.ver = 1;
	for (uint16_t k = 0; k < 3; k++)
		assert_int_equal(rx(t, mk_sub(t, &j, k, &b, 2, 0, 3, NULL, NULL, 0)), k == 2);
	take_one(t, &g);
	b.block = 0;
	b.ver = 0;
	assert_int_equal(rx(t, mk_sub(t, &j, 1, &b, 2, INA_BLOCK_END, 0, big, &m0, 0)), 0);
	assert_int_equal(rx(t, mk_sub(t, &j, 0, &b, 2, INA_BLOCK_END, 0, NULL, NULL, 0)), 0);
	assert_int_equal(rx(t, mk_sub(t, &j, 2, &b, 2, INA_BLOCK_END, 0, one4, &m0, 0)), 1);
	take_one(t, &g);
	assert_int_equal(g.h.flags & INA_F_SATURATED, 0);
	m = wc_get_masked(&g, words);
	assert_true(m.w[0] == 0x1);
	assert_int_equal((int32_t)words[0], (1 << 30) + 1);
	assert_int_equal(g.payload_size, 4 + 4);
	assert_int_equal(st->saturated, 1);
	done(t);
}

/*
 * bf16 blocks of 8 cut into 4 sub-blocks of 2: each sub-block is summed in
 * binary32 and rounded once when stored, whether the result is stored (the
 * last DATA lacks part of the union) or made in place (it holds the union).
 * 1 + 2^-8 + 2^-9 is 1 + 2^-7 rounded once, 1 if rounded after each add.
 */
static void
test_pipeline_sub_bf16(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1803,
			  .token = 0x181a,
			  .world = 3,
			  .lanes = 1,
			  .max_block = 8,
			  .enc = INA_ENC_BF16 };
	struct blk b = { .tensor_id = 2, .round = 1, .tensor_len = 16, .block_size = 8 };
	const struct ina_sub_mask m1 = wc_mask(0x2, 0), m13 = wc_mask(0xa, 0);
	float y[3][8], want[8];
	struct ina_sub_mask u;
	struct wc_got g;

	memset(y, 0, sizeof(y));
	for (int k = 0; k < 3; k++) {
		y[k][2] = k == 0 ? 1.0f : k == 1 ? 0x1p-8f : 0x1p-9f;
		y[k][3] = 256.0f;
		y[k][6] = -2.0f;
		y[k][7] = 0.5f;
	}
	memset(want, 0, sizeof(want));
	want[2] = 1.0f + 0x1p-7f;
	want[3] = 768.0f;
	start(t);
	join_all(t, &j);
	/* Block 0: stored (rank 2 lacks sub-block 3). */
	u = m13;
	want[6] = -2.0f;
	want[7] = 0.5f;
	assert_int_equal(push_sub(t, &j, 0, &b, 2, 1, y[0], &m1), 0);
	assert_int_equal(push_sub(t, &j, 1, &b, 2, 1, y[1], &m13), 0);
	assert_int_equal(push_sub(t, &j, 2, &b, 2, 1, y[2], &m1), 1);
	take_one(t, &g);
	check_sub_result(&g, &j, &b, 2, 1, want, &u);
	assert_int_equal(g.payload_size, 4 + 4 * 2);
	/* Block 1: in place (rank 2 holds the union). */
	b.block = 1;
	b.ver = 1;
	assert_int_equal(push_sub(t, &j, 0, &b, 2, INA_BLOCK_END, y[0], &m1), 0);
	assert_int_equal(push_sub(t, &j, 1, &b, 2, INA_BLOCK_END, y[1], &m1), 0);
	assert_int_equal(push_sub(t, &j, 2, &b, 2, INA_BLOCK_END, y[2], &m13), 1);
	take_one(t, &g);
	check_sub_result(&g, &j, &b, 2, INA_BLOCK_END, want, &u);
	/* the shadow re-encodes the same binary32 sums: the same bytes */
	assert_int_equal(push_sub(t, &j, 0, &b, 2, INA_BLOCK_END, y[0], &m1), 1);
	{
		struct wc_got s;

		take_one(t, &s);
		assert_int_equal(s.len, g.len);
		assert_memory_equal(s.payload, g.payload, g.payload_size);
	}
	done(t);
}

/*
 * Sub-blocks and the replica: the primary's masked RESULT leaves as a REPL,
 * byte for byte; the replica stores its mask and sums and sends it on. After
 * the takeover a retransmission of the stored block is answered from it with
 * the same bytes, and the next block is aggregated at the replica from an
 * empty union (the stored sub-blocks never leak into it).
 */
static void
test_pipeline_sub_replica(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1804,
			  .token = 0x181b,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 16,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 4, .round = 1, .tensor_len = 32, .block_size = 16 };
	const struct ina_sub_mask m0 = wc_mask(0x1, 0), m13 = wc_mask(0xa, 0), m2 = wc_mask(0x4, 0);
	const struct pipeline_stats *rs;
	float x[2][16], want[16];
	struct ina_sub_mask u;
	struct wc_got g, r, s;

	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 16; i++)
			x[k][i] = (float)(k * 16 + i + 1) * 0.5f;
	start_pair(t);
	rs = pipeline_stats(t->repl);
	join_all(t, &j);
	t->p = t->repl;
	for (uint16_t k = 0; k < j.world; k++)
		standby_join(t, &j, k);

	/* Block 0 at the primary: one REPL with the union's mask and sums. */
	t->p = t->prim;
	memset(&u, 0, sizeof(u));
	assert_int_equal(push_sub(t, &j, 0, &b, 2, 1, x[0], &m0), 0);
	sub_ref(want, &u, x[0], &m0, 16, 4);
	assert_int_equal(push_sub(t, &j, 1, &b, 2, 1, x[1], &m13), 1);
	sub_ref(want, &u, x[1], &m13, 16, 4);
	take_one(t, &g);
	assert_int_equal(g.h.type, INA_T_REPL);
	assert_int_equal(g.h.rank, INA_RANK_ALL);
	check_unicast(&g, REPLICA_PEER);
	wc_assert_masked(&g, want, &u, j.enc);
	t->p = t->repl;
	assert_int_equal(rx(t, resend(t, &g, PRIMARY_PEER)), 1);
	take_one(t, &r);
	check_sub_result(&r, &j, &b, 2, 1, want, &u);
	check_fanout(&r, &j);
	check_sent_on(&r, &g);
	assert_int_equal(rs->repl_stored, 1);

	/* The primary dies; rank 0 fails over to the replica. */
	assert_int_equal(rx(t, mk_failover(t, &j, 0, j.epoch)), 1);
	take_one(t, &s);
	j.epoch = s.h.epoch;
	check_announce(&s, &j);
	/* Rank 1 lost block 0's RESULT: the stored one, the same bytes (but
	 * the epoch). */
	assert_int_equal(push_sub(t, &j, 1, &b, 2, 1, x[1], &m13), 1);
	take_one(t, &s);
	check_unicast(&s, peer_of(&j, 1));
	check_sub_result(&s, &j, &b, 2, 1, want, &u);
	assert_int_equal(s.len, r.len);
	assert_memory_equal(s.payload, r.payload, r.payload_size);

	/* Block 1 at the replica: sub-block 2 only, summed from nothing. */
	b.block = 1;
	b.ver = 1;
	memset(&u, 0, sizeof(u));
	for (uint16_t k = 0; k < 2; k++) {
		assert_int_equal(push_sub(t, &j, k, &b, 2, INA_BLOCK_END, x[k], &m2), k == 1);
		sub_ref(want, &u, x[k], &m2, 16, 4);
	}
	take_one(t, &s);
	check_sub_result(&s, &j, &b, 2, INA_BLOCK_END, want, &u);
	assert_int_equal(s.payload_size, 4 + 4 * 4);
	done(t);
}

/*
 * A cut block whose RESULT would not fit the switch's packets (PROTOCOL 2.7,
 * 4.2): the job is admitted for blocks of 64 f32, whose uncut RESULT fills
 * the switch's 312-byte packets exactly, and a round cut into 4 sub-blocks
 * needs 4 bytes of mask more. Its DATA, sparse enough to arrive (76 bytes),
 * are never added: each is counted as 'result_too_big' and answered with an
 * ERROR UNSUPPORTED that says why, and so is its retransmission (without
 * that check the block completed with no buffer for its RESULT, and every
 * retransmission found none either: the workers stalled, counted only as
 * no_buffer). An uncut round of 64 and a cut round of 32 are served.
 */
#define NO_ROOM_PKT (INA_HDR_SIZE + 64 * 4)
static void
test_pipeline_sub_no_room(void **state)
{
	struct t *t = *state;
	struct tjob j = { .id = 1803,
			  .token = 0x181a,
			  .world = 2,
			  .lanes = 1,
			  .max_block = 64,
			  .enc = INA_ENC_F32 };
	struct blk b = { .tensor_id = 5, .round = 1, .tensor_len = 64, .block_size = 64 };
	const struct ina_sub_mask m0 = wc_mask(0x1, 0);
	const struct pipeline_stats *st;
	float x[64], want[64];
	uint8_t payload[64 * 4];
	struct ina_sub_mask u;
	struct wc_got g;

	/* The switch's packets, and its port's buffers, hold 312 bytes. */
	ina_pkt_pool_destroy(t->pool);
	t->pool = ina_pkt_pool_create(NB_PKTS, NO_ROOM_PKT);
	assert_non_null(t->pool);
	t->in_pool = t->cfg.pool = t->pool;
	t->cfg.slot_elems = 64;
	t->cfg.max_pkt = NO_ROOM_PKT;
	for (int i = 0; i < 64; i++) {
		x[i] = (float)(i + 1);
		want[i] = 2 * x[i];
	}
	start(t);
	st = pipeline_stats(t->p);
	join_all(t, &j);

	/* Round 1 cut into 4, sub-block 0 alone from each rank, and a resend. */
	for (uint16_t r = 0; r < 3; r++) {
		assert_int_equal(push_sub(t, &j, r % 2, &b, 2, INA_BLOCK_END, x, &m0), 1);
		take_one(t, &g);
		check_error(&g, j.id, j.token, INA_WERR_UNSUPPORTED);
		check_unicast(&g, peer_of(&j, r % 2));
		assert_msg_has(&g, "64 f32 elements cut into 4 sub-blocks does not fit the "
				   "switch's 312-byte packets");
	}
	assert_int_equal(st->drop[PDROP_TOO_BIG], 3);
	assert_int_equal(st->drop[PDROP_NO_BUFFER], 0);
	assert_int_equal(st->results, 0);

	/* Round 2, uncut: the RESULT of 312 bytes. */
	b.round = 2;
	for (uint16_t r = 0; r < 2; r++) {
		struct ina_hdr h = data_hdr(&j, r, &b, INA_BLOCK_END, 0, 1);

		wc_put_words(payload, x, 64);
		assert_int_equal(rx(t, mk_pkt(t, peer_of(&j, r), &h, payload, sizeof(payload))),
				 r == 1);
	}
	take_one(t, &g);
	check_result(&g, &j, &b, INA_BLOCK_END, want);
	assert_int_equal(g.len, NO_ROOM_PKT);

	/* Round 3, blocks of 32 cut into 4 (188 bytes at most): served. */
	b.round = 3;
	b.block_size = 32;
	b.ver = 1;
	memset(&u, 0, sizeof(u));
	memset(want, 0, sizeof(want));
	for (uint16_t r = 0; r < 2; r++) {
		assert_int_equal(push_sub(t, &j, r, &b, 2, INA_BLOCK_END, x, &m0), r == 1);
		sub_ref(want, &u, x, &m0, 32, 8);
	}
	take_one(t, &g);
	check_sub_result(&g, &j, &b, 2, INA_BLOCK_END, want, &u);
	assert_int_equal(st->drop[PDROP_TOO_BIG], 3);
	assert_int_equal(st->results, 2);
	done(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pipeline_join_ack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_join_cookie, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_reply_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_pool_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_fair_share, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_host_aggregator, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_join_max_pkt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_join_old_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_join_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_aggregate_f32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_aggregate_i32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_aggregate_bf16, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_sub_f32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_sub_i32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_sub_no_room, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_sub_bf16, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_sub_replica, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_dead_rank, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_keepalive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_wait_not_live, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_drain_shutdown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_duplicates_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_lost_result, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_result_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_reordering, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_exact_match, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_slot_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_reference_sum, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_two_jobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_fin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_idle_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_leave, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_no_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_wait_rate_limit_at_time_zero, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_unused_half_is_no_match, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_replica_takeover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_replica_i32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_replica_admission, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_replica_shutdown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_replica_standby_linger, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_replica_config, setup, teardown),
	};

	peers_init();
	ina_log_set_level(INA_LOG_ERR);
	return cmocka_run_group_tests_name("pipeline", tests, NULL, NULL);
}
