/* SPDX-License-Identifier: MIT */
/* Child processes of ina-testbed (procs.h): bounded commands and programs in namespaces. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procs.h"

void
tb_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

long long
tb_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
tb_sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Reads what is there on a nonblocking fd into buf[*len..size - 1). */
static void
drain(int fd, char *buf, size_t size, size_t *len)
{
	char junk[512];
	ssize_t r;

	for (;;) {
		if (*len + 1 < size)
			r = read(fd, buf + *len, size - 1 - *len);
		else
			r = read(fd, junk, sizeof(junk));
		if (r <= 0)
			break;
		if (*len + 1 < size)
			*len += (size_t)r;
	}
	buf[*len] = '\0';
}

int
proc_run_out(char *const argv[], int timeout_ms, char *out, size_t outlen, char *err, size_t errlen)
{
	char ebuf[512];
	size_t elen = 0, olen = 0;
	int efd[2], ofd[2], status = 0, done = 0;
	long long deadline = tb_now_ms() + timeout_ms;
	pid_t pid;

	if (pipe2(efd, O_CLOEXEC | O_NONBLOCK) < 0)
		goto sys_err;
	if (pipe2(ofd, O_CLOEXEC | O_NONBLOCK) < 0) {
		close(efd[0]);
		close(efd[1]);
		goto sys_err;
	}
	pid = fork();
	if (pid < 0) {
		close(efd[0]), close(efd[1]), close(ofd[0]), close(ofd[1]);
		goto sys_err;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		if (null >= 0)
			dup2(null, 0);
		dup2(ofd[1], 1);
		dup2(efd[1], 2);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(efd[1]);
	close(ofd[1]);
	while (!done) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (out)
			drain(ofd[0], out, outlen, &olen);
		else {
			char junk[1];
			size_t jl = 0;

			drain(ofd[0], junk, sizeof(junk), &jl);
		}
		drain(efd[0], ebuf, sizeof(ebuf), &elen);
		if (w == pid) {
			done = 1;
		} else if (tb_now_ms() > deadline) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			snprintf(err, errlen, "%s: no answer in %d ms (killed)", argv[0],
				 timeout_ms);
			close(efd[0]);
			close(ofd[0]);
			return -1;
		} else {
			tb_sleep_ms(2);
		}
	}
	if (out)
		drain(ofd[0], out, outlen, &olen);
	drain(efd[0], ebuf, sizeof(ebuf), &elen);
	close(efd[0]);
	close(ofd[0]);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	ebuf[strcspn(ebuf, "\n")] = '\0';
	if (ebuf[0])
		snprintf(err, errlen, "%s", ebuf);
	else if (WIFEXITED(status))
		snprintf(err, errlen, "%s: exit %d", argv[0], WEXITSTATUS(status));
	else
		snprintf(err, errlen, "%s: killed by signal %d", argv[0], WTERMSIG(status));
	return -1;
sys_err:
	snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(errno));
	return -1;
}

int
proc_run(char *const argv[], int timeout_ms, char *err, size_t errlen)
{
	return proc_run_out(argv, timeout_ms, NULL, 0, err, errlen);
}

int
proc_start(struct proc *p, const char *ns, char *const argv[], char *const env[])
{
	char **full;
	size_t n = 0, i;
	pid_t pid;
	int fd;

	for (i = 0; argv[i]; i++)
		;
	full = calloc(i + 5, sizeof(*full));
	if (!full)
		return -ENOMEM;
	if (ns) {
		full[n++] = "ip";
		full[n++] = "netns";
		full[n++] = "exec";
		full[n++] = (char *)ns;
	}
	for (i = 0; argv[i]; i++)
		full[n++] = argv[i];
	full[n] = NULL;
	fd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;

		free(full);
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(fd);
		free(full);
		return -e;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		if (null >= 0)
			dup2(null, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		for (i = 0; env && env[i]; i++)
			putenv(env[i]);
		execvp(full[0], full);
		fprintf(stderr, "cannot run %s: %s\n", full[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(fd);
	free(full);
	p->pid = pid;
	p->exited = 0;
	p->status = 0;
	return 0;
}

int
proc_poll(struct proc *p)
{
	pid_t w;

	if (p->exited)
		return 1;
	if (p->pid <= 0)
		return 0;
	w = waitpid(p->pid, &p->status, WNOHANG);
	if (w == p->pid || (w < 0 && errno == ECHILD)) {
		p->exited = 1;
		return 1;
	}
	return 0;
}

const char *
proc_how(const struct proc *p, char *buf, size_t size)
{
	if (!p->exited)
		snprintf(buf, size, "still running");
	else if (WIFEXITED(p->status))
		snprintf(buf, size, "exit %d", WEXITSTATUS(p->status));
	else if (WIFSIGNALED(p->status))
		snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(p->status),
			 strsignal(WTERMSIG(p->status)));
	else
		snprintf(buf, size, "status %#x", p->status);
	return buf;
}

static int
all_done(struct proc *ps, size_t n)
{
	int done = 1;

	for (size_t i = 0; i < n; i++)
		if (ps[i].pid > 0 && !proc_poll(&ps[i]))
			done = 0;
	return done;
}

int
procs_stop(struct proc *ps, size_t n, int sig, int grace_ms)
{
	long long deadline;
	int killed = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (ps[i].pid > 0 && !proc_poll(&ps[i]))
			kill(-ps[i].pid, sig);
	deadline = tb_now_ms() + grace_ms;
	while (!all_done(ps, n) && tb_now_ms() < deadline)
		tb_sleep_ms(10);
	for (i = 0; i < n; i++)
		if (ps[i].pid > 0 && !proc_poll(&ps[i])) {
			kill(-ps[i].pid, SIGKILL);
			killed++;
		}
	deadline = tb_now_ms() + 1000;
	while (!all_done(ps, n) && tb_now_ms() < deadline)
		tb_sleep_ms(10);
	return killed;
}
