/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the switch's aggregation pipeline (switch_sim/pipeline.c)
 * fed a sequence of packets and clock ticks cut from the input.
 *
 * Input: 8 configuration bytes (slots, slot width, jobs, lane partitions and,
 * unpartitioned, the role: none, primary, replica or a rack with an uplink
 * to a spine; linger, WAIT
 * interval, idle timeout, answer pool size, outputs held back),
 * then operations, each an opcode byte and its arguments: a raw packet
 * (length-prefixed bytes), a JOIN, DATA, FIN, KEEPALIVE or LEAVE built valid for one of
 * four jobs (the epoch learnt from the switch's JOIN_ACK or a replica's
 * FAILOVER, the block from its last RESULT, so that the fuzzer gets past
 * validation into the lane protocol; a tensor's blocks whole or cut into
 * sub-blocks, docs/PROTOCOL.md 2.7, with a valid mask made from the input),
 * a JOIN from a rank's second address (a rank that moves, echoing the
 * cookie that address was sent), a standby JOIN or a FAILOVER, a copy of
 * the last packet as the primary's REPL, on a rack the spine's answer to
 * the rack's last packet upstream (JOIN_ACK, RESULT, FIN_ACK or ERROR), a
 * byte of the last packet
 * corrupted, a packet duplicated, a
 * burst sent (to pipeline_rx_burst, or to pipeline_rx_quiet as a partition
 * follower does), the clock advanced, pipeline_tick(_freed), pipeline_job_free,
 * outputs held back to drain the answer pool (no_buffer), dumps. A pipeline
 * is created for each input, so that every run is deterministic.
 *
 * Tenant mode (issue 19), for some values of the partition/role byte: the
 * jobs belong to tenants 1, 2 and 0x80 (the fourth's tenant, 0xff, does not
 * exist), every packet pushed is tagged under its job's key (a raw one
 * under the key its job id names), so that corruption, duplicates and
 * replays reach the switch with good or bad tags.
 *
 * Checked after every step:
 *  - every output is a valid packet the switch sends (validated alone, and
 *    against the job its JOIN_ACK described), from rank 0xffff, within its
 *    buffer's capacity, with a readable destination; at most one per input;
 *  - no packet is lost or leaked: the pools' packets out equal the packets
 *    the harness holds (every input is freed or reused, every output freed
 *    here; LeakSanitizer checks the rest), and each buffer is its own
 *    allocation of exactly its capacity, so a write past 'cap' is a report;
 *  - completion by count: a RESULT (fanned out to every rank of the job, or
 *    a shadow copy), or a primary's REPL, names a block for which every rank
 *    sent valid DATA (not checked on a replica, which sends on REPLs; on a
 *    rack too, whose RESULTs wait for every local rank's DATA as well);
 *  - a rack sends upstream only JOIN, DATA, FIN and LEAVE, to the spine alone, as
 *    its configured rank of the job;
 *  - counters agree with what came out: rx and tx counts, results (fan-outs),
 *    results_empty, results_deferred, result_bytes, shadow_replies and waits
 *    exactly (a primary's REPLs as the RESULTs they stand for, and counted in
 *    replicated; on a replica RESULTs as results, shadow replies and REPLs
 *    sent on together); FAILOVER announcements as takeovers and repeats;
 *    JOIN_ACK, FIN_ACK and ERROR answers within joins, fins, leaves;
 *    drops at most the packets received; pipeline_rx_quiet changes no counter;
 *  - tenant mode: every output carries its job's tag, and a packet that
 *    fails the tag (or a replayed JOIN from elsewhere) is never answered;
 *  - the slot pool: free slots never exceed the pool, all free with no job,
 *    jobs within max_jobs and equal to admitted - freed; after a tick past
 *    every idle and linger time, no job and every slot free.
 */
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "ina/auth.h"
#include "ina/lane.h"
#include "ina/log.h"
#include "ina/pkt.h"
#include "ina/subblock.h"
#include "ina/wire.h"
#include "pipeline.h"
#include "pipeline_dump.h"
#include "pipeline_log.h"

#define MAX_BURST 8
#define MAX_HELD 8
#define NB_JOBS 4
#define MAX_LANES 8
#define MAX_SLOT_ELEMS 64
#define BIG_CAP 2048
#define SMALL_CAP 64
#define RAW_MAX 600
#define MAX_OPS 256
#define SEC 1000000000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A job as its workers see it. */
struct fjob {
	uint32_t id;
	uint64_t token;
	int shaped; /* world..enc chosen */
	uint16_t world, lanes, max_block;
	uint8_t enc;
	int acked;		      /* a JOIN_ACK told the epoch */
	struct ina_job_params params; /* as the last JOIN_ACK said */
	/* The tensor DATA packets are about, and per lane the block the last
	 * RESULT announced (INA_BLOCK_END: none) and its version bit. */
	uint32_t tensor_id, round, tensor_len;
	uint16_t block_size;
	uint8_t sub_log; /* the tensor's cut: 0, or its blocks' sub-blocks */
	uint32_t next[MAX_LANES];
	uint8_t ver[MAX_LANES];
	/* The last result's block and version bit, for retransmissions. */
	uint32_t last[MAX_LANES];
	uint8_t last_ver[MAX_LANES];
	/* With JOIN cookies: the cookie each rank's address was sent, and
	 * the one its second address was (a rank that moves: op_join). */
	uint64_t cookie[INA_MAX_WORLD];
	uint64_t cookie_moved[INA_MAX_WORLD];
};

/* Which ranks sent a valid DATA packet for one block of one job run. */
#define MAX_SEEN 1024
struct seen {
	uint32_t job_id, epoch;
	uint16_t lane, block_size;
	uint8_t sub_log;
	uint32_t tensor_id, round, tensor_len, block;
	uint64_t ranks;
};

struct fz {
	struct fz_pool big, small, answers;
	struct seen seen[MAX_SEEN];
	unsigned nb_seen;
	struct pipeline_config cfg;
	struct pipeline *p;
	uint64_t now;
	struct fjob jobs[NB_JOBS];
	struct ina_pkt *pending[MAX_BURST];
	uint16_t nb_pending;
	struct ina_pkt *held[MAX_HELD];
	uint16_t nb_held, hold_max;
	uint64_t rx, tx;	  /* packets given to / taken from rx_burst */
	uint64_t job_frees;	  /* pipeline_job_free() that freed a job */
	int quiet_used;		  /* rx_quiet admits jobs without counting them */
	uint8_t role;		  /* 0, ROLE_PRIMARY, ROLE_REPLICA or ROLE_RACK */
	uint8_t up_last[RAW_MAX]; /* a rack's last packet to the spine */
	uint32_t up_last_len;
	int from_spine;		       /* the burst had a packet from the spine */
	const struct tenants *tenants; /* tenant mode, else NULL */
};

#define ROLE_PRIMARY 1
#define ROLE_REPLICA 2
#define ROLE_RACK 3
#define PEER_PRIMARY 200 /* peer_of(job) of the primary and the replica */
#define PEER_REPLICA 201
#define PEER_SPINE 202 /* ... and of a rack's spine */
#define PEER_MOVED 1   /* byte 3 of a rank's second address (op_join) */

static FILE *devnull;
static int trace; /* INA_FUZZ_TRACE set: print every output and the counters */

static const uint32_t job_ids[NB_JOBS] = { 1, 2, 0x80000000u, 0xffffffffu };
/* Tenant mode: the jobs' ids name tenants 1, 2, 0x80 and 0xff (none). */
static const uint32_t tenant_job_ids[NB_JOBS] = { 0x01000001u, 0x02000002u, 0x80000000u,
						  0xff0000ffu };
static struct tenants fz_tenants;

static void
tenants_init(void)
{
	static const uint8_t idx[] = { 1, 2, 0x80 };

	memset(&fz_tenants, 0, sizeof(fz_tenants));
	for (unsigned i = 0; i < sizeof(idx); i++) {
		struct tenant *t = &fz_tenants.by_index[idx[i]];

		snprintf(t->name, sizeof(t->name), "t%u", idx[i]);
		t->index = idx[i];
		t->max_jobs = (uint16_t)(1 + i);
		t->max_slots = 4u + 8u * i;
		t->max_weight = 255;
		memset(t->key, 0x11 * (i + 1), sizeof(t->key));
		fz_tenants.count++;
	}
}

/* The key of the job a packet's job id names (a tenant that does not
 * exist: a key no one has). */
static void
key_of(const uint8_t *pkt, struct ina_job_key *k)
{
	uint32_t id_be, id;
	const struct tenant *t;

	memcpy(&id_be, pkt + 4, sizeof(id_be));
	id = be32toh(id_be);
	t = tenants_get(&fz_tenants, ina_tenant_of(id));
	if (t)
		ina_auth_job_key(t->key, id, k);
	else
		memset(k, 0x5a, sizeof(*k));
}

static void
peer_of(struct ina_peer *peer, unsigned job, unsigned rank)
{
	memset(peer, 0, sizeof(*peer));
	peer->len = 16;
	peer->bytes[0] = (uint8_t)job;
	peer->bytes[1] = (uint8_t)rank;
	peer->bytes[2] = (uint8_t)(rank >> 8);
}

static unsigned
pending_pools_out(const struct fz *f)
{
	return f->big.out + f->small.out + f->answers.out;
}

/* Every packet out of a pool is one the harness holds or has pending. */
static void
check_pools(const struct fz *f)
{
	FZ_CHECK(pending_pools_out(f) == (unsigned)f->nb_held + f->nb_pending);
}

static void
check_slots(const struct fz *f)
{
	const struct pipeline_stats *st = pipeline_stats(f->p);
	uint64_t drops = 0;

	FZ_CHECK(pipeline_free_slots(f->p) <= f->cfg.nb_slots);
	FZ_CHECK(pipeline_nb_jobs(f->p) <= f->cfg.max_jobs);
	if (pipeline_nb_jobs(f->p) == 0)
		FZ_CHECK(pipeline_free_slots(f->p) == f->cfg.nb_slots);
	if (!f->quiet_used)
		FZ_CHECK(pipeline_nb_jobs(f->p) ==
			 st->jobs_admitted - st->jobs_freed - f->job_frees);
	FZ_CHECK(st->jobs_expired <= st->jobs_freed);
	FZ_CHECK(st->results_empty + st->results_deferred <= st->results);
	FZ_CHECK(st->waits <= st->duplicates);
	FZ_CHECK(st->rx_pkts == f->rx);
	FZ_CHECK(st->tx_pkts == f->tx);
	for (int r = 0; r < INA_WIRE_REASON_MAX; r++)
		drops += st->drop_wire[r];
	for (int d = 0; d < PDROP_MAX; d++)
		drops += st->drop[d];
	FZ_CHECK(drops <= st->rx_pkts);
}

static struct fjob *
job_by_id(struct fz *f, uint32_t id)
{
	for (int k = 0; k < NB_JOBS; k++)
		if (f->jobs[k].id == id)
			return &f->jobs[k];
	return NULL;
}

static void
drop_held(struct fz *f)
{
	for (uint16_t i = 0; i < f->nb_held; i++)
		ina_pkt_free(f->held[i]);
	f->nb_held = 0;
}

static void
keep_or_free(struct fz *f, struct ina_pkt *o)
{
	if (f->hold_max == 0) {
		ina_pkt_free(o);
		return;
	}
	if (f->nb_held == f->hold_max) {
		ina_pkt_free(f->held[0]);
		memmove(f->held, f->held + 1, (f->nb_held - 1) * sizeof(f->held[0]));
		f->nb_held--;
	}
	f->held[f->nb_held++] = o;
}

static int
seen_match(const struct seen *e, const struct ina_hdr *h)
{
	return e->job_id == h->job_id && e->epoch == h->epoch && e->lane == h->lane &&
	       e->tensor_id == h->tensor_id && e->round == h->round &&
	       e->tensor_len == h->tensor_len && e->block == h->block &&
	       e->block_size == h->block_size && e->sub_log == h->sub_log;
}

static struct seen *
seen_find(struct fz *f, const struct ina_hdr *h)
{
	for (unsigned i = 0; i < f->nb_seen; i++)
		if (seen_match(&f->seen[i], h))
			return &f->seen[i];
	return NULL;
}

/* Remembers the rank of a valid DATA packet about to go in (and traces it). */
static void
note_data(struct fz *f, const struct ina_pkt *pkt)
{
	struct ina_hdr h;
	struct seen *e;

	enum ina_wire_reason r = ina_wire_validate(pkt->data, pkt->len, NULL, &h);

	if (trace && pkt->len >= INA_HDR_SIZE)
		fprintf(stderr,
			"in  %s (%s) job %u epoch %u rank %u lane %u tensor %u round %u"
			" len %u B %u k %u block %u next %u n %u bytes %u flags %#x\n",
			ina_wire_type_name(h.type), ina_wire_reason_name(r), h.job_id, h.epoch,
			h.rank, h.lane, h.tensor_id, h.round, h.tensor_len, h.block_size, h.sub_log,
			h.block, h.next, h.n_elems, pkt->len - INA_HDR_SIZE, h.flags);
	if (r != INA_WIRE_OK || h.type != INA_T_DATA || h.rank >= 64)
		return;
	e = seen_find(f, &h);
	if (!e) {
		FZ_CHECK(f->nb_seen < MAX_SEEN);
		e = &f->seen[f->nb_seen++];
		memset(e, 0, sizeof(*e));
		e->job_id = h.job_id;
		e->epoch = h.epoch;
		e->lane = h.lane;
		e->block_size = h.block_size;
		e->sub_log = h.sub_log;
		e->tensor_id = h.tensor_id;
		e->round = h.round;
		e->tensor_len = h.tensor_len;
		e->block = h.block;
	}
	e->ranks |= 1ull << h.rank;
}

/* What the outputs of one burst add up to, for the counters. */
struct tally {
	uint64_t results, results_empty, results_deferred, result_bytes;
	uint64_t shadow_replies, waits, join_acks, fin_acks, errors, errors_left, errors_dead;
	uint64_t cookies;    /* ERROR COOKIE to an unproven JOIN */
	uint64_t errors_old; /* UNSUPPORTED to a JOIN of the older version */
	uint64_t repls, announces;
	uint64_t up; /* a rack's packets to the spine */
};

/* Checks one output of the switch and learns from it. */
static void
check_output(struct fz *f, const struct ina_pkt *o, struct tally *t)
{
	struct ina_hdr h;
	struct fjob *j;
	enum ina_wire_reason r;

	FZ_CHECK(o->len >= INA_HDR_SIZE && o->len <= o->cap);
	if (o->data[0] == INA_WIRE_VERSION - 1) {
		/* The answer to a JOIN of the old version (PROTOCOL 2.8): an
		 * ERROR UNSUPPORTED in that version, no larger than the JOIN,
		 * counted as a bad_version drop, not as a JOIN. */
		uint8_t buf[INA_HDR_SIZE + sizeof(struct ina_wire_join)];

		FZ_CHECK(o->len <= sizeof(buf) && !o->dsts);
		memcpy(buf, o->data, o->len);
		buf[0] = INA_WIRE_VERSION;
		FZ_CHECK(ina_wire_validate(buf, o->len, NULL, &h) == INA_WIRE_OK);
		FZ_CHECK(h.type == INA_T_ERROR && h.status == INA_WERR_UNSUPPORTED);
		t->errors_old++;
		return;
	}
	r = ina_wire_validate(o->data, o->len, NULL, &h);
	if (r != INA_WIRE_OK)
		fprintf(stderr, "output type %u fails validation: %s\n", h.type,
			ina_wire_reason_name(r));
	FZ_CHECK(r == INA_WIRE_OK);
	if (f->role == ROLE_RACK && !o->dsts && ina_peer_equal(&o->peer, &f->cfg.uplink)) {
		/* The rack as a worker of the spine's job. */
		const struct pipeline_uplink_job *uj = NULL;

		for (uint16_t k = 0; k < f->cfg.nb_uplink_jobs; k++)
			if (f->cfg.uplink_jobs[k].job_id == h.job_id)
				uj = &f->cfg.uplink_jobs[k];
		FZ_CHECK(uj && h.rank == uj->rank);
		FZ_CHECK(h.type == INA_T_JOIN || h.type == INA_T_DATA || h.type == INA_T_FIN ||
			 h.type == INA_T_LEAVE);
		if (h.type == INA_T_JOIN)
			FZ_CHECK(h.epoch == 0);
		else
			FZ_CHECK(h.epoch != 0);
		if (trace)
			fprintf(stderr,
				"up  %s job %u epoch %u rank %u lane %u block %u next %u"
				" n %u exp %d flags %#x\n",
				ina_wire_type_name(h.type), h.job_id, h.epoch, h.rank, h.lane,
				h.block, h.next, h.n_elems, h.exp, h.flags);
		FZ_CHECK(o->len <= sizeof(f->up_last));
		memcpy(f->up_last, o->data, o->len);
		f->up_last_len = o->len;
		t->up++;
		return;
	}
	FZ_CHECK(h.rank == INA_RANK_SWITCH || h.type == INA_T_REPL);
	if (o->dsts) {
		FZ_CHECK(o->dst_mask != 0);
		for (int b = 0; b < 64; b++)
			if (o->dst_mask >> b & 1)
				FZ_CHECK(o->dsts[b].len <= INA_PEER_SIZE - 1);
	} else {
		FZ_CHECK(o->dst_mask == 0);
		FZ_CHECK(o->peer.len <= INA_PEER_SIZE - 1);
	}
	if (trace)
		fprintf(stderr,
			"out %s job %u epoch %u lane %u tensor %u round %u len %u B %u k %u"
			" block %u next %u n %u bytes %u flags %#x status %u\n",
			ina_wire_type_name(h.type), h.job_id, h.epoch, h.lane, h.tensor_id, h.round,
			h.tensor_len, h.block_size, h.sub_log, h.block, h.next, h.n_elems,
			o->len - INA_HDR_SIZE, h.flags, h.status);
	j = job_by_id(f, h.job_id);
	switch (h.type) {
	case INA_T_JOIN_ACK:
		/* A rack answers its ranks at once on the spine's JOIN_ACK. */
		FZ_CHECK(!o->dsts || f->role == ROLE_RACK);
		FZ_CHECK(h.epoch != 0);
		t->join_acks++;
		if (j) {
			j->acked = 1;
			j->params.job_id = h.job_id;
			j->params.epoch = h.epoch;
			j->params.token = h.token;
			j->params.encoding = h.encoding;
			ina_wire_decode_join(o->data + INA_HDR_SIZE, &j->params.world,
					     &j->params.lanes, &j->params.max_block);
		}
		break;
	case INA_T_REPL:
		/* A primary's RESULT, to its replica alone. */
		FZ_CHECK(f->role == ROLE_PRIMARY);
		FZ_CHECK(!o->dsts && ina_peer_equal(&o->peer, &f->cfg.replica));
		FZ_CHECK(h.rank != INA_RANK_SWITCH);
		t->repls++;
		/* fall through */
	case INA_T_RESULT:
		/* Completion by count: a result (or its shadow copy) only for a
		 * block every rank of the job sent DATA for. A replica sends on
		 * what its primary summed. */
		if (j && j->acked && h.epoch == j->params.epoch && f->role != ROLE_REPLICA) {
			const struct seen *e = seen_find(f, &h);
			uint64_t full = j->params.world == 64 ? ~0ull
							      : (1ull << j->params.world) - 1;
			uint64_t need = full;

			if (h.flags & INA_F_PARTIAL) {
				/* ssp, closed early: only its contributors, never all. */
				uint64_t be;

				memcpy(&be, o->data + o->len - INA_PARTIAL_TRAILER, sizeof(be));
				need = be64toh(be);
				FZ_CHECK(need && (need & ~full) == 0 && need != full);
			}
			FZ_CHECK(e && (e->ranks & need) == need);
			if (o->dsts)
				FZ_CHECK(o->dst_mask == full);
		}
		if (o->dsts || (h.type == INA_T_REPL && h.rank == INA_RANK_ALL)) {
			t->results++;
			if (h.flags & INA_F_DEFERRED)
				t->results_deferred++;
			else if (h.n_elems == 0)
				t->results_empty++;
			t->result_bytes += o->len - INA_HDR_SIZE -
					   ((h.flags & INA_F_PARTIAL) ? INA_PARTIAL_TRAILER : 0);
		} else {
			t->shadow_replies++;
		}
		if (j && j->acked && h.lane < MAX_LANES) {
			j->next[h.lane] = h.next;
			j->ver[h.lane] = (uint8_t)((h.flags & INA_F_VER) ^ 1);
			j->last[h.lane] = h.block;
			j->last_ver[h.lane] = h.flags & INA_F_VER;
		}
		break;
	case INA_T_WAIT:
		FZ_CHECK(!o->dsts);
		t->waits++;
		break;
	case INA_T_FAILOVER:
		/* A replica's announcement: the job's new epoch. */
		FZ_CHECK(f->role == ROLE_REPLICA);
		FZ_CHECK(h.epoch != 0 && o->len == INA_HDR_SIZE);
		t->announces++;
		if (j && j->acked)
			j->params.epoch = h.epoch;
		break;
	case INA_T_FIN_ACK:
		FZ_CHECK(!o->dsts || f->role == ROLE_RACK);
		t->fin_acks++;
		break;
	case INA_T_ERROR:
		FZ_CHECK(h.status >= INA_WERR_NO_SLOTS && h.status <= INA_WERR_MAX);
		if (h.status == INA_WERR_COOKIE) {
			/* No larger than the JOIN it answers, to its source only;
			 * learnt for that rank's next JOIN. */
			unsigned k = o->peer.bytes[0];
			unsigned rank = o->peer.bytes[1] | (unsigned)o->peer.bytes[2] << 8;

			FZ_CHECK((f->cfg.join_cookie || f->tenants) && !o->dsts);
			FZ_CHECK(o->len == INA_HDR_SIZE);
			FZ_CHECK(ina_wire_cookie(&h) != 0);
			if (k < NB_JOBS && rank < INA_MAX_WORLD && f->jobs[k].id == h.job_id) {
				if (o->peer.bytes[3] == PEER_MOVED)
					f->jobs[k].cookie_moved[rank] = ina_wire_cookie(&h);
				else
					f->jobs[k].cookie[rank] = ina_wire_cookie(&h);
			}
			t->cookies++;
			break;
		}
		FZ_CHECK(o->len > INA_HDR_SIZE);
		if (h.status == INA_WERR_LEFT)
			t->errors_left++;
		else if (h.status == INA_WERR_PEER_DEAD)
			t->errors_dead++; /* answers a DATA, not a JOIN */
		else
			t->errors++;
		break;
	default:
		FZ_CHECK(!"a type the switch never sends");
	}
	/* Everything but an ERROR (no epoch) belongs to the job's current run. */
	if (j && j->acked && h.type != INA_T_ERROR && h.epoch == j->params.epoch) {
		struct ina_hdr hj;

		r = ina_wire_validate(o->data, o->len, &j->params, &hj);
		if (r != INA_WIRE_OK)
			fprintf(stderr, "output type %u fails the job's validation: %s\n", h.type,
				ina_wire_reason_name(r));
		FZ_CHECK(r == INA_WIRE_OK);
	}
}

static void
flush(struct fz *f, int quiet)
{
	struct ina_pkt *out[MAX_BURST];
	struct pipeline_stats before = *pipeline_stats(f->p);
	const struct pipeline_stats *st;
	struct tally t = { 0 };
	uint16_t n = f->nb_pending, nb_out;

	if (!n)
		return;
	/* As they go in: an op may have corrupted a pending packet. */
	f->from_spine = 0;
	for (uint16_t i = 0; i < n; i++) {
		note_data(f, f->pending[i]);
		if (f->role == ROLE_RACK && ina_peer_equal(&f->pending[i]->peer, &f->cfg.uplink))
			f->from_spine = 1;
	}
	f->nb_pending = 0;
	if (quiet) {
		f->quiet_used = 1;
		pipeline_rx_quiet(f->p, f->pending, n, f->now);
		FZ_CHECK(memcmp(&before, pipeline_stats(f->p), sizeof(before)) == 0);
		check_pools(f);
		return;
	}
	nb_out = pipeline_rx_burst(f->p, f->pending, n, f->now, out);
	FZ_CHECK(nb_out <= n);
	f->rx += n;
	f->tx += nb_out;
	st = pipeline_stats(f->p);
	if (f->tenants) {
		/* A packet that failed its tag is never answered, and every
		 * answer carries its job's tag (zeroed by the check, as the
		 * worker sees it: then validated against the job below). A
		 * JOIN that would move a rank is answered: its cookie. */
		FZ_CHECK((uint64_t)nb_out + st->drop[PDROP_AUTH] - before.drop[PDROP_AUTH] <= n);
		for (uint16_t i = 0; i < nb_out; i++) {
			struct ina_job_key k;

			FZ_CHECK(out[i]->len >= INA_HDR_SIZE);
			key_of(out[i]->data, &k);
			FZ_CHECK(ina_auth_check(&k, out[i]->data, out[i]->len));
		}
	} else {
		/* Without cookies, a rank's new address ends the run at once. */
		FZ_CHECK(st->drop[PDROP_AUTH] == 0 &&
			 (f->cfg.join_cookie || st->drop[PDROP_RANK_MOVED] == 0));
	}
	for (uint16_t i = 0; i < nb_out; i++)
		check_output(f, out[i], &t);
	st = pipeline_stats(f->p);
	if (f->role == ROLE_REPLICA) {
		FZ_CHECK(st->results + st->shadow_replies + st->repl_sent -
				 (before.results + before.shadow_replies + before.repl_sent) ==
			 t.results + t.shadow_replies);
		FZ_CHECK(st->results_empty + st->results_deferred <= st->results);
	} else {
		FZ_CHECK(st->results - before.results == t.results);
		FZ_CHECK(st->results_empty - before.results_empty == t.results_empty);
		FZ_CHECK(st->results_deferred - before.results_deferred == t.results_deferred);
		FZ_CHECK(st->result_bytes - before.result_bytes == t.result_bytes);
		FZ_CHECK(st->shadow_replies - before.shadow_replies == t.shadow_replies);
	}
	FZ_CHECK(st->replicated - before.replicated == t.repls);
	FZ_CHECK(st->takeovers + st->announce_repeats -
			 (before.takeovers + before.announce_repeats) ==
		 t.announces);
	FZ_CHECK(st->waits - before.waits == t.waits);
	FZ_CHECK(t.errors_old <=
		 st->drop_wire[INA_WIRE_BAD_VERSION] - before.drop_wire[INA_WIRE_BAD_VERSION]);
	if (!f->from_spine) {
		/* (a rack answers the spine's packets with these too) */
		FZ_CHECK(t.join_acks + t.errors + t.cookies <= st->joins - before.joins);
		FZ_CHECK(t.cookies <= st->drop[PDROP_JOIN_UNPROVEN] + st->drop[PDROP_RANK_MOVED] -
					      (before.drop[PDROP_JOIN_UNPROVEN] +
					       before.drop[PDROP_RANK_MOVED]));
		FZ_CHECK(t.fin_acks <= st->fins - before.fins);
		/* LEFT answers a LEAVE, or a JOIN from a rank's new address
		 * that ended the run (counted aborted, PROTOCOL 5.1). */
		FZ_CHECK(t.errors_left + t.errors_dead <=
			 st->leaves - before.leaves + st->jobs_aborted - before.jobs_aborted);
		FZ_CHECK(t.errors_dead <= st->jobs_aborted - before.jobs_aborted);
	}
	FZ_CHECK(t.up ==
		 st->up_joins + st->up_data + st->up_fins + st->up_leaves -
			 (before.up_joins + before.up_data + before.up_fins + before.up_leaves));
	/* The outputs are held back (up to hold_max), or freed now. */
	for (uint16_t i = 0; i < nb_out; i++)
		keep_or_free(f, out[i]);
	check_pools(f);
}

static void
push(struct fz *f, struct ina_pkt *pkt)
{
	if (!pkt)
		return;
	if (f->tenants && pkt->len >= INA_HDR_SIZE) {
		struct ina_job_key k;

		key_of(pkt->data, &k);
		ina_auth_sign(&k, pkt->data, pkt->len);
	}
	f->pending[f->nb_pending++] = pkt;
	if (f->nb_pending == MAX_BURST)
		flush(f, 0);
}

/* A packet of 'len' bytes from the small pool when it fits and 'small', else the big one. */
static struct ina_pkt *
mk(struct fz *f, const void *bytes, size_t len, int small, const struct ina_peer *src)
{
	struct ina_pkt *p = fz_pkt(small && len <= SMALL_CAP ? &f->small : &f->big, bytes, len);

	if (p)
		p->peer = *src;
	return p;
}

static struct fjob *
pick_job(struct fz *f, struct fz_in *in)
{
	return &f->jobs[fz_u8(in) % NB_JOBS];
}

static struct ina_hdr
base_hdr(const struct fjob *j, uint8_t type, uint16_t rank)
{
	struct ina_hdr h;

	memset(&h, 0, sizeof(h));
	h.version = INA_WIRE_VERSION;
	h.type = type;
	h.encoding = j->enc ? j->enc : INA_ENC_F32;
	h.job_id = j->id;
	h.epoch = type == INA_T_JOIN ? 0 : (j->acked ? j->params.epoch : 1);
	h.rank = rank;
	h.token = j->token;
	return h;
}

static void
shape(struct fjob *j, struct fz_in *in, uint16_t slot_elems)
{
	j->shaped = 1;
	j->world = (uint16_t)(1 + fz_u8(in) % 4);
	j->lanes = (uint16_t)(1 + fz_u8(in) % MAX_LANES);
	j->max_block = (uint16_t)(1 + fz_u8(in) % (slot_elems + 2)); /* may be too big */
	j->enc = (uint8_t)(1 + fz_u8(in) % INA_ENC_MAX);
}

static void
op_join(struct fz *f, struct fz_in *in, uint8_t op)
{
	struct fjob *j = pick_job(f, in);
	uint16_t rank;
	uint8_t pkt[INA_HDR_SIZE + sizeof(struct ina_wire_join)];
	struct ina_hdr h;
	struct ina_peer src;
	uint8_t sel, moved;

	if (!j->shaped || (op & 0x10)) {
		shape(j, in, f->cfg.slot_elems);
		/* On a replica, epochs come from the input and may repeat: what
		 * the last JOIN_ACK said is not this shape's job. */
		if (f->role == ROLE_REPLICA)
			j->acked = 0;
	}
	sel = fz_u8(in);
	/* The top bit: from the rank's second address, as a rank that moved
	 * (PROTOCOL 5.1), echoing what that address was sent. */
	moved = sel >> 7;
	rank = (uint16_t)((sel & 0x7f) % j->world);
	h = base_hdr(j, INA_T_JOIN, rank);
	/* 0 until one came */
	ina_wire_set_cookie(&h, moved ? j->cookie_moved[rank] : j->cookie[rank]);
	if (op & 0x20)
		h.token ^= 1; /* not the job's secret */
	if (op & 0x40) {
		/* Standby: the epoch a primary gave, or maybe another (0, or
		 * far from the replica's own epochs). */
		uint8_t e = fz_u8(in) % 5;

		h.flags = INA_F_STANDBY;
		h.epoch = j->acked && !(op & 0x10) ? j->params.epoch : e ? 0x7ffffff0u + e : 0;
	}
	ina_wire_encode_hdr(&h, pkt);
	ina_wire_encode_join(j->world, j->lanes, j->max_block, pkt + INA_HDR_SIZE);
	peer_of(&src, (unsigned)(j - f->jobs), rank);
	if (moved)
		src.bytes[3] = PEER_MOVED;
	push(f, mk(f, pkt, sizeof(pkt), op & 0x80, &src));
}

static void
op_data(struct fz *f, struct fz_in *in, uint8_t op)
{
	static uint8_t pkt[INA_HDR_SIZE + INA_SUB_MAX / 8 + 4 * (MAX_SLOT_ELEMS + 2)];
	struct fjob *j = pick_job(f, in);
	uint8_t sel = fz_u8(in);
	uint16_t lanes, rank, lane;
	struct ina_hdr h;
	struct ina_peer src;
	uint32_t nb;
	size_t es, plen;

	if (!j->shaped)
		shape(j, in, f->cfg.slot_elems);
	lanes = j->acked ? j->params.lanes : j->lanes;
	rank = (uint16_t)(fz_u8(in) % j->world);
	lane = (uint16_t)(fz_u8(in) % lanes);
	if (!j->block_size || (op & 0x10)) {
		/* A new tensor (or round) for the job; the tensor id's byte
		 * also picks the cut (its top 3 bits, where B allows it). */
		uint8_t t = fz_u8(in);

		j->tensor_id = t % 2;
		j->round = fz_u8(in) % 4;
		j->tensor_len = 1 + fz_u16(in) % 512;
		j->block_size = (uint16_t)(1 + fz_u8(in) % j->max_block);
		j->sub_log = t >> 5;
		while (j->sub_log && j->block_size % (1u << j->sub_log))
			j->sub_log--;
		for (int l = 0; l < MAX_LANES; l++) {
			j->next[l] = j->last[l] = INA_BLOCK_END;
			j->ver[l] = j->last_ver[l] = 0;
		}
	}
	h = base_hdr(j, INA_T_DATA, rank);
	h.lane = lane;
	h.tensor_id = j->tensor_id;
	h.round = j->round;
	h.tensor_len = j->tensor_len;
	h.block_size = j->block_size;
	h.sub_log = j->sub_log;
	nb = ina_wire_nb_blocks(h.tensor_len, h.block_size);
	/* The block: the lane's first, the one the last result announced (or,
	 * when it announced none, the result's own block again: a
	 * retransmission), or another. */
	switch (sel & 3) {
	case 0:
		h.block = ina_lane_first(h.encoding, lane);
		h.flags = 0;
		break;
	case 1:
		if (j->next[lane % MAX_LANES] != INA_BLOCK_END) {
			h.block = j->next[lane % MAX_LANES];
			h.flags = j->ver[lane % MAX_LANES];
		} else if (j->last[lane % MAX_LANES] != INA_BLOCK_END) {
			h.block = j->last[lane % MAX_LANES];
			h.flags = j->last_ver[lane % MAX_LANES];
		} else {
			h.block = ina_lane_first(h.encoding, lane);
			h.flags = 0;
		}
		break;
	default:
		h.block = lane + (uint32_t)(fz_u8(in) % 8) * lanes;
		h.flags = (sel >> 2) & 1;
		break;
	}
	/* The next pointer: END, or a later block of the lane. */
	if (sel & 0x08)
		h.next = INA_BLOCK_END;
	else if (h.block == INA_BLOCK_OPEN)
		h.next = lane + (uint32_t)((sel >> 4) % 4) * lanes;
	else
		h.next = h.block + (uint32_t)(1 + (sel >> 4) % 4) * lanes;
	if (h.next != INA_BLOCK_END && h.next >= nb)
		h.next = INA_BLOCK_END;
	if (h.encoding == INA_ENC_I32 && h.next != INA_BLOCK_END)
		h.exp = (int16_t)((int8_t)fz_u8(in));
	if (op & 0x20)
		h.bound = fz_u32(in) & (h.encoding == INA_ENC_I32 ? 0x7fffffffu : 0x7f7fffffu);
	if (op & 0x40)
		h.flags |= INA_F_RETX;
	if (op & 0x80)
		h.epoch = fz_u8(in); /* maybe the wrong one */
	es = ina_wire_elem_size(h.encoding);
	h.n_elems = (h.block != INA_BLOCK_OPEN && !(sel & 0x04) && h.block < nb)
			    ? ina_wire_block_elems(h.tensor_len, h.block_size, h.block)
			    : 0;
	plen = (size_t)h.n_elems * es;
	if (INA_HDR_SIZE + INA_SUB_MAX / 8 + plen > sizeof(pkt))
		return;
	ina_wire_encode_hdr(&h, pkt);
	if (h.sub_log && h.n_elems) {
		/* A mask from the input, made valid: no bit past the block's
		 * last sub-block, at least one set; then those values. */
		struct ina_sub_cut c = ina_sub_cut(h.block_size, h.sub_log, h.n_elems);
		struct ina_sub_mask m = { { fz_u32(in), 0 } };

		m.w[0] |= (uint64_t)fz_u32(in) << 32;
		if (c.count < 64)
			m.w[0] &= (1ull << c.count) - 1;
		if (!m.w[0])
			m.w[0] = 1;
		ina_sub_mask_write(pkt + INA_HDR_SIZE, &m, &c);
		plen = c.mask_bytes + (size_t)ina_sub_present_elems(&m, &c) * es;
		fz_bytes(in, pkt + INA_HDR_SIZE + c.mask_bytes, plen - c.mask_bytes);
	} else {
		fz_bytes(in, pkt + INA_HDR_SIZE, plen);
	}
	peer_of(&src, (unsigned)(j - f->jobs), rank);
	push(f, mk(f, pkt, INA_HDR_SIZE + plen, (sel & 0x80) != 0, &src));
}

static void
op_ctl(struct fz *f, struct fz_in *in, uint8_t type, uint8_t op)
{
	struct fjob *j = pick_job(f, in);
	uint8_t pkt[INA_HDR_SIZE];
	struct ina_hdr h;
	struct ina_peer src;
	uint16_t world = j->shaped ? j->world : 1;
	uint16_t rank = (uint16_t)(fz_u8(in) % world);

	h = base_hdr(j, type, rank);
	if (op & 0x80)
		h.epoch = fz_u8(in);
	ina_wire_encode_hdr(&h, pkt);
	peer_of(&src, (unsigned)(j - f->jobs), rank);
	push(f, mk(f, pkt, sizeof(pkt), op & 0x20, &src));
}

static void
op_raw(struct fz *f, struct fz_in *in, uint8_t op)
{
	uint8_t pkt[RAW_MAX];
	size_t len = fz_u16(in) % RAW_MAX;
	struct ina_peer src;

	fz_bytes(in, pkt, len);
	peer_of(&src, op >> 5, 0);
	push(f, mk(f, pkt, len, op & 0x10, &src));
}

static void
op_tick(struct fz *f, struct fz_in *in, uint8_t op)
{
	uint32_t freed[4];
	uint8_t max = (uint8_t)(1 + fz_u8(in) % 4);

	flush(f, 0);
	if (op & 0x10) {
		uint16_t n = pipeline_tick_freed(f->p, f->now, freed, max);

		FZ_CHECK(n <= max);
	} else {
		pipeline_tick(f->p, f->now);
	}
}

/*
 * A rack's spine answers the rack's last packet upstream: a JOIN with a
 * JOIN_ACK (an epoch from the input, the JOIN's payload), a DATA with its
 * RESULT (the DATA's key, version bit and payload as the sum, the exponent
 * from the input) or a WAIT, a FIN with a FIN_ACK; or with an ERROR.
 */
static void
op_spine(struct fz *f, struct fz_in *in, uint8_t op)
{
	uint8_t pkt[RAW_MAX];
	uint32_t len = f->up_last_len;
	struct ina_peer src;
	struct ina_hdr h;

	if (len < INA_HDR_SIZE)
		return;
	memcpy(pkt, f->up_last, len);
	ina_wire_decode_hdr(pkt, &h);
	h.rank = INA_RANK_SWITCH;
	h.bound = 0;
	h.flags &= INA_F_VER;
	if (op & 0x20) {
		static const char msg[] = "the spine says no";

		h.type = INA_T_ERROR;
		h.status = (uint16_t)(1 + fz_u8(in) % INA_WERR_MAX);
		h.epoch = 0;
		h.flags = 0;
		memcpy(pkt + INA_HDR_SIZE, msg, sizeof(msg) - 1);
		len = INA_HDR_SIZE + sizeof(msg) - 1;
	} else if (h.type == INA_T_JOIN) {
		h.type = INA_T_JOIN_ACK;
		h.epoch = 1 + fz_u8(in) % 3;
		h.block_size = 0;
	} else if (h.type == INA_T_DATA && (op & 0x10)) {
		uint64_t missing = 1;

		h.type = INA_T_WAIT;
		h.next = INA_BLOCK_END;
		h.n_elems = 0;
		h.exp = 0;
		memcpy(pkt + INA_HDR_SIZE, &missing, sizeof(missing));
		len = INA_HDR_SIZE + INA_WAIT_PAYLOAD;
	} else if (h.type == INA_T_DATA) {
		h.type = INA_T_RESULT;
		if (h.encoding == INA_ENC_I32 && h.next != INA_BLOCK_END)
			h.exp = (int16_t)((int8_t)fz_u8(in));
	} else {
		h.type = INA_T_FIN_ACK;
		h.round = 0;
	}
	ina_wire_encode_hdr(&h, pkt);
	peer_of(&src, PEER_SPINE, 0);
	push(f, mk(f, pkt, len, op & 0x80, &src));
}

static void
run_ops(struct fz *f, struct fz_in *in)
{
	for (int k = 0; k < MAX_OPS && in->n; k++) {
		uint8_t op = fz_u8(in);

		switch (op & 0x0f) {
		case 0:
			op_raw(f, in, op);
			break;
		case 1:
			op_join(f, in, op);
			break;
		case 2:
		case 3:
			op_data(f, in, op);
			break;
		case 4:
			op_ctl(f, in, op & 0x40 ? INA_T_KEEPALIVE : INA_T_FIN, op);
			break;
		case 5:
			op_ctl(f, in, op & 0x40 ? INA_T_FAILOVER : INA_T_LEAVE, op);
			break;
		case 6:
			op_tick(f, in, op);
			break;
		case 7:
			/* The clock moves: a little, or by seconds. */
			f->now += (uint64_t)fz_u8(in) << ((op >> 4) * 3);
			break;
		case 8:
			flush(f, 0);
			break;
		case 9:
			flush(f, 1);
			break;
		case 10:
			/* Hold more or fewer outputs back from now on. */
			drop_held(f);
			f->hold_max = (uint16_t)((op >> 4) % (MAX_HELD + 1));
			break;
		case 11:
			if (f->nb_pending) {
				/* Corrupt a byte of the last packet. */
				struct ina_pkt *p = f->pending[f->nb_pending - 1];
				uint8_t at = fz_u8(in), x = fz_u8(in);

				if (p->len)
					p->data[at % p->len] ^= x ? x : 1;
			}
			break;
		case 12:
			if (f->role == ROLE_RACK && (op & 0x40)) {
				op_spine(f, in, op);
			} else if (f->nb_pending && (op & 0x40)) {
				/* The last packet as the primary's REPL (a DATA
				 * makes a RESULT): to every rank or to its sender,
				 * from the primary or from the sender. */
				struct ina_pkt *p = f->pending[f->nb_pending - 1];
				uint8_t pkt[RAW_MAX];
				struct ina_peer src;

				if (p->len < INA_HDR_SIZE || p->len > sizeof(pkt))
					break;
				memcpy(pkt, p->data, p->len);
				pkt[1] = INA_T_REPL;
				memset(pkt + 44, 0, 4); /* no bound */
				if (!(op & 0x20)) {
					pkt[12] = INA_RANK_ALL >> 8;
					pkt[13] = INA_RANK_ALL & 0xff;
				}
				peer_of(&src, PEER_PRIMARY, 0);
				push(f, mk(f, pkt, p->len, op & 0x10, op & 0x80 ? &p->peer : &src));
			} else if (f->nb_pending) {
				/* Send the last packet twice. */
				struct ina_pkt *p = f->pending[f->nb_pending - 1];

				push(f, mk(f, p->data, p->len, op & 0x10, &p->peer));
			}
			break;
		case 13:
			flush(f, 0);
			if (pipeline_job_free(f->p, f->jobs[fz_u8(in) % NB_JOBS].id))
				f->job_frees++;
			break;
		case 14:
			pipeline_dump(f->p, devnull);
			pipeline_stats_print(f->p, devnull);
			break;
		default:
			/* Ages every lingering and idle job. */
			f->now += f->cfg.linger_ns / 2 + 1;
			break;
		}
		check_slots(f);
		check_pools(f);
	}
	flush(f, 0);
	check_slots(f);
}

/* Every event the pipeline reports is well formed, its text readable (and
 * then written the way ina-switch logs it, into the void at level ERR). */
static void
on_event(void *ctx, const struct pipeline_event *ev)
{
	uint64_t sum = 0; /* every byte read: ASan checks them */

	(void)ctx;
	FZ_CHECK(ev->kind < PEV_MAX);
	FZ_CHECK(!ev->text == !ev->text_len || (ev->text && ev->text_len == 0));
	FZ_CHECK(ev->text_len <= INA_ERROR_MSG_MAX + 64u * 1024u);
	for (uint32_t i = 0; ev->text && i < ev->text_len; i++)
		sum += (unsigned char)ev->text[i];
	FZ_CHECK(sum <= 255u * (uint64_t)ev->text_len);
	pipeline_log_event(NULL, ev);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	ina_log_set_level(INA_LOG_ERR);
	devnull = fopen("/dev/null", "w");
	tenants_init();
	trace = getenv("INA_FUZZ_TRACE") != NULL;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz f;
	struct fz_in in = { data, size };
	uint8_t b;

	memset(&f, 0, sizeof(f));
	fz_pool_init(&f.big, 2 * MAX_BURST + MAX_HELD, BIG_CAP);
	fz_pool_init(&f.small, 2 * MAX_BURST + MAX_HELD, SMALL_CAP);
	pipeline_config_init(&f.cfg);
	f.cfg.nb_slots = 1 + fz_u8(&in) % 24;
	f.cfg.slot_elems = (uint16_t)(1 + fz_u8(&in) % MAX_SLOT_ELEMS);
	f.cfg.max_jobs = (uint16_t)(1 + fz_u8(&in) % 4);
	b = fz_u8(&in);
	f.cfg.part_count = (uint16_t)(1 + b % 3);
	f.cfg.part_index = (uint16_t)((b / 3) % f.cfg.part_count);
	if (f.cfg.part_count == 1) {
		f.role = (uint8_t)(b / 9 % 3);
		if (f.role == ROLE_PRIMARY)
			peer_of(&f.cfg.replica, PEER_REPLICA, 0);
		else if (f.role == ROLE_REPLICA)
			peer_of(&f.cfg.primary, PEER_PRIMARY, 0);
		if (b >= 243) {
			/* A rack: each job is a rank of the spine's (job 1 not,
			 * so that its JOINs are refused). */
			f.role = ROLE_RACK;
			memset(&f.cfg.replica, 0, sizeof(f.cfg.replica));
			peer_of(&f.cfg.uplink, PEER_SPINE, 0);
			for (int k = 1; k < NB_JOBS; k++) {
				struct pipeline_uplink_job *uj =
					&f.cfg.uplink_jobs[f.cfg.nb_uplink_jobs++];

				uj->job_id = job_ids[k];
				uj->world = (uint16_t)k;
				uj->rank = (uint16_t)(k - 1);
			}
		}
	}
	/* JOIN cookies (PROTOCOL 5.1): the JOINs built echo what came. */
	f.cfg.join_cookie = (uint8_t)((b / 54) % 2);
	memset(f.cfg.secret, 0xc5, sizeof(f.cfg.secret));
	if (f.role == 0 && (b / 27) % 2) {
		f.tenants = &fz_tenants;
		f.cfg.tenants = &fz_tenants;
	}
	f.cfg.linger_ns = (1 + (uint64_t)fz_u8(&in)) * 1000000ull;
	f.cfg.wait_interval_ns = (uint64_t)fz_u8(&in) * 1000ull;
	b = fz_u8(&in);
	f.cfg.job_idle_ns = b ? (uint64_t)b * 10000000ull : 0;
	b = fz_u8(&in);
	/* Answers need the slot width or an ERROR's text; the pool is small. */
	fz_pool_init(&f.answers, 1 + b % 16,
		     INA_HDR_SIZE + (4u * f.cfg.slot_elems > INA_ERROR_MSG_MAX
					     ? 4u * f.cfg.slot_elems
					     : INA_ERROR_MSG_MAX));
	f.hold_max = (uint16_t)((b >> 4) % (MAX_HELD + 1));
	f.cfg.pool = &f.answers.base;
	for (int k = 0; k < NB_JOBS; k++) {
		f.jobs[k].id = f.tenants ? tenant_job_ids[k] : job_ids[k];
		/* Tenant mode: the tag takes the token's field (0 under it). */
		f.jobs[k].token = f.tenants ? 0 : 0x1111111111111111ull * (uint64_t)(k + 1);
	}
	f.now = SEC;
	f.cfg.on_event = on_event;
	f.p = pipeline_create(&f.cfg);
	FZ_CHECK(f.p != NULL);

	run_ops(&f, &in);

	/* Past every idle and linger time, partition 0 frees every job. */
	if (f.cfg.part_index == 0 && f.cfg.job_idle_ns) {
		f.now += f.cfg.job_idle_ns + f.cfg.linger_ns + 1;
		pipeline_tick(f.p, f.now);
		FZ_CHECK(pipeline_nb_jobs(f.p) == 0);
		FZ_CHECK(pipeline_free_slots(f.p) == f.cfg.nb_slots);
		check_slots(&f);
	}
	if (trace)
		pipeline_stats_print(f.p, stderr);
	drop_held(&f);
	pipeline_destroy(f.p);
	FZ_CHECK(pending_pools_out(&f) == 0);
	return 0;
}
