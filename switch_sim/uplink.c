/* SPDX-License-Identifier: MIT */
/*
 * A rack switch's link to its spine (uplink.h, docs/PROTOCOL.md "Hierarchy").
 * The rack is one worker of the same job on the spine: its JOIN goes up on
 * the first local JOIN, each block its local ranks complete goes up as its
 * DATA (the partial sum, the local minimum next pointer), and the spine's
 * RESULT completes the slot the way a block finished here would, then goes
 * down to the local ranks. No timer of its own: a local rank's retransmission
 * of a block the spine has not answered yet is what resends the rack's DATA.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ina/encode.h"
#include "uplink.h"

const struct pipeline_uplink_job *
uplink_job_lookup(const struct pipeline *p, uint32_t job_id)
{
	for (uint16_t i = 0; i < p->cfg.nb_uplink_jobs; i++)
		if (p->cfg.uplink_jobs[i].job_id == job_id)
			return &p->cfg.uplink_jobs[i];
	return NULL;
}

int
pipeline_uplink_job_parse(const char *s, struct pipeline_uplink_job *uj)
{
	unsigned long job, rank, world;
	char *end;

	errno = 0;
	job = strtoul(s, &end, 10);
	if (end == s || *end != '=' || errno || job > UINT32_MAX || *s == '-')
		return -1;
	s = end + 1;
	rank = strtoul(s, &end, 10);
	if (end == s || *end != '/' || errno || *s == '-')
		return -1;
	s = end + 1;
	world = strtoul(s, &end, 10);
	if (end == s || *end != '\0' || errno || *s == '-')
		return -1;
	if (world < 1 || world > INA_MAX_WORLD || rank >= world)
		return -1;
	uj->job_id = (uint32_t)job;
	uj->rank = (uint16_t)rank;
	uj->world = (uint16_t)world;
	return 0;
}

/* ceil(log2 n), the i32 headroom of n addends (docs/PROTOCOL.md 7.3). */
static int
clog2(unsigned n)
{
	int c = 0;

	while ((1u << c) < n)
		c++;
	return c;
}


/*
 * i32 exponents across the tiers. Going up, the rack announces its local
 * maximum plus the headroom of its own ranks (e + ceil(log2 n_local)): the
 * exponent its partial sum can reach. Coming down, the spine's maximum E is
 * handed to the local ranks as E + ceil(log2 W) - ceil(log2 n_local), W the
 * spine's world, so every rank of every rack scales by 2^(30 - ceil(log2 W)
 * - E): the same factor everywhere, and no sum at any tier can overflow.
 * Both stay within INA_EXP_MIN..INA_EXP_MAX for exponents the protocol can
 * produce; a local DATA or a spine RESULT that would leave it is refused
 * (uplink_exp_ok(), rx_result(): bad_exp), never clamped.
 */
static int16_t
exp_up(const struct job *j, const struct half *hf)
{
	if (hf->next == INA_BLOCK_END || !j->enc->scaled)
		return 0;
	return (int16_t)(hf->exp + clog2(j->params.world));
}

static int
exp_down(const struct job *j, const struct ina_hdr *h)
{
	if (h->next == INA_BLOCK_END || !j->enc->scaled)
		return 0;
	return h->exp + clog2(j->up_world) - clog2(j->params.world);
}

int
uplink_exp_ok(const struct job *j, const struct ina_hdr *h)
{
	if (!j->up || h->next == INA_BLOCK_END || !j->enc->scaled)
		return 1;
	return h->exp + clog2(j->params.world) <= INA_EXP_MAX;
}

/* A header the rack sends upstream, as worker 'up_rank' of the spine's job. */
static void
up_hdr(struct ina_hdr *h, const struct job *j, uint8_t type, uint32_t epoch)
{
	memset(h, 0, sizeof(*h));
	h->version = INA_WIRE_VERSION;
	h->type = type;
	h->encoding = j->params.encoding;
	h->job_id = j->params.job_id;
	h->epoch = epoch;
	h->rank = j->up_rank;
	h->token = j->params.token;
}

struct ina_pkt *
uplink_join(struct pipeline *p, struct ina_pkt *in, struct job *j)
{
	struct ina_pkt *o = pl_answer_buf(p, in, INA_HDR_SIZE + sizeof(struct ina_wire_join));
	struct ina_hdr h;

	if (!o)
		return NULL;
	up_hdr(&h, j, INA_T_JOIN, 0);
	h.block_size = j->params.max_block;
	ina_wire_set_cookie(&h, j->up_cookie);
	ina_wire_encode_hdr(&h, o->data);
	ina_wire_encode_join(j->up_world, j->params.lanes, j->params.max_block,
			     o->data + INA_HDR_SIZE);
	o->len = INA_HDR_SIZE + sizeof(struct ina_wire_join);
	o->peer = p->cfg.uplink;
	p->st.up_joins++;
	return o;
}

struct ina_pkt *
uplink_data(struct pipeline *p, struct ina_pkt *in, struct job *j, struct slot *s, uint16_t lane,
	    uint8_t ver, int resend, uint64_t now)
{
	const struct half *hf = &s->h[ver];
	uint16_t n = hf->has_data ? ina_wire_block_elems(hf->key.tensor_len, hf->key.block_size,
							 hf->key.block)
				  : 0;
	struct ina_pkt *o;
	struct ina_hdr h;

	if (resend && s->waited && now - s->last_wait_ns < p->cfg.wait_interval_ns) {
		/* Several local ranks time out together: one resend will do. */
		p->st.duplicates++;
		ina_pkt_free(in);
		return NULL;
	}
	o = pl_answer_buf(p, in,
			  INA_HDR_SIZE + ina_wire_mask_bytes(hf->key.sub_log) + (uint32_t)n * 4u);
	if (!o)
		return NULL;
	/* The slot's WAIT clock: the block is complete here, no WAIT goes out
	 * for it, and pl_slot_complete() resets it. */
	s->waited = 1;
	s->last_wait_ns = now;
	s->wait_told = 0;
	up_hdr(&h, j, INA_T_DATA, j->up_epoch);
	h.flags = (uint8_t)(ver | (resend ? INA_F_RETX : 0));
	h.lane = lane;
	h.tensor_id = hf->key.tensor_id;
	h.round = hf->key.round;
	h.tensor_len = hf->key.tensor_len;
	h.block = hf->key.block;
	h.block_size = hf->key.block_size;
	h.sub_log = hf->key.sub_log;
	h.next = hf->next;
	h.exp = exp_up(j, hf);
	h.n_elems = n;
	h.bound = hf->bound == UINT32_MAX ? 0 : hf->bound;
	ina_wire_encode_hdr(&h, o->data);
	o->len = INA_HDR_SIZE;
	if (n && hf->key.sub_log) {
		/* The union's mask and sums: a masked DATA (2.7). */
		o->len += pl_sub_store(j, hf, o->data + INA_HDR_SIZE);
	} else if (n) {
		j->enc->store(o->data + INA_HDR_SIZE, hf->acc.f32, n);
		o->len += (uint32_t)(n * j->enc->elem_size);
	}
	o->peer = p->cfg.uplink;
	p->st.up_data++;
	p->st.up_bytes += o->len - INA_HDR_SIZE;
	if (resend)
		p->st.up_resends++;
	return o;
}

struct ina_pkt *
uplink_fin(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *rx)
{
	struct ina_pkt *o = pl_answer_buf(p, in, INA_HDR_SIZE);
	struct ina_hdr h;

	if (!o)
		return NULL;
	if (j->up == UP_JOINING) {
		/* Never admitted upstream: nothing to leave there. */
		pl_put_hdr(o, j, INA_T_FIN_ACK, rx);
		pl_job_free(p, j);
		return o;
	}
	up_hdr(&h, j, INA_T_FIN, j->up_epoch);
	h.round = rx->round;
	ina_wire_encode_hdr(&h, o->data);
	o->len = INA_HDR_SIZE;
	o->peer = p->cfg.uplink;
	j->up = UP_FINNING;
	p->st.up_fins++;
	return o;
}

struct ina_pkt *
uplink_leave(struct pipeline *p, struct ina_pkt *in, struct job *j)
{
	struct ina_pkt *o = pl_answer_buf(p, in, INA_HDR_SIZE);
	struct ina_hdr h;

	if (!o)
		return NULL;
	up_hdr(&h, j, INA_T_LEAVE, j->up_epoch);
	ina_wire_encode_hdr(&h, o->data);
	o->len = INA_HDR_SIZE;
	o->peer = p->cfg.uplink;
	p->st.up_leaves++;
	return o;
}

/* The spine's JOIN_ACK: the rack runs; every local rank that joined hears. */
static struct ina_pkt *
rx_join_ack(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h)
{
	uint16_t world, lanes, max_block;
	struct ina_pkt *o;

	ina_wire_decode_join(in->data + INA_HDR_SIZE, &world, &lanes, &max_block);
	if (j->up != UP_JOINING || h->epoch == 0 || (h->flags & INA_F_STANDBY) ||
	    world != j->up_world || lanes != j->params.lanes || max_block != j->params.max_block) {
		p->st.drop[PDROP_UP_STALE]++;
		ina_pkt_free(in);
		return NULL;
	}
	j->up_epoch = h->epoch;
	j->up = UP_RUNNING;
	pl_event(p, &(struct pipeline_event){ .kind = PEV_UP_JOINED,
					      .job_id = j->params.job_id,
					      .rank = j->up_rank,
					      .world = j->up_world,
					      .epoch = h->epoch });
	if (!(j->joined & ~j->finished)) {
		/* Every rank that joined has finished already: nobody to tell. */
		ina_pkt_free(in);
		return NULL;
	}
	o = pl_answer_buf(p, in, INA_HDR_SIZE + sizeof(struct ina_wire_join));
	if (!o)
		return NULL;
	pl_put_hdr(o, j, INA_T_JOIN_ACK, NULL);
	ina_wire_encode_join(j->params.world, j->params.lanes, j->params.max_block,
			     o->data + INA_HDR_SIZE);
	o->len += sizeof(struct ina_wire_join);
	o->dsts = j->peers;
	o->dst_mask = j->joined & ~j->finished;
	return o;
}

/* The spine's RESULT for a block the rack waits on: stored as this slot's
 * result (the global sum, the spine's next pointer), sent down to all. */
static struct ina_pkt *
rx_result(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h)
{
	struct slot *s = &p->slots[j->slot_base + h->lane];
	uint8_t ver = h->flags & INA_F_VER;
	struct half *hf = &s->h[ver];
	struct block_key key = pl_key_of(h);
	struct ina_pkt *o;

	if (j->up != UP_RUNNING || hf->state != HALF_UP || !pl_key_equal(&hf->key, &key)) {
		/* A repeat of a result already stored, or of another run. */
		p->st.drop[PDROP_UP_STALE]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (exp_down(j, h) < INA_EXP_MIN || exp_down(j, h) > INA_EXP_MAX) {
		/* No spine of this job announces it (5.10): refused, not clamped. */
		p->st.drop_wire[INA_WIRE_BAD_EXP]++;
		ina_pkt_free(in);
		return NULL;
	}
	hf->next = h->next;
	hf->exp = (int16_t)exp_down(j, h);
	/* A local saturation stays flagged whatever the spine's sum says. */
	hf->saturated |= (h->flags & INA_F_SATURATED) != 0;
	hf->deferred = (h->flags & INA_F_DEFERRED) != 0;
	hf->has_data = h->n_elems != 0 || hf->deferred;
	pl_half_load(j, hf, h, in->data + INA_HDR_SIZE); /* masked or not */
	o = pl_answer_buf(p, in, in->len);
	if (o) {
		pl_put_result(p, o, j, h->lane, ver, hf);
		o->dsts = j->peers;
		o->dst_mask = j->full;
		pl_count_result(p, o, hf, 0);
	}
	p->st.up_results++;
	pl_slot_complete(s, ver);
	return o;
}

/* The spine's FIN_ACK to the rack's FIN: every local rank has its FIN_ACK
 * and the job is done here. */
static struct ina_pkt *
rx_fin_ack(struct pipeline *p, struct ina_pkt *in, struct job *j)
{
	struct ina_pkt *o;

	if (j->up != UP_FINNING) {
		p->st.drop[PDROP_UP_STALE]++;
		ina_pkt_free(in);
		return NULL;
	}
	o = pl_answer_buf(p, in, INA_HDR_SIZE);
	if (o) {
		pl_put_hdr(o, j, INA_T_FIN_ACK, NULL);
		/* pl_job_free() only marks the job: 'peers' stays valid. */
		o->dsts = j->peers;
		o->dst_mask = j->finished;
	}
	pl_job_free(p, j);
	return o;
}

/* An ERROR from the spine (a refused JOIN, a dead rank, LEFT, SHUTDOWN):
 * the same bytes go down to every local rank still in the job, and the job
 * is freed at the next tick. */
static struct ina_pkt *
rx_error(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h)
{
	uint64_t told = j->joined & ~j->finished;
	struct ina_pkt *o;

	pl_event(p, &(struct pipeline_event){ .kind = PEV_UP_ERROR,
					      .job_id = j->params.job_id,
					      .status = h->status,
					      .text = (const char *)in->data + INA_HDR_SIZE,
					      .text_len = in->len - INA_HDR_SIZE });
	j->aborted = 1;
	p->st.jobs_aborted++;
	p->st.up_errors++;
	if (!told) {
		ina_pkt_free(in);
		return NULL;
	}
	o = pl_answer_buf(p, in, in->len);
	if (o) {
		o->dsts = j->peers;
		o->dst_mask = told;
	}
	return o;
}

struct ina_pkt *
uplink_rx(struct pipeline *p, struct ina_pkt *in, uint64_t now)
{
	struct ina_job_params params;
	struct ina_hdr h;
	struct job *j;
	enum ina_wire_reason r;

	r = ina_wire_validate(in->data, in->len, NULL, &h);
	if (r != INA_WIRE_OK) {
		p->st.drop_wire[r]++;
		goto drop;
	}
	j = pl_job_find(p, h.job_id);
	if (!j || !j->up) {
		p->st.drop[PDROP_UNKNOWN_JOB]++;
		goto drop;
	}
	if (j->aborted) {
		p->st.drop[PDROP_ABORTED]++;
		goto drop;
	}
	/* Checked as the rack's job on the spine; a JOIN_ACK brings the
	 * epoch and an ERROR carries none. */
	params = j->params;
	params.world = j->up_world;
	params.epoch = h.type == INA_T_JOIN_ACK || h.type == INA_T_ERROR ? h.epoch : j->up_epoch;
	r = ina_wire_validate(in->data, in->len, &params, &h);
	if (r != INA_WIRE_OK) {
		p->st.drop_wire[r]++;
		goto drop;
	}
	j->last_active_ns = now;
	if (j->linger_until)
		j->linger_until = now + p->cfg.linger_ns;
	switch (h.type) {
	case INA_T_JOIN_ACK:
		return rx_join_ack(p, in, j, &h);
	case INA_T_RESULT:
		return rx_result(p, in, j, &h);
	case INA_T_FIN_ACK:
		return rx_fin_ack(p, in, j);
	case INA_T_ERROR:
		if (h.status == INA_WERR_COOKIE) {
			/* The spine asks the rack to prove its address: the
			 * JOIN again at once, with the cookie (one in, one
			 * out); every later JOIN carries it too. */
			if (j->up != UP_JOINING || ina_wire_cookie(&h) == 0) {
				p->st.drop[PDROP_UP_STALE]++;
				goto drop;
			}
			j->up_cookie = ina_wire_cookie(&h);
			return uplink_join(p, in, j);
		}
		if (h.status < INA_WERR_NO_SLOTS || h.status > INA_WERR_MAX) {
			/* Not a code of this version: not passed on. */
			p->st.drop[PDROP_UNEXPECTED]++;
			goto drop;
		}
		return rx_error(p, in, j, &h);
	case INA_T_WAIT:
		/* The spine waits on another rack: the local ranks' timers
		 * go on, and their resends ask again. */
		p->st.drop[PDROP_UP_STALE]++;
		goto drop;
	default:
		p->st.drop[PDROP_UNEXPECTED]++;
		goto drop;
	}
drop:
	ina_pkt_free(in);
	return NULL;
}
