/* SPDX-License-Identifier: MIT */
/*
 * The one way a cmocka case skips: INA_SKIP("why"). cmocka counts a skipped
 * case as a pass, so where a skip must not hide a missing check (CI sets
 * INA_REQUIRE_DPDK=1: the machine has everything a test needs) the skip is
 * a failure that says why; elsewhere the reason is printed and the case
 * skipped. cmake/InaTest.cmake refuses a test source calling skip() itself.
 * Include after <cmocka.h>.
 */
#ifndef INA_TEST_SKIP_H
#define INA_TEST_SKIP_H
#include <stdlib.h>
#include <string.h>

static inline int
ina_skip_is_failure(void)
{
	const char *v = getenv("INA_REQUIRE_DPDK");

	return v && strcmp(v, "1") == 0;
}

#define INA_SKIP(why) \
	do { \
		if (ina_skip_is_failure()) \
			fail_msg("skipped, a failure with INA_REQUIRE_DPDK=1: %s", (why)); \
		print_message("skipped: %s\n", (why)); \
		skip(); \
	} while (0)

#endif
