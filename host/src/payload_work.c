/* SPDX-License-Identifier: MIT */
/*
 * The deferred per-byte work of a burst (payload_work.h): a flat array of
 * encode and decode tasks, one of tags and one of held packets, all emptied
 * by the release.
 */
#include "payload_work.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum task_kind { TASK_ENCODE, TASK_DECODE };

struct task {
	enum task_kind kind;
	const struct ina_encoding_ops *enc;
	uint32_t n;
	int scale;
	float avg;
	uint8_t *payload; /* encode: written; decode: read */
	const float *src; /* encode */
	float *dst;	  /* decode */
	float *copy;	  /* decode: a second destination, or NULL */
};

struct sign {
	const struct ina_job_key *key;
	uint8_t *data;
	uint32_t len;
};

struct payload_work {
	unsigned cap, n_tasks, n_signs, n_held;
	struct task *tasks;
	struct sign *signs;
	struct ina_pkt **held;
};

struct payload_work *
payload_work_create(unsigned cap)
{
	struct payload_work *w;

	if (cap == 0) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->cap = cap;
	w->tasks = calloc(cap, sizeof(*w->tasks));
	w->signs = calloc(cap, sizeof(*w->signs));
	w->held = calloc(cap, sizeof(*w->held));
	if (!w->tasks || !w->signs || !w->held) {
		payload_work_destroy(w);
		errno = ENOMEM;
		return NULL;
	}
	return w;
}

void
payload_work_destroy(struct payload_work *w)
{
	if (!w)
		return;
	if (w->tasks && w->signs && w->held)
		payload_work_flush(w);
	free(w->tasks);
	free(w->signs);
	free(w->held);
	free(w);
}

/* The next free task, the list run and released first when full. */
static struct task *
next_task(struct payload_work *w)
{
	if (w->n_tasks == w->cap)
		payload_work_flush(w);
	return &w->tasks[w->n_tasks++];
}

void
payload_work_encode(struct payload_work *w, const struct ina_encoding_ops *enc, uint8_t *payload,
		    const float *src, uint32_t n, int scale)
{
	struct task *t = next_task(w);

	*t = (struct task){ .kind = TASK_ENCODE,
			    .enc = enc,
			    .n = n,
			    .scale = scale,
			    .payload = payload,
			    .src = src };
}

void
payload_work_decode(struct payload_work *w, const struct ina_encoding_ops *enc, float *dst,
		    const uint8_t *payload, uint32_t n, int scale, float avg, float *copy)
{
	struct task *t = next_task(w);

	*t = (struct task){ .kind = TASK_DECODE,
			    .enc = enc,
			    .n = n,
			    .scale = scale,
			    .avg = avg,
			    .payload = (uint8_t *)(uintptr_t)payload,
			    .dst = dst,
			    .copy = copy };
}

void
payload_work_sign(struct payload_work *w, const struct ina_job_key *key, uint8_t *data,
		  uint32_t len)
{
	if (w->n_signs == w->cap)
		payload_work_flush(w);
	w->signs[w->n_signs++] = (struct sign){ .key = key, .data = data, .len = len };
}

void
payload_work_hold(struct payload_work *w, struct ina_pkt *p)
{
	if (w->n_held == w->cap)
		payload_work_flush(w);
	w->held[w->n_held++] = p;
}

unsigned
payload_work_count(const struct payload_work *w, unsigned phase)
{
	return phase == 0 ? w->n_tasks : w->n_signs;
}

void
payload_work_run(const struct payload_work *w, unsigned phase, unsigned i)
{
	const struct task *t;

	if (phase == 1) {
		ina_auth_sign(w->signs[i].key, w->signs[i].data, w->signs[i].len);
		return;
	}
	t = &w->tasks[i];
	if (t->kind == TASK_ENCODE) {
		t->enc->encode(t->payload, t->src, t->n, t->scale);
		return;
	}
	t->enc->decode(t->dst, t->payload, t->n, t->scale);
	/* As engine_decode_block(): not multiplied by 1. */
	if (t->avg != 1.0f)
		for (uint32_t k = 0; k < t->n; k++)
			t->dst[k] *= t->avg;
	if (t->copy)
		memcpy(t->copy, t->dst, (size_t)t->n * sizeof(float));
}

void
payload_work_release(struct payload_work *w)
{
	for (unsigned i = 0; i < w->n_held; i++)
		ina_pkt_free(w->held[i]);
	w->n_held = 0;
	w->n_tasks = 0;
	w->n_signs = 0;
}

void
payload_work_flush(struct payload_work *w)
{
	for (unsigned phase = 0; phase < PAYLOAD_WORK_PHASES; phase++)
		for (unsigned i = 0; i < payload_work_count(w, phase); i++)
			payload_work_run(w, phase, i);
	payload_work_release(w);
}
