/* SPDX-License-Identifier: MIT */
/*
 * The host engine's bsp round (engine_int.h). Each lane has at most one
 * packet in flight: the packet for the block the switch last announced (or
 * the lane's first). A packet is never stored: it is built again from the
 * caller's tensor when it must be resent, so retransmission costs no memory.
 * A result for the lane's block writes the sum (or zeros for a header-only
 * result) into the output, zeroes the blocks the announced next pointer
 * skips, and makes the lane send its answer to the newly announced block.
 * With a cut (engine_set_cut) a block travels as its non-zero sub-blocks,
 * and a result's absent sub-blocks are zero in the output as skipped
 * blocks are.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "ina/block.h"
#include "ina/encode.h"
#include "ina/lane.h"

/* The scale of a block whose largest exponent is 'exp' (scaled encodings). */
static int
block_scale(const struct engine *e, int exp)
{
	return e->enc->scaled ? ina_enc_i32_scale(exp, e->cfg.world) : 0;
}

/* My input's block 'b', at position 'pos' of the list when block-sparse. */
static const float *
block_src(const struct engine *e, uint32_t b, uint32_t pos)
{
	if (e->sparse)
		return e->blk.values + (size_t)pos * e->block_size;
	return e->in + (size_t)b * e->block_size;
}

/* Exponent of block 'b' of my input (i32), INA_EXP_ZERO for END. */
static int16_t
block_exp(struct engine *e, uint32_t b, uint32_t pos)
{
	int x;

	if (!e->enc->scaled || b == INA_BLOCK_END)
		return 0;
	x = ina_enc_i32_exp(block_src(e, b, pos), ina_wire_block_elems(e->n, e->block_size, b));
	if (x == INA_EXP_NONFINITE) {
		engine_fail(e, ENGINE_ENONFINITE,
			    "job %s rank %u round %" PRIu32 ": block %" PRIu32
			    " holds a NaN or infinity, which the i32 encoding cannot carry",
			    e->job_name, e->cfg.rank, e->round, b);
		return 0;
	}
	/* A listed all-zero block (ina_allreduce_blocks) is named by 'next'
	 * too: it announces the smallest finite exponent, which any other
	 * rank's outweighs (PROTOCOL 7.1). */
	return (int16_t)(x == INA_EXP_ZERO ? INA_EXP_FLOAT_MIN : x);
}

/*
 * My next non-zero block of lane 'ln' from block 'from' on ('from' is one
 * of the lane's). Dense: the first block of the lane not all zeros, found in
 * the map of non-zero blocks, which one pass fills in address order as far
 * as the lanes ask (a lane-by-lane scan would stride through memory).
 * Block-sparse: the lane's next listed block, walking its chain, and its
 * position in the list into '*pos'.
 */
static uint32_t
next_nonzero(struct engine *e, struct lane *ln, uint32_t from, uint32_t *pos)
{
	uint32_t i;

	if (from >= e->nb_blocks)
		return INA_BLOCK_END;
	if (!e->sparse) {
		for (uint64_t b = from; b < e->nb_blocks; b += e->cfg.lanes) {
			/* The map grows a word (64 blocks) at a time in address
			 * order, up to the word of 'b': a lane steps 'lanes'
			 * blocks, which may be past words nobody asked for yet. */
			while (b >= e->mapped) {
				ina_block_map_nonzero(e->in, e->n, e->block_size, e->mapped, 64,
						      e->nzmap);
				e->mapped += 64;
			}
			if (e->nzmap[b / 64] >> (b % 64) & 1)
				return (uint32_t)b;
		}
		return INA_BLOCK_END;
	}
	for (i = ln->scan; i != LIST_END && e->blk.index[i] - e->blk.base < from;)
		i = e->blk.chain[i];
	ln->scan = i;
	*pos = i;
	return i == LIST_END ? INA_BLOCK_END : e->blk.index[i] - e->blk.base;
}

/* Threads each listed block onto its lane's chain (lane = block mod lanes),
 * checking the list: ascending, inside this engine's run. */
static int
blocks_start(struct engine *e)
{
	const struct engine_blocks *b = &e->blk;

	if (b->count && (!b->index || !b->values || !b->chain))
		return -EINVAL;
	if (!b->out_count || (b->capacity && !b->out_index && !b->out_values))
		return -EINVAL;
	for (uint16_t l = 0; l < e->cfg.lanes; l++)
		e->lanes[l].scan = LIST_END;
	for (uint32_t i = b->count; i-- > 0;) {
		uint32_t x = b->index[i] - b->base;
		struct lane *ln;

		if (b->index[i] < b->base || x >= e->nb_blocks ||
		    (i + 1 < b->count && b->index[i] >= b->index[i + 1]))
			return -EINVAL;
		ln = &e->lanes[x % e->cfg.lanes];
		b->chain[i] = ln->scan;
		ln->scan = i;
	}
	return 0;
}

int
engine_bsp_allreduce(struct engine *e, uint32_t tensor_id, const float *in, float *out, size_t n,
		     uint16_t block_size, enum engine_op op, uint64_t now_ns)
{
	/* What was set for this allreduce applies to it alone, even when it
	 * is refused: a later one must not find a filter or lists that may be
	 * gone by then. */
	int sparse = e->next_sparse;
	float bound = e->next_bound;
	uint8_t *deferred = e->next_deferred;
	uint8_t sub_log = e->next_sub_log;

	e->next_sparse = 0;
	e->next_bound = 0.0f;
	e->next_deferred = NULL;
	e->next_sub_log = 0;
	if (e->phase != ENGINE_READY)
		return -EBUSY;
	if (n == 0 || n >= INA_BLOCK_OPEN || block_size == 0 || block_size > e->cfg.max_block ||
	    (!sparse && (!in || !out)) || engine_cut_check(e, block_size, sub_log) < 0)
		return -EINVAL;
	if (e->reshape_lanes && (int32_t)(e->round - e->reshape_round) >= 0) {
		/* The switch gives slots back: fewer lanes from this round on. */
		e->cfg.lanes = e->reshape_lanes;
		e->params.lanes = e->reshape_lanes;
		e->reshape_lanes = 0;
		e->st.reshapes++;
	}
	e->tensor_id = tensor_id;
	e->in = in;
	e->out = out;
	e->n = (uint32_t)n;
	e->block_size = block_size;
	e->sub_log = sub_log;
	e->nb_blocks = ina_wire_nb_blocks(e->n, block_size);
	e->sparse = (uint8_t)sparse;
	e->mapped = 0;
	if (!sparse && (e->nb_blocks + 63) / 64 > e->nzmap_words) {
		uint32_t words = (e->nb_blocks + 63) / 64;
		uint64_t *m = realloc(e->nzmap, words * sizeof(*m));

		if (!m)
			return -ENOMEM;
		e->nzmap = m;
		e->nzmap_words = words;
	}
	if (sparse) {
		e->blk = e->next_blk;
		e->in = NULL;
		e->out = NULL;
		if (blocks_start(e) < 0)
			return -EINVAL;
	}
	e->op = op;
	e->bound = bound;
	e->deferred = deferred;
	e->stall_reported = 0;
	if (e->deferred)
		memset(e->deferred, 0, e->nb_blocks);
	e->lanes_left = 0;
	e->last_progress_ns = now_ns;
	e->wait_missing = 0;
	e->sw_heard_ns = now_ns;
	e->probe_ns = 0;
	e->fo_active = 0;
	for (uint16_t l = 0; l < e->cfg.lanes; l++) {
		struct lane *ln = &e->lanes[l];

		ln->active = ina_lane_active(l, e->nb_blocks);
		ln->done = !ln->active;
		if (!ln->active)
			continue;
		e->lanes_left++;
		ln->block = ina_lane_first(e->cfg.encoding, l);
		ln->my_pos = LIST_END;
		ln->cur_pos = LIST_END;
		if (ln->block == INA_BLOCK_OPEN) {
			ln->my_next = next_nonzero(e, ln, l, &ln->my_pos);
			ln->has_data = 0;
		} else {
			uint32_t first = next_nonzero(e, ln, l, &ln->cur_pos);

			ln->has_data = first == l;
			ln->my_pos = ln->cur_pos;
			if (ln->has_data)
				ln->my_next = next_nonzero(e, ln, l + e->cfg.lanes, &ln->my_pos);
			else
				ln->my_next = first;
		}
		ln->my_exp = block_exp(e, ln->my_next, ln->my_pos);
		ln->need_send = 1;
		ln->resend = 0;
		ln->rto_ns = e->rto_ns;
	}
	if (e->err)
		return e->err;
	e->phase = ENGINE_RUNNING;
	return 0;
}

struct ina_pkt *
engine_bsp_build(struct engine *e, uint16_t l, int retx)
{
	struct lane *ln = &e->lanes[l];
	struct ina_pkt *p = ina_pkt_alloc(e->cfg.pool);
	struct ina_hdr h;
	uint16_t n = 0;

	if (!p)
		return NULL;
	engine_fill_hdr(e, &h, INA_T_DATA);
	h.flags = (uint8_t)(ln->ver | (retx ? INA_F_RETX : 0));
	h.lane = l;
	h.tensor_id = e->tensor_id;
	h.round = e->round;
	h.tensor_len = e->n;
	h.block = ln->block;
	h.next = ln->my_next;
	h.block_size = e->block_size;
	h.sub_log = e->sub_log;
	h.exp = ln->my_exp;
	if (e->bound > 0.0f && ln->block != INA_BLOCK_OPEN)
		h.bound = ina_enc_bound(e->cfg.encoding, e->bound,
					ina_enc_i32_scale(ln->cur_exp, e->cfg.world));
	if (ln->has_data)
		n = ina_wire_block_elems(e->n, e->block_size, ln->block);
	h.n_elems = n;
	p->len = INA_HDR_SIZE;
	if (n) {
		const float *src = block_src(e, ln->block, ln->cur_pos);

		p->len += (uint32_t)engine_encode_block(e, p->data + INA_HDR_SIZE, &h, src,
							block_scale(e, ln->cur_exp));
		e->st.data_sent++;
	} else {
		e->st.empty_sent++;
	}
	ina_wire_encode_hdr(&h, p->data);
	p->peer = *cur_sw(e);
	return p;
}

static void
finish_op(struct engine *e)
{
	e->st.rounds++;
	e->round++;
	e->phase = ENGINE_READY;
}

/* Block 'b''s result into 'dst': decoded from 'payload' (zeros for a
 * header-only result), then averaged when the op is, then copied to 'copy'
 * unless it is NULL. With a cut, the sub-blocks absent from the result's
 * mask are zeroed when 'zero_absent' (else 'dst' holds them: the input, in
 * place) and only the present ones averaged. A whole block's decode goes to
 * cfg.work when there is one. */
static void
decode_block(struct engine *e, float *dst, const struct ina_hdr *h, const uint8_t *payload,
	     uint16_t n, int scale, int zero_absent, float *copy)
{
	float avg = e->op == ENGINE_AVG ? 1.0f / (float)e->cfg.world : 1.0f;

	if (h->n_elems == 0) {
		memset(dst, 0, (size_t)n * sizeof(float));
	} else if (!h->sub_log && e->cfg.work) {
		payload_work_decode(e->cfg.work, e->enc, dst, payload, n, scale, avg, copy);
		return;
	} else {
		engine_decode_block(e, dst, h, payload, n, scale, zero_absent, avg);
	}
	if (copy)
		memcpy(copy, dst, (size_t)n * sizeof(float));
}

/* Block 'b''s result where the round's output wants it: the dense output,
 * or (block-sparse) the next entry of the union's list and/or its place. */
static void
write_result(struct engine *e, uint32_t b, const struct ina_hdr *h, const uint8_t *payload,
	     uint16_t n, int scale)
{
	const struct engine_blocks *k = &e->blk;
	float *list = NULL, *dense, *dst;
	uint32_t slot;

	/* A header-only result that is not DEFERRED: nobody sent the block (a
	 * lane's first), so it is zero everywhere and in no union. */
	if (h->n_elems == 0 && !(h->flags & INA_F_DEFERRED) && (e->sparse || e->out == e->in))
		return;
	if (!e->sparse) {
		decode_block(e, e->out + (size_t)b * e->block_size, h, payload, n, scale,
			     e->out != e->in, NULL);
		return;
	}
	slot = (*k->out_count)++;
	dense = k->dense ? k->dense + (size_t)b * e->block_size : NULL;
	if (slot < k->capacity) {
		if (k->out_index)
			k->out_index[slot] = k->base + b;
		if (k->out_values)
			list = k->out_values + (size_t)slot * e->block_size;
	}
	dst = list ? list : dense;
	if (!dst)
		return;
	/* The union's block whole: its absent sub-blocks zero. */
	decode_block(e, dst, h, payload, n, scale, 1, list && dense ? dense : NULL);
}

void
engine_bsp_on_result(struct engine *e, const struct ina_hdr *h, const uint8_t *payload,
		     uint64_t now)
{
	struct lane *ln = &e->lanes[h->lane];
	uint32_t zero_from;

	if (e->phase != ENGINE_RUNNING || !ln->active || ln->done || h->round != e->round ||
	    h->tensor_id != e->tensor_id || h->block != ln->block ||
	    (h->flags & INA_F_VER) != ln->ver || h->tensor_len != e->n ||
	    h->block_size != e->block_size || h->sub_log != e->sub_log) {
		e->st.stale++;
		return;
	}
	if (h->next > ln->my_next) {
		/* The switch announces the smallest next block of all workers
		 * (END the largest), so never one past this worker's own: that
		 * sum would lack this worker's block, and the lane would send
		 * packets whose next pointer is not past their block. */
		engine_fail(e, ENGINE_EPROTO,
			    "job %s rank %u round %" PRIu32 ": lane %u block %" PRIu32
			    " came back with next block %" PRIu32
			    ", past this worker's next non-zero"
			    " block %" PRIu32,
			    e->job_name, e->cfg.rank, e->round, h->lane, h->block, h->next,
			    ln->my_next);
		return;
	}
	if (h->block == INA_BLOCK_OPEN) {
		zero_from = h->lane;
	} else {
		uint16_t n = ina_wire_block_elems(e->n, e->block_size, h->block);

		if (h->flags & INA_F_DEFERRED) {
			if (!e->deferred) {
				engine_fail(
					e, ENGINE_EPROTO,
					"job %s rank %u round %" PRIu32 ": lane %u block %" PRIu32
					" came back deferred, but this worker set no result filter",
					e->job_name, e->cfg.rank, e->round, h->lane, h->block);
				return;
			}
			e->deferred[h->block] = 1;
			e->st.deferred++;
		}
		write_result(e, h->block, h, payload, n, block_scale(e, ln->cur_exp));
		zero_from = h->block + e->cfg.lanes;
	}
	if (h->flags & INA_F_SATURATED) {
		e->st.saturated++;
		engine_fail(e, ENGINE_ESATURATED,
			    "job %s rank %u round %" PRIu32
			    ": the i32 sum of lane %u block %" PRIu32 " saturated",
			    e->job_name, e->cfg.rank, e->round, h->lane, h->block);
	}
	/* The blocks between, zero on every worker: a block-sparse or in-place
	 * output already holds them, or not at all. */
	if (!e->sparse && e->out != e->in)
		ina_block_zero_range(e->out, e->n, e->block_size, e->cfg.lanes, zero_from, h->next);
	if (!ln->retx && now >= ln->sent_ns)
		engine_rtt_sample(e, now - ln->sent_ns);
	ln->ver ^= 1;
	e->last_progress_ns = now;
	e->stall_reported = 0;
	e->wait_missing = 0;
	if (h->next == INA_BLOCK_END) {
		ln->done = 1;
		if (--e->lanes_left == 0)
			finish_op(e);
		return;
	}
	ln->block = h->next;
	ln->cur_exp = h->exp;
	if (ln->my_next == h->next) {
		ln->has_data = 1;
		ln->cur_pos = ln->my_pos;
		ln->my_next = next_nonzero(e, ln, h->next + e->cfg.lanes, &ln->my_pos);
		ln->my_exp = block_exp(e, ln->my_next, ln->my_pos);
	} else {
		ln->has_data = 0;
	}
	ln->need_send = 1;
	ln->rto_ns = e->rto_ns;
}

void
engine_bsp_on_wait(struct engine *e, const struct ina_hdr *h, const uint8_t *payload, uint64_t now)
{
	struct lane *ln = &e->lanes[h->lane];

	e->st.waits++;
	if (e->phase != ENGINE_RUNNING || ln->done || h->round != e->round ||
	    h->tensor_id != e->tensor_id || h->block != ln->block) {
		e->st.stale++;
		return;
	}
	engine_note_wait(e, h, payload, now);
	/*
	 * The switch has my packet: restart the lane's timer. Resending still
	 * matters: the result may be lost on its way, and only a resend asks
	 * the shadow copy for it again. The lane's backoff goes on doubling.
	 */
	ln->sent_ns = now;
}

/* The lanes' packets due: first sends, answers and retransmissions, the scan
 * starting one lane further each call. */
uint16_t
engine_bsp_tx(struct engine *e, uint64_t now_ns, struct ina_pkt **out, uint16_t max)
{
	uint16_t nb = 0;

	for (uint16_t k = 0; k < e->cfg.lanes && nb < max; k++) {
		uint16_t l = (uint16_t)((e->tx_cursor + k) % e->cfg.lanes);
		struct lane *ln = &e->lanes[l];
		struct ina_pkt *p;
		int retx;

		if (ln->done)
			continue;
		retx = !ln->need_send;
		if (retx && !ln->resend && now_ns - ln->sent_ns < ln->rto_ns)
			continue;
		p = engine_bsp_build(e, l, retx);
		if (!p)
			break;
		if (retx) {
			e->st.retransmits++;
			/* A resend to a new switch starts a fresh backoff. */
			if (!ln->resend)
				ln->rto_ns = ln->rto_ns * 2 > e->cfg.rto_max_ns ? e->cfg.rto_max_ns
										: ln->rto_ns * 2;
		}
		ln->need_send = 0;
		ln->resend = 0;
		ln->retx = (uint8_t)retx;
		ln->sent_ns = now_ns;
		out[nb++] = p;
	}
	e->tx_cursor = (uint16_t)((e->tx_cursor + 1) % e->cfg.lanes);
	return nb;
}

uint64_t
engine_bsp_deadline(const struct engine *e, uint64_t d)
{
	for (uint16_t l = 0; l < e->cfg.lanes; l++) {
		const struct lane *ln = &e->lanes[l];

		if (ln->done)
			continue;
		if (ln->need_send || ln->resend)
			return 0;
		if (ln->sent_ns + ln->rto_ns < d)
			d = ln->sent_ns + ln->rto_ns;
	}
	return d;
}
