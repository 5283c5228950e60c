"""Elementwise functions (NumPy's ufuncs) over broadcast, promoted operands.

Arguments broadcast with NumPy's rules and promote by the lattice in mytorch/core/dtypes.py:
Python scalars are weak (`x_f16 * 2.0` stays float16). A Python int is a weak default int
(int32 without x64): one outside that range raises OverflowError, one outside a narrower
integer result dtype wraps into it (`uint8_array + 256` adds 0), as in JAX. Functions that only make sense
on floats (sqrt, exp, sin, ...) convert integer and bool input to the default float
(float32 without x64; NumPy gives float16/float64 by width). Low-precision floats (float16,
bfloat16) are computed in float32 where a function takes several rounding steps.

The functions live in arithmetic.py, transcendental.py, comparisons.py and bits.py (their
shared helpers in _ufunc_util.py); this module gathers them under one name.
"""

from mytorch.numpy.arithmetic import (
    abs, absolute, add, angle, around, ceil, clip, conj, conjugate, divide, divmod, fabs, fix,
    float_power, floor, floor_divide, fmax, fmin, fmod, gcd, heaviside, imag, lcm, maximum,
    minimum, mod, modf, multiply, negative, positive, pow, power, real, reciprocal, remainder,
    rint, round, sign, square, subtract, true_divide, trunc,
)
from mytorch.numpy.bits import (
    bitwise_and, bitwise_invert, bitwise_left_shift, bitwise_not, bitwise_or,
    bitwise_right_shift, bitwise_xor, copysign, frexp, invert, ldexp, left_shift, nextafter,
    right_shift, signbit,
)
from mytorch.numpy.comparisons import (
    allclose, array_equal, array_equiv, equal, greater, greater_equal, isclose, iscomplex,
    isfinite, isinf, isnan, isreal, isneginf, isposinf, less, less_equal, logical_and, logical_not, logical_or,
    logical_xor, nan_to_num, not_equal, where,
)
from mytorch.numpy.transcendental import (
    acos, acosh, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, asin, asinh, atan,
    atan2, atanh, cbrt, cos, cosh, deg2rad, degrees, exp, exp2, expm1, hypot, log, log10, log1p,
    log2, logaddexp, logaddexp2, rad2deg, radians, sin, sinc, sinh, sqrt, tan, tanh,
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
    "angle", "iscomplex", "isreal",
]
