/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of block.c: zero detection (-0.0 is zero), a lane's next
 * non-zero block on all-zero, single-block, full and random sparse tensors
 * against a naive reference, short last blocks, and zeroing a lane's range.
 * Tensors are allocated at their exact size so ASan catches overreads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ina/block.h"
#include "ina/wire.h"

static uint64_t
rnd_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static float *
tensor_new(size_t n)
{
	float *x = calloc(n ? n : 1, sizeof(*x));

	assert_non_null(x);
	return x;
}

static float
float_of(uint32_t v)
{
	float f;

	memcpy(&f, &v, sizeof(f));
	return f;
}

static uint32_t
n_blocks(uint32_t len, uint16_t b)
{
	return (uint32_t)(((uint64_t)len + b - 1) / b);
}

/* The obvious answer, element by element. */
static uint32_t
ref_next(const float *x, uint32_t len, uint16_t bs, uint16_t lanes, uint32_t from)
{
	uint64_t b, i;

	for (b = from; b < n_blocks(len, bs); b += lanes)
		for (i = b * bs; i < len && i < (b + 1) * bs; i++)
			if (x[i] != 0.0f)
				return (uint32_t)b;
	return INA_BLOCK_END;
}

static void
test_block_is_zero_values(void **state)
{
	static const uint32_t nonzero[] = { 0x00000001, 0x80000001, 0x3f800000, 0x7fc00000,
					    0x7f800000, 0xff800000, 0x00400000 };
	float *x;
	size_t n, i, k;

	(void)state;
	for (n = 0; n <= 200; n++) {
		x = tensor_new(n);
		assert_true(ina_block_is_zero(x, n));
		for (i = 0; i < n; i += 3)
			x[i] = -0.0f;
		assert_true(ina_block_is_zero(x, n));
		for (i = 0; i < n; i++) {
			k = (n + i) % (sizeof(nonzero) / sizeof(nonzero[0]));
			x[i] = float_of(nonzero[k]);
			assert_false(ina_block_is_zero(x, n));
			/* Not seen when outside the first 'i' elements. */
			assert_true(ina_block_is_zero(x, i));
			x[i] = i % 2 ? -0.0f : 0.0f;
		}
		free(x);
	}
}

static void
test_block_all_zero_tensor(void **state)
{
	static const uint16_t lanes[] = { 1, 3, 4 };
	float *x = tensor_new(1000);
	size_t li;
	uint32_t from;

	(void)state;
	for (li = 0; li < 3; li++)
		for (from = 0; from < 12; from++) {
			assert_int_equal(ina_block_next_nonzero(x, 1000, 100, lanes[li], from),
					 INA_BLOCK_END);
			assert_int_equal(ina_block_next_nonzero(x, 1000, 7, lanes[li], from),
					 INA_BLOCK_END);
		}
	assert_int_equal(ina_block_next_nonzero(x, 0, 7, 1, 0), INA_BLOCK_END);
	free(x);
}

static void
test_block_single_block(void **state)
{
	static const uint16_t lanes[] = { 1, 3, 4 };
	const uint32_t len = 1000;
	const uint16_t bs = 64; /* 16 blocks, the last of 40 elements */
	float *x = tensor_new(len);
	uint32_t k, from;
	size_t li;

	(void)state;
	for (k = 0; k < n_blocks(len, bs); k++) {
		memset(x, 0, len * sizeof(*x));
		/* One non-zero element at the block's end, or the tensor's. */
		x[(k + 1) * bs <= len ? (k + 1) * bs - 1 : len - 1] = -1e-30f;
		for (li = 0; li < 3; li++) {
			uint16_t l = lanes[li];

			for (from = 0; from < 20; from++) {
				uint32_t want = from <= k && from % l == k % l ? k : INA_BLOCK_END;

				assert_int_equal(ina_block_next_nonzero(x, len, bs, l, from), want);
			}
		}
	}
	free(x);
}

static void
test_block_full_tensor(void **state)
{
	static const uint16_t lanes[] = { 1, 3, 4 };
	const uint32_t len = 1000; /* blocks of 77: 12 full, one of 76 */
	float *x = tensor_new(len);
	uint32_t i, from;
	size_t li;

	(void)state;
	for (i = 0; i < len; i++)
		x[i] = (float)i + 1;
	for (li = 0; li < 3; li++)
		for (from = 0; from < 20; from++)
			assert_int_equal(ina_block_next_nonzero(x, len, 77, lanes[li], from),
					 from < 13 ? from : INA_BLOCK_END);
	assert_int_equal(ina_block_next_nonzero(x, len, 77, 3, INA_BLOCK_END), INA_BLOCK_END);
	free(x);
}

static void
test_block_next_nonzero_random(void **state)
{
	static const uint16_t lanes[] = { 1, 3, 4 };
	static const uint16_t sizes[] = { 1, 7, 64, 256 };
	uint64_t seed = 11;
	size_t trial, li, si, i;

	(void)state;
	for (trial = 0; trial < 60; trial++) {
		uint32_t len = 1 + (uint32_t)(rnd_next(&seed) % 3000);
		unsigned density = (unsigned)(rnd_next(&seed) % 200); /* per 10000 */
		float *x = tensor_new(len);

		for (i = 0; i < len; i++)
			if (rnd_next(&seed) % 10000 < density)
				x[i] = rnd_next(&seed) & 1 ? 1.5f : -0x1p-140f;
			else if (rnd_next(&seed) & 1)
				x[i] = -0.0f;
		for (si = 0; si < 4; si++) {
			uint16_t bs = sizes[si];
			uint32_t nb = n_blocks(len, bs), from;

			for (li = 0; li < 3; li++)
				for (from = 0; from < nb + 5; from++)
					assert_int_equal(ina_block_next_nonzero(x, len, bs,
										lanes[li], from),
							 ref_next(x, len, bs, lanes[li], from));
		}
		free(x);
	}
}

/* The bitmap of non-zero blocks, mapped in pieces of 64 blocks from any
 * word on, against ina_block_is_zero of each block. */
static void
test_block_map_nonzero(void **state)
{
	static const uint16_t sizes[] = { 1, 7, 64, 256 };
	uint64_t seed = 29;

	(void)state;
	for (int trial = 0; trial < 40; trial++) {
		uint32_t len = 1 + (uint32_t)(rnd_next(&seed) % 30000);
		unsigned density = (unsigned)(rnd_next(&seed) % 50); /* per 10000 */
		float *x = tensor_new(len);

		for (uint32_t i = 0; i < len; i++)
			if (rnd_next(&seed) % 10000 < density)
				x[i] = rnd_next(&seed) & 1 ? 1.5f : -0x1p-140f;
			else if (rnd_next(&seed) & 1)
				x[i] = -0.0f;
		for (size_t si = 0; si < 4; si++) {
			uint16_t bs = sizes[si];
			uint32_t nb = n_blocks(len, bs);
			uint64_t *bits = malloc(((nb + 63) / 64 + 1) * sizeof(*bits));

			assert_non_null(bits);
			memset(bits, 0xa5, ((nb + 63) / 64 + 1) * sizeof(*bits));
			/* In pieces, as the engine maps ahead of its lanes. */
			for (uint32_t first = 0; first < nb; first += 64 * (1 + trial % 3))
				ina_block_map_nonzero(x, len, bs, first, 64 * (1 + trial % 3),
						      bits);
			for (uint32_t b = 0; b < nb; b++) {
				uint32_t n = len - b * bs < bs ? len - b * bs : bs;

				assert_int_equal((int)(bits[b / 64] >> (b % 64) & 1),
						 !ina_block_is_zero(x + (size_t)b * bs, n));
			}
			free(bits);
		}
		free(x);
	}
}

static void
test_block_short_last_block(void **state)
{
	float *x = tensor_new(10); /* blocks of 4: 0-3, 4-7, 8-9 */

	(void)state;
	x[9] = 2.0f;
	assert_int_equal(ina_block_next_nonzero(x, 10, 4, 1, 0), 2);
	assert_int_equal(ina_block_next_nonzero(x, 10, 4, 3, 2), 2);
	assert_int_equal(ina_block_next_nonzero(x, 10, 4, 3, 0), INA_BLOCK_END);
	assert_int_equal(ina_block_next_nonzero(x, 10, 4, 2, 0), 2);
	assert_int_equal(ina_block_next_nonzero(x, 10, 4, 2, 1), INA_BLOCK_END);
	assert_int_equal(ina_block_next_nonzero(x, 10, 4, 1, 3), INA_BLOCK_END);
	x[9] = 0;
	x[8] = -0.0f;
	assert_int_equal(ina_block_next_nonzero(x, 10, 4, 1, 0), INA_BLOCK_END);
	free(x);
}

static void
test_block_zero_range(void **state)
{
	const uint32_t len = 1003;
	const uint16_t bs = 10, l = 3; /* 101 blocks, the last of 3 elements */
	float *x = tensor_new(len);
	uint32_t i;

	(void)state;
	for (i = 0; i < len; i++)
		x[i] = 1.0f;
	/* Blocks 4, 7 and 10 of lane 1. */
	ina_block_zero_range(x, len, bs, l, 4, 13);
	for (i = 0; i < len; i++) {
		uint32_t b = i / bs;
		int zeroed = b % l == 1 && b >= 4 && b < 13;

		assert_true(x[i] == (zeroed ? 0.0f : 1.0f));
	}
	assert_int_equal(ina_block_next_nonzero(x, len, bs, l, 4), 13);

	/* Lane 2 from block 95 to the end: 95, 98 and the short block 100. */
	ina_block_zero_range(x, len, bs, l, 95, INA_BLOCK_END);
	for (i = 950; i < len; i++) {
		uint32_t b = i / bs;

		assert_true(x[i] == (b % l == 2 ? 0.0f : 1.0f));
	}
	assert_int_equal(ina_block_next_nonzero(x, len, bs, l, 95), INA_BLOCK_END);
	assert_int_equal(ina_block_next_nonzero(x, len, bs, l, 92), 92);

	/* An empty range, and one past the end, change nothing. */
	ina_block_zero_range(x, len, bs, l, 30, 30);
	ina_block_zero_range(x, len, bs, l, 200, INA_BLOCK_END);
	assert_true(x[300] == 1.0f);

	/* Every lane to the end: the whole tensor. */
	for (i = 0; i < l; i++)
		ina_block_zero_range(x, len, bs, l, i, INA_BLOCK_END);
	assert_true(ina_block_is_zero(x, len));
	free(x);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_is_zero_values),
		cmocka_unit_test(test_block_all_zero_tensor),
		cmocka_unit_test(test_block_single_block),
		cmocka_unit_test(test_block_full_tensor),
		cmocka_unit_test(test_block_next_nonzero_random),
		cmocka_unit_test(test_block_map_nonzero),
		cmocka_unit_test(test_block_short_last_block),
		cmocka_unit_test(test_block_zero_range),
	};

	return cmocka_run_group_tests_name("block", tests, NULL, NULL);
}
