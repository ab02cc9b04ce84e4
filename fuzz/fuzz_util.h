/* SPDX-License-Identifier: MIT */
/*
 * Helpers the libFuzzer targets of fuzz/ share: a reader that cuts the
 * fuzzer's input into fields (reading past the end gives zeros, so every
 * input is a complete program), an invariant check that aborts with its
 * condition (libFuzzer then saves the input as a crash), and a packet pool
 * that allocates every buffer on its own at exactly its capacity, so that
 * AddressSanitizer catches any write past a packet's 'cap' and
 * LeakSanitizer any packet never given back.
 */
#ifndef INA_FUZZ_UTIL_H
#define INA_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/pkt.h"

#define FZ_CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, \
				#cond); \
			abort(); \
		} \
	} while (0)

/* The fuzzer's input, consumed from the front. */
struct fz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t
fz_u8(struct fz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static inline uint16_t
fz_u16(struct fz_in *in)
{
	uint16_t v = fz_u8(in);

	return (uint16_t)(v << 8 | fz_u8(in));
}

static inline uint32_t
fz_u32(struct fz_in *in)
{
	uint32_t v = fz_u16(in);

	return v << 16 | fz_u16(in);
}

static inline uint64_t
fz_u64(struct fz_in *in)
{
	uint64_t v = fz_u32(in);

	return v << 32 | fz_u32(in);
}

/* Copies up to 'n' bytes to 'dst' and zero-fills the rest; returns how many
 * came from the input. */
static inline size_t
fz_bytes(struct fz_in *in, void *dst, size_t n)
{
	size_t k = n < in->n ? n : in->n;

	memcpy(dst, in->p, k);
	memset((uint8_t *)dst + k, 0, n - k);
	in->p += k;
	in->n -= k;
	return k;
}

/* A heap pool of at most 'limit' packets out at once, each buffer its own
 * allocation of exactly 'buf_size' bytes. */
struct fz_pool {
	struct ina_pkt_pool base;
	unsigned limit;
	unsigned out; /* packets handed out and not put back */
};

static inline unsigned
fz_pool_get(struct ina_pkt_pool *pool, struct ina_pkt **pkts, unsigned n)
{
	struct fz_pool *fp = (struct fz_pool *)pool;
	unsigned i;

	for (i = 0; i < n && fp->out < fp->limit; i++) {
		struct ina_pkt *p = calloc(1, sizeof(*p));

		if (!p)
			break;
		p->data = malloc(pool->buf_size);
		if (!p->data) {
			free(p);
			break;
		}
		p->cap = pool->buf_size;
		p->pool = pool;
		pkts[i] = p;
		fp->out++;
	}
	return i;
}

static inline void
fz_pool_put(struct ina_pkt_pool *pool, struct ina_pkt **pkts, unsigned n)
{
	struct fz_pool *fp = (struct fz_pool *)pool;

	for (unsigned i = 0; i < n; i++) {
		FZ_CHECK(pkts[i]->pool == pool);
		FZ_CHECK(fp->out > 0);
		free(pkts[i]->data);
		free(pkts[i]);
		fp->out--;
	}
}

static const struct ina_pkt_pool_ops fz_pool_ops __attribute__((unused)) = {
	.get = fz_pool_get,
	.put = fz_pool_put,
};

static inline void
fz_pool_init(struct fz_pool *fp, unsigned limit, uint32_t buf_size)
{
	memset(fp, 0, sizeof(*fp));
	fp->base.ops = &fz_pool_ops;
	fp->base.buf_size = buf_size;
	fp->limit = limit;
}

/* A packet from 'fp' holding 'len' bytes of 'bytes' (cut to its cap), or NULL. */
static inline struct ina_pkt *
fz_pkt(struct fz_pool *fp, const void *bytes, size_t len)
{
	struct ina_pkt *p = ina_pkt_alloc(&fp->base);

	if (!p)
		return NULL;
	if (len > p->cap)
		len = p->cap;
	memcpy(p->data, bytes, len);
	p->len = (uint32_t)len;
	return p;
}

#endif
