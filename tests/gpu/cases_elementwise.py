"""Rows of the primitive table: the elementwise primitives across dtypes (float16,
bfloat16, float32, float64, complex64, ints, bool), with 0-d operands broadcast."""

import functools

import numpy as np

import mytorch.lax as lax
from tests.gpu.cases import (BF16, BOOL, C64, C128, F16, F32, F64, FLOATS, I8, I32, I64,
                             SHORT, U8, U32, Case, bools, const, ints, uniform)

SHAPE = (3, 37)  # odd sizes: no whole vector of any width, a tail in every row

# name, function, argument range, complex64 too, differentiable
UNARY = [
    ("abs", lax.abs, (-2, 2), True, True),
    ("acos", lax.acos, (-0.9, 0.9), False, True),
    ("acosh", lax.acosh, (1.1, 3), False, True),
    ("asin", lax.asin, (-0.9, 0.9), False, True),
    ("asinh", lax.asinh, (-2, 2), False, True),
    ("atan", lax.atan, (-2, 2), False, True),
    ("atanh", lax.atanh, (-0.9, 0.9), False, True),
    ("cbrt", lax.cbrt, (0.1, 3), False, True),
    ("ceil", lax.ceil, (-3, 3), False, False),
    ("cos", lax.cos, (-3, 3), True, True),
    ("cosh", lax.cosh, (-2, 2), False, True),
    ("digamma", lax.digamma, (0.5, 4), False, False),
    ("erf", lax.erf, (-2, 2), False, True),
    ("erfc", lax.erfc, (-2, 2), False, True),
    ("erf_inv", lax.erf_inv, (-0.9, 0.9), False, True),
    ("exp", lax.exp, (-3, 3), True, True),
    ("exp2", lax.exp2, (-3, 3), False, True),
    ("expm1", lax.expm1, (-1, 1), False, True),
    ("floor", lax.floor, (-3, 3), False, False),
    ("lgamma", lax.lgamma, (0.2, 4), False, True),
    ("log", lax.log, (0.1, 3), True, True),
    ("log1p", lax.log1p, (-0.5, 2), False, True),
    ("logistic", lax.logistic, (-4, 4), False, True),
    ("neg", lax.neg, (-2, 2), True, True),
    ("reciprocal", lax.reciprocal, (0.5, 2), True, True),
    ("round_away", lax.round, (-3, 3), False, False),
    ("round_even", functools.partial(lax.round, rounding_method=1), (-3, 3), False, False),
    ("rsqrt", lax.rsqrt, (0.2, 3), False, True),
    ("sign", lax.sign, (-2, 2), False, False),
    ("sin", lax.sin, (-3, 3), True, True),
    ("sinh", lax.sinh, (-2, 2), False, True),
    ("sqrt", lax.sqrt, (0.1, 3), True, True),
    ("square", lax.square, (-2, 2), True, True),
    ("tan", lax.tan, (-1.2, 1.2), False, True),
    ("tanh", lax.tanh, (-3, 3), True, True),
    ("integer_pow3", lambda x: lax.integer_pow(x, 3), (-2, 2), True, True),
    ("integer_pow_m2", lambda x: lax.integer_pow(x, -2), (0.5, 2), False, True),
    ("stop_gradient", lax.stop_gradient, (-2, 2), False, False),
]
# functions whose float64 results are also compared (x64)
F64_UNARY = {"exp", "log", "tanh", "sin", "erf", "lgamma", "digamma", "erf_inv", "log1p",
             "sqrt"}
BINARY = [
    ("add", lax.add, (-2, 2), (-2, 2), True, True),
    ("sub", lax.sub, (-2, 2), (-2, 2), True, True),
    ("mul", lax.mul, (-2, 2), (-2, 2), True, True),
    ("div", lax.div, (-2, 2), (0.5, 2), True, True),
    ("max", lax.max, (-2, 2), (-2, 2), False, True),
    ("min", lax.min, (-2, 2), (-2, 2), False, True),
    ("pow", lax.pow, (0.5, 2), (-2, 2), False, True),
    ("atan2", lax.atan2, (-2, 2), (-2, 2), False, True),
    ("rem", lax.rem, (-5, 5), (0.5, 2), False, True),
    ("nextafter", lax.nextafter, (-2, 2), (-2, 2), False, False),
]
# integer ops: name, function, first and second argument range (second None: unary)
INTEGER = [
    ("add", lax.add, (-100, 100), (-100, 100)),
    ("sub", lax.sub, (-100, 100), (-100, 100)),
    ("mul", lax.mul, (-50, 50), (-50, 50)),
    ("div", lax.div, (-100, 100), (1, 9)),
    ("div_neg", lax.div, (-100, 100), (-9, -1)),
    ("rem", lax.rem, (-100, 100), (1, 9)),
    ("max", lax.max, (-100, 100), (-100, 100)),
    ("min", lax.min, (-100, 100), (-100, 100)),
    ("neg", lax.neg, (-100, 100), None),
    ("abs", lax.abs, (-100, 100), None),
    ("sign", lax.sign, (-3, 3), None),
    ("square", lax.square, (-30, 30), None),
    ("integer_pow", lambda x: lax.integer_pow(x, 3), (-9, 9), None),
    ("and", lax.bitwise_and, (-100, 100), (-100, 100)),
    ("or", lax.bitwise_or, (-100, 100), (-100, 100)),
    ("xor", lax.bitwise_xor, (-100, 100), (-100, 100)),
    ("not", lax.bitwise_not, (-100, 100), None),
]
COMPARISONS = [("eq", lax.eq), ("ne", lax.ne), ("lt", lax.lt), ("le", lax.le), ("gt", lax.gt),
               ("ge", lax.ge)]
# source dtype, target dtype, argument builder
CONVERSIONS = [
    (F32, F16, uniform(SHAPE, -70000, 70000)),   # past float16's range: inf as NumPy
    (F32, BF16, uniform(SHAPE, -3, 3)),
    (F32, I32, uniform(SHAPE, -1000, 1000)),    # truncation towards 0
    (F32, U8, uniform(SHAPE, 0, 255)),
    (F32, BOOL, const(np.array([0.0, -0.0, 1.5, np.nan, -2.0, np.inf], np.float32))),
    (F32, C64, uniform(SHAPE)),
    (F16, F32, uniform(SHAPE, dtype=F16)),
    (BF16, F32, uniform(SHAPE, dtype=BF16)),
    (BF16, F16, uniform(SHAPE, dtype=BF16)),
    (F16, I32, uniform(SHAPE, -100, 100, dtype=F16)),
    (I32, F32, ints(SHAPE, -2**24, 2**24)),
    (I32, F16, ints(SHAPE, -2000, 2000)),
    (I32, BF16, ints(SHAPE, -300, 300)),
    (I32, I8, ints(SHAPE, -128, 128)),
    (I32, BOOL, ints(SHAPE, -2, 3)),
    (U8, I32, ints(SHAPE, 0, 256, U8)),
    (U32, F32, ints(SHAPE, 0, 2**32, U32)),
    (BOOL, F32, bools(SHAPE)),
    (BOOL, I32, bools(SHAPE)),
    (C64, C64, uniform(SHAPE, dtype=C64)),
]
SPECIALS = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3e38, 1e-45], np.float32)


def _unary_cases():
    out = []
    for name, fn, (lo, hi), complex_ok, diff in UNARY:
        dtypes = FLOATS + ((C64,) if complex_ok else ())
        for dt in dtypes:
            out.append(Case(f"{name}_{SHORT[dt]}", fn, (uniform(SHAPE, lo, hi, dt),),
                            grad=(0,) if diff and dt == F32 else ()))
        if name in F64_UNARY:
            out.append(Case(f"{name}_f64", fn, (uniform(SHAPE, lo, hi, F64),), x64=True,
                            grad=(0,) if diff else ()))
    return out


def _binary_cases():
    out = []
    for name, fn, (lo1, hi1), (lo2, hi2), complex_ok, diff in BINARY:
        for dt in FLOATS + ((C64,) if complex_ok else ()):
            out.append(Case(f"{name}_{SHORT[dt]}", fn, (uniform(SHAPE, lo1, hi1, dt),
                                                      uniform(SHAPE, lo2, hi2, dt)),
                            grad=(0, 1) if diff and dt == F32 else ()))
        # a 0-d second operand, broadcast inside the kernel
        out.append(Case(f"{name}_f32_scalar", fn, (uniform(SHAPE, lo1, hi1),
                                                   uniform((), lo2, hi2)),
                        grad=(0, 1) if diff else ()))
    out.append(Case("mul_c128", lax.mul, (uniform(SHAPE, dtype=C128),) * 2, x64=True))
    out.append(Case("div_f64", lax.div, (uniform(SHAPE, dtype=F64), uniform(SHAPE, 0.5, 2, F64)),
                    x64=True, grad=(0, 1)))
    return out


def _integer_cases():
    out = []
    for name, fn, first, second in INTEGER:
        for dt in (I32, U8, I64):
            if dt == U8:  # unsigned: non-negative operands, products within 8 bits
                if name in ("neg", "sign", "div_neg"):
                    continue
                small = name in ("mul", "square", "integer_pow")
                lo_hi, lo_hi2 = (0, 6 if small else 100), second and (1, 6 if small else 9)
            else:
                lo_hi, lo_hi2 = first, second
            args = (ints(SHAPE, *lo_hi, dt),) + ((ints(SHAPE, *lo_hi2, dt),) if second else ())
            out.append(Case(f"{name}_{SHORT[dt]}", fn, args, x64=dt == I64))
    for name, fn in (("and", lax.bitwise_and), ("or", lax.bitwise_or),
                     ("xor", lax.bitwise_xor)):
        out.append(Case(f"{name}_bool", fn, (bools(SHAPE), bools(SHAPE))))
    out.append(Case("not_bool", lax.bitwise_not, (bools(SHAPE),)))
    for name, fn in (("shift_left", lax.shift_left),
                     ("shift_right_arithmetic", lax.shift_right_arithmetic),
                     ("shift_right_logical", lax.shift_right_logical)):
        out.append(Case(f"{name}_i32", fn, (ints(SHAPE, -2**31, 2**31), ints(SHAPE, 0, 32))))
        out.append(Case(f"{name}_u32", fn, (ints(SHAPE, 0, 2**32, U32),
                                            ints(SHAPE, 0, 32, U32))))
        # shift amounts at or past the width: 0 (or the sign) as XLA defines them
        out.append(Case(f"{name}_i32_wide", fn, (ints(SHAPE, -2**31, 2**31),
                                                 ints(SHAPE, 30, 40))))
    return out


def _misc_cases():
    out = []
    for name, fn in COMPARISONS:
        for dt in (F32, F16, BF16, I32):
            out.append(Case(f"{name}_{SHORT[dt]}", fn, (ints(SHAPE, -3, 3, dt),
                                                        ints(SHAPE, -3, 3, dt))))
    out.append(Case("eq_bool", lax.eq, (bools(SHAPE), bools(SHAPE))))
    out.append(Case("ne_c64", lax.ne, (uniform(SHAPE, dtype=C64),) * 2))
    out.append(Case("lt_nan", lax.lt, (const(SPECIALS), const(SPECIALS[::-1].copy()))))
    for src, dst, build in CONVERSIONS:
        out.append(Case(f"convert_{SHORT[src]}_{SHORT[dst]}",
                        functools.partial(lax.convert_element_type, new_dtype=dst), (build,),
                        grad=(0,) if src == dst == F32 else ()))
    out.append(Case("convert_f32_f16_grad",
                    lambda x: lax.convert_element_type(lax.convert_element_type(x, F16), F32),
                    (uniform(SHAPE),), grad=(0,)))
    out.append(Case("bitcast_f32_i32", lambda x: lax.bitcast_convert_type(x, I32),
                    (uniform(SHAPE),)))
    out.append(Case("bitcast_u32_f32", lambda x: lax.bitcast_convert_type(x, F32),
                    (ints(SHAPE, 0, 2**30, U32),)))
    out.append(Case("bitcast_f32_u8", lambda x: lax.bitcast_convert_type(x, U8),
                    (uniform(SHAPE),)))
    out.append(Case("is_finite_f32", lax.is_finite, (const(SPECIALS),)))
    out.append(Case("is_finite_f16", lax.is_finite,
                    (const([0.0, -0.0, 1.0, np.inf, -np.inf, np.nan, 65504.0], F16),)))
    out.append(Case("specials_exp_log", lambda x: (lax.exp(x), lax.log(x), lax.sqrt(x)),
                    (const(SPECIALS),)))
    for dt in FLOATS:
        out.append(Case(f"clamp_{SHORT[dt]}", lax.clamp, (uniform((), -1, 0, dt),
                                                         uniform(SHAPE, -2, 2, dt),
                                                         uniform((), 0, 1, dt)),
                        grad=(1,) if dt == F32 else ()))
        out.append(Case(f"select_n_{SHORT[dt]}", lax.select_n,
                        (bools(SHAPE), uniform(SHAPE, dtype=dt), uniform(SHAPE, dtype=dt)),
                        grad=(1, 2) if dt == F32 else ()))
    out.append(Case("clamp_i32", lax.clamp, (ints((), -9, 0), ints(SHAPE, -20, 20),
                                             ints((), 0, 9))))
    out.append(Case("select_n_3way_i32", lax.select_n,
                    (ints(SHAPE, 0, 3), *(ints(SHAPE, -9, 9) for _ in range(3)))))
    out.append(Case("complex_f32", lax.complex, (uniform(SHAPE), uniform(SHAPE))))
    for name, fn in (("real", lax.real), ("imag", lax.imag), ("conj", lax.conj),
                     ("abs", lax.abs)):
        out.append(Case(f"{name}_of_c64", fn, (uniform(SHAPE, dtype=C64),)))
    out.append(Case("real_imag_grad", lambda x, y: lax.real(lax.complex(x, y) ** 2)
                    + lax.imag(lax.conj(lax.complex(y, x))), (uniform(SHAPE), uniform(SHAPE)),
                    grad=(0, 1)))
    out.append(Case("f16_overflow", lambda x: x * x, (uniform(SHAPE, 200, 400, F16),)))
    out.append(Case("f32_large_1d", lambda x, y: lax.tanh(x) * y + 1.0,
                    (uniform((1 << 16) + 3,), uniform((1 << 16) + 3,)), grad=(0, 1)))
    return out


CASES = _unary_cases() + _binary_cases() + _integer_cases() + _misc_cases()
