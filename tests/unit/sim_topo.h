/* SPDX-License-Identifier: MIT */
/*
 * Topologies built in memory for the simulator's tests (no parser needed):
 * a star of hosts on one switch, and racks of hosts under a spine.
 */
#ifndef INA_TEST_SIM_TOPO_H
#define INA_TEST_SIM_TOPO_H

#include <stdint.h>

#include "topology.h"

struct sim_topo_link {
	uint64_t bandwidth_bps, latency_ns;
	double loss;
};

/* 'racks' rack switches (under one spine when racks > 1) with 'per_rack'
 * hosts each; host links 'host', rack uplinks 'up'; one job over every host
 * in rank order. Switch 0 is the spine (or the only rack). */
struct topology *sim_topo_racks(uint16_t racks, uint16_t per_rack, struct sim_topo_link host,
				struct sim_topo_link up);
/* The job's parameters (defaults: 16384 elements, 2 rounds, B 256, 8 lanes,
 * f32, synthetic density 1, data seed 1). */
struct topo_job *sim_topo_job(struct topology *t);
void sim_topo_free(struct topology *t);

#endif
