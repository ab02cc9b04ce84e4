/* SPDX-License-Identifier: MIT */
/*
 * Inside the host engine (engine.h): its state, shared by the files that
 * make it up, and the functions they call in one another. The files form
 * layers, each calling only into the ones below it:
 *
 *   engine.c           the public calls: create, join, rx dispatch, tx, timers
 *   engine_failover.c  the replica: who may send what, takeover, FAILOVER, probe
 *   engine_stall.c     what the engine waits for: stall sentences, op timeouts
 *   engine_bsp.c       a bsp round: lanes walking the blocks by next pointers
 *   engine_ssp.c       ssp rounds: up to S + 1 in flight, one block per lane
 *   engine_base.c      failing with a message, packet headers, RTT estimate
 *
 * Nothing here is for callers of the engine: they see engine.h only.
 */
#ifndef INA_ENGINE_INT_H
#define INA_ENGINE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "ina/encoding.h"
#include "ina/pkt.h"
#include "ina/wire.h"

struct lane {
	uint8_t active;	   /* has blocks this round */
	uint8_t done;	   /* END received this round */
	uint8_t ver;	   /* version bit of the slot's next block */
	uint8_t need_send; /* a first send is due */
	uint8_t has_data;  /* my packet for 'block' carries a payload */
	uint8_t retx;	   /* the packet in flight was resent (no RTT sample) */
	uint8_t resend;	   /* resend now, whatever the timer (a failover) */
	int16_t cur_exp;   /* agreed exponent of 'block' (i32) */
	int16_t my_exp;	   /* exponent of 'my_next' (i32) */
	uint32_t block;	   /* the block my packet in flight answers */
	uint32_t my_next;  /* my next non-zero block after 'block' */
	uint32_t scan;	   /* block-sparse input: the lane's first listed
			    * block not passed yet (a position in the list,
			    * LIST_END past the last) */
	uint32_t my_pos;   /* ... the position of 'my_next' */
	uint32_t cur_pos;  /* ... the position of 'block' when has_data */
	uint64_t sent_ns;
	uint64_t rto_ns;
};

/* ssp: one lane of one round in flight (one block: the lane's). */
struct sop_lane {
	uint8_t active; /* the round has this lane's block */
	uint8_t done;	/* its result accepted */
	uint8_t need_send;
	uint8_t retx;
	uint8_t has_data; /* my block is non-zero */
	uint64_t sent_ns;
	uint64_t rto_ns;
};

/* ssp: one round in flight. */
struct sop {
	uint8_t active;
	enum engine_op op;
	uint32_t round;
	uint32_t tensor_id;
	uint32_t n;
	uint32_t nb_blocks;
	uint16_t block_size;
	uint8_t sub_log; /* the round's cut (engine_set_cut) */
	uint16_t lanes_left;
	float bound;
	const float *in;
	float *out;
	uint8_t *missed; /* per block: my part did not count */
	struct sop_lane *lanes;
};

struct engine {
	struct engine_config cfg;
	const struct ina_encoding_ops *enc; /* the row of cfg.encoding */
	struct ina_job_params params;
	int phase; /* enum engine_phase */
	int err;   /* < 0 once failed */
	char errmsg[512];
	char job_name[40]; /* in messages: the job id; in tenant mode "ID of
			   * tenant T", the tenant's own id (engine_create) */
	struct engine_stats st;

	/* Control packets (JOIN, FIN, LEAVE). */
	uint8_t ctl_need_send;
	uint32_t ctl_tries;
	uint64_t ctl_sent_ns;
	uint64_t ctl_rto_ns;
	uint64_t ctl_start_ns;
	/* The JOIN cookies the switch (0) and the replica (1) gave this
	 * worker's address (ERROR COOKIE, PROTOCOL 5.1), echoed in every JOIN
	 * to it; 0 until one comes. */
	uint64_t cookie[2];

	/* The operation in progress. */
	uint32_t tensor_id;
	uint32_t round;
	const float *in;
	float *out;
	uint32_t n;
	uint16_t block_size;
	uint8_t sub_log; /* the round's cut: 2^sub_log sub-blocks a block */
	uint32_t nb_blocks;
	enum engine_op op;
	uint16_t lanes_left;
	uint16_t tx_cursor; /* lane where the next engine_tx() scan starts */
	uint64_t srtt_ns;   /* smoothed round trip, 0 before the first sample */
	uint64_t rttvar_ns;
	uint64_t rto_ns; /* current first timeout of a lane's packet */
	uint64_t last_progress_ns;
	uint64_t last_heard_ns;
	uint64_t wait_missing;	/* ranks the last WAIT named */
	uint64_t wait_heard_ns; /* when */
	uint64_t live_ns;	/* the last WAIT flagged LIVE naming ranks: the
				 * switch vouches they live, which counts as
				 * progress for timeout_ns (not for pause_ns) */
	uint64_t last_tx_ns;	/* the last packet sent (keepalive_ns) */
	uint32_t wait_lane, wait_block;
	float bound;		/* the result filter's bound, 0 for none */
	uint8_t *deferred;	/* per block: came back DEFERRED */
	uint8_t last_type;	/* type of the last packet the switch sent us */
	uint8_t stall_reported; /* this stall was described already */
	uint8_t stall_pending;	/* stall_msg not yet taken (engine_stall) */
	char stall_msg[512];
	uint64_t *nzmap;	       /* dense: bit b set when my block b is
					* non-zero, mapped ahead of the lanes */
	uint32_t nzmap_words;	       /* ... words allocated */
	uint32_t mapped;	       /* ... blocks mapped this round */
	struct engine_blocks blk;      /* the block-sparse round's operands */
	uint8_t sparse;		       /* the round is block-sparse (blk) */
	uint8_t next_sparse;	       /* engine_set_blocks() for the next op */
	struct engine_blocks next_blk; /* ... and its operands */
	float next_bound;	       /* engine_set_result_filter(), for the next op */
	uint8_t next_sub_log;	       /* engine_set_cut(), for the next op */
	uint8_t *next_deferred;
	struct lane *lanes;

	/* ssp (cfg.ssp = S): S + 1 rounds in flight at most. */
	struct sop *sops;	    /* S + 1 */
	struct sop_lane *sop_lanes; /* (S + 1) x lanes */
	uint8_t *ssp_ver;	    /* lanes x INA_SSP_SETS(S): version bit of each
				 * lane's slot of each set */
	uint8_t *next_missed;	    /* engine_set_missed(), for the next round */
	uint16_t nb_sops;	    /* rounds in flight */

	/* The replica (cfg.replica.len != 0). */
	uint8_t standby;     /* enum standby */
	uint8_t failed_over; /* the switch followed is the replica */
	uint8_t fo_active;   /* the primary is silent: FAILOVERs go out */
	uint8_t fo_need_send;
	uint32_t fo_tries;
	uint64_t fo_sent_ns;
	uint64_t fo_rto_ns;
	uint64_t sw_heard_ns; /* last packet for this job from the switch
				 * followed (for P: a RESULT through R too) */
	uint64_t probe_ns;    /* last probe of the replica (tx_probe) */

	/* Give-back (a RESULT flagged RESHAPE): from round reshape_round on,
	 * reshape_lanes lanes; 0: none pending. */
	uint16_t reshape_lanes;
	uint32_t reshape_round;

	/* A REDIRECT from the switch (no slots for the job there). */
	uint8_t redirected; /* a REDIRECT came: the target below is set */
	uint32_t redirect_ipv4;
	uint16_t redirect_port;
};

enum standby {
	STANDBY_NONE = 0, /* no replica, or it no longer stands by */
	STANDBY_JOINING,  /* P admitted the job: STANDBY JOIN to R */
	STANDBY_UP,	  /* R stands by */
};

/* Words of the map of non-zero blocks an engine starts with. */
#define ENGINE_NZMAP_WORDS 1024

/* Past the last entry of a lane's chain in a block-sparse list. */
#define LIST_END UINT32_MAX

/* FIN and LEAVE are tried this many times before the engine closes anyway. */
#define CTL_GOODBYE_TRIES 4

static inline int
has_replica(const struct engine *e)
{
	return e->cfg.replica.len != 0;
}

/* The switch this engine talks to: the primary, or the replica after a failover. */
static inline const struct ina_peer *
cur_sw(const struct engine *e)
{
	return e->failed_over ? &e->cfg.replica : &e->cfg.sw;
}

/* The replica stands by: it can take over, and hears the goodbye too. */
static inline int
standing_by(const struct engine *e)
{
	return e->standby == STANDBY_UP && !e->failed_over;
}

/* engine_base.c */
/* Fails the operation with 'err' (enum engine_err or -errno) and a sentence,
 * unless it failed already. */
void engine_fail(struct engine *e, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Starts sending a control packet (JOIN, FIN, LEAVE) in 'phase'. */
void engine_ctl_start(struct engine *e, int phase, uint64_t now);
/* Common header of a worker-sent packet. */
void engine_fill_hdr(const struct engine *e, struct ina_hdr *h, uint8_t type);
/* A round-trip sample into the adaptive retransmission timeout. */
void engine_rtt_sample(struct engine *e, uint64_t sample);
/* Records a current WAIT (its 8-byte missing-ranks payload at 'payload'). */
void engine_note_wait(struct engine *e, const struct ina_hdr *h, const uint8_t *payload,
		      uint64_t now);

/* The cut of a round of blocks of 'block_size' into 2^sub_log sub-blocks:
 * 0 when it is valid for a packet of the engine's pool, else -EINVAL. */
int engine_cut_check(const struct engine *e, uint16_t block_size, uint8_t sub_log);
/* Encodes 'n' floats of block 'src' (with the block's 'scale') as the
 * payload of a DATA after 'hdr' ('h' its header, n_elems set): with sub_log
 * the mask of its non-zero sub-blocks and those only, n_elems 0 when none
 * is. Returns the payload's bytes and sets h->n_elems. A whole block with
 * cfg.work is recorded there, its bytes written when the work runs. */
size_t engine_encode_block(const struct engine *e, uint8_t *payload, struct ina_hdr *h,
			   const float *src, int scale);
/* Decodes a RESULT's payload ('h' n_elems > 0) of 'n' elements into 'dst':
 * with sub_log the present sub-blocks, the absent ones zeroed when
 * 'zero_absent'; the elements written are scaled by 'avg' when not 1.
 * Returns the payload's bytes (where a trailer starts). */
size_t engine_decode_block(const struct engine *e, float *dst, const struct ina_hdr *h,
			   const uint8_t *payload, uint16_t n, int scale, int zero_absent,
			   float avg);

/* engine_ssp.c */
int engine_ssp_allreduce(struct engine *e, uint32_t tensor_id, const float *in, float *out,
			 size_t n, uint16_t block_size, enum engine_op op, uint64_t now);
void engine_ssp_on_result(struct engine *e, const struct ina_hdr *h, const uint8_t *payload,
			  uint64_t now);
void engine_ssp_on_wait(struct engine *e, const struct ina_hdr *h, const uint8_t *payload,
			uint64_t now);
uint16_t engine_ssp_tx(struct engine *e, uint64_t now, struct ina_pkt **out, uint16_t max);
/* The earliest of 'd' and the rounds' retransmission deadlines (0: now). */
uint64_t engine_ssp_deadline(const struct engine *e, uint64_t d);

/* engine_bsp.c */
int engine_bsp_allreduce(struct engine *e, uint32_t tensor_id, const float *in, float *out,
			 size_t n, uint16_t block_size, enum engine_op op, uint64_t now);
/* The data packet of lane 'l' (its block, or an empty answer). */
struct ina_pkt *engine_bsp_build(struct engine *e, uint16_t l, int retx);
void engine_bsp_on_result(struct engine *e, const struct ina_hdr *h, const uint8_t *payload,
			  uint64_t now);
void engine_bsp_on_wait(struct engine *e, const struct ina_hdr *h, const uint8_t *payload,
			uint64_t now);
uint16_t engine_bsp_tx(struct engine *e, uint64_t now, struct ina_pkt **out, uint16_t max);
/* The earliest of 'd' and the lanes' retransmission deadlines (0: now). */
uint64_t engine_bsp_deadline(const struct engine *e, uint64_t d);

/* engine_stall.c */
/* The first lane still waiting for a result. */
uint16_t engine_waiting_lane(const struct engine *e);
/* Where the stall timeout counts from: the last result, or a LIVE WAIT. */
uint64_t engine_progress_since(const struct engine *e);
/* The running operation's timers: describes a stall, fails a dead op. */
void engine_check_progress(struct engine *e, uint64_t now);

/* engine_failover.c */
int engine_fo_sender_ok(const struct engine *e, const struct ina_pkt *pkt, const struct ina_hdr *h,
			int *from_r);
void engine_fo_on_replica_error(struct engine *e, const struct ina_hdr *h, const uint8_t *payload,
				uint32_t len, uint64_t now);
void engine_fo_on_failover(struct engine *e, const struct ina_hdr *h, uint64_t now);
uint16_t engine_fo_tx(struct engine *e, uint64_t now, struct ina_pkt **out, uint16_t max);
uint16_t engine_fo_probe(struct engine *e, uint64_t now, struct ina_pkt **out, uint16_t max);
/* With a replica standing by: the earliest of 'd' and the failover timers. */
uint64_t engine_fo_deadline(const struct engine *e, uint64_t d);

#endif
