/* SPDX-License-Identifier: MIT */
/*
 * The topology parser (topology/topology.c): every file shipped in
 * topologies/ loads and says what it should; a table of bad files each fails
 * with the exact "<file>:<line>: <field>" it names; units, lookups and the
 * printed summary.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ina/wire.h"
#include "topo_units.h"
#include "topology.h"

#ifndef INA_SOURCE_DIR
#error "INA_SOURCE_DIR must name the source tree"
#endif

static struct topology *
load_shipped(const char *file)
{
	char path[512], err[512];
	struct topology *t;

	snprintf(path, sizeof(path), "%s/topologies/%s", INA_SOURCE_DIR, file);
	t = topology_load(path, err, sizeof(err));
	if (!t)
		fail_msg("%s: %s", file, err);
	return t;
}

/* Every .yaml in topologies/ loads, whatever it is called. */
static void
test_every_shipped_file_loads(void **state)
{
	char dir[512];
	unsigned n = 0;
	struct dirent *e;
	DIR *d;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/topologies", INA_SOURCE_DIR);
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (len < 6 || strcmp(e->d_name + len - 5, ".yaml"))
			continue;
		topology_free(load_shipped(e->d_name));
		n++;
	}
	closedir(d);
	assert_true(n >= 5);
}

static void
test_rack4(void **state)
{
	struct topology *t = load_shipped("rack4.yaml");
	int r = topology_find(t, "rack0"), h2 = topology_find(t, "h2");
	const struct topo_link *l;
	const struct topo_job *j;

	(void)state;
	assert_string_equal(t->name, "rack4");
	assert_int_equal(t->nb_nodes, 5);
	assert_int_equal(t->nb_links, 4);
	assert_int_equal(t->nb_jobs, 1);
	assert_true(r >= 0 && h2 >= 0);
	assert_int_equal(t->nodes[r].kind, TOPO_SWITCH);
	assert_int_equal(t->nodes[r].role, TOPO_ROLE_RACK);
	assert_int_equal(t->nodes[r].parent, -1);
	assert_int_equal(t->nodes[r].slots, 1024);
	assert_int_equal(t->nodes[h2].kind, TOPO_HOST);
	assert_int_equal(t->nodes[h2].attach, r);
	l = topology_link(t, r, h2);
	assert_non_null(l);
	assert_ptr_equal(l, topology_link(t, h2, r));
	assert_int_equal(l->a, h2); /* the host is 'a' */
	assert_int_equal(l->b, r);
	assert_int_equal(l->bandwidth_bps, 200000000);
	assert_int_equal(l->latency_ns, 50000);
	assert_true(l->loss == 0);
	assert_int_equal(l->mtu, 1500);
	assert_null(topology_link(t, h2, topology_find(t, "h3")));
	assert_int_equal(topology_find(t, "nope"), -1);
	j = &t->jobs[0];
	assert_string_equal(j->name, "allreduce");
	assert_int_equal(j->job_id, 1);
	assert_int_equal(j->nb_hosts, 4);
	for (int k = 0; k < 4; k++) {
		char name[8];

		snprintf(name, sizeof(name), "h%d", k);
		assert_int_equal(j->hosts[k], topology_find(t, name));
	}
	assert_int_equal(j->root, r);
	assert_int_equal(j->tensor_len, 262144);
	assert_int_equal(j->rounds, 10);
	assert_int_equal(j->block_size, 256);
	assert_int_equal(j->lanes, 8);
	assert_int_equal(j->encoding, INA_ENC_F32);
	assert_int_equal(j->data, TOPO_DATA_SYNTHETIC);
	assert_true(j->density == 0.1);
	assert_int_equal(j->seed, 1);
	assert_null(j->path);
	topology_free(t);
}

/* Three jobs asking more slots than the switch has: allowed because the
 * switch says how they share them; the share fields and the weights. */
static void
test_three_jobs(void **state)
{
	struct topology *t = load_shipped("three-jobs.yaml");
	int s = topology_find(t, "sw0");

	(void)state;
	assert_true(s >= 0);
	assert_int_equal(t->nodes[s].slots, 96);
	assert_int_equal(t->nodes[s].share, TOPO_SHARE_FIRST_COME);
	assert_int_equal(t->nodes[s].share_total, 0);
	assert_int_equal(t->nb_jobs, 3);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(t->jobs[k].lanes, 64);
		assert_int_equal(t->jobs[k].weight, 1);
	}
	topology_free(t);
	/* rack4 says nothing: unset, weight 0 (the engine's 1). */
	t = load_shipped("rack4.yaml");
	assert_int_equal(t->nodes[topology_find(t, "rack0")].share, TOPO_SHARE_UNSET);
	assert_int_equal(t->jobs[0].weight, 0);
	topology_free(t);
}

static void
test_rack4_lossy(void **state)
{
	struct topology *t = load_shipped("rack4-lossy.yaml");
	int r = topology_find(t, "rack0");

	(void)state;
	assert_true(topology_link(t, topology_find(t, "h0"), r)->loss == 0.01);
	assert_true(topology_link(t, topology_find(t, "h3"), r)->loss == 0.02);
	assert_int_equal(t->jobs[0].job_id, 1); /* the default: 1 + index */
	topology_free(t);
}

static void
test_two_racks(void **state)
{
	struct topology *t = load_shipped("two-racks.yaml");
	int sp = topology_find(t, "spine0"), r0 = topology_find(t, "rack0"),
	    r1 = topology_find(t, "rack1");
	const struct topo_link *up = topology_link(t, r1, sp);

	(void)state;
	assert_int_equal(t->nodes[sp].role, TOPO_ROLE_SPINE);
	assert_int_equal(t->nodes[r0].parent, sp);
	assert_int_equal(t->nodes[r1].parent, sp);
	assert_int_equal(t->nodes[topology_find(t, "h5")].attach, r1);
	assert_non_null(up);
	assert_int_equal(up->a, r1); /* the child is 'a' */
	assert_int_equal(up->bandwidth_bps, 100000000);
	assert_int_equal(t->jobs[0].nb_hosts, 8);
	assert_int_equal(t->jobs[0].root, sp);
	assert_true(t->jobs[0].density == 1.0);
	topology_free(t);
}

static void
test_fabric_1024(void **state)
{
	struct topology *t = load_shipped("fabric-1024.yaml");
	int core = topology_find(t, "core0"), hosts = 0, racks = 0, spines = 0;

	(void)state;
	for (uint32_t i = 0; i < t->nb_nodes; i++) {
		const struct topo_node *n = &t->nodes[i];

		hosts += n->kind == TOPO_HOST;
		racks += n->kind == TOPO_SWITCH && n->role == TOPO_ROLE_RACK;
		spines += n->kind == TOPO_SWITCH && n->role == TOPO_ROLE_SPINE;
		if (n->kind == TOPO_HOST)
			assert_int_equal(t->nodes[t->nodes[n->attach].parent].parent, core);
	}
	assert_int_equal(hosts, 1024);
	assert_int_equal(racks, 64);
	assert_int_equal(spines, 8);
	assert_int_equal(t->nodes[core].role, TOPO_ROLE_CORE);
	assert_int_equal(t->nb_jobs, 1);
	assert_int_equal(t->jobs[0].nb_hosts, 1024);
	assert_int_equal(t->jobs[0].root, core);
	assert_int_equal(t->jobs[0].tensor_len, 262144);
	assert_int_equal(t->jobs[0].rounds, 2);
	topology_free(t);
}

/* A .npy job: the path is taken from the file's folder, the tensor length
 * from the file. */
static void
test_gradient_file_job(void **state)
{
	struct topology *t = load_shipped("rack4-grads.yaml");
	const struct topo_job *j = &t->jobs[0];
	FILE *f;

	(void)state;
	assert_int_equal(j->data, TOPO_DATA_FILE);
	assert_int_equal(j->tensor_len, 71754);
	assert_non_null(j->path);
	f = fopen(j->path, "rb");
	assert_non_null(f);
	fclose(f);
	topology_free(t);
}

/* ----------------------------------------------------------- bad files */

#define BASE \
	"name: t\n"		    /* 1 */ \
	"switches:\n"		    /* 2 */ \
	"  - name: r0\n"	    /* 3 */ \
	"hosts:\n"		    /* 4 */ \
	"  - name: h0\n"	    /* 5 */ \
	"  - name: h1\n"	    /* 6 */ \
	"links:\n"		    /* 7 */ \
	"  - endpoints: [h0, r0]\n" /* 8 */ \
	"  - endpoints: [h1, r0]\n" /* 9 */

#define BASE_TAIL "hosts:\n  - name: h0\nlinks:\n  - endpoints: [h0, r0]\n"

#define JOB(extra) \
	BASE "jobs:\n"		     /* 10 */ \
	     "  - name: j\n"	     /* 11 */ \
	     "    hosts: [h0, h1]\n" /* 12 */ \
		extra

/* Four hosts, h2's link shaped, h3's not; a job on h0 and h1; h2 attacks it. */
#define ATK(extra) \
	"name: t\n"		    /* 1 */ \
	"switches:\n"		    /* 2 */ \
	"  - name: r0\n"	    /* 3 */ \
	"hosts:\n"		    /* 4 */ \
	"  - name: h0\n"	    /* 5 */ \
	"  - name: h1\n"	    /* 6 */ \
	"  - name: h2\n"	    /* 7 */ \
	"  - name: h3\n"	    /* 8 */ \
	"links:\n"		    /* 9 */ \
	"  - endpoints: [h0, r0]\n" /* 10 */ \
	"  - endpoints: [h1, r0]\n" /* 11 */ \
	"  - endpoints: [h2, r0]\n" /* 12 */ \
	"    bandwidth: 100Mbit\n"  /* 13 */ \
	"  - endpoints: [h3, r0]\n" /* 14 */ \
	"jobs:\n"		    /* 15 */ \
	"  - name: j\n"		    /* 16 */ \
	"    hosts: [h0, h1]\n"	    /* 17 */ \
	"    tensor: 8\n"	    /* 18 */ \
	"attacks:\n"		    /* 19 */ \
	"  - from: h2\n"	    /* 20 */ \
	"    job: j\n"		    /* 21 */ \
		extra

struct bad {
	const char *what;
	const char *yaml;
	const char *expect; /* a fragment of the message */
};

static const struct bad bad_files[] = {
	{ "unknown key", BASE "    colour: red\n", "bad.yaml:10: links[1].colour: unknown field" },
	{ "unknown top-level key", "name: t\nswitch: []\n", "bad.yaml:2: switch: unknown field" },
	{ "wrong type: list for a number", BASE "    mtu: [1500]\n",
	  "bad.yaml:10: links[1].mtu: want a single value" },
	{ "wrong type: scalar for a list", "name: t\nswitches: r0\n",
	  "bad.yaml:2: switches: want a list" },
	{ "a bare host name", "name: t\nswitches: [{name: r0}]\nhosts: [h0, h1]\n",
	  "bad.yaml:3: hosts[0]: want a mapping such as {name: h0}, not a bare name" },
	{ "bad rate", BASE "    bandwidth: 10Gbps\n",
	  "bad.yaml:10: links[1].bandwidth: '10Gbps' is not a rate" },
	{ "bad rate default", "defaults:\n  bandwidth: fast\n" BASE,
	  "bad.yaml:2: defaults.bandwidth: 'fast' is not a rate" },
	{ "rate above 1Tbit", BASE "    bandwidth: 2Tbit\n",
	  "bad.yaml:10: links[1].bandwidth: '2Tbit' is out of range" },
	{ "bad latency", BASE "    latency: 5 ms\n",
	  "bad.yaml:10: links[1].latency: '5 ms' is not a duration" },
	{ "negative loss", BASE "    loss: -0.1\n",
	  "bad.yaml:10: links[1].loss: -0.1 is out of range" },
	{ "loss of 1", BASE "    loss: 1\n", "bad.yaml:10: links[1].loss: 1 is out of range" },
	{ "loss nan", BASE "    loss: nan\n", "bad.yaml:10: links[1].loss: 'nan' is not a number" },
	{ "mtu too small", BASE "    mtu: 100\n",
	  "bad.yaml:10: links[1].mtu: 100 is out of range" },
	{ "unknown node in a link", BASE "  - endpoints: [h0, r9]\n",
	  "bad.yaml:10: links[2].endpoints[1]: no host or switch called 'r9'" },
	{ "link with one end", BASE "  - endpoints: [h0]\n",
	  "bad.yaml:10: links[2].endpoints: want exactly 2 entries" },
	{ "host with two links",
	  "name: t\nswitches:\n  - name: r0\n  - name: r1\nhosts:\n  - name: h0\nlinks:\n"
	  "  - endpoints: [h0, r0]\n  - endpoints: [r1, h0]\n",
	  "bad.yaml:9: links[1].endpoints: host 'h0' already has a link (links[0], line 8)" },
	{ "host with no link",
	  "name: t\nswitches:\n  - name: r0\nhosts:\n  - name: h0\n"
	  "  - name: h1\nlinks:\n  - endpoints: [h0, r0]\n",
	  "bad.yaml:6: hosts[1]: host 'h1' has no link" },
	{ "switch linked to itself", BASE "  - endpoints: [r0, r0]\n",
	  "bad.yaml:10: links[2].endpoints: 'r0' linked to itself" },
	{ "host to host", BASE "  - endpoints: [h0, h1]\n",
	  "bad.yaml:10: links[2].endpoints: 'h0' and 'h1' are both hosts" },
	{ "same link twice", BASE "  - endpoints: [r0, h1]\n",
	  "bad.yaml:10: links[2].endpoints: 'r0' and 'h1' are already linked by links[1]" },
	{ "cycle in uplinks",
	  "name: t\nswitches:\n  - name: a\n    uplink: b\n  - name: b\n    uplink: a\n"
	  "hosts:\n  - name: h0\nlinks:\n  - endpoints: [h0, a]\n  - endpoints: [a, b]\n",
	  "bad.yaml:4: switches[0].uplink: uplinks form a cycle through 'a'" },
	{ "uplink without a link",
	  "name: t\nswitches:\n  - name: a\n    uplink: b\n  - name: b\n"
	  "hosts:\n  - name: h0\nlinks:\n  - endpoints: [h0, a]\n",
	  "bad.yaml:4: switches[0].uplink: no link between 'a' and its uplink 'b'" },
	{ "uplink to nowhere", "name: t\nswitches:\n  - name: a\n    uplink: zz\n" BASE_TAIL,
	  "bad.yaml:4: switches[0].uplink: no switch called 'zz'" },
	{ "duplicate name",
	  "name: t\nswitches:\n  - name: r0\nhosts:\n  - name: r0\nlinks:\n  - endpoints: [r0, r0]\n",
	  "bad.yaml:5: hosts[0].name: 'r0' is already the name of switches[0] (line 3)" },
	{ "bad name", "name: t\nswitches:\n  - name: 'r 0'\n" BASE_TAIL,
	  "bad.yaml:3: switches[0].name: 'r 0' is not a name" },
	{ "replica without replica_of",
	  "name: t\nswitches:\n  - name: r0\n  - name: r1\n    role: replica\n" BASE_TAIL,
	  "bad.yaml:4: switches[1].replica_of: missing" },
	{ "replica of nothing",
	  "name: t\nswitches:\n  - name: r1\n    role: replica\n    replica_of: r7\n" BASE_TAIL,
	  "bad.yaml:5: switches[0].replica_of: no switch called 'r7'" },
	{ "uplink to a replica",
	  "name: t\nswitches:\n  - name: r0\n  - name: rb\n    role: replica\n    replica_of: r0\n"
	  "  - name: r1\n    uplink: rb\n" BASE_TAIL,
	  "bad.yaml:8: switches[2].uplink: 'rb' is a replica" },
	{ "unknown role", "name: t\nswitches:\n  - name: r0\n    role: leaf\n" BASE_TAIL,
	  "bad.yaml:4: switches[0].role: 'leaf' is not one of" },
	{ "job with unknown host", BASE "jobs:\n  - name: j\n    hosts: [h0, h7]\n    tensor: 8\n",
	  "bad.yaml:12: jobs[0].hosts[1]: no host called 'h7'" },
	{ "job with a host twice", JOB("    tensor: 8\n    hosts: [h0, h0]\n"),
	  "bad.yaml:14: jobs[0].hosts: given twice" },
	{ "job host listed twice",
	  BASE "jobs:\n  - name: j\n    hosts: [h0, h1, h0]\n    tensor: 8\n",
	  "bad.yaml:12: jobs[0].hosts[2]: host 'h0' is in this job twice" },
	{ "job on a switch", BASE "jobs:\n  - name: j\n    hosts: [r0]\n    tensor: 8\n",
	  "bad.yaml:12: jobs[0].hosts[0]: 'r0' is a switch" },
	{ "duplicate job id",
	  JOB("    tensor: 8\n  - name: k\n    id: 1\n    hosts: [h1]\n    tensor: 8\n"),
	  "bad.yaml:15: jobs[1].id: job id 1 is already jobs[0]'s ('j', line 11)" },
	{ "duplicate job name", JOB("    tensor: 8\n  - name: j\n    hosts: [h1]\n    tensor: 8\n"),
	  "bad.yaml:14: jobs[1].name: 'j' is already the name of jobs[0] (line 11)" },
	{ "tensor not the file's",
	  JOB("    tensor: 1000\n    data: {file: " INA_SOURCE_DIR
	      "/data/grads_cnn_digits_3it.npy}\n"),
	  "bad.yaml:13: jobs[0].tensor: 1000, but " INA_SOURCE_DIR
	  "/data/grads_cnn_digits_3it.npy has 71754 parameters" },
	{ "data file not .npy", JOB("    data: {file: " INA_SOURCE_DIR "/topologies/rack4.yaml}\n"),
	  "bad.yaml:13: jobs[0].data.file: " },
	{ "missing required field", "switches:\n  - name: r0\n", "bad.yaml:1: name: missing" },
	{ "missing nested field", BASE "  - {}\n", "bad.yaml:10: links[2].endpoints: missing" },
	{ "missing tensor", JOB("    rounds: 2\n"), "bad.yaml:11: jobs[0].tensor: missing" },
	{ "empty file", "", "bad.yaml:1: empty" },
	{ "only a comment", "# nothing\n", "bad.yaml:1: empty" },
	{ "not YAML at all",
	  "\x7f"
	  "ELF\x01\x02{{{[[[ : : -",
	  "bad.yaml:1: not YAML" },
	{ "unbalanced", "name: [t\n", "bad.yaml:2: not YAML" },
	{ "a sentence", "just a sentence\n", "bad.yaml:1: want a mapping" },
	{ "huge number", JOB("    tensor: 99999999999999999999999\n"),
	  "bad.yaml:13: jobs[0].tensor: '99999999999999999999999' is too large" },
	{ "tensor above 32 bits", JOB("    tensor: 4294967296\n"),
	  "bad.yaml:13: jobs[0].tensor: 4294967296 is out of range" },
	{ "number with junk", JOB("    tensor: 12abc\n"),
	  "bad.yaml:13: jobs[0].tensor: '12abc' is not a whole number" },
	{ "octal-looking number", JOB("    tensor: 8\n    rounds: 0x10\n"),
	  "bad.yaml:14: jobs[0].rounds: '0x10' is not a whole number" },
	{ "huge slots",
	  "name: t\nswitches:\n  - name: r0\n    slots: 18446744073709551616\n" BASE_TAIL,
	  "bad.yaml:4: switches[0].slots: '18446744073709551616' is too large" },
	{ "huge rate", BASE "    bandwidth: 99999999999999999999999999Gbit\n",
	  "bad.yaml:10: links[1].bandwidth: '99999999999999999999999999Gbit' is out of range" },
	{ "bad encoding", JOB("    tensor: 8\n    encoding: f64\n"),
	  "bad.yaml:14: jobs[0].encoding: 'f64' is not one of" },
	{ "density above 1", JOB("    tensor: 8\n    data: {synthetic: {density: 1.5}}\n"),
	  "bad.yaml:14: jobs[0].data.synthetic.density: 1.5 is out of range" },
	{ "both data kinds", JOB("    tensor: 8\n    data: {synthetic: {}, file: x.npy}\n"),
	  "bad.yaml:14: jobs[0].data: either synthetic or file" },
	{ "missing data file", JOB("    data: {file: /nonexistent/grads.npy}\n"),
	  "bad.yaml:13: jobs[0].data.file: /nonexistent/grads.npy: No such file" },
	{ "data file not a file", JOB("    data: {file: /dev/zero}\n"),
	  "bad.yaml:13: jobs[0].data.file: /dev/zero: not a regular file" },
	{ "block too large for the mtu", JOB("    tensor: 8\n    block: 1024\n"),
	  "bad.yaml:14: jobs[0].block: blocks of 1024 f32 elements need 4180-byte frames; "
	  "links[0] (h0 - r0, line 8) has mtu 1500" },
	{ "bf16 blocks fit where f32 do not",
	  JOB("    tensor: 8\n    block: 512\n    encoding: bf16\n  - name: k\n    hosts: [h1]\n"
	      "    tensor: 8\n    block: 512\n"),
	  "bad.yaml:19: jobs[1].block: blocks of 512 f32 elements need 2132-byte frames" },
	{ "lanes beyond the slots",
	  "name: t\nswitches:\n  - name: r0\n    slots: 4\nhosts:\n  - name: h0\nlinks:\n"
	  "  - endpoints: [h0, r0]\njobs:\n  - name: j\n    hosts: [h0]\n    tensor: 8\n",
	  "bad.yaml:4: switches[0].slots: switch 'r0' has 4 slots" },
	{ "hosts under two roots",
	  "name: t\nswitches:\n  - name: r0\n  - name: r1\nhosts:\n  - name: h0\n  - name: h1\n"
	  "links:\n  - endpoints: [h0, r0]\n  - endpoints: [h1, r1]\n"
	  "jobs:\n  - name: j\n    hosts: [h0, h1]\n    tensor: 8\n",
	  "bad.yaml:13: jobs[0].hosts: 'h0' and 'h1' are under different roots" },
	{ "share_total without fair",
	  "name: t\nswitches:\n  - name: r0\n    share_total: 3\nhosts:\n  - name: h0\nlinks:\n"
	  "  - endpoints: [h0, r0]\n",
	  "bad.yaml:3: switches[0].share: share_total and share_min_slots need share: fair" },
	{ "share unknown",
	  "name: t\nswitches:\n  - name: r0\n    share: fifo\nhosts:\n  - name: h0\nlinks:\n"
	  "  - endpoints: [h0, r0]\n",
	  "share" },
	{ "weight 0",
	  "name: t\nswitches:\n  - name: r0\nhosts:\n  - name: h0\nlinks:\n"
	  "  - endpoints: [h0, r0]\njobs:\n  - name: j\n    hosts: [h0]\n    tensor: 8\n"
	  "    weight: 0\n",
	  "bad.yaml:12: jobs[0].weight: 0 is out of range 1..255" },
	{ "tenant not a name", JOB("    tensor: 8\n    tenant: 'a b'\n"),
	  "bad.yaml:14: jobs[0].tenant: 'a b' is not a tenant name (1 to 31 letters" },
	{ "tenant of 32 characters",
	  JOB("    tensor: 8\n    tenant: abcdefghijklmnopqrstuvwxyz012345\n"),
	  "bad.yaml:14: jobs[0].tenant: 'abcdefghijklmnopqrstuvwxyz012345' is not a tenant name" },
	{ "tenant empty", JOB("    tensor: 8\n    tenant: ''\n"),
	  "bad.yaml:14: jobs[0].tenant: '' is not a tenant name" },
	{ "tenant then none",
	  JOB("    tensor: 8\n    tenant: acme\n  - name: k\n    hosts: [h1]\n    tensor: 8\n"),
	  "bad.yaml:15: jobs[1].tenant: missing: jobs[0] ('j', line 11) has a tenant, and either "
	  "every job has one (tenant mode) or none does (token mode)" },
	{ "none then tenant",
	  JOB("    tensor: 8\n  - name: k\n    hosts: [h1]\n    tensor: 8\n    tenant: acme\n"),
	  "bad.yaml:17: jobs[1].tenant: jobs[0] ('j', line 11) has no tenant: either every job "
	  "has one (tenant mode) or none does (token mode)" },
	{ "one tenant's id twice",
	  JOB("    tensor: 8\n    tenant: acme\n  - name: k\n    hosts: [h1]\n    tensor: 8\n"
	      "    tenant: acme\n    id: 1\n"),
	  "bad.yaml:19: jobs[1].id: job id 1 of tenant acme is already jobs[0]'s ('j', line 11)" },
	{ "tenant job id above 24 bits", JOB("    tensor: 8\n    tenant: acme\n    id: 16777216\n"),
	  "bad.yaml:15: jobs[0].id: job id 16777216 is above 16777215: a tenant's job ids are "
	  "0..16777215" },
	{ "attacker unknown", ATK("  - {from: h9, job: j}\n"),
	  "bad.yaml:22: attacks[1].from: no host called 'h9'" },
	{ "attacker a switch", ATK("  - {from: r0, job: j}\n"),
	  "bad.yaml:22: attacks[1].from: 'r0' is a switch: an attacker is a host" },
	{ "attacker in a job", ATK("  - {from: h1, job: j}\n"),
	  "bad.yaml:22: attacks[1].from: host 'h1' is in jobs[0] ('j', line 16): an attacker is "
	  "in no job" },
	{ "attacker twice", ATK("  - {from: h3, job: j}\n  - {from: h2, job: j}\n"),
	  "bad.yaml:23: attacks[2].from: host 'h2' is already the attacker of attacks[0] (line "
	  "20): one attack per host" },
	{ "attack on an unknown job", ATK("  - {from: h3, job: k}\n"),
	  "bad.yaml:22: attacks[1].job: no job called 'k'" },
	{ "attack without a job", ATK("  - {from: h3}\n"),
	  "bad.yaml:22: attacks[1].job: missing (required)" },
	{ "attack without jobs", BASE "attacks:\n  - {from: h0, job: j}\n",
	  "bad.yaml:11: attacks[0].job: no job called 'j'" },
	{ "attack rate not a rate", ATK("    rate: 10Gbps\n"),
	  "bad.yaml:22: attacks[0].rate: '10Gbps' is not a rate" },
	{ "attack rate 0", ATK("    rate: 0\n"),
	  "bad.yaml:22: attacks[0].rate: '0': an attack sends at a rate above 0" },
	{ "attack rate above 1Tbit", ATK("    rate: 2Tbit\n"),
	  "bad.yaml:22: attacks[0].rate: '2Tbit' is out of range" },
	{ "attack unknown field", ATK("    colour: red\n"),
	  "bad.yaml:22: attacks[0].colour: unknown field" },
	{ "attacks not a list", BASE "attacks: {from: h0}\n", "bad.yaml:10: attacks: want a list" },
	{ "given twice", "name: t\nname: u\n", "bad.yaml:2: name: given twice" },
	{ "alias", "name: &a t\nswitches:\n  - name: *a\n", "bad.yaml:3: aliases" },
	{ "too deep", "name: t\nx: [[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]\n",
	  "bad.yaml:2: nested deeper than" },
	{ "a NUL byte", "name: t\0\n", "bad.yaml:1: not YAML" },
};

static void
test_bad_files(void **state)
{
	int failed = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		const struct bad *b = &bad_files[i];
		size_t len = strlen(b->yaml);
		char err[512];
		struct topology *t;

		if (strcmp(b->what, "a NUL byte") == 0)
			len = 9;
		memset(err, 'x', sizeof(err));
		t = topology_parse(b->yaml, len, "bad.yaml", err, sizeof(err));
		if (t) {
			topology_free(t);
			print_error("%s: parsed, want \"%s\"\n", b->what, b->expect);
			failed++;
		} else if (!memchr(err, 0, sizeof(err)) || !strstr(err, b->expect)) {
			print_error("%s: got \"%.*s\", want \"%s\"\n", b->what,
				    (int)sizeof(err) - 1, err, b->expect);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

/* A job's root is the lowest switch above all its hosts. */
static void
test_job_roots(void **state)
{
	static const char *yaml = "name: t\n"
				  "switches:\n"
				  "  - {name: sp, role: spine}\n"
				  "  - {name: r0, uplink: sp}\n"
				  "  - {name: r1, uplink: sp}\n"
				  "hosts: [{name: a}, {name: b}, {name: c}, {name: d}]\n"
				  "links:\n"
				  "  - endpoints: [r0, sp]\n"
				  "  - endpoints: [sp, r1]\n"
				  "  - endpoints: [a, r0]\n"
				  "  - endpoints: [b, r0]\n"
				  "  - endpoints: [r1, c]\n"
				  "  - endpoints: [d, sp]\n"
				  "jobs:\n"
				  "  - {name: in-r0, hosts: [b, a], tensor: 8}\n"
				  "  - {name: in-r1, hosts: [c], tensor: 8}\n"
				  "  - {name: across, hosts: [a, c], tensor: 8}\n"
				  "  - {name: with-d, hosts: [b, d], tensor: 8}\n";
	char err[512];
	struct topology *t = topology_parse(yaml, strlen(yaml), "roots.yaml", err, sizeof(err));
	int sp, r0, r1;

	(void)state;
	if (!t)
		fail_msg("%s", err);
	sp = topology_find(t, "sp");
	r0 = topology_find(t, "r0");
	r1 = topology_find(t, "r1");
	assert_int_equal(t->jobs[0].root, r0);
	assert_int_equal(t->jobs[1].root, r1);
	assert_int_equal(t->jobs[2].root, sp);
	assert_int_equal(t->jobs[3].root, sp);
	assert_int_equal(t->jobs[3].job_id, 4);
	/* Links come out host first, child switch first, whatever the file's order. */
	assert_int_equal(topology_link(t, sp, r1)->a, r1);
	assert_int_equal(topology_link(t, sp, r0)->a, r0);
	assert_int_equal(topology_link(t, r1, topology_find(t, "c"))->a, topology_find(t, "c"));
	assert_int_equal(t->nodes[topology_find(t, "d")].attach, sp);
	topology_free(t);
}

/* A chain of 'nb' switches, s0 at the bottom, hosts 'lo' on s0 and 'hi' on
 * the top one, and a job on 'job_hosts'; 'cyclic': the top's uplink is s0. */
static char *
chain_yaml(int nb, int cyclic, const char *job_hosts, size_t *len)
{
	size_t cap = 64 * (size_t)nb + 1024, n = 0;
	char *y = malloc(cap);

	assert_non_null(y);
	n += (size_t)snprintf(y + n, cap - n, "name: chain\nswitches:\n");
	for (int i = 0; i < nb; i++) {
		if (i + 1 < nb || cyclic)
			n += (size_t)snprintf(y + n, cap - n, "- {name: s%d, uplink: s%d}\n", i,
					      (i + 1) % nb);
		else
			n += (size_t)snprintf(y + n, cap - n, "- {name: s%d}\n", i);
	}
	n += (size_t)snprintf(y + n, cap - n, "hosts: [{name: lo}, {name: hi}]\nlinks:\n");
	for (int i = 0; i + 1 < nb; i++)
		n += (size_t)snprintf(y + n, cap - n, "- endpoints: [s%d, s%d]\n", i, i + 1);
	if (cyclic)
		n += (size_t)snprintf(y + n, cap - n, "- endpoints: [s%d, s0]\n", nb - 1);
	n += (size_t)snprintf(y + n, cap - n,
			      "- endpoints: [lo, s0]\n- endpoints: [hi, s%d]\n"
			      "jobs: [{name: j, hosts: [%s], tensor: 8}]\n",
			      nb - 1, job_hosts);
	assert_true(n < cap);
	*len = n;
	return y;
}

/* 20,000 switches in a chain, and in a cycle: checked in linear time (a
 * quadratic check would take minutes), printed within its bounds. */
static void
test_deep_chain(void **state)
{
	enum { N = 20000 };
	char *y, err[512], *text = NULL;
	struct topology *t;
	size_t len, size = 0;
	FILE *f;

	(void)state;
	y = chain_yaml(N, 1, "lo, hi", &len);
	assert_null(topology_parse(y, len, "chain.yaml", err, sizeof(err)));
	assert_non_null(
		strstr(err, "chain.yaml:3: switches[0].uplink: uplinks form a cycle through 's0'"));
	free(y);
	y = chain_yaml(N, 0, "lo, hi, lo2", &len);
	assert_null(topology_parse(y, len, "chain.yaml", err, sizeof(err)));
	assert_non_null(strstr(err, "jobs[0].hosts[2]: no host called 'lo2'"));
	free(y);
	y = chain_yaml(N, 0, "hi, lo", &len);
	t = topology_parse(y, len, "chain.yaml", err, sizeof(err));
	if (!t)
		fail_msg("%s", err);
	assert_int_equal(t->jobs[0].root, topology_find(t, "s19999"));
	f = open_memstream(&text, &size);
	assert_non_null(f);
	topology_print(t, f);
	fclose(f);
	assert_true(size < 16384);
	free(text);
	topology_free(t);
	free(y);
}

/* A switch aggregates at most INA_MAX_WORLD children of one job. */
static void
test_fan_in(void **state)
{
	size_t cap = 16384, n = 0;
	char *y = malloc(cap), err[512];
	struct topology *t;

	(void)state;
	assert_non_null(y);
	n += (size_t)snprintf(y + n, cap - n, "name: t\nswitches: [{name: r0}]\nhosts:\n");
	for (int i = 0; i <= INA_MAX_WORLD; i++)
		n += (size_t)snprintf(y + n, cap - n, "  - name: h%d\n", i);
	n += (size_t)snprintf(y + n, cap - n, "links:\n");
	for (int i = 0; i <= INA_MAX_WORLD; i++)
		n += (size_t)snprintf(y + n, cap - n, "  - endpoints: [h%d, r0]\n", i);
	n += (size_t)snprintf(y + n, cap - n, "jobs:\n  - name: j\n    tensor: 8\n    hosts:\n");
	/* INA_MAX_WORLD hosts pass; one more does not. */
	for (int i = 0; i < INA_MAX_WORLD; i++)
		n += (size_t)snprintf(y + n, cap - n, "      - h%d\n", i);
	assert_true(n < cap - 64);
	t = topology_parse(y, n, "fan.yaml", err, sizeof(err));
	if (!t)
		fail_msg("%s", err);
	assert_int_equal(t->jobs[0].nb_hosts, INA_MAX_WORLD);
	topology_free(t);
	n += (size_t)snprintf(y + n, cap - n, "      - h%d\n", INA_MAX_WORLD);
	assert_null(topology_parse(y, n, "fan.yaml", err, sizeof(err)));
	assert_non_null(strstr(err, "jobs[0].hosts: switch 'r0' would aggregate 65 children"));
	free(y);
}

/* A small message buffer cuts the message; no error message goes past it. */
static void
test_short_error_buffer(void **state)
{
	char err[8];

	(void)state;
	memset(err, 'x', sizeof(err));
	assert_null(topology_parse("name: t\n", 8, "bad.yaml", err, sizeof(err)));
	assert_true(memchr(err, 0, sizeof(err)) != NULL);
	assert_null(topology_load("/nonexistent/t.yaml", err, sizeof(err)));
	assert_true(memchr(err, 0, sizeof(err)) != NULL);
}

/* ------------------------------------------------------------- units */

static void
test_rates(void **state)
{
	static const struct {
		const char *s;
		int ret;
		uint64_t bps;
	} cases[] = {
		{ "0", 0, 0 },
		{ "10Gbit", 0, 10000000000ULL },
		{ "100Mbit", 0, 100000000 },
		{ "100mbit", 0, 100000000 },
		{ "1.5Gbit", 0, 1500000000 },
		{ "1kbit", 0, 1000 },
		{ "1Kbit", 0, 1000 },
		{ "64bit", 0, 64 },
		{ "1Tbit", 0, 1000000000000ULL },
		{ "1.0001Tbit", -ERANGE, 0 },
		{ "0.5bit", -ERANGE, 0 },
		{ "10", -EINVAL, 0 },
		{ "10Gbps", -EINVAL, 0 },
		{ "10 Gbit", -EINVAL, 0 },
		{ "Gbit", -EINVAL, 0 },
		{ "-1Gbit", -EINVAL, 0 },
		{ ".5Gbit", -EINVAL, 0 },
		{ "1.Gbit", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
		{ "1GBIT", -EINVAL, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int ret = topo_parse_rate(cases[i].s, &v);

		if (ret != cases[i].ret || (ret == 0 && v != cases[i].bps))
			fail_msg("'%s': ret %d v %llu", cases[i].s, ret, (unsigned long long)v);
	}
}

static void
test_durations(void **state)
{
	static const struct {
		const char *s;
		int ret;
		uint64_t ns;
	} cases[] = {
		{ "0", 0, 0 },		 { "50us", 0, 50000 },	       { "1ms", 0, 1000000 },
		{ "1.5ms", 0, 1500000 }, { "10s", 0, 10000000000ULL }, { "7ns", 0, 7 },
		{ "11s", -ERANGE, 0 },	 { "0.5ns", -ERANGE, 0 },      { "5", -EINVAL, 0 },
		{ "5Ms", -EINVAL, 0 },	 { "5 ms", -EINVAL, 0 },       { "ms", -EINVAL, 0 },
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int ret = topo_parse_duration(cases[i].s, &v);

		if (ret != cases[i].ret || (ret == 0 && v != cases[i].ns))
			fail_msg("'%s': ret %d v %llu", cases[i].s, ret, (unsigned long long)v);
	}
	assert_string_equal(topo_format_duration(1500000, buf, sizeof(buf)), "1500us");
	assert_string_equal(topo_format_duration(0, buf, sizeof(buf)), "0");
	assert_string_equal(topo_format_rate(200000000, buf, sizeof(buf)), "200Mbit");
	assert_string_equal(topo_format_rate(1500, buf, sizeof(buf)), "1500bit");
}

/* ----------------------------------------------------- tenants, attacks */

static struct topology *
parse_ok(const char *yaml)
{
	char err[512];
	struct topology *t = topology_parse(yaml, strlen(yaml), "ok.yaml", err, sizeof(err));

	if (!t)
		fail_msg("%s", err);
	return t;
}

/* Tenants are numbered by their first job; a token-mode file has none. */
static void
test_tenants(void **state)
{
	static const char *yaml =
		"name: t\n"
		"switches: [{name: r0}]\n"
		"hosts: [{name: a}, {name: b}]\n"
		"links: [{endpoints: [a, r0]}, {endpoints: [b, r0]}]\n"
		"jobs:\n"
		"  - {name: j0, hosts: [a], tensor: 8, tenant: blue}\n"
		"  - {name: j1, hosts: [b], tensor: 8, tenant: red.team-2}\n"
		"  - {name: j2, hosts: [a, b], tensor: 8, tenant: blue, id: 16777215}\n"
		"  - {name: j3, hosts: [b], tensor: 8, id: 0,\n"
		"     tenant: abcdefghijklmnopqrstuvwxyz01234}\n"
		"  - {name: j4, hosts: [a], tensor: 8, tenant: red.team-2, id: 1}\n";
	struct topology *t = parse_ok(yaml);

	(void)state;
	assert_int_equal(t->nb_jobs, 5);
	assert_string_equal(t->jobs[0].tenant, "blue");
	assert_int_equal(t->jobs[0].tenant_index, 1);
	assert_int_equal(t->jobs[0].job_id, 1);
	assert_string_equal(t->jobs[1].tenant, "red.team-2");
	assert_int_equal(t->jobs[1].tenant_index, 2);
	assert_string_equal(t->jobs[2].tenant, "blue");
	assert_int_equal(t->jobs[2].tenant_index, 1);
	assert_int_equal(t->jobs[2].job_id, 16777215);
	assert_int_equal(t->jobs[3].tenant_index, 3); /* 31 characters: the most */
	assert_int_equal(t->jobs[3].job_id, 0);
	/* Ids are per tenant: red's job 1 beside blue's. */
	assert_int_equal(t->jobs[4].job_id, 1);
	assert_int_equal(t->jobs[4].tenant_index, 2);
	assert_int_equal(t->nb_attacks, 0);
	assert_null(t->attacks);
	topology_free(t);
	t = load_shipped("rack4.yaml");
	assert_null(t->jobs[0].tenant);
	assert_int_equal(t->jobs[0].tenant_index, 0);
	topology_free(t);
}

/* Jobs on one host, job k as tenant k % 'mod' (numbered 0..). */
static char *
tenants_yaml(int nb_jobs, int mod)
{
	size_t cap = 80 * (size_t)nb_jobs + 256, n = 0;
	char *y = malloc(cap);

	assert_non_null(y);
	n += (size_t)snprintf(y + n, cap - n,
			      "name: t\nswitches: [{name: r0}]\nhosts: [{name: a}]\n"
			      "links: [{endpoints: [a, r0]}]\njobs:\n");
	for (int k = 0; k < nb_jobs; k++)
		n += (size_t)
			snprintf(y + n, cap - n,
				 "- {name: j%d, hosts: [a], tensor: 8, lanes: 1, tenant: t%d}\n", k,
				 k % mod);
	assert_true(n < cap);
	return y;
}

/* 255 tenants, not 256. */
static void
test_tenants_max(void **state)
{
	char err[512], *y;
	struct topology *t;

	(void)state;
	y = tenants_yaml(510, 255);
	t = topology_parse(y, strlen(y), "many.yaml", err, sizeof(err));
	if (!t)
		fail_msg("%s", err);
	assert_int_equal(t->jobs[254].tenant_index, 255);
	assert_int_equal(t->jobs[509].tenant_index, 255);
	assert_int_equal(t->jobs[255].tenant_index, 1);
	topology_free(t);
	free(y);
	y = tenants_yaml(256, 256);
	t = topology_parse(y, strlen(y), "many.yaml", err, sizeof(err));
	assert_null(t);
	assert_non_null(
		strstr(err, "many.yaml:261: jobs[255].tenant: 't255' would be tenant 256: at most "
			    "255 tenants"));
	free(y);
}

/* Attacks: indices, lines, the rate given or the link's (its own or the
 * default bandwidth), 1 Gbit/s from an unshaped link; printed. */
static void
test_attacks(void **state)
{
	static const char *yaml =
		"name: t\n"
		"defaults: {bandwidth: 50Mbit}\n"
		"switches: [{name: r0}]\n"
		"hosts: [{name: h0}, {name: h1}, {name: h2}, {name: h3}, {name: h4},\n"
		"        {name: h5}]\n"
		"links:\n"
		"  - {endpoints: [h0, r0]}\n"
		"  - {endpoints: [h1, r0]}\n"
		"  - {endpoints: [h2, r0], bandwidth: 100Mbit}\n"
		"  - {endpoints: [h3, r0]}\n"
		"  - {endpoints: [h4, r0]}\n"
		"  - {endpoints: [h5, r0], bandwidth: 0}\n"
		"jobs:\n"
		"  - {name: j, hosts: [h0], tensor: 8}\n"
		"  - {name: k, hosts: [h1], tensor: 8}\n"
		"attacks:\n"
		"  - {from: h2, job: k}\n" /* 17 */
		"  - {from: h3, job: j}\n"
		"  - from: h4\n" /* 19 */
		"    job: j\n"
		"    rate: 1.5Mbit\n"
		"  - {from: h5, job: k}\n"; /* 22 */
	struct topology *t = parse_ok(yaml);
	char *text = NULL;
	size_t size = 0;
	FILE *f;

	(void)state;
	assert_int_equal(t->nb_attacks, 4);
	assert_int_equal(t->attacks[0].host, topology_find(t, "h2"));
	assert_int_equal(t->attacks[0].job, 1);
	assert_int_equal(t->attacks[0].rate_bps, 100000000); /* its link's */
	assert_int_equal(t->attacks[0].line, 17);
	assert_int_equal(t->attacks[1].host, topology_find(t, "h3"));
	assert_int_equal(t->attacks[1].job, 0);
	assert_int_equal(t->attacks[1].rate_bps, 50000000); /* the default bandwidth */
	assert_int_equal(t->attacks[2].host, topology_find(t, "h4"));
	assert_int_equal(t->attacks[2].rate_bps, 1500000); /* its own */
	assert_int_equal(t->attacks[2].line, 19);
	assert_int_equal(t->attacks[3].host, topology_find(t, "h5"));
	assert_int_equal(t->attacks[3].rate_bps, 1000000000); /* unshaped: 1 Gbit/s */
	assert_int_equal(t->attacks[3].line, 22);
	f = open_memstream(&text, &size);
	assert_non_null(f);
	topology_print(t, f);
	fclose(f);
	assert_non_null(strstr(text, "1 switches, 6 hosts, 6 links, 2 jobs, 4 attacks\n"));
	assert_non_null(strstr(text, "attacks:\n  h2 on job k at 100Mbit\n"
				     "  h3 on job j at 50Mbit\n  h4 on job j at 1500kbit\n"
				     "  h5 on job k at 1Gbit\n"));
	free(text);
	topology_free(t);
}

/* A tenant job's tenant in the summary; a token job's line says none. */
static void
test_print_tenants(void **state)
{
	struct topology *t = parse_ok(JOB("    tensor: 8\n    tenant: acme\n    id: 7\n"));
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	(void)state;
	assert_non_null(f);
	topology_print(t, f);
	fclose(f);
	assert_non_null(strstr(text, "  j (id 7, tenant acme, index 1): 2 hosts"));
	assert_null(strstr(text, "attacks"));
	free(text);
	topology_free(t);
}

/* ------------------------------------------------------------- print */

static void
test_print(void **state)
{
	struct topology *t = load_shipped("two-racks.yaml");
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	(void)state;
	assert_non_null(f);
	topology_print(t, f);
	fclose(f);
	assert_non_null(strstr(text, "topology two-racks"));
	assert_non_null(strstr(text, "3 switches, 8 hosts, 10 links, 1 jobs"));
	assert_non_null(strstr(text, "rack1        rack    slots 1024, cores 1, uplink spine0"));
	assert_non_null(strstr(text, "8 links, h0 - rack0 to h7 - rack1: 20Mbit, latency 50us"));
	assert_non_null(strstr(text, "root spine0"));
	assert_non_null(strstr(text, "rack1 <- h4 h5 h6 h7"));
	free(text);
	topology_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_shipped_file_loads),
		cmocka_unit_test(test_rack4),
		cmocka_unit_test(test_three_jobs),
		cmocka_unit_test(test_rack4_lossy),
		cmocka_unit_test(test_two_racks),
		cmocka_unit_test(test_fabric_1024),
		cmocka_unit_test(test_gradient_file_job),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_job_roots),
		cmocka_unit_test(test_deep_chain),
		cmocka_unit_test(test_fan_in),
		cmocka_unit_test(test_short_error_buffer),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_print),
		cmocka_unit_test(test_tenants),
		cmocka_unit_test(test_tenants_max),
		cmocka_unit_test(test_attacks),
		cmocka_unit_test(test_print_tenants),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
