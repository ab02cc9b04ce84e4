/* SPDX-License-Identifier: MIT */
/*
 * Sub-blocks in a slot (docs/PROTOCOL.md 2.7, pipeline_int.h): a half keeps
 * the union of the presence masks it added, and only the union's sub-blocks
 * of its accumulator hold values. A packet's present sub-blocks are loaded
 * where the union did not have them yet and added where it did; results,
 * the result filter and the uplink's partial sum read the union's
 * sub-blocks only, so whatever an absent sub-block's accumulator holds from
 * an earlier block never leaks out. Every walk here is bounded by the
 * packet's (or result's) elements and the mask's 128 bits.
 */
#include <endian.h>
#include <string.h>

#include "ina/subblock.h"
#include "pipeline_int.h"

/* The first sub-block in [i, end) whose bit in 'm' is 'val', or 'end'. */
static inline uint32_t
next_bit(const struct ina_sub_mask *m, uint32_t i, uint32_t end, int val)
{
	_Static_assert(INA_SUB_MAX == 128, "two words of mask");
	while (i < end) {
		uint64_t w = (val ? m->w[i / 64] : ~m->w[i / 64]) >> (i % 64);

		if (w) {
			uint32_t k = i + (uint32_t)__builtin_ctzll(w);

			return k < end ? k : end;
		}
		i = (i / 64 + 1) * 64;
	}
	return end;
}

/* The elements of sub-blocks [i, k) of 'c': their start in the block, and
 * how many (the short last sub-block counted short). */
static inline uint32_t
sub_elems(const struct ina_sub_cut *c, uint32_t i, uint32_t k, uint32_t *start)
{
	uint32_t end = k * c->b;

	*start = i * c->b;
	return (end < c->n ? end : c->n) - *start;
}

/* A payload's mask, in the wire's bit order (sub-block i is bit i % 8 of
 * byte i / 8: the bytes little-endian in two words). */
static inline void
mask_read(struct ina_sub_mask *m, const uint8_t *wire, uint32_t mask_bytes)
{
	uint64_t w[2] = { 0, 0 };

	memcpy(w, wire, mask_bytes);
	m->w[0] = le64toh(w[0]);
	m->w[1] = le64toh(w[1]);
}

/* The cut of the block a half holds. */
static inline struct ina_sub_cut
half_cut(const struct half *hf)
{
	return ina_sub_cut(hf->key.block_size, hf->key.sub_log,
			   ina_wire_block_elems(hf->key.tensor_len, hf->key.block_size,
						hf->key.block));
}

/*
 * The packet's sub-blocks into 'hf': loaded where the union lacks them, added
 * where it has them. With 'last' and a mask that holds the whole union, the
 * added sums are also stored over the packet's values (the payload becomes
 * the RESULT's, mask included: the loaded values already are their sums);
 * returns 1 then.
 */
static int
sub_add(struct pipeline *p, const struct job *j, struct half *hf, const struct ina_hdr *h,
	uint8_t *payload, int last)
{
	struct ina_sub_cut c = ina_sub_cut(h->block_size, h->sub_log, h->n_elems);
	const struct ina_encoding_ops *enc = j->enc;
	const struct ina_sub_mask u = hf->mask; /* the union before this packet */
	uint8_t *vals = payload + c.mask_bytes;
	struct ina_sub_mask pm;
	uint32_t i = 0, off = 0; /* 'off': elements of the payload before run i */
	size_t sat = 0;
	int in_place;

	mask_read(&pm, payload, c.mask_bytes);
	in_place = last && ((u.w[0] & ~pm.w[0]) | (u.w[1] & ~pm.w[1])) == 0;
	/* Each run of the packet's sub-blocks, cut where the union's bit
	 * changes: a part the union has is added, one it lacks is loaded. */
	while ((i = next_bit(&pm, i, c.count, 1)) < c.count) {
		uint32_t end = next_bit(&pm, i, c.count, 0), first = i;

		while (i < end) {
			int have = ina_sub_mask_test(&u, i);
			uint32_t k = next_bit(&u, i, end, !have), start, n;
			uint8_t *src;

			n = sub_elems(&c, i, k, &start);
			src = vals + (size_t)(off + (i - first) * c.b) * enc->elem_size;
			if (!have)
				enc->load(hf->acc.f32 + start, src, n);
			else if (in_place)
				sat += enc->add_store(hf->acc.f32 + start, src, n);
			else
				sat += enc->add(hf->acc.f32 + start, src, n);
			i = k;
		}
		off += sub_elems(&c, first, end, &first);
	}
	if (sat)
		pl_half_saturated(p, hf, sat);
	hf->mask.w[0] |= pm.w[0];
	hf->mask.w[1] |= pm.w[1];
	return in_place;
}

void
pl_sub_add(struct pipeline *p, const struct job *j, struct half *hf, const struct ina_hdr *h,
	   const uint8_t *payload)
{
	/* (read only: 'last' is 0) */
	sub_add(p, j, hf, h, (uint8_t *)(uintptr_t)payload, 0);
}

int
pl_sub_add_last(struct pipeline *p, const struct job *j, struct half *hf, const struct ina_hdr *h,
		uint8_t *payload)
{
	return sub_add(p, j, hf, h, payload, 1);
}

/* The runs of a mask's sub-blocks, in order: each run's start and elements
 * in the block, and its place among a payload's values (in elements). */
struct runs {
	const struct ina_sub_mask *m;
	const struct ina_sub_cut *c;
	uint32_t i, off;
};

static inline int
runs_next(struct runs *r, uint32_t *start, uint32_t *n, uint32_t *off)
{
	uint32_t end;

	r->i = next_bit(r->m, r->i, r->c->count, 1);
	if (r->i >= r->c->count)
		return 0;
	end = next_bit(r->m, r->i, r->c->count, 0);
	*n = sub_elems(r->c, r->i, end, start);
	*off = r->off;
	r->off += *n;
	r->i = end;
	return 1;
}

void
pl_half_load(const struct job *j, struct half *hf, const struct ina_hdr *h, const uint8_t *payload)
{
	const struct ina_encoding_ops *enc = j->enc;
	struct ina_sub_cut c;
	struct runs r = { &hf->mask, &c, 0, 0 };
	uint32_t start, n, off;

	if (!h->n_elems)
		return;
	if (!h->sub_log) {
		enc->load(hf->acc.f32, payload, h->n_elems);
		return;
	}
	c = ina_sub_cut(h->block_size, h->sub_log, h->n_elems);
	mask_read(&hf->mask, payload, c.mask_bytes);
	while (runs_next(&r, &start, &n, &off))
		enc->load(hf->acc.f32 + start,
			  payload + c.mask_bytes + (size_t)off * enc->elem_size, n);
}

uint32_t
pl_sub_store(const struct job *j, const struct half *hf, uint8_t *payload)
{
	struct ina_sub_cut c = half_cut(hf);
	const struct ina_encoding_ops *enc = j->enc;
	uint8_t *vals = payload + c.mask_bytes;
	struct runs r = { &hf->mask, &c, 0, 0 };
	uint32_t start, n, off, total = 0;

	ina_sub_mask_write(payload, &hf->mask, &c);
	while (runs_next(&r, &start, &n, &off)) {
		enc->store(vals + (size_t)off * enc->elem_size, hf->acc.f32 + start, n);
		total += n;
	}
	return c.mask_bytes + total * (uint32_t)enc->elem_size;
}

uint32_t
pl_sub_bytes(const struct job *j, const struct half *hf)
{
	struct ina_sub_cut c = half_cut(hf);
	struct runs r = { &hf->mask, &c, 0, 0 };
	uint32_t start, n, off, total = 0;

	while (runs_next(&r, &start, &n, &off))
		total += n;
	return c.mask_bytes + total * (uint32_t)j->enc->elem_size;
}

int
pl_sub_deferred(const struct job *j, const struct half *hf)
{
	struct ina_sub_cut c = half_cut(hf);
	struct runs r = { &hf->mask, &c, 0, 0 };
	uint32_t start, n, off;

	if (ina_sub_mask_empty(&hf->mask))
		return 0;
	while (runs_next(&r, &start, &n, &off))
		if (!j->enc->deferred(hf->acc.f32 + start, n, hf->bound))
			return 0;
	return 1;
}
