"""Reductions, statistics, order statistics and cumulative operations of mytorch.numpy.

NumPy's signatures (axis None/int/tuple/negative, keepdims, dtype=, where=, initial=) with
JAX's dtype rules: sums and products of bool and small integers give the default integer
(int32, or uint32 for small unsigned types); float16/bfloat16 stay in their dtype but
accumulate in float32; mean/var/std/quantile of integers give the default float.

    sum(f32[3,4], axis=1) -> f32[3]        mean(i8[3,4]) -> f32[]
    argmax(f32[3,4], axis=0) -> i32[4]     quantile(f32[5], q=f32[2]) -> f32[2]
"""

import builtins
import math
import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, scalar_array
from mytorch.numpy._promote import asarray_any, promote_dtypes

__all__ = [
    "sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin",
    "all", "any", "ptp", "count_nonzero", "average", "median", "quantile", "percentile",
    "nanmedian", "nanquantile", "nanpercentile", "nansum", "nanprod", "nanmean", "nanvar",
    "nanstd", "nanmax", "nanmin", "nanargmax", "nanargmin", "cumsum", "cumprod", "nancumsum",
    "nancumprod", "cumulative_sum", "cumulative_prod", "diff", "ediff1d", "trapezoid",
]

_max, _any = builtins.max, builtins.any  # `max` and `any` are redefined below


# ---- shared helpers ----------------------------------------------------------------------
def _arr(a):
    return asarray_any(a)


def _no_out(name, out):
    if out is not None:
        raise ValueError(f"{name}: out= is not supported: mytorch arrays are immutable; "
                         "use the returned array")


def _axes(name, x, axis):
    """`axis` (None, an int or a tuple of ints, negatives allowed) as sorted axes of x."""
    if axis is None:
        return tuple(range(x.ndim))
    items = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    out = []
    for a in items:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"{name}: axis must be None, an int or a tuple of ints, got "
                            f"{axis!r}")
        a = int(a)
        if x.ndim == 0 and a in (0, -1):
            continue  # a 0-d array reduces over "axis 0" to itself (NumPy's ufunc rule)
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"{name}: axis {a} is out of bounds for {x.aval.str_short()} "
                             f"(rank {x.ndim})")
        out.append(a % x.ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: axis {axis!r} repeats an axis of {x.aval.str_short()}")
    return tuple(sorted(out))


def _axis1(name, x, axis):
    """A single axis (int, negatives allowed) of x, as a non-negative int."""
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"{name}: axis must be an int here, got {axis!r}")
    return _axes(name, x, axis)[0]


def _keep(out, shape, axes, keepdims):
    """`out` (the reduction of an array of `shape` over `axes`) with size-1 axes restored."""
    if not keepdims:
        return out
    return lax.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(shape)))


def _cast(x, dtype, weak=None):
    weak = x.weak_type if weak is None else weak
    if x.dtype == dtype and x.weak_type == weak:
        return x
    return lax.convert_element_type(x, dtype, weak_type=weak)


def _full(shape, value, dtype, weak=False):
    """An array of `shape` filled with the Python scalar `value`."""
    c = scalar_array(value, dtype)
    if weak:
        c = lax.convert_element_type(c, dtype, weak_type=True)
    return lax.broadcast_in_dim(c, tuple(shape), ())


def _bcast(x, shape):
    """x broadcast to `shape` by NumPy's rules (x's shape must be compatible)."""
    from mytorch.numpy._promote import broadcast_shapes, broadcast_to_shape

    if broadcast_shapes("broadcast", x.shape, shape) != tuple(shape):
        raise ValueError(f"cannot broadcast {x.aval.str_short()} to shape {tuple(shape)}")
    return broadcast_to_shape(x, tuple(shape))


def _select(mask, x, value):
    """x where `mask` (bool, x's shape) else the scalar `value`."""
    return lax.select_n(mask, _full(x.shape, value, x.dtype, x.weak_type), x)


def _isnan(x):
    return lax.ne(x, x)


def _mask(name, where, x):
    """where= as a bool array of x's shape."""
    w = _arr(where)
    if not dtypes.is_bool(w.dtype):
        raise TypeError(f"{name}: where= must be a bool array, got {w.aval.str_short()}")
    try:
        return _bcast(w, x.shape)
    except (ValueError, TypeError):
        raise ValueError(f"{name}: where= of shape {w.aval.str_short()} does not broadcast "
                         f"to the operand's shape {x.aval.str_short()}") from None


def _int_promote(dtype):
    """JAX's integer promotion for sums and products: bool and narrow ints widen."""
    if dtypes.is_bool(dtype):
        return dtypes.default_int()
    if dtypes.is_int(dtype) and dtype.itemsize < dtypes.default_int().itemsize:
        return dtypes.canonicalize(np.uint64 if dtypes.is_unsigned_int(dtype) else np.int64)
    return dtype


def _upcast_f16(dtype):
    return dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype


def _inexact(dtype):
    return dtype if dtypes.is_float(dtype) else dtypes.default_float()


def _user_dtype(dtype):
    return None if dtype is None else dtypes.canonicalize(dtype, explicit=True)


def _identity(dtype, largest):
    if dtypes.is_bool(dtype):
        return bool(largest)
    if dtypes.is_int(dtype):
        info = dtypes.iinfo(dtype)
        return int(info.max if largest else info.min)
    return math.inf if largest else -math.inf


def _ravel(x):
    return lax.reshape(x, (x.size,)) if x.ndim != 1 else x


def _with_initial(name, out, initial, combine):
    if initial is None:
        return out
    init = _arr(initial)
    if init.ndim:
        raise ValueError(f"{name}: initial= must be a scalar, got {init.aval.str_short()}")
    return combine(out, _cast(init, out.dtype, out.weak_type))


# ---- sum, prod, max, min, all, any -------------------------------------------------------
def _sum_like(name, a, axis, dtype, out, keepdims, initial, where, promote_integers, is_prod):
    _no_out(name, out)
    x = _arr(a)
    axes = _axes(name, x, axis)
    dt = _user_dtype(dtype)
    weak = x.weak_type and dt is None
    if dt is None:
        dt = _int_promote(x.dtype) if promote_integers else x.dtype
        if dtypes.is_bool(dt):
            dt = dtypes.default_int()
    if dtypes.is_bool(dt):  # a bool sum is `any`, a bool product is `all` (as NumPy)
        fn = all if is_prod else any
        return fn(x, axis=axis, keepdims=keepdims, where=where)
    x = _cast(x, dt, weak)
    if where is not None:
        x = _select(_mask(name, where, x), x, 1 if is_prod else 0)
    res = (lax.reduce_prod if is_prod else lax.reduce_sum)(x, axes)
    res = _with_initial(name, res, initial, lax.mul if is_prod else lax.add)
    return _keep(res, x.shape, axes, keepdims)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
    """Sum of `a` over `axis` (None: all axes; an int or a tuple; negatives count from the end).

    Args:
      a: an array-like. bool and narrow integers sum in the default int (int32); float16
        and bfloat16 keep their dtype (accumulating in float32).
      dtype: the dtype to accumulate and return in.
      keepdims: keep the reduced axes with size 1.
      initial: a scalar added to the sum.
      where: a bool array broadcastable to `a`: only those elements are summed.
      promote_integers: if False, integers keep their dtype (and wrap).

    Returns:
      An array of `a`'s shape without the reduced axes.

    >>> sum(np.array([[1, 2], [3, 4]], np.int8), axis=0)
    Array([4, 6], dtype=int32)
    """
    return _sum_like("sum", a, axis, dtype, out, keepdims, initial, where, promote_integers,
                     False)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
    """Product of `a` over `axis`; dtype rules and arguments as `sum` (1 over empty axes)."""
    return _sum_like("prod", a, axis, dtype, out, keepdims, initial, where, promote_integers,
                     True)


def _minmax(name, a, axis, out, keepdims, initial, where, largest):
    _no_out(name, out)
    x = _arr(a)
    axes = _axes(name, x, axis)
    op = "maximum" if largest else "minimum"
    if initial is None:
        if where is not None:
            raise ValueError(f"{name}: reduction operation '{op}' does not have an identity, "
                             "so to use a where mask one has to specify 'initial'")
        if _any(x.shape[i] == 0 for i in axes):
            raise ValueError(f"{name}: zero-size array to reduction operation {op} which has "
                             f"no identity (reducing {x.aval.str_short()} over axes {axes}); "
                             "pass initial= to give empty reductions a value")
    if where is not None:
        x = _select(_mask(name, where, x), x, _identity(x.dtype, not largest))
    res = (lax.reduce_max if largest else lax.reduce_min)(x, axes)
    res = _with_initial(name, res, initial, lax.max if largest else lax.min)
    return _keep(res, x.shape, axes, keepdims)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum of `a` over `axis` (NaN propagates); keeps `a`'s dtype.

    Args:
      a: an array-like of any dtype.
      axis: None, an int or a tuple of ints.
      keepdims: keep the reduced axes with size 1.
      initial: a scalar included in every maximum (needed for empty axes and `where`).
      where: a bool array broadcastable to `a`: only those elements take part.

    Raises:
      ValueError: an axis to reduce is empty, or `where` is given, and `initial` is not.
    """
    return _minmax("max", a, axis, out, keepdims, initial, where, True)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum of `a` over `axis` (NaN propagates); arguments as `max`."""
    return _minmax("min", a, axis, out, keepdims, initial, where, False)


amax, amin = max, min


def _logical(name, a, axis, out, keepdims, where, is_all):
    _no_out(name, out)
    x = _arr(a)
    axes = _axes(name, x, axis)
    if not dtypes.is_bool(x.dtype):
        x = lax.ne(x, _full(x.shape, 0, x.dtype))
    if where is not None:
        x = _select(_mask(name, where, x), x, is_all)
    res = (lax.reduce_and if is_all else lax.reduce_or)(x, axes)
    return _keep(res, x.shape, axes, keepdims)


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    """Whether every element of `a` over `axis` is nonzero (True over empty axes); bool."""
    return _logical("all", a, axis, out, keepdims, where, True)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    """Whether some element of `a` over `axis` is nonzero (False over empty axes); bool."""
    return _logical("any", a, axis, out, keepdims, where, False)


def ptp(a, axis=None, out=None, keepdims=False):
    """Peak to peak, `max(a) - min(a)` over `axis`, in `a`'s dtype (unsigned ints wrap)."""
    x = _arr(a)
    if dtypes.is_bool(x.dtype):
        raise TypeError(f"ptp: a bool array ({x.aval.str_short()}) cannot be subtracted; "
                        "convert it to an integer dtype first")
    hi = _minmax("ptp", x, axis, out, keepdims, None, None, True)
    return lax.sub(hi, _minmax("ptp", x, axis, out, keepdims, None, None, False))


def count_nonzero(a, axis=None, *, keepdims=False):
    """Number of nonzero elements of `a` over `axis`, as the default int (int32)."""
    x = _arr(a)
    nz = x if dtypes.is_bool(x.dtype) else lax.ne(x, _full(x.shape, 0, x.dtype))
    return sum(nz, axis=axis, keepdims=keepdims, dtype=dtypes.default_int())


# ---- argmax / argmin ---------------------------------------------------------------------
def _arg(name, a, axis, out, keepdims, largest):
    _no_out(name, out)
    x = _arr(a)
    shape = x.shape
    if axis is None or x.ndim == 0:
        if axis is not None:
            _axes(name, x, axis)
        x, ax = _ravel(x), 0
    else:
        ax = _axis1(name, x, axis)
    if x.shape[ax] == 0:
        raise ValueError(f"{name}: attempt to get {name} of an empty sequence "
                         f"({_arr(a).aval.str_short()}, axis {axis})")
    fn = lax.argmax if largest else lax.argmin
    res = fn(x, ax, dtypes.default_int())
    if keepdims:
        kept = tuple(range(len(shape))) if axis is None else (ax,)
        res = _keep(res, shape, kept, True)
    return res


def argmax(a, axis=None, out=None, keepdims=False):
    """Index of the maximum along `axis` (None: of the flattened array); default int dtype.

    Ties give the first index; a NaN counts as the maximum (NumPy's convention).

    Raises:
      ValueError: the axis is empty.
    """
    return _arg("argmax", a, axis, out, keepdims, True)


def argmin(a, axis=None, out=None, keepdims=False):
    """Index of the minimum along `axis` (None: flattened); as `argmax`."""
    return _arg("argmin", a, axis, out, keepdims, False)


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
            raise ValueError(f"{name}: ddof and correction can't be provided simultaneously")
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
    sq = lax.mul(d, d)
    if where is not None:
        sq = _select(_mask(name, where, sq), sq, 0)
    if isinstance(n, int):
        dof = _max(n - ddof, 0)
    else:
        dof = lax.max(lax.sub(n, float(ddof)), _full(n.shape, 0, cdt))
    res = _div(lax.reduce_sum(sq, axes), dof)
    if nan and dtypes.is_float(x.dtype):  # NumPy's nanvar: NaN where no degrees of freedom
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
            raise TypeError("average: axis must be specified when the shapes of a "
                            f"({x.aval.str_short()}) and weights ({w.aval.str_short()}) differ")
        if w.ndim != 1 or len(axes) != 1 or w.shape[0] != x.shape[axes[0]]:
            raise ValueError(f"average: weights of shape {w.aval.str_short()} must be "
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


# ---- nan-ignoring reductions -------------------------------------------------------------
def _nan_where(name, x, where):
    """where= combined with "not NaN" (None for non-float x without where)."""
    if not dtypes.is_float(x.dtype):
        return where
    ok = lax.bitwise_not(_isnan(x))
    return ok if where is None else lax.bitwise_and(ok, _mask(name, where, x))


def _nan_fill(x, value):
    return _select(lax.bitwise_not(_isnan(x)), x, value) if dtypes.is_float(x.dtype) else x


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum treating NaN as zero; as `sum` otherwise."""
    return sum(_nan_fill(_arr(a), 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product treating NaN as one; as `prod` otherwise."""
    return prod(_nan_fill(_arr(a), 1), axis, dtype, out, keepdims, initial, where)


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


def _nanminmax(name, a, axis, out, keepdims, initial, where, largest):
    x = _arr(a)
    if not dtypes.is_float(x.dtype):
        return _minmax(name, x, axis, out, keepdims, initial, where, largest)
    nan = _isnan(x)
    filled = _select(lax.bitwise_not(nan), x, _identity(x.dtype, not largest))
    res = _minmax(name, filled, axis, out, keepdims, initial, where, largest)
    ok = lax.bitwise_not(nan)
    if where is not None:
        ok = lax.bitwise_and(ok, _mask(name, where, x))
    if initial is None:  # all-NaN slices give NaN (as NumPy, which also warns)
        none = lax.bitwise_not(_logical(name, ok, axis, None, keepdims, None, False))
        res = lax.select_n(none, res, _full(res.shape, math.nan, res.dtype))
    return res


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum ignoring NaN (NaN for all-NaN slices); arguments as `max`."""
    return _nanminmax("nanmax", a, axis, out, keepdims, initial, where, True)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum ignoring NaN (NaN for all-NaN slices); arguments as `min`."""
    return _nanminmax("nanmin", a, axis, out, keepdims, initial, where, False)


def _nanarg(name, a, axis, out, keepdims, largest):
    x = _arr(a)
    if not dtypes.is_float(x.dtype):
        return _arg(name, x, axis, out, keepdims, largest)
    nan = _isnan(x)
    filled = _select(lax.bitwise_not(nan), x, _identity(x.dtype, not largest))
    res = _arg(name, filled, axis, out, keepdims, largest)
    all_nan = _logical(name, nan, axis, None, keepdims, None, True)
    return lax.select_n(all_nan, res, _full(res.shape, -1, res.dtype))


def nanargmax(a, axis=None, out=None, keepdims=False):
    """Index of the maximum ignoring NaN; -1 for all-NaN slices (NumPy raises there)."""
    return _nanarg("nanargmax", a, axis, out, keepdims, True)


def nanargmin(a, axis=None, out=None, keepdims=False):
    """Index of the minimum ignoring NaN; -1 for all-NaN slices (NumPy raises there)."""
    return _nanarg("nanargmin", a, axis, out, keepdims, False)


# ---- cumulative reductions ---------------------------------------------------------------
def _cumulative(name, a, axis, dtype, out, is_prod, nan):
    _no_out(name, out)
    x = _arr(a)
    if axis is None or x.ndim == 0:
        if axis is not None:
            _axis1(name, lax.reshape(x, (1,)), axis)
        x, ax = lax.reshape(x, (x.size,)), 0
    else:
        ax = _axis1(name, x, axis)
    if nan:
        x = _nan_fill(x, 1 if is_prod else 0)
    dt = _user_dtype(dtype) or _int_promote(x.dtype)
    if dtypes.is_bool(dt):
        dt = dtypes.default_int()
    x = _cast(x, dt, x.weak_type and dtype is None)
    return (lax.cumprod if is_prod else lax.cumsum)(x, ax)


def cumsum(a, axis=None, dtype=None, out=None):
    """Running sum along `axis` (None: over the flattened array); dtype rules of `sum`.

    >>> cumsum(np.array([[1, 2], [3, 4]], np.int8), axis=1)
    Array([[1, 3],
           [3, 7]], dtype=int32)
    """
    return _cumulative("cumsum", a, axis, dtype, out, False, False)


def cumprod(a, axis=None, dtype=None, out=None):
    """Running product along `axis` (None: flattened); dtype rules of `prod`."""
    return _cumulative("cumprod", a, axis, dtype, out, True, False)


def nancumsum(a, axis=None, dtype=None, out=None):
    """Running sum treating NaN as zero."""
    return _cumulative("nancumsum", a, axis, dtype, out, False, True)


def nancumprod(a, axis=None, dtype=None, out=None):
    """Running product treating NaN as one."""
    return _cumulative("nancumprod", a, axis, dtype, out, True, True)


def _cumulative_api(name, x, axis, dtype, include_initial, is_prod):
    x = _arr(x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: axis is required for arrays of more than one "
                             f"dimension, got {x.aval.str_short()}")
        axis = 0
    if x.ndim == 0:
        raise ValueError(f"{name}: needs an array of at least one dimension, got "
                         f"{x.aval.str_short()}")
    ax = _axis1(name, x, axis)
    res = _cumulative(name, x, ax, dtype, None, is_prod, False)
    if not include_initial:
        return res
    shape = tuple(1 if i == ax else d for i, d in enumerate(res.shape))
    return lax.concatenate([_full(shape, 1 if is_prod else 0, res.dtype), res], ax)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running sum along `axis` (NumPy 2 / Array API); `include_initial` prepends a zero."""
    return _cumulative_api("cumulative_sum", x, axis, dtype, include_initial, False)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running product along `axis`; `include_initial` prepends a one."""
    return _cumulative_api("cumulative_prod", x, axis, dtype, include_initial, True)


# ---- differences and integration ---------------------------------------------------------
def _slice_axis(x, axis, start, stop):
    starts = tuple(start if i == axis else 0 for i in range(x.ndim))
    stops = tuple(stop if i == axis else d for i, d in enumerate(x.shape))
    return lax.slice(x, starts, stops)


def _edge(v, x, axis):
    """A prepend/append value for diff: a scalar broadcasts to x's shape with axis size 1."""
    v = _arr(v)
    if v.ndim:
        return v
    return lax.broadcast_in_dim(v, tuple(1 if i == axis else d for i, d in enumerate(x.shape)),
                                ())


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The n-th discrete difference `a[1:] - a[:-1]` along `axis` (bools: `!=`).

    Args:
      a: an array-like of rank >= 1.
      n: how many times to difference (>= 0).
      prepend, append: values joined to `a` along `axis` first (scalars broadcast).

    Returns:
      An array whose `axis` is n shorter, in the promoted dtype of the inputs.
    """
    x = _arr(a)
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional, got "
                         f"{x.aval.str_short()}")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    ax = _axis1("diff", x, axis)
    if n == 0:
        return x
    parts = [x]
    if prepend is not None:
        parts.insert(0, _edge(prepend, x, ax))
    if append is not None:
        parts.append(_edge(append, x, ax))
    if len(parts) > 1:
        parts = promote_dtypes("diff", *parts)
        x = lax.concatenate(parts, ax)
    op = lax.ne if dtypes.is_bool(x.dtype) else lax.sub
    for _ in range(n):
        m = x.shape[ax]
        if m == 0:
            break
        x = op(_slice_axis(x, ax, 1, m), _slice_axis(x, ax, 0, m - 1))
    return x


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of the flattened `ary`, with `to_begin`/`to_end` (cast to its dtype) added."""
    x = _ravel(_arr(ary))
    d = diff(x) if x.shape[0] else x
    parts = [d]
    if to_begin is not None:
        parts.insert(0, _cast(_ravel(_arr(to_begin)), d.dtype, d.weak_type))
    if to_end is not None:
        parts.append(_cast(_ravel(_arr(to_end)), d.dtype, d.weak_type))
    return lax.concatenate(parts, 0) if len(parts) > 1 else d


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of `y` along `axis` by the trapezoidal rule; a float dtype.

    Args:
      y: an array-like of rank >= 1.
      x: sample points (1-D of y's length along `axis`, or y's shape); default spacing `dx`.
    """
    yv = _arr(y)
    if yv.ndim == 0:
        raise ValueError(f"trapezoid: y must have at least one dimension, got "
                         f"{yv.aval.str_short()}")
    ax = _axis1("trapezoid", yv, axis)
    if x is None:
        (yv,) = promote_dtypes("trapezoid", yv)
        yv = _cast(yv, _inexact(yv.dtype))
        d = _cast(_arr(dx), yv.dtype, False)
    else:
        xv = _arr(x)
        yv, xv = promote_dtypes("trapezoid", yv, xv)
        dt = _inexact(yv.dtype)
        yv, xv = _cast(yv, dt), _cast(xv, dt)
        if xv.ndim == 1:
            if xv.shape[0] != yv.shape[ax]:
                raise ValueError(f"trapezoid: x ({xv.aval.str_short()}) must have the length "
                                 f"of y ({yv.aval.str_short()}) along axis {axis}")
            shape = tuple(xv.shape[0] if i == ax else 1 for i in range(yv.ndim))
            xv = lax.reshape(xv, shape)
        d = diff(xv, axis=ax)
    m = yv.shape[ax]
    if m == 0:
        return sum(yv, axis=ax)
    mid = lax.add(_slice_axis(yv, ax, 1, m), _slice_axis(yv, ax, 0, m - 1))
    if d.ndim and d.shape != mid.shape:
        d = _bcast(d, mid.shape)
    elif d.ndim == 0:
        d = lax.broadcast_in_dim(d, mid.shape, ())
    return lax.mul(sum(lax.mul(d, mid), axis=ax), 0.5)


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
            raise ValueError(f"{name}: q must be a scalar or 1-D, got {qv.aval.str_short()}")
        shape, qv = qv.shape, lax.reshape(qv, (qv.size, 1))
        return shape, None, qv if scale == 1 else lax.div(qv, _full((), scale, cdt))
    static = np.asarray(q, dtype=np.float64)
    if static.ndim > 1:
        raise ValueError(f"{name}: q must be a scalar or 1-D, got shape {static.shape}")
    if not np.all((static >= 0) & (static <= scale)):
        what = "percentiles" if scale == 100 else "quantiles"
        raise ValueError(f"{name}: {what} must be in the range [0, {scale}], got {q!r}")
    return static.shape, static.reshape(-1) / scale, None


def _quantile(name, a, q, axis, method, keepdims, nan, scale):
    if method not in _METHODS and method != "median":
        raise ValueError(f"{name}: method must be one of {', '.join(_METHODS)}, got "
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
        gamma = _bcast(_arr(gamma.reshape(k, 1).astype(cdt)), out_shape)
    else:
        if static is not None:
            qv = _arr(static.reshape(k, 1).astype(cdt))
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
