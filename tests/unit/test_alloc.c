/* SPDX-License-Identifier: MIT */
/*
 * Nothing is allocated per job or per packet (docs/PROTOCOL.md 5.1): malloc,
 * calloc, realloc, aligned_alloc and posix_memalign are wrapped at link time
 * (-Wl,--wrap=...) and counted while JOIN, DATA, RESULT and FIN traffic runs
 * through host engines and the switch pipeline over the test fabric, with
 * loss, duplication and reordering. And the pipeline's memory depends only on
 * its configuration: the same bytes for the same config, none more for a
 * tensor of a million elements than for one of a thousand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc_count.h"
#include "fabric.h"
#include "ina/log.h"

/* ---- Data ---- */

#define MAXW 4
#define BIG (1u << 20)

static float *ins[MAXW], *outs[MAXW];

static uint64_t
hash(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int
group_setup(void **state)
{
	(void)state;
	for (int r = 0; r < MAXW; r++) {
		ins[r] = malloc(BIG * sizeof(float));
		outs[r] = malloc(BIG * sizeof(float));
		if (!ins[r] || !outs[r])
			return -1;
	}
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	for (int r = 0; r < MAXW; r++) {
		free(ins[r]);
		free(outs[r]);
	}
	return 0;
}

/* Block-sparse data of exactly summable values k / 1024. */
static void
make_data(uint16_t world, uint32_t n, uint16_t block, double density, uint64_t seed)
{
	for (uint16_t r = 0; r < world; r++) {
		for (uint32_t b = 0; (uint64_t)b * block < n; b++) {
			int on = (double)(hash(seed ^ (r * 1000003ull) ^ (b * 7919ull)) >> 11) *
					 0x1.0p-53 <
				 density;

			for (uint32_t i = b * block; i < n && i < (b + 1) * block; i++) {
				int k = (int)(hash(seed * 31 + r * 65537ull + i) % 2047) - 1023;

				ins[r][i] = on ? (float)(k ? k : 1) / 1024.0f : 0.0f;
			}
		}
		memset(outs[r], 0x7f, n * sizeof(float));
	}
}

static void
check_sum(uint16_t world, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		float want = 0;

		for (uint16_t r = 0; r < world; r++)
			want += ins[r][i];
		for (uint16_t r = 0; r < world; r++)
			if (memcmp(&outs[r][i], &want, sizeof(float)) != 0)
				fail_msg("rank %u element %u: got %.9g want %.9g", r, i,
					 (double)outs[r][i], (double)want);
	}
}

/* ---- Tests ---- */

/* The wrappers see the library's allocations (also under a sanitizer). */
static void
test_alloc_wrappers_count(void **state)
{
	struct pipeline_config pc;
	struct ina_pkt_pool *pool;
	struct pipeline *p;

	(void)state;
	alloc_count_on();
	pool = ina_pkt_pool_create(16, 256);
	alloc_count_off();
	assert_non_null(pool);
	assert_int_equal(alloc_nb, 1);
	assert_true(alloc_bytes >= 16 * 256);

	pipeline_config_init(&pc);
	pc.pool = pool;
	pc.nb_slots = 64;
	pc.slot_elems = 128;
	alloc_count_on();
	p = pipeline_create(&pc);
	alloc_count_off();
	assert_non_null(p);
	assert_true(alloc_nb >= 2);
	assert_true(alloc_bytes >= 2ull * 64 * 128 * sizeof(float));
	pipeline_destroy(p);

	/* And the host engine's. */
	{
		struct engine_config ec;
		struct engine *e;

		engine_config_init(&ec);
		ec.pool = pool;
		ec.max_block = 16;
		ec.lanes = 4;
		fabric_peer(&ec.sw, FABRIC_SWITCH);
		alloc_count_on();
		e = engine_create(&ec);
		alloc_count_off();
		assert_non_null(e);
		assert_int_equal(alloc_nb, 3); /* itself, its lanes, its block map */
		engine_destroy(e);
	}
	ina_pkt_pool_destroy(pool);
}

struct job_case {
	uint16_t world, lanes, block;
	uint8_t enc;
	uint32_t n;
	double density;
	double drop, dup;
	int shuffle;
};

/* Joins, runs 'rounds' allreduces and FIN, counting everything the engines
 * and the pipeline allocate on the way. */
static void
run_counted(const struct job_case *c, int rounds, uint64_t seed)
{
	struct fabric f;
	uint64_t allocs = 0, bytes = 0;

	fabric_init(&f, c->world, c->lanes, c->block, c->enc, NULL, NULL);
	f.faults.drop_rate = c->drop;
	f.faults.dup_rate = c->dup;
	f.faults.shuffle = c->shuffle;
	f.rng = seed | 1;

	alloc_count_on();
	assert_int_equal(fabric_join(&f), 0);
	alloc_count_off();
	allocs += alloc_nb;
	bytes += alloc_bytes;
	for (int k = 0; k < rounds; k++) {
		enum engine_op op = k % 3 == 2 ? ENGINE_AVG : ENGINE_SUM;
		int rc;

		make_data(c->world, c->n, c->block, c->density, seed + (uint64_t)k);
		alloc_count_on();
		rc = fabric_allreduce(&f, (uint32_t)k % 2, ins, outs, c->n, c->block, op);
		alloc_count_off();
		assert_int_equal(rc, 0);
		allocs += alloc_nb;
		bytes += alloc_bytes;
		if (op == ENGINE_SUM)
			check_sum(c->world, c->n);
	}
	alloc_count_on();
	assert_int_equal(fabric_finish(&f), 0);
	alloc_count_off();
	allocs += alloc_nb;
	bytes += alloc_bytes;
	if (allocs)
		fail_msg("%llu allocations (%llu bytes) while a job of %u ranks ran %d rounds",
			 (unsigned long long)allocs, (unsigned long long)bytes, c->world, rounds);
	assert_true(f.seq > 0);
	fabric_fini(&f);
}

static void
test_alloc_none_per_packet(void **state)
{
	static const struct job_case cases[] = {
		{ 4, 8, 64, INA_ENC_F32, 5000, 0.5, 0, 0, 0 },
		{ 4, 8, 64, INA_ENC_I32, 5000, 0.5, 0, 0, 0 },
		{ 3, 5, 32, INA_ENC_F32, 3000, 1.0, 0.1, 0.05, 1 },
		{ 4, 4, 16, INA_ENC_I32, 2000, 0.3, 0.1, 0.05, 1 },
		{ 4, 16, 64, INA_ENC_F32, 20000, 0.1, 0.3, 0.1, 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_counted(&cases[i], 6, 100 + i);
}

/* Creates a pipeline with 'pc' (pool set), counting what it allocates. */
static struct pipeline *
create_counted(const struct pipeline_config *pc, uint64_t *allocs, uint64_t *bytes)
{
	struct pipeline *p;

	alloc_count_on();
	p = pipeline_create(pc);
	alloc_count_off();
	assert_non_null(p);
	*allocs = alloc_nb;
	*bytes = alloc_bytes;
	return p;
}

static void
test_alloc_slot_memory_fixed(void **state)
{
	static const uint32_t sizes[2] = { 1000, BIG };
	struct pipeline_config pc;
	uint64_t allocs[2], bytes[2], more_allocs, more_bytes;
	struct ina_pkt_pool *pool;
	struct pipeline *p;

	(void)state;
	pipeline_config_init(&pc);
	pc.nb_slots = 128;
	pc.slot_elems = 256;
	pc.max_jobs = 4;
	for (int k = 0; k < 2; k++) {
		struct fabric f;
		uint64_t run_allocs = 0, run_bytes = 0;

		fabric_init(&f, 4, 32, 256, INA_ENC_F32, &pc, NULL);
		/* The switch is a pipeline made here, with the same config. */
		pc.pool = f.pool;
		p = create_counted(&pc, &allocs[k], &bytes[k]);
		pipeline_destroy(f.sw);
		f.sw = p;

		alloc_count_on();
		assert_int_equal(fabric_join(&f), 0);
		alloc_count_off();
		run_allocs += alloc_nb;
		run_bytes += alloc_bytes;
		for (int round = 0; round < 2; round++) {
			int rc;

			make_data(4, sizes[k], 256, 0.3, (uint64_t)round + 7);
			alloc_count_on();
			rc = fabric_allreduce(&f, 1, ins, outs, sizes[k], 256, ENGINE_SUM);
			alloc_count_off();
			assert_int_equal(rc, 0);
			run_allocs += alloc_nb;
			run_bytes += alloc_bytes;
			check_sum(4, sizes[k]);
		}
		alloc_count_on();
		assert_int_equal(fabric_finish(&f), 0);
		alloc_count_off();
		run_allocs += alloc_nb;
		run_bytes += alloc_bytes;
		if (run_allocs)
			fail_msg("%llu allocations (%llu bytes) for a tensor of %u elements",
				 (unsigned long long)run_allocs, (unsigned long long)run_bytes,
				 sizes[k]);
		print_message("tensor of %u elements: %llu packets, no allocation\n", sizes[k],
			      (unsigned long long)f.seq);
		fabric_fini(&f);
	}
	/* Same config, same memory, whatever the tensors. */
	assert_int_equal(allocs[0], allocs[1]);
	assert_int_equal(bytes[0], bytes[1]);
	assert_true(bytes[0] >= 2ull * pc.nb_slots * pc.slot_elems * sizeof(float));
	assert_true(bytes[0] < 2ull * pc.nb_slots * pc.slot_elems * sizeof(float) + (1u << 20));

	/* The memory follows the config: twice the slot width, twice the
	 * accumulators, the rest unchanged. */
	pool = ina_pkt_pool_create(16, 256);
	assert_non_null(pool);
	pc.pool = pool;
	pc.slot_elems = 512;
	p = create_counted(&pc, &more_allocs, &more_bytes);
	pipeline_destroy(p);
	ina_pkt_pool_destroy(pool);
	assert_int_equal(more_allocs, allocs[0]);
	assert_int_equal(more_bytes - bytes[0], 2ull * pc.nb_slots * 256 * sizeof(float));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_wrappers_count),
		cmocka_unit_test(test_alloc_none_per_packet),
		cmocka_unit_test(test_alloc_slot_memory_fixed),
	};

	ina_log_set_level(INA_LOG_ERR);
	return cmocka_run_group_tests_name("alloc", tests, group_setup, group_teardown);
}
