/* SPDX-License-Identifier: MIT */
/*
 * The event queue (events.h): an array-backed binary heap that grows by
 * doubling, ordered by (time, seq).
 */
#include <errno.h>
#include <stdlib.h>

#include "events.h"

void
sim_events_init(struct sim_events *q)
{
	q->heap = NULL;
	q->len = 0;
	q->cap = 0;
	q->next_seq = 0;
	q->nb_pushed = 0;
}

void
sim_events_fini(struct sim_events *q)
{
	free(q->heap);
	sim_events_init(q);
}

static inline int
before(const struct sim_event *a, const struct sim_event *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

/* Both sifts move a hole instead of swapping: one copy per level, not three
 * (the queue is a seventh of a large run's time). */
int
sim_events_push(struct sim_events *q, const struct sim_event *ev)
{
	struct sim_event x = *ev;
	size_t i;

	if (q->len == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 1024;
		struct sim_event *h = realloc(q->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		q->heap = h;
		q->cap = cap;
	}
	x.seq = q->next_seq++;
	q->nb_pushed++;
	i = q->len++;
	while (i > 0) {
		size_t up = (i - 1) / 2;

		if (!before(&x, &q->heap[up]))
			break;
		q->heap[i] = q->heap[up];
		i = up;
	}
	q->heap[i] = x;
	return 0;
}

int
sim_events_pop(struct sim_events *q, struct sim_event *ev)
{
	struct sim_event x;
	size_t i = 0, n;

	if (!q->len)
		return 0;
	*ev = q->heap[0];
	n = --q->len;
	if (!n)
		return 1;
	x = q->heap[n];
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && before(&q->heap[c + 1], &q->heap[c]))
			c++;
		if (!before(&q->heap[c], &x))
			break;
		q->heap[i] = q->heap[c];
		i = c;
	}
	q->heap[i] = x;
	return 1;
}

uint64_t
sim_events_peek_time(const struct sim_events *q)
{
	return q->len ? q->heap[0].time : UINT64_MAX;
}
