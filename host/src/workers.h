/* SPDX-License-Identifier: MIT */
/*
 * Threads that share a host agent's per-byte work (cfg.threads): a
 * parallel for over the tasks of a payload_work list, run by the calling
 * thread and the workers together, each task exactly once. Between runs the
 * workers poll for the next one while work came recently (a round's bursts
 * follow each other within microseconds) and sleep otherwise, as the
 * calling thread does (ina_busy).
 */
#ifndef INA_WORKERS_H
#define INA_WORKERS_H

#include "payload_work.h"

struct workers;

/* 'n' threads beside the caller's (1..INA_THREADS_MAX - 1). NULL with
 * errno. */
struct workers *workers_create(unsigned n);
/* Stops and joins the threads. Accepts NULL. */
void workers_destroy(struct workers *ws);

/* Every task of 'w', phase by phase, on the caller and the workers, then
 * payload_work_release(). A NULL 'ws' runs it all on the caller. */
void workers_run(struct workers *ws, struct payload_work *w);

#endif
