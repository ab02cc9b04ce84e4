/* SPDX-License-Identifier: MIT */
/* The sparsifier's command-line options (sparsify_cli.h). */
#include <string.h>

#include "ina/cli.h"
#include "ina/util.h"
#include "sparsify_cli.h"

void
sparsify_cli_defaults(struct ina_sparsify *sp)
{
	struct ina_config cfg;

	ina_config_init(&cfg);
	*sp = cfg.sparsify;
}

static const char *const mode_names[] = {
	[INA_SPARSIFY_OFF] = "off",
	[INA_SPARSIFY_TOPK] = "topk",
	[INA_SPARSIFY_FILTER] = "filter",
	[INA_SPARSIFY_BOTH] = "both",
};

const char *
sparsify_cli_mode_name(enum ina_sparsify_mode mode)
{
	if ((unsigned)mode >= sizeof(mode_names) / sizeof(mode_names[0]) || !mode_names[mode])
		return "?";
	return mode_names[mode];
}

static enum ina_sparsify_mode
parse_mode(const char *arg)
{
	for (unsigned m = 0; m < sizeof(mode_names) / sizeof(mode_names[0]); m++)
		if (mode_names[m] && strcmp(arg, mode_names[m]) == 0)
			return (enum ina_sparsify_mode)m;
	ina_die("--sparsify: '%s' is not off, topk, filter or both", arg);
}

/* A fraction in (0, 1] for option --'name'. */
static double
fraction(const char *name, const char *arg)
{
	double v;

	if (ina_parse_double(arg, 1e-9, 1.0, &v) < 0)
		ina_die("--%s: '%s' is not a number in (0, 1]", name, arg);
	return v;
}

int
sparsify_cli_parse(int opt, const char *arg, struct ina_sparsify *sp)
{
	double v;

	switch (opt) {
	case SPARSIFY_OPT_MODE:
		sp->mode = parse_mode(arg);
		return 1;
	case SPARSIFY_OPT_KEEP_DENSITY:
		sp->density = fraction("keep-density", arg);
		sp->target = INA_TOPK_DENSITY;
		return 1;
	case SPARSIFY_OPT_KEEP_MASS:
		sp->mass = fraction("keep-mass", arg);
		sp->target = INA_TOPK_MASS;
		return 1;
	case SPARSIFY_OPT_B0:
		if (ina_parse_double(arg, 0, 1e30, &v) < 0)
			ina_die("--filter-b0: '%s' is not a number >= 0", arg);
		sp->filter_b0 = (float)v;
		return 1;
	case SPARSIFY_OPT_DECAY:
		sp->filter_decay = fraction("filter-decay", arg);
		return 1;
	case SPARSIFY_OPT_RESULTS_SCALE:
		if (ina_parse_double(arg, 1e-9, 1e9, &v) < 0)
			ina_die("--filter-results-scale: '%s' is not a number > 0", arg);
		sp->filter_results_scale = (float)v;
		return 1;
	case SPARSIFY_OPT_NO_RESULTS:
		sp->filter_results = 0;
		return 1;
	default:
		return 0;
	}
}

const char sparsify_cli_help[] =
	"  --sparsify MODE       off (default), topk, filter or both: the sparsifier\n"
	"                        with residual carry-over\n"
	"  --keep-density D      topk: fraction of the blocks sent (default 0.1)\n"
	"  --keep-mass M         topk: the fewest blocks with this fraction of the\n"
	"                        sum of squares instead\n"
	"  --filter-b0 V         filter: hold back |v| < V * decay^round (default 0)\n"
	"  --filter-decay F      filter: decay per round, (0, 1] (default 1)\n"
	"  --no-filter-results   filter: send every result in full (by default a\n"
	"                        result block whose sum is under the bound comes\n"
	"                        back DEFERRED and each rank keeps its part)\n"
	"  --filter-results-scale X  the result bound is X times the filter's\n"
	"                        (default: the world size: a block whose average\n"
	"                        is under the bound is deferred)\n";
