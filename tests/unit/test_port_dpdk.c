/* SPDX-License-Identifier: MIT */
/*
 * The dpdk port over two ring ethdevs wired back to back in one process
 * (rte_eth_from_rings, EAL without hugepages or PCI): payload and peers
 * survive the trip, bad frames are counted in rx_drop, fan-out makes one
 * frame per destination, and no mbuf leaks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "ina/port_dpdk.h"

struct fixture {
	struct rte_ring *r_ab, *r_ba;	/* A -> B, B -> A */
	uint16_t id_a, id_b;
	struct ina_port *a, *b;
	char addr_a[64], addr_b[64];	/* "MAC@IP:PORT" */
	unsigned avail_a, avail_b;
};

static struct fixture fx;

static void
mac_str(uint16_t id, char *buf, size_t size, const char *ip_port)
{
	struct rte_ether_addr m;

	assert_int_equal(rte_eth_macaddr_get(id, &m), 0);
	snprintf(buf, size, "%02x:%02x:%02x:%02x:%02x:%02x@%s", m.addr_bytes[0],
		 m.addr_bytes[1], m.addr_bytes[2], m.addr_bytes[3], m.addr_bytes[4],
		 m.addr_bytes[5], ip_port);
}

static int
group_setup(void **state)
{
	char *argv[] = { "test_port_dpdk", "--no-huge", "--no-pci", "--no-shconf",
			 "--no-telemetry", "-m", "256", "-l", "0", "--log-level=error" };
	int argc = (int)(sizeof(argv) / sizeof(argv[0]));
	char err[256];
	int ret, sock;

	(void)state;
	ret = ina_dpdk_eal_init(argc, argv, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	sock = (int)rte_socket_id();
	fx.r_ab = rte_ring_create("t_ab", 1024, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	fx.r_ba = rte_ring_create("t_ba", 1024, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!fx.r_ab || !fx.r_ba)
		return -1;
	ret = rte_eth_from_rings("t_a", &fx.r_ba, 1, &fx.r_ab, 1, (unsigned)sock);
	if (ret < 0)
		return -1;
	fx.id_a = (uint16_t)ret;
	ret = rte_eth_from_rings("t_b", &fx.r_ab, 1, &fx.r_ba, 1, (unsigned)sock);
	if (ret < 0)
		return -1;
	fx.id_b = (uint16_t)ret;
	if (ina_port_dpdk_open_id(fx.id_a, "ip=10.0.0.1,mbufs=2047", &fx.a) < 0 ||
	    ina_port_dpdk_open_id(fx.id_b, "ip=10.0.0.2,udp=9150,mbufs=1023", &fx.b) < 0)
		return -1;
	fx.avail_a = ina_port_dpdk_pool_avail(fx.a);
	fx.avail_b = ina_port_dpdk_pool_avail(fx.b);
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	ina_port_close(fx.a);
	ina_port_close(fx.b);
	if (rte_eth_dev_is_valid_port(fx.id_a))
		rte_eth_dev_close(fx.id_a);
	if (rte_eth_dev_is_valid_port(fx.id_b))
		rte_eth_dev_close(fx.id_b);
	rte_ring_free(fx.r_ab);
	rte_ring_free(fx.r_ba);
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
		assert_int_equal(port->ops->resolve(port, dst, &p->peer), 0);
	return p;
}

static void
test_resolve(void **state)
{
	struct ina_peer peer;
	char buf[64];

	(void)state;
	mac_str(fx.id_a, fx.addr_a, sizeof(fx.addr_a), "10.0.0.1:9150");
	mac_str(fx.id_b, fx.addr_b, sizeof(fx.addr_b), "10.0.0.2:9150");
	assert_int_equal(fx.a->ops->resolve(fx.a, "02:00:00:00:00:02@10.0.0.2:9150", &peer), 0);
	assert_true(peer.len > 0 && peer.len <= INA_PEER_SIZE - 1);
	assert_string_equal(fx.a->ops->peer_str(fx.a, &peer, buf, sizeof(buf)),
			    "02:00:00:00:00:02@10.0.0.2:9150");
	assert_int_equal(fx.a->ops->resolve(fx.a, "10.0.0.2:9150", &peer), -EINVAL);
	assert_int_equal(fx.a->ops->resolve(fx.a, "02:00:00:00:00@10.0.0.2:9150", &peer),
			 -EINVAL);
	assert_int_equal(fx.a->ops->resolve(fx.a, "02:00:00:00:00:02@10.0.0.300:9150", &peer),
			 -EINVAL);
	assert_int_equal(fx.a->ops->resolve(fx.a, "02:00:00:00:00:02@10.0.0.2:0", &peer),
			 -EINVAL);
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

	assert_int_equal(fx.b->ops->resolve(fx.b, fx.addr_a, &from_a), 0);
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

static void
test_bad_frames(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct rte_mbuf *m = NULL;
	uint64_t drop0 = fx.b->stats.rx_drop;
	char wrong_port[64];

	(void)state;
	/* Corrupted payload byte: UDP checksum fails. */
	pkts[0] = make(fx.a, fx.addr_b, 100, 9);
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 1), 1);
	assert_int_equal(rte_ring_dequeue(fx.r_ab, (void **)&m), 0);
	rte_pktmbuf_mtod(m, uint8_t *)[42 + 50] ^= 0x10;
	assert_int_equal(rte_ring_enqueue(fx.r_ab, m), 0);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 0);
	assert_int_equal(fx.b->stats.rx_drop, drop0 + 1);

	/* Corrupted IPv4 header (TTL): header checksum fails. */
	pkts[0] = make(fx.a, fx.addr_b, 100, 9);
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 1), 1);
	assert_int_equal(rte_ring_dequeue(fx.r_ab, (void **)&m), 0);
	rte_pktmbuf_mtod(m, uint8_t *)[14 + 8] ^= 0x01;
	assert_int_equal(rte_ring_enqueue(fx.r_ab, m), 0);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 0);
	assert_int_equal(fx.b->stats.rx_drop, drop0 + 2);

	/* Not IPv4. */
	pkts[0] = make(fx.a, fx.addr_b, 100, 9);
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 1), 1);
	assert_int_equal(rte_ring_dequeue(fx.r_ab, (void **)&m), 0);
	rte_pktmbuf_mtod(m, uint8_t *)[12] = 0x86;
	rte_pktmbuf_mtod(m, uint8_t *)[13] = 0xdd;
	assert_int_equal(rte_ring_enqueue(fx.r_ab, m), 0);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 0);
	assert_int_equal(fx.b->stats.rx_drop, drop0 + 3);

	/* Wrong UDP port, and wrong IP. */
	mac_str(fx.id_b, wrong_port, sizeof(wrong_port), "10.0.0.2:9999");
	pkts[0] = make(fx.a, wrong_port, 100, 9);
	mac_str(fx.id_b, wrong_port, sizeof(wrong_port), "10.0.0.3:9150");
	pkts[1] = make(fx.a, wrong_port, 100, 9);
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 2), 2);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 0);
	assert_int_equal(fx.b->stats.rx_drop, drop0 + 5);

	/* A good one still passes afterwards. */
	pkts[0] = make(fx.a, fx.addr_b, 100, 9);
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 1), 1);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 1);
	check(pkts[0], 100, 9);
	ina_pkt_free(pkts[0]);
}

static void
test_fanout(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct ina_peer dsts[3];
	struct rte_mbuf *frames[4];
	uint64_t tx0 = fx.a->stats.tx_pkts;
	char other[64];

	(void)state;
	assert_int_equal(fx.a->ops->resolve(fx.a, fx.addr_b, &dsts[0]), 0);
	assert_int_equal(fx.a->ops->resolve(fx.a, "02:00:00:00:00:09@10.0.0.9:9150",
					    &dsts[1]), 0);
	/* Same IP and port as B, another MAC: B accepts it too. */
	snprintf(other, sizeof(other), "02:00:00:00:00:07@10.0.0.2:9150");
	assert_int_equal(fx.a->ops->resolve(fx.a, other, &dsts[2]), 0);

	pkts[0] = make(fx.a, NULL, 300, 42);
	pkts[0]->dsts = dsts;
	pkts[0]->dst_mask = 0x5;	/* dsts[0] and dsts[2] */
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 1), 1);
	assert_int_equal(fx.a->stats.tx_pkts, tx0 + 2);
	assert_int_equal(rte_ring_count(fx.r_ab), 2);

	/* One frame per destination MAC, then back in the ring for B. */
	assert_int_equal(rte_ring_dequeue_bulk(fx.r_ab, (void **)frames, 2, NULL), 2);
	assert_int_equal(rte_pktmbuf_mtod(frames[0], uint8_t *)[5] ^
			 rte_pktmbuf_mtod(frames[1], uint8_t *)[5] ? 1 : 0, 1);
	assert_int_equal(rte_ring_enqueue_bulk(fx.r_ab, (void **)frames, 2, NULL), 2);
	assert_int_equal(ina_port_rx_burst(fx.b, pkts, INA_MAX_BURST), 2);
	check(pkts[0], 300, 42);
	check(pkts[1], 300, 42);
	ina_pkt_free_bulk(pkts, 2);

	/* An empty mask sends nothing. */
	pkts[0] = make(fx.a, NULL, 10, 1);
	pkts[0]->dsts = dsts;
	pkts[0]->dst_mask = 0;
	assert_int_equal(ina_port_tx_burst(fx.a, pkts, 1), 0);
	assert_int_equal(rte_ring_count(fx.r_ab), 0);
	fx.a->stats.tx_drop = 0;
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

static void
test_options(void **state)
{
	const struct ina_port_ops *ops = &ina_port_dpdk_ops;
	struct ina_port *p = NULL;

	(void)state;
	assert_int_equal(ops->open(&p, "ip=10.0.0.5"), -EINVAL);	/* no port= */
	assert_int_equal(ops->open(&p, "port=0,ip=10.0.0.500"), -EINVAL);
	assert_int_equal(ops->open(&p, "port=0,udp=0"), -EINVAL);
	assert_int_equal(ops->open(&p, "port=0,mbufs=1"), -EINVAL);
	assert_int_equal(ops->open(&p, "port=0,bogus=1"), -EINVAL);
	assert_int_equal(ops->open(&p, "port=31"), -ENODEV);
	assert_null(p);
	/* Registered, "dpdk:" specs reach the backend through ina_port_open. */
	assert_int_equal(ina_port_dpdk_register(), 0);
	assert_int_equal(ina_port_dpdk_register(), 0);
	{
		char err[128];

		assert_int_equal(ina_port_open("dpdk:port=31", &p, err, sizeof(err)), -ENODEV);
		assert_null(p);
	}
}

static void
test_no_leak(void **state)
{
	(void)state;
	assert_int_equal(rte_ring_count(fx.r_ab), 0);
	assert_int_equal(rte_ring_count(fx.r_ba), 0);
	assert_int_equal(ina_port_dpdk_pool_avail(fx.a), fx.avail_a);
	assert_int_equal(ina_port_dpdk_pool_avail(fx.b), fx.avail_b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_send_recv),
		cmocka_unit_test(test_bad_frames),
		cmocka_unit_test(test_fanout),
		cmocka_unit_test(test_burst_many),
		cmocka_unit_test(test_tx_full),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_no_leak),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
