/* SPDX-License-Identifier: MIT */
/*
 * JOIN cookies: SipHash-2-4 (libsodium's crypto_shorthash, a keyed hash made
 * for short inputs) over the source address, the job id, the run (an epoch,
 * or 0) and the time bucket. See cookie.h.
 */
#include "cookie.h"

#include <sodium.h>
#include <string.h>

_Static_assert(COOKIE_KEY_SIZE == crypto_shorthash_KEYBYTES, "cookie key size");

static uint64_t
cookie_at(const uint8_t key[COOKIE_KEY_SIZE], const struct ina_peer *peer, uint32_t job_id,
	  uint32_t epoch, uint64_t bucket)
{
	uint8_t msg[1 + INA_PEER_SIZE + 4 + 4 + 8], out[crypto_shorthash_BYTES];
	size_t n = 0;
	uint64_t c;

	msg[n++] = peer->len;
	memcpy(msg + n, peer->bytes, peer->len);
	n += peer->len;
	for (int i = 3; i >= 0; i--)
		msg[n++] = (uint8_t)(job_id >> (8 * i));
	for (int i = 3; i >= 0; i--)
		msg[n++] = (uint8_t)(epoch >> (8 * i));
	for (int i = 7; i >= 0; i--)
		msg[n++] = (uint8_t)(bucket >> (8 * i));
	crypto_shorthash(out, msg, n, key);
	memcpy(&c, out, sizeof(c));
	return c | 1; /* 0 is "no cookie" */
}

uint64_t
cookie_make(const uint8_t key[COOKIE_KEY_SIZE], const struct ina_peer *peer, uint32_t job_id,
	    uint32_t epoch, uint64_t now_ns)
{
	return cookie_at(key, peer, job_id, epoch, now_ns >> COOKIE_BUCKET_SHIFT);
}

int
cookie_valid(const uint8_t key[COOKIE_KEY_SIZE], const struct ina_peer *peer, uint32_t job_id,
	     uint32_t epoch, uint64_t now_ns, uint64_t cookie)
{
	uint64_t bucket = now_ns >> COOKIE_BUCKET_SHIFT;

	if (cookie == 0 || peer->len >= INA_PEER_SIZE)
		return 0;
	return cookie == cookie_at(key, peer, job_id, epoch, bucket) ||
	       (bucket > 0 && cookie == cookie_at(key, peer, job_id, epoch, bucket - 1));
}
