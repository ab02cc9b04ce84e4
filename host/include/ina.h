/* SPDX-License-Identifier: MIT */
/*
 * ina: the C API a training framework calls to allreduce gradients through
 * an ina switch. One context is one worker (rank) of one job. ina_open() joins
 * the job; ina_allreduce() sums (or averages) a float buffer across the job's
 * workers, in place or not; ina_close() says goodbye. Every call returns 0 or
 * a negative code that ina_strerror() names, within a bounded time: a switch
 * that does not answer or a peer that is gone is an error, never a hang.
 *
 * Threading: a context is driven by the calls made on it (no background
 * thread); use one context from one thread at a time.
 */
#ifndef INA_H
#define INA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes beyond -errno (which the API also returns, e.g. -EINVAL). */
enum ina_error {
	INA_ENOSWITCH = -1001,	/* the switch did not answer in time */
	INA_EREFUSED = -1002,	/* the switch refused the job (see ina_last_error) */
	INA_EPEER = -1003,	/* peers did not contribute in time; the job stalls */
	INA_ELEFT = -1004,	/* another rank left the job */
	INA_ESATURATED = -1005,	/* an i32 sum saturated: the result is not right */
	INA_ENONFINITE = -1006,	/* NaN or infinity where i32 cannot carry it */
	INA_ECLOSED = -1007,	/* the context failed earlier or is finished */
	INA_EPORT = -1008,	/* the transport could not start (see ina_last_error) */
};

enum ina_encoding_type { INA_F32 = 1, INA_I32 = 2, INA_BF16 = 3 };
enum ina_op { INA_SUM = 0, INA_AVG = 1 };

struct ina_config {
	const char *switch_addr;	/* "ADDR:PORT" of the switch */
	const char *port;		/* transport spec, default "udp"; a "dpdk:..."
					 * port needs EAL started and the dpdk port
					 * registered first (port_dpdk.h) */
	uint32_t job_id;
	uint16_t rank;
	uint16_t world;			/* workers in the job, 1..64 */
	uint16_t lanes;			/* window: blocks in flight, default 64 */
	uint16_t block_size;		/* elements per block, default 1024 */
	enum ina_encoding_type encoding;	/* default INA_F32; INA_BF16 sends half
						 * the bytes, summed in f32, rounded once */
	uint64_t token;			/* from ina_token_*(); never from argv */
	uint32_t timeout_ms;		/* no progress this long fails, default 10000 */
	uint32_t rto_us;		/* first retransmission timeout, default 5000 */
	const char *capture;		/* pcap file of every packet sent and received, or NULL */
};

struct ina_stats {
	uint64_t rounds;		/* allreduces completed */
	uint64_t bytes_sent;		/* ina packet bytes (UDP payload) sent */
	uint64_t bytes_received;
	uint64_t packets_sent;
	uint64_t packets_received;
	uint64_t data_packets;		/* packets that carried a block */
	uint64_t empty_packets;		/* header-only acks */
	uint64_t retransmits;
	uint64_t waits;			/* WAIT answers from the switch */
	uint64_t dropped;		/* received packets that failed validation */
	uint64_t stale;			/* valid packets for no open block */
	uint64_t tx_bursts;		/* port bursts that sent something */
	uint64_t rx_bursts;		/* port bursts that received something */
	uint64_t inject_drop;		/* packets the port dropped on purpose */
};

struct ina_ctx;

/* Fills 'cfg' with the defaults; the caller sets address, job, rank, world
 * and token. */
void ina_config_init(struct ina_config *cfg);

/* Token of a job secret read from 'file', or from $INA_JOB_TOKEN when 'file'
 * is NULL. 0 or a negative code; on error, 'err' says why. */
int ina_token_from(const char *file, uint64_t *token, char *err, size_t err_size);

/* Opens a port and joins the job. 0 and '*ctx', or a negative code (then
 * '*ctx' is NULL and 'err', if not NULL, holds a sentence saying why):
 * INA_EPORT when the port cannot be opened, INA_ENOSWITCH when the switch's
 * address cannot be resolved (no ARP answer) or the switch does not answer. */
int ina_open(const struct ina_config *cfg, struct ina_ctx **ctx, char *err, size_t err_size);

/*
 * Sums (INA_SUM) or averages (INA_AVG) 'n' floats of every worker of the job
 * into 'out' (which may be 'in'). Every worker must call it with the same
 * 'tensor_id' and 'n' in the same order. Every worker receives the same bits.
 */
int ina_allreduce(struct ina_ctx *ctx, uint32_t tensor_id, const float *in, float *out, size_t n,
		  enum ina_op op);

/* Current counters. */
void ina_get_stats(const struct ina_ctx *ctx, struct ina_stats *stats);
/* The sentence behind the last error of this context ("" if none). */
const char *ina_last_error(const struct ina_ctx *ctx);
/* The job's epoch as the switch assigned it. */
uint32_t ina_epoch(const struct ina_ctx *ctx);
/* The transport the context runs on: its port's type, "udp" or "dpdk". */
const char *ina_transport(const struct ina_ctx *ctx);

/* Says FIN (or LEAVE after an error), waits briefly for the switch, frees.
 * Accepts NULL. Returns 0 or the context's error. */
int ina_close(struct ina_ctx *ctx);

/* Name of an error code, INA_* or -errno. Never NULL. */
const char *ina_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
