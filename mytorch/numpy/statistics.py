"""Statistics: mean, var, std and average; their NaN-ignoring variants; and the order
statistics median, quantile and percentile (NaN-ignoring too).

Integer input gives the default float; float16/bfloat16 accumulate in float32. Part of
`mytorch.numpy.reductions`, whose docstring gives the dtype rules.
"""

import math

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array
from mytorch.core.source_info import user_error
from mytorch.numpy._promote import promote_dtypes
from mytorch.numpy._reduce_util import (
    _arr, _axes, _bcast, _cast, _full, _inexact, _isnan, _keep, _mask, _max, _no_out, _select,
    _upcast_f16, _user_dtype,
)

__all__ = [
    "mean", "var", "std", "average", "median", "quantile", "percentile", "nanmedian",
    "nanquantile", "nanpercentile", "nanmean", "nanvar", "nanstd",
]


# ---- mean, var, std, average -------------------------------------------------------------
def _count(name, x, axes, where, dtype):
    """How many elements each reduction sees: a Python int without `where`."""
    if where is None:
        return math.prod(x.shape[i] for i in axes)
    m = _cast(_mask(name, where, x), dtype, False)
    return lax.reduce_sum(m, axes)


def _mean_parts(name, x, axes, where, cdt):
    """(sum, count) of x (cast to cdt) over axes, masked by `where`."""
    xc = _cast(x, cdt)
    if where is not None:
        xc = _select(_mask(name, where, xc), xc, 0)
    return lax.reduce_sum(xc, axes), _count(name, xc, axes, where, cdt)


def _div(num, den):
    return lax.div(num, float(den) if isinstance(den, (int, float)) else den)


def _unreduce(r, shape, axes):
    """The reduction `r` (over `axes` of `shape`) broadcast back to `shape`."""
    return lax.broadcast_in_dim(r, shape, tuple(i for i in range(len(shape)) if i not in axes))


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over `axis`: integers give the default float; NaN over empty axes.

    Args:
      a: an array-like.
      axis: None, an int or a tuple of ints.
      dtype: the result dtype (float16/bfloat16 accumulate in float32).
      where: a bool array broadcastable to `a`: only those elements are averaged.
    """
    _no_out("mean", out)
    x = _arr(a)
    axes = _axes("mean", x, axis)
    dt = _user_dtype(dtype) or _inexact(x.dtype)
    s, n = _mean_parts("mean", x, axes, where, _upcast_f16(_inexact(dt)))
    res = _cast(_div(s, n), dt, x.weak_type and dtype is None)
    return _keep(res, x.shape, axes, keepdims)


def _var(name, a, axis, dtype, out, ddof, keepdims, where, mean_, correction, nan):
    _no_out(name, out)
    if correction is not None:
        if ddof != 0:
            raise user_error(ValueError,
                f"{name}: ddof and correction can't be provided simultaneously")
        ddof = correction
    x = _arr(a)
    axes = _axes(name, x, axis)
    dt = _user_dtype(dtype) or _inexact(x.dtype)
    cdt = _upcast_f16(_inexact(dt))
    xc = _cast(x, cdt)
    if nan:
        where = _nan_where(name, xc, where)
    s, n = _mean_parts(name, xc, axes, where, cdt)
    if mean_ is None:
        mu = _unreduce(_div(s, n), x.shape, axes)
    else:
        mu = _bcast(_cast(_arr(mean_), cdt), x.shape)
    d = lax.sub(xc, mu)
    if where is not None:  # before squaring: a NaN left out must not reach d's derivative
        d = _select(_mask(name, where, d), d, 0)
    if dtypes.is_complex(cdt):  # |d|^2: the variance of complex values is real, as NumPy
        sq = lax.real(lax.mul(d, lax.conj(d)))
        cdt, dt = dtypes.real_dtype(cdt), dtypes.real_dtype(dt)
        n = n if isinstance(n, int) else lax.real(n)
    else:
        sq = lax.mul(d, d)
    if isinstance(n, int):
        dof = _max(n - ddof, 0)
    else:
        dof = lax.max(lax.sub(n, float(ddof)), _full(n.shape, 0, cdt))
    res = _div(lax.reduce_sum(sq, axes), dof)
    if nan and dtypes.is_inexact(x.dtype):  # NumPy's nanvar: NaN where no degrees of freedom
        res = _select(lax.gt(dof, _full(dof.shape, 0, cdt)), res, math.nan)
    res = _cast(res, dt, x.weak_type and dtype is None)
    return _keep(res, x.shape, axes, keepdims)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """Variance `sum((a - mean)**2) / (N - ddof)` over `axis`; integers give the default float.

    Args:
      a: an array-like.
      axis: None, an int or a tuple of ints.
      ddof: delta degrees of freedom (`correction` is the Array API's name for it).
      where: a bool array broadcastable to `a`: only those elements take part.
      mean: a precomputed mean with keepdims=True shape.

    Returns:
      The variance; NaN (or inf) where N - ddof <= 0.
    """
    return _var("var", a, axis, dtype, out, ddof, keepdims, where, mean, correction, False)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """Standard deviation, `sqrt(var(...))`; arguments as `var`."""
    v = _var("std", a, axis, dtype, out, ddof, keepdims, where, mean, correction, False)
    return _sqrt(v)


def _sqrt(v):
    if dtypes.is_float(v.dtype):
        return lax.sqrt(v)
    return _cast(lax.sqrt(_cast(v, dtypes.default_float())), v.dtype)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted average `sum(a * w) / sum(w)` over `axis` (`mean` when `weights` is None).

    Args:
      a: an array-like.
      weights: `a`'s shape, or 1-D with the length of the single `axis`.
      returned: also return the sum of the weights (broadcast to the result's shape).

    Returns:
      The average (a float dtype), or (average, sum of weights) if `returned`. Weights that
      sum to zero give NaN/inf (NumPy raises ZeroDivisionError).
    """
    x = _arr(a)
    if weights is None:
        avg = mean(x, axis=axis, keepdims=keepdims)
        if not returned:
            return avg
        axes = _axes("average", x, axis)
        n = math.prod(x.shape[i] for i in axes)
        return avg, _full(avg.shape, n, avg.dtype)
    w = _arr(weights)
    x, w = promote_dtypes("average", x, w)
    dt = _inexact(x.dtype)
    x, w = _cast(x, dt), _cast(w, dt)
    axes = _axes("average", x, axis)
    if w.shape != x.shape:
        if axis is None:
            raise user_error(TypeError,
                             "average: axis must be specified when the shapes of a "
                             f"({x.aval.str_short()}) and weights ({w.aval.str_short()}) differ")
        if w.ndim != 1 or len(axes) != 1 or w.shape[0] != x.shape[axes[0]]:
            raise user_error(ValueError,
                             f"average: weights of shape {w.aval.str_short()} must be "
                             f"consistent with a ({x.aval.str_short()}) along axis {axis}")
        shape = tuple(w.shape[0] if i == axes[0] else 1 for i in range(x.ndim))
        w = _bcast(lax.reshape(w, shape), x.shape)
    cdt = _upcast_f16(dt)
    wsum = lax.reduce_sum(_cast(w, cdt), axes)
    avg = _cast(_div(lax.reduce_sum(lax.mul(_cast(x, cdt), _cast(w, cdt)), axes), wsum), dt)
    avg = _keep(avg, x.shape, axes, keepdims)
    if returned:
        return avg, _bcast(_keep(_cast(wsum, dt), x.shape, axes, keepdims), avg.shape)
    return avg


# ---- nan-ignoring statistics -------------------------------------------------------------
def _nan_where(name, x, where):
    """where= combined with "not NaN" (None for non-float x without where)."""
    if not dtypes.is_inexact(x.dtype):
        return where
    ok = lax.bitwise_not(_isnan(x))
    return ok if where is None else lax.bitwise_and(ok, _mask(name, where, x))


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Mean of the non-NaN elements (NaN where there are none)."""
    x = _arr(a)
    return mean(x, axis, dtype, out, keepdims, where=_nan_where("nanmean", x, where))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    """Variance of the non-NaN elements; arguments as `var`."""
    return _var("nanvar", a, axis, dtype, out, ddof, keepdims, where, mean, correction, True)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    """Standard deviation of the non-NaN elements; arguments as `var`."""
    return _sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                        correction=correction))


# ---- order statistics: median, quantile, percentile --------------------------------------
_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _rows(name, x, axis):
    """x with the `axis` axes moved last and flattened: (B, n), plus shape bookkeeping."""
    axes = _axes(name, x, axis)
    rest = tuple(i for i in range(x.ndim) if i not in axes)
    if rest + axes != tuple(range(x.ndim)):
        x2 = lax.transpose(x, rest + axes)
    else:
        x2 = x
    n = math.prod(x.shape[i] for i in axes)
    batch = tuple(x.shape[i] for i in rest)
    keep = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return lax.reshape(x2, (math.prod(batch), n)), batch, keep


def _static_indices(q, n, method):
    """NumPy's (float64) index arithmetic for constant quantiles: (lo, hi, gamma)."""
    virtual = (n - 1) * q
    if method == "lower":
        lo = np.floor(virtual)
    elif method == "higher":
        lo = np.ceil(virtual)
    elif method == "nearest":
        lo = np.around(virtual)
    else:
        lo = np.floor(virtual)
    lo = np.clip(lo, 0, _max(n - 1, 0)).astype(np.int32)
    hi = np.minimum(lo + 1, _max(n - 1, 0)).astype(np.int32)
    gamma = virtual - lo
    if method == "midpoint":
        gamma = np.where(virtual % 1 == 0, 0.0, 0.5)
    return lo, hi, gamma


def _counted_indices(q, n, nv, method, cdt):
    """(lo, hi, gamma), each (K, B), for constant quantiles q (K,) of rows holding nv (1, B)
    valid values out of n: looked up in tables computed for every count 0..n in float64,
    so the index rounds exactly as NumPy's does (float32 arithmetic can cross a floor)."""
    from mytorch.numpy.take_family import take

    tables = [_static_indices(q, m, method) for m in range(n + 1)]
    counts = lax.convert_element_type(lax.reshape(nv, (nv.shape[1],)), np.int32)

    def lookup(i, dtype):
        with np.errstate(under="ignore"):  # a tiny gamma (q = 1e-300) flushes to 0
            table = _arr(np.stack([t[i] for t in tables]).astype(dtype))  # (n + 1, K)
        return lax.transpose(take(table, counts, axis=0, mode="clip"), (1, 0))

    return lookup(0, np.int32), lookup(1, np.int32), lookup(2, cdt)


def _traced_indices(q, nv, method):
    """(lo, hi, gamma) computed with lax: q (K, 1) and nv (1, B) or a Python int."""
    one, zero = _full((), 1, q.dtype), _full((), 0, q.dtype)
    if isinstance(nv, int):
        nv = _full((1, 1), nv, q.dtype)
    shape = (q.shape[0], _max(q.shape[1], nv.shape[1]))
    top = lax.max(lax.sub(_bcast(nv, shape), one), zero)
    virtual = lax.mul(_bcast(q, shape), top)
    lo = lax.floor(virtual)
    if method == "higher":
        lo = lax.ceil(virtual)
    elif method == "nearest":
        lo = lax.round(virtual, 1)  # halves to even, as NumPy's around
    lo = lax.clamp(zero, lo, top)
    hi = lax.min(lax.add(lo, one), top)
    gamma = lax.sub(virtual, lo)
    if method == "midpoint":
        whole = lax.eq(virtual, lax.floor(virtual))
        gamma = lax.select_n(whole, _full(shape, 0.5, q.dtype), _full(shape, 0, q.dtype))
    return _cast(lo, dtypes.int32, False), _cast(hi, dtypes.int32, False), gamma


def _take_rows(s, idx):
    """s[b, idx[k, b]] for s (B, n) and int idx (K, B): a (K, B) array."""
    from mytorch.numpy.indexing import take_along_axis

    return lax.transpose(take_along_axis(s, lax.transpose(idx, (1, 0)), 1, mode="clip"),
                         (1, 0))


def _take_static(s, idx):
    """s[:, idx].T for s (B, n) and a NumPy int vector idx (K,): a (K, B) array."""
    nb = s.shape[0]
    cols = [lax.slice(s, (0, int(i)), (nb, int(i) + 1)) for i in idx]
    return lax.transpose(cols[0] if len(cols) == 1 else lax.concatenate(cols, 1), (1, 0))


def _q_values(name, q, scale, cdt):
    """(shape of q, q / scale as float64 NumPy values when q is a constant else None,
    q / scale as a (K, 1) array of cdt when q is an Array else None)."""
    if isinstance(q, Array):
        qv = _cast(q, cdt, False)
        if qv.ndim > 1:
            raise user_error(ValueError,
                f"{name}: q must be a scalar or 1-D, got {qv.aval.str_short()}")
        shape, qv = qv.shape, lax.reshape(qv, (qv.size, 1))
        return shape, None, qv if scale == 1 else lax.div(qv, _full((), scale, cdt))
    static = np.asarray(q, dtype=np.float64)
    if static.ndim > 1:
        raise user_error(ValueError, f"{name}: q must be a scalar or 1-D, got shape {static.shape}")
    if not np.all((static >= 0) & (static <= scale)):
        what = "percentiles" if scale == 100 else "quantiles"
        raise user_error(ValueError, f"{name}: {what} must be in the range [0, {scale}], got {q!r}")
    return static.shape, static.reshape(-1) / scale, None


def _quantile(name, a, q, axis, method, keepdims, nan, scale):
    if method not in _METHODS and method != "median":
        raise user_error(ValueError, f"{name}: method must be one of {', '.join(_METHODS)}, got "
                                     f"{method!r}")
    x = _arr(a)
    dt = _inexact(x.dtype)
    cdt = _upcast_f16(dt)
    s, batch, keep = _rows(name, _cast(x, cdt, False), axis)
    q_shape, static, qv = _q_values(name, q, scale, cdt)
    out_shape = (math.prod(q_shape), s.shape[0])
    if 0 in s.shape or 0 in out_shape:
        res = _full(out_shape, math.nan, cdt)
    else:
        res = _sorted_quantiles(lax.sort(s, dimension=1), static, qv, method, nan, out_shape)
    return lax.reshape(_cast(res, dt, False), q_shape + (keep if keepdims else batch))


def _sorted_quantiles(s, static, qv, method, nan, out_shape):
    """Quantiles (K, B) of the rows of the sorted s (B, n): NaN rows (or, for the nan*
    functions, rows without numbers) give NaN."""
    (k, nb), n, cdt = out_shape, s.shape[1], s.dtype
    if nan:
        valid = _cast(lax.bitwise_not(_isnan(s)), cdt, False)
        nv = lax.reshape(lax.reduce_sum(valid, (1,)), (1, nb))
    if static is not None and not nan:  # constant positions: slices, no gathers
        lo, hi, gamma = _static_indices(static, n, method)
        take = _take_static
        with np.errstate(under="ignore"):  # a tiny gamma (q = 1e-300) flushes to 0
            gamma = _bcast(_arr(gamma.reshape(k, 1).astype(cdt)), out_shape)
    elif static is not None:  # constant q, per-row counts: NumPy's float64 index tables
        lo, hi, gamma = _counted_indices(static, n, nv, method, cdt)
        take = _take_rows
    else:
        idx = _traced_indices(qv, nv if nan else n, method)
        lo, hi, gamma = (_bcast(v, out_shape) for v in idx)
        take = _take_rows
    res = take(s, lo)
    if method not in ("lower", "higher", "nearest"):
        res = _interpolate(res, take(s, hi), gamma, method)
    if nan:
        bad = lax.eq(_bcast(nv, out_shape), _full((), 0, cdt))
    else:  # NaNs sort last: a NaN anywhere in a row makes its quantiles NaN (as NumPy)
        bad = _bcast(_isnan(lax.reshape(lax.slice(s, (0, n - 1), (nb, n)), (1, nb))), out_shape)
    return _select(lax.bitwise_not(bad), res, math.nan)


def _interpolate(a, b, t, method):
    if method == "median":  # NumPy's median: the mean of the two middle values
        mid = lax.mul(lax.add(a, b), 0.5)
        return lax.select_n(lax.eq(t, _full((), 0, t.dtype)), mid, a)
    d = lax.sub(b, a)  # NumPy's _lerp, exact at both ends
    up = lax.sub(b, lax.mul(d, lax.sub(_full((), 1, t.dtype), t)))
    down = lax.add(a, lax.mul(d, t))
    return lax.select_n(lax.ge(t, _full((), 0.5, t.dtype)), down, up)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False):
    """The `q`-th quantiles of `a` over `axis`, by sorting (a float dtype).

    Args:
      a: an array-like.
      q: a scalar or 1-D array of quantiles in [0, 1] (checked when q is a constant).
      axis: None (flattened), an int or a tuple of ints.
      method: "linear" (default), "lower", "higher", "nearest" (halves to even) or
        "midpoint": NumPy's definitions.
      keepdims: keep the reduced axes with size 1.

    Returns:
      An array of shape `q.shape + reduced shape`; NaN where a slice holds a NaN or is
      empty.

    >>> quantile(np.arange(5.0, dtype=np.float32), 0.5)
    Array(2., dtype=float32)
    """
    _no_out("quantile", out)
    return _quantile("quantile", a, q, axis, method, keepdims, False, 1)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False):
    """`quantile(a, q / 100, ...)`: q in [0, 100]."""
    _no_out("percentile", out)
    return _quantile("percentile", a, q, axis, method, keepdims, False, 100)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median over `axis` (the mean of the two middle values for even lengths)."""
    _no_out("median", out)
    return _quantile("median", a, 0.5, axis, "median", keepdims, False, 1)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False):
    """`quantile` ignoring NaNs (NaN for all-NaN slices)."""
    _no_out("nanquantile", out)
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, 1)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False):
    """`percentile` ignoring NaNs."""
    _no_out("nanpercentile", out)
    return _quantile("nanpercentile", a, q, axis, method, keepdims, True, 100)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """`median` ignoring NaNs (NaN for all-NaN slices)."""
    _no_out("nanmedian", out)
    return _quantile("nanmedian", a, 0.5, axis, "median", keepdims, True, 1)
