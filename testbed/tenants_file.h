/* SPDX-License-Identifier: MIT */
/*
 * A run's tenants (tenant mode, topologies/README.md): the tenants file
 * every ina-switch of the run is given (--tenants) and one key file per
 * tenant for its ina-host processes (--tenant-key-file), written into the
 * run's work directory, mode 600, with keys fresh from getrandom(2).
 */
#ifndef INA_TB_TENANTS_FILE_H
#define INA_TB_TENANTS_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "topology.h"

/* Writes DIR/tenants.yaml and DIR/tenant-<index>.key for the tenants of t's
 * jobs (nothing when its jobs have none). 0, or -errno with a message. */
int tb_tenants_write(const struct topology *t, const char *dir, char *err, size_t errlen);

/* The paths tb_tenants_write() writes. */
void tb_tenants_path(const char *dir, char *buf, size_t size);
void tb_tenant_key_path(const char *dir, uint8_t index, char *buf, size_t size);

#endif
