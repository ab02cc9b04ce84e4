/* SPDX-License-Identifier: MIT */
/* Strict number parsing for command lines and port options, rank lists, the
 * busy-poll window (util.h). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ina/util.h"

int
ina_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int
ina_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || !(v >= min && v <= max))
		return -ERANGE;
	*out = v;
	return 0;
}

const char *
ina_ranks_str(char *buf, size_t size, uint64_t mask)
{
	size_t off = 0;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	for (int r = 0; r < 64 && off < size; r++) {
		if (mask >> r & 1) {
			int n = snprintf(buf + off, size - off, "%s%d", off ? "," : "", r);

			if (n < 0)
				break;
			off += (size_t)n;
		}
	}
	if (!mask)
		snprintf(buf, size, "-");
	return buf;
}

void
ina_errf(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (!err || !size)
		return;
	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
}

#define BUSY_POLL_DEFAULT_NS 200000ull

static uint64_t busy_poll_ns = BUSY_POLL_DEFAULT_NS;

static void
busy_poll_read(void)
{
	const char *env = getenv("INA_BUSY_POLL_US");
	uint64_t us;

	if (env && ina_parse_u64(env, 0, 1000000, &us) == 0)
		busy_poll_ns = us * 1000;
}

uint64_t
ina_busy_poll_ns(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, busy_poll_read);
	return busy_poll_ns;
}
