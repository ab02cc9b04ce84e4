/* SPDX-License-Identifier: MIT */
/*
 * A simulated attacker (node.h; topologies/README.md, "Attacks"): a host in
 * no job that sees every packet between its target job's hosts and their
 * switches as it is sent (attacks.c shows it them: attack_node_capture,
 * attack_node_result) and, at its rate, sends one packet of each kind in
 * turn:
 *   forge         a captured DATA with its token field (the tag, in tenant
 *                 mode) changed, from its own address;
 *   forge-spoof   the same from the address of the rank that sent it;
 *   replay        a captured packet as it was, from its own address;
 *   replay-spoof  the same from its rank's address;
 *   leave-spoof   a LEAVE made of a captured header, token kept, from the
 *                 rank's address;
 *   rejoin        a captured JOIN replayed from its own address (a rank
 *                 moving to it);
 *   join-flood    a JOIN for a new job id of the job's tenant with a random
 *                 token or tag, from its own address or, every other time,
 *                 from a rank's (an answer would land on the rank).
 * And not in turn but at once on each RESULT it sees leave the switch (the
 * packets in turn then wait):
 *   impersonate   a captured DATA of the same lane made another rank's DATA
 *                 of the lane's next block (rank, block, next, round, the
 *                 lane's other half; values changed, token kept), from that
 *                 rank's address: it reaches the switch before the rank's
 *                 own, which leaves only when the RESULT has reached the
 *                 rank, and a token alone cannot tell the two apart.
 * A kind with nothing captured yet sends a join-flood packet instead.
 * Everything it receives is counted: the reflection (bytes back over bytes
 * sent) of what it sent from its own address.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ina/auth.h"
#include "ina/util.h"
#include "ina/wire.h"
#include "node.h"
#include "peer.h"

#define KEEP 64 /* captured packets kept, the newest */

struct attack_node {
	struct sim_node node; /* first: the ops' handle */
	struct attack_node_config cfg;
	struct ina_pkt *kept[KEEP]; /* ring of captured packets */
	int kept_dst[KEEP];	    /* the switch each went to */
	int kept_src[KEEP];	    /* the rank's host that sent it */
	unsigned nb_kept, next_kept;
	int rank_src[INA_MAX_WORLD]; /* each rank's host, -1 unseen */
	struct ina_pkt *join;	     /* a captured JOIN */
	int join_dst;
	uint64_t rng;
	unsigned kind;				    /* the next kind to send in turn */
	uint64_t busy_until;			    /* its rate allows the next packet then */
	uint32_t last_lane, last_block, last_round; /* the last RESULT it answered */
	int stopped;
	struct attack_stats st;
};

static struct attack_node *
atk_of(struct sim_node *n)
{
	return (struct attack_node *)n;
}

const char *const attack_kind_names[ATTACK_KINDS] = {
	"forge",       "forge-spoof", "replay", "replay-spoof",
	"impersonate", "leave-spoof", "rejoin", "join-flood",
};

/* The newest captured packet of type 'type' (0: any), or -1. */
static int
newest(const struct attack_node *a, uint8_t type)
{
	for (unsigned i = 0; i < a->nb_kept; i++) {
		unsigned k = (a->next_kept + KEEP - 1 - i) % KEEP;

		if (!type || a->kept[k]->data[1] == type)
			return (int)k;
	}
	return -1;
}

/* A packet from the pool (an empty pool counted). */
static struct ina_pkt *
alloc_pkt(struct attack_node *a)
{
	struct ina_pkt *c = ina_pkt_alloc(a->node.env->pool);

	if (!c)
		a->st.no_buffer++;
	return c;
}

static struct ina_pkt *
copy_of(struct attack_node *a, const struct ina_pkt *p)
{
	struct ina_pkt *c = alloc_pkt(a);

	if (!c)
		return NULL;
	memcpy(c->data, p->data, p->len);
	c->len = p->len;
	return c;
}

static void
rand_token(struct attack_node *a, uint8_t *hdr)
{
	uint64_t r = ina_splitmix64(&a->rng);

	memcpy(hdr + INA_TAG_OFFSET, &r, sizeof(r));
}

/* A JOIN for a job id of the target's tenant that no one runs: the
 * captured JOIN's shape when there is one, else a job of its own. */
static struct ina_pkt *
flood_join(struct attack_node *a)
{
	struct ina_pkt *p = a->join ? copy_of(a, a->join) : alloc_pkt(a);
	struct ina_hdr h = { .version = INA_WIRE_VERSION,
			     .type = INA_T_JOIN,
			     .encoding = INA_ENC_F32,
			     .tensor_len = 1u << 16,
			     .block_size = 256 };
	uint32_t own = (uint32_t)ina_splitmix64(&a->rng) & INA_TENANT_JOB_MAX;

	if (!p)
		return NULL;
	if (a->join) {
		ina_wire_decode_hdr(p->data, &h);
	} else {
		ina_wire_encode_join(1, 64, 256, p->data + INA_HDR_SIZE);
		p->len = INA_HDR_SIZE + sizeof(struct ina_wire_join);
	}
	h.job_id = (a->cfg.job_id & ~INA_TENANT_JOB_MAX) | own;
	if (h.job_id == a->cfg.job_id)
		h.job_id ^= 1;
	h.token = ina_splitmix64(&a->rng);
	ina_wire_encode_hdr(&h, p->data);
	return p;
}

/* The packet of kind 'k', its destination and claimed source; NULL when
 * the kind needs a capture that is not there. */
static struct ina_pkt *
build(struct attack_node *a, unsigned k, int *dst, int *src)
{
	int i = newest(a, INA_T_DATA);
	struct ina_pkt *p;

	*src = a->node.index;
	*dst = a->cfg.switch_index;
	switch (k) {
	case ATTACK_REPLAY:
	case ATTACK_REPLAY_SPOOF:
		i = a->nb_kept ? (int)(ina_splitmix64(&a->rng) % a->nb_kept) : -1;
		break;
	case ATTACK_REJOIN:
		if (!a->join)
			return NULL;
		*dst = a->join_dst;
		return copy_of(a, a->join);
	case ATTACK_JOIN_FLOOD:
		if (a->st.sent[k] & 1 && a->nb_kept)
			*src = a->kept_src[newest(a, 0)];
		return flood_join(a);
	default:
		break;
	}
	if (i < 0 || !(p = copy_of(a, a->kept[i])))
		return NULL;
	*dst = a->kept_dst[i];
	if (k == ATTACK_FORGE_SPOOF || k == ATTACK_REPLAY_SPOOF || k == ATTACK_LEAVE_SPOOF)
		*src = a->kept_src[i];
	switch (k) {
	case ATTACK_FORGE:
	case ATTACK_FORGE_SPOOF:
		rand_token(a, p->data);
		break;
	case ATTACK_LEAVE_SPOOF:
		p->data[1] = INA_T_LEAVE;
		p->len = INA_HDR_SIZE;
		break;
	default:
		break;
	}
	return p;
}

/* Sends 'p' as kind 'k'; returns the time it takes at the attack's rate. */
static uint64_t
send(struct attack_node *a, unsigned k, struct ina_pkt *p, int src, int dst, uint64_t now)
{
	uint64_t gap = (uint64_t)(p->len + a->cfg.frame_overhead) * 8 * 1000000000ull /
		       a->cfg.rate_bps;

	a->st.sent[k]++;
	a->st.bytes_sent[k] += p->len;
	if (src == a->node.index)
		a->st.bytes_sent_own += p->len;
	a->node.env->send_from(a->node.env->net, a->node.index, src, dst, p, now);
	a->busy_until = (a->busy_until > now ? a->busy_until : now) + (gap ? gap : 1);
	return a->busy_until - now;
}

static void
attack_send_next(struct attack_node *a, uint64_t now)
{
	unsigned k = a->kind;
	struct ina_pkt *p;
	int dst, src;
	uint64_t gap;

	if (k == ATTACK_IMPERSONATE)
		k = (k + 1) % ATTACK_KINDS;
	a->kind = (k + 1) % ATTACK_KINDS;
	p = build(a, k, &dst, &src);
	if (!p && (k = ATTACK_JOIN_FLOOD, p = build(a, k, &dst, &src)) == NULL) {
		sim_node_wake(&a->node, now + 1000);
		return;
	}
	gap = send(a, k, p, src, dst, now);
	sim_node_wake(&a->node, now + gap);
}

static void
attack_rx(struct sim_node *n, struct ina_pkt *pkt, int src, uint64_t now)
{
	struct attack_node *a = atk_of(n);

	(void)src;
	(void)now;
	a->st.pkts_back++;
	a->st.bytes_back += pkt->len;
	ina_pkt_free(pkt);
}

static void
attack_wake(struct sim_node *n, uint64_t now)
{
	struct attack_node *a = atk_of(n);

	if (!a->stopped)
		attack_send_next(a, now);
}

static void
attack_destroy(struct sim_node *n)
{
	struct attack_node *a = atk_of(n);

	if (!a)
		return;
	for (unsigned i = 0; i < a->nb_kept; i++)
		ina_pkt_free(a->kept[i]);
	if (a->join)
		ina_pkt_free(a->join);
	free(a);
}

static const struct sim_node_ops attack_ops = {
	.kind = "attacker",
	.rx = attack_rx,
	.wake = attack_wake,
	.destroy = attack_destroy,
};

struct sim_node *
attack_node_create(const struct sim_node_env *env, const struct attack_node_config *cfg)
{
	struct attack_node *a;

	if (!cfg->rate_bps) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->node = (struct sim_node){ .ops = &attack_ops,
				     .env = env,
				     .index = cfg->index,
				     .wake_at = UINT64_MAX };
	a->cfg = *cfg;
	a->rng = cfg->seed;
	for (unsigned r = 0; r < INA_MAX_WORLD; r++)
		a->rank_src[r] = -1;
	return &a->node;
}

void
attack_node_start(struct sim_node *n, uint64_t now)
{
	sim_node_wake(n, now);
}

void
attack_node_stop(struct sim_node *n)
{
	atk_of(n)->stopped = 1;
}

void
attack_node_capture(struct sim_node *n, const struct ina_pkt *pkt, int src, int dst)
{
	struct attack_node *a = atk_of(n);
	struct ina_pkt *c;
	struct ina_hdr h;
	unsigned k;

	if (pkt->len < INA_HDR_SIZE)
		return;
	if (pkt->data[1] == INA_T_JOIN) {
		if (!a->join && (a->join = copy_of(a, pkt)) != NULL)
			a->join_dst = dst;
		return;
	}
	ina_wire_decode_hdr(pkt->data, &h);
	if (h.rank < INA_MAX_WORLD)
		a->rank_src[h.rank] = src;
	if (!(c = copy_of(a, pkt)))
		return;
	k = a->next_kept;
	if (a->nb_kept == KEEP)
		ina_pkt_free(a->kept[k]);
	else
		a->nb_kept++;
	a->kept[k] = c;
	a->kept_dst[k] = dst;
	a->kept_src[k] = src;
	a->next_kept = (k + 1) % KEEP;
	a->st.captured++;
}

const struct attack_stats *
attack_node_stats(const struct sim_node *n)
{
	return &((const struct attack_node *)n)->st;
}

void
attack_node_result(struct sim_node *n, const struct ina_pkt *pkt, int switch_index, uint64_t now)
{
	struct attack_node *a = atk_of(n);
	struct ina_hdr h, t;
	struct ina_pkt *p;
	uint32_t stride;
	int i = -1;
	unsigned r;

	if (a->stopped || pkt->len < INA_HDR_SIZE)
		return;
	ina_wire_decode_hdr(pkt->data, &h);
	if (h.type != INA_T_RESULT || h.next >= INA_BLOCK_OPEN ||
	    (h.lane == a->last_lane && h.block == a->last_block && h.round == a->last_round))
		return;
	/* A captured DATA of the lane to make the next one of. */
	for (unsigned x = 0; x < a->nb_kept && i < 0; x++) {
		unsigned k = (a->next_kept + KEEP - 1 - x) % KEEP;

		ina_wire_decode_hdr(a->kept[k]->data, &t);
		if (t.type == INA_T_DATA && t.lane == h.lane && t.next > t.block &&
		    t.next < INA_BLOCK_OPEN)
			i = (int)k;
	}
	if (i < 0 || ina_wire_block_elems(t.tensor_len, t.block_size, h.next) != t.n_elems)
		return;
	for (r = 1; r < INA_MAX_WORLD; r++)
		if (a->rank_src[(t.rank + r) % INA_MAX_WORLD] >= 0)
			break;
	if (r == INA_MAX_WORLD || !(p = copy_of(a, a->kept[i])))
		return;
	a->last_lane = h.lane;
	a->last_block = h.block;
	a->last_round = h.round;
	stride = t.next - t.block;
	t.rank = (uint16_t)((t.rank + r) % INA_MAX_WORLD);
	t.round = h.round;
	t.flags = (uint8_t)((t.flags & ~INA_F_VER) | ((h.flags ^ INA_F_VER) & INA_F_VER));
	t.block = h.next;
	t.next = (uint64_t)t.block + stride < ina_wire_nb_blocks(t.tensor_len, t.block_size)
			 ? t.block + stride
			 : INA_BLOCK_END;
	ina_wire_encode_hdr(&t, p->data);
	for (uint32_t b = INA_HDR_SIZE; b < p->len; b++)
		p->data[b] ^= 0x5a;
	/* At once, in the place of the next packet in turn. */
	sim_node_wake(&a->node,
		      now + send(a, ATTACK_IMPERSONATE, p, a->rank_src[t.rank], switch_index, now));
}
