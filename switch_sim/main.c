/* SPDX-License-Identifier: MIT */
/*
 * ina-switch: runs the aggregation pipeline behind a port. The loop receives
 * a burst, hands it to the pipeline with the current time, sends what the
 * pipeline answers, and ticks the pipeline's timers; while packets arrive
 * (one came within ina_busy_poll_ns(), util.h) on a port whose wait only
 * sleeps (dpdk) it yields the CPU between polls; otherwise it waits in the
 * port (udp: until a packet arrives). SIGUSR1 prints the counters and each
 * job's state; SIGINT and SIGTERM print them and exit. With --metrics ADDR:PORT the same counters
 * are served over HTTP in the Prometheus text format (metrics_http.h): the
 * loop fills a snapshot when a scrape asks for one. With --capture, every
 * packet received and sent is also written to a pcap file, which ina-replay
 * reads.
 *
 * As a DPDK program it takes "[EAL options] -- [ina options]" (eal_main.h)
 * and serves a dpdk port (--port dpdk:...); without EAL options it serves
 * UDP on --listen. With --lcores K > 1 (dpdk only) the pipeline runs as K
 * partitions on EAL's lcores, one queue of every ethdev each (run_lcores.h).
 * With --replica it is a primary that sends every result through its replica;
 * with --primary it is that replica, standing by for the primary's jobs and
 * taking them over on a worker's FAILOVER (docs/PROTOCOL.md, "Replica and
 * failover"). Exit status: 0, 2 for bad options, 3 when the transport could
 * not start (EAL, the port).
 */
#include <arpa/inet.h>
#include <sodium.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ina/capture.h"
#include "ina/cli.h"
#include "ina/eal_main.h"
#include "ina/log.h"
#include "ina/port.h"
#include "ina/util.h"
#include "ina/wire.h"
#include "metrics_http.h"
#include "pipeline.h"
#include "pipeline_dump.h"
#include "pipeline_log.h"
#include "run_lcores.h"
#include "tenants.h"
#ifdef INA_HAVE_DPDK
#include "ina/port_dpdk.h"
#endif

static volatile sig_atomic_t force_quit;
static volatile sig_atomic_t dump_stats;
static volatile sig_atomic_t stop_requested; /* SIGINT/SIGTERM: drain, then quit */
static int lcores_running;		     /* no drain there: quit at once */

struct switch_config {
	const char *listen;
	const char *port; /* --port SPEC, or NULL: udp on 'listen' */
	const char *port_opts;
	const char *capture;
	const char *replica; /* --replica ADDR:PORT: a primary's replica */
	const char *primary; /* --primary ADDR:PORT: this is its replica */
	const char *uplink;  /* --uplink ADDR:PORT: a rack's spine */
	const char *metrics; /* --metrics ADDR:PORT: serve Prometheus metrics */
	const char *tenants; /* --tenants FILE: tenant mode */
	/* --uplink-job TENANT:JOB=RANK/WORLD: job k's tenant (name or index),
	 * "" when not named; resolved once the tenants are loaded. */
	char uplink_tenant[PIPELINE_UPLINK_JOBS][TENANT_NAME_MAX + 1];
	int slot_elems_set; /* --slot-elems given: never shrunk to fit the port */
	int listen_set;	    /* --listen given: only a udp port has a use for it */
	unsigned lcores;    /* --lcores K: pipeline partitions */
	uint64_t drain_ns;  /* --drain-ms */
	struct pipeline_config pipe;
};

/* "a.b.c.d:port" into host-order address and port (both non-zero). */
static int
parse_ipv4_port(const char *s, uint32_t *ipv4, uint16_t *port)
{
	char host[INET_ADDRSTRLEN];
	const char *colon = strrchr(s, ':');
	struct in_addr a;
	char *end;
	unsigned long v;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	if (inet_pton(AF_INET, host, &a) != 1 || a.s_addr == 0)
		return -1;
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || v == 0 || v > 65535)
		return -1;
	*ipv4 = ntohl(a.s_addr);
	*port = (uint16_t)v;
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: ina-switch [options]\n"
		"       ina-switch [EAL options] -- --port dpdk:OPTIONS [options]\n"
		"\n"
		"Runs the ina aggregation pipeline on a port: admits jobs, sums their\n"
		"workers' blocks in a bounded pool of slots and returns the sums.\n"
		"SIGUSR1 prints counters and job state; SIGINT/SIGTERM print them and exit.\n"
		"Exit status 3: the transport could not start (EAL, the port).\n"
		"\n"
		"options:\n"
		"  --listen ADDR:PORT    UDP address to serve (default 0.0.0.0:%d)\n"
		"  --port SPEC           transport instead of UDP on --listen, e.g.\n"
		"                        dpdk:port=all,ip=10.77.0.1 (needs EAL options)\n"
		"  --port-opts OPTS      extra port options, e.g. drop=0.01,seed=3\n"
		"  --slots N             slots in the pool; a job takes one per lane (default 1024;\n"
		"                        with --lcores K, per partition: a job takes ceil(L/K) of each)\n"
		"  --slot-elems N        elements one slot sums, the largest block (default 2048,\n"
		"                        or what one packet of the port carries if less)\n"
		"  --max-jobs N          jobs served at once (default 64)\n"
		"  --share POLICY        how jobs share the slots: first-come (default: a job\n"
		"                        gets the lanes it asks or is refused) or fair (a\n"
		"                        weighted max-min fair share of the pool: a job asking\n"
		"                        more than its share is admitted with fewer lanes)\n"
		"  --share-total N       fair: share the pool as if N jobs were there, so that\n"
		"                        the first ones leave room for those to come (default 0)\n"
		"  --share-min-slots M   fair: a job whose share is under M slots (or what it\n"
		"                        asks, if less) is refused (default 1)\n"
		"  --share-wait-ms MS    fair: a job finding less than its share free waits up to\n"
		"                        MS while jobs holding more give slots back at their\n"
		"                        next round boundary (default 2000; 0: no give-back)\n"
		"  --tenants FILE        tenant mode: the tenants, their keys and quotas (YAML,\n"
		"                        README.md \"Tenants\"); every packet carries a keyed tag,\n"
		"                        checked first; one that fails is dropped, never answered\n"
		"                        (a receive queue per tenant: --port-opts tenant_queues=N,\n"
		"                        README.md \"Tenants\")\n"
		"  --host-aggregator IPV4:PORT  a job this switch has no slots for (first-come:\n"
		"                        not its lanes; fair: not its minimum) is sent to the\n"
		"                        host aggregator there (ina-switch --host-mode) instead\n"
		"                        of being refused; its workers say so\n"
		"  --host-mode           be a host aggregator: the same pipeline on a host, where\n"
		"                        a job gets the lanes that fit rather than a refusal\n"
		"  --linger-ms MS        after a FIN, free the job once silent this long (default 1000)\n"
		"  --standby-linger-ms MS  the same for a replica's standby job (default 10000: at\n"
		"                        least the workers' timeout, so a late one can still fail over)\n"
		"  --idle-timeout-s S    free a job silent this long, 0 never (default 300)\n"
		"  --peer-timeout-ms MS  a rank silent this long while another waits on it\n"
		"                        is dead: its job is aborted, the others told\n"
		"                        (default 8000: under the hosts' 10 s timeout; 0 never)\n"
		"  --drain-ms MS         on SIGTERM/SIGINT, let running jobs finish this\n"
		"                        long, refusing new ones, then abort the rest with\n"
		"                        an ERROR to their workers (default 2000; a second\n"
		"                        signal quits at once)\n"
		"  --capture FILE        write every packet received and sent to a pcap file\n"
		"  --replica ADDR:PORT   be a primary: send every result through the replica\n"
		"                        switch there, which can take the jobs over\n"
		"  --primary ADDR:PORT   be the replica of the switch there (the address its\n"
		"                        packets come from): stand by for its jobs, take\n"
		"                        one over when a worker reports it silent\n"
		"  --uplink ADDR:PORT    be a rack switch: run each --uplink-job as one\n"
		"                        worker of the same job on the spine switch there\n"
		"  --uplink-job [TENANT:]JOB=RANK/WORLD  job JOB's rank in the spine's job,\n"
		"                        of WORLD racks (repeat for each job; others are\n"
		"                        refused); with --tenants, TENANT (a name or an\n"
		"                        index) owns JOB\n"
		"  --lcores K            run the pipeline as K partitions (lanes l %% K), one\n"
		"                        per EAL lcore (-l), each on queue P of K of every\n"
		"                        ethdev (dpdk ports only; hosts on memif then need\n"
		"                        queue=all,queues=K); with fewer lcores than K they\n"
		"                        share them, in turn (default 1: one loop); after\n"
		"                        the '--' (before it, --lcores is EAL's own option)\n"
		"  --join-cookie on|off  on (default): a JOIN must first echo a cookie the\n"
		"                        switch sends its address (an answer no larger than\n"
		"                        the JOIN), so that a JOIN from a forged address\n"
		"                        creates nothing and draws nothing larger; off: for\n"
		"                        workers older than the cookie\n"
		"  --reply-rate N        ERRORs to JOINs and shadow replies a source address\n"
		"                        may draw a second, in bursts of up to 1024 (default\n"
		"                        20000; 0: no limit)\n"
		"  --metrics ADDR:PORT   serve the counters over HTTP for Prometheus: GET\n"
		"                        http://ADDR:PORT/metrics (e.g. 127.0.0.1:9101;\n"
		"                        default off)\n"
		"  --log-level LEVEL     err, warn, info or debug (default info)\n"
		"  -h, --help            this text\n",
		INA_DEFAULT_UDP_PORT);
}

enum {
	OPT_LISTEN = 256,
	OPT_PORT,
	OPT_PORT_OPTS,
	OPT_SLOTS,
	OPT_SLOT_ELEMS,
	OPT_MAX_JOBS,
	OPT_LINGER,
	OPT_STANDBY_LINGER,
	OPT_IDLE,
	OPT_PEER_TIMEOUT,
	OPT_DRAIN,
	OPT_LOG_LEVEL,
	OPT_CAPTURE,
	OPT_LCORES,
	OPT_REPLICA,
	OPT_PRIMARY,
	OPT_UPLINK,
	OPT_UPLINK_JOB,
	OPT_SHARE,
	OPT_SHARE_TOTAL,
	OPT_SHARE_MIN,
	OPT_HOST_AGGREGATOR,
	OPT_TENANTS,
	OPT_HOST_MODE,
	OPT_SHARE_WAIT,
	OPT_METRICS,
	OPT_JOIN_COOKIE,
	OPT_REPLY_RATE,
};

/* One --uplink-job [TENANT:]JOB=RANK/WORLD. */
static void
uplink_job_arg(struct switch_config *c, const char *arg)
{
	uint16_t k = c->pipe.nb_uplink_jobs;
	const char *colon = strchr(arg, ':'), *spec = colon ? colon + 1 : arg;

	if (k == PIPELINE_UPLINK_JOBS)
		ina_die("--uplink-job: at most %d jobs", PIPELINE_UPLINK_JOBS);
	if (colon && (colon == arg || (size_t)(colon - arg) > TENANT_NAME_MAX))
		ina_die("--uplink-job '%s': want a tenant's name or index before the ':'", arg);
	if (pipeline_uplink_job_parse(spec, &c->pipe.uplink_jobs[k]) < 0)
		ina_die("--uplink-job '%s': want [TENANT:]JOB=RANK/WORLD with RANK < WORLD <= 64",
			arg);
	if (colon)
		memcpy(c->uplink_tenant[k], arg, (size_t)(colon - arg));
	c->pipe.nb_uplink_jobs++;
}

/* Tenant mode: every --uplink-job names its tenant, and its job id becomes
 * the wire's (the tenant's index on top), as the racks' ranks send it. */
static void
uplink_jobs_of_tenants(struct switch_config *c, const struct tenants *tenants)
{
	for (uint16_t k = 0; k < c->pipe.nb_uplink_jobs; k++) {
		struct pipeline_uplink_job *uj = &c->pipe.uplink_jobs[k];
		const struct tenant *tn = tenants_find(tenants, c->uplink_tenant[k]);

		if (!c->uplink_tenant[k][0])
			ina_die("--uplink-job %" PRIu32 "=...: in tenant mode, name the job's "
				"tenant: --uplink-job TENANT:JOB=RANK/WORLD",
				uj->job_id);
		if (!tn)
			ina_die("--uplink-job %s:%" PRIu32 "=...: no tenant '%s' in %s",
				c->uplink_tenant[k], uj->job_id, c->uplink_tenant[k], c->tenants);
		if (uj->job_id > INA_TENANT_JOB_MAX)
			ina_die("--uplink-job %s:%" PRIu32 "=...: a tenant's job ids are 0..%u",
				c->uplink_tenant[k], uj->job_id, INA_TENANT_JOB_MAX);
		uj->job_id |= (uint32_t)tn->index << INA_TENANT_SHIFT;
	}
}

static void
parse_args(int argc, char **argv, struct switch_config *c)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "port-opts", required_argument, NULL, OPT_PORT_OPTS },
		{ "slots", required_argument, NULL, OPT_SLOTS },
		{ "slot-elems", required_argument, NULL, OPT_SLOT_ELEMS },
		{ "max-jobs", required_argument, NULL, OPT_MAX_JOBS },
		{ "linger-ms", required_argument, NULL, OPT_LINGER },
		{ "standby-linger-ms", required_argument, NULL, OPT_STANDBY_LINGER },
		{ "idle-timeout-s", required_argument, NULL, OPT_IDLE },
		{ "peer-timeout-ms", required_argument, NULL, OPT_PEER_TIMEOUT },
		{ "drain-ms", required_argument, NULL, OPT_DRAIN },
		{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
		{ "capture", required_argument, NULL, OPT_CAPTURE },
		{ "lcores", required_argument, NULL, OPT_LCORES },
		{ "replica", required_argument, NULL, OPT_REPLICA },
		{ "primary", required_argument, NULL, OPT_PRIMARY },
		{ "uplink", required_argument, NULL, OPT_UPLINK },
		{ "uplink-job", required_argument, NULL, OPT_UPLINK_JOB },
		{ "share", required_argument, NULL, OPT_SHARE },
		{ "share-total", required_argument, NULL, OPT_SHARE_TOTAL },
		{ "share-min-slots", required_argument, NULL, OPT_SHARE_MIN },
		{ "host-aggregator", required_argument, NULL, OPT_HOST_AGGREGATOR },
		{ "tenants", required_argument, NULL, OPT_TENANTS },
		{ "host-mode", no_argument, NULL, OPT_HOST_MODE },
		{ "share-wait-ms", required_argument, NULL, OPT_SHARE_WAIT },
		{ "metrics", required_argument, NULL, OPT_METRICS },
		{ "join-cookie", required_argument, NULL, OPT_JOIN_COOKIE },
		{ "reply-rate", required_argument, NULL, OPT_REPLY_RATE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	ina_cli_set_prog("ina-switch");
	memset(c, 0, sizeof(*c));
	pipeline_config_init(&c->pipe);
	c->pipe.on_event = pipeline_log_event; /* the pipeline's events, logged */
	/* The secret of the JOIN cookies and the reply budgets' table, new at
	 * every start (a cookie outlives no switch). */
	if (sodium_init() < 0)
		ina_die("libsodium failed to start");
	randombytes_buf(c->pipe.secret, sizeof(c->pipe.secret));
	c->pipe.join_cookie = 1;
	c->listen = "0.0.0.0:9150";
	c->lcores = 1;
	c->drain_ns = 2000 * INA_NS_PER_MS;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case OPT_LISTEN:
			c->listen = optarg;
			c->listen_set = 1;
			break;
		case OPT_PORT:
			c->port = optarg;
			break;
		case OPT_PORT_OPTS:
			c->port_opts = optarg;
			break;
		case OPT_CAPTURE:
			c->capture = optarg;
			break;
		case OPT_REPLICA:
			c->replica = optarg;
			break;
		case OPT_PRIMARY:
			c->primary = optarg;
			break;
		case OPT_UPLINK:
			c->uplink = optarg;
			break;
		case OPT_METRICS:
			c->metrics = optarg;
			break;
		case OPT_UPLINK_JOB:
			uplink_job_arg(c, optarg);
			break;
		case OPT_LCORES:
			c->lcores = (unsigned)ina_cli_u64("lcores", optarg, 1,
							  SWITCH_RUN_LCORES_MAX);
			break;
		case OPT_SLOTS:
			c->pipe.nb_slots = (uint32_t)ina_cli_u64("slots", optarg, 1, 1u << 20);
			break;
		case OPT_SLOT_ELEMS:
			c->pipe.slot_elems = (uint16_t)ina_cli_u64("slot-elems", optarg, 1,
								   INA_BLOCK_MAX);
			c->slot_elems_set = 1;
			break;
		case OPT_SHARE:
			if (share_policy_parse(optarg, &c->pipe.share.policy) < 0)
				ina_die("--share: '%s' is not fair or first-come", optarg);
			break;
		case OPT_TENANTS:
			c->tenants = optarg;
			break;
		case OPT_HOST_AGGREGATOR:
			if (parse_ipv4_port(optarg, &c->pipe.host_aggregator_ipv4,
					    &c->pipe.host_aggregator_port) < 0)
				ina_die("--host-aggregator: '%s' is not IPV4:PORT", optarg);
			break;
		case OPT_JOIN_COOKIE:
			if (strcmp(optarg, "on") == 0)
				c->pipe.join_cookie = 1;
			else if (strcmp(optarg, "off") == 0)
				c->pipe.join_cookie = 0;
			else
				ina_die("--join-cookie: on or off, not '%s'", optarg);
			break;
		case OPT_REPLY_RATE:
			c->pipe.reply_rate = (uint32_t)ina_cli_u64("reply-rate", optarg, 0,
								   100000000);
			break;
		case OPT_HOST_MODE:
			c->pipe.host_mode = 1;
			break;
		case OPT_SHARE_WAIT:
			c->pipe.share_wait_ns = ina_cli_u64("share-wait-ms", optarg, 0, 3600000) *
						INA_NS_PER_MS;
			break;
		case OPT_SHARE_TOTAL:
			c->pipe.share.total = (uint16_t)ina_cli_u64("share-total", optarg, 0, 4096);
			break;
		case OPT_SHARE_MIN:
			c->pipe.share.min_slots = (uint32_t)ina_cli_u64("share-min-slots", optarg,
									1, 1u << 20);
			break;
		case OPT_MAX_JOBS:
			c->pipe.max_jobs = (uint16_t)ina_cli_u64("max-jobs", optarg, 1, 4096);
			break;
		case OPT_LINGER:
			c->pipe.linger_ns = ina_cli_u64("linger-ms", optarg, 0, 3600000) *
					    INA_NS_PER_MS;
			break;
		case OPT_STANDBY_LINGER:
			c->pipe.standby_linger_ns = ina_cli_u64("standby-linger-ms", optarg, 0,
								3600000) *
						    INA_NS_PER_MS;
			break;
		case OPT_IDLE:
			c->pipe.job_idle_ns = ina_cli_u64("idle-timeout-s", optarg, 0, 86400) *
					      INA_NS_PER_S;
			break;
		case OPT_DRAIN:
			c->drain_ns = ina_cli_u64("drain-ms", optarg, 0, 3600000) * INA_NS_PER_MS;
			break;
		case OPT_PEER_TIMEOUT:
			c->pipe.peer_timeout_ns =
				ina_cli_u64("peer-timeout-ms", optarg, 0, 3600000) * INA_NS_PER_MS;
			break;
		case OPT_LOG_LEVEL:
			ina_cli_log_level(optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		ina_die("unexpected argument '%s' (see --help)", argv[optind]);
	if (c->listen_set && c->port && strncmp(c->port, "udp", 3) != 0)
		ina_die("--listen is for a udp port; --port %s takes its address in its "
			"options (ip=, udp=)",
			c->port);
	if (c->lcores > 1 && c->capture)
		ina_die("--capture records one pipeline's port: not with --lcores %u", c->lcores);
	if (c->lcores > 1 && (c->replica || c->primary))
		ina_die("--%s: a switch on --lcores %u partitions does not replicate; run the "
			"primary and the replica with one lcore each",
			c->replica ? "replica" : "primary", c->lcores);
	if (c->uplink && c->lcores > 1)
		ina_die("--uplink: a rack switch runs one pipeline; not with --lcores %u",
			c->lcores);
	if (c->uplink && (c->replica || c->primary))
		ina_die("--uplink and --%s: a rack switch is not replicated (not in this version)",
			c->replica ? "replica" : "primary");
	if (c->uplink && !c->pipe.nb_uplink_jobs)
		ina_die("--uplink needs at least one --uplink-job JOB=RANK/WORLD");
	if (!c->uplink && c->pipe.nb_uplink_jobs)
		ina_die("--uplink-job needs --uplink ADDR:PORT");
	for (uint16_t k = 0; k < c->pipe.nb_uplink_jobs && !c->tenants; k++)
		if (c->uplink_tenant[k][0])
			ina_die("--uplink-job %s:...: a tenant is named only in tenant mode "
				"(--tenants FILE)",
				c->uplink_tenant[k]);
	if (c->replica && c->primary)
		ina_die("--replica and --primary: a switch is a primary or a replica, not both");
	if (c->lcores > 1 && !ina_eal_main_is_dpdk(c->port))
		ina_die("--lcores %u needs a dpdk port: [EAL options] -- --port dpdk:... --lcores %u",
			c->lcores, c->lcores);
#ifndef INA_HAVE_LCORES
	if (c->lcores > 1)
		ina_die("--lcores %u: this ina-switch was built without DPDK", c->lcores);
#endif
}

#ifdef INA_HAVE_LCORES
/* Has 'spec' an option 'key' ("key=...") of its own? */
static int
spec_has(const char *spec, const char *key)
{
	size_t n = strlen(key);

	for (const char *s = strchr(spec, ':'); s && *s; s = strchr(s, ',')) {
		s++;
		if (strncmp(s, key, n) == 0 && s[n] == '=')
			return 1;
	}
	return 0;
}
#endif

/* The port spec: --port (with --port-opts appended), else udp on --listen.
 * A udp spec without bind= serves --listen. */
static void
port_spec(const struct switch_config *c, char *spec, size_t size)
{
	const char *base = c->port ? c->port : "udp";
	const char *sep = strchr(base, ':') ? "," : ":";
	int is_udp = strncmp(base, "udp", 3) == 0 && (base[3] == '\0' || base[3] == ':');
	int w;

	if (is_udp && !strstr(base, "bind="))
		w = snprintf(spec, size, "%s%sbind=%s%s%s", base, sep, c->listen,
			     c->port_opts ? "," : "", c->port_opts ? c->port_opts : "");
	else
		w = snprintf(spec, size, "%s%s%s", base, c->port_opts ? sep : "",
			     c->port_opts ? c->port_opts : "");
	if (w < 0 || (size_t)w >= size)
		ina_die("--port: spec too long");
}

/* Resolves the address of option 'opt' ('addr', NULL if not given) into a
 * peer of 'port', or dies naming it. */
static void
resolve_peer(struct ina_port *port, const char *opt, const char *addr, struct ina_peer *peer)
{
	char err[256];
	int ret;

	if (!addr)
		return;
	ret = ina_port_resolve(port, addr, peer);
	if (ret < 0) {
		snprintf(err, sizeof(err), "%s %s: cannot resolve it on the %s port: %s", opt, addr,
			 port->ops->type, strerror(-ret));
		ina_port_close(port);
		ina_die("%s", err);
	}
}

static void
on_signal(int sig)
{
	if (sig == SIGUSR1) {
		dump_stats = 1;
	} else {
		if (stop_requested || lcores_running)
			force_quit = 1;
		stop_requested = 1;
	}
}

static void
print_stats(const struct pipeline *p, const struct ina_port *port)
{
	const struct ina_port_stats *ps = &port->stats;

	printf("ina-switch stats:\n");
	printf("  %-24s %s\n", "transport", port->ops->type);
	printf("  %-24s %" PRIu64 "\n  %-24s %" PRIu64 "\n  %-24s %.2f\n  %-24s %.2f\n",
	       "port_rx_pkts", ps->rx_pkts, "port_tx_pkts", ps->tx_pkts, "mean_rx_batch",
	       ps->rx_bursts ? (double)ps->rx_pkts / (double)ps->rx_bursts : 0.0, "mean_tx_batch",
	       ps->tx_bursts ? (double)ps->tx_pkts / (double)ps->tx_bursts : 0.0);
	if (ps->tx_drop)
		printf("  %-24s %" PRIu64 "\n", "port_tx_drop", ps->tx_drop);
	if (ps->rx_drop)
		printf("  %-24s %" PRIu64 "\n", "port_rx_drop", ps->rx_drop);
	if (ps->inject_drop)
		printf("  %-24s %" PRIu64 "\n", "port_inject_drop", ps->inject_drop);
	ina_eal_main_print_port(port, stdout);
	pipeline_stats_print(p, stdout);
	pipeline_dump(p, stdout);
	fflush(stdout);
}

/* The switch's role, a label of its metrics. */
static const char *
switch_role(const struct switch_config *c)
{
	return c->pipe.host_mode ? "host_aggregator"
	       : c->replica	 ? "primary"
	       : c->primary	 ? "replica"
	       : c->uplink	 ? "rack"
				 : "switch";
}

/* Starts --metrics, or dies naming the address and why. NULL when off. */
static struct metrics_http *
metrics_start(const struct switch_config *c)
{
	struct metrics_http *mh;
	char err[256];

	if (!c->metrics)
		return NULL;
	mh = metrics_http_start(c->metrics, c->pipe.max_jobs, err, sizeof(err));
	if (!mh)
		ina_die("--metrics %s: %s", c->metrics, err);
	INA_LOG(INFO, "metrics for Prometheus at http://%s/metrics", c->metrics);
	return mh;
}

/* A scrape waits: the loop's counters, port and job table into its
 * snapshot (the loop's own state, read between bursts). */
static void
metrics_fill(struct metrics_http *mh, const struct switch_config *c, const struct pipeline *p,
	     const struct ina_port *port, double start_time_s, uint64_t now)
{
	struct metrics_snapshot *s = metrics_http_begin(mh);

	if (!s)
		return;
	s->transport = port->ops->type;
	s->role = switch_role(c);
	s->start_time_s = start_time_s;
	s->nb_parts = 1;
	s->slots = pipeline_nb_slots(p);
	s->max_jobs = pipeline_max_jobs(p);
	s->pipe = *pipeline_stats(p);
	s->part[0].lcore = 0;
	s->part[0].slots_free = pipeline_free_slots(p);
	s->part[0].port = port->stats;
	s->has_neigh = 0;
#ifdef INA_HAVE_DPDK
	if (port->ops == &ina_port_dpdk_ops) {
		ina_port_dpdk_neigh_stats(port, &s->part[0].neigh);
		s->has_neigh = 1;
	}
#endif
	s->nb_jobs = pipeline_jobs(p, now, s->jobs, s->jobs_cap);
	metrics_http_publish(mh);
}

/* Unix time now, in seconds. */
static double
unix_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * A graceful stop (SIGINT or SIGTERM): no new job is admitted, the jobs that
 * run have drain_ns to finish, then every job left is aborted with an ERROR
 * to its workers. Returns 1 when the switch may exit.
 */
static int
drain(struct pipeline *p, struct ina_port *port, struct ina_capture *cap,
      const struct ina_peer *self, uint64_t realtime_offset, uint64_t drain_ns)
{
	static uint64_t deadline;
	struct ina_pkt *out[INA_MAX_BURST];
	uint64_t now = ina_now_ns();
	uint16_t nb;

	if (!deadline) {
		deadline = now + drain_ns;
		pipeline_drain(p);
		INA_LOG(INFO, "stopping: %u job(s) have %" PRIu64 " ms to finish",
			pipeline_nb_jobs(p), (uint64_t)(drain_ns / INA_NS_PER_MS));
	}
	if (pipeline_nb_jobs(p) && now < deadline)
		return 0;
	if (pipeline_nb_jobs(p))
		INA_LOG(WARN, "stopping: aborting %u job(s) still running", pipeline_nb_jobs(p));
	while ((nb = pipeline_shutdown(p, out, INA_MAX_BURST)) > 0) {
		if (cap)
			ina_capture_tx_burst(cap, out, nb, self, now + realtime_offset);
		ina_port_tx_burst(port, out, nb);
	}
	return 1;
}

int
main(int argc, char **argv)
{
	struct ina_pkt *in[INA_MAX_BURST], *out[INA_MAX_BURST];
	struct switch_config c;
	struct sigaction sa;
	struct ina_capture *cap = NULL;
	struct metrics_http *mh;
	struct ina_peer self;
	struct ina_port *port;
	struct pipeline *p;
	char spec[512], err[256];
	uint64_t last_tick = 0, realtime_offset = 0, last_rx = 0;
	/* A packet received this recently keeps the loop polling (yielding)
	 * rather than sleep in a port blind to arrivals: the next one is due
	 * within microseconds while rounds run. Quiet longer, it sleeps. */
	uint64_t busy_ns = ina_busy_poll_ns();
	double start_time_s = unix_now_s();
	int ret;

	ina_eal_main_start("ina-switch", &argc, &argv);
	parse_args(argc, argv, &c);
	ina_log_set_ident("ina-switch");
	if (c.pipe.host_mode && c.pipe.host_aggregator_ipv4)
		ina_die("--host-mode and --host-aggregator together: a host aggregator sends no "
			"job on");
	if (c.tenants) {
		static struct tenants *tenants; /* lives as long as the program */

		tenants = tenants_load(c.tenants, err, sizeof(err));
		if (!tenants)
			ina_die("--tenants %s", err);
		uplink_jobs_of_tenants(&c, tenants);
		c.pipe.tenants = tenants;
		c.pipe.event_ctx = (void *)tenants; /* logs name the tenant */
		INA_LOG(INFO, "tenant mode: %u tenants from %s", tenants->count, c.tenants);
	}
	port_spec(&c, spec, sizeof(spec));
	ina_eal_main_check_spec("--port", spec);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	/* Before the port: a bad address fails before anything runs. */
	mh = metrics_start(&c);
	if (c.lcores > 1) {
#ifdef INA_HAVE_LCORES
		if (spec_has(spec, "queue") || spec_has(spec, "queues"))
			ina_die("--lcores %u sets queue= and queues= of the port itself: drop them "
				"from --port",
				c.lcores);
		lcores_running = 1;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGUSR1, &sa, NULL);
		ret = switch_run_lcores(spec, (uint16_t)c.lcores, &c.pipe, c.slot_elems_set,
					&force_quit, &dump_stats, mh, start_time_s);
		metrics_http_stop(mh);
		return ret;
#endif
	}
	ret = ina_port_open(spec, &port, err, sizeof(err));
	if (ret < 0)
		ina_eal_main_port_failed(spec, err);
	if (pipeline_config_fit_port(&c.pipe, c.slot_elems_set, port->max_pkt, err, sizeof(err)) <
	    0) {
		ina_port_close(port);
		ina_die("%s", err);
	}
	c.pipe.pool = port->pool;
	resolve_peer(port, "--replica", c.replica, &c.pipe.replica);
	resolve_peer(port, "--primary", c.primary, &c.pipe.primary);
	resolve_peer(port, "--uplink", c.uplink, &c.pipe.uplink);
	p = pipeline_create(&c.pipe);
	if (!p)
		ina_die("cannot create the pipeline (%u slots of %u elements): %s", c.pipe.nb_slots,
			c.pipe.slot_elems, strerror(errno));

	if (c.capture) {
		/* The port decodes its peers and, for an empty 'self', its
		 * own address (ina_capture_set_port, capture.h). */
		memset(&self, 0, sizeof(self));
		cap = ina_capture_open(c.capture, err, sizeof(err));
		if (!cap)
			ina_die("--capture: %s", err);
		ina_capture_set_port(cap, port);
		realtime_offset = ina_capture_now_ns() - ina_now_ns();
	}

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	if (c.pipe.host_mode)
		INA_LOG(INFO, "host mode: a job gets the lanes that fit in the free slots");
	if (c.pipe.share.policy == SHARE_FAIR)
		INA_LOG(INFO,
			"sharing the slots fairly (weighted max-min), as if %u jobs were "
			"there at least, at least %" PRIu32 " slots a job",
			c.pipe.share.total, c.pipe.share.min_slots);
	INA_LOG(INFO, "serving %s: %" PRIu32 " slots of %u elements (%.1f MiB), up to %u jobs%s%s",
		spec, c.pipe.nb_slots, c.pipe.slot_elems,
		2.0 * c.pipe.nb_slots * c.pipe.slot_elems * 4 / (1 << 20), c.pipe.max_jobs,
		c.replica   ? "; primary, replica at "
		: c.primary ? "; replica of the primary at "
		: c.uplink  ? "; rack, spine at "
			    : "",
		c.replica   ? c.replica
		: c.primary ? c.primary
		: c.uplink  ? c.uplink
			    : "");

	while (!force_quit) {
		uint64_t now;
		uint16_t nb_rx = ina_port_rx_burst(port, in, INA_MAX_BURST);

		if (stop_requested && drain(p, port, cap, &self, realtime_offset, c.drain_ns))
			break;
		now = ina_now_ns();
		if (nb_rx) {
			uint16_t nb_out;

			if (cap)
				ina_capture_rx_burst(cap, in, nb_rx, &self, now + realtime_offset);
			nb_out = pipeline_rx_burst(p, in, nb_rx, now, out);
			if (cap)
				ina_capture_tx_burst(cap, out, nb_out, &self,
						     now + realtime_offset);
			ina_port_tx_burst(port, out, nb_out);
		}
		if (now - last_tick >= INA_NS_PER_MS) {
			pipeline_tick(p, now);
			last_tick = now;
		}
		if (dump_stats) {
			dump_stats = 0;
			print_stats(p, port);
		}
		if (mh)
			metrics_fill(mh, &c, p, port, start_time_s, now);
		if (nb_rx)
			last_rx = now;
		else if (ina_port_wait_sleeps(port) && now - last_rx < busy_ns)
			sched_yield();
		else
			ina_port_wait(port, INA_NS_PER_MS);
	}
	metrics_http_stop(mh);
	print_stats(p, port);
	if (cap) {
		printf("  %-24s %" PRIu64 "\n", "capture_frames", ina_capture_nb_written(cap));
		if (ina_capture_nb_skipped(cap))
			printf("  %-24s %" PRIu64 "\n", "capture_skipped",
			       ina_capture_nb_skipped(cap));
		fflush(stdout);
		ret = ina_capture_close(cap);
		if (ret < 0)
			INA_LOG(ERR, "capture %s: %s", c.capture, strerror(-ret));
	}
	pipeline_destroy(p);
	ina_port_close(port);
	return 0;
}
