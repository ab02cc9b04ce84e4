/* SPDX-License-Identifier: MIT */
/*
 * The job table as a monitor reads it (pipeline.h, pipeline_jobs()): each
 * admitted job's state as numbers, for the switch's metrics (metrics.h).
 * What pipeline_dump() prints as sentences; it reads the pipeline and
 * changes nothing.
 */
#include "pipeline_int.h"

static const char *const state_names[PJOB_STATE_MAX] = {
	[PJOB_RUNNING] = "running", [PJOB_LINGERING] = "lingering",   [PJOB_ABORTED] = "aborted",
	[PJOB_STANDBY] = "standby", [PJOB_TAKEN_OVER] = "taken_over",
};

const char *
pipeline_job_state_name(enum pipeline_job_state s)
{
	return (unsigned)s < PJOB_STATE_MAX ? state_names[s] : "unknown";
}

static uint8_t
job_state(const struct job *j)
{
	if (j->aborted)
		return PJOB_ABORTED;
	if (j->linger_until)
		return PJOB_LINGERING;
	if (j->standby)
		return PJOB_STANDBY;
	if (j->taken_over)
		return PJOB_TAKEN_OVER;
	return PJOB_RUNNING;
}

uint16_t
pipeline_jobs(const struct pipeline *p, uint64_t now_ns, struct pipeline_job_info *out,
	      uint16_t max)
{
	uint16_t n = 0;

	for (uint16_t i = 0; i < p->cfg.max_jobs && n < max; i++) {
		const struct job *j = &p->jobs[i];
		struct pipeline_job_info *o = &out[n];

		if (!j->active)
			continue;
		const struct tenant *t = tenants_get(p->cfg.tenants,
						     ina_tenant_of(j->params.job_id));

		o->job_id = j->params.job_id;
		o->tenant = t ? t->name : NULL;
		o->epoch = j->params.epoch;
		o->world = j->params.world;
		o->lanes = j->params.lanes;
		o->want_lanes = j->want_lanes;
		o->slots = j->nb_slots;
		o->ranks_joined = (uint8_t)__builtin_popcountll(j->joined);
		o->ranks_finished = (uint8_t)__builtin_popcountll(j->finished);
		o->encoding = j->params.encoding;
		o->ssp = j->ssp;
		o->weight = j->weight;
		o->state = job_state(j);
		o->has_round = j->has_max_round;
		o->max_round = j->has_max_round ? j->max_round : 0;
		o->idle_ns = now_ns > j->last_active_ns ? now_ns - j->last_active_ns : 0;
		n++;
	}
	return n;
}

uint16_t
pipeline_max_jobs(const struct pipeline *p)
{
	return p->cfg.max_jobs;
}

uint32_t
pipeline_nb_slots(const struct pipeline *p)
{
	return p->cfg.nb_slots;
}
