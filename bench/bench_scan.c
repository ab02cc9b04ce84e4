/* SPDX-License-Identifier: MIT */
/*
 * How fast the host finds the non-zero blocks of a dense tensor, against
 * the machine's memory bandwidth, in the same run: the engine's way (one
 * pass in address order fills a bitmap, ina_block_map_nonzero, and each lane
 * l walks its bits l, l + L, ...), the lane-strided scan the engine used
 * before (ina_block_next_nonzero: lane l reads blocks l, l + L, ... from
 * memory), a plain read of
 * the same bytes (an OR over 64-bit words, compiled at -O3: the read
 * bandwidth), and memset of them (what zero-filling an output costs). The
 * tensor is larger than the caches (64 MiB by default), all zeros or with
 * 1% of its blocks non-zero. Medians of --runs.
 * Usage: bench_scan [--elements N] [--block B] [--lanes L] [--runs R]
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ina/block.h"
#include "ina/wire.h"
#include "bench_stats.h"

#define MAX_RUNS 31

static volatile uint64_t sink;

static uint64_t
lane_scan(const float *x, uint32_t n, uint16_t bs, uint16_t lanes)
{
	uint64_t found = 0;

	for (uint16_t l = 0; l < lanes; l++)
		for (uint32_t b = ina_block_next_nonzero(x, n, bs, lanes, l); b != INA_BLOCK_END;
		     b = ina_block_next_nonzero(x, n, bs, lanes, b + lanes))
			found++;
	return found;
}

/* The engine's way: the map in pieces of 64 blocks, the lanes over it. */
static uint64_t
map_scan(const float *x, uint32_t n, uint16_t bs, uint16_t lanes, uint64_t *bits)
{
	uint32_t nb = (n + bs - 1) / bs;
	uint64_t found = 0;

	for (uint32_t first = 0; first < nb; first += 64)
		ina_block_map_nonzero(x, n, bs, first, 64, bits);
	for (uint16_t l = 0; l < lanes; l++)
		for (uint32_t b = l; b < nb; b += lanes)
			found += bits[b / 64] >> (b % 64) & 1;
	return found;
}

static uint64_t
plain_read(const float *x, uint32_t n)
{
	const uint64_t *w = (const uint64_t *)(const void *)x;
	uint64_t a = 0, b = 0, c = 0, d = 0;
	size_t nw = (size_t)n / 2;

	for (size_t i = 0; i + 4 <= nw; i += 4) {
		a |= w[i];
		b |= w[i + 1];
		c |= w[i + 2];
		d |= w[i + 3];
	}
	return a | b | c | d;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = { { "elements", required_argument, NULL, 'n' },
					      { "block", required_argument, NULL, 'b' },
					      { "lanes", required_argument, NULL, 'l' },
					      { "runs", required_argument, NULL, 'r' },
					      { NULL, 0, NULL, 0 } };
	uint32_t n = 16777216;
	unsigned bs = 1024, lanes = 64;
	int runs = 7, opt;
	float *x;
	uint64_t *bits;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			n = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'b':
			bs = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'l':
			lanes = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'r':
			runs = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: bench_scan [--elements N] [--block B] [--lanes L] "
					"[--runs R]\n");
			return 2;
		}
	}
	if (n < 1024 || n >= INA_BLOCK_OPEN || bs == 0 || bs > 65535 || lanes == 0 ||
	    lanes > 65535 || runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr,
			"bench_scan: elements 1024..%u, block 1..65535, lanes 1..65535, "
			"runs 1..%d\n",
			INA_BLOCK_OPEN - 1, MAX_RUNS);
		return 2;
	}
	x = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) / 64 * 64);
	bits = calloc((size_t)n / bs / 64 + 2, sizeof(*bits));
	if (!x || !bits) {
		fprintf(stderr, "bench_scan: no memory for %u floats\n", n);
		return 1;
	}
	printf("bench_scan: %u floats (%.0f MiB), B %u, %u lanes, median of %d runs\n", n,
	       (double)n * 4 / 1048576, bs, lanes, runs);
	for (int dens = 0; dens < 2; dens++) {
		double t_lane[MAX_RUNS], t_lin[MAX_RUNS], t_read[MAX_RUNS], t_set[MAX_RUNS];
		double gb = (double)n * 4 / 1e9, lane, lin, rd, set;
		uint64_t found = 0;

		memset(x, 0, (size_t)n * sizeof(float));
		if (dens)
			for (uint32_t b = 0; (uint64_t)b * bs < n; b += 100)
				x[(size_t)b * bs + bs / 2 < n ? (size_t)b * bs + bs / 2 : n - 1] =
					1.0f;
		for (int r = 0; r < runs; r++) {
			double t0 = bench_now_s();

			found = lane_scan(x, n, (uint16_t)bs, (uint16_t)lanes);
			t_lane[r] = bench_now_s() - t0;
			t0 = bench_now_s();
			sink += map_scan(x, n, (uint16_t)bs, (uint16_t)lanes, bits);
			t_lin[r] = bench_now_s() - t0;
			t0 = bench_now_s();
			sink += plain_read(x, n);
			t_read[r] = bench_now_s() - t0;
		}
		for (int r = 0; r < runs; r++) {
			float *y = malloc((size_t)n * sizeof(float));
			double t0;

			if (!y)
				break;
			memset(y, 1, (size_t)n * sizeof(float)); /* pages in */
			t0 = bench_now_s();
			memset(y, 0, (size_t)n * sizeof(float));
			t_set[r] = bench_now_s() - t0;
			sink += (uint64_t)y[n / 2];
			free(y);
		}
		lane = bench_median(t_lane, runs);
		lin = bench_median(t_lin, runs);
		rd = bench_median(t_read, runs);
		set = bench_median(t_set, runs);
		printf("  %s blocks non-zero (%llu found):\n", dens ? "1%" : "no",
		       (unsigned long long)found);
		printf("    map, then lanes (engine) %7.2f ms  %6.2f GB/s  %.2f x read\n",
		       lin * 1e3, gb / lin, rd / lin);
		printf("    lane-strided (before)   %8.2f ms  %6.2f GB/s  %.2f x read\n",
		       lane * 1e3, gb / lane, rd / lane);
		printf("    plain read (OR, -O3)    %8.2f ms  %6.2f GB/s\n", rd * 1e3, gb / rd);
		printf("    memset (zero-filling)   %8.2f ms  %6.2f GB/s\n", set * 1e3, gb / set);
	}
	free(x);
	free(bits);
	return 0;
}
