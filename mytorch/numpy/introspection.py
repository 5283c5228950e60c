"""dtype utilities and shape queries: dtype, finfo, iinfo, issubdtype, can_cast,
promote_types and NumPy's abstract scalar types; isscalar, ndim, shape and size.

Static information only: nothing here is traced. Part of `mytorch.numpy.creation`.
"""

import math

import numpy as np

from mytorch.core import dtypes
from mytorch.core.array import Array, is_python_scalar

__all__ = [
    "dtype", "isdtype", "finfo", "iinfo", "issubdtype", "can_cast", "promote_types", "number", "integer",
    "signedinteger", "unsignedinteger", "floating", "complexfloating", "inexact", "generic",
    "isscalar", "ndim", "iscomplexobj", "isrealobj",
    "shape", "size",
]


# abstract scalar types, for issubdtype
number, integer, signedinteger, unsignedinteger = (
    np.number, np.integer, np.signedinteger, np.unsignedinteger)
floating, complexfloating, inexact, generic = (
    np.floating, np.complexfloating, np.inexact, np.generic)


# ---- dtype utilities -----------------------------------------------------------------------
# Every utility takes a dtype named any way: a NumPy dtype, a name or code ("float16", "f2",
# "<f4"), a NumPy / ml_dtypes / mytorch scalar type (np.int8, ml_dtypes.bfloat16, mnp.int8),
# a Python type (bool, int, float), or an array (its dtype).
def _as_np_dtype(d):
    """The dtype a dtype-like names; Python `int`/`float` are the default int/float."""
    return dtypes.to_dtype(d)


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
    return dtypes.canonicalize(dtypes.to_dtype(x))


_PY_TYPES = {bool: np.dtype(bool), int: np.dtype(np.int64), float: np.dtype(np.float64),
             complex: np.dtype(np.complex128)}


def _dtype_of(x):
    """The dtype named by a dtype-like or carried by an array (not canonicalised; the Python
    types mean NumPy's int64/float64 here, as in JAX's issubdtype, can_cast and finfo)."""
    if isinstance(x, Array) or isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    if isinstance(x, type) and x in _PY_TYPES:
        return _PY_TYPES[x]
    return dtypes.to_dtype(x)


def finfo(dtype):
    """Machine limits of a float dtype (bfloat16 included): eps, max, min, tiny, bits...
    A complex dtype gives the limits of its parts, as NumPy.

    >>> float(mnp.finfo(mnp.float16).max)
    65504.0
    """
    d = _dtype_of(dtype)
    if not dtypes.is_inexact(d):
        raise ValueError(f"finfo: {d} is not a floating-point dtype; use iinfo for integers")
    return dtypes.finfo(d)


def iscomplexobj(x):
    """Whether `x` (an array, array-like or dtype holder) has a complex dtype."""
    return dtypes.is_complex(_array_dtype(x))


def isrealobj(x):
    """Whether `x` does not have a complex dtype."""
    return not iscomplexobj(x)


def _array_dtype(x):
    if isinstance(x, (Array, np.ndarray, np.generic)):
        return x.dtype
    if is_python_scalar(x):
        return dtypes.python_scalar_dtype(x)[0]
    return np.asarray(x).dtype


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
    """The promoted dtype of two dtype-likes by the JAX lattice (`int32, float16 ->
    float16`; the Python types `int` and `float` are weak: `int, int8 -> int8`; 64-bit
    results narrow to 32 bits without x64).

    >>> mnp.promote_types(mnp.int8, mnp.uint8)
    dtype('int16')
    """
    return dtypes.promote_types(*(t.dtype if isinstance(t, Array) else t for t in (type1, type2)))


_KINDS = {
    "bool": lambda d: d == dtypes.bool_,
    "signed integer": dtypes.is_signed_int,
    "unsigned integer": dtypes.is_unsigned_int,
    "integral": dtypes.is_int,
    "real floating": dtypes.is_float,
    "complex floating": dtypes.is_complex,
    "numeric": lambda d: dtypes.is_int(d) or dtypes.is_inexact(d),
}


def isdtype(dtype, kind):
    """Whether `dtype` is of `kind` (the array API's test): a kind name ("bool", "signed
    integer", "unsigned integer", "integral", "real floating", "complex floating",
    "numeric"), a dtype-like, or a tuple of these.

    >>> mnp.isdtype(mnp.bfloat16, "real floating")
    True
    """
    d = _dtype_of(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str) and k in _KINDS:
            if _KINDS[k](d):
                return True
        elif isinstance(k, str) and " " in k:
            raise ValueError(f"isdtype: unknown kind {k!r}; known: {', '.join(_KINDS)}")
        elif d == _dtype_of(k):
            return True
    return False


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
