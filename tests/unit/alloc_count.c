/* SPDX-License-Identifier: MIT */
/* The malloc-family wrappers behind alloc_count.h. */
#include <stddef.h>

#include "alloc_count.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);
int __real_posix_memalign(void **p, size_t align, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);
int __wrap_posix_memalign(void **p, size_t align, size_t size);

uint64_t alloc_nb, alloc_bytes;
static int counting;

static void
count(size_t size)
{
	if (counting) {
		alloc_nb++;
		alloc_bytes += size;
	}
}

void *
__wrap_malloc(size_t size)
{
	count(size);
	return __real_malloc(size);
}

void *
__wrap_calloc(size_t n, size_t size)
{
	count(n * size);
	return __real_calloc(n, size);
}

void *
__wrap_realloc(void *p, size_t size)
{
	count(size);
	return __real_realloc(p, size);
}

void *
__wrap_aligned_alloc(size_t align, size_t size)
{
	count(size);
	return __real_aligned_alloc(align, size);
}

int
__wrap_posix_memalign(void **p, size_t align, size_t size)
{
	count(size);
	return __real_posix_memalign(p, align, size);
}

void
alloc_count_on(void)
{
	alloc_nb = 0;
	alloc_bytes = 0;
	counting = 1;
}

void
alloc_count_off(void)
{
	counting = 0;
}
