/* SPDX-License-Identifier: MIT */
/*
 * The keyed tags that could replace the header's 64-bit token field in tenant
 * mode (issue 19), timed on this machine: nanoseconds to tag one packet of
 * 64 B, 1 KiB and 4 KiB, medians of --runs, each run a loop of many packets
 * over the same buffer (in cache, as the switch's packet is when it tags it).
 * From Debian's libsodium: SipHash-2-4 (crypto_shorthash, 64-bit) and its
 * 128-bit form, keyed BLAKE2b (crypto_generichash, 128-bit out), HMAC-SHA256
 * and HMAC-SHA512-256 (crypto_auth), Poly1305 with a per-packet key from
 * ChaCha20 (crypto_onetimeauth, what an AEAD does), ChaCha20-Poly1305 and
 * AES-256-GCM AEAD with the packet as associated data. From OpenSSL's
 * libcrypto (EVP_MAC, a context keyed once and re-initialised per packet):
 * HMAC-SHA256, CMAC-AES128, GMAC (AES-128, a fresh IV per packet), SipHash,
 * Poly1305 (a new key per packet) and KMAC128. Nonce-based ones (Poly1305,
 * the AEADs, GMAC) are timed with a counter nonce; bench/README.md says why
 * ina does not use them. A bench: it prints figures, it never fails.
 * Usage: bench_mac [--runs R] [--packets N]
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <sodium.h>

#include "bench_stats.h"

#define MAX_RUNS 31
#define MAX_SIZE 4096

static const size_t sizes[] = { 64, 1024, 4096 };
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint8_t pkt[MAX_SIZE];
static uint8_t key32[32];
static volatile uint8_t sink;

/* One candidate: tags 'len' bytes of pkt with packet number 'seq' (the nonce
 * of nonce-based ones), writes at least 8 bytes of tag to 'tag'. */
typedef int (*tag_fn)(void *state, uint64_t seq, size_t len, uint8_t *tag);

struct candidate {
	const char *name;
	const char *lib;
	int nonce; /* 1: needs a per-packet nonce never reused with other bytes */
	tag_fn fn;
	void *state;
};

/* libsodium ---------------------------------------------------------------- */

static int
na_siphash24(void *s, uint64_t seq, size_t len, uint8_t *tag)
{
	(void)s, (void)seq;
	return crypto_shorthash_siphash24(tag, pkt, len, key32);
}

static int
na_siphashx24(void *s, uint64_t seq, size_t len, uint8_t *tag)
{
	(void)s, (void)seq;
	return crypto_shorthash_siphashx24(tag, pkt, len, key32);
}

static int
na_blake2b(void *s, uint64_t seq, size_t len, uint8_t *tag)
{
	(void)s, (void)seq;
	return crypto_generichash(tag, crypto_generichash_BYTES_MIN, pkt, len, key32, 32);
}

static int
na_hmacsha256(void *s, uint64_t seq, size_t len, uint8_t *tag)
{
	(void)s, (void)seq;
	return crypto_auth_hmacsha256(tag, pkt, len, key32);
}

static int
na_hmacsha512256(void *s, uint64_t seq, size_t len, uint8_t *tag)
{
	(void)s, (void)seq;
	return crypto_auth(tag, pkt, len, key32);
}

/* Poly1305 is one-time: its key for packet 'seq' is ChaCha20's first 32
 * bytes of keystream under the long-term key and the nonce seq. */
static int
na_poly1305(void *s, uint64_t seq, size_t len, uint8_t *tag)
{
	uint8_t nonce[crypto_stream_chacha20_NONCEBYTES] = { 0 };
	uint8_t otk[crypto_onetimeauth_KEYBYTES];

	(void)s;
	memcpy(nonce, &seq, sizeof(seq));
	crypto_stream_chacha20(otk, sizeof(otk), nonce, key32);
	return crypto_onetimeauth(tag, pkt, len, otk);
}

static int
na_chacha20poly1305(void *s, uint64_t seq, size_t len, uint8_t *tag)
{
	uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES] = { 0 };
	unsigned long long tlen;

	(void)s;
	memcpy(nonce, &seq, sizeof(seq));
	return crypto_aead_chacha20poly1305_ietf_encrypt_detached(tag + 16, tag, &tlen, NULL, 0,
								  pkt, len, NULL, nonce, key32);
}

static int
na_aes256gcm(void *s, uint64_t seq, size_t len, uint8_t *tag)
{
	uint8_t nonce[crypto_aead_aes256gcm_NPUBBYTES] = { 0 };
	unsigned long long tlen;

	memcpy(nonce, &seq, sizeof(seq));
	return crypto_aead_aes256gcm_encrypt_detached_afternm(tag + 16, tag, &tlen, NULL, 0, pkt,
							      len, NULL, nonce, s);
}

/* OpenSSL EVP_MAC ---------------------------------------------------------- */

struct ossl {
	EVP_MAC *mac;
	EVP_MAC_CTX *ctx;
	size_t key_size;
	int rekey; /* Poly1305: a new one-time key per packet */
	int iv;	   /* GMAC: a new IV per packet */
};

static int
ossl_open(struct ossl *o, const char *alg, const char *param_name, const char *param,
	  size_t key_size, size_t out_size)
{
	OSSL_PARAM params[3], *p = params;
	size_t out = out_size;

	memset(o, 0, sizeof(*o));
	o->key_size = key_size;
	o->mac = EVP_MAC_fetch(NULL, alg, NULL);
	if (!o->mac)
		return -1;
	o->ctx = EVP_MAC_CTX_new(o->mac);
	if (!o->ctx)
		return -1;
	if (param_name)
		*p++ = OSSL_PARAM_construct_utf8_string(param_name, (char *)param, 0);
	if (out_size)
		*p++ = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &out);
	*p = OSSL_PARAM_construct_end();
	if (!EVP_MAC_init(o->ctx, key32, key_size, params))
		return -1;
	return 0;
}

static void
ossl_close(struct ossl *o)
{
	EVP_MAC_CTX_free(o->ctx);
	EVP_MAC_free(o->mac);
}

static int
ossl_tag(void *s, uint64_t seq, size_t len, uint8_t *tag)
{
	struct ossl *o = s;
	OSSL_PARAM params[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
	uint8_t iv[12] = { 0 };
	uint8_t otk[32];
	size_t out;

	if (o->iv) {
		memcpy(iv, &seq, sizeof(seq));
		params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, iv, sizeof(iv));
	}
	if (o->rekey) {
		/* the one-time key's derivation is not timed here: the
		 * libsodium row shows what ChaCha20 adds */
		memcpy(otk, key32, sizeof(otk));
		memcpy(otk, &seq, sizeof(seq));
	}
	if (!EVP_MAC_init(o->ctx, o->rekey ? otk : NULL, o->rekey ? o->key_size : 0, params))
		return -1;
	if (!EVP_MAC_update(o->ctx, pkt, len))
		return -1;
	if (!EVP_MAC_final(o->ctx, tag, &out, 64))
		return -1;
	return 0;
}

/* -------------------------------------------------------------------------- */

static double
time_one(const struct candidate *c, size_t len, uint64_t nb_pkts, uint64_t *seq)
{
	uint8_t tag[64];
	double t0 = bench_now_s();

	for (uint64_t i = 0; i < nb_pkts; i++) {
		pkt[0] = (uint8_t)i; /* a different packet each time */
		if (c->fn(c->state, (*seq)++, len, tag) != 0)
			return -1;
		sink ^= tag[0];
	}
	return (bench_now_s() - t0) / (double)nb_pkts * 1e9;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = { { "runs", required_argument, NULL, 'r' },
					      { "packets", required_argument, NULL, 'n' },
					      { NULL, 0, NULL, 0 } };
	unsigned runs = 7;
	uint64_t nb_pkts = 200000, seq = 1;
	struct ossl o_hmac, o_cmac, o_gmac, o_sip, o_poly, o_kmac;
	crypto_aead_aes256gcm_state *gcm = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "r:n:", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			runs = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			nb_pkts = strtoull(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: bench_mac [--runs R] [--packets N]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > MAX_RUNS || nb_pkts < 1) {
		fprintf(stderr, "bench_mac: --runs 1..%d, --packets >= 1\n", MAX_RUNS);
		return 2;
	}
	if (sodium_init() < 0) {
		fprintf(stderr, "bench_mac: sodium_init failed\n");
		return 1;
	}
	randombytes_buf(key32, sizeof(key32));
	randombytes_buf(pkt, sizeof(pkt));

	struct candidate cands[16];
	size_t nc = 0;

	cands[nc++] = (struct candidate){ "SipHash-2-4 (64)", "sodium", 0, na_siphash24, NULL };
	cands[nc++] = (struct candidate){ "SipHash-2-4 (128)", "sodium", 0, na_siphashx24, NULL };
	cands[nc++] = (struct candidate){ "BLAKE2b keyed (128)", "sodium", 0, na_blake2b, NULL };
	cands[nc++] = (struct candidate){ "HMAC-SHA256", "sodium", 0, na_hmacsha256, NULL };
	cands[nc++] = (struct candidate){ "HMAC-SHA512-256", "sodium", 0, na_hmacsha512256, NULL };
	cands[nc++] = (struct candidate){ "ChaCha20 + Poly1305", "sodium", 1, na_poly1305, NULL };
	cands[nc++] = (struct candidate){ "ChaCha20-Poly1305 AD", "sodium", 1, na_chacha20poly1305,
					  NULL };
	if (crypto_aead_aes256gcm_is_available()) {
		gcm = sodium_malloc(sizeof(*gcm));
		if (gcm && crypto_aead_aes256gcm_beforenm(gcm, key32) == 0)
			cands[nc++] = (struct candidate){ "AES-256-GCM AD", "sodium", 1,
							  na_aes256gcm, gcm };
	} else {
		printf("# libsodium: AES-256-GCM not available on this CPU (no AES-NI/CLMUL)\n");
	}
	if (ossl_open(&o_hmac, "HMAC", OSSL_MAC_PARAM_DIGEST, "SHA256", 32, 0) == 0)
		cands[nc++] = (struct candidate){ "HMAC-SHA256", "libcrypto", 0, ossl_tag,
						  &o_hmac };
	if (ossl_open(&o_cmac, "CMAC", OSSL_MAC_PARAM_CIPHER, "AES-128-CBC", 16, 0) == 0)
		cands[nc++] = (struct candidate){ "CMAC-AES128", "libcrypto", 0, ossl_tag,
						  &o_cmac };
	if (ossl_open(&o_gmac, "GMAC", OSSL_MAC_PARAM_CIPHER, "AES-128-GCM", 16, 0) == 0) {
		o_gmac.iv = 1;
		cands[nc++] = (struct candidate){ "GMAC-AES128", "libcrypto", 1, ossl_tag,
						  &o_gmac };
	}
	if (ossl_open(&o_sip, "SIPHASH", NULL, NULL, 16, 8) == 0)
		cands[nc++] = (struct candidate){ "SipHash-2-4 (64)", "libcrypto", 0, ossl_tag,
						  &o_sip };
	if (ossl_open(&o_poly, "POLY1305", NULL, NULL, 32, 0) == 0) {
		o_poly.rekey = 1;
		cands[nc++] = (struct candidate){ "Poly1305 (key given)", "libcrypto", 1, ossl_tag,
						  &o_poly };
	}
	if (ossl_open(&o_kmac, "KMAC-128", NULL, NULL, 32, 16) == 0)
		cands[nc++] = (struct candidate){ "KMAC128 (128)", "libcrypto", 0, ossl_tag,
						  &o_kmac };

	printf("# bench_mac: ns to tag one packet (median of %u runs of %llu packets), and GB/s "
	       "at 4 KiB\n",
	       runs, (unsigned long long)nb_pkts);
	printf("%-22s %-10s %-5s %9s %9s %9s %8s\n", "tag", "library", "nonce", "64 B", "1 KiB",
	       "4 KiB", "GB/s@4K");
	for (size_t i = 0; i < nc; i++) {
		double med[N_SIZES];

		for (size_t s = 0; s < N_SIZES; s++) {
			double v[MAX_RUNS];

			time_one(&cands[i], sizes[s], nb_pkts / 10 + 1, &seq); /* warm up */
			for (unsigned r = 0; r < runs; r++)
				v[r] = time_one(&cands[i], sizes[s],
						sizes[s] > 1024 ? nb_pkts / 4 + 1 : nb_pkts, &seq);
			med[s] = bench_median(v, runs);
		}
		printf("%-22s %-10s %-5s %9.1f %9.1f %9.1f %8.2f\n", cands[i].name, cands[i].lib,
		       cands[i].nonce ? "yes" : "no", med[0], med[1], med[2],
		       med[2] > 0 ? 4096.0 / med[2] : 0);
	}
	ossl_close(&o_hmac);
	ossl_close(&o_cmac);
	ossl_close(&o_gmac);
	ossl_close(&o_sip);
	ossl_close(&o_poly);
	ossl_close(&o_kmac);
	sodium_free(gcm);
	return 0;
}
