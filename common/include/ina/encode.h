/* SPDX-License-Identifier: MIT */
/*
 * Payload encodings: f32 (big-endian binary32), i32 (big-endian int32
 * scaled by 2^s, as an integer-only switch ASIC sums) and bf16 (big-endian
 * bfloat16, summed in binary32 by the switch). Converts between the
 * host's floats and wire bytes, sums wire values into an accumulator (what
 * the switch does), and states the error bounds docs/PROTOCOL.md derives.
 */
#ifndef INA_ENCODE_H
#define INA_ENCODE_H

#include <stddef.h>
#include <stdint.h>

/* Exponent of an all-zero block, and of a block with a NaN or infinity. */
#define INA_EXP_ZERO (-32768)
#define INA_EXP_NONFINITE 32767

/* f32: host floats to wire, wire to host floats, and acc += wire. */
void ina_enc_f32_put(void *dst, const float *src, size_t n);
void ina_enc_f32_get(float *dst, const void *src, size_t n);
void ina_enc_f32_add(float *acc, const void *src, size_t n);
/* acc += the wire values in 'buf', then the sums back into 'buf' in wire
 * order, in one pass: the packet that completes a block carries its result.
 * The same sums as ina_enc_f32_add() then ina_enc_f32_put(). */
void ina_enc_f32_add_put(float *acc, void *buf, size_t n);

/*
 * bf16: the top 16 bits of a binary32 (sign, 8 exponent bits, 7 fraction
 * bits), big-endian, 2 bytes an element. put rounds each float to nearest,
 * ties to even, once: a finite value whose magnitude rounds past the largest
 * bf16 (0x1.fep127, i.e. |x| >= 0x1.ffp127) becomes an infinity of its sign
 * (IEEE overflow), infinities stay infinities, every NaN stays a quiet NaN
 * with its sign (its top payload bits kept, the quiet bit set), and f32
 * subnormals round into the bf16 subnormals (same exponent range). get
 * widens exactly (every bf16 is a binary32). add is the switch's hot loop:
 * acc[i] += the exactly widened wire value, in binary32. The switch keeps its
 * sums in binary32 and encodes the result with put: one rounding.
 */
void ina_enc_bf16_put(void *dst, const float *src, size_t n);
void ina_enc_bf16_get(float *dst, const void *src, size_t n);
void ina_enc_bf16_add(float *acc, const void *src, size_t n);
/* ina_enc_bf16_add() then ina_enc_bf16_put() of the sums into 'buf'. */
void ina_enc_bf16_add_put(float *acc, void *buf, size_t n);
/* One float to its bf16 bit pattern (host order): the rounding put does. */
uint16_t ina_enc_bf16_round(float x);

/*
 * i32. A block's exponent e is the smallest integer with max|x| < 2^e
 * (INA_EXP_ZERO for an all-zero block, INA_EXP_NONFINITE if any value is not
 * finite). Given the largest exponent of all workers' copies of a block, each
 * worker scales it by 2^s with s = ina_enc_i32_scale(e, world), so every
 * |q| <= 2^(30 - ceil(log2 world)) and the sum of 'world' values fits int32.
 */
int ina_enc_i32_exp(const float *src, size_t n);
int ina_enc_i32_scale(int exp, unsigned world);
/* q = round-half-even(x * 2^s), big-endian. */
void ina_enc_i32_put(void *dst, const float *src, size_t n, int scale);
/* x = q * 2^-s, rounded once to float. */
void ina_enc_i32_get(float *dst, const void *src, size_t n, int scale);
/* acc = wire values; and acc += wire values with saturation: returns the
 * number of elements that saturated (0 when the sum is exact). */
void ina_enc_i32_load(int32_t *acc, const void *src, size_t n);
size_t ina_enc_i32_add(int32_t *acc, const void *src, size_t n);
/* ina_enc_i32_add() then ina_enc_i32_store() of the sums into 'buf', in
 * one pass; returns the number of elements that saturated. */
size_t ina_enc_i32_add_store(int32_t *acc, void *buf, size_t n);
/* Host int32 accumulator to wire. */
void ina_enc_i32_store(void *dst, const int32_t *acc, size_t n);
/* Host int32 accumulator straight to floats, x = q * 2^-s. */
void ina_enc_i32_acc_get(float *dst, const int32_t *acc, size_t n, int scale);

/*
 * The result filter (docs/PROTOCOL.md section 7.7). A DATA header's 'bound'
 * holds the bound in the block's units: ina_enc_bound() gives the raw 32 bits
 * for 'encoding': the binary32 bits of 'bound' (f32, bf16; an infinity is
 * capped at FLT_MAX), or ceil(bound * 2^scale) capped at INT32_MAX (i32,
 * 'scale' the block's ina_enc_i32_scale(): an integer q is under it exactly
 * when q 2^-scale is under 'bound'). 0, no filter, for bound <= 0 or
 * NaN. Raw bounds of one encoding order like the bounds they encode, so the
 * switch keeps the smallest one of a block's packets by comparing integers.
 * A sum goes down DEFERRED when it is not all zero and every |x| < bound (a
 * NaN never defers; a zero sum travels as an ordinary zero block).
 */
uint32_t ina_enc_bound(uint8_t encoding, float bound, int scale);
int ina_enc_f32_deferred(const float *sum, size_t n, float bound);
int ina_enc_i32_deferred(const int32_t *sum, size_t n, int32_t bound);
/* The binary32 a raw f32/bf16 bound holds. */
float ina_enc_bound_f32(uint32_t raw);

/*
 * Error bounds (docs/PROTOCOL.md, "What a right sum is"). For N float32
 * addends summed in any order in float32, then compared against a
 * double-precision reference: |got - ref| <= ina_enc_f32_bound(N, sum|x_i|).
 * For i32 with scale s: |got - ref| <= ina_enc_i32_bound(N, s, |ref|).
 * A sum scaled by 1/N (average) adds one rounding: pass 'scaled' = 1.
 */
double ina_enc_f32_bound(unsigned n_addends, double sum_abs, int scaled);
double ina_enc_i32_bound(unsigned n_addends, int scale, double ref_abs, int scaled);
/*
 * bf16: each worker rounds its x_i to bf16 once, the switch adds the exactly
 * widened values in binary32, and the result is rounded to bf16 once:
 * |got - ref| <= ina_enc_bf16_bound(N, sum|x_i|, |ref|, scaled), where ref is
 * the binary64 sum (or, scaled, the binary64 sum divided by N) of the
 * workers' original floats. To first order (2^-8 + (N-1) 2^-24) sum|x_i|
 * + 2^-8 |sum| (divided by N for an average).
 */
double ina_enc_bf16_bound(unsigned n_addends, double sum_abs, double ref_abs, int scaled);

#endif
