/* SPDX-License-Identifier: MIT */
/*
 * Faults on the dpdk port over two ring ethdevs wired back to back in one
 * process: corrupt= flips a bit of received frames, which the port's own
 * UDP checksum check then drops and counts (rx_csum_bad = inject_corrupt),
 * while every packet delivered is intact; dup= and reorder= deliver every
 * packet, some twice or late, with copies in the port's mbufs; packets held
 * by delay= come out when due and are freed at close (no mbuf leak).
 */
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
#include <rte_ring.h>

#include "ina/port_dpdk.h"
#include "ina/util.h"

#define N_PKTS 2000
#define LEN 200

static struct rte_ring *r_ab, *r_ba;
static uint16_t id_a, id_b;
static struct ina_port *a;

static int
group_setup(void **state)
{
	char *argv[] = { "test_faults_dpdk", "--no-huge", "--no-pci", "--no-shconf",
			 "--no-telemetry",   "-m",	  "256",      "--lcores=0@(0-1)",
			 "--log-level=error" };
	char err[256];
	int ret;

	(void)state;
	if (ina_dpdk_eal_init((int)(sizeof(argv) / sizeof(argv[0])), argv, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	r_ab = rte_ring_create("f_ab", 1024, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	r_ba = rte_ring_create("f_ba", 1024, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!r_ab || !r_ba)
		return -1;
	ret = rte_eth_from_rings("f_a", &r_ba, 1, &r_ab, 1, rte_socket_id());
	if (ret < 0)
		return -1;
	id_a = (uint16_t)ret;
	ret = rte_eth_from_rings("f_b", &r_ab, 1, &r_ba, 1, rte_socket_id());
	if (ret < 0)
		return -1;
	id_b = (uint16_t)ret;
	return ina_port_dpdk_open_id(id_a, "ip=10.0.0.1,mbufs=2047", &a, NULL, 0) < 0 ? -1 : 0;
}

static int
group_teardown(void **state)
{
	uint16_t id;

	(void)state;
	ina_port_close(a);
	RTE_ETH_FOREACH_DEV(id)
	rte_eth_dev_close(id);
	rte_ring_free(r_ab);
	rte_ring_free(r_ba);
	ina_dpdk_eal_cleanup();
	return 0;
}

static struct ina_port *
open_b(const char *faults)
{
	struct ina_port *b = NULL;
	char args[256];

	snprintf(args, sizeof(args), "ip=10.0.0.2,mbufs=2047,%s", faults);
	assert_int_equal(ina_port_dpdk_open_id(id_b, args, &b, NULL, 0), 0);
	return b;
}

/* A sends N_PKTS numbered packets to B in bursts; B's packets are checked
 * (intact, each number seen how often) and freed. Returns how many came. */
static unsigned
send_recv(struct ina_port *b, uint16_t *seen, uint32_t *late)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct ina_peer dst;
	char addr[64];
	uint8_t m[6];
	uint32_t max = 0;
	unsigned got = 0;

	assert_int_equal(ina_port_dpdk_mac(b, 0, m), 0);
	snprintf(addr, sizeof(addr), "%02x:%02x:%02x:%02x:%02x:%02x@10.0.0.2:9150", m[0], m[1],
		 m[2], m[3], m[4], m[5]);
	assert_int_equal(ina_port_resolve(a, addr, &dst), 0);
	*late = 0;
	for (uint32_t s = 0; s < N_PKTS; s += 16) {
		for (uint32_t i = 0; i < 16; i++) {
			uint32_t n = s + i;

			pkts[i] = ina_pkt_alloc(a->pool);
			assert_non_null(pkts[i]);
			for (uint32_t k = 0; k < LEN; k++)
				pkts[i]->data[k] = (uint8_t)(n + k * 7);
			memcpy(pkts[i]->data, &n, 4);
			pkts[i]->len = LEN;
			pkts[i]->peer = dst;
		}
		assert_int_equal(ina_port_tx_burst(a, pkts, 16), 16);
		/* Receive until this burst is in (or held), then past the holds. */
		for (int t = 0; t < (s + 16 < N_PKTS ? 1 : 200); t++) {
			uint16_t nb = ina_port_rx_burst(b, pkts, INA_MAX_BURST);

			for (uint16_t i = 0; i < nb; i++) {
				uint32_t n;

				assert_int_equal(pkts[i]->len, LEN);
				memcpy(&n, pkts[i]->data, 4);
				assert_true(n < N_PKTS);
				for (uint32_t k = 4; k < LEN; k++)
					assert_int_equal(pkts[i]->data[k], (uint8_t)(n + k * 7));
				seen[n]++;
				*late += n < max;
				if (n > max)
					max = n;
			}
			got += nb;
			ina_pkt_free_bulk(pkts, nb);
			if (!nb && s + 16 >= N_PKTS)
				ina_port_wait(b, 100000);
		}
	}
	return got;
}

static void
test_corrupt_caught(void **state)
{
	struct ina_port *b = open_b("corrupt=0.1,seed=3");
	static uint16_t seen[N_PKTS];
	struct ina_port_dpdk_neigh_stats st;
	uint32_t late;
	unsigned got;

	(void)state;
	memset(seen, 0, sizeof(seen));
	got = send_recv(b, seen, &late);
	ina_port_dpdk_neigh_stats(b, &st);
	assert_int_equal(got + b->stats.rx_csum_bad, N_PKTS);
	assert_int_equal(b->stats.rx_csum_bad, b->stats.inject_corrupt);
	assert_in_range(b->stats.rx_csum_bad, 120, 280); /* 10% of 2000, +-6 sd */
	assert_int_equal(st.malformed, b->stats.rx_csum_bad);
	assert_int_equal(b->stats.rx_drop, b->stats.rx_csum_bad);
	assert_int_equal(late, 0);
	ina_port_close(b);
}

static void
test_dup_reorder(void **state)
{
	struct ina_port *b = open_b("dup=0.1,reorder=0.1,reorder_gap=2,seed=4");
	static uint16_t seen[N_PKTS];
	unsigned got, twice = 0, avail = ina_port_dpdk_pool_avail(b);
	uint32_t late;

	(void)state;
	memset(seen, 0, sizeof(seen));
	got = send_recv(b, seen, &late);
	for (unsigned n = 0; n < N_PKTS; n++) {
		assert_in_range(seen[n], 1, 2);
		twice += seen[n] == 2;
	}
	assert_int_equal(twice, b->stats.inject_dup);
	assert_int_equal(got, N_PKTS + twice);
	assert_in_range(twice, 120, 280);
	assert_true(late > 100 && late <= b->stats.inject_reorder + b->stats.inject_dup);
	assert_int_equal(b->stats.rx_pkts, got);
	assert_int_equal(ina_port_dpdk_pool_avail(b), avail); /* copies given back */
	ina_port_close(b);
}

static void
test_delay_close(void **state)
{
	struct ina_port *b = open_b("delay_us=1000000,hold=8");
	struct ina_pkt *pkts[INA_MAX_BURST];
	unsigned avail_a = ina_port_dpdk_pool_avail(a);
	uint64_t t0 = ina_now_ns();
	uint16_t nb = 0;

	(void)state;
	/* One burst of 16: 8 held for a second, 8 through. */
	{
		struct ina_peer dst;
		char addr[64];
		uint8_t m[6];

		assert_int_equal(ina_port_dpdk_mac(b, 0, m), 0);
		snprintf(addr, sizeof(addr), "%02x:%02x:%02x:%02x:%02x:%02x@10.0.0.2:9150", m[0],
			 m[1], m[2], m[3], m[4], m[5]);
		assert_int_equal(ina_port_resolve(a, addr, &dst), 0);
		for (int i = 0; i < 16; i++) {
			pkts[i] = ina_pkt_alloc(a->pool);
			pkts[i]->len = LEN;
			pkts[i]->peer = dst;
		}
		assert_int_equal(ina_port_tx_burst(a, pkts, 16), 16);
	}
	for (int t = 0; t < 100 && b->stats.inject_delay + nb < 16; t++) {
		uint16_t k = ina_port_rx_burst(b, pkts, INA_MAX_BURST);

		nb = (uint16_t)(nb + k);
		ina_pkt_free_bulk(pkts, k);
	}
	assert_int_equal(nb, 8);
	assert_int_equal(b->stats.inject_delay, 8);
	assert_true(ina_now_ns() - t0 < INA_NS_PER_S);
	/* Ring ethdevs pass the sender's mbufs: B holds 8 of A's. */
	assert_int_equal(ina_port_dpdk_pool_avail(a), avail_a - 8);
	ina_port_close(b); /* frees the 8 held before the pools go */
	assert_int_equal(ina_port_dpdk_pool_avail(a), avail_a);
	b = open_b("seed=1");
	ina_port_close(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corrupt_caught),
		cmocka_unit_test(test_dup_reorder),
		cmocka_unit_test(test_delay_close),
	};

	return cmocka_run_group_tests_name("faults_dpdk", tests, group_setup, group_teardown);
}
