/* SPDX-License-Identifier: MIT */
/*
 * The public C API (ina.h) over the host engine and a port. Each blocking
 * call runs the same loop: receive a burst into the engine, send what the
 * engine has to send, and when neither moved anything, sleep in the port
 * until a packet arrives or the engine's next timer is due. The engine's
 * own timeout bounds every call.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "ina.h"
#include "ina/capture.h"
#include "ina/port.h"
#include "ina/port_udp.h"
#include "ina/token.h"
#include "ina/util.h"
#include "sparsify.h"
#include "sparsify_opts.h"

/* Longest single sleep in the port while an operation runs. */
#define WAIT_MAX_NS (100 * INA_NS_PER_MS)

/* One tensor with sparsifier options of its own, or one the job's sparsifier
 * runs on: the residual lives in 's', 'send' is what goes to the engine. */
struct sparse_tensor {
	uint32_t id;
	int used;			/* allreduced at least once */
	struct ina_sparsify opt;
	struct sparsify *s;		/* NULL until the first call (or mode OFF) */
	float *send;
	uint8_t *deferred;		/* per block: the result came back DEFERRED */
	size_t n;
	uint32_t round;
	double residual_mass;
};

struct ina_ctx {
	struct engine *engine;
	struct ina_capture *cap;	/* NULL unless capturing */
	struct ina_peer self;		/* this worker's address, for captures */
	uint64_t realtime_offset;	/* capture time minus monotonic time */
	uint16_t block_size;
	struct ina_port *port;
	struct ina_sparsify job_sparsify;	/* cfg.sparsify */
	struct sparse_tensor tensors[INA_MAX_SPARSE_TENSORS];
	unsigned n_tensors;
	struct {
		uint64_t rounds, blocks, blocks_sent, blocks_deferred;
		double density, residual_norm;
	} sp;
	char errmsg[512];
};

void
ina_config_init(struct ina_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->port = "udp";
	cfg->world = 1;
	cfg->lanes = 64;
	cfg->block_size = 1024;
	cfg->encoding = INA_F32;
	cfg->timeout_ms = 10000;
	cfg->rto_us = 5000;
	cfg->sparsify.mode = INA_SPARSIFY_OFF;
	cfg->sparsify.target = INA_TOPK_DENSITY;
	cfg->sparsify.density = 0.1;
	cfg->sparsify.mass = 0.5;
	cfg->sparsify.filter_b0 = 0;
	cfg->sparsify.filter_decay = 1;
	cfg->sparsify.filter_results = 1;
}

int
ina_sparsify_config(const struct ina_sparsify *o, size_t n, uint16_t block_size,
		    struct sparsify_config *sc)
{
	sparsify_config_init(sc);
	if (n == 0 || n > UINT32_MAX || (unsigned)o->mode > INA_SPARSIFY_BOTH)
		return -EINVAL;
	if (o->mode == INA_SPARSIFY_OFF)
		return 0;	/* the other options do not matter */
	sc->n_elems = (uint32_t)n;
	sc->block_size = block_size;
	sc->select = (o->mode & INA_SPARSIFY_TOPK ? SPARSIFY_TOPK : 0) |
		     (o->mode & INA_SPARSIFY_FILTER ? SPARSIFY_FILTER : 0);
	switch (o->target) {
	case INA_TOPK_DENSITY:
		sc->target = SPARSIFY_DENSITY;
		break;
	case INA_TOPK_BYTES:
		sc->target = SPARSIFY_BYTES;
		break;
	case INA_TOPK_MASS:
		sc->target = SPARSIFY_MASS;
		break;
	default:
		return -EINVAL;
	}
	sc->density = o->density;
	sc->byte_budget = o->byte_budget;
	sc->mass = o->mass;
	sc->filter_mode = SPARSIFY_ELEMENT;
	sc->bound_mode = SPARSIFY_DECAY;
	sc->bound0 = o->filter_b0;
	sc->decay = o->filter_decay;
	return sparsify_config_check(sc);
}

int
ina_token_from(const char *file, uint64_t *token, char *err, size_t err_size)
{
	return ina_token_load(file, token, err, err_size);
}

/* Drives the engine while it stays in 'phase'; an error ends joining and
 * running at once, while a goodbye (FIN, LEAVE) runs to its end. */
static int
run_while(struct ina_ctx *ctx, int phase)
{
	struct ina_pkt *pkts[INA_MAX_BURST];

	while (engine_phase(ctx->engine) == phase &&
	       !(engine_error(ctx->engine) && (phase == ENGINE_JOINING || phase == ENGINE_RUNNING))) {
		uint64_t now = ina_now_ns();
		uint16_t nb_rx = ina_port_rx_burst(ctx->port, pkts, INA_MAX_BURST);
		uint16_t nb_tx;

		if (nb_rx) {
			now = ina_now_ns();
			if (ctx->cap)
				ina_capture_rx_burst(ctx->cap, pkts, nb_rx, &ctx->self,
						     now + ctx->realtime_offset);
			engine_rx(ctx->engine, pkts, nb_rx, now);
		}
		nb_tx = engine_tx(ctx->engine, now, pkts, INA_MAX_BURST);
		if (ctx->cap && nb_tx)
			ina_capture_tx_burst(ctx->cap, pkts, nb_tx, &ctx->self,
					     now + ctx->realtime_offset);
		ina_port_tx_burst(ctx->port, pkts, nb_tx);
		if (!nb_rx && !nb_tx && engine_phase(ctx->engine) == phase) {
			uint64_t deadline = engine_next_deadline(ctx->engine);

			/* Sleep until a packet or the next timer, and never so
			 * long that a missed wake-up could look like a hang. */
			now = ina_now_ns();
			if (deadline > now)
				ctx->port->ops->wait(ctx->port, deadline - now < WAIT_MAX_NS
									? deadline - now
									: WAIT_MAX_NS);
		}
	}
	return engine_error(ctx->engine);
}

static uint8_t
wire_encoding(enum ina_encoding_type t)
{
	switch (t) {
	case INA_F32:
		return INA_ENC_F32;
	case INA_I32:
		return INA_ENC_I32;
	case INA_BF16:
		return INA_ENC_BF16;
	}
	return 0;
}

int
ina_open(const struct ina_config *cfg, struct ina_ctx **out, char *err, size_t err_size)
{
	struct engine_config ec;
	struct ina_ctx *ctx;
	char dummy[8];
	int ret;

	*out = NULL;
	if (!err) {
		err = dummy;
		err_size = sizeof(dummy);
	}
	err[0] = '\0';
	if (!cfg->switch_addr || !wire_encoding(cfg->encoding) || cfg->world == 0 ||
	    cfg->world > INA_MAX_WORLD || cfg->rank >= cfg->world || cfg->lanes == 0 ||
	    cfg->block_size == 0 || cfg->timeout_ms == 0 || cfg->rto_us == 0) {
		snprintf(err, err_size,
			 "bad configuration: need a switch address, rank < world <= %d, lanes, "
			 "block size and timeouts above 0", INA_MAX_WORLD);
		return -EINVAL;
	}
	{
		struct sparsify_config sc;

		if (ina_sparsify_config(&cfg->sparsify, cfg->block_size, cfg->block_size, &sc) < 0) {
			snprintf(err, err_size,
				 "bad sparsifier options: mode 0..3, density and mass in (0, 1], a "
				 "byte budget of at least one block, filter b0 >= 0 and decay in "
				 "(0, 1]");
			return -EINVAL;
		}
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->job_sparsify = cfg->sparsify;
	ret = ina_port_open(cfg->port ? cfg->port : "udp", &ctx->port, err, (unsigned)err_size);
	if (ret < 0) {
		ret = INA_EPORT;
		goto fail;
	}
	if ((uint64_t)INA_HDR_SIZE +
		    (uint64_t)cfg->block_size * ina_wire_elem_size(wire_encoding(cfg->encoding)) >
	    ctx->port->max_pkt) {
		snprintf(err, err_size, "block size %u does not fit the port's %u-byte packets",
			 cfg->block_size, ctx->port->max_pkt);
		ret = -EINVAL;
		goto fail;
	}
	engine_config_init(&ec);
	ec.job_id = cfg->job_id;
	ec.rank = cfg->rank;
	ec.world = cfg->world;
	ec.lanes = cfg->lanes;
	ec.max_block = cfg->block_size;
	ec.encoding = wire_encoding(cfg->encoding);
	ec.token = cfg->token;
	ec.timeout_ns = (uint64_t)cfg->timeout_ms * INA_NS_PER_MS;
	ec.rto_ns = (uint64_t)cfg->rto_us * 1000;
	if (ec.rto_min_ns > ec.rto_ns)
		ec.rto_min_ns = ec.rto_ns;
	if (ec.rto_max_ns < ec.rto_ns)
		ec.rto_max_ns = ec.rto_ns;
	ec.pool = ctx->port->pool;
	ret = ctx->port->ops->resolve(ctx->port, cfg->switch_addr, &ec.sw);
	if (ret < 0) {
		snprintf(err, err_size, "switch address '%s' on the %s port: %s",
			 cfg->switch_addr, ctx->port->ops->type, strerror(-ret));
		/* A well-formed address nobody answers for (ARP) is a missing
		 * switch; a malformed one stays -EINVAL. */
		if (ret == -ETIMEDOUT || ret == -EHOSTUNREACH || ret == -ENXIO)
			ret = INA_ENOSWITCH;
		goto fail;
	}
	ctx->engine = engine_create(&ec);
	if (!ctx->engine) {
		ret = -errno;
		snprintf(err, err_size, "host engine: %s", strerror(errno));
		goto fail;
	}
	if (cfg->capture) {
		char local[64];

		if (ina_port_udp_local(ctx->port, local, sizeof(local)) < 0 ||
		    ctx->port->ops->resolve(ctx->port, local, &ctx->self) < 0)
			memset(&ctx->self, 0, sizeof(ctx->self));
		ctx->cap = ina_capture_open(cfg->capture, err, err_size);
		if (!ctx->cap) {
			ret = errno ? -errno : -EIO;
			goto fail;
		}
		ina_capture_set_port(ctx->cap, ctx->port);
		ctx->realtime_offset = ina_capture_now_ns() - ina_now_ns();
	}
	engine_join(ctx->engine, ina_now_ns());
	ret = run_while(ctx, ENGINE_JOINING);
	if (ret < 0) {
		snprintf(err, err_size, "%s", engine_error_msg(ctx->engine));
		goto fail;
	}
	ctx->block_size = cfg->block_size;
	*out = ctx;
	return 0;
fail:
	ina_capture_close(ctx->cap);
	engine_destroy(ctx->engine);
	ina_port_close(ctx->port);
	free(ctx);
	return ret;
}

static struct sparse_tensor *
find_tensor(const struct ina_ctx *ctx, uint32_t tensor_id)
{
	for (unsigned i = 0; i < ctx->n_tensors; i++)
		if (ctx->tensors[i].id == tensor_id)
			return (struct sparse_tensor *)&ctx->tensors[i];
	return NULL;
}

static struct sparse_tensor *
add_tensor(struct ina_ctx *ctx, uint32_t tensor_id, const struct ina_sparsify *opt)
{
	struct sparse_tensor *t;

	if (ctx->n_tensors == INA_MAX_SPARSE_TENSORS) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: more than %d tensors with a sparsifier in one context",
			 tensor_id, INA_MAX_SPARSE_TENSORS);
		return NULL;
	}
	t = &ctx->tensors[ctx->n_tensors++];
	memset(t, 0, sizeof(*t));
	t->id = tensor_id;
	t->opt = *opt;
	return t;
}

int
ina_tensor_sparsify(struct ina_ctx *ctx, uint32_t tensor_id, const struct ina_sparsify *opt)
{
	struct sparsify_config sc;
	struct sparse_tensor *t = find_tensor(ctx, tensor_id);

	if (ina_sparsify_config(opt, ctx->block_size, ctx->block_size, &sc) < 0) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg), "tensor %u: bad sparsifier options",
			 tensor_id);
		return -EINVAL;
	}
	if (t && t->used) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: its sparsifier cannot change after its first allreduce",
			 tensor_id);
		return -EBUSY;
	}
	if (t) {
		t->opt = *opt;
		return 0;
	}
	return add_tensor(ctx, tensor_id, opt) ? 0 : -ENOSPC;
}

const float *
ina_residual(const struct ina_ctx *ctx, uint32_t tensor_id, size_t *n)
{
	const struct sparse_tensor *t = find_tensor(ctx, tensor_id);

	if (!t || !t->s)
		return NULL;
	if (n)
		*n = t->n;
	return sparsify_residual(t->s);
}

/* Sparsifies 'in' (n floats) of tensor 't' into its send buffer: the
 * residual takes the rest. First call: creates the sparsifier. 0 or -errno. */
static int
sparsify_tensor(struct ina_ctx *ctx, struct sparse_tensor *t, const float *in, size_t n,
		struct sparsify_stats *st)
{
	if (!t->s) {
		struct sparsify_config sc;

		if (ina_sparsify_config(&t->opt, n, ctx->block_size, &sc) < 0) {
			snprintf(ctx->errmsg, sizeof(ctx->errmsg),
				 "tensor %u: sparsifier options do not fit %zu elements in blocks "
				 "of %u (a byte budget below one block?)", t->id, n,
				 ctx->block_size);
			return -EINVAL;
		}
		t->s = sparsify_create(&sc);
		t->send = malloc(n * sizeof(float));
		t->deferred = t->s ? calloc(sparsify_n_blocks(t->s), 1) : NULL;
		if (!t->s || !t->send || !t->deferred) {
			sparsify_destroy(t->s);
			free(t->send);
			free(t->deferred);
			t->s = NULL;
			t->send = NULL;
			t->deferred = NULL;
			snprintf(ctx->errmsg, sizeof(ctx->errmsg),
				 "tensor %u: no memory for the sparsifier of %zu elements", t->id, n);
			return -ENOMEM;
		}
		t->n = n;
	}
	if (n != t->n) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: %zu elements, but its sparsifier was made for %zu", t->id, n,
			 t->n);
		return -EINVAL;
	}
	return sparsify_round(t->s, in, t->send, t->round++, st);
}

/* The blocks of 't' whose sum came back DEFERRED: this worker's own part of
 * each goes back into its residual (exactly). Returns the sum of squares
 * given back. */
static double
take_back_deferred(struct ina_ctx *ctx, struct sparse_tensor *t)
{
	double mass = 0;

	for (uint32_t b = 0; b < sparsify_n_blocks(t->s); b++) {
		const float *own = t->send + (size_t)b * ctx->block_size;
		uint32_t len = sparsify_block_len(t->s, b);

		if (!t->deferred[b])
			continue;
		for (uint32_t i = 0; i < len; i++)
			mass += (double)own[i] * own[i];
		sparsify_defer_block(t->s, b, own);
		ctx->sp.blocks_deferred++;
	}
	return mass;
}

int
ina_allreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out, size_t n,
	      enum ina_op op)
{
	struct sparse_tensor *t;
	struct sparsify_stats st;
	int ret;

	if (engine_error(ctx->engine))
		return engine_error(ctx->engine);
	if (engine_phase(ctx->engine) != ENGINE_READY)
		return INA_ECLOSED;
	t = find_tensor(ctx, tensor_id);
	if (!t && ctx->job_sparsify.mode != INA_SPARSIFY_OFF) {
		t = add_tensor(ctx, tensor_id, &ctx->job_sparsify);
		if (!t)
			return -ENOSPC;
	}
	if (t && t->opt.mode != INA_SPARSIFY_OFF) {
		ret = sparsify_tensor(ctx, t, in, n, &st);
		if (ret < 0)
			return ret;
		in = t->send;
	}
	if (t)
		t->used = 1;
	if (t && t->s && t->opt.filter_results)
		engine_set_result_filter(ctx->engine, st.bound, t->deferred);
	ret = engine_allreduce(ctx->engine, tensor_id, in, out, n, ctx->block_size,
			       op == INA_AVG ? ENGINE_AVG : ENGINE_SUM, ina_now_ns());
	if (ret < 0) {
		/* Nothing went out: what was to be sent goes back into the
		 * residual (exactly), and the round did not happen. */
		if (t && t->s) {
			for (uint32_t b = 0; b < sparsify_n_blocks(t->s); b++)
				sparsify_defer_block(t->s, b,
						     t->send + (size_t)b * ctx->block_size);
			t->round--;
		}
		return ret;
	}
	ret = run_while(ctx, ENGINE_RUNNING);
	if (ret < 0) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg), "%s", engine_error_msg(ctx->engine));
		return ret;
	}
	if (t && t->s) {
		uint32_t nb = sparsify_n_blocks(t->s);

		if (t->opt.filter_results)
			st.residual_mass += take_back_deferred(ctx, t);
		ctx->sp.rounds++;
		ctx->sp.blocks += nb;
		ctx->sp.blocks_sent += st.blocks_sent;
		ctx->sp.density = (double)st.blocks_sent / nb;
		ctx->sp.residual_norm = sqrt(st.residual_mass);
		t->residual_mass = st.residual_mass;
	}
	return ret;
}

void
ina_get_stats(const struct ina_ctx *ctx, struct ina_stats *s)
{
	const struct engine_stats *es = engine_stats(ctx->engine);
	const struct ina_port_stats *ps = &ctx->port->stats;

	memset(s, 0, sizeof(*s));
	s->rounds = es->rounds;
	s->bytes_sent = es->bytes_sent;
	s->bytes_received = es->bytes_recv;
	s->packets_sent = es->pkts_sent;
	s->packets_received = es->pkts_recv;
	s->data_packets = es->data_sent;
	s->empty_packets = es->empty_sent;
	s->retransmits = es->retransmits;
	s->waits = es->waits;
	s->dropped = es->bad;
	s->stale = es->stale;
	s->tx_bursts = ps->tx_bursts;
	s->rx_bursts = ps->rx_bursts;
	s->inject_drop = ps->inject_drop;
	s->sparse_rounds = ctx->sp.rounds;
	s->sparse_blocks = ctx->sp.blocks;
	s->sparse_blocks_sent = ctx->sp.blocks_sent;
	s->sparse_blocks_deferred = ctx->sp.blocks_deferred;
	s->density_sent = ctx->sp.density;
	s->residual_norm = ctx->sp.residual_norm;
	{
		double m = 0;

		for (unsigned i = 0; i < ctx->n_tensors; i++)
			m += ctx->tensors[i].residual_mass;
		s->residual_norm_total = sqrt(m);
	}
}

const char *
ina_last_error(const struct ina_ctx *ctx)
{
	return ctx->errmsg;
}

uint32_t
ina_epoch(const struct ina_ctx *ctx)
{
	return engine_epoch(ctx->engine);
}

const char *
ina_transport(const struct ina_ctx *ctx)
{
	return ctx->port->ops->type;
}

int
ina_close(struct ina_ctx *ctx)
{
	int ret;

	if (!ctx)
		return 0;
	ret = engine_error(ctx->engine);
	engine_finish(ctx->engine, ina_now_ns());
	while (engine_phase(ctx->engine) == ENGINE_FINISHING ||
	       engine_phase(ctx->engine) == ENGINE_LEAVING)
		run_while(ctx, engine_phase(ctx->engine));
	if (ina_capture_close(ctx->cap) < 0 && ret == 0)
		ret = -EIO;
	engine_destroy(ctx->engine);
	ina_port_close(ctx->port);
	for (unsigned i = 0; i < ctx->n_tensors; i++) {
		sparsify_destroy(ctx->tensors[i].s);
		free(ctx->tensors[i].send);
		free(ctx->tensors[i].deferred);
	}
	free(ctx);
	return ret;
}

const char *
ina_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case INA_ENOSWITCH:
		return "the switch did not answer";
	case INA_EREFUSED:
		return "the switch refused the job";
	case INA_EPEER:
		return "peers did not contribute in time";
	case INA_ELEFT:
		return "another rank left the job";
	case INA_ESATURATED:
		return "an i32 sum saturated";
	case INA_ENONFINITE:
		return "NaN or infinity in an i32 tensor";
	case INA_ECLOSED:
		return "the context is closed or failed earlier";
	case INA_EPORT:
		return "the transport could not start";
	case INA_EPROTO:
		return "the switch answered against the protocol";
	default:
		return err < 0 && err > -4096 ? strerror(-err) : "unknown error";
	}
}
