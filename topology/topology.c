/* SPDX-License-Identifier: MIT */
/*
 * Reads a topology file (topology.h, topologies/README.md): libyaml finds
 * the line of every field (topo_lines.c), libcyaml loads the text against
 * the schema (topo_schema.c), then the steps resolve names into indices,
 * parse numbers and units, apply defaults and run the checks a schema
 * cannot state: the nodes (topo_nodes.c), the links (topo_links.c), the jobs
 * (topo_jobs.c), the attacks (topo_attacks.c). The first error found is the
 * one reported, as "<file>:<line>: <field>: <what>" (topo_fail.c);
 * libcyaml's own errors are worded here.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cyaml/cyaml.h>

#include "topo_ctx.h"

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
	int kind; /* 'f' field, 's' sequence entry, 'm' mapping */
	int line, col;
};

/* libcyaml's wording, in the words of topologies/README.md. */
static void
cy_explain(const char *msg, char *out, size_t size)
{
	static const struct {
		const char *prefix, *says;
	} words[] = {
		{ "Expecting STRING, got event: SEQUENCE_START",
		  "want a single value, not a list" },
		{ "Expecting STRING, got event: MAPPING_START",
		  "want a single value, not a mapping" },
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
			while (msg[0] &&
			       (msg[strlen(msg) - 1] == '.' || msg[strlen(msg) - 1] == ' '))
				msg[strlen(msg) - 1] = 0;
			continue;
		}
		const char *at = strstr(p, "(line: ");

		if (at && at < q && nb_fr < 32) {
			struct cy_frame *f = &fr[nb_fr];

			if (sscanf(at, "(line: %d, column: %d)", &f->line, &f->col) != 2)
				continue;
			f->kind = strstr(p, "in mapping field") && strstr(p, "in mapping field") < q
					  ? 'f'
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

		topo_pathf(field, sizeof(field), "%s%s%s", path, path[0] ? "." : "", msg + 16);
		return topo_fail(c, topo_line_of(c, field, path), field,
				 "unknown field (topologies/README.md lists the fields)");
	}
	if (strncmp(msg, "Missing required mapping field: ", 32) == 0) {
		char field[300];

		topo_pathf(field, sizeof(field), "%s%s%s", path, path[0] ? "." : "", msg + 32);
		return topo_fail(c, topo_line_of(c, path, NULL), field, "missing (required)");
	}
	if (strncmp(msg, "Mapping field already seen: ", 28) == 0) {
		char field[300];

		topo_pathf(field, sizeof(field), "%s%s%s", path, path[0] ? "." : "", msg + 28);
		line = topo_lines_get_last(c->lines, field);
		return topo_fail(c, line ? line : topo_line_of(c, path, NULL), field,
				 "given twice");
	}
	cy_explain(msg, says, sizeof(says));
	if (strncmp(msg, "Expecting MAPPING, got event: SCALAR", 36) == 0 &&
	    (strncmp(path, "hosts[", 6) == 0 || strncmp(path, "switches[", 9) == 0) &&
	    !strchr(path, '.'))
		snprintf(says, sizeof(says), "want a mapping such as {name: %s0}, not a bare name",
			 path[0] == 'h' ? "h" : "rack");
	if (!path[0] && !line)
		line = 1;
	return topo_fail(c, line, path, "%s", says);
}


/* -------------------------------------------------------------- the whole */

/*
 * libcyaml's allocator. libcyaml grows a sequence one entry at a time with
 * realloc, which copies the whole list each time: quadratic in a long list
 * (minutes under ASan for 20,000 entries). Blocks here keep their capacity
 * in a header in front and grow by doubling, so a load is linear.
 */
#define CY_HDR 16 /* keeps malloc's alignment */

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
		topo_fail(&c, 1, "", "%zu bytes: a topology file has at most %u", len,
			  TOPO_MAX_INPUT);
		return NULL;
	}
	if (memchr(yaml, 0, len)) {
		topo_fail(&c, 1, "", "not YAML: the text holds a NUL byte");
		return NULL;
	}
	c.lines = topo_lines_scan(yaml, len, why, sizeof(why));
	if (!c.lines) {
		snprintf(err, errlen, "%s:%s", name, why);
		return NULL;
	}
	if (!topo_lines_get(c.lines, "") && !topo_lines_get(c.lines, "name")) {
		topo_fail(&c, 1, "",
			  "empty: a topology has name, switches, hosts, links (and jobs)");
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
		topo_fail(&c, 1, "",
			  "empty: a topology has name, switches, hosts, links (and jobs)");
		goto out;
	}
	c.t = calloc(1, sizeof(*c.t));
	if (!c.t || !(c.t->name = strdup(c.raw->name)) || !(c.t->file = strdup(name))) {
		topo_fail(&c, 1, "", "out of memory");
		goto out;
	}
	if (dir && !(c.dir = strdup(dir))) {
		topo_fail(&c, 1, "", "out of memory");
		goto out;
	}
	if (topo_build_nodes(&c) < 0 || topo_build_switches(&c) < 0 || topo_build_links(&c) < 0 ||
	    topo_check_tree(&c) < 0 || topo_build_jobs(&c) < 0 || topo_build_attacks(&c) < 0)
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
		free(t->jobs[i].tenant);
	}
	free(t->nodes);
	free(t->links);
	free(t->jobs);
	free(t->attacks);
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
