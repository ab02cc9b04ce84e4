/* SPDX-License-Identifier: MIT */
/*
 * Sparsification with residual carry-over (sparsify.h): block top-k by L2
 * norm and a value-bounded filter, over a residual allocated once. Blocks are
 * ranked with a binary heap over a preallocated index array (build O(n), one
 * pop O(log n) per block taken), so a round allocates nothing and the order,
 * ties broken by block index, is deterministic.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ina/wire.h"
#include "sparsify.h"

struct sparsify {
	struct sparsify_config cfg;
	uint32_t min_block; /* cfg.block_size at creation: sizes the arrays */
	uint32_t n_blocks;
	float *residual; /* n_elems */
	double *norms;	 /* per block: sum of squares of what may be sent */
	double *keys;	 /* per block: largest magnitude (filter budget) */
	uint32_t *heap;	 /* n_blocks block indices */
	uint8_t *keep;	 /* per block: sent this round */
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

int
sparsify_config_check(const struct sparsify_config *cfg)
{
	uint64_t one_block;

	if (cfg == NULL || cfg->n_elems == 0 || cfg->block_size == 0)
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
	s->min_block = cfg->block_size;
	s->n_blocks = (uint32_t)(((uint64_t)cfg->n_elems + cfg->block_size - 1) / cfg->block_size);
	s->residual = calloc(cfg->n_elems, sizeof(*s->residual));
	s->norms = calloc(s->n_blocks, sizeof(*s->norms));
	s->keys = calloc(s->n_blocks, sizeof(*s->keys));
	s->heap = calloc(s->n_blocks, sizeof(*s->heap));
	s->keep = calloc(s->n_blocks, sizeof(*s->keep));
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
sparsify_set_block_size(struct sparsify *s, uint32_t block_size)
{
	struct sparsify_config c = s->cfg;

	c.block_size = block_size;
	if (block_size < s->min_block || sparsify_config_check(&c) < 0)
		return -EINVAL;
	s->cfg.block_size = block_size;
	s->n_blocks = (uint32_t)(((uint64_t)c.n_elems + block_size - 1) / block_size);
	return 0;
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

/* Heap order: larger key first, then smaller block index. Keys are never NaN. */
static int
ranks_before(const double *key, uint32_t a, uint32_t b)
{
	return key[a] > key[b] || (key[a] == key[b] && a < b);
}

static void
sift_down(uint32_t *heap, size_t n, size_t i, const double *key)
{
	for (;;) {
		size_t best = i, l = 2 * i + 1, r = l + 1;
		uint32_t tmp;

		if (l < n && ranks_before(key, heap[l], heap[best]))
			best = l;
		if (r < n && ranks_before(key, heap[r], heap[best]))
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
	size_t n = s->n_blocks;
	uint64_t bytes = 0;
	double last = -1.0;
	uint32_t b;

	heap_build(s->heap, n, s->keys);
	while (n > 0) {
		b = heap_pop(s->heap, &n, s->keys);
		if (s->keys[b] == 0.0)
			break;
		if (bytes + block_bytes(sparsify_block_len(s, b)) > s->cfg.filter_budget) {
			if (last > s->keys[b])
				return (float)last;
			return nextafterf((float)s->keys[b], INFINITY);
		}
		bytes += block_bytes(sparsify_block_len(s, b));
		last = s->keys[b];
	}
	return last > 0.0 ? (float)last : 0.0f;
}

/* Block top-k: marks keep[] for a prefix of the blocks ranked by norms. */
static void
topk_select(struct sparsify *s, double mass_total)
{
	const struct sparsify_config *c = &s->cfg;
	size_t n = s->n_blocks, kept = 0, k = 0;
	uint64_t bytes = 0;
	double goal = c->mass * mass_total, cum = 0.0;
	uint32_t b;

	if (c->target == SPARSIFY_DENSITY) {
		k = (size_t)lround(c->density * (double)s->n_blocks);
		if (k == 0)
			k = 1;
	}
	memset(s->keep, 0, s->n_blocks);
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
			bytes += block_bytes(sparsify_block_len(s, b));
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
	const uint32_t B = s ? s->cfg.block_size : 0;
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
	 * 'out' may be 'grad'. Per block: its mass and its largest magnitude. */
	for (b = 0; b < s->n_blocks; b++) {
		float *r = s->residual + (size_t)b * B;
		const float *g = grad + (size_t)b * B;
		uint32_t len = sparsify_block_len(s, b);
		double sq = 0.0;
		float m = 0.0f;
		int nan = 0;

		for (i = 0; i < len; i++) {
			float a = g[i] + r[i];

			r[i] = a;
			sq += (double)a * a;
			nan |= isnan(a);
			m = fabsf(a) > m ? fabsf(a) : m;
		}
		total += sq;
		s->norms[b] = rank_key(sq);
		s->keys[b] = nan ? INFINITY : m;
	}
	st->mass_total = total;

	/* The filter: its bound, then what passes it counts in the norms. */
	if (filter) {
		bound = c->bound_mode == SPARSIFY_DECAY ? sparsify_decay_bound(c, round)
							: budget_bound(s);
		for (b = 0; b < s->n_blocks; b++) {
			const float *r = s->residual + (size_t)b * B;
			uint32_t len = sparsify_block_len(s, b);
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
		for (b = 0; b < s->n_blocks; b++)
			s->keep[b] = s->norms[b] != 0.0;

	/* Out: the kept values themselves; their residual becomes 0 (acc - acc,
	 * written as 0 so that an infinity leaves no NaN behind). */
	for (b = 0; b < s->n_blocks; b++) {
		float *r = s->residual + (size_t)b * B;
		float *o = out + (size_t)b * B;
		uint32_t len = sparsify_block_len(s, b), nz = 0;

		if (!s->keep[b]) {
			memset(o, 0, len * sizeof(*o));
			continue;
		}
		for (i = 0; i < len; i++) {
			float a = r[i];

			if (element && fabsf(a) < bound) {
				o[i] = 0.0f;
				continue;
			}
			o[i] = a;
			r[i] = 0.0f;
			if (a != 0.0f) {
				nz++;
				st->mass_sent += (double)a * a;
			}
		}
		if (nz > 0) {
			st->blocks_sent++;
			st->elems_sent += nz;
			st->bytes_sent += block_bytes(len);
		}
	}
	for (i = 0; i < c->n_elems; i++)
		st->residual_mass += (double)s->residual[i] * s->residual[i];
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
