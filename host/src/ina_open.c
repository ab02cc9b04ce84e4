/* SPDX-License-Identifier: MIT */
/*
 * An API context's life (ina.h): the configuration's defaults and sizes,
 * opening (checking the configuration, the port, the switches' addresses,
 * the engines, joining, a REDIRECT followed, the keepalive thread) and
 * closing (the goodbye, everything freed).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina_int.h"
#include "ina/capture.h"
#include "ina/log.h"
#include "ina/auth.h"
#include "ina/token.h"
#include "planner.h"
#include "sparsify_opts.h"
#include "ssp_tensor.h"

const char *
ina_version(void)
{
	return INA_VERSION_STRING;
}

/* The API's encoding of the engine's (wire.h): INA_F32 for INA_ENC_F32. */
static enum ina_encoding_type
api_encoding(uint8_t enc)
{
	switch (enc) {
	case INA_ENC_I32:
		return INA_I32;
	case INA_ENC_BF16:
		return INA_BF16;
	default:
		return INA_F32;
	}
}

/*
 * The defaults of every field, in the library's own layout. What the engine
 * has a default for (world, lanes, encoding, timeouts) comes from
 * engine_config_init(), the one place those are written; the rest is the
 * API's own. The block size is left unset (0): ina_open() takes the
 * engine's, or with the planner what the port's packets hold (job_block()).
 * The keepalive is the API's alone: an engine sends none unless asked, an
 * open context beats every second.
 */
static void
config_defaults(struct ina_config *cfg)
{
	struct engine_config ec;

	engine_config_init(&ec);
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->port = "udp";
	cfg->world = ec.world;
	cfg->lanes = ec.lanes;
	cfg->block_size = 0; /* unset: job_block() at ina_open() */
	cfg->encoding = api_encoding(ec.encoding);
	cfg->timeout_ms = (uint32_t)(ec.timeout_ns / INA_NS_PER_MS);
	cfg->rto_us = (uint32_t)(ec.rto_ns / 1000);
	cfg->failover_ms = (uint32_t)(ec.failover_ns / INA_NS_PER_MS);
	cfg->pause_ms = (uint32_t)(ec.pause_ns / INA_NS_PER_MS);
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
	cfg->plan_packet_ns = PLANNER_UDP_PACKET_NS;
	cfg->plan_byte_ns = PLANNER_UDP_BYTE_NS;
	cfg->plan_cut_packet_ns = PLANNER_UDP_CUT_PACKET_NS;
	cfg->plan_cut_sub_ns = PLANNER_UDP_CUT_SUB_NS;
	cfg->threads = 1;
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

int
ina_tenant_from(const char *key_file, struct ina_config *cfg, char *err, size_t err_size)
{
	uint8_t index, key[INA_TENANT_KEY_SIZE];
	int ret = ina_auth_tenant_load(key_file, &index, key, err, err_size);

	if (ret <= 0)
		return ret;
	cfg->tenant = index;
	memcpy(cfg->tenant_key, key, sizeof(key));
	memset(key, 0, sizeof(key));
	return 1;
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

/* Where the JOINs go, as the port writes the switches' addresses. */
static void
join_targets(struct ina_ctx *ctx, const struct ina_peer *sws, uint16_t nb)
{
	size_t len = 0;

	ctx->join_to[0] = '\0';
	for (uint16_t i = 0; i < nb && len < sizeof(ctx->join_to); i++) {
		char peer[64];

		len += (size_t)snprintf(ctx->join_to + len, sizeof(ctx->join_to) - len, "%s%s",
					i	 ? ", "
					: nb > 1 ? "the switches "
						 : "the switch ",
					ina_port_peer_str(ctx->port, &sws[i], peer, sizeof(peer)));
	}
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
			snprintf(err, err_size,
				 "switch addresses '%s': 1 to %d of ADDR:PORT, "
				 "separated by commas",
				 list, EGROUP_MAX);
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
 * join there: '*ret' is what ina_run_while() returns. -1 with '*ret' set and
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
		snprintf(err, err_size,
			 "the switch %s sent the job to the host aggregator %s, "
			 "which does not resolve on the %s port: %s",
			 cfg->switch_addr, ctx->aggregator, ctx->port->ops->type, strerror(-ret));
		*out_ret = INA_ENOSWITCH;
		return -1;
	}
	INA_LOG(INFO,
		"job %u rank %u: the switch %s has no slots for the job: it is aggregated "
		"by the host aggregator at %s",
		cfg->job_id, cfg->rank, cfg->switch_addr, ctx->aggregator);
	snprintf(ctx->join_to, sizeof(ctx->join_to), "the host aggregator %s", ctx->aggregator);
	engine_redirect(egroup_engine(ctx->eg, 0), &peer, ina_now_ns());
	*out_ret = ina_run_while(ctx, ENGINE_JOINING);
	return 0;
}

/* The worker threads and their list (which frees the packets it holds:
 * before the port's pool goes). */
static void
ctx_workers_free(struct ina_ctx *ctx)
{
	workers_destroy(ctx->workers);
	payload_work_destroy(ctx->work);
	ctx->workers = NULL;
	ctx->work = NULL;
}

/* What a context owns besides its engines, port and capture: its tensors,
 * the scheduler, the operation ring and fusion buffers; then the context.
 * For a failed ina_open() (tables still empty) and for ina_close(). */
static void
ctx_free(struct ina_ctx *ctx)
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
	order_destroy(ctx->sched);
	free(ctx->ops);
	done_queue_free(&ctx->done);
	free(ctx->fuse_in);
	free(ctx->fuse_out);
	free(ctx->blk_chain);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

/* The job's largest B for a port of 'max_pkt'-byte packets (tensor_round.h
 * tround_job_block()): block_size, or when unset the planner's largest fit,
 * else the engine's default. */
static uint16_t
job_block(const struct ina_config *cfg, uint32_t max_pkt)
{
	struct engine_config ec;

	engine_config_init(&ec);
	return tround_job_block(cfg->block_size, cfg->plan_blocks, cfg->sub_block,
				wire_encoding(cfg->encoding), max_pkt, ec.max_block);
}

/* The checks of sub_block and the sparsifier against the job's block size
 * (job_block()'s): 0, or -EINVAL with 'err' saying why. */
static int
check_blocks(const struct ina_config *cfg, char *err, size_t err_size)
{
	struct sparsify_config sc;

	if (cfg->sub_block &&
	    ((cfg->sub_block & (cfg->sub_block - 1)) || cfg->block_size % cfg->sub_block ||
	     !tround_sub_log(cfg->block_size, cfg->sub_block))) {
		snprintf(err, err_size,
			 "bad configuration: sub_block %u: a power of two that cuts block_size "
			 "%u into 2 to %u sub-blocks (block_size / sub_block a power of two)",
			 cfg->sub_block, cfg->block_size, INA_SUB_MAX);
		return -EINVAL;
	}
	if (ina_sparsify_config(&cfg->sparsify, cfg->block_size, cfg->block_size, &sc) < 0) {
		snprintf(err, err_size,
			 "bad sparsifier options: mode 0..3, density and mass in (0, 1], a "
			 "byte budget of at least one block, filter b0 >= 0 and decay in "
			 "(0, 1]");
		return -EINVAL;
	}
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
		snprintf(err, err_size,
			 "struct ina_config of %" PRIu32 " bytes: not one this library "
			 "(%s) knows; set it with ina_config_init()",
			 user_cfg->size, INA_VERSION_STRING);
		return -EINVAL;
	}
	if (!cfg->switch_addr || !wire_encoding(cfg->encoding) || cfg->world == 0 ||
	    cfg->world > INA_MAX_WORLD || cfg->rank >= cfg->world || cfg->lanes == 0 ||
	    cfg->timeout_ms == 0 || cfg->rto_us == 0 ||
	    (cfg->replica_addr && cfg->failover_ms == 0) || cfg->max_pending == 0 ||
	    cfg->max_pending > 65536 || (unsigned)cfg->sched > INA_SCHED_MAGNITUDE ||
	    cfg->fuse_elems > (1u << 24)) {
		snprintf(err, err_size,
			 "bad configuration: need a switch address, rank < world <= %d, lanes "
			 "and timeouts (and the failover time) above 0, max_pending "
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
			 "partitions 1..%d",
			 PARTITION_MAX_PARTS);
		return -EINVAL;
	}
	if (!(cfg->plan_packet_ns >= 0 && cfg->plan_packet_ns <= 1e6) ||
	    !(cfg->plan_byte_ns >= 0 && cfg->plan_byte_ns <= 1e6) ||
	    !(cfg->plan_cut_packet_ns >= 0 && cfg->plan_cut_packet_ns <= 1e6) ||
	    !(cfg->plan_cut_sub_ns >= 0 && cfg->plan_cut_sub_ns <= 1e6) ||
	    (cfg->plan_packet_ns == 0 && cfg->plan_byte_ns == 0)) {
		snprintf(err, err_size,
			 "bad configuration: plan_packet_ns %g, plan_byte_ns %g, "
			 "plan_cut_packet_ns %g, plan_cut_sub_ns %g: ns up to 1e6, >= 0, the "
			 "first two not both 0",
			 cfg->plan_packet_ns, cfg->plan_byte_ns, cfg->plan_cut_packet_ns,
			 cfg->plan_cut_sub_ns);
		return -EINVAL;
	}
	if (cfg->threads > INA_THREADS_MAX) {
		snprintf(err, err_size, "bad configuration: threads %u: 1..%d", cfg->threads,
			 INA_THREADS_MAX);
		return -EINVAL;
	}
	if (cfg->ssp > INA_SSP_MAX ||
	    (cfg->ssp && (cfg->encoding == INA_I32 || cfg->replica_addr || cfg->plan_blocks ||
			  cfg->fuse_elems || cfg->sparsify.mode != INA_SPARSIFY_OFF))) {
		snprintf(err, err_size,
			 "bad configuration: ssp:%u needs S <= %d, f32 or bf16, and no replica, "
			 "block planner, fusion or sparsifier",
			 cfg->ssp, INA_SSP_MAX);
		return -EINVAL;
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
	ctx->magnitude = cfg->sched == INA_SCHED_MAGNITUDE;
	ctx->job_id = cfg->job_id;
	ctx->rank = cfg->rank;
	ret = ina_port_open(cfg->port ? cfg->port : "udp", &ctx->port, err, (unsigned)err_size);
	if (ret < 0) {
		ret = INA_EPORT;
		goto fail;
	}
	full.block_size = job_block(cfg, ctx->port->max_pkt);
	if (full.block_size == 0) {
		snprintf(err, err_size,
			 "the port's %u-byte packets hold no block of %u elements with the "
			 "planner's largest sub-block mask",
			 ctx->port->max_pkt, PLANNER_MIN_BLOCK);
		ret = -EINVAL;
		goto fail;
	}
	ret = check_blocks(cfg, err, err_size);
	if (ret < 0)
		goto fail;
	if ((uint64_t)INA_HDR_SIZE +
		    (uint64_t)cfg->block_size * ina_wire_elem_size(wire_encoding(cfg->encoding)) >
	    ctx->port->max_pkt) {
		snprintf(err, err_size, "block size %u does not fit the port's %u-byte packets",
			 cfg->block_size, ctx->port->max_pkt);
		ret = -EINVAL;
		goto fail;
	}
	if (cfg->sub_block &&
	    (uint64_t)INA_HDR_SIZE +
			    ina_wire_mask_bytes(tround_sub_log(cfg->block_size, cfg->sub_block)) +
			    (uint64_t)cfg->block_size *
				    ina_wire_elem_size(wire_encoding(cfg->encoding)) >
		    ctx->port->max_pkt) {
		snprintf(err, err_size,
			 "block size %u with its sub-block mask does not fit the port's %u-byte "
			 "packets",
			 cfg->block_size, ctx->port->max_pkt);
		ret = -EINVAL;
		goto fail;
	}
	/* The planner cuts blocks (sub_block 0): any of its masks must fit. */
	if (cfg->plan_blocks && !cfg->sub_block &&
	    (uint64_t)INA_HDR_SIZE + INA_SUB_MAX / 8 +
			    (uint64_t)cfg->block_size *
				    ina_wire_elem_size(wire_encoding(cfg->encoding)) >
		    ctx->port->max_pkt) {
		snprintf(err, err_size,
			 "block size %u with the planner's largest sub-block mask (%u bytes) "
			 "does not fit the port's %u-byte packets: a smaller block_size",
			 cfg->block_size, INA_SUB_MAX / 8, ctx->port->max_pkt);
		ret = -EINVAL;
		goto fail;
	}
	engine_config_init(&ec);
	ec.job_id = cfg->job_id;
	if (cfg->tenant) {
		/* The wire's job id names the tenant in its top byte. */
		if (cfg->job_id > INA_TENANT_JOB_MAX) {
			snprintf(err, err_size,
				 "job id %" PRIu32 ": with a tenant, job ids are 0..%u (the top "
				 "byte on the wire is the tenant's index)",
				 cfg->job_id, INA_TENANT_JOB_MAX);
			ret = -EINVAL;
			goto fail;
		}
		ec.job_id = (uint32_t)cfg->tenant << INA_TENANT_SHIFT | cfg->job_id;
		ec.auth = 1;
		ina_auth_job_key(cfg->tenant_key, ec.job_id, &ec.key);
	}
	ec.rank = cfg->rank;
	ec.world = cfg->world;
	ec.lanes = cfg->lanes;
	ec.max_block = cfg->block_size;
	ec.encoding = wire_encoding(cfg->encoding);
	ec.token = cfg->tenant ? 0 : cfg->token; /* a tenant: the tag takes its field */
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
	join_targets(ctx, sws, nb_sw);
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
	if (cfg->threads > 1) {
		/* A burst's tasks: its received and sent packets' blocks. */
		ctx->work = payload_work_create(4 * INA_MAX_BURST);
		ctx->workers = ctx->work ? workers_create(cfg->threads - 1) : NULL;
		if (!ctx->workers) {
			ret = -errno;
			snprintf(err, err_size, "%u threads: %s", cfg->threads, strerror(errno));
			goto fail;
		}
		ec.work = ctx->work;
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
	ret = ina_run_while(ctx, ENGINE_JOINING);
	for (uint16_t k = 0; ret == 0 && k < egroup_count(ctx->eg); k++) {
		if (engine_phase(egroup_engine(ctx->eg, k)) != ENGINE_REDIRECTED)
			continue;
		if (egroup_count(ctx->eg) > 1) {
			snprintf(err, err_size,
				 "switch %u of %u has no slots for job %u and sends "
				 "it to a host aggregator, which a job over several switches "
				 "cannot follow",
				 k, egroup_count(ctx->eg), cfg->job_id);
			ret = INA_ENOSWITCH;
			goto fail;
		}
		if (follow_redirect(ctx, cfg, err, err_size, &ret) < 0)
			goto fail;
	}
	if (ret < 0) {
		snprintf(err, err_size, "%s", egroup_error_msg(ctx->eg));
		if (ret == INA_ENOSWITCH && ina_join_unanswered(ctx)) {
			size_t len = strlen(err);

			if (len + 2 < err_size) {
				snprintf(err + len, err_size - len, "; ");
				ina_join_hint(ctx, err + len + 2, err_size - len - 2);
			}
		}
		/* A replica that would not stand by: the switch, which admitted
		 * the job, hears LEAVE. */
		while (egroup_phase(ctx->eg) == ENGINE_LEAVING)
			ina_run_while(ctx, ENGINE_LEAVING);
		goto fail;
	}
	ctx->block_size = cfg->block_size;
	ctx->sub_block = cfg->sub_block;
	ctx->sub_log = tround_sub_log(cfg->block_size, cfg->sub_block);
	ctx->last_block_size = cfg->block_size;
	ctx->world = cfg->world;
	/* The switch may have granted fewer lanes than asked (its fair share). */
	ctx->lanes = egroup_lanes(ctx->eg);
	ctx->lanes_asked = cfg->lanes;
	if (ctx->lanes < cfg->lanes)
		INA_LOG(INFO,
			"job %u rank %u: the switch granted %u of the %u lanes asked "
			"(its fair share of the slots)",
			cfg->job_id, cfg->rank, ctx->lanes, cfg->lanes);
	ctx->encoding = ec.encoding;
	ctx->plan_blocks = cfg->plan_blocks;
	ctx->plan_packet_ns = cfg->plan_packet_ns;
	ctx->plan_byte_ns = cfg->plan_byte_ns;
	ctx->plan_cut_packet_ns = cfg->plan_cut_packet_ns;
	ctx->plan_cut_sub_ns = cfg->plan_cut_sub_ns;
	ctx->plan_period = cfg->plan_period;
	ctx->part.mode = cfg->partition == INA_PARTITION_DYNAMIC ? PARTITION_DYNAMIC
								 : PARTITION_FIXED;
	ctx->part.parts = cfg->partitions ? cfg->partitions : 1;
	if (nb_sw > 1) {
		/* Each switch aggregates one contiguous run (egroup.h). */
		ctx->part.layout = PARTITION_RANGES;
		ctx->part.parts = nb_sw;
	}
	ctx->part.period = cfg->partition_period ? cfg->partition_period : 1;
	ctx->part.lanes = ctx->lanes; /* granted: the lanes the switch partitions */
	ctx->ssp = cfg->ssp;
	/* Joined: from now on an idle context tells the switch it lives; the
	 * thread wakes four times a period, the engine sends when one is due
	 * (so silence lasts at most 1.25 periods). */
	if (cfg->keepalive_ms) {
		ctx->keepalive = keepalive_start(ec.keepalive_ns / 4 ? ec.keepalive_ns / 4 : 1,
						 ina_keepalive_beat, ctx);
		if (!ctx->keepalive) {
			ret = -errno;
			snprintf(err, err_size, "the keepalive thread: %s", strerror(errno));
			egroup_leave(ctx->eg, ina_now_ns());
			while (egroup_phase(ctx->eg) == ENGINE_LEAVING)
				ina_run_while(ctx, ENGINE_LEAVING);
			goto fail;
		}
	}
	*out = ctx;
	return 0;
fail:
	ina_capture_close(ctx->cap);
	egroup_destroy(ctx->eg);
	ctx_workers_free(ctx);
	ina_port_close(ctx->port);
	ctx_free(ctx);
	return ret;
}

int
ina_close(struct ina_ctx *ctx)
{
	int ret;

	if (!ctx)
		return 0;
	/* Before anything it beats on is touched. */
	keepalive_stop(ctx->keepalive);
	ret = ina_ctx_error(ctx);
	if (ina_nb_pending(ctx))
		egroup_leave(ctx->eg, ina_now_ns());
	else
		egroup_finish(ctx->eg, ina_now_ns());
	while (egroup_phase(ctx->eg) == ENGINE_FINISHING || egroup_phase(ctx->eg) == ENGINE_LEAVING)
		ina_run_while(ctx, egroup_phase(ctx->eg));
	if (ina_capture_close(ctx->cap) < 0 && ret == 0)
		ret = -EIO;
	egroup_destroy(ctx->eg);
	ctx_workers_free(ctx);
	ina_port_close(ctx->port);
	ctx_free(ctx);
	return ret;
}
