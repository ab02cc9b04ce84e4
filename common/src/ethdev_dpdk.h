/* SPDX-License-Identifier: MIT */
/*
 * Ethdev sets (private to the dpdk port): the ethdevs one port spec names,
 * configured and started once for all the port objects that share them, one
 * per queue (queue=P,queues=K), and released by the last. A set owns one
 * mbuf pool per queue and a small pool of header mbufs per queue for
 * zero-copy fan-out. Opened and closed from one thread; the hot path only
 * reads it. No <rte_*.h> here: only *_dpdk.c files include them.
 */
#ifndef INA_ETHDEV_DPDK_H
#define INA_ETHDEV_DPDK_H

#include <stddef.h>
#include <stdint.h>

#define DPDK_MAX_ETH 16	   /* ethdevs in one port */
#define DPDK_MAX_QUEUES 16 /* queue pairs per ethdev */

struct rte_mempool;

struct dpdk_set_cfg {
	uint16_t ids[DPDK_MAX_ETH]; /* ethdev port ids, in port order */
	uint16_t nb;
	uint16_t queues;   /* rx/tx queue pairs per ethdev */
	uint32_t rxd, txd; /* descriptors per queue */
	uint32_t nb_mbufs; /* per queue's pool */
	uint32_t reserve;  /* mbufs the caller keeps in flight */
	uint32_t link_wait_ms;
	int offload;	    /* use checksum offloads where advertised */
	uint32_t priv_size; /* mbuf private area (struct ina_pkt) */
	uint32_t mtu;	    /* IPv4 MTU of every ethdev */
};

struct dpdk_set {
	struct dpdk_set_cfg cfg;
	unsigned refs;
	uint32_t open_mask; /* queues with a port object */
	struct rte_mempool *pools[DPDK_MAX_QUEUES];
	struct rte_mempool *hdr_pools[DPDK_MAX_QUEUES];
	uint8_t macs[DPDK_MAX_ETH][6];
	uint8_t chains_ok[DPDK_MAX_ETH];   /* tx accepts multi-segment mbufs */
	uint8_t tx_csum[DPDK_MAX_ETH];	   /* IPv4+UDP checksum tx offload on */
	uint8_t rx_csum[DPDK_MAX_ETH];	   /* rx checksum flags trusted */
	uint8_t kernel_peer[DPDK_MAX_ETH]; /* af_packet, af_xdp, tap: frames from
						 * the local kernel may carry partial
						 * UDP checksums */
	char names[DPDK_MAX_ETH][32];	   /* driver names, for messages */
	uint32_t buf_min;		   /* mbuf data room (past the headroom)
						 * the pools need: a whole frame, and
						 * at least every memif's bsize= */
};

/*
 * Opens queue 'queue' of the set 'cfg' names: the first caller configures
 * and starts the ethdevs, later ones (same ids and queues) share them.
 * 0, or -errno with a message in 'err': -ENODEV (no such ethdev), -EBUSY
 * (queue taken, or an ethdev in another set), -EINVAL (set mismatch, too many
 * queues, or an MTU an ethdev cannot carry, e.g. frames above a memif's
 * bsize=), -ENOBUFS (mbufs too few), -ENETDOWN (link_wait_ms passed), or the
 * driver's error when configure or start fails.
 */
int dpdk_set_open(const struct dpdk_set_cfg *cfg, uint16_t queue, struct dpdk_set **out, char *err,
		  size_t err_size);
/* Releases queue 'queue'; the last one stops the ethdevs and frees the pools. */
void dpdk_set_close(struct dpdk_set *set, uint16_t queue);
/* 1 if ethdev i of the set has its link up (no wait). */
int dpdk_set_link_up(const struct dpdk_set *set, uint16_t i);
/* mbufs needed per queue pool for 'cfg' (formula in ethdev_dpdk.c). */
uint64_t dpdk_set_mbufs_needed(const struct dpdk_set_cfg *cfg, unsigned cache);

#endif
