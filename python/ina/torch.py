# SPDX-License-Identifier: MIT
"""A communication hook for torch's DistributedDataParallel that reduces the
gradient buckets through an ina switch:

    import ina.torch
    state = ina.torch.HookState()                        # after init_process_group
    model.register_comm_hook(state, ina.torch.allreduce_hook)

Each bucket goes to ina (ina_iallreduce) as soon as DDP hands it over, and
the hook returns at once: buckets are on the wire while backward computes
the next ones; the context's progress thread completes the torch future.
The last bucket of a step ends the scheduler's window (ina_flush). The
result is the average as DDP's own allreduce makes it (sum, then divided by
the world size). An ina error sets the future's exception, so it raises in
the training loop (in loss.backward()) within the context's timeout.

The job: its id is agreed through the process group's store (rank 0 draws
it, the others read it), or given; its secret comes from $INA_JOB_TOKEN or
a token file on every rank, never through the store; the switch from the
argument or $INA_SWITCH. The ina context opens on the first bucket, with the
rank and world of the process group. DDP rebuilds its buckets after the
first step, so a bucket is named by (index, length), mapped to a tensor id
in the order the buckets come, which is the same on every rank.

float16 and bfloat16 buckets are reduced in float32 and converted back; a
bucket on a GPU is copied to the CPU and back."""

import itertools
import os
import secrets
import threading

import torch
import torch.distributed as dist

import ina

__all__ = ["HookState", "allreduce_hook"]

_state_seq = itertools.count()


def _store_of(group):
    """The store of torch.distributed's default group (the one
    init_process_group made), which every group's ranks share."""
    from torch.distributed import distributed_c10d as c10d
    return c10d._get_default_store()


class HookState:
    """The state of allreduce_hook for one DDP model: where the job runs
    and its ina context. Create it after init_process_group, on every rank
    in the same order. process_group: DDP's group (default: the world);
    switch: "ADDR:PORT" (default $INA_SWITCH); token_file: the job secret's
    file (default $INA_JOB_TOKEN); job_id: the ina job (default: drawn by
    rank 0 and shared through the store); sparsify: ina's sparsifier for
    every bucket (a mode, or a dict of struct ina_sparsify's fields, e.g.
    dict(mode="topk", density=0.1)), with residuals kept per bucket;
    the other arguments are ina.Context's (any ina_config field by name)."""

    def __init__(self, process_group=None, switch=None, token_file=None, job_id=None,
                 sparsify=None, lanes=64, block_size=None, encoding="f32", port="udp",
                 timeout_ms=10000, **config):
        if not dist.is_initialized():
            raise RuntimeError("ina.torch.HookState: call torch.distributed.init_process_group "
                               "first")
        self.process_group = process_group
        group = process_group if process_group is not None else dist.group.WORLD
        self.rank = dist.get_rank(group)
        self.world = dist.get_world_size(group)
        self.switch = switch or os.environ.get("INA_SWITCH")
        if not self.switch:
            raise ValueError("ina.torch.HookState: no switch: pass switch=\"ADDR:PORT\" or set "
                             "INA_SWITCH")
        # The secret on every rank, now: a missing token fails here, not in backward.
        self._token = ina.read_token(token_file)
        seq = next(_state_seq)
        if job_id is None:
            job_id = self._agree_job_id(group, seq)
        self.job_id = job_id
        self._config = dict(lanes=lanes, block_size=block_size, encoding=encoding, port=port,
                            timeout_ms=timeout_ms, sparsify=sparsify, **config)
        self._ctx = None
        self._open_lock = threading.Lock()
        self._ids = {}  # (bucket index, length) -> tensor id
        self.steps = 0  # last buckets seen

    def _agree_job_id(self, group, seq):
        """Rank 0 of the group draws the job id and sets it in the store;
        every rank reads it (the store's get waits for the set)."""
        store = _store_of(group)
        ranks = dist.get_process_group_ranks(group) if hasattr(
            dist, "get_process_group_ranks") else list(range(self.world))
        key = "ina.torch/job_id/%s/%d" % ("-".join(map(str, ranks)), seq)
        if self.rank == 0:
            store.set(key, str(secrets.randbelow(2**31 - 2) + 1))
        return int(store.get(key))

    def context(self):
        """The ina.Context of this rank, opened on first use."""
        with self._open_lock:
            if self._ctx is None:
                self._ctx = ina.Context(self.switch, job_id=self.job_id, rank=self.rank,
                                        world=self.world, token=self._token, **self._config)
            return self._ctx

    def tensor_id(self, index, length):
        """The ina tensor id of DDP's bucket 'index' of 'length' elements."""
        key = (index, length)
        tid = self._ids.get(key)
        if tid is None:
            tid = self._ids[key] = len(self._ids)
        return tid

    def stats(self):
        """The context's counters (ina.Context.stats), {} before the first
        bucket."""
        return self._ctx.stats() if self._ctx is not None else {}

    def residual(self, index, length):
        """This rank's sparsifier residual of bucket (index, length) as a
        numpy array, or None."""
        tid = self._ids.get((index, length))
        if tid is None or self._ctx is None:
            return None
        return self._ctx.residual(tid)

    def close(self):
        """Closes the context (also done at interpreter exit)."""
        if self._ctx is not None:
            self._ctx.close()

    def __getstate__(self):
        raise TypeError("ina.torch.HookState holds a live context: it cannot be pickled")


def allreduce_hook(state, bucket):
    """DDP communication hook: the bucket's gradients summed through ina,
    divided by the world size, as DDP's default allreduce does. Returns a
    torch.futures.Future of the bucket's tensor, completed (or failed with
    the ina.Error, which backward() then raises as a RuntimeError naming it)
    by the context's progress thread."""
    fut = torch.futures.Future()
    buf = bucket.buffer()
    try:
        ctx = state.context()
        tid = state.tensor_id(bucket.index(), buf.numel())
        ifut = ctx.allreduce_async(buf, op="sum", tensor_id=tid, out=buf)
        if bucket.is_last():
            state.steps += 1
            ctx.flush()
    except Exception as e:
        fut.set_exception(e)
        return fut.then(_value)
    world = state.world

    def done(f):
        e = f.exception()
        if e is not None:
            fut.set_exception(e)
            return
        try:
            with torch.no_grad():
                buf.div_(world)
        except Exception as e2:
            fut.set_exception(e2)
            return
        fut.set_result(buf)

    ifut.add_done_callback(done)
    return fut.then(_value)


def _value(fut):
    """The tensor, or the exception raised: DDP's reducer (C++) sees a
    future that failed (set_exception alone only fails it for Python)."""
    return fut.wait()
