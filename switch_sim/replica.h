/* SPDX-License-Identifier: MIT */
/*
 * Replication and failover, the replica's side (docs/PROTOCOL.md, "Replica
 * and failover"): REPLs from the primary stored and sent on, and a standby
 * job taken over on a worker's FAILOVER. pipeline.c dispatches here; this
 * uses only the lower layer (slots.c).
 */
#ifndef INA_REPLICA_H
#define INA_REPLICA_H

#include <stdint.h>

#include "ina/pkt.h"
#include "ina/wire.h"
#include "pipeline_int.h"

/* REPL 'h' from the primary for job 'j': the RESULT to send on, or NULL. */
struct ina_pkt *replica_repl(struct pipeline *p, struct ina_pkt *in, struct job *j,
			     const struct ina_hdr *h, uint64_t now);
/* FAILOVER 'h' from a worker of job 'j': the announcement, or NULL. */
struct ina_pkt *replica_failover(struct pipeline *p, struct ina_pkt *in, struct job *j,
				 const struct ina_hdr *h, uint64_t now);
/* Answers the sender of 'in' with the takeover's announcement again (it
 * missed it, or sent a DATA of the primary's epoch). */
struct ina_pkt *replica_announce_again(struct pipeline *p, struct ina_pkt *in, const struct job *j);

#endif
