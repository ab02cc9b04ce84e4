/* SPDX-License-Identifier: MIT */
/*
 * Tree routing (route.h): parents and up links from the topology, depths,
 * and next hops found by climbing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "route.h"

void
sim_route_fini(struct sim_route *r)
{
	free(r->up_node);
	free(r->up_link);
	free(r->up_dir);
	free(r->depth);
	r->up_node = r->up_link = r->depth = NULL;
	r->up_dir = NULL;
}

int
sim_route_init(struct sim_route *r, const struct topology *t, char *err, size_t errlen)
{
	uint32_t n = t->nb_nodes;

	r->nb_nodes = n;
	r->up_node = malloc(n * sizeof(int));
	r->up_link = malloc(n * sizeof(int));
	r->up_dir = malloc(n * sizeof(uint32_t));
	r->depth = malloc(n * sizeof(int));
	if (!r->up_node || !r->up_link || !r->up_dir || !r->depth) {
		sim_route_fini(r);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct topo_node *nd = &t->nodes[i];

		r->up_node[i] = nd->kind == TOPO_HOST ? nd->attach : nd->parent;
		r->up_link[i] = -1;
		r->depth[i] = -1;
	}
	for (uint32_t k = 0; k < t->nb_links; k++) {
		int a = t->links[k].a, b = t->links[k].b;

		if (a < 0 || b < 0 || (uint32_t)a >= n || (uint32_t)b >= n)
			continue;
		if (r->up_node[a] == b && r->up_link[a] < 0) {
			r->up_link[a] = (int)k;
			r->up_dir[a] = 2 * k;
		} else if (r->up_node[b] == a && r->up_link[b] < 0) {
			r->up_link[b] = (int)k;
			r->up_dir[b] = 2 * k + 1;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		int d = 0, x = (int)i;

		if (r->up_node[i] >= 0 && r->up_link[i] < 0) {
			snprintf(err, errlen, "%s: no link to %s, the %s it hangs off",
				 t->nodes[i].name, t->nodes[r->up_node[i]].name,
				 t->nodes[i].kind == TOPO_HOST ? "switch" : "parent");
			sim_route_fini(r);
			return -EINVAL;
		}
		while (r->up_node[x] >= 0 && d <= (int)n) {
			x = r->up_node[x];
			d++;
		}
		if (d > (int)n) {
			snprintf(err, errlen, "%s: its parents form a cycle", t->nodes[i].name);
			sim_route_fini(r);
			return -EINVAL;
		}
		r->depth[i] = d;
	}
	return 0;
}

int
sim_route_next(const struct sim_route *r, int at, int dst, uint32_t *dir)
{
	int x = dst;

	if (at == dst)
		return -1;
	/* Is 'at' above 'dst'? Then go down towards it. */
	while (x >= 0 && r->depth[x] > r->depth[at] + 1)
		x = r->up_node[x];
	if (x >= 0 && r->depth[x] == r->depth[at] + 1 && r->up_node[x] == at) {
		*dir = sim_route_reverse(r->up_dir[x]);
		return x;
	}
	if (r->up_node[at] < 0)
		return -1;
	*dir = r->up_dir[at];
	return r->up_node[at];
}

int
sim_route_path(const struct sim_route *r, int src, int dst, uint32_t *dirs, int max)
{
	int n = 0, at = src;

	while (at != dst) {
		if (n == max)
			return -1;
		at = sim_route_next(r, at, dst, &dirs[n]);
		if (at < 0)
			return -1;
		n++;
	}
	return n;
}
