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

static int
before(const struct sim_event *a, const struct sim_event *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

int
sim_events_push(struct sim_events *q, const struct sim_event *ev)
{
	size_t i;

	if (q->len == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 1024;
		struct sim_event *h = realloc(q->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		q->heap = h;
		q->cap = cap;
	}
	i = q->len++;
	q->heap[i] = *ev;
	q->heap[i].seq = q->next_seq++;
	q->nb_pushed++;
	while (i > 0) {
		size_t up = (i - 1) / 2;
		struct sim_event t;

		if (!before(&q->heap[i], &q->heap[up]))
			break;
		t = q->heap[i];
		q->heap[i] = q->heap[up];
		q->heap[up] = t;
		i = up;
	}
	return 0;
}

int
sim_events_pop(struct sim_events *q, struct sim_event *ev)
{
	size_t i = 0;

	if (!q->len)
		return 0;
	*ev = q->heap[0];
	q->heap[0] = q->heap[--q->len];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct sim_event t;

		if (l < q->len && before(&q->heap[l], &q->heap[m]))
			m = l;
		if (r < q->len && before(&q->heap[r], &q->heap[m]))
			m = r;
		if (m == i)
			break;
		t = q->heap[i];
		q->heap[i] = q->heap[m];
		q->heap[m] = t;
		i = m;
	}
	return 1;
}

uint64_t
sim_events_peek_time(const struct sim_events *q)
{
	return q->len ? q->heap[0].time : UINT64_MAX;
}
