/* SPDX-License-Identifier: MIT */
/*
 * ina-switch --lcores K (K > 1): the glue between main.c and the partitioned
 * switch (lcores.h). run_lcores.c is compiled into ina-switch only when the
 * library ina_switch_lcores exists (DPDK builds, INA_HAVE_LCORES). No DPDK
 * header here or there.
 */
#ifndef INA_SWITCH_RUN_LCORES_H
#define INA_SWITCH_RUN_LCORES_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "ina/port.h"
#include "pipeline.h"

#define SWITCH_RUN_LCORES_MAX 16 /* = SWITCH_LCORES_MAX */

/*
 * Opens K port objects "SPEC,queue=P,queues=K" (P = 0..K-1; 'spec' is a dpdk
 * spec without queue= or queues=), one pipeline partition on each, spread
 * over EAL's lcores (partition 0 on the main lcore, partition p on the p-th
 * worker; with fewer lcores than K they wrap around and share, in turn), and
 * runs them until '*stop'. '*dump' prints the counters meanwhile; at the end
 * they are printed once more (one line per partition, then the pipeline's
 * counters added over the partitions), and the ports are closed. With 'mh'
 * (--metrics; NULL: none) partition 0's lcore answers its scrapes with every
 * partition's snapshot ('start_time_s': the switch's start, Unix time).
 * Returns the exit status: 0; it dies (INA_EXIT_TRANSPORT) when a port will
 * not open, or with status 2 when the partitions cannot be made.
 */
struct metrics_http;
int switch_run_lcores(const char *spec, uint16_t k, struct pipeline_config *pipe,
		      int slot_elems_set, volatile sig_atomic_t *stop, volatile sig_atomic_t *dump,
		      struct metrics_http *mh, double start_time_s);

#endif
