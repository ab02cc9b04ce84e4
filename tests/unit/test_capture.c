/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the pcap writer and reader (capture.c): packets written with
 * known peers and nanosecond times read back intact; the frames themselves are
 * checked byte by byte with a pcap parser and checksum code of this file's own;
 * corrupted, non-UDP and truncated frames are skipped and counted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ina/capture.h"
#include "ina/pkt.h"

#define NB_PKTS 4
#define PCAP_GLOBAL_SIZE 24
#define PCAP_REC_SIZE 16
#define FRAME_HDR 42

static const uint64_t ts_ns[NB_PKTS] = {
	1700000000123456789ull,
	1700000000123456790ull,
	1700000001000000001ull,
	1700000002999999999ull,
};
static const uint32_t lens[NB_PKTS] = { 56, 0, 57, 1080 };

struct rx {
	unsigned n;
	uint8_t data[NB_PKTS][2048];
	size_t len[NB_PKTS];
	uint64_t ts[NB_PKTS];
	uint32_t ip[NB_PKTS];
	uint16_t port[NB_PKTS];
	int stop_at; /* return 5 from this packet, -1 never */
};

static char path[64];

static void
peer_in(struct ina_peer *peer, const char *ip, uint16_t port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, ip, &sin.sin_addr), 1);
	memset(peer, 0, sizeof(*peer));
	peer->len = sizeof(sin);
	memcpy(peer->bytes, &sin, sizeof(sin));
}

static void
fill(uint8_t *buf, uint32_t len, unsigned seed)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + seed * 31 + 1);
}

/* Writes NB_PKTS packets: even ones from 10.0.0.1:40001 to 10.0.0.254:9150,
 * odd ones back; packet 3 from a peer that is no sockaddr_in. */
static void
write_capture(void)
{
	static uint8_t buf[2048];
	struct ina_peer a, b, odd;
	struct ina_capture *cap;
	struct ina_pkt pkt;
	char err[256];

	peer_in(&a, "10.0.0.1", 40001);
	peer_in(&b, "10.0.0.254", 9150);
	memset(&odd, 0, sizeof(odd));
	odd.len = 4;
	cap = ina_capture_open(path, err, sizeof(err));
	if (!cap)
		print_error("%s\n", err);
	assert_non_null(cap);
	for (unsigned i = 0; i < NB_PKTS; i++) {
		memset(&pkt, 0, sizeof(pkt));
		fill(buf, lens[i], i);
		pkt.data = buf;
		pkt.len = lens[i];
		pkt.cap = sizeof(buf);
		if (i == 3)
			ina_capture_write(cap, &pkt, &odd, NULL, ts_ns[i]);
		else
			ina_capture_write(cap, &pkt, i % 2 ? &b : &a, i % 2 ? &a : &b, ts_ns[i]);
	}
	assert_int_equal(ina_capture_nb_written(cap), NB_PKTS);
	assert_int_equal(ina_capture_nb_skipped(cap), 0);
	assert_int_equal(ina_capture_close(cap), 0);
}

static int
on_pkt(void *arg, const uint8_t *ina, size_t len, uint64_t ts, uint32_t ip, uint16_t port)
{
	struct rx *rx = arg;
	unsigned i = rx->n++;

	assert_true(i < NB_PKTS);
	assert_true(len <= sizeof(rx->data[i]));
	memcpy(rx->data[i], ina, len);
	rx->len[i] = len;
	rx->ts[i] = ts;
	rx->ip[i] = ip;
	rx->port[i] = port;
	return (int)i == rx->stop_at ? 5 : 0;
}

static uint8_t *
slurp(size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*size = (size_t)n;
	return buf;
}

static void
spill(const uint8_t *buf, size_t size)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, size, f), size);
	assert_int_equal(fclose(f), 0);
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t
be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Offset of record 'idx''s frame in a file written on this (little-endian) host. */
static size_t
frame_off(const uint8_t *buf, size_t size, unsigned idx)
{
	size_t off = PCAP_GLOBAL_SIZE;

	for (unsigned i = 0; i < idx; i++) {
		assert_true(off + PCAP_REC_SIZE <= size);
		off += PCAP_REC_SIZE + le32(buf + off + 8);
	}
	return off + PCAP_REC_SIZE;
}

/* RFC 1071, written independently of capture.c. */
static uint16_t
csum(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i + 1 < na; i += 2)
		s += be16(a + i);
	for (i = 0; i + 1 < nb; i += 2)
		s += be16(b + i);
	if (nb & 1)
		s += (uint64_t)b[nb - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static int
setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/ina_test_capture_%d.pcap", (int)getpid());
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static void
test_capture_roundtrip(void **state)
{
	static struct rx rx;
	struct ina_capture_counts c;
	uint8_t want[2048];
	char err[256] = "";

	(void)state;
	write_capture();
	memset(&rx, 0, sizeof(rx));
	rx.stop_at = -1;
	assert_int_equal(ina_capture_read(path, on_pkt, &rx, &c, err, sizeof(err)), 0);
	assert_int_equal(rx.n, NB_PKTS);
	assert_int_equal(c.nb_frames, NB_PKTS);
	assert_int_equal(c.nb_delivered, NB_PKTS);
	assert_int_equal(c.nb_not_udp + c.nb_truncated + c.nb_bad_ip_csum + c.nb_bad_udp_csum, 0);
	for (unsigned i = 0; i < NB_PKTS; i++) {
		fill(want, lens[i], i);
		assert_int_equal(rx.len[i], lens[i]);
		if (lens[i])
			assert_memory_equal(rx.data[i], want, lens[i]);
		assert_true(rx.ts[i] == ts_ns[i]);
	}
	assert_int_equal(rx.ip[0], 0x0a000001);
	assert_int_equal(rx.port[0], 40001);
	assert_int_equal(rx.ip[1], 0x0a0000fe);
	assert_int_equal(rx.port[1], 9150);
	assert_int_equal(rx.ip[2], 0x0a000001);
	assert_int_equal(rx.ip[3], 0); /* not a sockaddr_in */
	assert_int_equal(rx.port[3], 0);
}

static void
test_capture_frames(void **state)
{
	size_t size, off;
	uint8_t *buf;

	(void)state;
	write_capture();
	buf = slurp(&size);
	assert_int_equal(le32(buf), 0xa1b23c4d); /* nanosecond pcap */
	assert_int_equal(le32(buf + 20), 1);	 /* DLT_EN10MB */
	for (unsigned i = 0; i < NB_PKTS; i++) {
		uint8_t pseudo[12], *f, *ip, *udp;
		uint32_t caplen;

		off = frame_off(buf, size, i);
		caplen = le32(buf + off - PCAP_REC_SIZE + 8);
		assert_int_equal(caplen, FRAME_HDR + lens[i]);
		assert_int_equal(le32(buf + off - PCAP_REC_SIZE + 12), caplen);
		assert_int_equal(le32(buf + off - PCAP_REC_SIZE), ts_ns[i] / 1000000000ull);
		assert_int_equal(le32(buf + off - PCAP_REC_SIZE + 4), ts_ns[i] % 1000000000ull);
		f = buf + off;
		ip = f + 14;
		udp = ip + 20;
		assert_int_equal(be16(f + 12), 0x0800);
		assert_int_equal(f[0], 0x02);
		assert_int_equal(f[6], 0x02);
		assert_memory_equal(f + 2, ip + 16, 4); /* dst MAC from dst IP */
		assert_memory_equal(f + 8, ip + 12, 4); /* src MAC from src IP */
		assert_int_equal(ip[0], 0x45);
		assert_int_equal(ip[9], 17);
		assert_int_equal(be16(ip + 2), 28 + lens[i]);
		assert_int_equal(csum(ip, 20, NULL, 0), 0);
		assert_int_equal(be16(udp + 4), 8 + lens[i]);
		assert_int_not_equal(be16(udp + 6), 0);
		memcpy(pseudo, ip + 12, 8);
		pseudo[8] = 0;
		pseudo[9] = 17;
		memcpy(pseudo + 10, udp + 4, 2);
		assert_int_equal(csum(pseudo, sizeof(pseudo), udp, 8 + lens[i]), 0);
		if (i == 0) {
			assert_int_equal(be16(udp), 40001);
			assert_int_equal(be16(udp + 2), 9150);
		}
		if (i == 3) {
			assert_int_equal(be16(udp + 2), 0);
			assert_int_equal(ip[16] | ip[17] | ip[18] | ip[19], 0);
		}
	}
	free(buf);
}

static void
test_capture_corrupt(void **state)
{
	static struct rx rx;
	struct ina_capture_counts c;
	char err[256] = "";
	size_t size;
	uint8_t *buf, *f;

	(void)state;
	write_capture();
	buf = slurp(&size);
	f = buf + frame_off(buf, size, 0);
	f[14 + 8] ^= 0x01; /* TTL: bad IPv4 checksum */
	f = buf + frame_off(buf, size, 1);
	f[14 + 20 + 1] ^= 0x01; /* UDP port: bad UDP checksum */
	f = buf + frame_off(buf, size, 2);
	f[12] = 0x86; /* IPv6 ethertype: not UDP over IPv4 */
	f[13] = 0xdd;
	spill(buf, size);
	memset(&rx, 0, sizeof(rx));
	rx.stop_at = -1;
	assert_int_equal(ina_capture_read(path, on_pkt, &rx, &c, err, sizeof(err)), 0);
	assert_int_equal(c.nb_frames, NB_PKTS);
	assert_int_equal(c.nb_bad_ip_csum, 1);
	assert_int_equal(c.nb_bad_udp_csum, 1);
	assert_int_equal(c.nb_not_udp, 1);
	assert_int_equal(c.nb_delivered, 1);
	assert_int_equal(rx.n, 1);
	assert_int_equal(rx.len[0], lens[3]);

	/* A UDP checksum of 0 means none: the frame is good again. */
	f = buf + frame_off(buf, size, 1);
	f[14 + 20 + 1] ^= 0x01;
	f[14 + 20 + 1] ^= 0x02;
	f[14 + 20 + 6] = 0;
	f[14 + 20 + 7] = 0;
	/* Truncated: the record says the frame was longer than captured. */
	f = buf + frame_off(buf, size, 3);
	f[-4] = (uint8_t)(f[-4] + 1);
	spill(buf, size);
	memset(&rx, 0, sizeof(rx));
	rx.stop_at = -1;
	assert_int_equal(ina_capture_read(path, on_pkt, &rx, &c, err, sizeof(err)), 0);
	assert_int_equal(c.nb_delivered, 1);
	assert_int_equal(c.nb_truncated, 1);
	assert_int_equal(rx.port[0], 9150 ^ 0x02);
	assert_int_equal(rx.len[0], 0);
	free(buf);
}

static void
test_capture_errors(void **state)
{
	static struct rx rx;
	char err[256] = "";
	static const uint8_t junk[64] = "this is not a pcap file at all";

	(void)state;
	assert_null(ina_capture_open("/nonexistent-dir/x.pcap", err, sizeof(err)));
	assert_true(err[0] != '\0');
	assert_int_equal(ina_capture_close(NULL), 0);
	unlink(path);
	err[0] = '\0';
	assert_int_equal(ina_capture_read(path, on_pkt, &rx, NULL, err, sizeof(err)), -ENOENT);
	assert_true(err[0] != '\0');
	spill(junk, sizeof(junk));
	assert_int_equal(ina_capture_read(path, on_pkt, &rx, NULL, err, sizeof(err)), -EINVAL);

	/* The callback stops the read with its own value. */
	write_capture();
	memset(&rx, 0, sizeof(rx));
	rx.stop_at = 1;
	assert_int_equal(ina_capture_read(path, on_pkt, &rx, NULL, err, sizeof(err)), 5);
	assert_int_equal(rx.n, 2);
}

static void
test_capture_too_big(void **state)
{
	struct ina_capture *cap;
	struct ina_pkt pkt;
	char err[256];
	uint8_t *big;

	(void)state;
	big = calloc(1, INA_CAPTURE_MAX_PAYLOAD + 1);
	assert_non_null(big);
	cap = ina_capture_open(path, err, sizeof(err));
	assert_non_null(cap);
	memset(&pkt, 0, sizeof(pkt));
	pkt.data = big;
	pkt.len = INA_CAPTURE_MAX_PAYLOAD + 1;
	ina_capture_write(cap, &pkt, NULL, NULL, 1);
	pkt.len = INA_CAPTURE_MAX_PAYLOAD;
	ina_capture_write(cap, &pkt, NULL, NULL, 2);
	assert_int_equal(ina_capture_nb_skipped(cap), 1);
	assert_int_equal(ina_capture_nb_written(cap), 1);
	assert_int_equal(ina_capture_close(cap), 0);
	free(big);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_capture_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_capture_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_capture_corrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_capture_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_capture_too_big, setup, teardown),
	};

	return cmocka_run_group_tests_name("capture", tests, NULL, NULL);
}
