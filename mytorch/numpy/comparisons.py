"""Comparison and logical ufuncs, `where`, NaN/inf tests and closeness tests (isclose,
allclose, array_equal, array_equiv).

Part of `mytorch.numpy.ufuncs`, whose docstring gives the promotion rules.
"""

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import is_python_scalar
from mytorch.numpy._promote import asarray_any, broadcast_shapes, promote_args, promote_dtypes
from mytorch.numpy._ufunc_util import (
    _as_bool, _check_python_ints, _const, _filled, _float_args, _fn, _full, _isinf, _isnan,
    _select, _to_shape,
)
from mytorch.numpy.arithmetic import add, multiply

__all__ = [
    "where", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite",
    "isposinf", "isneginf", "nan_to_num", "isclose", "allclose", "array_equal", "array_equiv",
    "iscomplex", "isreal",
]


# ---- selection ------------------------------------------------------------------------------
def where(condition, x=None, y=None, *, size=None, fill_value=None):
    """`x` where `condition` is true, else `y`, all broadcast; x and y are promoted.

    With only `condition`, the same as `nonzero(condition)` (eager only unless `size` is
    given).

    >>> mnp.where(mnp.array([True, False]), 1.0, 2.0).tolist()
    [1.0, 2.0]
    """
    if x is None and y is None:
        from mytorch import numpy as mnp  # nonzero is defined later in the package

        return mnp.nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("where: pass both x and y, or neither")
    _check_python_ints("where", (x, y))
    c = _as_bool(condition)
    a, b = promote_dtypes("where", x, y)
    shape = broadcast_shapes("where", c.shape, a.shape, b.shape, avals=[c, a, b])
    return lax.select(*(_to_shape(v, shape) for v in (c, a, b)))


# ---- comparisons and logic ------------------------------------------------------------------
def _comparison(name, lax_fn, sym):
    def fn(x1, x2):
        # a Python int is a weak default int: one outside a narrow operand's range wraps
        # (uint8_array < 256 compares with 0), as in JAX
        _check_python_ints(name, (x1, x2))
        return lax_fn(*promote_args(name, x1, x2))

    return _fn(name, fn, f"x1 {sym} x2 elementwise, broadcast and promoted: a bool array.")


equal = _comparison("equal", lax.eq, "==")
not_equal = _comparison("not_equal", lax.ne, "!=")
less = _comparison("less", lax.lt, "<")
less_equal = _comparison("less_equal", lax.le, "<=")
greater = _comparison("greater", lax.gt, ">")
greater_equal = _comparison("greater_equal", lax.ge, ">=")


def _logical(name, lax_fn):
    def fn(x1, x2):
        return lax_fn(*promote_args(name, _as_bool(x1), _as_bool(x2)))

    return _fn(name, fn, f"Elementwise {name.split('_')[1]} of the truth values of x1 and x2 "
                         "(nonzero is true): a bool array.")


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


def logical_not(x):
    """Elementwise not of the truth value of x (nonzero is true): a bool array."""
    return lax.bitwise_not(_as_bool(x))


# ---- floating-point classification ----------------------------------------------------------
def isnan(x):
    """Whether x is nan, elementwise (False for ints and bools)."""
    return _isnan(asarray_any(x))


def isinf(x):
    """Whether x is +-inf, elementwise (False for ints and bools)."""
    a = asarray_any(x)
    return _isinf(a) if dtypes.is_inexact(a.dtype) else lax.ne(a, a)


def isfinite(x):
    """Whether x is neither inf nor nan, elementwise (True for ints and bools)."""
    a = asarray_any(x)
    return lax.is_finite(a) if dtypes.is_inexact(a.dtype) else lax.eq(a, a)


def isposinf(x):
    """Whether x is +inf, elementwise."""
    a = asarray_any(x)
    return lax.eq(a, float("inf")) if dtypes.is_float(a.dtype) else lax.ne(a, a)


def isneginf(x):
    """Whether x is -inf, elementwise."""
    a = asarray_any(x)
    return lax.eq(a, float("-inf")) if dtypes.is_float(a.dtype) else lax.ne(a, a)


def iscomplex(x):
    """Whether each element has a nonzero imaginary part (False everywhere for real x)."""
    a = asarray_any(x)
    if not dtypes.is_complex(a.dtype):
        return _filled(a.shape, False, dtypes.bool_)
    return lax.ne(lax.imag(a), 0.0)


def isreal(x):
    """Whether each element has a zero imaginary part (True everywhere for real x)."""
    return logical_not(iscomplex(x))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """x with nan, +inf and -inf replaced (defaults: 0, the dtype's max and its min, e.g.
    65504 for float16), in each part of a complex x. Integer and bool input is returned as
    is."""
    del copy
    a = asarray_any(x)
    if dtypes.is_complex(a.dtype):
        return lax.complex(*(nan_to_num(p, True, nan, posinf, neginf)
                             for p in (lax.real(a), lax.imag(a))))
    if not dtypes.is_float(a.dtype):
        return a
    info = dtypes.finfo(a.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = _select(_isnan(a), _const(nan, a.dtype), a)
    out = _select(lax.eq(a, float("inf")), _const(posinf, a.dtype), out)
    return _select(lax.eq(a, float("-inf")), _const(neginf, a.dtype), out)


# ---- closeness and equality -----------------------------------------------------------------
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether |a - b| <= atol + rtol * |b| elementwise (NumPy's formula, computed in the
    promoted float dtype); infinities are close only to themselves, nan to nothing unless
    `equal_nan`."""
    x, y = _full(_float_args("isclose", a, b))
    rtol, atol = (v if is_python_scalar(v) else lax.convert_element_type(asarray_any(v), x.dtype)
                  for v in (rtol, atol))
    tol = add(multiply(rtol, lax.abs(y)), atol)
    out = logical_and(less_equal(lax.abs(lax.sub(x, y)), tol), lax.is_finite(y))
    out = logical_or(out, lax.eq(x, y))
    if equal_nan:
        out = lax.bitwise_or(out, lax.bitwise_and(_isnan(x), _isnan(y)))
    return out


def _all(x):
    return lax.reduce_and(x, tuple(range(x.ndim)))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element is `isclose`: a 0-d bool array (NumPy returns a Python bool)."""
    return _all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """Whether a1 and a2 have one shape and equal elements: a 0-d bool array."""
    x, y = asarray_any(a1), asarray_any(a2)
    if x.shape != y.shape:
        return _const(False, dtypes.bool_, False)
    eq = equal(x, y)
    if equal_nan:
        eq = lax.bitwise_or(eq, lax.bitwise_and(isnan(x), isnan(y)))
    return _all(_to_shape(eq, x.shape))


def array_equiv(a1, a2):
    """Whether a1 and a2 broadcast together and are equal elementwise: a 0-d bool array."""
    x, y = asarray_any(a1), asarray_any(a2)
    try:
        shape = broadcast_shapes("array_equiv", x.shape, y.shape)
    except ValueError:
        return _const(False, dtypes.bool_, False)
    return _all(_to_shape(equal(x, y), shape))
