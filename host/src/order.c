/* SPDX-License-Identifier: MIT */
/*
 * The transfer scheduler (order.h): a queue in submission order, flush
 * marks, a table of norms, and the policy's choice inside the window.
 * Queues are short (a step's tensors), so the scans are linear.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "order.h"

struct entry {
	uint64_t seq;
	uint32_t tensor_id;
	int32_t priority;
	int fence;	    /* 1 a fence, -1 taken (order_next_group) */
	uint32_t n;	    /* elements, for fusion */
	uint8_t fuse_class; /* 0: never fused; fused only with its class */
};

struct norm {
	uint32_t tensor_id;
	double norm;
};

struct order {
	struct order_config cfg;
	struct entry *q; /* queued, in seq order */
	uint32_t nq;
	uint64_t *marks; /* flush marks above the oldest queued seq, ascending */
	uint32_t nmarks;
	struct norm *norms;
	uint32_t nnorms;
	uint64_t submitted;
};

struct order *
order_create(const struct order_config *cfg)
{
	struct order *s;

	if (cfg->policy > ORDER_MAGNITUDE || cfg->capacity == 0 || cfg->fuse_max > ORDER_FUSE_MAX) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cfg = *cfg;
	s->q = calloc(cfg->capacity, sizeof(*s->q));
	/* A mark lies above the oldest queued seq and at most at the last
	 * submission, and marks are distinct: at most capacity + 1. */
	s->marks = calloc(cfg->capacity + 1, sizeof(*s->marks));
	s->norms = calloc(cfg->max_tensors ? cfg->max_tensors : 1, sizeof(*s->norms));
	if (!s->q || !s->marks || !s->norms) {
		order_destroy(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void
order_destroy(struct order *s)
{
	if (!s)
		return;
	free(s->q);
	free(s->marks);
	free(s->norms);
	free(s);
}

int
order_submit_op(struct order *s, const struct order_op *op, uint64_t *seq)
{
	struct entry *e;

	if (s->nq == s->cfg.capacity)
		return -ENOSPC;
	e = &s->q[s->nq++];
	e->seq = s->submitted++;
	e->tensor_id = op->tensor_id;
	e->priority = op->priority;
	e->fence = op->fence ? 1 : 0;
	e->n = op->n;
	e->fuse_class = op->fence ? 0 : op->fuse_class;
	*seq = e->seq;
	return 0;
}

int
order_submit(struct order *s, uint32_t tensor_id, int32_t priority, int fence, uint64_t *seq)
{
	struct order_op op = { .tensor_id = tensor_id, .priority = priority, .fence = fence };

	return order_submit_op(s, &op, seq);
}

void
order_flush(struct order *s)
{
	/* A mark at or below the oldest queued seq closes nothing. */
	if (s->nq == 0 || s->submitted <= s->q[0].seq)
		return;
	if (s->nmarks && s->marks[s->nmarks - 1] == s->submitted)
		return;
	s->marks[s->nmarks++] = s->submitted;
}

static double
norm_of(const struct order *s, uint32_t tensor_id)
{
	for (uint32_t i = 0; i < s->nnorms; i++)
		if (s->norms[i].tensor_id == tensor_id)
			return s->norms[i].norm;
	return INFINITY;
}

int
order_set_norm(struct order *s, uint32_t tensor_id, double norm)
{
	if (isnan(norm))
		norm = 0; /* a total order; every worker sees the same NaN */
	for (uint32_t i = 0; i < s->nnorms; i++)
		if (s->norms[i].tensor_id == tensor_id) {
			s->norms[i].norm = norm;
			return 0;
		}
	if (s->nnorms == s->cfg.max_tensors)
		return -ENOSPC;
	s->norms[s->nnorms].tensor_id = tensor_id;
	s->norms[s->nnorms++].norm = norm;
	return 0;
}

/* The end (exclusive seq) of the window starting at the oldest queued
 * operation, or 0 when it is not known yet. */
static uint64_t
window_end(const struct order *s)
{
	uint64_t low = s->q[0].seq;
	uint64_t end = s->cfg.window ? low + s->cfg.window : UINT64_MAX;

	if (s->q[0].fence)
		return low + 1;
	for (uint32_t i = 0; i < s->nmarks; i++)
		if (s->marks[i] > low) {
			if (s->marks[i] < end)
				end = s->marks[i];
			break;
		}
	for (uint32_t i = 1; i < s->nq && s->q[i].seq < end; i++)
		if (s->q[i].fence) {
			end = s->q[i].seq;
			break;
		}
	/* Known once submitted up to it: any mark or fence not seen yet lies
	 * beyond what was submitted, so beyond 'end' too. */
	return end <= s->submitted ? end : 0;
}

/* 1 if 'a' goes before 'b' under the policy; ties: the older first. */
static int
before(const struct order *s, const struct entry *a, const struct entry *b)
{
	if (s->cfg.policy == ORDER_PRIORITY && a->priority != b->priority)
		return a->priority < b->priority;
	if (s->cfg.policy == ORDER_MAGNITUDE) {
		double na = norm_of(s, a->tensor_id), nb = norm_of(s, b->tensor_id);

		/* Unknown (infinite) ties with unknown. */
		if (na != nb)
			return na > nb;
	}
	return a->seq < b->seq;
}

static int
has_mark(const struct order *s, uint64_t v)
{
	for (uint32_t i = 0; i < s->nmarks; i++)
		if (s->marks[i] == v)
			return 1;
	return 0;
}

/* Whether queued operation 'e' may join a group of class 'cls' holding
 * 'total' elements. */
static int
fits(const struct order *s, const struct entry *e, uint8_t cls, uint64_t total)
{
	return !e->fence && e->fuse_class == cls && total + e->n <= s->cfg.fuse_elems;
}

/*
 * The next round's operations, as indices into the queue in the order they
 * go (the policy's choice first, then what fuses with it): 0, ORDER_WAIT or
 * ORDER_EMPTY. Changes nothing.
 */
static int
pick(const struct order *s, uint32_t *idx, uint32_t *count)
{
	uint64_t end = UINT64_MAX, total;
	uint32_t first = 0, n = 1;
	uint8_t cls;

	if (s->nq == 0)
		return ORDER_EMPTY;
	if (s->cfg.policy != ORDER_FIFO) {
		end = window_end(s);
		if (end == 0)
			return ORDER_WAIT;
		for (uint32_t i = 1; i < s->nq && s->q[i].seq < end; i++)
			if (before(s, &s->q[i], &s->q[first]))
				first = i;
	}
	idx[0] = first;
	cls = s->q[first].fuse_class;
	total = s->q[first].n;
	if (s->cfg.fuse_max > 1 && cls && total < s->cfg.fuse_elems) {
		if (s->cfg.policy == ORDER_FIFO) {
			/* The queue is [low, submitted) in order. The group ends at a
			 * flush mark, at an operation that does not fit, or at the
			 * limit; an operation not submitted yet may fit, so wait. */
			for (uint32_t j = 1; n < s->cfg.fuse_max; j++) {
				if (has_mark(s, s->q[0].seq + j))
					break;
				if (j >= s->nq)
					return ORDER_WAIT;
				if (!fits(s, &s->q[j], cls, total))
					break;
				total += s->q[j].n;
				idx[n++] = j;
			}
		} else {
			/* The window is known: its operations in the policy's order,
			 * while they fit. */
			while (n < s->cfg.fuse_max) {
				uint32_t best = UINT32_MAX;

				for (uint32_t i = 0; i < s->nq && s->q[i].seq < end; i++) {
					int taken = 0;

					for (uint32_t k = 0; k < n && !taken; k++)
						taken = idx[k] == i;
					if (!taken && (best == UINT32_MAX ||
						       before(s, &s->q[i], &s->q[best])))
						best = i;
				}
				if (best == UINT32_MAX || !fits(s, &s->q[best], cls, total))
					break;
				total += s->q[best].n;
				idx[n++] = best;
			}
		}
	}
	*count = n;
	return 0;
}

int
order_waiting(const struct order *s)
{
	uint32_t idx[ORDER_FUSE_MAX], n;

	return pick(s, idx, &n) == ORDER_WAIT;
}

int
order_next_group(struct order *s, uint64_t *seqs, uint32_t *count)
{
	uint32_t idx[ORDER_FUSE_MAX], n, k = 0;
	int ret = pick(s, idx, &n);

	if (ret)
		return ret;
	for (uint32_t i = 0; i < n; i++) {
		seqs[i] = s->q[idx[i]].seq;
		s->q[idx[i]].fence = -1; /* taken */
	}
	for (uint32_t i = 0; i < s->nq; i++)
		if (s->q[i].fence != -1)
			s->q[k++] = s->q[i];
	s->nq = k;
	*count = n;
	/* Marks at or below the new oldest seq close nothing any more. */
	{
		uint64_t low = s->nq ? s->q[0].seq : s->submitted;
		uint32_t m = 0;

		while (m < s->nmarks && s->marks[m] <= low)
			m++;
		memmove(s->marks, s->marks + m, (s->nmarks - m) * sizeof(s->marks[0]));
		s->nmarks -= m;
	}
	return 0;
}

int
order_next(struct order *s, uint64_t *seq)
{
	uint64_t seqs[ORDER_FUSE_MAX];
	uint32_t n;
	int ret = order_next_group(s, seqs, &n);

	if (ret == 0)
		*seq = seqs[0];
	return ret;
}

uint64_t
order_submitted(const struct order *s)
{
	return s->submitted;
}

uint32_t
order_queued(const struct order *s)
{
	return s->nq;
}

const char *
order_policy_name(enum order_policy p)
{
	switch (p) {
	case ORDER_FIFO:
		return "fifo";
	case ORDER_PRIORITY:
		return "priority";
	case ORDER_MAGNITUDE:
		return "magnitude";
	}
	return "?";
}
