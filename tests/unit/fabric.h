/* SPDX-License-Identifier: MIT */
/*
 * A deterministic in-process fabric for tests: N host engines and one switch
 * pipeline joined by a virtual network with a virtual clock. Every packet in
 * flight (a fan-out counts once per destination) gets a sequence number, so
 * a test can drop packet k, duplicate some, or deliver in a shuffled order,
 * and replay exactly. No sockets, no threads, no real time.
 *
 * The switch may be split into K lane partitions (fabric_partition): DATA goes
 * to its lane's owner, JOIN/FIN/LEAVE to partition 0 and quietly to the
 * others, as switch_lcores does across lcores, but in one thread and in order.
 *
 * A host may re-open at a new address (fabric_reopen: a new engine, as an
 * application opens a new context); packets to an address no host has are
 * lost.
 *
 * With a replica (an engine config naming FABRIC_REPLICA as its replica) the
 * fabric runs a second pipeline standing by for the first, which sends it
 * every result; fabric_kill_primary() (or kill_primary_seq) then cuts the
 * primary off: everything to and from it is lost from that point on, or for
 * revive_after_ns of virtual time (a primary that only stalls).
 */
#ifndef INA_TEST_FABRIC_H
#define INA_TEST_FABRIC_H

#include <stdint.h>

#include "engine.h"
#include "ina/pkt.h"
#include "pipeline.h"

#define FABRIC_MAX_HOSTS 8
#define FABRIC_MAX_PARTS 4

struct fabric_faults {
	int64_t drop_seq;  /* drop the packet with this sequence number, -1 none */
	double drop_rate;  /* drop each packet with this probability */
	double dup_rate;   /* deliver a copy of each packet with this probability */
	int shuffle;	   /* deliver in-flight packets in random order */
	double delay_rate; /* hold each packet back one more step with this
				 * probability (so some arrive much later) */
	uint64_t seed;
};

struct fabric {
	struct ina_pkt_pool *pool;
	struct pipeline *sw;			  /* the switch, or its partition 0 */
	struct pipeline *parts[FABRIC_MAX_PARTS]; /* parts[0] is sw */
	uint16_t nb_parts;
	/* Called with every packet the switch sends, before fan-out. */
	void (*tap)(void *arg, const struct ina_pkt *pkt);
	void *tap_arg;
	/* Called with every packet the switch receives, before it sees it. */
	void (*tap_in)(void *arg, const struct ina_pkt *pkt);
	struct pipeline *replica; /* NULL unless the hosts have a replica */
	int primary_dead;	  /* everything to and from sw is lost */
	int64_t kill_primary_seq; /* the primary dies when this packet is
					 * put on the wire, -1 never */
	uint64_t revive_after_ns; /* ... and comes back, its state intact,
					 * this long after (0: never): a stall */
	uint64_t killed_at_ns;
	int lose_announce_to; /* the replica's first FAILOVER announcement
					 * to this rank is lost, -1 none */
	uint64_t killed;      /* packets lost to the dead primary */
	struct engine *hosts[FABRIC_MAX_HOSTS];
	/* Host r's address (the 'rank' of fabric_peer()): r, until
	 * fabric_reopen() moves it. A packet to an address no host has is
	 * lost (unreachable). */
	uint8_t addr[FABRIC_MAX_HOSTS];
	uint64_t unreachable;
	struct engine_config ecfg; /* hosts' config (rank 0's), for reopen */
	uint16_t world;
	uint64_t now;
	uint64_t seq; /* packets put on the wire so far */
	uint64_t dropped;
	struct fabric_faults faults;
	int fin_when_done; /* a host sends FIN as soon as its allreduce ends */
	uint8_t sub_log;   /* the cut of fabric_allreduce*()'s rounds
				 * (engine_set_cut on every host), 0 none */
	uint64_t rng;
};

/* Builds a fabric of 'world' hosts joined to job 'job_id' (not yet joined).
 * 'pcfg' and 'ecfg' may be NULL for defaults; pools and peers are filled in.
 * An 'ecfg' whose replica is set (fabric_peer(..., FABRIC_REPLICA)) adds a
 * replica pipeline of config 'pcfg' and makes the switch its primary. */
void fabric_init(struct fabric *f, uint16_t world, uint16_t lanes, uint16_t max_block,
		 uint8_t encoding, const struct pipeline_config *pcfg,
		 const struct engine_config *ecfg);
void fabric_fini(struct fabric *f);

/* Replaces the switch by 'k' partitions of config 'pcfg' (NULL: the default
 * of fabric_init); before fabric_join. */
void fabric_partition(struct fabric *f, uint16_t k, const struct pipeline_config *pcfg);

/*
 * Runs the fabric until every host leaves phase 'phase' or fails, or 'limit_ns'
 * of virtual time passes. Returns 0 when all left the phase without error,
 * else -1.
 */
int fabric_run(struct fabric *f, int phase, uint64_t limit_ns);

/* One step of fabric_run(): every host's packets out, everything in flight
 * delivered, the switch's timers; the clock does not move. Returns how many
 * packets moved. */
unsigned fabric_step(struct fabric *f);

/* Joins every host; 0 or -1. */
int fabric_join(struct fabric *f);

/* One allreduce on every host: ins[r] -> outs[r], cut by f->sub_log. 0 or
 * -1. */
int fabric_allreduce(struct fabric *f, uint32_t tensor_id, float **ins, float **outs, uint32_t n,
		     uint16_t block_size, enum engine_op op);

/* The same, each host with its own input and block size (ins[r] may be
 * const: the engine only reads it). */
int fabric_allreduce_each(struct fabric *f, uint32_t tensor_id, const float *const *ins,
			  float **outs, uint32_t n, const uint16_t *block_sizes, enum engine_op op);
/* One allreduce (tensor 1, sum) of n small integers a host, drawn from
 * 'seed', so that every sum is exact in any order; checked on every host.
 * 0, or -1 after naming the first wrong element on stderr (or a failed
 * allreduce). */
int fabric_round_exact(struct fabric *f, uint32_t seed, uint32_t n, uint16_t block_size);

/* Sends FIN from every host and runs until they closed. 0 or -1. */
int fabric_finish(struct fabric *f);

/* Host r's application opens a new context (as after an error): its
 * engine is replaced by a new one, not joined, that sends from address
 * 'addr' (a fabric_peer() rank no other host has; r: the same address). */
void fabric_reopen(struct fabric *f, uint16_t r, uint8_t addr);

/* From now on everything to and from the primary switch is lost. */
void fabric_kill_primary(struct fabric *f);

/* Peer address of host 'rank', of the switch and of the replica. */
void fabric_peer(struct ina_peer *peer, int rank);
#define FABRIC_SWITCH (-1)
#define FABRIC_REPLICA (-2)

#endif
