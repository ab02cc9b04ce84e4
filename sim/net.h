/* SPDX-License-Identifier: MIT */
/*
 * ina-sim's simulation of a topology: the real host engines and switch
 * pipelines (node.h) exchanging packets over modelled links (link.h) along
 * the tree's paths (route.h), on a virtual clock driven by the event queue
 * (events.h). Every job runs as ina-host runs it: JOIN, its rounds back to
 * back on each host (every sum checked), then FIN. Links are measured over
 * the rounds (from the first job's first round to the last job's last), and
 * each job also gets the ring allreduce model (ring.h) on the same links.
 *
 * A job whose hosts hang off several switches is aggregated in tiers
 * (tiers.h, DESIGN.md's hierarchical aggregation): each switch below the
 * job's root runs the pipeline with an uplink, one worker of the job on its
 * parent, and the root is an ordinary switch. A job the simulator cannot run
 * (a switch that would be a rack of one job and the root of another, more
 * members on a switch than its bitmaps hold, bf16 across switches) is
 * refused with the reason, and its ring model still runs.
 */
#ifndef INA_SIM_NET_H
#define INA_SIM_NET_H

#include <stddef.h>
#include <stdint.h>

#include "link.h"
#include "node.h"
#include "ring.h"
#include "topology.h"

struct sim_config {
	uint64_t seed;		 /* loss draws (each link direction its own stream) */
	uint64_t queue_bytes;	 /* each link direction's queue; 0: as ina-testbed
				 * shapes a link (tc tbf: 50 ms at the link's rate
				 * plus a 2 ms burst, at least 64 KiB) */
	uint64_t rto_ns;	 /* each engine's first retransmission timeout; 0:
				 * as ina-testbed sets ina-host's --rto-us (4x the
				 * link's round-trip latency plus 3x a lane's
				 * worth of frames at its rate, 5 ms to 10 s) */
	uint32_t frame_overhead; /* bytes each ina packet gains on the wire:
				 * Ethernet, IPv4 and UDP headers (42) */
	uint64_t limit_ns;	 /* virtual time after which a job that has not
				 * finished fails */
};

/* Defaults: seed 1, queues and timeouts as ina-testbed's (0), 42 bytes of
 * framing, 600 s. */
void sim_config_init(struct sim_config *cfg);

enum sim_job_state {
	SIM_JOB_REFUSED, /* not simulated: 'why' */
	SIM_JOB_FAILED,	 /* simulated, and failed: 'error' */
	SIM_JOB_OK,	 /* every round's sum right on every host, FIN done */
};

struct sim_job_report {
	const struct topo_job *job;
	enum sim_job_state state;
	char why[400];		   /* REFUSED: the reason */
	char error[400];	   /* FAILED: the first error */
	int switch_node;	   /* node index of its (root) switch, -1
					 * refused */
	uint32_t nb_switches;	   /* switches aggregating it (1: one) */
	uint32_t tiers;		   /* switch tiers its hosts climb */
	uint32_t tensor_len;	   /* elements (a .npy file's length) */
	uint32_t rounds_done;	   /* rounds every host finished */
	uint64_t start_ns, end_ns; /* first round's start, last round's end */
	uint64_t *round_ns;	   /* each round: its end minus the previous
					 * round's end (the first: minus start) */
	double mean_round_ns;	   /* (end - start) / rounds */
	double goodput_bps;	   /* tensor bits per mean round time */
	uint64_t sums_checked;	   /* results checked (hosts x rounds) */
	/* Summed over the job's engines (the whole run: JOIN to FIN). */
	uint64_t pkts_sent, bytes_sent, pkts_recv, bytes_recv;
	uint64_t data_sent, empty_sent, retransmits, waits;
	/* The ring allreduce of the same tensor on the same links. */
	int ring_ok;
	char ring_error[200];
	struct ring_result ring;
	uint64_t ring_wall_ns; /* what the ring model took to compute */
};

struct sim_link_report {
	/* Over the rounds window; [0] is a -> b, [1] is b -> a. */
	struct sim_link_stats dir[2];
	double utilisation[2]; /* busy time / window */
};

/* An attack (topology.h) and what its attacker did (node.h). */
struct sim_attack_report {
	const struct topo_attack *attack;
	struct attack_stats st;
};

struct sim_report {
	uint64_t window_ns;	/* the rounds window (see above) */
	uint64_t end_ns;	/* virtual time when the run ended */
	uint64_t events;	/* events processed */
	uint64_t lost_no_route; /* packets with no path (should be 0) */
	uint32_t nb_jobs;
	struct sim_job_report *jobs; /* in the topology's job order */
	uint32_t nb_links;
	struct sim_link_report *links; /* in the topology's link order */
	/* The switches' counters, by node index (NULL for a node without a
	 * pipeline: hosts, and switches that aggregate nothing). */
	const struct pipeline_stats **switches;
	uint32_t nb_attacks;
	struct sim_attack_report *attacks; /* in the topology's order */
};

struct sim_net;
struct ina_pkt;

/*
 * Builds the network of 't' (which must outlive it): links, nodes and the
 * jobs' engines, the ring model of every job. Jobs the simulator cannot run
 * are marked refused here. NULL with a message in 'err' when the topology
 * itself is unusable (no tree, out of memory).
 */
struct sim_net *sim_net_create(const struct topology *t, const struct sim_config *cfg, char *err,
			       size_t errlen);
void sim_net_destroy(struct sim_net *net); /* Accepts NULL. */

/* Runs every job that is not refused to its end. Returns 0 when each of
 * them ended SIM_JOB_OK (refused ones do not count), else -1. */
int sim_net_run(struct sim_net *net);

/*
 * Calls 'tap' with every packet delivered to a node, at 'now', before the
 * node sees it (from node 'src' to node 'dst'). The tap may change the
 * packet's bytes, not free it. Tests corrupt a result with it, to see a
 * wrong sum fail the run; a capture of a link could hang here.
 */
typedef void sim_tap_fn(void *arg, struct ina_pkt *pkt, int src, int dst, uint64_t now);
void sim_net_set_tap(struct sim_net *net, sim_tap_fn *tap, void *arg);

/* The figures; valid until sim_net_destroy(). */
const struct sim_report *sim_net_report(const struct sim_net *net);

#endif
