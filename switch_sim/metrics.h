/* SPDX-License-Identifier: MIT */
/*
 * The switch's counters as Prometheus metrics: a snapshot of everything the
 * SIGUSR1 dump prints (the pipeline's counters, added over the partitions;
 * each partition's port and lcore counters; the job table) and its text in
 * the Prometheus exposition format, version 0.0.4 (metrics.c). The
 * formatting is pure: the snapshot in, text out, no clock, no lock, no
 * pipeline. The data path fills a snapshot where it may read its own state
 * (metrics_http.h says when); the HTTP side formats a copy.
 *
 * Names: ina_switch_*; counters end in _total. Drops have one family with
 * a label reason="..." (the wire's reasons and the pipeline's); per-job
 * gauges carry job="ID"; port and lcore counters of a switch on several
 * lcores carry partition="P" (and lcore="L" for the lcore's own).
 */
#ifndef INA_SWITCH_METRICS_H
#define INA_SWITCH_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "ina/port.h"
#include "ina/port_dpdk.h" /* its counter structs only; no DPDK header */
#include "lcores.h"
#include "pipeline.h"

#define METRICS_PARTS_MAX SWITCH_LCORES_MAX

/* One partition (one pipeline loop): its port's counters, and on several
 * lcores its lcore's. */
struct metrics_part {
	unsigned lcore;	     /* the EAL lcore that runs it */
	uint32_t slots_free; /* its pipeline's slots not reserved */
	struct ina_port_stats port;
	/* A dpdk port's ARP, ICMP and classification counters, when the
	 * snapshot's has_neigh. */
	struct ina_port_dpdk_neigh_stats neigh;
	struct switch_lcore_stats lc; /* when the snapshot's nb_parts > 1 */
};

struct metrics_snapshot {
	const char *transport; /* the port's type: "udp", "dpdk" */
	const char *role;      /* "switch", "host_aggregator", "primary",
					 * "replica" or "rack" */
	double start_time_s;   /* the switch's start, Unix seconds */
	uint16_t nb_parts;     /* 1: one loop (no partition label) */
	uint8_t has_neigh;     /* the port is a dpdk port */
	uint32_t slots;	       /* slots of each partition's pool */
	uint16_t max_jobs;
	struct pipeline_stats pipe; /* added over the partitions */
	struct metrics_part part[METRICS_PARTS_MAX];
	uint16_t nb_jobs;		/* entries of 'jobs' */
	uint16_t jobs_cap;		/* room in 'jobs' (>= max_jobs) */
	struct pipeline_job_info *jobs; /* partition 0's job table */
};

/*
 * Writes the snapshot as Prometheus text (format 0.0.4): for every family a
 * "# HELP" and a "# TYPE" line, then its samples "name{labels} value", every
 * line ending in '\n'. Every counter and drop reason is written, zero or
 * not, so that a rate over a scrape interval needs no missing series.
 * Returns 0, or -1 when 'f' reports an error.
 */
int metrics_write(const struct metrics_snapshot *s, FILE *f);

/* The content type of that text. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
