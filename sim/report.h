/* SPDX-License-Identifier: MIT */
/*
 * ina-sim's report of a run (net.h's struct sim_report): as text for a
 * person, and as JSON (jansson) for scripts. The figures are a pure function
 * of the topology, the configuration and the seed; only the wall times
 * (what the run cost on this machine) are not, and they are left out when
 * 'wall' is NULL, so two runs' reports can be compared byte for byte.
 */
#ifndef INA_SIM_REPORT_H
#define INA_SIM_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "net.h"

struct sim_wall {
	double build_s; /* sim_net_create: nodes, data, ring models */
	double run_s;	/* sim_net_run */
	double ring_s;	/* the ring models (part of build_s) */
};

void sim_report_text(const struct topology *t, const struct sim_config *cfg,
		     const struct sim_report *rep, const struct sim_wall *wall, FILE *f);

/* A new JSON object (the caller owns it), or NULL when out of memory. */
json_t *sim_report_json(const struct topology *t, const struct sim_config *cfg,
			const struct sim_report *rep, const struct sim_wall *wall);

#endif
