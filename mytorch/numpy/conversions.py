"""NumPy's conversion and inspection helpers: `asarray_chkfinite`, `ascontiguousarray`,
`asfortranarray`, `require`, `isfortran`, `iterable`, `real_if_close`, `common_type`.

Memory layout is not a mytorch concept (an Array has no strides, and XLA-style compilers
choose layouts themselves), so the layout functions convert like `asarray` and nothing
more. The checks on values (`asarray_chkfinite`, `real_if_close`) need concrete arrays, as
their results depend on the values: under a transformation they raise
ConcretizationTypeError.
"""

import numpy as np

from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.core.trace import Tracer
from mytorch.errors import ConcretizationTypeError
from mytorch.numpy import scalar_types
from mytorch.numpy.arithmetic import real
from mytorch.numpy.creation import array, asarray

__all__ = ["asarray_chkfinite", "ascontiguousarray", "asfortranarray", "require",
           "isfortran", "iterable", "real_if_close", "common_type"]

# NumPy's requirement flags and their long names (`require`)
_REQUIREMENTS = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F",
                 "F_CONTIGUOUS": "F", "FORTRAN": "F", "A": "A", "ALIGNED": "A",
                 "W": "W", "WRITEABLE": "W", "O": "O", "OWNDATA": "O", "E": "E",
                 "ENSUREARRAY": "E"}


def _concrete(name, x):
    """The NumPy value of the Array `x`; ConcretizationTypeError naming `name` if traced."""
    if isinstance(x, Tracer):
        raise user_error(
            ConcretizationTypeError,
            f"{name}: its result depends on the values of the array, which are abstract "
            f"under this transformation (got a traced {x.aval.str_short()}). Call it outside "
            f"jit, vmap and grad.")
    return np.asarray(x)


def asarray_chkfinite(a, dtype=None, order=None):
    """`asarray(a, dtype)`, checked to hold no inf or NaN.

    Raises:
      ValueError: if an element is inf or NaN (NumPy's message).
      ConcretizationTypeError: under a transformation (the check needs the values).
    """
    del order  # arrays have no memory layout
    x = asarray(a, dtype)
    values = _concrete("asarray_chkfinite", x)
    if dtypes.is_inexact(x.dtype) and not np.isfinite(values).all():
        bad = int(np.size(values) - np.isfinite(values).sum())
        raise user_error(ValueError, f"asarray_chkfinite: array must not contain infs or NaNs "
                                     f"({bad} of {x.aval.str_short()})")
    return x


def ascontiguousarray(a, dtype=None, *, like=None):
    """`a` as an array of at least one dimension (NumPy's rule), converted to `dtype`;
    every Array is contiguous, so nothing else changes."""
    del like
    return array(a, dtype, copy=False, ndmin=1)


def asfortranarray(a, dtype=None, *, like=None):
    """`a` as an array of at least one dimension, converted to `dtype`: Arrays have no
    memory layout to change (see the module docstring)."""
    del like
    return array(a, dtype, copy=False, ndmin=1)


def require(a, dtype=None, requirements=None, *, like=None):
    """`asarray(a, dtype)`. The `requirements` flags (NumPy's C, F, A, W, O, E and their
    long names) are checked for spelling and need no work: Arrays have no layout, own
    their data and are immutable (update them with `.at[]`).

    Raises:
      ValueError: for an unknown flag.
    """
    del like
    flags = [] if requirements is None else (
        [requirements] if isinstance(requirements, str) else list(requirements))
    for flag in flags:
        if str(flag).upper() not in _REQUIREMENTS:
            raise user_error(ValueError, f"require: unknown requirement {flag!r}; expected "
                                         f"one of {sorted(_REQUIREMENTS)}")
    return asarray(a, dtype)


def isfortran(a):
    """False: an Array is never stored in Fortran order (it has no memory layout)."""
    del a
    return False


def iterable(y):
    """Whether `iter(y)` works (a 0-d Array is not iterable, as a 0-d NumPy array)."""
    try:
        iter(y)
    except TypeError:
        return False
    return True


def real_if_close(a, tol=100):
    """`a`'s real part if `a` is complex and every imaginary part is below `tol` machine
    epsilons of its dtype (`tol` itself if it is at most 1), else `a`.

    Raises:
      ConcretizationTypeError: under a transformation for complex input (the result's
        dtype depends on the values).
    """
    x = asarray(a)
    if not dtypes.is_complex(x.dtype):
        return x
    values = _concrete("real_if_close", x)
    if tol > 1:
        tol = tol * np.finfo(dtypes.real_dtype(x.dtype)).eps
    return real(x) if bool(np.all(np.abs(values.imag) < tol)) else x


def common_type(*arrays):
    """The scalar type (`mnp.float32`, `mnp.complex64`, ...) that holds every array's
    values: integers count as the default float (float64 with x64, as NumPy's float64),
    and any complex array makes the result complex.

    Raises:
      TypeError: for bool or non-numeric arrays, as NumPy.
    """
    result, is_complex = None, False
    for a in arrays:
        d = asarray(a).dtype
        if dtypes.is_int(d):
            d = dtypes.default_float()
        elif not dtypes.is_inexact(d):
            raise user_error(TypeError, f"common_type: can't get a common type for a "
                                        f"non-numeric array of dtype {d}")
        is_complex = is_complex or dtypes.is_complex(d)
        d = dtypes.real_dtype(d) if dtypes.is_complex(d) else d
        result = d if result is None else dtypes.promote_types(result, d)
    if result is None:
        result = dtypes.float16  # NumPy's answer for no arrays
    if is_complex:
        result = dtypes.complex_dtype(result)
    return getattr(scalar_types, np.dtype(result).name)
