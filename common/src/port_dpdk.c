/* SPDX-License-Identifier: MIT */
/*
 * The dpdk port (port_dpdk.h): moves bursts between ina packets and one queue
 * of a set of ethdevs (ethdev_dpdk.c). Each struct ina_pkt lives in its
 * mbuf's private area and 'data' points 42 bytes into the mbuf data, leaving
 * room for Ethernet/IPv4/UDP (frame_dpdk.c), which tx writes in place and rx
 * strips. ARP and ICMP echo go to neigh_dpdk.c. A fan-out chains one small
 * header mbuf per destination to the one payload mbuf (refcnt), or copies
 * where chains are not accepted. Nothing here allocates, locks or logs per
 * packet. Injected faults (faults.h) apply on rx: corrupt= flips a bit of a
 * received datagram before its UDP checksum is verified here in software,
 * the others act on the ina packets that passed every check.
 *
 * UDP checksums (csum=): on an ethdev with csum on, tx fills them in (the
 * ethdev does where it offers the offload, else one pass over the payload,
 * once per packet however many destinations) and rx verifies them (the
 * ethdev's verdict where it offers one, else a pass) and drops a datagram
 * without one (0). With csum off (the default on net_memif, shared memory
 * between two processes of this host: no wire to corrupt bits), tx sends 0
 * ("none", RFC 768) and rx accepts 0 without a pass; a datagram that does
 * carry a checksum is still verified.
 *
 * A peer is 14 bytes: MAC (6), IPv4 (4, network order), UDP port (2, network
 * order), index of the port's ethdev it was seen on (2).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_udp.h>

#include "ethdev_dpdk.h"
#include "frame_dpdk.h"
#include "ina/faults.h"
#include "ina/log.h"
#include "ina/port_dpdk.h"
#include "ina/util.h"
#include "neigh_dpdk.h"
#include "opts_dpdk.h"

#define DPDK_TX_RETRIES 8 /* tx calls without progress, then drop */
#define DPDK_WAIT_MAX_NS 50000ull
#define DPDK_LINK_POLL_MS 100
#define DPDK_ARP_TRIES 5
#define DPDK_ARP_GAP_MS 250
#define DPDK_PEER_LEN 14
#define DPDK_PRIV_SIZE RTE_ALIGN(sizeof(struct ina_pkt), RTE_MBUF_PRIV_ALIGN)
#define OWNER_NONE 0xff /* a staged frame that is no ina packet */
#define TX_CSUM_FLAGS (RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM)

_Static_assert(DPDK_PEER_LEN <= INA_PEER_SIZE - 1, "peer size");
_Static_assert(INA_MAX_BURST <= 32, "tx_failed is a 32-bit mask");


struct dpdk_pool {
	struct ina_pkt_pool pool; /* first */
	struct rte_mempool *mp;
};

/* Frames waiting for rte_eth_tx_burst on one ethdev. */
struct dpdk_txq {
	uint16_t nb;
	struct rte_mbuf *frames[INA_MAX_BURST];
	uint32_t lens[INA_MAX_BURST]; /* ina bytes of each frame */
	uint8_t owner[INA_MAX_BURST]; /* index in the tx chunk */
};

struct dpdk_port {
	struct ina_port port; /* first: the handle callers hold */
	struct dpdk_pool pool;
	struct dpdk_set *set;
	struct rte_mempool *hdr_mp; /* header mbufs of zero-copy fan-out */
	uint16_t queue, nb_eth, rr;
	uint16_t nb_rxq;	       /* rx queues polled from 'queue' (K for queue=all) */
	int zerocopy;		       /* chains on every ethdev */
	int need_psum;		       /* some ethdev sums in software */
	uint8_t tx_csum[DPDK_MAX_ETH]; /* enum frame_csum of each ethdev */
	uint8_t no_csum[DPDK_MAX_ETH]; /* csum off: a 0 checksum is accepted */
	uint32_t ip_be;
	uint16_t udp_be;
	struct ina_faults faults;	 /* injected faults (tests), off by default */
	uint64_t link_next, link_period; /* tsc */
	uint8_t link_up[DPDK_MAX_ETH];
	struct frame_end self[DPDK_MAX_ETH];
	uint32_t tx_failed; /* chunk packets with a dropped frame */
	struct neigh neigh;
	struct dpdk_txq txq[DPDK_MAX_ETH];
	char name[48];
};

static inline struct dpdk_port *
dpdk_of(struct ina_port *port)
{
	return (struct dpdk_port *)(void *)port;
}

static inline const struct dpdk_port *
dpdk_of_c(const struct ina_port *port)
{
	return (const struct dpdk_port *)(const void *)port;
}

int
ina_port_dpdk_register(void)
{
	return ina_port_register(&ina_port_dpdk_ops);
}

/* ---- packet pool over mbufs ---- */

static inline struct ina_pkt *
mbuf_pkt(struct rte_mbuf *m)
{
	return (struct ina_pkt *)rte_mbuf_to_priv(m);
}

static inline void
pkt_reset(struct ina_pkt *pkt, struct rte_mbuf *m, struct ina_pkt_pool *pool)
{
	pkt->data = rte_pktmbuf_mtod_offset(m, uint8_t *, FRAME_HDR_LEN);
	pkt->len = 0;
	pkt->cap = pool->buf_size;
	pkt->peer.len = 0;
	pkt->dsts = NULL;
	pkt->dst_mask = 0;
	pkt->pool = pool;
	pkt->priv = m;
}

static unsigned
dpdk_pool_get(struct ina_pkt_pool *pool, struct ina_pkt **pkts, unsigned n)
{
	struct dpdk_pool *dp = (struct dpdk_pool *)(void *)pool;
	struct rte_mbuf *mbufs[INA_MAX_BURST];
	unsigned done = 0;

	while (done < n) {
		unsigned k = n - done < INA_MAX_BURST ? n - done : INA_MAX_BURST;

		if (rte_pktmbuf_alloc_bulk(dp->mp, mbufs, k) != 0) {
			/* Bulk is all or nothing: take what is left one by one. */
			while (done < n) {
				struct rte_mbuf *m = rte_pktmbuf_alloc(dp->mp);

				if (!m)
					return done;
				pkt_reset(mbuf_pkt(m), m, pool);
				pkts[done++] = mbuf_pkt(m);
			}
			return done;
		}
		for (unsigned i = 0; i < k; i++) {
			pkt_reset(mbuf_pkt(mbufs[i]), mbufs[i], pool);
			pkts[done++] = mbuf_pkt(mbufs[i]);
		}
	}
	return done;
}

static void
dpdk_pool_put(struct ina_pkt_pool *pool, struct ina_pkt **pkts, unsigned n)
{
	struct rte_mbuf *mbufs[INA_MAX_BURST];
	unsigned done = 0;

	(void)pool;
	/* Each mbuf goes back to its own mempool (rx may hand out foreign
	 * ones): rte_pktmbuf_free_bulk() sorts them out, a burst at a time. */
	while (done < n) {
		unsigned k = n - done < INA_MAX_BURST ? n - done : INA_MAX_BURST;

		for (unsigned i = 0; i < k; i++)
			mbufs[i] = pkts[done + i]->priv;
		rte_pktmbuf_free_bulk(mbufs, k);
		done += k;
	}
}

static const struct ina_pkt_pool_ops dpdk_pool_ops = {
	.get = dpdk_pool_get,
	.put = dpdk_pool_put,
};

/* ---- peers ---- */

static void
peer_make(struct ina_peer *peer, const uint8_t *mac, uint32_t ip_be, uint16_t udp_be, uint16_t eth)
{
	memset(peer, 0, sizeof(*peer));
	peer->len = DPDK_PEER_LEN;
	memcpy(peer->bytes, mac, 6);
	memcpy(peer->bytes + 6, &ip_be, 4);
	memcpy(peer->bytes + 10, &udp_be, 2);
	memcpy(peer->bytes + 12, &eth, 2);
}

/* The destination and ethdev index of a peer; -1 if it is none of ours. */
static inline int
peer_get(const struct dpdk_port *dp, const struct ina_peer *peer, struct frame_end *end,
	 uint16_t *eth)
{
	if (peer->len != DPDK_PEER_LEN)
		return -1;
	memcpy(end->mac, peer->bytes, 6);
	memcpy(&end->ip_be, peer->bytes + 6, 4);
	memcpy(&end->udp_be, peer->bytes + 10, 2);
	memcpy(eth, peer->bytes + 12, 2);
	return *eth < dp->nb_eth ? 0 : -1;
}

static const char *
dpdk_peer_str(const struct ina_port *port, const struct ina_peer *peer, char *buf, unsigned size)
{
	const struct dpdk_port *dp = dpdk_of_c(port);
	struct frame_end end;
	char ip[INET_ADDRSTRLEN];
	uint16_t eth;

	if (!size)
		return buf;
	if (peer_get(dp, peer, &end, &eth) < 0) {
		snprintf(buf, size, "?");
		return buf;
	}
	if (!inet_ntop(AF_INET, &end.ip_be, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "?");
	snprintf(buf, size, "%02x:%02x:%02x:%02x:%02x:%02x@%s:%u", end.mac[0], end.mac[1],
		 end.mac[2], end.mac[3], end.mac[4], end.mac[5], ip, rte_be_to_cpu_16(end.udp_be));
	if (dp->nb_eth > 1) {
		size_t used = strlen(buf);

		snprintf(buf + used, size - used, " (ethdev %u)", dp->set->cfg.ids[eth]);
	}
	return buf;
}

/* ---- tx staging ---- */

static inline void
dpdk_tx_failed(struct dpdk_port *dp, uint8_t owner)
{
	if (owner == OWNER_NONE)
		return;
	dp->port.stats.tx_drop++;
	dp->tx_failed |= 1u << owner;
}

/* Sends the frames staged for ethdev 'e' with bounded retries; frees and
 * counts the rest. */
static void
dpdk_tx_flush(struct dpdk_port *dp, uint16_t e)
{
	struct dpdk_txq *q = &dp->txq[e];
	uint16_t id = dp->set->cfg.ids[e];
	uint16_t sent = 0, tries = 0, ina = 0;

	while (sent < q->nb && tries < DPDK_TX_RETRIES) {
		uint16_t k = rte_eth_tx_burst(id, dp->queue, q->frames + sent,
					      (uint16_t)(q->nb - sent));

		sent = (uint16_t)(sent + k);
		tries = k ? 0 : (uint16_t)(tries + 1);
	}
	for (uint16_t i = 0; i < sent; i++) {
		if (q->owner[i] == OWNER_NONE)
			continue;
		dp->port.stats.tx_bytes += q->lens[i];
		ina++;
	}
	dp->port.stats.tx_pkts += ina;
	if (ina)
		dp->port.stats.tx_bursts++;
	if (sent < q->nb) {
		rte_pktmbuf_free_bulk(q->frames + sent, (unsigned)(q->nb - sent));
		for (uint16_t i = sent; i < q->nb; i++)
			dpdk_tx_failed(dp, q->owner[i]);
	}
	q->nb = 0;
}

static void
dpdk_tx_flush_all(struct dpdk_port *dp)
{
	for (uint16_t e = 0; e < dp->nb_eth; e++)
		if (dp->txq[e].nb)
			dpdk_tx_flush(dp, e);
}

static inline void
dpdk_tx_stage(struct dpdk_port *dp, uint16_t e, struct rte_mbuf *m, uint32_t len, uint8_t owner)
{
	struct dpdk_txq *q = &dp->txq[e];

	q->frames[q->nb] = m;
	q->lens[q->nb] = len;
	q->owner[q->nb] = owner;
	if (++q->nb == INA_MAX_BURST)
		dpdk_tx_flush(dp, e);
}

/* ---- link state ---- */

/* Every ~100 ms, not per packet: rx skips ethdevs whose link is down. */
enum { LINK_POLL_TIMED, LINK_POLL_NOW, LINK_POLL_INIT };

static inline void
dpdk_link_poll(struct dpdk_port *dp, int how)
{
	uint64_t now = rte_rdtsc();

	if (how == LINK_POLL_TIMED && now < dp->link_next)
		return;
	dp->link_next = now + dp->link_period;
	for (uint16_t e = 0; e < dp->nb_eth; e++) {
		uint8_t up = (uint8_t)dpdk_set_link_up(dp->set, e);

		/* A change, seen at most every 100 ms per ethdev: logging is fine. */
		if (up != dp->link_up[e] && how != LINK_POLL_INIT && !up) {
			dp->neigh.st.link_down++;
			INA_LOG(WARN, "dpdk port %s: link of ethdev %u down, not polled until up",
				dp->name, dp->set->cfg.ids[e]);
		} else if (up != dp->link_up[e] && how != LINK_POLL_INIT) {
			INA_LOG(INFO, "dpdk port %s: link of ethdev %u up", dp->name,
				dp->set->cfg.ids[e]);
		}
		dp->link_up[e] = up;
	}
}

/* ---- rx ---- */

/*
 * A linear copy of 'm' in our own pool (chains, or mbufs without room for a
 * struct ina_pkt), or NULL when it does not fit. Frees 'm'.
 */
static struct rte_mbuf *
dpdk_rx_adopt(struct dpdk_port *dp, struct rte_mbuf *m)
{
	uint32_t len = rte_pktmbuf_pkt_len(m);
	struct rte_mbuf *c = rte_pktmbuf_alloc(dp->pool.mp);
	const void *src;
	char *dst;

	if (!c || len > rte_pktmbuf_tailroom(c)) {
		if (!c)
			dp->pool.pool.nb_alloc_fail++;
		rte_pktmbuf_free(c);
		rte_pktmbuf_free(m);
		return NULL;
	}
	dst = rte_pktmbuf_append(c, (uint16_t)len);
	src = rte_pktmbuf_read(m, 0, len, dst);
	if (src && src != dst)
		memcpy(dst, src, len);
	c->ol_flags = m->ol_flags;
	rte_pktmbuf_free(m);
	return c;
}

/* An ARP or ICMP frame made into its reply: back out the ethdev it came in. */
static inline void
dpdk_rx_reply(struct dpdk_port *dp, uint16_t e, struct rte_mbuf *m)
{
	m->ol_flags = 0;
	m->nb_segs = 1;
	m->next = NULL;
	dpdk_tx_stage(dp, e, m, 0, OWNER_NONE);
}

static inline int
dpdk_rx_flag_good(const struct dpdk_port *dp, uint16_t e, const struct rte_mbuf *m, uint64_t mask,
		  uint64_t good)
{
	return dp->set->rx_csum[e] && (m->ol_flags & mask) == good;
}

/*
 * corrupt=: flips one bit of the ina packet in a UDP datagram for us, as a
 * wire would, before its checksum is verified (in software: 1 makes the
 * caller ignore the NIC's verdict, which was about the bits before). Not on
 * ethdevs that accept a partial checksum from a local kernel (af_packet,
 * af_xdp, tap), nor on a datagram without a checksum (0): a corrupted frame
 * could pass there.
 */
static inline int
dpdk_rx_corrupt(struct dpdk_port *dp, uint16_t e, const struct rte_udp_hdr *udp, uint32_t udp_len)
{
	if (!ina_faults_active(&dp->faults) || dp->set->kernel_peer[e] || udp->dgram_cksum == 0)
		return 0;
	return ina_faults_corrupt(&dp->faults, (uint8_t *)(uintptr_t)(udp + 1), udp_len - 8);
}

/* An IPv4 frame: a UDP datagram for us becomes 'pkt' (returns 1); ICMP goes
 * to neigh; the rest is dropped and counted (returns 0, 'm' consumed). */
static int
dpdk_rx_ipv4(struct dpdk_port *dp, uint16_t e, struct rte_mbuf *m)
{
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)(void *)frame;
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
	const struct rte_udp_hdr *udp;
	uint32_t total, udp_len;
	struct ina_pkt *pkt;
	int hlen, r;

	if (dp->set->rx_csum[e] &&
	    (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_BAD)
		goto malformed;
	hlen = frame_ipv4_check((const uint8_t *)ip, rte_pktmbuf_data_len(m) - FRAME_ETH_LEN,
				dpdk_rx_flag_good(dp, e, m, RTE_MBUF_F_RX_IP_CKSUM_MASK,
						  RTE_MBUF_F_RX_IP_CKSUM_GOOD),
				&total);
	if (hlen < 0)
		goto malformed;
	if (ip->next_proto_id == IPPROTO_ICMP) {
		r = neigh_icmp_input(&dp->neigh, m, (uint32_t)hlen, total, dp->self[e].mac);
		if (r > 0) {
			dpdk_rx_reply(dp, e, m);
			return 0;
		}
		if (r < 0)
			goto drop;
		goto not_ours;
	}
	if (ip->next_proto_id != IPPROTO_UDP || (dp->ip_be && ip->dst_addr != dp->ip_be))
		goto not_ours;
	udp = (const struct rte_udp_hdr *)(const void *)((const uint8_t *)ip + hlen);
	if (total < (uint32_t)hlen + 8)
		goto malformed;
	udp_len = rte_be_to_cpu_16(udp->dgram_len);
	if (udp_len < 8 || udp_len > total - (uint32_t)hlen)
		goto malformed;
	if (udp->dst_port != dp->udp_be)
		goto not_ours;
	if (udp->dgram_cksum == 0) {
		/* None: accepted where told so (csum=off), else bad. */
		if (!dp->no_csum[e]) {
			dp->port.stats.rx_csum_bad++;
			goto malformed;
		}
	} else if (dpdk_rx_corrupt(dp, e, udp, udp_len) ||
		   !dpdk_rx_flag_good(dp, e, m, RTE_MBUF_F_RX_L4_CKSUM_MASK,
				      RTE_MBUF_F_RX_L4_CKSUM_GOOD)) {
		r = frame_udp_ok((const uint8_t *)ip, (uint32_t)hlen, udp_len,
				 dp->set->kernel_peer[e]);
		if (r == 0) {
			dp->port.stats.rx_csum_bad++;
			goto malformed;
		}
		if (r == 2)
			dp->neigh.st.csum_partial++;
	}

	pkt = mbuf_pkt(m);
	pkt->data = (uint8_t *)(uintptr_t)(udp + 1);
	pkt->len = udp_len - 8;
	pkt->cap = (uint32_t)((uint8_t *)m->buf_addr + m->buf_len - pkt->data);
	if (pkt->cap > dp->port.pool->buf_size)
		pkt->cap = dp->port.pool->buf_size;
	if (pkt->cap < pkt->len)
		pkt->cap = pkt->len;
	peer_make(&pkt->peer, eth->src_addr.addr_bytes, ip->src_addr, udp->src_port, e);
	pkt->dsts = NULL;
	pkt->dst_mask = 0;
	pkt->pool = dp->port.pool;
	pkt->priv = m;
	return 1;

malformed:
	dp->neigh.st.malformed++;
	goto drop;
not_ours:
	dp->neigh.st.not_ours++;
drop:
	dp->port.stats.rx_drop++;
	rte_pktmbuf_free(m);
	return 0;
}

/* One received frame: 1 with the packet in 'out', or 0 ('m' consumed). */
static int
dpdk_rx_one(struct dpdk_port *dp, uint16_t e, struct rte_mbuf *m, struct ina_pkt **out)
{
	const struct rte_ether_hdr *eth;
	int r;

	if (m->nb_segs != 1 || rte_pktmbuf_priv_size(m->pool) < DPDK_PRIV_SIZE) {
		m = dpdk_rx_adopt(dp, m);
		if (!m) {
			dp->port.stats.rx_drop++;
			return 0;
		}
	}
	if (rte_pktmbuf_data_len(m) < FRAME_ETH_LEN) {
		dp->neigh.st.malformed++;
		goto drop;
	}
	eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
		if (dpdk_rx_ipv4(dp, e, m) == 0)
			return 0;
		*out = mbuf_pkt(m);
		return 1;
	}
	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)) {
		r = neigh_arp_input(&dp->neigh, m, e, dp->self[e].mac);
		if (r > 0) {
			dpdk_rx_reply(dp, e, m);
			return 0;
		}
		if (r == 0) {
			rte_pktmbuf_free(m);
			return 0;
		}
		goto drop;
	}
	dp->neigh.st.not_ip++;
drop:
	dp->port.stats.rx_drop++;
	rte_pktmbuf_free(m);
	return 0;
}

/* Receives without faults but corrupt=; ina_port_faults_rx() counts. */
static uint16_t
dpdk_rx_raw(struct ina_port *port, struct ina_pkt **pkts, uint16_t n)
{
	struct dpdk_port *dp = dpdk_of(port);
	struct rte_mbuf *mbufs[INA_MAX_BURST];
	/* Sources: every (ethdev, rx queue) pair, round robin. */
	uint16_t nb = 0, start = dp->rr, nb_src = (uint16_t)(dp->nb_eth * dp->nb_rxq);

	if (n > INA_MAX_BURST)
		n = INA_MAX_BURST;
	dpdk_link_poll(dp, LINK_POLL_TIMED);
	dp->rr = (uint16_t)(dp->rr + 1 == nb_src ? 0 : dp->rr + 1);
	for (uint16_t k = 0; k < nb_src && nb < n; k++) {
		uint16_t s = (uint16_t)(start + k);

		if (s >= nb_src)
			s = (uint16_t)(s - nb_src);
		uint16_t e = (uint16_t)(s / dp->nb_rxq), got;

		if (!dp->link_up[e])
			continue;
		got = rte_eth_rx_burst(dp->set->cfg.ids[e], (uint16_t)(dp->queue + s % dp->nb_rxq),
				       mbufs, (uint16_t)(n - nb));
		for (uint16_t i = 0; i < got; i++)
			nb = (uint16_t)(nb + dpdk_rx_one(dp, e, mbufs[i], &pkts[nb]));
	}
	dpdk_tx_flush_all(dp); /* ARP and ping replies */
	return nb;
}

static uint16_t
dpdk_rx_burst(struct ina_port *port, struct ina_pkt **pkts, uint16_t n)
{
	if (n > INA_MAX_BURST)
		n = INA_MAX_BURST;
	return ina_port_faults_rx(port, &dpdk_of(port)->faults, dpdk_rx_raw, pkts, n);
}

/* ---- tx ---- */

static inline void
dpdk_tx_offload(struct dpdk_port *dp, uint16_t e, struct rte_mbuf *m)
{
	if (dp->tx_csum[e] == FRAME_CSUM_OFFLOAD) {
		m->ol_flags = TX_CSUM_FLAGS;
		m->l2_len = FRAME_ETH_LEN;
		m->l3_len = 20;
	} else {
		m->ol_flags = 0;
	}
}

/* Frames a payload at 'data' (in 'm', with 42 bytes free before it) in place. */
static inline void
dpdk_frame(struct dpdk_port *dp, uint16_t e, struct rte_mbuf *m, uint8_t *data, uint32_t len,
	   const struct frame_end *dst, uint32_t psum)
{
	uint8_t *frame = data - FRAME_HDR_LEN;

	m->data_off = (uint16_t)(frame - (uint8_t *)m->buf_addr);
	m->data_len = (uint16_t)(FRAME_HDR_LEN + len);
	m->pkt_len = m->data_len;
	m->nb_segs = 1;
	m->next = NULL;
	dpdk_tx_offload(dp, e, m);
	frame_udp_write(frame, &dp->self[e], dst, len, psum, (enum frame_csum)dp->tx_csum[e]);
}

/* A copy of 'pkt' framed for one destination, or NULL. */
static struct rte_mbuf *
dpdk_copy(struct dpdk_port *dp, uint16_t e, const struct ina_pkt *pkt, const struct frame_end *dst,
	  uint32_t psum)
{
	const struct rte_mbuf *m = pkt->priv;
	struct rte_mbuf *c = rte_pktmbuf_alloc(dp->pool.mp);
	uint16_t off = (uint16_t)(pkt->data - (uint8_t *)m->buf_addr);
	uint8_t *data;

	if (!c) {
		dp->pool.pool.nb_alloc_fail++;
		return NULL;
	}
	/* Same offset as the original, so the headers fit in front (an rx
	 * mbuf of a foreign pool may have a larger buffer). */
	if ((uint32_t)off + pkt->len > c->buf_len) {
		rte_pktmbuf_free(c);
		return NULL;
	}
	data = (uint8_t *)c->buf_addr + off;
	memcpy(data, pkt->data, pkt->len);
	dpdk_frame(dp, e, c, data, pkt->len, dst, psum);
	return c;
}

/* A header mbuf for one destination chained to the payload mbuf 'm'. */
static struct rte_mbuf *
dpdk_chain(struct dpdk_port *dp, uint16_t e, struct rte_mbuf *m, uint32_t len,
	   const struct frame_end *dst, uint32_t psum)
{
	struct rte_mbuf *h = rte_pktmbuf_alloc(dp->hdr_mp);
	uint8_t *hdr;

	if (!h)
		return NULL;
	hdr = (uint8_t *)rte_pktmbuf_append(h, FRAME_HDR_LEN);
	frame_udp_write(hdr, &dp->self[e], dst, len, psum, (enum frame_csum)dp->tx_csum[e]);
	dpdk_tx_offload(dp, e, h);
	rte_mbuf_refcnt_update(m, 1);
	h->next = m;
	h->nb_segs = 2;
	h->pkt_len = FRAME_HDR_LEN + len;
	return h;
}

/* One result to every destination of its mask. */
static void
dpdk_tx_fanout(struct dpdk_port *dp, struct ina_pkt *pkt, uint8_t i, uint32_t psum)
{
	struct rte_mbuf *m = pkt->priv;
	uint64_t mask = pkt->dst_mask;
	int zc = dp->zerocopy;

	if (!mask) {
		rte_pktmbuf_free(m);
		dpdk_tx_failed(dp, i);
		return;
	}
	if (zc) {
		/* 'm' becomes the payload segment every chain shares. */
		m->data_off = (uint16_t)(pkt->data - (uint8_t *)m->buf_addr);
		m->data_len = (uint16_t)pkt->len;
		m->pkt_len = pkt->len;
		m->nb_segs = 1;
		m->next = NULL;
		m->ol_flags = 0;
	}
	while (mask) {
		unsigned r = (unsigned)__builtin_ctzll(mask);
		struct rte_mbuf *c = NULL;
		struct frame_end dst;
		uint16_t e;

		mask &= mask - 1;
		if (peer_get(dp, &pkt->dsts[r], &dst, &e) < 0 || !dp->link_up[e]) {
			dpdk_tx_failed(dp, i);
			continue;
		}
		if (zc)
			c = dpdk_chain(dp, e, m, pkt->len, &dst, psum);
		if (!c && (zc || mask))
			c = dpdk_copy(dp, e, pkt, &dst, psum);
		if (!c && !zc && !mask) {
			/* Copy mode: the packet's own mbuf goes to the last. */
			dpdk_frame(dp, e, m, pkt->data, pkt->len, &dst, psum);
			dpdk_tx_stage(dp, e, m, pkt->len, i);
			return;
		}
		if (!c) {
			dpdk_tx_failed(dp, i);
			continue;
		}
		dpdk_tx_stage(dp, e, c, pkt->len, i);
	}
	/* Drops our reference: the chains hold theirs. */
	rte_pktmbuf_free(m);
}

static void
dpdk_tx_one(struct dpdk_port *dp, struct ina_pkt *pkt, uint8_t i)
{
	struct rte_mbuf *m = pkt->priv;
	uint8_t *base = (uint8_t *)m->buf_addr;
	struct frame_end dst;
	uint32_t psum;
	uint16_t e;

	if (pkt->len > dp->port.max_pkt || pkt->data < base + FRAME_HDR_LEN ||
	    pkt->data + pkt->len > base + m->buf_len) {
		rte_pktmbuf_free(m);
		dpdk_tx_failed(dp, i);
		return;
	}
	psum = dp->need_psum ? frame_sum(pkt->data, pkt->len) : 0;
	if (pkt->dsts) {
		dpdk_tx_fanout(dp, pkt, i, psum);
		return;
	}
	if (peer_get(dp, &pkt->peer, &dst, &e) < 0 || !dp->link_up[e]) {
		rte_pktmbuf_free(m);
		dpdk_tx_failed(dp, i);
		return;
	}
	dpdk_frame(dp, e, m, pkt->data, pkt->len, &dst, psum);
	dpdk_tx_stage(dp, e, m, pkt->len, i);
}

static uint16_t
dpdk_tx_burst(struct ina_port *port, struct ina_pkt **pkts, uint16_t n)
{
	struct dpdk_port *dp = dpdk_of(port);
	uint16_t failed = 0;

	for (uint16_t off = 0; off < n; off = (uint16_t)(off + INA_MAX_BURST)) {
		uint16_t k = (uint16_t)(n - off < INA_MAX_BURST ? n - off : INA_MAX_BURST);

		dp->tx_failed = 0;
		for (uint16_t i = 0; i < k; i++)
			dpdk_tx_one(dp, pkts[off + i], (uint8_t)i);
		dpdk_tx_flush_all(dp);
		failed = (uint16_t)(failed + __builtin_popcount(dp->tx_failed));
	}
	return (uint16_t)(n - failed);
}

static void
dpdk_wait(struct ina_port *port, uint64_t timeout_ns)
{
	struct timespec ts;

	timeout_ns = ina_port_faults_wait_ns(&dpdk_of(port)->faults, timeout_ns);
	if (!timeout_ns)
		return;
	if (timeout_ns > DPDK_WAIT_MAX_NS)
		timeout_ns = DPDK_WAIT_MAX_NS;
	if (timeout_ns < 1000) {
		sched_yield();
		return;
	}
	ts.tv_sec = 0;
	ts.tv_nsec = (long)timeout_ns;
	nanosleep(&ts, NULL);
}

/* ---- resolve ---- */

/* Parses "A.B.C.D:PORT" into network-order address and port. */
static int
parse_ip_port(const char *s, size_t len, uint32_t *ip_be, uint16_t *udp_be)
{
	const char *colon = memrchr(s, ':', len);
	char ip[INET_ADDRSTRLEN], port[8];
	struct in_addr in;
	size_t ip_len, port_len;
	uint64_t udp;

	if (!colon)
		return -EINVAL;
	ip_len = (size_t)(colon - s);
	port_len = len - ip_len - 1;
	if (ip_len == 0 || ip_len >= sizeof(ip) || port_len == 0 || port_len >= sizeof(port))
		return -EINVAL;
	memcpy(ip, s, ip_len);
	ip[ip_len] = '\0';
	memcpy(port, colon + 1, port_len);
	port[port_len] = '\0';
	if (inet_pton(AF_INET, ip, &in) != 1 || ina_parse_u64(port, 1, 65535, &udp) < 0)
		return -EINVAL;
	*ip_be = in.s_addr;
	*udp_be = rte_cpu_to_be_16((uint16_t)udp);
	return 0;
}

/* Sends one ARP request for 'ip_be' out of every ethdev whose link is up. */
static void
dpdk_arp_send(struct dpdk_port *dp, uint32_t ip_be)
{
	for (uint16_t e = 0; e < dp->nb_eth; e++) {
		struct rte_mbuf *m;

		if (!dp->link_up[e] || !(m = rte_pktmbuf_alloc(dp->pool.mp)))
			continue;
		neigh_arp_request(&dp->neigh, m, ip_be, dp->self[e].mac);
		dpdk_tx_stage(dp, e, m, 0, OWNER_NONE);
	}
	dpdk_tx_flush_all(dp);
}

/* Asks by ARP for the MAC of 'ip_be' while polling rx: 0, or -EHOSTUNREACH.
 * ina packets that arrive meanwhile are dropped (counted in rx_drop). */
static int
dpdk_arp_resolve(struct dpdk_port *dp, uint32_t ip_be, uint8_t mac[6], uint16_t *eth)
{
	struct ina_pkt *pkts[INA_MAX_BURST];

	for (int t = 0; t < DPDK_ARP_TRIES; t++) {
		uint64_t until = ina_now_ns() + DPDK_ARP_GAP_MS * INA_NS_PER_MS;

		dpdk_link_poll(dp, LINK_POLL_NOW);
		dpdk_arp_send(dp, ip_be);
		do {
			uint16_t nb = dpdk_rx_burst(&dp->port, pkts, INA_MAX_BURST);

			if (nb) {
				dp->port.stats.rx_drop += nb;
				ina_pkt_free_bulk(pkts, nb);
			}
			if (neigh_lookup(&dp->neigh, ip_be, mac, eth) == 0)
				return 0;
			if (!nb)
				dpdk_wait(&dp->port, 20000);
		} while (ina_now_ns() < until);
	}
	return -EHOSTUNREACH;
}

static int
dpdk_resolve(struct ina_port *port, const char *addr, struct ina_peer *peer)
{
	struct dpdk_port *dp = dpdk_of(port);
	const char *at, *ipp;
	uint8_t mac[6];
	uint32_t ip_be;
	uint16_t udp_be, eth = 0;
	int ret;

	if (!addr || !peer)
		return -EINVAL;
	at = strchr(addr, '@');
	ipp = at ? at + 1 : addr;
	if (parse_ip_port(ipp, strlen(ipp), &ip_be, &udp_be) < 0)
		return -EINVAL;
	if (at) {
		unsigned b[6];
		int used = 0;

		if (sscanf(addr, "%2x:%2x:%2x:%2x:%2x:%2x%n", &b[0], &b[1], &b[2], &b[3], &b[4],
			   &b[5], &used) != 6 ||
		    addr + used != at)
			return -EINVAL;
		for (int i = 0; i < 6; i++)
			mac[i] = (uint8_t)b[i];
		/* The ethdev it was seen on, if ARP saw it; else the first. */
		{
			uint8_t seen[6];

			if (neigh_lookup(&dp->neigh, ip_be, seen, &eth) < 0)
				eth = 0;
		}
		peer_make(peer, mac, ip_be, udp_be, eth);
		return 0;
	}
	if (!dp->ip_be) {
		INA_LOG(ERR,
			"dpdk port %s: cannot resolve '%s' by ARP without an own address: "
			"pass ip=A.B.C.D, or give the peer as MAC@IP:PORT",
			dp->name, addr);
		return -EINVAL;
	}
	ret = neigh_lookup(&dp->neigh, ip_be, mac, &eth);
	if (ret < 0)
		ret = dpdk_arp_resolve(dp, ip_be, mac, &eth);
	if (ret < 0) {
		INA_LOG(ERR,
			"dpdk port %s: no ARP reply for %s after %d requests %d ms apart: is "
			"the peer up, with that address, on a link of this port?",
			dp->name, addr, DPDK_ARP_TRIES, DPDK_ARP_GAP_MS);
		return -EHOSTUNREACH;
	}
	peer_make(peer, mac, ip_be, udp_be, eth);
	return 0;
}

/* ---- open / close ---- */

static void
dpdk_close(struct ina_port *port)
{
	struct dpdk_port *dp;

	if (!port)
		return;
	dp = dpdk_of(port);
	ina_faults_flush(&dp->faults); /* before the pools go */
	dpdk_tx_flush_all(dp);
	for (uint16_t q = dp->nb_rxq; q-- > 0;) /* the last one releases the set */
		dpdk_set_close(dp->set, (uint16_t)(dp->queue + q));
	free(dp);
}

static int
dpdk_set_cfg_make(const struct dpdk_config *cfg, struct dpdk_set_cfg *sc, char *err,
		  size_t err_size)
{
	memset(sc, 0, sizeof(*sc));
	if (cfg->all) {
		uint16_t id;

		RTE_ETH_FOREACH_DEV(id)
		{
			if (sc->nb == DPDK_MAX_ETH) {
				snprintf(err, err_size,
					 "port=all: more than %u ethdevs; pick a range LO-HI",
					 DPDK_MAX_ETH);
				return -E2BIG;
			}
			sc->ids[sc->nb++] = id;
		}
		if (sc->nb == 0) {
			snprintf(err, err_size, "no DPDK port: pass --vdev=... or bind a NIC");
			return -ENODEV;
		}
	} else {
		for (uint64_t id = cfg->lo; id <= cfg->hi; id++)
			sc->ids[sc->nb++] = (uint16_t)id;
	}
	sc->queues = (uint16_t)cfg->queues;
	sc->rxd = (uint32_t)cfg->rxd;
	sc->txd = (uint32_t)cfg->txd;
	sc->nb_mbufs = (uint32_t)cfg->mbufs;
	sc->reserve = (uint32_t)cfg->reserve;
	sc->link_wait_ms = (uint32_t)cfg->link_wait_ms;
	sc->offload = (int)cfg->offload;
	sc->priv_size = DPDK_PRIV_SIZE;
	sc->mtu = (uint32_t)cfg->mtu;
	return 0;
}

static int
dpdk_open_cfg(const struct dpdk_config *cfg, struct ina_port **out, char *err, size_t err_size)
{
	struct dpdk_set_cfg sc;
	struct dpdk_port *dp;
	int ret;

	*out = NULL;
	if (!ina_dpdk_eal_running()) {
		snprintf(err, err_size,
			 "EAL is not running: start it first "
			 "([EAL options] -- [ina options])");
		return -ENODEV;
	}
	if (cfg->csum == DPDK_CSUM_OFF && cfg->faults.rate[INA_FAULT_CORRUPT] > 0) {
		snprintf(err, err_size,
			 "corrupt= needs UDP checksums to catch what it flips: csum=on (or "
			 "auto), not off");
		return -EINVAL;
	}
	ret = dpdk_set_cfg_make(cfg, &sc, err, err_size);
	if (ret < 0)
		return ret;
	dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	ret = dpdk_set_open(&sc, (uint16_t)cfg->queue, &dp->set, err, err_size);
	if (ret < 0) {
		free(dp);
		return ret;
	}
	/* queue=all: this object also takes the other queues, for rx only. */
	for (dp->nb_rxq = 1; cfg->queue_all && dp->nb_rxq < sc.queues; dp->nb_rxq++) {
		struct dpdk_set *same;

		ret = dpdk_set_open(&sc, dp->nb_rxq, &same, err, err_size);
		if (ret < 0) {
			while (dp->nb_rxq-- > 0)
				dpdk_set_close(dp->set, dp->nb_rxq);
			free(dp);
			return ret;
		}
	}
	dp->port.ops = &ina_port_dpdk_ops;
	dp->queue = (uint16_t)cfg->queue;
	dp->nb_eth = sc.nb;
	dp->ip_be = cfg->ip_be;
	dp->udp_be = rte_cpu_to_be_16((uint16_t)cfg->udp);
	ina_faults_init(&dp->faults, &cfg->faults);
	dp->pool.mp = dp->set->pools[dp->queue];
	dp->hdr_mp = dp->set->hdr_pools[dp->queue];
	dp->pool.pool.ops = &dpdk_pool_ops;
	dp->pool.pool.buf_size = sc.mtu - 20 - 8; /* largest ina packet */
	dp->port.pool = &dp->pool.pool;
	dp->port.max_pkt = dp->pool.pool.buf_size;
	dp->zerocopy = cfg->zerocopy != 0;
	for (uint16_t e = 0; e < dp->nb_eth; e++) {
		memcpy(dp->self[e].mac, dp->set->macs[e], 6);
		dp->self[e].ip_be = dp->ip_be;
		dp->self[e].udp_be = dp->udp_be;
		if (!dp->set->chains_ok[e])
			dp->zerocopy = 0;
		dp->no_csum[e] = cfg->csum == DPDK_CSUM_OFF ||
				 (cfg->csum == DPDK_CSUM_AUTO &&
				  strcmp(dp->set->names[e], "net_memif") == 0 &&
				  cfg->faults.rate[INA_FAULT_CORRUPT] <= 0);
		if (dp->no_csum[e])
			dp->tx_csum[e] = FRAME_CSUM_NONE;
		else if (dp->set->tx_csum[e])
			dp->tx_csum[e] = FRAME_CSUM_OFFLOAD;
		else
			dp->tx_csum[e] = FRAME_CSUM_SW;
		if (dp->tx_csum[e] == FRAME_CSUM_SW)
			dp->need_psum = 1;
	}
	neigh_init(&dp->neigh, dp->ip_be);
	dp->link_period = rte_get_tsc_hz() / 1000 * DPDK_LINK_POLL_MS;
	dpdk_link_poll(dp, LINK_POLL_INIT);
	if (sc.nb == 1)
		snprintf(dp->name, sizeof(dp->name), "%u", sc.ids[0]);
	else
		snprintf(dp->name, sizeof(dp->name), "%u-%u", sc.ids[0], sc.ids[sc.nb - 1]);
	if (sc.queues > 1 && cfg->queue_all) {
		size_t used = strlen(dp->name);

		snprintf(dp->name + used, sizeof(dp->name) - used, " queues all");
	} else if (sc.queues > 1) {
		size_t used = strlen(dp->name);

		snprintf(dp->name + used, sizeof(dp->name) - used, " queue %u", dp->queue);
	}
	INA_LOG(DEBUG, "dpdk port %s: open, %u ethdevs, %u mbufs, zerocopy %d, udp checksum %s",
		dp->name, sc.nb, sc.nb_mbufs, dp->zerocopy,
		dp->no_csum[0]			       ? "none (csum=off)"
		: dp->tx_csum[0] == FRAME_CSUM_OFFLOAD ? "offloaded"
						       : "in software");
	*out = &dp->port;
	return 0;
}

/* 'err' may be NULL: the reason is then dropped. */
static int
dpdk_open_args(const char *args, int need_port, uint16_t port_id, struct ina_port **out, char *err,
	       unsigned err_size)
{
	struct dpdk_config cfg;
	char why[320];
	int ret;

	why[0] = '\0';
	if (err && err_size)
		err[0] = '\0';
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!args)
		args = "";
	ret = dpdk_config_parse(args, &cfg, why, sizeof(why));
	if (ret == 0 && need_port && !cfg.has_port) {
		snprintf(why, sizeof(why), "needs port=ID, port=LO-HI or port=all");
		ret = -EINVAL;
	}
	if (ret == 0 && !need_port) {
		cfg.all = 0;
		cfg.lo = cfg.hi = port_id;
	}
	if (ret == 0)
		ret = dpdk_open_cfg(&cfg, out, why, sizeof(why));
	if (ret < 0 && err && err_size)
		snprintf(err, err_size, "%s", why);
	return ret;
}

int
ina_port_dpdk_open_id(uint16_t port_id, const char *args, struct ina_port **out, char *err,
		      unsigned err_size)
{
	return dpdk_open_args(args, 0, port_id, out, err, err_size);
}

static int
dpdk_open(struct ina_port **out, const char *args, char *err, unsigned err_size)
{
	return dpdk_open_args(args, 1, 0, out, err, err_size);
}

/* ---- getters ---- */

unsigned
ina_port_dpdk_pool_avail(const struct ina_port *port)
{
	const struct dpdk_port *dp = dpdk_of_c(port);

	return rte_mempool_avail_count(dp->pool.mp) + rte_mempool_avail_count(dp->hdr_mp);
}

unsigned
ina_port_dpdk_nb_ethdevs(const struct ina_port *port)
{
	return dpdk_of_c(port)->nb_eth;
}

int
ina_port_dpdk_mac(const struct ina_port *port, unsigned i, uint8_t mac[6])
{
	const struct dpdk_port *dp = dpdk_of_c(port);

	if (i >= dp->nb_eth)
		return -EINVAL;
	memcpy(mac, dp->self[i].mac, 6);
	return 0;
}

void
ina_port_dpdk_neigh_stats(const struct ina_port *port, struct ina_port_dpdk_neigh_stats *st)
{
	*st = dpdk_of_c(port)->neigh.st;
}

/* The names ina-switch prints for struct ina_port_dpdk_neigh_stats (its
 * Prometheus names are in switch_sim/metrics.c). */
#define NEIGH_ROW(field) \
	{ \
		"port_" #field, offsetof(struct ina_port_dpdk_neigh_stats, field) \
	}
static const struct {
	const char *name;
	size_t off;
} neigh_rows[] = {
	NEIGH_ROW(arp_rx),	 NEIGH_ROW(arp_reply_tx), NEIGH_ROW(arp_request_tx),
	NEIGH_ROW(arp_learned),	 NEIGH_ROW(icmp_echo),	  NEIGH_ROW(not_ip),
	NEIGH_ROW(not_ours),	 NEIGH_ROW(malformed),	  NEIGH_ROW(link_down),
	NEIGH_ROW(csum_partial),
};
#undef NEIGH_ROW

_Static_assert(sizeof(neigh_rows) / sizeof(neigh_rows[0]) * sizeof(uint64_t) ==
		       sizeof(struct ina_port_dpdk_neigh_stats),
	       "a counter of struct ina_port_dpdk_neigh_stats has no row in neigh_rows");

static unsigned
dpdk_xstats(const struct ina_port *port, struct ina_port_xstat *xs, unsigned n)
{
	const struct ina_port_dpdk_neigh_stats *st = &dpdk_of_c(port)->neigh.st;
	const unsigned nb = sizeof(neigh_rows) / sizeof(neigh_rows[0]);

	for (unsigned i = 0; i < n && i < nb; i++) {
		xs[i].name = neigh_rows[i].name;
		memcpy(&xs[i].value, (const char *)st + neigh_rows[i].off, sizeof(uint64_t));
	}
	return nb;
}

int
ina_port_dpdk_eth_stats(const struct ina_port *port, unsigned i, struct ina_port_dpdk_eth_stats *st)
{
	const struct dpdk_port *dp = dpdk_of_c(port);
	struct rte_eth_stats es;
	int ret;

	if (i >= dp->nb_eth)
		return -EINVAL;
	ret = rte_eth_stats_get(dp->set->cfg.ids[i], &es);
	if (ret < 0)
		return ret;
	st->ipackets = es.ipackets;
	st->opackets = es.opackets;
	st->ibytes = es.ibytes;
	st->obytes = es.obytes;
	st->imissed = es.imissed;
	st->ierrors = es.ierrors;
	st->oerrors = es.oerrors;
	st->rx_nombuf = es.rx_nombuf;
	return 0;
}

static int
dpdk_peer_inet(const struct ina_port *port, const struct ina_peer *peer, uint32_t *ip,
	       uint16_t *udp)
{
	const struct dpdk_port *dp = dpdk_of_c(port);
	struct frame_end end;
	uint16_t eth;

	if (!peer) {
		*ip = rte_be_to_cpu_32(dp->ip_be);
		*udp = rte_be_to_cpu_16(dp->udp_be);
		return 0;
	}
	if (peer_get(dp, peer, &end, &eth) < 0)
		return -EINVAL;
	*ip = rte_be_to_cpu_32(end.ip_be);
	*udp = rte_be_to_cpu_16(end.udp_be);
	return 0;
}

const struct ina_port_ops ina_port_dpdk_ops = {
	.type = "dpdk",
	.open = dpdk_open,
	.rx_burst = dpdk_rx_burst,
	.tx_burst = dpdk_tx_burst,
	.wait = dpdk_wait,
	.resolve = dpdk_resolve,
	.peer_str = dpdk_peer_str,
	.peer_inet = dpdk_peer_inet,
	.xstats = dpdk_xstats,
	.close = dpdk_close,
	.wait_sleeps = 1, /* dpdk_wait() cannot see a packet arrive */
};
