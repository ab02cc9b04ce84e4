/* SPDX-License-Identifier: MIT */
/*
 * Per-source reply budgets: a table of token buckets kept as theoretical
 * arrival times (GCRA), indexed by SipHash-2-4 (libsodium's
 * crypto_shorthash) of the source address. See reply_limit.h.
 */
#include "reply_limit.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(REPLY_LIMIT_KEY_SIZE == crypto_shorthash_KEYBYTES, "reply limit key size");

struct reply_limit {
	uint32_t mask;
	uint64_t cost_ns;  /* one reply's worth of refill */
	uint64_t burst_ns; /* (burst - 1) replies' worth */
	uint8_t key[REPLY_LIMIT_KEY_SIZE];
	uint64_t tat[]; /* per entry: when its bucket is full again, ns */
};

struct reply_limit *
reply_limit_create(uint32_t entries, uint32_t rate, uint32_t burst,
		   const uint8_t key[REPLY_LIMIT_KEY_SIZE])
{
	struct reply_limit *rl;
	uint32_t n = 1;

	while (n < entries && n < (1u << 24))
		n <<= 1;
	rl = calloc(1, sizeof(*rl) + (size_t)n * sizeof(rl->tat[0]));
	if (!rl)
		return NULL;
	rl->mask = n - 1;
	rl->cost_ns = rate ? 1000000000ull / rate : 0;
	if (rate && rl->cost_ns == 0)
		rl->cost_ns = 1;
	rl->burst_ns = (uint64_t)(burst ? burst - 1 : 0) * rl->cost_ns;
	memcpy(rl->key, key, sizeof(rl->key));
	return rl;
}

void
reply_limit_destroy(struct reply_limit *rl)
{
	free(rl);
}

int
reply_limit_take(struct reply_limit *rl, const struct ina_peer *peer, uint64_t now_ns)
{
	uint8_t h[crypto_shorthash_BYTES];
	uint64_t idx, tat;

	if (!rl->cost_ns)
		return 1;
	crypto_shorthash(h, peer->bytes, peer->len < INA_PEER_SIZE ? peer->len : 0, rl->key);
	memcpy(&idx, h, sizeof(idx));
	idx &= rl->mask;
	tat = rl->tat[idx] > now_ns ? rl->tat[idx] : now_ns;
	if (tat - now_ns > rl->burst_ns)
		return 0;
	rl->tat[idx] = tat + rl->cost_ns;
	return 1;
}
