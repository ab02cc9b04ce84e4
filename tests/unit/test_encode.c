/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of encode.c: the f32, i32 and bf16 payload encodings against golden
 * bytes and scalar references, the i32 exponent, scale and headroom, and the
 * error bounds of encode.h checked against randomised sums (fixed seed).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/encode.h"
#include "ina/encoding.h"
#include "ina/wire.h"

#define MAX_N 300

/* splitmix64: a small generator with a fixed seed per test. */
static uint64_t
rnd_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t
rnd_below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(rnd_next(s) % n);
}

/* A float with a random sign and mantissa, and exponent in [lo, hi]. */
static float
rnd_float(uint64_t *s, int lo, int hi)
{
	float m = (float)(1.0 + (double)(rnd_next(s) >> 41) * 0x1p-23);
	float x = ldexpf(m, lo + (int)rnd_below(s, (uint32_t)(hi - lo + 1)));

	return rnd_next(s) & 1 ? -x : x;
}

static uint32_t
bits_of(float f)
{
	uint32_t v;

	memcpy(&v, &f, sizeof(v));
	return v;
}

static float
float_of(uint32_t v)
{
	float f;

	memcpy(&f, &v, sizeof(f));
	return f;
}

static int32_t
wire_i32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

static unsigned
ceil_log2(unsigned w)
{
	unsigned c = 0;

	while ((1u << c) < w)
		c++;
	return c;
}

static void
test_encode_f32_golden(void **state)
{
	static const float vals[] = { 1.0f, -2.5f, 0.1f, -0.0f };
	static const uint8_t golden[] = {
		0x3f, 0x80, 0x00, 0x00, 0xc0, 0x20, 0x00, 0x00,
		0x3d, 0xcc, 0xcc, 0xcd, 0x80, 0x00, 0x00, 0x00,
	};
	uint8_t wire[sizeof(golden)];
	float back[4];

	(void)state;
	ina_enc_f32_put(wire, vals, 4);
	assert_memory_equal(wire, golden, sizeof(golden));
	ina_enc_f32_get(back, golden, 4);
	assert_memory_equal(back, vals, sizeof(vals));
}

static void
test_encode_f32_round_trip_bit_exact(void **state)
{
	static const uint32_t special[] = {
		0x00000000, 0x80000000, /* +0, -0 */
		0x00000001, 0x807fffff, /* denormals */
		0x00800000, 0x7f7fffff, /* smallest normal, largest finite */
		0x7f800000, 0xff800000, /* +inf, -inf */
		0x7fc00000, 0xffc12345, /* quiet NaNs, with payload */
		0x7fa00001, 0xff800001, /* signalling NaNs */
		0x3f800000, 0xbf800000,
	};
	float src[MAX_N], dst[MAX_N];
	uint8_t wire[4 * MAX_N + 4];
	uint64_t seed = 1;
	size_t n, i, off;

	(void)state;
	for (i = 0; i < MAX_N; i++) {
		uint32_t v = i < sizeof(special) / sizeof(special[0]) ? special[i]
								      : (uint32_t)rnd_next(&seed);
		memcpy(&src[i], &v, sizeof(v));
	}
	for (n = 0; n <= 70; n++) {
		for (off = 0; off < 4; off++) {
			memset(dst, 0xa5, sizeof(dst));
			ina_enc_f32_put(wire + off, src, n);
			for (i = 0; i < n; i++) {
				uint32_t v;

				memcpy(&v, &src[i], sizeof(v));
				assert_int_equal(wire_i32(wire + off + 4 * i), (int32_t)v);
			}
			ina_enc_f32_get(dst, wire + off, n);
			assert_memory_equal(dst, src, n * sizeof(float));
			/* Nothing past n is written. */
			if (n < MAX_N)
				assert_int_equal(bits_of(dst[n]), 0xa5a5a5a5u);
		}
	}
	ina_enc_f32_put(wire, src, MAX_N);
	ina_enc_f32_get(dst, wire, MAX_N);
	assert_memory_equal(dst, src, sizeof(src));
}

static void
test_encode_f32_add_matches_scalar(void **state)
{
	float acc[MAX_N], ref[MAX_N], x[MAX_N];
	uint8_t wire[4 * MAX_N + 3];
	uint64_t seed = 2;
	size_t n, i, round;

	(void)state;
	for (round = 0; round < 40; round++) {
		n = round < 35 ? round * 2 : MAX_N - round % 5;
		for (i = 0; i < n; i++) {
			acc[i] = rnd_float(&seed, -30, 30);
			x[i] = rnd_float(&seed, -30, 30);
			if (i % 17 == 3)
				x[i] = -acc[i]; /* exact cancellation */
			if (i % 23 == 5)
				x[i] = float_of(0x00000003);
			ref[i] = acc[i] + x[i];
		}
		ina_enc_f32_put(wire + round % 4, x, n);
		ina_enc_f32_add(acc, wire + round % 4, n);
		for (i = 0; i < n; i++)
			assert_int_equal(bits_of(acc[i]), bits_of(ref[i]));
	}
}

static void
test_encode_i32_exp_values(void **state)
{
	float x[40];
	int k;

	(void)state;
	memset(x, 0, sizeof(x));
	assert_int_equal(ina_enc_i32_exp(x, 0), INA_EXP_ZERO);
	assert_int_equal(ina_enc_i32_exp(x, 40), INA_EXP_ZERO);
	x[7] = -0.0f;
	x[33] = -0.0f;
	assert_int_equal(ina_enc_i32_exp(x, 40), INA_EXP_ZERO);

	x[3] = 1.0f;
	assert_int_equal(ina_enc_i32_exp(x, 40), 1);
	x[3] = 0.75f;
	assert_int_equal(ina_enc_i32_exp(x, 40), 0);
	x[3] = 0.5f;
	assert_int_equal(ina_enc_i32_exp(x, 40), 0);
	x[30] = -3.0f;
	assert_int_equal(ina_enc_i32_exp(x, 40), 2);
	x[30] = 0;

	/* max|x| = 2^k gives k + 1; just below 2^k gives k. */
	for (k = -149; k <= 127; k++) {
		x[3] = ldexpf(1.0f, k);
		assert_int_equal(ina_enc_i32_exp(x, 40), k + 1);
		if (k > -149) {
			x[3] = -nextafterf(ldexpf(1.0f, k), 0);
			assert_int_equal(ina_enc_i32_exp(x, 40), k);
		}
	}
	x[3] = float_of(0x7f7fffff);
	assert_int_equal(ina_enc_i32_exp(x, 40), 128);

	x[3] = 1.0f;
	x[38] = NAN;
	assert_int_equal(ina_enc_i32_exp(x, 40), INA_EXP_NONFINITE);
	x[38] = -INFINITY;
	assert_int_equal(ina_enc_i32_exp(x, 40), INA_EXP_NONFINITE);
	x[38] = INFINITY;
	assert_int_equal(ina_enc_i32_exp(x, 40), INA_EXP_NONFINITE);
	x[38] = float_of(0xffc00001);
	assert_int_equal(ina_enc_i32_exp(x, 40), INA_EXP_NONFINITE);
	/* The non-finite value is ignored past n. */
	assert_int_equal(ina_enc_i32_exp(x, 38), 1);
}

static void
test_encode_i32_scale_values(void **state)
{
	(void)state;
	assert_int_equal(ina_enc_i32_scale(1, 1), 29);
	assert_int_equal(ina_enc_i32_scale(1, 0), 29);
	assert_int_equal(ina_enc_i32_scale(1, 2), 28);
	assert_int_equal(ina_enc_i32_scale(1, 3), 27);
	assert_int_equal(ina_enc_i32_scale(1, 4), 27);
	assert_int_equal(ina_enc_i32_scale(1, 5), 26);
	assert_int_equal(ina_enc_i32_scale(1, 64), 23);
	assert_int_equal(ina_enc_i32_scale(1, 65), 22);
	assert_int_equal(ina_enc_i32_scale(-10, 4), 38);
	assert_int_equal(ina_enc_i32_scale(128, 1), -98);
	assert_int_equal(ina_enc_i32_scale(-148, 1), 178);
	/* The marks stand for the ends of the wire's range, unclamped
	 * between: a spine's exponent past a float's (5.10) scales as named. */
	assert_int_equal(ina_enc_i32_scale(INA_EXP_ZERO, 4), ina_enc_i32_scale(-148, 4));
	assert_int_equal(ina_enc_i32_scale(INA_EXP_NONFINITE, 4),
			 ina_enc_i32_scale(INA_EXP_MAX, 4));
	assert_int_equal(ina_enc_i32_scale(INA_EXP_MAX, 1), 30 - 140);
	assert_int_equal(ina_enc_i32_scale(INA_EXP_MIN, 64), 30 - 6 + 154);
	assert_int_equal(ina_enc_i32_scale(134, 1), -104);
}

/* Quantises each worker's block with the common scale (the largest
 * exponent) and sums the blocks into 'acc' as the switch does; returns the
 * scale, and the saturations in 'nb_sat'. */
static int
i32_sum(float x[][MAX_N], unsigned world, size_t n, int32_t *acc, size_t *nb_sat)
{
	uint8_t wire[4 * MAX_N];
	int e = INA_EXP_ZERO, s;
	unsigned w;

	for (w = 0; w < world; w++) {
		int ew = ina_enc_i32_exp(x[w], n);

		if (ew != INA_EXP_ZERO && (e == INA_EXP_ZERO || ew > e))
			e = ew;
	}
	s = ina_enc_i32_scale(e, world);
	*nb_sat = 0;
	for (w = 0; w < world; w++) {
		ina_enc_i32_put(wire, x[w], n, s);
		if (w == 0)
			ina_enc_i32_load(acc, wire, n);
		else
			*nb_sat += ina_enc_i32_add(acc, wire, n);
	}
	return s;
}

static void
test_encode_i32_headroom(void **state)
{
	static const unsigned worlds[] = { 1, 2, 3, 4, 5, 64 };
	static float x[64][MAX_N];
	uint8_t wire[4 * MAX_N];
	int32_t acc[MAX_N];
	uint64_t seed = 3;
	size_t wi, trial, i, n, nb_sat;
	unsigned w;

	(void)state;
	for (wi = 0; wi < sizeof(worlds) / sizeof(worlds[0]); wi++) {
		unsigned world = worlds[wi];

		for (trial = 0; trial < 40; trial++) {
			int64_t sum[MAX_N] = { 0 };
			int adversarial = trial % 4 == 0;
			int e = INA_EXP_ZERO, s;
			float top;

			n = 1 + rnd_below(&seed, MAX_N);
			for (w = 0; w < world; w++) {
				int hi = (int)rnd_below(&seed, 60) - 30;

				for (i = 0; i < n; i++)
					x[w][i] = rnd_float(&seed, hi - 20, hi);
			}
			if (adversarial) {
				/* Everyone at the largest magnitude, same sign. */
				top = nextafterf(ldexpf(1.0f, (int)trial - 20), 0);
				for (w = 0; w < world; w++)
					for (i = 0; i < n; i++)
						x[w][i] = trial % 8 ? top : -top;
			}
			for (w = 0; w < world; w++) {
				int ew = ina_enc_i32_exp(x[w], n);

				e = ew > e ? ew : e;
			}
			s = ina_enc_i32_scale(e, world);
			for (w = 0; w < world; w++) {
				ina_enc_i32_put(wire, x[w], n, s);
				for (i = 0; i < n; i++) {
					int32_t q = wire_i32(wire + 4 * i);

					assert_true(llabs(q) <= 1ll << (30 - ceil_log2(world)));
					sum[i] += q;
				}
				if (w == 0)
					ina_enc_i32_load(acc, wire, n);
				else
					assert_int_equal(ina_enc_i32_add(acc, wire, n), 0);
			}
			for (i = 0; i < n; i++) {
				assert_true(sum[i] <= 1ll << 30 && sum[i] >= -(1ll << 30));
				assert_int_equal(acc[i], sum[i]);
			}
		}
	}
	/* The helper agrees. */
	for (w = 0; w < 5; w++)
		for (i = 0; i < 10; i++)
			x[w][i] = rnd_float(&seed, -5, 5);
	i32_sum(x, 5, 10, acc, &nb_sat);
	assert_int_equal(nb_sat, 0);
}

static void
test_encode_i32_saturation_counted(void **state)
{
	int32_t a[40], b[40], acc[40];
	uint8_t wire[4 * 40];
	uint64_t seed = 4;
	size_t i, want = 0;

	(void)state;
	a[0] = INT32_MAX - 1;
	b[0] = 5;
	a[1] = INT32_MIN + 1;
	b[1] = -5;
	a[2] = INT32_MAX;
	b[2] = INT32_MIN;
	a[3] = INT32_MAX;
	b[3] = INT32_MAX;
	a[4] = INT32_MIN;
	b[4] = INT32_MIN;
	a[5] = INT32_MAX - 5;
	b[5] = 5;
	for (i = 6; i < 40; i++) {
		static const int32_t edge[] = {
			INT32_MAX, INT32_MIN, 0, -1, 1, 1 << 30, -(1 << 30),
		};

		a[i] = i % 3 ? edge[rnd_below(&seed, 7)] : (int32_t)rnd_next(&seed);
		b[i] = i % 5 ? edge[rnd_below(&seed, 7)] : (int32_t)rnd_next(&seed);
	}
	ina_enc_i32_store(wire, b, 40);
	memcpy(acc, a, sizeof(acc));
	for (i = 0; i < 40; i++) {
		int32_t r;

		if (__builtin_add_overflow(a[i], b[i], &r)) {
			r = a[i] < 0 ? INT32_MIN : INT32_MAX;
			want++;
		}
		a[i] = r;
	}
	assert_true(want >= 4);
	assert_int_equal(ina_enc_i32_add(acc, wire, 40), want);
	assert_memory_equal(acc, a, sizeof(acc));
	assert_int_equal(acc[0], INT32_MAX);
	assert_int_equal(acc[1], INT32_MIN);
	assert_int_equal(acc[2], -1);
	assert_int_equal(acc[5], INT32_MAX);
}

static void
test_encode_i32_quantisation_error(void **state)
{
	static const float half[] = { 0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -2.5f, -3.5f, -0.0f };
	static const int32_t rne[] = { 0, 2, 2, 4, 0, -2, -4, 0 };
	float x[MAX_N], back[MAX_N];
	uint8_t wire[4 * MAX_N];
	uint64_t seed = 5;
	size_t i, trial, n;

	(void)state;
	/* Round half to even. */
	ina_enc_i32_put(wire, half, 8, 0);
	for (i = 0; i < 8; i++)
		assert_int_equal(wire_i32(wire + 4 * i), rne[i]);
	ina_enc_i32_put(wire, half, 8, -1);
	assert_int_equal(wire_i32(wire + 4 * 2), 1); /* 1.25 */
	assert_int_equal(wire_i32(wire + 4 * 3), 2); /* 1.75 */

	for (trial = 0; trial < 200; trial++) {
		unsigned world = 1 + rnd_below(&seed, 64);
		int hi = (int)rnd_below(&seed, 200) - 140;
		int s;

		n = 1 + rnd_below(&seed, MAX_N);
		for (i = 0; i < n; i++)
			x[i] = rnd_float(&seed, hi - 30, hi);
		s = ina_enc_i32_scale(ina_enc_i32_exp(x, n), world);
		ina_enc_i32_put(wire, x, n, s);
		ina_enc_i32_get(back, wire, n, s);
		for (i = 0; i < n; i++) {
			double q = wire_i32(wire + 4 * i);

			assert_true(fabs(ldexp(q, -s) - (double)x[i]) <= ldexp(1.0, -s - 1));
			assert_int_equal(bits_of(back[i]), bits_of((float)ldexp(q, -s)));
		}
	}
}

static void
test_encode_i32_dyadic_exact(void **state)
{
	static float x[4][MAX_N];
	float got[MAX_N], via_wire[MAX_N];
	int32_t acc[MAX_N];
	uint8_t wire[4 * MAX_N];
	uint64_t seed = 6;
	size_t i, nb_sat, n = MAX_N;
	unsigned w;
	int s;

	(void)state;
	for (w = 0; w < 4; w++)
		for (i = 0; i < n; i++)
			x[w][i] = ldexpf((float)((int)rnd_below(&seed, 2049) - 1024), -10);
	x[1][17] = 1.0f;
	x[2][18] = -1.0f;
	s = i32_sum(x, 4, n, acc, &nb_sat);
	assert_int_equal(s, 27);
	assert_int_equal(nb_sat, 0);
	ina_enc_i32_acc_get(got, acc, n, s);
	ina_enc_i32_store(wire, acc, n);
	ina_enc_i32_get(via_wire, wire, n, s);
	for (i = 0; i < n; i++) {
		double ref = (double)x[0][i] + x[1][i] + x[2][i] + x[3][i];

		assert_true((double)got[i] == ref);
		assert_true((double)via_wire[i] == ref);
	}
}

static void
test_encode_i32_store_load_golden(void **state)
{
	static const int32_t v[] = { 1, -2, INT32_MIN, 0x12345678 };
	static const uint8_t golden[] = {
		0x00, 0x00, 0x00, 0x01, 0xff, 0xff, 0xff, 0xfe,
		0x80, 0x00, 0x00, 0x00, 0x12, 0x34, 0x56, 0x78,
	};
	int32_t big[MAX_N], back[MAX_N];
	uint8_t wire[4 * MAX_N + 1];
	uint64_t seed = 7;
	size_t i;

	(void)state;
	ina_enc_i32_store(wire, v, 4);
	assert_memory_equal(wire, golden, sizeof(golden));
	ina_enc_i32_load(back, golden, 4);
	assert_memory_equal(back, v, sizeof(v));
	for (i = 0; i < MAX_N; i++)
		big[i] = (int32_t)rnd_next(&seed);
	ina_enc_i32_store(wire + 1, big, MAX_N);
	ina_enc_i32_load(back, wire + 1, MAX_N);
	assert_memory_equal(back, big, sizeof(big));
}

static void
shuffle(float *x, size_t n, uint64_t *seed)
{
	size_t i;

	for (i = n - 1; i > 0; i--) {
		size_t j = rnd_below(seed, (uint32_t)(i + 1));
		float t = x[i];

		x[i] = x[j];
		x[j] = t;
	}
}

static void
test_encode_f32_bound_holds(void **state)
{
	float x[64];
	uint64_t seed = 8;
	double worst = 0, worst_scaled = 0;
	unsigned n, trial, order;
	size_t i;

	(void)state;
	for (n = 2; n <= 64; n++) {
		for (trial = 0; trial < 20; trial++) {
			double ref = 0, sum_abs = 0, b, b_scaled;
			int spread = (int)rnd_below(&seed, 40);

			for (i = 0; i < n; i++)
				x[i] = rnd_float(&seed, -10 - spread, -10);
			if (trial % 3 == 0)
				x[n - 1] = -x[0]; /* cancellation */
			for (i = 0; i < n; i++) {
				ref += x[i];
				sum_abs += fabs(x[i]);
			}
			b = ina_enc_f32_bound(n, sum_abs, 0);
			b_scaled = ina_enc_f32_bound(n, sum_abs, 1);
			for (order = 0; order < 30; order++) {
				float got = 0, avg;

				shuffle(x, n, &seed);
				for (i = 0; i < n; i++)
					got += x[i];
				avg = got * (1.0f / (float)n);
				assert_true(fabs((double)got - ref) <= b);
				assert_true(fabs((double)avg - ref / n) <= b_scaled);
				if (fabs((double)got - ref) / b > worst)
					worst = fabs((double)got - ref) / b;
				if (fabs((double)avg - ref / n) / b_scaled > worst_scaled)
					worst_scaled = fabs((double)avg - ref / n) / b_scaled;
			}
		}
	}
	print_message("f32 bound: worst error/bound %.3g (sum), %.3g (average)\n", worst,
		      worst_scaled);
}

static void
test_encode_f32_bound_tight(void **state)
{
	const double u = 0x1p-24;
	float x[4] = { 1.0f, 0x1p-24f, 0x1p-24f, 0x1p-24f };
	double ref = 0, sum_abs = 0, b;
	float got = 0;
	size_t i;

	(void)state;
	assert_true(ina_enc_f32_bound(4, 1.0, 0) < 1e-5);
	assert_true(ina_enc_f32_bound(4, 1.0, 1) < 1e-5 / 4 + 1e-40);
	assert_true(ina_enc_f32_bound(1, 1.0, 0) == 0);
	assert_true(ina_enc_f32_bound(0, 1.0, 0) == 0);
	assert_true(ina_enc_f32_bound(64, 1.0, 0) < 64 * u * 1.001);
	for (i = 0; i < 4; i++) {
		got += x[i];
		ref += x[i];
		sum_abs += x[i];
	}
	b = ina_enc_f32_bound(4, sum_abs, 0);
	/* got = 1 (each 1 + u rounds to even), ref = 1 + 3u: the bound is met. */
	assert_true(got == 1.0f);
	assert_true(fabs((double)got - ref) <= b);
	assert_true(fabs((double)got - ref) >= 0.99 * b);
}

/*
 * bf16: an independent scalar reference of round to nearest, ties to even,
 * computed in binary64 from the two bf16 neighbours of x (the truncation and
 * the next pattern away from zero, an infinity counted as 2^128, which is
 * where IEEE overflow rounds). NaN: any NaN pattern with the sign kept.
 */
static uint16_t
ref_bf16(float x)
{
	uint32_t v = bits_of(x), lo = v & 0xffff0000u, hi = lo + 0x10000u;
	double dx, dlo, dhi, a, b;

	if (isnan(x))
		return (uint16_t)((v >> 16) | 0x0040u);
	if ((v & 0xffffu) == 0)
		return (uint16_t)(v >> 16);
	dx = fabs((double)x);
	dlo = fabs((double)float_of(lo));
	dhi = (hi & 0x7fffffffu) == 0x7f800000u ? 0x1p128 : fabs((double)float_of(hi));
	a = dx - dlo;
	b = dhi - dx;
	if (a < b || (a == b && ((lo >> 16) & 1) == 0))
		return (uint16_t)(lo >> 16);
	return (uint16_t)(hi >> 16);
}

static uint16_t
wire_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
test_encode_bf16_golden(void **state)
{
	static const struct {
		uint32_t in;
		uint16_t out;
	} cases[] = {
		{ 0x3f800000, 0x3f80 }, /* 1 */
		{ 0xc0200000, 0xc020 }, /* -2.5 */
		{ 0x00000000, 0x0000 }, /* +0 */
		{ 0x80000000, 0x8000 }, /* -0 */
		{ 0x3f808000, 0x3f80 }, /* 1 + 2^-8: tie, even kept part: down */
		{ 0x3f818000, 0x3f82 }, /* 1 + 3 2^-8: tie, odd kept part: up */
		{ 0x3f808001, 0x3f81 }, /* just above a tie: up */
		{ 0xbf807fff, 0xbf80 }, /* just below a tie: down */
		{ 0x3dcccccd, 0x3dcd }, /* 0.1 */
		{ 0x7f800000, 0x7f80 }, /* +inf */
		{ 0xff800000, 0xff80 }, /* -inf */
		{ 0x7f7f0000, 0x7f7f }, /* largest finite bf16 */
		{ 0x7f7f7fff, 0x7f7f }, /* below half an ulp past it: stays */
		{ 0x7f7f8000, 0x7f80 }, /* half an ulp past it: overflows to inf */
		{ 0xff7fffff, 0xff80 }, /* -FLT_MAX: -inf */
		{ 0x7fc00000, 0x7fc0 }, /* quiet NaN */
		{ 0x7f800001, 0x7fc0 }, /* signalling NaN, payload low: quiet NaN */
		{ 0xff80ffff, 0xffc0 }, /* would round to -inf: NaN kept */
		{ 0xffffffff, 0xffff }, /* would wrap to +0: NaN kept */
		{ 0x00000001, 0x0000 }, /* smallest f32 subnormal: +0 */
		{ 0x80008000, 0x8000 }, /* half the smallest bf16 subnormal: tie to -0 */
		{ 0x00008001, 0x0001 }, /* above it: smallest bf16 subnormal */
		{ 0x00018000, 0x0002 }, /* 1.5 subnormal steps: tie, up to even */
		{ 0x007fffff, 0x0080 }, /* largest f32 subnormal: smallest normal */
	};
	uint8_t wire[2 * (sizeof(cases) / sizeof(cases[0]))];
	float src[sizeof(cases) / sizeof(cases[0])], back[sizeof(cases) / sizeof(cases[0])];
	size_t n = sizeof(cases) / sizeof(cases[0]), i;

	(void)state;
	for (i = 0; i < n; i++)
		src[i] = float_of(cases[i].in);
	ina_enc_bf16_put(wire, src, n);
	ina_enc_bf16_get(back, wire, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(wire_u16(wire + 2 * i), cases[i].out);
		assert_int_equal(ina_enc_bf16_round(src[i]), cases[i].out);
		assert_int_equal(ref_bf16(src[i]), cases[i].out);
		/* get widens exactly: the pattern with 16 zero bits appended. */
		assert_int_equal(bits_of(back[i]), (uint32_t)cases[i].out << 16);
	}
}

/* Random bit patterns (every class: NaN, inf, subnormal, 0), random floats,
 * and forced ties, through the vectorised chunks and the scalar tail at every
 * alignment, against the reference. */
static void
test_encode_bf16_put_matches_reference(void **state)
{
	float src[MAX_N], dst[MAX_N];
	uint8_t wire[2 * MAX_N + 2];
	uint64_t seed = 21;
	size_t n, i, off, round;

	(void)state;
	for (round = 0; round < 200; round++) {
		for (i = 0; i < MAX_N; i++) {
			uint32_t v = (uint32_t)rnd_next(&seed);

			switch (rnd_below(&seed, 6)) {
			case 0:
				break;
			case 1:
				v = (v & 0xffff0000u) | 0x8000u; /* a tie */
				break;
			case 2:
				v &= 0x8000ffffu; /* subnormal or zero */
				break;
			case 3:
				v = (v & 0x807fffffu) | 0x7f000000u; /* near overflow, or NaN */
				v |= rnd_below(&seed, 2) ? 0x00800000u : 0;
				break;
			default:
				v = bits_of(rnd_float(&seed, -40, 40));
				break;
			}
			src[i] = float_of(v);
		}
		n = round < 100 ? round : MAX_N - round % 7;
		off = round % 2;
		memset(dst, 0xa5, sizeof(dst));
		ina_enc_bf16_put(wire + off, src, n);
		for (i = 0; i < n; i++)
			assert_int_equal(wire_u16(wire + off + 2 * i), ref_bf16(src[i]));
		ina_enc_bf16_get(dst, wire + off, n);
		for (i = 0; i < n; i++) {
			assert_int_equal(bits_of(dst[i]), (uint32_t)ref_bf16(src[i]) << 16);
			/* NaN stays NaN, and a finite value is off by at most 2^-8
			 * of its magnitude or half a subnormal step. */
			if (isnan(src[i]))
				assert_true(isnan(dst[i]));
			else if (isfinite(dst[i]))
				assert_true(fabs((double)dst[i] - src[i]) <=
					    0x1p-8 * fabs((double)src[i]) + 0x1p-134);
		}
		if (n < MAX_N)
			assert_int_equal(bits_of(dst[n]), 0xa5a5a5a5u);
	}
}

/* Every bf16 pattern widens exactly and puts back to itself (a NaN to itself
 * with the quiet bit). */
static void
test_encode_bf16_all_patterns_round_trip(void **state)
{
	static uint8_t wire[2 * 65536], again[2 * 65536];
	static float f[65536];
	uint32_t b;

	(void)state;
	for (b = 0; b < 65536; b++) {
		wire[2 * b] = (uint8_t)(b >> 8);
		wire[2 * b + 1] = (uint8_t)b;
	}
	ina_enc_bf16_get(f, wire, 65536);
	ina_enc_bf16_put(again, f, 65536);
	for (b = 0; b < 65536; b++) {
		uint16_t want = (b & 0x7fffu) > 0x7f80u ? (uint16_t)(b | 0x0040u) : (uint16_t)b;

		assert_int_equal(bits_of(f[b]), b << 16);
		assert_int_equal(wire_u16(again + 2 * b), want);
	}
}

static void
test_encode_bf16_add_matches_scalar(void **state)
{
	float acc[MAX_N], ref[MAX_N], x[MAX_N];
	uint8_t wire[2 * MAX_N + 1];
	uint64_t seed = 22;
	size_t n, i, round;

	(void)state;
	for (round = 0; round < 40; round++) {
		n = round < 35 ? round * 2 : MAX_N - round % 5;
		for (i = 0; i < n; i++) {
			acc[i] = rnd_float(&seed, -30, 30);
			x[i] = rnd_float(&seed, -30, 30);
			if (i % 17 == 3)
				x[i] = -acc[i];
			if (i % 23 == 5)
				x[i] = float_of(0x00030000); /* a subnormal */
			if (i % 29 == 7)
				x[i] = float_of(0x7f800000);
		}
		ina_enc_bf16_put(wire + round % 2, x, n);
		for (i = 0; i < n; i++)
			ref[i] = acc[i] + float_of((uint32_t)ref_bf16(x[i]) << 16);
		ina_enc_bf16_add(acc, wire + round % 2, n);
		for (i = 0; i < n; i++)
			assert_int_equal(bits_of(acc[i]), bits_of(ref[i]));
	}
}

/* What a bf16 job computes: each worker rounds once, the switch adds the
 * widened values in binary32 in arrival order, the result rounds once, and
 * an average multiplies by fl(1/N). */
static float
bf16_job(const float *x, unsigned n)
{
	float f = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		f += float_of((uint32_t)ina_enc_bf16_round(x[i]) << 16);
	return float_of((uint32_t)ina_enc_bf16_round(f) << 16);
}

static void
test_encode_bf16_bound_holds(void **state)
{
	float x[64];
	uint64_t seed = 23;
	double worst = 0, worst_scaled = 0;
	unsigned n, trial, order;
	size_t i;

	(void)state;
	for (n = 1; n <= 64; n++) {
		for (trial = 0; trial < 20; trial++) {
			double ref = 0, sum_abs = 0, b, b_scaled;
			int spread = (int)rnd_below(&seed, 40);
			int top = trial % 5 == 4 ? -120 : -10; /* near the subnormals */

			for (i = 0; i < n; i++)
				x[i] = rnd_float(&seed, top - spread, top);
			if (trial % 3 == 0)
				x[n - 1] = -x[0];
			if (trial % 4 == 1)
				for (i = 0; i < n; i++) /* ties */
					x[i] = float_of((bits_of(x[i]) & 0xffff0000u) | 0x8000u);
			for (i = 0; i < n; i++) {
				ref += x[i];
				sum_abs += fabs(x[i]);
			}
			b = ina_enc_bf16_bound(n, sum_abs, fabs(ref), 0);
			b_scaled = ina_enc_bf16_bound(n, sum_abs, fabs(ref / n), 1);
			for (order = 0; order < 30; order++) {
				float got, avg;
				double e_avg;

				shuffle(x, n, &seed);
				got = bf16_job(x, n);
				avg = got * (1.0f / (float)n);
				assert_true(fabs((double)got - ref) <= b);
				assert_true(fabs((double)avg - ref / n) <= b_scaled);
				if (b > 0 && fabs((double)got - ref) / b > worst)
					worst = fabs((double)got - ref) / b;
				e_avg = fabs((double)avg - ref / n);
				if (b_scaled > 0 && e_avg / b_scaled > worst_scaled)
					worst_scaled = e_avg / b_scaled;
			}
		}
	}
	print_message("bf16 bound: worst error/bound %.3g (sum), %.3g (average)\n", worst,
		      worst_scaled);
}

static void
test_encode_bf16_bound_tight(void **state)
{
	/* Both addends are ties that round down to even, and so is the sum. */
	float x[2] = { float_of(0x3f808000), float_of(0x3b808000) }; /* 1 + 2^-8, 2^-8 + 2^-16 */
	double ref = (double)x[0] + x[1], sum_abs = ref, b;
	float got;

	(void)state;
	assert_true(ina_enc_bf16_bound(0, 1.0, 1.0, 0) == 0);
	/* First order: (2^-8 + (N-1) 2^-24) A + 2^-8 |ref|. */
	b = ina_enc_bf16_bound(4, 1.0, 1.0, 0);
	assert_true(b >= 0x1p-8 * 2 + 3 * 0x1p-24 && b <= (0x1p-8 * 2 + 3 * 0x1p-24) * 1.01);
	assert_true(ina_enc_bf16_bound(4, 1.0, 0.25, 1) <= b / 4 * 1.01);
	got = bf16_job(x, 2);
	b = ina_enc_bf16_bound(2, sum_abs, fabs(ref), 0);
	assert_true(got == 1.0f);
	assert_true(fabs((double)got - ref) <= b);
	assert_true(fabs((double)got - ref) >= 0.98 * b);
}

static void
test_encode_i32_bound_holds(void **state)
{
	static const unsigned worlds[] = { 1, 2, 3, 4, 5, 64 };
	static float x[64][MAX_N];
	float got[MAX_N];
	int32_t acc[MAX_N];
	uint64_t seed = 9;
	double worst = 0;
	size_t wi, trial, i, n, nb_sat;
	unsigned w;

	(void)state;
	for (wi = 0; wi < sizeof(worlds) / sizeof(worlds[0]); wi++) {
		unsigned world = worlds[wi];

		for (trial = 0; trial < 30; trial++) {
			int hi = (int)rnd_below(&seed, 120) - 100;
			int s;

			n = 1 + rnd_below(&seed, MAX_N);
			for (w = 0; w < world; w++)
				for (i = 0; i < n; i++)
					x[w][i] = rnd_float(&seed, hi - 25, hi);
			s = i32_sum(x, world, n, acc, &nb_sat);
			assert_int_equal(nb_sat, 0);
			ina_enc_i32_acc_get(got, acc, n, s);
			for (i = 0; i < n; i++) {
				double ref = 0, err, b;
				float avg = got[i] * (1.0f / (float)world);

				for (w = 0; w < world; w++)
					ref += x[w][i];
				err = fabs((double)got[i] - ref);
				b = ina_enc_i32_bound(world, s, fabs(ref), 0);
				assert_true(err <= b);
				if (err / b > worst)
					worst = err / b;
				assert_true(fabs((double)avg - ref / world) <=
					    ina_enc_i32_bound(world, s, fabs(ref / world), 1));
			}
		}
	}
	print_message("i32 bound: worst error/bound %.3g\n", worst);
	/* The quantisation term dominates: about N 2^(-s-1). */
	assert_true(ina_enc_i32_bound(4, 27, 1.0, 0) < 4 * 0x1p-28 * 1.01 + 0x1p-24);
}

/* The encoding table: one row per wire encoding, each op the loop of
 * encode.c it names, with the element size the wire carries. */
static void
test_encoding_table_matches_loops(void **state)
{
	enum { N = 77 };
	float x[N], y[N], got[N], want[N];
	uint8_t wa[4 * N], wb[4 * N], wc[4 * N];
	uint32_t acc[N], ref[N];

	(void)state;
	assert_null(ina_encoding(0));
	assert_null(ina_encoding(INA_ENC_MAX + 1));
	for (int i = 0; i < N; i++) {
		x[i] = (float)(i - 38) * 0.37f;
		y[i] = (float)(i % 7) * -1.5f + 0.25f;
	}
	for (uint8_t id = INA_ENC_F32; id <= INA_ENC_MAX; id++) {
		const struct ina_encoding_ops *enc = ina_encoding(id);
		int scale = 0;

		assert_non_null(enc);
		assert_int_equal(enc->id, id);
		assert_int_equal(enc->elem_size, ina_wire_elem_size(id));
		assert_string_equal(enc->name, ina_wire_encoding_name(id));
		assert_int_equal(enc->scaled, id == INA_ENC_I32);
		if (enc->scaled)
			scale = ina_enc_i32_scale(ina_enc_i32_exp(x, N), 2);
		/* encode and decode against the named loops */
		enc->encode(wa, x, N, scale);
		enc->decode(got, wa, N, scale);
		if (id == INA_ENC_I32) {
			ina_enc_i32_put(wb, x, N, scale);
			ina_enc_i32_get(want, wb, N, scale);
		} else if (id == INA_ENC_BF16) {
			ina_enc_bf16_put(wb, x, N);
			ina_enc_bf16_get(want, wb, N);
		} else {
			ina_enc_f32_put(wb, x, N);
			ina_enc_f32_get(want, wb, N);
		}
		assert_memory_equal(wa, wb, N * enc->elem_size);
		assert_memory_equal(got, want, sizeof(got));
		/* load, add, store: the switch's sum of x and y */
		enc->encode(wb, y, N, scale);
		enc->load(acc, wa, N);
		assert_int_equal(enc->add(acc, wb, N), 0);
		enc->store(wc, acc, N);
		if (id == INA_ENC_I32) {
			ina_enc_i32_load((int32_t *)ref, wa, N);
			ina_enc_i32_add((int32_t *)ref, wb, N);
		} else if (id == INA_ENC_BF16) {
			ina_enc_bf16_get((float *)ref, wa, N);
			ina_enc_bf16_add((float *)ref, wb, N);
		} else {
			ina_enc_f32_get((float *)ref, wa, N);
			ina_enc_f32_add((float *)ref, wb, N);
		}
		assert_memory_equal(acc, ref, sizeof(acc));
		/* the result filter: nothing defers under a zero-width bound,
		 * everything under a huge one */
		assert_false(enc->deferred(acc, N, ina_enc_bound(id, 1e-30f, scale)));
		assert_true(enc->deferred(acc, N, ina_enc_bound(id, 1e30f, scale)));
		assert_true(enc->bound(2, scale, 10.0, 5.0, 0) > 0);
	}
}

/*
 * The completing packet's one pass (add_store): the same sums, saturation
 * counts and wire bytes as add then store in two passes, for every length
 * up to MAX_N (the vector loops' blocks and tails), at unaligned buffers,
 * leaving the bytes past the payload alone.
 */
static void
test_encode_add_store_matches_two_passes(void **state)
{
	static const int32_t edge[] = { INT32_MAX, INT32_MIN, 0, -1, 1, 1 << 30, -(1 << 30) };
	uint32_t acc[MAX_N], ref[MAX_N], orig[MAX_N], x[MAX_N];
	uint8_t wire[4 * MAX_N + 8], want[4 * MAX_N + 8];
	uint64_t seed = 11;

	(void)state;
	for (uint8_t id = INA_ENC_F32; id <= INA_ENC_MAX; id++) {
		const struct ina_encoding_ops *enc = ina_encoding(id);
		size_t total_sat = 0;

		for (size_t n = 0; n <= MAX_N; n += n < 80 ? 1 : 37) {
			size_t off = n % 4, bytes = n * enc->elem_size;
			size_t sat_got, sat_want;

			for (size_t i = 0; i < n; i++) {
				if (id == INA_ENC_I32) {
					acc[i] = (uint32_t)(i % 3 ? edge[rnd_below(&seed, 7)]
								  : (int32_t)rnd_next(&seed));
					x[i] = (uint32_t)(i % 5 ? edge[rnd_below(&seed, 7)]
								: (int32_t)rnd_next(&seed));
				} else {
					acc[i] = bits_of(rnd_float(&seed, -20, 20));
					x[i] = bits_of(rnd_float(&seed, -20, 20));
				}
			}
			memset(wire, 0x5a, sizeof(wire));
			if (id == INA_ENC_I32)
				ina_enc_i32_store(wire + off, (const int32_t *)x, n);
			else
				enc->encode(wire + off, (const float *)x, n, 0);
			memcpy(want, wire, sizeof(want));
			memcpy(ref, acc, n * sizeof(acc[0]));
			memcpy(orig, acc, n * sizeof(acc[0]));
			sat_want = enc->add(ref, want + off, n);
			enc->store(want + off, ref, n);
			sat_got = enc->add_store(acc, wire + off, n);
			assert_int_equal(sat_got, sat_want);
			if (id == INA_ENC_I32) {
				/* and both against the scalar definition */
				size_t sat_scalar = 0;

				for (size_t i = 0; i < n; i++) {
					int32_t r;

					if (__builtin_add_overflow((int32_t)orig[i], (int32_t)x[i],
								   &r)) {
						r = (int32_t)orig[i] < 0 ? INT32_MIN : INT32_MAX;
						sat_scalar++;
					}
					assert_int_equal(ref[i], (uint32_t)r);
				}
				assert_int_equal(sat_got, sat_scalar);
			}
			if (n)
				assert_memory_equal(acc, ref, n * sizeof(acc[0]));
			assert_memory_equal(wire, want, sizeof(wire));
			for (size_t i = off + bytes; i < sizeof(wire); i++)
				assert_int_equal(wire[i], 0x5a);
			total_sat += sat_got;
		}
		/* the i32 edges saturate, and the count says so */
		assert_true(id == INA_ENC_I32 ? total_sat > 100 : total_sat == 0);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_f32_golden),
		cmocka_unit_test(test_encode_f32_round_trip_bit_exact),
		cmocka_unit_test(test_encode_f32_add_matches_scalar),
		cmocka_unit_test(test_encode_add_store_matches_two_passes),
		cmocka_unit_test(test_encode_i32_exp_values),
		cmocka_unit_test(test_encode_i32_scale_values),
		cmocka_unit_test(test_encode_i32_headroom),
		cmocka_unit_test(test_encode_i32_saturation_counted),
		cmocka_unit_test(test_encode_i32_quantisation_error),
		cmocka_unit_test(test_encode_i32_dyadic_exact),
		cmocka_unit_test(test_encode_i32_store_load_golden),
		cmocka_unit_test(test_encode_f32_bound_holds),
		cmocka_unit_test(test_encode_f32_bound_tight),
		cmocka_unit_test(test_encode_i32_bound_holds),
		cmocka_unit_test(test_encode_bf16_golden),
		cmocka_unit_test(test_encode_bf16_put_matches_reference),
		cmocka_unit_test(test_encode_bf16_all_patterns_round_trip),
		cmocka_unit_test(test_encode_bf16_add_matches_scalar),
		cmocka_unit_test(test_encode_bf16_bound_holds),
		cmocka_unit_test(test_encode_bf16_bound_tight),
		cmocka_unit_test(test_encoding_table_matches_loops),
	};

	return cmocka_run_group_tests_name("encode", tests, NULL, NULL);
}
