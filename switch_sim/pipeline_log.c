/* SPDX-License-Identifier: MIT */
/*
 * The switch's log lines for the pipeline's events (pipeline_log.h). The
 * pure pipeline reports; this file, linked into the programs, writes the
 * sentences. Refusals and redirects can repeat (every resent JOIN): they are
 * rate-limited, each kind on its own. Its context is the switch's tenants
 * (tenants.h) in tenant mode, so that a job is named by its tenant's own id
 * and the tenant, or NULL.
 */
#include <inttypes.h>
#include <stdio.h>

#include "ina/log.h"
#include "ina/wire.h"
#include "pipeline_log.h"
#include "tenants.h"

void
pipeline_log_event(void *ctx, const struct pipeline_event *ev)
{
	char job[64];

	/* Tenant mode: the tenant's own job id, and the tenant. */
	tenants_job_name(ctx, ev->job_id, job, sizeof(job));
	switch (ev->kind) {
	case PEV_ADMITTED:
		if (ev->lanes < ev->want_lanes)
			INA_LOG(INFO,
				"job %s: admitted with %u of the %u lanes it asked "
				"(its fair share, weight %u), epoch %" PRIu32
				", world %u, %s, B <= %u",
				job, ev->lanes, ev->want_lanes, ev->weight ? ev->weight : 1u,
				ev->epoch, ev->world, ina_wire_encoding_name(ev->encoding),
				ev->max_block);
		else
			INA_LOG(INFO,
				"job %s: admitted%s, epoch %" PRIu32 ", world %u, "
				"%u lanes, %s, B <= %u",
				job, ev->standby ? " (standby for the primary)" : "", ev->epoch,
				ev->world, ev->lanes, ina_wire_encoding_name(ev->encoding),
				ev->max_block);
		break;
	case PEV_REFUSED:
		INA_LOG_RL(WARN, "job %s rank %u: refused: %.*s", job, ev->rank, (int)ev->text_len,
			   ev->text);
		break;
	case PEV_REDIRECTED:
		INA_LOG_RL(INFO,
			   "job %s rank %u: %.*s: sent to the host aggregator at "
			   "%u.%u.%u.%u:%u",
			   job, ev->rank, (int)ev->text_len, ev->text, ev->ipv4 >> 24,
			   ev->ipv4 >> 16 & 0xff, ev->ipv4 >> 8 & 0xff, ev->ipv4 & 0xff, ev->port);
		break;
	case PEV_FREED:
		INA_LOG(INFO, "job %s: freed %" PRIu32 " slots", job, ev->slots);
		break;
	case PEV_EXPIRED:
		INA_LOG(WARN, "job %s: silent for %" PRIu64 " s, freed", job, ev->ms / 1000u);
		break;
	case PEV_GIVE_BACK:
		INA_LOG(INFO,
			"job %s: gives back %u of its %u lanes from round %" PRIu32
			" (its fair share with job %" PRIu32 ")",
			job, ev->want_lanes - ev->lanes, ev->want_lanes, ev->round, ev->other_job);
		break;
	case PEV_RESHAPED:
		INA_LOG(INFO,
			"job %s: now on %u lanes from round %" PRIu32 ", %" PRIu32
			" slots given back",
			job, ev->lanes, ev->round, ev->slots);
		break;
	case PEV_STANDBY_REPLACED:
		INA_LOG(INFO, "job %s: standby epoch %" PRIu32 " replaced by epoch %" PRIu32, job,
			ev->old_epoch, ev->epoch);
		break;
	case PEV_RANK_DEAD:
		INA_LOG(WARN,
			"job %s: rank %u silent for %" PRIu64 " ms while rank %u "
			"waits on it (lane %u block %" PRIu32 " round %" PRIu32 "): job aborted",
			job, ev->other_rank, ev->ms, ev->rank, ev->lane, ev->block, ev->round);
		break;
	case PEV_RANK_LEFT:
		INA_LOG(INFO, "job %s: rank %u left", job, ev->rank);
		break;
	case PEV_TAKEOVER:
		INA_LOG(WARN,
			"job %s: rank %u reports the primary silent: taken over, "
			"epoch %" PRIu32 " -> %" PRIu32,
			job, ev->rank, ev->old_epoch, ev->epoch);
		break;
	case PEV_UP_JOINED:
		INA_LOG(INFO, "job %s: joined the spine as rank %u of %u, epoch %" PRIu32, job,
			ev->rank, ev->world, ev->epoch);
		break;
	case PEV_UP_ERROR:
		INA_LOG(WARN, "job %s: the spine sent ERROR %u (%.*s): the job ends here too", job,
			ev->status, (int)ev->text_len, ev->text);
		break;
	default:
		break;
	}
}
