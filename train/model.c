/* SPDX-License-Identifier: MIT */
/* Softmax regression (model.h): forward, loss, gradient, SGD step. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ina/util.h"
#include "model.h"

#define MODEL_MAX_CLASSES 256

int
model_init(struct model *m, size_t dim, size_t classes, uint64_t seed)
{
	uint64_t st = seed;

	memset(m, 0, sizeof(*m));
	if (dim == 0 || classes < 2 || classes > MODEL_MAX_CLASSES)
		return -EINVAL;
	m->dim = dim;
	m->classes = classes;
	m->n_params = classes * dim + classes;
	m->params = calloc(m->n_params, sizeof(float));
	if (!m->params)
		return -ENOMEM;
	for (size_t i = 0; i < classes * dim; i++)
		m->params[i] = (float)((double)(ina_splitmix64(&st) >> 11) * 0x1p-53 - 0.5) * 0.02f;
	return 0;
}

void
model_free(struct model *m)
{
	free(m->params);
	memset(m, 0, sizeof(*m));
}

/* Logits, then a numerically stable softmax, in double. */
static void
softmax(const struct model *m, const float *x, double *p)
{
	const float *w = m->params, *b = m->params + m->classes * m->dim;
	double max = -INFINITY, sum = 0;

	for (size_t c = 0; c < m->classes; c++) {
		double z = b[c];

		for (size_t d = 0; d < m->dim; d++)
			z += (double)w[c * m->dim + d] * x[d];
		p[c] = z;
		if (z > max)
			max = z;
	}
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
	double p[MODEL_MAX_CLASSES];

	softmax(m, x, p);
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
	double p[MODEL_MAX_CLASSES], loss = 0;

	for (size_t i = 0; i < n; i++) {
		size_t r = idx ? idx[i] : i;

		softmax(m, x + r * m->dim, p);
		loss += row_loss(p, y[r]);
	}
	return n ? loss / (double)n : 0;
}

double
model_gradient(const struct model *m, const float *x, const uint8_t *y, const uint32_t *idx,
	       size_t n, float *grad)
{
	double p[MODEL_MAX_CLASSES], loss = 0;
	float *gw = grad, *gb = grad + m->classes * m->dim;
	float inv = n ? 1.0f / (float)n : 0;

	memset(grad, 0, m->n_params * sizeof(float));
	for (size_t i = 0; i < n; i++) {
		size_t r = idx ? idx[i] : i;
		const float *xr = x + r * m->dim;

		softmax(m, xr, p);
		loss += row_loss(p, y[r]);
		/* d loss / d z_c = p_c - [c == y] */
		for (size_t c = 0; c < m->classes; c++) {
			float dz = (float)(p[c] - (c == y[r] ? 1.0 : 0.0)) * inv;

			for (size_t d = 0; d < m->dim; d++)
				gw[c * m->dim + d] += dz * xr[d];
			gb[c] += dz;
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
	double p[MODEL_MAX_CLASSES];
	size_t right = 0;

	for (size_t i = 0; i < n; i++) {
		size_t best = 0;

		softmax(m, x + i * m->dim, p);
		for (size_t c = 1; c < m->classes; c++)
			if (p[c] > p[best])
				best = c;
		right += best == y[i];
	}
	return n ? (double)right / (double)n : 0;
}
