/* SPDX-License-Identifier: MIT */
/*
 * Sparsification with residual carry-over (sparsify.h): block top-k by L2
 * norm and a value-bounded filter, over a residual allocated once. The units
 * ranked are blocks of B, or their sub-blocks of b when the round cuts its
 * blocks (PROTOCOL 2.7). A mass target takes its prefix by a weighted
 * quickselect (mass_prefix.h, expected O(n)); a count or a byte budget ranks
 * with a binary heap (build O(n), one pop O(log n) per unit taken). Both work
 * over a preallocated index array, so a round allocates nothing, and the
 * order, ties broken by index, is deterministic. Sums of squares go in four
 * interleaved partial sums in a fixed order (sum_squares()).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "ina/wire.h"
#include "mass_prefix.h"
#include "sparsify.h"

struct sparsify {
	struct sparsify_config cfg;
	uint32_t min_unit; /* the unit at creation: sizes the arrays */
	uint32_t n_blocks;
	uint32_t unit; /* elements a ranked unit: b, or B without a cut */
	uint32_t n_units;
	uint32_t per;	 /* units a block: B / unit */
	uint32_t mask;	 /* bytes of a packet's presence mask, 0 without a cut */
	float *residual; /* n_elems */
	double *norms;	 /* per unit: sum of squares of what may be sent */
	double *keys;	 /* per unit: largest magnitude (filter budget) */
	uint32_t *heap;	 /* n_units unit indices */
	uint8_t *keep;	 /* per unit: sent this round */
};

void
sparsify_config_init(struct sparsify_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->block_size = 256;
	cfg->select = SPARSIFY_TOPK;
	cfg->target = SPARSIFY_DENSITY;
	cfg->density = 0.01;
	cfg->mass = 0.5;
	cfg->filter_mode = SPARSIFY_ELEMENT;
	cfg->bound_mode = SPARSIFY_DECAY;
	cfg->bound0 = 0.0f;
	cfg->decay = 1.0;
}

/* Wire bytes of a block of 'len' f32 values: one DATA packet. */
static uint64_t
block_bytes(uint32_t len)
{
	return INA_HDR_SIZE + 4ull * len;
}

/* The cut's k for B and b (b = B >> k, k in 1..INA_SUB_LOG_MAX), 0 for
 * none (b = 0 or b = B), -1 if b does not cut B so. */
static int
cut_log(uint32_t B, uint32_t b)
{
	int k = 0;

	if (b == 0 || b == B)
		return 0;
	if (b > B)
		return -1;
	while ((b << k) < B && k <= (int)INA_SUB_LOG_MAX)
		k++;
	return (b << k) == B && k <= (int)INA_SUB_LOG_MAX ? k : -1;
}

int
sparsify_config_check(const struct sparsify_config *cfg)
{
	uint64_t one_block;

	if (cfg == NULL || cfg->n_elems == 0 || cfg->block_size == 0 ||
	    cut_log(cfg->block_size, cfg->sub_block) < 0)
		return -EINVAL;
	if (cfg->select & ~(unsigned)(SPARSIFY_TOPK | SPARSIFY_FILTER))
		return -EINVAL;
	one_block = block_bytes(cfg->block_size < cfg->n_elems ? cfg->block_size : cfg->n_elems);
	if (cfg->select & SPARSIFY_TOPK) {
		switch (cfg->target) {
		case SPARSIFY_DENSITY:
			if (!(cfg->density > 0.0 && cfg->density <= 1.0))
				return -EINVAL;
			break;
		case SPARSIFY_BYTES:
			if (cfg->byte_budget < one_block)
				return -EINVAL;
			break;
		case SPARSIFY_MASS:
			if (!(cfg->mass > 0.0 && cfg->mass <= 1.0))
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	if (cfg->select & SPARSIFY_FILTER) {
		if (cfg->filter_mode != SPARSIFY_ELEMENT && cfg->filter_mode != SPARSIFY_BLOCK)
			return -EINVAL;
		switch (cfg->bound_mode) {
		case SPARSIFY_DECAY:
			if (!(isfinite(cfg->bound0) && cfg->bound0 >= 0.0f))
				return -EINVAL;
			if (!(cfg->decay > 0.0 && cfg->decay <= 1.0))
				return -EINVAL;
			break;
		case SPARSIFY_BUDGET:
			if (cfg->filter_budget < one_block)
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}

struct sparsify *
sparsify_create(const struct sparsify_config *cfg)
{
	struct sparsify *s;
	int ret = sparsify_config_check(cfg);

	if (ret < 0) {
		errno = -ret;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->cfg = *cfg;
	s->min_unit = cfg->sub_block ? cfg->sub_block : cfg->block_size;
	(void)sparsify_set_cut(s, cfg->block_size, cfg->sub_block);
	s->residual = calloc(cfg->n_elems, sizeof(*s->residual));
	s->norms = calloc(s->n_units, sizeof(*s->norms));
	s->keys = calloc(s->n_units, sizeof(*s->keys));
	s->heap = calloc(s->n_units, sizeof(*s->heap));
	s->keep = calloc(s->n_units, sizeof(*s->keep));
	if (!s->residual || !s->norms || !s->keys || !s->heap || !s->keep) {
		sparsify_destroy(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void
sparsify_destroy(struct sparsify *s)
{
	if (s == NULL)
		return;
	free(s->residual);
	free(s->norms);
	free(s->keys);
	free(s->heap);
	free(s->keep);
	free(s);
}

int
sparsify_set_cut(struct sparsify *s, uint32_t block_size, uint32_t sub_block)
{
	struct sparsify_config c = s->cfg;
	uint32_t unit;

	c.block_size = block_size;
	c.sub_block = sub_block == block_size ? 0 : sub_block;
	unit = c.sub_block ? c.sub_block : block_size;
	if (unit < s->min_unit || sparsify_config_check(&c) < 0)
		return -EINVAL;
	s->cfg = c;
	s->unit = unit;
	s->per = block_size / unit;
	s->mask = ina_wire_mask_bytes((uint8_t)cut_log(block_size, c.sub_block));
	s->n_blocks = (uint32_t)(((uint64_t)c.n_elems + block_size - 1) / block_size);
	s->n_units = (uint32_t)(((uint64_t)c.n_elems + unit - 1) / unit);
	return 0;
}

int
sparsify_set_block_size(struct sparsify *s, uint32_t block_size)
{
	return sparsify_set_cut(s, block_size, 0);
}

uint32_t
sparsify_sub_block(const struct sparsify *s)
{
	return s->cfg.sub_block;
}

const float *
sparsify_residual(const struct sparsify *s)
{
	return s->residual;
}

uint32_t
sparsify_n_blocks(const struct sparsify *s)
{
	return s->n_blocks;
}

uint32_t
sparsify_block_len(const struct sparsify *s, uint32_t block)
{
	uint64_t start = (uint64_t)block * s->cfg.block_size;

	if (block >= s->n_blocks)
		return 0;
	return (uint32_t)(s->cfg.n_elems - start < s->cfg.block_size ? s->cfg.n_elems - start
								     : s->cfg.block_size);
}

float
sparsify_decay_bound(const struct sparsify_config *cfg, uint32_t round)
{
	return (float)((double)cfg->bound0 * pow(cfg->decay, (double)round));
}

/* Heap order: unit_ranks_before() (mass_prefix.h). Keys are never NaN. */
static void
sift_down(uint32_t *heap, size_t n, size_t i, const double *key)
{
	for (;;) {
		size_t best = i, l = 2 * i + 1, r = l + 1;
		uint32_t tmp;

		if (l < n && unit_ranks_before(key, heap[l], heap[best]))
			best = l;
		if (r < n && unit_ranks_before(key, heap[r], heap[best]))
			best = r;
		if (best == i)
			return;
		tmp = heap[i];
		heap[i] = heap[best];
		heap[best] = tmp;
		i = best;
	}
}

static void
heap_build(uint32_t *heap, size_t n, const double *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		heap[i] = (uint32_t)i;
	for (i = n / 2; i-- > 0;)
		sift_down(heap, n, i, key);
}

static uint32_t
heap_pop(uint32_t *heap, size_t *n, const double *key)
{
	uint32_t top = heap[0];

	heap[0] = heap[--*n];
	sift_down(heap, *n, 0, key);
	return top;
}

/* Elements of unit u. */
static uint32_t
unit_len(const struct sparsify *s, uint32_t u)
{
	uint64_t start = (uint64_t)u * s->unit;

	return (uint32_t)(s->cfg.n_elems - start < s->unit ? s->cfg.n_elems - start : s->unit);
}

/* Wire bytes that sending unit u adds, given the units keep[] marks: its
 * values, and the packet's header and mask if it is the first of its block. */
static uint64_t
unit_bytes(const struct sparsify *s, uint32_t u)
{
	uint32_t first = u / s->per * s->per, end = first + s->per, i;
	uint64_t values = 4ull * unit_len(s, u);

	if (end > s->n_units)
		end = s->n_units;
	for (i = first; i < end; i++)
		if (s->keep[i])
			return values;
	return INA_HDR_SIZE + s->mask + values;
}

/*
 * Sums of squares in double here go in four interleaved partial sums,
 * element i into sum i mod 4, added as (s0 + s1) + (s2 + s3): one chain of
 * dependent adds costs an add's latency per element, four cost about a
 * quarter, and the order is fixed, so the same input gives the same bits.
 */
static double
lanes_total(const double q[4])
{
	return (q[0] + q[1]) + (q[2] + q[3]);
}

static double
sum_squares(const float *x, size_t n)
{
	double q[4] = { 0.0, 0.0, 0.0, 0.0 };
	size_t i;

	for (i = 0; i + 4 <= n; i += 4)
		for (unsigned k = 0; k < 4; k++)
			q[k] += (double)x[i + k] * x[i + k];
	for (; i < n; i++)
		q[i % 4] += (double)x[i] * x[i];
	return lanes_total(q);
}

/* acc = grad + residual, into the residual, for one unit of 'len': its sum of
 * squares, and (into *nan, *max) whether an element is NaN and its largest
 * magnitude (NaN aside), per lane as sum_squares(). With SSE2 (every x86-64)
 * the four lanes are the four floats of a vector, their squares two vectors
 * of two doubles: the same operations in the same order per lane, so the
 * same bits as the plain loop, which takes the rest. */
static double
accumulate_unit(float *r, const float *g, uint32_t len, int *nan, float *max)
{
	double q[4] = { 0.0, 0.0, 0.0, 0.0 };
	float m[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
	int bad = 0;
	uint32_t i = 0;

#ifdef __SSE2__
	{
		const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
		__m128d q01 = _mm_setzero_pd(), q23 = _mm_setzero_pd();
		__m128 mx = _mm_setzero_ps(), un = _mm_setzero_ps();

		for (; i + 4 <= len; i += 4) {
			__m128 a = _mm_add_ps(_mm_loadu_ps(g + i), _mm_loadu_ps(r + i));
			__m128d lo = _mm_cvtps_pd(a), hi = _mm_cvtps_pd(_mm_movehl_ps(a, a));

			_mm_storeu_ps(r + i, a);
			q01 = _mm_add_pd(q01, _mm_mul_pd(lo, lo));
			q23 = _mm_add_pd(q23, _mm_mul_pd(hi, hi));
			un = _mm_or_ps(un, _mm_cmpunord_ps(a, a));
			/* |a| > m ? |a| : m, as maxps picks its second operand
			 * when one is NaN */
			mx = _mm_max_ps(_mm_and_ps(a, abs_mask), mx);
		}
		_mm_storeu_pd(q, q01);
		_mm_storeu_pd(q + 2, q23);
		_mm_storeu_ps(m, mx);
		bad = _mm_movemask_ps(un) != 0;
	}
#endif
	/* The elements past the last vector (all of them without SSE2). */
	for (; i < len; i++) {
		float a = g[i] + r[i];

		r[i] = a;
		q[i % 4] += (double)a * a;
		bad |= isnan(a);
		m[i % 4] = fabsf(a) > m[i % 4] ? fabsf(a) : m[i % 4];
	}
	*nan = bad;
	*max = m[0];
	for (unsigned k = 1; k < 4; k++)
		*max = m[k] > *max ? m[k] : *max;
	return lanes_total(q);
}

/* A NaN ranks as infinity: it is sent, never hidden in the residual. */
static double
rank_key(double x)
{
	return isnan(x) ? INFINITY : x;
}

/*
 * The filter's bound under a byte budget: blocks ranked by their largest
 * magnitude (keys), the longest prefix within the budget (all-zero blocks
 * cost nothing); the bound is the k-th largest magnitude, or just above the
 * first block left out when it ties with the k-th, so that every block at or
 * above the bound is in the prefix.
 */
static float
budget_bound(struct sparsify *s)
{
	size_t n = s->n_units;
	uint64_t bytes = 0, add;
	double last = -1.0;
	uint32_t b;

	memset(s->keep, 0, s->n_units); /* scratch: the units taken */
	heap_build(s->heap, n, s->keys);
	while (n > 0) {
		b = heap_pop(s->heap, &n, s->keys);
		if (s->keys[b] == 0.0)
			break;
		add = unit_bytes(s, b);
		if (bytes + add > s->cfg.filter_budget) {
			if (last > s->keys[b])
				return (float)last;
			return nextafterf((float)s->keys[b], INFINITY);
		}
		bytes += add;
		s->keep[b] = 1;
		last = s->keys[b];
	}
	return last > 0.0 ? (float)last : 0.0f;
}

/*
 * Top-k to a mass: every unit of infinite norm (NaN or infinity: the goal is
 * not finite then), else the shortest prefix of the units of non-zero norm,
 * ranked by norm, whose norms reach the goal (at least one).
 */
static void
mass_select(struct sparsify *s, double goal)
{
	uint32_t u, h = 0;
	int inf = 0;

	for (u = 0; u < s->n_units; u++) {
		if (s->norms[u] == INFINITY) {
			s->keep[u] = 1;
			inf = 1;
		} else if (s->norms[u] != 0.0) {
			s->heap[h++] = u;
		}
	}
	if (!inf && h > 0)
		mass_prefix(s->heap, h, s->norms, goal, s->keep);
}

/* Top-k: marks keep[] for a prefix of the units ranked by norms. */
static void
topk_select(struct sparsify *s, double mass_total)
{
	const struct sparsify_config *c = &s->cfg;
	size_t n = s->n_units, kept = 0, k = 0;
	uint64_t bytes = 0;
	double goal = c->mass * mass_total, cum = 0.0;
	uint32_t b;

	if (c->target == SPARSIFY_DENSITY) {
		k = (size_t)lround(c->density * (double)s->n_units);
		if (k == 0)
			k = 1;
	}
	memset(s->keep, 0, s->n_units);
	if (c->target == SPARSIFY_MASS) {
		mass_select(s, goal);
		return;
	}
	heap_build(s->heap, n, s->norms);
	while (n > 0) {
		if (c->target == SPARSIFY_DENSITY && kept == k)
			break;
		/* Mass: until the goal is reached, and every block of infinite
		 * norm (NaN or infinity: the goal is not finite then). */
		if (c->target == SPARSIFY_MASS && kept > 0 && !(cum < goal) &&
		    s->norms[s->heap[0]] != INFINITY)
			break;
		b = heap_pop(s->heap, &n, s->norms);
		if (s->norms[b] == 0.0)
			break;
		if (c->target == SPARSIFY_BYTES) {
			bytes += unit_bytes(s, b);
			if (bytes > c->byte_budget)
				break;
		}
		s->keep[b] = 1;
		cum += s->norms[b];
		kept++;
	}
}

int
sparsify_round(struct sparsify *s, const float *grad, float *out, uint32_t round,
	       struct sparsify_stats *st)
{
	const struct sparsify_config *c;
	const uint32_t B = s ? s->unit : 0;
	int filter, element;
	float bound = 0.0f;
	struct sparsify_stats z;
	uint32_t b, i;
	double total = 0.0;

	if (s == NULL || grad == NULL || out == NULL)
		return -EINVAL;
	c = &s->cfg;
	filter = (c->select & SPARSIFY_FILTER) != 0;
	element = filter && c->filter_mode == SPARSIFY_ELEMENT;
	if (st == NULL)
		st = &z;
	memset(st, 0, sizeof(*st));

	/* acc = grad + residual, in the residual; grad is read only here, so
	 * 'out' may be 'grad'. Per unit: its mass and its largest magnitude. */
	for (b = 0; b < s->n_units; b++) {
		float m;
		int nan;
		double sq = accumulate_unit(s->residual + (size_t)b * B, grad + (size_t)b * B,
					    unit_len(s, b), &nan, &m);

		total += sq;
		s->norms[b] = rank_key(sq);
		s->keys[b] = nan ? INFINITY : m;
	}
	st->mass_total = total;

	/* The filter: its bound, then what passes it counts in the norms. */
	if (filter) {
		bound = c->bound_mode == SPARSIFY_DECAY ? sparsify_decay_bound(c, round)
							: budget_bound(s);
		for (b = 0; b < s->n_units; b++) {
			const float *r = s->residual + (size_t)b * B;
			uint32_t len = unit_len(s, b);
			double sq = 0.0;

			if ((float)s->keys[b] < bound) {
				s->norms[b] = 0.0; /* no value reaches the bound */
				continue;
			}
			if (!element)
				continue;
			for (i = 0; i < len; i++)
				if (!(fabsf(r[i]) < bound))
					sq += (double)r[i] * r[i];
			s->norms[b] = rank_key(sq);
		}
	}
	st->bound = bound;

	if (c->select & SPARSIFY_TOPK)
		topk_select(s, total);
	else
		for (b = 0; b < s->n_units; b++)
			s->keep[b] = s->norms[b] != 0.0;

	/* Out: the kept values themselves; their residual becomes 0 (acc - acc,
	 * written as 0 so that an infinity leaves no NaN behind). A block is a
	 * packet: its header, its mask and its units that hold a value sent
	 * (all of it without a cut). */
	for (uint32_t blk = 0; blk < s->n_blocks; blk++) {
		uint32_t u,
			u_end = (blk + 1) * s->per < s->n_units ? (blk + 1) * s->per : s->n_units;
		uint64_t present = 0, nz_block = 0;

		for (u = blk * s->per; u < u_end; u++) {
			float *r = s->residual + (size_t)u * B;
			float *o = out + (size_t)u * B;
			uint32_t len = unit_len(s, u), nz = 0;

			if (!s->keep[u]) {
				memset(o, 0, len * sizeof(*o));
				continue;
			}
			for (i = 0; i < len; i++) {
				float a = r[i];
				int send = !(element && fabsf(a) < bound);

				o[i] = send ? a : 0.0f;
				r[i] = send ? 0.0f : a;
				nz += (uint32_t)(send && a != 0.0f);
			}
			st->mass_sent += sum_squares(o, len);
			if (nz > 0) {
				nz_block += nz;
				present += len;
				st->subs_sent++;
			}
		}
		if (nz_block > 0) {
			st->blocks_sent++;
			st->elems_sent += nz_block;
			st->bytes_sent += s->mask ? INA_HDR_SIZE + s->mask + 4 * present
						  : block_bytes(sparsify_block_len(s, blk));
		}
	}
	st->residual_mass = sum_squares(s->residual, c->n_elems);
	return 0;
}

int
sparsify_defer_block(struct sparsify *s, uint32_t block, const float *own_sent)
{
	float *r;
	uint32_t len, i;

	if (s == NULL || own_sent == NULL || block >= s->n_blocks)
		return -EINVAL;
	r = s->residual + (size_t)block * s->cfg.block_size;
	len = sparsify_block_len(s, block);
	for (i = 0; i < len; i++)
		if (own_sent[i] != 0.0f && r[i] != 0.0f)
			return -EINVAL;
	for (i = 0; i < len; i++)
		r[i] += own_sent[i]; /* one of the two is zero: exact */
	return 0;
}
