/* SPDX-License-Identifier: MIT */
/*
 * bench_lcores_dpdk: the switch on 1 and on 2 lcores (switch_sim/lcores.h) in
 * one process, on ring ethdevs, with EAL on lcores 0-1 and no hugepages. The
 * workers do not run: their packets (JOINs, then every DATA packet of one
 * round, lock step by lane, as the lane protocol makes them) are framed
 * ahead of time into each partition's rx ring, and the switch's answers pile
 * up in its tx rings, so both cores belong to the switch while it is timed.
 * The time of a run is from the launch to the last poll that did work on any
 * partition, after one untimed warm-up run. The three configurations take
 * turns within each run. It prints median Melem/s (tensor elements per second, a sparse
 * tensor counting its dense size) and Mpkt/s, for dense and 1%-sparse input:
 *   1 lcore              one partition, every packet on its port;
 *   2 lcores             two partitions, each packet on the port of its
 *                        lane's owner (what RSS or a flow rule would do);
 *   2 lcores, sw steer   two partitions, every packet on partition 0's port,
 *                        which steers half of them to partition 1 by ring;
 * and the median over runs of each run's ratio to 1 lcore. Figures only; it
 * never passes or fails.
 * BENCH_VERBOSE=1 in the environment prints every run's partition counters.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "ina/cli.h"
#include "ina/log.h"
#include "ina/port_dpdk.h"
#include "ina/util.h"
#include "ina/wire.h"
#include "lcores.h"
#include "bench_stats.h"

#define JOB 3
#define TOKEN 0x5eed5eedull
#define MAX_RUNS 51
#define MAX_WORLD 8
#define RING 65536
#define SW_IP "10.0.0.100"

struct opts {
	unsigned runs;
	uint32_t dense_elems, sparse_elems;
	double density;
	uint16_t block, lanes, world;
};

/* One lane step: the block all workers answer, and each worker's answer. */
struct step {
	uint16_t lane;
	uint8_t ver;
	uint8_t has; /* bit w: worker w has the block */
	uint32_t block;
	uint32_t next[MAX_WORLD];
};

struct workload {
	const char *name;
	uint32_t elems;
	double density;
	struct step *steps; /* in feed order: by step, then by lane */
	uint32_t nb_steps;  /* = results one round completes */
	uint64_t nb_pkts;
};

static struct rte_ring *sw_rx[2], *sw_tx[2];
static struct ina_port *sw[2], *gen[2];
static struct ina_peer sw_peer;
static struct opts o;

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: bench_lcores_dpdk [options]\n"
		"\n"
		"Times the switch on 1 and 2 lcores over prebuilt traffic on ring ethdevs\n"
		"(EAL: --no-huge --no-pci --no-shconf -l 0-1) and prints medians and ratios.\n"
		"\n"
		"options:\n"
		"  --runs N              timed runs per figure (default 5)\n"
		"  --dense-elements M    dense tensor (default 2097152)\n"
		"  --sparse-elements M   sparse tensor (default 33554432)\n"
		"  --density D           share of non-zero blocks per worker, sparse (default 0.01)\n"
		"  --block B             elements per block (default 256)\n"
		"  --lanes L             lanes (default 64)\n"
		"  --world N             workers (default 4, at most 8)\n"
		"  -h, --help            this text\n");
}

static void
parse_args(int argc, char **argv)
{
	enum { O_RUNS = 256, O_DENSE, O_SPARSE, O_DENSITY, O_BLOCK, O_LANES, O_WORLD };
	static const struct option longopts[] = {
		{ "runs", required_argument, NULL, O_RUNS },
		{ "dense-elements", required_argument, NULL, O_DENSE },
		{ "sparse-elements", required_argument, NULL, O_SPARSE },
		{ "density", required_argument, NULL, O_DENSITY },
		{ "block", required_argument, NULL, O_BLOCK },
		{ "lanes", required_argument, NULL, O_LANES },
		{ "world", required_argument, NULL, O_WORLD },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	ina_cli_set_prog("bench_lcores_dpdk");
	o.runs = 5;
	o.dense_elems = 2097152;
	o.sparse_elems = 33554432;
	o.density = 0.01;
	o.block = 256;
	o.lanes = 64;
	o.world = 4;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case O_RUNS:
			o.runs = (unsigned)ina_cli_u64("runs", optarg, 1, MAX_RUNS);
			break;
		case O_DENSE:
			o.dense_elems = (uint32_t)ina_cli_u64("dense-elements", optarg, 1,
							      1u << 26);
			break;
		case O_SPARSE:
			o.sparse_elems = (uint32_t)ina_cli_u64("sparse-elements", optarg, 1,
							       1u << 28);
			break;
		case O_DENSITY:
			if (ina_parse_double(optarg, 0, 1, &o.density) < 0)
				ina_die("--density %s: a number in [0, 1]", optarg);
			break;
		case O_BLOCK:
			o.block = (uint16_t)ina_cli_u64("block", optarg, 1, 340);
			break;
		case O_LANES:
			o.lanes = (uint16_t)ina_cli_u64("lanes", optarg, 1, 1024);
			break;
		case O_WORLD:
			o.world = (uint16_t)ina_cli_u64("world", optarg, 1, MAX_WORLD);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		ina_die("unexpected argument '%s' (see --help)", argv[optind]);
}

static int
has_block(uint16_t w, uint32_t b, double density)
{
	uint64_t x = ((uint64_t)w << 40 ^ b) * 0x9e3779b97f4a7c15ull;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return density >= 1.0 || (double)(x >> 11) * 0x1.0p-53 < density;
}

/* Worker w's next non-zero block of the lane after b, or END. */
static uint32_t
next_block(uint16_t w, uint32_t b, uint32_t nb, double density)
{
	for (b += o.lanes; b < nb; b += o.lanes)
		if (has_block(w, b, density))
			return b;
	return INA_BLOCK_END;
}

/* The lane protocol of one f32 round, without loss, in lock step by lane. */
static void
workload_build(struct workload *wl, const char *name, uint32_t elems, double density)
{
	uint32_t nb = ina_wire_nb_blocks(elems, o.block);
	uint32_t *cur = calloc(o.lanes, sizeof(*cur));
	uint8_t *ver = calloc(o.lanes, 1);
	size_t cap = 1024;
	int more = 1;

	memset(wl, 0, sizeof(*wl));
	wl->name = name;
	wl->elems = elems;
	wl->density = density;
	wl->steps = malloc(cap * sizeof(*wl->steps));
	if (!cur || !ver || !wl->steps)
		ina_die("out of memory");
	for (uint16_t l = 0; l < o.lanes; l++)
		cur[l] = l < nb ? l : INA_BLOCK_END; /* f32 lanes open with block l */
	while (more) {
		more = 0;
		for (uint16_t l = 0; l < o.lanes; l++) {
			struct step *s;
			uint32_t min = INA_BLOCK_END;

			if (cur[l] == INA_BLOCK_END)
				continue;
			if (wl->nb_steps == cap) {
				cap *= 2;
				wl->steps = realloc(wl->steps, cap * sizeof(*wl->steps));
				if (!wl->steps)
					ina_die("out of memory");
			}
			s = &wl->steps[wl->nb_steps++];
			memset(s, 0, sizeof(*s));
			s->lane = l;
			s->ver = ver[l];
			s->block = cur[l];
			for (uint16_t w = 0; w < o.world; w++) {
				if (has_block(w, cur[l], density))
					s->has |= (uint8_t)(1u << w);
				s->next[w] = next_block(w, cur[l], nb, density);
				if (s->next[w] < min)
					min = s->next[w];
			}
			wl->nb_pkts += o.world;
			cur[l] = min;
			ver[l] ^= 1;
			more = 1;
		}
	}
	free(cur);
	free(ver);
}

/* Frames 'pkts' into partition p's rx ring through gen[p]. */
static void
feed(uint16_t p, struct ina_pkt **pkts, uint16_t n)
{
	if (n && ina_port_tx_burst(gen[p], pkts, n) != n)
		ina_die("feeding partition %u: its rx ring or pool is full", p);
}

static struct ina_pkt *
pkt_new(uint16_t p)
{
	struct ina_pkt *pkt = ina_pkt_alloc(gen[p]->pool);

	if (!pkt)
		ina_die("generator pool %u empty", p);
	pkt->peer = sw_peer;
	return pkt;
}

static void
feed_joins(void)
{
	struct ina_pkt *pkts[MAX_WORLD];
	struct ina_hdr h;

	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = INA_T_JOIN;
	h.encoding = INA_ENC_F32;
	h.job_id = JOB;
	h.token = TOKEN;
	h.block_size = o.block;
	for (uint16_t w = 0; w < o.world; w++) {
		pkts[w] = pkt_new(0);
		h.rank = w;
		ina_wire_encode_hdr(&h, pkts[w]->data);
		ina_wire_encode_join(o.world, o.lanes, o.block, pkts[w]->data + INA_HDR_SIZE);
		pkts[w]->len = INA_HDR_SIZE + sizeof(struct ina_wire_join);
	}
	feed(0, pkts, o.world);
}

/* Every DATA packet of the round; to the owner's port when 'by_lane'. */
static void
feed_data(const struct workload *wl, uint32_t epoch, int by_lane)
{
	static uint8_t payload[4 * 340];
	struct ina_pkt *pkts[2][INA_MAX_BURST];
	uint16_t nb[2] = { 0, 0 };
	struct ina_hdr h;

	for (unsigned i = 0; i < sizeof(payload); i += 4) {
		payload[i] = 0x3f; /* 1.0f, big-endian */
		payload[i + 1] = 0x80;
	}
	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = INA_T_DATA;
	h.encoding = INA_ENC_F32;
	h.job_id = JOB;
	h.epoch = epoch;
	h.token = TOKEN;
	h.tensor_id = 1;
	h.tensor_len = wl->elems;
	h.block_size = o.block;
	for (uint32_t i = 0; i < wl->nb_steps; i++) {
		const struct step *s = &wl->steps[i];
		uint16_t p = by_lane ? s->lane % 2 : 0;
		uint16_t n = ina_wire_block_elems(wl->elems, o.block, s->block);

		for (uint16_t w = 0; w < o.world; w++) {
			struct ina_pkt *pkt = pkt_new(p);
			int has = s->has >> w & 1;

			h.rank = w;
			h.lane = s->lane;
			h.flags = s->ver;
			h.block = s->block;
			h.next = s->next[w];
			h.n_elems = has ? n : 0;
			ina_wire_encode_hdr(&h, pkt->data);
			if (has)
				memcpy(pkt->data + INA_HDR_SIZE, payload, 4u * n);
			pkt->len = INA_HDR_SIZE + (has ? 4u * n : 0);
			pkts[p][nb[p]++] = pkt;
			if (nb[p] == INA_MAX_BURST) {
				feed(p, pkts[p], nb[p]);
				nb[p] = 0;
			}
		}
	}
	feed(0, pkts[0], nb[0]);
	feed(1, pkts[1], nb[1]);
}

static void
drain_tx(uint32_t *epoch)
{
	struct rte_mbuf *m;

	for (int p = 0; p < 2; p++)
		while (rte_ring_sc_dequeue(sw_tx[p], (void **)&m) == 0) {
			const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *) + 42;

			if (epoch && d[1] == INA_T_JOIN_ACK)
				*epoch = (uint32_t)d[8] << 24 | (uint32_t)d[9] << 16 |
					 (uint32_t)d[10] << 8 | d[11];
			rte_pktmbuf_free(m);
		}
}

/* Stops the switch once 'want' frames are in its tx rings (or after 10 s). */
struct monitor {
	volatile sig_atomic_t stop;
	unsigned want;
	int timed_out;
};

static void *
monitor_main(void *arg)
{
	struct monitor *m = arg;
	uint64_t end = ina_now_ns() + 10 * INA_NS_PER_S;
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 1000000 };

	while (rte_ring_count(sw_tx[0]) + rte_ring_count(sw_tx[1]) < m->want) {
		if (ina_now_ns() > end) {
			m->timed_out = 1;
			break;
		}
		nanosleep(&ts, NULL);
	}
	m->stop = 1;
	return NULL;
}

static void
run_until(struct switch_lcores *sl, unsigned want, const char *what)
{
	struct monitor m = { .stop = 0, .want = want, .timed_out = 0 };
	pthread_t th;

	if (pthread_create(&th, NULL, monitor_main, &m) != 0)
		ina_die("pthread_create failed");
	if (switch_lcores_run(sl, &m.stop, NULL) < 0)
		ina_die("switch_lcores_run failed");
	pthread_join(th, NULL);
	if (m.timed_out)
		fprintf(stderr, "WARNING: %s: only %u of %u frames after 10 s\n", what,
			rte_ring_count(sw_tx[0]) + rte_ring_count(sw_tx[1]), want);
}

static double tv_s(const struct timeval *tv);

/* One timed round on 'k' partitions; returns seconds, or -1 when it drifted. */
static double
run_once(const struct workload *wl, uint16_t k, int by_lane, double *cpus)
{
	struct rusage ru0, ru1;
	struct switch_lcores_config c;
	struct switch_lcores *sl;
	struct pipeline_stats sum;
	uint64_t t0, last = 0, drops = 0;
	uint32_t epoch = 0;
	char err[256];

	switch_lcores_config_init(&c);
	c.nb_parts = k;
	c.lcore[0] = rte_get_main_lcore();
	c.lcore[1] = rte_get_next_lcore(c.lcore[0], 1, 0);
	c.port[0] = sw[0];
	c.port[1] = sw[1];
	c.pipe.nb_slots = (uint32_t)o.lanes;
	c.pipe.slot_elems = o.block;
	c.pipe.max_jobs = 2;
	/* A whole round is queued at once, not a window of lanes x world: with
	 * software steering, partition 1's ring must hold its half. */
	c.ring_size = RING;
	sl = switch_lcores_create(&c, err, sizeof(err));
	if (!sl)
		ina_die("switch_lcores_create: %s", err);

	feed_joins();
	run_until(sl, o.world, "join");
	drain_tx(&epoch);
	if (!epoch)
		ina_die("no JOIN_ACK");

	feed_data(wl, epoch, by_lane);
	getrusage(RUSAGE_SELF, &ru0);
	t0 = ina_now_ns();
	run_until(sl, wl->nb_steps * o.world, wl->name);
	getrusage(RUSAGE_SELF, &ru1);
	for (uint16_t p = 0; p < k; p++) {
		uint64_t t = switch_lcores_stats(sl, p)->last_work_ns;

		if (t > last)
			last = t;
	}
	switch_lcores_sum(sl, &sum);
	for (int d = 0; d < PDROP_MAX; d++)
		drops += sum.drop[d];
	for (int d = 0; d < INA_WIRE_REASON_MAX; d++)
		drops += sum.drop_wire[d];
	drain_tx(NULL);
	if (sum.results != wl->nb_steps || drops || sum.duplicates) {
		fprintf(stderr,
			"WARNING: %s on %u lcores: %" PRIu64 " results of %" PRIu32 ", %" PRIu64
			" drops, %" PRIu64 " duplicates\n",
			wl->name, k, sum.results, wl->nb_steps, drops, sum.duplicates);
		switch_lcores_print(sl, stderr);
		switch_lcores_destroy(sl);
		return -1;
	}
	if (getenv("BENCH_VERBOSE"))
		switch_lcores_print(sl, stderr);
	switch_lcores_destroy(sl);
	/* CPUs the process had: near k when the lcores ran undisturbed (the
	 * monitor's 1 ms wake-ups and the idle tail after the last work count
	 * too, so it is a rough figure). */
	*cpus = (tv_s(&ru1.ru_utime) + tv_s(&ru1.ru_stime) - tv_s(&ru0.ru_utime) -
		 tv_s(&ru0.ru_stime)) /
		((double)(ina_now_ns() - t0) * 1e-9);
	return (double)(last - t0) * 1e-9;
}

static double
tv_s(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec * 1e-6;
}

/* The three configurations, in turn within each run, so that a busy spell of
 * the machine hits all of them; med[c] is configuration c's median time and
 * ratio[c] the median over runs of that run's 1-lcore time / c's time. */
static void
measure(const struct workload *wl, int two, double med[3], double ratio[3], double cpus[3])
{
	double s_unused, u[3][MAX_RUNS];
	static const uint16_t parts[3] = { 1, 2, 2 };
	static const int by_lane[3] = { 0, 1, 0 };
	double t[3][MAX_RUNS], r[3][MAX_RUNS];
	unsigned nt[3] = { 0, 0, 0 }, nr[3] = { 0, 0, 0 };
	int nb = two ? 3 : 1;

	/* Untimed: the first touch of the pools' pages (no hugepages) and the
	 * caches would otherwise land on whichever configuration runs first. */
	for (int c = 0; c < nb; c++)
		(void)run_once(wl, parts[c], by_lane[c], &s_unused);
	for (unsigned run = 0; run < o.runs; run++) {
		double s[3];

		for (int c = 0; c < nb; c++) {
			s[c] = run_once(wl, parts[c], by_lane[c], &u[c][nt[c]]);
			if (s[c] > 0)
				t[c][nt[c]++] = s[c];
		}
		for (int c = 1; c < nb; c++)
			if (s[0] > 0 && s[c] > 0)
				r[c][nr[c]++] = s[0] / s[c];
	}
	for (int c = 0; c < 3; c++) {
		cpus[c] = c < nb ? bench_median(u[c], nt[c]) : -1;
		med[c] = c < nb ? bench_median(t[c], nt[c]) : -1;
		ratio[c] = c && c < nb ? bench_median(r[c], nr[c]) : -1;
	}
}

static void
ring_port(const char *name, int p)
{
	char n_rx[32], n_tx[32], sw_name[32], gen_name[32];
	int sock = (int)rte_socket_id(), id;

	snprintf(n_rx, sizeof(n_rx), "b_rx%d", p);
	snprintf(n_tx, sizeof(n_tx), "b_tx%d", p);
	sw_rx[p] = rte_ring_create(n_rx, RING, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	sw_tx[p] = rte_ring_create(n_tx, RING, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!sw_rx[p] || !sw_tx[p])
		ina_die("cannot create rings of %d entries", RING);
	snprintf(sw_name, sizeof(sw_name), "%s_sw%d", name, p);
	snprintf(gen_name, sizeof(gen_name), "%s_gen%d", name, p);
	/* The switch port receives from sw_rx and sends to sw_tx; the generator
	 * sends into sw_rx (its own rx ring, sw_tx, is drained by hand). */
	id = rte_eth_from_rings(sw_name, &sw_rx[p], 1, &sw_tx[p], 1, (unsigned)sock);
	if (id < 0 ||
	    ina_port_dpdk_open_id((uint16_t)id, "ip=" SW_IP ",mbufs=32767", &sw[p], NULL, 0) < 0)
		ina_die("cannot open the switch port %d", p);
	id = rte_eth_from_rings(gen_name, &sw_tx[p], 1, &sw_rx[p], 1, (unsigned)sock);
	if (id < 0 ||
	    ina_port_dpdk_open_id((uint16_t)id, "ip=10.0.1.1,mbufs=40959", &gen[p], NULL, 0) < 0)
		ina_die("cannot open the generator port %d", p);
}

int
main(int argc, char **argv)
{
	char *eal[] = { "bench_lcores_dpdk",
			"--no-huge",
			"--no-pci",
			"--no-shconf",
			"--no-telemetry",
			"-m",
			"1536",
			"-l",
			"0-1",
			"--log-level=error" };
	struct workload wls[2];
	char err[256], addr[64];
	int two;

	parse_args(argc, argv);
	ina_log_set_level(INA_LOG_WARN);
	if (ina_dpdk_eal_init((int)(sizeof(eal) / sizeof(eal[0])), eal, err, sizeof(err)) < 0)
		ina_die("%s", err);
	two = rte_get_next_lcore(rte_get_main_lcore(), 1, 0) < RTE_MAX_LCORE;
	ring_port("b", 0);
	ring_port("b", 1);
	snprintf(addr, sizeof(addr), "02:00:00:00:00:64@%s:%d", SW_IP, INA_DPDK_UDP_PORT);
	if (ina_port_resolve(sw[0], addr, &sw_peer) < 0)
		ina_die("cannot resolve %s", addr);

	workload_build(&wls[0], "dense", o.dense_elems, 1.0);
	workload_build(&wls[1], "sparse", o.sparse_elems, o.density);
	printf("switch on lcores, one process, ring ethdevs: f32, %u workers, B=%u, %u lanes, "
	       "median of %u runs\n",
	       o.world, o.block, o.lanes, o.runs);
	printf("%-7s %-22s %10s %10s %9s %9s %6s\n", "input", "configuration", "Melem/s", "Mpkt/s",
	       "ms", "vs 1", "CPUs");
	for (int i = 0; i < 2; i++) {
		const struct workload *wl = &wls[i];
		static const char *const names[3] = { "1 lcore", "2 lcores", "2 lcores, sw steer" };
		double s[3], ratio[3], cpus[3];
		char label[32];

		measure(wl, two, s, ratio, cpus);
		snprintf(label, sizeof(label), "%s", wl->name);
		if (i == 1)
			snprintf(label, sizeof(label), "%.0f%%", wl->density * 100);
		for (int c = 0; c < 3; c++) {
			if (s[c] <= 0) {
				printf("%-7s %-22s %10s %10s %9s %9s %6s\n", label, names[c], "n/a",
				       "n/a", "n/a", "n/a", "n/a");
				continue;
			}
			printf("%-7s %-22s %10.1f %10.2f %9.2f", label, names[c],
			       (double)wl->elems / s[c] * 1e-6, (double)wl->nb_pkts / s[c] * 1e-6,
			       s[c] * 1e3);
			if (c && ratio[c] > 0)
				printf(" %8.2fx", ratio[c]);
			else
				printf(" %9s", "-");
			printf(" %6.2f\n", cpus[c]);
		}
		printf("%-7s %" PRIu64 " packets, %" PRIu32 " results, %" PRIu32 " elements\n", "",
		       wl->nb_pkts, wl->nb_steps, wl->elems);
	}
	if (!two)
		printf("only one lcore: the 2-lcore figures need EAL -l 0-1 on 2 CPUs\n");
	free(wls[0].steps);
	free(wls[1].steps);
	for (int p = 0; p < 2; p++) {
		ina_port_close(sw[p]);
		ina_port_close(gen[p]);
	}
	ina_dpdk_eal_cleanup();
	return 0;
}
