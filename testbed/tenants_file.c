/* SPDX-License-Identifier: MIT */
/* A run's tenants file and key files (tenants_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ina/auth.h"
#include "procs.h"
#include "tenants.h"
#include "tenants_file.h"

void
tb_tenants_path(const char *dir, char *buf, size_t size)
{
	tb_fmt(buf, size, "%s/tenants.yaml", dir);
}

void
tb_tenant_key_path(const char *dir, uint8_t index, char *buf, size_t size)
{
	tb_fmt(buf, size, "%s/tenant-%u.key", dir, index);
}

/* Writes 'text' to a new file 'path' that only its owner may read. */
static int
write_private(const char *path, const char *text, char *err, size_t errlen)
{
	size_t len = strlen(text);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int e = 0;

	if (fd < 0 || fchmod(fd, 0600) < 0 || write(fd, text, len) != (ssize_t)len)
		e = -errno;
	if (fd >= 0 && close(fd) < 0 && !e)
		e = -errno;
	if (e)
		tb_fmt(err, errlen, "cannot write %s: %s", path, strerror(-e));
	return e;
}

int
tb_tenants_write(const struct topology *t, const char *dir, char *err, size_t errlen)
{
	char yaml[64 + (INA_TENANT_MAX + 1) * 192], path[4096], hex[2 * INA_TENANT_KEY_SIZE + 2];
	uint8_t seen[INA_TENANT_MAX + 1] = { 0 };
	size_t len = 0;
	int ret = 0;

	len += (size_t)snprintf(yaml, sizeof(yaml), "tenants:\n");
	for (uint32_t j = 0; j < t->nb_jobs; j++) {
		const struct topo_job *job = &t->jobs[j];
		uint8_t key[INA_TENANT_KEY_SIZE];

		if (!job->tenant_index || seen[job->tenant_index])
			continue;
		seen[job->tenant_index] = 1;
		if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
			ret = -errno;
			tb_fmt(err, errlen, "getrandom: %s", strerror(errno));
			goto out;
		}
		/* Quotas as wide as the wire allows: the topology's jobs and
		 * weights are what the run is about. */
		len += (size_t)tenants_entry_wide(yaml + len, sizeof(yaml) - len, job->tenant,
						  job->tenant_index, key);
		for (unsigned i = 0; i < INA_TENANT_KEY_SIZE; i++)
			snprintf(hex + 2 * i, 3, "%02x", key[i]);
		memset(key, 0, sizeof(key));
		tb_tenant_key_path(dir, job->tenant_index, path, sizeof(path));
		hex[2 * INA_TENANT_KEY_SIZE] = '\n';
		hex[2 * INA_TENANT_KEY_SIZE + 1] = '\0';
		ret = write_private(path, hex, err, errlen);
		if (ret < 0)
			goto out;
	}
	if (len > sizeof("tenants:\n") - 1) {
		tb_tenants_path(dir, path, sizeof(path));
		ret = write_private(path, yaml, err, errlen);
	}
out:
	memset(yaml, 0, sizeof(yaml));
	memset(hex, 0, sizeof(hex));
	return ret;
}
