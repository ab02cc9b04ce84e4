/* SPDX-License-Identifier: MIT */
/*
 * The keepalive thread (keepalive.h): a loop that sleeps on a condition
 * variable of the monotonic clock, so that keepalive_stop() wakes it at
 * once rather than after a period, and calls the beat between sleeps.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "keepalive.h"

struct keepalive {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int stop; /* under mu */
	uint64_t period_ns;
	void (*beat)(void *arg);
	void *arg;
};

static void
ts_add_ns(struct timespec *ts, uint64_t ns)
{
	uint64_t nsec = (uint64_t)ts->tv_nsec + ns % 1000000000ull;

	ts->tv_sec += (time_t)(ns / 1000000000ull + nsec / 1000000000ull);
	ts->tv_nsec = (long)(nsec % 1000000000ull);
}

static void *
keepalive_main(void *p)
{
	struct keepalive *k = p;
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&k->mu);
	while (!k->stop) {
		ts_add_ns(&next, k->period_ns);
		while (!k->stop && pthread_cond_timedwait(&k->cond, &k->mu, &next) != ETIMEDOUT)
			;
		if (k->stop)
			break;
		pthread_mutex_unlock(&k->mu);
		k->beat(k->arg);
		pthread_mutex_lock(&k->mu);
		/* A beat that took long (the context busy): no catching up. */
		{
			struct timespec now;

			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec > next.tv_sec ||
			    (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
				next = now;
		}
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

struct keepalive *
keepalive_start(uint64_t period_ns, void (*beat)(void *arg), void *arg)
{
	struct keepalive *k;
	pthread_condattr_t ca;
	int ret;

	if (!period_ns || !beat) {
		errno = EINVAL;
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->period_ns = period_ns;
	k->beat = beat;
	k->arg = arg;
	pthread_mutex_init(&k->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cond, &ca);
	pthread_condattr_destroy(&ca);
	ret = pthread_create(&k->thread, NULL, keepalive_main, k);
	if (ret) {
		pthread_cond_destroy(&k->cond);
		pthread_mutex_destroy(&k->mu);
		free(k);
		errno = ret;
		return NULL;
	}
	return k;
}

void
keepalive_stop(struct keepalive *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->mu);
	k->stop = 1;
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->mu);
	pthread_join(k->thread, NULL);
	pthread_cond_destroy(&k->cond);
	pthread_mutex_destroy(&k->mu);
	free(k);
}
