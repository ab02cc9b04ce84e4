/* SPDX-License-Identifier: MIT */
/*
 * Inside the udp port (port_udp.c): its state, shared by the files that
 * make it up. port_udp.c opens and configures the port and holds its
 * operations table; port_udp_rx.c receives (recvmmsg, GRO buffers split
 * into packets, the tenant queues taken in turn); port_udp_tx.c sends
 * (sendmmsg, a burst grouped by peer and size into GSO messages). Not an
 * interface: nothing outside these three includes it.
 */
#ifndef INA_PORT_UDP_INT_H
#define INA_PORT_UDP_INT_H

#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "ina/faults.h"
#include "ina/port_udp.h"
#include "udp_steer.h"

#define UDP_MIN_MTU 128
#define UDP_MAX_MTU 65507 /* largest IPv4 UDP payload */
#define UDP_DEF_MTU 9000
#define UDP_DEF_PKTS 4096
#define UDP_MAX_PKTS (1u << 20)
#define UDP_DEF_SOCKBUF (8u << 20)
#define UDP_MIN_SOCKBUF 4096u
#define UDP_MAX_SOCKBUF (512u << 20)
#define UDP_TX_MSGS (64 * INA_MAX_BURST) /* messages per sendmmsg batch */
#define UDP_TX_RETRIES 4		 /* waits without progress, then drop */
#define UDP_TX_WAIT_MS 1		 /* POLLOUT wait on EAGAIN */
#define UDP_TX_NOBUFS_NS 100000ull	 /* pause on ENOBUFS (poll won't help) */
/* Segments per GSO message: the kernel's UDP_MAX_SEGMENTS (64; 128 on recent ones). */
#define GSO_MAX_SEGS 64
#define GSO_PEER_SLOTS (2 * UDP_TX_MSGS) /* the grouping's table of a batch's peers */
#define GRO_BUF 65536u			 /* a receive buffer: one GRO message */
#define GRO_SEGS 128			 /* datagrams one GRO message may hold */
#define GRO_BUFS 128			 /* receive buffers per port */
#define GRO_PEND (INA_MAX_BURST * GRO_SEGS)
/* Receives a queue found empty sits out, at most (tenant_queues > 1): an
 * empty receive costs a system call, about 4 us on the 2-vCPU VMs here
 * (bench/README.md, "Per-tenant receive queues"). */
#define RXQ_IDLE_SKIP 3

_Static_assert(UDP_TX_MSGS <= UINT16_MAX, "batch indices are 16-bit");

/* A receive buffer of GRO_BUF bytes and the packets that point into it. */
struct gro_buf {
	uint8_t *mem;
	unsigned refs; /* packets of it not yet freed */
	struct ina_pkt pkts[GRO_SEGS];
};

struct udp_port;

/* The pool GRO packets belong to: freeing one drops a reference on its
 * buffer. Allocating from it gives packets of the port's own pool (a copy of
 * a received packet, as the fault injector's duplicates). */
struct gro_pool {
	struct ina_pkt_pool pool; /* first */
	struct udp_port *up;
};

/* A peer of the batch being grouped: the first message to it, its rank. */
struct gso_peer {
	uint32_t gen; /* the batch it belongs to (udp_port.peer_gen) */
	uint16_t msg, rank;
};

/* The port's own counters (xstats), in the order of udp_xstat_names. */
struct udp_xst {
	uint64_t gso_refused; /* 1: the kernel refused UDP_SEGMENT */
	uint64_t gso_msgs;    /* messages sent with several segments */
	uint64_t gso_segs;    /* datagrams in them */
	uint64_t gro_refused; /* 1: the kernel refused UDP_GRO */
	uint64_t gro_msgs;    /* messages received holding several datagrams */
	uint64_t gro_segs;    /* datagrams in them */
	uint64_t gro_stalls;  /* receives put off: every buffer still in use */
};

/* A receive queue: one socket of the port's SO_REUSEPORT group (one socket
 * when the port has one queue), and with GRO the packets split out of its
 * receives that the caller has not taken yet (in order). */
struct udp_queue {
	int fd;
	unsigned pend_head, pend_nb;
	struct ina_pkt **pend; /* GRO_PEND of them, with GRO */
	/* Found empty: the port's receives to sit out, and how many it sat
	 * out last time (1, 3, .. RXQ_IDLE_SKIP); 0 once it had packets or
	 * the port's wait saw it readable. */
	unsigned skip, backoff;
};

struct udp_port {
	struct ina_port port;	  /* first: the handle callers hold */
	int fd;			  /* the socket that sends: queue 0's */
	int busy;		  /* wait() returns at once */
	struct ina_faults faults; /* injected faults (tests), off by default */
	char name[32];		  /* bound "A.B.C.D:PORT", for logs */
	struct sockaddr_in local; /* the address bound (real port when 0) */
	int gso, gro;		  /* offloads in use */
	struct udp_xst xst;

	/* Receive queues (tenant_queues=N), polled in turn from rx_next. */
	unsigned nb_queues, rx_next;
	struct udp_queue queues[UDP_STEER_MAX];
	uint64_t rxq_pkts[UDP_STEER_MAX]; /* packets handed out, per queue */

	/* rx: one message per buffer of a burst. */
	struct mmsghdr rx_msgs[INA_MAX_BURST];
	struct iovec rx_iovs[INA_MAX_BURST];
	struct sockaddr_in rx_names[INA_MAX_BURST];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} rx_ctl[INA_MAX_BURST];

	/* GRO: the queues' buffers (GRO_BUFS, and 2 * INA_MAX_BURST more
	 * for each queue past the first) and the free ones (a stack). */
	struct gro_pool gro_pool;
	struct gro_buf *gro_bufs;
	uint8_t *gro_mem;
	unsigned gro_nb_bufs, gro_nb_free;
	struct gro_buf **gro_free;

	/*
	 * tx: a batch of up to UDP_TX_MSGS messages (one per destination)
	 * over up to UDP_TX_MSGS packets (one iovec each).
	 */
	unsigned tx_nb_msgs;
	unsigned tx_nb_pkts;
	uint64_t tx_burst_msgs; /* messages sent in this tx_burst call */
	struct mmsghdr tx_msgs[UDP_TX_MSGS];
	uint16_t tx_msg_pkt[UDP_TX_MSGS]; /* message -> index in tx_pkts */
	struct iovec tx_iovs[UDP_TX_MSGS];
	struct ina_pkt *tx_pkts[UDP_TX_MSGS];
	uint8_t tx_failed[UDP_TX_MSGS]; /* a message of this packet failed */

	/*
	 * The batch as sent: 'tx_nb_out' messages, each the segments
	 * out_seg[out_first[o] ..][out_nb[o]] (indices of tx_msgs, in order),
	 * several with a UDP_SEGMENT control message when GSO groups them.
	 */
	unsigned tx_nb_out;
	struct mmsghdr out_msgs[UDP_TX_MSGS];
	uint16_t out_first[UDP_TX_MSGS], out_nb[UDP_TX_MSGS];
	uint16_t out_seg[UDP_TX_MSGS];
	struct iovec out_iovs[UDP_TX_MSGS];
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} out_ctl[UDP_TX_MSGS];
	/* Scratch of the grouping: the messages in sending order (sort keys:
	 * peer, size, index), the peers seen, each run's size, bytes and
	 * whether it is closed; messages left after a GSO refusal. */
	uint64_t sort_keys[UDP_TX_MSGS], sort_tmp[UDP_TX_MSGS];
	struct gso_peer peer_tab[GSO_PEER_SLOTS];
	uint32_t peer_gen;
	uint16_t grp_size[UDP_TX_MSGS], rest[UDP_TX_MSGS];
	uint32_t grp_bytes[UDP_TX_MSGS];
	uint8_t grp_closed[UDP_TX_MSGS];
};

_Static_assert(UDP_TX_MSGS <= UINT16_MAX + 1, "tx_msg_pkt width");

static inline struct udp_port *
udp_of(struct ina_port *port)
{
	return (struct udp_port *)(void *)port;
}

/* 'peer' set to the address 'sin', rebuilt field by field so that equal
 * addresses have equal bytes. */
static inline void
udp_peer_set(struct ina_peer *peer, const struct sockaddr_in *sin)
{
	struct sockaddr_in s;

	memset(&s, 0, sizeof(s));
	s.sin_family = AF_INET;
	s.sin_port = sin->sin_port;
	s.sin_addr = sin->sin_addr;
	peer->len = sizeof(s);
	memcpy(peer->bytes, &s, sizeof(s));
}


/* port_udp_rx.c: the GRO buffers of a port of 'mtu' (0 or -ENOMEM), and
 * the port's rx_burst operation. */
int udp_gro_init(struct udp_port *up, uint32_t mtu);
uint16_t udp_rx_burst(struct ina_port *port, struct ina_pkt **pkts, uint16_t n);

/* port_udp_tx.c: the port's tx_burst operation. */
uint16_t udp_tx_burst(struct ina_port *port, struct ina_pkt **pkts, uint16_t n);

#endif
