/* SPDX-License-Identifier: MIT */
/*
 * bench_workers: a worker's per-byte work on 1..T threads (cfg.threads,
 * host/src/workers.h), with no port and no switch: what one round of an
 * N-element f32 tensor costs the host agent in encodes into packets,
 * decodes of results into the output and, with --tags, tenant mode's tags,
 * in bursts of 32 packets as ina_pump() runs them (each burst: 32 blocks
 * encoded into packets of a ring the size of a port's pool, 32 results
 * decoded out of it, one workers_run()). The time per round is the median
 * of --runs after one warm-up run; the bytes are the tensor's. What it shows
 * is how the per-byte work splits over cores the machine has free; in a job
 * the port and the protocol stay on the calling thread.
 *
 * Usage: bench_workers [--elements N] [--block B] [--threads T] [--runs R] [--tags]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "ina.h"
#include "ina/auth.h"
#include "ina/encoding.h"
#include "ina/port.h"
#include "ina/wire.h"
#include "payload_work.h"
#include "workers.h"

#define RING 512 /* packets a port's pool would hold */

static struct {
	size_t elements;
	unsigned block, threads, runs;
	int tags;
} g = { .elements = 16777216, .block = 2048, .threads = 2, .runs = 7 };

/* One round: every block encoded into a packet of the ring and decoded
 * from it, a burst of each at a time, run by 'ws'. */
static double
round_s(struct workers *ws, struct payload_work *w, const float *in, float *out, uint8_t *ring,
	const struct ina_job_key *key)
{
	const struct ina_encoding_ops *enc = ina_encoding(INA_ENC_F32);
	size_t nb = (g.elements + g.block - 1) / g.block, pkt = INA_HDR_SIZE + (size_t)g.block * 4;
	double t0 = bench_now_s();

	for (size_t b0 = 0; b0 < nb; b0 += INA_MAX_BURST) {
		for (size_t b = b0; b < nb && b < b0 + INA_MAX_BURST; b++) {
			uint8_t *p = ring + (b % RING) * pkt;
			uint32_t n = (uint32_t)(b + 1 < nb ? g.block : g.elements - b * g.block);

			payload_work_encode(w, enc, p + INA_HDR_SIZE, in + b * g.block, n, 0);
			if (g.tags)
				payload_work_sign(w, key, p, (uint32_t)(INA_HDR_SIZE + n * 4));
			/* The result of a block sent a ring ago. */
			p = ring + ((b + RING / 2) % RING) * pkt;
			payload_work_decode(w, enc, out + b * g.block, p + INA_HDR_SIZE, n, 0, 1.0f,
					    NULL);
		}
		workers_run(ws, w);
	}
	return bench_now_s() - t0;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: bench_workers [--elements N] [--block B] [--threads T] [--runs R] "
		   "[--tags]\n"
		   "  a round's encodes and decodes (f32, bursts of 32) on 1..T threads;\n"
		   "  --tags adds tenant mode's tags; median of R runs (default 7)\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "elements", required_argument, NULL, 'n' },
		{ "block", required_argument, NULL, 'b' },
		{ "threads", required_argument, NULL, 't' },
		{ "runs", required_argument, NULL, 'r' },
		{ "tags", no_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint8_t tenant[INA_TENANT_KEY_SIZE] = { 1, 2, 3 };
	struct ina_job_key key;
	double base = 0;
	float *in, *out;
	uint8_t *ring;
	int o;

	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'n':
			g.elements = strtoull(optarg, NULL, 10);
			break;
		case 'b':
			g.block = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 't':
			g.threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'r':
			g.runs = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'g':
			g.tags = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (g.elements < 1 || g.block < 1 || g.block > 16384 || g.threads < 1 ||
	    g.threads > INA_THREADS_MAX || g.runs < 1 || g.runs > 1000) {
		usage(stderr);
		return 2;
	}
	ina_auth_job_key(tenant, 1, &key);
	in = malloc(g.elements * sizeof(float));
	out = malloc(g.elements * sizeof(float));
	ring = calloc(RING, INA_HDR_SIZE + (size_t)g.block * 4);
	if (!in || !out || !ring) {
		fprintf(stderr, "bench_workers: no memory\n");
		return 1;
	}
	for (size_t i = 0; i < g.elements; i++)
		in[i] = (float)(i % 1000) / 8.0f;
	memset(out, 0, g.elements * sizeof(float));
	printf("bench_workers: %zu elements f32, B %u, bursts of %d%s, median of %u runs\n",
	       g.elements, g.block, INA_MAX_BURST, g.tags ? ", tags" : "", g.runs);
	for (unsigned t = 1; t <= g.threads; t++) {
		struct workers *ws = t > 1 ? workers_create(t - 1) : NULL;
		struct payload_work *w = payload_work_create(4 * INA_MAX_BURST);
		double s[1000], med;

		if ((t > 1 && !ws) || !w) {
			fprintf(stderr, "bench_workers: %u threads: cannot start\n", t);
			return 1;
		}
		round_s(ws, w, in, out, ring, &key);
		for (unsigned r = 0; r < g.runs; r++)
			s[r] = round_s(ws, w, in, out, ring, &key);
		med = bench_median(s, g.runs);
		if (t == 1)
			base = med;
		printf("  threads %2u  %8.3f ms a round  %6.2f GB/s of tensor  speedup %.2f\n", t,
		       med * 1e3, (double)g.elements * 4 / med / 1e9, base / med);
		payload_work_destroy(w);
		workers_destroy(ws);
	}
	free(in);
	free(out);
	free(ring);
	return 0;
}
