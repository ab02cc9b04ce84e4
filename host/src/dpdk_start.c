/* SPDX-License-Identifier: MIT */
/*
 * ina_dpdk_start() and ina_dpdk_stop() (ina.h): DPDK's EAL and the "dpdk:"
 * port for a library user (a binding, a framework), which has no main() of
 * ina's to start them (eal_main.c does it for ina's programs). Once per
 * process, under a lock: EAL cannot start again after it stopped. Built
 * without DPDK, the start is INA_EPORT with a sentence that says so.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina.h"
#ifdef INA_HAVE_DPDK
#include "ina/port_dpdk.h"
#endif

static pthread_mutex_t dpdk_lock = PTHREAD_MUTEX_INITIALIZER;
static enum { DPDK_NEVER, DPDK_RUNNING, DPDK_STOPPED } dpdk_state;

#ifdef INA_HAVE_DPDK
/* EAL keeps pointers into its argv: a copy that lives as long as the
 * process, so the caller (a Python list's strings) may free its own. EAL
 * also rewrites the array (it permutes it, and puts the name where "--"
 * was): the strings are freed through a second array of their own. */
static char **eal_argv, **eal_strs;
static int eal_argc;

static void
free_argv(void)
{
	for (int i = 0; eal_strs && i < eal_argc; i++)
		free(eal_strs[i]);
	free(eal_strs);
	free(eal_argv);
	eal_strs = eal_argv = NULL;
	eal_argc = 0;
}

/* A new copy; one of an earlier start that failed before EAL ran goes. */
static int
copy_argv(int argc, char **argv)
{
	free_argv();
	eal_argv = calloc((size_t)argc + 1, sizeof(*eal_argv));
	eal_strs = calloc((size_t)argc + 1, sizeof(*eal_strs));
	if (!eal_argv || !eal_strs)
		return -ENOMEM;
	for (eal_argc = 0; eal_argc < argc; eal_argc++) {
		eal_strs[eal_argc] = strdup(argv[eal_argc]);
		if (!eal_strs[eal_argc])
			return -ENOMEM;
		eal_argv[eal_argc] = eal_strs[eal_argc];
	}
	return 0;
}

/* 0, or INA_EPORT with 'err' written; '*ran' says whether EAL started (and
 * then stopped again: it cannot start twice). */
static int
start(int argc, char **argv, int *ran, char *err, size_t err_size)
{
	int ret;

	*ran = 0;
	/* First, as the programs do: a "dpdk:" config then gets the port's
	 * own sentence (EAL not started) rather than "unknown port type". */
	ret = ina_port_dpdk_register();
	if (ret < 0 && ret != -EEXIST) {
		snprintf(err, err_size, "cannot register the dpdk port: %s", strerror(-ret));
		return INA_EPORT;
	}
	if (copy_argv(argc, argv) < 0) {
		free_argv();
		snprintf(err, err_size, "cannot start DPDK: out of memory");
		return INA_EPORT;
	}
	ret = ina_dpdk_eal_init(eal_argc, eal_argv, err, err_size);
	if (ret < 0) {
		/* The sentence ina_dpdk_eal_init() wrote says why (DPDK says
		 * whether a second try can work). EAL may keep pointers into
		 * the copy: it stays. */
		return INA_EPORT;
	}
	*ran = 1;
	if (ret + 1 < argc) {
		/* EAL moved what it did not take behind what it took. */
		snprintf(err, err_size,
			 "cannot start DPDK: '%s' is no EAL option (EAL took %d of "
			 "the %d arguments; argv[0] is a name)",
			 eal_argv[ret + 1], ret, argc - 1);
		ina_dpdk_eal_cleanup();
		return INA_EPORT;
	}
	return 0;
}
#endif

int
ina_dpdk_start(int argc, char **argv, char *err, size_t err_size)
{
	char dummy[8];
	int ret;

	if (!err) {
		err = dummy;
		err_size = sizeof(dummy);
	}
	err[0] = '\0';
	if (argc < 1 || !argv || !argv[0]) {
		snprintf(err, err_size, "ina_dpdk_start: argv[0] (a name) and the EAL options");
		return -EINVAL;
	}
	for (int i = 0; i < argc; i++) {
		if (!argv[i]) {
			snprintf(err, err_size, "ina_dpdk_start: argv[%d] is NULL", i);
			return -EINVAL;
		}
	}
	pthread_mutex_lock(&dpdk_lock);
	if (dpdk_state != DPDK_NEVER) {
		snprintf(err, err_size, "cannot start DPDK: %s",
			 dpdk_state == DPDK_RUNNING
				 ? "it already runs in this process (ina_dpdk_start once)"
				 : "it stopped in this process, and EAL cannot start twice");
		pthread_mutex_unlock(&dpdk_lock);
		return INA_EPORT;
	}
#ifdef INA_HAVE_DPDK
	{
		int ran;

		ret = start(argc, argv, &ran, err, err_size);
		if (ret == 0)
			dpdk_state = DPDK_RUNNING;
		else if (ran)
			dpdk_state = DPDK_STOPPED;
	}
#else
	snprintf(err, err_size, "cannot start DPDK: this libina was built without DPDK");
	ret = INA_EPORT;
#endif
	pthread_mutex_unlock(&dpdk_lock);
	return ret;
}

void
ina_dpdk_stop(void)
{
	pthread_mutex_lock(&dpdk_lock);
	if (dpdk_state == DPDK_RUNNING) {
#ifdef INA_HAVE_DPDK
		ina_dpdk_eal_cleanup();
#endif
		dpdk_state = DPDK_STOPPED;
	}
	pthread_mutex_unlock(&dpdk_lock);
}
