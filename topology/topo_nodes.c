/* SPDX-License-Identifier: MIT */
/* A topology's switches and hosts: names checked and sorted, each node's
 * fields, the switches' uplinks, roles and shares (topo_ctx.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_ctx.h"

/* ------------------------------------------------------------------- names */

int
topo_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > TOPO_MAX_NAME || s[0] == '-' || s[0] == '.')
		return 0;
	for (const char *p = s; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return 0;
	}
	return 1;
}

static const struct topology *sort_topo;

static int
cmp_by_name(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	int r = strcmp(sort_topo->nodes[x].name, sort_topo->nodes[y].name);

	return r ? r : (x < y ? -1 : x > y);
}

/* Index of the node called 'name', or -1 (c->by_name must be built). */
int
topo_find_node(const struct ctx *c, const char *name)
{
	size_t lo = 0, hi = c->t->nb_nodes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = strcmp(c->t->nodes[c->by_name[mid]].name, name);

		if (r == 0)
			return c->by_name[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* "switches[3]" or "hosts[7]": where node i was written. */
void
topo_node_path(const struct ctx *c, int i, char *buf, size_t size)
{
	uint32_t nb_sw = c->raw->switches_count;

	if ((uint32_t)i < nb_sw)
		snprintf(buf, size, "switches[%d]", i);
	else
		snprintf(buf, size, "hosts[%u]", (uint32_t)i - nb_sw);
}

/* ------------------------------------------------------------------- nodes */

int
topo_build_nodes(struct ctx *c)
{
	struct raw_topology *r = c->raw;
	struct topology *t = c->t;
	uint64_t n = (uint64_t)r->switches_count + r->hosts_count;
	char field[128], entry[64];

	if (n > TOPO_MAX_NODES)
		return topo_fail(c, topo_line_of(c, "hosts", NULL), "hosts",
				 "%llu nodes: at most %d", (unsigned long long)n, TOPO_MAX_NODES);
	t->nodes = calloc(n, sizeof(*t->nodes));
	c->by_name = calloc(n, sizeof(*c->by_name));
	if (!t->nodes || !c->by_name)
		return topo_fail(c, 1, "", "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		struct topo_node *nd = &t->nodes[i];
		const char *name = i < r->switches_count ? r->switches[i].name
							 : r->hosts[i - r->switches_count].name;

		topo_node_path(c, (int)i, entry, sizeof(entry));
		topo_pathf(field, sizeof(field), "%s.name", entry);
		nd->name = strdup(name);
		if (!nd->name)
			return topo_fail(c, 1, "", "out of memory");
		t->nb_nodes = i + 1;
		nd->kind = i < r->switches_count ? TOPO_SWITCH : TOPO_HOST;
		nd->line = topo_line_of(c, entry, NULL);
		nd->parent = -1;
		nd->replica_of = -1;
		nd->attach = -1;
		if (!topo_name_ok(name))
			return topo_fail(
				c, topo_line_of(c, field, entry), field,
				"'%s' is not a name (1 to %d letters, digits, '-', '_', '.'; "
				"not starting with '-' or '.')",
				name, TOPO_MAX_NAME);
		c->by_name[i] = (int)i;
	}
	sort_topo = t;
	qsort(c->by_name, n, sizeof(*c->by_name), cmp_by_name);
	for (uint32_t i = 1; i < n; i++) {
		int a = c->by_name[i - 1], b = c->by_name[i];
		char other[64];

		if (strcmp(t->nodes[a].name, t->nodes[b].name))
			continue;
		topo_node_path(c, b, entry, sizeof(entry));
		topo_node_path(c, a, other, sizeof(other));
		topo_pathf(field, sizeof(field), "%s.name", entry);
		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "'%s' is already the name of %s (line %d)", t->nodes[b].name,
				 other, t->nodes[a].line);
	}
	return 0;
}

int
topo_build_switches(struct ctx *c)
{
	struct raw_topology *r = c->raw;
	struct topology *t = c->t;
	char field[128], entry[64];

	for (uint32_t i = 0; i < r->switches_count; i++) {
		struct raw_switch *rs = &r->switches[i];
		struct topo_node *nd = &t->nodes[i];
		uint64_t v;

		topo_pathf(entry, sizeof(entry), "switches[%u]", i);
		nd->role = rs->role == RAW_ROLE_SPINE	  ? TOPO_ROLE_SPINE
			   : rs->role == RAW_ROLE_CORE	  ? TOPO_ROLE_CORE
			   : rs->role == RAW_ROLE_REPLICA ? TOPO_ROLE_REPLICA
							  : TOPO_ROLE_RACK;
		nd->slots = DEFAULT_SLOTS;
		nd->cores = 1;
		if (rs->slots) {
			topo_pathf(field, sizeof(field), "%s.slots", entry);
			if (topo_get_u64(c, rs->slots, 1, 1u << 20, field, entry, &v) < 0)
				return -1;
			nd->slots = (uint32_t)v;
		}
		nd->share = rs->share == RAW_SHARE_FAIR		? TOPO_SHARE_FAIR
			    : rs->share == RAW_SHARE_FIRST_COME ? TOPO_SHARE_FIRST_COME
								: TOPO_SHARE_UNSET;
		if (rs->share_total) {
			topo_pathf(field, sizeof(field), "%s.share_total", entry);
			if (topo_get_u64(c, rs->share_total, 0, 4096, field, entry, &v) < 0)
				return -1;
			nd->share_total = (uint16_t)v;
		}
		if (rs->share_min_slots) {
			topo_pathf(field, sizeof(field), "%s.share_min_slots", entry);
			if (topo_get_u64(c, rs->share_min_slots, 1, 1u << 20, field, entry, &v) < 0)
				return -1;
			nd->share_min_slots = (uint32_t)v;
		}
		if ((nd->share_total || nd->share_min_slots) && nd->share != TOPO_SHARE_FAIR) {
			topo_pathf(field, sizeof(field), "%s.share", entry);
			return topo_fail(c, nd->line, field,
					 "share_total and share_min_slots need share: fair");
		}
		if (rs->cores) {
			topo_pathf(field, sizeof(field), "%s.cores", entry);
			if (topo_get_u64(c, rs->cores, 1, 64, field, entry, &v) < 0)
				return -1;
			nd->cores = (uint16_t)v;
		}
		if (rs->uplink) {
			int p = topo_find_node(c, rs->uplink);

			topo_pathf(field, sizeof(field), "%s.uplink", entry);
			if (p < 0)
				return topo_fail(c, topo_line_of(c, field, entry), field,
						 "no switch called '%s'", rs->uplink);
			if (t->nodes[p].kind != TOPO_SWITCH)
				return topo_fail(c, topo_line_of(c, field, entry), field,
						 "'%s' is a host: an uplink goes to a switch",
						 rs->uplink);
			if ((uint32_t)p == i)
				return topo_fail(c, topo_line_of(c, field, entry), field,
						 "'%s' is this switch itself", rs->uplink);
			if (r->switches[p].role == RAW_ROLE_REPLICA)
				return topo_fail(
					c, topo_line_of(c, field, entry), field,
					"'%s' is a replica: uplink to the switch it stands by for",
					rs->uplink);
			nd->parent = p;
		}
		topo_pathf(field, sizeof(field), "%s.replica_of", entry);
		if (rs->replica_of && nd->role != TOPO_ROLE_REPLICA)
			return topo_fail(c, topo_line_of(c, field, entry), field,
					 "only a switch with role replica has replica_of");
		if (nd->role == TOPO_ROLE_REPLICA) {
			int p = rs->replica_of ? topo_find_node(c, rs->replica_of) : -1;

			if (!rs->replica_of)
				return topo_fail(
					c, topo_line_of(c, entry, NULL), field,
					"missing (a replica names the switch it stands by for)");
			if (p < 0 || t->nodes[p].kind != TOPO_SWITCH)
				return topo_fail(c, topo_line_of(c, field, entry), field,
						 "no switch called '%s'", rs->replica_of);
			if ((uint32_t)p == i || t->nodes[p].role == TOPO_ROLE_REPLICA)
				return topo_fail(c, topo_line_of(c, field, entry), field,
						 "'%s' is a replica itself", rs->replica_of);
			nd->replica_of = p;
		}
	}
	return 0;
}
