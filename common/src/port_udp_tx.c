/* SPDX-License-Identifier: MIT */
/*
 * The udp port's send side (port_udp_int.h): a burst becomes a batch of
 * messages, one per destination sharing the packet's buffer for fan-out;
 * with GSO the batch's messages to one peer are ordered by size and sent as
 * one UDP_SEGMENT message per run of one size (its last datagram may be
 * shorter); sendmmsg, waiting a little when the socket has no room, and the
 * kernel's refusal of GSO turning it off for the port.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "ina/log.h"
#include "ina/util.h"
#include "port_udp_int.h"

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

uint16_t
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
