/* SPDX-License-Identifier: MIT */
/*
 * struct ina_config by name, for bindings (ina.h: ina_config_new,
 * ina_config_set, ina_config_free): one table of every field (its name as in
 * ina.h, its type, its offset, its range or its names), one parser per type.
 * A config made here owns the strings set into it and frees them with itself;
 * the configs made here are listed, so that a config of another origin (a
 * struct on the caller's stack) is refused, not written past its end.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_keys.h"
#include "ina.h"
#include "ina/auth.h"
#include "ina/wire.h"
#include "partition.h"

/* A config of ina_config_new(): the struct first (what the caller holds),
 * then the strings it owns, one per string field. */
struct owned_config {
	struct ina_config cfg;
	char *str[CONFIG_MAX_STRINGS];
	struct owned_config *next; /* the list of live configs */
};

static pthread_mutex_t configs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct owned_config *configs;

/* Whether 'cfg' is a live config of ina_config_new(). */
static int
config_owned(const struct ina_config *cfg)
{
	int found = 0;

	pthread_mutex_lock(&configs_lock);
	for (const struct owned_config *oc = configs; oc && !found; oc = oc->next)
		found = &oc->cfg == cfg;
	pthread_mutex_unlock(&configs_lock);
	return found;
}

static const char *const encodings[] = {
	[INA_F32] = "f32", [INA_I32] = "i32", [INA_BF16] = "bf16", NULL
};
static const char *const modes[] = { [INA_SPARSIFY_OFF] = "off",
				     [INA_SPARSIFY_TOPK] = "topk",
				     [INA_SPARSIFY_FILTER] = "filter",
				     [INA_SPARSIFY_BOTH] = "both",
				     NULL };
static const char *const targets[] = {
	[INA_TOPK_DENSITY] = "density", [INA_TOPK_BYTES] = "bytes", [INA_TOPK_MASS] = "mass", NULL
};
static const char *const scheds[] = { [INA_SCHED_FIFO] = "fifo",
				      [INA_SCHED_PRIORITY] = "priority",
				      [INA_SCHED_MAGNITUDE] = "magnitude",
				      NULL };
static const char *const partitions[] = {
	[INA_PARTITION_FIXED] = "fixed", [INA_PARTITION_DYNAMIC] = "dynamic", NULL
};

#define F(field) offsetof(struct ina_config, field), sizeof(((struct ina_config *)0)->field)
#define S(field) \
	offsetof(struct ina_config, sparsify.field), \
		sizeof(((struct ina_config *)0)->sparsify.field)

/* name, type, offset, size, min, max (numbers; for an enum, the first and
 * last value), the names of an enum's values, the string slot. */
static const struct config_key keys[] = {
	{ "switch_addr", CK_STR, F(switch_addr), 0, 0, NULL, 0 },
	{ "replica_addr", CK_STR, F(replica_addr), 0, 0, NULL, 1 },
	{ "failover_ms", CK_UINT, F(failover_ms), 1, UINT32_MAX, NULL, 0 },
	{ "port", CK_STR, F(port), 0, 0, NULL, 2 },
	{ "job_id", CK_UINT, F(job_id), 0, UINT32_MAX, NULL, 0 },
	{ "rank", CK_UINT, F(rank), 0, INA_MAX_WORLD - 1, NULL, 0 },
	{ "world", CK_UINT, F(world), 1, INA_MAX_WORLD, NULL, 0 },
	{ "lanes", CK_UINT, F(lanes), 1, UINT16_MAX, NULL, 0 },
	{ "block_size", CK_UINT, F(block_size), 0, INA_BLOCK_MAX, NULL, 0 },
	{ "encoding", CK_ENUM, F(encoding), INA_F32, INA_BF16, encodings, 0 },
	{ "token", CK_UINT, F(token), 0, (double)UINT64_MAX, NULL, 0 },
	{ "timeout_ms", CK_UINT, F(timeout_ms), 1, UINT32_MAX, NULL, 0 },
	{ "rto_us", CK_UINT, F(rto_us), 1, UINT32_MAX, NULL, 0 },
	{ "capture", CK_STR, F(capture), 0, 0, NULL, 3 },
	{ "sparsify.mode", CK_ENUM, S(mode), INA_SPARSIFY_OFF, INA_SPARSIFY_BOTH, modes, 0 },
	{ "sparsify.target", CK_ENUM, S(target), INA_TOPK_DENSITY, INA_TOPK_MASS, targets, 0 },
	{ "sparsify.density", CK_REAL_OPEN0, S(density), 0, 1, NULL, 0 },
	{ "sparsify.byte_budget", CK_UINT, S(byte_budget), 0, (double)UINT64_MAX, NULL, 0 },
	{ "sparsify.mass", CK_REAL_OPEN0, S(mass), 0, 1, NULL, 0 },
	{ "sparsify.filter_b0", CK_REAL, S(filter_b0), 0, HUGE_VAL, NULL, 0 },
	{ "sparsify.filter_decay", CK_REAL_OPEN0, S(filter_decay), 0, 1, NULL, 0 },
	{ "sparsify.filter_results", CK_INT, S(filter_results), 0, 1, NULL, 0 },
	{ "sparsify.filter_results_scale", CK_REAL, S(filter_results_scale), 0, HUGE_VAL, NULL, 0 },
	{ "sched", CK_ENUM, F(sched), INA_SCHED_FIFO, INA_SCHED_MAGNITUDE, scheds, 0 },
	{ "sched_window", CK_UINT, F(sched_window), 0, UINT32_MAX, NULL, 0 },
	{ "max_pending", CK_UINT, F(max_pending), 1, 65536, NULL, 0 },
	{ "fuse_elems", CK_UINT, F(fuse_elems), 0, 1u << 24, NULL, 0 },
	{ "ssp", CK_UINT, F(ssp), 0, INA_SSP_MAX, NULL, 0 },
	{ "weight", CK_UINT, F(weight), 0, 255, NULL, 0 },
	{ "plan_blocks", CK_INT, F(plan_blocks), 0, 1, NULL, 0 },
	{ "partition", CK_ENUM, F(partition), INA_PARTITION_FIXED, INA_PARTITION_DYNAMIC,
	  partitions, 0 },
	{ "partitions", CK_UINT, F(partitions), 0, PARTITION_MAX_PARTS, NULL, 0 },
	{ "partition_period", CK_UINT, F(partition_period), 0, UINT32_MAX, NULL, 0 },
	{ "plan_period", CK_UINT, F(plan_period), 0, UINT32_MAX, NULL, 0 },
	{ "keepalive_ms", CK_UINT, F(keepalive_ms), 0, UINT32_MAX, NULL, 0 },
	{ "pause_ms", CK_UINT, F(pause_ms), 0, UINT32_MAX, NULL, 0 },
	{ "sub_block", CK_UINT, F(sub_block), 0, INA_BLOCK_MAX, NULL, 0 },
	/* The block planner's prices (issue 18). */
	{ "plan_packet_ns", CK_REAL, F(plan_packet_ns), 0, 1e6, NULL, 0 },
	{ "plan_byte_ns", CK_REAL, F(plan_byte_ns), 0, 1e6, NULL, 0 },
	{ "plan_cut_packet_ns", CK_REAL, F(plan_cut_packet_ns), 0, 1e6, NULL, 0 },
	{ "plan_cut_sub_ns", CK_REAL, F(plan_cut_sub_ns), 0, 1e6, NULL, 0 },
	{ "threads", CK_UINT, F(threads), 1, INA_THREADS_MAX, NULL, 0 },
	/* Tenant mode (issue 19): the tenant's index and key. */
	{ "tenant", CK_UINT, F(tenant), 0, 255, NULL, 0 },
	{ "tenant_key", CK_KEY, F(tenant_key), 0, 0, NULL, 0 },
	/* Not a field: the token from a secret file (ina_token_from()). */
	{ "token_file", CK_TOKEN_FILE, F(token), 0, 0, NULL, 0 },
};

#undef F
#undef S

unsigned
config_key_count(void)
{
	return sizeof(keys) / sizeof(keys[0]);
}

const struct config_key *
config_key_at(unsigned i)
{
	return i < config_key_count() ? &keys[i] : NULL;
}

static const struct config_key *
key_find(const char *name)
{
	for (unsigned i = 0; i < config_key_count(); i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

struct ina_config *
ina_config_new(void)
{
	struct owned_config *oc = calloc(1, sizeof(*oc));

	if (!oc)
		return NULL;
	ina_config_init(&oc->cfg);
	pthread_mutex_lock(&configs_lock);
	oc->next = configs;
	configs = oc;
	pthread_mutex_unlock(&configs_lock);
	return &oc->cfg;
}

void
ina_config_free(struct ina_config *cfg)
{
	struct owned_config *oc = (struct owned_config *)cfg;
	struct owned_config **pp;
	int ours;

	if (!cfg)
		return;
	pthread_mutex_lock(&configs_lock);
	for (pp = &configs; *pp && *pp != oc; pp = &(*pp)->next)
		;
	ours = *pp != NULL;
	if (ours)
		*pp = oc->next;
	pthread_mutex_unlock(&configs_lock);
	/* Not one of ina_config_new(), or freed already: left alone. */
	if (!ours)
		return;
	for (unsigned i = 0; i < CONFIG_MAX_STRINGS; i++)
		free(oc->str[i]);
	free(oc);
}

/* An unsigned integer, decimal or 0x hex, the whole text, up to 'max'. */
static int
parse_uint(const char *v, double max, uint64_t *out)
{
	int hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
	const char *digits = hex ? v + 2 : v;
	char *end;

	if (!(hex ? isxdigit((unsigned char)*digits) : isdigit((unsigned char)*digits)))
		return -1;
	errno = 0;
	*out = strtoull(digits, &end, hex ? 16 : 10);
	if (errno || *end || (double)*out > max)
		return -1;
	return 0;
}

static void
store_uint(void *p, size_t size, uint64_t v)
{
	switch (size) {
	case 1:
		*(uint8_t *)p = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)p = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)p = (uint32_t)v;
		break;
	default:
		*(uint64_t *)p = v;
	}
}

static int
set_enum(const struct config_key *k, void *p, const char *v, char *err, size_t err_size)
{
	char names[96] = "";
	size_t len = 0;

	for (int i = (int)k->min; i <= (int)k->max; i++) {
		if (strcmp(v, k->names[i]) == 0) {
			*(int *)p = i;
			return 0;
		}
		len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
					i > (int)k->min ? "|" : "", k->names[i]);
		if (len >= sizeof(names))
			len = sizeof(names) - 1;
	}
	snprintf(err, err_size, "%s '%s': not one of %s", k->name, v, names);
	return -EINVAL;
}

static int
set_real(const struct config_key *k, void *p, const char *v, char *err, size_t err_size)
{
	int open0 = k->type == CK_REAL_OPEN0;
	char *end;
	double d;

	errno = 0;
	d = *v ? strtod(v, &end) : NAN;
	if (!*v || errno || *end || !isfinite(d) || d < k->min || (open0 && d <= k->min) ||
	    d > k->max) {
		if (k->max == HUGE_VAL)
			snprintf(err, err_size, "%s '%s': not a number >= %g", k->name, v, k->min);
		else
			snprintf(err, err_size, "%s '%s': not a number in %s%g, %g]", k->name, v,
				 open0 ? "(" : "[", k->min, k->max);
		return -EINVAL;
	}
	if (k->size == sizeof(float))
		*(float *)p = (float)d;
	else
		*(double *)p = d;
	return 0;
}

static int
set_str(struct owned_config *oc, const struct config_key *k, void *p, const char *v, char *err,
	size_t err_size)
{
	char *copy = NULL;

	/* "" is NULL: no replica, no capture, the default port. */
	if (*v) {
		copy = strdup(v);
		if (!copy) {
			snprintf(err, err_size, "%s: out of memory", k->name);
			return -ENOMEM;
		}
	}
	free(oc->str[k->slot]);
	oc->str[k->slot] = copy;
	*(const char **)p = copy;
	return 0;
}

int
ina_config_set(struct ina_config *cfg, const char *key, const char *value, char *err,
	       size_t err_size)
{
	const struct config_key *k;
	char dummy[8];
	void *p;
	uint64_t u;

	if (!err) {
		err = dummy;
		err_size = sizeof(dummy);
	}
	err[0] = '\0';
	if (!cfg || !key || !value) {
		snprintf(err, err_size, "ina_config_set: a config, a key and a value are needed");
		return -EINVAL;
	}
	if (!config_owned(cfg)) {
		snprintf(err, err_size,
			 "ina_config_set: the config is not one of ina_config_new() "
			 "(or it was freed)");
		return -EINVAL;
	}
	k = key_find(key);
	if (!k) {
		snprintf(err, err_size,
			 "'%s' is no configuration field (see struct ina_config "
			 "in ina.h)",
			 key);
		return -EINVAL;
	}
	p = (char *)cfg + k->offset;
	switch (k->type) {
	case CK_STR:
		return set_str((struct owned_config *)cfg, k, p, value, err, err_size);
	case CK_ENUM:
		return set_enum(k, p, value, err, err_size);
	case CK_REAL:
	case CK_REAL_OPEN0:
		return set_real(k, p, value, err, err_size);
	case CK_TOKEN_FILE: {
		char why[256];
		int ret = ina_token_from(value, &u, why, sizeof(why));

		if (ret < 0) {
			snprintf(err, err_size, "token_file: %s", why);
			return -EINVAL;
		}
		*(uint64_t *)p = u;
		return 0;
	}
	case CK_KEY: {
		char why[256];

		/* A secret: the message never repeats it. */
		if (ina_auth_key_parse(value, (uint8_t *)p, why, sizeof(why)) < 0) {
			snprintf(err, err_size, "%s: %s", k->name, why);
			return -EINVAL;
		}
		return 0;
	}
	case CK_UINT:
	case CK_INT:
		if (parse_uint(value, k->max, &u) < 0 || (double)u < k->min) {
			/* The token is a secret: never repeat it. */
			if (strcmp(k->name, "token") == 0)
				snprintf(err, err_size,
					 "token: not a 64-bit unsigned number "
					 "(decimal or 0x hex)");
			else
				snprintf(err, err_size, "%s '%s': not a whole number in %.0f..%.0f",
					 k->name, value, k->min, k->max);
			return -EINVAL;
		}
		if (k->type == CK_INT)
			*(int *)p = (int)u;
		else
			store_uint(p, k->size, u);
		return 0;
	}
	return -EINVAL;
}
