/* SPDX-License-Identifier: MIT */
/*
 * Captures with libpcap (capture.h): the writer wraps each ina packet in an
 * Ethernet/IPv4/UDP frame built in a buffer the writer owns, with both
 * checksums computed, and dumps it with a nanosecond timestamp; the reader
 * parses frames back, checks both checksums and hands the UDP payload on.
 * Nothing here knows the ina header: the payload is opaque bytes.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/capture.h"

#define ETH_HDR_SIZE 14
#define IP4_HDR_SIZE 20
#define UDP_HDR_SIZE 8
#define FRAME_HDR_SIZE (ETH_HDR_SIZE + IP4_HDR_SIZE + UDP_HDR_SIZE)
#define SNAPLEN 65535
#define ETHERTYPE_IP4 0x0800
#define IPPROTO_UDP_NUM 17

_Static_assert(FRAME_HDR_SIZE + INA_CAPTURE_MAX_PAYLOAD <= SNAPLEN + ETH_HDR_SIZE, "frame size");

struct ina_capture {
	pcap_t *pcap;
	pcap_dumper_t *dumper;
	uint64_t nb_written;
	uint64_t nb_skipped;
	const struct ina_port *port; /* decodes peers when set (ina_capture_set_port) */
	uint8_t frame[FRAME_HDR_SIZE + INA_CAPTURE_MAX_PAYLOAD];
};

static void
put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}

static uint16_t
get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get_be32(const uint8_t *p)
{
	return (uint32_t)get_be16(p) << 16 | get_be16(p + 2);
}

/* Adds 'size' bytes as big-endian 16-bit words to a one's-complement sum. */
static uint32_t
csum_add(uint32_t sum, const uint8_t *buf, size_t size)
{
	size_t i;

	for (i = 0; i + 1 < size; i += 2) {
		sum += get_be16(buf + i);
		sum = (sum & 0xffff) + (sum >> 16);
	}
	if (size & 1) {
		sum += (uint32_t)buf[size - 1] << 8;
		sum = (sum & 0xffff) + (sum >> 16);
	}
	return sum;
}

static uint16_t
csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* One's-complement sum of the UDP pseudo-header, UDP header and payload. */
static uint16_t
udp_sum(uint32_t src_ip, uint32_t dst_ip, const uint8_t *udp, uint16_t udp_len)
{
	uint8_t pseudo[12];

	put_be32(pseudo, src_ip);
	put_be32(pseudo + 4, dst_ip);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_UDP_NUM;
	put_be16(pseudo + 10, udp_len);
	return csum_fold(csum_add(csum_add(0, pseudo, sizeof(pseudo)), udp, udp_len));
}

/* IPv4 address and port of a peer in host order: by the port set with
 * ina_capture_set_port(), else from a sockaddr_in; 0.0.0.0:0 when neither. */
static void
peer_addr(const struct ina_capture *cap, const struct ina_peer *peer, uint32_t *ip, uint16_t *port)
{
	struct sockaddr_in sin;

	*ip = 0;
	*port = 0;
	if (cap->port) {
		/* An empty peer (a zeroed 'self') is the port itself. */
		if (ina_port_peer_inet(cap->port, peer && peer->len ? peer : NULL, ip, port) < 0) {
			*ip = 0;
			*port = 0;
		}
		return;
	}
	if (!peer || peer->len != sizeof(sin))
		return;
	memcpy(&sin, peer->bytes, sizeof(sin));
	if (sin.sin_family != AF_INET)
		return;
	*ip = ntohl(sin.sin_addr.s_addr);
	*port = ntohs(sin.sin_port);
}

static void
put_mac(uint8_t *p, uint32_t ip)
{
	p[0] = 0x02; /* locally administered, unicast */
	p[1] = 0x00;
	put_be32(p + 2, ip);
}

struct ina_capture *
ina_capture_open(const char *path, char *err, size_t err_size)
{
	struct ina_capture *cap;
	int saved;

	cap = calloc(1, sizeof(*cap));
	if (!cap) {
		snprintf(err, err_size, "capture %s: %s", path, strerror(errno));
		return NULL;
	}
	cap->pcap = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, SNAPLEN,
							 PCAP_TSTAMP_PRECISION_NANO);
	if (!cap->pcap) {
		snprintf(err, err_size, "capture %s: pcap_open_dead failed", path);
		saved = ENOMEM;
		goto err;
	}
	cap->dumper = pcap_dump_open(cap->pcap, path);
	if (!cap->dumper) {
		saved = errno ? errno : EIO;
		snprintf(err, err_size, "capture %s: %s", path, pcap_geterr(cap->pcap));
		goto err;
	}
	return cap;
err:
	if (cap->pcap)
		pcap_close(cap->pcap);
	free(cap);
	errno = saved;
	return NULL;
}

void
ina_capture_write(struct ina_capture *cap, const struct ina_pkt *pkt, const struct ina_peer *src,
		  const struct ina_peer *dst, uint64_t realtime_ns)
{
	uint8_t *eth = cap->frame, *ip = eth + ETH_HDR_SIZE, *udp = ip + IP4_HDR_SIZE;
	struct pcap_pkthdr ph;
	uint32_t src_ip, dst_ip;
	uint16_t src_port, dst_port, csum;

	if (pkt->len > INA_CAPTURE_MAX_PAYLOAD) {
		cap->nb_skipped++;
		return;
	}
	peer_addr(cap, src, &src_ip, &src_port);
	peer_addr(cap, dst, &dst_ip, &dst_port);

	put_mac(eth, dst_ip);
	put_mac(eth + 6, src_ip);
	put_be16(eth + 12, ETHERTYPE_IP4);

	ip[0] = 0x45; /* version 4, 5 words */
	ip[1] = 0;    /* DSCP/ECN */
	put_be16(ip + 2, (uint16_t)(IP4_HDR_SIZE + UDP_HDR_SIZE + pkt->len));
	put_be16(ip + 4, (uint16_t)cap->nb_written); /* identification */
	put_be16(ip + 6, 0x4000);		     /* don't fragment */
	ip[8] = 64;				     /* TTL */
	ip[9] = IPPROTO_UDP_NUM;
	put_be16(ip + 10, 0);
	put_be32(ip + 12, src_ip);
	put_be32(ip + 16, dst_ip);
	put_be16(ip + 10, (uint16_t)~csum_fold(csum_add(0, ip, IP4_HDR_SIZE)));

	put_be16(udp, src_port);
	put_be16(udp + 2, dst_port);
	put_be16(udp + 4, (uint16_t)(UDP_HDR_SIZE + pkt->len));
	put_be16(udp + 6, 0);
	if (pkt->len)
		memcpy(udp + UDP_HDR_SIZE, pkt->data, pkt->len);
	csum = (uint16_t)~udp_sum(src_ip, dst_ip, udp, (uint16_t)(UDP_HDR_SIZE + pkt->len));
	put_be16(udp + 6, csum ? csum : 0xffff); /* 0 means "no checksum" */

	memset(&ph, 0, sizeof(ph));
	ph.ts.tv_sec = (time_t)(realtime_ns / 1000000000ull);
	ph.ts.tv_usec = (suseconds_t)(realtime_ns % 1000000000ull); /* ns: nano file */
	ph.caplen = ph.len = FRAME_HDR_SIZE + pkt->len;
	pcap_dump((u_char *)cap->dumper, &ph, cap->frame);
	cap->nb_written++;
}

void
ina_capture_set_port(struct ina_capture *cap, const struct ina_port *port)
{
	uint32_t ip;
	uint16_t udp;

	if (port && ina_port_peer_inet(port, NULL, &ip, &udp) != -EOPNOTSUPP)
		cap->port = port;
}

void
ina_capture_rx_burst(struct ina_capture *cap, struct ina_pkt *const *pkts, uint16_t n,
		     const struct ina_peer *self, uint64_t realtime_ns)
{
	for (uint16_t i = 0; i < n; i++)
		ina_capture_write(cap, pkts[i], &pkts[i]->peer, self, realtime_ns);
}

void
ina_capture_tx_burst(struct ina_capture *cap, struct ina_pkt *const *pkts, uint16_t n,
		     const struct ina_peer *self, uint64_t realtime_ns)
{
	for (uint16_t i = 0; i < n; i++) {
		const struct ina_pkt *p = pkts[i];

		if (!p->dsts) {
			ina_capture_write(cap, p, self, &p->peer, realtime_ns);
			continue;
		}
		for (uint64_t m = p->dst_mask; m; m &= m - 1)
			ina_capture_write(cap, p, self, &p->dsts[__builtin_ctzll(m)], realtime_ns);
	}
}

uint64_t
ina_capture_nb_written(const struct ina_capture *cap)
{
	return cap->nb_written;
}

uint64_t
ina_capture_nb_skipped(const struct ina_capture *cap)
{
	return cap->nb_skipped;
}

int
ina_capture_close(struct ina_capture *cap)
{
	FILE *f;
	int ret = 0;

	if (!cap)
		return 0;
	f = pcap_dump_file(cap->dumper);
	if (pcap_dump_flush(cap->dumper) < 0 || (f && ferror(f)))
		ret = -EIO;
	pcap_dump_close(cap->dumper);
	pcap_close(cap->pcap);
	free(cap);
	return ret;
}

/*
 * Checks one frame and finds its UDP payload. Returns NULL with the payload
 * and source filled in, or a pointer to the counter the frame belongs in.
 */
static uint64_t *
frame_parse(const struct pcap_pkthdr *ph, const uint8_t *frame, struct ina_capture_counts *c,
	    const uint8_t **payload, size_t *len, uint32_t *src_ip, uint16_t *src_port)
{
	const uint8_t *ip, *udp;
	uint32_t dst_ip;
	uint16_t ip_len, udp_len, ihl;

	if (ph->caplen < ph->len)
		return &c->nb_truncated;
	if (ph->caplen < ETH_HDR_SIZE)
		return &c->nb_truncated;
	if (get_be16(frame + 12) != ETHERTYPE_IP4)
		return &c->nb_not_udp;
	ip = frame + ETH_HDR_SIZE;
	if (ph->caplen < ETH_HDR_SIZE + IP4_HDR_SIZE)
		return &c->nb_truncated;
	ihl = (uint16_t)((ip[0] & 0x0f) * 4);
	if ((ip[0] >> 4) != 4 || ihl < IP4_HDR_SIZE)
		return &c->nb_not_udp;
	ip_len = get_be16(ip + 2);
	if (ph->caplen < (uint32_t)ETH_HDR_SIZE + ihl || ip_len < ihl)
		return &c->nb_truncated;
	if (ph->caplen < (uint32_t)ETH_HDR_SIZE + ip_len)
		return &c->nb_truncated;
	if (csum_fold(csum_add(0, ip, ihl)) != 0xffff)
		return &c->nb_bad_ip_csum;
	if (ip[9] != IPPROTO_UDP_NUM || (get_be16(ip + 6) & 0x3fff) != 0)
		return &c->nb_not_udp; /* not UDP, or a fragment */
	udp = ip + ihl;
	if ((uint32_t)ip_len < (uint32_t)ihl + UDP_HDR_SIZE)
		return &c->nb_truncated;
	udp_len = get_be16(udp + 4);
	if (udp_len < UDP_HDR_SIZE || udp_len > ip_len - ihl)
		return &c->nb_truncated;
	*src_ip = get_be32(ip + 12);
	dst_ip = get_be32(ip + 16);
	if (get_be16(udp + 6) != 0 && udp_sum(*src_ip, dst_ip, udp, udp_len) != 0xffff)
		return &c->nb_bad_udp_csum;
	*src_port = get_be16(udp);
	*payload = udp + UDP_HDR_SIZE;
	*len = udp_len - UDP_HDR_SIZE;
	return NULL;
}

int
ina_capture_read(const char *path, ina_capture_cb *cb, void *arg, struct ina_capture_counts *counts,
		 char *err, size_t err_size)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct ina_capture_counts local;
	struct pcap_pkthdr *ph;
	const u_char *frame;
	pcap_t *pcap;
	FILE *f;
	int ret = 0, r;

	if (!counts)
		counts = &local;
	memset(counts, 0, sizeof(*counts));
	f = fopen(path, "rb");
	if (!f) {
		ret = -errno;
		snprintf(err, err_size, "capture %s: %s", path, strerror(errno));
		return ret;
	}
	errbuf[0] = '\0';
	/* On success pcap owns 'f' and pcap_close() closes it. */
	pcap = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, errbuf);
	if (!pcap) {
		snprintf(err, err_size, "capture %s: %s", path, errbuf);
		fclose(f);
		return -EINVAL;
	}
	if (pcap_datalink(pcap) != DLT_EN10MB) {
		snprintf(err, err_size, "capture %s: link type %s, not Ethernet", path,
			 pcap_datalink_val_to_name(pcap_datalink(pcap))
				 ? pcap_datalink_val_to_name(pcap_datalink(pcap))
				 : "unknown");
		ret = -EINVAL;
		goto out;
	}
	while ((r = pcap_next_ex(pcap, &ph, &frame)) == 1) {
		const uint8_t *payload;
		uint64_t *skip, ts_ns;
		uint32_t src_ip;
		uint16_t src_port;
		size_t len;

		counts->nb_frames++;
		skip = frame_parse(ph, frame, counts, &payload, &len, &src_ip, &src_port);
		if (skip) {
			(*skip)++;
			continue;
		}
		counts->nb_delivered++;
		ts_ns = (uint64_t)ph->ts.tv_sec * 1000000000ull + (uint64_t)ph->ts.tv_usec;
		ret = cb(arg, payload, len, ts_ns, src_ip, src_port);
		if (ret)
			goto out;
	}
	if (r == PCAP_ERROR) {
		snprintf(err, err_size, "capture %s: %s", path, pcap_geterr(pcap));
		ret = -EIO;
	}
out:
	pcap_close(pcap);
	return ret;
}
