/* SPDX-License-Identifier: MIT */
/*
 * mass_prefix() (host/src/mass_prefix.h) against the definition: sort the
 * units by (key descending, index ascending) and take the shortest prefix
 * whose running sum reaches the target. Keys are small integers, so every
 * sum is exact in double and the two must mark the same units: random sizes,
 * many ties, zero keys, targets below, at and past the total, target <= 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mass_prefix.h"

#define MAX_UNITS 300

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static const double *sort_key;

static int
by_rank(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (sort_key[x] != sort_key[y])
		return sort_key[x] > sort_key[y] ? -1 : 1;
	return x < y ? -1 : 1;
}

/* The definition, on the units idx[0..h). */
static void
reference(const uint32_t *idx, uint32_t h, const double *key, double target, uint8_t *sel)
{
	uint32_t order[MAX_UNITS];
	double acc = 0;

	memcpy(order, idx, h * sizeof(*order));
	sort_key = key;
	qsort(order, h, sizeof(*order), by_rank);
	for (uint32_t i = 0; i < h; i++) {
		sel[order[i]] = 1;
		acc += key[order[i]];
		if (acc >= target)
			return;
	}
}

static void
test_mass_prefix_matches_definition(void **state)
{
	(void)state;
	for (int iter = 0; iter < 5000; iter++) {
		uint32_t n = 1 + next_rand() % MAX_UNITS, h = 0, spread = 1 + next_rand() % 20;
		uint32_t idx[MAX_UNITS];
		double key[MAX_UNITS], total = 0, target;
		uint8_t got[MAX_UNITS] = { 0 }, want[MAX_UNITS] = { 0 };

		for (uint32_t u = 0; u < n; u++) {
			key[u] = (double)(next_rand() % spread); /* ties, zeros */
			if (next_rand() % 4)
				idx[h++] = u; /* a subset of the units */
		}
		if (h == 0)
			idx[h++] = 0;
		/* shuffle: the order of idx must not matter */
		for (uint32_t i = h; i > 1; i--) {
			uint32_t j = next_rand() % i, t = idx[i - 1];

			idx[i - 1] = idx[j];
			idx[j] = t;
		}
		for (uint32_t i = 0; i < h; i++)
			total += key[idx[i]];
		switch (iter % 5) {
		case 0:
			target = 0;
			break;
		case 1:
			target = total + 1; /* not reached: all of them */
			break;
		case 2:
			target = total; /* exactly */
			break;
		default:
			target = (double)(next_rand() % ((uint32_t)total + 1));
		}
		reference(idx, h, key, target, want);
		mass_prefix(idx, h, key, target, got);
		if (memcmp(got, want, n) != 0)
			fail_msg("iteration %d: %u units, %u candidates, target %.0f of %.0f", iter,
				 n, h, target, total);
	}
}

/* Target <= 0 or a single unit: the top unit alone. */
static void
test_mass_prefix_top_unit(void **state)
{
	double key[4] = { 3, 7, 7, 1 };
	uint32_t idx[4] = { 3, 2, 1, 0 }, one[1] = { 3 };
	uint8_t sel[4] = { 0 };

	(void)state;
	mass_prefix(idx, 4, key, -1.0, sel);
	assert_memory_equal(sel, ((uint8_t[4]){ 0, 1, 0, 0 }), 4); /* 7 at index 1 first */
	memset(sel, 0, sizeof(sel));
	mass_prefix(one, 1, key, 100.0, sel);
	assert_memory_equal(sel, ((uint8_t[4]){ 0, 0, 0, 1 }), 4);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mass_prefix_matches_definition),
		cmocka_unit_test(test_mass_prefix_top_unit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
