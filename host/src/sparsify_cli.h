/* SPDX-License-Identifier: MIT */
/*
 * The sparsifier's command-line options, one set for every program that
 * drives the API's sparsifier (ina-host, ina-train): the getopt_long entries,
 * their parser filling struct ina_sparsify (ina.h), the help text and the
 * one-line description a report prints.
 */
#ifndef INA_HOST_SPARSIFY_CLI_H
#define INA_HOST_SPARSIFY_CLI_H

#include <getopt.h>
#include <stddef.h>

#include "ina.h"

/* getopt_long values of the options; a program's own values stay below. */
enum {
	SPARSIFY_OPT_MODE = 0x1000,
	SPARSIFY_OPT_KEEP_DENSITY,
	SPARSIFY_OPT_KEEP_MASS,
	SPARSIFY_OPT_B0,
	SPARSIFY_OPT_DECAY,
	SPARSIFY_OPT_RESULTS_SCALE,
	SPARSIFY_OPT_NO_RESULTS,
};

/* The entries for a program's struct option table. */
#define SPARSIFY_CLI_OPTIONS \
	{ "sparsify", required_argument, NULL, SPARSIFY_OPT_MODE }, \
		{ "keep-density", required_argument, NULL, SPARSIFY_OPT_KEEP_DENSITY }, \
		{ "keep-mass", required_argument, NULL, SPARSIFY_OPT_KEEP_MASS }, \
		{ "filter-b0", required_argument, NULL, SPARSIFY_OPT_B0 }, \
		{ "filter-decay", required_argument, NULL, SPARSIFY_OPT_DECAY }, \
		{ "filter-results-scale", required_argument, NULL, SPARSIFY_OPT_RESULTS_SCALE }, \
	{ \
		"no-filter-results", no_argument, NULL, SPARSIFY_OPT_NO_RESULTS \
	}

/* ina-train's first names of --keep-density and --keep-mass, still accepted
 * there (ina-host's --density is its synthetic gradient's). */
#define SPARSIFY_CLI_ALIASES \
	{ "density", required_argument, NULL, SPARSIFY_OPT_KEEP_DENSITY }, \
	{ \
		"mass", required_argument, NULL, SPARSIFY_OPT_KEEP_MASS \
	}

/* The API's defaults: off; topk keeps 0.1 of the blocks (or mass 0.5); the
 * filter's bound 0, decay 1, results filtered. */
void sparsify_cli_defaults(struct ina_sparsify *sp);

/* Applies option 'opt' (getopt_long's value) with argument 'arg' to 'sp':
 * 1 if it was a sparsifier option, 0 if not; ina_die() on a bad value. */
int sparsify_cli_parse(int opt, const char *arg, struct ina_sparsify *sp);

/* The options' help, lines of the programs' --help. */
extern const char sparsify_cli_help[];

/* "off", "topk", "filter" or "both". */
const char *sparsify_cli_mode_name(enum ina_sparsify_mode mode);

#endif
