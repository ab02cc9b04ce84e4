/* SPDX-License-Identifier: MIT */
/*
 * ina-replay: feeds a capture (ina-switch --capture) back into a fresh
 * pipeline. Every packet not sent by the switch goes in, one at a time, in
 * capture order, with the capture's timestamp as the time; the program prints
 * one line per RESULT the pipeline emits and then its counters. It reads no
 * clock and opens no socket, so the same capture always prints the same bytes.
 * XXX: the switch also ticks its timers while idle, which no capture records;
 * here timers tick only as packets arrive (linger and idle expiry may differ).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "ina/capture.h"
#include "ina/cli.h"
#include "ina/log.h"
#include "ina/pkt.h"
#include "ina/util.h"
#include "ina/wire.h"
#include "pipeline.h"
#include "pipeline_dump.h"
#include "pipeline_log.h"

/* Packet buffers: one in, one out at a time, and room for the pipeline's own. */
#define REPLAY_POOL_PKTS 64
#define REPLAY_BUF_SIZE 65536

struct replay {
	struct pipeline *pipe;
	struct ina_pkt_pool *pool;
	uint64_t now_ns; /* never goes back, even if the capture does */
	uint64_t last_tick_ns;
	uint64_t nb_fed;	 /* packets given to the pipeline */
	uint64_t nb_from_switch; /* packets the switch sent: skipped */
	uint64_t nb_no_buffer;	 /* no packet buffer (never expected) */
	uint64_t nb_results;	 /* RESULT lines printed */
};

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: ina-replay [options] FILE.pcap\n"
		"\n"
		"Feeds the packets of a capture (ina-switch --capture) that were sent to the\n"
		"switch into a fresh pipeline, in capture order with the capture's times, and\n"
		"prints one line per RESULT (with an XXH3-64 hash of its payload), then the\n"
		"pipeline's counters. The same capture always prints the same output.\n"
		"\n"
		"options:\n"
		"  --slots N             slots in the pool; a job takes one per lane (default 1024)\n"
		"  --slot-elems N        elements one slot sums, the largest block (default 2048)\n"
		"  --log-level LEVEL     err, warn, info or debug (default warn)\n"
		"  -h, --help            this text\n");
}

enum { OPT_SLOTS = 256, OPT_SLOT_ELEMS, OPT_LOG_LEVEL };

static const char *
parse_args(int argc, char **argv, struct pipeline_config *cfg)
{
	static const struct option opts[] = {
		{ "slots", required_argument, NULL, OPT_SLOTS },
		{ "slot-elems", required_argument, NULL, OPT_SLOT_ELEMS },
		{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	ina_cli_set_prog("ina-replay");
	ina_log_set_ident("ina-replay");
	ina_log_set_level(INA_LOG_WARN);
	pipeline_config_init(cfg);
	cfg->on_event = pipeline_log_event;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case OPT_SLOTS:
			cfg->nb_slots = (uint32_t)ina_cli_u64("slots", optarg, 1, 1u << 20);
			break;
		case OPT_SLOT_ELEMS:
			cfg->slot_elems = (uint16_t)ina_cli_u64("slot-elems", optarg, 1,
								INA_BLOCK_MAX);
			break;
		case OPT_LOG_LEVEL:
			ina_cli_log_level(optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		exit(2);
	}
	return argv[optind];
}

/* Prints the RESULTs among the pipeline's output and frees all of it. */
static void
replay_output(struct replay *r, struct ina_pkt **out, uint16_t nb_out)
{
	struct ina_hdr h;

	for (uint16_t i = 0; i < nb_out; i++) {
		struct ina_pkt *o = out[i];

		if (o->len >= INA_HDR_SIZE) {
			ina_wire_decode_hdr(o->data, &h);
			if (h.type == INA_T_RESULT) {
				printf("RESULT job=%" PRIu32 " round=%" PRIu32
				       " lane=%u block=%" PRIu32 " next=%" PRIu32
				       " n_elems=%u hash=%016" PRIx64 "%s\n",
				       h.job_id, h.round, h.lane, h.block, h.next, h.n_elems,
				       (uint64_t)XXH3_64bits(o->data + INA_HDR_SIZE,
							     o->len - INA_HDR_SIZE),
				       h.flags & INA_F_DEFERRED ? " deferred" : "");
				r->nb_results++;
			}
		}
		ina_pkt_free(o);
	}
}

static int
replay_packet(void *arg, const uint8_t *ina, size_t len, uint64_t ts_ns, uint32_t src_ip,
	      uint16_t src_port)
{
	struct replay *r = arg;
	struct ina_pkt *in, *out[1];
	struct sockaddr_in sin;
	struct ina_hdr h;
	uint16_t nb_out;

	if (len >= INA_HDR_SIZE) {
		ina_wire_decode_hdr(ina, &h);
		if (h.rank == INA_RANK_SWITCH) {
			r->nb_from_switch++;
			return 0;
		}
	}
	if (ts_ns > r->now_ns)
		r->now_ns = ts_ns;
	if (r->now_ns - r->last_tick_ns >= INA_NS_PER_MS) {
		pipeline_tick(r->pipe, r->now_ns);
		r->last_tick_ns = r->now_ns;
	}
	in = ina_pkt_alloc(r->pool);
	if (!in || len > in->cap) {
		ina_pkt_free(in);
		r->nb_no_buffer++;
		return 0;
	}
	memcpy(in->data, ina, len);
	in->len = (uint32_t)len;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(src_ip);
	sin.sin_port = htons(src_port);
	memset(&in->peer, 0, sizeof(in->peer));
	in->peer.len = sizeof(sin);
	memcpy(in->peer.bytes, &sin, sizeof(sin));
	in->dsts = NULL;
	in->dst_mask = 0;
	r->nb_fed++;
	nb_out = pipeline_rx_burst(r->pipe, &in, 1, r->now_ns, out);
	replay_output(r, out, nb_out);
	return 0;
}

int
main(int argc, char **argv)
{
	struct pipeline_config cfg;
	struct ina_capture_counts counts;
	struct replay r;
	const char *path;
	char err[512];
	int ret;

	path = parse_args(argc, argv, &cfg);
	memset(&r, 0, sizeof(r));
	r.pool = ina_pkt_pool_create(REPLAY_POOL_PKTS, REPLAY_BUF_SIZE);
	if (!r.pool)
		ina_die("cannot create the packet pool: %s", strerror(errno));
	cfg.pool = r.pool;
	r.pipe = pipeline_create(&cfg);
	if (!r.pipe)
		ina_die("cannot create the pipeline (%u slots of %u elements): %s", cfg.nb_slots,
			cfg.slot_elems, strerror(errno));
	err[0] = '\0';
	ret = ina_capture_read(path, replay_packet, &r, &counts, err, sizeof(err));
	if (ret < 0)
		ina_die("%s", err[0] ? err : strerror(-ret));

	printf("ina-replay stats:\n");
	printf("  %-24s %" PRIu64 "\n", "capture_frames", counts.nb_frames);
	printf("  %-24s %" PRIu64 "\n", "fed", r.nb_fed);
	printf("  %-24s %" PRIu64 "\n", "from_switch", r.nb_from_switch);
	printf("  %-24s %" PRIu64 "\n", "result_lines", r.nb_results);
	if (counts.nb_not_udp)
		printf("  %-24s %" PRIu64 "\n", "skip_not_udp", counts.nb_not_udp);
	if (counts.nb_truncated)
		printf("  %-24s %" PRIu64 "\n", "skip_truncated", counts.nb_truncated);
	if (counts.nb_bad_ip_csum)
		printf("  %-24s %" PRIu64 "\n", "skip_bad_ip_csum", counts.nb_bad_ip_csum);
	if (counts.nb_bad_udp_csum)
		printf("  %-24s %" PRIu64 "\n", "skip_bad_udp_csum", counts.nb_bad_udp_csum);
	if (r.nb_no_buffer)
		printf("  %-24s %" PRIu64 "\n", "skip_no_buffer", r.nb_no_buffer);
	pipeline_stats_print(r.pipe, stdout);
	pipeline_destroy(r.pipe);
	ina_pkt_pool_destroy(r.pool);
	return ferror(stdout) ? 1 : 0;
}
