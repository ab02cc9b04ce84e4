/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the topology parser (topology/topology.c and the files
 * it uses), fed the input as a YAML file. Checked:
 *  - it returns a topology, or NULL with one line "fuzz.yaml:<line>: ..."
 *    and never both, nor neither;
 *  - a topology it returns keeps every promise of topology.h: indices in
 *    range, names unique and found by topology_find(), each host linked once
 *    to a switch (its 'attach', link 'a' the host), switch parents linked
 *    and acyclic, loss in [0, 1), every job's hosts distinct hosts whose
 *    attach switches all lie under its 'root', defaults applied;
 *  - topology_print() runs on it (into /dev/null).
 * Data paths are opened only when they name a regular file (no fuzz input
 * can make the parser read a device or a FIFO).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static FILE *devnull;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	return 0;
}

static int
under(const struct topology *t, int n, int root)
{
	for (uint32_t steps = 0; n >= 0 && steps <= t->nb_nodes; steps++, n = t->nodes[n].parent) {
		if (n == root)
			return 1;
	}
	return 0;
}

static void
check(const struct topology *t)
{
	uint32_t n = t->nb_nodes;
	uint32_t *links_of = calloc(n ? n : 1, sizeof(*links_of));

	FZ_CHECK(links_of);
	FZ_CHECK(t->name && t->file && n > 0 && t->nb_links > 0);
	for (uint32_t i = 0; i < n; i++) {
		const struct topo_node *nd = &t->nodes[i];

		FZ_CHECK(nd->name && nd->name[0]);
		FZ_CHECK(topology_find(t, nd->name) == (int)i);
		FZ_CHECK(nd->line >= 1);
		if (nd->kind == TOPO_HOST) {
			FZ_CHECK(nd->attach >= 0 && (uint32_t)nd->attach < n);
			FZ_CHECK(t->nodes[nd->attach].kind == TOPO_SWITCH);
			FZ_CHECK(topology_link(t, (int)i, nd->attach));
		} else {
			FZ_CHECK(nd->kind == TOPO_SWITCH);
			FZ_CHECK(nd->slots >= 1 && nd->cores >= 1);
			FZ_CHECK(nd->parent >= -1 && nd->parent < (int)n);
			if (nd->parent >= 0) {
				FZ_CHECK(t->nodes[nd->parent].kind == TOPO_SWITCH);
				FZ_CHECK(topology_link(t, (int)i, nd->parent));
				/* No cycle: the root is reached within n steps. */
				FZ_CHECK(!under(t, nd->parent, (int)i));
			}
			FZ_CHECK((nd->role == TOPO_ROLE_REPLICA) == (nd->replica_of >= 0));
		}
	}
	for (uint32_t i = 0; i < t->nb_links; i++) {
		const struct topo_link *l = &t->links[i];

		FZ_CHECK(l->a >= 0 && (uint32_t)l->a < n && l->b >= 0 && (uint32_t)l->b < n);
		FZ_CHECK(l->a != l->b);
		FZ_CHECK(t->nodes[l->b].kind == TOPO_SWITCH);
		FZ_CHECK(l->loss >= 0 && l->loss < 1);
		FZ_CHECK(l->mtu >= 576 && l->mtu <= 65535);
		FZ_CHECK(l->line >= 1);
		if (t->nodes[l->a].kind == TOPO_HOST) {
			FZ_CHECK(t->nodes[l->a].attach == l->b);
			FZ_CHECK(++links_of[l->a] == 1);
		}
	}
	for (uint32_t i = 0; i < t->nb_jobs; i++) {
		const struct topo_job *j = &t->jobs[i];

		FZ_CHECK(j->name && j->nb_hosts >= 1 && j->hosts);
		FZ_CHECK(j->root >= 0 && (uint32_t)j->root < n);
		FZ_CHECK(t->nodes[j->root].kind == TOPO_SWITCH);
		FZ_CHECK(j->tensor_len >= 1 && j->rounds >= 1 && j->block_size >= 1 &&
			 j->lanes >= 1);
		FZ_CHECK(j->encoding >= 1 && j->encoding <= 3);
		FZ_CHECK(j->data == TOPO_DATA_FILE ? j->path != NULL
						   : j->density >= 0 && j->density <= 1);
		for (uint32_t k = 0; k < i; k++)
			FZ_CHECK(t->jobs[k].job_id != j->job_id);
		for (uint16_t k = 0; k < j->nb_hosts; k++) {
			int h = j->hosts[k];

			FZ_CHECK(h >= 0 && (uint32_t)h < n && t->nodes[h].kind == TOPO_HOST);
			FZ_CHECK(under(t, t->nodes[h].attach, j->root));
			for (uint16_t m = 0; m < k; m++)
				FZ_CHECK(j->hosts[m] != h);
		}
	}
	free(links_of);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct topology *t;

	memset(err, 'x', sizeof(err));
	t = topology_parse((const char *)data, size, "fuzz.yaml", err, sizeof(err));
	if (!t) {
		FZ_CHECK(memchr(err, 0, sizeof(err)));
		FZ_CHECK(strncmp(err, "fuzz.yaml:", 10) == 0);
		FZ_CHECK(err[10] >= '1' && err[10] <= '9');
		FZ_CHECK(!strchr(err, '\n'));
		return 0;
	}
	check(t);
	if (devnull)
		topology_print(t, devnull);
	topology_free(t);
	return 0;
}
