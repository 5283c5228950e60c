"""Array manipulation: reshaping, transposing, joining, splitting, tiling, padding, diagonals.

NumPy's functions and signatures over lax's structural primitives. Shapes, axes, split
points, repeats, pad widths and insert/delete positions are static (Python values, or
concrete arrays that are read); `roll` also takes a traced shift, and `repeat` traced
repeats together with `total_repeat_length`. Structural functions keep the operand's weak
type; joining functions promote their operands like arithmetic does.

Reshaping and transposing live in shapes.py, joining and splitting in joining.py and `pad`
in padding.py (their shared helpers in _manip_util.py); they are re-exported here. Tiling,
flipping, rolling, diagonals and insert/delete are defined here.
"""

import math
import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import from_numpy
from mytorch.core.source_info import user_error
from mytorch.core.trace import Tracer
from mytorch.errors import ConcretizationTypeError
from mytorch.numpy import reductions as _reductions
from mytorch.numpy._manip_util import (
    _arr, _axes, _axis, _concat, _is_int, _s, _set_dim, _slice_axis, _static, _static_int,
    _take_static, _zero,
)
from mytorch.numpy._promote import broadcast_to_shape
from mytorch.numpy.joining import (
    append, array_split, block, column_stack, concat, concatenate, dsplit, dstack, hsplit,
    hstack, row_stack, split, stack, unstack, vsplit, vstack,
)
from mytorch.numpy.padding import pad
from mytorch.numpy.shapes import (
    _shape_tuple, atleast_1d, atleast_2d, atleast_3d, broadcast_arrays, broadcast_shapes,
    broadcast_to, expand_dims, matrix_transpose, moveaxis, permute_dims, ravel, reshape,
    rollaxis, squeeze, swapaxes, transpose,
)

__all__ = [
    "append", "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "block",
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "column_stack", "concat",
    "concatenate", "delete", "diag", "diag_indices", "diag_indices_from", "diagflat",
    "diagonal", "dsplit", "dstack", "expand_dims", "flip", "fliplr", "flipud", "hsplit",
    "hstack", "insert", "matrix_transpose", "moveaxis", "pad", "permute_dims", "ravel",
    "repeat", "reshape", "resize", "roll", "rollaxis", "rot90", "row_stack", "split", "squeeze",
    "stack", "swapaxes", "tile", "trace", "transpose", "tril_indices", "tril_indices_from",
    "trim_zeros", "triu_indices", "triu_indices_from", "unstack", "vsplit", "vstack",
]


# ---- tiling and repeating -----------------------------------------------------------------
def tile(A, reps):
    """`A` repeated `reps` times along each axis (reps: int or tuple; NumPy's ranks rule)."""
    x = _arr(A)
    reps = tuple(int(r) for r in _static("tile", "reps", reps).reshape(-1))
    if any(r < 0 for r in reps):
        raise user_error(ValueError, f"tile: reps must be non-negative, got {reps}")
    if x.ndim < len(reps):
        x = lax.reshape(x, (1,) * (len(reps) - x.ndim) + x.shape)
    reps = (1,) * (x.ndim - len(reps)) + reps
    if all(r == 1 for r in reps):
        return x
    inter = tuple(d for r, s in zip(reps, x.shape, strict=True) for d in (r, s))
    y = lax.broadcast_in_dim(x, inter, tuple(range(1, 2 * x.ndim, 2)))
    return lax.reshape(y, tuple(r * s for r, s in zip(reps, x.shape, strict=True)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Repeat each element of `a` along `axis` (flattened when None).

    Args:
      a: array.
      repeats: an int, or one count per element along the axis (static; a traced array
        needs `total_repeat_length`).
      axis: the axis, or None to repeat the flattened array.
      total_repeat_length: the static output length: longer results are cut, shorter ones
        padded by repeating the last element.

    Returns:
      `repeat([1, 2], [1, 2])` is [1, 2, 2].
    """
    x = _arr(a)
    if axis is None or (x.ndim == 0 and _is_int(axis) and axis in (0, -1)):
        x, axis = ravel(x), 0  # NumPy repeats a 0-d array along "axis 0" as if 1-D
    axis = _axis("repeat", axis, x)
    n = x.shape[axis]
    if isinstance(repeats, Tracer) and repeats.concrete_value() is None:
        return _repeat_traced(x, repeats, axis, total_repeat_length)
    reps = _static("repeat", "repeats", repeats)
    if reps.dtype.kind not in "iubf" or reps.ndim > 1:
        raise user_error(TypeError,
            f"repeat: repeats must be an int or a 1-D sequence of ints, got "
            f"{repeats!r}")
    reps = reps.astype(np.int64)
    if reps.size == 1:
        reps = reps.reshape(())
    if reps.ndim and reps.shape[0] != n:
        raise user_error(ValueError, f"repeat: {reps.shape[0]} repeats for an axis of size {n} "
                                     f"(axis {axis} of {_s(x)})")
    if n and np.any(reps < 0):
        raise user_error(ValueError, f"repeat: repeats must be non-negative, got {reps.tolist()}")
    if reps.ndim == 0 and total_repeat_length in (None, n * int(reps)):
        r = max(int(reps), 0)  # negative only for an empty axis, where NumPy allows it
        shape = x.shape[: axis + 1] + (r,) + x.shape[axis + 1:]
        dims = tuple(i if i <= axis else i + 1 for i in range(x.ndim))
        y = lax.broadcast_in_dim(x, shape, dims)
        return lax.reshape(y, _set_dim(x.shape, axis, n * r))
    idx = np.repeat(np.arange(n), reps)
    if total_repeat_length is not None:
        total = operator.index(total_repeat_length)
        idx = idx[:total]
        if idx.size < total:
            if n == 0:
                raise user_error(ValueError,
                    "repeat: cannot fill total_repeat_length from an empty axis")
            idx = np.concatenate([idx, np.full(total - idx.size, n - 1)])
    return _take_static(x, idx, axis)


def _repeat_traced(x, repeats, axis, total):
    if total is None:
        raise user_error(ConcretizationTypeError,
            f"repeat: traced repeats ({repeats.aval.str_short()}) need the static "
            "`total_repeat_length=` argument, since the output size depends on their values"
        )
    from mytorch.numpy.indexing import take

    n = x.shape[axis]
    if n == 0:
        raise user_error(ValueError,
            f"repeat: cannot fill total_repeat_length={total} from the empty "
            f"axis {axis} of {_s(x)}")
    reps = lax.convert_element_type(repeats, dtypes.default_int())
    reps = broadcast_to(reps, (n,))
    ends = lax.cumsum(reps, 0)
    pos = lax.broadcasted_iota(reps.dtype, (total, n), 0)
    passed = lax.convert_element_type(lax.ge(pos, broadcast_to_shape(ends, (total, n))),
                                      reps.dtype)
    idx = lax.min(lax.reduce_sum(passed, (1,)), n - 1)  # past the end: the last element
    return take(x, idx, axis=axis)


# ---- reordering ---------------------------------------------------------------------------
def flip(m, axis=None):
    """`m` with the order of elements reversed along `axis` (all axes when None)."""
    x = _arr(m)
    dims = tuple(range(x.ndim)) if axis is None else _axes("flip", axis, x)
    return lax.rev(x, dims) if dims else x


def fliplr(m):
    """Reverse axis 1 (rank >= 2)."""
    x = _arr(m)
    if x.ndim < 2:
        raise user_error(ValueError, f"fliplr: needs an array of rank >= 2, got {_s(x)}")
    return flip(x, 1)


def flipud(m):
    """Reverse axis 0 (rank >= 1)."""
    x = _arr(m)
    if x.ndim < 1:
        raise user_error(ValueError, f"flipud: needs an array of rank >= 1, got {_s(x)}")
    return flip(x, 0)


def roll(a, shift, axis=None):
    """Roll elements along `axis`: elements shifted past the end reappear at the start.

    Args:
      a: array.
      shift: an int or a tuple of ints (static), or a traced int scalar.
      axis: an int or tuple of ints (broadcast against `shift`), or None to roll the
        flattened array and restore the shape.

    Returns:
      `roll([0, 1, 2, 3], 1)` is [3, 0, 1, 2].
    """
    x = _arr(a)
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), x.shape)
    if isinstance(shift, Tracer) and shift.concrete_value() is None:
        return _roll_traced(x, shift, axis)
    shifts = _static("roll", "shift", shift)
    axes = np.asarray(axis)
    try:
        shifts, axes = np.broadcast_arrays(shifts, axes)
    except ValueError:
        raise user_error(ValueError,
            f"roll: shift {shift} and axis {axis} must broadcast") from None
    total = {}
    for s, ax in zip(shifts.reshape(-1).tolist(), axes.reshape(-1).tolist(), strict=True):
        ax = _axis("roll", ax, x)
        total[ax] = total.get(ax, 0) + int(s)
    for ax, s in total.items():
        n = x.shape[ax]
        k = s % n if n else 0
        if k:
            x = lax.concatenate([_slice_axis(x, n - k, n, ax), _slice_axis(x, 0, n - k, ax)],
                                ax)
    return x


def _roll_traced(x, shift, axis):
    axes = (axis,) if _is_int(axis) else tuple(axis)
    if shift.ndim > 1 or (shift.ndim == 1 and shift.shape[0] not in (1, len(axes))):
        raise user_error(ValueError,
            f"roll: shift {shift.aval.str_short()} does not match axis {axis}")
    if not dtypes.is_int(shift.dtype):
        raise user_error(TypeError, f"roll: a traced shift must be an integer, got {_s(shift)}")
    shift = lax.convert_element_type(shift, dtypes.default_int())
    for i, ax in enumerate(axes):
        ax = _axis("roll", ax, x)
        n = x.shape[ax]
        if n == 0:
            continue
        s = shift
        if shift.ndim:
            j = i if shift.shape[0] > 1 else 0
            s = lax.reshape(lax.slice(shift, (j,), (j + 1,)), ())
        s = lax.rem(s, n)
        s = lax.select(lax.lt(s, 0), lax.add(s, n), s)
        starts = [0] * x.ndim
        starts[ax] = lax.sub(n, s)  # in (0, n]: the doubled array holds every rotation
        x = lax.dynamic_slice(lax.concatenate([x, x], ax), starts, x.shape)
    return x


def rot90(m, k=1, axes=(0, 1)):
    """Rotate `m` by 90 degrees `k` times in the plane of `axes` (from the first axis
    towards the second)."""
    x = _arr(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise user_error(ValueError, f"rot90: axes must have length 2, got {axes}")
    a0, a1 = (_axis("rot90", a, x) for a in axes)
    if a0 == a1:
        raise user_error(ValueError, f"rot90: the axes must be different, got {axes} for {_s(x)}")
    k = operator.index(k) % 4
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a0), a1)
    perm = list(range(x.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(x, a1), perm)
    return flip(transpose(x, perm), a1)


# ---- diagonals ----------------------------------------------------------------------------
def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of `a` in the plane (axis1, axis2), `offset` above the main one.

    Returns:
      An array whose last axis is the diagonal and whose leading axes are the remaining
      axes of `a`. `diagonal(eye(3))` is [1, 1, 1].
    """
    x = _arr(a)
    if x.ndim < 2:
        raise user_error(ValueError, f"diagonal: needs an array of rank >= 2, got {_s(x)}")
    i, j = _axis("diagonal", axis1, x), _axis("diagonal", axis2, x)
    if i == j:
        raise user_error(ValueError, f"diagonal: axis1 and axis2 cannot be the same (both {i})")
    k = _static_int("diagonal", "offset", offset)
    y = transpose(x, [d for d in range(x.ndim) if d not in (i, j)] + [i, j])
    lead, (n1, n2) = y.shape[:-2], y.shape[-2:]
    r0, c0 = (0, k) if k >= 0 else (-k, 0)
    d = max(0, min(n1 - r0, n2 - c0))
    zeros = (0,) * len(lead)
    y = lax.slice(y, zeros + (min(r0, n1), min(c0, n2)), lead + (min(r0, n1) + d,
                                                                 min(c0, n2) + d))
    y = lax.reshape(y, lead + (d * d,))
    if d <= 1:
        return y
    return lax.slice(y, zeros + (0,), lead + (d * d,), (1,) * len(lead) + (d + 1,))


def diag(v, k=0):
    """A 2-D array with the 1-D `v` on its `k`-th diagonal, or the `k`-th diagonal of a
    2-D `v`."""
    x = _arr(v)
    k = _static_int("diag", "k", k)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise user_error(ValueError, f"diag: input must be 1-D or 2-D, got {_s(x)}")
    d = x.shape[0]
    n = d + abs(k)
    lo = k if k >= 0 else -k * n
    used = d + (d - 1) * n if d else 0
    flat = lax.pad(x, _zero(x), ((lo, n * n - lo - used, n if d else 0),))
    return lax.reshape(flat, (n, n))


def diagflat(v, k=0):
    """A 2-D array with the flattened `v` on its `k`-th diagonal."""
    return diag(ravel(v), k)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """The sum along the diagonal (see `diagonal`), with `sum`'s dtype rules."""
    if out is not None:
        raise user_error(ValueError, "trace: `out` is not supported (mytorch arrays are immutable)")
    return _reductions.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def _index_arrays(arrays):
    return tuple(from_numpy(np.asarray(a, dtype=dtypes.default_int())) for a in arrays)


def tril_indices(n, k=0, m=None):
    """(rows, cols) of the lower triangle of an (n, m) array, k-th diagonal included."""
    return _index_arrays(np.tril_indices(n, k, m))


def triu_indices(n, k=0, m=None):
    """(rows, cols) of the upper triangle of an (n, m) array, k-th diagonal included."""
    return _index_arrays(np.triu_indices(n, k, m))


def _check_2d(op, arr):
    x = _arr(arr)
    if x.ndim != 2:
        raise user_error(ValueError, f"{op}: input array must be 2-D, got {_s(x)}")
    return x


def tril_indices_from(arr, k=0):
    """`tril_indices` for the shape of the 2-D `arr`."""
    x = _check_2d("tril_indices_from", arr)
    return tril_indices(x.shape[0], k, x.shape[1])


def triu_indices_from(arr, k=0):
    """`triu_indices` for the shape of the 2-D `arr`."""
    x = _check_2d("triu_indices_from", arr)
    return triu_indices(x.shape[0], k, x.shape[1])


def diag_indices(n, ndim=2):
    """`ndim` copies of arange(n): the indices of the main diagonal of an n^ndim array."""
    return _index_arrays(np.diag_indices(n, ndim))


def diag_indices_from(arr):
    """`diag_indices` for `arr`, whose axes must all have one length."""
    x = _arr(arr)
    if x.ndim < 2 or len(set(x.shape)) != 1:
        raise user_error(ValueError,
            f"diag_indices_from: needs rank >= 2 and equal sides, got {_s(x)}")
    return diag_indices(x.shape[0], x.ndim)


# ---- resizing, inserting, deleting, trimming ----------------------------------------------
def resize(a, new_shape):
    """`a` flattened, repeated cyclically (or cut) to fill `new_shape`; zeros when `a` is
    empty (NumPy's `resize`)."""
    x = ravel(a)
    shape = _shape_tuple(new_shape)
    if any(d < 0 for d in shape):
        raise user_error(ValueError,
            f"resize: all elements of new_shape must be non-negative, got {shape}")
    size = math.prod(shape)
    if x.size == 0 or size == 0:
        return lax.broadcast_in_dim(_zero(x), shape, ())
    reps = -(-size // x.size)
    y = lax.concatenate([x] * reps, 0) if reps > 1 else x
    return lax.reshape(_slice_axis(y, 0, size, 0), shape)


def _positions(op, obj, n, axis):
    """Static indices from a slice, an int, ints or a boolean mask; and whether obj is a
    scalar."""
    if isinstance(obj, slice):
        return np.arange(*obj.indices(n)), False
    idx = _static(op, "obj", obj)
    if idx.dtype == bool:
        if idx.ndim != 1 or (op == "delete" and idx.shape[0] != n):
            raise user_error(ValueError, f"{op}: a boolean obj must be 1-D" + (
                f" with the axis length {n}" if op == "delete" else "")
                + f", got shape {idx.shape}")
        return np.flatnonzero(idx), False
    if idx.dtype.kind not in "iu" and (idx.size or isinstance(obj, np.ndarray)):
        raise user_error(TypeError, f"{op}: obj must hold ints, got {obj!r}")
    if idx.ndim > 1:
        raise user_error(ValueError, f"{op}: obj must be a scalar or 1-D, got shape {idx.shape}")
    return idx.astype(np.int64), idx.ndim == 0


def delete(arr, obj, axis=None):
    """`arr` without the entries `obj` (static int, slice, ints or boolean mask) along
    `axis` (flattened when None)."""
    x = _arr(arr)
    if axis is None:
        x, axis = ravel(x), 0
    axis = _axis("delete", axis, x)
    n = x.shape[axis]
    idx, _ = _positions("delete", obj, n, axis)
    bad = idx[(idx < -n) | (idx >= n)]
    if bad.size:
        raise user_error(IndexError,
            f"delete: index {int(bad[0])} is out of bounds for axis {axis} "
            f"with size {n}")
    keep = np.ones(n, bool)
    keep[idx] = False
    return _take_static(x, np.flatnonzero(keep), axis)


def insert(arr, obj, values, axis=None):
    """`arr` with `values` inserted before the static positions `obj` along `axis`
    (flattened when None); `values` are cast to arr's dtype (NumPy's `insert`)."""
    x = _arr(arr)
    if axis is None:
        x, axis = ravel(x), 0
    axis = _axis("insert", axis, x)
    n = x.shape[axis]
    idx, scalar = _positions("insert", obj, n, axis)
    v = lax.convert_element_type(_arr(values), x.dtype)
    if idx.size == 1:
        index = int(idx.reshape(-1)[0])
        if not -n <= index <= n:
            raise user_error(IndexError,
                f"insert: index {index} is out of bounds for axis {axis} with "
                f"size {n}")
        index += n if index < 0 else 0
        if v.ndim < x.ndim:
            v = lax.reshape(v, (1,) * (x.ndim - v.ndim) + v.shape)
        if scalar:
            v = moveaxis(v, 0, axis)
        v = broadcast_to(v, _set_dim(x.shape, axis, v.shape[axis]))
        return _concat([_slice_axis(x, 0, index, axis), v, _slice_axis(x, index, n, axis)],
                       axis)
    bad = idx[(idx < -n) | (idx > n)]
    if bad.size:
        raise user_error(IndexError,
            f"insert: index {int(bad[0])} is out of bounds for axis {axis} "
            f"with size {n}")
    idx = np.where(idx < 0, idx + n, idx)
    k = idx.size
    v = broadcast_to(v, _set_dim(x.shape, axis, k))
    order = np.argsort(idx, kind="stable")
    new_pos = idx.copy()
    new_pos[order] += np.arange(k)
    source = np.empty(n + k, np.int64)
    is_old = np.ones(n + k, bool)
    is_old[new_pos] = False
    source[is_old] = np.arange(n)
    source[new_pos] = n + np.arange(k)
    return _take_static(_concat([x, v], axis), source, axis)


def trim_zeros(filt, trim="fb", axis=None):
    """`filt` without leading ("f") and/or trailing ("b") zeros along `axis` (all axes
    when None). Eager only: the result's shape depends on the values.

    Raises:
      ConcretizationTypeError: under tracing.
    """
    x = _arr(filt)
    if isinstance(x, Tracer) and x.concrete_value() is None:
        raise user_error(ConcretizationTypeError,
            f"trim_zeros: the output shape depends on the values of {_s(x)}, so it cannot "
            "be traced; slice with static bounds instead"
        )
    trim = trim.lower()
    if trim not in ("fb", "bf", "f", "b"):
        raise user_error(ValueError, f"trim_zeros: unexpected trim {trim!r}: use 'f', 'b' or 'fb'")
    axes = tuple(range(x.ndim)) if axis is None else _axes("trim_zeros", axis, x)
    value = np.asarray(x if not isinstance(x, Tracer) else x.concrete_value())
    nz = np.argwhere(value != 0)
    out = x
    for ax in axes:
        if nz.size == 0:
            lo = hi = 0
        else:
            lo = int(nz[:, ax].min()) if "f" in trim else 0
            hi = int(nz[:, ax].max()) + 1 if "b" in trim else x.shape[ax]
        out = _slice_axis(out, lo, hi, ax)
    return out
