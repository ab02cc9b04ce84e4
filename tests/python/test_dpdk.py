#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The ina package over the DPDK port: an ina-switch with two net_memif
server interfaces (as tests/integration/dpdk_memif.sh) and two Python
processes, each starting EAL through ina.dpdk_start() with a memif client
vdev and opening its context on port="dpdk:...". Sums bit-exact (dyadic
data), async and broadcast too, every rank the same bits, and the context
says it ran on "dpdk". Exits 77 when DPDK cannot run here (no memif, no
EAL), unless INA_REQUIRE_DPDK=1.
Usage: test_dpdk.py   (test_dpdk.py rank R SOCKET: one worker, internal)"""

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inatest  # noqa: E402

EAL = ["--no-huge", "-m", "256", "--no-pci", "--no-telemetry", "--log-level=lib.eal:warning"]
WORLD = 2


def dyadic(np, rank, n, seed):
    rng = np.random.default_rng(seed * 100 + rank)
    return (rng.integers(-1024, 1024, n) / 16.0).astype(np.float32)


def rank_main(rank, sock, prefix):
    import numpy as np
    import ina
    ina.dpdk_start(EAL + ["--file-prefix=%s-h%d" % (prefix, rank), "-l", "0",
                          "--vdev=net_memif0,role=client,id=%d,socket=%s" % (rank, sock)])
    port = "dpdk:port=0,ip=10.77.0.%d,link_wait_ms=15000" % (rank + 2)
    with ina.Context("10.77.0.1:9150", job_id=77, rank=rank, world=WORLD, port=port,
                     timeout_ms=5000) as c:
        s = c.allreduce(dyadic(np, rank, 5000, 1), tensor_id=1)
        want = sum(dyadic(np, r, 5000, 1) for r in range(WORLD))
        assert np.array_equal(s, want), "rank %d: the sum is wrong" % rank
        futs = [c.allreduce_async(dyadic(np, rank, 1000 + i, 2 + i), tensor_id=2 + i)
                for i in range(4)]
        c.flush()
        for i, f in enumerate(futs):
            want = sum(dyadic(np, r, 1000 + i, 2 + i) for r in range(WORLD))
            assert np.array_equal(f.result(30), want), "rank %d: async sum %d wrong" % (rank, i)
        b = dyadic(np, rank, 300, 9)
        c.broadcast(b, root=1, tensor_id=10)
        assert np.array_equal(b, dyadic(np, 1, 300, 9))
        st = c.stats()
        assert st["transport"] == "dpdk", st
        print("rank %d: dpdk, %d rounds, %d packets sent" % (rank, st["rounds"], st["packets_sent"]))


def main():
    try:
        import numpy  # noqa: F401
    except ImportError:
        inatest.skip("numpy is not installed", "INA_REQUIRE_TORCH")
    tag = "ina-py%d" % os.getpid()
    sock = "/tmp/%s.sock" % tag
    with tempfile.TemporaryDirectory() as tmp:
        probe = subprocess.run([inatest.SWITCH] + EAL + ["--no-shconf", "-l", "0",
                               "--file-prefix=%s-probe" % tag, "--", "--help"],
                               capture_output=True, text=True, timeout=30)
        if probe.returncode != 0:
            inatest.skip("DPDK cannot start here: %s" % (probe.stderr.strip().splitlines()
                                                         or ["?"])[-1], "INA_REQUIRE_DPDK")
        os.environ["INA_JOB_TOKEN"] = "py-dpdk-%d" % os.getpid()
        vdevs = ["--vdev=net_memif%d,role=server,id=%d,socket=%s" % (r, r, sock)
                 for r in range(WORLD)]
        log = open(os.path.join(tmp, "switch.log"), "w+")
        sw = subprocess.Popen([inatest.SWITCH] + EAL + ["--file-prefix=%s-sw" % tag, "-l", "1"]
                              + vdevs + ["--", "--port", "dpdk:port=all,ip=10.77.0.1",
                                         "--log-level", "info"], stdout=log,
                              stderr=subprocess.STDOUT)
        ranks = []
        fail = False
        try:
            deadline = time.monotonic() + 15
            while "serving" not in open(log.name).read():
                if sw.poll() is not None or time.monotonic() > deadline:
                    print("FAIL: the switch did not start:\n" + open(log.name).read())
                    return 1
                time.sleep(0.1)
            for r in range(WORLD):
                ranks.append(subprocess.Popen([sys.executable, __file__, "rank", str(r), sock,
                                               tag], stdout=subprocess.PIPE,
                                              stderr=subprocess.STDOUT, text=True))
            for r, p in enumerate(ranks):
                try:
                    out, _ = p.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    out, _ = p.communicate()
                    out += "\n(killed after 60 s)"
                print(out.strip())
                if p.returncode != 0:
                    print("FAIL: rank %d exited %d" % (r, p.returncode))
                    fail = True
        finally:
            for p in ranks:
                if p.poll() is None:
                    p.kill()
            sw.terminate()
            try:
                sw.wait(15)
            except subprocess.TimeoutExpired:
                sw.kill()
            for suffix in ["sw", "probe"] + ["h%d" % r for r in range(WORLD)]:
                subprocess.run(["rm", "-rf", "/var/run/dpdk/%s-%s" % (tag, suffix)])
            if os.path.exists(sock):
                os.unlink(sock)
        if fail:
            print("--- switch log\n" + open(log.name).read())
            return 1
    print("dpdk: %d Python ranks over memif, sums exact" % WORLD)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "rank":
        rank_main(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    else:
        sys.exit(main())
