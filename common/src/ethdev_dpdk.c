/* SPDX-License-Identifier: MIT */
/*
 * Ethdev sets (ethdev_dpdk.h): configure and start the ethdevs of a dpdk port
 * once, with K rx/tx queue pairs each, one mbuf pool per queue, and share
 * them between the K port objects (one per lcore) that poll queue 0..K-1.
 * Every start-up failure becomes -errno plus a sentence saying what to do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "ethdev_dpdk.h"
#include "ina/util.h"
#include "memfd_guard_dpdk.h"

#define SET_HDR_ROOM 64	     /* data room of a header mbuf, past the headroom */
#define MEMIF_DEF_BSIZE 2048 /* net_memif's buffer size without bsize= */

/* The set each ethdev belongs to, NULL when free. */
static struct dpdk_set *set_of[RTE_MAX_ETHPORTS];

static unsigned
pool_cache(uint32_t nb_mbufs)
{
	if (nb_mbufs >= 4096)
		return 256;
	return nb_mbufs >= 1024 ? 64 : 0;
}

/*
 * Per queue pool: each of the set's ethdevs can hold rxd mbufs in its rx ring
 * and txd in its tx ring for this queue, each lcore's mempool cache can hide
 * 'cache', a burst is in the port's hands (64), and the caller keeps
 * 'reserve' in flight (a host engine's window).
 */
uint64_t
dpdk_set_mbufs_needed(const struct dpdk_set_cfg *cfg, unsigned cache)
{
	return (uint64_t)cfg->nb * (cfg->rxd + cfg->txd) + (uint64_t)cache * rte_lcore_count() +
	       64 + cfg->reserve;
}

/* Whether a driver is known to send mbuf chains without advertising it. */
static int
driver_takes_chains(const char *name)
{
	static const char *const known[] = { "net_memif", "net_ring", "net_af_packet",
					     "net_tap",	  "net_null", "net_pcap" };

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(name, known[i]) == 0)
			return 1;
	return 0;
}

/* Virtual drivers that advertise 1518-byte frames but carry larger ones;
 * af_packet and tap are not among them: their frame size is a devarg
 * (framesz=) and they drop what exceeds it. memif carries frames up to its
 * buffer size (bsize=), checked by set_check_frames(). */
static int
driver_any_frame(const char *name)
{
	return strcmp(name, "net_memif") == 0 || strcmp(name, "net_ring") == 0 ||
	       strcmp(name, "net_null") == 0;
}

/*
 * The buffer size of a net_memif ethdev: its vdev argument bsize= (the last
 * one, as memif reads them), else memif's default of 2048 bytes.
 */
static uint32_t
memif_bsize(const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da = info->device ? rte_dev_devargs(info->device) : NULL;
	const char *s = da ? da->args : NULL;
	uint32_t bsize = MEMIF_DEF_BSIZE;

	while (s && *s) {
		if (strncmp(s, "bsize=", 6) == 0) {
			unsigned long v = strtoul(s + 6, NULL, 10);

			if (v > 0 && v <= UINT16_MAX)
				bsize = (uint32_t)v;
		}
		s = strchr(s, ',');
		if (s)
			s++;
	}
	return bsize;
}

/*
 * Before the pools exist: whether every ethdev can carry frames of the MTU
 * (memif: one frame per memif buffer), and the mbuf data room that needs.
 *
 * net_memif (copy mode) splits a frame longer than its buffer size (bsize=,
 * default 2048) over several descriptors, and its tx breaks there when the
 * ring is nearly full: it takes a further slot while any is free, without
 * counting the one it is filling, so it writes one slot past the free ones
 * and its 16-bit free count wraps to 65535. It then overwrites descriptors
 * the peer has not read yet and publishes a head more than a ring ahead of
 * the tail; the peer reads the ring round and round: stale and half-written
 * frames by the million (a packet storm: duplicates, not_ip, malformed; the
 * job hangs). Seen with DPDK 22.11 at mtu=9000: 268 M frames received for
 * about 15 k sent. Later versions add a tx fast path (when bsize >= the
 * mbufs' data room) that copies a segment into one buffer without checking
 * bsize, and an rx fast path only when the mbufs hold a whole buffer. So: a
 * frame must fit one memif buffer (mtu + 14 <= bsize, else open fails and
 * says which bsize= to add), and the mbufs hold a whole memif buffer.
 */
static int
set_check_frames(struct dpdk_set *set, char *err, size_t err_size)
{
	const struct dpdk_set_cfg *cfg = &set->cfg;
	uint32_t frame = RTE_ETHER_HDR_LEN + cfg->mtu;

	set->buf_min = RTE_MAX((uint32_t)RTE_MBUF_DEFAULT_DATAROOM, RTE_ALIGN(frame, 64));
	for (uint16_t i = 0; i < cfg->nb; i++) {
		struct rte_eth_dev_info info;
		uint32_t bsize;
		int ret = rte_eth_dev_info_get(cfg->ids[i], &info);

		if (ret < 0) {
			ina_errf(err, err_size, "ethdev %u will not give its info: %s", cfg->ids[i],
				 rte_strerror(-ret));
			return ret;
		}
		if (strcmp(info.driver_name, "net_memif") != 0)
			continue;
		bsize = memif_bsize(&info);
		if (frame > bsize) {
			ina_errf(err, err_size,
				 "ethdev %u (net_memif) has %u-byte buffers (vdev argument bsize=, "
				 "default %u), too small for the %u-byte frames of mtu=%u: memif "
				 "would split them over several buffers, which corrupts its ring "
				 "(a packet storm); add bsize=%u to the --vdev of both memif ends "
				 "(server and client), or lower mtu= to %u",
				 cfg->ids[i], bsize, MEMIF_DEF_BSIZE, frame, cfg->mtu,
				 RTE_ALIGN(frame, 1024), bsize - RTE_ETHER_HDR_LEN);
			return -EINVAL;
		}
		if (bsize > set->buf_min)
			set->buf_min = bsize;
	}
	if (set->buf_min > UINT16_MAX - RTE_PKTMBUF_HEADROOM) {
		ina_errf(err, err_size,
			 "mbufs of %u bytes (a memif's bsize=) exceed DPDK's %u: "
			 "lower bsize=",
			 set->buf_min, UINT16_MAX - RTE_PKTMBUF_HEADROOM);
		return -EINVAL;
	}
	return 0;
}

/* Drivers over kernel interfaces, where a local sender's UDP checksum may be
 * left partial (veth and tap offload it to a NIC that is not there). */
static int
driver_on_kernel(const char *name)
{
	return strcmp(name, "net_af_packet") == 0 || strcmp(name, "net_af_xdp") == 0 ||
	       strcmp(name, "net_tap") == 0;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * A memif client connects in its start: the start fails while the server is
 * not there yet, and a connection made before the server's own start never
 * comes up. Within link_wait_ms both are retried (start again, stop and start
 * again). Other drivers are never restarted: that would only restart a NIC's
 * autonegotiation.
 */
static int
is_memif(const struct dpdk_set *set, uint16_t i)
{
	return strcmp(set->names[i], "net_memif") == 0;
}

/* Starts a memif ethdev with EAL's memory descriptors as they were
 * (memfd_guard_dpdk.h): its zero-copy client shares them. */
static int
memif_start(const struct dpdk_set *set, uint16_t i, char *err, size_t err_size)
{
	int ret = memfd_guard_restore(err, err_size);

	return ret < 0 ? ret : rte_eth_dev_start(set->cfg.ids[i]);
}

/* Stops a memif ethdev and puts back what its stop closed. */
static void
memif_stop(const struct dpdk_set *set, uint16_t i)
{
	char ignored[8];

	(void)rte_eth_dev_stop(set->cfg.ids[i]);
	(void)memfd_guard_restore(ignored, sizeof(ignored));
}

static int
same_ids(const struct dpdk_set_cfg *a, const struct dpdk_set_cfg *b)
{
	return a->nb == b->nb && memcmp(a->ids, b->ids, a->nb * sizeof(a->ids[0])) == 0;
}

/* The ethdev ids that exist, "0-3" style, for messages. */
static void
ids_str(char *buf, size_t size)
{
	size_t used = 0;
	uint16_t id;

	buf[0] = '\0';
	RTE_ETH_FOREACH_DEV(id)
	{
		int w = snprintf(buf + used, size - used, "%s%u", used ? "," : "", id);

		if (w < 0 || (size_t)w >= size - used)
			break;
		used += (size_t)w;
	}
}

static void
drain_and_stop(struct dpdk_set *set, const uint8_t *started)
{
	struct rte_mbuf *mbufs[32];

	for (uint16_t i = 0; i < set->cfg.nb; i++) {
		uint16_t id = set->cfg.ids[i];
		uint16_t k;

		if (!started[i])
			continue;
		/* No mbuf of ours may outlive the pools in an rx queue. Bounded:
		 * net_null, for one, never runs dry. */
		for (uint16_t q = 0; q < set->cfg.queues; q++) {
			unsigned bursts = set->cfg.rxd / 32 + 64;

			while (bursts-- && (k = rte_eth_rx_burst(id, q, mbufs, 32)) > 0)
				rte_pktmbuf_free_bulk(mbufs, k);
		}
		if (is_memif(set, i))
			memif_stop(set, i);
		else
			(void)rte_eth_dev_stop(id);
	}
}

static void
set_free(struct dpdk_set *set, const uint8_t *started)
{
	drain_and_stop(set, started);
	for (uint16_t q = 0; q < DPDK_MAX_QUEUES; q++) {
		rte_mempool_free(set->pools[q]);
		rte_mempool_free(set->hdr_pools[q]);
	}
	free(set);
}

/* Touches every page of one memory chunk of a pool for writing, leaving its
 * bytes as they are (the objects are initialised already). */
static void
chunk_prefault(struct rte_mempool *mp, void *opaque, struct rte_mempool_memhdr *memhdr,
	       unsigned mem_idx)
{
	volatile uint8_t *p = memhdr->addr;
	size_t page = (size_t)(uintptr_t)opaque;

	(void)mp;
	(void)mem_idx;
	for (size_t off = 0; off < memhdr->len; off += page)
		p[off] = p[off];
}

/* A pool's pages faulted in now rather than by the first packets that use
 * each mbuf (without hugepages: 4 KiB pages of one memfd). */
static void
pool_prefault(struct rte_mempool *mp)
{
	rte_mempool_mem_iter(mp, chunk_prefault, (void *)(uintptr_t)sysconf(_SC_PAGESIZE));
}

static int
set_pools(struct dpdk_set *set, int socket, char *err, size_t err_size)
{
	static unsigned seq;
	const struct dpdk_set_cfg *cfg = &set->cfg;
	unsigned cache = pool_cache(cfg->nb_mbufs);
	uint64_t needed = dpdk_set_mbufs_needed(cfg, cache);
	uint32_t nb_hdr = cfg->nb * (cfg->txd + 64) + 255;
	char name[RTE_MEMPOOL_NAMESIZE];
	/* A whole frame (and a whole memif buffer) fits one mbuf: rx never
	 * needs scatter (set_check_frames). */
	uint16_t data_room = (uint16_t)(RTE_PKTMBUF_HEADROOM + set->buf_min);

	if (needed > cfg->nb_mbufs) {
		ina_errf(err, err_size,
			 "too few mbufs: mbufs=%u per queue, needs %llu = %u ethdevs x (%u rx + %u "
			 "tx descriptors) + %u cache x %u lcores + 64 + reserve=%u; raise mbufs=N "
			 "(or lower rxd=/txd=)",
			 cfg->nb_mbufs, (unsigned long long)needed, cfg->nb, cfg->rxd, cfg->txd,
			 cache, rte_lcore_count(), cfg->reserve);
		return -ENOBUFS;
	}
	for (uint16_t q = 0; q < cfg->queues; q++) {
		snprintf(name, sizeof(name), "ina_m%u_q%u", seq, q);
		set->pools[q] = rte_pktmbuf_pool_create(name, cfg->nb_mbufs, cache,
							(uint16_t)cfg->priv_size, data_room,
							socket);
		snprintf(name, sizeof(name), "ina_h%u_q%u", seq, q);
		if (set->pools[q])
			set->hdr_pools[q] = rte_pktmbuf_pool_create(
				name, nb_hdr, 0, 0, RTE_PKTMBUF_HEADROOM + SET_HDR_ROOM, socket);
		if (!set->pools[q] || !set->hdr_pools[q]) {
			int e = rte_errno ? rte_errno : ENOMEM;

			ina_errf(err, err_size,
				 "cannot create %u mbufs (+%u header mbufs) for queue %u: %s; give "
				 "EAL more memory (-m MB) or lower mbufs=N",
				 cfg->nb_mbufs, nb_hdr, q, rte_strerror(e));
			seq++;
			return -e;
		}
		pool_prefault(set->pools[q]);
		pool_prefault(set->hdr_pools[q]);
	}
	seq++;
	return 0;
}

/* Configures and starts ethdev i of the set. */
static int
set_start_one(struct dpdk_set *set, uint16_t i, int socket, uint64_t deadline_ms, char *err,
	      size_t err_size)
{
	struct dpdk_set_cfg *cfg = &set->cfg;
	uint16_t id = cfg->ids[i];
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	struct rte_ether_addr mac;
	uint64_t ck_tx = RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
	uint64_t ck_rx = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
	uint16_t rxd = (uint16_t)cfg->rxd, txd = (uint16_t)cfg->txd;
	uint32_t overhead;
	const char *what;
	int ret;

	ret = rte_eth_dev_info_get(id, &info);
	if (ret < 0) {
		what = "info";
		goto fail;
	}
	snprintf(set->names[i], sizeof(set->names[i]), "%s", info.driver_name);
	if (cfg->queues > info.max_rx_queues || cfg->queues > info.max_tx_queues) {
		ina_errf(err, err_size,
			 "ethdev %u (%s) has %u rx / %u tx queues, queues=%u asks for more", id,
			 set->names[i], info.max_rx_queues, info.max_tx_queues, cfg->queues);
		return -EINVAL;
	}
	memset(&conf, 0, sizeof(conf));
	/* Ethernet overhead as ethdev counts it, to compare with max_rx_pktlen. */
	overhead = info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu
			   ? info.max_rx_pktlen - info.max_mtu
			   : RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
	if (cfg->mtu <= info.max_mtu && cfg->mtu + overhead <= info.max_rx_pktlen) {
		conf.rxmode.mtu = cfg->mtu;
	} else if (!driver_any_frame(info.driver_name)) {
		ina_errf(err, err_size,
			 "ethdev %u (%s) takes an MTU of %u at most (frames of %u bytes): lower "
			 "mtu=%u",
			 id, set->names[i],
			 RTE_MIN((uint32_t)info.max_mtu, info.max_rx_pktlen - overhead),
			 info.max_rx_pktlen, cfg->mtu);
		return -EINVAL;
	}
	/* else a virtual device (memif, ring...) that advertises 1518-byte frames
	 * but carries larger ones (memif: up to bsize=, set_check_frames): its
	 * MTU stays the default. */
	/* K queues on a NIC: spread flows by IPv4 addresses and UDP ports (RSS)
	 * where it can; virtual devices (ring, memif) map queues to their own
	 * rings instead. Untested here: no NIC. */
	if (cfg->queues > 1 && (info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP))) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads &
						   (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP);
	}
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	set->chains_ok[i] = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) ||
			    driver_takes_chains(info.driver_name);
	set->kernel_peer[i] = (uint8_t)driver_on_kernel(info.driver_name);
	if (cfg->offload && (info.tx_offload_capa & ck_tx) == ck_tx) {
		conf.txmode.offloads |= ck_tx;
		set->tx_csum[i] = 1;
	}
	if (cfg->offload && (info.rx_offload_capa & ck_rx) == ck_rx) {
		conf.rxmode.offloads |= ck_rx;
		set->rx_csum[i] = 1;
	}
	ret = rte_eth_dev_configure(id, cfg->queues, cfg->queues, &conf);
	if (ret < 0) {
		what = "configure";
		goto fail;
	}
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(id, &rxd, &txd);
	if (ret < 0) {
		what = "descriptor limits";
		goto fail;
	}
	for (uint16_t q = 0; q < cfg->queues; q++) {
		ret = rte_eth_rx_queue_setup(id, q, rxd, (unsigned)socket, NULL, set->pools[q]);
		if (ret < 0) {
			what = "rx queue setup";
			goto fail;
		}
		ret = rte_eth_tx_queue_setup(id, q, txd, (unsigned)socket, NULL);
		if (ret < 0) {
			what = "tx queue setup";
			goto fail;
		}
	}
	if (!is_memif(set, i)) {
		ret = rte_eth_dev_start(id);
	} else {
		err[0] = '\0';
		ret = memfd_guard_take(err, err_size);
		if (ret == 0)
			ret = memif_start(set, i, err, err_size);
		while (ret < 0 && !err[0] && now_ms() < deadline_ms) {
			sleep_ms(100);
			ret = memif_start(set, i, err, err_size);
		}
		if (err[0])
			return ret; /* the guard said why */
	}
	if (ret < 0) {
		what = "start";
		goto fail;
	}
	ret = rte_eth_macaddr_get(id, &mac);
	if (ret < 0 || rte_is_zero_ether_addr(&mac)) {
		/* ring and null ethdevs: a locally administered "\2ina" + id. */
		const uint8_t own[6] = { 0x02, 0x69, 0x6e, 0x61, (uint8_t)(id >> 8), (uint8_t)id };

		memcpy(mac.addr_bytes, own, 6);
		(void)rte_eth_dev_default_mac_addr_set(id, &mac);
	}
	memcpy(set->macs[i], mac.addr_bytes, 6);
	return 0;

fail:
	ina_errf(err, err_size, "ethdev %u (%s) will not %s: %s", id,
		 set->names[i][0] ? set->names[i] : "?", what, rte_strerror(-ret));
	return ret;
}

int
dpdk_set_link_up(const struct dpdk_set *set, uint16_t i)
{
	struct rte_eth_link link;

	if (rte_eth_link_get_nowait(set->cfg.ids[i], &link) < 0)
		return 1; /* no link information: assume up */
	return link.link_status == RTE_ETH_LINK_UP;
}

static int
set_wait_links(struct dpdk_set *set, uint64_t deadline_ms, char *err, size_t err_size)
{
	uint64_t restart = now_ms() + 500;

	for (uint16_t i = 0; i < set->cfg.nb; i++) {
		int ret;

		while (!dpdk_set_link_up(set, i)) {
			uint64_t now = now_ms();

			if (now >= deadline_ms) {
				ina_errf(err, err_size,
					 "link of ethdev %u (%s) still down after link_wait_ms=%u "
					 "(is the peer up? a memif client needs its server "
					 "running, a server waits for its client)",
					 set->cfg.ids[i], set->names[i], set->cfg.link_wait_ms);
				return -ENETDOWN;
			}
			if (is_memif(set, i) && now >= restart) {
				memif_stop(set, i);
				err[0] = '\0';
				ret = memif_start(set, i, err, err_size);
				if (ret < 0 && err[0])
					return ret;
				restart = now + 500;
			}
			sleep_ms(10);
		}
		/* A connection made closed the descriptors: keep them for EAL. */
		if (is_memif(set, i) && (ret = memfd_guard_restore(err, err_size)) < 0)
			return ret;
	}
	return 0;
}

static int
set_join(struct dpdk_set *set, const struct dpdk_set_cfg *cfg, uint16_t queue, char *err,
	 size_t err_size)
{
	if (!same_ids(&set->cfg, cfg) || set->cfg.queues != cfg->queues ||
	    set->cfg.mtu != cfg->mtu) {
		ina_errf(
			err, err_size,
			"ethdev %u is already open in a dpdk port with other ethdevs, queues=%u or "
			"mtu=%u",
			cfg->ids[0], set->cfg.queues, set->cfg.mtu);
		return -EBUSY;
	}
	if (set->open_mask & (1u << queue)) {
		ina_errf(err, err_size, "queue %u of ethdev %u is already open", queue,
			 cfg->ids[0]);
		return -EBUSY;
	}
	set->open_mask |= 1u << queue;
	set->refs++;
	return 0;
}

int
dpdk_set_open(const struct dpdk_set_cfg *cfg, uint16_t queue, struct dpdk_set **out, char *err,
	      size_t err_size)
{
	uint8_t started[DPDK_MAX_ETH] = { 0 };
	struct dpdk_set *set;
	uint64_t deadline_ms;
	char ids[128];
	int socket, ret;

	*out = NULL;
	if (rte_eth_dev_count_avail() == 0) {
		ina_errf(err, err_size, "no DPDK port: pass --vdev=... or bind a NIC");
		return -ENODEV;
	}
	if (cfg->nb == 0 || cfg->nb > DPDK_MAX_ETH || cfg->queues == 0 ||
	    cfg->queues > DPDK_MAX_QUEUES || queue >= cfg->queues) {
		ina_errf(err, err_size,
			 "bad ethdev set: %u ethdevs (1..%u), queue %u of %u (max %u)", cfg->nb,
			 DPDK_MAX_ETH, queue, cfg->queues, DPDK_MAX_QUEUES);
		return -EINVAL;
	}
	for (uint16_t i = 0; i < cfg->nb; i++) {
		if (!rte_eth_dev_is_valid_port(cfg->ids[i])) {
			ids_str(ids, sizeof(ids));
			ina_errf(err, err_size, "no ethdev %u (ethdevs here: %s)", cfg->ids[i],
				 ids);
			return -ENODEV;
		}
		if (set_of[cfg->ids[i]] && set_of[cfg->ids[i]] != set_of[cfg->ids[0]]) {
			ina_errf(err, err_size, "ethdev %u is already open in another dpdk port",
				 cfg->ids[i]);
			return -EBUSY;
		}
	}
	if (set_of[cfg->ids[0]]) {
		ret = set_join(set_of[cfg->ids[0]], cfg, queue, err, err_size);
		if (ret == 0)
			*out = set_of[cfg->ids[0]];
		return ret;
	}

	set = calloc(1, sizeof(*set));
	if (!set)
		return -ENOMEM;
	set->cfg = *cfg;
	socket = rte_eth_dev_socket_id(cfg->ids[0]);
	if (socket < 0)
		socket = (int)rte_socket_id();
	deadline_ms = now_ms() + cfg->link_wait_ms;
	ret = set_check_frames(set, err, err_size);
	if (ret == 0)
		ret = set_pools(set, socket, err, err_size);
	for (uint16_t i = 0; ret == 0 && i < cfg->nb; i++) {
		ret = set_start_one(set, i, socket, deadline_ms, err, err_size);
		started[i] = ret == 0;
	}
	if (ret == 0 && cfg->link_wait_ms)
		ret = set_wait_links(set, deadline_ms, err, err_size);
	if (ret < 0) {
		set_free(set, started);
		return ret;
	}
	for (uint16_t i = 0; i < cfg->nb; i++)
		set_of[cfg->ids[i]] = set;
	set->refs = 1;
	set->open_mask = 1u << queue;
	*out = set;
	return 0;
}

void
dpdk_set_close(struct dpdk_set *set, uint16_t queue)
{
	uint8_t started[DPDK_MAX_ETH];

	if (!set)
		return;
	set->open_mask &= ~(1u << queue);
	if (--set->refs > 0)
		return;
	for (uint16_t i = 0; i < set->cfg.nb; i++)
		set_of[set->cfg.ids[i]] = NULL;
	memset(started, 1, sizeof(started));
	set_free(set, started);
}
