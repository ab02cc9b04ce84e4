/* SPDX-License-Identifier: MIT */
/*
 * bench_pipeline: the switch pipeline (switch_sim/pipeline.c) alone, in
 * process, on one core. It admits one job, replays the DATA packets of a
 * dense tensor from every worker in lane order, times pipeline_rx_burst, and
 * in the same run times the plain summing kernel y += x over the same bytes,
 * so the ratio of the two is what to quote. It prints figures; it never
 * passes or fails (bench/README.md). A third row replays f32 blocks cut
 * into sub-blocks of 64 elements (docs/PROTOCOL.md 2.7), each worker sending
 * half of them. A fourth row runs the f32 replay in tenant mode (issue 19,
 * docs/PROTOCOL.md 5.13): every DATA tagged (by the worker, outside the timed
 * region), the switch checking each tag and tagging each RESULT, and prints
 * the packets per second per core with tags against without, same run.
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/auth.h"
#include "ina/cli.h"
#include "ina/lane.h"
#include "ina/log.h"
#include "ina/pkt.h"
#include "ina/subblock.h"
#include "ina/token.h"
#include "ina/util.h"
#include "ina/wire.h"
#include "pipeline.h"
#include "bench_stats.h"

#define BENCH_JOB 1
#define BENCH_TENANT 1 /* the tenant of the tagged row */

/* The job the replay runs: BENCH_JOB, or in tenant mode the tenant's job 1
 * (its index on top) with 'key' the job key. */
static uint32_t cur_job = BENCH_JOB;
static const struct ina_job_key *cur_key;
#define BENCH_TENSOR 7
#define BENCH_POOL_PKTS 256
#define BENCH_MAX_BURST 256
#define BENCH_MAX_RUNS 101
/* Offsets of the header fields the replay patches (struct ina_wire_hdr). */
#define OFF_FLAGS 3
#define OFF_ROUND 20
#define BENCH_SUB_ELEMS 64 /* elements a sub-block in the sub-block row */

struct bench_config {
	uint32_t elements;
	uint16_t block_size;
	uint16_t lanes;
	uint16_t world;
	uint16_t burst;
	unsigned runs;
	uint64_t dram_size; /* bytes of the kernel's DRAM-sized array */
	int do_f32, do_i32;
	unsigned rows; /* ROW_* bits: the rows to run */
};

enum { ROW_PLAIN = 1, ROW_SUB = 2, ROW_TAGGED = 4 };

/* The prebuilt input of one round: every packet, in the order fed. */
struct replay {
	uint8_t encoding;
	uint8_t sub_log;      /* > 0: blocks cut into sub-blocks, half sent */
	uint64_t kernel_size; /* bytes time_sum() adds (whole blocks) */
	uint32_t nb_pkts;
	uint32_t nb_blocks;
	uint32_t nb_results;   /* results one round completes */
	uint64_t payload_size; /* input payload bytes of one round */
	uint32_t stride;       /* bytes between two templates */
	uint8_t *tmpl;	       /* nb_pkts templates of 'stride' bytes */
	uint32_t *len;	       /* bytes of each template */
	uint16_t *rank;	       /* sender of each */
	uint16_t *lane;	       /* lane of each */
	uint8_t *last;	       /* 1 if the packet completes its block */
};

struct run_result {
	double pipe_s; /* inside pipeline_rx_burst (and freeing results) */
	double wall_s; /* the whole round, input copies included */
	double sum_cache_s;
	double sum_dram_s;
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: bench_pipeline [options]\n"
		   "\n"
		   "Times the switch pipeline alone on one core over the DATA packets of a\n"
		   "dense tensor from every worker, then the summing kernel y += x over the\n"
		   "same bytes, and prints medians and their ratio.\n"
		   "\n"
		   "options:\n"
		   "  --elements M          tensor elements (default 4194304)\n"
		   "  --block B             elements per block (default 1024)\n"
		   "  --lanes L             lanes (default 64)\n"
		   "  --world N             workers (default 4)\n"
		   "  --burst N             packets per pipeline_rx_burst (default 32)\n"
		   "  --runs N              timed runs; medians are printed (default 5)\n"
		   "  --dram-mib N          size of the kernel's DRAM-sized array (default 1024)\n"
		   "  --encoding f32|i32|both  (default both)\n"
		   "  --rows LIST           plain,sub,tagged: the rows to run (default all;\n"
		   "                        sub and tagged: f32 only)\n"
		   "  -h, --help            this text\n");
}

/* --rows: a comma-separated list of plain, sub and tagged. */
static unsigned
parse_rows(const char *arg)
{
	static const char *const names[] = { "plain", "sub", "tagged" };
	unsigned rows = 0;
	const char *s = arg;

	while (*s) {
		size_t n = strcspn(s, ",");
		unsigned k;

		for (k = 0; k < 3; k++)
			if (strlen(names[k]) == n && strncmp(s, names[k], n) == 0)
				break;
		if (k == 3)
			ina_die("--rows: '%.*s' is not plain, sub or tagged", (int)n, s);
		rows |= 1u << k;
		s += n + (s[n] == ',');
	}
	if (!rows)
		ina_die("--rows: no row in '%s'", arg);
	return rows;
}

static void
parse_args(int argc, char **argv, struct bench_config *c)
{
	enum { O_ELEMENTS = 256, O_BLOCK, O_LANES, O_WORLD, O_BURST, O_RUNS, O_DRAM, O_ENC };
	enum { O_ROWS = O_ENC + 1 };
	static const struct option longopts[] = {
		{ "elements", required_argument, NULL, O_ELEMENTS },
		{ "block", required_argument, NULL, O_BLOCK },
		{ "lanes", required_argument, NULL, O_LANES },
		{ "world", required_argument, NULL, O_WORLD },
		{ "burst", required_argument, NULL, O_BURST },
		{ "runs", required_argument, NULL, O_RUNS },
		{ "dram-mib", required_argument, NULL, O_DRAM },
		{ "encoding", required_argument, NULL, O_ENC },
		{ "rows", required_argument, NULL, O_ROWS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	ina_cli_set_prog("bench_pipeline");
	memset(c, 0, sizeof(*c));
	c->elements = 4194304;
	c->block_size = 1024;
	c->lanes = 64;
	c->world = 4;
	c->burst = 32;
	c->runs = 5;
	c->dram_size = 1024ull << 20;
	c->do_f32 = c->do_i32 = 1;
	c->rows = ROW_PLAIN | ROW_SUB | ROW_TAGGED;
	/* "h": help; every other option is long-only. */
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case O_ELEMENTS:
			c->elements = (uint32_t)ina_cli_u64("elements", optarg, 1, 1u << 30);
			break;
		case O_BLOCK:
			c->block_size = (uint16_t)ina_cli_u64("block", optarg, 1, 16384);
			break;
		case O_LANES:
			c->lanes = (uint16_t)ina_cli_u64("lanes", optarg, 1, 4096);
			break;
		case O_WORLD:
			c->world = (uint16_t)ina_cli_u64("world", optarg, 1, INA_MAX_WORLD);
			break;
		case O_BURST:
			c->burst = (uint16_t)ina_cli_u64("burst", optarg, 1, BENCH_MAX_BURST);
			break;
		case O_RUNS:
			c->runs = (unsigned)ina_cli_u64("runs", optarg, 1, BENCH_MAX_RUNS);
			break;
		case O_DRAM:
			c->dram_size = ina_cli_u64("dram-mib", optarg, 1, 65536) << 20;
			break;
		case O_ENC:
			if (strcmp(optarg, "both") == 0) {
				c->do_f32 = c->do_i32 = 1;
			} else {
				uint8_t e = ina_wire_encoding_parse(optarg);

				if (!e)
					ina_die("--encoding: '%s' is not f32, i32 or both", optarg);
				c->do_f32 = e == INA_ENC_F32;
				c->do_i32 = e == INA_ENC_I32;
			}
			break;
		case O_ROWS:
			c->rows = parse_rows(optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		ina_die("unexpected argument '%s'", argv[optind]);
}

/*
 * The summing kernels the pipeline is measured against: plain native-order
 * y += x, at -O3 (bench/CMakeLists.txt) and cloned for the same instruction
 * sets as the pipeline's own hot loops in common/src/encode.c.
 */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define BENCH_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef BENCH_CLONES
#define BENCH_CLONES
#endif

BENCH_CLONES __attribute__((noinline)) static void
sum_f32(float *restrict y, const float *restrict x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] += x[i];
}

BENCH_CLONES __attribute__((noinline)) static void
sum_i32(int32_t *restrict y, const int32_t *restrict x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = (int32_t)((uint32_t)y[i] + (uint32_t)x[i]);
}

static void
put_be32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static void
peer_of(struct ina_peer *peer, uint16_t rank)
{
	memset(peer, 0, sizeof(*peer));
	peer->len = 4;
	memcpy(peer->bytes, &rank, sizeof(rank));
}

static uint8_t *
xalloc(size_t size)
{
	uint8_t *p = aligned_alloc(64, (size + 63) & ~(size_t)63);

	if (!p)
		ina_die("out of memory for %zu bytes", size);
	memset(p, 0, size);
	return p;
}

/* The half of block 'b's sub-blocks worker 'w' sends: 'count' bits in a
 * pattern that differs by block and worker (their union is every one). */
static struct ina_sub_mask
half_mask(uint32_t b, uint16_t w, uint32_t count)
{
	struct ina_sub_mask m = { { 0, 0 } };

	for (uint32_t i = 0; i < count; i++)
		if ((i + b + w) % 2 == 0 || count == 1)
			m.w[i / 64] |= 1ull << (i % 64);
	return m;
}

/* Adds one template for 'rank' of 'hdr', with 'n' payload elements: with
 * r->sub_log, a mask of half the block's sub-blocks and their values. */
static void
replay_add(struct replay *r, const struct ina_hdr *hdr, uint16_t n, int last, uint32_t seed)
{
	uint8_t *t = r->tmpl + (size_t)r->nb_pkts * r->stride;
	uint8_t *pl = t + INA_HDR_SIZE;
	uint32_t mask_bytes = 0;

	ina_wire_encode_hdr(hdr, t);
	if (r->sub_log && n) {
		struct ina_sub_cut cut = ina_sub_cut(hdr->block_size, r->sub_log, n);
		struct ina_sub_mask m = half_mask(hdr->block, hdr->rank, cut.count);

		ina_sub_mask_write(pl, &m, &cut);
		mask_bytes = cut.mask_bytes;
		pl += mask_bytes;
		n = (uint16_t)ina_sub_present_elems(&m, &cut);
	}
	for (uint16_t i = 0; i < n; i++) {
		/* Never zero, so every block of every worker is non-zero. */
		uint32_t k = (seed + i) % 1000u + 1u + hdr->rank;

		if (r->encoding == INA_ENC_F32) {
			float f = (float)k * 0.125f;
			uint32_t v;

			memcpy(&v, &f, sizeof(v));
			put_be32(pl + 4 * (size_t)i, v);
		} else {
			put_be32(pl + 4 * (size_t)i, k);
		}
	}
	r->len[r->nb_pkts] = INA_HDR_SIZE + mask_bytes + 4u * n;
	r->rank[r->nb_pkts] = hdr->rank;
	r->lane[r->nb_pkts] = hdr->lane;
	r->last[r->nb_pkts] = (uint8_t)last;
	r->payload_size += mask_bytes + 4u * n;
	r->kernel_size += 4u * hdr->n_elems;
	r->nb_pkts++;
}

/*
 * Builds every packet of one round, in the order a switch sees them when the
 * workers move in lock step: for each step, for each lane, the world's
 * packets. Every block is non-zero, so each worker's next pointer is the
 * lane's next block. An i32 lane first sends its header-only opener.
 */
static void
replay_build(struct replay *r, const struct bench_config *c, uint8_t encoding, uint8_t sub_log,
	     uint32_t epoch, uint64_t token)
{
	uint32_t nb = ina_wire_nb_blocks(c->elements, c->block_size);
	uint16_t active = (uint16_t)(nb < c->lanes ? nb : c->lanes);
	uint32_t cap;
	struct ina_hdr h;

	memset(r, 0, sizeof(*r));
	r->encoding = encoding;
	r->sub_log = sub_log;
	r->nb_blocks = nb;
	cap = (uint32_t)c->world * (nb + active);
	r->stride = (INA_HDR_SIZE + INA_SUB_MAX / 8 + 4u * c->block_size + 63u) & ~63u;
	r->tmpl = xalloc((size_t)cap * r->stride);
	r->len = calloc(cap, sizeof(*r->len));
	r->rank = calloc(cap, sizeof(*r->rank));
	r->lane = calloc(cap, sizeof(*r->lane));
	r->last = calloc(cap, 1);
	if (!r->len || !r->rank || !r->lane || !r->last)
		ina_die("out of memory for %" PRIu32 " packets", cap);

	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = INA_T_DATA;
	h.encoding = encoding;
	h.job_id = cur_job;
	h.epoch = epoch;
	h.token = token;
	h.tensor_id = BENCH_TENSOR;
	h.tensor_len = c->elements;
	h.block_size = c->block_size;
	h.sub_log = sub_log;
	if (ina_lane_opens_empty(encoding)) {
		for (uint16_t l = 0; l < active; l++) {
			for (uint16_t w = 0; w < c->world; w++) {
				h.rank = w;
				h.lane = l;
				h.block = INA_BLOCK_OPEN;
				h.next = l;
				h.exp = 10;
				h.n_elems = 0;
				replay_add(r, &h, 0, w + 1 == c->world, 0);
			}
			r->nb_results++;
		}
	}
	for (uint32_t step = 0; (uint64_t)step * c->lanes < nb; step++) {
		for (uint16_t l = 0; l < c->lanes; l++) {
			uint32_t b = step * c->lanes + l;
			uint16_t n;

			if (b >= nb)
				break;
			n = ina_wire_block_elems(c->elements, c->block_size, b);
			for (uint16_t w = 0; w < c->world; w++) {
				h.rank = w;
				h.lane = l;
				h.block = b;
				h.next = b + c->lanes < nb ? b + c->lanes : INA_BLOCK_END;
				h.exp = encoding == INA_ENC_I32 && h.next != INA_BLOCK_END ? 10 : 0;
				h.n_elems = n;
				replay_add(r, &h, n, w + 1 == c->world, b * 31u + w * 7u);
			}
			r->nb_results++;
		}
	}
}

static void
replay_free(struct replay *r)
{
	free(r->tmpl);
	free(r->len);
	free(r->rank);
	free(r->lane);
	free(r->last);
}

static void
join_all(struct pipeline *p, struct ina_pkt_pool *pool, const struct bench_config *c,
	 uint8_t encoding, uint64_t token, uint32_t *epoch)
{
	struct ina_pkt *in[INA_MAX_WORLD], *out[INA_MAX_WORLD];
	uint16_t nb_out;
	struct ina_hdr h;

	if (pool->ops->get(pool, in, c->world) != c->world)
		ina_die("packet pool too small for %u joins", c->world);
	for (uint16_t w = 0; w < c->world; w++) {
		memset(&h, 0, sizeof(h));
		h.version = INA_WIRE_VERSION;
		h.type = INA_T_JOIN;
		h.encoding = encoding;
		h.job_id = cur_job;
		h.rank = w;
		h.token = token;
		ina_wire_encode_hdr(&h, in[w]->data);
		ina_wire_encode_join(c->world, c->lanes, c->block_size, in[w]->data + INA_HDR_SIZE);
		in[w]->len = INA_HDR_SIZE + sizeof(struct ina_wire_join);
		peer_of(&in[w]->peer, w);
		if (cur_key)
			ina_auth_sign(cur_key, in[w]->data, in[w]->len);
	}
	nb_out = pipeline_rx_burst(p, in, c->world, ina_now_ns(), out);
	*epoch = 0;
	for (uint16_t i = 0; i < nb_out; i++) {
		ina_wire_decode_hdr(out[i]->data, &h);
		if (h.type == INA_T_JOIN_ACK)
			*epoch = h.epoch;
	}
	ina_pkt_free_bulk(out, nb_out);
	if (nb_out != c->world || *epoch == 0)
		ina_die("the pipeline did not admit the job (%u answers to %u joins)", nb_out,
			c->world);
}

/*
 * Feeds one round of 'r' (round number 'round') to the pipeline in bursts.
 * Each input packet is copied from its template outside the timed region:
 * the pipeline consumes its inputs. 'ver' holds each lane's slot version.
 */
static void
replay_round(struct pipeline *p, struct ina_pkt_pool *pool, const struct replay *r,
	     const struct bench_config *c, uint32_t round, uint8_t *ver, struct run_result *res)
{
	struct ina_pkt *in[BENCH_MAX_BURST], *out[BENCH_MAX_BURST];
	uint32_t round_be = htobe32(round);
	uint64_t pipe_ns = 0, t_start, t0, t1;
	uint32_t i = 0;

	t_start = ina_now_ns();
	while (i < r->nb_pkts) {
		uint32_t n = r->nb_pkts - i < c->burst ? r->nb_pkts - i : c->burst;
		uint16_t nb_out;

		if (pool->ops->get(pool, in, n) != n)
			ina_die("packet pool ran dry (a result was not freed)");
		for (uint32_t k = 0; k < n; k++) {
			const uint8_t *t = r->tmpl + (size_t)(i + k) * r->stride;
			struct ina_pkt *pk = in[k];
			uint16_t l = r->lane[i + k];

			memcpy(pk->data, t, r->len[i + k]);
			memcpy(pk->data + OFF_ROUND, &round_be, sizeof(round_be));
			pk->data[OFF_FLAGS] = ver[l];
			pk->len = r->len[i + k];
			peer_of(&pk->peer, r->rank[i + k]);
			if (r->last[i + k])
				ver[l] ^= 1;
			/* The worker's tag, its bytes final (not timed). */
			if (cur_key)
				ina_auth_sign(cur_key, pk->data, pk->len);
		}
		t0 = ina_now_ns();
		nb_out = pipeline_rx_burst(p, in, (uint16_t)n, t0, out);
		ina_pkt_free_bulk(out, nb_out);
		t1 = ina_now_ns();
		pipe_ns += t1 - t0;
		i += n;
	}
	res->wall_s = (double)(ina_now_ns() - t_start) / 1e9;
	res->pipe_s = (double)pipe_ns / 1e9;
}

/*
 * The summing kernel over the same bytes and blocks as the pipeline: block k
 * of the input is added into the accumulator of its lane, as the slots are.
 * 'x' is either a small ring (cache-resident) or a window of a large array.
 */
static double
time_sum(uint8_t encoding, uint8_t *acc, const uint8_t *x, size_t x_blocks,
	 const struct bench_config *c, const struct replay *r)
{
	size_t bsize = 4u * c->block_size;
	uint32_t nb_in = r->nb_blocks * c->world;
	uint64_t t0 = ina_now_ns();

	for (uint32_t k = 0; k < nb_in; k++) {
		uint32_t b = k / c->world;
		uint8_t *y = acc + (size_t)(b % c->lanes) * bsize;
		const uint8_t *xb = x + (size_t)(k % x_blocks) * bsize;

		if (encoding == INA_ENC_F32)
			sum_f32((float *)(void *)y, (const float *)(const void *)xb, c->block_size);
		else
			sum_i32((int32_t *)(void *)y, (const int32_t *)(const void *)xb,
				c->block_size);
	}
	return (double)(ina_now_ns() - t0) / 1e9;
}

/* Runs one row; returns the pipeline's median ns per packet. With 'tenants'
 * the pipeline runs in tenant mode and every packet is tagged. */
static double
bench_encoding(const struct bench_config *c, uint8_t encoding, uint8_t sub_log, uint8_t *big,
	       size_t big_blocks, const struct tenants *tenants)
{
	struct run_result res[BENCH_MAX_RUNS + 1];
	double pipe[BENCH_MAX_RUNS], wall[BENCH_MAX_RUNS], cache[BENCH_MAX_RUNS],
		dram[BENCH_MAX_RUNS];
	char enc[32];
	uint64_t token = tenants ? 0 : ina_token_hash("bench", 5);
	struct ina_job_key key;
	const struct pipeline_stats *st;
	struct pipeline_config pc;
	struct ina_pkt_pool *pool;
	struct pipeline *p;
	struct replay r;
	uint8_t *ver, *acc, *ring;
	size_t bsize = 4u * c->block_size, windows, win_blocks;
	uint64_t drops = 0;
	uint32_t epoch;
	double pm, wm, cm, dm, bytes, kbytes;

	if (sub_log)
		snprintf(enc, sizeof(enc), "%s b=%u, half", ina_wire_encoding_name(encoding),
			 c->block_size >> sub_log);
	else
		snprintf(enc, sizeof(enc), "%s%s", ina_wire_encoding_name(encoding),
			 tenants ? " tagged" : "");
	cur_job = BENCH_JOB;
	cur_key = NULL;
	if (tenants) {
		cur_job = (uint32_t)BENCH_TENANT << INA_TENANT_SHIFT | BENCH_JOB;
		ina_auth_job_key(tenants_get(tenants, BENCH_TENANT)->key, cur_job, &key);
		cur_key = &key;
	}
	pool = ina_pkt_pool_create(BENCH_POOL_PKTS,
				   INA_HDR_SIZE + INA_SUB_MAX / 8 + 4u * c->block_size);
	if (!pool)
		ina_die("cannot create a packet pool: %s", strerror(errno));
	pipeline_config_init(&pc);
	pc.nb_slots = c->lanes;
	pc.slot_elems = c->block_size;
	pc.max_jobs = 1;
	pc.pool = pool;
	pc.tenants = tenants;
	p = pipeline_create(&pc);
	if (!p)
		ina_die("cannot create the pipeline: %s", strerror(errno));
	join_all(p, pool, c, encoding, token, &epoch);
	replay_build(&r, c, encoding, sub_log, epoch, token);
	ver = calloc(c->lanes, 1);
	acc = xalloc((size_t)c->lanes * bsize);
	ring = xalloc((size_t)c->burst * bsize);
	for (size_t k = 0; k < (size_t)c->burst * c->block_size; k++) {
		uint32_t v = (uint32_t)(k % 1000u + 1u);

		if (encoding == INA_ENC_F32) {
			float f = (float)v * 0.125f;

			memcpy(ring + 4 * k, &f, 4);
		} else {
			memcpy(ring + 4 * k, &v, 4);
		}
	}
	if (!ver)
		ina_die("out of memory");
	win_blocks = (size_t)r.nb_blocks * c->world;
	windows = big_blocks / win_blocks;

	/* Run 0 warms up caches, page tables and the branch predictors. */
	for (unsigned run = 0; run <= c->runs; run++) {
		const uint8_t *win = big + (run % windows) * win_blocks * bsize;

		replay_round(p, pool, &r, c, run + 1, ver, &res[run]);
		res[run].sum_cache_s = time_sum(encoding, acc, ring, c->burst, c, &r);
		res[run].sum_dram_s = time_sum(encoding, acc, win, win_blocks, c, &r);
	}
	for (unsigned run = 0; run < c->runs; run++) {
		pipe[run] = res[run + 1].pipe_s;
		wall[run] = res[run + 1].wall_s;
		cache[run] = res[run + 1].sum_cache_s;
		dram[run] = res[run + 1].sum_dram_s;
	}
	pm = bench_median(pipe, c->runs);
	wm = bench_median(wall, c->runs);
	cm = bench_median(cache, c->runs);
	dm = bench_median(dram, c->runs);
	bytes = (double)r.payload_size;
	kbytes = (double)r.kernel_size; /* the kernel adds whole blocks */

	st = pipeline_stats(p);
	for (int k = 0; k < INA_WIRE_REASON_MAX; k++)
		drops += st->drop_wire[k];
	for (int k = 0; k < PDROP_MAX; k++)
		drops += st->drop[k];
	printf("%s pipeline           %7.1f ns/pkt  %6.2f Mpkt/s  goodput %6.2f GB/s"
	       "  (input copy included: %.2f GB/s)\n",
	       enc, pm / r.nb_pkts * 1e9, r.nb_pkts / pm / 1e6, bytes / pm / 1e9, bytes / wm / 1e9);
	printf("%s sum kernel y += x  cache-resident %6.2f GB/s   DRAM-sized %6.2f GB/s\n", enc,
	       kbytes / cm / 1e9, kbytes / dm / 1e9);
	printf("%s ratio pipeline goodput / sum kernel:  cache-resident %.2f   DRAM-sized %.2f\n",
	       enc, (bytes / pm) / (kbytes / cm), (bytes / pm) / (kbytes / dm));
	if (drops || st->results != (uint64_t)r.nb_results * (c->runs + 1) || st->duplicates)
		printf("%s WARNING: %" PRIu64 " drops, %" PRIu64 " duplicates, %" PRIu64
		       " results (want %" PRIu64 "): the replay did not follow the protocol\n",
		       enc, drops, st->duplicates, st->results,
		       (uint64_t)r.nb_results * (c->runs + 1));
	fflush(stdout);

	free(ring);
	free(acc);
	free(ver);
	replay_free(&r);
	pipeline_destroy(p);
	ina_pkt_pool_destroy(pool);
	cur_key = NULL;
	return pm / r.nb_pkts * 1e9;
}

int
main(int argc, char **argv)
{
	struct bench_config c;
	uint32_t nb;
	size_t total, big_size;
	uint8_t *big;
	double plain_ns = 0;

	parse_args(argc, argv, &c);
	ina_log_set_level(INA_LOG_WARN);
	nb = ina_wire_nb_blocks(c.elements, c.block_size);
	total = (size_t)nb * c.world * 4u * c.block_size;
	big_size = c.dram_size > total ? c.dram_size : total;
	big = xalloc(big_size); /* zeros: the kernel's cost does not depend on them */

	printf("bench_pipeline: %" PRIu32 " elements, B %u, %u lanes, world %u, bursts of %u, "
	       "median of %u runs\n",
	       c.elements, c.block_size, c.lanes, c.world, c.burst, c.runs);
	printf("  goodput = input payload bytes (all workers) / time inside pipeline_rx_burst;\n"
	       "  sum kernel = the same bytes through y += x, x %zu KiB cache-resident or a\n"
	       "  %zu MiB window of a %zu MiB array\n",
	       (size_t)c.burst * 4u * c.block_size >> 10, total >> 20, big_size >> 20);
	if (c.do_f32 && (c.rows & ROW_PLAIN))
		plain_ns = bench_encoding(&c, INA_ENC_F32, 0, big, big_size / (4u * c.block_size),
					  NULL);
	if (c.do_i32 && (c.rows & ROW_PLAIN))
		bench_encoding(&c, INA_ENC_I32, 0, big, big_size / (4u * c.block_size), NULL);
	if (c.do_f32 && (c.rows & ROW_SUB)) {
		/* Sub-blocks of 64 elements (B a multiple of 128 and at most
		 * 128 of them), each worker sending half. */
		uint8_t k = 0;

		while (k < INA_SUB_LOG_MAX && (c.block_size >> (k + 1)) >= BENCH_SUB_ELEMS &&
		       c.block_size % (BENCH_SUB_ELEMS << (k + 1)) == 0)
			k++;
		if (k)
			bench_encoding(&c, INA_ENC_F32, k, big, big_size / (4u * c.block_size),
				       NULL);
	}
	if (c.do_f32 && (c.rows & ROW_TAGGED)) {
		/* Tenant mode: one tenant, its job tagged both ways. */
		static struct tenants tenants;
		struct tenant *t = &tenants.by_index[BENCH_TENANT];
		double tagged_ns;

		t->index = BENCH_TENANT;
		t->max_jobs = 1;
		t->max_slots = UINT32_MAX;
		t->max_weight = 255;
		snprintf(t->name, sizeof(t->name), "bench");
		memset(t->key, 0x42, sizeof(t->key));
		tenants.count = 1;
		tagged_ns = bench_encoding(&c, INA_ENC_F32, 0, big, big_size / (4u * c.block_size),
					   &tenants);
		if (plain_ns > 0)
			printf("f32 tenant mode (tags checked and made): %.1f ns/pkt against "
			       "%.1f: packets/s per core with tags / without = %.2f\n",
			       tagged_ns, plain_ns, plain_ns / tagged_ns);
	}
	free(big);
	return 0;
}
