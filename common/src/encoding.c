/* SPDX-License-Identifier: MIT */
/*
 * The table of payload encodings (encoding.h): each row binds the loops of
 * encode.c to one uniform shape, so the switch pipeline, the host engine and
 * the checkers call through it instead of switching on the encoding.
 */
#include "ina/encoding.h"
#include "ina/encode.h"
#include "ina/wire.h"

static void
f32_encode(void *dst, const float *src, size_t n, int scale)
{
	(void)scale;
	ina_enc_f32_put(dst, src, n);
}

static void
f32_decode(float *dst, const void *src, size_t n, int scale)
{
	(void)scale;
	ina_enc_f32_get(dst, src, n);
}

static void
f32_load(void *acc, const void *src, size_t n)
{
	ina_enc_f32_get(acc, src, n);
}

static size_t
f32_add(void *acc, const void *src, size_t n)
{
	ina_enc_f32_add(acc, src, n);
	return 0;
}

static void
f32_store(void *dst, const void *acc, size_t n)
{
	ina_enc_f32_put(dst, acc, n);
}

static size_t
f32_add_store(void *acc, void *buf, size_t n)
{
	ina_enc_f32_add_put(acc, buf, n);
	return 0;
}

/* f32 and bf16 slots both hold binary32 sums. */
static int
float_deferred(const void *acc, size_t n, uint32_t raw_bound)
{
	return ina_enc_f32_deferred(acc, n, ina_enc_bound_f32(raw_bound));
}

static double
f32_bound(unsigned n_addends, int scale, double sum_abs, double ref_abs, int averaged)
{
	(void)scale;
	(void)ref_abs;
	return ina_enc_f32_bound(n_addends, sum_abs, averaged);
}

static void
i32_encode(void *dst, const float *src, size_t n, int scale)
{
	ina_enc_i32_put(dst, src, n, scale);
}

static void
i32_decode(float *dst, const void *src, size_t n, int scale)
{
	ina_enc_i32_get(dst, src, n, scale);
}

static void
i32_load(void *acc, const void *src, size_t n)
{
	ina_enc_i32_load(acc, src, n);
}

static size_t
i32_add(void *acc, const void *src, size_t n)
{
	return ina_enc_i32_add(acc, src, n);
}

static void
i32_store(void *dst, const void *acc, size_t n)
{
	ina_enc_i32_store(dst, acc, n);
}

static size_t
i32_add_store(void *acc, void *buf, size_t n)
{
	return ina_enc_i32_add_store(acc, buf, n);
}

static int
i32_deferred(const void *acc, size_t n, uint32_t raw_bound)
{
	return ina_enc_i32_deferred(acc, n, (int32_t)raw_bound);
}

static double
i32_bound(unsigned n_addends, int scale, double sum_abs, double ref_abs, int averaged)
{
	(void)sum_abs;
	return ina_enc_i32_bound(n_addends, scale, ref_abs, averaged);
}

static void
bf16_encode(void *dst, const float *src, size_t n, int scale)
{
	(void)scale;
	ina_enc_bf16_put(dst, src, n);
}

static void
bf16_decode(float *dst, const void *src, size_t n, int scale)
{
	(void)scale;
	ina_enc_bf16_get(dst, src, n);
}

/* bf16 widens exactly: the slot sums in binary32. */
static void
bf16_load(void *acc, const void *src, size_t n)
{
	ina_enc_bf16_get(acc, src, n);
}

static size_t
bf16_add(void *acc, const void *src, size_t n)
{
	ina_enc_bf16_add(acc, src, n);
	return 0;
}

static void
bf16_store(void *dst, const void *acc, size_t n)
{
	ina_enc_bf16_put(dst, acc, n);
}

static size_t
bf16_add_store(void *acc, void *buf, size_t n)
{
	ina_enc_bf16_add_put(acc, buf, n);
	return 0;
}

static double
bf16_bound(unsigned n_addends, int scale, double sum_abs, double ref_abs, int averaged)
{
	(void)scale;
	return ina_enc_bf16_bound(n_addends, sum_abs, ref_abs, averaged);
}

const struct ina_encoding_ops ina_encoding_rows[INA_ENC_MAX + 1] = {
	[INA_ENC_F32] = {
		.id = INA_ENC_F32, .name = "f32", .elem_size = 4, .scaled = 0,
		.encode = f32_encode, .decode = f32_decode,
		.load = f32_load, .add = f32_add, .store = f32_store,
		.add_store = f32_add_store,
		.deferred = float_deferred, .bound = f32_bound,
	},
	[INA_ENC_I32] = {
		.id = INA_ENC_I32, .name = "i32", .elem_size = 4, .scaled = 1,
		.encode = i32_encode, .decode = i32_decode,
		.load = i32_load, .add = i32_add, .store = i32_store,
		.add_store = i32_add_store,
		.deferred = i32_deferred, .bound = i32_bound,
	},
	[INA_ENC_BF16] = {
		.id = INA_ENC_BF16, .name = "bf16", .elem_size = 2, .scaled = 0,
		.encode = bf16_encode, .decode = bf16_decode,
		.load = bf16_load, .add = bf16_add, .store = bf16_store,
		.add_store = bf16_add_store,
		.deferred = float_deferred, .bound = bf16_bound,
	},
};
/* A new encoding adds its row above (the array's size is INA_ENC_MAX + 1). */
_Static_assert(INA_ENC_BF16 == INA_ENC_MAX, "a row of the encoding table is missing");
