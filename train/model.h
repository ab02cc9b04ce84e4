/* SPDX-License-Identifier: MIT */
/*
 * ina-train's model: softmax regression (a linear layer, D inputs to C
 * classes, then softmax and cross-entropy), or with H > 0 hidden units a small
 * MLP (linear D -> H, ReLU, linear H -> C, softmax, cross-entropy). Its
 * parameters live in one flat float vector, W (C x D, row-major) then b (C);
 * for the MLP W1 (H x D), b1 (H), W2 (C x H), b2 (C). A gradient is one flat
 * vector of the same layout: what ina_allreduce() sums. Deterministic: the
 * same inputs give the same bits on every worker.
 */
#ifndef INA_TRAIN_MODEL_H
#define INA_TRAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct model {
	size_t dim;	 /* D inputs */
	size_t hidden;	 /* H hidden units, 0: softmax regression */
	size_t classes;	 /* C outputs */
	size_t n_params; /* C*D + C, or H*D + H + C*H + C */
	float *params;	 /* W then b */
};

#define MODEL_MAX_CLASSES 256
#define MODEL_MAX_HIDDEN 4096
#define MODEL_MAX_DIM 4096

/* Allocates a model with random weights from 'seed': softmax regression
 * uniform in +-0.01 with zero biases; the MLP's layers (biases too) uniform
 * in +-1/sqrt(fan-in). 0 or -ENOMEM / -EINVAL. */
int model_init(struct model *m, size_t dim, size_t hidden, size_t classes, uint64_t seed);
void model_free(struct model *m);

/* Class probabilities of one input into probs[0..C). */
void model_forward(const struct model *m, const float *x, float *probs);

/* Mean cross-entropy over rows idx[0..n) of x/y (or rows 0..n when idx is
 * NULL). */
double model_loss(const struct model *m, const float *x, const uint8_t *y, const uint32_t *idx,
		  size_t n);

/* Gradient of the mean loss over rows idx[0..n) into grad[0..n_params);
 * returns that mean loss. */
double model_gradient(const struct model *m, const float *x, const uint8_t *y, const uint32_t *idx,
		      size_t n, float *grad);

/* params -= lr * grad. */
void model_sgd_step(struct model *m, const float *grad, float lr);

/* Fraction of rows 0..n classified right (argmax of the logits). */
double model_accuracy(const struct model *m, const float *x, const uint8_t *y, size_t n);

#endif
