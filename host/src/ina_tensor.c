/* SPDX-License-Identifier: MIT */
/*
 * The API's tensors (ina_int.h): the sparsifier options of one tensor
 * (ina_tensor_sparsify), its residual and deferred blocks, and the round
 * state of a tensor the sparsifier or the block planner runs on, made at
 * its first allreduce.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina_int.h"
#include "sparsify_opts.h"

struct sparse_tensor *
ina_find_tensor(const struct ina_ctx *ctx, uint32_t tensor_id)
{
	return tensor_table_get(&ctx->tensors, tensor_id);
}

static struct sparse_tensor *
add_tensor(struct ina_ctx *ctx, uint32_t tensor_id, const struct ina_sparsify *opt)
{
	struct sparse_tensor *t = calloc(1, sizeof(*t));

	if (!t || tensor_table_put(&ctx->tensors, tensor_id, t) < 0) {
		free(t);
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: out of memory for its round state (%u tensors so far)",
			 tensor_id, ctx->tensors.count);
		return NULL;
	}
	t->id = tensor_id;
	t->opt = *opt;
	return t;
}

static int
tensor_sparsify(struct ina_ctx *ctx, uint32_t tensor_id, const struct ina_sparsify *opt)
{
	struct sparsify_config sc;
	struct sparse_tensor *t = ina_find_tensor(ctx, tensor_id);

	if (ctx->ssp && opt->mode != INA_SPARSIFY_OFF) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: no sparsifier under ssp (a dense residual keeps what is late)",
			 tensor_id);
		return -EINVAL;
	}
	if (ina_sparsify_config(opt, ctx->block_size, ctx->block_size, &sc) < 0) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg), "tensor %u: bad sparsifier options",
			 tensor_id);
		return -EINVAL;
	}
	if (t && t->used) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: its sparsifier cannot change after its first allreduce",
			 tensor_id);
		return -EBUSY;
	}
	if (t) {
		t->opt = *opt;
		return 0;
	}
	return add_tensor(ctx, tensor_id, opt) ? 0 : -ENOMEM;
}

int
ina_tensor_sparsify(struct ina_ctx *ctx, uint32_t tensor_id, const struct ina_sparsify *opt)
{
	int ret;

	pthread_mutex_lock(&ctx->lock);
	ret = tensor_sparsify(ctx, tensor_id, opt);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

const float *
ina_residual(const struct ina_ctx *ctx, uint32_t tensor_id, size_t *n)
{
	const struct sparse_tensor *t = ina_find_tensor(ctx, tensor_id);
	const float *r = t && t->tr ? tround_residual(t->tr) : NULL;
	const struct ssp_tensor *st = r ? NULL : tensor_table_get(&ctx->ssp_tensors, tensor_id);

	if (st) {
		if (n)
			*n = ssp_tensor_n(st);
		return ssp_tensor_residual(st);
	}
	if (r && n)
		*n = tround_n(t->tr);
	return r;
}

const uint8_t *
ina_deferred_blocks(const struct ina_ctx *ctx, uint32_t tensor_id, size_t *n_blocks)
{
	const struct sparse_tensor *t = ina_find_tensor(ctx, tensor_id);
	uint32_t nb = 0;
	const uint8_t *d = t && t->tr ? tround_deferred(t->tr, &nb) : NULL;

	if (d && n_blocks)
		*n_blocks = nb;
	return d;
}

/* The tensor's round state: found, or made on its first call (with the
 * job's options unless it has its own). NULL with -errno in 'ret' and a
 * sentence in errmsg; also NULL with 0 when the tensor is plain dense. */
struct sparse_tensor *
ina_tensor_for(struct ina_ctx *ctx, uint32_t tensor_id, size_t n, int *ret)
{
	struct sparse_tensor *t = ina_find_tensor(ctx, tensor_id);
	struct tround_config tc;

	*ret = 0;
	int rounds = ctx->plan_blocks || ctx->part.mode == PARTITION_DYNAMIC;

	if (!t && (ctx->job_sparsify.mode != INA_SPARSIFY_OFF || rounds)) {
		t = add_tensor(ctx, tensor_id, &ctx->job_sparsify);
		if (!t) {
			*ret = -ENOMEM;
			return NULL;
		}
	}
	if (!t || (t->opt.mode == INA_SPARSIFY_OFF && !rounds))
		return NULL;
	if (t->tr) {
		if (tround_n(t->tr) == n)
			return t;
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: %zu elements, but its sparsifier was made for %zu", tensor_id,
			 n, tround_n(t->tr));
		*ret = -EINVAL;
		return NULL;
	}
	memset(&tc, 0, sizeof(tc));
	tc.tensor_id = tensor_id;
	tc.n = n;
	tc.sp = t->opt;
	tc.plan = ctx->plan_blocks;
	tc.packet_ns = ctx->plan_packet_ns;
	tc.byte_ns = ctx->plan_byte_ns;
	tc.cut_packet_ns = ctx->plan_cut_packet_ns;
	tc.cut_sub_ns = ctx->plan_cut_sub_ns;
	tc.plan_period = ctx->plan_period;
	tc.max_block = ctx->block_size;
	tc.sub_block = ctx->sub_block;
	tc.encoding = ctx->encoding;
	tc.world = ctx->world;
	tc.lanes = ctx->lanes;
	tc.part = ctx->part;
	t->tr = tround_create(&tc, ctx->errmsg, sizeof(ctx->errmsg));
	if (!t->tr) {
		*ret = -EINVAL;
		return NULL;
	}
	return t;
}

/* What the round of 't' did, into the context's sparsifier stats. */
void
ina_account(struct ina_ctx *ctx, const struct sparse_tensor *t)
{
	const struct tround_stats *ts = tround_stats(t->tr);

	if (t->opt.mode == INA_SPARSIFY_OFF)
		return;
	ctx->sp.rounds++;
	ctx->sp.blocks += ts->blocks;
	ctx->sp.blocks_sent += ts->blocks_sent;
	ctx->sp.blocks_deferred += ts->blocks_deferred;
	ctx->sp.density = ts->blocks ? (double)ts->blocks_sent / ts->blocks : 0;
	ctx->sp.residual_norm = sqrt(ts->residual_mass);
}
