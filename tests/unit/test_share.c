/* SPDX-License-Identifier: MIT */
/*
 * The weighted max-min fair share (switch_sim/share.c): its invariants on
 * fixed cases and on random ones. Never more than the pool, never more than
 * a job asks, grants in whole units; a job asking less than its share gets
 * what it asks and the rest goes to the others; with unit 1 every job asking
 * more than its share ends within one slot of its weighted share, the whole
 * pool is used when the jobs ask for more, and weights are respected;
 * --share-total keeps a share for the jobs not there yet.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "share.h"

static void
set(struct share_job *j, uint32_t demand, uint16_t weight, uint16_t unit)
{
	memset(j, 0, sizeof(*j));
	j->demand = demand;
	j->weight = weight;
	j->unit = unit;
}

static void
equal_weights(void **state)
{
	struct share_job j[3];

	(void)state;
	for (int i = 0; i < 3; i++)
		set(&j[i], 1000, 1, 1);
	assert_int_equal(share_compute(100, 0, j, 3), 0);
	/* 33.3 each: two get 33, one 34; the pool is used whole. */
	assert_int_equal(j[0].grant + j[1].grant + j[2].grant, 100);
	for (int i = 0; i < 3; i++) {
		assert_true(j[i].grant == 33 || j[i].grant == 34);
		assert_true(fabs(j[i].exact - 100.0 / 3) < 1e-9);
	}
}

static void
small_demand_redistributed(void **state)
{
	struct share_job j[3];

	(void)state;
	set(&j[0], 10, 1, 1);
	set(&j[1], 100, 1, 1);
	set(&j[2], 100, 1, 1);
	share_compute(100, 0, j, 3);
	assert_int_equal(j[0].grant, 10);
	assert_int_equal(j[1].grant, 45);
	assert_int_equal(j[2].grant, 45);
	/* Everyone asks less than the pool holds: each gets what it asks. */
	set(&j[0], 10, 1, 1);
	set(&j[1], 20, 5, 1);
	set(&j[2], 30, 1, 1);
	share_compute(100, 0, j, 3);
	assert_int_equal(j[0].grant, 10);
	assert_int_equal(j[1].grant, 20);
	assert_int_equal(j[2].grant, 30);
}

static void
weights(void **state)
{
	struct share_job j[3];

	(void)state;
	set(&j[0], 500, 1, 1);
	set(&j[1], 500, 2, 1);
	set(&j[2], 500, 3, 1);
	share_compute(60, 0, j, 3);
	assert_int_equal(j[0].grant, 10);
	assert_int_equal(j[1].grant, 20);
	assert_int_equal(j[2].grant, 30);
	/* The heavy job asks less than its half: the light ones share the rest 1:2. */
	set(&j[0], 500, 1, 1);
	set(&j[1], 500, 2, 1);
	set(&j[2], 12, 6, 1);
	share_compute(60, 0, j, 3);
	assert_int_equal(j[2].grant, 12);
	assert_int_equal(j[0].grant, 16);
	assert_int_equal(j[1].grant, 32);
}

static void
total_keeps_room(void **state)
{
	struct share_job j[2];

	(void)state;
	/* Alone, but three expected: a third of the pool. */
	set(&j[0], 1000, 1, 1);
	share_compute(90, 3, j, 1);
	assert_int_equal(j[0].grant, 30);
	/* Two there, three expected. */
	set(&j[0], 1000, 1, 1);
	set(&j[1], 1000, 1, 1);
	share_compute(90, 3, j, 2);
	assert_int_equal(j[0].grant, 30);
	assert_int_equal(j[1].grant, 30);
	/* Asking less than a third: gets it all. */
	set(&j[0], 20, 1, 1);
	share_compute(90, 3, j, 1);
	assert_int_equal(j[0].grant, 20);
	/* 'total' below the jobs there changes nothing. */
	set(&j[0], 1000, 1, 1);
	set(&j[1], 1000, 1, 1);
	share_compute(90, 1, j, 2);
	assert_int_equal(j[0].grant + j[1].grant, 90);
}

static void
units(void **state)
{
	struct share_job j[2];

	(void)state;
	/* ssp:2, 4 slots a row: 50 x 4 / 7 = 28.6 -> 28, 50 x 3 / 7 = 21.4 -> 21,
	 * and the slot left to the one furthest below its share. */
	set(&j[0], 400, 4, 4);
	set(&j[1], 300, 3, 1);
	share_compute(50, 0, j, 2);
	assert_int_equal(j[0].grant % 4, 0);
	assert_true(j[0].grant + j[1].grant <= 50);
	assert_true(fabs(j[0].grant - j[0].exact) < 4.0);
	assert_true(fabs(j[1].grant - j[1].exact) < 4.0);
	/* A unit wider than the share: nothing (never one over the share). */
	set(&j[0], 400, 1, 30);
	set(&j[1], 400, 1, 1);
	share_compute(50, 0, j, 2);
	assert_int_equal(j[0].grant, 0);
	assert_int_equal(j[1].grant, 25);
}

static void
lanes_of(void **state)
{
	(void)state;
	assert_int_equal(share_lanes_of(5, 8, 1, 1), 5);
	assert_int_equal(share_lanes_of(9, 8, 1, 1), 8);
	assert_int_equal(share_lanes_of(3, 8, 2, 1), 6); /* 3 rows of 2 partitions */
	assert_int_equal(share_lanes_of(4, 7, 2, 1), 7);
	assert_int_equal(share_lanes_of(11, 8, 1, 4), 2); /* ssp:2: 4 slots a lane */
	assert_int_equal(share_lanes_of(3, 8, 1, 4), 0);
}

static void
policy_names(void **state)
{
	uint8_t p = 9;

	(void)state;
	assert_int_equal(share_policy_parse("fair", &p), 0);
	assert_int_equal(p, SHARE_FAIR);
	assert_string_equal(share_policy_name(p), "fair");
	assert_int_equal(share_policy_parse("first-come", &p), 0);
	assert_int_equal(p, SHARE_FIRST_COME);
	assert_int_equal(share_policy_parse("fifo", &p), -1);
	assert_int_equal(share_compute(10, 0, NULL, SHARE_MAX_JOBS + 1), -1);
}

/* Random cases: the invariants of the header, checked on each. */
static void
random_invariants(void **state)
{
	static struct share_job j[12];

	(void)state;
	srand(7);
	for (int iter = 0; iter < 20000; iter++) {
		uint16_t n = (uint16_t)(1 + rand() % 12);
		uint32_t pool = (uint32_t)(rand() % 2000);
		uint16_t total = (uint16_t)(rand() % 16);
		int unit1 = rand() % 2;
		uint64_t sum = 0, ask = 0;
		double wsum = 0.0;

		for (uint16_t i = 0; i < n; i++) {
			uint16_t u = unit1 ? 1 : (uint16_t)(1 + rand() % 10);

			set(&j[i], (uint32_t)(rand() % 600) / u * u, (uint16_t)(1 + rand() % 8), u);
		}
		assert_int_equal(share_compute(pool, total, j, n), 0);
		for (uint16_t i = 0; i < n; i++) {
			sum += j[i].grant;
			ask += j[i].demand;
			assert_true(j[i].grant <= j[i].demand);
			assert_int_equal(j[i].grant % j[i].unit, 0);
			assert_true(j[i].exact <= j[i].demand + 1e-6);
			/* Within one unit of the exact share. */
			assert_true(fabs((double)j[i].grant - j[i].exact) < j[i].unit + 1e-6);
			wsum += j[i].weight;
		}
		assert_true(sum <= pool);
		if (!unit1)
			continue;
		/* Unit 1: the pool is used whole when the jobs ask for more
		 * and no share is kept for jobs not there. */
		if (ask >= pool && total <= n)
			assert_int_equal(sum, pool);
		if (ask <= pool && total <= n)
			for (uint16_t i = 0; i < n; i++)
				assert_int_equal(j[i].grant, j[i].demand);
		/* Max-min with weights: a job held below its demand has, per
		 * weight, at least what any other job has per weight (within
		 * a slot). */
		for (uint16_t a = 0; a < n; a++) {
			if (j[a].exact >= j[a].demand - 1e-9)
				continue;
			for (uint16_t b = 0; b < n; b++)
				assert_true(j[a].exact / j[a].weight >=
					    j[b].exact / j[b].weight - 1e-6);
			assert_true(fabs((double)j[a].grant / j[a].weight -
					 j[a].exact / j[a].weight) < 1.0 / j[a].weight + 1e-6);
		}
		(void)wsum;
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(equal_weights), cmocka_unit_test(small_demand_redistributed),
		cmocka_unit_test(weights),	 cmocka_unit_test(total_keeps_room),
		cmocka_unit_test(units),	 cmocka_unit_test(lanes_of),
		cmocka_unit_test(policy_names),	 cmocka_unit_test(random_invariants),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
