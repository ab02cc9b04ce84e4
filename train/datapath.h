/* SPDX-License-Identifier: MIT */
/*
 * Where ina-train finds its default data set (digits.csv.gz): installed, in
 * the data directory beside the program's (BINDIR/../share/ina), else in the
 * source tree the program was built from (a program run from the build tree).
 */
#ifndef INA_TRAIN_DATAPATH_H
#define INA_TRAIN_DATAPATH_H

#include <stddef.h>

/* The first of the two places that holds a readable file: 0 and the path
 * in 'out'; or -1 with 'err' naming both places. */
int train_default_data(char *out, size_t size, char *err, size_t err_size);

#endif
