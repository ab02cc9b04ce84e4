/* SPDX-License-Identifier: MIT */
/*
 * One tensor's round on one worker (tensor_round.h): the block planner, the
 * sparsifier and the worker's side of DEFERRED results, in that order around
 * the engine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/wire.h"
#include "planner.h"
#include "sparsify.h"
#include "sparsify_opts.h"
#include "tensor_round.h"

struct tround {
	struct tround_config cfg;
	struct sparsify *s;	   /* NULL: nothing sparsified */
	float *send;		   /* what was sent this round (with 's') */
	uint8_t *deferred;	   /* per block: the sum came back DEFERRED */
	struct planner *planner;   /* NULL: B is max_block */
	int have_ref;		   /* a round ended: plans have a reference */
	int ref_measured;	   /* the planner measured the last round's
				    * result as it ended (its next planned) */
	double plan_mass;	   /* the planner's mass rule: the top-k mass
					 * target, or 1 (every non-zero block) */
	struct planner_pick pick;  /* the last plan, while pick_age < period */
	uint32_t pick_age;	   /* rounds begun on it; 0: none yet */
	uint32_t hold;		   /* plan_period 0: the rounds a plan holds
				    * now (1, 2, 4 .. TROUND_PLAN_HOLD_MAX) */
	struct sparsify_stats sst; /* of the round in progress */
	struct tround_stats st;
	uint16_t B;		   /* of the round in progress */
	uint8_t sub_log;	   /* its cut (0: whole blocks) */
	struct partition *pm;	   /* NULL: blocks in order */
	float *wire_in, *wire_out; /* with 'pm': n floats in wire order */
	uint8_t *wire_deferred;	   /* with 'pm': per wire position */
	int permuted;		   /* the round in progress is gathered */
};

/* The smallest B the sparsifier must serve: its arrays are sized for it. */
static uint16_t
min_block(const struct tround_config *c)
{
	return c->plan && c->max_block > PLANNER_MIN_BLOCK ? PLANNER_MIN_BLOCK : c->max_block;
}

/* 1 when the planner picks the cut too: planning, and no fixed sub_block. */
static int
plans_cut(const struct tround_config *c)
{
	return c->plan && !c->sub_block && c->max_block >= PLANNER_MIN_BLOCK;
}

/* The smallest unit the sparsifier ranks (a sub-block, or min_block()):
 * the planner's smallest b, or the job's fixed sub_block. */
static uint16_t
min_unit(const struct tround_config *c)
{
	uint16_t B = min_block(c);

	if (plans_cut(c))
		return PLANNER_MIN_SUB;
	return c->sub_block && c->sub_block < B ? c->sub_block : B;
}

/* The finest cut of B the planner may pick: b >= PLANNER_MIN_SUB, B a
 * multiple of 2^k, at most INA_SUB_LOG_MAX (the first round's). */
static uint8_t
finest_cut(uint16_t B)
{
	uint8_t k = 0;

	while (k < PLANNER_MAX_SUB_LOG && (uint32_t)(B >> (k + 1)) >= PLANNER_MIN_SUB &&
	       (B & ((2u << k) - 1)) == 0)
		k++;
	return k;
}

static int
make_planner(struct tround *t)
{
	const struct tround_config *c = &t->cfg;
	struct planner_config pc;

	planner_config_init(&pc);
	pc.max_elems = (uint32_t)c->n;
	pc.elem_bytes = (uint32_t)ina_wire_elem_size(c->encoding);
	/* Candidates: powers of two from 16 up to the job's largest B. */
	pc.max_pkt = INA_HDR_SIZE + (uint32_t)c->max_block * pc.elem_bytes;
	pc.world = c->world;
	pc.lanes = c->lanes;
	pc.open_exchange = c->encoding == INA_ENC_I32;
	pc.frame_bytes = 42; /* Ethernet, IPv4, UDP */
	/* The cut too, unless the job fixed it: ina_open() checked that a
	 * block of max_block with the largest mask fits the port. */
	pc.max_sub_log = plans_cut(c) ? PLANNER_MAX_SUB_LOG : 0;
	pc.mask_room = INA_SUB_MAX / 8;
	if (c->packet_ns != 0 || c->byte_ns != 0) {
		pc.packet_ns = c->packet_ns;
		pc.byte_ns = c->byte_ns;
		pc.cut_packet_ns = c->cut_packet_ns;
		pc.cut_sub_ns = c->cut_sub_ns;
	}
	t->planner = planner_create(&pc);
	t->plan_mass = (c->sp.mode & INA_SPARSIFY_TOPK) && c->sp.target == INA_TOPK_MASS
			       ? planner_target_mass(c->sp.mass, PLANNER_HEADROOM)
			       : 1.0;
	return t->planner ? 0 : -ENOMEM;
}

static int
make_sparsifier(struct tround *t)
{
	const struct tround_config *c = &t->cfg;
	struct sparsify_config sc;

	if (ina_sparsify_config(&c->sp, c->n, min_block(c), &sc) < 0)
		return -EINVAL;
	/* Sized for the finest unit: a sub-block of the smallest B. */
	sc.sub_block = min_unit(c) < sc.block_size ? min_unit(c) : 0;
	t->s = sparsify_create(&sc);
	t->send = malloc(c->n * sizeof(float));
	t->deferred = t->s ? calloc(sparsify_n_blocks(t->s), 1) : NULL;
	return t->s && t->send && t->deferred ? 0 : -ENOMEM;
}

static int
make_partition(struct tround *t)
{
	const struct tround_config *c = &t->cfg;
	uint16_t B = min_block(c);

	t->pm = partition_create(&c->part, (uint32_t)c->n, B);
	t->wire_in = malloc(c->n * sizeof(float));
	t->wire_out = malloc(c->n * sizeof(float));
	t->wire_deferred = calloc(ina_wire_nb_blocks((uint32_t)c->n, B), 1);
	return t->pm && t->wire_in && t->wire_out && t->wire_deferred ? 0 : -ENOMEM;
}

struct tround *
tround_create(const struct tround_config *cfg, char *err, size_t err_size)
{
	struct sparsify_config sc;
	struct tround *t;
	int ret = 0;

	/* The options must hold at every B the round may use: a byte budget
	 * of one block at the largest holds at all smaller ones. */
	if (cfg->part.mode == PARTITION_DYNAMIC &&
	    partition_config_check(&cfg->part, err, err_size) < 0)
		return NULL;
	if (cfg->plan &&
	    !(cfg->packet_ns >= 0 && cfg->packet_ns <= 1e6 && cfg->byte_ns >= 0 &&
	      cfg->byte_ns <= 1e6 && cfg->cut_packet_ns >= 0 && cfg->cut_packet_ns <= 1e6 &&
	      cfg->cut_sub_ns >= 0 && cfg->cut_sub_ns <= 1e6)) {
		snprintf(err, err_size,
			 "tensor %u: the planner's prices %g ns a packet, %g ns a byte, %g ns "
			 "more a cut packet, %g ns a cut's sub-block: >= 0, up to 1e6",
			 cfg->tensor_id, cfg->packet_ns, cfg->byte_ns, cfg->cut_packet_ns,
			 cfg->cut_sub_ns);
		return NULL;
	}
	if (cfg->n == 0 || cfg->n >= INA_BLOCK_OPEN || cfg->max_block == 0 ||
	    !ina_wire_elem_size(cfg->encoding) || cfg->world == 0 || cfg->lanes == 0 ||
	    ina_sparsify_config(&cfg->sp, cfg->n, cfg->max_block, &sc) < 0) {
		snprintf(err, err_size,
			 "tensor %u: sparsifier options do not fit %zu elements in blocks of %u "
			 "(a byte budget below one block?)",
			 cfg->tensor_id, cfg->n, cfg->max_block);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, err_size, "tensor %u: no memory", cfg->tensor_id);
		return NULL;
	}
	t->cfg = *cfg;
	t->hold = 1;
	/* Below the smallest candidate there is nothing to choose: B is max_block. */
	if (cfg->plan && cfg->max_block >= PLANNER_MIN_BLOCK)
		ret = make_planner(t);
	if (!ret && cfg->sp.mode != INA_SPARSIFY_OFF)
		ret = make_sparsifier(t);
	if (!ret && cfg->part.mode == PARTITION_DYNAMIC)
		ret = make_partition(t);
	if (ret < 0) {
		snprintf(err, err_size,
			 "tensor %u: no memory for the sparsifier and planner of %zu "
			 "elements",
			 cfg->tensor_id, cfg->n);
		tround_destroy(t);
		return NULL;
	}
	return t;
}

void
tround_destroy(struct tround *t)
{
	if (!t)
		return;
	sparsify_destroy(t->s);
	planner_destroy(t->planner);
	free(t->send);
	free(t->deferred);
	partition_destroy(t->pm);
	free(t->wire_in);
	free(t->wire_out);
	free(t->wire_deferred);
	free(t);
}

/* Whether the next round's plan() plans (rather than holds the last plan). */
static int
plans_next(const struct tround *t)
{
	uint32_t period = t->cfg.plan_period ? t->cfg.plan_period : t->hold;

	return !(t->pick_age > 0 && t->pick_age < period);
}

/* An adaptive period after a plan: a plan that repeats the last holds twice
 * as long as it did (up to TROUND_PLAN_HOLD_MAX rounds), any other plans
 * again next round. Every worker plans from the same sum, so their picks,
 * and so their periods, stay alike. */
static void
adapt_hold(struct tround *t, int repeated)
{
	if (!repeated)
		t->hold = 1;
	else if (t->hold < TROUND_PLAN_HOLD_MAX)
		t->hold *= 2;
}

/* B and its cut of this round (t->B, t->sub_log): the planner's choice from
 * the last result (planned every plan_period rounds, held in between), or
 * the largest B before there is one (every worker starts alike), cut finest
 * when the planner picks cuts; the job's fixed sub_block cuts any B it
 * divides (plan_cut()). */
static void
plan(struct tround *t)
{
	t->B = t->cfg.max_block;
	t->sub_log = 0;
	if (t->planner && t->have_ref && !plans_next(t))
		t->pick_age++; /* the last plan holds: every worker counts alike */
	else if (t->planner && t->have_ref && !t->ref_measured)
		t->pick_age += t->pick_age > 0; /* the round before this one
						  * failed, and the one before
						  * it was not measured (its
						  * successor held): hold once
						  * more, measured as this ends */
	else if (t->planner && t->have_ref) {
		struct planner_pick last = t->pick;
		int had = t->pick_age > 0;

		t->pick_age = planner_plan_measured(t->planner, (uint32_t)t->cfg.n, t->plan_mass,
						    &t->pick) == 0;
		t->st.plans += t->pick_age;
		adapt_hold(t, had && t->pick_age && t->pick.block_size == last.block_size &&
				      t->pick.sub_log == last.sub_log);
	}
	if (t->pick_age > 0) {
		t->B = (uint16_t)t->pick.block_size;
		t->sub_log = t->pick.sub_log;
	} else if (t->planner && plans_cut(&t->cfg)) {
		t->sub_log = finest_cut(t->B);
	}
}

uint8_t
tround_sub_log(uint16_t block_size, uint16_t sub_block)
{
	uint8_t k = 0;

	if (!sub_block || block_size % sub_block)
		return 0;
	while ((uint32_t)sub_block << (k + 1) <= block_size)
		k++;
	return (uint32_t)sub_block << k == block_size && k <= INA_SUB_LOG_MAX ? k : 0;
}

uint16_t
tround_job_block(uint16_t block_size, int plan, uint16_t sub_block, uint8_t encoding,
		 uint32_t max_pkt, uint16_t unplanned)
{
	uint32_t cap = INA_SLOT_ELEMS_DEFAULT;
	uint16_t fit;

	if (block_size)
		return block_size;
	if (sub_block && (uint32_t)sub_block * INA_SUB_MAX < cap)
		cap = (uint32_t)sub_block * INA_SUB_MAX;
	fit = planner_largest_block(max_pkt, (uint32_t)ina_wire_elem_size(encoding), cap);
	if (!plan)
		return fit && fit < unplanned ? fit : unplanned;
	return fit;
}

/* The cut of this round's B: the planner's, or the job's sub-block size. */
static uint8_t
plan_cut(const struct tround *t)
{
	return plans_cut(&t->cfg) ? t->sub_log : tround_sub_log(t->B, t->cfg.sub_block);
}

/* With a partition map: this round's map, and the step in wire order. */
static void
gather(struct tround *t, struct tround_step *step)
{
	t->permuted = 0;
	if (!t->pm)
		return;
	/* Valid B: min_block() sized the map, the planner never goes below. */
	(void)partition_round(t->pm, t->st.rounds, t->B);
	t->st.part_tag = partition_tag(t->pm);
	t->st.rebalances = partition_rebalances(t->pm);
	if (partition_is_identity(t->pm))
		return;
	t->permuted = 1;
	partition_gather(t->pm, step->send, t->wire_in);
	step->send = t->wire_in;
	step->out = t->wire_out;
	step->tag = t->st.part_tag;
	if (step->deferred) {
		memset(t->wire_deferred, 0, ina_wire_nb_blocks((uint32_t)t->cfg.n, t->B));
		step->deferred = t->wire_deferred;
	}
}

int
tround_begin(struct tround *t, const float *in, struct tround_step *step)
{
	memset(step, 0, sizeof(*step));
	plan(t);
	t->sub_log = plan_cut(t);
	step->block_size = t->B;
	step->sub_log = t->sub_log;
	if (!t->s) {
		step->send = in;
		gather(t, step);
		return 0;
	}
	/* Top-k ranks what travels: the sub-blocks of the cut. */
	if (sparsify_set_cut(t->s, t->B, t->sub_log ? t->B >> t->sub_log : 0) < 0 ||
	    sparsify_round(t->s, in, t->send, t->st.rounds, &t->sst) < 0)
		return -EINVAL;
	step->send = t->send;
	memset(t->deferred, 0, sparsify_n_blocks(t->s));
	if (t->cfg.sp.filter_results && t->sst.bound > 0.0f) {
		float scale = t->cfg.sp.filter_results_scale > 0.0f ? t->cfg.sp.filter_results_scale
								    : (float)t->cfg.world;

		step->bound = t->sst.bound * scale;
		step->deferred = t->deferred;
	}
	gather(t, step);
	return 0;
}

void
tround_cancel(struct tround *t)
{
	if (!t->s)
		return;
	for (uint32_t b = 0; b < sparsify_n_blocks(t->s); b++)
		sparsify_defer_block(t->s, b, t->send + (size_t)b * t->B);
}

/* Gives this worker's part of every DEFERRED block back to the residual;
 * returns how many, and adds their sum of squares to 'mass'. */
static uint32_t
take_back_deferred(struct tround *t, double *mass)
{
	uint32_t n = 0;

	for (uint32_t b = 0; b < sparsify_n_blocks(t->s); b++) {
		const float *own = t->send + (size_t)b * t->B;
		uint32_t len = sparsify_block_len(t->s, b);

		if (!t->deferred[b])
			continue;
		for (uint32_t i = 0; i < len; i++)
			*mass += (double)own[i] * own[i];
		sparsify_defer_block(t->s, b, own);
		n++;
	}
	return n;
}

void
tround_scatter(const struct tround *t, float *out)
{
	if (t->permuted)
		partition_scatter(t->pm, t->wire_out, out);
}

void
tround_end(struct tround *t, const float *out)
{
	struct tround_stats *st = &t->st;

	if (t->permuted && t->s)
		partition_scatter_flags(t->pm, t->wire_deferred, t->deferred);
	st->block_size = t->B;
	st->sub_log = t->sub_log;
	st->blocks = ina_wire_nb_blocks((uint32_t)t->cfg.n, t->B);
	st->blocks_sent = st->blocks;
	st->blocks_deferred = 0;
	if (t->s) {
		double mass = t->sst.residual_mass;

		st->blocks_sent = t->sst.blocks_sent;
		st->blocks_deferred = t->sst.bound > 0.0f && t->cfg.sp.filter_results
					      ? take_back_deferred(t, &mass)
					      : 0;
		st->residual_mass = mass;
	}
	if (t->planner) {
		/* The next round plans from this result: measured now, while
		 * it is in the cache. A round that holds the plan keeps
		 * nothing of it (no copy): should it fail, the one after
		 * holds too, and is measured as it ends. */
		t->ref_measured = plans_next(t) &&
				  planner_measure(t->planner, out, (uint32_t)t->cfg.n, t->plan_mass,
						  0.0f) == 0;
		t->have_ref = 1;
	}
	if (t->pm)
		partition_observe(t->pm, st->rounds, out);
	st->rounds++;
}

const struct tround_stats *
tround_stats(const struct tround *t)
{
	return &t->st;
}

const uint8_t *
tround_deferred(const struct tround *t, uint32_t *n_blocks)
{
	if (!t->s)
		return NULL;
	if (n_blocks)
		*n_blocks = sparsify_n_blocks(t->s);
	return t->deferred;
}

const float *
tround_residual(const struct tround *t)
{
	return t->s ? sparsify_residual(t->s) : NULL;
}

size_t
tround_n(const struct tround *t)
{
	return t->cfg.n;
}
