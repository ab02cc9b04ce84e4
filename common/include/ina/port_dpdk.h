/* SPDX-License-Identifier: MIT */
/*
 * The dpdk port (port.h): ina packets in mbufs, with Ethernet/IPv4/UDP added
 * and stripped in software. Only port_dpdk.c includes <rte_*.h>; this header
 * does not, so main.c can start EAL without DPDK headers.
 *
 * Options, comma-separated: port=ID (ethdev port id, required through
 * ina_port_dpdk_ops.open), ip=A.B.C.D (own address, default 0.0.0.0: any
 * destination address is accepted on rx), udp=PORT (default 9150),
 * mbufs=N (pool size, default 8191).
 *
 * Peers are "MAC@IP:PORT", e.g. "02:00:00:00:00:02@10.0.0.2:9150" (no ARP yet).
 */
#ifndef INA_PORT_DPDK_H
#define INA_PORT_DPDK_H

#include <stddef.h>
#include <stdint.h>

#include "ina/port.h"

#define INA_DPDK_UDP_PORT 9150

/*
 * Starts EAL once per process. Returns the number of argv entries consumed
 * (as rte_eal_init), or -errno with a message in 'err'.
 */
int ina_dpdk_eal_init(int argc, char **argv, char *err, size_t err_size);
/* Releases EAL; after ina_dpdk_eal_init() succeeded, once. */
void ina_dpdk_eal_cleanup(void);

/*
 * Makes "dpdk:..." specs known to ina_port_open(). Returns -ENOTSUP for now:
 * port.c has a fixed table of backends (see the report of this slice).
 */
int ina_port_dpdk_register(void);

extern const struct ina_port_ops ina_port_dpdk_ops;

/* Opens an ethdev that already exists (tests: rte_eth_from_rings). */
int ina_port_dpdk_open_id(uint16_t port_id, const char *args, struct ina_port **out);

/* mbufs of the port's pool not handed out (leak checks in tests). */
unsigned ina_port_dpdk_pool_avail(const struct ina_port *port);

#endif
