"""Polynomials as coefficient arrays, highest power first (NumPy's `poly1d` order):
polyval, polyadd, polysub, polymul, polyder, polyint."""

import operator

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.numpy._promote import promote_dtypes
from mytorch.numpy.creation import arange, asarray, zeros
from mytorch.numpy.joining import concatenate
from mytorch.numpy.signal import convolve

__all__ = ["polyval", "polyadd", "polysub", "polymul", "polyder", "polyint"]


def _coeffs(name, p):
    p = asarray(p)
    if p.ndim != 1:
        raise user_error(ValueError,
                         f"{name}: the coefficients must be 1-D, got {p.aval.str_short()}")
    return p


def polyval(p, x, *, unroll=16):
    """The polynomial with coefficients `p` (1-D, highest power first) at `x` (any shape),
    by Horner's rule; the result has the promoted dtype of p and x. `unroll` is accepted
    for compatibility: the loop over the coefficients is always unrolled."""
    del unroll
    p = _coeffs("polyval", p)
    p, x = promote_dtypes("polyval", p, asarray(x))
    y = lax.full_like(x, 0)
    for i in range(p.shape[0]):
        y = y * x + p[i]
    return y


def _pad_front(p, n):
    return p if p.shape[0] >= n else concatenate([zeros(n - p.shape[0], p.dtype), p])


def polyadd(a1, a2):
    """The sum of two polynomials (1-D coefficient arrays, highest power first)."""
    a, b = promote_dtypes("polyadd", _coeffs("polyadd", a1), _coeffs("polyadd", a2))
    n = max(a.shape[0], b.shape[0])
    return _pad_front(a, n) + _pad_front(b, n)


def polysub(a1, a2):
    """The difference of two polynomials (1-D coefficient arrays, highest power first)."""
    a, b = promote_dtypes("polysub", _coeffs("polysub", a1), _coeffs("polysub", a2))
    n = max(a.shape[0], b.shape[0])
    return _pad_front(a, n) - _pad_front(b, n)


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials: their coefficients' full convolution (a float
    array, as in JAX). Leading zeros are kept unless `trim_leading_zeros` (which needs
    concrete coefficients)."""
    a, b = _coeffs("polymul", a1), _coeffs("polymul", a2)
    if trim_leading_zeros:
        a, b = _trim(a), _trim(b)
    if a.shape[0] == 0 or b.shape[0] == 0:
        a, b = promote_dtypes("polymul", a, b)
        return zeros(1, dtypes.default_float() if not dtypes.is_float(a.dtype) else a.dtype)
    return convolve(a, b)


def _trim(p):
    first = 0
    while first < p.shape[0] - 1 and float(p[first]) == 0:
        first += 1
    return p[first:]


def _float_coeffs(name, p):
    p = _coeffs(name, p)
    if not dtypes.is_float(p.dtype):
        p = lax.convert_element_type(p, dtypes.default_float())
    return p


def polyder(p, m=1):
    """The `m`-th derivative of the polynomial `p` (a float array)."""
    m = operator.index(m)
    if m < 0:
        raise user_error(ValueError, f"polyder: the order of derivative must be >= 0, got {m}")
    p = _float_coeffs("polyder", p)
    for _ in range(m):
        n = p.shape[0]
        if n <= 1:
            return zeros(0, p.dtype)
        p = p[:-1] * arange(n - 1, 0, -1).astype(p.dtype)
    return p


def polyint(p, m=1, k=None):
    """The `m`-th antiderivative of `p` (a float array), with integration constants `k`
    (a scalar for all, or one per integration, the first used first; default 0)."""
    m = operator.index(m)
    if m < 0:
        raise user_error(ValueError, f"polyint: the order of integral must be >= 0, got {m}")
    p = _float_coeffs("polyint", p)
    k = zeros(m, p.dtype) if k is None else asarray(k).astype(p.dtype)
    if k.ndim == 0:
        k = lax.broadcast_in_dim(k, (m,), ())
    if k.ndim != 1 or k.shape[0] != m:
        raise user_error(ValueError, f"polyint: k must be a scalar or have one constant per "
                         f"integration ({m}), got shape {k.shape}")
    for i in range(m):
        n = p.shape[0]
        p = concatenate([p / arange(n, 0, -1).astype(p.dtype), k[i:i + 1]])
    return p
