/* SPDX-License-Identifier: MIT */
/*
 * One table of the payload encodings (f32, i32, bf16): for each, what an
 * element weighs on the wire and the operations every side of ina does with
 * it. A new encoding is one row here (common/src/encoding.c) plus its loops
 * in encode.c; no caller switches on the encoding itself. The loops and the
 * error bounds they obey are documented in encode.h.
 */
#ifndef INA_ENCODING_H
#define INA_ENCODING_H

#include <stddef.h>
#include <stdint.h>

#include "ina/wire.h"

struct ina_encoding_ops {
	uint8_t id;	  /* enum ina_encoding (wire.h) */
	const char *name; /* "f32", "i32", "bf16" */
	size_t elem_size; /* bytes an element on the wire */
	/* 1 when a block's values are integers scaled by 2^s and the workers
	 * agree on s first through the block exponents (i32); 0 otherwise. */
	int scaled;
	/* Host: floats to wire values and back; 'scale' is the block's
	 * ina_enc_i32_scale() for a scaled encoding and ignored otherwise. */
	void (*encode)(void *dst, const float *src, size_t n, int scale);
	void (*decode)(float *dst, const void *src, size_t n, int scale);
	/* Switch: a slot's accumulator is n 32-bit words (binary32 for f32 and
	 * bf16, int32 for i32). load sets it from the first packet, add sums the
	 * next ones in and returns the number of elements that saturated (0 when
	 * the sum is exact), store writes the result's wire values (for bf16, the
	 * one rounding of the binary32 sum). */
	void (*load)(void *acc, const void *src, size_t n);
	size_t (*add)(void *acc, const void *src, size_t n);
	void (*store)(void *dst, const void *acc, size_t n);
	/* add, then store of the sums into the same wire buffer, in one pass
	 * where the encoding can (the block's completing packet becomes its
	 * result in place); returns what add returns. */
	size_t (*add_store)(void *acc, void *buf, size_t n);
	/* The result filter on a finished accumulator against the raw bound of
	 * the block's packets (encode.h, ina_enc_bound()). */
	int (*deferred)(const void *acc, size_t n, uint32_t raw_bound);
	/* The error bound of one summed element against the binary64 reference
	 * (encode.h): n addends, the block's scale (scaled encodings), sum |x_i|,
	 * |reference|, and whether the sum was divided by n. */
	double (*bound)(unsigned n_addends, int scale, double sum_abs, double ref_abs,
			int averaged);
};

/* The table, indexed by enum ina_encoding (row 0 unused): read it through
 * ina_encoding(). */
extern const struct ina_encoding_ops ina_encoding_rows[INA_ENC_MAX + 1];

/* The row of 'encoding', NULL if it is not one. Inline: every packet the
 * switch validates asks. */
static inline const struct ina_encoding_ops *
ina_encoding(uint8_t encoding)
{
	if (encoding == 0 || encoding > INA_ENC_MAX)
		return NULL;
	return &ina_encoding_rows[encoding];
}

#endif
