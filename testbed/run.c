/* SPDX-License-Identifier: MIT */
/* ina-testbed run (run.h): a topology played in network namespaces on this machine. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ina/auth.h"
#include "ina/wire.h"
#include "netns.h"
#include "plan.h"
#include "procs.h"
#include "report.h"
#include "run.h"
#include "expect.h"
#include "tenants_file.h"
#include "tiers.h"

#define START_MS 3000	      /* tcpdump to be up */
#define START_SWITCH_MS 20000 /* a switch to be serving (EAL takes a while) */
#define STOP_HOSTS_MS 2000    /* hosts to exit on SIGTERM */
#define STOP_SWITCH_MS 5000   /* ina-switch drains for 2 s on SIGTERM */

static volatile sig_atomic_t stop_sig;

static void
on_signal(int sig)
{
	stop_sig = sig;
}

enum proc_kind { PROC_SWITCH, PROC_HOST, PROC_CAPTURE };

struct run {
	const struct topology *t;
	const struct run_opts *o;
	char prefix[32];  /* "inatb<pid>" */
	char (*ns)[64];	  /* [node] namespace name */
	uint8_t *ns_made; /* [node] */
	char workdir[PATH_MAX];
	int own_workdir; /* made by us: removed after a verified run */
	struct proc *procs;
	enum proc_kind *kinds;
	size_t nb_procs;
	size_t **host_proc;	   /* [job][rank] index in procs */
	long *log_off;		   /* [proc] bytes of its log read for progress */
	int *rounds_done;	   /* [proc] */
	char (*reports)[PATH_MAX]; /* [proc] ina-host --report file */
	struct report_link *links; /* [link] */
	struct tiers *tiers;	   /* [job] its aggregation tree */
	uint64_t **want_hash;	   /* [job][round] a multi-tier job's sums
					 * (expect.h), NULL on one switch */
	int progress_shown;
};

static void say(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
say(struct run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->progress_shown)
		fputc('\n', stderr);
	fprintf(stderr, "ina-testbed: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	r->progress_shown = 0;
}

/* ---- names and addresses ---- */

static void
ns_name(const struct run *r, int node, char *buf, size_t size)
{
	const char *n = r->t->nodes[node].name;
	size_t len = strlen(n), i;
	int plain = len > 0 && len <= 24;

	for (i = 0; plain && i < len; i++)
		plain = (n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z') ||
			(n[i] >= '0' && n[i] <= '9') || n[i] == '-' || n[i] == '_' || n[i] == '.';
	if (plain)
		tb_fmt(buf, size, "%s-%s", r->prefix, n);
	else
		tb_fmt(buf, size, "%s-node=%d", r->prefix, node); /* '=' is never plain */
}

/* ---- teardown ---- */

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* EAL's runtime folders of this run's DPDK processes (/var/run/dpdk/PREFIX-*). */
static void
rm_dpdk_runtime(const struct run *r)
{
	DIR *d = opendir("/var/run/dpdk");
	struct dirent *e;
	char path[PATH_MAX];
	size_t plen = strlen(r->prefix);

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, r->prefix, plen) == 0 && e->d_name[plen] == '-') {
			tb_fmt(path, sizeof(path), "/var/run/dpdk/%s", e->d_name);
			nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		}
	closedir(d);
}

static int
teardown(struct run *r)
{
	const struct topology *t = r->t;
	char err[256];
	int bad = 0;

	if (r->procs && r->nb_procs) {
		int n = procs_stop(r->procs, r->nb_procs, SIGKILL, 0);

		(void)n;
	}
	if (r->o->dpdk)
		rm_dpdk_runtime(r);
	for (uint32_t i = 0; r->ns_made && i < t->nb_nodes; i++) {
		if (!r->ns_made[i])
			continue;
		if (netns_del(r->ns[i], err, sizeof(err)) < 0) {
			say(r, "teardown: ip netns del %s: %s", r->ns[i], err);
			bad = 1;
		} else {
			r->ns_made[i] = 0;
		}
	}
	return bad ? -1 : 0;
}

/* ---- set-up ---- */

static int
setup_network(struct run *r, char *err, size_t errlen)
{
	const struct topology *t = r->t;

	for (uint32_t i = 0; i < t->nb_nodes && !stop_sig; i++) {
		if (r->ns_made[i])
			continue;
		ns_name(r, (int)i, r->ns[i], sizeof(r->ns[i]));
		if (netns_add(r->ns[i], err, errlen) < 0)
			return -1;
		r->ns_made[i] = 1;
	}
	for (uint32_t i = 0; i < t->nb_links && !stop_sig; i++) {
		const struct topo_link *l = &t->links[i];
		char ifn[16], ca[32], cb[32];

		plan_link_if(i, ifn, sizeof(ifn));
		plan_link_addr(i, 1, 1, ca, sizeof(ca));
		plan_link_addr(i, 0, 1, cb, sizeof(cb));
		/* Over DPDK both ends belong to DPDK processes: no kernel address. */
		if (netns_veth(r->ns[l->a], ifn, r->o->dpdk ? NULL : ca, r->ns[l->b], ifn,
			       r->o->dpdk ? NULL : cb, l->mtu, err, errlen) < 0)
			return -1;
		if (l->bandwidth_bps &&
		    (netns_shape(r->ns[l->a], ifn, l->bandwidth_bps, l->mtu, err, errlen) < 0 ||
		     netns_shape(r->ns[l->b], ifn, l->bandwidth_bps, l->mtu, err, errlen) < 0))
			return -1;
	}
	return stop_sig ? -1 : 0;
}

static struct proc *new_proc(struct run *r, enum proc_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static struct proc *
new_proc(struct run *r, enum proc_kind kind, const char *fmt, ...)
{
	struct proc *p = &r->procs[r->nb_procs];
	va_list ap;

	memset(p, 0, sizeof(*p));
	va_start(ap, fmt);
	vsnprintf(p->name, sizeof(p->name), fmt, ap);
	va_end(ap);
	r->kinds[r->nb_procs] = kind;
	r->nb_procs++;
	return p;
}

/* Waits until 'p' wrote 'word' to its log (1), exited (0) or time ran out (0). */
static int
wait_log(struct proc *p, const char *word, int ms)
{
	long long deadline = tb_now_ms() + ms;
	char buf[4096];

	while (tb_now_ms() < deadline && !stop_sig) {
		FILE *f = fopen(p->log, "r");
		size_t n = 0;

		if (f) {
			n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
		}
		buf[n] = '\0';
		if (strstr(buf, word))
			return 1;
		if (proc_poll(p))
			return 0;
		tb_sleep_ms(20);
	}
	return 0;
}

static int
start_captures(struct run *r, char *err, size_t errlen)
{
	const struct topology *t = r->t;

	if (mkdir(r->o->capture_dir, 0755) < 0 && errno != EEXIST) {
		tb_fmt(err, errlen, "--capture %s: %s", r->o->capture_dir, strerror(errno));
		return -1;
	}
	for (uint32_t i = 0; i < t->nb_links; i++) {
		const struct topo_link *l = &t->links[i];
		struct proc *p = new_proc(r, PROC_CAPTURE, "tcpdump %s-%s", t->nodes[l->a].name,
					  t->nodes[l->b].name);
		char ifn[16], file[PATH_MAX];
		char *argv[] = { "tcpdump", "-i", ifn, "-n", "-U", "-Z", "root", "-w", file, NULL };
		int ret;

		plan_link_if(i, ifn, sizeof(ifn));
		tb_fmt(file, sizeof(file), "%s/%s-%s.pcap", r->o->capture_dir, t->nodes[l->a].name,
		       t->nodes[l->b].name);
		tb_fmt(p->log, sizeof(p->log), "%s/tcpdump-%" PRIu32 ".log", r->workdir, i);
		ret = proc_start(p, r->ns[l->a], argv, NULL);
		if (ret < 0) {
			tb_fmt(err, errlen, "cannot start tcpdump: %s", strerror(-ret));
			return -1;
		}
		if (!wait_log(p, "listening on", START_MS)) {
			tb_fmt(err, errlen, "tcpdump on link %s-%s did not start (see %s)",
			       t->nodes[l->a].name, t->nodes[l->b].name, p->log);
			return -1;
		}
	}
	return 0;
}

/* Whether switch 'node' aggregates some job (as its root or a rack). */
static int
serves_a_job(const struct run *r, int node)
{
	for (uint32_t j = 0; j < r->t->nb_jobs; j++)
		if (r->t->jobs[j].root == node || r->tiers[j].m[node].up >= 0)
			return 1;
	return 0;
}

/* A switch below a job's root: --uplink to its parent's end of their link
 * and an --uplink-job per job (plan_check made sure the link exists). */
static int
uplink_args(const struct run *r, int node, char **argv, int a, char *up, size_t uplen,
	    char (*jobs)[80])
{
	const struct topology *t = r->t;
	int parent = -1, nb = 0;

	for (uint32_t j = 0; j < t->nb_jobs; j++) {
		const struct tiers_member *m = &r->tiers[j].m[node];

		if (m->up < 0)
			continue;
		parent = m->up;
		/* In tenant mode the job is named with its tenant: NAME:ID=R/W. */
		tb_fmt(jobs[nb], sizeof(jobs[0]), "%s%s%" PRIu32 "=%u/%u",
		       t->jobs[j].tenant ? t->jobs[j].tenant : "", t->jobs[j].tenant ? ":" : "",
		       t->jobs[j].job_id, m->rank, m->world);
		argv[a++] = "--uplink-job";
		argv[a++] = jobs[nb++];
	}
	if (parent >= 0) {
		const struct topo_link *l = topology_link(t, node, parent);
		char ip[32];

		/* Between switches the child is 'a': the parent's end is b. */
		plan_link_addr((uint32_t)(l - t->links), l->a == parent, 0, ip, sizeof(ip));
		tb_fmt(up, uplen, "%s:%d", ip, PLAN_SWITCH_UDP_PORT);
		argv[a++] = "--uplink";
		argv[a++] = up;
	}
	return a;
}

/* EAL options of a DPDK process in namespace of 'node' (vdevs added by the caller). */
static int
eal_args(const struct run *r, char **argv, int a, int node, const char *tag, const char *lcore,
	 char *prefix, size_t size)
{
	tb_fmt(prefix, size, "--file-prefix=%s%s", r->ns[node], tag);
	argv[a++] = "--no-huge";
	argv[a++] = "-m";
	argv[a++] = "256";
	argv[a++] = "--no-pci";
	argv[a++] = "--no-telemetry";
	argv[a++] = "--no-shconf";
	argv[a++] = "--log-level=lib.eal:warning";
	argv[a++] = prefix;
	argv[a++] = "-l";
	argv[a++] = (char *)lcore;
	return a;
}

/* DPDK: the switch end of every link owned by one net_af_packet each. */
#define AF_PACKET_OPTS "framecnt=4096,qdisc_bypass=0" /* through tc tbf */

static int
start_switches(struct run *r, char *err, size_t errlen)
{
	const struct topology *t = r->t;
	size_t first = r->nb_procs;
	char(*vdevs)[96] = calloc(t->nb_links + 1, sizeof(*vdevs));
	char(*upjobs)[80] = calloc(t->nb_jobs + 1, sizeof(*upjobs));
	char **argv = calloc(32 + t->nb_links + 2 * t->nb_jobs, sizeof(*argv));
	int ret = -1;

	if (!vdevs || !argv || !upjobs) {
		tb_fmt(err, errlen, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < t->nb_nodes; i++) {
		const struct topo_node *n = &t->nodes[i];
		char listen[32], slots[16], prefix[128], up[48], share_total[8], share_min[16];
		char tenants[PATH_MAX];
		struct proc *p;
		int a = 0, nb_vdevs = 0, e;

		if (n->kind != TOPO_SWITCH || !serves_a_job(r, (int)i))
			continue;
		p = new_proc(r, PROC_SWITCH, "switch %s", n->name);
		tb_fmt(p->log, sizeof(p->log), "%s/switch-%s.log", r->workdir, n->name);
		argv[a++] = (char *)r->o->switch_bin;
		if (r->o->dpdk) {
			a = eal_args(r, argv, a, (int)i, "", "1", prefix, sizeof(prefix));
			for (uint32_t li = 0; li < t->nb_links; li++) {
				if (t->links[li].a != (int)i && t->links[li].b != (int)i)
					continue;
				tb_fmt(vdevs[nb_vdevs], sizeof(vdevs[0]),
				       "--vdev=net_af_packet%d,iface=v%" PRIu32 "," AF_PACKET_OPTS,
				       nb_vdevs, li);
				argv[a++] = vdevs[nb_vdevs++];
			}
			argv[a++] = "--";
			argv[a++] = "--port";
			argv[a++] = "dpdk:port=all,ip=" PLAN_DPDK_SWITCH_IP ",link_wait_ms=5000";
		} else {
			tb_fmt(listen, sizeof(listen), "0.0.0.0:%d", PLAN_SWITCH_UDP_PORT);
			argv[a++] = "--listen";
			argv[a++] = listen;
		}
		argv[a++] = "--log-level";
		argv[a++] = "info";
		if (n->slots) {
			tb_fmt(slots, sizeof(slots), "%" PRIu32, n->slots);
			argv[a++] = "--slots";
			argv[a++] = slots;
		}
		if (n->share == TOPO_SHARE_FAIR) {
			argv[a++] = "--share";
			argv[a++] = "fair";
			tb_fmt(share_total, sizeof(share_total), "%u", n->share_total);
			argv[a++] = "--share-total";
			argv[a++] = share_total;
			tb_fmt(share_min, sizeof(share_min), "%" PRIu32,
			       n->share_min_slots ? n->share_min_slots : 1);
			argv[a++] = "--share-min-slots";
			argv[a++] = share_min;
		}
		if (t->nb_jobs && t->jobs[0].tenant) {
			/* Tenant mode: every job has a tenant (topologies/README.md). */
			tb_tenants_path(r->workdir, tenants, sizeof(tenants));
			argv[a++] = "--tenants";
			argv[a++] = tenants;
		}
		a = uplink_args(r, (int)i, argv, a, up, sizeof(up), upjobs);
		argv[a] = NULL;
		e = proc_start(p, r->ns[i], argv, NULL);
		if (e < 0) {
			tb_fmt(err, errlen, "cannot start %s: %s", r->o->switch_bin, strerror(-e));
			goto out;
		}
	}
	/* Each switch says "serving" once its port is open (EAL takes a while). */
	for (size_t i = first; i < r->nb_procs; i++) {
		char how[64];

		if (wait_log(&r->procs[i], "serving", START_SWITCH_MS))
			continue;
		if (stop_sig)
			goto out;
		proc_poll(&r->procs[i]);
		tb_fmt(err, errlen, "%s did not start (%s; see %s)", r->procs[i].name,
		       proc_how(&r->procs[i], how, sizeof(how)), r->procs[i].log);
		if (r->procs[i].exited && WIFEXITED(r->procs[i].status) &&
		    WEXITSTATUS(r->procs[i].status) == 3)
			ret = -3; /* its transport could not start */
		else
			ret = -1;
		goto out;
	}
	ret = 0;
out:
	free(vdevs);
	free(upjobs);
	free(argv);
	return ret;
}

static int
start_hosts(struct run *r, char *err, size_t errlen)
{
	const struct topology *t = r->t;

	for (uint32_t j = 0; j < t->nb_jobs; j++) {
		const struct topo_job *job = &t->jobs[j];
		char token[96], keyfile[PATH_MAX], *env[] = { token, NULL };

		/* Token mode: a token per job; tenant mode: the tenant's index
		 * here and its key from a file (--tenant-key-file, below). */
		if (job->tenant)
			tb_fmt(token, sizeof(token), INA_TENANT_ENV "=%u", job->tenant_index);
		else
			tb_fmt(token, sizeof(token), "INA_JOB_TOKEN=%s-job%" PRIu32, r->prefix,
			       job->job_id);
		if (job->tenant)
			tb_tenant_key_path(r->workdir, job->tenant_index, keyfile, sizeof(keyfile));
		for (uint16_t k = 0; k < job->nb_hosts; k++) {
			int node = job->hosts[k];
			const struct topo_node *h = &t->nodes[node];
			const struct topo_link *l = topology_link(t, node, h->attach);
			uint32_t li = (uint32_t)(l - t->links);
			size_t pi = r->nb_procs;
			struct proc *p = new_proc(r, PROC_HOST, "host %s (job %s, rank %u)",
						  h->name, job->name, k);
			char sw[48], swaddr[32], jid[16], rank[8], world[8], rounds[16], block[8],
				lanes[8], elems[24], dens[32], seed[24], spec[256], rto[24],
				weight[8];
			char *argv[48], prefix[128], vdev[96];
			uint64_t rto_us;
			int a = 0, ret;

			plan_link_addr(li, 0, 0, swaddr, sizeof(swaddr));
			tb_fmt(sw, sizeof(sw), "%s:%d", swaddr, PLAN_SWITCH_UDP_PORT);
			tb_fmt(jid, sizeof(jid), "%" PRIu32, job->job_id);
			/* Its rank among its switch's members (tiers.h): the job's
			 * rank on one switch. */
			tb_fmt(rank, sizeof(rank), "%u", r->tiers[j].m[node].rank);
			tb_fmt(world, sizeof(world), "%u", r->tiers[j].m[node].world);
			tb_fmt(rounds, sizeof(rounds), "%" PRIu32, job->rounds);
			tb_fmt(block, sizeof(block), "%u", job->block_size);
			tb_fmt(lanes, sizeof(lanes), "%u", job->lanes);
			plan_host_port(l, li, r->o->dpdk, 1000 + pi, spec, sizeof(spec));
			/* Two tenants may both run job 1: the tenant in the name. */
			tb_fmt(p->log, sizeof(p->log), "%s/host-%s-%s%sjob%" PRIu32 "-r%u.log",
			       r->workdir, h->name, job->tenant ? job->tenant : "",
			       job->tenant ? "-" : "", job->job_id, k);
			tb_fmt(r->reports[pi], sizeof(r->reports[pi]),
			       "%s/host-%s-%s%sjob%" PRIu32 "-r%u.json", r->workdir, h->name,
			       job->tenant ? job->tenant : "", job->tenant ? "-" : "", job->job_id,
			       k);
			argv[a++] = (char *)r->o->host_bin;
			if (r->o->dpdk) {
				char tag[32];

				tb_fmt(tag, sizeof(tag), "-j%" PRIu32, job->job_id);
				a = eal_args(r, argv, a, node, tag, "0", prefix, sizeof(prefix));
				tb_fmt(vdev, sizeof(vdev),
				       "--vdev=net_af_packet0,iface=v%" PRIu32 "," AF_PACKET_OPTS,
				       li);
				argv[a++] = vdev;
				argv[a++] = "--";
				tb_fmt(sw, sizeof(sw), "%s:%d", PLAN_DPDK_SWITCH_IP,
				       PLAN_SWITCH_UDP_PORT);
			}
			argv[a++] = "--switch", argv[a++] = sw;
			argv[a++] = "--job", argv[a++] = jid;
			argv[a++] = "--rank", argv[a++] = rank;
			argv[a++] = "--world", argv[a++] = world;
			argv[a++] = "--rounds", argv[a++] = rounds;
			argv[a++] = "--block", argv[a++] = block;
			argv[a++] = "--lanes", argv[a++] = lanes;
			if (job->weight) {
				tb_fmt(weight, sizeof(weight), "%u", job->weight);
				argv[a++] = "--weight", argv[a++] = weight;
			}
			argv[a++] = "--encoding", argv[a++] = (char *)plan_encoding(job->encoding);
			if (job->data == TOPO_DATA_FILE) {
				argv[a++] = "--input";
				argv[a++] = job->path; /* the parser made it relative to the file */
			} else {
				tb_fmt(elems, sizeof(elems), "%" PRIu32, job->tensor_len);
				tb_fmt(dens, sizeof(dens), "%.17g", job->density);
				tb_fmt(seed, sizeof(seed), "%" PRIu64,
				       plan_host_seed(job, &r->tiers[j], node));
				argv[a++] = "--elements", argv[a++] = elems;
				argv[a++] = "--density", argv[a++] = dens;
				argv[a++] = "--seed", argv[a++] = seed;
			}
			argv[a++] = "--port", argv[a++] = spec;
			if ((rto_us = plan_host_rto_us(l, job)) > 0) {
				tb_fmt(rto, sizeof(rto), "%" PRIu64, rto_us);
				argv[a++] = "--rto-us", argv[a++] = rto;
			}
			if (job->tenant)
				argv[a++] = "--tenant-key-file", argv[a++] = keyfile;
			argv[a++] = "--report", argv[a++] = r->reports[pi];
			argv[a++] = "--log-level", argv[a++] = "warn";
			argv[a] = NULL;
			r->host_proc[j][k] = pi;
			ret = proc_start(p, r->ns[node], argv, env);
			if (ret < 0) {
				tb_fmt(err, errlen, "cannot start %s: %s", r->o->host_bin,
				       strerror(-ret));
				return -1;
			}
		}
	}
	return 0;
}

/* ---- watching ---- */

/* Counts the "round N" lines a host printed since last time. */
static void
count_rounds(struct run *r, size_t pi)
{
	FILE *f = fopen(r->procs[pi].log, "r");
	char line[512];

	if (!f)
		return;
	if (fseek(f, r->log_off[pi], SEEK_SET) == 0) {
		while (fgets(line, sizeof(line), f)) {
			size_t len = strlen(line);

			if (line[len - 1] != '\n')
				break; /* a line being written: read it next time */
			r->log_off[pi] += (long)len;
			if (strncmp(line, "round ", 6) == 0)
				r->rounds_done[pi]++;
		}
	}
	fclose(f);
}

static void
show_progress(struct run *r, long long t0, int final)
{
	const struct topology *t = r->t;
	uint64_t done = 0, total = 0;
	unsigned hosts_done = 0, hosts = 0;
	static uint64_t last_done = UINT64_MAX;
	static long long last_ms;

	for (uint32_t j = 0; j < t->nb_jobs; j++)
		for (uint16_t k = 0; k < t->jobs[j].nb_hosts; k++) {
			size_t pi = r->host_proc[j][k];

			count_rounds(r, pi);
			done += (uint64_t)r->rounds_done[pi];
			total += t->jobs[j].rounds;
			hosts++;
			hosts_done += r->procs[pi].exited;
		}
	if (r->o->progress) {
		fprintf(stderr,
			"\r[%7.1f s] rounds %" PRIu64 "/%" PRIu64 " (%3.0f%%), hosts done %u/%u ",
			(double)(tb_now_ms() - t0) / 1e3, done, total,
			total ? 100.0 * (double)done / (double)total : 100.0, hosts_done, hosts);
		r->progress_shown = 1;
		if (final) {
			fputc('\n', stderr);
			r->progress_shown = 0;
		}
	} else if (final || (done != last_done && tb_now_ms() - last_ms >= 1000)) {
		fprintf(stderr,
			"ina-testbed: %.1f s: rounds %" PRIu64 "/%" PRIu64 ", hosts done %u/%u\n",
			(double)(tb_now_ms() - t0) / 1e3, done, total, hosts_done, hosts);
		last_done = done;
		last_ms = tb_now_ms();
	}
	fflush(stderr);
}

/* Waits for every host; returns the outcome. */
static const char *
watch(struct run *r, long long t0)
{
	long long deadline = t0 + (long long)r->o->timeout_s * 1000;

	for (;;) {
		int running = 0;

		for (size_t i = 0; i < r->nb_procs; i++) {
			if (proc_poll(&r->procs[i]))
				continue;
			if (r->kinds[i] == PROC_HOST)
				running++;
		}
		show_progress(r, t0, 0);
		if (!running)
			return "ok";
		for (size_t i = 0; i < r->nb_procs; i++)
			if (r->kinds[i] != PROC_HOST && r->procs[i].exited) {
				char how[64];

				say(r, "%s exited during the run (%s; see %s)", r->procs[i].name,
				    proc_how(&r->procs[i], how, sizeof(how)), r->procs[i].log);
				return "failed";
			}
		if (stop_sig)
			return "interrupted";
		if (tb_now_ms() > deadline) {
			say(r, "the run's time limit (%d s) is up: stopping it", r->o->timeout_s);
			return "timeout";
		}
		tb_sleep_ms(100);
	}
}

static void
stop_kind(struct run *r, enum proc_kind kind, int sig, int grace_ms)
{
	/* procs_stop on the matching ones only: others are left alone. */
	for (size_t i = 0; i < r->nb_procs; i++) {
		if (r->kinds[i] != kind)
			continue;
		if (procs_stop(&r->procs[i], 1, sig, grace_ms) > 0)
			say(r, "%s did not stop on signal %d: killed", r->procs[i].name, sig);
	}
}

static void
read_links(struct run *r)
{
	const struct topology *t = r->t;
	char err[256];

	for (uint32_t i = 0; i < t->nb_links; i++) {
		const struct topo_link *l = &t->links[i];
		char ifn[16];

		plan_link_if(i, ifn, sizeof(ifn));
		r->links[i].have =
			netns_if_stats(r->ns[l->a], ifn, &r->links[i].a, err, sizeof(err)) == 0 &&
			netns_if_stats(r->ns[l->b], ifn, &r->links[i].b, err, sizeof(err)) == 0;
		if (!r->links[i].have)
			say(r, "link %s-%s: cannot read its counters: %s", t->nodes[l->a].name,
			    t->nodes[l->b].name, err);
	}
}

/* ---- the whole run ---- */

static int
alloc_run(struct run *r)
{
	const struct topology *t = r->t;
	size_t max = t->nb_nodes + t->nb_links;
	char err[256];

	for (uint32_t j = 0; j < t->nb_jobs; j++)
		max += t->jobs[j].nb_hosts;
	r->ns = calloc(t->nb_nodes ? t->nb_nodes : 1, sizeof(*r->ns));
	r->ns_made = calloc(t->nb_nodes ? t->nb_nodes : 1, 1);
	r->procs = calloc(max, sizeof(*r->procs));
	r->kinds = calloc(max, sizeof(*r->kinds));
	r->log_off = calloc(max, sizeof(*r->log_off));
	r->rounds_done = calloc(max, sizeof(*r->rounds_done));
	r->reports = calloc(max, sizeof(*r->reports));
	r->links = calloc(t->nb_links ? t->nb_links : 1, sizeof(*r->links));
	r->host_proc = calloc(t->nb_jobs ? t->nb_jobs : 1, sizeof(*r->host_proc));
	r->tiers = calloc(t->nb_jobs ? t->nb_jobs : 1, sizeof(*r->tiers));
	r->want_hash = calloc(t->nb_jobs ? t->nb_jobs : 1, sizeof(*r->want_hash));
	if (!r->tiers || !r->want_hash || !r->ns || !r->ns_made || !r->procs || !r->kinds ||
	    !r->log_off || !r->rounds_done || !r->reports || !r->links || !r->host_proc)
		return -1;
	for (uint32_t j = 0; j < t->nb_jobs; j++) {
		r->host_proc[j] = calloc(t->jobs[j].nb_hosts ? t->jobs[j].nb_hosts : 1,
					 sizeof(**r->host_proc));
		if (!r->host_proc[j])
			return -1;
		/* plan_check built it once already: it cannot fail but for memory. */
		if (tiers_build(t, &t->jobs[j], INA_MAX_WORLD, &r->tiers[j], err, sizeof(err)) < 0)
			return -1;
		if (r->tiers[j].nb_switches < 2)
			continue;
		r->want_hash[j] = calloc(t->jobs[j].rounds + 1, sizeof(uint64_t));
		if (!r->want_hash[j] || expect_hashes(&t->jobs[j], &r->tiers[j], r->want_hash[j],
						      err, sizeof(err)) < 0) {
			fprintf(stderr, "ina-testbed: %s\n", err);
			return -1;
		}
	}
	return 0;
}

static void
free_run(struct run *r)
{
	for (uint32_t j = 0; r->host_proc && j < r->t->nb_jobs; j++)
		free(r->host_proc[j]);
	free(r->host_proc);
	for (uint32_t j = 0; r->tiers && j < r->t->nb_jobs; j++)
		tiers_fini(&r->tiers[j]);
	for (uint32_t j = 0; r->want_hash && j < r->t->nb_jobs; j++)
		free(r->want_hash[j]);
	free(r->want_hash);
	free(r->tiers);
	free(r->ns);
	free(r->ns_made);
	free(r->procs);
	free(r->kinds);
	free(r->log_off);
	free(r->rounds_done);
	free(r->reports);
	free(r->links);
}

/* Builds, prints and writes the report; returns 1 if every job verified. */
static int
report(struct run *r, const char *outcome, double seconds)
{
	const struct topology *t = r->t;
	struct report_run rr = {
		.t = t,
		.transport = r->o->dpdk ? "dpdk" : "udp",
		.seconds = seconds,
		.outcome = outcome,
		.links = r->links,
	};
	int ok = 0;
	json_t *rep;

	rr.ranks = calloc(t->nb_jobs ? t->nb_jobs : 1, sizeof(*rr.ranks));
	for (uint32_t j = 0; rr.ranks && j < t->nb_jobs; j++) {
		rr.ranks[j] = calloc(t->jobs[j].nb_hosts ? t->jobs[j].nb_hosts : 1,
				     sizeof(**rr.ranks));
		if (!rr.ranks[j])
			goto out;
		for (uint16_t k = 0; k < t->jobs[j].nb_hosts; k++) {
			size_t pi = r->host_proc[j][k];
			struct proc *p = &r->procs[pi];
			struct report_rank *rk = &rr.ranks[j][k];

			count_rounds(r, pi);
			rk->node = t->jobs[j].hosts[k];
			rk->report = access(r->reports[pi], R_OK) == 0 ? r->reports[pi] : NULL;
			rk->exited_ok = p->exited && WIFEXITED(p->status) &&
					WEXITSTATUS(p->status) == 0;
			proc_how(p, rk->how, sizeof(rk->how));
			rk->rounds_done = r->rounds_done[pi];
			rk->want_hash = r->want_hash[j];
		}
	}
	if (!rr.ranks)
		goto out;
	rep = report_build(&rr);
	if (!rep) {
		say(r, "out of memory for the report");
		goto out;
	}
	report_print(rep, stdout);
	fflush(stdout);
	if (r->o->json &&
	    json_dump_file(rep, r->o->json, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) < 0)
		say(r, "cannot write the report to %s", r->o->json);
	ok = report_verified(rep);
	json_decref(rep);
out:
	for (uint32_t j = 0; rr.ranks && j < t->nb_jobs; j++)
		free(rr.ranks[j]);
	free(rr.ranks);
	return ok;
}

/* The logs of the processes that failed, for the user. */
static void
show_failures(struct run *r)
{
	for (size_t i = 0; i < r->nb_procs; i++) {
		struct proc *p = &r->procs[i];
		char how[64];

		if (r->kinds[i] == PROC_CAPTURE || !p->exited ||
		    (WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0))
			continue;
		if (r->kinds[i] == PROC_SWITCH && WIFEXITED(p->status))
			continue;
		say(r, "%s: %s; its log: %s", p->name, proc_how(p, how, sizeof(how)), p->log);
	}
}

int
run_topology(const struct topology *t, const struct run_opts *o)
{
	struct run r = { .t = t, .o = o };
	struct sigaction sa = { .sa_handler = on_signal }, old[3];
	static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	const char *outcome = "failed";
	char err[512];
	int status = TB_EXIT_ENV, verified = 0, ret;
	long long t0 = 0;
	double seconds = 0;

	if ((status = plan_check(t, o->dpdk, err, sizeof(err))) != 0) {
		fprintf(stderr, "ina-testbed: %s: cannot run: %s\n", t->file ? t->file : t->name,
			err);
		return status;
	}
	status = TB_EXIT_ENV; /* until the run gets going */
	if (geteuid() != 0) {
		fprintf(stderr,
			"ina-testbed: run needs root: it makes network namespaces, veth pairs "
			"and tc qdiscs (run it as root or with sudo; `ina-testbed check` needs no "
			"privileges)\n");
		return TB_EXIT_ENV;
	}
	if (access(o->switch_bin, X_OK) < 0 || access(o->host_bin, X_OK) < 0) {
		fprintf(stderr,
			"ina-testbed: cannot run %s or %s (give --switch-bin and --host-bin)\n",
			o->switch_bin, o->host_bin);
		return TB_EXIT_ENV;
	}
	tb_fmt(r.prefix, sizeof(r.prefix), NETNS_PREFIX "%d", (int)getpid());
	if (alloc_run(&r) < 0) {
		fprintf(stderr, "ina-testbed: out of memory\n");
		free_run(&r);
		return TB_EXIT_ENV;
	}
	if (o->workdir) {
		tb_fmt(r.workdir, sizeof(r.workdir), "%s", o->workdir);
		if (mkdir(r.workdir, 0755) < 0 && errno != EEXIST) {
			fprintf(stderr, "ina-testbed: --workdir %s: %s\n", r.workdir,
				strerror(errno));
			free_run(&r);
			return TB_EXIT_USAGE;
		}
	} else {
		tb_fmt(r.workdir, sizeof(r.workdir), "/tmp/ina-testbed.XXXXXX");
		if (!mkdtemp(r.workdir)) {
			fprintf(stderr, "ina-testbed: mkdtemp: %s\n", strerror(errno));
			free_run(&r);
			return TB_EXIT_ENV;
		}
		r.own_workdir = 1;
	}
	stop_sig = 0;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);

	/* Namespaces: the first one says whether this machine has them at all. */
	ns_name(&r, 0, r.ns[0], sizeof(r.ns[0]));
	if (t->nb_nodes && netns_add(r.ns[0], err, sizeof(err)) < 0) {
		say(&r, "network namespaces are not available here: %s", err);
		goto out;
	}
	if (t->nb_nodes)
		r.ns_made[0] = 1;
	if (setup_network(&r, err, sizeof(err)) < 0) {
		if (!stop_sig)
			say(&r, "cannot set up the network: %s", err);
		goto out;
	}
	if (tb_tenants_write(t, r.workdir, err, sizeof(err)) < 0) {
		say(&r, "%s", err);
		goto out;
	}
	if (o->capture_dir && start_captures(&r, err, sizeof(err)) < 0) {
		say(&r, "%s", err);
		goto out;
	}
	if (!stop_sig && (ret = start_switches(&r, err, sizeof(err))) < 0) {
		if (!stop_sig)
			say(&r, "%s%s", err, ret == -3 ? ": its transport could not start" : "");
		goto out;
	}
	if (stop_sig)
		goto out;
	t0 = tb_now_ms();
	if (stop_sig || start_hosts(&r, err, sizeof(err)) < 0) {
		if (!stop_sig)
			say(&r, "%s", err);
		goto out;
	}
	outcome = watch(&r, t0);
	seconds = (double)(tb_now_ms() - t0) / 1e3;
	show_progress(&r, t0, 1);
	if (strcmp(outcome, "ok") != 0)
		stop_kind(&r, PROC_HOST, SIGTERM, STOP_HOSTS_MS);
	stop_kind(&r, PROC_SWITCH, SIGTERM, STOP_SWITCH_MS);
	stop_kind(&r, PROC_CAPTURE, SIGINT, STOP_HOSTS_MS);
	read_links(&r);
	verified = report(&r, outcome, seconds);
	show_failures(&r);
	status = verified ? TB_EXIT_OK : TB_EXIT_FAILED;
out:
	if (stop_sig) {
		say(&r, "interrupted by signal %d (%s): tearing down", (int)stop_sig,
		    strsignal(stop_sig));
		status = TB_EXIT_INTERRUPTED;
	}
	if (teardown(&r) < 0 && status == TB_EXIT_OK)
		status = TB_EXIT_ENV;
	if (r.own_workdir && (status == TB_EXIT_OK || !t0))
		nftw(r.workdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	else if (t0)
		say(&r, "logs and reports kept in %s", r.workdir);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	free_run(&r);
	return status;
}
