/* SPDX-License-Identifier: MIT */
/*
 * The pipeline's counters and jobs as text (pipeline_dump.h), for the
 * programs: it reads the pipeline's inside (pipeline_int.h) and prints; the
 * pure core (pipeline.c and its helpers) prints nothing.
 */
#include <inttypes.h>
#include <stdio.h>

#include "ina/util.h"
#include "ina/wire.h"
#include "pipeline_dump.h"
#include "pipeline_int.h"
#include "tenants.h"
#include "uplink.h"

/* The lines of pipeline_dump() for the lanes of ssp job 'j'. */
static void
ssp_dump(const struct pipeline *p, const struct job *j, FILE *f)
{
	uint32_t sets = INA_SSP_SETS(j->ssp);
	char ranks[192];

	fprintf(f, "  ssp:%u: %" PRIu32 " slots per lane\n", j->ssp, sets);
	for (uint16_t l = p->cfg.part_index; l < j->params.lanes;
	     l = (uint16_t)(l + p->cfg.part_count)) {
		const struct slot *g =
			&p->slots[j->slot_base + (uint32_t)(l / p->cfg.part_count) * sets];

		for (uint32_t k = 0; k < sets; k++) {
			const struct half *hf = &g[k].h[g[k].cur];

			if (hf->state != HALF_AGG || !hf->bitmap)
				continue;
			fprintf(f,
				"  lane %u set %" PRIu32 ": round %" PRIu32 " waits on ranks %s\n",
				l, k, hf->key.round,
				ina_ranks_str(ranks, sizeof(ranks), j->full & ~hf->bitmap));
		}
	}
}

void
pipeline_stats_print(const struct pipeline *p, FILE *f)
{
	pipeline_stats_fprint(&p->st, f);
}

void
pipeline_stats_fprint(const struct pipeline_stats *st, FILE *f)
{
#define PRINT(name) \
	do { \
		if (st->name) \
			fprintf(f, "  %-24s %" PRIu64 "\n", #name, st->name); \
	} while (0)
	PRINT(rx_pkts);
	PRINT(tx_pkts);
	PRINT(results);
	PRINT(results_empty);
	PRINT(results_deferred);
	PRINT(result_bytes);
	PRINT(results_partial);
	PRINT(ssp_late);
	PRINT(shadow_replies);
	PRINT(duplicates);
	PRINT(waits);
	PRINT(keepalives);
	PRINT(saturated);
	PRINT(joins);
	PRINT(fins);
	PRINT(leaves);
	PRINT(jobs_admitted);
	PRINT(jobs_granted);
	PRINT(jobs_redirected);
	PRINT(jobs_refused);
	PRINT(jobs_freed);
	PRINT(jobs_expired);
	PRINT(jobs_aborted);
	PRINT(replicated);
	PRINT(repl_stored);
	PRINT(repl_sent);
	PRINT(standby_jobs);
	PRINT(takeovers);
	PRINT(announce_repeats);
	PRINT(up_joins);
	PRINT(up_data);
	PRINT(up_resends);
	PRINT(up_bytes);
	PRINT(up_results);
	PRINT(up_fins);
	PRINT(up_errors);
	PRINT(up_leaves);
#undef PRINT
	for (int r = 1; r < INA_WIRE_REASON_MAX; r++)
		if (st->drop_wire[r])
			fprintf(f, "  drop_%-19s %" PRIu64 "\n", ina_wire_reason_name(r),
				st->drop_wire[r]);
	for (int d = 0; d < PDROP_MAX; d++)
		if (st->drop[d])
			fprintf(f, "  drop_%-19s %" PRIu64 "\n",
				pipeline_drop_name((enum pipeline_drop)d), st->drop[d]);
}

void
pipeline_dump(const struct pipeline *p, FILE *f)
{
	char ranks[192], name[64];

	fprintf(f, "slots: %" PRIu32 " free of %" PRIu32 "; jobs: %u\n", p->free_slots,
		p->cfg.nb_slots, p->nb_jobs);
	for (uint16_t i = 0; i < p->cfg.max_jobs; i++) {
		const struct job *j = &p->jobs[i];

		if (!j->active)
			continue;
		fprintf(f,
			"job %s epoch %" PRIu32 ": world %u, lanes %u (slots %" PRIu32 "..%" PRIu32
			"), %s; joined ",
			tenants_job_name(p->cfg.tenants, j->params.job_id, name, sizeof(name)),
			j->params.epoch, j->params.world, j->params.lanes, j->slot_base,
			j->slot_base + j->nb_slots - 1, ina_wire_encoding_name(j->params.encoding));
		fprintf(f, "%s, finished ", ina_ranks_str(ranks, sizeof(ranks), j->joined));
		fprintf(f, "%s%s\n", ina_ranks_str(ranks, sizeof(ranks), j->finished),
			j->aborted	  ? " (aborted: a rank died; freed at the next tick)"
			: j->linger_until ? " (lingering)"
					  : "");
		if (j->up)
			fprintf(f, "  rack: rank %u of %u on the spine, %s (epoch %" PRIu32 ")\n",
				j->up_rank, j->up_world,
				j->up == UP_JOINING   ? "joining"
				: j->up == UP_RUNNING ? "running"
						      : "finishing",
				j->up_epoch);
		if (j->ssp) {
			ssp_dump(p, j, f);
			continue;
		}
		if (j->standby)
			fprintf(f, "  standing by for the primary\n");
		else if (j->taken_over)
			fprintf(f, "  taken over from the primary (its epoch %" PRIu32 ")\n",
				j->old_epoch);
		for (uint16_t l = p->cfg.part_index; l < j->params.lanes;
		     l = (uint16_t)(l + p->cfg.part_count)) {
			const struct slot *s = &p->slots[j->slot_base + l / p->cfg.part_count];
			const struct half *hf = &s->h[s->cur];

			const struct half *sh = &s->h[s->cur ^ 1];

			if (j->standby) {
				if (sh->state == HALF_RESULT)
					fprintf(f,
						"  lane %u: stored result: tensor %" PRIu32
						" round %" PRIu32 " block %" PRIu32 " next %" PRIu32
						" (version %u)\n",
						l, sh->key.tensor_id, sh->key.round, sh->key.block,
						sh->next, s->cur ^ 1);
				continue;
			}
			if (hf->state == HALF_UP) {
				fprintf(f,
					"  lane %u: tensor %" PRIu32 " round %" PRIu32
					" block %" PRIu32 " (version %u) waits on the spine\n",
					l, hf->key.tensor_id, hf->key.round, hf->key.block, s->cur);
				continue;
			}
			if (hf->state != HALF_AGG || !hf->bitmap)
				continue;
			fprintf(f,
				"  lane %u: tensor %" PRIu32 " round %" PRIu32 " block %" PRIu32
				" (version %u) waits on ranks ",
				l, hf->key.tensor_id, hf->key.round, hf->key.block, s->cur);
			fprintf(f, "%s",
				ina_ranks_str(ranks, sizeof(ranks), j->full & ~hf->bitmap));
			if (sh->state == HALF_RESULT)
				fprintf(f,
					"; last result: round %" PRIu32 " block %" PRIu32
					" next %" PRIu32,
					sh->key.round, sh->key.block, sh->next);
			fputc('\n', f);
		}
	}
}
