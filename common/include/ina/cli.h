/* SPDX-License-Identifier: MIT */
/*
 * Command-line helpers shared by the programs (ina-switch, ina-host): the one
 * place a program exits on bad input (STYLE: exit() only through die), and
 * option values parsed strictly or refused with a message naming the option.
 */
#ifndef INA_CLI_H
#define INA_CLI_H

#include <stdarg.h>
#include <stdint.h>

/* Name printed before every message of ina_die(), e.g. "ina-switch". */
void ina_cli_set_prog(const char *prog);
const char *ina_cli_prog(void);

/* Prints "PROG: message" to stderr and exits with status 2. */
void ina_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The same with another exit status (eal_main.h: 3, the transport). */
void ina_vdie(int status, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0), noreturn));

/* The value of option --'opt' as a whole number in [min, max], or ina_die(). */
uint64_t ina_cli_u64(const char *opt, const char *arg, uint64_t min, uint64_t max);

/* Sets the log level from option --log-level's value, or ina_die(). */
void ina_cli_log_level(const char *arg);

#endif
