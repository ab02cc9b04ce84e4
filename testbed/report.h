/* SPDX-License-Identifier: MIT */
/*
 * The report of an ina-testbed run: what each job did (per-round time, the
 * slowest rank's; goodput; retransmits; bytes, from the ina-host reports) and
 * what each link carried (its veth counters), as one JSON document (jansson)
 * that is written to a file and printed as text.
 */
#ifndef TB_REPORT_H
#define TB_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "netns.h"
#include "topology.h"

/* One ina-host process of a job, as the run saw it. */
struct report_rank {
	int node;	    /* host's node index */
	const char *report; /* its --report file (may be missing) */
	int exited_ok;	    /* exit status 0 */
	char how[64];	    /* how it ended ("exit 1", "killed by signal 9") */
	int rounds_done;    /* rounds it printed */
	/* A job over several switches (expect.h): each round's sum hash as
	 * ina-testbed made it, which every round's sum_hash must equal; the
	 * host's own check (its switch's ranks only) and its exit status 1
	 * from it do not count then. NULL: the host's own check. */
	const uint64_t *want_hash;
};

struct report_link {
	struct netns_if_stats a, b; /* counters of the veth end in a's and b's namespace */
	int have;		    /* counters read */
};

struct report_run {
	const struct topology *t;
	const char *transport;	    /* "udp" or "dpdk" */
	double seconds;		    /* from the first host started to the last one done */
	const char *outcome;	    /* "ok", "failed", "timeout", "interrupted" */
	struct report_rank **ranks; /* [job][rank] */
	struct report_link *links;  /* [link] */
};

/* The report as JSON (new reference), or NULL when out of memory. */
json_t *report_build(const struct report_run *r);

/* The report as text. */
void report_print(const json_t *rep, FILE *f);

/* 1 if every job of the report verified every round. */
int report_verified(const json_t *rep);

#endif
