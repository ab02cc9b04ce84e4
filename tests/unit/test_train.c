/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of ina-train's model and data (train/model.c, train/data.c): the
 * analytic gradient of softmax regression and of the MLP against central
 * finite differences, an SGD step that
 * lowers the loss, the shipped digits data set read whole, malformed CSV
 * rejected with a message naming the line, gzip and plain input, the split
 * and the shards covering every row once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "data.h"
#include "ina/util.h"
#include "model.h"

#ifndef INA_SOURCE_DIR
#error "INA_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

#define DIGITS INA_SOURCE_DIR "/data/digits.csv.gz"

static char tmp_dir[256];

static int
group_setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	snprintf(tmp_dir, sizeof(tmp_dir), "%s/ina_train_XXXXXX", base ? base : "/tmp");
	return mkdtemp(tmp_dir) ? 0 : -1;
}

static int
group_teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Writes 'text' to a file in tmp_dir, gzip-compressed if 'gz'; its path. */
static const char *
write_file(const char *name, const char *text, int gz)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
	if (gz) {
		gzFile f = gzopen(path, "wb");

		assert_non_null(f);
		assert_int_equal(gzputs(f, text), (int)strlen(text));
		assert_int_equal(gzclose(f), Z_OK);
	} else {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs(text, f);
		assert_int_equal(fclose(f), 0);
	}
	return path;
}

/* A small random problem: n rows of dim features, classes labels. */
static void
make_problem(size_t n, size_t dim, size_t classes, float *x, uint8_t *y)
{
	uint64_t st = 42;

	for (size_t i = 0; i < n * dim; i++)
		x[i] = (float)((double)(ina_splitmix64(&st) >> 11) * 0x1p-53);
	for (size_t i = 0; i < n; i++)
		y[i] = (uint8_t)(ina_splitmix64(&st) % classes);
}

static void
test_gradient_finite_differences(void **state)
{
	enum { N = 7, D = 5, C = 4 };
	float x[N * D], grad[C * D + C];
	uint8_t y[N];
	uint32_t idx[] = { 6, 0, 3, 3, 5 }; /* a batch, with a repeat */
	struct model m;

	(void)state;
	make_problem(N, D, C, x, y);
	assert_int_equal(model_init(&m, D, 0, C, 9), 0);
	assert_int_equal(m.n_params, C * D + C);
	/* Biases away from 0, so their gradient is tested off the symmetric point. */
	for (size_t c = 0; c < C; c++)
		m.params[C * D + c] = 0.1f * (float)c - 0.15f;
	double loss = model_gradient(&m, x, y, idx, 5, grad);

	assert_true(fabs(loss - model_loss(&m, x, y, idx, 5)) < 1e-12);
	for (size_t i = 0; i < m.n_params; i++) {
		const float h = 1e-2f;
		float keep = m.params[i];
		double up, down, fd;

		m.params[i] = keep + h;
		up = model_loss(&m, x, y, idx, 5);
		m.params[i] = keep - h;
		down = model_loss(&m, x, y, idx, 5);
		m.params[i] = keep;
		fd = (up - down) / (double)(2 * h);
		if (fabs(fd - grad[i]) > 1e-4 + 1e-3 * fabs(fd))
			fail_msg("param %zu: analytic %g, finite differences %g", i, grad[i], fd);
	}
	model_free(&m);
}

/* The MLP (hidden ReLU layer): every parameter's analytic derivative
 * against central differences, away from the ReLU's kink. */
static void
test_mlp_gradient_finite_differences(void **state)
{
	enum { N = 6, D = 5, H = 7, C = 3 };
	float x[N * D], grad[H * D + H + C * H + C];
	uint8_t y[N];
	struct model m;
	size_t checked = 0;

	(void)state;
	make_problem(N, D, C, x, y);
	assert_int_equal(model_init(&m, D, H, C, 5), 0);
	assert_int_equal(m.n_params, H * D + H + C * H + C);
	model_gradient(&m, x, y, NULL, N, grad);
	for (size_t i = 0; i < m.n_params; i++) {
		const float h = 1e-3f;
		float keep = m.params[i];
		double up, down, fd;
		float g_up[H * D + H + C * H + C], g_down[H * D + H + C * H + C];

		m.params[i] = keep + h;
		up = model_gradient(&m, x, y, NULL, N, g_up);
		m.params[i] = keep - h;
		down = model_gradient(&m, x, y, NULL, N, g_down);
		m.params[i] = keep;
		/* A kink crossed inside [-h, h] changes the derivative: skip. */
		if (fabsf(g_up[i] - g_down[i]) > 0.05f * fabsf(grad[i]) + 1e-3f)
			continue;
		fd = (up - down) / (double)(2 * h);
		if (fabs(fd - grad[i]) > 1e-4 + 1e-3 * fabs(fd))
			fail_msg("param %zu: analytic %g, finite differences %g", i, grad[i], fd);
		checked++;
	}
	assert_true(checked > m.n_params * 9 / 10);
	model_free(&m);
	assert_int_equal(model_init(&m, D, MODEL_MAX_HIDDEN + 1, C, 1), -EINVAL);
}

static void
test_sgd_lowers_loss(void **state)
{
	enum { N = 20, D = 6, C = 3 };
	float x[N * D], grad[C * D + C], probs[C];
	uint8_t y[N];
	struct model m;
	double before, after = 0;

	(void)state;
	make_problem(N, D, C, x, y);
	assert_int_equal(model_init(&m, D, 0, C, 1), 0);
	before = model_loss(&m, x, y, NULL, N);
	assert_true(fabs(before - log(C)) < 0.05); /* near-uniform at the start */
	for (int k = 0; k < 50; k++) {
		model_gradient(&m, x, y, NULL, N, grad);
		model_sgd_step(&m, grad, 0.5f);
		after = model_loss(&m, x, y, NULL, N);
	}
	assert_true(after < before - 0.05);
	model_forward(&m, x, probs);
	assert_true(fabs(probs[0] + probs[1] + probs[2] - 1.0f) < 1e-6);
	assert_true(model_accuracy(&m, x, y, N) >= 0 && model_accuracy(&m, x, y, N) <= 1);
	model_free(&m);
	assert_int_equal(model_init(&m, 0, 0, C, 1), -EINVAL);
	assert_int_equal(model_init(&m, D, 0, 1, 1), -EINVAL);
}

static void
test_digits(void **state)
{
	struct dataset ds, train, test;
	char err[256] = "";
	size_t counts[10] = { 0 }, total = 0;
	uint32_t shard[400];

	(void)state;
	assert_int_equal(data_load_csv(DIGITS, &ds, err, sizeof(err)), 0);
	assert_int_equal(ds.n, 1797);
	assert_int_equal(ds.dim, 64);
	assert_int_equal(ds.classes, 10);
	/* The first row (zcat data/digits.csv.gz | head -1). */
	assert_true(ds.x[2] == 5.0f && ds.x[3] == 13.0f && ds.y[0] == 0);
	for (size_t i = 0; i < ds.n; i++)
		counts[ds.y[i]]++;
	for (int c = 0; c < 10; c++)
		assert_true(counts[c] >= 170 && counts[c] <= 190);
	data_scale(&ds, 16);
	for (size_t i = 0; i < ds.n * ds.dim; i++)
		assert_true(ds.x[i] >= 0 && ds.x[i] <= 1);
	assert_int_equal(data_split(&ds, 0, 0.2, &train, &test), 0);
	assert_int_equal(test.n, 360);
	assert_int_equal(train.n, 1437);
	/* Every shard of 4 has its share; together, every training row once. */
	for (unsigned r = 0; r < 4; r++) {
		size_t k = data_shard(train.n, 4, r, shard);

		assert_true(k == train.n / 4 || k == train.n / 4 + 1);
		for (size_t i = 0; i < k; i++)
			assert_int_equal(shard[i] % 4, r);
		total += k;
	}
	assert_int_equal(total, train.n);
	/* The same seed gives the same split. */
	struct dataset train2, test2;

	assert_int_equal(data_split(&ds, 0, 0.2, &train2, &test2), 0);
	assert_memory_equal(test.x, test2.x, test.n * test.dim * sizeof(float));
	data_free(&train2);
	data_free(&test2);
	assert_int_equal(data_split(&ds, 0, 1.0, &train2, &test2), -EINVAL);
	data_free(&train);
	data_free(&test);
	data_free(&ds);
}

static void
test_csv_good(void **state)
{
	struct dataset ds;
	char err[256] = "";

	(void)state;
	/* Blank lines, CRLF, spaces, decimals and a missing final newline. */
	const char *p = write_file("good.csv", "1,2,0\r\n\n 0.5 , 3 ,2\n  \n4,5,1", 0);

	assert_int_equal(data_load_csv(p, &ds, err, sizeof(err)), 0);
	assert_int_equal(ds.n, 3);
	assert_int_equal(ds.dim, 2);
	assert_int_equal(ds.classes, 3);
	assert_true(ds.x[2] == 0.5f && ds.x[3] == 3.0f && ds.y[1] == 2);
	data_free(&ds);
	p = write_file("good.csv.gz", "1,2,0\n3,4,1\n", 1);
	assert_int_equal(data_load_csv(p, &ds, err, sizeof(err)), 0);
	assert_int_equal(ds.n, 2);
	data_free(&ds);
}

/* A malformed file: refused, and the message holds 'where' and 'what'. */
static void
expect_bad(const char *name, const char *text, int gz, const char *where, const char *what)
{
	struct dataset ds;
	char err[256] = "";
	const char *p = write_file(name, text, gz);

	assert_true(data_load_csv(p, &ds, err, sizeof(err)) < 0);
	if (!strstr(err, where) || !strstr(err, what))
		fail_msg("%s: message \"%s\" lacks \"%s\" or \"%s\"", name, err, where, what);
	assert_null(ds.x);
	assert_int_equal(ds.n, 0);
}

static void
test_csv_malformed(void **state)
{
	struct dataset ds;
	char err[256] = "";
	static char longline[DATA_MAX_LINE + 100];

	(void)state;
	expect_bad("fields.csv", "1,2,0\n1,2,3,1\n", 0,
		   "fields.csv:2:", "4 fields, the first row has 3");
	expect_bad("short.csv.gz", "1,2,0\n\n1,1\n", 1, "short.csv.gz:3:", "2 fields");
	expect_bad("text.csv", "1,2,0\n1,x,1\n", 0, ":2:", "not a number");
	expect_bad("empty.csv", "1,,0\n", 0, ":1:", "empty field");
	expect_bad("trail.csv", "1,2,0\n1,2,\n", 0, ":2:", "empty field");
	expect_bad("label.csv", "1,2,0\n1,2,1.5\n", 0, ":2:", "label");
	expect_bad("neg.csv", "1,2,-1\n", 0, ":1:", "label");
	expect_bad("big.csv", "1,2,0\n1,2,256\n", 0, ":2:", "label");
	expect_bad("nan.csv", "1,2,0\n1,2,0\nnan,2,1\n", 0, ":3:", "not finite");
	expect_bad("inf.csv", "1e999,2,0\n", 0, ":1:", "not finite");
	expect_bad("junk.csv", "1,2,0\n1,2 3,1\n", 0, ":2:", "not a number");
	expect_bad("one.csv", "1\n", 0, ":1:", "fewer than 2 fields");
	expect_bad("none.csv", "\n\n", 0, "none.csv", "no rows");
	expect_bad("oneclass.csv", "1,0\n2,0\n", 0, "oneclass.csv", "fewer than 2 classes");
	memset(longline, '1', sizeof(longline) - 2);
	longline[sizeof(longline) - 2] = '\n';
	expect_bad("long.csv", longline, 0, ":1:", "longer than");
	/* A corrupt gzip stream: an error, not a short data set. */
	{
		const char *p = write_file("corrupt.csv.gz", "1,2,0\n3,4,1\n5,6,1\n7,8,0\n", 1);
		FILE *f = fopen(p, "r+b");

		assert_non_null(f);
		fseek(f, 14, SEEK_SET);
		fputs("garbage!", f);
		fclose(f);
		assert_true(data_load_csv(p, &ds, err, sizeof(err)) < 0);
		assert_non_null(strstr(err, "corrupt.csv.gz"));
	}
	assert_true(data_load_csv("/nonexistent/x.csv", &ds, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "/nonexistent/x.csv"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gradient_finite_differences),
		cmocka_unit_test(test_mlp_gradient_finite_differences),
		cmocka_unit_test(test_sgd_lowers_loss),
		cmocka_unit_test(test_digits),
		cmocka_unit_test(test_csv_good),
		cmocka_unit_test(test_csv_malformed),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
