/* SPDX-License-Identifier: MIT */
/*
 * The ring allreduce model (ring.h): per step, the bytes each link direction
 * carries, then each flow's time on its busiest direction plus its latency.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

#define RING_MAX_HOPS 64
#define IP_UDP_BYTES 28

static uint64_t
ser_ns(uint64_t bytes, uint64_t bps)
{
	if (!bps)
		return 0;
	return (uint64_t)(((unsigned __int128)bytes * 8u * 1000000000u + bps - 1) / bps);
}

int
ring_model(const struct topology *t, const struct sim_route *r, const struct topo_job *job,
	   uint32_t elem_size, uint32_t frame_overhead, struct ring_result *res, char *err,
	   size_t errlen)
{
	uint32_t n = job->nb_hosts;
	uint32_t *paths = NULL, *plen = NULL, *payload = NULL;
	uint64_t *lat = NULL, *load = NULL, max_step = 0;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	res->bottleneck_link = -1;
	res->tensor_bytes = (uint64_t)job->tensor_len * elem_size;
	if (n < 2)
		return 0;
	res->steps = 2 * (n - 1);
	paths = malloc((size_t)n * RING_MAX_HOPS * sizeof(*paths));
	plen = malloc(n * sizeof(*plen));
	payload = malloc(n * sizeof(*payload));
	lat = calloc(n, sizeof(*lat));
	load = calloc(2 * (size_t)t->nb_links, sizeof(*load));
	if (!paths || !plen || !payload || !lat || !load) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	/* Flow i: host rank i to rank i + 1. */
	for (uint32_t i = 0; i < n; i++) {
		int src = job->hosts[i], dst = job->hosts[(i + 1) % n];
		uint32_t *p = paths + (size_t)i * RING_MAX_HOPS;
		uint32_t mtu = UINT32_MAX;
		int len = sim_route_path(r, src, dst, p, RING_MAX_HOPS);

		if (len < 0) {
			snprintf(err, errlen, "job %s: no path from %s to %s", job->name,
				 t->nodes[src].name, t->nodes[dst].name);
			ret = -EINVAL;
			goto out;
		}
		plen[i] = (uint32_t)len;
		for (int h = 0; h < len; h++) {
			const struct topo_link *l = &t->links[p[h] / 2];

			lat[i] += l->latency_ns;
			if (l->mtu && l->mtu < mtu)
				mtu = l->mtu;
		}
		if (mtu == UINT32_MAX)
			mtu = 1500;
		if (mtu <= IP_UDP_BYTES + elem_size) {
			snprintf(err, errlen, "job %s: MTU %u on the path from %s carries nothing",
				 job->name, mtu, t->nodes[src].name);
			ret = -EINVAL;
			goto out;
		}
		payload[i] = (mtu - IP_UDP_BYTES) / elem_size * elem_size;
	}
	for (uint32_t s = 0; s < res->steps; s++) {
		uint64_t step = 0;
		int b_link = -1, b_dir = 0;

		for (uint32_t i = 0; i < n; i++) {
			/* Rank i sends chunk (i - s) mod n; chunks differ by at most
			 * one element. */
			uint32_t c = (uint32_t)((i + (uint64_t)n * 2 - s % n) % n);
			uint64_t elems = job->tensor_len / n + (c < job->tensor_len % n);
			uint64_t bytes = elems * elem_size;
			uint64_t wire = bytes +
					(bytes + payload[i] - 1) / payload[i] * frame_overhead;
			const uint32_t *p = paths + (size_t)i * RING_MAX_HOPS;

			for (uint32_t h = 0; h < plen[i]; h++)
				load[p[h]] += wire;
		}
		for (uint32_t i = 0; i < n; i++) {
			const uint32_t *p = paths + (size_t)i * RING_MAX_HOPS;
			uint64_t worst = 0, f;
			uint32_t wd = p[0];

			for (uint32_t h = 0; h < plen[i]; h++) {
				uint64_t x = ser_ns(load[p[h]], t->links[p[h] / 2].bandwidth_bps);

				if (x > worst || h == 0) {
					worst = x;
					wd = p[h];
				}
			}
			f = worst + lat[i];
			if (f > step) {
				step = f;
				b_link = (int)(wd / 2);
				b_dir = (int)(wd & 1);
			}
		}
		for (uint32_t i = 0; i < n; i++) {
			const uint32_t *p = paths + (size_t)i * RING_MAX_HOPS;

			for (uint32_t h = 0; h < plen[i]; h++)
				load[p[h]] = 0;
		}
		if (step > max_step) {
			max_step = step;
			res->bottleneck_link = b_link;
			res->bottleneck_dir = b_dir;
		}
		res->time_ns += step;
	}
	/* What each host sends: its 2(N-1) chunks with their framing. */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t total = 0;

		for (uint32_t s = 0; s < res->steps; s++) {
			uint32_t c = (uint32_t)((i + (uint64_t)n * 2 - s % n) % n);
			uint64_t bytes = (job->tensor_len / n + (c < job->tensor_len % n)) *
					 elem_size;

			total += bytes + (bytes + payload[i] - 1) / payload[i] * frame_overhead;
		}
		if (total > res->wire_bytes_per_host)
			res->wire_bytes_per_host = total;
	}
out:
	free(paths);
	free(plen);
	free(payload);
	free(lat);
	free(load);
	return ret;
}
