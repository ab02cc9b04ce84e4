/* SPDX-License-Identifier: MIT */
/*
 * ina-switch --metrics' HTTP side (switch_sim/metrics_http.c) on loopback,
 * with a thread in the data path's place: bad addresses refused with their
 * reason; GET /metrics answered from a snapshot the "data path" filled,
 * every counter of one answer equal (the data path writes them all with one
 * value, pausing half-way: a snapshot read while written would show two),
 * growing from one answer to the next, also with scrapes from several
 * threads at once; 404, 405, HEAD; 503 when the data path does not answer,
 * and a stop that does not wait for it. Built under TSan, it checks the
 * handshake's memory order too.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "metrics_http.h"

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* ---- a data path ---- */

struct dp {
	struct metrics_http *mh;
	pthread_t thread;
	atomic_int stop;
	atomic_int paused;
	uint64_t gen; /* the value of every counter of the last fill */
};

static void
set_all(uint64_t *v, size_t n, uint64_t x)
{
	for (size_t i = 0; i < n; i++)
		v[i] = x;
}

static void *
dp_main(void *arg)
{
	struct dp *d = arg;

	while (!atomic_load(&d->stop)) {
		struct metrics_snapshot *s;

		if (!atomic_load(&d->paused) && (s = metrics_http_begin(d->mh)) != NULL) {
			d->gen++;
			s->transport = "udp";
			s->role = "switch";
			s->nb_parts = 1;
			s->slots = 16;
			s->max_jobs = 4;
			s->nb_jobs = 0;
			set_all((uint64_t *)(void *)&s->pipe, sizeof(s->pipe) / 8, d->gen);
			sleep_us(200); /* half-way: a reader now would see two values */
			set_all((uint64_t *)(void *)&s->part[0].port, sizeof(s->part[0].port) / 8,
				d->gen);
			metrics_http_publish(d->mh);
		}
		sleep_us(50);
	}
	return NULL;
}

static void
dp_start(struct dp *d, struct metrics_http *mh)
{
	memset(d, 0, sizeof(*d));
	d->mh = mh;
	assert_int_equal(pthread_create(&d->thread, NULL, dp_main, d), 0);
}

static void
dp_stop(struct dp *d)
{
	atomic_store(&d->stop, 1);
	pthread_join(d->thread, NULL);
}

/* ---- a client ---- */

struct answer {
	int status;
	char *body; /* NUL-terminated */
	size_t len;
};

/* "METHOD PATH HTTP/1.0" to 127.0.0.1:port; the status, or -1. */
static int
http(uint16_t port, const char *method, const char *path, struct answer *a)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 5 };
	char req[128], *buf = NULL, *hdr_end;
	size_t len = 0, cap = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;

	memset(a, 0, sizeof(*a));
	a->status = -1;
	if (fd < 0)
		return -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", method, path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		close(fd);
		return -1;
	}
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb) {
				free(buf);
				close(fd);
				return -1;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!buf)
		return -1;
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &a->status) != 1 || !(hdr_end = strstr(buf, "\r\n\r\n"))) {
		free(buf);
		return -1;
	}
	a->len = len - (size_t)(hdr_end + 4 - buf);
	memmove(buf, hdr_end + 4, a->len + 1);
	a->body = buf;
	return a->status;
}

/* Every counter of the answer ("*_total" samples) holds one value: 0 and
 * that value in '*v', or -1 (two values, or too few counters). No cmocka
 * assertion: the clients' threads call it. */
static int
one_value_of(const struct answer *a, uint64_t *v)
{
	int n = 0;

	*v = 0;
	for (const char *l = a->body; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *sp = strchr(l, ' ');
		uint64_t x;

		if (*l == '#' || !sp || !strstr(l, "_total") || strstr(l, "_total") > sp)
			continue;
		x = strtoull(sp + 1, NULL, 10);
		if (n++ == 0)
			*v = x;
		else if (x != *v)
			return -1;
	}
	return n > 50 ? 0 : -1;
}

static uint64_t
one_value(const struct answer *a)
{
	uint64_t v;

	if (one_value_of(a, &v) < 0)
		fail_msg("not one value in every counter (a torn snapshot?):\n%s", a->body);
	return v;
}

/* A server on a free port of 19600-19999. */
static struct metrics_http *
start_free(uint16_t *port)
{
	char addr[32], err[256];

	for (unsigned i = 0; i < 400; i++) {
		struct metrics_http *m;

		*port = (uint16_t)(19600 + (getpid() + i) % 400);
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", *port);
		m = metrics_http_start(addr, 4, err, sizeof(err));
		if (m) {
			assert_string_equal(metrics_http_addr(m), addr);
			return m;
		}
		assert_non_null(strstr(err, "in use"));
	}
	fail_msg("no free port in 19600-19999");
	return NULL;
}

/* ---- tests ---- */

static void
bad_addresses(void **state)
{
	static const struct {
		const char *addr, *why;
	} cases[] = {
		{ "nonsense", "want ADDR:PORT" },
		{ "127.0.0.1", "want ADDR:PORT" },
		{ ":9101", "with an address" },
		{ "[]:9101", "with an address" },
		{ "127.0.0.1:", "not a number" },
		{ "127.0.0.1:0", "not a number" },
		{ "127.0.0.1:65536", "not a number" },
		{ "127.0.0.1:91x", "not a number" },
		{ "127.0.0.1:-1", "not a number" },
		{ "127.0.0.1: 80", "not a number" },
		{ "no-such-host.invalid:9101", "cannot resolve" },
		{ "192.0.2.1:9101", "cannot listen there" },
	};
	struct metrics_http *m, *again;
	char err[256], addr[32];
	uint16_t port;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		assert_null(metrics_http_start(cases[i].addr, 4, err, sizeof(err)));
		if (!strstr(err, cases[i].why))
			fail_msg("%s: '%s', want '%s'", cases[i].addr, err, cases[i].why);
	}
	/* A port another server listens on. */
	m = start_free(&port);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	again = metrics_http_start(addr, 4, err, sizeof(err));
	assert_null(again);
	assert_non_null(strstr(err, "Address already in use"));
	metrics_http_stop(m);
	metrics_http_stop(NULL);
}

static void
paths_and_methods(void **state)
{
	struct answer a;
	struct dp d;
	uint16_t port;
	struct metrics_http *m = start_free(&port);

	(void)state;
	dp_start(&d, m);
	assert_int_equal(http(port, "GET", "/metrics", &a), 200);
	assert_non_null(strstr(a.body, "# TYPE ina_switch_packets_received_total counter\n"));
	free(a.body);
	assert_int_equal(http(port, "GET", "/metrics?x=1", &a), 200); /* query ignored */
	free(a.body);
	assert_int_equal(http(port, "HEAD", "/metrics", &a), 200);
	assert_int_equal((int)a.len, 0);
	free(a.body);
	assert_int_equal(http(port, "GET", "/other", &a), 404);
	free(a.body);
	assert_int_equal(http(port, "GET", "/", &a), 404);
	free(a.body);
	assert_int_equal(http(port, "GET", "/metrics/", &a), 404);
	free(a.body);
	assert_int_equal(http(port, "POST", "/metrics", &a), 405);
	free(a.body);
	assert_int_equal(http(port, "DELETE", "/metrics", &a), 405);
	free(a.body);
	dp_stop(&d);
	metrics_http_stop(m);
}

/* Consistent snapshots, newer at every scrape. */
static void
snapshots(void **state)
{
	struct answer a;
	struct dp d;
	uint16_t port;
	struct metrics_http *m = start_free(&port);
	uint64_t last = 0;

	(void)state;
	dp_start(&d, m);
	for (int i = 0; i < 40; i++) {
		uint64_t v;

		assert_int_equal(http(port, "GET", "/metrics", &a), 200);
		v = one_value(&a);
		assert_true(v > last);
		last = v;
		free(a.body);
	}
	dp_stop(&d);
	metrics_http_stop(m);
}

struct client {
	uint16_t port;
	int ok;
};

static void *
client_main(void *arg)
{
	struct client *c = arg;
	struct answer a;

	for (int i = 0; i < 15; i++) {
		uint64_t v;
		int ok = http(c->port, "GET", "/metrics", &a) == 200 && one_value_of(&a, &v) == 0;

		free(a.body);
		if (!ok)
			return NULL;
	}
	c->ok = 1;
	return NULL;
}

static void
concurrent_scrapes(void **state)
{
	struct client c[4];
	pthread_t t[4];
	struct dp d;
	uint16_t port;
	struct metrics_http *m = start_free(&port);

	(void)state;
	dp_start(&d, m);
	for (int i = 0; i < 4; i++) {
		c[i] = (struct client){ .port = port };
		assert_int_equal(pthread_create(&t[i], NULL, client_main, &c[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_true(c[i].ok);
	}
	dp_stop(&d);
	metrics_http_stop(m);
}

struct stuck {
	uint16_t port;
	int status;
};

static void *
stuck_main(void *arg)
{
	struct stuck *s = arg;
	struct answer a;

	s->status = http(s->port, "GET", "/metrics", &a);
	free(a.body);
	return NULL;
}

/* A data path that does not answer: 503 after about a second; back to 200
 * when it does; a stop does not wait out a scrape. */
static void
data_path_silent(void **state)
{
	struct answer a;
	struct stuck st;
	pthread_t t;
	struct dp d;
	uint16_t port;
	struct metrics_http *m = start_free(&port);
	uint64_t t0;

	(void)state;
	dp_start(&d, m);
	atomic_store(&d.paused, 1);
	t0 = now_ms();
	assert_int_equal(http(port, "GET", "/metrics", &a), 503);
	free(a.body);
	assert_true(now_ms() - t0 >= 990 && now_ms() - t0 < 5000);
	atomic_store(&d.paused, 0);
	assert_int_equal(http(port, "GET", "/metrics", &a), 200);
	one_value(&a);
	free(a.body);
	/* Paused again, a scrape waits; the stop answers it at once. */
	atomic_store(&d.paused, 1);
	st = (struct stuck){ .port = port };
	assert_int_equal(pthread_create(&t, NULL, stuck_main, &st), 0);
	sleep_us(100000);
	t0 = now_ms();
	dp_stop(&d);
	metrics_http_stop(m);
	assert_true(now_ms() - t0 < 800);
	pthread_join(t, NULL);
	assert_true(st.status == 503 || st.status == -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_addresses),    cmocka_unit_test(paths_and_methods),
		cmocka_unit_test(snapshots),	    cmocka_unit_test(concurrent_scrapes),
		cmocka_unit_test(data_path_silent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
