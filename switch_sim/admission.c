/* SPDX-License-Identifier: MIT */
/*
 * Admission (admission.h): a JOIN checked, answered and, for a new job, the
 * slots it gets; the fair share and the give-back of lanes (--share fair),
 * the redirect to a host aggregator, and the JOIN_ACK.
 */
#include <endian.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "admission.h"
#include "cookie.h"
#include "reply_limit.h"
#include "ssp.h"
#include "uplink.h"

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
 * What the job 'job_id' of weight 'weight' weighs in the fair share with the
 * job 'new_id' (weight 'new_weight') arriving. Token mode: its own weight.
 * Tenant mode: the pool is shared between tenants first, equally, then
 * within a tenant by its jobs' weights: the job's weight over its tenant's
 * sum, scaled to TENANT_WEIGHT. So a tenant that starts more jobs, or heavier
 * ones, shares only its own part, and cannot shrink another tenant's jobs
 * below an equal tenant share.
 */
#define TENANT_WEIGHT 4096u
static uint16_t
tenant_weight(const struct pipeline *p, uint32_t job_id, uint8_t weight, uint32_t new_id,
	      uint8_t new_weight)
{
	uint8_t t = ina_tenant_of(job_id);
	uint32_t sum = ina_tenant_of(new_id) == t ? (new_weight ? new_weight : 1u) : 0u;
	uint32_t w = weight ? weight : 1u;

	if (!p->cfg.tenants)
		return w;
	for (uint16_t i = 0; i < p->cfg.max_jobs; i++) {
		const struct job *j = &p->jobs[i];

		if (j->active && ina_tenant_of(j->params.job_id) == t)
			sum += j->weight ? j->weight : 1u;
	}
	w = w * TENANT_WEIGHT / (sum ? sum : 1u);
	return (uint16_t)(w ? w : 1u);
}

/* The jobs and slots that tenant 't' holds. */
static void
tenant_use(const struct pipeline *p, uint8_t t, uint16_t *jobs, uint32_t *slots)
{
	*jobs = 0;
	*slots = 0;
	for (uint16_t i = 0; i < p->cfg.max_jobs; i++) {
		const struct job *j = &p->jobs[i];

		if (j->active && ina_tenant_of(j->params.job_id) == t) {
			(*jobs)++;
			*slots += j->nb_slots;
		}
	}
}

/*
 * --share fair: the lanes a new job asking 'lanes' gets: its weighted share
 * of the pool among the jobs admitted and itself (each admitted job counted
 * with what it asked), no more than the longest run of free slots, in
 * whole rows. 0 when that is under the minimum (min_slots, or what it asks
 * when that is less).
 */
static uint16_t
fair_lanes(struct pipeline *p, uint32_t job_id, uint16_t lanes, uint8_t ssp, uint8_t weight,
	   uint32_t *share)
{
	uint16_t n = 0, unit = job_unit(ssp);
	uint32_t demand = job_slots(p, lanes, ssp), g, longest, least;

	for (uint16_t i = 0; i < p->cfg.max_jobs; i++) {
		const struct job *j = &p->jobs[i];

		if (!j->active)
			continue;
		p->share[n].demand = job_slots(p, j->want_lanes, j->ssp);
		p->share[n].weight = tenant_weight(p, j->params.job_id, j->weight, job_id, weight);
		p->share[n].unit = job_unit(j->ssp);
		n++;
	}
	p->share[n].demand = demand;
	p->share[n].weight = tenant_weight(p, job_id, weight, job_id, weight);
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
			return 0; /* one job waits at a time */
		p->waiting = 0;	  /* that one gave up */
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
						      .want_lanes = j->params.lanes,
						      .lanes = l,
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
void
admission_reshape_done(struct pipeline *p, struct job *j)
{
	uint16_t old = j->nb_slots, l = j->reshape_lanes;

	for (uint32_t i = j->slot_base + l; i < j->slot_base + old; i++)
		p->slot_owner[i] = 0;
	p->free_slots += old - l;
	j->nb_slots = l;
	j->params.lanes = l;
	j->reshape_lanes = 0;
	p->st.reshaped++;
	pl_event(p, &(struct pipeline_event){ .kind = PEV_RESHAPED,
					      .job_id = j->params.job_id,
					      .lanes = l,
					      .round = j->reshape_round,
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
	pl_event(p, &(struct pipeline_event){ .kind = PEV_REDIRECTED,
					      .job_id = rx->job_id,
					      .rank = rx->rank,
					      .text = why,
					      .text_len = (uint32_t)strlen(why),
					      .ipv4 = p->cfg.host_aggregator_ipv4,
					      .port = p->cfg.host_aggregator_port });
	o = pl_answer_buf(p, in,
			  INA_HDR_SIZE + sizeof(struct ina_wire_join) +
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

/* What a JOIN asks: its payload, and whether it stands by. */
struct join_req {
	uint16_t world, lanes, max_block;
	uint8_t ssp, weight, standby;
};

/* A JOIN 'h' of a job not admitted here, asking 'req': the checks, the
 * lanes it gets (fair share, host mode) and its slots. Returns the answer
 * when the job is refused or sent on, or NULL when it waits (dropped) or is
 * admitted; *jp is the new job, or NULL. */
static struct ina_pkt *
admit_new(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *h,
	  const struct join_req *req, uint64_t now, struct job **jp)
{
	uint16_t world = req->world, lanes = req->lanes, max_block = req->max_block;
	uint8_t ssp = req->ssp, weight = req->weight, standby = req->standby;
	struct job *j;
	uint16_t k = p->cfg.part_count;
	uint32_t nb32 = job_slots(p, lanes, ssp);
	uint16_t nb = (uint16_t)nb32;
	uint16_t want = lanes;
	const struct pipeline_uplink_job *uj = NULL;
	int64_t base;
	uint16_t idx;

	int can_redirect = p->cfg.host_aggregator_ipv4 && !standby && !p->cfg.uplink.len;
	/* Tenant mode: the job's tenant (the packet's tag was checked). */
	const struct tenant *tn = tenants_get(p->cfg.tenants, ina_tenant_of(h->job_id));
	uint32_t tenant_slots = 0;

	*jp = NULL;
	if (p->draining) {
		p->st.jobs_refused++;
		return pl_send_error(p, in, h, INA_WERR_SHUTDOWN,
				     "job %" PRIu32 ": the switch is shutting down", h->job_id);
	}
	if (can_redirect && was_redirected(p, h->job_id, h->token, now))
		return send_redirect(p, in, h, world, lanes, max_block, ssp, weight, now,
				     "another rank of the job went there");
	if (max_block > p->cfg.slot_elems) {
		p->st.jobs_refused++;
		return pl_send_error(p, in, h, INA_WERR_UNSUPPORTED,
				     "job %" PRIu32
				     ": block size %u is above the switch's slot width %u",
				     h->job_id, max_block, p->cfg.slot_elems);
	}
	if (p->cfg.max_pkt &&
	    pl_result_bytes(max_block, ina_wire_elem_size(h->encoding), 0, ssp) > p->cfg.max_pkt) {
		/* The slot holds it, but its RESULT (with ssp's trailer, PROTOCOL
		 * 6.7) would not fit a packet. */
		p->st.jobs_refused++;
		return pl_send_error(p, in, h, INA_WERR_UNSUPPORTED,
				     "job %" PRIu32
				     ": a block of %u %s elements%s does not fit the "
				     "switch's %" PRIu32 "-byte packets",
				     h->job_id, max_block, ina_wire_encoding_name(h->encoding),
				     ssp ? " with its ssp trailer" : "", p->cfg.max_pkt);
	}
	if (ssp) {
		const char *why = ssp_refusal(p, h, lanes, nb32);

		if (why) {
			p->st.jobs_refused++;
			return pl_send_error(p, in, h, INA_WERR_UNSUPPORTED,
					     "job %" PRIu32 ": ssp:%u %s", h->job_id, ssp, why);
		}
	}
	if (p->cfg.uplink.len) {
		uj = uplink_job_lookup(p, h->job_id);
		if (!uj) {
			p->st.jobs_refused++;
			return pl_send_error(p, in, h, INA_WERR_UNSUPPORTED,
					     "job %" PRIu32 ": this rack switch has no rank in the "
					     "spine's job for it (ina-switch --uplink-job)",
					     h->job_id);
		}
		if (h->encoding == INA_ENC_BF16) {
			p->st.jobs_refused++;
			return pl_send_error(
				p, in, h, INA_WERR_UNSUPPORTED,
				"job %" PRIu32 ": a rack switch does not run bf16 jobs "
				"(the partial sum would be rounded twice); use f32 or i32",
				h->job_id);
		}
	}
	for (idx = 0; idx < p->cfg.max_jobs && p->jobs[idx].active; idx++)
		;
	if (idx == p->cfg.max_jobs) {
		p->st.jobs_refused++;
		return pl_send_error(p, in, h, INA_WERR_NO_JOBS,
				     "job %" PRIu32
				     ": the switch already serves %u jobs, its maximum",
				     h->job_id, p->cfg.max_jobs);
	}
	if (tn) {
		uint16_t used_jobs;
		uint32_t used_slots;

		tenant_use(p, tn->index, &used_jobs, &used_slots);
		if (used_jobs >= tn->max_jobs) {
			p->st.jobs_refused++;
			return pl_send_error(p, in, h, INA_WERR_NO_JOBS,
					     "job %" PRIu32 ": tenant %s already runs %u jobs, its "
					     "quota",
					     h->job_id & INA_TENANT_JOB_MAX, tn->name, used_jobs);
		}
		if ((weight ? weight : 1u) > tn->max_weight) {
			p->st.jobs_refused++;
			return pl_send_error(p, in, h, INA_WERR_UNSUPPORTED,
					     "job %" PRIu32 ": weight %u is above tenant %s's "
					     "largest, %u",
					     h->job_id & INA_TENANT_JOB_MAX, weight, tn->name,
					     tn->max_weight);
		}
		tenant_slots = used_slots;
	}
	if (p->cfg.share.policy == SHARE_FAIR && !standby) {
		uint32_t share;
		uint16_t g = fair_lanes(p, h->job_id, lanes, ssp, weight, &share);
		uint16_t full = share_lanes_of(share, lanes, k, job_unit(ssp));

		if (g < full && give_back(p, h, now)) {
			/* Others shrink to their share; the worker resends. */
			p->st.drop[PDROP_JOIN_WAIT]++;
			ina_pkt_free(in);
			return NULL;
		}

		if (g == 0 && can_redirect)
			return send_redirect(p, in, h, world, lanes, max_block, ssp, weight, now,
					     "its fair share of the slots is under its minimum");
		if (g == 0) {
			p->st.jobs_refused++;
			/* What is free, and how many jobs share it, is told only
			 * to a JOIN that proved its tenant's key (PROTOCOL 5.1):
			 * in token mode anyone can make up a token. */
			if (p->cfg.tenants)
				return pl_send_error(p, in, h, INA_WERR_NO_SLOTS,
						     "job %" PRIu32 ": its fair share is %" PRIu32
						     " slots (weight %u of %u jobs), %" PRIu32
						     " free in "
						     "one run; it needs at least %" PRIu32,
						     h->job_id, share, weight ? weight : 1u,
						     (unsigned)(p->nb_jobs + 1),
						     slots_longest_free(p),
						     p->cfg.share.min_slots < nb32
							     ? p->cfg.share.min_slots
							     : nb32);
			return pl_send_error(p, in, h, INA_WERR_NO_SLOTS,
					     "job %" PRIu32
					     ": its fair share of the slots is under "
					     "the %" PRIu32 " it needs at least",
					     h->job_id,
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
				lanes = want; /* refused below */
			nb32 = job_slots(p, lanes, ssp);
			nb = (uint16_t)nb32;
		}
	}
	if (tn && (uint64_t)tenant_slots + nb32 > tn->max_slots) {
		p->st.jobs_refused++;
		return pl_send_error(p, in, h, INA_WERR_NO_SLOTS,
				     "job %" PRIu32 ": its %" PRIu32 " slots would bring tenant %s "
				     "to %" PRIu32 ", above its quota of %" PRIu32,
				     h->job_id & INA_TENANT_JOB_MAX, nb32, tn->name,
				     tenant_slots + nb32, tn->max_slots);
	}
	base = slots_reserve(p, nb, (uint16_t)(idx + 1));
	if (base < 0 && can_redirect)
		return send_redirect(p, in, h, world, want, max_block, ssp, weight, now,
				     "no room for its lanes");
	if (base < 0 && k > 1) {
		p->st.jobs_refused++;
		if (p->cfg.tenants)
			return pl_send_error(p, in, h, INA_WERR_NO_SLOTS,
					     "job %" PRIu32
					     ": needs %u contiguous slots in each of "
					     "%u partitions (%u lanes); %" PRIu32 " of %" PRIu32
					     " are free",
					     h->job_id, nb, k, lanes, p->free_slots,
					     p->cfg.nb_slots);
		return pl_send_error(p, in, h, INA_WERR_NO_SLOTS,
				     "job %" PRIu32 ": needs %u contiguous slots in each of %u"
				     " partitions (%u lanes); no such run is free",
				     h->job_id, nb, k, lanes);
	}
	if (base < 0) {
		p->st.jobs_refused++;
		if (p->cfg.tenants)
			return pl_send_error(p, in, h, INA_WERR_NO_SLOTS,
					     "job %" PRIu32
					     ": needs %u contiguous slots (%s); %" PRIu32
					     " of %" PRIu32 " are free",
					     h->job_id, nb, ssp ? "S + 2 per lane" : "one per lane",
					     p->free_slots, p->cfg.nb_slots);
		return pl_send_error(p, in, h, INA_WERR_NO_SLOTS,
				     "job %" PRIu32 ": needs %u contiguous slots (%s); no such run "
				     "is free",
				     h->job_id, nb, ssp ? "S + 2 per lane" : "one per lane");
	}
	if (p->waiting && p->wait_job_id == h->job_id && p->wait_token == h->token)
		p->waiting = 0;
	j = &p->jobs[idx];
	memset(j, 0, sizeof(*j));
	j->active = 1;
	j->params.job_id = h->job_id;
	if (tn)
		ina_auth_job_key(tn->key, h->job_id, &j->key);
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
	pl_event(p, &(struct pipeline_event){ .kind = PEV_ADMITTED,
					      .job_id = h->job_id,
					      .lanes = lanes,
					      .want_lanes = want,
					      .weight = weight,
					      .epoch = j->params.epoch,
					      .world = world,
					      .encoding = h->encoding,
					      .max_block = max_block,
					      .standby = standby });
	*jp = j;
	return NULL;
}

/*
 * A JOIN that proved the job's secret (its token) for a rank already
 * admitted, from another address: the rank's results never move silently.
 * The run ends as for a rank that left: every rank still in it hears ERROR
 * LEFT at the address it joined from (the moved rank's old one included),
 * the new address nothing; the job is freed at the next tick, and the
 * JOIN's retry admits a new run under a new epoch, where no packet of the
 * old one counts (PROTOCOL 5.1).
 */
static struct ina_pkt *
rebind(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h)
{
	uint64_t told = j->joined & ~j->finished;
	struct ina_pkt *o;

	p->st.jobs_aborted++;
	j->aborted = 1;
	o = pl_send_error(p, in, h, INA_WERR_LEFT,
			  "job %" PRIu32 ": rank %u joined again from another address; the job "
			  "is gone (re-join to go on)",
			  h->job_id, h->rank);
	if (o) {
		/* pl_job_free() at the tick only marks the job: 'peers' stays. */
		o->dsts = j->peers;
		o->dst_mask = told;
	}
	return o;
}

/*
 * A JOIN whose source has not proved it receives (PROTOCOL 5.1): answered
 * with a header-only ERROR COOKIE, 56 bytes to the JOIN's 64, carrying the
 * cookie of its address for run 'epoch' (0: a JOIN that binds a rank anew;
 * a job's epoch: one that moves a bound rank); nothing is kept. The caller
 * counts it.
 */
static struct ina_pkt *
send_cookie(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *h, uint32_t epoch,
	    uint64_t now)
{
	struct ina_hdr c;
	struct ina_pkt *o;

	o = pl_answer_buf(p, in, INA_HDR_SIZE);
	if (!o)
		return NULL;
	memset(&c, 0, sizeof(c));
	c.version = INA_WIRE_VERSION;
	c.type = INA_T_ERROR;
	c.encoding = h->encoding;
	c.job_id = h->job_id;
	c.token = h->token;
	c.rank = INA_RANK_SWITCH;
	c.status = INA_WERR_COOKIE;
	ina_wire_set_cookie(&c, cookie_make(p->cfg.secret, &o->peer, h->job_id, epoch, now));
	ina_wire_encode_hdr(&c, o->data);
	o->len = INA_HDR_SIZE;
	return o;
}

/* The JOIN's source proved it receives: it echoes its cookie, or it is the
 * address its rank is bound to (which proved it when it joined). */
static int
join_proven(const struct pipeline *p, const struct ina_pkt *in, const struct ina_hdr *h,
	    const struct job *j, uint64_t now)
{
	if (j && (j->joined >> h->rank & 1) && ina_peer_equal(&in->peer, &j->peers[h->rank]))
		return 1;
	return cookie_valid(p->cfg.secret, &in->peer, h->job_id, 0, now, ina_wire_cookie(h));
}

/*
 * JOIN 'h' (the job's secret: its token, or in tenant mode its tag) names a
 * rank bound to another address in the running job 'j': it would end the
 * run (rebind). A job aborted or a rank that finished is not running: its
 * JOIN waits (join_answer).
 */
static int
moves_rank(const struct job *j, const struct ina_pkt *in, const struct ina_hdr *h)
{
	return j && j->params.token == h->token && !j->aborted && (j->joined >> h->rank & 1) &&
	       !(j->finished >> h->rank & 1) && !ina_peer_equal(&in->peer, &j->peers[h->rank]);
}

static struct ina_pkt *join_answer(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *h,
				   uint64_t now);

struct ina_pkt *
admission_join(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *h, uint64_t now)
{
	struct job *j;
	struct ina_pkt *o;

	p->st.joins++;
	j = pl_job_find(p, h->job_id);
	if (moves_rank(j, in, h)) {
		/*
		 * A bound rank's new address (PROTOCOL 5.1) ends the run only
		 * with the cookie of that address for this run (with cookies,
		 * and always in tenant mode, where a tag proves the JOIN the
		 * job's but not fresh): a JOIN replayed from elsewhere, or
		 * from the rank's old address with an old cookie, moves
		 * nothing.
		 */
		if ((p->cfg.join_cookie || p->cfg.tenants) &&
		    !cookie_valid(p->cfg.secret, &in->peer, h->job_id, j->params.epoch, now,
				  ina_wire_cookie(h))) {
			p->st.drop[PDROP_RANK_MOVED]++;
			return send_cookie(p, in, h, j->params.epoch, now);
		}
	} else if (p->cfg.join_cookie && !(j && j->params.token != h->token) &&
		   !join_proven(p, in, h, j, now)) {
		p->st.drop[PDROP_JOIN_UNPROVEN]++;
		return send_cookie(p, in, h, 0, now);
	}
	o = join_answer(p, in, h, now);
	if (o && o->data[1] == INA_T_ERROR && !o->dsts &&
	    !reply_limit_take(p->limit, &o->peer, now)) {
		/* An ERROR to the JOIN's source (up to 4 times its size):
		 * budgeted per source. A fan-out to a job's ranks is not. */
		p->st.drop[PDROP_RATE_LIMITED]++;
		ina_pkt_free(o);
		return NULL;
	}
	return o;
}

static struct ina_pkt *
join_answer(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *h, uint64_t now)
{
	uint16_t world, lanes, max_block;
	uint8_t standby = (h->flags & INA_F_STANDBY) != 0;
	struct job *j = pl_job_find(p, h->job_id);

	uint8_t ssp = ina_wire_join_ssp(in->data + INA_HDR_SIZE);
	uint8_t weight = ina_wire_join_weight(in->data + INA_HDR_SIZE);

	ina_wire_decode_join(in->data + INA_HDR_SIZE, &world, &lanes, &max_block);
	if (j && j->params.token != h->token) {
		/* Not this job's secret: dropped and counted, never answered. */
		p->st.drop_wire[INA_WIRE_WRONG_TOKEN]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (standby) {
		if (!p->cfg.primary.len) {
			p->st.jobs_refused++;
			return pl_send_error(p, in, h, INA_WERR_UNSUPPORTED,
					     "job %" PRIu32
					     ": this switch is no replica (it has no "
					     "primary): it cannot stand by for the job",
					     h->job_id);
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
		return pl_send_error(p, in, h, INA_WERR_MISMATCH,
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
		struct join_req req = { .world = world,
					.lanes = lanes,
					.max_block = max_block,
					.ssp = ssp,
					.weight = weight,
					.standby = standby };
		struct ina_pkt *o = admit_new(p, in, h, &req, now, &j);

		if (!j)
			return o;
	} else if (world != j->params.world || lanes != j->want_lanes ||
		   max_block != j->params.max_block || h->encoding != j->params.encoding) {
		return pl_send_error(p, in, h, INA_WERR_MISMATCH,
				     "job %" PRIu32
				     ": rank %u joins with world %u, %u lanes, %s, B <= %u; "
				     "the job has world %u, %u lanes, %s, B <= %u",
				     h->job_id, h->rank, world, lanes,
				     ina_wire_encoding_name(h->encoding), max_block,
				     j->params.world, j->want_lanes,
				     ina_wire_encoding_name(j->params.encoding),
				     j->params.max_block);
	} else if (ssp != j->ssp) {
		return pl_send_error(p, in, h, INA_WERR_MISMATCH,
				     "job %" PRIu32
				     ": rank %u joins with consistency %s%.0u; the job "
				     "runs %s%.0u",
				     h->job_id, h->rank, ssp ? "ssp:" : "bsp", ssp,
				     j->ssp ? "ssp:" : "bsp", j->ssp);
	} else if (weight != j->weight) {
		return pl_send_error(p, in, h, INA_WERR_MISMATCH,
				     "job %" PRIu32
				     ": rank %u joins with weight %u; the job has weight %u",
				     h->job_id, h->rank, weight, j->weight);
	}
	if ((j->joined >> h->rank & 1) && !ina_peer_equal(&in->peer, &j->peers[h->rank]))
		return rebind(p, in, j, h);
	j->joined |= 1ull << h->rank;
	j->peers[h->rank] = in->peer;
	j->last_active_ns = now;
	if (j->up == UP_JOINING)
		return uplink_join(p, in, j); /* answered on the spine's JOIN_ACK */
	return send_join_ack(p, in, j, h);
}
