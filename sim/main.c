/* SPDX-License-Identifier: MIT */
/*
 * ina-sim: simulates a topology file (topologies/README.md) with the real
 * switch pipeline and host engines over modelled links (net.h) and prints
 * the predicted round time, goodput, per-link load (and by tier of the
 * tree) and, for each job, what a ring allreduce would take on the same
 * links (ring.h). Exit status: 0 when every job simulated ended right, 1
 * when one failed (a wrong sum, an engine error, no end within the time
 * limit), 2 for bad usage or a bad file.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ina/cli.h"
#include "net.h"
#include "report.h"
#include "topology.h"

enum {
	OPT_SEED = 256,
	OPT_QUEUE,
	OPT_LIMIT,
	OPT_JSON,
	OPT_OVERHEAD,
	OPT_QUIET,
	OPT_RTO,
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: ina-sim [options] FILE\n"
		   "  simulates topology FILE: the jobs run on the real switch pipeline and host\n"
		   "  engines over the file's links; reports round time, goodput, per-link load\n"
		   "  and the ring allreduce on the same links; jobs with a tenant run in tenant\n"
		   "  mode (tags), and the file's attacks are played (what each sent, what came\n"
		   "  back, the attacked switch's drops)\n"
		   "  --seed N          loss draws (default 1)\n"
		   "  --queue BYTES     each link direction's queue, tail drop beyond (default\n"
		   "                    0: as ina-testbed's shaper, 50 ms at the link's rate\n"
		   "                    plus a 2 ms burst, at least 64 KiB)\n"
		   "  --rto-us US       the engines' first retransmission timeout (default 0:\n"
		   "                    as ina-testbed sets it from the host's link)\n"
		   "  --overhead BYTES  framing each packet gains on the wire (default 42:\n"
		   "                    Ethernet, IPv4, UDP)\n"
		   "  --limit SECONDS   simulated time a job may take (default 600)\n"
		   "  --json FILE       the report as JSON too ('-': standard output, instead\n"
		   "                    of the text)\n"
		   "  --quiet           no text report\n"
		   "  -h, --help\n");
}

static double
since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) * 1e-9;
}

int
main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "queue", required_argument, NULL, OPT_QUEUE },
		{ "overhead", required_argument, NULL, OPT_OVERHEAD },
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "rto-us", required_argument, NULL, OPT_RTO },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sim_config cfg;
	struct sim_wall wall = { 0 };
	struct topology *t;
	struct sim_net *net;
	struct timespec t0;
	const char *json_path = NULL;
	char err[512];
	int quiet = 0, c, ret;

	ina_cli_set_prog("ina-sim");
	sim_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (c) {
		case OPT_SEED:
			cfg.seed = ina_cli_u64("seed", optarg, 0, UINT64_MAX);
			break;
		case OPT_QUEUE:
			cfg.queue_bytes = ina_cli_u64("queue", optarg, 0, UINT64_MAX);
			break;
		case OPT_RTO:
			cfg.rto_ns = ina_cli_u64("rto-us", optarg, 0, 10000000) * 1000;
			break;
		case OPT_OVERHEAD:
			cfg.frame_overhead = (uint32_t)ina_cli_u64("overhead", optarg, 0, 1000);
			break;
		case OPT_LIMIT:
			cfg.limit_ns = ina_cli_u64("limit", optarg, 1, 86400) * 1000000000ull;
			break;
		case OPT_JSON:
			json_path = optarg;
			break;
		case OPT_QUIET:
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	t = topology_load(argv[optind], err, sizeof(err));
	if (!t)
		ina_die("%s", err);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	net = sim_net_create(t, &cfg, err, sizeof(err));
	if (!net) {
		topology_free(t);
		ina_die("%s: %s", argv[optind], err);
	}
	wall.build_s = since(&t0);
	for (uint32_t k = 0; k < sim_net_report(net)->nb_jobs; k++)
		wall.ring_s += (double)sim_net_report(net)->jobs[k].ring_wall_ns * 1e-9;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = sim_net_run(net);
	wall.run_s = since(&t0);
	if (!quiet && !(json_path && strcmp(json_path, "-") == 0))
		sim_report_text(t, &cfg, sim_net_report(net), &wall, stdout);
	if (json_path) {
		json_t *j = sim_report_json(t, &cfg, sim_net_report(net), &wall);
		int bad = !j;

		if (j && strcmp(json_path, "-") == 0)
			bad = json_dumpf(j, stdout, JSON_INDENT(2)) < 0 || fputc('\n', stdout) < 0;
		else if (j)
			bad = json_dump_file(j, json_path, JSON_INDENT(2)) < 0;
		json_decref(j);
		if (bad) {
			sim_net_destroy(net);
			topology_free(t);
			ina_die("%s: cannot write the JSON report", json_path);
		}
	}
	sim_net_destroy(net);
	topology_free(t);
	return ret == 0 ? 0 : 1;
}
