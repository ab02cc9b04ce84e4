/* SPDX-License-Identifier: MIT */
/* Test gradients with exact float sums and near-cancelling runs (dyadic.h). */
#include "dyadic.h"
#include "ina/util.h"

void
dyadic_cancel_grads(float *grad, int world, uint32_t n, size_t stride, int round, uint32_t run)
{
	for (int r = 0; r < world; r++)
		for (uint32_t i = 0; i < n; i++) {
			int cancel = (i / run) % 4 == 1;
			uint64_t st = (uint64_t)round * 1000003u + (uint64_t)(cancel ? 0 : r) * n +
				      i;
			uint64_t h = ina_splitmix64(&st);
			int k = (int)(h % 2047) - 1023;

			if (cancel)
				k = (r % 2 ? -k : k) + (r == 0 ? (int)(h >> 40) % 3 - 1 : 0);
			grad[(size_t)r * stride + i] = (float)k / 1024.0f;
		}
}
