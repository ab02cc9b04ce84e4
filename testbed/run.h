/* SPDX-License-Identifier: MIT */
/*
 * Plays a topology on this machine (ina-testbed run): a network namespace per
 * node, a veth pair per link shaped with tc tbf, the link's latency and loss
 * given to the fault injector of the host's port, an ina-switch in each
 * switch's namespace that serves a job, an ina-host per rank of every job,
 * optional tcpdump captures of every link, a progress line, the report; and
 * everything torn down whatever happens (success, failure, timeout, SIGINT,
 * SIGTERM, SIGHUP).
 */
#ifndef TB_RUN_H
#define TB_RUN_H

#include <stddef.h>

#include "topology.h"

/* Exit statuses of ina-testbed (README.md lists them too). */
enum {
	TB_EXIT_OK = 0,		   /* every job ran and every sum verified (check: file valid) */
	TB_EXIT_FAILED = 1,	   /* a job failed: a wrong or failed round, a process that
				 * crashed or hung, the run's time limit */
	TB_EXIT_USAGE = 2,	   /* bad options, or a topology file that does not load */
	TB_EXIT_ENV = 3,	   /* this machine cannot play it: not root, no network
				 * namespaces, a missing program, a setup command failed */
	TB_EXIT_UNSUPPORTED = 4,   /* a valid topology run cannot play (a job across switch
				 * tiers over DPDK, with data from a file or in bf16) */
	TB_EXIT_INTERRUPTED = 130, /* SIGINT, SIGTERM or SIGHUP: torn down, partial report */
};

struct run_opts {
	const char *switch_bin;	 /* ina-switch to run */
	const char *host_bin;	 /* ina-host to run */
	const char *capture_dir; /* tcpdump every link into DIR/A-B.pcap, or NULL */
	const char *json;	 /* write the report as JSON here, or NULL */
	const char *workdir;	 /* logs and ina-host reports; NULL: a fresh /tmp folder,
				 * removed after a run that verified */
	int dpdk;		 /* DPDK on net_af_packet over the veths, not kernel UDP */
	int timeout_s;		 /* the whole run's limit */
	int progress;		 /* 1: a live line (a tty), 0: plain lines */
	int verbose;		 /* print each setup command's purpose */
};

/* Plays 't'; returns the exit status (TB_EXIT_*). Checks root and namespaces
 * itself. */
int run_topology(const struct topology *t, const struct run_opts *o);

#endif
