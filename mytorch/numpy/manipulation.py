"""Array manipulation: reshaping, transposing, joining, splitting, tiling, padding, diagonals.

NumPy's functions and signatures over lax's structural primitives. Shapes, axes, split
points, repeats, pad widths and insert/delete positions are static (Python values, or
concrete arrays that are read); `roll` also takes a traced shift, and `repeat` traced
repeats together with `total_repeat_length`. Structural functions keep the operand's weak
type; joining functions promote their operands like arithmetic does.
"""

import math
import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, from_numpy
from mytorch.core.trace import Tracer
from mytorch.errors import ConcretizationTypeError
from mytorch.numpy import reductions as _reductions
from mytorch.numpy._promote import asarray_any, broadcast_to_shape, promote_dtypes

__all__ = [
    "append", "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "block",
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "column_stack", "concat",
    "concatenate", "delete", "diag", "diag_indices", "diag_indices_from", "diagflat",
    "diagonal", "dsplit", "dstack", "expand_dims", "flip", "fliplr", "flipud", "hsplit",
    "hstack", "insert", "matrix_transpose", "moveaxis", "pad", "permute_dims", "ravel",
    "repeat", "reshape", "resize", "roll", "rollaxis", "rot90", "row_stack", "split",
    "squeeze", "stack", "swapaxes", "tile", "trace", "transpose", "tril_indices",
    "tril_indices_from", "trim_zeros", "triu_indices", "triu_indices_from", "unstack",
    "vsplit", "vstack",
]

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
        raise TypeError(f"{op}: axis must be an int, got {axis!r}") from None
    if not -n <= ax < n:
        rank = f"rank {n}" if n == x.ndim else f"result rank {n}"
        raise ValueError(f"{op}: axis {ax} is out of bounds for {_s(x)} ({rank})")
    return ax % n


def _axes(op, axis, x, ndim=None):
    """An int or a sequence of ints as a tuple of distinct normalised axes."""
    seq = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    out = tuple(_axis(op, a, x, ndim) for a in seq)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: repeated axis in {axis} for {_s(x)}")
    return out


def _is_int(v):
    return isinstance(v, (int, np.integer)) or (isinstance(v, Array) and v.ndim == 0)


def _static(op, name, value):
    """A static argument as a NumPy array (concrete arrays are read; tracers raise)."""
    if isinstance(value, Tracer):
        concrete = value.concrete_value()
        if concrete is None:
            raise ConcretizationTypeError(
                f"{op}: `{name}` must be static (Python ints or a concrete array), but got a "
                f"traced {value.aval.str_short()}. Pass it as a Python value, or mark it "
                "static with static_argnums."
            )
        return np.asarray(concrete)
    return np.asarray(value)


def _static_int(op, name, value):
    v = _static(op, name, value)
    if v.ndim != 0 or v.dtype.kind not in "iub":
        raise TypeError(f"{op}: `{name}` must be an int, got {value!r}")
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


# ---- shapes and axes ----------------------------------------------------------------------
def _reshape_target(op, x, shape):
    if _is_int(shape):
        shape = (shape,)
    orig = tuple(operator.index(d) for d in shape)
    if sum(d < 0 for d in orig) > 1:  # NumPy reads any negative entry as "unknown"
        raise ValueError(f"{op}: can only specify one unknown dimension (-1), got {orig}")
    known = math.prod(d for d in orig if d >= 0)
    new = orig
    if min(orig, default=0) < 0 and known and x.size % known == 0:
        new = tuple(x.size // known if d < 0 else d for d in orig)
    if min(new, default=0) < 0 or math.prod(new) != x.size:
        raise ValueError(f"{op}: cannot reshape {_s(x)} ({x.size} elements) into shape {orig}")
    return new


def reshape(a, shape=None, order="C", *, copy=None):
    """`a` with a new shape holding the same elements (NumPy's `reshape`).

    Args:
      a: array of any shape.
      shape: int or tuple of ints with as many elements as `a`; one entry may be -1.
      order: "C" (row-major) or "F" (column-major) element order.

    Returns:
      An array of shape `shape`, same dtype. `reshape(arange(6), (2, -1))` is (2, 3).
    """
    x = _arr(a)
    if shape is None:
        raise TypeError("reshape: missing the `shape` argument")
    new = _reshape_target("reshape", x, shape)
    if order in ("C", "A", None):
        return x if new == x.shape else lax.reshape(x, new)
    if order != "F":
        raise ValueError(f"reshape: order must be 'C', 'F' or 'A', got {order!r}")
    y = lax.transpose(x, tuple(range(x.ndim))[::-1]) if x.ndim > 1 else x
    y = lax.reshape(y, new[::-1]) if y.shape != new[::-1] else y
    return lax.transpose(y, tuple(range(len(new)))[::-1]) if len(new) > 1 else y


def ravel(a, order="C"):
    """`a` flattened to 1-D, in C (or with order="F", column-major) order."""
    x = _arr(a)
    return x if x.ndim == 1 else reshape(x, (x.size,), order)


def transpose(a, axes=None):
    """`a` with its axes permuted (reversed when `axes` is None)."""
    x = _arr(a)
    if axes is None:
        perm = tuple(range(x.ndim))[::-1]
    else:
        axes = (axes,) if _is_int(axes) else tuple(axes)
        if len(axes) != x.ndim:
            raise ValueError(
                f"transpose: axes {axes} don't match {_s(x)}: expected a permutation of "
                f"{x.ndim} axes"
            )
        perm = _axes("transpose", axes, x)
    return x if perm == tuple(range(x.ndim)) else lax.transpose(x, perm)


def permute_dims(a, axes):
    """`transpose(a, axes)` (the array-API name)."""
    return transpose(a, axes)


def matrix_transpose(x):
    """Swap the last two axes of `x` (rank >= 2)."""
    x = _arr(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: needs an array of rank >= 2, got {_s(x)}")
    return swapaxes(x, -1, -2)


def swapaxes(a, axis1, axis2):
    """`a` with axes `axis1` and `axis2` interchanged."""
    x = _arr(a)
    i, j = _axis("swapaxes", axis1, x), _axis("swapaxes", axis2, x)
    perm = list(range(x.ndim))
    perm[i], perm[j] = j, i
    return transpose(x, perm)


def moveaxis(a, source, destination):
    """`a` with axes `source` moved to positions `destination` (ints or sequences)."""
    x = _arr(a)
    src, dst = _axes("moveaxis", source, x), _axes("moveaxis", destination, x)
    if len(src) != len(dst):
        raise ValueError(
            "moveaxis: `source` and `destination` must have the same number of elements, "
            f"got {source} and {destination}"
        )
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return transpose(x, order)


def rollaxis(a, axis, start=0):
    """Roll `axis` backwards until it lies before position `start` (NumPy's rollaxis)."""
    x = _arr(a)
    n = x.ndim
    axis = _axis("rollaxis", axis, x)
    start = operator.index(start)
    start = start + n if start < 0 else start
    if not 0 <= start <= n:
        raise ValueError(f"rollaxis: start {start} is out of bounds for {_s(x)}: needs "
                         f"{-n} <= start < {n + 1}")
    if axis < start:
        start -= 1
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return transpose(x, order)


def squeeze(a, axis=None):
    """`a` without the size-1 axes `axis` (default: all of them).

    Raises:
      ValueError: when a named axis does not have size 1.
    """
    x = _arr(a)
    if axis is None:
        dims = tuple(i for i, d in enumerate(x.shape) if d == 1)
    elif x.ndim == 0 and _is_int(axis) and axis in (0, -1):
        return x  # NumPy accepts an int axis 0 (or -1) for a 0-d array
    else:
        dims = _axes("squeeze", axis, x)
        for d in dims:
            if x.shape[d] != 1:
                raise ValueError(
                    f"squeeze: cannot squeeze axis {d} of {_s(x)}: its size is "
                    f"{x.shape[d]}, not 1"
                )
    return lax.squeeze(x, dims) if dims else x


def expand_dims(a, axis):
    """`a` with new size-1 axes at positions `axis` (int or tuple) of the result."""
    x = _arr(a)
    n = x.ndim + (1 if _is_int(axis) else len(tuple(axis)))
    dims = _axes("expand_dims", axis, x, n)
    return lax.expand_dims(x, dims) if dims else x


def _atleast_shape(n, shape):
    if n == 3 and len(shape) == 1:
        return (1, shape[0], 1)
    if n == 3 and len(shape) == 2:
        return shape + (1,)
    return (1,) * (n - len(shape)) + shape


def _atleast(n, arys):
    outs = []
    for a in arys:
        x = _arr(a)
        outs.append(lax.reshape(x, _atleast_shape(n, x.shape)) if x.ndim < n else x)
    return outs[0] if len(outs) == 1 else tuple(outs)


def atleast_1d(*arys):
    """Each argument as an array of rank >= 1 (one array, or a tuple for several)."""
    return _atleast(1, arys)


def atleast_2d(*arys):
    """Each argument with rank >= 2: (n,) becomes (1, n)."""
    return _atleast(2, arys)


def atleast_3d(*arys):
    """Each argument with rank >= 3: (n,) becomes (1, n, 1), (m, n) becomes (m, n, 1)."""
    return _atleast(3, arys)


def _shape_tuple(s):
    return (operator.index(s),) if _is_int(s) else tuple(operator.index(d) for d in s)


def broadcast_shapes(*shapes):
    """The shape that `shapes` broadcast to under NumPy's rules.

    Raises:
      ValueError: when two shapes are incompatible.
    """
    shapes = [_shape_tuple(s) for s in shapes]
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, ndim - len(s)):
            if d != 1 and out[i] not in (1, d):
                listing = ", ".join(str(t) for t in shapes)
                raise ValueError(f"broadcast_shapes: shapes {listing} are incompatible: "
                                 "each trailing dim must be equal or 1")
            out[i] = d if d != 1 else out[i]
    return tuple(out)


def broadcast_to(array, shape):
    """`array` broadcast to `shape` (NumPy's rules: leading dims and size-1 dims expand)."""
    x = _arr(array)
    shape = _shape_tuple(shape)
    lead = len(shape) - x.ndim
    if lead < 0 or any(d < 0 for d in shape) or any(
        d not in (1, t) for d, t in zip(x.shape, shape[lead:], strict=True)
    ):
        raise ValueError(f"broadcast_to: cannot broadcast {_s(x)} to shape {shape}")
    return broadcast_to_shape(x, shape)


def broadcast_arrays(*args):
    """The arguments broadcast against each other: a tuple of arrays of one shape."""
    xs = [_arr(a) for a in args]
    shape = broadcast_shapes(*(x.shape for x in xs))
    return tuple(broadcast_to_shape(x, shape) for x in xs)


# ---- joining ------------------------------------------------------------------------------
def _unstack_list(x):
    return [lax.reshape(_slice_axis(x, i, i + 1, 0), x.shape[1:]) for i in range(x.shape[0])]


def _join_dtypes(op, xs, dtype):
    if dtype is not None:
        return [lax.convert_element_type(x, dtypes.canonicalize(dtype, explicit=True))
                for x in xs]
    return promote_dtypes(op, *xs)


def concatenate(arrays, axis=0, dtype=None):
    """Join arrays along an existing axis (axis=None flattens them first).

    Args:
      arrays: a sequence of arrays of one rank (>= 1) whose shapes match except along
        `axis`; mixed dtypes promote. An array is taken as the sequence of its rows.
      axis: the joining axis (negative allowed), or None.
      dtype: the result dtype (cast to it), or None to promote.

    Returns:
      The joined array. `concatenate([ones((2, 3)), ones((1, 3))])` is (3, 3).
    """
    xs = _unstack_list(arrays) if isinstance(arrays, Array) else [_arr(a) for a in arrays]
    if not xs:
        raise ValueError("concatenate: need at least one array to concatenate")
    if axis is None:
        xs, axis = [ravel(x) for x in xs], 0
    for x in xs:
        if x.ndim == 0:
            raise ValueError(f"concatenate: zero-dimensional arrays cannot be concatenated "
                             f"(got {_s(x)}); use stack, or reshape them to 1-D")
        if x.ndim != xs[0].ndim:
            raise ValueError(
                f"concatenate: all the input arrays must have the same number of dimensions, "
                f"got {_s(xs[0])} and {_s(x)}"
            )
    axis = _axis("concatenate", axis, xs[0])
    for x in xs[1:]:
        for d in range(x.ndim):
            if d != axis and x.shape[d] != xs[0].shape[d]:
                raise ValueError(
                    f"concatenate: the input shapes must match except along axis {axis}, "
                    f"but {_s(xs[0])} and {_s(x)} differ along axis {d}"
                )
    xs = _join_dtypes("concatenate", xs, dtype)
    return xs[0] if len(xs) == 1 else lax.concatenate(xs, axis)


def concat(arrays, /, *, axis=0):
    """`concatenate(arrays, axis)` (the array-API name)."""
    return concatenate(arrays, axis=axis)


def stack(arrays, axis=0, dtype=None):
    """Join arrays of one shape along a new axis `axis` of the result."""
    if isinstance(arrays, Array):
        x = arrays if dtype is None else _join_dtypes("stack", [arrays], dtype)[0]
        return moveaxis(x, 0, _axis("stack", axis, x))
    xs = [_arr(a) for a in arrays]
    if not xs:
        raise ValueError("stack: need at least one array to stack")
    for x in xs[1:]:
        if x.shape != xs[0].shape:
            raise ValueError(
                f"stack: all input arrays must have the same shape, got {_s(xs[0])} and {_s(x)}"
            )
    axis = _axis("stack", axis, xs[0], xs[0].ndim + 1)
    xs = [lax.expand_dims(x, (axis,)) for x in xs]
    return concatenate(xs, axis, dtype)


def unstack(x, /, *, axis=0):
    """The slices of `x` along `axis`, as a tuple of arrays of rank `x.ndim - 1`."""
    x = _arr(x)
    if x.ndim == 0:
        raise ValueError(f"unstack: needs an array of rank >= 1, got {_s(x)}")
    return tuple(_unstack_list(moveaxis(x, axis, 0)))


def hstack(tup, dtype=None):
    """Join horizontally: along axis 1, or axis 0 for 1-D inputs."""
    xs = [atleast_1d(a) for a in tup]
    return concatenate(xs, 0 if xs and xs[0].ndim == 1 else 1, dtype)


def vstack(tup, dtype=None):
    """Join vertically (axis 0) after making every input at least 2-D."""
    return concatenate([atleast_2d(a) for a in tup], 0, dtype)


row_stack = vstack


def dstack(tup, dtype=None):
    """Join along the third axis after making every input at least 3-D."""
    return concatenate([atleast_3d(a) for a in tup], 2, dtype)


def column_stack(tup):
    """Join 1-D arrays as the columns of a 2-D array (2-D inputs join along axis 1)."""
    xs = []
    for a in tup:
        x = _arr(a)
        xs.append(lax.reshape(x, (x.size, 1)) if x.ndim < 2 else x)
    return concatenate(xs, 1)


def append(arr, values, axis=None):
    """`arr` with `values` appended along `axis` (both flattened when axis is None)."""
    x, v = _arr(arr), _arr(values)
    if axis is None:
        return concatenate([ravel(x), ravel(v)], 0)
    return concatenate([x, v], axis)


def _block_depth(arrays, path=()):
    if isinstance(arrays, list):
        if not arrays:
            raise ValueError(f"block: list at position {list(path)} is empty")
        depths = {_block_depth(a, (*path, i)) for i, a in enumerate(arrays)}
        if len(depths) != 1:
            raise ValueError(f"block: list depths are mismatched at position {list(path)}")
        return 1 + depths.pop()
    if isinstance(arrays, tuple):
        raise TypeError("block: arrays must be nested lists, not tuples")
    return 0


def _block_max_ndim(arrays):
    if isinstance(arrays, list):
        return max(_block_max_ndim(a) for a in arrays)
    return _arr(arrays).ndim


def block(arrays):
    """Assemble an array from nested lists of blocks (NumPy's `block`): the innermost lists
    join along the last axis, the next along the second-to-last, and so on."""
    depth = _block_depth(arrays)
    ndim = max(depth, _block_max_ndim(arrays))

    def build(a, level):
        if level == depth:
            x = _arr(a)
            return lax.reshape(x, (1,) * (ndim - x.ndim) + x.shape) if x.ndim < ndim else x
        return concatenate([build(e, level + 1) for e in a], axis=level - depth)

    return build(arrays, 0)


# ---- splitting ----------------------------------------------------------------------------
def _split_bounds(op, x, indices_or_sections, axis, equal):
    n = x.shape[axis]
    if _is_int(indices_or_sections):
        sections = _static_int(op, "indices_or_sections", indices_or_sections)
        if sections <= 0:
            raise ValueError(f"{op}: the number of sections must be larger than 0, got "
                             f"{sections}")
        if equal and n % sections:
            raise ValueError(
                f"{op}: array split does not result in an equal division: axis {axis} of "
                f"{_s(x)} has {n} elements, not a multiple of {sections}. Use array_split "
                "for unequal parts"
            )
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        points = np.cumsum([0] + sizes).tolist()
    else:
        idx = _static(op, "indices_or_sections", indices_or_sections).reshape(-1)
        points = [0] + [int(i) for i in idx] + [n]
    bounds = []
    for start, stop in zip(points[:-1], points[1:], strict=True):
        lo, hi, _ = slice(start, stop).indices(n)
        bounds.append((lo, max(lo, hi)))
    return bounds


def _split(op, ary, indices_or_sections, axis, equal):
    x = _arr(ary)
    if x.ndim == 0:
        raise ValueError(f"{op}: cannot split a 0-d array ({_s(x)})")
    axis = _axis(op, axis, x)
    bounds = _split_bounds(op, x, indices_or_sections, axis, equal)
    return [_slice_axis(x, lo, hi, axis) for lo, hi in bounds]


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections (an int) or at the given indices (a sequence).

    Returns:
      A list of arrays. `split(arange(6), 3)` gives three (2,) arrays; `split(x, [1, 4])`
      gives x[:1], x[1:4], x[4:].

    Raises:
      ValueError: when an int number of sections does not divide the axis.
    """
    return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary, indices_or_sections, axis=0):
    """Like `split`, but an int number of sections may divide the axis unequally (the
    first `n % sections` parts get one extra element)."""
    return _split("array_split", ary, indices_or_sections, axis, False)


def hsplit(ary, indices_or_sections):
    """Split along axis 1 (axis 0 for 1-D arrays)."""
    x = _arr(ary)
    if x.ndim == 0:
        raise ValueError(f"hsplit: needs an array of rank >= 1, got {_s(x)}")
    return _split("hsplit", x, indices_or_sections, 1 if x.ndim > 1 else 0, True)


def vsplit(ary, indices_or_sections):
    """Split along axis 0 (rank >= 2)."""
    x = _arr(ary)
    if x.ndim < 2:
        raise ValueError(f"vsplit: needs an array of rank >= 2, got {_s(x)}")
    return _split("vsplit", x, indices_or_sections, 0, True)


def dsplit(ary, indices_or_sections):
    """Split along axis 2 (rank >= 3)."""
    x = _arr(ary)
    if x.ndim < 3:
        raise ValueError(f"dsplit: needs an array of rank >= 3, got {_s(x)}")
    return _split("dsplit", x, indices_or_sections, 2, True)


# ---- tiling and repeating -----------------------------------------------------------------
def tile(A, reps):
    """`A` repeated `reps` times along each axis (reps: int or tuple; NumPy's ranks rule)."""
    x = _arr(A)
    reps = tuple(int(r) for r in _static("tile", "reps", reps).reshape(-1))
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative, got {reps}")
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
        raise TypeError(f"repeat: repeats must be an int or a 1-D sequence of ints, got "
                        f"{repeats!r}")
    reps = reps.astype(np.int64)
    if reps.size == 1:
        reps = reps.reshape(())
    if reps.ndim and reps.shape[0] != n:
        raise ValueError(f"repeat: {reps.shape[0]} repeats for an axis of size {n} "
                         f"(axis {axis} of {_s(x)})")
    if n and np.any(reps < 0):
        raise ValueError(f"repeat: repeats must be non-negative, got {reps.tolist()}")
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
                raise ValueError("repeat: cannot fill total_repeat_length from an empty axis")
            idx = np.concatenate([idx, np.full(total - idx.size, n - 1)])
    return _take_static(x, idx, axis)


def _repeat_traced(x, repeats, axis, total):
    if total is None:
        raise ConcretizationTypeError(
            f"repeat: traced repeats ({repeats.aval.str_short()}) need the static "
            "`total_repeat_length=` argument, since the output size depends on their values"
        )
    from mytorch.numpy.indexing import take

    n = x.shape[axis]
    if n == 0:
        raise ValueError(f"repeat: cannot fill total_repeat_length={total} from the empty "
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
        raise ValueError(f"fliplr: needs an array of rank >= 2, got {_s(x)}")
    return flip(x, 1)


def flipud(m):
    """Reverse axis 0 (rank >= 1)."""
    x = _arr(m)
    if x.ndim < 1:
        raise ValueError(f"flipud: needs an array of rank >= 1, got {_s(x)}")
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
        raise ValueError(f"roll: shift {shift} and axis {axis} must broadcast") from None
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
        raise ValueError(f"roll: shift {shift.aval.str_short()} does not match axis {axis}")
    if not dtypes.is_int(shift.dtype):
        raise TypeError(f"roll: a traced shift must be an integer, got {_s(shift)}")
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
        raise ValueError(f"rot90: axes must have length 2, got {axes}")
    a0, a1 = (_axis("rot90", a, x) for a in axes)
    if a0 == a1:
        raise ValueError(f"rot90: the axes must be different, got {axes} for {_s(x)}")
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


# ---- padding ------------------------------------------------------------------------------
def _as_pairs(op, name, value, ndim, as_index=False):
    """NumPy's rule for pad_width-like arguments: a scalar, (before, after), or per-axis
    pairs; returned as a list of ndim [before, after] pairs."""
    v = _static(op, name, value)
    if as_index:
        if v.dtype.kind not in "iufb":
            raise TypeError(f"{op}: {name} must hold ints, got {value!r}")
        v = np.round(v).astype(np.int64)
    if v.size == 1:
        pairs = [[v.reshape(-1)[0].item()] * 2] * ndim
    elif v.size == 2 and v.shape != (2, 1):
        pairs = [v.reshape(-1).tolist()] * ndim
    else:
        try:
            pairs = np.broadcast_to(v, (ndim, 2)).tolist()
        except ValueError:
            raise ValueError(f"{op}: {name} of shape {v.shape} cannot be broadcast to "
                             f"({ndim}, 2), one (before, after) pair per axis") from None
    if as_index and any(p < 0 for pair in pairs for p in pair):
        raise ValueError(f"{op}: {name} must be non-negative, got {value!r}")
    return pairs


_PAD_KWARGS = {
    "constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
    "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
    "linear_ramp": {"end_values"}, "maximum": {"stat_length"}, "minimum": {"stat_length"},
    "mean": {"stat_length"}, "median": {"stat_length"},
}


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array (NumPy's `pad`).

    Args:
      array: array of any shape.
      pad_width: an int, (before, after), or one (before, after) pair per axis (static).
      mode: "constant" (`constant_values`, default 0), "empty" (zeros here), "edge",
        "reflect" / "symmetric" (`reflect_type` "even" or "odd"), "wrap", "linear_ramp"
        (`end_values`), "maximum" / "minimum" / "mean" / "median" (`stat_length`).

    Returns:
      The padded array, same dtype. `pad([1, 2], 1, "edge")` is [1, 1, 2, 2].
    """
    x = _arr(array)
    if not isinstance(mode, str) or mode not in _PAD_KWARGS:
        raise ValueError(f"pad: mode {mode!r} is not supported; use one of "
                         + ", ".join(repr(m) for m in _PAD_KWARGS))
    extra = set(kwargs) - _PAD_KWARGS[mode]
    if extra:
        raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: "
                         f"{sorted(extra)}")
    widths = [tuple(p) for p in _as_pairs("pad", "pad_width", pad_width, x.ndim, True)]
    rtype = kwargs.get("reflect_type", "even")
    if rtype not in ("even", "odd"):
        raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {rtype!r}")
    ends = _as_pairs("pad", "end_values", kwargs.get("end_values", 0), x.ndim)
    lengths = kwargs.get("stat_length")
    lengths = [[None, None]] * x.ndim if lengths is None else _as_pairs(
        "pad", "stat_length", lengths, x.ndim, True)
    values = kwargs.get("constant_values", 0)
    if not isinstance(values, Array):
        _as_pairs("pad", "constant_values", values, x.ndim)  # validate its shape
    if not any(lo or hi for lo, hi in widths):
        return x
    if mode in ("constant", "empty"):
        return _pad_constant(x, widths, values)
    for ax, (lo, hi) in enumerate(widths):
        if x.shape[ax] == 0 and (lo or hi):
            raise ValueError(f"pad: can't extend the empty axis {ax} of {_s(x)} with mode "
                             f"{mode!r}; only 'constant' and 'empty' can")
    if x.size == 0:
        return _pad_constant(x, widths, 0)
    for ax, (lo, hi) in enumerate(widths):
        if not (lo or hi):
            continue
        if mode == "edge" or (mode in ("reflect", "symmetric") and x.shape[ax] == 1):
            x = _pad_edge(x, ax, lo, hi)
        elif mode in ("reflect", "symmetric"):
            x = _pad_reflect(x, ax, lo, hi, mode == "symmetric", rtype == "odd")
        elif mode == "wrap":
            x = _pad_wrap(x, ax, lo, hi)
        elif mode == "linear_ramp":
            x = _pad_ramp(x, ax, lo, hi, ends[ax])
        else:
            x = _pad_stat(x, ax, lo, hi, lengths[ax], mode)
    return x


def _pad_constant(x, widths, values):
    if isinstance(values, Array):
        v = lax.convert_element_type(values, x.dtype)
        if v.ndim == 0:
            return lax.pad(x, v, tuple((lo, hi, 0) for lo, hi in widths))
        v = broadcast_to(v, (x.ndim, 2))
        pairs = [[lax.reshape(lax.slice(v, (i, j), (i + 1, j + 1)), ()) for j in (0, 1)]
                 for i in range(x.ndim)]
    else:
        pairs = _as_pairs("pad", "constant_values", values, x.ndim)
        flat = {float(p) for pair in pairs for p in pair}
        if len(flat) <= 1:
            value = pairs[0][0] if pairs else 0
            return lax.pad(x, _const(value, x.dtype), tuple((lo, hi, 0) for lo, hi in widths))
        pairs = [[_const(p, x.dtype) for p in pair] for pair in pairs]
    for ax, (lo, hi) in enumerate(widths):
        config = [(0, 0, 0)] * x.ndim
        config[ax] = (lo, 0, 0)
        x = lax.pad(x, pairs[ax][0], tuple(config)) if lo else x
        config[ax] = (0, hi, 0)
        x = lax.pad(x, pairs[ax][1], tuple(config)) if hi else x
    return x


def _const(value, dtype):
    with np.errstate(all="ignore"):
        return from_numpy(np.asarray(value).astype(dtype))


def _pad_edge(x, ax, lo, hi):
    n = x.shape[ax]
    left = [_broadcast_axis(_slice_axis(x, 0, 1, ax), ax, lo)] if lo else []
    right = [_broadcast_axis(_slice_axis(x, n - 1, n, ax), ax, hi)] if hi else []
    return _concat(left + [x] + right, ax)


def _odd(edge, chunk, ax):
    """`2 * edge - chunk`: the odd reflection (computed in int32 for bool)."""
    dt = chunk.dtype
    if dtypes.is_bool(dt):
        edge, chunk = (lax.convert_element_type(v, np.int32) for v in (edge, chunk))
    edge = _broadcast_axis(edge, ax, chunk.shape[ax])
    out = lax.sub(lax.add(edge, edge), chunk)
    return lax.convert_element_type(out, dt) if out.dtype != dt else out


def _pad_reflect(x, ax, lo, hi, include_edge, odd):
    """NumPy's iterative reflection: each round mirrors what has been filled so far."""
    n = x.shape[ax]
    while lo > 0 or hi > 0:
        cur = x.shape[ax]
        if include_edge:
            old = cur // n * n
        else:
            old = (cur - 1) // (n - 1) * (n - 1)
        e = 0 if include_edge else 1
        parts = []
        if lo > 0:
            c = min(old, lo)
            left = lax.rev(_slice_axis(x, e, e + c, ax), (ax,))
            parts.append(_odd(_slice_axis(x, 0, 1, ax), left, ax) if odd else left)
            lo -= c
        parts.append(x)
        if hi > 0:
            c = min(old, hi)
            right = lax.rev(_slice_axis(x, cur - e - c, cur - e, ax), (ax,))
            parts.append(_odd(_slice_axis(x, cur - 1, cur, ax), right, ax) if odd else right)
            hi -= c
        x = _concat(parts, ax)
    return x


def _pad_wrap(x, ax, lo, hi):
    n = x.shape[ax]
    while lo > 0 or hi > 0:
        cur = x.shape[ax]
        period = cur // n * n
        parts = []
        if lo > 0:
            c = min(period, lo)
            parts.append(_slice_axis(x, period - c, period, ax))
            lo -= c
        parts.append(x)
        if hi > 0:
            c = min(period, hi)
            parts.append(_slice_axis(x, cur - period, cur - period + c, ax))
            hi -= c
        x = _concat(parts, ax)
    return x


def _ramp(edge, end, width, ax, dtype):
    """NumPy's `linspace(end, edge, width, endpoint=False)` along `ax`, in `dtype`."""
    shape = _set_dim(edge.shape, ax, width)
    if dtypes.is_float(dtype) or not float(end).is_integer():
        ft = dtype if dtypes.is_float(dtype) and dtype.itemsize >= 4 else dtypes.default_float()
        e = broadcast_to_shape(lax.convert_element_type(edge, ft), shape)
        i = lax.broadcasted_iota(ft, shape, ax)
        step = lax.div(lax.sub(e, float(end)), float(width))
        out = lax.add(lax.mul(i, step), float(end))
        return lax.convert_element_type(lax.floor(out) if not dtypes.is_float(dtype) else out,
                                        dtype)
    it = dtypes.default_int()  # exact: end + floor(i * (edge - end) / width)
    e = broadcast_to_shape(lax.convert_element_type(edge, it), shape)
    num = lax.mul(lax.broadcasted_iota(it, shape, ax), lax.sub(e, int(end)))
    q = lax.div(num, width)
    q = lax.sub(q, lax.convert_element_type(lax.lt(lax.rem(num, width), 0), it))
    return lax.convert_element_type(lax.add(q, int(end)), dtype)


def _pad_ramp(x, ax, lo, hi, ends):
    n = x.shape[ax]
    parts = []
    if lo:
        parts.append(_ramp(_slice_axis(x, 0, 1, ax), ends[0], lo, ax, x.dtype))
    parts.append(x)
    if hi:
        right = _ramp(_slice_axis(x, n - 1, n, ax), ends[1], hi, ax, x.dtype)
        parts.append(lax.rev(right, (ax,)))
    return _concat(parts, ax)


def _stat(chunk, ax, mode, dtype):
    """The statistic of `chunk` along `ax` (kept as a size-1 axis), cast to `dtype`."""
    keep = _set_dim(chunk.shape, ax, 1)
    if mode in ("maximum", "minimum"):
        red = lax.reduce_max if mode == "maximum" else lax.reduce_min
        return lax.reshape(red(chunk, (ax,)), keep)
    ft = dtype if dtypes.is_float(dtype) and dtype.itemsize >= 4 else dtypes.default_float()
    c = lax.convert_element_type(chunk, ft)
    k = chunk.shape[ax]
    if mode == "median":
        c = lax.sort(c, dimension=ax)
        c = _slice_axis(c, (k - 1) // 2, k // 2 + 1, ax)
        k = c.shape[ax]
    out = lax.div(lax.reduce_sum(c, (ax,)), float(k) if k else float("nan"))
    if dtypes.is_int(dtype):
        out = lax.round(out, 1)  # NumPy rounds half to even before the cast
    return lax.reshape(lax.convert_element_type(out, dtype), keep)


def _pad_stat(x, ax, lo, hi, lengths, mode):
    n = x.shape[ax]
    left_len = n if lengths[0] is None else min(lengths[0], n)
    right_len = n if lengths[1] is None else min(lengths[1], n)
    if (left_len == 0 or right_len == 0) and mode in ("maximum", "minimum"):
        raise ValueError("pad: stat_length of 0 yields no value for padding")
    left = _stat(_slice_axis(x, 0, left_len, ax), ax, mode, x.dtype)
    right = left if left_len == right_len == n else _stat(
        _slice_axis(x, n - right_len, n, ax), ax, mode, x.dtype)
    parts = ([_broadcast_axis(left, ax, lo)] if lo else []) + [x]
    return _concat(parts + ([_broadcast_axis(right, ax, hi)] if hi else []), ax)


# ---- diagonals ----------------------------------------------------------------------------
def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of `a` in the plane (axis1, axis2), `offset` above the main one.

    Returns:
      An array whose last axis is the diagonal and whose leading axes are the remaining
      axes of `a`. `diagonal(eye(3))` is [1, 1, 1].
    """
    x = _arr(a)
    if x.ndim < 2:
        raise ValueError(f"diagonal: needs an array of rank >= 2, got {_s(x)}")
    i, j = _axis("diagonal", axis1, x), _axis("diagonal", axis2, x)
    if i == j:
        raise ValueError(f"diagonal: axis1 and axis2 cannot be the same (both {i})")
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
        raise ValueError(f"diag: input must be 1-D or 2-D, got {_s(x)}")
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
        raise ValueError("trace: `out` is not supported (mytorch arrays are immutable)")
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
        raise ValueError(f"{op}: input array must be 2-D, got {_s(x)}")
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
        raise ValueError(f"diag_indices_from: needs rank >= 2 and equal sides, got {_s(x)}")
    return diag_indices(x.shape[0], x.ndim)


# ---- resizing, inserting, deleting, trimming ----------------------------------------------
def resize(a, new_shape):
    """`a` flattened, repeated cyclically (or cut) to fill `new_shape`; zeros when `a` is
    empty (NumPy's `resize`)."""
    x = ravel(a)
    shape = _shape_tuple(new_shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"resize: all elements of new_shape must be non-negative, got {shape}")
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
            raise ValueError(f"{op}: a boolean obj must be 1-D" + (
                f" with the axis length {n}" if op == "delete" else "")
                + f", got shape {idx.shape}")
        return np.flatnonzero(idx), False
    if idx.dtype.kind not in "iu" and (idx.size or isinstance(obj, np.ndarray)):
        raise TypeError(f"{op}: obj must hold ints, got {obj!r}")
    if idx.ndim > 1:
        raise ValueError(f"{op}: obj must be a scalar or 1-D, got shape {idx.shape}")
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
        raise IndexError(f"delete: index {int(bad[0])} is out of bounds for axis {axis} "
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
            raise IndexError(f"insert: index {index} is out of bounds for axis {axis} with "
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
        raise IndexError(f"insert: index {int(bad[0])} is out of bounds for axis {axis} "
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
        raise ConcretizationTypeError(
            f"trim_zeros: the output shape depends on the values of {_s(x)}, so it cannot "
            "be traced; slice with static bounds instead"
        )
    trim = trim.lower()
    if trim not in ("fb", "bf", "f", "b"):
        raise ValueError(f"trim_zeros: unexpected trim {trim!r}: use 'f', 'b' or 'fb'")
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
