/* SPDX-License-Identifier: MIT */
/* What ina-testbed tells each process and interface (plan.h): pure functions of the topology. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "ina/encoding.h"
#include "ina/wire.h"
#include "plan.h"
#include "run.h"
#include "tiers.h"

/* snprintf for messages, which are cut short rather than overflow. */
static void msg(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
msg(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

const char *
plan_encoding(uint8_t e)
{
	const char *name = ina_wire_encoding_name(e);

	return name ? name : "?";
}

static unsigned
elem_bytes(uint8_t e)
{
	const struct ina_encoding_ops *enc = ina_encoding(e);

	return enc ? (unsigned)enc->elem_size : 4;
}

/* A job over several switch tiers: every rack's uplink exists and fits a
 * block; not over DPDK (every switch there answers for one address); no
 * switch is a rack of this job and the root of another (a rack refuses
 * jobs it has no uplink for). */
static int
plan_check_tiers(const struct topology *t, const struct topo_job *job, const struct tiers *tr,
		 int dpdk, char *err, size_t errlen)
{
	if (tr->nb_switches < 2)
		return 0;
	if (job->data != TOPO_DATA_SYNTHETIC) {
		msg(err, errlen,
		    "job '%s' spans %u switches with data from a file: its hosts check sums "
		    "against their own switch's ranks only, so ina-testbed checks such a job "
		    "itself, which it can do for synthetic data only",
		    job->name, tr->nb_switches);
		return TB_EXIT_UNSUPPORTED;
	}
	if (ina_encoding(job->encoding)->elem_size < sizeof(float)) {
		/* Narrower than the switch's 32-bit sums: a rack's partial sum
		 * would be rounded twice. */
		msg(err, errlen,
		    "job '%s' spans %u switches in bf16: a rack switch does not "
		    "forward bf16 upstream",
		    job->name, tr->nb_switches);
		return TB_EXIT_UNSUPPORTED;
	}
	if (dpdk) {
		msg(err, errlen,
		    "--dpdk: job '%s' spans %u switches: hierarchical aggregation over DPDK is "
		    "not set up yet (every switch answers for one address there; run it over "
		    "UDP)",
		    job->name, tr->nb_switches);
		return TB_EXIT_UNSUPPORTED;
	}
	for (uint32_t s = 0; s < t->nb_nodes; s++) {
		const struct topo_link *l;

		if (t->nodes[s].kind != TOPO_SWITCH || tr->m[s].up < 0)
			continue;
		for (uint32_t j = 0; j < t->nb_jobs; j++) {
			if (t->jobs[j].root == (int)s) {
				msg(err, errlen,
				    "switch %s is a rack of job '%s' (under %s) and the root of job "
				    "'%s': a switch with an uplink runs only the jobs it forwards "
				    "upstream",
				    t->nodes[s].name, job->name, t->nodes[tr->m[s].up].name,
				    t->jobs[j].name);
				return TB_EXIT_UNSUPPORTED;
			}
		}
		l = topology_link(t, (int)s, tr->m[s].up);
		if (!l) {
			msg(err, errlen, "switch %s has no link to its uplink %s", t->nodes[s].name,
			    t->nodes[tr->m[s].up].name);
			return TB_EXIT_USAGE;
		}
		if (28u + INA_HDR_SIZE + (uint32_t)job->block_size * elem_bytes(job->encoding) >
		    l->mtu) {
			msg(err, errlen,
			    "job '%s': a block of %u %s elements does not fit the MTU %u of the "
			    "link %s-%s (line %d)",
			    job->name, job->block_size, plan_encoding(job->encoding), l->mtu,
			    t->nodes[s].name, t->nodes[tr->m[s].up].name, l->line);
			return TB_EXIT_USAGE;
		}
	}
	return 0;
}

int
plan_check(const struct topology *t, int dpdk, char *err, size_t errlen)
{
	/* ina-sim's alone: the testbed plays no attacker. */
	if (t->nb_attacks) {
		msg(err, errlen,
		    "%u attacks (the first from %s, line %d): attacks are simulated only "
		    "(ina-sim); ina-testbed plays jobs, in token or tenant mode",
		    t->nb_attacks, t->nodes[t->attacks[0].host].name, t->attacks[0].line);
		return TB_EXIT_UNSUPPORTED;
	}
	for (uint32_t j = 0; dpdk && j < t->nb_jobs; j++)
		for (uint16_t k = 0; k < t->jobs[j].nb_hosts; k++)
			for (uint32_t i = 0; i < j; i++)
				for (uint16_t m = 0; m < t->jobs[i].nb_hosts; m++)
					if (t->jobs[i].hosts[m] == t->jobs[j].hosts[k]) {
						msg(err, errlen,
						    "--dpdk: host %s is in jobs '%s' and '%s': one "
						    "DPDK process per veth (run it over UDP)",
						    t->nodes[t->jobs[j].hosts[k]].name,
						    t->jobs[i].name, t->jobs[j].name);
						return TB_EXIT_UNSUPPORTED;
					}
	for (uint32_t i = 0; dpdk && i < t->nb_links; i++)
		if (t->links[i].mtu > 1500) {
			msg(err, errlen,
			    "--dpdk: link %s-%s has MTU %u: af_packet frames above "
			    "1500 bytes are not set up yet (run it over UDP)",
			    t->nodes[t->links[i].a].name, t->nodes[t->links[i].b].name,
			    t->links[i].mtu);
			return TB_EXIT_UNSUPPORTED;
		}
	for (uint32_t j = 0; j < t->nb_jobs; j++) {
		const struct topo_job *job = &t->jobs[j];
		struct tiers tr;
		int ret;

		if (tiers_build(t, job, INA_MAX_WORLD, &tr, err, errlen) < 0)
			return TB_EXIT_UNSUPPORTED;
		ret = plan_check_tiers(t, job, &tr, dpdk, err, errlen);
		tiers_fini(&tr);
		if (ret)
			return ret;
		for (uint16_t k = 0; k < job->nb_hosts; k++) {
			const struct topo_node *h = &t->nodes[job->hosts[k]];
			const struct topo_link *l;

			l = topology_link(t, job->hosts[k], h->attach);
			if (!l) {
				msg(err, errlen, "host %s has no link to its switch %s", h->name,
				    t->nodes[h->attach].name);
				return TB_EXIT_USAGE;
			}
			/* IPv4 and UDP headers, then the ina header and one block. */
			if (28u + INA_HDR_SIZE +
				    (uint32_t)job->block_size * elem_bytes(job->encoding) >
			    l->mtu) {
				msg(err, errlen,
				    "job '%s': a block of %u %s elements is a %u-byte IP packet, "
				    "more than the MTU %u of the link %s-%s (line %d)",
				    job->name, job->block_size, plan_encoding(job->encoding),
				    28u + INA_HDR_SIZE +
					    job->block_size * elem_bytes(job->encoding),
				    l->mtu, h->name, t->nodes[h->attach].name, l->line);
				return TB_EXIT_USAGE;
			}
		}
	}
	return 0;
}

void
plan_link_addr(uint32_t i, int side_a, int with_len, char *buf, size_t size)
{
	msg(buf, size, "10.%u.%u.%u%s", 100 + i / 256, i % 256, side_a ? 2 : 1,
	    with_len ? "/24" : "");
}

void
plan_link_if(uint32_t i, char *buf, size_t size)
{
	msg(buf, size, "v%" PRIu32, i);
}

void
plan_host_port(const struct topo_link *l, uint32_t i, int dpdk, uint64_t seed, char *buf,
	       size_t size)
{
	uint64_t delay_us = 2 * l->latency_ns / 1000;
	char ip[32], loss[48] = "", delay[64] = "";

	if (l->loss > 0)
		msg(loss, sizeof(loss), ",drop=%.9g",
		    dpdk ? 1 - (1 - l->loss) * (1 - l->loss) : l->loss);
	if (delay_us > 0)
		msg(delay, sizeof(delay), ",delay_us=%" PRIu64 ",hold=256", delay_us);
	if (dpdk) {
		plan_link_addr(i, 1, 0, ip, sizeof(ip));
		msg(buf, size, "dpdk:port=0,ip=%s,mtu=%u,link_wait_ms=5000,seed=%" PRIu64 "%s%s",
		    ip, l->mtu, seed, loss, delay);
	} else {
		/* The udp port's mtu= is the largest UDP payload. */
		msg(buf, size, "udp:mtu=%u,seed=%" PRIu64 "%s%s", l->mtu - 28, seed, loss, delay);
	}
}

uint64_t
plan_host_rto_us(const struct topo_link *l, const struct topo_job *job)
{
	uint64_t delay_us = 2 * l->latency_ns / 1000;
	uint64_t frame = 14 + 28 + INA_HDR_SIZE +
			 (uint64_t)job->block_size * elem_bytes(job->encoding);
	uint64_t queue_us = l->bandwidth_bps
				    ? (uint64_t)job->lanes * frame * 8 * 1000000 / l->bandwidth_bps
				    : 0;
	uint64_t us = 4 * delay_us + 3 * queue_us;

	if (delay_us == 0 && queue_us == 0)
		return 0;
	/* ina-host's minimum is 5 ms; it takes up to 10 s. */
	return us < 5000 ? 5000 : us > 10000000 ? 10000000 : us;
}

uint64_t
plan_host_seed(const struct topo_job *job, const struct tiers *tr, int host)
{
	if (tr->nb_switches < 2)
		return job->seed;
	return job->seed ^ ((uint64_t)(tr->m[host].up + 1) * 0x9e3779b97f4a7c15ull);
}
