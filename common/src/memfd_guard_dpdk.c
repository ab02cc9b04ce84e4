/* SPDX-License-Identifier: MIT */
/*
 * EAL's memory file descriptors kept open under net_memif zero-copy
 * (memfd_guard_dpdk.h). A zero-copy memif client shares EAL's memory by
 * sending the descriptor rte_memseg_get_fd() returns, and DPDK 22.11's memif
 * closes that descriptor, which is EAL's own, both once a connection is made
 * and when one is torn down. After a refused or dropped connection the next
 * one sends a closed descriptor number, or one a new socket or eventfd has
 * taken, and the server fails its mmap ("No such device") on every retry.
 *
 * The guard takes a private duplicate of each descriptor before any memif
 * ethdev starts, and puts it back under the original number whenever memif
 * has closed it (after each stop, before each start, once a link is up).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_memory.h>

#include "ina/util.h"
#include "memfd_guard_dpdk.h"

#define GUARD_MAX 64 /* memseg lists with a descriptor of their own */

struct kept_fd {
	int fd;	  /* EAL's number */
	int copy; /* ours, never handed out */
	dev_t dev;
	ino_t ino;
};

static struct kept_fd kept[GUARD_MAX];
static unsigned nb_kept;
static int taken; /* the copies were made */

static int
known(int fd)
{
	for (unsigned i = 0; i < nb_kept; i++)
		if (kept[i].fd == fd)
			return 1;
	return 0;
}

static int
keep_one(const struct rte_memseg_list *msl, const struct rte_memseg *ms, void *arg)
{
	int *err = arg;
	int fd = rte_memseg_get_fd_thread_unsafe(ms);
	struct stat st;

	(void)msl;
	if (fd < 0 || known(fd))
		return 0; /* anonymous memory, or a list already kept */
	if (nb_kept == GUARD_MAX || fstat(fd, &st) < 0) {
		*err = nb_kept == GUARD_MAX ? -ENOSPC : -errno;
		return -1;
	}
	kept[nb_kept].copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (kept[nb_kept].copy < 0) {
		*err = -errno;
		return -1;
	}
	kept[nb_kept].fd = fd;
	kept[nb_kept].dev = st.st_dev;
	kept[nb_kept].ino = st.st_ino;
	nb_kept++;
	return 0;
}

int
memfd_guard_take(char *err, size_t err_size)
{
	int e = 0;

	if (taken)
		return 0;
	if (rte_memseg_walk(keep_one, &e) < 0) {
		ina_errf(err, err_size, "cannot keep a copy of EAL's memory descriptors: %s",
			 strerror(-e));
		return e;
	}
	taken = 1;
	return 0;
}

int
memfd_guard_restore(char *err, size_t err_size)
{
	for (unsigned i = 0; i < nb_kept; i++) {
		struct stat st;

		if (fstat(kept[i].fd, &st) == 0) {
			if (st.st_dev == kept[i].dev && st.st_ino == kept[i].ino)
				continue;
			ina_errf(err, err_size,
				 "EAL's memory descriptor %d was closed by net_memif and reused by "
				 "another file before it could be restored; a zero-copy memif "
				 "client cannot reconnect (restart the program, or drop "
				 "zero-copy=yes)",
				 kept[i].fd);
			return -EBADF;
		}
		if (errno != EBADF || dup2(kept[i].copy, kept[i].fd) < 0) {
			ina_errf(err, err_size, "cannot restore EAL's memory descriptor %d: %s",
				 kept[i].fd, strerror(errno));
			return -EBADF;
		}
	}
	return 0;
}
