/* SPDX-License-Identifier: MIT */
/*
 * ina_set_logger() (ina.h): the library user's log callback and level over
 * log.h's sink and level filter. The INA_LEVEL_* of the API are mapped to
 * log.h's levels one by one, so that either side may change its numbers.
 */
#include <stdatomic.h>

#include "ina.h"
#include "ina/log.h"

/* Read by whichever thread logs: one atomic pointer. */
static ina_log_fn _Atomic user_fn;

static enum ina_log_level
to_log_level(int level)
{
	if (level <= INA_LEVEL_ERR)
		return INA_LOG_ERR;
	if (level == INA_LEVEL_WARN)
		return INA_LOG_WARN;
	if (level == INA_LEVEL_INFO)
		return INA_LOG_INFO;
	return INA_LOG_DEBUG;
}

static int
to_api_level(enum ina_log_level level)
{
	switch (level) {
	case INA_LOG_ERR:
		return INA_LEVEL_ERR;
	case INA_LOG_WARN:
		return INA_LEVEL_WARN;
	case INA_LOG_INFO:
		return INA_LEVEL_INFO;
	case INA_LOG_DEBUG:
		break;
	}
	return INA_LEVEL_DEBUG;
}

/* log.h's sink: the user's function with the API's level. */
static void
sink(enum ina_log_level level, const char *line, void *arg)
{
	ina_log_fn fn = atomic_load(&user_fn);

	if (fn)
		fn(to_api_level(level), line, arg);
}

void
ina_set_logger(ina_log_fn fn, void *arg, int level)
{
	atomic_store(&user_fn, fn);
	ina_log_set_level(to_log_level(level));
	ina_log_set_sink(fn ? sink : NULL, arg);
}
