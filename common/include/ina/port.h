/* SPDX-License-Identifier: MIT */
/*
 * The transport interface: a port moves bursts of packets and nothing else.
 * Each backend (udp here; dpdk, pcap and sim later) is an ops table in the
 * style of Open vSwitch's netdev_class, with one indirect call per burst.
 * The pipeline and the host engine never see a port; the programs move bursts
 * between a port and them.
 */
#ifndef INA_PORT_H
#define INA_PORT_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "ina/pkt.h"

#define INA_MAX_BURST 32

struct ina_port;

struct ina_port_stats {
	uint64_t rx_pkts, rx_bytes, rx_bursts; /* handed to the caller (after
						 * injected faults: duplicates
						 * count, held ones when given);
						 * bursts that returned > 0 */
	uint64_t tx_pkts, tx_bytes, tx_bursts; /* per destination sent */
	uint64_t tx_drop;		       /* could not be sent, freed */
	uint64_t rx_drop;		       /* dropped on receive (errors, no buffer) */
	uint64_t inject_drop;		       /* dropped on purpose (drop=RATE) */
	/* The other faults injected on purpose (faults.h). */
	uint64_t inject_dup;	 /* received packets delivered twice */
	uint64_t inject_reorder; /* held back behind later ones */
	uint64_t inject_delay;	 /* held for delay_us */
	uint64_t inject_corrupt; /* bits flipped before a checksum check */
	uint64_t rx_csum_bad;	 /* failed the UDP checksum ina verifies
						 * (dpdk), dropped; in rx_drop too */
};

/* A counter a backend keeps besides struct ina_port_stats. */
struct ina_port_xstat {
	const char *name; /* "port_arp_rx": static, one per counter */
	uint64_t value;
};

struct ina_port_ops {
	const char *type; /* "udp" */
	/*
	 * Opens a port from its comma-separated options (after "type:").
	 * 0 or -errno; on failure it may write why, one sentence without the
	 * spec, into 'err' ('err_size' > 0, "" on entry), else the caller
	 * says strerror().
	 */
	int (*open)(struct ina_port **out, const char *args, char *err, unsigned err_size);
	/*
	 * Receives up to 'n' packets into 'pkts' without blocking; the caller
	 * owns them after and frees them with ina_pkt_free().
	 */
	uint16_t (*rx_burst)(struct ina_port *, struct ina_pkt **pkts, uint16_t n);
	/*
	 * Sends 'n' packets (each to its 'peer', or fanned out to its 'dsts').
	 * Takes ownership of all 'n': those it cannot send after a bounded
	 * number of retries are freed and counted in tx_drop. Returns the
	 * number of packets sent.
	 */
	uint16_t (*tx_burst)(struct ina_port *, struct ina_pkt **pkts, uint16_t n);
	/* Blocks until a packet may be received or 'timeout_ns' passed. */
	void (*wait)(struct ina_port *, uint64_t timeout_ns);
	/* Parses "ADDR:PORT" into a peer this port can send to. 0 or -errno. */
	int (*resolve)(struct ina_port *, const char *addr, struct ina_peer *peer);
	/* Formats a peer for logs; returns 'buf'. */
	const char *(*peer_str)(const struct ina_port *, const struct ina_peer *, char *buf,
				unsigned size);
	/*
	 * Optional: the IPv4 address and UDP port, host order, of 'peer', or
	 * of the port itself (the address it is bound to) when 'peer' is
	 * NULL. 0, or -EINVAL for a peer of another port. Captures use it to
	 * write real addresses.
	 */
	int (*peer_inet)(const struct ina_port *, const struct ina_peer *peer, uint32_t *ip,
			 uint16_t *udp);
	/*
	 * Optional: the backend's own counters (dpdk: ARP, ICMP echo, rx
	 * classification), the first 'n' into 'xs'. Returns how many it
	 * keeps: the same counters in the same order for all its ports.
	 */
	unsigned (*xstats)(const struct ina_port *, struct ina_port_xstat *xs, unsigned n);
	void (*close)(struct ina_port *); /* Accepts NULL. */
	/*
	 * 1: wait() can only sleep, blind to arrivals (dpdk's polled devices),
	 * so a caller with packets in flight polls on, yielding the CPU,
	 * rather than wait (libina's ina_idle, ina-switch's loop); 0: wait()
	 * returns when a packet arrives (udp's ppoll) and is the way to wait.
	 */
	uint8_t wait_sleeps;
};

/* The part of a port every backend shares; backends embed it first. */
struct ina_port {
	const struct ina_port_ops *ops;
	struct ina_pkt_pool *pool; /* rx buffers; allocate tx packets here */
	uint32_t max_pkt;	   /* largest ina packet (header + payload) */
	struct ina_port_stats stats;
};

/*
 * Opens a port from a spec "TYPE[:OPTIONS]", e.g. "udp:bind=127.0.0.1:9150".
 * Returns 0 or -errno; on failure 'err' (when 'err_size' > 0) says why:
 * "cannot open port SPEC: " and the backend's reason (a bad option, no
 * ethdev, too few mbufs, ...), or strerror() when it gave none.
 */
int ina_port_open(const char *spec, struct ina_port **out, char *err, unsigned err_size);

static inline uint16_t
ina_port_rx_burst(struct ina_port *p, struct ina_pkt **pkts, uint16_t n)
{
	return p->ops->rx_burst(p, pkts, n);
}

static inline uint16_t
ina_port_tx_burst(struct ina_port *p, struct ina_pkt **pkts, uint16_t n)
{
	return n ? p->ops->tx_burst(p, pkts, n) : 0;
}

/* Blocks until a packet may be received or 'timeout_ns' passed. */
static inline void
ina_port_wait(struct ina_port *p, uint64_t timeout_ns)
{
	p->ops->wait(p, timeout_ns);
}

/* Whether the port's wait() only sleeps (ops->wait_sleeps). */
static inline int
ina_port_wait_sleeps(const struct ina_port *p)
{
	return p->ops->wait_sleeps;
}

/* Parses "ADDR:PORT" (the backend's address form) into a peer. 0 or -errno. */
static inline int
ina_port_resolve(struct ina_port *p, const char *addr, struct ina_peer *peer)
{
	return p->ops->resolve(p, addr, peer);
}

/* Formats a peer for logs; returns 'buf'. */
static inline const char *
ina_port_peer_str(const struct ina_port *p, const struct ina_peer *peer, char *buf, unsigned size)
{
	return p->ops->peer_str(p, peer, buf, size);
}

/* The IPv4 address and UDP port of 'peer' (of the port when NULL), host
 * order: 0, -EINVAL for a peer of another port, -EOPNOTSUPP where the
 * backend has no such form. */
static inline int
ina_port_peer_inet(const struct ina_port *p, const struct ina_peer *peer, uint32_t *ip,
		   uint16_t *udp)
{
	return p->ops->peer_inet ? p->ops->peer_inet(p, peer, ip, udp) : -EOPNOTSUPP;
}

/* The backend's own counters (the xstats op); 0 where it keeps none. */
static inline unsigned
ina_port_xstats(const struct ina_port *p, struct ina_port_xstat *xs, unsigned n)
{
	return p->ops->xstats ? p->ops->xstats(p, xs, n) : 0;
}

/*
 * Prints the counters of 'k' port objects of one backend (the queues of a
 * port; k = 1 for one port), added over them, that the traffic counters
 * leave out: the faults injected besides drops (port_inject_dup, _reorder,
 * _delay, _corrupt), port_csum_bad and the backend's own (xstats). One
 * "  name value" line each, nonzero ones only.
 */
void ina_port_print_counters(struct ina_port *const *ports, unsigned k, FILE *f);

static inline void
ina_port_close(struct ina_port *p)
{
	if (p)
		p->ops->close(p);
}

extern const struct ina_port_ops ina_port_udp_ops;

struct ina_faults;
/*
 * For backends: receives through the fault injector 'f' (faults.h). Gives
 * out the held packets now due, then what 'raw_rx' receives with faults
 * applied, and counts rx_pkts, rx_bytes and rx_bursts over what the caller
 * gets ('raw_rx' counts none of them) and the injected faults.
 */
uint16_t ina_port_faults_rx(struct ina_port *p, struct ina_faults *f,
			    uint16_t (*raw_rx)(struct ina_port *, struct ina_pkt **, uint16_t),
			    struct ina_pkt **pkts, uint16_t n);
/* Copies the injector's counters into the port's stats. */
void ina_port_faults_sync(struct ina_port *p, const struct ina_faults *f);
/* Caps a wait of 'timeout_ns' by when the next held packet is due. */
uint64_t ina_port_faults_wait_ns(const struct ina_faults *f, uint64_t timeout_ns);

/* Makes a backend known to ina_port_open() by its type name (udp is always
 * known). 0, -EEXIST for another backend of that name, or -ENOSPC. */
int ina_port_register(const struct ina_port_ops *ops);

#endif
