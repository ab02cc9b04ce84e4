#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""DistributedDataParallel with ina.torch's hook through a real ina-switch
on 127.0.0.1: ranks are processes (torch.multiprocessing spawn), with a
gloo group on 127.0.0.1 for DDP's own needs. Usage: test_ddp.py CASE, one of

  exact     2 ranks: parameters after 5 steps bit-identical to DDP's
            built-in gloo allreduce (same seed, same data): a sum of two
            floats does not depend on order, and /2 is exact
  bound     4 ranks: every bucket's sum within the f32 bound of the exact
            sum, gamma_3 * sum|x_i| (docs/PROTOCOL.md 7.6), every rank the
            same bits
  half      2 ranks: float16 DDP buckets, and bfloat16 buckets given to the
            hook (gloo cannot start DDP on bfloat16): every bucket exactly the
            float32 sum converted back, then halved
  sparse    2 ranks, top-k then filter sparsifier: per bucket, what came
            back over the steps plus every rank's residual equals the sum of
            the gradients, exactly (dyadic gradients)
  kill      2 ranks: the switch killed mid-step raises in every rank's
            backward within the context's timeout
  dead      2 ranks: rank 1 dies mid-step; rank 0's backward raises the
            ina.PeerError within the switch's peer timeout (1.5 s) and a margin
  pause     2 ranks: rank 0 pauses 6 s, 3x the switch's peer timeout, while
            rank 1 waits in a step; the job survives (the library's keepalives,
            every 250 ms)

Exit 77 without torch (a failure with INA_REQUIRE_TORCH=1)."""

import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inatest  # noqa: E402

torch = inatest.require_torch()
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import ina.torch as it  # noqa: E402

STEPS = 5


def init(rank, world, master_port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(master_port)
    torch.set_num_threads(1)
    # DDP puts its first bucket's first 1 MiB together (its documented
    # knob): small, so that these small models make several buckets once
    # DDP rebuilds them after step 0 (one bucket at step 0).
    dist._DEFAULT_FIRST_BUCKET_BYTES = 1024
    dist.init_process_group("gloo", rank=rank, world_size=world)


def mlp(dtype=torch.float32):
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16),
                               torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(dtype)


def batch(rank, step, dtype=torch.float32):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(8, 20, generator=g).to(dtype), torch.randint(0, 4, (8,), generator=g)


def train(model, rank, steps, dtype=torch.float32, on_step=None):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(steps):
        if on_step:
            on_step(step)
        x, y = batch(rank, step, dtype)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        loss.backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def recording_hook(records):
    """allreduce_hook, recording each bucket's input and output (sum)."""
    def hook(state, bucket):
        buf = bucket.buffer()
        rec = {"step": state.steps, "index": bucket.index(), "in": buf.detach().clone()}
        records.append(rec)
        fut = it.allreduce_hook(state, bucket)

        def keep(f):
            rec["out"] = f.value().detach().clone()
            return f.value()
        return fut.then(keep)
    return hook


def hook_state(switch, **kw):
    kw.setdefault("timeout_ms", 8000)
    return it.HookState(switch=switch, **kw)


# --- the cases, each run in every rank -----------------------------------

def case_exact(rank, world, port, switch, tmp):
    init(rank, world, port)
    state = hook_state(switch)
    model = DDP(mlp(), bucket_cap_mb=0.002)
    model.register_comm_hook(state, it.allreduce_hook)
    got = train(model, rank, STEPS)
    st = state.stats()
    ref = train(DDP(mlp(), bucket_cap_mb=0.002), rank, STEPS)
    for a, b in zip(got, ref):
        assert torch.equal(a, b), "rank %d: ina and gloo differ by %g" % (rank, (a - b).abs().max())
    assert len(state._ids) >= 3, "the model made %d buckets, want several" % len(state._ids)
    assert st["rounds"] > STEPS and st["bytes_sent"] > 0, st
    assert state.steps == STEPS, state.steps
    # The run cannot pass with no reduction: a rank alone moves elsewhere.
    alone = train(mlp(), rank, STEPS)
    assert any(not torch.equal(a, b) for a, b in zip(got, alone))
    state.close()
    if rank == 0:
        print("exact: %d buckets (ids), %d rounds, %d bytes sent by rank 0, parameters "
              "bit-identical to gloo after %d steps" % (len(state._ids), st["rounds"],
                                                      st["bytes_sent"], STEPS))


def case_bound(rank, world, port, switch, tmp):
    init(rank, world, port)
    state = hook_state(switch)
    model = DDP(mlp(), bucket_cap_mb=0.002)
    records = []
    model.register_comm_hook(state, recording_hook(records))
    train(model, rank, STEPS)
    state.close()
    everyone = [None] * world
    dist.all_gather_object(everyone, records)
    if rank != 0:
        return
    u = 2.0 ** -24
    gamma = (world - 1) * u / (1 - (world - 1) * u)
    worst, n, inexact = 0.0, 0, 0
    for i, rec in enumerate(records):
        ins = [everyone[r][i]["in"].double() for r in range(world)]
        for r in range(world):
            assert everyone[r][i]["index"] == rec["index"]
            assert torch.equal(everyone[r][i]["out"], rec["out"]), "ranks got different bits"
        exact = sum(ins)
        got = rec["out"].double() * world  # the hook divided by 4: exact
        bound = gamma * sum(x.abs() for x in ins)
        err = (got - exact).abs()
        assert bool((err <= bound).all()), "bucket %d step %d: error %g over the bound %g" % (
            rec["index"], rec["step"], (err - bound).max(), bound.max())
        worst = max(worst, float((err / bound.clamp_min(1e-300)).max()))
        inexact += int((err > 0).sum())
        n += err.numel()
    print("bound: %d buckets x %d ranks, %d elements, %d not exact, worst error %.3f of "
          "gamma_3 * sum|x|" % (len(records), world, n, inexact, worst))


class Elementwise(torch.nn.Module):
    """A model of elementwise operations, which CPU float16 has."""

    def __init__(self, dtype):
        super().__init__()
        torch.manual_seed(2)
        self.a = torch.nn.Parameter(torch.randn(700).to(dtype))
        self.b = torch.nn.Parameter(torch.randn(600).to(dtype))

    def forward(self, x):
        return (x[:700] * self.a).pow(2).sum() + (x[700:] * self.b).sum()


class Bucket:
    """What the hook reads of DDP's GradBucket (buffer, index, is_last):
    DDP itself cannot hold bfloat16 parameters on gloo, whose broadcast
    (DDP's start) has no bfloat16."""

    def __init__(self, buf, index, last):
        self.buf, self.i, self.last = buf, index, last

    def buffer(self):
        return self.buf

    def index(self):
        return self.i

    def is_last(self):
        return self.last


def check_half(rank, world, dtype, records):
    everyone = [None] * world
    dist.all_gather_object(everyone, records)
    for i, rec in enumerate(records):
        assert rec["out"].dtype == dtype
        f32sum = sum(everyone[r][i]["in"].float() for r in range(world))
        want = f32sum.to(dtype).div_(world)
        assert torch.equal(rec["out"], want), "%s bucket %d: %g off" % (
            dtype, rec["index"], (rec["out"].float() - want.float()).abs().max())
    if rank == 0:
        print("half: %s, %d bucket reductions, each exactly the f32 sum rounded to %s, halved" % (
            dtype, len(records), dtype))


def case_half(rank, world, port, switch, tmp):
    init(rank, world, port)
    # float16: DDP's buckets of a float16 model.
    state = hook_state(switch)
    model = DDP(Elementwise(torch.float16), bucket_cap_mb=0.001)
    records = []
    model.register_comm_hook(state, recording_hook(records))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(3):
        g = torch.Generator().manual_seed(10 * step + rank)
        x = torch.randn(1300, generator=g).to(torch.float16)
        opt.zero_grad()
        model(x).float().backward()
        opt.step()
    state.close()
    assert len({r["index"] for r in records}) > 1, [(r["index"], r["in"].numel()) for r in records]
    check_half(rank, world, torch.float16, records)
    # bfloat16: the hook on bfloat16 buckets, three steps of two.
    state = hook_state(switch)
    records = []
    for step in range(3):
        for i, n in enumerate((700, 300)):
            g = torch.Generator().manual_seed(100 * step + 10 * i + rank)
            buf = torch.randn(n, generator=g).to(torch.bfloat16)
            rec = {"index": i, "in": buf.clone()}
            out = it.allreduce_hook(state, Bucket(buf, i, i == 1)).wait()
            assert out is buf or out.data_ptr() == buf.data_ptr()
            rec["out"] = out.clone()
            records.append(rec)
    state.close()
    check_half(rank, world, torch.bfloat16, records)


class Dyadic(torch.nn.Module):
    """loss = sum(p * c): the gradient of p is c, dyadic data (k/16)."""

    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(torch.zeros(1500))
        self.q = torch.nn.Parameter(torch.zeros(700))

    def forward(self, c):
        return (self.p * c[:1500]).sum() + (self.q * c[1500:]).sum()


def case_sparse(rank, world, port, switch, tmp):
    init(rank, world, port)
    for sp in (dict(mode="topk", density=0.25), dict(mode="filter", filter_b0=20.0)):
        state = hook_state(switch, sparsify=sp, block_size=64)
        model = DDP(Dyadic(), bucket_cap_mb=0.004)
        records = []
        model.register_comm_hook(state, recording_hook(records))
        for step in range(6):
            g = torch.Generator().manual_seed(100 * step + rank)
            c = torch.randint(-512, 512, (2200,), generator=g).float() / 16
            c[torch.rand(2200, generator=g) < 0.5] = 0
            model.zero_grad()
            model(c).backward()
        res = {key: state.residual(*key) for key in state._ids}
        st = state.stats()
        state.close()
        everyone = [None] * world
        dist.all_gather_object(everyone, (records, res))
        if rank != 0:
            continue
        total_sent = 0.0
        for key in state._ids:
            idx, length = key
            grads = torch.zeros(length, dtype=torch.float64)
            back = torch.zeros(length, dtype=torch.float64)
            for r in range(world):
                for rec in everyone[r][0]:
                    if rec["index"] == idx and rec["in"].numel() == length:
                        grads += rec["in"].double()
                        if r == 0:
                            back += rec["out"].double() * world
                resid = everyone[r][1][key]
                assert resid is not None, "no residual for bucket %s" % (key,)
                grads -= torch.from_numpy(resid).double()
            assert torch.equal(back, grads), "%s bucket %s: came back + residuals != gradients "\
                "(off by %g)" % (sp["mode"], key, (back - grads).abs().max())
            total_sent += float(back.abs().sum())
        assert st["sparse_rounds"] > 0, st
        held = sum(float(abs(everyone[r][1][k]).sum()) for r in range(world) for k in state._ids)
        assert held > 0, "the sparsifier held nothing back: the test would prove nothing"
        print("sparse %s: %d buckets, %d sparsified rounds, came back + residuals == gradients "
              "exactly (residual mass %g)" % (sp["mode"], len(state._ids), st["sparse_rounds"],
                                              held))


def case_kill(rank, world, port, switch, tmp, switch_pid):
    init(rank, world, port)
    timeout_ms = 1500
    state = hook_state(switch, timeout_ms=timeout_ms)
    model = DDP(mlp(), bucket_cap_mb=0.002)
    killed_at = os.path.join(tmp, "killed")

    def hook(state, bucket):
        if rank == 0 and state.steps == 2 and bucket.index() == 1 and not os.path.exists(killed_at):
            os.kill(switch_pid, signal.SIGKILL)
            with open(killed_at, "w") as f:
                f.write(repr(time.time()))
        return it.allreduce_hook(state, bucket)

    model.register_comm_hook(state, hook)
    err = None
    try:
        train(model, rank, 20)
    except Exception as e:
        err = e
    t = time.time()
    assert err is not None, "rank %d: training went on with the switch dead" % rank
    with open(killed_at) as f:
        after = t - float(f.read())
    assert after < timeout_ms / 1000 * 2 + 3, "rank %d raised %.1f s after the kill" % (rank, after)
    msg = str(err)
    assert "ina: allreduce" in msg and ("SwitchError" in msg or "PeerError" in msg), \
        "rank %d: %r" % (rank, err)
    print("kill: rank %d raised %.2f s after the switch died: %s: %s" % (
        rank, after, type(err).__name__, msg.splitlines()[0][:200]))
    os._exit(0)  # DDP's reducer is mid-step: no orderly teardown of the group


def case_dead(rank, world, port, switch, tmp):
    init(rank, world, port)
    state = hook_state(switch, timeout_ms=10000)
    model = DDP(mlp(), bucket_cap_mb=0.002)
    died_at = os.path.join(tmp, "died")

    def hook(state, bucket):
        if rank == 1 and state.steps == 2 and bucket.index() == 1:
            with open(died_at, "w") as f:
                f.write(repr(time.time()))
            os._exit(0)  # a rank that dies mid-step, saying nothing
        return it.allreduce_hook(state, bucket)

    model.register_comm_hook(state, hook)
    err = None
    try:
        train(model, rank, 20)
    except Exception as e:
        err = e
    assert err is not None, "rank 0: training went on without rank 1"
    with open(died_at) as f:
        after = time.time() - float(f.read())
    msg = str(err)
    assert "PeerError" in msg, msg
    assert after < 1.5 + 4, "rank 0 raised %.1f s after rank 1 died (peer timeout 1.5 s)" % after
    print("dead: rank 0 raised %.2f s after rank 1 died (peer timeout 1.5 s): %s" % (
        after, msg.splitlines()[0][:200]))
    os._exit(0)


def case_pause(rank, world, port, switch, tmp):
    init(rank, world, port)
    state = hook_state(switch, timeout_ms=10000, keepalive_ms=250)
    model = DDP(mlp(), bucket_cap_mb=0.002)
    model.register_comm_hook(state, it.allreduce_hook)
    t0 = [0.0]

    def on_step(step):
        if step == 2 and rank == 0:
            time.sleep(6.0)  # evaluation, a checkpoint: 3x the peer timeout
        if step == 2:
            t0[0] = time.monotonic()

    got = train(model, rank, 4, on_step=on_step)
    waited = time.monotonic() - t0[0]
    state.close()
    everyone = [None] * world
    dist.all_gather_object(everyone, [p.numpy() for p in got])
    for a, b in zip(everyone[0], everyone[1]):
        assert (a == b).all()
    if rank == 1:
        assert waited > 5.5, "rank 1 did not wait for rank 0 (%.1f s)" % waited
        print("pause: rank 1 waited %.1f s in a step for rank 0 (peer timeout 2 s); the job "
              "went on" % waited)


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    cases = {"exact": (case_exact, 2, ()), "bound": (case_bound, 4, ()),
             "half": (case_half, 2, ()), "sparse": (case_sparse, 2, ()),
             "kill": (case_kill, 2, ()), "dead": (case_dead, 2, ("--peer-timeout-ms", "1500")),
             "pause": (case_pause, 2, ("--peer-timeout-ms", "2000"))}
    if case not in cases:
        sys.exit("usage: test_ddp.py " + "|".join(cases))
    fn, world, sw_args = cases[case]
    master = inatest.free_port(inatest.socket.SOCK_STREAM)
    with inatest.Switch(*sw_args) as sw, tempfile.TemporaryDirectory() as tmp:
        args = (world, master, sw.addr, tmp)
        if case == "kill":
            args += (sw.proc.pid,)
        t0 = time.monotonic()
        try:
            mp.spawn(fn, args=args, nprocs=world, join=True)
        except Exception as e:
            print("FAIL %s: %s" % (case, e))
            print("--- switch log\n" + sw.text())
            sys.exit(1)
        print("%s: %d ranks, %.1f s" % (case, world, time.monotonic() - t0))


if __name__ == "__main__":
    main()
