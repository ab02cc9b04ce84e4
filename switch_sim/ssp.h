/* SPDX-License-Identifier: MIT */
/*
 * Bounded staleness (ssp:S) in the switch: the lanes of an ssp job keep S + 2
 * slots each (INA_SSP_SETS: round r uses set r mod (S + 2)), so a worker may
 * send rounds r..r+S of a lane before the result of r is back. A
 * block closes when every rank contributed, or early, with INA_F_PARTIAL and
 * the bitmap of its contributors, when a packet of a round S or more ahead
 * arrives in its lane (and every rank it lacks contributed to the round
 * before: no rank is left out of two rounds in a row). A rank's packet for a
 * closed block is answered from the kept result, never added; that rank puts
 * its own part back into its residual. docs/PROTOCOL.md 6.7 has the rules.
 *
 * An ssp job has one block per lane and round (block = lane, next END:
 * tensor_len <= lanes x block_size) and is f32 or bf16; the switch refuses
 * it with i32, on a rack, and with a replica.
 */
#ifndef INA_SSP_H
#define INA_SSP_H

#include <stdint.h>

#include "ina/pkt.h"
#include "ina/wire.h"
#include "pipeline_int.h"

/* Why the switch cannot admit an ssp job of 'lanes' lanes needing 'nb_slots'
 * slots (a sentence after "ssp:S "), or NULL when it can. */
const char *ssp_refusal(const struct pipeline *p, const struct ina_hdr *h, uint16_t lanes,
			uint32_t nb_slots);

/* DATA 'h' of ssp job 'j' (joined, not finished): the packet to send, or NULL. */
struct ina_pkt *ssp_data(struct pipeline *p, struct ina_pkt *in, struct job *j,
			 const struct ina_hdr *h, uint64_t now);

#endif
