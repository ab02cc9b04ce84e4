/* SPDX-License-Identifier: MIT */
/*
 * The per-source budget of the replies that can be larger than what asked
 * for them (docs/PROTOCOL.md 5.1): ERRORs that answer a JOIN and shadow
 * replies (a RESULT that answers a retransmitted DATA). A fixed table made
 * at start-up, indexed by a keyed hash of the source address (so that no
 * one can aim at another source's entry; sources that share an entry share
 * its budget), each entry a token bucket of 'burst' replies refilled at
 * 'rate' a second, kept as one time (the generic cell rate algorithm).
 * Nothing is allocated after reply_limit_create().
 */
#ifndef INA_SWITCH_REPLY_LIMIT_H
#define INA_SWITCH_REPLY_LIMIT_H

#include <stdint.h>

#include "ina/pkt.h"

#define REPLY_LIMIT_KEY_SIZE 16

struct reply_limit;

/* A table of 'entries' (rounded up to a power of two) under the hash key
 * 'key'; 'rate' 0: no limit. NULL when out of memory. */
struct reply_limit *reply_limit_create(uint32_t entries, uint32_t rate, uint32_t burst,
				       const uint8_t key[REPLY_LIMIT_KEY_SIZE]);
void reply_limit_destroy(struct reply_limit *rl); /* Accepts NULL. */

/* 1 when 'peer' may have one more reply at 'now_ns' (and takes it), 0 when
 * its budget is spent. */
int reply_limit_take(struct reply_limit *rl, const struct ina_peer *peer, uint64_t now_ns);

#endif
