/* SPDX-License-Identifier: MIT */
/*
 * ssp rounds under the API (ina_int.h; ina.h, "Bounded staleness"): a
 * tensor's ssp state, made at its first call, and an allreduce started as
 * the engine's next round from a copy of its input plus the residual, and
 * ended when the engine no longer has its round in flight. The blocking
 * ina_allreduce() under ssp is in ina_blocking.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ina_int.h"
#include "ssp_tensor.h"

/* The tensor's ssp state: found, or made at its first call. NULL with
 * -errno in 'ret' and a sentence in errmsg. */
struct ssp_tensor *
ina_ssp_tensor_for(struct ina_ctx *ctx, uint32_t tensor_id, size_t n, int *ret)
{
	struct ssp_tensor *t;

	*ret = 0;
	t = tensor_table_get(&ctx->ssp_tensors, tensor_id);
	if (t) {
		if (ssp_tensor_n(t) != n) {
			snprintf(ctx->errmsg, sizeof(ctx->errmsg),
				 "tensor %u: %zu elements, but its first call had %zu", tensor_id,
				 n, ssp_tensor_n(t));
			*ret = -EINVAL;
			return NULL;
		}
		return t;
	}
	if ((uint64_t)n > (uint64_t)ctx->lanes * ctx->block_size) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: under ssp a tensor holds at most lanes x block_size = %u "
			 "elements",
			 tensor_id, (unsigned)ctx->lanes * ctx->block_size);
		*ret = -EINVAL;
		return NULL;
	}
	t = ssp_tensor_create(tensor_id, n, ctx->block_size, ctx->ssp);
	if (!t || tensor_table_put(&ctx->ssp_tensors, tensor_id, t) < 0) {
		ssp_tensor_destroy(t);
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: out of memory for its ssp state", tensor_id);
		*ret = -ENOMEM;
		return NULL;
	}
	return t;
}

/* ssp: starts allreduce 'o' as the engine's next round, from a copy of its
 * input plus the tensor's residual. 0, or its error (it then ended). */
int
ina_ssp_op_start(struct ina_ctx *ctx, struct op *o)
{
	struct ssp_tensor *t = ina_ssp_tensor_for(ctx, o->tensor_id, o->n, &o->ret);
	const float *send;
	uint8_t *missed;
	int slot, ret;

	if (!t) {
		ret = o->ret;
		goto fail;
	}
	slot = ssp_tensor_begin(t, o->in, &send, &missed);
	if (slot < 0) {
		ret = slot;
		goto fail;
	}
	engine_set_missed(ENG0(ctx), missed);
	o->eng_round = engine_round(ENG0(ctx));
	egroup_set_cut(ctx->eg, ctx->sub_log);
	ret = egroup_allreduce(ctx->eg, o->tensor_id, send, o->out, o->n, ctx->block_size,
			       o->op == INA_AVG ? ENGINE_AVG : ENGINE_SUM, ina_now_ns());
	ret = ina_err_of_engine(ret);
	if (ret < 0) {
		/* Nothing was sent: all of it goes back. */
		memset(missed, 1, (o->n + ctx->block_size - 1) / ctx->block_size);
		ssp_tensor_end(t, slot);
		goto fail;
	}
	o->st = t;
	o->ssp_slot = slot;
	o->state = OP_RUNNING;
	ctx->last_block_size = ctx->block_size;
	ctx->last_sub_log = ctx->sub_log;
	ctx->last_part_tag = 0;
	return 0;
fail:
	ina_op_end(ctx, o, ret);
	return ret;
}

/* ssp: the running operations whose round the engine ended, ended well. */
void
ina_ssp_reap(struct ina_ctx *ctx)
{
	for (uint32_t i = 0; i < ctx->max_pending; i++) {
		struct op *o = &ctx->ops[i];
		if (o->state != OP_RUNNING || !o->st || engine_in_flight(ENG0(ctx), o->eng_round))
			continue;
		ina_op_end(ctx, o, 0);
	}
}
