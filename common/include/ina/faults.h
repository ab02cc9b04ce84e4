/* SPDX-License-Identifier: MIT */
/*
 * The fault injector every port shares (tests and demos; these machines'
 * kernels have no netem). Transport-free: it works on struct ina_pkt arrays
 * and takes the time as an argument; deterministic from its seed; nothing is
 * allocated per packet (held packets sit in a fixed array inside struct
 * ina_faults, duplicates come from the packet's own preallocated pool).
 *
 * A port applies the faults to what it receives (ina_faults_rx), after its
 * own checks: a received packet is owned by the port and has one plain peer,
 * so it can be held back across calls (a packet being sent may fan out to a
 * 'dsts' array that is only valid during tx_burst), and corruption can be
 * injected where a real checksum is verified after it (the dpdk port flips
 * the bits of a received frame before its software UDP checksum check; see
 * ina_faults_corrupt). drop= also applies on transmit where a port did so
 * before (udp). Faulting every port of a job faults both directions.
 *
 * Options (port options, e.g. "udp:drop=0.01,dup=0.01,seed=7"):
 *   drop=RATE      drop a packet [0]
 *   dup=RATE       deliver a packet twice (the copy right after it) [0]
 *   reorder=RATE   hold a packet back until reorder_gap later packets were
 *                  delivered (or 1 ms passed) [0]
 *   reorder_gap=K  1..16 [1]
 *   delay=RATE     hold a packet for delay_us [0; 1 when only delay_us= is given]
 *   delay_us=US    1..1000000 [1000]
 *   corrupt=RATE   flip one bit of a packet before its checksum is verified
 *                  (ports that verify checksums themselves: dpdk) [0]
 *   hold=N         most packets held at once (reorder, delay, duplicates
 *                  without room), 1..256 [128]; when full, a packet passes
 *                  unharmed (counted in hold_full)
 *   seed=N         [1]; each kind draws from its own stream, so adding one
 *                  kind keeps the packets another kind picks
 * RATE is a probability per packet: 0 <= RATE < 1 for drop and corrupt
 * (else nothing gets through), 0 <= RATE <= 1 for the others.
 */
#ifndef INA_FAULTS_H
#define INA_FAULTS_H

#include <stdint.h>

#include "ina/pkt.h"

#define INA_FAULTS_HOLD_MAX 256
#define INA_FAULTS_GAP_MAX 16
#define INA_FAULTS_REORDER_MAX_NS 1000000ull /* a reordered packet waits at most 1 ms */

enum ina_fault_kind {
	INA_FAULT_DROP,
	INA_FAULT_DUP,
	INA_FAULT_REORDER,
	INA_FAULT_DELAY,
	INA_FAULT_CORRUPT,
	INA_FAULT_KINDS
};

struct ina_faults_cfg {
	double rate[INA_FAULT_KINDS]; /* probability per packet */
	uint64_t delay_ns;
	uint32_t reorder_gap;
	uint32_t hold;
	uint64_t seed;
	int delay_set;	  /* delay= given */
	int delay_us_set; /* delay_us= given (alone: every packet) */
};

/* What was injected (ina_port_stats has the same counters for callers). */
struct ina_faults_stats {
	uint64_t drop, dup, reorder, delay, corrupt;
	uint64_t hold_full; /* holds refused: the queue was full */
};

struct ina_faults_held {
	struct ina_pkt *pkt;
	uint64_t due_ns;  /* released at or after this time */
	uint64_t due_seq; /* ... or once this many were delivered */
};

struct ina_faults {
	struct ina_faults_cfg cfg;
	uint64_t rng[INA_FAULT_KINDS]; /* one splitmix64 stream per kind */
	int active;		       /* some rate > 0 */
	int timed;		       /* reorder or delay: needs the clock */
	uint64_t delivered;	       /* packets handed to the caller */
	unsigned nb_held;
	struct ina_faults_held held[INA_FAULTS_HOLD_MAX]; /* in release order of arrival */
	struct ina_faults_stats st;
};

/* Defaults: no faults, seed 1. */
void ina_faults_cfg_init(struct ina_faults_cfg *cfg);
/*
 * Parses one option KEY=VAL into 'cfg': 1 if KEY is a fault option and VAL
 * is good, 0 if KEY is none of ours, -EINVAL (with the accepted range in
 * '*range') for a bad value.
 */
int ina_faults_option(struct ina_faults_cfg *cfg, const char *key, const char *val,
		      const char **range);
/* The option names, for "known: ..." messages. */
#define INA_FAULTS_KEYS "drop, dup, reorder, reorder_gap, delay, delay_us, corrupt, hold, seed"

/* Starts an injector from a parsed configuration. */
void ina_faults_init(struct ina_faults *f, const struct ina_faults_cfg *cfg);

/* 1 if the injector does anything at all (ports skip it otherwise). */
static inline int
ina_faults_active(const struct ina_faults *f)
{
	return f->active;
}

/* 1 if it needs the time (reorder or delay): ports read the clock only then. */
static inline int
ina_faults_timed(const struct ina_faults *f)
{
	return f->timed;
}

/* Draws one decision of 'kind' from its stream (nothing drawn at rate 0). */
int ina_faults_pick(struct ina_faults *f, enum ina_fault_kind kind);

/* 1 if the next packet is to be dropped (counted); for tx-side drops. */
int ina_faults_drop(struct ina_faults *f);

/*
 * Corruption for a port that verifies a checksum after this call: with
 * probability corrupt=, flips one bit of buf[0..len) and returns 1 (counted),
 * else 0.
 */
int ina_faults_corrupt(struct ina_faults *f, uint8_t *buf, uint32_t len);

/*
 * Moves up to 'room' held packets that are due at 'now_ns' into 'out', in
 * the order they were held. Returns how many. Call before receiving more.
 */
uint16_t ina_faults_release(struct ina_faults *f, uint64_t now_ns, struct ina_pkt **out,
			    uint16_t room);

/*
 * Applies drop, dup, reorder and delay to the 'n' packets just received in
 * 'pkts', in place: dropped ones are freed, held ones kept, duplicates
 * allocated from each packet's pool and put right after the original while
 * 'room' (>= n) allows, else held for the next call. Returns how many
 * packets are now in pkts[0..).
 */
uint16_t ina_faults_rx(struct ina_faults *f, uint64_t now_ns, struct ina_pkt **pkts, uint16_t n,
		       uint16_t room);

/*
 * Nanoseconds from 'now_ns' until the next held packet is due (0: one is due
 * now), or UINT64_MAX with nothing held. Ports cap their wait() with it.
 */
uint64_t ina_faults_next_ns(const struct ina_faults *f, uint64_t now_ns);

/* Frees every held packet (at close, before the pools go). */
void ina_faults_flush(struct ina_faults *f);

#endif
