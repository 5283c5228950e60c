"""Arithmetic ufuncs: + - * /, floor division and remainders, powers, absolute value and
sign, gcd and lcm, rounding, extrema and clipping, and the complex parts of arrays.

Part of `mytorch.numpy.ufuncs`, whose docstring gives the promotion rules.
"""

import builtins
import math
import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import where as _where_info
from mytorch.numpy._promote import asarray_any, promote_dtypes, result_type
from mytorch.numpy._ufunc_util import (
    _args, _check_python_ints, _const, _copysign, _filled, _float_args, _fn, _full, _in_f32,
    _isinf, _isnan, _numeric, _real_only, _require, _select,
)

__all__ = [
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "mod",
    "fmod", "divmod", "power", "pow", "float_power", "negative", "positive", "absolute", "abs",
    "fabs", "sign", "reciprocal", "square", "floor", "ceil", "trunc", "fix", "rint", "round",
    "around", "maximum", "minimum", "fmax", "fmin", "clip", "heaviside", "gcd", "lcm", "modf",
    "conj", "conjugate", "real", "imag", "angle",
]


# ---- arithmetic -----------------------------------------------------------------------------
def add(x1, x2):
    """x1 + x2 elementwise, broadcast and promoted (bool: logical or).

    >>> mnp.add(mnp.ones(2, mnp.float16), 1.0).dtype  # Python scalars are weak
    dtype('float16')
    """
    a, b = _args("add", x1, x2)
    return lax.bitwise_or(a, b) if dtypes.is_bool(a.dtype) else lax.add(a, b)


def subtract(x1, x2):
    """x1 - x2 elementwise, broadcast and promoted. Bool operands raise TypeError."""
    a, b = _args("subtract", x1, x2)
    if dtypes.is_bool(a.dtype):
        raise TypeError(
            "subtract: boolean subtract is not supported (as in NumPy); use bitwise_xor "
            f"or logical_xor instead{_where_info()}"
        )
    return lax.sub(a, b)


def multiply(x1, x2):
    """x1 * x2 elementwise, broadcast and promoted (bool: logical and)."""
    a, b = _args("multiply", x1, x2)
    return lax.bitwise_and(a, b) if dtypes.is_bool(a.dtype) else lax.mul(a, b)


def divide(x1, x2):
    """x1 / x2 (true division): integers and bools give the default float."""
    return lax.div(*_float_args("divide", x1, x2))


true_divide = divide


def _int_floor_divide(a, b):
    q = lax.div(a, b)  # rounds toward zero; x // 0 gives 0
    if dtypes.is_unsigned_int(a.dtype):
        return q
    r = lax.rem(a, b)
    fix = lax.bitwise_and(lax.ne(r, 0), lax.ne(lax.lt(r, 0), lax.lt(b, 0)))
    return _select(fix, lax.sub(q, 1), q)


def _float_divmod(a, b, want=(True, True)):
    """NumPy's npy_divmod: floor quotient and remainder with the divisor's sign (only the
    parts in `want`, None for the others)."""
    a, b = _full([a, b])
    mod = lax.rem(a, b)
    div = lax.div(lax.sub(a, mod), b)
    nonzero = lax.ne(mod, 0.0)
    fix = lax.bitwise_and(nonzero, lax.ne(lax.lt(b, 0.0), lax.lt(mod, 0.0)))
    out_mod = out_div = None
    if want[1]:
        zero_b = _copysign(lax.mul(mod, 0.0), b)  # NumPy: a zero remainder takes b's sign
        out_mod = _select(fix, lax.add(mod, b), _select(nonzero, mod, zero_b))
    if want[0]:
        div = _select(fix, lax.sub(div, 1.0), div)
        floor_div = lax.floor(div)
        floor_div = _select(lax.gt(lax.sub(div, floor_div), 0.5), lax.add(floor_div, 1.0),
                            floor_div)
        true_q = lax.div(a, b)
        floor_div = _select(lax.ne(div, 0.0), floor_div, _copysign(lax.mul(div, 0.0), true_q))
        # piecewise constant: derivative 0 everywhere, also where b == 0 (where a / b's
        # derivative would be inf or NaN)
        out_div = lax.stop_gradient(_select(lax.eq(b, 0.0), true_q, floor_div))
    return out_div, out_mod


def floor_divide(x1, x2):
    """x1 // x2: the floor of the quotient (Python/NumPy semantics, ints and floats).

    Integer division by zero gives 0; float division by zero gives inf/nan as NumPy.

    >>> mnp.floor_divide(mnp.array([-7, 7]), 2).tolist()
    [-4, 3]
    """
    a, b = _real_only("floor_divide", *_numeric("floor_divide", x1, x2))
    if dtypes.is_float(a.dtype):
        return _in_f32(lambda u, v: _float_divmod(u, v, (True, False))[0], a, b)
    return _int_floor_divide(a, b)


def _int_remainder(a, b):
    a, b = _full([a, b])
    r = lax.rem(a, b)  # x % 0 gives 0
    if dtypes.is_unsigned_int(a.dtype):
        return r
    fix = lax.bitwise_and(lax.ne(r, 0), lax.ne(lax.lt(r, 0), lax.lt(b, 0)))
    return _select(fix, lax.add(r, b), r)


def remainder(x1, x2):
    """x1 % x2 with the sign of the divisor (Python/NumPy `%`; x % 0 is 0 for ints, nan for
    floats).

    >>> mnp.remainder(mnp.array([-7, 7]), 3).tolist()
    [2, 1]
    """
    a, b = _real_only("remainder", *_numeric("remainder", x1, x2))
    if dtypes.is_float(a.dtype):
        return _in_f32(lambda u, v: _float_divmod(u, v, (False, True))[1], a, b)
    return _int_remainder(a, b)


mod = remainder


def fmod(x1, x2):
    """C's fmod: the remainder with the sign of the dividend (x % 0 is 0 for ints)."""
    return lax.rem(*_real_only("fmod", *_numeric("fmod", x1, x2)))


def divmod(x1, x2):
    """(floor_divide(x1, x2), remainder(x1, x2))."""
    a, b = _real_only("divmod", *_numeric("divmod", x1, x2))
    if dtypes.is_float(a.dtype):
        return _in_f32(_float_divmod, a, b)
    return _int_floor_divide(a, b), _int_remainder(a, b)


def _int_pow(x, y):
    """x ** y for integer arrays by binary exponentiation over every bit of y (wraps like
    NumPy). Negative exponents give the integer part of 1 / x**|y|: 1 for x == 1, +-1 for
    x == -1, else 0 (NumPy raises ValueError)."""
    x, y = _full([x, y])
    acc = _filled(x.shape, 1, x.dtype, x.weak_type)
    base, e = x, y
    bits = np.iinfo(x.dtype).bits - (0 if dtypes.is_unsigned_int(x.dtype) else 1)
    for i in range(bits):  # every operand has the full shape: lax.select directly
        acc = lax.select(lax.ne(lax.bitwise_and(e, 1), 0), lax.mul(acc, base), acc)
        if i + 1 < bits:
            base = lax.mul(base, base)
            e = lax.shift_right_logical(e, 1)
    if dtypes.is_unsigned_int(x.dtype):
        return acc
    odd = lax.ne(lax.bitwise_and(y, 1), 0)
    zeros = _filled(x.shape, 0, x.dtype, x.weak_type)
    neg = _select(lax.eq(x, 1), 1, _select(lax.eq(x, -1), _select(odd, -1, 1, x.dtype), zeros))
    return _select(lax.lt(y, 0), neg, acc)


def power(x1, x2):
    """x1 ** x2 elementwise. int ** int stays int (wrapping on overflow, as NumPy); a
    Python int exponent uses lax.integer_pow. Negative integer exponents of integer bases
    give 1/x**|y| rounded toward zero instead of NumPy's ValueError.

    >>> mnp.power(mnp.array([2, 3]), 3).tolist()
    [8, 27]
    """
    if type(x2) is int:
        _check_python_ints("power", (x1, x2))
        (x,) = promote_dtypes("power", x1, x2)[:1]
        if dtypes.is_bool(x.dtype):
            x = lax.convert_element_type(x, dtypes.int8)
        if x2 < 0 and not dtypes.is_inexact(x.dtype):
            return _int_pow(x, _const(x2, x.dtype, x.weak_type))
        return lax.integer_pow(x, x2)
    a, b = _numeric("power", x1, x2)
    if dtypes.is_inexact(a.dtype):
        return lax.pow(a, b)
    return _int_pow(a, b)


pow = power


def float_power(x1, x2):
    """x1 ** x2 computed in at least the default float (float32 without x64; NumPy uses
    float64)."""
    dtype = dtypes.promote_types(result_type(x1, x2), dtypes.default_float())
    a, b = _args("float_power", x1, x2)
    return lax.pow(lax.convert_element_type(a, dtype), lax.convert_element_type(b, dtype))


def negative(x):
    """-x elementwise (unsigned ints wrap). Bool input raises TypeError as in NumPy."""
    (a,) = _args("negative", x)
    if dtypes.is_bool(a.dtype):
        raise TypeError(f"negative: boolean negative is not supported; use logical_not or "
                        f"the ~ operator{_where_info()}")
    return lax.neg(a)


def positive(x):
    """+x (a no-op for numbers; bool raises TypeError as in NumPy)."""
    (a,) = _args("positive", x)
    _require("positive", [a], ("int", "float", "complex"), "numeric")
    return a


def absolute(x):
    """|x| elementwise (bool and unsigned input is returned as is)."""
    (a,) = _args("absolute", x)
    if dtypes.is_bool(a.dtype) or dtypes.is_unsigned_int(a.dtype):
        return a
    return lax.abs(a)


abs = absolute


def fabs(x):
    """|x| as a float (ints give the default float; complex input raises, as NumPy)."""
    return lax.abs(_real_only("fabs", *_float_args("fabs", x))[0])


def sign(x):
    """-1, 0 or 1 by the sign of x (nan for nan); x / |x| (0 at 0) for a complex x, as
    NumPy 2 and JAX; bool input raises TypeError."""
    (a,) = _args("sign", x)
    _require("sign", [a], ("int", "float", "complex"), "numeric")
    return lax.sign(a)


def heaviside(x1, x2):
    """The Heaviside step: 0 for x1 < 0, x2 for x1 == 0, 1 for x1 > 0 (nan stays nan)."""
    a, b = _full(_real_only("heaviside", *_float_args("heaviside", x1, x2)))
    out = _select(lax.lt(a, 0.0), 0.0, _select(lax.gt(a, 0.0), 1.0, b))
    return _select(_isnan(a), a, out)


def reciprocal(x):
    """1 / x; for integers the quotient rounds toward zero (1 / 0 gives 0)."""
    (a,) = _numeric("reciprocal", x)
    if dtypes.is_inexact(a.dtype):
        return lax.reciprocal(a)
    return lax.div(_const(1, a.dtype, a.weak_type), a)


def square(x):
    """x * x (bool gives int8 as NumPy)."""
    (a,) = _numeric("square", x)
    return lax.square(a)


# ---- integer number theory ------------------------------------------------------------------
def _gcd(a, b):
    a, b = _full([absolute(a), absolute(b)])
    bits = np.iinfo(a.dtype).bits
    for _ in range(int(bits * math.log(2) / math.log((1 + 5 ** 0.5) / 2)) + 3):
        r = lax.rem(a, b)  # a % 0 gives 0, so finished pairs stay (g, 0)
        a = lax.select(lax.eq(b, 0), a, b)
        b = r
    return a


def gcd(x1, x2):
    """The greatest common divisor of |x1| and |x2| (integers; gcd(0, 0) = 0).

    >>> mnp.gcd(mnp.array([12, -18]), 8).tolist()
    [4, 2]
    """
    a, b = _args("gcd", x1, x2)
    _require("gcd", [a, b], ("int",), "integer")
    return _gcd(a, b)


def lcm(x1, x2):
    """The least common multiple of |x1| and |x2| (integers; 0 if either is 0)."""
    a, b = _args("lcm", x1, x2)
    _require("lcm", [a, b], ("int",), "integer")
    g = _gcd(a, b)
    a, b = _full([absolute(a), absolute(b)])
    return _select(lax.eq(g, 0), 0, lax.mul(lax.div(a, g), b))


# ---- rounding -------------------------------------------------------------------------------
def floor(x):
    """The largest integer <= x (integer and bool input is returned as is, as NumPy 2)."""
    (a,) = _real_only("floor", *_args("floor", x))
    return lax.floor(a) if dtypes.is_float(a.dtype) else a


def ceil(x):
    """The smallest integer >= x (integer and bool input is returned as is)."""
    (a,) = _real_only("ceil", *_args("ceil", x))
    return lax.ceil(a) if dtypes.is_float(a.dtype) else a


def trunc(x):
    """x rounded toward zero (integer and bool input is returned as is)."""
    (a,) = _real_only("trunc", *_args("trunc", x))
    if not dtypes.is_float(a.dtype):
        return a
    return _select(lax.lt(a, 0.0), lax.ceil(a), lax.floor(a))


fix = _fn("fix", lambda x: trunc(x), "x rounded toward zero (same as trunc).")


def rint(x):
    """x rounded to the nearest integer, halves to even (ints give the default float)."""
    (a,) = _float_args("rint", x)
    if dtypes.is_complex(a.dtype):
        return lax.complex(rint(lax.real(a)), rint(lax.imag(a)))
    return lax.round(a, 1)


def round(a, decimals=0):
    """`a` rounded to `decimals` decimal places, halves to even (as NumPy: scaled by
    10**decimals, rounded, scaled back). Integers with negative decimals round to a
    multiple of 10**-decimals; bools are returned as is.

    >>> mnp.round(mnp.array([0.5, 1.5, 2.675]), 2).tolist()  # doctest: +SKIP
    [0.5, 1.5, 2.68]
    """
    decimals = operator.index(decimals)
    (x,) = _args("round", a)
    if dtypes.is_complex(x.dtype):  # each part, as NumPy
        return lax.complex(round(lax.real(x), decimals), round(lax.imag(x), decimals))
    if dtypes.is_bool(x.dtype) or (not dtypes.is_float(x.dtype) and decimals >= 0):
        return x
    if not dtypes.is_float(x.dtype):
        return _round_int(x, 10 ** -decimals)
    if decimals == 0:
        return lax.round(x, 1)
    f = float(10.0 ** builtins.abs(decimals))
    if decimals > 0:
        return lax.div(lax.round(lax.mul(x, f), 1), f)
    return lax.mul(lax.round(lax.div(x, f), 1), f)


def _round_int(x, f):
    """Round integers to a multiple of f, halves to even (exactly, in integer arithmetic)."""
    if f > np.iinfo(x.dtype).max:
        return _filled(x.shape, 0, x.dtype, x.weak_type)
    q = _int_floor_divide(x, _const(f, x.dtype))
    r = lax.sub(x, lax.mul(q, f))  # 0 <= r < f
    half = lax.sub(_const(f, x.dtype), r)
    up = lax.bitwise_or(lax.gt(r, half), lax.bitwise_and(
        lax.eq(r, half), lax.ne(lax.bitwise_and(q, 1), 0)))
    return lax.mul(_select(up, lax.add(q, 1), q), f)


around = round


def modf(x):
    """(fractional part, integral part) of x, both with x's sign (ints give the default
    float); modf(inf) = (0.0, inf)."""
    (a,) = _real_only("modf", *_float_args("modf", x))
    whole = trunc(a)
    frac = _select(_isinf(a), 0.0, lax.sub(a, whole))
    return _copysign(frac, a), whole


# ---- extrema and clipping -------------------------------------------------------------------
def maximum(x1, x2):
    """The larger of x1 and x2 elementwise (nan if either is nan)."""
    return lax.max(*_args("maximum", x1, x2))


def minimum(x1, x2):
    """The smaller of x1 and x2 elementwise (nan if either is nan)."""
    return lax.min(*_args("minimum", x1, x2))


def _nan_ignoring(name, lax_fn, x1, x2):
    a, b = _args(name, x1, x2)
    out = lax_fn(a, b)
    if not dtypes.is_inexact(a.dtype):
        return out
    a, b, out = _full([a, b, out])
    return _select(_isnan(a), b, _select(_isnan(b), a, out))


def fmax(x1, x2):
    """The larger of x1 and x2 elementwise, ignoring a nan (nan only if both are)."""
    return _nan_ignoring("fmax", lax.max, x1, x2)


def fmin(x1, x2):
    """The smaller of x1 and x2 elementwise, ignoring a nan (nan only if both are)."""
    return _nan_ignoring("fmin", lax.min, x1, x2)


def clip(a, a_min=None, a_max=None, *, min=None, max=None):
    """`a` limited to [a_min, a_max] (either may be None; NumPy 2's min=/max= keywords work
    too). Equivalent to minimum(maximum(a, a_min), a_max), so a_min > a_max gives a_max.

    >>> mnp.clip(mnp.arange(5), 1, 3).tolist()
    [1, 1, 2, 3, 3]
    """
    if a_min is not None and min is not None or a_max is not None and max is not None:
        raise ValueError("clip: pass each bound once (a_min or min, a_max or max)")
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    out = asarray_any(a)  # a Python int bound wraps into a narrow dtype, as in JAX
    if lo is not None:
        out = maximum(out, lo)
    if hi is not None:
        out = minimum(out, hi)
    return out


# ---- complex parts ------------------------------------------------------------------------
def conjugate(x):
    """The complex conjugate (any shape): x itself for real input (bool gives int8 as
    NumPy)."""
    (a,) = _numeric("conjugate", x)
    return lax.conj(a) if dtypes.is_complex(a.dtype) else a


conj = conjugate


def real(val):
    """The real part (any shape): float32/float64 for complex input, the input itself
    otherwise."""
    a = asarray_any(val)
    return lax.real(a) if dtypes.is_complex(a.dtype) else a


def imag(val):
    """The imaginary part (any shape): float32/float64 for complex input, zeros of the
    input's shape and dtype otherwise."""
    a = asarray_any(val)
    if dtypes.is_complex(a.dtype):
        return lax.imag(a)
    return _filled(a.shape, 0, a.dtype, a.weak_type)


def angle(z, deg=False):
    """The argument of z in (-pi, pi] (in degrees with deg=True), any shape: atan2(imag,
    real); on real input 0 for x >= 0 and pi for x < 0 (or -0.0)."""
    (a,) = _float_args("angle", z)
    if dtypes.is_complex(a.dtype):
        out = lax.atan2(lax.imag(a), lax.real(a))
    else:
        out = lax.atan2(_filled(a.shape, 0.0, a.dtype, a.weak_type), a)
    return lax.mul(out, 180 / math.pi) if deg else out
