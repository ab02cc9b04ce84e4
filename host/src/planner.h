/* SPDX-License-Identifier: MIT */
/*
 * The block planner (issue 4, point 4; issue 18, point 2): picks the block
 * size B of a tensor for a round, and the sub-block size b = B >> k that cuts
 * each block (docs/PROTOCOL.md 2.7), from a reference vector every worker
 * holds bit for bit (the previous round's sum), by a cost model of the
 * packets and bytes the lane protocol (docs/PROTOCOL.md section 6) puts on
 * the wire in both directions, priced in time. A pure function of (config,
 * reference, rule): workers that share the reference and the config agree on
 * (B, b) without a round trip. Nothing allocated after planner_create().
 *
 * Cost model, per tensor of n elements, nb = ceil(n / B) blocks, L lanes,
 * N workers, A = min(L, nb) active lanes, U = the blocks some worker sends
 * (a block is sent when one of its sub-blocks is), m = the mask's bytes
 * (0 for k = 0; 4 for k <= 5, 8 for k = 6, 16 for k = 7):
 *   steps  = A + |U \ {0 .. A-1}|         (f32: the opener is block 'lane')
 *   steps  = A + |U|                      (i32: a header-only OPEN per lane)
 *   uplink   = N * steps packets: every worker answers every step, with its
 *              block or an empty ack (header only)
 *   downlink = N * steps packets: one RESULT per step to each worker, with the
 *              sum if the block is in U, header-only otherwise
 *   bytes    = packets * (INA_HDR_SIZE + frame_bytes)
 *            + m * (uplink payload packets + N * |U|)
 *            + elem_bytes * (uplink payload elements + N * elements of U)
 *   time     = packets * packet_ns + bytes * byte_ns
 *            + (k > 0 ? cut_packet_ns * payload packets
 *                       + cut_sub_ns * payload sub-blocks : 0)
 * (payload packets: uplink payload packets + N * |U|; an empty ack or a
 * header-only RESULT has one size in every round. Payload sub-blocks: the
 * non-zero sub-blocks those packets carry, each worker's own uplink and N
 * times the union's: each is a run the sender's encoder, the switch's sum
 * and the receiver's decoder take apart, so a finer cut costs more host time
 * than its bytes say)
 * Uplink payload packets and elements: over workers, each worker's own
 * non-zero blocks, and in them the elements of its own non-zero sub-blocks;
 * "elements of U" are those of the union's non-zero sub-blocks. Blocks not in
 * U never travel. JOIN, FIN, WAIT and retransmissions are not counted (per
 * job, or loss). The plan picks the least time, then the fewest bytes, then
 * the larger B, then the larger b.
 */
#ifndef INA_PLANNER_H
#define INA_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#define PLANNER_MIN_BLOCK 16u
#define PLANNER_MIN_SUB 8u	  /* the smallest sub-block b tried */
#define PLANNER_MAX_SUB_LOG 7u	  /* k up to 7: 128 sub-blocks (INA_SUB_MAX) */
#define PLANNER_MAX_SIZES 10	  /* B: 16 .. 8192 */
#define PLANNER_MAX_CANDIDATES 80 /* (B, k) pairs */

/*
 * What a packet and a byte cost, in ns (bench/README.md "Time per packet and
 * per byte" measured them on this machine): the kernel's UDP path (the udp
 * port) and DPDK memif with zero-copy clients. planner_config_init() sets
 * the udp figures.
 */
#define PLANNER_UDP_PACKET_NS 364.0
#define PLANNER_UDP_BYTE_NS 0.223
#define PLANNER_MEMIF_PACKET_NS 219.0
#define PLANNER_MEMIF_BYTE_NS 0.116
/*
 * What a cut round costs on top, per payload packet and per sub-block it
 * carries (bench/README.md "What a cut costs"): over the udp port a burst of
 * packets of varied sizes batches worse in the kernel's segmentation and
 * receive offloads; on either path every non-zero sub-block is a run to
 * encode, add and decode.
 */
#define PLANNER_UDP_CUT_PACKET_NS 1000.0
#define PLANNER_UDP_CUT_SUB_NS 9.0
#define PLANNER_MEMIF_CUT_PACKET_NS 150.0
#define PLANNER_MEMIF_CUT_SUB_NS 9.0

struct planner_config {
	uint32_t max_elems;   /* longest tensor planned, >= 1 */
	uint32_t max_pkt;     /* largest ina packet (UDP payload), bytes */
	uint32_t elem_bytes;  /* bytes per element on the wire: 4 (f32, i32) */
	uint16_t world;	      /* N, workers, >= 1 */
	uint16_t lanes;	      /* L, >= 1 */
	int open_exchange;    /* 1 for i32: a header-only OPEN per lane */
	uint32_t frame_bytes; /* per packet below ina (Eth/IP/UDP), 0 counts
				 * ina packets only */
	uint8_t max_sub_log;  /* the largest k tried (0: whole blocks only;
				 * at most PLANNER_MAX_SUB_LOG) */
	uint32_t mask_room;   /* bytes a cut packet may hold past max_pkt
				 * for its mask: a cut of B is tried only if
				 * INA_HDR_SIZE + mask + B * elem_bytes <=
				 * max_pkt + mask_room (0: within max_pkt) */
	double packet_ns;     /* time per packet, 0 .. 1e6 */
	double byte_ns;	      /* time per byte, 0 .. 1e6; not both 0 */
	double cut_packet_ns; /* time a payload packet of a cut (k > 0)
				 * costs on top of packet_ns, 0 .. 1e6 */
	double cut_sub_ns;    /* time a non-zero sub-block of a cut
				 * (k > 0) costs, 0 .. 1e6 */
};

/* What travels for one tensor at one (B, b): the inputs of the cost model. */
struct planner_blocks {
	uint32_t n_blocks;     /* nb */
	uint32_t sent;	       /* |U| */
	uint32_t sent_openers; /* |U ∩ {0 .. A-1}| */
	uint64_t sent_elems;   /* elements of U's non-zero sub-blocks */
	uint64_t up_elems;     /* sum over workers of their own sent elements */
	uint64_t up_blocks;    /* sum over workers of their own sent blocks
				* (uplink payload packets: each has a mask) */
	uint64_t sent_subs;    /* U's non-zero sub-blocks (blocks: k = 0) */
	uint64_t up_subs;      /* sum over workers of their own */
};

struct planner_cost {
	uint64_t up_pkts, down_pkts;
	uint64_t up_bytes, down_bytes;
	uint64_t payload_pkts; /* of those, with a payload (both ways) */
	uint64_t payload_subs; /* non-zero sub-blocks they carry (k > 0) */
};

/* The measurement and the cost of one candidate, after planner_plan(). */
struct planner_candidate {
	uint32_t block_size;	      /* B */
	uint8_t sub_log;	      /* k: b = B >> k */
	struct planner_blocks blocks; /* uplink assumed: every worker sends U */
	struct planner_cost cost;
	uint64_t time_ps; /* the cost model's time, in picoseconds */
	double density;	  /* sent / n_blocks */
};

/* What planner_plan_cut() picked. */
struct planner_pick {
	uint32_t block_size; /* B */
	uint8_t sub_log;     /* k, 0 for whole blocks */
	uint32_t sub;	     /* b = B >> k */
};

/* Defaults: max_pkt 9000, elem_bytes 4, world 4, lanes 64, f32, frame 0,
 * max_sub_log 0, the udp port's packet_ns, byte_ns, cut_packet_ns and
 * cut_sub_ns. */
void planner_config_init(struct planner_config *cfg);
int planner_config_check(const struct planner_config *cfg); /* 0 or -EINVAL */

/* The largest B one packet carries: (max_pkt - INA_HDR_SIZE) / elem_bytes,
 * capped at INA_BLOCK_MAX (the header's field); 0 if not even one element
 * fits. */
uint32_t planner_max_block(const struct planner_config *cfg);

/* Bytes of the presence mask of a cut into 2^k sub-blocks (PROTOCOL 2.7). */
uint32_t planner_mask_bytes(uint8_t sub_log);

/*
 * The largest B a job uses when its block_size is not set (a planned job;
 * an unplanned one takes it when it is under 1024, tround_job_block()): the
 * largest power of two from PLANNER_MIN_BLOCK up to 'cap' (and INA_BLOCK_MAX)
 * whose full block with the largest presence mask (INA_SUB_MAX / 8 bytes,
 * the planner's finest cut) fits a packet of 'max_pkt' bytes in elements of
 * 'elem_bytes' bytes: 9000-byte packets, f32: 2048; bf16: 4096; 1500, f32:
 * 256. 0 when not even PLANNER_MIN_BLOCK fits. A pure function of its
 * arguments, so ranks with the same packet size and cap agree on it without
 * a round trip.
 */
uint16_t planner_largest_block(uint32_t max_pkt, uint32_t elem_bytes, uint32_t cap);

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

/* The candidates' block sizes, powers of two from 16 to planner_max_block():
 * count and sizes (valid while 'p' lives). Each B is tried with k = 0 ..
 * max_sub_log while B >> k >= PLANNER_MIN_SUB and the cut packet fits
 * (mask_room). */
unsigned planner_n_candidates(const struct planner *p);
const uint32_t *planner_candidate_sizes(const struct planner *p);

/* The cost model above, exact for the given counts. */
struct planner_cost planner_cost(const struct planner_config *cfg, uint32_t n, uint32_t B,
				 uint8_t sub_log, const struct planner_blocks *blk);
static inline uint64_t
planner_cost_bytes(const struct planner_cost *c)
{
	return c->up_bytes + c->down_bytes;
}
/* Its time in picoseconds, for a cut into 2^sub_log sub-blocks: the prices
 * rounded to whole ps, so that every worker computes the same integer. */
uint64_t planner_cost_time_ps(const struct planner_config *cfg, const struct planner_cost *c,
			      uint8_t sub_log);

/*
 * Plans a tensor of n elements from the reference 'ref' (n floats). For each
 * sub-block size b the reference's sub-blocks of b are ranked, and the kept
 * set is:
 *   mass >= 1: every sub-block with an element |x| > bound (0: non-zero);
 *   mass < 1:  of those, the shortest prefix by (L2 norm descending, index
 *              ascending) whose sum of squares reaches mass * their total;
 * for each candidate (B, b) U is the blocks of B holding a kept sub-block,
 * and every worker is assumed to send every block of U with all of U's kept
 * sub-blocks (uplink N times the downlink's payload, an upper bound). Picks
 * the candidate of least time (then bytes, larger B, larger b) into 'pick';
 * the candidates' figures are in planner_candidates(). NaN and infinity
 * rank first and always count. 0, or -EINVAL on bad input (n = 0, n >
 * max_elems, mass <= 0 or NaN, bound < 0 or NaN). Allocates nothing.
 */
int planner_plan_cut(struct planner *p, const float *ref, uint32_t n, double mass, float bound,
		     struct planner_pick *pick);
/*
 * planner_plan_cut() in two halves: planner_measure() reads the reference
 * once (per unit of the smallest b: its flags, and for a mass < 1 its sum of
 * squares; nothing else for mass >= 1, which ranks nothing) and keeps that;
 * planner_plan_measured() plans from it, any number of times, for the same n
 * and a mass on the same side of 1. A tensor round measures its result as it
 * ends, while it is still in the cache, instead of copying it. The same
 * picks as planner_plan_cut(); 0 or -EINVAL (nothing measured, another n, a
 * mass < 1 after a measurement for mass >= 1, or as planner_plan_cut()).
 */
int planner_measure(struct planner *p, const float *ref, uint32_t n, double mass, float bound);
int planner_plan_measured(struct planner *p, uint32_t n, double mass, struct planner_pick *pick);
/* The same, returning B alone (0 on bad input): for a planner whose
 * max_sub_log is 0. */
uint32_t planner_plan(struct planner *p, const float *ref, uint32_t n, double mass, float bound);
/*
 * The cut of a round with no reference (the first): the largest B, cut as
 * finely as its candidates allow (b >= PLANNER_MIN_SUB, the mask fits). A mask costs at most
 * 16 bytes a packet, so the finest cut costs little on a dense tensor and
 * skips every zero sub-block of a sparse one, in the fewest packets
 * (bench/README.md: 15.4% -> 10.8% of the fixed-block bytes at mass 0.5).
 */
void planner_first_cut(const struct planner *p, struct planner_pick *pick);
const struct planner_candidate *planner_candidates(const struct planner *p);
unsigned planner_n_evaluated(const struct planner *p); /* of the last plan */

/*
 * Exact counts for given per-worker vectors 'vec[w]' (n floats each, w <
 * n_vec) at block size B cut into 2^sub_log sub-blocks: a worker sends each
 * block holding a non-zero value, with its non-zero sub-blocks; U is the
 * union of their blocks, with the union of their sub-blocks. This is what a
 * round of the lane protocol sends; planner_cost() of it is the wire.
 */
void planner_count(const struct planner_config *cfg, const float *const *vec, unsigned n_vec,
		   uint32_t n, uint32_t B, uint8_t sub_log, struct planner_blocks *out);

#endif
