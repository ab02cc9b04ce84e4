/* SPDX-License-Identifier: MIT */
/*
 * ina-train's default data set (datapath.h). The build defines
 * INA_TRAIN_DATA_NAME (the file), INA_TRAIN_DATA_RELDIR (the installed data
 * directory relative to the installed programs', e.g. ../share/ina) and
 * INA_TRAIN_SOURCE_DATA (the source tree's copy, for the build tree).
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datapath.h"

#ifndef INA_TRAIN_DATA_NAME
#error "the build defines INA_TRAIN_DATA_NAME, INA_TRAIN_DATA_RELDIR and INA_TRAIN_SOURCE_DATA"
#endif

/* BINDIR/RELDIR/NAME of this program into 'out': 0, or -1 when
 * /proc/self/exe cannot be read or the path does not fit. */
static int
installed_path(char *out, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int len;

	if (n <= 0)
		return -1;
	self[n] = '\0';
	len = snprintf(out, size, "%s/%s/%s", dirname(self), INA_TRAIN_DATA_RELDIR,
		       INA_TRAIN_DATA_NAME);
	return len > 0 && (size_t)len < size ? 0 : -1;
}

int
train_default_data(char *out, size_t size, char *err, size_t err_size)
{
	char inst[PATH_MAX + 64] = "";
	char real[PATH_MAX];

	/* BINDIR/../share/ina/... as the plain path it is. */
	if (installed_path(inst, sizeof(inst)) == 0 && access(inst, R_OK) == 0 &&
	    realpath(inst, real) && strlen(real) < size) {
		snprintf(out, size, "%s", real);
		return 0;
	}
	if (access(INA_TRAIN_SOURCE_DATA, R_OK) == 0 && strlen(INA_TRAIN_SOURCE_DATA) < size) {
		snprintf(out, size, "%s", INA_TRAIN_SOURCE_DATA);
		return 0;
	}
	snprintf(err, err_size, "no data set to read: %s is not at %s nor at %s; give --data FILE",
		 INA_TRAIN_DATA_NAME,
		 inst[0] ? inst : INA_TRAIN_DATA_RELDIR " (beside the program)",
		 INA_TRAIN_SOURCE_DATA);
	return -1;
}
