/* SPDX-License-Identifier: MIT */
/* A simulated node's transport address (peer.h). */
#include <stdint.h>
#include <string.h>

#include "peer.h"

#define PEER_TAG 'S'

void
sim_peer_set(int index, struct ina_peer *peer)
{
	uint32_t v = (uint32_t)index;

	memset(peer, 0, sizeof(*peer));
	peer->len = 5;
	peer->bytes[0] = PEER_TAG;
	memcpy(&peer->bytes[1], &v, sizeof(v));
}

int
sim_peer_node(const struct ina_peer *peer)
{
	uint32_t v;

	if (peer->len != 5 || peer->bytes[0] != PEER_TAG)
		return -1;
	memcpy(&v, &peer->bytes[1], sizeof(v));
	return v > INT32_MAX ? -1 : (int)v;
}
