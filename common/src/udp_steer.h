/* SPDX-License-Identifier: MIT */
/*
 * Steering (private to the udp port, port_udp.c, tenant_queues=N): the
 * kernel puts each datagram arriving at the port's address into one of its N
 * sockets, by the tenant byte of the ina header (wire.h,
 * INA_WIRE_TENANT_OFFSET), so that each tenant's packets queue apart.
 */
#ifndef INA_UDP_STEER_H
#define INA_UDP_STEER_H

#include "ina/port_udp.h"

#define UDP_STEER_MAX INA_PORT_UDP_MAX_QUEUES /* queues a port may have */

/*
 * Attaches to the SO_REUSEPORT group of 'fd' (bound, with the group's other
 * sockets bound after it in queue order) a classic BPF program that picks
 * the group's socket of index tenant % nb_queues, and 0 for a datagram
 * shorter than an ina header. 0 or -errno.
 */
int udp_steer_attach(int fd, unsigned nb_queues);

#endif
