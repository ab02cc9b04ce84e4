/* SPDX-License-Identifier: MIT */
/*
 * The ina-host JSON report (README, "The report"): totals of the run and one
 * entry per round, written with jansson.
 */
#ifndef INA_REPORT_H
#define INA_REPORT_H

#include <stdint.h>

#include "ina.h"

struct report_round {
	uint32_t round;
	double seconds;
	uint64_t bytes_sent;
	uint64_t bytes_received;
	uint64_t retransmits;
	double density_sent;	  /* blocks sent / blocks of the round (1 when dense) */
	double residual_norm;	  /* L2 norm of this worker's residual after it (0 dense) */
	uint32_t block_size;	  /* B of the round (the planner's choice with --plan) */
	uint32_t sub_block;	  /* b of its cut (PROTOCOL 2.7), B when uncut */
	uint64_t blocks_deferred; /* result blocks that came back DEFERRED */
	uint32_t partition_tag;	  /* the partition map's tag (0: the fixed map) */
	int verified;
	double max_err_ratio;
	uint64_t sum_hash; /* XXH3-64 of the result: equal on every worker */
};

struct report {
	const char *transport; /* the port's type: "udp" or "dpdk" */
	const char *port;      /* the port spec as given */
	const char *workload;  /* "synthetic" or "gradients" */
	const char *encoding;
	uint32_t job;
	uint16_t rank, world, lanes, block_size;
	uint16_t lanes_asked; /* --lanes; 'lanes' is what the switch granted */
	uint32_t rounds;
	uint32_t elements;
	double density;		/* synthetic only, else < 0 */
	const char *sparsifier; /* "off", "topk", "filter", "both" */
	int verified;
	double seconds; /* sum of the rounds' times */
	struct ina_stats stats;
	const struct report_round *per_round;
};

/* Writes 'r' to 'path' as JSON. 0 or -errno. */
int report_write(const char *path, const struct report *r);

#endif
