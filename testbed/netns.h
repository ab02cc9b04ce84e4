/* SPDX-License-Identifier: MIT */
/*
 * The network side of ina-testbed, through iproute2 (ip, tc): namespaces,
 * veth pairs between them, addresses, bandwidth shaping (tc tbf) and the
 * interfaces' byte counters. Every call runs one bounded command and, on
 * failure, leaves one line in 'err' saying what failed.
 */
#ifndef TB_NETNS_H
#define TB_NETNS_H

#include <stddef.h>
#include <stdint.h>

/* Prefix of every namespace ina-testbed makes: "inatb<pid>-". */
#define NETNS_PREFIX "inatb"

/* Creates namespace 'ns' with lo up and IPv6 off (no router or MLD noise in
 * the byte counters). */
int netns_add(const char *ns, char *err, size_t errlen);

/* Deletes namespace 'ns' (its veths go with it, their peers too). */
int netns_del(const char *ns, char *err, size_t errlen);

/* A veth pair: 'if_a' in 'ns_a', 'if_b' in 'ns_b', both with 'mtu', up,
 * with addresses 'cidr_a' and 'cidr_b' (e.g. "10.100.0.2/24"; NULL: none, the
 * interface belongs to a DPDK process). */
int netns_veth(const char *ns_a, const char *if_a, const char *cidr_a, const char *ns_b,
	       const char *if_b, const char *cidr_b, uint32_t mtu, char *err, size_t errlen);

/* Shapes what 'ifname' in 'ns' sends to 'bps' bits per second (tc tbf). */
int netns_shape(const char *ns, const char *ifname, uint64_t bps, uint32_t mtu, char *err,
		size_t errlen);

struct netns_if_stats {
	uint64_t rx_bytes, tx_bytes, rx_packets, tx_packets, tx_dropped;
	uint64_t shaper_drops; /* frames the root qdisc (tbf) dropped */
};

/* Reads the counters of 'ifname' in 'ns' (ip -j -s link, tc -j -s qdisc). */
int netns_if_stats(const char *ns, const char *ifname, struct netns_if_stats *st, char *err,
		   size_t errlen);

/*
 * Namespaces whose names start with NETNS_PREFIX: calls fn for each, with
 * the pid in its name and whether that process still runs. Returns how many.
 */
int netns_each_testbed(void (*fn)(const char *ns, int pid, int alive, void *arg), void *arg);

#endif
