# SPDX-License-Identifier: MIT
"""Finds and loads libina.so and declares the C functions of ina.h that the
package calls (ctypes). The search order: $INA_LIBRARY; the library installed
next to this package (PREFIX/lib/python3/dist-packages/ina -> PREFIX/lib,
PREFIX/lib/<multiarch>); the build tree's library, whose path the build
writes into _build_library next to this file; ctypes.util.find_library.
The library's major version must be the one this package was written for."""

import ctypes
import ctypes.util
import os
import sysconfig

# The library version this package speaks: the major must match, the minor
# must be at least this one (0.2 brought the binding calls).
EXPECTED_MAJOR = 0
EXPECTED_MINOR = 2

_HERE = os.path.dirname(os.path.abspath(__file__))


def _installed_candidates():
    libdir = os.path.normpath(os.path.join(_HERE, "..", "..", ".."))
    dirs = [libdir]
    arch = sysconfig.get_config_var("MULTIARCH")
    if arch:
        dirs.append(os.path.join(libdir, arch))
    for d in dirs:
        for name in ("libina.so.%d" % EXPECTED_MAJOR, "libina.so"):
            yield os.path.join(d, name)


def _build_candidate():
    path = os.path.join(_HERE, "_build_library")
    try:
        with open(path, encoding="utf-8") as f:
            lib = f.read().strip()
    except OSError:
        return None
    return lib or None


def _find():
    """The path (or soname) of the library to load, and where it came from."""
    env = os.environ.get("INA_LIBRARY")
    if env:
        return env, "INA_LIBRARY"
    for cand in _installed_candidates():
        if os.path.exists(cand):
            return cand, "installed next to the package"
    cand = _build_candidate()
    if cand and os.path.exists(cand):
        return cand, "the build tree (%s)" % os.path.join(_HERE, "_build_library")
    found = ctypes.util.find_library("ina")
    if found:
        return found, "the system's library path"
    return None, None


def _load():
    path, origin = _find()
    if path is None:
        raise ImportError("ina: libina.so not found: set INA_LIBRARY to its path, install "
                  "ina (cmake --install, or the .deb), or build it (scripts/build)")
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError("ina: cannot load %s (from %s): %s" % (path, origin, e)) from None
    try:
        lib.ina_version.restype = ctypes.c_char_p
        lib.ina_version.argtypes = []
        version = lib.ina_version().decode()
    except AttributeError:
        raise ImportError("ina: %s (from %s) has no ina_version(): not libina 0.2 or later"
                  % (path, origin)) from None
    try:
        major, minor = (int(p) for p in version.split(".")[:2])
    except ValueError:
        raise ImportError("ina: %s says its version is %r" % (path, version)) from None
    if major != EXPECTED_MAJOR or minor < EXPECTED_MINOR:
        raise ImportError("ina: %s (from %s) is libina %s; this package needs %d.%d or a "
                  "later %d.x" % (path, origin, version, EXPECTED_MAJOR, EXPECTED_MINOR,
                          EXPECTED_MAJOR))
    _declare(lib)
    return lib, path, version


class Completion(ctypes.Structure):
    """struct ina_completion (its layout is fixed by the header: 16 bytes)."""
    _fields_ = [("handle", ctypes.c_uint64), ("status", ctypes.c_int32),
            ("reserved", ctypes.c_uint32)]


class Blocks(ctypes.Structure):
    """struct ina_blocks: a rank's blocks of a block-sparse tensor."""
    _fields_ = [("n", ctypes.c_size_t), ("block_size", ctypes.c_uint32),
                ("count", ctypes.c_size_t), ("index", ctypes.c_void_p),
                ("values", ctypes.c_void_p)]


class BlocksOut(ctypes.Structure):
    """struct ina_blocks_out: where the union's sums go."""
    _fields_ = [("index", ctypes.c_void_p), ("values", ctypes.c_void_p),
                ("dense", ctypes.c_void_p), ("capacity", ctypes.c_size_t),
                ("count", ctypes.c_size_t)]


LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)

_P = ctypes.c_void_p
_FP = ctypes.c_void_p    # float * as an address (numpy/torch data pointers)
_U64P = ctypes.POINTER(ctypes.c_uint64)


def _declare(lib):
    def fn(name, restype, *argtypes, optional=False):
        try:
            f = getattr(lib, name)
        except AttributeError:
            if optional:
                return
            raise ImportError("ina: the library lacks %s() of ina.h" % name) from None
        f.restype = restype
        f.argtypes = list(argtypes)

    c = ctypes
    fn("ina_strerror", c.c_char_p, c.c_int)
    fn("ina_config_new", _P)
    fn("ina_config_set", c.c_int, _P, c.c_char_p, c.c_char_p, c.c_char_p, c.c_size_t)
    fn("ina_config_free", None, _P)
    fn("ina_token_from", c.c_int, c.c_char_p, _U64P, c.c_char_p, c.c_size_t)
    fn("ina_open", c.c_int, _P, c.POINTER(c.c_void_p), c.c_char_p, c.c_size_t)
    fn("ina_close", c.c_int, _P)
    fn("ina_iallreduce", c.c_int, _P, c.c_uint32, _FP, _FP, c.c_size_t, c.c_int, c.c_int32, _U64P)
    fn("ina_allreduce_blocks", c.c_int, _P, c.c_uint32, c.POINTER(Blocks), c.POINTER(BlocksOut),
       c.c_int)
    fn("ina_ibroadcast", c.c_int, _P, c.c_uint32, _FP, c.c_size_t, c.c_uint16, c.c_int32, _U64P)
    fn("ina_ibarrier", c.c_int, _P, _U64P)
    fn("ina_flush", c.c_int, _P)
    fn("ina_poll", c.c_int, _P, c.POINTER(Completion), c.c_uint, c.c_uint32)
    fn("ina_stat_name", c.c_char_p, c.c_uint)
    fn("ina_stat", c.c_int, _P, c.c_char_p, c.POINTER(c.c_double))
    fn("ina_stats_aggregator", c.c_char_p, _P)
    fn("ina_residual", c.POINTER(c.c_float), _P, c.c_uint32, c.POINTER(c.c_size_t))
    fn("ina_last_error", c.c_char_p, _P)
    fn("ina_transport", c.c_char_p, _P)
    fn("ina_epoch", c.c_uint32, _P)
    fn("ina_set_logger", None, LOG_FN, c.c_void_p, c.c_int)
    # A library built without the DPDK port may lack these: dpdk_start() says so.
    fn("ina_dpdk_start", c.c_int, c.c_int, c.POINTER(c.c_char_p), c.c_char_p, c.c_size_t,
       optional=True)
    fn("ina_dpdk_stop", None, optional=True)


lib, path, version = _load()
