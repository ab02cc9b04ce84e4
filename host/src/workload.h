/* SPDX-License-Identifier: MIT */
/*
 * Workloads of the ina-host program: what each worker contributes in a round,
 * and the check of what it got back against given per-rank contributions (the
 * workload's own gradients when dense; what every simulated rank's sparsifier
 * sent, sim_ranks.h, with --sparsify). Synthetic gradients are block-sparse with
 * a given block density, deterministic from (seed, round, rank), with values
 * k * 2^-10 (|k| <= 1023) whose float sums are exact in any order, so every
 * worker computes the expected sum itself and compares bits (f32, i32; in bf16
 * not every k * 2^-10 is representable, so bf16 results are checked against
 * ina_enc_bf16_bound). Real gradients come from a .npy dump (iterations x
 * workers x parameters); their sums are checked against a double-precision
 * reference within the derived bound.
 */
#ifndef INA_WORKLOAD_H
#define INA_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

struct workload;

struct workload *workload_synth(uint32_t elements, double density, uint64_t seed, uint16_t world,
				uint16_t block_size);
struct workload *workload_npy(const char *path, uint16_t world, char *err, size_t err_size);
void workload_destroy(struct workload *w); /* Accepts NULL. */

uint32_t workload_elements(const struct workload *w);
/* "synthetic" or "gradients". */
const char *workload_kind(const struct workload *w);

/* Fills 'dst' with rank 'rank''s gradient of round 'round'. 0 or -errno. */
int workload_fill(struct workload *w, uint32_t round, uint16_t rank, float *dst);

struct verify_result {
	int ok;			 /* every element right */
	int exact;		 /* checked bit for bit (synthetic f32, i32) */
	uint64_t mismatches;	 /* elements wrong */
	uint64_t first_bad;	 /* index of the first */
	float got, want;	 /* at first_bad */
	double max_err;		 /* largest |got - reference| */
	double max_err_ratio;	 /* largest |got - reference| / bound (real data) */
	uint64_t nonzero_blocks; /* blocks of the sum that are not zero */
};

/* How a result is checked (workload_check). */
struct check_params {
	uint32_t n;	     /* elements of the tensor */
	uint16_t world;	     /* ranks whose contributions were summed, 1..64 */
	uint16_t block_size; /* the job's B: blocks nobody sent, i32 exponents */
	uint8_t encoding;    /* 1 f32, 2 i32, 3 bf16 (INA_ENC_*) */
	int average;	     /* 1: the sum times fl(1/world) */
	int exact;	     /* 1: bit for bit against the float sum in rank order
				 * (values whose sums are exact: workload_exact());
				 * 0: within the encoding's bound of a binary64 sum */
};

/*
 * The one check of a result: 'got' (n floats) against the sum (average) of
 * 'contrib' (world vectors of n floats, what each rank sent). A block no rank
 * sent (all zero, -0.0 included) must come back +0.0 bit for bit; every other
 * element exactly or within ina_enc_{f32,i32,bf16}_bound (docs/PROTOCOL.md
 * 8.2, 8.3). Allocates nothing. 0, or -EINVAL for bad parameters; the
 * verdict is in 'res'.
 */
int workload_check(const struct check_params *p, const float *const *contrib, const float *got,
		   struct verify_result *res);

/* 1 if results over workload 'w' in 'encoding' can be checked bit for bit:
 * synthetic values in f32 or i32 (PROTOCOL.md 8.3). */
int workload_exact(const struct workload *w, uint8_t encoding);
/* 1 if synthetic values sum bit for bit in 'encoding' (f32, i32). */
int workload_exact_encoding(uint8_t encoding);

/*
 * The dense check: workload_check() of 'got' (the allreduce of round 'round'
 * with 'average' 0 or 1, over the encoding 'encoding' in blocks of
 * 'block_size') against every rank's gradient of that round. 0 or -errno
 * (the verdict is in 'res').
 */
int workload_verify(struct workload *w, uint32_t round, const float *got, int average,
		    uint8_t encoding, uint16_t block_size, struct verify_result *res);

#endif
