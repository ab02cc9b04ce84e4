/* SPDX-License-Identifier: MIT */
/*
 * The tensor round (host/src/tensor_round.c), exactly as ina_allreduce() runs
 * it around each engine, over the in-process fabric (four engines and the
 * switch, with loss): each worker plans its own B from the previous result
 * and hands it to its own engine, so workers that disagreed would be dropped
 * by the switch and time out. Checked: every worker picks the same B every
 * round; every worker receives the same bits; a block comes back DEFERRED
 * exactly when its sum is under the round's bound; on dyadic data the sum
 * over rounds of the results plus every final residual equals the sum of the
 * inputs bit for bit (no update lost); on the real gradients in data/ the
 * chosen B changes as the kept mass (so the density) changes.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dyadic.h"
#include "fabric.h"
#include "planner.h"
#include "ina/encode.h"
#include "ina/npy.h"
#include "ina/util.h"
#include "tensor_round.h"

#define WORLD 4
#define MAXN 71754 /* the real gradients' length */
#define MAX_ROUNDS 40
#define GRADS INA_SOURCE_DIR "/data/grads_cnn_digits_3it.npy"

static float grad[WORLD][MAXN], outs[WORLD][MAXN];
static double want[MAXN], got[MAXN];

struct run {
	uint32_t n;
	uint16_t max_block, lanes;
	uint8_t enc;
	struct ina_sparsify sp;
	double drop_rate;
	int rounds;
	int exact;	      /* dyadic inputs: sums checked bit for bit */
	uint32_t plan_period; /* tround_config.plan_period */
	int free_cuts;	      /* memif's prices of a packet and a byte, and a
			       * cut costing no more than its packets and
			       * bytes: the planner cuts */
	/* out */
	uint16_t B[MAX_ROUNDS];
	uint8_t sub_log[MAX_ROUNDS]; /* the round's cut, through the engines */
	uint64_t deferred;
	uint32_t plans; /* rounds worker 0's planner planned (tround_stats) */
};

/* Round k's plan differs from round 0's: another B or another cut. */
static int
moved_at(const struct run *ru, int k)
{
	return ru->B[k] != ru->B[0] || ru->sub_log[k] != ru->sub_log[0];
}

/* Dyadic values (dyadic.h), near-cancelling in runs of 64 elements, so some
 * sums are small at every B up to 64. */
static void
dyadic_grads(uint32_t n, int round)
{
	dyadic_cancel_grads(&grad[0][0], WORLD, n, MAXN, round, 64);
}

/* Dyadic too, with the mass in runs of 16: every eighth run holds values up
 * to 1023 2^-10, the rest at most 7 2^-10, so a mass target is met by fine
 * blocks and the planner has a reason to leave the largest B. */
static void
hot_grads(uint32_t n, int round)
{
	for (int r = 0; r < WORLD; r++)
		for (uint32_t i = 0; i < n; i++) {
			uint64_t st = (uint64_t)round * 7000003u + (uint64_t)r * n + i;
			uint64_t h = ina_splitmix64(&st);
			int hot = (i / 16) % 8 == 3;
			int k = hot ? (int)(h % 2047) - 1023 : (int)(h % 15) - 7;

			grad[r][i] = (float)k / 1024.0f;
		}
}

/* Dyadic, sparse and dense by turns: even rounds one run of 16 non-zero
 * values in every 1024 elements, odd rounds every element non-zero, so each
 * round's plan (from the last sum) differs from the one before. */
static void
alternating_grads(uint32_t n, int round)
{
	for (int r = 0; r < WORLD; r++)
		for (uint32_t i = 0; i < n; i++) {
			uint64_t st = (uint64_t)round * 7000003u + (uint64_t)r * n + i;
			int k = (int)(ina_splitmix64(&st) % 255) - 127;

			if (k == 0 || (round % 2 == 0 && i % 1024 >= 16))
				k = round % 2 ? 1 : 0;
			grad[r][i] = (float)k / 1024.0f;
		}
}

/* The same sum every round: dyadic values, and every block but one in four
 * holding only its first 16 (so the planner has blocks to skip). */
static void
steady_grads(uint32_t n, int round)
{
	(void)round;
	for (int r = 0; r < WORLD; r++)
		for (uint32_t i = 0; i < n; i++) {
			uint64_t st = (uint64_t)r * n + i;
			int k = (int)(ina_splitmix64(&st) % 255) - 127;

			if (k == 0 || ((i / 1024) % 4 != 0 && i % 1024 >= 16))
				k = 0;
			grad[r][i] = (float)k / 1024.0f;
		}
}

static struct ina_npy *npy;

/* The real gradients: worker r of iteration round mod 3. */
static void
real_grads(uint32_t n, int round)
{
	char err[256];

	if (!npy) {
		npy = ina_npy_open(GRADS, err, sizeof(err));
		if (!npy)
			fail_msg("%s", err);
	}
	assert_int_equal(ina_npy_dim(npy, 2), n);
	for (int r = 0; r < WORLD; r++)
		assert_int_equal(ina_npy_read_row(npy, (uint64_t)(round % 3) * WORLD + (uint64_t)r,
						  grad[r], n),
				 0);
}

/* Block b of the round: DEFERRED on every worker alike, exactly when the
 * sum of what was sent is under the bound, and then zeros; otherwise the
 * sum, bit for bit ('exact') or within the f32 bound. Returns 1 if deferred. */
static int
check_block(const struct run *ru, struct tround_step *step, uint32_t b)
{
	uint16_t B = step[0].block_size;
	uint32_t off = b * B, len = ru->n - off < B ? ru->n - off : B;
	int def = step[0].deferred ? step[0].deferred[b] : 0;
	float s[1024];

	for (int r = 1; r < WORLD; r++)
		assert_int_equal(step[r].deferred ? step[r].deferred[b] : 0, def);
	for (uint32_t i = 0; i < len; i++) {
		s[i] = 0;
		for (int r = 0; r < WORLD; r++)
			s[i] += step[r].send[off + i];
	}
	if (ru->exact)
		assert_int_equal(def,
				 step[0].bound > 0 && ina_enc_f32_deferred(s, len, step[0].bound));
	for (uint32_t i = 0; i < len; i++) {
		float g = outs[0][off + i];

		if (def) {
			assert_true(g == 0.0f);
		} else if (ru->exact) {
			assert_memory_equal(&g, &s[i], sizeof(float));
		} else {
			double a = 0, ref = 0;

			for (int r = 0; r < WORLD; r++) {
				a += fabs((double)step[r].send[off + i]);
				ref += step[r].send[off + i];
			}
			if (fabs(g - ref) > ina_enc_f32_bound(WORLD, a, 0))
				fail_msg("block %u element %u: %.9g, want %.9g", b, i, g, ref);
		}
	}
	return def;
}

/* A planning tensor round's configuration for the run 'ru' describes. */
static struct tround_config
run_config(const struct run *ru)
{
	struct tround_config tc;

	memset(&tc, 0, sizeof(tc));
	tc.n = ru->n;
	tc.sp = ru->sp;
	tc.plan = 1;
	tc.plan_period = ru->plan_period;
	if (ru->free_cuts) {
		tc.packet_ns = PLANNER_MEMIF_PACKET_NS;
		tc.byte_ns = PLANNER_MEMIF_BYTE_NS;
	}
	tc.max_block = ru->max_block;
	tc.encoding = ru->enc;
	tc.world = WORLD;
	tc.lanes = ru->lanes;
	return tc;
}

static void
run(struct run *ru, void (*gen)(uint32_t, int))
{
	struct fabric f;
	struct tround *tr[WORLD];
	struct tround_config tc = run_config(ru);
	float *out_p[WORLD];
	char err[256];
	fabric_init(&f, WORLD, ru->lanes, ru->max_block, ru->enc, NULL, NULL);
	f.faults.drop_rate = ru->drop_rate;
	f.faults.seed = 11;
	f.rng = 11;
	for (int r = 0; r < WORLD; r++) {
		tr[r] = tround_create(&tc, err, sizeof(err));
		if (!tr[r])
			fail_msg("%s", err);
		out_p[r] = outs[r];
	}
	memset(want, 0, sizeof(want));
	memset(got, 0, sizeof(got));
	ru->deferred = 0;
	assert_int_equal(fabric_join(&f), 0);
	for (int k = 0; k < ru->rounds; k++) {
		struct tround_step step[WORLD];
		const float *in_p[WORLD];
		uint16_t bs[WORLD];
		uint8_t cut[WORLD];
		uint32_t nb;

		gen(ru->n, k);
		for (int r = 0; r < WORLD; r++) {
			for (uint32_t i = 0; i < ru->n; i++)
				want[i] += grad[r][i];
			assert_int_equal(tround_begin(tr[r], grad[r], &step[r]), 0);
			in_p[r] = step[r].send;
			bs[r] = step[r].block_size;
			cut[r] = step[r].sub_log;
			engine_set_result_filter(f.hosts[r], step[r].bound, step[r].deferred);
			engine_set_cut(f.hosts[r], step[r].sub_log);
			memset(outs[r], 0x7f, ru->n * sizeof(float));
		}
		/* Each worker planned alone: they agree. */
		for (int r = 1; r < WORLD; r++) {
			assert_int_equal(bs[r], bs[0]);
			assert_int_equal(cut[r], cut[0]);
		}
		ru->B[k] = bs[0];
		ru->sub_log[k] = cut[0];
		assert_int_equal(fabric_allreduce_each(&f, 9, in_p, out_p, ru->n, bs, ENGINE_SUM),
				 0);
		for (int r = 1; r < WORLD; r++)
			assert_memory_equal(outs[r], outs[0], ru->n * sizeof(float));
		nb = ina_wire_nb_blocks(ru->n, bs[0]);
		for (uint32_t b = 0; b < nb; b++)
			ru->deferred += (uint64_t)check_block(ru, step, b);
		for (int r = 0; r < WORLD; r++) {
			tround_end(tr[r], outs[r]);
			assert_int_equal(tround_stats(tr[r])->block_size, bs[0]);
			assert_int_equal(tround_stats(tr[r])->sub_log, cut[0]);
		}
		for (uint32_t i = 0; i < ru->n; i++)
			got[i] += outs[0][i];
	}
	ru->plans = tround_stats(tr[0])->plans;
	for (int r = 0; r < WORLD; r++) {
		const float *res = tround_residual(tr[r]);

		for (uint32_t i = 0; res && i < ru->n; i++)
			got[i] += res[i];
		tround_destroy(tr[r]);
	}
	/* No update lost: results + residuals == inputs (exactly on dyadic data). */
	if (ru->exact)
		for (uint32_t i = 0; i < ru->n; i++)
			if (got[i] != want[i])
				fail_msg("element %u: results + residuals %.9g, inputs %.9g", i,
					 got[i], want[i]);
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
}

static struct ina_sparsify
opts(enum ina_sparsify_mode mode)
{
	struct ina_sparsify sp = {
		.mode = mode,
		.target = INA_TOPK_DENSITY,
		.density = 0.3,
		.mass = 0.5,
		.filter_b0 = 0.25f,
		.filter_decay = 0.8,
		.filter_results = 1,
	};

	return sp;
}

static void
print_run(const char *what, const struct run *ru)
{
	print_message("%s: B/b per round", what);
	for (int k = 0; k < ru->rounds; k++)
		print_message(" %u/%u", ru->B[k], ru->B[k] >> ru->sub_log[k]);
	print_message(", %llu blocks deferred\n", (unsigned long long)ru->deferred);
}

/* Planner, top-k, value filter and DEFERRED results together, under loss, in
 * f32 and i32: agreement every round and no update lost, bit for bit, both
 * where B stays and where it moves. */
static void
test_planned_no_update_lost(void **state)
{
	static const uint8_t encs[] = { INA_ENC_F32, INA_ENC_I32 };

	(void)state;
	for (size_t e = 0; e < 2; e++) {
		struct run ru = {
			.n = 1000,
			.max_block = 64,
			.lanes = 8,
			.enc = encs[e],
			.sp = opts(INA_SPARSIFY_BOTH),
			.drop_rate = 0.05,
			.rounds = 8,
			.exact = 1,
		};
		int moved = 0;

		run(&ru, dyadic_grads);
		/* Round 0 has no reference: the largest B. */
		assert_int_equal(ru.B[0], 64);
		if (ru.deferred == 0)
			fail_msg("nothing deferred in %d rounds", ru.rounds);
		print_run(e ? "i32 density" : "f32 density", &ru);

		ru.sp.target = INA_TOPK_MASS;
		ru.sp.mass = 0.5;
		ru.sp.filter_b0 = 0.01f;
		run(&ru, hot_grads);
		for (int k = 1; k < ru.rounds; k++)
			moved |= moved_at(&ru, k);
		print_run(e ? "i32 mass" : "f32 mass", &ru);
		assert_true(moved);
	}
}

/* Dense (no sparsifier): the planner alone, and B stays the largest on
 * dense data, where every block is non-zero. */
static void
test_planned_dense(void **state)
{
	struct run ru = {
		.n = 1000,
		.max_block = 64,
		.lanes = 8,
		.enc = INA_ENC_F32,
		.sp = opts(INA_SPARSIFY_OFF),
		.drop_rate = 0.02,
		.rounds = 3,
		.exact = 1,
	};

	(void)state;
	run(&ru, dyadic_grads);
	for (int k = 0; k < ru.rounds; k++)
		assert_int_equal(ru.B[k], 64);
	/* A largest B under the smallest candidate (16): nothing to plan. */
	ru.max_block = 8;
	ru.sp = opts(INA_SPARSIFY_TOPK);
	run(&ru, dyadic_grads);
	for (int k = 0; k < ru.rounds; k++)
		assert_int_equal(ru.B[k], 8);
	/* The planner's prices: refused out of range, with a sentence. */
	{
		struct tround_config tc = { .n = 100,
					    .sp = opts(INA_SPARSIFY_OFF),
					    .plan = 1,
					    .max_block = 64,
					    .encoding = INA_ENC_F32,
					    .world = 2,
					    .lanes = 4,
					    .packet_ns = -1,
					    .byte_ns = 1 };
		char err[256] = "";
		struct tround *t;

		assert_null(tround_create(&tc, err, sizeof(err)));
		assert_non_null(strstr(err, "prices"));
		tc.packet_ns = 2e6;
		assert_null(tround_create(&tc, err, sizeof(err)));
		tc.packet_ns = 0; /* bytes alone */
		t = tround_create(&tc, err, sizeof(err));
		assert_non_null(t);
		tround_destroy(t);
	}
}

/* The lossless run the plan-period tests share: f32 blocks up to 1024 over
 * 16 lanes, zero-skipping only, dyadic inputs, planned every 'plan_period'
 * rounds (0: adaptive). */
static struct run
period_run(int rounds, uint32_t plan_period)
{
	return (struct run){
		.n = MAXN,
		.max_block = 1024,
		.lanes = 16,
		.enc = INA_ENC_F32,
		.sp = opts(INA_SPARSIFY_OFF),
		.rounds = rounds,
		.exact = 1,
		.plan_period = plan_period,
	};
}

/* plan_period P: a plan is made on the first round with a reference and
 * then every P rounds, held in between; a plan made is the one an every-round
 * planner makes from the same sum. */
static void
test_plan_period(void **state)
{
	struct run every = period_run(8, 1), held = period_run(8, 3);

	(void)state;
	run(&every, alternating_grads);
	run(&held, alternating_grads);
	print_run("every round", &every);
	print_run("every 3 rounds", &held);
	for (int k = 2; k < every.rounds; k++) /* the sums alternate: so do the plans */
		assert_true(every.B[k] != every.B[k - 1] ||
			    every.sub_log[k] != every.sub_log[k - 1]);
	for (int k = 1; k < held.rounds; k++) {
		int base = 1 + (k - 1) / 3 * 3; /* planned at rounds 1, 4, 7 */

		assert_int_equal(held.B[k], every.B[base]);
		assert_int_equal(held.sub_log[k], every.sub_log[base]);
	}
}

/* The real gradients, block top-k to a mass fraction, under loss: the
 * workers agree, the planner's B and cut flow through the engines and differ
 * from round to round at mass 0.1 (the first has no reference), rounds are
 * cut, priced in time at memif's costs of a packet and a byte with a cut
 * costing nothing more; at the udp port's prices (a cut's payload packet 1
 * us more, each of its sub-blocks 9 ns) the plans differ; a higher mass
 * (denser blocks) never picks smaller blocks. */
static void
test_planned_real_gradients(void **state)
{
	static const double masses[] = { 0.1, 0.9, 0.1 };
	struct run at_dpdk;
	uint16_t last[2];

	(void)state;
	for (int m = 0; m < 3; m++) {
		struct run ru = {
			.n = MAXN,
			.max_block = 1024,
			.lanes = 64,
			.enc = INA_ENC_F32,
			.sp = opts(INA_SPARSIFY_TOPK),
			.drop_rate = 0.02,
			.rounds = 4,
			.plan_period = 1, /* every round: the plans move */
			.free_cuts = m < 2,
		};
		int distinct = 0, cut = 0;

		ru.sp.target = INA_TOPK_MASS;
		ru.sp.mass = masses[m];
		run(&ru, real_grads);
		if (m == 2) { /* the udp port's prices: the cut's price moves the plan */
			int other = 0;

			print_run("mass 0.1, udp prices", &ru);
			for (int k = 1; k < ru.rounds; k++)
				other |= ru.B[k] != at_dpdk.B[k] ||
					 ru.sub_log[k] != at_dpdk.sub_log[k];
			assert_true(other);
			break;
		}
		if (m == 0)
			at_dpdk = ru;
		for (int k = 1; k < ru.rounds; k++) {
			distinct |= moved_at(&ru, k);
			cut |= ru.sub_log[k] != 0;
		}
		print_run(masses[m] < 0.5 ? "mass 0.1" : "mass 0.9", &ru);
		if (m == 0) /* at 0.9 the first cut stays the best */
			assert_true(distinct);
		assert_true(cut);
		last[m] = ru.B[ru.rounds - 1];
	}
	assert_true(last[1] >= last[0]);
	ina_npy_close(npy);
	npy = NULL;
}

/* plan_period 0 (adaptive): where the sum stays, each plan that repeats
 * the last holds twice as long (planned at rounds 1, 2, 4, 8, 16 and 32 of
 * 40; round 0 has no reference), every round on the B and cut an every-round
 * planner picks; where the sums alternate, it plans every round as that one
 * does. */
static void
test_plan_period_adaptive(void **state)
{
	struct run every = period_run(MAX_ROUNDS, 1), adaptive = period_run(MAX_ROUNDS, 0);
	struct run alt_every = period_run(10, 1), alt_adaptive = period_run(10, 0);

	(void)state;
	run(&every, steady_grads);
	run(&adaptive, steady_grads);
	print_run("steady, every round", &every);
	print_run("steady, adaptive", &adaptive);
	assert_int_equal(every.plans, MAX_ROUNDS - 1);
	assert_int_equal(adaptive.plans, 6);
	for (int k = 0; k < MAX_ROUNDS; k++) {
		assert_int_equal(adaptive.B[k], every.B[k]);
		assert_int_equal(adaptive.sub_log[k], every.sub_log[k]);
	}
	run(&alt_every, alternating_grads);
	run(&alt_adaptive, alternating_grads);
	assert_int_equal(alt_adaptive.plans, alt_every.rounds - 1);
	for (int k = 0; k < alt_every.rounds; k++) {
		assert_int_equal(alt_adaptive.B[k], alt_every.B[k]);
		assert_int_equal(alt_adaptive.sub_log[k], alt_every.sub_log[k]);
	}
}

/* With plan_period 2: round 1 plans, round 2 holds and fails (never ends),
 * so nothing of round 1's sum was kept (its successor held): round 3 holds
 * the plan once more instead of planning, is measured as it ends, and round
 * 4 plans. */
static void
test_plan_held_round_fails(void **state)
{
	struct run ru = period_run(0, 2); /* rounds driven by hand below */
	struct tround_config tc = run_config(&ru);
	struct tround_step step;
	struct tround *t;
	char err[256];
	uint16_t planned;

	(void)state;
	steady_grads(MAXN, 0);
	t = tround_create(&tc, err, sizeof(err));
	assert_non_null(t);
	/* The sums here are the inputs: what matters is when they are read. */
	assert_int_equal(tround_begin(t, grad[0], &step), 0); /* round 0: no reference */
	tround_end(t, grad[0]);
	assert_int_equal(tround_begin(t, grad[0], &step), 0); /* round 1 plans */
	assert_int_equal(tround_stats(t)->plans, 1);
	planned = step.block_size;
	tround_end(t, grad[0]);
	assert_int_equal(tround_begin(t, grad[0], &step), 0); /* round 2 holds */
	assert_int_equal(step.block_size, planned);
	tround_cancel(t);				      /* and fails */
	assert_int_equal(tround_begin(t, grad[0], &step), 0); /* round 3 holds once more */
	assert_int_equal(tround_stats(t)->plans, 1);
	assert_int_equal(step.block_size, planned);
	tround_end(t, grad[0]);
	assert_int_equal(tround_begin(t, grad[0], &step), 0); /* round 4 plans */
	assert_int_equal(tround_stats(t)->plans, 2);
	assert_int_equal(step.block_size, planned);
	tround_end(t, grad[0]);
	tround_destroy(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_planned_no_update_lost),
		cmocka_unit_test(test_planned_dense),
		cmocka_unit_test(test_planned_real_gradients),
		cmocka_unit_test(test_plan_period),
		cmocka_unit_test(test_plan_period_adaptive),
		cmocka_unit_test(test_plan_held_round_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
