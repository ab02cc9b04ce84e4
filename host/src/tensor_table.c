/* SPDX-License-Identifier: MIT */
/* A context's tensors by id (tensor_table.h): open addressing, linear
 * probing, a multiplicative hash. */
#include <errno.h>
#include <stdlib.h>

#include "tensor_table.h"

static uint32_t
slot_of(uint32_t id, uint32_t cap)
{
	return (uint32_t)(((uint64_t)id * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

void *
tensor_table_get(const struct tensor_table *t, uint32_t id)
{
	if (!t->cap)
		return NULL;
	for (uint32_t s = slot_of(id, t->cap);; s = (s + 1) & (t->cap - 1)) {
		if (!t->vals[s])
			return NULL;
		if (t->ids[s] == id)
			return t->vals[s];
	}
}

static void
insert(uint32_t *ids, void **vals, uint32_t cap, uint32_t id, void *val)
{
	uint32_t s = slot_of(id, cap);

	while (vals[s])
		s = (s + 1) & (cap - 1);
	ids[s] = id;
	vals[s] = val;
}

/* Twice the slots (16 at first), every entry moved over. */
static int
grow(struct tensor_table *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 16;
	uint32_t *ids;
	void **vals;

	if (cap < t->cap)
		return -ENOMEM;
	ids = calloc(cap, sizeof(*ids));
	vals = calloc(cap, sizeof(*vals));
	if (!ids || !vals) {
		free(ids);
		free(vals);
		return -ENOMEM;
	}
	for (uint32_t s = 0; s < t->cap; s++)
		if (t->vals[s])
			insert(ids, vals, cap, t->ids[s], t->vals[s]);
	free(t->ids);
	free(t->vals);
	t->ids = ids;
	t->vals = vals;
	t->cap = cap;
	return 0;
}

int
tensor_table_put(struct tensor_table *t, uint32_t id, void *val)
{
	if (2 * (t->count + 1) > t->cap && grow(t) < 0)
		return -ENOMEM;
	insert(t->ids, t->vals, t->cap, id, val);
	t->count++;
	return 0;
}

void *
tensor_table_next(const struct tensor_table *t, uint32_t *iter)
{
	while (*iter < t->cap) {
		void *v = t->vals[(*iter)++];

		if (v)
			return v;
	}
	return NULL;
}

void
tensor_table_free(struct tensor_table *t)
{
	free(t->ids);
	free(t->vals);
	t->ids = NULL;
	t->vals = NULL;
	t->cap = t->count = 0;
}
