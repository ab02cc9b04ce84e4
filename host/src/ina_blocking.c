/* SPDX-License-Identifier: MIT */
/*
 * The blocking calls (ina.h): ina_allreduce, ina_broadcast and ina_barrier
 * over the asynchronous ones; under ssp, ina_allreduce starts this call's
 * round and returns the sum of the call S back, and ina_ssp_next returns
 * the sums still out.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "ina_int.h"
#include "ssp_tensor.h"

/* ssp: the tensor's state for ina_allreduce(), made at its first call. */
static struct ssp_tensor *
ssp_tensor_locked(struct ina_ctx *ctx, uint32_t tensor_id, size_t n, int *ret)
{
	struct ssp_tensor *t;

	pthread_mutex_lock(&ctx->lock);
	t = ina_ssp_tensor_for(ctx, tensor_id, n, ret);
	pthread_mutex_unlock(&ctx->lock);
	return t;
}

/* ssp: waits for the tensor's oldest call not returned yet, into 'out'. */
static int
ssp_return(struct ina_ctx *ctx, struct ssp_tensor *t, float *out)
{
	uint64_t call = ssp_tensor_returned(t);
	int ret = ina_wait(ctx, *ssp_tensor_handle(t, call));

	ssp_tensor_return(t);
	if (ret < 0)
		return ret;
	memcpy(out, ssp_tensor_out(t, call), ssp_tensor_n(t) * sizeof(float));
	return 0;
}

/* ina_allreduce() under ssp: this call's round starts, the sum of the call S
 * back comes out (ina.h, "Bounded staleness"). */
static int
ssp_allreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out, size_t n,
	      enum ina_op op)
{
	struct ssp_tensor *t;
	uint64_t call;
	int ret;

	if (n == 0 || n >= INA_BLOCK_OPEN || !in || !out || (op != INA_SUM && op != INA_AVG))
		return -EINVAL;
	t = ssp_tensor_locked(ctx, tensor_id, n, &ret);
	if (!t)
		return ret;
	call = ssp_tensor_calls(t);
	ret = ina_submit_allreduce(ctx, tensor_id, in, ssp_tensor_out(t, call), n, op, 0, 1,
				   ssp_tensor_handle(t, call));
	if (ret < 0)
		return ret;
	ssp_tensor_called(t);
	ina_flush(ctx);
	/* The round copies 'in' when it starts: before this returns, as the
	 * caller may reuse 'in' (or 'out', the same buffer) at once. */
	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		struct op *o = ina_op_of(ctx, *ssp_tensor_handle(t, call));
		uint64_t sleep_ns;
		int busy;

		if (!o || o->state != OP_QUEUED)
			break;
		if (ina_step(ctx, &sleep_ns))
			continue;
		busy = ina_busy(ctx);
		pthread_mutex_unlock(&ctx->lock);
		ina_idle(ctx, busy, sleep_ns);
		pthread_mutex_lock(&ctx->lock);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (call < ctx->ssp) {
		memset(out, 0, n * sizeof(float)); /* nothing is back yet */
		return 0;
	}
	return ssp_return(ctx, t, out);
}

int
ina_ssp_next(struct ina_ctx *ctx, uint32_t tensor_id, float *out)
{
	struct ssp_tensor *t = NULL;
	int ret;

	if (!ctx->ssp || !out)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	t = tensor_table_get(&ctx->ssp_tensors, tensor_id);
	pthread_mutex_unlock(&ctx->lock);
	if (!t || ssp_tensor_returned(t) == ssp_tensor_calls(t))
		return 0;
	ret = ssp_return(ctx, t, out);
	return ret < 0 ? ret : 1;
}

/* A blocking call's own operation 'h', submitted with 'ret': its end. */
static int
wait_own(struct ina_ctx *ctx, int ret, uint64_t h)
{
	if (ret < 0)
		return ret;
	ina_flush(ctx);
	return ina_wait(ctx, h);
}

int
ina_allreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out, size_t n,
	      enum ina_op op)
{
	uint64_t h = 0;
	int ret;

	if (ctx->ssp)
		return ssp_allreduce(ctx, tensor_id, in, out, n, op);
	ret = ina_submit_allreduce(ctx, tensor_id, in, out, n, op, 0, 1, &h);
	return wait_own(ctx, ret, h);
}

int
ina_allreduce_blocks(struct ina_ctx *ctx, uint32_t tensor_id, const struct ina_blocks *in,
		     struct ina_blocks_out *out, enum ina_op op)
{
	uint64_t h = 0;
	int ret = ina_submit_blocks(ctx, tensor_id, in, out, op, 0, 1, &h);

	return wait_own(ctx, ret, h);
}

int
ina_broadcast(struct ina_ctx *ctx, uint32_t tensor_id, float *buf, size_t n, uint16_t root)
{
	uint64_t h = 0;
	int ret = ina_submit_broadcast(ctx, tensor_id, buf, n, root, 0, 1, &h);

	return wait_own(ctx, ret, h);
}

int
ina_barrier(struct ina_ctx *ctx)
{
	uint64_t h;
	int ret = ina_submit_barrier(ctx, 1, &h);

	return ret < 0 ? ret : ina_wait(ctx, h);
}
