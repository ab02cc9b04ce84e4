/* SPDX-License-Identifier: MIT */
/*
 * ina-switch --metrics ADDR:PORT: an HTTP server (libmicrohttpd, one thread
 * of its own) that answers GET /metrics with the switch's counters in the
 * Prometheus text format (metrics.h), 404 for any other path and 405 for a
 * method other than GET or HEAD.
 *
 * The HTTP thread never reads the pipeline. A scrape asks for a snapshot
 * and waits (up to a second; then 503) until the data path has filled one,
 * the way SIGUSR1 asks for a dump: the data path calls metrics_http_begin()
 * once per loop, which costs one atomic load when no scrape waits; when one
 * does, it returns the snapshot to fill and metrics_http_publish() hands it
 * over. No lock, no system call on the data path (metrics_http.c).
 */
#ifndef INA_SWITCH_METRICS_HTTP_H
#define INA_SWITCH_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

struct metrics_http;

/*
 * Listens on 'addr' ("IPV4:PORT", "[IPV6]:PORT" or "NAME:PORT", port
 * 1..65535) and starts serving, with room for 'max_jobs' jobs in a
 * snapshot. NULL with the reason in 'err' (an address that does not parse
 * or resolve, one that cannot be listened on: in use, not local).
 */
struct metrics_http *metrics_http_start(const char *addr, uint16_t max_jobs, char *err,
					size_t err_size);

/* Stops the server (a scrape waiting gets 503) and frees it. Accepts NULL. */
void metrics_http_stop(struct metrics_http *m);

/*
 * The data path, once per loop: NULL when no scrape waits, else the
 * snapshot to fill completely, then metrics_http_publish(). Only one thread
 * may call these.
 */
struct metrics_snapshot *metrics_http_begin(struct metrics_http *m);
/* Whether a scrape waits (what metrics_http_begin() checks first). */
int metrics_http_wanted(const struct metrics_http *m);
void metrics_http_publish(struct metrics_http *m);

/* The address it listens on, as given to metrics_http_start(). */
const char *metrics_http_addr(const struct metrics_http *m);

#endif
