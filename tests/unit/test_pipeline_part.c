/* SPDX-License-Identifier: MIT */
/*
 * The switch pipeline split into lane partitions (pipeline.h, part_index and
 * part_count), over the in-process fabric: the same traffic (four workers,
 * loss, duplicates, reordering, f32 and i32, dense and sparse rounds) through
 * one pipeline and through 2 and 3 partitions must give the same RESULT
 * packets byte for byte, the same sums and, added over the partitions, the
 * same counters. Also: per-partition slot reservation, the other_partition
 * drop, replicas that stay silent, and linger expiry decided by partition 0
 * and followed by the others.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fabric.h"
#include "ina/log.h"
#include "ina/wire.h"

#define WORLD 4
#define LANES 7
#define BLOCK 32
#define N 3000
#define ROUNDS 4

static float ins[WORLD][N], outs[4][WORLD][N];

/* Every RESULT the switch sent, header and payload, in order. */
struct tape {
	uint8_t *buf;
	size_t len, cap;
	uint64_t results;
};

static void
tap_result(void *arg, const struct ina_pkt *pkt)
{
	struct tape *t = arg;

	if (pkt->len < INA_HDR_SIZE || pkt->data[1] != INA_T_RESULT)
		return;
	if (t->len + pkt->len > t->cap) {
		t->cap = (t->len + pkt->len) * 2;
		t->buf = realloc(t->buf, t->cap);
		assert_non_null(t->buf);
	}
	memcpy(t->buf + t->len, pkt->data, pkt->len);
	t->len += pkt->len;
	t->results++;
}

static uint64_t
mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Round r: block-sparse with density 1, 0.3, 0.05, ...; arbitrary floats, so
 * that a different order of addition would show in the bits. */
static void
make_round(int r)
{
	static const double density[] = { 1.0, 0.3, 0.05, 0.6 };

	for (int w = 0; w < WORLD; w++)
		for (int i = 0; i < N; i++) {
			uint64_t hb = mix((uint64_t)r << 40 ^ (uint64_t)w << 32 ^
					  (uint64_t)(i / BLOCK));
			uint64_t hv = mix((uint64_t)r << 40 ^ (uint64_t)w << 32 ^ (uint64_t)i ^
					  1u << 31);

			ins[w][i] = (double)(hb >> 11) * 0x1.0p-53 < density[r % 4]
					    ? (float)((int64_t)(hv % 2000001) - 1000000) * 1.37e-4f
					    : 0.0f;
		}
}

static void
add_stats(struct pipeline_stats *sum, const struct pipeline_stats *s)
{
	uint64_t *a = (uint64_t *)(void *)sum;
	const uint64_t *b = (const uint64_t *)(const void *)s;

	for (size_t i = 0; i < sizeof(*s) / sizeof(uint64_t); i++)
		a[i] += b[i];
}

/*
 * One job of ROUNDS allreduces and a FIN through 'k' partitions, with the
 * given faults; fills 'tape', the counters summed over the partitions and
 * outs[k].
 */
static void
run_job(uint16_t k, uint8_t enc, const struct fabric_faults *faults, struct tape *tape,
	struct pipeline_stats *sum)
{
	static struct fabric f;
	float *in_p[WORLD], *out_p[WORLD];

	fabric_init(&f, WORLD, LANES, BLOCK, enc, NULL, NULL);
	if (k > 1)
		fabric_partition(&f, k, NULL);
	f.faults = *faults;
	f.tap = tap_result;
	f.tap_arg = tape;
	assert_int_equal(fabric_join(&f), 0);
	for (uint16_t p = 0; p < k; p++)
		assert_int_equal(pipeline_free_slots(f.parts[p]), 256 - (LANES + k - 1) / k);
	for (int r = 0; r < ROUNDS; r++) {
		make_round(r);
		for (int w = 0; w < WORLD; w++) {
			in_p[w] = ins[w];
			out_p[w] = outs[k][w];
		}
		assert_int_equal(fabric_allreduce(&f, (uint32_t)(10 + r), in_p, out_p, N, BLOCK,
						  ENGINE_SUM),
				 0);
	}
	assert_int_equal(fabric_finish(&f), 0);
	memset(sum, 0, sizeof(*sum));
	for (uint16_t p = 0; p < k; p++) {
		add_stats(sum, pipeline_stats(f.parts[p]));
		assert_int_equal(pipeline_nb_jobs(f.parts[p]), 0);
		assert_int_equal(pipeline_free_slots(f.parts[p]), 256);
	}
	assert_int_equal(sum->drop[PDROP_OTHER_PART], 0);
	fabric_fini(&f);
}

static void
same_as_one(uint8_t enc, const struct fabric_faults *faults)
{
	struct tape tapes[4];
	struct pipeline_stats st[4];

	memset(tapes, 0, sizeof(tapes));
	for (uint16_t k = 1; k <= 3; k++)
		run_job(k, enc, faults, &tapes[k], &st[k]);
	assert_true(tapes[1].results > (uint64_t)ROUNDS * N / BLOCK / 2);
	for (uint16_t k = 2; k <= 3; k++) {
		print_message("k=%u: %" PRIu64 " results, %zu bytes\n", k, tapes[k].results,
			      tapes[k].len);
		assert_int_equal(tapes[k].results, tapes[1].results);
		assert_int_equal(tapes[k].len, tapes[1].len);
		assert_memory_equal(tapes[k].buf, tapes[1].buf, tapes[1].len);
		assert_memory_equal(&st[k], &st[1], sizeof(st[1]));
		assert_memory_equal(outs[k], outs[1], sizeof(outs[1]));
	}
	for (int k = 1; k <= 3; k++)
		free(tapes[k].buf);
}

static void
test_same_f32_clean(void **state)
{
	struct fabric_faults ff = { .drop_seq = -1 };

	(void)state;
	same_as_one(INA_ENC_F32, &ff);
}

static void
test_same_f32_lossy(void **state)
{
	struct fabric_faults ff = { .drop_seq = -1,
				    .drop_rate = 0.03,
				    .dup_rate = 0.02,
				    .shuffle = 1,
				    .seed = 5 };

	(void)state;
	same_as_one(INA_ENC_F32, &ff);
}

static void
test_same_i32_lossy(void **state)
{
	struct fabric_faults ff = { .drop_seq = -1,
				    .drop_rate = 0.05,
				    .dup_rate = 0.01,
				    .delay_rate = 0.02,
				    .seed = 9 };

	(void)state;
	same_as_one(INA_ENC_I32, &ff);
}

static void
test_config(void **state)
{
	struct ina_pkt_pool *pool = ina_pkt_pool_create(4, 256);
	struct pipeline_config c;
	struct pipeline *p;

	(void)state;
	pipeline_config_init(&c);
	assert_int_equal(c.part_index, 0);
	assert_int_equal(c.part_count, 1);
	c.pool = pool;
	c.nb_slots = 8;
	c.slot_elems = 16;
	c.part_count = 0;
	assert_null(pipeline_create(&c));
	c.part_count = 2;
	c.part_index = 2;
	assert_null(pipeline_create(&c));
	c.part_index = 1;
	p = pipeline_create(&c);
	assert_non_null(p);
	pipeline_destroy(p);
	ina_pkt_pool_destroy(pool);
}

/* A header-only DATA of job 7 for 'lane' (its lane opener in f32). */
static struct ina_pkt *
data_pkt(struct fabric *f, uint16_t lane, uint32_t epoch)
{
	struct ina_pkt *pkt = ina_pkt_alloc(f->pool);
	struct ina_hdr h;

	assert_non_null(pkt);
	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = INA_T_DATA;
	h.encoding = INA_ENC_F32;
	h.job_id = 7;
	h.epoch = epoch;
	h.rank = 0;
	h.lane = lane;
	h.tensor_id = 1;
	h.tensor_len = 64 * LANES;
	h.block = lane;
	h.next = INA_BLOCK_END;
	h.block_size = 64;
	h.token = 0x1234567890abcdefull;
	ina_wire_encode_hdr(&h, pkt->data);
	pkt->len = INA_HDR_SIZE;
	fabric_peer(&pkt->peer, 0);
	return pkt;
}

static void
test_other_partition(void **state)
{
	static struct fabric f;
	struct ina_pkt *pkt, *out[1];
	uint32_t epoch;

	(void)state;
	fabric_init(&f, 2, LANES, 64, INA_ENC_F32, NULL, NULL);
	fabric_partition(&f, 2, NULL);
	assert_int_equal(fabric_join(&f), 0);
	epoch = engine_epoch(f.hosts[0]);
	assert_int_not_equal(epoch, 0);
	/* Replicas admitted the job quietly: same job, own slots, no counts. */
	for (int p = 0; p < 2; p++) {
		assert_int_equal(pipeline_nb_jobs(f.parts[p]), 1);
		assert_int_equal(pipeline_free_slots(f.parts[p]), 256 - 4);
	}
	assert_int_equal(pipeline_stats(f.parts[0])->jobs_admitted, 1);
	assert_int_equal(pipeline_stats(f.parts[0])->joins, 2);
	assert_int_equal(pipeline_stats(f.parts[1])->jobs_admitted, 0);
	assert_int_equal(pipeline_stats(f.parts[1])->joins, 0);
	assert_int_equal(pipeline_stats(f.parts[1])->rx_pkts, 0);

	/* Lane 3 is partition 1's: partition 0 drops it, partition 1 takes it. */
	pkt = data_pkt(&f, 3, epoch);
	assert_int_equal(pipeline_rx_burst(f.parts[0], &pkt, 1, f.now, out), 0);
	assert_int_equal(pipeline_stats(f.parts[0])->drop[PDROP_OTHER_PART], 1);
	assert_string_equal(pipeline_drop_name(PDROP_OTHER_PART), "other_partition");
	pkt = data_pkt(&f, 3, epoch);
	assert_int_equal(pipeline_rx_burst(f.parts[1], &pkt, 1, f.now, out), 0);
	assert_int_equal(pipeline_stats(f.parts[1])->drop[PDROP_OTHER_PART], 0);
	assert_int_equal(pipeline_stats(f.parts[1])->rx_pkts, 1);
	assert_int_equal(pipeline_stats(f.parts[1])->drop[PDROP_NO_MATCH] +
				 pipeline_stats(f.parts[1])->drop[PDROP_NOT_JOINED],
			 0);
	/* Lane 2 is partition 0's. */
	pkt = data_pkt(&f, 2, epoch);
	assert_int_equal(pipeline_rx_burst(f.parts[0], &pkt, 1, f.now, out), 0);
	assert_int_equal(pipeline_stats(f.parts[0])->drop[PDROP_OTHER_PART], 1);
	fabric_fini(&f);
}

/* Linger: partition 0 frees by time, the others follow, counted once. */
static void
test_linger_follows(void **state)
{
	static struct fabric f;
	struct pipeline_config pc;
	uint32_t freed[4];

	(void)state;
	pipeline_config_init(&pc);
	pc.nb_slots = 256;
	pc.slot_elems = 64;
	pc.linger_ns = 5000000;
	fabric_init(&f, 3, LANES, 64, INA_ENC_F32, &pc, NULL);
	fabric_partition(&f, 3, &pc);
	assert_int_equal(fabric_join(&f), 0);
	engine_finish(f.hosts[0], f.now);
	assert_int_equal(fabric_run(&f, ENGINE_FINISHING, 1000000000ull), 0);
	for (int p = 0; p < 3; p++)
		assert_int_equal(pipeline_nb_jobs(f.parts[p]), 1);
	/* A replica never expires on its own. */
	assert_int_equal(pipeline_tick_freed(f.parts[1], f.now + 10 * pc.linger_ns, freed, 4), 0);
	assert_int_equal(pipeline_nb_jobs(f.parts[1]), 1);
	assert_int_equal(pipeline_tick_freed(f.parts[0], f.now + 10 * pc.linger_ns, freed, 4), 1);
	assert_int_equal(freed[0], 7);
	assert_int_equal(pipeline_job_free(f.parts[1], 7), 1);
	assert_int_equal(pipeline_job_free(f.parts[2], 7), 1);
	assert_int_equal(pipeline_job_free(f.parts[2], 7), 0);
	for (int p = 0; p < 3; p++) {
		assert_int_equal(pipeline_nb_jobs(f.parts[p]), 0);
		assert_int_equal(pipeline_free_slots(f.parts[p]), 256);
	}
	assert_int_equal(pipeline_stats(f.parts[0])->jobs_freed, 1);
	assert_int_equal(pipeline_stats(f.parts[1])->jobs_freed, 0);
	assert_int_equal(pipeline_stats(f.parts[2])->jobs_freed, 0);
	fabric_fini(&f);
}

/* Admission refused alike everywhere when a partition's share does not fit. */
static void
test_no_slots(void **state)
{
	static struct fabric f;
	struct pipeline_config pc;

	(void)state;
	pipeline_config_init(&pc);
	pc.nb_slots = 3; /* 7 lanes need 4 per partition of 2 */
	pc.slot_elems = 64;
	fabric_init(&f, 2, LANES, 64, INA_ENC_F32, &pc, NULL);
	fabric_partition(&f, 2, &pc);
	assert_int_equal(fabric_join(&f), -1);
	for (int p = 0; p < 2; p++) {
		assert_int_equal(pipeline_nb_jobs(f.parts[p]), 0);
		assert_int_equal(pipeline_free_slots(f.parts[p]), 3);
	}
	assert_true(pipeline_stats(f.parts[0])->jobs_refused >= 1);
	assert_int_equal(pipeline_stats(f.parts[1])->jobs_refused, 0);
	fabric_fini(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),	       cmocka_unit_test(test_other_partition),
		cmocka_unit_test(test_linger_follows), cmocka_unit_test(test_no_slots),
		cmocka_unit_test(test_same_f32_clean), cmocka_unit_test(test_same_f32_lossy),
		cmocka_unit_test(test_same_i32_lossy),
	};

	ina_log_set_level(INA_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
