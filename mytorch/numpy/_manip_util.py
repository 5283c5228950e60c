"""Helpers shared by the array-manipulation modules (shapes, joining, padding, manipulation):
axis normalisation, static arguments, slices along an axis and static gathers."""

import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, from_numpy
from mytorch.core.source_info import user_error
from mytorch.core.trace import Tracer
from mytorch.errors import AxisError, ConcretizationTypeError
from mytorch.numpy._promote import asarray_any

# A static gather with more contiguous runs than this becomes one gather instead of slices.
_MAX_PIECES = 16


# ---- helpers ------------------------------------------------------------------------------
def _arr(x):
    return x if isinstance(x, Array) else asarray_any(x)


def _s(x):
    return x.aval.str_short()


def _axis(op, axis, x, ndim=None):
    """`axis` as an int in [0, ndim) (ndim defaults to x's rank); ValueError otherwise."""
    n = x.ndim if ndim is None else ndim
    try:
        ax = operator.index(axis)
    except TypeError:
        raise user_error(TypeError, f"{op}: axis must be an int, got {axis!r}") from None
    if not -n <= ax < n:
        rank = f"rank {n}" if n == x.ndim else f"result rank {n}"
        raise user_error(AxisError, f"{op}: axis {ax} is out of bounds for {_s(x)} ({rank})")
    return ax % n


def _axes(op, axis, x, ndim=None):
    """An int or a sequence of ints as a tuple of distinct normalised axes."""
    seq = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    out = tuple(_axis(op, a, x, ndim) for a in seq)
    if len(set(out)) != len(out):
        raise user_error(ValueError, f"{op}: repeated axis in {axis} for {_s(x)}")
    return out


def static_shape(op, shape):
    """`shape` (an int or a sequence of ints) as a tuple of Python ints. A traced entry
    raises ConcretizationTypeError saying that shapes must be static and how to make them so;
    anything else that is not an int raises TypeError."""
    dims = (shape,) if _is_int(shape) else shape
    try:
        dims = tuple(dims)
    except TypeError:
        raise user_error(TypeError, f"{op}: shape must be an int or a tuple of ints, "
                                    f"got {shape!r}") from None
    out = []
    for i, d in enumerate(dims):
        if isinstance(d, Tracer) and d.concrete_value() is None:
            raise user_error(ConcretizationTypeError,
                f"{op}: shapes must be static, but entry {i} of the shape is a traced "
                f"{d.aval.str_short()} (in {d._trace.name}). Compute it from static shapes "
                "(such as x.shape[0]) or Python values rather than from array values, or "
                "mark the argument static (jit(f, static_argnums=...))")
        try:
            out.append(operator.index(d))
        except TypeError:
            raise user_error(TypeError, f"{op}: shape must be an int or a tuple of "
                                        f"ints, got {shape!r}") from None
    return tuple(out)


def _is_int(v):
    return isinstance(v, (int, np.integer)) or (isinstance(v, Array) and v.ndim == 0)


def _static(op, name, value):
    """A static argument as a NumPy array (concrete arrays are read; tracers raise)."""
    if isinstance(value, Tracer):
        concrete = value.concrete_value()
        if concrete is None:
            raise user_error(ConcretizationTypeError,
                f"{op}: `{name}` must be static (Python ints or a concrete array), but got a "
                f"traced {value.aval.str_short()}. Pass it as a Python value, or mark it "
                "static with static_argnums."
            )
        return np.asarray(concrete)
    return np.asarray(value)


def _static_int(op, name, value):
    v = _static(op, name, value)
    if v.ndim != 0 or v.dtype.kind not in "iub":
        raise user_error(TypeError, f"{op}: `{name}` must be an int, got {value!r}")
    return int(v)


def _zero(x):
    return from_numpy(np.zeros((), x.dtype))


def _slice_axis(x, start, stop, axis):
    """`x[..., start:stop, ...]` along `axis` (static, in-range bounds)."""
    starts = [0] * x.ndim
    limits = list(x.shape)
    starts[axis], limits[axis] = start, stop
    return lax.slice(x, tuple(starts), tuple(limits))


def _set_dim(shape, axis, size):
    return tuple(size if i == axis else d for i, d in enumerate(shape))


def _broadcast_axis(x, axis, size):
    """`x` (size 1 along `axis`) repeated `size` times along it."""
    return lax.broadcast_in_dim(x, _set_dim(x.shape, axis, size), tuple(range(x.ndim)))


def _concat(parts, axis):
    parts = [p for p in parts if p.shape[axis] > 0] or parts[:1]
    return parts[0] if len(parts) == 1 else lax.concatenate(parts, axis)


def _runs(idx):
    """Split static indices into runs (start, length, step) with step in {1, 0, -1}."""
    runs, i, m = [], 0, len(idx)
    while i < m:
        j, step = i + 1, 1
        if j < m and idx[j] - idx[i] in (1, 0, -1):
            step = int(idx[j] - idx[i])
            while j < m and idx[j] - idx[j - 1] == step:
                j += 1
        runs.append((int(idx[i]), j - i, step))
        if len(runs) > _MAX_PIECES:
            return None
        i = j
    return runs


def _take_static(x, idx, axis):
    """`x` gathered along `axis` at static in-range indices: slices when there are few
    contiguous runs, one gather otherwise."""
    idx = np.asarray(idx, dtype=np.int64).reshape(-1)
    n = x.shape[axis]
    if idx.size == n and np.array_equal(idx, np.arange(n)):
        return x
    if idx.size == 0:
        return _slice_axis(x, 0, 0, axis)
    runs = _runs(idx) if idx.size <= 4096 else None
    if runs is None:
        from mytorch.numpy.indexing import take

        index = from_numpy(idx.astype(dtypes.default_int()))
        return take(x, index, axis=axis)
    parts = []
    for start, length, step in runs:
        if step == 1:
            parts.append(_slice_axis(x, start, start + length, axis))
        elif step == 0:
            parts.append(_broadcast_axis(_slice_axis(x, start, start + 1, axis), axis, length))
        else:
            parts.append(lax.rev(_slice_axis(x, start - length + 1, start + 1, axis), (axis,)))
    return _concat(parts, axis)
