/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous operations (ina.h): submitting them (ina_iallreduce,
 * ina_ibroadcast, ina_ibarrier), and the progress step every call runs:
 * start the operation the scheduler (order.h) picks when the engine is free
 * (several dense ones fused, or ssp rounds as the bound lets them), pump
 * the port, finish what the engine ended. ina_test, ina_wait, ina_progress
 * and ina_poll drive it; ina_flush releases what the scheduler holds.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ina_int.h"

/* Starts 'o' on the engine: 0, or its error (it then ended). */
static int
op_start(struct ina_ctx *ctx, struct op *o)
{
	struct tround_step step = { .send = o->in,
				    .block_size = ctx->block_size,
				    .sub_log = ctx->sub_log };
	enum engine_op eop = ENGINE_SUM;
	int ret;

	if (o->kind == OP_ALLREDUCE) {
		struct sparse_tensor *t = ina_tensor_for(ctx, o->tensor_id, o->n, &ret);

		if (ret < 0)
			goto fail;
		if (t) {
			t->used = 1;
			if (tround_begin(t->tr, o->in, &step) < 0) {
				snprintf(ctx->errmsg, sizeof(ctx->errmsg),
					 "tensor %u: the sparsifier refused this round",
					 o->tensor_id);
				ret = -EINVAL;
				goto fail;
			}
			o->t = t;
			egroup_set_result_filter(ctx->eg, step.bound, step.deferred);
		}
		eop = o->op == INA_AVG ? ENGINE_AVG : ENGINE_SUM;
	} else if (o->kind == OP_BLOCKS) {
		ret = ina_blocks_start(ctx, o);
		if (ret < 0)
			goto fail;
		step.send = NULL;
		step.block_size = (uint16_t)o->bin.block_size;
		step.sub_log = tround_sub_log(step.block_size, ctx->sub_block);
		eop = o->op == INA_AVG ? ENGINE_AVG : ENGINE_SUM;
	} else if (o->kind == OP_BROADCAST) {
		/* The others add zeros: blocks of zeros are not even sent. */
		if (ctx->rank != o->root)
			memset(o->out, 0, o->n * sizeof(float));
		step.send = o->out;
	}
	/* A partition map's tag in the tensor id: workers with different maps
	 * never match each other's packets (docs/PROTOCOL.md 6.5). */
	egroup_set_cut(ctx->eg, step.sub_log);
	ret = egroup_allreduce(ctx->eg, o->tensor_id ^ step.tag, step.send,
			       step.out ? step.out : o->out, o->n, step.block_size, eop,
			       ina_now_ns());
	ret = ina_err_of_engine(ret);
	if (ret < 0)
		goto fail;
	ctx->last_block_size = step.block_size;
	ctx->last_sub_log = step.sub_log;
	ctx->last_part_tag = step.tag;
	o->state = OP_RUNNING;
	ctx->run[0] = o;
	ctx->nb_run = 1;
	return 0;
fail:
	ina_op_end(ctx, o, ret);
	return ret;
}

/* Starts the dense allreduces 'seqs' (count > 1, one class) as one round
 * of their elements end to end; 0 or the error (they then ended). */
static int
fused_start(struct ina_ctx *ctx, const uint64_t *seqs, uint32_t count)
{
	struct op *first = &ctx->ops[seqs[0] % ctx->max_pending];
	size_t off = 0;
	int ret;

	for (uint32_t i = 0; i < count; i++) {
		struct op *o = &ctx->ops[seqs[i] % ctx->max_pending];

		memcpy(ctx->fuse_in + off, o->in, o->n * sizeof(float));
		off += o->n;
		ctx->run[i] = o;
	}
	egroup_set_cut(ctx->eg, ctx->sub_log);
	ret = egroup_allreduce(ctx->eg, first->tensor_id, ctx->fuse_in, ctx->fuse_out, off,
			       ctx->block_size, first->op == INA_AVG ? ENGINE_AVG : ENGINE_SUM,
			       ina_now_ns());
	ret = ina_err_of_engine(ret);
	for (uint32_t i = 0; i < count; i++) {
		if (ret < 0)
			ina_op_end(ctx, ctx->run[i], ret);
		else
			ctx->run[i]->state = OP_RUNNING;
	}
	if (ret < 0)
		return ret;
	ctx->last_block_size = ctx->block_size;
	ctx->last_sub_log = ctx->sub_log;
	ctx->last_part_tag = 0;
	ctx->nb_run = count;
	return 0;
}

/* The running operation's engine round ended well. */
static void
op_finish(struct ina_ctx *ctx, struct op *o)
{
	double ss = 0;
	int ret = 0;

	if (o->t) {
		tround_scatter(o->t->tr, o->out);
		tround_end(o->t->tr, o->out);
		ina_account(ctx, o->t);
	}
	if (o->kind == OP_BLOCKS) {
		ret = ina_blocks_finish(o, &ss);
		if (ret == -ENOSPC)
			snprintf(ctx->errmsg, sizeof(ctx->errmsg),
				 "tensor %u: the union has %zu blocks, out->capacity %zu",
				 o->tensor_id, o->bout->count, o->bout->capacity);
	} else if (ctx->magnitude && o->kind != OP_BARRIER) {
		for (size_t i = 0; i < o->n; i++)
			ss += (double)o->out[i] * o->out[i];
	}
	/* The sum's norm, for the magnitude policy: every worker holds the
	 * same bits and sums them in the same order. */
	if (ctx->magnitude && o->kind != OP_BARRIER && ss >= 0)
		order_set_norm(ctx->sched, o->tensor_id, sqrt(ss));
	ina_op_end(ctx, o, ret);
}

/* Starts scheduled operations while the engine is free. */
static void
schedule(struct ina_ctx *ctx)
{
	uint64_t seqs[ORDER_FUSE_MAX];
	uint32_t count;

	if (ctx->ssp) {
		/* Rounds in flight together, as far as the bound lets them. */
		ina_ssp_reap(ctx);
		while (engine_can_start(ENG0(ctx)) &&
		       order_next_group(ctx->sched, seqs, &count) == 0)
			for (uint32_t i = 0; i < count; i++)
				ina_ssp_op_start(ctx, &ctx->ops[seqs[i] % ctx->max_pending]);
		return;
	}
	while (!ctx->nb_run && egroup_phase(ctx->eg) == ENGINE_READY && !egroup_error(ctx->eg) &&
	       order_next_group(ctx->sched, seqs, &count) == 0) {
		if (count == 1)
			op_start(ctx, &ctx->ops[seqs[0] % ctx->max_pending]);
		else
			fused_start(ctx, seqs, count);
	}
}

/* The engine ended the round: every operation it carried ends well. */
static void
round_finish(struct ina_ctx *ctx)
{
	size_t off = 0;

	for (uint32_t i = 0; ctx->nb_run > 1 && i < ctx->nb_run; i++) {
		struct op *o = ctx->run[i];

		memcpy(o->out, ctx->fuse_out + off, o->n * sizeof(float));
		off += o->n;
	}
	for (uint32_t i = 0; i < ctx->nb_run; i++)
		op_finish(ctx, ctx->run[i]);
	ctx->nb_run = 0;
}

/*
 * One progress step: start what the scheduler picks, receive, send, end
 * what the engine ended. Returns whether anything moved, and in
 * '*sleep_ns' how long the caller may sleep in the port (the next timer,
 * at most WAIT_MAX_NS).
 */
int
ina_step(struct ina_ctx *ctx, uint64_t *sleep_ns)
{
	uint64_t now;
	int moved;

	*sleep_ns = WAIT_MAX_NS;
	if (egroup_error(ctx->eg)) {
		ina_fail_pending(ctx, ina_ctx_error(ctx));
		return 0;
	}
	schedule(ctx);
	/* After the start: the engine's clock never runs backwards. */
	moved = ina_pump(ctx);
	if (egroup_error(ctx->eg)) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg), "%s", egroup_error_msg(ctx->eg));
		ina_fail_pending(ctx, ina_ctx_error(ctx));
		return 1;
	}
	if (ctx->ssp) {
		schedule(ctx); /* ends what the engine ended, starts more */
	} else if (ctx->nb_run && egroup_phase(ctx->eg) == ENGINE_READY) {
		round_finish(ctx);
		schedule(ctx);
		moved = 1;
	}
	if (!moved) {
		uint64_t deadline = egroup_next_deadline(ctx->eg);

		now = ina_now_ns();
		if (deadline > now && deadline - now < *sleep_ns)
			*sleep_ns = deadline - now;
		else if (deadline <= now)
			*sleep_ns = 0;
	}
	return moved;
}

/* A usable context for a submission: 0 or its error. */
static int
ctx_usable(const struct ina_ctx *ctx)
{
	if (egroup_error(ctx->eg))
		return ina_ctx_error(ctx);
	if (egroup_phase(ctx->eg) != ENGINE_READY && egroup_phase(ctx->eg) != ENGINE_RUNNING)
		return INA_ECLOSED;
	return 0;
}

/* The fusion class of an operation: dense allreduces without the planner,
 * small enough, by op (1 sum, 2 average); 0 for the rest, never fused. */
static uint8_t
fuse_class(const struct ina_ctx *ctx, const struct op *o)
{
	const struct sparse_tensor *t = ina_find_tensor(ctx, o->tensor_id);
	int dense = t ? t->opt.mode == INA_SPARSIFY_OFF
		      : ctx->job_sparsify.mode == INA_SPARSIFY_OFF;

	if (!ctx->fuse_elems || o->kind != OP_ALLREDUCE || !dense || ctx->plan_blocks ||
	    ctx->part.mode == PARTITION_DYNAMIC || o->n >= ctx->fuse_elems)
		return 0;
	return o->op == INA_AVG ? 2 : 1;
}

/* Queues an operation (under the lock): 0 and '*handle', or an error. */
static int
submit(struct ina_ctx *ctx, const struct op *proto, int32_t priority, uint64_t *handle)
{
	uint64_t seq = order_submitted(ctx->sched);
	struct op *o = &ctx->ops[seq % ctx->max_pending];
	uint64_t sleep_ns;
	int ret = ctx_usable(ctx);

	if (ret < 0)
		return ret;
	if (o->state != OP_FREE) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "%u operations submitted and not waited for (max_pending)",
			 ctx->max_pending);
		return -EBUSY;
	}
	{
		struct order_op oo = {
			.tensor_id = proto->tensor_id,
			.priority = priority,
			.fence = proto->kind == OP_BARRIER,
			.n = (uint32_t)proto->n,
			.fuse_class = fuse_class(ctx, proto),
		};

		ret = order_submit_op(ctx->sched, &oo, &seq);
	}
	if (ret < 0)
		return -EBUSY;
	*o = *proto;
	o->seq = seq;
	o->state = OP_QUEUED;
	if (o->kind == OP_BARRIER) {
		o->one = 1;
		o->in = &o->one;
		o->out = &o->one;
	}
	*handle = seq + 1;
	ina_step(ctx, &sleep_ns);
	return 0;
}

/* ina_iallreduce(); 'quiet' for a blocking call's own operation. */
int
ina_submit_allreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out, size_t n,
		     enum ina_op op, int32_t priority, int quiet, uint64_t *handle)
{
	struct op proto = { .kind = OP_ALLREDUCE,
			    .tensor_id = tensor_id,
			    .in = in,
			    .out = out,
			    .n = n,
			    .op = op,
			    .quiet = quiet };
	int ret;

	if (n == 0 || n >= INA_BLOCK_OPEN || !in || !out || !handle ||
	    (op != INA_SUM && op != INA_AVG))
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	ret = submit(ctx, &proto, priority, handle);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int
ina_iallreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out, size_t n,
	       enum ina_op op, int32_t priority, uint64_t *handle)
{
	return ina_submit_allreduce(ctx, tensor_id, in, out, n, op, priority, 0, handle);
}

/* ina_iallreduce_blocks(); 'quiet' for a blocking call's own operation. */
int
ina_submit_blocks(struct ina_ctx *ctx, uint32_t tensor_id, const struct ina_blocks *in,
		  struct ina_blocks_out *out, enum ina_op op, int32_t priority, int quiet,
		  uint64_t *handle)
{
	struct op proto = { .kind = OP_BLOCKS,
			    .tensor_id = tensor_id,
			    .op = op,
			    .bout = out,
			    .quiet = quiet };
	int ret;

	if (!handle || (op != INA_SUM && op != INA_AVG) || ina_blocks_usable(ctx, in, out) < 0)
		return -EINVAL;
	proto.bin = *in;
	proto.n = in->n;
	pthread_mutex_lock(&ctx->lock);
	ret = submit(ctx, &proto, priority, handle);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int
ina_iallreduce_blocks(struct ina_ctx *ctx, uint32_t tensor_id, const struct ina_blocks *in,
		      struct ina_blocks_out *out, enum ina_op op, int32_t priority,
		      uint64_t *handle)
{
	return ina_submit_blocks(ctx, tensor_id, in, out, op, priority, 0, handle);
}

/* ina_ibroadcast(); 'quiet' for a blocking call's own operation. */
int
ina_submit_broadcast(struct ina_ctx *ctx, uint32_t tensor_id, float *buf, size_t n, uint16_t root,
		     int32_t priority, int quiet, uint64_t *handle)
{
	struct op proto = { .kind = OP_BROADCAST,
			    .tensor_id = tensor_id,
			    .in = buf,
			    .out = buf,
			    .n = n,
			    .root = root,
			    .quiet = quiet };
	int ret;

	if (n == 0 || n >= INA_BLOCK_OPEN || !buf || !handle || root >= ctx->world || ctx->ssp)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	ret = submit(ctx, &proto, priority, handle);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int
ina_ibroadcast(struct ina_ctx *ctx, uint32_t tensor_id, float *buf, size_t n, uint16_t root,
	       int32_t priority, uint64_t *handle)
{
	return ina_submit_broadcast(ctx, tensor_id, buf, n, root, priority, 0, handle);
}

/* ina_ibarrier(); 'quiet' for a blocking call's own operation. */
int
ina_submit_barrier(struct ina_ctx *ctx, int quiet, uint64_t *handle)
{
	struct op proto = { .kind = OP_BARRIER,
			    .tensor_id = INA_BARRIER_TENSOR,
			    .n = 1,
			    .quiet = quiet };
	int ret;

	if (!handle || ctx->ssp)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	ret = submit(ctx, &proto, 0, handle);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int
ina_ibarrier(struct ina_ctx *ctx, uint64_t *handle)
{
	return ina_submit_barrier(ctx, 0, handle);
}

int
ina_flush(struct ina_ctx *ctx)
{
	uint64_t sleep_ns;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	order_flush(ctx->sched);
	ina_step(ctx, &sleep_ns);
	ret = ina_ctx_error(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int
ina_test(struct ina_ctx *ctx, uint64_t handle)
{
	struct op *o;
	uint64_t sleep_ns;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	o = ina_op_of(ctx, handle);
	if (!o) {
		ret = -EINVAL;
	} else {
		if (o->state != OP_DONE)
			ina_step(ctx, &sleep_ns);
		ret = o->state != OP_DONE ? 0 : ina_op_collect(o) < 0 ? o->ret : 1;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int
ina_wait(struct ina_ctx *ctx, uint64_t handle)
{
	uint64_t stuck_since = 0;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		struct op *o = ina_op_of(ctx, handle);
		uint64_t sleep_ns;
		int busy;

		if (!o) {
			ret = -EINVAL;
			break;
		}
		if (o->state == OP_DONE) {
			ret = ina_op_collect(o);
			break;
		}
		if (ina_step(ctx, &sleep_ns) || o->state == OP_DONE)
			continue;
		/* Nothing runs and the scheduler waits for submissions that
		 * may never come: bounded by the engine's timeout too. */
		if (!ctx->nb_run && o->state == OP_QUEUED && order_waiting(ctx->sched)) {
			uint64_t now = ina_now_ns();

			if (!stuck_since)
				stuck_since = now;
			else if (now - stuck_since > ctx->timeout_ns) {
				snprintf(ctx->errmsg, sizeof(ctx->errmsg),
					 "operation %" PRIu64 " (tensor %u) waits for a scheduler "
					 "window that nothing closed for %" PRIu64
					 " ms: submit the "
					 "rest of the step or call ina_flush()",
					 handle, o->tensor_id,
					 (uint64_t)(ctx->timeout_ns / INA_NS_PER_MS));
				ret = -EDEADLK;
				break;
			}
			if (sleep_ns > INA_NS_PER_MS)
				sleep_ns = INA_NS_PER_MS;
		} else {
			stuck_since = 0;
		}
		busy = ina_busy(ctx);
		pthread_mutex_unlock(&ctx->lock);
		ina_idle(ctx, busy, sleep_ns);
		pthread_mutex_lock(&ctx->lock);
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int
ina_progress(struct ina_ctx *ctx, uint32_t wait_us)
{
	uint64_t sleep_ns;
	int moved, ret, busy;

	pthread_mutex_lock(&ctx->lock);
	moved = ina_step(ctx, &sleep_ns);
	ret = ina_ctx_error(ctx);
	busy = ina_busy(ctx);
	pthread_mutex_unlock(&ctx->lock);
	if (!moved && wait_us && !ret) {
		uint64_t max = (uint64_t)wait_us * 1000;

		ina_idle(ctx, busy, sleep_ns < max ? sleep_ns : max);
	}
	return ret;
}

/* Up to 'max' ended operations, oldest end first, collected (under the
 * lock). */
static unsigned
poll_collect(struct ina_ctx *ctx, struct ina_completion *done, unsigned max)
{
	unsigned n = 0;
	uint64_t seq;

	while (n < max && done_queue_pop(&ctx->done, &seq, ina_op_uncollected, ctx)) {
		struct op *o = &ctx->ops[seq % ctx->max_pending];

		done[n].handle = seq + 1;
		done[n].status = ina_op_collect(o);
		done[n].reserved = 0;
		n++;
	}
	return n;
}

int
ina_poll(struct ina_ctx *ctx, struct ina_completion *done, unsigned max, uint32_t wait_us)
{
	uint64_t sleep_ns;
	unsigned n;
	int moved, ret;

	if (!ctx || !done || max == 0)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	moved = ina_step(ctx, &sleep_ns);
	n = poll_collect(ctx, done, max);
	if (n == 0 && !moved && wait_us && !egroup_error(ctx->eg)) {
		uint64_t max_ns = (uint64_t)wait_us * 1000;
		int busy = ina_busy(ctx);

		/* Wait without the lock, as ina_wait() does: other threads
		 * submit meanwhile. */
		pthread_mutex_unlock(&ctx->lock);
		ina_idle(ctx, busy, sleep_ns < max_ns ? sleep_ns : max_ns);
		pthread_mutex_lock(&ctx->lock);
		ina_step(ctx, &sleep_ns);
		n = poll_collect(ctx, done, max);
	}
	ret = n ? (int)n : ina_ctx_error(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}
