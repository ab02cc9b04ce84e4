/* SPDX-License-Identifier: MIT */
/*
 * The one printer of a port's counters besides its traffic (port.h):
 * injected faults, checksum drops and the backend's own counters (the xstats
 * op), added over the queues of a port. ina-switch prints them with its
 * stats, one port or --lcores K queues alike.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ina/port.h"

#define MAX_XSTATS 32

static const struct {
	const char *name;
	size_t off;
} fault_rows[] = {
	{ "port_inject_dup", offsetof(struct ina_port_stats, inject_dup) },
	{ "port_inject_reorder", offsetof(struct ina_port_stats, inject_reorder) },
	{ "port_inject_delay", offsetof(struct ina_port_stats, inject_delay) },
	{ "port_inject_corrupt", offsetof(struct ina_port_stats, inject_corrupt) },
	{ "port_csum_bad", offsetof(struct ina_port_stats, rx_csum_bad) },
};

static uint64_t
stat_at(const struct ina_port_stats *st, size_t off)
{
	uint64_t v;

	memcpy(&v, (const char *)st + off, sizeof(v));
	return v;
}

static void
print_row(FILE *f, const char *name, uint64_t v)
{
	if (v)
		fprintf(f, "  %-24s %" PRIu64 "\n", name, v);
}

void
ina_port_print_counters(struct ina_port *const *ports, unsigned k, FILE *f)
{
	struct ina_port_xstat sum[MAX_XSTATS], xs[MAX_XSTATS];
	unsigned nb_x = 0;

	if (!ports || k == 0 || !ports[0])
		return;
	for (size_t r = 0; r < sizeof(fault_rows) / sizeof(fault_rows[0]); r++) {
		uint64_t v = 0;

		for (unsigned p = 0; p < k; p++)
			v += stat_at(&ports[p]->stats, fault_rows[r].off);
		print_row(f, fault_rows[r].name, v);
	}
	for (unsigned p = 0; p < k; p++) {
		unsigned n = ina_port_xstats(ports[p], xs, MAX_XSTATS);

		if (n > MAX_XSTATS)
			n = MAX_XSTATS;
		if (p == 0) {
			nb_x = n;
			for (unsigned i = 0; i < n; i++)
				sum[i] = (struct ina_port_xstat){ xs[i].name, 0 };
		}
		for (unsigned i = 0; i < n && i < nb_x; i++)
			sum[i].value += xs[i].value;
	}
	for (unsigned i = 0; i < nb_x; i++)
		print_row(f, sum[i].name, sum[i].value);
}
