/* SPDX-License-Identifier: MIT */
/*
 * Tenants under attack, simulated (sim/attack_node.c, issue 19's point 6 on
 * a switch of its own): tenant alice's job of two ranks on one switch under
 * a fair share, alone, and then beside tenant mallory's job (one rank,
 * weight 255, asking the whole slot pool) while mallory's attacker, which
 * sees every packet of alice's job, sends it forged, replayed and spoofed
 * DATA, spoofed LEAVEs, re-JOINs and a JOIN flood at the rate of its link.
 * Alice's every sum stays exact, her job finishes, her goodput stays within
 * 10% of running alone, and the switch answers what the attacker sends from
 * its own address with no more bytes than it sent. In token mode the same
 * attacker breaks the job, as README.md says a token does not stop. And a job
 * over two racks under a spine, attacked beside its ranks on one rack.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ina/wire.h"
#include "net.h"
#include "pipeline.h"
#include "sim_topo.h"

static const struct sim_topo_link link10g = { 10000000000ull, 20000, 0 };

enum { ALICE_ALONE, BESIDE_MALLORY, ATTACKED };

/* s0 with h0..h4 at 10 Gbit/s: alice on h0 and h1; mallory's job on h2; the
 * attacker on h3; h4 idle. */
static struct topology *
make(int how, int tenants)
{
	struct topology *t = sim_topo_racks(1, 5, link10g, link10g);
	struct topo_job *a = sim_topo_job(t), *m;

	assert_non_null(t);
	t->nodes[0].slots = 64;
	t->nodes[0].share = TOPO_SHARE_FAIR;
	a->nb_hosts = 2;
	a->tensor_len = 1u << 18;
	a->rounds = 6;
	a->lanes = 32;
	if (tenants) {
		a->tenant = strdup("alice");
		a->tenant_index = 1;
	}
	if (how == ALICE_ALONE)
		return t;
	t->jobs = realloc(t->jobs, 2 * sizeof(*t->jobs));
	assert_non_null(t->jobs);
	a = &t->jobs[0];
	m = &t->jobs[1];
	*m = *a;
	m->name = strdup("m");
	m->job_id = 2;
	m->hosts = calloc(1, sizeof(int));
	m->hosts[0] = 3; /* h2: node 0 is the switch */
	m->nb_hosts = 1;
	m->rounds = 40;
	m->lanes = 64;
	m->weight = 255;
	m->tenant = tenants ? strdup("mallory") : NULL;
	m->tenant_index = tenants ? 2 : 0;
	t->nb_jobs = 2;
	if (how == ATTACKED) {
		t->attacks = calloc(1, sizeof(*t->attacks));
		t->attacks[0] =
			(struct topo_attack){ .host = 4, .job = 0, .rate_bps = 10000000000ull };
		t->nb_attacks = 1;
	}
	return t;
}

struct outcome {
	enum sim_job_state alice;
	double goodput;
	uint32_t rounds;
	char error[400];
	struct attack_stats atk;
	uint64_t drop[PDROP_MAX];
	uint64_t drop_wire[INA_WIRE_REASON_MAX];
};

static void
run(const struct topology *t, struct outcome *o)
{
	struct sim_config cfg;
	struct sim_net *net;
	const struct sim_report *rep;
	char err[256];

	sim_config_init(&cfg);
	cfg.limit_ns = 20ull * 1000000000ull;
	net = sim_net_create(t, &cfg, err, sizeof(err));
	if (!net)
		fail_msg("sim_net_create: %s", err);
	sim_net_run(net);
	rep = sim_net_report(net);
	o->alice = rep->jobs[0].state;
	o->goodput = rep->jobs[0].goodput_bps;
	o->rounds = rep->jobs[0].rounds_done;
	snprintf(o->error, sizeof(o->error), "%s", rep->jobs[0].error);
	if (rep->nb_attacks)
		o->atk = rep->attacks[0].st;
	memcpy(o->drop, rep->switches[0]->drop, sizeof(o->drop));
	memcpy(o->drop_wire, rep->switches[0]->drop_wire, sizeof(o->drop_wire));
	sim_net_destroy(net);
}

static void
test_tenant_attacked(void **state)
{
	struct outcome alone, beside, attacked;
	struct topology *t;
	uint64_t sent = 0;

	(void)state;
	t = make(ALICE_ALONE, 1);
	run(t, &alone);
	sim_topo_free(t);
	t = make(BESIDE_MALLORY, 1);
	run(t, &beside);
	sim_topo_free(t);
	t = make(ATTACKED, 1);
	run(t, &attacked);
	sim_topo_free(t);

	print_message("alice alone %.3f Gbit/s, beside mallory %.3f (%.3f), attacked %.3f "
		      "(%.3f)\n",
		      alone.goodput * 1e-9, beside.goodput * 1e-9, beside.goodput / alone.goodput,
		      attacked.goodput * 1e-9, attacked.goodput / alone.goodput);
	for (int k = 0; k < ATTACK_KINDS; k++) {
		print_message("  %s %llu\n", attack_kind_names[k],
			      (unsigned long long)attacked.atk.sent[k]);
		sent += attacked.atk.sent[k];
		assert_true(attacked.atk.sent[k] > 0);
	}
	print_message("  back %llu bytes of %llu sent from its own address; the switch's drops:",
		      (unsigned long long)attacked.atk.bytes_back,
		      (unsigned long long)attacked.atk.bytes_sent_own);
	for (int i = 0; i < PDROP_MAX; i++)
		if (attacked.drop[i])
			print_message(" %s %llu", pipeline_drop_name((enum pipeline_drop)i),
				      (unsigned long long)attacked.drop[i]);
	for (int i = 0; i < INA_WIRE_REASON_MAX; i++)
		if (attacked.drop_wire[i])
			print_message(" %s %llu", ina_wire_reason_name((enum ina_wire_reason)i),
				      (unsigned long long)attacked.drop_wire[i]);
	print_message("\n");
	if (attacked.alice != SIM_JOB_OK)
		fail_msg("alice attacked: %s", attacked.error);
	assert_int_equal(alone.alice, SIM_JOB_OK);
	assert_int_equal(beside.alice, SIM_JOB_OK);
	assert_int_equal(attacked.rounds, 6);
	assert_true(sent > 1000);
	assert_true(attacked.atk.captured > 100);
	assert_true(attacked.goodput >= 0.9 * alone.goodput);
	assert_true(attacked.atk.bytes_back <= attacked.atk.bytes_sent_own);
	assert_true(attacked.drop[PDROP_AUTH] > 0);
}

static void
test_token_attacked(void **state)
{
	struct outcome o;
	struct topology *t = make(ATTACKED, 0);

	(void)state;
	run(t, &o);
	sim_topo_free(t);
	for (int i = 0; i < PDROP_MAX; i++)
		if (o.drop[i])
			print_message(" %s %llu", pipeline_drop_name((enum pipeline_drop)i),
				      (unsigned long long)o.drop[i]);
	for (int i = 0; i < INA_WIRE_REASON_MAX; i++)
		if (o.drop_wire[i])
			print_message(" %s %llu", ina_wire_reason_name((enum ina_wire_reason)i),
				      (unsigned long long)o.drop_wire[i]);
	print_message(" impersonate %llu\n", (unsigned long long)o.atk.sent[ATTACK_IMPERSONATE]);
	print_message("token mode attacked: %s after %u rounds: %s\n",
		      o.alice == SIM_JOB_OK ? "ok" : "failed", o.rounds, o.error);
	assert_int_equal(o.alice, SIM_JOB_FAILED);
}

/* Two racks under a spine in tenant mode (the racks tag what they send up),
 * the attacker on rack 1 beside two of the job's four ranks: every sum
 * exact, its forgeries dropped at the rack. */
static void
test_racks_attacked(void **state)
{
	struct topology *t = sim_topo_racks(2, 3, link10g, link10g);
	struct topo_job *j = sim_topo_job(t);
	struct sim_config cfg;
	struct sim_net *net;
	const struct sim_report *rep;
	char err[256];

	(void)state;
	/* Nodes: 0 the spine, 1 and 2 the racks, 3..5 and 6..8 their hosts. */
	j->hosts[0] = 3;
	j->hosts[1] = 4;
	j->hosts[2] = 6;
	j->hosts[3] = 7;
	j->nb_hosts = 4;
	j->rounds = 4;
	j->tenant = strdup("alice");
	j->tenant_index = 1;
	t->attacks = calloc(1, sizeof(*t->attacks));
	assert_non_null(t->attacks);
	t->attacks[0] = (struct topo_attack){ .host = 5, .job = 0, .rate_bps = 10000000000ull };
	t->nb_attacks = 1;
	sim_config_init(&cfg);
	net = sim_net_create(t, &cfg, err, sizeof(err));
	if (!net)
		fail_msg("sim_net_create: %s", err);
	sim_net_run(net);
	rep = sim_net_report(net);
	print_message("two racks attacked: %s, %u sums checked; rack 1 dropped %llu for their "
		      "tags; impersonations %llu\n",
		      rep->jobs[0].state == SIM_JOB_OK ? "ok" : rep->jobs[0].error,
		      (unsigned)rep->jobs[0].sums_checked,
		      (unsigned long long)rep->switches[1]->drop[PDROP_AUTH],
		      (unsigned long long)rep->attacks[0].st.sent[ATTACK_IMPERSONATE]);
	assert_int_equal(rep->jobs[0].state, SIM_JOB_OK);
	assert_int_equal(rep->jobs[0].sums_checked, 16);
	assert_int_equal(rep->jobs[0].nb_switches, 3);
	assert_true(rep->attacks[0].st.sent[ATTACK_IMPERSONATE] > 100);
	assert_true(rep->switches[1]->drop[PDROP_AUTH] > 100);
	sim_net_destroy(net);
	sim_topo_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tenant_attacked),
		cmocka_unit_test(test_token_attacked),
		cmocka_unit_test(test_racks_attacked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
