/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the heap packet pool (pkt.c), port specs (port.c) and the udp
 * port (port_udp.c) over 127.0.0.1: bursts, fan-out, option errors, injected
 * loss, truncation, tx errors and pool leaks; GSO and GRO (mixed sizes split
 * right, a burst of a few sizes to one and to several peers grouped into runs
 * of one size, a hand-made GSO message, every GRO buffer held, the kernel refusing
 * GSO in a network namespace of the test's own). Every receive loop is
 * bounded by a deadline.
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

#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "udp_check.h"

#include "skip.h"

#include "ina/faults.h"
#include "ina/pkt.h"
#include "ina/port.h"
#include "ina/port_udp.h"
#include "ina/util.h"
#include "ina/wire.h"

#define RX_DEADLINE_NS (2 * INA_NS_PER_S)

static void
assert_pool_full(const struct ina_port *port, unsigned nb_pkts)
{
	assert_int_equal(ina_pkt_pool_avail(port->pool), nb_pkts);
}

/* Packet 'seq' of a test stream: its length and its byte 'i'. */
static uint32_t
pattern_len(uint32_t seq)
{
	return 4 + (seq * 37) % 1000;
}

static uint8_t
pattern_byte(uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 7 + i * 13 + 1);
}

static struct ina_pkt *
pattern_pkt(struct ina_port *port, uint32_t seq, const struct ina_peer *peer)
{
	struct ina_pkt *p = ina_pkt_alloc(port->pool);
	uint32_t i;

	assert_non_null(p);
	p->len = pattern_len(seq);
	assert_true(p->len <= p->cap);
	memcpy(p->data, &seq, sizeof(seq));
	for (i = sizeof(seq); i < p->len; i++)
		p->data[i] = pattern_byte(seq, i);
	if (peer)
		p->peer = *peer;
	return p;
}

/* Checks a received pattern packet; returns its seq. */
static uint32_t
pattern_check(const struct ina_pkt *p)
{
	uint32_t seq, i;

	assert_true(p->len >= sizeof(seq));
	memcpy(&seq, p->data, sizeof(seq));
	assert_int_equal(p->len, pattern_len(seq));
	for (i = sizeof(seq); i < p->len; i++)
		if (p->data[i] != pattern_byte(seq, i))
			fail_msg("seq %u: byte %u is %u, not %u", seq, i, p->data[i],
				 pattern_byte(seq, i));
	return seq;
}

/*
 * Receives until 'done' says so or the deadline passes; calls 'each' on every
 * packet (then frees it). Returns the number of packets received.
 */
typedef int (*rx_done_fn)(const struct ina_port *port, unsigned nb, void *arg);
typedef void (*rx_each_fn)(const struct ina_pkt *p, void *arg);

static unsigned
rx_until(struct ina_port *port, rx_done_fn done, void *done_arg, rx_each_fn each, void *each_arg,
	 uint64_t deadline_ns)
{
	uint64_t end = ina_now_ns() + deadline_ns, now;
	struct ina_pkt *pkts[INA_MAX_BURST];
	unsigned nb = 0;

	while (!done(port, nb, done_arg)) {
		uint16_t nb_rx, i;

		nb_rx = ina_port_rx_burst(port, pkts, INA_MAX_BURST);
		for (i = 0; i < nb_rx; i++) {
			if (each)
				each(pkts[i], each_arg);
			ina_pkt_free(pkts[i]);
		}
		nb += nb_rx;
		if (nb_rx)
			continue;
		now = ina_now_ns();
		if (now >= end)
			break;
		ina_port_wait(port, end - now);
	}
	return nb;
}

static int
done_count(const struct ina_port *port, unsigned nb, void *arg)
{
	(void)port;
	return nb >= *(unsigned *)arg;
}

/* Done once every datagram sent is accounted for: received or dropped. */
static int
done_accounted(const struct ina_port *port, unsigned nb, void *arg)
{
	(void)nb;
	return port->stats.rx_pkts + port->stats.rx_drop + port->stats.inject_drop >=
	       *(unsigned *)arg;
}

/* ina_pkt_alloc_bulk: one get for a burst, what is left when the pool runs
 * low, a failure counted only when it gets none. */
static void
test_port_udp_pool_alloc_bulk(void **state)
{
	struct ina_pkt *pkts[8], *more[8];
	struct ina_pkt_pool *pool;

	(void)state;
	pool = ina_pkt_pool_create(6, 64);
	assert_non_null(pool);
	assert_int_equal(ina_pkt_alloc_bulk(pool, pkts, 0), 0);
	assert_int_equal(ina_pkt_alloc_bulk(pool, pkts, 4), 4);
	for (unsigned i = 0; i < 4; i++) {
		assert_true(pkts[i]->pool == pool);
		assert_int_equal(pkts[i]->len, 0);
		assert_int_equal(pkts[i]->cap, 64);
		for (unsigned j = 0; j < i; j++)
			assert_true(pkts[i] != pkts[j]);
	}
	assert_int_equal(ina_pkt_alloc_bulk(pool, more, 8), 2);
	assert_int_equal(pool->nb_alloc_fail, 0);
	assert_int_equal(ina_pkt_alloc_bulk(pool, more + 2, 8), 0);
	assert_int_equal(pool->nb_alloc_fail, 1);
	assert_int_equal(ina_pkt_pool_avail(pool), 0);
	ina_pkt_free_bulk(pkts, 4);
	ina_pkt_free_bulk(more, 2);
	assert_int_equal(ina_pkt_pool_avail(pool), 6);
	ina_pkt_pool_destroy(pool);
}

/* ina_peer_equal() at every length: equal when the first 'len' bytes are,
 * whatever lies past them; unequal on any byte within, or another len. */
static void
test_peer_equal_lengths(void **state)
{
	(void)state;
	for (unsigned n = 0; n < INA_PEER_SIZE; n++) {
		struct ina_peer a, b;

		memset(&a, 0x11, sizeof(a));
		memset(&b, 0x22, sizeof(b)); /* past 'len': different */
		for (unsigned k = 0; k < n; k++)
			a.bytes[k] = b.bytes[k] = (uint8_t)(k * 7 + 1);
		a.len = b.len = (uint8_t)n;
		assert_true(ina_peer_equal(&a, &b));
		for (unsigned k = 0; k < n; k++) {
			b.bytes[k] ^= 0x80;
			assert_false(ina_peer_equal(&a, &b));
			b.bytes[k] ^= 0x80;
		}
		if (n + 1 < INA_PEER_SIZE) {
			b.len = (uint8_t)(n + 1);
			assert_false(ina_peer_equal(&a, &b));
		}
	}
}

static void
test_port_udp_pool_heap(void **state)
{
	struct ina_pkt *pkts[8], *p;
	struct ina_pkt_pool *pool;
	struct ina_peer dst;
	unsigned i, j;

	(void)state;
	errno = 0;
	assert_null(ina_pkt_pool_create(0, 100));
	assert_int_equal(errno, EINVAL);
	assert_null(ina_pkt_pool_create(4, 0));
	ina_pkt_pool_destroy(NULL);
	assert_int_equal(ina_pkt_pool_avail(NULL), 0);

	pool = ina_pkt_pool_create(8, 100);
	assert_non_null(pool);
	assert_int_equal(pool->buf_size, 100);
	assert_int_equal(ina_pkt_pool_avail(pool), 8);
	for (i = 0; i < 8; i++) {
		pkts[i] = ina_pkt_alloc(pool);
		assert_non_null(pkts[i]);
		/* The payload after the ina header starts on a cache line. */
		assert_int_equal((uintptr_t)(pkts[i]->data + INA_HDR_SIZE) % 64, 0);
		assert_int_equal(pkts[i]->cap, 100);
		assert_int_equal(pkts[i]->len, 0);
		assert_int_equal(pkts[i]->peer.len, 0);
		assert_null(pkts[i]->dsts);
		assert_true(pkts[i]->pool == pool);
		/* Buffers do not overlap. */
		memset(pkts[i]->data, (int)i, pkts[i]->cap);
		for (j = 0; j < i; j++)
			assert_true(pkts[j]->data + 100 <= pkts[i]->data ||
				    pkts[i]->data + 100 <= pkts[j]->data);
	}
	assert_int_equal(ina_pkt_pool_avail(pool), 0);
	assert_int_equal(pool->nb_alloc_fail, 0);
	assert_null(ina_pkt_alloc(pool));
	assert_null(ina_pkt_alloc(pool));
	assert_int_equal(pool->nb_alloc_fail, 2);
	for (i = 0; i < 8; i++)
		assert_int_equal(pkts[i]->data[99], i);

	/* put resets what a user may have set. */
	memset(&dst, 0, sizeof(dst));
	pkts[3]->len = 50;
	pkts[3]->peer.len = 16;
	pkts[3]->dsts = &dst;
	pkts[3]->dst_mask = 5;
	ina_pkt_free(pkts[3]);
	ina_pkt_free(NULL);
	assert_int_equal(ina_pkt_pool_avail(pool), 1);
	p = ina_pkt_alloc(pool);
	assert_true(p == pkts[3]);
	assert_int_equal(p->len, 0);
	assert_int_equal(p->peer.len, 0);
	assert_null(p->dsts);
	assert_int_equal(p->dst_mask, 0);
	assert_int_equal(p->cap, 100);

	ina_pkt_free_bulk(pkts, 8);
	assert_int_equal(ina_pkt_pool_avail(pool), 8);
	ina_pkt_pool_destroy(pool);
}

static void
test_port_udp_pool_free_bulk_mixed(void **state)
{
	struct ina_pkt_pool *a, *b;
	struct ina_pkt *pkts[7];

	(void)state;
	a = ina_pkt_pool_create(3, 64);
	b = ina_pkt_pool_create(3, 2000);
	assert_non_null(a);
	assert_non_null(b);
	pkts[0] = ina_pkt_alloc(a);
	pkts[1] = ina_pkt_alloc(a);
	pkts[2] = ina_pkt_alloc(b);
	pkts[3] = NULL;
	pkts[4] = ina_pkt_alloc(a);
	pkts[5] = ina_pkt_alloc(b);
	pkts[6] = ina_pkt_alloc(b);
	assert_int_equal(ina_pkt_pool_avail(a), 0);
	assert_int_equal(ina_pkt_pool_avail(b), 0);
	ina_pkt_free_bulk(pkts, 7);
	assert_int_equal(ina_pkt_pool_avail(a), 3);
	assert_int_equal(ina_pkt_pool_avail(b), 3);
	ina_pkt_pool_destroy(a);
	ina_pkt_pool_destroy(b);
}

struct seen {
	uint8_t *hits; /* per seq */
	unsigned nb_seq;
	const struct ina_peer *from; /* expected source, or NULL */
	uint64_t bytes;
};

static void
each_pattern(const struct ina_pkt *p, void *arg)
{
	struct seen *s = arg;
	uint32_t seq = pattern_check(p);

	assert_true(seq < s->nb_seq);
	s->hits[seq]++;
	s->bytes += p->len;
	if (s->from)
		assert_true(ina_peer_equal(&p->peer, s->from));
}

static void
test_port_udp_send_recv(void **state)
{
	struct ina_port *a, *b;
	struct ina_peer to_b, b_sees_a;
	struct ina_pkt *pkts[INA_MAX_BURST];
	uint8_t hits[96] = { 0 };
	struct seen s = { hits, 96, &b_sees_a, 0 };
	char a_addr[64], str[64];
	uint64_t bytes = 0;
	unsigned want = 96, burst, i, nb;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=256");
	b = port_open_ok("udp:bind=127.0.0.1:0,pkts=256,mtu=2000");
	assert_int_equal(a->max_pkt, 9000);
	assert_int_equal(b->max_pkt, 2000);
	assert_int_equal(b->pool->buf_size, 2000);
	peer_of(a, b, &to_b);
	peer_of(b, a, &b_sees_a);

	for (burst = 0; burst < 3; burst++) {
		for (i = 0; i < INA_MAX_BURST; i++) {
			pkts[i] = pattern_pkt(a, burst * INA_MAX_BURST + i, &to_b);
			bytes += pkts[i]->len;
		}
		assert_int_equal(ina_port_tx_burst(a, pkts, INA_MAX_BURST), INA_MAX_BURST);
	}
	assert_int_equal(a->stats.tx_pkts, 96);
	assert_int_equal(a->stats.tx_bytes, bytes);
	assert_int_equal(a->stats.tx_bursts, 3);
	assert_int_equal(a->stats.tx_drop, 0);
	assert_pool_full(a, 256);

	nb = rx_until(b, done_count, &want, each_pattern, &s, RX_DEADLINE_NS);
	assert_int_equal(nb, 96);
	for (i = 0; i < 96; i++)
		assert_int_equal(hits[i], 1);
	assert_int_equal(s.bytes, bytes);
	assert_int_equal(b->stats.rx_pkts, 96);
	assert_int_equal(b->stats.rx_bytes, bytes);
	assert_true(b->stats.rx_bursts >= 3 && b->stats.rx_bursts <= 96);
	assert_int_equal(b->stats.rx_drop, 0);
	assert_int_equal(b->stats.inject_drop, 0);
	assert_pool_full(b, 256);

	/* Nothing more: an empty rx_burst takes no buffer. */
	assert_int_equal(ina_port_rx_burst(b, pkts, INA_MAX_BURST), 0);
	assert_pool_full(b, 256);

	/* peer_str of what b saw is a's bound address. */
	assert_int_equal(ina_port_udp_local(a, a_addr, sizeof(a_addr)), 0);
	assert_string_equal(ina_port_peer_str(b, &b_sees_a, str, sizeof(str)), a_addr);

	ina_port_close(a);
	ina_port_close(b);
	ina_port_close(NULL);
}

/* More than INA_MAX_BURST packets in one tx call; rx never returns more than asked. */
static void
test_port_udp_large_tx_call(void **state)
{
	struct ina_pkt *pkts[100], *rx[INA_MAX_BURST + 8];
	uint8_t hits[100] = { 0 };
	struct seen s = { hits, 100, NULL, 0 };
	struct ina_port *a, *b;
	struct ina_peer to_b;
	unsigned i, nb, want = 100;
	uint16_t got;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=128");
	b = port_open_ok("udp:bind=127.0.0.1:0,pkts=128");
	peer_of(a, b, &to_b);
	for (i = 0; i < 100; i++)
		pkts[i] = pattern_pkt(a, i, &to_b);
	assert_int_equal(ina_port_tx_burst(a, pkts, 100), 100);
	assert_int_equal(a->stats.tx_pkts, 100);
	assert_int_equal(a->stats.tx_bursts, 1);
	assert_pool_full(a, 128);

	/* Ask for more than INA_MAX_BURST once the data is there. */
	ina_port_wait(b, RX_DEADLINE_NS);
	got = ina_port_rx_burst(b, rx, INA_MAX_BURST + 8);
	assert_true(got >= 1 && got <= INA_MAX_BURST);
	for (i = 0; i < got; i++) {
		each_pattern(rx[i], &s);
		ina_pkt_free(rx[i]);
	}
	want -= got;
	nb = rx_until(b, done_count, &want, each_pattern, &s, RX_DEADLINE_NS);
	assert_int_equal(nb, want);
	for (i = 0; i < 100; i++)
		assert_int_equal(hits[i], 1);
	assert_pool_full(b, 128);
	ina_port_close(a);
	ina_port_close(b);
}

struct fanout_check {
	const struct ina_peer *from;
	unsigned nb;
};

static void
each_fanout(const struct ina_pkt *p, void *arg)
{
	struct fanout_check *c = arg;

	assert_int_equal(pattern_check(p), 7);
	assert_true(ina_peer_equal(&p->peer, c->from));
	c->nb++;
}

/* One packet to dsts[0..2] with bits 0 and 2 set arrives at exactly those two. */
static void
test_port_udp_fanout(void **state)
{
	struct ina_port *a, *r[3];
	struct ina_peer dsts[3], seen_a;
	struct fanout_check c = { &seen_a, 0 };
	struct ina_pkt *p, *rx[INA_MAX_BURST];
	unsigned i, one = 1;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=16");
	for (i = 0; i < 3; i++) {
		r[i] = port_open_ok("udp:bind=127.0.0.1:0,pkts=16");
		peer_of(a, r[i], &dsts[i]);
	}
	peer_of(r[0], a, &seen_a);

	p = pattern_pkt(a, 7, NULL);
	p->dsts = dsts;
	p->dst_mask = (1ull << 0) | (1ull << 2);
	assert_int_equal(ina_port_tx_burst(a, &p, 1), 1);
	assert_int_equal(a->stats.tx_pkts, 2);
	assert_int_equal(a->stats.tx_bytes, 2 * pattern_len(7));
	assert_int_equal(a->stats.tx_bursts, 1);
	assert_int_equal(a->stats.tx_drop, 0);
	assert_pool_full(a, 16);

	assert_int_equal(rx_until(r[0], done_count, &one, each_fanout, &c, RX_DEADLINE_NS), 1);
	assert_int_equal(rx_until(r[2], done_count, &one, each_fanout, &c, RX_DEADLINE_NS), 1);
	assert_int_equal(c.nb, 2);
	ina_port_wait(r[1], 50 * INA_NS_PER_MS);
	assert_int_equal(ina_port_rx_burst(r[1], rx, INA_MAX_BURST), 0);
	/* Nothing extra at the two destinations either. */
	assert_int_equal(ina_port_rx_burst(r[0], rx, INA_MAX_BURST), 0);
	assert_int_equal(ina_port_rx_burst(r[2], rx, INA_MAX_BURST), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i]->stats.rx_pkts, i == 1 ? 0 : 1);
		assert_pool_full(r[i], 16);
		ina_port_close(r[i]);
	}
	ina_port_close(a);
}

/* All 64 destination bits: each destination gets the same bytes. */
static void
test_port_udp_fanout_all(void **state)
{
	struct ina_port *a, *r[3];
	struct ina_peer dsts[64], seen_a;
	struct fanout_check c = { &seen_a, 0 };
	struct ina_pkt *p;
	unsigned i, want[3] = { 22, 21, 21 };

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=16");
	for (i = 0; i < 3; i++)
		r[i] = port_open_ok("udp:bind=127.0.0.1:0,pkts=16");
	for (i = 0; i < 64; i++)
		peer_of(a, r[i % 3], &dsts[i]);
	peer_of(r[0], a, &seen_a);
	p = pattern_pkt(a, 7, NULL);
	p->dsts = dsts;
	p->dst_mask = UINT64_MAX;
	assert_int_equal(ina_port_tx_burst(a, &p, 1), 1);
	assert_int_equal(a->stats.tx_pkts, 64);
	for (i = 0; i < 3; i++) {
		assert_int_equal(rx_until(r[i], done_count, &want[i], each_fanout, &c,
					  RX_DEADLINE_NS),
				 want[i]);
		ina_port_close(r[i]);
	}
	assert_int_equal(c.nb, 64);
	ina_port_close(a);
}

static void
each_small(const struct ina_pkt *p, void *arg)
{
	uint32_t id;

	(void)arg;
	assert_int_equal(p->len, 8);
	memcpy(&id, p->data, sizeof(id));
	assert_true(id < 33);
	assert_int_equal(p->data[4], 0xab);
	assert_int_equal(p->data[7], 0xab);
}

/* 33 packets fanned out to 64 destinations: 2112 messages, more than one batch. */
static void
test_port_udp_fanout_many_batches(void **state)
{
	struct ina_peer dsts[64], to_b;
	struct ina_pkt *pkts[33];
	struct ina_port *a, *b;
	unsigned i, want = 33 * 64, nb;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=64,mtu=256");
	b = port_open_ok("udp:bind=127.0.0.1:0,pkts=64,mtu=256,rcvbuf=33554432");
	peer_of(a, b, &to_b);
	for (i = 0; i < 64; i++)
		dsts[i] = to_b;
	for (i = 0; i < 33; i++) {
		pkts[i] = ina_pkt_alloc(a->pool);
		assert_non_null(pkts[i]);
		pkts[i]->len = 8;
		memcpy(pkts[i]->data, &i, sizeof(i));
		memset(pkts[i]->data + 4, 0xab, 4);
		pkts[i]->dsts = dsts;
		pkts[i]->dst_mask = UINT64_MAX;
	}
	assert_int_equal(ina_port_tx_burst(a, pkts, 33), 33);
	assert_int_equal(a->stats.tx_pkts + a->stats.tx_drop, want);
	assert_int_equal(a->stats.tx_drop, 0);
	assert_int_equal(a->stats.tx_bytes, 8ull * want);
	assert_int_equal(a->stats.tx_bursts, 1);
	assert_pool_full(a, 64);

	nb = rx_until(b, done_count, &want, each_small, NULL, RX_DEADLINE_NS / 4);
	/* Loopback drops past rcvbuf, which non-root users cannot force. */
	assert_true(nb > 0 && nb <= want);
	if (nb < want)
		print_message("fanout_many_batches: %u of %u received (rcvbuf limit)\n", nb, want);
	assert_int_equal(b->stats.rx_pkts, nb);
	assert_int_equal(b->stats.rx_bytes, 8ull * nb);
	assert_pool_full(b, 64);
	ina_port_close(a);
	ina_port_close(b);
}

static void
test_port_udp_bad_specs(void **state)
{
	static const char *const bad[] = {
		"",
		"foo",
		"dpdk:",
		"udpx",
		":bind=127.0.0.1:0",
		"udp:mtu",
		"udp:mtu=",
		"udp:mtu=127",
		"udp:mtu=65508",
		"udp:mtu=abc",
		"udp:pkts=0",
		"udp:pkts=-1",
		"udp:rcvbuf=1",
		"udp:sndbuf=x",
		"udp:drop=1",
		"udp:drop=1.5",
		"udp:drop=-0.1",
		"udp:drop=nan",
		"udp:seed=abc",
		"udp:busy=2",
		"udp:tenant_queues=0",
		"udp:tenant_queues=9",
		"udp:bogus=1",
		"udp:bind=127.0.0.1",
		"udp:bind=127.0.0.1:",
		"udp:bind=:5000",
		"udp:bind=127.0.0.1:65536",
		"udp:mtu=1000,,bogus=2",
	};
	static struct ina_port dummy;
	struct ina_port *port;
	char err[256];
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		port = &dummy;
		if (ina_port_open(bad[i], &port, err, sizeof(err)) != -EINVAL)
			fail_msg("spec '%s' was not rejected with -EINVAL", bad[i]);
		assert_null(port);
		assert_true(err[0] != '\0');
	}
	assert_int_equal(ina_port_open("foo:x=1", &port, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "foo"));
	assert_non_null(strstr(err, "udp"));
	/* The backend's reason, after the spec. */
	assert_int_equal(ina_port_open("udp:mtu=1000,,bogus=2", &port, err, sizeof(err)), -EINVAL);
	assert_string_equal(
		err,
		"cannot open port udp:mtu=1000,,bogus=2: unknown option 'bogus' "
		"(known: bind, mtu, pkts, rcvbuf, sndbuf, busy, gso, gro, tenant_queues, " INA_FAULTS_KEYS
		")");
	assert_int_equal(ina_port_open("udp:mtu=5", &port, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "bad value '5' for option 'mtu' (128..65507)"));
	assert_int_equal(ina_port_open("udp:corrupt=0.1", &port, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "corrupt= is for ports that verify checksums"));
	assert_int_equal(ina_port_open(NULL, &port, err, sizeof(err)), -EINVAL);
	/* A NULL or empty error buffer is fine. */
	assert_int_equal(ina_port_open("nope", &port, NULL, 0), -EINVAL);
	assert_int_equal(ina_port_open("nope", &port, err, 0), -EINVAL);

	/* Good ones, including edge values and an empty option list. */
	port = port_open_ok("udp:mtu=128,pkts=1,drop=0,seed=0,busy=1,rcvbuf=4096,sndbuf=4096");
	assert_int_equal(port->max_pkt, 128);
	ina_port_close(port);
	port = port_open_ok("udp:bind=localhost:0,mtu=65507,pkts=2,drop=0.999");
	ina_port_close(port);
	port = port_open_ok("udp:");
	ina_port_close(port);
}

static void
test_port_udp_resolve(void **state)
{
	static const char *const bad[] = {
		"",
		"127.0.0.1",
		"127.0.0.1:",
		":80",
		"127.0.0.1:0",
		"127.0.0.1:65536",
		"127.0.0.1:x",
		"127.0.0.1:80x",
		"1.2.3.4:5:6x",
	};
	struct ina_peer peer, peer2;
	struct ina_port *port;
	char buf[64], own[64];
	uint32_t ip;
	uint16_t udp;
	unsigned i;

	(void)state;
	port = port_open_ok("udp:bind=127.0.0.1:0,pkts=4");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ina_port_resolve(port, bad[i], &peer) != -EINVAL)
			fail_msg("address '%s' was not rejected with -EINVAL", bad[i]);

	assert_int_equal(ina_port_resolve(port, "10.1.2.3:9150", &peer), 0);
	assert_int_equal(peer.len, 16);
	assert_string_equal(ina_port_peer_str(port, &peer, buf, sizeof(buf)), "10.1.2.3:9150");
	assert_int_equal(ina_port_resolve(port, "localhost:65535", &peer), 0);
	assert_int_equal(ina_port_resolve(port, "127.0.0.1:65535", &peer2), 0);
	assert_true(ina_peer_equal(&peer, &peer2));
	assert_string_equal(ina_port_peer_str(port, &peer, buf, sizeof(buf)), "127.0.0.1:65535");
	peer.len = 0;
	assert_string_equal(ina_port_peer_str(port, &peer, buf, sizeof(buf)), "(none)");

	/* peer_inet: a peer's address, and the port's own for NULL. */
	assert_int_equal(ina_port_resolve(port, "10.1.2.3:9150", &peer), 0);
	assert_int_equal(ina_port_peer_inet(port, &peer, &ip, &udp), 0);
	assert_int_equal(ip, 0x0a010203);
	assert_int_equal(udp, 9150);
	assert_int_equal(ina_port_peer_inet(port, NULL, &ip, &udp), 0);
	assert_int_equal(ip, 0x7f000001);
	assert_int_equal(ina_port_udp_local(port, buf, sizeof(buf)), 0);
	snprintf(own, sizeof(own), "127.0.0.1:%u", udp);
	assert_string_equal(buf, own);
	peer.len = 0;
	assert_int_equal(ina_port_peer_inet(port, &peer, &ip, &udp), -EINVAL);

	/* ina_port_udp_local: errors. */
	assert_int_equal(ina_port_udp_local(NULL, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(ina_port_udp_local(port, buf, 4), -ENOSPC);
	assert_int_equal(ina_port_udp_local(port, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "127.0.0.1:"));
	ina_port_close(port);
}

/* The default bind (0.0.0.0, ephemeral port) is reachable on 127.0.0.1. */
static void
test_port_udp_default_bind(void **state)
{
	struct ina_port *a, *b;
	struct ina_peer to_b;
	struct ina_pkt *p;
	char addr[64], to[80];
	unsigned one = 1;

	(void)state;
	a = port_open_ok("udp:pkts=8");
	b = port_open_ok("udp");
	assert_int_equal(b->max_pkt, 9000);
	assert_int_equal(ina_pkt_pool_avail(b->pool), 4096);
	assert_int_equal(ina_port_udp_local(b, addr, sizeof(addr)), 0);
	assert_int_equal(strncmp(addr, "0.0.0.0:", 8), 0);
	assert_true(strcmp(addr, "0.0.0.0:0") != 0);
	snprintf(to, sizeof(to), "127.0.0.1:%s", addr + 8);
	assert_int_equal(ina_port_resolve(a, to, &to_b), 0);
	p = pattern_pkt(a, 3, &to_b);
	assert_int_equal(ina_port_tx_burst(a, &p, 1), 1);
	assert_int_equal(rx_until(b, done_count, &one, NULL, NULL, RX_DEADLINE_NS), 1);
	assert_pool_full(a, 8);
	assert_pool_full(b, 4096);
	ina_port_close(a);
	ina_port_close(b);
}

/*
 * Sends 'total' pattern packets from a to b in bursts, and after each burst
 * receives until b has accounted for every datagram a handed to the kernel
 * (received or dropped on purpose). Returns the number received.
 */
static unsigned
send_stream(struct ina_port *a, struct ina_port *b, unsigned total, struct seen *s)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct ina_peer to_b;
	unsigned sent = 0, nb_rx = 0;

	peer_of(a, b, &to_b);
	while (sent < total) {
		unsigned n = total - sent < INA_MAX_BURST ? total - sent : INA_MAX_BURST;
		unsigned i, want;

		for (i = 0; i < n; i++)
			pkts[i] = pattern_pkt(a, sent + i, &to_b);
		assert_int_equal(ina_port_tx_burst(a, pkts, (uint16_t)n), n);
		sent += n;
		want = (unsigned)a->stats.tx_pkts;
		nb_rx += rx_until(b, done_accounted, &want, each_pattern, s, RX_DEADLINE_NS);
		if (!done_accounted(b, 0, &want))
			fail_msg("stream stalled: %u received, %u sent", nb_rx, want);
	}
	return nb_rx;
}

/* drop=0.5 on the sender: about half never leave, the same ones for a seed. */
static void
test_port_udp_drop_tx(void **state)
{
	static uint8_t hits[2000], first_hits[2000];
	static const char *const specs[] = {
		"udp:bind=127.0.0.1:0,pkts=64,drop=0.5,seed=12345",
		"udp:bind=127.0.0.1:0,pkts=64,drop=0.5,seed=12345",
		"udp:bind=127.0.0.1:0,pkts=64,drop=0.5,seed=99",
	};
	struct seen s = { hits, 2000, NULL, 0 };
	struct ina_port *a, *b;
	unsigned nb, round;

	(void)state;
	for (round = 0; round < 3; round++) {
		a = port_open_ok(specs[round]);
		b = port_open_ok("udp:bind=127.0.0.1:0,pkts=64");
		memset(hits, 0, sizeof(hits));
		nb = send_stream(a, b, 2000, &s);
		assert_int_equal(nb + a->stats.inject_drop, 2000);
		assert_int_equal(a->stats.tx_pkts, nb);
		assert_int_equal(a->stats.tx_drop, 0);
		assert_int_equal(b->stats.rx_pkts, nb);
		assert_int_equal(b->stats.inject_drop, 0);
		assert_in_range(a->stats.inject_drop, 600, 1400);
		if (round == 0)
			memcpy(first_hits, hits, sizeof(hits));
		else if (round == 1)
			assert_memory_equal(hits, first_hits, sizeof(hits));
		else
			assert_memory_not_equal(hits, first_hits, sizeof(hits));
		assert_pool_full(a, 64);
		assert_pool_full(b, 64);
		ina_port_close(a);
		ina_port_close(b);
	}
}

/* drop=0.5 on the receiver: about half are read and dropped, and counted. */
static void
test_port_udp_drop_rx(void **state)
{
	static uint8_t hits[2000];
	struct seen s = { hits, 2000, NULL, 0 };
	struct ina_port *a, *b;
	unsigned nb, i;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=64");
	b = port_open_ok("udp:bind=127.0.0.1:0,pkts=64,drop=0.5,seed=7");
	nb = send_stream(a, b, 2000, &s);
	assert_int_equal(a->stats.tx_pkts, 2000);
	assert_int_equal(a->stats.inject_drop, 0);
	assert_int_equal(nb + b->stats.inject_drop, 2000);
	assert_int_equal(b->stats.rx_pkts, nb);
	assert_in_range(b->stats.inject_drop, 600, 1400);
	for (i = 0, nb = 0; i < 2000; i++) {
		assert_true(hits[i] <= 1);
		nb += hits[i];
	}
	assert_int_equal(nb, b->stats.rx_pkts);
	assert_pool_full(a, 64);
	assert_pool_full(b, 64);
	ina_port_close(a);
	ina_port_close(b);
}

/* A datagram larger than the receiver's mtu is dropped and counted. */
static void
test_port_udp_truncated(void **state)
{
	static const uint32_t lens[] = { 200, 128, 129, 65507, 1 };
	struct ina_pkt *pkts[5], *rx[INA_MAX_BURST];
	struct ina_port *a, *b;
	struct ina_peer to_b;
	unsigned i, want = 5, got = 0;
	uint64_t end;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=8,mtu=65507");
	b = port_open_ok("udp:bind=127.0.0.1:0,pkts=8,mtu=128");
	peer_of(a, b, &to_b);
	for (i = 0; i < 5; i++) {
		pkts[i] = ina_pkt_alloc(a->pool);
		assert_non_null(pkts[i]);
		pkts[i]->len = lens[i];
		memset(pkts[i]->data, (int)lens[i], lens[i]);
		pkts[i]->peer = to_b;
	}
	assert_int_equal(ina_port_tx_burst(a, pkts, 5), 5);
	assert_int_equal(a->stats.tx_pkts, 5);

	end = ina_now_ns() + RX_DEADLINE_NS;
	while (!done_accounted(b, 0, &want) && ina_now_ns() < end) {
		uint16_t n = ina_port_rx_burst(b, rx, INA_MAX_BURST);

		for (i = 0; i < n; i++) {
			assert_true(rx[i]->len == 128 || rx[i]->len == 1);
			assert_int_equal(rx[i]->data[0], (uint8_t)rx[i]->len);
			ina_pkt_free(rx[i]);
		}
		got += n;
		if (n == 0)
			ina_port_wait(b, 10 * INA_NS_PER_MS);
	}
	assert_int_equal(got, 2);
	assert_int_equal(b->stats.rx_pkts, 2);
	assert_int_equal(b->stats.rx_bytes, 129);
	assert_int_equal(b->stats.rx_drop, 3);
	assert_pool_full(b, 8);
	assert_pool_full(a, 8);
	ina_port_close(a);
	ina_port_close(b);
}

/* Packets with no destination are dropped and counted, and still freed. */
static void
test_port_udp_tx_no_peer(void **state)
{
	struct ina_peer dsts[2];
	struct ina_pkt *pkts[3];
	struct ina_port *a;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=4");
	memset(dsts, 0, sizeof(dsts));
	pkts[0] = pattern_pkt(a, 1, NULL); /* no peer */
	pkts[1] = pattern_pkt(a, 2, NULL); /* fan-out to two empty peers */
	pkts[1]->dsts = dsts;
	pkts[1]->dst_mask = 3;
	pkts[2] = pattern_pkt(a, 3, NULL); /* fan-out to nobody */
	pkts[2]->dsts = dsts;
	pkts[2]->dst_mask = 0;
	assert_int_equal(ina_port_tx_burst(a, pkts, 3), 1);
	assert_int_equal(a->stats.tx_drop, 3);
	assert_int_equal(a->stats.tx_pkts, 0);
	assert_int_equal(a->stats.tx_bursts, 0);
	assert_pool_full(a, 4);
	assert_int_equal(ina_port_tx_burst(a, pkts, 0), 0);
	ina_port_close(a);
}

/* Sending to a closed port never wedges the port, whatever ICMP does. */
static void
test_port_udp_closed_peer(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct ina_port *a, *gone, *b;
	struct ina_peer to_gone, to_b;
	unsigned i, round, want;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=64");
	b = port_open_ok("udp:bind=127.0.0.1:0,pkts=64");
	gone = port_open_ok("udp:bind=127.0.0.1:0,pkts=1");
	peer_of(a, gone, &to_gone);
	peer_of(a, b, &to_b);
	ina_port_close(gone);

	for (round = 0; round < 4; round++) {
		for (i = 0; i < 8; i++)
			pkts[i] = pattern_pkt(a, i, &to_gone);
		ina_port_tx_burst(a, pkts, 8);
		/* A pending error must not hide receives on this socket. */
		ina_port_wait(a, 5 * INA_NS_PER_MS);
		assert_int_equal(ina_port_rx_burst(a, pkts, INA_MAX_BURST), 0);
	}
	assert_int_equal(a->stats.tx_pkts + a->stats.tx_drop, 32);
	/* And the port still sends to live peers. */
	for (i = 0; i < 8; i++)
		pkts[i] = pattern_pkt(a, i, &to_b);
	assert_int_equal(ina_port_tx_burst(a, pkts, 8), 8);
	want = 8;
	assert_int_equal(rx_until(b, done_count, &want, NULL, NULL, RX_DEADLINE_NS), 8);
	assert_pool_full(a, 64);
	assert_pool_full(b, 64);
	ina_port_close(a);
	ina_port_close(b);
}

static void
test_port_udp_wait(void **state)
{
	struct ina_port *a, *b, *busy;
	struct ina_peer to_b;
	struct ina_pkt *p;
	uint64_t t0, dt;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=4");
	b = port_open_ok("udp:bind=127.0.0.1:0,pkts=4");
	busy = port_open_ok("udp:bind=127.0.0.1:0,pkts=4,busy=1");

	t0 = ina_now_ns();
	ina_port_wait(b, 0);
	assert_true(ina_now_ns() - t0 < 50 * INA_NS_PER_MS);

	t0 = ina_now_ns();
	ina_port_wait(b, 20 * INA_NS_PER_MS);
	dt = ina_now_ns() - t0;
	assert_true(dt >= 19 * INA_NS_PER_MS);
	assert_true(dt < INA_NS_PER_S);

	/* Sub-millisecond timeouts are not rounded up to a millisecond or more. */
	t0 = ina_now_ns();
	ina_port_wait(b, 200000);
	dt = ina_now_ns() - t0;
	assert_true(dt >= 150000);

	t0 = ina_now_ns();
	ina_port_wait(busy, 5 * INA_NS_PER_S);
	assert_true(ina_now_ns() - t0 < 100 * INA_NS_PER_MS);

	/* A waiting packet ends the wait early. */
	peer_of(a, b, &to_b);
	p = pattern_pkt(a, 1, &to_b);
	assert_int_equal(ina_port_tx_burst(a, &p, 1), 1);
	t0 = ina_now_ns();
	ina_port_wait(b, 5 * INA_NS_PER_S);
	assert_true(ina_now_ns() - t0 < INA_NS_PER_S);
	assert_int_equal(ina_port_rx_burst(b, &p, 1), 1);
	ina_pkt_free(p);

	assert_pool_full(b, 4);
	ina_port_close(a);
	ina_port_close(b);
	ina_port_close(busy);
}

/* An empty pool makes rx_burst return 0 and count an allocation failure. */
static void
test_port_udp_rx_pool_empty(void **state)
{
	struct ina_pkt *held[2], *rx[INA_MAX_BURST];
	struct ina_port *a, *b;
	struct ina_peer to_b;
	struct ina_pkt *p;
	unsigned one = 1;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=4");
	b = port_open_ok("udp:bind=127.0.0.1:0,pkts=2,gro=0"); /* rx into the pool */
	peer_of(a, b, &to_b);
	p = pattern_pkt(a, 5, &to_b);
	assert_int_equal(ina_port_tx_burst(a, &p, 1), 1);
	ina_port_wait(b, RX_DEADLINE_NS);
	held[0] = ina_pkt_alloc(b->pool);
	held[1] = ina_pkt_alloc(b->pool);
	assert_non_null(held[1]);
	assert_int_equal(ina_port_rx_burst(b, rx, INA_MAX_BURST), 0);
	assert_int_equal(b->pool->nb_alloc_fail, 1);
	ina_pkt_free_bulk(held, 2);
	/* The datagram waited in the socket. */
	assert_int_equal(rx_until(b, done_count, &one, NULL, NULL, RX_DEADLINE_NS), 1);
	assert_pool_full(b, 2);
	ina_port_close(a);
	ina_port_close(b);
}

/* Receives up to 'max' packets into 'out' (kept, not freed) until 'want'
 * arrived or the deadline passed; returns how many. */
static unsigned
rx_keep(struct ina_port *port, struct ina_pkt **out, unsigned want, unsigned max)
{
	uint64_t end = ina_now_ns() + RX_DEADLINE_NS;
	unsigned nb = 0;

	while (nb < want && nb < max && ina_now_ns() < end) {
		uint16_t n = (uint16_t)(max - nb < INA_MAX_BURST ? max - nb : INA_MAX_BURST);

		n = ina_port_rx_burst(port, out + nb, n);
		nb += n;
		if (!n)
			ina_port_wait(port, 10 * INA_NS_PER_MS);
	}
	return nb;
}

/* A packet of 'len' bytes numbered 'seq' (first 4 bytes), the rest a pattern. */
static struct ina_pkt *
seq_pkt(struct ina_port *port, uint32_t seq, uint32_t len, const struct ina_peer *peer)
{
	struct ina_pkt *p = ina_pkt_alloc(port->pool);

	assert_non_null(p);
	assert_true(len >= 4 && len <= p->cap);
	p->len = len;
	memcpy(p->data, &seq, 4);
	for (uint32_t i = 4; i < len; i++)
		p->data[i] = pattern_byte(seq, i);
	p->peer = *peer;
	return p;
}

static void
seq_check(const struct ina_pkt *p, uint32_t seq, uint32_t len)
{
	uint32_t got;

	assert_int_equal(p->len, len);
	assert_true(p->cap >= p->len);
	memcpy(&got, p->data, 4);
	assert_int_equal(got, seq);
	for (uint32_t i = 4; i < len; i++)
		if (p->data[i] != pattern_byte(seq, i))
			fail_msg("seq %u: byte %u is %u, not %u", seq, i, p->data[i],
				 pattern_byte(seq, i));
}

/*
 * GSO and GRO: a burst of mixed sizes to two peers, one receiving with GRO
 * and one without, plus a fan-out to both: the sender groups datagrams of
 * one size to one peer, the GRO receiver splits each message back, and
 * every datagram arrives once, whole, those of one size to one peer in
 * their order. Then a GSO message made by hand (5 x 1000 + 37 bytes) splits
 * into its 6 datagrams, and a port with gso=0 sends one datagram each.
 */
static void
test_port_udp_gso_gro_mixed(void **state)
{
	static const uint32_t lens[] = { 1200, 1200, 1200, 700,	 1200, 1200, 300,  900,
					 900,  900,  900,  900,	 4,    8972, 8972, 8972,
					 8972, 8972, 8972, 8972, 8972, 100,  1200, 1200 };
	const unsigned nb = sizeof(lens) / sizeof(lens[0]);
	struct ina_port *a, *b, *c, *plain;
	struct ina_peer to_b, to_c, fan[2];
	struct ina_pkt *pkts[64], *rx_b[64], *rx_c[64];
	unsigned want_b = 0, want_c = 0, ib = 0, ic = 0, i;

	(void)state;
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=64");
	b = port_open_ok("udp:bind=127.0.0.1:0,pkts=8");
	c = port_open_ok("udp:bind=127.0.0.1:0,pkts=64,gro=0");
	assert_int_equal(udp_xstat(a, "port_udp_gso_refused"), 0); /* Linux >= 4.18 */
	assert_int_equal(udp_xstat(b, "port_udp_gro_refused"), 0); /* Linux >= 5.0 */
	peer_of(a, b, &to_b);
	peer_of(a, c, &to_c);
	/* Every third to c, the rest to b; the last one to both. */
	for (i = 0; i < nb; i++) {
		pkts[i] = seq_pkt(a, i, lens[i], i % 3 == 2 ? &to_c : &to_b);
		want_b += i % 3 != 2 || i + 1 == nb;
		want_c += i % 3 == 2 || i + 1 == nb;
	}
	fan[0] = to_b;
	fan[1] = to_c;
	pkts[nb - 1]->dsts = fan;
	pkts[nb - 1]->dst_mask = 3;
	assert_int_equal(ina_port_tx_burst(a, pkts, (uint16_t)nb), nb);
	assert_int_equal(a->stats.tx_pkts, want_b + want_c);
	assert_int_equal(a->stats.tx_drop, 0);
	assert_true(udp_xstat(a, "port_udp_gso_msgs") > 0);
	assert_int_equal(rx_keep(b, rx_b, want_b, 64), want_b);
	assert_int_equal(rx_keep(c, rx_c, want_c, 64), want_c);
	/* Each once and whole; a peer's datagrams of one size in their order
	 * (the sender groups by size, so sizes may interleave otherwise). */
	for (unsigned side = 0; side < 2; side++) {
		struct ina_pkt **got = side ? rx_c : rx_b;
		unsigned want = side ? want_c : want_b, seen[64] = { 0 };

		for (ib = 0; ib < want; ib++) {
			uint32_t seq;

			memcpy(&seq, got[ib]->data, 4);
			assert_true(seq < nb && !seen[seq]);
			assert_true(side ? (seq % 3 == 2 || seq + 1 == nb)
					 : (seq % 3 != 2 || seq + 1 == nb));
			seq_check(got[ib], seq, lens[seq]);
			seen[seq] = 1;
			for (ic = 0; ic < ib; ic++) {
				uint32_t before;

				memcpy(&before, got[ic]->data, 4);
				if (lens[before] == lens[seq])
					assert_true(before < seq);
			}
		}
	}
	/* b split messages of several datagrams; each packet's room ends
	 * where the next one's starts. */
	assert_true(udp_xstat(b, "port_udp_gro_msgs") > 0);
	assert_true(udp_xstat(b, "port_udp_gro_segs") >= 2 * udp_xstat(b, "port_udp_gro_msgs"));
	assert_int_equal(udp_xstat(c, "port_udp_gro_msgs"), 0);
	for (i = 0; i + 1 < want_b; i++)
		if (rx_b[i + 1]->data > rx_b[i]->data)
			assert_true(rx_b[i]->data + rx_b[i]->cap <= rx_b[i + 1]->data);
	assert_int_equal(b->stats.rx_pkts, want_b);
	assert_int_equal(ina_port_udp_rx_held(b), want_b);
	ina_pkt_free_bulk(rx_b, want_b);
	ina_pkt_free_bulk(rx_c, want_c);
	assert_int_equal(ina_port_udp_rx_held(b), 0);
	assert_pool_full(a, 64);
	assert_pool_full(b, 8); /* GRO receives take no pool packet */
	assert_pool_full(c, 64);

	/* gso=0: one datagram per message, received as they were sent. */
	plain = port_open_ok("udp:bind=127.0.0.1:0,pkts=8,gso=0");
	peer_of(plain, b, &to_b);
	for (i = 0; i < 4; i++)
		pkts[i] = seq_pkt(plain, 100 + i, 1000, &to_b);
	assert_int_equal(ina_port_tx_burst(plain, pkts, 4), 4);
	assert_int_equal(udp_xstat(plain, "port_udp_gso_msgs"), 0);
	assert_int_equal(udp_xstat(plain, "port_udp_gso_refused"), 0);
	assert_int_equal(rx_keep(b, rx_b, 4, 64), 4);
	for (i = 0; i < 4; i++)
		seq_check(rx_b[i], 100 + i, 1000);
	ina_pkt_free_bulk(rx_b, 4);
	ina_port_close(plain);
	ina_port_close(a);
	ina_port_close(b);
	ina_port_close(c);
}

/*
 * Sends the burst lens[0..nb) from 'a', packet i to the receivers of bit
 * set masks[i] (one peer, or a fan-out), and checks that each receiver gets
 * exactly its packets, each once and unchanged, and those of one size in the
 * order they were given (the grouping's order is stable within a size).
 */
static void
burst_check(struct ina_port *a, struct ina_port **rx, unsigned nb_rx, const uint32_t *lens,
	    const uint8_t *masks, unsigned nb)
{
	struct ina_peer to[4];
	struct ina_pkt *pkts[64], *got[64];
	uint64_t sent_msgs = a->stats.tx_pkts, rx_before[4];

	assert_true(nb <= 64 && nb_rx <= 4);
	for (unsigned r = 0; r < nb_rx; r++) {
		peer_of(a, rx[r], &to[r]);
		rx_before[r] = rx[r]->stats.rx_pkts;
	}
	for (unsigned i = 0; i < nb; i++) {
		pkts[i] = seq_pkt(a, i, lens[i], &to[__builtin_ctz(masks[i])]);
		if (__builtin_popcount(masks[i]) > 1) {
			pkts[i]->dsts = to;
			pkts[i]->dst_mask = masks[i];
		}
		sent_msgs += (uint64_t)__builtin_popcount(masks[i]);
	}
	assert_int_equal(ina_port_tx_burst(a, pkts, (uint16_t)nb), nb);
	assert_int_equal(a->stats.tx_drop, 0);
	assert_int_equal(a->stats.tx_pkts, sent_msgs);
	for (unsigned r = 0; r < nb_rx; r++) {
		unsigned want = 0, n, seen[64] = { 0 };

		for (unsigned i = 0; i < nb; i++)
			want += (masks[i] >> r) & 1;
		n = rx_keep(rx[r], got, want, 64);
		assert_int_equal(n, want);
		for (unsigned k = 0; k < n; k++) {
			uint32_t seq;

			memcpy(&seq, got[k]->data, 4);
			assert_true(seq < nb && ((masks[seq] >> r) & 1) && !seen[seq]);
			seq_check(got[k], seq, lens[seq]);
			seen[seq] = 1;
			for (unsigned e = 0; e < k; e++) {
				uint32_t before;

				memcpy(&before, got[e]->data, 4);
				if (lens[before] == lens[seq] && before > seq)
					fail_msg("receiver %u: seq %u (%u bytes) before seq %u", r,
						 before, lens[seq], seq);
			}
		}
		ina_pkt_free_bulk(got, n);
		/* Nothing more, nothing twice: loopback delivers within the send. */
		assert_int_equal(ina_port_rx_burst(rx[r], got, 1), 0);
		assert_int_equal(rx[r]->stats.rx_pkts - rx_before[r], want);
	}
}

/*
 * A burst of cut packets' sizes (header + mask + present sub-blocks x 256
 * bytes: a few sizes, shuffled) to one peer and then to three (one with
 * gro=0, fan-outs among them), with GSO on and off. Each arrives complete
 * and unchanged, in its order within its size. With GSO, the burst to one
 * peer leaves as one message per run of a size, each ending with the first
 * packet of the next size down: 6 x 4156 + 2364, 4 x 2364 + 1084,
 * 9 x 572 + 316, 2 x 316, four messages for the 24 datagrams.
 */
static void
test_port_udp_gso_size_classes(void **state)
{
	static const uint32_t cls[] = { 4156, 2364, 1084, 572, 316 };
	static const uint8_t one[24] = { 3, 0, 1, 3, 4, 0, 1, 3, 3, 1, 0, 4,
					 3, 3, 0, 1, 2, 3, 0, 3, 4, 1, 3, 0 };
	uint32_t lens[60];
	uint8_t masks[60];
	unsigned nb = sizeof(one);

	(void)state;
	for (unsigned i = 0; i < nb; i++) {
		lens[i] = cls[one[i]];
		masks[i] = 1;
	}
	for (int gso = 1; gso >= 0; gso--) {
		char spec[80];
		struct ina_port *a, *rx[3];

		snprintf(spec, sizeof(spec), "udp:bind=127.0.0.1:0,pkts=128,gso=%d", gso);
		a = port_open_ok(spec);
		rx[0] = port_open_ok("udp:bind=127.0.0.1:0,pkts=64");
		rx[1] = port_open_ok("udp:bind=127.0.0.1:0,pkts=128,gro=0");
		rx[2] = port_open_ok("udp:bind=127.0.0.1:0,pkts=64");

		/* One peer. */
		burst_check(a, rx, 1, lens, masks, nb);
		assert_int_equal(udp_xstat(a, "port_udp_gso_msgs"), gso ? 4 : 0);
		assert_int_equal(udp_xstat(a, "port_udp_gso_segs"), gso ? nb : 0);
		if (gso)
			assert_true(udp_xstat(rx[0], "port_udp_gro_segs") > 0);

		/* Three peers: 60 packets of the five sizes, to one of them
		 * or (every seventh) to several. */
		for (unsigned i = 0; i < 60; i++) {
			lens[i] = cls[(i * 7 + i / 5) % 5];
			masks[i] = i % 7 == 3 ? (uint8_t)(1 + (i % 3 ? 6 : 4))
					      : (uint8_t)(1u << (i % 3));
		}
		burst_check(a, rx, 3, lens, masks, 60);
		assert_true(gso ? udp_xstat(a, "port_udp_gso_msgs") > 4
				: udp_xstat(a, "port_udp_gso_msgs") == 0);
		for (unsigned r = 0; r < 3; r++)
			ina_port_close(rx[r]);
		assert_pool_full(a, 128);
		ina_port_close(a);
		for (unsigned i = 0; i < nb; i++) {
			lens[i] = cls[one[i]];
			masks[i] = 1;
		}
	}
}

/*
 * A GSO message written by hand with UDP_SEGMENT (5 x 1000 bytes and a last
 * one of 37) reaches a GRO port as one message and splits into its 6
 * datagrams; a datagram longer than the port's mtu in such a message is
 * dropped and counted, the others kept.
 */
static void
test_port_udp_gro_split(void **state)
{
	struct ina_port *b;
	struct ina_peer to_b;
	struct ina_pkt *rx[16];
	struct sockaddr_in dst;
	uint8_t buf[6000];
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov;
	struct msghdr h;
	uint16_t seg = 1000;
	uint64_t msgs0, drop0;
	int fd;

	(void)state;
	b = port_open_ok("udp:bind=127.0.0.1:0,pkts=8,mtu=1200");
	peer_of(b, b, &to_b);
	assert_int_equal(to_b.len, sizeof(dst));
	memcpy(&dst, to_b.bytes, sizeof(dst));
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	for (unsigned k = 0; k < 6; k++) {
		uint32_t seq = 200 + k;

		memcpy(buf + k * 1000, &seq, 4);
		for (uint32_t i = 4; i < 1000; i++)
			buf[k * 1000 + i] = pattern_byte(seq, i);
	}
	memset(&h, 0, sizeof(h));
	memset(&ctl, 0, sizeof(ctl));
	iov.iov_base = buf;
	iov.iov_len = 5 * 1000 + 37;
	h.msg_name = &dst;
	h.msg_namelen = sizeof(dst);
	h.msg_iov = &iov;
	h.msg_iovlen = 1;
	h.msg_control = ctl.buf;
	h.msg_controllen = sizeof(ctl.buf);
	CMSG_FIRSTHDR(&h)->cmsg_level = SOL_UDP;
	CMSG_FIRSTHDR(&h)->cmsg_type = UDP_SEGMENT;
	CMSG_FIRSTHDR(&h)->cmsg_len = CMSG_LEN(sizeof(seg));
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(&h)), &seg, sizeof(seg));
	msgs0 = udp_xstat(b, "port_udp_gro_msgs");
	assert_int_equal(sendmsg(fd, &h, 0), 5037);
	assert_int_equal(rx_keep(b, rx, 6, 16), 6);
	for (unsigned k = 0; k < 5; k++)
		seq_check(rx[k], 200 + k, 1000);
	seq_check(rx[5], 205, 37);
	assert_int_equal(udp_xstat(b, "port_udp_gro_msgs"), msgs0 + 1);
	ina_pkt_free_bulk(rx, 6);

	/* Segments of 1500 bytes, above mtu=1200: 3 dropped, the last (300)
	 * kept. */
	seg = 1500;
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(&h)), &seg, sizeof(seg));
	iov.iov_len = 3 * 1500 + 300;
	{
		uint32_t seq = 300;

		memcpy(buf + 4500, &seq, 4);
		for (uint32_t i = 4; i < 300; i++)
			buf[4500 + i] = pattern_byte(seq, i);
	}
	drop0 = b->stats.rx_drop;
	assert_int_equal(sendmsg(fd, &h, 0), 4800);
	assert_int_equal(rx_keep(b, rx, 1, 16), 1);
	seq_check(rx[0], 300, 300);
	assert_int_equal(b->stats.rx_drop, drop0 + 3);
	ina_pkt_free(rx[0]);
	assert_int_equal(ina_port_udp_rx_held(b), 0);
	close(fd);
	ina_port_close(b);
}

/*
 * Every GRO buffer held by the caller: rx_burst receives nothing more and
 * counts a stall (bounded: no receive into a buffer too small for a GRO
 * message), and receives the rest once they are freed.
 */
static void
test_port_udp_gro_stall(void **state)
{
	enum { NB = 140 };
	struct ina_port *a, *b;
	struct ina_peer to_b;
	struct ina_pkt *pkt, **held;
	unsigned got;

	(void)state;
	held = calloc(NB, sizeof(*held));
	assert_non_null(held);
	a = port_open_ok("udp:bind=127.0.0.1:0,pkts=8");
	b = port_open_ok("udp:bind=127.0.0.1:0,pkts=8");
	peer_of(a, b, &to_b);
	/* One message each: sent one burst at a time. */
	for (unsigned i = 0; i < NB; i++) {
		pkt = seq_pkt(a, i, 100, &to_b);
		assert_int_equal(ina_port_tx_burst(a, &pkt, 1), 1);
	}
	got = rx_keep(b, held, NB, NB);
	assert_true(got >= 100 && got < NB); /* one buffer per message, 128 of them */
	assert_int_equal(ina_port_rx_burst(b, &pkt, 1), 0);
	assert_true(udp_xstat(b, "port_udp_gro_stalls") > 0);
	for (unsigned i = 0; i < got; i++)
		seq_check(held[i], i, 100);
	ina_pkt_free_bulk(held, got);
	assert_int_equal(rx_keep(b, held + got, NB - got, NB - got), NB - got);
	for (unsigned i = got; i < NB; i++)
		seq_check(held[i], i, 100);
	ina_pkt_free_bulk(held, NB);
	assert_int_equal(ina_port_udp_rx_held(b), 0);
	ina_port_close(a);
	ina_port_close(b);
	free(held);
}

/* In the child of test_port_udp_gso_refused: 0 if a burst of 8 datagrams of
 * 3000 bytes crossed a loopback of mtu 1500 with GSO refused and counted,
 * else the number of the check that failed. */
static int
gso_refused_child(void)
{
	struct ifreq ifr;
	struct ina_port *a = NULL, *b = NULL;
	struct ina_pkt *pkts[8], *rx[16];
	struct ina_peer to_b;
	char err[256], addr[64];
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	ifr.ifr_mtu = 1500;
	if (fd < 0 || ioctl(fd, SIOCSIFMTU, &ifr) < 0)
		return 1;
	ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return 2;
	close(fd);
	if (ina_port_open("udp:bind=127.0.0.1:0,pkts=16", &a, err, sizeof(err)) < 0 ||
	    ina_port_open("udp:bind=127.0.0.1:0,pkts=16", &b, err, sizeof(err)) < 0)
		return 3;
	if (ina_port_udp_local(b, addr, sizeof(addr)) < 0 || ina_port_resolve(a, addr, &to_b) < 0)
		return 4;
	for (unsigned i = 0; i < 8; i++) {
		pkts[i] = ina_pkt_alloc(a->pool);
		if (!pkts[i])
			return 5;
		pkts[i]->len = 3000;
		memset(pkts[i]->data, (int)i, 3000);
		pkts[i]->peer = to_b;
	}
	/* The kernel refuses segments above the path's mtu: every datagram
	 * still goes, one per message (fragmented on this loopback). */
	if (ina_port_tx_burst(a, pkts, 8) != 8 || a->stats.tx_drop != 0)
		return 6;
	if (udp_xstat(a, "port_udp_gso_refused") != 1 || udp_xstat(a, "port_udp_gso_msgs") != 0)
		return 7;
	if (rx_keep(b, rx, 8, 16) != 8)
		return 8;
	for (unsigned i = 0; i < 8; i++)
		if (rx[i]->len != 3000 || rx[i]->data[0] != i || rx[i]->data[2999] != i)
			return 9;
	ina_pkt_free_bulk(rx, 8);
	ina_port_close(a);
	ina_port_close(b);
	return 0;
}

/*
 * The kernel refusing UDP_SEGMENT at a send (here: segments longer than the
 * mtu of a loopback in a network namespace of the test's own): the port sends
 * the rest one datagram per message, loses nothing, and says so in
 * port_udp_gso_refused. Skipped where no namespace can be made (not root).
 */
static void
test_port_udp_gso_refused(void **state)
{
	int status = 0;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNET) < 0)
			_exit(77);
		_exit(gso_refused_child());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		INA_SKIP("no network namespace of its own (not root)");
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* A backend that keeps two counters of its own (the xstats op). */
static unsigned
fake_xstats(const struct ina_port *port, struct ina_port_xstat *xs, unsigned n)
{
	static const char *const names[] = { "port_fake_a", "port_fake_b" };
	const uint64_t v[] = { port->max_pkt, 0 };

	for (unsigned i = 0; i < n && i < 2; i++)
		xs[i] = (struct ina_port_xstat){ names[i], v[i] };
	return 2;
}

/* ina_port_print_counters: the faults and the backend's own counters, added
 * over the ports, nonzero ones only, each once. */
static void
test_port_print_counters(void **state)
{
	static const struct ina_port_ops fake_ops = { .type = "fake", .xstats = fake_xstats };
	struct ina_port fake[2], *fakes[2] = { &fake[0], &fake[1] };
	struct ina_port *udp[1];
	char *text = NULL;
	size_t size = 0;
	FILE *f;

	(void)state;
	memset(fake, 0, sizeof(fake));
	fake[0].ops = fake[1].ops = &fake_ops;
	fake[0].max_pkt = 3;
	fake[1].max_pkt = 4;
	fake[0].stats.inject_dup = 1;
	fake[1].stats.inject_dup = 2;
	fake[1].stats.rx_csum_bad = 5;
	fake[0].stats.inject_drop = 9; /* the programs print drops themselves */
	f = open_memstream(&text, &size);
	assert_non_null(f);
	ina_port_print_counters(fakes, 2, f);
	fclose(f);
	assert_string_equal(text, "  port_inject_dup          3\n"
				  "  port_csum_bad            5\n"
				  "  port_fake_a              7\n");
	free(text);

	/* udp's own counters (offloads) are 0 before any traffic: nothing
	 * printed when no fault was injected. */
	udp[0] = port_open_ok("udp:bind=127.0.0.1:0,pkts=4");
	assert_int_equal(ina_port_xstats(udp[0], NULL, 0), 7);
	text = NULL;
	f = open_memstream(&text, &size);
	assert_non_null(f);
	ina_port_print_counters(udp, 1, f);
	ina_port_print_counters(NULL, 0, f);
	fclose(f);
	assert_string_equal(text, "");
	free(text);
	ina_port_close(udp[0]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peer_equal_lengths),
		cmocka_unit_test(test_port_udp_pool_heap),
		cmocka_unit_test(test_port_udp_pool_free_bulk_mixed),
		cmocka_unit_test(test_port_udp_pool_alloc_bulk),
		cmocka_unit_test(test_port_udp_send_recv),
		cmocka_unit_test(test_port_udp_large_tx_call),
		cmocka_unit_test(test_port_udp_fanout),
		cmocka_unit_test(test_port_udp_fanout_all),
		cmocka_unit_test(test_port_udp_fanout_many_batches),
		cmocka_unit_test(test_port_udp_bad_specs),
		cmocka_unit_test(test_port_udp_resolve),
		cmocka_unit_test(test_port_udp_default_bind),
		cmocka_unit_test(test_port_udp_drop_tx),
		cmocka_unit_test(test_port_udp_drop_rx),
		cmocka_unit_test(test_port_udp_truncated),
		cmocka_unit_test(test_port_udp_tx_no_peer),
		cmocka_unit_test(test_port_udp_closed_peer),
		cmocka_unit_test(test_port_udp_wait),
		cmocka_unit_test(test_port_udp_rx_pool_empty),
		cmocka_unit_test(test_port_udp_gso_gro_mixed),
		cmocka_unit_test(test_port_udp_gso_size_classes),
		cmocka_unit_test(test_port_udp_gro_split),
		cmocka_unit_test(test_port_udp_gro_stall),
		cmocka_unit_test(test_port_udp_gso_refused),
		cmocka_unit_test(test_port_print_counters),
	};

	return cmocka_run_group_tests_name("port_udp", tests, NULL, NULL);
}
