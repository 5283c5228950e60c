"""Joining and splitting: concatenate, stack and their variants, append and block; split,
array_split and hsplit/vsplit/dsplit.

Joining functions promote their operands like arithmetic does; split points are static.
Part of `mytorch.numpy.manipulation`.
"""

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array
from mytorch.core.source_info import user_error
from mytorch.numpy._manip_util import _arr, _axis, _is_int, _s, _slice_axis, _static, _static_int
from mytorch.numpy._promote import promote_dtypes
from mytorch.numpy.shapes import atleast_1d, atleast_2d, atleast_3d, moveaxis, ravel

__all__ = [
    "append", "array_split", "block", "column_stack", "concat", "concatenate", "dsplit",
    "dstack", "hsplit", "hstack", "row_stack", "split", "stack", "unstack", "vsplit", "vstack",
]


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
        raise user_error(ValueError, "concatenate: need at least one array to concatenate")
    if axis is None:
        xs, axis = [ravel(x) for x in xs], 0
    for x in xs:
        if x.ndim == 0:
            raise user_error(ValueError,
                f"concatenate: zero-dimensional arrays cannot be concatenated "
                f"(got {_s(x)}); use stack, or reshape them to 1-D")
        if x.ndim != xs[0].ndim:
            raise user_error(TypeError,
                f"concatenate: all the input arrays must have the same number of dimensions, "
                f"got {_s(xs[0])} and {_s(x)}"
            )
    axis = _axis("concatenate", axis, xs[0])
    for x in xs[1:]:
        for d in range(x.ndim):
            if d != axis and x.shape[d] != xs[0].shape[d]:
                raise user_error(TypeError,
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
        raise user_error(ValueError, "stack: need at least one array to stack")
    for x in xs[1:]:
        if x.shape != xs[0].shape:
            raise user_error(ValueError,
                f"stack: all input arrays must have the same shape, got {_s(xs[0])} and {_s(x)}"
            )
    axis = _axis("stack", axis, xs[0], xs[0].ndim + 1)
    xs = [lax.expand_dims(x, (axis,)) for x in xs]
    return concatenate(xs, axis, dtype)


def unstack(x, /, *, axis=0):
    """The slices of `x` along `axis`, as a tuple of arrays of rank `x.ndim - 1`."""
    x = _arr(x)
    if x.ndim == 0:
        raise user_error(ValueError, f"unstack: needs an array of rank >= 1, got {_s(x)}")
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
            raise user_error(ValueError, f"block: list at position {list(path)} is empty")
        depths = {_block_depth(a, (*path, i)) for i, a in enumerate(arrays)}
        if len(depths) != 1:
            raise user_error(ValueError,
                f"block: list depths are mismatched at position {list(path)}")
        return 1 + depths.pop()
    if isinstance(arrays, tuple):
        raise user_error(TypeError, "block: arrays must be nested lists, not tuples")
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
            raise user_error(ValueError, f"{op}: the number of sections must be larger than 0, got "
                                         f"{sections}")
        if equal and n % sections:
            raise user_error(ValueError,
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
        raise user_error(ValueError, f"{op}: cannot split a 0-d array ({_s(x)})")
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
        raise user_error(ValueError, f"hsplit: needs an array of rank >= 1, got {_s(x)}")
    return _split("hsplit", x, indices_or_sections, 1 if x.ndim > 1 else 0, True)


def vsplit(ary, indices_or_sections):
    """Split along axis 0 (rank >= 2)."""
    x = _arr(ary)
    if x.ndim < 2:
        raise user_error(ValueError, f"vsplit: needs an array of rank >= 2, got {_s(x)}")
    return _split("vsplit", x, indices_or_sections, 0, True)


def dsplit(ary, indices_or_sections):
    """Split along axis 2 (rank >= 3)."""
    x = _arr(ary)
    if x.ndim < 3:
        raise user_error(ValueError, f"dsplit: needs an array of rank >= 3, got {_s(x)}")
    return _split("dsplit", x, indices_or_sections, 2, True)
