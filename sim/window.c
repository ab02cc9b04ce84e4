/* SPDX-License-Identifier: MIT */
/*
 * The rounds window (net_int.h): each link's counters from the first
 * round's start to the last round's end, which the report gives. Opened and
 * closed by the jobs (job.c) and at the end of a run (net.c); reads the
 * links' counters only.
 */
#include "net_int.h"

void
sim_window_open(struct sim_net *net)
{
	if (net->window_open)
		return;
	net->window_open = 1;
	net->rep.window_ns = net->now; /* the start, until the window closes */
	for (uint32_t d = 0; d < 2 * net->t->nb_links; d++)
		net->win_start[d] = net->links[d].st;
}

void
sim_window_close(struct sim_net *net)
{
	uint64_t start = net->rep.window_ns;

	if (!net->window_open || net->window_closed)
		return;
	net->window_closed = 1;
	net->rep.window_ns = net->now - start;
	for (uint32_t k = 0; k < net->t->nb_links; k++) {
		struct sim_link_report *lr = &net->rep.links[k];

		for (uint32_t d = 0; d < 2; d++) {
			const struct sim_link_stats *a = &net->win_start[2 * k + d];
			const struct sim_link_stats *b = &net->links[2 * k + d].st;

			lr->dir[d] = (struct sim_link_stats){
				.pkts = b->pkts - a->pkts,
				.bytes = b->bytes - a->bytes,
				.lost = b->lost - a->lost,
				.tail_drops = b->tail_drops - a->tail_drops,
				.busy_ns = b->busy_ns - a->busy_ns,
				.queue_max = b->queue_max,
			};
			lr->utilisation[d] = net->rep.window_ns ? (double)lr->dir[d].busy_ns /
									  (double)net->rep.window_ns
								: 0;
		}
	}
}
