"""Shapes and axes: reshape and ravel, transposes and axis moves, squeeze and expand_dims,
atleast_1d/2d/3d and broadcasting.

Structural functions keep the operand's weak type. Part of `mytorch.numpy.manipulation`.
"""

import math
import operator

from mytorch import lax
from mytorch.core.source_info import user_error
from mytorch.errors import AxisError
from mytorch.numpy._manip_util import _arr, _axes, _axis, _is_int, _s, static_shape
from mytorch.numpy._promote import broadcast_to_shape

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays", "broadcast_shapes",
    "broadcast_to", "expand_dims", "matrix_transpose", "moveaxis", "permute_dims", "ravel",
    "reshape", "rollaxis", "squeeze", "swapaxes", "transpose",
]


# ---- shapes and axes ----------------------------------------------------------------------
def _reshape_target(op, x, shape):
    orig = static_shape(op, shape)
    if sum(d < 0 for d in orig) > 1:  # NumPy reads any negative entry as "unknown"
        raise user_error(TypeError,
            f"{op}: can only specify one unknown dimension (-1), got {orig}")
    known = math.prod(d for d in orig if d >= 0)
    new = orig
    if min(orig, default=0) < 0 and known and x.size % known == 0:
        new = tuple(x.size // known if d < 0 else d for d in orig)
    if min(new, default=0) < 0 or math.prod(new) != x.size:
        raise user_error(TypeError,
            f"{op}: cannot reshape {_s(x)} ({x.size} elements) into shape {orig}")
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
        raise user_error(TypeError, "reshape: missing the `shape` argument")
    new = _reshape_target("reshape", x, shape)
    if order in ("C", "A", None):
        return x if new == x.shape else lax.reshape(x, new)
    if order != "F":
        raise user_error(ValueError, f"reshape: order must be 'C', 'F' or 'A', got {order!r}")
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
            raise user_error(TypeError,
                f"transpose: axes {axes} don't match {_s(x)}: expected a permutation of "
                f"{x.ndim} axes"
            )
        perm = tuple(_axis("transpose", a, x) for a in axes)
        if len(set(perm)) != len(perm):  # JAX's class for a bad permutation
            raise user_error(TypeError, f"transpose: repeated axis in {axes} for {_s(x)}")
    return x if perm == tuple(range(x.ndim)) else lax.transpose(x, perm)


def permute_dims(a, axes):
    """`transpose(a, axes)` (the array-API name)."""
    return transpose(a, axes)


def matrix_transpose(x):
    """Swap the last two axes of `x` (rank >= 2)."""
    x = _arr(x)
    if x.ndim < 2:
        raise user_error(ValueError, f"matrix_transpose: needs an array of rank >= 2, got {_s(x)}")
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
        raise user_error(ValueError,
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
        raise user_error(AxisError, f"rollaxis: start {start} is out of bounds for {_s(x)}: needs "
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
                raise user_error(ValueError,
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


def _shape_tuple(s, op="broadcast_shapes"):
    return static_shape(op, s)


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
                raise user_error(ValueError,
                    f"broadcast_shapes: shapes {listing} are incompatible: "
                    "each trailing dim must be equal or 1")
            out[i] = d if d != 1 else out[i]
    return tuple(out)


def broadcast_to(array, shape):
    """`array` broadcast to `shape` (NumPy's rules: leading dims and size-1 dims expand)."""
    x = _arr(array)
    shape = _shape_tuple(shape, "broadcast_to")
    lead = len(shape) - x.ndim
    if lead < 0 or any(d < 0 for d in shape) or any(
        d not in (1, t) for d, t in zip(x.shape, shape[lead:], strict=True)
    ):
        raise user_error(ValueError, f"broadcast_to: cannot broadcast {_s(x)} to shape {shape}")
    return broadcast_to_shape(x, shape)


def broadcast_arrays(*args):
    """The arguments broadcast against each other: a tuple of arrays of one shape."""
    xs = [_arr(a) for a in args]
    shape = broadcast_shapes(*(x.shape for x in xs))
    return tuple(broadcast_to_shape(x, shape) for x in xs)
