/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of a burst's deferred per-byte work (host/src/payload_work.c)
 * and the threads that share it (host/src/workers.c, cfg.threads): the
 * bytes every encode, decode (averaged, copied) and tag writes are those of
 * doing each on the spot, whatever the number of threads, with every tag
 * made after the encodes of its packet; a full list runs itself on the
 * caller; held packets go back to their pool; 600 runs of random sizes a
 * thread count, with pauses that put the workers to sleep between some of
 * them, each task run exactly once (a task run twice would average twice,
 * one skipped would leave its poisoned bytes).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ina.h"
#include "ina/auth.h"
#include "ina/encoding.h"
#include "ina/pkt.h"
#include "ina/wire.h"
#include "payload_work.h"
#include "workers.h"

#define N_BLOCKS 96 /* tasks of each kind a run at most */
#define ELEMS 300   /* a block */
#define PKT_BYTES (INA_HDR_SIZE + ELEMS * 4)

struct bufs {
	float src[N_BLOCKS][ELEMS];	  /* what the encodes read */
	uint8_t pkt[N_BLOCKS][PKT_BYTES]; /* what they write (and the tags) */
	uint8_t rx[N_BLOCKS][ELEMS * 4];  /* what the decodes read */
	float dst[N_BLOCKS][ELEMS];	  /* what they write */
	float copy[N_BLOCKS][ELEMS];	  /* and copy */
};

static uint32_t rng = 12345;

static uint32_t
next_rand(void)
{
	rng = rng * 1664525u + 1013904223u;
	return rng >> 8;
}

static void
fill(struct bufs *b)
{
	for (unsigned k = 0; k < N_BLOCKS; k++) {
		for (unsigned i = 0; i < ELEMS; i++)
			b->src[k][i] = (float)((int)(next_rand() % 2001) - 1000) / 64.0f;
		for (unsigned i = 0; i < ELEMS * 4; i++)
			b->rx[k][i] = (uint8_t)next_rand();
	}
	/* Poison: a task skipped leaves these. */
	memset(b->pkt, 0xa5, sizeof(b->pkt));
	memset(b->dst, 0xa5, sizeof(b->dst));
	memset(b->copy, 0xa5, sizeof(b->copy));
}

/* 'n' encodes (each then tagged), 'n' decodes (every other averaged and
 * copied) into 'w', or done on the spot when 'w' is NULL. */
static void
record(struct payload_work *w, struct bufs *b, unsigned n, const struct ina_job_key *key)
{
	const struct ina_encoding_ops *enc = ina_encoding(INA_ENC_F32);

	for (unsigned k = 0; k < n; k++) {
		float avg = k % 2 ? 0.25f : 1.0f;
		float *copy = k % 2 ? b->copy[k] : NULL;

		memset(b->pkt[k], (int)k, INA_HDR_SIZE);
		if (w) {
			payload_work_encode(w, enc, b->pkt[k] + INA_HDR_SIZE, b->src[k], ELEMS, 0);
			payload_work_sign(w, key, b->pkt[k], PKT_BYTES);
			payload_work_decode(w, enc, b->dst[k], b->rx[k], ELEMS, 0, avg, copy);
			continue;
		}
		enc->encode(b->pkt[k] + INA_HDR_SIZE, b->src[k], ELEMS, 0);
		ina_auth_sign(key, b->pkt[k], PKT_BYTES);
		enc->decode(b->dst[k], b->rx[k], ELEMS, 0);
		/* As the engine: not multiplied by 1 (a signalling NaN the
		 * random bytes make would come out quiet). */
		for (unsigned i = 0; avg != 1.0f && i < ELEMS; i++)
			b->dst[k][i] *= avg;
		if (copy)
			memcpy(copy, b->dst[k], sizeof(b->dst[k]));
	}
}

static void
key_init(struct ina_job_key *key)
{
	uint8_t tenant[INA_TENANT_KEY_SIZE];

	for (unsigned i = 0; i < sizeof(tenant); i++)
		tenant[i] = (uint8_t)(i * 7 + 1);
	ina_auth_job_key(tenant, 41, key);
}

/* Same bytes as on the spot, for 1, 2 and 4 threads, over many runs of
 * random sizes; some runs after a pause long enough for the workers to
 * sleep. */
static void
same_bytes_any_threads(void **state)
{
	static struct bufs want, got;
	struct ina_job_key key;

	(void)state;
	key_init(&key);
	for (unsigned threads = 1; threads <= 4; threads *= 2) {
		struct workers *ws = threads > 1 ? workers_create(threads - 1) : NULL;
		struct payload_work *w = payload_work_create(2 * N_BLOCKS);

		assert_non_null(w);
		assert_true(threads == 1 || ws);
		for (unsigned run = 0; run < 600; run++) {
			unsigned n = next_rand() % (N_BLOCKS + 1);

			fill(&want);
			got = want;
			record(NULL, &want, n, &key);
			record(w, &got, n, &key);
			assert_int_equal(payload_work_count(w, 0), 2 * n);
			assert_int_equal(payload_work_count(w, 1), n);
			workers_run(ws, w);
			assert_int_equal(payload_work_count(w, 0), 0);
			assert_int_equal(payload_work_count(w, 1), 0);
			assert_memory_equal(got.pkt, want.pkt, sizeof(want.pkt));
			assert_memory_equal(got.dst, want.dst, sizeof(want.dst));
			assert_memory_equal(got.copy, want.copy, sizeof(want.copy));
			if (run % 150 == 149)
				usleep(1000); /* past the workers' poll: asleep */
		}
		payload_work_destroy(w);
		workers_destroy(ws);
	}
}

/* A list smaller than what is recorded runs itself on the caller as it
 * fills: the same bytes. */
static void
full_list_runs_itself(void **state)
{
	static struct bufs want, got;
	struct payload_work *w = payload_work_create(5);
	struct ina_job_key key;

	(void)state;
	assert_non_null(w);
	key_init(&key);
	fill(&want);
	got = want;
	record(NULL, &want, 40, &key);
	record(w, &got, 40, &key);
	assert_true(payload_work_count(w, 0) <= 5);
	workers_run(NULL, w);
	assert_memory_equal(got.pkt, want.pkt, sizeof(want.pkt));
	assert_memory_equal(got.dst, want.dst, sizeof(want.dst));
	assert_memory_equal(got.copy, want.copy, sizeof(want.copy));
	payload_work_destroy(w);
}

/* Held packets go back to their pool at the release, and when a full list
 * makes room; the destroy releases what is still held. */
static void
held_packets_freed(void **state)
{
	struct ina_pkt_pool *pool = ina_pkt_pool_create(16, 256);
	struct payload_work *w = payload_work_create(4);
	struct ina_pkt *p[10];

	(void)state;
	assert_non_null(pool);
	assert_non_null(w);
	for (unsigned i = 0; i < 10; i++) {
		p[i] = ina_pkt_alloc(pool);
		assert_non_null(p[i]);
		payload_work_hold(w, p[i]);
	}
	/* Two rounds of 4 gave back when the list filled; 2 held. */
	assert_int_equal(ina_pkt_pool_avail(pool), 6 + 8);
	payload_work_release(w);
	assert_int_equal(ina_pkt_pool_avail(pool), 16);
	p[0] = ina_pkt_alloc(pool);
	payload_work_hold(w, p[0]);
	payload_work_destroy(w);
	assert_int_equal(ina_pkt_pool_avail(pool), 16);
	ina_pkt_pool_destroy(pool);
}

static void
bad_input(void **state)
{
	(void)state;
	assert_null(payload_work_create(0));
	assert_null(workers_create(0));
	assert_null(workers_create(INA_THREADS_MAX));
	payload_work_destroy(NULL);
	workers_destroy(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(same_bytes_any_threads),
		cmocka_unit_test(full_list_runs_itself),
		cmocka_unit_test(held_packets_freed),
		cmocka_unit_test(bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
