/* SPDX-License-Identifier: MIT */
/*
 * The aggregation pipeline (pipeline.h). A job owns a contiguous run of slots,
 * one per lane it owns (all lanes, or those of this partition). A slot has two halves, one per version bit: the current half
 * aggregates the lane's open block, the other (the shadow) keeps the last
 * result so that a retransmission is answered from it, to its sender alone.
 * Completion is by count: when every rank of the job has answered the open
 * block, the sum goes to all of them with the smallest next pointer announced,
 * and the halves swap roles. Time comes in as an argument; nothing here reads
 * a clock or allocates after pipeline_create().
 *
 * A replica keeps a standby job's slots exactly as the primary's completions
 * leave them: each stored REPL goes through the same pl_slot_complete() as a
 * block finished here, so a takeover only changes the epoch.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h> /* snprintf: pipeline_config_fit_port()'s reason */
#include <stdlib.h>
#include <string.h>

#include "ina/auth.h"
#include "ina/encode.h"
#include "ina/lane.h"
#include "ina/util.h"
#include "pipeline.h"
#include "admission.h"
#include "pipeline_int.h"
#include "replica.h"
#include "reply_limit.h"
#include "ssp.h"
#include "uplink.h"

_Static_assert(offsetof(struct ina_wire_hdr, type) == 1 &&
		       offsetof(struct ina_wire_hdr, lane) == 14,
	       "pipeline_steer() reads these bytes");

static const char *const drop_names[PDROP_MAX] = {
	[PDROP_UNKNOWN_JOB] = "unknown_job",
	[PDROP_NOT_JOINED] = "not_joined",
	[PDROP_NO_MATCH] = "no_match",
	[PDROP_SHAPE] = "shape_mismatch",
	[PDROP_UNEXPECTED] = "unexpected_type",
	[PDROP_NO_BUFFER] = "no_buffer",
	[PDROP_AFTER_FIN] = "after_fin",
	[PDROP_JOIN_LINGER] = "join_while_lingering",
	[PDROP_OTHER_PART] = "other_partition",
	[PDROP_ABORTED] = "job_aborted",
	[PDROP_STANDBY] = "standby",
	[PDROP_NOT_PRIMARY] = "not_primary",
	[PDROP_NOT_STANDBY] = "not_standby",
	[PDROP_TAKEN_OVER] = "taken_over",
	[PDROP_UP_STALE] = "uplink_stale",
	[PDROP_SSP_SHAPE] = "ssp_shape",
	[PDROP_SSP_AHEAD] = "ssp_ahead",
	[PDROP_SSP_HOLD] = "ssp_hold",
	[PDROP_JOIN_WAIT] = "join_wait",
	[PDROP_WRONG_ADDR] = "wrong_address",
	[PDROP_JOIN_UNPROVEN] = "join_unproven",
	[PDROP_RATE_LIMITED] = "rate_limited",
	[PDROP_AUTH] = "auth_fail",
	[PDROP_RANK_MOVED] = "rank_moved",
	[PDROP_TOO_BIG] = "result_too_big",
};

const char *
pipeline_drop_name(enum pipeline_drop d)
{
	return d < PDROP_MAX ? drop_names[d] : "unknown";
}

void
pipeline_config_init(struct pipeline_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nb_slots = 1024;
	cfg->slot_elems = INA_SLOT_ELEMS_DEFAULT;
	cfg->max_jobs = 64;
	cfg->linger_ns = 1000000000ull;
	cfg->standby_linger_ns = 10000000000ull;
	cfg->wait_interval_ns = 1000000ull;
	cfg->job_idle_ns = 300ull * 1000000000ull;
	cfg->peer_timeout_ns = 8ull * 1000000000ull;
	cfg->part_index = 0;
	cfg->part_count = 1;
	cfg->share.policy = SHARE_FIRST_COME;
	cfg->share.total = 0;
	cfg->share.min_slots = 1;
	cfg->share_wait_ns = 2000000000ull;
	cfg->reply_rate = 20000;
	cfg->reply_burst = 1024;
}

int
pipeline_config_fit_port(struct pipeline_config *pipe, int slot_elems_set, uint32_t max_pkt,
			 char *err, size_t err_size)
{
	/* Sized for the smallest element (bf16, 2 bytes): an f32 job gets the
	 * blocks its packets carry, a bf16 job twice as many elements; the
	 * pipeline refuses a job whose RESULT would not fit (max_pkt). */
	pipe->max_pkt = max_pkt;
	if ((uint64_t)INA_HDR_SIZE + (uint64_t)pipe->slot_elems * 2 > max_pkt && !slot_elems_set &&
	    max_pkt > INA_HDR_SIZE + 2) {
		/* The default slot holds more than a packet of this port
		 * carries (1500-byte frames on dpdk): the largest that fits. */
		pipe->slot_elems = (uint16_t)((max_pkt - INA_HDR_SIZE) / 2);
	}
	if ((uint64_t)INA_HDR_SIZE + (uint64_t)pipe->slot_elems * 2 > max_pkt) {
		snprintf(err, err_size,
			 "--slot-elems %u: a block of that size does not fit the "
			 "port's %u-byte packets",
			 pipe->slot_elems, max_pkt);
		return -1;
	}
	return 0;
}

struct pipeline *
pipeline_create(const struct pipeline_config *cfg)
{
	struct pipeline *p;
	size_t nb_acc;

	if (!cfg->pool || cfg->nb_slots == 0 || cfg->nb_slots > UINT16_MAX * 16u ||
	    cfg->slot_elems == 0 || cfg->slot_elems > INA_BLOCK_MAX || cfg->max_jobs == 0 ||
	    cfg->max_jobs == UINT16_MAX || cfg->part_count == 0 ||
	    cfg->part_index >= cfg->part_count || cfg->replica.len >= INA_PEER_SIZE ||
	    cfg->primary.len >= INA_PEER_SIZE ||
	    ((cfg->replica.len || cfg->primary.len) && cfg->part_count > 1) ||
	    cfg->uplink.len >= INA_PEER_SIZE || cfg->nb_uplink_jobs > PIPELINE_UPLINK_JOBS ||
	    (cfg->uplink.len && (cfg->part_count > 1 || cfg->replica.len || cfg->primary.len)) ||
	    cfg->share.policy > SHARE_FAIR || cfg->share.min_slots == 0 ||
	    (cfg->share.policy == SHARE_FAIR && cfg->max_jobs >= SHARE_MAX_JOBS) ||
	    (!cfg->host_aggregator_ipv4 != !cfg->host_aggregator_port) ||
	    (cfg->host_mode && cfg->host_aggregator_ipv4)) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cfg = *cfg;
	nb_acc = 2 * (size_t)cfg->nb_slots * cfg->slot_elems;
	p->slots = calloc(cfg->nb_slots, sizeof(*p->slots));
	p->acc_mem = aligned_alloc(64, (nb_acc * sizeof(float) + 63) & ~(size_t)63);
	p->slot_owner = calloc(cfg->nb_slots, sizeof(*p->slot_owner));
	p->jobs = calloc(cfg->max_jobs, sizeof(*p->jobs));
	p->share = calloc((size_t)cfg->max_jobs + 1, sizeof(*p->share));
	/* Four entries a job's rank at most: sources seldom share a budget. */
	p->limit = reply_limit_create(4u * cfg->max_jobs * INA_MAX_WORLD, cfg->reply_rate,
				      cfg->reply_burst, cfg->secret);
	if (!p->slots || !p->acc_mem || !p->slot_owner || !p->jobs || !p->share || !p->limit) {
		pipeline_destroy(p);
		errno = ENOMEM;
		return NULL;
	}
	/* Touch the slot memory now so that no page fault waits for a packet. */
	memset(p->acc_mem, 0, nb_acc * sizeof(float));
	for (uint32_t i = 0; i < cfg->nb_slots; i++) {
		for (int v = 0; v < 2; v++)
			p->slots[i].h[v].acc.f32 = p->acc_mem +
						   ((size_t)i * 2 + v) * cfg->slot_elems;
	}
	p->free_slots = cfg->nb_slots;
	p->next_epoch = 1;
	return p;
}

void
pipeline_destroy(struct pipeline *p)
{
	if (!p)
		return;
	free(p->slots);
	free(p->acc_mem);
	free(p->slot_owner);
	free(p->jobs);
	free(p->share);
	reply_limit_destroy(p->limit);
	free(p);
}

const struct pipeline_stats *
pipeline_stats(const struct pipeline *p)
{
	return &p->st;
}

uint32_t
pipeline_free_slots(const struct pipeline *p)
{
	return p->free_slots;
}

uint16_t
pipeline_nb_jobs(const struct pipeline *p)
{
	return p->nb_jobs;
}

/*
 * Block completion in this switch: the sum goes to every rank and the
 * halves swap roles. 'in', the packet that completed it, carries the RESULT
 * when it holds 'result_size' bytes: its header is rewritten where a RESULT
 * differs, and with 'in_place' its payload already is the sums. If no
 * buffer, the workers' retransmissions will ask the shadow.
 */
static struct ina_pkt *
complete_half(struct pipeline *p, struct ina_pkt *in, struct job *j, struct slot *s, uint8_t ver,
	      uint16_t lane, uint32_t result_size, int in_place)
{
	struct half *hf = &s->h[ver];
	int fits = in->cap >= result_size;
	struct ina_pkt *o;

	hf->deferred = (uint8_t)pl_half_deferred(j, hf);
	o = pl_answer_buf(p, in, result_size);
	if (o) {
		if (fits)
			pl_put_result_over_data(o, j, ver, hf, in_place);
		else
			pl_put_result(p, o, j, lane, ver, hf);
		pl_result_route(p, o, j, INA_RANK_ALL);
		pl_count_result(p, o, hf, 0);
	}
	pl_slot_complete(s, ver);
	return o;
}

/* The slot of lane 'lane' of 'j' in this partition (one partition owns
 * every lane: no division). */
static inline struct slot *
lane_slot(struct pipeline *p, const struct job *j, uint16_t lane)
{
	return &p->slots[j->slot_base + (p->cfg.part_count == 1 ? lane : lane / p->cfg.part_count)];
}

/*
 * A DATA of a block whose RESULT at its largest (every element, the mask of
 * its cut, PROTOCOL 2.7, and ssp's trailer: pl_result_size()) would not fit
 * this switch's packets. Admission counts only the uncut block, so a cut
 * round of a block that fills a packet gets here. Never added, since no
 * RESULT of it could go out (the workers would wait for one until their
 * timeout): counted as 'result_too_big' and answered with an ERROR
 * UNSUPPORTED that says why, within the sender's reply budget.
 */
static struct ina_pkt *
result_too_big(struct pipeline *p, struct ina_pkt *in, const struct job *j, const struct ina_hdr *h,
	       uint64_t now)
{
	p->st.drop[PDROP_TOO_BIG]++;
	if (!reply_limit_take(p->limit, &in->peer, now)) {
		p->st.drop[PDROP_RATE_LIMITED]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (h->sub_log)
		return pl_send_error(p, in, h, INA_WERR_UNSUPPORTED,
				     "job %" PRIu32 ": a block of %u %s elements cut into %u "
				     "sub-blocks does not fit the switch's %" PRIu32
				     "-byte packets with its %u-byte mask: a smaller block or "
				     "no cut",
				     h->job_id, h->block_size, j->enc->name, 1u << h->sub_log,
				     p->cfg.max_pkt, ina_wire_mask_bytes(h->sub_log));
	return pl_send_error(p, in, h, INA_WERR_UNSUPPORTED,
			     "job %" PRIu32 ": a block of %u %s elements with its ssp trailer "
			     "does not fit the switch's %" PRIu32 "-byte packets",
			     h->job_id, h->block_size, j->enc->name, p->cfg.max_pkt);
}

static struct ina_pkt *
handle_data(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h,
	    uint64_t now)
{
	struct slot *s = lane_slot(p, j, h->lane);
	uint8_t ver = h->flags & INA_F_VER;
	struct half *hf = &s->h[ver];
	struct block_key key = pl_key_of(h);
	struct ina_pkt *o;
	uint32_t result_size;
	int in_place = 0;

	if (!(j->joined >> h->rank & 1) || j->up == UP_JOINING) {
		/* (a rack's job runs once the spine admitted it) */
		p->st.drop[PDROP_NOT_JOINED]++;
		goto drop;
	}
	if (j->finished >> h->rank & 1) {
		p->st.drop[PDROP_AFTER_FIN]++;
		goto drop;
	}
	if (!uplink_exp_ok(j, h)) {
		p->st.drop_wire[INA_WIRE_BAD_EXP]++;
		goto drop;
	}
	/* Before the block can open a half: data_fast() adds only into an
	 * open half of the same key, so no packet of this block is added. */
	if (p->cfg.max_pkt && pl_result_size(j, h) > p->cfg.max_pkt)
		return result_too_big(p, in, j, h, now);
	if (j->ssp)
		return ssp_data(p, in, j, h, now); /* ssp.c: S + 1 slots per lane */
	if (ver != s->cur) {
		/* The shadow: a retransmission for a finished block. */
		if (hf->state != HALF_RESULT || !pl_key_equal(&hf->key, &key)) {
			p->st.drop[hf->state == HALF_RESULT && pl_key_shape_differs(&hf->key, &key)
					   ? PDROP_SHAPE
					   : PDROP_NO_MATCH]++;
			goto drop;
		}
		if (!reply_limit_take(p->limit, &in->peer, now)) {
			/* Up to 150 times the DATA's size: budgeted per source. */
			p->st.drop[PDROP_RATE_LIMITED]++;
			goto drop;
		}
		o = pl_answer_buf(p, in, pl_result_size(j, h));
		if (!o)
			return NULL;
		pl_put_result(p, o, j, h->lane, ver, hf);
		pl_result_route(p, o, j, h->rank);
		p->st.shadow_replies++;
		return o;
	}
	if (hf->state == HALF_IDLE) {
		/* Only a lane's first packet of a later round opens it. */
		if (h->block != ina_lane_first(j->params.encoding, h->lane) ||
		    (s->has_round && (int32_t)(h->round - s->last_round) <= 0)) {
			p->st.drop[PDROP_NO_MATCH]++;
			goto drop;
		}
		pl_half_open(hf, &key);
	} else if (!pl_key_equal(&hf->key, &key)) {
		p->st.drop[pl_key_shape_differs(&hf->key, &key) ? PDROP_SHAPE : PDROP_NO_MATCH]++;
		goto drop;
	}
	if (hf->state == HALF_UP) {
		/* A rack waits on the spine: a local resend makes it resend. */
		return uplink_data(p, in, j, s, h->lane, ver, 1, now);
	}
	if (hf->bitmap >> h->rank & 1)
		return pl_duplicate(p, in, j, s, hf, h, now);
	result_size = pl_result_size(j, h);
	if ((hf->bitmap | 1ull << h->rank) == j->full && !j->up && in->cap >= result_size) {
		/* The last packet: its buffer becomes the RESULT (pl_answer_buf
		 * keeps it), and the sums go into it as they are made. */
		in_place = pl_half_add_last(p, j, hf, h, in->data + INA_HDR_SIZE);
	} else {
		pl_half_add(p, j, hf, h, in->data + INA_HDR_SIZE);
	}
	if (hf->bitmap != j->full) {
		ina_pkt_free(in);
		return NULL;
	}

	if (j->up) {
		/* A rack: the partial sum goes upstream; the spine completes. */
		hf->state = HALF_UP;
		return uplink_data(p, in, j, s, h->lane, ver, 0, now);
	}
	return complete_half(p, in, j, s, ver, h->lane, result_size, in_place);

drop:
	ina_pkt_free(in);
	return NULL;
}

/*
 * A job with nothing special going on: no takeover, give-back, abort,
 * standby, ssp or uplink. Its DATA from a rank that joined and did not
 * finish, from the address the rank joined from, on a lane of this
 * partition, takes data_fast().
 */
static inline int
job_plain(const struct pipeline *p, const struct job *j, const struct ina_pkt *in,
	  const struct ina_hdr *h)
{
	return !(j->taken_over | j->reshape_lanes | j->aborted | j->standby | j->ssp | j->up) &&
	       ((j->joined & ~j->finished) >> h->rank & 1) &&
	       (p->cfg.part_count == 1 || h->lane % p->cfg.part_count == p->cfg.part_index) &&
	       ina_peer_equal(&in->peer, &j->peers[h->rank]);
}

/*
 * The common DATA packet, validated, of a plain job (job_plain()): what
 * process_one() and handle_data() would do with it, without the checks that
 * pass. It adds into its lane's open half when it names that half's block
 * and is not a duplicate; anything else (the shadow, a lane's opener, a
 * duplicate, a stale block) goes on to handle_data().
 */
static struct ina_pkt *
data_fast(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h,
	  uint64_t now)
{
	struct slot *s = lane_slot(p, j, h->lane);
	uint8_t ver = h->flags & INA_F_VER;
	struct half *hf = &s->h[ver];
	uint32_t result_size;

	if (!j->has_max_round || (int32_t)(h->round - j->max_round) > 0) {
		j->max_round = h->round;
		j->has_max_round = 1;
	}
	j->last_active_ns = now;
	j->heard_ns[h->rank] = now;
	if (j->linger_until)
		j->linger_until = now + pl_job_linger_ns(p, j);
	if (ver != s->cur || hf->state != HALF_AGG || !pl_key_is(&hf->key, h) ||
	    (hf->bitmap >> h->rank & 1))
		return handle_data(p, in, j, h, now);
	if ((hf->bitmap | 1ull << h->rank) != j->full) {
		pl_half_add(p, j, hf, h, in->data + INA_HDR_SIZE);
		ina_pkt_free(in);
		return NULL;
	}
	result_size = pl_result_size(j, h);
	if (in->cap < result_size) {
		pl_half_add(p, j, hf, h, in->data + INA_HDR_SIZE);
		return complete_half(p, in, j, s, ver, h->lane, result_size, 0);
	}
	return complete_half(p, in, j, s, ver, h->lane, result_size,
			     pl_half_add_last(p, j, hf, h, in->data + INA_HDR_SIZE));
}

static struct ina_pkt *
handle_fin(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h,
	   uint64_t now)
{
	struct ina_hdr a = *h;
	struct ina_pkt *o;

	p->st.fins++;
	j->finished |= 1ull << h->rank;
	j->linger_until = now + pl_job_linger_ns(p, j);
	if (j->up && (j->finished & j->full) == j->full)
		return uplink_fin(p, in, j, h); /* answered on the spine's FIN_ACK */
	o = pl_answer_buf(p, in, INA_HDR_SIZE);
	if (o)
		pl_put_hdr(o, j, INA_T_FIN_ACK, &a);
	if ((j->finished & j->full) == j->full)
		pl_job_free(p, j);
	return o;
}

static struct ina_pkt *
handle_leave(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h)
{
	struct ina_pkt *o;
	uint64_t others = j->joined & ~j->finished & ~(1ull << h->rank);

	p->st.leaves++;
	pl_event(p, &(struct pipeline_event){ .kind = PEV_RANK_LEFT,
					      .job_id = j->params.job_id,
					      .rank = h->rank });
	if (!others && j->up == UP_RUNNING) {
		/* A rack whose last rank left leaves the spine's job. */
		o = uplink_leave(p, in, j);
		pl_job_free(p, j);
		return o;
	}
	o = others ? pl_send_error(p, in, h, INA_WERR_LEFT, "job %" PRIu32 ": rank %u left the job",
				   j->params.job_id, h->rank)
		   : (ina_pkt_free(in), NULL);
	if (o) {
		/* The peers array stays valid: pl_job_free() only marks the job. */
		o->dsts = j->peers;
		o->dst_mask = others;
	}
	pl_job_free(p, j);
	return o;
}

/*
 * A JOIN of an older wire version: the header's layout is the same in every
 * version, so the worker can read an ERROR UNSUPPORTED in its own version.
 * Its text is short enough that the answer is no larger than the JOIN (a
 * forged source gains nothing by it); the event says it in full.
 */
static struct ina_pkt *
refuse_old_version(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *h)
{
	static const char text[] = "need v2";
	char msg[120];
	struct ina_pkt *o;
	int n;

	_Static_assert(INA_WIRE_VERSION == 2, "the ERROR text names the version");
	n = snprintf(msg, sizeof(msg),
		     "job %" PRIu32 ": rank %u speaks wire version %u; this switch speaks %u "
		     "(upgrade ina on the workers)",
		     h->job_id, h->rank, h->version, INA_WIRE_VERSION);
	pl_event(p, &(struct pipeline_event){ .kind = PEV_REFUSED,
					      .job_id = h->job_id,
					      .rank = h->rank,
					      .status = INA_WERR_UNSUPPORTED,
					      .text = msg,
					      .text_len = n < 0 ? 0 : (uint32_t)n });
	if (in->len < INA_HDR_SIZE + sizeof(text) - 1) {
		ina_pkt_free(in);
		return NULL;
	}
	o = pl_answer_buf(p, in, INA_HDR_SIZE + sizeof(text) - 1);
	if (!o)
		return NULL;
	pl_put_error(o, h->job_id, h->token, h->encoding, INA_WERR_UNSUPPORTED, text,
		     sizeof(text) - 1);
	o->data[0] = h->version; /* in the worker's version */
	return o;
}

/* A type only a rank of a job sends for itself: the packets a rank's bound
 * address holds to (with FAILOVER, which only a replica takes). */
static int
rank_own_type(uint8_t type)
{
	return type == INA_T_DATA || type == INA_T_FIN || type == INA_T_LEAVE ||
	       type == INA_T_KEEPALIVE;
}

static struct ina_pkt *
process_checked(struct pipeline *p, struct ina_pkt *in, uint64_t now)
{
	const struct ina_job_params *params = NULL;
	struct ina_job_params old_params, new_params;
	struct ina_hdr h;
	struct job *j = NULL;
	enum ina_wire_reason r;
	int old = 0; /* of the primary's epoch, for a job taken over */

	p->st.rx_pkts++;
	if (p->cfg.uplink.len && ina_peer_equal(&in->peer, &p->cfg.uplink))
		return uplink_rx(p, in, now); /* from the spine */
	if (in->len >= INA_HDR_SIZE && in->data[1] != INA_T_JOIN) {
		uint32_t id_be, epoch_be;

		memcpy(&id_be, in->data + 4, sizeof(id_be));
		j = pl_job_find(p, be32toh(id_be));
		params = j ? &j->params : NULL;
		memcpy(&epoch_be, in->data + 8, sizeof(epoch_be));
		if (j && j->taken_over && be32toh(epoch_be) == j->old_epoch) {
			/* Checked as the primary's job; answered below. */
			old_params = j->params;
			old_params.epoch = j->old_epoch;
			params = &old_params;
			old = 1;
		}
		if (j && j->reshape_lanes && !old && in->data[1] == INA_T_DATA) {
			/* Giving back: from the reshape round, the new lanes. */
			uint32_t round_be;

			memcpy(&round_be, in->data + offsetof(struct ina_wire_hdr, round),
			       sizeof(round_be));
			if ((int32_t)(be32toh(round_be) - j->reshape_round) >= 0) {
				new_params = j->params;
				new_params.lanes = j->reshape_lanes;
				params = &new_params;
			}
		}
	}
	r = ina_wire_validate(in->data, in->len, params, &h);
	if (r == INA_WIRE_BAD_VERSION && h.type == INA_T_JOIN &&
	    h.version == INA_WIRE_VERSION - 1) {
		p->st.drop_wire[r]++;
		return refuse_old_version(p, in, &h);
	}
	if (r != INA_WIRE_OK) {
		p->st.drop_wire[r]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (j && h.type == INA_T_DATA && job_plain(p, j, in, &h))
		return data_fast(p, in, j, &h, now);
	if (j && h.type == INA_T_DATA && !old && (j->joined >> h.rank & 1)) {
		if (!j->has_max_round || (int32_t)(h.round - j->max_round) > 0) {
			j->max_round = h.round;
			j->has_max_round = 1;
		}
		if (j->reshape_lanes && (int32_t)(h.round - j->reshape_round) >= 0) {
			j->moved |= 1ull << h.rank;
			if (j->moved == j->full)
				admission_reshape_done(p, j);
		}
	}
	if (h.type == INA_T_JOIN)
		return admission_join(p, in, &h, now);
	if (h.type == INA_T_REPL || h.type == INA_T_FAILOVER) {
		/* Only a replica takes these; FAILOVER only from a worker. */
		if (!p->cfg.primary.len || h.rank == INA_RANK_SWITCH) {
			p->st.drop[PDROP_UNEXPECTED]++;
			ina_pkt_free(in);
			return NULL;
		}
		if (h.type == INA_T_REPL && !ina_peer_equal(&in->peer, &p->cfg.primary)) {
			p->st.drop[PDROP_NOT_PRIMARY]++;
			ina_pkt_free(in);
			return NULL;
		}
	} else if (!rank_own_type(h.type)) {
		p->st.drop[PDROP_UNEXPECTED]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (!j) {
		p->st.drop[PDROP_UNKNOWN_JOB]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (h.type == INA_T_DATA && p->cfg.part_count > 1 &&
	    h.lane % p->cfg.part_count != p->cfg.part_index) {
		/* Misrouted: the owner must see it, this partition must not. */
		p->st.drop[PDROP_OTHER_PART]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (j->aborted) {
		p->st.drop[PDROP_ABORTED]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (h.type == INA_T_REPL)
		return replica_repl(p, in, j, &h, now);
	if (old && h.type != INA_T_DATA && h.type != INA_T_FAILOVER) {
		/* FIN, LEAVE or KEEPALIVE of the primary's epoch: not this job's
		 * any more. */
		p->st.drop_wire[INA_WIRE_WRONG_EPOCH]++;
		ina_pkt_free(in);
		return NULL;
	}
	if ((h.type == INA_T_KEEPALIVE || h.type == INA_T_FIN || h.type == INA_T_LEAVE) &&
	    !(j->joined >> h.rank & 1)) {
		/* Only a rank of the job lives for it, finishes or ends it. */
		p->st.drop[PDROP_NOT_JOINED]++;
		ina_pkt_free(in);
		return NULL;
	}
	if ((j->joined >> h.rank & 1) && !ina_peer_equal(&in->peer, &j->peers[h.rank])) {
		/* A rank's address is bound for the epoch (PROTOCOL 5.1): from
		 * elsewhere, its packets count for nothing, nor keep the job
		 * alive. A new address takes a new JOIN. */
		p->st.drop[PDROP_WRONG_ADDR]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (j->standby && h.type == INA_T_DATA) {
		/* The primary aggregates; DATA here is lost or misrouted. */
		p->st.drop[PDROP_STANDBY]++;
		ina_pkt_free(in);
		return NULL;
	}
	j->last_active_ns = now;
	j->heard_ns[h.rank] = now;
	/*
	 * A lingering job stays while any rank still talks to it: a worker
	 * that lost a last result keeps asking the shadow, and only silence
	 * for a whole linger frees the job before every FIN arrived.
	 */
	if (j->linger_until)
		j->linger_until = now + pl_job_linger_ns(p, j);
	switch (h.type) {
	case INA_T_FAILOVER:
		return replica_failover(p, in, j, &h, now);
	case INA_T_DATA:
		if (old) {
			/* In flight from before the takeover: never aggregated;
			 * the rank learns the new epoch and resends. */
			return replica_announce_again(p, in, j);
		}
		return handle_data(p, in, j, &h, now);
	case INA_T_FIN:
		return handle_fin(p, in, j, &h, now);
	case INA_T_KEEPALIVE:
		/* The rank lives: heard above; nothing to answer. */
		p->st.keepalives++;
		ina_pkt_free(in);
		return NULL;
	default:
		return handle_leave(p, in, j, &h);
	}
}

/*
 * Tenant mode, before anything else: the tenant the job id's top byte names,
 * the job's key (kept in the job, else derived), and the packet's tag under
 * it. 1 with the key in 'k' and the tag field zeroed when the packet is the
 * job's; 0 when not (no such tenant, too short, a wrong tag).
 */
static int
auth_in(struct pipeline *p, struct ina_pkt *in, struct ina_job_key *k)
{
	const struct tenant *t;
	const struct job *j;
	uint32_t id_be, id;

	if (in->len < INA_HDR_SIZE)
		return 0;
	memcpy(&id_be, in->data + offsetof(struct ina_wire_hdr, job_id), sizeof(id_be));
	id = be32toh(id_be);
	t = tenants_get(p->cfg.tenants, ina_tenant_of(id));
	if (!t)
		return 0;
	j = pl_job_find(p, id);
	if (j)
		*k = j->key;
	else
		ina_auth_job_key(t->key, id, k);
	return ina_auth_check(k, in->data, in->len);
}

/*
 * Tenant mode, before the tag: the drops that cost less than a tag and that
 * the packet would meet after it anyway. A header that fails the wire's own
 * checks, a rank's DATA, FIN, LEAVE or KEEPALIVE for a job the switch does
 * not hold (PDROP_UNKNOWN_JOB), and a rank's DATA, FIN, LEAVE, KEEPALIVE or
 * FAILOVER naming a joined rank from an address other than the one it is
 * bound to (PDROP_WRONG_ADDR, process_checked: the types it holds to the
 * address; a primary's REPL names a rank but comes from the primary, and
 * what comes from a rack's spine goes to uplink_rx), change nothing and draw no answer either way; checked first, a flood of such forgeries
 * costs the switch tens of nanoseconds a packet instead of a keyed hash over
 * each (about 1.4 us for a 4 KiB DATA, bench_mac). A JOIN goes on to its tag
 * (a rank's new address takes a JOIN). Returns the counter to add, or NULL.
 */
static uint64_t *
cheap_drop(struct pipeline *p, const struct ina_pkt *in)
{
	struct ina_hdr h;
	const struct job *j;
	enum ina_wire_reason r = ina_wire_validate(in->data, in->len, NULL, &h);
	int rank_pkt;

	if (r != INA_WIRE_OK)
		return &p->st.drop_wire[r];
	if (h.type == INA_T_JOIN || h.rank >= INA_MAX_WORLD)
		return NULL;
	if (p->cfg.uplink.len && ina_peer_equal(&in->peer, &p->cfg.uplink))
		return NULL; /* the spine's: uplink_rx checks them */
	rank_pkt = rank_own_type(h.type);
	j = pl_job_find(p, h.job_id);
	if (!j && rank_pkt)
		return &p->st.drop[PDROP_UNKNOWN_JOB];
	if (j && (rank_pkt || h.type == INA_T_FAILOVER) && (j->joined >> h.rank & 1) &&
	    !ina_peer_equal(&in->peer, &j->peers[h.rank]))
		return &p->st.drop[PDROP_WRONG_ADDR];
	return NULL;
}

int
pipeline_authentic(struct pipeline *p, struct ina_pkt *pkt)
{
	uint8_t tag[sizeof(uint64_t)];
	struct ina_job_key k;
	int ok;

	if (!p->cfg.tenants)
		return 1;
	if (pkt->len < INA_HDR_SIZE)
		return 0;
	memcpy(tag, pkt->data + INA_TAG_OFFSET, sizeof(tag));
	ok = auth_in(p, pkt, &k);
	memcpy(pkt->data + INA_TAG_OFFSET, tag, sizeof(tag)); /* the check zeroed it */
	return ok;
}

/* One packet in, at most one out: checked and tagged in tenant mode. */
static struct ina_pkt *
process_one(struct pipeline *p, struct ina_pkt *in, uint64_t now)
{
	struct ina_job_key k;
	struct ina_pkt *o;
	uint64_t *drop;

	if (!p->cfg.tenants)
		return process_checked(p, in, now);
	if ((drop = cheap_drop(p, in))) {
		p->st.rx_pkts++;
		(*drop)++;
		ina_pkt_free(in);
		return NULL;
	}
	if (!auth_in(p, in, &k)) {
		p->st.rx_pkts++;
		p->st.drop[PDROP_AUTH]++;
		ina_pkt_free(in);
		return NULL;
	}
	o = process_checked(p, in, now);
	/* An answer is always of the packet's job (no replica; a rack's
	 * packets up to its spine and down from it are of the same job id,
	 * so under the same key): tagged once here, its bytes final, however
	 * many ranks it goes to. */
	if (o)
		ina_auth_sign(&k, o->data, o->len);
	return o;
}

uint16_t
pipeline_rx_burst(struct pipeline *p, struct ina_pkt **in, uint16_t nb_in, uint64_t now_ns,
		  struct ina_pkt **out)
{
	uint16_t nb_out = 0;

	for (uint16_t i = 0; i < nb_in; i++) {
		struct ina_pkt *o;

		/* The next packet's header, and the one after's descriptor, on
		 * their way to the cache while this one is summed. */
		if (i + 1 < nb_in)
			__builtin_prefetch(in[i + 1]->data);
		if (i + 2 < nb_in)
			__builtin_prefetch(in[i + 2]);
		o = process_one(p, in[i], now_ns);

		if (o)
			out[nb_out++] = o;
	}
	p->st.tx_pkts += nb_out;
	return nb_out;
}

/*
 * A follower takes the packets as partition 0 does, with no event reported
 * and its counters as they were; the answers it would send (partition 0
 * sends them) are freed.
 */
void
pipeline_rx_quiet(struct pipeline *p, struct ina_pkt **in, uint16_t nb_in, uint64_t now_ns)
{
	struct pipeline_stats saved;
	pipeline_event_fn on_event = p->cfg.on_event;

	if (!nb_in)
		return;
	saved = p->st;
	p->cfg.on_event = NULL;
	for (uint16_t i = 0; i < nb_in; i++)
		ina_pkt_free(process_one(p, in[i], now_ns));
	p->cfg.on_event = on_event;
	p->st = saved;
}

uint16_t
pipeline_tick_freed(struct pipeline *p, uint64_t now_ns, uint32_t *freed, uint16_t max)
{
	uint16_t nb = 0;

	if (p->cfg.part_index != 0)
		return 0;
	for (uint16_t i = 0; i < p->cfg.max_jobs && nb < max; i++) {
		struct job *j = &p->jobs[i];

		if (!j->active)
			continue;
		if (j->aborted || (j->linger_until && now_ns >= j->linger_until)) {
			freed[nb++] = j->params.job_id;
			pl_job_free(p, j);
		} else if (p->cfg.job_idle_ns && now_ns - j->last_active_ns >= p->cfg.job_idle_ns) {
			pl_event(p,
				 &(struct pipeline_event){ .kind = PEV_EXPIRED,
							   .job_id = j->params.job_id,
							   .ms = p->cfg.job_idle_ns / 1000000u });
			p->st.jobs_expired++;
			freed[nb++] = j->params.job_id;
			pl_job_free(p, j);
		}
	}
	return nb;
}

void
pipeline_drain(struct pipeline *p)
{
	p->draining = 1;
}

uint16_t
pipeline_shutdown(struct pipeline *p, struct ina_pkt **out, uint16_t max)
{
	static const char msg[] = "the switch is shutting down: the job is aborted";
	uint16_t nb = 0;

	p->draining = 1;
	for (uint16_t i = 0; i < p->cfg.max_jobs && nb < max; i++) {
		struct job *j = &p->jobs[i];
		uint64_t told = j->joined & ~j->finished;
		struct ina_pkt *o;

		if (!j->active)
			continue;
		if (j->up == UP_RUNNING && nb > 0 && nb + 2 > max)
			break; /* a rack's job takes two packets: on the next call */
		/* A job standing by runs on its primary: nothing to tell. */
		o = told && !j->standby ? ina_pkt_alloc(p->cfg.pool) : NULL;
		if (o) {
			pl_put_error(o, j->params.job_id, j->params.token, j->params.encoding,
				     INA_WERR_SHUTDOWN, msg, sizeof(msg) - 1);
			if (p->cfg.tenants)
				ina_auth_sign(&j->key, o->data, o->len);
			/* pl_job_free() only marks the job: 'peers' stays valid. */
			o->dsts = j->peers;
			o->dst_mask = told;
			out[nb++] = o;
		}
		if (j->up == UP_RUNNING && nb < max) {
			/* A rack leaves the spine's job: the spine tells the
			 * other racks at once. */
			o = ina_pkt_alloc(p->cfg.pool);
			if (o && (o = uplink_leave(p, o, j)) != NULL) {
				if (p->cfg.tenants)
					ina_auth_sign(&j->key, o->data, o->len);
				out[nb++] = o;
			}
		}
		p->st.jobs_aborted++;
		pl_job_free(p, j);
	}
	p->st.tx_pkts += nb;
	return nb;
}

void
pipeline_tick(struct pipeline *p, uint64_t now_ns)
{
	uint32_t freed[16];

	while (pipeline_tick_freed(p, now_ns, freed, 16) == 16)
		;
}

int
pipeline_job_free(struct pipeline *p, uint32_t job_id)
{
	struct job *j = pl_job_find(p, job_id);
	pipeline_event_fn on_event = p->cfg.on_event;

	if (!j)
		return 0;
	p->cfg.on_event = NULL; /* partition 0 reported it */
	pl_job_free(p, j);
	p->st.jobs_freed--;
	p->cfg.on_event = on_event;
	return 1;
}

void
pipeline_stats_add(struct pipeline_stats *sum, const struct pipeline_stats *st)
{
	uint64_t *a = (uint64_t *)(void *)sum;
	const uint64_t *b = (const uint64_t *)(const void *)st;

	_Static_assert(sizeof(*st) % sizeof(uint64_t) == 0, "counters only");
	for (size_t i = 0; i < sizeof(*st) / sizeof(uint64_t); i++)
		a[i] += b[i];
}
