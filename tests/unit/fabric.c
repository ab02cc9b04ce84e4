/* SPDX-License-Identifier: MIT */
/*
 * The in-process test fabric (fabric.h): a FIFO of packets in flight between
 * host engines and a switch pipeline, a virtual clock that jumps to the next
 * timer when nothing is in flight, and fault injection by sequence number or
 * seeded probability. A partitioned switch is fed the way switch_lcores
 * feeds its lcores (fabric.h). Each packet in flight knows its sender, whose
 * address the receiver sees, as a port would report it.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"

#define FLIGHT_MAX 65536
/* Packets in a fabric's pool. */
#define POOL_PKTS 8192
/* Virtual time one delivery step takes: a small link latency. */
#define STEP_NS 2000

struct flight {
	struct ina_pkt *pkt;
	int src; /* a host's address (its rank unless moved), FABRIC_SWITCH or
		  * FABRIC_REPLICA */
	int dst;
};

static struct flight flights[FLIGHT_MAX];
static unsigned nb_flights;

#if defined(__SANITIZE_ADDRESS__)
#define FABRIC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FABRIC_ASAN 1
#endif
#endif
#ifdef FABRIC_ASAN
#include <sanitizer/asan_interface.h>

/*
 * The pool of the last fabric_fini(), every packet back, kept for the next
 * fabric_init() of the same buffer size: a test that builds hundreds of
 * fabrics (test_failover kills the primary at every packet in turn) spent
 * most of its time under AddressSanitizer mapping, poisoning and
 * quarantining a fresh pool of 8,192 buffers each time (without ASan a
 * fresh pool costs next to nothing, and one kept would change what glibc's
 * malloc maps for the engines and pipelines: there, no spare). It comes back as
 * ina_pkt_pool_create() makes one: the first get returns the first packet,
 * every packet's fields as new, no allocation failure counted. While kept,
 * its packets and buffers are poisoned, so that under ASan a packet used
 * after its fabric's end is still caught, as in freed memory.
 */
static struct ina_pkt_pool *spare;
static struct ina_pkt *spare_pkts[POOL_PKTS]; /* in the pool's order (its array's) */

/* The kept pool's packets and buffers usable again. */
static void
spare_unpoison(void)
{
	for (unsigned i = 0; i < POOL_PKTS; i++) {
		ASAN_UNPOISON_MEMORY_REGION(spare_pkts[i], sizeof(*spare_pkts[i]));
		ASAN_UNPOISON_MEMORY_REGION(spare_pkts[i]->data, spare_pkts[i]->cap);
	}
}

static void
spare_drop(void)
{
	if (!spare)
		return;
	spare_unpoison();
	ina_pkt_pool_destroy(spare);
	spare = NULL;
}

__attribute__((destructor)) static void
spare_fini(void)
{
	spare_drop();
}

static struct ina_pkt_pool *
pool_get(uint32_t buf_size)
{
	struct ina_pkt_pool *pool;

	if (spare && spare->buf_size == buf_size) {
		spare_unpoison();
		pool = spare;
		spare = NULL;
		return pool;
	}
	spare_drop();
	pool = ina_pkt_pool_create(POOL_PKTS, buf_size);
	assert(pool);
	return pool;
}

static void
pool_put(struct ina_pkt_pool *pool)
{
	static struct ina_pkt *got[POOL_PKTS];
	struct ina_pkt *first;
	unsigned n;

	/* A pool some packet of which was not given back goes. */
	if (ina_pkt_pool_avail(pool) != POOL_PKTS) {
		ina_pkt_pool_destroy(pool);
		return;
	}
	spare_drop();
	n = ina_pkt_alloc_bulk(pool, got, POOL_PKTS);
	assert(n == POOL_PKTS);
	/* The pool's packets are one array: put each at its index. */
	first = got[0];
	for (unsigned i = 1; i < n; i++)
		if (got[i] < first)
			first = got[i];
	for (unsigned i = 0; i < n; i++) {
		assert((size_t)(got[i] - first) < n);
		spare_pkts[got[i] - first] = got[i];
	}
	/* Given back last to first: the first packet on top, as when new. */
	for (unsigned i = n; i-- > 0;) {
		memset(&spare_pkts[i]->peer, 0, sizeof(spare_pkts[i]->peer));
		spare_pkts[i]->priv = NULL;
		ina_pkt_free(spare_pkts[i]);
	}
	pool->nb_alloc_fail = 0;
	for (unsigned i = 0; i < n; i++) {
		ASAN_POISON_MEMORY_REGION(spare_pkts[i]->data, spare_pkts[i]->cap);
		ASAN_POISON_MEMORY_REGION(spare_pkts[i], sizeof(*spare_pkts[i]));
	}
	spare = pool;
}
#else
static struct ina_pkt_pool *
pool_get(uint32_t buf_size)
{
	struct ina_pkt_pool *pool = ina_pkt_pool_create(POOL_PKTS, buf_size);

	assert(pool);
	return pool;
}

static void
pool_put(struct ina_pkt_pool *pool)
{
	ina_pkt_pool_destroy(pool);
}
#endif

void
fabric_peer(struct ina_peer *peer, int rank)
{
	memset(peer, 0, sizeof(*peer));
	peer->len = 2;
	peer->bytes[0] = 0xa5;
	peer->bytes[1] = (uint8_t)(rank == FABRIC_SWITCH    ? 0xff
				   : rank == FABRIC_REPLICA ? 0xfe
							    : rank);
}

static int
peer_rank(const struct ina_peer *peer)
{
	return peer->bytes[1] == 0xff	? FABRIC_SWITCH
	       : peer->bytes[1] == 0xfe ? FABRIC_REPLICA
					: peer->bytes[1];
}

static uint64_t
rng_next(struct fabric *f)
{
	f->rng ^= f->rng << 13;
	f->rng ^= f->rng >> 7;
	f->rng ^= f->rng << 17;
	return f->rng;
}

static double
rng_unit(struct fabric *f)
{
	return (double)(rng_next(f) >> 11) * 0x1.0p-53;
}

void
fabric_init(struct fabric *f, uint16_t world, uint16_t lanes, uint16_t max_block, uint8_t encoding,
	    const struct pipeline_config *pcfg, const struct engine_config *ecfg)
{
	struct pipeline_config pc;

	memset(f, 0, sizeof(*f));
	f->faults.drop_seq = -1;
	f->kill_primary_seq = -1;
	f->lose_announce_to = -1;
	f->rng = 0x9e3779b97f4a7c15ull;
	f->world = world;
	f->now = 1000000;
	f->pool = pool_get(INA_HDR_SIZE + 4u * max_block + 256);
	if (pcfg) {
		pc = *pcfg;
	} else {
		pipeline_config_init(&pc);
		pc.nb_slots = 256;
		pc.slot_elems = max_block;
	}
	pc.pool = f->pool;
	if (ecfg && ecfg->replica.len) {
		struct pipeline_config rc = pc;

		fabric_peer(&rc.primary, FABRIC_SWITCH);
		f->replica = pipeline_create(&rc);
		assert(f->replica);
		fabric_peer(&pc.replica, FABRIC_REPLICA);
	}
	f->sw = pipeline_create(&pc);
	assert(f->sw);
	f->parts[0] = f->sw;
	f->nb_parts = 1;
	for (uint16_t r = 0; r < world; r++) {
		struct engine_config ec;

		if (ecfg)
			ec = *ecfg;
		else
			engine_config_init(&ec);
		/* Tenant mode (ecfg->auth): the config's job id (the tenant's
		 * index on top) and key; else job 7 and a token. */
		ec.job_id = ecfg && ecfg->auth ? ecfg->job_id : 7;
		ec.rank = r;
		ec.world = world;
		ec.lanes = lanes;
		ec.max_block = max_block;
		ec.encoding = encoding;
		ec.token = ecfg && ecfg->auth ? 0 : 0x1234567890abcdefull;
		ec.pool = f->pool;
		fabric_peer(&ec.sw, FABRIC_SWITCH);
		if (ec.replica.len)
			fabric_peer(&ec.replica, FABRIC_REPLICA);
		f->hosts[r] = engine_create(&ec);
		assert(f->hosts[r]);
		f->addr[r] = (uint8_t)r;
		if (r == 0)
			f->ecfg = ec;
	}
	nb_flights = 0;
}

void
fabric_reopen(struct fabric *f, uint16_t r, uint8_t addr)
{
	struct engine_config ec = f->ecfg;

	assert(r < f->world && addr < 0xfe);
	for (uint16_t q = 0; q < f->world; q++)
		assert(q == r || f->addr[q] != addr);
	engine_destroy(f->hosts[r]);
	ec.rank = r;
	f->hosts[r] = engine_create(&ec);
	assert(f->hosts[r]);
	f->addr[r] = addr;
}

/* The host at address 'addr', or -1. */
static int
host_at(const struct fabric *f, int addr)
{
	for (uint16_t r = 0; r < f->world; r++)
		if (f->addr[r] == addr)
			return r;
	return -1;
}

void
fabric_fini(struct fabric *f)
{
	for (unsigned i = 0; i < nb_flights; i++)
		ina_pkt_free(flights[i].pkt);
	nb_flights = 0;
	for (uint16_t r = 0; r < f->world; r++)
		engine_destroy(f->hosts[r]);
	pipeline_destroy(f->sw);
	pipeline_destroy(f->replica);
	for (uint16_t k = 1; k < f->nb_parts; k++)
		pipeline_destroy(f->parts[k]);
	pool_put(f->pool);
}

void
fabric_kill_primary(struct fabric *f)
{
	f->primary_dead = 1;
	f->killed_at_ns = f->now;
}

void
fabric_partition(struct fabric *f, uint16_t k, const struct pipeline_config *pcfg)
{
	struct pipeline_config pc;

	assert(k >= 1 && k <= FABRIC_MAX_PARTS && f->nb_parts == 1);
	if (pcfg) {
		pc = *pcfg;
	} else {
		pipeline_config_init(&pc);
		pc.nb_slots = 256;
		pc.slot_elems = (uint16_t)((f->pool->buf_size - INA_HDR_SIZE - 256) / 4);
	}
	pc.pool = f->pool;
	pc.part_count = k;
	pipeline_destroy(f->sw);
	for (uint16_t i = 0; i < k; i++) {
		pc.part_index = i;
		f->parts[i] = pipeline_create(&pc);
		assert(f->parts[i]);
	}
	f->sw = f->parts[0];
	f->nb_parts = k;
}

/* The switch receives one packet: steered to its partition, JOIN/FIN/LEAVE
 * copied to the replicas first (in tenant mode only with a good tag, as
 * switch_lcores does). Returns the answer or NULL. */
static struct ina_pkt *
switch_in(struct fabric *f, struct ina_pkt *pkt)
{
	struct ina_pkt *out;
	uint16_t part = 0;

	if (f->tap_in)
		f->tap_in(f->tap_arg, pkt);
	if (f->nb_parts > 1 && pipeline_steer(pkt, f->nb_parts, &part) == PSTEER_ALL &&
	    pipeline_authentic(f->sw, pkt)) {
		for (uint16_t k = 1; k < f->nb_parts; k++) {
			struct ina_pkt *c = ina_pkt_alloc(f->pool);

			assert(c);
			memcpy(c->data, pkt->data, pkt->len);
			c->len = pkt->len;
			c->peer = pkt->peer;
			pipeline_rx_quiet(f->parts[k], &c, 1, f->now);
		}
	}
	/* f->sw, not parts[0]: a test may have swapped in its own pipeline. */
	return pipeline_rx_burst(part ? f->parts[part] : f->sw, &pkt, 1, f->now, &out) == 1 ? out
											    : NULL;
}

static void
switch_tick(struct fabric *f)
{
	uint32_t freed[16];
	uint16_t nb;

	while ((nb = pipeline_tick_freed(f->sw, f->now, freed, 16)) > 0)
		for (uint16_t k = 1; k < f->nb_parts; k++)
			for (uint16_t i = 0; i < nb; i++)
				pipeline_job_free(f->parts[k], freed[i]);
	while (f->replica && pipeline_tick_freed(f->replica, f->now, freed, 16) > 0)
		;
}

/* Puts 'pkt' on the wire from 'src' to 'dst', applying the faults. Takes
 * ownership. */
static void
wire_put(struct fabric *f, struct ina_pkt *pkt, int src, int dst)
{
	uint64_t seq = f->seq++;

	if ((int64_t)seq == f->kill_primary_seq)
		fabric_kill_primary(f);
	if (f->primary_dead && f->revive_after_ns && f->now >= f->killed_at_ns + f->revive_after_ns)
		f->primary_dead = 0;
	if (f->primary_dead && (src == FABRIC_SWITCH || dst == FABRIC_SWITCH)) {
		f->killed++;
		ina_pkt_free(pkt);
		return;
	}
	if (src == FABRIC_REPLICA && dst == f->lose_announce_to && pkt->len >= INA_HDR_SIZE &&
	    pkt->data[1] == INA_T_FAILOVER) {
		f->lose_announce_to = -1;
		f->dropped++;
		ina_pkt_free(pkt);
		return;
	}
	if ((int64_t)seq == f->faults.drop_seq ||
	    (f->faults.drop_rate > 0 && rng_unit(f) < f->faults.drop_rate) ||
	    nb_flights >= FLIGHT_MAX - 1) {
		f->dropped++;
		ina_pkt_free(pkt);
		return;
	}
	if (f->faults.dup_rate > 0 && rng_unit(f) < f->faults.dup_rate) {
		struct ina_pkt *c = ina_pkt_alloc(f->pool);

		if (c) {
			memcpy(c->data, pkt->data, pkt->len);
			c->len = pkt->len;
			c->peer = pkt->peer;
			flights[nb_flights++] = (struct flight){ c, src, dst };
		}
	}
	flights[nb_flights++] = (struct flight){ pkt, src, dst };
}

/* Sends an output of switch 'src': one copy per destination of a fan-out. */
static void
switch_out(struct fabric *f, struct ina_pkt *pkt, int src)
{
	if (f->tap)
		f->tap(f->tap_arg, pkt);
	if (!pkt->dsts) {
		wire_put(f, pkt, src, peer_rank(&pkt->peer));
		return;
	}
	for (int r = 0; r < 64; r++) {
		struct ina_pkt *c;

		if (!(pkt->dst_mask >> r & 1))
			continue;
		c = ina_pkt_copy_for(f->pool, pkt, (unsigned)r);
		assert(c);
		wire_put(f, c, src, peer_rank(&c->peer));
	}
	ina_pkt_free(pkt);
}

/* Delivers every packet now in flight (in FIFO or shuffled order). */
static unsigned
deliver(struct fabric *f)
{
	static struct flight batch[FLIGHT_MAX];
	unsigned n = nb_flights;

	memcpy(batch, flights, n * sizeof(batch[0]));
	nb_flights = 0;
	if (f->faults.shuffle) {
		for (unsigned i = n; i > 1; i--) {
			unsigned j = (unsigned)(rng_next(f) % i);
			struct flight t = batch[i - 1];

			batch[i - 1] = batch[j];
			batch[j] = t;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		struct ina_pkt *pkt = batch[i].pkt;

		if (f->faults.delay_rate > 0 && rng_unit(f) < f->faults.delay_rate &&
		    nb_flights < FLIGHT_MAX - 1) {
			flights[nb_flights++] = batch[i];
			continue;
		}

		/* The receiver sees the sender's address as a port would. */
		fabric_peer(&pkt->peer, batch[i].src);
		pkt->dsts = NULL;
		if (batch[i].dst == FABRIC_SWITCH) {
			struct ina_pkt *out = switch_in(f, pkt);

			if (out)
				switch_out(f, out, FABRIC_SWITCH);
		} else if (batch[i].dst == FABRIC_REPLICA) {
			struct ina_pkt *out;

			if (f->replica && pipeline_rx_burst(f->replica, &pkt, 1, f->now, &out) == 1)
				switch_out(f, out, FABRIC_REPLICA);
			else if (!f->replica)
				ina_pkt_free(pkt);
		} else if (host_at(f, batch[i].dst) >= 0) {
			engine_rx(f->hosts[host_at(f, batch[i].dst)], &pkt, 1, f->now);
		} else {
			f->unreachable++;
			ina_pkt_free(pkt);
		}
	}
	return n;
}

static unsigned
collect(struct fabric *f)
{
	struct ina_pkt *out[64];
	unsigned total = 0;

	for (uint16_t r = 0; r < f->world; r++) {
		uint16_t n = engine_tx(f->hosts[r], f->now, out, 64);

		for (uint16_t i = 0; i < n; i++)
			wire_put(f, out[i], f->addr[r], peer_rank(&out[i]->peer));
		total += n;
	}
	return total;
}

static int
any_in(struct fabric *f, int phase)
{
	for (uint16_t r = 0; r < f->world; r++) {
		int ph = engine_phase(f->hosts[r]);
		int ends_on_error = phase == ENGINE_JOINING || phase == ENGINE_RUNNING;

		if (ph == phase && !(ends_on_error && engine_error(f->hosts[r])))
			return 1;
	}
	return 0;
}

int
fabric_run(struct fabric *f, int phase, uint64_t limit_ns)
{
	uint64_t end = f->now + limit_ns;

	while (any_in(f, phase) && f->now < end) {
		unsigned moved;

		for (uint16_t r = 0; f->fin_when_done && r < f->world; r++)
			if (engine_phase(f->hosts[r]) == ENGINE_READY)
				engine_finish(f->hosts[r], f->now);
		moved = collect(f);

		moved += deliver(f);
		switch_tick(f);
		if (moved) {
			f->now += STEP_NS;
		} else {
			uint64_t d = UINT64_MAX;

			for (uint16_t r = 0; r < f->world; r++) {
				uint64_t x = engine_next_deadline(f->hosts[r]);

				if (x < d)
					d = x;
			}
			f->now = d > f->now && d != UINT64_MAX ? d : f->now + STEP_NS;
		}
	}
	for (uint16_t r = 0; r < f->world; r++)
		if (engine_error(f->hosts[r]) || engine_phase(f->hosts[r]) == phase)
			return -1;
	return 0;
}

unsigned
fabric_step(struct fabric *f)
{
	unsigned moved = collect(f);

	moved += deliver(f);
	switch_tick(f);
	return moved;
}

int
fabric_join(struct fabric *f)
{
	for (uint16_t r = 0; r < f->world; r++)
		engine_join(f->hosts[r], f->now);
	return fabric_run(f, ENGINE_JOINING, 60ull * 1000000000ull);
}

int
fabric_allreduce_each(struct fabric *f, uint32_t tensor_id, const float *const *ins, float **outs,
		      uint32_t n, const uint16_t *block_sizes, enum engine_op op)
{
	for (uint16_t r = 0; r < f->world; r++) {
		engine_set_cut(f->hosts[r], f->sub_log);
		if (engine_allreduce(f->hosts[r], tensor_id, ins[r], outs[r], n, block_sizes[r], op,
				     f->now) < 0)
			return -1;
	}
	return fabric_run(f, ENGINE_RUNNING, 60ull * 1000000000ull);
}

int
fabric_allreduce(struct fabric *f, uint32_t tensor_id, float **ins, float **outs, uint32_t n,
		 uint16_t block_size, enum engine_op op)
{
	uint16_t bs[FABRIC_MAX_HOSTS];

	for (uint16_t r = 0; r < f->world; r++)
		bs[r] = block_size;
	return fabric_allreduce_each(f, tensor_id, (const float *const *)ins, outs, n, bs, op);
}

int
fabric_round_exact(struct fabric *f, uint32_t seed, uint32_t n, uint16_t block_size)
{
	float *bufs = malloc((size_t)2 * f->world * n * sizeof(float));
	float *ins[FABRIC_MAX_HOSTS], *outs[FABRIC_MAX_HOSTS];
	int ret = -1;

	if (!bufs)
		return -1;
	for (uint16_t r = 0; r < f->world; r++) {
		ins[r] = bufs + (size_t)r * n;
		outs[r] = bufs + (size_t)(f->world + r) * n;
		for (uint32_t i = 0; i < n; i++)
			ins[r][i] = (float)((i * 7 + r * 3 + seed) % 23) - 11.0f;
	}
	if (fabric_allreduce(f, 1, ins, outs, n, block_size, ENGINE_SUM) < 0) {
		fprintf(stderr, "fabric_round_exact: seed %u: the allreduce failed\n", seed);
		goto out;
	}
	for (uint16_t r = 0; r < f->world; r++)
		for (uint32_t i = 0; i < n; i++) {
			float want = 0;

			for (uint16_t q = 0; q < f->world; q++)
				want += ins[q][i];
			if (outs[r][i] != want) {
				fprintf(stderr,
					"fabric_round_exact: seed %u rank %u element %u: %g, want %g\n",
					seed, r, i, (double)outs[r][i], (double)want);
				goto out;
			}
		}
	ret = 0;
out:
	free(bufs);
	return ret;
}

int
fabric_finish(struct fabric *f)
{
	for (uint16_t r = 0; r < f->world; r++)
		engine_finish(f->hosts[r], f->now);
	if (fabric_run(f, ENGINE_FINISHING, 60ull * 1000000000ull) < 0)
		return -1;
	for (uint16_t r = 0; r < f->world; r++)
		if (engine_phase(f->hosts[r]) != ENGINE_CLOSED)
			return -1;
	return 0;
}
