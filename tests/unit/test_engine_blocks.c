/* SPDX-License-Identifier: MIT */
/*
 * The engine's block-sparse form (engine_set_blocks) against its dense form,
 * in process over the test fabric with loss, duplication and reordering:
 * for every encoding, sum and average, several densities and a short last
 * block, the same workers' tensors go once dense and once as lists of their
 * non-zero blocks. The union's sums must be the dense sums bit for bit, the
 * union must be exactly the blocks some worker listed, and no other block of
 * a dense output may be written. An in-place dense allreduce must not write
 * a block that stays zero either. The same with the rounds cut into
 * sub-blocks (engine_set_cut), on inputs whose blocks are half zero
 * sub-blocks: the sums, union and untouched blocks of the uncut dense round.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fabric.h"
#include "ina/util.h"
#include "ina/wire.h"

#define W 4
#define MAXN 6000
#define MAXB (MAXN / 8 + 1)

static float ins[W][MAXN], ref[W][MAXN], dense_out[W][MAXN], vals[W][MAXN], list_vals[W][MAXN];
static uint32_t idx[W][MAXB], chain[W][MAXB], list_idx[W][MAXB], count[W], out_count[W];

static uint64_t
hash(uint64_t x)
{
	return ina_splitmix64(&x);
}

/* Block-sparse inputs: a block is on with probability 'density'; its values
 * k / 1024 (exact in every encoding's sum), a few of them -0.0 or 0. With
 * 'sub' (a sub-block's elements), each sub-block of an on block is zero
 * with probability 1/2. */
static void
make_inputs(uint32_t n, uint16_t bs, double density, uint16_t sub, uint64_t seed)
{
	for (uint16_t r = 0; r < W; r++)
		for (uint32_t b = 0; b * bs < n; b++) {
			int on = (double)(hash(seed ^ (r * 1000003ull) ^ (b * 7919ull)) >> 11) *
					 0x1.0p-53 <
				 density;

			for (uint32_t i = b * bs; i < n && i < (b + 1) * bs; i++) {
				int k = (int)(hash(seed * 31 + r * 65537ull + i) % 2047) - 1023;
				int sub_on = !sub ||
					     hash(seed ^ r * 977ull ^ (i / sub) * 131ull) & 1;

				ins[r][i] = on && sub_on ? (float)k / 1024.0f : 0.0f;
			}
		}
}

/* Set: every worker lists some all-zero blocks too (block b % 7 == rank). */
static int list_zeros;

/* Each worker's list of its non-zero blocks, values packed B apart. */
static void
make_lists(uint32_t n, uint16_t bs)
{
	uint32_t nb = (n + bs - 1) / bs;

	for (uint16_t r = 0; r < W; r++) {
		count[r] = 0;
		for (uint32_t b = 0; b < nb; b++) {
			uint32_t len = n - b * bs < bs ? n - b * bs : bs;
			int nz = 0;

			for (uint32_t i = 0; i < len; i++)
				nz |= ins[r][b * bs + i] != 0.0f;
			if (!nz && !(list_zeros && b % 7 == r))
				continue;
			idx[r][count[r]] = b;
			memcpy(&vals[r][(size_t)count[r] * bs], &ins[r][b * bs],
			       len * sizeof(float));
			count[r]++;
		}
	}
}

/* Block b is listed by some worker. */
static int
in_union(uint32_t b)
{
	for (uint16_t r = 0; r < W; r++)
		for (uint32_t i = 0; i < count[r]; i++)
			if (idx[r][i] == b)
				return 1;
	return 0;
}

/* One case; the block-sparse and in-place rounds cut into 2^cut
 * sub-blocks (the reference uncut). */
static void
run_case_cut(uint8_t enc, enum engine_op op, uint32_t n, uint16_t bs, uint16_t lanes,
	     double density, int faulty, uint64_t seed, uint8_t cut)
{
	static const uint32_t garbage = 0x7fc00123u; /* a NaN nobody writes */
	struct fabric f;
	uint32_t nb = (n + bs - 1) / bs, in_u = 0;
	float *in_p[W], *out_p[W];

	fabric_init(&f, W, lanes, bs, enc, NULL, NULL);
	if (faulty) {
		f.faults.drop_rate = 0.05;
		f.faults.dup_rate = 0.05;
		f.faults.shuffle = 1;
		f.rng = seed | 1;
	}
	assert_int_equal(fabric_join(&f), 0);
	make_inputs(n, bs, density, cut ? bs >> cut : 0, seed);
	make_lists(n, bs);

	/* Dense, out of place: the reference. */
	for (uint16_t r = 0; r < W; r++) {
		in_p[r] = ins[r];
		out_p[r] = ref[r];
		memset(ref[r], 0x55, sizeof(ref[r]));
	}
	assert_int_equal(fabric_allreduce(&f, 7, in_p, out_p, n, bs, op), 0);

	/* Block-sparse: a list and a dense output full of garbage. */
	for (uint16_t r = 0; r < W; r++) {
		struct engine_blocks b = {
			.index = idx[r],
			.values = vals[r],
			.count = count[r],
			.chain = chain[r],
			.dense = dense_out[r],
			.out_index = list_idx[r],
			.out_values = list_vals[r],
			.capacity = MAXB,
			.out_count = &out_count[r],
		};

		for (size_t i = 0; i < MAXN; i++)
			memcpy(&dense_out[r][i], &garbage, 4);
		out_count[r] = 0;
		engine_set_blocks(f.hosts[r], &b);
		engine_set_cut(f.hosts[r], cut);
		assert_int_equal(engine_allreduce(f.hosts[r], 7, NULL, NULL, n, bs, op, f.now), 0);
	}
	assert_int_equal(fabric_run(&f, ENGINE_RUNNING, 60ull * 1000000000ull), 0);

	for (uint32_t b = 0; b < nb; b++)
		in_u += (uint32_t)in_union(b);
	for (uint16_t r = 0; r < W; r++) {
		uint8_t seen[MAXB] = { 0 };

		assert_int_equal(out_count[r], in_u);
		for (uint32_t i = 0; i < out_count[r]; i++) {
			uint32_t b = list_idx[r][i];
			uint32_t len = n - b * bs < bs ? n - b * bs : bs;

			assert_true(b < nb && in_union(b) && !seen[b]);
			seen[b] = 1;
			assert_memory_equal(&list_vals[r][(size_t)i * bs], &ref[r][b * bs],
					    len * sizeof(float));
		}
		for (uint32_t b = 0; b < nb; b++) {
			uint32_t len = n - b * bs < bs ? n - b * bs : bs;

			if (seen[b]) {
				assert_memory_equal(&dense_out[r][b * bs], &ref[r][b * bs],
						    len * sizeof(float));
				continue;
			}
			for (uint32_t i = 0; i < len; i++) {
				uint32_t v;

				memcpy(&v, &dense_out[r][b * bs + i], 4);
				assert_int_equal(v, garbage); /* never written */
				assert_true(ref[r][b * bs + i] == 0.0f);
			}
		}
		/* Every worker holds the same bits. */
		assert_memory_equal(ref[r], ref[0], n * sizeof(float));
	}

	/* Dense in place: zero blocks marked -0.0 must come back untouched. */
	for (uint16_t r = 0; r < W; r++) {
		for (uint32_t b = 0; b < nb; b++)
			if (!in_union(b))
				for (uint32_t i = b * bs; i < n && i < (b + 1) * bs; i++)
					ins[r][i] = -0.0f;
		in_p[r] = ins[r];
	}
	f.sub_log = cut;
	assert_int_equal(fabric_allreduce(&f, 7, in_p, in_p, n, bs, op), 0);
	for (uint16_t r = 0; r < W; r++)
		for (uint32_t b = 0; b < nb; b++) {
			uint32_t len = n - b * bs < bs ? n - b * bs : bs;

			if (in_union(b)) {
				assert_memory_equal(&ins[r][b * bs], &ref[r][b * bs],
						    len * sizeof(float));
				continue;
			}
			for (uint32_t i = 0; i < len; i++) {
				uint32_t v;

				memcpy(&v, &ins[r][b * bs + i], 4);
				assert_int_equal(v, 0x80000000u);
			}
		}
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
}

static void
run_case(uint8_t enc, enum engine_op op, uint32_t n, uint16_t bs, uint16_t lanes, double density,
	 int faulty, uint64_t seed)
{
	run_case_cut(enc, op, n, bs, lanes, density, faulty, seed, 0);
}

static void
test_blocks_f32(void **state)
{
	(void)state;
	run_case(INA_ENC_F32, ENGINE_SUM, 5000, 64, 8, 0.02, 0, 1);
	run_case(INA_ENC_F32, ENGINE_SUM, 5003, 64, 8, 0.3, 1, 2);
	run_case(INA_ENC_F32, ENGINE_AVG, 4999, 32, 16, 0.1, 1, 3);
	run_case(INA_ENC_F32, ENGINE_SUM, 5000, 64, 4, 1.0, 1, 4);
	run_case(INA_ENC_F32, ENGINE_SUM, 5000, 64, 8, 0.0, 1, 5);
	/* More lanes than a word of the block map: a lane's next block is
	 * more than 64 blocks on, past words no lane asked for yet. */
	run_case(INA_ENC_F32, ENGINE_SUM, 6000, 8, 100, 0.5, 1, 11);
	run_case(INA_ENC_F32, ENGINE_AVG, 5999, 8, 200, 1.0, 0, 12);
}

static void
test_blocks_i32(void **state)
{
	(void)state;
	run_case(INA_ENC_I32, ENGINE_SUM, 5000, 64, 8, 0.05, 1, 6);
	run_case(INA_ENC_I32, ENGINE_AVG, 3001, 16, 8, 0.4, 1, 7);
	run_case(INA_ENC_I32, ENGINE_SUM, 3000, 16, 8, 0.0, 0, 8);
}

/* i32 with listed all-zero blocks: their 'next' announces exponent -148
 * (PROTOCOL 7.1), within the wire's range, never INA_EXP_ZERO (which the
 * switch refuses as bad_exp: the lane would stall); sums exact. */
static void
test_blocks_i32_zeros_listed(void **state)
{
	(void)state;
	list_zeros = 1;
	run_case(INA_ENC_I32, ENGINE_SUM, 3000, 16, 8, 0.2, 0, 13);
	run_case(INA_ENC_I32, ENGINE_SUM, 3000, 16, 8, 0.0, 1, 14);
	list_zeros = 0;
}

static void
test_blocks_bf16(void **state)
{
	(void)state;
	run_case(INA_ENC_BF16, ENGINE_SUM, 5000, 64, 8, 0.05, 1, 9);
	run_case(INA_ENC_BF16, ENGINE_AVG, 5001, 32, 8, 0.5, 1, 10);
}

/* Cut into sub-blocks: every encoding, sum and average, short last blocks
 * (and short last sub-blocks), with loss, duplication and reordering. */
static void
test_blocks_sub(void **state)
{
	(void)state;
	run_case_cut(INA_ENC_F32, ENGINE_SUM, 5003, 64, 8, 0.3, 1, 21, 3);
	run_case_cut(INA_ENC_F32, ENGINE_AVG, 4999, 32, 16, 0.5, 1, 22, 2);
	run_case_cut(INA_ENC_F32, ENGINE_SUM, 5000, 128, 8, 1.0, 0, 23, 7);
	run_case_cut(INA_ENC_I32, ENGINE_SUM, 3001, 16, 8, 0.4, 1, 24, 2);
	run_case_cut(INA_ENC_I32, ENGINE_AVG, 5000, 64, 8, 0.3, 1, 25, 4);
	run_case_cut(INA_ENC_BF16, ENGINE_SUM, 5001, 32, 8, 0.5, 1, 26, 1);
	run_case_cut(INA_ENC_BF16, ENGINE_AVG, 5000, 64, 8, 0.2, 1, 27, 5);
}

/* A list out of order, or past the tensor: refused, and nothing starts;
 * what was set for that allreduce (its filter) is dropped with it (found by
 * fuzz_engine: a later allreduce zeroed a freed flag array). */
static void
test_blocks_bad_list(void **state)
{
	struct fabric f;
	uint32_t bad[2][2] = { { 3, 2 }, { 1, 100 } };

	(void)state;
	fabric_init(&f, 1, 4, 64, INA_ENC_F32, NULL, NULL);
	assert_int_equal(fabric_join(&f), 0);
	uint8_t defer[16];

	memset(defer, 0xaa, sizeof(defer));
	for (int k = 0; k < 2; k++) {
		uint32_t cnt = 0;
		struct engine_blocks b = { .index = bad[k],
					   .values = vals[0],
					   .count = 2,
					   .chain = chain[0],
					   .dense = dense_out[0],
					   .out_count = &cnt };

		/* A result filter for the same allreduce goes with it. */
		engine_set_result_filter(f.hosts[0], 1.0f, defer);
		engine_set_blocks(f.hosts[0], &b);
		assert_int_equal(engine_allreduce(f.hosts[0], 1, NULL, NULL, 640, 64, ENGINE_SUM,
						  f.now),
				 -22);
		assert_int_equal(engine_phase(f.hosts[0]), ENGINE_READY);
	}
	/* The list applies to one allreduce only: a dense one goes on. */
	memset(ins[0], 0, 640 * sizeof(float));
	ins[0][70] = 1.0f;
	{
		float *in_p[1] = { ins[0] }, *out_p[1] = { ref[0] };

		assert_int_equal(fabric_allreduce(&f, 2, in_p, out_p, 640, 64, ENGINE_SUM), 0);
		assert_true(ref[0][70] == 1.0f && ref[0][0] == 0.0f);
		for (size_t i = 0; i < sizeof(defer); i++)
			assert_int_equal(defer[i], 0xaa); /* the refused one's filter */
	}
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks_f32),
		cmocka_unit_test(test_blocks_i32),
		cmocka_unit_test(test_blocks_i32_zeros_listed),
		cmocka_unit_test(test_blocks_bf16),
		cmocka_unit_test(test_blocks_sub),
		cmocka_unit_test(test_blocks_bad_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
