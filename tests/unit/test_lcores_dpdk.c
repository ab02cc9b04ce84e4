/* SPDX-License-Identifier: MIT */
/*
 * The switch on lcores (switch_sim/lcores.h) in one process: EAL without
 * hugepages on lcores 0-1, one ring ethdev per partition and one per worker,
 * and a "wire" thread that moves frames between them and runs four host
 * engines. The wire sends each worker frame to a random partition, so DATA
 * must be steered between lcores and JOIN/FIN/LEAVE sequenced by partition 0;
 * it also drops frames both ways. Every sum must be exact (the data are
 * multiples of 2^-10, so any order of addition gives the same bits) and equal
 * to the one-partition switch's, for f32 and i32. In the i32 runs one worker
 * never sends FIN: partition 0 frees the job when its linger runs out, and
 * partition 1 must follow (the switch runs on, 10 ms at a time, until then). A print asked for during a run (the 'dump' flag)
 * must be served.
 *
 * In tenant mode (the job's packets tagged) an attacker on worker 0's port
 * also sends JOINs, FINs and LEAVEs of the job with made-up tags: partition
 * 0 must check each tag before it copies the packet to partition 1, so every
 * one is counted once as not copied (ctl_unauth) and once as dropped by
 * partition 0's pipeline (auth_fail), and the sums stay exact.
 *
 * With two lcores the partitions run on lcores 0 and 1 and the wire thread
 * floats over both CPUs (everything backs off when idle). With only one lcore
 * (one CPU, or INA_TEST_ONE_LCORE=1: ctest runs it so too), both partitions
 * run in turn on the main lcore: same code, no parallelism; the test says so
 * and still checks every sum.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "engine.h"
#include "ina/auth.h"
#include "ina/log.h"
#include "ina/port_dpdk.h"
#include "ina/util.h"
#include "ina/wire.h"
#include "lcores.h"
#include "tenants.h"

#define K_MAX 2
#define WORLD 4
#define LANES 6
#define BLOCK 64
#define N 6000
#define ROUNDS 3
#define RUN_LIMIT_NS (30ull * INA_NS_PER_S)
#define LINGER_NS (20ull * INA_NS_PER_MS)

struct fixture {
	struct rte_ring *sw_in[K_MAX], *sw_out[K_MAX];
	struct rte_ring *w_in[WORLD], *w_out[WORLD];
	struct ina_port *sw[K_MAX], *w[WORLD];
	unsigned lcore1; /* second lcore, or the main one */
};

static struct fixture fx;
static float ins[WORLD][N];
static float outs[3][2][WORLD][N]; /* [k][enc][rank] */

/* What the wire thread runs. */
struct wire {
	uint16_t k;
	uint8_t enc;
	double loss;
	uint64_t rng;
	struct engine *e[WORLD];
	volatile sig_atomic_t stop;
	volatile sig_atomic_t dump;
	int skip_fin; /* a rank that sends no FIN, or -1 */
	uint32_t job_id;
	struct ina_peer sw;
	unsigned forge; /* forged control packets still to send */
	unsigned forged;
	int rc;
	char msg[256];
	uint64_t moved, dropped;
};

static int
ring_port(const char *name, struct rte_ring **rx, struct rte_ring **tx, const char *opts,
	  struct ina_port **port)
{
	int sock = (int)rte_socket_id(), id;

	*rx = rte_ring_create(name, 1024, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	{
		char n2[32];

		snprintf(n2, sizeof(n2), "%s_tx", name);
		*tx = rte_ring_create(n2, 1024, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	}
	if (!*rx || !*tx)
		return -1;
	id = rte_eth_from_rings(name, rx, 1, tx, 1, (unsigned)sock);
	if (id < 0)
		return -1;
	return ina_port_dpdk_open_id((uint16_t)id, opts, port, NULL, 0);
}

static int
group_setup(void **state)
{
	char *argv[] = { "test_lcores_dpdk",
			 "--no-huge",
			 "--no-pci",
			 "--no-shconf",
			 "--no-telemetry",
			 "-m",
			 "512",
			 "-l",
			 "0-1",
			 "--log-level=error" };
	int argc = (int)(sizeof(argv) / sizeof(argv[0]));
	char err[256], name[32], opts[64];

	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || getenv("INA_TEST_ONE_LCORE"))
		argv[8] = "0";
	if (ina_dpdk_eal_init(argc, argv, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	fx.lcore1 = rte_get_next_lcore(rte_get_main_lcore(), 1, 0);
	if (fx.lcore1 >= RTE_MAX_LCORE) {
		fx.lcore1 = rte_get_main_lcore();
		print_message("only one lcore: the partitions run in turn on the main lcore\n");
	}
	for (int p = 0; p < K_MAX; p++) {
		snprintf(name, sizeof(name), "lsw%d", p);
		if (ring_port(name, &fx.sw_in[p], &fx.sw_out[p], "ip=10.0.0.100,mbufs=4095",
			      &fx.sw[p]) < 0)
			return -1;
	}
	for (int r = 0; r < WORLD; r++) {
		snprintf(name, sizeof(name), "lw%d", r);
		snprintf(opts, sizeof(opts), "ip=10.0.1.%d,mbufs=2047", r + 1);
		if (ring_port(name, &fx.w_in[r], &fx.w_out[r], opts, &fx.w[r]) < 0)
			return -1;
	}
	ina_log_set_level(INA_LOG_ERR);
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	for (int p = 0; p < K_MAX; p++)
		ina_port_close(fx.sw[p]);
	for (int r = 0; r < WORLD; r++)
		ina_port_close(fx.w[r]);
	ina_dpdk_eal_cleanup();
	return 0;
}

static uint64_t
rng_next(struct wire *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

static int
lose(struct wire *w)
{
	return w->loss > 0 && (double)(rng_next(w) >> 11) * 0x1.0p-53 < w->loss;
}

/* Moves frames: workers -> a random partition, partitions -> the worker
 * named by the destination IP's last byte. */
static unsigned
wire_move(struct wire *w)
{
	struct rte_mbuf *m[32];
	unsigned moved = 0;

	for (int r = 0; r < WORLD; r++) {
		unsigned n = rte_ring_sc_dequeue_burst(fx.w_out[r], (void **)m, 32, NULL);

		for (unsigned i = 0; i < n; i++) {
			uint16_t p = (uint16_t)(rng_next(w) % w->k);

			if (lose(w) || rte_ring_sp_enqueue(fx.sw_in[p], m[i]) != 0) {
				rte_pktmbuf_free(m[i]);
				w->dropped++;
			}
		}
		moved += n;
	}
	for (int p = 0; p < w->k; p++) {
		unsigned n = rte_ring_sc_dequeue_burst(fx.sw_out[p], (void **)m, 32, NULL);

		for (unsigned i = 0; i < n; i++) {
			unsigned r = rte_pktmbuf_mtod(m[i], const uint8_t *)[33] - 1u;

			if (r >= WORLD || lose(w) || rte_ring_sp_enqueue(fx.w_in[r], m[i]) != 0) {
				rte_pktmbuf_free(m[i]);
				w->dropped++;
			}
		}
		moved += n;
	}
	w->moved += moved;
	return moved;
}

/* An attacker on worker 0's port: a JOIN, FIN or LEAVE of the job whose tag
 * field holds no tag. */
static void
forge_one(struct wire *w)
{
	static const uint8_t types[] = { INA_T_JOIN, INA_T_FIN, INA_T_LEAVE };
	struct ina_pkt *p = ina_pkt_alloc(fx.w[0]->pool);
	struct ina_hdr h;

	if (!p)
		return;
	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = types[w->forged % 3];
	h.encoding = w->enc;
	h.job_id = w->job_id;
	h.block_size = BLOCK;
	h.token = 0x5eed000000000000ull + w->forged;
	ina_wire_encode_hdr(&h, p->data);
	p->len = INA_HDR_SIZE;
	if (h.type == INA_T_JOIN) {
		ina_wire_encode_join(WORLD, LANES, BLOCK, p->data + INA_HDR_SIZE);
		p->len += sizeof(struct ina_wire_join);
	}
	p->peer = w->sw;
	ina_port_tx_burst(fx.w[0], &p, 1);
	w->forge--;
	w->forged++;
}

/* Runs the engines until none is in 'phase'; 0, or -1 on error or time out. */
static int
wire_run(struct wire *w, int phase, uint64_t deadline)
{
	struct ina_pkt *pkts[32];

	for (;;) {
		unsigned busy = 0, moved;
		uint64_t now = ina_now_ns();

		for (int r = 0; r < WORLD; r++) {
			uint16_t nb = ina_port_rx_burst(fx.w[r], pkts, 32);

			engine_rx(w->e[r], pkts, nb, now);
			nb = engine_tx(w->e[r], now, pkts, 32);
			ina_port_tx_burst(fx.w[r], pkts, nb);
			if (engine_error(w->e[r])) {
				snprintf(w->msg, sizeof(w->msg), "rank %d: %s", r,
					 engine_error_msg(w->e[r]));
				return -1;
			}
			busy += engine_phase(w->e[r]) == phase;
		}
		if (w->forge)
			forge_one(w);
		moved = wire_move(w);
		if (!busy)
			return 0;
		if (now > deadline) {
			snprintf(w->msg, sizeof(w->msg), "time out in phase %d", phase);
			return -1;
		}
		if (!moved) {
			struct timespec ts = { .tv_sec = 0, .tv_nsec = 10000 };

			nanosleep(&ts, NULL);
		}
	}
}

static void
make_round(int round)
{
	static const double density[ROUNDS] = { 1.0, 0.2, 0.03 };

	for (int r = 0; r < WORLD; r++)
		for (int i = 0; i < N; i++) {
			uint64_t x = (uint64_t)round * 1000003u + (uint64_t)r * 7919u +
				     (uint64_t)(i / BLOCK);
			uint64_t v = (uint64_t)round * 31u + (uint64_t)r * 65537u + (uint64_t)i;

			x = (x * 0x9e3779b97f4a7c15ull) >> 11;
			v = (v * 0xbf58476d1ce4e5b9ull) >> 20;
			ins[r][i] = (double)x * 0x1.0p-53 < density[round]
					    ? (float)((int)(v % 2047) - 1023) / 1024.0f
					    : 0.0f;
		}
}

static void *
wire_main(void *arg)
{
	struct wire *w = arg;
	uint64_t deadline = ina_now_ns() + RUN_LIMIT_NS;
	float *o[WORLD];

	w->rc = -1;
	for (int r = 0; r < WORLD; r++)
		engine_join(w->e[r], ina_now_ns());
	if (wire_run(w, ENGINE_JOINING, deadline) < 0)
		goto out;
	/* Partition 0 clears the flag once every partition published its
	 * counters and it printed them. */
	w->dump = 1;
	for (int round = 0; round < ROUNDS; round++) {
		make_round(round);
		for (int r = 0; r < WORLD; r++) {
			o[r] = outs[w->k][w->enc == INA_ENC_I32][r];
			memset(o[r], 0x7f, sizeof(float) * N);
			if (engine_allreduce(w->e[r], 20 + (uint32_t)round, ins[r], o[r], N, BLOCK,
					     ENGINE_SUM, ina_now_ns()) < 0)
				goto out;
		}
		if (wire_run(w, ENGINE_RUNNING, deadline) < 0)
			goto out;
		for (int r = 0; r < WORLD; r++)
			for (int i = 0; i < N; i++) {
				float want = ins[0][i] + ins[1][i] + ins[2][i] + ins[3][i];

				if (memcmp(&o[r][i], &want, sizeof(want)) != 0) {
					snprintf(w->msg, sizeof(w->msg),
						 "round %d rank %d element %d: %.9g, want %.9g",
						 round, r, i, (double)o[r][i], (double)want);
					goto out;
				}
			}
	}
	for (int r = 0; r < WORLD; r++)
		if (r != w->skip_fin)
			engine_finish(w->e[r], ina_now_ns());
	if (wire_run(w, ENGINE_FINISHING, deadline) < 0)
		goto out;
	if (w->dump) {
		snprintf(w->msg, sizeof(w->msg), "the print asked for was not served");
		goto out;
	}
	w->rc = 0;
out:
	w->stop = 1;
	return NULL;
}

static void *
stopper_main(void *arg)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 10 * 1000000 };

	nanosleep(&ts, NULL);
	*(volatile sig_atomic_t *)arg = 1;
	return NULL;
}

static int
jobs_left(const struct switch_lcores *sl, uint16_t k)
{
	int n = 0;

	for (uint16_t p = 0; p < k; p++)
		n += pipeline_nb_jobs(switch_lcores_pipeline(sl, p));
	return n;
}

/*
 * The wire stops the switch once the workers are done, which can be before
 * a heavily loaded machine let the switch process the last FIN or reach the
 * linger's end. Runs it again, 10 ms at a time (up to 5 s), until every
 * partition freed the job; between runs no lcore runs, so this thread may
 * read their state.
 */
static void
settle(struct switch_lcores *sl, uint16_t k)
{
	for (int i = 0; i < 500 && jobs_left(sl, k); i++) {
		volatile sig_atomic_t stop = 0;
		pthread_t th;

		assert_int_equal(pthread_create(&th, NULL, stopper_main, (void *)&stop), 0);
		assert_int_equal(switch_lcores_run(sl, &stop, NULL), 0);
		pthread_join(th, NULL);
	}
}

static void
drain_all(void)
{
	struct rte_ring *rings[] = { fx.sw_in[0], fx.sw_in[1], fx.sw_out[0], fx.sw_out[1],
				     fx.w_in[0],  fx.w_in[1],  fx.w_in[2],   fx.w_in[3],
				     fx.w_out[0], fx.w_out[1], fx.w_out[2],  fx.w_out[3] };
	struct rte_mbuf *m;

	for (size_t i = 0; i < sizeof(rings) / sizeof(rings[0]); i++)
		while (rte_ring_sc_dequeue(rings[i], (void **)&m) == 0)
			rte_pktmbuf_free(m);
}

/* Tenant 1's key (tenant mode's runs): 0x00..0x1f. */
static const char tenants_yaml[] =
	"tenants:\n"
	"  - name: alice\n"
	"    index: 1\n"
	"    key: 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
	"    jobs: 1\n"
	"    slots: 64\n"
	"    max_weight: 1\n";

static void
run_switch(uint16_t k, uint8_t enc, double loss, int tenant)
{
	struct tenants *tenants = NULL;
	struct switch_lcores_config c;
	struct switch_lcores *sl;
	struct pipeline_stats sum;
	static struct wire w;
	pthread_attr_t attr;
	pthread_t th;
	cpu_set_t cpus;
	char err[256];

	memset(&w, 0, sizeof(w));
	w.k = k;
	w.enc = enc;
	w.loss = loss;
	w.rng = 0x2545f4914f6cdd1dull + k * 7 + enc;
	w.skip_fin = enc == INA_ENC_I32 ? WORLD - 1 : -1;
	switch_lcores_config_init(&c);
	c.nb_parts = k;
	assert_int_equal(switch_lcores_spread(&c), fx.lcore1 == rte_get_main_lcore() ? 1 : k);
	assert_int_equal(c.lcore[0], rte_get_main_lcore());
	if (k > 1)
		assert_int_equal(c.lcore[1], fx.lcore1);
	c.port[0] = fx.sw[0];
	c.port[1] = fx.sw[1];
	c.pipe.nb_slots = 64;
	c.pipe.slot_elems = BLOCK;
	c.pipe.linger_ns = LINGER_NS;
	w.job_id = 40u + k;
	if (tenant) {
		tenants = tenants_parse(tenants_yaml, strlen(tenants_yaml), "t.yaml", err,
					sizeof(err));
		if (!tenants)
			fail_msg("tenants: %s", err);
		c.pipe.tenants = tenants;
		w.job_id |= 1u << INA_TENANT_SHIFT;
		w.forge = 300;
	}
	sl = switch_lcores_create(&c, err, sizeof(err));
	if (!sl)
		fail_msg("switch_lcores_create: %s", err);
	for (int r = 0; r < WORLD; r++) {
		struct engine_config ec;

		engine_config_init(&ec);
		ec.job_id = w.job_id;
		ec.rank = (uint16_t)r;
		ec.world = WORLD;
		ec.lanes = LANES;
		ec.max_block = BLOCK;
		ec.encoding = enc;
		ec.token = tenant ? 0 : 0xfeedull + k;
		ec.auth = (uint8_t)tenant;
		if (tenant)
			ina_auth_job_key(tenants_get(tenants, 1)->key, w.job_id, &ec.key);
		ec.pool = fx.w[r]->pool;
		ec.rto_ns = 2 * INA_NS_PER_MS;
		ec.rto_min_ns = INA_NS_PER_MS;
		ec.rto_max_ns = 20 * INA_NS_PER_MS;
		assert_int_equal(ina_port_resolve(fx.w[r], "02:00:00:00:00:64@10.0.0.100:9150",
						  &ec.sw),
				 0);
		w.e[r] = engine_create(&ec);
		assert_non_null(w.e[r]);
		w.sw = ec.sw;
	}
	/* The wire floats over every CPU, not pinned to the main lcore's. */
	CPU_ZERO(&cpus);
	for (long i = 0; i < sysconf(_SC_NPROCESSORS_ONLN) && i < CPU_SETSIZE; i++)
		CPU_SET((int)i, &cpus);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
	assert_int_equal(pthread_create(&th, &attr, wire_main, &w), 0);
	pthread_attr_destroy(&attr);
	assert_int_equal(switch_lcores_run(sl, &w.stop, &w.dump), 0);
	pthread_join(th, NULL);
	if (w.rc == 0)
		settle(sl, k);

	switch_lcores_sum(sl, &sum);
	print_message("k=%u %s loss %.2f: %" PRIu64 " frames moved, %" PRIu64 " dropped\n", k,
		      enc == INA_ENC_I32 ? "i32" : "f32", loss, w.moved, w.dropped);
	switch_lcores_print(sl, stdout);
	if (w.rc != 0)
		fail_msg("k=%u: %s", k, w.msg);
	assert_true(sum.results >= (uint64_t)ROUNDS * 10);
	assert_int_equal(sum.jobs_admitted, 1);
	assert_int_equal(sum.jobs_freed, 1);
	assert_int_equal(sum.drop[PDROP_OTHER_PART], 0);
	for (uint16_t p = 0; p < k; p++)
		assert_int_equal(pipeline_nb_jobs(switch_lcores_pipeline(sl, p)), 0);
	if (k > 1) {
		assert_true(switch_lcores_stats(sl, 1)->steered_in > 0);
		/* Every JOIN/FIN/LEAVE partition 0 took was copied (a FIN resent
		 * after the job was freed too), and replayed on partition 1. */
		assert_int_equal(switch_lcores_stats(sl, 0)->ctl_drop, 0);
		assert_true(switch_lcores_stats(sl, 0)->ctl_copies >=
			    sum.joins + sum.fins + sum.leaves);
		assert_int_equal(switch_lcores_stats(sl, 1)->ctl_copies,
				 switch_lcores_stats(sl, 0)->ctl_copies);
		/* Freed by the last FIN on both, or by partition 0's linger expiry
		 * and followed (always when a rank sends no FIN). */
		assert_true(switch_lcores_stats(sl, 1)->jobs_followed <= 1);
		if (w.skip_fin >= 0)
			assert_int_equal(switch_lcores_stats(sl, 1)->jobs_followed, 1);
	}
	/* Every forged packet that arrived was dropped on partition 0 and, with
	 * two partitions, never copied: partition 0 checked its tag first. */
	if (tenant) {
		assert_true(sum.drop[PDROP_AUTH] > 0);
		assert_true(sum.drop[PDROP_AUTH] <= w.forged);
		assert_int_equal(pipeline_stats(switch_lcores_pipeline(sl, 0))->drop[PDROP_AUTH],
				 sum.drop[PDROP_AUTH]);
	} else {
		assert_int_equal(sum.drop[PDROP_AUTH], 0);
	}
	assert_int_equal(switch_lcores_stats(sl, 0)->ctl_unauth,
			 tenant && k > 1 ? sum.drop[PDROP_AUTH] : 0);
	switch_lcores_destroy(sl);
	for (int r = 0; r < WORLD; r++)
		engine_destroy(w.e[r]);
	tenants_free(tenants);
	drain_all();
}

static void
test_f32(void **state)
{
	(void)state;
	run_switch(1, INA_ENC_F32, 0.01, 0);
	run_switch(2, INA_ENC_F32, 0.01, 0);
	assert_memory_equal(outs[2][0], outs[1][0], sizeof(outs[1][0]));
}

static void
test_i32(void **state)
{
	(void)state;
	run_switch(1, INA_ENC_I32, 0.02, 0);
	run_switch(2, INA_ENC_I32, 0.02, 0);
	assert_memory_equal(outs[2][1], outs[1][1], sizeof(outs[1][1]));
}

/* Tenant mode, forged control packets beside the job: the same sums. */
static void
test_tenant(void **state)
{
	(void)state;
	run_switch(1, INA_ENC_F32, 0.01, 1);
	assert_memory_equal(outs[1][0], outs[2][0], sizeof(outs[1][0])); /* test_f32's */
	run_switch(2, INA_ENC_F32, 0.01, 1);
	assert_memory_equal(outs[2][0], outs[1][0], sizeof(outs[1][0]));
}

static void
test_bad_config(void **state)
{
	struct switch_lcores_config c;
	char err[256];

	(void)state;
	switch_lcores_config_init(&c);
	c.nb_parts = 2;
	c.port[0] = fx.sw[0];
	assert_null(switch_lcores_create(&c, err, sizeof(err)));
	assert_non_null(strstr(err, "no port"));
	c.port[1] = fx.sw[1];
	c.lcore[1] = RTE_MAX_LCORE - 1;
	assert_null(switch_lcores_create(&c, err, sizeof(err)));
	assert_non_null(strstr(err, "lcore"));
	c.lcore[1] = fx.lcore1;
	c.ring_size = 1000;
	assert_null(switch_lcores_create(&c, err, sizeof(err)));
	c.nb_parts = 0;
	assert_null(switch_lcores_create(&c, err, sizeof(err)));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_f32),
		cmocka_unit_test(test_i32),
		cmocka_unit_test(test_tenant),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
