/* SPDX-License-Identifier: MIT */
/*
 * A worker's engines towards several switches (host/src/egroup.h) in one
 * process: four workers, each an engine group, and K switch pipelines on a
 * small lossy virtual network (a FIFO, a virtual clock that jumps to the
 * next timer). Each worker runs the tensor round with a partition map of
 * layout PARTITION_RANGES over the K switches, as ina_allreduce() does.
 * Checked: every sum bit for bit (dyadic data) under loss, with K = 2 and 3,
 * fixed and dynamic maps; each switch completes only its run; the non-zero
 * blocks per switch all on switch 0 under the fixed map (the data sits in the
 * tensor's first quarter) and even under the dynamic one once it has seen
 * the pattern; a one-element allreduce goes to switch 0 alone; a round the
 * engines would refuse is refused before any starts; and a worker
 * that lists the switches in another order makes the round fail on every
 * worker, with the runs' ids (egroup_salt) keeping the switches from ever
 * adding one run to another, although here the runs have the same length
 * and blocks. The rounds cut into sub-blocks (egroup_set_cut, the cut of
 * the tensor round's step) sum the same bits on every switch's run.
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
#include "ina/wire.h"
#include "pipeline.h"
#include "tensor_round.h"

#define WORLD 4
#define MAXK 3
#define LANES 8
#define B 16
#define N 4096
#define NB (N / B)
#define ROUNDS 6
#define TID 33
#define QMAX 65536
#define STEP_NS 2000
#define SW_ID(k) (0xf0 + (k))

struct flight {
	struct ina_pkt *pkt;
	int src, dst; /* rank, or SW_ID(k) */
};

struct net {
	struct ina_pkt_pool *pool;
	struct pipeline *sw[MAXK];
	uint16_t k;
	struct egroup *g[WORLD];
	uint64_t now, rng;
	double drop;
	uint64_t dropped;
};

static struct flight q[QMAX], batch[QMAX];
static unsigned nq;
static float grad[WORLD][N], outs[WORLD][N], want[N];

static void
peer_of(struct ina_peer *p, int id)
{
	memset(p, 0, sizeof(*p));
	p->len = 2;
	p->bytes[0] = 0xa5;
	p->bytes[1] = (uint8_t)id;
}

static void
put(struct net *n, struct ina_pkt *pkt, int src, int dst)
{
	n->rng ^= n->rng << 13;
	n->rng ^= n->rng >> 7;
	n->rng ^= n->rng << 17;
	if ((double)(n->rng >> 11) * 0x1.0p-53 < n->drop || nq == QMAX) {
		n->dropped++;
		ina_pkt_free(pkt);
		return;
	}
	q[nq++] = (struct flight){ pkt, src, dst };
}

/* A switch's output: to one worker, or one copy per destination. */
static void
switch_out(struct net *n, struct ina_pkt *pkt, int src)
{
	if (!pkt->dsts) {
		put(n, pkt, src, pkt->peer.bytes[1]);
		return;
	}
	for (int r = 0; r < 64; r++) {
		struct ina_pkt *c;

		if (!(pkt->dst_mask >> r & 1))
			continue;
		c = ina_pkt_copy_for(n->pool, pkt, (unsigned)r);
		assert_non_null(c);
		put(n, c, src, c->peer.bytes[1]);
	}
	ina_pkt_free(pkt);
}

static unsigned
step(struct net *n)
{
	struct ina_pkt *out[64];
	unsigned moved = 0, nb;

	for (int r = 0; r < WORLD; r++) {
		uint16_t c = egroup_tx(n->g[r], n->now, out, 64);

		for (uint16_t i = 0; i < c; i++)
			put(n, out[i], r, out[i]->peer.bytes[1]);
		moved += c;
	}
	nb = nq;
	memcpy(batch, q, nb * sizeof(q[0]));
	nq = 0;
	for (unsigned i = 0; i < nb; i++) {
		struct ina_pkt *pkt = batch[i].pkt, *res;

		peer_of(&pkt->peer, batch[i].src); /* as a port reports it */
		pkt->dsts = NULL;
		if (batch[i].dst >= SW_ID(0)) {
			int k = batch[i].dst - SW_ID(0);

			if (pipeline_rx_burst(n->sw[k], &pkt, 1, n->now, &res) == 1)
				switch_out(n, res, batch[i].dst);
		} else {
			egroup_rx(n->g[batch[i].dst], &pkt, 1, n->now);
		}
	}
	for (uint16_t k = 0; k < n->k; k++) {
		uint32_t freed[16];

		while (pipeline_tick_freed(n->sw[k], n->now, freed, 16) > 0)
			;
	}
	return moved + nb;
}

/* Runs while a worker is in 'phase' without error; 0 if all left it well. */
static int
run(struct net *n, int phase)
{
	uint64_t end = n->now + 60ull * 1000000000ull;
	int busy = 1;

	while (busy && n->now < end) {
		busy = 0;
		for (int r = 0; r < WORLD; r++)
			busy |= egroup_phase(n->g[r]) == phase && !egroup_error(n->g[r]);
		if (!busy)
			break;
		if (step(n)) {
			n->now += STEP_NS;
		} else {
			uint64_t d = UINT64_MAX;

			for (int r = 0; r < WORLD; r++) {
				uint64_t x = egroup_next_deadline(n->g[r]);

				d = x < d ? x : d;
			}
			n->now = d > n->now && d != UINT64_MAX ? d : n->now + STEP_NS;
		}
	}
	for (int r = 0; r < WORLD; r++)
		if (egroup_error(n->g[r]) || egroup_phase(n->g[r]) == phase)
			return -1;
	return 0;
}

/* 'k' switches, every worker listing them in order (worker 3 reversed when
 * 'reverse'); joined. */
static void
net_init(struct net *n, uint16_t k, double drop, int reverse)
{
	struct engine_config ec;

	memset(n, 0, sizeof(*n));
	n->k = k;
	n->now = 1000000;
	n->rng = 0x9e3779b97f4a7c15ull;
	n->drop = drop;
	nq = 0;
	n->pool = ina_pkt_pool_create(8192, INA_HDR_SIZE + 4u * B + 256);
	assert_non_null(n->pool);
	for (uint16_t s = 0; s < k; s++) {
		struct pipeline_config pc;

		pipeline_config_init(&pc);
		pc.nb_slots = 64;
		pc.slot_elems = B;
		pc.pool = n->pool;
		n->sw[s] = pipeline_create(&pc);
		assert_non_null(n->sw[s]);
	}
	engine_config_init(&ec);
	ec.job_id = 7;
	ec.world = WORLD;
	ec.lanes = LANES;
	ec.max_block = B;
	ec.encoding = INA_ENC_F32;
	ec.token = 0x1234567890abcdefull;
	ec.pool = n->pool;
	for (int r = 0; r < WORLD; r++) {
		struct ina_peer sws[MAXK];

		for (uint16_t s = 0; s < k; s++)
			peer_of(&sws[s], SW_ID(reverse && r == 3 ? k - 1 - s : s));
		ec.rank = (uint16_t)r;
		n->g[r] = egroup_create(&ec, sws, k);
		assert_non_null(n->g[r]);
		assert_int_equal(egroup_join(n->g[r], n->now), 0);
	}
	assert_int_equal(run(n, ENGINE_JOINING), 0);
}

static void
net_fini(struct net *n)
{
	for (unsigned i = 0; i < nq; i++)
		ina_pkt_free(q[i].pkt);
	nq = 0;
	for (int r = 0; r < WORLD; r++)
		egroup_destroy(n->g[r]);
	for (uint16_t s = 0; s < n->k; s++)
		pipeline_destroy(n->sw[s]);
	ina_pkt_pool_destroy(n->pool);
}

/* Round r: dyadic values (exact in any order) in the even blocks of the
 * tensor's first quarter, plus two blocks at random. */
static void
make_round(int r, uint16_t sub)
{
	uint64_t st = 77 + (uint64_t)r;

	memset(grad, 0, sizeof(grad));
	for (uint32_t b = 0; b < NB; b++) {
		int on = (b < NB / 4 && b % 2 == 0) || b == (uint32_t)(90 + 31 * r) % NB ||
			 b == (uint32_t)(200 + 17 * r) % NB;

		for (int w = 0; on && w < WORLD; w++)
			for (uint32_t i = 0; i < B; i++)
				grad[w][b * B + i] =
					(float)((int)(ina_splitmix64(&st) % 2047) - 1023) / 1024.0f;
		/* Cut: sub-block b mod 4 zero everywhere, some others on a few
		 * workers only. */
		for (int w = 0; on && sub && w < WORLD; w++)
			for (uint32_t i = 0; i < B; i++)
				if (i / sub == b % 4 || (b + i / sub + (uint32_t)w) % 3 == 0)
					grad[w][b * B + i] = 0.0f;
	}
	for (uint32_t i = 0; i < N; i++)
		want[i] = grad[0][i] + grad[1][i] + grad[2][i] + grad[3][i];
}

static void
nonzero_results(const struct net *n, uint64_t *res)
{
	for (uint16_t s = 0; s < n->k; s++) {
		const struct pipeline_stats *ps = pipeline_stats(n->sw[s]);

		res[s] = ps->results - ps->results_empty - ps->results_deferred;
	}
}

/* ROUNDS rounds on 'k' switches, blocks cut into sub-blocks of 'sub'
 * elements (0: uncut); max[r] = the most non-zero blocks one switch
 * completed in round r, total[r] = all switches'. */
static void
rounds_cut(uint16_t k, enum partition_mode mode, uint16_t sub, uint64_t *max, uint64_t *total)
{
	struct tround_config tc;
	struct tround *tr[WORLD];
	struct net n;
	char err[256];

	memset(&tc, 0, sizeof(tc));
	tc.tensor_id = TID;
	tc.n = N;
	tc.max_block = B;
	tc.sub_block = sub;
	tc.encoding = INA_ENC_F32;
	tc.world = WORLD;
	tc.lanes = LANES;
	tc.part = (struct partition_config){ .mode = mode,
					     .layout = PARTITION_RANGES,
					     .period = 2,
					     .parts = k,
					     .lanes = LANES };
	net_init(&n, k, 0.03, 0);
	for (int w = 0; w < WORLD; w++) {
		tr[w] = tround_create(&tc, err, sizeof(err));
		if (!tr[w])
			fail_msg("%s", err);
	}
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t before[MAXK], after[MAXK];
		struct tround_step st[WORLD];

		make_round(r, sub);
		nonzero_results(&n, before);
		for (int w = 0; w < WORLD; w++) {
			assert_int_equal(tround_begin(tr[w], grad[w], &st[w]), 0);
			assert_int_equal(st[w].tag, st[0].tag);
			assert_int_equal(st[w].sub_log, sub ? 2 : 0);
			egroup_set_cut(n.g[w], st[w].sub_log);
			assert_int_equal(egroup_allreduce(n.g[w], TID ^ st[w].tag, st[w].send,
							  st[w].out ? st[w].out : outs[w], N, B,
							  ENGINE_SUM, n.now),
					 0);
		}
		assert_int_equal(run(&n, ENGINE_RUNNING), 0);
		for (int w = 0; w < WORLD; w++) {
			tround_scatter(tr[w], outs[w]);
			tround_end(tr[w], outs[w]);
			assert_memory_equal(outs[w], want, sizeof(want));
		}
		nonzero_results(&n, after);
		max[r] = total[r] = 0;
		for (uint16_t s = 0; s < k; s++) {
			uint64_t d = after[s] - before[s];

			max[r] = d > max[r] ? d : max[r];
			total[r] += d;
		}
		assert_true(mode == PARTITION_DYNAMIC || r < 2 || st[0].tag == 0);
	}
	assert_true(n.dropped > 0);
	for (int w = 0; w < WORLD; w++) {
		egroup_finish(n.g[w], n.now);
		tround_destroy(tr[w]);
	}
	assert_int_equal(run(&n, ENGINE_FINISHING), 0);
	for (uint16_t s = 0; s < k; s++)
		assert_int_equal(pipeline_nb_jobs(n.sw[s]), 0);
	net_fini(&n);
}

static void
rounds(uint16_t k, enum partition_mode mode, uint64_t *max, uint64_t *total)
{
	rounds_cut(k, mode, 0, max, total);
}

/* Fixed: the first quarter is switch 0's (K = 2: 33 or 34 non-zero blocks
 * of 34 there). Dynamic, period 2: rebuilt at rounds 2 and 4, then within a
 * few blocks of even. Every sum exact under 3% loss. */
static void
test_egroup_sums_and_balance(void **state)
{
	uint64_t max[ROUNDS], total[ROUNDS];

	(void)state;
	for (uint16_t k = 2; k <= 3; k++) {
		rounds(k, PARTITION_FIXED, max, total);
		for (int r = 0; r < ROUNDS; r++)
			assert_true(max[r] * 10 >= total[r] * 9); /* >= 90% on one */
		rounds(k, PARTITION_DYNAMIC, max, total);
		for (int r = 2; r < ROUNDS; r++)
			assert_true(max[r] * k <= total[r] + 3 * k); /* within 3 of even */
	}
	/* Cut into 4 sub-blocks of 4: the same sums, blocks and balance. */
	rounds_cut(3, PARTITION_DYNAMIC, 4, max, total);
	for (int r = 2; r < ROUNDS; r++)
		assert_true(max[r] * 3 <= total[r] + 3 * 3);
}

/* A one-element allreduce (a barrier) is switch 0's alone; the split of a
 * tensor follows egroup_run(). */
static void
test_egroup_small(void **state)
{
	struct net n;
	float one[WORLD], sum[WORLD];

	(void)state;
	net_init(&n, 3, 0.0, 0);
	for (int w = 0; w < WORLD; w++) {
		one[w] = 1.0f;
		assert_int_equal(egroup_allreduce(n.g[w], 1, &one[w], &sum[w], 1, B, ENGINE_SUM,
						  n.now),
				 0);
	}
	/* Refused on every engine alike before any starts: busy, bad sizes. */
	assert_int_equal(egroup_allreduce(n.g[0], 2, grad[0], outs[0], N, B, ENGINE_SUM, n.now),
			 -EBUSY);
	assert_int_equal(run(&n, ENGINE_RUNNING), 0);
	for (int w = 0; w < WORLD; w++)
		assert_true(sum[w] == 4.0f);
	assert_int_equal(egroup_allreduce(n.g[0], 2, grad[0], outs[0], 0, B, ENGINE_SUM, n.now),
			 -EINVAL);
	assert_int_equal(egroup_allreduce(n.g[0], 2, grad[0], outs[0], N, 2 * B, ENGINE_SUM, n.now),
			 -EINVAL);
	/* A cut B is no multiple of: 16 elements in 32 sub-blocks. */
	egroup_set_cut(n.g[0], 5);
	assert_int_equal(egroup_allreduce(n.g[0], 2, grad[0], outs[0], N, B, ENGINE_SUM, n.now),
			 -EINVAL);
	assert_int_equal(egroup_phase(n.g[0]), ENGINE_READY);
	assert_int_equal(pipeline_stats(n.sw[0])->results, 1);
	assert_int_equal(pipeline_stats(n.sw[1])->results, 0);
	assert_int_equal(pipeline_stats(n.sw[2])->results, 0);
	for (int w = 0; w < WORLD; w++) {
		struct engine_stats es;

		egroup_stats(n.g[w], &es);
		assert_int_equal(es.rounds, 1);
	}
	net_fini(&n);
}

/* Worker 3 lists the two switches the other way round: its run 0 goes to
 * switch 1 and its run 1 to switch 0. The runs have the same length and
 * block numbers, so only the id (egroup_salt) tells them apart: no switch
 * completes a block, and every worker fails the round. */
static void
test_egroup_order_mismatch(void **state)
{
	struct net n;

	(void)state;
	assert_int_equal(egroup_salt(0), 0);
	assert_int_not_equal(egroup_salt(1), 0);
	net_init(&n, 2, 0.0, 1);
	make_round(0, 0);
	for (int w = 0; w < WORLD; w++)
		assert_int_equal(egroup_allreduce(n.g[w], TID, grad[w], outs[w], N, B, ENGINE_SUM,
						  n.now),
				 0);
	assert_int_equal(run(&n, ENGINE_RUNNING), -1);
	for (int w = 0; w < WORLD; w++)
		assert_int_not_equal(egroup_error(n.g[w]), 0);
	for (uint16_t s = 0; s < 2; s++) {
		assert_int_equal(pipeline_stats(n.sw[s])->results, 0);
		assert_true(pipeline_stats(n.sw[s])->drop[PDROP_NO_MATCH] > 0);
	}
	assert_non_null(strstr(egroup_error_msg(n.g[0]), "switch "));
	net_fini(&n);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_egroup_sums_and_balance),
		cmocka_unit_test(test_egroup_small),
		cmocka_unit_test(test_egroup_order_mismatch),
	};

	return cmocka_run_group_tests_name("egroup", tests, NULL, NULL);
}
