/* SPDX-License-Identifier: MIT */
/*
 * The fault injector (common/src/faults.c) on its own, over a heap packet
 * pool: options, each kind's rate within statistical bounds over many
 * packets, determinism from the seed (and one kind's picks unchanged when
 * another is added), reordering and delay with a bounded hold queue that is
 * released by time and drained at close, duplicates equal to their
 * original, single bit flips, and no malloc per packet. Then through a real
 * udp port on loopback: delayed packets come out in time, wait() wakes for
 * them, and close frees what is still held.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc_count.h"
#include "ina/faults.h"
#include "ina/pkt.h"
#include "ina/port_udp.h"
#include "ina/util.h"

#define POOL_PKTS 1024
#define BURST 16
#define ROOM 32
#define MANY 100000u
#define US 1000ull

/* What a run saw: packets out in order (their sequence numbers). */
struct run {
	uint32_t *seq; /* MANY * 2 entries */
	uint32_t nb;
	uint64_t now;
};

static struct ina_pkt_pool *pool;

static int
setup(void **state)
{
	(void)state;
	pool = ina_pkt_pool_create(POOL_PKTS, 64);
	return pool ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	ina_pkt_pool_destroy(pool);
	return 0;
}

static void
cfg_of(struct ina_faults_cfg *cfg, const char *opts)
{
	char buf[256], *save = NULL;
	const char *range;

	ina_faults_cfg_init(cfg);
	snprintf(buf, sizeof(buf), "%s", opts);
	for (char *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(o, '=');

		assert_non_null(eq);
		*eq = '\0';
		assert_int_equal(ina_faults_option(cfg, o, eq + 1, &range), 1);
	}
}

/* Takes the packets out: records their numbers and frees them. */
static void
drain_out(struct run *r, struct ina_pkt **pkts, uint16_t nb)
{
	for (uint16_t i = 0; i < nb; i++) {
		uint32_t s;

		assert_int_equal(pkts[i]->len, sizeof(s));
		memcpy(&s, pkts[i]->data, sizeof(s));
		if (r->seq)
			r->seq[r->nb] = s;
		r->nb++;
	}
	ina_pkt_free_bulk(pkts, nb);
}

/* One port call: due packets, then 'n' new ones numbered from 'first'. */
static void
step(struct ina_faults *f, struct run *r, uint32_t first, uint16_t n)
{
	struct ina_pkt *pkts[ROOM];
	uint16_t nb = ina_faults_release(f, r->now, pkts, ROOM);

	drain_out(r, pkts, nb);
	assert_int_equal(pool->ops->get(pool, pkts, n), n);
	for (uint16_t i = 0; i < n; i++) {
		uint32_t s = first + i;

		memcpy(pkts[i]->data, &s, sizeof(s));
		pkts[i]->len = sizeof(s);
		pkts[i]->peer.len = 4;
		memcpy(pkts[i]->peer.bytes, &s, 4);
	}
	nb = ina_faults_rx(f, r->now, pkts, n, ROOM);
	assert_true(nb <= ROOM);
	for (uint16_t i = 0; i < nb; i++) {
		uint32_t s;

		memcpy(&s, pkts[i]->data, sizeof(s));
		assert_int_equal(pkts[i]->peer.len, 4);
		assert_memory_equal(pkts[i]->peer.bytes, &s, 4); /* dups keep the peer */
	}
	drain_out(r, pkts, nb);
}

/* MANY packets in bursts 10 us apart, then time passes until none is held. */
static void
run_many(struct ina_faults *f, struct run *r)
{
	for (uint32_t s = 0; s < MANY; s += BURST) {
		step(f, r, s, BURST);
		r->now += 10 * US;
	}
	for (int i = 0; i < 2000 && f->nb_held; i++) {
		step(f, r, UINT32_MAX - 1, 0);
		r->now += 10 * US;
	}
	assert_int_equal(f->nb_held, 0);
	assert_int_equal(ina_pkt_pool_avail(pool), POOL_PKTS);
}

/* |got - N p| within 6 standard deviations of a binomial. */
static void
assert_binomial(uint64_t got, double n, double p)
{
	double sd = sqrt(n * p * (1 - p));

	assert_true(fabs((double)got - n * p) <= 6 * sd + 1);
}

static void
test_options(void **state)
{
	struct ina_faults_cfg cfg;
	struct ina_faults f;
	const char *range;

	(void)state;
	ina_faults_cfg_init(&cfg);
	assert_int_equal(ina_faults_option(&cfg, "drop", "1", &range), -EINVAL);
	assert_string_equal(range, " (0 <= RATE < 1)");
	assert_int_equal(ina_faults_option(&cfg, "corrupt", "1", &range), -EINVAL);
	assert_int_equal(ina_faults_option(&cfg, "dup", "1", &range), 1);
	assert_int_equal(ina_faults_option(&cfg, "reorder", "-0.1", &range), -EINVAL);
	assert_int_equal(ina_faults_option(&cfg, "delay", "x", &range), -EINVAL);
	assert_int_equal(ina_faults_option(&cfg, "reorder_gap", "0", &range), -EINVAL);
	assert_int_equal(ina_faults_option(&cfg, "reorder_gap", "17", &range), -EINVAL);
	assert_int_equal(ina_faults_option(&cfg, "hold", "257", &range), -EINVAL);
	assert_int_equal(ina_faults_option(&cfg, "delay_us", "0", &range), -EINVAL);
	assert_int_equal(ina_faults_option(&cfg, "bind", "x", &range), 0); /* not ours */
	assert_int_equal(ina_faults_option(&cfg, "seed", "42", &range), 1);
	assert_int_equal(cfg.seed, 42);

	/* Nothing asked: inactive, and packets pass as they are. */
	cfg_of(&cfg, "seed=3");
	ina_faults_init(&f, &cfg);
	assert_false(ina_faults_active(&f));
	assert_false(ina_faults_timed(&f));
	/* delay_us= alone delays every packet; with delay= only that share. */
	cfg_of(&cfg, "delay_us=500");
	ina_faults_init(&f, &cfg);
	assert_true(f.cfg.rate[INA_FAULT_DELAY] == 1.0);
	assert_int_equal(f.cfg.delay_ns, 500 * US);
	assert_true(ina_faults_timed(&f));
	cfg_of(&cfg, "delay_us=500,delay=0.25");
	ina_faults_init(&f, &cfg);
	assert_true(f.cfg.rate[INA_FAULT_DELAY] == 0.25);
}

/* Each kind alone: its rate within bounds, every packet accounted for. */
static void
test_rates(void **state)
{
	static const char *const opts[] = { "drop=0.05", "dup=0.1", "reorder=0.1",
					    "delay=0.02,delay_us=100", "drop=0.001" };
	static const double rates[] = { 0.05, 0.1, 0.1, 0.02, 0.001 };

	(void)state;
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		struct ina_faults_cfg cfg;
		struct ina_faults f;
		struct run r = { 0 };
		uint64_t got;

		cfg_of(&cfg, opts[i]);
		ina_faults_init(&f, &cfg);
		run_many(&f, &r);
		got = f.st.drop + f.st.dup + f.st.reorder + f.st.delay;
		assert_int_equal(f.st.hold_full, 0);
		assert_binomial(got, MANY, rates[i]);
		/* Out = in - dropped + duplicated. */
		assert_int_equal(r.nb, MANY - f.st.drop + f.st.dup);
	}
}

/* Same seed, same packets out in the same order; another seed differs; and
 * adding dup= keeps exactly the packets drop= picks. */
static void
test_seed(void **state)
{
	const char *all = "drop=0.05,dup=0.05,reorder=0.1,reorder_gap=2,delay=0.05,delay_us=50";
	struct ina_faults_cfg cfg;
	struct ina_faults *f = calloc(2, sizeof(*f));
	struct run a = { .seq = calloc(2 * MANY, 4) }, b = { .seq = calloc(2 * MANY, 4) };
	uint8_t *seen_a = calloc(MANY, 1), *seen_b = calloc(MANY, 1);

	(void)state;
	assert_non_null(f);
	cfg_of(&cfg, all);
	ina_faults_init(&f[0], &cfg);
	ina_faults_init(&f[1], &cfg);
	run_many(&f[0], &a);
	run_many(&f[1], &b);
	assert_int_equal(a.nb, b.nb);
	assert_memory_equal(a.seq, b.seq, a.nb * 4);
	assert_true(f[0].st.reorder > 0 && f[0].st.delay > 0 && f[0].st.dup > 0);

	cfg.seed = 2;
	ina_faults_init(&f[1], &cfg);
	b.nb = 0;
	b.now = 0;
	run_many(&f[1], &b);
	assert_true(a.nb != b.nb || memcmp(a.seq, b.seq, a.nb * 4) != 0);

	/* drop= alone against drop= with dup=: the same packets dropped. */
	cfg_of(&cfg, "drop=0.05,seed=9");
	ina_faults_init(&f[0], &cfg);
	cfg_of(&cfg, "drop=0.05,dup=0.2,seed=9");
	ina_faults_init(&f[1], &cfg);
	a.nb = 0;
	a.now = 0;
	b.nb = 0;
	b.now = 0;
	run_many(&f[0], &a);
	run_many(&f[1], &b);
	for (uint32_t i = 0; i < a.nb; i++)
		seen_a[a.seq[i]] = 1;
	for (uint32_t i = 0; i < b.nb; i++)
		seen_b[b.seq[i]] = 1;
	assert_int_equal(f[0].st.drop, f[1].st.drop);
	assert_memory_equal(seen_a, seen_b, MANY);
	free(a.seq);
	free(b.seq);
	free(seen_a);
	free(seen_b);
	free(f);
}

/* reorder=: packets come out after later ones, none lost, each displaced at
 * most by what arrived in its 1 ms bound. */
static void
test_reorder(void **state)
{
	struct ina_faults_cfg cfg;
	struct ina_faults f;
	struct run r = { .seq = calloc(2 * MANY, 4) };
	uint8_t *seen = calloc(MANY, 1);
	uint32_t late = 0, max = 0;

	(void)state;
	cfg_of(&cfg, "reorder=0.2,reorder_gap=3,seed=5");
	ina_faults_init(&f, &cfg);
	run_many(&f, &r);
	assert_int_equal(r.nb, MANY);
	for (uint32_t i = 0; i < r.nb; i++) {
		assert_false(seen[r.seq[i]]);
		seen[r.seq[i]] = 1;
		if (r.seq[i] < max)
			late++;
		if (r.seq[i] > max)
			max = r.seq[i];
	}
	/* Every late one was held back, and nearly every one held came late. */
	assert_true(late <= f.st.reorder && late >= f.st.reorder * 9 / 10);
	assert_binomial(f.st.reorder, MANY, 0.2);
	free(r.seq);
	free(seen);
}

/* delay=: a bounded queue; released when due, in order; nothing leaks at
 * close; next_ns says when to wake. */
static void
test_delay_bounded(void **state)
{
	struct ina_faults_cfg cfg;
	struct ina_faults f;
	struct ina_pkt *pkts[ROOM];
	struct run r = { .seq = calloc(256, 4), .now = 1000 * US };
	uint16_t nb;

	(void)state;
	cfg_of(&cfg, "delay_us=1000,hold=8");
	ina_faults_init(&f, &cfg);
	step(&f, &r, 0, BURST); /* 8 held, 8 pass: the queue is full */
	assert_int_equal(f.nb_held, 8);
	assert_int_equal(f.st.delay, 8);
	assert_int_equal(f.st.hold_full, 8);
	assert_int_equal(r.nb, 8);
	assert_int_equal(ina_faults_next_ns(&f, r.now), 1000 * US);
	assert_int_equal(ina_faults_next_ns(&f, r.now + 400 * US), 600 * US);
	assert_int_equal(ina_faults_release(&f, r.now + 999 * US, pkts, ROOM), 0);
	nb = ina_faults_release(&f, r.now + 1000 * US, pkts, 3); /* room for 3 */
	assert_int_equal(nb, 3);
	drain_out(&r, pkts, nb);
	assert_int_equal(ina_faults_next_ns(&f, r.now + 1000 * US), 0);
	nb = ina_faults_release(&f, r.now + 1000 * US, pkts, ROOM);
	assert_int_equal(nb, 5);
	drain_out(&r, pkts, nb);
	for (uint32_t i = 0; i < 8; i++) /* the held ones, in their order */
		assert_int_equal(r.seq[8 + i], i);
	assert_int_equal(ina_faults_next_ns(&f, 0), UINT64_MAX);

	/* Held at close: ina_faults_flush gives every buffer back. */
	step(&f, &r, 100, BURST);
	assert_int_equal(f.nb_held, 8);
	assert_int_equal(ina_pkt_pool_avail(pool), POOL_PKTS - 8);
	ina_faults_flush(&f);
	assert_int_equal(f.nb_held, 0);
	assert_int_equal(ina_pkt_pool_avail(pool), POOL_PKTS);
	free(r.seq);
}

/* dup= with no room: the copy waits in the queue for the next call. */
static void
test_dup_no_room(void **state)
{
	struct ina_faults_cfg cfg;
	struct ina_faults f;
	struct ina_pkt *pkts[ROOM];
	uint16_t nb;

	(void)state;
	cfg_of(&cfg, "dup=1");
	ina_faults_init(&f, &cfg);
	assert_false(ina_faults_timed(&f));
	assert_int_equal(pool->ops->get(pool, pkts, 4), 4);
	for (int i = 0; i < 4; i++)
		pkts[i]->len = 0;
	nb = ina_faults_rx(&f, 0, pkts, 4, 6); /* room for 2 copies */
	assert_int_equal(nb, 6);
	assert_int_equal(f.nb_held, 2);
	assert_int_equal(f.st.dup, 4);
	assert_int_equal(ina_faults_next_ns(&f, 0), 0);
	ina_pkt_free_bulk(pkts, nb);
	nb = ina_faults_release(&f, 0, pkts, ROOM);
	assert_int_equal(nb, 2);
	ina_pkt_free_bulk(pkts, nb);
	assert_int_equal(ina_pkt_pool_avail(pool), POOL_PKTS);
}

/* corrupt=: exactly one bit flipped, at about the rate. */
static void
test_corrupt(void **state)
{
	struct ina_faults_cfg cfg;
	struct ina_faults f;
	uint8_t buf[100], ref[100];
	unsigned hits = 0;

	(void)state;
	cfg_of(&cfg, "corrupt=0.3,seed=11");
	ina_faults_init(&f, &cfg);
	for (unsigned i = 0; i < sizeof(ref); i++)
		ref[i] = (uint8_t)(i * 7);
	for (unsigned n = 0; n < 20000; n++) {
		unsigned bits = 0;

		memcpy(buf, ref, sizeof(buf));
		if (!ina_faults_corrupt(&f, buf, sizeof(buf))) {
			assert_memory_equal(buf, ref, sizeof(buf));
			continue;
		}
		hits++;
		for (unsigned i = 0; i < sizeof(buf); i++)
			bits += (unsigned)__builtin_popcount(buf[i] ^ ref[i]);
		assert_int_equal(bits, 1);
	}
	assert_int_equal(f.st.corrupt, hits);
	assert_binomial(hits, 20000, 0.3);
	assert_int_equal(ina_faults_corrupt(&f, buf, 0), 0);
}

/* No malloc per packet, whatever the faults. */
static void
test_no_alloc(void **state)
{
	struct ina_faults_cfg cfg;
	struct ina_faults f;
	struct run r = { 0 };
	uint8_t buf[64] = { 0 };

	(void)state;
	cfg_of(&cfg, "drop=0.05,dup=0.05,reorder=0.1,delay=0.05,delay_us=50,corrupt=0.1");
	ina_faults_init(&f, &cfg);
	alloc_count_on();
	run_many(&f, &r);
	for (int i = 0; i < 10000; i++)
		ina_faults_corrupt(&f, buf, sizeof(buf));
	alloc_count_off();
	assert_int_equal(alloc_nb, 0);
	assert_true(f.st.drop && f.st.dup && f.st.reorder && f.st.delay && f.st.corrupt);
}

static struct ina_port *
udp_open(const char *spec)
{
	struct ina_port *port = NULL;
	char err[256];

	assert_int_equal(ina_port_open(spec, &port, err, sizeof(err)), 0);
	return port;
}

/* Receives on 'b' until 'want' packets came or 2 s passed; returns how many,
 * and the longest wait() that ended with packets due. */
static unsigned
udp_collect(struct ina_port *b, unsigned want, uint64_t *longest_wait)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	uint64_t start = ina_now_ns();
	unsigned got = 0;

	*longest_wait = 0;
	while (got < want && ina_now_ns() - start < 2 * INA_NS_PER_S) {
		uint16_t nb = ina_port_rx_burst(b, pkts, INA_MAX_BURST);
		uint64_t t;

		got += nb;
		ina_pkt_free_bulk(pkts, nb);
		if (nb)
			continue;
		t = ina_now_ns();
		ina_port_wait(b, INA_NS_PER_S);
		t = ina_now_ns() - t;
		if (t > *longest_wait)
			*longest_wait = t;
	}
	return got;
}

/* delay_us= on a udp port: 8 packets held (hold=8), 4 pass at once; wait()
 * wakes when the held ones are due, not at its 1 s timeout; close frees
 * packets still held. */
static void
test_udp_port_delay(void **state)
{
	struct ina_port *a = udp_open("udp:bind=127.0.0.1:0,pkts=64");
	struct ina_port *b = udp_open("udp:bind=127.0.0.1:0,pkts=64,delay_us=100000,hold=8");
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct ina_peer dst;
	uint64_t t0, waited;
	char addr[64];

	(void)state;
	assert_int_equal(ina_port_udp_local(b, addr, sizeof(addr)), 0);
	assert_int_equal(ina_port_resolve(a, addr, &dst), 0);
	for (int i = 0; i < 12; i++) {
		pkts[i] = ina_pkt_alloc(a->pool);
		assert_non_null(pkts[i]);
		pkts[i]->len = 4;
		memcpy(pkts[i]->data, &i, 4);
		pkts[i]->peer = dst;
	}
	t0 = ina_now_ns();
	assert_int_equal(ina_port_tx_burst(a, pkts, 12), 12);
	assert_int_equal(udp_collect(b, 4, &waited), 4);
	assert_int_equal(b->stats.inject_delay, 8);
	assert_true(ina_now_ns() - t0 < 100 * INA_NS_PER_MS);
	assert_int_equal(udp_collect(b, 8, &waited), 8);
	assert_true(ina_now_ns() - t0 >= 100 * INA_NS_PER_MS);
	assert_true(waited < 500 * INA_NS_PER_MS); /* woken for them, not at 1 s */
	assert_int_equal(b->stats.rx_pkts, 12);
	assert_int_equal(ina_pkt_pool_avail(b->pool), 64);

	/* Held at close. */
	for (int i = 0; i < 5; i++) {
		pkts[i] = ina_pkt_alloc(a->pool);
		pkts[i]->len = 4;
		pkts[i]->peer = dst;
	}
	assert_int_equal(ina_port_tx_burst(a, pkts, 5), 5);
	for (int i = 0; i < 100 && b->stats.inject_delay < 13; i++) {
		assert_int_equal(ina_port_rx_burst(b, pkts, INA_MAX_BURST), 0);
		ina_port_wait(b, INA_NS_PER_MS);
	}
	assert_int_equal(b->stats.inject_delay, 13);
	/* Held in the port's GRO receive buffers (its pool when gro=0). */
	assert_int_equal(ina_port_udp_rx_held(b), 5);
	assert_int_equal(ina_pkt_pool_avail(b->pool), 64);
	ina_port_close(b);
	ina_port_close(a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options),	       cmocka_unit_test(test_rates),
		cmocka_unit_test(test_seed),	       cmocka_unit_test(test_reorder),
		cmocka_unit_test(test_delay_bounded),  cmocka_unit_test(test_dup_no_room),
		cmocka_unit_test(test_corrupt),	       cmocka_unit_test(test_no_alloc),
		cmocka_unit_test(test_udp_port_delay),
	};

	return cmocka_run_group_tests_name("faults", tests, setup, teardown);
}
