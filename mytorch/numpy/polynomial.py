"""Polynomials as coefficient arrays, highest power first (NumPy's `poly1d` order):
polyval, polyadd, polysub, polymul, polyder, polyint, polyfit, vander, and roots and poly
(through the eigenvalues of the companion matrix and back)."""

import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.core.trace import Tracer
from mytorch.errors import ConcretizationTypeError
from mytorch.lax import linalg as lax_linalg
from mytorch.numpy import reductions as _reductions
from mytorch.numpy._promote import promote_dtypes
from mytorch.numpy.comparisons import where
from mytorch.numpy.creation import arange, asarray, zeros
from mytorch.numpy.joining import concatenate
from mytorch.numpy.signal import convolve

__all__ = ["polyval", "polyadd", "polysub", "polymul", "polyder", "polyint", "polyfit",
           "vander", "roots", "poly"]


def _coeffs(name, p):
    p = asarray(p)
    if p.ndim != 1:
        raise user_error(ValueError,
                         f"{name}: the coefficients must be 1-D, got {p.aval.str_short()}")
    return p


def polyval(p, x, *, unroll=16):
    """The polynomial with coefficients `p` (highest power first along p's first axis) at
    `x`, by Horner's rule; as NumPy, p's other axes broadcast against x, so p of shape
    (n, *s) gives the broadcast of s and x.shape. The result has the promoted dtype of p
    and x. `unroll` is accepted for compatibility: the loop over the coefficients is
    always unrolled."""
    del unroll
    p = asarray(p)
    if p.ndim == 0:
        raise user_error(ValueError, f"polyval: the coefficients must be at least 1-D, got "
                                     f"{p.aval.str_short()}")
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
        return zeros(1, dtypes.default_float() if not dtypes.is_inexact(a.dtype) else a.dtype)
    return convolve(a, b)


def _trim(p):
    first = 0
    while first < p.shape[0] - 1 and float(p[first]) == 0:
        first += 1
    return p[first:]


def _float_coeffs(name, p):
    p = _coeffs(name, p)
    if not dtypes.is_inexact(p.dtype):
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


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-D `x`: [n] -> [n, N], column j is x**(N-1-j)
    (x**j with `increasing`); N defaults to n."""
    x = _coeffs("vander", x)
    n = x.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise user_error(ValueError, f"vander: N must be non-negative, got {n}")
    powers = arange(n) if increasing else arange(n - 1, -1, -1)
    return x[:, None] ** powers.astype(x.dtype)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial fit of degree `deg` (NumPy's): x [n], y [n] or [n, k] ->
    coefficients [deg + 1] or [deg + 1, k], highest power first.

    `w` weights the residuals (1/sigma); `rcond` is the singular-value cutoff relative to
    the largest (default len(x) * eps). `full=True` returns (coefficients, residuals,
    rank, singular values, rcond); `cov=True` (or "unscaled") also the coefficients'
    covariance, scaled by the residual variance unless "unscaled"."""
    from mytorch.numpy.linalg import inv, lstsq  # (linalg's modules import polynomial's)

    deg = operator.index(deg)
    if deg < 0:
        raise user_error(ValueError, f"polyfit: deg must be non-negative, got {deg}")
    x = _float_coeffs("polyfit", x)
    y = asarray(y)
    if y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise user_error(TypeError, f"polyfit: y must be [n] or [n, k] with n = len(x) = "
                                    f"{x.shape[0]}, got {y.aval.str_short()}")
    x, y = promote_dtypes("polyfit", x, y)
    order = deg + 1
    if rcond is None:
        rcond = x.shape[0] * float(dtypes.finfo(x.dtype).eps)
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = asarray(w)
        if w.shape != (x.shape[0],):
            raise user_error(TypeError, f"polyfit: w must be [{x.shape[0]}], got "
                                        f"{w.aval.str_short()}")
        lhs = lhs * w[:, None]
        rhs = rhs * (w if rhs.ndim == 1 else w[:, None])
    scale = lax.sqrt(lax.reduce_sum(lhs * lhs, (0,)))  # unit-norm columns: better conditioned
    lhs = lhs / scale
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, rcond
    if cov:
        base = inv(lhs.T @ lhs) / (scale[:, None] * scale[None, :])
        if cov == "unscaled":
            fac = 1.0
        else:
            if x.shape[0] <= order:
                raise user_error(ValueError, "polyfit: the data must have more points than "
                                             "the degree + 1 to scale the covariance")
            fac = resids / (x.shape[0] - order)
        return (c, base * fac) if c.ndim == 1 else (c, base[:, :, None] * fac)
    return c


def _concrete(op, p, hint):
    """The values of `p` as a NumPy array: concrete arrays are read, traced ones raise."""
    if isinstance(p, Tracer):
        value = p.concrete_value()
        if value is None:
            raise user_error(ConcretizationTypeError,
                             f"{op}: needs concrete coefficients, but got a traced "
                             f"{p.aval.str_short()}; {hint}")
        return np.asarray(value)
    return np.asarray(p)


def _companion_eigvals(p):
    """The roots of p [n] (p[0] != 0) as the eigenvalues of its companion matrix."""
    n = p.shape[0]
    first_row = (-p[1:] / p[0])[None, :]
    below = lax.convert_element_type(np.eye(n - 2, n - 1), p.dtype)
    companion = concatenate([first_row, below])
    return lax_linalg.eig(companion, compute_left_eigenvectors=False,
                          compute_right_eigenvectors=False)[0]


def roots(p, *, strip_zeros=True):
    """The roots of the polynomial with coefficients `p` (1-D, highest power first), as the
    eigenvalues of its companion matrix: complex [n - 1] (complex64 for float32 p), in no
    particular order, always complex (as JAX).

    With `strip_zeros` (NumPy's behaviour; the coefficients must be concrete), leading zeros
    are dropped and trailing zeros give exact zero roots at the end. With
    `strip_zeros=False` (traceable, as JAX), each leading zero gives a NaN root instead.

    >>> mnp.roots(mnp.array([1., -3., 2.]))
    Array([2.+0.j, 1.+0.j], dtype=complex64)
    """
    p = asarray(p)
    p = _float_coeffs("roots", p[None] if p.ndim == 0 else p)
    cdtype = dtypes.complex_dtype(p.dtype)
    if strip_zeros:
        values = _concrete("roots", p, "pass strip_zeros=False to trace it (leading zeros "
                                       "then give NaN roots)")
        nonzero = np.flatnonzero(values)
        if nonzero.size == 0:
            return zeros(0, cdtype)
        p = p[nonzero[0]:nonzero[-1] + 1]
        trailing = values.shape[0] - 1 - nonzero[-1]
        found = _companion_eigvals(p) if p.shape[0] > 1 else zeros(0, cdtype)
        return concatenate([found, zeros(trailing, cdtype)])
    n = p.shape[0]
    if n < 2:
        return zeros(0, cdtype)
    is_zero = p == 0
    leading = where(_reductions.all(is_zero), n, _reductions.argmin(is_zero)).astype(dtypes.int32)
    # the leading zeros rotated to the end become zero roots, which are then replaced by NaN
    shifted = p[(arange(n) + leading) % n]
    shifted = where(leading == n, lax.full_like(p, 1), shifted)  # no LAPACK call on zeros
    found = _companion_eigvals(shifted)
    found = lax.sort((found == 0, found), num_keys=1)[1]
    nan = lax.full_like(found, complex(np.nan, np.nan))
    return where(arange(n - 1) < n - 1 - leading, found, nan)


def poly(seq_of_zeros):
    """The coefficients [n + 1] (highest power first, leading 1) of the monic polynomial
    with the given roots [n]; a non-empty square matrix [n, n] stands for its eigenvalues
    (its characteristic polynomial, complex, as JAX). Ints become the default float.

    >>> mnp.poly(mnp.array([1., 2.]))
    Array([ 1., -3.,  2.], dtype=float32)
    """
    z = asarray(seq_of_zeros)
    z = z[None] if z.ndim == 0 else z
    if not dtypes.is_inexact(z.dtype):
        z = lax.convert_element_type(z, dtypes.default_float())
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] != 0:
        z = lax_linalg.eig(z, compute_left_eigenvectors=False,
                           compute_right_eigenvectors=False)[0]
    if z.ndim != 1:
        raise user_error(ValueError, f"poly: needs roots [n] or a non-empty square matrix "
                                     f"[n, n], got {z.aval.str_short()}")
    a = lax.full((1,), 1, z.dtype)
    zero = zeros(1, z.dtype)
    for k in range(z.shape[0]):
        # (x - z_k) a(x): a shifted up one power, minus z_k a
        a = concatenate([a, zero]) - z[k] * concatenate([zero, a])
    return a
