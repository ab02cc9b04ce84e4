/* SPDX-License-Identifier: MIT */
/*
 * Inside the public C API (ina.h) over the host engines and a port: the
 * context, its operations, and the functions the API's files call in one
 * another. Each call runs the same step: start the operation the scheduler
 * (order.h) picks when the engine is free, receive a burst into the engine,
 * send what the engine has to send, finish the operation the engine ended;
 * a blocking call repeats it and, when nothing moved, sleeps in the port
 * until a packet arrives or the engine's next timer is due. The engine's
 * own timeout bounds every call. Operations live in a ring of
 * cfg.max_pending slots indexed by their submission number; a handle is
 * that number plus one. A mutex per context makes the calls thread-safe.
 *
 * The files, each calling only into the ones below it:
 *
 *   ina_open.c      the configuration, ina_open, ina_close
 *   ina_stats.c     what an open context tells (stats, epoch, last error)
 *   ina_blocking.c  ina_allreduce (and its ssp path), ina_broadcast, ina_barrier
 *   ina_async.c     submitting, scheduling, the progress step, test/wait/poll
 *   ina_ssp.c       an ssp round started and ended on the engine
 *   ina_tensor.c    the tensors' sparsifier options and round state
 *   ina_ops.c       the operations' slots: ended, failed, collected
 *   ina_pump.c      the port and the engines: a burst each way, run_while
 *   ina_err.c       the engine's error codes as the API's, ina_strerror
 */
#ifndef INA_INA_INT_H
#define INA_INA_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "done_queue.h"
#include "egroup.h"
#include "engine.h"
#include "ina.h"
#include "ina/port.h"
#include "ina/util.h"
#include "keepalive.h"
#include "order.h"
#include "partition.h"
#include "payload_work.h"
#include "sparsify.h"
#include "ssp_tensor.h"
#include "tensor_round.h"
#include "tensor_table.h"
#include "workers.h"

/* The engine of switch 0: the only one under ssp and with a replica. */
#define ENG0(ctx) egroup_engine((ctx)->eg, 0)

/* JOINs unanswered this long: a warning saying where they go (the join
 * itself fails only after the timeout, cfg.timeout_ms). */
#define JOIN_WARN_NS (1500 * INA_NS_PER_MS)

/* Longest single sleep in the port while an operation runs. */
#define WAIT_MAX_NS (100 * INA_NS_PER_MS)

/* One tensor with sparsifier options of its own, or one the job's sparsifier
 * or block planner runs on: its round state (residual, planning reference)
 * lives in 'tr'. */
struct sparse_tensor {
	uint32_t id;
	int used; /* allreduced at least once */
	struct ina_sparsify opt;
	struct tround *tr; /* NULL until the first call */
};

enum op_kind { OP_ALLREDUCE, OP_BROADCAST, OP_BARRIER, OP_BLOCKS };
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
	float one;		     /* a barrier's input and output */
	struct ina_blocks bin;	     /* OP_BLOCKS: the blocks (n, B: the caller's) */
	struct ina_blocks_out *bout; /* ... where the union goes */
	uint32_t bcount;	     /* ... the union's blocks so far */
	struct sparse_tensor *t;     /* the tensor's round state while it runs */
	struct ssp_tensor *st;	     /* ssp: the tensor while its round runs */
	int ssp_slot;		     /* ... and the slot of its send buffer */
	uint32_t eng_round;	     /* ssp: the engine's round of it */
	int ret;		     /* its end */
	int quiet;		     /* a blocking call's: not for ina_poll() */
};

struct ina_ctx {
	struct egroup *eg;	   /* one engine per switch */
	struct payload_work *work; /* cfg.threads > 1: the engines' deferred */
	struct workers *workers;   /* per-byte work, and who runs it */
	pthread_mutex_t lock;	   /* every call but open and close */
	struct order *sched;
	struct op *ops;		/* max_pending slots */
	struct done_queue done; /* ended operations in end order (ina_poll) */
	uint32_t max_pending;
	struct op *run[ORDER_FUSE_MAX]; /* the operations the engine's round carries */
	uint32_t nb_run;		/* 0: the engine is free; > 1: fused */
	uint32_t fuse_elems;		/* cfg.fuse_elems */
	float *fuse_in, *fuse_out;	/* a fused round's elements, fuse_elems each */
	uint64_t timeout_ns;		/* cfg.timeout_ms */
	struct ina_capture *cap;	/* NULL unless capturing */
	struct ina_peer self;		/* this worker's address, for captures */
	uint64_t realtime_offset;	/* capture time minus monotonic time */
	uint16_t block_size;
	uint16_t sub_block;	  /* cfg.sub_block: b of the job's cut, 0 none */
	uint8_t sub_log;	  /* the cut of blocks of block_size */
	uint16_t last_block_size; /* B of the last allreduce */
	uint8_t last_sub_log;	  /* its cut */
	uint32_t last_part_tag;	  /* its partition map's tag */
	uint16_t world, lanes;
	uint16_t lanes_asked; /* cfg.lanes (lanes: what the switch granted) */
	char aggregator[32];  /* the host aggregator the job runs on, or "" */
	char join_to[160];    /* where the JOINs go (the switches, or the
					 * host aggregator), for the messages */
	uint8_t encoding;
	int plan_blocks;	      /* cfg.plan_blocks */
	struct partition_config part; /* cfg.partition, partitions, lanes */

	/* cfg.plan_packet_ns, plan_byte_ns: the block planner's prices */
	double plan_packet_ns, plan_byte_ns, plan_cut_packet_ns, plan_cut_sub_ns;
	uint32_t plan_period; /* cfg.plan_period: rounds between plans */

	struct ina_port *port;
	char replica_addr[64]; /* cfg.replica_addr, for the log */
	uint32_t job_id;
	uint16_t rank;
	uint64_t failovers;		  /* takeovers logged so far */
	struct keepalive *keepalive;	  /* the thread, NULL with cfg.keepalive_ms 0 */
	struct ina_sparsify job_sparsify; /* cfg.sparsify */
	struct tensor_table tensors;	  /* id -> struct sparse_tensor *, any number */
	uint8_t ssp;			  /* cfg.ssp */
	struct tensor_table ssp_tensors;  /* id -> struct ssp_tensor * */
	uint64_t ssp_missed;
	struct {
		uint64_t rounds, blocks, blocks_sent, blocks_deferred;
		double density, residual_norm;
	} sp;
	int magnitude;	      /* cfg.sched is MAGNITUDE: sums' norms wanted */
	uint32_t *blk_chain;  /* the block-sparse round's lane chains */
	size_t blk_chain_cap; /* ... entries allocated */
	char errmsg[512];
	uint64_t moved_ns; /* ina_pump() last moved a packet (ina_busy) */
};

/* ina_pump.c */
/* One burst each way between the port and the engines; whether anything
 * moved. */
int ina_pump(struct ina_ctx *ctx);
/* Under the lock: whether the caller should poll on rather than wait: the
 * port's wait only sleeps, a round runs and a packet moved within
 * ina_busy_poll_ns() (util.h; ina_pump.c). */
int ina_busy(const struct ina_ctx *ctx);
/* After a step that moved nothing, without the lock: busy (ina_busy()),
 * yields the CPU and returns; idle, sleeps in the port up to 'ns'. */
void ina_idle(struct ina_ctx *ctx, int busy, uint64_t ns);
/* The keepalive thread's beat (keepalive.c); 'arg' is the context. */
void ina_keepalive_beat(void *arg);
/* Drives the engines while they stay in 'phase': 0 or the error. Joining,
 * it warns once when no answer came for JOIN_WARN_NS. */
int ina_run_while(struct ina_ctx *ctx, int phase);
/* 1 when an engine never heard its switch answer the JOIN. */
int ina_join_unanswered(const struct ina_ctx *ctx);
/* Where the JOINs went and what to check there, into 'buf'. */
void ina_join_hint(const struct ina_ctx *ctx, char *buf, size_t size);

/* ina_ops.c */
struct op *ina_op_of(struct ina_ctx *ctx, uint64_t handle);
void ina_op_end(struct ina_ctx *ctx, struct op *o, int ret);
void ina_fail_pending(struct ina_ctx *ctx, int err);
uint32_t ina_nb_pending(const struct ina_ctx *ctx);
int ina_op_collect(struct op *o);
/* Whether operation 'seq' has ended and waits to be collected (done_queue). */
int ina_op_uncollected(void *arg, uint64_t seq);

/* ina_tensor.c */
struct sparse_tensor *ina_find_tensor(const struct ina_ctx *ctx, uint32_t tensor_id);
struct sparse_tensor *ina_tensor_for(struct ina_ctx *ctx, uint32_t tensor_id, size_t n, int *ret);
void ina_account(struct ina_ctx *ctx, const struct sparse_tensor *t);

/* ina_ssp.c */
struct ssp_tensor *ina_ssp_tensor_for(struct ina_ctx *ctx, uint32_t tensor_id, size_t n, int *ret);
int ina_ssp_op_start(struct ina_ctx *ctx, struct op *o);
void ina_ssp_reap(struct ina_ctx *ctx);

/* ina_async.c */
int ina_step(struct ina_ctx *ctx, uint64_t *sleep_ns);
/* ina_iallreduce() and the others; 'quiet' for a blocking call's own
 * operation. */
int ina_submit_allreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out,
			 size_t n, enum ina_op op, int32_t priority, int quiet, uint64_t *handle);
int ina_submit_broadcast(struct ina_ctx *ctx, uint32_t tensor_id, float *buf, size_t n,
			 uint16_t root, int32_t priority, int quiet, uint64_t *handle);
int ina_submit_barrier(struct ina_ctx *ctx, int quiet, uint64_t *handle);
int ina_submit_blocks(struct ina_ctx *ctx, uint32_t tensor_id, const struct ina_blocks *in,
		      struct ina_blocks_out *out, enum ina_op op, int32_t priority, int quiet,
		      uint64_t *handle);

/* ina_blocks.c */
/* 0 when the context can run ina_allreduce_blocks(in, out), else -EINVAL. */
int ina_blocks_usable(const struct ina_ctx *ctx, const struct ina_blocks *in,
		      const struct ina_blocks_out *out);
int ina_blocks_start(struct ina_ctx *ctx, struct op *o);
int ina_blocks_finish(struct op *o, double *ss);

/* ina_err.c */
/* An engine's error (enum engine_err, or -errno passed on) as the API's. */
int ina_err_of_engine(int err);

/* The context's error as the API's code: 0, or the engines' first. */
static inline int
ina_ctx_error(const struct ina_ctx *ctx)
{
	return ina_err_of_engine(egroup_error(ctx->eg));
}

#endif
