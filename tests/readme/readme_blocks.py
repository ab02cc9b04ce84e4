#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The README and docs/*.md run as written (issue 16, point 7).

Reads the fenced blocks of the markdown files given. A block tagged sh, bash
or shell is a command block: `run` runs each, top to bottom as a user would,
in a scratch directory that holds the source tree's files (links) with
`build` the build directory and the build's programs on PATH (as an install
would put them), /tmp private to the run; each block in its own session
with a time limit, and whatever it leaves running killed after it. A block
preceded by the comment

    <!-- readme-test: skip (why) -->

is not run, and listed with its reason. A block of one rank's command line
(using $r) is preceded by

    <!-- readme-test: ranks N ADDR[,ADDR...] -->

and runs as ranks r = 0 .. N-1 at once, against a fresh ina-switch on each
ADDR, with a job token in $INA_JOB_TOKEN; every rank must exit 0. An untagged block that looks like
commands (its first line starts with a program or a shell word) is an
error: tag it sh (or text, for output). A block preceded by

    <!-- readme-test: help PROGRAM -->

(PROGRAM as built, e.g. switch_sim/ina-switch) must be PROGRAM's --help
output, line for line: `help` checks them, `update-help` rewrites them.

Usage: readme_blocks.py run|help|update-help BUILD_DIR SOURCE_DIR FILE.md...
Exit 0 all passed, 1 a failure, 77 `run` cannot run here (not root, no
mount namespace; a failure with INA_REQUIRE_DPDK=1, as CI sets).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MARK = re.compile(r"^<!--\s*readme-test:\s*(\w[\w-]*)\s*(.*?)\s*-->\s*$")
COMMANDISH = re.compile(r"^(build/|scripts/|cmake |ctest |apt-get |ina-|cc |export |for |"
                        r"mkdir |CC=|eal=|echo |editor |systemctl |torchrun |\(cd |curl |"
                        r"sudo |spin |make |python3? )")
SHELLS = ("sh", "bash", "shell")
BLOCK_TIMEOUT = 90
PROGRAM_DIRS = ("switch_sim", "host", "train", "testbed", "sim", "tests")


class Block:
    def __init__(self, path, line, lang, mark, arg, text):
        self.path, self.line, self.lang = path, line, lang
        self.mark, self.arg, self.text = mark, arg, text

    def where(self):
        return f"{os.path.basename(self.path)}:{self.line}"


def blocks(path):
    """The fenced blocks of 'path', each with the marker just before it."""
    out = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        start = i
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l for l in lines[i + 1:j]]
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mark, arg = None, ""
        if k >= 0:
            mm = MARK.match(lines[k].strip())
            if mm:
                mark, arg = mm.group(1), mm.group(2)
        out.append(Block(path, start + 1, lang, mark, arg, "\n".join(body) + "\n"))
        i = j + 1
    return out


def untagged_commands(all_blocks):
    bad = []
    for b in all_blocks:
        first = next((l for l in b.text.split("\n") if l.strip() and not l.startswith("#")), "")
        if b.lang == "" and b.mark is None and COMMANDISH.match(first):
            bad.append(b)
    return bad


def help_text(build, prog):
    r = subprocess.run([os.path.join(build, prog), "--help"], capture_output=True, text=True,
                       timeout=30)
    return r.stdout + r.stderr


def check_help(build, all_blocks, update):
    fail = 0
    n = 0
    for b in all_blocks:
        if b.mark != "help":
            continue
        n += 1
        want = help_text(build, b.arg)
        if b.text == want:
            print(f"ok   {b.where()}: {b.arg} --help as shown")
            continue
        if update:
            src = open(b.path, encoding="utf-8").read().split("\n")
            end = b.line
            while not re.match(r"^\s*```\s*$", src[end]):
                end += 1
            src[b.line:end] = want.rstrip("\n").split("\n")
            open(b.path, "w", encoding="utf-8").write("\n".join(src))
            print(f"updated {b.where()}: {b.arg} --help")
            return check_help(build, [x for f in sorted({x.path for x in all_blocks})
                                      for x in blocks(f)], update)
        fail += 1
        print(f"FAIL {b.where()}: not what {b.arg} --help prints:")
        with tempfile.TemporaryDirectory() as d:
            a, w = os.path.join(d, "shown"), os.path.join(d, "printed")
            open(a, "w").write(b.text)
            open(w, "w").write(want)
            subprocess.run(["diff", "-u", a, w])
    if n == 0:
        print("FAIL: no help block found")
        fail += 1
    return fail


def skip_run(why):
    if os.environ.get("INA_REQUIRE_DPDK") == "1":
        print(f"FAIL (INA_REQUIRE_DPDK=1): {why}")
        sys.exit(1)
    print(f"SKIP: {why}")
    sys.exit(77)


def session_pids(sid):
    """The live processes of session 'sid'. A zombie is not one: what a block
    leaves behind is reparented to init, which may take a second or two to
    reap it, and waiting for that took about 1.5 s a block."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.getsid(int(d)) != sid:
                continue
            with open(f"/proc/{d}/stat") as f:
                # pid (comm) state ...: comm may hold spaces and parentheses
                if f.read().rpartition(")")[2].split()[0] == "Z":
                    continue
            pids.append(int(d))
        except OSError:
            pass
    return pids


def kill_session(sid):
    """SIGTERM what the block left running, SIGKILL what is left after 5 s."""
    left = session_pids(sid)
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
        for p in session_pids(sid):
            try:
                os.kill(p, sig)
            except OSError:
                pass
        t = time.time() + wait
        while session_pids(sid) and time.time() < t:
            time.sleep(0.1)
    return left


# Runs the block READMEBLOCK as ranks 0 .. N-1 against switches on ADDRS.
RANKS = r"""
export INA_JOB_TOKEN=readme-test-secret
for a in ${ADDRS//,/ }; do build/switch_sim/ina-switch --listen "$a" --log-level warn & done
pids=""
for ((r = 0; r < N; r++)); do
    r=$r bash -e -o pipefail -c "$READMEBLOCK" >"rank$r.log" 2>&1 &
    pids="$pids $!"
done
fail=0
r=0
for p in $pids; do
    wait "$p" || { echo "rank $r failed:"; tail -20 "rank$r.log"; fail=1; }
    r=$((r + 1))
done
exit $fail
"""


def scratch(build, source):
    d = tempfile.mkdtemp(prefix="readme-")
    for e in os.listdir(source):
        if e in ("build",) or e.startswith("build-") or e.startswith("."):
            continue
        os.symlink(os.path.join(source, e), os.path.join(d, e))
    os.symlink(build, os.path.join(d, "build"))
    return d


def run_blocks(build, source, all_blocks):
    if os.geteuid() != 0:
        skip_run("not root: the README's blocks run as root (namespaces, a private /tmp)")
    if os.environ.get("INA_README_NS") != "1":
        # A private /tmp: the blocks write /tmp/token, /tmp/r0.json, sockets...
        env = dict(os.environ, INA_README_NS="1")
        inner = ("mount --make-rprivate / && mount -t tmpfs tmpfs /tmp && exec \"$@\"")
        r = subprocess.run(["unshare", "-m", "sh", "-c", inner, "sh", sys.executable,
                            os.path.abspath(__file__), "run", build, source]
                           + [b for b in sys.argv[4:]], env=env)
        if r.returncode not in (0, 1):
            skip_run(f"no private mount namespace here (unshare -m: exit {r.returncode})")
        return r.returncode
    cwd = scratch(build, source)
    env = dict(os.environ)
    env["PATH"] = ":".join([os.path.join(build, d) for d in PROGRAM_DIRS] + [env.get("PATH", "")])
    env.pop("INA_JOB_TOKEN", None)
    fail = passed = 0
    skipped = []
    for b in all_blocks:
        if b.lang not in SHELLS:
            continue
        if b.mark == "skip":
            skipped.append(b)
            continue
        t0 = time.time()
        log = os.path.join(cwd, ".block.log")
        script, benv = b.text, env
        if b.mark == "ranks":
            n, addrs = b.arg.split()
            script = RANKS
            benv = dict(env, N=n, ADDRS=addrs, READMEBLOCK=b.text)
        with open(log, "w") as out:
            p = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd,
                                 env=benv, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
            try:
                rc = p.wait(timeout=BLOCK_TIMEOUT)
            except subprocess.TimeoutExpired:
                rc = "timeout"
        left = kill_session(p.pid)
        p.wait()
        dt = time.time() - t0
        if rc == 0:
            passed += 1
            note = f", {len(left)} process(es) left running killed" if left else ""
            print(f"ok   {b.where()} ({dt:.1f} s{note})")
        else:
            fail += 1
            what = f"still running after {BLOCK_TIMEOUT} s" if rc == "timeout" else f"exit {rc}"
            print(f"FAIL {b.where()}: {what} after {dt:.1f} s; the block:")
            print("    " + b.text.rstrip("\n").replace("\n", "\n    "))
            print("  its output (the end):")
            print("    " + "".join(open(log).readlines()[-200:]).rstrip("\n").replace("\n", "\n    "))
    for b in skipped:
        print(f"skipped {b.where()}: {b.arg}")
    print(f"{passed} blocks ran as written, {fail} failed, {len(skipped)} marked skip")
    shutil.rmtree(cwd, ignore_errors=True)
    return 1 if fail else 0


def main():
    if len(sys.argv) < 5 or sys.argv[1] not in ("run", "help", "update-help"):
        sys.exit(__doc__)
    mode, build, source = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    all_blocks = [b for f in sys.argv[4:] for b in blocks(f)]
    outer = mode == "run" and os.geteuid() == 0 and os.environ.get("INA_README_NS") != "1"
    bad = [] if outer else untagged_commands(all_blocks)
    for b in bad:
        print(f"FAIL {b.where()}: untagged block of commands: tag it ```sh (or ```text)")
    if mode == "run":
        rc = run_blocks(build, source, all_blocks)
        sys.exit(1 if bad or rc else 0)
    fail = check_help(build, all_blocks, mode == "update-help")
    sys.exit(1 if bad or fail else 0)


if __name__ == "__main__":
    main()
