/* SPDX-License-Identifier: MIT */
/*
 * The replica switch end to end, in process (fabric.c): host engines, a
 * primary pipeline and a replica pipeline standing by for it. The primary is
 * killed (everything to and from it lost from one packet on) at every packet
 * of a run in turn, and at points spread over several rounds with random
 * loss, in f32 and i32, and stalled (back after a while) under loss: every
 * round of every worker must come out bit-exact (no contribution lost or
 * counted twice), the replica must take over at most once, each worker must
 * follow it at most once, and the job must end with a FIN at the replica.
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
#define N 300 /* 38 blocks: every lane has several */
#define ROUNDS 4
#define MS 1000000ull
#define KILL_POINTS 25

static float ins[WORLD][N], outs[WORLD][N];
static float *in_p[WORLD], *out_p[WORLD];

static uint64_t
hash(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Round 'round' of every rank: block-sparse (about 60 % of the blocks), values
 * k 2^-10 that sum exactly in any order, different on every rank, so that a
 * contribution counted twice or lost changes the sum. */
static void
make_round(uint64_t seed, int round)
{
	for (uint16_t r = 0; r < WORLD; r++) {
		for (uint32_t b = 0; b * BLOCK < N; b++) {
			uint64_t hb = hash(seed ^ (uint64_t)round << 40 ^ r * 1000003ull ^
					   b * 7919ull);
			int on = hb % 5 < 3;

			for (uint32_t i = b * BLOCK; i < N && i < (b + 1) * BLOCK; i++) {
				int k = (int)(hash(hb + i) % 2047) - 1023;

				ins[r][i] = on ? (float)(k ? k : 1) / 1024.0f : 0.0f;
			}
		}
		in_p[r] = ins[r];
		out_p[r] = outs[r];
		memset(outs[r], 0x7f, sizeof(outs[r]));
	}
}

static void
check_round(int round, int64_t kill)
{
	for (uint32_t i = 0; i < N; i++) {
		float want = 0;

		for (uint16_t r = 0; r < WORLD; r++)
			want += ins[r][i];
		for (uint16_t r = 0; r < WORLD; r++)
			if (memcmp(&outs[r][i], &want, sizeof(float)) != 0)
				fail_msg("kill at packet %lld, round %d, rank %u element %u: got "
					 "%.9g want %.9g",
					 (long long)kill, round, r, i, (double)outs[r][i],
					 (double)want);
	}
}

struct marks {
	uint64_t joined;  /* packets put on the wire by the end of the join */
	uint64_t reduced; /* ... by the end of the last round */
};

/*
 * One job of ROUNDS rounds with the primary killed when packet 'kill' goes
 * on the wire (-1: never). Returns the replica's takeovers; 'm' gets the
 * packet counts of the run.
 */
static uint64_t
run_paused(uint8_t enc, int64_t kill, uint64_t pause_ns, double drop, uint64_t seed,
	   struct marks *m, int lose_announce_to)
{
	struct engine_config ec;
	struct fabric f;
	uint64_t takeovers;
	uint64_t followed = 0;

	engine_config_init(&ec);
	fabric_peer(&ec.replica, FABRIC_REPLICA);
	ec.failover_ns = 60 * MS;
	ec.rto_max_ns = 20 * MS; /* resends (and WAITs) well within it */
	fabric_init(&f, WORLD, LANES, BLOCK, enc, NULL, &ec);
	assert_non_null(f.replica);
	f.faults.drop_rate = drop;
	f.rng = hash(seed) | 1;
	f.kill_primary_seq = kill;
	f.revive_after_ns = pause_ns;
	f.lose_announce_to = lose_announce_to;
	if (fabric_join(&f) < 0)
		fail_msg("kill at packet %lld: the join failed: %s", (long long)kill,
			 engine_error_msg(f.hosts[0]));
	m->joined = f.seq;
	for (int round = 0; round < ROUNDS; round++) {
		make_round(seed, round);
		if (fabric_allreduce(&f, 1, in_p, out_p, N, BLOCK, ENGINE_SUM) < 0) {
			for (uint16_t r = 0; r < WORLD; r++)
				if (engine_error(f.hosts[r]))
					fail_msg("kill at packet %lld, round %d: rank %u: %s",
						 (long long)kill, round, r,
						 engine_error_msg(f.hosts[r]));
			fail_msg("kill at packet %lld, round %d: no end", (long long)kill, round);
		}
		check_round(round, kill);
	}
	m->reduced = f.seq;
	assert_int_equal(fabric_finish(&f), 0);
	takeovers = pipeline_stats(f.replica)->takeovers;
	assert_true(takeovers <= 1);
	for (uint16_t r = 0; r < WORLD; r++) {
		const struct engine_stats *st = engine_stats(f.hosts[r]);

		assert_true(st->failovers <= 1);
		assert_int_equal(st->failovers, engine_failed_over(f.hosts[r]));
		followed += st->failovers;
		/* Only a replica that took over can have been followed. */
		if (st->failovers)
			assert_int_equal(takeovers, 1);
	}
	if (kill < 0) {
		assert_int_equal(takeovers, 0);
		assert_int_equal(f.killed, 0);
	}
	/* The primary died while rounds ran: the replica had to finish them. */
	if (takeovers)
		assert_true(followed >= 1);
	fabric_fini(&f);
	return takeovers;
}

static uint64_t
run(uint8_t enc, int64_t kill, double drop, uint64_t seed, struct marks *m)
{
	return run_paused(enc, kill, 0, drop, seed, m, -1);
}

/* Kill points spread over the rounds of a run without a kill. */
static void
sweep(uint8_t enc, double drop, uint64_t seed)
{
	struct marks ref, m;
	uint64_t taken = 0;

	assert_int_equal(run(enc, -1, drop, seed, &ref), 0);
	assert_true(ref.reduced > ref.joined + 100);
	for (int k = 0; k < KILL_POINTS; k++) {
		int64_t kill = (int64_t)(ref.joined + (ref.reduced - ref.joined) *
							      (uint64_t)(2 * k + 1) /
							      (2 * KILL_POINTS));

		taken += run(enc, kill, drop, seed, &m);
	}
	/* Nearly every kill point lies before traffic only the primary could
	 * carry; a point where only the replica's last fan-out was left may
	 * need no takeover. */
	assert_true(taken >= KILL_POINTS - 1);
}

/* Without loss, the primary killed at every packet of the rounds in turn. */
static void
test_failover_every_packet(void **state)
{
	struct marks ref, m;
	uint64_t taken = 0, points = 0;

	(void)state;
	assert_int_equal(run(INA_ENC_F32, -1, 0.0, 5, &ref), 0);
	for (uint64_t kill = ref.joined; kill < ref.reduced; kill++, points++)
		taken += run(INA_ENC_F32, (int64_t)kill, 0.0, 5, &m);
	/* Only the last packets of the last round can go without the primary. */
	assert_true(taken + 8 >= points);
}

/*
 * The primary only stalls (cut off, then back with its state) for less, a
 * little more and much more than the failover time, under 5 % loss: some
 * workers may go on with it while others follow the replica, and those that
 * missed the announcement find it by probing the replica. Every sum still
 * exact, every run to its end.
 */
static void
test_failover_primary_stalls(void **state)
{
	static const uint64_t pauses[] = { 30 * MS, 80 * MS, 400 * MS };
	struct marks ref, m;

	(void)state;
	for (unsigned p = 0; p < sizeof(pauses) / sizeof(pauses[0]); p++) {
		for (uint64_t seed = 31; seed < 34; seed++) {
			assert_int_equal(run(INA_ENC_F32, -1, 0.05, seed, &ref), 0);
			for (int k = 0; k < KILL_POINTS; k++) {
				int64_t kill = (int64_t)(ref.joined +
							 (ref.reduced - ref.joined) *
								 (uint64_t)(2 * k + 1) /
								 (2 * KILL_POINTS));

				run_paused(INA_ENC_F32, kill, pauses[p], 0.05, seed, &m, -1);
			}
		}
	}
}

/*
 * Split views made on purpose: the primary stalls for a little more than the
 * failover time, and the replica's announcement to rank 1 is lost. When the
 * primary is back, rank 1 hears its WAITs while the others follow the
 * replica; its probe of the replica brings the announcement again.
 */
static void
test_failover_lost_announcement(void **state)
{
	struct marks ref, m;
	uint64_t taken = 0, runs = 0;

	(void)state;
	for (uint64_t seed = 41; seed < 47; seed++) {
		double drop = seed < 43 ? 0.0 : 0.03;

		assert_int_equal(run(INA_ENC_F32, -1, drop, seed, &ref), 0);
		for (int k = 0; k < KILL_POINTS; k++, runs++) {
			int64_t kill = (int64_t)(ref.joined + (ref.reduced - ref.joined) *
								      (uint64_t)(2 * k + 1) /
								      (2 * KILL_POINTS));

			taken += run_paused(INA_ENC_F32, kill, 80 * MS, drop, seed, &m, 1);
		}
	}
	assert_true(taken + 6 >= runs);
}

static void
test_failover_f32(void **state)
{
	(void)state;
	sweep(INA_ENC_F32, 0.0, 1);
}

static void
test_failover_i32(void **state)
{
	(void)state;
	sweep(INA_ENC_I32, 0.0, 2);
}

static void
test_failover_f32_loss(void **state)
{
	(void)state;
	for (uint64_t seed = 11; seed < 14; seed++)
		sweep(INA_ENC_F32, 0.03, seed);
}

static void
test_failover_i32_loss(void **state)
{
	(void)state;
	for (uint64_t seed = 21; seed < 23; seed++)
		sweep(INA_ENC_I32, 0.03, seed);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_failover_every_packet),
		cmocka_unit_test(test_failover_f32),
		cmocka_unit_test(test_failover_i32),
		cmocka_unit_test(test_failover_f32_loss),
		cmocka_unit_test(test_failover_primary_stalls),
		cmocka_unit_test(test_failover_lost_announcement),
		cmocka_unit_test(test_failover_i32_loss),
	};

	ina_log_set_level(INA_LOG_ERR);
	return cmocka_run_group_tests_name("failover", tests, NULL, NULL);
}
