# SPDX-License-Identifier: MIT
"""ina.Context: one rank of one job over libina, and ina.Future, the end of
an asynchronous operation. Every operation is submitted with ina_i*() and
ended by the context's progress thread, the only caller of ina_poll(): it
sleeps in the port up to POLL_US, moves the transfers on (so they overlap
the caller's computation) and completes the futures. The thread and the
context end in close(), when the Context is collected, or at interpreter
exit (ina._shutdown_all), never later, so nothing hangs or aborts at exit."""

import concurrent.futures
import ctypes
import errno
import os
import threading
import time
import weakref

from . import _arrays
from ._errors import ECLOSED, ClosedError, error
from ._lib import Blocks, BlocksOut, Completion, lib
from ._log import logger

# How long the progress thread sleeps in the port at most when nothing ends:
# also how long close() waits for it to notice.
POLL_US = 20000
_ERR_SIZE = 512

# Live contexts' cores, closed at interpreter exit.
_cores = set()
_cores_lock = threading.Lock()


class Future(concurrent.futures.Future):
    """The end of an asynchronous operation: result(timeout) returns its
    output (the array or tensor) or raises its ina.Error; done(),
    exception(), add_done_callback() as concurrent.futures.Future (callbacks
    run on the context's progress thread). An operation on the wire cannot
    be cancelled: cancel() returns False."""

    def cancel(self):
        return False


def _config_text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _sparsify_items(sparsify):
    if sparsify is None:
        return []
    if isinstance(sparsify, str):
        sparsify = {"mode": sparsify}
    if not isinstance(sparsify, dict):
        raise TypeError("ina: sparsify is a mode (\"topk\", \"filter\", \"both\", \"off\") or a "
                        "dict of struct ina_sparsify's fields, not %s" % type(sparsify).__name__)
    return [("sparsify." + k, v) for k, v in sparsify.items()]


def read_token(token_file=None):
    """The job secret's token (ina_token_from): from 'token_file', or from
    $INA_JOB_TOKEN when it is None."""
    tok = ctypes.c_uint64()
    err = ctypes.create_string_buffer(_ERR_SIZE)
    ret = lib.ina_token_from(os.fsencode(token_file) if token_file else None, ctypes.byref(tok),
                             err, _ERR_SIZE)
    if ret < 0:
        raise error(ret, "the job token", err.value.decode(errors="replace"))
    return tok.value


class _Core:
    """What the progress thread and the finalizer share. It holds no
    reference to its Context, so a Context nobody uses any more is
    collected and closed."""

    def __init__(self, ptr, cfg, timeout_ms):
        self.ptr, self.cfg = ptr, cfg
        self.timeout_s = timeout_ms / 1000.0
        self.lock = threading.Lock()
        self.ended = threading.Condition(self.lock)  # a completion freed a slot
        self.pending = {}  # handle -> (Future, Stage, what)
        self.error = None  # the code that failed the context
        self.stop = False
        self.closed = False
        self.release_here = False  # the thread closes the context as it ends
        self.thread = threading.Thread(target=self._run, name="ina-progress", daemon=True)
        with _cores_lock:
            _cores.add(self)
        self.thread.start()

    def last_error(self):
        if self.closed:
            return ""
        s = lib.ina_last_error(self.ptr)
        return s.decode(errors="replace") if s else ""

    def _complete(self, fut, stage, what, status):
        if status == 0:
            try:
                res = stage.finish()
            except BaseException as e:  # the copy back failed: report it there
                fut.set_exception(e)
                return
            fut.set_result(res)
        else:
            fut.set_exception(error(status, what, self.last_error()))

    def _run(self):
        done = (Completion * 32)()
        while not self.stop:
            n = lib.ina_poll(self.ptr, done, 32, POLL_US)
            if n < 0:
                self._fail(n)
                break
            if n == 0:
                continue
            with self.lock:
                items = [(self.pending.pop(done[i].handle, None), done[i].status)
                         for i in range(n)]
                self.ended.notify_all()
            for item, status in items:
                if item is not None:
                    self._complete(item[0], item[1], item[2], status)
        if self.release_here:  # closed from a callback on this thread
            self._release()

    def _fail(self, code):
        """The context failed: every pending operation ends with its error."""
        detail = self.last_error()
        with self.lock:
            self.error = code
            items = list(self.pending.values())
            self.pending.clear()
            self.ended.notify_all()
        for fut, _, what in items:
            fut.set_exception(error(code, what, detail))

    def submit(self, what, call, stage):
        """Runs call(handle_ptr) (an ina_i*() submission) and returns the
        Future its completion ends; -EBUSY (too many pending) waits for a
        completion, up to the context's timeout."""
        fut = Future()
        h = ctypes.c_uint64()
        deadline = time.monotonic() + self.timeout_s
        with self.lock:
            while True:
                if self.closed:
                    raise ClosedError(ECLOSED, what, "the context is closed")
                if self.error is not None:
                    raise error(self.error, what, self.last_error())
                ret = call(ctypes.byref(h))
                if ret >= 0:
                    break
                left = deadline - time.monotonic()
                if ret != -errno.EBUSY or left <= 0:
                    raise error(ret, what, self.last_error())
                self.ended.wait(min(left, 0.1))
            self.pending[h.value] = (fut, stage, what)
        return fut

    def call(self, what, ret):
        if ret < 0:
            raise error(ret, what, self.last_error())
        return ret

    def shutdown(self, wait):
        """Ends the thread (waiting first for the pending operations when
        'wait'), closes the context, frees the config. Idempotent."""
        if self.closed:
            return
        if wait:
            with self.lock:
                futs = [item[0] for item in self.pending.values()]
            concurrent.futures.wait(futs, timeout=2 * self.timeout_s + 1)
        with self.lock:
            self.closed = True
            self.stop = True
            items = list(self.pending.values())
            self.pending.clear()
            self.ended.notify_all()
        if threading.current_thread() is self.thread:
            self.release_here = True  # _run releases when this callback returns
        else:
            self.thread.join(timeout=2 * self.timeout_s + 1)
            if self.thread.is_alive():
                logger.error("ina: the progress thread did not stop; the context is leaked")
            else:
                self._release()
        for fut, _, what in items:
            if not fut.done():
                fut.set_exception(ClosedError(ECLOSED, what, "the context was closed first"))

    def _release(self):
        if self.ptr is None:
            return
        failed = self.error is not None
        ret = lib.ina_close(self.ptr)
        self.ptr = None
        lib.ina_config_free(self.cfg)
        self.cfg = None
        with _cores_lock:
            _cores.discard(self)
        if ret < 0 and not failed:
            logger.warning("ina: closing the context: %s", lib.ina_strerror(ret).decode())



def shutdown_all():
    """Closes every context still open (interpreter exit)."""
    with _cores_lock:
        cores = list(_cores)
    for core in cores:
        core.shutdown(wait=False)


class Context:
    """One rank of one ina job. switch: "ADDR:PORT" (default $INA_SWITCH);
    token: the job secret's token, or read from token_file or
    $INA_JOB_TOKEN (ina_token_from); sparsify: a mode or a dict of struct
    ina_sparsify's fields (mode="topk", density=0.1, filter_b0=...) for every
    tensor of the job; block_size: elements per block (default: the
    library's, 1024 or what the port's packets hold if less); any other field of struct ina_config by its name
    (rto_us=..., sched="priority", keepalive_ms=..., ...), set with
    ina_config_set(). Opening joins the job (ina_open); errors raise
    ina.Error subclasses with the library's sentence.

    Buffers: numpy float32 arrays and CPU torch float32 tensors that are
    contiguous are reduced in place, without a copy; float16 and bfloat16
    (torch), non-contiguous ones and tensors on a GPU are converted to a
    float32 copy and back (the wire carries float32, or what 'encoding'
    says). Other dtypes are a TypeError."""

    def __init__(self, switch=None, job_id=0, rank=0, world=1, token=None, token_file=None,
                 lanes=64, block_size=None, encoding="f32", port="udp", timeout_ms=10000,
                 sparsify=None, **config):
        switch = switch or os.environ.get("INA_SWITCH")
        if not switch:
            raise ValueError("ina: no switch: pass switch=\"ADDR:PORT\" or set INA_SWITCH")
        if token is None:
            token = read_token(token_file)
        items = [("switch_addr", switch), ("job_id", job_id), ("rank", rank), ("world", world),
                 ("token", token), ("lanes", lanes), ("block_size", block_size),
                 ("encoding", encoding), ("port", port), ("timeout_ms", timeout_ms)]
        items += _sparsify_items(sparsify)
        items += sorted(config.items())
        cfg = lib.ina_config_new()
        if not cfg:
            raise MemoryError("ina: ina_config_new")
        err = ctypes.create_string_buffer(_ERR_SIZE)
        try:
            for key, value in items:
                if value is None:
                    continue
                ret = lib.ina_config_set(cfg, key.encode(), _config_text(value).encode(), err,
                                         _ERR_SIZE)
                if ret < 0:
                    raise error(ret, "config %s=%s" % (key, _config_text(value)),
                                err.value.decode(errors="replace"))
            ptr = ctypes.c_void_p()
            ret = lib.ina_open(cfg, ctypes.byref(ptr), err, _ERR_SIZE)
            if ret < 0:
                raise error(ret, "ina_open", err.value.decode(errors="replace"))
        except BaseException:
            lib.ina_config_free(cfg)
            raise
        self.rank, self.world, self.job_id = rank, world, job_id
        self._core = _Core(ptr.value, cfg, timeout_ms)
        self._finalizer = weakref.finalize(self, self._core.shutdown, False)
        self._finalizer.atexit = False  # ina._shutdown_all does it, in order

    def _ptr(self, what):
        if self._core.closed:
            raise ClosedError(ECLOSED, what, "the context is closed")
        return self._core.ptr

    def allreduce_async(self, x, op="sum", tensor_id=0, out=None, priority=0):
        """Starts the sum (op="sum") or average ("avg") of 'x' over every
        rank (ina_iallreduce) into 'out' (None: a new array or tensor like
        'x'; x: in place) and returns a Future of 'out'. 'x' and 'out' must
        stay unchanged and alive until it ends (the future holds them).
        Every rank submits the same tensor ids and lengths in the same
        order. float16 and bfloat16 are converted to float32 and back."""
        if op not in ("sum", "avg"):
            raise ValueError("ina: op %r: \"sum\" or \"avg\"" % (op,))
        st = _arrays.stage(x, out)
        ptr = self._ptr("allreduce")
        opc = 0 if op == "sum" else 1
        return self._core.submit(
            "allreduce of tensor %d" % tensor_id,
            lambda h: lib.ina_iallreduce(ptr, tensor_id, st.in_addr, st.out_addr, st.n, opc,
                                         priority, h), st)

    def allreduce(self, x, op="sum", tensor_id=0, out=None):
        """The blocking allreduce_async(...).result(): returns 'out'."""
        fut = self.allreduce_async(x, op, tensor_id, out)
        self.flush()
        return fut.result()

    def allreduce_blocks(self, index, values, n, block_size, op="sum", tensor_id=0,
                         dense=None):
        """The block-sparse allreduce (ina_allreduce_blocks): 'index' holds
        the ascending numbers of this rank's blocks of 'block_size' elements
        in a tensor of 'n', 'values' their values (count x block_size, or
        flat), numpy arrays or CPU torch tensors. Returns (index, values) of
        the union of every rank's blocks with their sums (uint32 and
        float32, values shaped count x block_size; torch tensors when
        'values' is one). With 'dense' (a contiguous float32 array or tensor
        of n elements) the sums are also written there, in their blocks
        only. Sends and writes only the listed blocks."""
        import numpy as np
        if op not in ("sum", "avg"):
            raise ValueError("ina: op %r: \"sum\" or \"avg\"" % (op,))
        is_torch = type(values).__module__.split(".")[0] == "torch"
        if is_torch:
            values = values.detach().to(device="cpu")
        if type(index).__module__.split(".")[0] == "torch":
            index = index.detach().to(device="cpu").numpy()
        idx = np.ascontiguousarray(index, dtype=np.uint32).reshape(-1)
        vals = np.ascontiguousarray(np.asarray(values, dtype=np.float32)).reshape(-1)
        if block_size <= 0 or vals.size != idx.size * block_size:
            raise ValueError("ina: %d values for %d blocks of %d" %
                             (vals.size, idx.size, block_size))
        nb = -(-n // block_size)
        out_idx = np.empty(nb, dtype=np.uint32)   # room for any union; pages
        out_vals = np.empty(nb * block_size, dtype=np.float32)  # touched as written
        dense_addr = None
        if dense is not None:
            d = dense.numpy() if type(dense).__module__.split(".")[0] == "torch" else dense
            if (d.dtype != np.float32 or not d.flags.c_contiguous or not d.flags.writeable
                    or d.size != n):
                raise TypeError("ina: dense must be a contiguous, writable float32 array "
                                "of %d elements" % n)
            dense_addr = d.ctypes.data
        bin_ = Blocks(n, block_size, idx.size, idx.ctypes.data if idx.size else None,
                           vals.ctypes.data if vals.size else None)
        bout = BlocksOut(out_idx.ctypes.data, out_vals.ctypes.data, dense_addr, nb, 0)
        ptr = self._ptr("allreduce_blocks")
        ret = lib.ina_allreduce_blocks(ptr, tensor_id, ctypes.byref(bin_), ctypes.byref(bout),
                                       0 if op == "sum" else 1)
        self._core.call("allreduce_blocks of tensor %d" % tensor_id, ret)
        k = bout.count
        ri, rv = out_idx[:k], out_vals[:k * block_size].reshape(k, block_size)
        if is_torch:
            import torch
            return torch.from_numpy(ri.astype(np.int64)), torch.from_numpy(rv)
        return ri, rv

    def broadcast_async(self, x, root=0, tensor_id=0, priority=0):
        """Starts a broadcast of rank 'root''s 'x' into 'x' of every rank
        (ina_ibroadcast); a Future of 'x'."""
        st = _arrays.stage(x, x)
        ptr = self._ptr("broadcast")
        return self._core.submit(
            "broadcast of tensor %d" % tensor_id,
            lambda h: lib.ina_ibroadcast(ptr, tensor_id, st.out_addr, st.n, root, priority, h),
            st)

    def broadcast(self, x, root=0, tensor_id=0):
        """Rank 'root''s 'x' into 'x' of every rank; returns 'x'."""
        fut = self.broadcast_async(x, root, tensor_id)
        self.flush()
        return fut.result()

    def barrier_async(self):
        ptr = self._ptr("barrier")
        return self._core.submit("barrier", lambda h: lib.ina_ibarrier(ptr, h),
                                 _arrays.Stage(0, 0, 0, None, None, None))

    def barrier(self):
        """Returns once every rank reached it (a fence for the scheduler)."""
        self.barrier_async().result()

    def flush(self):
        """Every operation of this step is submitted (ina_flush): the
        scheduler's window ends. Same point on every rank."""
        self._core.call("flush", lib.ina_flush(self._ptr("flush")))

    def residual(self, tensor_id):
        """A copy (numpy float32) of this rank's sparsifier residual of
        'tensor_id', or None when the tensor has no sparsifier yet."""
        import numpy
        n = ctypes.c_size_t()
        with self._core.lock:
            p = lib.ina_residual(self._ptr("residual"), tensor_id, ctypes.byref(n))
            if not p:
                return None
            return numpy.ctypeslib.as_array(p, shape=(n.value,)).copy()

    def stats(self):
        """The context's counters by name (ina_stat_name, ina_stat), and
        "aggregator" (ina_stats_aggregator) and "transport"."""
        ptr = self._ptr("stats")
        out = {}
        v = ctypes.c_double()
        i = 0
        while True:
            name = lib.ina_stat_name(i)
            if name is None:
                break
            i += 1
            if lib.ina_stat(ptr, name, ctypes.byref(v)) < 0:
                continue
            val = v.value
            out[name.decode()] = int(val) if val.is_integer() else val
        agg = lib.ina_stats_aggregator(ptr)
        out["aggregator"] = agg.decode() if agg else ""
        out["transport"] = lib.ina_transport(ptr).decode()
        return out

    @property
    def closed(self):
        return self._core.closed

    def close(self):
        """Waits for the pending operations (each ends within timeout_ms),
        stops the progress thread, says goodbye to the switch (ina_close).
        Idempotent."""
        self._finalizer.detach()
        self._core.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<ina.Context job %d rank %d/%d%s>" % (self.job_id, self.rank, self.world,
                                                      " closed" if self.closed else "")
