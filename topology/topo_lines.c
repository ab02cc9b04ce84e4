/* SPDX-License-Identifier: MIT */
/* The line of every field of a YAML document, by path (topo_lines.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "topo_lines.h"

#define MAX_DEPTH 16
#define MAX_PATH 256

struct entry {
	char *path;
	int line;	       /* the field's line: its key's, or the entry's */
	int val_line, val_col; /* where the value itself starts */
};

struct topo_lines {
	struct entry *e;
	size_t n, cap;
};

struct frame {
	int is_map;
	int want_key;	     /* mapping: the next node is a key */
	unsigned long index; /* sequence: index of the next entry */
	char key[MAX_PATH];  /* mapping: the current key */
	int key_line;
	char path[MAX_PATH];
};

static int
add(struct topo_lines *m, const char *path, int line, const yaml_mark_t *mark)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct entry *e = realloc(m->e, cap * sizeof(*e));

		if (!e)
			return -1;
		m->e = e;
		m->cap = cap;
	}
	m->e[m->n].path = strdup(path);
	if (!m->e[m->n].path)
		return -1;
	m->e[m->n].line = line;
	m->e[m->n].val_line = (int)mark->line + 1;
	m->e[m->n].val_col = (int)mark->column + 1;
	m->n++;
	return 0;
}

static int
cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	/* Equal paths (a key given twice) keep their order: the first wins. */
	if (c)
		return c;
	return x->val_line != y->val_line
		       ? (x->val_line < y->val_line ? -1 : 1)
		       : (x->val_col < y->val_col ? -1 : x->val_col > y->val_col);
}

static void pathf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* snprintf that cuts a path short (paths of a topology are far shorter). */
static void
pathf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

/* The path of the node that starts now under frame 'f' (NULL: the root). */
static void
child_path(const struct frame *f, char *out, int *line, const yaml_mark_t *mark)
{
	if (!f) {
		out[0] = 0;
		*line = (int)mark->line + 1;
	} else if (f->is_map) {
		pathf(out, MAX_PATH, "%s%s%s", f->path, f->path[0] ? "." : "", f->key);
		*line = f->key_line;
	} else {
		pathf(out, MAX_PATH, "%s[%lu]", f->path, f->index);
		*line = (int)mark->line + 1;
	}
}

struct topo_lines *
topo_lines_scan(const char *yaml, size_t len, char *err, size_t errlen)
{
	struct topo_lines *m = calloc(1, sizeof(*m));
	struct frame *st = calloc(MAX_DEPTH, sizeof(*st));
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, done = 0, ok = 0;

	if (!m || !st || !yaml_parser_initialize(&p)) {
		snprintf(err, errlen, "1: out of memory");
		free(m);
		free(st);
		return NULL;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
	while (!done) {
		struct frame *top = depth ? &st[depth - 1] : NULL;
		char path[MAX_PATH];
		int line;

		if (!yaml_parser_parse(&p, &ev)) {
			snprintf(err, errlen, "%d: not YAML: %s%s%s", (int)p.problem_mark.line + 1,
				 p.problem ? p.problem : "syntax error", p.context ? " " : "",
				 p.context ? p.context : "");
			goto out;
		}
		switch (ev.type) {
		case YAML_DOCUMENT_END_EVENT:
		case YAML_STREAM_END_EVENT:
			done = 1; /* libcyaml reads the first document only */
			break;
		case YAML_ALIAS_EVENT:
			snprintf(err, errlen, "%d: aliases (*name) are not supported",
				 (int)ev.start_mark.line + 1);
			yaml_event_delete(&ev);
			goto out;
		case YAML_SCALAR_EVENT:
			if (top && top->is_map && top->want_key) {
				snprintf(top->key, sizeof(top->key), "%.*s",
					 (int)ev.data.scalar.length,
					 (const char *)ev.data.scalar.value);
				top->key_line = (int)ev.start_mark.line + 1;
				top->want_key = 0;
				break;
			}
			child_path(top, path, &line, &ev.start_mark);
			if (add(m, path, line, &ev.start_mark) < 0) {
				snprintf(err, errlen, "1: out of memory");
				yaml_event_delete(&ev);
				goto out;
			}
			if (top && top->is_map)
				top->want_key = 1;
			else if (top)
				top->index++;
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (top && top->is_map && top->want_key) {
				snprintf(err, errlen, "%d: a key must be a plain word, not a %s",
					 (int)ev.start_mark.line + 1,
					 ev.type == YAML_MAPPING_START_EVENT ? "mapping"
									     : "sequence");
				yaml_event_delete(&ev);
				goto out;
			}
			if (depth == MAX_DEPTH) {
				snprintf(err, errlen, "%d: nested deeper than %d levels",
					 (int)ev.start_mark.line + 1, MAX_DEPTH);
				yaml_event_delete(&ev);
				goto out;
			}
			child_path(top, path, &line, &ev.start_mark);
			if (add(m, path, line, &ev.start_mark) < 0) {
				snprintf(err, errlen, "1: out of memory");
				yaml_event_delete(&ev);
				goto out;
			}
			memset(&st[depth], 0, sizeof(st[depth]));
			st[depth].is_map = ev.type == YAML_MAPPING_START_EVENT;
			st[depth].want_key = 1;
			snprintf(st[depth].path, sizeof(st[depth].path), "%s", path);
			depth++;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			if (depth > 0) {
				top = &st[depth - 1];
				if (top->is_map)
					top->want_key = 1;
				else
					top->index++;
			}
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	if (m->n)
		qsort(m->e, m->n, sizeof(*m->e), cmp_entry);
	ok = 1;
out:
	yaml_parser_delete(&p);
	free(st);
	if (!ok) {
		topo_lines_free(m);
		return NULL;
	}
	return m;
}

void
topo_lines_free(struct topo_lines *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].path);
	free(m->e);
	free(m);
}

/* Index of the first entry at 'path', or m->n. */
static size_t
first_at(const struct topo_lines *m, const char *path)
{
	size_t lo = 0, hi = m->n;

	/* The first entry whose path is not below 'path'. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(m->e[mid].path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->n && strcmp(m->e[lo].path, path) == 0 ? lo : m->n;
}

int
topo_lines_get(const struct topo_lines *m, const char *path)
{
	size_t i = m ? first_at(m, path) : 0;

	return m && i < m->n ? m->e[i].line : 0;
}

int
topo_lines_get_last(const struct topo_lines *m, const char *path)
{
	size_t i = m ? first_at(m, path) : 0;

	if (!m || i == m->n)
		return 0;
	while (i + 1 < m->n && strcmp(m->e[i + 1].path, path) == 0)
		i++;
	return m->e[i].line;
}

int
topo_lines_getf(const struct topo_lines *m, const char *fmt, ...)
{
	char path[MAX_PATH];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return topo_lines_get(m, path);
}

const char *
topo_lines_at(const struct topo_lines *m, int line, int column, int *field_line)
{
	const struct entry *best = NULL;

	if (!m)
		return NULL;
	/* Nested values can start at the same place: the deepest path wins. */
	for (size_t i = 0; i < m->n; i++) {
		const struct entry *e = &m->e[i];

		if (e->val_line == line && e->val_col == column &&
		    (!best || strlen(e->path) > strlen(best->path)))
			best = e;
	}
	if (best && field_line)
		*field_line = best->line;
	return best ? best->path : NULL;
}
