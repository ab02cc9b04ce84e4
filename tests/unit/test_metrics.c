/* SPDX-License-Identifier: MIT */
/*
 * The switch's Prometheus text (switch_sim/metrics.c): known snapshots give
 * the expected lines, and every text parses as the exposition format 0.0.4
 * says: "# HELP name text" then "# TYPE name counter|gauge" once per family,
 * then its samples "name{label="value",...} value" with the family's name,
 * values that are numbers, label values escaped, no series twice, counters
 * named *_total. Every counter of struct pipeline_stats and struct
 * ina_port_stats comes out once, with its own value; a switch on several
 * partitions labels its port and lcore counters, not the pipeline's.
 */
#include <ctype.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "skip.h"

#include "metrics.h"

/* ---- the text into lines, checked against the format ---- */

#define MAX_FAMILIES 256
#define MAX_SERIES 4096

struct parsed {
	char *text;
	size_t len;
	int nb_families;
	char families[MAX_FAMILIES][96];
	char types[MAX_FAMILIES][8];
	int nb_series;
	char *series[MAX_SERIES]; /* "name{labels}" */
	double values[MAX_SERIES];
};

static char *
render(const struct metrics_snapshot *s, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	assert_int_equal(metrics_write(s, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static int
name_char(int c, int first)
{
	return isalpha(c) || c == '_' || c == ':' || (!first && isdigit(c));
}

/* Parses a metric name at 'p'; returns the character after it. */
static const char *
parse_name(const char *p, int colon_ok)
{
	assert_true(name_char((unsigned char)*p, 1) && (colon_ok || *p != ':'));
	p++;
	while (name_char((unsigned char)*p, 0) && (colon_ok || *p != ':'))
		p++;
	return p;
}

/* One sample line: name, optional {label="value",...}, one space, a value. */
static void
parse_sample(struct parsed *ps, const char *line, const char *family)
{
	const char *p = parse_name(line, 1), *key_end;
	char *end;
	size_t n;

	assert_int_equal((int)(p - line), (int)strlen(family));
	assert_memory_equal(line, family, strlen(family));
	if (*p == '{') {
		p++;
		for (;;) {
			key_end = parse_name(p, 0);
			assert_int_equal(key_end[0], '=');
			assert_int_equal(key_end[1], '"');
			p = key_end + 2;
			while (*p != '"') {
				assert_true(*p != '\0' && *p != '\n');
				if (*p == '\\') {
					assert_true(p[1] == '\\' || p[1] == '"' || p[1] == 'n');
					p++;
				}
				p++;
			}
			p++;
			if (*p == '}')
				break;
			assert_int_equal(*p, ',');
			p++;
		}
		p++;
	}
	assert_int_equal(*p, ' ');
	n = (size_t)(p - line);
	assert_true(ps->nb_series < MAX_SERIES);
	ps->values[ps->nb_series] = strtod(p + 1, &end);
	assert_true(end != p + 1 && *end == '\0');
	assert_true(isfinite(ps->values[ps->nb_series]));
	ps->series[ps->nb_series] = strndup(line, n);
	for (int i = 0; i < ps->nb_series; i++)
		assert_string_not_equal(ps->series[i], ps->series[ps->nb_series]);
	ps->nb_series++;
}

/* Checks the whole text; fills 'ps' with its families and series. */
static void
parse(struct parsed *ps, const struct metrics_snapshot *s)
{
	char *line, *save = NULL, *copy;
	const char *family = NULL;
	int expect_type = 0;

	memset(ps, 0, sizeof(*ps));
	ps->text = render(s, &ps->len);
	assert_true(ps->len > 0);
	assert_int_equal(ps->text[ps->len - 1], '\n');
	assert_null(strstr(ps->text, "\n\n"));
	copy = strdup(ps->text);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "# HELP ", 7) == 0) {
			const char *end = parse_name(line + 7, 1);
			size_t n = (size_t)(end - (line + 7));

			assert_false(expect_type);
			assert_int_equal(*end, ' ');
			assert_true(end[1] != '\0');
			assert_true(n < sizeof(ps->families[0]));
			for (int i = 0; i < ps->nb_families; i++)
				assert_true(strlen(ps->families[i]) != n ||
					    memcmp(ps->families[i], line + 7, n) != 0);
			assert_true(ps->nb_families < MAX_FAMILIES);
			memcpy(ps->families[ps->nb_families], line + 7, n);
			ps->families[ps->nb_families][n] = '\0';
			family = ps->families[ps->nb_families++];
			expect_type = 1;
		} else if (strncmp(line, "# TYPE ", 7) == 0) {
			const char *end = parse_name(line + 7, 1);
			char *type = ps->types[ps->nb_families - 1];

			assert_true(expect_type);
			assert_int_equal((int)(end - (line + 7)), (int)strlen(family));
			assert_memory_equal(line + 7, family, strlen(family));
			assert_int_equal(*end, ' ');
			assert_true(strcmp(end + 1, "counter") == 0 ||
				    strcmp(end + 1, "gauge") == 0);
			snprintf(type, sizeof(ps->types[0]), "%s", end + 1);
			if (strcmp(type, "counter") == 0)
				assert_string_equal(family + strlen(family) - 6, "_total");
			expect_type = 0;
		} else {
			assert_int_not_equal(line[0], '#');
			assert_false(expect_type);
			assert_non_null(family);
			parse_sample(ps, line, family);
		}
	}
	assert_false(expect_type);
	free(copy);
}

static void
parsed_free(struct parsed *ps)
{
	for (int i = 0; i < ps->nb_series; i++)
		free(ps->series[i]);
	free(ps->text);
}

/* The value of series "name{labels}" (exactly as written); NAN if absent. */
static double
value_of(const struct parsed *ps, const char *series)
{
	for (int i = 0; i < ps->nb_series; i++)
		if (strcmp(ps->series[i], series) == 0)
			return ps->values[i];
	return NAN;
}

static int
has_line(const struct parsed *ps, const char *line)
{
	char want[256];

	snprintf(want, sizeof(want), "\n%s\n", line);
	return strstr(ps->text, want) != NULL;
}

/* ---- snapshots ---- */

static struct pipeline_job_info jobs[4];

static void
snapshot_one_loop(struct metrics_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	memset(jobs, 0, sizeof(jobs));
	s->transport = "udp";
	s->role = "switch";
	s->start_time_s = 1795790000.25;
	s->nb_parts = 1;
	s->slots = 1024;
	s->max_jobs = 64;
	s->pipe.rx_pkts = 1234;
	s->pipe.tx_pkts = 600;
	s->pipe.results = 300;
	s->pipe.joins = 4;
	s->pipe.fins = 4;
	s->pipe.jobs_admitted = 2;
	s->pipe.jobs_freed = 1;
	s->pipe.drop_wire[INA_WIRE_WRONG_TOKEN] = 3;
	s->pipe.drop[PDROP_NO_MATCH] = 5;
	s->part[0].slots_free = 992;
	s->part[0].port.rx_pkts = 1240;
	s->part[0].port.tx_pkts = 2400;
	s->part[0].port.inject_dup = 9;
	s->jobs = jobs;
	s->jobs_cap = 4;
	s->nb_jobs = 2;
	jobs[0] = (struct pipeline_job_info){ .job_id = 42,
					      .epoch = 7,
					      .world = 4,
					      .lanes = 32,
					      .want_lanes = 32,
					      .slots = 32,
					      .ranks_joined = 4,
					      .encoding = INA_ENC_F32,
					      .state = PJOB_RUNNING,
					      .has_round = 1,
					      .max_round = 17,
					      .idle_ns = 1600000 };
	jobs[1] = (struct pipeline_job_info){ .job_id = 4000000000u,
					      .epoch = 8,
					      .world = 2,
					      .lanes = 8,
					      .want_lanes = 16,
					      .slots = 16,
					      .ranks_joined = 2,
					      .ranks_finished = 1,
					      .encoding = INA_ENC_BF16,
					      .ssp = 2,
					      .weight = 3,
					      .state = PJOB_LINGERING,
					      .idle_ns = 2500000000ull };
}

static void
known_snapshot(void **state)
{
	struct metrics_snapshot s;
	struct parsed ps;

	(void)state;
	snapshot_one_loop(&s);
	parse(&ps, &s);
	/* The text starts with the switch's own gauges, exactly. */
	assert_memory_equal(
		ps.text,
		"# HELP ina_switch_info The switch's transport and role (value 1).\n"
		"# TYPE ina_switch_info gauge\n"
		"ina_switch_info{transport=\"udp\",role=\"switch\"} 1\n"
		"# HELP ina_switch_start_time_seconds When the switch started, Unix time.\n"
		"# TYPE ina_switch_start_time_seconds gauge\n"
		"ina_switch_start_time_seconds 1795790000.250\n",
		strlen("# HELP ina_switch_info The switch's transport and role (value 1).\n"
		       "# TYPE ina_switch_info gauge\n"
		       "ina_switch_info{transport=\"udp\",role=\"switch\"} 1\n"
		       "# HELP ina_switch_start_time_seconds When the switch started, Unix time.\n"
		       "# TYPE ina_switch_start_time_seconds gauge\n"
		       "ina_switch_start_time_seconds 1795790000.250\n"));
	assert_true(has_line(&ps, "# TYPE ina_switch_packets_received_total counter"));
	assert_true(has_line(&ps, "ina_switch_packets_received_total 1234"));
	assert_true(has_line(&ps, "ina_switch_packets_sent_total 600"));
	assert_true(has_line(&ps, "ina_switch_results_total 300"));
	assert_true(has_line(&ps, "ina_switch_joins_total 4"));
	assert_true(has_line(&ps, "ina_switch_jobs_admitted_total 2"));
	assert_true(has_line(&ps, "ina_switch_slots 1024"));
	assert_true(has_line(&ps, "ina_switch_slots_free 992"));
	assert_true(has_line(&ps, "ina_switch_jobs 2"));
	assert_true(has_line(&ps, "ina_switch_partitions 1"));
	/* Zero counters are written too. */
	assert_true(has_line(&ps, "ina_switch_takeovers_total 0"));
	/* Drops: one family, the wire's reasons and the pipeline's. */
	assert_true(has_line(&ps, "# TYPE ina_switch_drops_total counter"));
	assert_true(has_line(&ps, "ina_switch_drops_total{reason=\"wrong_token\"} 3"));
	assert_true(has_line(&ps, "ina_switch_drops_total{reason=\"no_match\"} 5"));
	assert_true(has_line(&ps, "ina_switch_drops_total{reason=\"truncated\"} 0"));
	assert_true(has_line(&ps, "ina_switch_drops_total{reason=\"join_wait\"} 0"));
	assert_true(isnan(value_of(&ps, "ina_switch_drops_total{reason=\"ok\"}")));
	/* The port, without a partition label on one loop. */
	assert_true(has_line(&ps, "ina_switch_port_received_packets_total 1240"));
	assert_true(has_line(&ps, "ina_switch_port_sent_packets_total 2400"));
	assert_true(has_line(&ps, "ina_switch_port_faults_injected_total{kind=\"dup\"} 9"));
	assert_true(has_line(&ps, "ina_switch_port_faults_injected_total{kind=\"drop\"} 0"));
	/* No dpdk port, one loop: neither ARP nor lcore counters. */
	assert_null(strstr(ps.text, "arp"));
	assert_null(strstr(ps.text, "ina_switch_lcore_"));
	assert_null(strstr(ps.text, "partition=\""));
	/* The jobs, exactly. */
	assert_non_null(strstr(
		ps.text,
		"# HELP ina_switch_job_info An admitted job: its encoding and synchronisation (value 1).\n"
		"# TYPE ina_switch_job_info gauge\n"
		"ina_switch_job_info{job=\"42\",encoding=\"f32\",sync=\"bsp\"} 1\n"
		"ina_switch_job_info{job=\"4000000000\",encoding=\"bf16\",sync=\"ssp:2\"} 1\n"
		"# HELP ina_switch_job_state A job's state: 1 for the one it is in, 0 for the others.\n"
		"# TYPE ina_switch_job_state gauge\n"
		"ina_switch_job_state{job=\"42\",state=\"running\"} 1\n"
		"ina_switch_job_state{job=\"42\",state=\"lingering\"} 0\n"
		"ina_switch_job_state{job=\"42\",state=\"aborted\"} 0\n"
		"ina_switch_job_state{job=\"42\",state=\"standby\"} 0\n"
		"ina_switch_job_state{job=\"42\",state=\"taken_over\"} 0\n"
		"ina_switch_job_state{job=\"4000000000\",state=\"running\"} 0\n"
		"ina_switch_job_state{job=\"4000000000\",state=\"lingering\"} 1\n"));
	assert_true(has_line(&ps, "ina_switch_job_world{job=\"42\"} 4"));
	assert_true(has_line(&ps, "ina_switch_job_ranks_finished{job=\"4000000000\"} 1"));
	assert_true(has_line(&ps, "ina_switch_job_lanes{job=\"4000000000\"} 8"));
	assert_true(has_line(&ps, "ina_switch_job_lanes_requested{job=\"4000000000\"} 16"));
	assert_true(has_line(&ps, "ina_switch_job_weight{job=\"4000000000\"} 3"));
	/* A round only for a job that sent DATA. */
	assert_true(has_line(&ps, "ina_switch_job_round{job=\"42\"} 17"));
	assert_true(isnan(value_of(&ps, "ina_switch_job_round{job=\"4000000000\"}")));
	assert_true(has_line(&ps, "ina_switch_job_idle_seconds{job=\"42\"} 0.002"));
	assert_true(has_line(&ps, "ina_switch_job_idle_seconds{job=\"4000000000\"} 2.500"));
	/* The last line is the last job's. */
	assert_string_equal(
		ps.text + ps.len -
			strlen("ina_switch_job_idle_seconds{job=\"4000000000\"} 2.500\n"),
		"ina_switch_job_idle_seconds{job=\"4000000000\"} 2.500\n");
	parsed_free(&ps);
}

/* No job: the job families are declared, with no sample. */
static void
no_jobs(void **state)
{
	struct metrics_snapshot s;
	struct parsed ps;

	(void)state;
	snapshot_one_loop(&s);
	s.nb_jobs = 0;
	parse(&ps, &s);
	assert_true(has_line(&ps, "ina_switch_jobs 0"));
	assert_null(strstr(ps.text, "{job="));
	assert_true(has_line(&ps, "# TYPE ina_switch_job_world gauge"));
	parsed_free(&ps);
}

/* Every pipeline and port counter once, each with its own value. */
static void
every_counter_once(void **state)
{
	struct metrics_snapshot s;
	struct parsed ps;
	uint64_t *pc = (uint64_t *)(void *)&s.pipe, *po;
	size_t np = sizeof(s.pipe) / sizeof(uint64_t),
	       no = sizeof(s.part[0].port) / sizeof(uint64_t);
	size_t found_p = 0, found_o = 0;

	(void)state;
	snapshot_one_loop(&s);
	s.nb_jobs = 0;
	po = (uint64_t *)(void *)&s.part[0].port;
	/* drop_wire[INA_WIRE_OK] is never counted nor written: leave it 0. */
	for (size_t i = 0; i < np; i++)
		pc[i] = 1000000 + i;
	s.pipe.drop_wire[INA_WIRE_OK] = 0;
	for (size_t i = 0; i < no; i++)
		po[i] = 2000000 + i;
	parse(&ps, &s);
	for (size_t i = 0; i < np; i++) {
		int n = 0;

		for (int k = 0; k < ps.nb_series; k++)
			n += ps.values[k] == (double)(1000000 + i);
		if (i == offsetof(struct pipeline_stats, drop_wire) / sizeof(uint64_t))
			assert_int_equal(n, 0);
		else
			assert_int_equal(n, 1);
		found_p += (size_t)n;
	}
	for (size_t i = 0; i < no; i++) {
		int n = 0;

		for (int k = 0; k < ps.nb_series; k++)
			n += ps.values[k] == (double)(2000000 + i);
		assert_int_equal(n, 1);
		found_o += (size_t)n;
	}
	assert_int_equal(found_p, np - 1);
	assert_int_equal(found_o, no);
	parsed_free(&ps);
}

/* Two partitions on a dpdk port: port and lcore counters per partition,
 * the pipeline's added (as the caller gives them), a job's slots in all. */
static void
partitions(void **state)
{
	struct metrics_snapshot s;
	struct parsed ps;

	(void)state;
	snapshot_one_loop(&s);
	s.transport = "dpdk";
	s.nb_parts = 2;
	s.has_neigh = 1;
	s.part[0].lcore = 0;
	s.part[1].lcore = 3;
	s.part[1].slots_free = 1000;
	s.part[1].port.rx_pkts = 77;
	s.part[0].neigh.arp_rx = 5;
	s.part[1].neigh.not_ours = 6;
	s.part[0].lc.steered_out = 11;
	s.part[1].lc.steered_in = 11;
	s.part[1].lc.polls = 123456;
	parse(&ps, &s);
	assert_true(has_line(&ps, "ina_switch_info{transport=\"dpdk\",role=\"switch\"} 1"));
	assert_true(has_line(&ps, "ina_switch_partitions 2"));
	assert_true(has_line(&ps, "ina_switch_slots_free{partition=\"0\"} 992"));
	assert_true(has_line(&ps, "ina_switch_slots_free{partition=\"1\"} 1000"));
	assert_true(has_line(&ps, "ina_switch_packets_received_total 1234"));
	assert_true(has_line(&ps, "ina_switch_port_received_packets_total{partition=\"0\"} 1240"));
	assert_true(has_line(&ps, "ina_switch_port_received_packets_total{partition=\"1\"} 77"));
	assert_true(
		has_line(&ps,
			 "ina_switch_port_faults_injected_total{kind=\"dup\",partition=\"0\"} 9"));
	assert_true(has_line(&ps, "ina_switch_port_arp_received_total{partition=\"0\"} 5"));
	assert_true(
		has_line(&ps,
			 "ina_switch_port_discards_total{reason=\"not_ours\",partition=\"1\"} 6"));
	assert_true(has_line(
		&ps,
		"ina_switch_lcore_steered_total{direction=\"out\",partition=\"0\",lcore=\"0\"} 11"));
	assert_true(has_line(
		&ps,
		"ina_switch_lcore_steered_total{direction=\"in\",partition=\"1\",lcore=\"3\"} 11"));
	assert_true(
		has_line(&ps, "ina_switch_lcore_polls_total{partition=\"1\",lcore=\"3\"} 123456"));
	assert_true(has_line(&ps, "ina_switch_job_slots{job=\"42\"} 64"));
	assert_null(strstr(ps.text, "ina_switch_packets_received_total{"));
	parsed_free(&ps);
}

/* Tenant mode: a job is the tenant's own id with its tenant's name, so that
 * tenant alice's job 5 and tenant bob's job 5 are two series. */
static void
tenant_jobs(void **state)
{
	struct metrics_snapshot s;
	struct parsed ps;

	(void)state;
	snapshot_one_loop(&s);
	jobs[0].job_id = 1u << 24 | 5;
	jobs[0].tenant = "alice";
	jobs[1].job_id = 2u << 24 | 5;
	jobs[1].tenant = "bob";
	parse(&ps, &s);
	assert_true(has_line(
		&ps,
		"ina_switch_job_info{job=\"5\",tenant=\"alice\",encoding=\"f32\",sync=\"bsp\"} 1"));
	assert_true(has_line(&ps, "ina_switch_job_info{job=\"5\",tenant=\"bob\",encoding=\"bf16\","
				  "sync=\"ssp:2\"} 1"));
	assert_true(
		has_line(&ps,
			 "ina_switch_job_state{job=\"5\",tenant=\"bob\",state=\"lingering\"} 1"));
	assert_true(has_line(&ps, "ina_switch_job_world{job=\"5\",tenant=\"alice\"} 4"));
	assert_true(has_line(&ps, "ina_switch_job_world{job=\"5\",tenant=\"bob\"} 2"));
	assert_true(has_line(&ps, "ina_switch_job_round{job=\"5\",tenant=\"alice\"} 17"));
	assert_true(has_line(&ps, "ina_switch_job_idle_seconds{job=\"5\",tenant=\"bob\"} 2.500"));
	assert_null(strstr(ps.text, "job=\"16777221\""));
	parsed_free(&ps);
}

/* Label values with '"', '\' and a newline are escaped; the text parses. */
static void
label_escaping(void **state)
{
	struct metrics_snapshot s;
	struct parsed ps;

	(void)state;
	snapshot_one_loop(&s);
	s.transport = "a\"b\\c\nd";
	parse(&ps, &s);
	assert_true(
		has_line(&ps, "ina_switch_info{transport=\"a\\\"b\\\\c\\nd\",role=\"switch\"} 1"));
	parsed_free(&ps);
}

/* A stream that fails is reported. */
static void
write_error(void **state)
{
	struct metrics_snapshot s;
	FILE *f = fopen("/dev/full", "w");

	(void)state;
	if (!f)
		INA_SKIP("/dev/full cannot be opened");
	setvbuf(f, NULL, _IONBF, 0);
	snapshot_one_loop(&s);
	assert_int_equal(metrics_write(&s, f), -1);
	fclose(f);
	s.nb_parts = METRICS_PARTS_MAX + 1;
	f = fopen("/dev/null", "w");
	assert_non_null(f);
	assert_int_equal(metrics_write(&s, f), -1);
	fclose(f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(known_snapshot),     cmocka_unit_test(no_jobs),
		cmocka_unit_test(every_counter_once), cmocka_unit_test(partitions),
		cmocka_unit_test(tenant_jobs),	      cmocka_unit_test(label_escaping),
		cmocka_unit_test(write_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
