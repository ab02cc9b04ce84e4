/* SPDX-License-Identifier: MIT */
/*
 * A topology file in memory: hosts, switches, the links between them and the
 * jobs to run, as topologies/README.md describes the YAML. topology.c reads
 * and validates a file (libcyaml for the schema, then the checks a schema
 * cannot state: names, links, the switch tree); ina-testbed plays the result
 * in network namespaces and ina-sim simulates it. Everything here is expanded:
 * a file's shorthand (counts, generated names) is gone by the time a caller
 * sees the struct, and every reference is an index.
 */
#ifndef INA_TOPOLOGY_H
#define INA_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum topo_node_kind {
	TOPO_HOST,
	TOPO_SWITCH,
};

/* What a switch does in the tree. */
enum topo_role {
	TOPO_ROLE_RACK,	   /* aggregates hosts (a top-of-rack switch) */
	TOPO_ROLE_SPINE,   /* aggregates switches below it */
	TOPO_ROLE_CORE,	   /* the root of a three-tier fabric */
	TOPO_ROLE_REPLICA, /* stands by for the switch 'replica_of' */
};

enum topo_share {
	TOPO_SHARE_UNSET = 0,  /* ina-switch's default, first-come; the jobs
				 * through the switch must fit its slots */
	TOPO_SHARE_FIRST_COME, /* said: jobs may ask more than the slots */
	TOPO_SHARE_FAIR,
};

struct topo_node {
	char *name; /* unique among all nodes */
	enum topo_node_kind kind;
	int line; /* line of its entry in the file, for errors */
	/* Switches only. */
	enum topo_role role;
	uint32_t slots;		  /* slot pool (default: ina-switch's) */
	uint16_t cores;		  /* lcores (default 1) */
	int parent;		  /* node index of the switch it aggregates
					 * into, -1 for a root */
	int replica_of;		  /* TOPO_ROLE_REPLICA: node index, else -1 */
	enum topo_share share;	  /* how jobs share its slots (ina-switch
					 * --share); TOPO_SHARE_UNSET: not said,
					 * and the slots must hold every job */
	uint16_t share_total;	  /* --share-total (0: not given) */
	uint32_t share_min_slots; /* --share-min-slots (0: not given) */
	/* Hosts only: node index of the switch its one link goes to. */
	int attach;
};

struct topo_link {
	int a, b;		/* node indices; a host is always 'a', and
					 * of an uplink the child ('b' above it) */
	uint64_t bandwidth_bps; /* bits per second; 0: unshaped */
	uint64_t latency_ns;	/* one way */
	double loss;		/* drop rate each way, [0, 1) */
	uint32_t mtu;		/* bytes (default 1500) */
	int line;
};

enum topo_data_kind {
	TOPO_DATA_SYNTHETIC, /* generated: 'density' non-zero, from 'seed' */
	TOPO_DATA_FILE,	     /* a gradient .npy file ('path') */
};

struct topo_job {
	char *name;
	uint32_t job_id; /* default: 1 + its index */
	int *hosts;	 /* node indices, rank order */
	uint16_t nb_hosts;
	int root;	     /* node index of the switch at the top of the
					 * job's tree (computed) */
	uint32_t tensor_len; /* elements */
	uint32_t rounds;
	uint16_t block_size; /* B (default 256) */
	uint16_t lanes;	     /* (default 8) */
	uint8_t weight;	     /* in a fair share (ina-host --weight;
					 * default 0: 1) */
	uint8_t encoding;    /* enum ina_encoding (default f32) */
	enum topo_data_kind data;
	double density; /* synthetic: fraction of non-zero blocks */
	uint64_t seed;
	char *path;	      /* file: relative paths are taken from the
					 * topology file's folder (topology_load
					 * stores them joined to it: open as is) */
	char *tenant;	      /* the tenant it runs as (tenant mode, ina-sim
					 * only), NULL: token mode */
	uint8_t tenant_index; /* 1..255, the tenants numbered by their first
					 * job in file order; 0: no tenant. The wire
					 * id is tenant_index << 24 | job_id */
	int line;
};

/* An attack (ina-sim only): host 'host', in no job, sees every packet of
 * job 'job' on its way to the job's switches (an on-path attacker) and sends
 * them forged, replayed and spoofed packets and a JOIN flood at 'rate_bps'
 * (topologies/README.md, "Attacks"). */
struct topo_attack {
	int host;	   /* node index */
	uint32_t job;	   /* job index */
	uint64_t rate_bps; /* default: its link's bandwidth (1 Gbit/s when
				 * the link is unshaped) */
	int line;
};

struct topology {
	char *name;
	char *file; /* the path it was read from */
	struct topo_node *nodes;
	uint32_t nb_nodes;
	struct topo_link *links;
	uint32_t nb_links;
	struct topo_job *jobs;
	uint32_t nb_jobs;
	struct topo_attack *attacks;
	uint32_t nb_attacks;
};

/*
 * Reads and validates a topology file. On error returns NULL and writes one
 * line to 'err' naming the file, the line and the field ("rack.yaml:12:
 * links[3].bandwidth: '10Gbps' is not a rate (e.g. 10Gbit, 100Mbit)").
 */
struct topology *topology_load(const char *path, char *err, size_t errlen);

/* The same from a buffer; 'name' stands for the file in messages and
 * relative data paths are taken from the working directory. */
struct topology *topology_parse(const char *yaml, size_t len, const char *name, char *err,
				size_t errlen);

void topology_free(struct topology *t); /* Accepts NULL. */

/* Index of the node called 'name', or -1. */
int topology_find(const struct topology *t, const char *name);

/* The link between nodes a and b (either order), or NULL. */
const struct topo_link *topology_link(const struct topology *t, int a, int b);

/* A summary for `ina-testbed check`: nodes, links, jobs, each job's tree. */
void topology_print(const struct topology *t, FILE *f);

/* A switch role's name as the topology file writes it ("rack", "spine",
 * "core", "replica"), "?" for none of them. */
const char *topology_role_name(enum topo_role r);

#endif
