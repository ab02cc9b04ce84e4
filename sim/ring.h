/* SPDX-License-Identifier: MIT */
/*
 * What a ring allreduce of a job's tensor would take on the same links, to
 * set against in-network aggregation. The N hosts form a ring in rank order;
 * the tensor (dense: a ring cannot skip zero blocks) is cut into N chunks;
 * 2(N-1) steps (reduce-scatter, then all-gather) each move one chunk from
 * every host to the next along the tree's path. A step is modelled as fluid
 * flows: it lasts as long as its slowest flow, and a flow takes the time its
 * most loaded link direction needs to carry everything crossing it in that
 * step, plus its path's latency. Packets carry the link's MTU less IPv4/UDP
 * headers, each with 'frame_overhead' bytes of headers on the wire. Loss and
 * queueing are not modelled (a lower bound for the ring). On one switch with
 * equal links and no overhead this is the closed form
 * 2(N-1)/N * S / bw + 2(N-1) * path latency.
 */
#ifndef INA_SIM_RING_H
#define INA_SIM_RING_H

#include <stddef.h>
#include <stdint.h>

#include "route.h"
#include "topology.h"

struct ring_result {
	uint64_t time_ns;	      /* one allreduce */
	uint32_t steps;		      /* 2(N-1) */
	uint64_t tensor_bytes;	      /* S */
	uint64_t wire_bytes_per_host; /* sent by each host (the largest) */
	int bottleneck_link;	      /* link index of the slowest flow's busiest
					 * direction in the slowest step, -1 none */
	int bottleneck_dir;	      /* 0: a -> b, 1: b -> a */
};

/*
 * Models job 'job' of 't' over the routes 'r' with 'frame_overhead' bytes per
 * packet. 'elem_size' is the bytes of one element on the wire (4 for f32 and
 * i32, 2 for bf16). 0, or -EINVAL/-ENOMEM with a message in 'err'.
 */
int ring_model(const struct topology *t, const struct sim_route *r, const struct topo_job *job,
	       uint32_t elem_size, uint32_t frame_overhead, struct ring_result *res, char *err,
	       size_t errlen);

#endif
