/* SPDX-License-Identifier: MIT */
/*
 * The switch on several cores: K pipeline partitions (pipeline.h, part_index
 * and part_count) on EAL lcores, each with its own port and its own pipeline,
 * and no shared writes on the hot path. Lane l of every job belongs to
 * partition l % K.
 *
 * Each partition polls its own port (on a NIC: its own rx/tx queue, with RSS
 * or a flow rule steering by lane; on virtual devices: its own ethdev). What
 * arrives where it does not belong moves through single-producer,
 * single-consumer rte_rings, one per ordered pair of partitions:
 *   - DATA for a lane of partition q goes to q (software steering: on a NIC
 *     that steers by lane, this ring stays empty);
 *   - every other packet goes to partition 0, the sequencer. For JOIN, FIN and
 *     LEAVE it first hands a copy to every other partition (a control ring
 *     per partition), then processes and answers the original; the others
 *     process the copies quietly before their own DATA, so all job tables
 *     agree. Partition 0 alone expires jobs by time and sends "free job J"
 *     down the same control rings.
 * Packets cross lcores, so the ports' pools must be safe to free into from
 * any lcore (the dpdk port's mempools are). An idle lcore backs off: after
 * 64 empty polls rte_pause(), then sleeps growing to about 50 us.
 *
 * Built only with DPDK (lcores_dpdk.c, library ina_switch_lcores). This header
 * includes no DPDK header.
 */
#ifndef INA_SWITCH_LCORES_H
#define INA_SWITCH_LCORES_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ina/port.h"
#include "ina/port_dpdk.h"
#include "pipeline.h"

#define SWITCH_LCORES_MAX 16

struct switch_lcores;

struct switch_lcores_config {
	uint16_t nb_parts; /* K, 1..SWITCH_LCORES_MAX */
	/* EAL lcore that runs partition p. Partitions that share an lcore run
	 * in turn on it (one lcore can run them all). */
	unsigned lcore[SWITCH_LCORES_MAX];
	/* Partition p's port, polled by its lcore only; the caller opens and
	 * closes it. Partition p's pipeline allocates from port[p]->pool. */
	struct ina_port *port[SWITCH_LCORES_MAX];
	/* Every partition's pipeline; pool, part_index, part_count are set here. */
	struct pipeline_config pipe;
	unsigned ring_size;    /* entries of each ring (power of 2) */
	uint64_t tick_ns;      /* partition 0 ticks this often */
	unsigned idle_polls;   /* empty polls before backing off */
	uint64_t max_sleep_ns; /* longest idle sleep */
	/* Snapshots for a monitor (ina-switch --metrics): partition 0's lcore
	 * calls snap_wanted() once per poll; when it returns non-zero, every
	 * partition publishes a snapshot of its counters (as for 'dump' of
	 * switch_lcores_run), and once all have, partition 0's lcore calls
	 * snap_ready(), which reads them with switch_lcores_snapshot() and
	 * partition 0's pipeline, and returns 0, or -1 to be called again
	 * at the next poll. NULL: none. */
	int (*snap_wanted)(void *arg);
	int (*snap_ready)(const struct switch_lcores *sl, void *arg);
	void *snap_arg;
};

/* Defaults: 1 partition on the main lcore, rings of 1024, 1 ms ticks, back
 * off after 64 empty polls, sleeps up to 50 us, pipeline_config_init().
 * Ports must still be set. After EAL init. */
void switch_lcores_config_init(struct switch_lcores_config *cfg);

/*
 * Puts partition 0 on the main lcore and partition p on EAL's p-th worker
 * lcore; with fewer lcores than partitions, they wrap around and share (run
 * in turn). Returns how many distinct lcores are used. After EAL init.
 */
unsigned switch_lcores_spread(struct switch_lcores_config *cfg);

/* One partition's own counters (besides its pipeline's and port's). */
struct switch_lcore_stats {
	uint64_t polls, idle_polls, sleeps;
	uint64_t rx_pkts;	/* from its own port */
	uint64_t tx_pkts;	/* handed to its own port */
	uint64_t steered_out;	/* to another partition's ring */
	uint64_t steered_in;	/* from other partitions' rings */
	uint64_t steer_drop;	/* a ring to another partition was full */
	uint64_t ctl_copies;	/* 0: copies sent; others: copies processed */
	uint64_t ctl_drop;	/* 0: control packets dropped (no room or no
					 * buffer for a copy; the worker resends) */
	uint64_t ctl_unauth;	/* 0, tenant mode: control packets whose tag
					 * failed, not copied (partition 0's pipeline
					 * drops them: auth_fail) */
	uint64_t jobs_followed; /* others: jobs freed on 0's word */
	uint64_t first_work_ns; /* time of the first poll that did work */
	uint64_t last_work_ns;	/* and of the last */
};

/*
 * Creates the pipelines and rings. Returns NULL with a message in 'err' (bad
 * config, an lcore EAL does not have, no memory). EAL must be up.
 */
struct switch_lcores *switch_lcores_create(const struct switch_lcores_config *cfg, char *err,
					   size_t err_size);

/*
 * Runs every partition until '*stop' becomes non-zero: launches the lcores
 * other than the calling one (rte_eal_remote_launch) and runs the calling
 * lcore's partitions, if any, itself. Must be called on the main lcore.
 * When 'dump' is not NULL and '*dump' becomes non-zero, partition 0 clears it,
 * every partition publishes a snapshot of its counters, and partition 0's
 * lcore prints them (switch_lcores_print) to stdout. Returns 0 once every
 * lcore has stopped, or -errno if one could not be launched (the others are
 * stopped first).
 */
int switch_lcores_run(struct switch_lcores *sl, volatile sig_atomic_t *stop,
		      volatile sig_atomic_t *dump);

/* Partition p's snapshot: valid in snap_ready() (switch_lcores_config). */
struct switch_lcores_snap {
	unsigned lcore;
	uint32_t free_slots;
	const struct switch_lcore_stats *lc;
	const struct pipeline_stats *pipe;
	const struct ina_port_stats *port;
	const struct ina_port_dpdk_neigh_stats *neigh;
};
void switch_lcores_snapshot(const struct switch_lcores *sl, uint16_t p,
			    struct switch_lcores_snap *out);

/* Prints per-partition lines and the pipeline counters added over the
 * partitions, then partition 0's job table. Call when run() has returned
 * (during run, set 'dump' instead). */
void switch_lcores_print(const struct switch_lcores *sl, FILE *f);

/* Partition p's pipeline, and its lcore counters (read after run()). */
const struct pipeline *switch_lcores_pipeline(const struct switch_lcores *sl, uint16_t p);
const struct switch_lcore_stats *switch_lcores_stats(const struct switch_lcores *sl, uint16_t p);
/* Pipeline counters added over the partitions. */
void switch_lcores_sum(const struct switch_lcores *sl, struct pipeline_stats *sum);

/* Frees pipelines and rings, and packets still in the rings. Accepts NULL.
 * The ports stay open: they are the caller's. */
void switch_lcores_destroy(struct switch_lcores *sl);

#endif
