/* SPDX-License-Identifier: MIT */
/*
 * Options of the dpdk port (private): "port=...,ip=...,..." parsed into a
 * struct with the defaults of port_dpdk.h filled in. No <rte_*.h> here.
 */
#ifndef INA_OPTS_DPDK_H
#define INA_OPTS_DPDK_H

#include <stddef.h>
#include <stdint.h>

#include "ina/faults.h"

#define DPDK_DEF_MBUFS 8191
#define DPDK_MAX_MBUFS (1u << 22)
#define DPDK_DEF_DESC 512
#define DPDK_DEF_MTU 1500
#define DPDK_MIN_MTU 576
#define DPDK_MAX_MTU 9000

/* csum=: UDP checksums on the wire (see port_dpdk.c). */
enum dpdk_csum {
	DPDK_CSUM_AUTO, /* off on net_memif (shared memory), on elsewhere */
	DPDK_CSUM_ON,	/* send one (offloaded where the ethdev can), want one */
	DPDK_CSUM_OFF,	/* send 0 (none), accept 0 */
};

struct dpdk_config {
	int has_port, all;
	uint64_t lo, hi;
	uint32_t ip_be;
	uint64_t udp, mbufs, reserve, rxd, txd, queue, queues, link_wait_ms;
	uint64_t zerocopy, offload, mtu;
	enum dpdk_csum csum;
	int queue_all;		      /* queue=all: poll every rx queue, send on queue 0 */
	struct ina_faults_cfg faults; /* drop=, dup=, ..., seed= (faults.h) */
};

/* Parses 'args' into 'cfg'. 0, or -EINVAL / -ENOMEM with a message in 'err'. */
int dpdk_config_parse(const char *args, struct dpdk_config *cfg, char *err, size_t err_size);

#endif
