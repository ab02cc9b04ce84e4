/* SPDX-License-Identifier: MIT */
/*
 * Port specs (port.h): "TYPE[:OPTIONS]" is looked up in a table of backend
 * ops, and the backend's open parses OPTIONS. Backends live in port_*.c;
 * adding one means one line in port_types[] below. The receive path through
 * the fault injector (faults.h) is here too, so that every backend shares it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ina/faults.h"
#include "ina/port.h"
#include "ina/util.h"

/* Backends: udp always; others (dpdk) register themselves at start-up, so
 * that ina_common does not depend on their libraries. */
#define MAX_PORT_TYPES 8
static const struct ina_port_ops *port_types[MAX_PORT_TYPES] = {
	&ina_port_udp_ops,
};
static size_t N_PORT_TYPES = 1;

int
ina_port_register(const struct ina_port_ops *ops)
{
	for (size_t i = 0; i < N_PORT_TYPES; i++)
		if (strcmp(port_types[i]->type, ops->type) == 0)
			return port_types[i] == ops ? 0 : -EEXIST;
	if (N_PORT_TYPES == MAX_PORT_TYPES)
		return -ENOSPC;
	port_types[N_PORT_TYPES++] = ops;
	return 0;
}

static void
known_types(char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < N_PORT_TYPES && used < size; i++) {
		int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
				 port_types[i]->type);

		if (w < 0)
			break;
		used += (size_t)w;
	}
}

int
ina_port_open(const char *spec, struct ina_port **out, char *err, unsigned err_size)
{
	const struct ina_port_ops *ops = NULL;
	const char *colon, *opts;
	char known[128], why[320];
	size_t type_len;
	int ret;

	if (err && err_size)
		err[0] = '\0';
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!spec) {
		if (err && err_size)
			snprintf(err, err_size, "no port spec");
		return -EINVAL;
	}

	colon = strchr(spec, ':');
	type_len = colon ? (size_t)(colon - spec) : strlen(spec);
	opts = colon ? colon + 1 : "";
	for (size_t i = 0; i < N_PORT_TYPES; i++) {
		if (strlen(port_types[i]->type) == type_len &&
		    strncmp(port_types[i]->type, spec, type_len) == 0) {
			ops = port_types[i];
			break;
		}
	}
	if (!ops) {
		known_types(known, sizeof(known));
		if (err && err_size)
			snprintf(err, err_size,
				 "cannot open port %s: unknown port type '%.*s' "
				 "(known: %s)",
				 spec, (int)type_len, spec, known);
		return -EINVAL;
	}

	why[0] = '\0';
	ret = ops->open(out, opts, why, sizeof(why));
	if (ret < 0) {
		*out = NULL;
		if (err && err_size)
			snprintf(err, err_size, "cannot open port %s: %s", spec,
				 why[0] ? why : strerror(-ret));
	}
	return ret;
}

void
ina_port_faults_sync(struct ina_port *p, const struct ina_faults *f)
{
	p->stats.inject_drop = f->st.drop;
	p->stats.inject_dup = f->st.dup;
	p->stats.inject_reorder = f->st.reorder;
	p->stats.inject_delay = f->st.delay;
	p->stats.inject_corrupt = f->st.corrupt;
}

uint16_t
ina_port_faults_rx(struct ina_port *p, struct ina_faults *f,
		   uint16_t (*raw_rx)(struct ina_port *, struct ina_pkt **, uint16_t),
		   struct ina_pkt **pkts, uint16_t n)
{
	uint64_t now = 0;
	uint16_t nb = 0, got;

	if (ina_faults_active(f)) {
		now = ina_faults_timed(f) ? ina_now_ns() : 0;
		nb = ina_faults_release(f, now, pkts, n);
	}
	if (nb < n) {
		got = raw_rx(p, pkts + nb, (uint16_t)(n - nb));
		if (ina_faults_active(f) && got)
			got = ina_faults_rx(f, now, pkts + nb, got, (uint16_t)(n - nb));
		nb = (uint16_t)(nb + got);
	}
	if (ina_faults_active(f))
		ina_port_faults_sync(p, f);
	for (uint16_t i = 0; i < nb; i++)
		p->stats.rx_bytes += pkts[i]->len;
	if (nb) {
		p->stats.rx_pkts += nb;
		p->stats.rx_bursts++;
	}
	return nb;
}

uint64_t
ina_port_faults_wait_ns(const struct ina_faults *f, uint64_t timeout_ns)
{
	uint64_t next;

	if (f->nb_held == 0)
		return timeout_ns;
	next = ina_faults_next_ns(f, ina_faults_timed(f) ? ina_now_ns() : 0);
	return next < timeout_ns ? next : timeout_ns;
}
