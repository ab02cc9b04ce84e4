/* SPDX-License-Identifier: MIT */
/*
 * Partition maps (host/src/partition.h) alone: every map is a permutation, so
 * every block is owned by exactly one partition and every partition keeps its
 * number of wire positions; a short last block stays last; the same loads
 * give the same map on every worker; on skewed loads the dynamic map is at
 * least as balanced as the fixed one (and balanced to within one block); the
 * tag is 0 for the identity only and changes with the map; both layouts
 * (lanes over a switch's cores, contiguous ranges over several switches); gather and scatter
 * are inverse; and the rebalancing schedule (a new map at rounds r with
 * r mod period == 0, from the sum of round r - 1; rebuilt from the same sum
 * when B changes).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "egroup.h"
#include "ina/util.h"
#include "partition.h"

static enum partition_layout layout; /* of mk() */

static struct partition *
mk(enum partition_mode mode, uint32_t period, uint16_t parts, uint16_t lanes, uint32_t n,
   uint16_t min_block)
{
	struct partition_config c = { .mode = mode,
				      .layout = layout,
				      .period = period,
				      .parts = parts,
				      .lanes = lanes };
	struct partition *p = partition_create(&c, n, min_block);

	assert_non_null(p);
	return p;
}

/* The map of 'p' is a permutation of nb blocks; each partition holds as many
 * positions as under the identity; with 'keep_last' the last block is last. */
static void
check_map(const struct partition *p, uint16_t parts, uint16_t lanes, int keep_last)
{
	struct partition_config c = { .layout = layout, .parts = parts, .lanes = lanes };
	uint32_t nb, owners[PARTITION_MAX_PARTS] = { 0 }, ident[PARTITION_MAX_PARTS] = { 0 };
	const uint32_t *m = partition_blocks(p, &nb);
	uint8_t *seen = calloc(nb, 1);

	assert_non_null(seen);
	for (uint32_t v = 0; v < nb; v++) {
		assert_true(m[v] < nb);
		assert_int_equal(seen[m[v]], 0); /* owned once */
		seen[m[v]] = 1;
		owners[partition_part(&c, nb, v)]++;
		ident[partition_part(&c, nb, v)]++;
	}
	for (uint32_t b = 0; b < nb; b++)
		assert_int_equal(seen[b], 1); /* owned at all */
	for (uint16_t k = 0; k < parts; k++)
		assert_int_equal(owners[k], ident[k]);
	if (keep_last)
		assert_int_equal(m[nb - 1], nb - 1);
	assert_int_equal(partition_tag(p) == 0, partition_is_identity(p));
	free(seen);
}

/* Random loads (a few heavy, many zero) on many shapes, in 'layout': every
 * block owned by exactly one partition, positions per partition unchanged. */
static void
permutations(void)
{
	static const uint16_t parts[] = { 1, 2, 3, 4, 8 };
	static const uint16_t lanes[] = { 1, 4, 6, 8, 64 };
	uint64_t seed = 7;
	uint32_t load[1000];

	for (unsigned i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		for (unsigned j = 0; j < sizeof(lanes) / sizeof(lanes[0]); j++) {
			for (uint32_t nb = 1; nb <= 1000; nb = nb * 3 + 1) {
				struct partition *p = mk(PARTITION_DYNAMIC, 1, parts[i], lanes[j],
							 1000, 1);

				for (int keep = 0; keep < 2; keep++) {
					for (uint32_t b = 0; b < nb; b++) {
						uint64_t r = ina_splitmix64(&seed);

						load[b] = r % 4 == 0 ? (uint32_t)(r >> 40) % 5 : 0;
					}
					assert_int_equal(partition_build(p, load, nb, keep), 0);
					check_map(p, parts[i], lanes[j], keep);
				}
				assert_int_equal(partition_build(p, load, 1001, 0), -EINVAL);
				partition_destroy(p);
			}
		}
	}
}

static void
test_partition_permutation(void **state)
{
	(void)state;
	layout = PARTITION_LANES;
	permutations();
	layout = PARTITION_RANGES;
	permutations();
	layout = PARTITION_LANES;
}

/* Ranges (K switches, each a contiguous part): the k-th starts at
 * ceil(k nb / K), as egroup_run() cuts them; every position in exactly one. Blocks loaded only in the
 * first quarter: fixed puts all on switch 0, dynamic deals them evenly. */
static void
test_partition_ranges(void **state)
{
	struct partition_config c = { .layout = PARTITION_RANGES, .parts = 4, .lanes = 8 };
	static const uint16_t want10[] = { 0, 0, 0, 1, 1, 2, 2, 2, 3, 3 };
	uint32_t load[400], cf[4], cd[4];
	uint8_t nz[400];
	struct partition *fx, *dy;

	(void)state;
	for (uint32_t v = 0; v < 10; v++)
		assert_int_equal(partition_part(&c, 10, v), want10[v]);
	for (uint32_t nb = 1; nb < 300; nb++) {
		uint16_t last = 0;

		for (uint32_t v = 0; v < nb; v++) {
			uint16_t k = partition_part(&c, nb, v);

			assert_true(k < 4 && k >= last); /* contiguous, in order */
			assert_int_equal(v == (uint32_t)(((uint64_t)k * nb + 3) / 4) || k == last,
					 1);
			last = k;
		}
	}
	/* The runs the engines of K switches send are the partitions. */
	for (uint16_t k = 1; k <= 5; k++) {
		struct partition_config ck = { .layout = PARTITION_RANGES, .parts = k, .lanes = 8 };

		for (uint32_t n = 1; n < 200; n += 7) {
			uint32_t nb = (n + 15) / 16, seen = 0;

			for (uint16_t j = 0; j < k; j++) {
				size_t off, len;

				egroup_run(k, j, n, 16, &off, &len);
				assert_true(j > 0 || len > 0); /* run 0 never empty */
				assert_int_equal(off % 16, 0);
				assert_int_equal(off / 16, seen); /* contiguous */
				for (uint32_t b = (uint32_t)(off / 16); b < (off + len + 15) / 16;
				     b++)
					assert_int_equal(partition_part(&ck, nb, b), j);
				seen = (uint32_t)((off + len + 15) / 16);
			}
			assert_int_equal(seen, nb);
		}
	}
	layout = PARTITION_RANGES;
	fx = mk(PARTITION_FIXED, 1, 4, 8, 400, 1);
	dy = mk(PARTITION_DYNAMIC, 1, 4, 8, 400, 1);
	for (uint32_t b = 0; b < 400; b++) {
		load[b] = b < 100 && b % 3 == 0;
		nz[b] = (uint8_t)load[b];
	}
	partition_identity(fx, 400);
	assert_int_equal(partition_build(dy, load, 400, 1), 0);
	check_map(dy, 4, 8, 1);
	partition_count(fx, nz, cf);
	partition_count(dy, nz, cd);
	assert_int_equal(cf[0], 34);
	assert_true(partition_imbalance(cf, 4) == 4.0);
	assert_true(partition_imbalance(cd, 4) <= 9.0 * 4 / 34); /* 9, 9, 8, 8 */
	partition_destroy(fx);
	partition_destroy(dy);
	layout = PARTITION_LANES;
}

/* The same loads give the same map and tag in two objects (two workers). */
static void
test_partition_deterministic(void **state)
{
	struct partition *a = mk(PARTITION_DYNAMIC, 1, 4, 16, 4096, 16);
	struct partition *b = mk(PARTITION_DYNAMIC, 1, 4, 16, 4096, 16);
	uint32_t load[256], nba, nbb;
	uint64_t seed = 3;

	(void)state;
	for (uint32_t i = 0; i < 256; i++)
		load[i] = ina_splitmix64(&seed) % 3 == 0;
	assert_int_equal(partition_build(a, load, 256, 0), 0);
	assert_int_equal(partition_build(b, load, 256, 0), 0);
	partition_blocks(a, &nba);
	partition_blocks(b, &nbb);
	assert_int_equal(nba, nbb);
	assert_memory_equal(partition_blocks(a, NULL), partition_blocks(b, NULL),
			    nba * sizeof(uint32_t));
	assert_int_equal(partition_tag(a), partition_tag(b));
	assert_int_not_equal(partition_tag(a), 0);
	partition_destroy(a);
	partition_destroy(b);
}

/* Loads clustered on one partition under the fixed rule (every 8th block,
 * L = 8, K = 4: all on partition 0): the dynamic map spreads them to within
 * one block; on random skewed loads it is never worse than fixed. */
static void
test_partition_balances_skew(void **state)
{
	struct partition *fx = mk(PARTITION_FIXED, 1, 4, 8, 512, 1);
	struct partition *dy = mk(PARTITION_DYNAMIC, 1, 4, 8, 512, 1);
	uint32_t load[512], cf[4], cd[4];
	uint8_t nz[512];
	uint64_t seed = 11;

	(void)state;
	for (uint32_t b = 0; b < 512; b++) {
		load[b] = b % 8 == 0;
		nz[b] = (uint8_t)load[b];
	}
	partition_identity(fx, 512);
	assert_int_equal(partition_build(dy, load, 512, 0), 0);
	partition_count(fx, nz, cf);
	partition_count(dy, nz, cd);
	assert_int_equal(cf[0], 64);
	assert_int_equal(cf[1] + cf[2] + cf[3], 0);
	assert_true(partition_imbalance(cf, 4) == 4.0);
	for (int k = 0; k < 4; k++)
		assert_int_equal(cd[k], 16);
	assert_true(partition_imbalance(cd, 4) == 1.0);

	/* Random runs of non-zero blocks, L = 6 (partitions 0 and 1 own two
	 * lanes each): dynamic within one block of even, never worse. */
	partition_destroy(dy);
	partition_destroy(fx);
	dy = mk(PARTITION_DYNAMIC, 1, 4, 6, 512, 1);
	fx = mk(PARTITION_FIXED, 1, 4, 6, 512, 1);
	partition_identity(fx, 512);
	for (int trial = 0; trial < 200; trial++) {
		uint32_t lo, min = UINT32_MAX, max = 0;

		memset(nz, 0, sizeof(nz));
		for (int run = 0; run < 4; run++) {
			lo = (uint32_t)(ina_splitmix64(&seed) % 512);
			for (uint32_t b = lo; b < 512 && b < lo + 40; b += 1 + trial % 5)
				nz[b] = 1;
		}
		for (uint32_t b = 0; b < 512; b++)
			load[b] = nz[b];
		assert_int_equal(partition_build(dy, load, 512, 0), 0);
		partition_count(fx, nz, cf);
		partition_count(dy, nz, cd);
		for (int k = 0; k < 4; k++) {
			min = cd[k] < min ? cd[k] : min;
			max = cd[k] > max ? cd[k] : max;
		}
		assert_true(max - min <= 1);
		assert_true(partition_imbalance(cd, 4) <= partition_imbalance(cf, 4));
	}
	partition_destroy(fx);
	partition_destroy(dy);
}

/* Tags: 0 for the identity (also a dynamic map of no load), non-zero and
 * different for different maps. */
static void
test_partition_tag(void **state)
{
	struct partition *p = mk(PARTITION_DYNAMIC, 1, 2, 4, 64, 1);
	uint32_t load[64] = { 0 }, tags[3];

	(void)state;
	assert_int_equal(partition_build(p, load, 64, 0), 0);
	assert_true(partition_is_identity(p));
	assert_int_equal(partition_tag(p), 0);
	load[0] = load[2] = load[4] = load[6] = 1; /* all on partition 0 */
	assert_int_equal(partition_build(p, load, 64, 0), 0);
	tags[0] = partition_tag(p);
	load[6] = 0, load[8] = 1;
	assert_int_equal(partition_build(p, load, 64, 0), 0);
	tags[1] = partition_tag(p);
	assert_int_equal(partition_build(p, load, 63, 0), 0); /* another length */
	tags[2] = partition_tag(p);
	assert_int_not_equal(tags[0], 0);
	assert_int_not_equal(tags[1], 0);
	assert_int_not_equal(tags[0], tags[1]);
	assert_int_not_equal(tags[1], tags[2]);
	partition_destroy(p);
}

/* Gather then scatter gives back the tensor (short last block included), and
 * the wire order is the map's; flags scatter alike. */
static void
test_partition_gather_scatter(void **state)
{
	const uint32_t n = 1000; /* B = 16: 63 blocks, the last of 8 */
	struct partition *p = mk(PARTITION_DYNAMIC, 1, 3, 5, n, 16);
	float in[1000], wire[1000], out[1000];
	uint8_t wf[63], bf[63];
	uint32_t nb;
	const uint32_t *m;

	(void)state;
	for (uint32_t i = 0; i < n; i++)
		in[i] = (float)i + 0.5f;
	for (uint32_t i = 0; i < n; i++)
		in[i] = (i / 16) % 7 == 0 ? in[i] : 0.0f; /* every 7th block loaded */
	partition_observe(p, 0, in);
	assert_int_equal(partition_round(p, 1, 16), 0);
	m = partition_blocks(p, &nb);
	assert_int_equal(nb, 63);
	assert_false(partition_is_identity(p));
	check_map(p, 3, 5, 1);
	partition_gather(p, in, wire);
	for (uint32_t v = 0; v < nb; v++)
		for (uint32_t j = 0; j < 16 && v * 16 + j < n; j++)
			assert_true(wire[v * 16 + j] == in[m[v] * 16 + j]);
	memset(out, 0xff, sizeof(out));
	partition_scatter(p, wire, out);
	assert_memory_equal(in, out, sizeof(in));
	for (uint32_t v = 0; v < nb; v++)
		wf[v] = (uint8_t)v;
	partition_scatter_flags(p, wf, bf);
	for (uint32_t v = 0; v < nb; v++)
		assert_int_equal(bf[m[v]], v);
	partition_destroy(p);
}

/* Period 3: the identity until the first rebalance at round 3 (from round
 * 2's sum); the same map in rounds 4 and 5 (a sum observed at round 3 is not
 * kept); a change of B rebuilds from that same sum; round 6 rebalances from
 * round 5's sum. FIXED is always the identity. */
static void
test_partition_schedule(void **state)
{
	const uint32_t n = 4096;
	struct partition *p = mk(PARTITION_DYNAMIC, 3, 4, 8, n, 16);
	struct partition *f = mk(PARTITION_FIXED, 1, 4, 8, n, 16);
	struct partition *ref = mk(PARTITION_DYNAMIC, 1, 4, 8, n, 16);
	float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
	uint32_t load[256], tag3;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	for (uint32_t i = 0; i < n; i += 16 * 8)
		a[i + 3] = 1.0f; /* every 8th block of 16: all on partition 0 */
	for (uint32_t i = 0; i < n; i += 16 * 4)
		b[i] = 2.0f; /* every 4th block */
	for (uint32_t r = 0; r < 3; r++) {
		assert_int_equal(partition_round(p, r, 16), 0);
		assert_true(partition_is_identity(p));
		partition_observe(p, r, r == 2 ? a : b);
	}
	assert_int_equal(partition_round(p, 3, 16), 0);
	assert_int_equal(partition_rebalances(p), 1);
	for (uint32_t k = 0; k < 256; k++)
		load[k] = k % 8 == 0;
	assert_int_equal(partition_build(ref, load, 256, 0), 0);
	assert_memory_equal(partition_blocks(p, NULL), partition_blocks(ref, NULL),
			    256 * sizeof(uint32_t));
	tag3 = partition_tag(p);
	assert_int_not_equal(tag3, 0);
	partition_observe(p, 3, b); /* not a rebalancing boundary */
	assert_int_equal(partition_round(p, 4, 16), 0);
	assert_int_equal(partition_tag(p), tag3);
	/* B = 32 in round 5: the same sum (a) at the new B. */
	assert_int_equal(partition_round(p, 5, 32), 0);
	for (uint32_t k = 0; k < 128; k++)
		load[k] = k % 4 == 0;
	assert_int_equal(partition_build(ref, load, 128, 0), 0);
	assert_memory_equal(partition_blocks(p, NULL), partition_blocks(ref, NULL),
			    128 * sizeof(uint32_t));
	assert_int_equal(partition_rebalances(p), 1);
	partition_observe(p, 5, b);
	assert_int_equal(partition_round(p, 6, 16), 0);
	assert_int_equal(partition_rebalances(p), 2);
	assert_int_not_equal(partition_tag(p), tag3);
	assert_int_equal(partition_round(p, 6, 8), -EINVAL); /* below min_block */
	for (uint32_t r = 0; r < 4; r++) {
		partition_observe(f, r, a);
		assert_int_equal(partition_round(f, r + 1, 16), 0);
		assert_true(partition_is_identity(f));
	}
	free(a);
	free(b);
	partition_destroy(p);
	partition_destroy(f);
	partition_destroy(ref);
}

static void
test_partition_config(void **state)
{
	struct partition_config c = { .mode = PARTITION_DYNAMIC,
				      .period = 0,
				      .parts = 2,
				      .lanes = 4 };
	char err[128];

	(void)state;
	assert_int_equal(partition_config_check(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "period"));
	assert_null(partition_create(&c, 100, 16));
	assert_int_equal(errno, EINVAL);
	c.period = 1;
	c.parts = 0;
	assert_int_equal(partition_config_check(&c, err, sizeof(err)), -EINVAL);
	c.parts = PARTITION_MAX_PARTS + 1;
	assert_int_equal(partition_config_check(&c, err, sizeof(err)), -EINVAL);
	c.parts = 2;
	c.lanes = 0;
	assert_int_equal(partition_config_check(&c, err, sizeof(err)), -EINVAL);
	c.lanes = 4;
	assert_int_equal(partition_config_check(&c, err, sizeof(err)), 0);
	c.layout = (enum partition_layout)2;
	assert_int_equal(partition_config_check(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "layout"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_partition_permutation),
		cmocka_unit_test(test_partition_ranges),
		cmocka_unit_test(test_partition_deterministic),
		cmocka_unit_test(test_partition_balances_skew),
		cmocka_unit_test(test_partition_tag),
		cmocka_unit_test(test_partition_gather_scatter),
		cmocka_unit_test(test_partition_schedule),
		cmocka_unit_test(test_partition_config),
	};

	return cmocka_run_group_tests_name("partition", tests, NULL, NULL);
}
