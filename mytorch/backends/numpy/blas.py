"""NumPy's own BLAS, called directly for what `np.matmul` cannot ask of it: a product added
into an existing matrix (GEMM's beta = 1).

`gemm_update(c, a, b, alpha, source)` computes `c = source + alpha * (a @ b)` with one
sgemm/dgemm call: the update `p - lr * (a @ b)` of a plain SGD step with donated parameters
then writes into `p` during the product, instead of a pass reading the product and `p` and
writing the result (dot_update.py rewrites such updates).

The library is the one NumPy itself loaded (the `scipy-openblas` of NumPy's wheels, found
among the process's mapped files), so it runs with NumPy's threads and settings. Only the
64-bit-integer interface is used (`scipy_cblas_sgemm64_` / `cblas_sgemm64_`), whose
argument widths cannot be mistaken; where it is absent (another BLAS, another platform)
`available()` is False and callers keep NumPy's products.
"""

import ctypes
import functools
import os

import numpy as np

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_PREFIXES = ("scipy_cblas_", "cblas_")


def _mapped_libraries():
    """Paths of the shared libraries mapped into this process whose name mentions blas,
    NumPy's own (under its package's folder or its wheel's numpy.libs) first."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[-1].strip() for line in f if ".so" in line}
    except OSError:
        return []
    found = [p for p in paths if "blas" in os.path.basename(p).lower() and os.path.isfile(p)]
    return sorted(found, key=lambda p: ("numpy" not in p, p))


@functools.lru_cache(maxsize=None)
def _gemm(letter):
    """ctypes function of NumPy's ILP64 cblas_?gemm for `letter` ("s", "d"), or None."""
    np.matmul(np.ones((2, 2)), np.ones((2, 2)))  # NumPy's BLAS is loaded by now
    for path in _mapped_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            fn = getattr(lib, f"{prefix}{letter}gemm64_", None)
            if fn is not None:
                i, n = ctypes.c_int, ctypes.c_int64
                real = ctypes.c_float if letter == "s" else ctypes.c_double
                p = ctypes.c_void_p
                fn.argtypes = [i, i, i, n, n, n, real, p, n, p, n, real, p, n]
                fn.restype = None
                return fn
    return None


_LETTERS = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}


def available(dtype):
    """Whether `gemm_update` can run for `dtype` here."""
    letter = _LETTERS.get(np.dtype(dtype))
    return letter is not None and _gemm(letter) is not None


def _operand(x):
    """(transpose flag, leading dimension) of a 2-D matrix for row-major GEMM, or None when
    neither its rows nor its columns are contiguous."""
    item = x.itemsize
    rows, cols = x.shape
    s0, s1 = x.strides
    if (s1 == item or cols == 1) and s0 % item == 0 and s0 // item >= max(cols, 1):
        return _NO_TRANS, s0 // item
    if (s0 == item or rows == 1) and s1 % item == 0 and s1 // item >= max(rows, 1):
        return _TRANS, s1 // item
    return None


def gemm_update(c, a, b, alpha, source=None):
    """`c = source + alpha * (a @ b)` (source: c itself when None) by one GEMM with beta = 1
    (c f[m, n] C-contiguous, a f[m, k], b f[k, n], one float dtype, each operand's rows or
    columns contiguous, c sharing no memory with a or b, m, n, k > 0). Returns False, having
    written nothing, where it cannot: the caller computes it otherwise."""
    letter = _LETTERS.get(c.dtype)
    fn = _gemm(letter) if letter is not None else None
    if fn is None or not (a.dtype == b.dtype == c.dtype) or not c.flags.c_contiguous:
        return False
    m, k = a.shape
    n = b.shape[1]
    if 0 in (m, n, k) or np.may_share_memory(c, a) or np.may_share_memory(c, b):
        return False
    la, lb = _operand(a), _operand(b)
    if la is None or lb is None:
        return False
    if source is not None and source is not c:
        np.copyto(c, source)
    fn(_ROW_MAJOR, la[0], lb[0], m, n, k, alpha, a.ctypes.data, la[1], b.ctypes.data, lb[1],
       1.0, c.ctypes.data, n)
    return True
