/* SPDX-License-Identifier: MIT */
/*
 * The block-sparse allreduce (ina.h, ina_allreduce_blocks): checking the
 * caller's lists, handing them to the engines (egroup_set_blocks: each lane
 * walks a chain of its own listed blocks, so nothing scans or writes the
 * dense tensor), and, when the round ended, putting the union's list in
 * ascending order (the engines append it as results come, lane by lane).
 * The calls themselves are in ina_async.c and ina_blocking.c.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ina_int.h"
#include "ina/wire.h"

/* The arguments ina_allreduce_blocks() refuses (-EINVAL), else 0. */
static int
blocks_check(const struct ina_ctx *ctx, const struct ina_blocks *in,
	     const struct ina_blocks_out *out)
{
	uint32_t nb;

	if (!in || !out || in->n == 0 || in->n >= INA_BLOCK_OPEN || in->block_size == 0 ||
	    in->block_size > ctx->block_size || in->count > UINT32_MAX)
		return -EINVAL;
	if (in->count && (!in->index || !in->values))
		return -EINVAL;
	if (out->capacity > UINT32_MAX || (out->capacity && !out->index) ||
	    (out->values && !out->index))
		return -EINVAL;
	nb = ina_wire_nb_blocks((uint32_t)in->n, (uint16_t)in->block_size);
	for (size_t i = 0; i < in->count; i++)
		if (in->index[i] >= nb || (i && in->index[i] <= in->index[i - 1]))
			return -EINVAL;
	return 0;
}

/* Hands 'o''s lists to the engines for the round about to start: 0 or
 * -ENOMEM. */
int
ina_blocks_start(struct ina_ctx *ctx, struct op *o)
{
	const struct ina_blocks *in = &o->bin;
	struct engine_blocks b = { 0 };

	if (in->count > ctx->blk_chain_cap) {
		uint32_t *c = realloc(ctx->blk_chain, in->count * sizeof(*c));

		if (!c)
			return -ENOMEM;
		ctx->blk_chain = c;
		ctx->blk_chain_cap = in->count;
	}
	o->bcount = 0;
	b.index = in->index;
	b.values = in->values;
	b.count = (uint32_t)in->count;
	b.chain = ctx->blk_chain;
	b.dense = o->bout->dense;
	b.out_index = o->bout->index;
	b.out_values = o->bout->values;
	b.capacity = (uint32_t)o->bout->capacity;
	b.out_count = &o->bcount;
	egroup_set_blocks(ctx->eg, &b);
	return 0;
}

static int
key_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The list's entries 0..m-1 in ascending block order. Each lane's results
 * came in order, so the list is often sorted already; otherwise the
 * permutation is found by sorting (block, entry) keys and applied in place,
 * cycle by cycle, each block's values moving once.
 */
static int
sort_union(struct ina_blocks_out *out, uint32_t m, uint32_t bs)
{
	uint64_t *key;
	float *tmp = NULL;
	uint32_t i;

	for (i = 1; i < m && out->index[i - 1] < out->index[i]; i++)
		;
	if (i >= m)
		return 0;
	key = malloc((size_t)m * sizeof(*key));
	if (out->values)
		tmp = malloc((size_t)bs * sizeof(*tmp));
	if (!key || (out->values && !tmp)) {
		free(key);
		free(tmp);
		return -ENOMEM;
	}
	for (i = 0; i < m; i++)
		key[i] = (uint64_t)out->index[i] << 32 | i;
	qsort(key, m, sizeof(*key), key_cmp);
	/* key[d] names the entry that belongs at d; follow each cycle. */
	for (uint32_t d = 0; d < m; d++) {
		uint32_t src = (uint32_t)key[d], at = d;
		uint32_t idx;

		if (src == d || key[d] == UINT64_MAX)
			continue;
		idx = out->index[d];
		if (tmp)
			memcpy(tmp, out->values + (size_t)d * bs, bs * sizeof(float));
		while (src != d) {
			out->index[at] = out->index[src];
			if (tmp)
				memcpy(out->values + (size_t)at * bs,
				       out->values + (size_t)src * bs, bs * sizeof(float));
			key[at] = UINT64_MAX;
			at = src;
			src = (uint32_t)key[at];
		}
		out->index[at] = idx;
		if (tmp)
			memcpy(out->values + (size_t)at * bs, tmp, bs * sizeof(float));
		key[at] = UINT64_MAX;
	}
	free(key);
	free(tmp);
	return 0;
}

/* The round of 'o' ended well: its union in order, its count, and the sum
 * of squares of the union's values into '*ss' (-1 without a list: the
 * union is not known then). 0, or -ENOSPC when the union
 * did not fit out->capacity (what fit is in order), or -ENOMEM. */
int
ina_blocks_finish(struct op *o, double *ss)
{
	struct ina_blocks_out *out = o->bout;
	uint32_t bs = o->bin.block_size;
	uint32_t m = o->bcount < out->capacity ? o->bcount : (uint32_t)out->capacity;
	int ret = 0;

	out->count = o->bcount;
	if (out->index && m > 1)
		ret = sort_union(out, m, bs);
	*ss = out->index ? 0 : -1;
	for (uint32_t i = 0; out->index && i < m; i++) {
		uint32_t b = out->index[i];
		size_t len = ina_wire_block_elems((uint32_t)o->bin.n, (uint16_t)bs, b);
		const float *v = out->values  ? out->values + (size_t)i * bs
				 : out->dense ? out->dense + (size_t)b * bs
					      : NULL;

		for (size_t j = 0; v && j < len; j++)
			*ss += (double)v[j] * v[j];
	}
	if (ret == 0 && o->bcount > out->capacity && out->index)
		ret = -ENOSPC;
	return ret;
}

/* For ina_async.c's submission: the checks of blocks_check(), and those of
 * the context (no ssp, no dynamic partition map). */
int
ina_blocks_usable(const struct ina_ctx *ctx, const struct ina_blocks *in,
		  const struct ina_blocks_out *out)
{
	if (ctx->ssp || ctx->part.mode == PARTITION_DYNAMIC)
		return -EINVAL;
	return blocks_check(ctx, in, out);
}
