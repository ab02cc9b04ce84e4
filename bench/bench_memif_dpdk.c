/* SPDX-License-Identifier: MIT */
/*
 * bench_memif_dpdk: what DPDK's net_memif carries between two processes on
 * this machine, the ceiling for ina over memif. The program forks: the
 * parent receives (memif server), the child sends (memif client), each with
 * its own EAL (own file prefix, --no-huge), each free to run on either core
 * as bench/run's ina processes are (pinned, a poller starves when anything
 * else runs on its core). The
 * sender puts frames of --frame bytes (9000, ina's memif MTU) in bursts of
 * 32 as fast as the ring takes them; the receiver counts the bytes of every
 * frame for --seconds after the first one arrives and prints Gbit/s and
 * frames/s. Both ends are bounded in time: the sender stops at its own
 * deadline or when the link goes down, and the parent kills a child that
 * outlives the run. Same memif options as bench/run gives ina (bsize=9216).
 *
 * With --buffer-mib N the probe moves a buffer, as a benchmark of bandwidth
 * between two processes does (OSU's osu_bw: from a send buffer into a receive
 * buffer): the sender writes each frame from the next bytes of an N MiB
 * source, the receiver copies each frame into the next bytes of an N MiB
 * destination, both buffers faulted in before the clock starts. Without it
 * the frames are the pool's, which cycle through the CPU's cache, and the
 * figure depends on how much of them the cache still holds.
 *
 * Usage: bench_memif_dpdk [--seconds S] [--frame BYTES] [--rx-lcores L]
 *                         [--tx-lcores L] [--zero-copy] [--buffer-mib N]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include "bench_stats.h"

#define BURST 32
#define NB_MBUFS 8191
#define NB_DESC 1024
#define DATA_ROOM 9216

static struct {
	double seconds;
	unsigned frame;
	const char *rx_lcores, *tx_lcores;
	int zero_copy; /* the sender a zero-copy client */
	size_t buffer; /* bytes of the source and destination buffers, 0: none */
	char sock[96];
	int pid;
	int ready[2]; /* the receiver tells the sender its port runs, then
		       * (closing its end) that it has counted enough */
	pid_t child;  /* the sender */
} g = { .seconds = 2.0, .frame = 9000, .rx_lcores = "0@(0-1)", .tx_lcores = "0@(0-1)" };

/* EAL for one end and its memif port, started; the port id, or -1
 * (printed). */
static int
start(int server, struct rte_mempool **pool)
{
	char prefix[64], lcores[64], vdev[192], name[] = "bench_memif_dpdk";
	char *argv[] = { name,
			 "--no-huge",
			 "--single-file-segments",
			 "-m",
			 "256",
			 "--no-pci",
			 "--no-telemetry",
			 "--log-level=lib.eal:error",
			 prefix,
			 lcores,
			 vdev,
			 NULL };
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
	struct rte_eth_conf conf;
	const char *who = server ? "receiver" : "sender";
	uint16_t port;
	int ret;

	snprintf(prefix, sizeof(prefix), "--file-prefix=ina-memif-%s-%d", server ? "rx" : "tx",
		 g.pid);
	snprintf(lcores, sizeof(lcores), "--lcores=%s", server ? g.rx_lcores : g.tx_lcores);
	snprintf(vdev, sizeof(vdev), "--vdev=net_memif0,role=%s,id=0,socket=%s,bsize=%u%s",
		 server ? "server" : "client", g.sock, DATA_ROOM,
		 !server && g.zero_copy ? ",zero-copy=yes" : "");
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "bench_memif_dpdk: %s: EAL: %s\n", who, rte_strerror(rte_errno));
		return -1;
	}
	if (rte_eth_dev_count_avail() != 1) {
		fprintf(stderr, "bench_memif_dpdk: %s: net_memif0 did not start\n", who);
		return -1;
	}
	port = 0;
	*pool = rte_pktmbuf_pool_create(server ? "rx" : "tx", NB_MBUFS, 256, 0,
					RTE_PKTMBUF_HEADROOM + DATA_ROOM, (int)rte_socket_id());
	if (!*pool) {
		fprintf(stderr, "bench_memif_dpdk: %s: mbuf pool: %s\n", who,
			rte_strerror(rte_errno));
		return -1;
	}
	/* memif advertises 1518-byte frames but carries up to bsize=: its
	 * MTU stays the default, as ina's dpdk port leaves it. */
	memset(&conf, 0, sizeof(conf));
	if ((ret = rte_eth_dev_configure(port, 1, 1, &conf)) < 0 ||
	    (ret = rte_eth_rx_queue_setup(port, 0, NB_DESC, (unsigned)rte_socket_id(), NULL,
					  *pool)) < 0 ||
	    (ret = rte_eth_tx_queue_setup(port, 0, NB_DESC, (unsigned)rte_socket_id(), NULL)) < 0 ||
	    (ret = rte_eth_dev_start(port)) < 0) {
		fprintf(stderr, "bench_memif_dpdk: %s: port setup: %s\n", who, rte_strerror(-ret));
		return -1;
	}
	return port;
}

/* A buffer of g.buffer bytes, every page written (a pattern that is not
 * zero), or NULL (printed). */
static uint8_t *
buffer_new(const char *who)
{
	uint8_t *b = malloc(g.buffer);

	if (!b) {
		fprintf(stderr, "bench_memif_dpdk: %s: no memory for a %zu-byte buffer\n", who,
			g.buffer);
		return NULL;
	}
	for (size_t i = 0; i < g.buffer; i++)
		b[i] = (uint8_t)(i * 31 + 7);
	return b;
}

/* The next 'len' bytes at '*off' in the buffer, wrapping to its start when
 * fewer are left. */
static uint8_t *
buffer_next(uint8_t *b, size_t *off, size_t len)
{
	uint8_t *p;

	if (*off + len > g.buffer)
		*off = 0;
	p = b + *off;
	*off += len;
	return p;
}

/* 0 once the link of 'port' is up, or -1 after 10 s (printed). */
static int
link_up(uint16_t port, const char *who)
{
	struct rte_eth_link link;
	double until;

	for (until = bench_now_s() + 10;;) {
		memset(&link, 0, sizeof(link));
		rte_eth_link_get_nowait(port, &link);
		if (link.link_status)
			return 0;
		if (bench_now_s() > until) {
			fprintf(stderr, "bench_memif_dpdk: %s: no link in 10 s\n", who);
			return -1;
		}
		usleep(1000);
	}
}

/* The child: sends until its deadline or until the link goes down. */
static int
sender(void)
{
	struct rte_mempool *pool;
	struct rte_mbuf *m[BURST];
	struct rte_eth_link link;
	double until;
	uint64_t n = 0;
	uint8_t *src = NULL;
	size_t off = 0;
	int port;

	/* The server first: a memif client without one does not start. The
	 * receiver writes a byte on the pipe once its port runs. */
	struct pollfd pfd = { .fd = g.ready[0], .events = POLLIN };
	char c;

	close(g.ready[1]);
	if (poll(&pfd, 1, 15000) != 1 || read(g.ready[0], &c, 1) != 1) {
		fprintf(stderr, "bench_memif_dpdk: sender: the receiver did not start\n");
		return 1;
	}
	if (g.buffer && !(src = buffer_new("sender")))
		return 1;
	port = start(0, &pool);
	if (port < 0 || link_up((uint16_t)port, "sender") < 0)
		return 1;
	until = bench_now_s() + g.seconds + 15;
	while (bench_now_s() < until) {
		uint16_t sent;

		if (rte_pktmbuf_alloc_bulk(pool, m, BURST) == 0) {
			for (int i = 0; i < BURST; i++) {
				m[i]->data_len = (uint16_t)g.frame;
				m[i]->pkt_len = g.frame;
				/* From the source buffer; else, zero-copy: the
				 * receiver reads this buffer, so the sender
				 * writes it, once, as memif's copy into its
				 * ring does otherwise. */
				if (src)
					memcpy(rte_pktmbuf_mtod(m[i], void *),
					       buffer_next(src, &off, g.frame), g.frame);
				else if (g.zero_copy)
					memset(rte_pktmbuf_mtod(m[i], void *), (int)(n & 0xff),
					       g.frame);
			}
			sent = rte_eth_tx_burst((uint16_t)port, 0, m, BURST);
			if (sent < BURST)
				rte_pktmbuf_free_bulk(m + sent, BURST - sent);
		}
		if ((++n & 1023) == 0) {
			/* The receiver has counted (its end of the pipe closed),
			 * or its port went down. */
			if (poll(&pfd, 1, 0) != 0)
				break;
			memset(&link, 0, sizeof(link));
			rte_eth_link_get_nowait((uint16_t)port, &link);
			if (!link.link_status)
				break;
		}
	}
	rte_eth_dev_stop((uint16_t)port);
	rte_eal_cleanup();
	free(src);
	return 0;
}

/* Waits for the sender to exit (20 s at most, then kills it): 0 when it
 * exited with 0. Once only. */
static int
wait_sender(void)
{
	int st = 0;

	if (g.child <= 0)
		return 0;
	for (double until = bench_now_s() + 20; waitpid(g.child, &st, WNOHANG) != g.child;
	     usleep(10000))
		if (bench_now_s() > until) {
			fprintf(stderr, "bench_memif_dpdk: the sender did not stop: killed\n");
			kill(g.child, SIGKILL);
			waitpid(g.child, &st, 0);
			g.child = 0;
			return 1;
		}
	g.child = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "bench_memif_dpdk: the sender failed (%s %d)\n",
			WIFEXITED(st) ? "exit" : "signal",
			WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		return 1;
	}
	return 0;
}

/* The parent: counts for --seconds after the first frame, prints. */
static int
receiver(void)
{
	struct rte_mempool *pool;
	struct rte_mbuf *m[BURST];
	uint64_t bytes = 0, frames = 0;
	double t0 = 0, t = 0, until;
	uint8_t *dst = NULL;
	size_t off = 0;
	int port, ret;

	if (g.buffer && !(dst = buffer_new("receiver")))
		return 1;
	if ((port = start(1, &pool)) < 0)
		return 1;
	if (write(g.ready[1], "r", 1) != 1) {
		fprintf(stderr, "bench_memif_dpdk: receiver: cannot wake the sender\n");
		return 1;
	}
	if (link_up((uint16_t)port, "receiver") < 0)
		return 1;
	for (until = bench_now_s() + 10; t0 == 0;) {
		uint16_t nb = rte_eth_rx_burst((uint16_t)port, 0, m, BURST);

		if (nb) {
			t0 = bench_now_s();
			rte_pktmbuf_free_bulk(m, nb);
		} else if (bench_now_s() > until) {
			fprintf(stderr, "bench_memif_dpdk: receiver: nothing in 10 s\n");
			return 1;
		}
	}
	while ((t = bench_now_s()) < t0 + g.seconds) {
		uint16_t nb = rte_eth_rx_burst((uint16_t)port, 0, m, BURST);

		for (uint16_t i = 0; i < nb; i++) {
			uint16_t seg = rte_pktmbuf_data_len(m[i]);

			/* The first segment (bsize holds a whole frame). */
			if (dst)
				memcpy(buffer_next(dst, &off, seg), rte_pktmbuf_mtod(m[i], void *),
				       seg);
			bytes += rte_pktmbuf_pkt_len(m[i]);
		}
		frames += nb;
		if (nb)
			rte_pktmbuf_free_bulk(m, nb);
	}
	printf("bench_memif_dpdk frame=%u buffer_mib=%zu zero_copy=%d seconds=%.2f frames=%" PRIu64
	       " mpps=%.3f gbps=%.2f\n",
	       g.frame, g.buffer >> 20, g.zero_copy, t - t0, frames,
	       (double)frames / (t - t0) / 1e6, (double)bytes * 8 / (t - t0) / 1e9);
	fflush(stdout);
	/* The sender stops and leaves memif first, while this end still runs:
	 * a client whose server went away first now and then failed in EAL's
	 * cleanup ("Invalid memory") after a good figure. */
	close(g.ready[1]);
	g.ready[1] = -1;
	ret = wait_sender();
	rte_eth_dev_stop((uint16_t)port);
	rte_eal_cleanup();
	free(dst);
	return ret;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: bench_memif_dpdk [options]\n"
		   "\n"
		   "Forks a memif sender and a memif receiver (one EAL each, --no-huge) and\n"
		   "prints what the receiver got: frames/s and Gbit/s of frame bytes.\n"
		   "\n"
		   "options:\n"
		   "  --seconds S           time measured at the receiver (default 2)\n"
		   "  --frame BYTES         frame size, 64..9014 (default 9000)\n"
		   "  --rx-lcores L         the receiver's EAL --lcores (default 0@(0-1))\n"
		   "  --tx-lcores L         the sender's EAL --lcores (default 0@(0-1))\n"
		   "  --zero-copy           the sender a zero-copy client (zero-copy=yes:\n"
		   "                        the receiver copies from the sender's own\n"
		   "                        buffers, which the sender writes each frame)\n"
		   "  --buffer-mib N        move an N MiB buffer (1..4096): the sender\n"
		   "                        writes each frame from it, the receiver\n"
		   "                        copies each frame into one of its own\n"
		   "                        (default 0: the frames' own bytes only)\n"
		   "  -h, --help            this text\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "frame", required_argument, NULL, 'f' },
		{ "rx-lcores", required_argument, NULL, 'r' },
		{ "tx-lcores", required_argument, NULL, 't' },
		{ "zero-copy", no_argument, NULL, 'z' },
		{ "buffer-mib", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int o, ret;
	char *end;

	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 's':
			g.seconds = strtod(optarg, &end);
			if (*end || !(g.seconds >= 0.1 && g.seconds <= 60))
				goto bad;
			break;
		case 'f':
			g.frame = (unsigned)strtoul(optarg, &end, 10);
			if (*end || g.frame < 64 || g.frame > 9014)
				goto bad;
			break;
		case 'r':
			g.rx_lcores = optarg;
			break;
		case 't':
			g.tx_lcores = optarg;
			break;
		case 'z':
			g.zero_copy = 1;
			break;
		case 'b': {
			unsigned long mib = strtoul(optarg, &end, 10);

			if (*end || mib < 1 || mib > 4096)
				goto bad;
			g.buffer = (size_t)mib << 20;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	g.pid = (int)getpid();
	snprintf(g.sock, sizeof(g.sock), "/run/ina-memif-probe-%d.sock", g.pid);
	unlink(g.sock);
	if (pipe(g.ready) < 0) {
		perror("bench_memif_dpdk: pipe");
		return 1;
	}
	fflush(stdout);
	g.child = fork();
	if (g.child < 0) {
		perror("bench_memif_dpdk: fork");
		return 1;
	}
	if (g.child == 0)
		_exit(sender());
	close(g.ready[0]);
	ret = receiver();
	/* The receiver failed before its figure: the sender sees the pipe
	 * closed or the link down and stops; bounded all the same. */
	if (g.ready[1] >= 0)
		close(g.ready[1]);
	if (wait_sender() != 0)
		ret = 1;
	unlink(g.sock);
	{
		char cmd[160];

		snprintf(cmd, sizeof(cmd),
			 "rm -rf /var/run/dpdk/ina-memif-rx-%d /var/run/dpdk/ina-memif-tx-%d",
			 g.pid, g.pid);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_memif_dpdk: cannot remove the EAL directories\n");
	}
	return ret;
bad:
	fprintf(stderr, "bench_memif_dpdk: bad value '%s' for an option\n", optarg);
	return 2;
}
