/* SPDX-License-Identifier: MIT */
/* Command-line helpers (cli.h): die with the program's name, strict option numbers. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ina/cli.h"
#include "ina/log.h"
#include "ina/util.h"

static const char *cli_prog = "ina";

void
ina_cli_set_prog(const char *prog)
{
	cli_prog = prog;
}

const char *
ina_cli_prog(void)
{
	return cli_prog;
}

void
ina_vdie(int status, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", cli_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	exit(status);
}

void
ina_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ina_vdie(2, fmt, ap);
}

uint64_t
ina_cli_u64(const char *opt, const char *arg, uint64_t min, uint64_t max)
{
	uint64_t v;

	if (ina_parse_u64(arg, min, max, &v) < 0)
		ina_die("--%s: '%s' is not a number in %" PRIu64 "..%" PRIu64, opt, arg, min, max);
	return v;
}

void
ina_cli_log_level(const char *arg)
{
	int level = ina_log_level_parse(arg);

	if (level < 0)
		ina_die("--log-level: '%s' is not err, warn, info or debug", arg);
	ina_log_set_level((enum ina_log_level)level);
}
