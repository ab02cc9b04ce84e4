/* SPDX-License-Identifier: MIT */
/*
 * The round-trip summary (host/src/rtt_hist.h) alone: empty and one-sample
 * histograms, exact count, minimum, maximum and mean, quantiles within the
 * bucket bound (6.25%) of the exact order statistics of random samples
 * spread over nine decades, every bucket edge, samples beyond the top
 * bucket, and a merge that equals adding every sample to one histogram.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rtt_hist.h"

/* |got - want| <= want / 16: the middle of a bucket an eighth of its octave wide. */
static void
assert_near(uint64_t got, uint64_t want)
{
	uint64_t d = got > want ? got - want : want - got;

	if (d * 16 > want) {
		print_error("got %llu, want %llu (within 6.25%%)\n", (unsigned long long)got,
			    (unsigned long long)want);
		fail();
	}
}

static void
empty(void **state)
{
	struct rtt_hist h;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_int_equal(rtt_hist_quantile(&h, 0.5), 0);
	assert_int_equal(rtt_hist_quantile(&h, 1), 0);
	assert_true(rtt_hist_mean(&h) == 0.0);
}

static void
one_sample(void **state)
{
	static const uint64_t v[] = { 0,  1,	7,	   15,	       16,
				      17, 1000, 123456789, 1ull << 40, UINT64_MAX / 2 };

	(void)state;
	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct rtt_hist h;

		memset(&h, 0, sizeof(h));
		rtt_hist_add(&h, v[i]);
		assert_int_equal(h.count, 1);
		assert_int_equal(h.min_ns, v[i]);
		assert_int_equal(h.max_ns, v[i]);
		/* Clamped to [min, max]: one sample reads back exactly. */
		assert_int_equal(rtt_hist_quantile(&h, 0), v[i]);
		assert_int_equal(rtt_hist_quantile(&h, 0.5), v[i]);
		assert_int_equal(rtt_hist_quantile(&h, 0.99), v[i]);
		assert_int_equal(rtt_hist_quantile(&h, 1), v[i]);
	}
}

/* Small values (below 16 ns) have a bucket each: exact. */
static void
exact_small(void **state)
{
	struct rtt_hist h;

	(void)state;
	memset(&h, 0, sizeof(h));
	for (uint64_t v = 0; v < 16; v++)
		rtt_hist_add(&h, v);
	assert_int_equal(rtt_hist_quantile(&h, 0.5), 7); /* rank 8 of 16 */
	assert_int_equal(rtt_hist_quantile(&h, 1.0 / 16), 0);
	assert_int_equal(rtt_hist_quantile(&h, 0.95), 15);
	assert_true(rtt_hist_mean(&h) == 7.5);
}

/* Each bucket edge: a value just below, at and above every 1/8 of every
 * octave, as the median of a histogram whose other samples sit far on
 * either side (so the clamp to [min, max] does not help). */
static void
edges(void **state)
{
	(void)state;
	for (unsigned o = 4; o < 40; o++)
		for (uint64_t s = 0; s < 8; s++) {
			uint64_t edge = (1ull << o) + s * (1ull << (o - 3));

			for (int d = -1; d <= 1; d++) {
				struct rtt_hist h;
				uint64_t v = edge + (uint64_t)(int64_t)d;

				memset(&h, 0, sizeof(h));
				rtt_hist_add(&h, 1);
				rtt_hist_add(&h, v);
				rtt_hist_add(&h, v);
				rtt_hist_add(&h, 1ull << 45);
				assert_near(rtt_hist_quantile(&h, 0.5), v);
			}
		}
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A deterministic generator (xorshift64*), so a failure reproduces. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

/* Random samples log-uniform over 100 ns .. 100 s: every quantile within
 * 6.25% of the exact order statistic of rank ceil(q n); count, minimum,
 * maximum and sum exact. */
static void
random_quantiles(void **state)
{
	enum { N = 20000 };
	static const double qs[] = { 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999 };
	uint64_t *v = malloc(N * sizeof(*v)), seed = 0x9e3779b97f4a7c15ull, sum = 0;
	struct rtt_hist *h = calloc(1, sizeof(*h));

	(void)state;
	assert_non_null(v);
	assert_non_null(h);
	for (unsigned i = 0; i < N; i++) {
		double e = 2 + 9 * (double)(rnd(&seed) >> 11) * 0x1.0p-53;

		v[i] = (uint64_t)pow(10, e);
		sum += v[i];
		rtt_hist_add(h, v[i]);
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	assert_int_equal(h->count, N);
	assert_int_equal(h->min_ns, v[0]);
	assert_int_equal(h->max_ns, v[N - 1]);
	assert_int_equal(h->sum_ns, sum);
	assert_true(fabs(rtt_hist_mean(h) - (double)sum / N) < 1e-6 * ((double)sum / N));
	for (unsigned i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		size_t rank = (size_t)ceil(qs[i] * N);

		assert_near(rtt_hist_quantile(h, qs[i]), v[rank - 1]);
	}
	assert_int_equal(rtt_hist_quantile(h, 1), v[N - 1]);
	assert_int_equal(rtt_hist_quantile(h, 0), v[0]);
	free(v);
	free(h);
}

/* Beyond the top bucket (2^40 ns): counted, the maximum exact, and a
 * quantile there reads as the maximum. */
static void
beyond_top(void **state)
{
	struct rtt_hist h;

	(void)state;
	memset(&h, 0, sizeof(h));
	rtt_hist_add(&h, 1000);
	for (unsigned i = 0; i < 99; i++)
		rtt_hist_add(&h, (1ull << 50) + i);
	assert_int_equal(h.count, 100);
	assert_int_equal(h.max_ns, (1ull << 50) + 98);
	assert_int_equal(rtt_hist_quantile(&h, 0.5), (1ull << 50) + 98);
	assert_int_equal(rtt_hist_quantile(&h, 0.01), 1000);
}

/* Two engines' histograms merged equal one histogram of every sample. */
static void
merge(void **state)
{
	struct rtt_hist *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct rtt_hist *all = calloc(1, sizeof(*all)), *none = calloc(1, sizeof(*none));
	uint64_t seed = 42;

	(void)state;
	assert_true(a && b && all && none);
	for (unsigned i = 0; i < 5000; i++) {
		uint64_t x = 1000 + rnd(&seed) % 1000000;

		rtt_hist_add(i % 3 ? a : b, x);
		rtt_hist_add(all, x);
	}
	rtt_hist_merge(none, a); /* into an empty one: its minimum too */
	rtt_hist_merge(none, b);
	assert_memory_equal(none, all, sizeof(*all));
	rtt_hist_merge(a, b);
	assert_memory_equal(a, all, sizeof(*all));
	memset(b, 0, sizeof(*b));
	rtt_hist_merge(a, b); /* an empty one changes nothing */
	assert_memory_equal(a, all, sizeof(*all));
	free(a);
	free(b);
	free(all);
	free(none);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty),
		cmocka_unit_test(one_sample),
		cmocka_unit_test(exact_small),
		cmocka_unit_test(edges),
		cmocka_unit_test(random_quantiles),
		cmocka_unit_test(beyond_top),
		cmocka_unit_test(merge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
