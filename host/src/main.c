/* SPDX-License-Identifier: MIT */
/*
 * ina-host: the host agent program. Joins a job on an ina switch through the
 * C API (ina.h), allreduces a workload round after round (synthetic
 * block-sparse gradients, or real gradients from a .npy dump), verifies every
 * sum, prints a line per round and writes a JSON report. Exit status 0 only
 * if every round verified; 1 if a round failed or was wrong, 2 for bad options
 * or a job that could not be joined, 3 when the transport could not start.
 *
 * As a DPDK program it takes "[EAL options] -- [ina options]" (eal_main.h)
 * and runs on a dpdk port (--port dpdk:...); without EAL options, on UDP.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "ina.h"
#include "ina/cli.h"
#include "ina/eal_main.h"
#include "ina/log.h"
#include "ina/util.h"
#include "ina/wire.h"
#include "report.h"
#include "sim_ranks.h"
#include "sparsify_cli.h"
#include "workload.h"

/* Tensor id of the one-element allreduce that lines workers up before a round. */
#define BARRIER_TENSOR 0xffffffffu
/* A synthetic workload's non-zero blocks without --block: ina.h's default B
 * where a packet holds it (the job's own B is known only after ina_open()). */
#define SYNTH_BLOCK 1024

struct host_config {
	struct ina_config ina;
	const char *token_file;
	const char *tenant_key_file;
	const char *input;
	const char *report;
	uint64_t elements;
	double density;
	uint32_t rounds;
	uint64_t seed;
	enum ina_op op;
	struct ina_sparsify sp; /* tensor 0's sparsifier (--sparsify) */
	int quiet;
	int consistency;     /* --consistency given: run_rounds() */
	uint64_t compute_ns; /* --compute-us: a round's compute */
	double straggle;     /* --straggle: chance per round of a straggler */
};

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: ina-host --switch ADDR:PORT[,ADDR:PORT...] --job ID --rank R --world N\n"
		"                [options]\n"
		"       ina-host [EAL options] -- --port dpdk:OPTIONS --switch ADDR:PORT ...\n"
		"\n"
		"Joins job ID on the switch as rank R of N, allreduces a workload for a number\n"
		"of rounds, verifies every sum, and exits 0 only if every round verified.\n"
		"The job token comes from --token-file FILE or $INA_JOB_TOKEN, never argv.\n"
		"Tenant mode (ina-switch --tenants): the tenant's index from $INA_TENANT and\n"
		"its key from --tenant-key-file FILE or $INA_TENANT_KEY; then no token.\n"
		"Several switches (up to 16, every rank in the same order): each aggregates\n"
		"one contiguous part of every tensor as a job of its own.\n"
		"Exit status 3: the transport could not start (EAL, the port).\n"
		"\n"
		"workload (one of):\n"
		"  --elements M          synthetic tensor of M floats (default 1048576)\n"
		"  --density D           fraction of non-zero blocks, 0..1 (default 0.01)\n"
		"  --seed S              synthetic data seed (default 1)\n"
		"  --input FILE.npy      real gradients, shape (iterations, workers, params);\n"
		"                        rank r uses worker r mod workers, rounds cycle iterations\n"
		"  --rounds K            allreduces to run (default 10)\n"
		"\n"
		"options:\n"
		"  --lanes L             blocks in flight, one switch slot each (default 64)\n"
		"  --block B             elements per block (default 1024; with --plan the\n"
		"                        largest power of two a packet of the port holds\n"
		"                        with its sub-block mask, up to 2048: every rank\n"
		"                        must then have the same packet size)\n"
		"  --threads T           cores for this rank's per-byte work: T - 1 threads\n"
		"                        beside the main one encode, decode and tag whole\n"
		"                        blocks (1..16, default 1); same sums for every T\n"
		"  --weight W            the job's weight (1..255, default 1) when the switch\n"
		"                        shares its slots fairly (ina-switch --share fair):\n"
		"                        lanes in proportion to it; the switch may grant\n"
		"                        fewer lanes than --lanes (logged, and in --report)\n"
		"  --encoding E          payload encoding: f32, i32 or bf16 (default f32);\n"
		"                        bf16 sends half the bytes of f32, the switch sums\n"
		"                        in f32 and rounds the result once\n"
		"  --op sum|avg          sum, or average over the world (default sum)\n"
		"  --token-file FILE     file whose first line is the job secret\n"
		"  --tenant-key-file FILE  file whose first line is the tenant's key (tenant\n"
		"                        mode, with $INA_TENANT set to its index)\n"
		"  --port SPEC           transport, e.g. udp, udp:drop=0.01 or\n"
		"                        dpdk:port=0,ip=10.77.0.2 (needs EAL options; default udp);\n"
		"                        facing ina-switch --lcores K over memif, add\n"
		"                        queue=all,queues=K\n"
		"  --timeout-ms MS       no progress this long fails the run (default 10000)\n"
		"  --keepalive-ms MS     tell the switch this rank lives every MS while it\n"
		"                        sends nothing (default 1000, 0: off)\n"
		"  --pause-ms MS         the longest pause of a peer waited for while the switch\n"
		"                        says it lives (default 600000, 0: no bound)\n"
		"  --replica ADDR:PORT   a replica switch (ina-switch --primary) standing by:\n"
		"                        when the switch falls silent, the job goes on there\n"
		"  --failover-ms MS      with --replica: no answer from the switch this long\n"
		"                        while a round waits asks the replica to take over\n"
		"                        (default 1000)\n"
		"  --rto-us US           first retransmission timeout (default 5000)\n"
		"  --report FILE         write a JSON report\n"
		"  --capture FILE        write every packet sent and received to a pcap file\n"
		"%s"
		"                        With --sparsify every host simulates every rank's\n"
		"                        sparsifier and checks the sum of what the ranks\n"
		"                        sent, as a dense sum is checked (bit for bit on\n"
		"                        synthetic f32 and i32, else within the bound)\n"
		"  --consistency C       bsp (default: every round waits for every rank) or\n"
		"                        ssp:S (S 1..8: a rank runs up to S rounds ahead of\n"
		"                        the slowest; a block may close without a late rank,\n"
		"                        whose part stays in its residual). Under ssp the\n"
		"                        run sums (no --op, no per-round check: a round's sum\n"
		"                        may lack a late rank) and checks at the end that the\n"
		"                        sums received plus every rank's residual equal every\n"
		"                        gradient, bit for bit; needs --elements <= lanes x block\n"
		"  --compute-us US       with --consistency: each round first computes for US\n"
		"                        microseconds (driving the job meanwhile; default 0)\n"
		"  --straggle P          with --compute-us: each round, with chance P, a rank\n"
		"                        (the same on every rank, from --seed) computes three\n"
		"                        times as long: a transient straggler (default 0)\n"
		"  --plan                the block planner picks B per round (powers of two\n"
		"                        from 16 up to the job's largest B, --block above)\n"
		"                        from the previous result\n"
		"  --plan-cost P,Y[,C[,S]]  its prices: P ns a packet, Y ns a byte, C ns\n"
		"                        more a packet of a cut round and S more each\n"
		"                        sub-block it carries; it picks the least time\n"
		"                        (default 364,0.223,1000,9: the udp port's;\n"
		"                        memif's 219,0.116,150,9; 0,1,0,0: the fewest\n"
		"                        bytes)\n"
		"  --plan-period N       plan every N rounds, the plan held in between\n"
		"                        (default: every round until a plan repeats the\n"
		"                        last, then held twice as long each time it does,\n"
		"                        up to 16 rounds)\n"
		"  --sub-block N         cut every block into sub-blocks of N elements (a power\n"
		"                        of two, --block / N a power of two up to 128): a\n"
		"                        packet carries a mask and only the non-zero sub-\n"
		"                        blocks (default 0: whole blocks); every rank alike\n"
		"  --partition MAP       fixed (default: block b on lane b mod lanes, so on\n"
		"                        the switch's partition (b mod lanes) mod K) or\n"
		"                        dynamic[:P] (every P rounds, default 1, the blocks\n"
		"                        are re-dealt from the non-zero blocks of the last\n"
		"                        sum so that the K partitions get equal shares);\n"
		"                        every rank alike; not with ssp\n"
		"  --partitions K        the switch's partitions (its --lcores), 1..256\n"
		"                        (default 1); with several switches, the switches\n"
		"                        are the partitions\n"
		"  --quiet               no line per round\n"
		"  --log-level LEVEL     err, warn, info or debug (default info)\n"
		"  -h, --help            this text\n",
		sparsify_cli_help);
}

/* The job's lanes: --lanes, or the fewer the switch granted. */
static uint16_t
granted_lanes(const struct ina_ctx *ctx)
{
	struct ina_stats st;

	ina_get_stats(ctx, &st);
	return st.lanes;
}

/* The job's largest B: --block, or what ina_open() chose without it. */
static uint16_t
job_max_block(const struct ina_ctx *ctx)
{
	struct ina_stats st;

	ina_get_stats(ctx, &st);
	return st.max_block;
}

enum {
	OPT_SWITCH = 256,
	OPT_JOB,
	OPT_RANK,
	OPT_WORLD,
	OPT_ELEMENTS,
	OPT_DENSITY,
	OPT_SEED,
	OPT_INPUT,
	OPT_ROUNDS,
	OPT_LANES,
	OPT_BLOCK,
	OPT_ENCODING,
	OPT_OP,
	OPT_TOKEN_FILE,
	OPT_TENANT_KEY_FILE,
	OPT_PORT,
	OPT_TIMEOUT,
	OPT_RTO,
	OPT_REPORT,
	OPT_QUIET,
	OPT_LOG_LEVEL,
	OPT_CAPTURE,
	OPT_PLAN,
	OPT_SUB_BLOCK,
	OPT_PLAN_COST,
	OPT_PLAN_PERIOD,
	OPT_REPLICA,
	OPT_FAILOVER,
	OPT_CONSISTENCY,
	OPT_COMPUTE,
	OPT_STRAGGLE,
	OPT_PARTITION,
	OPT_PARTITIONS,
	OPT_WEIGHT,
	OPT_KEEPALIVE,
	OPT_PAUSE,
	OPT_THREADS,
};

static void
parse_args(int argc, char **argv, struct host_config *c)
{
	static const struct option opts[] = {
		{ "switch", required_argument, NULL, OPT_SWITCH },
		{ "job", required_argument, NULL, OPT_JOB },
		{ "rank", required_argument, NULL, OPT_RANK },
		{ "world", required_argument, NULL, OPT_WORLD },
		{ "elements", required_argument, NULL, OPT_ELEMENTS },
		{ "density", required_argument, NULL, OPT_DENSITY },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "input", required_argument, NULL, OPT_INPUT },
		{ "rounds", required_argument, NULL, OPT_ROUNDS },
		{ "lanes", required_argument, NULL, OPT_LANES },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "block", required_argument, NULL, OPT_BLOCK },
		{ "encoding", required_argument, NULL, OPT_ENCODING },
		{ "op", required_argument, NULL, OPT_OP },
		{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
		{ "tenant-key-file", required_argument, NULL, OPT_TENANT_KEY_FILE },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT },
		{ "rto-us", required_argument, NULL, OPT_RTO },
		{ "report", required_argument, NULL, OPT_REPORT },
		{ "capture", required_argument, NULL, OPT_CAPTURE },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
		SPARSIFY_CLI_OPTIONS,
		{ "plan", no_argument, NULL, OPT_PLAN },
		{ "sub-block", required_argument, NULL, OPT_SUB_BLOCK },
		{ "plan-cost", required_argument, NULL, OPT_PLAN_COST },
		{ "plan-period", required_argument, NULL, OPT_PLAN_PERIOD },
		{ "replica", required_argument, NULL, OPT_REPLICA },
		{ "failover-ms", required_argument, NULL, OPT_FAILOVER },
		{ "consistency", required_argument, NULL, OPT_CONSISTENCY },
		{ "compute-us", required_argument, NULL, OPT_COMPUTE },
		{ "straggle", required_argument, NULL, OPT_STRAGGLE },
		{ "partition", required_argument, NULL, OPT_PARTITION },
		{ "partitions", required_argument, NULL, OPT_PARTITIONS },
		{ "weight", required_argument, NULL, OPT_WEIGHT },
		{ "keepalive-ms", required_argument, NULL, OPT_KEEPALIVE },
		{ "pause-ms", required_argument, NULL, OPT_PAUSE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int have_job = 0, have_rank = 0, have_world = 0, have_synth = 0;
	int o;

	ina_cli_set_prog("ina-host");
	memset(c, 0, sizeof(*c));
	ina_config_init(&c->ina);
	c->elements = 1 << 20;
	c->density = 0.01;
	c->rounds = 10;
	c->seed = 1;
	c->op = INA_SUM;
	c->sp = c->ina.sparsify; /* off, density 0.1, mass 0.5, b0 0, decay 1 */
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case OPT_SWITCH:
			c->ina.switch_addr = optarg;
			break;
		case OPT_COMPUTE:
			c->compute_ns = ina_cli_u64("compute-us", optarg, 0, 10000000) * 1000;
			break;
		case OPT_STRAGGLE:
			if (ina_parse_double(optarg, 0.0, 1.0, &c->straggle) < 0)
				ina_die("--straggle: '%s' is not a number in 0..1", optarg);
			break;
		case OPT_CONSISTENCY:
			c->consistency = 1;
			if (strcmp(optarg, "bsp") == 0)
				c->ina.ssp = 0;
			else if (strncmp(optarg, "ssp:", 4) == 0)
				c->ina.ssp = (uint8_t)ina_cli_u64("consistency", optarg + 4, 1, 8);
			else
				ina_die("--consistency: '%s' is not bsp or ssp:S", optarg);
			break;
		case OPT_JOB:
			c->ina.job_id = (uint32_t)ina_cli_u64("job", optarg, 0, UINT32_MAX);
			have_job = 1;
			break;
		case OPT_RANK:
			c->ina.rank = (uint16_t)ina_cli_u64("rank", optarg, 0, 63);
			have_rank = 1;
			break;
		case OPT_WORLD:
			c->ina.world = (uint16_t)ina_cli_u64("world", optarg, 1, 64);
			have_world = 1;
			break;
		case OPT_ELEMENTS:
			c->elements = ina_cli_u64("elements", optarg, 1, 0xfffffffdull);
			have_synth = 1;
			break;
		case OPT_DENSITY:
			if (ina_parse_double(optarg, 0.0, 1.0, &c->density) < 0)
				ina_die("--density: '%s' is not a number in 0..1", optarg);
			have_synth = 1;
			break;
		case OPT_SEED:
			c->seed = ina_cli_u64("seed", optarg, 0, UINT64_MAX);
			break;
		case OPT_INPUT:
			c->input = optarg;
			break;
		case OPT_ROUNDS:
			c->rounds = (uint32_t)ina_cli_u64("rounds", optarg, 1, 1000000);
			break;
		case OPT_LANES:
			c->ina.lanes = (uint16_t)ina_cli_u64("lanes", optarg, 1, 4096);
			break;
		case OPT_THREADS:
			c->ina.threads = (uint32_t)ina_cli_u64("threads", optarg, 1,
							       INA_THREADS_MAX);
			break;
		case OPT_WEIGHT:
			c->ina.weight = (uint8_t)ina_cli_u64("weight", optarg, 1, 255);
			break;
		case OPT_BLOCK:
			c->ina.block_size = (uint16_t)ina_cli_u64("block", optarg, 1, 16384);
			break;
		case OPT_ENCODING:
			if (strcmp(optarg, "f32") == 0)
				c->ina.encoding = INA_F32;
			else if (strcmp(optarg, "i32") == 0)
				c->ina.encoding = INA_I32;
			else if (strcmp(optarg, "bf16") == 0)
				c->ina.encoding = INA_BF16;
			else
				ina_die("--encoding: '%s' is not f32, i32 or bf16", optarg);
			break;
		case OPT_OP:
			if (strcmp(optarg, "sum") == 0)
				c->op = INA_SUM;
			else if (strcmp(optarg, "avg") == 0)
				c->op = INA_AVG;
			else
				ina_die("--op: '%s' is not sum or avg", optarg);
			break;
		case OPT_TOKEN_FILE:
			c->token_file = optarg;
			break;
		case OPT_TENANT_KEY_FILE:
			c->tenant_key_file = optarg;
			break;
		case OPT_PORT:
			c->ina.port = optarg;
			break;
		case OPT_TIMEOUT:
			c->ina.timeout_ms = (uint32_t)ina_cli_u64("timeout-ms", optarg, 1,
								  86400000);
			break;
		case OPT_RTO:
			c->ina.rto_us = (uint32_t)ina_cli_u64("rto-us", optarg, 1, 10000000);
			break;
		case OPT_REPLICA:
			c->ina.replica_addr = optarg;
			break;
		case OPT_FAILOVER:
			c->ina.failover_ms = (uint32_t)ina_cli_u64("failover-ms", optarg, 1,
								   86400000);
			break;
		case OPT_KEEPALIVE:
			c->ina.keepalive_ms = (uint32_t)ina_cli_u64("keepalive-ms", optarg, 0,
								    3600000);
			break;
		case OPT_PAUSE:
			c->ina.pause_ms = (uint32_t)ina_cli_u64("pause-ms", optarg, 0, 86400000);
			break;
		case OPT_REPORT:
			c->report = optarg;
			break;
		case OPT_CAPTURE:
			c->ina.capture = optarg;
			break;
		case OPT_QUIET:
			c->quiet = 1;
			break;
		case OPT_PLAN:
			c->ina.plan_blocks = 1;
			break;
		case OPT_SUB_BLOCK:
			c->ina.sub_block = (uint16_t)ina_cli_u64("sub-block", optarg, 0,
								 INA_BLOCK_MAX);
			break;
		case OPT_PLAN_PERIOD:
			c->ina.plan_period = (uint32_t)ina_cli_u64("plan-period", optarg, 1,
								   1000000);
			break;
		case OPT_PLAN_COST: {
			double *ns[4] = { &c->ina.plan_packet_ns, &c->ina.plan_byte_ns,
					  &c->ina.plan_cut_packet_ns, &c->ina.plan_cut_sub_ns };
			char buf[96], *tok, *save = NULL;
			unsigned k = 0;
			int bad = 0;

			if (strlen(optarg) >= sizeof(buf))
				ina_die("--plan-cost: '%s' is too long", optarg);
			strcpy(buf, optarg);
			for (tok = strtok_r(buf, ",", &save); tok && k < 4 && !bad;
			     tok = strtok_r(NULL, ",", &save))
				bad = ina_parse_double(tok, 0.0, 1e6, ns[k++]) < 0;
			if (bad || k < 2 || tok ||
			    (c->ina.plan_packet_ns == 0 && c->ina.plan_byte_ns == 0))
				ina_die("--plan-cost: '%s' is not P,Y[,C[,S]] (ns in 0..1e6, P and Y "
					"not both 0)",
					optarg);
			break;
		}
		case OPT_PARTITION:
			if (strcmp(optarg, "fixed") == 0) {
				c->ina.partition = INA_PARTITION_FIXED;
			} else if (strcmp(optarg, "dynamic") == 0) {
				c->ina.partition = INA_PARTITION_DYNAMIC;
				c->ina.partition_period = 1;
			} else if (strncmp(optarg, "dynamic:", 8) == 0) {
				c->ina.partition = INA_PARTITION_DYNAMIC;
				c->ina.partition_period = (uint32_t)ina_cli_u64("partition",
										optarg + 8, 1,
										UINT32_MAX);
			} else {
				ina_die("--partition: '%s' is not fixed, dynamic or dynamic:P",
					optarg);
			}
			break;
		case OPT_PARTITIONS:
			c->ina.partitions = (uint16_t)ina_cli_u64("partitions", optarg, 1, 256);
			break;
		case OPT_LOG_LEVEL:
			ina_cli_log_level(optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			if (sparsify_cli_parse(o, optarg, &c->sp))
				break;
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		ina_die("unexpected argument '%s' (see --help)", argv[optind]);
	if (!c->ina.switch_addr || !have_job || !have_rank || !have_world)
		ina_die("--switch, --job, --rank and --world are required (see --help)");
	if (c->ina.rank >= c->ina.world)
		ina_die("--rank %u must be below --world %u", c->ina.rank, c->ina.world);
	if (c->input && have_synth)
		ina_die("--input and --elements/--density are exclusive");
	if (c->ina.partition == INA_PARTITION_DYNAMIC && c->ina.ssp)
		ina_die("--partition dynamic needs --consistency bsp: under ssp a rank starts "
			"round r before it holds the sum of round r - 1 the map is built from");
}

/* What the job said of round r besides its result: its B and the blocks
 * that came back DEFERRED (NULL for none). */
struct round_marks {
	uint16_t block_size;
	const uint8_t *deferred;
	size_t n_blocks;
};

/* Round 'r' on the simulated ranks: the same B as the job's, deferred
 * blocks whose sums were under the bound, then what they contributed. */
static int
simulate_round(struct sim_ranks *sim, struct workload *w, uint32_t r, const float *got,
	       const struct round_marks *m, int exact)
{
	uint32_t bad = 0;
	int ret = sim_ranks_round(sim, w, r);

	if (ret < 0)
		return ret;
	if (sim_ranks_block_size(sim) != m->block_size) {
		INA_LOG(ERR,
			"round %" PRIu32 ": the job used B %u, every simulated rank planned %u", r,
			m->block_size, sim_ranks_block_size(sim));
		return -EPROTO;
	}
	ret = sim_ranks_result(sim, got, m->deferred, m->n_blocks, exact, &bad);
	if (ret == -EPROTO)
		INA_LOG(ERR,
			"round %" PRIu32 ": block %" PRIu32 " came back DEFERRED, but its sum "
			"was not under the round's bound",
			r, bad);
	return ret;
}

/* Checks round 'r''s result 'got': dense, against the workload's own
 * gradients; sparsified or planned, against what every simulated rank sent
 * (sim_ranks.h). Either way workload_check(), exact or within the encoding's
 * bound, in the round's B. */
static void
verify_round(const struct host_config *c, struct workload *w, struct sim_ranks *sim, uint32_t r,
	     const float *got, const struct round_marks *m, struct verify_result *vr)
{
	uint8_t enc = (uint8_t)c->ina.encoding;
	int avg = c->op == INA_AVG;
	int ret;

	memset(vr, 0, sizeof(*vr));
	if (!sim) {
		ret = workload_verify(w, r, got, avg, enc, m->block_size, vr);
	} else {
		struct check_params p = {
			.n = workload_elements(w),
			.world = c->ina.world,
			.block_size = m->block_size,
			.encoding = enc,
			.average = avg,
			.exact = workload_exact(w, enc),
		};

		ret = simulate_round(sim, w, r, got, m, p.exact);
		if (ret == 0)
			ret = workload_check(&p, sim_ranks_sent(sim), got, vr);
	}
	if (ret < 0) {
		INA_LOG(ERR, "round %" PRIu32 ": cannot check the result: %s", r, strerror(-ret));
		vr->ok = 0;
	}
}

/* A one-element allreduce that lines the workers up, 'when' round r: 0, or
 * < 0 with the reason printed. */
static int
line_up(struct ina_ctx *ctx, uint16_t rank, const char *when, uint32_t r)
{
	float one = 1.0f, sum;
	int ret = ina_allreduce(ctx, BARRIER_TENSOR, &one, &sum, 1, INA_SUM);

	if (ret < 0)
		fprintf(stderr, "ina-host[%u]: barrier %s round %" PRIu32 " failed: %s (%s)\n",
			rank, when, r, ina_last_error(ctx), ina_strerror(ret));
	return ret;
}

/* A round's counters: the differences over its allreduce. */
static void
round_stats(struct report_round *rr, const struct ina_stats *before, const struct ina_stats *after)
{
	uint64_t blocks = after->sparse_blocks - before->sparse_blocks;
	uint64_t sent = after->sparse_blocks_sent - before->sparse_blocks_sent;

	rr->bytes_sent = after->bytes_sent - before->bytes_sent;
	rr->bytes_received = after->bytes_received - before->bytes_received;
	rr->retransmits = after->retransmits - before->retransmits;
	/* A dense round sends every non-zero block and keeps no residual. */
	rr->density_sent = blocks ? (double)sent / (double)blocks : 1.0;
	rr->residual_norm = blocks ? after->residual_norm : 0.0;
	rr->block_size = after->block_size;
	rr->blocks_deferred = after->sparse_blocks_deferred - before->sparse_blocks_deferred;
	rr->partition_tag = after->partition_tag;
}

static uint64_t
mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Round r's compute on this rank (--compute-us, --straggle), driving the
 * job meanwhile as a framework's progress thread would. */
static void
compute(const struct host_config *c, struct ina_ctx *ctx, uint32_t r)
{
	uint64_t h = mix64(c->seed * 0x100000001b3ull ^ r);
	uint64_t ns = c->compute_ns, now, until;

	if ((double)(h >> 11) * 0x1.0p-53 < c->straggle &&
	    (uint16_t)(mix64(h) % c->ina.world) == c->ina.rank)
		ns *= 3;
	until = ina_now_ns() + ns;
	while ((now = ina_now_ns()) < until) {
		uint64_t left_us = (until - now) / 1000;

		if (ina_progress(ctx, (uint32_t)(left_us < 200 ? left_us : 200)) < 0)
			return;
	}
}

/*
 * The rounds of --consistency bsp or ssp:S: each rank computes (--compute-us)
 * and sends its gradient of every round; ina_allreduce() returns the sum of
 * S rounds back (under bsp of this round), and after the last round
 * ina_ssp_next() the ones still in flight. A round's sum may lack a late
 * rank, whose part stays in its residual. The check: the sums received plus
 * every rank's final residual (summed by one more round, which nothing
 * closes early: no round comes after it) equal the sum of every rank's
 * gradients over the rounds, bit for bit on synthetic data. Returns 1 if it
 * holds, 0 if not, negative on an ina error; '*seconds' is the time of the
 * rounds.
 */
static int
run_rounds(const struct host_config *c, struct ina_ctx *ctx, struct workload *w, uint32_t n,
	   float *buf, double *seconds, uint64_t *mismatches)
{
	float *out = malloc((size_t)n * sizeof(float));
	double *recv = calloc(n, sizeof(double)), *want = calloc(n, sizeof(double));
	const float *res;
	size_t nr = 0;
	uint64_t t0;
	int ret = 0;

	if (!out || !recv || !want)
		ina_die("out of memory for %" PRIu32 " elements", n);
	*mismatches = 0;
	t0 = ina_now_ns();
	for (uint32_t r = 0; r < c->rounds; r++) {
		if (workload_fill(w, r, c->ina.rank, buf) < 0)
			ina_die("cannot read round %" PRIu32 " of the workload", r);
		compute(c, ctx, r);
		ret = ina_allreduce(ctx, 0, buf, out, n, INA_SUM);
		if (ret < 0)
			goto out;
		for (uint32_t i = 0; i < n; i++)
			recv[i] += out[i];
	}
	while (c->ina.ssp && (ret = ina_ssp_next(ctx, 0, out)) == 1)
		for (uint32_t i = 0; i < n; i++)
			recv[i] += out[i];
	if (ret < 0)
		goto out;
	*seconds = (double)(ina_now_ns() - t0) / 1e9;
	for (uint32_t r = 0; r < c->rounds; r++)
		for (uint16_t k = 0; k < c->ina.world; k++) {
			if (workload_fill(w, r, k, buf) < 0)
				ina_die("cannot read round %" PRIu32 " of the workload", r);
			for (uint32_t i = 0; i < n; i++)
				want[i] += buf[i];
		}
	res = ina_residual(ctx, 0, &nr);
	for (uint32_t i = 0; i < n; i++)
		buf[i] = res && nr == n ? res[i] : 0.0f;
	ret = ina_allreduce(ctx, 1, buf, out, n, INA_SUM);
	if (ret < 0 || (c->ina.ssp && (ret = ina_ssp_next(ctx, 1, out)) < 0))
		goto out;
	for (uint32_t i = 0; i < n; i++)
		if (recv[i] + out[i] != want[i])
			(*mismatches)++;
	ret = *mismatches == 0;
out:
	free(out);
	free(recv);
	free(want);
	return ret;
}

/* The blocks' round trips of the run (send to result), for a summary line. */
static const char *
rtt_text(const struct ina_stats *st, char *buf, size_t size)
{
	snprintf(buf, size, "block round trip median %.1f us  p99 %.1f us  max %.1f us",
		 st->rtt_median_us, st->rtt_p99_us, st->rtt_max_us);
	return buf;
}

static const char *
encoding_name(enum ina_encoding_type e)
{
	return e == INA_I32 ? "i32" : e == INA_BF16 ? "bf16" : "f32";
}

int
main(int argc, char **argv)
{
	struct host_config c;
	struct ina_ctx *ctx = NULL;
	struct workload *w;
	struct report_round *rounds;
	struct report rep;
	char err[256], ident[32], rtt[96];
	float *buf;
	struct sim_ranks *sim = NULL;
	int ret, all_ok = 1;
	uint16_t max_block;
	double total = 0;
	uint32_t n;

	ina_eal_main_start("ina-host", &argc, &argv);
	parse_args(argc, argv, &c);
	ina_eal_main_check_spec("--port", c.ina.port);
	snprintf(ident, sizeof(ident), "ina-host[%u]", c.ina.rank);
	ina_log_set_ident(ident);
	ret = ina_tenant_from(c.tenant_key_file, &c.ina, err, sizeof(err));
	if (ret < 0)
		ina_die("%s", err);
	if (ret == 0 && ina_token_from(c.token_file, &c.ina.token, err, sizeof(err)) < 0)
		ina_die("%s", err);
	if (c.input) {
		w = workload_npy(c.input, c.ina.world, err, sizeof(err));
		if (!w)
			ina_die("%s", err);
	} else {
		/* Non-zero blocks of --block, or of the default when unset
		 * (the job's B is known only once the port is open). */
		w = workload_synth((uint32_t)c.elements, c.density, c.seed, c.ina.world,
				   c.ina.block_size ? c.ina.block_size : SYNTH_BLOCK);
		if (!w)
			ina_die("out of memory");
	}
	n = workload_elements(w);
	buf = malloc((size_t)n * sizeof(float));
	rounds = calloc(c.rounds, sizeof(*rounds));
	if (!buf || !rounds)
		ina_die("out of memory for %" PRIu32 " elements", n);

	ret = ina_open(&c.ina, &ctx, err, sizeof(err));
	if (ret == INA_EPORT)
		ina_eal_main_port_failed(c.ina.port, err);
	if (ret < 0)
		ina_die("cannot join job %" PRIu32 " at %s%s%s: %s (%s)", c.ina.job_id,
			c.ina.switch_addr, c.ina.replica_addr ? " with the replica " : "",
			c.ina.replica_addr ? c.ina.replica_addr : "", err, ina_strerror(ret));
	max_block = job_max_block(ctx);
	if (c.sp.mode != INA_SPARSIFY_OFF || c.ina.plan_blocks) {
		struct tround_config tc = {
			.n = n,
			.sp = c.sp,
			.plan = c.ina.plan_blocks,
			.packet_ns = c.ina.plan_packet_ns,
			.byte_ns = c.ina.plan_byte_ns,
			.cut_packet_ns = c.ina.plan_cut_packet_ns,
			.cut_sub_ns = c.ina.plan_cut_sub_ns,
			.plan_period = c.ina.plan_period,
			.max_block = max_block,
			.sub_block = c.ina.sub_block,
			.encoding = (uint8_t)c.ina.encoding,
			.world = c.ina.world,
			.lanes = granted_lanes(ctx),
		};

		if (ina_tensor_sparsify(ctx, 0, &c.sp) < 0)
			ina_die("--sparsify: %s", ina_last_error(ctx));
		sim = sim_ranks_create(&tc, err, sizeof(err));
		if (!sim)
			ina_die("cannot simulate %u ranks: %s", c.ina.world, err);
	}
	{
		/* The partition map in the form --partition takes it. */
		char part[48];
		unsigned nsw = 1;

		for (const char *p = c.ina.switch_addr; *p; p++)
			nsw += *p == ',';
		if (c.ina.partition == INA_PARTITION_DYNAMIC)
			snprintf(part, sizeof(part), "dynamic:%u", c.ina.partition_period);
		else
			snprintf(part, sizeof(part), "fixed");
		INA_LOG(INFO,
			"joined job %" PRIu32 " epoch %" PRIu32 ": rank %u of %u, %s, %" PRIu32
			" elements, %u lanes, B %u, %s, partition %s over %u %s, over %s%s%s",
			c.ina.job_id, ina_epoch(ctx), c.ina.rank, c.ina.world, workload_kind(w), n,
			granted_lanes(ctx), max_block, encoding_name(c.ina.encoding), part,
			nsw > 1 ? nsw : (c.ina.partitions ? c.ina.partitions : 1u),
			nsw > 1 ? "switches" : "switch partition(s)", ina_transport(ctx),
			c.ina.replica_addr ? ", replica standing by at " : "",
			c.ina.replica_addr ? c.ina.replica_addr : "");
	}

	if (c.consistency) {
		uint64_t bad = 0;
		struct ina_stats st;

		ret = run_rounds(&c, ctx, w, n, buf, &total, &bad);
		ina_get_stats(ctx, &st);
		if (ret < 0)
			fprintf(stderr, "ina-host[%u]: run failed: %s (%s)\n", c.ina.rank,
				ina_last_error(ctx), ina_strerror(ret));
		else if (!ret)
			fprintf(stderr,
				"ina-host[%u]: sums received + residuals differ from "
				"the gradients in %" PRIu64 " elements\n",
				c.ina.rank, bad);
		else
			printf("%s%.0u  %" PRIu32 " rounds  %8.3f ms/round  blocks missed %" PRIu64
			       "  retx %" PRIu64 "  %s  received + residuals = gradients "
			       "(bit-exact)\n",
			       c.ina.ssp ? "ssp:" : "bsp", c.ina.ssp, c.rounds,
			       total * 1e3 / c.rounds, st.ssp_missed, st.retransmits,
			       rtt_text(&st, rtt, sizeof(rtt)));
		for (uint32_t r = 0; r < c.rounds; r++) {
			rounds[r].round = r;
			rounds[r].seconds = total / c.rounds;
			rounds[r].verified = ret == 1;
		}
		all_ok = ret == 1;
		c.rounds = all_ok ? c.rounds : 0;
	}
	for (uint32_t r = 0; r < c.rounds && !c.consistency; r++) {
		struct verify_result vr;
		struct ina_stats before, after;
		uint64_t t0, t1;

		if (workload_fill(w, r, c.ina.rank, buf) < 0)
			ina_die("cannot read round %" PRIu32 " of the workload", r);
		/*
		 * A one-element allreduce lines the workers up, so that the
		 * timed round measures the allreduce and not how much later
		 * one worker finished making its gradient (as MPI benchmarks
		 * barrier before timing). It is left out of the round's bytes.
		 */
		if (line_up(ctx, c.ina.rank, "before", r) < 0) {
			all_ok = 0;
			break;
		}
		ina_get_stats(ctx, &before);
		t0 = ina_now_ns();
		ret = ina_allreduce(ctx, 0, buf, buf, n, c.op);
		t1 = ina_now_ns();
		if (ret < 0) {
			fprintf(stderr, "ina-host[%u]: round %" PRIu32 " failed: %s (%s)\n",
				c.ina.rank, r, ina_last_error(ctx), ina_strerror(ret));
			all_ok = 0;
			break;
		}
		ina_get_stats(ctx, &after);
		/*
		 * And again after it: no worker starts checking the round (on
		 * the simulated ranks, a planner and a sparsifier each) while
		 * another is still in its timed allreduce on the same cores.
		 */
		if (line_up(ctx, c.ina.rank, "after", r) < 0) {
			all_ok = 0;
			break;
		}
		{
			struct round_marks m = { .block_size = after.block_size };

			m.deferred = ina_deferred_blocks(ctx, 0, &m.n_blocks);
			verify_round(&c, w, sim, r, buf, &m, &vr);
		}
		round_stats(&rounds[r], &before, &after);
		/* b: the simulated ranks' cut (the same planner), or the job's. */
		rounds[r].sub_block = rounds[r].block_size >>
				      (sim ? sim_ranks_sub_log(sim)
					   : tround_sub_log((uint16_t)rounds[r].block_size,
							    c.ina.sub_block));
		rounds[r].round = r;
		rounds[r].seconds = (double)(t1 - t0) / 1e9;
		rounds[r].verified = vr.ok;
		rounds[r].max_err_ratio = vr.max_err_ratio;
		rounds[r].sum_hash = XXH3_64bits(buf, (size_t)n * sizeof(float));
		total += rounds[r].seconds;
		if (!vr.ok) {
			all_ok = 0;
			fprintf(stderr,
				"ina-host[%u]: round %" PRIu32 " WRONG: %" PRIu64
				" elements differ, first at %" PRIu64 ": got %.9g want %.9g\n",
				c.ina.rank, r, vr.mismatches, vr.first_bad, (double)vr.got,
				(double)vr.want);
		}
		if (!c.quiet) {
			double dense = (double)n * 4;

			printf("round %3" PRIu32 "  %8.3f ms  goodput %7.3f Gb/s  sent %9.3f MB  "
			       "recv %9.3f MB  (%6.2f%% of dense)  retx %4" PRIu64 "  %s\n",
			       r, rounds[r].seconds * 1e3,
			       rounds[r].seconds > 0 ? dense * 8 / rounds[r].seconds / 1e9 : 0.0,
			       rounds[r].bytes_sent / 1e6, rounds[r].bytes_received / 1e6,
			       100.0 * (double)(rounds[r].bytes_sent + rounds[r].bytes_received) /
				       (2 * dense),
			       rounds[r].retransmits,
			       !vr.ok	  ? "WRONG"
			       : vr.exact ? "verified (bit-exact)"
					  : "verified (within bound)");
			fflush(stdout);
		}
	}

	if (!c.quiet && !c.consistency && c.rounds && all_ok) {
		struct ina_stats st;

		ina_get_stats(ctx, &st);
		printf("%" PRIu32 " rounds  %8.3f ms/round  goodput %7.3f Gb/s  retx %" PRIu64
		       "  %s\n",
		       c.rounds, total * 1e3 / c.rounds,
		       total > 0 ? (double)n * 4 * 8 * c.rounds / total / 1e9 : 0.0, st.retransmits,
		       rtt_text(&st, rtt, sizeof(rtt)));
	}
	memset(&rep, 0, sizeof(rep));
	rep.transport = ina_transport(ctx);
	rep.port = c.ina.port;
	rep.workload = workload_kind(w);
	rep.encoding = encoding_name(c.ina.encoding);
	rep.job = c.ina.job_id;
	rep.rank = c.ina.rank;
	rep.world = c.ina.world;
	rep.lanes = granted_lanes(ctx);
	rep.lanes_asked = c.ina.lanes;
	rep.block_size = max_block;
	rep.rounds = c.rounds;
	rep.elements = n;
	rep.density = c.input ? -1 : c.density;
	rep.sparsifier = sparsify_cli_mode_name(c.sp.mode);
	rep.seconds = total;
	rep.per_round = rounds;
	ina_get_stats(ctx, &rep.stats);
	/* A run that stopped early verified only what it ran. */
	for (uint32_t r = 0; r < c.rounds; r++)
		all_ok &= rounds[r].verified;
	rep.verified = all_ok;
	ret = ina_close(ctx);
	if (c.report && report_write(c.report, &rep) < 0)
		ina_die("cannot write report %s", c.report);
	workload_destroy(w);
	sim_ranks_destroy(sim);
	free(buf);
	free(rounds);
	(void)ret;
	return all_ok ? 0 : 1;
}
