/* SPDX-License-Identifier: MIT */
/*
 * ina-switch --lcores K (run_lcores.h): K dpdk port objects, one per queue
 * of the same ethdevs, and the partitioned switch (lcores.h) over them; with
 * --metrics, the partitions' snapshots into the metrics server's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ina/cli.h"
#include "ina/eal_main.h"
#include "ina/log.h"
#include "ina/port_dpdk.h"
#include "ina/util.h"
#include "lcores.h"
#include "metrics_http.h"
#include "run_lcores.h"

_Static_assert(SWITCH_RUN_LCORES_MAX == SWITCH_LCORES_MAX, "partition limits differ");

static void
close_ports(struct ina_port **ports, uint16_t n)
{
	while (n-- > 0)
		ina_port_close(ports[n]);
}

/* The port counters besides the per-partition lines, added over the
 * partitions (nonzero ones; ARP and ping come in on queue 0 on memif). */
static void
print_ports(struct ina_port *const *ports, uint16_t k, FILE *f)
{
	uint64_t inject_drop = 0;

	for (uint16_t p = 0; p < k; p++)
		inject_drop += ports[p]->stats.inject_drop;
	fprintf(f, "  %-24s %s, %u partitions\n", "transport", ports[0]->ops->type, k);
	if (inject_drop)
		fprintf(f, "  %-24s %" PRIu64 "\n", "port_inject_drop", inject_drop);
	ina_port_print_counters(ports, k, f);
}

/* What the metrics callbacks need besides the partitions. */
struct monitor {
	struct metrics_http *mh;
	const char *transport;
	const char *role;
	uint16_t nb_parts;
	double start_time_s;
};

static int
snap_wanted(void *arg)
{
	const struct monitor *mon = arg;

	return metrics_http_wanted(mon->mh);
}

/* On partition 0's lcore, every partition's snapshot ready. */
static int
snap_ready(const struct switch_lcores *sl, void *arg)
{
	const struct monitor *mon = arg;
	struct metrics_snapshot *s = metrics_http_begin(mon->mh);
	const struct pipeline *p0 = switch_lcores_pipeline(sl, 0);
	struct switch_lcores_snap sn;
	uint16_t k = mon->nb_parts;

	if (!s)
		return -1;
	s->transport = mon->transport;
	s->role = mon->role;
	s->start_time_s = mon->start_time_s;
	s->nb_parts = k;
	s->has_neigh = 1;
	s->slots = pipeline_nb_slots(p0);
	s->max_jobs = pipeline_max_jobs(p0);
	memset(&s->pipe, 0, sizeof(s->pipe));
	for (uint16_t p = 0; p < k; p++) {
		switch_lcores_snapshot(sl, p, &sn);
		pipeline_stats_add(&s->pipe, sn.pipe);
		s->part[p].lcore = sn.lcore;
		s->part[p].slots_free = sn.free_slots;
		s->part[p].port = *sn.port;
		s->part[p].neigh = *sn.neigh;
		s->part[p].lc = *sn.lc;
	}
	s->nb_jobs = pipeline_jobs(p0, ina_now_ns(), s->jobs, s->jobs_cap);
	metrics_http_publish(mon->mh);
	return 0;
}

int
switch_run_lcores(const char *spec, uint16_t k, struct pipeline_config *pipe, int slot_elems_set,
		  volatile sig_atomic_t *stop, volatile sig_atomic_t *dump, struct metrics_http *mh,
		  double start_time_s)
{
	struct monitor mon = { .mh = mh, .start_time_s = start_time_s };
	struct ina_port *ports[SWITCH_LCORES_MAX];
	struct switch_lcores_config cfg;
	struct switch_lcores *sl;
	char pspec[600], err[256];
	unsigned used;
	int ret;

	if (k < 2 || k > SWITCH_LCORES_MAX)
		ina_die("--lcores %u: between 1 and %d", k, SWITCH_LCORES_MAX);
	for (uint16_t p = 0; p < k; p++) {
		int w = snprintf(pspec, sizeof(pspec), "%s%squeue=%u,queues=%u", spec,
				 strchr(spec, ':') ? "," : ":", p, k);

		if (w < 0 || (size_t)w >= sizeof(pspec)) {
			close_ports(ports, p);
			ina_die("--port: spec too long");
		}
		err[0] = '\0';
		ret = ina_port_open(pspec, &ports[p], err, sizeof(err));
		if (ret < 0) {
			close_ports(ports, p);
			ina_eal_main_port_failed(pspec, err);
		}
	}
	if (pipeline_config_fit_port(pipe, slot_elems_set, ports[0]->max_pkt, err, sizeof(err)) <
	    0) {
		close_ports(ports, k);
		ina_die("%s", err);
	}

	switch_lcores_config_init(&cfg);
	cfg.nb_parts = k;
	cfg.pipe = *pipe;
	for (uint16_t p = 0; p < k; p++)
		cfg.port[p] = ports[p];
	if (mh) {
		mon.transport = ports[0]->ops->type;
		mon.role = pipe->host_mode ? "host_aggregator" : "switch";
		mon.nb_parts = k;
		cfg.snap_wanted = snap_wanted;
		cfg.snap_ready = snap_ready;
		cfg.snap_arg = &mon;
	}
	used = switch_lcores_spread(&cfg);
	sl = switch_lcores_create(&cfg, err, sizeof(err));
	if (!sl) {
		close_ports(ports, k);
		ina_die("--lcores %u: %s", k, err);
	}
	INA_LOG(INFO,
		"serving %s on %u partitions (queue P of %u per ethdev) on %u lcores%s: "
		"%" PRIu32 " slots of %u elements per partition, up to %u jobs",
		spec, k, k, used, used < k ? " (partitions share lcores, in turn)" : "",
		pipe->nb_slots, pipe->slot_elems, pipe->max_jobs);
	for (uint16_t p = 0; p < k; p++)
		INA_LOG(DEBUG, "partition %u on lcore %u", p, cfg.lcore[p]);

	ret = switch_lcores_run(sl, stop, dump);
	if (ret < 0)
		INA_LOG(ERR, "cannot launch every lcore: %s", strerror(-ret));
	switch_lcores_print(sl, stdout);
	print_ports(ports, k, stdout);
	fflush(stdout);
	switch_lcores_destroy(sl);
	close_ports(ports, k);
	return ret < 0 ? INA_EXIT_TRANSPORT : 0;
}
