/* SPDX-License-Identifier: MIT */
/*
 * Hierarchical aggregation in process (switch_sim/uplink.c, PROTOCOL.md
 * "Hierarchy"): a spine pipeline, two rack pipelines with an uplink to it,
 * and four real host engines, two per rack, joined by a deterministic
 * virtual network with a virtual clock and loss chosen per tier. Checks every
 * sum bit for bit in f32 and i32 (dyadic values: exact in any order and at
 * any i32 scale used here), with loss on the host links and on the uplinks,
 * a lost spine RESULT recovered through the rack's resend and the spine's
 * shadow, duplicated and reordered packets, the spine's next pointer running
 * ahead of a rack's local minimum,
 * JOIN end to end and its refusals (at the rack and at the spine), FIN end to
 * end (every switch frees the job), LEAVE of a rack's last rank, and the bytes per tier on dense data.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"
#include "ina.h"
#include "ina/auth.h"
#include "ina/encoding.h"
#include "ina/pkt.h"
#include "ina/subblock.h"
#include "ina/wire.h"
#include "pipeline.h"
#include "tenants.h"

#define MAX_RACKS 4 /* racks of 2 hosts unless opts.sizes says */
#define MAX_HOSTS (2 * MAX_RACKS)
#define ID_RACK 16 /* node ids: hosts 0..3, racks 16, 17, spine 32 */
#define ID_SPINE 32
#define JOB 7
#define TOKEN 0x1234567890abcdefull
/* Tenant mode: tenant 3's job 7, as its id goes on the wire. */
#define TENANT_IDX 3
#define TENANT_JOB ((TENANT_IDX << INA_TENANT_SHIFT) | JOB)
#define TENANT_KEY "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
#define LANES 4
#define MAXB 64
#define FLIGHT_MAX 8192
#define STEP_NS 2000ull
#define SEC 1000000000ull

struct flight {
	struct ina_pkt *pkt;
	int src, dst;
};

enum tier { T_HOST_UP, T_RACK_UP, T_SPINE_DOWN, T_RACK_DOWN, T_MAX };

struct net {
	struct ina_pkt_pool *pool;
	struct pipeline *spine;
	int nb_racks, nb_hosts;
	int rack_of[MAX_HOSTS]; /* host h is rank rank_of[h] of rack rack_of[h] */
	int rank_of[MAX_HOSTS];
	struct pipeline *rack[MAX_RACKS];
	struct engine *host[MAX_HOSTS];
	uint64_t now;
	uint64_t rng;
	double drop_rate[T_MAX]; /* per tier */
	double dup_rate[T_MAX];	 /* deliver a second copy, per tier */
	int shuffle;		 /* deliver each step's packets in random order */
	int drop_spine_results;	 /* spine RESULTs to rack 0 still to lose */
	uint8_t cut;		 /* every host's rounds cut into 2^cut
				  * sub-blocks (engine_set_cut) */
	uint64_t bytes[T_MAX];	 /* packet bytes delivered (ina header on) */
	uint64_t pkts[T_MAX];
	uint64_t dropped, duplicated;
	/* The spine's next pointer ahead of a rack's local minimum. */
	uint32_t up_next[MAX_RACKS][LANES];
	uint64_t spine_next_earlier;
	uint64_t cut_up; /* cut DATA, rack to spine, some sub-block absent */
	int forge;	 /* each packet between a rack and the spine is preceded
			  * by a copy with one payload bit flipped, its tag
			  * kept: an attacker on the uplink */
	uint64_t forged;
	struct tenants *tenants; /* tenant mode: every switch's */
	struct flight fl[FLIGHT_MAX];
	unsigned nb_fl;
};

static void
peer_of(struct ina_peer *p, int id)
{
	memset(p, 0, sizeof(*p));
	p->len = 2;
	p->bytes[0] = 0xb6;
	p->bytes[1] = (uint8_t)id;
}

static int
id_of(const struct ina_peer *p)
{
	return p->bytes[1];
}

static double
unit(struct net *n)
{
	n->rng ^= n->rng << 13;
	n->rng ^= n->rng >> 7;
	n->rng ^= n->rng << 17;
	return (double)(n->rng >> 11) * 0x1.0p-53;
}

static enum tier
tier_of(int src, int dst)
{
	if (src < ID_RACK)
		return T_HOST_UP;
	if (dst == ID_SPINE)
		return T_RACK_UP;
	if (src == ID_SPINE)
		return T_SPINE_DOWN;
	return T_RACK_DOWN;
}

struct opts {
	uint8_t enc;
	uint16_t spine_slot_elems; /* 0: MAXB */
	int rack0_no_job;	   /* rack 0 has no --uplink-job for the job */
	int nb_racks;		   /* 0: 2 */
	int sizes[MAX_RACKS];	   /* hosts per rack, 0: 2 */
	int cookies;		   /* every switch wants JOIN cookies */
	int tenants;		   /* tenant mode: every switch, tagged packets */
};

static void
net_init(struct net *n, const struct opts *o)
{
	struct pipeline_config pc;

	memset(n, 0, sizeof(*n));
	n->nb_racks = o->nb_racks ? o->nb_racks : 2;
	for (int k = 0; k < n->nb_racks; k++) {
		int size = o->sizes[k] ? o->sizes[k] : 2;

		for (int r = 0; r < size; r++) {
			assert_true(n->nb_hosts < MAX_HOSTS);
			n->rack_of[n->nb_hosts] = k;
			n->rank_of[n->nb_hosts++] = r;
		}
	}
	n->now = 1000000;
	n->rng = 0x9e3779b97f4a7c15ull;
	n->pool = ina_pkt_pool_create(4096, INA_HDR_SIZE + 4u * MAXB + 256);
	assert_non_null(n->pool);
	pipeline_config_init(&pc);
	pc.pool = n->pool;
	pc.nb_slots = 64;
	pc.slot_elems = o->spine_slot_elems ? o->spine_slot_elems : MAXB;
	pc.join_cookie = (uint8_t)(o->cookies || o->tenants);
	memset(pc.secret, 0x3c, sizeof(pc.secret));
	if (o->tenants) {
		static const char yaml[] = "tenants:\n"
					   "  - {name: carol, index: 3, key: " TENANT_KEY
					   ", jobs: 1, slots: 64, max_weight: 1}\n";
		char err[256];

		n->tenants = tenants_parse(yaml, sizeof(yaml) - 1, "t.yaml", err, sizeof(err));
		if (!n->tenants)
			fail_msg("%s", err);
		pc.tenants = n->tenants;
	}
	n->spine = pipeline_create(&pc);
	assert_non_null(n->spine);
	pc.slot_elems = MAXB;
	peer_of(&pc.uplink, ID_SPINE);
	for (int k = 0; k < n->nb_racks; k++) {
		char spec[32];

		snprintf(spec, sizeof(spec), "%u=%d/%d", o->tenants ? TENANT_JOB : JOB, k,
			 n->nb_racks);
		pc.nb_uplink_jobs = 1;
		assert_int_equal(pipeline_uplink_job_parse(spec, &pc.uplink_jobs[0]), 0);
		if (k == 0 && o->rack0_no_job)
			pc.uplink_jobs[0].job_id = JOB + 1;
		pc.secret[0] = (uint8_t)k; /* each switch its own secret */
		n->rack[k] = pipeline_create(&pc);
		assert_non_null(n->rack[k]);
	}
	for (int h = 0; h < n->nb_hosts; h++) {
		struct engine_config ec;

		engine_config_init(&ec);
		ec.job_id = JOB;
		if (o->tenants) {
			uint8_t key[INA_TENANT_KEY_SIZE];
			char err[128];

			assert_int_equal(ina_auth_key_parse(TENANT_KEY, key, err, sizeof(err)), 0);
			ec.job_id = TENANT_JOB;
			ec.auth = 1;
			ina_auth_job_key(key, TENANT_JOB, &ec.key);
		}
		ec.rank = (uint16_t)n->rank_of[h];
		ec.world = (uint16_t)(o->sizes[n->rack_of[h]] ? o->sizes[n->rack_of[h]] : 2);
		ec.lanes = LANES;
		ec.max_block = MAXB;
		ec.encoding = o->enc;
		ec.token = TOKEN;
		ec.pool = n->pool;
		peer_of(&ec.sw, ID_RACK + n->rack_of[h]);
		n->host[h] = engine_create(&ec);
		assert_non_null(n->host[h]);
	}
}

static void
net_fini(struct net *n)
{
	for (unsigned i = 0; i < n->nb_fl; i++)
		ina_pkt_free(n->fl[i].pkt);
	for (int h = 0; h < n->nb_hosts; h++)
		engine_destroy(n->host[h]);
	for (int k = 0; k < n->nb_racks; k++)
		pipeline_destroy(n->rack[k]);
	pipeline_destroy(n->spine);
	tenants_free(n->tenants);
	assert_int_equal(ina_pkt_pool_avail(n->pool), 4096);
	ina_pkt_pool_destroy(n->pool);
}

static void
put(struct net *n, struct ina_pkt *pkt, int src, int dst)
{
	enum tier t = tier_of(src, dst);

	if (t == T_SPINE_DOWN && dst == ID_RACK && n->drop_spine_results > 0 &&
	    pkt->data[1] == INA_T_RESULT) {
		n->drop_spine_results--;
		goto drop;
	}
	if (n->drop_rate[t] > 0 && unit(n) < n->drop_rate[t])
		goto drop;
	assert_true(n->nb_fl < FLIGHT_MAX - 2);
	if (n->forge && (t == T_RACK_UP || t == T_SPINE_DOWN) && pkt->len > INA_HDR_SIZE) {
		struct ina_pkt *c = ina_pkt_alloc(n->pool);

		assert_non_null(c);
		memcpy(c->data, pkt->data, pkt->len);
		c->len = pkt->len;
		c->peer = pkt->peer;
		c->data[c->len - 1] ^= 0x10;
		n->fl[n->nb_fl++] = (struct flight){ c, src, dst };
		n->forged++;
	}
	if (n->dup_rate[t] > 0 && unit(n) < n->dup_rate[t]) {
		struct ina_pkt *c = ina_pkt_alloc(n->pool);

		assert_non_null(c);
		memcpy(c->data, pkt->data, pkt->len);
		c->len = pkt->len;
		c->peer = pkt->peer;
		n->fl[n->nb_fl++] = (struct flight){ c, src, dst };
		n->duplicated++;
	}
	n->fl[n->nb_fl++] = (struct flight){ pkt, src, dst };
	return;
drop:
	n->dropped++;
	ina_pkt_free(pkt);
}

/* A switch's output: one copy per destination of a fan-out. */
static void
sw_out(struct net *n, struct ina_pkt *pkt, int src)
{
	if (!pkt->dsts) {
		put(n, pkt, src, id_of(&pkt->peer));
		return;
	}
	for (int r = 0; r < 64; r++) {
		struct ina_pkt *c;

		if (!(pkt->dst_mask >> r & 1))
			continue;
		c = ina_pkt_copy_for(n->pool, pkt, (unsigned)r);
		assert_non_null(c);
		put(n, c, src, id_of(&c->peer));
	}
	ina_pkt_free(pkt);
}

/* What the rack announced upstream against what the spine answered. */
static void
watch(struct net *n, const struct ina_pkt *pkt, int src, int dst)
{
	struct ina_hdr h;

	if (ina_wire_validate(pkt->data, pkt->len, NULL, &h) != INA_WIRE_OK || h.lane >= LANES)
		return;
	if (dst == ID_SPINE && h.type == INA_T_DATA)
		n->up_next[src - ID_RACK][h.lane] = h.next;
	if (dst == ID_SPINE && h.type == INA_T_DATA && h.sub_log > 0 && h.n_elems > 0 &&
	    pkt->len < INA_HDR_SIZE + ina_wire_mask_bytes(h.sub_log) +
			       (uint32_t)h.n_elems * ina_wire_elem_size(h.encoding))
		n->cut_up++; /* a union with a sub-block missing */
	if (src == ID_SPINE && h.type == INA_T_RESULT && h.next < n->up_next[dst - ID_RACK][h.lane])
		n->spine_next_earlier++;
}

static unsigned
deliver(struct net *n)
{
	static struct flight batch[FLIGHT_MAX];
	unsigned cnt = n->nb_fl;

	memcpy(batch, n->fl, cnt * sizeof(batch[0]));
	n->nb_fl = 0;
	for (unsigned i = cnt; n->shuffle && i > 1; i--) {
		unsigned k = (unsigned)(unit(n) * i);
		struct flight tmp = batch[i - 1];

		batch[i - 1] = batch[k];
		batch[k] = tmp;
	}
	for (unsigned i = 0; i < cnt; i++) {
		struct ina_pkt *pkt = batch[i].pkt, *out;
		int dst = batch[i].dst;
		enum tier t = tier_of(batch[i].src, dst);

		n->bytes[t] += pkt->len;
		n->pkts[t]++;
		watch(n, pkt, batch[i].src, dst);
		peer_of(&pkt->peer, batch[i].src);
		pkt->dsts = NULL;
		if (dst == ID_SPINE) {
			if (pipeline_rx_burst(n->spine, &pkt, 1, n->now, &out) == 1)
				sw_out(n, out, ID_SPINE);
		} else if (dst >= ID_RACK) {
			if (pipeline_rx_burst(n->rack[dst - ID_RACK], &pkt, 1, n->now, &out) == 1)
				sw_out(n, out, dst);
		} else {
			engine_rx(n->host[dst], &pkt, 1, n->now);
		}
	}
	return cnt;
}

static int
busy(struct net *n, int phase)
{
	for (int h = 0; h < n->nb_hosts; h++)
		if (engine_phase(n->host[h]) == phase && !engine_error(n->host[h]))
			return 1;
	return 0;
}

/* Runs until no host is in 'phase' (or one failed), or 60 s of virtual time. */
static void
run(struct net *n, int phase)
{
	uint64_t end = n->now + 60 * SEC;

	while (busy(n, phase) && n->now < end) {
		struct ina_pkt *out[64];
		unsigned moved = 0;

		for (int h = 0; h < n->nb_hosts; h++) {
			uint16_t k = engine_tx(n->host[h], n->now, out, 64);

			for (uint16_t i = 0; i < k; i++)
				put(n, out[i], h, id_of(&out[i]->peer));
			moved += k;
		}
		moved += deliver(n);
		pipeline_tick(n->spine, n->now);
		for (int k = 0; k < n->nb_racks; k++)
			pipeline_tick(n->rack[k], n->now);
		if (moved) {
			n->now += STEP_NS;
		} else {
			uint64_t d = UINT64_MAX;

			for (int h = 0; h < n->nb_hosts; h++) {
				uint64_t x = engine_next_deadline(n->host[h]);

				d = x < d ? x : d;
			}
			n->now = d > n->now && d != UINT64_MAX ? d : n->now + STEP_NS;
		}
	}
}

static void
join_all(struct net *n)
{
	for (int h = 0; h < n->nb_hosts; h++)
		assert_int_equal(engine_join(n->host[h], n->now), 0);
	run(n, ENGINE_JOINING);
}

/*
 * Host h's gradient of round 'round': k * 2^-10 (|k| <= 1023), times 2^8 on
 * rack 1 (i32: the exponents differ by tier), zero in whole blocks so that
 * the racks' next pointers differ: with 'dense' every block is non-zero;
 * 'dense' 2: every value of every worker just under 1, so that a sum of all
 * four needs the i32 headroom of the whole job, not only of a rack's two;
 * 'dense' 3: +-2^-149 on rack 0 only, so that the spine's exponent (-148)
 * handed down to a larger rack falls below a float's (PROTOCOL 5.10).
 */
static float
grad(int h, int rack, int round, uint32_t i, int dense)
{
	uint32_t b = i / 16;
	int k = (int)((i * 37u + (uint32_t)h * 101u + (uint32_t)round * 13u) % 2047u) - 1023;

	if (dense == 2) /* every worker at the top of the same exponent */
		return (float)(1023 - (int)(i % 3u)) * 0x1p-10f;
	if (dense == 3) /* the smallest float, on rack 0 only */
		return rack ? 0.0f : (i % 2 ? 0x1p-149f : -0x1p-149f);
	if (!dense && (b + (uint32_t)rack * 2u + (uint32_t)round) % 5u >= (rack ? 2u : 3u))
		return 0.0f;
	if (!dense && h % 2 == 1 && b % 3u == 0)
		return 0.0f;
	return (float)k * 0x1p-10f * (rack % 2 ? 256.0f : 1.0f);
}

#define N_ELEMS 600

/* Rounds of allreduce, every host's output checked against the exact sum. */
static void
rounds(struct net *n, int nb_rounds, int dense, uint16_t block_size)
{
	static float in[MAX_HOSTS][N_ELEMS], out[MAX_HOSTS][N_ELEMS];

	for (int r = 0; r < nb_rounds; r++) {
		for (int h = 0; h < n->nb_hosts; h++)
			for (uint32_t i = 0; i < N_ELEMS; i++)
				in[h][i] = grad(h, n->rack_of[h], r, i, dense);
		for (int h = 0; h < n->nb_hosts; h++) {
			engine_set_cut(n->host[h], n->cut);
			assert_int_equal(engine_allreduce(n->host[h], 1, in[h], out[h], N_ELEMS,
							  block_size, ENGINE_SUM, n->now),
					 0);
		}
		run(n, ENGINE_RUNNING);
		for (int h = 0; h < n->nb_hosts; h++) {
			if (engine_error(n->host[h]))
				fail_msg("round %d host %d: %s", r, h,
					 engine_error_msg(n->host[h]));
			assert_int_equal(engine_phase(n->host[h]), ENGINE_READY);
			for (uint32_t i = 0; i < N_ELEMS; i++) {
				double ref = 0;

				for (int g = 0; g < n->nb_hosts; g++)
					ref += (double)in[g][i];
				if (out[h][i] != (float)ref)
					fail_msg("round %d host %d element %u: %a, want %a", r, h,
						 i, (double)out[h][i], ref);
			}
		}
	}
}

static void
finish_all(struct net *n)
{
	for (int h = 0; h < n->nb_hosts; h++)
		engine_finish(n->host[h], n->now);
	run(n, ENGINE_FINISHING);
	for (int h = 0; h < n->nb_hosts; h++)
		assert_int_equal(engine_phase(n->host[h]), ENGINE_CLOSED);
}

static void
check_freed(struct net *n)
{
	/* The linger frees whatever a lost FIN_ACK left behind. */
	n->now += 5 * SEC;
	pipeline_tick(n->spine, n->now);
	for (int k = 0; k < n->nb_racks; k++) {
		pipeline_tick(n->rack[k], n->now);
		assert_int_equal(pipeline_nb_jobs(n->rack[k]), 0);
	}
	assert_int_equal(pipeline_nb_jobs(n->spine), 0);
}

static void
run_clean(uint8_t enc)
{
	struct opts o = { .enc = enc };
	struct net n;

	net_init(&n, &o);
	join_all(&n);
	for (int h = 0; h < n.nb_hosts; h++)
		assert_int_equal(engine_phase(n.host[h]), ENGINE_READY);
	rounds(&n, 4, 0, 16);
	assert_true(n.spine_next_earlier > 0);
	for (int k = 0; k < n.nb_racks; k++) {
		const struct pipeline_stats *st = pipeline_stats(n.rack[k]);

		/* Each local JOIN while the rack joins goes up (one in, one out). */
		assert_int_equal(st->up_joins, 2);
		assert_true(st->up_data > 0);
		assert_int_equal(st->up_resends, 0);
		assert_int_equal(st->up_results, st->up_data);
		assert_int_equal(st->results, st->up_results);
	}
	/* The spine saw two workers, the racks, and nothing else. */
	assert_int_equal(pipeline_stats(n.spine)->joins, 4);
	assert_int_equal(pipeline_stats(n.spine)->jobs_admitted, 1);
	assert_int_equal(pipeline_stats(n.spine)->results, pipeline_stats(n.rack[0])->up_results);
	finish_all(&n);
	for (int k = 0; k < n.nb_racks; k++) {
		assert_int_equal(pipeline_stats(n.rack[k])->up_fins, 1);
		assert_int_equal(pipeline_nb_jobs(n.rack[k]), 0);
	}
	assert_int_equal(pipeline_nb_jobs(n.spine), 0);
	net_fini(&n);
}

static void
clean_f32(void **state)
{
	(void)state;
	run_clean(INA_ENC_F32);
}

static void
clean_i32(void **state)
{
	(void)state;
	run_clean(INA_ENC_I32);
}

/* Every switch wants JOIN cookies (PROTOCOL 5.1): the hosts echo their
 * rack's, the rack its spine's (the ERROR COOKIE becomes its JOIN again at
 * once, one in, one out), and the job runs exact as without. */
static void
clean_cookies(void **state)
{
	struct opts o = { .enc = INA_ENC_F32, .cookies = 1 };
	struct net n;

	(void)state;
	net_init(&n, &o);
	join_all(&n);
	rounds(&n, 3, 0, 16);
	for (int k = 0; k < n.nb_racks; k++)
		assert_true(pipeline_stats(n.rack[k])->drop[PDROP_JOIN_UNPROVEN] >= 2);
	assert_true(pipeline_stats(n.spine)->drop[PDROP_JOIN_UNPROVEN] >= 2);
	assert_int_equal(pipeline_stats(n.spine)->jobs_admitted, 1);
	finish_all(&n);
	net_fini(&n);
}

/*
 * Tenant mode on every switch (issue 19): the racks and the spine take the
 * same tenants, each rack joins the spine as its tenant's job (its JOIN
 * tagged, the spine's cookie echoed) and tags what it sends up and checks
 * what comes down. An attacker on the uplinks sends a copy of each packet
 * between a rack and the spine ahead of it with one payload bit flipped:
 * every copy is dropped on its tag (auth_fail), none is answered, and every
 * sum stays exact, with loss on every tier; f32 and i32.
 */
static void
run_tenants(uint8_t enc)
{
	struct opts o = { .enc = enc, .tenants = 1 };
	uint64_t fails = 0;
	struct net n;

	net_init(&n, &o);
	n.forge = 1;
	for (int t = 0; t < T_MAX; t++)
		n.drop_rate[t] = 0.03;
	join_all(&n);
	rounds(&n, 4, 0, 16);
	rounds(&n, 2, 1, 32);
	fails = pipeline_stats(n.spine)->drop[PDROP_AUTH];
	for (int k = 0; k < n.nb_racks; k++) {
		const struct pipeline_stats *st = pipeline_stats(n.rack[k]);

		fails += st->drop[PDROP_AUTH];
		assert_true(st->drop[PDROP_AUTH] > 0); /* forged RESULTs came down */
		assert_true(st->up_results > 0);
	}
	/* Every forged copy that arrived was dropped on its tag (a lost one,
	 * or one whose job was freed, is not counted there). */
	assert_true(n.forged > 0);
	assert_true(fails > n.forged / 2 && fails <= n.forged);
	assert_true(pipeline_stats(n.spine)->drop[PDROP_AUTH] > 0);
	assert_int_equal(pipeline_stats(n.spine)->jobs_admitted, 1);
	n.forge = 0;
	finish_all(&n);
	check_freed(&n);
	net_fini(&n);
}

static void
tenants_f32(void **state)
{
	(void)state;
	run_tenants(INA_ENC_F32);
}

static void
tenants_i32(void **state)
{
	(void)state;
	run_tenants(INA_ENC_I32);
}

/* The first two spine RESULTs to rack 0 are lost: rack 0's hosts resend,
 * the rack resends its DATA, the spine answers from its shadow. */
static void
lost_spine_result(void **state)
{
	struct opts o = { .enc = INA_ENC_F32 };
	struct net n;

	(void)state;
	net_init(&n, &o);
	join_all(&n);
	n.drop_spine_results = 2;
	rounds(&n, 2, 0, 16);
	assert_int_equal(n.drop_spine_results, 0);
	assert_true(pipeline_stats(n.rack[0])->up_resends >= 2);
	assert_true(pipeline_stats(n.spine)->shadow_replies >= 2);
	finish_all(&n);
	check_freed(&n);
	net_fini(&n);
}

static void
run_lossy(uint8_t enc, uint64_t seed)
{
	struct opts o = { .enc = enc };
	struct net n;

	net_init(&n, &o);
	n.rng = seed;
	for (int t = 0; t < T_MAX; t++)
		n.drop_rate[t] = 0.05;
	join_all(&n);
	rounds(&n, 5, 0, 16);
	rounds(&n, 2, 1, 32);
	assert_true(n.dropped > 0);
	assert_true(pipeline_stats(n.rack[0])->up_resends + pipeline_stats(n.rack[1])->up_resends >
		    0);
	finish_all(&n);
	check_freed(&n);
	net_fini(&n);
}

/*
 * Real engines cutting their blocks into sub-blocks through the hierarchy:
 * blocks of 32 in 4 sub-blocks of 8 and of 64 in 8 of 8, zero in runs of 16
 * that differ by rack, round and rank, so masks differ per worker and the
 * racks' unions differ too; 5% loss with duplicates and reordering at every
 * tier; every sum exact in f32 and i32, and racks sent the spine unions
 * with sub-blocks absent.
 */
static void
run_cut_lossy(uint8_t enc, uint64_t seed)
{
	struct opts o = { .enc = enc };
	struct net n;

	net_init(&n, &o);
	n.rng = seed;
	n.shuffle = 1;
	for (int t = 0; t < T_MAX; t++) {
		n.drop_rate[t] = 0.05;
		n.dup_rate[t] = 0.05;
	}
	join_all(&n);
	n.cut = 2;
	rounds(&n, 4, 0, 32);
	n.cut = 3;
	rounds(&n, 2, 0, 64);
	rounds(&n, 1, 1, 64);
	assert_true(n.dropped > 0 && n.duplicated > 0);
	assert_true(n.cut_up > 0);
	finish_all(&n);
	check_freed(&n);
	net_fini(&n);
}

static void
cut_lossy(void **state)
{
	(void)state;
	run_cut_lossy(INA_ENC_F32, 0x51ab);
	run_cut_lossy(INA_ENC_I32, 0x77c1);
}

/* i32 with every value just under 2^0, four racks of two, then racks of
 * one and four: the local ranks scale for all the job's addends, not only
 * their rack's (their rack hands them the spine's exponent plus the spine's
 * headroom less their own), so no tier saturates, every rack scales alike,
 * and the sum is exact. */
static void
i32_headroom(void **state)
{
	struct opts o = { .enc = INA_ENC_I32, .nb_racks = 4 };
	struct opts uneven = { .enc = INA_ENC_I32, .sizes = { 1, 4 } };
	struct net n;

	(void)state;
	net_init(&n, &uneven);
	join_all(&n);
	rounds(&n, 3, 0, 16);
	rounds(&n, 1, 2, 16);
	/* Rack 1 (four ranks) gets exponent -148 + 1 - 2 = -149: carried as
	 * it is, not clamped to -148, or its ranks would read every sum twice
	 * too large. */
	rounds(&n, 1, 3, 16);
	finish_all(&n);
	net_fini(&n);
	net_init(&n, &o);
	join_all(&n);
	rounds(&n, 2, 2, 16);
	assert_int_equal(pipeline_stats(n.spine)->saturated, 0);
	for (int k = 0; k < n.nb_racks; k++)
		assert_int_equal(pipeline_stats(n.rack[k])->saturated, 0);
	finish_all(&n);
	net_fini(&n);
}

/* Duplicated and reordered packets at every tier, with some loss: late
 * and repeated RESULTs, JOIN_ACKs and FIN_ACKs from the spine are counted
 * and dropped, never stored twice; every sum stays exact. */
static void
run_dup_reorder(uint8_t enc, uint64_t seed)
{
	struct opts o = { .enc = enc };
	struct net n;

	net_init(&n, &o);
	n.rng = seed;
	n.shuffle = 1;
	for (int t = 0; t < T_MAX; t++) {
		n.dup_rate[t] = 0.1;
		n.drop_rate[t] = 0.02;
	}
	join_all(&n);
	rounds(&n, 4, 0, 16);
	rounds(&n, 1, 1, 32);
	assert_true(n.duplicated > 0);
	assert_true(pipeline_stats(n.rack[0])->drop[PDROP_UP_STALE] +
			    pipeline_stats(n.rack[1])->drop[PDROP_UP_STALE] >
		    0);
	finish_all(&n);
	check_freed(&n);
	net_fini(&n);
}

static void
dup_reorder(void **state)
{
	(void)state;
	for (uint64_t s = 1; s <= 3; s++) {
		run_dup_reorder(INA_ENC_F32, 0x51afd6c3b7e2a9f1ull * s);
		run_dup_reorder(INA_ENC_I32, 0x3c6ef372fe94f82bull * s);
	}
}

static void
lossy_f32(void **state)
{
	(void)state;
	for (uint64_t s = 1; s <= 4; s++)
		run_lossy(INA_ENC_F32, 0x9e3779b97f4a7c15ull * s);
}

static void
lossy_i32(void **state)
{
	(void)state;
	for (uint64_t s = 1; s <= 4; s++)
		run_lossy(INA_ENC_I32, 0x2545f4914f6cdd1dull * s);
}

/* Dense data: each rack->spine link carries half the bytes of its two host
 * links, so both uplinks together about a quarter of... see the assertion. */
static void
bytes_dense(void **state)
{
	struct opts o = { .enc = INA_ENC_F32 };
	struct net n;
	uint64_t host_up, rack_up;

	(void)state;
	net_init(&n, &o);
	join_all(&n);
	memset(n.bytes, 0, sizeof(n.bytes));
	rounds(&n, 3, 1, MAXB);
	host_up = n.bytes[T_HOST_UP];
	rack_up = n.bytes[T_RACK_UP];
	print_message("bytes host->rack %llu rack->spine %llu spine->rack %llu rack->host %llu\n",
		      (unsigned long long)host_up, (unsigned long long)rack_up,
		      (unsigned long long)n.bytes[T_SPINE_DOWN],
		      (unsigned long long)n.bytes[T_RACK_DOWN]);
	/* One rack's uplink against its rack's two host links: a half; one
	 * uplink against all four host links: a quarter (headers and all). */
	assert_true(rack_up * 2 <= host_up + host_up / 50);
	assert_true(rack_up * 2 >= host_up - host_up / 50);
	assert_true(n.bytes[T_SPINE_DOWN] * 2 <= n.bytes[T_RACK_DOWN] + n.bytes[T_RACK_DOWN] / 50);
	/* What the racks count of their DATA is what crossed the uplinks
	 * (udp_hier.sh computes the uplink bytes from these counters). */
	{
		uint64_t counted = 0;

		for (int k = 0; k < n.nb_racks; k++) {
			const struct pipeline_stats *st = pipeline_stats(n.rack[k]);

			counted += st->up_data * INA_HDR_SIZE + st->up_bytes;
		}
		assert_int_equal(counted, rack_up);
	}
	finish_all(&n);
	net_fini(&n);
}

/* A rack with no rank in the spine's job refuses the JOIN; the other rack's
 * hosts join the spine and wait (their rack is admitted; the job has no
 * second rack). */
static void
refused_at_rack(void **state)
{
	struct opts o = { .enc = INA_ENC_F32, .rack0_no_job = 1 };
	struct net n;

	(void)state;
	net_init(&n, &o);
	join_all(&n);
	for (int h = 0; h < 2; h++) {
		assert_int_equal(engine_error(n.host[h]), INA_EREFUSED);
		assert_non_null(strstr(engine_error_msg(n.host[h]), "uplink-job"));
	}
	for (int h = 2; h < 4; h++)
		assert_int_equal(engine_phase(n.host[h]), ENGINE_READY);
	assert_int_equal(pipeline_stats(n.rack[0])->jobs_refused, 2);
	assert_int_equal(pipeline_stats(n.rack[0])->up_joins, 0);
	net_fini(&n);
}

/* The spine refuses (its slots are narrower than the job's blocks): the
 * ERROR goes down to every host, the racks free the job. */
static void
refused_at_spine(void **state)
{
	struct opts o = { .enc = INA_ENC_F32, .spine_slot_elems = MAXB / 2 };
	struct net n;

	(void)state;
	net_init(&n, &o);
	join_all(&n);
	for (int h = 0; h < n.nb_hosts; h++) {
		assert_int_equal(engine_error(n.host[h]), INA_EREFUSED);
		assert_non_null(strstr(engine_error_msg(n.host[h]), "slot width"));
	}
	for (int k = 0; k < n.nb_racks; k++) {
		assert_true(pipeline_stats(n.rack[k])->up_errors >= 1);
		n.now += 1000;
		pipeline_tick(n.rack[k], n.now);
		assert_int_equal(pipeline_nb_jobs(n.rack[k]), 0);
	}
	net_fini(&n);
}

/* bf16 is refused at a rack (its partial sum would be rounded twice). */
static void
refused_bf16(void **state)
{
	struct opts o = { .enc = INA_ENC_BF16 };
	struct net n;

	(void)state;
	net_init(&n, &o);
	join_all(&n);
	for (int h = 0; h < n.nb_hosts; h++) {
		assert_int_equal(engine_error(n.host[h]), INA_EREFUSED);
		assert_non_null(strstr(engine_error_msg(n.host[h]), "bf16"));
	}
	assert_int_equal(pipeline_stats(n.spine)->joins, 0);
	net_fini(&n);
}

/* Junk from the spine's address is counted, never trusted. */
static void
spine_junk(void **state)
{
	struct opts o = { .enc = INA_ENC_F32 };
	struct net n;
	struct ina_pkt *pkt, *out;
	struct ina_hdr h;

	uint64_t stale;

	(void)state;
	net_init(&n, &o);
	join_all(&n);
	/* (the spine's answer to the rack's second JOIN came after the first) */
	stale = pipeline_stats(n.rack[0])->drop[PDROP_UP_STALE];
	/* A RESULT for a block nobody waits on, and one with a wrong epoch. */
	for (int i = 0; i < 2; i++) {
		pkt = ina_pkt_alloc(n.pool);
		assert_non_null(pkt);
		memset(&h, 0, sizeof(h));
		h.version = INA_WIRE_VERSION;
		h.type = INA_T_RESULT;
		h.encoding = INA_ENC_F32;
		h.job_id = JOB;
		h.epoch = i == 0 ? 1 : 99;
		h.rank = INA_RANK_SWITCH;
		h.tensor_len = 64;
		h.block_size = 16;
		h.block = 1;
		h.lane = 1;
		h.next = INA_BLOCK_END;
		h.token = TOKEN;
		ina_wire_encode_hdr(&h, pkt->data);
		pkt->len = INA_HDR_SIZE;
		peer_of(&pkt->peer, ID_SPINE);
		assert_int_equal(pipeline_rx_burst(n.rack[0], &pkt, 1, n.now, &out), 0);
	}
	assert_int_equal(pipeline_stats(n.rack[0])->drop[PDROP_UP_STALE], stale + 1);
	assert_int_equal(pipeline_stats(n.rack[0])->drop_wire[INA_WIRE_WRONG_EPOCH], 1);
	/* An ERROR with a code this version does not have is not passed on. */
	pkt = ina_pkt_alloc(n.pool);
	assert_non_null(pkt);
	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = INA_T_ERROR;
	h.encoding = INA_ENC_F32;
	h.job_id = JOB;
	h.rank = INA_RANK_SWITCH;
	h.status = INA_WERR_MAX + 1;
	h.token = TOKEN;
	ina_wire_encode_hdr(&h, pkt->data);
	memcpy(pkt->data + INA_HDR_SIZE, "x", 1);
	pkt->len = INA_HDR_SIZE + 1;
	peer_of(&pkt->peer, ID_SPINE);
	assert_int_equal(pipeline_rx_burst(n.rack[0], &pkt, 1, n.now, &out), 0);
	assert_int_equal(pipeline_stats(n.rack[0])->drop[PDROP_UNEXPECTED], 1);
	assert_int_equal(pipeline_stats(n.rack[0])->up_errors, 0);
	rounds(&n, 1, 0, 16);
	finish_all(&n);
	net_fini(&n);
}

/* DATA for a rack's job the spine has not admitted yet (a guessed epoch:
 * no rank has a JOIN_ACK) is dropped, never sent up as a partial sum
 * without an upstream epoch (the fuzzer found it). */
static void
data_while_joining(void **state)
{
	struct opts o = { .enc = INA_ENC_F32 };
	struct net n;
	struct ina_pkt *pkt, *out;
	struct ina_hdr h;
	uint8_t join[INA_HDR_SIZE + sizeof(struct ina_wire_join)];
	struct ina_peer spine_peer;

	(void)state;
	net_init(&n, &o);
	peer_of(&spine_peer, ID_SPINE);
	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = INA_T_JOIN;
	h.encoding = INA_ENC_F32;
	h.job_id = JOB;
	h.token = TOKEN;
	for (uint16_t r = 0; r < 2; r++) {
		h.rank = r;
		ina_wire_encode_hdr(&h, join);
		ina_wire_encode_join(2, LANES, MAXB, join + INA_HDR_SIZE);
		pkt = ina_pkt_alloc(n.pool);
		memcpy(pkt->data, join, sizeof(join));
		pkt->len = sizeof(join);
		peer_of(&pkt->peer, r);
		assert_int_equal(pipeline_rx_burst(n.rack[0], &pkt, 1, n.now, &out), 1);
		assert_true(ina_peer_equal(&out->peer, &spine_peer));
		assert_int_equal(out->data[1], INA_T_JOIN); /* up to the spine */
		ina_pkt_free(out);
	}
	/* Both ranks' DATA with the epoch the rack will give (1): dropped. */
	for (uint16_t r = 0; r < 2; r++) {
		h.type = INA_T_DATA;
		h.epoch = 1;
		h.rank = r;
		h.tensor_len = 4;
		h.block_size = 4;
		h.next = INA_BLOCK_END;
		pkt = ina_pkt_alloc(n.pool);
		ina_wire_encode_hdr(&h, pkt->data);
		pkt->len = INA_HDR_SIZE;
		peer_of(&pkt->peer, r);
		assert_int_equal(pipeline_rx_burst(n.rack[0], &pkt, 1, n.now, &out), 0);
	}
	assert_int_equal(pipeline_stats(n.rack[0])->drop[PDROP_NOT_JOINED], 2);
	assert_int_equal(pipeline_stats(n.rack[0])->up_data, 0);
	net_fini(&n);
}

/* The last local rank of a rack leaves mid-round: the rack leaves the
 * spine's job, the spine tells the other rack, whose ranks fail with LEFT. */
static void
leave_up(void **state)
{
	static float in[N_ELEMS], out[N_ELEMS];
	struct opts o = { .enc = INA_ENC_F32, .sizes = { 1, 2 } };
	struct net n;

	(void)state;
	net_init(&n, &o);
	join_all(&n);
	for (int i = 0; i < N_ELEMS; i++)
		in[i] = 1.0f;
	for (int h = 0; h < n.nb_hosts; h++)
		assert_int_equal(engine_allreduce(n.host[h], 1, in, out, N_ELEMS, 16, ENGINE_SUM,
						  n.now),
				 0);
	engine_leave(n.host[0], n.now);
	run(&n, ENGINE_RUNNING);
	for (int h = 1; h < n.nb_hosts; h++)
		assert_int_equal(engine_error(n.host[h]), INA_ELEFT);
	assert_int_equal(pipeline_stats(n.rack[0])->up_leaves, 1);
	assert_int_equal(pipeline_stats(n.rack[1])->up_errors, 1);
	check_freed(&n);
	net_fini(&n);
}

/* A rack that stops mid-round tells its ranks (SHUTDOWN) and leaves the
 * spine's job, so the other rack's ranks fail at once (LEFT). */
static void
rack_shutdown(void **state)
{
	static float in[N_ELEMS], out[N_ELEMS];
	struct opts o = { .enc = INA_ENC_F32 };
	struct ina_pkt *sd[4];
	struct net n;
	uint16_t nb;

	(void)state;
	net_init(&n, &o);
	join_all(&n);
	for (int i = 0; i < N_ELEMS; i++)
		in[i] = 1.0f;
	for (int h = 0; h < n.nb_hosts; h++)
		assert_int_equal(engine_allreduce(n.host[h], 1, in, out, N_ELEMS, 16, ENGINE_SUM,
						  n.now),
				 0);
	/* One packet of room: the rack's job needs two, so none now. */
	assert_int_equal(pipeline_shutdown(n.rack[0], sd, 1), 1);
	assert_int_equal(sd[0]->data[1], INA_T_ERROR);
	sw_out(&n, sd[0], ID_RACK);
	assert_int_equal(pipeline_nb_jobs(n.rack[0]), 0);
	assert_int_equal(pipeline_stats(n.rack[0])->up_leaves, 0);
	net_fini(&n);

	/* Room for both: the ERROR down and the LEAVE up. */
	net_init(&n, &o);
	join_all(&n);
	for (int h = 0; h < n.nb_hosts; h++)
		assert_int_equal(engine_allreduce(n.host[h], 1, in, out, N_ELEMS, 16, ENGINE_SUM,
						  n.now),
				 0);
	nb = pipeline_shutdown(n.rack[0], sd, 4);
	assert_int_equal(nb, 2);
	assert_int_equal(sd[0]->data[1], INA_T_ERROR);
	assert_int_equal(sd[1]->data[1], INA_T_LEAVE);
	for (uint16_t i = 0; i < nb; i++)
		sw_out(&n, sd[i], ID_RACK);
	run(&n, ENGINE_RUNNING);
	for (int h = 0; h < 2; h++)
		assert_int_equal(engine_error(n.host[h]), INA_ENOSWITCH);
	for (int h = 2; h < 4; h++)
		assert_int_equal(engine_error(n.host[h]), INA_ELEFT);
	assert_int_equal(pipeline_stats(n.rack[0])->up_leaves, 1);
	net_fini(&n);
}

/*
 * Sub-blocks through the hierarchy (hand-built DATA: blocks of 16 cut into 4
 * sub-blocks of 4): each rack sends its ranks' union up as a masked DATA,
 * the spine sums the racks' unions, and every host gets the RESULT of the
 * whole union with exact sums.
 */
static void
sub_blocks_up(void **state)
{
	static const uint64_t masks[4] = { 0x1, 0x4, 0x6, 0 }; /* host 3: header-only */
	struct opts o = { .enc = INA_ENC_F32 };
	struct ina_sub_cut c = ina_sub_cut(16, 2, 16);
	float x[4][16], want[16] = { 0 }, got[16];
	struct ina_pkt *res[MAX_HOSTS] = { NULL };
	struct net n;

	(void)state;
	net_init(&n, &o);
	join_all(&n);
	for (int h = 0; h < 4; h++) {
		struct ina_sub_mask m = { { masks[h], 0 } };
		struct ina_pkt *p = ina_pkt_alloc(n.pool);
		struct ina_hdr d;

		assert_non_null(p);
		for (int i = 0; i < 16; i++) {
			x[h][i] = (float)((h + 1) * 32 + i) * 0x1p-6f;
			if (masks[h] >> (i / 4) & 1)
				want[i] += x[h][i];
		}
		memset(&d, 0, sizeof(d));
		d.version = INA_WIRE_VERSION;
		d.type = INA_T_DATA;
		d.encoding = INA_ENC_F32;
		d.job_id = JOB;
		d.epoch = engine_epoch(n.host[h]);
		d.rank = (uint16_t)n.rank_of[h];
		d.token = TOKEN;
		d.tensor_id = 3;
		d.round = 1;
		d.tensor_len = 16;
		d.block_size = 16;
		d.sub_log = 2;
		d.next = INA_BLOCK_END;
		d.n_elems = masks[h] ? 16 : 0;
		ina_wire_encode_hdr(&d, p->data);
		p->len = INA_HDR_SIZE;
		if (masks[h])
			p->len += (uint32_t)ina_sub_encode(p->data + INA_HDR_SIZE, x[h], &m, &c,
							   ina_encoding(INA_ENC_F32), 0);
		put(&n, p, h, ID_RACK + n.rack_of[h]);
	}
	/* Up, up, down, down: the hosts' copies are kept, not handed to the
	 * engines (they run no round). */
	for (int step = 0; step < 8 && n.nb_fl; step++) {
		static struct flight batch[FLIGHT_MAX];
		unsigned cnt = n.nb_fl;

		memcpy(batch, n.fl, cnt * sizeof(batch[0]));
		n.nb_fl = 0;
		for (unsigned i = 0; i < cnt; i++) {
			struct ina_pkt *pkt = batch[i].pkt, *out;
			int dst = batch[i].dst;

			peer_of(&pkt->peer, batch[i].src);
			pkt->dsts = NULL;
			if (dst < ID_RACK) {
				assert_null(res[dst]);
				res[dst] = pkt;
				continue;
			}
			if (pipeline_rx_burst(dst == ID_SPINE ? n.spine : n.rack[dst - ID_RACK],
					      &pkt, 1, n.now, &out) == 1)
				sw_out(&n, out, dst);
		}
	}
	for (int h = 0; h < 4; h++) {
		struct ina_sub_mask m;
		struct ina_hdr rh;

		assert_non_null(res[h]);
		assert_int_equal(ina_wire_validate(res[h]->data, res[h]->len, NULL, &rh),
				 INA_WIRE_OK);
		assert_int_equal(rh.type, INA_T_RESULT);
		assert_int_equal(rh.sub_log, 2);
		assert_int_equal(res[h]->len, INA_HDR_SIZE + 4 + 12 * 4);
		m = ina_sub_decode(got, res[h]->data + INA_HDR_SIZE, &c, ina_encoding(INA_ENC_F32),
				   0, 1);
		assert_true(m.w[0] == 0x7 && m.w[1] == 0);
		assert_memory_equal(got, want, sizeof(want));
		ina_pkt_free(res[h]);
	}
	/* Rack 0 sent its union {0, 2}, rack 1 its {1, 2}: mask and 8 values. */
	for (int k = 0; k < 2; k++) {
		assert_int_equal(pipeline_stats(n.rack[k])->up_data, 1);
		assert_int_equal(pipeline_stats(n.rack[k])->up_bytes, 4 + 8 * 4);
		assert_int_equal(pipeline_stats(n.rack[k])->up_results, 1);
	}
	net_fini(&n);
}

static void
parse(void **state)
{
	struct pipeline_uplink_job uj;

	(void)state;
	assert_int_equal(pipeline_uplink_job_parse("7=1/2", &uj), 0);
	assert_int_equal(uj.job_id, 7);
	assert_int_equal(uj.rank, 1);
	assert_int_equal(uj.world, 2);
	assert_int_equal(pipeline_uplink_job_parse("4294967295=63/64", &uj), 0);
	assert_int_equal(pipeline_uplink_job_parse("7=2/2", &uj), -1);
	assert_int_equal(pipeline_uplink_job_parse("7=0/65", &uj), -1);
	assert_int_equal(pipeline_uplink_job_parse("7=0/0", &uj), -1);
	assert_int_equal(pipeline_uplink_job_parse("7=-1/2", &uj), -1);
	assert_int_equal(pipeline_uplink_job_parse("7:0/2", &uj), -1);
	assert_int_equal(pipeline_uplink_job_parse("7=0/2x", &uj), -1);
	assert_int_equal(pipeline_uplink_job_parse("4294967296=0/2", &uj), -1);
	assert_int_equal(pipeline_uplink_job_parse("", &uj), -1);
}

/* A rack refuses partitions and replication at creation. */
static void
config_refused(void **state)
{
	struct ina_pkt_pool *pool = ina_pkt_pool_create(4, 256);
	struct pipeline_config pc;

	(void)state;
	pipeline_config_init(&pc);
	pc.pool = pool;
	peer_of(&pc.uplink, ID_SPINE);
	pc.part_count = 2;
	assert_null(pipeline_create(&pc));
	pc.part_count = 1;
	peer_of(&pc.replica, 40);
	assert_null(pipeline_create(&pc));
	ina_pkt_pool_destroy(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse),
		cmocka_unit_test(config_refused),
		cmocka_unit_test(clean_f32),
		cmocka_unit_test(clean_i32),
		cmocka_unit_test(clean_cookies),
		cmocka_unit_test(tenants_f32),
		cmocka_unit_test(tenants_i32),
		cmocka_unit_test(i32_headroom),
		cmocka_unit_test(lost_spine_result),
		cmocka_unit_test(lossy_f32),
		cmocka_unit_test(lossy_i32),
		cmocka_unit_test(dup_reorder),
		cmocka_unit_test(cut_lossy),
		cmocka_unit_test(bytes_dense),
		cmocka_unit_test(refused_at_rack),
		cmocka_unit_test(refused_at_spine),
		cmocka_unit_test(refused_bf16),
		cmocka_unit_test(spine_junk),
		cmocka_unit_test(data_while_joining),
		cmocka_unit_test(leave_up),
		cmocka_unit_test(rack_shutdown),
		cmocka_unit_test(sub_blocks_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
