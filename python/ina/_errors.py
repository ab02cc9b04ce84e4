# SPDX-License-Identifier: MIT
"""ina's error codes as Python exceptions. Every exception carries the code,
the library's name for it (ina_strerror) and, when a context failed, its
sentence saying why (ina_last_error)."""

import errno

from ._lib import lib

# The codes of enum ina_error in ina.h.
ENOSWITCH = -1001
EREFUSED = -1002
EPEER = -1003
ELEFT = -1004
ESATURATED = -1005
ENONFINITE = -1006
ECLOSED = -1007
EPORT = -1008
EPROTO = -1009


class Error(Exception):
    """An error of libina: .code (negative: INA_E* or -errno), .name (what
    ina_strerror() says of the code) and .detail (the context's sentence,
    ina_last_error(), or the one ina_open() wrote; may be "")."""

    def __init__(self, code, what="", detail=""):
        self.code = code
        self.name = lib.ina_strerror(code).decode(errors="replace")
        self.detail = detail or ""
        self.what = what
        msg = "ina: %s: %s" % (what, self.name) if what else "ina: " + self.name
        if self.detail:
            msg += " (%s)" % self.detail
        super().__init__(msg)


class SwitchError(Error):
    """The switch did not answer in time (INA_ENOSWITCH)."""


class RefusedError(Error):
    """The switch refused the job (INA_EREFUSED)."""


class PeerError(Error):
    """Peers did not contribute in time, or a rank left the job (INA_EPEER,
    INA_ELEFT)."""


class NumericError(Error, ArithmeticError):
    """An i32 sum saturated, or a NaN or infinity i32 cannot carry
    (INA_ESATURATED, INA_ENONFINITE)."""


class ClosedError(Error):
    """The context failed earlier or is closed (INA_ECLOSED)."""


class PortError(Error):
    """The transport could not start (INA_EPORT)."""


class ProtocolError(Error):
    """The switch answered against the protocol (INA_EPROTO)."""


class InvalidError(Error, ValueError):
    """Bad arguments (-EINVAL): a value the library does not take."""


class BusyError(Error):
    """Too many operations pending (-EBUSY: cfg.max_pending), or a tensor
    already used."""


_CLASSES = {
    ENOSWITCH: SwitchError, EREFUSED: RefusedError, EPEER: PeerError, ELEFT: PeerError,
    ESATURATED: NumericError, ENONFINITE: NumericError, ECLOSED: ClosedError,
    EPORT: PortError, EPROTO: ProtocolError, -errno.EINVAL: InvalidError,
    -errno.EBUSY: BusyError,
}


def error(code, what="", detail=""):
    """The exception of 'code' (an instance of the right subclass)."""
    return _CLASSES.get(code, Error)(code, what, detail)
