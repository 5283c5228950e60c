"""Index tricks: `mgrid`, `ogrid`, `r_`, `c_`, `s_` and `index_exp`.

As in NumPy, a slice ``start:stop:step`` in `mgrid`/`ogrid`/`r_` means ``arange`` when the
step is real and ``linspace(start, stop, abs(step))`` (endpoint included) when the step is
an imaginary number such as ``5j``. Bounds must be static Python numbers.
"""

import numpy as np

from mytorch.core.array import Array
from mytorch.core.source_info import user_error
from mytorch.errors import ConcretizationTypeError
from mytorch.numpy.creation import arange, array, linspace, meshgrid
from mytorch.numpy.joining import concatenate, stack
from mytorch.numpy.shapes import reshape, swapaxes, transpose

__all__ = ["c_", "fill_diagonal", "index_exp", "mgrid", "ogrid", "r_", "s_"]

s_ = np.s_
index_exp = np.index_exp


def _static(v, name, what):
    if isinstance(v, Array):
        try:
            return v.item()
        except ConcretizationTypeError:
            raise user_error(TypeError,
                             f"{name}: the {what} of a slice must be a static number, not a "
                            f"traced value") from None
    return v


def _range(sl, name):
    """The 1-D array a slice stands for: arange for a real step, linspace for an imaginary
    step (its magnitude is the number of points)."""
    start = _static(sl.start, name, "start")
    stop = _static(sl.stop, name, "stop")
    step = _static(sl.step, name, "step")
    start = 0 if start is None else start
    if isinstance(step, complex):
        num = int(abs(step))
        return linspace(start, stop, num, endpoint=True)
    if stop is None:
        raise user_error(ValueError, f"{name}: a slice needs a stop, got {sl}")
    return arange(start, stop, 1 if step is None else step)


class _Grid:
    """`mgrid` (dense) and `ogrid` (open, broadcastable) grids."""

    def __init__(self, sparse, name):
        self.sparse, self.name = sparse, name

    def __getitem__(self, key):
        single = isinstance(key, slice)
        keys = (key,) if single else tuple(key)
        for k in keys:
            if not isinstance(k, slice):
                raise user_error(TypeError,
                                 f"{self.name}: expected slices such as 0:3 or 0:1:5j, got "
                                f"{k!r}")
        axes = [_range(k, self.name) for k in keys]
        if single:
            return axes[0]
        n = len(axes)
        if self.sparse:
            return [reshape(a, tuple(-1 if i == j else 1 for j in range(n)))
                    for i, a in enumerate(axes)]
        return stack(meshgrid(*axes, indexing="ij"), axis=0)


mgrid = _Grid(False, "mgrid")
ogrid = _Grid(True, "ogrid")


def _directive(text, name):
    """Parse an 'axis[,ndmin[,trans1d]]' string; 'r' and 'c' are the matrix forms NumPy
    accepts, which have no meaning for arrays here."""
    parts = text.split(",")
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        raise user_error(ValueError, f"{name}: unknown directive {text!r}; expected 'axis', "
                         f"'axis,ndmin' or 'axis,ndmin,trans1d'") from None
    if len(nums) > 3:
        raise user_error(ValueError, f"{name}: directive {text!r} has more than three fields")
    return tuple(nums + [0, 1, -1][len(nums):])


def _with_ndmin(x, ndmin, trans1d, from_slice):
    """NumPy's rule for an item of `r_`/`c_`: leading axes are added up to `ndmin`, then the
    item's own axes are moved so that its last one lands at axis `trans1d`."""
    k = x.ndim
    if k >= ndmin:
        return x
    y = reshape(x, (1,) * (ndmin - k) + x.shape)
    if trans1d == -1:
        return y
    if from_slice:
        return swapaxes(y, -1, trans1d)
    k2, k1 = ndmin - k, trans1d
    if k1 < 0:
        k1 += k2 + 1
    axes = list(range(ndmin))
    return transpose(y, axes[:k1] + axes[k2:] + axes[k1:k2])


class _Concatenator:
    """`r_` (join along an axis, default 0) and `c_` (join along the last axis, as columns)."""

    def __init__(self, axis, ndmin, trans1d, name):
        self.defaults, self.name = (axis, ndmin, trans1d), name

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.defaults
        if items and isinstance(items[0], str):
            axis, ndmin, trans1d = _directive(items[0], self.name)
            items = items[1:]
        parts = []
        for item in items:
            if isinstance(item, str):
                raise user_error(ValueError,
                                 f"{self.name}: a directive string must come first, got "
                                 f"{item!r} later")
            if isinstance(item, slice):
                part = _with_ndmin(_range(item, self.name), ndmin, trans1d, True)
            else:
                part = _with_ndmin(array(item, copy=False), max(ndmin, 1), trans1d, False)
            parts.append(part)
        if not parts:
            return array([])
        return concatenate(parts, axis=axis)


r_ = _Concatenator(0, 1, -1, "r_")
c_ = _Concatenator(-1, 2, 0, "c_")


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """`a` with its main diagonal set to `val` (repeated cyclically, as NumPy), returned
    as a new array: mytorch arrays are immutable, so ``inplace=False`` is required (as in
    JAX). `a` is 2-D (`wrap` continues the diagonal below a tall matrix every ncols + 1
    rows) or N-d with all dimensions equal.
    """
    if inplace:
        raise user_error(ValueError,
                         "fill_diagonal: mytorch arrays are immutable; pass inplace=False "
                         "and use the returned array")
    x = array(a, copy=False)
    if x.ndim < 2:
        raise user_error(ValueError, f"fill_diagonal: array must be at least 2-d, got "
                         f"{x.aval.str_short()}")
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise user_error(ValueError,
                         f"fill_diagonal: all dimensions of an N-d array must be equal, got "
                         f"shape {x.shape}")
    if x.ndim == 2:
        rows, cols = x.shape
        step = cols + 1
        end = x.size if wrap else min(rows, cols) * cols
        flat = np.arange(0, end, step)
    else:
        n = x.shape[0]
        flat = np.arange(n) * sum(n ** k for k in range(x.ndim))
    v = reshape(array(val, copy=False).astype(x.dtype), (-1,))
    if flat.size == 0:
        return x
    if v.shape[0] == 0:
        raise user_error(ValueError, "fill_diagonal: val is empty")
    vals = v[np.arange(flat.size) % v.shape[0]]
    return reshape(reshape(x, (-1,)).at[flat].set(vals), x.shape)
