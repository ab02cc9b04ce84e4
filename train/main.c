/* SPDX-License-Identifier: MIT */
/*
 * ina-train: data-parallel training of a softmax regression (or, with
 * --hidden H, a one-hidden-layer MLP) on a real data
 * set (data/digits.csv.gz) through an ina switch. Each worker computes the
 * gradient of its shard's mini-batch, the gradients are averaged through the
 * switch (exchange_gradient(): the one place a gradient leaves a worker,
 * through the API's sparsifier with --sparsify), and every worker applies the
 * same SGD step, so the replicas stay bit-identical; every --check-every
 * rounds the workers compare hashes of their weights through the switch and
 * stop loudly if they differ.
 *
 * With --rank R it runs one worker of a job against --switch. Without it, it
 * is the one-command run: it starts ina-switch (built next to it) on --switch
 * and forks --workers worker processes, each with its own ina context, waits
 * for them and stops the switch. Rank 0 writes --csv, --report and --plot.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "data.h"
#include "datapath.h"
#include "ina.h"
#include "ina/cli.h"
#include "ina/util.h"
#include "model.h"
#include "sparsify_cli.h"

#define SPLIT_SEED 0 /* the held-out test split is fixed, whatever --seed */
#define TEST_FRACTION 0.2
#define GRAD_TENSOR 1
#define HASH_TENSOR 2
#define HASH_PARTS 4 /* a 64-bit hash as four 16-bit values, exact in f32 */
#define MAX_WORKERS 64

struct opts {
	const char *data;
	const char *switch_addr;
	const char *switch_bin;
	const char *token_file;
	const char *csv;
	const char *report;
	const char *plot;
	unsigned workers;
	int rank; /* -1: the one-command run */
	uint32_t job;
	unsigned epochs;
	uint64_t rounds; /* 0: epochs * rounds per epoch */
	double lr;
	unsigned batch;	 /* samples per worker per round */
	unsigned hidden; /* MLP hidden units, 0: softmax regression */
	uint64_t seed;
	unsigned check_every;
	double scale;
	int quiet;
	unsigned block; /* elements per block (the job's block size), 0: the library's */
	unsigned lanes;
	struct ina_sparsify sp; /* the gradient's sparsifier */
	int plan;		/* the block planner: B per round */
	uint8_t ssp;		/* --consistency: 0 bsp, S ssp:S */
	uint64_t compute_ns;	/* --compute-us: each round's simulated compute */
	double straggle;	/* --straggle: chance per round of a 3x straggler */
	int diverge_rank;	/* test only: this worker perturbs a weight... */
	uint64_t diverge_round; /* ...after this round (-1: never) */
};

/* What one worker ends with (rank 0 reports it). */
struct outcome {
	uint64_t rounds;
	uint64_t grad_bytes_sent; /* ina bytes of the gradient exchanges */
	uint64_t grad_bytes_received;
	uint64_t hash_checks;
	uint64_t weights_hash;
	double accuracy;
	double density_sent;	  /* blocks sent / blocks, over all rounds */
	uint64_t blocks_deferred; /* result blocks that came back DEFERRED */
	unsigned last_block;	  /* B of the last gradient exchange (--plan) */
	double residual_norm;	  /* after the last round */
	double train_loss;
	double seconds;
};

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: ina-train [options]              one command: a switch and W workers on loopback\n"
		"       ina-train --rank R [options]     one worker of a job at --switch\n"
		"  --data FILE           CSV (gzip or plain): features..., label (default\n"
		"                        " INA_TRAIN_DATA_NAME " in " INA_TRAIN_DATA_RELDIR
		" from the\n"
		"                        program's directory (installed), else the source tree's)\n"
		"  --scale S             features are divided by S (default 16: pixels 0..16)\n"
		"  --workers W           data-parallel workers, the job's world (default 4)\n"
		"  --rank R              run worker R only (the switch must be running)\n"
		"  --switch ADDR:PORT    the switch (default 127.0.0.1:9150); the one-command run\n"
		"                        starts it there\n"
		"  --switch-bin FILE     ina-switch to start (default: ../switch_sim/ina-switch\n"
		"                        next to this program, else ina-switch beside it)\n"
		"  --job ID              job id (default 1)\n"
		"  --token-file FILE     job secret (else $INA_JOB_TOKEN; the one-command run\n"
		"                        makes one up when neither is given)\n"
		"  --epochs E            passes over the training set (default 50)\n"
		"  --rounds K            stop after K rounds instead\n"
		"  --lr LR               SGD learning rate (default 1)\n"
		"  --batch B             samples per worker per round (default 32)\n"
		"  --hidden H            a small MLP with H hidden ReLU units (default 0:\n"
		"                        softmax regression)\n"
		"  --seed S              initial weights and batch order (default 1)\n"
		"  --check-every N       compare the replicas' weight hashes every N rounds\n"
		"                        (default 10; and after the last round)\n"
		"  --csv FILE            loss curve: round, train loss, test accuracy\n"
		"  --report FILE         JSON report (accuracy, rounds, bytes_sent, bytes_dense, ...)\n"
		"  --plot FILE.png       plot the curve with gnuplot, if installed\n"
		"  --block B             elements per block, the job's block size (default:\n"
		"                        1024, or what a packet holds if less; with --plan\n"
		"                        the largest power of two a packet holds, up to 2048)\n"
		"  --lanes L             blocks in flight per worker (default 64)\n"
		"%s"
		"                        (--density and --mass: the first names of\n"
		"                        --keep-density and --keep-mass)\n"
		"  --plan                the block planner picks B per round (up to --block)\n"
		"  --consistency C       bsp (default) or ssp:S (S 1..8): a worker runs up to S\n"
		"                        rounds ahead of the slowest and applies the average of\n"
		"                        S rounds back; a late worker's part waits in its residual\n"
		"                        (no sparsifier, planner; replicas checked at the end)\n"
		"  --compute-us US       each round also computes for US microseconds (default 0)\n"
		"  --straggle P          with --compute-us: in a share P of the rounds one worker\n"
		"                        (drawn from --seed, alike on all) computes 3x as long\n"
		"  --quiet               no line per epoch\n",
		sparsify_cli_help);
}

static void
parse_args(int argc, char **argv, struct opts *o)
{
	enum {
		O_DATA = 256,
		O_SCALE,
		O_WORKERS,
		O_RANK,
		O_SWITCH,
		O_SWITCH_BIN,
		O_JOB,
		O_TOKEN,
		O_EPOCHS,
		O_ROUNDS,
		O_LR,
		O_BATCH,
		O_SEED,
		O_CHECK,
		O_CSV,
		O_REPORT,
		O_PLOT,
		O_QUIET,
		O_HELP,
		O_DIVERGE,
		O_HIDDEN,
		O_BLOCK,
		O_LANES,
		O_PLAN,
		O_CONSISTENCY,
		O_COMPUTE,
		O_STRAGGLE
	};
	static const struct option lo[] = {
		{ "data", required_argument, NULL, O_DATA },
		{ "scale", required_argument, NULL, O_SCALE },
		{ "workers", required_argument, NULL, O_WORKERS },
		{ "rank", required_argument, NULL, O_RANK },
		{ "switch", required_argument, NULL, O_SWITCH },
		{ "switch-bin", required_argument, NULL, O_SWITCH_BIN },
		{ "job", required_argument, NULL, O_JOB },
		{ "token-file", required_argument, NULL, O_TOKEN },
		{ "epochs", required_argument, NULL, O_EPOCHS },
		{ "rounds", required_argument, NULL, O_ROUNDS },
		{ "lr", required_argument, NULL, O_LR },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "hidden", required_argument, NULL, O_HIDDEN },
		{ "seed", required_argument, NULL, O_SEED },
		{ "check-every", required_argument, NULL, O_CHECK },
		{ "csv", required_argument, NULL, O_CSV },
		{ "report", required_argument, NULL, O_REPORT },
		{ "plot", required_argument, NULL, O_PLOT },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "help", no_argument, NULL, O_HELP },
		{ "test-diverge", required_argument, NULL, O_DIVERGE },
		{ "block", required_argument, NULL, O_BLOCK },
		{ "lanes", required_argument, NULL, O_LANES },
		{ "consistency", required_argument, NULL, O_CONSISTENCY },
		{ "compute-us", required_argument, NULL, O_COMPUTE },
		{ "straggle", required_argument, NULL, O_STRAGGLE },
		SPARSIFY_CLI_OPTIONS,
		SPARSIFY_CLI_ALIASES,
		{ "plan", no_argument, NULL, O_PLAN },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	*o = (struct opts){ .data = NULL,
			    .switch_addr = "127.0.0.1:9150",
			    .workers = 4,
			    .rank = -1,
			    .job = 1,
			    .epochs = 50,
			    .lr = 1.0,
			    .batch = 32,
			    .seed = 1,
			    .check_every = 10,
			    .scale = 16,
			    .block = 0, /* the library's (ina.h block_size) */
			    .lanes = 64,
			    .diverge_rank = -1 };
	sparsify_cli_defaults(&o->sp);
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case O_DATA:
			o->data = optarg;
			break;
		case O_SCALE:
			if (ina_parse_double(optarg, 1e-30, 1e30, &o->scale) < 0)
				ina_die("--scale: not a positive number: %s", optarg);
			break;
		case O_WORKERS:
			o->workers = (unsigned)ina_cli_u64("workers", optarg, 1, MAX_WORKERS);
			break;
		case O_RANK:
			o->rank = (int)ina_cli_u64("rank", optarg, 0, MAX_WORKERS - 1);
			break;
		case O_SWITCH:
			o->switch_addr = optarg;
			break;
		case O_SWITCH_BIN:
			o->switch_bin = optarg;
			break;
		case O_JOB:
			o->job = (uint32_t)ina_cli_u64("job", optarg, 1, UINT32_MAX);
			break;
		case O_TOKEN:
			o->token_file = optarg;
			break;
		case O_EPOCHS:
			o->epochs = (unsigned)ina_cli_u64("epochs", optarg, 1, 100000);
			break;
		case O_ROUNDS:
			o->rounds = ina_cli_u64("rounds", optarg, 1, 100000000);
			break;
		case O_LR:
			if (ina_parse_double(optarg, 1e-12, 1e6, &o->lr) < 0)
				ina_die("--lr: not a positive number: %s", optarg);
			break;
		case O_HIDDEN:
			o->hidden = (unsigned)ina_cli_u64("hidden", optarg, 0, MODEL_MAX_HIDDEN);
			break;
		case O_BATCH:
			o->batch = (unsigned)ina_cli_u64("batch", optarg, 1, 1000000);
			break;
		case O_SEED:
			o->seed = ina_cli_u64("seed", optarg, 0, UINT64_MAX);
			break;
		case O_CHECK:
			o->check_every = (unsigned)ina_cli_u64("check-every", optarg, 1, 1000000);
			break;
		case O_CSV:
			o->csv = optarg;
			break;
		case O_REPORT:
			o->report = optarg;
			break;
		case O_PLOT:
			o->plot = optarg;
			break;
		case O_QUIET:
			o->quiet = 1;
			break;
		case O_DIVERGE: {
			/* Test only (not in --help): R:K, worker R's replica drifts
			 * by one ulp after round K, which the hash check must catch. */
			unsigned r;
			unsigned long long k;

			if (sscanf(optarg, "%u:%llu", &r, &k) != 2 || r >= MAX_WORKERS)
				ina_die("--test-diverge: expected RANK:ROUND, got %s", optarg);
			o->diverge_rank = (int)r;
			o->diverge_round = k;
			break;
		}
		case O_BLOCK:
			o->block = (unsigned)ina_cli_u64("block", optarg, 1, 65535);
			break;
		case O_LANES:
			o->lanes = (unsigned)ina_cli_u64("lanes", optarg, 1, 65535);
			break;
		case O_CONSISTENCY:
			if (strcmp(optarg, "bsp") == 0)
				o->ssp = 0;
			else if (strncmp(optarg, "ssp:", 4) == 0)
				o->ssp = (uint8_t)ina_cli_u64("consistency", optarg + 4, 1, 8);
			else
				ina_die("--consistency: '%s' is not bsp or ssp:S", optarg);
			break;
		case O_COMPUTE:
			o->compute_ns = ina_cli_u64("compute-us", optarg, 0, 10000000) * 1000;
			break;
		case O_STRAGGLE:
			if (ina_parse_double(optarg, 0.0, 1.0, &o->straggle) < 0)
				ina_die("--straggle: '%s' is not a number in 0..1", optarg);
			break;
		case O_PLAN:
			o->plan = 1;
			break;
		case O_HELP:
		case 'h':
			usage(stdout);
			exit(0);
		default:
			if (sparsify_cli_parse(ch, optarg, &o->sp))
				break;
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		ina_die("unexpected argument: %s", argv[optind]);
	if (o->rank >= 0 && (unsigned)o->rank >= o->workers)
		ina_die("--rank %d: not below --workers %u", o->rank, o->workers);
	if (o->plot && !o->csv)
		ina_die("--plot draws the --csv curve: give --csv FILE too");
}

/*
 * The one place a worker's gradient goes out and the job's average comes
 * back (in place). With --sparsify the API's sparsifier for GRAD_TENSOR
 * (cfg.sparsify) picks what is sent and keeps the rest in this worker's
 * residual for the next round; the average is of what every worker sent.
 * With the value filter on, a result block whose average is under the
 * round's bound (by default; --filter-results-scale) comes back DEFERRED, as
 * zeros, and this worker's part of it goes back to its residual
 * (cfg.sparsify.filter_results, counted in blocks_deferred).
 */
static int
exchange_gradient(struct ina_ctx *ctx, float *grad, size_t n)
{
	return ina_allreduce(ctx, GRAD_TENSOR, grad, grad, n, INA_AVG);
}

static uint64_t
mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Round r's simulated compute (--compute-us, --straggle), driving the job
 * meanwhile as a framework's progress thread would. */
static void
compute(const struct opts *o, struct ina_ctx *ctx, unsigned rank, uint64_t r)
{
	uint64_t h = mix64(o->seed * 0x100000001b3ull ^ r);
	uint64_t ns = o->compute_ns, now, until;

	if ((double)(h >> 11) * 0x1.0p-53 < o->straggle && mix64(h) % o->workers == rank)
		ns *= 3;
	until = ina_now_ns() + ns;
	while ((now = ina_now_ns()) < until) {
		uint64_t left_us = (until - now) / 1000;

		if (ina_progress(ctx, (uint32_t)(left_us < 200 ? left_us : 200)) < 0)
			return;
	}
}

static uint64_t
weights_hash(const struct model *m)
{
	return XXH3_64bits(m->params, m->n_params * sizeof(float));
}

/* Every worker puts its weights' hash in its own slots of a zero vector; the
 * sum holds every worker's hash. 1 if all equal this worker's, 0 if not,
 * negative on an ina error. 'bad' gets the first rank that differs. */
static int
replicas_agree(struct ina_ctx *ctx, unsigned rank, unsigned world, uint64_t h, unsigned *bad,
	       int ssp)
{
	float v[MAX_WORKERS * HASH_PARTS] = { 0 };
	int ret;

	for (unsigned p = 0; p < HASH_PARTS; p++)
		v[rank * HASH_PARTS + p] = (float)((h >> (16 * p)) & 0xffff);
	ret = ina_allreduce(ctx, HASH_TENSOR, v, v, (size_t)world * HASH_PARTS, INA_SUM);
	if (ret < 0)
		return ret;
	/* Under ssp the call returned the sum of S calls back (none): this, the
	 * job's last round, comes whole (nothing after it closes it early). */
	if (ssp && (ret = ina_ssp_next(ctx, HASH_TENSOR, v)) < 0)
		return ret;
	for (unsigned r = 0; r < world; r++) {
		uint64_t o = 0;

		for (unsigned p = 0; p < HASH_PARTS; p++)
			o |= (uint64_t)v[r * HASH_PARTS + p] << (16 * p);
		if (o != h) {
			*bad = r;
			return 0;
		}
	}
	return 1;
}

static double
now_s(void)
{
	return (double)ina_now_ns() / 1e9;
}

static void
sparsifier_name(const struct opts *o, char *buf, size_t size)
{
	const struct ina_sparsify *sp = &o->sp;
	int len;

	len = snprintf(buf, size, "%s", sparsify_cli_mode_name(sp->mode));
	if (sp->mode & INA_SPARSIFY_TOPK)
		len += snprintf(buf + len, size - (size_t)len,
				sp->target == INA_TOPK_MASS ? " mass %g" : " density %g",
				sp->target == INA_TOPK_MASS ? sp->mass : sp->density);
	if (!(sp->mode & INA_SPARSIFY_FILTER))
		return;
	len += snprintf(buf + len, size - (size_t)len, " filter b0 %g decay %g",
			(double)sp->filter_b0, sp->filter_decay);
	if (!sp->filter_results)
		snprintf(buf + len, size - (size_t)len, " results off");
	else if (sp->filter_results_scale > 0)
		snprintf(buf + len, size - (size_t)len, " results scale %g",
			 (double)sp->filter_results_scale);
}

static int
write_report(const struct opts *o, const struct model *m, const struct dataset *train,
	     const struct dataset *test, const struct outcome *res, const struct ina_stats *st,
	     const char *transport)
{
	char hash[17], model[64], spname[128];
	json_t *root;
	int ret;

	snprintf(hash, sizeof(hash), "%016" PRIx64, res->weights_hash);
	if (m->hidden)
		snprintf(model, sizeof(model), "mlp %zu-%zu-%zu", m->dim, m->hidden, m->classes);
	else
		snprintf(model, sizeof(model), "softmax regression %zu-%zu", m->dim, m->classes);
	sparsifier_name(o, spname, sizeof(spname));
	root = json_pack("{s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:I,"
			 " s:b, s:I, s:s, s:f, s:f, s:s, s:s, s:I, s:I, s:s, s:f, s:f, s:I, s:I}",
			 "accuracy", res->accuracy, "rounds", (json_int_t)res->rounds, "bytes_sent",
			 (json_int_t)res->grad_bytes_sent, "bytes_received",
			 (json_int_t)res->grad_bytes_received, "bytes_dense",
			 (json_int_t)(m->n_params * 4 * res->rounds), "bytes_sent_total",
			 (json_int_t)st->bytes_sent, "bytes_received_total",
			 (json_int_t)st->bytes_received, "retransmits", (json_int_t)st->retransmits,
			 "params", (json_int_t)m->n_params, "workers", (json_int_t)o->workers,
			 "batch", (json_int_t)o->batch, "lr", o->lr, "seed", (json_int_t)o->seed,
			 "split_seed", (json_int_t)SPLIT_SEED, "replicas_identical", 1,
			 "hash_checks", (json_int_t)res->hash_checks, "weights_hash", hash,
			 "train_loss", res->train_loss, "seconds", res->seconds, "model", model,
			 "sparsifier", spname, "train_size", (json_int_t)train->n, "test_size",
			 (json_int_t)test->n, "transport", transport, "density_sent",
			 res->density_sent, "residual_norm", res->residual_norm, "block",
			 (json_int_t)st->max_block, "lanes", (json_int_t)o->lanes);
	if (!root)
		return -ENOMEM;
	if (json_object_set_new(root, "blocks_deferred",
				json_integer((json_int_t)res->blocks_deferred)) < 0 ||
	    json_object_set_new(root, "plan", json_boolean(o->plan)) < 0 ||
	    json_object_set_new(root, "data", json_string(o->data)) < 0 ||
	    json_object_set_new(root, "last_block_size", json_integer(res->last_block)) < 0) {
		json_decref(root);
		return -ENOMEM;
	}
	ret = json_dump_file(root, o->report, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	json_decref(root);
	return ret == 0 ? 0 : -EIO;
}

static void
plot(const char *csv, const char *png)
{
	FILE *g;

	if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
		fprintf(stderr, "ina-train: gnuplot not found: no plot (the curve is in %s)\n",
			csv);
		return;
	}
	g = popen("gnuplot", "w");
	if (!g)
		return;
	fprintf(g,
		"set terminal png size 800,500\nset output '%s'\nset datafile separator ','\n"
		"set xlabel 'round'\nset ylabel 'train loss'\nset y2label 'test accuracy'\n"
		"set y2tics\nset key center right\n"
		"plot '%s' every ::1 using 1:2 with lines title 'train loss', "
		"'' every ::1 using 1:3 axes x1y2 with lines title 'test accuracy'\n",
		png, csv);
	if (pclose(g) != 0)
		fprintf(stderr, "ina-train: gnuplot failed\n");
}

/* One worker: join, train, check, report. 0 or 1. */
static int
run_worker(const struct opts *o, unsigned rank, const struct dataset *train,
	   const struct dataset *test)
{
	struct ina_config cfg;
	struct ina_ctx *ctx = NULL;
	struct ina_stats st0, st1;
	struct outcome res = { 0 };
	struct model m;
	FILE *csv = NULL;
	uint32_t *shard, *batch_idx;
	size_t shard_n, max_shard = (train->n + o->workers - 1) / o->workers;
	uint64_t per_epoch = (max_shard + o->batch - 1) / o->batch, total;
	unsigned bs = o->batch < max_shard ? o->batch : (unsigned)max_shard;
	char err[256];
	float *grad;
	double t0;
	int ret, ok = 1;
	unsigned bad = 0;

	total = o->rounds ? o->rounds : per_epoch * o->epochs;
	if (model_init(&m, train->dim, o->hidden, train->classes, o->seed) < 0)
		ina_die("out of memory for the model");
	shard = malloc((max_shard + 1) * sizeof(*shard));
	batch_idx = malloc((size_t)bs * sizeof(*batch_idx));
	grad = malloc(m.n_params * sizeof(*grad));
	if (!shard || !batch_idx || !grad)
		ina_die("out of memory");
	shard_n = data_shard(train->n, o->workers, rank, shard);
	if (shard_n == 0)
		ina_die("worker %u: an empty shard (%zu training rows for %u workers)", rank,
			train->n, o->workers);

	ina_config_init(&cfg);
	cfg.switch_addr = o->switch_addr;
	cfg.job_id = o->job;
	cfg.rank = (uint16_t)rank;
	cfg.world = (uint16_t)o->workers;
	cfg.block_size = (uint16_t)o->block;
	cfg.lanes = (uint16_t)o->lanes;
	cfg.plan_blocks = o->plan;
	cfg.ssp = o->ssp;
	cfg.sparsify = o->sp; /* the job's sparsifier: every tensor but... */
	if (ina_token_from(o->token_file, &cfg.token, err, sizeof(err)) < 0)
		ina_die("%s", err);
	ret = ina_open(&cfg, &ctx, err, sizeof(err));
	if (ret < 0)
		ina_die("worker %u: cannot join job %" PRIu32 " at %s: %s (%s)", rank, o->job,
			o->switch_addr, err, ina_strerror(ret));
	if (!o->ssp) {
		/* ...the replicas' hash check, which must arrive whole. */
		struct ina_sparsify dense = { .mode = INA_SPARSIFY_OFF };

		if (ina_tensor_sparsify(ctx, HASH_TENSOR, &dense) < 0)
			ina_die("worker %u: %s", rank, ina_last_error(ctx));
	}
	if (rank == 0 && o->csv) {
		csv = fopen(o->csv, "w");
		if (!csv)
			ina_die("--csv %s: %s", o->csv, strerror(errno));
		fprintf(csv, "round,train_loss,test_accuracy\n0,%.6f,%.6f\n",
			model_loss(&m, train->x, train->y, NULL, train->n),
			model_accuracy(&m, test->x, test->y, test->n));
	}
	if (rank == 0 && !o->quiet)
		printf("ina-train: %zu train / %zu test rows, %zu params, %u workers x batch %u, "
		       "%" PRIu64 " rounds (%" PRIu64 " per epoch), lr %g, seed %" PRIu64
		       ", over %s;"
		       " data %s\n",
		       train->n, test->n, m.n_params, o->workers, bs, total, per_epoch, o->lr,
		       o->seed, ina_transport(ctx), o->data);

	t0 = now_s();
	for (uint64_t r = 0; r < total; r++) {
		uint64_t epoch = r / per_epoch, j = r % per_epoch;

		/* A new order of this worker's shard every epoch, from --seed. */
		if (j == 0)
			data_shuffle(shard, shard_n,
				     o->seed * 0x9e3779b97f4a7c15ull + epoch * 1000003u + rank);
		for (unsigned k = 0; k < bs; k++)
			batch_idx[k] = shard[(j * bs + k) % shard_n];
		res.train_loss = model_gradient(&m, train->x, train->y, batch_idx, bs, grad);
		compute(o, ctx, rank, r);
		ina_get_stats(ctx, &st0);
		ret = exchange_gradient(ctx, grad, m.n_params);
		if (ret < 0) {
			fprintf(stderr,
				"ina-train[%u]: round %" PRIu64 ": allreduce failed: %s (%s)\n",
				rank, r, ina_last_error(ctx), ina_strerror(ret));
			ok = 0;
			break;
		}
		ina_get_stats(ctx, &st1);
		res.last_block = st1.block_size;
		res.grad_bytes_sent += st1.bytes_sent - st0.bytes_sent;
		res.grad_bytes_received += st1.bytes_received - st0.bytes_received;
		model_sgd_step(&m, grad, (float)o->lr);
		if (o->diverge_rank == (int)rank && o->diverge_round == r)
			m.params[0] = nextafterf(m.params[0], INFINITY);
		res.rounds = r + 1;

		/* Under ssp the last S averages are still in flight: applied
		 * now, then the replicas are compared. */
		while (o->ssp && res.rounds == total &&
		       (ret = ina_ssp_next(ctx, GRAD_TENSOR, grad)) == 1)
			model_sgd_step(&m, grad, (float)o->lr);
		if ((!o->ssp && res.rounds % o->check_every == 0) || res.rounds == total) {
			ret = replicas_agree(ctx, rank, o->workers, weights_hash(&m), &bad, o->ssp);
			if (ret < 0) {
				fprintf(stderr,
					"ina-train[%u]: round %" PRIu64 ": hash check failed: "
					"%s (%s)\n",
					rank, r, ina_last_error(ctx), ina_strerror(ret));
				ok = 0;
				break;
			}
			if (ret == 0) {
				fprintf(stderr,
					"ina-train[%u]: REPLICAS DIVERGED after round %" PRIu64
					": worker %u holds other weights than worker %u\n",
					rank, res.rounds, bad, rank);
				ok = 0;
				break;
			}
			res.hash_checks++;
		}
		if (rank == 0 &&
		    (csv || (!o->quiet && (j + 1 == per_epoch || res.rounds == total)))) {
			double loss = model_loss(&m, train->x, train->y, NULL, train->n);
			double acc = model_accuracy(&m, test->x, test->y, test->n);

			if (csv)
				fprintf(csv, "%" PRIu64 ",%.6f,%.6f\n", res.rounds, loss, acc);
			if (!o->quiet && (j + 1 == per_epoch || res.rounds == total))
				printf("epoch %3" PRIu64 "  round %5" PRIu64 "  train loss %.4f  "
				       "test accuracy %.4f\n",
				       epoch + 1, res.rounds, loss, acc);
		}
	}
	res.seconds = now_s() - t0;
	res.accuracy = model_accuracy(&m, test->x, test->y, test->n);
	res.train_loss = model_loss(&m, train->x, train->y, NULL, train->n);
	res.weights_hash = weights_hash(&m);
	ina_get_stats(ctx, &st1);
	res.density_sent = st1.sparse_blocks ? (double)st1.sparse_blocks_sent / st1.sparse_blocks
					     : 1.0;
	res.residual_norm = st1.residual_norm;
	res.blocks_deferred = st1.sparse_blocks_deferred;
	if (csv && fclose(csv) != 0) {
		fprintf(stderr, "ina-train: --csv %s: %s\n", o->csv, strerror(errno));
		ok = 0;
	}
	if (ok && rank == 0) {
		printf("ina-train: test accuracy %.4f after %" PRIu64 " rounds in %.2f s; replicas "
		       "identical at all %" PRIu64 " checks (weights %016" PRIx64
		       "); gradient bytes "
		       "sent %" PRIu64 " (dense %" PRIu64
		       "), density sent %.4f, blocks deferred %" PRIu64 ", residual norm %.4g\n",
		       res.accuracy, res.rounds, res.seconds, res.hash_checks, res.weights_hash,
		       res.grad_bytes_sent, (uint64_t)(m.n_params * 4 * res.rounds),
		       res.density_sent, res.blocks_deferred, res.residual_norm);
		fflush(stdout);
		if (o->report &&
		    write_report(o, &m, train, test, &res, &st1, ina_transport(ctx)) < 0) {
			fprintf(stderr, "ina-train: cannot write --report %s\n", o->report);
			ok = 0;
		}
		if (o->plot && o->csv)
			plot(o->csv, o->plot);
	}
	ret = ina_close(ctx);
	if (ok && ret < 0) {
		fprintf(stderr, "ina-train[%u]: close: %s\n", rank, ina_strerror(ret));
		ok = 0;
	}
	model_free(&m);
	free(shard);
	free(batch_idx);
	free(grad);
	fflush(stdout);
	return ok ? 0 : 1;
}

/* ina-switch next to this program: BINDIR/../switch_sim/ina-switch (the
 * build tree), else BINDIR/ina-switch (installed side by side). */
static void
find_switch(char *out, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *dir;

	if (n <= 0)
		ina_die("cannot find this program's path; give --switch-bin");
	self[n] = '\0';
	dir = dirname(self);
	snprintf(out, size, "%s/../switch_sim/ina-switch", dir);
	if (access(out, X_OK) == 0)
		return;
	snprintf(out, size, "%s/ina-switch", dir);
	if (access(out, X_OK) != 0)
		ina_die("no ina-switch at %s/../switch_sim/ or beside ina-train; give --switch-bin",
			dir);
}

/* The one-command run: the switch, then W forked workers; 0 or 1. */
static int
run_local(const struct opts *o, const struct dataset *train, const struct dataset *test)
{
	char bin[PATH_MAX + 64], listen_arg[128];
	pid_t sw, pids[MAX_WORKERS];
	unsigned left = o->workers;
	int fail = 0, status;
	struct timespec ts = { 0, 200 * 1000 * 1000 };

	if (o->switch_bin)
		snprintf(bin, sizeof(bin), "%s", o->switch_bin);
	else
		find_switch(bin, sizeof(bin));
	if (!o->token_file && !getenv("INA_JOB_TOKEN")) {
		char tok[64];

		snprintf(tok, sizeof(tok), "ina-train-%ld-%ld", (long)getpid(), (long)time(NULL));
		setenv("INA_JOB_TOKEN", tok, 1);
	}
	snprintf(listen_arg, sizeof(listen_arg), "%s", o->switch_addr);
	fflush(NULL);
	sw = fork();
	if (sw < 0)
		ina_die("fork: %s", strerror(errno));
	if (sw == 0) {
		execl(bin, bin, "--listen", listen_arg, "--log-level", "warn", (char *)NULL);
		fprintf(stderr, "ina-train: cannot start %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	nanosleep(&ts, NULL);
	if (waitpid(sw, &status, WNOHANG) == sw)
		ina_die("ina-switch (%s --listen %s) exited at start, status %d", bin, listen_arg,
			WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	for (unsigned r = 0; r < o->workers; r++) {
		fflush(NULL);
		pids[r] = fork();
		if (pids[r] < 0) {
			fprintf(stderr, "ina-train: fork: %s\n", strerror(errno));
			left = r;
			fail = 1;
			break;
		}
		if (pids[r] == 0)
			_exit(run_worker(o, r, train, test));
	}
	while (left > 0) {
		pid_t p = wait(&status);

		if (p < 0)
			break;
		if (p == sw) {
			fprintf(stderr, "ina-train: ina-switch exited early\n");
			sw = -1;
			fail = 1;
			continue;
		}
		left--;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			/* One worker failed: the others would only time out. */
			if (!fail)
				for (unsigned r = 0; r < o->workers; r++)
					if (pids[r] > 0 && pids[r] != p)
						kill(pids[r], SIGTERM);
			fail = 1;
		}
		for (unsigned r = 0; r < o->workers; r++)
			if (pids[r] == p)
				pids[r] = -1;
	}
	if (sw > 0) {
		kill(sw, SIGTERM);
		waitpid(sw, NULL, 0);
	}
	if (fail)
		fprintf(stderr, "ina-train: a worker failed\n");
	return fail;
}

int
main(int argc, char **argv)
{
	struct dataset all, train, test;
	struct opts o;
	char err[512], data_path[PATH_MAX + 64];
	int ret;

	ina_cli_set_prog("ina-train");
	parse_args(argc, argv, &o);
	if (!o.data) {
		if (train_default_data(data_path, sizeof(data_path), err, sizeof(err)) < 0)
			ina_die("%s", err);
		o.data = data_path;
	}
	if (data_load_csv(o.data, &all, err, sizeof(err)) < 0)
		ina_die("%s", err);
	data_scale(&all, (float)o.scale);
	if (data_split(&all, SPLIT_SEED, TEST_FRACTION, &train, &test) < 0)
		ina_die("%s: cannot split %zu rows", o.data, all.n);
	data_free(&all);
	if (o.rank >= 0)
		ret = run_worker(&o, (unsigned)o.rank, &train, &test);
	else
		ret = run_local(&o, &train, &test);
	data_free(&train);
	data_free(&test);
	return ret;
}
