/* SPDX-License-Identifier: MIT */
/*
 * Tenant mode's keys and packet tags (docs/PROTOCOL.md, "Tenants and tags").
 * A tenant has a 256-bit key; the top byte of a job id names the tenant
 * (1..255), so a packet names its tenant with no field of its own and the
 * switch finds the key in O(1). A job's key is derived from its tenant's key
 * and the whole 32-bit job id with libsodium's crypto_kdf (BLAKE2b); every
 * packet of the job carries, in place of the token, SipHash-2-4
 * (crypto_shorthash) of its header, with that field zeroed, and payload
 * under the job key. bench/README.md ("Keyed packet tags") says why these.
 */
#ifndef INA_AUTH_H
#define INA_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define INA_TENANT_KEY_SIZE 32	     /* bytes of a tenant key */
#define INA_JOB_KEY_SIZE 16	     /* bytes of a job key (SipHash-2-4's) */
#define INA_TENANT_SHIFT 24	     /* job id bits below the tenant's index */
#define INA_TENANT_MAX 255u	     /* tenant indexes 1..255 (0: none) */
#define INA_TENANT_JOB_MAX 0xffffffu /* a tenant's own job ids 0..this */
/* Offset of the token field, which the tag takes in tenant mode. */
#define INA_TAG_OFFSET 48
#define INA_TENANT_ENV "INA_TENANT"	    /* the worker's tenant index */
#define INA_TENANT_KEY_ENV "INA_TENANT_KEY" /* the worker's tenant key */

struct ina_job_key {
	uint8_t k[INA_JOB_KEY_SIZE];
};

/* The tenant index a job id names (0: none). */
static inline uint8_t
ina_tenant_of(uint32_t job_id)
{
	return (uint8_t)(job_id >> INA_TENANT_SHIFT);
}

/* Starts libsodium (idempotent, thread-safe); 0 or -1. Called by the
 * functions below that need it; a program may call it early. */
int ina_auth_init(void);

/*
 * Parses a 32-byte key written as 64 hex digits or as base64 (44
 * characters with padding), surrounding blanks ignored. 0, or -EINVAL with
 * what is wrong in 'err' (never the key's text).
 */
int ina_auth_key_parse(const char *text, uint8_t key[INA_TENANT_KEY_SIZE], char *err,
		       size_t err_size);

/* The key of job 'job_id' (the wire's, tenant index included) of the tenant
 * whose key is 'tenant_key' (crypto_kdf, context "ina-job1"). */
void ina_auth_job_key(const uint8_t tenant_key[INA_TENANT_KEY_SIZE], uint32_t job_id,
		      struct ina_job_key *out);

/* Writes the tag of the 'len'-byte packet 'pkt' (header then payload) into
 * its token field: SipHash-2-4 under 'k' with that field zero. len must be at
 * least the header's. */
void ina_auth_sign(const struct ina_job_key *k, uint8_t *pkt, size_t len);

/* 1 when the token field of 'pkt' holds its tag under 'k' (compared in
 * constant time), else 0; either way the field is zero after (the rest of the
 * receiver sees a token of 0). 0 for a packet shorter than a header. */
int ina_auth_check(const struct ina_job_key *k, uint8_t *pkt, size_t len);

/*
 * The worker's tenant: its index from $INA_TENANT (1..255) and its key from
 * 'key_file' (first line) or $INA_TENANT_KEY. Returns 0 with *index 0 when
 * neither variable nor file is given (token mode); 1 when both are read;
 * -EINVAL/-errno with a message in 'err' when one is missing or bad.
 */
int ina_auth_tenant_load(const char *key_file, uint8_t *index, uint8_t key[INA_TENANT_KEY_SIZE],
			 char *err, size_t err_size);

#endif
