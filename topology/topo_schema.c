/* SPDX-License-Identifier: MIT */
/* The libcyaml schema of a topology file (topo_schema.h, topologies/README.md). */
#include "ina/wire.h"
#include "topo_schema.h"

#define OPT (CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL)
#define STR(key, st, m) CYAML_FIELD_STRING_PTR(key, CYAML_FLAG_POINTER, st, m, 1, 4096)
#define OPT_STR(key, st, m) CYAML_FIELD_STRING_PTR(key, OPT, st, m, 0, 4096)
#define OPT_UINT(key, st, m) OPT_STR(key, st, m)
#define OPT_FLOAT(key, st, m) OPT_STR(key, st, m)

static const cyaml_strval_t roles[] = {
	{ "rack", RAW_ROLE_RACK },
	{ "spine", RAW_ROLE_SPINE },
	{ "core", RAW_ROLE_CORE },
	{ "replica", RAW_ROLE_REPLICA },
};

static const cyaml_strval_t shares[] = {
	{ "first-come", RAW_SHARE_FIRST_COME },
	{ "fair", RAW_SHARE_FAIR },
};

/* The wire's encodings as enum ina_encoding, by their names in the encoding
 * table (ina/encoding.h): a job's value is the wire's, 0 when absent. */
static const cyaml_strval_t encodings[] = {
	{ "f32", INA_ENC_F32 },
	{ "i32", INA_ENC_I32 },
	{ "bf16", INA_ENC_BF16 },
};

static const cyaml_schema_value_t name_entry = {
	CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 1, 4096),
};

static const cyaml_schema_field_t link_opts_fields[] = {
	OPT_STR("bandwidth", struct raw_link_opts, bandwidth),
	OPT_STR("latency", struct raw_link_opts, latency),
	OPT_FLOAT("loss", struct raw_link_opts, loss),
	OPT_UINT("mtu", struct raw_link_opts, mtu),
	CYAML_FIELD_END,
};

static const cyaml_schema_field_t switch_fields[] = {
	STR("name", struct raw_switch, name),
	CYAML_FIELD_ENUM("role", CYAML_FLAG_OPTIONAL | CYAML_FLAG_STRICT, struct raw_switch, role,
			 roles, CYAML_ARRAY_LEN(roles)),
	OPT_UINT("slots", struct raw_switch, slots),
	OPT_UINT("cores", struct raw_switch, cores),
	OPT_STR("uplink", struct raw_switch, uplink),
	OPT_STR("replica_of", struct raw_switch, replica_of),
	CYAML_FIELD_ENUM("share", CYAML_FLAG_OPTIONAL | CYAML_FLAG_STRICT, struct raw_switch, share,
			 shares, CYAML_ARRAY_LEN(shares)),
	OPT_UINT("share_total", struct raw_switch, share_total),
	OPT_UINT("share_min_slots", struct raw_switch, share_min_slots),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t switch_entry = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct raw_switch, switch_fields),
};

static const cyaml_schema_field_t host_fields[] = {
	STR("name", struct raw_host, name),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t host_entry = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct raw_host, host_fields),
};

static const cyaml_schema_field_t link_fields[] = {
	CYAML_FIELD_SEQUENCE("endpoints", CYAML_FLAG_POINTER, struct raw_link, endpoints,
			     &name_entry, 2, 2),
	OPT_STR("bandwidth", struct raw_link, o.bandwidth),
	OPT_STR("latency", struct raw_link, o.latency),
	OPT_FLOAT("loss", struct raw_link, o.loss),
	OPT_UINT("mtu", struct raw_link, o.mtu),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t link_entry = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct raw_link, link_fields),
};

static const cyaml_schema_field_t synthetic_fields[] = {
	OPT_FLOAT("density", struct raw_synthetic, density),
	OPT_UINT("seed", struct raw_synthetic, seed),
	CYAML_FIELD_END,
};

static const cyaml_schema_field_t data_fields[] = {
	CYAML_FIELD_MAPPING_PTR("synthetic", OPT, struct raw_data, synthetic, synthetic_fields),
	OPT_STR("file", struct raw_data, file),
	CYAML_FIELD_END,
};

static const cyaml_schema_field_t job_fields[] = {
	STR("name", struct raw_job, name),
	OPT_UINT("id", struct raw_job, id),
	CYAML_FIELD_SEQUENCE("hosts", CYAML_FLAG_POINTER, struct raw_job, hosts, &name_entry, 1,
			     CYAML_UNLIMITED),
	OPT_UINT("tensor", struct raw_job, tensor),
	OPT_UINT("rounds", struct raw_job, rounds),
	OPT_UINT("block", struct raw_job, block),
	OPT_UINT("lanes", struct raw_job, lanes),
	OPT_UINT("weight", struct raw_job, weight),
	CYAML_FIELD_ENUM("encoding", CYAML_FLAG_OPTIONAL | CYAML_FLAG_STRICT, struct raw_job,
			 encoding, encodings, CYAML_ARRAY_LEN(encodings)),
	CYAML_FIELD_MAPPING_PTR("data", OPT, struct raw_job, data, data_fields),
	OPT_STR("tenant", struct raw_job, tenant),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t job_entry = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct raw_job, job_fields),
};

static const cyaml_schema_field_t attack_fields[] = {
	STR("from", struct raw_attack, from),
	STR("job", struct raw_attack, job),
	OPT_STR("rate", struct raw_attack, rate),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t attack_entry = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct raw_attack, attack_fields),
};

static const cyaml_schema_field_t topology_fields[] = {
	STR("name", struct raw_topology, name),
	CYAML_FIELD_MAPPING_PTR("defaults", OPT, struct raw_topology, defaults, link_opts_fields),
	CYAML_FIELD_SEQUENCE("switches", CYAML_FLAG_POINTER, struct raw_topology, switches,
			     &switch_entry, 1, CYAML_UNLIMITED),
	CYAML_FIELD_SEQUENCE("hosts", CYAML_FLAG_POINTER, struct raw_topology, hosts, &host_entry,
			     1, CYAML_UNLIMITED),
	CYAML_FIELD_SEQUENCE("links", CYAML_FLAG_POINTER, struct raw_topology, links, &link_entry,
			     1, CYAML_UNLIMITED),
	CYAML_FIELD_SEQUENCE("jobs", OPT, struct raw_topology, jobs, &job_entry, 0,
			     CYAML_UNLIMITED),
	CYAML_FIELD_SEQUENCE("attacks", OPT, struct raw_topology, attacks, &attack_entry, 0,
			     CYAML_UNLIMITED),
	CYAML_FIELD_END,
};

const cyaml_schema_value_t topo_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct raw_topology, topology_fields),
};
