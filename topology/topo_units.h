/* SPDX-License-Identifier: MIT */
/*
 * The units of a topology file: rates ("10Gbit", "100Mbit", "0" for
 * unshaped) and durations ("50us", "1ms", "0"), parsed strictly into
 * integers (topologies/README.md, "Units").
 */
#ifndef INA_TOPO_UNITS_H
#define INA_TOPO_UNITS_H

#include <stdint.h>

#define TOPO_RATE_MAX 1000000000000ULL	 /* 1 Tbit/s */
#define TOPO_DURATION_MAX 10000000000ULL /* 10 s */

/* "<number><unit>", unit one of bit, kbit, mbit, gbit, tbit (powers of 1000,
 * the first letter in either case), or "0". 0, or -EINVAL for a malformed
 * rate, -ERANGE for one above TOPO_RATE_MAX or a fraction of a bit/s. */
int topo_parse_rate(const char *s, uint64_t *bps);

/* "<number><unit>", unit one of ns, us, ms, s, or "0". 0, -EINVAL or
 * -ERANGE (above TOPO_DURATION_MAX or a fraction of a nanosecond). */
int topo_parse_duration(const char *s, uint64_t *ns);

/* Writes 'bps' as the shortest exact "<n><unit>" ("10Gbit", "1500kbit",
 * "0") into buf; returns buf. */
char *topo_format_rate(uint64_t bps, char *buf, unsigned size);
char *topo_format_duration(uint64_t ns, char *buf, unsigned size);

#endif
