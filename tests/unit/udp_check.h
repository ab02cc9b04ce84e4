/* SPDX-License-Identifier: MIT */
/*
 * What the udp port's unit tests share: opening a port or failing with its
 * reason, the peer one port uses to reach another, and reading one of a
 * port's counters (xstats) by name. Include after <cmocka.h>.
 */
#ifndef INA_TEST_UDP_CHECK_H
#define INA_TEST_UDP_CHECK_H
#include <stdint.h>
#include <string.h>

#include "ina/port.h"
#include "ina/port_udp.h"

static inline struct ina_port *
port_open_ok(const char *spec)
{
	struct ina_port *port = NULL;
	char err[256];
	int ret;

	ret = ina_port_open(spec, &port, err, sizeof(err));
	if (ret < 0)
		print_error("ina_port_open(\"%s\"): %s\n", spec, err);
	assert_int_equal(ret, 0);
	assert_non_null(port);
	return port;
}

/* The peer that 'from' uses to reach 'to'. */
static inline void
peer_of(struct ina_port *from, const struct ina_port *to, struct ina_peer *peer)
{
	char addr[64];

	assert_int_equal(ina_port_udp_local(to, addr, sizeof(addr)), 0);
	assert_int_equal(ina_port_resolve(from, addr, peer), 0);
}

/* Whether the port lists the counter 'name', its value in '*value'. */
static inline int
udp_xstat_find(const struct ina_port *port, const char *name, uint64_t *value)
{
	struct ina_port_xstat xs[32];
	unsigned n = ina_port_xstats(port, xs, 32);

	for (unsigned i = 0; i < n && i < 32; i++)
		if (strcmp(xs[i].name, name) == 0) {
			*value = xs[i].value;
			return 1;
		}
	return 0;
}

/* The value of the udp port counter 'name', which the port must list. */
static inline uint64_t
udp_xstat(const struct ina_port *port, const char *name)
{
	uint64_t v = 0;

	if (!udp_xstat_find(port, name, &v))
		fail_msg("no counter %s", name);
	return v;
}

#endif
