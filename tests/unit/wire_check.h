/* SPDX-License-Identifier: MIT */
/*
 * Wire helpers shared by the unit tests that play one side of the protocol
 * by hand (test_engine.c, test_pipeline.c): build a packet from a header and
 * a payload, copy and validate a packet that came out, and check its header
 * and its payload of 4-byte words bit for bit. Failures go through cmocka.
 */
#ifndef INA_TEST_WIRE_CHECK_H
#define INA_TEST_WIRE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "ina/pkt.h"
#include "ina/subblock.h"
#include "ina/wire.h"

#define WC_BUF_SIZE 2048 /* largest packet a wc_got holds */

/* One output packet, copied and decoded. */
struct wc_got {
	struct ina_hdr h;
	uint32_t len;
	uint8_t bytes[WC_BUF_SIZE]; /* header then payload, as sent */
	const uint8_t *payload;
	size_t payload_size;
	struct ina_peer peer;
	int fanout; /* 'dsts' was set */
	uint64_t dst_mask;
	struct ina_peer dsts[INA_MAX_WORLD];
};

/* Word 'i' of the big-endian words at 'p', in host order. */
uint32_t wc_word_at(const uint8_t *p, size_t i);

/* Host floats or int32s (both 4-byte words) to big-endian wire words. */
void wc_put_words(uint8_t *dst, const void *vals, size_t n);

/* A packet from 'pool' with header 'h', 'size' bytes of payload, from 'src'. */
struct ina_pkt *wc_mk_pkt(struct ina_pkt_pool *pool, const struct ina_peer *src,
			  const struct ina_hdr *h, const void *payload, size_t size);

/* A zeroed header with the fields that say whose packet it is. */
struct ina_hdr wc_hdr(uint8_t type, uint8_t encoding, uint32_t job_id, uint32_t epoch,
		      uint16_t rank, uint64_t token);

/* Validates 'pkt' (against 'job', or the packet alone if NULL) and copies it
 * into 'g'; the packet is left to the caller. */
void wc_decode(struct wc_got *g, const struct ina_pkt *pkt, const struct ina_job_params *job);

/* The header says whose packet it is, with status and reserved 0. */
void wc_assert_hdr(const struct wc_got *g, uint8_t type, uint8_t encoding, uint32_t job_id,
		   uint32_t epoch, uint16_t rank, uint64_t token);

/* The payload holds exactly the bits of 'vals' (floats or int32s). */
void wc_assert_words(const struct wc_got *g, const void *vals, size_t n);

/* A block packet carries all of 'block's elements, 'vals' (floats or int32s),
 * or, if 'vals' is NULL, none and no payload. */
void wc_assert_block(const struct wc_got *g, uint32_t tensor_len, uint16_t block_size,
		     uint32_t block, const void *vals);

/* A mask of sub-blocks 0..63 ('lo') and 64..127 ('hi'), bit i sub-block i. */
static inline struct ina_sub_mask
wc_mask(uint64_t lo, uint64_t hi)
{
	struct ina_sub_mask m = { { lo, hi } };

	return m;
}

/*
 * The payload of a block of 'n' floats 'x' cut by 'block_size' and 'sub_log'
 * (docs/PROTOCOL.md 2.7) with the sub-blocks of mask 'm': the mask, then the
 * present sub-blocks in 'encoding' (i32 at scale 0: integral values go as
 * they are). Returns its bytes.
 */
size_t wc_put_masked(uint8_t *dst, const float *x, uint32_t n, uint16_t block_size, uint8_t sub_log,
		     const struct ina_sub_mask *m, uint8_t encoding);

/* A block packet with sub-blocks: n_elems is the block's, and the payload is
 * exactly wc_put_masked() of 'want' (n_elems floats) with mask 'm'. */
void wc_assert_masked(const struct wc_got *g, const float *want, const struct ina_sub_mask *m,
		      uint8_t encoding);

/* Reads the masked payload of 'g' into 'out' (its n_elems 4-byte words,
 * wire words in host order; bf16 elements widened to binary32 bits), the
 * absent sub-blocks 0; returns the mask. */
struct ina_sub_mask wc_get_masked(const struct wc_got *g, uint32_t *out);

#endif
