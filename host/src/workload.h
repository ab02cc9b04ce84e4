/* SPDX-License-Identifier: MIT */
/*
 * Workloads of the ina-host program: what each worker contributes in a round,
 * and the check of what it got back. Synthetic gradients are block-sparse with
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
void workload_destroy(struct workload *w);	/* Accepts NULL. */

uint32_t workload_elements(const struct workload *w);
/* "synthetic" or "gradients". */
const char *workload_kind(const struct workload *w);

/* Fills 'dst' with rank 'rank''s gradient of round 'round'. 0 or -errno. */
int workload_fill(struct workload *w, uint32_t round, uint16_t rank, float *dst);

struct verify_result {
	int ok;			/* every element right */
	int exact;		/* checked bit for bit (synthetic f32, i32) */
	uint64_t mismatches;	/* elements wrong */
	uint64_t first_bad;	/* index of the first */
	float got, want;	/* at first_bad */
	double max_err;		/* largest |got - reference| */
	double max_err_ratio;	/* largest |got - reference| / bound (real data) */
	uint64_t nonzero_blocks; /* blocks of the sum that are not zero */
};

/*
 * Checks 'got' (the allreduce of round 'round' with 'average' 0 or 1, over
 * the encoding 'encoding' (1 f32, 2 i32, 3 bf16) in blocks of 'block_size') against
 * the contributions of all ranks. 0 or -errno (the result is in 'res').
 */
int workload_verify(struct workload *w, uint32_t round, const float *got, int average,
		    uint8_t encoding, uint16_t block_size, struct verify_result *res);

#endif
