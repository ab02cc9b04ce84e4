/* SPDX-License-Identifier: MIT */
/*
 * Packet pools (pkt.h): ina_pkt_free_bulk for packets of any pool, and the
 * heap pool that the udp port (and tests) use. A heap pool is one allocation
 * holding its header, a free stack, every struct ina_pkt and every buffer, so
 * get and put only move pointers. The DPDK port brings its own pool ops.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ina/pkt.h"
#include "ina/wire.h"

#define HEAP_ALIGN 64
/* Where 'data' starts in a buffer: 8 bytes in, so that the ina header's 56
 * bytes end on a cache line and the payload (the values the switch sums
 * and the host encodes) starts on one: the sum loops' 32-byte loads and
 * stores then never straddle two lines (bench_pipeline: f32 ratio 0.52 to
 * 0.60). The header still fits the buffer's first line. */
#define HEAP_DATA_OFF ((HEAP_ALIGN - INA_HDR_SIZE % HEAP_ALIGN) % HEAP_ALIGN)

struct heap_pool {
	struct ina_pkt_pool pool; /* first: the handle callers hold */
	unsigned nb_pkts;	  /* packets made at create */
	unsigned nb_free;	  /* entries of 'stack' in use */
	struct ina_pkt **stack;	  /* free packets, top at nb_free - 1 */
	struct ina_pkt *pkts;	  /* all packets, index = buffer index */
	uint8_t *bufs;		  /* all buffers, 'stride' bytes apart */
	size_t stride;		  /* HEAP_DATA_OFF + buf_size, rounded up to
				   * HEAP_ALIGN */
};

static unsigned heap_get(struct ina_pkt_pool *pool, struct ina_pkt **pkts, unsigned n);
static void heap_put(struct ina_pkt_pool *pool, struct ina_pkt **pkts, unsigned n);

static const struct ina_pkt_pool_ops heap_ops = {
	.get = heap_get,
	.put = heap_put,
};

static inline struct heap_pool *
heap_of(struct ina_pkt_pool *pool)
{
	return (struct heap_pool *)(void *)pool;
}

void
ina_pkt_free_bulk(struct ina_pkt **pkts, unsigned n)
{
	unsigned i = 0, start;

	/* One put per run of packets from the same pool. */
	while (i < n) {
		struct ina_pkt_pool *pool;

		if (!pkts[i]) {
			i++;
			continue;
		}
		pool = pkts[i]->pool;
		start = i;
		while (i < n && pkts[i] && pkts[i]->pool == pool)
			i++;
		pool->ops->put(pool, &pkts[start], i - start);
	}
}

static unsigned
heap_get(struct ina_pkt_pool *pool, struct ina_pkt **pkts, unsigned n)
{
	struct heap_pool *hp = heap_of(pool);
	unsigned i;

	if (n > hp->nb_free)
		n = hp->nb_free;
	for (i = 0; i < n; i++)
		pkts[i] = hp->stack[--hp->nb_free];
	return n;
}

static void
heap_put(struct ina_pkt_pool *pool, struct ina_pkt **pkts, unsigned n)
{
	struct heap_pool *hp = heap_of(pool);
	unsigned i;

	for (i = 0; i < n; i++) {
		struct ina_pkt *p = pkts[i];
		size_t idx;

		/* A foreign packet or a double free would overflow the stack. */
		if (!p || p->pool != pool || hp->nb_free >= hp->nb_pkts)
			continue;
		idx = (size_t)(p - hp->pkts);
		p->data = hp->bufs + idx * hp->stride + HEAP_DATA_OFF;
		p->cap = pool->buf_size;
		p->len = 0;
		p->peer.len = 0;
		p->dsts = NULL;
		p->dst_mask = 0;
		hp->stack[hp->nb_free++] = p;
	}
}

struct ina_pkt *
ina_pkt_copy_for(struct ina_pkt_pool *pool, const struct ina_pkt *pkt, unsigned r)
{
	struct ina_pkt *c = ina_pkt_alloc(pool);

	if (!c)
		return NULL;
	memcpy(c->data, pkt->data, pkt->len);
	c->len = pkt->len;
	c->peer = pkt->dsts[r];
	c->dsts = NULL;
	c->dst_mask = 0;
	return c;
}

static size_t
align_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

struct ina_pkt_pool *
ina_pkt_pool_create(unsigned nb_pkts, uint32_t buf_size)
{
	size_t stride, off_stack, off_pkts, off_bufs, bufs_size, total;
	struct heap_pool *hp;
	uint8_t *mem;
	unsigned i;

	if (nb_pkts == 0 || buf_size == 0) {
		errno = EINVAL;
		return NULL;
	}
	stride = align_up((size_t)HEAP_DATA_OFF + buf_size, HEAP_ALIGN);
	off_stack = align_up(sizeof(*hp), sizeof(void *));
	off_pkts = align_up(off_stack + (size_t)nb_pkts * sizeof(struct ina_pkt *),
			    _Alignof(struct ina_pkt));
	off_bufs = align_up(off_pkts + (size_t)nb_pkts * sizeof(struct ina_pkt), HEAP_ALIGN);
	if (__builtin_mul_overflow((size_t)nb_pkts, stride, &bufs_size) ||
	    __builtin_add_overflow(off_bufs, bufs_size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	mem = aligned_alloc(HEAP_ALIGN, align_up(total, HEAP_ALIGN));
	if (!mem) {
		errno = ENOMEM;
		return NULL;
	}

	hp = (struct heap_pool *)(void *)mem;
	hp->pool.ops = &heap_ops;
	hp->pool.buf_size = buf_size;
	hp->pool.nb_alloc_fail = 0;
	hp->nb_pkts = nb_pkts;
	hp->stack = (struct ina_pkt **)(void *)(mem + off_stack);
	hp->pkts = (struct ina_pkt *)(void *)(mem + off_pkts);
	hp->bufs = mem + off_bufs;
	hp->stride = stride;
	/* Fill the stack so that the first get returns packet 0. */
	for (i = 0; i < nb_pkts; i++) {
		struct ina_pkt *p = &hp->pkts[i];

		p->data = hp->bufs + (size_t)i * stride + HEAP_DATA_OFF;
		p->len = 0;
		p->cap = buf_size;
		memset(&p->peer, 0, sizeof(p->peer));
		p->dsts = NULL;
		p->dst_mask = 0;
		p->pool = &hp->pool;
		p->priv = NULL;
		hp->stack[nb_pkts - 1 - i] = p;
	}
	hp->nb_free = nb_pkts;
	return &hp->pool;
}

void
ina_pkt_pool_destroy(struct ina_pkt_pool *pool)
{
	if (pool && pool->ops == &heap_ops)
		free(heap_of(pool));
}

unsigned
ina_pkt_pool_avail(const struct ina_pkt_pool *pool)
{
	if (!pool || pool->ops != &heap_ops)
		return 0;
	return ((const struct heap_pool *)(const void *)pool)->nb_free;
}
