/* SPDX-License-Identifier: MIT */
/*
 * ina_dpdk_start() as a library user calls it: one rank of a job over the
 * dpdk port, EAL started by libina from the EAL arguments given, the config
 * set by name with a "dpdk:..." port; a few allreduces (exact sums of small
 * integers), the transport "dpdk", close; a second start refused with a
 * sentence, ina_dpdk_stop(), a start after the stop refused.
 * With "bad": EAL arguments that cannot start (an option EAL does not know,
 * then arguments that are not EAL's): INA_EPORT with a sentence each time,
 * and a dpdk config then fails to open with INA_EPORT, not a crash.
 * Usage: api_dpdk_check RANK WORLD SWITCH PORT_SPEC -- EAL_ARGS...
 *        api_dpdk_check bad            (exit 0: all passed)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina.h"
#include "rank_check.h"

#define N 5000
#define ROUNDS 4

static int rank;


static int
set(struct ina_config *c, const char *key, const char *value)
{
	char err[256];
	int ret = ina_config_set(c, key, value, err, sizeof(err));

	CHECK(ret == 0, "config %s: %s", key, err);
	return 0;
}

static int
bad(void)
{
	char *unknown[] = { "api_dpdk_check", "--no-huge", "--no-such-eal-option", NULL };
	char *stray[] = { "api_dpdk_check",
			  "--no-huge",
			  "-m",
			  "256",
			  "--no-pci",
			  "--no-shconf",
			  "--file-prefix=ina-api-bad",
			  "--",
			  "stray",
			  NULL };
	struct ina_config *c = ina_config_new();
	struct ina_ctx *ctx;
	char err[512];
	int ret;

	ret = ina_dpdk_start(0, unknown, err, sizeof(err));
	CHECK(ret == -EINVAL && err[0], "no argv[0]: %d '%s'", ret, err);
	ret = ina_dpdk_start(3, unknown, err, sizeof(err));
	CHECK(ret == INA_EPORT && strlen(err) > 10, "an unknown EAL option: %d '%s'", ret, err);
	printf("an unknown EAL option: %s\n", err);
	ret = ina_dpdk_start(9, stray, err, sizeof(err));
	CHECK(ret == INA_EPORT && strstr(err, "stray"), "a stray argument: %d '%s'", ret, err);
	printf("a stray argument: %s\n", err);
	ret = ina_dpdk_start(9, stray, err, sizeof(err));
	CHECK(ret == INA_EPORT && strstr(err, "twice"), "a start after EAL stopped: %d '%s'", ret,
	      err);
	printf("again: %s\n", err);
	if (set(c, "switch_addr", "10.77.0.1:9150") || set(c, "world", "1") ||
	    set(c, "port", "dpdk:port=0,ip=10.77.0.2"))
		return 1;
	ret = ina_open(c, &ctx, err, sizeof(err));
	CHECK(ret == INA_EPORT && err[0], "a dpdk config without EAL: %d '%s'", ret, err);
	printf("a dpdk port without EAL: %s\n", err);
	ina_config_free(c);
	ina_dpdk_stop();
	return 0;
}

int
main(int argc, char **argv)
{
	static float in[N], out[N];
	struct ina_config *c;
	struct ina_ctx *ctx;
	char err[512];
	int world, ret;

	if (argc == 2 && strcmp(argv[1], "bad") == 0)
		return bad();
	if (argc < 7 || strcmp(argv[5], "--") != 0) {
		fprintf(stderr, "usage: %s RANK WORLD SWITCH PORT_SPEC -- EAL_ARGS...\n", argv[0]);
		return 2;
	}
	rank = atoi(argv[1]);
	world = atoi(argv[2]);
	/* argv[5] ("--") stands for the name EAL wants first. */
	argv[5] = argv[0];
	ret = ina_dpdk_start(argc - 5, argv + 5, err, sizeof(err));
	CHECK(ret == 0, "ina_dpdk_start: %s", err);
	ret = ina_dpdk_start(argc - 5, argv + 5, err, sizeof(err));
	CHECK(ret == INA_EPORT && strstr(err, "already"), "a second start: %d '%s'", ret, err);
	c = ina_config_new();
	CHECK(c, "config");
	if (set(c, "switch_addr", argv[3]) || set(c, "rank", argv[1]) || set(c, "world", argv[2]) ||
	    set(c, "port", argv[4]) || set(c, "job_id", "0x5a") || set(c, "block_size", "256") ||
	    set(c, "timeout_ms", "20000"))
		return 1;
	ret = ina_token_from(NULL, &c->token, err, sizeof(err));
	CHECK(ret == 0, "token: %s", err);
	ret = ina_open(c, &ctx, err, sizeof(err));
	ina_config_free(c);
	CHECK(ret == 0, "open: %s", err);
	CHECK(strcmp(ina_transport(ctx), "dpdk") == 0, "transport %s", ina_transport(ctx));
	for (int k = 0; k < ROUNDS; k++) {
		for (int i = 0; i < N; i++)
			in[i] = (float)((i % 11) + rank + k);
		ret = ina_allreduce(ctx, 1, in, out, N, INA_SUM);
		CHECK(ret == 0, "round %d: %s (%s)", k, ina_strerror(ret), ina_last_error(ctx));
		for (int i = 0; i < N; i++) {
			float want = (float)(world * ((i % 11) + k) + world * (world - 1) / 2);

			CHECK(out[i] == want, "round %d element %d: %g, want %g", k, i,
			      (double)out[i], (double)want);
		}
	}
	ret = ina_close(ctx);
	CHECK(ret == 0, "close: %s", ina_strerror(ret));
	ina_dpdk_stop();
	ina_dpdk_stop(); /* twice: harmless */
	ret = ina_dpdk_start(argc - 5, argv + 5, err, sizeof(err));
	CHECK(ret == INA_EPORT && strstr(err, "twice"), "a start after the stop: %d '%s'", ret,
	      err);
	printf("rank %d: %d allreduces of %d floats over dpdk, exact\n", rank, ROUNDS, N);
	return 0;
}
