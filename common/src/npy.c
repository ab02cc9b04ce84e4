/* SPDX-License-Identifier: MIT */
/*
 * Reader of npy.h for NumPy .npy files (format versions 1.0 and 2.0) of
 * little-endian float32 in C order with 1 to 3 dimensions: the real gradient
 * dumps in data/. ina_npy_open parses and checks the header once; rows are
 * then read with pread, so the file is never loaded whole.
 */
#include "ina/npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_SIZE 6
#define NPY_MAX_DIMS 3
/* Longest header accepted; NumPy writes a few hundred bytes. */
#define NPY_MAX_HEADER (1u << 16)

/* The data are little-endian; a big-endian host swaps what it reads. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define NPY_SWAP 1
#else
#define NPY_SWAP 0
#endif

struct ina_npy {
	int fd;
	unsigned ndim;
	uint64_t dims[NPY_MAX_DIMS];
	uint64_t data_offset; /* bytes from the start of the file */
	uint64_t row_len;     /* elements: the last dimension */
	uint64_t nb_rows;     /* product of the leading dimensions */
};

/* The header dict as parsed: which keys were seen, and their values. */
struct npy_dict {
	int have_descr, have_fortran, have_shape;
	int descr_ok; /* descr is '<f4' */
	int fortran_order;
	unsigned ndim;
	uint64_t dims[NPY_MAX_DIMS + 1];
};

/* A cursor over the header text; 'why' says what went wrong. */
struct npy_parser {
	const char *p, *end;
	const char *why;
};

static void set_err(char *err, size_t err_size, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
set_err(char *err, size_t err_size, const char *path, const char *fmt, ...)
{
	va_list ap;
	int len;

	if (err == NULL || err_size == 0)
		return;
	len = snprintf(err, err_size, "%s: ", path);
	if (len < 0 || (size_t)len >= err_size)
		return;
	va_start(ap, fmt);
	vsnprintf(err + len, err_size - (size_t)len, fmt, ap);
	va_end(ap);
}

static void
skip_space(struct npy_parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

/* Consumes 'c' after optional white space; 1 if it was there. */
static int
accept(struct npy_parser *ps, char c)
{
	skip_space(ps);
	if (ps->p < ps->end && *ps->p == c) {
		ps->p++;
		return 1;
	}
	return 0;
}

/* A Python string literal in single or double quotes, without escapes. */
static int
parse_str(struct npy_parser *ps, const char **s, size_t *len)
{
	char quote;

	skip_space(ps);
	if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"')) {
		ps->why = "expected a string";
		return -1;
	}
	quote = *ps->p++;
	*s = ps->p;
	while (ps->p < ps->end && *ps->p != quote) {
		if (*ps->p == '\\') {
			ps->why = "escapes in strings are not supported";
			return -1;
		}
		ps->p++;
	}
	if (ps->p >= ps->end) {
		ps->why = "unterminated string";
		return -1;
	}
	*len = (size_t)(ps->p - *s);
	ps->p++;
	return 0;
}

static int
parse_bool(struct npy_parser *ps, int *b)
{
	skip_space(ps);
	if (ps->end - ps->p >= 4 && memcmp(ps->p, "True", 4) == 0) {
		ps->p += 4;
		*b = 1;
		return 0;
	}
	if (ps->end - ps->p >= 5 && memcmp(ps->p, "False", 5) == 0) {
		ps->p += 5;
		*b = 0;
		return 0;
	}
	ps->why = "expected True or False";
	return -1;
}

/* A decimal number, with an 'L' suffix as Python 2 NumPy wrote. */
static int
parse_u64(struct npy_parser *ps, uint64_t *v)
{
	uint64_t x = 0;
	const char *start;

	skip_space(ps);
	start = ps->p;
	while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
		unsigned d = (unsigned)(*ps->p - '0');

		if (x > (UINT64_MAX - d) / 10) {
			ps->why = "dimension too large";
			return -1;
		}
		x = x * 10 + d;
		ps->p++;
	}
	if (ps->p == start) {
		ps->why = "expected a dimension";
		return -1;
	}
	if (ps->p < ps->end && *ps->p == 'L')
		ps->p++;
	*v = x;
	return 0;
}

/* (), (a,), (a, b) or (a, b, c,): up to NPY_MAX_DIMS + 1 dimensions are
 * kept, so that one too many can be reported as such. */
static int
parse_shape(struct npy_parser *ps, struct npy_dict *d)
{
	uint64_t v;

	if (!accept(ps, '(')) {
		ps->why = "expected a shape tuple";
		return -1;
	}
	d->ndim = 0;
	if (accept(ps, ')'))
		return 0;
	for (;;) {
		if (parse_u64(ps, &v) < 0)
			return -1;
		if (d->ndim <= NPY_MAX_DIMS)
			d->dims[d->ndim] = v;
		if (d->ndim < NPY_MAX_DIMS + 1)
			d->ndim++;
		if (accept(ps, ')'))
			break;
		if (!accept(ps, ',')) {
			ps->why = "expected ',' or ')' in the shape";
			return -1;
		}
		if (accept(ps, ')'))
			break;
	}
	return 0;
}

/* {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4, 71754), } */
static int
parse_dict(struct npy_parser *ps, struct npy_dict *d)
{
	const char *key, *val;
	size_t key_len, val_len;

	memset(d, 0, sizeof(*d));
	if (!accept(ps, '{')) {
		ps->why = "header is not a dict";
		return -1;
	}
	while (!accept(ps, '}')) {
		if (parse_str(ps, &key, &key_len) < 0)
			return -1;
		if (!accept(ps, ':')) {
			ps->why = "expected ':' after a key";
			return -1;
		}
		if (key_len == 5 && memcmp(key, "descr", 5) == 0) {
			if (parse_str(ps, &val, &val_len) < 0)
				return -1;
			d->have_descr = 1;
			d->descr_ok = val_len == 3 && memcmp(val, "<f4", 3) == 0;
		} else if (key_len == 13 && memcmp(key, "fortran_order", 13) == 0) {
			if (parse_bool(ps, &d->fortran_order) < 0)
				return -1;
			d->have_fortran = 1;
		} else if (key_len == 5 && memcmp(key, "shape", 5) == 0) {
			if (parse_shape(ps, d) < 0)
				return -1;
			d->have_shape = 1;
		} else {
			ps->why = "unknown key in the header";
			return -1;
		}
		if (!accept(ps, ',')) {
			if (accept(ps, '}'))
				break;
			ps->why = "expected ',' or '}' in the header";
			return -1;
		}
	}
	skip_space(ps);
	if (ps->p != ps->end) {
		ps->why = "trailing characters after the header dict";
		return -1;
	}
	return 0;
}

static int
read_full(int fd, void *buf, size_t size, uint64_t offset)
{
	uint8_t *b = buf;

	while (size > 0) {
		ssize_t ret = pread(fd, b, size, (off_t)offset);

		if (ret < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (ret == 0)
			return -EIO; /* the file shrank under us */
		b += ret;
		size -= (size_t)ret;
		offset += (uint64_t)ret;
	}
	return 0;
}

/* Reads and checks the header of the open file 'npy->fd'; 0 or -errno. */
static int
read_header(struct ina_npy *npy, const char *path, char *err, size_t err_size)
{
	uint8_t pre[12];
	struct npy_parser ps;
	struct npy_dict d;
	struct stat st;
	uint64_t hdr_len, hdr_start, n_elems, data_size;
	char *hdr = NULL;
	unsigned i;
	int ret;

	if (fstat(npy->fd, &st) < 0) {
		ret = -errno;
		set_err(err, err_size, path, "%s", strerror(-ret));
		return ret;
	}
	if (st.st_size < 10) {
		set_err(err, err_size, path, "not a .npy file (%lld bytes)", (long long)st.st_size);
		return -EINVAL;
	}
	ret = read_full(npy->fd, pre, 10, 0);
	if (ret < 0) {
		set_err(err, err_size, path, "reading the header: %s", strerror(-ret));
		return ret;
	}
	if (memcmp(pre, NPY_MAGIC, NPY_MAGIC_SIZE) != 0) {
		set_err(err, err_size, path, "not a .npy file (bad magic)");
		return -EINVAL;
	}
	if (pre[6] == 1 && pre[7] == 0) {
		hdr_len = pre[8] | (uint64_t)pre[9] << 8;
		hdr_start = 10;
	} else if (pre[6] == 2 && pre[7] == 0) {
		if (st.st_size < 12 || read_full(npy->fd, pre + 10, 2, 10) < 0) {
			set_err(err, err_size, path, "truncated header");
			return -EINVAL;
		}
		hdr_len = pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 |
			  (uint64_t)pre[11] << 24;
		hdr_start = 12;
	} else {
		set_err(err, err_size, path, "unsupported .npy version %u.%u", pre[6], pre[7]);
		return -EINVAL;
	}
	if (hdr_len > NPY_MAX_HEADER) {
		set_err(err, err_size, path, "header of %llu bytes is too long",
			(unsigned long long)hdr_len);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size < hdr_start + hdr_len) {
		set_err(err, err_size, path, "truncated header");
		return -EINVAL;
	}
	hdr = malloc(hdr_len + 1);
	if (hdr == NULL) {
		set_err(err, err_size, path, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	ret = read_full(npy->fd, hdr, hdr_len, hdr_start);
	if (ret < 0) {
		set_err(err, err_size, path, "reading the header: %s", strerror(-ret));
		goto out;
	}
	hdr[hdr_len] = '\0';

	ps.p = hdr;
	ps.end = hdr + hdr_len;
	ps.why = NULL;
	ret = -EINVAL;
	if (parse_dict(&ps, &d) < 0) {
		set_err(err, err_size, path, "bad header at byte %llu: %s",
			(unsigned long long)(hdr_start + (uint64_t)(ps.p - hdr)), ps.why);
		goto out;
	}
	if (!d.have_descr || !d.have_fortran || !d.have_shape) {
		set_err(err, err_size, path, "header lacks '%s'",
			!d.have_descr	  ? "descr"
			: !d.have_fortran ? "fortran_order"
					  : "shape");
		goto out;
	}
	if (!d.descr_ok) {
		set_err(err, err_size, path, "data type is not '<f4' (little-endian float32)");
		goto out;
	}
	if (d.fortran_order) {
		set_err(err, err_size, path, "Fortran order is not supported");
		goto out;
	}
	if (d.ndim < 1 || d.ndim > NPY_MAX_DIMS) {
		set_err(err, err_size, path, "%s dimensions, not 1 to %d",
			d.ndim > NPY_MAX_DIMS ? "more than 3" : "0", NPY_MAX_DIMS);
		goto out;
	}

	npy->ndim = d.ndim;
	n_elems = 1;
	for (i = 0; i < d.ndim; i++) {
		npy->dims[i] = d.dims[i];
		if (d.dims[i] != 0 && n_elems > UINT64_MAX / 4 / d.dims[i]) {
			set_err(err, err_size, path, "shape is too large");
			goto out;
		}
		n_elems *= d.dims[i];
	}
	npy->row_len = d.dims[d.ndim - 1];
	npy->nb_rows = 1;
	for (i = 0; i + 1 < d.ndim; i++)
		npy->nb_rows *= d.dims[i];
	npy->data_offset = hdr_start + hdr_len;
	data_size = n_elems * 4;
	if ((uint64_t)st.st_size - npy->data_offset < data_size) {
		set_err(err, err_size, path, "truncated: %llu data bytes, the shape needs %llu",
			(unsigned long long)((uint64_t)st.st_size - npy->data_offset),
			(unsigned long long)data_size);
		goto out;
	}
	if ((uint64_t)st.st_size - npy->data_offset > data_size) {
		set_err(err, err_size, path, "%llu bytes after the data the shape needs",
			(unsigned long long)((uint64_t)st.st_size - npy->data_offset - data_size));
		goto out;
	}
	ret = 0;
out:
	free(hdr);
	return ret;
}

struct ina_npy *
ina_npy_open(const char *path, char *err, size_t err_size)
{
	struct ina_npy *npy;
	int ret;

	if (err != NULL && err_size > 0)
		err[0] = '\0';
	npy = calloc(1, sizeof(*npy));
	if (npy == NULL) {
		set_err(err, err_size, path, "%s", strerror(ENOMEM));
		errno = ENOMEM;
		return NULL;
	}
	npy->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (npy->fd < 0) {
		ret = -errno;
		set_err(err, err_size, path, "%s", strerror(-ret));
		goto err;
	}
	ret = read_header(npy, path, err, err_size);
	if (ret < 0)
		goto err;
	return npy;
err:
	ina_npy_close(npy);
	errno = -ret;
	return NULL;
}

void
ina_npy_close(struct ina_npy *npy)
{
	if (npy == NULL)
		return;
	if (npy->fd >= 0)
		close(npy->fd);
	free(npy);
}

unsigned
ina_npy_ndim(const struct ina_npy *npy)
{
	return npy->ndim;
}

uint64_t
ina_npy_dim(const struct ina_npy *npy, unsigned i)
{
	return i < npy->ndim ? npy->dims[i] : 1;
}

/* -EINVAL unless 'n' is the row length, -ERANGE for a row past the end. */
int
ina_npy_read_row(struct ina_npy *npy, uint64_t row, float *dst, size_t n)
{
	size_t i;
	int ret;

	if ((uint64_t)n != npy->row_len)
		return -EINVAL;
	if (row >= npy->nb_rows)
		return -ERANGE;
	ret = read_full(npy->fd, dst, n * sizeof(*dst),
			npy->data_offset + row * npy->row_len * sizeof(*dst));
	if (ret < 0)
		return ret;
	if (NPY_SWAP) {
		for (i = 0; i < n; i++) {
			uint32_t v;

			memcpy(&v, &dst[i], sizeof(v));
			v = __builtin_bswap32(v);
			memcpy(&dst[i], &v, sizeof(v));
		}
	}
	return 0;
}
