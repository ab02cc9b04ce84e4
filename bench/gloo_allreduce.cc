// SPDX-License-Identifier: MIT
/*
 * gloo_allreduce: the Gloo baseline (Debian's libgloo-dev, the library under
 * PyTorch's CPU backend) over TCP loopback, timed as bench_allreduce times
 * ina: the input made once, then per iteration a barrier and one timed
 * gloo::allreduce (float32 sum, input to a separate output, the algorithm
 * PyTorch's gloo backend uses by default); the sum checked once after the
 * loop (a wrong sum fails the run). One process forks the W ranks, which meet
 * through a file store in a fresh directory; after the loop they gather
 * every rank's times (one more allreduce, not timed) and rank 0 prints the
 * median over the iterations of the slowest rank's time.
 *
 * Usage: gloo_allreduce [--world W] [--elements N] [--reps R] [--warmup K]
 *                       [--timeout S]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

namespace {

const unsigned max_reps = 1000;

struct bench {
	unsigned world = 4;
	uint64_t elements = 16777216;
	unsigned reps = 10, warmup = 2, timeout_s = 300;
};

void
usage(FILE *f)
{
	fprintf(f, "usage: gloo_allreduce [options]\n"
		   "\n"
		   "Times gloo::allreduce (float32 sum, TCP loopback) of W forked ranks as\n"
		   "OpenMPI's benchmarks do: input made once, then per iteration a barrier and\n"
		   "one timed allreduce; the sum checked once after the loop. Rank 0 prints\n"
		   "the median of the slowest rank's time per allreduce.\n"
		   "\n"
		   "options:\n"
		   "  --world W             ranks, 1..16 (default 4)\n"
		   "  --elements N          tensor elements (default 16777216)\n"
		   "  --reps R              timed allreduces (default 10)\n"
		   "  --warmup K            untimed allreduces first (default 2)\n"
		   "  --timeout S           the whole run's bound, seconds (default 300)\n"
		   "  -h, --help            this text\n");
}

int
parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return *s && !*end && !errno && *v >= lo && *v <= hi ? 0 : -EINVAL;
}

/* 0, 1 (--help) or -EINVAL (printed). */
int
parse_args(int argc, char **argv, bench *b)
{
	static const struct option opts[] = {
		{ "world", required_argument, NULL, 'w' },
		{ "elements", required_argument, NULL, 'n' },
		{ "reps", required_argument, NULL, 'r' },
		{ "warmup", required_argument, NULL, 'k' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int o;

	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'w':
			if (parse_u64(optarg, 1, 16, &v) < 0)
				goto bad;
			b->world = (unsigned)v;
			break;
		case 'n':
			if (parse_u64(optarg, 1, 1ull << 31, &b->elements) < 0)
				goto bad;
			break;
		case 'r':
			if (parse_u64(optarg, 1, max_reps, &v) < 0)
				goto bad;
			b->reps = (unsigned)v;
			break;
		case 'k':
			if (parse_u64(optarg, 0, max_reps, &v) < 0)
				goto bad;
			b->warmup = (unsigned)v;
			break;
		case 't':
			if (parse_u64(optarg, 1, 86400, &v) < 0)
				goto bad;
			b->timeout_s = (unsigned)v;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gloo_allreduce: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
bad:
	fprintf(stderr, "gloo_allreduce: bad value '%s' for an option\n", optarg);
	return -EINVAL;
}

/* The same inputs as bench_allreduce: small integers, exact in any order. */
float
value(uint64_t i, unsigned r)
{
	return (float)((int)((i * 7 + r * 5) % 13) - 6);
}

double
now_s()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
sum_f32(void *c, const void *a, const void *b, size_t n)
{
	gloo::sum<float>(c, a, b, n);
}

void
allreduce(const std::shared_ptr<gloo::Context> &ctx, float *in, float *out, size_t n, uint32_t tag)
{
	gloo::AllreduceOptions opts(ctx);

	opts.setInput(in, n);
	opts.setOutput(out, n);
	opts.setReduceFunction(sum_f32);
	opts.setTag(tag);
	gloo::allreduce(opts);
}

/* One rank: its exit code. */
int
rank_main(const bench &b, unsigned rank, const std::string &dir)
{
	size_t n = (size_t)b.elements;
	std::vector<float> in(n), out(n, 0.0f);
	std::vector<double> times(b.reps);
	uint64_t bad = 0, first_bad = 0;

	for (size_t i = 0; i < n; i++)
		in[i] = value(i, rank);
	gloo::transport::tcp::attr attr("127.0.0.1");
	auto dev = gloo::transport::tcp::CreateDevice(attr);
	gloo::rendezvous::FileStore store(dir);
	gloo::rendezvous::PrefixStore prefix("bench", store);
	auto ctx = std::make_shared<gloo::rendezvous::Context>((int)rank, (int)b.world);
	ctx->setTimeout(std::chrono::seconds(b.timeout_s));
	ctx->connectFullMesh(prefix, dev);

	for (unsigned k = 0; k < b.warmup + b.reps; k++) {
		gloo::BarrierOptions bo(ctx);

		bo.setTag(2 * k + 1);
		gloo::barrier(bo);
		double t0 = now_s();
		allreduce(ctx, in.data(), out.data(), n, 2 * k + 2);
		if (k >= b.warmup)
			times[k - b.warmup] = now_s() - t0;
	}
	for (size_t i = 0; i < n; i++) {
		float want = 0;

		for (unsigned r = 0; r < b.world; r++)
			want += value(i, r);
		if (out[i] != want && bad++ == 0)
			first_bad = i;
	}
	if (bad) {
		fprintf(stderr,
			"gloo_allreduce: rank %u: WRONG SUM: %" PRIu64 " of %zu elements, "
			"first at %" PRIu64 "\n",
			rank, bad, n, first_bad);
		return 1;
	}
	/* Every rank's times (us), each rank its row. */
	std::vector<float> all((size_t)b.world * b.reps, 0.0f), sum(all.size());
	for (unsigned k = 0; k < b.reps; k++)
		all[(size_t)rank * b.reps + k] = (float)(times[k] * 1e6);
	allreduce(ctx, all.data(), sum.data(), all.size(), 0x7fff0000u);
	if (rank == 0) {
		std::vector<double> slowest(b.reps, 0.0);

		for (unsigned k = 0; k < b.reps; k++)
			for (unsigned r = 0; r < b.world; r++)
				slowest[k] = std::max(slowest[k],
						      (double)sum[(size_t)r * b.reps + k] * 1e-6);
		std::sort(slowest.begin(), slowest.end());
		double med = b.reps % 2 ? slowest[b.reps / 2]
					: (slowest[b.reps / 2 - 1] + slowest[b.reps / 2]) / 2;
		printf("gloo_allreduce ranks=%u elements=%" PRIu64 " reps=%u median_ms=%.3f "
		       "min_ms=%.3f max_ms=%.3f goodput_gbps=%.3f\n",
		       b.world, b.elements, b.reps, med * 1e3, slowest[0] * 1e3,
		       slowest[b.reps - 1] * 1e3, (double)b.elements * 32 / med / 1e9);
		fflush(stdout);
	}
	return 0;
}

/* Removes the file store's directory and what the ranks wrote in it. */
void
remove_dir(const std::string &dir)
{
	std::string cmd = "rm -rf '" + dir + "'";

	if (system(cmd.c_str()) != 0)
		fprintf(stderr, "gloo_allreduce: cannot remove %s\n", dir.c_str());
}

} // namespace

int
main(int argc, char **argv)
{
	bench b;
	int ret = parse_args(argc, argv, &b);

	if (ret != 0)
		return ret > 0 ? 0 : 2;
	char tmpl[] = "/tmp/ina-gloo.XXXXXX";
	if (!mkdtemp(tmpl)) {
		perror("gloo_allreduce: mkdtemp");
		return 1;
	}
	std::string dir = tmpl;
	std::vector<pid_t> pids;

	fflush(stdout);
	for (unsigned r = 0; r < b.world; r++) {
		pid_t p = fork();

		if (p < 0) {
			perror("gloo_allreduce: fork");
			ret = 1;
			break;
		}
		if (p == 0) {
			int code;

			try {
				code = rank_main(b, r, dir);
			} catch (const std::exception &e) {
				fprintf(stderr, "gloo_allreduce: rank %u: %s\n", r, e.what());
				code = 1;
			}
			fflush(stdout);
			_exit(code);
		}
		pids.push_back(p);
	}
	/* Waits for every rank, up to --timeout; then kills those left. */
	double deadline = now_s() + b.timeout_s;
	size_t left = pids.size();
	while (left > 0) {
		for (pid_t &p : pids) {
			int st;

			if (p <= 0 || waitpid(p, &st, WNOHANG) != p)
				continue;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "gloo_allreduce: a rank failed (status %d)\n", st);
				ret = 1;
			}
			p = 0;
			left--;
		}
		if (left > 0 && (ret != 0 || now_s() > deadline)) {
			if (ret == 0)
				fprintf(stderr, "gloo_allreduce: timed out after %u s\n",
					b.timeout_s);
			for (pid_t p : pids)
				if (p > 0) {
					kill(p, SIGKILL);
					waitpid(p, NULL, 0);
				}
			ret = 1;
			break;
		}
		usleep(10000);
	}
	remove_dir(dir);
	return ret;
}
