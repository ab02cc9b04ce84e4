/* SPDX-License-Identifier: MIT */
/*
 * The udp port's steering program (udp_steer.h): classic BPF attached with
 * SO_ATTACH_REUSEPORT_CBPF. For a UDP socket group the kernel runs it with
 * the packet's data starting at the UDP payload (it pulls the UDP header
 * first: reuseport_select_sock(), net/core/sock_reuseport.c), so absolute
 * loads index the ina header; 'len' is the payload's length. The value
 * returned is an index into the group's sockets, in the order they were
 * bound; test_port_udp `tenant_queues` checks both where it lands.
 */
#include <errno.h>
#include <linux/filter.h>
#include <sys/socket.h>

#include "ina/wire.h"
#include "udp_steer.h"

#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif

int
udp_steer_attach(int fd, unsigned nb_queues)
{
	struct sock_filter code[] = {
		/* A datagram shorter than a header: queue 0. */
		BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, INA_HDR_SIZE, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, 0),
		/* Else the tenant byte modulo the queues (tenant 0: queue 0). */
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, INA_WIRE_TENANT_OFFSET),
		BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, nb_queues),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_fprog prog = {
		.len = sizeof(code) / sizeof(code[0]),
		.filter = code,
	};

	if (nb_queues < 1 || nb_queues > UDP_STEER_MAX)
		return -EINVAL;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog)) < 0)
		return -errno;
	return 0;
}
