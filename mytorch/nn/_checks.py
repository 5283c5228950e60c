"""Input checks shared by the layers: trace-time errors naming the module, the expected and
the received shape, and the user's line."""

import numpy as np

from mytorch.core.source_info import user_error
from mytorch.numpy import asarray


def short(x):
    """`f32[2,5]` for an array (or array-like)."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval.str_short()
    return asarray(x).aval.str_short()


def as_array(x):
    return x if hasattr(x, "aval") else asarray(x)


def shape_error(module, expected, x, cls=ValueError, hint=""):
    """`ValueError: Linear(in_features=3, out_features=4) expects input (..., 3), got
    f32[2,5] at model.py:12 (step)`."""
    return user_error(cls, f"{module.describe()} expects input {expected}, got {short(x)}"
                      + (f"; {hint}" if hint else ""))


def check_inexact(module, x):
    """Float/complex input, or a clear TypeError."""
    if not np.issubdtype(np.dtype(x.dtype), np.inexact) and "bfloat16" not in str(x.dtype):
        raise user_error(TypeError, f"{module.describe()} expects a floating-point input, "
                         f"got {short(x)}; convert it with x.astype(mnp.float32)")


def tuple_of_ints(name, what, value):
    """`value` (an int or a sequence of ints) as a tuple of non-negative ints."""
    items = (value,) if isinstance(value, (int, np.integer)) else value
    try:
        out = tuple(int(v) for v in items)
    except (TypeError, ValueError):
        raise user_error(TypeError, f"{name}: {what} must be an int or a tuple of ints, got "
                         f"{value!r}") from None
    if any(v < 0 for v in out) or any(isinstance(v, bool) for v in items):
        raise user_error(ValueError, f"{name}: {what} must be non-negative ints, got {value!r}")
    return out


def positive_int(name, what, value, allow_zero=True):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0 or (
            value == 0 and not allow_zero):
        kind = "a non-negative" if allow_zero else "a positive"
        raise user_error(ValueError, f"{name}: {what} must be {kind} int, got {value!r}")
    return int(value)
