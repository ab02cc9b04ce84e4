/* SPDX-License-Identifier: MIT */
/*
 * Lane rules both ends share. A lane opens each round with its first block
 * (block index = lane) in encodings that need no agreement before the first
 * payload, and with a header-only opener (INA_BLOCK_OPEN) in i32, where the
 * workers must agree on the first block's exponent before any of them can
 * scale it. See docs/PROTOCOL.md, "The lane protocol".
 */
#ifndef INA_LANE_H
#define INA_LANE_H

#include <stdint.h>

#include "ina/wire.h"

/* 1 if lanes of this encoding open with a header-only INA_BLOCK_OPEN packet. */
static inline int
ina_lane_opens_empty(uint8_t encoding)
{
	return encoding == INA_ENC_I32;
}

/* The block index of a lane's first packet in a round. */
static inline uint32_t
ina_lane_first(uint8_t encoding, uint16_t lane)
{
	return ina_lane_opens_empty(encoding) ? INA_BLOCK_OPEN : lane;
}

/* 1 if a lane has any block in a tensor of 'nb_blocks' blocks. */
static inline int
ina_lane_active(uint16_t lane, uint32_t nb_blocks)
{
	return lane < nb_blocks;
}

#endif
