/* SPDX-License-Identifier: MIT */
/*
 * Payload encodings: f32 (big-endian binary32) and i32 (big-endian int32
 * scaled by 2^s, as an integer-only switch ASIC sums). Converts between the
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
/* Host int32 accumulator to wire. */
void ina_enc_i32_store(void *dst, const int32_t *acc, size_t n);
/* Host int32 accumulator straight to floats, x = q * 2^-s. */
void ina_enc_i32_acc_get(float *dst, const int32_t *acc, size_t n, int scale);

/*
 * Error bounds (docs/PROTOCOL.md, "What a right sum is"). For N float32
 * addends summed in any order in float32, then compared against a
 * double-precision reference: |got - ref| <= ina_enc_f32_bound(N, sum|x_i|).
 * For i32 with scale s: |got - ref| <= ina_enc_i32_bound(N, s, |ref|).
 * A sum scaled by 1/N (average) adds one rounding: pass 'scaled' = 1.
 */
double ina_enc_f32_bound(unsigned n_addends, double sum_abs, int scaled);
double ina_enc_i32_bound(unsigned n_addends, int scale, double ref_abs, int scaled);

#endif
