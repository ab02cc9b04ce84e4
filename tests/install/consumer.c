/* SPDX-License-Identifier: MIT */
/*
 * A program outside ina's tree that uses the installed library as a user
 * would (tests/install/install.sh builds it against an installed prefix with
 * pkg-config and with find_package(ina)): opens a context on a switch, sums
 * a tensor across the job's ranks, checks the sum exactly, closes.
 * Usage: consumer ADDR:PORT RANK WORLD JOB   (the job secret in $INA_JOB_TOKEN)
 * Prints "consumer rank R: sum of N floats over W ranks OK (libina V)".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ina.h>

#define N 4096
#define TENSOR 7

/* Rank r's element i: (r + 1) * (i mod 7 + 1) / 4, exact in f32, so the sum
 * over W ranks is W (W + 1) / 2 * (i mod 7 + 1) / 4 in any order. */
static float
value(int r, int i)
{
	return (float)(r + 1) * (float)(i % 7 + 1) * 0.25f;
}

static int
parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

int
main(int argc, char **argv)
{
	static float in[N], out[N];
	struct ina_config cfg;
	struct ina_ctx *ctx;
	char err[256];
	int rank, world, job, ret;

	if (argc != 5 || parse_int(argv[3], 1, 64, &world) < 0 ||
	    parse_int(argv[2], 0, world - 1, &rank) < 0 ||
	    parse_int(argv[4], 1, 1 << 30, &job) < 0) {
		fprintf(stderr, "usage: consumer ADDR:PORT RANK WORLD JOB "
				"(0 <= RANK < WORLD <= 64, JOB >= 1)\n");
		return 2;
	}
	if (strcmp(ina_version(), INA_VERSION_STRING) != 0) {
		fprintf(stderr, "consumer: ina.h says %s, libina says %s\n", INA_VERSION_STRING,
			ina_version());
		return 1;
	}
	ina_config_init(&cfg);
	cfg.switch_addr = argv[1];
	cfg.job_id = (uint32_t)job;
	cfg.rank = (uint16_t)rank;
	cfg.world = (uint16_t)world;
	cfg.timeout_ms = 10000;
	if (ina_token_from(NULL, &cfg.token, err, sizeof(err)) < 0) {
		fprintf(stderr, "consumer: %s\n", err);
		return 1;
	}
	ret = ina_open(&cfg, &ctx, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "consumer: ina_open: %s: %s\n", ina_strerror(ret), err);
		return 1;
	}
	for (int i = 0; i < N; i++)
		in[i] = value(rank, i);
	ret = ina_allreduce(ctx, TENSOR, in, out, N, INA_SUM);
	if (ret < 0) {
		fprintf(stderr, "consumer: ina_allreduce: %s: %s\n", ina_strerror(ret),
			ina_last_error(ctx));
		ina_close(ctx);
		return 1;
	}
	for (int i = 0; i < N; i++) {
		float want = (float)(world * (world + 1) / 2) * (float)(i % 7 + 1) * 0.25f;

		if (out[i] != want) {
			fprintf(stderr, "consumer rank %d: element %d is %g, not %g\n", rank, i,
				(double)out[i], (double)want);
			ina_close(ctx);
			return 1;
		}
	}
	ret = ina_close(ctx);
	if (ret < 0) {
		fprintf(stderr, "consumer: ina_close: %s\n", ina_strerror(ret));
		return 1;
	}
	printf("consumer rank %d: sum of %d floats over %d ranks OK (libina %s)\n", rank, N, world,
	       ina_version());
	return 0;
}
