/* SPDX-License-Identifier: MIT */
/*
 * The block planner: per candidate B, measure on the shared reference which
 * blocks would travel (non-zero or above a bound, or the top blocks by norm to
 * a mass fraction), cost them with the lane protocol's packet count (see
 * planner.h), and keep the cheapest B, the larger on a tie. Ranking uses a
 * binary heap over an index array sized at create for the smallest B.
 */
#include "planner.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "ina/wire.h"

struct planner {
	struct planner_config cfg;
	unsigned n_cand;
	uint32_t sizes[PLANNER_MAX_CANDIDATES];
	struct planner_candidate cand[PLANNER_MAX_CANDIDATES];
	uint32_t max_blocks; /* blocks of max_elems at B = 16 */
	double *key;	     /* per block: sum of squares, INFINITY if not finite */
	uint32_t *heap;	     /* eligible block indices */
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
	};
}

uint32_t
planner_max_block(const struct planner_config *cfg)
{
	uint32_t b;

	if (cfg->elem_bytes == 0 || cfg->max_pkt <= INA_HDR_SIZE)
		return 0;
	b = (cfg->max_pkt - INA_HDR_SIZE) / cfg->elem_bytes;
	return b > 65535u ? 65535u : b;
}

int
planner_config_check(const struct planner_config *cfg)
{
	if (!cfg || cfg->max_elems == 0 || cfg->elem_bytes == 0 || cfg->world == 0 ||
	    cfg->world > INA_MAX_WORLD || cfg->lanes == 0 ||
	    planner_max_block(cfg) < PLANNER_MIN_BLOCK)
		return -EINVAL;
	return 0;
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
	for (b = PLANNER_MIN_BLOCK; b <= maxb && p->n_cand < PLANNER_MAX_CANDIDATES; b *= 2)
		p->sizes[p->n_cand++] = b;
	p->max_blocks = (uint32_t)((cfg->max_elems + (uint64_t)PLANNER_MIN_BLOCK - 1) /
				   PLANNER_MIN_BLOCK);
	p->key = calloc(p->max_blocks, sizeof(*p->key));
	p->heap = calloc(p->max_blocks, sizeof(*p->heap));
	if (!p->key || !p->heap) {
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
	free(p->key);
	free(p->heap);
	free(p);
}

unsigned
planner_n_candidates(const struct planner *p)
{
	return p->n_cand;
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

struct planner_cost
planner_cost(const struct planner_config *cfg, uint32_t n, uint32_t B,
	     const struct planner_blocks *blk)
{
	struct planner_cost c = { 0 };
	uint64_t nb = (n + (uint64_t)B - 1) / B;
	uint64_t active = nb < cfg->lanes ? nb : cfg->lanes;
	uint64_t steps, hdr = INA_HDR_SIZE + (uint64_t)cfg->frame_bytes;

	if (cfg->open_exchange)
		steps = active + blk->sent;
	else
		steps = active + blk->sent - blk->sent_openers;
	c.up_pkts = (uint64_t)cfg->world * steps;
	c.down_pkts = (uint64_t)cfg->world * steps;
	c.up_bytes = c.up_pkts * hdr + (uint64_t)cfg->elem_bytes * blk->up_elems;
	c.down_bytes = c.down_pkts * hdr + (uint64_t)cfg->elem_bytes * cfg->world * blk->sent_elems;
	return c;
}

/* Block a ranks before block b: larger key, then smaller index. */
static int
before(const double *key, uint32_t a, uint32_t b)
{
	if (key[a] != key[b])
		return key[a] > key[b];
	return a < b;
}

static void
sift_down(uint32_t *heap, uint32_t n, uint32_t i, const double *key)
{
	for (;;) {
		uint32_t best = i, l = 2 * i + 1, r = 2 * i + 2, t;

		if (l < n && before(key, heap[l], heap[best]))
			best = l;
		if (r < n && before(key, heap[r], heap[best]))
			best = r;
		if (best == i)
			return;
		t = heap[i];
		heap[i] = heap[best];
		heap[best] = t;
		i = best;
	}
}

static void
take(struct planner_blocks *blk, uint32_t b, uint32_t n, uint32_t B, uint32_t active)
{
	uint64_t start = (uint64_t)b * B, len = n - start < B ? n - start : B;

	blk->sent++;
	blk->sent_elems += len;
	if (b < active)
		blk->sent_openers++;
}

/* Measures U at block size B on 'ref' into blk (uplink not set). */
static void
measure(struct planner *p, const float *ref, uint32_t n, uint32_t B, double mass, float bound,
	struct planner_blocks *blk)
{
	uint32_t nb = (uint32_t)((n + (uint64_t)B - 1) / B);
	uint32_t active = nb < p->cfg.lanes ? nb : p->cfg.lanes;
	uint32_t b, h = 0;
	double finite_total = 0, target, acc = 0;

	*blk = (struct planner_blocks){ .n_blocks = nb };
	for (b = 0; b < nb; b++) {
		uint64_t i, end = (uint64_t)b * B + B < n ? (uint64_t)b * B + B : n;
		double ss = 0;
		int over = 0, nonfinite = 0;

		for (i = (uint64_t)b * B; i < end; i++) {
			float v = ref[i];

			if (!isfinite(v)) {
				nonfinite = 1;
				continue;
			}
			if (fabsf(v) > bound)
				over = 1;
			ss += (double)v * v;
		}
		if (nonfinite) {
			take(blk, b, n, B, active); /* always travels */
			continue;
		}
		if (!over)
			continue;
		if (mass >= 1.0) {
			take(blk, b, n, B, active);
			continue;
		}
		p->key[b] = ss;
		p->heap[h++] = b;
		finite_total += ss;
	}
	if (mass >= 1.0 || h == 0)
		return;
	for (b = h / 2; b-- > 0;)
		sift_down(p->heap, h, b, p->key);
	target = mass * finite_total;
	while (h > 0 && (acc < target || acc == 0)) {
		uint32_t top = p->heap[0];

		acc += p->key[top];
		take(blk, top, n, B, active);
		p->heap[0] = p->heap[--h];
		sift_down(p->heap, h, 0, p->key);
	}
}

uint32_t
planner_plan(struct planner *p, const float *ref, uint32_t n, double mass, float bound)
{
	uint32_t best = 0;
	uint64_t best_bytes = 0;
	unsigned k;

	if (!p || !ref || n == 0 || n > p->cfg.max_elems || !(mass > 0) || !(bound >= 0))
		return 0;
	for (k = 0; k < p->n_cand; k++) {
		struct planner_candidate *c = &p->cand[k];
		uint64_t bytes;

		c->block_size = p->sizes[k];
		measure(p, ref, n, c->block_size, mass, bound, &c->blocks);
		c->blocks.up_elems = (uint64_t)p->cfg.world * c->blocks.sent_elems;
		c->cost = planner_cost(&p->cfg, n, c->block_size, &c->blocks);
		c->density = (double)c->blocks.sent / c->blocks.n_blocks;
		bytes = planner_cost_bytes(&c->cost);
		/* Candidates ascend, so <= keeps the larger B on a tie. */
		if (best == 0 || bytes <= best_bytes) {
			best = c->block_size;
			best_bytes = bytes;
		}
	}
	return best;
}

void
planner_count(const struct planner_config *cfg, const float *const *vec, unsigned n_vec, uint32_t n,
	      uint32_t B, struct planner_blocks *out)
{
	uint32_t nb = (uint32_t)((n + (uint64_t)B - 1) / B);
	uint32_t active = nb < cfg->lanes ? nb : cfg->lanes;
	uint32_t b;

	*out = (struct planner_blocks){ .n_blocks = nb };
	for (b = 0; b < nb; b++) {
		uint64_t i, start = (uint64_t)b * B, end = start + B < n ? start + B : n;
		int any = 0;
		unsigned w;

		for (w = 0; w < n_vec; w++) {
			for (i = start; i < end; i++)
				if (vec[w][i] != 0.0f) /* NaN != 0: it travels */
					break;
			if (i < end) {
				any = 1;
				out->up_elems += end - start;
			}
		}
		if (any)
			take(out, b, n, B, active);
	}
}
