/* SPDX-License-Identifier: MIT */
/*
 * The table behind ina_stat() and ina_stat_name() (stat_names.c): every
 * counter of struct ina_stats by its name in ina.h, exposed for the test
 * that checks it covers the struct.
 */
#ifndef INA_STAT_NAMES_H
#define INA_STAT_NAMES_H

#include <stddef.h>

enum stat_type { ST_U64, ST_U32, ST_U16, ST_DOUBLE };

struct stat_row {
	const char *name;
	enum stat_type type;
	size_t offset, size;
};

unsigned stat_row_count(void);
const struct stat_row *stat_row_at(unsigned i);

#endif
