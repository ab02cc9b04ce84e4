/* SPDX-License-Identifier: MIT */
/*
 * The pipeline's lower layer (pipeline_int.h), used by every handler above
 * it (pipeline.c, admission.c, replica.c, ssp.c, uplink.c) and calling none
 * of them: the job table, the halves of a slot and their completion, and the
 * packets the switch writes (headers, results, errors, WAITs, the answer to a
 * duplicate).
 */
#include <assert.h>
#include <endian.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h> /* vsnprintf: an ERROR's message */
#include <string.h>

#include "ina/encode.h"
#include "pipeline_int.h"

struct job *
pl_job_search(struct pipeline *p, uint32_t job_id)
{
	struct job *j;

	for (uint16_t i = 0; i < p->cfg.max_jobs; i++) {
		j = &p->jobs[i];
		if (j->active && j->params.job_id == job_id) {
			p->last_job = i;
			return j;
		}
	}
	return NULL;
}

void
pl_job_free(struct pipeline *p, struct job *j)
{
	for (uint32_t k = j->slot_base; k < j->slot_base + j->nb_slots; k++)
		p->slot_owner[k] = 0;
	p->free_slots += j->nb_slots;
	j->active = 0;
	p->nb_jobs--;
	p->st.jobs_freed++;
	pl_event(p, &(struct pipeline_event){ .kind = PEV_FREED,
					      .job_id = j->params.job_id,
					      .slots = j->nb_slots });
}

/* Writes a switch-sent header for 'j' into 'pkt'; the payload follows. */
void
pl_put_hdr(struct ina_pkt *pkt, const struct job *j, uint8_t type, const struct ina_hdr *tmpl)
{
	struct ina_hdr h;

	if (tmpl)
		h = *tmpl;
	else
		memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = type;
	h.rank = INA_RANK_SWITCH;
	h.bound = 0; /* only a DATA packet carries one */
	h.status = 0;
	if (j) {
		h.job_id = j->params.job_id;
		h.epoch = j->params.epoch;
		h.token = j->params.token;
		h.encoding = j->params.encoding;
	}
	ina_wire_encode_hdr(&h, pkt->data);
	pkt->len = INA_HDR_SIZE;
}

/*
 * The buffer for an answer to 'in' of 'size' bytes: 'in' itself when it fits
 * (the received buffer is reused, as a switch rewrites a packet in place),
 * else a fresh one. The answer goes back to the sender unless changed.
 */
struct ina_pkt *
pl_answer_buf(struct pipeline *p, struct ina_pkt *in, uint32_t size)
{
	struct ina_pkt *o = in;

	if (in->cap < size) {
		o = ina_pkt_alloc(p->cfg.pool);
		if (o && o->cap < size) {
			/* (a union of sub-blocks' masks larger than any packet
			 * of the pool: counted, never written past the buffer) */
			ina_pkt_free(o);
			o = NULL;
		}
		if (!o) {
			p->st.drop[PDROP_NO_BUFFER]++;
			ina_pkt_free(in);
			return NULL;
		}
		o->peer = in->peer;
		ina_pkt_free(in);
	}
	o->dsts = NULL;
	o->dst_mask = 0;
	return o;
}

/* Writes an ERROR of job 'job_id' with status 'code' and text 'msg' (n
 * bytes, at most INA_ERROR_MSG_MAX) into 'o'. */
void
pl_put_error(struct ina_pkt *o, uint32_t job_id, uint64_t token, uint8_t encoding, uint16_t code,
	     const char *msg, size_t n)
{
	struct ina_hdr h;

	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = INA_T_ERROR;
	h.encoding = encoding;
	h.job_id = job_id;
	h.token = token;
	h.rank = INA_RANK_SWITCH;
	h.status = code;
	ina_wire_encode_hdr(&h, o->data);
	memcpy(o->data + INA_HDR_SIZE, msg, n);
	o->len = INA_HDR_SIZE + (uint32_t)n;
}

struct ina_pkt *
pl_send_error(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *rx, uint16_t code,
	      const char *fmt, ...)
{
	char msg[INA_ERROR_MSG_MAX + 1];
	struct ina_pkt *o;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n > INA_ERROR_MSG_MAX)
		n = INA_ERROR_MSG_MAX;
	o = pl_answer_buf(p, in, INA_HDR_SIZE + INA_ERROR_MSG_MAX);
	if (!o)
		return NULL;
	pl_put_error(o, rx->job_id, rx->token, rx->encoding, code, msg, (size_t)n);
	pl_event(p, &(struct pipeline_event){ .kind = PEV_REFUSED,
					      .job_id = rx->job_id,
					      .rank = rx->rank,
					      .status = code,
					      .text = msg,
					      .text_len = (uint32_t)n });
	return o;
}

/* The payload of a RESULT and what follows it, after its header ('n'
 * elements); with 'in_place', the payload is already there
 * (pl_half_add_last()). */
static void
put_result_body(struct ina_pkt *o, const struct job *j, const struct half *hf, uint16_t n,
		int in_place)
{
	if (j->reshape_lanes && hf->key.round + 1u >= j->reshape_round) {
		/* Give-back (--share fair): from round reshape_round on, the job
		 * runs on reshape_lanes lanes; marked from the round before. */
		uint16_t st_be = htobe16(j->reshape_lanes);
		uint32_t bound_be = htobe32(j->reshape_round);

		o->data[offsetof(struct ina_wire_hdr, flags)] |= INA_F_RESHAPE;
		memcpy(o->data + offsetof(struct ina_wire_hdr, status), &st_be, sizeof(st_be));
		memcpy(o->data + offsetof(struct ina_wire_hdr, bound), &bound_be, sizeof(bound_be));
	}
	if (n && hf->key.sub_log) {
		/* The union's mask and its sub-blocks' sums (2.7). */
		o->len += in_place ? pl_sub_bytes(j, hf)
				   : pl_sub_store(j, hf, o->data + INA_HDR_SIZE);
	} else if (n) {
		/* For bf16, the one rounding of the binary32 sum. */
		if (!in_place)
			j->enc->store(o->data + INA_HDR_SIZE, hf->acc.f32, n);
		o->len += (uint32_t)(n * j->enc->elem_size);
	}
	if (hf->partial) {
		/* ssp: who the sum holds, after the payload (docs/PROTOCOL.md 6.7). */
		uint64_t contrib_be = htobe64(hf->bitmap);

		memcpy(o->data + o->len, &contrib_be, sizeof(contrib_be));
		o->len += INA_PARTIAL_TRAILER;
	}
}

static inline uint8_t
result_flags(uint8_t ver, const struct half *hf)
{
	return (uint8_t)(ver | (hf->saturated ? INA_F_SATURATED : 0) |
			 (hf->deferred ? INA_F_DEFERRED : 0) | (hf->partial ? INA_F_PARTIAL : 0));
}

static inline uint16_t
result_elems(const struct half *hf)
{
	if (!hf->has_data || hf->deferred)
		return 0;
	return ina_wire_block_elems(hf->key.tensor_len, hf->key.block_size, hf->key.block);
}

/* The header of the RESULT of 'hf', before pl_put_hdr() adds the job's. */
static void
result_hdr(struct ina_hdr *h, uint16_t lane, uint8_t ver, const struct half *hf)
{
	memset(h, 0, sizeof(*h));
	h->flags = result_flags(ver, hf);
	h->lane = lane;
	h->tensor_id = hf->key.tensor_id;
	h->round = hf->key.round;
	h->tensor_len = hf->key.tensor_len;
	h->block = hf->key.block;
	h->block_size = hf->key.block_size;
	h->sub_log = hf->key.sub_log;
	h->next = hf->next;
	h->exp = hf->next == INA_BLOCK_END ? 0 : hf->exp;
	h->n_elems = result_elems(hf);
}

void
pl_put_result(const struct pipeline *p, struct ina_pkt *o, const struct job *j, uint16_t lane,
	      uint8_t ver, const struct half *hf)
{
	struct ina_hdr h;

	(void)p;
	result_hdr(&h, lane, ver, hf);
	pl_put_hdr(o, j, INA_T_RESULT, &h);
	put_result_body(o, j, hf, h.n_elems, 0);
}

/*
 * The header of a RESULT differs from that of the DATA it answers (checked
 * against the job, naming the same block and lane) only in these fields:
 * they are written over it, and the rest (version, encoding, job, epoch,
 * token, lane, the block's key) stays as it came.
 */
void
pl_put_result_over_data(struct ina_pkt *o, const struct job *j, uint8_t ver, const struct half *hf,
			int in_place)
{
	uint8_t *d = o->data;
	uint16_t n = result_elems(hf);
	uint16_t rank_be = htobe16(INA_RANK_SWITCH), n_be = htobe16(n);
	uint16_t exp_be = htobe16((uint16_t)(hf->next == INA_BLOCK_END ? 0 : hf->exp));
	uint32_t next_be = htobe32(hf->next), zero = 0;

	d[offsetof(struct ina_wire_hdr, type)] = INA_T_RESULT;
	d[offsetof(struct ina_wire_hdr, flags)] = result_flags(ver, hf);
	memcpy(d + offsetof(struct ina_wire_hdr, rank), &rank_be, sizeof(rank_be));
	memcpy(d + offsetof(struct ina_wire_hdr, next), &next_be, sizeof(next_be));
	memcpy(d + offsetof(struct ina_wire_hdr, n_elems), &n_be, sizeof(n_be));
	memcpy(d + offsetof(struct ina_wire_hdr, exp), &exp_be, sizeof(exp_be));
	/* status (2 bytes) and bound (4), adjacent: 0 in a RESULT */
	_Static_assert(offsetof(struct ina_wire_hdr, bound) ==
			       offsetof(struct ina_wire_hdr, status) + 2,
		       "status and bound adjacent");
	memcpy(d + offsetof(struct ina_wire_hdr, status), &zero, 2);
	memcpy(d + offsetof(struct ina_wire_hdr, bound), &zero, 4);
	o->len = INA_HDR_SIZE;
#ifndef NDEBUG
	{
		/* Debug builds: the header is the one pl_put_result() writes. */
		struct ina_pkt t = { .data = (uint8_t[INA_HDR_SIZE]){ 0 }, .cap = INA_HDR_SIZE };
		struct ina_hdr h;
		uint16_t lane_be;

		memcpy(&lane_be, d + offsetof(struct ina_wire_hdr, lane), sizeof(lane_be));
		result_hdr(&h, be16toh(lane_be), ver, hf);
		pl_put_hdr(&t, j, INA_T_RESULT, &h);
		assert(memcmp(t.data, d, INA_HDR_SIZE) == 0);
	}
#endif
	put_result_body(o, j, hf, n, in_place);
}

void
pl_count_result(struct pipeline *p, const struct ina_pkt *o, const struct half *hf,
		uint32_t trailer)
{
	p->st.results++;
	if (!hf->has_data)
		p->st.results_empty++;
	if (hf->deferred)
		p->st.results_deferred++;
	p->st.result_bytes += o->len - INA_HDR_SIZE - trailer;
}

/*
 * Addresses the RESULT just written into 'o' to 'rank', or with INA_RANK_ALL
 * to every rank of 'j' (a unicast keeps o->peer, the sender of the DATA it
 * answers). A primary sends it instead as one REPL to its replica, the rank
 * in the header: the replica stores it and sends it on.
 */
void
pl_result_route(struct pipeline *p, struct ina_pkt *o, struct job *j, uint16_t rank)
{
	if (p->cfg.replica.len) {
		uint16_t rank_be = htobe16(rank);

		o->data[offsetof(struct ina_wire_hdr, type)] = INA_T_REPL;
		memcpy(o->data + offsetof(struct ina_wire_hdr, rank), &rank_be, sizeof(rank_be));
		o->peer = p->cfg.replica;
		o->dsts = NULL;
		o->dst_mask = 0;
		p->st.replicated++;
	} else if (rank == INA_RANK_ALL) {
		o->dsts = j->peers;
		o->dst_mask = j->full;
	}
}

/* The result filter: a finished sum whose every element is under the
 * smallest bound its packets announced goes down header-only, DEFERRED, and
 * each worker keeps its own part. A saturated sum is never deferred. */
int
pl_half_deferred(const struct job *j, const struct half *hf)
{
	uint16_t n;

	if (!hf->has_data || hf->saturated || hf->bound == 0 || hf->bound == UINT32_MAX)
		return 0;
	if (hf->key.sub_log)
		return pl_sub_deferred(j, hf); /* the union's sub-blocks only */
	n = ina_wire_block_elems(hf->key.tensor_len, hf->key.block_size, hf->key.block);
	return j->enc->deferred(hf->acc.f32, n, hf->bound);
}

/* Of 'ranks' (those a block waits on), the ones silent for the peer
 * timeout: dead. Only partition 0 decides (it frees jobs for all). */
static uint64_t
silent_ranks(const struct pipeline *p, const struct job *j, uint64_t ranks, uint64_t now)
{
	uint64_t dead = 0;

	if (!p->cfg.peer_timeout_ns || p->cfg.part_index != 0)
		return 0;
	for (uint16_t r = 0; r < j->params.world; r++)
		if ((ranks >> r & 1) && now - j->heard_ns[r] >= p->cfg.peer_timeout_ns)
			dead |= 1ull << r;
	return dead;
}

/*
 * A rank died while the others wait on it: every other rank gets an ERROR
 * naming it (one fan-out, answering the packet of the rank that asked), and
 * the job is freed at the next tick, in every partition (pipeline_tick_freed
 * reports it). The round is lost: no partial sum is ever sent.
 */
static struct ina_pkt *
abort_job(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h,
	  uint64_t dead, uint64_t now)
{
	uint16_t r = (uint16_t)__builtin_ctzll(dead);
	uint64_t others = j->joined & ~j->finished & ~dead;
	uint64_t silent_ms = (now - j->heard_ns[r]) / 1000000u;
	struct ina_pkt *o;

	p->st.jobs_aborted++;
	j->aborted = 1;
	pl_event(p, &(struct pipeline_event){ .kind = PEV_RANK_DEAD,
					      .job_id = j->params.job_id,
					      .other_rank = r,
					      .ms = silent_ms,
					      .rank = h->rank,
					      .lane = h->lane,
					      .block = h->block,
					      .round = h->round });
	o = pl_send_error(p, in, h, INA_WERR_PEER_DEAD,
			  "job %" PRIu32 ": rank %u silent for %" PRIu64 " ms%s; round %" PRIu32
			  " aborted, the job is gone (re-join to go on)",
			  j->params.job_id, r, silent_ms,
			  dead & (dead - 1) ? " (and other ranks)" : "", h->round);
	if (o) {
		o->dsts = j->peers;
		o->dst_mask = others;
	}
	return o;
}

static struct ina_pkt *
send_wait(struct pipeline *p, struct ina_pkt *in, const struct job *j, struct slot *s,
	  const struct half *hf, const struct ina_hdr *rx, uint64_t now)
{
	struct ina_hdr h = *rx;
	struct ina_pkt *o;
	uint64_t missing_be;
	uint64_t bit = 1ull << rx->rank; /* rank < world <= 64: wire.c */
	int fresh = !s->waited || now - s->last_wait_ns >= p->cfg.wait_interval_ns;

	/* At most one WAIT a rank a slot each wait_interval: limited per
	 * slot alone, one rank's retransmissions could take every answer
	 * and starve another waiting rank until its silence timeout. */
	if (!fresh && (s->wait_told & bit)) {
		ina_pkt_free(in);
		return NULL;
	}
	o = pl_answer_buf(p, in, INA_HDR_SIZE + INA_WAIT_PAYLOAD);
	if (!o)
		return NULL;
	if (fresh) {
		s->last_wait_ns = now;
		s->wait_told = 0;
	}
	s->wait_told |= bit;
	s->waited = 1;
	h.flags = s->cur;
	h.n_elems = 0;
	h.next = INA_BLOCK_END;
	h.exp = 0;
	pl_put_hdr(o, j, INA_T_WAIT, &h);
	/* The ranks named are alive as far as this switch enforces it: past
	 * the peer timeout it would have aborted the job instead (5.7). */
	if (p->cfg.peer_timeout_ns && p->cfg.part_index == 0) {
		uint16_t live_be = htobe16(INA_WAIT_LIVE);

		memcpy(o->data + offsetof(struct ina_wire_hdr, status), &live_be, sizeof(live_be));
	}
	missing_be = htobe64(j->full & ~hf->bitmap);
	memcpy(o->data + INA_HDR_SIZE, &missing_be, sizeof(missing_be));
	o->len += INA_WAIT_PAYLOAD;
	p->st.waits++;
	return o;
}

struct ina_pkt *
pl_duplicate(struct pipeline *p, struct ina_pkt *in, struct job *j, struct slot *s,
	     const struct half *hf, const struct ina_hdr *h, uint64_t now)
{
	uint64_t dead = silent_ranks(p, j, j->full & ~hf->bitmap, now);

	p->st.duplicates++;
	if (dead)
		return abort_job(p, in, j, h, dead, now);
	return send_wait(p, in, j, s, hf, h, now);
}

/* How long a job lingers after a FIN: a standby job longer (standby_linger_ns). */
uint64_t
pl_job_linger_ns(const struct pipeline *p, const struct job *j)
{
	if (j->standby && p->cfg.standby_linger_ns > p->cfg.linger_ns)
		return p->cfg.standby_linger_ns;
	return p->cfg.linger_ns;
}
