/* SPDX-License-Identifier: MIT */
/*
 * Extras of the udp port (port_udp.c) that the generic port interface does
 * not have. Open a udp port with ina_port_open("udp:OPTIONS", ...); see
 * port_udp.c for the options.
 */
#ifndef INA_PORT_UDP_H
#define INA_PORT_UDP_H

#include "ina/port.h"

/* The most receive queues a udp port takes (tenant_queues=N): datagrams
 * steered to queue (the ina header's tenant byte) % N, port_udp.c. */
#define INA_PORT_UDP_MAX_QUEUES 8

/*
 * Writes the address a udp port is bound to, "A.B.C.D:PORT" (the real port
 * when it was opened with port 0), into 'buf'. Returns 0, -EINVAL if 'port'
 * is not a udp port, -ENOSPC if 'size' is too small, or another -errno.
 */
int ina_port_udp_local(const struct ina_port *port, char *buf, unsigned size);

/*
 * Received packets of a udp port that live in its GRO receive buffers and
 * are not freed yet (taken by the caller or waiting in the port): 0 once
 * everything received was freed (leak checks). 0 for other ports.
 */
unsigned ina_port_udp_rx_held(const struct ina_port *port);

#endif
