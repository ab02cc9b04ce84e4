/* SPDX-License-Identifier: MIT */
/*
 * EAL start-up for the programs' main() (ina-switch, ina-host): the DPDK
 * synopsis "PROG [EAL options] -- [ina options]". It is compiled into each
 * program, not into ina_common, and calls the dpdk port (port_dpdk.h) only
 * when the program is built with it (INA_HAVE_DPDK); it includes no DPDK
 * header. Without EAL options nothing changes: the programs run on UDP.
 */
#ifndef INA_EAL_MAIN_H
#define INA_EAL_MAIN_H

#include <stdio.h>

/* Exit status of a program whose transport could not start (EAL, a port). */
#define INA_EXIT_TRANSPORT 3

/*
 * 1 if 'argv' carries EAL options: it holds a "--", or its first argument is
 * an option only EAL has (-l, --vdev, --no-huge, --file-prefix, ...).
 */
int ina_eal_main_wanted(int argc, char **argv);

/*
 * Starts EAL when ina_eal_main_wanted(), registers the dpdk port type (also
 * when EAL is not started, so that "dpdk:..." specs get a clear error), and
 * leaves in '*argc'/'*argv' the program name followed by ina's own options.
 * EAL is cleaned up at exit. Returns 1 if EAL started, 0 if no EAL options
 * were given. When EAL cannot start (or the program was built without DPDK),
 * prints one line "PROG: ..." and exits with INA_EXIT_TRANSPORT.
 */
int ina_eal_main_start(const char *prog, int *argc, char ***argv);

/* 1 once EAL has started. */
int ina_eal_main_started(void);

/* 1 if 'spec' names a dpdk port ("dpdk" or "dpdk:..."). */
int ina_eal_main_is_dpdk(const char *spec);

/*
 * Dies with INA_EXIT_TRANSPORT unless a dpdk 'spec' can be opened now: EAL
 * must have started. 'option' names the option that gave it ("--port").
 */
void ina_eal_main_check_spec(const char *option, const char *spec);

/*
 * Dies with INA_EXIT_TRANSPORT after a port of 'spec' failed to open:
 * "PROG: ERR", where 'err' is the sentence of ina_port_open() ("cannot open
 * port SPEC: WHY") or of ina_open(), or "PROG: cannot open port SPEC" when
 * 'err' is empty.
 */
void ina_eal_main_port_failed(const char *spec, const char *err) __attribute__((noreturn));

struct ina_port;
/* ina_port_print_counters() (port.h) of one port: the faults injected
 * besides drops, port_csum_bad and the backend's own counters. */
void ina_eal_main_print_port(const struct ina_port *port, FILE *f);

/* Prints "PROG: message" to stderr and exits with INA_EXIT_TRANSPORT. */
void ina_eal_main_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
