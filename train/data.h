/* SPDX-License-Identifier: MIT */
/*
 * ina-train's data: a labelled CSV (gzip or plain, read with zlib) of rows
 * "f1,...,fD,label" with no header, features scaled into [0, 1] by a stated
 * divisor, a fixed held-out test split (a seeded shuffle, the last 20% held
 * out) and the training set cut into W shards for data-parallel workers.
 */
#ifndef INA_TRAIN_DATA_H
#define INA_TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

#define DATA_MAX_FEATURES 4096
#define DATA_MAX_CLASSES 256
#define DATA_MAX_LINE 65536

struct dataset {
	size_t n;	/* rows */
	size_t dim;	/* features per row */
	size_t classes; /* largest label + 1 */
	float *x;	/* n * dim, row-major */
	uint8_t *y;	/* n labels */
};

/* Reads 'path' (gzip or plain text). Every row must have the first row's
 * number of fields, finite numeric features and an integer label in
 * [0, DATA_MAX_CLASSES). Blank lines and a trailing CR are allowed. 0, or a
 * negative code and 'err' naming the file, line and what is wrong. */
int data_load_csv(const char *path, struct dataset *ds, char *err, size_t err_size);
void data_free(struct dataset *ds);

/* Divides every feature by 'scale' (16 for the digits' pixels 0..16). */
void data_scale(struct dataset *ds, float scale);

/* Splits 'all' into 'train' and 'test' after a shuffle seeded by 'seed'
 * (splitmix64 Fisher-Yates): the last ceil(n * test_frac) rows are the test set.
 * Copies the rows; 'all' is unchanged. 0 or -ENOMEM / -EINVAL. */
int data_split(const struct dataset *all, uint64_t seed, double test_frac, struct dataset *train,
	       struct dataset *test);

/* Rows of shard 'rank' of 'workers': rows i with i % workers == rank, in
 * order; their count. 'idx' holds at least n / workers + 1 entries. */
size_t data_shard(size_t n, unsigned workers, unsigned rank, uint32_t *idx);

/* Shuffles idx[0..n) with splitmix64 from 'seed'. */
void data_shuffle(uint32_t *idx, size_t n, uint64_t seed);

#endif
