"""Elementwise functions (NumPy's ufuncs) over broadcast, promoted operands.

Arguments broadcast with NumPy's rules and promote by the lattice in mytorch/core/dtypes.py:
Python scalars are weak (`x_f16 * 2.0` stays float16), and a Python int that does not fit
the integer result dtype raises OverflowError (as NumPy 2). Functions that only make sense
on floats (sqrt, exp, sin, ...) convert integer and bool input to the default float
(float32 without x64; NumPy gives float16/float64 by width). Low-precision floats (float16,
bfloat16) are computed in float32 where a function takes several rounding steps.
"""

import builtins
import math
import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, is_python_scalar, scalar_array
from mytorch.core.source_info import where as _where_info
from mytorch.numpy._promote import (
    asarray_any, broadcast_shapes, broadcast_to_shape, promote_args, promote_args_inexact,
    promote_dtypes, result_type,
)

__all__ = [
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder",
    "mod", "fmod", "divmod", "power", "pow", "float_power", "negative", "positive",
    "absolute", "abs", "fabs", "sign", "reciprocal", "sqrt", "cbrt", "square", "exp", "exp2",
    "expm1", "log", "log2", "log10", "log1p", "logaddexp", "logaddexp2", "sin", "cos", "tan",
    "arcsin", "asin", "arccos", "acos", "arctan", "atan", "arctan2", "atan2", "sinh", "cosh",
    "tanh", "arcsinh", "asinh", "arccosh", "acosh", "arctanh", "atanh", "deg2rad", "rad2deg",
    "degrees", "radians", "hypot", "sinc", "floor", "ceil", "trunc", "fix", "rint", "round",
    "around", "maximum", "minimum", "fmax", "fmin", "clip", "where", "equal", "not_equal",
    "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
    "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "invert", "bitwise_invert", "left_shift", "right_shift", "bitwise_left_shift",
    "bitwise_right_shift", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit",
    "copysign", "nextafter", "heaviside", "nan_to_num", "isclose", "allclose", "array_equal",
    "array_equiv", "gcd", "lcm", "ldexp", "frexp", "modf", "conj", "conjugate", "real", "imag",
    "angle",
]

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
    return "float" if dtypes.is_float(dtype) else "int"


def _require(name, arrays, kinds, what):
    for a in arrays:
        if _kind(a.dtype) not in kinds:
            got = ", ".join(x.aval.str_short() for x in arrays)
            raise TypeError(f"{name}: needs {what} arguments, got {got}{_where_info()}")


def _check_python_ints(name, args):
    """OverflowError for a Python int that does not fit the integer result dtype."""
    ints = [a for a in args if type(a) is int]
    if not ints:
        return
    dtype = result_type(*args)
    if dtypes.is_int(dtype):
        info = np.iinfo(dtype)
        for v in ints:
            if not info.min <= v <= info.max:
                raise OverflowError(
                    f"{name}: Python integer {v} out of bounds for {dtype}{_where_info()}"
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
        out_div = _select(lax.eq(b, 0.0), true_q, floor_div)
    return out_div, out_mod


def floor_divide(x1, x2):
    """x1 // x2: the floor of the quotient (Python/NumPy semantics, ints and floats).

    Integer division by zero gives 0; float division by zero gives inf/nan as NumPy.

    >>> mnp.floor_divide(mnp.array([-7, 7]), 2).tolist()
    [-4, 3]
    """
    a, b = _numeric("floor_divide", x1, x2)
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
    a, b = _numeric("remainder", x1, x2)
    if dtypes.is_float(a.dtype):
        return _in_f32(lambda u, v: _float_divmod(u, v, (False, True))[1], a, b)
    return _int_remainder(a, b)


mod = remainder


def fmod(x1, x2):
    """C's fmod: the remainder with the sign of the dividend (x % 0 is 0 for ints)."""
    return lax.rem(*_numeric("fmod", x1, x2))


def divmod(x1, x2):
    """(floor_divide(x1, x2), remainder(x1, x2))."""
    a, b = _numeric("divmod", x1, x2)
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
        if x2 < 0 and not dtypes.is_float(x.dtype):
            return _int_pow(x, _const(x2, x.dtype, x.weak_type))
        return lax.integer_pow(x, x2)
    a, b = _numeric("power", x1, x2)
    if dtypes.is_float(a.dtype):
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
    _require("positive", [a], ("int", "float"), "numeric")
    return a


def absolute(x):
    """|x| elementwise (bool and unsigned input is returned as is)."""
    (a,) = _args("absolute", x)
    if dtypes.is_bool(a.dtype) or dtypes.is_unsigned_int(a.dtype):
        return a
    return lax.abs(a)


abs = absolute


def fabs(x):
    """|x| as a float (ints give the default float)."""
    return lax.abs(_float_args("fabs", x)[0])


def sign(x):
    """-1, 0 or 1 by the sign of x (nan for nan); bool input raises TypeError."""
    (a,) = _args("sign", x)
    _require("sign", [a], ("int", "float"), "numeric")
    return lax.sign(a)


def reciprocal(x):
    """1 / x; for integers the quotient rounds toward zero (1 / 0 gives 0)."""
    (a,) = _numeric("reciprocal", x)
    if dtypes.is_float(a.dtype):
        return lax.reciprocal(a)
    return lax.div(_const(1, a.dtype, a.weak_type), a)


def square(x):
    """x * x (bool gives int8 as NumPy)."""
    (a,) = _numeric("square", x)
    return lax.square(a)


def _float_unary(name, lax_fn, what):
    def fn(x):
        return lax_fn(_float_args(name, x)[0])

    return _fn(name, fn, f"{what} of x, elementwise (any shape; ints and bools give the "
                         "default float).")


sqrt = _float_unary("sqrt", lax.sqrt, "The square root")
cbrt = _float_unary("cbrt", lax.cbrt, "The cube root")
exp = _float_unary("exp", lax.exp, "e ** x")
exp2 = _float_unary("exp2", lax.exp2, "2 ** x")
expm1 = _float_unary("expm1", lax.expm1, "exp(x) - 1 (accurate near 0)")
log = _float_unary("log", lax.log, "The natural logarithm")
log1p = _float_unary("log1p", lax.log1p, "log(1 + x) (accurate near 0)")
sin = _float_unary("sin", lax.sin, "The sine")
cos = _float_unary("cos", lax.cos, "The cosine")
tan = _float_unary("tan", lax.tan, "The tangent")
arcsin = asin = _float_unary("arcsin", lax.asin, "The inverse sine")
arccos = acos = _float_unary("arccos", lax.acos, "The inverse cosine")
arctan = atan = _float_unary("arctan", lax.atan, "The inverse tangent")
sinh = _float_unary("sinh", lax.sinh, "The hyperbolic sine")
cosh = _float_unary("cosh", lax.cosh, "The hyperbolic cosine")
tanh = _float_unary("tanh", lax.tanh, "The hyperbolic tangent")
arcsinh = asinh = _float_unary("arcsinh", lax.asinh, "The inverse hyperbolic sine")
arccosh = acosh = _float_unary("arccosh", lax.acosh, "The inverse hyperbolic cosine")
arctanh = atanh = _float_unary("arctanh", lax.atanh, "The inverse hyperbolic tangent")


def _scaled_log(name, base):
    def fn(x):
        (a,) = _float_args(name, x)
        return _in_f32(lambda v: lax.div(lax.log(v), math.log(base)), a)

    return _fn(name, fn, f"The base-{base} logarithm of x, elementwise (ints give the "
                         "default float).")


log2 = _scaled_log("log2", 2)
log10 = _scaled_log("log10", 10)


def _logaddexp(a, b, ln_base):
    def fn(x, y):
        x, y = _full([x, y])
        big = lax.max(x, y)
        d = lax.neg(lax.abs(lax.sub(x, y)))
        if ln_base == 1.0:
            tail = lax.log1p(lax.exp(d))
        else:  # log2(1 + 2**d)
            tail = lax.div(lax.log1p(lax.exp2(d)), ln_base)
        same = lax.add(x, math.log(2.0) / ln_base)  # also right for equal infinities
        return _select(lax.eq(x, y), same, lax.add(big, tail))

    return _in_f32(fn, a, b)


def logaddexp(x1, x2):
    """log(exp(x1) + exp(x2)) without overflow."""
    return _logaddexp(*_float_args("logaddexp", x1, x2), 1.0)


def logaddexp2(x1, x2):
    """log2(2**x1 + 2**x2) without overflow."""
    return _logaddexp(*_float_args("logaddexp2", x1, x2), math.log(2.0))


def arctan2(x1, x2):
    """The angle of the point (x2, x1) in [-pi, pi] (ints give the default float)."""
    return lax.atan2(*_float_args("arctan2", x1, x2))


atan2 = arctan2


def _scale(name, factor, what):
    def fn(x):
        (a,) = _float_args(name, x)
        return _in_f32(lambda v: lax.mul(v, factor), a)

    return _fn(name, fn, f"{what}, elementwise (ints give the default float).")


deg2rad = radians = _scale("deg2rad", math.pi / 180, "Degrees to radians")
rad2deg = degrees = _scale("rad2deg", 180 / math.pi, "Radians to degrees")


def _hypot(x, y):
    x, y = _full([lax.abs(x), lax.abs(y)])
    big, small = lax.max(x, y), lax.min(x, y)
    ratio = lax.div(small, _select(lax.eq(big, 0.0), 1.0, big))
    out = lax.mul(big, lax.sqrt(lax.add(lax.mul(ratio, ratio), 1.0)))
    return _select(lax.bitwise_or(_isinf(x), _isinf(y)), float("inf"), out)


def hypot(x1, x2):
    """sqrt(x1**2 + x2**2) without intermediate overflow (inf if either is inf)."""
    return _in_f32(_hypot, *_float_args("hypot", x1, x2))


def sinc(x):
    """sin(pi x) / (pi x), with sinc(0) = 1 (ints give the default float)."""
    def fn(v):
        zero = lax.eq(v, 0.0)
        pix = lax.mul(_select(zero, 1.0, v), math.pi)
        return _select(zero, 1.0, lax.div(lax.sin(pix), pix))

    return _in_f32(fn, _float_args("sinc", x)[0])


# ---- rounding -------------------------------------------------------------------------------
def floor(x):
    """The largest integer <= x (integer and bool input is returned as is, as NumPy 2)."""
    (a,) = _args("floor", x)
    return lax.floor(a) if dtypes.is_float(a.dtype) else a


def ceil(x):
    """The smallest integer >= x (integer and bool input is returned as is)."""
    (a,) = _args("ceil", x)
    return lax.ceil(a) if dtypes.is_float(a.dtype) else a


def trunc(x):
    """x rounded toward zero (integer and bool input is returned as is)."""
    (a,) = _args("trunc", x)
    if not dtypes.is_float(a.dtype):
        return a
    return _select(lax.lt(a, 0.0), lax.ceil(a), lax.floor(a))


fix = _fn("fix", lambda x: trunc(x), "x rounded toward zero (same as trunc).")


def rint(x):
    """x rounded to the nearest integer, halves to even (ints give the default float)."""
    return lax.round(_float_args("rint", x)[0], 1)


def round(a, decimals=0):
    """`a` rounded to `decimals` decimal places, halves to even (as NumPy: scaled by
    10**decimals, rounded, scaled back). Integers with negative decimals round to a
    multiple of 10**-decimals; bools are returned as is.

    >>> mnp.round(mnp.array([0.5, 1.5, 2.675]), 2).tolist()  # doctest: +SKIP
    [0.5, 1.5, 2.68]
    """
    decimals = operator.index(decimals)
    (x,) = _args("round", a)
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


# ---- extrema and selection ------------------------------------------------------------------
def maximum(x1, x2):
    """The larger of x1 and x2 elementwise (nan if either is nan)."""
    return lax.max(*_args("maximum", x1, x2))


def minimum(x1, x2):
    """The smaller of x1 and x2 elementwise (nan if either is nan)."""
    return lax.min(*_args("minimum", x1, x2))


def _nan_ignoring(name, lax_fn, x1, x2):
    a, b = _args(name, x1, x2)
    out = lax_fn(a, b)
    if not dtypes.is_float(a.dtype):
        return out
    a, b, out = _full([a, b, out])
    return _select(_isnan(a), b, _select(_isnan(b), a, out))


def fmax(x1, x2):
    """The larger of x1 and x2 elementwise, ignoring a nan (nan only if both are)."""
    return _nan_ignoring("fmax", lax.max, x1, x2)


def fmin(x1, x2):
    """The smaller of x1 and x2 elementwise, ignoring a nan (nan only if both are)."""
    return _nan_ignoring("fmin", lax.min, x1, x2)


def _clip_bound(bound, dtype):
    """A Python int bound outside an integer dtype's range clamps to the range (NumPy)."""
    if type(bound) is int and dtypes.is_int(dtype):
        info = np.iinfo(dtype)
        return builtins.min(builtins.max(bound, int(info.min)), int(info.max))
    return bound


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
    out = asarray_any(a)
    if lo is not None:
        out = maximum(out, _clip_bound(lo, out.dtype))
    if hi is not None:
        out = minimum(out, _clip_bound(hi, out.dtype))
    return out


def _as_bool(x):
    x = asarray_any(x)
    return x if dtypes.is_bool(x.dtype) else lax.ne(x, _const(0, x.dtype))


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
def _out_of_range(op, x1, x2):
    """For an integer array compared with a Python int outside its range: the constant
    answer (as NumPy 2), else None."""
    for arr, v, right in ((x1, x2, True), (x2, x1, False)):
        if type(v) is not int or not isinstance(arr, Array) or not dtypes.is_int(arr.dtype):
            continue
        info = np.iinfo(arr.dtype)
        if info.min <= v <= info.max:
            return None
        above = v > info.max  # then arr < v everywhere
        arr_less = above if right else not above
        answer = {"equal": False, "not_equal": True, "less": arr_less,
                  "less_equal": arr_less, "greater": not arr_less,
                  "greater_equal": not arr_less}[op]
        return _filled(arr.shape, answer, dtypes.bool_)
    return None


def _comparison(name, lax_fn, sym):
    def fn(x1, x2):
        x1, x2 = (v if is_python_scalar(v) else asarray_any(v) for v in (x1, x2))
        fixed = _out_of_range(name, x1, x2)
        if fixed is not None:
            return fixed
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


def _bitwise(name, lax_fn):
    def fn(x1, x2):
        a, b = _args(name, x1, x2)
        _require(name, [a, b], ("bool", "int"), "integer or bool")
        return lax_fn(a, b)

    return _fn(name, fn, f"Elementwise {name.split('_')[1]} of the bits of integer or bool "
                         "x1 and x2, broadcast and promoted.")


bitwise_and = _bitwise("bitwise_and", lax.bitwise_and)
bitwise_or = _bitwise("bitwise_or", lax.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", lax.bitwise_xor)


def invert(x):
    """~x: bitwise not of integers, logical not of bools."""
    (a,) = _args("invert", x)
    _require("invert", [a], ("bool", "int"), "integer or bool")
    return lax.bitwise_not(a)


bitwise_not = bitwise_invert = invert


def left_shift(x1, x2):
    """x1 << x2 for integers (shifts >= the bit width give 0; bool gives int8)."""
    a, b = _numeric("left_shift", x1, x2)
    _require("left_shift", [a, b], ("int",), "integer")
    return lax.shift_left(a, b)


def right_shift(x1, x2):
    """x1 >> x2 for integers: arithmetic for signed, logical for unsigned."""
    a, b = _numeric("right_shift", x1, x2)
    _require("right_shift", [a, b], ("int",), "integer")
    if dtypes.is_unsigned_int(a.dtype):
        return lax.shift_right_logical(a, b)
    return lax.shift_right_arithmetic(a, b)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


# ---- floating-point classification and manipulation -----------------------------------------
def isnan(x):
    """Whether x is nan, elementwise (False for ints and bools)."""
    return _isnan(asarray_any(x))


def isinf(x):
    """Whether x is +-inf, elementwise (False for ints and bools)."""
    a = asarray_any(x)
    return _isinf(a) if dtypes.is_float(a.dtype) else lax.ne(a, a)


def isfinite(x):
    """Whether x is neither inf nor nan, elementwise (True for ints and bools)."""
    a = asarray_any(x)
    return lax.is_finite(a) if dtypes.is_float(a.dtype) else lax.eq(a, a)


def isposinf(x):
    """Whether x is +inf, elementwise."""
    a = asarray_any(x)
    return lax.eq(a, float("inf")) if dtypes.is_float(a.dtype) else lax.ne(a, a)


def isneginf(x):
    """Whether x is -inf, elementwise."""
    a = asarray_any(x)
    return lax.eq(a, float("-inf")) if dtypes.is_float(a.dtype) else lax.ne(a, a)


def signbit(x):
    """Whether the sign bit of x is set (True for -0.0 and negative nans)."""
    return _signbit(asarray_any(x))


def copysign(x1, x2):
    """|x1| with the sign of x2, elementwise (ints give the default float)."""
    a, b = _full(_float_args("copysign", x1, x2))
    return _copysign(a, b)


def _nextafter_16(x, y):
    """nextafter for 16-bit floats by stepping the bit pattern (lax computes them in
    float32, which rounds the step away)."""
    bits = _bitcast(x, dtypes.int16)
    away = lax.eq(lax.lt(x, y), lax.gt(x, 0.0))
    out = _bitcast(_select(away, lax.add(bits, 1), lax.sub(bits, 1)), x.dtype)
    smallest = _bitcast(_const(1, dtypes.int16, False), x.dtype)
    out = _select(lax.eq(x, 0.0), _copysign(_to_shape(smallest, x.shape), y), out)
    out = _select(lax.eq(x, y), y, out)
    return _select(lax.bitwise_or(_isnan(x), _isnan(y)), lax.add(x, y), out)


def nextafter(x1, x2):
    """The next representable float after x1 toward x2 (ints give the default float)."""
    a, b = _full(_float_args("nextafter", x1, x2))
    if a.dtype in _LOW_FLOATS:
        return _nextafter_16(a, b)
    return lax.nextafter(a, b)


def heaviside(x1, x2):
    """The Heaviside step: 0 for x1 < 0, x2 for x1 == 0, 1 for x1 > 0 (nan stays nan)."""
    a, b = _full(_float_args("heaviside", x1, x2))
    out = _select(lax.lt(a, 0.0), 0.0, _select(lax.gt(a, 0.0), 1.0, b))
    return _select(_isnan(a), a, out)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """x with nan, +inf and -inf replaced (defaults: 0, the dtype's max and its min, e.g.
    65504 for float16). Integer and bool input is returned as is."""
    del copy
    a = asarray_any(x)
    if not dtypes.is_float(a.dtype):
        return a
    info = dtypes.finfo(a.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = _select(_isnan(a), _const(nan, a.dtype), a)
    out = _select(lax.eq(a, float("inf")), _const(posinf, a.dtype), out)
    return _select(lax.eq(a, float("-inf")), _const(neginf, a.dtype), out)


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
    except TypeError:
        return _const(False, dtypes.bool_, False)
    return _all(_to_shape(equal(x, y), shape))


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


def _pow2(k, dtype):
    """2.0 ** k for an int32 array k within the normal exponent range, built from bits."""
    info = dtypes.finfo(dtype)
    itype = np.dtype(f"int{dtype.itemsize * 8}")
    k = lax.convert_element_type(lax.add(k, info.maxexp - 1), itype)
    return _bitcast(lax.shift_left(k, info.nmant), dtype)


def _frexp(a):
    info = dtypes.finfo(a.dtype)
    itype = np.dtype(f"int{a.dtype.itemsize * 8}")
    nmant, bias, mask = info.nmant, info.maxexp - 1, (1 << info.nexp) - 1
    sub = lax.lt(lax.abs(a), float(info.smallest_normal))
    scaled = _select(sub, lax.mul(a, float(2.0 ** nmant)), a)
    bits = _bitcast(scaled, itype)
    e = lax.bitwise_and(lax.shift_right_logical(bits, nmant), mask)
    e = lax.sub(lax.sub(e, bias - 1), _select(sub, _const(nmant, itype, False), 0))
    m_bits = lax.bitwise_or(lax.bitwise_and(bits, ~(mask << nmant)), (bias - 1) << nmant)
    m = _bitcast(m_bits, a.dtype)
    special = lax.bitwise_or(lax.eq(a, 0.0), lax.bitwise_not(lax.is_finite(a)))
    e = lax.convert_element_type(_select(special, 0, e), dtypes.int32)
    return _select(special, a, m), e


def frexp(x):
    """(mantissa, exponent) with x = mantissa * 2**exponent, |mantissa| in [0.5, 1) and an
    int32 exponent (0 and the mantissa x itself for 0, inf and nan).

    >>> [v.tolist() for v in mnp.frexp(mnp.array([8.0]))]
    [[0.5], [4]]
    """
    return _frexp(_float_args("frexp", x)[0])


def ldexp(x1, x2):
    """x1 * 2**x2 for an integer x2, rounded once (as C's ldexp). The result has x1's float
    dtype (ints give the default float).

    >>> mnp.ldexp(mnp.array([1.5]), 3).tolist()
    [12.0]
    """
    x, e = asarray_any(x1), asarray_any(x2)
    if not dtypes.is_float(x.dtype):
        x = lax.convert_element_type(x, dtypes.default_float(), x.weak_type)
    if dtypes.is_float(e.dtype):
        raise TypeError(f"ldexp: the exponent x2 must be an integer array, got "
                        f"{e.aval.str_short()}{_where_info()}")
    shape = broadcast_shapes("ldexp", x.shape, e.shape, avals=[x, e])
    x, e = _to_shape(x, shape), _to_shape(e, shape)
    info = dtypes.finfo(x.dtype)
    lo, hi = info.minexp - info.nmant - 1, info.maxexp + 1  # beyond: 0 or inf for sure
    limit = hi - lo
    if e.dtype.itemsize >= 4:  # clamp before narrowing to int32
        e = lax.min(e, _const(limit, e.dtype))
        if not dtypes.is_unsigned_int(e.dtype):
            e = lax.max(e, _const(-limit, e.dtype))
    m, t = _frexp(x)  # x = m * 2**t with m in [0.5, 1): scale m by 2**(t + e)
    t = lax.add(t, lax.convert_element_type(e, dtypes.int32))
    t = lax.max(lax.min(t, hi), lo)
    t1 = lax.max(lax.min(t, info.maxexp - 1), info.minexp + 1)  # m * 2**t1 is normal
    out = lax.mul(lax.mul(m, _pow2(t1, x.dtype)), _pow2(lax.sub(t, t1), x.dtype))
    return lax.convert_element_type(out, x.dtype, x.weak_type and e.weak_type)


def modf(x):
    """(fractional part, integral part) of x, both with x's sign (ints give the default
    float); modf(inf) = (0.0, inf)."""
    (a,) = _float_args("modf", x)
    whole = trunc(a)
    frac = _select(_isinf(a), 0.0, lax.sub(a, whole))
    return _copysign(frac, a), whole


# ---- complex parts of real arrays -----------------------------------------------------------
def conjugate(x):
    """The complex conjugate: x itself for real input (bool gives int8 as NumPy)."""
    return _numeric("conjugate", x)[0]


conj = conjugate


def real(val):
    """The real part: the input itself (mytorch has no complex dtypes)."""
    return asarray_any(val)


def imag(val):
    """The imaginary part of real input: zeros of its shape and dtype."""
    a = asarray_any(val)
    return _filled(a.shape, 0, a.dtype, a.weak_type)


def angle(z, deg=False):
    """The argument of z: 0 for x >= 0 and pi for x < 0 (or -0.0) on real input."""
    (a,) = _float_args("angle", z)
    out = lax.atan2(_filled(a.shape, 0.0, a.dtype, a.weak_type), a)
    return lax.mul(out, 180 / math.pi) if deg else out
