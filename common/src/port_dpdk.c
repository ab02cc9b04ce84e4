/* SPDX-License-Identifier: MIT */
/*
 * The dpdk port (port_dpdk.h): one rx and one tx queue of an ethdev. The
 * packet pool is an rte_mempool of mbufs; each struct ina_pkt lives in its
 * mbuf's private area and 'data' points 42 bytes into the mbuf data, leaving
 * room for Ethernet(14) + IPv4(20) + UDP(8), which tx_burst prepends in place
 * and rx_burst strips. Both checksums are computed and verified in software.
 *
 * A peer is 12 bytes: MAC (6), IPv4 address (4, network order), UDP port (2,
 * network order).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_byteorder.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_udp.h>

#include "ina/log.h"
#include "ina/port_dpdk.h"
#include "ina/util.h"

#define DPDK_HDR_SIZE (RTE_ETHER_HDR_LEN + 20 + 8)	/* 42 */
#define DPDK_MTU 1500u
#define DPDK_MAX_PKT (DPDK_MTU - 20 - 8)		/* largest ina packet */
#define DPDK_DEF_MBUFS 8191
#define DPDK_MAX_MBUFS (1u << 22)
#define DPDK_NB_DESC 512
#define DPDK_TX_RETRIES 8		/* tx calls without progress, then drop */
#define DPDK_WAIT_MAX_NS 50000ull
#define DPDK_PEER_LEN 12
#define DPDK_PRIV_SIZE RTE_ALIGN(sizeof(struct ina_pkt), RTE_MBUF_PRIV_ALIGN)

_Static_assert(DPDK_HDR_SIZE == 42, "Eth/IPv4/UDP size");
_Static_assert(DPDK_PEER_LEN <= INA_PEER_SIZE - 1, "peer size");

struct dpdk_config {
	uint64_t port_id;
	int has_port;
	uint32_t ip_be;
	uint64_t udp;
	uint64_t nb_mbufs;
};

struct dpdk_pool {
	struct ina_pkt_pool pool;	/* first */
	struct rte_mempool *mp;
};

struct dpdk_port {
	struct ina_port port;		/* first: the handle callers hold */
	struct dpdk_pool pool;
	uint16_t port_id;
	int started;			/* we started the ethdev: stop it on close */
	struct rte_ether_addr mac;
	uint32_t ip_be;
	uint16_t udp_be;
	char name[48];

	/* tx: frames ready for rte_eth_tx_burst. */
	uint16_t tx_nb;
	uint16_t tx_nb_failed;		/* packets of this call with a drop */
	int32_t tx_last_failed;		/* last packet counted there, -1 = none */
	struct rte_mbuf *tx_frames[INA_MAX_BURST];
	uint32_t tx_lens[INA_MAX_BURST];	/* ina bytes of each frame */
	uint16_t tx_owner[INA_MAX_BURST];	/* index in the tx_burst input */
};

static int eal_up;

static inline struct dpdk_port *
dpdk_of(struct ina_port *port)
{
	return (struct dpdk_port *)(void *)port;
}

/* ---- EAL ---- */

int
ina_dpdk_eal_init(int argc, char **argv, char *err, size_t err_size)
{
	int ret;

	if (err && err_size)
		err[0] = '\0';
	if (eal_up) {
		if (err && err_size)
			snprintf(err, err_size, "EAL already initialised");
		return -EALREADY;
	}
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		int e = rte_errno ? rte_errno : EINVAL;

		if (err && err_size)
			snprintf(err, err_size, "rte_eal_init failed: %s", rte_strerror(e));
		return -e;
	}
	eal_up = 1;
	return ret;
}

void
ina_dpdk_eal_cleanup(void)
{
	if (!eal_up)
		return;
	rte_eal_cleanup();
	eal_up = 0;
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
	pkt->data = rte_pktmbuf_mtod_offset(m, uint8_t *, DPDK_HDR_SIZE);
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
	(void)pool;
	/* Each mbuf goes back to its own mempool (rx may hand out foreign ones). */
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free((struct rte_mbuf *)pkts[i]->priv);
}

static const struct ina_pkt_pool_ops dpdk_pool_ops = {
	.get = dpdk_pool_get,
	.put = dpdk_pool_put,
};

/* ---- peers ---- */

static void
peer_make(struct ina_peer *peer, const struct rte_ether_addr *mac, uint32_t ip_be,
	  uint16_t udp_be)
{
	memset(peer, 0, sizeof(*peer));
	peer->len = DPDK_PEER_LEN;
	memcpy(peer->bytes, mac->addr_bytes, 6);
	memcpy(peer->bytes + 6, &ip_be, 4);
	memcpy(peer->bytes + 10, &udp_be, 2);
}

static int
peer_get(const struct ina_peer *peer, struct rte_ether_addr *mac, uint32_t *ip_be,
	 uint16_t *udp_be)
{
	if (peer->len != DPDK_PEER_LEN)
		return -EINVAL;
	memcpy(mac->addr_bytes, peer->bytes, 6);
	memcpy(ip_be, peer->bytes + 6, 4);
	memcpy(udp_be, peer->bytes + 10, 2);
	return 0;
}

static int
dpdk_resolve(struct ina_port *port, const char *addr, struct ina_peer *peer)
{
	struct rte_ether_addr mac;
	unsigned b[6];
	char ip[INET_ADDRSTRLEN];
	const char *at, *colon;
	struct in_addr in;
	uint64_t udp;
	size_t ip_len;
	int used = 0;

	(void)port;
	if (!addr || !peer)
		return -EINVAL;
	at = strchr(addr, '@');
	colon = at ? strrchr(at, ':') : NULL;
	if (!at || !colon || colon < at)
		return -EINVAL;
	if (sscanf(addr, "%2x:%2x:%2x:%2x:%2x:%2x%n", &b[0], &b[1], &b[2], &b[3], &b[4],
		   &b[5], &used) != 6 || addr + used != at)
		return -EINVAL;
	ip_len = (size_t)(colon - at - 1);
	if (ip_len == 0 || ip_len >= sizeof(ip))
		return -EINVAL;
	memcpy(ip, at + 1, ip_len);
	ip[ip_len] = '\0';
	if (inet_pton(AF_INET, ip, &in) != 1)
		return -EINVAL;
	if (ina_parse_u64(colon + 1, 1, 65535, &udp) < 0)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac.addr_bytes[i] = (uint8_t)b[i];
	peer_make(peer, &mac, in.s_addr, rte_cpu_to_be_16((uint16_t)udp));
	return 0;
}

static const char *
dpdk_peer_str(const struct ina_port *port, const struct ina_peer *peer, char *buf,
	      unsigned size)
{
	struct rte_ether_addr mac;
	char ip[INET_ADDRSTRLEN];
	uint32_t ip_be;
	uint16_t udp_be;

	(void)port;
	if (!size)
		return buf;
	if (peer_get(peer, &mac, &ip_be, &udp_be) < 0) {
		snprintf(buf, size, "?");
		return buf;
	}
	if (!inet_ntop(AF_INET, &ip_be, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "?");
	snprintf(buf, size, "%02x:%02x:%02x:%02x:%02x:%02x@%s:%u", mac.addr_bytes[0],
		 mac.addr_bytes[1], mac.addr_bytes[2], mac.addr_bytes[3], mac.addr_bytes[4],
		 mac.addr_bytes[5], ip, rte_be_to_cpu_16(udp_be));
	return buf;
}

/* ---- rx ---- */

static uint16_t
dpdk_udp_sum(const struct rte_ipv4_hdr *ip, const struct rte_udp_hdr *udp, uint32_t udp_len)
{
	uint32_t sum = 0;

	sum += (ip->src_addr & 0xffff) + (ip->src_addr >> 16);
	sum += (ip->dst_addr & 0xffff) + (ip->dst_addr >> 16);
	sum += rte_cpu_to_be_16(IPPROTO_UDP) + rte_cpu_to_be_16((uint16_t)udp_len);
	sum = __rte_raw_cksum(udp, udp_len, sum);
	return __rte_raw_cksum_reduce(sum);
}

/* Strips and checks Eth/IPv4/UDP; fills 'pkt'. 0, or -1 to drop. */
static int
dpdk_rx_one(struct dpdk_port *dp, struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth;
	const struct rte_ipv4_hdr *ip;
	const struct rte_udp_hdr *udp;
	struct ina_pkt *pkt;
	uint32_t ip_hlen, ip_len, udp_len;
	uint8_t *data;

	if (m->nb_segs != 1 || rte_pktmbuf_data_len(m) < DPDK_HDR_SIZE)
		return -1;
	/* The ina_pkt lives in the private area: a foreign pool must have one. */
	if (rte_pktmbuf_priv_size(m->pool) < DPDK_PRIV_SIZE)
		return -1;
	eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))
		return -1;
	ip = (const struct rte_ipv4_hdr *)(eth + 1);
	if ((ip->version_ihl >> 4) != 4 || ip->next_proto_id != IPPROTO_UDP)
		return -1;
	ip_hlen = (uint32_t)(ip->version_ihl & 0xf) * 4;
	ip_len = rte_be_to_cpu_16(ip->total_length);
	if (ip_hlen < 20 || ip_len < ip_hlen + 8 ||
	    RTE_ETHER_HDR_LEN + ip_len > rte_pktmbuf_data_len(m))
		return -1;
	/* Fragments: more-fragments set or a nonzero offset. */
	if (rte_be_to_cpu_16(ip->fragment_offset) & 0x3fff)
		return -1;
	if (rte_raw_cksum(ip, ip_hlen) != 0xffff)
		return -1;
	if (dp->ip_be && ip->dst_addr != dp->ip_be)
		return -1;
	udp = (const struct rte_udp_hdr *)((const uint8_t *)ip + ip_hlen);
	udp_len = rte_be_to_cpu_16(udp->dgram_len);
	if (udp_len < 8 || udp_len > ip_len - ip_hlen)
		return -1;
	if (udp->dst_port != dp->udp_be)
		return -1;
	/*
	 * A zero UDP checksum means none (RFC 768). Otherwise the sum over the
	 * pseudo-header and the datagram, checksum included, must be 0xffff.
	 * (rte_ipv4_udptcp_cksum_verify is still experimental in 22.11.)
	 */
	if (udp->dgram_cksum != 0 && dpdk_udp_sum(ip, udp, udp_len) != 0xffff)
		return -1;

	pkt = mbuf_pkt(m);
	data = (uint8_t *)(uintptr_t)(udp + 1);
	pkt->data = data;
	pkt->len = udp_len - 8;
	pkt->cap = (uint32_t)((uint8_t *)m->buf_addr + m->buf_len - data);
	if (pkt->cap > dp->port.pool->buf_size)
		pkt->cap = dp->port.pool->buf_size;
	if (pkt->cap < pkt->len)
		pkt->cap = pkt->len;
	peer_make(&pkt->peer, &eth->src_addr, ip->src_addr, udp->src_port);
	pkt->dsts = NULL;
	pkt->dst_mask = 0;
	pkt->pool = dp->port.pool;
	pkt->priv = m;
	return 0;
}

static uint16_t
dpdk_rx_burst(struct ina_port *port, struct ina_pkt **pkts, uint16_t n)
{
	struct dpdk_port *dp = dpdk_of(port);
	struct rte_mbuf *mbufs[INA_MAX_BURST];
	uint16_t nb_rx, nb = 0;

	if (n > INA_MAX_BURST)
		n = INA_MAX_BURST;
	nb_rx = rte_eth_rx_burst(dp->port_id, 0, mbufs, n);
	for (uint16_t i = 0; i < nb_rx; i++) {
		if (dpdk_rx_one(dp, mbufs[i]) < 0) {
			rte_pktmbuf_free(mbufs[i]);
			port->stats.rx_drop++;
			continue;
		}
		pkts[nb++] = mbuf_pkt(mbufs[i]);
		port->stats.rx_bytes += pkts[nb - 1]->len;
	}
	if (nb) {
		port->stats.rx_pkts += nb;
		port->stats.rx_bursts++;
	}
	return nb;
}

/* ---- tx ---- */

/* Writes Eth/IPv4/UDP in the 42 bytes before 'data' of a frame of 'len' bytes. */
static void
dpdk_headers(struct dpdk_port *dp, uint8_t *frame, uint32_t len, const struct ina_peer *dst)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)(void *)frame;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	struct rte_ether_addr mac;
	uint32_t ip_be = 0;
	uint16_t udp_be = 0;

	(void)peer_get(dst, &mac, &ip_be, &udp_be);	/* checked by dpdk_frame() */
	rte_ether_addr_copy(&mac, &eth->dst_addr);
	rte_ether_addr_copy(&dp->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);

	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(20 + 8 + len));
	ip->packet_id = 0;
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = dp->ip_be;
	ip->dst_addr = ip_be;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);

	udp->src_port = dp->udp_be;
	udp->dst_port = udp_be;
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(8 + len));
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
}

/*
 * Counts a frame of input packet 'i' as dropped. Marks come in non-decreasing
 * packet order (flushes drop a suffix of the staged frames, and staging follows
 * the input order), so one 'last' index is enough to count each packet once.
 */
static inline void
dpdk_tx_failed(struct dpdk_port *dp, uint16_t i)
{
	dp->port.stats.tx_drop++;
	if (dp->tx_last_failed != (int32_t)i) {
		dp->tx_last_failed = (int32_t)i;
		dp->tx_nb_failed++;
	}
}

/* Sends the staged frames with bounded retries; frees and counts the rest. */
static void
dpdk_tx_flush(struct dpdk_port *dp)
{
	uint16_t sent = 0, tries = 0;

	while (sent < dp->tx_nb && tries < DPDK_TX_RETRIES) {
		uint16_t k = rte_eth_tx_burst(dp->port_id, 0, dp->tx_frames + sent,
					      (uint16_t)(dp->tx_nb - sent));

		for (uint16_t i = sent; i < sent + k; i++)
			dp->port.stats.tx_bytes += dp->tx_lens[i];
		sent = (uint16_t)(sent + k);
		tries = k ? 0 : (uint16_t)(tries + 1);
	}
	dp->port.stats.tx_pkts += sent;
	if (sent)
		dp->port.stats.tx_bursts++;
	if (sent < dp->tx_nb) {
		rte_pktmbuf_free_bulk(dp->tx_frames + sent, (unsigned)(dp->tx_nb - sent));
		for (uint16_t i = sent; i < dp->tx_nb; i++)
			dpdk_tx_failed(dp, dp->tx_owner[i]);
	}
	dp->tx_nb = 0;
}

static inline void
dpdk_tx_stage(struct dpdk_port *dp, struct rte_mbuf *m, uint32_t len, uint16_t owner)
{
	dp->tx_frames[dp->tx_nb] = m;
	dp->tx_lens[dp->tx_nb] = len;
	dp->tx_owner[dp->tx_nb] = owner;
	if (++dp->tx_nb == INA_MAX_BURST)
		dpdk_tx_flush(dp);
}

/*
 * Makes the frame of 'pkt' for 'dst' in mbuf 'm' (the packet's own mbuf, or a
 * copy for fan-out, with the payload at 'data'). 0, or -1 when it does not fit.
 */
static int
dpdk_frame(struct dpdk_port *dp, struct rte_mbuf *m, uint8_t *data, uint32_t len,
	   const struct ina_peer *dst)
{
	uint8_t *base = (uint8_t *)m->buf_addr, *frame;

	if (dst->len != DPDK_PEER_LEN || len > DPDK_MAX_PKT ||
	    data < base + DPDK_HDR_SIZE || data + len > base + m->buf_len)
		return -1;
	frame = data - DPDK_HDR_SIZE;
	m->data_off = (uint16_t)(frame - base);
	m->data_len = (uint16_t)(DPDK_HDR_SIZE + len);
	m->pkt_len = m->data_len;
	m->nb_segs = 1;
	m->next = NULL;
	m->ol_flags = 0;
	dpdk_headers(dp, frame, len, dst);
	return 0;
}

/* A copy of 'pkt' for one more destination, or NULL. */
static struct rte_mbuf *
dpdk_copy(struct dpdk_port *dp, const struct ina_pkt *pkt, uint8_t **data)
{
	const struct rte_mbuf *m = pkt->priv;
	struct rte_mbuf *c = rte_pktmbuf_alloc(dp->pool.mp);
	uint16_t off = (uint16_t)(pkt->data - (uint8_t *)m->buf_addr);

	if (!c) {
		dp->pool.pool.nb_alloc_fail++;
		return NULL;
	}
	/* Same offset as the original, so the headers fit in front. */
	if ((uint32_t)off + pkt->len > c->buf_len) {
		rte_pktmbuf_free(c);
		return NULL;
	}
	*data = (uint8_t *)c->buf_addr + off;
	memcpy(*data, pkt->data, pkt->len);
	return c;
}

static uint16_t
dpdk_tx_burst(struct ina_port *port, struct ina_pkt **pkts, uint16_t n)
{
	struct dpdk_port *dp = dpdk_of(port);

	dp->tx_last_failed = -1;
	dp->tx_nb_failed = 0;
	for (uint16_t i = 0; i < n; i++) {
		struct ina_pkt *pkt = pkts[i];
		struct rte_mbuf *m = pkt->priv;
		uint64_t mask;

		if (!pkt->dsts) {
			if (dpdk_frame(dp, m, pkt->data, pkt->len, &pkt->peer) < 0) {
				rte_pktmbuf_free(m);
				dpdk_tx_failed(dp, i);
				continue;
			}
			dpdk_tx_stage(dp, m, pkt->len, i);
			continue;
		}

		/*
		 * Fan-out: a copy per extra destination, the packet's own mbuf
		 * for the last one.
		 * XXX: indirect mbufs later (a header mbuf per destination
		 * chained to the payload with rte_pktmbuf_attach), no copies.
		 */
		mask = pkt->dst_mask;
		if (!mask) {
			rte_pktmbuf_free(m);
			dpdk_tx_failed(dp, i);
			continue;
		}
		while (mask) {
			unsigned r = (unsigned)__builtin_ctzll(mask);
			struct rte_mbuf *c = m;
			uint8_t *data = pkt->data;

			mask &= mask - 1;
			if (mask && !(c = dpdk_copy(dp, pkt, &data))) {
				dpdk_tx_failed(dp, i);
				continue;
			}
			if (dpdk_frame(dp, c, data, pkt->len, &pkt->dsts[r]) < 0) {
				rte_pktmbuf_free(c);
				dpdk_tx_failed(dp, i);
				continue;
			}
			dpdk_tx_stage(dp, c, pkt->len, i);
		}
	}
	dpdk_tx_flush(dp);
	return (uint16_t)(n - dp->tx_nb_failed);
}

static void
dpdk_wait(struct ina_port *port, uint64_t timeout_ns)
{
	struct timespec ts;

	(void)port;
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

/* ---- open / close ---- */

static int
dpdk_option(const char *args, char *opt, struct dpdk_config *cfg)
{
	const char *key = opt, *val, *range = "";
	char *eq = strchr(opt, '=');
	struct in_addr in;
	int ret;

	if (!eq) {
		INA_LOG(ERR, "dpdk port '%s': option '%s' needs a value (KEY=VALUE)", args, opt);
		return -EINVAL;
	}
	*eq = '\0';
	val = eq + 1;
	if (strcmp(key, "port") == 0) {
		ret = ina_parse_u64(val, 0, RTE_MAX_ETHPORTS - 1, &cfg->port_id);
		cfg->has_port = 1;
		range = " (ethdev port id)";
	} else if (strcmp(key, "ip") == 0) {
		ret = inet_pton(AF_INET, val, &in) == 1 ? 0 : -EINVAL;
		cfg->ip_be = in.s_addr;
		range = " (A.B.C.D)";
	} else if (strcmp(key, "udp") == 0) {
		ret = ina_parse_u64(val, 1, 65535, &cfg->udp);
		range = " (1..65535)";
	} else if (strcmp(key, "mbufs") == 0) {
		ret = ina_parse_u64(val, 64, DPDK_MAX_MBUFS, &cfg->nb_mbufs);
		range = " (64..4194304)";
	} else {
		INA_LOG(ERR, "dpdk port '%s': unknown option '%s' (known: port, ip, udp, mbufs)",
			args, key);
		return -EINVAL;
	}
	if (ret < 0) {
		INA_LOG(ERR, "dpdk port '%s': bad value '%s' for option '%s'%s", args, val, key,
			range);
		return -EINVAL;
	}
	return 0;
}

static int
dpdk_config_parse(const char *args, struct dpdk_config *cfg)
{
	char *copy, *opt, *save = NULL;
	int ret = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->udp = INA_DPDK_UDP_PORT;
	cfg->nb_mbufs = DPDK_DEF_MBUFS;
	copy = strdup(args);
	if (!copy)
		return -ENOMEM;
	for (opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		ret = dpdk_option(args, opt, cfg);
		if (ret < 0)
			break;
	}
	free(copy);
	return ret;
}

static void
dpdk_close(struct ina_port *port)
{
	struct dpdk_port *dp;

	if (!port)
		return;
	dp = dpdk_of(port);
	if (dp->started) {
		struct rte_mbuf *mbufs[INA_MAX_BURST];
		uint16_t k;

		/* Drain rx so no mbuf of ours outlives the pool in a queue. */
		while ((k = rte_eth_rx_burst(dp->port_id, 0, mbufs, INA_MAX_BURST)) > 0)
			rte_pktmbuf_free_bulk(mbufs, k);
		(void)rte_eth_dev_stop(dp->port_id);
	}
	rte_mempool_free(dp->pool.mp);
	free(dp);
}

static int
dpdk_open_cfg(const struct dpdk_config *cfg, const char *args, struct ina_port **out)
{
	static unsigned pool_seq;
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	struct dpdk_port *dp;
	uint16_t pid = (uint16_t)cfg->port_id;
	char pool_name[RTE_MEMPOOL_NAMESIZE];
	unsigned cache;
	int socket, ret;

	*out = NULL;
	if (!eal_up || !rte_eth_dev_is_valid_port(pid)) {
		INA_LOG(ERR, "dpdk port '%s': no ethdev %u", args, pid);
		return -ENODEV;
	}
	dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	dp->port.ops = &ina_port_dpdk_ops;
	dp->port_id = pid;
	dp->ip_be = cfg->ip_be;
	dp->udp_be = rte_cpu_to_be_16((uint16_t)cfg->udp);
	snprintf(dp->name, sizeof(dp->name), "%u", pid);

	socket = rte_eth_dev_socket_id(pid);
	if (socket < 0)
		socket = (int)rte_socket_id();
	cache = cfg->nb_mbufs >= 2048 ? 256 : 0;
	snprintf(pool_name, sizeof(pool_name), "ina_p%u_%u", pid, pool_seq++);
	dp->pool.mp = rte_pktmbuf_pool_create(pool_name, (unsigned)cfg->nb_mbufs, cache,
					      DPDK_PRIV_SIZE, RTE_MBUF_DEFAULT_BUF_SIZE, socket);
	if (!dp->pool.mp) {
		ret = rte_errno ? -rte_errno : -ENOMEM;
		INA_LOG(ERR, "dpdk port %s: cannot create %u mbufs: %s", dp->name,
			(unsigned)cfg->nb_mbufs, rte_strerror(-ret));
		goto err;
	}
	dp->pool.pool.ops = &dpdk_pool_ops;
	dp->pool.pool.buf_size = DPDK_MAX_PKT;
	_Static_assert(RTE_MBUF_DEFAULT_DATAROOM >= DPDK_HDR_SIZE + DPDK_MAX_PKT, "room");
	dp->port.pool = &dp->pool.pool;
	dp->port.max_pkt = DPDK_MAX_PKT;

	ret = rte_eth_dev_info_get(pid, &info);
	if (ret < 0)
		goto err_log;
	memset(&conf, 0, sizeof(conf));
	ret = rte_eth_dev_configure(pid, 1, 1, &conf);
	if (ret < 0)
		goto err_log;
	ret = rte_eth_rx_queue_setup(pid, 0, DPDK_NB_DESC, (unsigned)socket, NULL, dp->pool.mp);
	if (ret < 0)
		goto err_log;
	ret = rte_eth_tx_queue_setup(pid, 0, DPDK_NB_DESC, (unsigned)socket, NULL);
	if (ret < 0)
		goto err_log;
	ret = rte_eth_dev_start(pid);
	if (ret < 0)
		goto err_log;
	dp->started = 1;
	ret = rte_eth_macaddr_get(pid, &dp->mac);
	if (ret < 0)
		goto err_log;
	INA_LOG(DEBUG, "dpdk port %s: open, %u mbufs", dp->name, (unsigned)cfg->nb_mbufs);
	*out = &dp->port;
	return 0;

err_log:
	INA_LOG(ERR, "dpdk port %s: setup failed: %s", dp->name, rte_strerror(-ret));
err:
	dpdk_close(&dp->port);
	return ret;
}

int
ina_port_dpdk_open_id(uint16_t port_id, const char *args, struct ina_port **out)
{
	struct dpdk_config cfg;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!args)
		args = "";
	ret = dpdk_config_parse(args, &cfg);
	if (ret < 0)
		return ret;
	cfg.port_id = port_id;
	return dpdk_open_cfg(&cfg, args, out);
}

static int
dpdk_open(struct ina_port **out, const char *args)
{
	struct dpdk_config cfg;
	int ret;

	*out = NULL;
	if (!args)
		args = "";
	ret = dpdk_config_parse(args, &cfg);
	if (ret < 0)
		return ret;
	if (!cfg.has_port) {
		INA_LOG(ERR, "dpdk port '%s': needs port=ID", args);
		return -EINVAL;
	}
	return dpdk_open_cfg(&cfg, args, out);
}

unsigned
ina_port_dpdk_pool_avail(const struct ina_port *port)
{
	const struct dpdk_port *dp = (const struct dpdk_port *)(const void *)port;

	return rte_mempool_avail_count(dp->pool.mp);
}

const struct ina_port_ops ina_port_dpdk_ops = {
	.type = "dpdk",
	.open = dpdk_open,
	.rx_burst = dpdk_rx_burst,
	.tx_burst = dpdk_tx_burst,
	.wait = dpdk_wait,
	.resolve = dpdk_resolve,
	.peer_str = dpdk_peer_str,
	.close = dpdk_close,
};
