/* SPDX-License-Identifier: MIT */
/*
 * Sub-block payloads (subblock.h, PROTOCOL 2.7): a block packed by mask and
 * unpacked again is the block, in every encoding and cut, short blocks
 * included; what the packer writes passes ina_wire_validate() with the
 * length it returned; runs cover exactly the mask; the zero test matches
 * ina_block_is_zero().
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ina/block.h"
#include "ina/encode.h"
#include "ina/subblock.h"
#include "ina/wire.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

/* Runs cover the mask exactly, in order, maximal, and count its elements. */
static void
test_subblock_runs(void **state)
{
	(void)state;
	for (int iter = 0; iter < 2000; iter++) {
		uint8_t sub_log = (uint8_t)(1 + next_rand() % INA_SUB_LOG_MAX);
		uint16_t B = (uint16_t)((1u << sub_log) * (1 + next_rand() % 8));
		uint32_t n = 1 + next_rand() % B;
		struct ina_sub_cut c = ina_sub_cut(B, sub_log, n);
		struct ina_sub_mask m = { { 0, 0 } }, seen = { { 0, 0 } };
		uint32_t from = 0, first, len, last_end = 0, elems = 0, want = 0, present;
		uint8_t wire[16];

		for (uint32_t i = 0; i < c.count; i++)
			if (next_rand() % 3 == 0)
				m.w[i / 64] |= 1ull << (i % 64);
		while (ina_sub_next_run(&m, &c, &from, &first, &len)) {
			uint32_t start, k;

			assert_true(len >= 1);
			assert_true(first >= last_end);
			if (last_end && first == last_end)
				fail_msg("two runs touch at %u", first);
			for (uint32_t i = first; i < first + len; i++) {
				assert_true(ina_sub_mask_test(&m, i));
				seen.w[i / 64] |= 1ull << (i % 64);
			}
			last_end = first + len;
			assert_true(last_end <= c.count);
			ina_sub_run_elems(&c, first, len, &start, &k);
			assert_int_equal(start, first * c.b);
			elems += k;
		}
		assert_memory_equal(&seen, &m, sizeof(m));
		for (uint32_t i = 0; i < c.count; i++)
			if (ina_sub_mask_test(&m, i))
				want += i + 1 < c.count ? c.b : n - i * c.b;
		assert_int_equal(elems, want);
		assert_int_equal(ina_sub_present_elems(&m, &c), want);
		/* The wire's count of the same mask agrees. */
		ina_sub_mask_write(wire, &m, &c);
		if (!ina_sub_mask_empty(&m)) {
			assert_int_equal(ina_wire_mask_check(wire, sub_log, c.b, n, &present),
					 INA_WIRE_OK);
			assert_int_equal(present, want);
		}
		ina_sub_mask_read(&seen, wire, &c);
		assert_memory_equal(&seen, &m, sizeof(m));
	}
}

/* The zero test is ina_block_is_zero's, sub-block by sub-block. */
static void
test_subblock_nonzero(void **state)
{
	float x[100];
	struct ina_sub_cut c = ina_sub_cut(128, 4, 100); /* b 8: 13 sub-blocks */
	struct ina_sub_mask m;

	(void)state;
	memset(x, 0, sizeof(x));
	x[3] = -0.0f;
	x[17] = 1e-30f;
	x[99] = -2.0f;
	x[50] = NAN;
	ina_sub_mask_nonzero(&m, x, &c);
	assert_int_equal(c.count, 13);
	for (uint32_t i = 0; i < c.count; i++) {
		uint32_t start, n;

		ina_sub_run_elems(&c, i, 1, &start, &n);
		assert_int_equal(ina_sub_mask_test(&m, i), !ina_block_is_zero(x + start, n));
	}
	assert_true(ina_sub_mask_test(&m, 2) && ina_sub_mask_test(&m, 6) &&
		    ina_sub_mask_test(&m, 12) && !ina_sub_mask_test(&m, 0));
	memset(x, 0, sizeof(x));
	ina_sub_mask_nonzero(&m, x, &c);
	assert_true(ina_sub_mask_empty(&m));
}

/* Pack, validate as a DATA, unpack: the block comes back, every encoding. */
static void
test_subblock_round_trip(void **state)
{
	(void)state;
	for (uint8_t e = 1; e <= INA_ENC_MAX; e++) {
		const struct ina_encoding_ops *enc = ina_encoding(e);

		for (int iter = 0; iter < 300; iter++) {
			uint8_t sub_log = (uint8_t)(1 + next_rand() % INA_SUB_LOG_MAX);
			uint16_t B = (uint16_t)((1u << sub_log) * (1 + next_rand() % 4));
			uint32_t tensor_len = B * 3 + 1 + next_rand() % B;
			uint32_t block = next_rand() % 4; /* block 3 is short */
			uint32_t n = ina_wire_block_elems(tensor_len, B, block);
			struct ina_sub_cut c = ina_sub_cut(B, sub_log, n);
			float x[4 * 128], back[4 * 128], want[4 * 128];
			uint8_t buf[INA_HDR_SIZE + 16 + 4 * 4 * 128];
			struct ina_sub_mask m, got;
			struct ina_hdr h, v;
			int scale = 0;
			size_t len;

			for (uint32_t i = 0; i < n; i++)
				x[i] = next_rand() % 4 == 0
					       ? 0.0f
					       : ((float)(next_rand() % 2000) - 1000) / 8;
			/* Some whole sub-blocks zero. */
			for (uint32_t i = 0; i < c.count; i++) {
				uint32_t start, k;

				ina_sub_run_elems(&c, i, 1, &start, &k);
				if (next_rand() % 2)
					memset(x + start, 0, k * sizeof(float));
			}
			ina_sub_mask_nonzero(&m, x, &c);
			if (ina_sub_mask_empty(&m))
				continue;
			if (enc->scaled)
				scale = ina_enc_i32_scale(ina_enc_i32_exp(x, n), 1);
			memset(&h, 0, sizeof(h));
			h.version = INA_WIRE_VERSION;
			h.type = INA_T_DATA;
			h.encoding = e;
			h.tensor_len = tensor_len;
			h.block_size = B;
			h.sub_log = sub_log;
			h.block = block;
			h.next = INA_BLOCK_END;
			h.n_elems = (uint16_t)n;
			ina_wire_encode_hdr(&h, buf);
			len = ina_sub_encode(buf + INA_HDR_SIZE, x, &m, &c, enc, scale);
			assert_int_equal(len, c.mask_bytes + (size_t)ina_sub_present_elems(&m, &c) *
								     enc->elem_size);
			assert_int_equal(ina_wire_validate(buf, INA_HDR_SIZE + len, NULL, &v),
					 INA_WIRE_OK);
			/* What the plain codec makes of the whole block. */
			{
				uint8_t whole[4 * 4 * 128];

				enc->encode(whole, x, n, scale);
				enc->decode(want, whole, n, scale);
			}
			for (uint32_t i = 0; i < n; i++)
				back[i] = 12345.0f;
			got = ina_sub_decode(back, buf + INA_HDR_SIZE, &c, enc, scale, 1);
			assert_memory_equal(&got, &m, sizeof(m));
			for (uint32_t i = 0; i < n; i++) {
				uint32_t s = i / c.b;
				float w = ina_sub_mask_test(&m, s) ? want[i] : 0.0f;

				if (memcmp(&back[i], &w, sizeof(w)) != 0)
					fail_msg(
						"%s B %u sub_log %u n %u: element %u is %g, not %g",
						enc->name, B, sub_log, n, i, (double)back[i],
						(double)w);
			}
			/* Absent sub-blocks left alone when asked. */
			for (uint32_t i = 0; i < n; i++)
				back[i] = 7.0f;
			ina_sub_decode(back, buf + INA_HDR_SIZE, &c, enc, scale, 0);
			for (uint32_t i = 0; i < n; i++)
				if (!ina_sub_mask_test(&m, i / c.b))
					assert_true(back[i] == 7.0f);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_subblock_runs),
		cmocka_unit_test(test_subblock_nonzero),
		cmocka_unit_test(test_subblock_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
