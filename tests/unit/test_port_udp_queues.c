/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the udp port's tenant receive queues (port_udp.c,
 * tenant_queues=N, steered by udp_steer.c) over 127.0.0.1: each datagram
 * lands in the queue of its tenant byte (modulo N), one shorter than an ina
 * header and tenant 0 in queue 0, counted per queue in the xstats, with GRO
 * and without; a flood of thousands in one queue does not keep another's
 * packets out of the first burst (where one queue does), nor out of the
 * first bursts when that queue had backed off empty; the port's wait wakes
 * for any queue. Every receive loop is bounded by a deadline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "udp_check.h"

#include "ina/pkt.h"
#include "ina/port.h"
#include "ina/port_udp.h"
#include "ina/util.h"
#include "ina/wire.h"

#define RX_DEADLINE_NS (2 * INA_NS_PER_S)

static uint64_t
rxq(const struct ina_port *port, unsigned q)
{
	char name[32];

	snprintf(name, sizeof(name), "port_udp_rxq%u_pkts", q);
	return udp_xstat(port, name);
}

/* Whether the port lists a counter for queue 'q' (only a port of several
 * queues does, one for each of its queues). */
static int
has_rxq(const struct ina_port *port, unsigned q)
{
	char name[32];
	uint64_t v;

	snprintf(name, sizeof(name), "port_udp_rxq%u_pkts", q);
	return udp_xstat_find(port, name, &v);
}

/* A packet of 'len' bytes whose tenant byte is 'tenant' and every other byte
 * 0xff (read at any other offset, a tenant of 255). */
static struct ina_pkt *
tenant_pkt(struct ina_port *port, uint8_t tenant, uint32_t len, const struct ina_peer *peer)
{
	struct ina_pkt *p = ina_pkt_alloc(port->pool);

	assert_non_null(p);
	assert_true(len > INA_WIRE_TENANT_OFFSET && len <= p->cap);
	p->len = len;
	memset(p->data, 0xff, len);
	p->data[INA_WIRE_TENANT_OFFSET] = tenant;
	p->peer = *peer;
	return p;
}

/* Sends 'nb' packets of 'tenant' and 'len' bytes, in bursts of 'burst'. */
static void
send_tenant(struct ina_port *from, const struct ina_peer *to, uint8_t tenant, uint32_t len,
	    unsigned nb, unsigned burst)
{
	struct ina_pkt *pkts[INA_MAX_BURST];

	while (nb) {
		unsigned n = nb < burst ? nb : burst;

		for (unsigned i = 0; i < n; i++)
			pkts[i] = tenant_pkt(from, tenant, len, to);
		assert_int_equal(ina_port_tx_burst(from, pkts, (uint16_t)n), n);
		nb -= n;
	}
}

/* Receives and frees until 'want' arrived, or until nothing came for
 * 'quiet_ns' (want 0), or the deadline passed; returns how many. */
static unsigned
rx_drain(struct ina_port *port, unsigned want, uint64_t quiet_ns)
{
	uint64_t end = ina_now_ns() + RX_DEADLINE_NS, last = ina_now_ns();
	struct ina_pkt *pkts[INA_MAX_BURST];
	unsigned nb = 0;

	while ((want == 0 || nb < want) && ina_now_ns() < end) {
		uint16_t n = ina_port_rx_burst(port, pkts, INA_MAX_BURST);

		ina_pkt_free_bulk(pkts, n);
		nb += n;
		if (n) {
			last = ina_now_ns();
			continue;
		}
		if (want == 0 && ina_now_ns() - last >= quiet_ns)
			break;
		ina_port_wait(port, 10 * INA_NS_PER_MS);
	}
	return nb;
}

/*
 * Tenants 0..5 and short datagrams to a port of 3 queues, one datagram a
 * message: tenant t in queue t % 3; 55 bytes (one short of a header, tenant
 * byte 1) in queue 0, 56 bytes of tenant 1 in queue 1. The kernel runs the
 * program on the UDP payload: read at the UDP or IP header, the tenant byte
 * would be another (and 'len' would count the headers).
 */
static void
steer(const char *rx_spec)
{
	struct ina_port *a, *b;
	struct ina_peer to_b;
	/* tenant, how many */
	static const unsigned plan[][2] = { { 0, 4 }, { 1, 5 }, { 2, 7 },
					    { 3, 1 }, { 4, 3 }, { 5, 2 } };
	unsigned nb = 0;

	a = port_open_ok("udp:bind=127.0.0.1:0,gso=0");
	b = port_open_ok(rx_spec);
	peer_of(a, b, &to_b);
	for (unsigned i = 0; i < sizeof(plan) / sizeof(plan[0]); i++) {
		send_tenant(a, &to_b, (uint8_t)plan[i][0], 200, plan[i][1], 1);
		nb += plan[i][1];
	}
	send_tenant(a, &to_b, 1, INA_HDR_SIZE - 1, 6, 1);
	send_tenant(a, &to_b, 1, INA_HDR_SIZE, 1, 1);
	nb += 7;
	assert_int_equal(rx_drain(b, nb, 0), nb);
	assert_int_equal(rxq(b, 0), 4 + 1 + 6);
	assert_int_equal(rxq(b, 1), 5 + 3 + 1);
	assert_int_equal(rxq(b, 2), 7 + 2);
	for (unsigned q = 3; q < INA_PORT_UDP_MAX_QUEUES; q++)
		assert_false(has_rxq(b, q));
	assert_int_equal(b->stats.rx_pkts, nb);
	assert_int_equal(ina_port_udp_rx_held(b), 0);
	ina_port_close(a);
	ina_port_close(b);
}

static void
test_steer_gro(void **state)
{
	(void)state;
	steer("udp:bind=127.0.0.1:0,tenant_queues=3");
}

static void
test_steer_plain(void **state)
{
	(void)state;
	steer("udp:bind=127.0.0.1:0,tenant_queues=3,gro=0");
}

/* A port of one queue lists no counter per queue; one of 8 takes tenant 15 in
 * queue 7. */
static void
test_steer_edges(void **state)
{
	struct ina_port *a, *one, *eight;
	struct ina_peer to;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,gso=0");
	one = port_open_ok("udp:bind=127.0.0.1:0,tenant_queues=1");
	eight = port_open_ok("udp:bind=127.0.0.1:0,tenant_queues=8,gro=0");
	peer_of(a, one, &to);
	send_tenant(a, &to, 1, 100, 3, 1);
	assert_int_equal(rx_drain(one, 3, 0), 3);
	for (unsigned q = 0; q < INA_PORT_UDP_MAX_QUEUES; q++)
		assert_false(has_rxq(one, q));
	peer_of(a, eight, &to);
	send_tenant(a, &to, 15, 100, 2, 1);
	send_tenant(a, &to, 8, 100, 1, 1);
	assert_int_equal(rx_drain(eight, 3, 0), 3);
	assert_int_equal(rxq(eight, 7), 2);
	assert_int_equal(rxq(eight, 0), 1);
	ina_port_close(a);
	ina_port_close(one);
	ina_port_close(eight);
}

/*
 * A flood in one queue: 3200 datagrams of tenant 'flood' (GSO messages of
 * 32), then 10 of tenant 'few' from another sender. With 2 queues the first
 * burst holds all 10 (a queue's share of a burst is half), whether the port
 * polls the flooded queue first (flood 2, in queue 0, where a fresh port
 * starts) or second; with one queue they wait behind the flood, or the
 * kernel dropped them for a full buffer: the first burst holds none.
 * Returns how many of the 10 the first burst held; *few_q: the packets
 * counted in the few's queue once all are drained (a port of one queue
 * lists no such counter: 0).
 */
static unsigned
flood_first_burst(const char *rx_spec, uint8_t flood, uint8_t few, uint64_t *few_q)
{
	enum { FLOOD = 3200, FEW = 10 };
	struct ina_port *a, *c, *b;
	struct ina_peer to_b;
	struct ina_pkt *pkts[INA_MAX_BURST];
	uint64_t end;
	unsigned nb_few = 0;
	uint16_t n = 0;

	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=64");
	c = port_open_ok("udp:bind=127.0.0.1:0,pkts=64");
	b = port_open_ok(rx_spec);
	peer_of(a, b, &to_b);
	send_tenant(a, &to_b, flood, 1000, FLOOD, INA_MAX_BURST);
	send_tenant(c, &to_b, few, 1000, FEW, 1);
	/* Loopback delivers within the send; let a slow softirq finish. */
	usleep(20000);
	end = ina_now_ns() + RX_DEADLINE_NS;
	while (n == 0 && ina_now_ns() < end)
		n = ina_port_rx_burst(b, pkts, INA_MAX_BURST);
	assert_true(n > 0);
	for (uint16_t i = 0; i < n; i++)
		nb_few += pkts[i]->data[INA_WIRE_TENANT_OFFSET] == few;
	ina_pkt_free_bulk(pkts, n);
	rx_drain(b, 0, 50 * INA_NS_PER_MS);
	*few_q = has_rxq(b, few % 2) ? rxq(b, few % 2) : 0;
	assert_int_equal(ina_port_udp_rx_held(b), 0);
	ina_port_close(a);
	ina_port_close(c);
	ina_port_close(b);
	return nb_few;
}

static void
flood(const char *queues_spec, const char *one_spec)
{
	uint64_t q;

	assert_int_equal(flood_first_burst(queues_spec, 1, 2, &q), 10);
	assert_int_equal(q, 10);
	assert_int_equal(flood_first_burst(queues_spec, 2, 1, &q), 10);
	assert_int_equal(q, 10);
	assert_int_equal(flood_first_burst(one_spec, 1, 2, &q), 0);
}

static void
test_flood_gro(void **state)
{
	(void)state;
	flood("udp:bind=127.0.0.1:0,tenant_queues=2", "udp:bind=127.0.0.1:0");
}

static void
test_flood_plain(void **state)
{
	(void)state;
	flood("udp:bind=127.0.0.1:0,tenant_queues=2,gro=0,pkts=8192",
	      "udp:bind=127.0.0.1:0,gro=0,pkts=8192");
}

/*
 * A queue found empty sits out a few receives, never more than 3: after
 * empty polls have backed both queues off, a flood in queue 1 and 10
 * packets in queue 0 arrive, and the 10 come within the first 4 bursts that
 * follow (without the port's wait, which would clear the back-off).
 */
static void
test_idle_queue_bounded(void **state)
{
	struct ina_port *a, *c, *b;
	struct ina_peer to_b;
	struct ina_pkt *pkts[INA_MAX_BURST];
	unsigned nb_few = 0, bursts = 0;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=64");
	c = port_open_ok("udp:bind=127.0.0.1:0,pkts=64");
	b = port_open_ok("udp:bind=127.0.0.1:0,tenant_queues=2");
	peer_of(a, b, &to_b);
	for (unsigned k = 0; k < 10; k++)
		assert_int_equal(ina_port_rx_burst(b, pkts, INA_MAX_BURST), 0);
	send_tenant(a, &to_b, 1, 1000, 1600, INA_MAX_BURST);
	send_tenant(c, &to_b, 2, 1000, 10, 1);
	usleep(20000);
	for (; bursts < 4 && nb_few < 10; bursts++) {
		uint16_t n = ina_port_rx_burst(b, pkts, INA_MAX_BURST);

		for (uint16_t i = 0; i < n; i++)
			nb_few += pkts[i]->data[INA_WIRE_TENANT_OFFSET] == 2;
		ina_pkt_free_bulk(pkts, n);
	}
	assert_int_equal(nb_few, 10);
	rx_drain(b, 0, 50 * INA_NS_PER_MS);
	assert_int_equal(ina_port_udp_rx_held(b), 0);
	ina_port_close(a);
	ina_port_close(c);
	ina_port_close(b);
}

/* The port's wait ends for a packet in any queue, not only queue 0's. */
static void
test_wait_any_queue(void **state)
{
	struct ina_port *a, *b;
	struct ina_peer to_b;
	struct ina_pkt *p;
	uint64_t t0;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,gso=0");
	b = port_open_ok("udp:bind=127.0.0.1:0,tenant_queues=4");
	peer_of(a, b, &to_b);
	send_tenant(a, &to_b, 3, 100, 1, 1);
	t0 = ina_now_ns();
	ina_port_wait(b, 5 * INA_NS_PER_S);
	assert_true(ina_now_ns() - t0 < INA_NS_PER_S);
	assert_int_equal(ina_port_rx_burst(b, &p, 1), 1);
	ina_pkt_free(p);
	assert_int_equal(rxq(b, 3), 1);
	ina_port_close(a);
	ina_port_close(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steer_gro),	   cmocka_unit_test(test_steer_plain),
		cmocka_unit_test(test_steer_edges),	   cmocka_unit_test(test_flood_gro),
		cmocka_unit_test(test_flood_plain),	   cmocka_unit_test(test_wait_any_queue),
		cmocka_unit_test(test_idle_queue_bounded),
	};

	return cmocka_run_group_tests_name("port_udp_queues", tests, NULL, NULL);
}
