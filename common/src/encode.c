/* SPDX-License-Identifier: MIT */
/*
 * Payload encodings of encode.h: big-endian binary32 (f32) and big-endian
 * int32 scaled by 2^s (i32). The switch's hot loops (ina_enc_f32_add,
 * ina_enc_i32_add) and the host's conversions live here, next to the error
 * bounds that tests and docs/PROTOCOL.md use to decide what a right sum is.
 */
#include "ina/encode.h"
#include "ina/wire.h"

#include <float.h>
#include <math.h>
#include <string.h>

/*
 * Vectorisation. At -O2 gcc 12 only vectorises a loop whose trip count is a
 * multiple of the vector length (the "very cheap" cost model allows no
 * scalar epilogue), and baseline x86-64 (SSE2) has no byte shuffle for
 * bswap. So every loop runs over chunks of INA_ENC_CHUNK elements, with a
 * scalar tail, and the byte-swapping loops are cloned for AVX2 and SSSE3:
 * the dynamic loader picks a clone once, when the program starts. Wire
 * pointers may be unaligned: they are only read and written with memcpy.
 * Host and wire buffers must not overlap (the restrict qualifiers).
 */
#define INA_ENC_CHUNK 16

/* Not with clang: clang 14 (Debian 12's, which the fuzz build uses) names the
 * dispatcher '<function>.ifunc' in C, so calls from other files do not link. */
#if defined(__x86_64__) && defined(__has_attribute) && !defined(__clang__)
#if __has_attribute(target_clones)
#define INA_ENC_CLONES __attribute__((target_clones("avx2", "ssse3", "default")))
#endif
#endif
#ifndef INA_ENC_CLONES
#define INA_ENC_CLONES
#endif

/*
 * The switch's loops and the byte-swapping copies, written out for AVX2: 32
 * elements an iteration, the byte swap one shuffle, the saturation count
 * kept in a vector until the end. Each exported function checks the CPU
 * (one load and test) and otherwise runs its portable loop (cloned as
 * above). The sums are the same, element by element, either way.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define INA_ENC_AVX2 1
#define AVX2_FN __attribute__((target("avx2")))

static inline int
cpu_avx2(void)
{
	return __builtin_cpu_supports("avx2");
}
#endif

/* binary32 and binary64 unit roundoff, and half the smallest binary32
 * subnormal (the absolute error of a result rounded into the subnormals). */
#define U32 0x1p-24
#define U64 0x1p-53
#define ETA32 0x1p-150
/* bf16 unit roundoff (8 significand bits), and half its smallest subnormal. */
#define UB16 0x1p-8
#define ETAB16 0x1p-134

static inline uint32_t
load_be32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return __builtin_bswap32(v);
}

static inline void
store_be32(uint8_t *p, uint32_t v)
{
	v = __builtin_bswap32(v);
	memcpy(p, &v, sizeof(v));
}

static inline float
load_f32(const uint8_t *p)
{
	uint32_t v = load_be32(p);
	float f;

	memcpy(&f, &v, sizeof(f));
	return f;
}

static inline void
store_f32(uint8_t *p, float f)
{
	uint32_t v;

	memcpy(&v, &f, sizeof(v));
	store_be32(p, v);
}

/*
 * acc + b with int32 saturation, *sat = 1 when it saturated. The same as
 * __builtin_add_overflow plus a clamp, but in plain 32-bit operations: gcc
 * does not vectorise __builtin_add_overflow. The sum overflows only when both
 * operands have the sign the wrapped sum lacks, and it then saturates toward
 * the sign of 'a'.
 */
static inline int32_t
add_sat(int32_t a, int32_t b, uint32_t *sat)
{
	uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
	uint32_t r = ua + ub;
	uint32_t ovf = ((ua ^ r) & (ub ^ r)) >> 31;
	uint32_t lim = (ua >> 31) + 0x7fffffffu; /* INT32_MAX or INT32_MIN */

	*sat += ovf;
	return (int32_t)(ovf ? lim : r);
}

#ifdef INA_ENC_AVX2
/* Reverses the bytes of every 32-bit element. */
AVX2_FN static inline __m256i
bswap32_x8(__m256i v)
{
	const __m256i m = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12, 3,
					   2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);

	return _mm256_shuffle_epi8(v, m);
}

/* dst = src with every 32-bit element byte-swapped: wire to host and back
 * for f32 and i32 alike. */
AVX2_FN static void
swap32_avx2(void *restrict dst, const void *restrict src, size_t n)
{
	const uint8_t *s = src;
	uint8_t *d = dst;
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		const __m256i *x = (const __m256i *)(const void *)(s + 4 * i);
		__m256i *y = (__m256i *)(void *)(d + 4 * i);
		__m256i v0 = _mm256_loadu_si256(x), v1 = _mm256_loadu_si256(x + 1);
		__m256i v2 = _mm256_loadu_si256(x + 2), v3 = _mm256_loadu_si256(x + 3);

		_mm256_storeu_si256(y, bswap32_x8(v0));
		_mm256_storeu_si256(y + 1, bswap32_x8(v1));
		_mm256_storeu_si256(y + 2, bswap32_x8(v2));
		_mm256_storeu_si256(y + 3, bswap32_x8(v3));
	}
	for (; i + 8 <= n; i += 8) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(s + 4 * i));

		_mm256_storeu_si256((__m256i *)(void *)(d + 4 * i), bswap32_x8(v));
	}
	for (; i < n; i++) {
		uint32_t v;

		memcpy(&v, s + 4 * i, sizeof(v));
		v = __builtin_bswap32(v);
		memcpy(d + 4 * i, &v, sizeof(v));
	}
}

/* 8 elements of acc += wire values at 'src'; with 'dst' (NULL: none, or
 * 'src' itself), the sums go there in wire order too. */
AVX2_FN static inline void
f32_add8_avx2(float *acc, const uint8_t *src, uint8_t *dst)
{
	__m256i x = bswap32_x8(_mm256_loadu_si256((const __m256i *)(const void *)src));
	__m256 a = _mm256_add_ps(_mm256_loadu_ps(acc), _mm256_castsi256_ps(x));

	_mm256_storeu_ps(acc, a);
	if (dst)
		_mm256_storeu_si256((__m256i *)(void *)dst, bswap32_x8(_mm256_castps_si256(a)));
}

AVX2_FN __attribute__((always_inline)) static inline void
f32_add_avx2(float *acc, const uint8_t *src, uint8_t *dst, size_t n)
{
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		f32_add8_avx2(acc + i, src + 4 * i, dst ? dst + 4 * i : NULL);
		f32_add8_avx2(acc + i + 8, src + 4 * i + 32, dst ? dst + 4 * i + 32 : NULL);
		f32_add8_avx2(acc + i + 16, src + 4 * i + 64, dst ? dst + 4 * i + 64 : NULL);
		f32_add8_avx2(acc + i + 24, src + 4 * i + 96, dst ? dst + 4 * i + 96 : NULL);
	}
	for (; i + 8 <= n; i += 8)
		f32_add8_avx2(acc + i, src + 4 * i, dst ? dst + 4 * i : NULL);
	for (; i < n; i++) {
		acc[i] += load_f32(src + 4 * i);
		if (dst)
			store_f32(dst + 4 * i, acc[i]);
	}
}

/*
 * 8 elements of acc += wire values with int32 saturation (add_sat(), lane
 * by lane), given as a = acc and x = the wire values in host order; '*nb'
 * counts the saturated ones (each lane's count is minus its sum of all-ones
 * masks). With 'dst', the sums go there in wire order too.
 */
AVX2_FN static inline void
i32_sat8_avx2(int32_t *acc, __m256i a, __m256i x, uint8_t *dst, __m256i *nb)
{
	__m256i r = _mm256_add_epi32(a, x);
	/* Sign bit set where both operands have the sign the sum lacks. */
	__m256i ovf = _mm256_and_si256(_mm256_xor_si256(a, r), _mm256_xor_si256(x, r));
	__m256i lim = _mm256_add_epi32(_mm256_srli_epi32(a, 31), _mm256_set1_epi32(INT32_MAX));

	r = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(lim),
						 _mm256_castsi256_ps(ovf)));
	*nb = _mm256_sub_epi32(*nb, _mm256_srai_epi32(ovf, 31));
	_mm256_storeu_si256((__m256i *)(void *)acc, r);
	if (dst)
		_mm256_storeu_si256((__m256i *)(void *)dst, bswap32_x8(r));
}

AVX2_FN static inline __m256i
load_be8_avx2(const uint8_t *src)
{
	return bswap32_x8(_mm256_loadu_si256((const __m256i *)(const void *)src));
}

AVX2_FN static inline __m256i
load8_avx2(const int32_t *acc)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)acc);
}

/*
 * 32 elements: the wrapping sums and one test of their overflow bits; only
 * a group in which some element overflowed (rare: the scale leaves the sum
 * headroom) goes through the saturating blend and the count.
 */
AVX2_FN static inline void
i32_add32_avx2(int32_t *acc, const uint8_t *src, uint8_t *dst, __m256i *nb)
{
	__m256i a0 = load8_avx2(acc), a1 = load8_avx2(acc + 8);
	__m256i a2 = load8_avx2(acc + 16), a3 = load8_avx2(acc + 24);
	__m256i x0 = load_be8_avx2(src), x1 = load_be8_avx2(src + 32);
	__m256i x2 = load_be8_avx2(src + 64), x3 = load_be8_avx2(src + 96);
	__m256i r0 = _mm256_add_epi32(a0, x0), r1 = _mm256_add_epi32(a1, x1);
	__m256i r2 = _mm256_add_epi32(a2, x2), r3 = _mm256_add_epi32(a3, x3);
	__m256i o0 = _mm256_and_si256(_mm256_xor_si256(a0, r0), _mm256_xor_si256(x0, r0));
	__m256i o1 = _mm256_and_si256(_mm256_xor_si256(a1, r1), _mm256_xor_si256(x1, r1));
	__m256i o2 = _mm256_and_si256(_mm256_xor_si256(a2, r2), _mm256_xor_si256(x2, r2));
	__m256i o3 = _mm256_and_si256(_mm256_xor_si256(a3, r3), _mm256_xor_si256(x3, r3));
	__m256i any = _mm256_or_si256(_mm256_or_si256(o0, o1), _mm256_or_si256(o2, o3));

	if (__builtin_expect(_mm256_movemask_ps(_mm256_castsi256_ps(any)) != 0, 0)) {
		/* (nothing is stored yet: the operands are read again) */
		for (int k = 0; k < 4; k++)
			i32_sat8_avx2(acc + 8 * k, load8_avx2(acc + 8 * k),
				      load_be8_avx2(src + 32 * k), dst ? dst + 32 * k : NULL, nb);
		return;
	}
	_mm256_storeu_si256((__m256i *)(void *)acc, r0);
	_mm256_storeu_si256((__m256i *)(void *)(acc + 8), r1);
	_mm256_storeu_si256((__m256i *)(void *)(acc + 16), r2);
	_mm256_storeu_si256((__m256i *)(void *)(acc + 24), r3);
	if (dst) {
		_mm256_storeu_si256((__m256i *)(void *)dst, bswap32_x8(r0));
		_mm256_storeu_si256((__m256i *)(void *)(dst + 32), bswap32_x8(r1));
		_mm256_storeu_si256((__m256i *)(void *)(dst + 64), bswap32_x8(r2));
		_mm256_storeu_si256((__m256i *)(void *)(dst + 96), bswap32_x8(r3));
	}
}

AVX2_FN __attribute__((always_inline)) static inline size_t
i32_add_avx2(int32_t *acc, const uint8_t *src, uint8_t *dst, size_t n)
{
	__m256i nb = _mm256_setzero_si256();
	uint32_t lanes[8], nb_sat = 0;
	size_t i = 0;

	for (; i + 32 <= n; i += 32)
		i32_add32_avx2(acc + i, src + 4 * i, dst ? dst + 4 * i : NULL, &nb);
	for (; i + 8 <= n; i += 8)
		i32_sat8_avx2(acc + i, load8_avx2(acc + i), load_be8_avx2(src + 4 * i),
			      dst ? dst + 4 * i : NULL, &nb);
	_mm256_storeu_si256((__m256i *)(void *)lanes, nb);
	for (int k = 0; k < 8; k++)
		nb_sat += lanes[k];
	for (; i < n; i++) {
		acc[i] = add_sat(acc[i], (int32_t)load_be32(src + 4 * i), &nb_sat);
		if (dst)
			store_be32(dst + 4 * i, (uint32_t)acc[i]);
	}
	return nb_sat;
}

/* The four uses, each its own function (the branches on 'dst' fold away). */
AVX2_FN static void
f32_add_only_avx2(float *restrict acc, const uint8_t *restrict src, size_t n)
{
	f32_add_avx2(acc, src, NULL, n);
}

AVX2_FN static void
f32_add_put_avx2(float *restrict acc, uint8_t *restrict buf, size_t n)
{
	f32_add_avx2(acc, buf, buf, n);
}

AVX2_FN static size_t
i32_add_only_avx2(int32_t *restrict acc, const uint8_t *restrict src, size_t n)
{
	return i32_add_avx2(acc, src, NULL, n);
}

AVX2_FN static size_t
i32_add_store_avx2(int32_t *restrict acc, uint8_t *restrict buf, size_t n)
{
	return i32_add_avx2(acc, buf, buf, n);
}
#endif

INA_ENC_CLONES static void
f32_put_generic(void *restrict dst, const float *restrict src, size_t n)
{
	uint8_t *d = dst;
	size_t i = 0, j;

	for (; i + INA_ENC_CHUNK <= n; i += INA_ENC_CHUNK)
		for (j = i; j < i + INA_ENC_CHUNK; j++)
			store_f32(d + 4 * j, src[j]);
	for (; i < n; i++)
		store_f32(d + 4 * i, src[i]);
}

void
ina_enc_f32_put(void *restrict dst, const float *restrict src, size_t n)
{
#ifdef INA_ENC_AVX2
	if (cpu_avx2()) {
		swap32_avx2(dst, src, n);
		return;
	}
#endif
	f32_put_generic(dst, src, n);
}

INA_ENC_CLONES static void
f32_get_generic(float *restrict dst, const void *restrict src, size_t n)
{
	const uint8_t *s = src;
	size_t i = 0, j;

	for (; i + INA_ENC_CHUNK <= n; i += INA_ENC_CHUNK)
		for (j = i; j < i + INA_ENC_CHUNK; j++)
			dst[j] = load_f32(s + 4 * j);
	for (; i < n; i++)
		dst[i] = load_f32(s + 4 * i);
}

void
ina_enc_f32_get(float *restrict dst, const void *restrict src, size_t n)
{
#ifdef INA_ENC_AVX2
	if (cpu_avx2()) {
		swap32_avx2(dst, src, n);
		return;
	}
#endif
	f32_get_generic(dst, src, n);
}

INA_ENC_CLONES static void
f32_add_generic(float *restrict acc, const void *restrict src, size_t n)
{
	const uint8_t *s = src;
	size_t i = 0, j;

	for (; i + INA_ENC_CHUNK <= n; i += INA_ENC_CHUNK)
		for (j = i; j < i + INA_ENC_CHUNK; j++)
			acc[j] += load_f32(s + 4 * j);
	for (; i < n; i++)
		acc[i] += load_f32(s + 4 * i);
}

/* The f32 switch's hot loop. */
void
ina_enc_f32_add(float *restrict acc, const void *restrict src, size_t n)
{
#ifdef INA_ENC_AVX2
	if (cpu_avx2()) {
		f32_add_only_avx2(acc, src, n);
		return;
	}
#endif
	f32_add_generic(acc, src, n);
}

/* The completing packet: its payload becomes the result, in one pass. */
void
ina_enc_f32_add_put(float *restrict acc, void *restrict buf, size_t n)
{
#ifdef INA_ENC_AVX2
	if (cpu_avx2()) {
		f32_add_put_avx2(acc, buf, n);
		return;
	}
#endif
	f32_add_generic(acc, buf, n);
	f32_put_generic(buf, acc, n);
}

static inline uint16_t
load_be16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return __builtin_bswap16(v);
}

static inline void
store_be16(uint8_t *p, uint16_t v)
{
	v = __builtin_bswap16(v);
	memcpy(p, &v, sizeof(v));
}

/*
 * binary32 to bf16, round to nearest, ties to even, in integer operations
 * (branch-free, so the chunked loops vectorise). Adding 0x7fff plus the
 * lowest kept bit to the binary32 pattern carries into bit 16 exactly when
 * the dropped half is above the tie, or at the tie with an odd kept part;
 * a carry out of the fraction steps the exponent, which is right, and from
 * the largest finite bf16 up it gives the infinity's pattern (overflow).
 * Infinities have a zero low half and stay. A NaN could round to an
 * infinity (or, from 0xffffffff, wrap), so it keeps its top bits and gets
 * the quiet bit instead. Subnormals need nothing: the bf16 subnormals are
 * the binary32 ones with the low 16 bits dropped, and the spacing is even.
 */
static inline uint16_t
bf16_round(float x)
{
	uint32_t v, r, nan;

	memcpy(&v, &x, sizeof(v));
	r = (v + 0x7fffu + ((v >> 16) & 1u)) >> 16;
	nan = (v >> 16) | 0x0040u;
	return (uint16_t)((v & 0x7fffffffu) > 0x7f800000u ? nan : r);
}

static inline float
bf16_widen(uint16_t b)
{
	uint32_t v = (uint32_t)b << 16;
	float f;

	memcpy(&f, &v, sizeof(f));
	return f;
}

uint16_t
ina_enc_bf16_round(float x)
{
	return bf16_round(x);
}

INA_ENC_CLONES void
ina_enc_bf16_put(void *restrict dst, const float *restrict src, size_t n)
{
	uint8_t *d = dst;
	size_t i = 0, j;

	for (; i + INA_ENC_CHUNK <= n; i += INA_ENC_CHUNK)
		for (j = i; j < i + INA_ENC_CHUNK; j++)
			store_be16(d + 2 * j, bf16_round(src[j]));
	for (; i < n; i++)
		store_be16(d + 2 * i, bf16_round(src[i]));
}

INA_ENC_CLONES void
ina_enc_bf16_get(float *restrict dst, const void *restrict src, size_t n)
{
	const uint8_t *s = src;
	size_t i = 0, j;

	for (; i + INA_ENC_CHUNK <= n; i += INA_ENC_CHUNK)
		for (j = i; j < i + INA_ENC_CHUNK; j++)
			dst[j] = bf16_widen(load_be16(s + 2 * j));
	for (; i < n; i++)
		dst[i] = bf16_widen(load_be16(s + 2 * i));
}

/* The bf16 switch's hot loop: exact widening, one binary32 addition. */
INA_ENC_CLONES void
ina_enc_bf16_add(float *restrict acc, const void *restrict src, size_t n)
{
	const uint8_t *s = src;
	size_t i = 0, j;

	for (; i + INA_ENC_CHUNK <= n; i += INA_ENC_CHUNK)
		for (j = i; j < i + INA_ENC_CHUNK; j++)
			acc[j] += bf16_widen(load_be16(s + 2 * j));
	for (; i < n; i++)
		acc[i] += bf16_widen(load_be16(s + 2 * i));
}

/* The completing bf16 packet: the sums, rounded once, back into its payload. */
void
ina_enc_bf16_add_put(float *restrict acc, void *restrict buf, size_t n)
{
	ina_enc_bf16_add(acc, buf, n);
	ina_enc_bf16_put(buf, acc, n);
}

/*
 * The largest |x| is the largest of the bit patterns without their sign:
 * for non-negative floats the order of the bits is the order of the values,
 * and every NaN or infinity lies at or above 0x7f800000.
 */
int
ina_enc_i32_exp(const float *src, size_t n)
{
	uint32_t max_bits = 0;
	float max_abs;
	size_t i;
	int e;

	for (i = 0; i < n; i++) {
		uint32_t v;

		memcpy(&v, &src[i], sizeof(v));
		v &= 0x7fffffffu;
		max_bits = v > max_bits ? v : max_bits;
	}
	if (max_bits >= 0x7f800000u)
		return INA_EXP_NONFINITE;
	if (max_bits == 0)
		return INA_EXP_ZERO;
	memcpy(&max_abs, &max_bits, sizeof(max_abs));
	/* max_abs = f * 2^e with f in [0.5, 1): max_abs < 2^e <= 2 * max_abs. */
	frexpf(max_abs, &e);
	return e;
}

/*
 * s = 30 - ceil(log2 world) - exp, for exp in INA_EXP_MIN..INA_EXP_MAX (the
 * wire refuses any other: bad_exp). The two marks stand for an exponent of
 * that range: INA_EXP_ZERO for INA_EXP_FLOAT_MIN (any scale suits an
 * all-zero block; it is what one announces), INA_EXP_NONFINITE for
 * INA_EXP_MAX; world 0 counts as 1. Any int16 gives
 * a finite int here; pow2() bounds the factor.
 */
int
ina_enc_i32_scale(int exp, unsigned world)
{
	int log2_world = world <= 1 ? 0 : 32 - __builtin_clz(world - 1);

	if (exp == INA_EXP_ZERO)
		exp = INA_EXP_FLOAT_MIN;
	else if (exp == INA_EXP_NONFINITE)
		exp = INA_EXP_MAX;
	return 30 - log2_world - exp;
}

/*
 * 2^s as a double. Outside [-1074, 1023], 2^s is not a finite non-zero
 * double; the clamped factor gives the same int32 or float results, since
 * there every non-zero value saturates or rounds to zero either way.
 */
static double
pow2(int s)
{
	if (s < -1074)
		s = -1074;
	if (s > 1023)
		s = 1023;
	return ldexp(1.0, s);
}

/*
 * x * 2^s is exact in a double (24 bits times a power of two, far from the
 * double's limits for any scale a block needs), so rint() rounds it once,
 * half to even (the default rounding mode). Values beyond the int32 range
 * saturate, and NaN becomes 0: a block with a NaN has INA_EXP_NONFINITE,
 * and what to do with it is the caller's choice.
 */
static inline int32_t
quantise(float x, double f)
{
	double y = (double)x * f;

	if (y != y)
		y = 0;
	else if (y > INT32_MAX)
		y = INT32_MAX;
	else if (y < INT32_MIN)
		y = INT32_MIN;
	return (int32_t)rint(y);
}

INA_ENC_CLONES void
ina_enc_i32_put(void *restrict dst, const float *restrict src, size_t n, int scale)
{
	double f = pow2(scale);
	uint8_t *d = dst;
	size_t i = 0, j;

	for (; i + INA_ENC_CHUNK <= n; i += INA_ENC_CHUNK)
		for (j = i; j < i + INA_ENC_CHUNK; j++)
			store_be32(d + 4 * j, (uint32_t)quantise(src[j], f));
	for (; i < n; i++)
		store_be32(d + 4 * i, (uint32_t)quantise(src[i], f));
}

/* q * 2^-s is exact in a double, so the conversion to float rounds once. */
INA_ENC_CLONES void
ina_enc_i32_get(float *restrict dst, const void *restrict src, size_t n, int scale)
{
	double f = pow2(-scale);
	const uint8_t *s = src;
	size_t i = 0, j;

	for (; i + INA_ENC_CHUNK <= n; i += INA_ENC_CHUNK)
		for (j = i; j < i + INA_ENC_CHUNK; j++)
			dst[j] = (float)((double)(int32_t)load_be32(s + 4 * j) * f);
	for (; i < n; i++)
		dst[i] = (float)((double)(int32_t)load_be32(s + 4 * i) * f);
}

INA_ENC_CLONES static void
i32_load_generic(int32_t *restrict acc, const void *restrict src, size_t n)
{
	const uint8_t *s = src;
	size_t i = 0, j;

	for (; i + INA_ENC_CHUNK <= n; i += INA_ENC_CHUNK)
		for (j = i; j < i + INA_ENC_CHUNK; j++)
			acc[j] = (int32_t)load_be32(s + 4 * j);
	for (; i < n; i++)
		acc[i] = (int32_t)load_be32(s + 4 * i);
}

void
ina_enc_i32_load(int32_t *restrict acc, const void *restrict src, size_t n)
{
#ifdef INA_ENC_AVX2
	if (cpu_avx2()) {
		swap32_avx2(acc, src, n);
		return;
	}
#endif
	i32_load_generic(acc, src, n);
}

INA_ENC_CLONES static size_t
i32_add_generic(int32_t *restrict acc, const void *restrict src, size_t n)
{
	const uint8_t *s = src;
	uint32_t nb_sat = 0;
	size_t i = 0, j;

	for (; i + INA_ENC_CHUNK <= n; i += INA_ENC_CHUNK)
		for (j = i; j < i + INA_ENC_CHUNK; j++)
			acc[j] = add_sat(acc[j], (int32_t)load_be32(s + 4 * j), &nb_sat);
	for (; i < n; i++)
		acc[i] = add_sat(acc[i], (int32_t)load_be32(s + 4 * i), &nb_sat);
	/* A 32-bit count: a packet carries far fewer than 2^32 elements. */
	return nb_sat;
}

/* The i32 switch's hot loop. */
size_t
ina_enc_i32_add(int32_t *restrict acc, const void *restrict src, size_t n)
{
#ifdef INA_ENC_AVX2
	if (cpu_avx2())
		return i32_add_only_avx2(acc, src, n);
#endif
	return i32_add_generic(acc, src, n);
}

INA_ENC_CLONES static void
i32_store_generic(void *restrict dst, const int32_t *restrict acc, size_t n)
{
	uint8_t *d = dst;
	size_t i = 0, j;

	for (; i + INA_ENC_CHUNK <= n; i += INA_ENC_CHUNK)
		for (j = i; j < i + INA_ENC_CHUNK; j++)
			store_be32(d + 4 * j, (uint32_t)acc[j]);
	for (; i < n; i++)
		store_be32(d + 4 * i, (uint32_t)acc[i]);
}

void
ina_enc_i32_store(void *restrict dst, const int32_t *restrict acc, size_t n)
{
#ifdef INA_ENC_AVX2
	if (cpu_avx2()) {
		swap32_avx2(dst, acc, n);
		return;
	}
#endif
	i32_store_generic(dst, acc, n);
}

size_t
ina_enc_i32_add_store(int32_t *restrict acc, void *restrict buf, size_t n)
{
	size_t nb_sat;

#ifdef INA_ENC_AVX2
	if (cpu_avx2())
		return i32_add_store_avx2(acc, buf, n);
#endif
	nb_sat = i32_add_generic(acc, buf, n);
	i32_store_generic(buf, acc, n);
	return nb_sat;
}

INA_ENC_CLONES void
ina_enc_i32_acc_get(float *restrict dst, const int32_t *restrict acc, size_t n, int scale)
{
	double f = pow2(-scale);
	size_t i = 0, j;

	for (; i + INA_ENC_CHUNK <= n; i += INA_ENC_CHUNK)
		for (j = i; j < i + INA_ENC_CHUNK; j++)
			dst[j] = (float)((double)acc[j] * f);
	for (; i < n; i++)
		dst[i] = (float)((double)acc[i] * f);
}

/* gamma_k = k u / (1 - k u) (Higham, Lemma 3.1); infinite once k u >= 1. */
static double
gamma_k(double k, double u)
{
	double ku = k * u;

	return ku < 1 ? ku / (1 - ku) : INFINITY;
}

/*
 * The bounds (docs/PROTOCOL.md, "What a right sum is").
 *
 * Notation: N addends x_1..x_N (binary32), S = sum x_i exactly,
 * A = sum |x_i|. u = 2^-24 (binary32 unit roundoff), v = 2^-53 (binary64),
 * g_k = k u / (1 - k u) and G_k = k v / (1 - k v). eta = 2^-150 is the
 * absolute error of rounding a result that lands among the binary32
 * subnormals. Rounding is to nearest; nothing overflows. Standard model:
 * fl(a op b) = (a op b)(1 + d) + e with |d| <= u, |e| <= eta, and d e = 0;
 * additions are exact when their result is subnormal, so for them e = 0.
 * Products of k factors (1 + d_j), |d_j| <= u, are 1 + t with |t| <= g_k.
 *
 * f32, sum (scaled = 0). The switch adds the x_i in binary32 in any order,
 * and a hierarchy of switches in any tree: each x_i passes through at most
 * N - 1 roundings, so got = sum x_i (1 + t_i) with |t_i| <= g_{N-1}, and
 *	|got - S| <= g_{N-1} A.
 * The reference adds the same x_i (converted exactly) in binary64:
 *	|ref - S| <= G_{N-1} A.
 * Hence
 *	|got - ref| <= (g_{N-1} + G_{N-1}) A.
 * The bound is attained to first order: N = 4, x = (1, u, u, u) added in
 * that order gives got = 1 and ref = 1 + 3u.
 *
 * f32, average (scaled = 1). The host multiplies the float sum by the float
 * c = fl(1/N) = (1/N)(1 + d0) (exact when N is a power of two, but the
 * bound does not count on it), and rounds once more:
 *	got' = got c (1 + d1) + e1 = (got / N)(1 + t2) + e1, |t2| <= g_2.
 * So |got' - S/N| <= |got - S| (1 + g_2) / N + g_2 |S| / N + eta
 *		  <= (A/N) (g_{N-1} (1 + g_2) + g_2) + eta.
 * (A host that divides, fl(got / N), rounds once, and is covered.) The
 * reference ref' = fl(ref / N) in binary64 (or ref * fl(1/N), two
 * roundings) obeys the same with G and no eta:
 *	|ref' - S/N| <= (A/N) (G_{N-1} (1 + G_2) + G_2).
 * Hence, with 'sum_abs' still the A of the unscaled addends,
 *	|got' - ref'| <= (A/N) (g_{N-1} (1 + g_2) + g_2
 *				+ G_{N-1} (1 + G_2) + G_2) + eta.
 *
 * i32, sum. Every worker quantises with the same scale s:
 * q_i = rne(x_i 2^s), exact in binary64 but for the one rounding to an
 * integer, so |q_i 2^-s - x_i| <= h = 2^(-s-1). The switch's int32 sum
 * Q = sum q_i is exact when nothing saturated (the scale's headroom
 * guarantees it; ina_enc_i32_add counts saturations). P = Q 2^-s is exact in
 * binary64, and
 *	|P - S| <= N h.
 * The host rounds P to binary32 once: |got - P| <= u |P| + eta.
 * The binary64 reference obeys |ref - S| <= G_{N-1} A; the i32 bound is not
 * given A, so bound it by the quantised values: |q_i| <= 2^31 - 1, so
 * |x_i| <= 2^(31-s) and A <= N 2^(31-s), and
 *	|ref - S| <= R = G_{N-1} N 2^(31-s)
 * (about N 2^-21 of the quantisation term: nil, but not zero). Since
 * |P| <= |S| + N h <= |ref| + R + N h,
 *	|got - ref| <= |got - P| + |P - S| + |S - ref|
 *		    <= N h (1 + u) + u |ref| + R (1 + u) + eta.
 *
 * i32, average. Take T = P / N, so |T - S/N| <= h: the quantisation part
 * divided by N. The host computes fl(fl(P) fl(1/N)): three roundings, the
 * first and last of which may land among the subnormals,
 *	got' = T (1 + t3) + e', |t3| <= g_3,
 *	|e'| <= eta c (1 + u) + eta <= 4 eta (c <= 1).
 * (Computing P / N in binary64 and rounding once is covered.) The
 * reference of the average, ref' = fl(ref / N), has
 *	|ref' - S/N| <= R' = (A/N) (G_{N-1} (1 + G_2) + G_2)
 *			  <= 2^(31-s) (G_{N-1} (1 + G_2) + G_2).
 * With |T| <= |ref'| + R' + h and 'ref_abs' = |ref'|,
 *	|got' - ref'| <= h (1 + g_3) + g_3 |ref'| + R' (1 + g_3) + 4 eta.
 *
 * bf16, sum. Worker i rounds x_i to y_i = bf16(x_i) once, with ub = 2^-8
 * (bf16 unit roundoff) and etab = 2^-134 (half the smallest bf16
 * subnormal): |y_i - x_i| <= ub |x_i| + etab. So Y = sum y_i has
 *	|Y - S| <= ub A + N etab, and Ay = sum |y_i| <= (1 + ub) A + N etab.
 * The switch widens each y_i exactly and adds in binary32 (any order): as
 * for f32, |F - Y| <= g_{N-1} Ay. The binary64 reference: |ref - S| <=
 * G_{N-1} A. So E = |F - ref| <= g_{N-1} Ay + ub A + N etab + G_{N-1} A.
 * The result is rounded to bf16 once, r = bf16(F), |r - F| <= ub |F| + etab
 * <= ub (|ref| + E) + etab, and the host widens r exactly. Hence
 *	|got - ref| <= (1 + ub) E + ub |ref| + etab,
 * to first order (ub + (N-1) u) A + ub |ref|. Attained to first order:
 * N = 2, x = (1 + 2^-8, 2^-8 + 2^-16): both are ties that round to even,
 * to 1 and 2^-8; F = 1 + 2^-8 is a tie again and rounds to 1, while
 * ref = 1 + 2^-7 + 2^-16: an error of about 2^-8 (A + |ref|).
 *
 * bf16, average. The host decodes r exactly and multiplies by fl(1/N):
 * got' = (r / N)(1 + t2) + e1 with |t2| <= g_2, |e1| <= eta, and the
 * reference ref' = fl(ref / N) = (ref / N)(1 + d), |d| <= v. With
 * |ref| <= N |ref'| / (1 - v) and |r| <= |ref| + B0 (B0 the sum's bound),
 *	|got' - ref'| <= B0 (1 + g_2) / N + (g_2 + v) |ref| / N + eta.
 *
 * No bound is ever negative, and N = 0 (an empty sum) has bound 0.
 */
double
ina_enc_f32_bound(unsigned n_addends, double sum_abs, int scaled)
{
	double n = n_addends, g_n, g_2, big_g_n, big_g_2;

	if (n_addends == 0)
		return 0;
	g_n = gamma_k(n - 1, U32);
	big_g_n = gamma_k(n - 1, U64);
	if (!scaled)
		return (g_n + big_g_n) * sum_abs;
	g_2 = gamma_k(2, U32);
	big_g_2 = gamma_k(2, U64);
	return sum_abs / n * (g_n * (1 + g_2) + g_2 + big_g_n * (1 + big_g_2) + big_g_2) + ETA32;
}

double
ina_enc_i32_bound(unsigned n_addends, int scale, double ref_abs, int scaled)
{
	double n = n_addends, h, x_max, big_g_n, big_g_2, g_3, r;

	if (n_addends == 0)
		return 0;
	h = ldexp(1.0, -scale - 1);	/* half a quantisation step */
	x_max = ldexp(1.0, 31 - scale); /* bounds every |x_i| */
	big_g_n = gamma_k(n - 1, U64);
	if (!scaled) {
		r = big_g_n * n * x_max;
		return n * h * (1 + U32) + U32 * ref_abs + r * (1 + U32) + ETA32;
	}
	big_g_2 = gamma_k(2, U64);
	g_3 = gamma_k(3, U32);
	r = x_max * (big_g_n * (1 + big_g_2) + big_g_2);
	return h * (1 + g_3) + g_3 * ref_abs + r * (1 + g_3) + 4 * ETA32;
}

double
ina_enc_bf16_bound(unsigned n_addends, double sum_abs, double ref_abs, int scaled)
{
	double n = n_addends, g_n, big_g_n, ay, e, ref_sum, b0, g_2;

	if (n_addends == 0)
		return 0;
	g_n = gamma_k(n - 1, U32);
	big_g_n = gamma_k(n - 1, U64);
	ref_sum = scaled ? n * ref_abs / (1 - U64) : ref_abs;
	ay = (1 + UB16) * sum_abs + n * ETAB16;
	e = g_n * ay + UB16 * sum_abs + n * ETAB16 + big_g_n * sum_abs;
	b0 = (1 + UB16) * e + UB16 * ref_sum + ETAB16;
	if (!scaled)
		return b0;
	g_2 = gamma_k(2, U32);
	return b0 * (1 + g_2) / n + (g_2 + U64) * ref_sum / n + ETA32;
}

uint32_t
ina_enc_bound(uint8_t encoding, float bound, int scale)
{
	uint32_t raw;
	double q;

	if (!(bound > 0.0f))
		return 0;
	if (encoding != INA_ENC_I32) {
		if (bound > FLT_MAX)
			bound = FLT_MAX;
		memcpy(&raw, &bound, sizeof(raw));
		return raw;
	}
	q = ceil((double)bound * pow2(scale));
	return q >= (double)INT32_MAX ? (uint32_t)INT32_MAX : (uint32_t)q;
}

float
ina_enc_bound_f32(uint32_t raw)
{
	float b;

	memcpy(&b, &raw, sizeof(b));
	return b;
}

int
ina_enc_f32_deferred(const float *sum, size_t n, float bound)
{
	int nonzero = 0;

	for (size_t i = 0; i < n; i++) {
		if (!(fabsf(sum[i]) < bound))
			return 0;
		nonzero |= sum[i] != 0.0f;
	}
	return nonzero;
}

int
ina_enc_i32_deferred(const int32_t *sum, size_t n, int32_t bound)
{
	int nonzero = 0;

	for (size_t i = 0; i < n; i++) {
		/* -bound < x < bound, without negating INT32_MIN. */
		if (sum[i] >= bound || sum[i] <= -bound)
			return 0;
		nonzero |= sum[i] != 0;
	}
	return nonzero;
}
