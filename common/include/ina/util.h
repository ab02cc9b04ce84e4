/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the programs: the monotonic clock (the pipeline and
 * the host engine never read it: time is their input), strict number
 * parsing for command lines, error messages into buffers, a small generator.
 */
#ifndef INA_UTIL_H
#define INA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define INA_NS_PER_MS 1000000ull
#define INA_NS_PER_S 1000000000ull

static inline uint64_t
ina_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * INA_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Parses a whole decimal number in [min, max]. 0 or -EINVAL / -ERANGE. */
int ina_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Parses a whole floating-point number in [min, max]. 0 or -EINVAL / -ERANGE. */
int ina_parse_double(const char *s, double min, double max, double *out);

/*
 * How long after the last packet a poller with packets in flight polls on
 * (yielding the CPU between polls) rather than sleep in a port whose wait
 * cannot see arrivals (dpdk): libina's waits, ina-switch's loop and its
 * lcores. $INA_BUSY_POLL_US (0..1000000, 0: never, sleep as when idle),
 * read once; unset or not a number in range: 200 us.
 */
uint64_t ina_busy_poll_ns(void);

/* Writes the set bits of 'mask' as "0,2,5" ("-" when none) into 'buf'. */
const char *ina_ranks_str(char *buf, size_t size, uint64_t mask);

/* snprintf into an error buffer; nothing when 'err' is NULL or 'size' 0. */
void ina_errf(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* splitmix64: the next number of a small seedable generator (the ports'
 * drop= injection), the same on every platform. */
static inline uint64_t
ina_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif
