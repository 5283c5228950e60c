"""Helpers the GPU backend's eager kernels share: the array module of kernels without
operands, and the one documented way to run a kernel on the host.

Kernels are written once for any array module (`xp_of(*buffers)`: CuPy on a GPU, NumPy for
the CPU twin and the tests). Two things do not follow from the operands:

- `iota` and `zeros` have no operand to take the module from. They allocate with
  `creation_module()`: the module set by `array_module(xp)` around the call (the backend
  sets CuPy where it runs them on a GPU), NumPy otherwise.
- Where the logic is the NumPy backend's, the NumPy kernel itself is written for any array
  module (an `xp=` keyword, NumPy by default) and `any_module(kernel)` registers it here
  with the operands' module: one implementation, no copy.
- A few primitives have no CuPy routine with the NumPy kernel's semantics (see
  kernels_linalg.py). `on_host(kernel)` runs the NumPy backend's kernel on host copies of
  the operands and copies the results back to the device: the only place where a GPU kernel
  moves data to the host, and the static check in tests/backends/cupy/test_eager_kernels.py
  allows it here only.
"""

import contextlib
import contextvars
import functools

import ml_dtypes
import numpy as np

from mytorch.backends.cupy.kernels import xp_of

__all__ = ["BF16", "F16", "F32", "F64", "any_module", "array_module", "creation_module",
           "log_scan", "on_host", "real_dtype", "stable_argsort"]

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)

_MODULE = contextvars.ContextVar("mytorch_cupy_array_module", default=None)


@contextlib.contextmanager
def array_module(xp):
    """Within the block, kernels without operands (iota, zeros) allocate with `xp`.

    Args:
        xp: an array module (`cupy` or `numpy`).
    """
    token = _MODULE.set(xp)
    try:
        yield xp
    finally:
        _MODULE.reset(token)


def creation_module():
    """The array module kernels without operands allocate with: `array_module`'s, else
    NumPy."""
    xp = _MODULE.get()
    return np if xp is None else xp


def real_dtype(dtype):
    """float32 for complex64, float64 for complex128; real dtypes are their own."""
    return np.finfo(dtype).dtype


def stable_argsort(xp, x, axis=-1):
    """Indices that sort `x` along `axis`, stable on ties; NaNs last (complex: NumPy's
    lexicographic order). CuPy's argsort is always stable and takes no `kind="stable"`."""
    if xp is np:
        return xp.argsort(x, axis=axis, kind="stable")
    return xp.argsort(x, axis=axis)


def log_scan(xp, op, x, axis):
    """Inclusive scan of `x` along `axis` with the associative `op` (a binary ufunc of
    `xp`): after step k every element holds the combination of the 2**k elements ending at
    it. ceil(log2 n) whole-array calls (CuPy's ufuncs accumulate only add and multiply)."""
    n = x.shape[axis]
    out = x.copy()
    lead = (slice(None),) * (axis % max(x.ndim, 1))
    d = 1
    while d < n:
        nxt = out.copy()
        nxt[lead + (slice(d, None),)] = op(out[lead + (slice(None, n - d),)],
                                           out[lead + (slice(d, None),)])
        out, d = nxt, 2 * d
    return out


def any_module(kernel):
    """The GPU kernel of a NumPy backend kernel written for any array module (it takes an
    `xp=` keyword, NumPy by default): `kernel` called with its operands' module, so one
    implementation serves both backends.

    Args:
        kernel: fn(*buffers, xp, **params) -> buffer or list of buffers.
    Returns:
        fn(*buffers, **params) -> buffer or list of buffers, of the operands' array module.
    """

    @functools.wraps(kernel)
    def run(*bufs, **params):
        return kernel(*bufs, xp=xp_of(*bufs), **params)

    return run


def _to_host(x):
    return x.get() if type(x).__module__.startswith("cupy") else x


def on_host(kernel):
    """A GPU kernel that runs `kernel` (a NumPy backend kernel) on host copies of its
    operands and copies its results (a buffer or a list of them) back to the operands'
    device. With NumPy operands it is `kernel` itself.

    Args:
        kernel: fn(*numpy buffers, **params) -> buffer or list of buffers.
    Returns:
        fn(*buffers, **params) -> buffer or list of buffers, of the operands' array module.
    """

    @functools.wraps(kernel)
    def fallback(*bufs, **params):
        xp = xp_of(*bufs)
        if xp is np:
            return kernel(*bufs, **params)
        out = kernel(*(_to_host(b) for b in bufs), **params)
        if isinstance(out, (list, tuple)):
            return [xp.asarray(o) for o in out]
        return xp.asarray(out)

    fallback.runs_on_host = True
    return fallback
