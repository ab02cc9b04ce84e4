/* SPDX-License-Identifier: MIT */
/*
 * What the host engine waits for (engine_int.h): where a running operation
 * waits (round, lane, block), the sentence engine_stall() hands out once a
 * quarter of the timeout passed without progress, and the operation's end
 * when nothing progresses for timeout_ns (or a paused peer for pause_ns),
 * blaming the peers the switch waits on, a silent primary, or the switch.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "engine_int.h"
#include "ina/util.h"

/* The first lane still waiting for a result. */
uint16_t
engine_waiting_lane(const struct engine *e)
{
	uint16_t lane = 0;

	while (lane + 1u < e->cfg.lanes && e->lanes[lane].done)
		lane++;
	return lane;
}

/* Where the engine waits: the round, the first lane still waiting and its
 * block (under ssp: the oldest round in flight, its first lane). */
static void
waiting_at(const struct engine *e, uint32_t *round, uint16_t *lane, uint32_t *block)
{
	*round = e->round;
	*lane = engine_waiting_lane(e);
	*block = e->lanes[*lane].block;
	for (uint32_t age = e->cfg.ssp + 1u; e->cfg.ssp && age > 0; age--) {
		for (uint32_t k = 0; k <= e->cfg.ssp; k++) {
			const struct sop *o = &e->sops[k];

			if (!o->active || o->round != e->round - age)
				continue;
			*round = o->round;
			for (uint16_t l = 0; l < e->cfg.lanes; l++)
				if (o->lanes[l].active && !o->lanes[l].done) {
					*lane = l;
					*block = l;
					return;
				}
		}
	}
}

/*
 * A stall, described once when a quarter of the timeout has passed without
 * progress, while the operation may still recover: what this worker waits
 * for, and what the switch last said. ina_pump.c logs it (engine_stall()).
 */
static void
describe_stall(struct engine *e, uint64_t now)
{
	char said[320], ranks[160];
	uint64_t ago = (now - e->last_heard_ns) / 1000000;
	uint32_t round, block;
	uint16_t lane;

	waiting_at(e, &round, &lane, &block);

	if (e->last_type == INA_T_WAIT && e->wait_missing)
		snprintf(said, sizeof(said),
			 "WAIT for lane %" PRIu32 " block %" PRIu32 ", missing rank(s) %s, %" PRIu64
			 " ms ago",
			 e->wait_lane, e->wait_block,
			 ina_ranks_str(ranks, sizeof(ranks), e->wait_missing), ago);
	else
		snprintf(said, sizeof(said), "%s, %" PRIu64 " ms ago",
			 e->last_type ? ina_wire_type_name(e->last_type) : "nothing", ago);
	if (e->fo_active) {
		size_t len = strlen(said);

		snprintf(said + len, sizeof(said) - len,
			 "; the primary is silent for %" PRIu64 " ms, waiting for the replica to "
			 "take over (%" PRIu32 " FAILOVER sent)",
			 (now - e->sw_heard_ns) / 1000000, e->fo_tries);
	}
	snprintf(e->stall_msg, sizeof(e->stall_msg),
		 "job %s rank %u round %" PRIu32 ": no progress for %" PRIu64
		 " ms: lane %u waits for block %" PRIu32 " (%" PRIu64 " retransmissions so far); "
		 "the %s last said: %s",
		 e->job_name, e->cfg.rank, round, (now - e->last_progress_ns) / 1000000, lane,
		 block, e->st.retransmits, e->failed_over ? "replica switch" : "switch", said);
	e->stall_reported = 1;
	e->stall_pending = 1;
	e->st.stalls++;
}

const char *
engine_stall(struct engine *e)
{
	if (!e->stall_pending)
		return NULL;
	e->stall_pending = 0;
	return e->stall_msg;
}

/* Where the stall timeout counts from: the last result, or a LIVE WAIT. */
uint64_t
engine_progress_since(const struct engine *e)
{
	return e->live_ns > e->last_progress_ns ? e->live_ns : e->last_progress_ns;
}

void
engine_check_progress(struct engine *e, uint64_t now)
{
	char ranks[192];
	uint32_t round, block;
	uint16_t lane;

	if (!e->stall_reported && now - e->last_progress_ns >= e->cfg.timeout_ns / 4)
		describe_stall(e, now);
	if (now - engine_progress_since(e) < e->cfg.timeout_ns) {
		/* Waiting on LIVE WAITs: paused peers, up to the longest pause. */
		if (!e->cfg.pause_ns || e->live_ns <= e->last_progress_ns ||
		    now - e->last_progress_ns < e->cfg.pause_ns)
			return;
		waiting_at(e, &round, &lane, &block);
		engine_fail(
			e, ENGINE_EPEER,
			"job %s rank %u: no progress for %" PRIu64 " ms, the longest pause "
			"(pause_ms) a peer may take; the switch waits on rank(s) %s for lane %" PRIu32
			" block %" PRIu32 " of round %" PRIu32,
			e->job_name, e->cfg.rank, e->cfg.pause_ns / 1000000,
			ina_ranks_str(ranks, sizeof(ranks), e->wait_missing), e->wait_lane,
			e->wait_block, round);
		return;
	}
	waiting_at(e, &round, &lane, &block);
	/* Blame peers only while the switch still says it waits on them. */
	if (e->wait_missing && now - e->wait_heard_ns < e->cfg.timeout_ns / 2) {
		engine_fail(e, ENGINE_EPEER,
			    "job %s rank %u: no progress for %" PRIu64 " ms; the switch waits on "
			    "rank(s) %s for lane %" PRIu32 " block %" PRIu32 " of round %" PRIu32,
			    e->job_name, e->cfg.rank, e->cfg.timeout_ns / 1000000,
			    ina_ranks_str(ranks, sizeof(ranks), e->wait_missing), e->wait_lane,
			    e->wait_block, round);
	} else if (e->fo_active) {
		engine_fail(e, ENGINE_ENOSWITCH,
			    "job %s rank %u: no progress for %" PRIu64 " ms: the primary switch "
			    "is silent for %" PRIu64
			    " ms and the replica did not take over (%" PRIu32
			    " FAILOVER sent; round %" PRIu32 ", lane %" PRIu32
			    " waits for block %" PRIu32 ")",
			    e->job_name, e->cfg.rank, e->cfg.timeout_ns / 1000000,
			    (now - e->sw_heard_ns) / 1000000, e->fo_tries, round, lane, block);
	} else {
		engine_fail(e, ENGINE_ENOSWITCH,
			    "job %s rank %u: the %s did not answer for %" PRIu64
			    " ms (round %" PRIu32 ", lane %" PRIu32 " waits for block %" PRIu32 ")",
			    e->job_name, e->cfg.rank, e->failed_over ? "replica switch" : "switch",
			    e->cfg.timeout_ns / 1000000, round, lane, block);
	}
}
