/* SPDX-License-Identifier: MIT */
/* A topology file's errors, "<file>:<line>: <field>: <what>", and its
 * numbers read or refused with one (topo_ctx.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_ctx.h"

/* ------------------------------------------------------------------ errors */

/* snprintf for field paths, which are cut short rather than overflow. */
void
topo_pathf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

int
topo_fail(struct ctx *c, int line, const char *field, const char *fmt, ...)
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
int
topo_line_of(const struct ctx *c, const char *field, const char *entry)
{
	int line = topo_lines_get(c->lines, field);

	if (!line && entry)
		line = topo_lines_get(c->lines, entry);
	return line ? line : 1;
}


/* ----------------------------------------------------------------- numbers */

/* A whole number in decimal, 'min'..'max'; -1 with the message otherwise. */
int
topo_get_u64(struct ctx *c, const char *s, uint64_t min, uint64_t max, const char *field,
	     const char *entry, uint64_t *out)
{
	unsigned long long v = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (ULLONG_MAX - 9) / 10)
			return topo_fail(c, topo_line_of(c, field, entry), field,
					 "'%s' is too large (at most %llu)", s,
					 (unsigned long long)max);
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (p == s || *p)
		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "'%s' is not a whole number (decimal digits only)", s);
	if (v < min || v > max)
		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "%llu is out of range %llu..%llu", v, (unsigned long long)min,
				 (unsigned long long)max);
	*out = v;
	return 0;
}

/* A finite decimal number in [min, max] (or [min, max) if 'open_max'). */
int
topo_get_double(struct ctx *c, const char *s, double min, double max, int open_max,
		const char *field, const char *entry, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || (s[0] && (s[0] == ' ' || s[0] == '\t')) || strpbrk(s, "xXpP") ||
	    !isfinite(v))
		return topo_fail(c, topo_line_of(c, field, entry), field, "'%s' is not a number",
				 s);
	if (!(v >= min && (open_max ? v < max : v <= max)))
		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "%s is out of range [%g, %g%c", s, min, max, open_max ? ')' : ']');
	*out = v;
	return 0;
}
