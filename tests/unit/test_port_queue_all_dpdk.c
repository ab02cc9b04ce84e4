/* SPDX-License-Identifier: MIT */
/*
 * The dpdk port's queue=all,queues=K (a host facing ina-switch --lcores K),
 * over two ring ethdevs with two queue pairs each, wired back to back in one
 * process: the "switch" ethdev has one port object per queue (queue=P), the
 * "host" ethdev one object with queue=all. The host sends on queue 0 only,
 * receives what either switch queue sends, takes every queue (no other object
 * can open one), and releases them all on close, without leaking mbufs.
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
#include <rte_ring.h>

#include "ina/port_dpdk.h"

/* Why the last port open failed (the ops' and open_id's error buffer). */
static char open_err[320];
#define OPEN_ERR open_err, sizeof(open_err)

#define Q 2

static struct rte_ring *to_sw[Q], *to_host[Q];
static uint16_t id_sw, id_host;

static struct rte_ring *
ring(const char *name)
{
	return rte_ring_create(name, 1024, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
}

static int
group_setup(void **state)
{
	char *argv[] = { "test_port_queue_all_dpdk", "--no-huge", "--no-pci", "--no-shconf",
			 "--no-telemetry",	     "-m",	  "256",      "--lcores=0@(0-1)",
			 "--log-level=error" };
	char err[256], name[32];
	int ret;

	(void)state;
	ret = ina_dpdk_eal_init((int)(sizeof(argv) / sizeof(argv[0])), argv, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	for (int q = 0; q < Q; q++) {
		snprintf(name, sizeof(name), "qa_sw%d", q);
		to_sw[q] = ring(name);
		snprintf(name, sizeof(name), "qa_host%d", q);
		to_host[q] = ring(name);
		if (!to_sw[q] || !to_host[q])
			return -1;
	}
	ret = rte_eth_from_rings("qa_s", to_sw, Q, to_host, Q, rte_socket_id());
	if (ret < 0)
		return -1;
	id_sw = (uint16_t)ret;
	ret = rte_eth_from_rings("qa_h", to_host, Q, to_sw, Q, rte_socket_id());
	if (ret < 0)
		return -1;
	id_host = (uint16_t)ret;
	return 0;
}

static int
group_teardown(void **state)
{
	uint16_t id;

	(void)state;
	RTE_ETH_FOREACH_DEV(id)
	rte_eth_dev_close(id);
	for (int q = 0; q < Q; q++) {
		rte_ring_free(to_sw[q]);
		rte_ring_free(to_host[q]);
	}
	ina_dpdk_eal_cleanup();
	return 0;
}

static void
addr_of(struct ina_port *p, char *buf, size_t size, const char *ip_port)
{
	uint8_t m[6];

	assert_int_equal(ina_port_dpdk_mac(p, 0, m), 0);
	snprintf(buf, size, "%02x:%02x:%02x:%02x:%02x:%02x@%s", m[0], m[1], m[2], m[3], m[4], m[5],
		 ip_port);
}

/* 'n' packets of 'len' bytes from 'from' to 'peer', byte i = tag + i. */
static void
send_n(struct ina_port *from, const struct ina_peer *peer, unsigned n, uint8_t tag)
{
	struct ina_pkt *pkts[INA_MAX_BURST];

	for (unsigned k = 0; k < n; k++) {
		pkts[k] = ina_pkt_alloc(from->pool);
		assert_non_null(pkts[k]);
		for (unsigned i = 0; i < 200; i++)
			pkts[k]->data[i] = (uint8_t)(tag + k + i);
		pkts[k]->len = 200;
		pkts[k]->peer = *peer;
	}
	assert_int_equal(ina_port_tx_burst(from, pkts, (uint16_t)n), n);
}

/* Receives everything 'p' has; checks each packet's bytes against the tags
 * sent (first byte = tag + k); returns how many. */
static unsigned
recv_all(struct ina_port *p, struct ina_peer *last_peer)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	unsigned got = 0;
	uint16_t nb;

	while ((nb = ina_port_rx_burst(p, pkts, INA_MAX_BURST)) > 0) {
		for (uint16_t k = 0; k < nb; k++) {
			assert_int_equal(pkts[k]->len, 200);
			for (unsigned i = 1; i < 200; i++)
				assert_int_equal(pkts[k]->data[i], (uint8_t)(pkts[k]->data[0] + i));
			if (last_peer)
				*last_peer = pkts[k]->peer;
		}
		got += nb;
		ina_pkt_free_bulk(pkts, nb);
	}
	return got;
}

static void
test_queue_all(void **state)
{
	struct ina_port *sw[Q], *host, *p = NULL;
	struct ina_peer to_sw_peer, to_host_peer;
	char args[96], addr[64];
	unsigned avail_host;

	(void)state;
	for (int q = 0; q < Q; q++) {
		snprintf(args, sizeof(args), "ip=10.0.5.1,queue=%d,queues=%d,mbufs=2047", q, Q);
		assert_int_equal(ina_port_dpdk_open_id(id_sw, args, &sw[q], OPEN_ERR), 0);
	}
	assert_int_equal(ina_port_dpdk_open_id(id_host, "ip=10.0.5.2,queue=all,queues=2,mbufs=2047",
					       &host, OPEN_ERR),
			 0);
	avail_host = ina_port_dpdk_pool_avail(host);
	/* queue=all took every queue. */
	assert_int_equal(ina_port_dpdk_open_id(id_host, "queue=1,queues=2", &p, OPEN_ERR), -EBUSY);
	assert_int_equal(ina_port_dpdk_open_id(id_host, "queue=0,queues=2", &p, OPEN_ERR), -EBUSY);
	assert_null(p);
	assert_int_equal(ina_port_dpdk_open_id(id_host, "queue=al,queues=2", &p, OPEN_ERR),
			 -EINVAL);
	assert_non_null(strstr(open_err, "or all"));

	/* The host sends on queue 0 only: the switch's queue 0 gets it all. */
	addr_of(sw[0], addr, sizeof(addr), "10.0.5.1:9150");
	assert_int_equal(ina_port_resolve(host, addr, &to_sw_peer), 0);
	send_n(host, &to_sw_peer, 6, 1);
	assert_int_equal(rte_ring_count(to_sw[0]), 6);
	assert_int_equal(rte_ring_count(to_sw[1]), 0);
	assert_int_equal(recv_all(sw[1], NULL), 0);
	assert_int_equal(recv_all(sw[0], &to_host_peer), 6);

	/* Both switch queues answer; the host receives from both. */
	send_n(sw[0], &to_host_peer, 3, 50);
	send_n(sw[1], &to_host_peer, 4, 90);
	assert_int_equal(rte_ring_count(to_host[0]), 3);
	assert_int_equal(rte_ring_count(to_host[1]), 4);
	assert_int_equal(recv_all(host, NULL), 7);
	assert_int_equal(host->stats.rx_pkts, 7);
	assert_int_equal(host->stats.tx_pkts, 6);
	/* Only one object's queue 1 sent: nothing on the host's queue 1 tx. */
	assert_int_equal(rte_ring_count(to_sw[1]), 0);
	assert_int_equal(ina_port_dpdk_pool_avail(host), avail_host);

	/* Close releases every queue: the ethdev opens again, on one queue. */
	ina_port_close(host);
	assert_int_equal(ina_port_dpdk_open_id(id_host, "ip=10.0.5.2,queue=1,queues=2,mbufs=2047",
					       &p, OPEN_ERR),
			 0);
	ina_port_close(p);
	assert_int_equal(ina_port_dpdk_open_id(id_host, "ip=10.0.5.2,queue=all,queues=2,mbufs=2047",
					       &host, OPEN_ERR),
			 0);
	send_n(sw[1], &to_host_peer, 2, 7);
	assert_int_equal(recv_all(host, NULL), 2);
	ina_port_close(host);
	for (int q = 0; q < Q; q++)
		ina_port_close(sw[q]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_all),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
