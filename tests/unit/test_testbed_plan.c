/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of testbed/plan.c, what ina-testbed tells each process: the
 * links' addresses and names, a host's port spec (the link's MTU, its loss
 * each way once over udp and as the round trip over dpdk, twice its latency
 * on receive), its first retransmission timeout, and which topologies `run`
 * refuses and why (a tenant job or an attack, ina-sim's alone; two switch
 * tiers; a block over the MTU; with --dpdk a host in two jobs or a jumbo
 * link).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "tiers.h"
#include "run.h"

static void
test_names(void **state)
{
	char buf[64];

	(void)state;
	plan_link_addr(0, 1, 1, buf, sizeof(buf));
	assert_string_equal(buf, "10.100.0.2/24");
	plan_link_addr(0, 0, 0, buf, sizeof(buf));
	assert_string_equal(buf, "10.100.0.1");
	plan_link_addr(300, 1, 0, buf, sizeof(buf));
	assert_string_equal(buf, "10.101.44.2");
	plan_link_if(17, buf, sizeof(buf));
	assert_string_equal(buf, "v17");
	assert_string_equal(plan_encoding(1), "f32");
	assert_string_equal(plan_encoding(2), "i32");
	assert_string_equal(plan_encoding(3), "bf16");
}

static void
test_port(void **state)
{
	struct topo_link l = { .a = 1, .b = 0, .mtu = 1500 };
	char buf[256];

	(void)state;
	plan_host_port(&l, 3, 0, 7, buf, sizeof(buf));
	assert_string_equal(buf, "udp:mtu=1472,seed=7");
	l.loss = 0.01;
	l.latency_ns = 50000;
	plan_host_port(&l, 3, 0, 7, buf, sizeof(buf));
	assert_string_equal(buf, "udp:mtu=1472,seed=7,drop=0.01,delay_us=100,hold=256");
	plan_host_port(&l, 3, 1, 8, buf, sizeof(buf));
	assert_string_equal(buf, "dpdk:port=0,ip=10.100.3.2,mtu=1500,link_wait_ms=5000,seed=8,"
				 "drop=0.0199,delay_us=100,hold=256");
	/* Under a microsecond of latency: no delay at all. */
	l.loss = 0;
	l.latency_ns = 400;
	l.mtu = 9000;
	plan_host_port(&l, 0, 0, 1, buf, sizeof(buf));
	assert_string_equal(buf, "udp:mtu=8972,seed=1");
}

static void
test_rto(void **state)
{
	struct topo_link l = { .mtu = 1500 };
	struct topo_job job = { .block_size = 256, .lanes = 8, .encoding = 1 };

	(void)state;
	assert_int_equal(plan_host_rto_us(&l, &job), 0); /* ina-host's default */
	l.latency_ns = 50000;				 /* 4 x 100 us: the minimum */
	assert_int_equal(plan_host_rto_us(&l, &job), 5000);
	l.latency_ns = 10000000; /* 4 x 20 ms */
	assert_int_equal(plan_host_rto_us(&l, &job), 80000);
	/* 8 frames of 14 + 28 + 56 + 1024 bytes at 1 Mbit/s, three times. */
	l.latency_ns = 0;
	l.bandwidth_bps = 1000000;
	assert_int_equal(plan_host_rto_us(&l, &job), 3 * (8 * 1122 * 8));
	job.encoding = 3; /* bf16 frames are 512 bytes shorter */
	assert_int_equal(plan_host_rto_us(&l, &job), 3 * (8 * 610 * 8));
	l.bandwidth_bps = 1000;
	assert_int_equal(plan_host_rto_us(&l, &job), 10000000);
}

/* s0 with h0 and h1; s1 with h2; spine above both; jobs set by each test. */
static struct topo_node nodes[6];
static struct topo_link links[5];
static struct topo_job jobs[2];
static int hosts_a[2] = { 1, 2 }, hosts_b[3] = { 1, 2, 4 }, hosts_c[1] = { 1 };
static struct topology t;

static void
make(void)
{
	nodes[0] =
		(struct topo_node){ .name = "s0", .kind = TOPO_SWITCH, .parent = 5, .attach = -1 };
	nodes[1] = (struct topo_node){ .name = "h0", .kind = TOPO_HOST, .attach = 0 };
	nodes[2] = (struct topo_node){ .name = "h1", .kind = TOPO_HOST, .attach = 0 };
	nodes[3] =
		(struct topo_node){ .name = "s1", .kind = TOPO_SWITCH, .parent = 5, .attach = -1 };
	nodes[4] = (struct topo_node){ .name = "h2", .kind = TOPO_HOST, .attach = 3 };
	nodes[5] = (struct topo_node){ .name = "spine",
				       .kind = TOPO_SWITCH,
				       .parent = -1,
				       .attach = -1 };
	links[0] = (struct topo_link){ .a = 1, .b = 0, .mtu = 1500 };
	links[1] = (struct topo_link){ .a = 2, .b = 0, .mtu = 1500 };
	links[2] = (struct topo_link){ .a = 4, .b = 3, .mtu = 1500 };
	links[3] = (struct topo_link){ .a = 0, .b = 5, .mtu = 1500 };
	links[4] = (struct topo_link){ .a = 3, .b = 5, .mtu = 1500 };
	jobs[0] = (struct topo_job){ .name = "a",
				     .hosts = hosts_a,
				     .nb_hosts = 2,
				     .root = 0,
				     .block_size = 256,
				     .encoding = 1 };
	jobs[1] = (struct topo_job){ .name = "c",
				     .hosts = hosts_c,
				     .nb_hosts = 1,
				     .root = 0,
				     .block_size = 256,
				     .encoding = 1 };
	t = (struct topology){ .name = "t",
			       .nodes = nodes,
			       .nb_nodes = 6,
			       .links = links,
			       .nb_links = 5,
			       .jobs = jobs,
			       .nb_jobs = 1 };
}

static const struct topo_link *
find_link(int a, int b)
{
	for (int i = 0; i < 5; i++)
		if ((links[i].a == a && links[i].b == b) || (links[i].a == b && links[i].b == a))
			return &links[i];
	return NULL;
}

/* The one function of the parser plan.c uses, over this file's links. */
const struct topo_link *
topology_link(const struct topology *tp, int a, int b)
{
	(void)tp;
	return find_link(a, b);
}

static void
test_check(void **state)
{
	char err[512];

	(void)state;
	make();
	assert_int_equal(plan_check(&t, 0, err, sizeof(err)), 0);
	assert_int_equal(plan_check(&t, 1, err, sizeof(err)), 0);
	/* 1450 f32 elements: 28 + 56 + 5800 bytes > 1500. */
	jobs[0].block_size = 1450;
	assert_int_equal(plan_check(&t, 0, err, sizeof(err)), TB_EXIT_USAGE);
	assert_non_null(strstr(err, "more than the MTU 1500 of the link h0-s0"));
	/* bf16 halves a block: 350 elements, 28 + 56 + 700 bytes, fit. */
	jobs[0].block_size = 350;
	jobs[0].encoding = 3;
	assert_int_equal(plan_check(&t, 0, err, sizeof(err)), 0);
	/* Two tiers. */
	make();
	jobs[0].hosts = hosts_b;
	jobs[0].nb_hosts = 3;
	jobs[0].root = 5;
	assert_int_equal(plan_check(&t, 0, err, sizeof(err)), 0);
	/* Not over DPDK (one address for every switch there). */
	assert_int_equal(plan_check(&t, 1, err, sizeof(err)), TB_EXIT_UNSUPPORTED);
	assert_non_null(strstr(err, "job 'a' spans 3 switches"));
	assert_non_null(strstr(err, "over DPDK"));
	/* A rack of job a that is job c's root. */
	t.nb_jobs = 2;
	assert_int_equal(plan_check(&t, 0, err, sizeof(err)), TB_EXIT_UNSUPPORTED);
	assert_non_null(strstr(err, "switch s0 is a rack of job 'a' (under spine) and the root "
				    "of job 'c'"));
	t.nb_jobs = 1;
	/* A block that does not fit the rack's uplink. */
	links[4].mtu = 1000;
	assert_int_equal(plan_check(&t, 0, err, sizeof(err)), TB_EXIT_USAGE);
	assert_non_null(strstr(err, "MTU 1000 of the link s1-spine"));
	links[4].mtu = 1500;
	/* More members on a switch than its bitmaps hold. */
	{
		struct tiers tr;

		assert_int_equal(tiers_build(&t, &jobs[0], 1, &tr, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "switch s0 aggregates 2 members, more than the 1"));
	}
	/* --dpdk: h0 in two jobs; a jumbo link. */
	make();
	t.nb_jobs = 2;
	assert_int_equal(plan_check(&t, 0, err, sizeof(err)), 0);
	assert_int_equal(plan_check(&t, 1, err, sizeof(err)), TB_EXIT_UNSUPPORTED);
	assert_non_null(strstr(err, "host h0 is in jobs 'a' and 'c'"));
	make();
	links[2].mtu = 9000;
	assert_int_equal(plan_check(&t, 0, err, sizeof(err)), 0);
	assert_int_equal(plan_check(&t, 1, err, sizeof(err)), TB_EXIT_UNSUPPORTED);
	assert_non_null(strstr(err, "link h2-s1 has MTU 9000"));
}

/* Tenant mode and attacks are ina-sim's: run refuses a topology with either. */
static void
test_sim_only(void **state)
{
	struct topo_attack attack = { .host = 4, .job = 0, .rate_bps = 1000000000, .line = 20 };
	char err[512];

	(void)state;
	/* A tenant's job is played (tenant mode), over UDP and DPDK. */
	make();
	jobs[0].tenant = "acme";
	jobs[0].tenant_index = 1;
	assert_int_equal(plan_check(&t, 0, err, sizeof(err)), 0);
	assert_int_equal(plan_check(&t, 1, err, sizeof(err)), 0);
	/* An attack is not. */
	make();
	t.attacks = &attack;
	t.nb_attacks = 1;
	assert_int_equal(plan_check(&t, 0, err, sizeof(err)), TB_EXIT_UNSUPPORTED);
	assert_non_null(strstr(err, "1 attacks (the first from h2, line 20): attacks are "
				    "simulated only (ina-sim)"));
	assert_int_equal(plan_check(&t, 1, err, sizeof(err)), TB_EXIT_UNSUPPORTED);
	make();
	assert_int_equal(plan_check(&t, 0, err, sizeof(err)), 0);
}

/* A job's tree: hosts first in rank order, then switches in node order. */
static void
test_tiers(void **state)
{
	struct tiers tr;
	char err[256];

	(void)state;
	make();
	assert_int_equal(tiers_build(&t, &jobs[0], 64, &tr, err, sizeof(err)), 0);
	assert_int_equal(tr.nb_switches, 1);
	assert_int_equal(tr.max_depth, 1);
	assert_int_equal(tr.m[1].up, 0);
	assert_int_equal(tr.m[1].rank, 0);
	assert_int_equal(tr.m[2].rank, 1);
	assert_int_equal(tr.m[2].world, 2);
	assert_int_equal(tr.m[0].up, -1); /* the root */
	assert_int_equal(tr.m[4].up, -1); /* not in the job */
	tiers_fini(&tr);
	jobs[0].hosts = hosts_b;
	jobs[0].nb_hosts = 3;
	jobs[0].root = 5;
	assert_int_equal(tiers_build(&t, &jobs[0], 64, &tr, err, sizeof(err)), 0);
	assert_int_equal(tr.nb_switches, 3);
	assert_int_equal(tr.max_depth, 2);
	assert_int_equal(tr.m[1].up, 0);
	assert_int_equal(tr.m[1].world, 2);
	assert_int_equal(tr.m[4].up, 3);
	assert_int_equal(tr.m[4].rank, 0);
	assert_int_equal(tr.m[4].world, 1);
	assert_int_equal(tr.m[0].up, 5);
	assert_int_equal(tr.m[0].rank, 0);
	assert_int_equal(tr.m[0].world, 2);
	assert_int_equal(tr.m[3].up, 5);
	assert_int_equal(tr.m[3].rank, 1);
	assert_int_equal(tr.m[5].up, -1);
	tiers_fini(&tr);
	/* A root that is not above every host. */
	jobs[0].root = 3;
	assert_int_equal(tiers_build(&t, &jobs[0], 64, &tr, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "do not lead up to the job's root s1"));
	tiers_fini(&tr);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names), cmocka_unit_test(test_port),
		cmocka_unit_test(test_rto),   cmocka_unit_test(test_check),
		cmocka_unit_test(test_tiers), cmocka_unit_test(test_sim_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
