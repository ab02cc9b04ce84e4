#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The ina package over UDP against a real ina-switch on 127.0.0.1 (one per
test): ranks as threads of this process, each with its own ina.Context.
Sums bit-exact on dyadic data (every partial sum is exact in float32), async
futures, broadcast, barrier, stats, float16/bfloat16 conversion, zero copy,
errors as exceptions with the library's sentence, log lines in logging, and
an interpreter that exits cleanly with a context open and an operation
pending. numpy is needed; the torch cases skip without torch."""

import gc
import logging
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inatest  # noqa: E402

try:
    import numpy as np
except ImportError:
    inatest.skip("numpy is not installed (apt-get install python3-numpy)", "INA_REQUIRE_TORCH")

import ina  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

JOB = 100


def dyadic(rank, n, seed=0):
    """Values k/16 with |k| < 2^10: sums of a few are exact in float32."""
    rng = np.random.default_rng(seed * 1000 + rank)
    return (rng.integers(-1024, 1024, n) / 16.0).astype(np.float32)


class ContextTest(unittest.TestCase):
    def setUp(self):
        self.sw = inatest.Switch()
        global JOB
        JOB += 1
        self.job = JOB

    def tearDown(self):
        self.sw.stop()

    def ctx(self, rank, world, **kw):
        kw.setdefault("timeout_ms", 5000)
        return ina.Context(self.sw.addr, job_id=self.job, rank=rank, world=world, **kw)

    def test_allreduce_sum_avg_exact(self):
        world, n = 3, 5000

        def rank(r):
            with self.ctx(r, world) as c:
                x = dyadic(r, n)
                s = c.allreduce(x, tensor_id=1)
                x2 = dyadic(r, n, 1) * 3
                a = c.allreduce(x2, op="avg", tensor_id=2)
                st = c.stats()
                return s, a, st

        res = inatest.run_ranks(world, rank)
        want = sum(dyadic(r, n) for r in range(world))
        want_avg = sum(dyadic(r, n, 1) * 3 for r in range(world)) / np.float32(world)
        for s, a, st in res:
            self.assertEqual(s.dtype, np.float32)
            self.assertTrue(np.array_equal(s, want))
            self.assertTrue(np.allclose(a, want_avg, rtol=1e-6, atol=0))
            self.assertTrue(np.array_equal(a, res[0][1]), "every rank receives the same bits")
            self.assertGreaterEqual(st["rounds"], 2)
            self.assertGreater(st["bytes_sent"], 2 * n * 4 * 0.9)
            self.assertGreater(st["bytes_received"], 0)
            self.assertEqual(st["transport"], "udp")

    def test_allreduce_blocks(self):
        """The block-sparse form: the union with the dense sums' bits, in a
        list and in a dense buffer, written only in the union's blocks; rank r
        on r + 1 threads (cfg.threads), every rank the same bits."""
        world, n, bs = 3, 5000, 64
        nb = -(-n // bs)

        def blocks_of(r):
            rng = np.random.default_rng(50 + r)
            idx = np.sort(rng.choice(nb, 6, replace=False)).astype(np.uint32)
            x = np.zeros(n, dtype=np.float32)
            for b in idx:
                x[b * bs:(b + 1) * bs] = dyadic(r, n)[b * bs:(b + 1) * bs] + 0.5
            vals = np.zeros((idx.size, bs), dtype=np.float32)
            for i, b in enumerate(idx):
                seg = x[b * bs:(b + 1) * bs]
                vals[i, :seg.size] = seg
            return idx, vals, x

        def rank(r):
            idx, vals, x = blocks_of(r)
            with self.ctx(r, world, block_size=bs, threads=r + 1) as c:
                ref = c.allreduce(x, tensor_id=1)
                dense = np.full(n, 7.0, dtype=np.float32)
                ui, uv = c.allreduce_blocks(idx, vals, n, bs, tensor_id=2, dense=dense)
                ti, tv = (c.allreduce_blocks(torch.from_numpy(idx.astype(np.int64)),
                                             torch.from_numpy(vals), n, bs, tensor_id=2)
                          if torch is not None else (None, None))
                return ref, ui, uv, dense, ti, tv

        res = inatest.run_ranks(world, rank)
        union = sorted(set().union(*(set(blocks_of(r)[0].tolist()) for r in range(world))))
        for ref, ui, uv, dense, ti, tv in res:
            self.assertTrue(np.array_equal(ref, res[0][0]) and np.array_equal(uv, res[0][2]),
                            "the same bits on 1, 2 and 3 threads")
            self.assertEqual(ui.tolist(), union)
            for i, b in enumerate(ui):
                seg = ref[b * bs:(b + 1) * bs]
                self.assertTrue(np.array_equal(uv[i, :seg.size], seg))
                self.assertTrue(np.array_equal(dense[b * bs:(b + 1) * bs], seg))
            untouched = np.ones(n, dtype=bool)
            for b in ui:
                untouched[b * bs:(b + 1) * bs] = False
            self.assertTrue(np.all(dense[untouched] == 7.0), "only the union is written")
            if ti is not None:
                self.assertEqual(ti.tolist(), union)
                self.assertTrue(np.array_equal(tv.numpy(), uv))

    def test_async_many_and_callbacks(self):
        world, sizes = 2, [1, 300, 4097, 20000, 7]

        def rank(r):
            with self.ctx(r, world) as c:
                seen = []
                xs = [dyadic(r, n, i) for i, n in enumerate(sizes)]
                futs = [c.allreduce_async(x, tensor_id=10 + i) for i, x in enumerate(xs)]
                for f in futs:
                    # A future done already runs its callback at once, here.
                    want = threading.current_thread().name if f.done() else "ina-progress"
                    f.add_done_callback(
                        lambda f, want=want: seen.append(threading.current_thread().name == want))
                c.flush()
                outs = [f.result(timeout=30) for f in futs]
                self.assertTrue(all(f.done() for f in futs))
                self.assertFalse(futs[0].cancel())
                # The inputs are untouched (out=None: new arrays).
                for i, x in enumerate(xs):
                    self.assertTrue(np.array_equal(x, dyadic(r, sizes[i], i)))
                return outs, seen

        res = inatest.run_ranks(world, rank)
        for outs, seen in res:
            self.assertEqual(len(seen), len(sizes))
            self.assertTrue(all(seen), "callbacks run on the progress thread")
            for i, n in enumerate(sizes):
                self.assertTrue(np.array_equal(outs[i], dyadic(0, n, i) + dyadic(1, n, i)))

    def test_broadcast_barrier(self):
        world = 3

        def rank(r):
            with self.ctx(r, world) as c:
                x = dyadic(r, 1000, 5)
                got = c.broadcast(x, root=1, tensor_id=3)
                self.assertIs(got, x)
                t0 = time.monotonic()
                if r == 2:
                    time.sleep(0.5)
                c.barrier()
                return x, time.monotonic() - t0

        res = inatest.run_ranks(world, rank)
        for x, waited in res:
            self.assertTrue(np.array_equal(x, dyadic(1, 1000, 5)))
            self.assertGreater(waited, 0.45, "the barrier waits for the last rank")

    def test_float16_and_inplace(self):
        world, n = 2, 3000

        def rank(r):
            with self.ctx(r, world) as c:
                h = dyadic(r, n).astype(np.float16)
                out = c.allreduce(h, tensor_id=4)
                f = dyadic(r, n)
                addr = f.ctypes.data
                same = c.allreduce(f, tensor_id=5, out=f)
                strided = dyadic(r, 2 * n)[::2]
                s = c.allreduce(strided, tensor_id=6)
                return out, same is f and f.ctypes.data == addr, f, s

        res = inatest.run_ranks(world, rank)
        want = dyadic(0, n) + dyadic(1, n)
        for out, inplace, f, s in res:
            self.assertEqual(out.dtype, np.float16)
            self.assertTrue(np.array_equal(out, want.astype(np.float16)))
            self.assertTrue(inplace)
            self.assertTrue(np.array_equal(f, want))
            self.assertTrue(np.array_equal(s, (dyadic(0, 2 * n) + dyadic(1, 2 * n))[::2]))

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_torch_tensors(self):
        world, n = 2, 2500

        def rank(r):
            with self.ctx(r, world) as c:
                t = torch.from_numpy(dyadic(r, n)).reshape(50, 50)
                ptr = t.data_ptr()
                c.allreduce(t, tensor_id=7, out=t)
                bf = torch.from_numpy(dyadic(r, n)).to(torch.bfloat16)
                bsum = c.allreduce(bf, tensor_id=8)
                hf = torch.from_numpy(dyadic(r, n)).to(torch.float16)
                fut = c.allreduce_async(hf, tensor_id=9, out=hf)
                c.flush()
                self.assertIs(fut.result(30), hf)
                return t, t.data_ptr() == ptr, bsum, hf

        res = inatest.run_ranks(world, rank)
        want = torch.from_numpy(dyadic(0, n) + dyadic(1, n))
        # bfloat16: each rank's values rounded to bf16, summed in f32, rounded back.
        wbf = (torch.from_numpy(dyadic(0, n)).to(torch.bfloat16).float()
               + torch.from_numpy(dyadic(1, n)).to(torch.bfloat16).float()).to(torch.bfloat16)
        for t, zero_copy, bsum, hf in res:
            self.assertTrue(zero_copy)
            self.assertTrue(torch.equal(t.reshape(-1), want))
            self.assertEqual(bsum.dtype, torch.bfloat16)
            self.assertTrue(torch.equal(bsum, wbf))
            self.assertEqual(hf.dtype, torch.float16)
            self.assertTrue(torch.equal(hf, want.to(torch.float16)))

    def test_errors(self):
        with self.ctx(0, 1) as c:
            with self.assertRaises(TypeError):
                c.allreduce(np.zeros(10, dtype=np.float64))
            with self.assertRaises(TypeError):
                c.allreduce(np.zeros(10, dtype=np.int32))
            with self.assertRaises(TypeError):
                c.allreduce([1.0, 2.0])
            with self.assertRaises(ValueError):
                c.allreduce(np.zeros(0, dtype=np.float32))
            with self.assertRaises(ValueError):
                c.allreduce(np.zeros(4, dtype=np.float32), op="max")
            c.allreduce(np.ones(10, dtype=np.float32), tensor_id=1)
            # A root that is no rank: the library's -EINVAL.
            with self.assertRaises(ina.InvalidError) as cm:
                c.broadcast(np.ones(11, dtype=np.float32), root=5, tensor_id=2)
            self.assertEqual(cm.exception.code, -22)
            if torch is not None:
                with self.assertRaises(TypeError):
                    c.allreduce(torch.zeros(4, dtype=torch.float64))
        with self.assertRaises(ina.ClosedError):
            c.allreduce(np.ones(10, dtype=np.float32), tensor_id=1)
        c.close()  # idempotent
        # A field that does not exist, a value the library refuses.
        with self.assertRaises(ina.InvalidError) as cm:
            self.ctx(0, 1, no_such_field=3)
        self.assertIn("no_such_field", str(cm.exception))
        with self.assertRaises(ina.InvalidError):
            self.ctx(0, 1, encoding="f64")
        with self.assertRaises(ina.InvalidError):
            self.ctx(0, 1, sparsify=dict(mode="sideways"))
        # A token file that is not there.
        with self.assertRaises(ina.Error) as cm:
            self.ctx(0, 1, token_file="/nonexistent/ina-token")
        self.assertTrue(cm.exception.detail)

    def test_no_switch(self):
        port = inatest.free_port()
        t0 = time.monotonic()
        with self.assertRaises(ina.SwitchError) as cm:
            ina.Context("127.0.0.1:%d" % port, job_id=1, rank=0, world=1, timeout_ms=600)
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(cm.exception.code, -1001)
        self.assertTrue(cm.exception.detail, "the library's sentence")

    def test_switch_killed_and_log(self):
        lines = []

        class Catch(logging.Handler):
            def emit(self, rec):
                lines.append((rec.levelno, rec.getMessage()))

        h = Catch()
        logging.getLogger("ina").addHandler(h)
        try:
            c = self.ctx(0, 2, timeout_ms=1200)
            # Rank 1 never comes; the switch dies while rank 0 waits.
            fut = c.allreduce_async(np.ones(100, dtype=np.float32), tensor_id=1)
            time.sleep(0.1)
            self.sw.kill()
            t0 = time.monotonic()
            with self.assertRaises(ina.Error) as cm:
                fut.result(timeout=20)
            self.assertLess(time.monotonic() - t0, 5, "an error within the timeout")
            self.assertIsInstance(cm.exception, (ina.SwitchError, ina.PeerError))
            self.assertTrue(cm.exception.detail, "the library's sentence")
            with self.assertRaises(ina.Error):
                c.allreduce(np.ones(100, dtype=np.float32), tensor_id=2)
            c.close()
        finally:
            logging.getLogger("ina").removeHandler(h)
        self.assertTrue(any(lv >= logging.WARNING for lv, _ in lines),
                        "the library's warnings reach logging: %r" % lines)

    def test_collected_context_closes(self):
        """A context nobody holds any more is closed: its thread ends."""
        def threads():
            return [t for t in threading.enumerate() if t.name == "ina-progress"]

        before = len(threads())
        c = self.ctx(0, 1)
        c.allreduce(np.ones(10, dtype=np.float32))
        self.assertEqual(len(threads()), before + 1)
        del c
        gc.collect()
        deadline = time.monotonic() + 5
        while len(threads()) > before and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(len(threads()), before)

    def test_bad_library(self):
        """INA_LIBRARY naming no libina: a clear ImportError, no crash."""
        for lib, want in (("/nonexistent/libina.so", "cannot load"),
                          ("libm.so.6", "no ina_version()")):
            p = subprocess.run([sys.executable, "-c", "import ina"], capture_output=True,
                               text=True, timeout=30, env=dict(os.environ, INA_LIBRARY=lib))
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("ImportError", p.stderr)
            self.assertIn(want, p.stderr)

    def test_exit_with_context_open(self):
        """A program that ends with an open context and a pending operation
        exits at once, with status 0 and no abort."""
        prog = ("import ina, numpy as np\n"
                "c = ina.Context(%r, job_id=%d, rank=0, world=2, timeout_ms=5000)\n"
                "f = c.allreduce_async(np.ones(1000, dtype=np.float32), tensor_id=1)\n"
                "d = ina.Context(%r, job_id=%d, rank=0, world=1)\n"
                "d.allreduce(np.ones(10, dtype=np.float32))\n"
                "print('ok')\n" % (self.sw.addr, self.job, self.sw.addr, self.job + 500))
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "ok")
        self.assertLess(time.monotonic() - t0, 10)


if __name__ == "__main__":
    unittest.main(verbosity=2)
