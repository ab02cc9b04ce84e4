/* SPDX-License-Identifier: MIT */
/*
 * Host engines and the switch pipeline together, in process, over the test
 * fabric: exact sums for f32 and i32, sparse and dense tensors, in place,
 * averages; a sweep that drops every packet of a small job in turn (JOIN, its
 * answer, each data packet, each result, the last result of a lane and of the
 * job, FIN) and must finish right every time; random loss, duplication and
 * reordering; and the errors a worker must get instead of a hang. The same
 * with blocks cut into sub-blocks (half of them zero): the sums of the uncut
 * rounds bit for bit (bf16: the same bits as uncut), in every encoding,
 * under the drop sweep and random faults, in place and averaged, in fewer
 * bytes.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fabric.h"
#include "ina.h"
#include "ina/encode.h"
#include "ina/log.h"

#define MAXN 4096

static float ins[FABRIC_MAX_HOSTS][MAXN], outs[FABRIC_MAX_HOSTS][MAXN];
static float *in_p[FABRIC_MAX_HOSTS], *out_p[FABRIC_MAX_HOSTS];
/* The rounds' cut (fabric.sub_log) and, when set, the sub-block size whose
 * sub-blocks make_data() zeroes at random. */
static uint8_t cut;
static uint16_t sub_zero;

static uint64_t
hash(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Block-sparse data with exactly summable values k * 2^-10. */
static void
make_data(uint16_t world, uint32_t n, uint16_t block, double density, uint64_t seed)
{
	for (uint16_t r = 0; r < world; r++) {
		for (uint32_t b = 0; b * block < n; b++) {
			int on = (double)(hash(seed ^ (r * 1000003ull) ^ (b * 7919ull)) >> 11) *
					 0x1.0p-53 <
				 density;

			for (uint32_t i = b * block; i < n && i < (b + 1) * block; i++) {
				int k = (int)(hash(seed * 31 + r * 65537ull + i) % 2047) - 1023;
				int sub_on = !sub_zero ||
					     hash(seed ^ r * 977ull ^ (i / sub_zero) * 131ull) & 1;

				ins[r][i] = on && sub_on ? (float)(k ? k : 1) / 1024.0f : 0.0f;
			}
		}
		in_p[r] = ins[r];
		out_p[r] = outs[r];
		memset(outs[r], 0x7f, sizeof(outs[r])); /* garbage the sum must replace */
	}
}

static void
check_sum(uint16_t world, uint32_t n, int average)
{
	for (uint32_t i = 0; i < n; i++) {
		float want = 0;

		for (uint16_t r = 0; r < world; r++)
			want += ins[r][i];
		if (average)
			want *= 1.0f / (float)world;
		for (uint16_t r = 0; r < world; r++) {
			if (memcmp(&outs[r][i], &want, sizeof(float)) != 0)
				fail_msg("rank %u element %u: got %.9g want %.9g", r, i,
					 (double)outs[r][i], (double)want);
		}
	}
}

/*
 * bf16: k 2^-10 with |k| up to 1023 needs up to 10 significand bits, bf16
 * has 8, so sums are checked against ina_enc_bf16_bound of a binary64
 * reference, and every rank must hold the same bits. Returns the largest
 * error / bound.
 */
static double
check_sum_bf16(uint16_t world, uint32_t n, int average)
{
	double worst = 0;

	for (uint32_t i = 0; i < n; i++) {
		double ref = 0, sum_abs = 0, bound, err;

		for (uint16_t r = 0; r < world; r++) {
			ref += ins[r][i];
			sum_abs += fabs((double)ins[r][i]);
		}
		if (average)
			ref /= world;
		bound = ina_enc_bf16_bound(world, sum_abs, fabs(ref), average);
		err = fabs((double)outs[0][i] - ref);
		if (!(err <= bound))
			fail_msg("element %u: got %.9g want %.9g, error %.3g above the bf16 "
				 "bound %.3g",
				 i, (double)outs[0][i], ref, err, bound);
		if (bound > 0 && err / bound > worst)
			worst = err / bound;
		for (uint16_t r = 1; r < world; r++)
			assert_memory_equal(&outs[r][i], &outs[0][i], sizeof(float));
	}
	return worst;
}

static void
run_job(uint16_t world, uint16_t lanes, uint16_t block, uint8_t enc, uint32_t n, double density,
	int rounds, const struct fabric_faults *faults, uint64_t *nb_pkts)
{
	struct fabric f;

	fabric_init(&f, world, lanes, block, enc, NULL, NULL);
	f.sub_log = cut;
	if (faults) {
		f.faults = *faults;
		f.rng = faults->seed | 1;
	}
	assert_int_equal(fabric_join(&f), 0);
	for (int k = 0; k < rounds; k++) {
		make_data(world, n, block, density, (uint64_t)k + 11);
		assert_int_equal(fabric_allreduce(&f, 3, in_p, out_p, n, block, ENGINE_SUM), 0);
		if (enc == INA_ENC_BF16)
			check_sum_bf16(world, n, 0);
		else
			check_sum(world, n, 0);
	}
	assert_int_equal(fabric_finish(&f), 0);
	assert_int_equal(pipeline_nb_jobs(f.sw), 0);
	if (nb_pkts)
		*nb_pkts = f.seq;
	fabric_fini(&f);
}

static void
test_fabric_exact_f32(void **state)
{
	(void)state;
	run_job(4, 4, 16, INA_ENC_F32, 1000, 0.5, 3, NULL, NULL);
	run_job(4, 8, 64, INA_ENC_F32, 4096, 1.0, 2, NULL, NULL);
	run_job(1, 2, 16, INA_ENC_F32, 100, 0.5, 2, NULL, NULL);
	run_job(8, 3, 32, INA_ENC_F32, 999, 0.3, 2, NULL, NULL);
}

static void
test_fabric_exact_i32(void **state)
{
	(void)state;
	run_job(4, 4, 16, INA_ENC_I32, 1000, 0.5, 3, NULL, NULL);
	run_job(3, 5, 32, INA_ENC_I32, 777, 1.0, 2, NULL, NULL);
}

static void
test_fabric_all_zero_and_tiny(void **state)
{
	(void)state;
	/* Nobody has a block: every result is header-only, the sum is zeros. */
	run_job(4, 4, 16, INA_ENC_F32, 1000, 0.0, 2, NULL, NULL);
	run_job(4, 4, 16, INA_ENC_I32, 1000, 0.0, 2, NULL, NULL);
	/* A tensor smaller than the lanes: lanes without blocks stay out. */
	run_job(4, 8, 16, INA_ENC_F32, 20, 1.0, 3, NULL, NULL);
	run_job(4, 8, 16, INA_ENC_I32, 1, 1.0, 3, NULL, NULL);
}

static void
test_fabric_in_place_and_average(void **state)
{
	struct fabric f;
	float want[1000];

	(void)state;
	fabric_init(&f, 3, 4, 16, INA_ENC_F32, NULL, NULL);
	assert_int_equal(fabric_join(&f), 0);
	make_data(3, 1000, 16, 0.6, 5);
	for (uint32_t i = 0; i < 1000; i++)
		want[i] = (ins[0][i] + ins[1][i] + ins[2][i]) * (1.0f / 3.0f);
	assert_int_equal(fabric_allreduce(&f, 1, in_p, in_p, 1000, 16, ENGINE_AVG), 0);
	for (uint16_t r = 0; r < 3; r++)
		assert_memory_equal(ins[r], want, sizeof(want));
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
}

static void
test_fabric_block_size_varies(void **state)
{
	struct fabric f;

	(void)state;
	fabric_init(&f, 4, 4, 64, INA_ENC_F32, NULL, NULL);
	assert_int_equal(fabric_join(&f), 0);
	for (int k = 0; k < 4; k++) {
		uint16_t b = (uint16_t)(16 << (k % 3));
		uint32_t n = 500 + 300 * (uint32_t)k;

		make_data(4, n, b, 0.5, (uint64_t)k);
		assert_int_equal(fabric_allreduce(&f, (uint32_t)k, in_p, out_p, n, b, ENGINE_SUM),
				 0);
		check_sum(4, n, 0);
	}
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
}

/* Drops packet k of a small job, for every k, and needs a right finish. */
static void
sweep(uint8_t enc)
{
	uint64_t total, k;
	struct fabric_faults faults = { .drop_seq = -1 };

	run_job(4, 2, 8, enc, 64, 0.5, 2, NULL, &total);
	assert_true(total > 50);
	for (k = 0; k < total; k++) {
		faults.drop_seq = (int64_t)k;
		run_job(4, 2, 8, enc, 64, 0.5, 2, &faults, NULL);
	}
	print_message("dropped each of %llu packets in turn\n", (unsigned long long)total);
}

static void
test_fabric_drop_each_packet_f32(void **state)
{
	(void)state;
	sweep(INA_ENC_F32);
}

static void
test_fabric_drop_each_packet_i32(void **state)
{
	(void)state;
	sweep(INA_ENC_I32);
}

static void
test_fabric_drop_each_packet_bf16(void **state)
{
	(void)state;
	sweep(INA_ENC_BF16);
}

static void
test_fabric_random_faults(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct fabric_faults faults = {
			.drop_seq = -1,
			.drop_rate = seed % 3 == 0 ? 0.3 : 0.1,
			.dup_rate = 0.05,
			.shuffle = 1,
			.seed = seed,
		};

		run_job(4, 4, 16, seed & 1 ? INA_ENC_F32 : INA_ENC_I32, 700, 0.4, 3, &faults, NULL);
	}
}

/* Runs 'fn' with the rounds cut into 2^k sub-blocks, half of them zero. */
static void
with_cut(uint8_t k, uint16_t block, void (*fn)(void))
{
	cut = k;
	sub_zero = (uint16_t)(block >> k);
	fn();
	cut = 0;
	sub_zero = 0;
}

static void
sub_exact(void)
{
	run_job(4, 4, 16, INA_ENC_F32, 1000, 0.5, 3, NULL, NULL);
	run_job(4, 4, 16, INA_ENC_I32, 999, 0.7, 2, NULL, NULL);
	run_job(4, 4, 16, INA_ENC_BF16, 1001, 0.5, 2, NULL, NULL);
	run_job(3, 5, 16, INA_ENC_F32, 777, 1.0, 2, NULL, NULL);
	run_job(4, 4, 16, INA_ENC_F32, 1000, 0.0, 1, NULL, NULL);
}

static void
sub_faults(void)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct fabric_faults faults = {
			.drop_seq = -1,
			.drop_rate = seed % 3 == 0 ? 0.3 : 0.1,
			.dup_rate = 0.05,
			.shuffle = 1,
			.delay_rate = 0.05,
			.seed = seed,
		};
		uint8_t enc = seed % 3 == 0 ? INA_ENC_BF16 : seed & 1 ? INA_ENC_F32 : INA_ENC_I32;

		run_job(4, 4, 32, enc, 701, 0.5, 2, &faults, NULL);
	}
}

static void
sub_sweep_f32(void)
{
	sweep(INA_ENC_F32);
}

static void
sub_sweep_i32(void)
{
	sweep(INA_ENC_I32);
}

/* The same inputs uncut and cut: the same bits on every rank, in place
 * (absent sub-blocks keep the input's bits) and out of place, sum and
 * average, in every encoding; fewer bytes sent cut. */
static void
same_as_uncut(uint8_t enc, enum engine_op op, int in_place)
{
	static float keep[FABRIC_MAX_HOSTS][MAXN], uncut[FABRIC_MAX_HOSTS][MAXN];
	uint64_t bytes[2] = { 0, 0 };
	const uint32_t n = 2001;

	for (int c = 0; c < 2; c++) {
		struct fabric f;

		fabric_init(&f, 4, 8, 64, enc, NULL, NULL);
		f.sub_log = c ? 3 : 0;
		assert_int_equal(fabric_join(&f), 0);
		sub_zero = 8;
		make_data(4, n, 64, 0.6, 9);
		sub_zero = 0;
		if (c == 0)
			memcpy(keep, ins, sizeof(keep));
		else
			memcpy(ins, keep, sizeof(keep));
		assert_int_equal(fabric_allreduce(&f, 5, in_p, in_place ? in_p : out_p, n, 64, op),
				 0);
		for (uint16_t r = 0; r < 4; r++) {
			float *got = in_place ? ins[r] : outs[r];

			if (c == 0)
				memcpy(uncut[r], got, n * sizeof(float));
			else
				assert_memory_equal(got, uncut[r], n * sizeof(float));
			bytes[c] += engine_stats(f.hosts[r])->bytes_sent;
		}
		assert_int_equal(fabric_finish(&f), 0);
		fabric_fini(&f);
	}
	assert_true(bytes[1] < bytes[0]);
}

/* A switch in lane partitions (its cores): each partition sums its lanes'
 * cut blocks. */
static void
sub_partitioned(void)
{
	struct fabric f;

	fabric_init(&f, 4, 8, 32, INA_ENC_F32, NULL, NULL);
	fabric_partition(&f, 3, NULL);
	f.sub_log = cut;
	assert_int_equal(fabric_join(&f), 0);
	for (int k = 0; k < 2; k++) {
		make_data(4, 3001, 32, 0.5, (uint64_t)k + 40);
		assert_int_equal(fabric_allreduce(&f, 8, in_p, out_p, 3001, 32, ENGINE_AVG), 0);
		check_sum(4, 3001, 1);
	}
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
}

static void
test_fabric_sub_blocks(void **state)
{
	(void)state;
	with_cut(2, 32, sub_partitioned);
	with_cut(2, 16, sub_exact);
	with_cut(1, 32, sub_faults);
	with_cut(3, 32, sub_faults);
	for (uint8_t enc = INA_ENC_F32; enc <= INA_ENC_BF16; enc++) {
		same_as_uncut(enc, ENGINE_SUM, 0);
		same_as_uncut(enc, ENGINE_AVG, 1);
	}
	same_as_uncut(INA_ENC_F32, ENGINE_AVG, 0);
	same_as_uncut(INA_ENC_BF16, ENGINE_SUM, 1);
}

/* Drops packet k of a small job cut into sub-blocks, for every k. */
static void
test_fabric_sub_blocks_drop_each(void **state)
{
	(void)state;
	with_cut(1, 8, sub_sweep_f32);
	with_cut(2, 8, sub_sweep_i32);
}

/*
 * Values whose sums round: with loss, duplicates and reordering, every worker
 * still receives the same bits (the switch sums each block once), and the
 * sum is within the derived float32 bound of a double-precision reference.
 */
static void
test_fabric_same_bits_everywhere(void **state)
{
	struct fabric f;
	uint64_t x = 12345;

	(void)state;
	fabric_init(&f, 5, 4, 32, INA_ENC_F32, NULL, NULL);
	f.faults.drop_rate = 0.1;
	f.faults.dup_rate = 0.1;
	f.faults.shuffle = 1;
	assert_int_equal(fabric_join(&f), 0);
	for (uint16_t r = 0; r < 5; r++) {
		for (uint32_t i = 0; i < 2000; i++) {
			x = hash(x);
			ins[r][i] = (i / 32) % 3 == 0 ? 0.0f
						      : (float)((double)(int64_t)x * 0x1.0p-60);
		}
		in_p[r] = ins[r];
		out_p[r] = outs[r];
	}
	assert_int_equal(fabric_allreduce(&f, 9, in_p, out_p, 2000, 32, ENGINE_SUM), 0);
	for (uint32_t i = 0; i < 2000; i++) {
		double ref = 0, sum_abs = 0;

		for (uint16_t r = 0; r < 5; r++) {
			ref += ins[r][i];
			sum_abs += fabs((double)ins[r][i]);
		}
		for (uint16_t r = 1; r < 5; r++)
			assert_memory_equal(&outs[r][i], &outs[0][i], sizeof(float));
		assert_true(fabs((double)outs[0][i] - ref) <= ina_enc_f32_bound(5, sum_abs, 0));
	}
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
}

/*
 * bf16 end to end: the synthetic k 2^-10 data (sparse and dense, tiny
 * tensors, all-zero), random loss, duplicates and reordering, and random
 * values over a wide range summed and averaged: every sum within
 * ina_enc_bf16_bound, the same bits at every rank, and half the payload
 * bytes of f32.
 */
static void
test_fabric_bf16_within_bound(void **state)
{
	struct fabric f;
	uint64_t x = 777, bytes_f32 = 0, bytes_bf16 = 0;
	double worst = 0;

	(void)state;
	run_job(4, 4, 16, INA_ENC_BF16, 1000, 0.5, 3, NULL, NULL);
	run_job(3, 5, 32, INA_ENC_BF16, 777, 1.0, 2, NULL, NULL);
	run_job(4, 4, 16, INA_ENC_BF16, 1000, 0.0, 2, NULL, NULL);
	run_job(4, 8, 16, INA_ENC_BF16, 20, 1.0, 3, NULL, NULL);
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct fabric_faults faults = {
			.drop_seq = -1,
			.drop_rate = seed % 3 == 0 ? 0.3 : 0.1,
			.dup_rate = 0.05,
			.shuffle = 1,
			.seed = seed,
		};

		run_job(4, 4, 16, INA_ENC_BF16, 700, 0.4, 3, &faults, NULL);
	}

	for (int average = 0; average <= 1; average++) {
		fabric_init(&f, 5, 4, 32, INA_ENC_BF16, NULL, NULL);
		f.faults.drop_rate = 0.1;
		f.faults.dup_rate = 0.1;
		f.faults.shuffle = 1;
		f.rng = 99 + (uint64_t)average;
		assert_int_equal(fabric_join(&f), 0);
		for (uint16_t r = 0; r < 5; r++) {
			for (uint32_t i = 0; i < 2000; i++) {
				x = hash(x);
				ins[r][i] = (i / 32) % 3 == 0
						    ? 0.0f
						    : (float)((double)(int64_t)x * 0x1.0p-60 *
							      ldexp(1.0, (int)(x % 40) - 20));
			}
			in_p[r] = ins[r];
			out_p[r] = outs[r];
		}
		assert_int_equal(fabric_allreduce(&f, 9, in_p, out_p, 2000, 32,
						  average ? ENGINE_AVG : ENGINE_SUM),
				 0);
		worst = fmax(worst, check_sum_bf16(5, 2000, average));
		assert_int_equal(fabric_finish(&f), 0);
		fabric_fini(&f);
	}
	print_message("bf16 over the fabric: worst error/bound %.3g\n", worst);

	/* The same dense job in f32 and bf16: bf16 sends half the payload bytes. */
	for (int k = 0; k < 2; k++) {
		uint8_t enc = k ? INA_ENC_BF16 : INA_ENC_F32;
		uint64_t *bytes = k ? &bytes_bf16 : &bytes_f32;

		fabric_init(&f, 2, 2, 64, enc, NULL, NULL);
		assert_int_equal(fabric_join(&f), 0);
		make_data(2, 1024, 64, 1.0, 5);
		assert_int_equal(fabric_allreduce(&f, 1, in_p, out_p, 1024, 64, ENGINE_SUM), 0);
		*bytes = pipeline_stats(f.sw)->result_bytes;
		assert_int_equal(fabric_finish(&f), 0);
		fabric_fini(&f);
	}
	assert_true(bytes_bf16 > 0);
	assert_int_equal(bytes_f32, 2 * bytes_bf16);
}

/*
 * Ranks that finish say FIN at once while a slow rank still misses its last
 * results under heavy loss: the job must stay until that rank is served,
 * however long its backoff makes it wait, and not vanish one linger after
 * the first FIN.
 */
static void
test_fabric_lagging_rank_keeps_job(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct pipeline_config pc;
		struct engine_config ec;
		struct fabric f;

		pipeline_config_init(&pc);
		pc.nb_slots = 64;
		pc.slot_elems = 16;
		/* Ten of the workers' longest backoff: a rank that still asks is
		 * not silent that long even at 40% loss, while the tail of the
		 * job after the first FIN can be longer. */
		pc.linger_ns = 200000000ull;
		engine_config_init(&ec);
		ec.rto_max_ns = 20000000ull;
		fabric_init(&f, 4, 2, 16, INA_ENC_F32, &pc, &ec);
		f.rng = seed * 2654435761u | 1;
		assert_int_equal(fabric_join(&f), 0);
		f.faults.drop_rate = 0.4;
		f.fin_when_done = 1;
		make_data(4, 200, 16, 0.5, seed);
		if (fabric_allreduce(&f, 1, in_p, out_p, 200, 16, ENGINE_SUM) < 0) {
			for (uint16_t r = 0; r < 4; r++)
				if (engine_error(f.hosts[r]))
					fail_msg("seed %llu rank %u: %s", (unsigned long long)seed,
						 r, engine_error_msg(f.hosts[r]));
			fail_msg("seed %llu: no error, yet the run did not end",
				 (unsigned long long)seed);
		}
		check_sum(4, 200, 0);
		assert_int_equal(fabric_run(&f, ENGINE_FINISHING, 60ull * 1000000000ull), 0);
		fabric_fini(&f);
	}
}

static void
test_fabric_switch_unreachable(void **state)
{
	struct fabric f;
	struct engine_config ec;

	(void)state;
	engine_config_init(&ec);
	ec.timeout_ns = 2000000000ull;
	fabric_init(&f, 2, 2, 16, INA_ENC_F32, NULL, &ec);
	f.faults.drop_rate = 1.0;
	assert_int_equal(fabric_join(&f), -1);
	assert_int_equal(engine_error(f.hosts[0]), INA_ENOSWITCH);
	/* Bounded: it gave up after the timeout, not at the run's limit. */
	assert_true(f.now < 1000000 + 3000000000ull);
	assert_non_null(strstr(engine_error_msg(f.hosts[0]), "did not answer"));
	fabric_fini(&f);
}

static void
test_fabric_missing_peer_named(void **state)
{
	struct fabric f;
	struct engine_config ec;
	struct pipeline_config pc;

	(void)state;
	engine_config_init(&ec);
	ec.timeout_ns = 1000000000ull;
	/* A switch without a peer timeout vouches for nobody: the workers'
	 * own timeout finds the peer (with one, it aborts the job: fabric
	 * test_fabric_pause_without_keepalive_dies). */
	pipeline_config_init(&pc);
	pc.nb_slots = 256;
	pc.slot_elems = 16;
	pc.peer_timeout_ns = 0;
	fabric_init(&f, 3, 2, 16, INA_ENC_F32, &pc, &ec);
	assert_int_equal(fabric_join(&f), 0);
	make_data(3, 100, 16, 1.0, 3);
	/* Rank 2 never starts its allreduce. */
	for (uint16_t r = 0; r < 2; r++)
		assert_int_equal(engine_allreduce(f.hosts[r], 0, in_p[r], out_p[r], 100, 16,
						  ENGINE_SUM, f.now),
				 0);
	assert_int_equal(fabric_run(&f, ENGINE_RUNNING, 5000000000ull), -1);
	assert_int_equal(engine_error(f.hosts[0]), INA_EPEER);
	assert_non_null(strstr(engine_error_msg(f.hosts[0]), "rank(s) 2"));
	fabric_fini(&f);
}

static void
test_fabric_refused_when_pool_full(void **state)
{
	struct fabric f;
	struct pipeline_config pc;

	(void)state;
	pipeline_config_init(&pc);
	pc.nb_slots = 4;
	pc.slot_elems = 16;
	fabric_init(&f, 2, 8, 16, INA_ENC_F32, &pc, NULL);
	assert_int_equal(fabric_join(&f), -1);
	assert_int_equal(engine_error(f.hosts[0]), INA_EREFUSED);
	assert_non_null(strstr(engine_error_msg(f.hosts[0]), "needs 8 contiguous slots"));
	assert_int_equal(pipeline_stats(f.sw)->jobs_refused, 2);
	fabric_fini(&f);
}

static void
test_fabric_leave_tells_others(void **state)
{
	struct fabric f;

	(void)state;
	fabric_init(&f, 3, 2, 16, INA_ENC_F32, NULL, NULL);
	assert_int_equal(fabric_join(&f), 0);
	make_data(3, 100, 16, 1.0, 3);
	for (uint16_t r = 0; r < 2; r++)
		assert_int_equal(engine_allreduce(f.hosts[r], 0, in_p[r], out_p[r], 100, 16,
						  ENGINE_SUM, f.now),
				 0);
	engine_leave(f.hosts[2], f.now);
	assert_int_equal(fabric_run(&f, ENGINE_RUNNING, 5000000000ull), -1);
	assert_int_equal(engine_error(f.hosts[0]), INA_ELEFT);
	assert_int_equal(engine_error(f.hosts[1]), INA_ELEFT);
	assert_int_equal(pipeline_nb_jobs(f.sw), 0);
	fabric_fini(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fabric_exact_f32),
		cmocka_unit_test(test_fabric_exact_i32),
		cmocka_unit_test(test_fabric_all_zero_and_tiny),
		cmocka_unit_test(test_fabric_in_place_and_average),
		cmocka_unit_test(test_fabric_block_size_varies),
		cmocka_unit_test(test_fabric_drop_each_packet_f32),
		cmocka_unit_test(test_fabric_drop_each_packet_i32),
		cmocka_unit_test(test_fabric_drop_each_packet_bf16),
		cmocka_unit_test(test_fabric_random_faults),
		cmocka_unit_test(test_fabric_bf16_within_bound),
		cmocka_unit_test(test_fabric_same_bits_everywhere),
		cmocka_unit_test(test_fabric_sub_blocks),
		cmocka_unit_test(test_fabric_sub_blocks_drop_each),
		cmocka_unit_test(test_fabric_lagging_rank_keeps_job),
		cmocka_unit_test(test_fabric_switch_unreachable),
		cmocka_unit_test(test_fabric_missing_peer_named),
		cmocka_unit_test(test_fabric_refused_when_pool_full),
		cmocka_unit_test(test_fabric_leave_tells_others),
	};

	ina_log_set_level(INA_LOG_ERR);
	return cmocka_run_group_tests_name("fabric", tests, NULL, NULL);
}
