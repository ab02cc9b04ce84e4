/* SPDX-License-Identifier: MIT */
/*
 * Reads a topology file (topology.h, topologies/README.md): libyaml finds
 * the line of every field (topo_lines.c), libcyaml loads the text against
 * the schema (topo_schema.c), then this file resolves names into indices,
 * parses numbers and units, applies defaults and runs the checks a schema
 * cannot state. The first error found is the one reported, as
 * "<file>:<line>: <field>: <what>".
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cyaml/cyaml.h>

#include "ina/encoding.h"
#include "ina/npy.h"
#include "ina/wire.h"
#include "topo_lines.h"
#include "topo_schema.h"
#include "topo_units.h"
#include "topology.h"

#define TOPO_MAX_INPUT (16u << 20)	/* bytes of YAML */
#define TOPO_MAX_NODES 65536
#define TOPO_MAX_LINKS (2 * TOPO_MAX_NODES)
#define TOPO_MAX_JOBS 1024
#define TOPO_MAX_NAME 32
#define DEFAULT_SLOTS 1024		/* ina-switch --slots */
#define DEFAULT_MTU 1500
#define DEFAULT_BLOCK 256
#define DEFAULT_LANES 8
#define FRAME_OVERHEAD 28		/* IPv4 + UDP headers around an ina packet */

struct ctx {
	const char *file;
	char *dir;			/* folder of the file, for data paths */
	struct topo_lines *lines;
	char *err;
	size_t errlen;
	struct raw_topology *raw;
	struct topology *t;
	int *by_name;			/* node indices sorted by name */
	struct edge *edges;		/* the links by their two ends */
};

/* A link by its ends, lower index first: sorted, they find a link in
 * log time and show the same pair linked twice. */
struct edge {
	int lo, hi;
	uint32_t link;
};

/* ------------------------------------------------------------------ errors */

/* snprintf for field paths, which are cut short rather than overflow. */
static void pathf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
pathf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

static int fail(struct ctx *c, int line, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
fail(struct ctx *c, int line, const char *field, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(c->err, c->errlen, "%s:%d: %s%s%s", c->file, line > 0 ? line : 1, field,
		 field[0] ? ": " : "", what);
	if (!c->errlen)
		return -1;
	/* One line, whatever the file's strings hold. */
	for (char *p = c->err; *p; p++) {
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			*p = '?';
	}
	return -1;
}

/* The line of 'field', else of its entry 'entry', else 1. */
static int
line_of(const struct ctx *c, const char *field, const char *entry)
{
	int line = topo_lines_get(c->lines, field);

	if (!line && entry)
		line = topo_lines_get(c->lines, entry);
	return line ? line : 1;
}

/* libcyaml reports an error as lines of text at CYAML_LOG_ERROR: the
 * message, then a backtrace of "in mapping field 'x' (line: L, column: C)"
 * frames, innermost first. They are kept here and turned into one line. */
struct cy_log {
	char text[4096];
	size_t n;
};

static void cy_log_fn(cyaml_log_t level, void *ctx, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

static void
cy_log_fn(cyaml_log_t level, void *ctx, const char *fmt, va_list ap)
{
	struct cy_log *l = ctx;
	int n;

	if (level < CYAML_LOG_ERROR || l->n >= sizeof(l->text) - 1)
		return;
	n = vsnprintf(l->text + l->n, sizeof(l->text) - l->n, fmt, ap);
	if (n > 0)
		l->n = l->n + (size_t)n < sizeof(l->text) ? l->n + (size_t)n : sizeof(l->text) - 1;
}

struct cy_frame {
	int kind;			/* 'f' field, 's' sequence entry, 'm' mapping */
	int line, col;
};

/* libcyaml's wording, in the words of topologies/README.md. */
static void
cy_explain(const char *msg, char *out, size_t size)
{
	static const struct {
		const char *prefix, *says;
	} words[] = {
		{ "Expecting STRING, got event: SEQUENCE_START", "want a single value, not a list" },
		{ "Expecting STRING, got event: MAPPING_START", "want a single value, not a mapping" },
		{ "Expecting SEQUENCE, got event: SCALAR", "want a list ([a, b] or '- ' lines)" },
		{ "Expecting SEQUENCE, got event: MAPPING_START", "want a list, not a mapping" },
		{ "Expecting MAPPING, got event: SCALAR", "want a mapping (key: value lines)" },
		{ "Expecting MAPPING, got event: SEQUENCE_START", "want a mapping, not a list" },
		{ "String length too short", "must not be empty" },
		{ "String length too long", "longer than 4096 characters" },
		{ "Excessive entries (2 max)", "want exactly 2 entries" },
		{ "Insufficient entries (0 of 2", "want exactly 2 entries" },
		{ "Insufficient entries (1 of 2", "want exactly 2 entries" },
		{ "Insufficient entries (0 of 1", "want at least 1 entry" },
		{ "Excessive entries", "too many entries" },
		{ "Insufficient entries", "too few entries" },
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (strncmp(msg, words[i].prefix, strlen(words[i].prefix)) == 0) {
			snprintf(out, size, "%s", words[i].says);
			return;
		}
	}
	if (strncmp(msg, "Invalid ENUM value: ", 20) == 0 ||
	    strncmp(msg, "Invalid enumeration value: ", 27) == 0) {
		snprintf(out, size, "'%s' is not one of the allowed words", strchr(msg, ':') + 2);
		return;
	}
	snprintf(out, size, "%s", msg);
}

/* Turns libcyaml's log of a failed load into "<file>:<line>: <field>: ...". */
static int
fail_cyaml(struct ctx *c, struct cy_log *l, cyaml_err_t e)
{
	struct cy_frame fr[32];
	char msg[512] = "", says[600], path[300] = "";
	int nb_fr = 0, line = 0, first = 0;
	const char *p, *q;

	l->text[l->n] = 0;
	for (p = l->text; *p; p = q + (*q != 0)) {
		q = strchr(p, '\n');
		if (!q)
			q = p + strlen(p);
		if (strncmp(p, "Load: Backtrace:", 16) == 0)
			continue;
		if (strncmp(p, "Load: ", 6) == 0 && !msg[0]) {
			snprintf(msg, sizeof(msg), "%.*s", (int)(q - p - 6), p + 6);
			while (msg[0] && (msg[strlen(msg) - 1] == '.' || msg[strlen(msg) - 1] == ' '))
				msg[strlen(msg) - 1] = 0;
			continue;
		}
		const char *at = strstr(p, "(line: ");

		if (at && at < q && nb_fr < 32) {
			struct cy_frame *f = &fr[nb_fr];

			if (sscanf(at, "(line: %d, column: %d)", &f->line, &f->col) != 2)
				continue;
			f->kind = strstr(p, "in mapping field") && strstr(p, "in mapping field") < q ? 'f'
				  : strstr(p, "in sequence entry") &&
						  strstr(p, "in sequence entry") < q
					  ? 's'
					  : 'm';
			nb_fr++;
		}
	}
	if (!msg[0])
		snprintf(msg, sizeof(msg), "%s", cyaml_strerror(e));
	/* Which frame names the field: an unknown key's frame is the mapping
	 * (placed at its last value: skip it); a missing field's innermost
	 * frame is a field of the same mapping (skip it too). */
	if (strncmp(msg, "Unexpected key: ", 16) == 0) {
		while (first < nb_fr && fr[first].kind == 'm')
			first++;
	} else if (strncmp(msg, "Missing required mapping field: ", 32) == 0 ||
		   strncmp(msg, "Mapping field already seen: ", 28) == 0) {
		if (first < nb_fr && fr[first].kind == 'f')
			first++;
	} else if (strncmp(msg, "Excessive entries", 17) == 0 ||
		   strncmp(msg, "Insufficient entries", 20) == 0) {
		/* The list's own field, not the entry it stopped at. */
		while (first < nb_fr && fr[first].kind == 's')
			first++;
	}
	for (int i = first; i < nb_fr; i++) {
		const char *at = topo_lines_at(c->lines, fr[i].line, fr[i].col, &line);

		if (at) {
			snprintf(path, sizeof(path), "%s", at);
			break;
		}
		if (!line)
			line = fr[i].line;
	}
	if (strncmp(msg, "Unexpected key: ", 16) == 0) {
		char field[300];

		pathf(field, sizeof(field), "%s%s%s", path, path[0] ? "." : "", msg + 16);
		return fail(c, line_of(c, field, path), field,
			    "unknown field (topologies/README.md lists the fields)");
	}
	if (strncmp(msg, "Missing required mapping field: ", 32) == 0) {
		char field[300];

		pathf(field, sizeof(field), "%s%s%s", path, path[0] ? "." : "", msg + 32);
		return fail(c, line_of(c, path, NULL), field, "missing (required)");
	}
	if (strncmp(msg, "Mapping field already seen: ", 28) == 0) {
		char field[300];

		pathf(field, sizeof(field), "%s%s%s", path, path[0] ? "." : "", msg + 28);
		line = topo_lines_get_last(c->lines, field);
		return fail(c, line ? line : line_of(c, path, NULL), field, "given twice");
	}
	cy_explain(msg, says, sizeof(says));
	if (strncmp(msg, "Expecting MAPPING, got event: SCALAR", 36) == 0 &&
	    (strncmp(path, "hosts[", 6) == 0 || strncmp(path, "switches[", 9) == 0) &&
	    !strchr(path, '.'))
		snprintf(says, sizeof(says), "want a mapping such as {name: %s0}, not a bare name",
			 path[0] == 'h' ? "h" : "rack");
	if (!path[0] && !line)
		line = 1;
	return fail(c, line, path, "%s", says);
}

/* ----------------------------------------------------------------- numbers */

/* A whole number in decimal, 'min'..'max'; -1 with the message otherwise. */
static int
get_u64(struct ctx *c, const char *s, uint64_t min, uint64_t max, const char *field,
	const char *entry, uint64_t *out)
{
	unsigned long long v = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (ULLONG_MAX - 9) / 10)
			return fail(c, line_of(c, field, entry), field,
				    "'%s' is too large (at most %llu)", s, (unsigned long long)max);
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (p == s || *p)
		return fail(c, line_of(c, field, entry), field,
			    "'%s' is not a whole number (decimal digits only)", s);
	if (v < min || v > max)
		return fail(c, line_of(c, field, entry), field, "%llu is out of range %llu..%llu",
			    v, (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 0;
}

/* A finite decimal number in [min, max] (or [min, max) if 'open_max'). */
static int
get_double(struct ctx *c, const char *s, double min, double max, int open_max,
	   const char *field, const char *entry, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || (s[0] && (s[0] == ' ' || s[0] == '\t')) || strpbrk(s, "xXpP") ||
	    !isfinite(v))
		return fail(c, line_of(c, field, entry), field, "'%s' is not a number", s);
	if (!(v >= min && (open_max ? v < max : v <= max)))
		return fail(c, line_of(c, field, entry), field, "%s is out of range [%g, %g%c", s,
			    min, max, open_max ? ')' : ']');
	*out = v;
	return 0;
}

/* ------------------------------------------------------------------- names */

static int
name_ok(const char *s)
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
static int
find(const struct ctx *c, const char *name)
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
static void
node_path(const struct ctx *c, int i, char *buf, size_t size)
{
	uint32_t nb_sw = c->raw->switches_count;

	if ((uint32_t)i < nb_sw)
		snprintf(buf, size, "switches[%d]", i);
	else
		snprintf(buf, size, "hosts[%u]", (uint32_t)i - nb_sw);
}

/* ------------------------------------------------------------------- nodes */

static int
build_nodes(struct ctx *c)
{
	struct raw_topology *r = c->raw;
	struct topology *t = c->t;
	uint64_t n = (uint64_t)r->switches_count + r->hosts_count;
	char field[128], entry[64];

	if (n > TOPO_MAX_NODES)
		return fail(c, line_of(c, "hosts", NULL), "hosts", "%llu nodes: at most %d",
			    (unsigned long long)n, TOPO_MAX_NODES);
	t->nodes = calloc(n, sizeof(*t->nodes));
	c->by_name = calloc(n, sizeof(*c->by_name));
	if (!t->nodes || !c->by_name)
		return fail(c, 1, "", "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		struct topo_node *nd = &t->nodes[i];
		const char *name = i < r->switches_count ? r->switches[i].name
							  : r->hosts[i - r->switches_count].name;

		node_path(c, (int)i, entry, sizeof(entry));
		pathf(field, sizeof(field), "%s.name", entry);
		nd->name = strdup(name);
		if (!nd->name)
			return fail(c, 1, "", "out of memory");
		t->nb_nodes = i + 1;
		nd->kind = i < r->switches_count ? TOPO_SWITCH : TOPO_HOST;
		nd->line = line_of(c, entry, NULL);
		nd->parent = -1;
		nd->replica_of = -1;
		nd->attach = -1;
		if (!name_ok(name))
			return fail(c, line_of(c, field, entry), field,
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
		node_path(c, b, entry, sizeof(entry));
		node_path(c, a, other, sizeof(other));
		pathf(field, sizeof(field), "%s.name", entry);
		return fail(c, line_of(c, field, entry), field,
			    "'%s' is already the name of %s (line %d)", t->nodes[b].name, other,
			    t->nodes[a].line);
	}
	return 0;
}

static int
build_switches(struct ctx *c)
{
	struct raw_topology *r = c->raw;
	struct topology *t = c->t;
	char field[128], entry[64];

	for (uint32_t i = 0; i < r->switches_count; i++) {
		struct raw_switch *rs = &r->switches[i];
		struct topo_node *nd = &t->nodes[i];
		uint64_t v;

		pathf(entry, sizeof(entry), "switches[%u]", i);
		nd->role = rs->role == RAW_ROLE_SPINE	  ? TOPO_ROLE_SPINE
			   : rs->role == RAW_ROLE_CORE	  ? TOPO_ROLE_CORE
			   : rs->role == RAW_ROLE_REPLICA ? TOPO_ROLE_REPLICA
							  : TOPO_ROLE_RACK;
		nd->slots = DEFAULT_SLOTS;
		nd->cores = 1;
		if (rs->slots) {
			pathf(field, sizeof(field), "%s.slots", entry);
			if (get_u64(c, rs->slots, 1, 1u << 20, field, entry, &v) < 0)
				return -1;
			nd->slots = (uint32_t)v;
		}
		nd->share = rs->share == RAW_SHARE_FAIR	       ? TOPO_SHARE_FAIR
			    : rs->share == RAW_SHARE_FIRST_COME ? TOPO_SHARE_FIRST_COME
								: TOPO_SHARE_UNSET;
		if (rs->share_total) {
			pathf(field, sizeof(field), "%s.share_total", entry);
			if (get_u64(c, rs->share_total, 0, 4096, field, entry, &v) < 0)
				return -1;
			nd->share_total = (uint16_t)v;
		}
		if (rs->share_min_slots) {
			pathf(field, sizeof(field), "%s.share_min_slots", entry);
			if (get_u64(c, rs->share_min_slots, 1, 1u << 20, field, entry, &v) < 0)
				return -1;
			nd->share_min_slots = (uint32_t)v;
		}
		if ((nd->share_total || nd->share_min_slots) && nd->share != TOPO_SHARE_FAIR) {
			pathf(field, sizeof(field), "%s.share", entry);
			return fail(c, nd->line, field,
				    "share_total and share_min_slots need share: fair");
		}
		if (rs->cores) {
			pathf(field, sizeof(field), "%s.cores", entry);
			if (get_u64(c, rs->cores, 1, 64, field, entry, &v) < 0)
				return -1;
			nd->cores = (uint16_t)v;
		}
		if (rs->uplink) {
			int p = find(c, rs->uplink);

			pathf(field, sizeof(field), "%s.uplink", entry);
			if (p < 0)
				return fail(c, line_of(c, field, entry), field, "no switch called '%s'",
					    rs->uplink);
			if (t->nodes[p].kind != TOPO_SWITCH)
				return fail(c, line_of(c, field, entry), field,
					    "'%s' is a host: an uplink goes to a switch", rs->uplink);
			if ((uint32_t)p == i)
				return fail(c, line_of(c, field, entry), field,
					    "'%s' is this switch itself", rs->uplink);
			if (r->switches[p].role == RAW_ROLE_REPLICA)
				return fail(c, line_of(c, field, entry), field,
					    "'%s' is a replica: uplink to the switch it stands by for",
					    rs->uplink);
			nd->parent = p;
		}
		pathf(field, sizeof(field), "%s.replica_of", entry);
		if (rs->replica_of && nd->role != TOPO_ROLE_REPLICA)
			return fail(c, line_of(c, field, entry), field,
				    "only a switch with role replica has replica_of");
		if (nd->role == TOPO_ROLE_REPLICA) {
			int p = rs->replica_of ? find(c, rs->replica_of) : -1;

			if (!rs->replica_of)
				return fail(c, line_of(c, entry, NULL), field,
					    "missing (a replica names the switch it stands by for)");
			if (p < 0 || t->nodes[p].kind != TOPO_SWITCH)
				return fail(c, line_of(c, field, entry), field, "no switch called '%s'",
					    rs->replica_of);
			if ((uint32_t)p == i || t->nodes[p].role == TOPO_ROLE_REPLICA)
				return fail(c, line_of(c, field, entry), field,
					    "'%s' is a replica itself", rs->replica_of);
			nd->replica_of = p;
		}
	}
	return 0;
}

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
static const struct topo_link *
link_between(const struct ctx *c, int a, int b)
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

		pathf(entry, sizeof(entry), "links[%u]", i);
		l->line = line_of(c, entry, NULL);
		for (int k = 0; k < 2; k++) {
			pathf(field, sizeof(field), "links[%u].endpoints[%d]", i, k);
			ends[k] = find(c, rl->endpoints[k]);
			if (ends[k] < 0)
				return fail(c, line_of(c, field, entry), field,
					    "no host or switch called '%s'", rl->endpoints[k]);
		}
		pathf(field, sizeof(field), "links[%u].endpoints", i);
		if (ends[0] == ends[1])
			return fail(c, line_of(c, field, entry), field, "'%s' linked to itself",
				    rl->endpoints[0]);
		if (t->nodes[ends[0]].kind == TOPO_HOST && t->nodes[ends[1]].kind == TOPO_HOST)
			return fail(c, line_of(c, field, entry), field,
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
		pathf(field, sizeof(field), "links[%u].endpoints", i);
		pathf(entry, sizeof(entry), "links[%u]", i);
		return fail(c, line_of(c, field, entry), field,
			    "'%s' and '%s' are already linked by links[%u] (line %d)",
			    r->links[i].endpoints[0], r->links[i].endpoints[1], prev->link,
			    t->links[prev->link].line);
	}
	return 0;
}

static int
build_links(struct ctx *c)
{
	struct raw_topology *r = c->raw;
	struct topology *t = c->t;
	struct raw_link_opts none = { 0 }, *d = r->defaults ? r->defaults : &none;
	int *host_link = NULL;
	char field[128], entry[64];

	if (r->links_count > TOPO_MAX_LINKS)
		return fail(c, line_of(c, "links", NULL), "links", "%u links: at most %d",
			    r->links_count, TOPO_MAX_LINKS);
	t->links = calloc(r->links_count, sizeof(*t->links));
	c->edges = calloc(r->links_count, sizeof(*c->edges));
	host_link = malloc(t->nb_nodes * sizeof(*host_link));
	if (!t->links || !c->edges || !host_link) {
		free(host_link);
		return fail(c, 1, "", "out of memory");
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

		pathf(entry, sizeof(entry), "links[%u]", i);
		pathf(field, sizeof(field), "links[%u].endpoints", i);
		if (t->nodes[l->a].kind == TOPO_HOST) {
			if (host_link[l->a] >= 0) {
				fail(c, line_of(c, field, entry), field,
				     "host '%s' already has a link (links[%d], line %d): a host has "
				     "exactly one",
				     t->nodes[l->a].name, host_link[l->a],
				     t->links[host_link[l->a]].line);
				goto err;
			}
			if (t->nodes[l->b].role == TOPO_ROLE_REPLICA) {
				fail(c, line_of(c, field, entry), field,
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
				fail(c, line_of(c, field, entry), field,
				     "'%s' is not a rate (e.g. 10Gbit, 100Mbit, 0 for unshaped)", s);
				goto err;
			}
			if (ret < 0) {
				fail(c, line_of(c, field, entry), field,
				     "'%s' is out of range (whole bit/s, at most 1Tbit)", s);
				goto err;
			}
		}
		s = pick(rl->o.latency, d->latency, (int)i, "latency", field, sizeof(field));
		if (s) {
			int ret = topo_parse_duration(s, &l->latency_ns);

			if (ret == -EINVAL) {
				fail(c, line_of(c, field, entry), field,
				     "'%s' is not a duration (e.g. 50us, 1ms, 0)", s);
				goto err;
			}
			if (ret < 0) {
				fail(c, line_of(c, field, entry), field,
				     "'%s' is out of range (whole ns, at most 10s)", s);
				goto err;
			}
		}
		s = pick(rl->o.loss, d->loss, (int)i, "loss", field, sizeof(field));
		if (s && get_double(c, s, 0, 1, 1, field, entry, &l->loss) < 0)
			goto err;
		l->mtu = DEFAULT_MTU;
		s = pick(rl->o.mtu, d->mtu, (int)i, "mtu", field, sizeof(field));
		if (s) {
			if (get_u64(c, s, 576, 65535, field, entry, &v) < 0)
				goto err;
			l->mtu = (uint32_t)v;
		}
	}
	for (uint32_t i = c->raw->switches_count; i < t->nb_nodes; i++) {
		if (host_link[i] < 0) {
			node_path(c, (int)i, entry, sizeof(entry));
			fail(c, t->nodes[i].line, entry, "host '%s' has no link (it needs one, to a switch)",
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
static int
check_tree(struct ctx *c)
{
	struct topology *t = c->t;
	uint8_t *state = calloc(t->nb_nodes, 1);
	char field[128], entry[64];
	int ret = -1;

	if (!state)
		return fail(c, 1, "", "out of memory");
	for (uint32_t i = 0; i < c->raw->switches_count; i++) {
		int p = t->nodes[i].parent, n;

		pathf(entry, sizeof(entry), "switches[%u]", i);
		pathf(field, sizeof(field), "%s.uplink", entry);
		if (p >= 0 && !link_between(c, (int)i, p)) {
			fail(c, line_of(c, field, entry), field,
			     "no link between '%s' and its uplink '%s' (add one to links)",
			     t->nodes[i].name, t->nodes[p].name);
			goto out;
		}
		for (n = (int)i; n >= 0 && state[n] == 0; n = t->nodes[n].parent)
			state[n] = 1;
		if (n >= 0 && state[n] == 1) {
			pathf(entry, sizeof(entry), "switches[%d]", n);
			pathf(field, sizeof(field), "%s.uplink", entry);
			fail(c, line_of(c, field, entry), field, "uplinks form a cycle through '%s'",
			     t->nodes[n].name);
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

/* -------------------------------------------------------------------- jobs */

static char *
data_path(const struct ctx *c, const char *file)
{
	char *p;
	size_t n;

	if (file[0] == '/' || !c->dir)
		return strdup(file);
	n = strlen(c->dir) + strlen(file) + 2;
	p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", c->dir, file);
	return p;
}

static int
job_data(struct ctx *c, uint32_t i, struct raw_job *rj, struct topo_job *j)
{
	char field[128], entry[64];
	uint64_t v;

	pathf(entry, sizeof(entry), "jobs[%u]", i);
	j->data = TOPO_DATA_SYNTHETIC;
	j->density = 1.0;
	j->seed = 1;
	if (rj->data && rj->data->synthetic && rj->data->file) {
		pathf(field, sizeof(field), "%s.data", entry);
		return fail(c, line_of(c, field, entry), field,
			    "either synthetic or file, not both");
	}
	if (rj->data && rj->data->file) {
		struct ina_npy *npy;
		struct stat st;
		char why[256];

		pathf(field, sizeof(field), "%s.data.file", entry);
		j->data = TOPO_DATA_FILE;
		j->path = data_path(c, rj->data->file);
		if (!j->path)
			return fail(c, 1, "", "out of memory");
		if (stat(j->path, &st) < 0)
			return fail(c, line_of(c, field, entry), field, "%s: %s", j->path,
				    strerror(errno));
		if (!S_ISREG(st.st_mode))
			return fail(c, line_of(c, field, entry), field, "%s: not a regular file",
				    j->path);
		npy = ina_npy_open(j->path, why, sizeof(why));
		if (!npy)
			return fail(c, line_of(c, field, entry), field, "%s", why);
		if (ina_npy_ndim(npy) != 3 || ina_npy_dim(npy, 0) == 0 ||
		    ina_npy_dim(npy, 1) == 0 || ina_npy_dim(npy, 2) == 0 ||
		    ina_npy_dim(npy, 2) > UINT32_MAX) {
			ina_npy_close(npy);
			return fail(c, line_of(c, field, entry), field,
				    "%s: want shape (iterations, workers, parameters)", j->path);
		}
		v = ina_npy_dim(npy, 2);
		ina_npy_close(npy);
		pathf(field, sizeof(field), "%s.tensor", entry);
		if (j->tensor_len && j->tensor_len != v)
			return fail(c, line_of(c, field, entry), field,
				    "%u, but %s has %llu parameters (leave tensor out to take them all)",
				    j->tensor_len, rj->data->file, (unsigned long long)v);
		j->tensor_len = (uint32_t)v;
		return 0;
	}
	if (rj->data && rj->data->synthetic) {
		struct raw_synthetic *s = rj->data->synthetic;

		pathf(field, sizeof(field), "%s.data.synthetic.density", entry);
		if (s->density && get_double(c, s->density, 0, 1, 0, field, entry, &j->density) < 0)
			return -1;
		pathf(field, sizeof(field), "%s.data.synthetic.seed", entry);
		if (s->seed && get_u64(c, s->seed, 0, UINT64_MAX, field, entry, &j->seed) < 0)
			return -1;
	}
	if (!j->tensor_len) {
		pathf(field, sizeof(field), "%s.tensor", entry);
		return fail(c, line_of(c, entry, NULL), field,
			    "missing (synthetic data needs a tensor length)");
	}
	return 0;
}

/* Elements per block times their size, in an IPv4/UDP frame. */
static uint32_t
frame_size(const struct topo_job *j)
{
	uint32_t elem = (uint32_t)ina_encoding(j->encoding)->elem_size;

	return FRAME_OVERHEAD + INA_HDR_SIZE + (uint32_t)j->block_size * elem;
}

/* The job's tree: every switch between its hosts and its root carries its
 * frames, aggregates at most INA_MAX_WORLD children and holds its lanes. */
static int
check_job_tree(struct ctx *c, uint32_t i, struct topo_job *j, uint32_t *fan_in, uint8_t *seen,
	       uint64_t *slots_used)
{
	struct topology *t = c->t;
	char field[128], entry[64];

	pathf(entry, sizeof(entry), "jobs[%u]", i);
	pathf(field, sizeof(field), "%s.hosts", entry);
	memset(fan_in, 0, t->nb_nodes * sizeof(*fan_in));
	memset(seen, 0, t->nb_nodes);
	for (uint16_t k = 0; k < j->nb_hosts; k++) {
		int n = j->hosts[k];

		seen[n] = 1;
		while (n != j->root) {
			const struct topo_link *l = link_between(c, n, t->nodes[n].kind == TOPO_HOST
									       ? t->nodes[n].attach
									       : t->nodes[n].parent);
			int up = t->nodes[n].kind == TOPO_HOST ? t->nodes[n].attach
							       : t->nodes[n].parent;

			if (l && l->mtu < frame_size(j)) {
				pathf(field, sizeof(field), "%s.block", entry);
				return fail(c, line_of(c, field, entry), field,
					    "blocks of %u %s elements need %u-byte frames; links[%u] "
					    "(%s - %s, line %d) has mtu %u",
					    j->block_size, ina_wire_encoding_name(j->encoding),
					    frame_size(j), (unsigned)(l - t->links), t->nodes[l->a].name,
					    t->nodes[l->b].name, l->line, l->mtu);
			}
			fan_in[up]++;
			if (seen[up])
				break;	/* the rest of the way is counted */
			seen[up] = 1;
			n = up;
		}
	}
	for (uint32_t s = 0; s < t->nb_nodes; s++) {
		if (!seen[s] || t->nodes[s].kind != TOPO_SWITCH)
			continue;
		if (fan_in[s] > INA_MAX_WORLD)
			return fail(c, line_of(c, field, entry), field,
				    "switch '%s' would aggregate %u children of this job: at most %d",
				    t->nodes[s].name, fan_in[s], INA_MAX_WORLD);
		slots_used[s] += (j->lanes + t->nodes[s].cores - 1u) / t->nodes[s].cores;
		/* A switch that says how its jobs share the slots may be asked
		 * for more than it holds: the share decides. */
		if (slots_used[s] > t->nodes[s].slots && t->nodes[s].share == TOPO_SHARE_UNSET) {
			char sw[32];

			pathf(sw, sizeof(sw), "switches[%u].slots", s);
			return fail(c, line_of(c, sw, NULL) > 1 ? line_of(c, sw, NULL) : t->nodes[s].line,
				    sw,
				    "switch '%s' has %u slots; the jobs through it up to %s need %llu "
				    "(their lanes, over its cores)",
				    t->nodes[s].name, t->nodes[s].slots, j->name,
				    (unsigned long long)slots_used[s]);
		}
	}
	return 0;
}

/*
 * The job's root, host by host: the first host's switch and the switches
 * above it are numbered by height (chain_pos); each other host walks up
 * from its switch to that chain, marking what it passes (bit 2 of 'mark')
 * so no switch is walked twice. The root is the highest chain switch met.
 */
static int
job_root_add(struct ctx *c, uint32_t i, const struct topo_job *j, uint32_t k, int *chain_pos,
	     uint8_t *mark, int *root_pos)
{
	const struct topology *t = c->t;
	int h = j->hosts[k], n = t->nodes[h].attach, pos = 0;
	char field[128], entry[64];

	if (k == 0) {
		for (; n >= 0; n = t->nodes[n].parent)
			chain_pos[n] = pos++;
		return 0;
	}
	while (n >= 0 && chain_pos[n] < 0 && !(mark[n] & 2)) {
		mark[n] |= 2;
		n = t->nodes[n].parent;
	}
	if (n < 0) {
		pathf(entry, sizeof(entry), "jobs[%u]", i);
		pathf(field, sizeof(field), "%s.hosts", entry);
		return fail(c, line_of(c, field, entry), field,
			    "'%s' and '%s' are under different roots: a job's hosts share one "
			    "switch tree",
			    t->nodes[j->hosts[0]].name, t->nodes[h].name);
	}
	if (chain_pos[n] > *root_pos)
		*root_pos = chain_pos[n];
	return 0;
}

static int
build_jobs(struct ctx *c)
{
	struct raw_topology *r = c->raw;
	struct topology *t = c->t;
	uint32_t *fan_in = NULL;
	uint8_t *in_job = NULL;
	uint64_t *slots_used = NULL;
	int *chain_pos = NULL, root_pos = 0;
	char field[128], entry[64];
	int ret = -1;

	if (!r->jobs_count)
		return 0;
	if (r->jobs_count > TOPO_MAX_JOBS)
		return fail(c, line_of(c, "jobs", NULL), "jobs", "%u jobs: at most %d",
			    r->jobs_count, TOPO_MAX_JOBS);
	t->jobs = calloc(r->jobs_count, sizeof(*t->jobs));
	fan_in = calloc(t->nb_nodes, sizeof(*fan_in));
	in_job = calloc(t->nb_nodes, 1);
	slots_used = calloc(t->nb_nodes, sizeof(*slots_used));
	chain_pos = malloc(t->nb_nodes * sizeof(*chain_pos));
	if (!t->jobs || !fan_in || !in_job || !slots_used || !chain_pos) {
		fail(c, 1, "", "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < t->nb_nodes; i++)
		chain_pos[i] = -1;
	for (uint32_t i = 0; i < r->jobs_count; i++) {
		struct raw_job *rj = &r->jobs[i];
		struct topo_job *j = &t->jobs[i];
		uint64_t v;

		t->nb_jobs = i + 1;
		pathf(entry, sizeof(entry), "jobs[%u]", i);
		j->line = line_of(c, entry, NULL);
		j->name = strdup(rj->name);
		if (!j->name) {
			fail(c, 1, "", "out of memory");
			goto out;
		}
		pathf(field, sizeof(field), "%s.name", entry);
		if (!name_ok(rj->name)) {
			fail(c, line_of(c, field, entry), field, "'%s' is not a name", rj->name);
			goto out;
		}
		j->job_id = i + 1;
		pathf(field, sizeof(field), "%s.id", entry);
		if (rj->id) {
			if (get_u64(c, rj->id, 0, UINT32_MAX, field, entry, &v) < 0)
				goto out;
			j->job_id = (uint32_t)v;
		}
		for (uint32_t k = 0; k < i; k++) {
			if (t->jobs[k].job_id == j->job_id) {
				fail(c, line_of(c, field, entry), field,
				     "job id %u is already jobs[%u]'s ('%s', line %d)", j->job_id, k,
				     t->jobs[k].name, t->jobs[k].line);
				goto out;
			}
			if (strcmp(t->jobs[k].name, j->name) == 0) {
				pathf(field, sizeof(field), "%s.name", entry);
				fail(c, line_of(c, field, entry), field,
				     "'%s' is already the name of jobs[%u] (line %d)", j->name, k,
				     t->jobs[k].line);
				goto out;
			}
		}
		pathf(field, sizeof(field), "%s.hosts", entry);
		if (rj->hosts_count > UINT16_MAX) {
			fail(c, line_of(c, field, entry), field, "%u hosts: at most %u",
			     rj->hosts_count, UINT16_MAX);
			goto out;
		}
		j->hosts = calloc(rj->hosts_count, sizeof(*j->hosts));
		if (!j->hosts) {
			fail(c, 1, "", "out of memory");
			goto out;
		}
		memset(in_job, 0, t->nb_nodes);
		root_pos = 0;
		for (uint32_t k = 0; k < rj->hosts_count; k++) {
			int h = find(c, rj->hosts[k]);

			pathf(field, sizeof(field), "%s.hosts[%u]", entry, k);
			if (h < 0) {
				fail(c, line_of(c, field, entry), field, "no host called '%s'",
				     rj->hosts[k]);
				goto out;
			}
			if (t->nodes[h].kind != TOPO_HOST) {
				fail(c, line_of(c, field, entry), field,
				     "'%s' is a switch: a job runs on hosts", rj->hosts[k]);
				goto out;
			}
			if (in_job[h]) {
				fail(c, line_of(c, field, entry), field,
				     "host '%s' is in this job twice", rj->hosts[k]);
				goto out;
			}
			in_job[h] = 1;
			j->hosts[k] = h;
			j->nb_hosts = (uint16_t)(k + 1);
			if (job_root_add(c, i, j, k, chain_pos, in_job, &root_pos) < 0)
				goto out;
		}
		j->root = t->nodes[j->hosts[0]].attach;
		for (int n = j->root; n >= 0; n = t->nodes[n].parent) {
			if (chain_pos[n] == root_pos)
				j->root = n;
			chain_pos[n] = -1;
		}
		pathf(field, sizeof(field), "%s.tensor", entry);
		if (rj->tensor) {
			if (get_u64(c, rj->tensor, 1, UINT32_MAX, field, entry, &v) < 0)
				goto out;
			j->tensor_len = (uint32_t)v;
		}
		j->rounds = 1;
		pathf(field, sizeof(field), "%s.rounds", entry);
		if (rj->rounds) {
			if (get_u64(c, rj->rounds, 1, UINT32_MAX, field, entry, &v) < 0)
				goto out;
			j->rounds = (uint32_t)v;
		}
		j->block_size = DEFAULT_BLOCK;
		pathf(field, sizeof(field), "%s.block", entry);
		if (rj->block) {
			if (get_u64(c, rj->block, 1, 16384, field, entry, &v) < 0)
				goto out;
			j->block_size = (uint16_t)v;
		}
		j->lanes = DEFAULT_LANES;
		pathf(field, sizeof(field), "%s.lanes", entry);
		if (rj->lanes) {
			if (get_u64(c, rj->lanes, 1, 4096, field, entry, &v) < 0)
				goto out;
			j->lanes = (uint16_t)v;
		}
		pathf(field, sizeof(field), "%s.weight", entry);
		if (rj->weight) {
			if (get_u64(c, rj->weight, 1, 255, field, entry, &v) < 0)
				goto out;
			j->weight = (uint8_t)v;
		}
		j->encoding = rj->encoding ? rj->encoding : INA_ENC_F32;
		if (job_data(c, i, rj, j) < 0)
			goto out;
		if (check_job_tree(c, i, j, fan_in, in_job, slots_used) < 0)
			goto out;
	}
	ret = 0;
out:
	free(fan_in);
	free(in_job);
	free(slots_used);
	free(chain_pos);
	return ret;
}

/* -------------------------------------------------------------- the whole */

/*
 * libcyaml's allocator. libcyaml grows a sequence one entry at a time with
 * realloc, which copies the whole list each time: quadratic in a long list
 * (minutes under ASan for 20,000 entries). Blocks here keep their capacity
 * in a header in front and grow by doubling, so a load is linear.
 */
#define CY_HDR 16	/* keeps malloc's alignment */

static void *
cy_mem(void *ctx, void *ptr, size_t size)
{
	unsigned char *base = ptr ? (unsigned char *)ptr - CY_HDR : NULL;
	size_t cap = 0, want;

	(void)ctx;
	if (size == 0) {
		free(base);
		return NULL;
	}
	if (base) {
		memcpy(&cap, base, sizeof(cap));
		if (size <= cap)
			return ptr;
	}
	want = size < cap * 2 ? cap * 2 : size;
	if (want > SIZE_MAX - CY_HDR)
		return NULL;
	base = realloc(base, want + CY_HDR);
	if (!base)
		return NULL;
	memcpy(base, &want, sizeof(want));
	return base + CY_HDR;
}

static struct topology *
parse(const char *yaml, size_t len, const char *name, const char *dir, char *err, size_t errlen)
{
	struct cy_log log = { .n = 0 };
	cyaml_config_t cfg = {
		.log_fn = cy_log_fn,
		.log_ctx = &log,
		.mem_fn = cy_mem,
		.log_level = CYAML_LOG_ERROR,
		.flags = CYAML_CFG_NO_ALIAS,
	};
	struct ctx c = { .file = name, .err = err, .errlen = errlen };
	char why[256];
	cyaml_err_t e;
	int ok = 0;

	if (errlen)
		err[0] = 0;
	if (!yaml)
		yaml = "", len = 0;
	if (len > TOPO_MAX_INPUT) {
		fail(&c, 1, "", "%zu bytes: a topology file has at most %u", len, TOPO_MAX_INPUT);
		return NULL;
	}
	if (memchr(yaml, 0, len)) {
		fail(&c, 1, "", "not YAML: the text holds a NUL byte");
		return NULL;
	}
	c.lines = topo_lines_scan(yaml, len, why, sizeof(why));
	if (!c.lines) {
		snprintf(err, errlen, "%s:%s", name, why);
		return NULL;
	}
	if (!topo_lines_get(c.lines, "") && !topo_lines_get(c.lines, "name")) {
		fail(&c, 1, "", "empty: a topology has name, switches, hosts, links (and jobs)");
		goto out;
	}
	e = cyaml_load_data((const uint8_t *)yaml, len, &cfg, &topo_schema, (cyaml_data_t **)&c.raw,
			    NULL);
	if (e != CYAML_OK) {
		fail_cyaml(&c, &log, e);
		c.raw = NULL;
		goto out;
	}
	if (!c.raw) {
		fail(&c, 1, "", "empty: a topology has name, switches, hosts, links (and jobs)");
		goto out;
	}
	c.t = calloc(1, sizeof(*c.t));
	if (!c.t || !(c.t->name = strdup(c.raw->name)) || !(c.t->file = strdup(name))) {
		fail(&c, 1, "", "out of memory");
		goto out;
	}
	if (dir && !(c.dir = strdup(dir))) {
		fail(&c, 1, "", "out of memory");
		goto out;
	}
	if (build_nodes(&c) < 0 || build_switches(&c) < 0 || build_links(&c) < 0 ||
	    check_tree(&c) < 0 || build_jobs(&c) < 0)
		goto out;
	ok = 1;
out:
	if (c.raw)
		cyaml_free(&cfg, &topo_schema, c.raw, 0);
	topo_lines_free(c.lines);
	free(c.by_name);
	free(c.edges);
	free(c.dir);
	if (!ok) {
		topology_free(c.t);
		return NULL;
	}
	return c.t;
}

struct topology *
topology_parse(const char *yaml, size_t len, const char *name, char *err, size_t errlen)
{
	return parse(yaml, len, name ? name : "<topology>", NULL, err, errlen);
}

struct topology *
topology_load(const char *path, char *err, size_t errlen)
{
	struct topology *t = NULL;
	char *text = NULL, *dir = NULL, *slash;
	size_t len = 0;
	long size;
	FILE *f = fopen(path, "rb");

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		goto out;
	}
	if ((unsigned long)size > TOPO_MAX_INPUT) {
		snprintf(err, errlen, "%s: %ld bytes: a topology file has at most %u", path, size,
			 TOPO_MAX_INPUT);
		goto out;
	}
	text = malloc((size_t)size + 1);
	if (!text) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	len = fread(text, 1, (size_t)size, f);
	if (ferror(f)) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		goto out;
	}
	dir = strdup(path);
	if (!dir) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(dir, strlen(dir) + 1, ".");
	t = parse(text, len, path, dir, err, errlen);
out:
	fclose(f);
	free(text);
	free(dir);
	return t;
}

void
topology_free(struct topology *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nb_nodes; i++)
		free(t->nodes[i].name);
	for (uint32_t i = 0; i < t->nb_jobs; i++) {
		free(t->jobs[i].name);
		free(t->jobs[i].hosts);
		free(t->jobs[i].path);
	}
	free(t->nodes);
	free(t->links);
	free(t->jobs);
	free(t->name);
	free(t->file);
	free(t);
}

int
topology_find(const struct topology *t, const char *name)
{
	for (uint32_t i = 0; i < t->nb_nodes; i++) {
		if (strcmp(t->nodes[i].name, name) == 0)
			return (int)i;
	}
	return -1;
}

const struct topo_link *
topology_link(const struct topology *t, int a, int b)
{
	for (uint32_t i = 0; i < t->nb_links; i++) {
		const struct topo_link *l = &t->links[i];

		if ((l->a == a && l->b == b) || (l->a == b && l->b == a))
			return l;
	}
	return NULL;
}
