/* SPDX-License-Identifier: MIT */
/*
 * The udp port (port.h, port_udp.h): each ina packet is one UDP payload on a
 * nonblocking IPv4 socket, sent with sendmmsg, one message per destination
 * sharing the packet's buffer for fan-out. It needs no NIC and no privileges,
 * so tests and the quick start use it; port_dpdk.c is the fast path. This
 * file parses its options, opens and closes it, waits, names addresses and
 * counts; port_udp_rx.c receives and port_udp_tx.c sends (their shared
 * state: port_udp_int.h).
 *
 * Segmentation offload (gso=1, where the kernel takes UDP_SEGMENT): the
 * datagrams of a burst to one peer, of one size but a shorter last one, go
 * as one message of up to 64 segments and 65507 bytes: the kernel carries
 * them as one skb (on loopback all the way to the receiving socket) and cuts
 * them apart where it must. Receive offload (gro=1, where the kernel takes
 * UDP_GRO): recvmmsg receives into 64 KiB buffers (GRO_BUF) and a message
 * holding several datagrams (a UDP_GRO control message gives their size) is
 * split into one ina packet per datagram, each pointing into the buffer,
 * which is reused when the last of them is freed: no copy. Without GRO,
 * recvmmsg receives straight into heap-pool buffers, one datagram each. The
 * kernel's refusal (the probe at open, or a send that fails on UDP_SEGMENT)
 * turns the offload off for the port, counted in port_udp_gso_refused or
 * port_udp_gro_refused (xstats).
 *
 * Tenant queues (tenant_queues=N > 1; ina-switch --port-opts in tenant
 * mode): N sockets on the one address in an SO_REUSEPORT group, the kernel
 * putting each datagram into the one of its tenant (the ina header's tenant
 * byte modulo N; a datagram shorter than a header: queue 0) by a BPF
 * program (udp_steer.c), so one tenant's flood neither delays another's
 * packets in one socket buffer nor gets them dropped for a full one. A
 * receive takes an equal share of the burst from each queue in turn, then
 * fills the room left from those that had more; each queue has its own GRO
 * backlog, and one found empty sits out a few receives (an empty receive is
 * a system call for nothing). Replies leave through queue 0's socket.
 * Counted per queue in the xstats (port_udp_rxqK_pkts).
 *
 * Options, comma-separated: bind=ADDR:PORT (default 0.0.0.0:0), mtu=BYTES
 * (largest packet, 128..65507, default 9000), pkts=N (pool size, default
 * 4096), rcvbuf=BYTES (per queue) and sndbuf=BYTES (default 8 MiB), busy=0|1
 * (wait() returns at once), gso=0|1 and gro=0|1 (default 1),
 * tenant_queues=N (1..8, default 1), and the fault
 * injector's options (faults.h, tests and demos): drop=RATE drops on rx and on tx; dup=, reorder=, reorder_gap=,
 * delay=, delay_us=, hold= apply on rx; seed=N. corrupt= is refused: the
 * kernel verifies the UDP checksum and drops a corrupted datagram before ina
 * sees it, and flipping bits after that would be caught by nothing, so
 * corruption is injected where ina verifies the checksum (dpdk ports).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ina/faults.h"
#include "ina/log.h"
#include "ina/port_udp.h"
#include "ina/util.h"
#include "port_udp_int.h"

struct udp_config {
	struct sockaddr_in bind;
	uint64_t mtu;
	uint64_t nb_pkts;
	uint64_t rcvbuf, sndbuf;
	struct ina_faults_cfg faults;
	uint64_t busy;
	uint64_t gso, gro;
	uint64_t nb_queues; /* tenant_queues=N */
};

static int
sin_str(const struct sockaddr_in *sin, char *buf, unsigned size)
{
	char ip[INET_ADDRSTRLEN];

	if (!inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "?");
	return snprintf(buf, size, "%s:%u", ip, ntohs(sin->sin_port));
}

static int
gai_errno(int gai)
{
	switch (gai) {
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_SYSTEM:
		return errno ? -errno : -EIO;
	default:
		return -EINVAL;
	}
}

/* Parses "ADDR:PORT" (IPv4, dotted quad or a host name) with PORT >= min_port. */
static int
addr_parse(const char *s, uint64_t min_port, struct sockaddr_in *out)
{
	struct addrinfo hints, *res = NULL;
	struct sockaddr_in sin;
	const char *colon;
	char host[256];
	uint64_t port;
	size_t host_len;
	int ret;

	if (!s)
		return -EINVAL;
	colon = strrchr(s, ':');
	if (!colon || colon == s)
		return -EINVAL;
	host_len = (size_t)(colon - s);
	if (host_len >= sizeof(host))
		return -EINVAL;
	if (ina_parse_u64(colon + 1, min_port, 65535, &port) < 0)
		return -EINVAL;
	memcpy(host, s, host_len);
	host[host_len] = '\0';

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_DGRAM;
	ret = getaddrinfo(host, NULL, &hints, &res);
	if (ret != 0)
		return gai_errno(ret);
	if (!res || res->ai_family != AF_INET || res->ai_addrlen < sizeof(sin)) {
		freeaddrinfo(res);
		return -EINVAL;
	}
	memcpy(&sin, res->ai_addr, sizeof(sin));
	freeaddrinfo(res);

	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = htons((uint16_t)port);
	out->sin_addr = sin.sin_addr;
	return 0;
}

static void
udp_config_init(struct udp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->bind.sin_family = AF_INET;
	cfg->bind.sin_addr.s_addr = htonl(INADDR_ANY);
	cfg->bind.sin_port = 0;
	cfg->mtu = UDP_DEF_MTU;
	cfg->nb_pkts = UDP_DEF_PKTS;
	cfg->rcvbuf = UDP_DEF_SOCKBUF;
	cfg->sndbuf = UDP_DEF_SOCKBUF;
	ina_faults_cfg_init(&cfg->faults);
	cfg->busy = 0;
	cfg->gso = 1;
	cfg->gro = 1;
	cfg->nb_queues = 1;
}

/* Parses one KEY=VALUE option into 'cfg'. 0 or -EINVAL with why in 'err'. */
static int
udp_option(char *opt, struct udp_config *cfg, char *err, unsigned err_size)
{
	const char *key = opt, *val, *range = "";
	char *eq = strchr(opt, '=');
	int ret;

	if (!eq) {
		snprintf(err, err_size, "option '%s' needs a value (KEY=VALUE)", opt);
		return -EINVAL;
	}
	*eq = '\0';
	val = eq + 1;

	if (strcmp(key, "bind") == 0) {
		ret = addr_parse(val, 0, &cfg->bind);
		range = " (ADDR:PORT, IPv4)";
	} else if (strcmp(key, "mtu") == 0) {
		ret = ina_parse_u64(val, UDP_MIN_MTU, UDP_MAX_MTU, &cfg->mtu);
		range = " (128..65507)";
	} else if (strcmp(key, "pkts") == 0) {
		ret = ina_parse_u64(val, 1, UDP_MAX_PKTS, &cfg->nb_pkts);
		range = " (1..1048576)";
	} else if (strcmp(key, "rcvbuf") == 0) {
		ret = ina_parse_u64(val, UDP_MIN_SOCKBUF, UDP_MAX_SOCKBUF, &cfg->rcvbuf);
		range = " (4096..536870912)";
	} else if (strcmp(key, "sndbuf") == 0) {
		ret = ina_parse_u64(val, UDP_MIN_SOCKBUF, UDP_MAX_SOCKBUF, &cfg->sndbuf);
		range = " (4096..536870912)";
	} else if (strcmp(key, "corrupt") == 0) {
		snprintf(err, err_size,
			 "corrupt= is for ports that verify checksums "
			 "themselves (dpdk): the kernel drops a corrupted UDP datagram "
			 "before ina sees it");
		return -EINVAL;
	} else if (strcmp(key, "busy") == 0) {
		ret = ina_parse_u64(val, 0, 1, &cfg->busy);
		range = " (0 or 1)";
	} else if (strcmp(key, "gso") == 0 || strcmp(key, "gro") == 0) {
		ret = ina_parse_u64(val, 0, 1, key[1] == 's' ? &cfg->gso : &cfg->gro);
		range = " (0 or 1)";
	} else if (strcmp(key, "tenant_queues") == 0) {
		ret = ina_parse_u64(val, 1, UDP_STEER_MAX, &cfg->nb_queues);
		range = " (1..8)";
	} else if ((ret = ina_faults_option(&cfg->faults, key, val, &range)) == 0) {
		snprintf(err, err_size,
			 "unknown option '%s' (known: bind, mtu, pkts, "
			 "rcvbuf, sndbuf, busy, gso, gro, tenant_queues, " INA_FAULTS_KEYS ")",
			 key);
		return -EINVAL;
	}
	if (ret < 0) {
		snprintf(err, err_size, "bad value '%s' for option '%s'%s", val, key, range);
		return -EINVAL;
	}
	return 0;
}

static int
udp_config_parse(const char *args, struct udp_config *cfg, char *err, unsigned err_size)
{
	char *copy, *opt, *save = NULL;
	int ret = 0;

	copy = strdup(args);
	if (!copy)
		return -ENOMEM;
	for (opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		ret = udp_option(opt, cfg, err, err_size);
		if (ret < 0)
			break;
	}
	free(copy);
	return ret;
}

/* Sets a socket buffer, forcing it past the sysctl limit when allowed. */
static void
udp_sockbuf(struct udp_port *up, int fd, int force_opt, int opt, uint64_t size, const char *what)
{
	int val = (int)size, got = 0;
	socklen_t len = sizeof(got);

	if (setsockopt(fd, SOL_SOCKET, force_opt, &val, sizeof(val)) < 0 &&
	    setsockopt(fd, SOL_SOCKET, opt, &val, sizeof(val)) < 0) {
		INA_LOG(WARN, "udp port %s: cannot set %s to %d: %s", up->name, what, val,
			strerror(errno));
		return;
	}
	/* Linux doubles the value for its bookkeeping; less means clamped. */
	if (getsockopt(fd, SOL_SOCKET, opt, &got, &len) == 0 && (uint64_t)got < 2 * size)
		INA_LOG(WARN,
			"udp port %s: %s is %d bytes, not %d (raise "
			"net.core.%cmem_max or run as root)",
			up->name, what, got / 2, val, opt == SO_RCVBUF ? 'r' : 'w');
}
static void
udp_close(struct ina_port *port)
{
	struct udp_port *up;

	if (!port)
		return;
	up = udp_of(port);
	ina_faults_flush(&up->faults);
	for (unsigned i = 0; i < up->nb_queues; i++) {
		struct udp_queue *q = &up->queues[i];

		while (q->pend_nb) {
			ina_pkt_free(q->pend[q->pend_head]);
			q->pend_head = (q->pend_head + 1) % GRO_PEND;
			q->pend_nb--;
		}
		if (q->fd >= 0)
			close(q->fd);
		free(q->pend);
	}
	ina_pkt_pool_destroy(port->pool);
	free(up->gro_mem);
	free(up->gro_bufs);
	free(up->gro_free);
	free(up);
}

/* Turns GSO on where the kernel has UDP_SEGMENT (probed once, here). */
static void
udp_offloads(struct udp_port *up, const struct udp_config *cfg)
{
	int v = 0;
	socklen_t len = sizeof(v);

	if (cfg->gso && getsockopt(up->fd, SOL_UDP, UDP_SEGMENT, &v, &len) == 0) {
		up->gso = 1;
	} else if (cfg->gso) {
		up->xst.gso_refused = 1;
		INA_LOG(INFO, "udp port %s: no UDP_SEGMENT here (%s): one datagram per message",
			up->name, strerror(errno));
	}
	v = 1;
	up->gro = cfg->gro && up->gro_mem;
	for (unsigned q = 0; up->gro && q < up->nb_queues; q++)
		up->gro = setsockopt(up->queues[q].fd, SOL_UDP, UDP_GRO, &v, sizeof(v)) == 0;
	if (cfg->gro && !up->gro) {
		/* Off on every queue: a receive into an mtu-sized buffer. */
		v = 0;
		for (unsigned q = 0; q < up->nb_queues; q++)
			setsockopt(up->queues[q].fd, SOL_UDP, UDP_GRO, &v, sizeof(v));
		up->xst.gro_refused = 1;
		INA_LOG(INFO, "udp port %s: no UDP_GRO here (%s): one datagram per receive",
			up->name, strerror(errno));
	}
}

/*
 * Opens queue 'i''s socket bound to 'addr': with several queues each joins
 * the port's SO_REUSEPORT group, queue 0 first (its index in the group is
 * its queue's, which the steering program returns). 0 or -errno with why in
 * 'err'.
 */
static int
udp_queue_open(struct udp_port *up, unsigned i, const struct sockaddr_in *addr, uint64_t rcvbuf,
	       char *err, unsigned err_size)
{
	struct udp_queue *q = &up->queues[i];
	int one = 1, ret;

	q->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (q->fd < 0) {
		ret = -errno;
		snprintf(err, err_size, "socket: %s", strerror(-ret));
		return ret;
	}
	if (up->nb_queues > 1 &&
	    setsockopt(q->fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) {
		ret = -errno;
		snprintf(err, err_size, "SO_REUSEPORT: %s", strerror(-ret));
		return ret;
	}
	if (bind(q->fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0) {
		ret = -errno;
		snprintf(err, err_size, "cannot bind %s%s: %s", up->name,
			 i ? " (a tenant queue)" : "", strerror(-ret));
		return ret;
	}
	udp_sockbuf(up, q->fd, SO_RCVBUFFORCE, SO_RCVBUF, rcvbuf, "rcvbuf");
	return 0;
}

static int
udp_open(struct ina_port **out, const char *args, char *err, unsigned err_size)
{
	struct udp_config cfg;
	struct sockaddr_in local;
	socklen_t len = sizeof(local);
	struct udp_port *up;
	unsigned i;
	int ret;

	if (!args)
		args = "";
	udp_config_init(&cfg);
	ret = udp_config_parse(args, &cfg, err, err_size);
	if (ret < 0)
		return ret;

	up = calloc(1, sizeof(*up));
	if (!up)
		return -ENOMEM;
	up->fd = -1;
	up->nb_queues = (unsigned)cfg.nb_queues;
	for (i = 0; i < up->nb_queues; i++)
		up->queues[i].fd = -1;
	up->port.ops = &ina_port_udp_ops;
	up->port.max_pkt = (uint32_t)cfg.mtu;
	up->busy = (int)cfg.busy;
	ina_faults_init(&up->faults, &cfg.faults);
	sin_str(&cfg.bind, up->name, sizeof(up->name));

	up->port.pool = ina_pkt_pool_create((unsigned)cfg.nb_pkts, (uint32_t)cfg.mtu);
	if (!up->port.pool) {
		ret = -errno;
		snprintf(err, err_size, "cannot allocate %u packets of %u bytes: %s",
			 (unsigned)cfg.nb_pkts, (unsigned)cfg.mtu, strerror(-ret));
		goto err;
	}
	for (i = 0; i < up->nb_queues; i++) {
		ret = udp_queue_open(up, i, i ? &local : &cfg.bind, cfg.rcvbuf, err, err_size);
		if (ret < 0)
			goto err;
		if (i == 0 && getsockname(up->queues[0].fd, (struct sockaddr *)&local, &len) < 0)
			local = cfg.bind;
		if (i == 0)
			sin_str(&local, up->name, sizeof(up->name));
	}
	up->fd = up->queues[0].fd;
	up->local = local;
	if (up->nb_queues > 1 && (ret = udp_steer_attach(up->fd, up->nb_queues)) < 0) {
		snprintf(err, err_size, "%s: cannot steer to %u tenant queues: %s", up->name,
			 up->nb_queues, strerror(-ret));
		goto err;
	}
	udp_sockbuf(up, up->fd, SO_SNDBUFFORCE, SO_SNDBUF, cfg.sndbuf, "sndbuf");
	if (cfg.gro && udp_gro_init(up, (uint32_t)cfg.mtu) < 0) {
		ret = -ENOMEM;
		snprintf(err, err_size,
			 "cannot allocate %u receive buffers of %u bytes (gro=0 "
			 "needs none)",
			 GRO_BUFS, GRO_BUF);
		goto err;
	}
	udp_offloads(up, &cfg);

	for (i = 0; i < INA_MAX_BURST; i++) {
		up->rx_msgs[i].msg_hdr.msg_iov = &up->rx_iovs[i];
		up->rx_msgs[i].msg_hdr.msg_iovlen = 1;
	}
	INA_LOG(DEBUG, "udp port %s: open, mtu %u, %u packets, drop %g, gso %d, gro %d, %u queues",
		up->name, (unsigned)cfg.mtu, (unsigned)cfg.nb_pkts, cfg.faults.rate[INA_FAULT_DROP],
		up->gso, up->gro, up->nb_queues);
	*out = &up->port;
	return 0;

err:
	udp_close(&up->port);
	return ret;
}

static void
udp_wait(struct ina_port *port, uint64_t timeout_ns)
{
	struct udp_port *up = udp_of(port);
	struct pollfd pfd[UDP_STEER_MAX];
	struct timespec ts;

	timeout_ns = ina_port_faults_wait_ns(&up->faults, timeout_ns);
	if (up->busy || timeout_ns == 0)
		return;
	for (unsigned i = 0; i < up->nb_queues; i++) {
		if (up->queues[i].pend_nb)
			return;
		pfd[i].fd = up->queues[i].fd;
		pfd[i].events = POLLIN;
		pfd[i].revents = 0;
	}
	ts.tv_sec = (time_t)(timeout_ns / INA_NS_PER_S);
	ts.tv_nsec = (long)(timeout_ns % INA_NS_PER_S);
	if (ppoll(pfd, up->nb_queues, &ts, NULL) <= 0)
		return;
	for (unsigned i = 0; i < up->nb_queues; i++)
		if (pfd[i].revents)
			up->queues[i].skip = up->queues[i].backoff = 0;
}

static int
udp_resolve(struct ina_port *port, const char *addr, struct ina_peer *peer)
{
	struct sockaddr_in sin;
	int ret;

	(void)port;
	ret = addr_parse(addr, 1, &sin);
	if (ret < 0)
		return ret;
	udp_peer_set(peer, &sin);
	return 0;
}

static const char *
udp_peer_str(const struct ina_port *port, const struct ina_peer *peer, char *buf, unsigned size)
{
	struct sockaddr_in sin;

	(void)port;
	if (size == 0)
		return buf;
	if (!peer || peer->len != sizeof(sin)) {
		snprintf(buf, size, "(none)");
		return buf;
	}
	memcpy(&sin, peer->bytes, sizeof(sin));
	sin_str(&sin, buf, size);
	return buf;
}

/* Peers are sockaddr_in; the port itself is the address it is bound to. */
static int
udp_peer_inet(const struct ina_port *port, const struct ina_peer *peer, uint32_t *ip, uint16_t *udp)
{
	const struct udp_port *up = (const struct udp_port *)(const void *)port;
	struct sockaddr_in sin;

	if (!peer) {
		sin = up->local;
	} else {
		if (peer->len != sizeof(sin))
			return -EINVAL;
		memcpy(&sin, peer->bytes, sizeof(sin));
		if (sin.sin_family != AF_INET)
			return -EINVAL;
	}
	*ip = ntohl(sin.sin_addr.s_addr);
	*udp = ntohs(sin.sin_port);
	return 0;
}

static const char *const udp_xstat_names[] = {
	"port_udp_gso_refused", "port_udp_gso_msgs", "port_udp_gso_segs",   "port_udp_gro_refused",
	"port_udp_gro_msgs",	"port_udp_gro_segs", "port_udp_gro_stalls",
};

_Static_assert(sizeof(udp_xstat_names) / sizeof(udp_xstat_names[0]) * sizeof(uint64_t) ==
		       sizeof(struct udp_xst),
	       "a counter of struct udp_xst has no name");

/* Packets handed out from each queue, listed when the port has several
 * (tenant_queues=N): one counter a queue. */
static const char *const udp_rxq_names[UDP_STEER_MAX] = {
	"port_udp_rxq0_pkts", "port_udp_rxq1_pkts", "port_udp_rxq2_pkts", "port_udp_rxq3_pkts",
	"port_udp_rxq4_pkts", "port_udp_rxq5_pkts", "port_udp_rxq6_pkts", "port_udp_rxq7_pkts",
};

_Static_assert(UDP_STEER_MAX == 8, "a queue's counter has no name");

static unsigned
udp_xstats(const struct ina_port *port, struct ina_port_xstat *xs, unsigned n)
{
	const struct udp_port *up = (const struct udp_port *)(const void *)port;
	const unsigned base = sizeof(udp_xstat_names) / sizeof(udp_xstat_names[0]);
	const unsigned nb = base + (up->nb_queues > 1 ? up->nb_queues : 0);

	for (unsigned i = 0; i < n && i < nb; i++) {
		if (i >= base) {
			xs[i].name = udp_rxq_names[i - base];
			xs[i].value = up->rxq_pkts[i - base];
			continue;
		}
		xs[i].name = udp_xstat_names[i];
		memcpy(&xs[i].value, (const char *)&up->xst + i * sizeof(uint64_t),
		       sizeof(uint64_t));
	}
	return nb;
}

unsigned
ina_port_udp_rx_held(const struct ina_port *port)
{
	const struct udp_port *up;
	unsigned held = 0;

	if (!port || port->ops != &ina_port_udp_ops)
		return 0;
	up = (const struct udp_port *)(const void *)port;
	if (!up->gro_bufs)
		return 0;
	for (unsigned i = 0; i < up->gro_nb_bufs; i++)
		held += up->gro_bufs[i].refs;
	return held;
}

int
ina_port_udp_local(const struct ina_port *port, char *buf, unsigned size)
{
	const struct udp_port *up;
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int w;

	if (!port || port->ops != &ina_port_udp_ops || !buf)
		return -EINVAL;
	up = (const struct udp_port *)(const void *)port;
	if (getsockname(up->fd, (struct sockaddr *)&sin, &len) < 0)
		return -errno;
	w = sin_str(&sin, buf, size);
	if (w < 0)
		return -EINVAL;
	if ((unsigned)w >= size)
		return -ENOSPC;
	return 0;
}

const struct ina_port_ops ina_port_udp_ops = {
	.type = "udp",
	.open = udp_open,
	.rx_burst = udp_rx_burst,
	.tx_burst = udp_tx_burst,
	.wait = udp_wait,
	.resolve = udp_resolve,
	.peer_str = udp_peer_str,
	.peer_inet = udp_peer_inet,
	.xstats = udp_xstats,
	.close = udp_close,
};
