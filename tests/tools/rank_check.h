/* SPDX-License-Identifier: MIT */
/*
 * CHECK(cond, fmt, ...) for the test tools that run one process per rank
 * (api_*_check.c): when 'cond' is false, says which rank failed and why on
 * stderr and returns 1 from the calling function. The tool defines
 * 'static int rank'.
 */
#ifndef INA_TESTS_RANK_CHECK_H
#define INA_TESTS_RANK_CHECK_H

#include <stdio.h>

#define CHECK(c, ...) \
	do { \
		if (!(c)) { \
			fprintf(stderr, "rank %d: ", rank); \
			fprintf(stderr, __VA_ARGS__); \
			fprintf(stderr, "\n"); \
			fflush(stderr); \
			return 1; \
		} \
	} while (0)

#endif
