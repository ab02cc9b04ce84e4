/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz targets of fuzz/ found, each kept as a unit test with the
 * smallest packet sequence that shows it:
 *  - fuzz_engine: a RESULT whose next pointer lies past the worker's own
 *    next non-zero block (a switch skipping a block this worker holds, or a
 *    lane finished while it still holds one). The engine took it, moved the
 *    lane to that block and sent DATA whose next pointer was not past its
 *    block, which every switch drops (next_not_past_block), until the
 *    operation timed out. It now fails the operation with ENGINE_EPROTO at once.
 *  - fuzz_engine, with a replica: the primary silent for the failover time
 *    (FAILOVER sent to the replica), then heard again (a WAIT) when the
 *    operation had made no progress for the failover time either. engine_tx
 *    sent the probe to the replica at once, but engine_next_deadline() still
 *    named the FAILOVER's resend or the lane's timeout, later: ina.c, which
 *    sleeps until that deadline, sent the probe up to a backoff late. Hearing
 *    the primary now ends the silence (fo_active) when the packet comes in,
 *    so the deadline is the probe's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"
#include "ina/pkt.h"
#include "ina/wire.h"
#include "wire_check.h"

#define NB_PKTS 16
#define BUF_SIZE 512
#define JOB 7u
#define TOKEN 0x0123456789abcdefull
#define EPOCH 3u
#define MS 1000000ull
#define US 1000ull

/* One worker of a world of 2 with one lane, joined, running an f32
 * allreduce of 12 elements in blocks of 4 whose blocks 0 and 1 are not zero:
 * its first DATA is block 0 announcing next block 1. */
struct t {
	struct ina_pkt_pool *pool;
	struct engine_config cfg;
	struct engine *e;
	uint64_t now;
	float in[12], out[12];
};

static struct ina_job_params
params(void)
{
	struct ina_job_params p = {
		.job_id = JOB,
		.epoch = EPOCH,
		.token = TOKEN,
		.world = 2,
		.lanes = 1,
		.max_block = 4,
		.encoding = INA_ENC_F32,
	};
	return p;
}

static void
rx(struct t *t, const struct ina_hdr *h, const void *payload, size_t size)
{
	struct ina_pkt *pkt = wc_mk_pkt(t->pool, &t->cfg.sw, h, payload, size);

	engine_rx(t->e, &pkt, 1, t->now);
}

/* engine_tx(): every packet must be valid for the job; returns how many. */
static uint16_t
tx(struct t *t, struct wc_got *g)
{
	struct ina_pkt *pkts[4];
	struct ina_job_params p = params();
	uint16_t n = engine_tx(t->e, t->now, pkts, 4);

	for (uint16_t i = 0; i < n; i++) {
		wc_decode(g, pkts[i], &p); /* fails the test on an invalid packet */
		ina_pkt_free(pkts[i]);
	}
	return n;
}

static void
start(struct t *t)
{
	struct ina_hdr h = wc_hdr(INA_T_JOIN_ACK, INA_ENC_F32, JOB, EPOCH, INA_RANK_SWITCH, TOKEN);
	uint8_t join[sizeof(struct ina_wire_join)];
	struct wc_got g;

	memset(t, 0, sizeof(*t));
	t->pool = ina_pkt_pool_create(NB_PKTS, BUF_SIZE);
	assert_non_null(t->pool);
	engine_config_init(&t->cfg);
	t->cfg.job_id = JOB;
	t->cfg.rank = 0;
	t->cfg.world = 2;
	t->cfg.lanes = 1;
	t->cfg.max_block = 4;
	t->cfg.encoding = INA_ENC_F32;
	t->cfg.token = TOKEN;
	t->cfg.sw.len = 16;
	t->cfg.rto_ns = t->cfg.rto_min_ns = MS;
	t->cfg.rto_max_ns = 8 * MS;
	t->cfg.timeout_ns = 100 * MS;
	t->cfg.pool = t->pool;
	t->now = 1000 * MS;
	t->e = engine_create(&t->cfg);
	assert_non_null(t->e);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_int_equal(tx(t, &g), 1);
	ina_wire_encode_join(2, 1, 4, join);
	rx(t, &h, join, sizeof(join));
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	t->in[0] = 1.0f; /* block 0 */
	t->in[5] = 2.0f; /* block 1 */
	assert_int_equal(engine_allreduce(t->e, 9, t->in, t->out, 12, 4, ENGINE_SUM, t->now), 0);
	assert_int_equal(tx(t, &g), 1);
	assert_int_equal(g.h.block, 0);
	assert_int_equal(g.h.next, 1);
}

static void
finish(struct t *t)
{
	engine_destroy(t->e);
	assert_int_equal(ina_pkt_pool_avail(t->pool), NB_PKTS);
	ina_pkt_pool_destroy(t->pool);
}

/* The RESULT of block 0 with next pointer 'next'. */
static void
rx_result0(struct t *t, uint32_t next)
{
	struct ina_hdr h = wc_hdr(INA_T_RESULT, INA_ENC_F32, JOB, EPOCH, INA_RANK_SWITCH, TOKEN);
	uint8_t payload[16];
	float sum[4] = { 3.0f, 0, 0, 0 };

	h.tensor_id = 9;
	h.tensor_len = 12;
	h.block_size = 4;
	h.block = 0;
	h.next = next;
	h.n_elems = 4;
	wc_put_words(payload, sum, 4);
	rx(t, &h, payload, sizeof(payload));
}

static void
check_refused(struct t *t)
{
	struct wc_got g;

	assert_int_equal(engine_error(t->e), ENGINE_EPROTO);
	assert_non_null(strstr(engine_error_msg(t->e), "past this worker's next non-zero block 1"));
	/* Nothing invalid goes out, now or at the next timeout. */
	assert_int_equal(tx(t, &g), 0);
	t->now += 10 * MS;
	assert_int_equal(tx(t, &g), 0);
}

/* Block 2 announced while this worker's next block is 1. */
static void
test_result_next_past_mine(void **state)
{
	struct t t;

	(void)state;
	start(&t);
	rx_result0(&t, 2);
	check_refused(&t);
	finish(&t);
}

/* The lane declared finished while this worker still holds block 1. */
static void
test_result_end_before_mine(void **state)
{
	struct t t;

	(void)state;
	start(&t);
	rx_result0(&t, INA_BLOCK_END);
	check_refused(&t);
	finish(&t);
}

/* The announced block itself is fine, and the lane goes on. */
static void
test_result_next_mine(void **state)
{
	struct t t;
	struct wc_got g;

	(void)state;
	start(&t);
	rx_result0(&t, 1);
	assert_int_equal(engine_error(t.e), 0);
	assert_int_equal(tx(&t, &g), 1);
	assert_int_equal(g.h.block, 1);
	assert_int_equal(g.h.next, INA_BLOCK_END);
	assert_int_equal(g.h.n_elems, 4);
	finish(&t);
}

/* ---- With a replica ---- */

#define FAILOVER_NS (20 * MS)

static const struct ina_peer *
replica(const struct t *t)
{
	return &t->cfg.replica;
}

static void
rx_from(struct t *t, const struct ina_peer *src, const struct ina_hdr *h, const void *payload,
	size_t size)
{
	struct ina_pkt *pkt = wc_mk_pkt(t->pool, src, h, payload, size);

	engine_rx(t->e, &pkt, 1, t->now);
}

/* engine_tx() into 'g' (up to 4 packets); each valid for the job. */
static uint16_t
tx_all(struct t *t, struct wc_got *g)
{
	struct ina_pkt *pkts[4];
	struct ina_job_params p = params();
	uint16_t n = engine_tx(t->e, t->now, pkts, 4);

	for (uint16_t i = 0; i < n; i++) {
		wc_decode(&g[i], pkts[i], &p);
		ina_pkt_free(pkts[i]);
	}
	return n;
}

/* As start(), with a replica standing by: JOIN, JOIN_ACK from the primary,
 * STANDBY JOIN, STANDBY JOIN_ACK from the replica, the allreduce's first
 * DATA (block 0) to the primary. */
static void
start_replica(struct t *t)
{
	struct ina_hdr h = wc_hdr(INA_T_JOIN_ACK, INA_ENC_F32, JOB, EPOCH, INA_RANK_SWITCH, TOKEN);
	uint8_t join[sizeof(struct ina_wire_join)];
	struct wc_got g[4];

	memset(t, 0, sizeof(*t));
	t->pool = ina_pkt_pool_create(NB_PKTS, BUF_SIZE);
	assert_non_null(t->pool);
	engine_config_init(&t->cfg);
	t->cfg.job_id = JOB;
	t->cfg.world = 2;
	t->cfg.lanes = 1;
	t->cfg.max_block = 4;
	t->cfg.encoding = INA_ENC_F32;
	t->cfg.token = TOKEN;
	t->cfg.sw.len = 16;
	t->cfg.replica.len = 16;
	memset(t->cfg.replica.bytes, 0x43, 16);
	t->cfg.failover_ns = FAILOVER_NS;
	t->cfg.rto_ns = t->cfg.rto_min_ns = MS;
	t->cfg.rto_max_ns = 8 * MS;
	t->cfg.timeout_ns = 100 * MS;
	t->cfg.pool = t->pool;
	t->now = 1000 * MS;
	t->e = engine_create(&t->cfg);
	assert_non_null(t->e);
	assert_int_equal(engine_join(t->e, t->now), 0);
	assert_int_equal(tx_all(t, g), 1);
	ina_wire_encode_join(2, 1, 4, join);
	rx(t, &h, join, sizeof(join));
	assert_int_equal(tx_all(t, g), 1);
	assert_true(ina_peer_equal(&g[0].peer, replica(t)));
	assert_int_equal(g[0].h.flags, INA_F_STANDBY);
	h.flags = INA_F_STANDBY;
	rx_from(t, replica(t), &h, join, sizeof(join));
	assert_int_equal(engine_phase(t->e), ENGINE_READY);
	t->in[0] = 1.0f;
	t->in[5] = 2.0f;
	assert_int_equal(engine_allreduce(t->e, 9, t->in, t->out, 12, 4, ENGINE_SUM, t->now), 0);
	assert_int_equal(tx_all(t, g), 1);
	assert_false(ina_peer_equal(&g[0].peer, replica(t)));
	assert_int_equal(g[0].h.block, 0);
}

/* Silent primary, FAILOVER, then the primary's WAIT: the probe is due now,
 * and the deadline says so. */
static void
test_probe_after_failover_deadline(void **state)
{
	struct ina_hdr h = wc_hdr(INA_T_WAIT, INA_ENC_F32, JOB, EPOCH, INA_RANK_SWITCH, TOKEN);
	uint8_t missing[INA_WAIT_PAYLOAD] = { 0, 0, 0, 0, 0, 0, 0, 2 };
	struct wc_got g[4];
	struct t t;
	uint16_t n, k;

	(void)state;
	start_replica(&t);
	/* Nothing from the primary for the failover time: FAILOVER. */
	t.now += FAILOVER_NS;
	n = tx_all(&t, g);
	for (k = 0; k < n && g[k].h.type != INA_T_FAILOVER; k++)
		;
	assert_true(k < n);
	assert_true(ina_peer_equal(&g[k].peer, replica(&t)));
	assert_int_equal(engine_stats(t.e)->failover_sent, 1);
	/* The primary speaks again: a WAIT for block 0. No progress for the
	 * failover time, so the probe goes now, and the deadline is now. */
	t.now += 10 * US;
	h.flags = 0;
	h.tensor_id = 9;
	h.tensor_len = 12;
	h.block_size = 4;
	h.block = 0;
	rx(&t, &h, missing, sizeof(missing));
	assert_true(engine_next_deadline(t.e) <= t.now);
	n = tx_all(&t, g);
	for (k = 0; k < n; k++)
		if (g[k].h.type == INA_T_DATA && ina_peer_equal(&g[k].peer, replica(&t)))
			break;
	assert_true(k < n);
	assert_int_equal(g[k].h.block, 0);
	assert_int_equal(engine_stats(t.e)->probes, 1);
	/* Then nothing before the next deadline. */
	assert_true(engine_next_deadline(t.e) > t.now);
	assert_int_equal(tx_all(&t, g), 0);
	finish(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_result_next_past_mine),
		cmocka_unit_test(test_result_end_before_mine),
		cmocka_unit_test(test_result_next_mine),
		cmocka_unit_test(test_probe_after_failover_deadline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
