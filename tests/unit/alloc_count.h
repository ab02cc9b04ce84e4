/* SPDX-License-Identifier: MIT */
/*
 * Counting allocations in a test: alloc_count.c wraps malloc, calloc,
 * realloc, aligned_alloc and posix_memalign (the test links with
 * -Wl,--wrap=NAME for each: ina_alloc_count_wrap() in tests/CMakeLists.txt).
 * Only calls from objects linked into the test program (ina's static
 * libraries and the test) are wrapped; shared libraries' are not.
 */
#ifndef INA_TEST_ALLOC_COUNT_H
#define INA_TEST_ALLOC_COUNT_H

#include <stdint.h>

/* Calls and bytes asked for since the last alloc_count_on(). */
extern uint64_t alloc_nb, alloc_bytes;

/* Zeroes the counters and starts counting. */
void alloc_count_on(void);
/* Stops counting; the counters keep their values. */
void alloc_count_off(void);

#endif
