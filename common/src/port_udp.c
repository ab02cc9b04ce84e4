/* SPDX-License-Identifier: MIT */
/*
 * The udp port (port.h, port_udp.h): each ina packet is one UDP payload on a
 * nonblocking IPv4 socket, sent with sendmmsg, one message per destination
 * sharing the packet's buffer for fan-out. It needs no NIC and no privileges,
 * so tests and the quick start use it; port_dpdk.c is the fast path.
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
#include "udp_steer.h"

#define UDP_MIN_MTU 128
#define UDP_MAX_MTU 65507 /* largest IPv4 UDP payload */
#define UDP_DEF_MTU 9000
#define UDP_DEF_PKTS 4096
#define UDP_MAX_PKTS (1u << 20)
#define UDP_DEF_SOCKBUF (8u << 20)
#define UDP_MIN_SOCKBUF 4096u
#define UDP_MAX_SOCKBUF (512u << 20)
#define UDP_TX_MSGS (64 * INA_MAX_BURST) /* messages per sendmmsg batch */
#define UDP_TX_RETRIES 4		 /* waits without progress, then drop */
#define UDP_TX_WAIT_MS 1		 /* POLLOUT wait on EAGAIN */
#define UDP_TX_NOBUFS_NS 100000ull	 /* pause on ENOBUFS (poll won't help) */
/* Segments per GSO message: the kernel's UDP_MAX_SEGMENTS (64; 128 on recent ones). */
#define GSO_MAX_SEGS 64
#define GSO_PEER_SLOTS (2 * UDP_TX_MSGS) /* the grouping's table of a batch's peers */
#define GRO_BUF 65536u			 /* a receive buffer: one GRO message */
#define GRO_SEGS 128			 /* datagrams one GRO message may hold */
#define GRO_BUFS 128			 /* receive buffers per port */
#define GRO_PEND (INA_MAX_BURST * GRO_SEGS)
/* Receives a queue found empty sits out, at most (tenant_queues > 1): an
 * empty receive costs a system call, about 4 us on the 2-vCPU VMs here
 * (bench/README.md, "Per-tenant receive queues"). */
#define RXQ_IDLE_SKIP 3

_Static_assert(UDP_TX_MSGS <= UINT16_MAX, "batch indices are 16-bit");

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

/* A receive buffer of GRO_BUF bytes and the packets that point into it. */
struct gro_buf {
	uint8_t *mem;
	unsigned refs; /* packets of it not yet freed */
	struct ina_pkt pkts[GRO_SEGS];
};

struct udp_port;

/* The pool GRO packets belong to: freeing one drops a reference on its
 * buffer. Allocating from it gives packets of the port's own pool (a copy of
 * a received packet, as the fault injector's duplicates). */
struct gro_pool {
	struct ina_pkt_pool pool; /* first */
	struct udp_port *up;
};

/* A peer of the batch being grouped: the first message to it, its rank. */
struct gso_peer {
	uint32_t gen; /* the batch it belongs to (udp_port.peer_gen) */
	uint16_t msg, rank;
};

/* The port's own counters (xstats), in the order of udp_xstat_names. */
struct udp_xst {
	uint64_t gso_refused; /* 1: the kernel refused UDP_SEGMENT */
	uint64_t gso_msgs;    /* messages sent with several segments */
	uint64_t gso_segs;    /* datagrams in them */
	uint64_t gro_refused; /* 1: the kernel refused UDP_GRO */
	uint64_t gro_msgs;    /* messages received holding several datagrams */
	uint64_t gro_segs;    /* datagrams in them */
	uint64_t gro_stalls;  /* receives put off: every buffer still in use */
};

/* A receive queue: one socket of the port's SO_REUSEPORT group (one socket
 * when the port has one queue), and with GRO the packets split out of its
 * receives that the caller has not taken yet (in order). */
struct udp_queue {
	int fd;
	unsigned pend_head, pend_nb;
	struct ina_pkt **pend; /* GRO_PEND of them, with GRO */
	/* Found empty: the port's receives to sit out, and how many it sat
	 * out last time (1, 3, .. RXQ_IDLE_SKIP); 0 once it had packets or
	 * the port's wait saw it readable. */
	unsigned skip, backoff;
};

struct udp_port {
	struct ina_port port;	  /* first: the handle callers hold */
	int fd;			  /* the socket that sends: queue 0's */
	int busy;		  /* wait() returns at once */
	struct ina_faults faults; /* injected faults (tests), off by default */
	char name[32];		  /* bound "A.B.C.D:PORT", for logs */
	struct sockaddr_in local; /* the address bound (real port when 0) */
	int gso, gro;		  /* offloads in use */
	struct udp_xst xst;

	/* Receive queues (tenant_queues=N), polled in turn from rx_next. */
	unsigned nb_queues, rx_next;
	struct udp_queue queues[UDP_STEER_MAX];
	uint64_t rxq_pkts[UDP_STEER_MAX]; /* packets handed out, per queue */

	/* rx: one message per buffer of a burst. */
	struct mmsghdr rx_msgs[INA_MAX_BURST];
	struct iovec rx_iovs[INA_MAX_BURST];
	struct sockaddr_in rx_names[INA_MAX_BURST];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} rx_ctl[INA_MAX_BURST];

	/* GRO: the queues' buffers (GRO_BUFS, and 2 * INA_MAX_BURST more
	 * for each queue past the first) and the free ones (a stack). */
	struct gro_pool gro_pool;
	struct gro_buf *gro_bufs;
	uint8_t *gro_mem;
	unsigned gro_nb_bufs, gro_nb_free;
	struct gro_buf **gro_free;

	/*
	 * tx: a batch of up to UDP_TX_MSGS messages (one per destination)
	 * over up to UDP_TX_MSGS packets (one iovec each).
	 */
	unsigned tx_nb_msgs;
	unsigned tx_nb_pkts;
	uint64_t tx_burst_msgs; /* messages sent in this tx_burst call */
	struct mmsghdr tx_msgs[UDP_TX_MSGS];
	uint16_t tx_msg_pkt[UDP_TX_MSGS]; /* message -> index in tx_pkts */
	struct iovec tx_iovs[UDP_TX_MSGS];
	struct ina_pkt *tx_pkts[UDP_TX_MSGS];
	uint8_t tx_failed[UDP_TX_MSGS]; /* a message of this packet failed */

	/*
	 * The batch as sent: 'tx_nb_out' messages, each the segments
	 * out_seg[out_first[o] ..][out_nb[o]] (indices of tx_msgs, in order),
	 * several with a UDP_SEGMENT control message when GSO groups them.
	 */
	unsigned tx_nb_out;
	struct mmsghdr out_msgs[UDP_TX_MSGS];
	uint16_t out_first[UDP_TX_MSGS], out_nb[UDP_TX_MSGS];
	uint16_t out_seg[UDP_TX_MSGS];
	struct iovec out_iovs[UDP_TX_MSGS];
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} out_ctl[UDP_TX_MSGS];
	/* Scratch of the grouping: the messages in sending order (sort keys:
	 * peer, size, index), the peers seen, each run's size, bytes and
	 * whether it is closed; messages left after a GSO refusal. */
	uint64_t sort_keys[UDP_TX_MSGS], sort_tmp[UDP_TX_MSGS];
	struct gso_peer peer_tab[GSO_PEER_SLOTS];
	uint32_t peer_gen;
	uint16_t grp_size[UDP_TX_MSGS], rest[UDP_TX_MSGS];
	uint32_t grp_bytes[UDP_TX_MSGS];
	uint8_t grp_closed[UDP_TX_MSGS];
};

_Static_assert(UDP_TX_MSGS <= UINT16_MAX + 1, "tx_msg_pkt width");

static inline struct udp_port *
udp_of(struct ina_port *port)
{
	return (struct udp_port *)(void *)port;
}

static int
sin_str(const struct sockaddr_in *sin, char *buf, unsigned size)
{
	char ip[INET_ADDRSTRLEN];

	if (!inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "?");
	return snprintf(buf, size, "%s:%u", ip, ntohs(sin->sin_port));
}

static void
peer_set(struct ina_peer *peer, const struct sockaddr_in *sin)
{
	struct sockaddr_in s;

	/* Rebuilt field by field so equal addresses have equal bytes. */
	memset(&s, 0, sizeof(s));
	s.sin_family = AF_INET;
	s.sin_port = sin->sin_port;
	s.sin_addr = sin->sin_addr;
	peer->len = sizeof(s);
	memcpy(peer->bytes, &s, sizeof(s));
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

/* ---- GRO receive buffers ---- */

static unsigned
gro_get(struct ina_pkt_pool *pool, struct ina_pkt **pkts, unsigned n)
{
	struct ina_pkt_pool *own = ((struct gro_pool *)(void *)pool)->up->port.pool;

	return own->ops->get(own, pkts, n);
}

static void
gro_put(struct ina_pkt_pool *pool, struct ina_pkt **pkts, unsigned n)
{
	struct udp_port *up = ((struct gro_pool *)(void *)pool)->up;

	for (unsigned i = 0; i < n; i++) {
		struct gro_buf *b = pkts[i]->priv;

		/* A double free would push a buffer twice. */
		if (!b || b->refs == 0 || up->gro_nb_free >= up->gro_nb_bufs)
			continue;
		pkts[i]->priv = NULL;
		if (--b->refs == 0)
			up->gro_free[up->gro_nb_free++] = b;
	}
}

static const struct ina_pkt_pool_ops gro_ops = {
	.get = gro_get,
	.put = gro_put,
};

static int
gro_init(struct udp_port *up, uint32_t mtu)
{
	unsigned nb = GRO_BUFS + (up->nb_queues - 1) * 2 * INA_MAX_BURST;

	up->gro_nb_bufs = nb;
	up->gro_mem = aligned_alloc(64, (size_t)nb * GRO_BUF);
	up->gro_bufs = calloc(nb, sizeof(*up->gro_bufs));
	up->gro_free = calloc(nb, sizeof(*up->gro_free));
	if (!up->gro_mem || !up->gro_bufs || !up->gro_free)
		return -ENOMEM;
	for (unsigned q = 0; q < up->nb_queues; q++) {
		up->queues[q].pend = calloc(GRO_PEND, sizeof(*up->queues[q].pend));
		if (!up->queues[q].pend)
			return -ENOMEM;
	}
	up->gro_pool.pool.ops = &gro_ops;
	up->gro_pool.pool.buf_size = mtu;
	up->gro_pool.up = up;
	for (unsigned i = 0; i < nb; i++) {
		struct gro_buf *b = &up->gro_bufs[nb - 1 - i];

		b->mem = up->gro_mem + (size_t)(nb - 1 - i) * GRO_BUF;
		up->gro_free[up->gro_nb_free++] = b;
	}
	return 0;
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
	if (cfg.gro && gro_init(up, (uint32_t)cfg.mtu) < 0) {
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

/* recvmmsg on 'fd' of up to 'nb' messages set up in rx_msgs; retries past
 * a pending socket error (an ICMP one, reported once). Returns how many, 0
 * for none. */
static int
udp_recvmmsg(struct udp_port *up, int fd, unsigned nb)
{
	int r;

	for (int tries = 0;; tries++) {
		r = recvmmsg(fd, up->rx_msgs, nb, MSG_DONTWAIT, NULL);
		if (r >= 0)
			return r;
		if (errno == EAGAIN || errno == EWOULDBLOCK || tries >= 2)
			return 0;
	}
}

/* The size of the datagrams a GRO message holds (its UDP_GRO control
 * message), or 0 when it holds one. */
static unsigned
gro_size(struct msghdr *h)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
		int v;

		if (c->cmsg_level != SOL_UDP || c->cmsg_type != UDP_GRO ||
		    c->cmsg_len < CMSG_LEN(sizeof(v)))
			continue;
		memcpy(&v, CMSG_DATA(c), sizeof(v));
		return v > 0 ? (unsigned)v : 0;
	}
	return 0;
}

/*
 * Splits message 'i', received into buffer 'b', into its datagrams: ina
 * packets pointing into 'b', queued in the pend of queue 'q'. Returns how
 * many, 0 when it was dropped (counted; 'b' is then free again).
 */
static unsigned
gro_split(struct udp_port *up, struct udp_queue *q, unsigned i, struct gro_buf *b)
{
	struct msghdr *h = &up->rx_msgs[i].msg_hdr;
	uint32_t len = up->rx_msgs[i].msg_len, seg = gro_size(h), nb, cap;

	if (h->msg_flags & (MSG_TRUNC | MSG_CTRUNC) ||
	    h->msg_namelen < sizeof(struct sockaddr_in) || up->rx_names[i].sin_family != AF_INET ||
	    len > GRO_BUF) {
		up->port.stats.rx_drop++;
		return 0;
	}
	if (seg == 0 || seg >= len)
		seg = len;
	nb = seg ? (len + seg - 1) / seg : 1;
	if (nb > GRO_SEGS || q->pend_nb + nb > GRO_PEND) {
		up->port.stats.rx_drop += nb;
		return 0;
	}
	if (nb > 1) {
		up->xst.gro_msgs++;
		up->xst.gro_segs += nb;
	}
	/* A packet may grow to the start of the next one (a switch writes
	 * its answer in place), and the last one to the port's mtu. */
	cap = seg ? seg : up->gro_pool.pool.buf_size;
	b->refs = 0;
	for (uint32_t k = 0; k < nb; k++) {
		struct ina_pkt *p = &b->pkts[k];
		uint32_t off = k * seg;

		p->len = k + 1 < nb ? seg : len - off;
		/* Longer than the mtu: dropped, as a receive into an mtu-sized
		 * buffer would (truncated). */
		if (p->len > up->port.max_pkt) {
			up->port.stats.rx_drop++;
			continue;
		}
		b->refs++;
		p->data = b->mem + off;
		p->cap = k + 1 < nb ? cap : GRO_BUF - off;
		if (p->cap > up->gro_pool.pool.buf_size)
			p->cap = up->gro_pool.pool.buf_size;
		if (p->cap < p->len)
			p->cap = p->len;
		peer_set(&p->peer, &up->rx_names[i]);
		p->dsts = NULL;
		p->dst_mask = 0;
		p->pool = &up->gro_pool.pool;
		p->priv = b;
		q->pend[(q->pend_head + q->pend_nb++) % GRO_PEND] = p;
	}
	return b->refs;
}

/* Hands out up to 'n' of the packets queue 'q' holds split out. */
static unsigned
pend_take(struct udp_queue *q, struct ina_pkt **pkts, unsigned n)
{
	unsigned nb = 0;

	while (nb < n && q->pend_nb) {
		pkts[nb++] = q->pend[q->pend_head];
		q->pend_head = (q->pend_head + 1) % GRO_PEND;
		q->pend_nb--;
	}
	return nb;
}

/*
 * Receives with GRO from queue 'q': what it holds split out, else one
 * receive into whole buffers, split into its pend and handed out from
 * there. One queue: a receive only once the pend is empty, a message for
 * each packet asked. Several: a receive whenever the pend is short of 'n',
 * of up to a burst of messages, so that one system call fills several
 * calls' shares (what is not handed out now waits in the pend). *empty: 1
 * when that receive found the socket empty.
 */
static unsigned
udp_rx_gro(struct udp_port *up, struct udp_queue *q, struct ina_pkt **pkts, unsigned n, int *empty)
{
	unsigned m, i, nb = pend_take(q, pkts, n);
	struct gro_buf *bufs[INA_MAX_BURST];
	int r;

	if (nb == n || (nb && up->nb_queues == 1))
		return nb;
	m = up->nb_queues == 1 ? n : INA_MAX_BURST;
	if (m > up->gro_nb_free)
		m = up->gro_nb_free;
	if (m == 0) {
		up->xst.gro_stalls++;
		return nb;
	}
	for (i = 0; i < m; i++) {
		struct msghdr *h = &up->rx_msgs[i].msg_hdr;

		bufs[i] = up->gro_free[up->gro_nb_free - 1 - i];
		up->rx_iovs[i].iov_base = bufs[i]->mem;
		up->rx_iovs[i].iov_len = GRO_BUF;
		h->msg_name = &up->rx_names[i];
		h->msg_namelen = sizeof(up->rx_names[i]);
		h->msg_control = up->rx_ctl[i].buf;
		h->msg_controllen = sizeof(up->rx_ctl[i].buf);
		h->msg_flags = 0;
	}
	r = udp_recvmmsg(up, q->fd, m);
	*empty = r == 0;
	/* The buffers used leave the free stack; dropped ones return. */
	up->gro_nb_free -= (unsigned)r;
	for (i = 0; i < (unsigned)r; i++)
		if (gro_split(up, q, i, bufs[i]) == 0)
			up->gro_free[up->gro_nb_free++] = bufs[i];
	return nb + pend_take(q, pkts + nb, n - nb);
}

/* Receives without GRO from queue 'q': straight into pool buffers.
 * *empty: 1 when the socket was found empty. */
static unsigned
udp_rx_plain(struct udp_port *up, struct udp_queue *q, struct ina_pkt **pkts, unsigned n,
	     int *empty)
{
	struct ina_pkt *drops[INA_MAX_BURST];
	unsigned got, i, nb_rx = 0, nb_drops = 0;
	int r;

	got = ina_pkt_alloc_bulk(up->port.pool, pkts, n);
	if (got == 0)
		return 0;
	for (i = 0; i < got; i++) {
		struct msghdr *h = &up->rx_msgs[i].msg_hdr;

		up->rx_iovs[i].iov_base = pkts[i]->data;
		up->rx_iovs[i].iov_len = pkts[i]->cap;
		h->msg_name = &up->rx_names[i];
		h->msg_namelen = sizeof(up->rx_names[i]);
		h->msg_control = NULL;
		h->msg_controllen = 0;
		h->msg_flags = 0;
	}

	r = udp_recvmmsg(up, q->fd, got);
	*empty = r == 0;

	for (i = 0; i < (unsigned)r; i++) {
		const struct msghdr *h = &up->rx_msgs[i].msg_hdr;
		struct ina_pkt *p = pkts[i];

		if (h->msg_flags & MSG_TRUNC || h->msg_namelen < sizeof(struct sockaddr_in) ||
		    up->rx_names[i].sin_family != AF_INET) {
			up->port.stats.rx_drop++;
			drops[nb_drops++] = p;
			continue;
		}
		p->len = up->rx_msgs[i].msg_len;
		peer_set(&p->peer, &up->rx_names[i]);
		pkts[nb_rx++] = p;
	}
	for (; i < got; i++)
		drops[nb_drops++] = pkts[i];
	ina_pkt_free_bulk(drops, nb_drops);
	return nb_rx;
}

/*
 * Receives up to 'n' (1..INA_MAX_BURST) from queue 'i'. Fewer than 'n'
 * when its socket had no more (or no buffer was free). With several queues,
 * one found empty sits out the next receives, 1 then up to RXQ_IDLE_SKIP
 * (the port's wait sees any queue readable and ends that at once), so idle
 * queues cost few system calls: a packet arriving there waits at most that
 * many bursts of the others.
 */
static unsigned
udp_rx_queue(struct udp_port *up, unsigned i, struct ina_pkt **pkts, unsigned n)
{
	struct udp_queue *q = &up->queues[i];
	unsigned nb;
	int empty = 0;

	if (q->skip && !q->pend_nb) {
		q->skip--;
		return 0;
	}
	nb = up->gro ? udp_rx_gro(up, q, pkts, n, &empty) : udp_rx_plain(up, q, pkts, n, &empty);
	if (up->nb_queues == 1)
		return nb;
	up->rxq_pkts[i] += nb;
	if (nb) {
		q->backoff = 0;
	} else if (empty) {
		q->backoff = 2 * q->backoff + 1 < RXQ_IDLE_SKIP ? 2 * q->backoff + 1
								: RXQ_IDLE_SKIP;
		q->skip = q->backoff;
	}
	return nb;
}

/*
 * Receives from the queues in turn, from one further each call: first up to
 * an equal share of 'n' from each, then the room left from those that
 * filled their share (the others had no more). A flooded queue so takes
 * only the room the others leave, and never delays their packets by more
 * than its share of a burst.
 */
static unsigned
udp_rx_queues(struct udp_port *up, struct ina_pkt **pkts, unsigned n)
{
	unsigned nq = up->nb_queues, share = (n + nq - 1) / nq, first = up->rx_next, nb = 0, k;
	uint8_t full[UDP_STEER_MAX] = { 0 };

	up->rx_next = (first + 1) % nq;
	for (k = 0; k < nq && nb < n; k++) {
		unsigned i = (first + k) % nq, want = share < n - nb ? share : n - nb, got;

		got = udp_rx_queue(up, i, pkts + nb, want);
		full[i] = got == want;
		nb += got;
	}
	for (k = 0; k < nq && nb < n; k++) {
		unsigned i = (first + k) % nq;

		if (full[i])
			nb += udp_rx_queue(up, i, pkts + nb, n - nb);
	}
	return nb;
}

/* Receives without faults; ina_port_faults_rx() counts what the caller gets. */
static uint16_t
udp_rx_raw(struct ina_port *port, struct ina_pkt **pkts, uint16_t n)
{
	struct udp_port *up = udp_of(port);

	if (n > INA_MAX_BURST)
		n = INA_MAX_BURST;
	if (n == 0)
		return 0;
	if (up->nb_queues == 1)
		return (uint16_t)udp_rx_queue(up, 0, pkts, n);
	return (uint16_t)udp_rx_queues(up, pkts, n);
}

static uint16_t
udp_rx_burst(struct ina_port *port, struct ina_pkt **pkts, uint16_t n)
{
	if (n > INA_MAX_BURST)
		n = INA_MAX_BURST;
	return ina_port_faults_rx(port, &udp_of(port)->faults, udp_rx_raw, pkts, n);
}

/* Waits a little after sendmmsg found no room. */
static void
udp_tx_backoff(struct udp_port *up, int err)
{
	struct pollfd pfd = { .fd = up->fd, .events = POLLOUT };
	struct timespec ts;

	if (err == ENOBUFS) {
		/* The device queue is full: POLLOUT would be set already. */
		ts.tv_sec = 0;
		ts.tv_nsec = (long)UDP_TX_NOBUFS_NS;
		ppoll(NULL, 0, &ts, NULL);
		return;
	}
	poll(&pfd, 1, UDP_TX_WAIT_MS);
}

/* Whether two messages of the batch go to the same peer. */
static inline int
same_peer(const struct msghdr *a, const struct msghdr *b)
{
	return a->msg_namelen == b->msg_namelen &&
	       (a->msg_name == b->msg_name ||
		memcmp(a->msg_name, b->msg_name, a->msg_namelen) == 0);
}

/* The rank of message j's peer among the batch's peers, in the order they
 * first appear (a hash table of the peers seen, cleared by generation). */
static unsigned
peer_rank(struct udp_port *up, const uint16_t *list, unsigned j, unsigned *nb_peers)
{
	const struct msghdr *h = &up->tx_msgs[list[j]].msg_hdr;
	uint64_t x = h->msg_namelen;
	unsigned slot;

	for (unsigned i = 0; i < h->msg_namelen; i++)
		x = (x ^ ((const uint8_t *)h->msg_name)[i]) * 0x100000001b3ull;
	for (slot = (unsigned)(x ^ x >> 29) % GSO_PEER_SLOTS;; slot = (slot + 1) % GSO_PEER_SLOTS) {
		struct gso_peer *e = &up->peer_tab[slot];

		if (e->gen != up->peer_gen) {
			e->gen = up->peer_gen;
			e->msg = (uint16_t)j;
			e->rank = (uint16_t)(*nb_peers)++;
			return e->rank;
		}
		if (same_peer(&up->tx_msgs[list[e->msg]].msg_hdr, h))
			return e->rank;
	}
}

/* Sorts keys[0..n) ascending (they are distinct); 'tmp' holds n. */
static void
keys_sort(uint64_t *keys, uint64_t *tmp, unsigned n)
{
	const unsigned run = 16;

	for (unsigned lo = 0; lo < n; lo += run) { /* insertion sort of each run */
		unsigned hi = lo + run < n ? lo + run : n;

		for (unsigned i = lo + 1; i < hi; i++) {
			uint64_t k = keys[i];
			unsigned j = i;

			for (; j > lo && keys[j - 1] > k; j--)
				keys[j] = keys[j - 1];
			keys[j] = k;
		}
	}
	for (unsigned w = run; w < n; w *= 2) { /* then merges, bottom up */
		for (unsigned lo = 0; lo < n; lo += 2 * w) {
			unsigned mid = lo + w < n ? lo + w : n,
				 hi = lo + 2 * w < n ? lo + 2 * w : n;
			unsigned a = lo, b = mid, o = lo;

			while (a < mid && b < hi)
				tmp[o++] = keys[a] < keys[b] ? keys[a++] : keys[b++];
			while (a < mid)
				tmp[o++] = keys[a++];
			while (b < hi)
				tmp[o++] = keys[b++];
		}
		memcpy(keys, tmp, n * sizeof(*keys));
	}
}

/*
 * Makes the messages to send (out_*) from the batch's messages list[0..n)
 * (indices of tx_msgs). With GSO, the messages are ordered by peer (in the
 * order the peers first appear), then by size, largest first, then as given
 * (so a peer's datagrams of one size keep their order), and cut into runs:
 * a run holds datagrams of one size to one peer, up to GSO_MAX_SEGS and
 * UDP_MAX_MTU bytes, and ends with at most one shorter one (the kernel takes
 * a short last segment), the first of the next size down. Each run is one
 * message with a UDP_SEGMENT control message when it holds several. A burst
 * of packets of a few sizes (blocks cut into sub-blocks: header + mask +
 * present sub-blocks x b x e bytes, at most B / b sizes) so leaves in about
 * one message per size and peer rather than one per packet, with no byte
 * added on the wire, and arrives in runs of one size that UDP_GRO keeps
 * together. Packets of a burst to one peer may so leave in another order
 * than given, as any network may reorder them: the lanes are independent
 * and a lane has one packet in flight (docs/PROTOCOL.md 6.1, 6.5, 6.6).
 * Without GSO, one message each, in order.
 */
static void
udp_tx_plan(struct udp_port *up, const uint16_t *list, unsigned n)
{
	unsigned nb_grp = 0, nb_peers = 0, g, j, o;

	if (up->gso) {
		if (++up->peer_gen == 0) { /* stale entries would match again */
			memset(up->peer_tab, 0, sizeof(up->peer_tab));
			up->peer_gen = 1;
		}
		for (j = 0; j < n; j++) {
			size_t len = up->tx_msgs[list[j]].msg_hdr.msg_iov->iov_len;

			/* peer, then size largest first, then j: distinct keys. */
			up->sort_keys[j] = (uint64_t)peer_rank(up, list, j, &nb_peers) << 32 |
					   (uint64_t)(len < 0xffff ? 0xffff - len : 0) << 16 | j;
		}
		keys_sort(up->sort_keys, up->sort_tmp, n);
	}
	for (o = 0; o < n; o++) {
		unsigned pos = up->gso ? (unsigned)(up->sort_keys[o] & 0xffff) : o;
		uint16_t m = list[pos];
		uint32_t len = (uint32_t)up->tx_msgs[m].msg_hdr.msg_iov->iov_len;

		g = nb_grp;
		if (up->gso && nb_grp && len) {
			unsigned c = nb_grp - 1;

			if (!up->grp_closed[c] && len <= up->grp_size[c] &&
			    up->out_nb[c] < GSO_MAX_SEGS && up->grp_bytes[c] + len <= UDP_MAX_MTU &&
			    up->sort_keys[o] >> 32 == up->sort_keys[o - 1] >> 32)
				g = c;
		}
		if (g == nb_grp) {
			nb_grp++;
			up->out_first[g] = (uint16_t)o;
			up->out_nb[g] = 0;
			up->grp_size[g] = (uint16_t)len;
			up->grp_bytes[g] = 0;
			/* Too long for a message: sent alone, refused and counted. */
			up->grp_closed[g] = !up->gso || len == 0 || len > UDP_MAX_MTU;
		}
		up->out_seg[o] = m;
		up->out_iovs[o] = *up->tx_msgs[m].msg_hdr.msg_iov;
		up->out_nb[g]++;
		up->grp_bytes[g] += len;
		if (len < up->grp_size[g])
			up->grp_closed[g] = 1; /* a shorter one ends the run */
	}
	for (g = 0; g < nb_grp; g++) {
		struct msghdr *h = &up->out_msgs[g].msg_hdr;

		*h = up->tx_msgs[up->out_seg[up->out_first[g]]].msg_hdr;
		h->msg_iov = &up->out_iovs[up->out_first[g]];
		h->msg_iovlen = up->out_nb[g];
		up->out_msgs[g].msg_len = 0;
		if (up->out_nb[g] > 1) {
			struct cmsghdr *c = &up->out_ctl[g].align;
			uint16_t size = up->grp_size[g];

			h->msg_control = up->out_ctl[g].buf;
			h->msg_controllen = sizeof(up->out_ctl[g].buf);
			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(size));
			memcpy(CMSG_DATA(c), &size, sizeof(size));
		}
	}
	up->tx_nb_out = nb_grp;
}

/* Counts the segments of message 'o' as not sent. */
static void
udp_tx_fail(struct udp_port *up, unsigned o)
{
	for (unsigned k = 0; k < up->out_nb[o]; k++) {
		up->port.stats.tx_drop++;
		up->tx_failed[up->tx_msg_pkt[up->out_seg[up->out_first[o] + k]]] = 1;
	}
}

/* Errors of a send with UDP_SEGMENT that say the kernel will not segment
 * (the path's MTU, no checksum offload on the way out, an old kernel). */
static int
gso_refused(int err)
{
	return err == EINVAL || err == EIO || err == EOPNOTSUPP || err == ENOPROTOOPT ||
	       err == EMSGSIZE;
}

/*
 * Sends the batch, then frees its packets. Returns how many of them had
 * every destination message sent (or dropped on purpose).
 */
static unsigned
udp_tx_flush(struct udp_port *up)
{
	struct ina_port_stats *st = &up->port.stats;
	unsigned i = 0, k, nb_sent = 0, planned = up->tx_nb_msgs;
	int r, err, waits = 0;

	for (k = 0; k < up->tx_nb_msgs; k++)
		up->rest[k] = (uint16_t)k;
	udp_tx_plan(up, up->rest, up->tx_nb_msgs);
	while (i < up->tx_nb_out) {
		r = sendmmsg(up->fd, &up->out_msgs[i], up->tx_nb_out - i, MSG_DONTWAIT);
		if (r > 0) {
			for (k = i; k < i + (unsigned)r; k++) {
				st->tx_bytes += up->out_msgs[k].msg_len;
				st->tx_pkts += up->out_nb[k];
				up->tx_burst_msgs += up->out_nb[k];
				if (up->out_nb[k] > 1) {
					up->xst.gso_msgs++;
					up->xst.gso_segs += up->out_nb[k];
				}
			}
			i += (unsigned)r;
			waits = 0;
			continue;
		}
		err = r == 0 ? EAGAIN : errno;
		if (err == EINTR)
			continue;
		if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
			if (waits++ < UDP_TX_RETRIES) {
				udp_tx_backoff(up, err);
				continue;
			}
			for (; i < up->tx_nb_out; i++)
				udp_tx_fail(up, i);
			break;
		}
		if (up->out_nb[i] > 1 && gso_refused(err)) {
			/* Once per port: the rest of this batch and every later
			 * one go one datagram per message. */
			unsigned n = 0;

			up->gso = 0;
			up->xst.gso_refused = 1;
			INA_LOG(WARN,
				"udp port %s: the kernel refused UDP_SEGMENT (%s): "
				"one datagram per message from now on",
				up->name, strerror(err));
			for (k = up->out_first[i]; k < planned; k++)
				up->rest[n++] = up->out_seg[k];
			udp_tx_plan(up, up->rest, n);
			planned = n;
			i = 0;
			continue;
		}
		/* This message failed (e.g. ECONNREFUSED, EMSGSIZE): skip it. */
		udp_tx_fail(up, i);
		i++;
	}

	for (k = 0; k < up->tx_nb_pkts; k++)
		nb_sent += !up->tx_failed[k];
	ina_pkt_free_bulk(up->tx_pkts, up->tx_nb_pkts);
	up->tx_nb_msgs = 0;
	up->tx_nb_pkts = 0;
	return nb_sent;
}

/* Adds one message sending packet 'b' of the batch to 'peer'. */
static void
udp_tx_add(struct udp_port *up, unsigned b, const struct ina_peer *peer)
{
	struct msghdr *h;
	unsigned m;

	if (peer->len == 0 || peer->len > sizeof(peer->bytes)) {
		up->port.stats.tx_drop++;
		up->tx_failed[b] = 1;
		return;
	}
	if (ina_faults_drop(&up->faults)) {
		up->port.stats.inject_drop = up->faults.st.drop;
		return;
	}
	m = up->tx_nb_msgs++;
	h = &up->tx_msgs[m].msg_hdr;
	/* sendmsg does not write through msg_name. */
	h->msg_name = (void *)(uintptr_t)peer->bytes;
	h->msg_namelen = peer->len;
	h->msg_iov = &up->tx_iovs[b];
	h->msg_iovlen = 1;
	h->msg_control = NULL;
	h->msg_controllen = 0;
	h->msg_flags = 0;
	up->tx_msgs[m].msg_len = 0;
	up->tx_msg_pkt[m] = (uint16_t)b;
}

static uint16_t
udp_tx_burst(struct ina_port *port, struct ina_pkt **pkts, uint16_t n)
{
	struct udp_port *up = udp_of(port);
	unsigned i, nb_sent = 0;

	up->tx_nb_msgs = 0;
	up->tx_nb_pkts = 0;
	up->tx_burst_msgs = 0;
	for (i = 0; i < n; i++) {
		struct ina_pkt *p = pkts[i];
		unsigned b, nb_dsts;
		uint64_t mask;

		nb_dsts = p->dsts ? (unsigned)__builtin_popcountll(p->dst_mask) : 1;
		if (up->tx_nb_msgs + nb_dsts > UDP_TX_MSGS || up->tx_nb_pkts == UDP_TX_MSGS)
			nb_sent += udp_tx_flush(up);

		b = up->tx_nb_pkts++;
		up->tx_pkts[b] = p;
		up->tx_failed[b] = 0;
		up->tx_iovs[b].iov_base = p->data;
		up->tx_iovs[b].iov_len = p->len;
		if (!p->dsts) {
			udp_tx_add(up, b, &p->peer);
			continue;
		}
		for (mask = p->dst_mask; mask; mask &= mask - 1)
			udp_tx_add(up, b, &p->dsts[__builtin_ctzll(mask)]);
	}
	if (up->tx_nb_pkts)
		nb_sent += udp_tx_flush(up);
	if (up->tx_burst_msgs)
		port->stats.tx_bursts++;
	return (uint16_t)nb_sent;
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
	peer_set(peer, &sin);
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
