/* SPDX-License-Identifier: MIT */
/*
 * Give-back at a round boundary (--share fair, docs/PROTOCOL.md 5.11): three
 * real engines run a job of 12 lanes on a switch of 12 slots, with loss and
 * reordering; a second job's JOIN arrives and waits (join_wait) while the
 * switch marks the first job's RESULTs RESHAPE (6 lanes from a later round).
 * Every sum before, across and after the reshape is exact; the engines run
 * on 6 lanes from that round; the switch frees the 6 slots once every rank
 * has moved on, and the second job is then admitted with its share (6 lanes,
 * GRANT): the two jobs hold equal shares.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"
#include "fabric.h"
#include "ina/pkt.h"
#include "ina/wire.h"
#include "pipeline.h"

#define WORLD 3
#define LANES 12
#define MAXB 16
#define N 700 /* 44 blocks of 16: every lane busy */

struct taps {
	uint64_t reshape_results; /* RESULTs flagged RESHAPE (6 lanes) */
	uint64_t other_reshape;	  /* RESHAPE with another lane count */
};

static void
tap(void *arg, const struct ina_pkt *pkt)
{
	struct taps *tp = arg;
	struct ina_hdr h;

	if (pkt->len < INA_HDR_SIZE)
		return;
	ina_wire_decode_hdr(pkt->data, &h);
	if (h.type == INA_T_RESULT && (h.flags & INA_F_RESHAPE)) {
		if (h.status == LANES / 2)
			tp->reshape_results++;
		else
			tp->other_reshape++;
	}
}

/* A JOIN of job 99 (world 1, 12 lanes) straight into the switch: its answer,
 * or NULL when it waits. */
static struct ina_pkt *
join_other(struct fabric *f)
{
	struct ina_pkt *in = ina_pkt_alloc(f->pool), *out[1];
	struct ina_hdr h;
	uint16_t n;

	assert_non_null(in);
	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = INA_T_JOIN;
	h.encoding = INA_ENC_F32;
	h.job_id = 99;
	h.token = 0x99;
	h.block_size = MAXB;
	ina_wire_encode_hdr(&h, in->data);
	ina_wire_encode_join(1, LANES, MAXB, in->data + INA_HDR_SIZE);
	in->len = INA_HDR_SIZE + sizeof(struct ina_wire_join);
	fabric_peer(&in->peer, 6);
	n = pipeline_rx_burst(f->sw, &in, 1, f->now, out);
	return n ? out[0] : NULL;
}

/* One allreduce of small integers (exact in any order), checked. */
static void
round_exact(struct fabric *f, uint32_t k)
{
	assert_int_equal(fabric_round_exact(f, k, N, MAXB), 0);
}

/* A job of WORLD workers on LANES lanes filling a switch of LANES slots that
 * shares them fairly, with give-back waiting up to 'wait_ns' (0: none). */
static void
fair_fabric(struct fabric *f, uint64_t wait_ns)
{
	struct pipeline_config pc;

	pipeline_config_init(&pc);
	pc.nb_slots = LANES;
	pc.slot_elems = MAXB;
	pc.share.policy = SHARE_FAIR;
	pc.share_wait_ns = wait_ns;
	fabric_init(f, WORLD, LANES, MAXB, INA_ENC_F32, &pc, NULL);
}

static void
give_back(void **state)
{
	struct fabric f;
	struct taps tp = { 0 };
	struct ina_pkt *ack;
	struct ina_hdr h;
	uint16_t world, lanes, max_block;

	(void)state;
	fair_fabric(&f, 5000000000ull);
	f.faults.drop_rate = 0.03;
	f.faults.shuffle = 1;
	f.faults.seed = 11;
	f.tap = tap;
	f.tap_arg = &tp;
	assert_int_equal(fabric_join(&f), 0);
	round_exact(&f, 0);
	assert_int_equal(pipeline_free_slots(f.sw), 0);

	/* Job 99 wants its share: it waits, job 7 is told to give 6 back. */
	assert_null(join_other(&f));
	assert_int_equal(pipeline_stats(f.sw)->drop[PDROP_JOIN_WAIT], 1);
	assert_int_equal(pipeline_stats(f.sw)->reshapes, 1);
	assert_null(join_other(&f)); /* the worker's resend: still waiting */
	assert_int_equal(pipeline_stats(f.sw)->reshapes, 1);

	/* Round 1: still 12 lanes, its results say "6 lanes from round 2". */
	round_exact(&f, 1);
	for (uint16_t r = 0; r < WORLD; r++)
		assert_int_equal(engine_lanes(f.hosts[r]), LANES);
	assert_true(tp.reshape_results > 0);
	assert_int_equal(tp.other_reshape, 0);
	assert_int_equal(pipeline_free_slots(f.sw), 0);

	/* Round 2 on 6 lanes: every rank moved on, 6 slots come back. */
	round_exact(&f, 2);
	for (uint16_t r = 0; r < WORLD; r++) {
		assert_int_equal(engine_lanes(f.hosts[r]), LANES / 2);
		assert_int_equal(engine_stats(f.hosts[r])->reshapes, 1);
	}
	assert_int_equal(pipeline_stats(f.sw)->reshaped, 1);
	assert_int_equal(pipeline_free_slots(f.sw), LANES / 2);

	/* Job 99 now gets its share: 6 lanes, GRANT. */
	ack = join_other(&f);
	assert_non_null(ack);
	ina_wire_decode_hdr(ack->data, &h);
	assert_int_equal(h.type, INA_T_JOIN_ACK);
	assert_int_equal(h.flags, INA_F_GRANT);
	ina_wire_decode_join(ack->data + INA_HDR_SIZE, &world, &lanes, &max_block);
	assert_int_equal(lanes, LANES / 2);
	ina_pkt_free(ack);
	assert_int_equal(pipeline_free_slots(f.sw), 0);
	assert_int_equal(pipeline_nb_jobs(f.sw), 2);

	/* Job 7 goes on, exact, on its 6 lanes. */
	for (uint32_t k = 3; k < 8; k++)
		round_exact(&f, k);
	for (uint16_t r = 0; r < WORLD; r++)
		assert_int_equal(engine_lanes(f.hosts[r]), LANES / 2);
	assert_int_equal(pipeline_stats(f.sw)->reshapes, 1);
	fabric_fini(&f);
}

/* A job that cannot give back (no give-back: share_wait 0) keeps its lanes;
 * the new JOIN is refused at once, as before. */
static void
no_give_back(void **state)
{
	struct fabric f;
	struct ina_pkt *err;
	struct ina_hdr h;

	(void)state;
	fair_fabric(&f, 0);
	assert_int_equal(fabric_join(&f), 0);
	round_exact(&f, 0);
	err = join_other(&f);
	assert_non_null(err);
	ina_wire_decode_hdr(err->data, &h);
	assert_int_equal(h.type, INA_T_ERROR);
	assert_int_equal(h.status, INA_WERR_NO_SLOTS);
	ina_pkt_free(err);
	assert_int_equal(pipeline_stats(f.sw)->reshapes, 0);
	round_exact(&f, 1);
	fabric_fini(&f);
}

/* The wait runs out when the job that should give back does not run a
 * round: the JOIN is then answered with what is free (nothing: refused). */
static void
wait_runs_out(void **state)
{
	struct fabric f;
	struct ina_pkt *err;
	struct ina_hdr h;

	(void)state;
	fair_fabric(&f, 1000000000ull);
	assert_int_equal(fabric_join(&f), 0);
	round_exact(&f, 0);
	assert_null(join_other(&f));
	f.now += 999000000ull;
	assert_null(join_other(&f));
	f.now += 2000000ull;
	err = join_other(&f);
	assert_non_null(err);
	ina_wire_decode_hdr(err->data, &h);
	assert_int_equal(h.type, INA_T_ERROR);
	assert_int_equal(h.status, INA_WERR_NO_SLOTS);
	ina_pkt_free(err);
	/* The shrink still happens at the boundary; then job 99 gets in. */
	round_exact(&f, 1);
	round_exact(&f, 2);
	assert_int_equal(pipeline_free_slots(f.sw), LANES / 2);
	err = join_other(&f);
	assert_non_null(err);
	ina_wire_decode_hdr(err->data, &h);
	assert_int_equal(h.type, INA_T_JOIN_ACK);
	ina_pkt_free(err);
	fabric_fini(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(give_back),
		cmocka_unit_test(no_give_back),
		cmocka_unit_test(wait_runs_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
