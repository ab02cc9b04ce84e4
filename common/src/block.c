/* SPDX-License-Identifier: MIT */
/*
 * Block format of block.h: which blocks of a tensor are zero, and where a
 * lane's next non-zero block is. The host engine uses it to fill each
 * packet's next pointer and to skip zero blocks; the encodings of a block's
 * payload are in encode.c.
 */
#include "ina/block.h"

#include <string.h>

#include "ina/wire.h"

/*
 * Elements per chunk of ina_block_is_zero: the inner loop has a fixed trip
 * count, which gcc vectorises at -O2, and a chunk is small enough that a
 * non-zero block stops the scan early.
 */
#define INA_BLOCK_CHUNK 64

/* OR of the bits without their sign: 0 only if every float is +0 or -0. */
static inline uint32_t
abs_bits_or(const float *x, size_t n)
{
	uint32_t acc = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t v;

		memcpy(&v, &x[i], sizeof(v));
		acc |= v & 0x7fffffffu;
	}
	return acc;
}

int
ina_block_is_zero(const float *x, size_t n)
{
	size_t i = 0;

	for (; i + INA_BLOCK_CHUNK <= n; i += INA_BLOCK_CHUNK)
		if (abs_bits_or(x + i, INA_BLOCK_CHUNK) != 0)
			return 0;
	return abs_bits_or(x + i, n - i) == 0;
}

/* Elements of block 'b', 0 past the end of the tensor. */
static size_t
block_len(uint32_t tensor_len, uint16_t block_size, uint64_t b)
{
	uint64_t start = b * block_size;

	if (start >= tensor_len)
		return 0;
	return tensor_len - start < block_size ? tensor_len - start : block_size;
}

/*
 * Block indices are 64-bit inside, so that b + lanes cannot wrap. A block
 * size or lane count of 0 leaves no block to find or zero.
 */
uint32_t
ina_block_next_nonzero(const float *x, uint32_t tensor_len, uint16_t block_size, uint16_t lanes,
		       uint32_t from)
{
	uint64_t b;
	size_t len;

	if (block_size == 0 || lanes == 0 || from == INA_BLOCK_END)
		return INA_BLOCK_END;
	for (b = from; (len = block_len(tensor_len, block_size, b)) != 0; b += lanes)
		if (!ina_block_is_zero(x + b * block_size, len))
			return (uint32_t)b;
	return INA_BLOCK_END;
}

void
ina_block_map_nonzero(const float *x, uint32_t tensor_len, uint16_t block_size, uint32_t first,
		      uint32_t count, uint64_t *bits)
{
	uint64_t end = (uint64_t)first + count;
	uint64_t nb = ((uint64_t)tensor_len + block_size - 1) / (block_size ? block_size : 1);

	if (block_size == 0)
		return;
	if (end > nb)
		end = nb;
	for (uint64_t w = first / 64; w * 64 < end; w++) {
		uint64_t word = 0;

		for (uint64_t b = w * 64; b < (w + 1) * 64 && b < end; b++) {
			size_t len = block_len(tensor_len, block_size, b);

			if (!ina_block_is_zero(x + b * block_size, len))
				word |= 1ull << (b % 64);
		}
		bits[w] = word;
	}
}

void
ina_block_zero_range(float *x, uint32_t tensor_len, uint16_t block_size, uint16_t lanes,
		     uint32_t from, uint32_t to)
{
	uint64_t b;
	size_t len;

	if (block_size == 0 || lanes == 0)
		return;
	for (b = from; b < to && (len = block_len(tensor_len, block_size, b)) != 0; b += lanes)
		memset(x + b * block_size, 0, len * sizeof(*x));
}
