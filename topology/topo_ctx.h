/* SPDX-License-Identifier: MIT */
/*
 * Inside the topology parser: the state of one load (struct ctx) and what
 * its steps share. topology.c loads the text and runs the steps in order:
 * topo_nodes.c (switches, hosts), topo_links.c (links, the uplinks' tree),
 * topo_jobs.c (jobs), topo_attacks.c (attacks); topo_fail.c words their
 * errors. Not an interface for
 * anyone else: topology.h is.
 */
#ifndef INA_TOPO_CTX_H
#define INA_TOPO_CTX_H

#include <stddef.h>
#include <stdint.h>

#include "topo_lines.h"
#include "topo_schema.h"
#include "topology.h"

#define TOPO_MAX_INPUT (16u << 20) /* bytes of YAML */
#define TOPO_MAX_NODES 65536
#define TOPO_MAX_LINKS (2 * TOPO_MAX_NODES)
#define TOPO_MAX_JOBS 1024
#define TOPO_MAX_NAME 32
#define TOPO_MAX_TENANT 31 /* characters of a tenant's name */
#define DEFAULT_SLOTS 1024 /* ina-switch --slots */
#define DEFAULT_MTU 1500
#define DEFAULT_BLOCK 256
#define DEFAULT_LANES 8
#define FRAME_OVERHEAD 28 /* IPv4 + UDP headers around an ina packet */

struct ctx {
	const char *file;
	char *dir; /* folder of the file, for data paths */
	struct topo_lines *lines;
	char *err;
	size_t errlen;
	struct raw_topology *raw;
	struct topology *t;
	int *by_name;	    /* node indices sorted by name */
	struct edge *edges; /* the links by their two ends */
};

/* A link by its ends, lower index first: sorted, they find a link in
 * log time and show the same pair linked twice. */
struct edge {
	int lo, hi;
	uint32_t link;
};

/* topo_fail.c */
/* snprintf for field paths, which are cut short rather than overflow. */
void topo_pathf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Words the error "<file>:<line>: <field>: <what>" into c->err; -1. */
int topo_fail(struct ctx *c, int line, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The line of 'field', else of its entry 'entry', else 1. */
int topo_line_of(const struct ctx *c, const char *field, const char *entry);
/* A whole number in decimal, 'min'..'max'; -1 with the message otherwise. */
int topo_get_u64(struct ctx *c, const char *s, uint64_t min, uint64_t max, const char *field,
		 const char *entry, uint64_t *out);
/* A finite decimal number in [min, max] (or [min, max) if 'open_max'). */
int topo_get_double(struct ctx *c, const char *s, double min, double max, int open_max,
		    const char *field, const char *entry, double *out);

/* topo_nodes.c */
/* 1 if 's' is a node or job name: 1..32 of [A-Za-z0-9._-], not starting
 * with '-' or '.'. */
int topo_name_ok(const char *s);
/* Index of the node called 'name', or -1 (c->by_name must be built). */
int topo_find_node(const struct ctx *c, const char *name);
/* "switches[3]" or "hosts[7]": where node i was written. */
void topo_node_path(const struct ctx *c, int i, char *buf, size_t size);
/* The steps, in order; each 0 or -1 with the error in c->err. */
int topo_build_nodes(struct ctx *c);
int topo_build_switches(struct ctx *c);

/* topo_links.c */
/* The link between nodes 'a' and 'b', or NULL (c->edges must be built). */
const struct topo_link *topo_link_between(const struct ctx *c, int a, int b);
int topo_build_links(struct ctx *c);
int topo_check_tree(struct ctx *c);

/* topo_jobs.c */
int topo_build_jobs(struct ctx *c);

/* topo_attacks.c (after the jobs: an attack names one) */
int topo_build_attacks(struct ctx *c);

#endif
