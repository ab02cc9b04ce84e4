/* SPDX-License-Identifier: MIT */
/*
 * One tensor under ssp:S for the C API (ssp_tensor.h): S + 1 send buffers
 * with their missed-block flags, the residual the missed blocks go back to,
 * and ina_allreduce()'s ring of handles and result buffers. Everything is
 * allocated once, at the tensor's first call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ina/wire.h"
#include "ssp_tensor.h"

struct ssp_tensor {
	uint32_t id;
	size_t n;
	uint16_t block_size;
	uint32_t nb_blocks;
	uint32_t sets;	   /* S + 1 */
	uint32_t next;	   /* next slot to try */
	float *residual;   /* n */
	float *send;	   /* sets x n */
	float *out;	   /* sets x n: ina_allreduce()'s results */
	uint8_t *missed;   /* sets x nb_blocks */
	uint8_t *busy;	   /* sets */
	uint64_t *handles; /* sets */
	uint64_t calls, returned;
};

struct ssp_tensor *
ssp_tensor_create(uint32_t id, size_t n, uint16_t block_size, uint8_t s)
{
	struct ssp_tensor *t;

	if (n == 0 || block_size == 0 || s == 0) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->id = id;
	t->n = n;
	t->block_size = block_size;
	t->nb_blocks = (uint32_t)((n + block_size - 1) / block_size);
	t->sets = s + 1u;
	t->residual = calloc(n, sizeof(float));
	t->send = calloc(t->sets * n, sizeof(float));
	t->out = calloc(t->sets * n, sizeof(float));
	t->missed = calloc((size_t)t->sets * t->nb_blocks, 1);
	t->busy = calloc(t->sets, 1);
	t->handles = calloc(t->sets, sizeof(uint64_t));
	if (!t->residual || !t->send || !t->out || !t->missed || !t->busy || !t->handles) {
		ssp_tensor_destroy(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

void
ssp_tensor_destroy(struct ssp_tensor *t)
{
	if (!t)
		return;
	free(t->residual);
	free(t->send);
	free(t->out);
	free(t->missed);
	free(t->busy);
	free(t->handles);
	free(t);
}

uint32_t
ssp_tensor_id(const struct ssp_tensor *t)
{
	return t->id;
}

size_t
ssp_tensor_n(const struct ssp_tensor *t)
{
	return t->n;
}

int
ssp_tensor_begin(struct ssp_tensor *t, const float *in, const float **send, uint8_t **missed)
{
	for (uint32_t k = 0; k < t->sets; k++) {
		uint32_t slot = (t->next + k) % t->sets;
		float *s = t->send + (size_t)slot * t->n;

		if (t->busy[slot])
			continue;
		for (size_t i = 0; i < t->n; i++) {
			s[i] = in[i] + t->residual[i];
			t->residual[i] = 0.0f;
		}
		memset(t->missed + (size_t)slot * t->nb_blocks, 0, t->nb_blocks);
		t->busy[slot] = 1;
		t->next = (slot + 1) % t->sets;
		*send = s;
		*missed = t->missed + (size_t)slot * t->nb_blocks;
		return (int)slot;
	}
	return -EBUSY;
}

void
ssp_tensor_end(struct ssp_tensor *t, int slot)
{
	const float *s = t->send + (size_t)slot * t->n;
	const uint8_t *m = t->missed + (size_t)slot * t->nb_blocks;

	for (uint32_t b = 0; b < t->nb_blocks; b++) {
		size_t lo = (size_t)b * t->block_size;
		size_t hi = lo + t->block_size < t->n ? lo + t->block_size : t->n;

		if (!m[b])
			continue;
		for (size_t i = lo; i < hi; i++)
			t->residual[i] += s[i];
	}
	t->busy[slot] = 0;
}

const float *
ssp_tensor_residual(const struct ssp_tensor *t)
{
	return t->residual;
}

uint64_t *
ssp_tensor_handle(struct ssp_tensor *t, uint64_t call)
{
	return &t->handles[call % t->sets];
}

float *
ssp_tensor_out(struct ssp_tensor *t, uint64_t call)
{
	return t->out + (size_t)(call % t->sets) * t->n;
}

uint64_t
ssp_tensor_calls(const struct ssp_tensor *t)
{
	return t->calls;
}

uint64_t
ssp_tensor_returned(const struct ssp_tensor *t)
{
	return t->returned;
}

void
ssp_tensor_called(struct ssp_tensor *t)
{
	t->calls++;
}

void
ssp_tensor_return(struct ssp_tensor *t)
{
	t->returned++;
}
