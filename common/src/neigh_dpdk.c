/* SPDX-License-Identifier: MIT */
/*
 * ARP and ICMP echo for the dpdk port (neigh_dpdk.h), so that `arping` and
 * `ping` work against a DPDK switch or host, and resolve() finds a peer's
 * MAC. Replies reuse the request's mbuf; nothing is allocated or logged.
 */
#include <string.h>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "neigh_dpdk.h"

#define ARP_FRAME_LEN (RTE_ETHER_HDR_LEN + sizeof(struct rte_arp_hdr)) /* 42 */
#define MIN_FRAME_LEN 60 /* Ethernet minimum without FCS */

void
neigh_init(struct neigh *n, uint32_t ip_be)
{
	memset(n, 0, sizeof(*n));
	n->ip_be = ip_be;
}

int
neigh_lookup(const struct neigh *n, uint32_t ip_be, uint8_t mac[6], uint16_t *eth)
{
	for (unsigned i = 0; i < NEIGH_MAX; i++) {
		if (n->e[i].ip_be == ip_be && ip_be) {
			memcpy(mac, n->e[i].mac, 6);
			*eth = n->e[i].eth;
			return 0;
		}
	}
	return -1;
}

void
neigh_learn(struct neigh *n, uint32_t ip_be, const uint8_t mac[6], uint16_t eth)
{
	struct neigh_entry *free_e = NULL, *e = NULL;

	if (!ip_be)
		return;
	for (unsigned i = 0; i < NEIGH_MAX && !e; i++) {
		if (n->e[i].ip_be == ip_be)
			e = &n->e[i];
		else if (!n->e[i].ip_be && !free_e)
			free_e = &n->e[i];
	}
	if (e && e->eth == eth && memcmp(e->mac, mac, 6) == 0)
		return;
	if (!e) {
		e = free_e ? free_e : &n->e[n->next++ % NEIGH_MAX];
		e->ip_be = ip_be;
	}
	memcpy(e->mac, mac, 6);
	e->eth = eth;
	n->st.arp_learned++;
}

int
neigh_arp_input(struct neigh *n, struct rte_mbuf *m, uint16_t eth, const uint8_t *own_mac)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eh + 1);
	struct rte_arp_ipv4 *a = &arp->arp_data;
	uint16_t op;

	n->st.arp_rx++;
	if (rte_pktmbuf_data_len(m) < ARP_FRAME_LEN ||
	    arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) || arp->arp_hlen != 6 ||
	    arp->arp_plen != 4) {
		n->st.malformed++;
		return -1;
	}
	op = rte_be_to_cpu_16(arp->arp_opcode);
	if (!n->ip_be || a->arp_tip != n->ip_be)
		return 0; /* not about us: nothing to learn or answer */
	neigh_learn(n, a->arp_sip, a->arp_sha.addr_bytes, eth);
	if (op != RTE_ARP_OP_REQUEST)
		return 0;

	/* The request becomes the reply, in place. */
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
	a->arp_tha = a->arp_sha;
	a->arp_tip = a->arp_sip;
	memcpy(a->arp_sha.addr_bytes, own_mac, 6);
	a->arp_sip = n->ip_be;
	eh->dst_addr = a->arp_tha;
	memcpy(eh->src_addr.addr_bytes, own_mac, 6);
	n->st.arp_reply_tx++;
	return 1;
}

int
neigh_icmp_input(struct neigh *n, struct rte_mbuf *m, uint32_t hlen, uint32_t total,
		 const uint8_t *own_mac)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 1);
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)(void *)((uint8_t *)ip + hlen);
	uint32_t len = total - hlen;
	uint32_t tmp;

	if (!n->ip_be || ip->dst_addr != n->ip_be)
		return 0;
	if (len < sizeof(*icmp) || rte_raw_cksum(icmp, len) != 0xffff) {
		n->st.malformed++;
		return -1;
	}
	if (icmp->icmp_type != RTE_IP_ICMP_ECHO_REQUEST || icmp->icmp_code != 0)
		return 0;

	icmp->icmp_type = RTE_IP_ICMP_ECHO_REPLY;
	icmp->icmp_cksum = 0;
	icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(icmp, len);
	tmp = ip->src_addr;
	ip->src_addr = ip->dst_addr;
	ip->dst_addr = tmp;
	ip->time_to_live = 64;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	eh->dst_addr = eh->src_addr;
	memcpy(eh->src_addr.addr_bytes, own_mac, 6);
	/* Without the rx padding. */
	m->data_len = (uint16_t)(RTE_ETHER_HDR_LEN + total);
	m->pkt_len = m->data_len;
	n->st.icmp_echo++;
	return 1;
}

void
neigh_arp_request(struct neigh *n, struct rte_mbuf *m, uint32_t target_be, const uint8_t *own_mac)
{
	uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)(void *)frame;
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eh + 1);
	struct rte_arp_ipv4 *a = &arp->arp_data;

	memset(frame, 0, MIN_FRAME_LEN);
	memset(eh->dst_addr.addr_bytes, 0xff, 6);
	memcpy(eh->src_addr.addr_bytes, own_mac, 6);
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = 6;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	memcpy(a->arp_sha.addr_bytes, own_mac, 6);
	a->arp_sip = n->ip_be;
	a->arp_tip = target_be; /* arp_tha stays zero */
	m->data_len = MIN_FRAME_LEN;
	m->pkt_len = MIN_FRAME_LEN;
	n->st.arp_request_tx++;
}
