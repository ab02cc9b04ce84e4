/* SPDX-License-Identifier: MIT */
/*
 * Keeps EAL's memory file descriptors open for net_memif's zero-copy clients
 * (private to the dpdk port): DPDK 22.11's memif closes them on connect and
 * disconnect, so a client that reconnects would share a dead or reused
 * descriptor. Take before the first memif start; restore after every memif
 * stop, before every start and once a link is up. One thread, as the ethdev
 * sets.
 */
#ifndef INA_MEMFD_GUARD_DPDK_H
#define INA_MEMFD_GUARD_DPDK_H

#include <stddef.h>

/* Duplicates each memseg list's descriptor once per process; 0 or -errno. */
int memfd_guard_take(char *err, size_t err_size);

/* Puts back every descriptor memif closed; -EBADF with a sentence when one
 * was closed and its number reused by another file. */
int memfd_guard_restore(char *err, size_t err_size);

#endif
