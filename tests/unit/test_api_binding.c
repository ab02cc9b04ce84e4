/* SPDX-License-Identifier: MIT */
/*
 * The binding-facing calls of ina.h that need no switch: the configuration
 * by name (ina_config_new/set/free: every key set and read back, bad keys and
 * values refused with a sentence, strings owned and freed), the tables
 * behind it and behind ina_stat_name() against ina.h itself (the header is
 * parsed: a field added to struct ina_config or struct ina_stats without a
 * row fails here), and ina_set_logger() (lines reach the callback, the level
 * filters, NULL goes back to stderr).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config_keys.h"
#include "ina.h"
#include "ina/log.h"
#include "stat_names.h"

#define MAX_FIELDS 96

/* The field names of 'struct NAME { ... };' in ina.h, in order: comments and
 * preprocessor lines dropped, each declaration's last identifier. */
static unsigned
header_fields(const char *name, char names[][64], unsigned max)
{
	char path[512], open[96];
	static char text[1 << 17];
	FILE *f;
	size_t len;
	char *p, *body, *end;
	unsigned n = 0;

	snprintf(path, sizeof(path), "%s/host/include/ina.h", INA_SOURCE_DIR);
	f = fopen(path, "r");
	assert_non_null(f);
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[len] = '\0';
	/* Comments and preprocessor lines become blanks. */
	for (p = text; *p; p++) {
		if (p[0] == '/' && p[1] == '*') {
			end = strstr(p + 2, "*/");
			assert_non_null(end);
			memset(p, ' ', (size_t)(end + 2 - p));
		} else if (*p == '#' && (p == text || p[-1] == '\n')) {
			while (*p && *p != '\n')
				*p++ = ' ';
		}
	}
	snprintf(open, sizeof(open), "struct %s {", name);
	body = strstr(text, open);
	assert_non_null(body);
	body += strlen(open);
	end = strstr(body, "};");
	assert_non_null(end);
	*end = '\0';
	for (char *decl = strtok(body, ";"); decl; decl = strtok(NULL, ";")) {
		char *br = strchr(decl, '['), *q;

		if (br)
			*br = '\0';
		q = decl + strlen(decl);
		while (q > decl && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\n'))
			*--q = '\0';
		while (q > decl &&
		       (q[-1] == '_' || (q[-1] >= 'a' && q[-1] <= 'z') ||
			(q[-1] >= 'A' && q[-1] <= 'Z') || (q[-1] >= '0' && q[-1] <= '9')))
			q--;
		if (!*q)
			continue;
		assert_true(n < max);
		snprintf(names[n++], 64, "%s", q);
	}
	return n;
}

/* Every field of struct ina_config (those of struct ina_sparsify as
 * "sparsify.X"), but 'size', has a row, and every row but token_file is a
 * field. */
static void
test_config_table_covers_header(void **state)
{
	static char cfg[MAX_FIELDS][64], sp[MAX_FIELDS][64], want[MAX_FIELDS][64];
	unsigned nc = header_fields("ina_config", cfg, MAX_FIELDS);
	unsigned ns, nw = 0, rows = 0;

	(void)state;
	/* strtok state: parse one struct at a time. */
	ns = header_fields("ina_sparsify", sp, MAX_FIELDS);
	assert_true(nc > 20 && ns > 5);
	for (unsigned i = 0; i < nc; i++) {
		if (strcmp(cfg[i], "size") == 0)
			continue;
		if (strcmp(cfg[i], "sparsify") == 0) {
			for (unsigned j = 0; j < ns; j++)
				snprintf(want[nw++], 64, "sparsify.%.50s", sp[j]);
			continue;
		}
		snprintf(want[nw++], 64, "%.60s", cfg[i]);
	}
	for (unsigned i = 0; i < nw; i++) {
		int found = 0;

		for (unsigned k = 0; k < config_key_count(); k++)
			found |= strcmp(config_key_at(k)->name, want[i]) == 0;
		if (!found)
			fail_msg("struct ina_config field %s has no row in config_keys.c", want[i]);
	}
	for (unsigned k = 0; k < config_key_count(); k++)
		rows += config_key_at(k)->type != CK_TOKEN_FILE;
	assert_int_equal(rows, nw);
}

/* struct ina_stats: the rows are its numeric fields in the header's order
 * (ina_stat_name(i) is the i-th counter), 'size' and 'aggregator' aside; the
 * offsets grow, each row's bytes end before the next row begins, and none
 * overlaps the aggregator's. */
static void
test_stats_table_covers_header(void **state)
{
	static char f[MAX_FIELDS][64];
	unsigned nf = header_fields("ina_stats", f, MAX_FIELDS);
	unsigned r = 0;

	(void)state;
	for (unsigned i = 0; i < nf; i++) {
		if (strcmp(f[i], "size") == 0 || strcmp(f[i], "aggregator") == 0)
			continue;
		if (r >= stat_row_count())
			fail_msg("struct ina_stats field %s has no row in stat_names.c", f[i]);
		if (strcmp(stat_row_at(r)->name, f[i]) != 0)
			fail_msg("struct ina_stats field %s: row %u is %s", f[i], r,
				 stat_row_at(r)->name);
		assert_string_equal(ina_stat_name(r), f[i]);
		r++;
	}
	assert_int_equal(r, stat_row_count());
	assert_null(ina_stat_name(r));
	for (unsigned i = 1; i < stat_row_count(); i++)
		assert_true(stat_row_at(i - 1)->offset + stat_row_at(i - 1)->size <=
			    stat_row_at(i)->offset);
	/* No row reads the aggregator's string (fields appended after it). */
	for (unsigned i = 0; i < stat_row_count(); i++) {
		size_t a = offsetof(struct ina_stats, aggregator);
		const struct stat_row *row = stat_row_at(i);

		assert_true(row->offset + row->size <= a ||
			    row->offset >= a + sizeof(((struct ina_stats *)0)->aggregator));
	}
}

static void
set_ok(struct ina_config *c, const char *key, const char *value)
{
	char err[256];
	int ret = ina_config_set(c, key, value, err, sizeof(err));

	if (ret != 0)
		fail_msg("%s = %s: %d %s", key, value, ret, err);
	assert_string_equal(err, "");
}

/* Every key set to a value other than its default, read back in the struct;
 * the test's list covers every row. */
static void
test_config_set_every_key(void **state)
{
	static const struct {
		const char *key, *value;
	} sets[] = {
		{ "switch_addr", "127.0.0.1:9000,127.0.0.1:9001" },
		{ "replica_addr", "127.0.0.1:9002" },
		{ "failover_ms", "250" },
		{ "port", "udp:dup=0.01" },
		{ "job_id", "0xfeed" },
		{ "rank", "3" },
		{ "world", "64" },
		{ "lanes", "65535" },
		{ "block_size", "256" },
		{ "encoding", "bf16" },
		{ "token", "0xffffffffffffffff" },
		{ "timeout_ms", "4000" },
		{ "rto_us", "700" },
		{ "capture", "/tmp/x.pcap" },
		{ "sparsify.mode", "both" },
		{ "sparsify.target", "mass" },
		{ "sparsify.density", "0.25" },
		{ "sparsify.byte_budget", "123456" },
		{ "sparsify.mass", "1" },
		{ "sparsify.filter_b0", "0.5" },
		{ "sparsify.filter_decay", "0.75" },
		{ "sparsify.filter_results", "0" },
		{ "sparsify.filter_results_scale", "2.5" },
		{ "sched", "magnitude" },
		{ "sched_window", "12" },
		{ "max_pending", "65536" },
		{ "fuse_elems", "16777216" },
		{ "ssp", "8" },
		{ "weight", "255" },
		{ "plan_blocks", "1" },
		{ "partition", "dynamic" },
		{ "partitions", "256" },
		{ "partition_period", "5" },
		{ "plan_period", "7" },
		{ "plan_cut_packet_ns", "12.5" },
		{ "plan_cut_sub_ns", "3.25" },
		{ "keepalive_ms", "0" },
		{ "pause_ms", "0" },
		{ "sub_block", "64" },
		{ "plan_packet_ns", "1000.5" },
		{ "plan_byte_ns", "0" },
		{ "threads", "16" },
		{ "tenant", "255" },
		{ "tenant_key",
		  "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" },
		{ "token_file", NULL }, /* below, with a file */
	};
	struct ina_config *c = ina_config_new();
	char secret[] = "/tmp/ina-test-secret-XXXXXX", err[256];
	uint64_t tok;
	int fd;

	(void)state;
	assert_non_null(c);
	assert_int_equal(c->size, sizeof(*c));
	assert_string_equal(c->port, "udp");
	assert_int_equal(c->keepalive_ms, 1000);
	assert_int_equal(c->pause_ms, 600000);
	assert_int_equal(c->sub_block, 0);
	assert_int_equal(c->threads, 1);
	assert_true(c->plan_packet_ns == 364 && c->plan_byte_ns == 0.223 &&
		    c->plan_cut_packet_ns == 1000 && c->plan_cut_sub_ns == 9);
	for (unsigned k = 0; k < config_key_count(); k++) {
		int found = 0;

		for (unsigned i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
			found |= strcmp(sets[i].key, config_key_at(k)->name) == 0;
		if (!found)
			fail_msg("key %s is not set by this test", config_key_at(k)->name);
	}
	for (unsigned i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
		if (sets[i].value)
			set_ok(c, sets[i].key, sets[i].value);
	assert_string_equal(c->switch_addr, "127.0.0.1:9000,127.0.0.1:9001");
	assert_string_equal(c->replica_addr, "127.0.0.1:9002");
	assert_int_equal(c->failover_ms, 250);
	assert_string_equal(c->port, "udp:dup=0.01");
	assert_int_equal(c->job_id, 0xfeed);
	assert_int_equal(c->rank, 3);
	assert_int_equal(c->world, 64);
	assert_int_equal(c->lanes, 65535);
	assert_int_equal(c->block_size, 256);
	assert_int_equal(c->encoding, INA_BF16);
	assert_true(c->token == UINT64_MAX);
	assert_int_equal(c->timeout_ms, 4000);
	assert_int_equal(c->rto_us, 700);
	assert_string_equal(c->capture, "/tmp/x.pcap");
	assert_int_equal(c->sparsify.mode, INA_SPARSIFY_BOTH);
	assert_int_equal(c->sparsify.target, INA_TOPK_MASS);
	assert_true(c->sparsify.density == 0.25);
	assert_int_equal(c->sparsify.byte_budget, 123456);
	assert_true(c->sparsify.mass == 1.0);
	assert_true(c->sparsify.filter_b0 == 0.5f);
	assert_true(c->sparsify.filter_decay == 0.75);
	assert_int_equal(c->sparsify.filter_results, 0);
	assert_true(c->sparsify.filter_results_scale == 2.5f);
	assert_int_equal(c->sched, INA_SCHED_MAGNITUDE);
	assert_int_equal(c->sched_window, 12);
	assert_int_equal(c->max_pending, 65536);
	assert_int_equal(c->fuse_elems, 1u << 24);
	assert_int_equal(c->ssp, 8);
	assert_int_equal(c->weight, 255);
	assert_int_equal(c->plan_blocks, 1);
	assert_int_equal(c->partition, INA_PARTITION_DYNAMIC);
	assert_int_equal(c->partitions, 256);
	assert_int_equal(c->partition_period, 5);
	assert_int_equal(c->plan_period, 7);
	assert_true(c->plan_cut_packet_ns == 12.5);
	assert_true(c->plan_cut_sub_ns == 3.25);
	assert_int_equal(c->threads, 16);
	assert_int_equal(c->keepalive_ms, 0);
	assert_int_equal(c->pause_ms, 0);
	assert_int_equal(c->sub_block, 64);
	assert_true(c->plan_packet_ns == 1000.5);
	assert_true(c->plan_byte_ns == 0);
	assert_int_equal(c->tenant, 255);
	for (unsigned i = 0; i < 32; i++)
		assert_int_equal(c->tenant_key[i], i);
	/* A tenant key in base64, and a bad one, whose text no message repeats. */
	set_ok(c, "tenant_key", "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=");
	assert_int_equal(c->tenant_key[0], 0x20);
	assert_int_equal(ina_config_set(c, "tenant_key", "secretsecret", err, sizeof(err)),
			 -EINVAL);
	assert_null(strstr(err, "secretsecret"));
	/* Decimal tokens too; the token from a secret file as ina_token_from(). */
	set_ok(c, "token", "12345678901234567890");
	assert_true(c->token == 12345678901234567890ull);
	fd = mkstemp(secret);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "a job secret\n", 13), 13);
	close(fd);
	set_ok(c, "token_file", secret);
	assert_int_equal(ina_token_from(secret, &tok, err, sizeof(err)), 0);
	assert_true(c->token == tok);
	unlink(secret);
	/* Strings replaced (the old copy freed: the ASan build sees a leak) and
	 * "" is NULL; the caller's text is copied. */
	{
		char addr[] = "10.0.0.1:1";

		set_ok(c, "switch_addr", addr);
		addr[0] = '9';
		assert_string_equal(c->switch_addr, "10.0.0.1:1");
	}
	set_ok(c, "replica_addr", "");
	assert_null(c->replica_addr);
	set_ok(c, "capture", "");
	assert_null(c->capture);
	set_ok(c, "encoding", "f32");
	assert_int_equal(c->encoding, INA_F32);
	set_ok(c, "sparsify.mode", "off");
	assert_int_equal(c->sparsify.mode, INA_SPARSIFY_OFF);
	ina_config_free(c);
	ina_config_free(NULL);
}

/* Bad keys and values: -EINVAL, a sentence that names the key, the field
 * unchanged; the token's text is never repeated. */
static void
test_config_bad(void **state)
{
	static const struct {
		const char *key, *value;
	} bad[] = {
		{ "no_such_key", "1" },
		{ "size", "8" },
		{ "sparsify", "topk" },
		{ "world", "0" },
		{ "world", "65" },
		{ "rank", "-1" },
		{ "rank", "64" },
		{ "lanes", "0" },
		{ "lanes", "65536" },
		{ "threads", "0" },
		{ "threads", "17" },
		{ "block_size", "12abc" },
		{ "block_size", "" },
		{ "block_size", " 12" },
		{ "job_id", "4294967296" },
		{ "job_id", "0x" },
		{ "job_id", "1e3" },
		{ "timeout_ms", "0" },
		{ "encoding", "f64" },
		{ "encoding", "F32" },
		{ "sparsify.mode", "random" },
		{ "sparsify.target", "" },
		{ "sparsify.density", "0" },
		{ "sparsify.density", "1.5" },
		{ "sparsify.density", "abc" },
		{ "sparsify.density", "nan" },
		{ "sparsify.mass", "-0.1" },
		{ "sparsify.filter_b0", "-1" },
		{ "sparsify.filter_b0", "inf" },
		{ "sparsify.filter_decay", "0" },
		{ "plan_packet_ns", "-1" },
		{ "plan_byte_ns", "2e6" },
		{ "sparsify.filter_results", "2" },
		{ "sched", "lifo" },
		{ "max_pending", "0" },
		{ "max_pending", "65537" },
		{ "fuse_elems", "16777217" },
		{ "ssp", "9" },
		{ "weight", "256" },
		{ "plan_blocks", "yes" },
		{ "partition", "static" },
		{ "partitions", "257" },
		{ "sub_block", "8192" },
		{ "token_file", "/nonexistent/ina-secret" },
	};
	struct ina_config *c = ina_config_new();
	struct ina_config before;
	char err[256];

	(void)state;
	assert_non_null(c);
	before = *c;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *key = bad[i].key;
		int ret = ina_config_set(c, key, bad[i].value, err, sizeof(err));

		if (ret != -EINVAL)
			fail_msg("%s = '%s' gave %d", key, bad[i].value, ret);
		if (!strstr(err, key))
			fail_msg("%s = '%s': the sentence '%s' does not name the key", key,
				 bad[i].value, err);
		assert_memory_equal(c, &before, sizeof(before));
	}
	assert_int_equal(ina_config_set(c, "token", "s3cr3t-value", err, sizeof(err)), -EINVAL);
	assert_null(strstr(err, "s3cr3t"));
	assert_non_null(strstr(err, "token"));
	assert_int_equal(ina_config_set(c, "token", "-5", err, sizeof(err)), -EINVAL);
	assert_null(strstr(err, "-5"));
	/* No config, key or value; a NULL err is fine. */
	assert_int_equal(ina_config_set(NULL, "rank", "1", err, sizeof(err)), -EINVAL);
	assert_int_equal(ina_config_set(c, NULL, "1", err, sizeof(err)), -EINVAL);
	assert_int_equal(ina_config_set(c, "rank", NULL, NULL, 0), -EINVAL);
	assert_int_equal(ina_config_set(c, "rank", "1", NULL, 0), 0);
	/* A config not of ina_config_new() is refused, never written past. */
	{
		struct ina_config mine;

		ina_config_init(&mine);
		assert_int_equal(ina_config_set(&mine, "switch_addr", "1.2.3.4:5", err,
						sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, "ina_config_new"));
		ina_config_free(&mine); /* not ours: left alone */
	}
	ina_config_free(c);
}

/* A config of ina_config_new() opens like one of ina_config_init(): a bad
 * one fails in ina_open with a sentence, not a crash. */
static void
test_config_open_refuses(void **state)
{
	struct ina_config *c = ina_config_new();
	struct ina_ctx *ctx = (struct ina_ctx *)1;
	char err[256];

	(void)state;
	set_ok(c, "world", "2");
	set_ok(c, "rank", "2");
	set_ok(c, "switch_addr", "127.0.0.1:9");
	assert_int_equal(ina_open(c, &ctx, err, sizeof(err)), -EINVAL);
	assert_null(ctx);
	assert_true(strlen(err) > 10);
	/* A sub-block that does not cut the block into 2..128 powers of two:
	 * refused before any port or switch, with the setting named. */
	set_ok(c, "rank", "1");
	set_ok(c, "block_size", "1024");
	for (unsigned i = 0; i < 5; i++) {
		static const char *const bad[] = { "48", "1024", "2048", "4", "3" };

		set_ok(c, "sub_block", bad[i]);
		ctx = (struct ina_ctx *)1;
		assert_int_equal(ina_open(c, &ctx, err, sizeof(err)), -EINVAL);
		assert_null(ctx);
		assert_non_null(strstr(err, "sub_block"));
	}
	set_ok(c, "block_size", "96");
	set_ok(c, "sub_block", "32"); /* 96 / 32 = 3: no power of two */
	assert_int_equal(ina_open(c, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "sub_block"));
	ina_config_free(c);
}

/* The logger. */
#define MAX_LINES 8
static struct {
	int n;
	int level[MAX_LINES];
	char line[MAX_LINES][128];
	void *arg;
} got;

static void
logger(int level, const char *line, void *arg)
{
	if (got.n < MAX_LINES) {
		got.level[got.n] = level;
		snprintf(got.line[got.n], sizeof(got.line[0]), "%s", line);
	}
	got.n++;
	got.arg = arg;
}

static void
test_logger(void **state)
{
	int tag;

	(void)state;
	memset(&got, 0, sizeof(got));
	ina_set_logger(logger, &tag, INA_LEVEL_WARN);
	INA_LOG(ERR, "an error %d", 1);
	INA_LOG(WARN, "a warning %s", "here");
	INA_LOG(INFO, "not at WARN");
	assert_int_equal(got.n, 2);
	assert_int_equal(got.level[0], INA_LEVEL_ERR);
	assert_string_equal(got.line[0], "an error 1");
	assert_int_equal(got.level[1], INA_LEVEL_WARN);
	assert_string_equal(got.line[1], "a warning here");
	assert_ptr_equal(got.arg, &tag);
	/* ERR only; then INFO lets INFO through. */
	ina_set_logger(logger, NULL, INA_LEVEL_ERR);
	INA_LOG(WARN, "filtered");
	assert_int_equal(got.n, 2);
	ina_set_logger(logger, NULL, INA_LEVEL_INFO);
	INA_LOG(INFO, "info %u", 7u);
	INA_LOG_RL(INFO, "rate-limited info");
	assert_int_equal(got.n, 4);
	assert_int_equal(got.level[2], INA_LEVEL_INFO);
	assert_string_equal(got.line[2], "info 7");
	assert_null(got.arg);
	/* A long line is cut, not overrun. */
	{
		char big[3000];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		INA_LOG(ERR, "%s", big);
		assert_int_equal(got.n, 5);
	}
	/* Back to stderr: the callback hears nothing more. */
	ina_set_logger(NULL, NULL, INA_LEVEL_INFO);
	INA_LOG(WARN, "to stderr (test_api_binding: expected)");
	assert_int_equal(got.n, 5);
	assert_int_equal(ina_log_get_level(), INA_LOG_INFO);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_table_covers_header),
		cmocka_unit_test(test_stats_table_covers_header),
		cmocka_unit_test(test_config_set_every_key),
		cmocka_unit_test(test_config_bad),
		cmocka_unit_test(test_config_open_refuses),
		cmocka_unit_test(test_logger),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
