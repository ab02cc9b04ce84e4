/* SPDX-License-Identifier: MIT */
/*
 * Bounded staleness (ssp:S, docs/PROTOCOL.md 6.7). First the switch alone,
 * packet by packet: admission of S + 1 slots per lane and the JOIN mismatch,
 * the early close of a block that the newest round left S behind (PARTIAL,
 * the contributor bitmap after the payload, the fan-out), the late packet
 * answered and never added, the rule that no rank is left out twice in a
 * row, the hold on a half a rank may still need, and the drops. Then four
 * engines and the switch in process (test fabric), with a straggler, loss
 * and duplicates: the sum over the rounds of what the workers received plus
 * every worker's final residual equals the sum of every gradient, bit for
 * bit (dyadic values), every worker received the same bits, and no worker
 * ever sent a round more than S ahead of a block still open. Last, the C
 * API's per-tensor state (ssp_tensor.c): send = input + residual, missed
 * blocks back; and random packets to an ssp job: every result holds exactly
 * the parts of the ranks it names, and never changes once sent.
 */
#define _GNU_SOURCE /* memmem */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"
#include "fabric.h"
#include "ina/encode.h"
#include "ina/log.h"
#include "ina/pkt.h"
#include "ina/encoding.h"
#include "ina/subblock.h"
#include "ina/wire.h"
#include "pipeline.h"
#include "pipeline_dump.h"
#include "ssp_tensor.h"

#define JOB 9
#define TOKEN 0x5151515151515151ull
#define B 4

static struct ina_pkt_pool *pool;
static struct pipeline *sw;
static uint64_t now = 1000000;
static struct ina_peer peers[8];
static uint32_t epoch;
static uint32_t sw_max_pkt; /* the switch's packet size (0: not checked) */

static void
sw_init(void)
{
	struct pipeline_config cfg;

	pool = ina_pkt_pool_create(64, 1024);
	assert_non_null(pool);
	pipeline_config_init(&cfg);
	cfg.nb_slots = 32;
	cfg.slot_elems = 64;
	cfg.max_pkt = sw_max_pkt;
	cfg.pool = pool;
	sw = pipeline_create(&cfg);
	assert_non_null(sw);
	for (int i = 0; i < 8; i++) {
		memset(&peers[i], 0, sizeof(peers[i]));
		peers[i].len = 4;
		peers[i].bytes[0] = (uint8_t)(10 + i);
	}
}

static void
sw_fini(void)
{
	pipeline_destroy(sw);
	assert_int_equal(ina_pkt_pool_avail(pool), 64);
	ina_pkt_pool_destroy(pool);
}

/* Feeds one packet; returns the answer (or NULL), validated into 'h'. */
static struct ina_pkt *
feed(struct ina_pkt *in, struct ina_hdr *h)
{
	struct ina_pkt *out = NULL;

	if (pipeline_rx_burst(sw, &in, 1, now, &out) != 1)
		return NULL;
	assert_int_equal(ina_wire_validate(out->data, out->len, NULL, h), INA_WIRE_OK);
	return out;
}

static struct ina_pkt *
join(uint16_t rank, uint16_t world, uint16_t lanes, uint8_t enc, uint8_t ssp, struct ina_hdr *h)
{
	struct ina_pkt *p = ina_pkt_alloc(pool);
	struct ina_hdr j;

	memset(&j, 0, sizeof(j));
	j.version = INA_WIRE_VERSION;
	j.type = INA_T_JOIN;
	j.encoding = enc;
	j.job_id = JOB;
	j.token = TOKEN;
	j.rank = rank;
	ina_wire_encode_hdr(&j, p->data);
	ina_wire_encode_join(world, lanes, 64, p->data + INA_HDR_SIZE);
	ina_wire_join_set_ssp(p->data + INA_HDR_SIZE, ssp);
	p->len = INA_HDR_SIZE + sizeof(struct ina_wire_join);
	p->peer = peers[rank];
	return feed(p, h);
}

/* DATA of lane 'lane' (its one block of B elements, all 'v'), or empty. */
static struct ina_pkt *
data(uint16_t rank, uint16_t lane, uint32_t round, uint8_t ver, float v, uint16_t lanes,
     struct ina_hdr *h)
{
	struct ina_pkt *p = ina_pkt_alloc(pool);
	struct ina_hdr d;
	float x[B];

	memset(&d, 0, sizeof(d));
	d.version = INA_WIRE_VERSION;
	d.type = INA_T_DATA;
	d.encoding = INA_ENC_F32;
	d.flags = ver;
	d.job_id = JOB;
	d.epoch = epoch;
	d.token = TOKEN;
	d.rank = rank;
	d.lane = lane;
	d.tensor_id = 1;
	d.round = round;
	d.tensor_len = (uint32_t)lanes * B;
	d.block = lane;
	d.next = INA_BLOCK_END;
	d.block_size = B;
	d.n_elems = v != 0.0f ? B : 0;
	ina_wire_encode_hdr(&d, p->data);
	for (int i = 0; i < B; i++)
		x[i] = v;
	ina_enc_f32_put(p->data + INA_HDR_SIZE, x, d.n_elems);
	p->len = INA_HDR_SIZE + 4u * d.n_elems;
	p->peer = peers[rank];
	return feed(p, h);
}

/* The contributor bitmap of a PARTIAL result. */
static uint64_t
contributors(const struct ina_pkt *o, const struct ina_hdr *h)
{
	uint64_t be;

	assert_true(h->flags & INA_F_PARTIAL);
	memcpy(&be, o->data + INA_HDR_SIZE + 4u * h->n_elems, sizeof(be));
	return be64toh(be);
}

static float
first_elem(const struct ina_pkt *o)
{
	float x;

	ina_enc_f32_get(&x, o->data + INA_HDR_SIZE, 1);
	return x;
}

static void
join_both(uint8_t ssp, uint16_t lanes)
{
	struct ina_hdr h;
	struct ina_pkt *o;

	for (uint16_t r = 0; r < 2; r++) {
		o = join(r, 2, lanes, INA_ENC_F32, ssp, &h);
		assert_non_null(o);
		assert_int_equal(h.type, INA_T_JOIN_ACK);
		assert_int_equal(ina_wire_join_ssp(o->data + INA_HDR_SIZE), ssp);
		epoch = h.epoch;
		ina_pkt_free(o);
	}
}

/* Admission: lanes x (S + 2) slots; a rank that disagrees on the mode, or an
 * i32 ssp job, is refused. */
static void
test_ssp_admission(void **state)
{
	struct ina_hdr h;
	struct ina_pkt *o;

	(void)state;
	sw_init();
	join_both(2, 3);
	assert_int_equal(pipeline_free_slots(sw), 32 - 3 * INA_SSP_SETS(2));
	o = join(1, 2, 3, INA_ENC_F32, 1, &h);
	assert_int_equal(h.type, INA_T_ERROR);
	assert_int_equal(h.status, INA_WERR_MISMATCH);
	ina_pkt_free(o);
	o = join(1, 2, 3, INA_ENC_F32, 0, &h);
	assert_int_equal(h.status, INA_WERR_MISMATCH);
	ina_pkt_free(o);
	sw_fini();

	sw_init();
	o = join(0, 2, 3, INA_ENC_I32, 1, &h);
	assert_int_equal(h.type, INA_T_ERROR);
	assert_int_equal(h.status, INA_WERR_UNSUPPORTED);
	ina_pkt_free(o);
	/* bsp as before: one slot per lane. */
	join_both(0, 3);
	assert_int_equal(pipeline_free_slots(sw), 32 - 3);
	sw_fini();

	/* Blocks that fill the switch's packets: bsp is admitted, ssp refused
	 * at its JOIN (a RESULT carries the 8-byte contributor trailer), not
	 * at its first DATA. */
	sw_max_pkt = INA_HDR_SIZE + 64 * 4;
	sw_init();
	o = join(0, 2, 3, INA_ENC_F32, 1, &h);
	assert_int_equal(h.type, INA_T_ERROR);
	assert_int_equal(h.status, INA_WERR_UNSUPPORTED);
	assert_non_null(memmem(o->data, o->len, "with its ssp trailer", 20));
	ina_pkt_free(o);
	assert_int_equal(pipeline_nb_jobs(sw), 0);
	join_both(0, 3);
	sw_fini();
	sw_max_pkt = 0;
}

/*
 * ssp:1, two ranks, one lane. Round 0 completes (no PARTIAL). Rank 0 runs
 * ahead: its round 2 closes round 1 without rank 1 (PARTIAL, bitmap {0}, to
 * both ranks); rank 1's late round 1 is answered alone with the same result
 * and not added. Rank 1 missed round 1, so rank 0's round 3 cannot close
 * round 2 without it: round 2 completes when rank 1 sends it.
 */
static void
test_ssp_early_close(void **state)
{
	struct ina_hdr h;
	struct ina_pkt *o;

	(void)state;
	sw_init();
	join_both(1, 1);
	assert_null(data(0, 0, 0, 0, 1.0f, 1, &h));
	o = data(1, 0, 0, 0, 2.0f, 1, &h);
	assert_non_null(o);
	assert_int_equal(h.type, INA_T_RESULT);
	assert_false(h.flags & INA_F_PARTIAL);
	assert_true(first_elem(o) == 3.0f);
	assert_int_equal(o->dst_mask, 3);
	ina_pkt_free(o);

	/* Round 1 (set 1, version 0) from rank 0 only. */
	assert_null(data(0, 0, 1, 0, 4.0f, 1, &h));
	/* Round 2 (set 2, version 0) from rank 0: round 1 closes early. */
	o = data(0, 0, 2, 0, 8.0f, 1, &h);
	assert_non_null(o);
	assert_int_equal(h.type, INA_T_RESULT);
	assert_int_equal(h.round, 1);
	assert_int_equal(h.flags & INA_F_VER, 0);
	assert_int_equal(h.n_elems, B);
	assert_int_equal(o->len, INA_HDR_SIZE + 4 * B + INA_PARTIAL_TRAILER);
	assert_int_equal(contributors(o, &h), 1);
	assert_true(first_elem(o) == 4.0f);
	assert_int_equal(o->dst_mask, 3);
	ina_pkt_free(o);
	assert_int_equal(pipeline_stats(sw)->results_partial, 1);

	/* Rank 1's round 1, late: answered to it alone, the sum unchanged. */
	o = data(1, 0, 1, 0, 16.0f, 1, &h);
	assert_non_null(o);
	assert_int_equal(h.round, 1);
	assert_null(o->dsts);
	assert_int_equal(contributors(o, &h), 1);
	assert_true(first_elem(o) == 4.0f);
	ina_pkt_free(o);
	assert_int_equal(pipeline_stats(sw)->ssp_late, 1);
	/* Again (its answer lost): the same bits. */
	o = data(1, 0, 1, 0, 16.0f, 1, &h);
	assert_true(first_elem(o) == 4.0f);
	ina_pkt_free(o);

	/* Round 3 (set 0, version 1) from rank 0: round 2 lacks rank 1, which
	 * missed round 1, so it stays open. A resend of round 3 neither. */
	assert_null(data(0, 0, 3, 1, 32.0f, 1, &h));
	o = data(0, 0, 3, 1, 32.0f, 1, &h);
	if (o) {
		assert_int_equal(h.type, INA_T_WAIT);
		ina_pkt_free(o);
	}
	assert_int_equal(pipeline_stats(sw)->results_partial, 1);
	/* Rank 1's round 2: complete, no PARTIAL. */
	o = data(1, 0, 2, 0, 64.0f, 1, &h);
	assert_non_null(o);
	assert_int_equal(h.round, 2);
	assert_false(h.flags & INA_F_PARTIAL);
	assert_true(first_elem(o) == 72.0f);
	ina_pkt_free(o);
	/* Rank 0's round 4 (set 1, version 1) closes round 3: rank 1 was in
	 * round 2. */
	o = data(0, 0, 4, 1, 1.0f, 1, &h);
	assert_non_null(o);
	assert_int_equal(h.round, 3);
	assert_int_equal(contributors(o, &h), 1);
	assert_true(first_elem(o) == 32.0f);
	ina_pkt_free(o);
	assert_int_equal(pipeline_stats(sw)->drop[PDROP_SSP_AHEAD], 0);
	sw_fini();
}

/* DATA of lane 0 (one lane, its block of B elements) cut into B sub-blocks
 * of one element: the elements of 'x' that 'mask' names (bit i element i). */
static struct ina_pkt *
sub_data(uint16_t rank, uint32_t round, uint8_t ver, const float *x, uint64_t mask,
	 struct ina_hdr *h)
{
	struct ina_pkt *p = ina_pkt_alloc(pool);
	struct ina_sub_mask m = { { mask, 0 } };
	struct ina_sub_cut c = ina_sub_cut(B, 2, B);
	struct ina_hdr d;

	memset(&d, 0, sizeof(d));
	d.version = INA_WIRE_VERSION;
	d.type = INA_T_DATA;
	d.encoding = INA_ENC_F32;
	d.flags = ver;
	d.job_id = JOB;
	d.epoch = epoch;
	d.token = TOKEN;
	d.rank = rank;
	d.round = round;
	d.tensor_id = 1;
	d.tensor_len = B;
	d.block = 0;
	d.next = INA_BLOCK_END;
	d.block_size = B;
	d.sub_log = 2;
	d.n_elems = B;
	ina_wire_encode_hdr(&d, p->data);
	p->len = INA_HDR_SIZE + (uint32_t)ina_sub_encode(p->data + INA_HDR_SIZE, x, &m, &c,
							 ina_encoding(INA_ENC_F32), 0);
	p->peer = peers[rank];
	return feed(p, h);
}

/* The mask (low word) and the values of a masked result's payload. */
static uint64_t
sub_result(const struct ina_pkt *o, float *vals)
{
	struct ina_sub_cut c = ina_sub_cut(B, 2, B);
	struct ina_sub_mask m = ina_sub_decode(vals, o->data + INA_HDR_SIZE, &c,
					       ina_encoding(INA_ENC_F32), 0, 1);

	return m.w[0];
}

/*
 * Sub-blocks under ssp:1: a complete result carries the union's mask and
 * sums; a block closed early carries its contributors' union and the PARTIAL
 * trailer right after the masked payload; the late rank's DATA is answered
 * from it, never added.
 */
static void
test_ssp_sub_blocks(void **state)
{
	const float a[B] = { 1, 0, 2, 0 }, b[B] = { 0, 0, 3, 0 }, c[B] = { 0, 4, 0, 0 },
		    d[B] = { 9, 0, 0, 8 };
	struct ina_hdr h;
	struct ina_pkt *o;
	float v[B];
	uint64_t be;

	(void)state;
	sw_init();
	join_both(1, 1);
	assert_null(sub_data(0, 0, 0, a, 0x5, &h));
	o = sub_data(1, 0, 0, b, 0x4, &h);
	assert_non_null(o);
	assert_int_equal(h.type, INA_T_RESULT);
	assert_int_equal(h.sub_log, 2);
	assert_false(h.flags & INA_F_PARTIAL);
	assert_int_equal(o->len, INA_HDR_SIZE + 4 + 2 * 4);
	assert_true(sub_result(o, v) == 0x5);
	assert_true(v[0] == 1.0f && v[1] == 0.0f && v[2] == 5.0f && v[3] == 0.0f);
	ina_pkt_free(o);

	/* Round 1 from rank 0 only, closed by its round 2. */
	assert_null(sub_data(0, 1, 0, c, 0x2, &h));
	o = sub_data(0, 2, 0, d, 0x9, &h);
	assert_non_null(o);
	assert_int_equal(h.round, 1);
	assert_true(h.flags & INA_F_PARTIAL);
	assert_int_equal(o->len, INA_HDR_SIZE + 4 + 4 + INA_PARTIAL_TRAILER);
	assert_true(sub_result(o, v) == 0x2);
	assert_true(v[1] == 4.0f && v[0] == 0.0f);
	memcpy(&be, o->data + INA_HDR_SIZE + 4 + 4, sizeof(be));
	assert_int_equal(be64toh(be), 1);
	assert_int_equal(o->dst_mask, 3);
	ina_pkt_free(o);
	/* Rank 1's round 1, late, with other sub-blocks: the kept result. */
	o = sub_data(1, 1, 0, d, 0x9, &h);
	assert_non_null(o);
	assert_null(o->dsts);
	assert_true(h.flags & INA_F_PARTIAL);
	assert_true(sub_result(o, v) == 0x2);
	assert_true(v[1] == 4.0f && v[0] == 0.0f && v[3] == 0.0f);
	ina_pkt_free(o);
	assert_int_equal(pipeline_stats(sw)->ssp_late, 1);
	/* Round 2 by rank 1: the union of both ranks' sub-blocks. */
	o = sub_data(1, 2, 0, a, 0x5, &h);
	assert_non_null(o);
	assert_int_equal(h.round, 2);
	assert_false(h.flags & INA_F_PARTIAL);
	assert_true(sub_result(o, v) == 0xd);
	assert_true(v[0] == 10.0f && v[2] == 2.0f && v[3] == 8.0f && v[1] == 0.0f);
	ina_pkt_free(o);
	sw_fini();
}

/*
 * The hold and the drops. A round that would reuse a half whose result some
 * rank is not known to hold (it sent no later round there) is dropped and
 * counted (ssp_hold): that rank must still find its result. A round too far
 * ahead of a block still open in its set is dropped (ssp_ahead), and so is a
 * block that is not its lane's only one (ssp_shape).
 */
static void
test_ssp_hold_and_drops(void **state)
{
	struct ina_hdr h;
	struct ina_pkt *o;

	(void)state;
	sw_init();
	join_both(1, 1);
	/* Rounds 0, 1, 2 complete (sets 0, 1, 2; versions then 1). */
	for (uint32_t r = 0; r < 3; r++) {
		assert_null(data(0, 0, r, 0, 1.0f, 1, &h));
		o = data(1, 0, r, 0, 1.0f, 1, &h);
		assert_non_null(o);
		ina_pkt_free(o);
	}
	/* Round 3 (set 0) from rank 0; its round 4 closes it (rank 1 was in
	 * round 2). */
	assert_null(data(0, 0, 3, 1, 2.0f, 1, &h));
	o = data(0, 0, 4, 1, 2.0f, 1, &h);
	assert_non_null(o);
	assert_int_equal(h.round, 3);
	ina_pkt_free(o);
	/* Round 6 (set 0 again) would overwrite round 0, which rank 1 has not
	 * acknowledged (no later round from it in set 0): held. */
	assert_null(data(0, 0, 6, 0, 2.0f, 1, &h));
	assert_int_equal(pipeline_stats(sw)->drop[PDROP_SSP_HOLD], 1);
	/* Rank 1's round 3, late: answered, and it acknowledges round 0. */
	o = data(1, 0, 3, 1, 5.0f, 1, &h);
	assert_non_null(o);
	assert_int_equal(contributors(o, &h), 1);
	ina_pkt_free(o);
	assert_null(data(0, 0, 6, 0, 2.0f, 1, &h));
	assert_int_equal(pipeline_stats(sw)->drop[PDROP_SSP_HOLD], 1);
	/* Round 9 (set 0) while round 6 is open there: past the bound. */
	assert_null(data(0, 0, 9, 0, 2.0f, 1, &h));
	assert_int_equal(pipeline_stats(sw)->drop[PDROP_SSP_AHEAD], 1);
	sw_fini();

	/* Two blocks in one lane: not an ssp round. */
	sw_init();
	join_both(1, 1);
	{
		struct ina_pkt *p = ina_pkt_alloc(pool);
		struct ina_hdr d;

		memset(&d, 0, sizeof(d));
		d.version = INA_WIRE_VERSION;
		d.type = INA_T_DATA;
		d.encoding = INA_ENC_F32;
		d.job_id = JOB;
		d.epoch = epoch;
		d.token = TOKEN;
		d.tensor_id = 1;
		d.tensor_len = 2 * B;
		d.block = 0;
		d.next = 1;
		d.block_size = B;
		ina_wire_encode_hdr(&d, p->data);
		p->len = INA_HDR_SIZE;
		p->peer = peers[0];
		assert_null(feed(p, &h));
		assert_int_equal(pipeline_stats(sw)->drop[PDROP_SSP_SHAPE], 1);
	}
	sw_fini();
}

/* ---- Four engines and the switch in process ---- */

#define W 4
#define L 8
#define N (L * B) /* one block per lane */
#define ROUNDS 40
#define SETS_MAX 4
#define COMPUTE_NS 100000ull /* a normal round's compute */

struct worker {
	float in[SETS_MAX][N]; /* what each round in flight sent (grad + residual) */
	float out[SETS_MAX][N];
	uint8_t missed[SETS_MAX][L];
	float residual[N];
	uint32_t next;	    /* next round to start */
	uint32_t processed; /* next round whose result to take */
	uint64_t ready_ns;  /* its next gradient is computed */
};

static struct worker wk[W];
static float first_out[ROUNDS][N]; /* each round's result as the first worker took it */
static uint8_t have_out[ROUNDS];
static double grad_sum[N];
/* (lane, round) closed at the switch: a RESULT of it went out. */
static uint8_t closed[L][ROUNDS + 8];
static uint8_t cur_s;
static uint64_t bound_checks;

static uint64_t
mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Dyadic gradients, k 2^-6 with |k| <= 127: every sum here is exact. A
 * quarter of the blocks are zero (empty packets). */
static float
grad(int w, uint32_t round, int i)
{
	uint64_t hb = mix((uint64_t)round << 32 ^ (uint64_t)w << 16 ^ (uint64_t)(i / B) ^ 0xb10c);
	uint64_t hv = mix((uint64_t)round << 32 ^ (uint64_t)w << 16 ^ (uint64_t)i);

	if (hb % 4 == 0)
		return 0.0f;
	return (float)((int)(hv % 255) - 127) * 0x1p-6f;
}

static void
tap_out(void *arg, const struct ina_pkt *pkt)
{
	struct ina_hdr h;

	(void)arg;
	if (pkt->len < INA_HDR_SIZE || pkt->data[1] != INA_T_RESULT)
		return;
	ina_wire_decode_hdr(pkt->data, &h);
	if (h.lane < L && h.round < ROUNDS + 8)
		closed[h.lane][h.round] = 1;
}

/* The bound: no DATA of round k reaches the switch while a block of its lane
 * of a round k - S - 1 or earlier is still open. */
static void
tap_in(void *arg, const struct ina_pkt *pkt)
{
	struct ina_hdr h;

	(void)arg;
	if (pkt->len < INA_HDR_SIZE || pkt->data[1] != INA_T_DATA)
		return;
	ina_wire_decode_hdr(pkt->data, &h);
	assert_true(h.lane < L && h.round < ROUNDS);
	for (uint32_t q = 0; q + cur_s + 1 <= h.round; q++)
		assert_true(closed[h.lane][q]);
	bound_checks++;
}

/* Takes worker w's finished rounds in order: a block it missed (or that came
 * back deferred) goes back to its residual, exactly what it sent. */
static void
take_results(struct fabric *f, int w)
{
	struct worker *x = &wk[w];

	while (x->processed < x->next && !engine_in_flight(f->hosts[w], x->processed)) {
		uint32_t k = x->processed % (cur_s + 1u);

		assert_int_equal(engine_error(f->hosts[w]), 0);
		for (int b = 0; b < L; b++)
			if (x->missed[k][b])
				for (int i = b * B; i < (b + 1) * B; i++)
					x->residual[i] += x->in[k][i];
		if (!have_out[x->processed]) {
			memcpy(first_out[x->processed], x->out[k], sizeof(x->out[k]));
			have_out[x->processed] = 1;
		} else {
			assert_memory_equal(first_out[x->processed], x->out[k], sizeof(x->out[k]));
		}
		x->processed++;
	}
}

/* Worker w as a training loop over ina_allreduce() under ssp:S sees it:
 * compute, start round k, wait for round k - S, compute the next. */
static void
worker_step(struct fabric *f, int w, uint64_t *rng, uint32_t straggle_round)
{
	struct worker *x = &wk[w];
	uint32_t k = x->next % (cur_s + 1u);
	uint64_t compute = COMPUTE_NS;

	take_results(f, w);
	if (x->next >= ROUNDS || f->now < x->ready_ns)
		return;
	/* ina_allreduce(k) returned once round k - S was in: else wait. */
	if (x->next > cur_s && x->processed < x->next - cur_s)
		return;
	for (int i = 0; i < N; i++) {
		float g = grad(w, x->next, i);

		x->in[k][i] = g + x->residual[i];
		x->residual[i] = 0.0f;
		grad_sum[i] += g;
	}
	if (cur_s)
		engine_set_missed(f->hosts[w], x->missed[k]);
	else
		memset(x->missed[k], 0, sizeof(x->missed[k]));
	assert_int_equal(engine_allreduce(f->hosts[w], 1, x->in[k], x->out[k], N, B, ENGINE_SUM,
					  f->now),
			 0);
	x->next++;
	/* Transient stragglers: now and then a random worker computes three
	 * times as long; and one long stall so that blocks surely close early. */
	*rng = mix(*rng);
	if (*rng % 100 < 15 && (int)((*rng >> 32) % W) == w)
		compute *= 3;
	if (w == W - 1 && x->next == straggle_round)
		compute *= 12;
	x->ready_ns = f->now + compute;
}

static void
run_ssp(uint8_t s, double drop_rate, uint64_t seed, struct pipeline_stats *st, uint16_t parts)
{
	static struct fabric f;
	struct engine_config ec;
	uint64_t rng = seed, limit;
	int done = 0;

	memset(wk, 0, sizeof(wk));
	memset(closed, 0, sizeof(closed));
	memset(have_out, 0, sizeof(have_out));
	memset(grad_sum, 0, sizeof(grad_sum));
	cur_s = s;
	engine_config_init(&ec);
	ec.ssp = s;
	fabric_init(&f, W, L, B, INA_ENC_F32, NULL, &ec);
	if (parts > 1)
		fabric_partition(&f, parts, NULL);
	f.faults.drop_rate = drop_rate;
	f.faults.dup_rate = drop_rate / 2;
	f.faults.delay_rate = drop_rate;
	f.faults.shuffle = drop_rate > 0;
	f.faults.seed = seed;
	f.rng = seed | 1;
	f.tap = tap_out;
	f.tap_in = tap_in;
	assert_int_equal(fabric_join(&f), 0);
	limit = f.now + 120ull * 1000000000ull;
	do {
		uint64_t d = UINT64_MAX;

		for (int w = 0; w < W; w++)
			worker_step(&f, w, &rng, 12);
		if (fabric_step(&f)) {
			f.now += 2000;
			continue;
		}
		done = 1;
		for (int w = 0; w < W; w++) {
			uint64_t x = engine_next_deadline(f.hosts[w]);

			if (engine_error(f.hosts[w])) {
				for (int v = 0; v < W; v++)
					fprintf(stderr,
						"w%d next %u processed %u ready %llu now %llu inflight %u\n",
						v, wk[v].next, wk[v].processed,
						(unsigned long long)wk[v].ready_ns,
						(unsigned long long)f.now,
						engine_nb_in_flight(f.hosts[v]));
				pipeline_dump(f.sw, stderr);
				pipeline_stats_print(f.sw, stderr);
			}
			if (engine_error(f.hosts[w]))
				fail_msg("ssp:%u loss %.2f: rank %d: %s", s, drop_rate, w,
					 engine_error_msg(f.hosts[w]));
			take_results(&f, w);
			if (wk[w].processed < ROUNDS)
				done = 0;
			if (wk[w].next < ROUNDS && wk[w].ready_ns > f.now && wk[w].ready_ns < d)
				d = wk[w].ready_ns;
			if (x < d)
				d = x;
		}
		f.now = d != UINT64_MAX && d > f.now ? d : f.now + 2000;
	} while (!done && f.now < limit);
	assert_true(done);
	/* Sum over rounds of what every worker received, plus every residual:
	 * the sum of every gradient, bit for bit. */
	for (int i = 0; i < N; i++) {
		double got = 0.0;

		for (int r = 0; r < ROUNDS; r++)
			got += first_out[r][i];
		for (int w = 0; w < W; w++)
			got += wk[w].residual[i];
		if (got != grad_sum[i])
			fail_msg("ssp:%u loss %.2f: element %d: received + residuals %.9g, "
				 "gradients %.9g",
				 s, drop_rate, i, got, grad_sum[i]);
	}
	*st = *pipeline_stats(f.sw);
	for (uint16_t k = 1; k < f.nb_parts; k++)
		pipeline_stats_add(st, pipeline_stats(f.parts[k]));
	if (getenv("SSP_DEBUG"))
		fprintf(stderr,
			"ssp:%u loss %.2f: t %.3f ms partial %llu late %llu hold %llu dup %llu rx %llu\n",
			s, drop_rate, (double)(f.now - 1000000) / 1e6,
			(unsigned long long)st->results_partial, (unsigned long long)st->ssp_late,
			(unsigned long long)st->drop[PDROP_SSP_HOLD],
			(unsigned long long)st->duplicates, (unsigned long long)st->rx_pkts);
	assert_int_equal(st->drop[PDROP_SSP_AHEAD], 0);
	/* Without loss every rank's packet of every round reaches the switch,
	 * which acknowledges what a set's next round overwrites: no hold. */
	if (drop_rate == 0)
		assert_int_equal(st->drop[PDROP_SSP_HOLD], 0);
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
}

/* Nothing lost, nothing counted twice, with a straggler, with and without
 * loss; bsp (S = 0) through the same loop closes nothing early. */
static void
test_ssp_conservation(void **state)
{
	struct pipeline_stats st;

	(void)state;
	run_ssp(0, 0.0, 11, &st, 1);
	assert_int_equal(st.results_partial, 0);
	for (uint8_t s = 1; s <= 2; s++) {
		run_ssp(s, 0.0, 21 + s, &st, 1);
		assert_true(st.results_partial > 0);
		assert_true(st.ssp_late > 0);
		run_ssp(s, 0.05, 31 + s, &st, 1);
		assert_true(st.results_partial > 0);
		assert_true(bound_checks > 0);
	}
	/* A switch split over 3 lane partitions (as over lcores): the same. */
	run_ssp(1, 0.05, 41, &st, 3);
	assert_true(st.results_partial > 0);
	assert_int_equal(st.drop[PDROP_OTHER_PART], 0);
}

/* The C API's tensor state: a round sends input + residual (the residual
 * then 0), S + 1 rounds at most, and a flagged block goes back whole. */
static void
test_ssp_tensor(void **state)
{
	struct ssp_tensor *t = ssp_tensor_create(3, 10, 4, 1); /* blocks 4, 4, 2 */
	float in[10];
	const float *send[3];
	uint8_t *missed[3];
	int slot[3];

	(void)state;
	assert_non_null(t);
	assert_null(ssp_tensor_create(3, 10, 4, 0));
	for (int i = 0; i < 10; i++)
		in[i] = (float)(i + 1);
	slot[0] = ssp_tensor_begin(t, in, &send[0], &missed[0]);
	slot[1] = ssp_tensor_begin(t, in, &send[1], &missed[1]);
	assert_true(slot[0] >= 0 && slot[1] >= 0 && slot[0] != slot[1]);
	assert_int_equal(ssp_tensor_begin(t, in, &send[2], &missed[2]), -EBUSY);
	/* Round 0 missed blocks 0 and 2: 1..4 and 9..10 go back. */
	missed[0][0] = 1;
	missed[0][2] = 1;
	ssp_tensor_end(t, slot[0]);
	for (int i = 0; i < 10; i++)
		assert_true(ssp_tensor_residual(t)[i] == (i < 4 || i >= 8 ? (float)(i + 1) : 0.0f));
	/* The next round sends them again, added to its input. */
	slot[2] = ssp_tensor_begin(t, in, &send[2], &missed[2]);
	assert_int_equal(slot[2], slot[0]);
	for (int i = 0; i < 10; i++) {
		assert_true(send[2][i] == (float)(i + 1) * (i < 4 || i >= 8 ? 2.0f : 1.0f));
		assert_true(ssp_tensor_residual(t)[i] == 0.0f);
		assert_int_equal(missed[2][i / 4], 0);
	}
	ssp_tensor_end(t, slot[1]);
	ssp_tensor_end(t, slot[2]);
	ssp_tensor_destroy(t);
}

/*
 * Random packets (any rank, lane, version bit, a round among the newest
 * few, as a buggy or hostile sender would send them) to an ssp:S job of
 * three ranks: every result the switch sends holds exactly the
 * contributions of the ranks it names (all ranks when not PARTIAL), each
 * block's result never changes once sent, and no buffer leaks.
 */
static float
rnd_value(uint16_t rank, uint32_t round, uint16_t lane)
{
	if ((rank + round + lane) % 5 == 0)
		return 0.0f; /* an empty packet */
	return (float)(rank + 1) * (float)(1u << (round % 4)) * (float)(lane + 1) * 0.125f;
}

static void
test_ssp_random(void **state)
{
	static uint8_t first[2][256][INA_HDR_SIZE + 4 * B + INA_PARTIAL_TRAILER];
	static uint32_t first_len[2][256];
	uint64_t rng = 0x1234567;

	(void)state;
	for (uint8_t sv = 1; sv <= 2; sv++) {
		uint64_t results = 0;

		memset(first_len, 0, sizeof(first_len));
		sw_init();
		for (uint16_t r = 0; r < 3; r++) {
			struct ina_hdr h;
			struct ina_pkt *o = join(r, 3, 2, INA_ENC_F32, sv, &h);

			assert_int_equal(h.type, INA_T_JOIN_ACK);
			epoch = h.epoch;
			ina_pkt_free(o);
		}
		for (uint32_t i = 0; i < 30000; i++) {
			uint32_t base = i / 150, round;
			uint16_t rank, lane;
			uint8_t ver;
			struct ina_hdr h;
			struct ina_pkt *o;

			rng = mix(rng);
			rank = (uint16_t)(rng % 3);
			lane = (uint16_t)((rng >> 8) % 2);
			ver = (uint8_t)((rng >> 16) & 1);
			round = base + (uint32_t)((rng >> 24) % 6);
			now += 1000;
			o = data(rank, lane, round, ver, rnd_value(rank, round, lane), 2, &h);
			if (!o)
				continue;
			if (h.type == INA_T_RESULT) {
				uint64_t who = (h.flags & INA_F_PARTIAL) ? contributors(o, &h) : 7;
				float want = 0.0f, got = h.n_elems ? first_elem(o) : 0.0f;

				for (uint16_t r = 0; r < 3; r++)
					if (who >> r & 1)
						want += rnd_value(r, h.round, h.lane);
				assert_true(got == want);
				assert_true(h.round < 256);
				if (!first_len[h.lane][h.round]) {
					first_len[h.lane][h.round] = o->len;
					memcpy(first[h.lane][h.round], o->data, o->len);
				} else {
					assert_int_equal(first_len[h.lane][h.round], o->len);
					assert_memory_equal(first[h.lane][h.round], o->data,
							    o->len);
				}
				results++;
			}
			ina_pkt_free(o);
		}
		assert_true(results > 100);
		assert_true(pipeline_stats(sw)->results_partial > 0);
		sw_fini();
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ssp_admission),	 cmocka_unit_test(test_ssp_early_close),
		cmocka_unit_test(test_ssp_sub_blocks),	 cmocka_unit_test(test_ssp_hold_and_drops),
		cmocka_unit_test(test_ssp_conservation), cmocka_unit_test(test_ssp_tensor),
		cmocka_unit_test(test_ssp_random),
	};

	ina_log_set_level(INA_LOG_ERR);
	return cmocka_run_group_tests_name("ssp", tests, NULL, NULL);
}
