/* SPDX-License-Identifier: MIT */
/*
 * A link direction (link.h): serialisation, a FIFO byte-limited queue,
 * propagation latency and seeded loss (xorshift64*, one generator per
 * direction).
 */
#include "link.h"

static uint64_t
splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void
sim_link_init(struct sim_link *l, uint64_t bandwidth_bps, uint64_t latency_ns, double loss,
	      uint64_t queue_bytes, uint64_t seed)
{
	*l = (struct sim_link){
		.bandwidth_bps = bandwidth_bps,
		.latency_ns = latency_ns,
		.loss = loss,
		.queue_bytes = queue_bytes,
		.rng = splitmix(seed) | 1,
	};
}

uint64_t
sim_link_ser_ns(const struct sim_link *l, uint64_t bytes)
{
	unsigned __int128 bits = (unsigned __int128)bytes * 8u * 1000000000u;

	if (!l->bandwidth_bps)
		return 0;
	return (uint64_t)((bits + l->bandwidth_bps - 1) / l->bandwidth_bps);
}

uint64_t
sim_link_backlog(const struct sim_link *l, uint64_t now)
{
	unsigned __int128 b;

	if (!l->bandwidth_bps || l->busy_until <= now)
		return 0;
	b = (unsigned __int128)(l->busy_until - now) * l->bandwidth_bps / 8u / 1000000000u;
	return (uint64_t)b;
}

static double
rng_unit(struct sim_link *l)
{
	l->rng ^= l->rng >> 12;
	l->rng ^= l->rng << 25;
	l->rng ^= l->rng >> 27;
	return (double)((l->rng * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53;
}

uint64_t
sim_link_send(struct sim_link *l, uint64_t now, uint64_t bytes)
{
	uint64_t backlog = sim_link_backlog(l, now);
	uint64_t start, ser;

	if (l->queue_bytes && backlog + bytes > l->queue_bytes) {
		l->st.tail_drops++;
		return UINT64_MAX;
	}
	if (backlog + bytes > l->st.queue_max)
		l->st.queue_max = backlog + bytes;
	ser = sim_link_ser_ns(l, bytes);
	start = l->busy_until > now ? l->busy_until : now;
	l->busy_until = start + ser;
	l->st.pkts++;
	l->st.bytes += bytes;
	l->st.busy_ns += ser;
	if (l->loss > 0 && rng_unit(l) < l->loss) {
		l->st.lost++;
		return UINT64_MAX;
	}
	return l->busy_until + l->latency_ns;
}
