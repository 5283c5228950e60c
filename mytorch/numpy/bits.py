"""Bit-level ufuncs: bitwise and shift operations on integers and bools, and the
floating-point representation functions signbit, copysign, nextafter, frexp and ldexp.

Part of `mytorch.numpy.ufuncs`, whose docstring gives the promotion rules.
"""

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import where as _where_info
from mytorch.numpy._promote import asarray_any, broadcast_shapes
from mytorch.numpy._ufunc_util import (
    _LOW_FLOATS, _args, _bitcast, _const, _copysign, _float_args, _fn, _full, _isnan, _numeric,
    _require, _select, _signbit, _to_shape,
)

__all__ = [
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "invert", "bitwise_invert",
    "left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift", "signbit",
    "copysign", "nextafter", "ldexp", "frexp", "spacing",
]


# ---- bitwise operations ---------------------------------------------------------------------
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


# ---- floating-point representation ----------------------------------------------------------
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


def spacing(x):
    """The distance from x to the next representable float away from zero, carrying x's
    sign (NumPy's `spacing`); ints give the default float. NaN and inf give NaN. As NumPy,
    float16 steps towards +inf instead (a positive result, the smaller gap below a negative
    power of two) and bfloat16's -0 gives the negative smallest subnormal."""
    (a,) = _float_args("spacing", x)
    inf = _const(np.inf, a.dtype, False)
    if a.dtype == np.float16:
        step = lax.sub(nextafter(a, inf), a)
        return _select(lax.is_finite(a), step, _const(np.nan, a.dtype, False))
    mag = lax.abs(a)
    step = lax.sub(nextafter(mag, inf), mag)
    negative = _signbit(a) if a.dtype == dtypes.bfloat16 else lax.lt(a, _const(0, a.dtype, False))
    return _select(negative, lax.neg(step), step)
