/* SPDX-License-Identifier: MIT */
/*
 * Logging: INA_LOG(LEVEL, fmt, ...) with levels ERR, WARN, INFO, DEBUG, and
 * INA_LOG_RL for messages that could repeat (at most a few a second per call
 * site). The backend writes to stderr, or hands each line to a sink (a
 * library user's logger, ina_set_logger()); DEBUG compiles out unless
 * INA_DEBUG_LOG is defined. Never log per packet on a hot path: count instead.
 */
#ifndef INA_LOG_H
#define INA_LOG_H

#include <stdint.h>

enum ina_log_level { INA_LOG_ERR = 0, INA_LOG_WARN, INA_LOG_INFO, INA_LOG_DEBUG };

/* Messages above 'level' are not printed. Default INFO. */
void ina_log_set_level(enum ina_log_level level);
enum ina_log_level ina_log_get_level(void);
/* Parses "err", "warn", "info", "debug"; returns -1 if none. */
int ina_log_level_parse(const char *name);
/* Prefix put before every message, e.g. "ina-switch" or "rank 2". */
void ina_log_set_ident(const char *ident);

/*
 * Lines go to 'fn' instead of stderr: the message alone (no time, identity or
 * level prefix; the level is an argument), formatted once, from whichever
 * thread logs. NULL goes back to stderr. Process-wide; set it before the
 * threads that log start (a change while they log is safe: a line goes to
 * the old sink or the new one).
 */
typedef void (*ina_log_sink_fn)(enum ina_log_level level, const char *line, void *arg);
void ina_log_set_sink(ina_log_sink_fn fn, void *arg);

void ina_log_write(enum ina_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* 1 if a message from the call site owning 'last_ns' may print now. */
int ina_log_ratelimit(uint64_t *last_ns, uint64_t interval_ns);

#ifndef INA_DEBUG_LOG
#define INA_DEBUG_LOG 0
#endif

#define INA_LOG(level, ...) \
	do { \
		if ((INA_LOG_##level != INA_LOG_DEBUG || INA_DEBUG_LOG) && \
		    INA_LOG_##level <= ina_log_get_level()) \
			ina_log_write(INA_LOG_##level, __VA_ARGS__); \
	} while (0)

#define INA_LOG_RL(level, ...) \
	do { \
		static uint64_t ina_rl_last_; \
		if (INA_LOG_##level <= ina_log_get_level() && \
		    ina_log_ratelimit(&ina_rl_last_, 200000000ull)) \
			ina_log_write(INA_LOG_##level, __VA_ARGS__); \
	} while (0)

#endif
