/* SPDX-License-Identifier: MIT */
/*
 * Ethernet/IPv4/UDP framing in software (private to the dpdk port): write the
 * 42 header bytes in front of a payload whose one's complement sum is known
 * (so a fan-out sums its payload once), and check a received IPv4 header and
 * UDP checksum. No <rte_*.h> here.
 */
#ifndef INA_FRAME_DPDK_H
#define INA_FRAME_DPDK_H

#include <stdint.h>

#define FRAME_ETH_LEN 14
#define FRAME_HDR_LEN 42 /* Ethernet 14 + IPv4 20 + UDP 8 */

/* One end of a UDP flow; ip and port in network order. */
struct frame_end {
	uint8_t mac[6];
	uint32_t ip_be;
	uint16_t udp_be;
};

/* The unfolded one's complement sum of 'len' bytes. */
uint32_t frame_sum(const void *buf, uint32_t len);

/* Who fills in the checksums of a frame frame_udp_write() makes. */
enum frame_csum {
	FRAME_CSUM_SW,	    /* IPv4 and UDP here ('psum' is the payload's sum) */
	FRAME_CSUM_OFFLOAD, /* the NIC: IPv4 left 0, UDP holds the pseudo-header sum */
	FRAME_CSUM_NONE,    /* IPv4 here, UDP 0 ("none", RFC 768): 'psum' unused */
};

/*
 * Writes Eth/IPv4/UDP at 'hdr' (42 bytes) for a payload of 'len' bytes whose
 * frame_sum() is 'psum' (needed for FRAME_CSUM_SW only).
 */
void frame_udp_write(uint8_t *hdr, const struct frame_end *src, const struct frame_end *dst,
		     uint32_t len, uint32_t psum, enum frame_csum csum);

/*
 * Checks the IPv4 header at 'ip', 'avail' bytes long with what follows:
 * version, IHL, total length, no fragment, and (unless 'csum_good') the
 * header checksum. Returns the header length and sets '*total', or -1.
 */
int frame_ipv4_check(const uint8_t *ip, uint32_t avail, int csum_good, uint32_t *total);

/*
 * 1 if the UDP datagram of 'udp_len' bytes after the IPv4 header 'ip' of
 * 'hlen' bytes has a right checksum; 0 for none (a 0 field: whether that is
 * accepted is the caller's choice, csum=), or a wrong one; 2 if 'partial_ok' and the
 * field holds only the pseudo-header sum (CHECKSUM_PARTIAL: a frame from the
 * local kernel over veth or tap, whose checksum nobody filled in); else 0.
 */
int frame_udp_ok(const uint8_t *ip, uint32_t hlen, uint32_t udp_len, int partial_ok);

#endif
