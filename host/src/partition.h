/* SPDX-License-Identifier: MIT */
/*
 * Which switch partition (core or switch) aggregates which block of a tensor,
 * after sparsification. The engine sends the block at wire position v on lane
 * v mod L, and a switch of K partitions aggregates lane l on partition
 * l mod K, so position v belongs to partition (v mod L) mod K. A partition
 * map is a permutation of the tensor's blocks onto wire positions: the host
 * gathers the blocks into wire order before the engine and scatters the sum
 * back, and neither the engine nor the switch knows. FIXED is the identity
 * (block b on position b). DYNAMIC rebuilds the map every 'period' rounds from
 * the non-zero blocks of the previous round's sum (which every worker holds
 * bit for bit, so all build the same map without a message) so that each
 * partition gets an equal share of them. A map has a tag (0 for the identity)
 * that the caller folds into the tensor id on the wire, so workers with
 * different maps never match each other's packets. Pure: no clock, no I/O,
 * nothing allocated after partition_create().
 */
#ifndef INA_PARTITION_H
#define INA_PARTITION_H

#include <stddef.h>
#include <stdint.h>

enum partition_mode {
	PARTITION_FIXED = 0,   /* identity: block b on wire position b */
	PARTITION_DYNAMIC = 1, /* rebalanced from the last sum every 'period' rounds */
};

/* Which wire positions a partition owns. */
enum partition_layout {
	PARTITION_LANES = 0,  /* position v on lane v mod L, partition (v mod L)
				 * mod K: a switch on K cores (ina-switch --lcores) */
	PARTITION_RANGES = 1, /* K contiguous runs of positions, the k-th from
				 * ceil(k nb / K): K switches each aggregating one
				 * part of the tensor (egroup.h) */
};

#define PARTITION_MAX_PARTS 256

struct partition_config {
	enum partition_mode mode;
	enum partition_layout layout;
	uint32_t period; /* DYNAMIC: a new map at rounds r > 0 with r mod period
				 * == 0, from the sum of round r - 1; >= 1 */
	uint16_t parts;	 /* K: the switch's partitions, 1..PARTITION_MAX_PARTS */
	uint16_t lanes;	 /* L: the job's lanes, >= 1 */
};

/* The partition that wire position 'pos' goes to. */
static inline uint16_t
partition_of(uint32_t pos, uint16_t lanes, uint16_t parts)
{
	return (uint16_t)((pos % lanes) % parts);
}

/* The partition that wire position 'pos' of 'nb' goes to under cfg's layout. */
uint16_t partition_part(const struct partition_config *cfg, uint32_t nb, uint32_t pos);

/* 0, or -EINVAL with a sentence in 'err' (K or L out of range, period 0). */
int partition_config_check(const struct partition_config *cfg, char *err, size_t err_size);

/*
 * A map for a tensor of 'n_elems' elements cut in blocks of at least
 * 'min_block' (which sizes its arrays). NULL with errno EINVAL or ENOMEM.
 * Starts as the identity.
 */
struct partition *partition_create(const struct partition_config *cfg, uint32_t n_elems,
				   uint16_t min_block);
void partition_destroy(struct partition *p); /* Accepts NULL. */

/*
 * Builds the map of 'nb' blocks (at most n_elems / min_block rounded up) from
 * per-block loads: blocks ranked by (load descending, index ascending), each
 * with a load given to the partition with the least load so far that still
 * has a free position (ties: fewest blocks, then the lowest partition), on
 * that partition's next free position (so its lanes take turns); blocks of
 * load 0, in order, each to the partition with the most free positions left
 * (ties: the lowest), on its next free position, so that blocks next to each
 * other (which tend to turn non-zero together) are spread: with no load and
 * equal partitions under PARTITION_LANES that is the identity. O(nb K). With
 * 'keep_last' the last block
 * stays on the last position (a short last block must: the wire has only the
 * last block short). Every partition keeps its number of positions. 0 or
 * -EINVAL ('nb' too large).
 */
int partition_build(struct partition *p, const uint32_t *load, uint32_t nb, int keep_last);
/* Makes the map the identity on 'nb' blocks. */
void partition_identity(struct partition *p, uint32_t nb);

/*
 * The map of the tensor's round 'round' (its 0-based count of rounds, the
 * same on every worker) at block size 'B': FIXED, and DYNAMIC before its
 * first observed sum, the identity; DYNAMIC at a rebalancing round, rebuilt
 * from what partition_observe() kept of round - 1's sum; between them, the
 * last map (rebuilt from the same sum when B changed). 0 or -EINVAL (B below
 * min_block).
 */
int partition_round(struct partition *p, uint32_t round, uint16_t B);
/* Round 'round' ended with 'sum' (n_elems floats, as scattered back): keeps
 * its non-zero elements when round + 1 rebalances. */
void partition_observe(struct partition *p, uint32_t round, const float *sum);

/* The current map: blocks[v] is the block at wire position v. */
const uint32_t *partition_blocks(const struct partition *p, uint32_t *nb);
/* 1 when the current map is the identity (nothing to gather). */
int partition_is_identity(const struct partition *p);
/* The current map's tag: 0 for the identity, else a 32-bit hash of it that
 * is never 0. Workers with different maps have different tags (up to hash
 * collisions, 2^-32). */
uint32_t partition_tag(const struct partition *p);
/* Rebalances done (maps built from a sum). */
uint32_t partition_rebalances(const struct partition *p);

/* Copies the blocks of 'in' (n_elems floats, block order, blocks of the
 * current B) to 'wire' in wire order, and back. */
void partition_gather(const struct partition *p, const float *in, float *wire);
void partition_scatter(const struct partition *p, const float *wire, float *out);
/* Per-block bytes, wire order to block order. */
void partition_scatter_flags(const struct partition *p, const uint8_t *wire, uint8_t *out);

/* counts[k] (parts entries) = how many blocks with nonzero[b] set sit on
 * partition k under the current map. */
void partition_count(const struct partition *p, const uint8_t *nonzero, uint32_t *counts);

/* max / mean of 'counts' (n entries); 1 when all are 0. */
double partition_imbalance(const uint32_t *counts, uint32_t n);

#endif
