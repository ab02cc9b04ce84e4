/* SPDX-License-Identifier: MIT */
/* A multi-tier job's sums, made by ina-testbed itself (expect.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "expect.h"
#include "ina/wire.h"
#include "plan.h"
#include "workload.h"

int
expect_exact(const struct topo_job *job)
{
	return job->data == TOPO_DATA_SYNTHETIC && workload_exact_encoding(job->encoding);
}

int
expect_hashes(const struct topo_job *job, const struct tiers *tr, uint64_t *want, char *err,
	      size_t errlen)
{
	size_t n = job->tensor_len;
	float *sum = malloc(n * sizeof(float) + 1), *in = malloc(n * sizeof(float) + 1);
	int ret = -1;

	if (!expect_exact(job)) {
		snprintf(err, errlen,
			 "job %s: only synthetic f32 or i32 data can be checked across switches",
			 job->name);
		goto out;
	}
	if (!sum || !in) {
		snprintf(err, errlen, "out of memory for job %s's sums", job->name);
		goto out;
	}
	for (uint32_t r = 0; r < job->rounds; r++) {
		memset(sum, 0, n * sizeof(float));
		for (uint16_t k = 0; k < job->nb_hosts; k++) {
			const struct tiers_member *m = &tr->m[job->hosts[k]];
			struct workload *w = workload_synth(job->tensor_len, job->density,
							    plan_host_seed(job, tr, job->hosts[k]),
							    m->world, job->block_size);

			if (!w || workload_fill(w, r, m->rank, in) < 0) {
				workload_destroy(w);
				snprintf(err, errlen, "job %s: cannot generate rank %u's data",
					 job->name, k);
				goto out;
			}
			workload_destroy(w);
			/* k * 2^-10 values: every partial sum exact, any order. */
			for (size_t i = 0; i < n; i++)
				sum[i] += in[i];
		}
		want[r] = XXH3_64bits(sum, n * sizeof(float));
	}
	ret = 0;
out:
	free(sum);
	free(in);
	return ret;
}
