/* SPDX-License-Identifier: MIT */
/*
 * EAL start-up for the programs (eal_main.h). The programs split their argv
 * as DPDK programs do: EAL options, "--", then ina's options. This file is
 * compiled into ina-switch and ina-host; built with the dpdk port
 * (INA_HAVE_DPDK) it starts EAL through ina_dpdk_eal_init() and cleans it
 * up at exit, built without it any EAL option is a clear error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/cli.h"
#include "ina/eal_main.h"
#include "ina/port.h"
#ifdef INA_HAVE_DPDK
#include "ina/port_dpdk.h" /* EAL start-up and the port's registration */
#endif

static int eal_started;
static char **eal_argv; /* EAL permutes its copy of argv; freed at exit */

/* Options only EAL has (ina's own --log-level is not among them). */
static const char *const eal_only_opts[] = {
	"-l",
	"-c",
	"-n",
	"-m",
	"-a",
	"-b",
	"-d",
	"-s",
	"-S",
	"-r",
	"-v",
	"--lcores",
	"--vdev",
	"--no-huge",
	"--no-pci",
	"--no-shconf",
	"--no-telemetry",
	"--telemetry",
	"--file-prefix",
	"--in-memory",
	"--socket-mem",
	"--socket-limit",
	"--huge-dir",
	"--huge-unlink",
	"--iova-mode",
	"--proc-type",
	"--allow",
	"--block",
	"--main-lcore",
	"--single-file-segments",
	"--legacy-mem",
	"--base-virtaddr",
	"--syslog",
	"--trace",
	"--trace-dir",
	"--trace-bufsz",
	"--trace-mode",
	"--match-allocations",
	"--vfio-intr",
	"--vfio-vf-token",
	"--no-hpet",
	"--mbuf-pool-ops-name",
	"--create-uio-dev",
	"--service-coremask",
	"--service-corelist",
	"--force-max-simd-bitwidth",
	"--vmware-tsc-map",
};

void
ina_eal_main_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ina_vdie(INA_EXIT_TRANSPORT, fmt, ap);
}

static int
eal_only_option(const char *arg)
{
	size_t len = strcspn(arg, "=");

	for (size_t i = 0; i < sizeof(eal_only_opts) / sizeof(eal_only_opts[0]); i++) {
		const char *o = eal_only_opts[i];

		if (o[1] != '-') {
			/* Short options may carry their value: "-l0", "-l", "0". */
			if (arg[0] == '-' && arg[1] == o[1] && arg[1] != '-')
				return 1;
		} else if (strlen(o) == len && strncmp(arg, o, len) == 0) {
			return 1;
		}
	}
	return 0;
}

int
ina_eal_main_wanted(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			return 1;
	return argc > 1 && eal_only_option(argv[1]);
}

int
ina_eal_main_started(void)
{
	return eal_started;
}

int
ina_eal_main_is_dpdk(const char *spec)
{
	return spec && strncmp(spec, "dpdk", 4) == 0 && (spec[4] == '\0' || spec[4] == ':');
}

void
ina_eal_main_check_spec(const char *option, const char *spec)
{
	if (ina_eal_main_is_dpdk(spec) && !eal_started)
		ina_eal_main_die("%s %s: a dpdk port needs EAL options first: %s [EAL options] -- "
				 "%s %s ...",
				 option, spec, ina_cli_prog(), option, spec);
}

void
ina_eal_main_port_failed(const char *spec, const char *err)
{
	if (err && err[0])
		ina_eal_main_die("%s", err);
	ina_eal_main_die("cannot open port %s", spec);
}

void
ina_eal_main_print_port(const struct ina_port *port, FILE *f)
{
	struct ina_port *ports[1] = { (struct ina_port *)(uintptr_t)port };

	if (port)
		ina_port_print_counters(ports, 1, f);
}

#ifdef INA_HAVE_DPDK
static void
eal_at_exit(void)
{
	ina_dpdk_eal_cleanup();
	eal_started = 0;
	free(eal_argv);
	eal_argv = NULL;
}

int
ina_eal_main_start(const char *prog, int *argc, char ***argv)
{
	char err[256];
	int ret;

	ina_cli_set_prog(prog);
	ret = ina_port_dpdk_register();
	if (ret < 0 && ret != -EEXIST)
		ina_eal_main_die("cannot register the dpdk port: %s", strerror(-ret));
	if (!ina_eal_main_wanted(*argc, *argv))
		return 0;
	eal_argv = calloc((size_t)*argc + 1, sizeof(*eal_argv));
	if (!eal_argv)
		ina_eal_main_die("cannot start DPDK: out of memory");
	memcpy(eal_argv, *argv, (size_t)*argc * sizeof(*eal_argv));
	ret = ina_dpdk_eal_init(*argc, eal_argv, err, sizeof(err));
	if (ret < 0) {
		free(eal_argv);
		eal_argv = NULL;
		ina_eal_main_die("cannot start DPDK: %s (EAL options go before '--', ina's "
				 "after it)",
				 err);
	}
	eal_started = 1;
	atexit(eal_at_exit);
	/* As DPDK programs do: EAL put the program name at argv[ret]. */
	eal_argv[ret] = (*argv)[0];
	*argc -= ret;
	*argv = eal_argv + ret;
	optind = 0; /* getopt starts afresh on the rest (glibc) */
	return 1;
}
#else
int
ina_eal_main_start(const char *prog, int *argc, char ***argv)
{
	ina_cli_set_prog(prog);
	if (ina_eal_main_wanted(*argc, *argv))
		ina_eal_main_die("cannot start DPDK: this %s was built without DPDK", prog);
	return 0;
}
#endif
