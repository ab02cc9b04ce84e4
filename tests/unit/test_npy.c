/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of npy.c: reads the real gradient dump in data/ (its shape and
 * values checked against figures computed with Python's struct module), and
 * rejects malformed files written to a temporary directory, with a message
 * that names the file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ina/npy.h"

#ifndef INA_SOURCE_DIR
#error "INA_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

#define GRADS INA_SOURCE_DIR "/data/grads_cnn_digits_3it.npy"
#define GRADS_ROW 71754

static char tmp_dir[256];

static int
group_setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	snprintf(tmp_dir, sizeof(tmp_dir), "%s/ina_npy_XXXXXX", base ? base : "/tmp");
	return mkdtemp(tmp_dir) ? 0 : -1;
}

static int
group_teardown(void **state)
{
	(void)state;
	return rmdir(tmp_dir);
}

static uint32_t
bits_of(float f)
{
	uint32_t v;

	memcpy(&v, &f, sizeof(v));
	return v;
}

/*
 * Writes tmp_dir/name: magic, version major.0, the header 'dict' padded with
 * spaces and a newline to a multiple of 64 bytes, then 'data_size' bytes of
 * little-endian floats 0, 1, 2, ... Returns the path (static storage).
 */
static const char *
write_npy(const char *name, const char *magic, int major, const char *dict, size_t data_size)
{
	static char path[512];
	char hdr[512];
	size_t pre = major == 1 ? 10 : 12, len, i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
	len = (size_t)snprintf(hdr, sizeof(hdr), "%s", dict);
	while ((pre + len + 1) % 64 != 0)
		hdr[len++] = ' ';
	hdr[len++] = '\n';
	f = fopen(path, "wb");
	assert_non_null(f);
	fwrite(magic, 1, 6, f);
	fputc(major, f);
	fputc(0, f);
	fputc((int)(len & 0xff), f);
	fputc((int)(len >> 8), f);
	if (major != 1) {
		fputc(0, f);
		fputc(0, f);
	}
	fwrite(hdr, 1, len, f);
	for (i = 0; i < data_size; i++) {
		float v = (float)(i / 4);
		uint32_t b = bits_of(v);

		fputc((int)((b >> (8 * (i % 4))) & 0xff), f);
	}
	assert_int_equal(fclose(f), 0);
	return path;
}

/* Opening must fail, with a message naming the file and containing 'what'. */
static void
assert_rejected(const char *path, const char *what)
{
	char err[512];
	struct ina_npy *npy;

	errno = 0;
	npy = ina_npy_open(path, err, sizeof(err));
	if (npy != NULL)
		fail_msg("%s: accepted", path);
	assert_true(errno != 0);
	if (strstr(err, path) == NULL || strstr(err, what) == NULL)
		fail_msg("message \"%s\" lacks the path or \"%s\"", err, what);
	assert_int_equal(unlink(path), 0);
}

static void
test_npy_reads_real_file(void **state)
{
	char err[256];
	struct ina_npy *npy;
	float *row;
	double sum = 0;
	size_t i, nb_nonzero;

	(void)state;
	npy = ina_npy_open(GRADS, err, sizeof(err));
	if (npy == NULL)
		fail_msg("%s", err);
	assert_int_equal(ina_npy_ndim(npy), 3);
	assert_int_equal(ina_npy_dim(npy, 0), 3);
	assert_int_equal(ina_npy_dim(npy, 1), 4);
	assert_int_equal(ina_npy_dim(npy, 2), GRADS_ROW);
	assert_int_equal(ina_npy_dim(npy, 3), 1);
	row = malloc(GRADS_ROW * sizeof(*row));
	assert_non_null(row);

	assert_int_equal(ina_npy_read_row(npy, 0, row, GRADS_ROW), 0);
	assert_int_equal(bits_of(row[0]), 0);
	assert_int_equal(bits_of(row[9]), 0x39ca7bea);		   /* 0.00038620766 */
	assert_int_equal(bits_of(row[GRADS_ROW - 1]), 0x3b81fb6e); /* 0.0039667403 */
	for (i = 0, nb_nonzero = 0; i < GRADS_ROW; i++)
		nb_nonzero += row[i] != 0.0f;
	assert_int_equal(nb_nonzero, 45100);

	assert_int_equal(ina_npy_read_row(npy, 5, row, GRADS_ROW), 0);
	assert_int_equal(bits_of(row[0]), 0x3a168975); /* 0.00057425286 */

	assert_int_equal(ina_npy_read_row(npy, 7, row, GRADS_ROW), 0);
	assert_int_equal(bits_of(row[30000]), 0x3ca584c2); /* 0.020204905 */
	for (i = 0; i < GRADS_ROW; i++)
		sum += row[i];
	assert_true(sum == -0x1.79e1d002a576fp+4); /* summed in order in double */

	assert_int_equal(ina_npy_read_row(npy, 11, row, GRADS_ROW), 0);
	assert_int_equal(bits_of(row[0]), 0xb7449b48);		   /* -1.1718665e-05 */
	assert_int_equal(bits_of(row[GRADS_ROW - 1]), 0xbb936258); /* -0.0044978075 */
	for (i = 0, nb_nonzero = 0; i < GRADS_ROW; i++)
		nb_nonzero += row[i] != 0.0f;
	assert_int_equal(nb_nonzero, 44953);

	assert_int_equal(ina_npy_read_row(npy, 12, row, GRADS_ROW), -ERANGE);
	assert_int_equal(ina_npy_read_row(npy, 0, row, GRADS_ROW - 1), -EINVAL);
	free(row);
	ina_npy_close(npy);
	ina_npy_close(NULL);
}

static void
test_npy_reads_small_files(void **state)
{
	char err[256];
	struct ina_npy *npy;
	const char *path;
	float row[5];

	(void)state;
	/* 1 dimension, with the trailing comma, format 2.0, double quotes. */
	path = write_npy("v2.npy", "\x93NUMPY", 2,
			 "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (5,), }",
			 5 * 4);
	npy = ina_npy_open(path, err, sizeof(err));
	if (npy == NULL)
		fail_msg("%s", err);
	assert_int_equal(ina_npy_ndim(npy), 1);
	assert_int_equal(ina_npy_dim(npy, 0), 5);
	assert_int_equal(ina_npy_dim(npy, 1), 1);
	assert_int_equal(ina_npy_read_row(npy, 0, row, 5), 0);
	assert_true(row[0] == 0.0f && row[4] == 4.0f);
	assert_int_equal(ina_npy_read_row(npy, 1, row, 5), -ERANGE);
	ina_npy_close(npy);
	assert_int_equal(unlink(path), 0);

	/* 2 dimensions, keys in another order, no trailing comma. */
	path = write_npy("two.npy", "\x93NUMPY", 1,
			 "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", 6 * 4);
	npy = ina_npy_open(path, err, sizeof(err));
	if (npy == NULL)
		fail_msg("%s", err);
	assert_int_equal(ina_npy_ndim(npy), 2);
	assert_int_equal(ina_npy_read_row(npy, 1, row, 3), 0);
	assert_true(row[0] == 3.0f && row[2] == 5.0f);
	ina_npy_close(npy);
	assert_int_equal(unlink(path), 0);
}

static void
test_npy_rejects_bad_magic(void **state)
{
	char err[256];

	(void)state;
	assert_rejected(write_npy("magic.npy", "\x93NUMPZ", 1,
				  "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8),
			"magic");
	assert_rejected(write_npy("version.npy", "\x93NUMPY", 4,
				  "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8),
			"version");
	assert_null(ina_npy_open(INA_SOURCE_DIR "/data/no-such-file.npy", err, sizeof(err)));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err, "no-such-file.npy"));
}

static void
test_npy_rejects_other_dtype(void **state)
{
	(void)state;
	assert_rejected(write_npy("f8.npy", "\x93NUMPY", 1,
				  "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16),
			"<f4");
	assert_rejected(write_npy("bigf4.npy", "\x93NUMPY", 1,
				  "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8),
			"<f4");
}

static void
test_npy_rejects_fortran_order(void **state)
{
	(void)state;
	assert_rejected(write_npy("fortran.npy", "\x93NUMPY", 1,
				  "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16),
			"Fortran");
}

static void
test_npy_rejects_truncated(void **state)
{
	(void)state;
	assert_rejected(write_npy("short.npy", "\x93NUMPY", 1,
				  "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
				  12 * 4 - 1),
			"truncated");
	assert_rejected(write_npy("long.npy", "\x93NUMPY", 1,
				  "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
				  12 * 4 + 4),
			"after the data");
}

static void
test_npy_rejects_bad_shape(void **state)
{
	(void)state;
	assert_rejected(write_npy("dims4.npy", "\x93NUMPY", 1,
				  "{'descr': '<f4', 'fortran_order': False, "
				  "'shape': (1, 1, 1, 2), }",
				  8),
			"dimensions");
	assert_rejected(write_npy("dims0.npy", "\x93NUMPY", 1,
				  "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4),
			"dimensions");
	assert_rejected(write_npy("huge.npy", "\x93NUMPY", 1,
				  "{'descr': '<f4', 'fortran_order': False, "
				  "'shape': (99999999999999999999,), }",
				  8),
			"too large");
	assert_rejected(write_npy("noshape.npy", "\x93NUMPY", 1,
				  "{'descr': '<f4', 'fortran_order': False}", 8),
			"shape");
	assert_rejected(write_npy("garbage.npy", "\x93NUMPY", 1,
				  "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", 8),
			"bad header");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_npy_reads_real_file),
		cmocka_unit_test(test_npy_reads_small_files),
		cmocka_unit_test(test_npy_rejects_bad_magic),
		cmocka_unit_test(test_npy_rejects_other_dtype),
		cmocka_unit_test(test_npy_rejects_fortran_order),
		cmocka_unit_test(test_npy_rejects_truncated),
		cmocka_unit_test(test_npy_rejects_bad_shape),
	};

	return cmocka_run_group_tests_name("npy", tests, group_setup, group_teardown);
}
