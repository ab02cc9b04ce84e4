/* SPDX-License-Identifier: MIT */
/*
 * The weighted max-min fair share of the slot pool (share.h): water-filling
 * in real numbers, then rounding to each job's unit, the rest handed out to
 * the jobs furthest below their exact share.
 */
#include <string.h>

#include "share.h"

int
share_policy_parse(const char *s, uint8_t *policy)
{
	if (strcmp(s, "fair") == 0)
		*policy = SHARE_FAIR;
	else if (strcmp(s, "first-come") == 0)
		*policy = SHARE_FIRST_COME;
	else
		return -1;
	return 0;
}

const char *
share_policy_name(uint8_t policy)
{
	return policy == SHARE_FAIR ? "fair" : "first-come";
}

static uint32_t
weight_of(const struct share_job *j)
{
	return j->weight ? j->weight : 1u;
}

static uint32_t
unit_of(const struct share_job *j)
{
	return j->unit ? j->unit : 1u;
}

int
share_compute(uint32_t pool, uint16_t total, struct share_job *jobs, uint16_t n)
{
	uint8_t done[SHARE_MAX_JOBS];
	uint32_t missing = total > n ? (uint32_t)(total - n) : 0;
	double left = pool;
	uint32_t given = 0;
	int changed = 1;

	if (n > SHARE_MAX_JOBS)
		return -1;
	memset(done, 0, n);
	for (uint16_t i = 0; i < n; i++) {
		jobs[i].grant = 0;
		jobs[i].exact = 0.0;
		if (jobs[i].demand == 0)
			done[i] = 1;
	}
	/* Water-filling: whoever asks no more than its share at this level
	 * is served and leaves; the missing jobs ask for everything. */
	while (changed) {
		double w = missing;

		changed = 0;
		for (uint16_t i = 0; i < n; i++)
			if (!done[i])
				w += weight_of(&jobs[i]);
		if (w == 0.0)
			break;
		for (uint16_t i = 0; i < n; i++) {
			if (done[i] || (double)jobs[i].demand > left * weight_of(&jobs[i]) / w)
				continue;
			jobs[i].exact = jobs[i].demand;
			left -= jobs[i].demand;
			done[i] = 1;
			changed = 1;
		}
		if (!changed)
			for (uint16_t i = 0; i < n; i++)
				if (!done[i])
					jobs[i].exact = left * weight_of(&jobs[i]) / w;
	}
	/* Round down to units. */
	for (uint16_t i = 0; i < n; i++) {
		uint32_t u = unit_of(&jobs[i]);
		uint32_t g = (uint32_t)(jobs[i].exact + 1e-9);

		if (g > jobs[i].demand)
			g = jobs[i].demand;
		jobs[i].grant = g / u * u;
		given += jobs[i].grant;
	}
	/* What rounding left over (only the real jobs' part of it): one unit
	 * at a time to the job furthest below its exact share. */
	{
		double real = 0.0;
		uint32_t spare;

		for (uint16_t i = 0; i < n; i++)
			real += jobs[i].exact;
		spare = (uint32_t)(real + 1e-9) > given ? (uint32_t)(real + 1e-9) - given : 0;
		if (spare > pool - given)
			spare = pool - given;
		for (;;) {
			int best = -1;
			double best_gap = 0.0;

			for (uint16_t i = 0; i < n; i++) {
				uint32_t u = unit_of(&jobs[i]);
				double gap = jobs[i].exact - jobs[i].grant;

				if (jobs[i].grant + u > jobs[i].demand || u > spare || gap <= 0.0)
					continue;
				if (best < 0 || gap > best_gap) {
					best = i;
					best_gap = gap;
				}
			}
			if (best < 0)
				break;
			jobs[best].grant += unit_of(&jobs[best]);
			spare -= unit_of(&jobs[best]);
		}
	}
	return 0;
}

uint16_t
share_lanes_of(uint32_t slots, uint16_t lanes, uint16_t parts, uint16_t unit)
{
	uint32_t rows = slots / (unit ? unit : 1u);
	uint32_t l = rows * (parts ? parts : 1u);

	return l < lanes ? (uint16_t)l : lanes;
}
