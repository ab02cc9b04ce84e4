/* SPDX-License-Identifier: MIT */
/*
 * What ina-testbed tells each process and interface, as pure functions of
 * the topology (no system calls, so unit-testable): whether `run` can play
 * a topology, the links' addresses and interface names, a host's port spec
 * (the link's MTU, loss and latency for the fault injector) and its first
 * retransmission timeout.
 */
#ifndef TB_PLAN_H
#define TB_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "tiers.h"
#include "topology.h"

#define PLAN_SWITCH_UDP_PORT 9150
/* Over DPDK every switch answers for this address on all its links. */
#define PLAN_DPDK_SWITCH_IP "10.99.0.1"

/*
 * 0 if run can play 't' (over DPDK if 'dpdk'); else the reason in 'err' and
 * TB_EXIT_UNSUPPORTED (any attack, which ina-sim alone plays; a job across switch tiers with data from a file, in bf16,
 * over DPDK, or whose rack is another job's root; more members on a switch
 * than its bitmaps hold; with DPDK a host in two jobs, an MTU above 1500)
 * or TB_EXIT_USAGE (a block that does not fit its link's MTU or a
 * rack's uplink, a host without a link to its switch).
 */
int plan_check(const struct topology *t, int dpdk, char *err, size_t errlen);

/* Link i's address at end a (the host) or b, "10.(100 + i/256).(i%256).{2,1}",
 * with "/24" if 'with_len'. */
void plan_link_addr(uint32_t i, int side_a, int with_len, char *buf, size_t size);

/* Link i's interface name at both ends (each in its own namespace): "v<i>". */
void plan_link_if(uint32_t i, char *buf, size_t size);

/* "f32", "i32" or "bf16". */
const char *plan_encoding(uint8_t encoding);

/*
 * The --port spec of the host on link i (its end a): udp, or dpdk owning the
 * veth, with the link's MTU, its loss as drop= (the udp port drops on send
 * and on receive, each way once; the dpdk port on receive only, so there the
 * round trip's 1 - (1 - loss)^2) and its latency as delay_us= of twice the
 * one-way latency on every packet received, and 'seed'.
 */
void plan_host_port(const struct topo_link *l, uint32_t i, int dpdk, uint64_t seed, char *buf,
		    size_t size);

/*
 * ina-host's --rto-us for a host of 'job' on 'l': above the injected round
 * trip and a lane's worth of frames queued in the shaper; 0 when neither
 * applies (ina-host's default).
 */
uint64_t plan_host_rto_us(const struct topo_link *l, const struct topo_job *job);

/*
 * ina-host's --seed for host 'host' of synthetic job 'job' with tree 'tr':
 * the job's seed on one switch; across switches each switch's hosts get
 * their own (the job's seed mixed with the switch's node index), since they
 * generate their data from their rank on their switch (expect.h).
 */
uint64_t plan_host_seed(const struct topo_job *job, const struct tiers *tr, int host);

#endif
