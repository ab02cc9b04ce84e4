/* SPDX-License-Identifier: MIT */
/*
 * Inside the simulation: the state net.c (links, events, the loop, the
 * rounds window) and job.c (admission, a job's hosts, its checks and its
 * figures) share. Not an interface for anyone else: net.h is.
 */
#ifndef INA_SIM_NET_INT_H
#define INA_SIM_NET_INT_H

#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "ina/auth.h"
#include "link.h"
#include "net.h"
#include "node.h"
#include "route.h"
#include "tiers.h"

#define IP_UDP_BYTES 28

enum job_phase { JP_JOINING, JP_RUNNING, JP_CLOSING, JP_END };

struct sim_job {
	struct sim_net *net;
	struct sim_job_report *rep;
	const struct topo_job *tj;
	struct workload *workload;
	struct sim_node **hosts; /* by rank (also in net->nodes) */
	struct tiers tiers;	 /* each member's switch, rank, world */
	uint16_t world;
	enum job_phase phase;
	uint16_t joined, finished, closed;
	uint8_t *rank_joined, *rank_closed;
	uint32_t *rank_rounds; /* rounds each rank finished */
	uint64_t *round_end;   /* latest end of each round */
	/* The first checked result of the two rounds that can be open at
	 * once (a rank cannot end round r + 2 before all ended round r). */
	float *ref[2];
	int64_t ref_round[2];
	/* Exact workloads (synthetic f32, i32): the expected sum of the two
	 * rounds that can be open, accumulated as each rank generates its
	 * input (sim_job_contribute), so no rank's contribution is kept:
	 * what lets 1,024 workers fit (their sums are exact in any order). */
	int exact;
	float *acc[2];
	int64_t acc_round[2];
	uint32_t acc_ranks[2]; /* ranks added into acc[slot] */
	int failed;	       /* rep->error says why */
	int start_due;	       /* every rank joined: start the rounds */
	int stop_due;	       /* failed: stop the hosts */
};

/* What a switch does (a switch with an uplink runs only the jobs it
 * forwards upstream, so it cannot be a job's root too). */
enum sw_role { SW_NONE, SW_ROOT, SW_RACK };

struct sim_net {
	const struct topology *t;
	struct sim_config cfg;
	struct sim_route route;
	struct sim_link *links; /* 2 per topology link (route.h) */
	struct sim_link_stats *win_start;
	struct sim_node **nodes; /* by node index; NULL: forwards only */
	uint8_t *switch_role;	 /* by node index: enum sw_role */
	struct sim_job *jobs;
	struct ina_pkt_pool *pool;
	struct sim_node_env env; /* what the nodes are given (node.h) */
	struct sim_events q;
	uint64_t now;
	int window_open, window_closed;
	struct sim_report rep;
	const struct pipeline_stats **sw_stats;
	sim_tap_fn *tap;
	void *tap_arg;
	struct tenants *tenants; /* tenant mode: the switches' table, else NULL */
};

/* job.c */
/* Decides whether job 'k' can run here (one switch, hosts free, blocks that
 * fit); marks it refused with the reason, or fills its switch. 'host_taken'
 * (one byte per node) collects the hosts of admitted jobs. */
void job_admit(struct sim_net *net, uint32_t k, uint8_t *host_taken);
/* Builds an admitted job's workload and host nodes. 0, or -errno with a
 * message in 'err' (a job without data is failed, not an error). */
int job_build(struct sim_net *net, uint32_t k, char *err, size_t errlen);
/* The ring model of job 'k', timed. */
void job_ring(struct sim_net *net, uint32_t k);
void job_fini(struct sim_job *job);
/* Whether some job still joins or runs rounds. */
int jobs_rounds_left(const struct sim_net *net);
/* Job-level steps between events; 1 while some job is not over. */
int jobs_step(struct sim_net *net);
/* Fills the job reports at the end of a run. */
void jobs_report(struct sim_net *net);

/* window.c: the rounds window over which links are counted (opened at the
 * first round's start, closed when no job runs rounds any more). */
void sim_window_open(struct sim_net *net);
void sim_window_close(struct sim_net *net);

/* tenancy.c: tenant mode. The switches' tenants table from the jobs'
 * tenants (none: net->tenants stays NULL); 0 or -errno with a message. */
int sim_tenants_build(struct sim_net *net, char *err, size_t errlen);
/* 'n' bytes drawn from 'state' (splitmix64): a simulation's keys and
 * secrets, which it has no need to keep. */
void sim_seeded_bytes(uint64_t state, uint8_t *out, size_t n);
/* A job's id on the wire: its tenant's index in the top byte. */
uint32_t sim_job_wire_id(const struct topo_job *tj);
/* A tenant job's key into 'key': 1; 0 for a job without a tenant. */
int sim_job_key(const struct sim_net *net, const struct topo_job *tj, struct ina_job_key *key);

/* attacks.c: the attackers (node.h) of the topology's attacks, in
 * net->nodes at their hosts; started with the run, stopped with their job;
 * shown every packet between a job's host and a switch as it is sent
 * (net_send, which calls it only when there are attacks); their figures
 * into the report. */
int sim_attacks_build(struct sim_net *net, char *err, size_t errlen);
void sim_attacks_start(struct sim_net *net);
void sim_attacks_step(struct sim_net *net); /* stops those whose job is over */
void sim_attacks_see(struct sim_net *net, int src, int dst, const struct ina_pkt *pkt);
void sim_attacks_report(struct sim_net *net);

#endif
