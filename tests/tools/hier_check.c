/* SPDX-License-Identifier: MIT */
/*
 * Hierarchical aggregation through the public API (ina_allreduce over udp,
 * real ina-switch processes: a spine and rack switches with --uplink): forks
 * one worker per (rack, local rank); each joins its rack switch as rank r of
 * the rack's world, and allreduces R rounds of dyadic data that depends on
 * its GLOBAL rank, so that every worker can recompute every worker's input
 * and check the sum of the whole job exactly (k * 2^-10 values: exact in
 * any order in f32, and at the scale every tier agrees on in i32). ina-host
 * checks a sum over its own job's world, which on a rack is the rack's, so
 * it cannot check a hierarchy; this can.
 * Prints one line per worker: "worker G rack K bytes_sent B ...".
 * Usage: hier_check ENC ROUNDS ELEMENTS DENSITY PORTSPEC RACK_ADDR... (each
 * RACK_ADDR is "ADDR:PORT/N": N workers on that rack). Exit 0: all passed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ina.h"
#include "ina/util.h"

#define MAX_WORKERS 16
#define BLOCK 256

static int nb_workers;

/* Worker g's element i of round 'round': k * 2^-10, |k| <= 1023, k != 0;
 * whole blocks of 'BLOCK' are zero with probability 1 - density. */
static float
input(int round, int g, int i, double density)
{
	uint64_t st = (uint64_t)round * 1000003u + (uint64_t)g * 7919u + (uint64_t)(i / BLOCK);
	int k;

	if ((double)(ina_splitmix64(&st) >> 11) * 0x1.0p-53 >= density)
		return 0.0f;
	st = (uint64_t)round * 1000003u + (uint64_t)g * 104729u + (uint64_t)i * 31u + 17u;
	k = (int)(ina_splitmix64(&st) % 2047) - 1023;
	return (float)(k ? k : 1) / 1024.0f;
}

static int
run_worker(int g, int rack, int local, int world, const char *addr, const char *port,
	   enum ina_encoding_type enc, int rounds, int n, double density)
{
	float *in = malloc((size_t)n * sizeof(float));
	float *out = malloc((size_t)n * sizeof(float));
	struct ina_config cfg;
	struct ina_ctx *ctx;
	struct ina_stats st;
	char err[256];
	int ret;

	if (!in || !out)
		return 1;
	ina_config_init(&cfg);
	cfg.switch_addr = addr;
	cfg.port = port;
	cfg.job_id = 42;
	cfg.rank = (uint16_t)local;
	cfg.world = (uint16_t)world;
	cfg.block_size = BLOCK;
	cfg.lanes = 32;
	cfg.encoding = enc;
	cfg.timeout_ms = 20000;
	/* Tenant mode when $INA_TENANT and $INA_TENANT_KEY say so, else the
	 * token from $INA_JOB_TOKEN. */
	ret = ina_tenant_from(NULL, &cfg, err, sizeof(err));
	if (ret == 0)
		ret = ina_token_from(NULL, &cfg.token, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "worker %d: %s\n", g, err);
		return 1;
	}
	ret = ina_open(&cfg, &ctx, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "worker %d: ina_open: %s\n", g, err);
		return 1;
	}
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < n; i++)
			in[i] = input(r, g, i, density);
		ret = ina_allreduce(ctx, 1, in, out, (size_t)n, INA_SUM);
		if (ret < 0) {
			fprintf(stderr, "worker %d round %d: %s\n", g, r, ina_last_error(ctx));
			ina_close(ctx);
			return 1;
		}
		for (int i = 0; i < n; i++) {
			double want = 0;

			for (int h = 0; h < nb_workers; h++)
				want += (double)input(r, h, i, density);
			if (out[i] != (float)want) {
				fprintf(stderr, "worker %d round %d element %d: got %a, want %a\n",
					g, r, i, (double)out[i], want);
				ina_close(ctx);
				return 1;
			}
		}
	}
	ina_get_stats(ctx, &st);
	printf("worker %d rack %d rounds %llu verified true bytes_sent %llu bytes_received %llu "
	       "packets_sent %llu retransmits %llu\n",
	       g, rack, (unsigned long long)st.rounds, (unsigned long long)st.bytes_sent,
	       (unsigned long long)st.bytes_received, (unsigned long long)st.packets_sent,
	       (unsigned long long)st.retransmits);
	fflush(stdout);
	ina_close(ctx);
	free(in);
	free(out);
	return 0;
}

int
main(int argc, char **argv)
{
	enum ina_encoding_type enc;
	pid_t pids[MAX_WORKERS];
	int rounds, n, fail = 0, g = 0;
	double density;

	if (argc < 7) {
		fprintf(stderr, "usage: hier_check f32|i32 ROUNDS ELEMENTS DENSITY PORTSPEC "
				"RACK_ADDR/N...\n");
		return 2;
	}
	enc = strcmp(argv[1], "i32") == 0 ? INA_I32 : INA_F32;
	rounds = atoi(argv[2]);
	n = atoi(argv[3]);
	density = atof(argv[4]);
	for (int a = 6; a < argc; a++) {
		const char *slash = strrchr(argv[a], '/');

		if (!slash || atoi(slash + 1) < 1)
			return 2;
		nb_workers += atoi(slash + 1);
	}
	if (nb_workers > MAX_WORKERS || rounds < 1 || n < 1)
		return 2;
	for (int a = 6; a < argc; a++) {
		char addr[128];
		const char *slash = strrchr(argv[a], '/');
		int world = atoi(slash + 1);

		snprintf(addr, sizeof(addr), "%.*s", (int)(slash - argv[a]), argv[a]);
		for (int l = 0; l < world; l++, g++) {
			pids[g] = fork();
			if (pids[g] < 0)
				return 1;
			if (pids[g] == 0)
				_exit(run_worker(g, a - 6, l, world, addr, argv[5], enc, rounds, n,
						 density));
		}
	}
	for (int i = 0; i < g; i++) {
		int status;

		if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			fprintf(stderr, "worker %d failed\n", i);
			fail = 1;
		}
	}
	return fail;
}
