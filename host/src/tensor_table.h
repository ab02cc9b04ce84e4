/* SPDX-License-Identifier: MIT */
/*
 * A context's tensors by id: a growable hash map from a 32-bit tensor id
 * (any value) to a pointer the caller owns (its round state). A model has
 * hundreds of buckets and parameters: lookups stay O(1), the table doubles
 * when half full. Entries are never removed (a tensor's state lives until
 * the context closes).
 */
#ifndef INA_TENSOR_TABLE_H
#define INA_TENSOR_TABLE_H

#include <stdint.h>

struct tensor_table {
	uint32_t *ids;
	void **vals;  /* NULL: a free slot */
	uint32_t cap; /* a power of two, or 0 before the first put */
	uint32_t count;
};

/* The value of 'id', or NULL. */
void *tensor_table_get(const struct tensor_table *t, uint32_t id);
/* Adds 'id' (not in the table yet) with 'val' (not NULL): 0 or -ENOMEM. */
int tensor_table_put(struct tensor_table *t, uint32_t id, void *val);
/* The values in no particular order: from *iter = 0, NULL after the last. */
void *tensor_table_next(const struct tensor_table *t, uint32_t *iter);
/* Frees the table, not the values. */
void tensor_table_free(struct tensor_table *t);

#endif
