# SPDX-License-Identifier: MIT
"""The library's log lines (stalls, failovers, refusals) into Python's
logging, logger "ina", through ina_set_logger(). The library calls back from
whichever thread logs; the callback only hands the line to logging."""

import ctypes
import logging

from ._lib import LOG_FN, lib

logger = logging.getLogger("ina")

# INA_LEVEL_ERR, WARN, INFO, DEBUG of ina.h and logging's levels.
_TO_LOGGING = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}
_level = 2


@LOG_FN
def _line(level, line, arg):
    try:
        logger.log(_TO_LOGGING.get(level, logging.INFO), "%s",
                   line.decode(errors="replace") if line else "")
    except Exception:  # never let an exception unwind into C
        pass


def set_log_level(level):
    """The most detailed level of the library's lines that reach logging:
    a logging level (logging.DEBUG, ...) or "err", "warn", "info", "debug".
    The logger "ina" filters further as any logger does."""
    global _level
    names = {"err": 0, "error": 0, "warn": 1, "warning": 1, "info": 2, "debug": 3}
    if isinstance(level, str):
        try:
            _level = names[level.lower()]
        except KeyError:
            raise ValueError("ina: log level %r: err, warn, info or debug" % level) from None
    else:
        _level = 0 if level >= logging.ERROR else 1 if level >= logging.WARNING else \
            2 if level >= logging.INFO else 3
    lib.ina_set_logger(_line, None, _level)


def attach():
    lib.ina_set_logger(_line, None, _level)


def detach():
    """Back to the library's stderr (at interpreter exit, before Python's
    objects go away)."""
    lib.ina_set_logger(ctypes.cast(None, LOG_FN), None, 2)
