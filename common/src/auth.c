/* SPDX-License-Identifier: MIT */
/* Tenant mode's keys and packet tags (auth.h), over libsodium. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ina/auth.h"
#include "ina/wire.h"

_Static_assert(crypto_shorthash_BYTES == 8, "the tag fills the 64-bit token field");
_Static_assert(crypto_shorthash_KEYBYTES == INA_JOB_KEY_SIZE, "job key size");
_Static_assert(crypto_kdf_KEYBYTES == INA_TENANT_KEY_SIZE, "tenant key size");
_Static_assert(INA_TAG_OFFSET + 8 == INA_HDR_SIZE, "the token ends the header");

static const char kdf_context[crypto_kdf_CONTEXTBYTES] = { 'i', 'n', 'a', '-', 'j', 'o', 'b', '1' };

int
ina_auth_init(void)
{
	return sodium_init() < 0 ? -1 : 0;
}

int
ina_auth_key_parse(const char *text, uint8_t key[INA_TENANT_KEY_SIZE], char *err, size_t err_size)
{
	size_t len, got = 0;
	const char *end = NULL;

	if (ina_auth_init() < 0) {
		snprintf(err, err_size, "libsodium failed to start");
		return -EINVAL;
	}
	while (*text == ' ' || *text == '\t')
		text++;
	len = strcspn(text, " \t\r\n");
	if (text[len + strspn(text + len, " \t\r\n")] != '\0') {
		snprintf(err, err_size,
			 "a key is one word (64 hex digits or 44 base64 characters)");
		return -EINVAL;
	}
	if (len == 2 * INA_TENANT_KEY_SIZE) {
		if (sodium_hex2bin(key, INA_TENANT_KEY_SIZE, text, len, NULL, &got, &end) == 0 &&
		    got == INA_TENANT_KEY_SIZE && end == text + len)
			return 0;
		snprintf(err, err_size, "64 characters but not hex digits");
		return -EINVAL;
	}
	if (len ==
	    sodium_base64_ENCODED_LEN(INA_TENANT_KEY_SIZE, sodium_base64_VARIANT_ORIGINAL) - 1) {
		if (sodium_base642bin(key, INA_TENANT_KEY_SIZE, text, len, NULL, &got, &end,
				      sodium_base64_VARIANT_ORIGINAL) == 0 &&
		    got == INA_TENANT_KEY_SIZE && end == text + len)
			return 0;
		snprintf(err, err_size, "44 characters but not base64 of 32 bytes");
		return -EINVAL;
	}
	snprintf(err, err_size,
		 "%zu characters: a key is 32 bytes, as 64 hex digits or 44 base64 characters "
		 "(e.g. head -c 32 /dev/urandom | base64)",
		 len);
	return -EINVAL;
}

void
ina_auth_job_key(const uint8_t tenant_key[INA_TENANT_KEY_SIZE], uint32_t job_id,
		 struct ina_job_key *out)
{
	(void)ina_auth_init();
	crypto_kdf_derive_from_key(out->k, sizeof(out->k), job_id, kdf_context, tenant_key);
}

void
ina_auth_sign(const struct ina_job_key *k, uint8_t *pkt, size_t len)
{
	memset(pkt + INA_TAG_OFFSET, 0, 8);
	crypto_shorthash(pkt + INA_TAG_OFFSET, pkt, len, k->k);
}

int
ina_auth_check(const struct ina_job_key *k, uint8_t *pkt, size_t len)
{
	uint8_t got[8], want[8];

	if (len < INA_HDR_SIZE)
		return 0;
	memcpy(got, pkt + INA_TAG_OFFSET, sizeof(got));
	memset(pkt + INA_TAG_OFFSET, 0, 8);
	crypto_shorthash(want, pkt, len, k->k);
	return sodium_memcmp(got, want, sizeof(got)) == 0;
}

int
ina_auth_tenant_load(const char *key_file, uint8_t *index, uint8_t key[INA_TENANT_KEY_SIZE],
		     char *err, size_t err_size)
{
	const char *idx_s = getenv(INA_TENANT_ENV);
	const char *key_s = getenv(INA_TENANT_KEY_ENV);
	char buf[256], why[160];
	char *end;
	unsigned long v;
	int ret;

	*index = 0;
	if (!idx_s && !key_s && !key_file)
		return 0;
	if (!idx_s || !*idx_s) {
		snprintf(err, err_size,
			 "a tenant key is given but no tenant: set %s to its index "
			 "(1..255, the switch's tenants file)",
			 INA_TENANT_ENV);
		return -EINVAL;
	}
	errno = 0;
	v = strtoul(idx_s, &end, 10);
	if (errno || *end || v < 1 || v > INA_TENANT_MAX) {
		snprintf(err, err_size, "%s=%s: a tenant index is 1..255", INA_TENANT_ENV, idx_s);
		return -EINVAL;
	}
	if (key_file) {
		FILE *f = fopen(key_file, "r");

		if (!f) {
			int e = errno;

			snprintf(err, err_size, "tenant key file %s: %s", key_file, strerror(e));
			return -e;
		}
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	} else if (key_s) {
		snprintf(buf, sizeof(buf), "%s", key_s);
	} else {
		snprintf(err, err_size,
			 "%s=%s but no tenant key: give --tenant-key-file FILE or "
			 "set %s",
			 INA_TENANT_ENV, idx_s, INA_TENANT_KEY_ENV);
		return -EINVAL;
	}
	ret = ina_auth_key_parse(buf, key, why, sizeof(why));
	sodium_memzero(buf, sizeof(buf));
	if (ret < 0) {
		snprintf(err, err_size, "tenant key%s%s: %s", key_file ? " file " : " from $",
			 key_file ? key_file : INA_TENANT_KEY_ENV, why);
		return ret;
	}
	*index = (uint8_t)v;
	return 1;
}
