/* SPDX-License-Identifier: MIT */
/*
 * One tensor's round on one worker, around the engine: what goes in front of
 * engine_allreduce() and what comes after it. Before: the block planner picks
 * B from the previous round's result (which every worker holds bit for bit,
 * so all agree without a round trip), and the sparsifier cuts the input plus
 * the residual into what is sent and what stays. After: the blocks whose sum
 * came back DEFERRED give this worker's part back to the residual, and the
 * result becomes the next round's planning reference. With a dynamic partition
 * map (partition.h) the blocks are gathered into wire order before the engine
 * and the sum (and its DEFERRED flags) scattered back after it, and the map's
 * tag goes into the tensor id on the wire. Transport-free and
 * clock-free: ina_allreduce() runs it per tensor, and the tests run it over
 * the in-process fabric. Nothing is allocated after tround_create().
 */
#ifndef INA_TENSOR_ROUND_H
#define INA_TENSOR_ROUND_H

#include <stddef.h>
#include <stdint.h>

#include "ina.h"
#include "partition.h"

struct tround_config {
	uint32_t tensor_id;	      /* for messages */
	size_t n;		      /* elements, 1 .. INA_BLOCK_OPEN - 1 */
	struct ina_sparsify sp;	      /* mode OFF: the input is sent as it is */
	int plan;		      /* 1: B per round by the block planner, and
					 * its cut unless sub_block fixes it */
	double packet_ns, byte_ns;    /* the planner's prices (planner.h); both
					 * 0: its defaults, the udp port's */
	double cut_packet_ns;	      /* ... a cut packet's more (with them) */
	double cut_sub_ns;	      /* ... a cut's non-zero sub-block's */
	uint32_t plan_period;	      /* rounds between plans; 0: adaptive,
					 * every round until a plan repeats
					 * the last, then twice the last
					 * period, up to TROUND_PLAN_HOLD_MAX */
	uint16_t max_block;	      /* the job's largest B (its JOIN); B itself
					 * when not planning */
	uint16_t sub_block;	      /* b of the job's cut (cfg.sub_block), 0: none
					 * (with 'plan': the planner's) */
	uint8_t encoding;	      /* enum ina_encoding: bytes per element */
	uint16_t world, lanes;	      /* the job's, for the planner's cost model */
	struct partition_config part; /* mode FIXED: blocks in order (nothing to do);
					 * DYNAMIC: gathered by the map (lanes as above) */
};

/* What the engine gets for this round. */
struct tround_step {
	const float *send;   /* the values to allreduce: the caller's input
					 * when nothing is sparsified */
	uint16_t block_size; /* B of this round */
	uint8_t sub_log;     /* its cut: 2^sub_log sub-blocks a block
					 * (egroup_set_cut), 0 for none */
	float bound;	     /* the result filter's bound, 0 for none */
	uint8_t *deferred;   /* for engine_set_result_filter(), NULL for none */
	float *out;	     /* where the engine writes the sum (wire order,
					 * owned by the round), NULL: the caller's out */
	uint32_t tag;	     /* the partition map's tag: XOR it into the
					 * tensor id the engine sends (0: none) */
};

/* The longest an adaptive plan_period (0) holds a plan, in rounds. */
#define TROUND_PLAN_HOLD_MAX 16

struct tround_stats {
	uint32_t rounds;	  /* rounds ended */
	uint32_t plans;		  /* of the rounds begun, those the planner
				   * planned (the others held a plan, or had
				   * no reference yet) */
	uint16_t block_size;	  /* B of the last round */
	uint8_t sub_log;	  /* its cut: 2^sub_log sub-blocks a block */
	uint32_t blocks;	  /* blocks of the last round */
	uint32_t blocks_sent;	  /* of those, with a non-zero value sent */
	uint32_t blocks_deferred; /* of those, whose sum came back DEFERRED */
	double residual_mass;	  /* sum of squares of the residual after it */
	uint32_t part_tag;	  /* the partition map's tag of the last round */
	uint32_t rebalances;	  /* partition maps built from a sum */
};

/* The cut of blocks of B into sub-blocks of 'sub_block' elements (0:
 * none): log2(B / sub_block) when B is sub_block times a power of two up
 * to INA_SUB_MAX, else 0 (uncut). */
uint8_t tround_sub_log(uint16_t block_size, uint16_t sub_block);

/*
 * The job's largest B, its JOIN's max_block (ina_open()): 'block_size' when
 * set; when not (0), the largest power of two whose block with the
 * planner's largest mask fits a packet of 'max_pkt' bytes in 'encoding'
 * (planner_largest_block()), within a default switch's slot
 * (INA_SLOT_ELEMS_DEFAULT) and 128 sub-blocks of a fixed 'sub_block': with
 * the planner ('plan') that, 0 when the planner's smallest block does not
 * fit; without, that up to 'unplanned' (so a 1500-byte frame gets blocks it
 * holds), 'unplanned' when nothing fits (ina_open() then says so).
 */
uint16_t tround_job_block(uint16_t block_size, int plan, uint16_t sub_block, uint8_t encoding,
			  uint32_t max_pkt, uint16_t unplanned);

/* NULL with a sentence in 'err' (bad options, no memory). */
struct tround *tround_create(const struct tround_config *cfg, char *err, size_t err_size);
void tround_destroy(struct tround *t); /* Accepts NULL. */

/* Plans and sparsifies 'in' (n floats, not modified) into 'step'. 0, or
 * -EINVAL if 'in' holds a value the sparsifier refuses. */
int tround_begin(struct tround *t, const float *in, struct tround_step *step);
/* The round did not complete (the engine refused it, or it was aborted: no
 * sum is used): what was to be sent goes back into the residual, exactly,
 * and the round did not happen. */
void tround_cancel(struct tround *t);
/* When tround_begin() gave a step.out: the engine's sum there, in wire
 * order, scattered into 'out' (n floats) in block order; else nothing. Call
 * it before tround_end(). */
void tround_scatter(const struct tround *t, float *out);
/* The round ended with 'out' (n floats, block order) on every worker alike. */
void tround_end(struct tround *t, const float *out);

const struct tround_stats *tround_stats(const struct tround *t);
/* Per block of the last round (at its B): 1 if its sum came back DEFERRED;
 * NULL when nothing is sparsified. Valid until the next tround_begin(). */
const uint8_t *tround_deferred(const struct tround *t, uint32_t *n_blocks);
/* The residual (n floats), NULL when nothing is sparsified. */
const float *tround_residual(const struct tround *t);
size_t tround_n(const struct tround *t);

#endif
