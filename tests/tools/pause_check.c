/* SPDX-License-Identifier: MIT */
/*
 * One rank of a job through the public API (ina_allreduce over udp, a real
 * ina-switch), for tests/integration/udp_pause.sh: ROUNDS allreduces of
 * dyadic data that depends on rank, round and element, each sum checked
 * exactly (every rank recomputes every rank's input); rank PAUSE_RANK sleeps
 * PAUSE_MS before round PAUSE_ROUND, inside no ina call at all, as a training
 * job does for an evaluation or a checkpoint.
 * Prints one line per round: "rank R round K ok MS ms" (the allreduce's own
 * time), or "rank R round K failed after MS ms: the error" and exits 1.
 * Usage: pause_check ADDR:PORT RANK WORLD ROUNDS ELEMENTS PAUSE_RANK PAUSE_ROUND
 *        PAUSE_MS KEEPALIVE_MS TIMEOUT_MS   (job id and token from the
 *        environment: INA_JOB_ID, INA_JOB_TOKEN)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ina.h"
#include "ina/util.h"

static float
input(int round, int rank, int i)
{
	uint64_t st = (uint64_t)round * 1000003u + (uint64_t)rank * 104729u + (uint64_t)i * 31u;
	int k = (int)(ina_splitmix64(&st) % 2047) - 1023;

	return (float)(k ? k : 1) / 1024.0f;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

int
main(int argc, char **argv)
{
	struct ina_config cfg;
	struct ina_ctx *ctx;
	struct ina_stats st;
	const char *job = getenv("INA_JOB_ID");
	char err[256];
	int rank, world, rounds, n, pause_rank, pause_round;
	long pause_ms;
	float *in, *out;

	if (argc != 11) {
		fprintf(stderr,
			"usage: pause_check ADDR:PORT RANK WORLD ROUNDS ELEMENTS PAUSE_RANK "
			"PAUSE_ROUND PAUSE_MS KEEPALIVE_MS TIMEOUT_MS\n");
		return 2;
	}
	rank = atoi(argv[2]);
	world = atoi(argv[3]);
	rounds = atoi(argv[4]);
	n = atoi(argv[5]);
	pause_rank = atoi(argv[6]);
	pause_round = atoi(argv[7]);
	pause_ms = atol(argv[8]);
	if (world < 1 || rank < 0 || rank >= world || rounds < 1 || n < 1)
		return 2;
	in = malloc((size_t)n * sizeof(float));
	out = malloc((size_t)n * sizeof(float));
	if (!in || !out)
		return 1;
	ina_config_init(&cfg);
	cfg.switch_addr = argv[1];
	cfg.job_id = job ? (uint32_t)strtoul(job, NULL, 0) : 1;
	cfg.rank = (uint16_t)rank;
	cfg.world = (uint16_t)world;
	cfg.block_size = 256;
	cfg.lanes = 8;
	cfg.keepalive_ms = (uint32_t)atol(argv[9]);
	cfg.timeout_ms = (uint32_t)atol(argv[10]);
	if (ina_token_from(NULL, &cfg.token, err, sizeof(err)) < 0 ||
	    ina_open(&cfg, &ctx, err, sizeof(err)) < 0) {
		fprintf(stderr, "rank %d: %s\n", rank, err);
		goto fail;
	}
	for (int r = 0; r < rounds; r++) {
		uint64_t t0;
		int ret;

		if (rank == pause_rank && r == pause_round)
			sleep_ms(pause_ms);
		for (int i = 0; i < n; i++)
			in[i] = input(r, rank, i);
		t0 = ina_now_ns();
		ret = ina_allreduce(ctx, 1, in, out, (size_t)n, INA_SUM);
		if (ret < 0) {
			fprintf(stderr, "rank %d round %d failed after %llu ms: %s\n", rank, r,
				(unsigned long long)((ina_now_ns() - t0) / 1000000),
				ina_last_error(ctx));
			ina_close(ctx);
			goto fail;
		}
		for (int i = 0; i < n; i++) {
			double want = 0;

			for (int h = 0; h < world; h++)
				want += (double)input(r, h, i);
			if (out[i] != (float)want) {
				fprintf(stderr, "rank %d round %d element %d: got %a, want %a\n",
					rank, r, i, (double)out[i], want);
				ina_close(ctx);
				goto fail;
			}
		}
		if (rounds <= 100)
			printf("rank %d round %d ok %llu ms\n", rank, r,
			       (unsigned long long)((ina_now_ns() - t0) / 1000000));
		fflush(stdout);
	}
	ina_get_stats(ctx, &st);
	printf("rank %d done: rounds %llu stalls %llu\n", rank, (unsigned long long)st.rounds,
	       (unsigned long long)st.stalls);
	ina_close(ctx);
	free(in);
	free(out);
	return 0;
fail:
	free(in);
	free(out);
	return 1;
}
