/* SPDX-License-Identifier: MIT */
/*
 * ina-bench-formats: bytes on the wire for the real gradients in data/ (issue
 * 4, point 8), both directions, every header, empty ack and lane opener
 * counted by the block planner's cost model (host/src/planner.h), which equals
 * a packet-by-packet replay of the lane protocol. Three formats, for each
 * iteration of the 4 workers' gradients, as one tensor:
 *   dense        every block sent, B = 256;
 *   fixed-256    element top-k per worker to a mass fraction, then blocks of
 *                256 (zero blocks skipped), as OmniReduce does;
 *   ina          block top-k per worker to the same mass fraction
 *                (host/src/sparsify.h) at the B the planner picks from the
 *                previous iteration's sum of what was sent (iteration 0 has
 *                none: B = 256).
 * No residual carry-over in either sparse format: each iteration keeps the
 * fraction of its own gradient's mass (sum of squares). Offline: no switch,
 * no engine. See bench/README.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/npy.h"
#include "planner.h"
#include "sparsify.h"

#define N_WORKERS 4
#define MAX_MASSES 8
#define MAX_ITERS 16
#define FIXED_B 256

struct totals {
	uint64_t bytes, up, down, pkts;
	uint64_t up_elems;	/* payload elements sent up, all workers */
	double mass_sent, mass_total;
};

struct row {
	double mass;
	struct totals dense, fixed, ina, oracle;
	uint32_t ina_b[MAX_ITERS], oracle_b[MAX_ITERS];
};

struct mag {
	float m;
	uint32_t i;
};

static int
mag_cmp(const void *a, const void *b)
{
	const struct mag *x = a, *y = b;

	if (x->m != y->m)
		return x->m > y->m ? -1 : 1;
	return x->i < y->i ? -1 : (x->i > y->i);
}

static void
die(const char *msg)
{
	fprintf(stderr, "ina-bench-formats: %s\n", msg);
	exit(1);
}

static void
add(struct totals *t, const struct planner_cost *c)
{
	t->up += c->up_bytes;
	t->down += c->down_bytes;
	t->bytes += c->up_bytes + c->down_bytes;
	t->pkts += c->up_pkts + c->down_pkts;
}

static double
sumsq(const float *v, uint32_t n)
{
	double s = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		s += (double)v[i] * v[i];
	return s;
}

/* Element top-k to mass m: the shortest prefix by |x| descending (index
 * ascending on ties) whose sum of squares reaches m of the total. */
static void
elem_topk(const float *g, float *out, uint32_t n, double m, struct mag *tmp)
{
	double total = sumsq(g, n), acc = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		tmp[i] = (struct mag){fabsf(g[i]), i};
	qsort(tmp, n, sizeof(*tmp), mag_cmp);
	memset(out, 0, n * sizeof(*out));
	for (i = 0; i < n && acc < m * total && tmp[i].m > 0; i++) {
		out[tmp[i].i] = g[tmp[i].i];
		acc += (double)g[tmp[i].i] * g[tmp[i].i];
	}
}

/* Block top-k to mass m at block size B (the sparsifier, fresh: no residual). */
static void
block_topk(const float *g, float *out, uint32_t n, uint32_t B, double m, double *sent,
	   double *total)
{
	struct sparsify_config sc;
	struct sparsify_stats st;
	struct sparsify *s;

	sparsify_config_init(&sc);
	sc.n_elems = n;
	sc.block_size = B;
	sc.select = SPARSIFY_TOPK;
	sc.target = SPARSIFY_MASS;
	sc.mass = m;
	s = sparsify_create(&sc);
	if (!s || sparsify_round(s, g, out, 0, &st) != 0)
		die("sparsify failed");
	*sent += st.mass_sent;
	*total += st.mass_total;
	sparsify_destroy(s);
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: ina-bench-formats [--input FILE.npy] [--mass F,F,...] [--max-pkt BYTES]\n"
		   "                         [--lanes L] [--frame-bytes BYTES] [--json]\n"
		   "Bytes on the wire (both directions, headers and empty acks counted) for the\n"
		   "real gradients: dense, fixed blocks of 256 after element top-k, and the\n"
		   "block planner with block top-k, at equal fractions of gradient mass.\n");
}

int
main(int argc, char **argv)
{
	const char *input = INA_SOURCE_DIR "/data/grads_cnn_digits_3it.npy";
	double masses[MAX_MASSES] = {0.5, 0.7, 0.9};
	unsigned n_mass = 3, k, it, w, iters;
	struct planner_config pc;
	struct planner *pl;
	struct ina_npy *npy;
	struct row rows[MAX_MASSES];
	int json = 0, opt;
	char err[256];
	uint32_t n, i;
	float *g[N_WORKERS], *sent[N_WORKERS], *prev;
	struct mag *tmp;
	static const struct option opts[] = {
		{"input", required_argument, NULL, 'i'},
		{"mass", required_argument, NULL, 'm'},
		{"max-pkt", required_argument, NULL, 'p'},
		{"lanes", required_argument, NULL, 'l'},
		{"frame-bytes", required_argument, NULL, 'f'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};

	planner_config_init(&pc);
	pc.world = N_WORKERS;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end, *tok;

		switch (opt) {
		case 'i':
			input = optarg;
			break;
		case 'm':
			n_mass = 0;
			for (tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				double v = strtod(tok, &end);

				if (*end || !(v > 0 && v <= 1) || n_mass == MAX_MASSES)
					die("--mass: fractions in (0, 1], at most 8");
				masses[n_mass++] = v;
			}
			if (n_mass == 0)
				die("--mass: no fraction");
			break;
		case 'p':
			pc.max_pkt = (uint32_t)strtoul(optarg, &end, 10);
			if (*end)
				die("--max-pkt: a number of bytes");
			break;
		case 'l':
			pc.lanes = (uint16_t)strtoul(optarg, &end, 10);
			if (*end || pc.lanes == 0)
				die("--lanes: 1..65535");
			break;
		case 'f':
			pc.frame_bytes = (uint32_t)strtoul(optarg, &end, 10);
			if (*end)
				die("--frame-bytes: a number of bytes");
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	npy = ina_npy_open(input, err, sizeof(err));
	if (!npy)
		die(err);
	if (ina_npy_ndim(npy) != 3 || ina_npy_dim(npy, 1) != N_WORKERS ||
	    ina_npy_dim(npy, 2) == 0 || ina_npy_dim(npy, 2) > UINT32_MAX / 2)
		die("input: expected shape (iterations, 4, parameters)");
	iters = (unsigned)ina_npy_dim(npy, 0);
	if (iters > MAX_ITERS)
		iters = MAX_ITERS;
	n = (uint32_t)ina_npy_dim(npy, 2);
	pc.max_elems = n;
	if (planner_max_block(&pc) < FIXED_B)
		die("--max-pkt: a packet must carry a block of 256");
	pl = planner_create(&pc);
	if (!pl)
		die("planner_create failed");
	for (w = 0; w < N_WORKERS; w++) {
		g[w] = malloc(n * sizeof(float));
		sent[w] = malloc(n * sizeof(float));
		if (!g[w] || !sent[w])
			die("out of memory");
	}
	prev = malloc(n * sizeof(float));
	tmp = malloc(n * sizeof(*tmp));
	if (!prev || !tmp)
		die("out of memory");

	memset(rows, 0, sizeof(rows));
	for (k = 0; k < n_mass; k++) {
		struct row *r = &rows[k];
		const float *vec[N_WORKERS];

		r->mass = masses[k];
		for (w = 0; w < N_WORKERS; w++)
			vec[w] = sent[w];
		for (it = 0; it < iters; it++) {
			struct planner_blocks blk;
			struct planner_cost c;
			uint32_t B, best_b = 0;
			uint64_t best = 0;
			unsigned cand;

			for (w = 0; w < N_WORKERS; w++)
				if (ina_npy_read_row(npy, (uint64_t)it * N_WORKERS + w, g[w], n) != 0)
					die("input: read failed");
			/* dense: every block at B = 256 */
			blk = (struct planner_blocks){.n_blocks = (n + FIXED_B - 1) / FIXED_B};
			blk.sent = blk.n_blocks;
			blk.sent_openers = blk.n_blocks < pc.lanes ? blk.n_blocks : pc.lanes;
			blk.sent_elems = n;
			blk.up_elems = (uint64_t)N_WORKERS * n;
			c = planner_cost(&pc, n, FIXED_B, &blk);
			add(&r->dense, &c);
			/* fixed-256 after element top-k */
			for (w = 0; w < N_WORKERS; w++) {
				elem_topk(g[w], sent[w], n, r->mass, tmp);
				r->fixed.mass_sent += sumsq(sent[w], n);
				r->fixed.mass_total += sumsq(g[w], n);
			}
			planner_count(&pc, vec, N_WORKERS, n, FIXED_B, &blk);
			c = planner_cost(&pc, n, FIXED_B, &blk);
			add(&r->fixed, &c);
			r->fixed.up_elems += blk.up_elems;
			/* oracle: the best B in hindsight (block top-k at every candidate) */
			for (cand = 0; cand < planner_n_candidates(pl); cand++) {
				uint32_t cb = planner_candidate_sizes(pl)[cand];
				double ms = 0, mt = 0;

				for (w = 0; w < N_WORKERS; w++)
					block_topk(g[w], sent[w], n, cb, r->mass, &ms, &mt);
				planner_count(&pc, vec, N_WORKERS, n, cb, &blk);
				c = planner_cost(&pc, n, cb, &blk);
				if (best_b == 0 || planner_cost_bytes(&c) <= best) {
					best = planner_cost_bytes(&c);
					best_b = cb;
				}
			}
			r->oracle.bytes += best;
			r->oracle_b[it] = best_b;
			/* ina: the planner on the previous iteration's sum */
			B = it == 0 ? FIXED_B : planner_plan(pl, prev, n, r->mass, 0.0f);
			if (B == 0)
				die("planner_plan failed");
			r->ina_b[it] = B;
			for (w = 0; w < N_WORKERS; w++)
				block_topk(g[w], sent[w], n, B, r->mass, &r->ina.mass_sent,
					   &r->ina.mass_total);
			planner_count(&pc, vec, N_WORKERS, n, B, &blk);
			c = planner_cost(&pc, n, B, &blk);
			add(&r->ina, &c);
			r->ina.up_elems += blk.up_elems;
			/* the switch's sum, in rank order: next iteration's reference */
			for (i = 0; i < n; i++) {
				float s = sent[0][i];

				for (w = 1; w < N_WORKERS; w++)
					s += sent[w][i];
				prev[i] = s;
			}
		}
	}

	if (json) {
		const struct row *top = &rows[n_mass - 1];

		printf("{\"input\": \"%s\", \"elements\": %" PRIu32 ", \"workers\": %d, "
		       "\"iterations\": %u, \"max_pkt\": %" PRIu32 ", \"lanes\": %u, "
		       "\"frame_bytes\": %" PRIu32 ",\n",
		       input, n, N_WORKERS, iters, pc.max_pkt, pc.lanes, pc.frame_bytes);
		printf(" \"dense_bytes\": %" PRIu64 ", \"fixed_block_bytes\": %" PRIu64
		       ", \"ina_bytes\": %" PRIu64 ", \"mass_kept\": %.4f, "
		       "\"fixed_mass_kept\": %.4f, \"mass_target\": %.2f,\n \"rows\": [\n",
		       top->dense.bytes, top->fixed.bytes, top->ina.bytes,
		       top->ina.mass_sent / top->ina.mass_total,
		       top->fixed.mass_sent / top->fixed.mass_total, top->mass);
		for (k = 0; k < n_mass; k++) {
			const struct row *r = &rows[k];

			printf("  {\"mass_target\": %.2f, \"dense_bytes\": %" PRIu64
			       ", \"fixed_block_bytes\": %" PRIu64 ", \"ina_bytes\": %" PRIu64
			       ", \"oracle_bytes\": %" PRIu64 ", \"mass_kept\": %.4f, "
			       "\"fixed_mass_kept\": %.4f, \"ina_vs_fixed\": %.4f, "
			       "\"fixed_up_elems\": %" PRIu64 ", \"ina_up_elems\": %" PRIu64
			       ", \"fixed_pkts\": %" PRIu64 ", \"ina_pkts\": %" PRIu64
			       ", \"block_sizes\": [",
			       r->mass, r->dense.bytes, r->fixed.bytes, r->ina.bytes,
			       r->oracle.bytes, r->ina.mass_sent / r->ina.mass_total,
			       r->fixed.mass_sent / r->fixed.mass_total,
			       (double)r->ina.bytes / (double)r->fixed.bytes, r->fixed.up_elems,
			       r->ina.up_elems, r->fixed.pkts, r->ina.pkts);
			for (it = 0; it < iters; it++)
				printf("%s%" PRIu32, it ? ", " : "", r->ina_b[it]);
			printf("], \"oracle_block_sizes\": [");
			for (it = 0; it < iters; it++)
				printf("%s%" PRIu32, it ? ", " : "", r->oracle_b[it]);
			printf("]}%s\n", k + 1 < n_mass ? "," : "");
		}
		printf(" ]}\n");
	} else {
		printf("ina-bench-formats: %s, %" PRIu32 " elements x %d workers x %u iterations\n",
		       input, n, N_WORKERS, iters);
		printf("max_pkt %" PRIu32 " (B 16..%u), %u lanes, frame bytes %" PRIu32
		       "; bytes = up + down, all iterations\n",
		       pc.max_pkt, planner_candidate_sizes(pl)[planner_n_candidates(pl) - 1],
		       pc.lanes, pc.frame_bytes);
		printf("%-5s %11s %11s %11s %8s %8s %8s %11s  %s\n", "mass", "dense", "fixed-256",
		       "ina", "ina/fix", "kept-fix", "kept-ina", "oracle", "B per iteration");
		for (k = 0; k < n_mass; k++) {
			const struct row *r = &rows[k];
			char bs[128];
			int off = 0;

			for (it = 0; it < iters && off < (int)sizeof(bs) - 16; it++)
				off += snprintf(bs + off, sizeof(bs) - (size_t)off, "%s%" PRIu32,
						it ? "," : "", r->ina_b[it]);
			printf("%-5.2f %11" PRIu64 " %11" PRIu64 " %11" PRIu64 " %7.1f%% %8.4f %8.4f %11"
			       PRIu64 "  %s\n",
			       r->mass, r->dense.bytes, r->fixed.bytes, r->ina.bytes,
			       100.0 * (double)r->ina.bytes / (double)r->fixed.bytes,
			       r->fixed.mass_sent / r->fixed.mass_total,
			       r->ina.mass_sent / r->ina.mass_total, r->oracle.bytes, bs);
		}
		printf("ina/fix: ina's bytes as a share of the fixed-block baseline's (the target is "
		       "<= 20%%);\noracle: block top-k at the best B in hindsight per iteration.\n");
	}
	for (w = 0; w < N_WORKERS; w++) {
		free(g[w]);
		free(sent[w]);
	}
	free(prev);
	free(tmp);
	planner_destroy(pl);
	ina_npy_close(npy);
	return 0;
}
