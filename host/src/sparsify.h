/* SPDX-License-Identifier: MIT */
/*
 * Sparsification with residual carry-over (error feedback) for one tensor of
 * one worker: each round adds the gradient to the residual, a selector picks
 * what to send (whole blocks, or the sub-blocks of a cut, by L2 norm, and/or
 * a value-bounded filter), the
 * picked values are copied out unchanged and everything else stays in the
 * residual, so nothing is dropped, only delayed. Pure and transport-free: no
 * engine, no clock, nothing allocated after sparsify_create(). ina_allreduce()
 * runs it per tensor in front of the engine (ina.h: struct ina_sparsify) and
 * gives DEFERRED result blocks back with sparsify_defer_block().
 */
#ifndef INA_SPARSIFY_H
#define INA_SPARSIFY_H

#include <stddef.h>
#include <stdint.h>

/* What selects the values sent; a bit set, 0 sends everything (dense). */
#define SPARSIFY_TOPK 0x1   /* whole blocks ranked by L2 norm, to a target */
#define SPARSIFY_FILTER 0x2 /* values under a bound held back */

/* The target of block top-k. */
enum sparsify_target {
	SPARSIFY_DENSITY = 1, /* a fraction of the tensor's blocks */
	SPARSIFY_BYTES = 2,   /* wire bytes: INA_HDR_SIZE + 4 per element, per block */
	SPARSIFY_MASS = 3,    /* a fraction of the sum of squares */
};

/* What the value filter compares with its bound. */
enum sparsify_filter_mode {
	SPARSIFY_ELEMENT = 1, /* each element's magnitude */
	SPARSIFY_BLOCK = 2,   /* each block's largest magnitude (kept whole) */
};

/* How the filter's bound moves from round to round. */
enum sparsify_bound_mode {
	SPARSIFY_DECAY = 1,  /* bound = bound0 * decay^round */
	SPARSIFY_BUDGET = 2, /* the smallest bound that keeps the round in a byte budget */
};

struct sparsify_config {
	uint32_t n_elems;    /* tensor length, >= 1 */
	uint32_t block_size; /* B, elements per block, >= 1 */
	uint32_t sub_block;  /* b: top-k and the filter rank sub-blocks of b,
			      * B = b << k with k in 1..7 (PROTOCOL 2.7), and a
			      * block sends only those that hold a value; 0
			      * (or B): whole blocks */
	unsigned select;     /* SPARSIFY_TOPK | SPARSIFY_FILTER, or 0 */
	/* Block top-k (SPARSIFY_TOPK). */
	enum sparsify_target target;
	double density;	      /* SPARSIFY_DENSITY: (0, 1] of the blocks */
	uint64_t byte_budget; /* SPARSIFY_BYTES: per round, >= one full block */
	double mass;	      /* SPARSIFY_MASS: (0, 1] of the sum of squares */
	/* Value filter (SPARSIFY_FILTER). */
	enum sparsify_filter_mode filter_mode;
	enum sparsify_bound_mode bound_mode;
	float bound0;		/* SPARSIFY_DECAY: finite, >= 0 */
	double decay;		/* SPARSIFY_DECAY: (0, 1] */
	uint64_t filter_budget; /* SPARSIFY_BUDGET: bytes per round, >= one
					 * full block */
};

/* What one round did. Bytes count INA_HDR_SIZE + 4 per element for each
 * block that has a non-zero value sent (an f32 DATA packet); with sub-blocks,
 * INA_HDR_SIZE + the mask + 4 per element of its sub-blocks that have one. */
struct sparsify_stats {
	float bound;	      /* the filter's bound this round (0 without filter) */
	uint32_t blocks_sent; /* blocks with a non-zero value sent */
	uint32_t subs_sent;   /* units (sub-blocks, or blocks) with one */
	uint64_t elems_sent;  /* non-zero values sent */
	uint64_t bytes_sent;
	double mass_total;    /* sum of squares of grad + residual, in double */
	double mass_sent;     /* sum of squares of what was sent */
	double residual_mass; /* sum of squares of the residual after */
};

/* Defaults: B 256, block top-k at density 0.01 (mass 0.5 if MASS is chosen;
 * a BYTES target needs its budget set), filter element-wise with a
 * decaying bound (bound0 0, decay 1: a bound of 0 holds nothing back). The
 * caller sets n_elems. */
void sparsify_config_init(struct sparsify_config *cfg);

/* Checks 'cfg': 0, or -EINVAL for a bad parameter (B = 0, density outside
 * (0, 1], a budget below one full block, an unknown mode, ...). */
int sparsify_config_check(const struct sparsify_config *cfg);

/* Allocates the residual (zero) and the per-block work arrays. NULL with
 * errno EINVAL (sparsify_config_check) or ENOMEM. */
struct sparsify *sparsify_create(const struct sparsify_config *cfg);
void sparsify_destroy(struct sparsify *s); /* Accepts NULL. */

/*
 * One round: acc = grad + residual (float), select, out = the selected acc
 * values (others 0), residual = acc - out. A sent value is acc itself and its
 * residual is set to 0, so out + residual == acc bit for bit. 'out' may equal
 * 'grad'; both hold n_elems floats and stay the caller's. 'round' drives the
 * decaying bound. 'st' may be NULL. Allocates nothing. 0 or -EINVAL.
 *
 * The units ranked are blocks of B, or sub-blocks of b with a cut
 * (sub_block): "block" below means the unit. With both selectors, the filter
 * runs first and top-k ranks blocks by the norm of what passed it; top-k's targets stay fractions of the whole tensor
 * (all blocks, all of acc's mass), so the filter only ever lowers what is
 * sent. Top-k ranks by (norm descending, block index ascending) and keeps a
 * prefix of that order: for DENSITY the nearest whole number of blocks to
 * density * blocks (at least 1), for BYTES the longest prefix within the
 * budget (a sub-block costs its values, plus the header and mask when it is
 * the first of its block), for MASS the shortest prefix whose mass reaches mass * total. Blocks
 * with nothing non-zero are never counted as sent. NaN and infinity rank as
 * infinity (first) and pass any bound; under MASS every such block is sent.
 */
int sparsify_round(struct sparsify *s, const float *grad, float *out, uint32_t round,
		   struct sparsify_stats *st);

/*
 * The worker's side of a DEFERRED result: block 'block' came back
 * header-only, so this worker's own contribution to it, 'own_sent' (the
 * block's values in the last round's 'out', block_len floats), goes back into
 * the residual. Exact: a value sent had a residual of 0. Call it before the
 * next round. 0, or -EINVAL ('block' out of range, or a value that was not
 * sent: own_sent and residual both non-zero; nothing is changed then).
 */
int sparsify_defer_block(struct sparsify *s, uint32_t block, const float *own_sent);

/*
 * Changes B for the rounds that follow (the block planner's choice): any B at
 * least the block_size 's' was created with (which sized its arrays), under
 * which the config still holds (a byte budget of at least one block). The
 * residual is per element and carries over unchanged. Whole blocks (no
 * cut). 0 or -EINVAL.
 */
int sparsify_set_block_size(struct sparsify *s, uint32_t block_size);
/* The same with a cut: B and b (0 or B: whole blocks) for the rounds that
 * follow; the unit ranked (b, or B) at least the one 's' was created with. */
int sparsify_set_cut(struct sparsify *s, uint32_t block_size, uint32_t sub_block);
uint32_t sparsify_sub_block(const struct sparsify *s); /* 0: whole blocks */

/* The residual (n_elems floats, owned by 's'), the number of blocks, and the
 * length of block 'block' (B, or less for the last). */
const float *sparsify_residual(const struct sparsify *s);
uint32_t sparsify_n_blocks(const struct sparsify *s);
uint32_t sparsify_block_len(const struct sparsify *s, uint32_t block);

/* The filter's bound for 'round' under SPARSIFY_DECAY: bound0 * decay^round. */
float sparsify_decay_bound(const struct sparsify_config *cfg, uint32_t round);

#endif
