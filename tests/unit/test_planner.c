/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the block planner (host/src/planner.c): the candidate sizes,
 * the cost model against a packet-by-packet replay of the lane protocol on
 * small random cases (f32 and i32, whole blocks and sub-blocks), the choice
 * following time (a high packet cost picks few packets, a low one few
 * bytes), agreement of several workers that plan
 * from the same previous sum while their own gradients differ (and after a
 * lossy round, whose result is the same agreed sum), the planner in a closed
 * loop with the real engines and switch under loss, duplicates and reordering
 * (tests/unit/fabric.c), the chosen B on the real gradients per layer and per
 * iteration (printed), bad input, and no allocation per plan.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_count.h"
#include "fabric.h"
#include "ina/npy.h"
#include "ina/util.h"
#include "ina/wire.h"
#include "planner.h"
#include "sparsify.h"
#include "tensor_round.h"

#ifndef INA_SOURCE_DIR
#error "INA_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

#define GRADS INA_SOURCE_DIR "/data/grads_cnn_digits_3it.npy"
#define N_PARAMS 71754u
#define MAX_W 4

static float
rnd_val(uint64_t *s)
{
	return (float)((int64_t)(ina_splitmix64(s) % 2001) - 1000) / 64.0f;
}

/* Costs in bytes alone: the rule before issue 18, which the tests of the
 * choice by density keep. */
static void
bytes_only(struct planner_config *cfg)
{
	cfg->packet_ns = 0;
	cfg->byte_ns = 1;
	cfg->cut_packet_ns = 0;
	cfg->cut_sub_ns = 0;
}

/* The pick is the least (time, bytes, -B, k) of every candidate evaluated. */
static void
check_rule(const struct planner *p, const struct planner_pick *pick)
{
	const struct planner_candidate *c = planner_candidates(p), *best = NULL;
	unsigned j, n = planner_n_evaluated(p);

	assert_true(n >= planner_n_candidates(p));
	for (j = 0; j < n; j++)
		if (c[j].block_size == pick->block_size && c[j].sub_log == pick->sub_log)
			best = &c[j];
	assert_non_null(best);
	assert_int_equal(pick->sub, pick->block_size >> pick->sub_log);
	for (j = 0; j < n; j++) {
		uint64_t bb = planner_cost_bytes(&best->cost), cb = planner_cost_bytes(&c[j].cost);

		if (&c[j] == best)
			continue;
		assert_true(c[j].time_ps >= best->time_ps);
		if (c[j].time_ps > best->time_ps)
			continue;
		assert_true(cb >= bb);
		if (cb > bb)
			continue;
		assert_true(c[j].block_size < best->block_size ||
			    (c[j].block_size == best->block_size && c[j].sub_log > best->sub_log));
	}
}

static void
test_candidates(void **state)
{
	struct planner_config cfg;
	struct planner *p;
	const uint32_t *sz;

	(void)state;
	planner_config_init(&cfg);
	cfg.max_elems = 1000;
	assert_int_equal(planner_max_block(&cfg), (9000 - INA_HDR_SIZE) / 4);
	p = planner_create(&cfg);
	assert_non_null(p);
	assert_int_equal(planner_n_candidates(p), 8); /* 16 .. 2048 */
	sz = planner_candidate_sizes(p);
	assert_int_equal(sz[0], 16);
	assert_int_equal(sz[7], 2048);
	planner_destroy(p);

	cfg.max_pkt = 1500 - 20 - 8; /* 354 elements */
	p = planner_create(&cfg);
	assert_non_null(p);
	assert_int_equal(planner_n_candidates(p), 5); /* 16 .. 256 */
	assert_int_equal(planner_candidate_sizes(p)[4], 256);
	planner_destroy(p);

	/* B is at most INA_BLOCK_MAX (13 bits): 16 .. 4096 in bf16 jumbo. */
	cfg.max_pkt = 65000;
	cfg.elem_bytes = 2;
	assert_int_equal(planner_max_block(&cfg), INA_BLOCK_MAX);
	p = planner_create(&cfg);
	assert_non_null(p);
	assert_int_equal(planner_n_candidates(p), 9);
	assert_int_equal(planner_candidate_sizes(p)[8], 4096);
	planner_destroy(p);
	cfg.elem_bytes = 4;
	cfg.max_sub_log = PLANNER_MAX_SUB_LOG + 1;
	assert_null(planner_create(&cfg));
	cfg.max_sub_log = 0;
	cfg.packet_ns = -1;
	assert_null(planner_create(&cfg));
	cfg.packet_ns = 0;
	cfg.byte_ns = 0;
	assert_null(planner_create(&cfg)); /* nothing costs anything */
	cfg.byte_ns = NAN;
	assert_null(planner_create(&cfg));
	planner_config_init(&cfg);
	cfg.max_elems = 1000;

	cfg.max_pkt = INA_HDR_SIZE + 4 * 15; /* not even 16 elements */
	assert_null(planner_create(&cfg));
	planner_config_init(&cfg);
	assert_null(planner_create(&cfg)); /* max_elems 0 */
	planner_destroy(NULL);
}

/* The lane protocol replayed packet by packet (PROTOCOL.md 6.2, 6.3):
 * counts what crosses the wire in each direction. */
static uint32_t
own_next(const float *v, uint32_t n, uint32_t B, uint32_t nb, uint32_t L, uint32_t from)
{
	uint32_t b;

	for (b = from; b < nb; b += L) {
		uint32_t i, end = b * B + B < n ? b * B + B : n;

		for (i = b * B; i < end; i++)
			if (v[i] != 0.0f)
				return b;
	}
	return INA_BLOCK_END;
}

/* The payload of worker w's block 'blk' with 2^k sub-blocks (PROTOCOL 2.7),
 * or of the union of every worker's (w < 0): the mask and the elements of
 * the non-zero sub-blocks; the whole block without a cut. */
static uint64_t
payload(const struct planner_config *cfg, const float *const *vec, int w, uint32_t n, uint32_t B,
	unsigned k, uint32_t blk)
{
	uint32_t start = blk * B, end = start + B < n ? start + B : n, b = B >> k, s, i;
	uint64_t bytes = 0;

	if (k == 0)
		return 4ull * (end - start);
	for (s = start; s < end; s += b) {
		uint32_t e = s + b < end ? s + b : end;
		int nz = 0;

		for (i = s; i < e && !nz; i++)
			for (int v = w < 0 ? 0 : w; v < (w < 0 ? cfg->world : w + 1); v++)
				nz |= vec[v][i] != 0.0f;
		if (nz)
			bytes += 4ull * (e - s);
	}
	return (k <= 5 ? 4 : (1u << k) / 8) + bytes;
}

/* The non-zero sub-blocks payload() counts the elements of (0 uncut). */
static uint64_t
payload_subs(const struct planner_config *cfg, const float *const *vec, int w, uint32_t n,
	     uint32_t B, unsigned k, uint32_t blk)
{
	uint32_t start = blk * B, end = start + B < n ? start + B : n, b = B >> k, s, i;
	uint64_t subs = 0;

	for (s = start; k > 0 && s < end; s += b) {
		uint32_t e = s + b < end ? s + b : end;
		int nz = 0;

		for (i = s; i < e && !nz; i++)
			for (int v = w < 0 ? 0 : w; v < (w < 0 ? cfg->world : w + 1); v++)
				nz |= vec[v][i] != 0.0f;
		subs += (uint64_t)nz;
	}
	return subs;
}

static void
replay(const struct planner_config *cfg, const float *const *vec, uint32_t n, uint32_t B,
       unsigned k, struct planner_cost *c)
{
	uint32_t nb = (n + B - 1) / B, L = cfg->lanes, l, N = cfg->world;
	uint64_t hdr = INA_HDR_SIZE + cfg->frame_bytes;

	memset(c, 0, sizeof(*c));
	for (l = 0; l < L && l < nb; l++) {
		uint32_t cur = l, w;

		if (cfg->open_exchange) {
			/* OPEN: header-only both ways; the result names min next. */
			uint32_t next = INA_BLOCK_END;

			for (w = 0; w < N; w++) {
				uint32_t x = own_next(vec[w], n, B, nb, L, l);

				next = x < next ? x : next;
				c->up_pkts++;
				c->up_bytes += hdr;
			}
			c->down_pkts += N;
			c->down_bytes += N * hdr;
			cur = next;
		}
		while (cur != INA_BLOCK_END) {
			uint32_t next = INA_BLOCK_END;
			int any = 0;

			for (w = 0; w < N; w++) {
				uint32_t mine = own_next(vec[w], n, B, nb, L, cur);
				uint32_t x = own_next(vec[w], n, B, nb, L, cur + L);

				c->up_pkts++;
				c->up_bytes += hdr;
				if (mine == cur) { /* data, else an empty ack */
					c->up_bytes += payload(cfg, vec, (int)w, n, B, k, cur);
					c->payload_pkts++;
					c->payload_subs += payload_subs(cfg, vec, (int)w, n, B, k,
									cur);
					any = 1;
				}
				next = x < next ? x : next;
			}
			c->down_pkts += N;
			c->down_bytes += N *
					 (hdr + (any ? payload(cfg, vec, -1, n, B, k, cur) : 0));
			if (any) {
				c->payload_pkts += N;
				c->payload_subs += N * payload_subs(cfg, vec, -1, n, B, k, cur);
			}
			cur = next;
		}
	}
}

static void
test_cost_bruteforce(void **state)
{
	uint64_t seed = 42;
	float buf[MAX_W][300];
	const float *vec[MAX_W];
	unsigned trial, w;

	(void)state;
	for (w = 0; w < MAX_W; w++)
		vec[w] = buf[w];
	for (trial = 0; trial < 400; trial++) {
		struct planner_config cfg;
		struct planner_blocks blk;
		struct planner_cost model, brute;
		uint32_t n = 1 + (uint32_t)(ina_splitmix64(&seed) % 300);
		uint32_t B = 16u << (ina_splitmix64(&seed) % 3);
		unsigned zero_pct = (unsigned)(ina_splitmix64(&seed) % 101);
		/* k 0..7 with b >= 1: masks of 4, 8 and 16 bytes. */
		unsigned k = (unsigned)(ina_splitmix64(&seed) % 8);
		uint32_t i;

		planner_config_init(&cfg);
		cfg.max_elems = 300;
		cfg.world = (uint16_t)(1 + ina_splitmix64(&seed) % MAX_W);
		cfg.lanes = (uint16_t)(1 + ina_splitmix64(&seed) % 5);
		cfg.open_exchange = (int)(trial & 1);
		cfg.frame_bytes = (trial & 2) ? 42 : 0;
		for (w = 0; w < cfg.world; w++) {
			for (i = 0; i < n; i += B) {
				/* Each worker's block is zero with its own chance. */
				int zero = ina_splitmix64(&seed) % 100 < zero_pct;
				uint32_t j;

				for (j = i; j < i + B && j < n; j++)
					buf[w][j] = zero ? 0.0f
							 : ((ina_splitmix64(&seed) & 3)
								    ? rnd_val(&seed)
								    : 0.0f);
			}
		}
		if ((B >> k) == 0)
			k = 0;
		/* Sparse within blocks too, so that sub-blocks are absent. */
		for (w = 0; w < cfg.world && k > 0; w++)
			for (i = 0; i < n; i++)
				if (ina_splitmix64(&seed) % 4 != 0)
					buf[w][i] = 0.0f;
		planner_count(&cfg, vec, cfg.world, n, B, (uint8_t)k, &blk);
		model = planner_cost(&cfg, n, B, (uint8_t)k, &blk);
		replay(&cfg, vec, n, B, k, &brute);
		assert_int_equal(model.up_pkts, brute.up_pkts);
		assert_int_equal(model.down_pkts, brute.down_pkts);
		assert_int_equal(model.up_bytes, brute.up_bytes);
		assert_int_equal(model.down_bytes, brute.down_bytes);
		assert_int_equal(model.payload_pkts, brute.payload_pkts);
		assert_int_equal(model.payload_subs, brute.payload_subs);
	}
}

/* With every worker holding the reference's support, the plan's predicted
 * cost is the replay's exact count, for every candidate. */
static void
test_plan_cost_exact(void **state)
{
	uint64_t seed = 7;
	float ref[1000];
	const float *vec[MAX_W];
	struct planner_config cfg;
	struct planner *p;
	unsigned k, w;
	uint32_t i, B;

	(void)state;
	for (i = 0; i < 1000; i++)
		ref[i] = ((i / 48) % 3 == 0) ? rnd_val(&seed) : 0.0f;
	/* Runs of 48 values, 12 of them zero: sub-blocks of 8 are absent. */
	for (i = 0; i < 1000; i++)
		if (i % 48 < 12)
			ref[i] = 0.0f;
	for (w = 0; w < MAX_W; w++)
		vec[w] = ref;
	for (unsigned sub = 0; sub < 2; sub++) {
		struct planner_pick pick;

		planner_config_init(&cfg);
		cfg.max_elems = 1000;
		cfg.max_pkt = INA_HDR_SIZE + 4 * 256;
		cfg.lanes = 3;
		cfg.max_sub_log = sub ? PLANNER_MAX_SUB_LOG : 0;
		cfg.mask_room = 16; /* a block of 256 with any mask fits */
		bytes_only(&cfg);
		p = planner_create(&cfg);
		assert_non_null(p);
		B = planner_plan(p, ref, 1000, 1.0, 0.0f);
		assert_true(B >= 16);
		assert_int_equal(planner_plan_cut(p, ref, 1000, 1.0, 0.0f, &pick), 0);
		assert_int_equal(pick.block_size, B);
		/* B 16..256, k while b >= 8: 2 + 3 + 4 + 5 + 6 with sub-blocks. */
		assert_int_equal(planner_n_evaluated(p), sub ? 20 : 5);
		for (k = 0; k < planner_n_evaluated(p); k++) {
			const struct planner_candidate *c = &planner_candidates(p)[k];
			struct planner_cost brute;

			replay(&cfg, vec, 1000, c->block_size, c->sub_log, &brute);
			assert_int_equal(c->cost.up_bytes, brute.up_bytes);
			assert_int_equal(c->cost.down_bytes, brute.down_bytes);
			assert_int_equal(c->cost.up_pkts, brute.up_pkts);
			assert_int_equal(c->cost.down_pkts, brute.down_pkts);
			assert_int_equal(c->cost.payload_pkts, brute.payload_pkts);
			assert_int_equal(c->cost.payload_subs, brute.payload_subs);
			assert_int_equal(c->time_ps,
					 planner_cost_time_ps(&cfg, &c->cost, c->sub_log));
		}
		/* The chosen one is the cheapest, the larger B on a tie. */
		check_rule(p, &pick);
		/* Sub-blocks of 8 skip the zero runs: fewer bytes than any
		 * whole block. */
		if (sub)
			assert_int_not_equal(pick.sub_log, 0);
		planner_destroy(p);
	}
	/* Without room for a mask, a block of 256 fills the packet and is
	 * not cut (5 fewer candidates); smaller blocks are. */
	cfg.mask_room = 0;
	p = planner_create(&cfg);
	assert_non_null(p);
	assert_int_equal(planner_plan(p, ref, 1000, 1.0, 0.0f), 128);
	assert_int_equal(planner_n_evaluated(p), 15);
	for (k = 0; k < planner_n_evaluated(p); k++)
		assert_true(planner_candidates(p)[k].block_size < 256 ||
			    planner_candidates(p)[k].sub_log == 0);
	planner_destroy(p);
}

/* Ties go to the larger B (an all-zero tensor on one lane costs one opener
 * step at every B); a dense tensor picks the largest B (fewest headers); a
 * lone non-zero element picks the smallest. */
static void
test_ties_and_dense(void **state)
{
	static float ref[4096];
	struct planner_config cfg;
	struct planner *p;
	uint32_t i;

	(void)state;
	planner_config_init(&cfg);
	cfg.max_elems = 4096;
	cfg.lanes = 1;
	bytes_only(&cfg);
	p = planner_create(&cfg);
	assert_non_null(p);
	/* All zero, one lane: one opener step at every B: a tie everywhere. */
	assert_int_equal(planner_plan(p, ref, 4096, 1.0, 0.0f), 2048);
	for (i = 0; i < 4096; i++)
		ref[i] = 1.0f;
	assert_int_equal(planner_plan(p, ref, 4096, 1.0, 0.0f), 2048);
	/* One non-zero element: the smallest block carries it. */
	memset(ref, 0, sizeof(ref));
	ref[1000] = 1.0f;
	assert_int_equal(planner_plan(p, ref, 4096, 1.0, 0.0f), 16);
	/* Under the bound it does not count: a tie again. */
	assert_int_equal(planner_plan(p, ref, 4096, 1.0, 1.0f), 2048);
	planner_destroy(p);
}

/*
 * Four workers, each with its own gradient, plan round r+1 from the sum of
 * round r, which the lane protocol delivers to every worker with the same
 * bits (PROTOCOL.md 8.1), whatever was lost and retransmitted on the way.
 * Each worker has its own planner, has planned other tensors before, and
 * reads its sum from its own buffer: they must all pick the same B.
 */
static void
test_workers_agree(void **state)
{
	enum { N = 6000 };
	static float grad[MAX_W][N], sum[N], copy[MAX_W][N];
	struct planner *p[MAX_W];
	struct planner_config cfg;
	uint64_t seed = 99;
	unsigned round, w, i;

	(void)state;
	planner_config_init(&cfg);
	cfg.max_elems = N;
	for (w = 0; w < MAX_W; w++) {
		p[w] = planner_create(&cfg);
		assert_non_null(p[w]);
	}
	for (round = 0; round < 20; round++) {
		uint32_t B[MAX_W];
		double mass = round % 2 ? 0.7 : 1.0;

		/* Different gradients: each worker zeroes its own blocks. */
		for (w = 0; w < MAX_W; w++)
			for (i = 0; i < N; i++)
				grad[w][i] = ((i / (16u << (round % 6))) + w) % (2 + round % 5) == 0
						     ? rnd_val(&seed)
						     : 0.0f;
		for (i = 0; i < N; i++) /* the switch's sum, in rank order */
			sum[i] = ((grad[0][i] + grad[1][i]) + grad[2][i]) + grad[3][i];
		for (w = 0; w < MAX_W; w++) {
			/* Lossy delivery: the retransmitted result is the same bits. */
			memcpy(copy[w], sum, sizeof(sum));
			/* Worker w planned its own gradient first: no state carries. */
			(void)planner_plan(p[w], grad[w], N - w, 0.5, 0.0f);
			B[w] = planner_plan(p[w], copy[w], N, mass, 0.0f);
			assert_true(B[w] >= 16);
		}
		for (w = 1; w < MAX_W; w++)
			assert_int_equal(B[w], B[0]);
		/* The plan from a worker's own gradient could differ; the shared
		 * input is what makes them agree. */
	}
	for (w = 0; w < MAX_W; w++)
		planner_destroy(p[w]);
}

/*
 * The closed loop through the real engines and switch (fabric.c) with 5%
 * loss, duplicates and reordering: 4 workers, each with its own real
 * gradient (the fc2 layers, block top-k to mass 0.7 at this round's B), run
 * 8 rounds; before each round every worker plans B from its own copy of the
 * previous round's output, and all four must agree (round 0: no sum, 256).
 */
static void
test_closed_loop_under_loss(void **state)
{
	enum { OFF = 70464, N = 1290 };
	static float grad[N_PARAMS], in[MAX_W][N], out[MAX_W][N];
	float *in_p[MAX_W], *out_p[MAX_W];
	struct planner *p[MAX_W];
	struct planner_config cfg;
	struct fabric f;
	struct ina_npy *npy;
	char err[256];
	uint32_t B = 256;
	unsigned round, w;

	(void)state;
	npy = ina_npy_open(GRADS, err, sizeof(err));
	if (!npy)
		fail_msg("%s", err);
	planner_config_init(&cfg);
	cfg.max_elems = N;
	cfg.max_pkt = INA_HDR_SIZE + 4 * 256; /* B 16..256 */
	cfg.lanes = 8;
	for (w = 0; w < MAX_W; w++) {
		p[w] = planner_create(&cfg);
		assert_non_null(p[w]);
		in_p[w] = in[w];
		out_p[w] = out[w];
	}
	fabric_init(&f, MAX_W, 8, 256, INA_ENC_F32, NULL, NULL);
	f.faults = (struct fabric_faults){
		.drop_seq = -1,
		.drop_rate = 0.05,
		.dup_rate = 0.05,
		.shuffle = 1,
		.seed = 5,
	};
	f.rng = 5;
	assert_int_equal(fabric_join(&f), 0);
	for (round = 0; round < 8; round++) {
		if (round > 0) {
			uint32_t b[MAX_W];

			for (w = 0; w < MAX_W; w++)
				b[w] = planner_plan(p[w], out[w], N, 0.7, 0.0f);
			for (w = 1; w < MAX_W; w++)
				assert_int_equal(b[w], b[0]);
			B = b[0];
		}
		print_message("closed loop round %u: B %u (packets so far %llu, dropped %llu)\n",
			      round, B, (unsigned long long)f.seq, (unsigned long long)f.dropped);
		for (w = 0; w < MAX_W; w++) {
			struct sparsify_config sc;
			struct sparsify *s;

			assert_int_equal(ina_npy_read_row(npy, (round % 3) * 4u + w, grad,
							  N_PARAMS),
					 0);
			sparsify_config_init(&sc);
			sc.n_elems = N;
			sc.block_size = B;
			sc.target = SPARSIFY_MASS;
			sc.mass = 0.7;
			s = sparsify_create(&sc);
			assert_non_null(s);
			assert_int_equal(sparsify_round(s, grad + OFF, in[w], 0, NULL), 0);
			sparsify_destroy(s);
		}
		assert_int_equal(fabric_allreduce(&f, 1, in_p, out_p, N, (uint16_t)B, ENGINE_SUM),
				 0);
		for (w = 1; w < MAX_W; w++)
			assert_memory_equal(out[w], out[0], sizeof(out[0]));
	}
	assert_true(f.dropped > 0);
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
	for (w = 0; w < MAX_W; w++)
		planner_destroy(p[w]);
	ina_npy_close(npy);
}

static void
test_bad_input(void **state)
{
	float ref[64] = { 0 };
	struct planner_config cfg;
	struct planner *p;

	(void)state;
	planner_config_init(&cfg);
	cfg.max_elems = 64;
	p = planner_create(&cfg);
	assert_non_null(p);
	assert_int_equal(planner_plan(p, ref, 0, 1.0, 0.0f), 0);
	assert_int_equal(planner_plan(p, ref, 65, 1.0, 0.0f), 0);
	assert_int_equal(planner_plan(p, ref, 64, 0.0, 0.0f), 0);
	assert_int_equal(planner_plan(p, ref, 64, NAN, 0.0f), 0);
	assert_int_equal(planner_plan(p, ref, 64, 1.0, -1.0f), 0);
	assert_int_equal(planner_plan(NULL, ref, 64, 1.0, 0.0f), 0);
	/* A NaN block always travels, at every candidate and any mass. */
	ref[40] = NAN;
	assert_int_not_equal(planner_plan(p, ref, 64, 0.5, 0.0f), 0);
	assert_int_equal(planner_candidates(p)[0].blocks.sent, 1);
	assert_int_equal(planner_candidates(p)[0].blocks.sent_elems, 16);
	assert_int_equal(planner_candidates(p)[1].blocks.sent, 1);
	planner_destroy(p);
}

static void
test_no_alloc(void **state)
{
	static float ref[N_PARAMS];
	struct planner_config cfg;
	struct planner *p;
	uint64_t seed = 3;
	uint32_t i;

	(void)state;
	for (i = 0; i < N_PARAMS; i++)
		ref[i] = (i % 700 < 300) ? rnd_val(&seed) : 0.0f;
	planner_config_init(&cfg);
	cfg.max_elems = N_PARAMS;
	p = planner_create(&cfg);
	assert_non_null(p);
	alloc_count_on();
	(void)planner_plan(p, ref, N_PARAMS, 1.0, 0.0f);
	(void)planner_plan(p, ref, N_PARAMS, 0.5, 0.0f);
	(void)planner_plan(p, ref, 1000, 0.9, 1.0f);
	alloc_count_off();
	assert_int_equal(alloc_nb, 0);
	planner_destroy(p);
}

/* The layers of data/grads_cnn_digits.layout.tsv. */
static const struct {
	const char *name;
	uint32_t off, count;
} layers[] = {
	{ "conv1.weight", 0, 144 },    { "conv1.bias", 144, 16 },     { "conv2.weight", 160, 4608 },
	{ "conv2.bias", 4768, 32 },    { "fc1.weight", 4800, 65536 }, { "fc1.bias", 70336, 128 },
	{ "fc2.weight", 70464, 1280 }, { "fc2.bias", 71744, 10 },
};

/*
 * The real gradients: for each iteration, the 4 workers' sum is the shared
 * reference. Per layer and per iteration, at mass 1 (every non-zero block)
 * and at mass 0.7 (top blocks by norm), print the chosen B and its density.
 * Priced in bytes alone (packet_ns 0), the chosen B follows the density: it
 * is the candidate of least bytes (the larger on a tie); a tensor whose blocks all travel at every B (density 1
 * at every candidate) gets the largest B; a smaller B is chosen only where
 * it leaves blocks behind (density < 1 at the chosen B); and over the layers
 * of several blocks at least two different B are chosen at each rule.
 */
/* The rule of planner_plan() on its candidates 'c' (n of them), 'k' chosen. */
static void
check_follows_density(const struct planner_candidate *c, unsigned n, unsigned k)
{
	uint64_t best = planner_cost_bytes(&c[k].cost);
	int all_dense = 1;
	unsigned j;

	for (j = 0; j < n; j++) {
		uint64_t b = planner_cost_bytes(&c[j].cost);

		assert_true(b > best || (b == best && c[j].block_size <= c[k].block_size));
		if (c[j].density < 1.0)
			all_dense = 0;
	}
	if (all_dense)
		assert_int_equal(k, n - 1);
	if (k < n - 1)
		assert_true(c[k].density < 1.0);
}

static void
test_real_gradients(void **state)
{
	static float g[N_PARAMS], sum[N_PARAMS];
	struct planner_config cfg;
	struct planner *p;
	struct ina_npy *npy;
	char err[256];
	const double masses[] = { 1.0, 0.7 };
	uint32_t seen[2][PLANNER_MAX_CANDIDATES + 1] = { { 0 } };
	unsigned it, w, l, m, k, distinct;
	uint32_t i;

	(void)state;
	npy = ina_npy_open(GRADS, err, sizeof(err));
	if (!npy)
		fail_msg("%s", err);
	assert_int_equal(ina_npy_dim(npy, 2), N_PARAMS);
	planner_config_init(&cfg);
	cfg.max_elems = N_PARAMS;
	bytes_only(&cfg);
	p = planner_create(&cfg);
	assert_non_null(p);
	print_message("planner on %s: N 4, L 64, max_pkt 9000 (B 16..2048), bytes only\n", GRADS);
	print_message("%-3s %-13s %6s | %-22s | %-22s\n", "it", "tensor", "n", "mass 1: B  density",
		      "mass 0.7: B  density");
	for (it = 0; it < 3; it++) {
		memset(sum, 0, sizeof(sum));
		for (w = 0; w < 4; w++) {
			assert_int_equal(ina_npy_read_row(npy, it * 4u + w, g, N_PARAMS), 0);
			for (i = 0; i < N_PARAMS; i++)
				sum[i] += g[i];
		}
		for (l = 0; l <= sizeof(layers) / sizeof(layers[0]); l++) {
			const char *name = l < 8 ? layers[l].name : "(whole)";
			uint32_t off = l < 8 ? layers[l].off : 0;
			uint32_t cnt = l < 8 ? layers[l].count : N_PARAMS;
			char col[2][32];

			for (m = 0; m < 2; m++) {
				uint32_t B = planner_plan(p, sum + off, cnt, masses[m], 0.0f);
				const struct planner_candidate *c = planner_candidates(p);

				assert_true(B >= 16);
				for (k = 0; c[k].block_size != B; k++)
					;
				check_follows_density(c, planner_n_candidates(p), k);
				snprintf(col[m], sizeof(col[m]), "%5u  %.3f", B, c[k].density);
				if (cnt >= 1024) /* tensors of several blocks */
					seen[m][k]++;
			}
			print_message("%-3u %-13s %6u | %-22s | %-22s\n", it, name, cnt, col[0],
				      col[1]);
		}
	}
	/* The chosen B varies with the density, at each rule. */
	for (m = 0; m < 2; m++) {
		distinct = 0;
		for (k = 0; k < PLANNER_MAX_CANDIDATES; k++)
			distinct += seen[m][k] != 0;
		print_message("mass %.1f: %u distinct block sizes chosen\n", masses[m], distinct);
		assert_true(distinct >= 2);
	}
	planner_destroy(p);
	ina_npy_close(npy);
}

/*
 * The choice follows time. A sparse tensor (one non-zero element in 64):
 * priced in bytes alone the plan picks the smallest pieces; with a packet
 * as dear as on the kernel's UDP path it picks few packets: the largest B,
 * cut into sub-blocks so that the bytes stay near the byte rule's; with
 * each sub-block priced as well, a coarser cut. Every pick is the least of
 * its rule among every candidate.
 */
static void
test_time_follows_cost(void **state)
{
	enum { N = 32768 };
	static float ref[N];
	struct planner_config cfg;
	struct planner_pick by_bytes, by_time, no_sub;
	const struct planner_candidate *c;
	struct planner *p;
	uint64_t seed = 11, bytes_b = 0, pkts_b = 0, bytes_t = 0, pkts_t = 0;
	uint32_t i;
	unsigned j;

	(void)state;
	for (i = 0; i < N; i++)
		ref[i] = i % 64 == 5 ? 1.0f + (float)(ina_splitmix64(&seed) % 100) : 0.0f;
	planner_config_init(&cfg);
	cfg.max_elems = N;
	cfg.max_sub_log = PLANNER_MAX_SUB_LOG;
	bytes_only(&cfg);
	p = planner_create(&cfg);
	assert_non_null(p);
	assert_int_equal(planner_plan_cut(p, ref, N, 1.0, 0.0f, &by_bytes), 0);
	check_rule(p, &by_bytes);
	c = planner_candidates(p);
	for (j = 0; j < planner_n_evaluated(p); j++)
		if (c[j].block_size == by_bytes.block_size && c[j].sub_log == by_bytes.sub_log) {
			bytes_b = planner_cost_bytes(&c[j].cost);
			pkts_b = c[j].cost.up_pkts + c[j].cost.down_pkts;
		}
	planner_destroy(p);

	cfg.packet_ns = PLANNER_UDP_PACKET_NS;
	cfg.byte_ns = PLANNER_UDP_BYTE_NS;
	p = planner_create(&cfg);
	assert_non_null(p);
	assert_int_equal(planner_plan_cut(p, ref, N, 1.0, 0.0f, &by_time), 0);
	check_rule(p, &by_time);
	c = planner_candidates(p);
	for (j = 0; j < planner_n_evaluated(p); j++)
		if (c[j].block_size == by_time.block_size && c[j].sub_log == by_time.sub_log) {
			bytes_t = planner_cost_bytes(&c[j].cost);
			pkts_t = c[j].cost.up_pkts + c[j].cost.down_pkts;
		}
	planner_destroy(p);
	print_message("bytes rule: B %u b %u, %llu bytes %llu packets; udp time rule: B %u b %u, "
		      "%llu bytes %llu packets\n",
		      by_bytes.block_size, by_bytes.sub, (unsigned long long)bytes_b,
		      (unsigned long long)pkts_b, by_time.block_size, by_time.sub,
		      (unsigned long long)bytes_t, (unsigned long long)pkts_t);
	assert_int_equal(by_time.block_size, 2048);
	assert_int_not_equal(by_time.sub_log, 0);
	assert_true(by_bytes.block_size < by_time.block_size);
	assert_true(pkts_t < pkts_b);
	assert_true(bytes_t >= bytes_b);
	assert_true(bytes_t < 2 * bytes_b);

	/* A cut packet priced far above what its bytes save: whole blocks. */
	cfg.cut_packet_ns = 1e6;
	p = planner_create(&cfg);
	assert_non_null(p);
	assert_int_equal(planner_plan_cut(p, ref, N, 1.0, 0.0f, &no_sub), 0);
	check_rule(p, &no_sub);
	assert_int_equal(no_sub.sub_log, 0);
	planner_destroy(p);
	cfg.cut_packet_ns = 0;

	/* Each sub-block priced (a run to encode, add and decode): a cut
	 * coarser than the one picked with sub-blocks free. */
	cfg.cut_sub_ns = 1000;
	p = planner_create(&cfg);
	assert_non_null(p);
	assert_int_equal(planner_plan_cut(p, ref, N, 1.0, 0.0f, &no_sub), 0);
	check_rule(p, &no_sub);
	print_message("sub-blocks at 1000 ns: B %u b %u\n", no_sub.block_size, no_sub.sub);
	assert_true(no_sub.sub_log < by_time.sub_log);
	planner_destroy(p);
	cfg.cut_sub_ns = 0;

	/* Without sub-blocks the time rule still picks the largest B. */
	cfg.max_sub_log = 0;
	p = planner_create(&cfg);
	assert_non_null(p);
	assert_int_equal(planner_plan_cut(p, ref, N, 1.0, 0.0f, &no_sub), 0);
	assert_int_equal(no_sub.block_size, 2048);
	assert_int_equal(no_sub.sub_log, 0);
	assert_int_equal(planner_n_evaluated(p), planner_n_candidates(p));
	planner_destroy(p);
}

/*
 * The real gradients as one tensor, planned with sub-blocks at the udp
 * port's costs from each iteration's sum, at the API's rule for a top-k mass
 * of 0.5 and 0.7: the pick is the least time of every candidate, sends no
 * more than 1.2 times the packets of whole blocks of 1024, and fewer bytes
 * than them. Printed: the pick and the two candidates.
 */
static void
test_real_gradients_sub(void **state)
{
	static float g[N_PARAMS], sum[N_PARAMS];
	struct planner_config cfg;
	struct planner *p;
	struct ina_npy *npy;
	char err[256];
	const double masses[] = { 0.5, 0.7 };
	unsigned it, w, m, j;
	uint32_t i;

	(void)state;
	npy = ina_npy_open(GRADS, err, sizeof(err));
	if (!npy)
		fail_msg("%s", err);
	planner_config_init(&cfg);
	cfg.max_elems = N_PARAMS;
	cfg.max_sub_log = PLANNER_MAX_SUB_LOG;
	/* The format's own cost: a cut costs its packets and bytes, none of
	 * the host time the udp port's prices add (ina-bench-formats too). */
	cfg.cut_packet_ns = 0;
	cfg.cut_sub_ns = 0;
	p = planner_create(&cfg);
	assert_non_null(p);
	for (it = 0; it < 3; it++) {
		memset(sum, 0, sizeof(sum));
		for (w = 0; w < 4; w++) {
			assert_int_equal(ina_npy_read_row(npy, it * 4u + w, g, N_PARAMS), 0);
			for (i = 0; i < N_PARAMS; i++)
				sum[i] += g[i];
		}
		for (m = 0; m < 2; m++) {
			const struct planner_candidate *c, *pick_c = NULL, *b1024 = NULL;
			struct planner_pick pick;
			double mass = planner_target_mass(masses[m], PLANNER_HEADROOM);

			assert_int_equal(planner_plan_cut(p, sum, N_PARAMS, mass, 0.0f, &pick), 0);
			check_rule(p, &pick);
			c = planner_candidates(p);
			for (j = 0; j < planner_n_evaluated(p); j++) {
				if (c[j].block_size == pick.block_size &&
				    c[j].sub_log == pick.sub_log)
					pick_c = &c[j];
				if (c[j].block_size == 1024 && c[j].sub_log == 0)
					b1024 = &c[j];
			}
			assert_non_null(pick_c);
			assert_non_null(b1024);
			print_message(
				"it %u mass %.1f: B %4u b %4u: %6llu packets %8llu bytes; "
				"B 1024: %6llu packets %8llu bytes\n",
				it, masses[m], pick.block_size, pick.sub,
				(unsigned long long)(pick_c->cost.up_pkts + pick_c->cost.down_pkts),
				(unsigned long long)planner_cost_bytes(&pick_c->cost),
				(unsigned long long)(b1024->cost.up_pkts + b1024->cost.down_pkts),
				(unsigned long long)planner_cost_bytes(&b1024->cost));
			assert_true(5 * (pick_c->cost.up_pkts + pick_c->cost.down_pkts) <=
				    6 * (b1024->cost.up_pkts + b1024->cost.down_pkts));
			assert_true(planner_cost_bytes(&pick_c->cost) <
				    planner_cost_bytes(&b1024->cost));
		}
	}
	planner_destroy(p);
	ina_npy_close(npy);
}

/*
 * planner_measure() then planner_plan_measured(): the same picks and
 * candidate times as planner_plan_cut(), for zero-skipping and two masses,
 * bounds 0 and 0.3, a tensor with NaN, infinities, zero runs and a short
 * last unit; one measurement serves several plans (a mass on its side of 1);
 * nothing measured, another n, or a mass < 1 on a measurement for mass >= 1
 * is refused.
 */
static void
test_measure_then_plan(void **state)
{
	enum { N = 5003 };
	static float ref[N];
	static const double masses[] = { 1.0, 0.7, 0.3 };
	static const float bounds[] = { 0.0f, 0.3f };
	uint64_t seed = 11;
	struct planner_config cfg;
	struct planner *p, *q;
	struct planner_pick a, b;

	(void)state;
	for (uint32_t i = 0; i < N; i++)
		ref[i] = (i / 40) % 3 == 1 ? 0.0f : rnd_val(&seed) / (float)(1 + i % 17);
	ref[123] = NAN;
	ref[2001] = INFINITY;
	ref[2002] = -INFINITY;
	ref[N - 1] = -0.0f;
	planner_config_init(&cfg);
	cfg.max_elems = N;
	cfg.max_sub_log = PLANNER_MAX_SUB_LOG;
	cfg.mask_room = 16;
	p = planner_create(&cfg);
	q = planner_create(&cfg);
	assert_non_null(p);
	assert_non_null(q);
	assert_int_equal(planner_plan_measured(q, N, 1.0, &b), -EINVAL); /* none yet */
	for (unsigned m = 0; m < 3; m++)
		for (unsigned k = 0; k < 2; k++) {
			assert_int_equal(planner_plan_cut(p, ref, N, masses[m], bounds[k], &a), 0);
			assert_int_equal(planner_measure(q, ref, N, masses[m], bounds[k]), 0);
			for (int twice = 0; twice < 2; twice++) {
				assert_int_equal(planner_plan_measured(q, N, masses[m], &b), 0);
				assert_int_equal(b.block_size, a.block_size);
				assert_int_equal(b.sub_log, a.sub_log);
				assert_int_equal(planner_n_evaluated(q), planner_n_evaluated(p));
				for (unsigned c = 0; c < planner_n_evaluated(p); c++)
					assert_true(planner_candidates(q)[c].time_ps ==
						    planner_candidates(p)[c].time_ps);
			}
			check_rule(q, &b);
			assert_int_equal(planner_plan_measured(q, N - 1, masses[m], &b), -EINVAL);
		}
	/* Measured for mass 1 (no sums): a plan for 0.5 is refused, for 1 not. */
	assert_int_equal(planner_measure(q, ref, N, 1.0, 0.0f), 0);
	assert_int_equal(planner_plan_measured(q, N, 0.5, &b), -EINVAL);
	assert_int_equal(planner_plan_measured(q, N, 1.0, &b), 0);
	assert_int_equal(planner_measure(q, ref, N, 0.0, 0.0f), -EINVAL);
	assert_int_equal(planner_measure(q, ref, N + 1, 1.0, 0.0f), -EINVAL);
	assert_int_equal(planner_measure(q, ref, N, 1.0, -1.0f), -EINVAL);
	assert_int_equal(planner_plan_measured(q, N, 1.0, NULL), -EINVAL);
	planner_destroy(p);
	planner_destroy(q);
}

/* At mass 1 every candidate's counts are planner_count()'s of the kept
 * support (the elements over the bound, or not finite), for tensors of many
 * 64-unit words, odd lengths and runs that cross words: the bitmaps' folds
 * and counts against the brute force. */
static void
test_plan_counts_random(void **state)
{
	enum { MAX_N = 9000 };
	static float ref[MAX_N], kept[MAX_N];
	uint64_t seed = 77;

	(void)state;
	for (unsigned trial = 0; trial < 60; trial++) {
		uint32_t n = 1 + (uint32_t)(ina_splitmix64(&seed) % MAX_N), i = 0;
		float bound = trial % 3 == 0 ? 0.25f : 0.0f;
		const float *vec[1] = { kept };
		struct planner_config cfg;
		struct planner_pick pick;
		struct planner *p;

		while (i < n) { /* runs of zeros and of values, 1 to 700 long */
			uint32_t run = 1 + (uint32_t)(ina_splitmix64(&seed) % 700);
			int zero = (int)(ina_splitmix64(&seed) & 1);

			for (; run > 0 && i < n; run--, i++)
				ref[i] = zero ? 0.0f : rnd_val(&seed);
		}
		if (trial % 4 == 1)
			ref[ina_splitmix64(&seed) % n] = NAN;
		if (trial % 4 == 2)
			ref[ina_splitmix64(&seed) % n] = -INFINITY;
		for (i = 0; i < n; i++)
			kept[i] = isfinite(ref[i]) && fabsf(ref[i]) <= bound ? 0.0f : ref[i];
		planner_config_init(&cfg);
		cfg.max_elems = MAX_N;
		cfg.world = 1;
		cfg.lanes = (uint16_t)(1 + ina_splitmix64(&seed) % 70);
		cfg.max_sub_log = trial % 5 ? PLANNER_MAX_SUB_LOG : 0;
		cfg.mask_room = 16;
		p = planner_create(&cfg);
		assert_non_null(p);
		assert_int_equal(planner_plan_cut(p, ref, n, 1.0, bound, &pick), 0);
		for (unsigned c = 0; c < planner_n_evaluated(p); c++) {
			const struct planner_candidate *cd = &planner_candidates(p)[c];
			struct planner_blocks brute;

			planner_count(&cfg, vec, 1, n, cd->block_size, cd->sub_log, &brute);
			assert_int_equal(cd->blocks.n_blocks, brute.n_blocks);
			assert_int_equal(cd->blocks.sent, brute.sent);
			assert_int_equal(cd->blocks.sent_openers, brute.sent_openers);
			assert_int_equal(cd->blocks.sent_elems, brute.sent_elems);
			assert_int_equal(cd->blocks.up_elems, brute.up_elems);
			assert_int_equal(cd->blocks.up_blocks, brute.up_blocks);
		}
		planner_destroy(p);
	}
}

/* The UDP payload of an Ethernet frame of 'mtu' bytes (IPv4, UDP). */
#define UDP_PAYLOAD(mtu) ((mtu)-20u - 8u)

/*
 * A planned job that does not set its block size: its largest B is the
 * largest power of two whose block with the largest mask fits a packet (and
 * a default switch's slot); one that does keeps its own; the first round of
 * such a job uses that B, cut finest.
 */
static void
test_largest_block(void **state)
{
	struct tround_config tc = { .n = 100000, .plan = 1, .world = 4, .lanes = 64 };
	struct tround_step step;
	struct tround *t;
	float *in;
	char err[128];

	(void)state;
	/* What a packet holds: 9000-byte frames, f32 2048 and bf16 4096;
	 * 1500-byte frames, f32 256; the exact edge of a full block with its
	 * 16-byte mask; nothing under a block of 16. */
	assert_int_equal(planner_largest_block(UDP_PAYLOAD(9000), 4, INA_BLOCK_MAX), 2048);
	assert_int_equal(planner_largest_block(UDP_PAYLOAD(9000), 2, INA_BLOCK_MAX), 4096);
	assert_int_equal(planner_largest_block(UDP_PAYLOAD(1500), 4, INA_BLOCK_MAX), 256);
	assert_int_equal(planner_largest_block(1500, 4, INA_BLOCK_MAX), 256);
	assert_int_equal(planner_largest_block(INA_HDR_SIZE + 16 + 2048 * 4, 4, INA_BLOCK_MAX),
			 2048);
	assert_int_equal(planner_largest_block(INA_HDR_SIZE + 16 + 2048 * 4 - 1, 4, INA_BLOCK_MAX),
			 1024);
	/* The wire's 13 bits: 65507-byte packets of bf16 stop at 4096. */
	assert_int_equal(planner_largest_block(65507, 2, 65535), 4096);
	assert_int_equal(planner_largest_block(INA_HDR_SIZE + 16 + 16 * 4 - 1, 4, INA_BLOCK_MAX),
			 0);
	assert_int_equal(planner_largest_block(UDP_PAYLOAD(9000), 4, 512), 512);

	/* The job's B: unset and planned, what the packet holds within a
	 * default switch's slot (bf16: 2048, not 4096); set, its own (a
	 * cap: the planner's candidates stop there); not planned, the
	 * default or what the packet holds if less; a fixed sub-block keeps
	 * 128 sub-blocks a block. */
	assert_int_equal(tround_job_block(0, 1, 0, INA_ENC_F32, UDP_PAYLOAD(9000), 1024), 2048);
	assert_int_equal(tround_job_block(0, 1, 0, INA_ENC_I32, UDP_PAYLOAD(9000), 1024), 2048);
	assert_int_equal(tround_job_block(0, 1, 0, INA_ENC_BF16, UDP_PAYLOAD(9000), 1024),
			 INA_SLOT_ELEMS_DEFAULT);
	assert_int_equal(tround_job_block(0, 1, 0, INA_ENC_F32, UDP_PAYLOAD(1500), 1024), 256);
	assert_int_equal(tround_job_block(0, 1, 0, INA_ENC_BF16, UDP_PAYLOAD(1500), 1024), 512);
	assert_int_equal(tround_job_block(512, 1, 0, INA_ENC_F32, UDP_PAYLOAD(9000), 1024), 512);
	assert_int_equal(tround_job_block(1000, 1, 0, INA_ENC_F32, UDP_PAYLOAD(9000), 1024), 1000);
	assert_int_equal(tround_job_block(0, 0, 0, INA_ENC_F32, UDP_PAYLOAD(9000), 1024), 1024);
	/* Not planned on 1500-byte frames: what they hold, not 1024. */
	assert_int_equal(tround_job_block(0, 0, 0, INA_ENC_F32, UDP_PAYLOAD(1500), 1024), 256);
	assert_int_equal(tround_job_block(0, 0, 0, INA_ENC_BF16, UDP_PAYLOAD(1500), 1024), 512);
	assert_int_equal(tround_job_block(0, 0, 0, INA_ENC_F32, 100, 1024), 1024);
	assert_int_equal(tround_job_block(0, 1, 4, INA_ENC_F32, UDP_PAYLOAD(9000), 1024), 512);
	assert_int_equal(tround_job_block(0, 1, 0, INA_ENC_F32, 100, 1024), 0);

	/* The first round of a planned tensor runs at the job's largest B. */
	in = calloc(tc.n, sizeof(*in));
	assert_non_null(in);
	for (size_t i = 0; i < tc.n; i += 7)
		in[i] = 1.0f;
	tc.encoding = INA_ENC_F32;
	tc.max_block = tround_job_block(0, 1, 0, INA_ENC_F32, UDP_PAYLOAD(9000), 1024);
	t = tround_create(&tc, err, sizeof(err));
	assert_non_null(t);
	assert_int_equal(tround_begin(t, in, &step), 0);
	assert_int_equal(step.block_size, 2048);
	assert_int_equal(step.sub_log, INA_SUB_LOG_MAX);
	tround_cancel(t);
	tround_destroy(t);
	free(in);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_candidates),
		cmocka_unit_test(test_cost_bruteforce),
		cmocka_unit_test(test_plan_cost_exact),
		cmocka_unit_test(test_ties_and_dense),
		cmocka_unit_test(test_workers_agree),
		cmocka_unit_test(test_closed_loop_under_loss),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_no_alloc),
		cmocka_unit_test(test_real_gradients),
		cmocka_unit_test(test_time_follows_cost),
		cmocka_unit_test(test_real_gradients_sub),
		cmocka_unit_test(test_measure_then_plan),
		cmocka_unit_test(test_plan_counts_random),
		cmocka_unit_test(test_largest_block),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
