/* SPDX-License-Identifier: MIT */
/*
 * The backend of log.h: a level filter, and either stderr (an identity
 * prefix and a wall-clock timestamp) or a sink the library user gave; and
 * the per-call-site rate limiter.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ina/log.h"

static enum ina_log_level log_level = INA_LOG_INFO;
static char log_ident[32] = "ina";

/* The sink and its argument, swapped together: a logging thread reads one
 * pointer, so it never pairs a sink with another's argument. */
struct log_sink {
	ina_log_sink_fn fn;
	void *arg;
};
static struct log_sink sinks[2];
static struct log_sink *_Atomic sink_now;
static unsigned sink_next;

static const char *const level_names[] = { "err", "warn", "info", "debug" };

void
ina_log_set_level(enum ina_log_level level)
{
	log_level = level;
}

enum ina_log_level
ina_log_get_level(void)
{
	return log_level;
}

int
ina_log_level_parse(const char *name)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcasecmp(name, level_names[i]) == 0)
			return (int)i;
	return -1;
}

void
ina_log_set_ident(const char *ident)
{
	snprintf(log_ident, sizeof(log_ident), "%s", ident);
}

void
ina_log_set_sink(ina_log_sink_fn fn, void *arg)
{
	struct log_sink *s = NULL;

	if (fn) {
		/* The other slot than the one in use: a line being handed over
		 * now keeps a consistent pair. */
		s = &sinks[sink_next];
		sink_next ^= 1;
		s->fn = fn;
		s->arg = arg;
	}
	atomic_store(&sink_now, s);
}

void
ina_log_write(enum ina_log_level level, const char *fmt, ...)
{
	struct log_sink *sink = atomic_load(&sink_now);
	struct timespec ts;
	struct tm tm;
	char when[32];
	va_list ap;

	if (sink) {
		char line[1024];

		va_start(ap, fmt);
		vsnprintf(line, sizeof(line), fmt, ap);
		va_end(ap);
		sink->fn(level, line, sink->arg);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	flockfile(stderr);
	fprintf(stderr, "%s.%03ld %s %s: ", when, ts.tv_nsec / 1000000, log_ident,
		level_names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

int
ina_log_ratelimit(uint64_t *last_ns, uint64_t interval_ns)
{
	struct timespec ts;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (*last_ns && now - *last_ns < interval_ns)
		return 0;
	*last_ns = now;
	return 1;
}
