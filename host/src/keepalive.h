/* SPDX-License-Identifier: MIT */
/*
 * The keepalive thread of an open context: a rank that pauses (evaluation,
 * a checkpoint, an epoch that ended early) makes no ina call at all, so a
 * thread of its own calls 'beat' every period until stopped; ina_pump.c's beat
 * sends the KEEPALIVEs the engines have due (engine_keepalive), under the
 * context's mutex. The thread knows nothing of engines or ports.
 */
#ifndef INA_KEEPALIVE_H
#define INA_KEEPALIVE_H

#include <stdint.h>

struct keepalive;

/* Starts the thread: beat(arg) every 'period_ns' (> 0), the first one
 * period from now. NULL with errno set when it cannot start. */
struct keepalive *keepalive_start(uint64_t period_ns, void (*beat)(void *arg), void *arg);

/* Stops the thread at once (a beat under way ends first), joins and frees
 * it: no beat runs after it returns. Accepts NULL. */
void keepalive_stop(struct keepalive *k);

#endif
