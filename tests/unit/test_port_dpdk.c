/* SPDX-License-Identifier: MIT */
/*
 * The dpdk port over ring ethdevs wired back to back in one process
 * (rte_eth_from_rings, EAL without hugepages or PCI): payload and peers
 * survive the trip; malformed frames are counted; ARP requests are answered
 * and resolve() learns a MAC by ARP (or gives up in bounded time); ping is
 * answered with right checksums; fan-out to 3 destinations with and without
 * zero-copy; one port over 3 ethdevs replies out the ethdev a peer came in
 * on; drop= injection; too few mbufs; queues (also two threads at once);
 * jumbo frames (mtu=9000); link state; csum= (a UDP checksum of 0 is sent and
 * accepted only where told so, a wrong one dropped and counted); no mbuf leaks.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rte_arp.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_udp.h>

#include "ina/port_dpdk.h"
#include "ina/util.h"

/* Why the last port open failed (the ops' and open_id's error buffer). */
static char open_err[320];
#define OPEN_ERR open_err, sizeof(open_err)

#define MAX_RINGS 32

struct fixture {
	struct rte_ring *rings[MAX_RINGS];
	unsigned nb_rings;
	struct rte_ring *r_ab, *r_ba; /* A -> B, B -> A */
	struct rte_ring *r_cd;	      /* C -> D */
	uint16_t id_a, id_b, id_c, id_d;
	struct ina_port *a, *b, *c, *d;
	char addr_a[64], addr_b[64], addr_d[64]; /* "MAC@IP:PORT" */
	unsigned avail_a, avail_b, avail_c, avail_d;
	struct rte_mempool *raw; /* frames the test writes by hand */
};

static struct fixture fx;

static struct rte_ring *
ring(const char *name)
{
	struct rte_ring *r = rte_ring_create(name, 1024, (int)rte_socket_id(),
					     RING_F_SP_ENQ | RING_F_SC_DEQ);

	if (r && fx.nb_rings < MAX_RINGS)
		fx.rings[fx.nb_rings++] = r;
	return r;
}

/* Two ethdevs wired back to back: a's tx is b's rx and the other way. */
static int
pair(const char *na, const char *nb, struct rte_ring **ab, struct rte_ring **ba, uint16_t *ia,
     uint16_t *ib)
{
	char n1[32], n2[32];
	int ret;

	snprintf(n1, sizeof(n1), "%s_%s", na, nb);
	snprintf(n2, sizeof(n2), "%s_%s", nb, na);
	*ab = ring(n1);
	*ba = ring(n2);
	if (!*ab || !*ba)
		return -1;
	ret = rte_eth_from_rings(na, ba, 1, ab, 1, rte_socket_id());
	if (ret < 0)
		return -1;
	*ia = (uint16_t)ret;
	ret = rte_eth_from_rings(nb, ab, 1, ba, 1, rte_socket_id());
	if (ret < 0)
		return -1;
	*ib = (uint16_t)ret;
	return 0;
}

static void
addr_of(struct ina_port *p, unsigned eth, char *buf, size_t size, const char *ip_port)
{
	uint8_t m[6];

	assert_int_equal(ina_port_dpdk_mac(p, eth, m), 0);
	snprintf(buf, size, "%02x:%02x:%02x:%02x:%02x:%02x@%s", m[0], m[1], m[2], m[3], m[4], m[5],
		 ip_port);
}

static int
group_setup(void **state)
{
	char *argv[] = { "test_port_dpdk",   "--no-huge", "--no-pci", "--no-shconf",
			 "--no-telemetry",   "-m",	  "512",      "--lcores=0@(0-1)",
			 "--log-level=error" };
	int argc = (int)(sizeof(argv) / sizeof(argv[0]));
	struct rte_ring *r_dc;
	char err[256];
	int ret;

	(void)state;
	ret = ina_dpdk_eal_init(argc, argv, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	if (pair("t_a", "t_b", &fx.r_ab, &fx.r_ba, &fx.id_a, &fx.id_b) < 0 ||
	    pair("t_c", "t_d", &fx.r_cd, &r_dc, &fx.id_c, &fx.id_d) < 0)
		return -1;
	fx.raw = rte_pktmbuf_pool_create("t_raw", 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					 (int)rte_socket_id());
	if (!fx.raw)
		return -1;
	if (ina_port_dpdk_open_id(fx.id_a, "ip=10.0.0.1,mbufs=2047", &fx.a, OPEN_ERR) < 0 ||
	    ina_port_dpdk_open_id(fx.id_b, "ip=10.0.0.2,udp=9150,mbufs=1023,rxd=256,txd=256", &fx.b,
				  OPEN_ERR) < 0 ||
	    ina_port_dpdk_open_id(fx.id_c, "ip=10.0.1.1,zerocopy=0,mbufs=2047", &fx.c, OPEN_ERR) <
		    0 ||
	    ina_port_dpdk_open_id(fx.id_d, "ip=10.0.1.2,mbufs=2047", &fx.d, OPEN_ERR) < 0)
		return -1;
	fx.avail_a = ina_port_dpdk_pool_avail(fx.a);
	fx.avail_b = ina_port_dpdk_pool_avail(fx.b);
	fx.avail_c = ina_port_dpdk_pool_avail(fx.c);
	fx.avail_d = ina_port_dpdk_pool_avail(fx.d);
	return 0;
}

static int
group_teardown(void **state)
{
	uint16_t id;

	(void)state;
	ina_port_close(fx.a);
	ina_port_close(fx.b);
	ina_port_close(fx.c);
	ina_port_close(fx.d);
	RTE_ETH_FOREACH_DEV(id)
	rte_eth_dev_close(id);
	for (unsigned i = 0; i < fx.nb_rings; i++)
		rte_ring_free(fx.rings[i]);
	rte_mempool_free(fx.raw);
	ina_dpdk_eal_cleanup();
	return 0;
}

static void
fill(struct ina_pkt *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p->data[i] = (uint8_t)(seed + i * 7);
	p->len = len;
}

static void
check(const struct ina_pkt *p, uint32_t len, uint8_t seed)
{
	assert_int_equal(p->len, len);
	for (uint32_t i = 0; i < len; i++)
		assert_int_equal(p->data[i], (uint8_t)(seed + i * 7));
}

static struct ina_pkt *
make(struct ina_port *port, const char *dst, uint32_t len, uint8_t seed)
{
	struct ina_pkt *p = ina_pkt_alloc(port->pool);

	assert_non_null(p);
	assert_true(p->cap >= len);
	fill(p, len, seed);
	if (dst)
		assert_int_equal(ina_port_resolve(port, dst, &p->peer), 0);
	return p;
}

/* Frees whatever a port receives. */
static unsigned
drain(struct ina_port *p)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	unsigned got = 0;
	uint16_t nb;

	while ((nb = ina_port_rx_burst(p, pkts, INA_MAX_BURST)) > 0) {
		got += nb;
		ina_pkt_free_bulk(pkts, nb);
	}
	return got;
}

static struct ina_port_dpdk_neigh_stats
nstats(struct ina_port *p)
{
	struct ina_port_dpdk_neigh_stats st;

	ina_port_dpdk_neigh_stats(p, &st);
	return st;
}

/* The port's xstats are its neighbour counters, each once, by name. */
static void
check_xstats(const struct ina_port *p)
{
	struct ina_port_dpdk_neigh_stats st = nstats((struct ina_port *)(uintptr_t)p);
	struct ina_port_xstat xs[16];
	const struct {
		const char *name;
		uint64_t v;
	} want[] = {
		{ "port_arp_rx", st.arp_rx },
		{ "port_arp_reply_tx", st.arp_reply_tx },
		{ "port_arp_request_tx", st.arp_request_tx },
		{ "port_arp_learned", st.arp_learned },
		{ "port_icmp_echo", st.icmp_echo },
		{ "port_not_ip", st.not_ip },
		{ "port_not_ours", st.not_ours },
		{ "port_malformed", st.malformed },
		{ "port_link_down", st.link_down },
		{ "port_csum_partial", st.csum_partial },
	};
	unsigned n = ina_port_xstats(p, xs, 16);

	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	assert_int_equal(n * sizeof(uint64_t), sizeof(st));
	for (unsigned i = 0; i < n; i++) {
		assert_string_equal(xs[i].name, want[i].name);
		assert_int_equal(xs[i].value, want[i].v);
	}
	assert_true(st.malformed > 0 && st.not_ours > 0);
	assert_int_equal(ina_port_xstats(p, xs, 2), n); /* fewer asked: the count */
}

/* A raw frame of 'len' bytes from the test's pool. */
static struct rte_mbuf *
raw_frame(const void *bytes, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(fx.raw);
	char *d;

	assert_non_null(m);
	d = rte_pktmbuf_append(m, len);
	assert_non_null(d);
	memcpy(d, bytes, len);
	return m;
}

static void
test_resolve_forms(void **state)
{
	struct ina_peer peer;
	char buf[96];

	(void)state;
	addr_of(fx.a, 0, fx.addr_a, sizeof(fx.addr_a), "10.0.0.1:9150");
	addr_of(fx.b, 0, fx.addr_b, sizeof(fx.addr_b), "10.0.0.2:9150");
	addr_of(fx.d, 0, fx.addr_d, sizeof(fx.addr_d), "10.0.1.2:9150");
	/* Ring ethdevs have no MAC: a locally administered one from the id. */
	snprintf(buf, sizeof(buf), "02:69:6e:61:00:%02x@10.0.0.2:9150", fx.id_b);
	assert_string_equal(fx.addr_b, buf);
	assert_int_equal(ina_port_resolve(fx.a, "02:00:00:00:00:02@10.0.0.2:9150", &peer), 0);
	assert_true(peer.len > 0 && peer.len <= INA_PEER_SIZE - 1);
	assert_string_equal(ina_port_peer_str(fx.a, &peer, buf, sizeof(buf)),
			    "02:00:00:00:00:02@10.0.0.2:9150");
	assert_int_equal(ina_port_resolve(fx.a, "02:00:00:00:00@10.0.0.2:9150", &peer), -EINVAL);
	assert_int_equal(ina_port_resolve(fx.a, "02:00:00:00:00:02@10.0.0.300:9150", &peer),
			 -EINVAL);
	assert_int_equal(ina_port_resolve(fx.a, "02:00:00:00:00:02@10.0.0.2:0", &peer), -EINVAL);
	assert_int_equal(ina_port_resolve(fx.a, "10.0.0.2", &peer), -EINVAL);
	assert_int_equal(ina_port_resolve(fx.a, "10.0.0.2:x", &peer), -EINVAL);
}

static void
test_send_recv(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	static const uint32_t lens[] = { 1, 64, 1000, 1472 };
	struct ina_peer from_a;
	uint16_t nb;

	(void)state;
	for (unsigned i = 0; i < 4; i++)
		pkts[i] = make(fx.a, fx.addr_b, lens[i], (uint8_t)i);
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 4), 4);
	assert_int_equal(fx.a->stats.tx_pkts, 4);
	assert_int_equal(fx.a->stats.tx_drop, 0);

	assert_int_equal(ina_port_resolve(fx.b, fx.addr_a, &from_a), 0);
	nb = ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST);
	assert_int_equal(nb, 4);
	for (unsigned i = 0; i < 4; i++) {
		check(pkts[i], lens[i], (uint8_t)i);
		assert_true(ina_peer_equal(&pkts[i]->peer, &from_a));
	}
	assert_int_equal(fx.b->stats.rx_drop, 0);

	/* Reply to the received peer, reusing the packets (B -> A). */
	for (unsigned i = 0; i < 4; i++)
		pkts[i]->dsts = NULL;
	assert_int_equal(ina_port_tx_burst(fx.b, pkts, 4), 4);
	nb = ina_port_rx_burst(fx.a, pkts, INA_MAX_BURST);
	assert_int_equal(nb, 4);
	for (unsigned i = 0; i < 4; i++)
		check(pkts[i], lens[i], (uint8_t)i);
	ina_pkt_free_bulk(pkts, nb);
	/* Too big: dropped on tx. */
	pkts[0] = make(fx.a, fx.addr_b, 0, 0);
	pkts[0]->len = 1473;
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 1), 0);
	assert_int_equal(fx.a->stats.tx_drop, 1);
	fx.a->stats.tx_drop = 0;
}

/* Sends one good packet A -> B, lets 'edit' change its frame in the ring,
 * and checks that B drops it and counts it. */
static void
bad_one(void (*edit)(struct rte_mbuf *), uint64_t *counter)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct rte_mbuf *m = NULL;
	uint64_t drop0 = fx.b->stats.rx_drop;
	uint64_t c0 = *counter;

	pkts[0] = make(fx.a, fx.addr_b, 100, 9);
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 1), 1);
	assert_int_equal(rte_ring_dequeue(fx.r_ab, (void **)&m), 0);
	edit(m);
	assert_int_equal(rte_ring_enqueue(fx.r_ab, m), 0);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 0);
	assert_int_equal(fx.b->stats.rx_drop, drop0 + 1);
	(void)c0;
}

static uint8_t *
fr(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, uint8_t *);
}

static void
ip_resum(struct rte_mbuf *m)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(fr(m) + 14);

	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
}

static void
ed_payload(struct rte_mbuf *m)
{
	fr(m)[42 + 50] ^= 0x10;
}
static void
ed_ttl(struct rte_mbuf *m)
{
	fr(m)[14 + 8] ^= 0x01;
}
static void
ed_ipv6(struct rte_mbuf *m)
{
	fr(m)[12] = 0x86;
	fr(m)[13] = 0xdd;
}
static void
ed_ihl(struct rte_mbuf *m)
{
	fr(m)[14] = 0x44;
	ip_resum(m);
}
static void
ed_total(struct rte_mbuf *m)
{
	fr(m)[16] = 0x7f;
	ip_resum(m);
}
static void
ed_frag(struct rte_mbuf *m)
{
	fr(m)[14 + 6] = 0x20;
	ip_resum(m);
}
static void
ed_short(struct rte_mbuf *m)
{
	m->data_len = 10;
	m->pkt_len = 10;
}
static void
ed_udplen(struct rte_mbuf *m)
{
	fr(m)[14 + 20 + 4] = 0xff;
}
static void
ed_proto(struct rte_mbuf *m)
{
	fr(m)[14 + 9] = 6;
	ip_resum(m);
}

/* A partial UDP checksum (pseudo-header sum only), as a local kernel leaves
 * it on veth: accepted on af_packet/af_xdp/tap only, so dropped on a ring. */
static void
ed_partial(struct rte_mbuf *m)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(fr(m) + 14);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	udp->dgram_cksum = rte_ipv4_phdr_cksum(ip, 0);
}

static void
test_bad_frames(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct ina_port_dpdk_neigh_stats st0 = nstats(fx.b), st;
	uint64_t drop0 = fx.b->stats.rx_drop;
	uint64_t dummy = 0;
	char wrong[64];

	(void)state;
	bad_one(ed_payload, &dummy); /* UDP checksum */
	bad_one(ed_ttl, &dummy);     /* IPv4 header checksum */
	bad_one(ed_ihl, &dummy);     /* IHL 4 */
	bad_one(ed_total, &dummy);   /* total length past the frame */
	bad_one(ed_frag, &dummy);    /* more fragments */
	bad_one(ed_short, &dummy);   /* shorter than Ethernet */
	bad_one(ed_udplen, &dummy);  /* UDP length past IPv4 */
	bad_one(ed_partial, &dummy); /* partial UDP checksum */
	st = nstats(fx.b);
	assert_int_equal(st.malformed - st0.malformed, 8);
	assert_int_equal(st.csum_partial, 0);
	bad_one(ed_ipv6, &dummy);  /* not IPv4 */
	bad_one(ed_proto, &dummy); /* TCP */
	st = nstats(fx.b);
	assert_int_equal(st.not_ip - st0.not_ip, 1);
	assert_int_equal(st.not_ours - st0.not_ours, 1);

	/* Wrong UDP port, and wrong IP. */
	addr_of(fx.b, 0, wrong, sizeof(wrong), "10.0.0.2:9999");
	pkts[0] = make(fx.a, wrong, 100, 9);
	addr_of(fx.b, 0, wrong, sizeof(wrong), "10.0.0.3:9150");
	pkts[1] = make(fx.a, wrong, 100, 9);
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 2), 2);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 0);
	assert_int_equal(fx.b->stats.rx_drop, drop0 + 12);
	assert_int_equal(nstats(fx.b).not_ours - st0.not_ours, 3);

	/* A good one still passes afterwards. */
	pkts[0] = make(fx.a, fx.addr_b, 100, 9);
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 1), 1);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 1);
	check(pkts[0], 100, 9);
	ina_pkt_free(pkts[0]);
	check_xstats(fx.b);
}

/* An ARP request for B's address: B answers it and learns the sender. */
static void
test_arp_reply(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	uint8_t req[60] = { 0 }, mac_b[6];
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)req;
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eh + 1);
	const uint8_t asker[6] = { 0x02, 0, 0, 0, 0, 0x33 };
	struct ina_port_dpdk_neigh_stats st0 = nstats(fx.b), st;
	struct rte_mbuf *m = NULL;
	struct ina_peer peer;
	uint64_t drop0 = fx.b->stats.rx_drop;

	(void)state;
	assert_int_equal(ina_port_dpdk_mac(fx.b, 0, mac_b), 0);
	memset(eh->dst_addr.addr_bytes, 0xff, 6);
	memcpy(eh->src_addr.addr_bytes, asker, 6);
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = 6;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	memcpy(arp->arp_data.arp_sha.addr_bytes, asker, 6);
	arp->arp_data.arp_sip = rte_cpu_to_be_32(0x0a000063); /* 10.0.0.99 */
	arp->arp_data.arp_tip = rte_cpu_to_be_32(0x0a000002); /* 10.0.0.2 */
	assert_int_equal(rte_ring_enqueue(fx.r_ab, raw_frame(req, sizeof(req))), 0);
	/* And one for somebody else: consumed, not answered. */
	arp->arp_data.arp_tip = rte_cpu_to_be_32(0x0a000009);
	assert_int_equal(rte_ring_enqueue(fx.r_ab, raw_frame(req, sizeof(req))), 0);

	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 0);
	assert_int_equal(rte_ring_count(fx.r_ba), 1);
	assert_int_equal(rte_ring_dequeue(fx.r_ba, (void **)&m), 0);
	eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	arp = (struct rte_arp_hdr *)(eh + 1);
	assert_memory_equal(eh->dst_addr.addr_bytes, asker, 6);
	assert_memory_equal(eh->src_addr.addr_bytes, mac_b, 6);
	assert_int_equal(rte_be_to_cpu_16(arp->arp_opcode), RTE_ARP_OP_REPLY);
	assert_memory_equal(arp->arp_data.arp_sha.addr_bytes, mac_b, 6);
	assert_int_equal(arp->arp_data.arp_sip, rte_cpu_to_be_32(0x0a000002));
	assert_memory_equal(arp->arp_data.arp_tha.addr_bytes, asker, 6);
	assert_int_equal(arp->arp_data.arp_tip, rte_cpu_to_be_32(0x0a000063));
	rte_pktmbuf_free(m);

	st = nstats(fx.b);
	assert_int_equal(st.arp_rx - st0.arp_rx, 2);
	assert_int_equal(st.arp_reply_tx - st0.arp_reply_tx, 1);
	assert_int_equal(st.arp_learned - st0.arp_learned, 1);
	assert_int_equal(fx.b->stats.rx_drop, drop0);
	/* Learned: "IP:PORT" resolves without asking. */
	assert_int_equal(ina_port_resolve(fx.b, "10.0.0.99:9150", &peer), 0);
	assert_memory_equal(peer.bytes, asker, 6);
	assert_int_equal(nstats(fx.b).arp_request_tx, st0.arp_request_tx);
}

/* An ICMP echo request to B comes back as a reply with right checksums. */
static void
test_icmp_echo(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	uint8_t f[14 + 20 + 8 + 56] = { 0 }, mac_b[6];
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)f;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 1);
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)(ip + 1);
	const uint8_t pinger[6] = { 0x02, 0, 0, 0, 0, 0x44 };
	struct ina_port_dpdk_neigh_stats st0 = nstats(fx.b);
	struct rte_mbuf *m = NULL;
	uint8_t *data = (uint8_t *)(icmp + 1);

	(void)state;
	assert_int_equal(ina_port_dpdk_mac(fx.b, 0, mac_b), 0);
	memcpy(eh->dst_addr.addr_bytes, mac_b, 6);
	memcpy(eh->src_addr.addr_bytes, pinger, 6);
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(20 + 8 + 56);
	ip->time_to_live = 5;
	ip->next_proto_id = IPPROTO_ICMP;
	ip->src_addr = rte_cpu_to_be_32(0x0a000063);
	ip->dst_addr = rte_cpu_to_be_32(0x0a000002);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	icmp->icmp_type = RTE_IP_ICMP_ECHO_REQUEST;
	icmp->icmp_ident = rte_cpu_to_be_16(0x1234);
	icmp->icmp_seq_nb = rte_cpu_to_be_16(7);
	for (int i = 0; i < 56; i++)
		data[i] = (uint8_t)(i * 3);
	icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(icmp, 8 + 56);
	assert_int_equal(rte_ring_enqueue(fx.r_ab, raw_frame(f, sizeof(f))), 0);

	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 0);
	assert_int_equal(rte_ring_dequeue(fx.r_ba, (void **)&m), 0);
	assert_int_equal(rte_pktmbuf_pkt_len(m), sizeof(f));
	eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	ip = (struct rte_ipv4_hdr *)(eh + 1);
	icmp = (struct rte_icmp_hdr *)(ip + 1);
	assert_memory_equal(eh->dst_addr.addr_bytes, pinger, 6);
	assert_memory_equal(eh->src_addr.addr_bytes, mac_b, 6);
	assert_int_equal(ip->src_addr, rte_cpu_to_be_32(0x0a000002));
	assert_int_equal(ip->dst_addr, rte_cpu_to_be_32(0x0a000063));
	assert_int_equal(rte_raw_cksum(ip, 20), 0xffff);
	assert_int_equal(icmp->icmp_type, RTE_IP_ICMP_ECHO_REPLY);
	assert_int_equal(rte_raw_cksum(icmp, 8 + 56), 0xffff);
	assert_int_equal(icmp->icmp_ident, rte_cpu_to_be_16(0x1234));
	assert_int_equal(icmp->icmp_seq_nb, rte_cpu_to_be_16(7));
	assert_memory_equal(icmp + 1, f + 42, 56);
	rte_pktmbuf_free(m);
	assert_int_equal(nstats(fx.b).icmp_echo - st0.icmp_echo, 1);

	/* A bad ICMP checksum: dropped, no reply. */
	f[42] ^= 1;
	assert_int_equal(rte_ring_enqueue(fx.r_ab, raw_frame(f, sizeof(f))), 0);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 0);
	assert_int_equal(rte_ring_count(fx.r_ba), 0);
	assert_int_equal(nstats(fx.b).icmp_echo - st0.icmp_echo, 1);
}

static volatile int poll_stop;

/* B's loop on another thread: it answers ARP while A resolves. */
static void *
poll_b(void *arg)
{
	struct ina_port *b = arg;

	while (!poll_stop) {
		struct ina_pkt *pkts[INA_MAX_BURST];
		uint16_t nb = ina_port_rx_burst(b, pkts, INA_MAX_BURST);

		ina_pkt_free_bulk(pkts, nb);
		if (!nb)
			ina_port_wait(b, 20000);
	}
	return NULL;
}

static void
test_resolve_arp(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct ina_peer peer, want;
	pthread_t t;

	(void)state;
	poll_stop = 0;
	assert_int_equal(pthread_create(&t, NULL, poll_b, fx.b), 0);
	assert_int_equal(ina_port_resolve(fx.a, "10.0.0.2:9150", &peer), 0);
	poll_stop = 1;
	pthread_join(t, NULL);
	assert_int_equal(ina_port_resolve(fx.a, fx.addr_b, &want), 0);
	assert_true(ina_peer_equal(&peer, &want));
	assert_true(nstats(fx.a).arp_request_tx >= 1);
	assert_int_equal(nstats(fx.a).arp_learned, 1);

	/* And a packet to the resolved peer arrives. */
	pkts[0] = make(fx.a, NULL, 64, 5);
	pkts[0]->peer = peer;
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 1), 1);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 1);
	check(pkts[0], 64, 5);
	ina_pkt_free(pkts[0]);
}

static void
test_resolve_silence(void **state)
{
	struct ina_port_dpdk_neigh_stats st0 = nstats(fx.a);
	struct ina_peer peer;
	uint64_t t0 = ina_now_ns(), dt;

	(void)state;
	assert_int_equal(ina_port_resolve(fx.a, "10.0.0.77:9150", &peer), -EHOSTUNREACH);
	dt = ina_now_ns() - t0;
	assert_true(dt >= 1000 * INA_NS_PER_MS && dt < 5000 * INA_NS_PER_MS);
	assert_int_equal(nstats(fx.a).arp_request_tx - st0.arp_request_tx, 5);
	/* B sees 5 requests that are not for it. */
	assert_int_equal(rte_ring_count(fx.r_ab), 5);
	assert_int_equal(drain(fx.b), 0);
	assert_int_equal(rte_ring_count(fx.r_ba), 0);
}

/* One result to 3 destinations: one frame each, the same payload, right
 * checksums (the receiver verifies them); a chain of header + shared payload
 * with zerocopy=1, a copy each with zerocopy=0. */
static void
fanout(struct ina_port *tx, struct ina_port *rx, struct rte_ring *r, const char *addr_rx,
       int chained)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct ina_peer dsts[4];
	struct rte_mbuf *frames[3];
	uint64_t tx0 = tx->stats.tx_pkts;
	char other[64];

	/* Same IP and port as rx, other MACs: rx accepts them all. */
	assert_int_equal(ina_port_resolve(tx, addr_rx, &dsts[0]), 0);
	assert_int_equal(ina_port_resolve(tx, "02:00:00:00:00:09@10.0.0.9:9150", &dsts[1]), 0);
	snprintf(other, sizeof(other), "02:00:00:00:00:07%s", strchr(addr_rx, '@'));
	assert_int_equal(ina_port_resolve(tx, other, &dsts[2]), 0);
	snprintf(other, sizeof(other), "02:00:00:00:00:05%s", strchr(addr_rx, '@'));
	assert_int_equal(ina_port_resolve(tx, other, &dsts[3]), 0);

	pkts[0] = make(tx, NULL, 1000, 42);
	pkts[0]->dsts = dsts;
	pkts[0]->dst_mask = 0xd; /* dsts[0], [2], [3] */
	assert_int_equal(ina_port_tx_burst(tx, pkts, 1), 1);
	assert_int_equal(tx->stats.tx_pkts, tx0 + 3);
	assert_int_equal(rte_ring_count(r), 3);

	assert_int_equal(rte_ring_dequeue_bulk(r, (void **)frames, 3, NULL), 3);
	for (int i = 0; i < 3; i++) {
		struct rte_mbuf *m = frames[i];
		const uint8_t *eth = rte_pktmbuf_mtod(m, const uint8_t *);
		static const uint8_t last[3] = { 0, 0x07, 0x05 };

		assert_int_equal(m->nb_segs, chained ? 2 : 1);
		assert_int_equal(rte_pktmbuf_pkt_len(m), 42 + 1000);
		if (i > 0)
			assert_int_equal(eth[5], last[i]);
		if (chained) {
			assert_int_equal(rte_pktmbuf_data_len(m), 42);
			assert_ptr_equal(m->next, frames[0]->next); /* one payload */
			assert_int_equal(rte_mbuf_refcnt_read(m->next), 3);
		}
	}
	assert_int_equal(rte_ring_enqueue_bulk(r, (void **)frames, 3, NULL), 3);
	assert_int_equal(ina_port_rx_burst(rx, pkts, INA_MAX_BURST), 3);
	for (int i = 0; i < 3; i++)
		check(pkts[i], 1000, 42);
	ina_pkt_free_bulk(pkts, 3);

	/* An empty mask sends nothing. */
	pkts[0] = make(tx, NULL, 10, 1);
	pkts[0]->dsts = dsts;
	pkts[0]->dst_mask = 0;
	assert_int_equal(ina_port_tx_burst(tx, pkts, 1), 0);
	assert_int_equal(rte_ring_count(r), 0);
	tx->stats.tx_drop = 0;
}

static void
test_fanout_zerocopy(void **state)
{
	(void)state;
	fanout(fx.a, fx.b, fx.r_ab, fx.addr_b, 1);
	assert_int_equal(ina_port_dpdk_pool_avail(fx.a), fx.avail_a);
	assert_int_equal(ina_port_dpdk_pool_avail(fx.b), fx.avail_b);
}

static void
test_fanout_copy(void **state)
{
	(void)state;
	fanout(fx.c, fx.d, fx.r_cd, fx.addr_d, 0);
	assert_int_equal(ina_port_dpdk_pool_avail(fx.c), fx.avail_c);
	assert_int_equal(ina_port_dpdk_pool_avail(fx.d), fx.avail_d);
}

static void
test_burst_many(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	unsigned got = 0;

	(void)state;
	for (unsigned round = 0; round < 20; round++) {
		for (unsigned i = 0; i < INA_MAX_BURST; i++)
			pkts[i] = make(fx.a, fx.addr_b, 200, (uint8_t)(round + i));
		assert_int_equal(ina_port_tx_burst(fx.a, pkts, INA_MAX_BURST), INA_MAX_BURST);
		for (;;) {
			uint16_t nb = ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST);

			if (!nb)
				break;
			for (uint16_t i = 0; i < nb; i++)
				check(pkts[i], 200, (uint8_t)(round + i));
			got += nb;
			ina_pkt_free_bulk(pkts, nb);
		}
	}
	assert_int_equal(got, 20 * INA_MAX_BURST);
}

/* A full ring: bounded retries, then the frames are freed and counted. */
static void
test_tx_full(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	uint64_t drop0 = fx.a->stats.tx_drop;
	unsigned sent = 0, got = 0;
	uint16_t nb;

	(void)state;
	for (unsigned round = 0; round < 40; round++) {
		for (unsigned i = 0; i < INA_MAX_BURST; i++)
			pkts[i] = make(fx.a, fx.addr_b, 64, 3);
		sent += ina_port_tx_burst(fx.a, pkts, INA_MAX_BURST);
	}
	/* A ring of 1024 holds 1023 entries. */
	assert_int_equal(sent, rte_ring_count(fx.r_ab));
	assert_true(sent >= 1000 && sent < 40 * INA_MAX_BURST);
	assert_int_equal(fx.a->stats.tx_drop - drop0, 40 * INA_MAX_BURST - sent);
	while ((nb = ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST)) > 0) {
		for (uint16_t i = 0; i < nb; i++)
			check(pkts[i], 64, 3);
		got += nb;
		ina_pkt_free_bulk(pkts, nb);
	}
	assert_int_equal(got, sent);
}

/* drop=RATE on rx: about RATE of the packets, counted in inject_drop. */
static void
test_drop_injection(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	unsigned got = 0;

	(void)state;
	ina_port_close(fx.b);
	assert_int_equal(ina_port_dpdk_open_id(fx.id_b, "ip=10.0.0.2,drop=0.25,seed=7,mbufs=2047",
					       &fx.b, OPEN_ERR),
			 0);
	for (unsigned round = 0; round < 25; round++) {
		for (unsigned i = 0; i < 40; i++)
			pkts[i % INA_MAX_BURST] = make(fx.a, fx.addr_b, 64, 1),
				 (void)((i % INA_MAX_BURST == INA_MAX_BURST - 1) &&
					ina_port_tx_burst(fx.a, pkts, INA_MAX_BURST));
		assert_int_equal(ina_port_tx_burst(fx.a, pkts, 40 - INA_MAX_BURST),
				 40 - INA_MAX_BURST);
		got += drain(fx.b);
	}
	assert_int_equal(got + fx.b->stats.inject_drop, 1000);
	assert_true(fx.b->stats.inject_drop > 180 && fx.b->stats.inject_drop < 320);
	assert_int_equal(fx.b->stats.rx_drop, 0);
	ina_port_close(fx.b);
	assert_int_equal(ina_port_dpdk_open_id(fx.id_b, "ip=10.0.0.2,mbufs=1023,rxd=256,txd=256",
					       &fx.b, OPEN_ERR),
			 0);
	fx.avail_b = ina_port_dpdk_pool_avail(fx.b);
}

/* One port over 3 ethdevs, each wired to its own host port: rx polls them
 * all, ARP is answered out the ethdev asked on, a reply goes out the ethdev
 * its peer came in on, and a fan-out reaches every host. */
static void
test_multi_ethdev(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct rte_ring *to_h[3], *to_s[3];
	struct ina_port *s = NULL, *h[3], *p = NULL;
	struct ina_peer to_sw[3], from[3];
	uint16_t sid[3], hid[3];
	char name[16], args[64];
	unsigned got = 0;
	pthread_t t;
	int ret;

	(void)state;
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "m_th%d", i);
		to_h[i] = ring(name);
		snprintf(name, sizeof(name), "m_ts%d", i);
		to_s[i] = ring(name);
		assert_non_null(to_h[i]);
		assert_non_null(to_s[i]);
	}
	/* Switch side first, so its ethdev ids are one range. */
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "m_s%d", i);
		ret = rte_eth_from_rings(name, &to_s[i], 1, &to_h[i], 1, rte_socket_id());
		assert_true(ret >= 0);
		sid[i] = (uint16_t)ret;
	}
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "m_h%d", i);
		ret = rte_eth_from_rings(name, &to_h[i], 1, &to_s[i], 1, rte_socket_id());
		assert_true(ret >= 0);
		hid[i] = (uint16_t)ret;
		snprintf(args, sizeof(args), "ip=10.0.2.%d,mbufs=2047", 10 + i);
		assert_int_equal(ina_port_dpdk_open_id(hid[i], args, &h[i], OPEN_ERR), 0);
	}
	assert_int_equal(sid[2], sid[0] + 2);
	snprintf(args, sizeof(args), "port=%u-%u,ip=10.0.2.1,mbufs=4095", sid[0], sid[2]);
	assert_int_equal(ina_port_dpdk_ops.open(&s, args, OPEN_ERR), 0);
	assert_int_equal(ina_port_dpdk_nb_ethdevs(s), 3);
	/* A range with an ethdev of another port in it is refused. */
	snprintf(args, sizeof(args), "port=%u-%u", sid[2], hid[0]);
	assert_int_equal(ina_port_dpdk_ops.open(&p, args, OPEN_ERR), -EBUSY);
	assert_non_null(strstr(open_err, "already open"));
	assert_int_equal(ina_port_dpdk_open_id(hid[0], "ip=10.0.2.10,mbufs=2047", &p, OPEN_ERR),
			 -EBUSY);

	/* Each host finds the switch by ARP, on its own link. */
	poll_stop = 0;
	assert_int_equal(pthread_create(&t, NULL, poll_b, s), 0);
	for (int i = 0; i < 3; i++) {
		uint8_t mac[6];

		assert_int_equal(ina_port_resolve(h[i], "10.0.2.1:9150", &to_sw[i]), 0);
		assert_int_equal(ina_port_dpdk_mac(s, (unsigned)i, mac), 0);
		assert_memory_equal(to_sw[i].bytes, mac, 6);
	}
	poll_stop = 1;
	pthread_join(t, NULL);
	assert_int_equal(nstats(s).arp_reply_tx, 3);

	for (int i = 0; i < 3; i++) {
		for (int k = 0; k < 3; k++) {
			pkts[k] = make(h[i], NULL, 50, (uint8_t)(i * 16 + k));
			pkts[k]->peer = to_sw[i];
		}
		assert_int_equal(ina_port_tx_burst(h[i], pkts, 3), 3);
	}
	/* The switch polls every ethdev; it sends each packet back to its peer. */
	while (got < 9) {
		uint16_t nb = ina_port_rx_burst(s, pkts, INA_MAX_BURST);

		assert_true(nb > 0);
		for (uint16_t k = 0; k < nb; k++) {
			unsigned host = pkts[k]->data[0] / 16;

			assert_true(host < 3);
			from[host] = pkts[k]->peer;
			pkts[k]->dsts = NULL;
		}
		assert_int_equal(ina_port_tx_burst(s, pkts, nb), nb);
		got += nb;
	}
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ina_port_rx_burst(h[i], pkts, INA_MAX_BURST), 3);
		for (int k = 0; k < 3; k++)
			check(pkts[k], 50, (uint8_t)(i * 16 + k));
		ina_pkt_free_bulk(pkts, 3);
	}
	/* A fan-out to the three hosts, each on its own ethdev. */
	pkts[0] = make(s, NULL, 500, 99);
	pkts[0]->dsts = from;
	pkts[0]->dst_mask = 0x7;
	assert_int_equal(ina_port_tx_burst(s, pkts, 1), 1);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ina_port_rx_burst(h[i], pkts, INA_MAX_BURST), 1);
		check(pkts[0], 500, 99);
		ina_pkt_free(pkts[0]);
	}
	ina_port_close(s);
	for (int i = 0; i < 3; i++)
		ina_port_close(h[i]);
}

static void
test_options(void **state)
{
	const struct ina_port_ops *ops = &ina_port_dpdk_ops;
	struct ina_port *p = NULL;
	char err[256];

	(void)state;
	assert_int_equal(ops->open(&p, "ip=10.0.0.5", OPEN_ERR), -EINVAL); /* no port= */
	assert_int_equal(ops->open(&p, "port=0,ip=10.0.0.500", OPEN_ERR), -EINVAL);
	assert_int_equal(ops->open(&p, "port=0,udp=0", OPEN_ERR), -EINVAL);
	assert_int_equal(ops->open(&p, "port=0,mbufs=1", OPEN_ERR), -EINVAL);
	assert_int_equal(ops->open(&p, "port=0,bogus=1", OPEN_ERR), -EINVAL);
	assert_non_null(strstr(open_err, "unknown option"));
	assert_int_equal(ops->open(&p, "port=3-1", OPEN_ERR), -EINVAL);
	assert_int_equal(ops->open(&p, "port=0,queue=1", OPEN_ERR), -EINVAL);
	assert_int_equal(ops->open(&p, "port=0,zerocopy=2", OPEN_ERR), -EINVAL);
	assert_int_equal(ops->open(&p, "port=0,drop=1", OPEN_ERR), -EINVAL);
	assert_int_equal(ops->open(&p, "port=0,mtu=100", OPEN_ERR), -EINVAL);
	assert_int_equal(ops->open(&p, "port=0,mtu=9001", OPEN_ERR), -EINVAL);
	assert_int_equal(ops->open(&p, "port=31", OPEN_ERR), -ENODEV);
	assert_non_null(strstr(open_err, "no ethdev 31"));
	/* Taken by another port object. */
	assert_int_equal(ina_port_dpdk_open_id(fx.id_a, "", &p, OPEN_ERR), -EBUSY);
	assert_null(p);
	/* Registered, "dpdk:" specs reach the backend through ina_port_open. */
	assert_int_equal(ina_port_dpdk_register(), 0);
	assert_int_equal(ina_port_dpdk_register(), 0);
	assert_int_equal(ina_port_open("dpdk:port=31", &p, err, sizeof(err)), -ENODEV);
	assert_null(p);
	/* The backend's reason reaches the caller's buffer, after the spec. */
	assert_non_null(strstr(err, "cannot open port dpdk:port=31: "));
	assert_non_null(strstr(err, "no ethdev 31"));
	/* No buffer: the reason is dropped, the error stays. */
	assert_int_equal(ina_port_dpdk_open_id(fx.id_a, "", &p, NULL, 0), -EBUSY);
	assert_int_equal(ops->open(&p, "port=31", err, 1), -ENODEV);
	assert_int_equal(err[0], '\0');
}

/* The UDP checksum field of the frame at the head of ring 'r' (dequeued, then
 * put back), after 'edit' (NULL: none) ran on the frame. */
static uint16_t
csum_peek(struct rte_ring *r, void (*edit)(struct rte_mbuf *))
{
	struct rte_mbuf *m = NULL;
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;

	assert_int_equal(rte_ring_dequeue(r, (void **)&m), 0);
	ip = (struct rte_ipv4_hdr *)(fr(m) + 14);
	udp = (struct rte_udp_hdr *)(ip + 1);
	assert_int_equal(rte_raw_cksum(ip, 20), 0xffff); /* always set */
	if (edit)
		edit(m);
	assert_int_equal(rte_ring_enqueue(r, m), 0);
	return udp->dgram_cksum;
}

static void
ed_csum_right(struct rte_mbuf *m)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(fr(m) + 14);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
}

static void
ed_csum_wrong(struct rte_mbuf *m)
{
	ed_csum_right(m);
	fr(m)[42 + 3] ^= 0x40;
}

static void
ed_csum_zero(struct rte_mbuf *m)
{
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(fr(m) + 14 + 20);

	udp->dgram_cksum = 0;
}

/* Sends one packet p -> q, lets 'edit' change its frame on ring 'r', and
 * returns how many q received (checking the payload). */
static unsigned
csum_trip(struct ina_port *p, struct ina_port *q, const char *q_addr, struct rte_ring *r,
	  void (*edit)(struct rte_mbuf *), uint16_t *field)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	uint16_t nb;

	pkts[0] = make(p, q_addr, 333, 5);
	assert_int_equal(ina_port_tx_burst(p, pkts, 1), 1);
	*field = csum_peek(r, edit);
	nb = ina_port_rx_burst(q, pkts, INA_MAX_BURST);
	if (nb)
		check(pkts[0], 333, 5);
	ina_pkt_free_bulk(pkts, nb);
	return nb;
}

/*
 * csum=: a port told csum=off sends UDP checksum 0 and accepts 0, and still
 * verifies a checksum that is there; a port with csum on (the default off
 * memif) sends one and drops a datagram with 0, counted as a bad checksum.
 * corrupt= with csum=off is refused (nothing would catch the flipped bits).
 */
static void
test_csum(void **state)
{
	struct rte_ring *r1, *r2;
	struct ina_port *p = NULL, *q = NULL;
	char q_addr[64];
	uint16_t i1, i2, field;
	uint64_t bad0;

	(void)state;
	assert_int_equal(pair("cs_a", "cs_b", &r1, &r2, &i1, &i2), 0);
	assert_int_equal(ina_port_dpdk_open_id(i1, "ip=10.0.2.1,csum=maybe", &p, OPEN_ERR),
			 -EINVAL);
	assert_non_null(strstr(open_err, "auto, on or off"));
	assert_int_equal(ina_port_dpdk_open_id(i1, "ip=10.0.2.1,csum=off,corrupt=0.1", &p,
					       OPEN_ERR),
			 -EINVAL);
	assert_non_null(strstr(open_err, "corrupt="));
	assert_null(p);
	assert_int_equal(ina_port_dpdk_open_id(i1, "ip=10.0.2.1,mbufs=1500,csum=off", &p, OPEN_ERR),
			 0);
	assert_int_equal(ina_port_dpdk_open_id(i2, "ip=10.0.2.2,mbufs=1500,csum=off", &q, OPEN_ERR),
			 0);
	addr_of(q, 0, q_addr, sizeof(q_addr), "10.0.2.2:9150");

	/* off -> off: 0 on the wire, accepted; a right checksum too; a wrong
	 * one is dropped and counted. */
	bad0 = q->stats.rx_csum_bad;
	assert_int_equal(csum_trip(p, q, q_addr, r1, NULL, &field), 1);
	assert_int_equal(field, 0);
	assert_int_equal(csum_trip(p, q, q_addr, r1, ed_csum_right, &field), 1);
	assert_int_not_equal(field, 0);
	assert_int_equal(csum_trip(p, q, q_addr, r1, ed_csum_wrong, &field), 0);
	assert_int_equal(q->stats.rx_csum_bad, bad0 + 1);

	/* off -> on: 0 is a bad checksum there; a right one passes. */
	ina_port_close(q);
	q = NULL;
	assert_int_equal(ina_port_dpdk_open_id(i2, "ip=10.0.2.2,mbufs=1500,csum=on", &q, OPEN_ERR),
			 0);
	addr_of(q, 0, q_addr, sizeof(q_addr), "10.0.2.2:9150");
	bad0 = q->stats.rx_csum_bad;
	assert_int_equal(csum_trip(p, q, q_addr, r1, NULL, &field), 0);
	assert_int_equal(field, 0);
	assert_int_equal(q->stats.rx_csum_bad, bad0 + 1);
	assert_int_equal(csum_trip(p, q, q_addr, r1, ed_csum_right, &field), 1);

	/* auto on a ring ethdev is on: a checksum on the wire, 0 dropped. */
	ina_port_close(p);
	p = NULL;
	assert_int_equal(ina_port_dpdk_open_id(i1, "ip=10.0.2.1,mbufs=1500", &p, OPEN_ERR), 0);
	assert_int_equal(csum_trip(p, q, q_addr, r1, NULL, &field), 1);
	assert_int_not_equal(field, 0);
	bad0 = q->stats.rx_csum_bad;
	assert_int_equal(csum_trip(p, q, q_addr, r1, ed_csum_zero, &field), 0);
	assert_int_equal(q->stats.rx_csum_bad, bad0 + 1);
	assert_int_equal(rte_ring_count(r1), 0);
	assert_int_equal(rte_ring_count(r2), 0);
	ina_port_close(p);
	ina_port_close(q);
}

/* Too few mbufs for the descriptors, cache and reserve: -ENOBUFS naming them. */
static void
test_enobufs(void **state)
{
	struct rte_ring *r1, *r2;
	struct ina_port *p = NULL;
	uint16_t i1, i2;
	const char *e;

	(void)state;
	assert_int_equal(pair("nb_a", "nb_b", &r1, &r2, &i1, &i2), 0);
	assert_int_equal(ina_port_dpdk_open_id(i1, "mbufs=1000", &p, OPEN_ERR), -ENOBUFS);
	e = open_err;
	assert_non_null(strstr(e, "mbufs=1000"));
	assert_non_null(strstr(e, "1088")); /* 1 x (512 + 512) + 0 x 1 + 64 */
	assert_non_null(strstr(e, "raise mbufs=N"));
	assert_int_equal(ina_port_dpdk_open_id(i1, "mbufs=2047,reserve=1000", &p, OPEN_ERR),
			 -ENOBUFS);
	assert_non_null(strstr(open_err, "reserve=1000"));
	assert_int_equal(ina_port_dpdk_open_id(i1, "mbufs=2047,reserve=500", &p, OPEN_ERR), 0);
	ina_port_close(p);
	/* Too many queues for a ring ethdev with one ring each way. */
	assert_int_equal(ina_port_dpdk_open_id(i1, "queues=2", &p, OPEN_ERR), -EINVAL);
	assert_non_null(strstr(open_err, "queues=2"));
	assert_null(p);
}

/* queue=P,queues=K: K port objects over the same ethdevs, each on its queue. */
static void
test_queues(void **state)
{
	struct rte_ring *ab[2], *ba[2];
	struct ina_port *qa[2], *qb[2], *p = NULL;
	struct ina_pkt *pkts[INA_MAX_BURST];
	char args[96], addr[2][64];
	uint16_t ia, ib;
	int ret;

	(void)state;
	ab[0] = ring("q_ab0");
	ab[1] = ring("q_ab1");
	ba[0] = ring("q_ba0");
	ba[1] = ring("q_ba1");
	ret = rte_eth_from_rings("q_a", ba, 2, ab, 2, rte_socket_id());
	assert_true(ret >= 0);
	ia = (uint16_t)ret;
	ret = rte_eth_from_rings("q_b", ab, 2, ba, 2, rte_socket_id());
	assert_true(ret >= 0);
	ib = (uint16_t)ret;
	for (int q = 0; q < 2; q++) {
		snprintf(args, sizeof(args), "ip=10.0.3.1,queue=%d,queues=2,mbufs=2047", q);
		assert_int_equal(ina_port_dpdk_open_id(ia, args, &qa[q], OPEN_ERR), 0);
		snprintf(args, sizeof(args), "ip=10.0.3.2,queue=%d,queues=2,mbufs=2047", q);
		assert_int_equal(ina_port_dpdk_open_id(ib, args, &qb[q], OPEN_ERR), 0);
	}
	assert_int_equal(ina_port_dpdk_open_id(ia, "queue=1,queues=2", &p, OPEN_ERR), -EBUSY);
	assert_int_equal(ina_port_dpdk_open_id(ia, "queue=0,queues=3", &p, OPEN_ERR), -EBUSY);
	/* Same MAC on both queues: one ethdev. */
	addr_of(qb[0], 0, addr[0], sizeof(addr[0]), "10.0.3.2:9150");
	addr_of(qb[1], 0, addr[1], sizeof(addr[1]), "10.0.3.2:9150");
	assert_string_equal(addr[0], addr[1]);

	for (int q = 0; q < 2; q++) {
		for (int i = 0; i < 5; i++)
			pkts[i] = make(qa[q], addr[q], 100, (uint8_t)(q * 10 + i));
		assert_int_equal(ina_port_tx_burst(qa[q], pkts, 5), 5);
		assert_int_equal(rte_ring_count(ab[q]), 5);
		assert_int_equal(rte_ring_count(ab[1 - q]), 0);
		assert_int_equal(ina_port_rx_burst(qb[1 - q], pkts, INA_MAX_BURST), 0);
		assert_int_equal(ina_port_rx_burst(qb[q], pkts, INA_MAX_BURST), 5);
		for (int i = 0; i < 5; i++)
			check(pkts[i], 100, (uint8_t)(q * 10 + i));
		ina_pkt_free_bulk(pkts, 5);
	}
	/* Queue 1 keeps working after queue 0 is closed. */
	ina_port_close(qa[0]);
	ina_port_close(qb[0]);
	pkts[0] = make(qa[1], addr[1], 100, 77);
	assert_int_equal(ina_port_tx_burst(qa[1], pkts, 1), 1);
	assert_int_equal(ina_port_rx_burst(qb[1], pkts, INA_MAX_BURST), 1);
	check(pkts[0], 100, 77);
	ina_pkt_free(pkts[0]);
	ina_port_close(qa[1]);
	ina_port_close(qb[1]);
	/* All closed: the ethdevs can be opened again, with one queue. */
	assert_int_equal(ina_port_dpdk_open_id(ia, "mbufs=2047", &p, OPEN_ERR), 0);
	ina_port_close(p);
}

/* One lcore's work on one queue: bursts A -> B, every packet checked. */
struct qwork {
	struct ina_port *a, *b;
	char addr_b[64];
	unsigned rounds, got, bad;
};

static void *
qwork_run(void *arg)
{
	struct qwork *w = arg;
	struct ina_peer to_b;

	if (ina_port_resolve(w->a, w->addr_b, &to_b) < 0)
		return NULL;
	for (unsigned r = 0; r < w->rounds; r++) {
		struct ina_pkt *pkts[INA_MAX_BURST];
		uint16_t nb;
		unsigned k = 0;

		for (; k < INA_MAX_BURST; k++) {
			pkts[k] = ina_pkt_alloc(w->a->pool);
			if (!pkts[k])
				break;
			memset(pkts[k]->data, (int)(r & 0xff), 300);
			pkts[k]->len = 300;
			pkts[k]->peer = to_b;
		}
		ina_port_tx_burst(w->a, pkts, (uint16_t)k);
		while ((nb = ina_port_rx_burst(w->b, pkts, INA_MAX_BURST)) > 0) {
			for (uint16_t i = 0; i < nb; i++)
				if (pkts[i]->len != 300 || pkts[i]->data[299] != (uint8_t)r)
					w->bad++;
			w->got += nb;
			ina_pkt_free_bulk(pkts, nb);
		}
	}
	return NULL;
}

/* Two queues of the same ethdevs used by two threads at once. */
static void
test_queues_parallel(void **state)
{
	struct rte_ring *ab[2], *ba[2];
	struct qwork w[2];
	unsigned avail[2][2];
	pthread_t t;
	char args[96];
	int ia, ib;

	(void)state;
	ab[0] = ring("p_ab0");
	ab[1] = ring("p_ab1");
	ba[0] = ring("p_ba0");
	ba[1] = ring("p_ba1");
	ia = rte_eth_from_rings("p_a", ba, 2, ab, 2, rte_socket_id());
	ib = rte_eth_from_rings("p_b", ab, 2, ba, 2, rte_socket_id());
	assert_true(ia >= 0 && ib >= 0);
	memset(w, 0, sizeof(w));
	for (int q = 0; q < 2; q++) {
		snprintf(args, sizeof(args), "ip=10.0.4.1,queue=%d,queues=2,mbufs=2047", q);
		assert_int_equal(ina_port_dpdk_open_id((uint16_t)ia, args, &w[q].a, OPEN_ERR), 0);
		snprintf(args, sizeof(args), "ip=10.0.4.2,queue=%d,queues=2,mbufs=2047", q);
		assert_int_equal(ina_port_dpdk_open_id((uint16_t)ib, args, &w[q].b, OPEN_ERR), 0);
		addr_of(w[q].b, 0, w[q].addr_b, sizeof(w[q].addr_b), "10.0.4.2:9150");
		w[q].rounds = 2000;
		avail[q][0] = ina_port_dpdk_pool_avail(w[q].a);
		avail[q][1] = ina_port_dpdk_pool_avail(w[q].b);
	}
	assert_int_equal(pthread_create(&t, NULL, qwork_run, &w[1]), 0);
	qwork_run(&w[0]);
	pthread_join(t, NULL);
	for (int q = 0; q < 2; q++) {
		assert_int_equal(w[q].got, 2000 * INA_MAX_BURST);
		assert_int_equal(w[q].bad, 0);
		assert_int_equal(w[q].a->stats.tx_drop, 0);
		assert_int_equal(w[q].b->stats.rx_drop, 0);
		assert_int_equal(ina_port_dpdk_pool_avail(w[q].a), avail[q][0]);
		assert_int_equal(ina_port_dpdk_pool_avail(w[q].b), avail[q][1]);
	}
	for (int q = 0; q < 2; q++) {
		ina_port_close(w[q].a);
		ina_port_close(w[q].b);
	}
}

#define JUMBO "mtu=9000,mbufs=1023,rxd=256,txd=256"

/* mtu=9000: ina packets up to 8972 bytes, single and fanned out (zero-copy
 * chains linearized on rx into a jumbo mbuf). */
static void
test_jumbo(void **state)
{
	struct rte_ring *ab, *ba;
	struct ina_port *a = NULL, *b = NULL, *p = NULL;
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct ina_peer dsts[2];
	char addr[64];
	uint16_t ia, ib;
	unsigned avail_a, avail_b;

	(void)state;
	assert_int_equal(pair("j_a", "j_b", &ab, &ba, &ia, &ib), 0);
	assert_int_equal(ina_port_dpdk_open_id(ia, "ip=10.0.5.1," JUMBO, &a, OPEN_ERR), 0);
	assert_int_equal(ina_port_dpdk_open_id(ib, "ip=10.0.5.2," JUMBO, &b, OPEN_ERR), 0);
	assert_int_equal(a->max_pkt, 8972);
	assert_int_equal(a->pool->buf_size, 8972);
	avail_a = ina_port_dpdk_pool_avail(a);
	avail_b = ina_port_dpdk_pool_avail(b);
	addr_of(b, 0, addr, sizeof(addr), "10.0.5.2:9150");
	pkts[0] = make(a, addr, 8972, 3);
	pkts[1] = make(a, addr, 8972, 4);
	pkts[2] = make(a, addr, 100, 5);
	pkts[2]->len = 8973; /* one byte too many */
	assert_int_equal(ina_port_tx_burst(a, pkts, 3), 2);
	assert_int_equal(ina_port_rx_burst(b, pkts, INA_MAX_BURST), 2);
	check(pkts[0], 8972, 3);
	check(pkts[1], 8972, 4);
	ina_pkt_free_bulk(pkts, 2);

	assert_int_equal(ina_port_resolve(a, addr, &dsts[0]), 0);
	dsts[1] = dsts[0];
	pkts[0] = make(a, NULL, 8000, 6);
	pkts[0]->dsts = dsts;
	pkts[0]->dst_mask = 3;
	assert_int_equal(ina_port_tx_burst(a, pkts, 1), 1);
	assert_int_equal(ina_port_rx_burst(b, pkts, INA_MAX_BURST), 2);
	check(pkts[0], 8000, 6);
	check(pkts[1], 8000, 6);
	ina_pkt_free_bulk(pkts, 2);
	assert_int_equal(ina_port_dpdk_pool_avail(a), avail_a);
	assert_int_equal(ina_port_dpdk_pool_avail(b), avail_b);
	/* The set keeps its MTU: another one is refused. */
	assert_int_equal(ina_port_dpdk_open_id(ia, "mtu=1500", &p, OPEN_ERR), -EBUSY);
	ina_port_close(a);
	ina_port_close(b);
}

/* A link that goes down is not polled (checked every ~100 ms), and tx to it
 * is dropped and counted; up again, it works. */
static void
test_link_state(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct timespec ms150 = { 0, 150 * 1000 * 1000 };
	uint64_t drop0 = fx.b->stats.tx_drop;

	(void)state;
	pkts[0] = make(fx.a, fx.addr_b, 64, 2);
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 1), 1);
	assert_int_equal(rte_eth_dev_set_link_down(fx.id_b), 0);
	nanosleep(&ms150, NULL);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 0);
	assert_int_equal(nstats(fx.b).link_down, 1);
	assert_int_equal(rte_ring_count(fx.r_ab), 1);
	pkts[0] = make(fx.b, fx.addr_a, 64, 2);
	assert_int_equal(ina_port_tx_burst(fx.b, pkts, 1), 0);
	assert_int_equal(fx.b->stats.tx_drop, drop0 + 1);
	assert_int_equal(rte_eth_dev_set_link_up(fx.id_b), 0);
	nanosleep(&ms150, NULL);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 1);
	check(pkts[0], 64, 2);
	ina_pkt_free(pkts[0]);
	fx.b->stats.tx_drop = drop0;
}

static void
test_no_leak(void **state)
{
	struct ina_port_dpdk_eth_stats es;

	(void)state;
	/* The driver's own counters are there too. */
	assert_int_equal(ina_port_dpdk_eth_stats(fx.a, 0, &es), 0);
	assert_true(es.opackets >= 20 * INA_MAX_BURST);
	assert_int_equal(ina_port_dpdk_eth_stats(fx.a, 1, &es), -EINVAL);
	assert_int_equal(rte_ring_count(fx.r_ab), 0);
	assert_int_equal(rte_ring_count(fx.r_ba), 0);
	assert_int_equal(rte_ring_count(fx.r_cd), 0);
	assert_int_equal(ina_port_dpdk_pool_avail(fx.a), fx.avail_a);
	assert_int_equal(ina_port_dpdk_pool_avail(fx.b), fx.avail_b);
	assert_int_equal(ina_port_dpdk_pool_avail(fx.c), fx.avail_c);
	assert_int_equal(ina_port_dpdk_pool_avail(fx.d), fx.avail_d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_forms),	cmocka_unit_test(test_send_recv),
		cmocka_unit_test(test_bad_frames),	cmocka_unit_test(test_arp_reply),
		cmocka_unit_test(test_icmp_echo),	cmocka_unit_test(test_resolve_arp),
		cmocka_unit_test(test_resolve_silence), cmocka_unit_test(test_fanout_zerocopy),
		cmocka_unit_test(test_fanout_copy),	cmocka_unit_test(test_burst_many),
		cmocka_unit_test(test_tx_full),		cmocka_unit_test(test_drop_injection),
		cmocka_unit_test(test_multi_ethdev),	cmocka_unit_test(test_options),
		cmocka_unit_test(test_enobufs),		cmocka_unit_test(test_queues),
		cmocka_unit_test(test_queues_parallel), cmocka_unit_test(test_jumbo),
		cmocka_unit_test(test_link_state),	cmocka_unit_test(test_csum),
		cmocka_unit_test(test_no_leak),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
