/* SPDX-License-Identifier: MIT */
/*
 * The shortest prefix of ranked units that reaches a mass: what block top-k
 * to a mass fraction keeps (sparsify.c) and what the block planner expects
 * it to keep (planner.c). Units rank by key descending, then index
 * ascending. A weighted quickselect: expected linear in the units, where
 * ranking them all (a heap or a sort) is n log n.
 */
#ifndef INA_HOST_MASS_PREFIX_H
#define INA_HOST_MASS_PREFIX_H

#include <stdint.h>

/* Unit a ranks before unit b: the larger key, then the smaller index (the
 * order of mass_prefix() and of the sparsifier's heap). */
static inline int
unit_ranks_before(const double *key, uint32_t a, uint32_t b)
{
	return key[a] > key[b] || (key[a] == key[b] && a < b);
}

/*
 * Sets sel[u] = 1 for the units u of the shortest prefix, in rank order, of
 * the h >= 1 units idx[0..h) whose keys (finite, >= 0) sum to 'target' or
 * more; all h when they do not reach it; the top unit alone when target <=
 * 0. Reorders idx. The sums are taken over whole partitions, so where a
 * running sum in rank order reaches the target within a rounding of it the
 * boundary may differ by a unit; the same inputs give the same prefix.
 */
void mass_prefix(uint32_t *idx, uint32_t h, const double *key, double target, uint8_t *sel);

#endif
