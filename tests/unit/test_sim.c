/* SPDX-License-Identifier: MIT */
/*
 * The simulator (sim/): its event queue and link model, the packet
 * simulation against an analytic model on a trivial topology, determinism
 * (same seed, same report; another seed, other losses, the same sums), a
 * lossy topology finishing with every sum right, two racks under a spine
 * (hierarchical aggregation: exact, lossy too, each uplink carrying a third
 * of its three host links' bytes), bf16 across racks refused, and the ring
 * model against its closed form.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "events.h"
#include "ina/pkt.h"
#include "ina/wire.h"
#include "link.h"
#include "net.h"
#include "pipeline.h"
#include "report.h"
#include "ring.h"
#include "route.h"
#include "sim_topo.h"

static const struct sim_topo_link gbit = { 1000000000ull, 5000, 0 };

/* Runs 't' with 'seed'; returns the report as JSON text (caller frees) and
 * the run's verdict in '*ok'. */
static char *
run_json(const struct topology *t, uint64_t seed, int *ok, struct sim_job_report *job0)
{
	struct sim_config cfg;
	struct sim_net *net;
	char err[256];
	json_t *j;
	char *s;

	sim_config_init(&cfg);
	cfg.seed = seed;
	net = sim_net_create(t, &cfg, err, sizeof(err));
	assert_non_null(net);
	*ok = sim_net_run(net) == 0;
	if (!*ok)
		print_message("job: %s\n", sim_net_report(net)->jobs[0].error);
	if (job0)
		*job0 = sim_net_report(net)->jobs[0];
	j = sim_report_json(t, &cfg, sim_net_report(net), NULL);
	assert_non_null(j);
	s = json_dumps(j, JSON_INDENT(1));
	json_decref(j);
	sim_net_destroy(net);
	return s;
}

static void
test_sim_events_order(void **state)
{
	struct sim_events q;
	struct sim_event ev;
	const uint64_t times[] = { 50, 10, 50, 30, 10, 50, 0 };
	uint64_t last_t = 0;
	int32_t last_at = -1;

	(void)state;
	sim_events_init(&q);
	for (int i = 0; i < 7; i++) {
		ev = (struct sim_event){ .time = times[i], .at = i };
		assert_int_equal(sim_events_push(&q, &ev), 0);
	}
	assert_int_equal(sim_events_peek_time(&q), 0);
	/* By time, and in insertion order among equal times. */
	for (int i = 0; i < 7; i++) {
		assert_int_equal(sim_events_pop(&q, &ev), 1);
		assert_true(ev.time >= last_t);
		if (ev.time == last_t)
			assert_true(ev.at > last_at);
		last_t = ev.time;
		last_at = ev.at;
	}
	assert_int_equal(sim_events_pop(&q, &ev), 0);
	assert_int_equal(sim_events_peek_time(&q), UINT64_MAX);
	sim_events_fini(&q);
}

static void
test_sim_link_model(void **state)
{
	struct sim_link l;

	(void)state;
	/* 1 Gbit/s: 1000 bytes take 8000 ns; 3000 bytes of queue. */
	sim_link_init(&l, 1000000000ull, 500, 0, 3000, 1);
	assert_int_equal(sim_link_send(&l, 0, 1000), 8500);
	assert_int_equal(sim_link_send(&l, 0, 1000), 16500);
	assert_int_equal(sim_link_send(&l, 0, 1000), 24500);
	/* 3000 bytes wait (the first is being serialised): tail drop. */
	assert_int_equal(sim_link_send(&l, 0, 1000), UINT64_MAX);
	assert_int_equal(l.st.tail_drops, 1);
	/* Once the first left, there is room again. */
	assert_int_equal(sim_link_send(&l, 8000, 1000), 32500);
	assert_int_equal(l.st.pkts, 4);
	assert_int_equal(l.st.busy_ns, 32000);
	/* Loss: every packet is serialised, about 'loss' of them lost. */
	sim_link_init(&l, 0, 0, 0.25, 0, 7);
	for (int i = 0; i < 10000; i++)
		sim_link_send(&l, (uint64_t)i, 100);
	assert_in_range(l.st.lost, 2250, 2750);
}

/*
 * 2 hosts on one switch, no loss, every block non-zero. Each host sends
 * every block once and receives every sum once: n = M / B packets each way
 * of s = 56 + 4B + 42 bytes. The uplink never idles (8 lanes in flight hold
 * more than a packet's round trip), so a round takes the n serialisations of
 * the uplink, then the last block's latency up, its result's serialisation
 * and latency down: T = (n + 1) * ser(s) + 2 * latency. The simulation may
 * differ by the rounding of each serialisation to a nanosecond (at most one
 * per packet on the path, n + 1) and by where the next round's first
 * packets start, which is what the engines do; both are inside one packet's
 * serialisation, the tolerance.
 */
static void
test_sim_analytic_star(void **state)
{
	struct topology *t = sim_topo_racks(1, 2, gbit, gbit);
	struct topo_job *j = sim_topo_job(t);
	struct sim_config cfg;
	struct sim_net *net;
	const struct sim_report *rep;
	char err[256];
	uint64_t n, bytes, ser, want;

	(void)state;
	j->tensor_len = 64 * 256;
	j->rounds = 3;
	sim_config_init(&cfg);
	net = sim_net_create(t, &cfg, err, sizeof(err));
	assert_non_null(net);
	if (sim_net_run(net) < 0)
		fail_msg("job: %s", sim_net_report(net)->jobs[0].error);
	rep = sim_net_report(net);
	assert_int_equal(rep->jobs[0].state, SIM_JOB_OK);
	assert_int_equal(rep->jobs[0].sums_checked, 2 * 3);
	n = j->tensor_len / j->block_size;
	bytes = INA_HDR_SIZE + 4u * j->block_size + cfg.frame_overhead;
	ser = bytes * 8; /* ns at 1 Gbit/s */
	want = (n + 1) * ser + 2 * gbit.latency_ns;
	for (uint32_t r = 0; r < j->rounds; r++) {
		uint64_t got = rep->jobs[0].round_ns[r];

		print_message("round %u: %llu ns, analytic %llu ns\n", r, (unsigned long long)got,
			      (unsigned long long)want);
		assert_in_range(got, want - ser, want + ser);
	}
	/* Exactly n packets of 'bytes' each way per host per round; the
	 * host that finished first may have sent its FIN (header-only)
	 * and had it answered before the other ended the last round. */
	for (uint32_t k = 0; k < t->nb_links; k++) {
		for (int d = 0; d < 2; d++) {
			const struct sim_link_stats *st = &rep->links[k].dir[d];
			uint64_t extra = st->pkts - n * j->rounds;

			assert_in_range(st->pkts, n * j->rounds, n * j->rounds + 1);
			assert_int_equal(st->bytes,
					 n * j->rounds * bytes +
						 extra * (INA_HDR_SIZE + cfg.frame_overhead));
		}
	}
	assert_int_equal(rep->jobs[0].retransmits, 0);
	sim_net_destroy(net);
	sim_topo_free(t);
}

static struct topology *
lossy4(double loss)
{
	struct sim_topo_link l = { 100000000ull, 20000, loss };
	struct topology *t = sim_topo_racks(1, 4, l, l);
	struct topo_job *j = sim_topo_job(t);

	j->tensor_len = 50000;
	j->rounds = 3;
	j->density = 0.3;
	j->seed = 5;
	return t;
}

static void
test_sim_deterministic(void **state)
{
	struct topology *t = lossy4(0.02);
	struct sim_job_report a, c;
	int ok1, ok2, ok3;
	char *r1, *r2, *r3;

	(void)state;
	r1 = run_json(t, 1, &ok1, &a);
	r2 = run_json(t, 1, &ok2, NULL);
	r3 = run_json(t, 2, &ok3, &c);
	assert_true(ok1 && ok2 && ok3);
	assert_string_equal(r1, r2);
	/* Another seed loses other packets: the report differs, the sums
	 * (checked on every host every round) are right in both. */
	assert_string_not_equal(r1, r3);
	assert_int_equal(a.state, SIM_JOB_OK);
	assert_int_equal(c.state, SIM_JOB_OK);
	assert_int_equal(a.sums_checked, 4 * 3);
	assert_int_equal(c.sums_checked, 4 * 3);
	assert_true(a.retransmits != c.retransmits || a.pkts_sent != c.pkts_sent);
	free(r1);
	free(r2);
	free(r3);
	sim_topo_free(t);
}

/* 10% loss each way on every link, in each encoding: every round of every
 * host checked (bit for bit in f32 and i32, within the bound in bf16). */
static void
test_sim_lossy_exact(void **state)
{
	const uint8_t encs[] = { INA_ENC_F32, INA_ENC_I32, INA_ENC_BF16 };

	(void)state;
	for (unsigned e = 0; e < 3; e++) {
		struct topology *t = lossy4(0.10);
		struct sim_config cfg;
		struct sim_net *net;
		const struct sim_report *rep;
		uint64_t lost = 0;
		char err[256];

		sim_topo_job(t)->encoding = encs[e];
		sim_config_init(&cfg);
		net = sim_net_create(t, &cfg, err, sizeof(err));
		assert_non_null(net);
		if (sim_net_run(net) < 0)
			fail_msg("encoding %u: %s", encs[e], sim_net_report(net)->jobs[0].error);
		rep = sim_net_report(net);
		assert_int_equal(rep->jobs[0].state, SIM_JOB_OK);
		assert_int_equal(rep->jobs[0].rounds_done, 3);
		assert_int_equal(rep->jobs[0].sums_checked, 4 * 3);
		for (uint32_t k = 0; k < rep->nb_links; k++)
			lost += rep->links[k].dir[0].lost + rep->links[k].dir[1].lost;
		assert_true(lost > 0);
		assert_true(rep->jobs[0].retransmits > 0);
		sim_net_destroy(net);
		sim_topo_free(t);
	}
}

/* Queues of two frames: the switch's fan-out and the retransmissions
 * overflow them, tail drops are counted, and every sum is still right. */
static void
test_sim_tail_drop(void **state)
{
	struct topology *t = lossy4(0);
	struct sim_config cfg;
	struct sim_net *net;
	const struct sim_report *rep;
	uint64_t drops = 0;
	char err[256];

	(void)state;
	sim_topo_job(t)->density = 1;
	sim_config_init(&cfg);
	cfg.queue_bytes = 2 * (INA_HDR_SIZE + 4 * 256 + 42);
	net = sim_net_create(t, &cfg, err, sizeof(err));
	assert_non_null(net);
	if (sim_net_run(net) < 0)
		fail_msg("%s", sim_net_report(net)->jobs[0].error);
	rep = sim_net_report(net);
	assert_int_equal(rep->jobs[0].state, SIM_JOB_OK);
	for (uint32_t k = 0; k < rep->nb_links; k++)
		drops += rep->links[k].dir[0].tail_drops + rep->links[k].dir[1].tail_drops;
	assert_true(drops > 0);
	assert_true(rep->jobs[0].retransmits > 0);
	for (uint32_t k = 0; k < rep->nb_links; k++)
		assert_true(rep->links[k].dir[1].queue_max <= cfg.queue_bytes);
	sim_net_destroy(net);
	sim_topo_free(t);
}

/* Two jobs on one switch (hosts 0-1 and 2-3): one pipeline holds both, each
 * finishes with its own figures; a job on the switch of another's hosts
 * cannot take a host twice. */
static void
test_sim_two_jobs(void **state)
{
	struct topology *t = lossy4(0.01);
	struct topo_job *j;
	struct sim_config cfg;
	struct sim_net *net;
	const struct sim_report *rep;
	char err[256];

	(void)state;
	t->jobs = realloc(t->jobs, 2 * sizeof(*t->jobs));
	t->nb_jobs = 2;
	t->jobs[1] = t->jobs[0];
	j = &t->jobs[1];
	j->name = strdup("k");
	j->job_id = 2;
	j->hosts = calloc(2, sizeof(int));
	j->hosts[0] = t->jobs[0].hosts[2];
	j->hosts[1] = t->jobs[0].hosts[3];
	j->nb_hosts = 2;
	j->density = 0.7;
	j->rounds = 4;
	t->jobs[0].nb_hosts = 2;
	sim_config_init(&cfg);
	net = sim_net_create(t, &cfg, err, sizeof(err));
	assert_non_null(net);
	if (sim_net_run(net) < 0)
		fail_msg("%s / %s", sim_net_report(net)->jobs[0].error,
			 sim_net_report(net)->jobs[1].error);
	rep = sim_net_report(net);
	assert_int_equal(rep->jobs[0].state, SIM_JOB_OK);
	assert_int_equal(rep->jobs[1].state, SIM_JOB_OK);
	assert_int_equal(rep->jobs[0].sums_checked, 2 * 3);
	assert_int_equal(rep->jobs[1].sums_checked, 2 * 4);
	assert_true(rep->switches[0]->jobs_admitted == 2);
	sim_net_destroy(net);
	/* Job k on hosts of job j: refused, j still runs. */
	t->jobs[1].hosts[0] = t->jobs[0].hosts[1];
	net = sim_net_create(t, &cfg, err, sizeof(err));
	assert_non_null(net);
	assert_int_equal(sim_net_run(net), 0);
	rep = sim_net_report(net);
	assert_int_equal(rep->jobs[0].state, SIM_JOB_OK);
	assert_int_equal(rep->jobs[1].state, SIM_JOB_REFUSED);
	assert_non_null(strstr(rep->jobs[1].why, "in another job"));
	sim_net_destroy(net);
	sim_topo_free(t);
}

/* Paths through racks under a spine: within a rack, host - rack - host;
 * across racks, up to the spine and down, each link the right way. */
static void
test_sim_routes(void **state)
{
	struct topology *t = sim_topo_racks(2, 2, gbit, gbit);
	struct topo_job *j = sim_topo_job(t);
	struct sim_route r;
	uint32_t dirs[8];
	char err[256];
	int a = j->hosts[0], b = j->hosts[1], c = j->hosts[3];

	(void)state;
	assert_int_equal(sim_route_init(&r, t, err, sizeof(err)), 0);
	assert_int_equal(sim_route_path(&r, a, b, dirs, 8), 2);
	/* Host links are a -> b = host -> switch: up is direction 0. */
	assert_int_equal(dirs[0] & 1, 0);
	assert_int_equal(dirs[1] & 1, 1);
	assert_int_equal(sim_route_path(&r, a, c, dirs, 8), 4);
	assert_int_equal(t->links[dirs[1] / 2].b, 0); /* rack -> spine */
	assert_int_equal(dirs[1] & 1, 0);
	assert_int_equal(dirs[2] & 1, 1);			 /* spine -> rack */
	assert_int_equal(sim_route_path(&r, a, c, dirs, 3), -1); /* too long */
	assert_int_equal(sim_route_path(&r, c, c, dirs, 8), 0);
	sim_route_fini(&r);
	/* A host said to hang off a switch it has no link to: refused by
	 * name. */
	t->nodes[c].attach = 1;
	assert_int_equal(sim_route_init(&r, t, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "h3: no link to s1, the switch it hangs off");
	sim_topo_free(t);
}

/* Real gradients (.npy): summed in arrival order, checked within the f32
 * bound (workload.h), under loss. */
static void
test_sim_gradients_file(void **state)
{
	struct topology *t = lossy4(0.01);
	struct topo_job *j = sim_topo_job(t);
	struct sim_job_report rep;
	int ok;
	char *r;

	(void)state;
	j->data = TOPO_DATA_FILE;
	j->path = strdup(INA_SOURCE_DIR "/data/grads_cnn_digits_3it.npy");
	j->tensor_len = 0; /* the file's */
	r = run_json(t, 3, &ok, &rep);
	assert_true(ok);
	assert_int_equal(rep.state, SIM_JOB_OK);
	assert_int_equal(rep.tensor_len, 71754);
	assert_int_equal(rep.sums_checked, 4 * 3);
	free(r);
	sim_topo_free(t);
}

/* Adds 1 to the first element of the first RESULT with a payload that
 * reaches host 'victim' (every host when -2), as a switch with a broken
 * adder would. */
struct corrupt {
	int victim;
	uint8_t done[64]; /* by node index */
};

static void
corrupt_once(void *arg, struct ina_pkt *pkt, int src, int dst, uint64_t now)
{
	struct corrupt *c = arg;
	struct ina_hdr h;
	uint32_t x;
	float f;

	(void)src;
	(void)now;
	if ((c->victim != -2 && dst != c->victim) || dst >= 64 || c->done[dst] ||
	    pkt->len <= INA_HDR_SIZE)
		return;
	ina_wire_decode_hdr(pkt->data, &h);
	if (h.type != INA_T_RESULT)
		return;
	memcpy(&x, pkt->data + INA_HDR_SIZE, 4);
	x = __builtin_bswap32(x);
	memcpy(&f, &x, 4);
	f += 1.0f;
	memcpy(&x, &f, 4);
	x = __builtin_bswap32(x);
	memcpy(pkt->data + INA_HDR_SIZE, &x, 4);
	c->done[dst] = 1;
}

/* One rank's result corrupted (it differs from the others'), then every
 * rank's alike (they agree, and the full check of the first catches it). */
static void
test_sim_wrong_sum_fails(void **state)
{
	for (int every = 0; every < 2; every++) {
		struct topology *t = lossy4(0);
		struct corrupt c = { .victim = every ? -2 : sim_topo_job(t)->hosts[2] };
		struct sim_config cfg;
		struct sim_net *net;
		const struct sim_job_report *rep;
		char err[256];

		(void)state;
		sim_config_init(&cfg);
		net = sim_net_create(t, &cfg, err, sizeof(err));
		assert_non_null(net);
		sim_net_set_tap(net, corrupt_once, &c);
		assert_int_equal(sim_net_run(net), -1);
		rep = &sim_net_report(net)->jobs[0];
		assert_int_equal(rep->state, SIM_JOB_FAILED);
		print_message("%s\n", rep->error);
		assert_non_null(strstr(rep->error, every ? "round 0: wrong sum: 1 elements"
							 : "rank 2 round 0: wrong sum"));
		sim_net_destroy(net);
		sim_topo_free(t);
	}
}

/* Bytes sent over the rounds on link 'k' in direction 'd'. */
static uint64_t
link_bytes(const struct sim_report *rep, uint32_t k, int d)
{
	return rep->links[k].dir[d].bytes;
}

/* Two racks of three under a spine (hierarchical aggregation): every sum
 * right on every host; each rack's uplink carries what one host link does
 * (one partial sum up for three contributions, one result down for three
 * copies), a third of its host links together, each way. */
static void
test_sim_two_tiers(void **state)
{
	struct topology *t = sim_topo_racks(2, 3, gbit, gbit);
	struct sim_config cfg;
	struct sim_net *net;
	const struct sim_report *rep;
	char err[256];

	(void)state;
	sim_config_init(&cfg);
	net = sim_net_create(t, &cfg, err, sizeof(err));
	assert_non_null(net);
	if (sim_net_run(net) < 0)
		fail_msg("job: %s", sim_net_report(net)->jobs[0].error);
	rep = sim_net_report(net);
	assert_int_equal(rep->jobs[0].state, SIM_JOB_OK);
	assert_int_equal(rep->jobs[0].sums_checked, 6 * 2);
	assert_int_equal(rep->jobs[0].switch_node, 0);
	assert_int_equal(rep->jobs[0].nb_switches, 3);
	assert_int_equal(rep->jobs[0].tiers, 2);
	assert_true(rep->jobs[0].ring_ok);
	for (uint32_t k = 0; k < t->nb_links; k++) {
		const struct topo_link *l = &t->links[k];
		uint64_t hosts[2] = { 0, 0 };

		if (t->nodes[l->a].kind != TOPO_SWITCH)
			continue;
		/* l is rack l->a's uplink: its host links' bytes each way. */
		for (uint32_t h = 0; h < t->nb_links; h++)
			for (int d = 0; d < 2; d++)
				if (t->links[h].b == l->a)
					hosts[d] += link_bytes(rep, h, d);
		for (int d = 0; d < 2; d++) {
			double ratio = (double)link_bytes(rep, k, d) / (double)hosts[d];

			if (ratio < 0.3 || ratio > 0.37)
				fail_msg("rack %s's uplink: %.3f of its host links' bytes (dir %d)",
					 t->nodes[l->a].name, ratio, d);
		}
	}
	sim_net_destroy(net);
	sim_topo_free(t);
}

/* The same with loss on every link, the uplinks included: repaired, exact. */
static void
test_sim_two_tiers_lossy(void **state)
{
	struct sim_topo_link l = { 1000000000ull, 5000, 0.01 };
	struct topology *t = sim_topo_racks(2, 3, l, l);
	struct sim_config cfg;
	struct sim_net *net;
	const struct sim_report *rep;
	char err[256];

	(void)state;
	sim_topo_job(t)->rounds = 3;
	sim_config_init(&cfg);
	net = sim_net_create(t, &cfg, err, sizeof(err));
	assert_non_null(net);
	if (sim_net_run(net) < 0)
		fail_msg("job: %s", sim_net_report(net)->jobs[0].error);
	rep = sim_net_report(net);
	assert_int_equal(rep->jobs[0].state, SIM_JOB_OK);
	assert_int_equal(rep->jobs[0].sums_checked, 6 * 3);
	assert_true(rep->jobs[0].retransmits > 0);
	sim_net_destroy(net);
	sim_topo_free(t);
}

/* bf16 across racks: refused with the reason; the ring model still runs. */
static void
test_sim_refuses_bf16_tiers(void **state)
{
	struct topology *t = sim_topo_racks(2, 3, gbit, gbit);
	struct sim_config cfg;
	struct sim_net *net;
	const struct sim_report *rep;
	char err[256];

	(void)state;
	sim_topo_job(t)->encoding = INA_ENC_BF16;
	sim_config_init(&cfg);
	net = sim_net_create(t, &cfg, err, sizeof(err));
	assert_non_null(net);
	assert_int_equal(sim_net_run(net), 0);
	rep = sim_net_report(net);
	assert_int_equal(rep->jobs[0].state, SIM_JOB_REFUSED);
	assert_non_null(strstr(rep->jobs[0].why, "bf16"));
	assert_true(rep->jobs[0].ring_ok);
	assert_int_equal(rep->events, 0);
	sim_net_destroy(net);
	sim_topo_free(t);
}

/* ring.h's closed form: 2(N-1)/N * S / bw + 2(N-1) * path latency, on one
 * switch, no framing; each of the 2(N-1) steps may round up by 1 ns. */
static void
test_sim_ring_closed_form(void **state)
{
	const uint16_t ns[] = { 2, 3, 8, 64 };

	(void)state;
	for (unsigned i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		struct sim_topo_link l = { 10000000000ull, 1500, 0 };
		struct topology *t = sim_topo_racks(1, ns[i], l, l);
		struct topo_job *j = sim_topo_job(t);
		struct sim_route r;
		struct ring_result res;
		char err[256];
		uint64_t n = ns[i], s_bytes, want;

		j->tensor_len = 262144 - 262144 % ns[i]; /* N divides it */
		s_bytes = (uint64_t)j->tensor_len * 4;
		assert_int_equal(sim_route_init(&r, t, err, sizeof(err)), 0);
		assert_int_equal(ring_model(t, &r, j, 4, 0, &res, err, sizeof(err)), 0);
		want = 2 * (n - 1) * (s_bytes / n) * 8 * 1000000000ull / l.bandwidth_bps +
		       2 * (n - 1) * (2 * l.latency_ns);
		assert_int_equal(res.steps, 2 * (n - 1));
		assert_in_range(res.time_ns, want, want + res.steps);
		/* With framing: each chunk's packets of 1472 bytes gain 42. */
		assert_int_equal(ring_model(t, &r, j, 4, 42, &res, err, sizeof(err)), 0);
		{
			uint64_t chunk = s_bytes / n, pkts = (chunk + 1471) / 1472;
			uint64_t wire = chunk + pkts * 42;

			want = 2 * (n - 1) * (wire * 8 * 1000000000ull / l.bandwidth_bps) +
			       2 * (n - 1) * (2 * l.latency_ns);
			assert_in_range(res.time_ns, want, want + res.steps);
			assert_int_equal(res.wire_bytes_per_host, 2 * (n - 1) * wire);
		}
		sim_route_fini(&r);
		sim_topo_free(t);
	}
}

/* Racks under a spine with thin uplinks: ring neighbours in other racks
 * share the uplink, and the model finds it the bottleneck. */
static void
test_sim_ring_bottleneck(void **state)
{
	struct sim_topo_link host = { 10000000000ull, 1000, 0 }, up = { 1000000000ull, 1000, 0 };
	struct topology *t = sim_topo_racks(4, 4, host, up);
	struct topo_job *j = sim_topo_job(t);
	struct sim_route r;
	struct ring_result res;
	char err[256];
	uint64_t chunk, floor_ns;

	(void)state;
	j->tensor_len = 16 * 1000;
	assert_int_equal(sim_route_init(&r, t, err, sizeof(err)), 0);
	assert_int_equal(ring_model(t, &r, j, 4, 0, &res, err, sizeof(err)), 0);
	/* One flow per step crosses each rack's uplink: a chunk at 1 Gbit/s. */
	chunk = 1000 * 4;
	floor_ns = res.steps * (chunk * 8) + res.steps * 4 * 1000;
	assert_in_range(res.time_ns, floor_ns, floor_ns + res.steps);
	assert_true(res.bottleneck_link >= 0 && res.bottleneck_link < 4); /* an uplink */
	sim_route_fini(&r);
	sim_topo_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sim_events_order),
		cmocka_unit_test(test_sim_link_model),
		cmocka_unit_test(test_sim_analytic_star),
		cmocka_unit_test(test_sim_deterministic),
		cmocka_unit_test(test_sim_lossy_exact),
		cmocka_unit_test(test_sim_tail_drop),
		cmocka_unit_test(test_sim_two_jobs),
		cmocka_unit_test(test_sim_routes),
		cmocka_unit_test(test_sim_gradients_file),
		cmocka_unit_test(test_sim_wrong_sum_fails),
		cmocka_unit_test(test_sim_two_tiers),
		cmocka_unit_test(test_sim_two_tiers_lossy),
		cmocka_unit_test(test_sim_refuses_bf16_tiers),
		cmocka_unit_test(test_sim_ring_closed_form),
		cmocka_unit_test(test_sim_ring_bottleneck),
	};

	return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
