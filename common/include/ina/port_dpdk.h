/* SPDX-License-Identifier: MIT */
/*
 * The dpdk port (port.h): ina packets in mbufs over one or several ethdevs,
 * with Ethernet/IPv4/UDP added and stripped in software, ARP and ICMP echo
 * answered, zero-copy fan-out. Only *_dpdk.c files include <rte_*.h>; this
 * header does not, so main.c can start EAL without DPDK headers.
 *
 * Options, comma-separated (defaults in brackets):
 *   port=ID|LO-HI|all  ethdevs of this port, required through ops->open
 *                      (all: every ethdev that exists); rx polls them round
 *                      robin, a reply goes out the ethdev its peer was seen on
 *   ip=A.B.C.D         own address [0.0.0.0: accept any destination address,
 *                      answer no ARP or ping, resolve needs MAC@]
 *   udp=PORT           own UDP port [9150]
 *   mbufs=N            mbufs per queue's pool [8191]; open fails with
 *                      -ENOBUFS below ethdevs x (rxd + txd) + cache x lcores
 *                      + 64 + reserve
 *   reserve=N          mbufs the caller keeps in flight (a window) [0]
 *   rxd=N, txd=N       descriptors per rx / tx queue [512, 512]
 *   queue=P,queues=K   K rx/tx queue pairs per ethdev, this object uses
 *                      queue P of every ethdev [0, 1]; open K objects (one
 *                      per lcore) with the same port=, queues= and mtu=; the
 *                      first one opened configures the ethdevs and the pools
 *                      (its mbufs, reserve, rxd, txd, offload, link_wait_ms
 *                      apply to all)
 *   queue=all,queues=K one object polls all K rx queues of every ethdev and
 *                      sends on queue 0: the peer of K objects (a host facing
 *                      ina-switch --lcores K over memif, whose partition P
 *                      answers on queue P; memif pairs queue q of both ends)
 *   link_wait_ms=MS    open waits for every link to be up, else -ENETDOWN [0];
 *                      meanwhile a memif client retries its start and
 *                      connection (its server may start later)
 *   zerocopy=0|1       fan-out chains a header mbuf per destination to the
 *                      one payload mbuf (where the ethdev takes chains) [1]
 *   offload=0|1        IPv4/UDP checksum offloads where advertised [1]
 *   csum=auto|on|off   UDP checksums: on = send one (offloaded or one pass
 *                      over the payload) and drop a datagram without one
 *                      (0); off = send 0 and accept 0 without a pass (a
 *                      datagram with a checksum is still verified); auto =
 *                      off on net_memif (shared memory), on elsewhere, and
 *                      on with corrupt= [auto]
 *   mtu=BYTES          IPv4 MTU, 576..9000 [1500]: ina packets up to MTU - 28
 *                      bytes; mbufs grow to hold a whole frame (memory:
 *                      about mbufs x (mtu + 300) bytes per queue); af_packet
 *                      needs framesz= above the frame size; net_memif needs
 *                      bsize= (vdev argument, default 2048) of mtu + 14 or
 *                      more on both ends, e.g. bsize=9216 for mtu=9000: open
 *                      fails otherwise (memif corrupts its ring when a frame
 *                      spans several of its buffers), and mbufs grow to bsize
 *   drop=RATE,seed=N   drop received ina packets on purpose (tests) [0, 1]
 *   dup=, reorder=, reorder_gap=, delay=, delay_us=, hold=
 *                      duplicate, reorder, delay received ina packets on
 *                      purpose (tests; faults.h)
 *   corrupt=RATE       flip one bit of a received ina packet before its UDP
 *                      checksum is verified in software: the packet is
 *                      dropped and counted (rx_csum_bad), as a wire error
 *                      would be; not on af_packet/af_xdp/tap (partial
 *                      checksums from a local kernel are accepted there)
 *
 * Peers: "IP:PORT" (the MAC is found by ARP: 5 requests 250 ms apart, else
 * -EHOSTUNREACH) or "MAC@IP:PORT", e.g. "02:00:00:00:00:02@10.0.0.2:9150".
 * Each port object (queue) has its own neighbour table: resolve on the object
 * of queue 0, where NICs deliver ARP. Open and close from one thread; each
 * object is then used by one lcore.
 */
#ifndef INA_PORT_DPDK_H
#define INA_PORT_DPDK_H

#include <stddef.h>
#include <stdint.h>

#include "ina/port.h"

#define INA_DPDK_UDP_PORT 9150

/*
 * Starts EAL once per process. Returns the number of argv entries consumed
 * (as rte_eal_init), or -errno with a message in 'err' that says what to do
 * (no hugepages, a --file-prefix in use, ...).
 */
int ina_dpdk_eal_init(int argc, char **argv, char *err, size_t err_size);
/* 1 once ina_dpdk_eal_init() succeeded (and before cleanup). */
int ina_dpdk_eal_running(void);
/* Releases EAL; after ina_dpdk_eal_init() succeeded, once. */
void ina_dpdk_eal_cleanup(void);

/* Makes "dpdk:..." specs known to ina_port_open(). 0 or -errno. */
int ina_port_dpdk_register(void);

extern const struct ina_port_ops ina_port_dpdk_ops;

/* Opens one ethdev that already exists (tests: rte_eth_from_rings); 'args'
 * takes the options above except port=. 0 or -errno, with why in 'err'
 * (as the ops' open; NULL or 'err_size' 0 for none). */
int ina_port_dpdk_open_id(uint16_t port_id, const char *args, struct ina_port **out, char *err,
			  unsigned err_size);

/* mbufs of the port's pools (packets and fan-out headers) not handed out
 * (leak checks in tests). */
unsigned ina_port_dpdk_pool_avail(const struct ina_port *port);

/* Number of ethdevs of the port, and the MAC it uses on ethdev 'i'. */
unsigned ina_port_dpdk_nb_ethdevs(const struct ina_port *port);
int ina_port_dpdk_mac(const struct ina_port *port, unsigned i, uint8_t mac[6]);

/* ARP, ICMP and rx classification counters, besides struct ina_port_stats. */
struct ina_port_dpdk_neigh_stats {
	uint64_t arp_rx;	 /* ARP frames received */
	uint64_t arp_reply_tx;	 /* replies to requests for our IP */
	uint64_t arp_request_tx; /* requests sent by resolve */
	uint64_t arp_learned;	 /* neighbour entries added or changed */
	uint64_t icmp_echo;	 /* echo requests answered */
	uint64_t not_ip;	 /* neither IPv4 nor ARP (in rx_drop too) */
	uint64_t not_ours;	 /* IPv4 not for our IP/UDP port (in rx_drop) */
	uint64_t malformed;	 /* bad IPv4, UDP, ARP or ICMP (in rx_drop); UDP
					 * checksum failures are also in the port's
					 * stats.rx_csum_bad */
	uint64_t link_down;	 /* link state changes to down seen */
	uint64_t csum_partial;	 /* UDP checksums left partial by the local
					 * kernel (af_packet/af_xdp/tap), accepted */
};
void ina_port_dpdk_neigh_stats(const struct ina_port *port, struct ina_port_dpdk_neigh_stats *st);

/* The counters of ethdev 'i' of the port (rte_eth_stats_get): what the
 * driver saw, including drops before ina (imissed: rx ring full, rx_nombuf:
 * pool empty). 0 or -errno. */
struct ina_port_dpdk_eth_stats {
	uint64_t ipackets, opackets, ibytes, obytes;
	uint64_t imissed, ierrors, oerrors, rx_nombuf;
};
int ina_port_dpdk_eth_stats(const struct ina_port *port, unsigned i,
			    struct ina_port_dpdk_eth_stats *st);

#endif
