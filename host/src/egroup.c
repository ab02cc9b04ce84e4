/* SPDX-License-Identifier: MIT */
/*
 * A worker's engines towards K switches (egroup.h): the runs of blocks, the
 * dispatch of received packets by sender, the phases and counters combined.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egroup.h"
#include "ina/wire.h"

struct egroup {
	uint16_t k;
	struct engine *e[EGROUP_MAX];
	struct ina_peer sw[EGROUP_MAX];
	uint16_t max_block;	  /* the engines' config */
	uint16_t tx_next;	  /* the engine that sends first next time */
	float bound;		  /* the result filter of the next allreduce */
	uint8_t *deferred;	  /* ... per block of the whole tensor */
	uint8_t sub_log;	  /* the cut of the next allreduce */
	uint8_t sparse;		  /* the next allreduce is block-sparse: */
	struct engine_blocks blk; /* ... the whole tensor's operands */
	char msg[640];
};

struct egroup *
egroup_create(const struct engine_config *cfg, const struct ina_peer *switches, uint16_t k)
{
	struct egroup *g;

	if (k == 0 || k > EGROUP_MAX || (k > 1 && (cfg->replica.len || cfg->ssp))) {
		errno = EINVAL;
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->k = k;
	g->max_block = cfg->max_block;
	for (uint16_t i = 0; i < k; i++) {
		struct engine_config ec = *cfg;

		ec.sw = switches[i];
		g->sw[i] = switches[i];
		g->e[i] = engine_create(&ec);
		if (!g->e[i]) {
			int err = errno;

			egroup_destroy(g);
			errno = err;
			return NULL;
		}
	}
	return g;
}

void
egroup_destroy(struct egroup *g)
{
	if (!g)
		return;
	for (uint16_t i = 0; i < g->k; i++)
		engine_destroy(g->e[i]);
	free(g);
}

uint16_t
egroup_count(const struct egroup *g)
{
	return g->k;
}

struct engine *
egroup_engine(const struct egroup *g, uint16_t k)
{
	return k < g->k ? g->e[k] : NULL;
}

uint32_t
egroup_salt(uint16_t k)
{
	return (uint32_t)k * 0x9e3779b9u;
}

void
egroup_run(uint16_t count, uint16_t k, size_t n, uint16_t block_size, size_t *off, size_t *len)
{
	uint64_t nb = ina_wire_nb_blocks((uint32_t)n, block_size);
	/* Run k starts at block ceil(k nb / K): run 0 is never empty. */
	uint64_t lo = (nb * k + count - 1) / count, hi = (nb * (k + 1u) + count - 1) / count;
	size_t end = hi * block_size < n ? (size_t)(hi * block_size) : n;

	*off = (size_t)(lo * block_size);
	*len = lo < hi ? end - *off : 0;
}

int
egroup_join(struct egroup *g, uint64_t now_ns)
{
	int ret = 0;

	for (uint16_t i = 0; i < g->k; i++) {
		int r = engine_join(g->e[i], now_ns);

		ret = ret ? ret : r;
	}
	return ret;
}

/* The first position of 'index' (ascending) holding 'x' or more. */
static uint32_t
lower_bound(const uint32_t *index, uint32_t count, uint32_t x)
{
	uint32_t lo = 0, hi = count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (index[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Gives engine 'e' the part of 'b' in the run of 'nb' blocks from block
 * 'first' on. */
static void
run_blocks(const struct engine_blocks *b, size_t first, uint32_t nb, uint16_t block_size,
	   struct engine *e)
{
	struct engine_blocks r = *b;
	uint32_t lo = lower_bound(b->index, b->count, (uint32_t)first);
	uint32_t hi = lower_bound(b->index, b->count, (uint32_t)first + nb);

	r.index = b->index + lo;
	r.values = b->values + (size_t)lo * block_size;
	r.chain = b->chain + lo;
	r.count = hi - lo;
	r.base = (uint32_t)first;
	if (b->dense)
		r.dense = b->dense + first * block_size;
	engine_set_blocks(e, &r);
}

int
egroup_allreduce(struct egroup *g, uint32_t tensor_id, const float *in, float *out, size_t n,
		 uint16_t block_size, enum engine_op op, uint64_t now_ns)
{
	int sparse = g->sparse;
	uint8_t sub_log = g->sub_log;
	int ret = 0;

	g->sparse = 0; /* the next allreduce only */
	g->sub_log = 0;
	if (g->k == 1) {
		if (sparse)
			engine_set_blocks(g->e[0], &g->blk);
		engine_set_cut(g->e[0], sub_log);
		return engine_allreduce(g->e[0], tensor_id, in, out, n, block_size, op, now_ns);
	}
	/* What engine_allreduce() would refuse, refused before any engine
	 * starts: a round is started on all of its engines or on none (the
	 * engines share one config: what is left to refuse, a full block
	 * with its mask past the pool's buffers, engine 0 refuses first). */
	if (n == 0 || n >= INA_BLOCK_OPEN || block_size == 0 || block_size > g->max_block ||
	    (!sparse && (!in || !out)) || sub_log > INA_SUB_LOG_MAX ||
	    block_size & ((1u << sub_log) - 1))
		return -EINVAL;
	for (uint16_t i = 0; i < g->k; i++) {
		if (engine_error(g->e[i]))
			return engine_error(g->e[i]);
		if (engine_phase(g->e[i]) != ENGINE_READY)
			return -EBUSY;
	}
	for (uint16_t i = 0; i < g->k; i++) {
		size_t off, len;

		egroup_run(g->k, i, n, block_size, &off, &len);
		if (!len)
			continue;
		/* Each engine's blocks are a run of the tensor's: its flags start
		 * at the run's first block. */
		if (g->deferred)
			engine_set_result_filter(g->e[i], g->bound, g->deferred + off / block_size);
		engine_set_cut(g->e[i], sub_log);
		if (sparse) {
			run_blocks(&g->blk, off / block_size,
				   (uint32_t)ina_wire_nb_blocks((uint32_t)len, block_size),
				   block_size, g->e[i]);
			ret = engine_allreduce(g->e[i], tensor_id ^ egroup_salt(i), NULL, NULL, len,
					       block_size, op, now_ns);
			if (ret < 0)
				break;
			continue;
		}
		/* The switch's index in the tensor id: a worker that lists the
		 * switches in another order sends a run under an id the others
		 * do not use there, so it is never summed with another run. */
		ret = engine_allreduce(g->e[i], tensor_id ^ egroup_salt(i), in + off, out + off,
				       len, block_size, op, now_ns);
		if (ret < 0)
			break;
	}
	g->deferred = NULL; /* the next allreduce only */
	return ret;
}

void
egroup_set_blocks(struct egroup *g, const struct engine_blocks *b)
{
	g->sparse = 1;
	g->blk = *b;
}

void
egroup_set_cut(struct egroup *g, uint8_t sub_log)
{
	g->sub_log = sub_log;
}

void
egroup_set_result_filter(struct egroup *g, float bound, uint8_t *deferred)
{
	if (g->k == 1) {
		engine_set_result_filter(g->e[0], bound, deferred);
		return;
	}
	/* Where each engine's flags start depends on the tensor's blocks:
	 * applied by egroup_allreduce(). */
	g->bound = bound;
	g->deferred = bound > 0.0f ? deferred : NULL;
}

void
egroup_finish(struct egroup *g, uint64_t now_ns)
{
	for (uint16_t i = 0; i < g->k; i++)
		engine_finish(g->e[i], now_ns);
}

void
egroup_leave(struct egroup *g, uint64_t now_ns)
{
	for (uint16_t i = 0; i < g->k; i++)
		engine_leave(g->e[i], now_ns);
}

void
egroup_rx(struct egroup *g, struct ina_pkt **pkts, uint16_t n, uint64_t now_ns)
{
	uint16_t i = 0;

	if (g->k == 1) {
		engine_rx(g->e[0], pkts, n, now_ns);
		return;
	}
	/* Runs of packets from one switch go to its engine in one call. */
	while (i < n) {
		uint16_t k = 0, j = i + 1;

		for (uint16_t s = 0; s < g->k; s++)
			if (ina_peer_equal(&pkts[i]->peer, &g->sw[s]))
				k = s;
		while (j < n && ina_peer_equal(&pkts[j]->peer, &pkts[i]->peer))
			j++;
		engine_rx(g->e[k], pkts + i, (uint16_t)(j - i), now_ns);
		i = j;
	}
}

uint16_t
egroup_tx(struct egroup *g, uint64_t now_ns, struct ina_pkt **out, uint16_t max)
{
	uint16_t nb = 0;

	/* Every engine gets its timers run; the first to send rotates, so no
	 * switch's traffic waits behind another's when 'max' fills. */
	for (uint16_t i = 0; i < g->k; i++) {
		uint16_t e = (uint16_t)((g->tx_next + i) % g->k);

		nb = (uint16_t)(nb + engine_tx(g->e[e], now_ns, out + nb, (uint16_t)(max - nb)));
	}
	g->tx_next = (uint16_t)((g->tx_next + 1) % g->k);
	return nb;
}

uint16_t
egroup_keepalive(struct egroup *g, uint64_t now_ns, struct ina_pkt **out, uint16_t max)
{
	uint16_t nb = 0;

	for (uint16_t e = 0; e < g->k && nb < max; e++)
		nb = (uint16_t)(nb +
				engine_keepalive(g->e[e], now_ns, out + nb, (uint16_t)(max - nb)));
	return nb;
}

uint16_t
egroup_lanes(const struct egroup *g)
{
	uint16_t lanes = engine_lanes(g->e[0]);

	for (uint16_t i = 1; i < g->k; i++)
		if (engine_lanes(g->e[i]) < lanes)
			lanes = engine_lanes(g->e[i]);
	return lanes;
}

int
egroup_phase(const struct egroup *g)
{
	static const int order[] = { ENGINE_JOINING,   ENGINE_RUNNING, ENGINE_LEAVING,
				     ENGINE_FINISHING, ENGINE_READY,   ENGINE_IDLE };

	if (g->k == 1)
		return engine_phase(g->e[0]);
	for (unsigned o = 0; o < sizeof(order) / sizeof(order[0]); o++)
		for (uint16_t i = 0; i < g->k; i++)
			if (engine_phase(g->e[i]) == order[o])
				return order[o];
	return ENGINE_CLOSED;
}

int
egroup_error(const struct egroup *g)
{
	for (uint16_t i = 0; i < g->k; i++)
		if (engine_error(g->e[i]))
			return engine_error(g->e[i]);
	return 0;
}

const char *
egroup_error_msg(struct egroup *g)
{
	for (uint16_t i = 0; g->k > 1 && i < g->k; i++) {
		if (!engine_error(g->e[i]))
			continue;
		snprintf(g->msg, sizeof(g->msg), "switch %u of %u: %s", i, g->k,
			 engine_error_msg(g->e[i]));
		return g->msg;
	}
	return engine_error_msg(g->e[0]);
}

const char *
egroup_stall(struct egroup *g)
{
	for (uint16_t i = 0; i < g->k; i++) {
		const char *s = engine_stall(g->e[i]);

		if (!s)
			continue;
		if (g->k == 1)
			return s;
		snprintf(g->msg, sizeof(g->msg), "switch %u of %u: %s", i, g->k, s);
		return g->msg;
	}
	return NULL;
}

uint64_t
egroup_next_deadline(const struct egroup *g)
{
	uint64_t d = UINT64_MAX;

	for (uint16_t i = 0; i < g->k; i++) {
		uint64_t e = engine_next_deadline(g->e[i]);

		d = e < d ? e : d;
	}
	return d;
}

void
egroup_stats(const struct egroup *g, struct engine_stats *out)
{
	if (g->k == 1) {
		*out = *engine_stats(g->e[0]);
		return;
	}
	memset(out, 0, sizeof(*out));
	for (uint16_t i = 0; i < g->k; i++) {
		const struct engine_stats *s = engine_stats(g->e[i]);

		out->pkts_sent += s->pkts_sent;
		out->bytes_sent += s->bytes_sent;
		out->pkts_recv += s->pkts_recv;
		out->bytes_recv += s->bytes_recv;
		out->data_sent += s->data_sent;
		out->empty_sent += s->empty_sent;
		out->retransmits += s->retransmits;
		out->waits += s->waits;
		out->stale += s->stale;
		out->bad += s->bad;
		out->saturated += s->saturated;
		out->deferred += s->deferred;
		out->stalls += s->stalls;
		rtt_hist_merge(&out->rtt, &s->rtt);
	}
	/* A round is the worker's allreduce, counted by switch 0, which takes
	 * part in every one (its run is never empty). */
	out->rounds = engine_stats(g->e[0])->rounds;
}
