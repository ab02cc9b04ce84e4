/* SPDX-License-Identifier: MIT */
/*
 * The API's contact with the port (ina_int.h): one burst each way between
 * the port and the engines (a takeover and a stall logged), the keepalive
 * thread's beat, and driving the engines while they stay in a phase,
 * sleeping in the port until a packet or the next timer.
 */
#include <pthread.h>

#include "ina_int.h"
#include "ina/capture.h"
#include "ina/log.h"

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
int
ina_pump(struct ina_ctx *ctx)
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
void
ina_keepalive_beat(void *arg)
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
int
ina_run_while(struct ina_ctx *ctx, int phase)
{
	while (egroup_phase(ctx->eg) == phase &&
	       !(egroup_error(ctx->eg) && (phase == ENGINE_JOINING || phase == ENGINE_RUNNING))) {
		if (!ina_pump(ctx) && egroup_phase(ctx->eg) == phase) {
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
	return ina_ctx_error(ctx);
}
