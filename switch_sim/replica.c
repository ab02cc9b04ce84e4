/* SPDX-License-Identifier: MIT */
/*
 * Replication and failover (replica.h), the replica's side: the primary's
 * REPLs stored as each lane's last result and sent on to the workers, and
 * the takeover of a standby job on a worker's FAILOVER. (The primary's side
 * is one branch of pl_result_route(), slots.c.)
 */
#include <endian.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "replica.h"

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
	/* Exact: pl_put_result() writes back the same bits (a bf16 widens to
	 * binary32 and rounds back to itself), with sub-blocks the same mask. */
	pl_half_load(j, hf, h, payload);
	pl_slot_complete(s, ver);
	p->st.repl_stored++;
}

/*
 * REPL from the primary for a standby job: a later result than the lane's
 * stored one is stored; either way it goes on to the workers as the RESULT
 * the primary would have sent (fan-out, or a shadow reply to one rank), in
 * the same buffer.
 */
struct ina_pkt *
replica_repl(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h,
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
		j->linger_until = now + pl_job_linger_ns(p, j);
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
struct ina_pkt *
replica_announce_again(struct pipeline *p, struct ina_pkt *in, const struct job *j)
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
struct ina_pkt *
replica_failover(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h,
		 uint64_t now)
{
	struct ina_pkt *o;

	if (!(j->joined >> h->rank & 1)) {
		p->st.drop[PDROP_NOT_JOINED]++;
		ina_pkt_free(in);
		return NULL;
	}
	if (j->taken_over)
		return replica_announce_again(p, in, j);
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
	pl_event(p, &(struct pipeline_event){ .kind = PEV_TAKEOVER,
					      .job_id = j->params.job_id,
					      .rank = h->rank,
					      .old_epoch = j->old_epoch,
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
