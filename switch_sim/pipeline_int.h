/* SPDX-License-Identifier: MIT */
/*
 * The pipeline's inside, shared by its files and by nothing else (but the
 * programs' dump, pipeline_dump.c): slots, halves, jobs, and the lower
 * layer's helpers (slots.c) that every handler uses to write packets and to
 * complete a slot. The layers: pipeline.c dispatches a packet to admission.c,
 * replica.c, ssp.c or uplink.c; all of them use slots.c, which calls none.
 */
#ifndef INA_PIPELINE_INT_H
#define INA_PIPELINE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ina/pkt.h"
#include "ina/encode.h"
#include "ina/encoding.h"
#include "ina/subblock.h"
#include "ina/wire.h"
#include "pipeline.h"

enum half_state {
	HALF_IDLE = 0, /* no block: the lane is between rounds */
	HALF_AGG,      /* aggregating the lane's open block */
	HALF_RESULT,   /* a finished block: the shadow copy */
	HALF_UP,       /* a rack's block complete here: the partial
				 * sum went upstream, the half waits for the
				 * spine's RESULT (uplink.h) */
};

/* What identifies one block of one round; matched exactly. */
struct block_key {
	uint32_t tensor_id;
	uint32_t round;
	uint32_t tensor_len;
	uint32_t block;
	uint16_t block_size; /* B */
	uint8_t sub_log;     /* the cut (docs/PROTOCOL.md 2.7): another cut of
				 * the same block never adds into it */
};

struct half {
	uint8_t state;	  /* enum half_state */
	uint8_t has_data; /* some rank sent a payload */
	uint8_t saturated;
	uint8_t deferred; /* the finished sum went down DEFERRED */
	uint8_t partial;  /* ssp: closed before every rank contributed
				 * (ssp.c); 'bitmap' names the contributors */
	int16_t exp;	  /* largest exponent announced for 'next' */
	uint32_t bound;	  /* smallest raw result-filter bound announced
				 * (encode.h: raw bounds order like bounds) */
	struct block_key key;
	uint32_t next;		  /* smallest next pointer announced */
	uint64_t bitmap;	  /* ranks that answered */
	uint64_t acked;		  /* ssp: ranks known to hold this result: they
				 * sent a round S + 1 or more later in the
				 * lane (ssp.c) */
	struct ina_sub_mask mask; /* key.sub_log > 0: the union of the masks
				 * added; only its sub-blocks of 'acc' hold
				 * values (subsum.c) */
	union {			  /* slot_elems accumulators */
		float *f32;
		int32_t *i32;
	} acc;
};

struct slot {
	uint8_t cur;	       /* version bit of the current half */
	uint8_t has_round;     /* 'last_round' is set */
	uint8_t waited;	       /* 'last_wait_ns' is set */
	uint32_t last_round;   /* the lane's last finished round */
	uint64_t last_wait_ns; /* when the current WAIT interval began */
	uint64_t wait_told;    /* ranks sent a WAIT in that interval: one
				* each an interval, so no rank that asks
				* goes unanswered (slots.c send_wait) */
	struct half h[2];      /* h[v] has version bit v */
};

struct job {
	uint8_t active;
	struct ina_job_params params;
	struct ina_job_key key;		    /* tenant mode: the job's (auth.h) */
	const struct ina_encoding_ops *enc; /* the row of params.encoding */
	uint32_t slot_base;		    /* first of nb_slots slots; lane l is in
				 * slot_base + l / part_count */
	uint16_t nb_slots;		    /* ceil(lanes / part_count) (x sets under ssp) */
	uint16_t want_lanes;		    /* lanes the JOIN asked; params.lanes is the
				 * grant, fewer under --share fair */
	uint8_t weight;			    /* in the fair share (JOIN payload; 0 counts
				 * as 1), echoed in the JOIN_ACK */
	uint8_t has_max_round;		    /* 'max_round' is set */
	uint32_t max_round;		    /* the highest round of any DATA so far */
	uint16_t reshape_lanes;		    /* give-back: the lanes from 'reshape_round' on;
				 * 0: none pending. Until every rank sent a
				 * DATA of that round ('moved'), params.lanes
				 * stays the old count and the tail slots stay */
	uint32_t reshape_round;
	uint64_t moved;
	uint64_t full; /* bitmap of all ranks */
	uint64_t joined;
	uint64_t finished;     /* ranks that sent FIN */
	uint64_t linger_until; /* 0: not lingering */
	uint64_t last_active_ns;
	uint8_t aborted;    /* a rank died: freed at the next tick */
	uint8_t standby;    /* a replica's job, standing by for the primary */
	uint8_t taken_over; /* a replica's job taken over: 'old_epoch' is
				 * the primary's epoch, answered with the
				 * announcement of the new one */
	uint32_t old_epoch;
	uint8_t ssp;			  /* 0: bsp; S: ssp:S, S + 2 slots per lane (ssp.h) */
	uint8_t up;			  /* a rack's job: enum uplink_state (uplink.h) */
	uint16_t up_rank;		  /* the rack's rank in the spine's job */
	uint16_t up_world;		  /* the spine's world (racks) */
	uint32_t up_epoch;		  /* the epoch the spine gave the job */
	uint64_t up_cookie;		  /* the spine's JOIN cookie for the rack
					   * (PROTOCOL 5.1), 0 until it sends one */
	uint64_t heard_ns[INA_MAX_WORLD]; /* last packet from each rank (from
						 * admission for a rank not heard yet) */
	struct ina_peer peers[INA_MAX_WORLD];
};

/* A job sent to the host aggregator: its later JOINs go there too, even
 * if slots were freed meanwhile, so that its ranks never split. */
struct redirected {
	uint32_t job_id;
	uint64_t token;
	uint64_t until_ns; /* remembered until then; 0: empty */
};

#define PL_REDIRECTED 64 /* jobs remembered */
#define PL_REDIRECT_MEMORY_NS (60ull * 1000000000ull)

struct pipeline {
	struct pipeline_config cfg;
	struct pipeline_stats st;
	struct slot *slots;
	float *acc_mem;	      /* 2 * nb_slots * slot_elems accumulators */
	uint16_t *slot_owner; /* job index + 1, or 0 when free */
	uint32_t free_slots;
	struct job *jobs;
	uint16_t nb_jobs;
	uint16_t last_job; /* lookup cache */
	uint32_t next_epoch;
	uint8_t draining;	   /* pipeline_drain(): no new job is admitted */
	struct share_job *share;   /* max_jobs + 1 entries (--share fair) */
	struct reply_limit *limit; /* per-source budget of ERRORs to JOINs
				    * and shadow replies */
	struct redirected redirected[PL_REDIRECTED];
	uint16_t next_redirected; /* the entry the next one overwrites
					 * when none is free */
	uint8_t waiting;	  /* a JOIN waits for slots given back */
	uint32_t wait_job_id;
	uint64_t wait_token;
	uint64_t wait_since_ns;
};

/* Reports 'ev' to the program (pipeline_config.on_event), if it listens. */
static inline void
pl_event(const struct pipeline *p, const struct pipeline_event *ev)
{
	if (p->cfg.on_event)
		p->cfg.on_event(p->cfg.event_ctx, ev);
}

/* The active job 'job_id', or NULL: the one found last without a call
 * (nearly every packet is of it), else a search of the table. */
struct job *pl_job_search(struct pipeline *p, uint32_t job_id);
static inline struct job *
pl_job_find(struct pipeline *p, uint32_t job_id)
{
	struct job *j = &p->jobs[p->last_job];

	return j->active && j->params.job_id == job_id ? j : pl_job_search(p, job_id);
}
void pl_job_free(struct pipeline *p, struct job *j);
/* Writes a switch-sent header for 'j' into 'pkt'; the payload follows. */
void pl_put_hdr(struct ina_pkt *pkt, const struct job *j, uint8_t type, const struct ina_hdr *tmpl);
/* The buffer for an answer to 'in' of 'size' bytes ('in' itself when it
 * fits), addressed to the sender of 'in'; NULL (counted) when none. */
struct ina_pkt *pl_answer_buf(struct pipeline *p, struct ina_pkt *in, uint32_t size);
/* Writes the result kept in half 'hf' of lane 'lane' into 'o'. */
void pl_put_result(const struct pipeline *p, struct ina_pkt *o, const struct job *j, uint16_t lane,
		   uint8_t ver, const struct half *hf);
/* The same into 'o', the buffer of the DATA packet that completed 'hf' (its
 * header checked against 'j' and naming hf's block and lane): only the
 * header's fields a RESULT changes are written; with 'in_place' the payload
 * is already the sums (pl_half_add_last()). */
void pl_put_result_over_data(struct ina_pkt *o, const struct job *j, uint8_t ver,
			     const struct half *hf, int in_place);
/* Counts the RESULT in 'o' of half 'hf' ('trailer': bytes after its sums
 * that are not payload, an ssp PARTIAL's). */
void pl_count_result(struct pipeline *p, const struct ina_pkt *o, const struct half *hf,
		     uint32_t trailer);
/* Addresses the RESULT in 'o' to 'rank', or to every rank (INA_RANK_ALL). */
void pl_result_route(struct pipeline *p, struct ina_pkt *o, struct job *j, uint16_t rank);
/* 1 when the finished sum of 'hf' goes down DEFERRED (the result filter). */
int pl_half_deferred(const struct job *j, const struct half *hf);
/* The answer to a duplicate for the open half 'hf' of 's': a WAIT naming
 * the ranks missing (rate-limited), or ERROR PEER_DEAD when one is silent
 * for the peer timeout. */
struct ina_pkt *pl_duplicate(struct pipeline *p, struct ina_pkt *in, struct job *j, struct slot *s,
			     const struct half *hf, const struct ina_hdr *h, uint64_t now);
/* The largest RESULT of a block of 'elems' elements of 'elem_size' bytes
 * cut into 2^sub_log sub-blocks: its mask with sub-blocks, every element,
 * and room for an ssp job's PARTIAL trailer. Admission (with the job's
 * largest B, uncut) and every DATA (pl_result_size()) both check it
 * against the switch's packets. */
static inline uint64_t
pl_result_bytes(uint32_t elems, size_t elem_size, uint8_t sub_log, int ssp)
{
	return (uint64_t)INA_HDR_SIZE + ina_wire_mask_bytes(sub_log) + (uint64_t)elems * elem_size +
	       (ssp ? INA_PARTIAL_TRAILER : 0);
}
/* pl_result_bytes() for a block of size h->block_size in j's encoding. */
static inline uint32_t
pl_result_size(const struct job *j, const struct ina_hdr *h)
{
	return (uint32_t)pl_result_bytes(h->block_size, j->enc->elem_size, h->sub_log, j->ssp);
}
/* Writes an ERROR of job 'job_id' with status 'code' and text 'msg' (n
 * bytes, at most INA_ERROR_MSG_MAX) into 'o'. */
void pl_put_error(struct ina_pkt *o, uint32_t job_id, uint64_t token, uint8_t encoding,
		  uint16_t code, const char *msg, size_t n);
/* Answers 'in' (header 'rx') with an ERROR 'code' whose text is formatted
 * from 'fmt', reported as a PEV_REFUSED event; NULL (counted) when no buffer. */
struct ina_pkt *pl_send_error(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *rx,
			      uint16_t code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* How long a job lingers after a FIN: a standby job longer. */
uint64_t pl_job_linger_ns(const struct pipeline *p, const struct job *j);

/* The block a packet's header names. */
static inline struct block_key
pl_key_of(const struct ina_hdr *h)
{
	struct block_key k = {
		.tensor_id = h->tensor_id,
		.round = h->round,
		.tensor_len = h->tensor_len,
		.block = h->block,
		.block_size = h->block_size,
		.sub_log = h->sub_log,
	};
	return k;
}

/* The per-packet helpers of the lanes, inline: every handler calls them on
 * its hot path. */

static inline void
pl_half_open(struct half *hf, const struct block_key *key)
{
	hf->state = HALF_AGG;
	hf->key = *key;
	hf->bitmap = 0;
	hf->has_data = 0;
	hf->saturated = 0;
	hf->deferred = 0;
	hf->partial = 0;
	hf->acked = 0;
	hf->mask.w[0] = 0;
	hf->mask.w[1] = 0;
	hf->bound = UINT32_MAX;
	hf->next = INA_BLOCK_END;
	hf->exp = INA_EXP_ZERO;
}

/*
 * Block completion: half 'ver' of 's' holds a finished block. It becomes the
 * lane's shadow and the version flips; the other half opens for the
 * announced next block, or idles until the next round's opener when that is
 * END. Every finished block comes here, aggregated in this switch or stored
 * by a replica from its primary's REPL.
 */
static inline void
pl_slot_complete(struct slot *s, uint8_t ver)
{
	struct half *hf = &s->h[ver];

	hf->state = HALF_RESULT;
	s->cur = ver ^ 1;
	if (hf->next == INA_BLOCK_END) {
		s->h[s->cur].state = HALF_IDLE;
		s->has_round = 1;
		s->last_round = hf->key.round;
	} else {
		struct block_key key = hf->key;

		key.block = hf->next;
		pl_half_open(&s->h[s->cur], &key);
	}
	s->waited = 0;
}

static inline int
pl_key_equal(const struct block_key *a, const struct block_key *b)
{
	return a->tensor_id == b->tensor_id && a->round == b->round && a->block == b->block &&
	       a->tensor_len == b->tensor_len && a->block_size == b->block_size &&
	       a->sub_log == b->sub_log;
}

/* pl_key_equal(k, pl_key_of(h)) without the key made on the stack: the
 * fast path's compare (a key built field by field and read back as wider
 * words stalls the store forwarding, ~20 cycles a packet). */
static inline int
pl_key_is(const struct block_key *k, const struct ina_hdr *h)
{
	return k->tensor_id == h->tensor_id && k->round == h->round && k->block == h->block &&
	       k->tensor_len == h->tensor_len && k->block_size == h->block_size &&
	       k->sub_log == h->sub_log;
}

/* Same block named, but a tensor length, block size or cut that disagrees. */
static inline int
pl_key_shape_differs(const struct block_key *a, const struct block_key *b)
{
	return a->tensor_id == b->tensor_id && a->round == b->round && a->block == b->block &&
	       (a->tensor_len != b->tensor_len || a->block_size != b->block_size ||
		a->sub_log != b->sub_log);
}

/* What the packet's header says to the open half: its rank answered, its
 * result-filter bound, its next pointer and that block's exponent. */
static inline void
pl_half_note(struct half *hf, const struct ina_hdr *h)
{
	hf->bitmap |= 1ull << h->rank;
	if (h->bound < hf->bound)
		hf->bound = h->bound;
	if (h->next < hf->next) {
		hf->next = h->next;
		hf->exp = h->exp;
	} else if (h->next == hf->next && h->exp > hf->exp) {
		hf->exp = h->exp;
	}
}

static inline void
pl_half_saturated(struct pipeline *p, struct half *hf, size_t sat)
{
	if (sat) {
		hf->saturated = 1;
		p->st.saturated += sat;
	}
}

/*
 * Sub-blocks in a half (subsum.c). pl_sub_add() adds a payload's present
 * sub-blocks (loaded where the union lacks them) and widens the union;
 * pl_sub_add_last() does the same and, when the packet's mask holds the
 * whole union, stores the sums over its values and returns 1 (the payload is
 * the RESULT's), else returns 0. pl_half_load() sets a half's accumulator
 * and union from a stored result's payload (REPL, a spine's RESULT), with or
 * without sub-blocks. pl_sub_store() writes the union's mask and sums as a
 * payload and returns its bytes; pl_sub_bytes() is that size;
 * pl_sub_deferred() is the result filter on the union's sub-blocks.
 */
void pl_sub_add(struct pipeline *p, const struct job *j, struct half *hf, const struct ina_hdr *h,
		const uint8_t *payload);
int pl_sub_add_last(struct pipeline *p, const struct job *j, struct half *hf,
		    const struct ina_hdr *h, uint8_t *payload);
void pl_half_load(const struct job *j, struct half *hf, const struct ina_hdr *h,
		  const uint8_t *payload);
uint32_t pl_sub_store(const struct job *j, const struct half *hf, uint8_t *payload);
uint32_t pl_sub_bytes(const struct job *j, const struct half *hf);
int pl_sub_deferred(const struct job *j, const struct half *hf);

/* Adds the packet's contribution to the open half. */
static inline void
pl_half_add(struct pipeline *p, const struct job *j, struct half *hf, const struct ina_hdr *h,
	    const uint8_t *payload)
{
	pl_half_note(hf, h);
	if (h->n_elems) {
		if (h->sub_log)
			pl_sub_add(p, j, hf, h, payload);
		else if (!hf->has_data)
			j->enc->load(hf->acc.f32, payload, h->n_elems);
		else
			pl_half_saturated(p, hf, j->enc->add(hf->acc.f32, payload, h->n_elems));
		hf->has_data = 1;
	}
}

/*
 * The same for the packet that completes the half, whose buffer will carry
 * the result: when it brings a payload to a sum of others, the sums also go
 * into its payload, in wire order, in the same pass (the RESULT's payload,
 * pl_put_result_in_place()); returns 1 then, 0 when it only did what
 * pl_half_add() does (with sub-blocks also when its mask lacks some of the
 * union's: the result is stored then). The caller checks that the RESULT
 * fits the buffer.
 */
static inline int
pl_half_add_last(struct pipeline *p, const struct job *j, struct half *hf, const struct ina_hdr *h,
		 uint8_t *payload)
{
	if (!h->n_elems || !hf->has_data) {
		pl_half_add(p, j, hf, h, payload);
		return 0;
	}
	pl_half_note(hf, h);
	if (h->sub_log)
		return pl_sub_add_last(p, j, hf, h, payload);
	pl_half_saturated(p, hf, j->enc->add_store(hf->acc.f32, payload, h->n_elems));
	return 1;
}

#endif
