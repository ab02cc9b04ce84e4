# SPDX-License-Identifier: MIT
"""ina: in-network aggregation for distributed training, from Python.

A ctypes binding over libina (host/include/ina.h): ina.Context joins a job
on an ina switch and reduces numpy arrays and torch tensors (allreduce,
sync or async with an ina.Future; broadcast; barrier; stats); errors are
ina.Error exceptions with the library's sentences; the library's log lines
go to logging's logger "ina". ina.torch holds a communication hook for
torch's DistributedDataParallel. ina.dpdk_start() starts DPDK's EAL for
contexts on a "dpdk:..." port."""

import atexit
import ctypes

from . import _log
from ._context import Context, Future, read_token, shutdown_all as _close_contexts
from ._errors import (Error, SwitchError, RefusedError, PeerError, NumericError, ClosedError,
                      PortError, ProtocolError, InvalidError, BusyError)
from ._lib import lib as _lib, path as library_path, version as _library_version
from ._log import set_log_level

__version__ = "0.2.0"

__all__ = ["Context", "Future", "Error", "SwitchError", "RefusedError", "PeerError",
           "NumericError", "ClosedError", "PortError", "ProtocolError", "InvalidError",
           "BusyError", "dpdk_start", "library_version", "library_path", "read_token",
           "set_log_level"]

_dpdk_argv = None  # EAL may keep pointers into its argv: kept for the process


def library_version():
    """The version of the libina that runs ("MAJOR.MINOR.PATCH")."""
    return _library_version


def dpdk_start(eal_args, name="ina-python"):
    """Starts DPDK's EAL with 'eal_args' (a list of strings, as after "--"
    of ina's programs: ["--no-huge", "-m", "512", "--vdev", "net_memif0,..."])
    and registers the "dpdk:" port (ina_dpdk_start), once per process;
    contexts with port="dpdk:..." then open on it. EAL stops at exit after
    every context is closed. Raises ina.PortError with the library's reason."""
    global _dpdk_argv
    if _dpdk_argv is not None:
        raise RuntimeError("ina: dpdk_start() was already called in this process")
    if not hasattr(_lib, "ina_dpdk_start"):
        raise PortError(-1008, "ina_dpdk_start", "%s was built without the DPDK port"
                        % library_path)
    args = [name] + [str(a) for a in eal_args]
    argv = (ctypes.c_char_p * (len(args) + 1))(*[a.encode() for a in args], None)
    err = ctypes.create_string_buffer(512)
    ret = _lib.ina_dpdk_start(len(args), argv, err, len(err))
    if ret < 0:
        from ._errors import error
        raise error(ret, "ina_dpdk_start", err.value.decode(errors="replace"))
    _dpdk_argv = argv


def _shutdown_all():
    """At interpreter exit: every context closed (its thread stopped and
    joined), then EAL, then the log callback detached."""
    _close_contexts()
    if _dpdk_argv is not None:
        _lib.ina_dpdk_stop()
    _log.detach()


_log.attach()
atexit.register(_shutdown_all)
