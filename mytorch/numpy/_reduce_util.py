"""Helpers shared by the reduction modules of mytorch.numpy (reductions, statistics, sorting)
and by mytorch.scipy.special: axis normalisation, keepdims, dtype rules, masks and fills."""

import builtins
import math

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import scalar_array
from mytorch.core.source_info import user_error
from mytorch.errors import AxisError
from mytorch.numpy._promote import asarray_any

_max, _any = builtins.max, builtins.any  # reductions.py redefines `max` and `any`


# ---- shared helpers ----------------------------------------------------------------------
def _arr(a):
    return asarray_any(a)


def _no_out(name, out):
    if out is not None:
        raise user_error(ValueError,
            f"{name}: out= is not supported: mytorch arrays are immutable; "
            "use the returned array")


def _axes(name, x, axis):
    """`axis` (None, an int or a tuple of ints, negatives allowed) as sorted axes of x."""
    if axis is None:
        return tuple(range(x.ndim))
    items = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    out = []
    for a in items:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise user_error(TypeError,
                f"{name}: axis must be None, an int or a tuple of ints, got "
                f"{axis!r}")
        a = int(a)
        if x.ndim == 0 and a in (0, -1):
            continue  # a 0-d array reduces over "axis 0" to itself (NumPy's ufunc rule)
        if not -x.ndim <= a < x.ndim:
            raise user_error(AxisError,
                f"{name}: axis {a} is out of bounds for {x.aval.str_short()} "
                f"(rank {x.ndim})")
        out.append(a % x.ndim)
    if len(set(out)) != len(out):
        raise user_error(ValueError,
            f"{name}: axis {axis!r} repeats an axis of {x.aval.str_short()}")
    return tuple(sorted(out))


def _axis1(name, x, axis):
    """A single axis (int, negatives allowed) of x, as a non-negative int."""
    if isinstance(axis, (tuple, list)):
        raise user_error(TypeError, f"{name}: axis must be an int here, got {axis!r}")
    return _axes(name, x, axis)[0]


def _keep(out, shape, axes, keepdims):
    """`out` (the reduction of an array of `shape` over `axes`) with size-1 axes restored."""
    if not keepdims:
        return out
    return lax.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(shape)))


def _cast(x, dtype, weak=None):
    weak = x.weak_type if weak is None else weak
    if x.dtype == dtype and x.weak_type == weak:
        return x
    return lax.convert_element_type(x, dtype, weak_type=weak)


def _full(shape, value, dtype, weak=False):
    """An array of `shape` filled with the Python scalar `value`."""
    c = scalar_array(value, dtype)
    if weak:
        c = lax.convert_element_type(c, dtype, weak_type=True)
    return lax.broadcast_in_dim(c, tuple(shape), ())


def _bcast(x, shape):
    """x broadcast to `shape` by NumPy's rules (x's shape must be compatible)."""
    from mytorch.numpy._promote import broadcast_shapes, broadcast_to_shape

    if broadcast_shapes("broadcast", x.shape, shape) != tuple(shape):
        raise user_error(ValueError,
            f"cannot broadcast {x.aval.str_short()} to shape {tuple(shape)}")
    return broadcast_to_shape(x, tuple(shape))


def _select(mask, x, value):
    """x where `mask` (bool, x's shape) else the scalar `value`."""
    return lax.select_n(mask, _full(x.shape, value, x.dtype, x.weak_type), x)


def _isnan(x):
    return lax.ne(x, x)


def _mask(name, where, x):
    """where= as a bool array of x's shape."""
    w = _arr(where)
    if not dtypes.is_bool(w.dtype):
        raise user_error(TypeError,
            f"{name}: where= must be a bool array, got {w.aval.str_short()}")
    try:
        return _bcast(w, x.shape)
    except (ValueError, TypeError):
        raise user_error(ValueError,
            f"{name}: where= of shape {w.aval.str_short()} does not broadcast "
            f"to the operand's shape {x.aval.str_short()}") from None


def _int_promote(dtype):
    """JAX's integer promotion for sums and products: bool and narrow ints widen."""
    if dtypes.is_bool(dtype):
        return dtypes.default_int()
    if dtypes.is_int(dtype) and dtype.itemsize < dtypes.default_int().itemsize:
        return dtypes.canonicalize(np.uint64 if dtypes.is_unsigned_int(dtype) else np.int64)
    return dtype


def _upcast_f16(dtype):
    return dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype


def _inexact(dtype):
    return dtype if dtypes.is_inexact(dtype) else dtypes.default_float()


def _user_dtype(dtype):
    return None if dtype is None else dtypes.canonicalize(dtype, explicit=True)


def _identity(dtype, largest):
    if dtypes.is_bool(dtype):
        return bool(largest)
    if dtypes.is_int(dtype):
        info = dtypes.iinfo(dtype)
        return int(info.max if largest else info.min)
    return math.inf if largest else -math.inf


def _ravel(x):
    return lax.reshape(x, (x.size,)) if x.ndim != 1 else x


def _with_initial(name, out, initial, combine):
    if initial is None:
        return out
    init = _arr(initial)
    if init.ndim:
        raise user_error(ValueError,
            f"{name}: initial= must be a scalar, got {init.aval.str_short()}")
    return combine(out, _cast(init, out.dtype, out.weak_type))


def _slice_axis(x, axis, start, stop):
    starts = tuple(start if i == axis else 0 for i in range(x.ndim))
    stops = tuple(stop if i == axis else d for i, d in enumerate(x.shape))
    return lax.slice(x, starts, stops)
