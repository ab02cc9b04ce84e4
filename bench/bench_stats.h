/* SPDX-License-Identifier: MIT */
/*
 * What the C programs of bench/ share to time and summarize: a monotonic
 * clock in seconds and the median of a sample. Header-only: each program is
 * one file and links nothing of the others.
 */
#ifndef INA_BENCH_STATS_H
#define INA_BENCH_STATS_H

#include <stddef.h>
#include <stdlib.h>
#include <time.h>

static inline double
bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* qsort's order of doubles. */
static inline int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of v[0..n) (sorted in place: the mean of the middle two when
 * n is even); -1 for an empty sample. */
static inline double
bench_median(double *v, size_t n)
{
	if (n == 0)
		return -1;
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
