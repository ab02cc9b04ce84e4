/* SPDX-License-Identifier: MIT */
/*
 * A rack switch's link to its spine (docs/PROTOCOL.md, "Hierarchy"): the
 * hooks pipeline.c calls for a job that has an uplink. The rack is one
 * worker of the same job on the spine; each hook turns one input packet into
 * at most one output packet, like every path of the pipeline.
 */
#ifndef INA_UPLINK_H
#define INA_UPLINK_H

#include <stdint.h>

#include "pipeline_int.h"

/* struct job.up */
enum uplink_state {
	UP_NONE = 0, /* no uplink: an ordinary job */
	UP_JOINING,  /* admitted here, its JOIN on the way to the spine */
	UP_RUNNING,  /* the spine admitted the rack: up_epoch is set */
	UP_FINNING,  /* every local rank sent FIN; so did the rack upstream */
};

/* The configured uplink entry for 'job_id', or NULL. */
const struct pipeline_uplink_job *uplink_job_lookup(const struct pipeline *p, uint32_t job_id);

/* A local JOIN while the rack joins the spine: becomes (again) the rack's
 * JOIN to the spine. */
struct ina_pkt *uplink_join(struct pipeline *p, struct ina_pkt *in, struct job *j);

/* Half 'ver' of lane 'lane' (slot 's') is complete here (HALF_UP): 'in'
 * becomes the rack's DATA to the spine with the partial sum; 'resend' marks
 * a resend (a local rank's retransmission while the spine's RESULT is
 * outstanding; at most one per wait interval, the others are dropped and
 * counted as duplicates). */
struct ina_pkt *uplink_data(struct pipeline *p, struct ina_pkt *in, struct job *j, struct slot *s,
			    uint16_t lane, uint8_t ver, int resend, uint64_t now);

/* 0 when a local DATA of rack job 'j' announces an i32 exponent that, with
 * the rack's headroom added going up, leaves INA_EXP_MIN..INA_EXP_MAX (no
 * host sends one: refused, bad_exp); 1 otherwise, and for any other job. */
int uplink_exp_ok(const struct job *j, const struct ina_hdr *h);

/* The last local FIN (and each resend of one): the rack's FIN to the spine. */
struct ina_pkt *uplink_fin(struct pipeline *p, struct ina_pkt *in, struct job *j,
			   const struct ina_hdr *h);

/* A local LEAVE that leaves no local rank in the job: the rack's LEAVE to
 * the spine (which tells the other racks' ranks). */
struct ina_pkt *uplink_leave(struct pipeline *p, struct ina_pkt *in, struct job *j);

/* A packet from the spine: JOIN_ACK, RESULT, FIN_ACK, ERROR (WAIT and the
 * rest are counted drops). */
struct ina_pkt *uplink_rx(struct pipeline *p, struct ina_pkt *in, uint64_t now);

#endif
