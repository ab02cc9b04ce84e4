/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of testbed/report.c, ina-testbed's report: from ina-host
 * reports written to a temporary folder and veth counters given by hand,
 * a round takes as long as its slowest rank, retransmits and bytes add up
 * over the ranks, goodput is the dense tensor over the mean round, a job
 * verifies only if every rank verified and exited 0, a rank without a report
 * (stopped early) leaves the rounds every rank printed, and the links'
 * directions are the right way round; the text says the same.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"

static char dir[64];
static char paths[2][128];

/* An ina-host report: 3 rounds, the given seconds and retransmits per round. */
static void
write_host(int rank, const double secs[3], const int retx[3], int verified)
{
	FILE *f;

	snprintf(paths[rank], sizeof(paths[rank]), "%s/r%d.json", dir, rank);
	f = fopen(paths[rank], "w");
	assert_non_null(f);
	fprintf(f,
		"{\"verified\": %s, \"transport\": \"udp\", \"seconds\": %g, \"retransmits\": %d,"
		" \"bytes_sent\": %d, \"bytes_received\": %d, \"injected_drops\": 5,"
		" \"per_round\": [",
		verified ? "true" : "false", secs[0] + secs[1] + secs[2],
		retx[0] + retx[1] + retx[2], 3000 + rank, 6000 + rank);
	for (int i = 0; i < 3; i++)
		fprintf(f,
			"%s{\"round\": %d, \"seconds\": %g, \"retransmits\": %d,"
			" \"bytes_sent\": 1000, \"bytes_received\": 2000,"
			" \"sum_hash\": \"%016x\"}",
			i ? ", " : "", i, secs[i], retx[i], 0xab00 + i);
	fprintf(f, "]}\n");
	fclose(f);
}

/* h0 and h1 under switch s0, one job of 3 rounds of 1000 f32 elements. */
static struct topology t;
static struct topo_node nodes[3];
static struct topo_link links[2];
static struct topo_job job;
static int job_hosts[2] = { 1, 2 };

static void
make_topology(void)
{
	nodes[0] = (struct topo_node){ .name = "s0",
				       .kind = TOPO_SWITCH,
				       .parent = -1,
				       .replica_of = -1,
				       .attach = -1 };
	nodes[1] = (struct topo_node){ .name = "h0", .kind = TOPO_HOST, .attach = 0 };
	nodes[2] = (struct topo_node){ .name = "h1", .kind = TOPO_HOST, .attach = 0 };
	links[0] = (struct topo_link){ .a = 1, .b = 0, .bandwidth_bps = 100000000, .mtu = 1500 };
	links[1] = (struct topo_link){ .a = 2, .b = 0, .mtu = 1500 };
	job = (struct topo_job){ .name = "j",
				 .job_id = 7,
				 .hosts = job_hosts,
				 .nb_hosts = 2,
				 .root = 0,
				 .tensor_len = 1000,
				 .rounds = 3,
				 .block_size = 256,
				 .lanes = 8,
				 .encoding = 1 };
	t = (struct topology){ .name = "t",
			       .file = "t.yaml",
			       .nodes = nodes,
			       .nb_nodes = 3,
			       .links = links,
			       .nb_links = 2,
			       .jobs = &job,
			       .nb_jobs = 1 };
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_testbed_report.XXXXXX");
	assert_non_null(mkdtemp(dir));
	make_topology();
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	unlink(paths[0]);
	unlink(paths[1]);
	rmdir(dir);
	return 0;
}

static struct report_rank ranks[2];
static struct report_rank *rank_rows[1] = { ranks };
static struct report_link rlinks[2];

static json_t *
build(const char *outcome)
{
	struct report_run r = {
		.t = &t,
		.transport = "udp",
		.seconds = 2.0,
		.outcome = outcome,
		.ranks = rank_rows,
		.links = rlinks,
	};

	return report_build(&r);
}

static void
two_ranks(int verified1, int exit_ok1)
{
	static const double s0[3] = { 0.010, 0.030, 0.020 }, s1[3] = { 0.020, 0.010, 0.020 };
	static const int x0[3] = { 1, 0, 2 }, x1[3] = { 0, 4, 0 };

	write_host(0, s0, x0, 1);
	write_host(1, s1, x1, verified1);
	for (int k = 0; k < 2; k++)
		ranks[k] = (struct report_rank){ .node = 1 + k,
						 .report = paths[k],
						 .exited_ok = k ? exit_ok1 : 1,
						 .rounds_done = 3 };
	snprintf(ranks[0].how, sizeof(ranks[0].how), "exit 0");
	snprintf(ranks[1].how, sizeof(ranks[1].how), exit_ok1 ? "exit 0" : "exit 1");
	memset(rlinks, 0, sizeof(rlinks));
	rlinks[0] = (struct report_link){
		.have = 1,
		.a = { .tx_bytes = 5000, .tx_packets = 5, .rx_bytes = 9000, .rx_packets = 9 },
		.b = { .tx_bytes = 9100,
		       .tx_packets = 10,
		       .rx_bytes = 4900,
		       .rx_packets = 4,
		       .shaper_drops = 1 }
	};
}

static double
at(json_t *o, const char *path)
{
	char buf[128], *save = NULL, *k;
	json_t *v = o;

	snprintf(buf, sizeof(buf), "%s", path);
	for (k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save)) {
		if (k[0] >= '0' && k[0] <= '9')
			v = json_array_get(v, (size_t)atoi(k));
		else
			v = json_object_get(v, k);
	}
	assert_non_null(v);
	if (json_is_boolean(v))
		return json_is_true(v);
	return json_number_value(v);
}

static void
test_rounds_and_totals(void **state)
{
	json_t *rep;

	(void)state;
	two_ranks(1, 1);
	rep = build("ok");
	assert_non_null(rep);
	/* The slowest rank's time, the ranks' retransmits and bytes added. */
	assert_true(fabs(at(rep, "jobs.0.per_round.0.seconds") - 0.020) < 1e-9);
	assert_true(fabs(at(rep, "jobs.0.per_round.1.seconds") - 0.030) < 1e-9);
	assert_true(fabs(at(rep, "jobs.0.per_round.2.seconds") - 0.020) < 1e-9);
	assert_int_equal(at(rep, "jobs.0.per_round.1.retransmits"), 4);
	assert_int_equal(at(rep, "jobs.0.per_round.2.retransmits"), 2);
	assert_int_equal(at(rep, "jobs.0.per_round.0.bytes"), 6000);
	assert_true(fabs(at(rep, "jobs.0.round_seconds.min") - 0.020) < 1e-9);
	assert_true(fabs(at(rep, "jobs.0.round_seconds.max") - 0.030) < 1e-9);
	assert_true(fabs(at(rep, "jobs.0.round_seconds.mean") - 0.070 / 3) < 1e-9);
	assert_true(fabs(at(rep, "jobs.0.goodput_gbps") - 4000.0 * 8 / (0.070 / 3) / 1e9) < 1e-12);
	assert_int_equal(at(rep, "jobs.0.retransmits"), 7);
	assert_int_equal(at(rep, "jobs.0.bytes_sent"), 6001);
	assert_int_equal(at(rep, "jobs.0.bytes_received"), 12001);
	assert_int_equal(at(rep, "jobs.0.rounds_done"), 3);
	assert_true(at(rep, "jobs.0.verified"));
	assert_true(at(rep, "verified"));
	/* Links: a's sends are a_to_b, received at b; not counted, no numbers. */
	assert_int_equal(at(rep, "links.0.a_to_b.bytes_sent"), 5000);
	assert_int_equal(at(rep, "links.0.a_to_b.bytes_received"), 4900);
	assert_int_equal(at(rep, "links.0.b_to_a.bytes_sent"), 9100);
	assert_int_equal(at(rep, "links.0.b_to_a.bytes_received"), 9000);
	assert_int_equal(at(rep, "links.0.b_to_a.shaper_drops"), 1);
	assert_true(fabs(at(rep, "links.0.a_to_b.mean_mbps") - 5000.0 * 8 / 2.0 / 1e6) < 1e-9);
	assert_false(at(rep, "links.1.counted"));
	assert_null(json_object_get(json_array_get(json_object_get(rep, "links"), 1), "a_to_b"));
	json_decref(rep);
}

static void
test_not_verified(void **state)
{
	json_t *rep;

	(void)state;
	/* A rank whose report says so, a rank that exited 1, a run that was
	 * interrupted: each makes the whole not verified. */
	two_ranks(0, 1);
	rep = build("ok");
	assert_false(at(rep, "jobs.0.verified"));
	assert_false(at(rep, "verified"));
	json_decref(rep);
	two_ranks(1, 0);
	rep = build("ok");
	assert_false(at(rep, "jobs.0.verified"));
	assert_false(at(rep, "jobs.0.ranks.1.exited_ok"));
	json_decref(rep);
	two_ranks(1, 1);
	rep = build("interrupted");
	assert_true(at(rep, "jobs.0.verified"));
	assert_false(at(rep, "verified"));
	json_decref(rep);
}

/* A job across switches: the testbed's sum hashes decide, not the hosts'
 * own (partial) checks, and their exit 1 from it does not count. */
static void
test_checked_by_testbed(void **state)
{
	static const uint64_t right[3] = { 0xab00, 0xab01, 0xab02 };
	static const uint64_t wrong[3] = { 0xab00, 0xdead, 0xab02 };
	json_t *rep;

	(void)state;
	two_ranks(0, 0);
	ranks[0].want_hash = ranks[1].want_hash = right;
	rep = build("ok");
	assert_true(at(rep, "jobs.0.ranks.1.verified"));
	assert_true(at(rep, "jobs.0.verified"));
	assert_true(at(rep, "verified"));
	assert_string_equal(
		json_string_value(json_object_get(
			json_array_get(json_object_get(json_array_get(json_object_get(rep, "jobs"),
								      0),
						       "ranks"),
				       1),
			"checked_by")),
		"testbed");
	json_decref(rep);
	ranks[1].want_hash = wrong;
	rep = build("ok");
	assert_true(at(rep, "jobs.0.ranks.0.verified"));
	assert_false(at(rep, "jobs.0.ranks.1.verified"));
	assert_false(at(rep, "verified"));
	json_decref(rep);
	/* A host killed by a signal is not excused. */
	two_ranks(1, 0);
	ranks[0].want_hash = ranks[1].want_hash = right;
	snprintf(ranks[1].how, sizeof(ranks[1].how), "killed by signal 9");
	rep = build("ok");
	assert_false(at(rep, "jobs.0.verified"));
	json_decref(rep);
}

static void
test_missing_report(void **state)
{
	json_t *rep;

	(void)state;
	/* Ranks stopped early: no report; the rounds every rank printed. */
	two_ranks(1, 0);
	ranks[0].report = NULL;
	ranks[1].report = NULL;
	ranks[0].rounds_done = 5;
	ranks[1].rounds_done = 4;
	rep = build("timeout");
	assert_int_equal(at(rep, "jobs.0.rounds_done"), 4);
	assert_int_equal(json_array_size(
				 json_object_get(json_array_get(json_object_get(rep, "jobs"), 0),
						 "per_round")),
			 0);
	assert_false(at(rep, "jobs.0.verified"));
	json_decref(rep);
}

static void
test_text(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_t *rep;

	(void)state;
	two_ranks(1, 1);
	rep = build("ok");
	report_print(rep, f);
	fclose(f);
	assert_non_null(strstr(buf, "3/3 rounds of 1000 f32 elements"));
	assert_non_null(strstr(buf, "every sum verified"));
	assert_non_null(strstr(buf, "round time mean 23.333 ms, min 20.000, max 30.000"));
	assert_non_null(strstr(buf, "retransmits 7"));
	assert_non_null(strstr(buf, "100 Mbit/s"));
	assert_non_null(strstr(buf, "shaper drops 0 up, 1 down"));
	assert_non_null(strstr(buf, "not counted"));
	free(buf);
	json_decref(rep);
	two_ranks(1, 0);
	buf = NULL;
	f = open_memstream(&buf, &len);
	rep = build("ok");
	report_print(rep, f);
	fclose(f);
	assert_non_null(strstr(buf, "FAILED"));
	assert_non_null(strstr(buf, "rank 1 on h1: verified, exit 1"));
	free(buf);
	json_decref(rep);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rounds_and_totals),
		cmocka_unit_test(test_not_verified),
		cmocka_unit_test(test_checked_by_testbed),
		cmocka_unit_test(test_missing_report),
		cmocka_unit_test(test_text),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
