/* SPDX-License-Identifier: MIT */
/*
 * The wire helpers of the hand-driven unit tests (wire_check.h): packets are
 * built with the project's own header encoder, and every packet that comes
 * out is validated by ina_wire_validate() before its fields are compared.
 * Payload words are compared as bits, so a float NaN or -0 is checked exactly.
 */
#include <endian.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ina/encoding.h"
#include "wire_check.h"

uint32_t
wc_word_at(const uint8_t *p, size_t i)
{
	uint32_t be;

	memcpy(&be, p + 4 * i, 4);
	return be32toh(be);
}

void
wc_put_words(uint8_t *dst, const void *vals, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t w;

		memcpy(&w, (const uint8_t *)vals + 4 * i, 4);
		w = htobe32(w);
		memcpy(dst + 4 * i, &w, 4);
	}
}

struct ina_pkt *
wc_mk_pkt(struct ina_pkt_pool *pool, const struct ina_peer *src, const struct ina_hdr *h,
	  const void *payload, size_t size)
{
	struct ina_pkt *pkt = ina_pkt_alloc(pool);

	assert_non_null(pkt);
	assert_true(INA_HDR_SIZE + size <= pkt->cap);
	ina_wire_encode_hdr(h, pkt->data);
	if (size)
		memcpy(pkt->data + INA_HDR_SIZE, payload, size);
	pkt->len = (uint32_t)(INA_HDR_SIZE + size);
	pkt->peer = *src;
	return pkt;
}

struct ina_hdr
wc_hdr(uint8_t type, uint8_t encoding, uint32_t job_id, uint32_t epoch, uint16_t rank,
       uint64_t token)
{
	struct ina_hdr h;

	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = type;
	h.encoding = encoding;
	h.job_id = job_id;
	h.epoch = epoch;
	h.rank = rank;
	h.token = token;
	return h;
}

void
wc_decode(struct wc_got *g, const struct ina_pkt *pkt, const struct ina_job_params *job)
{
	enum ina_wire_reason r;

	assert_non_null(pkt);
	memset(g, 0, sizeof(*g));
	r = ina_wire_validate(pkt->data, pkt->len, job, &g->h);
	if (r != INA_WIRE_OK)
		fail_msg("packet fails validation: %s", ina_wire_reason_name(r));
	assert_true(pkt->len <= sizeof(g->bytes));
	memcpy(g->bytes, pkt->data, pkt->len);
	g->len = pkt->len;
	g->payload = g->bytes + INA_HDR_SIZE;
	g->payload_size = pkt->len - INA_HDR_SIZE;
	g->peer = pkt->peer;
	g->dst_mask = pkt->dst_mask;
	if (pkt->dsts) {
		g->fanout = 1;
		for (int i = 0; i < INA_MAX_WORLD; i++)
			if (pkt->dst_mask >> i & 1)
				g->dsts[i] = pkt->dsts[i];
	}
}

void
wc_assert_hdr(const struct wc_got *g, uint8_t type, uint8_t encoding, uint32_t job_id,
	      uint32_t epoch, uint16_t rank, uint64_t token)
{
	assert_int_equal(g->h.version, INA_WIRE_VERSION);
	assert_int_equal(g->h.type, type);
	assert_int_equal(g->h.encoding, encoding);
	assert_int_equal(g->h.job_id, job_id);
	assert_int_equal(g->h.epoch, epoch);
	assert_int_equal(g->h.rank, rank);
	assert_true(g->h.token == token);
	/* A WAIT's status says whether the switch vouches for the ranks it
	 * names (INA_WAIT_LIVE); any other packet checked here has none. */
	if (type == INA_T_WAIT)
		assert_true(g->h.status == 0 || g->h.status == INA_WAIT_LIVE);
	else
		assert_int_equal(g->h.status, 0);
	if (type != INA_T_DATA)
		assert_int_equal(g->h.bound, 0);
}

void
wc_assert_words(const struct wc_got *g, const void *vals, size_t n)
{
	assert_int_equal(g->payload_size, n * 4);
	for (size_t i = 0; i < n; i++) {
		uint32_t want, have = wc_word_at(g->payload, i);
		float fw, fh;

		memcpy(&want, (const uint8_t *)vals + 4 * i, 4);
		if (want != have) {
			memcpy(&fw, &want, 4);
			memcpy(&fh, &have, 4);
			fail_msg("element %zu: got 0x%08x (%.9g / %d) want 0x%08x (%.9g / %d)", i,
				 have, (double)fh, (int32_t)have, want, (double)fw, (int32_t)want);
		}
	}
}

void
wc_assert_block(const struct wc_got *g, uint32_t tensor_len, uint16_t block_size, uint32_t block,
		const void *vals)
{
	if (vals) {
		uint16_t n = ina_wire_block_elems(tensor_len, block_size, block);

		assert_int_equal(g->h.n_elems, n);
		wc_assert_words(g, vals, n);
	} else {
		assert_int_equal(g->h.n_elems, 0);
		assert_int_equal(g->len, INA_HDR_SIZE);
	}
}

size_t
wc_put_masked(uint8_t *dst, const float *x, uint32_t n, uint16_t block_size, uint8_t sub_log,
	      const struct ina_sub_mask *m, uint8_t encoding)
{
	struct ina_sub_cut c = ina_sub_cut(block_size, sub_log, n);
	const struct ina_encoding_ops *enc = ina_encoding(encoding);

	assert_non_null(enc);
	assert_false(ina_sub_mask_empty(m));
	return ina_sub_encode(dst, x, m, &c, enc, 0);
}

void
wc_assert_masked(const struct wc_got *g, const float *want, const struct ina_sub_mask *m,
		 uint8_t encoding)
{
	uint8_t buf[WC_BUF_SIZE];
	size_t size;

	assert_int_not_equal(g->h.sub_log, 0);
	assert_int_not_equal(g->h.n_elems, 0);
	size = wc_put_masked(buf, want, g->h.n_elems, g->h.block_size, g->h.sub_log, m, encoding);
	assert_int_equal(g->payload_size, size);
	if (memcmp(g->payload, buf, size) != 0) {
		for (size_t i = 0; i < size; i++)
			if (g->payload[i] != buf[i])
				fail_msg("masked payload byte %zu: got 0x%02x want 0x%02x", i,
					 g->payload[i], buf[i]);
	}
}

struct ina_sub_mask
wc_get_masked(const struct wc_got *g, uint32_t *out)
{
	struct ina_sub_cut c = ina_sub_cut(g->h.block_size, g->h.sub_log, g->h.n_elems);
	const struct ina_encoding_ops *enc = ina_encoding(g->h.encoding);
	struct ina_sub_mask m;
	float tmp[INA_BLOCK_MAX];

	assert_non_null(enc);
	assert_true(g->h.n_elems <= INA_BLOCK_MAX);
	m = ina_sub_decode(tmp, g->payload, &c, enc, 0, 1);
	if (enc->elem_size == 4) {
		/* the raw words, not through a float (an int32 stays exact) */
		uint32_t from = 0, first, len, off = c.mask_bytes;

		memset(out, 0, sizeof(*out) * g->h.n_elems);
		while (ina_sub_next_run(&m, &c, &from, &first, &len)) {
			uint32_t start, n;

			ina_sub_run_elems(&c, first, len, &start, &n);
			for (uint32_t i = 0; i < n; i++)
				out[start + i] = wc_word_at(g->payload + off, i);
			off += 4 * n;
		}
	} else {
		memcpy(out, tmp, sizeof(*out) * g->h.n_elems);
	}
	return m;
}
