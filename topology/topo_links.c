/* SPDX-License-Identifier: MIT */
/* A topology's links: their ends, their rates, latencies, losses and MTUs
 * with the defaults, and the uplinks as a linked acyclic tree (topo_ctx.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_ctx.h"
#include "topo_units.h"

/* ------------------------------------------------------------------- links */

/* One shaping field: the link's own, else the file's default. */
static const char *
pick(const char *own, const char *def, int i, const char *key, char *field, size_t size)
{
	if (own) {
		snprintf(field, size, "links[%d].%s", i, key);
		return own;
	}
	snprintf(field, size, "defaults.%s", key);
	return def;
}

static int
cmp_edge(const void *x, const void *y)
{
	const struct edge *a = x, *b = y;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	if (a->hi != b->hi)
		return a->hi < b->hi ? -1 : 1;
	return a->link < b->link ? -1 : a->link > b->link;
}

/* The link between nodes a and b, or NULL (c->edges must be built). */
const struct topo_link *
topo_link_between(const struct ctx *c, int a, int b)
{
	struct edge key = { a < b ? a : b, a < b ? b : a, 0 };
	size_t lo = 0, hi = c->t->nb_links;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct edge *e = &c->edges[mid];

		if (e->lo == key.lo && e->hi == key.hi)
			return &c->t->links[e->link];
		if (e->lo < key.lo || (e->lo == key.lo && e->hi < key.hi))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Ends of every link, by name, oriented; the same pair never twice. */
static int
link_ends(struct ctx *c)
{
	struct raw_topology *r = c->raw;
	struct topology *t = c->t;
	char field[128], entry[64];

	for (uint32_t i = 0; i < r->links_count; i++) {
		struct raw_link *rl = &r->links[i];
		struct topo_link *l = &t->links[i];
		int ends[2];

		topo_pathf(entry, sizeof(entry), "links[%u]", i);
		l->line = topo_line_of(c, entry, NULL);
		for (int k = 0; k < 2; k++) {
			topo_pathf(field, sizeof(field), "links[%u].endpoints[%d]", i, k);
			ends[k] = topo_find_node(c, rl->endpoints[k]);
			if (ends[k] < 0)
				return topo_fail(c, topo_line_of(c, field, entry), field,
						 "no host or switch called '%s'", rl->endpoints[k]);
		}
		topo_pathf(field, sizeof(field), "links[%u].endpoints", i);
		if (ends[0] == ends[1])
			return topo_fail(c, topo_line_of(c, field, entry), field,
					 "'%s' linked to itself", rl->endpoints[0]);
		if (t->nodes[ends[0]].kind == TOPO_HOST && t->nodes[ends[1]].kind == TOPO_HOST)
			return topo_fail(c, topo_line_of(c, field, entry), field,
					 "'%s' and '%s' are both hosts: a host links to a switch",
					 rl->endpoints[0], rl->endpoints[1]);
		/* A host is 'a'; between switches, a child is 'a' and its uplink 'b'. */
		if (t->nodes[ends[1]].kind == TOPO_HOST || t->nodes[ends[1]].parent == ends[0]) {
			l->a = ends[1];
			l->b = ends[0];
		} else {
			l->a = ends[0];
			l->b = ends[1];
		}
		c->edges[i].lo = l->a < l->b ? l->a : l->b;
		c->edges[i].hi = l->a < l->b ? l->b : l->a;
		c->edges[i].link = i;
		t->nb_links = i + 1;
	}
	qsort(c->edges, t->nb_links, sizeof(*c->edges), cmp_edge);
	for (uint32_t k = 1; k < t->nb_links; k++) {
		const struct edge *e = &c->edges[k], *prev = &c->edges[k - 1];
		uint32_t i = e->link;

		if (e->lo != prev->lo || e->hi != prev->hi)
			continue;
		/* Equal pairs sort by link index: 'prev' came first in the file. */
		topo_pathf(field, sizeof(field), "links[%u].endpoints", i);
		topo_pathf(entry, sizeof(entry), "links[%u]", i);
		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "'%s' and '%s' are already linked by links[%u] (line %d)",
				 r->links[i].endpoints[0], r->links[i].endpoints[1], prev->link,
				 t->links[prev->link].line);
	}
	return 0;
}

int
topo_build_links(struct ctx *c)
{
	struct raw_topology *r = c->raw;
	struct topology *t = c->t;
	struct raw_link_opts none = { 0 }, *d = r->defaults ? r->defaults : &none;
	int *host_link = NULL;
	char field[128], entry[64];

	if (r->links_count > TOPO_MAX_LINKS)
		return topo_fail(c, topo_line_of(c, "links", NULL), "links", "%u links: at most %d",
				 r->links_count, TOPO_MAX_LINKS);
	t->links = calloc(r->links_count, sizeof(*t->links));
	c->edges = calloc(r->links_count, sizeof(*c->edges));
	host_link = malloc(t->nb_nodes * sizeof(*host_link));
	if (!t->links || !c->edges || !host_link) {
		free(host_link);
		return topo_fail(c, 1, "", "out of memory");
	}
	if (link_ends(c) < 0)
		goto err;
	for (uint32_t i = 0; i < t->nb_nodes; i++)
		host_link[i] = -1;
	for (uint32_t i = 0; i < r->links_count; i++) {
		struct raw_link *rl = &r->links[i];
		struct topo_link *l = &t->links[i];
		const char *s;
		uint64_t v;

		topo_pathf(entry, sizeof(entry), "links[%u]", i);
		topo_pathf(field, sizeof(field), "links[%u].endpoints", i);
		if (t->nodes[l->a].kind == TOPO_HOST) {
			if (host_link[l->a] >= 0) {
				topo_fail(
					c, topo_line_of(c, field, entry), field,
					"host '%s' already has a link (links[%d], line %d): a host has "
					"exactly one",
					t->nodes[l->a].name, host_link[l->a],
					t->links[host_link[l->a]].line);
				goto err;
			}
			if (t->nodes[l->b].role == TOPO_ROLE_REPLICA) {
				topo_fail(
					c, topo_line_of(c, field, entry), field,
					"host '%s' links to replica '%s': link it to the switch the "
					"replica stands by for",
					t->nodes[l->a].name, t->nodes[l->b].name);
				goto err;
			}
			host_link[l->a] = (int)i;
			t->nodes[l->a].attach = l->b;
		}
		s = pick(rl->o.bandwidth, d->bandwidth, (int)i, "bandwidth", field, sizeof(field));
		if (s) {
			int ret = topo_parse_rate(s, &l->bandwidth_bps);

			if (ret == -EINVAL) {
				topo_fail(
					c, topo_line_of(c, field, entry), field,
					"'%s' is not a rate (e.g. 10Gbit, 100Mbit, 0 for unshaped)",
					s);
				goto err;
			}
			if (ret < 0) {
				topo_fail(c, topo_line_of(c, field, entry), field,
					  "'%s' is out of range (whole bit/s, at most 1Tbit)", s);
				goto err;
			}
		}
		s = pick(rl->o.latency, d->latency, (int)i, "latency", field, sizeof(field));
		if (s) {
			int ret = topo_parse_duration(s, &l->latency_ns);

			if (ret == -EINVAL) {
				topo_fail(c, topo_line_of(c, field, entry), field,
					  "'%s' is not a duration (e.g. 50us, 1ms, 0)", s);
				goto err;
			}
			if (ret < 0) {
				topo_fail(c, topo_line_of(c, field, entry), field,
					  "'%s' is out of range (whole ns, at most 10s)", s);
				goto err;
			}
		}
		s = pick(rl->o.loss, d->loss, (int)i, "loss", field, sizeof(field));
		if (s && topo_get_double(c, s, 0, 1, 1, field, entry, &l->loss) < 0)
			goto err;
		l->mtu = DEFAULT_MTU;
		s = pick(rl->o.mtu, d->mtu, (int)i, "mtu", field, sizeof(field));
		if (s) {
			if (topo_get_u64(c, s, 576, 65535, field, entry, &v) < 0)
				goto err;
			l->mtu = (uint32_t)v;
		}
	}
	for (uint32_t i = c->raw->switches_count; i < t->nb_nodes; i++) {
		if (host_link[i] < 0) {
			topo_node_path(c, (int)i, entry, sizeof(entry));
			topo_fail(c, t->nodes[i].line, entry,
				  "host '%s' has no link (it needs one, to a switch)",
				  t->nodes[i].name);
			goto err;
		}
	}
	free(host_link);
	return 0;
err:
	free(host_link);
	return -1;
}

/* Uplinks: each names a linked switch, and following them always ends
 * (each switch is walked once: 1 while on the walk, 2 once known to end). */
int
topo_check_tree(struct ctx *c)
{
	struct topology *t = c->t;
	uint8_t *state = calloc(t->nb_nodes, 1);
	char field[128], entry[64];
	int ret = -1;

	if (!state)
		return topo_fail(c, 1, "", "out of memory");
	for (uint32_t i = 0; i < c->raw->switches_count; i++) {
		int p = t->nodes[i].parent, n;

		topo_pathf(entry, sizeof(entry), "switches[%u]", i);
		topo_pathf(field, sizeof(field), "%s.uplink", entry);
		if (p >= 0 && !topo_link_between(c, (int)i, p)) {
			topo_fail(c, topo_line_of(c, field, entry), field,
				  "no link between '%s' and its uplink '%s' (add one to links)",
				  t->nodes[i].name, t->nodes[p].name);
			goto out;
		}
		for (n = (int)i; n >= 0 && state[n] == 0; n = t->nodes[n].parent)
			state[n] = 1;
		if (n >= 0 && state[n] == 1) {
			topo_pathf(entry, sizeof(entry), "switches[%d]", n);
			topo_pathf(field, sizeof(field), "%s.uplink", entry);
			topo_fail(c, topo_line_of(c, field, entry), field,
				  "uplinks form a cycle through '%s'", t->nodes[n].name);
			goto out;
		}
		for (n = (int)i; n >= 0 && state[n] == 1; n = t->nodes[n].parent)
			state[n] = 2;
	}
	ret = 0;
out:
	free(state);
	return ret;
}
