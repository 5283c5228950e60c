"""Argument checks and helpers shared by the derived samplers (continuous.py, counts.py)."""

import warnings

import numpy as np

from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.errors import RetraceWarning
from mytorch.random.keys import canonical_shape, check_key

__all__ = ["float_dtype", "int_dtype", "quiet_call", "raw_key", "result_shape"]


def raw_key(name, key):
    """The uint32[2] words of a single (typed or raw) key; the samplers draw from raw keys,
    which give the same numbers as typed ones."""
    return check_key(name, key)[0]


def quiet_call(compiled, *args):
    """`compiled(*args)` without RetraceWarning: a sampler's internal jit is traced once per
    parameter shape and dtype by design (the user's own jit decides what is retraced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RetraceWarning)
        return compiled(*args)


def float_dtype(name, dtype):
    """The float dtype a sampler draws in (None: the default float); ValueError otherwise."""
    if dtype is None:
        return dtypes.default_float()
    d = dtypes.to_dtype(dtype)
    if not dtypes.is_float(d):
        raise user_error(ValueError, f"{name}: dtype argument must be a float dtype, got {d}")
    return dtypes.canonicalize(d, explicit=True)


def int_dtype(name, dtype):
    """The integer dtype of a count sampler (None: the default int); ValueError otherwise."""
    if dtype is None:
        return dtypes.default_int()
    d = dtypes.to_dtype(dtype)
    if not dtypes.is_int(d):
        raise user_error(ValueError, f"{name}: dtype argument must be an integer dtype, got {d}")
    return dtypes.canonicalize(d, explicit=True)


def result_shape(name, shape, *param_shapes):
    """`shape` (checked to be what the parameters' shapes broadcast into), or their broadcast
    when `shape` is None (JAX's rule: parameters broadcast to the shape, never the reverse)."""
    try:
        joint = np.broadcast_shapes(*param_shapes)
    except ValueError:
        raise user_error(
            ValueError, f"{name}: parameter shapes {list(param_shapes)} do not broadcast together"
        ) from None
    if shape is None:
        return joint
    shape = canonical_shape(name, shape)
    try:
        ok = np.broadcast_shapes(shape, *param_shapes) == shape
    except ValueError:
        ok = False
    if not ok:
        raise user_error(
            ValueError,
            f"{name}: shape {shape} is not broadcast-compatible with the parameter shapes "
            f"{list(param_shapes)}: each parameter must broadcast to the requested shape",
        )
    return shape
