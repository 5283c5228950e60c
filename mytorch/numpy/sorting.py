"""Sorting, searching and counting of mytorch.numpy: sort, argsort, lexsort, partition,
searchsorted, unique, nonzero, bincount, digitize, histogram, select.

Everything is built on lax.sort (a stable multi-operand sort, NaNs last) and traces. The
functions whose output shape depends on the values (unique, nonzero, argwhere,
flatnonzero, bincount without `length`) work eagerly on concrete arrays; under a
transformation they need the static `size=` (or `length=`) that JAX's API provides.

    sort(f32[3,5]) -> f32[3,5]            argsort(f32[3,5], axis=0) -> i32[3,5]
    searchsorted(f32[5], f32[2,3]) -> i32[2,3]
    unique(f32[7], size=4) -> f32[4]      nonzero(bool[2,3], size=2) -> (i32[2], i32[2])
"""

import builtins
import math
import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array
from mytorch.core.source_info import user_error
from mytorch.errors import AxisError, ConcretizationTypeError
from mytorch.numpy._promote import broadcast_shapes, promote_dtypes
from mytorch.numpy._reduce_util import (
    _arr,
    _axes,
    _bcast,
    _cast,
    _full,
    _inexact,
    _isnan,
    _ravel,
    _select,
    _slice_axis,
)

__all__ = [
    "sort", "argsort", "lexsort", "partition", "argpartition", "searchsorted", "unique",
    "nonzero", "argwhere", "flatnonzero", "bincount", "digitize", "histogram",
    "histogram_bin_edges", "select", "sort_complex",
]


def _sort_input(name, a, axis):
    """(x, axis): `a` flattened for axis=None, else the normalised axis."""
    x = _arr(a)
    if axis is None:
        return _ravel(x), 0
    if x.ndim == 0:
        raise user_error(AxisError, f"{name}: axis {axis} is out of bounds for the 0-d "
                                    f"{x.aval.str_short()}; use axis=None or reshape it first")
    if isinstance(axis, (tuple, list)):
        raise user_error(TypeError, f"{name}: axis must be an int or None, got {axis!r}")
    return x, _axes(name, x, axis)[0]


def _no_order(name, order):
    if order is not None:
        raise user_error(ValueError, f"{name}: order= is not supported (mytorch has no structured "
                         "arrays); use lexsort for several keys")


def _iota(shape, axis):
    return lax.broadcasted_iota(dtypes.default_int(), shape, axis)


def sort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """A sorted copy of `a` along `axis` (None: of the flattened array).

    NaNs sort last (NumPy's order); the sort is stable. With `descending=True` the order
    is reversed, so NaNs come first.

    Args:
      a: an array-like.
      axis: an int (negative counts from the end) or None.
      kind, stable: accepted for NumPy compatibility; the sort is always stable.
      descending: sort from the largest to the smallest.

    >>> sort(np.array([3.0, np.nan, 1.0], np.float32))
    Array([ 1.,  3., nan], dtype=float32)
    """
    _no_order("sort", order)
    x, ax = _sort_input("sort", a, axis)
    out = lax.sort(x, dimension=ax, is_stable=True)
    return lax.rev(out, (ax,)) if descending else out


def sort_complex(a):
    """`a` sorted along its last axis by real part, then imaginary part, as a complex array
    (NumPy's sort_complex; float32 and narrower give complex64, ints the default complex)."""
    x = sort(a)
    if dtypes.is_inexact(x.dtype):
        return lax.convert_element_type(x, dtypes.complex_dtype(x.dtype))
    return lax.convert_element_type(x, dtypes.default_complex())


def argsort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Indices that sort `a` along `axis` (None: the flattened array); default int dtype.

    Stable: equal elements keep their order, also with `descending=True` (as JAX).

    >>> argsort(np.array([2, 1, 2, 0], np.int32))
    Array([3, 1, 0, 2], dtype=int32)
    """
    _no_order("argsort", order)
    x, ax = _sort_input("argsort", a, axis)
    iota = _iota(x.shape, ax)
    if descending:  # reverse first so that ties keep their order once reversed back
        x, iota = lax.rev(x, (ax,)), lax.rev(iota, (ax,))
    _, idx = lax.sort((x, iota), dimension=ax, is_stable=True, num_keys=1)
    return lax.rev(idx, (ax,)) if descending else idx


def lexsort(keys, axis=-1):
    """Indices that sort by several keys: the last key is the primary one (NumPy's rule).

    Args:
      keys: a sequence of arrays of one shape, or an array whose first axis lists them.
      axis: the axis to sort along.

    Returns:
      An index array (default int) of the keys' shape.
    """
    if not isinstance(keys, (tuple, list)):
        k = _arr(keys)
        if k.ndim == 0:
            raise user_error(TypeError,
                             "lexsort: keys must be a sequence of arrays (or an array of "
                            f"rank >= 1), got the 0-d {k.aval.str_short()}")
        keys = [lax.reshape(_slice_axis(k, 0, i, i + 1), k.shape[1:])
                for i in range(k.shape[0])]
    keys = [_arr(k) for k in keys]
    if not keys:
        raise user_error(TypeError, "lexsort: needs a sequence of keys with len > 0")
    shape = keys[0].shape
    if any(k.shape != shape for k in keys):
        listing = ", ".join(k.aval.str_short() for k in keys)
        raise user_error(ValueError, f"lexsort: all keys need the same shape, got {listing}")
    if not shape:
        keys = [lax.reshape(k, (1,)) for k in keys]
        shape = (1,)
    ax = _axes("lexsort", keys[0], axis)[0]
    ops = (*reversed(keys), _iota(shape, ax))
    return lax.sort(ops, dimension=ax, is_stable=True, num_keys=len(keys))[-1]


def _check_kth(name, kth, n):
    kths = [kth] if np.ndim(kth) == 0 else list(np.asarray(kth).reshape(-1))
    for k in kths:
        k = operator.index(k)
        if not -n <= k < n:
            raise user_error(ValueError, f"{name}: kth(={k}) out of bounds ({n})")


def partition(a, kth, axis=-1):
    """`a` rearranged so that element `kth` is where a sort puts it, smaller ones before it
    and larger ones after (along `axis`).

    This returns the fully sorted array, which is one valid partition (NumPy's order of
    the elements on either side of kth is unspecified).
    """
    x, ax = _sort_input("partition", a, axis)
    _check_kth("partition", kth, x.shape[ax])
    return lax.sort(x, dimension=ax)


def argpartition(a, kth, axis=-1):
    """Indices that partition `a` around `kth` (the stable argsort: one valid answer)."""
    x, ax = _sort_input("argpartition", a, axis)
    _check_kth("argpartition", kth, x.shape[ax])
    return argsort(x, axis=ax)


# ---- searchsorted -----------------------------------------------------------------------
def _less(x, y):
    """x < y in NumPy's sort order (NaN after every number)."""
    lt = lax.lt(x, y)
    if not dtypes.is_float(x.dtype):
        return lt
    return lax.bitwise_or(lt, lax.bitwise_and(_isnan(y), lax.bitwise_not(_isnan(x))))


def _goes_after(am, v, side):
    """Whether v belongs after the element am of a: am < v (left) or am <= v (right)."""
    return _less(am, v) if side == "left" else lax.bitwise_not(_less(v, am))


def _search_compare_all(a, v, side):
    """Count the elements of a that v goes after: O(len(a) * v.size) memory."""
    shape = v.shape + a.shape
    av = lax.broadcast_in_dim(a, shape, (v.ndim,))
    vv = lax.broadcast_in_dim(v, shape, tuple(range(v.ndim)))
    after = _cast(_goes_after(av, vv, side), dtypes.default_int(), False)
    return lax.reduce_sum(after, (v.ndim,))


def _search_scan(a, v, side):
    """Binary search with a fixed number of steps, ceil(log2(n + 1)): one gather each."""
    from mytorch.numpy.indexing import take

    n, it = a.shape[0], dtypes.default_int()
    lo, hi = _full(v.shape, 0, it), _full(v.shape, n, it)
    one = _full(v.shape, 1, it)
    for _ in range(n.bit_length()):
        active = lax.lt(lo, hi)
        mid = lax.shift_right_logical(lax.add(lo, hi), one)
        right = _goes_after(take(a, mid, mode="clip"), v, side)
        lo = lax.select_n(lax.bitwise_and(active, right), lo, lax.add(mid, one))
        hi = lax.select_n(lax.bitwise_and(active, lax.bitwise_not(right)), hi, mid)
    return lo


def _search_sort(a, v, side):
    """Sort a and v together (ties: a's elements first for side="right"); the number of
    a's elements before each v element is its insertion index."""
    n, m, it = a.shape[0], v.size, dtypes.default_int()
    vf = _ravel(v)
    keys = lax.concatenate([a, vf], 0)
    tag_a, tag_v = (0, 1) if side == "right" else (1, 0)
    tags = lax.concatenate([_full((n,), tag_a, it), _full((m,), tag_v, it)], 0)
    _, _, order = lax.sort((keys, tags, _iota((n + m,), 0)), dimension=0, num_keys=2)
    is_a = _cast(lax.lt(order, _full((n + m,), n, it)), it, False)
    before = lax.sub(lax.cumsum(is_a, 0), is_a)
    _, pos = lax.sort((order, before), dimension=0, num_keys=1)
    return lax.reshape(lax.slice(pos, (n,), (n + m,)), v.shape)


_SEARCH = {"scan": _search_scan, "scan_unrolled": _search_scan, "sort": _search_sort,
           "compare_all": _search_compare_all}


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Indices where `v`'s elements would be inserted into the sorted 1-D `a` to keep it
    sorted (NumPy's order: NaNs last).

    Args:
      a: a 1-D array-like, sorted ascending (or put in order by `sorter`).
      v: values to insert (any shape).
      side: "left" (the first suitable index) or "right" (the last).
      sorter: indices that sort `a`.
      method: "scan" (binary search, a fixed number of steps), "scan_unrolled" (the
        same here), "sort" (one joint sort) or "compare_all" (O(len(a) * v.size)).

    Returns:
      A default-int array of `v`'s shape.

    >>> searchsorted(np.array([1.0, 2.0, 3.0], np.float32), 2.0, side="right")
    Array(2, dtype=int32)
    """
    if side not in ("left", "right"):
        raise user_error(ValueError, f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if method not in _SEARCH:
        raise user_error(ValueError,
                         f"searchsorted: method must be one of {', '.join(_SEARCH)}, got "
                         f"{method!r}")
    av, vv = _arr(a), _arr(v)
    if av.ndim != 1:
        raise user_error(ValueError, f"searchsorted: a must be 1-D, got {av.aval.str_short()}")
    if sorter is not None:
        from mytorch.numpy.indexing import take

        av = take(av, _arr(sorter), mode="clip")
    av, vv = promote_dtypes("searchsorted", av, vv)
    if av.shape[0] == 0 or vv.size == 0:
        return _full(vv.shape, 0, dtypes.default_int())
    return _SEARCH[method](av, vv, side)


def digitize(x, bins, right=False, *, method="scan"):
    """Index of the bin of each element of `x`: bins are 1-D and monotonic (increasing or
    decreasing); `right` makes the intervals closed on the right."""
    b = _arr(bins)
    if b.ndim != 1:
        raise user_error(ValueError, f"digitize: bins must be 1-D, got {b.aval.str_short()}")
    xv = _arr(x)
    side = "left" if right else "right"
    if b.shape[0] == 0:
        return _full(xv.shape, 0, dtypes.default_int())
    up = searchsorted(b, xv, side=side, method=method)
    down = lax.sub(_full(xv.shape, b.shape[0], up.dtype),
                   searchsorted(lax.rev(b, (0,)), xv, side=side, method=method))
    n = b.shape[0]
    increasing = lax.ge(lax.slice(b, (n - 1,), (n,)), lax.slice(b, (0,), (1,)))
    return lax.select_n(_bcast(lax.reshape(increasing, ()), xv.shape), down, up)


# ---- value-dependent shapes --------------------------------------------------------------
def _static_size(name, count, what):
    """int(count) for a concrete count; ConcretizationTypeError naming `what` otherwise."""
    try:
        return int(count)
    except ConcretizationTypeError:
        raise ConcretizationTypeError(
            f"{name}: the size of its result depends on the values of the array, which are "
            f"abstract under this transformation. Pass the static {what} (the result is "
            f"padded or truncated to it) to use {name} inside jit, vmap or grad."
        ) from None


def _filled(fill, size, dtype):
    """A (size,) array of `dtype` holding the scalar (or traced 0-d) `fill`."""
    return _cast(_bcast(_arr(fill), (size,)), dtype, False)


def _compact(flags, operands, size, fills):
    """The entries of each operand (1-D, length n) where `flags`, in order, truncated or
    padded to `size`; padding takes `fills[i]` (kept as is when None). Also returns how
    many entries were flagged, and the mask of the real ones."""
    n, it = flags.shape[0], dtypes.default_int()
    key = _cast(lax.bitwise_not(flags), it, False)
    count = lax.reduce_sum(_cast(flags, it, False), (0,))
    outs = lax.sort((key, *operands), dimension=0, num_keys=1)[1:] if n else list(operands)
    real = lax.lt(_iota((size,), 0), lax.broadcast_in_dim(count, (size,), ()))
    res = []
    for o, fill in zip(outs, fills, strict=True):
        if size <= n:
            o = lax.slice(o, (0,), (size,))
        else:
            o = lax.concatenate([o, _full((size - n,), 0, o.dtype)], 0)
        res.append(o if fill is None else lax.select_n(real, _filled(fill, size, o.dtype), o))
    return res, count, real


def _count_flags(name, flags):
    return _static_size(name, lax.reduce_sum(_cast(flags, dtypes.default_int(), False), (0,)),
                        "size=")


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of `a`, one index array per axis (row-major order).

    Args:
      a: an array-like of rank >= 1.
      size: the static number of results (needed under transformations): extra entries
        are dropped, missing ones take `fill_value`.
      fill_value: the padding index (default 0), a scalar or one per axis.

    Returns:
      A tuple of `a.ndim` default-int arrays.

    Raises:
      ConcretizationTypeError: under a transformation without `size`.
    """
    x = _arr(a)
    if x.ndim == 0:
        raise user_error(ValueError, "nonzero: calling nonzero on 0d arrays is not allowed; use "
                         "mnp.atleast_1d(a).nonzero() instead")
    flags = _ravel(x if dtypes.is_bool(x.dtype) else lax.ne(x, _full(x.shape, 0, x.dtype)))
    size = operator.index(_count_flags("nonzero", flags) if size is None else size)
    fills = fill_value if isinstance(fill_value, (tuple, list)) else [fill_value] * x.ndim
    if len(fills) != x.ndim:
        raise user_error(ValueError, f"nonzero: fill_value needs one value per axis of "
                         f"{x.aval.str_short()}, got {fill_value!r}")
    (flat,), _, real = _compact(flags, [_iota((x.size,), 0)], size, [None])
    out, it = [], dtypes.default_int()
    for i, (d, fill) in enumerate(zip(x.shape, fills, strict=True)):
        stride = max(math.prod(x.shape[i + 1:]), 1)
        idx = lax.div(flat, _full((size,), stride, it)) if stride != 1 else flat
        idx = lax.rem(idx, _full((size,), max(d, 1), it))
        out.append(lax.select_n(real, _filled(0 if fill is None else fill, size, it), idx))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of the flattened `a` (see `nonzero` for `size`)."""
    return nonzero(_ravel(_arr(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements as rows: a (count, a.ndim) default-int array."""
    x = _arr(a)
    if x.ndim == 0:
        n = nonzero(lax.reshape(x, (1,)), size=size, fill_value=fill_value)[0]
        return lax.broadcast_in_dim(_full((), 0, n.dtype), (n.shape[0], 0), ())
    cols = nonzero(x, size=size, fill_value=fill_value)
    k = cols[0].shape[0]
    return lax.concatenate([lax.reshape(c, (k, 1)) for c in cols], 1)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None):
    """The sorted unique elements of `ar` (axis=None) or unique slices along `axis`.

    Args:
      ar: an array-like.
      return_index: also return the index of each value's first occurrence.
      return_inverse: also return, for each element, the index of its unique value
        (`ar`'s shape for axis=None, as NumPy 2).
      return_counts: also return how often each unique value occurs.
      axis: None (flatten) or the axis along which to find unique slices.
      equal_nan: count all NaNs as one value.
      size: the static number of unique values (needed under transformations): extras are
        dropped; missing ones are filled with `fill_value` (default: the smallest value),
        with index 0 and count 0.

    Returns:
      The unique values, followed by the requested arrays (a tuple if any is requested).

    Raises:
      ConcretizationTypeError: under a transformation without `size`.
    """
    x0 = _arr(ar)
    x, ax = _sort_input("unique", x0, axis)
    if axis is not None:
        x = lax.transpose(x, (ax,) + tuple(i for i in range(x.ndim) if i != ax))
    n, it = x.shape[0], dtypes.default_int()
    cols, order, first = _sorted_groups([x] if axis is None else _columns(x), n, equal_nan)
    size = operator.index(_count_flags("unique", first) if size is None else size)
    fills = [(lax.slice(c, (0,), (1,)) if n else 0) if fill_value is None else fill_value
             for c in cols]
    (*ucols, uidx, start), count, real = _compact(first, [*cols, order, _iota((n,), 0)],
                                                  size, [*fills, 0, None])
    outs = [ucols[0] if axis is None else _uncolumns(ucols, size, x.shape[1:], x.dtype, ax)]
    if return_index:
        outs.append(uidx)
    if return_inverse:
        group = lax.sub(lax.cumsum(_cast(first, it, False), 0), _full((n,), 1, it))
        inv = lax.sort((order, group), dimension=0, num_keys=1)[1] if n else group
        outs.append(lax.reshape(inv, x0.shape) if axis is None else inv)
    if return_counts:  # the distance from each value's first position to the next one's
        nxt = lax.concatenate([lax.slice(start, (1,), (size,)), _full((1,), n, it)], 0) \
            if size else start
        # the last kept value ends where value number `size` starts (at n if none is dropped)
        kept = lax.le(lax.cumsum(_cast(first, it, False), 0), _full((n,), size, it))
        end = lax.reduce_sum(_cast(kept, it, False), (0,))
        last = lax.ge(lax.add(_iota((size,), 0), _full((size,), 1, it)),
                      lax.broadcast_in_dim(lax.min(count, _full((), size, it)), (size,), ()))
        nxt = lax.select_n(last, nxt, lax.broadcast_in_dim(end, (size,), ()))
        outs.append(_select(real, lax.sub(nxt, start), 0))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _sorted_groups(cols, n, equal_nan):
    """Sort the n rows given by `cols` stably: (sorted columns, the original position of
    each sorted row, whether each sorted row starts a new value)."""
    order = _iota((n,), 0)
    if n and cols:
        *cols, order = lax.sort((*cols, order), dimension=0, num_keys=len(cols))
    if not n:
        return cols, order, _full((0,), True, dtypes.bool_)
    later = _full((n - 1,), False, dtypes.bool_)
    for c in cols:
        later = lax.bitwise_or(later, _differs(c, equal_nan))
    return cols, order, lax.concatenate([_full((1,), True, dtypes.bool_), later], 0)


def _columns(x):
    """The columns of x (n, *rest) flattened to (n, m): m arrays of shape (n,)."""
    n, m = x.shape[0], math.prod(x.shape[1:])
    flat = lax.reshape(x, (n, m))
    return [lax.reshape(lax.slice(flat, (0, j), (n, j + 1)), (n,)) for j in range(m)]


def _uncolumns(cols, size, rest, dtype, ax):
    if not cols:
        out = _full((size, *rest), 0, dtype)
    else:
        out = lax.reshape(lax.concatenate([lax.reshape(c, (size, 1)) for c in cols], 1),
                          (size, *rest))
    perm = tuple(range(1, ax + 1)) + (0,) + tuple(range(ax + 1, len(rest) + 1))
    return lax.transpose(out, perm) if ax else out


def _differs(c, equal_nan):
    n = c.shape[0]
    a, b = lax.slice(c, (1,), (n,)), lax.slice(c, (0,), (n - 1,))
    ne = lax.ne(a, b)
    if equal_nan and dtypes.is_inexact(c.dtype):
        ne = lax.bitwise_and(ne, lax.bitwise_not(lax.bitwise_and(_isnan(a), _isnan(b))))
    return ne


# ---- counting ----------------------------------------------------------------------------
def bincount(x, weights=None, minlength=0, *, length=None):
    """Occurrences of each value in the non-negative integer array `x` (optionally
    weighted): `out[i]` counts (or sums the weights of) the elements equal to i.

    Args:
      x: a 1-D integer (or bool) array-like. Negative values count in bin 0 (as JAX).
      weights: an array-like of x's shape; the result takes its dtype.
      minlength: the least number of bins.
      length: the static number of bins (needed under transformations); larger values
        are dropped.

    Returns:
      A 1-D array of `max(x.max() + 1, minlength)` (or `length`) bins; default int
      without weights.
    """
    xv = _arr(x)
    if xv.ndim != 1:
        raise user_error(ValueError, f"bincount: x must be 1-D, got {xv.aval.str_short()}")
    if not (dtypes.is_int(xv.dtype) or dtypes.is_bool(xv.dtype)):
        raise user_error(TypeError,
                         f"bincount: x must be an integer array, got {xv.aval.str_short()}")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise user_error(ValueError, f"bincount: minlength must be non-negative, got {minlength}")
    it = dtypes.default_int()
    xv = _cast(xv, it, False)
    if length is None:
        top = lax.reduce_max(xv, (0,)) if xv.shape[0] else 0
        length = max(minlength, _static_size("bincount", top, "length=") + 1
                     if xv.shape[0] else 0)
    length = operator.index(length)
    w = None
    if weights is not None:
        w = _arr(weights)
        if w.shape != xv.shape:
            raise user_error(ValueError,
                             f"bincount: weights ({w.aval.str_short()}) must have the shape "
                             f"of x ({xv.aval.str_short()})")
    return _bincount_fixed(lax.max(xv, _full((), 0, it)), w, length)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The bin edges `histogram` uses: `bins` + 1 evenly spaced edges over `range` (default
    the data's min and max), or the given edges; a float dtype."""
    x = _arr(a)
    dt = x.dtype if dtypes.is_float(x.dtype) else dtypes.default_float()
    if not isinstance(bins, (int, np.integer)):
        b = _arr(bins)
        if b.ndim != 1:
            raise user_error(ValueError,
                             f"histogram: bins must be an int or 1-D, got {b.aval.str_short()}")
        return _cast(b, dtypes.promote_types(b.dtype, dt) if dtypes.is_float(b.dtype) else dt,
                     False)
    bins = operator.index(bins)
    if bins < 1:
        raise user_error(ValueError, f"histogram: bins must be a positive int, got {bins}")
    xc = _cast(x, dt, False)
    if range is None:
        if x.size == 0:
            lo, hi = _full((), 0, dt), _full((), 1, dt)
        else:
            axes = tuple(builtins.range(x.ndim))
            lo, hi = lax.reduce_min(xc, axes), lax.reduce_max(xc, axes)
    else:
        r0, r1 = range
        if not isinstance(r0, Array) and not isinstance(r1, Array) and r0 > r1:
            raise user_error(ValueError,
                             f"histogram: max must be larger than min in range={range!r}")
        lo, hi = _cast(_arr(r0), dt, False), _cast(_arr(r1), dt, False)
    same = lax.eq(lo, hi)
    half = _full((), 0.5, dt)
    lo = lax.select_n(same, lo, lax.sub(lo, half))
    hi = lax.select_n(same, hi, lax.add(hi, half))
    cdt = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
    step = lax.div(_cast(lax.sub(hi, lo), cdt, False), _full((), bins, cdt))
    i = _cast(_iota((bins + 1,), 0), cdt, False)
    edges = lax.add(_cast(lo, cdt, False), lax.mul(i, step))
    last = _iota((bins + 1,), 0)
    edges = lax.select_n(lax.eq(last, _full((), bins, last.dtype)), edges,
                         lax.broadcast_in_dim(_cast(hi, cdt, False), (bins + 1,), ()))
    return _cast(edges, dt, False)


def histogram(a, bins=10, range=None, weights=None, density=None):
    """Histogram of the flattened `a`: (counts, bin_edges).

    Args:
      a: an array-like.
      bins: the number of equal-width bins (static), or the 1-D array of edges.
      range: (lo, hi) of the bins (default: the data's min and max).
      weights: an array-like of a's shape: each element adds its weight.
      density: normalise to a probability density.

    Returns:
      `counts` (the edges' float dtype, promoted with the weights' dtype, as JAX's) of
      `bins` entries, and the `bins + 1` edges. Bins are half-open except the last, which
      includes its right edge; values outside are dropped.
    """
    x = _ravel(_arr(a))
    edges = histogram_bin_edges(x, bins, range)
    nb = edges.shape[0] - 1
    xc, ec = promote_dtypes("histogram", x, edges)
    idx = lax.sub(searchsorted(ec, xc, side="right"), _full(xc.shape, 1, dtypes.default_int()))
    top = lax.slice(ec, (nb,), (nb + 1,))
    at_top = lax.eq(xc, lax.broadcast_in_dim(lax.reshape(top, ()), xc.shape, ()))
    idx = lax.select_n(at_top, idx, _full(xc.shape, nb - 1, idx.dtype))
    outside = lax.bitwise_or(lax.lt(idx, _full((), 0, idx.dtype)),
                             lax.ge(idx, _full((), nb, idx.dtype)))
    idx = lax.select_n(outside, idx, _full(xc.shape, nb, idx.dtype))  # dropped: past the end
    w = None if weights is None else _ravel(_arr(weights))
    fdt = _inexact(edges.dtype if w is None else dtypes.promote_types(edges.dtype, w.dtype))
    counts = _bincount_fixed(idx, None if w is None else _cast(w, fdt, False), nb)
    counts = _cast(counts, fdt, False)  # float counts, as JAX's
    if density:
        c = counts
        e = _cast(edges, fdt, False)
        widths = lax.sub(lax.slice(e, (1,), (nb + 1,)), lax.slice(e, (0,), (nb,)))
        total = lax.reduce_sum(c, (0,))
        counts = lax.div(lax.div(c, widths), lax.broadcast_in_dim(total, (nb,), ()))
    return counts, edges


def _bincount_fixed(idx, w, length):
    """Sums of the weights `w` (ones if None) per index in [0, length); others dropped."""
    it = dtypes.default_int()
    w = _full(idx.shape, 1, it) if w is None else w
    return _full((length,), 0, w.dtype).at[idx].add(w, mode="drop")


# ---- select ------------------------------------------------------------------------------
def select(condlist, choicelist, default=0):
    """Elementwise `choicelist[i]` for the first true `condlist[i]`, else `default`.

    All conditions (bool) and choices broadcast together; the choices promote to one dtype.
    """
    if len(condlist) != len(choicelist):
        raise user_error(ValueError, f"select: condlist and choicelist need the same length, got "
                         f"{len(condlist)} and {len(choicelist)}")
    if not condlist:
        raise user_error(ValueError, "select: condlist must be non-empty")
    conds = [_arr(c) for c in condlist]
    for c in conds:
        if not dtypes.is_bool(c.dtype):
            raise user_error(TypeError,
                             f"select: conditions must be bool arrays, got {c.aval.str_short()}")
    choices = promote_dtypes("select", *choicelist, default)
    shape = broadcast_shapes("select", *[a.shape for a in conds + choices])
    out = _bcast(choices[-1], shape)
    for c, v in zip(reversed(conds), reversed(choices[:-1]), strict=True):
        out = lax.select_n(_bcast(c, shape), out, _bcast(v, shape))
    return out
