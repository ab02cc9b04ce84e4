/* SPDX-License-Identifier: MIT */
/*
 * A simulated node's transport address: the node index in a tagged peer
 * (struct ina_peer), as a port reports a source, and back. Pure; used by
 * the nodes and the network alike.
 */
#ifndef INA_SIM_PEER_H
#define INA_SIM_PEER_H

#include "ina/pkt.h"

/* The address of node 'index'. */
void sim_peer_set(int index, struct ina_peer *peer);
/* The node whose address 'peer' is, -1 if it is no node's. */
int sim_peer_node(const struct ina_peer *peer);

#endif
