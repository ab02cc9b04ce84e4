#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Clean teardown under torchrun: `torchrun --nproc_per_node 2
torchrun_job.py` against a real ina-switch exits 0, every rank says ok, and
it ends within a bound (timeout), with the hook's context left open at exit.
Exit 77 without torch (a failure with INA_REQUIRE_TORCH=1)."""

import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inatest  # noqa: E402

inatest.require_torch()
torchrun = shutil.which("torchrun") or "/usr/bin/torchrun"
if not os.path.exists(torchrun):
    inatest.skip("torchrun is not installed", "INA_REQUIRE_TORCH")
job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchrun_job.py")
with inatest.Switch() as sw:
    env = dict(os.environ, INA_SWITCH=sw.addr, OMP_NUM_THREADS="1")
    master = inatest.free_port(inatest.socket.SOCK_STREAM)
    t0 = time.monotonic()
    try:
        # --redirects 1 --tee 1: torch 1.13's torchrun on Python 3.11 fails
        # with its defaults (0: Std.NONE is no member of the IntFlag there).
        p = subprocess.run(["timeout", "-k", "5", "90", torchrun, "--nproc_per_node", "2",
                            "--redirects", "1", "--tee", "1", "--master_addr", "127.0.0.1",
                            "--master_port", str(master), job],
                           env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        print("FAIL: torchrun did not end in 120 s")
        sys.exit(1)
    took = time.monotonic() - t0
    oks = sorted(line for line in p.stdout.splitlines() if line.endswith(")") and " ok " in line)
    if p.returncode != 0 or len(oks) != 2 or "Traceback" in p.stderr:
        print("FAIL: torchrun exited %d after %.1f s, %d ranks ok" % (p.returncode, took, len(oks)))
        print("--- stdout\n" + p.stdout + "--- stderr\n" + p.stderr + "--- switch\n" + sw.text())
        sys.exit(1)
    print("\n".join(oks))
    print("torchrun: 2 ranks, exit 0 after %.1f s" % took)
