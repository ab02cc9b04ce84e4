/* SPDX-License-Identifier: MIT */
/*
 * The host engine's ssp rounds (engine_int.h; cfg.ssp = S): up to S + 1
 * rounds in flight, each in its own sop, each lane one block (the lane's
 * own) sent once and answered once. Round r uses the switch's slot set
 * r mod INA_SSP_SETS(S) of each lane, with a version bit per lane and set;
 * a PARTIAL result without this rank's part marks the block missed.
 * docs/PROTOCOL.md 6.7; the switch side is switch_sim/ssp.c.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "engine_int.h"
#include "ina/block.h"
#include "ina/encode.h"

void
engine_set_missed(struct engine *e, uint8_t *missed)
{
	e->next_missed = missed;
}

int
engine_in_flight(const struct engine *e, uint32_t round)
{
	if (!e->cfg.ssp)
		return e->phase == ENGINE_RUNNING && e->round == round;
	for (uint32_t k = 0; k <= e->cfg.ssp; k++)
		if (e->sops[k].active && e->sops[k].round == round)
			return 1;
	return 0;
}

uint16_t
engine_nb_in_flight(const struct engine *e)
{
	return e->cfg.ssp ? e->nb_sops : e->phase == ENGINE_RUNNING;
}

int
engine_can_start(const struct engine *e)
{
	int free_op = 0;

	if (e->err)
		return 0;
	if (!e->cfg.ssp)
		return e->phase == ENGINE_READY;
	if (e->phase != ENGINE_READY && e->phase != ENGINE_RUNNING)
		return 0;
	for (uint32_t k = 0; k <= e->cfg.ssp; k++) {
		if (!e->sops[k].active)
			free_op = 1;
		else if ((uint32_t)(e->round - e->sops[k].round) > e->cfg.ssp)
			return 0;
	}
	return free_op;
}

static struct sop *
ssp_op_of(struct engine *e, uint32_t round)
{
	for (uint32_t k = 0; k <= e->cfg.ssp; k++)
		if (e->sops[k].active && e->sops[k].round == round)
			return &e->sops[k];
	return NULL;
}

static uint8_t *
ssp_ver_of(struct engine *e, uint16_t lane, uint32_t round)
{
	uint32_t sets = INA_SSP_SETS(e->cfg.ssp);

	return &e->ssp_ver[(size_t)lane * sets + round % sets];
}

int
engine_ssp_allreduce(struct engine *e, uint32_t tensor_id, const float *in, float *out, size_t n,
		     uint16_t block_size, enum engine_op op, uint64_t now)
{
	struct sop *o = NULL;
	uint8_t sub_log = e->next_sub_log;

	e->next_sub_log = 0; /* the next round only */
	if (e->phase != ENGINE_READY && e->phase != ENGINE_RUNNING)
		return -EBUSY;
	if (n == 0 || n >= INA_BLOCK_OPEN || block_size == 0 || block_size > e->cfg.max_block ||
	    !in || !out || ina_wire_nb_blocks((uint32_t)n, block_size) > e->cfg.lanes ||
	    engine_cut_check(e, block_size, sub_log) < 0)
		return -EINVAL;
	/* The bound: no round more than S back may still be in flight. */
	for (uint32_t k = 0; k <= e->cfg.ssp; k++) {
		if (!e->sops[k].active)
			o = o ? o : &e->sops[k];
		else if ((uint32_t)(e->round - e->sops[k].round) > e->cfg.ssp)
			return -EBUSY;
	}
	if (!o)
		return -EBUSY;
	o->active = 1;
	o->op = op;
	o->round = e->round++;
	o->tensor_id = tensor_id;
	o->n = (uint32_t)n;
	o->block_size = block_size;
	o->sub_log = sub_log;
	o->nb_blocks = ina_wire_nb_blocks(o->n, block_size);
	o->in = in;
	o->out = out;
	o->bound = e->next_bound;
	o->missed = e->next_missed ? e->next_missed : e->next_deferred;
	e->next_bound = 0.0f;
	e->next_deferred = NULL;
	e->next_missed = NULL;
	if (o->missed)
		memset(o->missed, 0, o->nb_blocks);
	o->lanes_left = 0;
	for (uint16_t l = 0; l < e->cfg.lanes; l++) {
		struct sop_lane *sl = &o->lanes[l];

		memset(sl, 0, sizeof(*sl));
		sl->active = l < o->nb_blocks;
		if (!sl->active)
			continue;
		sl->has_data = ina_block_next_nonzero(in, o->n, block_size, e->cfg.lanes, l) == l;
		sl->need_send = 1;
		sl->rto_ns = e->rto_ns;
		o->lanes_left++;
	}
	if (e->nb_sops++ == 0) {
		e->last_progress_ns = now;
		e->stall_reported = 0;
		e->wait_missing = 0;
	}
	e->phase = ENGINE_RUNNING;
	return 0;
}

static struct ina_pkt *
ssp_build(struct engine *e, const struct sop *o, uint16_t l, int retx)
{
	const struct sop_lane *sl = &o->lanes[l];
	struct ina_pkt *p = ina_pkt_alloc(e->cfg.pool);
	struct ina_hdr h;
	uint16_t n = 0;

	if (!p)
		return NULL;
	engine_fill_hdr(e, &h, INA_T_DATA);
	h.flags = (uint8_t)(*ssp_ver_of(e, l, o->round) | (retx ? INA_F_RETX : 0));
	h.lane = l;
	h.tensor_id = o->tensor_id;
	h.round = o->round;
	h.tensor_len = o->n;
	h.block = l;
	h.next = INA_BLOCK_END;
	h.block_size = o->block_size;
	h.sub_log = o->sub_log;
	if (o->bound > 0.0f)
		h.bound = ina_enc_bound(e->cfg.encoding, o->bound, 0);
	if (sl->has_data)
		n = ina_wire_block_elems(o->n, o->block_size, l);
	h.n_elems = n;
	p->len = INA_HDR_SIZE;
	if (n) {
		const float *src = o->in + (size_t)l * o->block_size;

		p->len += (uint32_t)engine_encode_block(e, p->data + INA_HDR_SIZE, &h, src, 0);
		e->st.data_sent++;
	} else {
		e->st.empty_sent++;
	}
	ina_wire_encode_hdr(&h, p->data);
	p->peer = *cur_sw(e);
	return p;
}

static void
ssp_finish_op(struct engine *e, struct sop *o)
{
	if (o->op == ENGINE_AVG) {
		float scale = 1.0f / (float)e->cfg.world;

		for (uint32_t i = 0; i < o->n; i++)
			o->out[i] *= scale;
	}
	o->active = 0;
	e->st.rounds++;
	if (--e->nb_sops == 0)
		e->phase = ENGINE_READY;
}

void
engine_ssp_on_result(struct engine *e, const struct ina_hdr *h, const uint8_t *payload,
		     uint64_t now)
{
	struct sop *o = ssp_op_of(e, h->round);
	struct sop_lane *sl = o ? &o->lanes[h->lane] : NULL;
	uint8_t *ver = ssp_ver_of(e, h->lane, h->round);
	size_t bytes = 0;
	int mine = 1;
	float *dst;
	uint16_t n;

	/* A result of a round not started here yet is stale: this rank's own
	 * packet asks for it again, and the switch keeps it (ssp.c). So is one
	 * for a lane whose packet has not gone out yet: the switch must see
	 * every rank's packet of every round, as it acknowledges the older
	 * results of the set (ssp.c); the answer to it is taken instead. */
	if (e->phase != ENGINE_RUNNING || !o || !sl->active || sl->done || sl->need_send ||
	    h->tensor_id != o->tensor_id || h->block != h->lane || h->next != INA_BLOCK_END ||
	    (h->flags & INA_F_VER) != *ver || h->tensor_len != o->n ||
	    h->block_size != o->block_size || h->sub_log != o->sub_log) {
		e->st.stale++;
		return;
	}
	/* The sum first (its absent sub-blocks zero): the trailer of a
	 * PARTIAL result follows it, after the mask and the present
	 * sub-blocks only. A result that fails the round writes nothing the
	 * caller reads. */
	dst = o->out + (size_t)h->block * o->block_size;
	n = ina_wire_block_elems(o->n, o->block_size, h->block);
	if (h->n_elems == 0)
		memset(dst, 0, (size_t)n * sizeof(float));
	else
		bytes = engine_decode_block(e, dst, h, payload, n, 0, 1, 1.0f);
	if (h->flags & INA_F_PARTIAL) {
		uint64_t contrib_be;

		memcpy(&contrib_be, payload + bytes, sizeof(contrib_be));
		mine = (int)(be64toh(contrib_be) >> e->cfg.rank & 1);
	}
	if (!mine || (h->flags & INA_F_DEFERRED)) {
		if (!o->missed) {
			engine_fail(e, ENGINE_EPROTO,
				    "job %s rank %u round %" PRIu32 ": lane %u block %" PRIu32
				    " came back %s, but this worker has no residual for it",
				    e->job_name, e->cfg.rank, h->round, h->lane, h->block,
				    mine ? "deferred" : "without its part (ssp)");
			return;
		}
		o->missed[h->block] = 1;
		if (mine)
			e->st.deferred++;
		else
			e->st.ssp_missed++;
	}
	if (!sl->retx && now >= sl->sent_ns)
		engine_rtt_sample(e, now - sl->sent_ns);
	*ver ^= 1;
	sl->done = 1;
	e->last_progress_ns = now;
	e->stall_reported = 0;
	e->wait_missing = 0;
	if (--o->lanes_left == 0)
		ssp_finish_op(e, o);
}

void
engine_ssp_on_wait(struct engine *e, const struct ina_hdr *h, const uint8_t *payload, uint64_t now)
{
	struct sop *o = ssp_op_of(e, h->round);

	e->st.waits++;
	if (e->phase != ENGINE_RUNNING || !o || !o->lanes[h->lane].active ||
	    o->lanes[h->lane].done || h->tensor_id != o->tensor_id || h->block != h->lane) {
		e->st.stale++;
		return;
	}
	engine_note_wait(e, h, payload, now);
	o->lanes[h->lane].sent_ns = now;
}

/* The packets due: first sends and retransmissions, oldest round first. */
uint16_t
engine_ssp_tx(struct engine *e, uint64_t now, struct ina_pkt **out, uint16_t max)
{
	uint16_t nb = 0;

	for (uint32_t age = e->cfg.ssp + 1u; age > 0 && nb < max; age--) {
		struct sop *o = ssp_op_of(e, e->round - age);

		if (!o)
			continue;
		for (uint16_t l = 0; l < e->cfg.lanes && nb < max; l++) {
			struct sop_lane *sl = &o->lanes[l];
			struct ina_pkt *p;
			int retx;

			if (!sl->active || sl->done)
				continue;
			retx = !sl->need_send;
			if (retx && now - sl->sent_ns < sl->rto_ns)
				continue;
			p = ssp_build(e, o, l, retx);
			if (!p)
				return nb;
			if (retx) {
				e->st.retransmits++;
				sl->rto_ns = sl->rto_ns * 2 > e->cfg.rto_max_ns ? e->cfg.rto_max_ns
										: sl->rto_ns * 2;
			}
			sl->need_send = 0;
			sl->retx = (uint8_t)retx;
			sl->sent_ns = now;
			out[nb++] = p;
		}
	}
	return nb;
}

uint64_t
engine_ssp_deadline(const struct engine *e, uint64_t d)
{
	for (uint32_t k = 0; k <= e->cfg.ssp; k++) {
		const struct sop *o = &e->sops[k];

		if (!o->active)
			continue;
		for (uint16_t l = 0; l < e->cfg.lanes; l++) {
			const struct sop_lane *sl = &o->lanes[l];

			if (!sl->active || sl->done)
				continue;
			if (sl->need_send)
				return 0;
			if (sl->sent_ns + sl->rto_ns < d)
				d = sl->sent_ns + sl->rto_ns;
		}
	}
	return d;
}
