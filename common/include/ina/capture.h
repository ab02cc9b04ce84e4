/* SPDX-License-Identifier: MIT */
/*
 * Packet captures with libpcap: a writer that stores ina packets wrapped in a
 * synthetic Ethernet/IPv4/UDP frame (so tcpdump and Wireshark read them), and
 * a reader that hands the UDP payloads of a capture back with their time and
 * source. The programs write captures beside their port (--capture FILE);
 * ina-replay feeds them back into a fresh pipeline.
 */
#ifndef INA_CAPTURE_H
#define INA_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ina/pkt.h"
#include "ina/port.h"

/* Largest UDP payload a frame of the capture can hold (65535 - IPv4 - UDP). */
#define INA_CAPTURE_MAX_PAYLOAD (65535 - 20 - 8)

struct ina_capture;

/* Wall-clock time in ns since the epoch: the timestamps captures carry. */
static inline uint64_t
ina_capture_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Creates the pcap file 'path' (Ethernet link type, nanosecond timestamps)
 * and returns a writer, or NULL with errno set and a message in 'err'.
 */
struct ina_capture *ina_capture_open(const char *path, char *err, size_t err_size);

/*
 * Appends 'pkt' (its 'data' and 'len' only; the caller keeps the packet) as
 * a frame from 'src' to 'dst' at 'realtime_ns'. Peers that are sockaddr_in
 * give the frame's addresses and ports; any other peer is 0.0.0.0:0. MAC
 * addresses are locally administered, 02:00 followed by the IPv4 address.
 * Both checksums are correct. A packet longer than INA_CAPTURE_MAX_PAYLOAD
 * is not written, and counted (ina_capture_nb_skipped()).
 */
void ina_capture_write(struct ina_capture *cap, const struct ina_pkt *pkt,
		       const struct ina_peer *src, const struct ina_peer *dst,
		       uint64_t realtime_ns);

/*
 * Decodes peers with 'port''s peer_inet op from now on (udp and dpdk have
 * it; a dpdk port's peers are not sockaddr_in), and writes a NULL or empty
 * (len 0) peer, such as a zeroed 'self', as the port's own address.
 * Ports without that op, and NULL, change nothing.
 */
void ina_capture_set_port(struct ina_capture *cap, const struct ina_port *port);

/* Writes a received burst: each packet from its 'peer' to 'self'. */
void ina_capture_rx_burst(struct ina_capture *cap, struct ina_pkt *const *pkts, uint16_t n,
			  const struct ina_peer *self, uint64_t realtime_ns);
/* Writes a burst about to be sent from 'self': one frame per destination
 * (each of a fan-out's 'dsts', or the packet's 'peer'). */
void ina_capture_tx_burst(struct ina_capture *cap, struct ina_pkt *const *pkts, uint16_t n,
			  const struct ina_peer *self, uint64_t realtime_ns);

/* Frames written and packets too long to write, so far. */
uint64_t ina_capture_nb_written(const struct ina_capture *cap);
uint64_t ina_capture_nb_skipped(const struct ina_capture *cap);

/*
 * Flushes and closes the file and frees the writer. Accepts NULL. Returns 0,
 * or -EIO when the file could not be written completely.
 */
int ina_capture_close(struct ina_capture *cap);

/* What ina_capture_read() saw, by outcome. Every frame counts in one field
 * besides nb_frames. */
struct ina_capture_counts {
	uint64_t nb_frames;	  /* frames in the file */
	uint64_t nb_delivered;	  /* UDP payloads handed to the callback */
	uint64_t nb_not_udp;	  /* not Ethernet/IPv4/UDP, or an IP fragment */
	uint64_t nb_truncated;	  /* captured shorter than the frame or its headers */
	uint64_t nb_bad_ip_csum;  /* wrong IPv4 header checksum */
	uint64_t nb_bad_udp_csum; /* wrong UDP checksum */
};

/*
 * Called for each valid UDP payload of a capture: 'ina' and 'len' are the
 * payload (valid during the call only), 'ts_ns' the frame's time in ns,
 * 'src_ip' and 'src_port' the source in host byte order. Returns 0 to go on;
 * anything else stops the read.
 */
typedef int ina_capture_cb(void *arg, const uint8_t *ina, size_t len, uint64_t ts_ns,
			   uint32_t src_ip, uint16_t src_port);

/*
 * Reads the capture 'path' in file order and calls 'cb' with the payload of
 * every Ethernet/IPv4/UDP frame whose checksums are right (a UDP checksum of
 * 0 means none). Other frames are skipped and counted in 'counts' (may be
 * NULL), which is zeroed first. Returns 0 when the file was read to its end,
 * the callback's value if it stopped the read, or -errno (-ENOENT, -EINVAL
 * for a file that is not a pcap of Ethernet frames, -EIO for a read error)
 * with a message in 'err'.
 */
int ina_capture_read(const char *path, ina_capture_cb *cb, void *arg,
		     struct ina_capture_counts *counts, char *err, size_t err_size);

#endif
