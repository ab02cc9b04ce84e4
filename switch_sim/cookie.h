/* SPDX-License-Identifier: MIT */
/*
 * JOIN cookies (docs/PROTOCOL.md 5.1): a keyed hash of the JOIN's source
 * address, its job id, a run and a time bucket, under a secret the switch
 * draws at start-up, as DTLS's HelloVerifyRequest and QUIC's Retry do. An
 * unproven JOIN gets only a header-only ERROR COOKIE carrying it and creates
 * nothing; a JOIN that echoes it proves its source receives at that address.
 * The run is 0 for a JOIN that creates a job or binds a rank not yet bound,
 * and the job's epoch for a JOIN that moves a bound rank to a new address:
 * such a cookie proves nothing in any other run of the job id.
 */
#ifndef INA_SWITCH_COOKIE_H
#define INA_SWITCH_COOKIE_H

#include <stdint.h>

#include "ina/pkt.h"

#define COOKIE_KEY_SIZE 16
/* A cookie stands for its time bucket of 2^34 ns (17.2 s) and the one
 * after: a worker's JOIN timeout (10 s by default) fits in it. */
#define COOKIE_BUCKET_SHIFT 34

/* The cookie for a JOIN of 'job_id' from 'peer' in run 'epoch' (0: none)
 * at time 'now_ns' (never 0). */
uint64_t cookie_make(const uint8_t key[COOKIE_KEY_SIZE], const struct ina_peer *peer,
		     uint32_t job_id, uint32_t epoch, uint64_t now_ns);

/* 1 when 'cookie' is the one cookie_make() gave 'peer' for 'job_id' and
 * 'epoch' in the time bucket of 'now_ns' or the one before; 0 otherwise (0
 * among them). */
int cookie_valid(const uint8_t key[COOKIE_KEY_SIZE], const struct ina_peer *peer, uint32_t job_id,
		 uint32_t epoch, uint64_t now_ns, uint64_t cookie);

#endif
