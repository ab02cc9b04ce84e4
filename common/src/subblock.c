/* SPDX-License-Identifier: MIT */
/*
 * Sub-blocks (subblock.h): masks read and written in the wire's bit order
 * (sub-block i is bit i % 8 of byte i / 8), runs of present sub-blocks, and
 * the host's pack and unpack of a block through the encoding table.
 */
#include <string.h>

#include "ina/block.h"
#include "ina/subblock.h"

void
ina_sub_mask_read(struct ina_sub_mask *m, const uint8_t *wire, const struct ina_sub_cut *c)
{
	memset(m, 0, sizeof(*m));
	for (uint32_t i = 0; i < c->mask_bytes; i++)
		m->w[i / 8] |= (uint64_t)wire[i] << (8 * (i % 8));
}

void
ina_sub_mask_write(uint8_t *wire, const struct ina_sub_mask *m, const struct ina_sub_cut *c)
{
	for (uint32_t i = 0; i < c->mask_bytes; i++)
		wire[i] = (uint8_t)(m->w[i / 8] >> (8 * (i % 8)));
}

/* The first present sub-block at or after 'i', or 'count' when none. */
static uint32_t
next_set(const struct ina_sub_mask *m, uint32_t i, uint32_t count)
{
	while (i < count) {
		uint64_t w = m->w[i / 64] >> (i % 64);

		if (w)
			return i + (uint32_t)__builtin_ctzll(w);
		i = (i / 64 + 1) * 64;
	}
	return count;
}

/* The first absent sub-block at or after 'i', or 'count' when none. */
static uint32_t
next_clear(const struct ina_sub_mask *m, uint32_t i, uint32_t count)
{
	while (i < count) {
		uint64_t w = ~m->w[i / 64] >> (i % 64);

		if (w)
			return i + (uint32_t)__builtin_ctzll(w);
		i = (i / 64 + 1) * 64;
	}
	return count;
}

int
ina_sub_next_run(const struct ina_sub_mask *m, const struct ina_sub_cut *c, uint32_t *from,
		 uint32_t *first, uint32_t *len)
{
	uint32_t a = next_set(m, *from, c->count), z;

	if (a >= c->count)
		return 0;
	z = next_clear(m, a, c->count);
	if (z > c->count)
		z = c->count;
	*first = a;
	*len = z - a;
	*from = z;
	return 1;
}

uint32_t
ina_sub_present_elems(const struct ina_sub_mask *m, const struct ina_sub_cut *c)
{
	uint32_t from = 0, first, len, total = 0;

	while (ina_sub_next_run(m, c, &from, &first, &len)) {
		uint32_t start, n;

		ina_sub_run_elems(c, first, len, &start, &n);
		total += n;
	}
	return total;
}

void
ina_sub_mask_nonzero(struct ina_sub_mask *m, const float *x, const struct ina_sub_cut *c)
{
	memset(m, 0, sizeof(*m));
	for (uint32_t i = 0; i < c->count; i++) {
		uint32_t start, n;

		ina_sub_run_elems(c, i, 1, &start, &n);
		/* stops at the first chunk with a value: a dense sub-block
		 * costs one chunk, not a pass */
		if (!ina_block_is_zero(x + start, n))
			m->w[i / 64] |= 1ull << (i % 64);
	}
}

size_t
ina_sub_encode(uint8_t *payload, const float *x, const struct ina_sub_mask *m,
	       const struct ina_sub_cut *c, const struct ina_encoding_ops *enc, int scale)
{
	uint8_t *p = payload + c->mask_bytes;
	uint32_t from = 0, first, len;

	ina_sub_mask_write(payload, m, c);
	while (ina_sub_next_run(m, c, &from, &first, &len)) {
		uint32_t start, n;

		ina_sub_run_elems(c, first, len, &start, &n);
		enc->encode(p, x + start, n, scale);
		p += (size_t)n * enc->elem_size;
	}
	return (size_t)(p - payload);
}

struct ina_sub_mask
ina_sub_decode(float *dst, const uint8_t *payload, const struct ina_sub_cut *c,
	       const struct ina_encoding_ops *enc, int scale, int zero_absent)
{
	const uint8_t *p = payload + c->mask_bytes;
	struct ina_sub_mask m;
	uint32_t from = 0, first, len, done = 0;

	ina_sub_mask_read(&m, payload, c);
	while (ina_sub_next_run(&m, c, &from, &first, &len)) {
		uint32_t start, n;

		ina_sub_run_elems(c, first, len, &start, &n);
		if (zero_absent && start > done)
			memset(dst + done, 0, (start - done) * sizeof(*dst));
		enc->decode(dst + start, p, n, scale);
		p += (size_t)n * enc->elem_size;
		done = start + n;
	}
	if (zero_absent && c->n > done)
		memset(dst + done, 0, (c->n - done) * sizeof(*dst));
	return m;
}
