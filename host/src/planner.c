/* SPDX-License-Identifier: MIT */
/*
 * The block planner: per sub-block size b, measure on the shared reference
 * which sub-blocks would travel (non-zero or above a bound, or the top
 * sub-blocks by norm to a mass fraction); per candidate (B, b), the blocks of
 * B that hold one; cost them with the lane protocol's packet count and the
 * masks (see planner.h), priced in time, and keep the fastest. The reference
 * is read once: sums of squares per unit of the smallest b, folded pairwise
 * for each larger b; the mass prefix is found by a weighted quickselect;
 * each B counts its blocks from per-block counts folded pairwise.
 */
#include "planner.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ina/wire.h"
#include "mass_prefix.h"

#define UNIT_OVER 1u	  /* an element |x| > bound */
#define UNIT_NONFINITE 2u /* a NaN or an infinity */

struct planner {
	struct planner_config cfg;
	unsigned n_sizes, n_eval;
	uint32_t sizes[PLANNER_MAX_SIZES];
	struct planner_candidate cand[PLANNER_MAX_CANDIDATES];
	uint32_t min_unit;  /* the smallest b of any candidate */
	uint32_t max_units; /* units of max_elems at min_unit */
	uint32_t n_units;   /* units of the current level */
	double *lvl;	    /* per unit of the current level: sum of squares */
	uint8_t *flag;	    /* per unit: UNIT_OVER, UNIT_NONFINITE */
	/* The last planner_measure(): units of min_unit (the first level),
	 * their sums only when measured for a mass < 1; the levels above are
	 * folded into the work arrays, so a measurement serves any plans. */
	double *base_lvl, *work_lvl;
	uint8_t *base_flag, *work_flag;
	uint32_t base_n, base_units;
	int base_sums, measured;
	uint32_t *idx; /* eligible unit indices, for the mass selection */
	uint8_t *sel;  /* per unit: kept */
	uint32_t *cnt; /* per unit, then per block: elements sent */
};

void
planner_config_init(struct planner_config *cfg)
{
	*cfg = (struct planner_config){
		.max_elems = 0,
		.max_pkt = 9000,
		.elem_bytes = 4,
		.world = 4,
		.lanes = 64,
		.open_exchange = 0,
		.frame_bytes = 0,
		.max_sub_log = 0,
		.mask_room = 0,
		.packet_ns = PLANNER_UDP_PACKET_NS,
		.byte_ns = PLANNER_UDP_BYTE_NS,
		.cut_packet_ns = PLANNER_UDP_CUT_PACKET_NS,
	};
}

uint32_t
planner_max_block(const struct planner_config *cfg)
{
	uint32_t b;

	if (cfg->elem_bytes == 0 || cfg->max_pkt <= INA_HDR_SIZE)
		return 0;
	b = (cfg->max_pkt - INA_HDR_SIZE) / cfg->elem_bytes;
	return b > INA_BLOCK_MAX ? INA_BLOCK_MAX : b;
}

uint32_t
planner_mask_bytes(uint8_t sub_log)
{
	return ina_wire_mask_bytes(sub_log);
}

/* A cost per unit: >= 0, at most a millisecond (the time in ps fits 64 bits). */
static int
cost_ok(double ns)
{
	return ns >= 0 && ns <= 1e6;
}

int
planner_config_check(const struct planner_config *cfg)
{
	if (!cfg || cfg->max_elems == 0 || cfg->elem_bytes == 0 || cfg->world == 0 ||
	    cfg->world > INA_MAX_WORLD || cfg->lanes == 0 ||
	    planner_max_block(cfg) < PLANNER_MIN_BLOCK || cfg->max_sub_log > PLANNER_MAX_SUB_LOG ||
	    !cost_ok(cfg->packet_ns) || !cost_ok(cfg->byte_ns) || !cost_ok(cfg->cut_packet_ns) ||
	    (cfg->packet_ns == 0 && cfg->byte_ns == 0))
		return -EINVAL;
	return 0;
}

/* The largest k tried at block size B: b >= PLANNER_MIN_SUB, and a full
 * block with its mask fits a packet. */
static unsigned
max_k(const struct planner_config *cfg, uint32_t B)
{
	uint64_t room = (uint64_t)cfg->max_pkt + cfg->mask_room;
	unsigned k = 0;

	while (k < cfg->max_sub_log && (B >> (k + 1)) >= PLANNER_MIN_SUB &&
	       INA_HDR_SIZE + ina_wire_mask_bytes((uint8_t)(k + 1)) +
			       (uint64_t)B * cfg->elem_bytes <=
		       room)
		k++;
	return k;
}

struct planner *
planner_create(const struct planner_config *cfg)
{
	struct planner *p;
	uint32_t b, maxb;

	if (planner_config_check(cfg) != 0) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cfg = *cfg;
	maxb = planner_max_block(cfg);
	for (b = PLANNER_MIN_BLOCK; b <= maxb && p->n_sizes < PLANNER_MAX_SIZES; b *= 2)
		p->sizes[p->n_sizes++] = b;
	p->min_unit = PLANNER_MIN_BLOCK;
	for (unsigned i = 0; i < p->n_sizes; i++)
		if ((p->sizes[i] >> max_k(cfg, p->sizes[i])) < p->min_unit)
			p->min_unit = p->sizes[i] >> max_k(cfg, p->sizes[i]);
	p->max_units = (uint32_t)((cfg->max_elems + (uint64_t)p->min_unit - 1) / p->min_unit);
	p->base_lvl = calloc(p->max_units, sizeof(*p->base_lvl));
	p->base_flag = calloc(p->max_units, sizeof(*p->base_flag));
	p->work_lvl = calloc(p->max_units, sizeof(*p->work_lvl));
	p->work_flag = calloc(p->max_units, sizeof(*p->work_flag));
	p->idx = calloc(p->max_units, sizeof(*p->idx));
	p->sel = calloc(p->max_units, sizeof(*p->sel));
	p->cnt = calloc(p->max_units, sizeof(*p->cnt));
	if (!p->base_lvl || !p->base_flag || !p->work_lvl || !p->work_flag || !p->idx || !p->sel ||
	    !p->cnt) {
		planner_destroy(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void
planner_destroy(struct planner *p)
{
	if (!p)
		return;
	free(p->base_lvl);
	free(p->base_flag);
	free(p->work_lvl);
	free(p->work_flag);
	free(p->idx);
	free(p->sel);
	free(p->cnt);
	free(p);
}

unsigned
planner_n_candidates(const struct planner *p)
{
	return p->n_sizes;
}

const uint32_t *
planner_candidate_sizes(const struct planner *p)
{
	return p->sizes;
}

const struct planner_candidate *
planner_candidates(const struct planner *p)
{
	return p->cand;
}

unsigned
planner_n_evaluated(const struct planner *p)
{
	return p->n_eval;
}

struct planner_cost
planner_cost(const struct planner_config *cfg, uint32_t n, uint32_t B, uint8_t sub_log,
	     const struct planner_blocks *blk)
{
	struct planner_cost c = { 0 };
	uint64_t nb = (n + (uint64_t)B - 1) / B;
	uint64_t active = nb < cfg->lanes ? nb : cfg->lanes;
	uint64_t steps, hdr = INA_HDR_SIZE + (uint64_t)cfg->frame_bytes;
	uint64_t mask = planner_mask_bytes(sub_log);

	if (cfg->open_exchange)
		steps = active + blk->sent;
	else
		steps = active + blk->sent - blk->sent_openers;
	c.up_pkts = (uint64_t)cfg->world * steps;
	c.down_pkts = (uint64_t)cfg->world * steps;
	c.up_bytes = c.up_pkts * hdr + mask * blk->up_blocks +
		     (uint64_t)cfg->elem_bytes * blk->up_elems;
	c.down_bytes = c.down_pkts * hdr + mask * cfg->world * blk->sent +
		       (uint64_t)cfg->elem_bytes * cfg->world * blk->sent_elems;
	c.payload_pkts = blk->up_blocks + (uint64_t)cfg->world * blk->sent;
	return c;
}

uint64_t
planner_cost_time_ps(const struct planner_config *cfg, const struct planner_cost *c,
		     uint8_t sub_log)
{
	uint64_t packet_ps = (uint64_t)llround(cfg->packet_ns * 1000);
	uint64_t byte_ps = (uint64_t)llround(cfg->byte_ns * 1000);
	uint64_t cut_ps = sub_log > 0 ? (uint64_t)llround(cfg->cut_packet_ns * 1000) : 0;

	return (c->up_pkts + c->down_pkts) * packet_ps + planner_cost_bytes(c) * byte_ps +
	       c->payload_pkts * cut_ps;
}

/* Elements of unit u of size 'b' in a tensor of n. */
static uint32_t
unit_len(uint32_t n, uint32_t b, uint32_t u)
{
	uint64_t start = (uint64_t)u * b;

	return n - start < b ? (uint32_t)(n - start) : b;
}

/* A unit's flags from its elements' bits: |x| as an integer orders as |x|
 * does for every non-NaN, so an element is over the bound when its bits
 * (sign cleared) are above the bound's and below infinity's, and is not
 * finite from infinity's bits up. No branch: the loop vectorizes. */
static inline uint8_t
unit_flags(const float *x, uint32_t len, uint32_t bound_bits)
{
	uint32_t over = 0, nonfinite = 0;

	for (uint32_t i = 0; i < len; i++) {
		uint32_t a;

		memcpy(&a, &x[i], sizeof(a));
		a &= 0x7fffffffu;
		over |= (uint32_t)(a > bound_bits) & (uint32_t)(a < 0x7f800000u);
		nonfinite |= (uint32_t)(a >= 0x7f800000u);
	}
	return (uint8_t)((over ? UNIT_OVER : 0) | (nonfinite ? UNIT_NONFINITE : 0));
}

/* A unit of 8's sum of squares of its finite elements, added pairwise (a
 * fixed order, so every worker's bits agree whether or not the compiler
 * vectorizes it). */
static inline double
unit8_squares(const float *x)
{
	double q[8];

	for (unsigned i = 0; i < 8; i++)
		q[i] = isfinite(x[i]) ? (double)x[i] * x[i] : 0.0;
	return ((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]));
}

/* The reference's units of the smallest b, in one pass, into base_*: per
 * unit its flags, and with 'sums' its sum of squares (finite elements; a
 * unit of 8 pairwise, any other in order). */
static void
measure_units(struct planner *p, const float *ref, uint32_t n, float bound, int sums)
{
	uint32_t b = p->min_unit, nu = (uint32_t)((n + (uint64_t)b - 1) / b), u, bound_bits;
	float abs_bound = fabsf(bound);

	memcpy(&bound_bits, &abs_bound, sizeof(bound_bits));
	for (u = 0; u < nu; u++) {
		const float *x = ref + (uint64_t)u * b;
		uint32_t len = unit_len(n, b, u);
		double ss = 0;

		/* The common unit of 8 with its length known: vectorized. */
		p->base_flag[u] = len == 8 ? unit_flags(x, 8, bound_bits)
					   : unit_flags(x, len, bound_bits);
		if (sums && len == 8)
			ss = unit8_squares(x);
		for (uint32_t i = 0; sums && len != 8 && i < len; i++) {
			float v = x[i];

			ss += isfinite(v) ? (double)v * v : 0.0;
		}
		p->base_lvl[u] = ss;
	}
	p->base_units = nu;
	p->base_n = n;
	p->base_sums = sums;
	p->measured = 1;
}

/* From units of b to units of 2b, into the work arrays: pairs summed (when
 * measured with sums), flags joined. */
static void
fold_units(struct planner *p)
{
	uint32_t nu = (p->n_units + 1) / 2, u;
	const double *lvl = p->lvl;
	const uint8_t *flag = p->flag;

	for (u = 0; u < nu; u++) {
		uint32_t a = 2 * u, c = 2 * u + 1;
		int two = c < p->n_units;

		if (p->base_sums)
			p->work_lvl[u] = lvl[a] + (two ? lvl[c] : 0);
		p->work_flag[u] = (uint8_t)(flag[a] | (two ? flag[c] : 0));
	}
	p->lvl = p->work_lvl;
	p->flag = p->work_flag;
	p->n_units = nu;
}

/* Marks in p->sel the units of the current level (p->lvl, p->flag) that
 * travel. */
static void
select_units(struct planner *p, double mass)
{
	uint32_t nu = p->n_units, u, h = 0;
	double finite_total = 0;

	for (u = 0; u < nu; u++) {
		uint8_t f = p->flag[u];

		p->sel[u] = (f & UNIT_NONFINITE) || ((f & UNIT_OVER) && mass >= 1.0);
		if (p->sel[u] || !(f & UNIT_OVER))
			continue;
		p->idx[h++] = u;
		finite_total += p->lvl[u];
	}
	if (mass >= 1.0 || h == 0)
		return;
	if (!(finite_total > 0)) { /* every key 0 (underflow): all of them */
		for (u = 0; u < h; u++)
			p->sel[p->idx[u]] = 1;
		return;
	}
	mass_prefix(p->idx, h, p->lvl, mass * finite_total, p->sel);
}

/* The elements each unit of the current level sends (p->sel), into
 * p->cnt: the blocks of B = b at k = 0. */
static void
mark_counts(struct planner *p, uint32_t n, uint32_t b)
{
	for (uint32_t u = 0; u < p->n_units; u++)
		p->cnt[u] = p->sel[u] ? unit_len(n, b, u) : 0;
}

/* p->cnt from blocks of B to blocks of 2B, in place; 'len' blocks. */
static uint32_t
fold_counts(struct planner *p, uint32_t len)
{
	uint32_t half = (len + 1) / 2;

	for (uint32_t j = 0; j < half; j++)
		p->cnt[j] = p->cnt[2 * j] + (2 * j + 1 < len ? p->cnt[2 * j + 1] : 0);
	return half;
}

/* U from p->cnt, the elements each of the nb blocks sends (uplink not
 * set). */
static void
count_blocks(const struct planner *p, uint32_t nb, struct planner_blocks *blk)
{
	uint32_t active = nb < p->cfg.lanes ? nb : p->cfg.lanes;

	*blk = (struct planner_blocks){ .n_blocks = nb };
	for (uint32_t j = 0; j < nb; j++) {
		if (p->cnt[j] == 0)
			continue;
		blk->sent++;
		blk->sent_elems += p->cnt[j];
		if (j < active)
			blk->sent_openers++;
	}
}

/* Candidate a is better than the best so far, 'best' (NULL: none yet). */
static int
better(const struct planner_candidate *a, const struct planner_candidate *best)
{
	uint64_t ab = planner_cost_bytes(&a->cost), bb;

	if (!best)
		return 1;
	if (a->time_ps != best->time_ps)
		return a->time_ps < best->time_ps;
	bb = planner_cost_bytes(&best->cost);
	if (ab != bb)
		return ab < bb;
	if (a->block_size != best->block_size)
		return a->block_size > best->block_size;
	return a->sub_log < best->sub_log;
}

int
planner_measure(struct planner *p, const float *ref, uint32_t n, double mass, float bound)
{
	if (!p || !ref || n == 0 || n > p->cfg.max_elems || !(mass > 0) || !(bound >= 0))
		return -EINVAL;
	measure_units(p, ref, n, bound, mass < 1.0);
	return 0;
}

int
planner_plan_measured(struct planner *p, uint32_t n, double mass, struct planner_pick *pick)
{
	const struct planner_candidate *best = NULL;
	uint32_t b;
	unsigned i;

	if (!p || !pick || !p->measured || n != p->base_n || !(mass > 0) ||
	    (mass < 1.0 && !p->base_sums))
		return -EINVAL;
	p->n_eval = 0;
	p->lvl = p->base_lvl;
	p->flag = p->base_flag;
	p->n_units = p->base_units;
	/* Each b once (its units folded from the last b's), then every B it
	 * cuts: b = B >> k. */
	for (b = p->min_unit; b <= p->sizes[p->n_sizes - 1]; b *= 2) {
		uint32_t len = 0; /* blocks in p->cnt, at cut k_cnt */
		unsigned k_cnt = 0;
		int measured = 0;

		if (b > p->min_unit)
			fold_units(p);

		for (i = 0; i < p->n_sizes; i++) {
			uint32_t B = p->sizes[i];
			struct planner_candidate *c;
			unsigned k = 0;

			while ((b << k) < B)
				k++;
			if ((b << k) != B || k > max_k(&p->cfg, B) ||
			    p->n_eval == PLANNER_MAX_CANDIDATES)
				continue;
			if (!measured) {
				select_units(p, mass);
				mark_counts(p, n, b);
				len = p->n_units;
				measured = 1;
			}
			/* sizes ascend: k only grows for this b */
			for (; k_cnt < k; k_cnt++)
				len = fold_counts(p, len);
			c = &p->cand[p->n_eval++];
			c->block_size = B;
			c->sub_log = (uint8_t)k;
			count_blocks(p, len, &c->blocks);
			c->blocks.up_elems = (uint64_t)p->cfg.world * c->blocks.sent_elems;
			c->blocks.up_blocks = (uint64_t)p->cfg.world * c->blocks.sent;
			c->cost = planner_cost(&p->cfg, n, B, (uint8_t)k, &c->blocks);
			c->time_ps = planner_cost_time_ps(&p->cfg, &c->cost, (uint8_t)k);
			c->density = (double)c->blocks.sent / c->blocks.n_blocks;
			if (better(c, best))
				best = c;
		}
	}
	pick->block_size = best->block_size;
	pick->sub_log = best->sub_log;
	pick->sub = best->block_size >> best->sub_log;
	return 0;
}

int
planner_plan_cut(struct planner *p, const float *ref, uint32_t n, double mass, float bound,
		 struct planner_pick *pick)
{
	int ret;

	if (!pick)
		return -EINVAL;
	ret = planner_measure(p, ref, n, mass, bound);
	return ret < 0 ? ret : planner_plan_measured(p, n, mass, pick);
}

uint32_t
planner_plan(struct planner *p, const float *ref, uint32_t n, double mass, float bound)
{
	struct planner_pick pick;

	if (planner_plan_cut(p, ref, n, mass, bound, &pick) < 0)
		return 0;
	return pick.block_size;
}

void
planner_first_cut(const struct planner *p, struct planner_pick *pick)
{
	uint32_t B = p->sizes[p->n_sizes - 1];

	pick->block_size = B;
	pick->sub_log = (uint8_t)max_k(&p->cfg, B);
	pick->sub = B >> pick->sub_log;
}

void
planner_count(const struct planner_config *cfg, const float *const *vec, unsigned n_vec, uint32_t n,
	      uint32_t B, uint8_t sub_log, struct planner_blocks *out)
{
	uint32_t nb = (uint32_t)((n + (uint64_t)B - 1) / B);
	uint32_t active = nb < cfg->lanes ? nb : cfg->lanes;
	uint32_t sb = B >> sub_log, j;

	*out = (struct planner_blocks){ .n_blocks = nb };
	for (j = 0; j < nb; j++) {
		uint64_t start = (uint64_t)j * B, end = start + B < n ? start + B : n;
		uint8_t any[INA_SUB_MAX] = { 0 };
		uint64_t s, i, elems = 0;
		int sent = 0;
		unsigned w;

		for (w = 0; w < n_vec; w++) {
			uint64_t own = 0;

			for (s = start; s < end; s += sb) {
				uint64_t e = s + sb < end ? s + sb : end;

				for (i = s; i < e; i++)
					if (vec[w][i] != 0.0f) /* NaN != 0: it travels */
						break;
				if (i == e)
					continue;
				own += e - s;
				any[(s - start) / sb] = 1;
			}
			if (own) {
				out->up_blocks++;
				out->up_elems += own;
			}
		}
		for (s = start; s < end; s += sb)
			if (any[(s - start) / sb]) {
				sent = 1;
				elems += (s + sb < end ? s + sb : end) - s;
			}
		if (!sent)
			continue;
		out->sent++;
		out->sent_elems += elems;
		if (j < active)
			out->sent_openers++;
	}
}
