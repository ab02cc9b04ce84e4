/* SPDX-License-Identifier: MIT */
/*
 * One direction of a modelled link: a FIFO queue with a byte limit (tail
 * drop) in front of a serialiser of fixed bandwidth, then a propagation
 * latency, then seeded random loss. Since the queue is FIFO and the rate
 * fixed, the time a packet leaves follows from the time the previous one
 * left, so a packet costs one call here and one event (its arrival) in
 * net.c, whatever the queue holds. The loss draws come from the link's own
 * generator, seeded from the run's seed and the link, so a run replays
 * exactly and another seed changes only which packets are lost.
 */
#ifndef INA_SIM_LINK_H
#define INA_SIM_LINK_H

#include <stdint.h>

struct sim_link_stats {
	uint64_t pkts, bytes; /* put on the wire (lost ones included) */
	uint64_t lost;	      /* of which lost (the loss rate) */
	uint64_t tail_drops;  /* refused by the full queue (not sent) */
	uint64_t busy_ns;     /* time the serialiser was busy */
	uint64_t queue_max;   /* largest backlog seen, bytes */
};

struct sim_link {
	uint64_t bandwidth_bps; /* 0: unshaped (no serialisation, no queue) */
	uint64_t latency_ns;	/* one way */
	double loss;		/* [0, 1) */
	uint64_t queue_bytes;	/* backlog limit; 0: unlimited */
	uint64_t busy_until;	/* the serialiser is free from then on */
	uint64_t rng;
	struct sim_link_stats st;
};

void sim_link_init(struct sim_link *l, uint64_t bandwidth_bps, uint64_t latency_ns, double loss,
		   uint64_t queue_bytes, uint64_t seed);

/* Nanoseconds 'bytes' take to serialise at the link's rate (rounded up). */
uint64_t sim_link_ser_ns(const struct sim_link *l, uint64_t bytes);

/* Bytes waiting to be serialised at time 'now' (the current packet's rest
 * included). */
uint64_t sim_link_backlog(const struct sim_link *l, uint64_t now);

/*
 * Offers a packet of 'bytes' on the wire at 'now'. Returns the time its last
 * bit reaches the far end, or UINT64_MAX if it never does: tail-dropped by a
 * full queue (not serialised) or lost (serialised, then lost). Counted in
 * the stats either way.
 */
uint64_t sim_link_send(struct sim_link *l, uint64_t now, uint64_t bytes);

#endif
