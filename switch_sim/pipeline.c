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
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>	/* vsnprintf: an ERROR's message */
#include <stdlib.h>
#include <string.h>

#include "ina/encode.h"
#include "ina/lane.h"
#include "ina/util.h"
#include "pipeline.h"
#include "pipeline_int.h"
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
	cfg->slot_elems = 2048;
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
}

struct pipeline *
pipeline_create(const struct pipeline_config *cfg)
{
	struct pipeline *p;
	size_t nb_acc;

	if (!cfg->pool || cfg->nb_slots == 0 || cfg->nb_slots > UINT16_MAX * 16u ||
	    cfg->slot_elems == 0 || cfg->max_jobs == 0 || cfg->max_jobs == UINT16_MAX ||
	    cfg->part_count == 0 || cfg->part_index >= cfg->part_count ||
	    cfg->replica.len >= INA_PEER_SIZE || cfg->primary.len >= INA_PEER_SIZE ||
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
	if (!p->slots || !p->acc_mem || !p->slot_owner || !p->jobs || !p->share) {
		pipeline_destroy(p);
		errno = ENOMEM;
		return NULL;
	}
	/* Touch the slot memory now so that no page fault waits for a packet. */
	memset(p->acc_mem, 0, nb_acc * sizeof(float));
	for (uint32_t i = 0; i < cfg->nb_slots; i++) {
		for (int v = 0; v < 2; v++)
			p->slots[i].h[v].acc.f32 =
				p->acc_mem + ((size_t)i * 2 + v) * cfg->slot_elems;
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

struct job *
pl_job_find(struct pipeline *p, uint32_t job_id)
{
	struct job *j = &p->jobs[p->last_job];

	if (j->active && j->params.job_id == job_id)
		return j;
	for (uint16_t i = 0; i < p->cfg.max_jobs; i++) {
		j = &p->jobs[i];
		if (j->active && j->params.job_id == job_id) {
			p->last_job = i;
			return j;
		}
	}
	return NULL;
}

/* The longest run of contiguous free slots. */
static uint32_t
slots_longest_free(const struct pipeline *p)
{
	uint32_t run = 0, best = 0;

	for (uint32_t i = 0; i < p->cfg.nb_slots; i++) {
		run = p->slot_owner[i] ? 0 : run + 1;
		if (run > best)
			best = run;
	}
	return best;
}

/* Slots one row of lanes costs a job: S + 2 under ssp:S, else 1. */
static uint16_t
job_unit(uint8_t ssp)
{
	return (uint16_t)(ssp ? INA_SSP_SETS(ssp) : 1u);
}

/* Slots a job of 'lanes' lanes holds in each partition. */
static uint32_t
job_slots(const struct pipeline *p, uint16_t lanes, uint8_t ssp)
{
	uint16_t k = p->cfg.part_count;

	return (uint32_t)((lanes + k - 1) / k) * job_unit(ssp);
}

/*
 * --share fair: the lanes a new job asking 'lanes' gets: its weighted share
 * of the pool among the jobs admitted and itself (each admitted job counted
 * with what it asked), no more than the longest run of free slots, in
 * whole rows. 0 when that is under the minimum (min_slots, or what it asks
 * when that is less).
 */
static uint16_t
fair_lanes(struct pipeline *p, uint16_t lanes, uint8_t ssp, uint8_t weight, uint32_t *share)
{
	uint16_t n = 0, unit = job_unit(ssp);
	uint32_t demand = job_slots(p, lanes, ssp), g, longest, least;

	for (uint16_t i = 0; i < p->cfg.max_jobs; i++) {
		const struct job *j = &p->jobs[i];

		if (!j->active)
			continue;
		p->share[n].demand = job_slots(p, j->want_lanes, j->ssp);
		p->share[n].weight = j->weight;
		p->share[n].unit = job_unit(j->ssp);
		n++;
	}
	p->share[n].demand = demand;
	p->share[n].weight = weight;
	p->share[n].unit = unit;
	share_compute(p->cfg.nb_slots, p->cfg.share.total, p->share, (uint16_t)(n + 1));
	g = p->share[n].grant;
	*share = g;
	longest = slots_longest_free(p);
	if (g > longest)
		g = longest / unit * unit;
	least = p->cfg.share.min_slots < demand ? p->cfg.share.min_slots : demand;
	if (g < least)
		return 0;
	return share_lanes_of(g, lanes, p->cfg.part_count, unit);
}

/* First fit of 'n' contiguous free slots; returns the first or -1. */
static int64_t
slots_reserve(struct pipeline *p, uint16_t n, uint16_t owner)
{
	uint32_t run = 0;

	if (n > p->free_slots)
		return -1;
	for (uint32_t i = 0; i < p->cfg.nb_slots; i++) {
		run = p->slot_owner[i] ? 0 : run + 1;
		if (run == n) {
			uint32_t base = i + 1 - n;

			for (uint32_t k = base; k <= i; k++) {
				struct slot *s = &p->slots[k];

				p->slot_owner[k] = owner;
				s->cur = 0;
				s->has_round = 0;
				s->waited = 0;
				s->last_round = 0;
				s->last_wait_ns = 0;
				for (int v = 0; v < 2; v++) {
					s->h[v].state = HALF_IDLE;
					s->h[v].bitmap = 0;
					memset(&s->h[v].key, 0, sizeof(s->h[v].key));
				}
			}
			p->free_slots -= n;
			return base;
		}
	}
	return -1;
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
	pl_event(p, &(struct pipeline_event){ .kind = PEV_FREED, .job_id = j->params.job_id,
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
	h.bound = 0;	/* only a DATA packet carries one */
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
static void
put_error(struct ina_pkt *o, uint32_t job_id, uint64_t token, uint8_t encoding, uint16_t code,
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

static struct ina_pkt *
send_error(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *rx, uint16_t code,
	   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static struct ina_pkt *
send_error(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *rx, uint16_t code,
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
	put_error(o, rx->job_id, rx->token, rx->encoding, code, msg, (size_t)n);
	pl_event(p, &(struct pipeline_event){ .kind = PEV_REFUSED, .job_id = rx->job_id,
					      .rank = rx->rank, .status = code, .text = msg,
					      .text_len = (uint32_t)n });
	return o;
}

static struct ina_pkt *
send_join_ack(struct pipeline *p, struct ina_pkt *in, const struct job *j, const struct ina_hdr *rx)
{
	struct ina_hdr h = *rx;
	struct ina_pkt *o = pl_answer_buf(p, in, INA_HDR_SIZE + sizeof(struct ina_wire_join));

	if (!o)
		return NULL;
	h.flags = (uint8_t)((j->standby ? INA_F_STANDBY : 0) |
			    (j->params.lanes < j->want_lanes ? INA_F_GRANT : 0));
	h.lane = h.block_size = h.n_elems = 0;
	h.tensor_id = h.round = h.tensor_len = h.block = h.next = 0;
	h.exp = 0;
	pl_put_hdr(o, j, INA_T_JOIN_ACK, &h);
	ina_wire_encode_join(j->params.world, j->params.lanes, j->params.max_block,
			     o->data + INA_HDR_SIZE);
	ina_wire_join_set_ssp(o->data + INA_HDR_SIZE, j->ssp);
	ina_wire_join_set_weight(o->data + INA_HDR_SIZE, j->weight);
	o->len += sizeof(struct ina_wire_join);
	return o;
}

/* A job that can give slots back at a round boundary: bsp, on a switch of
 * one partition, neither replicated nor a rack's, not standing by. */
static int
can_give_back(const struct pipeline *p, const struct job *j)
{
	return !j->ssp && p->cfg.part_count == 1 && !p->cfg.replica.len && !p->cfg.primary.len &&
	       !p->cfg.uplink.len && !j->standby && !j->aborted && !j->linger_until;
}

/*
 * --share fair: the JOIN 'h' of a new job finds less than its share free.
 * Jobs holding more than their new share (p->share, as fair_lanes() left it)
 * are told to shrink to it from a round boundary, and the JOIN waits (1)
 * while any job is shrinking, up to share_wait_ns; 0: it does not wait (no
 * job can give back, another job waits already, or the wait is over).
 */
static int
give_back(struct pipeline *p, const struct ina_hdr *h, uint64_t now)
{
	int pending = 0;
	uint16_t n = 0;

	if (!p->cfg.share_wait_ns)
		return 0;
	if (p->waiting && (p->wait_job_id != h->job_id || p->wait_token != h->token)) {
		if (now - p->wait_since_ns < p->cfg.share_wait_ns)
			return 0;	/* one job waits at a time */
		p->waiting = 0;		/* that one gave up */
	}
	if (p->waiting && now - p->wait_since_ns >= p->cfg.share_wait_ns) {
		p->waiting = 0;
		return 0;
	}
	for (uint16_t i = 0; i < p->cfg.max_jobs; i++) {
		struct job *j = &p->jobs[i];
		uint16_t l;

		if (!j->active)
			continue;
		l = share_lanes_of(p->share[n++].grant, j->want_lanes, 1, 1);
		if (j->reshape_lanes) {
			pending = 1;
			continue;
		}
		if (l == 0 || l >= j->params.lanes || !can_give_back(p, j))
			continue;
		j->reshape_lanes = l;
		j->reshape_round = j->has_max_round ? j->max_round + 2 : 1;
		j->moved = 0;
		p->st.reshapes++;
		pending = 1;
		pl_event(p, &(struct pipeline_event){ .kind = PEV_GIVE_BACK,
						      .job_id = j->params.job_id,
						      .want_lanes = j->params.lanes, .lanes = l,
						      .round = j->reshape_round,
						      .other_job = h->job_id });
	}
	if (!pending)
		return 0;
	if (!p->waiting) {
		p->waiting = 1;
		p->wait_job_id = h->job_id;
		p->wait_token = h->token;
		p->wait_since_ns = now;
	}
	return 1;
}

/* Every rank of 'j' sent a DATA of the reshape round: the lanes past the
 * new count are idle for good, and their slots go back to the pool. */
static void
reshape_done(struct pipeline *p, struct job *j)
{
	uint16_t old = j->nb_slots, l = j->reshape_lanes;

	for (uint32_t i = j->slot_base + l; i < j->slot_base + old; i++)
		p->slot_owner[i] = 0;
	p->free_slots += old - l;
	j->nb_slots = l;
	j->params.lanes = l;
	j->reshape_lanes = 0;
	p->st.reshaped++;
	pl_event(p, &(struct pipeline_event){ .kind = PEV_RESHAPED, .job_id = j->params.job_id,
					      .lanes = l, .round = j->reshape_round,
					      .slots = (uint32_t)(old - l) });
}

/* 1 when job 'job_id' (its token) was sent to the host aggregator lately. */
static int
was_redirected(const struct pipeline *p, uint32_t job_id, uint64_t token, uint64_t now)
{
	for (uint16_t i = 0; i < PL_REDIRECTED; i++) {
		const struct redirected *r = &p->redirected[i];

		if (r->until_ns > now && r->job_id == job_id && r->token == token)
			return 1;
	}
	return 0;
}

/* Remembers (or refreshes) job 'job_id' as sent to the host aggregator. */
static void
remember_redirect(struct pipeline *p, uint32_t job_id, uint64_t token, uint64_t now)
{
	struct redirected *free_r = NULL;

	for (uint16_t i = 0; i < PL_REDIRECTED; i++) {
		struct redirected *r = &p->redirected[i];

		if (r->until_ns > now && r->job_id == job_id && r->token == token) {
			r->until_ns = now + PL_REDIRECT_MEMORY_NS;
			return;
		}
		if (!free_r && r->until_ns <= now)
			free_r = r;
	}
	if (!free_r) {
		free_r = &p->redirected[p->next_redirected];
		p->next_redirected = (uint16_t)((p->next_redirected + 1) % PL_REDIRECTED);
	}
	free_r->job_id = job_id;
	free_r->token = token;
	free_r->until_ns = now + PL_REDIRECT_MEMORY_NS;
}

/*
 * No slots here for the job of JOIN 'h': a JOIN_ACK flagged REDIRECT, epoch
 * 0, echoing the JOIN's payload and naming the host aggregator. The job is
 * not admitted; its id is remembered so that its other ranks go there too.
 */
static struct ina_pkt *
send_redirect(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *rx, uint16_t world,
	      uint16_t lanes, uint16_t max_block, uint8_t ssp, uint8_t weight, uint64_t now,
	      const char *why)
{
	struct ina_hdr h = *rx;
	struct ina_pkt *o;
	uint8_t *pl;

	remember_redirect(p, rx->job_id, rx->token, now);
	p->st.jobs_redirected++;
	pl_event(p, &(struct pipeline_event){ .kind = PEV_REDIRECTED, .job_id = rx->job_id,
					      .rank = rx->rank, .text = why,
					      .text_len = (uint32_t)strlen(why),
					      .ipv4 = p->cfg.host_aggregator_ipv4,
					      .port = p->cfg.host_aggregator_port });
	o = pl_answer_buf(p, in, INA_HDR_SIZE + sizeof(struct ina_wire_join) +
					 sizeof(struct ina_wire_redirect));
	if (!o)
		return NULL;
	h.flags = INA_F_REDIRECT;
	h.epoch = 0;
	h.lane = h.block_size = h.n_elems = 0;
	h.tensor_id = h.round = h.tensor_len = h.block = h.next = 0;
	h.exp = 0;
	pl_put_hdr(o, NULL, INA_T_JOIN_ACK, &h);
	pl = o->data + INA_HDR_SIZE;
	ina_wire_encode_join(world, lanes, max_block, pl);
	ina_wire_join_set_ssp(pl, ssp);
	ina_wire_join_set_weight(pl, weight);
	ina_wire_encode_redirect(p->cfg.host_aggregator_ipv4, p->cfg.host_aggregator_port,
				 pl + sizeof(struct ina_wire_join));
	o->len += sizeof(struct ina_wire_join) + sizeof(struct ina_wire_redirect);
	return o;
}

static struct ina_pkt *
handle_join(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *h, uint64_t now)
{
	uint16_t world, lanes, max_block;
	uint8_t standby = (h->flags & INA_F_STANDBY) != 0;
	struct job *j = pl_job_find(p, h->job_id);

	uint8_t ssp = ina_wire_join_ssp(in->data + INA_HDR_SIZE);
	uint8_t weight = ina_wire_join_weight(in->data + INA_HDR_SIZE);

	ina_wire_decode_join(in->data + INA_HDR_SIZE, &world, &lanes, &max_block);
	p->st.joins++;
	if (j && j->params.token != h->token) {
		/* Not this job's secret: dropped and counted, never answered. */
		p->st.drop_wire[INA_WIRE_WRONG_TOKEN]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (standby) {
		if (!p->cfg.primary.len) {
			p->st.jobs_refused++;
			return send_error(p, in, h, INA_WERR_UNSUPPORTED,
					  "job %" PRIu32 ": this switch is no replica (it has no "
					  "primary): it cannot stand by for the job", h->job_id);
		}
		if (h->epoch == 0) {
			/* Standing by needs the primary's epoch. */
			p->st.drop_wire[INA_WIRE_WRONG_EPOCH]++;
			ina_pkt_free(in);
			return NULL;
		}
		if (j && j->taken_over) {
			/* A late copy: the job runs here now. */
			p->st.drop[PDROP_TAKEN_OVER]++;
			ina_pkt_free(in);
			return NULL;
		}
		if (j && j->standby && h->epoch != j->params.epoch) {
			/* The job re-joined the primary under a new epoch. */
			pl_event(p, &(struct pipeline_event){ .kind = PEV_STANDBY_REPLACED,
							      .job_id = h->job_id,
							      .old_epoch = j->params.epoch,
							      .epoch = h->epoch });
			pl_job_free(p, j);
			j = NULL;
		}
	}
	if (j && standby != j->standby && !j->taken_over) {
		return send_error(p, in, h, INA_WERR_MISMATCH,
				  "job %" PRIu32 ": rank %u joins %s, but the job %s here",
				  h->job_id, h->rank, standby ? "standing by" : "to run",
				  j->standby ? "stands by" : "runs");
	}
	if (j && (j->aborted || (j->finished >> h->rank & 1))) {
		/*
		 * A rank that finished joins again: a new run of the job id. The
		 * old run still lingers for ranks finishing its last round, so
		 * the JOIN waits (the worker retries) until every rank has sent
		 * FIN or the linger ran out, which frees the old run. An
		 * aborted job is freed at the next tick; its JOINs wait too.
		 */
		p->st.drop[PDROP_JOIN_LINGER]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (!j) {
		uint16_t k = p->cfg.part_count;
		uint32_t nb32 = job_slots(p, lanes, ssp);
		uint16_t nb = (uint16_t)nb32;
		uint16_t want = lanes;
		const struct pipeline_uplink_job *uj = NULL;
		int64_t base;
		uint16_t idx;

		int can_redirect = p->cfg.host_aggregator_ipv4 && !standby && !p->cfg.uplink.len;

		if (p->draining) {
			p->st.jobs_refused++;
			return send_error(p, in, h, INA_WERR_SHUTDOWN,
					  "job %" PRIu32 ": the switch is shutting down", h->job_id);
		}
		if (can_redirect && was_redirected(p, h->job_id, h->token, now))
			return send_redirect(p, in, h, world, lanes, max_block, ssp, weight, now,
					     "another rank of the job went there");
		if (max_block > p->cfg.slot_elems) {
			p->st.jobs_refused++;
			return send_error(p, in, h, INA_WERR_UNSUPPORTED,
					  "job %" PRIu32 ": block size %u is above the switch's slot width %u",
					  h->job_id, max_block, p->cfg.slot_elems);
		}
		if (p->cfg.max_pkt && (uint64_t)INA_HDR_SIZE + (uint64_t)max_block *
						ina_wire_elem_size(h->encoding) > p->cfg.max_pkt) {
			/* The slot holds it, but its RESULT would not fit a packet. */
			p->st.jobs_refused++;
			return send_error(p, in, h, INA_WERR_UNSUPPORTED,
					  "job %" PRIu32 ": a block of %u %s elements does not fit the "
					  "switch's %" PRIu32 "-byte packets",
					  h->job_id, max_block, ina_wire_encoding_name(h->encoding),
					  p->cfg.max_pkt);
		}
		if (ssp) {
			const char *why = ssp_refusal(p, h, lanes, nb32);

			if (why) {
				p->st.jobs_refused++;
				return send_error(p, in, h, INA_WERR_UNSUPPORTED,
						  "job %" PRIu32 ": ssp:%u %s", h->job_id, ssp, why);
			}
		}
		if (p->cfg.uplink.len) {
			uj = uplink_job_lookup(p, h->job_id);
			if (!uj) {
				p->st.jobs_refused++;
				return send_error(p, in, h, INA_WERR_UNSUPPORTED,
						  "job %" PRIu32 ": this rack switch has no rank in the "
						  "spine's job for it (ina-switch --uplink-job)", h->job_id);
			}
			if (h->encoding == INA_ENC_BF16) {
				p->st.jobs_refused++;
				return send_error(p, in, h, INA_WERR_UNSUPPORTED,
						  "job %" PRIu32 ": a rack switch does not run bf16 jobs "
						  "(the partial sum would be rounded twice); use f32 or i32",
						  h->job_id);
			}
		}
		for (idx = 0; idx < p->cfg.max_jobs && p->jobs[idx].active; idx++)
			;
		if (idx == p->cfg.max_jobs) {
			p->st.jobs_refused++;
			return send_error(p, in, h, INA_WERR_NO_JOBS,
					  "job %" PRIu32 ": the switch already serves %u jobs, its maximum",
					  h->job_id, p->cfg.max_jobs);
		}
		if (p->cfg.share.policy == SHARE_FAIR && !standby) {
			uint32_t share;
			uint16_t g = fair_lanes(p, lanes, ssp, weight, &share);
			uint16_t full = share_lanes_of(share, lanes, k, job_unit(ssp));

			if (g < full && give_back(p, h, now)) {
				/* Others shrink to their share; the worker resends. */
				p->st.drop[PDROP_JOIN_WAIT]++;
				ina_pkt_free(in);
				return NULL;
			}

			if (g == 0 && can_redirect)
				return send_redirect(p, in, h, world, lanes, max_block, ssp, weight,
						     now, "its fair share of the slots is under its minimum");
			if (g == 0) {
				p->st.jobs_refused++;
				return send_error(p, in, h, INA_WERR_NO_SLOTS,
						  "job %" PRIu32 ": its fair share is %" PRIu32
						  " slots (weight %u of %u jobs), %" PRIu32 " free in "
						  "one run; it needs at least %" PRIu32, h->job_id,
						  share, weight ? weight : 1u, (unsigned)(p->nb_jobs + 1),
						  slots_longest_free(p),
						  p->cfg.share.min_slots < nb32 ? p->cfg.share.min_slots
										 : nb32);
			}
			lanes = g;
			nb32 = job_slots(p, lanes, ssp);
			nb = (uint16_t)nb32;
		}
		if (p->cfg.host_mode && !standby) {
			/* A host: the lanes that fit in the longest free run. */
			uint32_t longest = slots_longest_free(p);
			uint16_t unit = job_unit(ssp);

			if (nb32 > longest) {
				lanes = share_lanes_of(longest / unit * unit, lanes, k, unit);
				if (lanes == 0)
					lanes = want;	/* refused below */
				nb32 = job_slots(p, lanes, ssp);
				nb = (uint16_t)nb32;
			}
		}
		base = slots_reserve(p, nb, (uint16_t)(idx + 1));
		if (base < 0 && can_redirect)
			return send_redirect(p, in, h, world, want, max_block, ssp, weight, now,
					     "no room for its lanes");
		if (base < 0 && k > 1) {
			p->st.jobs_refused++;
			return send_error(p, in, h, INA_WERR_NO_SLOTS,
					  "job %" PRIu32 ": needs %u contiguous slots in each of %u"
					  " partitions (%u lanes); %" PRIu32 " of %" PRIu32 " are free",
					  h->job_id, nb, k, lanes, p->free_slots, p->cfg.nb_slots);
		}
		if (base < 0) {
			p->st.jobs_refused++;
			return send_error(p, in, h, INA_WERR_NO_SLOTS,
					  "job %" PRIu32 ": needs %u contiguous slots (%s); %" PRIu32
					  " of %" PRIu32 " are free",
					  h->job_id, nb, ssp ? "S + 2 per lane" : "one per lane",
					  p->free_slots, p->cfg.nb_slots);
		}
		if (p->waiting && p->wait_job_id == h->job_id && p->wait_token == h->token)
			p->waiting = 0;
		j = &p->jobs[idx];
		memset(j, 0, sizeof(*j));
		j->active = 1;
		j->params.job_id = h->job_id;
		if (standby) {
			/* The primary's epoch: every packet of the job carries it. */
			j->standby = 1;
			j->params.epoch = h->epoch;
			p->st.standby_jobs++;
		} else {
			j->params.epoch = p->next_epoch++;
			if (p->next_epoch == 0)
				p->next_epoch = 1;
		}
		j->params.token = h->token;
		j->params.world = world;
		j->params.lanes = lanes;
		j->want_lanes = want;
		j->weight = weight;
		j->params.max_block = max_block;
		j->params.encoding = h->encoding;
		j->enc = ina_encoding(h->encoding);
		j->ssp = ssp;
		j->slot_base = (uint32_t)base;
		j->nb_slots = nb;
		j->full = world == 64 ? ~0ull : (1ull << world) - 1;
		if (uj) {
			/* A rack: the job runs once the spine admitted it. */
			j->up = UP_JOINING;
			j->up_rank = uj->rank;
			j->up_world = uj->world;
		}
		for (uint16_t r = 0; r < INA_MAX_WORLD; r++)
			j->heard_ns[r] = now;
		p->nb_jobs++;
		p->st.jobs_admitted++;
		if (lanes < want)
			p->st.jobs_granted++;
		pl_event(p, &(struct pipeline_event){ .kind = PEV_ADMITTED, .job_id = h->job_id,
						      .lanes = lanes, .want_lanes = want,
						      .weight = weight, .epoch = j->params.epoch,
						      .world = world, .encoding = h->encoding,
						      .max_block = max_block, .standby = standby });
	} else if (world != j->params.world || lanes != j->want_lanes ||
		   max_block != j->params.max_block || h->encoding != j->params.encoding) {
		return send_error(p, in, h, INA_WERR_MISMATCH,
				  "job %" PRIu32 ": rank %u joins with world %u, %u lanes, %s, B <= %u; "
				  "the job has world %u, %u lanes, %s, B <= %u",
				  h->job_id, h->rank, world, lanes, ina_wire_encoding_name(h->encoding),
				  max_block, j->params.world, j->want_lanes,
				  ina_wire_encoding_name(j->params.encoding), j->params.max_block);
	} else if (ssp != j->ssp) {
		return send_error(p, in, h, INA_WERR_MISMATCH,
				  "job %" PRIu32 ": rank %u joins with consistency %s%.0u; the job "
				  "runs %s%.0u", h->job_id, h->rank, ssp ? "ssp:" : "bsp", ssp,
				  j->ssp ? "ssp:" : "bsp", j->ssp);
	} else if (weight != j->weight) {
		return send_error(p, in, h, INA_WERR_MISMATCH,
				  "job %" PRIu32 ": rank %u joins with weight %u; the job has weight %u",
				  h->job_id, h->rank, weight, j->weight);
	}
	j->joined |= 1ull << h->rank;
	j->peers[h->rank] = in->peer;
	j->last_active_ns = now;
	if (j->up == UP_JOINING)
		return uplink_join(p, in, j);	/* answered on the spine's JOIN_ACK */
	return send_join_ack(p, in, j, h);
}

/* Writes the result kept in half 'hf' of lane 'lane' into 'o'. */
void
pl_put_result(const struct pipeline *p, struct ina_pkt *o, const struct job *j, uint16_t lane,
	   uint8_t ver, const struct half *hf)
{
	struct ina_hdr h;
	uint16_t n = 0;

	(void)p;
	memset(&h, 0, sizeof(h));
	h.flags = (uint8_t)(ver | (hf->saturated ? INA_F_SATURATED : 0) |
			    (hf->deferred ? INA_F_DEFERRED : 0) | (hf->partial ? INA_F_PARTIAL : 0));
	h.lane = lane;
	h.tensor_id = hf->key.tensor_id;
	h.round = hf->key.round;
	h.tensor_len = hf->key.tensor_len;
	h.block = hf->key.block;
	h.block_size = hf->key.block_size;
	h.next = hf->next;
	h.exp = hf->next == INA_BLOCK_END ? 0 : hf->exp;
	if (hf->has_data && !hf->deferred)
		n = ina_wire_block_elems(hf->key.tensor_len, hf->key.block_size, hf->key.block);
	h.n_elems = n;
	pl_put_hdr(o, j, INA_T_RESULT, &h);
	if (j->reshape_lanes && hf->key.round + 1u >= j->reshape_round) {
		/* Give-back (--share fair): from round reshape_round on, the job
		 * runs on reshape_lanes lanes; marked from the round before. */
		uint16_t st_be = htobe16(j->reshape_lanes);
		uint32_t bound_be = htobe32(j->reshape_round);

		o->data[offsetof(struct ina_wire_hdr, flags)] |= INA_F_RESHAPE;
		memcpy(o->data + offsetof(struct ina_wire_hdr, status), &st_be, sizeof(st_be));
		memcpy(o->data + offsetof(struct ina_wire_hdr, bound), &bound_be, sizeof(bound_be));
	}
	if (n) {
		/* For bf16, the one rounding of the binary32 sum. */
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

/* The largest RESULT for a block of size h->block_size in j's encoding
 * (with room for an ssp job's PARTIAL trailer). */
uint32_t
pl_result_size(const struct job *j, const struct ina_hdr *h)
{
	return INA_HDR_SIZE + (uint32_t)(h->block_size * ina_wire_elem_size(j->params.encoding)) +
	       (j->ssp ? INA_PARTIAL_TRAILER : 0);
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

void
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
void
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

int
pl_key_equal(const struct block_key *a, const struct block_key *b)
{
	return a->tensor_id == b->tensor_id && a->round == b->round && a->block == b->block &&
	       a->tensor_len == b->tensor_len && a->block_size == b->block_size;
}

/* Same block named, but a tensor length or block size that disagrees. */
int
pl_key_shape_differs(const struct block_key *a, const struct block_key *b)
{
	return a->tensor_id == b->tensor_id && a->round == b->round && a->block == b->block &&
	       (a->tensor_len != b->tensor_len || a->block_size != b->block_size);
}

/* Adds the packet's contribution to the open half. */
void
pl_half_add(struct pipeline *p, const struct job *j, struct half *hf, const struct ina_hdr *h,
	 const uint8_t *payload)
{
	hf->bitmap |= 1ull << h->rank;
	if (h->bound < hf->bound)
		hf->bound = h->bound;
	if (h->n_elems) {
		if (!hf->has_data) {
			j->enc->load(hf->acc.f32, payload, h->n_elems);
		} else {
			size_t sat = j->enc->add(hf->acc.f32, payload, h->n_elems);

			if (sat) {
				hf->saturated = 1;
				p->st.saturated += sat;
			}
		}
		hf->has_data = 1;
	}
	if (h->next < hf->next) {
		hf->next = h->next;
		hf->exp = h->exp;
	} else if (h->next == hf->next && h->exp > hf->exp) {
		hf->exp = h->exp;
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
	pl_event(p, &(struct pipeline_event){ .kind = PEV_RANK_DEAD, .job_id = j->params.job_id,
					      .other_rank = r, .ms = silent_ms, .rank = h->rank,
					      .lane = h->lane, .block = h->block,
					      .round = h->round });
	o = send_error(p, in, h, INA_WERR_PEER_DEAD,
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

	if (s->waited && now - s->last_wait_ns < p->cfg.wait_interval_ns) {
		ina_pkt_free(in);
		return NULL;
	}
	o = pl_answer_buf(p, in, INA_HDR_SIZE + INA_WAIT_PAYLOAD);
	if (!o)
		return NULL;
	s->last_wait_ns = now;
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

static struct ina_pkt *
handle_data(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h,
	    uint64_t now)
{
	struct slot *s = &p->slots[j->slot_base + h->lane / p->cfg.part_count];
	uint8_t ver = h->flags & INA_F_VER;
	struct half *hf = &s->h[ver];
	struct block_key key = pl_key_of(h);
	struct ina_pkt *o;

	if (!(j->joined >> h->rank & 1) || j->up == UP_JOINING) {
		/* (a rack's job runs once the spine admitted it) */
		p->st.drop[PDROP_NOT_JOINED]++;
		goto drop;
	}
	if (j->finished >> h->rank & 1) {
		p->st.drop[PDROP_AFTER_FIN]++;
		goto drop;
	}
	if (j->ssp)
		return ssp_data(p, in, j, h, now);	/* ssp.c: S + 1 slots per lane */
	if (ver != s->cur) {
		/* The shadow: a retransmission for a finished block. */
		if (hf->state != HALF_RESULT || !pl_key_equal(&hf->key, &key)) {
			p->st.drop[hf->state == HALF_RESULT && pl_key_shape_differs(&hf->key, &key)
					   ? PDROP_SHAPE
					   : PDROP_NO_MATCH]++;
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
	pl_half_add(p, j, hf, h, in->data + INA_HDR_SIZE);
	if (hf->bitmap != j->full) {
		ina_pkt_free(in);
		return NULL;
	}

	if (j->up) {
		/* A rack: the partial sum goes upstream; the spine completes. */
		hf->state = HALF_UP;
		return uplink_data(p, in, j, s, h->lane, ver, 0, now);
	}
	/* Complete: the sum goes to every rank; the halves swap roles. If no
	 * buffer, the workers' retransmissions will ask the shadow. */
	hf->deferred = (uint8_t)pl_half_deferred(j, hf);
	o = pl_answer_buf(p, in, pl_result_size(j, h));
	if (o) {
		pl_put_result(p, o, j, h->lane, ver, hf);
		pl_result_route(p, o, j, INA_RANK_ALL);
		p->st.results++;
		if (!hf->has_data)
			p->st.results_empty++;
		if (hf->deferred)
			p->st.results_deferred++;
		p->st.result_bytes += o->len - INA_HDR_SIZE;
	}
	pl_slot_complete(s, ver);
	return o;

drop:
	ina_pkt_free(in);
	return NULL;
}

/* How long a job lingers after a FIN: a standby job longer (standby_linger_ns). */
static uint64_t
job_linger_ns(const struct pipeline *p, const struct job *j)
{
	if (j->standby && p->cfg.standby_linger_ns > p->cfg.linger_ns)
		return p->cfg.standby_linger_ns;
	return p->cfg.linger_ns;
}

static struct ina_pkt *
handle_fin(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h,
	   uint64_t now)
{
	struct ina_hdr a = *h;
	struct ina_pkt *o;

	p->st.fins++;
	j->finished |= 1ull << h->rank;
	j->linger_until = now + job_linger_ns(p, j);
	if (j->up && (j->finished & j->full) == j->full)
		return uplink_fin(p, in, j, h);	/* answered on the spine's FIN_ACK */
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
	pl_event(p, &(struct pipeline_event){ .kind = PEV_RANK_LEFT, .job_id = j->params.job_id,
					      .rank = h->rank });
	if (!others && j->up == UP_RUNNING) {
		/* A rack whose last rank left leaves the spine's job. */
		o = uplink_leave(p, in, j);
		pl_job_free(p, j);
		return o;
	}
	o = others ? send_error(p, in, h, INA_WERR_LEFT, "job %" PRIu32 ": rank %u left the job",
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

/* Where a block stands in its lane's round: the i32 opener comes first. */
static uint64_t
block_order(uint32_t block)
{
	return block == INA_BLOCK_OPEN ? 0 : (uint64_t)block + 1;
}

/* Is the result in 'h' later than the lane's stored one (round, then block)? */
static int
repl_newer(const struct slot *s, const struct ina_hdr *h)
{
	const struct half *sh = &s->h[s->cur ^ 1];
	int32_t d;

	if (sh->state != HALF_RESULT)
		return 1;
	d = (int32_t)(h->round - sh->key.round);
	if (d != 0)
		return d > 0;
	return block_order(h->block) > block_order(sh->key.block);
}

/*
 * A replica stores the primary's result 'h' (payload at 'payload') as lane
 * h->lane's last result: into the half its version bit names, as if the
 * block had completed here, then through the same completion.
 */
static void
repl_store(struct pipeline *p, struct job *j, struct slot *s, const struct ina_hdr *h,
	   const uint8_t *payload)
{
	uint8_t ver = h->flags & INA_F_VER;
	struct half *hf = &s->h[ver];
	struct block_key key = pl_key_of(h);

	pl_half_open(hf, &key);
	hf->bitmap = j->full;
	hf->next = h->next;
	hf->exp = h->exp;
	hf->saturated = (h->flags & INA_F_SATURATED) != 0;
	hf->deferred = (h->flags & INA_F_DEFERRED) != 0;
	hf->has_data = h->n_elems != 0 || hf->deferred;
	if (h->n_elems) {
		/* Exact: pl_put_result() writes back the same bits (a bf16 widens
		 * to binary32 and rounds back to itself). */
		j->enc->load(hf->acc.f32, payload, h->n_elems);
	}
	pl_slot_complete(s, ver);
	p->st.repl_stored++;
}

/*
 * REPL from the primary for a standby job: a later result than the lane's
 * stored one is stored; either way it goes on to the workers as the RESULT
 * the primary would have sent (fan-out, or a shadow reply to one rank), in
 * the same buffer.
 */
static struct ina_pkt *
handle_repl(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h,
	    uint64_t now)
{
	struct slot *s = &p->slots[j->slot_base + h->lane / p->cfg.part_count];
	uint16_t rank_be = htobe16(INA_RANK_SWITCH);
	struct ina_pkt *o;

	if (j->taken_over) {
		p->st.drop[PDROP_TAKEN_OVER]++;
		goto drop;
	}
	if (!j->standby) {
		p->st.drop[PDROP_NOT_STANDBY]++;
		goto drop;
	}
	if (h->rank != INA_RANK_ALL && !(j->joined >> h->rank & 1)) {
		p->st.drop[PDROP_NOT_JOINED]++;
		goto drop;
	}
	j->last_active_ns = now;
	if (j->linger_until)
		j->linger_until = now + job_linger_ns(p, j);
	if (repl_newer(s, h))
		repl_store(p, j, s, h, in->data + INA_HDR_SIZE);
	o = pl_answer_buf(p, in, in->len);
	if (!o)
		return NULL;
	o->data[offsetof(struct ina_wire_hdr, type)] = INA_T_RESULT;
	memcpy(o->data + offsetof(struct ina_wire_hdr, rank), &rank_be, sizeof(rank_be));
	if (h->rank == INA_RANK_ALL) {
		o->dsts = j->peers;
		o->dst_mask = j->joined;
	} else {
		o->peer = j->peers[h->rank];
	}
	p->st.repl_sent++;
	return o;

drop:
	ina_pkt_free(in);
	return NULL;
}

/* The replica's announcement that it took job 'j' over: header-only, the
 * new epoch, from the switch. Written into 'o' (the caller addresses it). */
static void
put_announce(struct ina_pkt *o, const struct job *j)
{
	pl_put_hdr(o, j, INA_T_FAILOVER, NULL);
}

/* Answers one rank (the sender of 'in') with the announcement again. */
static struct ina_pkt *
announce_again(struct pipeline *p, struct ina_pkt *in, const struct job *j)
{
	struct ina_pkt *o = pl_answer_buf(p, in, INA_HDR_SIZE);

	if (!o)
		return NULL;
	put_announce(o, j);
	p->st.announce_repeats++;
	return o;
}

/*
 * FAILOVER from rank h->rank. For a standby job (the primary's epoch,
 * validated): take it over. The lanes already stand where the stored results
 * left them (repl_store); the job gets the next epoch (never 0), its ranks'
 * silence counts from now, and every rank that has not finished (and the
 * asking one) is told. A
 * job already taken over tells the rank again: it missed the announcement.
 */
static struct ina_pkt *
handle_failover(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h,
		uint64_t now)
{
	struct ina_pkt *o;

	if (!(j->joined >> h->rank & 1)) {
		p->st.drop[PDROP_NOT_JOINED]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (j->taken_over)
		return announce_again(p, in, j);
	if (!j->standby) {
		p->st.drop[PDROP_NOT_STANDBY]++;
		ina_pkt_free(in);
		return NULL;
	}
	j->standby = 0;
	j->taken_over = 1;
	j->old_epoch = j->params.epoch;
	j->params.epoch++;
	if (j->params.epoch == 0)
		j->params.epoch = 1;
	for (uint16_t r = 0; r < INA_MAX_WORLD; r++)
		j->heard_ns[r] = now;
	p->st.takeovers++;
	pl_event(p, &(struct pipeline_event){ .kind = PEV_TAKEOVER, .job_id = j->params.job_id,
					      .rank = h->rank, .old_epoch = j->old_epoch,
					      .epoch = j->params.epoch });
	o = pl_answer_buf(p, in, INA_HDR_SIZE);
	if (!o)
		return NULL;
	put_announce(o, j);
	o->dsts = j->peers;
	/* The asking rank too, even if it sent FIN: it may wait for the ACK. */
	o->dst_mask = (j->joined & ~j->finished) | 1ull << h->rank;
	return o;
}

static struct ina_pkt *
process_one(struct pipeline *p, struct ina_pkt *in, uint64_t now)
{
	const struct ina_job_params *params = NULL;
	struct ina_job_params old_params, new_params;
	struct ina_hdr h;
	struct job *j = NULL;
	enum ina_wire_reason r;
	int old = 0;	/* of the primary's epoch, for a job taken over */

	p->st.rx_pkts++;
	if (p->cfg.uplink.len && ina_peer_equal(&in->peer, &p->cfg.uplink))
		return uplink_rx(p, in, now);	/* from the spine */
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
	if (r != INA_WIRE_OK) {
		p->st.drop_wire[r]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (j && h.type == INA_T_DATA && !old && (j->joined >> h.rank & 1)) {
		if (!j->has_max_round || (int32_t)(h.round - j->max_round) > 0) {
			j->max_round = h.round;
			j->has_max_round = 1;
		}
		if (j->reshape_lanes && (int32_t)(h.round - j->reshape_round) >= 0) {
			j->moved |= 1ull << h.rank;
			if (j->moved == j->full)
				reshape_done(p, j);
		}
	}
	if (h.type == INA_T_JOIN)
		return handle_join(p, in, &h, now);
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
	} else if (h.type != INA_T_DATA && h.type != INA_T_FIN && h.type != INA_T_LEAVE &&
		   h.type != INA_T_KEEPALIVE) {
		p->st.drop[PDROP_UNEXPECTED]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (!j) {
		p->st.drop[PDROP_UNKNOWN_JOB]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (h.type == INA_T_DATA && h.lane % p->cfg.part_count != p->cfg.part_index) {
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
		return handle_repl(p, in, j, &h, now);
	if (old && h.type != INA_T_DATA && h.type != INA_T_FAILOVER) {
		/* FIN, LEAVE or KEEPALIVE of the primary's epoch: not this job's
		 * any more. */
		p->st.drop_wire[INA_WIRE_WRONG_EPOCH]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (h.type == INA_T_KEEPALIVE && !(j->joined >> h.rank & 1)) {
		/* Only a rank of the job lives for it. */
		p->st.drop[PDROP_NOT_JOINED]++;
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
		j->linger_until = now + job_linger_ns(p, j);
	switch (h.type) {
	case INA_T_FAILOVER:
		return handle_failover(p, in, j, &h, now);
	case INA_T_DATA:
		if (old) {
			/* In flight from before the takeover: never aggregated;
			 * the rank learns the new epoch and resends. */
			return announce_again(p, in, j);
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

uint16_t
pipeline_rx_burst(struct pipeline *p, struct ina_pkt **in, uint16_t nb_in, uint64_t now_ns,
		  struct ina_pkt **out)
{
	uint16_t nb_out = 0;

	for (uint16_t i = 0; i < nb_in; i++) {
		struct ina_pkt *o = process_one(p, in[i], now_ns);

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
			pl_event(p, &(struct pipeline_event){ .kind = PEV_EXPIRED,
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
			break;	/* a rack's job takes two packets: on the next call */
		/* A job standing by runs on its primary: nothing to tell. */
		o = told && !j->standby ? ina_pkt_alloc(p->cfg.pool) : NULL;
		if (o) {
			put_error(o, j->params.job_id, j->params.token, j->params.encoding,
				  INA_WERR_SHUTDOWN, msg, sizeof(msg) - 1);
			/* pl_job_free() only marks the job: 'peers' stays valid. */
			o->dsts = j->peers;
			o->dst_mask = told;
			out[nb++] = o;
		}
		if (j->up == UP_RUNNING && nb < max) {
			/* A rack leaves the spine's job: the spine tells the
			 * other racks at once. */
			o = ina_pkt_alloc(p->cfg.pool);
			if (o && (o = uplink_leave(p, o, j)) != NULL)
				out[nb++] = o;
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
	p->cfg.on_event = NULL;	/* partition 0 reported it */
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
