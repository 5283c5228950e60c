"""Helpers shared by the elementwise modules of mytorch.numpy (arithmetic, transcendental,
comparisons, bits): argument checks and promotion, scalar constants, broadcasting selects,
bit casts."""

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, scalar_array
from mytorch.core.source_info import where as _where_info
from mytorch.numpy._promote import (
    asarray_any,
    broadcast_to_shape,
    promote_args,
    promote_args_inexact,
)

_LOW_FLOATS = (dtypes.float16, dtypes.bfloat16)


# ---- helpers --------------------------------------------------------------------------------
def _const(value, dtype, weak=True):
    """A 0-d array of `dtype` holding `value` (cast as NumPy casts; weak by default)."""
    with np.errstate(all="ignore"):
        arr = scalar_array(np.asarray(value).astype(dtype), dtype)
    arr._weak = weak
    return arr


def _filled(shape, value, dtype, weak=False):
    """An array of `shape` filled with `value` (a broadcast literal when traced)."""
    c = _const(value, dtype, weak)
    return c if not shape else lax.broadcast_in_dim(c, tuple(shape), ())


def _to_shape(x, shape):
    if x.shape == shape:
        return x
    if x.ndim == 0:
        return lax.broadcast_in_dim(x, shape, ())
    return broadcast_to_shape(x, shape)


def _select(pred, on_true, on_false, dtype=None):
    """lax.select where 0-d operands and Python scalars broadcast (scalars take the dtype of
    the array case, or `dtype`)."""
    if dtype is None:
        dtype = (on_true if isinstance(on_true, Array) else on_false).dtype
    cases = [c if isinstance(c, Array) else _const(c, dtype) for c in (on_true, on_false)]
    shape = max((pred.shape, *(c.shape for c in cases)), key=len)
    return lax.select(_to_shape(pred, shape), *(_to_shape(c, shape) for c in cases))


def _full(arrays):
    """Broadcast promoted arrays (equal shapes or 0-d) all to their common shape."""
    shape = max((a.shape for a in arrays), key=len)
    return [_to_shape(a, shape) for a in arrays]


def _kind(dtype):
    if dtypes.is_bool(dtype):
        return "bool"
    if dtypes.is_complex(dtype):
        return "complex"
    return "float" if dtypes.is_float(dtype) else "int"


def _real_only(name, *arrays):
    """TypeError for complex operands of a function NumPy defines on real numbers only."""
    for a in arrays:
        if dtypes.is_complex(a.dtype):
            got = ", ".join(x.aval.str_short() for x in arrays)
            raise TypeError(f"{name}: not defined for complex arguments, got {got}"
                            f"{_where_info()}")
    return arrays


def _require(name, arrays, kinds, what):
    for a in arrays:
        if _kind(a.dtype) not in kinds:
            got = ", ".join(x.aval.str_short() for x in arrays)
            raise TypeError(f"{name}: needs {what} arguments, got {got}{_where_info()}")


def _check_python_ints(name, args):
    """OverflowError for a Python int outside the default int (int32 without x64): a weak
    int is a value of that type. One that fits converts to a narrower integer result dtype
    with wraparound (`uint8_array + 256` adds 0), as in JAX."""
    ints = [a for a in args if type(a) is int]
    if not ints:
        return
    info = np.iinfo(dtypes.default_int())
    for v in ints:
        if not info.min <= v <= info.max:
            raise OverflowError(
                f"{name}: Python integer {v} does not fit the default int type "
                f"{info.dtype} (a Python int operand is a weakly typed {info.dtype}); "
                f"make it an array of a wider dtype{_where_info()}"
            )


def _args(name, *args):
    _check_python_ints(name, args)
    return promote_args(name, *args)


def _numeric(name, *args):
    """Promoted arguments where bool becomes int8 (NumPy has no bool loop for the op)."""
    arrays = _args(name, *args)
    if dtypes.is_bool(arrays[0].dtype):
        arrays = [lax.convert_element_type(a, dtypes.int8) for a in arrays]
    return arrays


def _float_args(name, *args):
    _check_python_ints(name, args)
    return promote_args_inexact(name, *args)


def _in_f32(fn, *xs):
    """fn(*xs) computed in float32 for float16/bfloat16 operands, cast back."""
    dtype = xs[0].dtype
    if dtype not in _LOW_FLOATS:
        return fn(*xs)
    out = fn(*[lax.convert_element_type(x, dtypes.float32) for x in xs])
    if isinstance(out, tuple):
        return tuple(lax.convert_element_type(o, dtype) for o in out)
    return lax.convert_element_type(out, dtype)


def _bitcast(x, dtype):
    """lax.bitcast_convert_type between equal widths (0-d goes through shape (1,): the
    eager kernel turns 0-d buffers into 1-d ones)."""
    if x.ndim:
        return lax.bitcast_convert_type(x, dtype)
    return lax.reshape(lax.bitcast_convert_type(lax.reshape(x, (1,)), dtype), ())


def _signbit(x):
    if not dtypes.is_float(x.dtype):
        return lax.lt(x, 0) if not dtypes.is_bool(x.dtype) else lax.ne(x, x)
    itype = np.dtype(f"int{x.dtype.itemsize * 8}")
    return lax.lt(_bitcast(x, itype), 0)


def _copysign(x, y):
    """|x| with the sign bit of y (float arrays of one shape or 0-d)."""
    mag = lax.abs(x)
    return _select(_signbit(y), lax.neg(mag), mag)


def _isnan(x):
    return lax.ne(x, x)


def _isinf(x):
    return lax.eq(lax.abs(x), float("inf"))


def _fn(name, impl, doc):
    impl.__name__ = impl.__qualname__ = name
    impl.__doc__ = doc
    return impl


def _as_bool(x):
    x = asarray_any(x)
    return x if dtypes.is_bool(x.dtype) else lax.ne(x, _const(0, x.dtype))
