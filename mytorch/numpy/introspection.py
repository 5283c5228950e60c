"""dtype utilities and shape queries: dtype, finfo, iinfo, issubdtype, can_cast,
promote_types and NumPy's abstract scalar types; isscalar, ndim, shape and size.

Static information only: nothing here is traced. Part of `mytorch.numpy.creation`.
"""

import math

import numpy as np

from mytorch.core import dtypes
from mytorch.core.array import Array, is_python_scalar

__all__ = [
    "dtype", "finfo", "iinfo", "issubdtype", "can_cast", "promote_types", "number", "integer",
    "signedinteger", "unsignedinteger", "floating", "inexact", "generic", "isscalar", "ndim",
    "shape", "size",
]


# abstract scalar types, for issubdtype
number, integer, signedinteger, unsignedinteger = (
    np.number, np.integer, np.signedinteger, np.unsignedinteger)
floating, inexact, generic = np.floating, np.inexact, np.generic


# ---- dtype utilities -----------------------------------------------------------------------
def _as_np_dtype(d):
    if d is float:
        return dtypes.default_float()
    if d is int:
        return dtypes.default_int()
    if d is bool:
        return dtypes.bool_
    return np.dtype(d)


def dtype(x):
    """The canonical mytorch dtype of a dtype-like or an array (float64 -> float32 and
    int64 -> int32 without x64; Python `float`/`int` give the defaults).

    >>> mnp.dtype("float64")
    dtype('float32')
    """
    if isinstance(x, Array):
        return x.dtype
    if is_python_scalar(x):
        return dtypes.python_scalar_dtype(x)[0]
    if isinstance(x, (np.ndarray, np.generic)):
        return dtypes.canonicalize(x.dtype)
    return dtypes.canonicalize(_as_np_dtype(x))


def _dtype_of(x):
    """The dtype named by a dtype-like or carried by an array (not canonicalised)."""
    if isinstance(x, Array) or isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    return _as_np_dtype(x)


def finfo(dtype):
    """Machine limits of a float dtype (bfloat16 included): eps, max, min, tiny, bits...

    >>> float(mnp.finfo(mnp.float16).max)
    65504.0
    """
    d = _dtype_of(dtype)
    if not dtypes.is_float(d):
        raise ValueError(f"finfo: {d} is not a floating-point dtype; use iinfo for integers")
    return dtypes.finfo(d)


def iinfo(int_type):
    """Machine limits of an integer dtype: min, max, bits.

    >>> mnp.iinfo(mnp.int8).max
    127
    """
    d = _dtype_of(int_type)
    if not dtypes.is_int(d):
        raise ValueError(f"iinfo: {d} is not an integer dtype; use finfo for floats")
    return dtypes.iinfo(d)


_BF16_PARENTS = (np.floating, np.inexact, np.number, np.generic)


def issubdtype(arg1, arg2):
    """Whether `arg1` is a sub-dtype of `arg2` (`issubdtype(mnp.bfloat16, mnp.floating)` is
    True, unlike in plain NumPy).

    >>> mnp.issubdtype(mnp.int8, mnp.integer)
    True
    """
    a = _dtype_of(arg1)
    if isinstance(arg2, type) and issubclass(arg2, np.generic):
        if a == dtypes.bfloat16:
            return arg2 in _BF16_PARENTS or arg2 is dtypes.bfloat16.type
        return np.issubdtype(a, arg2)
    b = _dtype_of(arg2)
    if dtypes.bfloat16 in (a, b):
        return a == b
    return np.issubdtype(a, b)


def can_cast(from_, to, casting="safe"):
    """Whether a cast from `from_` (a dtype or an array) to `to` is allowed by `casting`
    ("no", "equiv", "safe", "same_kind", "unsafe"), as NumPy's can_cast."""
    return bool(np.can_cast(_dtype_of(from_), _dtype_of(to), casting))


def promote_types(type1, type2):
    """The promoted dtype of two dtypes by the JAX lattice (`int32, float16 -> float16`;
    64-bit results narrow to 32 bits without x64).

    >>> mnp.promote_types(mnp.int8, mnp.uint8)
    dtype('int16')
    """
    return dtypes.promote_types(_dtype_of(type1), _dtype_of(type2))


# ---- shape queries -------------------------------------------------------------------------
def isscalar(element):
    """True for Python/NumPy scalars and 0-d arrays (as jnp.isscalar; NumPy says False for
    0-d arrays)."""
    if isinstance(element, (Array, np.ndarray)):
        return element.ndim == 0
    return bool(np.isscalar(element))


def ndim(a):
    """The rank of `a` (an array or an array-like)."""
    return a.ndim if isinstance(a, Array) else np.ndim(a)


def shape(a):
    """The shape of `a` (an array or an array-like)."""
    return tuple(a.shape) if isinstance(a, Array) else np.shape(a)


def size(a, axis=None):
    """The number of elements of `a`, or along `axis` (an int or a tuple of ints)."""
    s = shape(a)
    if axis is None:
        return math.prod(s)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    n = 1
    for ax in axes:
        if not -len(s) <= ax < len(s):
            raise ValueError(f"size: axis {ax} is out of bounds for shape {s}")
        n *= s[ax]
    return n
