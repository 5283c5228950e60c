"""Helpers shared by the primitive definitions: operand conversion and shape/dtype checks.

Checks raise TypeError/ValueError whose message names what was expected and what arrived;
`Primitive.abstract_eval` adds the primitive's name, the operands and the user's line.
"""

import operator

import numpy as np

from mytorch.core import dtypes, tree_util
from mytorch.core.array import Array, from_numpy, is_python_scalar, scalar_array
from mytorch.core.aval import ShapedArray
from mytorch.core.source_info import where


def asarray(x):
    """An Array for `x`: Arrays pass through, Python scalars become weakly typed 0-d
    arrays, NumPy values are copied in."""
    if isinstance(x, Array):
        return x
    if is_python_scalar(x):
        return scalar_array(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return from_numpy(x)
    raise TypeError(
        f"expected an array or a scalar, got {type(x).__name__}: {x!r:.80}"
    )


def leaves_as_arrays(tree, what, expected="every leaf must be an array or a scalar",
                     hint=""):
    """(the leaves of `tree` as arrays, its treedef). A leaf that is not an array or a
    scalar raises TypeError: `what`: `expected`, the leaf, `hint`, the user's line."""
    leaves, treedef = tree_util.tree_flatten(tree)
    out = []
    for x in leaves:
        try:
            out.append(asarray(x))
        except TypeError:
            raise TypeError(f"{what}: {expected}, got {type(x).__name__}: {x!r:.60}{hint}"
                            f"{where()}") from None
    return out, treedef


def coerce_operands(name, *args):
    """Arrays for an elementwise lax op: Python scalars take the dtype of the array operands
    (weakly); arrays must already share one dtype (lax does not promote; mytorch.numpy does).
    """
    arrays = [a for a in args if isinstance(a, Array) or isinstance(a, (np.ndarray, np.generic))]
    if not arrays:
        return [asarray(a) for a in args]
    dtype = arrays[0].dtype
    return [weak_scalar(a, dtype) if is_python_scalar(a) else asarray(a) for a in args]


def weak_scalar(x, dtype):
    """A weakly typed 0-d array of `dtype` holding the Python scalar `x`."""
    arr = scalar_array(x, dtype)
    arr._weak = True
    return arr


def short(aval):
    return aval.str_short()


def canonical_axis(axis, ndim, op):
    """`axis` as a non-negative int < ndim; a clear error otherwise."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{op}: axis must be an int, got {axis!r}") from None
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise ValueError(f"{op}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim if ndim else 0


def check_axes(op, aval, axes):
    """Axes must be distinct ints in [0, ndim)."""
    axes = tuple(axes)
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not 0 <= a < aval.ndim:
            raise ValueError(
                f"{op}: axes {axes} are invalid for {short(aval)}: each must be an int in "
                f"[0, {aval.ndim})"
            )
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: axes {axes} contain duplicates")
    return axes


def check_dtype(op, aval, kinds):
    """`kinds` is a set of "bool", "int", "uint", "float", "complex": raise TypeError
    otherwise."""
    d = aval.dtype
    ok = (
        ("bool" in kinds and dtypes.is_bool(d))
        or ("int" in kinds and dtypes.is_signed_int(d))
        or ("uint" in kinds and dtypes.is_unsigned_int(d))
        or ("float" in kinds and dtypes.is_float(d))
        or ("complex" in kinds and dtypes.is_complex(d))
    )
    if not ok:
        wanted = " or ".join(_KIND_WORDS[k] for k in _KIND_WORDS if k in kinds)
        raise TypeError(f"{op} needs {wanted} operands, got {short(aval)}")


_KIND_WORDS = {"bool": "bool", "int": "signed integer", "uint": "unsigned integer",
               "float": "floating-point", "complex": "complex"}


def same_dtypes(op, avals):
    """All operands share one dtype; TypeError listing them otherwise."""
    first = avals[0].dtype
    if any(a.dtype != first for a in avals[1:]):
        listing = ", ".join(short(a) for a in avals)
        raise TypeError(
            f"{op} needs operands of one dtype, got {listing}. Convert with "
            "lax.convert_element_type, or use mytorch.numpy, which promotes"
        )
    return first


def elementwise_shape(op, avals):
    """Shapes must be equal, except 0-d operands, which broadcast."""
    shape = None
    for a in avals:
        if a.ndim == 0:
            continue
        if shape is None:
            shape = a.shape
        elif a.shape != shape:
            listing = ", ".join(short(x) for x in avals)
            raise TypeError(
                f"{op} needs operands of equal shapes (or 0-d), got {listing}. "
                "Broadcast first with lax.broadcast_in_dim, or use mytorch.numpy"
            )
    return () if shape is None else shape


def weak_of(avals):
    return all(a.weak_type for a in avals)


def shaped(shape, dtype, weak=False):
    return ShapedArray(shape, dtype, weak)


def normalize_shape(shape, op):
    """A tuple of non-negative ints; TypeError/ValueError otherwise."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{op}: shape must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"{op}: shape {shape} has a negative dimension")
    return shape
