# SPDX-License-Identifier: MIT
"""What the Python tests share: the build directory ($INA_BUILD_DIR, set by
ctest), the skip rule (exit 77), free loopback ports, and a real ina-switch
per test on 127.0.0.1, started and stopped by the test."""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("INA_BUILD_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
SWITCH = os.path.join(BUILD, "switch_sim", "ina-switch")


def skip(reason, require_env=None):
    """Exits 77 (ctest skips), or fails when $require_env is 1 (CI)."""
    if require_env and os.environ.get(require_env) == "1":
        print("FAIL (%s=1): %s" % (require_env, reason))
        sys.exit(1)
    print("SKIP: %s" % reason)
    sys.exit(77)


def require_torch():
    """torch, or exit 77 when it is missing (a failure with INA_REQUIRE_TORCH=1)."""
    try:
        import torch
        import torch.distributed
    except ImportError as e:
        skip("torch is not installed (apt-get install python3-torch): %s" % e,
             "INA_REQUIRE_TORCH")
    return torch


def free_port(kind=socket.SOCK_DGRAM):
    """A port free on 127.0.0.1 for UDP (or TCP) now."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(n):
    """n distinct free UDP ports."""
    ports = set()
    while len(ports) < n:
        ports.add(free_port())
    return sorted(ports)


class Switch:
    """An ina-switch on 127.0.0.1:PORT with extra options, its log in a
    temporary file; stop() (or the with block's end) sends SIGTERM and
    waits, kill() is SIGKILL."""

    def __init__(self, *args, port=None, token="py-test"):
        self.port = port or free_port()
        self.addr = "127.0.0.1:%d" % self.port
        os.environ["INA_JOB_TOKEN"] = token
        self.log = tempfile.NamedTemporaryFile(prefix="ina-switch-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([SWITCH, "--listen", self.addr, "--log-level", "info"]
                                     + list(args), stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if "serving" in self.text():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("ina-switch did not start:\n" + self.text())

    def text(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        if os.path.exists(self.log.name):
            os.unlink(self.log.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def run_ranks(world, fn, *args):
    """Runs fn(rank, *args) for every rank in threads; returns their results
    in rank order, or raises the first exception (every thread joined)."""
    import threading
    res, errs = [None] * world, [None] * world

    def body(r):
        try:
            res[r] = fn(r, *args)
        except BaseException as e:
            errs[r] = e

    ts = [threading.Thread(target=body, args=(r,)) for r in range(world)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
        if t.is_alive():
            raise RuntimeError("a rank did not end within 120 s")
    for e in errs:
        if e is not None:
            raise e
    return res
