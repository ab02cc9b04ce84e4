/* SPDX-License-Identifier: MIT */
/*
 * The dpdk port allocates nothing per packet: malloc, calloc, realloc,
 * aligned_alloc and posix_memalign are wrapped at link time (-Wl,--wrap=...)
 * and counted, after open and a warm-up, while tens of thousands of packets
 * go through two pairs of ring-wired ports (one with zero-copy fan-out, one
 * copying): single-destination packets one way, a fan-out to 3 destinations
 * of each back, and ARP requests answered on the way. Only calls from objects
 * linked into this program (ina's static libraries and the test) are wrapped;
 * DPDK's shared libraries and cmocka are not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_arp.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "alloc_count.h"
#include "ina/port_dpdk.h"

struct wire {
	struct rte_ring *ab, *ba;
	struct ina_port *a, *b;
	struct ina_peer to_b, to_a[3];
	unsigned avail_a, avail_b;
};

static struct wire wires[2];
static struct rte_mempool *raw;

static int
wire_up(struct wire *w, int n, const char *opts)
{
	char name[32], args[96], addr[64];
	uint8_t mac[6];
	int ida, idb;

	snprintf(name, sizeof(name), "al_ab%d", n);
	w->ab = rte_ring_create(name, 1024, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "al_ba%d", n);
	w->ba = rte_ring_create(name, 1024, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!w->ab || !w->ba)
		return -1;
	snprintf(name, sizeof(name), "al_a%d", n);
	ida = rte_eth_from_rings(name, &w->ba, 1, &w->ab, 1, rte_socket_id());
	snprintf(name, sizeof(name), "al_b%d", n);
	idb = rte_eth_from_rings(name, &w->ab, 1, &w->ba, 1, rte_socket_id());
	if (ida < 0 || idb < 0)
		return -1;
	snprintf(args, sizeof(args), "ip=10.1.%d.1,mbufs=4095,%s", n, opts);
	if (ina_port_dpdk_open_id((uint16_t)ida, args, &w->a, NULL, 0) < 0)
		return -1;
	snprintf(args, sizeof(args), "ip=10.1.%d.2,mbufs=4095,%s", n, opts);
	if (ina_port_dpdk_open_id((uint16_t)idb, args, &w->b, NULL, 0) < 0)
		return -1;
	ina_port_dpdk_mac(w->b, 0, mac);
	snprintf(addr, sizeof(addr), "%02x:%02x:%02x:%02x:%02x:%02x@10.1.%d.2:9150", mac[0], mac[1],
		 mac[2], mac[3], mac[4], mac[5], n);
	if (ina_port_resolve(w->a, addr, &w->to_b) < 0)
		return -1;
	ina_port_dpdk_mac(w->a, 0, mac);
	for (int i = 0; i < 3; i++) {
		/* A accepts any MAC: three destinations, one port. */
		snprintf(addr, sizeof(addr), "%02x:%02x:%02x:%02x:%02x:%02x@10.1.%d.1:9150", mac[0],
			 mac[1], mac[2], mac[3], mac[4], (uint8_t)(mac[5] + i), n);
		if (ina_port_resolve(w->b, addr, &w->to_a[i]) < 0)
			return -1;
	}
	w->avail_a = ina_port_dpdk_pool_avail(w->a);
	w->avail_b = ina_port_dpdk_pool_avail(w->b);
	return 0;
}

static int
group_setup(void **state)
{
	char *argv[] = { "test_alloc_dpdk",  "--no-huge", "--no-pci", "--no-shconf",
			 "--no-telemetry",   "-m",	  "256",      "--lcores=0@(0-1)",
			 "--log-level=error" };
	char err[256];

	(void)state;
	/* --lcores=0@(0-1): not pinned, the scheduler may move the test away
	 * from a core that other busy pollers hold. */
	if (ina_dpdk_eal_init((int)(sizeof(argv) / sizeof(argv[0])), argv, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	raw = rte_pktmbuf_pool_create("al_raw", 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				      (int)rte_socket_id());
	if (!raw || wire_up(&wires[0], 0, "zerocopy=1") < 0 ||
	    wire_up(&wires[1], 1, "zerocopy=0") < 0)
		return -1;
	return 0;
}

static int
group_teardown(void **state)
{
	uint16_t id;

	(void)state;
	for (int i = 0; i < 2; i++) {
		ina_port_close(wires[i].a);
		ina_port_close(wires[i].b);
	}
	RTE_ETH_FOREACH_DEV(id)
	rte_eth_dev_close(id);
	for (int i = 0; i < 2; i++) {
		rte_ring_free(wires[i].ab);
		rte_ring_free(wires[i].ba);
	}
	rte_mempool_free(raw);
	ina_dpdk_eal_cleanup();
	return 0;
}

/* An ARP request for B's address, straight into B's rx ring. */
static void
arp_to_b(struct wire *w, int n)
{
	uint8_t f[60] = { 0 };
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)f;
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eh + 1);
	struct rte_mbuf *m = rte_pktmbuf_alloc(raw);
	char *d;

	assert_non_null(m);
	memset(eh->dst_addr.addr_bytes, 0xff, 6);
	eh->src_addr.addr_bytes[0] = 2;
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = 6;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	arp->arp_data.arp_sha = eh->src_addr;
	arp->arp_data.arp_sip = rte_cpu_to_be_32(0x0a010063u | ((uint32_t)n << 8));
	arp->arp_data.arp_tip = rte_cpu_to_be_32(0x0a010002u | ((uint32_t)n << 8));
	d = rte_pktmbuf_append(m, sizeof(f));
	assert_non_null(d);
	memcpy(d, f, sizeof(f));
	assert_int_equal(rte_ring_enqueue(w->ab, m), 0);
}

/* One round: 32 packets A -> B, each fanned out B -> A x 3. Returns the
 * packets A received. */
static unsigned
round_trip(struct wire *w, int n, unsigned round)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	unsigned got = 0;
	uint16_t nb;

	for (unsigned i = 0; i < INA_MAX_BURST; i++) {
		pkts[i] = ina_pkt_alloc(w->a->pool);
		assert_non_null(pkts[i]);
		memset(pkts[i]->data, (int)(round + i), 200);
		pkts[i]->len = 200;
		pkts[i]->peer = w->to_b;
	}
	assert_int_equal(ina_port_tx_burst(w->a, pkts, INA_MAX_BURST), INA_MAX_BURST);
	if (round % 16 == 0)
		arp_to_b(w, n);
	/* An ARP request takes a slot of a burst: collect the 32 in two. */
	nb = ina_port_rx_burst(w->b, pkts, INA_MAX_BURST);
	nb = (uint16_t)(nb + ina_port_rx_burst(w->b, pkts + nb, (uint16_t)(INA_MAX_BURST - nb)));
	assert_int_equal(nb, INA_MAX_BURST);
	for (uint16_t i = 0; i < nb; i++) {
		pkts[i]->dsts = w->to_a;
		pkts[i]->dst_mask = 0x7;
	}
	assert_int_equal(ina_port_tx_burst(w->b, pkts, nb), nb);
	while ((nb = ina_port_rx_burst(w->a, pkts, INA_MAX_BURST)) > 0) {
		got += nb;
		ina_pkt_free_bulk(pkts, nb);
	}
	/* ARP replies from B land in A's ring: A counts them, no packet. */
	return got;
}

static void
run(int n)
{
	struct wire *w = &wires[n];
	struct ina_port_dpdk_neigh_stats st;
	unsigned got = 0;

	for (unsigned r = 0; r < 64; r++) /* warm-up: mempool caches, first paths */
		round_trip(w, n, r);
	alloc_count_on();
	for (unsigned r = 0; r < 1000; r++)
		got += round_trip(w, n, r);
	alloc_count_off();
	assert_int_equal(got, 1000 * INA_MAX_BURST * 3);
	assert_int_equal(alloc_nb, 0);
	ina_port_dpdk_neigh_stats(w->b, &st);
	assert_true(st.arp_reply_tx >= 1000 / 16);
	assert_int_equal(w->a->stats.tx_drop + w->b->stats.tx_drop, 0);
	assert_int_equal(w->a->stats.rx_drop + w->b->stats.rx_drop, 0);
	assert_int_equal(ina_port_dpdk_pool_avail(w->a), w->avail_a);
	assert_int_equal(ina_port_dpdk_pool_avail(w->b), w->avail_b);
}

static void
test_no_alloc_zerocopy(void **state)
{
	(void)state;
	run(0);
}

static void
test_no_alloc_copy(void **state)
{
	(void)state;
	run(1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_alloc_zerocopy),
		cmocka_unit_test(test_no_alloc_copy),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
