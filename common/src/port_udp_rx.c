/* SPDX-License-Identifier: MIT */
/*
 * The udp port's receive side (port_udp_int.h): recvmmsg into heap-pool
 * packets, or with GRO into 64 KiB buffers split into one packet per
 * datagram without a copy (each buffer reused when its last packet is
 * freed); with tenant queues, an equal share of the burst from each queue in
 * turn, a queue found empty sitting out a few receives. The fault injector
 * (faults.h) sits in front of it all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ina/log.h"
#include "ina/util.h"
#include "port_udp_int.h"

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

int
udp_gro_init(struct udp_port *up, uint32_t mtu)
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
		udp_peer_set(&p->peer, &up->rx_names[i]);
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
		udp_peer_set(&p->peer, &up->rx_names[i]);
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

uint16_t
udp_rx_burst(struct ina_port *port, struct ina_pkt **pkts, uint16_t n)
{
	if (n > INA_MAX_BURST)
		n = INA_MAX_BURST;
	return ina_port_faults_rx(port, &udp_of(port)->faults, udp_rx_raw, pkts, n);
}
