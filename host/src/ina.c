/* SPDX-License-Identifier: MIT */
/*
 * The public C API (ina.h) over the host engine and a port. Each call runs
 * the same step: start the operation the scheduler (order.h) picks when the
 * engine is free, receive a burst into the engine, send what the engine has
 * to send, finish the operation the engine ended; a blocking call repeats it
 * and, when nothing moved, sleeps in the port until a packet arrives or the
 * engine's next timer is due. The engine's own timeout bounds every call.
 * Operations live in a ring of cfg.max_pending slots indexed by their
 * submission number; a handle is that number plus one. A mutex per context
 * makes the calls thread-safe.
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "done_queue.h"
#include "egroup.h"
#include "engine.h"
#include "ina.h"
#include "ina/capture.h"
#include "ina/log.h"
#include "ina/port.h"
#include "ina/token.h"
#include "ina/util.h"
#include "keepalive.h"
#include "order.h"
#include "sparsify.h"
#include "sparsify_opts.h"
#include "ssp_tensor.h"
#include "tensor_round.h"
#include "tensor_table.h"

/* The engine of switch 0: the only one under ssp and with a replica. */
#define ENG0(ctx) egroup_engine((ctx)->eg, 0)

/* Longest single sleep in the port while an operation runs. */
#define WAIT_MAX_NS (100 * INA_NS_PER_MS)

/* One tensor with sparsifier options of its own, or one the job's sparsifier
 * or block planner runs on: its round state (residual, planning reference)
 * lives in 'tr'. */
struct sparse_tensor {
	uint32_t id;
	int used;			/* allreduced at least once */
	struct ina_sparsify opt;
	struct tround *tr;		/* NULL until the first call */
};

enum op_kind { OP_ALLREDUCE, OP_BROADCAST, OP_BARRIER };
enum op_state { OP_FREE = 0, OP_QUEUED, OP_RUNNING, OP_DONE };

/* One submitted operation, in slot seq % max_pending until it is waited for. */
struct op {
	uint64_t seq;
	enum op_state state;
	enum op_kind kind;
	uint32_t tensor_id;
	const float *in;
	float *out;
	size_t n;
	enum ina_op op;
	uint16_t root;
	float one;			/* a barrier's input and output */
	struct sparse_tensor *t;	/* the tensor's round state while it runs */
	struct ssp_tensor *st;		/* ssp: the tensor while its round runs */
	int ssp_slot;			/* ... and the slot of its send buffer */
	uint32_t eng_round;		/* ssp: the engine's round of it */
	int ret;			/* its end */
	int quiet;			/* a blocking call's: not for ina_poll() */
};

struct ina_ctx {
	struct egroup *eg;		/* one engine per switch */
	pthread_mutex_t lock;		/* every call but open and close */
	struct order *sched;
	struct op *ops;			/* max_pending slots */
	struct done_queue done;		/* ended operations in end order (ina_poll) */
	uint32_t max_pending;
	struct op *run[ORDER_FUSE_MAX];	/* the operations the engine's round carries */
	uint32_t nb_run;		/* 0: the engine is free; > 1: fused */
	uint32_t fuse_elems;		/* cfg.fuse_elems */
	float *fuse_in, *fuse_out;	/* a fused round's elements, fuse_elems each */
	uint64_t timeout_ns;		/* cfg.timeout_ms */
	struct ina_capture *cap;	/* NULL unless capturing */
	struct ina_peer self;		/* this worker's address, for captures */
	uint64_t realtime_offset;	/* capture time minus monotonic time */
	uint16_t block_size;
	uint16_t last_block_size;	/* B of the last allreduce */
	uint32_t last_part_tag;		/* its partition map's tag */
	uint16_t world, lanes;
	uint16_t lanes_asked;		/* cfg.lanes (lanes: what the switch granted) */
	char aggregator[32];		/* the host aggregator the job runs on, or "" */
	uint8_t encoding;
	int plan_blocks;		/* cfg.plan_blocks */
	struct partition_config part;	/* cfg.partition, partitions, lanes */
	struct ina_port *port;
	char replica_addr[64];		/* cfg.replica_addr, for the log */
	uint32_t job_id;
	uint16_t rank;
	uint64_t failovers;		/* takeovers logged so far */
	struct keepalive *keepalive;	/* the thread, NULL with cfg.keepalive_ms 0 */
	struct ina_sparsify job_sparsify;	/* cfg.sparsify */
	struct tensor_table tensors;	/* id -> struct sparse_tensor *, any number */
	uint8_t ssp;			/* cfg.ssp */
	struct tensor_table ssp_tensors;	/* id -> struct ssp_tensor * */
	uint64_t ssp_missed;
	struct {
		uint64_t rounds, blocks, blocks_sent, blocks_deferred;
		double density, residual_norm;
	} sp;
	char errmsg[512];
};

const char *
ina_version(void)
{
	return INA_VERSION_STRING;
}

/* The defaults of every field, in the library's own layout. */
static void
config_defaults(struct ina_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->port = "udp";
	cfg->world = 1;
	cfg->lanes = 64;
	cfg->block_size = 1024;
	cfg->encoding = INA_F32;
	cfg->timeout_ms = 10000;
	cfg->rto_us = 5000;
	cfg->failover_ms = 1000;
	cfg->sched = INA_SCHED_FIFO;
	cfg->sched_window = 0;
	cfg->max_pending = 256;
	cfg->sparsify.mode = INA_SPARSIFY_OFF;
	cfg->sparsify.target = INA_TOPK_DENSITY;
	cfg->sparsify.density = 0.1;
	cfg->sparsify.mass = 0.5;
	cfg->sparsify.filter_b0 = 0;
	cfg->sparsify.filter_decay = 1;
	cfg->sparsify.filter_results = 1;
	cfg->keepalive_ms = 1000;
	cfg->pause_ms = 600000;
}

void
ina_config_init_size(struct ina_config *cfg, size_t size)
{
	struct ina_config d;

	if (size < sizeof(cfg->size))
		return;
	config_defaults(&d);
	d.size = (uint32_t)(size < sizeof(d) ? size : sizeof(d));
	memcpy(cfg, &d, d.size);
}

/* 'cfg' as the library's own layout: what the caller's size covers, the
 * defaults beyond. -EINVAL when the size is none a caller could have. */
static int
config_full(const struct ina_config *cfg, struct ina_config *full)
{
	if (cfg->size < offsetof(struct ina_config, keepalive_ms) || cfg->size > sizeof(*full))
		return -EINVAL;
	config_defaults(full);
	memcpy(full, cfg, cfg->size);
	full->size = sizeof(*full);
	return 0;
}

int
ina_token_from(const char *file, uint64_t *token, char *err, size_t err_size)
{
	return ina_token_load(file, token, err, err_size);
}

/* The replica took the job over: said once, as it changes where the job runs. */
static void
log_failover(struct ina_ctx *ctx)
{
	const struct engine_stats *es = engine_stats(ENG0(ctx));

	ctx->failovers = es->failovers;
	INA_LOG(WARN, "job %u rank %u round %u: the switch fell silent; the replica %s took the "
		"job over under epoch %u (the switch silent for %.1f ms)",
		ctx->job_id, ctx->rank, engine_round(ENG0(ctx)), ctx->replica_addr,
		engine_epoch(ENG0(ctx)),
		(double)es->failover_silence_ns / 1e6);
}

/*
 * One burst each way between the port and the engine: receive (captured,
 * given to the engine, a takeover logged), then what the engine sends
 * (a stall logged, captured, sent). Returns whether anything moved.
 */
static int
pump(struct ina_ctx *ctx)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	uint64_t now = ina_now_ns();
	uint16_t nb_rx = ina_port_rx_burst(ctx->port, pkts, INA_MAX_BURST);
	uint16_t nb_tx;
	const char *stall;

	if (nb_rx) {
		now = ina_now_ns();
		if (ctx->cap)
			ina_capture_rx_burst(ctx->cap, pkts, nb_rx, &ctx->self,
					     now + ctx->realtime_offset);
		egroup_rx(ctx->eg, pkts, nb_rx, now);
		if (engine_stats(ENG0(ctx))->failovers != ctx->failovers)
			log_failover(ctx);
	}
	nb_tx = egroup_tx(ctx->eg, now, pkts, INA_MAX_BURST);
	stall = egroup_stall(ctx->eg);
	if (stall)
		INA_LOG(WARN, "%s", stall);
	if (ctx->cap && nb_tx)
		ina_capture_tx_burst(ctx->cap, pkts, nb_tx, &ctx->self,
				     now + ctx->realtime_offset);
	ina_port_tx_burst(ctx->port, pkts, nb_tx);
	return nb_rx || nb_tx;
}

/*
 * The keepalive thread's beat (keepalive.c): under the context's lock, the
 * KEEPALIVEs the engines have due, captured and sent. Nothing is received
 * and no other timer runs: that is the calls' work.
 */
static void
keepalive_beat(void *arg)
{
	struct ina_ctx *ctx = arg;
	struct ina_pkt *pkts[2 * EGROUP_MAX];
	uint64_t now;
	uint16_t nb;

	pthread_mutex_lock(&ctx->lock);
	now = ina_now_ns();
	nb = egroup_keepalive(ctx->eg, now, pkts, 2 * EGROUP_MAX);
	if (ctx->cap && nb)
		ina_capture_tx_burst(ctx->cap, pkts, nb, &ctx->self, now + ctx->realtime_offset);
	ina_port_tx_burst(ctx->port, pkts, nb);
	pthread_mutex_unlock(&ctx->lock);
}

/* Drives the engine while it stays in 'phase'; an error ends joining and
 * running at once, while a goodbye (FIN, LEAVE) runs to its end. */
static int
run_while(struct ina_ctx *ctx, int phase)
{
	while (egroup_phase(ctx->eg) == phase &&
	       !(egroup_error(ctx->eg) && (phase == ENGINE_JOINING || phase == ENGINE_RUNNING))) {
		if (!pump(ctx) && egroup_phase(ctx->eg) == phase) {
			uint64_t deadline = egroup_next_deadline(ctx->eg);
			uint64_t now = ina_now_ns();

			/* Sleep until a packet or the next timer, and never so
			 * long that a missed wake-up could look like a hang. */
			if (deadline > now)
				ina_port_wait(ctx->port, deadline - now < WAIT_MAX_NS
									? deadline - now
									: WAIT_MAX_NS);
		}
	}
	return egroup_error(ctx->eg);
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

/* Resolves "ADDR:PORT[,ADDR:PORT...]" into 'sws' (EGROUP_MAX at most). */
static int
resolve_switches(struct ina_ctx *ctx, const char *list, struct ina_peer *sws, uint16_t *nb,
		 char *err, size_t err_size)
{
	const char *p = list;

	*nb = 0;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char addr[128];
		int ret;

		if (len == 0 || len >= sizeof(addr) || *nb == EGROUP_MAX) {
			snprintf(err, err_size, "switch addresses '%s': 1 to %d of ADDR:PORT, "
				 "separated by commas", list, EGROUP_MAX);
			return -EINVAL;
		}
		memcpy(addr, p, len);
		addr[len] = '\0';
		ret = ina_port_resolve(ctx->port, addr, &sws[*nb]);
		if (ret < 0) {
			snprintf(err, err_size, "switch address '%s' on the %s port: %s", addr,
				 ctx->port->ops->type, strerror(-ret));
			/* A well-formed address nobody answers for (ARP) is a
			 * missing switch; a malformed one stays -EINVAL. */
			if (ret == -ETIMEDOUT || ret == -EHOSTUNREACH || ret == -ENXIO)
				ret = INA_ENOSWITCH;
			return ret;
		}
		for (uint16_t i = 0; i < *nb; i++) {
			if (ina_peer_equal(&sws[i], &sws[*nb])) {
				snprintf(err, err_size, "switch '%s' is named twice", addr);
				return -EINVAL;
			}
		}
		(*nb)++;
		p += len + (comma ? 1 : 0);
		if (comma && !*p) {
			snprintf(err, err_size, "switch addresses '%s': a trailing comma", list);
			return -EINVAL;
		}
	}
	if (*nb == 0) {
		snprintf(err, err_size, "no switch address");
		return -EINVAL;
	}
	return 0;
}

/*
 * The switch sent the job to a host aggregator (a REDIRECT: it has no slots
 * for the job): resolve the address on this context's port, say so, and
 * join there: '*ret' is what run_while() returns. -1 with '*ret' set and
 * 'err' written when the address does not resolve, else 0.
 */
static int
follow_redirect(struct ina_ctx *ctx, const struct ina_config *cfg, char *err, size_t err_size,
		int *out_ret)
{
	struct ina_peer peer;
	uint32_t ip;
	uint16_t port;
	int ret;

	engine_redirect_target(egroup_engine(ctx->eg, 0), &ip, &port);
	snprintf(ctx->aggregator, sizeof(ctx->aggregator), "%u.%u.%u.%u:%u", ip >> 24,
		 ip >> 16 & 0xff, ip >> 8 & 0xff, ip & 0xff, port);
	ret = ina_port_resolve(ctx->port, ctx->aggregator, &peer);
	if (ret < 0) {
		snprintf(err, err_size, "the switch %s sent the job to the host aggregator %s, "
			 "which does not resolve on the %s port: %s", cfg->switch_addr,
			 ctx->aggregator, ctx->port->ops->type, strerror(-ret));
		*out_ret = INA_ENOSWITCH;
		return -1;
	}
	INA_LOG(INFO, "job %u rank %u: the switch %s has no slots for the job: it is aggregated "
		"by the host aggregator at %s", cfg->job_id, cfg->rank, cfg->switch_addr,
		ctx->aggregator);
	engine_redirect(egroup_engine(ctx->eg, 0), &peer, ina_now_ns());
	*out_ret = run_while(ctx, ENGINE_JOINING);
	return 0;
}

int
ina_open(const struct ina_config *user_cfg, struct ina_ctx **out, char *err, size_t err_size)
{
	struct ina_config full;
	const struct ina_config *cfg = &full;
	struct ina_peer sws[EGROUP_MAX];
	uint16_t nb_sw = 0;
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
	if (config_full(user_cfg, &full) < 0) {
		snprintf(err, err_size, "struct ina_config of %" PRIu32 " bytes: not one this library "
			 "(%s) knows; set it with ina_config_init()", user_cfg->size, INA_VERSION_STRING);
		return -EINVAL;
	}
	if (!cfg->switch_addr || !wire_encoding(cfg->encoding) || cfg->world == 0 ||
	    cfg->world > INA_MAX_WORLD || cfg->rank >= cfg->world || cfg->lanes == 0 ||
	    cfg->block_size == 0 || cfg->timeout_ms == 0 || cfg->rto_us == 0 ||
	    (cfg->replica_addr && cfg->failover_ms == 0) || cfg->max_pending == 0 ||
	    cfg->max_pending > 65536 || (unsigned)cfg->sched > INA_SCHED_MAGNITUDE ||
	    cfg->fuse_elems > (1u << 24)) {
		snprintf(err, err_size,
			 "bad configuration: need a switch address, rank < world <= %d, lanes, "
			 "block size and timeouts (and the failover time) above 0, max_pending "
			 "1..65536, a scheduling policy 0..2 and fuse_elems up to %u",
			 INA_MAX_WORLD, 1u << 24);
		return -EINVAL;
	}
	if (cfg->switch_addr && strchr(cfg->switch_addr, ',') &&
	    (cfg->replica_addr || cfg->ssp || cfg->partitions > 1)) {
		snprintf(err, err_size,
			 "bad configuration: several switches take no replica, no ssp and no "
			 "partitions (the switches are the partitions)");
		return -EINVAL;
	}
	if ((unsigned)cfg->partition > INA_PARTITION_DYNAMIC ||
	    cfg->partitions > PARTITION_MAX_PARTS ||
	    (cfg->partition == INA_PARTITION_DYNAMIC && cfg->ssp)) {
		snprintf(err, err_size,
			 "bad configuration: partition 0 (fixed) or 1 (dynamic, not under ssp), "
			 "partitions 1..%d", PARTITION_MAX_PARTS);
		return -EINVAL;
	}
	if (cfg->ssp > INA_SSP_MAX ||
	    (cfg->ssp && (cfg->encoding == INA_I32 || cfg->replica_addr || cfg->plan_blocks ||
			  cfg->fuse_elems || cfg->sparsify.mode != INA_SPARSIFY_OFF))) {
		snprintf(err, err_size,
			 "bad configuration: ssp:%u needs S <= %d, f32 or bf16, and no replica, "
			 "block planner, fusion or sparsifier", cfg->ssp, INA_SSP_MAX);
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
	pthread_mutex_init(&ctx->lock, NULL);
	{
		struct order_config sc = {
			.policy = (enum order_policy)cfg->sched,
			.window = cfg->sched_window,
			.capacity = cfg->max_pending,
			.max_tensors = 4096,
			.fuse_elems = cfg->fuse_elems,
			.fuse_max = ORDER_FUSE_MAX,
		};

		ctx->max_pending = cfg->max_pending;
		ctx->fuse_elems = cfg->fuse_elems;
		ctx->ops = calloc(cfg->max_pending, sizeof(*ctx->ops));
		if (done_queue_init(&ctx->done, 2 * cfg->max_pending) < 0) {
			ret = -ENOMEM;
			goto fail;
		}
		ctx->sched = order_create(&sc);
		if (cfg->fuse_elems) {
			ctx->fuse_in = calloc(cfg->fuse_elems, sizeof(float));
			ctx->fuse_out = calloc(cfg->fuse_elems, sizeof(float));
		}
		if (!ctx->ops || !ctx->sched ||
		    (cfg->fuse_elems && (!ctx->fuse_in || !ctx->fuse_out))) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	ctx->job_sparsify = cfg->sparsify;
	ctx->job_id = cfg->job_id;
	ctx->rank = cfg->rank;
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
	ec.ssp = cfg->ssp;
	ec.weight = cfg->weight;
	ec.timeout_ns = (uint64_t)cfg->timeout_ms * INA_NS_PER_MS;
	ec.keepalive_ns = (uint64_t)cfg->keepalive_ms * INA_NS_PER_MS;
	ec.pause_ns = (uint64_t)cfg->pause_ms * INA_NS_PER_MS;
	ctx->timeout_ns = ec.timeout_ns;
	ec.rto_ns = (uint64_t)cfg->rto_us * 1000;
	if (ec.rto_min_ns > ec.rto_ns)
		ec.rto_min_ns = ec.rto_ns;
	if (cfg->replica_addr) {
		ec.failover_ns = (uint64_t)cfg->failover_ms * INA_NS_PER_MS;
		/* Resends (and the WAITs a slow peer's round earns them) must
		 * come more often than the failover time, or a live switch
		 * would look silent. */
		if (ec.rto_max_ns > ec.failover_ns / 2)
			ec.rto_max_ns = ec.failover_ns / 2;
	}
	if (ec.rto_max_ns < ec.rto_ns)
		ec.rto_max_ns = ec.rto_ns;
	ec.pool = ctx->port->pool;
	ret = resolve_switches(ctx, cfg->switch_addr, sws, &nb_sw, err, err_size);
	if (ret < 0)
		goto fail;
	ec.sw = sws[0];
	if (cfg->replica_addr) {
		ret = ina_port_resolve(ctx->port, cfg->replica_addr, &ec.replica);
		if (ret < 0) {
			snprintf(err, err_size, "replica address '%s' on the %s port: %s",
				 cfg->replica_addr, ctx->port->ops->type, strerror(-ret));
			if (ret == -ETIMEDOUT || ret == -EHOSTUNREACH || ret == -ENXIO)
				ret = INA_ENOSWITCH;
			goto fail;
		}
		if (ina_peer_equal(&ec.replica, &ec.sw)) {
			snprintf(err, err_size, "the replica '%s' is the switch itself",
				 cfg->replica_addr);
			ret = -EINVAL;
			goto fail;
		}
		snprintf(ctx->replica_addr, sizeof(ctx->replica_addr), "%s", cfg->replica_addr);
	}
	ctx->eg = egroup_create(&ec, sws, nb_sw);
	if (!ctx->eg) {
		ret = -errno;
		snprintf(err, err_size, "host engine: %s", strerror(errno));
		goto fail;
	}
	if (cfg->capture) {
		/* An empty 'self' is the port's own address (its peer_inet). */
		memset(&ctx->self, 0, sizeof(ctx->self));
		ctx->cap = ina_capture_open(cfg->capture, err, err_size);
		if (!ctx->cap) {
			ret = errno ? -errno : -EIO;
			goto fail;
		}
		ina_capture_set_port(ctx->cap, ctx->port);
		ctx->realtime_offset = ina_capture_now_ns() - ina_now_ns();
	}
	egroup_join(ctx->eg, ina_now_ns());
	ret = run_while(ctx, ENGINE_JOINING);
	for (uint16_t k = 0; ret == 0 && k < egroup_count(ctx->eg); k++) {
		if (engine_phase(egroup_engine(ctx->eg, k)) != ENGINE_REDIRECTED)
			continue;
		if (egroup_count(ctx->eg) > 1) {
			snprintf(err, err_size, "switch %u of %u has no slots for job %u and sends "
				 "it to a host aggregator, which a job over several switches "
				 "cannot follow", k, egroup_count(ctx->eg), cfg->job_id);
			ret = INA_ENOSWITCH;
			goto fail;
		}
		if (follow_redirect(ctx, cfg, err, err_size, &ret) < 0)
			goto fail;
	}
	if (ret < 0) {
		snprintf(err, err_size, "%s", egroup_error_msg(ctx->eg));
		/* A replica that would not stand by: the switch, which admitted
		 * the job, hears LEAVE. */
		while (egroup_phase(ctx->eg) == ENGINE_LEAVING)
			run_while(ctx, ENGINE_LEAVING);
		goto fail;
	}
	ctx->block_size = cfg->block_size;
	ctx->last_block_size = cfg->block_size;
	ctx->world = cfg->world;
	/* The switch may have granted fewer lanes than asked (its fair share). */
	ctx->lanes = egroup_lanes(ctx->eg);
	ctx->lanes_asked = cfg->lanes;
	if (ctx->lanes < cfg->lanes)
		INA_LOG(INFO, "job %u rank %u: the switch granted %u of the %u lanes asked "
			"(its fair share of the slots)", cfg->job_id, cfg->rank, ctx->lanes,
			cfg->lanes);
	ctx->encoding = ec.encoding;
	ctx->plan_blocks = cfg->plan_blocks;
	ctx->part.mode = cfg->partition == INA_PARTITION_DYNAMIC ? PARTITION_DYNAMIC
								 : PARTITION_FIXED;
	ctx->part.parts = cfg->partitions ? cfg->partitions : 1;
	if (nb_sw > 1) {
		/* Each switch aggregates one contiguous run (egroup.h). */
		ctx->part.layout = PARTITION_RANGES;
		ctx->part.parts = nb_sw;
	}
	ctx->part.period = cfg->partition_period ? cfg->partition_period : 1;
	ctx->part.lanes = ctx->lanes;	/* granted: the lanes the switch partitions */
	ctx->ssp = cfg->ssp;
	/* Joined: from now on an idle context tells the switch it lives; the
	 * thread wakes four times a period, the engine sends when one is due
	 * (so silence lasts at most 1.25 periods). */
	if (cfg->keepalive_ms) {
		ctx->keepalive = keepalive_start(ec.keepalive_ns / 4 ? ec.keepalive_ns / 4 : 1,
						 keepalive_beat, ctx);
		if (!ctx->keepalive) {
			ret = -errno;
			snprintf(err, err_size, "the keepalive thread: %s", strerror(errno));
			egroup_leave(ctx->eg, ina_now_ns());
			while (egroup_phase(ctx->eg) == ENGINE_LEAVING)
				run_while(ctx, ENGINE_LEAVING);
			goto fail;
		}
	}
	*out = ctx;
	return 0;
fail:
	ina_capture_close(ctx->cap);
	egroup_destroy(ctx->eg);
	ina_port_close(ctx->port);
	order_destroy(ctx->sched);
	free(ctx->ops);
	done_queue_free(&ctx->done);
	free(ctx->fuse_in);
	free(ctx->fuse_out);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
	return ret;
}

static struct sparse_tensor *
find_tensor(const struct ina_ctx *ctx, uint32_t tensor_id)
{
	return tensor_table_get(&ctx->tensors, tensor_id);
}

static struct sparse_tensor *
add_tensor(struct ina_ctx *ctx, uint32_t tensor_id, const struct ina_sparsify *opt)
{
	struct sparse_tensor *t = calloc(1, sizeof(*t));

	if (!t || tensor_table_put(&ctx->tensors, tensor_id, t) < 0) {
		free(t);
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: out of memory for its round state (%u tensors so far)",
			 tensor_id, ctx->tensors.count);
		return NULL;
	}
	t->id = tensor_id;
	t->opt = *opt;
	return t;
}

static int
tensor_sparsify(struct ina_ctx *ctx, uint32_t tensor_id, const struct ina_sparsify *opt)
{
	struct sparsify_config sc;
	struct sparse_tensor *t = find_tensor(ctx, tensor_id);

	if (ctx->ssp && opt->mode != INA_SPARSIFY_OFF) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: no sparsifier under ssp (a dense residual keeps what is late)",
			 tensor_id);
		return -EINVAL;
	}
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
	return add_tensor(ctx, tensor_id, opt) ? 0 : -ENOMEM;
}

int
ina_tensor_sparsify(struct ina_ctx *ctx, uint32_t tensor_id, const struct ina_sparsify *opt)
{
	int ret;

	pthread_mutex_lock(&ctx->lock);
	ret = tensor_sparsify(ctx, tensor_id, opt);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

const float *
ina_residual(const struct ina_ctx *ctx, uint32_t tensor_id, size_t *n)
{
	const struct sparse_tensor *t = find_tensor(ctx, tensor_id);
	const float *r = t && t->tr ? tround_residual(t->tr) : NULL;
	const struct ssp_tensor *st = r ? NULL : tensor_table_get(&ctx->ssp_tensors, tensor_id);

	if (st) {
		if (n)
			*n = ssp_tensor_n(st);
		return ssp_tensor_residual(st);
	}
	if (r && n)
		*n = tround_n(t->tr);
	return r;
}

const uint8_t *
ina_deferred_blocks(const struct ina_ctx *ctx, uint32_t tensor_id, size_t *n_blocks)
{
	const struct sparse_tensor *t = find_tensor(ctx, tensor_id);
	uint32_t nb = 0;
	const uint8_t *d = t && t->tr ? tround_deferred(t->tr, &nb) : NULL;

	if (d && n_blocks)
		*n_blocks = nb;
	return d;
}

/* The tensor's round state: found, or made on its first call (with the
 * job's options unless it has its own). NULL with -errno in 'ret' and a
 * sentence in errmsg; also NULL with 0 when the tensor is plain dense. */
static struct sparse_tensor *
tensor_for(struct ina_ctx *ctx, uint32_t tensor_id, size_t n, int *ret)
{
	struct sparse_tensor *t = find_tensor(ctx, tensor_id);
	struct tround_config tc;

	*ret = 0;
	int rounds = ctx->plan_blocks || ctx->part.mode == PARTITION_DYNAMIC;

	if (!t && (ctx->job_sparsify.mode != INA_SPARSIFY_OFF || rounds)) {
		t = add_tensor(ctx, tensor_id, &ctx->job_sparsify);
		if (!t) {
			*ret = -ENOMEM;
			return NULL;
		}
	}
	if (!t || (t->opt.mode == INA_SPARSIFY_OFF && !rounds))
		return NULL;
	if (t->tr) {
		if (tround_n(t->tr) == n)
			return t;
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: %zu elements, but its sparsifier was made for %zu", tensor_id,
			 n, tround_n(t->tr));
		*ret = -EINVAL;
		return NULL;
	}
	memset(&tc, 0, sizeof(tc));
	tc.tensor_id = tensor_id;
	tc.n = n;
	tc.sp = t->opt;
	tc.plan = ctx->plan_blocks;
	tc.max_block = ctx->block_size;
	tc.encoding = ctx->encoding;
	tc.world = ctx->world;
	tc.lanes = ctx->lanes;
	tc.part = ctx->part;
	t->tr = tround_create(&tc, ctx->errmsg, sizeof(ctx->errmsg));
	if (!t->tr) {
		*ret = -EINVAL;
		return NULL;
	}
	return t;
}

/* What the round of 't' did, into the context's sparsifier stats. */
static void
account(struct ina_ctx *ctx, const struct sparse_tensor *t)
{
	const struct tround_stats *ts = tround_stats(t->tr);

	if (t->opt.mode == INA_SPARSIFY_OFF)
		return;
	ctx->sp.rounds++;
	ctx->sp.blocks += ts->blocks;
	ctx->sp.blocks_sent += ts->blocks_sent;
	ctx->sp.blocks_deferred += ts->blocks_deferred;
	ctx->sp.density = ts->blocks ? (double)ts->blocks_sent / ts->blocks : 0;
	ctx->sp.residual_norm = sqrt(ts->residual_mass);
}

/* The pending operation a handle names, or NULL (0, spent, never given). */
static struct op *
op_of(struct ina_ctx *ctx, uint64_t handle)
{
	struct op *o;

	if (handle == 0)
		return NULL;
	o = &ctx->ops[(handle - 1) % ctx->max_pending];
	return o->state != OP_FREE && o->seq == handle - 1 ? o : NULL;
}

/* Whether the operation 'seq' has ended and waits to be collected. */
static int
op_uncollected(void *arg, uint64_t seq)
{
	const struct ina_ctx *ctx = arg;
	const struct op *o = &ctx->ops[seq % ctx->max_pending];

	return o->state == OP_DONE && o->seq == seq;
}

/* Ends operation 'o' with 'ret'; ina_poll() reports it in this order
 * unless a blocking call of the library waits for it. */
static void
op_end(struct ina_ctx *ctx, struct op *o, int ret)
{
	if (o->t && ret < 0)
		tround_cancel(o->t->tr);	/* the round did not happen */
	o->t = NULL;
	if (o->st) {
		/* ssp: missed blocks back to the residual; the slot is free. */
		ssp_tensor_end(o->st, o->ssp_slot);
		o->st = NULL;
	}
	o->ret = ret;
	o->state = OP_DONE;
	/* The ring holds twice the pending bound: never full of live ones. */
	if (!o->quiet)
		done_queue_push(&ctx->done, o->seq, op_uncollected, ctx);
}

/* Every operation not ended yet ends with the context's error, in
 * submission order (the pending ones are among the last max_pending). */
static void
fail_pending(struct ina_ctx *ctx, int err)
{
	uint64_t next = order_submitted(ctx->sched);
	uint64_t s = next > ctx->max_pending ? next - ctx->max_pending : 0;

	for (; s < next; s++) {
		struct op *o = &ctx->ops[s % ctx->max_pending];

		if (o->seq == s && (o->state == OP_QUEUED || o->state == OP_RUNNING))
			op_end(ctx, o, err);
	}
	ctx->nb_run = 0;
}

/* Operations submitted and not ended. */
static uint32_t
nb_pending(const struct ina_ctx *ctx)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < ctx->max_pending; i++)
		n += ctx->ops[i].state == OP_QUEUED || ctx->ops[i].state == OP_RUNNING;
	return n;
}

/* The tensor's ssp state: found, or made at its first call. NULL with
 * -errno in 'ret' and a sentence in errmsg. */
static struct ssp_tensor *
ssp_tensor_for(struct ina_ctx *ctx, uint32_t tensor_id, size_t n, int *ret)
{
	struct ssp_tensor *t;

	*ret = 0;
	t = tensor_table_get(&ctx->ssp_tensors, tensor_id);
	if (t) {
		if (ssp_tensor_n(t) != n) {
			snprintf(ctx->errmsg, sizeof(ctx->errmsg),
				 "tensor %u: %zu elements, but its first call had %zu", tensor_id, n,
				 ssp_tensor_n(t));
			*ret = -EINVAL;
			return NULL;
		}
		return t;
	}
	if ((uint64_t)n > (uint64_t)ctx->lanes * ctx->block_size) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: under ssp a tensor holds at most lanes x block_size = %u "
			 "elements", tensor_id, (unsigned)ctx->lanes * ctx->block_size);
		*ret = -EINVAL;
		return NULL;
	}
	t = ssp_tensor_create(tensor_id, n, ctx->block_size, ctx->ssp);
	if (!t || tensor_table_put(&ctx->ssp_tensors, tensor_id, t) < 0) {
		ssp_tensor_destroy(t);
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "tensor %u: out of memory for its ssp state", tensor_id);
		*ret = -ENOMEM;
		return NULL;
	}
	return t;
}

/* ssp: starts allreduce 'o' as the engine's next round, from a copy of its
 * input plus the tensor's residual. 0, or its error (it then ended). */
static int
ssp_op_start(struct ina_ctx *ctx, struct op *o)
{
	struct ssp_tensor *t = ssp_tensor_for(ctx, o->tensor_id, o->n, &o->ret);
	const float *send;
	uint8_t *missed;
	int slot, ret;

	if (!t) {
		ret = o->ret;
		goto fail;
	}
	slot = ssp_tensor_begin(t, o->in, &send, &missed);
	if (slot < 0) {
		ret = slot;
		goto fail;
	}
	engine_set_missed(ENG0(ctx), missed);
	o->eng_round = engine_round(ENG0(ctx));
	ret = egroup_allreduce(ctx->eg, o->tensor_id, send, o->out, o->n, ctx->block_size,
			       o->op == INA_AVG ? ENGINE_AVG : ENGINE_SUM, ina_now_ns());
	if (ret < 0) {
		/* Nothing was sent: all of it goes back. */
		memset(missed, 1, (o->n + ctx->block_size - 1) / ctx->block_size);
		ssp_tensor_end(t, slot);
		goto fail;
	}
	o->st = t;
	o->ssp_slot = slot;
	o->state = OP_RUNNING;
	ctx->last_block_size = ctx->block_size;
	ctx->last_part_tag = 0;
	return 0;
fail:
	op_end(ctx, o, ret);
	return ret;
}

/* ssp: the running operations whose round the engine ended, ended well. */
static void
ssp_reap(struct ina_ctx *ctx)
{
	for (uint32_t i = 0; i < ctx->max_pending; i++) {
		struct op *o = &ctx->ops[i];
		if (o->state != OP_RUNNING || !o->st ||
		    engine_in_flight(ENG0(ctx), o->eng_round))
			continue;
		op_end(ctx, o, 0);
	}
}

/* Starts 'o' on the engine: 0, or its error (it then ended). */
static int
op_start(struct ina_ctx *ctx, struct op *o)
{
	struct tround_step step = { .send = o->in, .block_size = ctx->block_size };
	enum engine_op eop = ENGINE_SUM;
	int ret;

	if (o->kind == OP_ALLREDUCE) {
		struct sparse_tensor *t = tensor_for(ctx, o->tensor_id, o->n, &ret);

		if (ret < 0)
			goto fail;
		if (t) {
			t->used = 1;
			if (tround_begin(t->tr, o->in, &step) < 0) {
				snprintf(ctx->errmsg, sizeof(ctx->errmsg),
					 "tensor %u: the sparsifier refused this round",
					 o->tensor_id);
				ret = -EINVAL;
				goto fail;
			}
			o->t = t;
			egroup_set_result_filter(ctx->eg, step.bound, step.deferred);
		}
		eop = o->op == INA_AVG ? ENGINE_AVG : ENGINE_SUM;
	} else if (o->kind == OP_BROADCAST) {
		/* The others add zeros: blocks of zeros are not even sent. */
		if (ctx->rank != o->root)
			memset(o->out, 0, o->n * sizeof(float));
		step.send = o->out;
	}
	/* A partition map's tag in the tensor id: workers with different maps
	 * never match each other's packets (docs/PROTOCOL.md 6.5). */
	ret = egroup_allreduce(ctx->eg, o->tensor_id ^ step.tag, step.send,
			       step.out ? step.out : o->out, o->n, step.block_size, eop,
			       ina_now_ns());
	if (ret < 0)
		goto fail;
	ctx->last_block_size = step.block_size;
	ctx->last_part_tag = step.tag;
	o->state = OP_RUNNING;
	ctx->run[0] = o;
	ctx->nb_run = 1;
	return 0;
fail:
	op_end(ctx, o, ret);
	return ret;
}

/* Starts the dense allreduces 'seqs' (count > 1, one class) as one round
 * of their elements end to end; 0 or the error (they then ended). */
static int
fused_start(struct ina_ctx *ctx, const uint64_t *seqs, uint32_t count)
{
	struct op *first = &ctx->ops[seqs[0] % ctx->max_pending];
	size_t off = 0;
	int ret;

	for (uint32_t i = 0; i < count; i++) {
		struct op *o = &ctx->ops[seqs[i] % ctx->max_pending];

		memcpy(ctx->fuse_in + off, o->in, o->n * sizeof(float));
		off += o->n;
		ctx->run[i] = o;
	}
	ret = egroup_allreduce(ctx->eg, first->tensor_id, ctx->fuse_in, ctx->fuse_out, off,
			       ctx->block_size, first->op == INA_AVG ? ENGINE_AVG : ENGINE_SUM,
			       ina_now_ns());
	for (uint32_t i = 0; i < count; i++) {
		if (ret < 0)
			op_end(ctx, ctx->run[i], ret);
		else
			ctx->run[i]->state = OP_RUNNING;
	}
	if (ret < 0)
		return ret;
	ctx->last_block_size = ctx->block_size;
	ctx->last_part_tag = 0;
	ctx->nb_run = count;
	return 0;
}

/* The running operation's engine round ended well. */
static void
op_finish(struct ina_ctx *ctx, struct op *o)
{
	double ss = 0;

	if (o->t) {
		tround_scatter(o->t->tr, o->out);
		tround_end(o->t->tr, o->out);
		account(ctx, o->t);
	}
	/* The sum's norm, for the magnitude policy: every worker holds the
	 * same bits and sums them in the same order. */
	if (o->kind != OP_BARRIER) {
		for (size_t i = 0; i < o->n; i++)
			ss += (double)o->out[i] * o->out[i];
		order_set_norm(ctx->sched, o->tensor_id, sqrt(ss));
	}
	op_end(ctx, o, 0);
}

/* Starts scheduled operations while the engine is free. */
static void
schedule(struct ina_ctx *ctx)
{
	uint64_t seqs[ORDER_FUSE_MAX];
	uint32_t count;

	if (ctx->ssp) {
		/* Rounds in flight together, as far as the bound lets them. */
		ssp_reap(ctx);
		while (engine_can_start(ENG0(ctx)) &&
		       order_next_group(ctx->sched, seqs, &count) == 0)
			for (uint32_t i = 0; i < count; i++)
				ssp_op_start(ctx, &ctx->ops[seqs[i] % ctx->max_pending]);
		return;
	}
	while (!ctx->nb_run && egroup_phase(ctx->eg) == ENGINE_READY &&
	       !egroup_error(ctx->eg) && order_next_group(ctx->sched, seqs, &count) == 0) {
		if (count == 1)
			op_start(ctx, &ctx->ops[seqs[0] % ctx->max_pending]);
		else
			fused_start(ctx, seqs, count);
	}
}

/* The engine ended the round: every operation it carried ends well. */
static void
round_finish(struct ina_ctx *ctx)
{
	size_t off = 0;

	for (uint32_t i = 0; ctx->nb_run > 1 && i < ctx->nb_run; i++) {
		struct op *o = ctx->run[i];

		memcpy(o->out, ctx->fuse_out + off, o->n * sizeof(float));
		off += o->n;
	}
	for (uint32_t i = 0; i < ctx->nb_run; i++)
		op_finish(ctx, ctx->run[i]);
	ctx->nb_run = 0;
}

/*
 * One progress step: start what the scheduler picks, receive, send, end
 * what the engine ended. Returns whether anything moved, and in
 * '*sleep_ns' how long the caller may sleep in the port (the next timer,
 * at most WAIT_MAX_NS).
 */
static int
step(struct ina_ctx *ctx, uint64_t *sleep_ns)
{
	uint64_t now;
	int moved;

	*sleep_ns = WAIT_MAX_NS;
	if (egroup_error(ctx->eg)) {
		fail_pending(ctx, egroup_error(ctx->eg));
		return 0;
	}
	schedule(ctx);
	/* After the start: the engine's clock never runs backwards. */
	moved = pump(ctx);
	if (egroup_error(ctx->eg)) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg), "%s", egroup_error_msg(ctx->eg));
		fail_pending(ctx, egroup_error(ctx->eg));
		return 1;
	}
	if (ctx->ssp) {
		schedule(ctx);	/* ends what the engine ended, starts more */
	} else if (ctx->nb_run && egroup_phase(ctx->eg) == ENGINE_READY) {
		round_finish(ctx);
		schedule(ctx);
		moved = 1;
	}
	if (!moved) {
		uint64_t deadline = egroup_next_deadline(ctx->eg);

		now = ina_now_ns();
		if (deadline > now && deadline - now < *sleep_ns)
			*sleep_ns = deadline - now;
		else if (deadline <= now)
			*sleep_ns = 0;
	}
	return moved;
}

/* A usable context for a submission: 0 or its error. */
static int
ctx_usable(const struct ina_ctx *ctx)
{
	if (egroup_error(ctx->eg))
		return egroup_error(ctx->eg);
	if (egroup_phase(ctx->eg) != ENGINE_READY && egroup_phase(ctx->eg) != ENGINE_RUNNING)
		return INA_ECLOSED;
	return 0;
}

/* The fusion class of an operation: dense allreduces without the planner,
 * small enough, by op (1 sum, 2 average); 0 for the rest, never fused. */
static uint8_t
fuse_class(const struct ina_ctx *ctx, const struct op *o)
{
	const struct sparse_tensor *t = find_tensor(ctx, o->tensor_id);
	int dense = t ? t->opt.mode == INA_SPARSIFY_OFF
		      : ctx->job_sparsify.mode == INA_SPARSIFY_OFF;

	if (!ctx->fuse_elems || o->kind != OP_ALLREDUCE || !dense || ctx->plan_blocks ||
	    ctx->part.mode == PARTITION_DYNAMIC || o->n >= ctx->fuse_elems)
		return 0;
	return o->op == INA_AVG ? 2 : 1;
}

/* Queues an operation (under the lock): 0 and '*handle', or an error. */
static int
submit(struct ina_ctx *ctx, const struct op *proto, int32_t priority, uint64_t *handle)
{
	uint64_t seq = order_submitted(ctx->sched);
	struct op *o = &ctx->ops[seq % ctx->max_pending];
	uint64_t sleep_ns;
	int ret = ctx_usable(ctx);

	if (ret < 0)
		return ret;
	if (o->state != OP_FREE) {
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "%u operations submitted and not waited for (max_pending)",
			 ctx->max_pending);
		return -EBUSY;
	}
	{
		struct order_op oo = {
			.tensor_id = proto->tensor_id,
			.priority = priority,
			.fence = proto->kind == OP_BARRIER,
			.n = (uint32_t)proto->n,
			.fuse_class = fuse_class(ctx, proto),
		};

		ret = order_submit_op(ctx->sched, &oo, &seq);
	}
	if (ret < 0)
		return -EBUSY;
	*o = *proto;
	o->seq = seq;
	o->state = OP_QUEUED;
	if (o->kind == OP_BARRIER) {
		o->one = 1;
		o->in = &o->one;
		o->out = &o->one;
	}
	*handle = seq + 1;
	step(ctx, &sleep_ns);
	return 0;
}

/* ina_iallreduce(); 'quiet' for a blocking call's own operation. */
static int
iallreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out, size_t n,
	   enum ina_op op, int32_t priority, int quiet, uint64_t *handle)
{
	struct op proto = { .kind = OP_ALLREDUCE, .tensor_id = tensor_id, .in = in, .out = out,
			    .n = n, .op = op, .quiet = quiet };
	int ret;

	if (n == 0 || n >= INA_BLOCK_OPEN || !in || !out || !handle ||
	    (op != INA_SUM && op != INA_AVG))
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	ret = submit(ctx, &proto, priority, handle);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int
ina_iallreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out, size_t n,
	       enum ina_op op, int32_t priority, uint64_t *handle)
{
	return iallreduce(ctx, tensor_id, in, out, n, op, priority, 0, handle);
}

/* ina_ibroadcast(); 'quiet' for a blocking call's own operation. */
static int
ibroadcast(struct ina_ctx *ctx, uint32_t tensor_id, float *buf, size_t n, uint16_t root,
	   int32_t priority, int quiet, uint64_t *handle)
{
	struct op proto = { .kind = OP_BROADCAST, .tensor_id = tensor_id, .in = buf, .out = buf,
			    .n = n, .root = root, .quiet = quiet };
	int ret;

	if (n == 0 || n >= INA_BLOCK_OPEN || !buf || !handle || root >= ctx->world || ctx->ssp)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	ret = submit(ctx, &proto, priority, handle);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int
ina_ibroadcast(struct ina_ctx *ctx, uint32_t tensor_id, float *buf, size_t n, uint16_t root,
	       int32_t priority, uint64_t *handle)
{
	return ibroadcast(ctx, tensor_id, buf, n, root, priority, 0, handle);
}

/* ina_ibarrier(); 'quiet' for a blocking call's own operation. */
static int
ibarrier(struct ina_ctx *ctx, int quiet, uint64_t *handle)
{
	struct op proto = { .kind = OP_BARRIER, .tensor_id = INA_BARRIER_TENSOR, .n = 1,
			    .quiet = quiet };
	int ret;

	if (!handle || ctx->ssp)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	ret = submit(ctx, &proto, 0, handle);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int
ina_ibarrier(struct ina_ctx *ctx, uint64_t *handle)
{
	return ibarrier(ctx, 0, handle);
}

int
ina_flush(struct ina_ctx *ctx)
{
	uint64_t sleep_ns;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	order_flush(ctx->sched);
	step(ctx, &sleep_ns);
	ret = egroup_error(ctx->eg);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

/* The end of a DONE operation, which frees its slot. */
static int
op_collect(struct op *o)
{
	int ret = o->ret;

	o->state = OP_FREE;
	return ret;
}

int
ina_test(struct ina_ctx *ctx, uint64_t handle)
{
	struct op *o;
	uint64_t sleep_ns;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	o = op_of(ctx, handle);
	if (!o) {
		ret = -EINVAL;
	} else {
		if (o->state != OP_DONE)
			step(ctx, &sleep_ns);
		ret = o->state != OP_DONE ? 0 : op_collect(o) < 0 ? o->ret : 1;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int
ina_wait(struct ina_ctx *ctx, uint64_t handle)
{
	uint64_t stuck_since = 0;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		struct op *o = op_of(ctx, handle);
		uint64_t sleep_ns;

		if (!o) {
			ret = -EINVAL;
			break;
		}
		if (o->state == OP_DONE) {
			ret = op_collect(o);
			break;
		}
		if (step(ctx, &sleep_ns) || o->state == OP_DONE)
			continue;
		/* Nothing runs and the scheduler waits for submissions that
		 * may never come: bounded by the engine's timeout too. */
		if (!ctx->nb_run && o->state == OP_QUEUED && order_waiting(ctx->sched)) {
			uint64_t now = ina_now_ns();

			if (!stuck_since)
				stuck_since = now;
			else if (now - stuck_since > ctx->timeout_ns) {
				snprintf(ctx->errmsg, sizeof(ctx->errmsg),
					 "operation %" PRIu64 " (tensor %u) waits for a scheduler "
					 "window that nothing closed for %" PRIu64 " ms: submit the "
					 "rest of the step or call ina_flush()",
					 handle, o->tensor_id, (uint64_t)(ctx->timeout_ns / INA_NS_PER_MS));
				ret = -EDEADLK;
				break;
			}
			if (sleep_ns > INA_NS_PER_MS)
				sleep_ns = INA_NS_PER_MS;
		} else {
			stuck_since = 0;
		}
		pthread_mutex_unlock(&ctx->lock);
		if (sleep_ns)
			ina_port_wait(ctx->port, sleep_ns);
		pthread_mutex_lock(&ctx->lock);
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int
ina_progress(struct ina_ctx *ctx, uint32_t wait_us)
{
	uint64_t sleep_ns;
	int moved, ret;

	pthread_mutex_lock(&ctx->lock);
	moved = step(ctx, &sleep_ns);
	ret = egroup_error(ctx->eg);
	pthread_mutex_unlock(&ctx->lock);
	if (!moved && wait_us && !ret) {
		uint64_t max = (uint64_t)wait_us * 1000;

		ina_port_wait(ctx->port, sleep_ns < max ? sleep_ns : max);
	}
	return ret;
}

/* Up to 'max' ended operations, oldest end first, collected (under the
 * lock). */
static unsigned
poll_collect(struct ina_ctx *ctx, struct ina_completion *done, unsigned max)
{
	unsigned n = 0;
	uint64_t seq;

	while (n < max && done_queue_pop(&ctx->done, &seq, op_uncollected, ctx)) {
		struct op *o = &ctx->ops[seq % ctx->max_pending];

		done[n].handle = seq + 1;
		done[n].status = op_collect(o);
		done[n].reserved = 0;
		n++;
	}
	return n;
}

int
ina_poll(struct ina_ctx *ctx, struct ina_completion *done, unsigned max, uint32_t wait_us)
{
	uint64_t sleep_ns;
	unsigned n;
	int moved, ret;

	if (!ctx || !done || max == 0)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	moved = step(ctx, &sleep_ns);
	n = poll_collect(ctx, done, max);
	if (n == 0 && !moved && wait_us && !egroup_error(ctx->eg)) {
		uint64_t max_ns = (uint64_t)wait_us * 1000;

		/* Sleep in the port without the lock, as ina_wait() does:
		 * other threads submit meanwhile. */
		pthread_mutex_unlock(&ctx->lock);
		if (sleep_ns)
			ina_port_wait(ctx->port, sleep_ns < max_ns ? sleep_ns : max_ns);
		pthread_mutex_lock(&ctx->lock);
		step(ctx, &sleep_ns);
		n = poll_collect(ctx, done, max);
	}
	ret = n ? (int)n : egroup_error(ctx->eg);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

/* ssp: the tensor's state for ina_allreduce(), made at its first call. */
static struct ssp_tensor *
ssp_tensor_locked(struct ina_ctx *ctx, uint32_t tensor_id, size_t n, int *ret)
{
	struct ssp_tensor *t;

	pthread_mutex_lock(&ctx->lock);
	t = ssp_tensor_for(ctx, tensor_id, n, ret);
	pthread_mutex_unlock(&ctx->lock);
	return t;
}

/* ssp: waits for the tensor's oldest call not returned yet, into 'out'. */
static int
ssp_return(struct ina_ctx *ctx, struct ssp_tensor *t, float *out)
{
	uint64_t call = ssp_tensor_returned(t);
	int ret = ina_wait(ctx, *ssp_tensor_handle(t, call));

	ssp_tensor_return(t);
	if (ret < 0)
		return ret;
	memcpy(out, ssp_tensor_out(t, call), ssp_tensor_n(t) * sizeof(float));
	return 0;
}

/* ina_allreduce() under ssp: this call's round starts, the sum of the call S
 * back comes out (ina.h, "Bounded staleness"). */
static int
ssp_allreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out, size_t n,
	      enum ina_op op)
{
	struct ssp_tensor *t;
	uint64_t call;
	int ret;

	if (n == 0 || n >= INA_BLOCK_OPEN || !in || !out || (op != INA_SUM && op != INA_AVG))
		return -EINVAL;
	t = ssp_tensor_locked(ctx, tensor_id, n, &ret);
	if (!t)
		return ret;
	call = ssp_tensor_calls(t);
	ret = iallreduce(ctx, tensor_id, in, ssp_tensor_out(t, call), n, op, 0, 1,
			 ssp_tensor_handle(t, call));
	if (ret < 0)
		return ret;
	ssp_tensor_called(t);
	ina_flush(ctx);
	/* The round copies 'in' when it starts: before this returns, as the
	 * caller may reuse 'in' (or 'out', the same buffer) at once. */
	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		struct op *o = op_of(ctx, *ssp_tensor_handle(t, call));
		uint64_t sleep_ns;

		if (!o || o->state != OP_QUEUED)
			break;
		if (step(ctx, &sleep_ns))
			continue;
		pthread_mutex_unlock(&ctx->lock);
		if (sleep_ns)
			ina_port_wait(ctx->port, sleep_ns);
		pthread_mutex_lock(&ctx->lock);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (call < ctx->ssp) {
		memset(out, 0, n * sizeof(float));	/* nothing is back yet */
		return 0;
	}
	return ssp_return(ctx, t, out);
}

int
ina_ssp_next(struct ina_ctx *ctx, uint32_t tensor_id, float *out)
{
	struct ssp_tensor *t = NULL;
	int ret;

	if (!ctx->ssp || !out)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	t = tensor_table_get(&ctx->ssp_tensors, tensor_id);
	pthread_mutex_unlock(&ctx->lock);
	if (!t || ssp_tensor_returned(t) == ssp_tensor_calls(t))
		return 0;
	ret = ssp_return(ctx, t, out);
	return ret < 0 ? ret : 1;
}

int
ina_allreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out, size_t n,
	      enum ina_op op)
{
	uint64_t h;
	int ret;

	if (ctx->ssp)
		return ssp_allreduce(ctx, tensor_id, in, out, n, op);
	ret = iallreduce(ctx, tensor_id, in, out, n, op, 0, 1, &h);

	if (ret < 0)
		return ret;
	ina_flush(ctx);
	return ina_wait(ctx, h);
}

int
ina_broadcast(struct ina_ctx *ctx, uint32_t tensor_id, float *buf, size_t n, uint16_t root)
{
	uint64_t h;
	int ret = ibroadcast(ctx, tensor_id, buf, n, root, 0, 1, &h);

	if (ret < 0)
		return ret;
	ina_flush(ctx);
	return ina_wait(ctx, h);
}

int
ina_barrier(struct ina_ctx *ctx)
{
	uint64_t h;
	int ret = ibarrier(ctx, 1, &h);

	return ret < 0 ? ret : ina_wait(ctx, h);
}

void
ina_get_stats_size(const struct ina_ctx *ctx, struct ina_stats *out, size_t size)
{
	struct ina_stats full;
	struct ina_stats *s = &full;
	struct engine_stats est;
	const struct engine_stats *es = &est;
	const struct ina_port_stats *ps = &ctx->port->stats;

	pthread_mutex_lock((pthread_mutex_t *)&ctx->lock);
	egroup_stats(ctx->eg, &est);
	memset(s, 0, sizeof(*s));
	s->rounds = es->rounds;
	s->bytes_sent = es->bytes_sent;
	s->bytes_received = es->bytes_recv;
	s->packets_sent = es->pkts_sent;
	s->packets_received = es->pkts_recv;
	s->data_packets = es->data_sent;
	s->empty_packets = es->empty_sent;
	s->retransmits = es->retransmits;
	s->stalls = es->stalls;
	s->waits = es->waits;
	s->ssp_missed = es->ssp_missed;
	s->lanes = egroup_lanes(ctx->eg);	/* after a give-back too */
	s->lanes_asked = ctx->lanes_asked;
	snprintf(s->aggregator, sizeof(s->aggregator), "%s", ctx->aggregator);
	s->failovers = es->failovers;
	s->failover_silence_ms = (double)es->failover_silence_ns / 1e6;
	s->dropped = es->bad;
	s->stale = es->stale;
	s->tx_bursts = ps->tx_bursts;
	s->rx_bursts = ps->rx_bursts;
	s->inject_drop = ps->inject_drop;
	s->inject_dup = ps->inject_dup;
	s->inject_reorder = ps->inject_reorder;
	s->inject_delay = ps->inject_delay;
	s->inject_corrupt = ps->inject_corrupt;
	s->csum_drops = ps->rx_csum_bad;
	s->sparse_rounds = ctx->sp.rounds;
	s->sparse_blocks = ctx->sp.blocks;
	s->sparse_blocks_sent = ctx->sp.blocks_sent;
	s->sparse_blocks_deferred = ctx->sp.blocks_deferred;
	s->density_sent = ctx->sp.density;
	s->block_size = ctx->last_block_size;
	s->partition_tag = ctx->last_part_tag;
	s->residual_norm = ctx->sp.residual_norm;
	{
		const struct sparse_tensor *t;
		uint32_t it = 0;
		double m = 0;

		while ((t = tensor_table_next(&ctx->tensors, &it))) {
			if (!t->tr)
				continue;
			s->partition_rebalances += tround_stats(t->tr)->rebalances;
			m += tround_stats(t->tr)->residual_mass;
		}
		s->residual_norm_total = sqrt(m);
	}
	pthread_mutex_unlock((pthread_mutex_t *)&ctx->lock);
	if (size < sizeof(full.size))
		return;
	full.size = (uint32_t)(size < sizeof(full) ? size : sizeof(full));
	memcpy(out, &full, full.size);
}

const char *
ina_stats_aggregator(const struct ina_ctx *ctx)
{
	return ctx->aggregator;
}

const char *
ina_last_error(const struct ina_ctx *ctx)
{
	return ctx->errmsg;
}

uint32_t
ina_epoch(const struct ina_ctx *ctx)
{
	return engine_epoch(ENG0(ctx));
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
	/* Before anything it beats on is touched. */
	keepalive_stop(ctx->keepalive);
	ret = egroup_error(ctx->eg);
	if (nb_pending(ctx))
		egroup_leave(ctx->eg, ina_now_ns());
	else
		egroup_finish(ctx->eg, ina_now_ns());
	while (egroup_phase(ctx->eg) == ENGINE_FINISHING ||
	       egroup_phase(ctx->eg) == ENGINE_LEAVING)
		run_while(ctx, egroup_phase(ctx->eg));
	if (ina_capture_close(ctx->cap) < 0 && ret == 0)
		ret = -EIO;
	egroup_destroy(ctx->eg);
	ina_port_close(ctx->port);
	{
		struct sparse_tensor *t;
		struct ssp_tensor *st;
		uint32_t it = 0;

		while ((t = tensor_table_next(&ctx->tensors, &it))) {
			tround_destroy(t->tr);
			free(t);
		}
		it = 0;
		while ((st = tensor_table_next(&ctx->ssp_tensors, &it)))
			ssp_tensor_destroy(st);
		tensor_table_free(&ctx->tensors);
		tensor_table_free(&ctx->ssp_tensors);
	}
	order_destroy(ctx->sched);
	free(ctx->ops);
	done_queue_free(&ctx->done);
	free(ctx->fuse_in);
	free(ctx->fuse_out);
	pthread_mutex_destroy(&ctx->lock);
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
