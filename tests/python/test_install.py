#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The installed package: `cmake --install` of the build into a scratch
prefix, then /usr/bin/python3 with only that prefix's dist-packages on its
path imports ina from there, finds the installed libina.so next to it (not
the build's), and sums through a real switch. numpy is needed."""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inatest  # noqa: E402

try:
    import numpy  # noqa: F401
except ImportError:
    inatest.skip("numpy is not installed", "INA_REQUIRE_TORCH")

PROG = """
import ina, numpy as np, os, sys
prefix = sys.argv[1]
assert ina.__file__.startswith(prefix), ina.__file__
assert os.path.realpath(ina.library_path).startswith(os.path.realpath(prefix)), ina.library_path
with ina.Context(sys.argv[2], job_id=5, rank=0, world=1) as c:
    s = c.allreduce(np.arange(1000, dtype=np.float32), tensor_id=1)
    assert (s == np.arange(1000, dtype=np.float32)).all()
print("installed ina %s at %s, libina %s at %s" % (ina.__version__, os.path.dirname(ina.__file__),
      ina.library_version(), ina.library_path))
"""

with tempfile.TemporaryDirectory(prefix="ina-install-") as prefix:
    p = subprocess.run(["cmake", "--install", inatest.BUILD, "--prefix", prefix],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print("FAIL: cmake --install exited %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
        sys.exit(1)
    ver = "%d.%d" % sys.version_info[:2]
    pydir = os.path.join(prefix, "lib", "python%s" % ver, "dist-packages")
    if not os.path.exists(os.path.join(pydir, "ina", "__init__.py")):
        print("FAIL: no package at %s" % pydir)
        sys.exit(1)
    env = {k: v for k, v in os.environ.items() if k not in ("INA_LIBRARY", "PYTHONPATH")}
    env["PYTHONPATH"] = pydir
    with inatest.Switch() as sw:
        env["INA_JOB_TOKEN"] = os.environ["INA_JOB_TOKEN"]
        r = subprocess.run([sys.executable, "-c", PROG, prefix, sw.addr], env=env, cwd="/",
                           capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        print("FAIL: the installed package:\n" + r.stdout + r.stderr)
        sys.exit(1)
    print(r.stdout.strip())
