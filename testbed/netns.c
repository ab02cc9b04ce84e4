/* SPDX-License-Identifier: MIT */
/* Namespaces, veth pairs, shaping and counters through iproute2 (netns.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netns.h"
#include "procs.h"

#define CMD_MS 10000 /* any one ip or tc command */

#define RUN(err, errlen, ...) \
	({ \
		char *const argv_[] = { __VA_ARGS__, NULL }; \
		proc_run(argv_, CMD_MS, err, errlen); \
	})

/* Prefixes err with what was being done. */
static int
failed(char *err, size_t errlen, const char *what)
{
	char was[256];

	snprintf(was, sizeof(was), "%s", err);
	snprintf(err, errlen, "%s: %s", what, was);
	return -1;
}

int
netns_add(const char *ns, char *err, size_t errlen)
{
	char what[128];

	snprintf(what, sizeof(what), "ip netns add %s", ns);
	if (RUN(err, errlen, "ip", "netns", "add", (char *)ns) < 0)
		return failed(err, errlen, what);
	if (RUN(err, errlen, "ip", "netns", "exec", (char *)ns, "sysctl", "-qw",
		"net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1") < 0)
		return failed(err, errlen, "sysctl disable_ipv6");
	if (RUN(err, errlen, "ip", "-n", (char *)ns, "link", "set", "lo", "up") < 0)
		return failed(err, errlen, "ip link set lo up");
	return 0;
}

int
netns_del(const char *ns, char *err, size_t errlen)
{
	return RUN(err, errlen, "ip", "netns", "del", (char *)ns);
}

static int
if_setup(const char *ns, const char *ifname, const char *cidr, const char *mtu, char *err,
	 size_t errlen)
{
	char what[128];

	snprintf(what, sizeof(what), "%s in %s", ifname, ns);
	if (RUN(err, errlen, "ip", "-n", (char *)ns, "link", "set", (char *)ifname, "mtu",
		(char *)mtu, "up") < 0 ||
	    (cidr && RUN(err, errlen, "ip", "-n", (char *)ns, "addr", "add", (char *)cidr, "dev",
			 (char *)ifname) < 0))
		return failed(err, errlen, what);
	return 0;
}

int
netns_veth(const char *ns_a, const char *if_a, const char *cidr_a, const char *ns_b,
	   const char *if_b, const char *cidr_b, uint32_t mtu, char *err, size_t errlen)
{
	char m[16];

	snprintf(m, sizeof(m), "%" PRIu32, mtu);
	if (RUN(err, errlen, "ip", "-n", (char *)ns_a, "link", "add", (char *)if_a, "type", "veth",
		"peer", "name", (char *)if_b, "netns", (char *)ns_b) < 0)
		return failed(err, errlen, "ip link add type veth");
	if (if_setup(ns_a, if_a, cidr_a, m, err, errlen) < 0 ||
	    if_setup(ns_b, if_b, cidr_b, m, err, errlen) < 0)
		return -1;
	return 0;
}

int
netns_shape(const char *ns, const char *ifname, uint64_t bps, uint32_t mtu, char *err,
	    size_t errlen)
{
	uint64_t bytes_s = bps / 8;
	/* A burst of 2 ms of traffic (at least 4 frames), a queue of 50 ms. */
	uint64_t burst = bytes_s / 500, limit;
	char rate[32], b[32], l[32], what[128];

	if (burst < 4ull * (mtu + 14))
		burst = 4ull * (mtu + 14);
	limit = bytes_s / 20 + burst;
	if (limit < 64 * 1024)
		limit = 64 * 1024;
	snprintf(rate, sizeof(rate), "%" PRIu64 "bit", bps);
	snprintf(b, sizeof(b), "%" PRIu64, burst);
	snprintf(l, sizeof(l), "%" PRIu64, limit);
	snprintf(what, sizeof(what), "tc qdisc add dev %s root tbf rate %s (in %s)", ifname, rate,
		 ns);
	if (RUN(err, errlen, "tc", "-n", (char *)ns, "qdisc", "add", "dev", (char *)ifname, "root",
		"tbf", "rate", rate, "burst", b, "limit", l) < 0)
		return failed(err, errlen, what);
	return 0;
}

static uint64_t
u64_at(json_t *o, const char *dir, const char *key)
{
	json_t *v = json_object_get(json_object_get(o, dir), key);

	return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

int
netns_if_stats(const char *ns, const char *ifname, struct netns_if_stats *st, char *err,
	       size_t errlen)
{
	char out[8192];
	char *const argv[] = { "ip",   "-j",   "-s",  "-n",	      (char *)ns,
			       "link", "show", "dev", (char *)ifname, NULL };
	json_error_t je;
	json_t *root, *s;

	memset(st, 0, sizeof(*st));
	if (proc_run_out(argv, CMD_MS, out, sizeof(out), err, errlen) < 0)
		return -1;
	root = json_loads(out, 0, &je);
	s = json_object_get(json_array_get(root, 0), "stats64");
	if (!s) {
		snprintf(err, errlen, "ip -j -s link show dev %s: no stats64 in its output",
			 ifname);
		json_decref(root);
		return -1;
	}
	st->rx_bytes = u64_at(s, "rx", "bytes");
	st->rx_packets = u64_at(s, "rx", "packets");
	st->tx_bytes = u64_at(s, "tx", "bytes");
	st->tx_packets = u64_at(s, "tx", "packets");
	st->tx_dropped = u64_at(s, "tx", "dropped");
	json_decref(root);
	{
		char *const tc[] = { "tc",    "-j",   "-s",  "-n",	     (char *)ns,
				     "qdisc", "show", "dev", (char *)ifname, NULL };
		size_t i;
		json_t *q;

		if (proc_run_out(tc, CMD_MS, out, sizeof(out), err, errlen) < 0)
			return -1;
		root = json_loads(out, 0, &je);
		json_array_foreach(root, i, q) if (json_is_true(json_object_get(q, "root")) &&
						   json_is_integer(json_object_get(q, "drops")))
			st->shaper_drops = (uint64_t)json_integer_value(
			json_object_get(q, "drops"));
		json_decref(root);
	}
	return 0;
}

int
netns_each_testbed(void (*fn)(const char *ns, int pid, int alive, void *arg), void *arg)
{
	DIR *d = opendir("/run/netns");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t plen = strlen(NETNS_PREFIX);
		char *end;
		long pid;

		if (strncmp(e->d_name, NETNS_PREFIX, plen) != 0)
			continue;
		pid = strtol(e->d_name + plen, &end, 10);
		if (end == e->d_name + plen || *end != '-' || pid <= 0)
			continue;
		n++;
		fn(e->d_name, (int)pid, kill((pid_t)pid, 0) == 0 || errno == EPERM, arg);
	}
	closedir(d);
	return n;
}
