"""Dtypes, 64-bit canonicalisation, weak types and the type-promotion lattice.

mytorch's dtypes are NumPy dtypes (bfloat16 comes from ml_dtypes). Promotion follows a
lattice, like JAX's, rather than NumPy's value-based tables:

    bool -> int* -> uint8 -> uint16 -> uint32 -> uint64 -> float*
            int* -> int8  -> int16  -> int32  -> int64  -> float*
            uint8 -> int16,  uint16 -> int32,  uint32 -> int64
    float* -> float16 | bfloat16 -> float32 -> float64 -> complex128
    float* -> complex* -> complex64 -> complex128;  float32 -> complex64

`int*`, `float*` and `complex*` are the *weak* types of Python ints, floats and complex
numbers: `x * 2.0` keeps the dtype of `x`, `x * 1j` is complex64 for a float32 `x`. The
result type of two dtypes is their least upper bound. Without `enable_x64`, 64-bit results
are narrowed to 32 bits (int64 -> int32, float64 -> float32, complex128 -> complex64).
docs/dtypes.md shows the full table.
"""

import warnings

import ml_dtypes
import numpy as np

from mytorch.core.config import config
from mytorch.errors import X64Warning

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
# the dtype of the gradient of an integer or bool input (grad(allow_int=True)): no data
float0 = np.dtype([("float0", np.void, 0)])

ALL_DTYPES = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float16, bfloat16, float32, float64, complex64, complex128)
_SHORT_NAMES = {
    bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64", uint8: "u8",
    uint16: "u16", uint32: "u32", uint64: "u64", float16: "f16", bfloat16: "bf16",
    float32: "f32", float64: "f64", complex64: "c64", complex128: "c128",
}
_FLOATS = frozenset((float16, bfloat16, float32, float64))
_SIGNED = frozenset((int8, int16, int32, int64))
_UNSIGNED = frozenset((uint8, uint16, uint32, uint64))
_COMPLEXES = frozenset((complex64, complex128))
_NARROW = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}
_REAL_OF = {complex64: float32, complex128: float64}
_COMPLEX_OF = {float16: complex64, bfloat16: complex64, float32: complex64,
               float64: complex128, complex64: complex64, complex128: complex128}

# Nodes of the lattice: dtypes plus the two weak categories.
WEAK_INT, WEAK_FLOAT, WEAK_COMPLEX = "int*", "float*", "complex*"
_LATTICE = {
    bool_: [WEAK_INT],
    WEAK_INT: [uint8, int8],
    uint8: [uint16, int16], uint16: [uint32, int32], uint32: [uint64, int64], uint64: [WEAK_FLOAT],
    int8: [int16], int16: [int32], int32: [int64], int64: [WEAK_FLOAT],
    WEAK_FLOAT: [float16, bfloat16, WEAK_COMPLEX], WEAK_COMPLEX: [complex64],
    float16: [float32], bfloat16: [float32], float32: [float64, complex64],
    float64: [complex128], complex64: [complex128], complex128: [],
}


def _upper_bounds(node):
    seen, stack = {node}, [node]
    while stack:
        for up in _LATTICE[stack.pop()]:
            if up not in seen:
                seen.add(up)
                stack.append(up)
    return frozenset(seen)


_UPPER = {n: _upper_bounds(n) for n in _LATTICE}


def _join(a, b):
    common = _UPPER[a] & _UPPER[b]
    # the least upper bound is the common bound that every other common bound is above
    for c in common:
        if common <= _UPPER[c]:
            return c
    raise TypeError(f"no common dtype for {a} and {b}")  # unreachable: complex128 tops all


_JOIN_CACHE = {}


def short_name(dtype):
    """`f32`-style name used in avals and error messages."""
    d = np.dtype(dtype)
    if d == object:  # only a while loop's residual tape has this type (lax/while_tape.py)
        return "tape"
    return _SHORT_NAMES.get(d, str(dtype))


def is_opaque(dtype):
    """Whether `dtype` is the opaque host dtype (object): a value the program carries but
    cannot compute with or differentiate, such as a while loop's run-time residual tape."""
    return np.dtype(dtype) == object


def is_float(dtype):
    return np.dtype(dtype) in _FLOATS


def is_complex(dtype):
    return np.dtype(dtype) in _COMPLEXES


def is_inexact(dtype):
    """Float or complex: the dtypes that carry derivatives."""
    d = np.dtype(dtype)
    return d in _FLOATS or d in _COMPLEXES


def real_dtype(dtype):
    """The real dtype of a complex `dtype`'s parts (complex64 -> float32); other dtypes
    are their own."""
    d = np.dtype(dtype)
    return _REAL_OF.get(d, d)


def complex_dtype(dtype):
    """The complex dtype holding values of the float or complex `dtype` (float32 ->
    complex64, float64 -> complex128; float16 and bfloat16 -> complex64)."""
    d = np.dtype(dtype)
    try:
        return _COMPLEX_OF[d]
    except KeyError:
        raise TypeError(f"no complex dtype for {d}: give a float or complex dtype") from None


def is_int(dtype):
    d = np.dtype(dtype)
    return d in _SIGNED or d in _UNSIGNED


def is_signed_int(dtype):
    return np.dtype(dtype) in _SIGNED


def is_unsigned_int(dtype):
    return np.dtype(dtype) in _UNSIGNED


def is_bool(dtype):
    return np.dtype(dtype) == bool_


def default_float():
    return float64 if config.enable_x64 else float32


def default_complex():
    return complex128 if config.enable_x64 else complex64


def default_int():
    return int64 if config.enable_x64 else int32


def to_dtype(x):
    """The NumPy dtype that the dtype-like `x` names (not canonicalised).

    Accepted: NumPy dtypes; names and codes (`"float16"`, `"f2"`, `"<f4"`, `"bfloat16"`);
    NumPy and ml_dtypes scalar types (`np.int8`, `ml_dtypes.bfloat16`); anything with a
    `dtype` attribute holding a dtype (`mnp.int8`, arrays, ShapeDtypeStruct); the Python
    types `bool`, `int`, `float` and `complex` (the default bool, int, float and complex
    dtypes).
    """
    if isinstance(x, np.dtype):
        return x
    if x is bool:
        return bool_
    if x is int:
        return default_int()
    if x is float:
        return default_float()
    if x is complex:
        return default_complex()
    d = getattr(x, "dtype", None)  # on np.int8 itself this is a descriptor, not a dtype
    if isinstance(d, np.dtype):
        return d
    try:
        return np.dtype(x)
    except (TypeError, ValueError):
        raise TypeError(
            f"{x!r:.60} does not name a dtype: give a dtype (np.float32, mnp.int8), a name "
            "or code ('float16', 'f2'), or a Python type (bool, int, float, complex)"
        ) from None


def to_dtype_and_weak(x):
    """(dtype, weak) named by the dtype-like `x`: the Python types `int`, `float` and
    `complex` are the weak categories (as Python scalars are), everything else is strong."""
    if x is int or x is float or x is complex:
        return to_dtype(x), True
    return to_dtype(x), False


def is_canonical(dtype):
    """Whether values of `dtype` can exist now: false for 64-bit dtypes without x64 (an
    array made while x64 was on)."""
    return dtype not in _NARROW or config.enable_x64


def canonicalize(dtype, *, explicit=False):
    """The dtype mytorch stores for `dtype` (any dtype-like, see `to_dtype`): 64-bit types
    narrow to 32 bits without x64.

    With `explicit=True` (the user named the dtype) a narrowing warns with X64Warning.
    Unsupported dtypes (strings, objects, longdouble) raise TypeError.
    """
    d = to_dtype(dtype)
    if d not in _SHORT_NAMES:
        raise TypeError(
            f"mytorch does not support dtype {d}; supported: "
            + ", ".join(str(t) for t in ALL_DTYPES)
        )
    if d in _NARROW and not config.enable_x64:
        if explicit:
            warnings.warn(
                f"dtype {d} requested, but 64-bit types are off; using {_NARROW[d]}. "
                'Turn them on with mt.config.update("enable_x64", True).',
                X64Warning,
                stacklevel=3,
            )
        return _NARROW[d]
    return d


def _node(dtype, weak):
    if weak:
        if dtype == bool_:
            return bool_
        if dtype in _COMPLEXES:
            return WEAK_COMPLEX
        return WEAK_FLOAT if dtype in _FLOATS else WEAK_INT
    return dtype


def promote(dtype_a, weak_a, dtype_b, weak_b):
    """(dtype, weak) of a binary operation between two typed values."""
    key = (dtype_a, weak_a, dtype_b, weak_b, config.enable_x64)
    hit = _JOIN_CACHE.get(key)
    if hit is not None:
        return hit
    if dtype_a == dtype_b:
        # no promotion happens, so nothing narrows (an int64 array made while x64 was on
        # stays int64 with itself, as in JAX); the lattice joins below narrow
        out = (dtype_a if not (weak_a or weak_b) else canonicalize(dtype_a), weak_a and weak_b)
        _JOIN_CACHE[key] = out
        return out
    if weak_a and weak_b:
        # join the strong counterparts and stay weak (weak f16 + weak f16 is weak f16)
        out = (canonicalize(_join(dtype_a, dtype_b)), True)
        _JOIN_CACHE[key] = out
        return out
    joined = _join(_node(dtype_a, weak_a), _node(dtype_b, weak_b))
    # a weak node as the result is weak even from strong inputs (uint64 with int64 -> float*)
    if joined == WEAK_INT:
        out = (default_int(), True)
    elif joined == WEAK_FLOAT:
        out = (default_float(), True)
    elif joined == WEAK_COMPLEX:
        out = (default_complex(), True)
    else:
        out = (canonicalize(joined), False)
    _JOIN_CACHE[key] = out
    return out


def promote_types(a, b):
    """The promoted dtype of two dtype-likes, like `jnp.promote_types` (the Python types
    `int`, `float` and `complex` are weak: `promote_types(int, int8)` is int8)."""
    (da, wa), (db, wb) = to_dtype_and_weak(a), to_dtype_and_weak(b)
    return promote(canonicalize(da), wa, canonicalize(db), wb)[0]


def python_scalar_dtype(x):
    """(dtype, weak) of a Python scalar: bool -> bool, int -> int*, float -> float*,
    complex -> complex*."""
    if isinstance(x, bool):
        return bool_, False
    if isinstance(x, int):
        return default_int(), True
    if isinstance(x, float):
        return default_float(), True
    if isinstance(x, complex):
        return default_complex(), True
    raise TypeError(f"not a Python scalar: {type(x).__name__}")


def finfo(dtype):
    """Machine limits of a float dtype (bfloat16 included); a complex dtype gives those
    of its real parts, as NumPy does."""
    return ml_dtypes.finfo(real_dtype(to_dtype(dtype)))


def iinfo(dtype):
    """Machine limits of an integer dtype."""
    return np.iinfo(to_dtype(dtype))
