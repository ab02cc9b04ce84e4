/* SPDX-License-Identifier: MIT */
/*
 * mass_prefix(): the weighted quickselect of mass_prefix.h. Each step
 * partitions the range around a median-of-three pivot; if the units ranked
 * before the pivot reach the target, the prefix ends among them, else they
 * and the pivot are all in it and the rest of the target is sought after the
 * pivot.
 */
#include "mass_prefix.h"

static void
swap(uint32_t *a, uint32_t *b)
{
	uint32_t t = *a;

	*a = *b;
	*b = t;
}

/* The median by rank of idx[lo], idx[mid], idx[hi], moved to idx[hi]. */
static void
pick_pivot(uint32_t *idx, uint32_t lo, uint32_t hi, const double *key)
{
	uint32_t mid = lo + (hi - lo) / 2;

	if (unit_ranks_before(key, idx[mid], idx[lo]))
		swap(&idx[mid], &idx[lo]);
	if (unit_ranks_before(key, idx[hi], idx[mid])) {
		swap(&idx[hi], &idx[mid]);
		if (unit_ranks_before(key, idx[mid], idx[lo]))
			swap(&idx[mid], &idx[lo]);
	}
	swap(&idx[mid], &idx[hi]);
}

void
mass_prefix(uint32_t *idx, uint32_t h, const double *key, double target, uint8_t *sel)
{
	uint32_t lo = 0, hi = h - 1, i, j;

	for (;;) {
		double above = 0;
		uint32_t piv;

		if (lo == hi) {
			sel[idx[lo]] = 1;
			return;
		}
		pick_pivot(idx, lo, hi, key);
		piv = idx[hi];
		/* idx[lo .. j) rank before the pivot */
		for (i = j = lo; i < hi; i++)
			if (unit_ranks_before(key, idx[i], piv)) {
				above += key[idx[i]];
				swap(&idx[i], &idx[j++]);
			}
		swap(&idx[j], &idx[hi]);
		if (j > lo && above >= target) {
			hi = j - 1; /* the prefix ends before the pivot */
			continue;
		}
		for (i = lo; i <= j; i++)
			sel[idx[i]] = 1;
		target -= above + key[piv];
		if (target <= 0 || j == hi)
			return;
		lo = j + 1;
	}
}
