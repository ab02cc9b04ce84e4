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
 * all --size bytes, or each a multiple of 4 drawn between --size / 2 and
 * --size. Also with the offloads off (gso=0, gro=0), where every packet is
 * one datagram whatever its size.
 * Usage: bench_udp_sizes [--size BYTES] [--burst N] [--reps N] [--runs N]
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

/* One run: 'reps' bursts from a to b; seconds a packet, or -1 on a loss
 * that did not recover within the wait. */
static double
run(struct ina_port *a, struct ina_port *b, const struct ina_peer *to, uint32_t size, int vary,
    unsigned burst, unsigned reps, uint64_t *seed)
{
	struct ina_pkt *pkts[MAX_BURST], *rx[MAX_BURST];
	double t0 = bench_now_s();

	for (unsigned r = 0; r < reps; r++) {
		unsigned n = ina_pkt_alloc_bulk(a->pool, pkts, burst), got = 0, sent;
		int idle = 0;

		for (unsigned i = 0; i < n; i++) {
			uint32_t len = size;

			if (vary) {
				*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
				len = (uint32_t)(size / 2 + (*seed >> 33) % (size / 2 + 1)) & ~3u;
			}
			pkts[i]->len = len;
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
					      { NULL, 0, NULL, 0 } };
	unsigned burst = 64, reps = 2000, size = 4152;
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
		default:
			fprintf(stderr, "usage: bench_udp_sizes [--size BYTES] [--burst N] "
					"[--reps N] [--runs N]\n");
			return 2;
		}
	}
	if (size < 64 || size > 8972 || burst < 1 || burst > MAX_BURST || reps < 1 || runs < 1 ||
	    runs > MAX_RUNS) {
		fprintf(stderr,
			"bench_udp_sizes: size 64..8972, burst 1..%d, reps >= 1, runs "
			"1..%d\n",
			MAX_BURST, MAX_RUNS);
		return 2;
	}
	printf("bench_udp_sizes: bursts of %u packets over the udp port on loopback, %u bytes "
	       "or varied in %u..%u; us a packet (sent and received, one thread), median of %d "
	       "runs of %u bursts\n",
	       burst, size, size / 2, size, runs, reps);
	for (int off = 0; off < 2; off++) {
		char spec[128];
		struct ina_port *a, *b;
		struct ina_peer to;
		char addr[64];
		double t[2][MAX_RUNS], med[2];

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
			for (int vary = 0; vary < 2; vary++) {
				t[vary][r] = run(a, b, &to, size, vary, burst, reps, &seed);
				if (t[vary][r] < 0) {
					fprintf(stderr,
						"bench_udp_sizes: packets lost on loopback\n");
					return 1;
				}
			}
		med[0] = bench_median(t[0], (size_t)runs) * 1e6;
		med[1] = bench_median(t[1], (size_t)runs) * 1e6;
		printf("  %-26s one size %6.2f us  varied sizes %6.2f us  varied / one %5.2f  "
		       "extra %6.2f us a packet\n",
		       off ? "offloads off (gso=0,gro=0)" : "offloads on (default)", med[0], med[1],
		       med[1] / med[0], med[1] - med[0]);
		ina_port_close(a);
		ina_port_close(b);
	}
	return 0;
}
