/* SPDX-License-Identifier: MIT */
/*
 * The submitted operations' slots (ina_int.h): a handle's operation, an
 * operation's end (reported by ina_poll() in end order), every pending one
 * ended with the context's error, and an ended one collected.
 */
#include "ina_int.h"
#include "ssp_tensor.h"

/* The pending operation a handle names, or NULL (0, spent, never given). */
struct op *
ina_op_of(struct ina_ctx *ctx, uint64_t handle)
{
	struct op *o;

	if (handle == 0)
		return NULL;
	o = &ctx->ops[(handle - 1) % ctx->max_pending];
	return o->state != OP_FREE && o->seq == handle - 1 ? o : NULL;
}

/* Whether the operation 'seq' has ended and waits to be collected. */
int
ina_op_uncollected(void *arg, uint64_t seq)
{
	const struct ina_ctx *ctx = arg;
	const struct op *o = &ctx->ops[seq % ctx->max_pending];

	return o->state == OP_DONE && o->seq == seq;
}

/* Ends operation 'o' with 'ret'; ina_poll() reports it in this order
 * unless a blocking call of the library waits for it. */
void
ina_op_end(struct ina_ctx *ctx, struct op *o, int ret)
{
	if (o->t && ret < 0)
		tround_cancel(o->t->tr); /* the round did not happen */
	o->t = NULL;
	if (o->st) {
		/* ssp: missed blocks back to the residual; the slot is free. */
		ssp_tensor_end(o->st, o->ssp_slot);
		o->st = NULL;
	}
	o->ret = ret;
	o->state = OP_DONE;
	/* The ring holds twice the pending bound: never full of live ones. */
	if (!o->quiet)
		done_queue_push(&ctx->done, o->seq, ina_op_uncollected, ctx);
}

/* Every operation not ended yet ends with the context's error, in
 * submission order (the pending ones are among the last max_pending). */
void
ina_fail_pending(struct ina_ctx *ctx, int err)
{
	uint64_t next = order_submitted(ctx->sched);
	uint64_t s = next > ctx->max_pending ? next - ctx->max_pending : 0;

	for (; s < next; s++) {
		struct op *o = &ctx->ops[s % ctx->max_pending];

		if (o->seq == s && (o->state == OP_QUEUED || o->state == OP_RUNNING))
			ina_op_end(ctx, o, err);
	}
	ctx->nb_run = 0;
}

/* Operations submitted and not ended. */
uint32_t
ina_nb_pending(const struct ina_ctx *ctx)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < ctx->max_pending; i++)
		n += ctx->ops[i].state == OP_QUEUED || ctx->ops[i].state == OP_RUNNING;
	return n;
}

/* The end of a DONE operation, which frees its slot. */
int
ina_op_collect(struct op *o)
{
	int ret = o->ret;

	o->state = OP_FREE;
	return ret;
}
