/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the sparsifier (host/src/sparsify.c): no update is ever lost
 * (several workers over many rounds, with deferred results, on random data
 * and on the real gradients in data/), block top-k against a brute-force
 * ranking, the density / byte / mass targets, the filter's bound (decaying and
 * steered to a budget), the broadcast rule, bad parameters, sub-blocks (top-k
 * ranks the sub-blocks of a cut, PROTOCOL 2.7, to the mass and the byte
 * budget), and no allocation per round (malloc wrapped: alloc_count.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_count.h"
#include "ina/encode.h"
#include "ina/npy.h"
#include "ina/util.h"
#include "ina/wire.h"
#include "sparsify.h"

#ifndef INA_SOURCE_DIR
#error "INA_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

#define GRADS INA_SOURCE_DIR "/data/grads_cnn_digits_3it.npy"
#define MAX_W 4

static uint32_t
bits_of(float f)
{
	uint32_t v;

	memcpy(&v, &f, sizeof(v));
	return v;
}

/* Gradient generators: fill g[n] for worker w, round t. */
typedef void gen_fn(float *g, uint32_t n, int w, uint32_t t);

/* Multiples of 2^-10 up to 8 in magnitude, scaled per stretch of 16 so that
 * norms differ: every float sum in the test is exact. */
static void
gen_dyadic(float *g, uint32_t n, int w, uint32_t t)
{
	uint64_t st = ((uint64_t)w << 32) ^ t ^ 0x5eed;
	uint32_t i;
	int scale = 0;

	for (i = 0; i < n; i++) {
		uint64_t x = ina_splitmix64(&st);

		if (i % 16 == 0)
			scale = (int)(x >> 60) % 4;
		g[i] = (x % 8 == 0) ? 0.0f
				    : ldexpf((float)((int)((x >> 8) % 2001) - 1000), scale - 10);
	}
}

/* Floats over 26 binades, either sign: sums round. */
static void
gen_wide(float *g, uint32_t n, int w, uint32_t t)
{
	uint64_t st = ((uint64_t)w << 40) ^ ((uint64_t)t << 8) ^ 0xfeed;
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint64_t x = ina_splitmix64(&st);
		float u = (float)(x >> 40) / (float)(1u << 24);

		g[i] = ldexpf(x & 1 ? u : -u, (int)((x >> 1) % 26) - 20);
	}
}

/* The real gradients: worker w of iteration t mod 3. */
static struct ina_npy *npy;

static void
gen_grads(float *g, uint32_t n, int w, uint32_t t)
{
	assert_int_equal(ina_npy_read_row(npy, (t % 3) * 4 + (uint64_t)w, g, n), 0);
}

static uint32_t
grads_len(void)
{
	char err[256];

	if (npy == NULL) {
		npy = ina_npy_open(GRADS, err, sizeof(err));
		assert_non_null(npy);
	}
	return (uint32_t)ina_npy_dim(npy, 2);
}

/* Knuth's TwoSum: a + b == s + err exactly (round to nearest, no overflow). */
static float
two_sum_err(float a, float b, float s)
{
	float bb = s - a;

	return (a - (s - bb)) + (b - bb);
}

struct ledger_result {
	uint64_t deferred;    /* blocks deferred, over rounds */
	uint64_t sent_blocks; /* blocks sent by all workers, over rounds */
	uint64_t rounding;    /* accumulate adds that rounded */
};

/*
 * W workers, each with its own sparsifier on 'cfg', for 'rounds' rounds; a
 * switch sums the workers' outputs per block and defers the blocks that
 * ina_enc_f32_deferred() says are under a broadcast bound (a quarter of
 * the round's largest |sum|); each worker then puts its own part of those
 * blocks back with sparsify_defer_block(). Per worker and element it asserts:
 *
 *  - every round, out + residual == grad + previous residual (in float) bit
 *    for bit: a value is either sent as is or kept as is;
 *  - at the end, delivered + residual + sum(err) == sum(grad), where
 *    delivered sums what was sent and not deferred and err is the rounding of
 *    each float add grad + residual (TwoSum, exact). With 'exact' (data whose
 *    float sums are all exact) there is no rounding and the float sums
 *    delivered + residual and sum(grad) must be equal bit for bit. Otherwise
 *    the sums are taken in double, and the bound asserted is the double
 *    summation error alone: (rounds + 3) * 2^-52 * (sum of the magnitudes);
 *    and delivered + residual differs from sum(grad) by at most the
 *    accumulate's rounding, 2^-24 * sum |acc| per element.
 */
static struct ledger_result
run_ledger(const struct sparsify_config *cfg, int W, uint32_t rounds, gen_fn *gen, int exact)
{
	const uint32_t n = cfg->n_elems;
	struct ledger_result res = { 0, 0, 0 };
	struct sparsify *sp[MAX_W];
	float *grad[MAX_W], *out[MAX_W], *prev[MAX_W], *sum;
	float *fg[MAX_W], *fd[MAX_W]; /* exact: float sums */
	double *dg[MAX_W], *dd[MAX_W], *de[MAX_W], *dabs[MAX_W], *dacc[MAX_W];
	uint32_t t, i, b, nb;
	int w;

	sum = calloc(n, sizeof(*sum));
	for (w = 0; w < W; w++) {
		sp[w] = sparsify_create(cfg);
		assert_non_null(sp[w]);
		grad[w] = calloc(n, sizeof(float));
		out[w] = calloc(n, sizeof(float));
		prev[w] = calloc(n, sizeof(float));
		fg[w] = calloc(n, sizeof(float));
		fd[w] = calloc(n, sizeof(float));
		dg[w] = calloc(n, sizeof(double));
		dd[w] = calloc(n, sizeof(double));
		de[w] = calloc(n, sizeof(double));
		dabs[w] = calloc(n, sizeof(double));
		dacc[w] = calloc(n, sizeof(double));
	}
	nb = sparsify_n_blocks(sp[0]);
	for (t = 0; t < rounds; t++) {
		float maxsum = 0.0f, bound;

		for (w = 0; w < W; w++) {
			struct sparsify_stats st;
			const float *r = sparsify_residual(sp[w]);

			gen(grad[w], n, w, t);
			memcpy(prev[w], r, n * sizeof(float));
			assert_int_equal(sparsify_round(sp[w], grad[w], out[w], t, &st), 0);
			res.sent_blocks += st.blocks_sent;
			for (i = 0; i < n; i++) {
				float acc = grad[w][i] + prev[w][i];
				float err = two_sum_err(grad[w][i], prev[w][i], acc);

				if (out[w][i] == 0.0f)
					assert_int_equal(bits_of(r[i]), bits_of(acc));
				else
					assert_true(bits_of(out[w][i]) == bits_of(acc) &&
						    r[i] == 0.0f);
				if (err != 0.0f)
					res.rounding++;
				fg[w][i] += grad[w][i];
				dg[w][i] += grad[w][i];
				de[w][i] += err;
				dabs[w][i] += fabs(grad[w][i]) + fabs(err) + fabs(out[w][i]);
				dacc[w][i] += fabs(acc);
			}
		}
		for (i = 0; i < n; i++) {
			sum[i] = 0.0f;
			for (w = 0; w < W; w++)
				sum[i] += out[w][i];
			maxsum = fabsf(sum[i]) > maxsum ? fabsf(sum[i]) : maxsum;
		}
		bound = 0.25f * maxsum;
		for (b = 0; b < nb; b++) {
			size_t off = (size_t)b * cfg->block_size;
			uint32_t len = sparsify_block_len(sp[0], b);
			int deferred = ina_enc_f32_deferred(sum + off, len, bound);

			res.deferred += (uint64_t)deferred;
			for (w = 0; w < W; w++) {
				if (deferred) {
					assert_int_equal(sparsify_defer_block(sp[w], b,
									      out[w] + off),
							 0);
					continue;
				}
				for (i = 0; i < len; i++) {
					fd[w][off + i] += out[w][off + i];
					dd[w][off + i] += out[w][off + i];
				}
			}
		}
	}
	for (w = 0; w < W; w++) {
		const float *r = sparsify_residual(sp[w]);

		for (i = 0; i < n; i++) {
			double lhs = dd[w][i] + r[i] + de[w][i];
			double tol = (rounds + 3) * ldexp(dabs[w][i] + fabs(r[i]), -52);

			if (exact) {
				assert_int_equal(bits_of(fd[w][i] + r[i]), bits_of(fg[w][i]));
				assert_true(de[w][i] == 0.0);
			}
			if (fabs(lhs - dg[w][i]) > tol)
				fail_msg("worker %d element %u: delivered + residual + err "
					 "%.17g, sum of gradients %.17g, bound %.3g",
					 w, i, lhs, dg[w][i], tol);
			assert_true(fabs(dd[w][i] + r[i] - dg[w][i]) <=
				    ldexp(dacc[w][i], -24) + tol);
		}
		sparsify_destroy(sp[w]);
		free(grad[w]);
		free(out[w]);
		free(prev[w]);
		free(fg[w]);
		free(fd[w]);
		free(dg[w]);
		free(dd[w]);
		free(de[w]);
		free(dabs[w]);
		free(dacc[w]);
	}
	free(sum);
	return res;
}

/* The selector settings the ledger tests run, on a tensor of n in blocks of B. */
static int
ledger_config(int which, uint32_t n, uint32_t B, float bound0, struct sparsify_config *c)
{
	sparsify_config_init(c);
	c->n_elems = n;
	c->block_size = B;
	switch (which) {
	case 0:
		c->select = 0; /* dense */
		break;
	case 1:
		c->target = SPARSIFY_DENSITY;
		c->density = 0.1;
		break;
	case 2:
		c->target = SPARSIFY_BYTES;
		c->byte_budget = 5 * (INA_HDR_SIZE + 4ull * B);
		break;
	case 3:
		c->target = SPARSIFY_MASS;
		c->mass = 0.5;
		break;
	case 4:
		c->select = SPARSIFY_FILTER;
		c->filter_mode = SPARSIFY_ELEMENT;
		c->bound_mode = SPARSIFY_DECAY;
		c->bound0 = bound0;
		c->decay = 0.9;
		break;
	case 5:
		c->select = SPARSIFY_FILTER;
		c->filter_mode = SPARSIFY_BLOCK;
		c->bound_mode = SPARSIFY_BUDGET;
		c->filter_budget = 8 * (INA_HDR_SIZE + 4ull * B);
		break;
	case 6:
		c->select = SPARSIFY_FILTER | SPARSIFY_TOPK;
		c->filter_mode = SPARSIFY_ELEMENT;
		c->bound_mode = SPARSIFY_BUDGET;
		c->filter_budget = 12 * (INA_HDR_SIZE + 4ull * B);
		c->target = SPARSIFY_MASS;
		c->mass = 0.3;
		break;
	case 7:
		c->select = SPARSIFY_FILTER | SPARSIFY_TOPK;
		c->filter_mode = SPARSIFY_BLOCK;
		c->bound_mode = SPARSIFY_DECAY;
		c->bound0 = bound0;
		c->decay = 0.95;
		c->target = SPARSIFY_DENSITY;
		c->density = 0.05;
		break;
	default:
		return 0;
	}
	return 1;
}

static void
test_sparsify_no_update_lost_dyadic(void **state)
{
	struct sparsify_config c;
	struct ledger_result r;
	uint64_t deferred = 0;
	int which;

	(void)state;
	for (which = 0; ledger_config(which, 1000, 16, 4.0f, &c); which++) {
		r = run_ledger(&c, 3, 60, gen_dyadic, 1);
		assert_int_equal(r.rounding, 0);
		assert_true(r.sent_blocks > 0);
		deferred += r.deferred;
	}
	assert_true(deferred > 0);
}

static void
test_sparsify_no_update_lost_wide(void **state)
{
	struct sparsify_config c;
	struct ledger_result r;
	uint64_t deferred = 0, rounding = 0;
	int which;

	(void)state;
	/* B = 7 leaves a short last block. */
	for (which = 0; ledger_config(which, 1000, 7, 1.0f, &c); which++) {
		r = run_ledger(&c, 3, 60, gen_wide, 0);
		deferred += r.deferred;
		rounding += r.rounding;
	}
	assert_true(deferred > 0);
	assert_true(rounding > 0); /* the rounding path was exercised */
}

static void
test_sparsify_no_update_lost_grads(void **state)
{
	struct sparsify_config c;
	struct ledger_result r;
	uint64_t deferred = 0;
	uint32_t n = grads_len();
	int which;

	(void)state;
	for (which = 0; ledger_config(which, n, 256, 1e-3f, &c); which++) {
		r = run_ledger(&c, 4, 9, gen_grads, 0);
		assert_true(r.sent_blocks > 0);
		deferred += r.deferred;
	}
	assert_true(deferred > 0);
}

/* Brute-force reference ranking: norms in double as the library sums them
 * (element i of a block into partial sum i mod 4, then (s0 + s1) + (s2 + s3)),
 * qsort by (norm descending, index ascending). */
static const double *ref_norms;

static int
ref_cmp(const void *pa, const void *pb)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;

	if (ref_norms[a] != ref_norms[b])
		return ref_norms[a] > ref_norms[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

static void
ref_rank(const float *g, uint32_t n, uint32_t B, double *norms, uint32_t *order)
{
	uint32_t nb = (n + B - 1) / B, b, i;

	for (b = 0; b < nb; b++) {
		double q[4] = { 0.0, 0.0, 0.0, 0.0 };

		for (i = b * B; i < n && i < (b + 1) * B; i++)
			q[(i - b * B) % 4] += (double)g[i] * g[i];
		norms[b] = (q[0] + q[1]) + (q[2] + q[3]);
		order[b] = b;
	}
	ref_norms = norms;
	qsort(order, nb, sizeof(*order), ref_cmp);
}

/* Blocks with 'a' non-zero values. A tensor with equal-norm blocks (copies)
 * so that ties are broken by index. */
static void
gen_ties(float *g, uint32_t n, uint32_t B)
{
	uint32_t i;

	gen_wide(g, n, 7, 7);
	for (i = 0; i < n; i++)
		if ((i / B) % 5 == 3 && i >= 2 * B)
			g[i] = g[i - 2 * B]; /* block b equal to block b - 2 */
		else if ((i / B) % 9 == 4)
			g[i] = 0.0f; /* zero blocks */
}

/* One round from a zero residual; asserts that exactly the blocks of
 * 'order'[0..k) are sent whole and returns k. */
static uint32_t
check_kept_prefix(const struct sparsify_config *c, const float *g, const uint32_t *order,
		  struct sparsify_stats *st)
{
	uint32_t n = c->n_elems, B = c->block_size, nb = (n + B - 1) / B, b, i, k;
	struct sparsify *s = sparsify_create(c);
	float *out = calloc(n, sizeof(float));
	uint8_t *sent = calloc(nb, 1);

	assert_non_null(s);
	assert_int_equal(sparsify_round(s, g, out, 0, st), 0);
	for (b = 0; b < nb; b++)
		for (i = b * B; i < n && i < (b + 1) * B; i++)
			if (out[i] != 0.0f)
				sent[b] = 1;
	for (k = 0; k < nb && sent[order[k]]; k++)
		;
	for (b = k; b < nb; b++)
		assert_false(sent[order[b]]);
	for (b = 0; b < k; b++) /* whole blocks, values as given */
		for (i = order[b] * B; i < n && i < (order[b] + 1) * B; i++)
			assert_int_equal(bits_of(out[i]), bits_of(g[i]));
	assert_int_equal(st->blocks_sent, k);
	sparsify_destroy(s);
	free(out);
	free(sent);
	return k;
}

static void
test_sparsify_topk_matches_reference(void **state)
{
	const uint32_t n = 1003, B = 10, nb = 101;
	const double densities[] = { 0.001, 0.01, 0.1, 0.25, 0.5, 0.77, 1.0 };
	float *g = calloc(n, sizeof(float));
	double norms[101];
	uint32_t order[101], nonzero = 0, b, k;
	struct sparsify_config c;
	struct sparsify_stats st;
	size_t d;

	(void)state;
	gen_ties(g, n, B);
	ref_rank(g, n, B, norms, order);
	for (b = 0; b < nb; b++)
		nonzero += norms[b] != 0.0;
	sparsify_config_init(&c);
	c.n_elems = n;
	c.block_size = B;
	for (d = 0; d < sizeof(densities) / sizeof(densities[0]); d++) {
		double want = densities[d] * nb;

		c.density = densities[d];
		k = check_kept_prefix(&c, g, order, &st);
		/* The target within one block (fewer only when the rest is zero). */
		if (k < nonzero)
			assert_true(fabs(k - want) <= 1.0);
		else
			assert_true(k == nonzero && want >= nonzero - 1.0);
		assert_true(k >= 1);
	}
	free(g);
}

/* Wire bytes of block b of 1003 elements in blocks of 10 (the last has 3). */
static uint64_t
blk_bytes(uint32_t b)
{
	return INA_HDR_SIZE + 4ull * (b == 100 ? 3 : 10);
}

static void
test_sparsify_topk_byte_target(void **state)
{
	const uint32_t n = 1003, B = 10;
	float *g = calloc(n, sizeof(float));
	double norms[101];
	uint32_t order[101], k, b, nb_budgets = 0;
	struct sparsify_config c;
	struct sparsify_stats st;
	uint64_t budget, want;

	(void)state;
	gen_ties(g, n, B);
	ref_rank(g, n, B, norms, order);
	sparsify_config_init(&c);
	c.n_elems = n;
	c.block_size = B;
	c.target = SPARSIFY_BYTES;
	for (budget = INA_HDR_SIZE + 40; budget < 100 * (INA_HDR_SIZE + 40);
	     budget = budget * 3 + 7) {
		c.byte_budget = budget;
		k = check_kept_prefix(&c, g, order, &st);
		for (want = 0, b = 0; b < k; b++)
			want += blk_bytes(order[b]);
		assert_int_equal(st.bytes_sent, want);
		assert_true(st.bytes_sent <= budget);
		/* Within a block: the next in rank order would not fit, unless every
		 * non-zero block was sent. */
		if (k < 101 && norms[order[k]] != 0.0)
			assert_true(st.bytes_sent + blk_bytes(order[k]) > budget);
		nb_budgets++;
	}
	assert_true(nb_budgets > 3);
	free(g);
}

static void
test_sparsify_topk_mass_target(void **state)
{
	const uint32_t n = 1003, B = 10;
	const double masses[] = { 1e-6, 0.1, 0.5, 0.9, 0.999, 1.0 };
	float *g = calloc(n, sizeof(float));
	double norms[101], total = 0.0, cum;
	uint32_t order[101], k, b;
	struct sparsify_config c;
	struct sparsify_stats st;
	size_t m;

	(void)state;
	gen_ties(g, n, B);
	ref_rank(g, n, B, norms, order);
	for (b = 0; b < 101; b++)
		total += norms[b];
	sparsify_config_init(&c);
	c.n_elems = n;
	c.block_size = B;
	c.target = SPARSIFY_MASS;
	for (m = 0; m < sizeof(masses) / sizeof(masses[0]); m++) {
		c.mass = masses[m];
		k = check_kept_prefix(&c, g, order, &st);
		for (cum = 0.0, b = 0; b < k; b++)
			cum += norms[order[b]];
		/* Reached, and not reached one block earlier. */
		assert_true(cum >= c.mass * total * (1 - 1e-12));
		assert_true(cum - norms[order[k - 1]] < c.mass * total);
		assert_true(fabs(st.mass_sent - cum) <= 1e-12 * total);
		assert_true(fabs(st.mass_total - total) <= 1e-12 * total);
	}
	free(g);
}

static void
test_sparsify_filter_decay(void **state)
{
	const uint32_t n = 500, B = 8;
	float *g = calloc(n, sizeof(float)), *out = calloc(n, sizeof(float));
	float *acc = calloc(n, sizeof(float));
	struct sparsify_config c;
	struct sparsify_stats st;
	struct sparsify *s;
	uint32_t t, i, b;
	int mode;

	(void)state;
	for (mode = SPARSIFY_ELEMENT; mode <= SPARSIFY_BLOCK; mode++) {
		sparsify_config_init(&c);
		c.n_elems = n;
		c.block_size = B;
		c.select = SPARSIFY_FILTER;
		c.filter_mode = (enum sparsify_filter_mode)mode;
		c.bound_mode = SPARSIFY_DECAY;
		c.bound0 = 1.0f;
		c.decay = 0.5;
		s = sparsify_create(&c);
		assert_non_null(s);
		for (t = 0; t < 12; t++) {
			gen_wide(g, n, mode, t);
			for (i = 0; i < n; i++)
				acc[i] = g[i] + sparsify_residual(s)[i];
			assert_int_equal(sparsify_round(s, g, out, t, &st), 0);
			assert_true(st.bound == ldexpf(1.0f, -(int)t));
			assert_true(sparsify_decay_bound(&c, t) == st.bound);
			for (b = 0; b < (n + B - 1) / B; b++) {
				float m = 0.0f;

				for (i = b * B; i < n && i < (b + 1) * B; i++)
					m = fabsf(acc[i]) > m ? fabsf(acc[i]) : m;
				for (i = b * B; i < n && i < (b + 1) * B; i++) {
					int pass = mode == SPARSIFY_ELEMENT
							   ? !(fabsf(acc[i]) < st.bound)
							   : !(m < st.bound);

					assert_true(pass ? out[i] == acc[i] : out[i] == 0.0f);
				}
			}
		}
		sparsify_destroy(s);
	}
	free(g);
	free(out);
	free(acc);
}

static int
cmp_desc(const void *pa, const void *pb)
{
	float a = *(const float *)pa, b = *(const float *)pb;

	return a > b ? -1 : a < b;
}

static void
test_sparsify_filter_budget(void **state)
{
	const uint32_t n = 1000, B = 10, nb = 100;
	const uint64_t blk = INA_HDR_SIZE + 4 * B;
	float *g = calloc(n, sizeof(float)), *out = calloc(n, sizeof(float));
	float maxes[100];
	struct sparsify_config c;
	struct sparsify_stats st;
	struct sparsify *s;
	uint32_t b, i, kblocks;
	int mode;

	(void)state;
	for (mode = SPARSIFY_ELEMENT; mode <= SPARSIFY_BLOCK; mode++) {
		for (kblocks = 1; kblocks <= nb; kblocks = kblocks * 2 + 1) {
			sparsify_config_init(&c);
			c.n_elems = n;
			c.block_size = B;
			c.select = SPARSIFY_FILTER;
			c.filter_mode = (enum sparsify_filter_mode)mode;
			c.bound_mode = SPARSIFY_BUDGET;
			c.filter_budget = kblocks * blk + blk / 2;
			s = sparsify_create(&c);
			assert_non_null(s);
			gen_wide(g, n, 3, kblocks);
			for (b = 0; b < nb; b++) {
				maxes[b] = 0.0f;
				for (i = b * B; i < (b + 1) * B; i++)
					maxes[b] = fabsf(g[i]) > maxes[b] ? fabsf(g[i]) : maxes[b];
			}
			qsort(maxes, nb, sizeof(float), cmp_desc);
			assert_int_equal(sparsify_round(s, g, out, 0, &st), 0);
			/* The k-th largest block magnitude (no ties in this data). */
			assert_true(st.bound == maxes[kblocks - 1]);
			assert_int_equal(st.blocks_sent, kblocks);
			assert_true(st.bytes_sent <= c.filter_budget);
			sparsify_destroy(s);
		}
	}
	/* Ties across the cut are held back together: the budget still holds. */
	sparsify_config_init(&c);
	c.n_elems = n;
	c.block_size = B;
	c.select = SPARSIFY_FILTER;
	c.filter_mode = SPARSIFY_BLOCK;
	c.bound_mode = SPARSIFY_BUDGET;
	c.filter_budget = 3 * blk;
	s = sparsify_create(&c);
	for (i = 0; i < n; i++)
		g[i] = i / B < 2 ? 2.0f : 1.0f; /* two blocks at 2, the rest tie at 1 */
	assert_int_equal(sparsify_round(s, g, out, 0, &st), 0);
	assert_true(st.bound > 1.0f && st.bound <= 2.0f);
	assert_int_equal(st.blocks_sent, 2);
	sparsify_destroy(s);
	free(g);
	free(out);
}

static void
test_sparsify_combined(void **state)
{
	const uint32_t n = 1000, B = 10;
	float *g = calloc(n, sizeof(float)), *out = calloc(n, sizeof(float));
	struct sparsify_config c;
	struct sparsify_stats st;
	struct sparsify *s;
	uint32_t i;

	(void)state;
	gen_wide(g, n, 1, 1);
	sparsify_config_init(&c);
	c.n_elems = n;
	c.block_size = B;
	c.select = SPARSIFY_FILTER | SPARSIFY_TOPK;
	c.filter_mode = SPARSIFY_ELEMENT;
	c.bound_mode = SPARSIFY_DECAY;
	c.bound0 = 0.5f;
	c.decay = 1.0;
	c.target = SPARSIFY_DENSITY;
	c.density = 0.05;
	s = sparsify_create(&c);
	assert_non_null(s);
	assert_int_equal(sparsify_round(s, g, out, 0, &st), 0);
	/* At most 5 blocks, and only values at or above the bound in them. */
	assert_true(st.blocks_sent <= 5 && st.blocks_sent > 0);
	for (i = 0; i < n; i++)
		assert_true(out[i] == 0.0f || (fabsf(out[i]) >= 0.5f && out[i] == g[i]));
	sparsify_destroy(s);

	/* Top-k ranks what passed the filter: block 0 has one value at the
	 * bound, block 1 ten values under it and the larger norm; block 0 goes,
	 * block 1 stays whole in the residual. */
	memset(g, 0, n * sizeof(float));
	g[3] = 0.5f;
	for (i = 10; i < 20; i++)
		g[i] = 0.4f;
	c.density = 0.01; /* one block */
	s = sparsify_create(&c);
	assert_int_equal(sparsify_round(s, g, out, 0, &st), 0);
	assert_int_equal(st.blocks_sent, 1);
	assert_true(out[3] == 0.5f);
	for (i = 10; i < 20; i++)
		assert_true(out[i] == 0.0f && sparsify_residual(s)[i] == 0.4f);
	/* Without the filter, block 1 (norm 1.6 against 0.25) is the one. */
	sparsify_destroy(s);
	c.select = SPARSIFY_TOPK;
	s = sparsify_create(&c);
	assert_int_equal(sparsify_round(s, g, out, 0, &st), 0);
	assert_true(out[3] == 0.0f && out[10] == 0.4f);
	sparsify_destroy(s);
	free(g);
	free(out);
}

/* NaN and infinity rank first and pass any bound: never hidden. */
static void
test_sparsify_nonfinite_sent(void **state)
{
	const uint32_t n = 100, B = 10;
	float g[100], out[100];
	struct sparsify_config c;
	struct sparsify_stats st;
	struct sparsify *s;
	int which;

	(void)state;
	for (which = 1; ledger_config(which, n, B, 1e9f, &c); which++) {
		memset(g, 0, sizeof(g));
		g[95] = NAN;
		g[42] = INFINITY;
		g[7] = 1e30f;
		c.density = 0.2; /* two blocks: DENSITY takes the two first */
		s = sparsify_create(&c);
		assert_non_null(s);
		assert_int_equal(sparsify_round(s, g, out, 0, &st), 0);
		if (!isnan(out[95]))
			fail_msg("config %d: NaN not sent, %u blocks", which, st.blocks_sent);
		assert_true(isinf(out[42]));
		assert_false(isnan(sparsify_residual(s)[42]));
		assert_false(isnan(sparsify_residual(s)[95]));
		sparsify_destroy(s);
	}
}

static void
test_sparsify_deferred_rule(void **state)
{
	const float zero[4] = { 0.0f, -0.0f, 0.0f, 0.0f };
	const float small[4] = { 0.1f, -0.2f, 0.0f, 0.05f };
	const float at[4] = { 0.1f, -0.25f, 0.0f, 0.05f };
	const float nan[4] = { 0.1f, NAN, 0.0f, 0.0f };

	(void)state;
	assert_int_equal(ina_enc_f32_deferred(zero, 4, 0.25f), 0);
	assert_int_equal(ina_enc_f32_deferred(small, 4, 0.25f), 1);
	assert_int_equal(ina_enc_f32_deferred(at, 4, 0.25f), 0); /* |x| = bound goes */
	assert_int_equal(ina_enc_f32_deferred(nan, 4, 0.25f), 0);
	assert_int_equal(ina_enc_f32_deferred(small, 4, 0.0f), 0);
	assert_int_equal(ina_enc_f32_deferred(small, 0, 1.0f), 0);
}

static void
test_sparsify_defer_block(void **state)
{
	const uint32_t n = 25, B = 10;
	float g[25], out[25], before[25];
	struct sparsify_config c;
	struct sparsify *s;
	uint32_t i;

	(void)state;
	for (i = 0; i < n; i++)
		g[i] = (float)(i + 1) * (i % 2 ? 1.0f : -1.0f);
	sparsify_config_init(&c);
	c.n_elems = n;
	c.block_size = B;
	c.density = 0.34; /* one of three blocks: the last (short, largest) */
	s = sparsify_create(&c);
	assert_non_null(s);
	assert_int_equal(sparsify_round(s, g, out, 0, NULL), 0);
	for (i = 0; i < n; i++)
		assert_true(out[i] == (i >= 20 ? g[i] : 0.0f));
	assert_int_equal(sparsify_block_len(s, 2), 5);
	/* Not this worker's value: refused, nothing changed. */
	memcpy(before, sparsify_residual(s), sizeof(before));
	assert_int_equal(sparsify_defer_block(s, 0, g), -EINVAL);
	assert_memory_equal(before, sparsify_residual(s), sizeof(before));
	assert_int_equal(sparsify_defer_block(s, 3, out), -EINVAL);
	assert_int_equal(sparsify_defer_block(NULL, 0, out), -EINVAL);
	/* Deferred: the residual is the whole accumulated gradient again. */
	assert_int_equal(sparsify_defer_block(s, 2, out + 20), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(bits_of(sparsify_residual(s)[i]), bits_of(g[i]));
	sparsify_destroy(s);
}

static void
test_sparsify_out_aliases_grad(void **state)
{
	const uint32_t n = 777, B = 16;
	float *g = calloc(n, sizeof(float)), *io = calloc(n, sizeof(float));
	float *out = calloc(n, sizeof(float));
	struct sparsify_config c;
	struct sparsify *a, *b;
	uint32_t t;

	(void)state;
	ledger_config(6, n, B, 0.0f, &c);
	a = sparsify_create(&c);
	b = sparsify_create(&c);
	for (t = 0; t < 10; t++) {
		gen_wide(g, n, 0, t);
		memcpy(io, g, n * sizeof(float));
		assert_int_equal(sparsify_round(a, g, out, t, NULL), 0);
		assert_int_equal(sparsify_round(b, io, io, t, NULL), 0);
		assert_memory_equal(out, io, n * sizeof(float));
		assert_memory_equal(sparsify_residual(a), sparsify_residual(b), n * sizeof(float));
	}
	sparsify_destroy(a);
	sparsify_destroy(b);
	free(g);
	free(io);
	free(out);
}

static void
expect_einval(const struct sparsify_config *c)
{
	errno = 0;
	assert_null(sparsify_create(c));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(sparsify_config_check(c), -EINVAL);
}

static void
test_sparsify_bad_params(void **state)
{
	const uint64_t blk = INA_HDR_SIZE + 4 * 16;
	struct sparsify_config c, ok;
	struct sparsify *s;
	float x[100];

	(void)state;
	sparsify_config_init(&ok);
	ok.n_elems = 100;
	ok.block_size = 16;
	assert_int_equal(sparsify_config_check(&ok), 0);
	assert_int_equal(sparsify_config_check(NULL), -EINVAL);
#define BAD(stmt) \
	do { \
		c = ok; \
		stmt; \
		expect_einval(&c); \
	} while (0)
	BAD(c.block_size = 0);
	BAD(c.n_elems = 0);
	BAD(c.select = 4);
	BAD(c.target = 0);
	BAD(c.target = 9);
	BAD(c.density = 0.0);
	BAD(c.density = -0.5);
	BAD(c.density = 1.0000001);
	BAD(c.density = NAN);
	BAD((c.target = SPARSIFY_MASS, c.mass = 0.0));
	BAD((c.target = SPARSIFY_MASS, c.mass = 1.5));
	BAD((c.target = SPARSIFY_MASS, c.mass = NAN));
	BAD((c.target = SPARSIFY_BYTES, c.byte_budget = 0));
	BAD((c.target = SPARSIFY_BYTES, c.byte_budget = blk - 1));
	BAD((c.select = SPARSIFY_FILTER, c.filter_mode = 0));
	BAD((c.select = SPARSIFY_FILTER, c.bound_mode = 0));
	BAD((c.select = SPARSIFY_FILTER, c.decay = 0.0));
	BAD((c.select = SPARSIFY_FILTER, c.decay = 1.5));
	BAD((c.select = SPARSIFY_FILTER, c.bound0 = -1.0f));
	BAD((c.select = SPARSIFY_FILTER, c.bound0 = NAN));
	BAD((c.select = SPARSIFY_FILTER, c.bound0 = INFINITY));
	BAD((c.select = SPARSIFY_FILTER, c.bound_mode = SPARSIFY_BUDGET,
	     c.filter_budget = blk - 1));
#undef BAD
	/* A budget of one block: the block is min(B, n) long. */
	c = ok;
	c.n_elems = 5;
	c.target = SPARSIFY_BYTES;
	c.byte_budget = INA_HDR_SIZE + 20;
	assert_int_equal(sparsify_config_check(&c), 0);
	/* Settings of a selector that is off are not checked. */
	c = ok;
	c.select = SPARSIFY_FILTER;
	c.density = 7.0;
	assert_int_equal(sparsify_config_check(&c), 0);

	s = sparsify_create(&ok);
	assert_non_null(s);
	memset(x, 0, sizeof(x));
	assert_int_equal(sparsify_round(NULL, x, x, 0, NULL), -EINVAL);
	assert_int_equal(sparsify_round(s, NULL, x, 0, NULL), -EINVAL);
	assert_int_equal(sparsify_round(s, x, NULL, 0, NULL), -EINVAL);
	sparsify_destroy(s);
	sparsify_destroy(NULL);
}

static void
test_sparsify_no_alloc_per_round(void **state)
{
	const uint32_t n = 4096, B = 64;
	float *g = calloc(n, sizeof(float)), *out = calloc(n, sizeof(float));
	struct sparsify *s[8];
	struct sparsify_config c;
	struct sparsify_stats st;
	uint32_t t, b;
	int which, count = 0;

	(void)state;
	for (which = 0; ledger_config(which, n, B, 0.01f, &c); which++)
		s[count++] = sparsify_create(&c);
	alloc_count_on();
	for (t = 0; t < 20; t++) {
		gen_wide(g, n, 0, t);
		for (which = 0; which < count; which++) {
			assert_int_equal(sparsify_round(s[which], g, out, t, &st), 0);
			for (b = 0; b < sparsify_n_blocks(s[which]); b += 7)
				if (ina_enc_f32_deferred(out + b * B, B, 0.1f))
					assert_int_equal(sparsify_defer_block(s[which], b,
									      out + b * B),
							 0);
		}
	}
	alloc_count_off();
	assert_int_equal(alloc_nb, 0);
	for (which = 0; which < count; which++)
		sparsify_destroy(s[which]);
	free(g);
	free(out);
}

/* Sum of squares of x[0..n), as the library sums a unit's (element i into
 * partial sum i mod 4, then (s0 + s1) + (s2 + s3)). */
static double
sq_sum(const float *x, uint32_t n)
{
	double q[4] = { 0.0, 0.0, 0.0, 0.0 };

	for (uint32_t i = 0; i < n; i++)
		q[i % 4] += (double)x[i] * x[i];
	return (q[0] + q[1]) + (q[2] + q[3]);
}

/*
 * Sub-blocks: with a cut (B 256, b 16; and B 2048, b 16 on the real
 * gradients), top-k ranks sub-blocks: each sub-block is sent whole or not at
 * all, the ones sent are the shortest prefix of the sub-blocks ranked by
 * norm that reaches the mass, the bytes count a header and a 4-byte mask per
 * block and only the sub-blocks sent, and out + residual is the input. On
 * the real gradients the cut sends fewer values than whole blocks for the
 * same mass. A byte budget holds with sub-blocks too; bad cuts are refused.
 */
static void
test_sparsify_sub_blocks(void **state)
{
	enum { N = 5003, B = 256, SB = 16, NU = (N + SB - 1) / SB };
	static float g[N], out[N], rec[N];
	static double norm[NU];
	static uint32_t order[NU];
	const double masses[] = { 0.3, 0.7, 0.95 };
	struct sparsify_config c;
	struct sparsify_stats st;
	struct sparsify *s;
	uint64_t seed = 21;
	uint32_t u, i, j;

	(void)state;
	for (i = 0; i < N; i++) /* stretches of varied scale, some zero */
		g[i] = (i / 40) % 3 == 0 ? 0.0f
					 : (float)((int64_t)(ina_splitmix64(&seed) % 2001) - 1000) /
						   (float)(1 + (i / 16) % 7);
	for (u = 0; u < NU; u++) {
		uint32_t len = (u + 1) * SB <= N ? SB : N - u * SB;

		norm[u] = sq_sum(g + u * SB, len);
		order[u] = u;
	}
	for (i = 1; i < NU; i++) /* by norm descending, index ascending */
		for (j = i;
		     j > 0 && (norm[order[j]] > norm[order[j - 1]] ||
			       (norm[order[j]] == norm[order[j - 1]] && order[j] < order[j - 1]));
		     j--) {
			uint32_t t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	sparsify_config_init(&c);
	c.n_elems = N;
	c.block_size = B;
	c.sub_block = SB;
	c.target = SPARSIFY_MASS;
	for (size_t m = 0; m < sizeof(masses) / sizeof(masses[0]); m++) {
		double total = sq_sum(g, N), cum = 0;
		uint64_t bytes = 0;
		uint32_t k = 0;

		c.mass = masses[m];
		s = sparsify_create(&c);
		assert_non_null(s);
		assert_int_equal(sparsify_sub_block(s), SB);
		assert_int_equal(sparsify_round(s, g, out, 0, &st), 0);
		/* Its mass is the units' norms, summed as the test sums them,
		 * bit for bit (the vector and the plain loop alike). */
		{
			double units_total = 0;

			for (u = 0; u < NU; u++)
				units_total += norm[u];
			assert_true(st.mass_total == units_total);
		}
		/* out + residual is g, bit for bit. */
		for (i = 0; i < N; i++) {
			rec[i] = out[i] + sparsify_residual(s)[i];
			assert_int_equal(bits_of(rec[i]), bits_of(g[i]));
		}
		/* Whole sub-blocks: sent entirely or not at all. */
		for (u = 0; u < NU; u++) {
			uint32_t len = (u + 1) * SB <= N ? SB : N - u * SB, sent = 0;

			for (i = 0; i < len; i++)
				sent += out[u * SB + i] != 0.0f || g[u * SB + i] == 0.0f;
			assert_true(sent == len || sq_sum(out + u * SB, len) == 0.0);
		}
		/* The sent sub-blocks are the shortest prefix reaching the mass. */
		while (cum < c.mass * total) {
			uint32_t uu = order[k++], len = (uu + 1) * SB <= N ? SB : N - uu * SB;

			assert_true(sq_sum(out + uu * SB, len) == norm[uu]);
			cum += norm[uu];
		}
		for (; k < NU; k++) {
			uint32_t uu = order[k], len = (uu + 1) * SB <= N ? SB : N - uu * SB;

			assert_true(sq_sum(out + uu * SB, len) == 0.0);
		}
		assert_true(st.mass_sent >= c.mass * st.mass_total * (1 - 1e-12));
		/* Bytes: per block with a value sent, header, mask, its sent
		 * sub-blocks. */
		for (j = 0; j < (N + B - 1) / B; j++) {
			uint64_t vals = 0;

			for (u = j * (B / SB); u < (j + 1) * (B / SB) && u < NU; u++) {
				uint32_t len = (u + 1) * SB <= N ? SB : N - u * SB;

				if (sq_sum(out + u * SB, len) > 0)
					vals += len;
			}
			if (vals)
				bytes += INA_HDR_SIZE + 4 + 4 * vals;
		}
		assert_int_equal(st.bytes_sent, bytes);
		sparsify_destroy(s);
	}

	/* A byte budget: what is sent fits it, with headers and masks. */
	c.target = SPARSIFY_BYTES;
	c.byte_budget = 3000;
	s = sparsify_create(&c);
	assert_non_null(s);
	assert_int_equal(sparsify_round(s, g, out, 0, &st), 0);
	assert_true(st.bytes_sent <= c.byte_budget);
	assert_true(st.bytes_sent + INA_HDR_SIZE + 4 + 4 * SB > c.byte_budget);
	assert_true(st.subs_sent > st.blocks_sent);
	/* Cuts: b a power-of-two divisor of B, at most 128 sub-blocks, not
	 * below the unit the arrays were made for. */
	assert_int_equal(sparsify_set_cut(s, 512, 32), 0);
	assert_int_equal(sparsify_set_cut(s, 512, 24), -EINVAL);
	assert_int_equal(sparsify_set_cut(s, 512, 8), -EINVAL);
	assert_int_equal(sparsify_set_cut(s, 4096, 16), -EINVAL); /* 256 sub-blocks */
	assert_int_equal(sparsify_set_cut(s, 16, 32), -EINVAL);
	assert_int_equal(sparsify_set_cut(s, 256, 256), 0);
	assert_int_equal(sparsify_sub_block(s), 0);
	assert_int_equal(sparsify_set_block_size(s, 128), 0);
	assert_int_equal(sparsify_sub_block(s), 0);
	sparsify_destroy(s);
	c.sub_block = 24;
	assert_null(sparsify_create(&c));

	/* The real gradients, one worker, mass 0.7: sub-blocks of 16 in
	 * blocks of 2048 send fewer values than blocks of 2048. */
	{
		static float rg[71754], o2[71754];
		struct sparsify_stats whole, cut;

		assert_int_equal(grads_len(), 71754);
		assert_int_equal(ina_npy_read_row(npy, 0, rg, 71754), 0);
		sparsify_config_init(&c);
		c.n_elems = 71754;
		c.block_size = 2048;
		c.target = SPARSIFY_MASS;
		c.mass = 0.7;
		s = sparsify_create(&c);
		assert_non_null(s);
		assert_int_equal(sparsify_round(s, rg, o2, 0, &whole), 0);
		sparsify_destroy(s);
		c.sub_block = 16;
		s = sparsify_create(&c);
		assert_non_null(s);
		assert_int_equal(sparsify_round(s, rg, o2, 0, &cut), 0);
		sparsify_destroy(s);
		print_message("real gradients, mass 0.7, B 2048: whole blocks %llu values %llu "
			      "bytes, sub-blocks of 16 %llu values %llu bytes\n",
			      (unsigned long long)whole.elems_sent,
			      (unsigned long long)whole.bytes_sent,
			      (unsigned long long)cut.elems_sent,
			      (unsigned long long)cut.bytes_sent);
		assert_true(cut.mass_sent >= 0.7 * cut.mass_total);
		assert_true(2 * cut.bytes_sent < whole.bytes_sent);
	}
}

static int
group_teardown(void **state)
{
	(void)state;
	ina_npy_close(npy);
	return 0;
}

/* The mass a round reports is the units' sums of squares in the library's
 * order (element i of a unit into partial sum i mod 4, then (s0 + s1) +
 * (s2 + s3); the units in index order), bit for bit, on values whose squares
 * do not add exactly (random magnitudes over 2^-20 .. 2^20), for units of
 * lengths that leave every tail of 0 to 3; and the residual and out still
 * add up to grad + residual. */
static void
test_sparsify_mass_order(void **state)
{
	enum { N = 1000 + 3 };
	static float g[N], out[N];
	static const uint32_t units[] = { 1024, 64, 16 };
	uint64_t seed = 5;

	(void)state;
	for (uint32_t i = 0; i < N; i++)
		g[i] = ldexpf((float)((int64_t)(ina_splitmix64(&seed) % 2000001) - 1000000) / 1e6f,
			      (int)(ina_splitmix64(&seed) % 41) - 20);
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
		struct sparsify_config c;
		struct sparsify_stats st;
		struct sparsify *s;
		double want = 0;

		sparsify_config_init(&c);
		c.n_elems = N;
		c.block_size = 1024;
		c.sub_block = units[k] == 1024 ? 0 : units[k];
		c.target = SPARSIFY_MASS;
		c.mass = 0.5;
		s = sparsify_create(&c);
		assert_non_null(s);
		assert_int_equal(sparsify_round(s, g, out, 0, &st), 0);
		for (uint32_t u = 0; u * units[k] < N; u++)
			want += sq_sum(g + u * units[k],
				       N - u * units[k] < units[k] ? N - u * units[k] : units[k]);
		assert_true(st.mass_total == want);
		for (uint32_t i = 0; i < N; i++)
			assert_int_equal(bits_of(out[i] + sparsify_residual(s)[i]), bits_of(g[i]));
		sparsify_destroy(s);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sparsify_bad_params),
		cmocka_unit_test(test_sparsify_no_update_lost_dyadic),
		cmocka_unit_test(test_sparsify_no_update_lost_wide),
		cmocka_unit_test(test_sparsify_no_update_lost_grads),
		cmocka_unit_test(test_sparsify_topk_matches_reference),
		cmocka_unit_test(test_sparsify_topk_byte_target),
		cmocka_unit_test(test_sparsify_topk_mass_target),
		cmocka_unit_test(test_sparsify_filter_decay),
		cmocka_unit_test(test_sparsify_filter_budget),
		cmocka_unit_test(test_sparsify_combined),
		cmocka_unit_test(test_sparsify_nonfinite_sent),
		cmocka_unit_test(test_sparsify_deferred_rule),
		cmocka_unit_test(test_sparsify_defer_block),
		cmocka_unit_test(test_sparsify_out_aliases_grad),
		cmocka_unit_test(test_sparsify_no_alloc_per_round),
		cmocka_unit_test(test_sparsify_sub_blocks),
		cmocka_unit_test(test_sparsify_mass_order),
	};

	return cmocka_run_group_tests_name("sparsify", tests, NULL, group_teardown);
}
