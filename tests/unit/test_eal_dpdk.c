/* SPDX-License-Identifier: MIT */
/*
 * Start-up failures of the dpdk port give -errno and a message that says what
 * to do: a --file-prefix another process holds, no hugepages without
 * --no-huge (only checked when the machine has none reserved), EAL started
 * twice, no ethdev at all, a link that stays down past link_wait_ms (a memif
 * server without a client), an MTU whose frames exceed a memif's buffers
 * (bsize=), port=all taking every ethdev, and an ethdev that will not start
 * (a memif client without a server).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "skip.h"

#include <rte_dev.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "ina/port_dpdk.h"
#include "ina/util.h"

/* Why the last port open failed (the ops' and open_id's error buffer). */
static char open_err[320];
#define OPEN_ERR open_err, sizeof(open_err)

static char prefix[64], prefix_arg[96], run_dir[300];

static void
rm_run_dir(void)
{
	char cmd[340];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", run_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", run_dir);
}

/* A child process holds the EAL config lock of our prefix: EAL is not run. */
static void
test_prefix_busy(void **state)
{
	char path[340], err[512];
	char *argv[] = { "t", "--no-huge", "--no-pci", prefix_arg, NULL };
	int sync[2], ret;
	pid_t pid;
	char c;

	(void)state;
	assert_int_equal(mkdir(run_dir, 0700) == 0 || errno == EEXIST, 1);
	snprintf(path, sizeof(path), "%s/config", run_dir);
	assert_int_equal(pipe(sync), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(path, O_RDWR | O_CREAT, 0600);

		if (fd < 0 || fcntl(fd, F_SETLK, &lk) < 0)
			_exit(1);
		if (write(sync[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(sync[1]); /* a child that fails gives EOF, not a hang */
	assert_int_equal(read(sync[0], &c, 1), 1);
	ret = ina_dpdk_eal_init(4, argv, err, sizeof(err));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(sync[0]);
	assert_int_equal(ret, -EBUSY);
	assert_non_null(strstr(err, "distinct --file-prefix"));
	assert_non_null(strstr(err, prefix));
	assert_int_equal(ina_dpdk_eal_running(), 0);
	rm_run_dir();
}

static long
hugepages(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Total: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* A memif zero-copy client without --single-file-segments: refused before
 * EAL runs, naming the option (memif's own refusal says only that the
 * device did not start), in both forms of --vdev. */
static void
test_zero_copy_needs_single_file(void **state)
{
	char *joined[] = { "t", "--no-huge", prefix_arg,
			   "--vdev=net_memif0,role=client,zero-copy=yes", NULL };
	char *split[] = {
		"t", "--no-huge", prefix_arg, "--vdev", "net_memif0,role=client,zero-copy=yes", NULL
	};
	char err[512];

	(void)state;
	assert_int_equal(ina_dpdk_eal_init(4, joined, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--single-file-segments"));
	assert_int_equal(ina_dpdk_eal_init(5, split, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--single-file-segments"));
	assert_int_equal(ina_dpdk_eal_running(), 0);
}

static void
test_no_hugepages(void **state)
{
	char *argv[] = { "t", "--no-pci", prefix_arg, NULL };
	char err[512];

	(void)state;
	if (hugepages() != 0)
		INA_SKIP("this machine has hugepages: EAL would start");
	assert_int_equal(ina_dpdk_eal_init(3, argv, err, sizeof(err)), -ENOMEM);
	assert_non_null(strstr(err, "nr_hugepages"));
	assert_non_null(strstr(err, "--no-huge"));
	assert_int_equal(ina_dpdk_eal_running(), 0);
}

static void
test_eal_twice(void **state)
{
	/* memif needs EAL's multi-process channel: a prefix, no --no-shconf. */
	char *argv[] = { "t",	     "--no-huge",	 "-m",
			 "256",	     "--no-pci",	 "--no-telemetry",
			 prefix_arg, "--lcores=0@(0-1)", "--log-level=error" };
	char err[512];

	(void)state;
	assert_true(ina_dpdk_eal_init(9, argv, err, sizeof(err)) >= 0);
	assert_int_equal(ina_dpdk_eal_running(), 1);
	assert_int_equal(ina_dpdk_eal_init(9, argv, err, sizeof(err)), -EALREADY);
	assert_non_null(strstr(err, "already"));
}

static void
test_no_port(void **state)
{
	struct ina_port *p = NULL;

	(void)state;
	assert_int_equal(rte_eth_dev_count_avail(), 0);
	assert_int_equal(ina_port_dpdk_ops.open(&p, "port=all", OPEN_ERR), -ENODEV);
	assert_non_null(strstr(open_err, "no DPDK port: pass --vdev=... or bind a NIC"));
	assert_int_equal(ina_port_dpdk_ops.open(&p, "port=0", OPEN_ERR), -ENODEV);
	assert_non_null(strstr(open_err, "no DPDK port"));
	assert_null(p);
}

/* A memif server with no client: its link stays down; mtu=9000 does not fit
 * its default buffers. */
static void
test_link_down(void **state)
{
	struct ina_pkt *pkts[INA_MAX_BURST];
	struct ina_port *p = NULL;
	char devargs[160];
	uint64_t t0, dt;

	(void)state;
	snprintf(devargs, sizeof(devargs), "net_memif0,role=server,id=0,socket=/%s.sock", prefix);
	assert_int_equal(rte_dev_probe(devargs), 0);
	assert_int_equal(rte_eth_dev_count_avail(), 1);
	t0 = ina_now_ns();
	assert_int_equal(ina_port_dpdk_ops.open(&p, "port=0,link_wait_ms=200", OPEN_ERR),
			 -ENETDOWN);
	dt = ina_now_ns() - t0;
	assert_true(dt >= 190 * INA_NS_PER_MS && dt < 2000 * INA_NS_PER_MS);
	assert_non_null(strstr(open_err, "link_wait_ms=200"));
	assert_null(p);

	/* Jumbo frames do not fit its 2048-byte buffers (no bsize=): memif
	 * would split them over several buffers and corrupt its ring. */
	assert_int_equal(ina_port_dpdk_ops.open(&p, "port=0,mtu=9000", OPEN_ERR), -EINVAL);
	assert_non_null(strstr(open_err, "net_memif"));
	assert_non_null(strstr(open_err, "bsize=9216"));
	assert_null(p);
	assert_int_equal(ina_port_dpdk_ops.open(&p, "port=0,mtu=2034", OPEN_ERR), 0);
	ina_port_close(p);
	p = NULL;

	/* Without waiting it opens; nothing is received, tx is dropped and counted. */
	assert_int_equal(ina_port_dpdk_ops.open(&p, "port=0,ip=10.3.0.1", OPEN_ERR), 0);
	assert_int_equal(ina_port_rx_burst(p, pkts, INA_MAX_BURST), 0);
	pkts[0] = ina_pkt_alloc(p->pool);
	assert_non_null(pkts[0]);
	pkts[0]->len = 10;
	assert_int_equal(ina_port_resolve(p, "02:00:00:00:00:01@10.3.0.2:9150", &pkts[0]->peer), 0);
	assert_int_equal(ina_port_tx_burst(p, pkts, 1), 0);
	assert_int_equal(p->stats.tx_drop, 1);
	ina_port_close(p);
}

static void
test_all(void **state)
{
	struct rte_ring *r = rte_ring_create("ea_r", 256, (int)rte_socket_id(), 0);
	struct ina_port *p = NULL;
	uint8_t mac0[6], mac1[6];

	(void)state;
	assert_non_null(r);
	assert_true(rte_eth_from_ring(r) >= 0);
	assert_int_equal(ina_port_dpdk_ops.open(&p, "port=all,ip=10.3.0.1,mbufs=4095", OPEN_ERR),
			 0);
	assert_int_equal(ina_port_dpdk_nb_ethdevs(p), 2);
	assert_int_equal(ina_port_dpdk_mac(p, 0, mac0), 0);
	assert_int_equal(ina_port_dpdk_mac(p, 1, mac1), 0);
	assert_memory_not_equal(mac0, mac1, 6);
	assert_int_equal(ina_port_dpdk_mac(p, 2, mac1), -EINVAL);
	ina_port_close(p);
}

/* A memif client whose server does not exist fails to start. */
static void
test_will_not_start(void **state)
{
	struct ina_port *p = NULL;
	char devargs[160], spec[64];
	uint16_t id, client = RTE_MAX_ETHPORTS;

	(void)state;
	snprintf(devargs, sizeof(devargs), "net_memif1,role=client,id=0,socket=/%s-none.sock",
		 prefix);
	assert_int_equal(rte_dev_probe(devargs), 0);
	RTE_ETH_FOREACH_DEV(id)
	{
		char name[RTE_ETH_NAME_MAX_LEN];

		if (rte_eth_dev_get_name_by_port(id, name) == 0 && strcmp(name, "net_memif1") == 0)
			client = id;
	}
	assert_true(client < RTE_MAX_ETHPORTS);
	snprintf(spec, sizeof(spec), "port=%u", client);
	assert_int_equal(ina_port_dpdk_ops.open(&p, spec, OPEN_ERR) < 0, 1);
	assert_null(p);
	assert_non_null(strstr(open_err, "will not start"));
	assert_non_null(strstr(open_err, "net_memif"));
}

static int
group_setup(void **state)
{
	const char *base = getuid() == 0 ? "/var/run" : getenv("XDG_RUNTIME_DIR");
	char dpdk_dir[200];

	(void)state;
	if (!base)
		base = "/tmp";
	snprintf(prefix, sizeof(prefix), "ina-test-eal-%ld", (long)getpid());
	snprintf(prefix_arg, sizeof(prefix_arg), "--file-prefix=%s", prefix);
	snprintf(dpdk_dir, sizeof(dpdk_dir), "%s/dpdk", base);
	(void)mkdir(dpdk_dir, 0700);
	snprintf(run_dir, sizeof(run_dir), "%s/%s", dpdk_dir, prefix);
	return 0;
}

static int
group_teardown(void **state)
{
	uint16_t id;

	(void)state;
	if (ina_dpdk_eal_running()) {
		RTE_ETH_FOREACH_DEV(id)
		rte_eth_dev_close(id);
		ina_dpdk_eal_cleanup();
	}
	rm_run_dir();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix_busy),
		cmocka_unit_test(test_no_hugepages),
		cmocka_unit_test(test_zero_copy_needs_single_file),
		cmocka_unit_test(test_eal_twice),
		cmocka_unit_test(test_no_port),
		cmocka_unit_test(test_link_down),
		cmocka_unit_test(test_all),
		cmocka_unit_test(test_will_not_start),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
