/* SPDX-License-Identifier: MIT */
/*
 * Paths through a topology's tree: each host goes up its one link to its
 * switch, each switch up the link to its parent; a packet climbs to the
 * lowest switch above both ends and descends. Links outside the tree (a
 * replica's) carry nothing here. Link directions are numbered 2 * link + 0
 * for a -> b and 2 * link + 1 for b -> a (struct topo_link). Used by the
 * packet simulation (net.c) and the ring model (ring.c) alike, so both load
 * the same links.
 */
#ifndef INA_SIM_ROUTE_H
#define INA_SIM_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "topology.h"

struct sim_route {
	uint32_t nb_nodes;
	int *up_node;	  /* parent (host: its switch), -1 for a root */
	int *up_link;	  /* link to up_node, -1 for a root */
	uint32_t *up_dir; /* the direction of up_link that goes up */
	int *depth;	  /* 0 for a root */
};

/* Builds the tree of 't'. 0, or -EINVAL with a message in 'err' (a host
 * with no link to its switch, a cycle of parents). */
int sim_route_init(struct sim_route *r, const struct topology *t, char *err, size_t errlen);
void sim_route_fini(struct sim_route *r);

/* The link direction that goes the other way. */
static inline uint32_t
sim_route_reverse(uint32_t dir)
{
	return dir ^ 1u;
}

/* The next hop from 'at' towards 'dst': returns the node and writes the link
 * direction to '*dir'; -1 when 'dst' is not reachable in the tree. */
int sim_route_next(const struct sim_route *r, int at, int dst, uint32_t *dir);

/* The link directions from 'src' to 'dst', at most 'max': how many, or -1. */
int sim_route_path(const struct sim_route *r, int src, int dst, uint32_t *dirs, int max);

#endif
