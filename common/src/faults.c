/* SPDX-License-Identifier: MIT */
/*
 * The fault injector (faults.h): drop, duplicate, reorder, delay and corrupt
 * packets at given rates, deterministic from a seed, with a bounded queue of
 * held packets released by the port's calls. No allocation per packet.
 */
#include <errno.h>
#include <string.h>

#include "ina/faults.h"
#include "ina/util.h"

#define FAULTS_DEF_HOLD 128
#define FAULTS_DEF_DELAY_NS 1000000ull
#define FAULTS_CHUNK 32 /* packets copied aside per step of rx */

void
ina_faults_cfg_init(struct ina_faults_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->delay_ns = FAULTS_DEF_DELAY_NS;
	cfg->reorder_gap = 1;
	cfg->hold = FAULTS_DEF_HOLD;
	cfg->seed = 1;
}

static int
rate_option(const char *val, int below_one, double *out, const char **range)
{
	int ret = ina_parse_double(val, 0.0, 1.0, out);

	if (ret == 0 && below_one && *out >= 1.0)
		ret = -ERANGE;
	*range = below_one ? " (0 <= RATE < 1)" : " (0 <= RATE <= 1)";
	return ret;
}

/* The kind a rate key names, or -1. */
static int
rate_key(const char *key)
{
	static const char *const keys[INA_FAULT_KINDS] = {
		[INA_FAULT_DROP] = "drop",	 [INA_FAULT_DUP] = "dup",
		[INA_FAULT_REORDER] = "reorder", [INA_FAULT_DELAY] = "delay",
		[INA_FAULT_CORRUPT] = "corrupt",
	};

	for (int k = 0; k < INA_FAULT_KINDS; k++)
		if (strcmp(key, keys[k]) == 0)
			return k;
	return -1;
}

int
ina_faults_option(struct ina_faults_cfg *cfg, const char *key, const char *val, const char **range)
{
	int k = rate_key(key), ret;
	uint64_t v;

	*range = "";
	if (k >= 0) {
		ret = rate_option(val, k == INA_FAULT_DROP || k == INA_FAULT_CORRUPT, &cfg->rate[k],
				  range);
		if (k == INA_FAULT_DELAY)
			cfg->delay_set = 1;
	} else if (strcmp(key, "delay_us") == 0) {
		ret = ina_parse_u64(val, 1, 1000000, &v);
		cfg->delay_ns = v * 1000;
		cfg->delay_us_set = 1;
		*range = " (1..1000000)";
	} else if (strcmp(key, "reorder_gap") == 0) {
		ret = ina_parse_u64(val, 1, INA_FAULTS_GAP_MAX, &v);
		cfg->reorder_gap = (uint32_t)v;
		*range = " (1..16)";
	} else if (strcmp(key, "hold") == 0) {
		ret = ina_parse_u64(val, 1, INA_FAULTS_HOLD_MAX, &v);
		cfg->hold = (uint32_t)v;
		*range = " (1..256)";
	} else if (strcmp(key, "seed") == 0) {
		ret = ina_parse_u64(val, 0, UINT64_MAX, &cfg->seed);
	} else {
		return 0;
	}
	return ret < 0 ? -EINVAL : 1;
}

void
ina_faults_init(struct ina_faults *f, const struct ina_faults_cfg *cfg)
{
	memset(f, 0, sizeof(*f));
	f->cfg = *cfg;
	if (!cfg->delay_set && cfg->delay_us_set)
		f->cfg.rate[INA_FAULT_DELAY] = 1.0;
	if (f->cfg.hold == 0 || f->cfg.hold > INA_FAULTS_HOLD_MAX)
		f->cfg.hold = INA_FAULTS_HOLD_MAX;
	if (f->cfg.reorder_gap == 0)
		f->cfg.reorder_gap = 1;
	/* Drop keeps the seed as its state: the ports' drop= of before. */
	f->rng[INA_FAULT_DROP] = cfg->seed;
	for (int k = 1; k < INA_FAULT_KINDS; k++) {
		uint64_t s = cfg->seed ^ (0xa0761d6478bd642full * (uint64_t)k);

		f->rng[k] = ina_splitmix64(&s);
	}
	for (int k = 0; k < INA_FAULT_KINDS; k++)
		f->active |= f->cfg.rate[k] > 0;
	f->timed = f->cfg.rate[INA_FAULT_REORDER] > 0 || f->cfg.rate[INA_FAULT_DELAY] > 0;
}

int
ina_faults_pick(struct ina_faults *f, enum ina_fault_kind kind)
{
	double rate = f->cfg.rate[kind];

	if (rate <= 0)
		return 0;
	return (double)(ina_splitmix64(&f->rng[kind]) >> 11) * 0x1.0p-53 < rate;
}

int
ina_faults_drop(struct ina_faults *f)
{
	if (!ina_faults_pick(f, INA_FAULT_DROP))
		return 0;
	f->st.drop++;
	return 1;
}

int
ina_faults_corrupt(struct ina_faults *f, uint8_t *buf, uint32_t len)
{
	uint64_t bit;

	if (len == 0 || !ina_faults_pick(f, INA_FAULT_CORRUPT))
		return 0;
	bit = ina_splitmix64(&f->rng[INA_FAULT_CORRUPT]) % ((uint64_t)len * 8);
	buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	f->st.corrupt++;
	return 1;
}

static inline int
held_due(const struct ina_faults *f, const struct ina_faults_held *h, uint64_t now_ns)
{
	return now_ns >= h->due_ns || f->delivered >= h->due_seq;
}

uint16_t
ina_faults_release(struct ina_faults *f, uint64_t now_ns, struct ina_pkt **out, uint16_t room)
{
	unsigned i, keep = 0;
	uint16_t nb = 0;

	for (i = 0; i < f->nb_held; i++) {
		struct ina_faults_held *h = &f->held[i];

		if (nb < room && held_due(f, h, now_ns)) {
			out[nb++] = h->pkt;
			f->delivered++;
			continue;
		}
		f->held[keep++] = *h;
	}
	f->nb_held = keep;
	return nb;
}

/* Holds 'p' until 'due_ns' or 'due_seq'; 0 when the queue is full. */
static int
hold(struct ina_faults *f, struct ina_pkt *p, uint64_t due_ns, uint64_t due_seq)
{
	struct ina_faults_held *h;

	if (f->nb_held >= f->cfg.hold) {
		f->st.hold_full++;
		return 0;
	}
	h = &f->held[f->nb_held++];
	h->pkt = p;
	h->due_ns = due_ns;
	h->due_seq = due_seq;
	return 1;
}

/* A copy of 'p' from its own pool (no malloc), or NULL when the pool is empty. */
static struct ina_pkt *
dup_of(const struct ina_pkt *p)
{
	struct ina_pkt *c = ina_pkt_alloc(p->pool);

	if (!c)
		return NULL;
	if (p->len > c->cap) {
		ina_pkt_free(c);
		return NULL;
	}
	memcpy(c->data, p->data, p->len);
	c->len = p->len;
	c->peer = p->peer;
	return c;
}

/* Faults one received packet; appends what the caller gets to out[*nb]. */
static void
fault_one(struct ina_faults *f, uint64_t now_ns, struct ina_pkt *p, struct ina_pkt **out,
	  uint16_t *nb, uint16_t room)
{
	int drop = ina_faults_pick(f, INA_FAULT_DROP);
	int delay = ina_faults_pick(f, INA_FAULT_DELAY);
	int reorder = ina_faults_pick(f, INA_FAULT_REORDER);
	int dup = ina_faults_pick(f, INA_FAULT_DUP);
	struct ina_pkt *c;

	if (drop) {
		f->st.drop++;
		ina_pkt_free(p);
		return;
	}
	if (delay && hold(f, p, now_ns + f->cfg.delay_ns, UINT64_MAX)) {
		f->st.delay++;
	} else if (reorder && hold(f, p, now_ns + INA_FAULTS_REORDER_MAX_NS,
				   f->delivered + f->cfg.reorder_gap)) {
		f->st.reorder++;
	} else {
		out[(*nb)++] = p;
		f->delivered++;
	}
	if (!dup || !(c = dup_of(p)))
		return;
	if (*nb < room) {
		out[(*nb)++] = c;
		f->delivered++;
	} else if (!hold(f, c, 0, 0)) {
		ina_pkt_free(c);
		return;
	}
	f->st.dup++;
}

uint16_t
ina_faults_rx(struct ina_faults *f, uint64_t now_ns, struct ina_pkt **pkts, uint16_t n,
	      uint16_t room)
{
	struct ina_pkt *in[FAULTS_CHUNK];
	uint16_t nb = 0, done = 0;

	if (!f->active)
		return n;
	while (done < n) {
		uint16_t k = (uint16_t)(n - done < FAULTS_CHUNK ? n - done : FAULTS_CHUNK);

		/* Aside first: duplicates may write past the packet being read. */
		memcpy(in, pkts + done, k * sizeof(in[0]));
		for (uint16_t i = 0; i < k; i++) {
			/* Room left for the packets still to come, one slot each,
			 * and no write over the next chunk before it is aside. */
			uint16_t limit = (uint16_t)(room - (n - done - i - 1));

			if (done + k < n && limit > done + k)
				limit = (uint16_t)(done + k);

			fault_one(f, now_ns, in[i], pkts, &nb, limit);
		}
		done = (uint16_t)(done + k);
	}
	return nb;
}

uint64_t
ina_faults_next_ns(const struct ina_faults *f, uint64_t now_ns)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; i < f->nb_held; i++) {
		const struct ina_faults_held *h = &f->held[i];

		if (held_due(f, h, now_ns))
			return 0;
		if (h->due_ns - now_ns < next)
			next = h->due_ns - now_ns;
	}
	return next;
}

void
ina_faults_flush(struct ina_faults *f)
{
	struct ina_pkt *pkts[FAULTS_CHUNK];
	unsigned i = 0;

	while (i < f->nb_held) {
		unsigned k = 0;

		while (k < FAULTS_CHUNK && i < f->nb_held)
			pkts[k++] = f->held[i++].pkt;
		ina_pkt_free_bulk(pkts, k);
	}
	f->nb_held = 0;
}
