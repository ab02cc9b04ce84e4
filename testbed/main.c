/* SPDX-License-Identifier: MIT */
/*
 * ina-testbed: plays a topology file on this machine. `check FILE` loads and
 * validates it and prints its summary; `run FILE` plays it in network
 * namespaces as root (run.c) and reports; `clean` removes what a testbed
 * killed with SIGKILL left behind. Exit statuses: run.h (TB_EXIT_*).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netns.h"
#include "plan.h"
#include "run.h"
#include "topology.h"

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: ina-testbed check FILE\n"
		"       ina-testbed run FILE [options]\n"
		"       ina-testbed clean\n"
		"\n"
		"check  loads and validates a topology file (topologies/README.md) and prints\n"
		"       its nodes, links and jobs, and whether `run` can play it; no privileges.\n"
		"run    plays it on this machine, as root: a network namespace per host and\n"
		"       switch, a veth pair per link shaped to its bandwidth (tc tbf), the link's\n"
		"       latency and loss injected by the host's port, an ina-switch per switch\n"
		"       that serves a job and an ina-host per rank, then a report (per-round\n"
		"       time, goodput, retransmits, bytes per link). Everything is torn down\n"
		"       at the end, on failure and on Ctrl-C.\n"
		"clean  deletes the namespaces of testbeds that no longer run (root).\n"
		"\n"
		"run options:\n"
		"  --udp                 hosts and switches on kernel UDP (the default)\n"
		"  --dpdk                DPDK processes, each owning its veth ends through\n"
		"                        net_af_packet (EAL without hugepages; the switch on\n"
		"                        lcore 1, the hosts on lcore 0)\n"
		"  --json FILE           write the report as JSON too\n"
		"  --capture DIR         tcpdump every link into DIR/A-B.pcap\n"
		"  --timeout S           limit of the whole run (default 600)\n"
		"  --workdir DIR         keep logs and ina-host reports here (default: a /tmp\n"
		"                        folder, removed after a run that verified)\n"
		"  --switch-bin PATH     ina-switch to run (default: next to this program in\n"
		"                        the build tree, else in PATH)\n"
		"  --host-bin PATH       ina-host to run (likewise)\n"
		"  --progress / --no-progress  a live progress line (default: on a tty)\n"
		"\n"
		"exit status: 0 every job verified (check: the file is valid), 1 a job failed,\n"
		"2 bad options or an invalid file, 3 this machine cannot run it (not root, no\n"
		"network namespaces, a setup command failed), 4 valid but not playable here\n"
		"(e.g. a job across switch tiers with --dpdk or with data from a file), 130\n"
		"interrupted (torn down).\n");
}

/* 'name' in the build tree next to this program (../DIR/name), beside it, or in PATH. */
static const char *
find_prog(const char *dir, const char *name, char *buf, size_t size)
{
	char self[PATH_MAX], *d;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		d = dirname(self);
		snprintf(buf, size, "%s/../%s/%s", d, dir, name);
		if (access(buf, X_OK) == 0)
			return buf;
		snprintf(buf, size, "%s/%s", d, name);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	return name;
}

/* A program name without '/' as found in PATH, for access() in run.c. */
static const char *
in_path(const char *name, char *buf, size_t size)
{
	const char *path = getenv("PATH");
	char copy[4096], *save = NULL, *p;

	if (strchr(name, '/') || !path)
		return name;
	snprintf(copy, sizeof(copy), "%s", path);
	for (p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
		snprintf(buf, size, "%s/%s", p, name);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	return name;
}

static struct topology *
load(const char *file)
{
	char err[512];
	struct topology *t = topology_load(file, err, sizeof(err));

	if (!t)
		fprintf(stderr, "ina-testbed: %s\n", err);
	return t;
}

static int
cmd_check(int argc, char **argv)
{
	struct topology *t;
	char err[512];
	int ret;

	if (argc != 2) {
		usage(stderr);
		return TB_EXIT_USAGE;
	}
	t = load(argv[1]);
	if (!t)
		return TB_EXIT_USAGE;
	topology_print(t, stdout);
	ret = plan_check(t, 0, err, sizeof(err));
	if (ret == 0)
		printf("run: ina-testbed can play it\n");
	else if (ret == TB_EXIT_UNSUPPORTED)
		printf("run: ina-testbed cannot play it yet: %s\n", err);
	else
		fprintf(stderr, "ina-testbed: %s: %s\n", argv[1], err);
	topology_free(t);
	return ret == TB_EXIT_UNSUPPORTED ? TB_EXIT_OK : ret;
}

enum {
	OPT_UDP = 256,
	OPT_DPDK,
	OPT_JSON,
	OPT_CAPTURE,
	OPT_TIMEOUT,
	OPT_WORKDIR,
	OPT_SWITCH_BIN,
	OPT_HOST_BIN,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
};

static int
cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "udp", no_argument, NULL, OPT_UDP },
		{ "dpdk", no_argument, NULL, OPT_DPDK },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "capture", required_argument, NULL, OPT_CAPTURE },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "workdir", required_argument, NULL, OPT_WORKDIR },
		{ "switch-bin", required_argument, NULL, OPT_SWITCH_BIN },
		{ "host-bin", required_argument, NULL, OPT_HOST_BIN },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char sw[PATH_MAX], host[PATH_MAX], sw2[PATH_MAX], host2[PATH_MAX];
	struct run_opts o = {
		.timeout_s = 600,
		.progress = isatty(STDERR_FILENO),
	};
	struct topology *t;
	int c, dpdk = 0, ret;

	o.switch_bin = find_prog("switch_sim", "ina-switch", sw, sizeof(sw));
	o.host_bin = find_prog("host", "ina-host", host, sizeof(host));
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		long v;

		switch (c) {
		case OPT_UDP:
			dpdk = 0;
			break;
		case OPT_DPDK:
			dpdk = 1;
			break;
		case OPT_JSON:
			o.json = optarg;
			break;
		case OPT_CAPTURE:
			o.capture_dir = optarg;
			break;
		case OPT_TIMEOUT:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 1 || v > 86400) {
				fprintf(stderr,
					"ina-testbed: --timeout: '%s' is not a number of "
					"seconds in 1..86400\n",
					optarg);
				return TB_EXIT_USAGE;
			}
			o.timeout_s = (int)v;
			break;
		case OPT_WORKDIR:
			o.workdir = optarg;
			break;
		case OPT_SWITCH_BIN:
			o.switch_bin = optarg;
			break;
		case OPT_HOST_BIN:
			o.host_bin = optarg;
			break;
		case OPT_PROGRESS:
			o.progress = 1;
			break;
		case OPT_NO_PROGRESS:
			o.progress = 0;
			break;
		case 'h':
			usage(stdout);
			return TB_EXIT_OK;
		default:
			usage(stderr);
			return TB_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ina-testbed: run takes one topology file (see --help)\n");
		return TB_EXIT_USAGE;
	}
	o.dpdk = dpdk;
	if (o.capture_dir && access(in_path("tcpdump", sw2, sizeof(sw2)), X_OK) < 0) {
		fprintf(stderr,
			"ina-testbed: --capture needs tcpdump (scripts/deps installs it)\n");
		return TB_EXIT_ENV;
	}
	o.switch_bin = in_path(o.switch_bin, sw2, sizeof(sw2));
	o.host_bin = in_path(o.host_bin, host2, sizeof(host2));
	t = load(argv[optind]);
	if (!t)
		return TB_EXIT_USAGE;
	ret = run_topology(t, &o);
	topology_free(t);
	return ret;
}

static void
clean_one(const char *ns, int pid, int alive, void *arg)
{
	char err[256];
	int *failed = arg;

	if (alive) {
		printf("kept %s: ina-testbed %d still runs\n", ns, pid);
		return;
	}
	if (netns_del(ns, err, sizeof(err)) < 0) {
		fprintf(stderr, "ina-testbed: ip netns del %s: %s\n", ns, err);
		*failed = 1;
	} else {
		printf("deleted %s\n", ns);
	}
}

static int
cmd_clean(int argc, char **argv)
{
	int failed = 0;

	(void)argv;
	if (argc != 1) {
		usage(stderr);
		return TB_EXIT_USAGE;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "ina-testbed: clean needs root (it deletes network namespaces)\n");
		return TB_EXIT_ENV;
	}
	netns_each_testbed(clean_one, &failed);
	return failed ? TB_EXIT_ENV : TB_EXIT_OK;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return TB_EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return TB_EXIT_OK;
	}
	if (strcmp(argv[1], "check") == 0)
		return cmd_check(argc - 1, argv + 1);
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "clean") == 0)
		return cmd_clean(argc - 1, argv + 1);
	fprintf(stderr, "ina-testbed: unknown command '%s' (check, run or clean; see --help)\n",
		argv[1]);
	return TB_EXIT_USAGE;
}
