/* SPDX-License-Identifier: MIT */
/*
 * What a packet costs on the udp port (kernel UDP on loopback, UDP_SEGMENT
 * and UDP_GRO) when a burst's packets share one size, as whole blocks do,
 * against when their sizes vary, as blocks cut into sub-blocks do (each
 * carries only its non-zero sub-blocks): segmentation offload batches only
 * packets of one size to one peer, and receive offload joins only runs of
 * one size. One port sends bursts of --burst packets to another, which
 * receives them all; the time per packet, sent and received, is the median
 * of --runs runs of --reps bursts each, for both ports on one thread. Sizes:
 * all --size bytes; each a multiple of 4 drawn between --size / 2 and
 * --size ("varied"); or each drawn from --classes sizes evenly spaced from
 * --size down to about --size / 2, as a block cut into sub-blocks takes one
 * of at most B / b sizes (header + mask + present sub-blocks * b * e), in
 * the drawn order ("classes") and sorted by size, largest first ("classes
 * sorted", the order the port's grouping aims at whatever it is given).
 * Also with the offloads off (gso=0, gro=0), where every packet is one
 * datagram whatever its size.
 * Usage: bench_udp_sizes [--size BYTES] [--burst N] [--reps N] [--runs N]
 *                        [--classes N]
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/pkt.h"
#include "ina/port.h"
#include "ina/port_udp.h"
#include "bench_stats.h"

#define MAX_RUNS 31
#define MAX_BURST 64
#define MAX_CLASSES 128

/* How a burst's sizes are drawn. */
enum sizes { ONE_SIZE, VARIED, CLASSES, CLASSES_SORTED, NB_SIZES };

static const char *const sizes_name[NB_SIZES] = { "one size", "varied", "classes",
						  "classes sorted" };

static uint32_t
draw(uint64_t *seed, uint32_t n)
{
	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)((*seed >> 33) % n);
}

/* The burst's sizes, in the order the caller hands the packets over. */
static void
burst_sizes(uint32_t *len, unsigned n, uint32_t size, enum sizes how, unsigned classes,
	    uint64_t *seed)
{
	for (unsigned i = 0; i < n; i++) {
		switch (how) {
		case ONE_SIZE:
			len[i] = size;
			break;
		case VARIED:
			len[i] = (size / 2 + draw(seed, size / 2 + 1)) & ~3u;
			break;
		default:
			len[i] = (size - draw(seed, classes) * (size / 2 / classes)) & ~3u;
			break;
		}
	}
	if (how != CLASSES_SORTED)
		return;
	for (unsigned i = 1; i < n; i++) /* insertion sort, largest first */
		for (unsigned j = i; j > 0 && len[j - 1] < len[j]; j--) {
			uint32_t t = len[j];

			len[j] = len[j - 1];
			len[j - 1] = t;
		}
}

/* One run: 'reps' bursts from a to b; seconds a packet, or -1 on a loss
 * that did not recover within the wait. */
static double
run(struct ina_port *a, struct ina_port *b, const struct ina_peer *to, uint32_t size,
    enum sizes how, unsigned classes, unsigned burst, unsigned reps, uint64_t *seed)
{
	struct ina_pkt *pkts[MAX_BURST], *rx[MAX_BURST];
	uint32_t len[MAX_BURST];
	double t0 = bench_now_s();

	for (unsigned r = 0; r < reps; r++) {
		unsigned n = ina_pkt_alloc_bulk(a->pool, pkts, burst), got = 0, sent;
		int idle = 0;

		burst_sizes(len, n, size, how, classes, seed);
		for (unsigned i = 0; i < n; i++) {
			pkts[i]->len = len[i];
			memset(pkts[i]->data, (int)i, 16);
			pkts[i]->peer = *to;
		}
		sent = ina_port_tx_burst(a, pkts, (uint16_t)n);
		ina_pkt_free_bulk(pkts + sent, n - sent);
		while (got < sent && idle < 1000) {
			uint16_t k = ina_port_rx_burst(b, rx, MAX_BURST);

			if (k == 0) {
				ina_port_wait(b, 1000000);
				idle++;
				continue;
			}
			got += k;
			ina_pkt_free_bulk(rx, k);
		}
		if (got < sent)
			return -1;
	}
	return (bench_now_s() - t0) / ((double)reps * burst);
}

static struct ina_port *
open_port(const char *spec)
{
	struct ina_port *p = NULL;
	char err[256];

	if (ina_port_open(spec, &p, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_udp_sizes: %s\n", err);
		exit(1);
	}
	return p;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = { { "size", required_argument, NULL, 's' },
					      { "burst", required_argument, NULL, 'b' },
					      { "reps", required_argument, NULL, 'n' },
					      { "runs", required_argument, NULL, 'r' },
					      { "classes", required_argument, NULL, 'c' },
					      { NULL, 0, NULL, 0 } };
	unsigned burst = 64, reps = 2000, size = 4152, classes = 16;
	int runs = 7, opt;
	uint64_t seed = 1;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			size = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'b':
			burst = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			reps = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'r':
			runs = atoi(optarg);
			break;
		case 'c':
			classes = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: bench_udp_sizes [--size BYTES] [--burst N] "
					"[--reps N] [--runs N] [--classes N]\n");
			return 2;
		}
	}
	if (size < 64 || size > 8972 || burst < 1 || burst > MAX_BURST || reps < 1 || runs < 1 ||
	    runs > MAX_RUNS || classes < 2 || classes > MAX_CLASSES) {
		fprintf(stderr,
			"bench_udp_sizes: size 64..8972, burst 1..%d, reps >= 1, runs "
			"1..%d, classes 2..%d\n",
			MAX_BURST, MAX_RUNS, MAX_CLASSES);
		return 2;
	}
	printf("bench_udp_sizes: bursts of %u packets over the udp port on loopback, %u bytes, "
	       "varied in %u..%u, or of %u classes %u bytes apart; us a packet (sent and "
	       "received, one thread), median of %d runs of %u bursts; x: / one size\n",
	       burst, size, size / 2, size, classes, size / 2 / classes, runs, reps);
	for (int off = 0; off < 2; off++) {
		char spec[128];
		struct ina_port *a, *b;
		struct ina_peer to;
		char addr[64];
		double t[NB_SIZES][MAX_RUNS], med[NB_SIZES];

		snprintf(spec, sizeof(spec), "udp:bind=127.0.0.1:0,pkts=1024,mtu=9000%s",
			 off ? ",gso=0,gro=0" : "");
		a = open_port(spec);
		b = open_port(spec);
		if (ina_port_udp_local(b, addr, sizeof(addr)) < 0 ||
		    ina_port_resolve(a, addr, &to) < 0) {
			fprintf(stderr, "bench_udp_sizes: cannot address the receiving port\n");
			return 1;
		}
		for (int r = 0; r < runs; r++)
			for (int how = 0; how < NB_SIZES; how++) {
				t[how][r] = run(a, b, &to, size, (enum sizes)how, classes, burst,
						reps, &seed);
				if (t[how][r] < 0) {
					fprintf(stderr,
						"bench_udp_sizes: packets lost on loopback\n");
					return 1;
				}
			}
		printf("  %s\n", off ? "offloads off (gso=0,gro=0)" : "offloads on (default)");
		for (int how = 0; how < NB_SIZES; how++) {
			med[how] = bench_median(t[how], (size_t)runs) * 1e6;
			printf("    %-16s %6.2f us  x %5.2f  extra %6.2f us a packet\n",
			       sizes_name[how], med[how], med[how] / med[ONE_SIZE],
			       med[how] - med[ONE_SIZE]);
		}
		ina_port_close(a);
		ina_port_close(b);
	}
	return 0;
}
