/* SPDX-License-Identifier: MIT */
/*
 * The end order of a context's operations, for ina_poll(): a ring of the
 * submission numbers of operations as they end. An entry goes stale when its
 * operation is collected another way (ina_test, ina_wait); the reader skips
 * stale entries, and a full ring drops them to make room, so the ring never
 * holds more live entries than operations can be pending.
 */
#ifndef INA_DONE_QUEUE_H
#define INA_DONE_QUEUE_H

#include <stdint.h>

struct done_queue {
	uint64_t *seqs;
	uint32_t cap, head, count; /* entries head .. head + count - 1 (mod cap) */
};

/* Whether the operation 'seq' has ended and is still to be collected. */
typedef int (*done_live_fn)(void *arg, uint64_t seq);

/* Room for 'cap' entries (at least the pending operations' bound + 1). */
int done_queue_init(struct done_queue *q, uint32_t cap);
void done_queue_free(struct done_queue *q);
/* Appends 'seq'; when full, first drops the stale entries. -ENOSPC if all
 * are live (the caller's bound is wrong). */
int done_queue_push(struct done_queue *q, uint64_t seq, done_live_fn live, void *arg);
/* The oldest live entry, removed: 1 and '*seq', or 0 when none is left. */
int done_queue_pop(struct done_queue *q, uint64_t *seq, done_live_fn live, void *arg);

#endif
