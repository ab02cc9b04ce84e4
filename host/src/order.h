/* SPDX-License-Identifier: MIT */
/*
 * The transfer scheduler of the asynchronous API: which queued operation
 * goes on the wire as the engine's next round. The switch matches blocks by
 * (tensor, round, block), so every worker of a job must run the same
 * operation in the same round, although each worker produces its tensors at
 * its own pace. The choice is therefore a function of what every worker
 * shares only: the submission sequence (operations and flushes, in the same
 * order on every worker), the declared priorities, and the norms of earlier
 * rounds' sums (which every worker holds bit for bit). A worker that has not
 * submitted what the choice needs yet waits (ORDER_WAIT) rather than diverge.
 *
 * Policies:
 *   FIFO       submission order; the next operation is the oldest one.
 *   PRIORITY   the smallest priority value first (front layers first), ties
 *              in submission order, among a window of submissions.
 *   MAGNITUDE  the largest norm of the tensor's previous sum first (a tensor
 *              with no sum yet counts as infinite), ties in submission order,
 *              among a window of submissions.
 *
 * The window of PRIORITY and MAGNITUDE starts at the oldest operation not
 * started (seq 'low') and ends before the first of: low + window (when
 * window > 0), a flush mark after low, a fence (barrier) after low. A worker
 * commits to a choice only once that end is known, i.e. once it has
 * submitted up to it; so the window costs overlap: nothing of a window goes
 * out before its last operation (or the flush) is submitted. A fence runs
 * alone, after everything submitted before it. Pure: no clock, no I/O;
 * nothing is allocated after order_create().
 */
#ifndef INA_ORDER_H
#define INA_ORDER_H

#include <stdint.h>

enum order_policy { ORDER_FIFO = 0, ORDER_PRIORITY = 1, ORDER_MAGNITUDE = 2 };

struct order_config {
	enum order_policy policy;
	uint32_t window;      /* submissions per window, 0: up to a flush or fence */
	uint32_t capacity;    /* operations queued (submitted, not started) at most */
	uint32_t max_tensors; /* tensors whose norm is remembered (MAGNITUDE) */
	uint32_t fuse_elems;  /* fusion: a round holds operations of one class up
				 * to this many elements in all; 0: no fusion */
	uint32_t fuse_max;    /* ... and at most this many (<= ORDER_FUSE_MAX) */
};

#define ORDER_FUSE_MAX 64

/* One operation as submitted. */
struct order_op {
	uint32_t tensor_id;
	int32_t priority;
	int fence;	    /* a barrier */
	uint32_t n;	    /* elements */
	uint8_t fuse_class; /* 0: never fused; else only with the same class */
};

struct order;

/* NULL with errno set (EINVAL, ENOMEM). */
struct order *order_create(const struct order_config *cfg);
void order_destroy(struct order *s); /* Accepts NULL. */

/* Queues an operation as submission number '*seq' (0, 1, 2, ...). A fence
 * (barrier) closes the window before it and runs alone. 0, or -ENOSPC when
 * 'capacity' operations are queued. */
int order_submit(struct order *s, uint32_t tensor_id, int32_t priority, int fence, uint64_t *seq);

/* The same with what fusion needs (elements, class). */
int order_submit_op(struct order *s, const struct order_op *op, uint64_t *seq);

/* A flush mark: every operation of the current window has been submitted
 * (the end of a step). Part of the submission sequence. */
void order_flush(struct order *s);

#define ORDER_WAIT 1  /* order_next: nothing can be chosen yet */
#define ORDER_EMPTY 2 /* order_next: nothing queued */

/* The operation to run next: 0 and '*seq' (it leaves the queue), ORDER_WAIT
 * when the window's end is not submitted yet, or ORDER_EMPTY. */
int order_next(struct order *s, uint64_t *seq);

/* The next round's operations (up to fuse_max into 'seqs', in the order
 * their elements go: the policy's choice first): 0 and '*count', ORDER_WAIT
 * or ORDER_EMPTY. Fusion: under FIFO the operations that follow the choice
 * in submission order, under PRIORITY and MAGNITUDE the window's next in
 * the policy's order, while they are of the choice's class and fit in
 * fuse_elems; the group ends at a flush mark or a fence. Under FIFO a small
 * operation waits (ORDER_WAIT) until the one after it is submitted or a
 * flush mark says none follows, as whether it fits decides the group. */
int order_next_group(struct order *s, uint64_t *seqs, uint32_t *count);

/* Whether order_next() would return ORDER_WAIT (for a caller that blocks). */
int order_waiting(const struct order *s);

/* The norm of 'tensor_id's last sum (the same on every worker). 0 or
 * -ENOSPC when max_tensors are known (that tensor then counts as unknown). */
int order_set_norm(struct order *s, uint32_t tensor_id, double norm);

/* Submissions so far (the next seq). */
uint64_t order_submitted(const struct order *s);
/* Operations queued. */
uint32_t order_queued(const struct order *s);

const char *order_policy_name(enum order_policy p);

#endif
