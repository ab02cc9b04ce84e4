/* SPDX-License-Identifier: MIT */
/*
 * Sharing the slot pool between jobs: the lane allowance of each job under
 * a weighted max-min fair share (ina-switch --share fair). A pure function
 * of the jobs' demands and weights: no pipeline state, no allocation.
 *
 * Units are slots of one partition. A job's demand is what it asks
 * (ceil(lanes / K) x sets, sets = S + 2 under ssp:S, else 1); its 'unit' is
 * the slots one row of lanes costs (sets), so a grant is a multiple of it.
 * Water-filling: a job asking less than its weighted share of what is left
 * gets what it asks, and the rest is shared again among the others in
 * proportion to their weights; then each share is rounded down to its unit
 * and the slots left go one unit at a time to the jobs furthest below their
 * exact share. With unit 1, every job asking more than its share ends within
 * one slot of it, and the grants never exceed the pool.
 *
 * 'total' (ina-switch --share-total) counts jobs not there yet: the pool is
 * shared as if there were at least 'total' jobs, the missing ones of weight
 * 1 asking for everything, so that the first jobs do not take it all.
 */
#ifndef INA_SHARE_H
#define INA_SHARE_H

#include <stdint.h>

enum share_policy {
	SHARE_FIRST_COME = 0, /* a job gets what it asks, or nothing */
	SHARE_FAIR,	      /* weighted max-min fair share */
};

/* Policy options of ina-switch (--share, --share-total, --share-min-slots). */
struct share_config {
	uint8_t policy;	    /* enum share_policy */
	uint16_t total;	    /* jobs expected; 0 or 1: only the jobs there */
	uint32_t min_slots; /* least slots a job is admitted with (>= 1) */
};

#define SHARE_MAX_JOBS 4097 /* jobs (with the missing ones) share_compute takes */

/* One job's part of the computation. */
struct share_job {
	uint32_t demand; /* slots asked (a multiple of 'unit') */
	uint16_t weight; /* >= 1 (0 is taken as 1) */
	uint16_t unit;	 /* slots per row of lanes (>= 1; 0 is taken as 1) */
	uint32_t grant;	 /* out: slots allowed, a multiple of 'unit',
				 * <= demand */
	double exact;	 /* out: the exact (real) weighted share */
};

/* Parses "fair" or "first-come". 0, or -1 when unknown. */
int share_policy_parse(const char *s, uint8_t *policy);
const char *share_policy_name(uint8_t policy);

/*
 * Computes every job's grant out of 'pool' slots for the 'n' jobs (n <=
 * SHARE_MAX_JOBS), as if max(n, total) jobs were there. The sum of grants
 * never exceeds 'pool'. Returns 0, or -1 when n is too large.
 */
int share_compute(uint32_t pool, uint16_t total, struct share_job *jobs, uint16_t n);

/*
 * Lanes from slots: the lanes a grant of 'slots' gives a job asking
 * 'lanes' lanes on K = 'parts' partitions with 'unit' slots per row: at
 * most 'lanes', at least 0.
 */
uint16_t share_lanes_of(uint32_t slots, uint16_t lanes, uint16_t parts, uint16_t unit);

#endif
