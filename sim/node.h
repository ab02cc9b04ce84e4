/* SPDX-License-Identifier: MIT */
/*
 * What a node of the simulated network is to net.c, and what net.c offers
 * back. A node is an ops table over its own state: packets addressed to it
 * and its timer go in; it sends packets and asks for wake-ups through the
 * environment net.c gives it (struct sim_node_env), and a host reports to
 * its job through the job's table (struct host_job_ops, job.c): a node calls
 * nothing above it. Two kinds run jobs: a host (host_node.c: a
 * host engine and its workload) and a switch (switch_node.c: one pipeline
 * for the jobs it aggregates). A switch below a job's root (a rack under a
 * spine) is the same kind with the pipeline's uplink configured: what it
 * sends upstream is addressed to its parent (peer.h) and routed like any
 * packet. The third kind, an attacker (attack_node.c), sends forged,
 * replayed and spoofed packets at a job (env->send_from claims another
 * node's address).
 */
#ifndef INA_SIM_NODE_H
#define INA_SIM_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "ina/auth.h"
#include "ina/pkt.h"

struct sim_net;
struct sim_node;
struct sim_job;

struct sim_node_ops {
	const char *kind; /* "host", "switch", "attacker" */
	/* A packet addressed to this node arrived at 'now' from node 'src'
	 * (its 'peer' is src's address, as a port reports a source). The
	 * node owns the packet. */
	void (*rx)(struct sim_node *n, struct ina_pkt *pkt, int src, uint64_t now);
	/* The wake-up asked for with sim_node_wake() is due. */
	void (*wake)(struct sim_node *n, uint64_t now);
	void (*destroy)(struct sim_node *n); /* Accepts NULL. */
};

/* What the network offers its nodes (net.c fills it in). */
struct sim_node_env {
	struct sim_net *net;
	/* Sends 'pkt' from node 'src' to node 'dst' at 'now', along the
	 * tree's path (takes ownership: a packet dropped on the way is freed
	 * and counted). */
	void (*send)(struct sim_net *net, int src, int dst, struct ina_pkt *pkt, uint64_t now);
	/* The same from node 'at' claiming to be node 'src' (a spoofed
	 * source: the receiver sees src's address). */
	void (*send_from)(struct sim_net *net, int at, int src, int dst, struct ina_pkt *pkt,
			  uint64_t now);
	/* Wakes node 'n' at 't' (replaces any earlier request of the node). */
	void (*wake)(struct sim_net *net, struct sim_node *n, uint64_t t);
	struct ina_pkt_pool *pool; /* every node allocates from it */
};

struct sim_node {
	const struct sim_node_ops *ops;
	const struct sim_node_env *env;
	int index;	  /* node index in the topology */
	uint64_t wake_at; /* pending wake-up, UINT64_MAX none */
};

static inline void
sim_node_send(struct sim_node *n, int dst, struct ina_pkt *pkt, uint64_t now)
{
	n->env->send(n->env->net, n->index, dst, pkt, now);
}

static inline void
sim_node_wake(struct sim_node *n, uint64_t t)
{
	n->env->wake(n->env->net, n, t);
}

/* What a host reports to its job (job.c fills it in). */
struct host_job_ops {
	/*
	 * Checks rank 'rank''s result 'out' of round 'round'. The first rank
	 * to end a round is checked against every rank's contribution: bit
	 * for bit against the sum 'contribute' accumulated where the data
	 * allows (synthetic f32, i32), else workload_verify within the
	 * encoding's bound; every other rank must then hold the same bytes,
	 * since the switch sent the same sums to all. 0, or -1 with a
	 * sentence in 'msg'.
	 */
	int (*check)(struct sim_job *job, uint16_t rank, uint32_t round, const float *out,
		     char *msg, size_t msglen);
	/* Rank 'rank' generated 'in', its input of round 'round' (before
	 * sending any of it): an exact job adds it to the round's expected
	 * sum. 0, or -1 with a sentence in 'msg'. */
	int (*contribute)(struct sim_job *job, uint16_t rank, uint32_t round, const float *in,
			  char *msg, size_t msglen);
	/* Round 'round' ended on rank 'rank' at 'now' with a right sum, or the
	 * job failed with 'msg'. */
	void (*round_done)(struct sim_job *job, uint16_t rank, uint32_t round, uint64_t now);
	void (*fail)(struct sim_job *job, uint64_t now, const char *msg);
	/* Rank 'rank' moved to a new engine phase (joined, closed). These
	 * calls only record: net.c acts on them between events, never inside
	 * a node's call. */
	void (*phase)(struct sim_job *job, uint16_t rank, int phase, uint64_t now);
};

/* The kinds of node. NULL with errno set. */
struct host_node_config {
	int index;	  /* node index */
	int switch_index; /* node index of the host's switch */
	struct sim_job *job;
	const struct host_job_ops *job_ops;
	struct workload *workload;	    /* the job's (shared by its hosts) */
	uint16_t rank, world;		    /* in the job (its data, its checks) */
	uint16_t switch_rank, switch_world; /* the engine's, on its switch
					 * (tiers.h): rank and world on one */
	uint16_t lanes, block_size;
	uint8_t weight; /* the job's weight in a fair share (0: 1) */
	uint8_t encoding;
	uint32_t job_id, tensor_len, rounds;
	uint64_t rto_ns; /* first retransmission timeout, 0: the
					 * engine's default */
	uint8_t auth;	 /* tenant mode: tags under 'key', no token */
	struct ina_job_key key;
};
struct sim_node *host_node_create(const struct sim_node_env *env,
				  const struct host_node_config *cfg);
/* The host's engine counters. */
const struct engine_stats *host_node_stats(const struct sim_node *n);
/* Starts joining; starts round 0 (each later round starts when the host's
 * previous one ended, and FIN follows the last, as ina-host runs them). */
void host_node_join(struct sim_node *n, uint64_t now);
void host_node_start(struct sim_node *n, uint64_t now);
/* Stops the host: it drops what it receives and sleeps (its job failed). */
void host_node_stop(struct sim_node *n);

struct pipeline_config;
struct sim_node *switch_node_create(const struct sim_node_env *env, int index,
				    const struct pipeline_config *cfg);
const struct pipeline_stats *switch_node_stats(const struct sim_node *n);

/* An attacker (attack_node.c): what it sends, one of each in turn. */
enum attack_kind {
	ATTACK_FORGE,
	ATTACK_FORGE_SPOOF,
	ATTACK_REPLAY,
	ATTACK_REPLAY_SPOOF,
	ATTACK_IMPERSONATE,
	ATTACK_LEAVE_SPOOF,
	ATTACK_REJOIN,
	ATTACK_JOIN_FLOOD,
	ATTACK_KINDS
};
extern const char *const attack_kind_names[ATTACK_KINDS];

struct attack_node_config {
	int index;	  /* node index */
	int switch_index; /* where its JOIN flood goes: the switch of the
			   * job's rank 0 */
	uint32_t job_id;  /* the target job's wire id */
	uint64_t rate_bps;
	uint32_t frame_overhead; /* bytes a packet gains on the wire, as the
				  * links count them (sim_config) */
	uint64_t seed;
};

struct attack_stats {
	uint64_t sent[ATTACK_KINDS], bytes_sent[ATTACK_KINDS];
	uint64_t bytes_sent_own;	/* of those, from its own address */
	uint64_t pkts_back, bytes_back; /* what reached it */
	uint64_t captured;		/* packets of the job it saw */
	uint64_t no_buffer;		/* packets not made: the pool was empty */
};

struct sim_node *attack_node_create(const struct sim_node_env *env,
				    const struct attack_node_config *cfg);
/* Starts sending at 'now'; stop: sends no more. */
void attack_node_start(struct sim_node *n, uint64_t now);
void attack_node_stop(struct sim_node *n);
/* A packet of the target job that host 'src' sends switch 'dst': the
 * attacker keeps a copy. */
void attack_node_capture(struct sim_node *n, const struct ina_pkt *pkt, int src, int dst);
/* A packet of the target job from switch 'switch_index' to one of its
 * hosts, seen at 'now': a RESULT may set off an impersonation. */
void attack_node_result(struct sim_node *n, const struct ina_pkt *pkt, int switch_index,
			uint64_t now);
const struct attack_stats *attack_node_stats(const struct sim_node *n);

#endif
