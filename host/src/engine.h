/* SPDX-License-Identifier: MIT */
/*
 * The host engine: one worker's side of the lane protocol as a pure state
 * machine. It joins a job, cuts a tensor into blocks dealt to lanes, emits one
 * packet per lane at a time (a block, or an empty ack carrying its next
 * pointer), consumes results into the caller's buffer, and retransmits on
 * timeout with backoff. Packets and the current time go in; packets come out.
 * It opens no socket, reads no clock and logs nothing (a test checks its
 * objects, tests/tools/check_pure.sh over ina_host_core): ina_pump.c drives it over a port, and the
 * tests drive it packet by packet. engine_int.h lists the files inside.
 *
 * With a replica switch (docs/PROTOCOL.md, "Replica and failover") the engine
 * also asks the replica to stand by for the job after the primary admitted
 * it, watches the primary while packets are outstanding, asks the replica to
 * take over when the primary falls silent, and on the replica's announcement
 * goes on with it under the new epoch, resending what was in flight. After
 * failover_ns without progress while the primary still answers, it also sends
 * the first waiting packet to the replica, which answers it with the
 * announcement if it took over unheard (engine_failover.c, the probe).
 */
#ifndef INA_ENGINE_H
#define INA_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "ina/auth.h"
#include "ina/pkt.h"
#include "ina/wire.h"
#include "payload_work.h"
#include "rtt_hist.h"

struct engine;

struct engine_config {
	uint32_t job_id;
	uint16_t rank;
	uint16_t world;
	uint16_t lanes;	    /* asked in the JOIN; a switch sharing its
					 * slots fairly may grant fewer (a JOIN_ACK
					 * flagged GRANT), and take some back from a
					 * later round (RESULTs flagged RESHAPE):
					 * engine_lanes() */
	uint16_t max_block; /* largest B this worker will use */
	uint8_t weight;	    /* the job's weight in the switch's fair
					 * share (1..255; 0 = 1) */
	uint8_t encoding;   /* enum ina_encoding */
	uint8_t ssp;	    /* 0: bsp; S (1..INA_SSP_MAX): ssp:S, up to
					 * S + 1 rounds in flight (engine_allreduce);
					 * f32 or bf16, no replica */
	uint64_t token;
	uint8_t auth; /* tenant mode: every packet in and out carries
				 * a tag under 'key' (auth.h) in place of the
				 * token (then 0) */
	struct ina_job_key key;
	struct ina_peer sw;	   /* the switch (the primary, with a replica) */
	struct ina_peer replica;   /* the replica switch, len 0 = none */
	uint64_t failover_ns;	   /* with a replica: nothing from the primary
					 * this long while packets are outstanding
					 * asks the replica to take over; keep it
					 * above rto_max_ns, or a WAIT for a slow
					 * peer may come too late (default 1 s) */
	uint64_t rto_ns;	   /* first retransmission timeout, before any
					 * round trip was measured */
	uint64_t rto_min_ns;	   /* floor of the adaptive timeout */
	uint64_t rto_max_ns;	   /* backoff cap */
	uint64_t timeout_ns;	   /* no progress this long: the op fails; a
					 * WAIT flagged LIVE (the switch vouches
					 * for the ranks it waits on) counts as
					 * progress here, up to pause_ns */
	uint64_t pause_ns;	   /* the longest pause of a peer waited for
					 * on LIVE WAITs: no result this long
					 * fails the op all the same; 0: no bound
					 * (default 10 min) */
	uint64_t keepalive_ns;	   /* joined and nothing sent this long: a
					 * KEEPALIVE to the switch followed
					 * (engine_tx, engine_keepalive); 0: none
					 * (the default) */
	struct ina_pkt_pool *pool; /* where outgoing packets come from */
	struct payload_work *work; /* NULL: each block encoded and decoded on
					 * the spot; else whole blocks' encodes
					 * and decodes and the tags of what is
					 * sent are recorded there, and received
					 * packets held there, for the caller to
					 * run before the burst goes out
					 * (payload_work.h) */
};

void engine_config_init(struct engine_config *cfg);

enum engine_op { ENGINE_SUM = 0, ENGINE_AVG = 1 };

/*
 * The engine's own errors (engine_error(), and what engine_allreduce()
 * returns once failed), beside -errno codes. The API maps them to ina.h's
 * INA_E* codes in one table (ina_err.c); the numbers are the same, so a code
 * passed on as it is still means the same.
 */
enum engine_err {
	ENGINE_ENOSWITCH = -1001,  /* the switch (or replica) did not answer */
	ENGINE_EREFUSED = -1002,   /* the switch refused the job */
	ENGINE_EPEER = -1003,	   /* peers did not contribute in time */
	ENGINE_ELEFT = -1004,	   /* another rank left the job */
	ENGINE_ESATURATED = -1005, /* an i32 sum saturated */
	ENGINE_ENONFINITE = -1006, /* NaN or infinity where i32 cannot carry it */
	ENGINE_EPROTO = -1009,	   /* the switch answered against the protocol */
};

/* What the engine is doing. */
enum engine_phase {
	ENGINE_IDLE = 0, /* not joined yet */
	ENGINE_JOINING,
	ENGINE_READY,	  /* joined, no operation running */
	ENGINE_RUNNING,	  /* an allreduce is in progress */
	ENGINE_FINISHING, /* FIN sent, waiting for FIN_ACK */
	ENGINE_LEAVING,	  /* LEAVE to send */
	ENGINE_CLOSED,
	ENGINE_REDIRECTED, /* the switch has no slots for the job and named
				 * a host aggregator (a JOIN_ACK flagged
				 * REDIRECT): engine_redirect_target() says
				 * where, the caller resolves it and calls
				 * engine_redirect() */
};

struct engine_stats {
	uint64_t rounds;
	uint64_t pkts_sent, bytes_sent; /* ina packets (header + payload) */
	uint64_t pkts_recv, bytes_recv;
	uint64_t data_sent;  /* data packets with a payload */
	uint64_t empty_sent; /* header-only data packets */
	uint64_t retransmits;
	uint64_t waits;		      /* WAIT answers received */
	uint64_t keepalives;	      /* KEEPALIVEs sent */
	uint64_t stale;		      /* valid but for no open block */
	uint64_t bad;		      /* failed validation */
	uint64_t auth_fail;	      /* tenant mode: a wrong tag (dropped) */
	uint64_t saturated;	      /* results flagged saturated */
	uint64_t deferred;	      /* results that came back DEFERRED */
	uint64_t ssp_missed;	      /* ssp: PARTIAL results without this
						 * rank's part (it went back) */
	uint64_t stalls;	      /* operations that went a quarter of the
						 * timeout without progress */
	uint64_t failovers;	      /* takeovers by the replica followed */
	uint64_t failover_sent;	      /* FAILOVER packets sent to the replica */
	uint64_t failover_silence_ns; /* the last takeover: how long the
						 * primary had been silent then */
	uint64_t probes;	      /* packets sent to the replica standing by
						 * after failover_ns without progress, in
						 * case it took over unheard
						 * (engine_failover.c) */
	uint64_t redirects;	      /* REDIRECTs followed (0 or 1) */
	uint64_t reshapes;	      /* times the switch took lanes back
						 * (RESHAPE, from a round on) */
	uint64_t lanes_asked;	      /* the lanes the JOIN asked when the
						 * switch granted fewer, else 0 */
	uint64_t standby_lost;	      /* the replica refused to stand by any
						 * longer (an ERROR from it): no failover
						 * left for the job */
	struct rtt_hist rtt;	      /* round trips of lanes' packets sent once
						 * (Karn's rule), send to result: what the
						 * RTO estimate samples (engine_base.c) */
};

struct engine *engine_create(const struct engine_config *cfg);
void engine_destroy(struct engine *e); /* Accepts NULL. */

/* Starts joining the job: JOIN to the switch, then, with a replica, a STANDBY
 * JOIN to the replica with the epoch the switch gave; the join completes when
 * both answered. A replica that refuses or does not answer within timeout_ns
 * fails the join (the engine then says LEAVE to the switch). 0 or -errno. */
int engine_join(struct engine *e, uint64_t now_ns);

/*
 * Starts an allreduce of 'n' floats from 'in' into 'out' ('out' may equal
 * 'in') as round engine_round(), in blocks of 'block_size'. The buffers must
 * stay valid until the operation ends; n is below INA_BLOCK_OPEN. 0, or
 * -EINVAL / -EBUSY.
 */
int engine_allreduce(struct engine *e, uint32_t tensor_id, const float *in, float *out, size_t n,
		     uint16_t block_size, enum engine_op op, uint64_t now_ns);

/*
 * Under ssp:S (cfg.ssp), engine_allreduce() starts round engine_round() while
 * earlier rounds are still in flight, as long as none of them is more than S
 * rounds back (else -EBUSY): rounds r..r+S may be in flight together, each
 * with its own buffers, each lane one block (n <= lanes x block_size, else
 * -EINVAL). The switch may close a block before this rank's part counted (a
 * PARTIAL result without it, docs/PROTOCOL.md 6.7): the engine writes the
 * others' sum and marks the block in the array given by engine_set_missed()
 * for that round, as it marks a DEFERRED block; the caller gives that block's
 * own part back to its residual. A missed block with no array fails the
 * round (ENGINE_EPROTO). engine_in_flight() says whether a round still runs.
 */
/* The per-block array of the next engine_allreduce() (ssp): see above; one
 * byte per block, zeroed at the start, valid until the round ends. */
void engine_set_missed(struct engine *e, uint8_t *missed);
/* ssp: 1 while round 'round' is in flight, else 0. bsp: 1 while running. */
int engine_in_flight(const struct engine *e, uint32_t round);
/* ssp: rounds in flight now. */
uint16_t engine_nb_in_flight(const struct engine *e);
/* 1 when engine_allreduce() would start a round now (not -EBUSY). */
int engine_can_start(const struct engine *e);

/*
 * The result filter of the next engine_allreduce() only: every DATA packet
 * announces 'bound' (> 0; 0 turns the filter off), and a block whose sum the
 * switch finds under the smallest bound announced comes back header-only,
 * DEFERRED: the engine writes zeros for it and sets deferred[block] to 1.
 * 'deferred' holds one byte per block of that allreduce, is zeroed when it
 * starts and must stay valid until it ends; the caller gives each deferred
 * block's own contribution back to its residual (sparsify_defer_block). A
 * DEFERRED result for an allreduce without a bound fails it (ENGINE_EPROTO).
 */
void engine_set_result_filter(struct engine *e, float bound, uint8_t *deferred);

/*
 * The cut of the next engine_allreduce() only (bsp and ssp): its blocks of
 * B travel cut into 2^sub_log sub-blocks of b = B >> sub_log elements
 * (docs/PROTOCOL.md 2.7), every packet of the round carrying 'sub_log':
 * a DATA holds the mask of its non-zero sub-blocks and only their values
 * (header-only when none is), a RESULT the union's; a sub-block absent
 * from a result's mask is zero in the output, written as zeros unless the
 * output is the input (in place), which holds them already. Every rank must
 * cut a round alike. 0 (the default) is no cut; 1..INA_SUB_LOG_MAX, and
 * engine_allreduce() refuses (-EINVAL) a B that is no multiple of
 * 2^sub_log, or a full block with its mask that does not fit a packet.
 */
void engine_set_cut(struct engine *e, uint8_t sub_log);

/*
 * Block-sparse operands of the next engine_allreduce() only (bsp): it then
 * takes in = out = NULL, sends only the listed blocks and writes only the
 * union's sums, never a block that stays zero. Block numbers here are the
 * tensor's; this engine's block b is index - base (an engine of a group
 * carries the run of blocks from 'base' on). The pointers stay valid until
 * the round ends.
 */
struct engine_blocks {
	const uint32_t *index; /* 'count' ascending block numbers, each in
				 * base .. base + the round's blocks - 1 */
	const float *values;   /* count x block_size floats, in index order */
	uint32_t count;
	uint32_t base;
	uint32_t *chain;     /* scratch of 'count' entries */
	float *dense;	     /* block b's sum at dense + b x B, or NULL */
	uint32_t *out_index; /* the union's blocks (index numbers), appended
				 * as their results come, or NULL */
	float *out_values;   /* ... and their sums, B floats each, or NULL */
	uint32_t capacity;   /* entries out_index and out_values hold */
	uint32_t *out_count; /* the append cursor, which several engines may
				 * share; it counts past capacity */
};
void engine_set_blocks(struct engine *e, const struct engine_blocks *b);

/* Starts the goodbye: FIN after a finished job, LEAVE to abort one; to the
 * switch followed, and also to the replica while it stands by (best effort:
 * only the followed switch's FIN_ACK is awaited). */
void engine_finish(struct engine *e, uint64_t now_ns);
void engine_leave(struct engine *e, uint64_t now_ns);

/* Consumes 'n' received packets (the engine frees them). */
void engine_rx(struct engine *e, struct ina_pkt **pkts, uint16_t n, uint64_t now_ns);

/*
 * Writes up to 'max' packets to send now (first sends, answers to results,
 * retransmissions) into 'out'; the caller passes them to a port. Also runs
 * the timers: an operation without progress for timeout_ns fails here.
 */
uint16_t engine_tx(struct engine *e, uint64_t now_ns, struct ina_pkt **out, uint16_t max);

/*
 * Only the KEEPALIVE, when one is due (joined, READY or RUNNING without an
 * error, cfg.keepalive_ns set and nothing sent for that long): to the switch
 * followed, and a copy to a replica standing by (its standby job must not
 * idle out in a long pause), at most 'max' packets into 'out'; returns how
 * many. Runs no other timer and sends nothing else, so a thread that keeps
 * an idle context alive may call it while nobody receives (engine_tx()
 * sends the same KEEPALIVEs when they are due).
 */
uint16_t engine_keepalive(struct engine *e, uint64_t now_ns, struct ina_pkt **out, uint16_t max);

/* What the engine is doing (enum engine_phase). */
int engine_phase(const struct engine *e);
/* 0, or the error that ended the engine's operation (enum engine_err or
 * -errno). After an error only a goodbye (engine_finish) is left. */
int engine_error(const struct engine *e);
/* A sentence on the last error, naming job, rank, lane, block and round. */
const char *engine_error_msg(const struct engine *e);
/* Once per stall (a quarter of timeout_ns without progress in an
 * operation): a sentence naming the job, round, the lane and block waited
 * for, the retransmissions so far and what the switch last said (a WAIT with
 * the ranks it waits on, a RESULT, nothing) and, while the engine waits for
 * the replica to take over, how long the primary is silent and how many
 * FAILOVERs went to the replica; NULL otherwise. The caller logs
 * it. Noticed by engine_tx() (at most one retransmission timeout late: the
 * stall is no timer of its own). Valid until the next call into the engine. */
const char *engine_stall(struct engine *e);

/* The earliest time engine_tx() has timer work to do. */
uint64_t engine_next_deadline(const struct engine *e);

/*
 * The host aggregator the switch sent the job to: 1 with its IPv4 address
 * and UDP port (host order) once a REDIRECT came (in ENGINE_REDIRECTED and
 * after), else 0. A REDIRECT is followed once, and never with a replica.
 */
int engine_redirect_target(const struct engine *e, uint32_t *ipv4, uint16_t *port);
/* In ENGINE_REDIRECTED: joins the job at 'peer' (the target, resolved by
 * the caller's port) from now on, as a fresh JOIN. 0, or -EBUSY. */
int engine_redirect(struct engine *e, const struct ina_peer *peer, uint64_t now_ns);

/* 1 once the engine follows the replica (after its FAILOVER announcement). */
int engine_failed_over(const struct engine *e);

/* The job's lanes: cfg.lanes, or the fewer the switch granted. */
uint16_t engine_lanes(const struct engine *e);
uint32_t engine_round(const struct engine *e);
uint32_t engine_epoch(const struct engine *e);
const struct engine_stats *engine_stats(const struct engine *e);

#endif
