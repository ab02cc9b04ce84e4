/* SPDX-License-Identifier: MIT */
/*
 * Prints the ina header of every UDP frame of a capture, one line per frame,
 * fields separated by tabs in the order of docs/PROTOCOL.md 2.1: version type
 * encoding flags job_id epoch rank lane tensor_id round tensor_len block next
 * block_size (B) sub_log b n_elems exp status bound, then the sub-blocks of a
 * DATA, RESULT or REPL payload (2.7): mask (its bytes in hex), present
 * sub-blocks, present elements (empty without sub-blocks; the two counts
 * empty for a bad mask), then token. Numbers are
 * decimal, the token is 0x and 16 lower-case hex digits. tests/pcap/dissector.sh
 * compares this with what the Wireshark dissector (tools/wireshark/ina.lua)
 * makes of the same capture.
 * Usage: pcap_fields FILE.pcap
 */
#include <inttypes.h>
#include <stdio.h>

#include "ina/capture.h"
#include "ina/wire.h"

/* The mask and its counts as the dissector shows them: 'mask' of
 * mask-bytes * 2 hex digits, empty strings where it shows nothing. */
static void
sub_fields(const uint8_t *ina, size_t len, const struct ina_hdr *h, char *mask, size_t mask_size,
	   char *present, char *elems)
{
	uint32_t mb = ina_wire_mask_bytes(h->sub_log), bits = 0, n_present;
	uint32_t b = ina_wire_sub_elems(h->block_size, h->sub_log);

	mask[0] = present[0] = elems[0] = '\0';
	if ((h->type != INA_T_DATA && h->type != INA_T_RESULT && h->type != INA_T_REPL) ||
	    h->sub_log == 0 || h->n_elems == 0 || h->block_size % (1u << h->sub_log) != 0 ||
	    len < INA_HDR_SIZE + mb)
		return;
	for (uint32_t i = 0; i < mb && 2 * i + 2 < mask_size; i++) {
		snprintf(mask + 2 * i, 3, "%02x", ina[INA_HDR_SIZE + i]);
		bits += (uint32_t)__builtin_popcount(ina[INA_HDR_SIZE + i]);
	}
	if (ina_wire_mask_check(ina + INA_HDR_SIZE, h->sub_log, b, h->n_elems, &n_present) !=
	    INA_WIRE_OK)
		return;
	sprintf(present, "%" PRIu32, bits);
	sprintf(elems, "%" PRIu32, n_present);
}

static int
print_frame(void *arg, const uint8_t *ina, size_t len, uint64_t ts_ns, uint32_t src_ip,
	    uint16_t src_port)
{
	char mask[2 * INA_SUB_MAX / 8 + 1], present[12], elems[12];
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
	sub_fields(ina, len, &h, mask, sizeof(mask), present, elems);
	printf("%u\t%u\t%u\t%u\t%" PRIu32 "\t%" PRIu32 "\t%u\t%u\t%" PRIu32 "\t%" PRIu32
	       "\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu32 "\t%u\t%u\t%" PRIu32 "\t%u\t%d\t%u\t%" PRIu32
	       "\t%s\t%s\t%s\t0x%016llx\n",
	       h.version, h.type, h.encoding, h.flags, h.job_id, h.epoch, h.rank, h.lane,
	       h.tensor_id, h.round, h.tensor_len, h.block, h.next, (unsigned)h.block_size,
	       (unsigned)h.sub_log, ina_wire_sub_elems(h.block_size, h.sub_log), h.n_elems, h.exp,
	       h.status, h.bound, mask, present, elems, (unsigned long long)h.token);
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
