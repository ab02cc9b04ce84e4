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
	int fence;
};

struct norm {
	uint32_t tensor_id;
	double norm;
};

struct order {
	struct order_config cfg;
	struct entry *q;	/* queued, in seq order */
	uint32_t nq;
	uint64_t *marks;	/* flush marks above the oldest queued seq, ascending */
	uint32_t nmarks;
	struct norm *norms;
	uint32_t nnorms;
	uint64_t submitted;
};

struct order *
order_create(const struct order_config *cfg)
{
	struct order *s;

	if (cfg->policy > ORDER_MAGNITUDE || cfg->capacity == 0) {
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
order_submit(struct order *s, uint32_t tensor_id, int32_t priority, int fence, uint64_t *seq)
{
	struct entry *e;

	if (s->nq == s->cfg.capacity)
		return -ENOSPC;
	e = &s->q[s->nq++];
	e->seq = s->submitted++;
	e->tensor_id = tensor_id;
	e->priority = priority;
	e->fence = fence;
	*seq = e->seq;
	return 0;
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

/* Index of the policy's choice among the queued operations below 'end'. */
static uint32_t
choose(const struct order *s, uint64_t end)
{
	uint32_t best = 0;

	for (uint32_t i = 1; i < s->nq && s->q[i].seq < end; i++) {
		const struct entry *a = &s->q[i], *b = &s->q[best];

		if (a->fence)
			break;
		if (s->cfg.policy == ORDER_PRIORITY) {
			if (a->priority < b->priority)
				best = i;
		} else {
			double na = norm_of(s, a->tensor_id), nb = norm_of(s, b->tensor_id);

			/* Unknown (infinite) ties with unknown: the older first. */
			if (na > nb)
				best = i;
		}
	}
	return best;
}

int
order_waiting(const struct order *s)
{
	return s->nq && s->cfg.policy != ORDER_FIFO && window_end(s) == 0;
}

int
order_next(struct order *s, uint64_t *seq)
{
	uint32_t i = 0;

	if (s->nq == 0)
		return ORDER_EMPTY;
	if (s->cfg.policy != ORDER_FIFO) {
		uint64_t end = window_end(s);

		if (end == 0)
			return ORDER_WAIT;
		i = choose(s, end);
	}
	*seq = s->q[i].seq;
	memmove(&s->q[i], &s->q[i + 1], (s->nq - i - 1) * sizeof(s->q[0]));
	s->nq--;
	/* Marks at or below the new oldest seq close nothing any more. */
	{
		uint64_t low = s->nq ? s->q[0].seq : s->submitted;
		uint32_t k = 0;

		while (k < s->nmarks && s->marks[k] <= low)
			k++;
		memmove(s->marks, s->marks + k, (s->nmarks - k) * sizeof(s->marks[0]));
		s->nmarks -= k;
	}
	return 0;
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
