/* SPDX-License-Identifier: MIT */
/*
 * The block planner: per sub-block size b, measure on the shared reference
 * which sub-blocks would travel (non-zero or above a bound, or the top
 * sub-blocks by norm to a mass fraction); per candidate (B, b), the blocks of
 * B that hold one; cost them with the lane protocol's packet count and the
 * masks (see planner.h), priced in time, and keep the fastest. The reference
 * is read once: a bit per unit of the smallest b (mass 1), or flags and sums
 * of squares (mass < 1), folded pairwise for each larger b; the mass prefix
 * is found by a weighted quickselect; each B counts its blocks from the
 * kept units' bitmap folded pairwise, by popcount.
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
	uint64_t *base_bits; /* per unit of min_unit: 1 if its flags are set
			      * (what a mass >= 1 keeps) */
	uint32_t *idx;	     /* eligible unit indices, for the mass selection */
	uint8_t *sel;	     /* per unit of the current level: kept (mass < 1) */
	uint64_t *sel_bits;  /* per unit of the current level: kept (any mass) */
	uint64_t *blk_bits;  /* per block of a candidate B: sent */
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
		.cut_sub_ns = PLANNER_UDP_CUT_SUB_NS,
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

uint16_t
planner_largest_block(uint32_t max_pkt, uint32_t elem_bytes, uint32_t cap)
{
	uint64_t room = max_pkt > INA_HDR_SIZE + INA_SUB_MAX / 8
				? max_pkt - INA_HDR_SIZE - INA_SUB_MAX / 8
				: 0;
	uint32_t B = 0;

	if (cap > INA_BLOCK_MAX)
		cap = INA_BLOCK_MAX;
	for (uint32_t b = PLANNER_MIN_BLOCK; b <= cap && (uint64_t)b * elem_bytes <= room; b *= 2)
		B = b;
	return (uint16_t)B;
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
	    !cost_ok(cfg->cut_sub_ns) || (cfg->packet_ns == 0 && cfg->byte_ns == 0))
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

/* 64-bit words of a bitmap of n bits. */
static uint32_t
bit_words(uint32_t n)
{
	return n / 64 + 1;
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
	p->base_bits = calloc(bit_words(p->max_units), sizeof(*p->base_bits));
	p->sel_bits = calloc(bit_words(p->max_units), sizeof(*p->sel_bits));
	p->blk_bits = calloc(bit_words(p->max_units), sizeof(*p->blk_bits));
	if (!p->base_lvl || !p->base_flag || !p->work_lvl || !p->work_flag || !p->idx || !p->sel ||
	    !p->base_bits || !p->sel_bits || !p->blk_bits) {
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
	free(p->base_bits);
	free(p->sel_bits);
	free(p->blk_bits);
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
	if (sub_log > 0)
		c.payload_subs = blk->up_subs + (uint64_t)cfg->world * blk->sent_subs;
	return c;
}

uint64_t
planner_cost_time_ps(const struct planner_config *cfg, const struct planner_cost *c,
		     uint8_t sub_log)
{
	uint64_t packet_ps = (uint64_t)llround(cfg->packet_ns * 1000);
	uint64_t byte_ps = (uint64_t)llround(cfg->byte_ns * 1000);
	uint64_t cut_ps = sub_log > 0 ? (uint64_t)llround(cfg->cut_packet_ns * 1000) : 0;
	uint64_t sub_ps = sub_log > 0 ? (uint64_t)llround(cfg->cut_sub_ns * 1000) : 0;

	return (c->up_pkts + c->down_pkts) * packet_ps + planner_cost_bytes(c) * byte_ps +
	       c->payload_pkts * cut_ps + c->payload_subs * sub_ps;
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

/* 1 when an element of x[0 .. len) is over the bound or not finite: |x|'s
 * bits from infinity's up are above any finite bound's. Vectorizes. */
static inline uint32_t
unit_kept(const float *x, uint32_t len, uint32_t bound_bits)
{
	uint32_t over = 0;

	for (uint32_t i = 0; i < len; i++) {
		uint32_t a;

		memcpy(&a, &x[i], sizeof(a));
		over |= (uint32_t)((a & 0x7fffffffu) > bound_bits);
	}
	return over;
}

/* A unit of 8's sum of squares of its finite elements (a non-finite one's
 * bits cleared to +0: no branch, so it vectorizes), added pairwise (a fixed
 * order, so every worker's bits agree whether or not the compiler
 * vectorizes it). */
static inline double
unit8_squares(const float *x)
{
	double q[8];

	for (unsigned i = 0; i < 8; i++) {
		uint32_t a;
		float v;

		memcpy(&a, &x[i], sizeof(a));
		a &= -(uint32_t)((a & 0x7f800000u) != 0x7f800000u);
		memcpy(&v, &a, sizeof(v));
		q[i] = (double)v * v;
	}
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
	memset(p->base_bits, 0, bit_words(nu) * sizeof(*p->base_bits));
	/* A mass >= 1 needs the bitmap alone. */
	for (u = 0; !sums && u < nu; u++) {
		const float *x = ref + (uint64_t)u * b;
		uint32_t len = unit_len(n, b, u);

		p->base_bits[u / 64] |= (uint64_t)(len == 8 ? unit_kept(x, 8, bound_bits)
							    : unit_kept(x, len, bound_bits))
					<< (u % 64);
	}
	for (u = 0; sums && u < nu; u++) {
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
		p->base_bits[u / 64] |= (uint64_t)(p->base_flag[u] != 0) << (u % 64);
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

/* Marks in p->sel and p->sel_bits the units of the current level (p->lvl,
 * p->flag) that a mass < 1 keeps: every unit with a non-finite element, and
 * of the units over the bound the shortest prefix by rank that reaches the
 * mass. */
static void
select_units(struct planner *p, double mass)
{
	uint32_t nu = p->n_units, u, h = 0;
	double finite_total = 0;

	for (u = 0; u < nu; u++) {
		uint8_t f = p->flag[u];

		p->sel[u] = (f & UNIT_NONFINITE) != 0;
		if (p->sel[u] || !(f & UNIT_OVER))
			continue;
		p->idx[h++] = u;
		finite_total += p->lvl[u];
	}
	if (h > 0 && !(finite_total > 0)) { /* every key 0 (underflow): all of them */
		for (u = 0; u < h; u++)
			p->sel[p->idx[u]] = 1;
	} else if (h > 0) {
		mass_prefix(p->idx, h, p->lvl, mass * finite_total, p->sel);
	}
	memset(p->sel_bits, 0, bit_words(nu) * sizeof(*p->sel_bits));
	for (u = 0; u < nu; u++)
		p->sel_bits[u / 64] |= (uint64_t)p->sel[u] << (u % 64);
}

/* Bit i < 32 of the result: bit 2i or bit 2i + 1 of x. */
static uint64_t
pairs_or(uint64_t x)
{
	x = (x | x >> 1) & 0x5555555555555555ull;
	x = (x | x >> 1) & 0x3333333333333333ull;
	x = (x | x >> 2) & 0x0f0f0f0f0f0f0f0full;
	x = (x | x >> 4) & 0x00ff00ff00ff00ffull;
	x = (x | x >> 8) & 0x0000ffff0000ffffull;
	return (x | x >> 16) & 0x00000000ffffffffull;
}

/* From a bitmap of 'nbits' units (the bits past them 0) to one of their
 * pairs, a bit set when either unit's is: the units of twice the size. In
 * place when dst == src (word j reads words 2j and 2j + 1 only). Returns the
 * bits of dst. */
static uint32_t
fold_bits(const uint64_t *src, uint32_t nbits, uint64_t *dst)
{
	uint32_t half = (uint32_t)((nbits + 1ull) / 2), src_words = bit_words(nbits);

	for (uint32_t j = 0; j < bit_words(half); j++) {
		uint64_t lo = 2 * j < src_words ? src[2 * j] : 0;
		uint64_t hi = 2 * j + 1 < src_words ? src[2 * j + 1] : 0;

		dst[j] = pairs_or(lo) | pairs_or(hi) << 32;
	}
	return half;
}

/* The set bits among the first 'lim' of a bitmap. */
static uint32_t
bits_set(const uint64_t *w, uint32_t lim)
{
	uint32_t count = 0, i;

	for (i = 0; i < lim / 64; i++)
		count += (uint32_t)__builtin_popcountll(w[i]);
	if (lim % 64)
		count += (uint32_t)__builtin_popcountll(w[i] & ((1ull << (lim % 64)) - 1));
	return count;
}

static int
bit_is_set(const uint64_t *w, uint32_t i)
{
	return (int)((w[i / 64] >> (i % 64)) & 1);
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
	/* A mass >= 1 keeps a unit when any of its units of min_unit is over
	 * the bound or not finite: the level's bitmap is the last one's, folded. */
	if (mass >= 1.0)
		memcpy(p->sel_bits, p->base_bits, bit_words(p->n_units) * sizeof(*p->sel_bits));
	/* Each b once (its units folded from the last b's), then every B it
	 * cuts: b = B >> k, the blocks of B folded from the units of b. */
	for (b = p->min_unit; b <= p->sizes[p->n_sizes - 1]; b *= 2) {
		const uint64_t *blk = p->sel_bits; /* the blocks of b << k_done */
		unsigned k_done = 0;
		uint64_t sel_elems = 0;
		uint32_t kept = 0; /* units of b selected: the cut's sub-blocks */
		int selected = 0;
		uint32_t nb;

		if (b > p->min_unit && mass >= 1.0)
			p->n_units = fold_bits(p->sel_bits, p->n_units, p->sel_bits);
		else if (b > p->min_unit)
			fold_units(p);
		nb = p->n_units;

		for (i = 0; i < p->n_sizes; i++) {
			uint32_t B = p->sizes[i];
			struct planner_candidate *c;
			unsigned k = 0;

			while ((b << k) < B)
				k++;
			if ((b << k) != B || k > max_k(&p->cfg, B) ||
			    p->n_eval == PLANNER_MAX_CANDIDATES)
				continue;
			if (!selected) {
				uint32_t last = p->n_units - 1;

				if (mass < 1.0)
					select_units(p, mass);
				kept = bits_set(p->sel_bits, p->n_units);
				sel_elems = (uint64_t)kept * b - (bit_is_set(p->sel_bits, last)
									  ? b - unit_len(n, b, last)
									  : 0);
				selected = 1;
			}
			/* sizes ascend: k only grows for this b */
			for (; k_done < k; k_done++) {
				nb = fold_bits(blk, nb, p->blk_bits);
				blk = p->blk_bits;
			}
			c = &p->cand[p->n_eval++];
			c->block_size = B;
			c->sub_log = (uint8_t)k;
			c->blocks = (struct planner_blocks){
				.n_blocks = nb,
				.sent = bits_set(blk, nb),
				.sent_openers = bits_set(blk,
							 nb < p->cfg.lanes ? nb : p->cfg.lanes),
				.sent_elems = sel_elems,
			};
			c->blocks.up_elems = (uint64_t)p->cfg.world * c->blocks.sent_elems;
			c->blocks.up_blocks = (uint64_t)p->cfg.world * c->blocks.sent;
			c->blocks.sent_subs = k > 0 ? kept : c->blocks.sent;
			c->blocks.up_subs = (uint64_t)p->cfg.world * c->blocks.sent_subs;
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
		uint64_t s, i, elems = 0, subs = 0;
		int sent = 0;
		unsigned w;

		for (w = 0; w < n_vec; w++) {
			uint64_t own = 0, own_subs = 0;

			for (s = start; s < end; s += sb) {
				uint64_t e = s + sb < end ? s + sb : end;

				for (i = s; i < e; i++)
					if (vec[w][i] != 0.0f) /* NaN != 0: it travels */
						break;
				if (i == e)
					continue;
				own += e - s;
				own_subs++;
				any[(s - start) / sb] = 1;
			}
			if (own) {
				out->up_blocks++;
				out->up_elems += own;
				out->up_subs += own_subs;
			}
		}
		for (s = start; s < end; s += sb)
			if (any[(s - start) / sb]) {
				sent = 1;
				elems += (s + sb < end ? s + sb : end) - s;
				subs++;
			}
		if (!sent)
			continue;
		out->sent++;
		out->sent_elems += elems;
		out->sent_subs += subs;
		if (j < active)
			out->sent_openers++;
	}
}
