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
#include <string.h>

#include "ina/subblock.h"
#include "pipeline_int.h"

/* Present sub-blocks of 'm' below sub-block 'i' (at most INA_SUB_MAX). */
static inline uint32_t
present_below(const struct ina_sub_mask *m, uint32_t i)
{
	_Static_assert(INA_SUB_MAX == 128, "two words of mask");
	if (i >= 64) {
		uint32_t n = (uint32_t)__builtin_popcountll(m->w[0]);

		i -= 64;
		return i ? n + (uint32_t)__builtin_popcountll(m->w[1] & ((1ull << i) - 1)) : n;
	}
	return i ? (uint32_t)__builtin_popcountll(m->w[0] & ((1ull << i) - 1)) : 0;
}

/* A run of consecutive sub-blocks of 'sel': its elements in the block
 * [start, start + n), and where they start among the values of a payload
 * whose mask is 'pm' (a superset of 'sel'), in elements. */
struct seg {
	uint32_t start, n, off;
};

static inline int
next_seg(const struct ina_sub_mask *sel, const struct ina_sub_mask *pm, const struct ina_sub_cut *c,
	 uint32_t *from, struct seg *sg)
{
	uint32_t first, len;

	if (!ina_sub_next_run(sel, c, from, &first, &len))
		return 0;
	ina_sub_run_elems(c, first, len, &sg->start, &sg->n);
	sg->off = present_below(pm, first) * c->b;
	return 1;
}

static inline struct ina_sub_mask
mask_and(const struct ina_sub_mask *a, const struct ina_sub_mask *b, int not_b)
{
	struct ina_sub_mask m;

	for (int i = 0; i < 2; i++)
		m.w[i] = a->w[i] & (not_b ? ~b->w[i] : b->w[i]);
	return m;
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
	uint8_t *vals = payload + c.mask_bytes;
	struct ina_sub_mask pm, sel;
	uint32_t from = 0;
	struct seg sg;
	size_t sat = 0;
	int in_place;

	ina_sub_mask_read(&pm, payload, &c);
	in_place = last && ((hf->mask.w[0] & ~pm.w[0]) | (hf->mask.w[1] & ~pm.w[1])) == 0;
	sel = mask_and(&pm, &hf->mask, 1);
	while (next_seg(&sel, &pm, &c, &from, &sg))
		enc->load(hf->acc.f32 + sg.start, vals + sg.off * enc->elem_size, sg.n);
	sel = mask_and(&pm, &hf->mask, 0);
	from = 0;
	while (next_seg(&sel, &pm, &c, &from, &sg)) {
		if (in_place)
			sat += enc->add_store(hf->acc.f32 + sg.start,
					      vals + sg.off * enc->elem_size, sg.n);
		else
			sat += enc->add(hf->acc.f32 + sg.start, vals + sg.off * enc->elem_size,
					sg.n);
	}
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

void
pl_half_load(const struct job *j, struct half *hf, const struct ina_hdr *h, const uint8_t *payload)
{
	struct ina_sub_cut c;
	uint32_t from = 0;
	struct seg sg;

	if (!h->n_elems)
		return;
	if (!h->sub_log) {
		j->enc->load(hf->acc.f32, payload, h->n_elems);
		return;
	}
	c = ina_sub_cut(h->block_size, h->sub_log, h->n_elems);
	ina_sub_mask_read(&hf->mask, payload, &c);
	while (next_seg(&hf->mask, &hf->mask, &c, &from, &sg))
		j->enc->load(hf->acc.f32 + sg.start,
			     payload + c.mask_bytes + sg.off * j->enc->elem_size, sg.n);
}

uint32_t
pl_sub_store(const struct job *j, const struct half *hf, uint8_t *payload)
{
	struct ina_sub_cut c = half_cut(hf);
	const struct ina_encoding_ops *enc = j->enc;
	uint8_t *vals = payload + c.mask_bytes;
	uint32_t from = 0, n = 0;
	struct seg sg;

	ina_sub_mask_write(payload, &hf->mask, &c);
	while (next_seg(&hf->mask, &hf->mask, &c, &from, &sg)) {
		enc->store(vals + sg.off * enc->elem_size, hf->acc.f32 + sg.start, sg.n);
		n += sg.n;
	}
	return c.mask_bytes + n * (uint32_t)enc->elem_size;
}

uint32_t
pl_sub_bytes(const struct job *j, const struct half *hf)
{
	struct ina_sub_cut c = half_cut(hf);

	return c.mask_bytes + ina_sub_present_elems(&hf->mask, &c) * (uint32_t)j->enc->elem_size;
}

int
pl_sub_deferred(const struct job *j, const struct half *hf)
{
	struct ina_sub_cut c = half_cut(hf);
	uint32_t from = 0;
	struct seg sg;

	if (ina_sub_mask_empty(&hf->mask))
		return 0;
	while (next_seg(&hf->mask, &hf->mask, &c, &from, &sg))
		if (!j->enc->deferred(hf->acc.f32 + sg.start, sg.n, hf->bound))
			return 0;
	return 1;
}
