/* SPDX-License-Identifier: MIT */
/*
 * The switch on several lcores (lcores.h). Each partition is a struct of its
 * own, cache-line aligned, written only by the lcore that runs it: its
 * pipeline, its port, its counters, its staging arrays. Partitions talk only
 * through SPSC rte_rings: steer[i][j] carries packets from i to j (DATA for
 * j's lanes, and anything not DATA to 0); ctl[j] carries partition 0's copies
 * of JOIN/FIN/LEAVE, and "free job" words, to j. A ring entry is a struct
 * ina_pkt pointer, or (job_id << 1 | 1) for a free-job word (packet pointers
 * are even).
 *
 * One poll of partition p: receive a burst from its port; keep its own DATA,
 * steer the rest; take what other partitions steered to it; then
 *   p > 0: process the control copies from 0 quietly, before any DATA (a
 *          copy enqueued before 0 answered is visible to the DATA that the
 *          answer caused, since that DATA was received before this dequeue);
 *   p = 0: copy each JOIN/FIN/LEAVE to every other partition, or drop it
 *          (counted; the worker resends) when a control ring is full or no
 *          buffer is left, so the partitions never diverge; in tenant mode
 *          only one whose tag is good (pipeline_authentic: a forged one is
 *          left to partition 0's pipeline, which drops it);
 * and run the pipeline over the burst and send what it answers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include "ina/port_dpdk.h"
#include "ina/util.h"
#include "lcores.h"
#include "pipeline_dump.h"

_Static_assert(sizeof(void *) == 8, "free-job words need 64-bit ring entries");

#define BURST INA_MAX_BURST
#define MAX_IN (BURST * SWITCH_LCORES_MAX) /* own rx plus one burst per peer */
#define TICK_MAX 16			   /* jobs one tick may free */

struct part {
	struct switch_lcores *sl;
	uint16_t index;
	struct pipeline *pipe;
	struct ina_port *port;
	struct rte_ring *out[SWITCH_LCORES_MAX]; /* steer rings from here */
	struct rte_ring *in[SWITCH_LCORES_MAX];	 /* steer rings to here */
	struct rte_ring *ctl;			 /* p > 0: copies from partition 0 */
	uint64_t last_tick;
	struct switch_lcore_stats st;
	/* Snapshot for a print requested during run(). */
	struct switch_lcore_stats snap_st;
	struct pipeline_stats snap_pipe;
	struct ina_port_stats snap_port;
	struct ina_port_dpdk_neigh_stats snap_neigh;
	uint32_t snap_free_slots;
	atomic_uint snap_seen;
	uint16_t nb_to[SWITCH_LCORES_MAX];
	struct ina_pkt *to[SWITCH_LCORES_MAX][BURST];
	struct ina_pkt *mine[MAX_IN];
	struct ina_pkt *outs[MAX_IN];
	void *ctl_buf[BURST];
} __attribute__((aligned(64)));

struct group {
	struct switch_lcores *sl;
	unsigned lcore;
	uint16_t nb;
	uint16_t parts[SWITCH_LCORES_MAX];
};

struct switch_lcores {
	struct switch_lcores_config cfg;
	struct part *parts[SWITCH_LCORES_MAX];
	struct rte_ring *rings[SWITCH_LCORES_MAX * SWITCH_LCORES_MAX];
	unsigned nb_rings;
	struct group groups[SWITCH_LCORES_MAX];
	uint16_t nb_groups;
	volatile sig_atomic_t *stop;
	volatile sig_atomic_t *dump;
	atomic_uint snap_gen;	  /* written by partition 0's lcore only */
	unsigned print_pending;	  /* idem */
	unsigned monitor_pending; /* idem: snap_ready() is due */
};

void
switch_lcores_config_init(struct switch_lcores_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nb_parts = 1;
	cfg->lcore[0] = rte_get_main_lcore();
	pipeline_config_init(&cfg->pipe);
	cfg->ring_size = 1024;
	cfg->tick_ns = INA_NS_PER_MS;
	cfg->idle_polls = 64;
	cfg->max_sleep_ns = 50000;
}

unsigned
switch_lcores_spread(struct switch_lcores_config *cfg)
{
	unsigned lc = rte_get_main_lcore(), used = 0;
	uint16_t k = cfg->nb_parts < SWITCH_LCORES_MAX ? cfg->nb_parts : SWITCH_LCORES_MAX;

	for (uint16_t p = 0; p < k; p++) {
		uint16_t q;

		cfg->lcore[p] = lc;
		for (q = 0; q < p && cfg->lcore[q] != lc; q++)
			;
		used += q == p;
		lc = rte_get_next_lcore(lc, 0, 1); /* wraps around */
	}
	return used;
}

static struct rte_ring *
ring_make(struct switch_lcores *sl, const char *what, unsigned a, unsigned b)
{
	static atomic_uint serial;
	char name[RTE_RING_NAMESIZE];
	struct rte_ring *r;

	snprintf(name, sizeof(name), "isl%u_%s%u_%u", atomic_fetch_add(&serial, 1), what, a, b);
	r = rte_ring_create(name, sl->cfg.ring_size, (int)rte_lcore_to_socket_id(sl->cfg.lcore[b]),
			    RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (r)
		sl->rings[sl->nb_rings++] = r;
	return r;
}

struct switch_lcores *
switch_lcores_create(const struct switch_lcores_config *cfg, char *err, size_t err_size)
{
	struct switch_lcores *sl;
	uint16_t k = cfg->nb_parts;

	if (k == 0 || k > SWITCH_LCORES_MAX) {
		ina_errf(err, err_size, "%u partitions: between 1 and %d", k, SWITCH_LCORES_MAX);
		return NULL;
	}
	if (cfg->ring_size < 2 * BURST || (cfg->ring_size & (cfg->ring_size - 1))) {
		ina_errf(err, err_size, "ring size %u: a power of 2 of at least %d", cfg->ring_size,
			 2 * BURST);
		return NULL;
	}
	for (uint16_t p = 0; p < k; p++) {
		if (!cfg->port[p]) {
			ina_errf(err, err_size, "partition %u has no port", p);
			return NULL;
		}
		if (cfg->lcore[p] >= RTE_MAX_LCORE || !rte_lcore_is_enabled(cfg->lcore[p])) {
			ina_errf(err, err_size,
				 "partition %u: lcore %u is not one of EAL's (-l/--lcores)", p,
				 cfg->lcore[p]);
			return NULL;
		}
	}
	sl = calloc(1, sizeof(*sl));
	if (!sl) {
		ina_errf(err, err_size, "out of memory");
		return NULL;
	}
	sl->cfg = *cfg;
	for (uint16_t p = 0; p < k; p++) {
		struct pipeline_config pc = cfg->pipe;
		struct part *pt = aligned_alloc(64, sizeof(*pt));
		uint16_t g;

		if (!pt) {
			ina_errf(err, err_size, "out of memory");
			goto fail;
		}
		memset(pt, 0, sizeof(*pt));
		sl->parts[p] = pt;
		pt->sl = sl;
		pt->index = p;
		pt->port = cfg->port[p];
		pc.pool = pt->port->pool;
		pc.part_index = p;
		pc.part_count = k;
		pt->pipe = pipeline_create(&pc);
		if (!pt->pipe) {
			ina_errf(err, err_size, "partition %u: cannot create the pipeline: %s", p,
				 strerror(errno));
			goto fail;
		}
		for (g = 0; g < sl->nb_groups && sl->groups[g].lcore != cfg->lcore[p]; g++)
			;
		if (g == sl->nb_groups) {
			sl->nb_groups++;
			sl->groups[g].sl = sl;
			sl->groups[g].lcore = cfg->lcore[p];
		}
		sl->groups[g].parts[sl->groups[g].nb++] = p;
	}
	for (uint16_t i = 0; i < k; i++) {
		for (uint16_t j = 0; j < k; j++) {
			struct rte_ring *r;

			if (i == j)
				continue;
			r = ring_make(sl, "s", i, j);
			if (!r)
				goto ring_fail;
			sl->parts[i]->out[j] = r;
			sl->parts[j]->in[i] = r;
		}
		if (i > 0 && !(sl->parts[i]->ctl = ring_make(sl, "c", 0, i)))
			goto ring_fail;
	}
	return sl;

ring_fail:
	ina_errf(err, err_size, "cannot create a ring of %u entries: %s", cfg->ring_size,
		 rte_strerror(rte_errno));
fail:
	switch_lcores_destroy(sl);
	return NULL;
}

static void
ring_drain(struct rte_ring *r)
{
	void *e;

	while (rte_ring_sc_dequeue(r, &e) == 0)
		if (!((uintptr_t)e & 1))
			ina_pkt_free(e);
}

void
switch_lcores_destroy(struct switch_lcores *sl)
{
	if (!sl)
		return;
	for (unsigned i = 0; i < sl->nb_rings; i++) {
		ring_drain(sl->rings[i]);
		rte_ring_free(sl->rings[i]);
	}
	for (uint16_t p = 0; p < SWITCH_LCORES_MAX; p++) {
		if (!sl->parts[p])
			continue;
		pipeline_destroy(sl->parts[p]->pipe);
		free(sl->parts[p]);
	}
	free(sl);
}

/* ---- the hot path ---- */

static void
send_out(struct part *pt, struct ina_pkt **pkts, uint16_t n)
{
	for (uint16_t i = 0; i < n; i += BURST) {
		uint16_t k = (uint16_t)(n - i < BURST ? n - i : BURST);

		ina_port_tx_burst(pt->port, pkts + i, k);
	}
	pt->st.tx_pkts += n;
}

static void
steer_flush(struct part *pt, uint16_t q)
{
	unsigned n = pt->nb_to[q], done;

	done = rte_ring_sp_enqueue_burst(pt->out[q], (void **)pt->to[q], n, NULL);
	pt->st.steered_out += done;
	if (done < n) {
		pt->st.steer_drop += n - done;
		ina_pkt_free_bulk(pt->to[q] + done, n - done);
	}
	pt->nb_to[q] = 0;
}

/* p > 0: the control copies and free-job words from partition 0, in order. */
static unsigned
follow(struct part *pt, uint64_t now)
{
	unsigned n = rte_ring_sc_dequeue_burst(pt->ctl, pt->ctl_buf, BURST, NULL);
	struct ina_pkt **batch = pt->outs; /* free until the pipeline runs */
	uint16_t nb = 0;

	for (unsigned i = 0; i < n; i++) {
		uintptr_t e = (uintptr_t)pt->ctl_buf[i];

		if (e & 1) {
			pipeline_rx_quiet(pt->pipe, batch, nb, now); /* in order */
			nb = 0;
			pt->st.jobs_followed += (uint64_t)pipeline_job_free(pt->pipe,
									    (uint32_t)(e >> 1));
		} else {
			batch[nb++] = (struct ina_pkt *)e;
			pt->st.ctl_copies++;
		}
	}
	pipeline_rx_quiet(pt->pipe, batch, nb, now);
	return n;
}

/* p = 0: copies 'pkt' to every other partition; 0, or -1 to drop it. */
static int
sequence(struct switch_lcores *sl, struct part *pt, struct ina_pkt *pkt)
{
	struct ina_pkt *copies[SWITCH_LCORES_MAX];
	uint16_t k = sl->cfg.nb_parts;

	for (uint16_t q = 1; q < k; q++)
		if (rte_ring_free_count(sl->parts[q]->ctl) == 0)
			return -1;
	for (uint16_t q = 1; q < k; q++) {
		copies[q] = ina_pkt_alloc(pt->port->pool);
		if (!copies[q] || copies[q]->cap < pkt->len) {
			ina_pkt_free(copies[q]);
			while (--q >= 1)
				ina_pkt_free(copies[q]);
			return -1;
		}
		memcpy(copies[q]->data, pkt->data, pkt->len);
		copies[q]->len = pkt->len;
		copies[q]->peer = pkt->peer;
	}
	/* Only this lcore enqueues on the control rings: the room checked stays. */
	for (uint16_t q = 1; q < k; q++)
		rte_ring_sp_enqueue(sl->parts[q]->ctl, copies[q]);
	pt->st.ctl_copies += (uint64_t)(k - 1);
	return 0;
}

/* p = 0: expiry by time, followed by the others through the control rings. */
static void
tick(struct switch_lcores *sl, struct part *pt, uint64_t now)
{
	uint32_t freed[TICK_MAX];
	uint16_t nb;

	for (uint16_t q = 1; q < sl->cfg.nb_parts; q++)
		if (rte_ring_free_count(sl->parts[q]->ctl) < TICK_MAX)
			return; /* next poll */
	pt->last_tick = now;
	nb = pipeline_tick_freed(pt->pipe, now, freed, TICK_MAX);
	for (uint16_t q = 1; q < sl->cfg.nb_parts; q++)
		for (uint16_t i = 0; i < nb; i++)
			rte_ring_sp_enqueue(sl->parts[q]->ctl,
					    (void *)((uintptr_t)freed[i] << 1 | 1));
}

static void
snapshot(struct switch_lcores *sl, struct part *pt)
{
	unsigned gen = atomic_load_explicit(&sl->snap_gen, memory_order_relaxed);

	if (gen == atomic_load_explicit(&pt->snap_seen, memory_order_relaxed))
		return;
	pt->snap_st = pt->st;
	pt->snap_pipe = *pipeline_stats(pt->pipe);
	pt->snap_port = pt->port->stats;
	pt->snap_free_slots = pipeline_free_slots(pt->pipe);
	if (pt->port->ops == &ina_port_dpdk_ops)
		ina_port_dpdk_neigh_stats(pt->port, &pt->snap_neigh);
	atomic_store_explicit(&pt->snap_seen, gen, memory_order_release);
}

/* One poll of partition 'pt'; returns the packets it handled. */
static unsigned
poll_part(struct switch_lcores *sl, struct part *pt)
{
	uint16_t k = sl->cfg.nb_parts, me = pt->index, nb_mine = 0;
	struct ina_pkt *rx[BURST];
	unsigned work;
	uint16_t nb, nb_out;
	uint64_t now;

	nb = ina_port_rx_burst(pt->port, rx, BURST);
	pt->st.rx_pkts += nb;
	work = nb;
	for (uint16_t i = 0; i < nb; i++) {
		uint16_t q;

		if (pipeline_steer(rx[i], k, &q) != PSTEER_LANE)
			q = 0;
		if (q == me)
			pt->mine[nb_mine++] = rx[i];
		else
			pt->to[q][pt->nb_to[q]++] = rx[i];
	}
	for (uint16_t q = 0; q < k; q++)
		if (pt->nb_to[q])
			steer_flush(pt, q);
	for (uint16_t q = 0; q < k; q++) {
		unsigned n;

		if (q == me)
			continue;
		n = rte_ring_sc_dequeue_burst(pt->in[q], (void **)(pt->mine + nb_mine), BURST,
					      NULL);
		nb_mine = (uint16_t)(nb_mine + n);
		pt->st.steered_in += n;
		work += n;
	}
	now = ina_now_ns();
	if (me > 0) {
		work += follow(pt, now);
	} else if (k > 1) {
		uint16_t kept = 0;

		for (uint16_t i = 0; i < nb_mine; i++) {
			uint16_t q;

			if (pipeline_steer(pt->mine[i], k, &q) != PSTEER_ALL) {
				pt->mine[kept++] = pt->mine[i];
				continue;
			}
			/* Tenant mode: a forged JOIN/FIN/LEAVE costs this
			 * partition alone; its pipeline drops it (auth_fail). */
			if (!pipeline_authentic(pt->pipe, pt->mine[i])) {
				pt->st.ctl_unauth++;
			} else if (sequence(sl, pt, pt->mine[i]) < 0) {
				pt->st.ctl_drop++;
				ina_pkt_free(pt->mine[i]);
				continue;
			}
			pt->mine[kept++] = pt->mine[i];
		}
		nb_mine = kept;
	}
	if (nb_mine) {
		nb_out = pipeline_rx_burst(pt->pipe, pt->mine, nb_mine, now, pt->outs);
		send_out(pt, pt->outs, nb_out);
	}
	if (me == 0 && now - pt->last_tick >= sl->cfg.tick_ns)
		tick(sl, pt, now);
	pt->st.polls++;
	if (work) {
		if (!pt->st.first_work_ns)
			pt->st.first_work_ns = now;
		pt->st.last_work_ns = now;
	} else {
		pt->st.idle_polls++;
	}
	snapshot(sl, pt);
	return work;
}

/* ---- lcores ---- */

/* 1 when every partition has published the current snapshot. */
static int
snap_ready(struct switch_lcores *sl)
{
	unsigned gen = atomic_load_explicit(&sl->snap_gen, memory_order_relaxed);

	for (uint16_t p = 0; p < sl->cfg.nb_parts; p++)
		if (atomic_load_explicit(&sl->parts[p]->snap_seen, memory_order_acquire) != gen)
			return 0;
	return 1;
}

static void
print_if_ready(struct switch_lcores *sl)
{
	if (!snap_ready(sl))
		return;
	sl->print_pending = 0;
	switch_lcores_print(sl, stdout);
	fflush(stdout);
}

/* Partition 0's lcore, once per poll: a monitor's snapshot asked for and
 * handed over when every partition has published it. */
static void
monitor(struct switch_lcores *sl)
{
	if (!sl->monitor_pending) {
		if (!sl->cfg.snap_wanted(sl->cfg.snap_arg))
			return;
		atomic_fetch_add_explicit(&sl->snap_gen, 1, memory_order_relaxed);
		sl->monitor_pending = 1;
		return; /* the partitions publish during the next polls */
	}
	if (snap_ready(sl) && sl->cfg.snap_ready(sl, sl->cfg.snap_arg) == 0)
		sl->monitor_pending = 0;
}

/*
 * After a poll that found no work, the 'idle'-th in a row, 'since_work' ns
 * after the last one that did: the first idle_polls go on at once; then,
 * while work came within ina_busy_poll_ns() (util.h: rounds run, the next
 * packet is due within a round trip), each poll yields the CPU (sched_yield: at once on a
 * core of its own, to the hosts on a shared one) rather than sleep, as a
 * sleep costs its timer slack and a lane's round trip with it; quiet for
 * longer, sleeps growing from 1 us to max_sleep_ns.
 */
static void
idle_wait(struct switch_lcores *sl, unsigned idle, uint64_t since_work, struct part *first)
{
	unsigned over;
	uint64_t ns;
	struct timespec ts;

	if (idle <= sl->cfg.idle_polls)
		return;
	if (since_work < ina_busy_poll_ns()) {
		sched_yield();
		return;
	}
	over = idle - sl->cfg.idle_polls;
	if (over <= sl->cfg.idle_polls) {
		rte_pause();
		return;
	}
	over -= sl->cfg.idle_polls;
	ns = over >= 16 ? sl->cfg.max_sleep_ns : 1000ull << (over - 1);
	if (ns > sl->cfg.max_sleep_ns)
		ns = sl->cfg.max_sleep_ns;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)ns;
	first->st.sleeps++;
	nanosleep(&ts, NULL);
}

static int
group_main(void *arg)
{
	struct group *g = arg;
	struct switch_lcores *sl = g->sl;
	int has_first = g->parts[0] == 0; /* partitions are listed in order */
	int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	unsigned idle = 0;
	uint64_t last_work = 0;

	/* Idle sleeps of a few microseconds, not the default 50 us of slack. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);

	while (!*sl->stop) {
		unsigned work = 0;

		if (has_first && sl->dump && *sl->dump) {
			*sl->dump = 0;
			atomic_fetch_add_explicit(&sl->snap_gen, 1, memory_order_relaxed);
			sl->print_pending = 1;
		}
		for (uint16_t i = 0; i < g->nb; i++)
			work += poll_part(sl, sl->parts[g->parts[i]]);
		if (has_first && sl->print_pending)
			print_if_ready(sl);
		if (has_first && sl->cfg.snap_wanted)
			monitor(sl);
		idle = work ? 0 : idle + 1;
		if (work) {
			last_work = 0; /* read the clock only once idle */
		} else if (idle > sl->cfg.idle_polls) {
			uint64_t now = ina_now_ns();

			if (!last_work)
				last_work = now;
			idle_wait(sl, idle, now - last_work, sl->parts[g->parts[0]]);
		}
	}
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
	return 0;
}

int
switch_lcores_run(struct switch_lcores *sl, volatile sig_atomic_t *stop,
		  volatile sig_atomic_t *dump)
{
	unsigned self = rte_lcore_id();
	struct group *mine = NULL;
	int ret = 0;
	uint16_t launched = 0;

	if (self != rte_get_main_lcore())
		return -EPERM;
	sl->stop = stop;
	sl->dump = dump;
	for (uint16_t g = 0; g < sl->nb_groups; g++) {
		if (sl->groups[g].lcore == self) {
			mine = &sl->groups[g];
			continue;
		}
		ret = rte_eal_remote_launch(group_main, &sl->groups[g], sl->groups[g].lcore);
		if (ret < 0) {
			*stop = 1;
			break;
		}
		launched++;
	}
	if (mine) {
		group_main(mine);
	} else {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = 1000000 };

		while (!*stop)
			nanosleep(&ts, NULL);
	}
	for (uint16_t g = 0; g < sl->nb_groups && launched; g++) {
		if (&sl->groups[g] == mine)
			continue;
		rte_eal_wait_lcore(sl->groups[g].lcore);
		launched--;
	}
	/* Every lcore has stopped: let the replicas catch up with partition 0,
	 * so that all job tables agree (DATA left in steer rings is freed by
	 * switch_lcores_destroy). */
	for (uint16_t p = 1; p < sl->cfg.nb_parts; p++)
		while (follow(sl->parts[p], ina_now_ns()))
			;
	sl->stop = NULL;
	sl->dump = NULL;
	return ret;
}

/* ---- counters ---- */

const struct pipeline *
switch_lcores_pipeline(const struct switch_lcores *sl, uint16_t p)
{
	return p < sl->cfg.nb_parts ? sl->parts[p]->pipe : NULL;
}

const struct switch_lcore_stats *
switch_lcores_stats(const struct switch_lcores *sl, uint16_t p)
{
	return p < sl->cfg.nb_parts ? &sl->parts[p]->st : NULL;
}

void
switch_lcores_snapshot(const struct switch_lcores *sl, uint16_t p, struct switch_lcores_snap *out)
{
	const struct part *pt = sl->parts[p];

	out->lcore = sl->cfg.lcore[p];
	out->free_slots = pt->snap_free_slots;
	out->lc = &pt->snap_st;
	out->pipe = &pt->snap_pipe;
	out->port = &pt->snap_port;
	out->neigh = &pt->snap_neigh;
}

void
switch_lcores_sum(const struct switch_lcores *sl, struct pipeline_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (uint16_t p = 0; p < sl->cfg.nb_parts; p++)
		pipeline_stats_add(sum, pipeline_stats(sl->parts[p]->pipe));
}

void
switch_lcores_print(const struct switch_lcores *sl, FILE *f)
{
	struct pipeline_stats sum;
	/* During run() (a print asked through 'dump'), the snapshots. */
	int snap = sl->stop != NULL;

	memset(&sum, 0, sizeof(sum));
	fprintf(f, "ina-switch stats: %u partitions\n", sl->cfg.nb_parts);
	for (uint16_t p = 0; p < sl->cfg.nb_parts; p++) {
		const struct part *pt = sl->parts[p];
		const struct switch_lcore_stats *s = snap ? &pt->snap_st : &pt->st;
		const struct ina_port_stats *ps = snap ? &pt->snap_port : &pt->port->stats;

		pipeline_stats_add(&sum, snap ? &pt->snap_pipe : pipeline_stats(pt->pipe));
		fprintf(f,
			"  partition %u lcore %u: port rx %" PRIu64 " tx %" PRIu64
			" rx_drop %" PRIu64 " tx_drop %" PRIu64 "; steered out %" PRIu64
			" in %" PRIu64 " drop %" PRIu64 "; control copies %" PRIu64 " drop %" PRIu64
			" unauthenticated %" PRIu64 "; polls %" PRIu64 " idle %" PRIu64
			" sleeps %" PRIu64 "\n",
			p, sl->cfg.lcore[p], ps->rx_pkts, ps->tx_pkts, ps->rx_drop, ps->tx_drop,
			s->steered_out, s->steered_in, s->steer_drop, s->ctl_copies, s->ctl_drop,
			s->ctl_unauth, s->polls, s->idle_polls, s->sleeps);
	}
	pipeline_stats_fprint(&sum, f);
	/* Partition 0's job table (the same in every partition); its lanes only.
	 * During run() this runs on partition 0's lcore. */
	pipeline_dump(sl->parts[0]->pipe, f);
}
