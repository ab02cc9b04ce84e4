/* SPDX-License-Identifier: MIT */
/*
 * Tenant mode (issue 19; docs/PROTOCOL.md "Tenants and tags"): the tenants
 * file's parser on a good file and a table of bad ones (each error names its
 * line and field); the keys (hex, base64, the KDF per job and tenant); the
 * tag (any changed byte fails it); and the switch pipeline in tenant mode,
 * packet by packet: a forged DATA dropped, counted and unanswered while the
 * real one makes the sum; tenant B cannot see or touch tenant A's job of the
 * same id; quotas refused with clear errors; and real engines over a lossy,
 * reordering fabric with old packets replayed into later rounds, and on a
 * switch of two lane partitions: every sum exact.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine.h"
#include "fabric.h"
#include "ina/auth.h"
#include "ina/pkt.h"
#include "ina/util.h"
#include "ina/wire.h"
#include "pipeline.h"
#include "pipeline_dump.h"
#include "tenants.h"
#include "wire_check.h"

#define KEY_A "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define KEY_B "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=" /* base64 of 0x20..0x3f */

static const char good_file[] = "# two tenants\n"
				"tenants:\n"
				"  - name: alice\n"
				"    index: 1\n"
				"    key: " KEY_A "\n"
				"    jobs: 2\n"
				"    slots: 8\n"
				"    max_weight: 4\n"
				"  - name: bob\n"
				"    index: 2\n"
				"    key: " KEY_B "\n"
				"    jobs: 1\n"
				"    slots: 4\n"
				"    max_weight: 1\n";

static struct tenants *
good_tenants(void)
{
	char err[256];
	struct tenants *t = tenants_parse(good_file, strlen(good_file), "t.yaml", err, sizeof(err));

	if (!t)
		fail_msg("good file refused: %s", err);
	return t;
}

static void
parse_good(void **state)
{
	struct tenants *t = good_tenants();
	const struct tenant *a, *b;

	(void)state;
	assert_int_equal(t->count, 2);
	a = tenants_get(t, 1);
	b = tenants_get(t, 2);
	assert_non_null(a);
	assert_non_null(b);
	assert_null(tenants_get(t, 3));
	assert_null(tenants_get(t, 0));
	assert_string_equal(a->name, "alice");
	assert_int_equal(a->max_jobs, 2);
	assert_int_equal(a->max_slots, 8);
	assert_int_equal(a->max_weight, 4);
	for (unsigned i = 0; i < 32; i++) {
		assert_int_equal(a->key[i], i);
		assert_int_equal(b->key[i], 0x20 + i);
	}
	tenants_free(t);
}

/* A tenant entry with one line replaced or dropped. */
#define ENTRY(name, index, key, jobs, slots, weight) \
	"tenants:\n  - name: " name "\n    index: " index "\n    key: " key "\n" \
	"    jobs: " jobs "\n    slots: " slots "\n    max_weight: " weight "\n"

/* tenants_entry_wide(): the line ina-sim and ina-testbed write reads back
 * through the loader with its name, index, key and the widest quotas. */
static void
entry_wide(void **state)
{
	uint8_t key[INA_TENANT_KEY_SIZE];
	char text[512] = "tenants:\n", err[256];
	const struct tenant *tn;
	struct tenants *t;
	size_t len = strlen(text);

	(void)state;
	for (unsigned i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 37 + 5);
	len += (size_t)tenants_entry_wide(text + len, sizeof(text) - len, "red.team-2", 200, key);
	t = tenants_parse(text, len, "wide", err, sizeof(err));
	if (!t)
		fail_msg("%s", err);
	tn = tenants_get(t, 200);
	assert_non_null(tn);
	assert_string_equal(tn->name, "red.team-2");
	assert_memory_equal(tn->key, key, sizeof(key));
	assert_int_equal(tn->max_jobs, 64);
	assert_int_equal(tn->max_slots, 1048576);
	assert_int_equal(tn->max_weight, 255);
	tenants_free(t);
}

static void
parse_bad(void **state)
{
	static const struct {
		const char *text;
		const char *want; /* in the message */
	} cases[] = {
		{ "", "t.yaml:1: empty" },
		{ "tenants: [\n", "t.yaml:2: not YAML" },
		{ "tenant:\n  - name: a\n", "t.yaml:1: tenant: the file has one field, 'tenants'" },
		{ "tenants: 3\n", "tenants: a list of tenants" },
		{ "tenants: []\n", "no tenant given" },
		{ "tenants:\n  - 3\n", "t.yaml:2: tenants[0]: expected a mapping" },
		{ ENTRY("alice", "0", KEY_A, "1", "1", "1"),
		  "t.yaml:3: index: '0' is not a number 1..255" },
		{ ENTRY("alice", "256", KEY_A, "1", "1", "1"), "t.yaml:3: index: '256'" },
		{ ENTRY("alice", "1x", KEY_A, "1", "1", "1"), "t.yaml:3: index: '1x'" },
		{ ENTRY("alice", "1", "abcd", "1", "1", "1"),
		  "t.yaml:4: tenants[0].key: 4 characters" },
		{ ENTRY("alice", "1",
			"zz0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "1",
			"1", "1"),
		  "t.yaml:4: tenants[0].key: 64 characters but not hex" },
		{ ENTRY("alice", "1", KEY_A, "0", "1", "1"), "t.yaml:5: jobs: '0'" },
		{ ENTRY("alice", "1", KEY_A, "1", "-1", "1"), "t.yaml:6: slots: '-1'" },
		{ ENTRY("alice", "1", KEY_A, "1", "1", "256"), "t.yaml:7: max_weight: '256'" },
		{ ENTRY("al ice", "1", KEY_A, "1", "1", "1"),
		  "t.yaml:2: tenants[0].name: 1 to 31" },
		{ "tenants:\n  - name: a\n    index: 1\n    key: " KEY_A
		  "\n    jobs: 1\n    slots: 1\n",
		  "t.yaml:2: tenants[0]: no max_weight" },
		{ "tenants:\n  - name: a\n    name: b\n",
		  "t.yaml:3: tenants[0].name: given twice" },
		{ "tenants:\n  - name: a\n    colour: red\n",
		  "t.yaml:3: tenants[0].colour: unknown" },
		{ "tenants:\n  - name: a\n    index: [1]\n",
		  "t.yaml:3: tenants[0].index: expected a value" },
		{ ENTRY("a", "1", KEY_A, "1", "1",
			"1") "  - name: b\n    index: 1\n    key: " KEY_B
			     "\n    jobs: 1\n    slots: 1\n    max_weight: 1\n",
		  "t.yaml:8: tenants[1].index: 1 is tenant 'a''s already" },
		{ ENTRY("a", "1", KEY_A, "1", "1",
			"1") "  - name: a\n    index: 2\n    key: " KEY_B
			     "\n    jobs: 1\n    slots: 1\n    max_weight: 1\n",
		  "t.yaml:8: tenants[1].name: 'a' is given twice" },
		{ "tenants:\n  - name: &n a\n    index: *n\n", "t.yaml:3: aliases" },
		{ ENTRY("a", "1", KEY_A, "1", "1", "1") "---\ntenants: []\n", "one document only" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512];
		struct tenants *t = tenants_parse(cases[i].text, strlen(cases[i].text), "t.yaml",
						  err, sizeof(err));

		if (t)
			fail_msg("case %zu accepted:\n%s", i, cases[i].text);
		if (!strstr(err, cases[i].want))
			fail_msg("case %zu: '%s', want '%s'", i, err, cases[i].want);
		/* A key's text never appears in a message. */
		assert_null(strstr(err, KEY_A));
		assert_null(strstr(err, "zz0203"));
	}
}

/* A file others may read is refused (it holds keys). */
static void
load_mode(void **state)
{
	char path[] = "/tmp/ina-test-tenants.XXXXXX", err[512];
	int fd = mkstemp(path);
	FILE *f;
	struct tenants *t;

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(good_file, f);
	fclose(f);
	assert_int_equal(chmod(path, 0644), 0);
	t = tenants_load(path, err, sizeof(err));
	assert_null(t);
	assert_non_null(strstr(err, "chmod 600"));
	assert_int_equal(chmod(path, 0600), 0);
	t = tenants_load(path, err, sizeof(err));
	assert_non_null(t);
	assert_int_equal(t->count, 2);
	tenants_free(t);
	unlink(path);
	assert_null(tenants_load(path, err, sizeof(err)));
	assert_non_null(strstr(err, "No such file"));
}

static void
keys(void **state)
{
	uint8_t a[32], b[32];
	char err[256];
	struct ina_job_key k1, k2, k3, k4;

	(void)state;
	assert_int_equal(ina_auth_key_parse(KEY_A, a, err, sizeof(err)), 0);
	assert_int_equal(ina_auth_key_parse("  " KEY_B "\n", b, err, sizeof(err)), 0);
	assert_int_equal(a[31], 31);
	assert_int_equal(b[0], 0x20);
	assert_int_equal(ina_auth_key_parse(KEY_A "00", a, err, sizeof(err)), -EINVAL);
	assert_int_equal(ina_auth_key_parse("abc def", a, err, sizeof(err)), -EINVAL);
	assert_int_equal(ina_auth_key_parse("", a, err, sizeof(err)), -EINVAL);
	assert_int_equal(ina_auth_key_parse(KEY_A, a, err, sizeof(err)), 0);
	/* Per job, per tenant: all different, and the same every time. */
	ina_auth_job_key(a, 0x01000005, &k1);
	ina_auth_job_key(a, 0x01000006, &k2);
	ina_auth_job_key(b, 0x01000005, &k3);
	ina_auth_job_key(a, 0x01000005, &k4);
	assert_memory_not_equal(k1.k, k2.k, sizeof(k1.k));
	assert_memory_not_equal(k1.k, k3.k, sizeof(k1.k));
	assert_memory_equal(k1.k, k4.k, sizeof(k1.k));
}

/* The worker's tenant from the environment and a key file: errors say
 * what is missing, never the key. */
static void
tenant_env(void **state)
{
	char path[] = "/tmp/ina-test-tkey.XXXXXX", err[256];
	uint8_t idx, key[32];
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, KEY_B "\n", sizeof(KEY_B)), (ssize_t)sizeof(KEY_B));
	close(fd);
	unsetenv(INA_TENANT_ENV);
	unsetenv(INA_TENANT_KEY_ENV);
	assert_int_equal(ina_auth_tenant_load(NULL, &idx, key, err, sizeof(err)), 0);
	assert_int_equal(idx, 0); /* token mode */
	setenv(INA_TENANT_KEY_ENV, KEY_A, 1);
	assert_int_equal(ina_auth_tenant_load(NULL, &idx, key, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no tenant: set INA_TENANT"));
	setenv(INA_TENANT_ENV, "256", 1);
	assert_int_equal(ina_auth_tenant_load(NULL, &idx, key, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "1..255"));
	setenv(INA_TENANT_ENV, "7", 1);
	assert_int_equal(ina_auth_tenant_load(NULL, &idx, key, err, sizeof(err)), 1);
	assert_int_equal(idx, 7);
	assert_int_equal(key[1], 1);
	/* The file wins over the variable. */
	assert_int_equal(ina_auth_tenant_load(path, &idx, key, err, sizeof(err)), 1);
	assert_int_equal(key[0], 0x20);
	setenv(INA_TENANT_KEY_ENV, "not-a-key-secretword", 1);
	assert_int_equal(ina_auth_tenant_load(NULL, &idx, key, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "tenant key from $INA_TENANT_KEY"));
	assert_null(strstr(err, "secretword"));
	unsetenv(INA_TENANT_KEY_ENV);
	assert_int_equal(ina_auth_tenant_load(NULL, &idx, key, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no tenant key"));
	unlink(path);
	assert_true(ina_auth_tenant_load(path, &idx, key, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "No such file"));
	unsetenv(INA_TENANT_ENV);
}

static void
tags(void **state)
{
	uint8_t a[32], pkt[INA_HDR_SIZE + 64], copy[sizeof(pkt)];
	char err[256];
	struct ina_job_key k, other;

	(void)state;
	assert_int_equal(ina_auth_key_parse(KEY_A, a, err, sizeof(err)), 0);
	ina_auth_job_key(a, 0x01000005, &k);
	ina_auth_job_key(a, 0x01000006, &other);
	for (size_t i = 0; i < sizeof(pkt); i++)
		pkt[i] = (uint8_t)(i * 37 + 1);
	ina_auth_sign(&k, pkt, sizeof(pkt));
	memcpy(copy, pkt, sizeof(pkt));
	assert_int_equal(ina_auth_check(&k, copy, sizeof(copy)), 1);
	/* The field is zero after a check. */
	for (int i = 0; i < 8; i++)
		assert_int_equal(copy[INA_TAG_OFFSET + i], 0);
	/* Any bit changed anywhere, the tag field included, fails. */
	for (size_t i = 0; i < sizeof(pkt); i++) {
		memcpy(copy, pkt, sizeof(pkt));
		copy[i] ^= (uint8_t)(1u << (i % 8));
		if (ina_auth_check(&k, copy, sizeof(copy)))
			fail_msg("byte %zu changed and the tag still passed", i);
	}
	/* Another job's key, a cut packet, a short one. */
	memcpy(copy, pkt, sizeof(pkt));
	assert_int_equal(ina_auth_check(&other, copy, sizeof(copy)), 0);
	memcpy(copy, pkt, sizeof(pkt));
	assert_int_equal(ina_auth_check(&k, copy, sizeof(copy) - 1), 0);
	assert_int_equal(ina_auth_check(&k, copy, INA_HDR_SIZE - 1), 0);
}

/* --- the pipeline in tenant mode, packet by packet ----------------------- */

#define JOB_A (0x01000000u | 5u) /* alice's job 5 */
#define JOB_B (0x02000000u | 5u) /* bob's job 5 */
#define MAXB 4

static const struct ina_peer any_peer; /* sw_send() sets the sender */

struct sw {
	struct ina_pkt_pool *pool;
	struct pipeline *p;
	struct tenants *t;
	struct ina_job_key ka, kb;   /* the job keys of JOB_A and JOB_B */
	struct ina_job_key ka_for_b; /* alice's key for JOB_B's id */
};

static void
sw_init(struct sw *s, uint8_t policy)
{
	struct pipeline_config pc;

	memset(s, 0, sizeof(*s));
	s->t = good_tenants();
	s->pool = ina_pkt_pool_create(64, 2048);
	assert_non_null(s->pool);
	pipeline_config_init(&pc);
	pc.nb_slots = 16;
	pc.slot_elems = MAXB;
	pc.pool = s->pool;
	pc.tenants = s->t;
	pc.share.policy = policy;
	pc.share_wait_ns = 0;
	s->p = pipeline_create(&pc);
	assert_non_null(s->p);
	ina_auth_job_key(tenants_get(s->t, 1)->key, JOB_A, &s->ka);
	ina_auth_job_key(tenants_get(s->t, 2)->key, JOB_B, &s->kb);
	ina_auth_job_key(tenants_get(s->t, 1)->key, JOB_B, &s->ka_for_b);
}

static void
sw_fini(struct sw *s)
{
	pipeline_destroy(s->p);
	ina_pkt_pool_destroy(s->pool);
	tenants_free(s->t);
}

/* Sends one packet, tagged under 'k' (NULL: not tagged), from host 'from';
 * returns the answer (checked under 'k' when there is one) or NULL. */
static struct ina_pkt *
sw_send(struct sw *s, struct ina_pkt *in, const struct ina_job_key *k, int from)
{
	struct ina_pkt *out[1];

	fabric_peer(&in->peer, from);
	if (k)
		ina_auth_sign(k, in->data, in->len);
	if (pipeline_rx_burst(s->p, &in, 1, 1000, out) == 0)
		return NULL;
	if (k && !ina_auth_check(k, out[0]->data, out[0]->len))
		fail_msg("the switch's answer does not carry the job's tag");
	return out[0];
}

static struct ina_pkt *
mk_join(struct sw *s, uint32_t job, uint16_t world, uint16_t lanes, uint8_t weight)
{
	struct ina_hdr h = wc_hdr(INA_T_JOIN, INA_ENC_F32, job, 0, 0, 0);
	uint8_t pl[sizeof(struct ina_wire_join)];

	h.block_size = MAXB;
	ina_wire_encode_join(world, lanes, MAXB, pl);
	ina_wire_join_set_weight(pl, weight);
	return wc_mk_pkt(s->pool, &any_peer, &h, pl, sizeof(pl));
}

/* JOIN of rank 'rank' of 'job' (world 'world', one lane): the epoch. */
static uint32_t
join_ok(struct sw *s, uint32_t job, const struct ina_job_key *k, uint16_t rank, uint16_t world)
{
	struct ina_pkt *in = mk_join(s, job, world, 1, 1), *o;
	struct ina_hdr h;

	in->data[offsetof(struct ina_wire_hdr, rank) + 1] = (uint8_t)rank;
	ina_auth_sign(k, in->data, in->len);
	o = sw_send(s, in, k, rank);
	assert_non_null(o);
	ina_wire_decode_hdr(o->data, &h);
	if (h.type != INA_T_JOIN_ACK)
		fail_msg("job %#x rank %u: type %u, want JOIN_ACK", job, rank, h.type);
	ina_pkt_free(o);
	return h.epoch;
}

/* DATA of one block of MAXB floats 'v' (round 0, block 0, lane 0). */
static struct ina_pkt *
mk_data(struct sw *s, uint32_t job, uint32_t epoch, uint16_t rank, const float *v)
{
	struct ina_hdr h = wc_hdr(INA_T_DATA, INA_ENC_F32, job, epoch, rank, 0);
	uint8_t pl[4 * MAXB];

	h.tensor_id = 1;
	h.tensor_len = MAXB;
	h.block = 0;
	h.next = INA_BLOCK_END;
	h.block_size = MAXB;
	h.n_elems = MAXB;
	wc_put_words(pl, v, MAXB);
	return wc_mk_pkt(s->pool, &any_peer, &h, pl, sizeof(pl));
}

/* A replayed JOIN drew a 56-byte ERROR COOKIE to its source, nothing more:
 * frees it and returns the cookie. */
static uint64_t
assert_cookie_to(struct ina_pkt *o, int to)
{
	struct ina_peer want;
	struct ina_hdr h;

	assert_non_null(o);
	ina_wire_decode_hdr(o->data, &h);
	assert_int_equal(h.type, INA_T_ERROR);
	assert_int_equal(h.status, INA_WERR_COOKIE);
	assert_int_equal(o->len, INA_HDR_SIZE);
	assert_null(o->dsts);
	fabric_peer(&want, to);
	assert_true(ina_peer_equal(&o->peer, &want));
	ina_pkt_free(o);
	return ina_wire_cookie(&h);
}

static void
forged_data_dropped(void **state)
{
	static const float real0[MAXB] = { 1, 2, 3, 4 }, real1[MAXB] = { 10, 20, 30, 40 },
			   evil[MAXB] = { 1e6f, 1e6f, 1e6f, 1e6f };
	struct sw s;
	struct ina_job_key wrong;
	struct ina_pkt *o;
	struct wc_got g;
	uint32_t epoch;

	(void)state;
	sw_init(&s, SHARE_FIRST_COME);
	epoch = join_ok(&s, JOB_A, &s.ka, 0, 2);
	assert_int_equal(join_ok(&s, JOB_A, &s.ka, 1, 2), epoch);
	/* Rank 1's JOIN, tag and all, replayed from another address: it would
	 * end the run (a rank's new address does, PROTOCOL 5.1). It carries no
	 * cookie of that address for this run: answered with one, 56 bytes,
	 * tagged, to its source (rank_moved), and nothing moves. The attacker
	 * at that address has the cookie but cannot put it into the JOIN: the
	 * tag covers it, and the JOIN's old tag then fails (auth_fail). */
	{
		struct ina_pkt *j1 = mk_join(&s, JOB_A, 2, 1, 1);
		struct ina_hdr h;
		uint64_t cookie;
		uint8_t tag[8];

		j1->data[offsetof(struct ina_wire_hdr, rank) + 1] = 1;
		ina_auth_sign(&s.ka, j1->data, j1->len);
		memcpy(tag, j1->data + INA_TAG_OFFSET, sizeof(tag));
		cookie = assert_cookie_to(sw_send(&s, j1, &s.ka, 5), 5);
		assert_int_equal(pipeline_stats(s.p)->drop[PDROP_RANK_MOVED], 1);
		j1 = mk_join(&s, JOB_A, 2, 1, 1);
		j1->data[offsetof(struct ina_wire_hdr, rank) + 1] = 1;
		ina_wire_decode_hdr(j1->data, &h);
		ina_wire_set_cookie(&h, cookie);
		ina_wire_encode_hdr(&h, j1->data);
		memcpy(j1->data + INA_TAG_OFFSET, tag, sizeof(tag));
		assert_null(sw_send(&s, j1, NULL, 5));
		assert_int_equal(pipeline_stats(s.p)->drop[PDROP_AUTH], 1);
		assert_int_equal(pipeline_stats(s.p)->jobs_aborted, 0);
	}
	/* An attacker who read a capture knows every header field, but not
	 * the key: DATA for rank 1, from rank 1's own address, with a tag
	 * made under another key, with none, and with a real packet's tag
	 * over changed values. */
	memset(&wrong, 0x5a, sizeof(wrong));
	assert_null(sw_send(&s, mk_data(&s, JOB_A, epoch, 1, evil), &wrong, 1));
	assert_null(sw_send(&s, mk_data(&s, JOB_A, epoch, 1, evil), NULL, 1));
	o = mk_data(&s, JOB_A, epoch, 1, real1);
	ina_auth_sign(&s.ka, o->data, o->len);
	o->data[INA_HDR_SIZE] ^= 0x40; /* the tag copied, a value changed */
	assert_null(sw_send(&s, o, NULL, 1));
	/* Bob's key for alice's job id: bob cannot write into it either. */
	ina_auth_job_key(tenants_get(s.t, 2)->key, JOB_A, &wrong);
	assert_null(sw_send(&s, mk_data(&s, JOB_A, epoch, 1, evil), &wrong, 1));
	assert_int_equal(pipeline_stats(s.p)->drop[PDROP_AUTH], 5);
	assert_int_equal(pipeline_stats(s.p)->duplicates, 0);
	/* The real ones make the sum, exact. */
	assert_null(sw_send(&s, mk_data(&s, JOB_A, epoch, 0, real0), &s.ka, 0));
	o = sw_send(&s, mk_data(&s, JOB_A, epoch, 1, real1), &s.ka, 1);
	assert_non_null(o);
	wc_decode(&g, o, NULL);
	assert_int_equal(g.h.type, INA_T_RESULT);
	{
		/* Fanned out to both ranks where they joined from. */
		struct ina_peer want;

		assert_true(g.fanout);
		assert_int_equal(g.dst_mask, 3);
		fabric_peer(&want, 1);
		assert_true(ina_peer_equal(&g.dsts[1], &want));
	}
	{
		static const float sum[MAXB] = { 11, 22, 33, 44 };

		wc_assert_words(&g, sum, MAXB);
	}
	ina_pkt_free(o);
	/* A replay of rank 1's real DATA: answered from the shadow with the
	 * same sum, never added again. */
	o = sw_send(&s, mk_data(&s, JOB_A, epoch, 1, real1), &s.ka, 1);
	assert_non_null(o);
	wc_decode(&g, o, NULL);
	{
		static const float sum[MAXB] = { 11, 22, 33, 44 };

		wc_assert_words(&g, sum, MAXB);
	}
	ina_pkt_free(o);
	/* Dropped before their tag is computed (a flood of them costs no
	 * keyed hash each), counted where they would end after it: DATA of
	 * no tenant and of a job the switch does not hold, a short packet, a
	 * malformed header, and DATA for rank 1 from an address rank 1 is not
	 * bound to, forged or replayed. */
	assert_null(sw_send(&s, mk_data(&s, 0x07000005u, epoch, 1, evil), &s.ka, 1));
	assert_null(sw_send(&s, mk_data(&s, JOB_A + 1, epoch, 1, evil), &s.ka, 1));
	assert_int_equal(pipeline_stats(s.p)->drop[PDROP_UNKNOWN_JOB], 2);
	assert_int_equal(pipeline_stats(s.p)->drop[PDROP_AUTH], 5);
	o = ina_pkt_alloc(s.pool);
	o->len = 10;
	memset(o->data, 0, 10);
	assert_null(sw_send(&s, o, NULL, 1));
	assert_int_equal(pipeline_stats(s.p)->drop_wire[INA_WIRE_TRUNCATED], 1);
	o = mk_data(&s, JOB_A, epoch, 1, evil);
	o->data[0] = INA_WIRE_VERSION + 1;
	assert_null(sw_send(&s, o, &wrong, 1));
	assert_int_equal(pipeline_stats(s.p)->drop_wire[INA_WIRE_BAD_VERSION], 1);
	assert_null(sw_send(&s, mk_data(&s, JOB_A, epoch, 1, evil), &wrong, 7));
	assert_null(sw_send(&s, mk_data(&s, JOB_A, epoch, 1, real1), &s.ka, 7));
	assert_int_equal(pipeline_stats(s.p)->drop[PDROP_WRONG_ADDR], 2);
	assert_int_equal(pipeline_stats(s.p)->drop[PDROP_AUTH], 5);
	sw_fini(&s);
}

static void
tenants_isolated(void **state)
{
	static const float va[MAXB] = { 1, 1, 1, 1 }, vb[MAXB] = { 2, 2, 2, 2 };
	struct sw s;
	struct ina_pkt *o;
	struct wc_got g;
	uint32_t ea, eb;

	(void)state;
	sw_init(&s, SHARE_FIRST_COME);
	/* Both tenants' job 5: two jobs, the ids differ in the tenant byte. */
	ea = join_ok(&s, JOB_A, &s.ka, 0, 1);
	eb = join_ok(&s, JOB_B, &s.kb, 0, 1);
	assert_int_equal(pipeline_nb_jobs(s.p), 2);
	assert_int_not_equal(ea, eb);
	/* Alice, knowing bob's job id and epoch, cannot join, feed or end it:
	 * her key for its id is not bob's. */
	assert_null(sw_send(&s, mk_join(&s, JOB_B, 1, 1, 1), &s.ka_for_b, 0));
	assert_null(sw_send(&s, mk_data(&s, JOB_B, eb, 0, va), &s.ka_for_b, 0));
	{
		struct ina_hdr h = wc_hdr(INA_T_LEAVE, INA_ENC_F32, JOB_B, eb, 0, 0);

		assert_null(sw_send(&s, wc_mk_pkt(s.pool, &any_peer, &h, NULL, 0), &s.ka_for_b, 0));
	}
	assert_int_equal(pipeline_stats(s.p)->drop[PDROP_AUTH], 3);
	assert_int_equal(pipeline_nb_jobs(s.p), 2);
	/* Each job sums its own. */
	o = sw_send(&s, mk_data(&s, JOB_A, ea, 0, va), &s.ka, 0);
	assert_non_null(o);
	wc_decode(&g, o, NULL);
	wc_assert_words(&g, va, MAXB);
	ina_pkt_free(o);
	o = sw_send(&s, mk_data(&s, JOB_B, eb, 0, vb), &s.kb, 0);
	assert_non_null(o);
	wc_decode(&g, o, NULL);
	assert_int_equal(g.h.job_id, JOB_B);
	wc_assert_words(&g, vb, MAXB);
	ina_pkt_free(o);
	/* What people read names each job by its tenant and own id. */
	{
		struct pipeline_job_info info[4];
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		assert_int_equal(pipeline_jobs(s.p, 0, info, 4), 2);
		assert_string_equal(info[0].tenant, "alice");
		assert_string_equal(info[1].tenant, "bob");
		assert_non_null(f);
		pipeline_dump(s.p, f);
		fclose(f);
		assert_non_null(strstr(text, "job 5 of tenant alice epoch "));
		assert_non_null(strstr(text, "job 5 of tenant bob epoch "));
		free(text);
	}
	sw_fini(&s);
}

/* The ERROR a JOIN draws: its text. */
static void
refused(struct sw *s, struct ina_pkt *in, const struct ina_job_key *k, uint16_t code,
	const char *want)
{
	struct ina_pkt *o = sw_send(s, in, k, 3);
	struct ina_hdr h;
	char text[INA_ERROR_MSG_MAX + 1];
	size_t n;

	assert_non_null(o);
	ina_wire_decode_hdr(o->data, &h);
	assert_int_equal(h.type, INA_T_ERROR);
	assert_int_equal(h.status, code);
	n = o->len - INA_HDR_SIZE;
	memcpy(text, o->data + INA_HDR_SIZE, n);
	text[n] = '\0';
	if (!strstr(text, want))
		fail_msg("'%s', want '%s'", text, want);
	ina_pkt_free(o);
}

static void
quotas(void **state)
{
	struct sw s;
	struct ina_job_key k6, k7, kb6;
	uint32_t j6 = 0x01000006u, j7 = 0x01000007u, jb6 = 0x02000006u;

	(void)state;
	sw_init(&s, SHARE_FIRST_COME);
	ina_auth_job_key(tenants_get(s.t, 1)->key, j6, &k6);
	ina_auth_job_key(tenants_get(s.t, 1)->key, j7, &k7);
	ina_auth_job_key(tenants_get(s.t, 2)->key, jb6, &kb6);
	/* alice: weight at most 4, 8 slots, 2 jobs. */
	refused(&s, mk_join(&s, JOB_A, 1, 1, 5), &s.ka, INA_WERR_UNSUPPORTED,
		"job 5: weight 5 is above tenant alice's largest, 4");
	refused(&s, mk_join(&s, JOB_A, 1, 9, 1), &s.ka, INA_WERR_NO_SLOTS,
		"job 5: its 9 slots would bring tenant alice to 9, above its quota of 8");
	{
		struct ina_pkt *o = sw_send(&s, mk_join(&s, JOB_A, 1, 6, 4), &s.ka, 0);

		assert_non_null(o);
		assert_int_equal(o->data[1], INA_T_JOIN_ACK);
		ina_pkt_free(o);
	}
	refused(&s, mk_join(&s, j6, 1, 3, 1), &k6, INA_WERR_NO_SLOTS,
		"its 3 slots would bring tenant alice to 9, above its quota of 8");
	assert_int_equal(join_ok(&s, j6, &k6, 0, 1) != 0, 1); /* 1 + 6 slots */
	refused(&s, mk_join(&s, j7, 1, 1, 1), &k7, INA_WERR_NO_JOBS,
		"job 7: tenant alice already runs 2 jobs, its quota");
	/* bob is not held back by alice's use. */
	assert_int_equal(join_ok(&s, jb6, &kb6, 0, 1) != 0, 1);
	assert_int_equal(pipeline_stats(s.p)->jobs_refused, 4);
	sw_fini(&s);
}

/* --share fair: alice's two jobs of weight 4 hold the pool; bob's job of
 * weight 1 still has half of it as its share (each tenant shares its own
 * half), where by job weights alone it would have 1 slot in 9. */
static void
fair_between_tenants(void **state)
{
	struct sw s;
	struct ina_job_key k6;
	struct ina_pkt *o;

	(void)state;
	sw_init(&s, SHARE_FAIR);
	s.t->by_index[1].max_slots = 16; /* alice's quota out of the way */
	s.t->by_index[2].max_weight = 4;
	ina_auth_job_key(tenants_get(s.t, 1)->key, 0x01000006u, &k6);
	o = sw_send(&s, mk_join(&s, JOB_A, 1, 8, 4), &s.ka, 0);
	assert_non_null(o);
	assert_int_equal(o->data[1], INA_T_JOIN_ACK);
	ina_pkt_free(o);
	o = sw_send(&s, mk_join(&s, 0x01000006u, 1, 8, 4), &k6, 1);
	assert_non_null(o);
	assert_int_equal(o->data[1], INA_T_JOIN_ACK);
	ina_pkt_free(o);
	assert_int_equal(pipeline_free_slots(s.p), 0);
	/* No give-back here (share_wait 0): the refusal states bob's share. */
	refused(&s, mk_join(&s, JOB_B, 1, 16, 1), &s.kb, INA_WERR_NO_SLOTS,
		"job 33554437: its fair share is 8 slots");
	sw_fini(&s);
}

/* --- real engines, lossy fabric, replays --------------------------------- */

#define FW 3
#define FLANES 4
#define FB 16
#define FN 200

struct capture {
	uint8_t data[512][INA_HDR_SIZE + 4 * FB];
	uint16_t len[512];
	struct ina_peer peer[512];
	unsigned n;
	int on;
};

static void
cap_in(void *arg, const struct ina_pkt *pkt)
{
	struct capture *c = arg;

	if (!c->on || c->n == 512 || pkt->len > sizeof(c->data[0]))
		return;
	memcpy(c->data[c->n], pkt->data, pkt->len);
	c->len[c->n] = (uint16_t)pkt->len;
	c->peer[c->n] = pkt->peer;
	c->n++;
}

/* A fabric of 'world' engines of tenant 1's job JOB_A, tagged, on a switch
 * of 8 slots serving the tenants 't', with JOIN cookies when 'cookies' (as
 * ina-switch runs); 'pc' is the switch's configuration. With 'replica', a
 * replica switch of the same configuration stands by. */
static void
tenant_fabric_with(struct fabric *f, struct tenants *t, uint16_t world, struct pipeline_config *pc,
		   uint8_t cookies, int replica)
{
	struct engine_config ec;

	pipeline_config_init(pc);
	pc->nb_slots = 8;
	pc->slot_elems = FB;
	pc->tenants = t;
	pc->join_cookie = cookies;
	memset(pc->secret, 0x3c, sizeof(pc->secret));
	engine_config_init(&ec);
	ec.job_id = JOB_A;
	ec.auth = 1;
	ina_auth_job_key(tenants_get(t, 1)->key, JOB_A, &ec.key);
	if (replica) {
		fabric_peer(&ec.replica, FABRIC_REPLICA);
		ec.failover_ns = 60000000ull;
		ec.rto_max_ns = 20000000ull;
	}
	fabric_init(f, world, FLANES, FB, INA_ENC_F32, pc, &ec);
}

static void
tenant_fabric(struct fabric *f, struct tenants *t, uint16_t world, struct pipeline_config *pc,
	      uint8_t cookies)
{
	tenant_fabric_with(f, t, world, pc, cookies, 0);
}

/* Round k of the fabric's job: its sums exact on every rank. */
static void
fabric_round(struct fabric *f, uint32_t k)
{
	assert_int_equal(fabric_round_exact(f, k * 5, FN, FB), 0);
}

/*
 * A replica in tenant mode: the primary's REPLs, the replica's RESULTs and
 * FAILOVER announcements, the workers' STANDBY JOINs and FAILOVERs all
 * carry the job key's tag. The primary dies at each of several points of a
 * run under loss; the replica takes over and every round stays exact, and
 * no switch drops one of the job's own packets on its tag. (The first run
 * of this test found cheap_drop dropping every REPL as wrong_address.)
 */
static void
replica_takes_over(void **state)
{
	static const int64_t kills[] = { -1, 40, 120, 260 };
	struct tenants *t = good_tenants();

	(void)state;
	for (unsigned i = 0; i < sizeof(kills) / sizeof(kills[0]); i++) {
		struct pipeline_config pc;
		struct fabric f;

		tenant_fabric_with(&f, t, FW, &pc, 1, 1);
		assert_non_null(f.replica);
		f.faults.drop_rate = 0.02;
		f.faults.seed = 7 + i;
		f.kill_primary_seq = kills[i];
		assert_int_equal(fabric_join(&f), 0);
		for (uint32_t k = 1; k <= 4; k++)
			fabric_round(&f, k);
		assert_int_equal(fabric_finish(&f), 0);
		assert_int_equal(pipeline_stats(f.sw)->drop[PDROP_AUTH], 0);
		assert_int_equal(pipeline_stats(f.replica)->drop[PDROP_AUTH], 0);
		/* Every kill point falls within the run (about 450 packets). */
		assert_int_equal(pipeline_stats(f.replica)->takeovers, kills[i] >= 0);
		assert_true(kills[i] < 0 || f.killed > 0);
		/* The primary's REPLs reached the replica's state: they name
		 * ranks but come from the primary, not a rank's address. */
		assert_true(pipeline_stats(f.replica)->repl_stored > 0);
		fabric_fini(&f);
	}
	tenants_free(t);
}

static void
engines_replayed(void **state)
{
	static struct capture cap;
	struct tenants *t = good_tenants();
	struct pipeline_config pc;
	struct fabric f;
	uint64_t replayed = 0;

	(void)state;
	tenant_fabric(&f, t, FW, &pc, 0);
	f.faults.drop_rate = 0.05;
	f.faults.dup_rate = 0.05;
	f.faults.shuffle = 1;
	f.faults.seed = 19;
	memset(&cap, 0, sizeof(cap));
	f.tap_in = cap_in;
	f.tap_arg = &cap;
	assert_int_equal(fabric_join(&f), 0);
	cap.on = 1;
	fabric_round(&f, 0);
	cap.on = 0;
	assert_true(cap.n > 0);
	for (uint32_t k = 1; k <= 4; k++) {
		/* Every packet of round 0, tags intact, replayed into the
		 * switch before round k: each is an old round's (a shadow
		 * answer at most, whose stale sum the engines drop), never
		 * added to an open block. */
		for (unsigned i = 0; i < cap.n; i++) {
			struct ina_pkt *in = ina_pkt_alloc(f.pool), *out[1];

			assert_non_null(in);
			memcpy(in->data, cap.data[i], cap.len[i]);
			in->len = cap.len[i];
			in->peer = cap.peer[i];
			if (in->data[1] == INA_T_JOIN) {
				ina_pkt_free(in); /* a JOIN of the running job: the ack again */
				continue;
			}
			if (pipeline_rx_burst(f.sw, &in, 1, f.now, out))
				ina_pkt_free(out[0]);
			replayed++;
		}
		fabric_round(&f, k);
	}
	assert_true(replayed > 0);
	/* The replays carried valid tags: none failed; the engines' own
	 * packets never did either. */
	assert_int_equal(pipeline_stats(f.sw)->drop[PDROP_AUTH], 0);
	for (uint16_t r = 0; r < FW; r++)
		assert_int_equal(engine_stats(f.hosts[r])->auth_fail, 0);
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
	tenants_free(t);
}

/* Tenant mode on a switch of two lane partitions (as --lcores 2): JOIN,
 * FIN and LEAVE copied to both with their tags, each partition checking its
 * own DATA; the sums exact under loss. */
static void
engines_partitioned(void **state)
{
	struct tenants *t = good_tenants();
	struct pipeline_config pc;
	struct fabric f;

	(void)state;
	tenant_fabric(&f, t, FW, &pc, 1);
	fabric_partition(&f, 2, &pc);
	f.faults.drop_rate = 0.03;
	f.faults.seed = 7;
	assert_int_equal(fabric_join(&f), 0);
	for (uint32_t k = 0; k < 3; k++)
		fabric_round(&f, k);
	assert_int_equal(fabric_finish(&f), 0);
	for (uint16_t q = 0; q < f.nb_parts; q++)
		assert_int_equal(pipeline_stats(f.parts[q])->drop[PDROP_AUTH], 0);
	assert_true(pipeline_stats(f.parts[1])->results > 0);
	fabric_fini(&f);
	tenants_free(t);
}

/* The first JOIN of rank 'rank' from address 'addr' in 'c' that carries a
 * cookie, or -1. */
static int
find_join(const struct capture *c, uint16_t rank, uint8_t addr)
{
	for (unsigned i = 0; i < c->n; i++) {
		struct ina_hdr h;

		ina_wire_decode_hdr(c->data[i], &h);
		if (h.type == INA_T_JOIN && h.rank == rank && c->peer[i].bytes[1] == addr &&
		    ina_wire_cookie(&h) != 0)
			return (int)i;
	}
	return -1;
}

/* Captured packet 'i' replayed, tag intact, from address 'from': the
 * switch's answer (its tag checked under 'k'), or NULL. */
static struct ina_pkt *
replay_from(struct fabric *f, const struct capture *c, unsigned i, int from,
	    const struct ina_job_key *k)
{
	struct ina_pkt *in = ina_pkt_alloc(f->pool), *out[1];

	assert_non_null(in);
	memcpy(in->data, c->data[i], c->len[i]);
	in->len = c->len[i];
	fabric_peer(&in->peer, from);
	if (pipeline_rx_burst(f->sw, &in, 1, f->now, out) == 0)
		return NULL;
	assert_true(ina_auth_check(k, out[0]->data, out[0]->len));
	return out[0];
}

/*
 * A rank whose address changes (PROTOCOL 5.1 "Bound addresses", 5.13), with
 * JOIN cookies as ina-switch runs: rank 1's process comes back on a new
 * address. Its new context's JOIN, tagged but with no cookie of that address
 * for this run, draws one (rank_moved); the JOIN echoing it ends the run:
 * ranks 0 and 2 hear LEFT (INA_ELEFT) at their bound addresses, rank 1's old
 * one too (nobody there now); rank 1's retry admits a new run, the others'
 * new contexts join it, and the job goes on, every sum exact, under the new
 * epoch. Then an attacker's replays: rank 1's first JOIN from its old
 * address, its cookie still in its lifetime but not this run's, and the
 * moving JOIN from a third address draw a 56-byte cookie and move nothing
 * (rank_moved); the moving JOIN from the new address is the ack again.
 */
static void
rank_moves(void **state)
{
	static struct capture cap;
	struct tenants *t = good_tenants();
	struct pipeline_config pc;
	struct ina_job_key k;
	struct fabric f;
	struct ina_pkt *o;
	struct ina_hdr h;
	uint32_t e1, e2;
	int first, moving;

	(void)state;
	tenant_fabric(&f, t, FW, &pc, 1);
	ina_auth_job_key(tenants_get(t, 1)->key, JOB_A, &k);
	memset(&cap, 0, sizeof(cap));
	f.tap_in = cap_in;
	f.tap_arg = &cap;
	cap.on = 1;
	assert_int_equal(fabric_join(&f), 0);
	e1 = engine_epoch(f.hosts[1]);
	fabric_round(&f, 0);
	cap.on = 0;
	first = find_join(&cap, 1, 1);
	assert_true(first >= 0);

	fabric_reopen(&f, 1, 9);
	engine_join(f.hosts[1], f.now);
	cap.on = 1;
	/* -1: ranks 0 and 2 failed, as they must. */
	assert_int_equal(fabric_run(&f, ENGINE_JOINING, 60ull * INA_NS_PER_S), -1);
	cap.on = 0;
	assert_int_equal(engine_error(f.hosts[1]), 0);
	assert_int_equal(engine_phase(f.hosts[1]), ENGINE_READY);
	e2 = engine_epoch(f.hosts[1]);
	assert_int_not_equal(e2, e1);
	assert_int_equal(engine_error(f.hosts[0]), ENGINE_ELEFT);
	assert_int_equal(engine_error(f.hosts[2]), ENGINE_ELEFT);
	assert_non_null(strstr(engine_error_msg(f.hosts[0]), "joined again from another address"));
	assert_true(f.unreachable >= 1); /* LEFT to rank 1's old address */
	assert_int_equal(pipeline_stats(f.sw)->drop[PDROP_RANK_MOVED], 1);
	assert_int_equal(pipeline_stats(f.sw)->jobs_aborted, 1);
	moving = find_join(&cap, 1, 9);
	assert_true(moving >= 0);
	/* The applications of ranks 0 and 2 open new contexts (INA_ELEFT). */
	fabric_reopen(&f, 0, 0);
	fabric_reopen(&f, 2, 2);
	assert_int_equal(fabric_join(&f), 0);
	for (uint16_t r = 0; r < FW; r++)
		assert_int_equal(engine_epoch(f.hosts[r]), e2);

	/* The attacker's replays, tags intact. */
	assert_cookie_to(replay_from(&f, &cap, (unsigned)first, 1, &k), 1);
	assert_cookie_to(replay_from(&f, &cap, (unsigned)moving, 7, &k), 7);
	assert_int_equal(pipeline_stats(f.sw)->drop[PDROP_RANK_MOVED], 3);
	o = replay_from(&f, &cap, (unsigned)moving, 9, &k);
	assert_non_null(o);
	ina_wire_decode_hdr(o->data, &h);
	assert_int_equal(h.type, INA_T_JOIN_ACK);
	assert_int_equal(h.epoch, e2);
	ina_pkt_free(o);
	assert_int_equal(pipeline_stats(f.sw)->jobs_aborted, 1);
	assert_int_equal(pipeline_nb_jobs(f.sw), 1);

	for (uint32_t r = 1; r <= 3; r++)
		fabric_round(&f, r);
	for (uint16_t r = 0; r < FW; r++)
		assert_int_equal(engine_epoch(f.hosts[r]), e2);
	assert_int_equal(pipeline_stats(f.sw)->drop[PDROP_AUTH], 0);
	assert_int_equal(fabric_finish(&f), 0);
	fabric_fini(&f);
	tenants_free(t);
}

/*
 * Partition 0 of --lcores checks a control packet's tag before it copies it
 * to the others (pipeline_authentic): 1 for the job's JOIN, FIN and LEAVE, 0
 * for a forged or short one, the packet left as it was either way (the copy
 * and partition 0's own check still see the tag).
 */
static void
authentic_before_copy(void **state)
{
	struct sw s;
	struct ina_job_key wrong;
	uint8_t types[] = { INA_T_JOIN, INA_T_FIN, INA_T_LEAVE };

	(void)state;
	sw_init(&s, SHARE_FIRST_COME);
	memset(&wrong, 0x77, sizeof(wrong));
	for (size_t i = 0; i < sizeof(types); i++) {
		const struct ina_job_key *keys[] = { &s.ka, &wrong, &s.ka_for_b };

		for (size_t q = 0; q < 3; q++) {
			struct ina_hdr h = wc_hdr(types[i], INA_ENC_F32, q == 2 ? JOB_B : JOB_A, 0,
						  0, 0);
			struct ina_pkt *p = types[i] == INA_T_JOIN
						    ? mk_join(&s, h.job_id, 1, 1, 1)
						    : wc_mk_pkt(s.pool, &any_peer, &h, NULL, 0);
			uint8_t before[INA_HDR_SIZE + sizeof(struct ina_wire_join)];

			ina_auth_sign(keys[q], p->data, p->len);
			memcpy(before, p->data, p->len);
			assert_int_equal(pipeline_authentic(s.p, p), q == 0);
			assert_memory_equal(before, p->data, p->len);
			ina_pkt_free(p);
		}
	}
	/* Checked, a JOIN still passes the pipeline's own check. */
	{
		struct ina_pkt *p = mk_join(&s, JOB_A, 1, 1, 1), *o;

		ina_auth_sign(&s.ka, p->data, p->len);
		assert_int_equal(pipeline_authentic(s.p, p), 1);
		o = sw_send(&s, p, NULL, 0);
		assert_non_null(o);
		assert_int_equal(o->data[1], INA_T_JOIN_ACK);
		ina_pkt_free(o);
	}
	{
		struct ina_pkt *p = ina_pkt_alloc(s.pool);

		p->len = INA_HDR_SIZE - 1;
		memset(p->data, 0, p->len);
		assert_int_equal(pipeline_authentic(s.p, p), 0);
		ina_pkt_free(p);
	}
	assert_int_equal(pipeline_stats(s.p)->drop[PDROP_AUTH], 0);
	sw_fini(&s);
}

/* A switch->worker packet with a wrong tag never reaches the engine. */
static void
engine_drops_forged(void **state)
{
	struct tenants *t = good_tenants();
	struct pipeline_config pc;
	struct fabric f;
	struct ina_pkt *in;
	struct ina_hdr h;

	(void)state;
	tenant_fabric(&f, t, 1, &pc, 0);
	assert_int_equal(fabric_join(&f), 0);
	/* A forged ERROR LEFT from "the switch": it would end the job. */
	h = wc_hdr(INA_T_ERROR, INA_ENC_F32, JOB_A, engine_epoch(f.hosts[0]), INA_RANK_SWITCH, 0);
	h.status = INA_WERR_LEFT;
	in = wc_mk_pkt(f.pool, &any_peer, &h, "x", 1);
	fabric_peer(&in->peer, FABRIC_SWITCH);
	ina_auth_sign(&(struct ina_job_key){ { 1 } }, in->data, in->len);
	engine_rx(f.hosts[0], &in, 1, f.now);
	assert_int_equal(engine_stats(f.hosts[0])->auth_fail, 1);
	assert_int_equal(engine_error(f.hosts[0]), 0);
	fabric_round(&f, 0); /* the job runs on, its sums exact */
	fabric_fini(&f);
	tenants_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_good),
		cmocka_unit_test(parse_bad),
		cmocka_unit_test(entry_wide),
		cmocka_unit_test(load_mode),
		cmocka_unit_test(keys),
		cmocka_unit_test(tenant_env),
		cmocka_unit_test(tags),
		cmocka_unit_test(forged_data_dropped),
		cmocka_unit_test(tenants_isolated),
		cmocka_unit_test(quotas),
		cmocka_unit_test(fair_between_tenants),
		cmocka_unit_test(engines_replayed),
		cmocka_unit_test(replica_takes_over),
		cmocka_unit_test(engines_partitioned),
		cmocka_unit_test(rank_moves),
		cmocka_unit_test(authentic_before_copy),
		cmocka_unit_test(engine_drops_forged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
