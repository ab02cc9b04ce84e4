/* SPDX-License-Identifier: MIT */
/*
 * Reader for NumPy .npy v1/v2 files of little-endian float32 in C order, the
 * format of the real gradient dumps (data/README.md): shape (iterations,
 * workers, parameters). Validates the header and reads one row at a time.
 */
#ifndef INA_NPY_H
#define INA_NPY_H

#include <stddef.h>
#include <stdint.h>

struct ina_npy;

/*
 * Opens 'path' and checks that it holds '<f4' data, C order, with 1 to 3
 * dimensions. Returns NULL with a message in 'err' on any problem.
 */
struct ina_npy *ina_npy_open(const char *path, char *err, size_t err_size);
void ina_npy_close(struct ina_npy *npy); /* Accepts NULL. */

/* Number of dimensions, and the size of dimension 'i' (1 past the last). */
unsigned ina_npy_ndim(const struct ina_npy *npy);
uint64_t ina_npy_dim(const struct ina_npy *npy, unsigned i);

/*
 * Reads row 'row' (the last dimension's 'n' floats, rows counted in C order
 * over the leading dimensions) into 'dst'. 0 or -errno.
 */
int ina_npy_read_row(struct ina_npy *npy, uint64_t row, float *dst, size_t n);

#endif
