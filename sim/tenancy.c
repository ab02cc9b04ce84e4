/* SPDX-License-Identifier: MIT */
/*
 * Tenant mode in a simulation (net_int.h): the tenants of a topology's jobs
 * as the switches' table (read by the real loader, tenants_parse, from the
 * text an operator would write) and each job's wire id and key. A tenant's
 * key is drawn from the run's seed and its index: a simulation has no
 * secret to keep, only the work of tags to do. Quotas: the widest
 * (tenants_entry_wide; the topology's jobs set the weights).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/util.h"
#include "net_int.h"
#include "tenants.h"

void
sim_seeded_bytes(uint64_t state, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t r = ina_splitmix64(&state);

		memcpy(out + i, &r, n - i < 8 ? n - i : 8);
	}
}

static void
tenant_key(uint64_t seed, uint8_t index, uint8_t key[INA_TENANT_KEY_SIZE])
{
	sim_seeded_bytes(seed * 0x9e3779b97f4a7c15ull + index, key, INA_TENANT_KEY_SIZE);
}

int
sim_tenants_build(struct sim_net *net, char *err, size_t errlen)
{
	const struct topology *t = net->t;
	const size_t cap = 64 + (INA_TENANT_MAX + 1) * 192;
	char *yaml = malloc(cap), perr[300];
	uint8_t seen[INA_TENANT_MAX + 1] = { 0 };
	size_t len;
	int ret = 0;

	if (!yaml) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	len = (size_t)snprintf(yaml, cap, "tenants:\n");
	for (uint32_t k = 0; k < t->nb_jobs; k++) {
		const struct topo_job *tj = &t->jobs[k];
		uint8_t key[INA_TENANT_KEY_SIZE];

		if (!tj->tenant_index || seen[tj->tenant_index])
			continue;
		seen[tj->tenant_index] = 1;
		tenant_key(net->cfg.seed, tj->tenant_index, key);
		len += (size_t)tenants_entry_wide(yaml + len, cap - len, tj->tenant,
						  tj->tenant_index, key);
	}
	if (len > sizeof("tenants:\n") - 1) {
		net->tenants = tenants_parse(yaml, len, "the topology's tenants", perr,
					     sizeof(perr));
		if (!net->tenants) {
			snprintf(err, errlen, "%s", perr);
			ret = -EINVAL;
		}
	}
	memset(yaml, 0, cap);
	free(yaml);
	return ret;
}

uint32_t
sim_job_wire_id(const struct topo_job *tj)
{
	return (uint32_t)tj->tenant_index << INA_TENANT_SHIFT | tj->job_id;
}

int
sim_job_key(const struct sim_net *net, const struct topo_job *tj, struct ina_job_key *key)
{
	const struct tenant *tn = tenants_get(net->tenants, tj->tenant_index);

	if (!tn)
		return 0;
	ina_auth_job_key(tn->key, sim_job_wire_id(tj), key);
	return 1;
}
