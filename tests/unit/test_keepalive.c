/* SPDX-License-Identifier: MIT */
/*
 * Pauses are not deaths (issue 15, docs/PROTOCOL.md 5.7), in process
 * (fabric.c): three engines and the switch pipeline on a virtual clock, the
 * switch's peer timeout 1 s and the engines' own timeout 2 s. Rank 2 pauses
 * between two rounds (no allreduce, only its engine's timers running, as
 * libina's keepalive thread runs them) for five peer timeouts while ranks 0
 * and 1 wait in the second round:
 *   - with keepalives: no abort, no failure, one stall each, exact sums after;
 *   - the same on a switch in two lane partitions, and with a replica
 *     standing by (which hears the keepalives too, and takes nothing over);
 *   - without keepalives: the switch aborts the job within the peer timeout;
 *   - with a longest pause (pause_ns) of 3 s: the waiting ranks fail then;
 *   - a rank that dies mid-pause is still found within the peer timeout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fabric.h"
#include "ina.h"
#include "ina/log.h"

#define WORLD 3
#define LANES 4
#define BLOCK 8
#define N 100
#define MS 1000000ull
#define SEC 1000000000ull
#define PEER_TIMEOUT (1 * SEC)
#define PAUSE (5 * PEER_TIMEOUT)

static float ins[WORLD][N], outs[WORLD][N];
static float *in_p[WORLD], *out_p[WORLD];

/* Small integers / 8: every sum is exact in any order. */
static void
make_data(uint32_t seed)
{
	for (uint16_t r = 0; r < WORLD; r++) {
		for (uint32_t i = 0; i < N; i++)
			ins[r][i] = (float)((int)((seed * 7919u + r * 131u + i * 17u) % 64u) - 32) /
				    8.0f;
		in_p[r] = ins[r];
		out_p[r] = outs[r];
		memset(outs[r], 0x7f, sizeof(outs[r]));
	}
}

static void
check_sums(uint16_t world)
{
	for (uint32_t i = 0; i < N; i++) {
		float want = 0;

		for (uint16_t r = 0; r < world; r++)
			want += ins[r][i];
		for (uint16_t r = 0; r < world; r++)
			assert_true(outs[r][i] == want);
	}
}

/* A fabric of WORLD engines: keepalive and pause as given, peer timeout 1 s,
 * 'parts' lane partitions. */
static void
setup_x(struct fabric *f, uint64_t keepalive_ns, uint64_t pause_ns, uint16_t parts, int replica)
{
	struct engine_config ec;
	struct pipeline_config pc;

	engine_config_init(&ec);
	if (replica)
		fabric_peer(&ec.replica, FABRIC_REPLICA);
	ec.timeout_ns = 2 * SEC;
	ec.keepalive_ns = keepalive_ns;
	ec.pause_ns = pause_ns;
	pipeline_config_init(&pc);
	pc.nb_slots = 64;
	pc.slot_elems = BLOCK;
	pc.peer_timeout_ns = PEER_TIMEOUT;
	fabric_init(f, WORLD, LANES, BLOCK, INA_ENC_F32, &pc, &ec);
	if (parts > 1)
		fabric_partition(f, parts, &pc);
	assert_int_equal(fabric_join(f), 0);
	/* Round 0 with everyone. */
	make_data(1);
	assert_int_equal(fabric_allreduce(f, 0, in_p, out_p, N, BLOCK, ENGINE_SUM), 0);
	check_sums(WORLD);
}

static void
setup(struct fabric *f, uint64_t keepalive_ns, uint64_t pause_ns, uint16_t parts)
{
	setup_x(f, keepalive_ns, pause_ns, parts, 0);
}

/* Ranks 0 and 1 start round 1; rank 2 pauses: the fabric runs for 'len'
 * (rank 2's engine ticked all along, its allreduce not started), or until
 * rank 0 or 1 fails. Returns when the pause began. */
static uint64_t
pause_rank2(struct fabric *f, uint64_t len)
{
	uint64_t t0 = f->now;

	make_data(2);
	for (uint16_t r = 0; r < 2; r++)
		assert_int_equal(engine_allreduce(f->hosts[r], 1, in_p[r], out_p[r], N, BLOCK,
						  ENGINE_SUM, f->now),
				 0);
	/* fabric_run() stops at the limit while ranks 0 and 1 still run, and
	 * at once when one of them fails. */
	fabric_run(f, ENGINE_RUNNING, len);
	return t0;
}

static void
resume_rank2(struct fabric *f)
{
	assert_int_equal(engine_allreduce(f->hosts[2], 1, in_p[2], out_p[2], N, BLOCK, ENGINE_SUM,
					  f->now),
			 0);
	assert_int_equal(fabric_run(f, ENGINE_RUNNING, 10 * SEC), 0);
	check_sums(WORLD);
}

static void
test_pause_with_keepalives(void **state)
{
	const struct pipeline_stats *st;
	struct fabric f;
	uint64_t t0;

	(void)state;
	setup(&f, 200 * MS, 600 * SEC, 1);
	st = pipeline_stats(f.sw);
	t0 = pause_rank2(&f, PAUSE);
	assert_true(f.now - t0 >= PAUSE);
	for (uint16_t r = 0; r < 2; r++) {
		const struct engine_stats *es = engine_stats(f.hosts[r]);

		assert_int_equal(engine_error(f.hosts[r]), 0);
		assert_int_equal(engine_phase(f.hosts[r]), ENGINE_RUNNING);
		/* Stalled once (logged once), kept alive by LIVE WAITs. */
		assert_int_equal(es->stalls, 1);
		assert_true(es->waits > 10);
		assert_non_null(strstr(engine_stall(f.hosts[r]), "missing rank(s) 2"));
	}
	/* One keepalive per 200 ms of the pause, give or take one. */
	assert_in_range(engine_stats(f.hosts[2])->keepalives, PAUSE / (200 * MS) - 1,
			PAUSE / (200 * MS) + 2);
	/* Every keepalive sent reached the switch (ranks 0 and 1 send some
	 * too: their backoff cap, 200 ms, is no shorter than the period). */
	assert_int_equal(st->keepalives, engine_stats(f.hosts[0])->keepalives +
						 engine_stats(f.hosts[1])->keepalives +
						 engine_stats(f.hosts[2])->keepalives);
	assert_int_equal(st->jobs_aborted, 0);
	resume_rank2(&f);
	/* A round after the pause, all three. */
	make_data(3);
	assert_int_equal(fabric_allreduce(&f, 2, in_p, out_p, N, BLOCK, ENGINE_SUM), 0);
	check_sums(WORLD);
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
}

/* The switch in two lane partitions: the keepalives reach partition 0,
 * where the silence is measured, and its WAITs vouch for rank 2. */
static void
test_pause_with_keepalives_partitioned(void **state)
{
	struct fabric f;

	(void)state;
	setup(&f, 200 * MS, 600 * SEC, 2);
	pause_rank2(&f, PAUSE);
	for (uint16_t r = 0; r < 2; r++)
		assert_int_equal(engine_error(f.hosts[r]), 0);
	assert_true(pipeline_stats(f.parts[0])->keepalives > 20);
	assert_int_equal(pipeline_stats(f.parts[1])->keepalives, 0);
	assert_int_equal(pipeline_stats(f.sw)->jobs_aborted, 0);
	resume_rank2(&f);
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
}

/* With a replica standing by: the primary keeps the paused rank alive, the
 * replica its standby job (the keepalives reach both), nobody fails over. */
static void
test_pause_with_replica(void **state)
{
	struct fabric f;

	(void)state;
	setup_x(&f, 200 * MS, 600 * SEC, 1, 1);
	pause_rank2(&f, PAUSE);
	for (uint16_t r = 0; r < 2; r++)
		assert_int_equal(engine_error(f.hosts[r]), 0);
	assert_true(pipeline_stats(f.sw)->keepalives > 20);
	assert_true(pipeline_stats(f.replica)->keepalives > 20);
	assert_int_equal(pipeline_stats(f.sw)->jobs_aborted, 0);
	assert_int_equal(pipeline_stats(f.replica)->takeovers, 0);
	resume_rank2(&f);
	for (uint16_t r = 0; r < WORLD; r++)
		assert_false(engine_failed_over(f.hosts[r]));
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
}

/* The old behaviour without keepalives: the pause is taken for a death,
 * within the peer timeout (and a few retransmission timeouts). */
static void
test_pause_without_keepalive_dies(void **state)
{
	struct fabric f;
	uint64_t t0;

	(void)state;
	setup(&f, 0, 600 * SEC, 1);
	t0 = pause_rank2(&f, PAUSE);
	assert_true(f.now - t0 < PEER_TIMEOUT + 300 * MS);
	for (uint16_t r = 0; r < 2; r++) {
		assert_int_equal(engine_error(f.hosts[r]), INA_EPEER);
		assert_non_null(strstr(engine_error_msg(f.hosts[r]), "rank 2 silent"));
	}
	assert_int_equal(pipeline_stats(f.sw)->jobs_aborted, 1);
	assert_int_equal(engine_stats(f.hosts[2])->keepalives, 0);
	fabric_fini(&f);
}

/* The longest pause bounds the wait: with pause_ns 3 s, ranks 0 and 1
 * fail 3 s into rank 2's pause although the switch vouches for it. */
static void
test_pause_longer_than_bound_fails(void **state)
{
	struct fabric f;

	(void)state;
	setup(&f, 200 * MS, 3 * SEC, 1);
	pause_rank2(&f, 3 * SEC - 10 * MS);
	for (uint16_t r = 0; r < 2; r++)
		assert_int_equal(engine_error(f.hosts[r]), 0);
	fabric_run(&f, ENGINE_RUNNING, 20 * MS);
	for (uint16_t r = 0; r < 2; r++) {
		assert_int_equal(engine_error(f.hosts[r]), INA_EPEER);
		assert_non_null(strstr(engine_error_msg(f.hosts[r]), "longest pause"));
		assert_non_null(strstr(engine_error_msg(f.hosts[r]), "rank(s) 2"));
	}
	assert_int_equal(pipeline_stats(f.sw)->jobs_aborted, 0);
	fabric_fini(&f);
}

/* A rank that pauses, then dies (its keepalives stop): the others hear of
 * it within the peer timeout of its last keepalive. */
static void
test_death_during_pause_found(void **state)
{
	struct fabric f;
	uint64_t died;

	(void)state;
	setup(&f, 200 * MS, 600 * SEC, 1);
	pause_rank2(&f, 2 * SEC);
	for (uint16_t r = 0; r < 2; r++)
		assert_int_equal(engine_error(f.hosts[r]), 0);
	/* Dead: its engine is never ticked again. */
	engine_destroy(f.hosts[2]);
	f.hosts[2] = NULL;
	f.world = 2;
	died = f.now;
	fabric_run(&f, ENGINE_RUNNING, 5 * SEC);
	assert_true(f.now - died < PEER_TIMEOUT + 300 * MS);
	for (uint16_t r = 0; r < 2; r++) {
		assert_int_equal(engine_error(f.hosts[r]), INA_EPEER);
		assert_non_null(strstr(engine_error_msg(f.hosts[r]), "rank 2 silent"));
	}
	fabric_fini(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pause_with_keepalives),
		cmocka_unit_test(test_pause_with_keepalives_partitioned),
		cmocka_unit_test(test_pause_with_replica),
		cmocka_unit_test(test_pause_without_keepalive_dies),
		cmocka_unit_test(test_pause_longer_than_bound_fails),
		cmocka_unit_test(test_death_during_pause_found),
	};

	ina_log_set_level(INA_LOG_ERR);
	return cmocka_run_group_tests_name("keepalive", tests, NULL, NULL);
}
