/* SPDX-License-Identifier: MIT */
/* A topology's jobs: hosts, root, block, lanes, weight, encoding, data,
 * tenant, and the checks along each job's tree (MTU, fan-in, slots)
 * (topo_ctx.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ina/auth.h"
#include "ina/encoding.h"
#include "ina/npy.h"
#include "ina/wire.h"
#include "topo_ctx.h"
#include "topo_units.h"

/* -------------------------------------------------------------------- jobs */

static char *
data_path(const struct ctx *c, const char *file)
{
	char *p;
	size_t n;

	if (file[0] == '/' || !c->dir)
		return strdup(file);
	n = strlen(c->dir) + strlen(file) + 2;
	p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", c->dir, file);
	return p;
}

static int
job_data(struct ctx *c, uint32_t i, struct raw_job *rj, struct topo_job *j)
{
	char field[128], entry[64];
	uint64_t v;

	topo_pathf(entry, sizeof(entry), "jobs[%u]", i);
	j->data = TOPO_DATA_SYNTHETIC;
	j->density = 1.0;
	j->seed = 1;
	if (rj->data && rj->data->synthetic && rj->data->file) {
		topo_pathf(field, sizeof(field), "%s.data", entry);
		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "either synthetic or file, not both");
	}
	if (rj->data && rj->data->file) {
		struct ina_npy *npy;
		struct stat st;
		char why[256];

		topo_pathf(field, sizeof(field), "%s.data.file", entry);
		j->data = TOPO_DATA_FILE;
		j->path = data_path(c, rj->data->file);
		if (!j->path)
			return topo_fail(c, 1, "", "out of memory");
		if (stat(j->path, &st) < 0)
			return topo_fail(c, topo_line_of(c, field, entry), field, "%s: %s", j->path,
					 strerror(errno));
		if (!S_ISREG(st.st_mode))
			return topo_fail(c, topo_line_of(c, field, entry), field,
					 "%s: not a regular file", j->path);
		npy = ina_npy_open(j->path, why, sizeof(why));
		if (!npy)
			return topo_fail(c, topo_line_of(c, field, entry), field, "%s", why);
		if (ina_npy_ndim(npy) != 3 || ina_npy_dim(npy, 0) == 0 ||
		    ina_npy_dim(npy, 1) == 0 || ina_npy_dim(npy, 2) == 0 ||
		    ina_npy_dim(npy, 2) > UINT32_MAX) {
			ina_npy_close(npy);
			return topo_fail(c, topo_line_of(c, field, entry), field,
					 "%s: want shape (iterations, workers, parameters)",
					 j->path);
		}
		v = ina_npy_dim(npy, 2);
		ina_npy_close(npy);
		topo_pathf(field, sizeof(field), "%s.tensor", entry);
		if (j->tensor_len && j->tensor_len != v)
			return topo_fail(
				c, topo_line_of(c, field, entry), field,
				"%u, but %s has %llu parameters (leave tensor out to take them all)",
				j->tensor_len, rj->data->file, (unsigned long long)v);
		j->tensor_len = (uint32_t)v;
		return 0;
	}
	if (rj->data && rj->data->synthetic) {
		struct raw_synthetic *s = rj->data->synthetic;

		topo_pathf(field, sizeof(field), "%s.data.synthetic.density", entry);
		if (s->density &&
		    topo_get_double(c, s->density, 0, 1, 0, field, entry, &j->density) < 0)
			return -1;
		topo_pathf(field, sizeof(field), "%s.data.synthetic.seed", entry);
		if (s->seed && topo_get_u64(c, s->seed, 0, UINT64_MAX, field, entry, &j->seed) < 0)
			return -1;
	}
	if (!j->tensor_len) {
		topo_pathf(field, sizeof(field), "%s.tensor", entry);
		return topo_fail(c, topo_line_of(c, entry, NULL), field,
				 "missing (synthetic data needs a tensor length)");
	}
	return 0;
}

/*
 * The job's tenant (tenant mode, ina-sim only): a name of at most
 * TOPO_MAX_TENANT characters; every job has one or none does (a switch runs
 * in tenant mode or in token mode); tenants are numbered 1.. by their first
 * job, at most INA_TENANT_MAX of them; a tenant's job ids fit below the
 * tenant's byte of the wire id. '*nb_tenants' counts the tenants so far.
 */
static int
job_tenant(struct ctx *c, uint32_t i, const struct raw_job *rj, struct topo_job *j,
	   unsigned *nb_tenants)
{
	const struct topology *t = c->t;
	const struct topo_job *first = &t->jobs[0];
	char field[128], entry[64];

	topo_pathf(entry, sizeof(entry), "jobs[%u]", i);
	topo_pathf(field, sizeof(field), "%s.tenant", entry);
	if (rj->tenant && (!topo_name_ok(rj->tenant) || strlen(rj->tenant) > TOPO_MAX_TENANT))
		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "'%s' is not a tenant name (1 to %d letters, digits, '-', '_', "
				 "'.'; not starting with '-' or '.')",
				 rj->tenant, TOPO_MAX_TENANT);
	if (i > 0 && !rj->tenant && first->tenant)
		return topo_fail(c, topo_line_of(c, entry, NULL), field,
				 "missing: jobs[0] ('%s', line %d) has a tenant, and either every "
				 "job has one (tenant mode) or none does (token mode)",
				 first->name, first->line);
	if (i > 0 && rj->tenant && !first->tenant)
		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "jobs[0] ('%s', line %d) has no tenant: either every job has one "
				 "(tenant mode) or none does (token mode)",
				 first->name, first->line);
	if (!rj->tenant)
		return 0;
	j->tenant = strdup(rj->tenant);
	if (!j->tenant)
		return topo_fail(c, 1, "", "out of memory");
	for (uint32_t k = 0; k < i; k++) {
		if (strcmp(t->jobs[k].tenant, j->tenant) == 0) {
			j->tenant_index = t->jobs[k].tenant_index;
			break;
		}
	}
	if (!j->tenant_index) {
		if (*nb_tenants >= INA_TENANT_MAX)
			return topo_fail(c, topo_line_of(c, field, entry), field,
					 "'%s' would be tenant %u: at most %u tenants", j->tenant,
					 *nb_tenants + 1, INA_TENANT_MAX);
		j->tenant_index = (uint8_t)++ * nb_tenants;
	}
	if (j->job_id > INA_TENANT_JOB_MAX) {
		topo_pathf(field, sizeof(field), "%s.id", entry);
		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "job id %u%s is above %u: a tenant's job ids are 0..%u (the wire "
				 "id's top byte is the tenant's index)",
				 j->job_id, rj->id ? "" : " (1 + its index)", INA_TENANT_JOB_MAX,
				 INA_TENANT_JOB_MAX);
	}
	return 0;
}

/* Elements per block times their size, in an IPv4/UDP frame. */
static uint32_t
frame_size(const struct topo_job *j)
{
	uint32_t elem = (uint32_t)ina_encoding(j->encoding)->elem_size;

	return FRAME_OVERHEAD + INA_HDR_SIZE + (uint32_t)j->block_size * elem;
}

/* The job's tree: every switch between its hosts and its root carries its
 * frames, aggregates at most INA_MAX_WORLD children and holds its lanes. */
static int
check_job_tree(struct ctx *c, uint32_t i, struct topo_job *j, uint32_t *fan_in, uint8_t *seen,
	       uint64_t *slots_used)
{
	struct topology *t = c->t;
	char field[128], entry[64];

	topo_pathf(entry, sizeof(entry), "jobs[%u]", i);
	topo_pathf(field, sizeof(field), "%s.hosts", entry);
	memset(fan_in, 0, t->nb_nodes * sizeof(*fan_in));
	memset(seen, 0, t->nb_nodes);
	for (uint16_t k = 0; k < j->nb_hosts; k++) {
		int n = j->hosts[k];

		seen[n] = 1;
		while (n != j->root) {
			int up = t->nodes[n].kind == TOPO_HOST ? t->nodes[n].attach
							       : t->nodes[n].parent;
			const struct topo_link *l = topo_link_between(c, n, up);

			if (l && l->mtu < frame_size(j)) {
				topo_pathf(field, sizeof(field), "%s.block", entry);
				return topo_fail(
					c, topo_line_of(c, field, entry), field,
					"blocks of %u %s elements need %u-byte frames; links[%u] "
					"(%s - %s, line %d) has mtu %u",
					j->block_size, ina_wire_encoding_name(j->encoding),
					frame_size(j), (unsigned)(l - t->links),
					t->nodes[l->a].name, t->nodes[l->b].name, l->line, l->mtu);
			}
			fan_in[up]++;
			if (seen[up])
				break; /* the rest of the way is counted */
			seen[up] = 1;
			n = up;
		}
	}
	for (uint32_t s = 0; s < t->nb_nodes; s++) {
		if (!seen[s] || t->nodes[s].kind != TOPO_SWITCH)
			continue;
		if (fan_in[s] > INA_MAX_WORLD)
			return topo_fail(
				c, topo_line_of(c, field, entry), field,
				"switch '%s' would aggregate %u children of this job: at most %d",
				t->nodes[s].name, fan_in[s], INA_MAX_WORLD);
		slots_used[s] += (j->lanes + t->nodes[s].cores - 1u) / t->nodes[s].cores;
		/* A switch that says how its jobs share the slots may be asked
		 * for more than it holds: the share decides. */
		if (slots_used[s] > t->nodes[s].slots && t->nodes[s].share == TOPO_SHARE_UNSET) {
			char sw[32];

			topo_pathf(sw, sizeof(sw), "switches[%u].slots", s);
			return topo_fail(
				c,
				topo_line_of(c, sw, NULL) > 1 ? topo_line_of(c, sw, NULL)
							      : t->nodes[s].line,
				sw,
				"switch '%s' has %u slots; the jobs through it up to %s need %llu "
				"(their lanes, over its cores)",
				t->nodes[s].name, t->nodes[s].slots, j->name,
				(unsigned long long)slots_used[s]);
		}
	}
	return 0;
}

/*
 * The job's root, host by host: the first host's switch and the switches
 * above it are numbered by height (chain_pos); each other host walks up
 * from its switch to that chain, marking what it passes (bit 2 of 'mark')
 * so no switch is walked twice. The root is the highest chain switch met.
 */
static int
job_root_add(struct ctx *c, uint32_t i, const struct topo_job *j, uint32_t k, int *chain_pos,
	     uint8_t *mark, int *root_pos)
{
	const struct topology *t = c->t;
	int h = j->hosts[k], n = t->nodes[h].attach, pos = 0;
	char field[128], entry[64];

	if (k == 0) {
		for (; n >= 0; n = t->nodes[n].parent)
			chain_pos[n] = pos++;
		return 0;
	}
	while (n >= 0 && chain_pos[n] < 0 && !(mark[n] & 2)) {
		mark[n] |= 2;
		n = t->nodes[n].parent;
	}
	if (n < 0) {
		topo_pathf(entry, sizeof(entry), "jobs[%u]", i);
		topo_pathf(field, sizeof(field), "%s.hosts", entry);
		return topo_fail(c, topo_line_of(c, field, entry), field,
				 "'%s' and '%s' are under different roots: a job's hosts share one "
				 "switch tree",
				 t->nodes[j->hosts[0]].name, t->nodes[h].name);
	}
	if (chain_pos[n] > *root_pos)
		*root_pos = chain_pos[n];
	return 0;
}

int
topo_build_jobs(struct ctx *c)
{
	struct raw_topology *r = c->raw;
	struct topology *t = c->t;
	uint32_t *fan_in = NULL;
	uint8_t *in_job = NULL;
	uint64_t *slots_used = NULL;
	int *chain_pos = NULL, root_pos = 0;
	char field[128], entry[64];
	unsigned nb_tenants = 0;
	int ret = -1;

	if (!r->jobs_count)
		return 0;
	if (r->jobs_count > TOPO_MAX_JOBS)
		return topo_fail(c, topo_line_of(c, "jobs", NULL), "jobs", "%u jobs: at most %d",
				 r->jobs_count, TOPO_MAX_JOBS);
	t->jobs = calloc(r->jobs_count, sizeof(*t->jobs));
	fan_in = calloc(t->nb_nodes, sizeof(*fan_in));
	in_job = calloc(t->nb_nodes, 1);
	slots_used = calloc(t->nb_nodes, sizeof(*slots_used));
	chain_pos = malloc(t->nb_nodes * sizeof(*chain_pos));
	if (!t->jobs || !fan_in || !in_job || !slots_used || !chain_pos) {
		topo_fail(c, 1, "", "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < t->nb_nodes; i++)
		chain_pos[i] = -1;
	for (uint32_t i = 0; i < r->jobs_count; i++) {
		struct raw_job *rj = &r->jobs[i];
		struct topo_job *j = &t->jobs[i];
		uint64_t v;

		t->nb_jobs = i + 1;
		topo_pathf(entry, sizeof(entry), "jobs[%u]", i);
		j->line = topo_line_of(c, entry, NULL);
		j->name = strdup(rj->name);
		if (!j->name) {
			topo_fail(c, 1, "", "out of memory");
			goto out;
		}
		topo_pathf(field, sizeof(field), "%s.name", entry);
		if (!topo_name_ok(rj->name)) {
			topo_fail(c, topo_line_of(c, field, entry), field, "'%s' is not a name",
				  rj->name);
			goto out;
		}
		j->job_id = i + 1;
		topo_pathf(field, sizeof(field), "%s.id", entry);
		if (rj->id) {
			if (topo_get_u64(c, rj->id, 0, UINT32_MAX, field, entry, &v) < 0)
				goto out;
			j->job_id = (uint32_t)v;
		}
		if (job_tenant(c, i, rj, j, &nb_tenants) < 0)
			goto out;
		topo_pathf(field, sizeof(field), "%s.id", entry);
		for (uint32_t k = 0; k < i; k++) {
			/* Ids are per tenant: two tenants may both run job 5. */
			if (t->jobs[k].job_id == j->job_id &&
			    t->jobs[k].tenant_index == j->tenant_index) {
				topo_fail(c, topo_line_of(c, field, entry), field,
					  "job id %u%s%s is already jobs[%u]'s ('%s', line %d)",
					  j->job_id, j->tenant ? " of tenant " : "",
					  j->tenant ? j->tenant : "", k, t->jobs[k].name,
					  t->jobs[k].line);
				goto out;
			}
			if (strcmp(t->jobs[k].name, j->name) == 0) {
				topo_pathf(field, sizeof(field), "%s.name", entry);
				topo_fail(c, topo_line_of(c, field, entry), field,
					  "'%s' is already the name of jobs[%u] (line %d)", j->name,
					  k, t->jobs[k].line);
				goto out;
			}
		}
		topo_pathf(field, sizeof(field), "%s.hosts", entry);
		if (rj->hosts_count > UINT16_MAX) {
			topo_fail(c, topo_line_of(c, field, entry), field, "%u hosts: at most %u",
				  rj->hosts_count, UINT16_MAX);
			goto out;
		}
		j->hosts = calloc(rj->hosts_count, sizeof(*j->hosts));
		if (!j->hosts) {
			topo_fail(c, 1, "", "out of memory");
			goto out;
		}
		memset(in_job, 0, t->nb_nodes);
		root_pos = 0;
		for (uint32_t k = 0; k < rj->hosts_count; k++) {
			int h = topo_find_node(c, rj->hosts[k]);

			topo_pathf(field, sizeof(field), "%s.hosts[%u]", entry, k);
			if (h < 0) {
				topo_fail(c, topo_line_of(c, field, entry), field,
					  "no host called '%s'", rj->hosts[k]);
				goto out;
			}
			if (t->nodes[h].kind != TOPO_HOST) {
				topo_fail(c, topo_line_of(c, field, entry), field,
					  "'%s' is a switch: a job runs on hosts", rj->hosts[k]);
				goto out;
			}
			if (in_job[h]) {
				topo_fail(c, topo_line_of(c, field, entry), field,
					  "host '%s' is in this job twice", rj->hosts[k]);
				goto out;
			}
			in_job[h] = 1;
			j->hosts[k] = h;
			j->nb_hosts = (uint16_t)(k + 1);
			if (job_root_add(c, i, j, k, chain_pos, in_job, &root_pos) < 0)
				goto out;
		}
		j->root = t->nodes[j->hosts[0]].attach;
		for (int n = j->root; n >= 0; n = t->nodes[n].parent) {
			if (chain_pos[n] == root_pos)
				j->root = n;
			chain_pos[n] = -1;
		}
		topo_pathf(field, sizeof(field), "%s.tensor", entry);
		if (rj->tensor) {
			if (topo_get_u64(c, rj->tensor, 1, UINT32_MAX, field, entry, &v) < 0)
				goto out;
			j->tensor_len = (uint32_t)v;
		}
		j->rounds = 1;
		topo_pathf(field, sizeof(field), "%s.rounds", entry);
		if (rj->rounds) {
			if (topo_get_u64(c, rj->rounds, 1, UINT32_MAX, field, entry, &v) < 0)
				goto out;
			j->rounds = (uint32_t)v;
		}
		j->block_size = DEFAULT_BLOCK;
		topo_pathf(field, sizeof(field), "%s.block", entry);
		if (rj->block) {
			if (topo_get_u64(c, rj->block, 1, 16384, field, entry, &v) < 0)
				goto out;
			j->block_size = (uint16_t)v;
		}
		j->lanes = DEFAULT_LANES;
		topo_pathf(field, sizeof(field), "%s.lanes", entry);
		if (rj->lanes) {
			if (topo_get_u64(c, rj->lanes, 1, 4096, field, entry, &v) < 0)
				goto out;
			j->lanes = (uint16_t)v;
		}
		topo_pathf(field, sizeof(field), "%s.weight", entry);
		if (rj->weight) {
			if (topo_get_u64(c, rj->weight, 1, 255, field, entry, &v) < 0)
				goto out;
			j->weight = (uint8_t)v;
		}
		j->encoding = rj->encoding ? rj->encoding : INA_ENC_F32;
		if (job_data(c, i, rj, j) < 0)
			goto out;
		if (check_job_tree(c, i, j, fan_in, in_job, slots_used) < 0)
			goto out;
	}
	ret = 0;
out:
	free(fan_in);
	free(in_job);
	free(slots_used);
	free(chain_pos);
	return ret;
}
