/* SPDX-License-Identifier: MIT */
/*
 * Packet buffers: what the pipeline, the host engine and every transport pass
 * around. A packet is the ina header plus payload (the transport adds and strips
 * Ethernet/IPv4/UDP). Buffers come from a pool preallocated at start-up; a
 * transport may back the pool with its own memory (the DPDK port uses mbufs),
 * so the pool is a small ops table called once per burst.
 */
#ifndef INA_PKT_H
#define INA_PKT_H

#include <stdint.h>
#include <string.h>

/* A transport address, opaque to everything but the port that made it
 * (a sockaddr_in for udp). Compared and copied as bytes. */
#define INA_PEER_SIZE 28
struct ina_peer {
	uint8_t len; /* bytes of 'bytes' in use, 0 = none */
	uint8_t bytes[INA_PEER_SIZE - 1];
};

/* Inline: the switch compares every DATA's source with its rank's. An
 * address of 4 to 16 bytes (a sockaddr_in, dpdk's) is two overlapping
 * words of each, without a call; the bytes past 'len' are never read. */
static inline int
ina_peer_equal(const struct ina_peer *a, const struct ina_peer *b)
{
	unsigned n = a->len;

	if (n != b->len)
		return 0;
	if (n >= 8 && n <= 16) {
		uint64_t a0, a1, b0, b1;

		memcpy(&a0, a->bytes, 8);
		memcpy(&b0, b->bytes, 8);
		memcpy(&a1, a->bytes + n - 8, 8);
		memcpy(&b1, b->bytes + n - 8, 8);
		return ((a0 ^ b0) | (a1 ^ b1)) == 0;
	}
	if (n >= 4 && n < 8) {
		uint32_t a0, a1, b0, b1;

		memcpy(&a0, a->bytes, 4);
		memcpy(&b0, b->bytes, 4);
		memcpy(&a1, a->bytes + n - 4, 4);
		memcpy(&b1, b->bytes + n - 4, 4);
		return ((a0 ^ b0) | (a1 ^ b1)) == 0;
	}
	return memcmp(a->bytes, b->bytes, n) == 0;
}

struct ina_pkt_pool;

/*
 * One packet. The struct is visible (not opaque) because the pipeline and the
 * transports touch these fields once per packet on the hot path.
 *
 * On receive, 'peer' is the source. On transmit, the packet goes to 'peer'
 * when 'dsts' is NULL, and otherwise to dsts[r] for every bit r set in
 * 'dst_mask' (fan-out of one result to the workers of a job: the transport
 * sends the same bytes to each without copying them per worker). 'dsts' must
 * stay valid until the transport's tx_burst returns.
 */
struct ina_pkt {
	uint8_t *data; /* first byte of the ina header */
	uint32_t len;  /* bytes from 'data' */
	uint32_t cap;  /* bytes that fit from 'data' */
	struct ina_peer peer;
	const struct ina_peer *dsts;
	uint64_t dst_mask;
	struct ina_pkt_pool *pool; /* owner, for ina_pkt_free() */
	void *priv;		   /* the pool's own handle (an mbuf) */
};

struct ina_pkt_pool_ops {
	/* Fills 'pkts' with up to 'n' packets of len 0; returns how many. */
	unsigned (*get)(struct ina_pkt_pool *, struct ina_pkt **pkts, unsigned n);
	/* Gives 'n' packets back. */
	void (*put)(struct ina_pkt_pool *, struct ina_pkt **pkts, unsigned n);
};

struct ina_pkt_pool {
	const struct ina_pkt_pool_ops *ops;
	uint32_t buf_size;	/* 'cap' of every packet */
	uint64_t nb_alloc_fail; /* gets that found the pool empty */
};

/* Allocates one packet (len 0, no peer), or NULL when the pool is empty. */
static inline struct ina_pkt *
ina_pkt_alloc(struct ina_pkt_pool *pool)
{
	struct ina_pkt *p;

	if (pool->ops->get(pool, &p, 1) == 1)
		return p;
	pool->nb_alloc_fail++;
	return NULL;
}

/*
 * Allocates up to 'n' packets (len 0, no peer) into 'pkts' with one call
 * into the pool: for a burst, rather than ina_pkt_alloc() in a loop.
 * Returns how many, fewer when the pool runs low; counts an allocation
 * failure when it gets none.
 */
static inline unsigned
ina_pkt_alloc_bulk(struct ina_pkt_pool *pool, struct ina_pkt **pkts, unsigned n)
{
	unsigned got = n ? pool->ops->get(pool, pkts, n) : 0;

	if (n && !got)
		pool->nb_alloc_fail++;
	return got;
}

/* Returns a packet to its pool. Accepts NULL. */
static inline void
ina_pkt_free(struct ina_pkt *p)
{
	if (p)
		p->pool->ops->put(p->pool, &p, 1);
}

/* Frees 'n' packets, which may belong to different pools (NULL ones are
 * skipped), with one call into the pool per run of packets of one pool. */
void ina_pkt_free_bulk(struct ina_pkt **pkts, unsigned n);

/* A copy of fan-out packet 'pkt' (dsts set) for its destination 'r' alone:
 * the same bytes, 'peer' = dsts[r], from 'pool'. NULL when the pool is empty.
 * For what must hold one packet per destination (in-process wires, the
 * simulator); the transports send a fan-out without copying. */
struct ina_pkt *ina_pkt_copy_for(struct ina_pkt_pool *pool, const struct ina_pkt *pkt, unsigned r);

/*
 * A pool of 'nb_pkts' heap buffers of 'buf_size' bytes, all allocated here:
 * get and put never allocate. Not thread-safe: one pool per thread. Returns
 * NULL with errno set. Each packet's 'data' is placed so that the payload
 * after the ina header (data + INA_HDR_SIZE) starts on a cache line.
 */
struct ina_pkt_pool *ina_pkt_pool_create(unsigned nb_pkts, uint32_t buf_size);
/* Frees a pool made by ina_pkt_pool_create(). Accepts NULL. */
void ina_pkt_pool_destroy(struct ina_pkt_pool *pool);
/* Packets of a heap pool not currently handed out (for leak checks in tests). */
unsigned ina_pkt_pool_avail(const struct ina_pkt_pool *pool);

#endif
