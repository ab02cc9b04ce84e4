/* SPDX-License-Identifier: MIT */
/*
 * In-memory topologies for the simulator's tests (sim_topo.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/wire.h"
#include "sim_topo.h"

static char *
name_of(const char *prefix, unsigned i)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%s%u", prefix, i);
	return strdup(buf);
}

static void
add_link(struct topology *t, int a, int b, struct sim_topo_link l)
{
	t->links[t->nb_links++] = (struct topo_link){ .a = a,
						      .b = b,
						      .bandwidth_bps = l.bandwidth_bps,
						      .latency_ns = l.latency_ns,
						      .loss = l.loss,
						      .mtu = 1500 };
}

struct topology *
sim_topo_racks(uint16_t racks, uint16_t per_rack, struct sim_topo_link host,
	       struct sim_topo_link up)
{
	struct topology *t = calloc(1, sizeof(*t));
	uint32_t nb_sw = racks > 1 ? racks + 1u : 1u;
	uint32_t nb_hosts = (uint32_t)racks * per_rack;
	struct topo_job *j;
	uint32_t n = 0;

	t->name = strdup("test");
	t->file = strdup("(memory)");
	t->nodes = calloc(nb_sw + nb_hosts, sizeof(*t->nodes));
	t->links = calloc(nb_sw + nb_hosts, sizeof(*t->links));
	t->jobs = calloc(1, sizeof(*t->jobs));
	t->nb_jobs = 1;
	/* Node 0: the spine, or the one rack. */
	for (uint32_t s = 0; s < nb_sw; s++) {
		t->nodes[n] = (struct topo_node){ .name = name_of("s", s),
						  .kind = TOPO_SWITCH,
						  .role = s == 0 && racks > 1 ? TOPO_ROLE_SPINE
									      : TOPO_ROLE_RACK,
						  .parent = s == 0 ? -1 : 0,
						  .replica_of = -1,
						  .attach = -1,
						  .cores = 1 };
		if (s > 0)
			add_link(t, (int)s, 0, up);
		n++;
	}
	j = &t->jobs[0];
	j->hosts = calloc(nb_hosts, sizeof(int));
	for (uint32_t h = 0; h < nb_hosts; h++) {
		int sw = racks > 1 ? (int)(1 + h / per_rack) : 0;

		t->nodes[n] = (struct topo_node){ .name = name_of("h", h),
						  .kind = TOPO_HOST,
						  .parent = -1,
						  .replica_of = -1,
						  .attach = sw };
		add_link(t, (int)n, sw, host);
		j->hosts[h] = (int)n;
		n++;
	}
	t->nb_nodes = n;
	j->name = strdup("j");
	j->job_id = 1;
	j->nb_hosts = (uint16_t)nb_hosts;
	j->root = 0;
	j->tensor_len = 16384;
	j->rounds = 2;
	j->block_size = 256;
	j->lanes = 8;
	j->encoding = INA_ENC_F32;
	j->data = TOPO_DATA_SYNTHETIC;
	j->density = 1;
	j->seed = 1;
	return t;
}

struct topo_job *
sim_topo_job(struct topology *t)
{
	return &t->jobs[0];
}

void
sim_topo_free(struct topology *t)
{
	topology_free(t); /* the same ownership as a parsed file's */
}
