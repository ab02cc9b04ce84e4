/* SPDX-License-Identifier: MIT */
/*
 * The API's contact with the port (ina_int.h): one burst each way between
 * the port and the engines (a takeover and a stall logged, the per-byte
 * work the engines left run on the worker threads), the keepalive
 * thread's beat, and driving the engines while they stay in a phase,
 * sleeping in the port until a packet or the next timer; and how a caller
 * waits between polls: yielding while a round's packets move, sleeping
 * when idle (ina_busy, ina_idle).
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "ina_int.h"
#include "ina/capture.h"
#include "ina/log.h"

/* The replica took the job over: said once, as it changes where the job runs. */
static void
log_failover(struct ina_ctx *ctx)
{
	const struct engine_stats *es = engine_stats(ENG0(ctx));

	ctx->failovers = es->failovers;
	INA_LOG(WARN,
		"job %u rank %u round %u: the switch fell silent; the replica %s took the "
		"job over under epoch %u (the switch silent for %.1f ms)",
		ctx->job_id, ctx->rank, engine_round(ENG0(ctx)), ctx->replica_addr,
		engine_epoch(ENG0(ctx)), (double)es->failover_silence_ns / 1e6);
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
	/* The blocks the engines left to the workers: the results decoded
	 * before the calls look at them, the packets written before they
	 * are captured and sent. */
	if (ctx->work)
		workers_run(ctx->workers, ctx->work);
	stall = egroup_stall(ctx->eg);
	if (stall)
		INA_LOG(WARN, "%s", stall);
	if (ctx->cap && nb_tx)
		ina_capture_tx_burst(ctx->cap, pkts, nb_tx, &ctx->self, now + ctx->realtime_offset);
	ina_port_tx_burst(ctx->port, pkts, nb_tx);
	if (nb_rx || nb_tx)
		ctx->moved_ns = now;
	return nb_rx || nb_tx;
}

int
ina_busy(const struct ina_ctx *ctx)
{
	return ina_port_wait_sleeps(ctx->port) && egroup_phase(ctx->eg) == ENGINE_RUNNING &&
	       !egroup_error(ctx->eg) && ina_now_ns() - ctx->moved_ns < ina_busy_poll_ns();
}

/*
 * A round runs and a packet moved within the busy window (200 us unless
 * $INA_BUSY_POLL_US says otherwise): results come back within a round trip
 * (microseconds over memif). A round quiet for longer waits on a peer that
 * is slow or has no CPU (2 cores, 5 processes): the caller then sleeps as
 * when idle, leaving the CPU to it; longer windows measured slower on a
 * loaded machine.
 *
 * Busy: sched_yield() and back to polling. A result is due within a round
 * trip (microseconds over memif), and the port's wait would sleep blind to
 * it, costing tens of microseconds of timer slack each time; the yield
 * leaves the core to the other ranks and the switch when they have work
 * (2 cores, 5 processes in bench/run). Idle, or on a port whose wait wakes
 * on a packet (udp's ppoll: no busier way is faster there, and a poller
 * would take the CPU from the ranks that have work): wait in the port up to
 * 'ns'.
 */
void
ina_idle(struct ina_ctx *ctx, int busy, uint64_t ns)
{
	if (busy)
		sched_yield();
	else if (ns)
		ina_port_wait(ctx->port, ns);
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

int
ina_join_unanswered(const struct ina_ctx *ctx)
{
	for (uint16_t k = 0; k < egroup_count(ctx->eg); k++)
		if (!engine_epoch(egroup_engine(ctx->eg, k)))
			return 1;
	return 0;
}

void
ina_join_hint(const struct ina_ctx *ctx, char *buf, size_t size)
{
	char from[40] = "";
	uint32_t ip;
	uint16_t udp;

	/* The port's own address, where the backend has one to give. */
	if (ina_port_peer_inet(ctx->port, NULL, &ip, &udp) == 0)
		snprintf(from, sizeof(from), " from %u.%u.%u.%u:%u", ip >> 24, ip >> 16 & 0xff,
			 ip >> 8 & 0xff, ip & 0xff, udp);
	snprintf(buf, size,
		 "JOINs went to %s%s over %s: is ina-switch listening there "
		 "(--listen)? a firewall in the way? the same job token (INA_JOB_TOKEN) as the "
		 "other ranks?",
		 ctx->join_to, from, ctx->port->ops->type);
}

/* The JOINs went unanswered for 'ns' so far: said long before the join
 * times out, as a worker pointed at the wrong place would otherwise wait
 * in silence. */
static void
warn_join(const struct ina_ctx *ctx, uint64_t ns)
{
	char hint[512];

	ina_join_hint(ctx, hint, sizeof(hint));
	INA_LOG(WARN,
		"job %u rank %u: no answer after %.1f s of JOINs (the join "
		"fails after %.1f s); %s",
		ctx->job_id, ctx->rank, (double)ns / 1e9, (double)ctx->timeout_ns / 1e9, hint);
}

/* Drives the engine while it stays in 'phase'; an error ends joining and
 * running at once, while a goodbye (FIN, LEAVE) runs to its end. */
int
ina_run_while(struct ina_ctx *ctx, int phase)
{
	uint64_t start = ina_now_ns();
	int warned = phase != ENGINE_JOINING || ctx->timeout_ns <= JOIN_WARN_NS;

	while (egroup_phase(ctx->eg) == phase &&
	       !(egroup_error(ctx->eg) && (phase == ENGINE_JOINING || phase == ENGINE_RUNNING))) {
		if (!warned && ina_now_ns() - start >= JOIN_WARN_NS && ina_join_unanswered(ctx)) {
			warn_join(ctx, ina_now_ns() - start);
			warned = 1;
		}
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
