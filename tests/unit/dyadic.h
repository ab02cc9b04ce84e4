/* SPDX-License-Identifier: MIT */
/*
 * Test gradients whose float sums are exact in any order: values k 2^-10,
 * |k| <= 1023, deterministic from (round, rank, index). Every fourth run of
 * 'run' elements, from the second, nearly cancels across the workers (+v, -v,
 * +v, ... with rank 0 off by at most 2^-10), so some block sums are small and
 * a result filter has something to defer. Used by test_api_sparsify and
 * test_tensor_round.
 */
#ifndef INA_TEST_DYADIC_H
#define INA_TEST_DYADIC_H

#include <stddef.h>
#include <stdint.h>

/* Fills grad[r * stride + i] for ranks r < world and elements i < n. */
void dyadic_cancel_grads(float *grad, int world, uint32_t n, size_t stride, int round,
			 uint32_t run);

#endif
