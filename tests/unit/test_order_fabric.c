/* SPDX-License-Identifier: MIT */
/*
 * The transfer scheduler (host/src/order.h) in front of four host engines
 * and the switch pipeline on the in-process fabric's virtual clock, as
 * libina runs them: each worker submits steps of L tensors of random sizes
 * in backpropagation order (priority = layer), then a flush and a barrier,
 * at its own pace (worker r is slower by 40% x r, with jitter), and starts
 * the scheduler's next operation whenever its engine is free. Under every
 * policy (windows 0 and 3), with and without loss: every worker runs the
 * same operation in every round (the switch would mix tensors otherwise),
 * every sum is exact on every worker, and the order is the policy's:
 * fifo in submission order; priority with a flush per step layer 0 first;
 * magnitude with a flush per step in submission order for the first step,
 * then by the previous step's norms, largest first. The same with small
 * tensors fused (order_next_group): the same order, fewer rounds, exact sums.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fabric.h"
#include "order.h"

#define WORLD 4
#define LANES 8
#define BLOCK 64
#define L 8
#define STEPS 3
#define MAXN 1500
#define OPS (STEPS * (L + 1))
#define BARRIER 0xffffffffu

struct ev {
	int kind; /* 0 tensor, 1 flush, 2 barrier */
	int layer;
	int step;
	uint64_t at[WORLD]; /* virtual time each worker does it */
};

static struct ev evs[STEPS * (L + 2)];
static unsigned nb_evs;
static size_t sizes[STEPS][L];
static float ins[WORLD][OPS][MAXN], outs[WORLD][OPS][MAXN], ones[WORLD][OPS];

static uint64_t
rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static float
value(int step, int rank, int layer, size_t i)
{
	return (float)((int)((i * 7 + (size_t)layer) % 9) - 4 + rank) *
	       (float)(step == 0 ? layer + 1 : (layer * 5) % L + 1);
}

/* Op number (submission seq) -> (step, layer or -1 for the barrier). */
static int op_step[OPS], op_layer[OPS];

static void
make_program(uint64_t seed)
{
	uint64_t x = seed | 1, t[WORLD];
	unsigned seq = 0;

	nb_evs = 0;
	for (int r = 0; r < WORLD; r++)
		t[r] = 1000000 + (uint64_t)r * 3000;
	for (int s = 0; s < STEPS; s++) {
		for (int k = 0; k < L; k++) {
			struct ev *e = &evs[nb_evs++];

			e->kind = 0;
			e->step = s;
			e->layer = L - 1 - k;
			sizes[s][e->layer] = 1 + rnd(&x) % MAXN;
			for (int r = 0; r < WORLD; r++) {
				t[r] += (uint64_t)(20000 * (1.0 + 0.4 * r)) + rnd(&x) % 15000;
				e->at[r] = t[r];
			}
			op_step[seq] = s;
			op_layer[seq++] = e->layer;
		}
		for (int kind = 1; kind <= 2; kind++) {
			struct ev *e = &evs[nb_evs++];

			e->kind = kind;
			e->step = s;
			e->layer = -1;
			for (int r = 0; r < WORLD; r++)
				e->at[r] = t[r];
			if (kind == 2) {
				op_step[seq] = s;
				op_layer[seq++] = -1;
			}
		}
	}
}

#define FUSE 2000
static float fuse_in[WORLD][FUSE], fuse_out[WORLD][FUSE];

static size_t
op_n(uint64_t q)
{
	return op_layer[q] < 0 ? 1 : sizes[op_step[q]][op_layer[q]];
}

static int
run(enum order_policy p, uint32_t window, double drop, uint64_t seed, uint64_t *order0,
    uint32_t fuse)
{
	struct order_config oc = { .policy = p,
				   .window = window,
				   .capacity = 64,
				   .max_tensors = 64,
				   .fuse_elems = fuse,
				   .fuse_max = 8 };
	uint64_t group[WORLD][ORDER_FUSE_MAX];
	uint32_t nb_group[WORLD] = { 0 };
	unsigned nb_rounds[WORLD] = { 0 };
	struct order *sc[WORLD];
	struct fabric f;
	unsigned next_ev[WORLD] = { 0 }, nb_started[WORLD] = { 0 }, nb_done[WORLD] = { 0 };
	uint64_t started[WORLD][OPS];
	int busy[WORLD] = { 0 };
	uint64_t limit;

	make_program(seed);
	fabric_init(&f, WORLD, LANES, BLOCK, INA_ENC_F32, NULL, NULL);
	f.faults.drop_rate = drop;
	f.faults.seed = seed;
	f.rng = seed * 2654435761u + 1;
	assert_int_equal(fabric_join(&f), 0);
	for (int r = 0; r < WORLD; r++) {
		sc[r] = order_create(&oc);
		assert_non_null(sc[r]);
		for (int s = 0; s < STEPS; s++)
			for (int l = 0; l < L; l++)
				for (size_t i = 0; i < sizes[s][l]; i++)
					ins[r][s * (L + 1) + (L - 1 - l)][i] = value(s, r, l, i);
	}
	/* Events and ops are both counted from f.now = the program's clock. */
	limit = f.now + 20ull * 1000000000ull;
	for (;;) {
		int all = 1;
		uint64_t t0 = f.now;

		for (int r = 0; r < WORLD; r++) {
			while (next_ev[r] < nb_evs && evs[next_ev[r]].at[r] <= f.now) {
				const struct ev *e = &evs[next_ev[r]++];
				uint64_t seq;

				if (e->kind == 1) {
					order_flush(sc[r]);
				} else {
					struct order_op op = {
						.tensor_id = e->kind == 2 ? BARRIER
									  : (uint32_t)e->layer,
						.priority = e->layer,
						.fence = e->kind == 2,
						.n = e->kind == 2
							     ? 1
							     : (uint32_t)sizes[e->step][e->layer],
						.fuse_class = e->kind == 2 ? 0 : 1,
					};

					assert_int_equal(order_submit_op(sc[r], &op, &seq), 0);
				}
			}
			if (busy[r] && engine_phase(f.hosts[r]) == ENGINE_READY) {
				size_t off = 0;

				busy[r] = 0;
				for (uint32_t g = 0; g < nb_group[r]; g++) {
					uint64_t q = group[r][g];
					double ss = 0;

					nb_done[r]++;
					if (nb_group[r] > 1) {
						memcpy(outs[r][q], fuse_out[r] + off,
						       op_n(q) * sizeof(float));
						off += op_n(q);
					}
					if (op_layer[q] < 0)
						continue;
					for (size_t i = 0; i < op_n(q); i++)
						ss += (double)outs[r][q][i] * outs[r][q][i];
					order_set_norm(sc[r], (uint32_t)op_layer[q], sqrt(ss));
				}
			}
			if (!busy[r] && engine_phase(f.hosts[r]) == ENGINE_READY &&
			    order_next_group(sc[r], group[r], &nb_group[r]) == 0) {
				uint64_t q = group[r][0];
				int bar = op_layer[q]<0, fused = nb_group[r]> 1;
				size_t off = 0;

				assert_true(!fused || fuse);
				for (uint32_t g = 0; fused && g < nb_group[r]; g++) {
					uint64_t m = group[r][g];

					assert_true(op_layer[m] >= 0);
					memcpy(fuse_in[r] + off, ins[r][m],
					       op_n(m) * sizeof(float));
					off += op_n(m);
				}
				assert_true(off <= FUSE);
				ones[r][q] = 1;
				assert_int_equal(engine_allreduce(f.hosts[r],
								  bar ? BARRIER
								      : (uint32_t)op_layer[q],
								  fused ? fuse_in[r]
								  : bar ? &ones[r][q]
									: ins[r][q],
								  fused ? fuse_out[r]
								  : bar ? &ones[r][q]
									: outs[r][q],
								  fused ? off : op_n(q), BLOCK,
								  ENGINE_SUM, f.now),
						 0);
				busy[r] = 1;
				nb_rounds[r]++;
				for (uint32_t g = 0; g < nb_group[r]; g++)
					started[r][nb_started[r]++] = group[r][g];
			}
			all &= nb_done[r] == OPS;
			assert_int_equal(engine_error(f.hosts[r]), 0);
		}
		if (all || f.now >= limit)
			break;
		fabric_run(&f, ENGINE_RUNNING, 5000);
		if (f.now == t0)
			f.now += 5000;
	}
	for (int r = 0; r < WORLD; r++) {
		assert_int_equal(nb_done[r], OPS);
		/* The same operation in every round on every worker. */
		assert_memory_equal(started[r], started[0], sizeof(started[0]));
		assert_int_equal(nb_rounds[r], nb_rounds[0]);
		if (!fuse)
			assert_int_equal(nb_rounds[r], OPS);
		for (unsigned q = 0; q < OPS; q++) {
			if (op_layer[q] < 0) {
				assert_true(ones[r][q] == (float)WORLD);
				continue;
			}
			for (size_t i = 0; i < sizes[op_step[q]][op_layer[q]]; i++) {
				float want = 0;

				for (int k = 0; k < WORLD; k++)
					want += value(op_step[q], k, op_layer[q], i);
				assert_true(outs[r][q][i] == want);
			}
		}
		order_destroy(sc[r]);
	}
	memcpy(order0, started[0], sizeof(started[0]));
	if (fuse) /* small tensors did fuse */
		assert_true(nb_rounds[0] < OPS);
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
	return 0;
}

static double
norm2(int s, int l)
{
	double ss = 0;

	for (size_t i = 0; i < sizes[s][l]; i++) {
		double v = 0;

		for (int r = 0; r < WORLD; r++)
			v += value(s, r, l, i);
		ss += v * v;
	}
	return ss;
}

/* The order each policy must give with a flush per step (window 0). */
static void
check_order(enum order_policy p, const uint64_t *got)
{
	for (int s = 0; s < STEPS; s++) {
		int want[L];
		const uint64_t *g = got + s * (L + 1);

		for (int k = 0; k < L; k++)
			want[k] = L - 1 - k; /* submission order */
		if (p == ORDER_PRIORITY)
			for (int k = 0; k < L; k++)
				want[k] = k;
		if (p == ORDER_MAGNITUDE && s > 0)
			for (int a = 1; a < L; a++)
				for (int b = a;
				     b > 0 && norm2(s - 1, want[b]) > norm2(s - 1, want[b - 1]);
				     b--) {
					int t = want[b];

					want[b] = want[b - 1];
					want[b - 1] = t;
				}
		for (int k = 0; k < L; k++) {
			assert_int_equal(op_step[g[k]], s);
			assert_int_equal(op_layer[g[k]], want[k]);
		}
		/* The barrier ends the step. */
		assert_int_equal(op_layer[g[L]], -1);
	}
}

static void
test_policies(void **state)
{
	static const enum order_policy ps[] = { ORDER_FIFO, ORDER_PRIORITY, ORDER_MAGNITUDE };
	uint64_t got[OPS];

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		for (uint32_t window = 0; window <= 3; window += 3)
			for (int lossy = 0; lossy <= 1; lossy++) {
				uint64_t seed = 1000 + i * 10 + window + (uint64_t)lossy;

				run(ps[i], window, lossy ? 0.02 : 0, seed, got, 0);
				if (window == 0)
					check_order(ps[i], got);
				if (ps[i] == ORDER_FIFO)
					for (unsigned q = 0; q < OPS; q++)
						assert_int_equal(got[q], q);
				/* Fused: the same order (groups are runs of the
				 * policy's order), fewer rounds. */
				run(ps[i], window, lossy ? 0.02 : 0, seed + 7, got, FUSE);
				if (window == 0)
					check_order(ps[i], got);
				if (ps[i] == ORDER_FIFO)
					for (unsigned q = 0; q < OPS; q++)
						assert_int_equal(got[q], q);
			}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
