/* SPDX-License-Identifier: MIT */
/*
 * The host engine with a replica switch (engine_int.h; docs/PROTOCOL.md,
 * "Replica and failover"). The primary P and the replica R: the packets go
 * to P, the results come back through R, and P's silence while packets are
 * outstanding (no RESULT through R, no WAIT from P, for failover_ns) makes
 * the engine ask R to take over with FAILOVER. R's announcement (a FAILOVER
 * with the new epoch) switches the engine to R, which answers every resent
 * packet either into the block it opened afresh or from the result it
 * stored last. Here: which sender may send what, R's errors and
 * announcement, the FAILOVERs, the probe of R, and their timers.
 */
#include <inttypes.h>

#include "engine_int.h"

/*
 * An ERROR from the replica before any failover. While it is asked to stand
 * by, the join fails (and the primary, which admitted the job, hears LEAVE);
 * later the job goes on at the primary without a replica.
 */
void
engine_fo_on_replica_error(struct engine *e, const struct ina_hdr *h, const uint8_t *payload,
			   uint32_t len, uint64_t now)
{
	int n = (int)(len - INA_HDR_SIZE);

	if (e->standby == STANDBY_JOINING && e->phase == ENGINE_JOINING) {
		engine_fail(e, h->status == INA_WERR_SHUTDOWN ? ENGINE_ENOSWITCH : ENGINE_EREFUSED,
			    "job %s rank %u: the replica switch refused to stand by: %.*s",
			    e->job_name, e->cfg.rank, n, (const char *)payload);
		e->standby = STANDBY_NONE;
		engine_ctl_start(e, ENGINE_LEAVING, now);
		return;
	}
	if (e->standby == STANDBY_UP) {
		e->standby = STANDBY_NONE;
		e->fo_active = 0;
		e->st.standby_lost++;
		return;
	}
	e->st.stale++;
}

/*
 * The replica's announcement: it has taken the job over under epoch
 * 'h->epoch'. From now on the engine talks to it alone, and every packet in
 * flight goes again at once with the new epoch: the replica counts it into
 * the block it opened or answers it from the result it stored.
 */
void
engine_fo_on_failover(struct engine *e, const struct ina_hdr *h, uint64_t now)
{
	if (e->failed_over || e->standby == STANDBY_NONE || h->epoch == 0 ||
	    h->epoch == e->params.epoch || e->phase == ENGINE_CLOSED) {
		e->st.stale++;
		return;
	}
	e->failed_over = 1;
	e->fo_active = 0;
	e->params.epoch = h->epoch;
	e->st.failovers++;
	e->st.failover_silence_ns = now - e->sw_heard_ns;
	e->sw_heard_ns = now;
	e->last_heard_ns = now;
	if (e->phase == ENGINE_JOINING) {
		/* Still asking it to stand by: it has the job, so the join is done. */
		e->phase = ENGINE_READY;
		return;
	}
	if (e->phase == ENGINE_FINISHING || e->phase == ENGINE_LEAVING) {
		/* The goodbye starts over, to the replica. */
		engine_ctl_start(e, e->phase, now);
		return;
	}
	if (e->phase != ENGINE_RUNNING)
		return;
	e->last_progress_ns = now;
	e->stall_reported = 0;
	e->wait_missing = 0;
	for (uint16_t l = 0; l < e->cfg.lanes; l++) {
		struct lane *ln = &e->lanes[l];

		if (ln->done)
			continue;
		ln->resend = 1;
		ln->rto_ns = e->rto_ns;
	}
}

/*
 * With a replica: whether a packet of 'type' may come from 'pkt's sender.
 * Before a failover the primary sends everything but what only the replica
 * sends (its STANDBY JOIN_ACK, FIN_ACK and ERROR to a worker standing by with
 * it, the FAILOVER announcement); RESULTs come from the replica, which sends
 * on the primary's. After a failover only the replica is heard. Sets '*from_r'.
 */
int
engine_fo_sender_ok(const struct engine *e, const struct ina_pkt *pkt, const struct ina_hdr *h,
		    int *from_r)
{
	int r = ina_peer_equal(&pkt->peer, &e->cfg.replica);
	int p = !r && ina_peer_equal(&pkt->peer, &e->cfg.sw);

	*from_r = r;
	if (e->failed_over)
		return r;
	switch (h->type) {
	case INA_T_RESULT:
		return r || p;
	case INA_T_FAILOVER:
		return r;
	case INA_T_JOIN_ACK:
		return (h->flags & INA_F_STANDBY) ? r : p;
	case INA_T_FIN_ACK:
	case INA_T_ERROR:
		return r || p;
	default:
		return p;
	}
}

/*
 * The primary's silence: packets outstanding and nothing from it (or from
 * the replica on its behalf) for failover_ns. Then FAILOVER goes to the
 * replica, resent on the usual backoff until it announces the takeover or
 * the primary speaks again (a WAIT: it was slow, not dead).
 */
uint16_t
engine_fo_tx(struct engine *e, uint64_t now, struct ina_pkt **out, uint16_t max)
{
	struct ina_pkt *p;
	struct ina_hdr h;

	if (!standing_by(e) || max == 0)
		return 0;
	if (now - e->sw_heard_ns < e->cfg.failover_ns) {
		e->fo_active = 0;
		return 0;
	}
	if (!e->fo_active) {
		e->fo_active = 1;
		e->fo_need_send = 1;
		e->fo_tries = 0;
		e->fo_rto_ns = e->cfg.rto_ns;
	}
	if (!e->fo_need_send && now - e->fo_sent_ns < e->fo_rto_ns)
		return 0;
	p = ina_pkt_alloc(e->cfg.pool);
	if (!p)
		return 0;
	engine_fill_hdr(e, &h, INA_T_FAILOVER);
	ina_wire_encode_hdr(&h, p->data);
	p->len = INA_HDR_SIZE;
	p->peer = e->cfg.replica;
	if (!e->fo_need_send)
		e->fo_rto_ns = e->fo_rto_ns * 2 > e->cfg.rto_max_ns ? e->cfg.rto_max_ns
								    : e->fo_rto_ns * 2;
	e->fo_need_send = 0;
	e->fo_sent_ns = now;
	e->fo_tries++;
	e->st.failover_sent++;
	out[0] = p;
	return 1;
}

/*
 * The primary answers (WAITs) but nothing progresses for failover_ns: either
 * a peer is slow, or the replica took the job over (another worker found the
 * primary silent, perhaps only for a moment) and its announcement to this
 * worker was lost; the primary, alive, can then never deliver a result again
 * (the replica drops what it sends). Once per failover_ns of no progress, the
 * packet of the first lane waiting goes to the replica too: standing by, it
 * drops it; having taken over, it answers with the announcement.
 */
uint16_t
engine_fo_probe(struct engine *e, uint64_t now, struct ina_pkt **out, uint16_t max)
{
	uint64_t since = e->probe_ns > e->last_progress_ns ? e->probe_ns : e->last_progress_ns;
	struct ina_pkt *p;

	if (!standing_by(e) || e->fo_active || max == 0 || now - since < e->cfg.failover_ns)
		return 0;
	p = engine_bsp_build(e, engine_waiting_lane(e), 1);
	if (!p)
		return 0;
	p->peer = e->cfg.replica;
	e->probe_ns = now;
	e->st.probes++;
	out[0] = p;
	return 1;
}

uint64_t
engine_fo_deadline(const struct engine *e, uint64_t d)
{
	if (!standing_by(e))
		return d;
	if (!e->fo_active) {
		uint64_t since = e->probe_ns > e->last_progress_ns ? e->probe_ns
								   : e->last_progress_ns;

		if (e->sw_heard_ns + e->cfg.failover_ns < d)
			d = e->sw_heard_ns + e->cfg.failover_ns;
		if (since + e->cfg.failover_ns < d)
			d = since + e->cfg.failover_ns;
	} else if (e->fo_need_send) {
		d = 0;
	} else if (e->fo_sent_ns + e->fo_rto_ns < d) {
		d = e->fo_sent_ns + e->fo_rto_ns;
	}
	return d;
}
