/* SPDX-License-Identifier: MIT */
/* ina-train's data (data.h): the CSV reader over zlib, the split, the shards. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "data.h"
#include "ina/util.h"

/* Parses one line into feats[0..*nf) and *label; 0 or -EINVAL with 'why'. */
static int
parse_line(char *s, float *feats, size_t *nf, long *label, const char **why)
{
	double vals[DATA_MAX_FEATURES + 1];
	size_t n = 0;

	for (;;) {
		char *end;
		double v;

		while (*s == ' ' || *s == '\t')
			s++;
		if (n == DATA_MAX_FEATURES + 1) {
			*why = "too many fields";
			return -EINVAL;
		}
		errno = 0;
		v = strtod(s, &end);
		if (end == s) {
			*why = *s == ',' || *s == '\0' ? "empty field" : "a field is not a number";
			return -EINVAL;
		}
		if (errno == ERANGE || !isfinite(v)) {
			*why = "a field is out of range or not finite";
			return -EINVAL;
		}
		vals[n++] = v;
		s = end;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0')
			break;
		if (*s != ',') {
			*why = "a field is not a number";
			return -EINVAL;
		}
		s++;
	}
	if (n < 2) {
		*why = "fewer than 2 fields (features, then a label)";
		return -EINVAL;
	}
	if (vals[n - 1] != floor(vals[n - 1]) || vals[n - 1] < 0 ||
	    vals[n - 1] >= DATA_MAX_CLASSES) {
		*why = "the label (last field) is not a whole number in 0..255";
		return -EINVAL;
	}
	for (size_t i = 0; i + 1 < n; i++)
		feats[i] = (float)vals[i];
	*nf = n - 1;
	*label = (long)vals[n - 1];
	return 0;
}

static int
grow(struct dataset *ds, size_t *cap)
{
	size_t c = *cap ? *cap * 2 : 256;
	float *x = realloc(ds->x, c * ds->dim * sizeof(*x));
	uint8_t *y;

	if (!x)
		return -ENOMEM;
	ds->x = x;
	y = realloc(ds->y, c);
	if (!y)
		return -ENOMEM;
	ds->y = y;
	*cap = c;
	return 0;
}

int
data_load_csv(const char *path, struct dataset *ds, char *err, size_t err_size)
{
	static char line[DATA_MAX_LINE];
	float feats[DATA_MAX_FEATURES];
	size_t cap = 0, lineno = 0;
	int ret = 0;
	gzFile f;

	memset(ds, 0, sizeof(*ds));
	f = gzopen(path, "rb");
	if (!f) {
		ina_errf(err, err_size, "%s: cannot open: %s", path, strerror(errno ? errno : EIO));
		return -ENOENT;
	}
	while (gzgets(f, line, sizeof(line))) {
		size_t len = strlen(line), nf = 0;
		const char *why = NULL;
		long label = 0;

		lineno++;
		if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
			ina_errf(err, err_size, "%s:%zu: line longer than %d bytes", path, lineno,
				 DATA_MAX_LINE - 2);
			ret = -EINVAL;
			goto out;
		}
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (strspn(line, " \t") == len)
			continue;
		if (parse_line(line, feats, &nf, &label, &why) < 0) {
			ina_errf(err, err_size, "%s:%zu: %s", path, lineno, why);
			ret = -EINVAL;
			goto out;
		}
		if (ds->n == 0) {
			ds->dim = nf;
		} else if (nf != ds->dim) {
			ina_errf(err, err_size, "%s:%zu: %zu fields, the first row has %zu", path,
				 lineno, nf + 1, ds->dim + 1);
			ret = -EINVAL;
			goto out;
		}
		if (ds->n == cap && (ret = grow(ds, &cap)) < 0) {
			ina_errf(err, err_size, "%s:%zu: out of memory", path, lineno);
			goto out;
		}
		memcpy(ds->x + ds->n * ds->dim, feats, nf * sizeof(float));
		ds->y[ds->n] = (uint8_t)label;
		if ((size_t)label + 1 > ds->classes)
			ds->classes = (size_t)label + 1;
		ds->n++;
	}
	if (!gzeof(f)) {
		int zerr;
		const char *msg = gzerror(f, &zerr);

		ina_errf(err, err_size, "%s:%zu: read error: %s", path, lineno + 1, msg);
		ret = -EIO;
		goto out;
	}
	if (ds->n == 0) {
		ina_errf(err, err_size, "%s: no rows", path);
		ret = -EINVAL;
	} else if (ds->classes < 2) {
		ina_errf(err, err_size, "%s: fewer than 2 classes", path);
		ret = -EINVAL;
	}
out:
	gzclose(f);
	if (ret < 0)
		data_free(ds);
	return ret;
}

void
data_free(struct dataset *ds)
{
	free(ds->x);
	free(ds->y);
	memset(ds, 0, sizeof(*ds));
}

void
data_scale(struct dataset *ds, float scale)
{
	for (size_t i = 0; i < ds->n * ds->dim; i++)
		ds->x[i] /= scale;
}

void
data_shuffle(uint32_t *idx, size_t n, uint64_t seed)
{
	uint64_t st = seed;

	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)(ina_splitmix64(&st) % i);
		uint32_t t = idx[i - 1];

		idx[i - 1] = idx[j];
		idx[j] = t;
	}
}

static int
take(const struct dataset *all, const uint32_t *idx, size_t n, struct dataset *out)
{
	out->n = n;
	out->dim = all->dim;
	out->classes = all->classes;
	out->x = malloc((n ? n : 1) * all->dim * sizeof(float));
	out->y = malloc(n ? n : 1);
	if (!out->x || !out->y) {
		data_free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(out->x + i * all->dim, all->x + (size_t)idx[i] * all->dim,
		       all->dim * sizeof(float));
		out->y[i] = all->y[idx[i]];
	}
	return 0;
}

int
data_split(const struct dataset *all, uint64_t seed, double test_frac, struct dataset *train,
	   struct dataset *test)
{
	size_t n_test = (size_t)ceil((double)all->n * test_frac);
	uint32_t *idx;
	int ret;

	memset(train, 0, sizeof(*train));
	memset(test, 0, sizeof(*test));
	if (!(test_frac > 0 && test_frac < 1) || n_test >= all->n || all->n > UINT32_MAX)
		return -EINVAL;
	idx = malloc(all->n * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < all->n; i++)
		idx[i] = (uint32_t)i;
	data_shuffle(idx, all->n, seed);
	ret = take(all, idx, all->n - n_test, train);
	if (ret == 0)
		ret = take(all, idx + all->n - n_test, n_test, test);
	if (ret < 0)
		data_free(train);
	free(idx);
	return ret;
}

size_t
data_shard(size_t n, unsigned workers, unsigned rank, uint32_t *idx)
{
	size_t k = 0;

	for (size_t i = rank; i < n; i += workers)
		idx[k++] = (uint32_t)i;
	return k;
}
