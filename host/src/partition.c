/* SPDX-License-Identifier: MIT */
/*
 * Partition maps of a tensor's blocks onto wire positions (partition.h): the
 * greedy balancing of loaded blocks over the switch's partitions, the
 * rebalancing schedule, and the gather and scatter around the engine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ina/util.h"
#include "partition.h"

struct partition {
	struct partition_config cfg;
	uint32_t n; /* elements */
	uint16_t min_block;
	uint32_t cap_nb;  /* blocks at min_block: the arrays' size */
	uint32_t *blk_at; /* the map: block at wire position v */
	uint32_t nb;	  /* blocks of the current map */
	uint16_t B;	  /* block size of the current map (0: none yet) */
	int is_identity;
	uint32_t tag;
	uint32_t rebalances;
	/* DYNAMIC: the non-zero elements of the sum the map was built from,
	 * and the one kept for the next rebalancing round. */
	uint8_t *cur_nz, *next_nz; /* n bits each */
	int have_cur, have_next;
	uint32_t next_round;
	/* Scratch of partition_build(). */
	uint64_t *keys;	 /* cap_nb */
	uint32_t *load;	 /* cap_nb */
	uint8_t *used;	 /* cap_nb: position taken */
	uint8_t *placed; /* cap_nb: block placed */
	uint32_t cap[PARTITION_MAX_PARTS], cnt[PARTITION_MAX_PARTS], cur[PARTITION_MAX_PARTS];
	uint64_t sum[PARTITION_MAX_PARTS];
};

uint16_t
partition_part(const struct partition_config *cfg, uint32_t nb, uint32_t pos)
{
	if (cfg->layout == PARTITION_RANGES)
		/* The largest k with ceil(k nb / K) <= pos (egroup.h's runs). */
		return (uint16_t)((uint64_t)pos * cfg->parts / nb);
	return partition_of(pos, cfg->lanes, cfg->parts);
}

int
partition_config_check(const struct partition_config *cfg, char *err, size_t err_size)
{
	if (cfg->mode != PARTITION_FIXED && cfg->mode != PARTITION_DYNAMIC) {
		ina_errf(err, err_size, "partition: unknown mode %d", (int)cfg->mode);
		return -EINVAL;
	}
	if (cfg->layout != PARTITION_LANES && cfg->layout != PARTITION_RANGES) {
		ina_errf(err, err_size, "partition: unknown layout %d", (int)cfg->layout);
		return -EINVAL;
	}
	if (cfg->parts < 1 || cfg->parts > PARTITION_MAX_PARTS || cfg->lanes < 1) {
		ina_errf(err, err_size,
			 "partition: %u partitions over %u lanes (partitions "
			 "1..%d, lanes >= 1)",
			 cfg->parts, cfg->lanes, PARTITION_MAX_PARTS);
		return -EINVAL;
	}
	if (cfg->mode == PARTITION_DYNAMIC && cfg->period < 1) {
		ina_errf(err, err_size, "partition: dynamic needs a period of at least 1 round");
		return -EINVAL;
	}
	return 0;
}

struct partition *
partition_create(const struct partition_config *cfg, uint32_t n_elems, uint16_t min_block)
{
	struct partition *p;
	size_t bits;

	if (partition_config_check(cfg, NULL, 0) < 0 || n_elems == 0 || min_block == 0) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cfg = *cfg;
	p->n = n_elems;
	p->min_block = min_block;
	p->cap_nb = (n_elems + min_block - 1) / min_block;
	bits = (n_elems + 7) / 8;
	p->blk_at = calloc(p->cap_nb, sizeof(*p->blk_at));
	p->keys = calloc(p->cap_nb, sizeof(*p->keys));
	p->load = calloc(p->cap_nb, sizeof(*p->load));
	p->used = calloc(p->cap_nb, 1);
	p->placed = calloc(p->cap_nb, 1);
	if (cfg->mode == PARTITION_DYNAMIC) {
		p->cur_nz = calloc(bits, 1);
		p->next_nz = calloc(bits, 1);
	}
	if (!p->blk_at || !p->keys || !p->load || !p->used || !p->placed ||
	    (cfg->mode == PARTITION_DYNAMIC && (!p->cur_nz || !p->next_nz))) {
		partition_destroy(p);
		errno = ENOMEM;
		return NULL;
	}
	partition_identity(p, p->cap_nb);
	return p;
}

void
partition_destroy(struct partition *p)
{
	if (!p)
		return;
	free(p->blk_at);
	free(p->keys);
	free(p->load);
	free(p->used);
	free(p->placed);
	free(p->cur_nz);
	free(p->next_nz);
	free(p);
}

/* The tag of the current map (partition_tag). */
static void
set_tag(struct partition *p)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a over the map */

	p->is_identity = 1;
	for (uint32_t v = 0; v < p->nb; v++) {
		if (p->blk_at[v] != v)
			p->is_identity = 0;
		h = (h ^ p->blk_at[v]) * 0x100000001b3ull;
	}
	h = (h ^ p->nb) * 0x100000001b3ull;
	p->tag = p->is_identity ? 0 : (uint32_t)(h ^ (h >> 32));
	if (!p->is_identity && p->tag == 0)
		p->tag = 1;
}

void
partition_identity(struct partition *p, uint32_t nb)
{
	if (nb > p->cap_nb)
		nb = p->cap_nb;
	for (uint32_t v = 0; v < nb; v++)
		p->blk_at[v] = v;
	p->nb = nb;
	set_tag(p);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The partition for the next loaded block: least load, then fewest blocks,
 * then lowest index, among those with a free position; -1 when none. */
static int
pick_part(const struct partition *p)
{
	int best = -1;

	for (int k = 0; k < p->cfg.parts; k++) {
		if (p->cnt[k] >= p->cap[k])
			continue;
		if (best < 0 || p->sum[k] < p->sum[best] ||
		    (p->sum[k] == p->sum[best] && p->cnt[k] < p->cnt[best]))
			best = k;
	}
	return best;
}

int
partition_build(struct partition *p, const uint32_t *load, uint32_t nb, int keep_last)
{
	uint32_t nb_perm, nb_keys = 0, v;

	if (nb == 0 || nb > p->cap_nb)
		return -EINVAL;
	nb_perm = keep_last ? nb - 1 : nb;
	memset(p->cap, 0, sizeof(p->cap));
	memset(p->cnt, 0, sizeof(p->cnt));
	memset(p->cur, 0, sizeof(p->cur));
	memset(p->sum, 0, sizeof(p->sum));
	memset(p->used, 0, nb);
	memset(p->placed, 0, nb);
	for (v = 0; v < nb_perm; v++)
		p->cap[partition_part(&p->cfg, nb, v)]++;
	for (uint32_t b = 0; b < nb_perm; b++)
		if (load[b])
			p->keys[nb_keys++] = (uint64_t)(UINT32_MAX - load[b]) << 32 | b;
	qsort(p->keys, nb_keys, sizeof(*p->keys), cmp_u64);
	for (uint32_t i = 0; i < nb_keys; i++) {
		uint32_t b = (uint32_t)p->keys[i];
		int k = pick_part(p);

		/* Every block has a position: the capacities add up to nb_perm. */
		for (v = p->cur[k]; partition_part(&p->cfg, nb, v) != k; v++)
			;
		p->cur[k] = v + 1;
		p->blk_at[v] = b;
		p->used[v] = 1;
		p->placed[b] = 1;
		p->cnt[k]++;
		p->sum[k] += load[b];
	}
	/* Blocks of load 0, in order, each to the partition with the most free
	 * positions: consecutive blocks (which tend to become non-zero together)
	 * go to different partitions. */
	for (uint32_t b = 0; b < nb_perm; b++) {
		int k = 0;

		if (p->placed[b])
			continue;
		for (int j = 1; j < p->cfg.parts; j++)
			if (p->cap[j] - p->cnt[j] > p->cap[k] - p->cnt[k])
				k = j;
		for (v = p->cur[k]; partition_part(&p->cfg, nb, v) != k || p->used[v]; v++)
			;
		p->cur[k] = v + 1;
		p->blk_at[v] = b;
		p->used[v] = 1;
		p->cnt[k]++;
	}
	if (keep_last)
		p->blk_at[nb - 1] = nb - 1;
	p->nb = nb;
	set_tag(p);
	return 0;
}

/* Rebuilds the map at B from the sum kept in cur_nz: a block's load is 1
 * when it has a non-zero element there. */
static void
build_from_ref(struct partition *p, uint16_t B)
{
	uint32_t nb = (p->n + B - 1) / B;

	for (uint32_t b = 0; b < nb; b++) {
		uint32_t lo = b * B, hi = lo + B < p->n ? lo + B : p->n;

		p->load[b] = 0;
		for (uint32_t i = lo; i < hi; i++) {
			if ((i & 7) == 0 && i + 8 <= hi && p->cur_nz[i >> 3] == 0) {
				i += 7; /* a zero byte: eight zero elements */
				continue;
			}
			if (p->cur_nz[i >> 3] >> (i & 7) & 1) {
				p->load[b] = 1;
				break;
			}
		}
	}
	partition_build(p, p->load, nb, p->n % B != 0);
}

int
partition_round(struct partition *p, uint32_t round, uint16_t B)
{
	uint32_t nb;

	if (B < p->min_block)
		return -EINVAL;
	nb = (p->n + B - 1) / B;
	if (p->cfg.mode == PARTITION_DYNAMIC && p->have_next && p->next_round == round) {
		uint8_t *t = p->cur_nz;

		p->cur_nz = p->next_nz;
		p->next_nz = t;
		p->have_cur = 1;
		p->have_next = 0;
		p->rebalances++;
		build_from_ref(p, B);
	} else if (p->cfg.mode == PARTITION_DYNAMIC && p->have_cur) {
		if (B != p->B)
			build_from_ref(p, B);
	} else {
		partition_identity(p, nb);
	}
	p->B = B;
	return 0;
}

void
partition_observe(struct partition *p, uint32_t round, const float *sum)
{
	if (p->cfg.mode != PARTITION_DYNAMIC || (round + 1) % p->cfg.period != 0)
		return;
	memset(p->next_nz, 0, (p->n + 7) / 8);
	for (uint32_t i = 0; i < p->n; i++)
		if (sum[i] != 0.0f)
			p->next_nz[i >> 3] |= (uint8_t)(1u << (i & 7));
	p->have_next = 1;
	p->next_round = round + 1;
}

const uint32_t *
partition_blocks(const struct partition *p, uint32_t *nb)
{
	if (nb)
		*nb = p->nb;
	return p->blk_at;
}

int
partition_is_identity(const struct partition *p)
{
	return p->is_identity;
}

uint32_t
partition_tag(const struct partition *p)
{
	return p->tag;
}

uint32_t
partition_rebalances(const struct partition *p)
{
	return p->rebalances;
}

/* Elements of block 'b' at the current B. */
static uint32_t
block_len(const struct partition *p, uint32_t b)
{
	uint32_t lo = b * p->B;

	return lo + p->B <= p->n ? p->B : p->n - lo;
}

void
partition_gather(const struct partition *p, const float *in, float *wire)
{
	for (uint32_t v = 0; v < p->nb; v++) {
		uint32_t b = p->blk_at[v];

		memcpy(wire + (size_t)v * p->B, in + (size_t)b * p->B,
		       block_len(p, b) * sizeof(float));
	}
}

void
partition_scatter(const struct partition *p, const float *wire, float *out)
{
	for (uint32_t v = 0; v < p->nb; v++) {
		uint32_t b = p->blk_at[v];

		memcpy(out + (size_t)b * p->B, wire + (size_t)v * p->B,
		       block_len(p, b) * sizeof(float));
	}
}

void
partition_scatter_flags(const struct partition *p, const uint8_t *wire, uint8_t *out)
{
	for (uint32_t v = 0; v < p->nb; v++)
		out[p->blk_at[v]] = wire[v];
}

void
partition_count(const struct partition *p, const uint8_t *nonzero, uint32_t *counts)
{
	memset(counts, 0, p->cfg.parts * sizeof(*counts));
	for (uint32_t v = 0; v < p->nb; v++)
		if (nonzero[p->blk_at[v]])
			counts[partition_part(&p->cfg, p->nb, v)]++;
}

double
partition_imbalance(const uint32_t *counts, uint32_t n)
{
	uint64_t total = 0;
	uint32_t max = 0;

	for (uint32_t k = 0; k < n; k++) {
		total += counts[k];
		max = counts[k] > max ? counts[k] : max;
	}
	return total ? (double)max * n / (double)total : 1.0;
}
