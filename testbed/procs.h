/* SPDX-License-Identifier: MIT */
/*
 * Child processes of ina-testbed: short commands (ip, tc) run to completion
 * with a time limit, and long-lived programs (ina-switch, ina-host, tcpdump)
 * started in a network namespace, watched and stopped. Every child is put in
 * a process group of its own, so a Ctrl-C at the terminal reaches the testbed
 * only, which then stops its children in order. Every wait is bounded.
 */
#ifndef TB_PROCS_H
#define TB_PROCS_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Runs argv (argv[0] looked up in PATH) and waits at most timeout_ms.
 * Returns 0 if it exited 0; else -1 with one line in 'err': its first line
 * of stderr, or how it ended. A command past its time is killed.
 */
int proc_run(char *const argv[], int timeout_ms, char *err, size_t errlen);

/* The same, its stdout (up to outlen - 1 bytes, NUL-terminated) in 'out'. */
int proc_run_out(char *const argv[], int timeout_ms, char *out, size_t outlen, char *err,
		 size_t errlen);

struct proc {
	char name[64]; /* for messages: "switch tor0", "host h1 (job a, rank 1)" */
	char log[512]; /* its stdout and stderr */
	pid_t pid;     /* 0: not started or reaped */
	int exited;    /* reaped */
	int status;    /* waitpid status once exited */
};

/*
 * Starts argv in namespace 'ns' (through `ip netns exec`, which execs the
 * program, so the pid is the program's) with stdout and stderr to p->log and
 * 'env' ("NAME=value" strings, NULL-terminated, may be NULL) added to its
 * environment. Returns 0 or a negative errno.
 */
int proc_start(struct proc *p, const char *ns, char *const argv[], char *const env[]);

/* Reaps p if it has exited; returns 1 if it has (now or before), else 0. */
int proc_poll(struct proc *p);

/* A one-line account of how p ended ("exit 0", "killed by signal 9"). */
const char *proc_how(const struct proc *p, char *buf, size_t size);

/*
 * Stops every started, unreaped proc in 'ps': signal 'sig' to each, up to
 * grace_ms for them to exit, then SIGKILL and up to another second. Returns
 * how many had to be killed.
 */
int procs_stop(struct proc *ps, size_t n, int sig, int grace_ms);

/* snprintf whose truncation is expected (messages, paths checked later). */
void tb_fmt(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Milliseconds on a monotonic clock. */
long long tb_now_ms(void);
/* Sleeps ms (an interrupting signal ends it early). */
void tb_sleep_ms(int ms);

#endif
