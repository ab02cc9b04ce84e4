/* SPDX-License-Identifier: MIT */
/*
 * Neighbours of a dpdk port (private): answers ARP requests for the port's
 * IPv4 address and ICMP echo requests, learns the MACs of ARP senders in a
 * small fixed table (nothing allocated after open), and builds the ARP
 * requests that resolve() sends. Frames are rewritten in place into their
 * replies; the port sends them. No <rte_*.h> here.
 */
#ifndef INA_NEIGH_DPDK_H
#define INA_NEIGH_DPDK_H

#include <stdint.h>

#include "ina/port_dpdk.h"

#define NEIGH_MAX 64

struct rte_mbuf;

struct neigh_entry {
	uint32_t ip_be; /* 0 = free */
	uint16_t eth;	/* index of the ethdev it was learned on */
	uint8_t mac[6];
};

struct neigh {
	struct neigh_entry e[NEIGH_MAX];
	unsigned next;	/* entry replaced next when full */
	uint32_t ip_be; /* own address, 0 = none (then nothing is answered) */
	struct ina_port_dpdk_neigh_stats st;
};

void neigh_init(struct neigh *n, uint32_t ip_be);
/* 0 with the MAC and ethdev index of 'ip_be', or -1 when unknown. */
int neigh_lookup(const struct neigh *n, uint32_t ip_be, uint8_t mac[6], uint16_t *eth);
void neigh_learn(struct neigh *n, uint32_t ip_be, const uint8_t mac[6], uint16_t eth);

/*
 * An ARP frame 'm' (linear, Ethernet first) arrived on ethdev 'eth', whose MAC
 * is 'own_mac'. Returns 1 when 'm' was turned into the reply to send back on
 * 'eth', 0 when it is consumed (the caller frees it), -1 when malformed.
 */
int neigh_arp_input(struct neigh *n, struct rte_mbuf *m, uint16_t eth, const uint8_t *own_mac);

/*
 * An IPv4 ICMP frame 'm' (linear; header of 'hlen' bytes, 'total' bytes of
 * IPv4, both already checked). Returns 1 when it was an echo request for us,
 * now the reply to send back, 0 when it is not for us, -1 when malformed.
 */
int neigh_icmp_input(struct neigh *n, struct rte_mbuf *m, uint32_t hlen, uint32_t total,
		     const uint8_t *own_mac);

/* Fills 'm' (empty) with a broadcast ARP request for 'target_be'. */
void neigh_arp_request(struct neigh *n, struct rte_mbuf *m, uint32_t target_be,
		       const uint8_t *own_mac);

#endif
