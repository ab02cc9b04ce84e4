/* SPDX-License-Identifier: MIT */
/*
 * Sub-blocks (docs/PROTOCOL.md 2.7): a block of n elements cut into
 * sub-blocks of b, and the payload that carries only the present ones (a
 * presence mask, then their values). The host engine packs and unpacks
 * blocks with these; the switch walks a payload's runs of present
 * sub-blocks to add them into a slot. Transport-free and allocation-free.
 */
#ifndef INA_SUBBLOCK_H
#define INA_SUBBLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "ina/encoding.h"
#include "ina/wire.h"

/* How one block is cut. */
struct ina_sub_cut {
	uint32_t b;	     /* elements a sub-block */
	uint32_t n;	     /* elements of the block */
	uint32_t count;	     /* sub-blocks of the block: ceil(n / b) */
	uint32_t mask_bytes; /* bytes of its mask on the wire */
};

/* A presence mask: bit i of w[i / 64] is sub-block i (INA_SUB_MAX bits). */
struct ina_sub_mask {
	uint64_t w[INA_SUB_MAX / 64];
};

/* The cut of a block of 'n' (> 0) elements, B 'block_size' and 'sub_log'
 * (> 0, B a multiple of 2^sub_log: what ina_wire_validate() checked). */
static inline struct ina_sub_cut
ina_sub_cut(uint16_t block_size, uint8_t sub_log, uint32_t n)
{
	struct ina_sub_cut c;

	c.b = ina_wire_sub_elems(block_size, sub_log);
	c.n = n;
	c.count = (n + c.b - 1) / c.b;
	c.mask_bytes = ina_wire_mask_bytes(sub_log);
	return c;
}

/* Reads the mask at the start of a payload (mask_bytes of 'c'). */
void ina_sub_mask_read(struct ina_sub_mask *m, const uint8_t *wire, const struct ina_sub_cut *c);
/* Writes 'm' as the mask at the start of a payload, padding included. */
void ina_sub_mask_write(uint8_t *wire, const struct ina_sub_mask *m, const struct ina_sub_cut *c);

static inline int
ina_sub_mask_test(const struct ina_sub_mask *m, uint32_t i)
{
	return (int)(m->w[i / 64] >> (i % 64) & 1);
}

static inline int
ina_sub_mask_empty(const struct ina_sub_mask *m)
{
	return (m->w[0] | m->w[1]) == 0;
}

/*
 * The next run of consecutive present sub-blocks at or after sub-block
 * '*from' (of c->count): 1 with the run's first sub-block and length in
 * sub-blocks, '*from' moved past it; 0 when there is none. A run's elements
 * are [first * b, min((first + len) * b, n)), contiguous in the block and
 * in the payload.
 */
int ina_sub_next_run(const struct ina_sub_mask *m, const struct ina_sub_cut *c, uint32_t *from,
		     uint32_t *first, uint32_t *len);

/* Elements of the run [first, first + len) of 'c': its start and length. */
static inline void
ina_sub_run_elems(const struct ina_sub_cut *c, uint32_t first, uint32_t len, uint32_t *start,
		  uint32_t *n)
{
	uint32_t end = (first + len) * c->b;

	*start = first * c->b;
	*n = (end < c->n ? end : c->n) - *start;
}

/* Elements the mask names (the short last sub-block counted short). */
uint32_t ina_sub_present_elems(const struct ina_sub_mask *m, const struct ina_sub_cut *c);

/*
 * Host: the sub-blocks of the block 'x' (c->n floats) that hold a value
 * other than +0 and -0, the zero test of ina_block_is_zero(). An all-zero
 * block gives an empty mask.
 */
void ina_sub_mask_nonzero(struct ina_sub_mask *m, const float *x, const struct ina_sub_cut *c);

/*
 * Host: the payload of block 'x' with mask 'm' (not empty): the mask, then
 * the present sub-blocks in the encoding 'enc' (with the block's 'scale'
 * for a scaled one). Returns the payload's bytes.
 */
size_t ina_sub_encode(uint8_t *payload, const float *x, const struct ina_sub_mask *m,
		      const struct ina_sub_cut *c, const struct ina_encoding_ops *enc, int scale);

/*
 * Host: decodes a payload that passed ina_wire_validate() into 'dst'
 * (c->n floats): the present sub-blocks' values; the absent ones are zeroed
 * when 'zero_absent', else left as they are. Returns the mask read.
 */
struct ina_sub_mask ina_sub_decode(float *dst, const uint8_t *payload, const struct ina_sub_cut *c,
				   const struct ina_encoding_ops *enc, int scale, int zero_absent);

#endif
