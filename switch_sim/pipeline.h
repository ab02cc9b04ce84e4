/* SPDX-License-Identifier: MIT */
/*
 * The switch's aggregation pipeline: a model of a programmable switch's data
 * plane. It admits jobs into a slot pool preallocated at creation, runs the
 * lane protocol of docs/PROTOCOL.md (look-ahead next pointers, completion by
 * count, two slot versions with shadow copies, WAIT answers, FIN and linger,
 * LEAVE) and counts every packet it drops, by reason.
 *
 * It is a pure state machine: packets and the current time go in, packets come
 * out. It opens no socket, reads no clock and keeps no global state, so the
 * same code runs behind any port, under pcap replay, in the simulator and in
 * unit tests driven packet by packet. It allocates nothing after creation.
 *
 * Partitions (switch_lcores.h runs one per lcore): a pipeline created with
 * part_count K > 1 and part_index P owns the lanes l with l % K == P of every
 * job; lane l lives in slot base + l / K, where base is this partition's
 * first slot for the job (each partition reserves ceil(L/K) slots). DATA for
 * another partition's lane is dropped (other_partition). JOIN, FIN and LEAVE
 * are not lane-bound: every partition must see them, in the same order, so
 * that the job tables agree. Partition 0 answers them (pipeline_rx_burst);
 * the others take them with pipeline_rx_quiet(). Only partition 0 frees jobs
 * by time (pipeline_tick_freed); the others follow with pipeline_job_free().
 *
 * Replication (docs/PROTOCOL.md, "Replica and failover"): a primary (config
 * 'replica' set) sends every RESULT as one REPL to its replica instead of to
 * the workers. A replica (config 'primary' set) admits jobs in standby on a
 * JOIN flagged STANDBY, stores each REPL as its lane's last result and sends
 * it on to the workers as a RESULT, drops DATA, and on a worker's FAILOVER
 * takes the job over under a new epoch, its lanes already where the last
 * stored results left them. Neither works with partitions.
 *
 * Hierarchy (docs/PROTOCOL.md, "Hierarchy"): a rack switch (config 'uplink'
 * set) runs each job of 'uplink_jobs' as one worker of the same job on the
 * spine at 'uplink': the first local JOIN goes upstream, a block complete
 * here goes upstream as the rack's DATA, and the spine's RESULT completes the
 * slot and goes down to the local ranks. The spine is an ordinary switch.
 * Not with partitions, nor with replication.
 *
 * Tenants (docs/PROTOCOL.md, "Tenants and tags"): with config 'tenants' set,
 * the first thing done with every packet is to find its tenant (the job id's
 * top byte) and check its tag under the job's key (auth.h); a packet that
 * fails is dropped and counted (auth_fail), never answered. Every packet out
 * is tagged once, a fan-out too, when its bytes are final. Jobs are admitted
 * within their tenant's quotas (jobs, slots, largest weight). Not with
 * replication, a rack's uplink or a host aggregator.
 */
#ifndef INA_PIPELINE_H
#define INA_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "ina/pkt.h"
#include "ina/wire.h"
#include "pipeline_events.h"
#include "share.h"
#include "tenants.h"

struct pipeline;

/* A rack's job: its rank in the spine's job and the spine's world. */
struct pipeline_uplink_job {
	uint32_t job_id;
	uint16_t rank;	/* < world */
	uint16_t world; /* ranks of the spine's job (racks), 1..64 */
};

#define PIPELINE_UPLINK_JOBS 64 /* entries of pipeline_config.uplink_jobs */

struct pipeline_config {
	uint32_t nb_slots;	    /* slots in the pool (--slots) */
	uint16_t slot_elems;	    /* elements one slot sums: the largest B */
	uint32_t max_pkt;	    /* largest packet the switch's port carries:
					 * a job whose largest RESULT would not fit is
					 * refused; 0: not checked */
	uint16_t max_jobs;	    /* jobs admitted at once */
	uint64_t standby_linger_ns; /* the same for a replica's standby job:
					 * at least a worker's timeout, so that a
					 * worker still waiting on a dead primary
					 * can fail over to it after the others
					 * finished */
	uint64_t linger_ns;	    /* after a FIN, free the job when it has been
					 * silent this long (or every rank sent FIN) */
	uint64_t wait_interval_ns;  /* at most one WAIT per slot this often */
	uint64_t job_idle_ns;	    /* free a job silent this long; 0: never */
	uint64_t peer_timeout_ns;   /* a rank silent this long while another
					 * rank waits on it is dead: the job is
					 * aborted and freed; 0: never */
	uint16_t part_index;	    /* this partition, < part_count (default 0) */
	uint16_t part_count;	    /* partitions of the lanes (default 1: all) */
	/* Output packets come from here when an input buffer cannot be reused. */
	struct ina_pkt_pool *pool;
	/* JOIN cookies (PROTOCOL 5.1; ina-switch turns them on): a JOIN that
	 * does not echo the cookie of its source address (nor comes from the
	 * address its rank is bound to) is answered with a header-only ERROR
	 * COOKIE, no larger than itself, and creates nothing. The secret
	 * 'secret' keys the cookies and the reply budget's table; the program
	 * draws it at start-up. */
	uint8_t join_cookie;
	uint8_t secret[16];
	/* Per source address, the ERRORs that answer a JOIN and the shadow
	 * replies: at most 'reply_burst' at once, refilled at 'reply_rate' a
	 * second (default 20000 and 1024; rate 0: no limit); over it, dropped
	 * and counted (rate_limited). */
	uint32_t reply_rate;
	uint32_t reply_burst;
	/* A primary: every RESULT goes as a REPL to this replica (len 0: none). */
	struct ina_peer replica;
	/* A replica: stands jobs by for this primary, takes REPL only from it,
	 * takes a job over on FAILOVER (len 0: not a replica). */
	struct ina_peer primary;
	/* A rack: the spine's address (len 0: not a rack). A JOIN of a job not
	 * in 'uplink_jobs' is refused (UNSUPPORTED), and so is bf16. */
	struct ina_peer uplink;
	/* Sharing the slots between jobs (share.h): first-come (a job gets
	 * the lanes it asks, or is refused) or fair (a job asking more than
	 * its weighted share of the pool is admitted with fewer lanes, a
	 * JOIN_ACK flagged GRANT; below share.min_slots it is refused). */
	struct share_config share;
	/* --share fair, give-back: a JOIN of a new job whose share is taken by
	 * jobs holding more than theirs waits (dropped, join_wait; the worker
	 * resends) while those jobs shrink to their share at a round boundary
	 * (RESULTs flagged RESHAPE); after this long without its share it is
	 * admitted with what is free, or sent on or refused. bsp jobs on one
	 * partition, without replica or uplink, give back; others keep their
	 * lanes. 0: no give-back. */
	uint64_t share_wait_ns;
	/* A host aggregator (ina-switch --host-aggregator): a JOIN of a job
	 * this switch has no slots for (first-come: not its lanes; fair: not
	 * its minimum) is answered with a JOIN_ACK flagged REDIRECT naming
	 * it, instead of ERROR NO_SLOTS. Not for a standby JOIN, nor a rack's
	 * job. IPv4 and UDP port in host order; 0: none. */
	uint32_t host_aggregator_ipv4;
	uint16_t host_aggregator_port;
	/* A host aggregator itself (ina-switch --host-mode): the same
	 * pipeline on a host, where a job is not refused for want of slots
	 * while one row is free: it gets the lanes that fit (a GRANT). */
	uint8_t host_mode;
	uint16_t nb_uplink_jobs;
	struct pipeline_uplink_job uplink_jobs[PIPELINE_UPLINK_JOBS];
	/* Called with each event (pipeline_events.h), with 'event_ctx'; NULL:
	 * none reported. pipeline_log_event() (pipeline_log.h) logs them. */
	pipeline_event_fn on_event;
	void *event_ctx;
	/* Tenant mode (tenants.h; NULL: token mode): kept by the caller, and
	 * unchanged, while the pipeline lives. */
	const struct tenants *tenants;
};

/*
 * Parses "JOB=RANK/WORLD" (ina-switch --uplink-job) into 'uj'. Returns 0, or
 * -1 when malformed or out of range (RANK < WORLD <= 64).
 */
int pipeline_uplink_job_parse(const char *s, struct pipeline_uplink_job *uj);

/* Defaults: 1024 slots of 2048 elements, 64 jobs, 1 s linger (10 s for a
 * standby job), 1 ms WAIT interval, 300 s idle timeout, 8 s peer timeout,
 * one partition, first-come sharing (fair: min 1 slot, no total, give-back
 * waiting up to 2 s). 'pool' must still be set. */
void pipeline_config_init(struct pipeline_config *cfg);

/* Packets the pipeline drops for reasons beyond the wire format's. */
enum pipeline_drop {
	PDROP_UNKNOWN_JOB,   /* no such job (never admitted, or freed) */
	PDROP_NOT_JOINED,    /* data from a rank that has not joined */
	PDROP_NO_MATCH,	     /* neither the current block nor the shadow */
	PDROP_SHAPE,	     /* tensor length or B differ from the slot's */
	PDROP_UNEXPECTED,    /* a type the switch never receives */
	PDROP_NO_BUFFER,     /* no packet buffer for the answer */
	PDROP_AFTER_FIN,     /* data from a rank that already sent FIN */
	PDROP_JOIN_LINGER,   /* JOIN of a new run while the old one lingers */
	PDROP_OTHER_PART,    /* DATA for a lane another partition owns */
	PDROP_ABORTED,	     /* for a job aborted (a dead rank), not yet freed */
	PDROP_STANDBY,	     /* DATA for a job this replica stands by for */
	PDROP_NOT_PRIMARY,   /* REPL from a peer other than the primary */
	PDROP_NOT_STANDBY,   /* REPL or FAILOVER for a job that does not
				 * stand by here (it runs here) */
	PDROP_TAKEN_OVER,    /* REPL or standby JOIN for a job taken over */
	PDROP_UP_STALE,	     /* a rack: a packet from the spine that nothing
				 * waits for (a late or repeated RESULT,
				 * JOIN_ACK or FIN_ACK), or a WAIT */
	PDROP_SSP_SHAPE,     /* ssp: not the lane's one block (block = lane,
				 * next END) */
	PDROP_SSP_AHEAD,     /* ssp: a round S + 2 ahead of a block still
				 * open in its lane (the bound broken) */
	PDROP_SSP_HOLD,	     /* ssp: a round that would reuse a half whose
				 * result a rank may still lack (resent later) */
	PDROP_JOIN_WAIT,     /* --share fair: a JOIN waiting for slots other
				 * jobs give back (the worker resends it) */
	PDROP_WRONG_ADDR,    /* DATA, FIN, LEAVE, KEEPALIVE or FAILOVER from
				 * an address other than the one the rank
				 * was admitted from (bound for the epoch) */
	PDROP_JOIN_UNPROVEN, /* a JOIN without its source's cookie: answered
				  * with a cookie (ERROR COOKIE), nothing kept */
	PDROP_RATE_LIMITED,  /* an ERROR or shadow reply over its source's
				  * budget: not sent */
	PDROP_AUTH,	     /* tenant mode: no such tenant, or a tag that
				  * is not the packet's under its job key */
	PDROP_RANK_MOVED,    /* a JOIN of a rank bound to another address,
				  * without its new address's cookie for the
				  * run (tenant mode, or with cookies): answered
				  * with a cookie (ERROR COOKIE), nothing kept */
	PDROP_TOO_BIG,	     /* DATA of a block whose RESULT, with its cut's
				  * mask and every element, would not fit the
				  * switch's packets: never added, answered
				  * with ERROR UNSUPPORTED (result_too_big) */
	PDROP_MAX,
};

struct pipeline_stats {
	uint64_t rx_pkts;
	uint64_t tx_pkts;	   /* packets out (a fan-out counts once) */
	uint64_t results;	   /* blocks completed and sent to the job */
	uint64_t results_empty;	   /* of which header-only (zero sum) */
	uint64_t results_deferred; /* of which header-only, DEFERRED (under
					 * the result filter's bound) */
	uint64_t result_bytes;	   /* payload bytes of results */
	uint64_t results_partial;  /* ssp: of which closed early, PARTIAL */
	uint64_t ssp_late;	   /* ssp: packets for a closed block from a
					 * rank it lacks, answered, not added */
	uint64_t shadow_replies;   /* retransmissions answered from a shadow */
	uint64_t duplicates;	   /* data for the open block already counted */
	uint64_t waits;		   /* WAIT packets sent */
	uint64_t keepalives;	   /* KEEPALIVEs taken from a joined rank */
	uint64_t saturated;	   /* i32 additions that saturated */
	uint64_t joins, fins, leaves;
	uint64_t jobs_admitted, jobs_refused, jobs_freed, jobs_expired;
	uint64_t jobs_granted;			 /* of the admitted, with fewer lanes than
					 * asked (--share fair, --host-mode) */
	uint64_t jobs_redirected;		 /* JOINs sent to the host aggregator */
	uint64_t reshapes;			 /* jobs told to run on fewer lanes (give-back) */
	uint64_t reshaped;			 /* of which done: every rank moved on, the
					 * slots freed */
	uint64_t jobs_aborted;			 /* a rank fell silent while others waited */
	uint64_t replicated;			 /* primary: RESULTs sent as REPL */
	uint64_t repl_stored;			 /* replica: REPLs stored as a lane's result */
	uint64_t repl_sent;			 /* replica: REPLs sent on as RESULT */
	uint64_t standby_jobs;			 /* replica: jobs admitted in standby */
	uint64_t takeovers;			 /* replica: jobs taken over on FAILOVER */
	uint64_t announce_repeats;		 /* replica: FAILOVER sent again to one rank
					 * (its FAILOVER or old-epoch DATA) */
	uint64_t up_joins;			 /* rack: JOINs sent to the spine */
	uint64_t up_data;			 /* rack: partial sums sent to the spine */
	uint64_t up_resends;			 /* rack: of which resent (a local rank's
					 * retransmission while the spine's
					 * RESULT is outstanding) */
	uint64_t up_bytes;			 /* rack: payload bytes of those */
	uint64_t up_results;			 /* rack: spine RESULTs stored, sent down */
	uint64_t up_fins;			 /* rack: FINs sent to the spine */
	uint64_t up_errors;			 /* rack: spine ERRORs sent down */
	uint64_t up_leaves;			 /* rack: LEAVEs sent to the spine */
	uint64_t drop_wire[INA_WIRE_REASON_MAX]; /* by enum ina_wire_reason */
	uint64_t drop[PDROP_MAX];		 /* by enum pipeline_drop */
};

/*
 * Fits the pipeline's slot to what one packet of a port with
 * 'max_pkt'-byte packets carries in bf16, the smallest element (shrinks the
 * default, unless --slot-elems was given), and sets pipe->max_pkt so that a
 * job whose blocks would not fit in its encoding is refused. 0, or -1 with
 * the reason in 'err'.
 */
int pipeline_config_fit_port(struct pipeline_config *pipe, int slot_elems_set, uint32_t max_pkt,
			     char *err, size_t err_size);

/* Creates a pipeline; NULL with errno set (EINVAL for a bad config). */
struct pipeline *pipeline_create(const struct pipeline_config *cfg);
void pipeline_destroy(struct pipeline *p); /* Accepts NULL. */

/*
 * Processes 'nb_in' packets received at time 'now_ns'. The pipeline takes
 * ownership of every input packet (it frees it or reuses its buffer for an
 * answer). Writes the packets to send to 'out', which must have room for
 * 'nb_in' packets (each input causes at most one output), and returns how
 * many. Output packets name their destination in 'peer' or, for a result
 * fanned out to a job, in 'dsts'/'dst_mask'; 'dsts' stays valid until the
 * next call into the pipeline.
 */
uint16_t pipeline_rx_burst(struct pipeline *p, struct ina_pkt **in, uint16_t nb_in, uint64_t now_ns,
			   struct ina_pkt **out);

/*
 * Shutting down gracefully. pipeline_drain() stops admitting jobs (a JOIN of
 * a new job gets ERROR SHUTDOWN) while the jobs that run may finish
 * (pipeline_nb_jobs() says how many are left). pipeline_shutdown() then
 * aborts every job left: one ERROR SHUTDOWN fanned out to its ranks that
 * have not finished (written to 'out', at most 'max'; the rest on another
 * call; none for a job a replica stands by for), on a rack also a LEAVE to
 * the spine (when there is room), and frees it. 'dsts' of
 * those packets stay valid until the next call into the pipeline.
 */
void pipeline_drain(struct pipeline *p);
uint16_t pipeline_shutdown(struct pipeline *p, struct ina_pkt **out, uint16_t max);

/* Advances time: frees jobs whose linger or idle time ran out. In a
 * partition other than 0, does nothing (partition 0 decides; see below). */
void pipeline_tick(struct pipeline *p, uint64_t now_ns);

/*
 * pipeline_tick() that also writes the ids of the jobs it freed to 'freed'
 * and frees at most 'max' of them (the rest on a later tick). Returns how
 * many. Partition 0 of a partitioned switch forwards these ids, in its
 * sequence of control packets, to the other partitions.
 */
uint16_t pipeline_tick_freed(struct pipeline *p, uint64_t now_ns, uint32_t *freed, uint16_t max);

/*
 * A partition other than 0 follows partition 0: frees job 'job_id' without
 * counting it. The caller's sequencing guarantees it is the same run as the
 * one partition 0 freed. Returns 1 if a job was freed, else 0.
 */
int pipeline_job_free(struct pipeline *p, uint32_t job_id);

/*
 * Processes control packets (JOIN, FIN, LEAVE) that partition 0 answers, in
 * the same order as partition 0, so that this partition's job table follows:
 * no packet comes out, nothing is counted or reported (no event), and every input is freed.
 */
void pipeline_rx_quiet(struct pipeline *p, struct ina_pkt **in, uint16_t nb_in, uint64_t now_ns);

/* Where a received packet goes in a switch of 'part_count' partitions. */
enum pipeline_steer {
	PSTEER_LANE,  /* DATA: to partition *part (its lane's owner) */
	PSTEER_ALL,   /* JOIN, FIN, LEAVE: to partition 0, and quietly to all */
	PSTEER_FIRST, /* anything else: to partition 0 only (KEEPALIVE: it
			 * keeps heard_ns and decides deaths; the rest is
			 * dropped there) */
};

/* Reads only the packet's type and lane bytes; validation is the owner's. */
static inline enum pipeline_steer
pipeline_steer(const struct ina_pkt *pkt, uint16_t part_count, uint16_t *part)
{
	*part = 0;
	if (pkt->len < INA_HDR_SIZE)
		return PSTEER_FIRST;
	switch (pkt->data[1]) {
	case INA_T_DATA:
		*part = (uint16_t)(((uint16_t)pkt->data[14] << 8 | pkt->data[15]) % part_count);
		return PSTEER_LANE;
	case INA_T_JOIN:
	case INA_T_FIN:
	case INA_T_LEAVE:
		return PSTEER_ALL;
	default:
		return PSTEER_FIRST;
	}
}

/*
 * Partition 0 of a switch in tenant mode, before it copies a PSTEER_ALL
 * packet to the other partitions: 1 when the packet's tag is good under its
 * job's key (the check pipeline_rx_burst() makes first), else 0; the packet
 * is left as it was. Copies only authentic control packets, so a forged one
 * costs one partition, not every one (it goes on to partition 0's pipeline,
 * which drops and counts it, auth_fail). Without tenants: always 1.
 */
int pipeline_authentic(struct pipeline *p, struct ina_pkt *pkt);

const struct pipeline_stats *pipeline_stats(const struct pipeline *p);
/* Name of a pipeline drop reason ("no_match"). */
const char *pipeline_drop_name(enum pipeline_drop d);
/* Slots not reserved by any job, and jobs admitted now. */
uint32_t pipeline_free_slots(const struct pipeline *p);
uint16_t pipeline_nb_jobs(const struct pipeline *p);

/* Adds every counter of 'st' to 'sum' (partitions added together). The
 * printing of counters and of the jobs' state is pipeline_dump.h's. */
void pipeline_stats_add(struct pipeline_stats *sum, const struct pipeline_stats *st);

/* One admitted job as a monitor sees it (pipeline_jobs(), for the metrics
 * of metrics.h): what pipeline_dump() prints of it, as numbers. */
enum pipeline_job_state {
	PJOB_RUNNING,	 /* ranks joined, blocks flowing */
	PJOB_LINGERING,	 /* after a FIN, freed once silent */
	PJOB_ABORTED,	 /* a rank died: freed at the next tick */
	PJOB_STANDBY,	 /* a replica standing by for the primary */
	PJOB_TAKEN_OVER, /* a replica's job taken over from the primary */
	PJOB_STATE_MAX,
};

struct pipeline_job_info {
	uint32_t job_id;    /* on the wire (tenant mode: the tenant's index on top) */
	const char *tenant; /* tenant mode: its tenant's name (pipeline_config's
			     * tenants, kept by the caller); else NULL */
	uint32_t epoch;
	uint16_t world;
	uint16_t lanes;	     /* granted */
	uint16_t want_lanes; /* asked in the JOIN */
	uint16_t slots;	     /* this pipeline's slots for it */
	uint8_t ranks_joined;
	uint8_t ranks_finished;
	uint8_t encoding;   /* enum ina_encoding */
	uint8_t ssp;	    /* 0: bsp; S: ssp:S */
	uint8_t weight;	    /* in the fair share (0 counts as 1) */
	uint8_t state;	    /* enum pipeline_job_state */
	uint8_t has_round;  /* 'max_round' is set */
	uint32_t max_round; /* the highest round of any DATA so far */
	uint64_t idle_ns;   /* since the job's last packet, at 'now' */
};

/* Name of a job state ("lingering"). */
const char *pipeline_job_state_name(enum pipeline_job_state s);

/*
 * Writes the jobs admitted now, at most 'max', to 'out' in the order of the
 * job table, their idle time taken at 'now_ns'. Returns how many. Reads the
 * pipeline only: call it where pipeline_dump() could be called (the thread
 * that runs the pipeline). pipeline_jobs.c.
 */
uint16_t pipeline_jobs(const struct pipeline *p, uint64_t now_ns, struct pipeline_job_info *out,
		       uint16_t max);
/* The pipeline's configured job limit (the size 'out' needs) and slots. */
uint16_t pipeline_max_jobs(const struct pipeline *p);
uint32_t pipeline_nb_slots(const struct pipeline *p);

#endif
