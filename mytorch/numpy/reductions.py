"""Reductions, statistics, order statistics and cumulative operations of mytorch.numpy.

NumPy's signatures (axis None/int/tuple/negative, keepdims, dtype=, where=, initial=) with
JAX's dtype rules: sums and products of bool and small integers give the default integer
(int32, or uint32 for small unsigned types); float16/bfloat16 stay in their dtype but
accumulate in float32; mean/var/std/quantile of integers give the default float.

    sum(f32[3,4], axis=1) -> f32[3]        mean(i8[3,4]) -> f32[]
    argmax(f32[3,4], axis=0) -> i32[4]     quantile(f32[5], q=f32[2]) -> f32[2]

The statistics (mean, var, std, average, median, quantile, percentile and their nan*
versions) live in statistics.py and are re-exported here; the shared helpers are in
_reduce_util.py.
"""

import math
import operator

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.numpy._promote import promote_dtypes
from mytorch.numpy._reduce_util import (
    _any, _arr, _axes, _axis1, _bcast, _cast, _full, _identity, _inexact, _int_promote, _isnan,
    _keep, _mask, _no_out, _ravel, _select, _slice_axis, _user_dtype, _with_initial,
)
from mytorch.numpy.statistics import (
    average, mean, median, nanmean, nanmedian, nanpercentile, nanquantile, nanstd, nanvar,
    percentile, quantile, std, var,
)

__all__ = [
    "sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin",
    "all", "any", "ptp", "count_nonzero", "average", "median", "quantile", "percentile",
    "nanmedian", "nanquantile", "nanpercentile", "nansum", "nanprod", "nanmean", "nanvar",
    "nanstd", "nanmax", "nanmin", "nanargmax", "nanargmin", "cumsum", "cumprod", "nancumsum",
    "nancumprod", "cumulative_sum", "cumulative_prod", "diff", "ediff1d", "trapezoid",
]


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
            raise user_error(ValueError,
                f"{name}: reduction operation '{op}' does not have an identity, "
                "so to use a where mask one has to specify 'initial'")
        if _any(x.shape[i] == 0 for i in axes):
            raise user_error(ValueError,
                f"{name}: zero-size array to reduction operation {op} which has "
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
        raise user_error(TypeError,
            f"ptp: a bool array ({x.aval.str_short()}) cannot be subtracted; "
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
        raise user_error(ValueError, f"{name}: attempt to get {name} of an empty sequence "
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


# ---- nan-ignoring reductions -------------------------------------------------------------
def _nan_fill(x, value):
    return _select(lax.bitwise_not(_isnan(x)), x, value) if dtypes.is_inexact(x.dtype) else x


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum treating NaN as zero; as `sum` otherwise."""
    return sum(_nan_fill(_arr(a), 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product treating NaN as one; as `prod` otherwise."""
    return prod(_nan_fill(_arr(a), 1), axis, dtype, out, keepdims, initial, where)


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
def _cumulative(name, a, axis, dtype, out, is_prod, nan, widen=False):
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
    # JAX keeps narrow ints in cumsum/cumprod (they wrap); bool counts in the default int
    dt = _user_dtype(dtype) or (_int_promote(x.dtype) if widen else x.dtype)
    if dtypes.is_bool(dt):
        dt = dtypes.default_int()
    x = _cast(x, dt, x.weak_type and dtype is None)
    return (lax.cumprod if is_prod else lax.cumsum)(x, ax)


def cumsum(a, axis=None, dtype=None, out=None):
    """Running sum along `axis` (None: over the flattened array). The dtype is `a`'s
    (bool: the default int), as in JAX: narrow ints wrap; pass `dtype=` to widen.

    >>> cumsum(np.array([[1, 2], [3, 4]], np.int8), axis=1)
    Array([[1, 3],
           [3, 7]], dtype=int8)
    """
    return _cumulative("cumsum", a, axis, dtype, out, False, False)


def cumprod(a, axis=None, dtype=None, out=None):
    """Running product along `axis` (None: flattened); dtype rules of `cumsum`."""
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
            raise user_error(ValueError, f"{name}: axis is required for arrays of more than one "
                                         f"dimension, got {x.aval.str_short()}")
        axis = 0
    if x.ndim == 0:
        raise user_error(ValueError, f"{name}: needs an array of at least one dimension, got "
                                     f"{x.aval.str_short()}")
    ax = _axis1(name, x, axis)
    res = _cumulative(name, x, ax, dtype, None, is_prod, False, widen=not is_prod)
    if not include_initial:
        return res
    shape = tuple(1 if i == ax else d for i, d in enumerate(res.shape))
    return lax.concatenate([_full(shape, 1 if is_prod else 0, res.dtype), res], ax)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running sum along `axis` (NumPy 2 / Array API); `include_initial` prepends a zero.
    Narrow ints widen as in `sum` (JAX's rule; `cumsum` keeps them)."""
    return _cumulative_api("cumulative_sum", x, axis, dtype, include_initial, False)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running product along `axis`; `include_initial` prepends a one. The dtype is
    `cumprod`'s (narrow ints kept, as JAX's)."""
    return _cumulative_api("cumulative_prod", x, axis, dtype, include_initial, True)


# ---- differences and integration ---------------------------------------------------------
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
        raise user_error(ValueError, "diff requires input that is at least one dimensional, got "
                                     f"{x.aval.str_short()}")
    n = operator.index(n)
    if n < 0:
        raise user_error(ValueError, f"diff: order must be non-negative but got {n}")
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
        raise user_error(ValueError, f"trapezoid: y must have at least one dimension, got "
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
                raise user_error(ValueError,
                    f"trapezoid: x ({xv.aval.str_short()}) must have the length "
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
