/* SPDX-License-Identifier: MIT */
/*
 * ina: the C API a training framework calls to allreduce gradients through
 * an ina switch. One context is one worker (rank) of one job. ina_open() joins
 * the job; ina_allreduce() sums (or averages) a float buffer across the job's
 * workers, in place or not; ina_close() says goodbye. Every call returns 0 or
 * a negative code that ina_strerror() names, within a bounded time: a switch
 * that does not answer or a peer that is gone is an error, never a hang.
 *
 * Besides the blocking ina_allreduce(), the asynchronous calls (below,
 * "Asynchronous operations") queue many operations at once over one job:
 * ina_iallreduce(), ina_ibroadcast() and ina_ibarrier() return a handle at
 * once; ina_test() and ina_wait() complete it. The context's scheduler
 * decides which queued operation goes on the wire next (cfg.sched).
 *
 * Threading and progress: there is no background thread. The engine moves
 * only inside calls on the context: every ina_i*(), ina_test(),
 * ina_progress() and ina_flush() call does a non-blocking step (receive,
 * start the next scheduled operation, send), and ina_wait() and the blocking
 * calls drive it until their operation ends. A framework that wants
 * transfers to go on while it computes runs its own progress thread calling
 * ina_progress(ctx, wait_us) in a loop. Every call on a context is
 * thread-safe (a mutex per context; ina_wait() and ina_progress() release it
 * while they sleep in the port), except ina_open() and ina_close(), which no
 * other call on the same context may overlap. What ina_residual(),
 * ina_deferred_blocks() and ina_last_error() point to is rewritten by later
 * operations (of that tensor) and errors: read it when none runs. Contexts
 * are independent.
 */
#ifndef INA_H
#define INA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What libina exports: every function of this header and nothing else (the
 * library is built with hidden visibility; tests/unit/test_exports checks the
 * shared object's dynamic symbols against this header). */
#if defined(__GNUC__)
#define INA_API __attribute__((visibility("default")))
#else
#define INA_API
#endif

/* The version of this header. ina_version() says the library's; they differ
 * when a program built against one header runs on another library: the
 * SOVERSION (the major) says whether that can work. */
#define INA_VERSION_MAJOR 0
#define INA_VERSION_MINOR 2
#define INA_VERSION_PATCH 0
#define INA_VERSION_STRING "0.2.0"

/* "MAJOR.MINOR.PATCH" of the library that runs. */
INA_API const char *ina_version(void);

/* Error codes beyond -errno (which the API also returns, e.g. -EINVAL). */
enum ina_error {
	INA_ENOSWITCH = -1001,	/* the switch did not answer in time */
	INA_EREFUSED = -1002,	/* the switch refused the job (see ina_last_error) */
	INA_EPEER = -1003,	/* peers did not contribute in time; the job stalls */
	INA_ELEFT = -1004,	/* another rank left the job */
	INA_ESATURATED = -1005, /* an i32 sum saturated: the result is not right */
	INA_ENONFINITE = -1006, /* NaN or infinity where i32 cannot carry it */
	INA_ECLOSED = -1007,	/* the context failed earlier or is finished */
	INA_EPORT = -1008,	/* the transport could not start (see ina_last_error) */
	INA_EPROTO = -1009,	/* the switch answered against the protocol */
};

enum ina_encoding_type { INA_F32 = 1, INA_I32 = 2, INA_BF16 = 3 };
enum ina_op { INA_SUM = 0, INA_AVG = 1 };

/*
 * The sparsifier (issue 4): what a worker sends of a tensor each round, with
 * residual carry-over (error feedback): whatever is not sent this round stays
 * in the worker's residual for that tensor and is added to the next round's
 * input, so no update is lost, only delayed. Every worker of a job must use
 * the same options for a tensor. Blocks are the job's block_size; the engine
 * sends only the blocks that hold a non-zero value. With the value filter on
 * (and filter_results, the default), the filter also applies on the way
 * down: a result block whose sum is under the round's bound comes back
 * DEFERRED, as zeros, and each worker puts its own part of it back into its
 * residual, so that sum arrives in a later round (docs/PROTOCOL.md 7.7).
 */
enum ina_sparsify_mode {
	INA_SPARSIFY_OFF = 0,	 /* dense: every non-zero block is sent */
	INA_SPARSIFY_TOPK = 1,	 /* whole blocks ranked by L2 norm, to a target */
	INA_SPARSIFY_FILTER = 2, /* elements with |v| < b0 * decay^round held back */
	INA_SPARSIFY_BOTH = 3,	 /* the filter first, then top-k of what passed */
};

enum ina_topk_target {
	INA_TOPK_DENSITY = 1, /* a fraction of the tensor's blocks */
	INA_TOPK_BYTES = 2,   /* a byte budget per round (56-byte header + 4 per element
				 * per block sent, as f32) */
	INA_TOPK_MASS = 3,    /* a fraction of the sum of squares (gradient + residual) */
};

struct ina_sparsify {
	enum ina_sparsify_mode mode; /* default INA_SPARSIFY_OFF */
	enum ina_topk_target target; /* default INA_TOPK_DENSITY */
	double density;		     /* (0, 1], default 0.1 */
	uint64_t byte_budget;	     /* >= one full block's bytes */
	double mass;		     /* (0, 1], default 0.5 */
	float filter_b0;	     /* bound at round 0, >= 0, default 0 */
	double filter_decay;	     /* (0, 1], bound = b0 * decay^round, default 1 */
	int filter_results;	     /* FILTER, BOTH: 1 (default) filters results too: a
					 * block whose sum is under the result bound comes
					 * back DEFERRED (header-only) and each worker's own
					 * part goes back to its residual; 0 sends every
					 * result in full */
	float filter_results_scale;  /* result bound = this x the round's filter bound;
					 * 0 (default): the world size, so a block is
					 * deferred when its average is under the bound */
};

/*
 * The transfer order of queued operations (cfg.sched). The switch matches
 * blocks by (tensor, round, block), so every worker must put the same
 * operation in the same round: the choice depends only on what every worker
 * shares, the submission sequence (operations and ina_flush() calls, which
 * must come in the same order on every worker), the declared priorities and
 * the norms of earlier sums. A worker waits for an operation it has not
 * submitted yet rather than diverge.
 */
enum ina_sched_policy {
	INA_SCHED_FIFO = 0,	 /* submission order: starts as soon as a tensor is
				  * submitted; the most overlap with backprop */
	INA_SCHED_PRIORITY = 1,	 /* the smallest priority value first (the layer
				  * index: front layers first), among a window of
				  * submissions (sched_window, or up to ina_flush()):
				  * the window's operations wait until its last one is
				  * submitted, which costs overlap */
	INA_SCHED_MAGNITUDE = 2, /* the largest L2 norm of the tensor's previous sum
				  * first (no sum yet: first, in submission order),
				  * among the same window */
};

/* Which switch partition aggregates which block (docs/ARCHITECTURE.md
 * "Partition maps"; a switch on K cores, ina-switch --lcores K). */
enum ina_partition {
	INA_PARTITION_FIXED = 0,   /* block b on lane b mod lanes, so on partition
					 * (b mod lanes) mod K: what a dense tensor needs */
	INA_PARTITION_DYNAMIC = 1, /* every partition_period rounds, each tensor's
					 * blocks are re-dealt from the non-zero blocks
					 * of its previous sum so that each partition
					 * gets an equal share (sparse tensors whose
					 * non-zero blocks cluster) */
};

/*
 * The configuration of a context. It grows at its end from version to
 * version: 'size' (set by ina_config_init(), which a C caller calls first)
 * tells the library how much of it the caller's program knows, and fields
 * beyond that keep their defaults. A binding that cannot see this struct uses
 * ina_config_new() and ina_config_set() (below) instead of mirroring it.
 */
struct ina_config {
	uint32_t size;		  /* sizeof(struct ina_config) as the caller
					 * was built: set by ina_config_init() */
	const char *switch_addr;  /* "ADDR:PORT" of the switch, or of several
					 * switches separated by commas (at most 16,
					 * every worker in the same order; no replica
					 * or ssp): switch k aggregates the k-th of K
					 * contiguous parts of every tensor as a job of
					 * its own (same job id, world, lanes, token) */
	const char *replica_addr; /* "ADDR:PORT" of a replica switch (ina-switch
					 * --primary) that takes the job over when the
					 * switch falls silent, or NULL for none */
	uint32_t failover_ms;	  /* with a replica: no answer from the switch this
					 * long while an allreduce waits asks the
					 * replica to take over, default 1000 */
	const char *port;	  /* transport spec, default "udp"; a "dpdk:..."
					 * port needs EAL started and the dpdk port
					 * registered first (port_dpdk.h) */
	uint32_t job_id;
	uint16_t rank;
	uint16_t world;			 /* workers in the job, 1..64 */
	uint16_t lanes;			 /* window: blocks in flight, default 64 */
	uint16_t block_size;		 /* elements per block B, the largest with
					 * plan_blocks; 0 (default): 1024, or what
					 * the port's packets hold if less (256 f32
					 * on 1500-byte frames); with
					 * plan_blocks the largest power of two whose
					 * block with the largest sub-block mask fits
					 * the port's packets, up to 2048 (a default
					 * switch's slot): 2048 f32 on 9000-byte
					 * packets, 256 on 1500. ina_stats.max_block
					 * says which. Every worker alike: ports of
					 * other packet sizes set it (the switch
					 * refuses a JOIN of another B, MISMATCH) */
	enum ina_encoding_type encoding; /* default INA_F32; INA_BF16 sends half
						 * the bytes, summed in f32, rounded once */
	uint64_t token;			 /* from ina_token_*(); never from argv */
	uint32_t timeout_ms;		 /* no progress this long fails, default 10000 */
	uint32_t rto_us;		 /* first retransmission timeout, default 5000 */
	const char *capture;		 /* pcap file of every packet sent and received, or NULL */
	struct ina_sparsify sparsify;	 /* the job's sparsifier for every tensor, default
					 * off; ina_tensor_sparsify() sets one tensor's */
	enum ina_sched_policy sched;	 /* the order of queued operations on the wire,
					 * default INA_SCHED_FIFO; every worker alike */
	uint32_t sched_window;		 /* PRIORITY, MAGNITUDE: submissions a choice
					 * looks ahead at most; 0 (default): up to the
					 * next ina_flush() (or barrier) */
	uint32_t max_pending;		 /* operations submitted and not yet waited
					 * for (ina_test/ina_wait), default 256 */
	uint32_t fuse_elems;		 /* fusion: queued dense allreduces (no
					 * sparsifier, no planner, same op) smaller
					 * than this go together in one round of up
					 * to this many elements; 0 (default): off.
					 * Under fifo a small tensor then waits for the
					 * next submission or ina_flush() to know
					 * whether it fits */
	uint8_t ssp;			 /* consistency: 0 (default) bsp, every round waits
					 * for every worker; S in 1..8: ssp:S, a worker
					 * runs up to S rounds ahead of the slowest
					 * (below, "Bounded staleness"). Every worker
					 * alike; f32 or bf16, no sparsifier, planner,
					 * fusion or replica, n <= lanes x block_size */
	uint8_t weight;			 /* the job's weight when the switch shares its
					 * slots fairly (ina-switch --share fair): a
					 * job of weight 2 gets twice the lanes of a
					 * job of weight 1 when both ask for more than
					 * the pool holds. 1..255; 0 (default) is 1.
					 * Every worker of the job alike */
	int plan_blocks;		 /* 1: the block planner picks B per tensor and
					 * round, a power of two from 16 up to block_size
					 * (unset: what a packet holds, above),
					 * and its cut into sub-blocks (unless sub_block
					 * fixes it), from the previous round's result
					 * (the same on every worker: no extra round
					 * trip); the first round uses block_size, cut
					 * finest. 0 (default): B is block_size. Every
					 * worker must set it alike. */
	enum ina_partition partition;	 /* default INA_PARTITION_FIXED; every worker
					 * alike (a disagreement stalls the round and
					 * fails it by timeout_ms, never a wrong sum);
					 * DYNAMIC needs bsp (no ssp) */
	uint16_t partitions;		 /* K, the switch's partitions (its --lcores),
					 * 1..256; 0 (default) = 1 */
	uint32_t partition_period;	 /* DYNAMIC: rounds of a tensor between
					 * rebalances; 0 (default) = 1 */
	/* Version 0.2 on. */
	uint32_t keepalive_ms;	   /* a context that is open but idle (a training
					 * pause: evaluation, a checkpoint) tells the
					 * switch every this many ms that this rank
					 * lives, so a pause is not a death; 0: off.
					 * Default 1000 */
	uint32_t pause_ms;	   /* the longest pause waited for: a rank waiting
					 * in an operation on a peer the switch says
					 * is alive (a WAIT from a switch that aborts
					 * the job when a rank falls silent past its
					 * peer timeout) does not fail at timeout_ms,
					 * but no progress this long fails it
					 * (INA_EPEER); 0: no bound. Default 600000
					 * (10 minutes) */
	uint16_t sub_block;	   /* elements per sub-block b: every block of B
					 * travels as a mask of its sub-blocks of b
					 * and only the non-zero ones' values (one
					 * packet a block still: sparse gradients send
					 * fewer bytes, not more packets; the switch
					 * sums sub-block by sub-block). A power of
					 * two, block_size a power-of-two multiple of
					 * it, block_size / b <= 128; with plan_blocks
					 * the planner picks B alone and a planned B
					 * below 2b goes uncut. 0 (default): blocks
					 * whole, or with plan_blocks the planner's
					 * cut. Every worker alike */
	double plan_packet_ns;	   /* the block planner's price of a packet, ns:
					 * with plan_blocks it picks the B of least
					 * packets x plan_packet_ns + bytes x
					 * plan_byte_ns, the fewest bytes on a tie.
					 * Default 364, the udp port's cost measured
					 * here (memif: 219); >= 0. Every worker alike */
	double plan_byte_ns;	   /* ... of a byte: default 0.223 (memif 0.116);
					 * >= 0, not both 0 (0 and 1: bytes alone) */
	double plan_cut_packet_ns; /* what a packet of a cut round (sub-
					 * blocks) costs more: its size varies with
					 * its sub-blocks, and the kernel's UDP
					 * offloads batch only packets of one size.
					 * Default 1000, the udp port's (memif:
					 * 150); >= 0. Every worker alike */
	uint32_t plan_period;	   /* with plan_blocks: rounds of a tensor
					 * between plans; the planner's B and cut
					 * hold in between (a plan reads the whole
					 * last result: about 2 to 4 reads of it).
					 * 0 (default): adaptive, every round until
					 * a plan repeats the last, then held twice
					 * as long each time one does (1, 2, 4 .. 16
					 * rounds), every round again once one
					 * differs. Every worker alike */
	/* Tenant mode (ina-switch --tenants; README.md "Tenants"). */
	uint8_t tenant;		/* the tenant's index, 1..255, from the
					 * switch's tenants file; 0 (default):
					 * token mode. With a tenant, job_id is
					 * the tenant's own (0..2^24 - 1), token
					 * is unused, and every packet carries a
					 * tag under the job's key, derived from
					 * tenant_key and the job id */
	uint8_t tenant_key[32]; /* its key: ina_tenant_from() reads it */
	double plan_cut_sub_ns; /* what each non-zero sub-block of a cut
				 * round costs more (a run to encode, add
				 * and decode). Default 9 (memif: 9); >= 0.
				 * Every worker alike */
	uint32_t threads;	/* cores for this worker's per-byte work,
				 * 1..INA_THREADS_MAX, default 1: with T > 1,
				 * T - 1 threads beside the calling one
				 * encode the blocks of each burst into its
				 * packets, decode its results and make its
				 * tags (tenant mode); the port and the
				 * protocol stay on the calling thread.
				 * Whole blocks only: a cut round's
				 * sub-blocks, ssp results and checking
				 * received tags stay on the calling thread.
				 * Sums are the same bits for every T */
};

/* Largest cfg.threads. */
#define INA_THREADS_MAX 16

/* Counters of a context. Grows at its end like struct ina_config: the
 * ina_get_stats() macro passes the caller's size. A binding reads them by
 * name instead (ina_stat(), ina_stat_name()). */
struct ina_stats {
	uint32_t size;	     /* the caller's sizeof, set by ina_get_stats() */
	uint64_t rounds;     /* allreduces completed */
	uint64_t bytes_sent; /* ina packet bytes (UDP payload) sent */
	uint64_t bytes_received;
	uint64_t packets_sent;
	uint64_t packets_received;
	uint64_t data_packets;	/* packets that carried a block */
	uint64_t empty_packets; /* header-only acks */
	uint64_t retransmits;
	uint64_t stalls;	    /* allreduces that went a quarter of timeout_ms
					 * without progress (each logged once, with what
					 * it waits for and what the switch last said) */
	uint64_t waits;		    /* WAIT answers from the switch */
	uint64_t failovers;	    /* takeovers by the replica switch (0 or 1) */
	double failover_silence_ms; /* the last takeover: how long the switch had
					 * been silent then */
	uint64_t dropped;	    /* received packets that failed validation */
	uint64_t stale;		    /* valid packets for no open block */
	uint64_t tx_bursts;	    /* port bursts that sent something */
	uint64_t rx_bursts;	    /* port bursts that received something */
	uint64_t inject_drop;	    /* packets the port dropped on purpose */
	uint64_t inject_dup;	    /* ... duplicated, reordered, delayed and */
	uint64_t inject_reorder;    /* corrupted on purpose (port options dup=, */
	uint64_t inject_delay;	    /* reorder=, delay=, corrupt=) */
	uint64_t inject_corrupt;
	uint64_t csum_drops; /* received packets that failed the UDP
					 * checksum ina verifies (dpdk), dropped */
	/* The sparsifier, over the allreduces of sparsified tensors. */
	uint64_t sparse_rounds;		 /* sparsified allreduces */
	uint64_t sparse_blocks;		 /* their blocks, summed over rounds */
	uint64_t sparse_blocks_sent;	 /* of those, blocks with a non-zero value sent */
	uint64_t sparse_blocks_deferred; /* blocks whose sum came back DEFERRED (each
					 * worker's own part went back to its residual) */
	double density_sent;		 /* last sparsified round: blocks sent / blocks */
	uint16_t block_size;		 /* B of the last allreduce (the planner's choice
					 * with plan_blocks) */
	double residual_norm;		 /* last sparsified round: L2 norm of the residual
					 * left (sqrt of its sum of squares) */
	double residual_norm_total;	 /* L2 norm over every sparsified tensor's residual */
	uint64_t ssp_missed;		 /* ssp: blocks whose sum came back without this
					 * worker's part (closed early: its part went back
					 * to the residual, for a later round) */
	uint32_t partition_tag;		 /* the partition map's tag of the last allreduce
					 * (0: blocks in order, the fixed map) */
	uint64_t partition_rebalances;	 /* dynamic partition maps built from a sum,
					 * over every tensor */
	uint16_t lanes;			 /* the job's lanes: cfg.lanes, or the fewer the
					 * switch granted (its fair share) */
	uint16_t lanes_asked;		 /* cfg.lanes */
	char aggregator[32];		 /* "IPV4:PORT" of the host aggregator the job
					 * runs on when the switch had no slots for it
					 * (a REDIRECT, ina-switch --host-aggregator);
					 * "" when it runs on the switch */
	/* The time from a block's send to its result (the round trip of a
	 * lane's packet sent once, which waits for the slowest rank too), over
	 * every allreduce of the context: a log-scale histogram's quantiles,
	 * within 6.25% (the maximum exact). */
	uint64_t rtt_samples;
	double rtt_median_us;
	double rtt_p99_us;
	double rtt_max_us;
	double rtt_mean_us;
	uint16_t sub_block; /* b of the last allreduce's cut into sub-blocks
			     * (the planner's with plan_blocks, else
			     * cfg.sub_block's); block_size when uncut */
	uint16_t max_block; /* the job's largest B, its JOIN's: cfg.block_size,
			     * or what ina_open() chose for block_size 0 */
};

struct ina_ctx;

/* Fills 'cfg' with the defaults and its size; the caller sets address, job,
 * rank, world and token. Use the macro: it passes the size the caller knows. */
INA_API void ina_config_init_size(struct ina_config *cfg, size_t size);
#define ina_config_init(cfg) ina_config_init_size((cfg), sizeof(*(cfg)))

/*
 * The configuration for bindings (Python's ctypes, ...), which must not
 * mirror struct ina_config by hand: ina_config_new() allocates one of the
 * library's own size with the defaults (NULL when out of memory);
 * ina_config_set() sets one field by its name in this header ("switch_addr",
 * "job_id", "rank", "world", "lanes", "encoding" = f32|i32|bf16, "token",
 * "sparsify.mode" = off|topk|filter|both, "sparsify.density", ..., "sched" =
 * fifo|priority|magnitude, "partition" = fixed|dynamic, ...) from its text;
 * strings are copied and owned by the config. 0, or -EINVAL (no such field,
 * a value it cannot take, or a config ina_config_new() did not make: 'err'
 * says which) or -ENOMEM.
 * ina_config_free() frees it and its strings (NULL is accepted).
 */
INA_API struct ina_config *ina_config_new(void);
INA_API int ina_config_set(struct ina_config *cfg, const char *key, const char *value, char *err,
			   size_t err_size);
INA_API void ina_config_free(struct ina_config *cfg);

/* Token of a job secret read from 'file', or from $INA_JOB_TOKEN when 'file'
 * is NULL. 0 or a negative code; on error, 'err' says why. */
INA_API int ina_token_from(const char *file, uint64_t *token, char *err, size_t err_size);

/* The tenant of 'cfg' (tenant, tenant_key) from $INA_TENANT (its index) and
 * the first line of 'key_file', or $INA_TENANT_KEY when 'key_file' is NULL
 * (64 hex digits or base64 of 32 bytes). 1 when set, 0 when none is given
 * (token mode; cfg unchanged), or a negative code with 'err' saying why. */
INA_API int ina_tenant_from(const char *key_file, struct ina_config *cfg, char *err,
			    size_t err_size);

/* Opens a port and joins the job. 0 and '*ctx', or a negative code (then
 * '*ctx' is NULL and 'err', if not NULL, holds a sentence saying why):
 * INA_EPORT when the port cannot be opened, INA_ENOSWITCH when the switch's
 * address cannot be resolved (no ARP answer) or the switch does not answer.
 * With cfg.replica_addr the join also asks the replica to stand by, and fails
 * (INA_ENOSWITCH, INA_EREFUSED) when it does not answer or refuses; an
 * allreduce whose switch then falls silent goes on at the replica. */
INA_API int ina_open(const struct ina_config *cfg, struct ina_ctx **ctx, char *err,
		     size_t err_size);

/*
 * Sums (INA_SUM) or averages (INA_AVG) 'n' floats of every worker of the job
 * into 'out' (which may be 'in'). Every worker must call it with the same
 * 'tensor_id' and 'n' in the same order. Every worker receives the same bits.
 * It is ina_iallreduce() (priority 0), ina_flush() and ina_wait(): with
 * asynchronous operations queued before it, it runs after or among them as
 * the scheduler orders them.
 *
 * With a sparsifier on for 'tensor_id' (cfg.sparsify or
 * ina_tensor_sparsify()), the result is the sum (average) of what every
 * worker SENT this round: in + this worker's residual, sparsified; the rest
 * stays in the residual for the next call. 'in' is never modified: the
 * context keeps its own copy of the tensor to send (n floats) and the
 * residual (n floats), allocated on the tensor's first call and sized then;
 * a later call with another 'n' is -EINVAL. A context takes any number of
 * tensors (a model's hundreds of buckets and parameters).
 */
INA_API int ina_allreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out,
			  size_t n, enum ina_op op);

/*
 * Block-sparse tensors. A tensor of 'n' floats is cut into blocks of
 * 'block_size' (B) elements, block b holding elements b*B .. b*B + B - 1 (the
 * last block may be shorter). A block-sparse value lists only the blocks it
 * holds, in ascending order, and the values of each: block index[i] at
 * values + i*B (for the tensor's short last block only its first n - b*B
 * floats are read or written). A block not listed is zero.
 */
struct ina_blocks {
	size_t n;	       /* the tensor's dense length, elements */
	uint32_t block_size;   /* B: 1 .. the JOIN's largest (ina_stats.max_block) */
	size_t count;	       /* blocks listed */
	const uint32_t *index; /* 'count' ascending block numbers < ceil(n / B) */
	const float *values;   /* count x B floats */
};

/* Where a block-sparse sum goes: the union of every worker's blocks with
 * their sums, as a list (index, values) or into a dense buffer, or both. */
struct ina_blocks_out {
	uint32_t *index; /* room for 'capacity' block numbers: the union's,
				 * ascending; NULL with 'dense' alone */
	float *values;	 /* room for capacity x B floats: the sums in the
				 * order of 'index'; or NULL */
	float *dense;	 /* or (also) n floats: only the union's blocks are
				 * written, the rest is left as it is; or NULL */
	size_t capacity; /* blocks that 'index' (and 'values') hold; the union
				 * is at most the sum of every worker's count,
				 * so world x count is always enough */
	size_t count;	 /* set by the call: blocks in the union */
};

/*
 * Sums (averages) block-sparse tensors: every worker gives its blocks and
 * gets the union of all workers' blocks with their sums. It sends only the
 * listed blocks and writes only the union's: a round at 1% block density
 * costs what its blocks cost, not what the dense tensor costs. The same bits
 * as ina_allreduce() of the dense tensors with the same block size. Every
 * worker must call it with the same 'tensor_id', n and B, in the same order
 * as its other operations. No sparsifier, no ssp. 0, -EINVAL (bad
 * arguments: unsorted or out-of-range index, B too large), -ENOSPC (the
 * union has more blocks than out->capacity: out->count says how many; the
 * first that came are listed, in order, and the job goes on), or the context's error.
 */
INA_API int ina_allreduce_blocks(struct ina_ctx *ctx, uint32_t tensor_id,
				 const struct ina_blocks *in, struct ina_blocks_out *out,
				 enum ina_op op);

/*
 * Sets the sparsifier of one tensor (overriding cfg.sparsify; mode OFF makes
 * it dense), before the tensor's first ina_allreduce(). 0, -EINVAL (bad
 * options), -EBUSY (the tensor was already used) or -ENOMEM.
 */
INA_API int ina_tensor_sparsify(struct ina_ctx *ctx, uint32_t tensor_id,
				const struct ina_sparsify *opt);

/* This worker's residual of 'tensor_id' (n floats, owned by the context,
 * valid until ina_close), or NULL if the tensor has no sparsifier yet. */
INA_API const float *ina_residual(const struct ina_ctx *ctx, uint32_t tensor_id, size_t *n);

/* Per block of the last allreduce of 'tensor_id' (in that round's block
 * size, ina_stats.block_size): 1 if its sum came back DEFERRED (zeros in the
 * result, this worker's part back in its residual). Owned by the context,
 * valid until the next allreduce of the tensor; NULL if it has no sparsifier. */
INA_API const uint8_t *ina_deferred_blocks(const struct ina_ctx *ctx, uint32_t tensor_id,
					   size_t *n_blocks);

/*
 * Bounded staleness (cfg.ssp = S > 0, docs/PROTOCOL.md 6.7). A round of the
 * job may start while the S rounds before it are still in flight, and the
 * switch may close a block before a slow worker's part arrived: that part
 * stays in the worker's residual for the tensor (ina_residual(); a dense
 * tensor gets one too) and is sent in a later round, so nothing is lost,
 * only late. What a training loop sees: ina_allreduce(ctx, t, in, out, ...)
 * starts this call's round (copying in + residual, so 'in' is free at once)
 * and returns the sum of the tensor's call S calls back in 'out' (all zeros
 * for the first S calls: nothing is back yet); the update a worker applies
 * is S steps stale. After the last step, ina_ssp_next() returns the sums
 * still in flight, oldest first. ina_iallreduce() under ssp writes its own
 * round's sum into its 'out' as usual. Broadcast and barrier are not
 * available under ssp (-EINVAL): a sum closed early would break them.
 */
/* The oldest sum of 'tensor_id' that ina_allreduce() started and has not
 * returned yet, into 'out' (n floats as the calls had): 1, or 0 when none
 * is left, or a negative error. */
INA_API int ina_ssp_next(struct ina_ctx *ctx, uint32_t tensor_id, float *out);

/*
 * Asynchronous operations. A handle (never 0) names one submitted operation
 * until ina_test() reports it ended or ina_wait() returns: then it is spent.
 * Every worker must submit the same operations (tensor, n, priority, root)
 * and call ina_flush() in the same order, as for ina_allreduce(); tests and
 * waits may come in any order, from any thread. Buffers stay the caller's:
 * 'in' must stay valid and unchanged, and 'out' valid, until the operation
 * ends. Operations run one at a time on the wire, in the order of the
 * scheduler (cfg.sched); a sparsifier or the planner runs per operation as
 * ina_allreduce() runs it, when the operation starts. After an error of the
 * job every pending operation ends with that error.
 *
 * Submission returns 0 and '*handle', -EINVAL (bad arguments), -EBUSY (cfg.max_pending operations not waited for), or the
 * context's error.
 */
#define INA_BARRIER_TENSOR \
	0xffffffffu /* the tensor id a barrier's round carries
					 * (rounds tell it from a tensor of that id) */

/* Starts ina_allreduce() of the same arguments with 'priority' (smaller
 * first under INA_SCHED_PRIORITY; the layer index is a good choice). */
INA_API int ina_iallreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out,
			   size_t n, enum ina_op op, int32_t priority, uint64_t *handle);

/* Starts ina_allreduce_blocks() of the same arguments ('in' and what it
 * points to must stay valid and unchanged, 'out' valid, until it ends). */
INA_API int ina_iallreduce_blocks(struct ina_ctx *ctx, uint32_t tensor_id,
				  const struct ina_blocks *in, struct ina_blocks_out *out,
				  enum ina_op op, int32_t priority, uint64_t *handle);

/* Starts a broadcast of 'n' floats of rank 'root' into 'buf' of every rank
 * (root's 'buf' is read, the others' overwritten). It runs as a sum to which
 * the others add zeros (they send no blocks, only acks): exact with INA_F32
 * (except that -0.0 may come back as +0.0); with INA_BF16 or INA_I32 the
 * values come back as the encoding carries them. No sparsifier. */
INA_API int ina_ibroadcast(struct ina_ctx *ctx, uint32_t tensor_id, float *buf, size_t n,
			   uint16_t root, int32_t priority, uint64_t *handle);

/* Starts a barrier: it ends once every rank has submitted it, and it is a
 * fence for the scheduler (it runs after everything submitted before it,
 * and nothing submitted after it runs before it). */
INA_API int ina_ibarrier(struct ina_ctx *ctx, uint64_t *handle);

/* Ends the scheduler's window: every operation of this step is submitted
 * (call it at the same point of the submission sequence on every worker,
 * e.g. after the backward pass). Needed by INA_SCHED_PRIORITY and
 * MAGNITUDE with sched_window 0, harmless otherwise. 0 or the context's
 * error. */
INA_API int ina_flush(struct ina_ctx *ctx);

/* 1 when the operation ended well (the handle is spent), 0 while it runs,
 * or its negative error (the handle is spent); -EINVAL for a handle that
 * names no pending operation. Does one non-blocking progress step. */
INA_API int ina_test(struct ina_ctx *ctx, uint64_t handle);

/* Drives the context until the operation ends: 0 or its error; the handle
 * is spent. -EINVAL for a handle that names no pending operation;
 * -EDEADLK when the operation waits for a scheduler window that nothing
 * closes for timeout_ms (submit the rest of the step or ina_flush()): the
 * handle then stays valid. */
INA_API int ina_wait(struct ina_ctx *ctx, uint64_t handle);

/* One progress step, sleeping in the port up to 'wait_us' when nothing
 * moved (0: never sleeps): the body of a framework's progress thread. 0 or
 * the context's error. */
INA_API int ina_progress(struct ina_ctx *ctx, uint32_t wait_us);

/* ina_ibroadcast() and ina_ibarrier() followed by ina_wait(). */
INA_API int ina_broadcast(struct ina_ctx *ctx, uint32_t tensor_id, float *buf, size_t n,
			  uint16_t root);
INA_API int ina_barrier(struct ina_ctx *ctx);

/* Current counters, as many of them as 'size' holds (the macro passes the
 * caller's sizeof). */
INA_API void ina_get_stats_size(const struct ina_ctx *ctx, struct ina_stats *stats, size_t size);
#define ina_get_stats(ctx, stats) ina_get_stats_size((ctx), (stats), sizeof(*(stats)))

/* The counters by name, for bindings: ina_stat_name(i) names the i-th
 * numeric counter of struct ina_stats (its field name, e.g. "bytes_sent";
 * NULL past the last; neither "size" nor "aggregator" is listed), ina_stat() reads one into '*value' (0, or -EINVAL for a name
 * that is none; "aggregator" is not a number and is read by
 * ina_stats_aggregator()). */
INA_API const char *ina_stat_name(unsigned i);
INA_API int ina_stat(const struct ina_ctx *ctx, const char *name, double *value);
INA_API const char *ina_stats_aggregator(const struct ina_ctx *ctx);

/*
 * Completions without polling every handle. ina_poll() does one progress
 * step (sleeping in the port up to 'wait_us' when nothing ended yet) and
 * collects up to 'max' operations that have ended, oldest end first: each
 * handle is then spent, as by ina_test(), and never reported twice (nor to
 * ina_test() or ina_wait() after). The operations of the blocking calls
 * (ina_allreduce(), ina_broadcast(), ina_barrier()) are never reported: their
 * call collects them. Returns how many it wrote (0 when none
 * ended in time), or the context's error when it failed and nothing is left
 * to report. It may run in a progress thread while other threads submit.
 */
struct ina_completion {
	uint64_t handle;
	int32_t status; /* 0, or the operation's negative error */
	uint32_t reserved;
};
INA_API int ina_poll(struct ina_ctx *ctx, struct ina_completion *done, unsigned max,
		     uint32_t wait_us);

/*
 * Logging. By default the library writes its lines (warnings about stalls,
 * failovers, refusals) to stderr at level INFO and below. ina_set_logger()
 * sends every line at 'level' or below (INA_LEVEL_*) to 'fn' instead, with
 * 'arg', from whichever thread logs (so 'fn' must be thread-safe); 'fn' NULL
 * goes back to stderr. Process-wide: it applies to every context.
 */
#define INA_LEVEL_ERR 0
#define INA_LEVEL_WARN 1
#define INA_LEVEL_INFO 2
#define INA_LEVEL_DEBUG 3
typedef void (*ina_log_fn)(int level, const char *line, void *arg);
INA_API void ina_set_logger(ina_log_fn fn, void *arg, int level);

/*
 * The DPDK port for a library user: starts DPDK's EAL with 'argc'/'argv' (as
 * after "--" of the programs, argv[0] a name) and registers the "dpdk:"
 * port, once per process; a config whose port is "dpdk:..." then opens on
 * it. 0, or INA_EPORT with 'err' saying why (no hugepages, a device that
 * does not exist, ...). ina_dpdk_stop() ends the EAL after every context is
 * closed.
 */
INA_API int ina_dpdk_start(int argc, char **argv, char *err, size_t err_size);
INA_API void ina_dpdk_stop(void);
/* The sentence behind the last error of this context ("" if none). */
INA_API const char *ina_last_error(const struct ina_ctx *ctx);
/* The job's epoch as the switch assigned it. */
INA_API uint32_t ina_epoch(const struct ina_ctx *ctx);
/* The transport the context runs on: its port's type, "udp" or "dpdk". */
INA_API const char *ina_transport(const struct ina_ctx *ctx);

/* Says FIN (or LEAVE after an error, or with operations still pending,
 * which are dropped: wait for them first), waits briefly for the switch,
 * frees. Accepts NULL. Returns 0 or the context's error. */
INA_API int ina_close(struct ina_ctx *ctx);

/* Name of an error code, INA_* or -errno. Never NULL. */
INA_API const char *ina_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
