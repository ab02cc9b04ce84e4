/* SPDX-License-Identifier: MIT */
/*
 * Options of the dpdk port (opts_dpdk.h): strict parsing of every key, with
 * the accepted range in the message of a bad value.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_config.h>

#include "ethdev_dpdk.h"
#include "ina/port_dpdk.h"
#include "ina/util.h"
#include "opts_dpdk.h"

static int
dpdk_option(char *opt, struct dpdk_config *cfg, char *err, size_t err_size)
{
	const char *key = opt, *val, *range = "";
	char *eq = strchr(opt, '=');
	struct in_addr in;
	int ret;

	if (!eq) {
		snprintf(err, err_size, "option '%s' needs a value (KEY=VALUE)", opt);
		return -EINVAL;
	}
	*eq = '\0';
	val = eq + 1;
	if (strcmp(key, "port") == 0) {
		const char *dash = strchr(val, '-');

		cfg->has_port = 1;
		range = " (ID, LO-HI or all)";
		if (strcmp(val, "all") == 0) {
			cfg->all = 1;
			ret = 0;
		} else if (dash) {
			char lo[16];
			size_t n = (size_t)(dash - val);

			ret = -EINVAL;
			if (n > 0 && n < sizeof(lo)) {
				memcpy(lo, val, n);
				lo[n] = '\0';
				ret = ina_parse_u64(lo, 0, RTE_MAX_ETHPORTS - 1, &cfg->lo);
				if (ret == 0)
					ret = ina_parse_u64(dash + 1, cfg->lo, RTE_MAX_ETHPORTS - 1,
							    &cfg->hi);
				if (ret == 0 && cfg->hi - cfg->lo >= DPDK_MAX_ETH)
					ret = -ERANGE;
			}
		} else {
			ret = ina_parse_u64(val, 0, RTE_MAX_ETHPORTS - 1, &cfg->lo);
			cfg->hi = cfg->lo;
		}
	} else if (strcmp(key, "ip") == 0) {
		ret = inet_pton(AF_INET, val, &in) == 1 ? 0 : -EINVAL;
		cfg->ip_be = in.s_addr;
		range = " (A.B.C.D)";
	} else if (strcmp(key, "udp") == 0) {
		ret = ina_parse_u64(val, 1, 65535, &cfg->udp);
		range = " (1..65535)";
	} else if (strcmp(key, "mbufs") == 0) {
		ret = ina_parse_u64(val, 64, DPDK_MAX_MBUFS, &cfg->mbufs);
		range = " (64..4194304)";
	} else if (strcmp(key, "reserve") == 0) {
		ret = ina_parse_u64(val, 0, DPDK_MAX_MBUFS, &cfg->reserve);
		range = " (0..4194304)";
	} else if (strcmp(key, "rxd") == 0 || strcmp(key, "txd") == 0) {
		ret = ina_parse_u64(val, 32, 16384, key[0] == 'r' ? &cfg->rxd : &cfg->txd);
		range = " (32..16384)";
	} else if (strcmp(key, "queue") == 0) {
		cfg->queue_all = strcmp(val, "all") == 0;
		cfg->queue = 0;
		ret = cfg->queue_all ? 0 : ina_parse_u64(val, 0, DPDK_MAX_QUEUES - 1, &cfg->queue);
		range = " (0..15 below queues=, or all)";
	} else if (strcmp(key, "queues") == 0) {
		ret = ina_parse_u64(val, 1, DPDK_MAX_QUEUES, &cfg->queues);
		range = " (1..16)";
	} else if (strcmp(key, "link_wait_ms") == 0) {
		ret = ina_parse_u64(val, 0, 600000, &cfg->link_wait_ms);
		range = " (0..600000)";
	} else if (strcmp(key, "zerocopy") == 0 || strcmp(key, "offload") == 0) {
		ret = ina_parse_u64(val, 0, 1, key[0] == 'z' ? &cfg->zerocopy : &cfg->offload);
		range = " (0 or 1)";
	} else if (strcmp(key, "csum") == 0) {
		ret = 0;
		if (strcmp(val, "auto") == 0)
			cfg->csum = DPDK_CSUM_AUTO;
		else if (strcmp(val, "on") == 0)
			cfg->csum = DPDK_CSUM_ON;
		else if (strcmp(val, "off") == 0)
			cfg->csum = DPDK_CSUM_OFF;
		else
			ret = -EINVAL;
		range = " (auto, on or off)";
	} else if (strcmp(key, "mtu") == 0) {
		ret = ina_parse_u64(val, DPDK_MIN_MTU, DPDK_MAX_MTU, &cfg->mtu);
		range = " (576..9000)";
	} else if ((ret = ina_faults_option(&cfg->faults, key, val, &range)) == 0) {
		snprintf(
			err, err_size,
			"unknown option '%s' (known: port, ip, udp, mbufs, reserve, rxd, txd, "
			"queue, queues, link_wait_ms, zerocopy, offload, csum, mtu, " INA_FAULTS_KEYS
			")",
			key);
		return -EINVAL;
	}
	if (ret < 0) {
		snprintf(err, err_size, "bad value '%s' for option '%s'%s", val, key, range);
		return -EINVAL;
	}
	return 0;
}

int
dpdk_config_parse(const char *args, struct dpdk_config *cfg, char *err, size_t err_size)
{
	char *copy, *opt, *save = NULL;
	int ret = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->udp = INA_DPDK_UDP_PORT;
	cfg->mbufs = DPDK_DEF_MBUFS;
	cfg->rxd = DPDK_DEF_DESC;
	cfg->txd = DPDK_DEF_DESC;
	cfg->queues = 1;
	cfg->zerocopy = 1;
	cfg->offload = 1;
	ina_faults_cfg_init(&cfg->faults);
	cfg->mtu = DPDK_DEF_MTU;
	copy = strdup(args);
	if (!copy)
		return -ENOMEM;
	for (opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		ret = dpdk_option(opt, cfg, err, err_size);
		if (ret < 0)
			break;
	}
	free(copy);
	if (ret == 0 && cfg->queue >= cfg->queues) {
		snprintf(err, err_size, "queue=%u needs queues=%u or more", (unsigned)cfg->queue,
			 (unsigned)cfg->queue + 1);
		ret = -EINVAL;
	}
	return ret;
}
