/* SPDX-License-Identifier: MIT */
/*
 * The switch's log lines for the pipeline's events (pipeline_events.h):
 * a program sets pipeline_config.on_event to pipeline_log_event and the
 * pipeline's admissions, refusals, frees, reshapes and takeovers go to the
 * log (ina/log.h), the repeatable ones (refusals, redirects) rate-limited.
 */
#ifndef INA_PIPELINE_LOG_H
#define INA_PIPELINE_LOG_H

#include "pipeline_events.h"

/* A pipeline_event_fn; 'ctx' is the switch's tenants (tenants.h) in tenant
 * mode, to name a job by its tenant and the tenant's own id, else NULL. */
void pipeline_log_event(void *ctx, const struct pipeline_event *ev);

#endif
