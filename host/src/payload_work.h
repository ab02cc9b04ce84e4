/* SPDX-License-Identifier: MIT */
/*
 * A burst's per-byte work, deferred: the engine records the whole blocks it
 * would encode into packets and decode out of results, the tags of what it
 * sends (tenant mode), and holds the received packets those decodes read,
 * instead of doing it on the spot; whoever pumps the engine then runs the
 * tasks, on its own core or split over several (libina's workers,
 * workers.c), and releases the held packets before the burst goes out.
 * Two phases: every encode and decode, then every tag (over bytes the
 * encodes wrote). Within a phase each task touches only its own block's
 * payload and place in a tensor, or its own packet, so any order and any
 * split gives the same bytes. Pure: no thread, clock or log here.
 */
#ifndef INA_PAYLOAD_WORK_H
#define INA_PAYLOAD_WORK_H

#include <stddef.h>
#include <stdint.h>

#include "ina/auth.h"
#include "ina/encoding.h"
#include "ina/pkt.h"

struct payload_work;

/* A list of up to 'cap' tasks and 'cap' held packets (cap >= 1). NULL
 * with errno. */
struct payload_work *payload_work_create(unsigned cap);
void payload_work_destroy(struct payload_work *w); /* Accepts NULL; releases first. */

/*
 * Records one task. A full list is first run and released here, on this
 * core, so recording never fails. 'src', 'dst', 'payload' and 'copy' must
 * stay valid until the list is run (a received payload: hold its packet).
 */
/* enc->encode(payload, src, n, scale). */
void payload_work_encode(struct payload_work *w, const struct ina_encoding_ops *enc,
			 uint8_t *payload, const float *src, uint32_t n, int scale);
/* enc->decode(dst, payload, n, scale), then each value times 'avg' unless
 * it is 1, then the n values copied to 'copy' unless it is NULL. */
void payload_work_decode(struct payload_work *w, const struct ina_encoding_ops *enc, float *dst,
			 const uint8_t *payload, uint32_t n, int scale, float avg, float *copy);
/* ina_auth_sign(key, data, len), in the second phase. */
void payload_work_sign(struct payload_work *w, const struct ina_job_key *key, uint8_t *data,
		       uint32_t len);
/* Keeps 'p' until payload_work_release(), which frees it. */
void payload_work_hold(struct payload_work *w, struct ina_pkt *p);

#define PAYLOAD_WORK_PHASES 2 /* 0: encodes and decodes; 1: tags */
/* Tasks of 'phase'. */
unsigned payload_work_count(const struct payload_work *w, unsigned phase);
/* Runs task i (< payload_work_count()) of 'phase'; tasks may run on any
 * threads, each exactly once, every task of phase 0 before any of phase 1,
 * all before the release. */
void payload_work_run(const struct payload_work *w, unsigned phase, unsigned i);
/* Frees the held packets and empties the list: call once every task ran. */
void payload_work_release(struct payload_work *w);
/* Every task, phase by phase and in order, on this core, then the
 * release. */
void payload_work_flush(struct payload_work *w);

#endif
