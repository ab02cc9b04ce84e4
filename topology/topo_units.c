/* SPDX-License-Identifier: MIT */
/* Rates and durations of topology files, parsed and printed (topo_units.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "topo_units.h"

struct unit {
	const char *name;
	uint64_t scale;
};

static const struct unit rate_units[] = {
	{ "tbit", 1000000000000ULL }, { "gbit", 1000000000ULL }, { "mbit", 1000000ULL },
	{ "kbit", 1000ULL },	      { "bit", 1ULL },		 { NULL, 0 },
};

static const struct unit time_units[] = {
	{ "s", 1000000000ULL }, { "ms", 1000000ULL }, { "us", 1000ULL },
	{ "ns", 1ULL },		{ NULL, 0 },
};

/*
 * "<digits>[.<digits>]<unit>" times the unit's scale, exactly: a value that
 * is not a whole number of base units, or above 'max', is -ERANGE.
 */
static int
parse_scaled(const char *s, const struct unit *units, int first_letter_any_case, uint64_t max,
	     uint64_t *out)
{
	unsigned __int128 mant = 0, div = 1, v;
	const char *p = s;
	int digits = 0, frac = 0;

	if (!s)
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++, digits++) {
		if (mant > (unsigned __int128)1 << 80)
			return -ERANGE;
		mant = mant * 10 + (unsigned)(*p - '0');
	}
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++, frac++) {
			if (frac >= 18 || mant > (unsigned __int128)1 << 80)
				return -ERANGE;
			mant = mant * 10 + (unsigned)(*p - '0');
			div *= 10;
		}
		if (!frac)
			return -EINVAL;
	}
	if (!digits)
		return -EINVAL;
	if (!*p) {
		/* A bare number is only allowed for zero. */
		if (mant)
			return -EINVAL;
		*out = 0;
		return 0;
	}
	for (const struct unit *u = units; u->name; u++) {
		size_t n = strlen(u->name);
		int match = first_letter_any_case ? tolower((unsigned char)p[0]) == u->name[0] &&
							    strcmp(p + 1, u->name + 1) == 0
						  : strcmp(p, u->name) == 0;

		if (!match || strlen(p) != n)
			continue;
		v = mant * u->scale;
		if (v % div)
			return -ERANGE;
		v /= div;
		if (v > max)
			return -ERANGE;
		*out = (uint64_t)v;
		return 0;
	}
	return -EINVAL;
}

int
topo_parse_rate(const char *s, uint64_t *bps)
{
	return parse_scaled(s, rate_units, 1, TOPO_RATE_MAX, bps);
}

int
topo_parse_duration(const char *s, uint64_t *ns)
{
	return parse_scaled(s, time_units, 0, TOPO_DURATION_MAX, ns);
}

static char *
format_scaled(uint64_t v, const struct unit *units, const char *const *names, char *buf,
	      unsigned size)
{
	if (!v) {
		snprintf(buf, size, "0");
		return buf;
	}
	for (unsigned i = 0; units[i].name; i++) {
		if (v % units[i].scale == 0) {
			snprintf(buf, size, "%llu%s", (unsigned long long)(v / units[i].scale),
				 names[i]);
			return buf;
		}
	}
	snprintf(buf, size, "%llu", (unsigned long long)v);
	return buf;
}

char *
topo_format_rate(uint64_t bps, char *buf, unsigned size)
{
	static const char *const names[] = { "Tbit", "Gbit", "Mbit", "kbit", "bit" };

	return format_scaled(bps, rate_units, names, buf, size);
}

char *
topo_format_duration(uint64_t ns, char *buf, unsigned size)
{
	static const char *const names[] = { "s", "ms", "us", "ns" };

	return format_scaled(ns, time_units, names, buf, size);
}
