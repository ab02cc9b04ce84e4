/* SPDX-License-Identifier: MIT */
/*
 * Bounded staleness in the switch (ssp.h): the slot sets of an ssp job's
 * lanes, the early close of a block that the newest round has left S behind,
 * and the answers to late packets from the kept result. The halves and the
 * helpers that write results are the pipeline's (pipeline_int.h); only the
 * choice of slot, when a block closes and when a half may be reused differ
 * from bsp.
 *
 * A lane has S + 2 sets (INA_SSP_SETS): S + 1 for the rounds in flight and
 * one more, so that a block closed early is still kept when the rank it
 * lacks comes to read it. A set's two halves hold its last two rounds. A
 * result stays answerable until a round 2(S + 2) later reuses its half, and
 * that reuse waits until every
 * rank is known to hold it: a rank sends round m only once it holds every
 * result up to m - S - 1, so any packet of round m acknowledges the lane's
 * results of those rounds (even one the switch drops). A late rank, or one
 * whose result was lost, always finds its block.
 */
#include <endian.h>
#include <inttypes.h>
#include <string.h>

#include "ina/util.h"
#include "reply_limit.h"
#include "ssp.h"

/* The slot of lane 'lane' (of this partition) for round 'round'. */
static struct slot *
ssp_slot(struct pipeline *p, const struct job *j, uint16_t lane, uint32_t round)
{
	uint32_t sets = INA_SSP_SETS(j->ssp);

	return &p->slots[j->slot_base + (uint32_t)(lane / p->cfg.part_count) * sets + round % sets];
}

const char *
ssp_refusal(const struct pipeline *p, const struct ina_hdr *h, uint16_t lanes, uint32_t nb_slots)
{
	(void)lanes;
	if (h->encoding == INA_ENC_I32)
		return "runs f32 or bf16 only (i32 agrees on exponents one block ahead, "
		       "which a late rank cannot)";
	if (p->cfg.uplink.len || p->cfg.replica.len || p->cfg.primary.len)
		return "is not served by a rack switch, a replicated switch or a replica";
	if (nb_slots > UINT16_MAX)
		return "needs more than 65535 slots (lanes x (S + 2))";
	return NULL;
}

/* The half of lane group 'g' (first slot) that holds round 'round', or NULL. */
static const struct half *
round_half(const struct slot *g, uint32_t sets, uint32_t round)
{
	const struct slot *s = &g[round % sets];

	for (int v = 0; v < 2; v++)
		if (s->h[v].state != HALF_IDLE && s->h[v].key.round == round)
			return &s->h[v];
	return NULL;
}

/* Half 'ver' of 's' is finished (complete or closed): it is kept as the
 * set's result, and the other half, still holding the set's round before
 * (or nothing), is what the set's next round opens. */
static void
ssp_finish(struct slot *s, uint8_t ver)
{
	struct half *hf = &s->h[ver];

	hf->state = HALF_RESULT;
	s->cur = ver ^ 1;
	s->has_round = 1;
	s->last_round = hf->key.round;
	s->waited = 0;
}

/*
 * The early close. A packet of round 'round' arrived in lane 'lane': a block
 * of the lane still open in a round S or more behind closes with the
 * contributions it has, if each rank it lacks contributed to the lane's
 * round before (a rank is never left out twice in a row, so a slow rank is
 * waited for every other round and cannot fall behind for good). Returns 0
 * when nothing closes ('in' untouched), else 1 with '*out' the PARTIAL
 * result fanned out to every rank (NULL without a buffer: retransmissions
 * get it), 'in' consumed. One block at most per packet.
 */
static int
ssp_close(struct pipeline *p, struct ina_pkt *in, struct job *j, uint16_t lane, uint32_t round,
	  struct ina_pkt **out)
{
	uint32_t sets = INA_SSP_SETS(j->ssp);
	struct slot *g = ssp_slot(p, j, lane, 0);

	for (uint32_t k = 0; k < sets; k++) {
		struct slot *s = &g[k];
		struct half *hf = &s->h[s->cur];
		const struct half *prev;
		uint64_t missing;
		struct ina_hdr key_hdr;
		struct ina_pkt *o;

		if (hf->state != HALF_AGG || (int32_t)(round - hf->key.round) < (int32_t)j->ssp)
			continue;
		missing = j->full & ~hf->bitmap;
		prev = round_half(g, sets, hf->key.round - 1);
		if (!prev || (missing & ~prev->bitmap))
			continue;
		hf->partial = 1;
		hf->deferred = (uint8_t)pl_half_deferred(j, hf);
		memset(&key_hdr, 0, sizeof(key_hdr));
		key_hdr.block_size = hf->key.block_size;
		key_hdr.sub_log = hf->key.sub_log;
		o = pl_answer_buf(p, in, pl_result_size(j, &key_hdr));
		if (o) {
			pl_put_result(p, o, j, lane, s->cur, hf);
			pl_result_route(p, o, j, INA_RANK_ALL);
			pl_count_result(p, o, hf, INA_PARTIAL_TRAILER);
			p->st.results_partial++;
		}
		ssp_finish(s, s->cur);
		*out = o;
		return 1;
	}
	return 0;
}

struct ina_pkt *
ssp_data(struct pipeline *p, struct ina_pkt *in, struct job *j, const struct ina_hdr *h,
	 uint64_t now)
{
	struct slot *s = ssp_slot(p, j, h->lane, h->round);
	uint8_t ver = h->flags & INA_F_VER;
	struct half *hf = &s->h[ver];
	struct block_key key = pl_key_of(h);
	uint64_t bit = 1ull << h->rank;
	struct ina_pkt *o = NULL;

	if (h->block != h->lane || h->next != INA_BLOCK_END) {
		/* One block per lane and round. */
		p->st.drop[PDROP_SSP_SHAPE]++;
		goto drop;
	}
	/* Round m: the sender holds this set's results of rounds <= m - S - 1. */
	for (int v = 0; v < 2; v++)
		if (s->h[v].state == HALF_RESULT &&
		    (int32_t)(h->round - s->h[v].key.round) > j->ssp)
			s->h[v].acked |= bit;
	if (hf->state == HALF_RESULT && pl_key_equal(&hf->key, &key)) {
		/* A finished block: answered to its sender alone, from the kept
		 * result, never added (a late rank reads what the others summed). */
		if (!reply_limit_take(p->limit, &in->peer, now)) {
			/* Budgeted per source, as any shadow reply. */
			p->st.drop[PDROP_RATE_LIMITED]++;
			goto drop;
		}
		if (!(hf->bitmap & bit))
			p->st.ssp_late++;
		o = pl_answer_buf(p, in, pl_result_size(j, h));
		if (!o)
			return NULL;
		pl_put_result(p, o, j, h->lane, ver, hf);
		pl_result_route(p, o, j, h->rank);
		p->st.shadow_replies++;
		return o;
	}
	if (ver != s->cur) {
		p->st.drop[hf->state == HALF_RESULT && pl_key_shape_differs(&hf->key, &key)
				   ? PDROP_SHAPE
				   : PDROP_NO_MATCH]++;
		goto drop;
	}
	if (hf->state != HALF_AGG) {
		/* A later round opens the half. It overwrites the set's result
		 * of 2(S + 2) rounds back: only once every rank holds it. */
		if (s->has_round && (int32_t)(h->round - s->last_round) <= 0) {
			p->st.drop[PDROP_NO_MATCH]++;
			goto drop;
		}
		if (hf->state == HALF_RESULT && hf->acked != j->full) {
			p->st.drop[PDROP_SSP_HOLD]++;
			goto drop;
		}
		pl_half_open(hf, &key);
	} else if (!pl_key_equal(&hf->key, &key)) {
		/* A round S + 2 ahead of a block still open: the sender broke
		 * the bound (its engine never does). */
		p->st.drop[(int32_t)(h->round - hf->key.round) > 0 ? PDROP_SSP_AHEAD
			   : pl_key_shape_differs(&hf->key, &key)  ? PDROP_SHAPE
								   : PDROP_NO_MATCH]++;
		goto drop;
	}
	if (hf->bitmap & bit) {
		/* A resend: the sender may wait for a block S rounds back. */
		if (ssp_close(p, in, j, h->lane, h->round, &o))
			return o;
		return pl_duplicate(p, in, j, s, hf, h, now);
	}
	pl_half_add(p, j, hf, h, in->data + INA_HDR_SIZE);
	if (hf->bitmap == j->full) {
		hf->deferred = (uint8_t)pl_half_deferred(j, hf);
		o = pl_answer_buf(p, in, pl_result_size(j, h));
		if (o) {
			pl_put_result(p, o, j, h->lane, ver, hf);
			pl_result_route(p, o, j, INA_RANK_ALL);
			pl_count_result(p, o, hf, 0);
		}
		ssp_finish(s, ver);
		return o;
	}
	if (ssp_close(p, in, j, h->lane, h->round, &o))
		return o;
drop:
	ina_pkt_free(in);
	return NULL;
}
