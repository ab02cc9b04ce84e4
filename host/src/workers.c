/* SPDX-License-Identifier: MIT */
/*
 * The host agent's worker threads (workers.h). One run is one phase of a
 * payload_work list, cut into a few chunks of consecutive tasks (two a
 * thread: a block's task takes a microsecond or less, and a cache line
 * moving between cores costs hundreds of nanoseconds on these VMs, so
 * threads must not meet once a task). The caller publishes a ticket (the
 * run's generation, the next chunk, the number of chunks) and every thread,
 * the caller too, takes chunks off it by compare-and-swap until none is
 * left; the caller then waits until every chunk taken has finished, and
 * takes a late worker's share itself. A chunk is taken only under the
 * generation that published it, so a thread late from one run can never
 * take a chunk of the next with the last one's list.
 */
#include "workers.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "ina.h"
#include "ina/util.h"

/* A worker polls this long after its last task before it sleeps. */
#define POLL_NS (200 * 1000)

/* The ticket: generation << 32 | next chunk << 16 | chunks. */
#define T_GEN(t) ((uint32_t)((t) >> 32))
#define T_NEXT(t) ((unsigned)((t) >> 16 & 0xffff))
#define T_COUNT(t) ((unsigned)((t)&0xffff))

/* Chunks a thread. */
#define CHUNKS_PER_THREAD 2

struct workers {
	/* Each on a cache line of its own: the ticket is what threads meet
	 * on, 'done' what the caller waits on. */
	_Alignas(64) _Atomic uint64_t ticket;
	_Alignas(64) _Atomic unsigned done; /* chunks of this run finished */
	/* The run's list, phase and tasks: written before its ticket is
	 * published, read only by a thread holding one of its chunks. */
	_Alignas(64) const struct payload_work *_Atomic w;
	_Atomic unsigned phase, tasks;
	unsigned n;
	pthread_t *tids;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	_Atomic unsigned sleepers;
	_Atomic int stop;
};

/* Takes and runs chunks of the published run until none is left; returns
 * how many this thread ran. */
static unsigned
take_and_run(struct workers *ws)
{
	uint64_t t = atomic_load_explicit(&ws->ticket, memory_order_acquire);
	unsigned ran = 0;

	while (T_NEXT(t) < T_COUNT(t)) {
		const struct payload_work *w;
		unsigned phase, tasks, from, to;

		if (!atomic_compare_exchange_weak_explicit(&ws->ticket, &t, t + (1u << 16),
							   memory_order_acq_rel,
							   memory_order_acquire))
			continue;
		w = atomic_load_explicit(&ws->w, memory_order_relaxed);
		phase = atomic_load_explicit(&ws->phase, memory_order_relaxed);
		tasks = atomic_load_explicit(&ws->tasks, memory_order_relaxed);
		from = (unsigned)((uint64_t)tasks * T_NEXT(t) / T_COUNT(t));
		to = (unsigned)((uint64_t)tasks * (T_NEXT(t) + 1) / T_COUNT(t));
		for (unsigned i = from; i < to; i++)
			payload_work_run(w, phase, i);
		atomic_fetch_add_explicit(&ws->done, 1, memory_order_release);
		ran++;
		t = atomic_load_explicit(&ws->ticket, memory_order_acquire);
	}
	return ran;
}

static void *
worker_main(void *arg)
{
	struct workers *ws = arg;
	uint64_t last = ina_now_ns();

	while (!atomic_load_explicit(&ws->stop, memory_order_acquire)) {
		uint32_t gen;

		if (take_and_run(ws)) {
			last = ina_now_ns();
			continue;
		}
		if (ina_now_ns() - last < POLL_NS) {
			sched_yield();
			continue;
		}
		/* Asleep until a new run (or the stop): sleepers is raised
		 * before the ticket is read again, the caller reads it after
		 * publishing a ticket, both sequentially consistent, so one
		 * of the two sees the other. */
		gen = T_GEN(atomic_load(&ws->ticket));
		pthread_mutex_lock(&ws->lock);
		atomic_fetch_add(&ws->sleepers, 1);
		while (!atomic_load(&ws->stop) && T_GEN(atomic_load(&ws->ticket)) == gen)
			pthread_cond_wait(&ws->wake, &ws->lock);
		atomic_fetch_sub(&ws->sleepers, 1);
		pthread_mutex_unlock(&ws->lock);
		last = ina_now_ns();
	}
	return NULL;
}

struct workers *
workers_create(unsigned n)
{
	struct workers *ws;

	if (n == 0 || n >= INA_THREADS_MAX) {
		errno = EINVAL;
		return NULL;
	}
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return NULL;
	ws->tids = calloc(n, sizeof(*ws->tids));
	if (!ws->tids || pthread_mutex_init(&ws->lock, NULL) != 0)
		goto no_memory;
	if (pthread_cond_init(&ws->wake, NULL) != 0) {
		pthread_mutex_destroy(&ws->lock);
		goto no_memory;
	}
	for (ws->n = 0; ws->n < n; ws->n++) {
		int ret = pthread_create(&ws->tids[ws->n], NULL, worker_main, ws);

		if (ret != 0) {
			workers_destroy(ws);
			errno = ret;
			return NULL;
		}
	}
	return ws;
no_memory:
	free(ws->tids);
	free(ws);
	errno = ENOMEM;
	return NULL;
}

void
workers_destroy(struct workers *ws)
{
	if (!ws)
		return;
	pthread_mutex_lock(&ws->lock);
	atomic_store(&ws->stop, 1);
	pthread_cond_broadcast(&ws->wake);
	pthread_mutex_unlock(&ws->lock);
	for (unsigned i = 0; i < ws->n; i++)
		pthread_join(ws->tids[i], NULL);
	pthread_cond_destroy(&ws->wake);
	pthread_mutex_destroy(&ws->lock);
	free(ws->tids);
	free(ws);
}

/* One phase of 'w' on the caller and the workers 'ws'. */
static void
run_phase(struct workers *ws, const struct payload_work *w, unsigned phase)
{
	unsigned count = payload_work_count(w, phase), spins = 0, chunks;
	uint64_t t;

	if (count < 2) {
		if (count)
			payload_work_run(w, phase, 0);
		return;
	}
	chunks = CHUNKS_PER_THREAD * (ws->n + 1);
	if (chunks > count)
		chunks = count;
	atomic_store_explicit(&ws->w, w, memory_order_relaxed);
	atomic_store_explicit(&ws->phase, phase, memory_order_relaxed);
	atomic_store_explicit(&ws->tasks, count, memory_order_relaxed);
	atomic_store_explicit(&ws->done, 0, memory_order_relaxed);
	t = atomic_load_explicit(&ws->ticket, memory_order_relaxed);
	atomic_store(&ws->ticket, (uint64_t)(T_GEN(t) + 1) << 32 | chunks);
	if (atomic_load(&ws->sleepers)) {
		pthread_mutex_lock(&ws->lock);
		pthread_cond_broadcast(&ws->wake);
		pthread_mutex_unlock(&ws->lock);
	}
	take_and_run(ws);
	/* A worker still holds a chunk: on a busy machine it may have lost its
	 * core, so yield after a short spin. */
	while (atomic_load_explicit(&ws->done, memory_order_acquire) != chunks)
		if (++spins > 64)
			sched_yield();
}

void
workers_run(struct workers *ws, struct payload_work *w)
{
	if (!ws) {
		payload_work_flush(w);
		return;
	}
	for (unsigned phase = 0; phase < PAYLOAD_WORK_PHASES; phase++)
		run_phase(ws, w, phase);
	payload_work_release(w);
}
