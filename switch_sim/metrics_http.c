/* SPDX-License-Identifier: MIT */
/*
 * The HTTP side of ina-switch --metrics (metrics_http.h): the listening
 * socket, libmicrohttpd's daemon on it, the request handler, and the
 * exchange of snapshots with the data path.
 *
 * The exchange is two counters and no lock: the HTTP thread (one scrape at
 * a time, under 'scrape_mu') raises 'requested' and polls 'published'
 * every 100 us; the data path, seeing 'requested' move, fills the snapshot
 * and stores 'published' = 'requested' (release). The HTTP thread reads the
 * snapshot only when 'published' is its own request, and the data path
 * writes it only when 'requested' has moved past what it published, which
 * only the next scrape does: they never touch it at once. The data path
 * makes no system call for it (no mutex to wait on, no thread to wake).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "ina/log.h"
#include "ina/util.h"
#include "metrics_http.h"

#define SCRAPE_WAIT_MS 1000   /* a scrape waits this long for the data path */
#define SCRAPE_POLL_NS 100000 /* and looks this often */
#define MAX_CONNECTIONS 16
#define CONNECTION_TIMEOUT_S 10

struct metrics_http {
	struct MHD_Daemon *daemon;
	char addr[128];
	pthread_mutex_t scrape_mu; /* one scrape at a time */
	atomic_uint requested;	   /* the last scrape's request */
	atomic_uint published;	   /* the request the snapshot answers */
	atomic_int closing;
	unsigned seen; /* the data path's: the last it answered */
	struct metrics_snapshot snap;
};

/* "HOST:PORT" or "[HOST]:PORT" into host and port strings. */
static int
split_addr(const char *addr, char *host, size_t host_size, const char **port, char *err,
	   size_t err_size)
{
	const char *colon = strrchr(addr, ':'), *h = addr;
	size_t n;
	char *end;
	unsigned long v;

	if (!colon) {
		ina_errf(err, err_size, "want ADDR:PORT, e.g. 127.0.0.1:9101");
		return -1;
	}
	n = (size_t)(colon - addr);
	if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {
		h = addr + 1;
		n -= 2;
	}
	if (n == 0 || n >= host_size) {
		ina_errf(err, err_size,
			 "want ADDR:PORT with an address, e.g. 127.0.0.1:9101 "
			 "(0.0.0.0:PORT for every interface)");
		return -1;
	}
	memcpy(host, h, n);
	host[n] = '\0';
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || colon[1] < '0' || colon[1] > '9' || v == 0 ||
	    v > 65535) {
		ina_errf(err, err_size, "port '%s' is not a number in 1..65535", colon + 1);
		return -1;
	}
	*port = colon + 1;
	return 0;
}

/* A TCP socket listening on 'addr'; -1 with the reason in 'err'. */
static int
listen_on(const char *addr, int *family, char *err, size_t err_size)
{
	struct addrinfo hints, *res = NULL;
	char host[100];
	const char *port;
	int fd, one = 1, ret;

	if (split_addr(addr, host, sizeof(host), &port, err, err_size) < 0)
		return -1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	ret = getaddrinfo(host, port, &hints, &res);
	if (ret != 0) {
		ina_errf(err, err_size, "cannot resolve '%s': %s", host, gai_strerror(ret));
		return -1;
	}
	fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
	if (fd < 0) {
		ina_errf(err, err_size, "socket: %s", strerror(errno));
		freeaddrinfo(res);
		return -1;
	}
	/* A restart may bind while old connections linger in TIME_WAIT; a
	 * port another socket listens on is still refused (EADDRINUSE). */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (res->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 16) < 0) {
		ina_errf(err, err_size, "cannot listen there: %s", strerror(errno));
		close(fd);
		freeaddrinfo(res);
		return -1;
	}
	*family = res->ai_family;
	freeaddrinfo(res);
	return fd;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* libmicrohttpd's messages, through ina's log. */
static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	INA_LOG(WARN, "metrics http: %s", msg);
}

static enum MHD_Result
reply(struct MHD_Connection *c, unsigned status, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text,
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Asks the data path for a snapshot and formats it into a malloc'd buffer;
 * NULL when it did not answer in time (or the server closes). */
static char *
scrape(struct metrics_http *m, size_t *len)
{
	const struct timespec poll = { 0, SCRAPE_POLL_NS };
	uint64_t deadline = ina_now_ns() + SCRAPE_WAIT_MS * INA_NS_PER_MS;
	unsigned want;
	char *buf = NULL;
	FILE *f;
	int ok = 0;

	pthread_mutex_lock(&m->scrape_mu);
	want = atomic_load_explicit(&m->requested, memory_order_relaxed) + 1;
	atomic_store_explicit(&m->requested, want, memory_order_release);
	while (!atomic_load_explicit(&m->closing, memory_order_relaxed)) {
		if (atomic_load_explicit(&m->published, memory_order_acquire) == want) {
			ok = 1;
			break;
		}
		if (ina_now_ns() >= deadline)
			break;
		nanosleep(&poll, NULL);
	}
	if (ok) {
		f = open_memstream(&buf, len);
		if (!f || metrics_write(&m->snap, f) < 0)
			ok = 0;
		if (f && fclose(f) != 0)
			ok = 0;
	}
	pthread_mutex_unlock(&m->scrape_mu);
	if (!ok) {
		free(buf);
		return NULL;
	}
	return buf;
}

static enum MHD_Result
answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
       const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct metrics_http *m = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len = 0;
	char *body;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET (and HEAD)\n");
	if (strcmp(url, "/metrics") != 0)
		return reply(c, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
	body = scrape(m, &len);
	if (!body)
		return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE,
			     "the switch's data path did not publish its counters in time\n");
	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_CONTENT_TYPE);
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * Starts the daemon's thread off the data path's cores: under EAL the
 * calling thread is pinned to the main lcore, which a partition may poll,
 * and a new thread inherits that. The thread is started with every CPU
 * allowed (the kernel keeps those of the cpuset) and with the switch's
 * signals blocked, so that they go to the data path's thread.
 */
static struct MHD_Daemon *
start_daemon(struct metrics_http *m, int fd, int family)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
	cpu_set_t old, all;
	sigset_t block, old_mask;
	struct MHD_Daemon *d;
	int have_old;
	long n = sysconf(_SC_NPROCESSORS_CONF);

	if (family == AF_INET6)
		flags |= MHD_USE_IPv6;
	have_old = pthread_getaffinity_np(pthread_self(), sizeof(old), &old) == 0;
	CPU_ZERO(&all);
	for (long i = 0; i < n && i < CPU_SETSIZE; i++)
		CPU_SET((int)i, &all);
	if (have_old)
		pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, &old_mask);
	d = MHD_start_daemon(flags, 0, NULL, NULL, answer, m, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
			     NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
			     (unsigned)MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
			     (unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (have_old)
		pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
	return d;
}

struct metrics_http *
metrics_http_start(const char *addr, uint16_t max_jobs, char *err, size_t err_size)
{
	struct metrics_http *m;
	int fd, family = AF_INET;

	fd = listen_on(addr, &family, err, err_size);
	if (fd < 0)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (m)
		m->snap.jobs = calloc(max_jobs ? max_jobs : 1, sizeof(*m->snap.jobs));
	if (!m || !m->snap.jobs) {
		ina_errf(err, err_size, "out of memory");
		if (m)
			free(m);
		close(fd);
		return NULL;
	}
	m->snap.jobs_cap = max_jobs;
	snprintf(m->addr, sizeof(m->addr), "%s", addr);
	pthread_mutex_init(&m->scrape_mu, NULL);
	m->daemon = start_daemon(m, fd, family);
	if (!m->daemon) {
		ina_errf(err, err_size, "libmicrohttpd could not start its server");
		close(fd);
		metrics_http_stop(m);
		return NULL;
	}
	return m;
}

void
metrics_http_stop(struct metrics_http *m)
{
	if (!m)
		return;
	atomic_store_explicit(&m->closing, 1, memory_order_relaxed);
	if (m->daemon)
		MHD_stop_daemon(m->daemon); /* closes the listening socket */
	pthread_mutex_destroy(&m->scrape_mu);
	free(m->snap.jobs);
	free(m);
}

struct metrics_snapshot *
metrics_http_begin(struct metrics_http *m)
{
	unsigned want = atomic_load_explicit(&m->requested, memory_order_acquire);

	if (want == m->seen)
		return NULL;
	m->seen = want;
	return &m->snap;
}

int
metrics_http_wanted(const struct metrics_http *m)
{
	return atomic_load_explicit(&m->requested, memory_order_acquire) != m->seen;
}

void
metrics_http_publish(struct metrics_http *m)
{
	atomic_store_explicit(&m->published, m->seen, memory_order_release);
}

const char *
metrics_http_addr(const struct metrics_http *m)
{
	return m->addr;
}
