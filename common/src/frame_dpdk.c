/* SPDX-License-Identifier: MIT */
/*
 * Ethernet/IPv4/UDP framing and checksums in software (frame_dpdk.h), with
 * DPDK's checksum helpers. The payload sum is taken once by the caller and
 * completed here with the pseudo-header and UDP header of each destination.
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "frame_dpdk.h"

_Static_assert(sizeof(struct rte_ether_hdr) + sizeof(struct rte_ipv4_hdr) +
			       sizeof(struct rte_udp_hdr) ==
		       FRAME_HDR_LEN,
	       "header size");

uint32_t
frame_sum(const void *buf, uint32_t len)
{
	return __rte_raw_cksum(buf, len, 0);
}

/* Pseudo-header (addresses, protocol, length) plus the UDP header, unfolded. */
static inline uint32_t
pseudo_sum(uint32_t src_ip, uint32_t dst_ip, uint16_t udp_len_be)
{
	return (src_ip & 0xffff) + (src_ip >> 16) + (dst_ip & 0xffff) + (dst_ip >> 16) +
	       rte_cpu_to_be_16(IPPROTO_UDP) + udp_len_be;
}

void
frame_udp_write(uint8_t *hdr, const struct frame_end *src, const struct frame_end *dst,
		uint32_t len, uint32_t psum, enum frame_csum csum)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)(void *)hdr;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	uint16_t udp_len_be = rte_cpu_to_be_16((uint16_t)(8 + len));
	uint32_t sum;

	memcpy(eth->dst_addr.addr_bytes, dst->mac, 6);
	memcpy(eth->src_addr.addr_bytes, src->mac, 6);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);

	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(20 + 8 + len));
	ip->packet_id = 0;
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = src->ip_be;
	ip->dst_addr = dst->ip_be;
	ip->hdr_checksum = 0;

	udp->src_port = src->udp_be;
	udp->dst_port = dst->udp_be;
	udp->dgram_len = udp_len_be;
	sum = pseudo_sum(src->ip_be, dst->ip_be, udp_len_be);
	if (csum == FRAME_CSUM_OFFLOAD) {
		udp->dgram_cksum = __rte_raw_cksum_reduce(sum);
		return;
	}
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	if (csum == FRAME_CSUM_NONE) {
		udp->dgram_cksum = 0;
		return;
	}
	sum += psum + src->udp_be + dst->udp_be + udp_len_be;
	udp->dgram_cksum = (uint16_t)~__rte_raw_cksum_reduce(sum);
	if (udp->dgram_cksum == 0)
		udp->dgram_cksum = 0xffff; /* 0 means "no checksum" */
}

int
frame_ipv4_check(const uint8_t *l3, uint32_t avail, int csum_good, uint32_t *total)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(const void *)l3;
	uint32_t hlen, len;

	if (avail < sizeof(*ip) || (ip->version_ihl >> 4) != 4)
		return -1;
	hlen = (uint32_t)(ip->version_ihl & 0xf) * 4;
	len = rte_be_to_cpu_16(ip->total_length);
	if (hlen < 20 || len < hlen || len > avail)
		return -1;
	/* Fragments: more-fragments set or a nonzero offset. */
	if (rte_be_to_cpu_16(ip->fragment_offset) & 0x3fff)
		return -1;
	if (!csum_good && rte_raw_cksum(ip, hlen) != 0xffff)
		return -1;
	*total = len;
	return (int)hlen;
}

int
frame_udp_ok(const uint8_t *l3, uint32_t hlen, uint32_t udp_len, int partial_ok)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(const void *)l3;
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(const void *)(l3 + hlen);
	uint32_t pseudo, sum;

	/* A zero UDP checksum means none (RFC 768): not a right one. Otherwise
	 * the sum over the pseudo-header and the datagram, checksum included,
	 * is 0xffff. */
	if (udp->dgram_cksum == 0)
		return 0;
	pseudo = pseudo_sum(ip->src_addr, ip->dst_addr, rte_cpu_to_be_16((uint16_t)udp_len));
	sum = __rte_raw_cksum(udp, udp_len, pseudo);
	if (__rte_raw_cksum_reduce(sum) == 0xffff)
		return 1;
	return partial_ok && udp->dgram_cksum == __rte_raw_cksum_reduce(pseudo) ? 2 : 0;
}
