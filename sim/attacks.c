/* SPDX-License-Identifier: MIT */
/*
 * The attacks of a simulation (net_int.h; topologies/README.md, "Attacks"):
 * an attacker node (attack_node.c) per topology attack, aimed at its job's
 * switch, started with the run and stopped when its job is over; every
 * packet of its job between a switch and one of the job's hosts is shown to
 * it as it leaves (an on-path attacker next to the switch); its figures for
 * the report.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ina/wire.h"
#include "net_int.h"

int
sim_attacks_build(struct sim_net *net, char *err, size_t errlen)
{
	const struct topology *t = net->t;

	for (uint32_t i = 0; i < t->nb_attacks; i++) {
		const struct topo_attack *ta = &t->attacks[i];
		const struct topo_job *tj = &t->jobs[ta->job];
		const struct sim_job *job = &net->jobs[ta->job];
		struct attack_node_config ac = {
			.index = ta->host,
			.switch_index = job->tiers.m ? job->tiers.m[tj->hosts[0]].up
						     : t->nodes[tj->hosts[0]].attach,
			.job_id = sim_job_wire_id(tj),
			.rate_bps = ta->rate_bps,
			.frame_overhead = net->cfg.frame_overhead,
			.seed = net->cfg.seed * 0x2545f4914f6cdd1dull + i,
		};

		net->rep.attacks[i].attack = ta;
		net->nodes[ta->host] = attack_node_create(&net->env, &ac);
		if (!net->nodes[ta->host]) {
			snprintf(err, errlen, "attacks[%u]: cannot create the attacker: %s", i,
				 strerror(errno));
			return -EINVAL;
		}
	}
	return 0;
}

void
sim_attacks_start(struct sim_net *net)
{
	for (uint32_t i = 0; i < net->t->nb_attacks; i++)
		attack_node_start(net->nodes[net->t->attacks[i].host], net->now);
}

void
sim_attacks_step(struct sim_net *net)
{
	for (uint32_t i = 0; i < net->t->nb_attacks; i++) {
		const struct sim_job *job = &net->jobs[net->t->attacks[i].job];

		if (job->phase == JP_END || job->failed || !job->hosts)
			attack_node_stop(net->nodes[net->t->attacks[i].host]);
	}
}

void
sim_attacks_see(struct sim_net *net, int src, int dst, const struct ina_pkt *pkt)
{
	const struct topology *t = net->t;
	const struct sim_node *from = net->nodes[src], *to = net->nodes[dst];
	struct ina_hdr h;

	/* What a job's host sends its switch, and what a switch sends a
	 * job's host. */
	if (pkt->len < INA_HDR_SIZE || !from || !to)
		return;
	ina_wire_decode_hdr(pkt->data, &h);
	for (uint32_t i = 0; i < t->nb_attacks; i++) {
		const struct topo_attack *ta = &t->attacks[i];

		if (h.job_id != sim_job_wire_id(&t->jobs[ta->job]))
			continue;
		if (!strcmp(from->ops->kind, "host") && t->nodes[dst].kind == TOPO_SWITCH)
			attack_node_capture(net->nodes[ta->host], pkt, src, dst);
		else if (!strcmp(to->ops->kind, "host") && t->nodes[src].kind == TOPO_SWITCH)
			attack_node_result(net->nodes[ta->host], pkt, src, net->now);
	}
}

void
sim_attacks_report(struct sim_net *net)
{
	for (uint32_t i = 0; i < net->t->nb_attacks; i++)
		net->rep.attacks[i].st = *attack_node_stats(net->nodes[net->t->attacks[i].host]);
}
