/* SPDX-License-Identifier: MIT */
/* The end-order ring of a context's operations (done_queue.h). */
#include <errno.h>
#include <stdlib.h>

#include "done_queue.h"

int
done_queue_init(struct done_queue *q, uint32_t cap)
{
	q->seqs = calloc(cap, sizeof(*q->seqs));
	q->cap = cap;
	q->head = 0;
	q->count = 0;
	return q->seqs ? 0 : -ENOMEM;
}

void
done_queue_free(struct done_queue *q)
{
	free(q->seqs);
	q->seqs = NULL;
	q->cap = q->count = 0;
}

/* Keeps the live entries, in order, from the head. */
static void
compact(struct done_queue *q, done_live_fn live, void *arg)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < q->count; i++) {
		uint64_t s = q->seqs[(q->head + i) % q->cap];

		if (live(arg, s))
			q->seqs[(q->head + kept++) % q->cap] = s;
	}
	q->count = kept;
}

int
done_queue_push(struct done_queue *q, uint64_t seq, done_live_fn live, void *arg)
{
	if (q->count == q->cap)
		compact(q, live, arg);
	if (q->count == q->cap)
		return -ENOSPC;
	q->seqs[(q->head + q->count++) % q->cap] = seq;
	return 0;
}

int
done_queue_pop(struct done_queue *q, uint64_t *seq, done_live_fn live, void *arg)
{
	while (q->count) {
		uint64_t s = q->seqs[q->head];

		q->head = (q->head + 1) % q->cap;
		q->count--;
		if (live(arg, s)) {
			*seq = s;
			return 1;
		}
	}
	return 0;
}
