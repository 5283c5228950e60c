"""Argument handling shared by mytorch.numpy: array conversion, dtype promotion, broadcasting.

mytorch.numpy promotes with the lattice in mytorch/core/dtypes.py (weak Python scalars
adopt the other operand's dtype) and broadcasts with NumPy's rules, then calls lax, whose
primitives take operands of one dtype and one shape.
"""

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, from_numpy, is_python_scalar, scalar_array
from mytorch.core.source_info import user_error, where


def asarray_any(x, dtype=None):
    """An Array for any array-like: Arrays, NumPy values, Python scalars, nested lists,
    `range`, objects with `__dlpack__`, `__array__`, `__array_interface__` or the buffer
    protocol (`memoryview`). NumPy reads foreign buffers without copying where it can."""
    if isinstance(x, Array):
        return x if dtype is None else lax.convert_element_type(x, dtype)
    if is_python_scalar(x):
        return scalar_array(x, None if dtype is None else dtypes.canonicalize(dtype))
    if isinstance(x, (np.ndarray, np.generic)):
        return from_numpy(x, dtype, explicit=dtype is not None)
    if isinstance(x, (list, tuple, range)):
        return _from_sequence(list(x) if isinstance(x, range) else x, dtype)
    value = foreign_to_numpy(x)
    if value is None:
        raise TypeError(f"cannot convert {type(x).__name__} to a mytorch array: {x!r:.80}")
    return from_numpy(value, dtype, explicit=dtype is not None)


def foreign_to_numpy(x):
    """A NumPy view of a foreign array (DLPack first, then `__array__`, the array
    interfaces and the buffer protocol), or None if `x` is none of these."""
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        try:
            return np.from_dlpack(x)
        except (BufferError, TypeError, RuntimeError) as e:
            if not hasattr(x, "__array__"):
                raise TypeError(
                    f"cannot read {type(x).__name__} through DLPack (device "
                    f"{x.__dlpack_device__()}): {e}. mytorch reads host (CPU) buffers"
                ) from None
    if (hasattr(x, "__array__") or hasattr(x, "__array_interface__")
            or hasattr(x, "__array_struct__") or isinstance(x, (memoryview, bytearray))):
        value = np.asarray(x)
        if value.dtype == object:
            raise TypeError(f"cannot convert {type(x).__name__} to a mytorch array: it "
                            f"gives an object array ({x!r:.60})")
        return value
    return None


def _from_sequence(seq, dtype):
    leaves = []

    def walk(s):
        if isinstance(s, (list, tuple)):
            return [walk(e) for e in s]
        leaves.append(s)
        return s

    walk(seq)
    if any(isinstance(v, Array) for v in leaves):
        from mytorch.numpy.manipulation import stack  # arrays inside lists: stack them

        parts = [asarray_any(e) for e in seq]
        out = stack(promote_dtypes("array", *parts)) if parts else asarray_any(np.zeros(0))
        _check_ints_fit("array", leaves, out.dtype)
        if dtype is None and out.weak_type:  # a list makes a strong array, as in JAX
            return lax.convert_element_type(out, out.dtype, weak_type=False)
        return out if dtype is None else lax.convert_element_type(out, dtype)
    value = np.asarray(seq)
    if value.dtype == object:
        raise TypeError(f"cannot convert the ragged or mixed sequence {seq!r:.80} to an array")
    if dtype is None and any(isinstance(v, (np.ndarray, np.generic)) for v in leaves):
        # NumPy leaves keep their dtype (Python scalars beside them are weak), as for the
        # same values inside Arrays: mnp.array([np.int8(1)]) is int8, not the default int
        value = value.astype(result_type(*leaves))
    elif dtype is None and value.dtype.kind == "f":
        value = value.astype(dtypes.default_float())
    elif dtype is None and value.dtype.kind in "iu":
        value = value.astype(dtypes.default_int())
    return from_numpy(value, dtype, explicit=dtype is not None)


def _check_ints_fit(name, leaves, dtype):
    """OverflowError for a Python int of a sequence that its integer dtype cannot hold."""
    if not dtypes.is_int(dtype):
        return
    info = np.iinfo(dtype)
    for v in leaves:
        if type(v) is int and not info.min <= v <= info.max:
            raise OverflowError(f"{name}: Python integer {v} out of bounds for {dtype}{where()}")


def dtype_and_weak(x):
    """(dtype, weak) of an argument as promotion sees it."""
    if isinstance(x, Array):
        return x.dtype, x.weak_type
    if is_python_scalar(x):
        return dtypes.python_scalar_dtype(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return dtypes.canonicalize(x.dtype), False
    return dtype_and_weak(asarray_any(x))


def _is_dtype_like(x):
    if isinstance(x, (np.dtype, str, type)):
        return True
    # mnp.int8 and the like: a dtype attribute, but not an array
    return isinstance(getattr(x, "dtype", None), np.dtype) and not (
        isinstance(x, (Array, np.ndarray, np.generic)) or hasattr(x, "shape"))


def result_type(*args):
    """The promoted dtype of arrays, dtype-likes and scalars (like `jnp.result_type`).

    Python scalars and the types `int` and `float` are weak: `result_type(int8_array, 3)`
    and `result_type(mnp.int8, int)` are int8. Dtypes may be named any way `mnp.dtype`
    accepts (`mnp.int8`, `np.int8`, `"int8"`, `"i1"`).

    >>> mnp.result_type(mnp.int8, mnp.float16)
    dtype('float16')
    """
    dtype, weak = None, False
    for a in args:
        if _is_dtype_like(a):
            d, w = dtypes.to_dtype_and_weak(a)
            d = dtypes.canonicalize(d)
        else:
            d, w = dtype_and_weak(a)
        if dtype is None:
            dtype, weak = d, w
        else:
            dtype, weak = dtypes.promote(dtype, weak, d, w)
    if dtype is None:
        return dtypes.default_float()
    return dtypes.canonicalize(dtype)


def _result(args):
    dtype, weak = None, False
    for a in args:
        d, w = dtype_and_weak(a)
        if dtype is None:
            dtype, weak = d, w
        else:
            dtype, weak = dtypes.promote(dtype, weak, d, w)
    return dtype, weak


def promote_dtypes(name, *args):
    """Arrays of one promoted dtype (weak only if every argument is weak)."""
    return _convert_all(args, *_result(args))


def promote_dtypes_inexact(name, *args):
    """Arrays of one promoted float or complex dtype (integers and bools to the default float;
    weak only if every argument is weak), not broadcast."""
    dtype, weak = _result(args)
    if dtype is not None and not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float()
    return _convert_all(args, dtype, weak)


def _convert_all(args, dtype, weak):
    out = []
    for a in args:
        if type(a) is int and dtype is not None and dtypes.is_inexact(dtype):
            a = scalar_array(float(a), dtype)  # straight to the float: no narrow-int detour
            a._weak = weak
        else:
            a = asarray_any(a)
        if a.dtype != dtype or a.weak_type != weak:
            a = lax.convert_element_type(a, dtype, weak_type=weak)
        out.append(a)
    return out


def broadcast_shapes(name, *shapes, avals=None):
    """NumPy's broadcast of `shapes`; ValueError (JAX's class) naming the operation
    otherwise."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        size = 1
        for s in shapes:
            d = s[i - ndim + len(s)] if i - ndim + len(s) >= 0 else 1
            if d != 1:
                if size not in (1, d):
                    listing = " with ".join(
                        a.aval.str_short() for a in avals
                    ) if avals else " with ".join(str(tuple(s)) for s in shapes)
                    raise user_error(
                        ValueError,
                        f"{name} cannot broadcast {listing}: each trailing dim must be "
                        "equal or 1")
                size = d
        out.append(size)
    return tuple(out)


def broadcast_to_shape(x, shape):
    """`x` broadcast to `shape` with NumPy's rules (a lax.broadcast_in_dim)."""
    if x.shape == tuple(shape):
        return x
    ndim = len(shape)
    lead = ndim - x.ndim
    keep = [i for i, d in enumerate(x.shape) if d == shape[lead + i]]
    if len(keep) != x.ndim:  # size-1 dims that expand: squeeze them first
        x = lax.reshape(x, tuple(x.shape[i] for i in keep))
    return lax.broadcast_in_dim(x, tuple(shape), tuple(lead + i for i in keep))


def promote_args(name, *args):
    """Arrays with one promoted dtype and one broadcast shape; 0-d arrays stay 0-d (lax's
    elementwise primitives broadcast them)."""
    arrays = promote_dtypes(name, *args)
    shapes = [a.shape for a in arrays]
    if all(s == shapes[0] or s == () for s in shapes):
        return arrays
    shape = broadcast_shapes(name, *shapes, avals=arrays)
    return [a if a.ndim == 0 else broadcast_to_shape(a, shape) for a in arrays]


def promote_args_inexact(name, *args):
    """Like promote_args, but integer and bool results are converted to the default float.
    Python scalars go straight to that float (`true_divide(uint8_array, 256)` divides by
    256.0, not by 256 wrapped into uint8), as in JAX."""
    dtype, weak = _result(args)
    if dtype is not None and not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float()
    arrays = _convert_all(args, dtype, weak)
    shapes = [a.shape for a in arrays]
    if all(s == shapes[0] or s == () for s in shapes):
        return arrays
    shape = broadcast_shapes(name, *shapes, avals=arrays)
    return [a if a.ndim == 0 else broadcast_to_shape(a, shape) for a in arrays]
