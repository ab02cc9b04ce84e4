/* SPDX-License-Identifier: MIT */
/*
 * The simulator's event queue: a binary min-heap ordered by (time, sequence
 * number). The sequence number is the order of insertion, so events at the
 * same time come out in the order they were scheduled and a run is a pure
 * function of its inputs (no pointer or hash order leaks into it). net.c is
 * its one user; it knows nothing of packets beyond carrying a pointer.
 */
#ifndef INA_SIM_EVENTS_H
#define INA_SIM_EVENTS_H

#include <stddef.h>
#include <stdint.h>

struct ina_pkt;

enum sim_event_kind {
	SIM_EV_ARRIVE, /* 'pkt' reaches node 'at' (from 'src', bound for 'dst') */
	SIM_EV_WAKE,   /* node 'at' asked to be woken (its timer) */
};

struct sim_event {
	uint64_t time;	     /* virtual ns */
	uint64_t seq;	     /* insertion order: the tie-break */
	struct ina_pkt *pkt; /* SIM_EV_ARRIVE: owned by the event */
	int32_t at;	     /* node index */
	int32_t src, dst;    /* SIM_EV_ARRIVE: the packet's ends (node indices) */
	uint32_t kind;	     /* enum sim_event_kind */
};

struct sim_events {
	struct sim_event *heap;
	size_t len, cap;
	uint64_t next_seq;
	uint64_t nb_pushed; /* events scheduled so far */
};

/* An empty queue (no allocation until the first push). */
void sim_events_init(struct sim_events *q);
/* Frees the heap; packets still held by events are the caller's to free
 * first (sim_events_pop until empty). */
void sim_events_fini(struct sim_events *q);

/* Schedules 'ev' (its 'seq' is assigned here). 0 or -ENOMEM. */
int sim_events_push(struct sim_events *q, const struct sim_event *ev);

/* Takes the earliest event into 'ev'; 0 when the queue is empty, else 1. */
int sim_events_pop(struct sim_events *q, struct sim_event *ev);

/* Time of the earliest event, or UINT64_MAX when empty. */
uint64_t sim_events_peek_time(const struct sim_events *q);

#endif
