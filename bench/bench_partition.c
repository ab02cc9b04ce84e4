/* SPDX-License-Identifier: MIT */
/*
 * ina-bench-partition: how evenly the real gradients' blocks fall on a
 * switch's K partitions (cores, or switches) after sparsification, under the
 * fixed partition map and the dynamic one (host/src/partition.h; issue 7
 * point 5). Each round, each of the 4 workers runs the block sparsifier
 * (host/src/sparsify.h: block top-k to a density, residual carry-over) on its
 * gradient of the round's iteration (rounds cycle through the .npy's
 * iterations); the round's sum is the sum of what they sent. A partition's
 * load is the number of the sum's non-zero blocks on its lanes: every worker
 * sends a DATA packet (data or empty ack) for each of them, so it is what the
 * partition's core (or switch) processes. Two layouts: "cores", a switch on
 * K cores (lane l on core l mod K, the data path of ina-host --partition), and
 * "switches", K switches each aggregating one contiguous run of the wire
 * positions (PARTITION_RANGES, ina-host --switch A,B,...).
 * Imbalance = max / mean load over the K
 * partitions; printed per configuration as the median and the worst over the
 * rounds after the first, for fixed and for dynamic with the given periods,
 * and the median over rounds of fixed's imbalance over dynamic's. Offline:
 * no switch, no clock; deterministic. See bench/README.md.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ina/npy.h"
#include "partition.h"
#include "sparsify.h"
#include "bench_stats.h"

#define MAX_LIST 8
#define N_MODES (1 + MAX_LIST) /* fixed, then dynamic per period */
/* Where round 0 of (layout, K, mode) starts in bench.imb. */
#define IMB(bn, li, ki, m) ((((size_t)(li)*MAX_LIST + (ki)) * N_MODES + (m)) * (bn)->rounds)

struct list {
	unsigned n;
	double v[MAX_LIST];
};

struct bench {
	const char *input;
	struct ina_npy *npy;
	uint32_t n, iters, workers, rounds;
	uint16_t lanes;
	struct list dens, bs, ks, periods;
	unsigned layouts; /* bit 0: cores (lanes), bit 1: switches (ranges) */
	float *g, *sent, *sum;
	uint8_t *nz; /* per block: the sum's block is non-zero */
	double *imb; /* [mode][round] */
};

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: ina-bench-partition [--input FILE.npy] [--rounds N] [--lanes L]\n"
		"                           [--density D,...] [--block B,...] [--parts K,...]\n"
		"                           [--period P,...] [--layout cores|switches|both]\n"
		"  --input    gradients (iterations, workers, parameters), default\n"
		"             data/grads_cnn_digits_3it.npy of the source tree\n"
		"  --rounds   rounds, cycling through the iterations (default 30)\n"
		"  --lanes    the job's lanes (default 64)\n"
		"  --density  block top-k densities, 1 = no sparsification (default 0.01,0.1,1)\n"
		"  --block    block sizes (default 16,64,256)\n"
		"  --parts    partitions K (default 2,4,8)\n"
		"  --period   dynamic rebalancing periods in rounds (default 1,10)\n"
		"  --layout   cores: a switch on K cores (lane l on core l mod K); switches:\n"
		"             K switches, each one contiguous part (default both)\n");
}

static int
parse_list(const char *s, struct list *l, double lo, double hi)
{
	char *end;

	l->n = 0;
	while (*s) {
		double v = strtod(s, &end);

		if (end == s || v < lo || v > hi || l->n == MAX_LIST)
			return -1;
		l->v[l->n++] = v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return l->n ? 0 : -1;
}

/* One (density, B) sequence of rounds, every K and mode on it. */
static int
run_one(struct bench *bn, double density, uint16_t B)
{
	uint32_t nb = (bn->n + B - 1) / B, nz_total = 0;
	struct sparsify *sp[16] = { 0 };
	struct partition *pm[2][MAX_LIST][N_MODES] = { { { 0 } } };
	unsigned n_modes = 1 + bn->periods.n;
	uint32_t counts[PARTITION_MAX_PARTS];
	int ret = -1;

	for (uint32_t w = 0; w < bn->workers; w++) {
		struct sparsify_config sc;

		sparsify_config_init(&sc);
		sc.n_elems = bn->n;
		sc.block_size = B;
		sc.select = density < 1.0 ? SPARSIFY_TOPK : 0;
		sc.target = SPARSIFY_DENSITY;
		sc.density = density;
		sp[w] = sparsify_create(&sc);
		if (!sp[w])
			goto out;
	}
	for (unsigned li = 0; li < 2; li++) {
		for (unsigned ki = 0; ki < bn->ks.n && (bn->layouts >> li & 1); ki++) {
			for (unsigned m = 0; m < n_modes; m++) {
				struct partition_config pc = {
					.mode = m ? PARTITION_DYNAMIC : PARTITION_FIXED,
					.layout = li ? PARTITION_RANGES : PARTITION_LANES,
					.period = m ? (uint32_t)bn->periods.v[m - 1] : 1,
					.parts = (uint16_t)bn->ks.v[ki],
					.lanes = bn->lanes,
				};

				pm[li][ki][m] = partition_create(&pc, bn->n, B);
				if (!pm[li][ki][m])
					goto out;
			}
		}
	}
	for (uint32_t r = 0; r < bn->rounds; r++) {
		uint32_t it = r % bn->iters;

		memset(bn->sum, 0, bn->n * sizeof(float));
		for (uint32_t w = 0; w < bn->workers; w++) {
			if (ina_npy_read_row(bn->npy, (uint64_t)it * bn->workers + w, bn->g,
					     bn->n) < 0 ||
			    sparsify_round(sp[w], bn->g, bn->sent, r, NULL) < 0) {
				fprintf(stderr, "ina-bench-partition: %s: row %u unreadable\n",
					bn->input, it * bn->workers + w);
				goto out;
			}
			for (uint32_t i = 0; i < bn->n; i++)
				bn->sum[i] += bn->sent[i];
		}
		memset(bn->nz, 0, nb);
		for (uint32_t i = 0; i < bn->n; i++)
			if (bn->sum[i] != 0.0f)
				bn->nz[i / B] = 1;
		for (uint32_t b = 0; b < nb; b++)
			nz_total += r > 0 && bn->nz[b];
		for (unsigned li = 0; li < 2; li++) {
			for (unsigned ki = 0; ki < bn->ks.n && (bn->layouts >> li & 1); ki++) {
				for (unsigned m = 0; m < n_modes; m++) {
					struct partition *p = pm[li][ki][m];

					if (partition_round(p, r, B) < 0)
						goto out;
					partition_count(p, bn->nz, counts);
					bn->imb[IMB(bn, li, ki, m) + r] =
						partition_imbalance(counts, (uint32_t)bn->ks.v[ki]);
					partition_observe(p, r, bn->sum);
				}
			}
		}
	}
	/* Rounds 1.. (round 0 has no sum to learn from). */
	for (unsigned li = 0; li < 2; li++)
		for (unsigned ki = 0; ki < bn->ks.n && (bn->layouts >> li & 1); ki++) {
			uint32_t nr = bn->rounds - 1;
			double *tmp = calloc(nr, sizeof(double));

			if (!tmp)
				goto out;
			printf("%-8s %7.3g %4u %3u %9.1f", li ? "switches" : "cores", density, B,
			       (unsigned)bn->ks.v[ki], (double)nz_total / nr);
			for (unsigned m = 0; m < n_modes; m++) {
				const double *v = &bn->imb[IMB(bn, li, ki, m) + 1];
				double worst = 0, med;

				for (uint32_t r = 0; r < nr; r++)
					worst = v[r] > worst ? v[r] : worst;
				memcpy(tmp, v, nr * sizeof(double));
				med = bench_median(tmp, nr);
				printf("   %5.3f %5.3f", med, worst);
			}
			for (unsigned m = 1; m < n_modes; m++) {
				const double *f = &bn->imb[IMB(bn, li, ki, 0) + 1];
				const double *d = &bn->imb[IMB(bn, li, ki, m) + 1];

				for (uint32_t r = 0; r < nr; r++)
					tmp[r] = f[r] / d[r];
				printf("  %5.2fx", bench_median(tmp, nr));
			}
			printf("\n");
			free(tmp);
		}
	ret = 0;
out:
	for (uint32_t w = 0; w < 16; w++)
		sparsify_destroy(sp[w]);
	for (unsigned li = 0; li < 2; li++)
		for (unsigned ki = 0; ki < MAX_LIST; ki++)
			for (unsigned m = 0; m < N_MODES; m++)
				partition_destroy(pm[li][ki][m]);
	return ret;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "lanes", required_argument, NULL, 'l' },
		{ "density", required_argument, NULL, 'd' },
		{ "block", required_argument, NULL, 'b' },
		{ "parts", required_argument, NULL, 'k' },
		{ "period", required_argument, NULL, 'p' },
		{ "layout", required_argument, NULL, 'y' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench bn = {
		.input = INA_SOURCE_DIR "/data/grads_cnn_digits_3it.npy",
		.rounds = 30,
		.lanes = 64,
		.dens = { 3, { 0.01, 0.1, 1 } },
		.bs = { 3, { 16, 64, 256 } },
		.ks = { 3, { 2, 4, 8 } },
		.periods = { 2, { 1, 10 } },
		.layouts = 3,
	};
	char err[256];
	int c, ret = 1;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		struct list tmp;
		char *end;
		unsigned long v;

		switch (c) {
		case 'i':
			bn.input = optarg;
			break;
		case 'r':
		case 'l':
			v = strtoul(optarg, &end, 10);
			if (*end || v < 2 || v > 65535) {
				fprintf(stderr, "ina-bench-partition: --%s: 2..65535\n",
					c == 'r' ? "rounds" : "lanes");
				return 2;
			}
			if (c == 'r')
				bn.rounds = (uint32_t)v;
			else
				bn.lanes = (uint16_t)v;
			break;
		case 'd':
		case 'b':
		case 'k':
		case 'p':
			if (parse_list(optarg, &tmp, c == 'd' ? 1e-6 : 1,
				       c == 'd'	  ? 1
				       : c == 'b' ? 4096
				       : c == 'k' ? PARTITION_MAX_PARTS
						  : 1e6) < 0) {
				fprintf(stderr, "ina-bench-partition: bad list '%s'\n", optarg);
				return 2;
			}
			*(c == 'd'   ? &bn.dens
			  : c == 'b' ? &bn.bs
			  : c == 'k' ? &bn.ks
				     : &bn.periods) = tmp;
			break;
		case 'y':
			if (strcmp(optarg, "cores") == 0)
				bn.layouts = 1;
			else if (strcmp(optarg, "switches") == 0)
				bn.layouts = 2;
			else if (strcmp(optarg, "both") == 0)
				bn.layouts = 3;
			else {
				fprintf(stderr,
					"ina-bench-partition: --layout: '%s' is not cores, "
					"switches or both\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	bn.npy = ina_npy_open(bn.input, err, sizeof(err));
	if (!bn.npy) {
		fprintf(stderr, "ina-bench-partition: %s\n", err);
		return 1;
	}
	if (ina_npy_ndim(bn.npy) != 3 || ina_npy_dim(bn.npy, 1) > 16) {
		fprintf(stderr,
			"ina-bench-partition: %s: want (iterations, workers <= 16, "
			"parameters)\n",
			bn.input);
		goto out;
	}
	bn.iters = (uint32_t)ina_npy_dim(bn.npy, 0);
	bn.workers = (uint32_t)ina_npy_dim(bn.npy, 1);
	bn.n = (uint32_t)ina_npy_dim(bn.npy, 2);
	bn.g = malloc(bn.n * sizeof(float));
	bn.sent = malloc(bn.n * sizeof(float));
	bn.sum = malloc(bn.n * sizeof(float));
	bn.nz = malloc(bn.n);
	bn.imb = calloc((size_t)2 * MAX_LIST * N_MODES * bn.rounds, sizeof(double));
	if (!bn.g || !bn.sent || !bn.sum || !bn.nz || !bn.imb) {
		fprintf(stderr, "ina-bench-partition: no memory\n");
		goto out;
	}
	printf("# %s: %u iterations x %u workers x %u parameters; %u rounds cycling the "
	       "iterations, %u lanes\n",
	       bn.input, bn.iters, bn.workers, bn.n, bn.rounds, bn.lanes);
	printf("# imbalance = max/mean of the sum's non-zero blocks per partition, per round; "
	       "median and worst of rounds 1..%u\n",
	       bn.rounds - 1);
	printf("# density: block top-k per worker with residual (1 = dense); nz: the sum's "
	       "non-zero blocks per round\n");
	printf("%-8s %7s %4s %3s %9s   %11s", "layout", "density", "B", "K", "nz", "fixed");
	for (unsigned m = 0; m < bn.periods.n; m++) {
		char name[24];

		snprintf(name, sizeof(name), "dynamic:%g", bn.periods.v[m]);
		printf("   %11s", name);
	}
	for (unsigned m = 0; m < bn.periods.n; m++) {
		char name[24];

		snprintf(name, sizeof(name), "f/d:%g", bn.periods.v[m]);
		printf("  %6s", name);
	}
	printf("\n");
	for (unsigned di = 0; di < bn.dens.n; di++)
		for (unsigned bi = 0; bi < bn.bs.n; bi++)
			if (run_one(&bn, bn.dens.v[di], (uint16_t)bn.bs.v[bi]) < 0)
				goto out;
	ret = 0;
out:
	free(bn.g);
	free(bn.sent);
	free(bn.sum);
	free(bn.nz);
	free(bn.imb);
	ina_npy_close(bn.npy);
	return ret;
}
