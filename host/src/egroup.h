/* SPDX-License-Identifier: MIT */
/*
 * One worker's engines towards K switches: the tensor of every allreduce is
 * cut into K contiguous runs of blocks, run k (blocks ceil(k nb / K) up to
 * ceil((k + 1) nb / K)) allreduced by engine k with switch k, each an
 * ordinary job of its own on an ordinary switch (same job id, world, lanes
 * and token). With K = 1 every call is the engine's own. The same calls as
 * engine.h for what libina needs, and as pure: packets and time in, packets
 * out, no clock, no socket. A partition map with layout PARTITION_RANGES
 * (partition.h) decides which blocks make up each run.
 */
#ifndef INA_EGROUP_H
#define INA_EGROUP_H

#include <stdint.h>

#include "engine.h"

#define EGROUP_MAX 16

/* K engines of config 'cfg', engine k towards switches[k]. K > 1 needs no
 * replica and no ssp. NULL with errno (EINVAL, ENOMEM). */
struct egroup *egroup_create(const struct engine_config *cfg, const struct ina_peer *switches,
			     uint16_t k);
void egroup_destroy(struct egroup *g); /* Accepts NULL. */

uint16_t egroup_count(const struct egroup *g);
/* The fewest lanes any engine runs on (engine_lanes(): what its switch
 * granted, after a give-back too). */
uint16_t egroup_lanes(const struct egroup *g);
/* Engine 'k', for what only one engine has (ssp, a replica: K = 1). */
struct engine *egroup_engine(const struct egroup *g, uint16_t k);

/* The first element and the length of switch k's run of an n-element tensor
 * in blocks of B (length 0: the run is empty and engine k sits the round
 * out, on every worker alike). */
void egroup_run(uint16_t count, uint16_t k, size_t n, uint16_t block_size, size_t *off,
		size_t *len);

/* What switch k's runs carry XORed into the tensor id (0 for switch 0). */
uint32_t egroup_salt(uint16_t k);

int egroup_join(struct egroup *g, uint64_t now_ns);
/* engine_allreduce() of each non-empty run on its engine: 0, or what
 * engine_allreduce() returns (an engine's error, -EBUSY, -EINVAL), checked
 * on every engine before any starts, so a round runs on all or on none. */
int egroup_allreduce(struct egroup *g, uint32_t tensor_id, const float *in, float *out, size_t n,
		     uint16_t block_size, enum engine_op op, uint64_t now_ns);
/* engine_set_result_filter() for the next allreduce: 'deferred' has one
 * byte per block of the whole tensor; each engine marks its run's. Call it
 * right before egroup_allreduce(), which applies it. */
void egroup_set_result_filter(struct egroup *g, float bound, uint8_t *deferred);
/* engine_set_blocks() for the next allreduce (which then takes in = out =
 * NULL): 'b' lists the whole tensor's blocks (base 0), its dense output is
 * the whole tensor's; each engine gets its run's part. Applied by
 * egroup_allreduce(). */
void egroup_set_blocks(struct egroup *g, const struct engine_blocks *b);
/* engine_set_cut() for the next allreduce: every engine of the group cuts
 * its run's blocks alike (applied by egroup_allreduce()). */
void egroup_set_cut(struct egroup *g, uint8_t sub_log);
void egroup_finish(struct egroup *g, uint64_t now_ns);
void egroup_leave(struct egroup *g, uint64_t now_ns);
/* Each packet to the engine of the switch it came from (engine 0 when it
 * came from none of them: it drops and counts it). */
void egroup_rx(struct egroup *g, struct ina_pkt **pkts, uint16_t n, uint64_t now_ns);
uint16_t egroup_tx(struct egroup *g, uint64_t now_ns, struct ina_pkt **out, uint16_t max);
/* The KEEPALIVEs due, each engine's to its own switch (and replica standing
 * by: engine_keepalive), at most 'max': no other timer runs. */
uint16_t egroup_keepalive(struct egroup *g, uint64_t now_ns, struct ina_pkt **out, uint16_t max);
/*
 * The group's phase: JOINING while any engine joins, else RUNNING while any
 * runs, LEAVING, FINISHING while any does, else READY if any is ready, else
 * CLOSED (or IDLE before the join).
 */
int egroup_phase(const struct egroup *g);
/* The first engine's error, 0 for none; its sentence names the switch. */
int egroup_error(const struct egroup *g);
const char *egroup_error_msg(struct egroup *g);
const char *egroup_stall(struct egroup *g);
uint64_t egroup_next_deadline(const struct egroup *g);
/* The engines' counters added up into 'out' (K = 1: the engine's own). */
void egroup_stats(const struct egroup *g, struct engine_stats *out);

#endif
