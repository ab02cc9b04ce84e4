/* SPDX-License-Identifier: MIT */
/*
 * The accounting of ina-bench-formats (bench/bench_formats.c) against the
 * real engines and switch (tests/unit/fabric.c): for the shipped gradients
 * (iteration 0, 4 workers, 64 lanes), sparsified as the bench does (element
 * top-k then fixed blocks of 256; block top-k at several B and masses; the raw
 * gradients; and blocks cut into sub-blocks, PROTOCOL 2.7: sub-block top-k at
 * several B, b and masses, masks of 4, 8 and 16 bytes, and the raw gradients
 * cut), one allreduce in f32 and in bf16 must put on the wire exactly
 * the packets and bytes the bench counts with planner_count() and
 * planner_cost() at 4 or 2 bytes an element: DATA packets and bytes sent by
 * all workers (empty acks and openers included), RESULT packets and bytes
 * received by all workers, and the header-only RESULTs among them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "ina/npy.h"
#include "ina/wire.h"
#include "planner.h"
#include "sparsify.h"

#ifndef INA_SOURCE_DIR
#error "INA_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

#define GRADS INA_SOURCE_DIR "/data/grads_cnn_digits_3it.npy"
#define N_PARAMS 71754u
#define N_W 4
#define LANES 64
#define MAX_BLOCK 2048

static float grad[N_W][N_PARAMS], in[N_W][N_PARAMS], out[N_W][N_PARAMS];
static uint32_t mags[N_PARAMS];

/* What the switch sends, before fan-out: header-only RESULTs, per copy. */
struct tap_count {
	uint64_t empty_results;
};

static void
tap(void *arg, const struct ina_pkt *pkt)
{
	struct tap_count *t = arg;
	struct ina_hdr h;

	ina_wire_decode_hdr(pkt->data, &h);
	if (h.type == INA_T_RESULT && h.n_elems == 0)
		t->empty_results += pkt->dsts ? (uint64_t)__builtin_popcountll(pkt->dst_mask) : 1;
}

static void
load(void)
{
	struct ina_npy *npy;
	char err[256];
	unsigned w;

	npy = ina_npy_open(GRADS, err, sizeof(err));
	if (!npy)
		fail_msg("%s", err);
	for (w = 0; w < N_W; w++)
		assert_int_equal(ina_npy_read_row(npy, w, grad[w], N_PARAMS), 0);
	ina_npy_close(npy);
}

static const float *mag_src;

static int
mag_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	float fx = fabsf(mag_src[x]), fy = fabsf(mag_src[y]);

	if (fx != fy)
		return fx > fy ? -1 : 1;
	return x < y ? -1 : (x > y);
}

/* Element top-k to mass m, as the bench's fixed-block baseline selects. */
static void
elem_topk(const float *g, float *o, double m)
{
	double total = 0, acc = 0;
	uint32_t i;

	for (i = 0; i < N_PARAMS; i++) {
		total += (double)g[i] * g[i];
		mags[i] = i;
	}
	mag_src = g;
	qsort(mags, N_PARAMS, sizeof(mags[0]), mag_cmp);
	memset(o, 0, sizeof(float) * N_PARAMS);
	for (i = 0; i < N_PARAMS && acc < m * total && g[mags[i]] != 0.0f; i++) {
		o[mags[i]] = g[mags[i]];
		acc += (double)g[mags[i]] * g[mags[i]];
	}
}

static void
block_topk(const float *g, float *o, uint32_t B, uint32_t sub, double m)
{
	struct sparsify_config sc;
	struct sparsify *s;

	sparsify_config_init(&sc);
	sc.n_elems = N_PARAMS;
	sc.block_size = B;
	sc.sub_block = sub;
	sc.target = SPARSIFY_MASS;
	sc.mass = m;
	s = sparsify_create(&sc);
	assert_non_null(s);
	assert_int_equal(sparsify_round(s, g, o, 0, NULL), 0);
	sparsify_destroy(s);
}

/* One allreduce of in[] through the fabric against the bench's count. */
static void
check_wire(uint8_t encoding, uint32_t B, uint8_t sub_log, const char *what)
{
	const float *vec[N_W];
	float *in_p[N_W], *out_p[N_W];
	struct engine_stats before[N_W];
	struct planner_config pc;
	struct planner_blocks blk;
	struct planner_cost c;
	struct tap_count t = { 0 };
	struct fabric f;
	uint64_t up_pkts = 0, up_bytes = 0, down_pkts = 0, down_bytes = 0, steps;
	unsigned w;

	planner_config_init(&pc);
	pc.max_elems = N_PARAMS;
	pc.world = N_W;
	pc.lanes = LANES;
	pc.elem_bytes = (uint32_t)ina_wire_elem_size(encoding);
	for (w = 0; w < N_W; w++) {
		vec[w] = in[w];
		in_p[w] = in[w];
		out_p[w] = out[w];
	}
	planner_count(&pc, vec, N_W, N_PARAMS, B, sub_log, &blk);
	c = planner_cost(&pc, N_PARAMS, B, sub_log, &blk);

	fabric_init(&f, N_W, LANES, MAX_BLOCK, encoding, NULL, NULL);
	assert_int_equal(fabric_join(&f), 0);
	for (w = 0; w < N_W; w++)
		before[w] = *engine_stats(f.hosts[w]);
	f.sub_log = sub_log; /* fabric_allreduce() cuts every engine's round */
	f.tap = tap;
	f.tap_arg = &t;
	assert_int_equal(fabric_allreduce(&f, 1, in_p, out_p, N_PARAMS, (uint16_t)B, ENGINE_SUM),
			 0);
	f.tap = NULL;
	for (w = 0; w < N_W; w++) {
		const struct engine_stats *st = engine_stats(f.hosts[w]);

		up_pkts += st->pkts_sent - before[w].pkts_sent;
		up_bytes += st->bytes_sent - before[w].bytes_sent;
		down_pkts += st->pkts_recv - before[w].pkts_recv;
		down_bytes += st->bytes_recv - before[w].bytes_recv;
	}
	assert_int_equal(f.dropped, 0);
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);

	print_message("%-4s %-26s B %4u/%-4u: up %6llu pkts %8llu bytes, down %6llu pkts %8llu "
		      "bytes, %llu header-only RESULTs\n",
		      encoding == INA_ENC_BF16 ? "bf16" : "f32", what, B, B >> sub_log,
		      (unsigned long long)up_pkts, (unsigned long long)up_bytes,
		      (unsigned long long)down_pkts, (unsigned long long)down_bytes,
		      (unsigned long long)t.empty_results);
	assert_int_equal(up_pkts, c.up_pkts);
	assert_int_equal(up_bytes, c.up_bytes);
	assert_int_equal(down_pkts, c.down_pkts);
	assert_int_equal(down_bytes, c.down_bytes);
	steps = c.up_pkts / N_W;
	assert_int_equal(t.empty_results, (uint64_t)N_W * (steps - blk.sent));
}

static void
run_cases(uint8_t encoding)
{
	static const struct {
		uint32_t B;
		double mass;
	} topk[] = { { 16, 0.5 }, { 64, 0.7 }, { 256, 0.9 }, { 1024, 0.5 } };
	static const struct {
		uint32_t B;
		uint8_t sub_log;
		double mass;
	} cut[] = { { 256, 4, 0.5 }, { 1024, 6, 0.7 }, { 2048, 7, 0.5 }, { 2048, 7, 0.9 } };
	unsigned w, k;

	load();
	for (w = 0; w < N_W; w++)
		memcpy(in[w], grad[w], sizeof(in[w]));
	check_wire(encoding, 256, 0, "raw gradients");
	check_wire(encoding, 1024, 6, "raw gradients, cut");
	for (w = 0; w < N_W; w++)
		elem_topk(grad[w], in[w], 0.5);
	check_wire(encoding, 256, 0, "element top-k 0.5, fixed");
	for (k = 0; k < sizeof(topk) / sizeof(topk[0]); k++) {
		char what[64];

		for (w = 0; w < N_W; w++)
			block_topk(grad[w], in[w], topk[k].B, 0, topk[k].mass);
		snprintf(what, sizeof(what), "block top-k %.1f", topk[k].mass);
		check_wire(encoding, topk[k].B, 0, what);
	}
	for (k = 0; k < sizeof(cut) / sizeof(cut[0]); k++) {
		char what[64];

		for (w = 0; w < N_W; w++)
			block_topk(grad[w], in[w], cut[k].B, cut[k].B >> cut[k].sub_log,
				   cut[k].mass);
		snprintf(what, sizeof(what), "sub-block top-k %.1f", cut[k].mass);
		check_wire(encoding, cut[k].B, cut[k].sub_log, what);
	}
}

static void
test_wire_f32(void **state)
{
	(void)state;
	run_cases(INA_ENC_F32);
}

static void
test_wire_bf16(void **state)
{
	(void)state;
	run_cases(INA_ENC_BF16);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire_f32),
		cmocka_unit_test(test_wire_bf16),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
