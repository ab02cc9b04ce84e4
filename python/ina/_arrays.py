# SPDX-License-Identifier: MIT
"""The buffers ina reduces: numpy arrays and torch tensors as contiguous
float32 memory the C library reads and writes. A contiguous float32 array on
the CPU is passed as it is (zero copy); float16 and bfloat16 (and float32
that is not contiguous, or a tensor on a GPU) go through a float32 copy,
converted back into the output when the operation ends. Other dtypes are a
TypeError. numpy and torch are imported only when such an object comes."""

_SUPPORTED = "float32, float16 or bfloat16 (torch), float32 or float16 (numpy)"


class Stage:
    """One operation's memory: the float32 addresses and length the library
    gets, the objects that must live until it ends, and what to do then."""

    __slots__ = ("in_addr", "out_addr", "n", "keep", "result", "back")

    def __init__(self, in_addr, out_addr, n, keep, result, back):
        self.in_addr, self.out_addr, self.n = in_addr, out_addr, n
        self.keep, self.result, self.back = keep, result, back

    def finish(self):
        """Copies the float32 result into the caller's output (converting
        its dtype) where it was staged; returns the output."""
        if self.back is not None:
            self.back()
        self.keep = None
        return self.result


def _module(x):
    mod = type(x).__module__.split(".")[0]
    if mod in ("numpy", "torch"):
        return mod
    raise TypeError("ina: a numpy array or a torch tensor is needed, not %s" % type(x).__name__)


class _Numpy:
    def __init__(self):
        import numpy
        self.np = numpy
        self.ok = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float16))

    def check(self, x, what):
        if x.dtype not in self.ok:
            raise TypeError("ina: %s has dtype %s; ina takes %s" % (what, x.dtype, _SUPPORTED))

    def direct(self, x, writable):
        return (x.dtype == self.np.float32 and x.flags.c_contiguous and x.flags.aligned
                and (x.flags.writeable or not writable))

    def n(self, x):
        return x.size

    def like(self, x):
        return self.np.empty_like(x, order="C")

    def f32(self, x):
        return self.np.ascontiguousarray(x, dtype=self.np.float32).reshape(-1)

    def empty(self, n):
        return self.np.empty(n, dtype=self.np.float32)

    def addr(self, x):
        return x.ctypes.data

    def copy_back(self, out, buf):
        self.np.copyto(out, buf.reshape(out.shape), casting="unsafe")


class _Torch:
    def __init__(self):
        import torch
        self.torch = torch
        self.ok = (torch.float32, torch.float16, torch.bfloat16)

    def check(self, x, what):
        if x.dtype not in self.ok:
            raise TypeError("ina: %s has dtype %s; ina takes %s" % (what, x.dtype, _SUPPORTED))
        if x.layout != self.torch.strided:
            raise TypeError("ina: %s is a %s tensor; ina takes dense (strided) ones" % (what, x.layout))

    def direct(self, x, writable):
        return x.dtype == self.torch.float32 and x.device.type == "cpu" and x.is_contiguous()

    def n(self, x):
        return x.numel()

    def like(self, x):
        return self.torch.empty_like(x, memory_format=self.torch.contiguous_format)

    def f32(self, x):
        return x.detach().to(device="cpu", dtype=self.torch.float32).contiguous().view(-1)

    def empty(self, n):
        return self.torch.empty(n, dtype=self.torch.float32)

    def addr(self, x):
        return x.data_ptr()

    def copy_back(self, out, buf):
        with self.torch.no_grad():
            out.copy_(buf.view(out.shape))


_adapters = {}


def _adapter(x):
    mod = _module(x)
    a = _adapters.get(mod)
    if a is None:
        a = _adapters[mod] = _Numpy() if mod == "numpy" else _Torch()
    return a


def stage(x, out):
    """The Stage of reducing 'x' into 'out' (None: a new array or tensor like
    'x'; 'x' itself: in place)."""
    a = _adapter(x)
    a.check(x, "the input")
    n = a.n(x)
    if n == 0:
        raise ValueError("ina: the input is empty")
    if out is None:
        out = a.like(x)
    else:
        if _adapter(out) is not a:
            raise TypeError("ina: out must be of the same kind as the input (%s)" % _module(x))
        a.check(out, "out")
        if a.n(out) != n:
            raise ValueError("ina: out has %d elements, the input %d" % (a.n(out), n))
    inbuf = x if a.direct(x, False) else a.f32(x)
    if out is x and inbuf is x:
        outbuf = x
    elif a.direct(out, True):
        outbuf = out
    elif out is x:
        outbuf = inbuf  # the float32 copy of x, reduced in place
    else:
        outbuf = a.empty(n)
    back = None
    if outbuf is not out:
        def back():
            a.copy_back(out, outbuf)
    return Stage(a.addr(inbuf), a.addr(outbuf), n, (x, out, inbuf, outbuf), out, back)
