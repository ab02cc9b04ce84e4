/* SPDX-License-Identifier: MIT */
/*
 * EAL start-up for the programs and tests (port_dpdk.h): rte_eal_init once
 * per process, with its usual failures turned into a sentence that says what
 * to do. Three are checked before EAL runs, because EAL's own text for them
 * is cryptic or missing: no hugepages reserved without --no-huge, a
 * --file-prefix whose lock another primary process holds, and a memif
 * zero-copy client (zero-copy=yes) without --single-file-segments, which
 * memif refuses (it shares the process's memory with the switch as one file
 * per segment list; with --no-huge EAL maps that memory as one memfd anyway,
 * the option only says so).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "ina/port_dpdk.h"
#include "ina/util.h"

static int eal_up;

struct eal_args {
	int no_huge, in_memory, no_shconf, single_file, zero_copy;
	const char *prefix;
};

static void
eal_args_scan(int argc, char **argv, struct eal_args *a)
{
	memset(a, 0, sizeof(*a));
	a->prefix = "rte";
	for (int i = 1; i < argc && argv[i]; i++) {
		const char *s = argv[i];

		if (strcmp(s, "--") == 0)
			break;
		if (strcmp(s, "--no-huge") == 0)
			a->no_huge = 1;
		else if (strcmp(s, "--in-memory") == 0)
			a->in_memory = 1;
		else if (strcmp(s, "--no-shconf") == 0)
			a->no_shconf = 1;
		else if (strcmp(s, "--single-file-segments") == 0)
			a->single_file = 1;
		else if (strncmp(s, "--vdev=", 7) == 0 && strstr(s, "zero-copy=yes"))
			a->zero_copy = 1;
		else if (strcmp(s, "--vdev") == 0 && i + 1 < argc && argv[i + 1] &&
			 strstr(argv[++i], "zero-copy=yes"))
			a->zero_copy = 1;
		else if (strncmp(s, "--file-prefix=", 14) == 0)
			a->prefix = s + 14;
		else if (strcmp(s, "--file-prefix") == 0 && i + 1 < argc && argv[i + 1])
			a->prefix = argv[++i];
	}
}

/* Hugepages reserved in all sizes, or -1 when sysfs cannot tell. */
static long
hugepages_reserved(void)
{
	const char *dir = "/sys/kernel/mm/hugepages";
	DIR *d = opendir(dir);
	struct dirent *e;
	long total = 0;
	int seen = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char path[512];
		FILE *f;
		long n;

		if (strncmp(e->d_name, "hugepages-", 10) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/nr_hugepages", dir, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%ld", &n) == 1) {
			total += n;
			seen = 1;
		}
		fclose(f);
	}
	closedir(d);
	return seen ? total : -1;
}

/* The pid holding the EAL config lock of 'prefix', or 0 when none. */
static long
prefix_holder(const char *prefix)
{
	const char *base = getuid() == 0 ? "/var/run" : getenv("XDG_RUNTIME_DIR");
	struct flock lk;
	char path[512];
	int fd;

	if (!base)
		base = "/tmp";
	snprintf(path, sizeof(path), "%s/dpdk/%s/config", base, prefix);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	memset(&lk, 0, sizeof(lk));
	lk.l_type = F_WRLCK;
	lk.l_whence = SEEK_SET;
	if (fcntl(fd, F_GETLK, &lk) < 0 || lk.l_type == F_UNLCK) {
		close(fd);
		return 0;
	}
	close(fd);
	return lk.l_pid > 0 ? (long)lk.l_pid : 1;
}

int
ina_dpdk_eal_init(int argc, char **argv, char *err, size_t err_size)
{
	struct eal_args a;
	long holder;
	int ret;

	if (err && err_size)
		err[0] = '\0';
	if (eal_up) {
		ina_errf(err, err_size, "EAL already initialised");
		return -EALREADY;
	}
	eal_args_scan(argc, argv, &a);
	if (!a.no_huge && hugepages_reserved() == 0) {
		ina_errf(err, err_size,
			 "EAL: no hugepages reserved: reserve hugepages (echo N > "
			 "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages) "
			 "or pass --no-huge");
		return -ENOMEM;
	}
	if (!a.no_shconf && !a.in_memory && (holder = prefix_holder(a.prefix)) != 0) {
		ina_errf(
			err, err_size,
			"EAL: file prefix '%s' is in use by another DPDK process (pid %ld): pass a "
			"distinct --file-prefix=NAME (or --no-shconf when no memif is used)",
			a.prefix, holder);
		return -EBUSY;
	}
	if (a.zero_copy && !a.single_file) {
		ina_errf(err, err_size,
			 "EAL: a memif with zero-copy=yes shares this process's memory, which "
			 "memif accepts only in single-file segments: add --single-file-segments");
		return -EINVAL;
	}
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		int e = rte_errno ? rte_errno : EINVAL;

		if (e == EALREADY)
			ina_errf(err, err_size, "EAL already initialised");
		else if (e == EACCES && !a.no_huge)
			ina_errf(err, err_size,
				 "EAL cannot use hugepages (%s): reserve hugepages (echo N > "
				 "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages) or pass "
				 "--no-huge",
				 rte_strerror(e));
		else
			ina_errf(err, err_size,
				 "rte_eal_init failed: %s (see EAL's messages above; a "
				 "prefix in use needs a distinct --file-prefix)",
				 rte_strerror(e));
		return -e;
	}
	eal_up = 1;
	return ret;
}

int
ina_dpdk_eal_running(void)
{
	return eal_up;
}

void
ina_dpdk_eal_cleanup(void)
{
	if (!eal_up)
		return;
	rte_eal_cleanup();
	eal_up = 0;
}
