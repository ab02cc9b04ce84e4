/* SPDX-License-Identifier: MIT */
/*
 * Block format: a tensor of M elements is cut into blocks of B elements
 * (the last may be short); block b belongs to lane b % L, and a lane walks its
 * blocks b = lane, lane + L, lane + 2L, ... in increasing order. A block is
 * zero when every element compares equal to 0.0f (so -0.0 counts as zero);
 * zero blocks are never sent.
 */
#ifndef INA_BLOCK_H
#define INA_BLOCK_H

#include <stddef.h>
#include <stdint.h>

/* 1 if all 'n' floats are zero. */
int ina_block_is_zero(const float *x, size_t n);

/*
 * The first non-zero block of the lane of 'from', at or after 'from', in a
 * tensor 'x' of 'tensor_len' elements cut into blocks of 'block_size' and
 * dealt to 'lanes' lanes; INA_BLOCK_END when there is none.
 */
uint32_t ina_block_next_nonzero(const float *x, uint32_t tensor_len, uint16_t block_size,
				uint16_t lanes, uint32_t from);

/*
 * The non-zero blocks of 'x' from block 'first' (a multiple of 64) on,
 * 'count' of them (fewer past the tensor's end), as bits: bit b % 64 of
 * bits[b / 64] is 1 when block b is non-zero. One pass in address order, so
 * a dense tensor is read at memory bandwidth whatever the lanes; a block is
 * read only up to its first non-zero chunk.
 */
void ina_block_map_nonzero(const float *x, uint32_t tensor_len, uint16_t block_size, uint32_t first,
			   uint32_t count, uint64_t *bits);

/* Zeroes the blocks of the lane of 'from' in [from, to) ('to' may be END). */
void ina_block_zero_range(float *x, uint32_t tensor_len, uint16_t block_size, uint16_t lanes,
			  uint32_t from, uint32_t to);

#endif
