/* SPDX-License-Identifier: MIT */
/*
 * Where each field of a YAML document sits: one pass of libyaml's event
 * parser over the text, before libcyaml loads it, recording the line of
 * every value under its path ("links[3].bandwidth", indices from 0). The
 * parser's messages take their line numbers from here, since libcyaml gives
 * none for what it loaded. The same pass refuses what libcyaml should never
 * see: YAML syntax errors, aliases, and nesting deeper than a topology has.
 */
#ifndef INA_TOPO_LINES_H
#define INA_TOPO_LINES_H

#include <stddef.h>

struct topo_lines;

/* Scans the first document of 'yaml'. NULL with a message "<line>: <what>"
 * (no file name) in 'err' when the text is not YAML a topology can be. An
 * empty document gives an empty map. */
struct topo_lines *topo_lines_scan(const char *yaml, size_t len, char *err, size_t errlen);
void topo_lines_free(struct topo_lines *m); /* Accepts NULL. */

/* Line (from 1) of the field at 'path': its key's line for a mapping field,
 * the entry's own line for a sequence entry; 0 if there is no such path. */
int topo_lines_get(const struct topo_lines *m, const char *path);

/* The same for a key given more than once: the line of its last one. */
int topo_lines_get_last(const struct topo_lines *m, const char *path);

/* printf-style path, else as topo_lines_get. */
int topo_lines_getf(const struct topo_lines *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The path of the value that starts at 'line', 'column' (both from 1), or
 * NULL; its line as topo_lines_get gives it in '*field_line'. */
const char *topo_lines_at(const struct topo_lines *m, int line, int column, int *field_line);

#endif
