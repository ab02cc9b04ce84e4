/* SPDX-License-Identifier: MIT */
/*
 * The pipeline's state as text, for the programs (ina-switch's SIGUSR1 and
 * exit report, ina-replay, tests): its counters and its jobs. Not part of
 * the pure core (pipeline.h): these print.
 */
#ifndef INA_PIPELINE_DUMP_H
#define INA_PIPELINE_DUMP_H

#include <stdio.h>

#include "pipeline.h"

/* Prints the non-zero counters, one "name value" per line. */
void pipeline_stats_print(const struct pipeline *p, FILE *f);
void pipeline_stats_fprint(const struct pipeline_stats *st, FILE *f);
/* Prints each job's state: ranks joined and finished, standby or taken
 * over, and for every lane with an open block, the block and the ranks it
 * still waits on (standing by: every lane's stored result). */
void pipeline_dump(const struct pipeline *p, FILE *f);

#endif
