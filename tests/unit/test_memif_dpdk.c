/* SPDX-License-Identifier: MIT */
/*
 * The dpdk port between processes over net_memif, the way ina runs without
 * NICs: a server process with one memif server ethdev per client opens
 * "port=all"; two client processes (forked before EAL starts, each with its
 * own --file-prefix, started before the server) wait for their link, find
 * the server by ARP, send packets that the server echoes out the ethdev they
 * came in on, and then receive zero-copy fan-outs sent to both, in jumbo
 * frames (mtu=9000: every memif end has bsize=9216, so that a frame fits one
 * memif buffer). Every payload is checked; no mbuf of the server leaks.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ina/port_dpdk.h"
#include "ina/util.h"

/* Why the last port open failed (the ops' and open_id's error buffer). */
static char open_err[320];
#define OPEN_ERR open_err, sizeof(open_err)

#define NB_CLIENTS 2
#define NB_ECHO 100  /* packets each client sends and gets back */
#define NB_FAN 50    /* fan-outs the server sends to all clients */
#define FAN_LEN 7000 /* bytes of each: jumbo frames (mtu=9000) */
#define RUN_NS (20 * INA_NS_PER_S)

static char sock[64], prefix[NB_CLIENTS + 1][48];

static void
fill(struct ina_pkt *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p->data[i] = (uint8_t)(seed + i * 7);
	p->len = len;
}

static int
good(const struct ina_pkt *p, uint32_t len, uint8_t seed)
{
	if (p->len != len)
		return 0;
	for (uint32_t i = 0; i < len; i++)
		if (p->data[i] != (uint8_t)(seed + i * 7))
			return 0;
	return 1;
}

/* EAL of the server: one memif server ethdev per client, one socket. */
static int
server_eal(void)
{
	char pre[96], err[512], vdev[NB_CLIENTS][160];
	char *argv[16] = {
		"test_memif_dpdk",  "--no-huge",	 "-m", "256", "--no-pci", "--no-telemetry",
		"--lcores=0@(0-1)", "--log-level=error", pre
	};
	int argc = 9;

	snprintf(pre, sizeof(pre), "--file-prefix=%s", prefix[0]);
	for (int i = 0; i < NB_CLIENTS; i++) {
		snprintf(vdev[i], sizeof(vdev[i]),
			 "net_memif%d,role=server,id=%d,socket=%s,bsize=9216", i, i, sock);
		argv[argc++] = "--vdev";
		argv[argc++] = vdev[i];
	}
	if (ina_dpdk_eal_init(argc, argv, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

/* An echo of one of client c's packets, byte for byte. */
static int
echo_ok(const struct ina_pkt *q, int c)
{
	unsigned n;

	if (q->len < 100 || q->data[0] != c)
		return 0;
	n = q->data[1];
	if (q->len != 100 + n)
		return 0;
	for (uint32_t j = 2; j < q->len; j++)
		if (q->data[j] != (uint8_t)(c * 64 + n + j * 7))
			return 0;
	return 1;
}

/* A client: 0 when every echo and fan-out came back right. */
static int
client(int c)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct ina_port *p = NULL;
	struct ina_peer sw;
	char vdev[160], args[96];
	unsigned echo = 0, fan = 0, bad = 0, sent = 0;
	uint64_t end;
	int ret = -1;

	snprintf(vdev, sizeof(vdev), "net_memif0,role=client,id=%d,socket=%s,bsize=9216", c, sock);
	{
		char pre[96], err[512];
		char *argv[] = { "test_memif_dpdk",
				 "--no-huge",
				 "-m",
				 "256",
				 "--no-pci",
				 "--no-telemetry",
				 "--lcores=0@(0-1)",
				 "--log-level=error",
				 pre,
				 "--vdev",
				 vdev,
				 NULL };

		snprintf(pre, sizeof(pre), "--file-prefix=%s", prefix[c + 1]);
		if (ina_dpdk_eal_init(11, argv, err, sizeof(err)) < 0) {
			fprintf(stderr, "client %d: %s\n", c, err);
			return 1;
		}
	}
	/* The server may not be listening yet, or not started: link_wait_ms
	 * retries the memif start and connection meanwhile. */
	snprintf(args, sizeof(args), "port=0,ip=10.78.0.%d,link_wait_ms=10000,mtu=9000,mbufs=2047",
		 10 + c);
	ret = ina_port_dpdk_ops.open(&p, args, OPEN_ERR);
	if (ret < 0) {
		fprintf(stderr, "client %d: no port: %s\n", c, open_err);
		goto out;
	}
	if (ina_port_resolve(p, "10.78.0.1:9150", &sw) < 0) {
		fprintf(stderr, "client %d: server not found by ARP\n", c);
		ret = -1;
		goto out;
	}
	end = ina_now_ns() + RUN_NS;
	while ((echo < NB_ECHO || fan < NB_FAN) && ina_now_ns() < end) {
		uint16_t nb, k;

		for (k = 0; sent < NB_ECHO && k < 8; k++, sent++) {
			pkts[k] = ina_pkt_alloc(p->pool);
			if (!pkts[k])
				break;
			fill(pkts[k], 100 + sent, (uint8_t)(c * 64 + sent));
			pkts[k]->data[0] = (uint8_t)c;
			pkts[k]->data[1] = (uint8_t)sent;
			pkts[k]->peer = sw;
		}
		ina_port_tx_burst(p, pkts, k);
		nb = ina_port_rx_burst(p, pkts, INA_MAX_BURST);
		for (uint16_t i = 0; i < nb; i++) {
			struct ina_pkt *q = pkts[i];

			if (q->len == FAN_LEN && good(q, FAN_LEN, 0x5a))
				fan++;
			else if (echo_ok(q, c))
				echo++;
			else
				bad++;
		}
		ina_pkt_free_bulk(pkts, nb);
		if (!nb)
			ina_port_wait(p, 20000);
	}
	ret = echo == NB_ECHO && fan == NB_FAN && bad == 0 ? 0 : -1;
	if (ret)
		fprintf(stderr, "client %d: echo %u/%u fan %u/%u bad %u\n", c, echo, NB_ECHO, fan,
			NB_FAN, bad);
out:
	ina_port_close(p);
	ina_dpdk_eal_cleanup();
	return ret ? 1 : 0;
}

static void
rm_prefix(const char *pre)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf /var/run/dpdk/%s", pre);
	if (getuid() == 0 && system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", pre);
}

static void
test_memif_star(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct ina_peer peers[NB_CLIENTS];
	struct ina_port_dpdk_neigh_stats st;
	struct ina_port *s = NULL;
	pid_t pid[NB_CLIENTS];
	unsigned got[NB_CLIENTS] = { 0 }, fan = 0, avail0, done = 0;
	uint64_t known = 0, end;
	int status[NB_CLIENTS];

	(void)state;
	for (int c = 0; c < NB_CLIENTS; c++) {
		pid[c] = fork();
		assert_true(pid[c] >= 0);
		if (pid[c] == 0)
			_exit(client(c));
	}
	/* Clients first: their memif start fails until the server listens. */
	{
		struct timespec ms500 = { 0, 500 * 1000 * 1000 };

		nanosleep(&ms500, NULL);
	}
	assert_int_equal(server_eal(), 0);
	assert_int_equal(ina_port_dpdk_ops.open(&s, "port=all,ip=10.78.0.1,mtu=9000,mbufs=4095",
						OPEN_ERR),
			 0);
	assert_int_equal(ina_port_dpdk_nb_ethdevs(s), NB_CLIENTS);
	avail0 = ina_port_dpdk_pool_avail(s);

	end = ina_now_ns() + RUN_NS;
	while (done < NB_CLIENTS && ina_now_ns() < end) {
		uint16_t nb = ina_port_rx_burst(s, pkts, INA_MAX_BURST);

		for (uint16_t i = 0; i < nb; i++) {
			unsigned c = pkts[i]->data[0];

			assert_true(c < NB_CLIENTS);
			got[c]++;
			peers[c] = pkts[i]->peer;
			known |= 1ull << c;
		}
		/* Echo: each back to its peer, out the ethdev it came in on. */
		if (nb)
			ina_port_tx_burst(s, pkts, nb);
		if (known == (1ull << NB_CLIENTS) - 1 && got[0] == NB_ECHO && got[1] == NB_ECHO &&
		    fan < NB_FAN) {
			struct ina_pkt *r = ina_pkt_alloc(s->pool);

			assert_non_null(r);
			fill(r, FAN_LEN, 0x5a);
			r->dsts = peers;
			r->dst_mask = (1ull << NB_CLIENTS) - 1;
			fan += ina_port_tx_burst(s, &r, 1);
		}
		for (int c = 0; c < NB_CLIENTS; c++) {
			if (pid[c] > 0 && waitpid(pid[c], &status[c], WNOHANG) == pid[c]) {
				pid[c] = 0;
				done++;
			}
		}
		if (!nb)
			ina_port_wait(s, 20000);
	}
	for (int c = 0; c < NB_CLIENTS; c++) {
		if (pid[c] > 0) {
			kill(pid[c], SIGKILL);
			waitpid(pid[c], &status[c], 0);
		}
	}
	ina_port_dpdk_neigh_stats(s, &st);
	assert_int_equal(ina_port_dpdk_pool_avail(s), avail0);
	ina_port_close(s);
	ina_dpdk_eal_cleanup();
	for (int c = 0; c <= NB_CLIENTS; c++)
		rm_prefix(prefix[c]);
	for (int c = 0; c < NB_CLIENTS; c++) {
		assert_true(WIFEXITED(status[c]));
		assert_int_equal(WEXITSTATUS(status[c]), 0);
		assert_int_equal(got[c], NB_ECHO);
	}
	assert_int_equal(fan, NB_FAN);
	assert_true(st.arp_reply_tx >= NB_CLIENTS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memif_star),
	};

	snprintf(sock, sizeof(sock), "/ina-tm-%ld.sock", (long)getpid());
	for (int c = 0; c <= NB_CLIENTS; c++)
		snprintf(prefix[c], sizeof(prefix[c]), "ina-tm-%ld-%d", (long)getpid(), c);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
