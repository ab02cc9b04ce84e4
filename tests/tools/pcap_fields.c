/* SPDX-License-Identifier: MIT */
/*
 * Prints the ina header of every UDP frame of a capture, one line per frame,
 * fields separated by tabs in the order of docs/PROTOCOL.md 2.1: version type
 * encoding flags job_id epoch rank lane tensor_id round tensor_len block next
 * block_size n_elems exp status bound token. Numbers are
 * decimal, the token is 0x and 16 lower-case hex digits. tests/pcap/dissector.sh
 * compares this with what the Wireshark dissector (tools/wireshark/ina.lua)
 * makes of the same capture.
 * Usage: pcap_fields FILE.pcap
 */
#include <inttypes.h>
#include <stdio.h>

#include "ina/capture.h"
#include "ina/wire.h"

static int
print_frame(void *arg, const uint8_t *ina, size_t len, uint64_t ts_ns, uint32_t src_ip,
	    uint16_t src_port)
{
	struct ina_hdr h;

	(void)arg;
	(void)ts_ns;
	(void)src_ip;
	(void)src_port;
	if (len < INA_HDR_SIZE) {
		/* the dissector shows no header fields either: an empty line */
		printf("\n");
		return 0;
	}
	ina_wire_decode_hdr(ina, &h);
	printf("%u\t%u\t%u\t%u\t%" PRIu32 "\t%" PRIu32 "\t%u\t%u\t%" PRIu32 "\t%" PRIu32
	       "\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu32 "\t%u\t%u\t%d\t%u\t%" PRIu32 "\t0x%016llx\n",
	       h.version, h.type, h.encoding, h.flags, h.job_id, h.epoch, h.rank, h.lane,
	       h.tensor_id, h.round, h.tensor_len, h.block, h.next, h.block_size, h.n_elems, h.exp,
	       h.status, h.bound, (unsigned long long)h.token);
	return 0;
}

int
main(int argc, char **argv)
{
	char err[256];
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: pcap_fields FILE.pcap\n");
		return 2;
	}
	rc = ina_capture_read(argv[1], print_frame, NULL, NULL, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "pcap_fields: %s: %s\n", argv[1], err);
		return 1;
	}
	if (fflush(stdout) != 0) {
		perror("pcap_fields: stdout");
		return 1;
	}
	return 0;
}
