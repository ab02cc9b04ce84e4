/* SPDX-License-Identifier: MIT */
/*
 * The block planner (issue 4, point 4): picks the block size B of a tensor for
 * a round from a reference vector every worker holds bit for bit (the previous
 * round's sum), by a cost model of the bytes and packets the lane protocol
 * (docs/PROTOCOL.md section 6) puts on the wire in both directions. A pure
 * function of (config, reference, rule): workers that share the reference
 * agree on B without a round trip. Nothing allocated after planner_create().
 * Not yet wired into the engine, the API or the CLI.
 *
 * Cost model, per tensor of n elements, nb = ceil(n / B) blocks, L lanes,
 * N workers, A = min(L, nb) active lanes, U = the blocks some worker sends:
 *   steps  = A + |U \ {0 .. A-1}|         (f32: the opener is block 'lane')
 *   steps  = A + |U|                      (i32: a header-only OPEN per lane)
 *   uplink   = N * steps packets: every worker answers every step, with its
 *              block or an empty ack (header only)
 *   downlink = N * steps packets: one RESULT per step to each worker, with the
 *              sum if the block is in U, header-only otherwise
 *   bytes    = packets * (INA_HDR_SIZE + frame_bytes)
 *            + elem_bytes * (uplink payload elements + N * elements of U)
 * Uplink payload elements are the sum over workers of the elements of each
 * worker's own non-zero blocks; blocks not in U never travel. JOIN, FIN,
 * WAIT and retransmissions are not counted (per job, or loss).
 */
#ifndef INA_PLANNER_H
#define INA_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#define PLANNER_MIN_BLOCK 16u
#define PLANNER_MAX_CANDIDATES 12 /* 16 .. 32768 */

struct planner_config {
	uint32_t max_elems;   /* longest tensor planned, >= 1 */
	uint32_t max_pkt;     /* largest ina packet (UDP payload), bytes */
	uint32_t elem_bytes;  /* bytes per element on the wire: 4 (f32, i32) */
	uint16_t world;	      /* N, workers, >= 1 */
	uint16_t lanes;	      /* L, >= 1 */
	int open_exchange;    /* 1 for i32: a header-only OPEN per lane */
	uint32_t frame_bytes; /* per packet below ina (Eth/IP/UDP), 0 counts
				 * ina packets only */
};

/* What travels for one tensor at one B: the inputs of the cost model. */
struct planner_blocks {
	uint32_t n_blocks;     /* nb */
	uint32_t sent;	       /* |U| */
	uint32_t sent_openers; /* |U ∩ {0 .. A-1}| */
	uint64_t sent_elems;   /* elements of the blocks of U */
	uint64_t up_elems;     /* sum over workers of their own sent elements */
};

struct planner_cost {
	uint64_t up_pkts, down_pkts;
	uint64_t up_bytes, down_bytes;
};

/* The measurement and the cost of one candidate, after planner_plan(). */
struct planner_candidate {
	uint32_t block_size;
	struct planner_blocks blocks; /* uplink assumed N * sent_elems */
	struct planner_cost cost;
	double density; /* sent / n_blocks */
};

/* Defaults: max_pkt 9000, elem_bytes 4, world 4, lanes 64, f32, frame 0. */
void planner_config_init(struct planner_config *cfg);
int planner_config_check(const struct planner_config *cfg); /* 0 or -EINVAL */

/* The largest B one packet carries: (max_pkt - INA_HDR_SIZE) / elem_bytes,
 * capped at 65535 (the header's field); 0 if not even one element fits. */
uint32_t planner_max_block(const struct planner_config *cfg);

/*
 * The mass to rank the reference to for a top-k mass target m. The workers
 * each keep their own blocks to m, so what the job sends (the union) is more
 * than the reference's top m: on the real gradients 1.7 to 2 times the
 * blocks. Planning at m + PLANNER_HEADROOM (1 - m) covers that
 * (bench/README.md: 24.3% -> 22.6% of the fixed-block bytes at mass 0.5, the
 * same at 0.7 and 0.9).
 */
#define PLANNER_HEADROOM 0.5
static inline double
planner_target_mass(double m, double headroom)
{
	return m >= 1 ? m : m + headroom * (1 - m);
}

/* NULL with errno EINVAL, or ENOMEM. */
struct planner *planner_create(const struct planner_config *cfg);
void planner_destroy(struct planner *p); /* Accepts NULL. */

/* The candidates, powers of two from 16 to planner_max_block(): count and
 * sizes (valid while 'p' lives). */
unsigned planner_n_candidates(const struct planner *p);
const uint32_t *planner_candidate_sizes(const struct planner *p);

/* The cost model above, exact for the given counts. */
struct planner_cost planner_cost(const struct planner_config *cfg, uint32_t n, uint32_t B,
				 const struct planner_blocks *blk);
static inline uint64_t
planner_cost_bytes(const struct planner_cost *c)
{
	return c->up_bytes + c->down_bytes;
}

/*
 * Plans a tensor of n elements from the reference 'ref' (n floats). For each
 * candidate B the reference's blocks are ranked, and U is:
 *   mass >= 1: every block with an element |x| > bound (bound 0: non-zero);
 *   mass < 1:  of those, the shortest prefix by (L2 norm descending, index
 *              ascending) whose sum of squares reaches mass * their total;
 * then every worker is assumed to send every block of U (uplink N times
 * sent_elems, an upper bound). Returns the B of least total bytes, the
 * larger on a tie; the candidates' figures are in planner_candidates().
 * NaN and infinity rank first and always count. 0 on bad input (n = 0,
 * n > max_elems, mass <= 0 or NaN, bound < 0 or NaN). Allocates nothing.
 */
uint32_t planner_plan(struct planner *p, const float *ref, uint32_t n, double mass, float bound);
const struct planner_candidate *planner_candidates(const struct planner *p);

/*
 * Exact counts for given per-worker vectors 'vec[w]' (n floats each, w <
 * n_vec) at block size B: U is the union of their non-zero blocks. This is
 * what a round of the lane protocol sends; planner_cost() of it is the wire.
 */
void planner_count(const struct planner_config *cfg, const float *const *vec, unsigned n_vec,
		   uint32_t n, uint32_t B, struct planner_blocks *out);

#endif
