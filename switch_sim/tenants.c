/* SPDX-License-Identifier: MIT */
/*
 * Reading a tenants file (tenants.h) with libyaml's event parser: a mapping
 * with one key, 'tenants', a sequence of mappings of scalars. Every field is
 * required and checked strictly; the first error is reported with its line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include <sodium.h>

#include "tenants.h"

#define TENANTS_FILE_MAX (1u << 20)

struct tparse {
	yaml_parser_t yp;
	yaml_event_t ev;
	int have_ev;
	const char *name;
	char *err;
	size_t err_size;
	struct tenants *t;
};

static void __attribute__((format(printf, 3, 4)))
fail(struct tparse *tp, size_t line0, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(tp->err, tp->err_size, "%s:%zu: %s", tp->name, line0 + 1, msg);
}

/* The next event into tp->ev; -1 (reported) on a YAML error. */
static int
next(struct tparse *tp)
{
	if (tp->have_ev)
		yaml_event_delete(&tp->ev);
	tp->have_ev = 0;
	if (!yaml_parser_parse(&tp->yp, &tp->ev)) {
		fail(tp, tp->yp.problem_mark.line, "not YAML: %s",
		     tp->yp.problem ? tp->yp.problem : "parse error");
		return -1;
	}
	tp->have_ev = 1;
	if (tp->ev.type == YAML_ALIAS_EVENT) {
		fail(tp, tp->ev.start_mark.line, "aliases are not allowed here");
		return -1;
	}
	return 0;
}

static int
expect(struct tparse *tp, yaml_event_type_t type, const char *what)
{
	if (next(tp) < 0)
		return -1;
	if (tp->ev.type != type) {
		fail(tp, tp->ev.start_mark.line, "expected %s", what);
		return -1;
	}
	return 0;
}

static const char *
scalar(const struct tparse *tp)
{
	return (const char *)tp->ev.data.scalar.value;
}

/* A decimal number lo..hi, strictly (no sign, no leading zero, no suffix). */
static int
parse_uint(struct tparse *tp, const char *field, unsigned long lo, unsigned long hi,
	   unsigned long *out)
{
	const char *s = scalar(tp);
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	if (!*s || *s < '0' || *s > '9' || (s[0] == '0' && s[1]) || *end || errno || *out < lo ||
	    *out > hi) {
		fail(tp, tp->ev.start_mark.line, "%s: '%s' is not a number %lu..%lu", field, s, lo,
		     hi);
		return -1;
	}
	return 0;
}

enum { F_NAME = 1, F_INDEX = 2, F_KEY = 4, F_JOBS = 8, F_SLOTS = 16, F_WEIGHT = 32, F_ALL = 63 };

/* One tenant's mapping, its MAPPING_START already read. */
static int
parse_tenant(struct tparse *tp, size_t n)
{
	struct tenant te = { 0 };
	size_t line = tp->ev.start_mark.line;
	unsigned seen = 0;
	unsigned long v;

	for (;;) {
		char field[32];
		size_t fline;
		unsigned bit;

		if (next(tp) < 0)
			goto err;
		if (tp->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (tp->ev.type != YAML_SCALAR_EVENT) {
			fail(tp, tp->ev.start_mark.line, "tenants[%zu]: expected a field name", n);
			goto err;
		}
		snprintf(field, sizeof(field), "%s", scalar(tp));
		fline = tp->ev.start_mark.line;
		bit = !strcmp(field, "name")	     ? F_NAME
		      : !strcmp(field, "index")	     ? F_INDEX
		      : !strcmp(field, "key")	     ? F_KEY
		      : !strcmp(field, "jobs")	     ? F_JOBS
		      : !strcmp(field, "slots")	     ? F_SLOTS
		      : !strcmp(field, "max_weight") ? F_WEIGHT
						     : 0;
		if (!bit) {
			fail(tp, fline,
			     "tenants[%zu].%s: unknown field (name, index, key, jobs, slots, "
			     "max_weight)",
			     n, field);
			goto err;
		}
		if (seen & bit) {
			fail(tp, fline, "tenants[%zu].%s: given twice", n, field);
			goto err;
		}
		seen |= bit;
		if (next(tp) < 0)
			goto err;
		if (tp->ev.type != YAML_SCALAR_EVENT) {
			fail(tp, tp->ev.start_mark.line, "tenants[%zu].%s: expected a value", n,
			     field);
			goto err;
		}
		switch (bit) {
		case F_NAME: {
			const char *s = scalar(tp);
			size_t len = strlen(s);

			if (len == 0 || len > TENANT_NAME_MAX ||
			    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				      "0123456789_-.") != len) {
				fail(tp, fline,
				     "tenants[%zu].name: 1 to %u letters, digits, '_', '-' or '.'",
				     n, TENANT_NAME_MAX);
				goto err;
			}
			memcpy(te.name, s, len + 1);
			break;
		}
		case F_INDEX:
			if (parse_uint(tp, "index", 1, INA_TENANT_MAX, &v) < 0)
				goto err;
			te.index = (uint8_t)v;
			break;
		case F_KEY: {
			char why[200];

			if (ina_auth_key_parse(scalar(tp), te.key, why, sizeof(why)) < 0) {
				fail(tp, fline, "tenants[%zu].key: %s", n, why);
				goto err;
			}
			break;
		}
		case F_JOBS:
			if (parse_uint(tp, "jobs", 1, 65535, &v) < 0)
				goto err;
			te.max_jobs = (uint16_t)v;
			break;
		case F_SLOTS:
			if (parse_uint(tp, "slots", 1, UINT32_MAX, &v) < 0)
				goto err;
			te.max_slots = (uint32_t)v;
			break;
		default:
			if (parse_uint(tp, "max_weight", 1, 255, &v) < 0)
				goto err;
			te.max_weight = (uint8_t)v;
			break;
		}
	}
	if (seen != F_ALL) {
		static const char *const names[] = { "name", "index", "key",
						     "jobs", "slots", "max_weight" };

		for (unsigned b = 0; b < 6; b++)
			if (!(seen >> b & 1)) {
				fail(tp, line,
				     "tenants[%zu]: no %s (every tenant has name, index, "
				     "key, jobs, slots and max_weight)",
				     n, names[b]);
				goto err;
			}
	}
	if (tp->t->by_index[te.index].index) {
		fail(tp, line, "tenants[%zu].index: %u is tenant '%s''s already", n, te.index,
		     tp->t->by_index[te.index].name);
		goto err;
	}
	for (unsigned i = 1; i <= INA_TENANT_MAX; i++)
		if (tp->t->by_index[i].index && !strcmp(tp->t->by_index[i].name, te.name)) {
			fail(tp, line, "tenants[%zu].name: '%s' is given twice", n, te.name);
			goto err;
		}
	tp->t->by_index[te.index] = te;
	tp->t->count++;
	sodium_memzero(&te, sizeof(te));
	return 0;
err:
	sodium_memzero(&te, sizeof(te));
	return -1;
}

static int
parse_doc(struct tparse *tp)
{
	size_t n = 0;
	int have = 0;

	if (expect(tp, YAML_STREAM_START_EVENT, "a YAML stream") < 0)
		return -1;
	if (next(tp) < 0)
		return -1;
	if (tp->ev.type != YAML_DOCUMENT_START_EVENT) {
		fail(tp, tp->ev.start_mark.line, "empty: expected 'tenants:'");
		return -1;
	}
	if (expect(tp, YAML_MAPPING_START_EVENT, "a mapping with 'tenants:'") < 0)
		return -1;
	for (;;) {
		if (next(tp) < 0)
			return -1;
		if (tp->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (tp->ev.type != YAML_SCALAR_EVENT || strcmp(scalar(tp), "tenants") != 0 ||
		    have) {
			fail(tp, tp->ev.start_mark.line, "%s: the file has one field, 'tenants'",
			     tp->ev.type == YAML_SCALAR_EVENT ? scalar(tp) : "?");
			return -1;
		}
		have = 1;
		if (expect(tp, YAML_SEQUENCE_START_EVENT, "tenants: a list of tenants") < 0)
			return -1;
		for (;;) {
			if (next(tp) < 0)
				return -1;
			if (tp->ev.type == YAML_SEQUENCE_END_EVENT)
				break;
			if (tp->ev.type != YAML_MAPPING_START_EVENT) {
				fail(tp, tp->ev.start_mark.line, "tenants[%zu]: expected a mapping",
				     n);
				return -1;
			}
			if (parse_tenant(tp, n++) < 0)
				return -1;
		}
	}
	if (!have || tp->t->count == 0) {
		fail(tp, tp->ev.start_mark.line, "tenants: no tenant given");
		return -1;
	}
	if (next(tp) < 0)
		return -1;
	if (tp->ev.type != YAML_DOCUMENT_END_EVENT) {
		fail(tp, tp->ev.start_mark.line, "one document only");
		return -1;
	}
	if (next(tp) < 0)
		return -1;
	if (tp->ev.type != YAML_STREAM_END_EVENT) {
		fail(tp, tp->ev.start_mark.line, "one document only");
		return -1;
	}
	return 0;
}

struct tenants *
tenants_parse(const char *yaml, size_t len, const char *name, char *err, size_t err_size)
{
	struct tparse tp = { .name = name ? name : "<tenants>", .err = err, .err_size = err_size };
	int ret;

	if (err_size)
		err[0] = '\0';
	if (ina_auth_init() < 0) {
		snprintf(err, err_size, "%s: libsodium failed to start", tp.name);
		errno = EINVAL;
		return NULL;
	}
	tp.t = sodium_malloc(sizeof(*tp.t));
	if (!tp.t || !yaml_parser_initialize(&tp.yp)) {
		snprintf(err, err_size, "%s: out of memory", tp.name);
		if (tp.t)
			sodium_free(tp.t);
		errno = ENOMEM;
		return NULL;
	}
	memset(tp.t, 0, sizeof(*tp.t));
	yaml_parser_set_input_string(&tp.yp, (const unsigned char *)yaml, len);
	ret = parse_doc(&tp);
	if (tp.have_ev)
		yaml_event_delete(&tp.ev);
	yaml_parser_delete(&tp.yp);
	if (ret < 0) {
		tenants_free(tp.t);
		errno = EINVAL;
		return NULL;
	}
	return tp.t;
}

struct tenants *
tenants_load(const char *path, char *err, size_t err_size)
{
	struct tenants *t = NULL;
	struct stat stt;
	char *text = NULL;
	FILE *f = fopen(path, "r");
	size_t len;

	if (!f) {
		snprintf(err, err_size, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fileno(f), &stt) < 0 || stt.st_size > TENANTS_FILE_MAX) {
		snprintf(err, err_size, "%s: not a readable file of at most %u bytes", path,
			 TENANTS_FILE_MAX);
		goto out;
	}
	if (stt.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, err_size,
			 "%s: holds keys but others may read it (mode %03o): chmod 600 %s", path,
			 (unsigned)(stt.st_mode & 0777), path);
		goto out;
	}
	if (ina_auth_init() < 0) {
		snprintf(err, err_size, "%s: libsodium failed to start", path);
		goto out;
	}
	text = sodium_malloc((size_t)stt.st_size + 1);
	if (!text) {
		snprintf(err, err_size, "%s: out of memory", path);
		goto out;
	}
	len = fread(text, 1, (size_t)stt.st_size, f);
	if (ferror(f)) {
		snprintf(err, err_size, "%s: cannot read: %s", path, strerror(errno));
		goto out;
	}
	t = tenants_parse(text, len, path, err, err_size);
	sodium_memzero(text, len);
out:
	if (text)
		sodium_free(text);
	fclose(f);
	return t;
}

const struct tenant *
tenants_find(const struct tenants *t, const char *name)
{
	char *end;
	unsigned long i;

	if (!t || !*name)
		return NULL;
	for (unsigned k = 1; k <= INA_TENANT_MAX; k++)
		if (t->by_index[k].index && strcmp(t->by_index[k].name, name) == 0)
			return &t->by_index[k];
	errno = 0;
	i = strtoul(name, &end, 10);
	if (*end || errno || *name < '0' || *name > '9' || i > INA_TENANT_MAX)
		return NULL;
	return tenants_get(t, (uint8_t)i);
}

void
tenants_free(struct tenants *t)
{
	if (t)
		sodium_free(t); /* wipes */
}

int
tenants_entry_wide(char *buf, size_t size, const char *name, uint8_t index,
		   const uint8_t key[INA_TENANT_KEY_SIZE])
{
	char hex[2 * INA_TENANT_KEY_SIZE + 1];
	int n;

	sodium_bin2hex(hex, sizeof(hex), key, INA_TENANT_KEY_SIZE);
	n = snprintf(buf, size,
		     "  - {name: \"%s\", index: %u, key: %s, jobs: 64, slots: 1048576, "
		     "max_weight: 255}\n",
		     name, index, hex);
	sodium_memzero(hex, sizeof(hex));
	return n;
}
