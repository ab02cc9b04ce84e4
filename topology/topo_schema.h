/* SPDX-License-Identifier: MIT */
/*
 * The YAML schema of a topology file for libcyaml, and the raw structs it
 * loads into: every scalar as the string written (libcyaml 1.3.1 reads
 * "12abc" as the integer 12 and "010" as 8, so numbers are parsed strictly
 * in topology.c), NULL when not given; then topology.c resolves names, parses
 * units and numbers, applies defaults and checks.
 */
#ifndef INA_TOPO_SCHEMA_H
#define INA_TOPO_SCHEMA_H

#include <cyaml/cyaml.h>
#include <stdint.h>

/* Enumerations: 0 means "not given". */
enum { RAW_ROLE_RACK = 1, RAW_ROLE_SPINE, RAW_ROLE_CORE, RAW_ROLE_REPLICA };
enum { RAW_SHARE_FIRST_COME = 1, RAW_SHARE_FAIR };

struct raw_link_opts { /* a link's shaping, or the file's defaults */
	char *bandwidth;
	char *latency;
	char *loss;
	char *mtu;
};

struct raw_switch {
	char *name;
	int role;
	char *slots;
	char *cores;
	char *uplink;
	char *replica_of;
	int share; /* RAW_SHARE_*, 0 when not given */
	char *share_total;
	char *share_min_slots;
};

struct raw_host {
	char *name;
};

struct raw_link {
	char **endpoints;
	unsigned endpoints_count;
	struct raw_link_opts o;
};

struct raw_synthetic {
	char *density;
	char *seed;
};

struct raw_data {
	struct raw_synthetic *synthetic;
	char *file;
};

struct raw_job {
	char *name;
	char *id;
	char **hosts;
	unsigned hosts_count;
	char *tensor;
	char *rounds;
	char *block;
	char *lanes;
	char *weight;
	int encoding; /* enum ina_encoding (ina/wire.h), 0: not given */
	struct raw_data *data;
	char *tenant;
};

struct raw_attack {
	char *from;
	char *job;
	char *rate;
};

struct raw_topology {
	char *name;
	struct raw_link_opts *defaults;
	struct raw_switch *switches;
	unsigned switches_count;
	struct raw_host *hosts;
	unsigned hosts_count;
	struct raw_link *links;
	unsigned links_count;
	struct raw_job *jobs;
	unsigned jobs_count;
	struct raw_attack *attacks;
	unsigned attacks_count;
};

extern const cyaml_schema_value_t topo_schema;

#endif
