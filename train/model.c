/* SPDX-License-Identifier: MIT */
/* Softmax regression or a one-hidden-layer MLP (model.h): forward, loss,
 * gradient (backpropagation by hand), SGD step. Sums in double. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ina/util.h"
#include "model.h"

static float
uniform(uint64_t *st, double bound)
{
	return (float)(((double)(ina_splitmix64(st) >> 11) * 0x1p-53 * 2 - 1) * bound);
}

int
model_init(struct model *m, size_t dim, size_t hidden, size_t classes, uint64_t seed)
{
	uint64_t st = seed;

	memset(m, 0, sizeof(*m));
	if (dim == 0 || dim > MODEL_MAX_DIM || classes < 2 || classes > MODEL_MAX_CLASSES ||
	    hidden > MODEL_MAX_HIDDEN)
		return -EINVAL;
	m->dim = dim;
	m->hidden = hidden;
	m->classes = classes;
	m->n_params = hidden ? hidden * dim + hidden + classes * hidden + classes
			     : classes * dim + classes;
	m->params = calloc(m->n_params, sizeof(float));
	if (!m->params)
		return -ENOMEM;
	if (!hidden) {
		for (size_t i = 0; i < classes * dim; i++)
			m->params[i] = uniform(&st, 0.01);
		return 0;
	}
	for (size_t i = 0; i < hidden * dim + hidden; i++)
		m->params[i] = uniform(&st, 1 / sqrt((double)dim));
	for (size_t i = hidden * dim + hidden; i < m->n_params; i++)
		m->params[i] = uniform(&st, 1 / sqrt((double)hidden));
	return 0;
}

void
model_free(struct model *m)
{
	free(m->params);
	memset(m, 0, sizeof(*m));
}

/* out[o] = b[o] + sum_i w[o*in + i] * x[i], o < n_out. */
static void
linear(const float *w, const float *b, const double *x, size_t n_in, size_t n_out, double *out)
{
	for (size_t o = 0; o < n_out; o++) {
		double z = b[o];

		for (size_t i = 0; i < n_in; i++)
			z += (double)w[o * n_in + i] * x[i];
		out[o] = z;
	}
}

/* Class probabilities p[C] of input x; the MLP's ReLU outputs into h[H]. */
static void
forward(const struct model *m, const float *x, double *h, double *p)
{
	double xin[MODEL_MAX_DIM], *in = xin, max = -INFINITY, sum = 0;
	const float *w2 = m->params, *b2;
	size_t n_in = m->dim;

	for (size_t d = 0; d < m->dim; d++)
		in[d] = x[d];
	if (m->hidden) {
		linear(m->params, m->params + m->hidden * m->dim, in, m->dim, m->hidden, h);
		for (size_t j = 0; j < m->hidden; j++)
			h[j] = h[j] > 0 ? h[j] : 0;
		w2 = m->params + m->hidden * m->dim + m->hidden;
		in = h;
		n_in = m->hidden;
	}
	b2 = w2 + m->classes * n_in;
	linear(w2, b2, in, n_in, m->classes, p);
	for (size_t c = 0; c < m->classes; c++)
		if (p[c] > max)
			max = p[c];
	for (size_t c = 0; c < m->classes; c++) {
		p[c] = exp(p[c] - max);
		sum += p[c];
	}
	for (size_t c = 0; c < m->classes; c++)
		p[c] /= sum;
}

void
model_forward(const struct model *m, const float *x, float *probs)
{
	double p[MODEL_MAX_CLASSES], h[MODEL_MAX_HIDDEN];

	forward(m, x, h, p);
	for (size_t c = 0; c < m->classes; c++)
		probs[c] = (float)p[c];
}

static double
row_loss(const double *p, unsigned label)
{
	return -log(p[label] > 1e-300 ? p[label] : 1e-300);
}

double
model_loss(const struct model *m, const float *x, const uint8_t *y, const uint32_t *idx, size_t n)
{
	double p[MODEL_MAX_CLASSES], loss = 0, h[MODEL_MAX_HIDDEN];

	for (size_t i = 0; i < n; i++) {
		size_t r = idx ? idx[i] : i;

		forward(m, x + r * m->dim, h, p);
		loss += row_loss(p, y[r]);
	}
	return n ? loss / (double)n : 0;
}

double
model_gradient(const struct model *m, const float *x, const uint8_t *y, const uint32_t *idx,
	       size_t n, float *grad)
{
	double p[MODEL_MAX_CLASSES], dz[MODEL_MAX_CLASSES], loss = 0, h[MODEL_MAX_HIDDEN];
	size_t H = m->hidden, D = m->dim, C = m->classes, n_in = H ? H : D;
	float *g1 = grad, *gb1 = grad + H * D;
	float *g2 = H ? gb1 + H : grad, *gb2 = g2 + C * n_in;
	const float *w2 = H ? m->params + H * D + H : m->params;
	double inv = n ? 1.0 / (double)n : 0;

	memset(grad, 0, m->n_params * sizeof(float));
	for (size_t i = 0; i < n; i++) {
		size_t r = idx ? idx[i] : i;
		const float *xr = x + r * D;

		forward(m, xr, h, p);
		loss += row_loss(p, y[r]);
		/* d loss / d logit_c = p_c - [c == y], over the batch mean */
		for (size_t c = 0; c < C; c++) {
			dz[c] = (p[c] - (c == y[r] ? 1.0 : 0.0)) * inv;
			for (size_t k = 0; k < n_in; k++)
				g2[c * n_in + k] += (float)(dz[c] * (H ? h[k] : xr[k]));
			gb2[c] += (float)dz[c];
		}
		/* Back through W2 and the ReLU (h > 0 where it passed). */
		for (size_t j = 0; j < H; j++) {
			double dh = 0;

			if (h[j] <= 0)
				continue;
			for (size_t c = 0; c < C; c++)
				dh += (double)w2[c * H + j] * dz[c];
			for (size_t d = 0; d < D; d++)
				g1[j * D + d] += (float)(dh * xr[d]);
			gb1[j] += (float)dh;
		}
	}
	return n ? loss / (double)n : 0;
}

void
model_sgd_step(struct model *m, const float *grad, float lr)
{
	for (size_t i = 0; i < m->n_params; i++)
		m->params[i] -= lr * grad[i];
}

double
model_accuracy(const struct model *m, const float *x, const uint8_t *y, size_t n)
{
	double p[MODEL_MAX_CLASSES], h[MODEL_MAX_HIDDEN];
	size_t right = 0;

	for (size_t i = 0; i < n; i++) {
		size_t best = 0;

		forward(m, x + i * m->dim, h, p);
		for (size_t c = 1; c < m->classes; c++)
			if (p[c] > p[best])
				best = c;
		right += best == y[i];
	}
	return n ? (double)right / (double)n : 0;
}
