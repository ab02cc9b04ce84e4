/* SPDX-License-Identifier: MIT */
/*
 * The switch's tenants (ina-switch --tenants FILE): per tenant a name, an
 * index (the top byte of its job ids, auth.h), a 32-byte key and quotas.
 * tenants_load() reads the YAML file (libyaml's event parser, so that every
 * error names its line and field); the pipeline looks a tenant up by index in
 * O(1) (pipeline_config.tenants). The file format is in README.md, "Tenants".
 */
#ifndef INA_TENANTS_H
#define INA_TENANTS_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ina/auth.h"

#define TENANT_NAME_MAX 31

struct tenant {
	char name[TENANT_NAME_MAX + 1];
	uint8_t index;	    /* 1..255; 0: no tenant here */
	uint8_t max_weight; /* largest fair-share weight a JOIN asks */
	uint16_t max_jobs;  /* jobs at once */
	uint32_t max_slots; /* slots held at once, all its jobs */
	uint8_t key[INA_TENANT_KEY_SIZE];
};

struct tenants {
	uint16_t count;
	struct tenant by_index[INA_TENANT_MAX + 1]; /* [i].index == i when present */
};

/* The tenant of index 'i', or NULL. */
static inline const struct tenant *
tenants_get(const struct tenants *t, uint8_t i)
{
	return t && i && t->by_index[i].index == i ? &t->by_index[i] : NULL;
}

/* The tenant named 'name', or whose index 'name' is in decimal; NULL when
 * there is none. */
const struct tenant *tenants_find(const struct tenants *t, const char *name);

/*
 * A job's name for people, written to 'buf': in tenant mode (t has the
 * tenant of the wire id's top byte) "5 of tenant alice", the tenant's own id;
 * else the wire id, "5". Returns 'buf'.
 */
static inline const char *
tenants_job_name(const struct tenants *t, uint32_t job_id, char *buf, size_t size)
{
	const struct tenant *tn = tenants_get(t, ina_tenant_of(job_id));

	if (tn)
		snprintf(buf, size, "%" PRIu32 " of tenant %s", job_id & INA_TENANT_JOB_MAX,
			 tn->name);
	else
		snprintf(buf, size, "%" PRIu32, job_id);
	return buf;
}

/*
 * Parses a tenants file's text ('name' is what messages call it). NULL with
 * "<name>:<line>: <field>: <what>" in 'err' when anything is wrong (never a
 * key's text); else the tenants, freed with tenants_free().
 */
struct tenants *tenants_parse(const char *yaml, size_t len, const char *name, char *err,
			      size_t err_size);
/* The same from the file at 'path'. */
struct tenants *tenants_load(const char *path, char *err, size_t err_size);
void tenants_free(struct tenants *t); /* Accepts NULL; wipes the keys. */

/*
 * One entry of a tenants file, a line of YAML, into 'buf': tenant 'name' of
 * index 'index' with key 'key' (hex) and the widest quotas, 64 jobs, every
 * slot and weights up to 255: what ina-sim and ina-testbed give the tenants
 * of a topology, whose jobs say the rest. Returns what snprintf returns.
 */
int tenants_entry_wide(char *buf, size_t size, const char *name, uint8_t index,
		       const uint8_t key[INA_TENANT_KEY_SIZE]);

#endif
