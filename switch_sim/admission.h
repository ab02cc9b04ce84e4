/* SPDX-License-Identifier: MIT */
/*
 * The switch's admission of jobs: a JOIN checked against the job it names
 * (or a new job admitted into the slot pool: first-come, fair share with
 * give-back, or sent on to a host aggregator) and answered. pipeline.c
 * dispatches JOINs here; it uses only the lower layer (slots.c), ssp.c's
 * refusal and uplink.c's JOIN upstream.
 */
#ifndef INA_ADMISSION_H
#define INA_ADMISSION_H

#include <stdint.h>

#include "ina/pkt.h"
#include "ina/wire.h"
#include "pipeline_int.h"

/* JOIN 'h' (validated) received at 'now': the packet to send, or NULL. */
struct ina_pkt *admission_join(struct pipeline *p, struct ina_pkt *in, const struct ina_hdr *h,
			       uint64_t now);

/* Give-back: every rank of 'j' sent a DATA of the reshape round, so the
 * lanes past the new count are idle for good and their slots go back. */
void admission_reshape_done(struct pipeline *p, struct job *j);

#endif
