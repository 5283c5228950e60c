"""mytorch.numpy elementwise functions against NumPy: values, shapes, dtypes and weak types.

Expected dtypes follow JAX's rules, re-derived here independently of mytorch's lattice:
strong dtypes join as JAX joins them (int32 with float16 is float16, int8 with uint8 is
int16, 64-bit results narrow to 32 bits), Python scalars are weak, and float-only functions
give float32 for integer and bool input.
"""

import functools
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.numpy import ufuncs
from tests.strategies import arrays, assert_close, broadcastable_shapes, shapes

# NumPy references warn about their own overflows (the kernels are checked in check())
pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")

BOOL = np.dtype(np.bool_)
I8, U8, I16, I32, U32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32,
                                                np.uint32))
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
FL = [F32, F16, BF16]
IN = [I8, U8, I32]
ALL = [BOOL] + IN + FL
NUM = IN + FL
INTB = [BOOL] + IN


def _is_float(d):
    return d.kind == "f" or d == BF16


# ---- JAX's promotion rules, written out --------------------------------------------------
def _join_strong(a, b):
    if a == b:
        return a
    if a == BOOL or b == BOOL:
        return b if a == BOOL else a
    if _is_float(a) and _is_float(b):
        if {a, b} == {F16, BF16}:
            return F32
        return a if a.itemsize > b.itemsize else b
    if _is_float(a) or _is_float(b):
        return a if _is_float(a) else b
    if a.kind == b.kind:
        return a if a.itemsize > b.itemsize else b
    s, u = (a, b) if a.kind == "i" else (b, a)
    if s.itemsize > u.itemsize:
        return s
    wide = np.dtype(f"int{16 * u.itemsize}")
    return I32 if wide.itemsize > 4 else wide  # int64 narrows without x64


def jax_result(*args):
    """(dtype, weak) of promoting `args` (NumPy arrays, Python scalars) the JAX way."""
    strong = [np.dtype(a.dtype) for a in args if isinstance(a, np.ndarray)]
    strong += [BOOL for a in args if isinstance(a, bool)]
    weak_kinds = {"f" if isinstance(a, float) else "i" for a in args
                  if type(a) in (int, float)}
    if not strong:
        return (F32 if "f" in weak_kinds else I32), True
    out = functools.reduce(_join_strong, strong)
    if "f" in weak_kinds and not _is_float(out):
        return F32, True
    if "i" in weak_kinds and out == BOOL:
        return I32, True
    return out, False


def out_dtype(rule, dtype, weak):
    if rule == "same":
        return dtype, weak
    if rule == "numeric":
        return (I8, False) if dtype == BOOL else (dtype, weak)
    if rule == "float":
        return (dtype if _is_float(dtype) else F32), weak
    if rule == "bool":
        return BOOL, False
    raise ValueError(rule)


# ---- the tables ----------------------------------------------------------------------------
class Spec:
    def __init__(self, name, ref, dtypes, out="same", nan=True, lo=None, hi=None,
                 lo2=None, hi2=None, tol=None, native=False, nonzero=False, scalars=True):
        self.name, self.ref, self.dtypes, self.out = name, ref, dtypes, out
        self.fn = getattr(mnp, name)
        self.nan, self.lo, self.hi, self.lo2, self.hi2 = nan, lo, hi, lo2, hi2
        self.tol, self.native, self.nonzero, self.scalars = tol or {}, native, nonzero, scalars

    def __repr__(self):
        return self.name


BINARY = [
    Spec("add", np.add, ALL),
    Spec("subtract", np.subtract, NUM),
    Spec("multiply", np.multiply, ALL),
    Spec("divide", np.divide, ALL, "float"),
    Spec("true_divide", np.true_divide, NUM, "float"),
    Spec("floor_divide", np.floor_divide, ALL, "numeric"),
    Spec("remainder", np.remainder, ALL, "numeric"),
    Spec("mod", np.mod, NUM, "numeric"),
    Spec("fmod", np.fmod, ALL, "numeric"),
    Spec("power", np.power, NUM, "numeric", lo2=0, hi2=40, tol=dict(rtol=1e-5)),
    Spec("maximum", np.maximum, ALL),
    Spec("minimum", np.minimum, ALL),
    Spec("fmax", np.fmax, ALL),
    Spec("fmin", np.fmin, ALL),
    Spec("logaddexp", np.logaddexp, ALL, "float"),
    Spec("logaddexp2", np.logaddexp2, ALL, "float"),
    Spec("arctan2", np.arctan2, ALL, "float"),
    Spec("hypot", np.hypot, ALL, "float"),
    Spec("copysign", np.copysign, ALL, "float"),
    Spec("nextafter", np.nextafter, NUM, "float", native=True, tol=dict(rtol=0, atol=0)),
    Spec("heaviside", np.heaviside, ALL, "float"),
    Spec("equal", np.equal, ALL, "bool"),
    Spec("not_equal", np.not_equal, ALL, "bool"),
    Spec("less", np.less, ALL, "bool"),
    Spec("less_equal", np.less_equal, ALL, "bool"),
    Spec("greater", np.greater, ALL, "bool"),
    Spec("greater_equal", np.greater_equal, ALL, "bool"),
    Spec("logical_and", np.logical_and, ALL, "bool"),
    Spec("logical_or", np.logical_or, ALL, "bool"),
    Spec("logical_xor", np.logical_xor, ALL, "bool"),
    Spec("bitwise_and", np.bitwise_and, INTB),
    Spec("bitwise_or", np.bitwise_or, INTB),
    Spec("bitwise_xor", np.bitwise_xor, INTB),
    Spec("left_shift", np.left_shift, INTB, "numeric"),
    Spec("right_shift", np.right_shift, INTB, "numeric"),
    Spec("gcd", np.gcd, IN, lo=-100, hi=100, lo2=-100, hi2=100),
    Spec("lcm", np.lcm, IN, lo=-100, hi=100, lo2=-100, hi2=100),
]

UNARY = [
    Spec("negative", np.negative, NUM),
    Spec("positive", np.positive, NUM),
    Spec("absolute", np.absolute, ALL),
    Spec("abs", np.abs, NUM),
    Spec("fabs", np.fabs, ALL, "float"),
    Spec("sign", np.sign, NUM),
    Spec("reciprocal", np.reciprocal, ALL, "numeric", nonzero=True),
    Spec("square", np.square, ALL, "numeric"),
    Spec("floor", np.floor, ALL),
    Spec("ceil", np.ceil, ALL),
    Spec("trunc", np.trunc, ALL),
    Spec("fix", np.fix, ALL),
    Spec("rint", np.rint, ALL, "float"),
    Spec("isnan", np.isnan, ALL, "bool"),
    Spec("isinf", np.isinf, ALL, "bool"),
    Spec("isfinite", np.isfinite, ALL, "bool"),
    Spec("isposinf", np.isposinf, ALL, "bool"),
    Spec("isneginf", np.isneginf, ALL, "bool"),
    Spec("signbit", np.signbit, ALL, "bool"),
    Spec("logical_not", np.logical_not, ALL, "bool"),
    Spec("invert", np.invert, INTB),
    Spec("bitwise_not", np.bitwise_not, INTB),
    Spec("conjugate", np.conjugate, ALL, "numeric"),
    Spec("conj", np.conj, NUM),
    Spec("real", np.real, ALL),
    Spec("imag", np.imag, ALL),
    Spec("angle", np.angle, ALL, "float"),
] + [
    Spec(name, getattr(np, name), ALL, "float")
    for name in ["sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
                 "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                 "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "degrees", "radians",
                 "sinc"]
] + [
    Spec(alias, getattr(np, ref), FL, "float")
    for alias, ref in [("asin", "arcsin"), ("acos", "arccos"), ("atan", "arctan"),
                       ("asinh", "arcsinh"), ("acosh", "arccosh"), ("atanh", "arctanh")]
]


# ---- drawing arguments ---------------------------------------------------------------------
def _scalar(draw, dtype, lo, hi):
    if dtype == BOOL:
        return draw(st.booleans())
    if _is_float(dtype):
        return draw(st.one_of(st.floats(-100, 100), st.sampled_from([0.0, -0.5, 2.0])))
    lo = 0 if lo is None else max(lo, 0)
    return draw(st.integers(lo, min(100, 100 if hi is None else hi)))


def _arg(draw, spec, dtype, shape, first):
    lo, hi = (spec.lo, spec.hi) if first else (spec.lo2, spec.hi2)
    if spec.scalars and draw(st.integers(0, 4)) == 0:
        v = _scalar(draw, dtype, lo, hi)
        return 1 if spec.nonzero and v == 0 else v
    if not _is_float(dtype):
        lo = lo if lo is None or dtype.kind == "i" else max(lo, 0)
    else:
        lo = hi = None  # float exponents etc. may be anything
    x = draw(arrays(dtype, shape, allow_nan=spec.nan, allow_inf=spec.nan, min_value=lo,
                    max_value=hi))
    if spec.nonzero:
        x = np.where(x == 0, np.ones((), x.dtype), x)
    return x


@st.composite
def binary_args(draw, spec):
    s1 = draw(shapes(max_dims=3, max_side=4))
    s2 = draw(broadcastable_shapes(s1, max_dims=3))
    if draw(st.booleans()):
        s1, s2 = s2, s1
    d1, d2 = draw(st.sampled_from(spec.dtypes)), draw(st.sampled_from(spec.dtypes))
    return _arg(draw, spec, d1, s1, True), _arg(draw, spec, d2, s2, False)


@st.composite
def unary_args(draw, spec):
    d = draw(st.sampled_from(spec.dtypes))
    return (_arg(draw, spec, d, draw(shapes(max_dims=3, max_side=4)), True),)


def reference(spec, args):
    """NumPy's answer with the JAX result dtype: inputs cast to the computation dtype,
    float16/bfloat16 computed in float32 (as mytorch's kernels do) and rounded back."""
    dtype, weak = jax_result(*args)
    odt, oweak = out_dtype(spec.out, dtype, weak)
    compute = odt if spec.out != "bool" else dtype
    if spec.out == "numeric" and dtype == BOOL:
        compute = I8
    np_compute = F32 if compute in (F16, BF16) and not spec.native else compute
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np_args = [np.asarray(a).astype(compute).astype(np_compute) for a in args]
        out = spec.ref(*np_args)
        out = np.asarray(out).astype(odt)
    return out, odt, oweak


def check(spec, args):
    expected, dtype, weak = reference(spec, args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no floating-point warnings leak from kernels
        warnings.filterwarnings("ignore", "(overflow|underflow) encountered in cast")
        mt_args = [mnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        out = spec.fn(*mt_args)
    assert_close(out, expected, dtype=dtype, **spec.tol)
    if spec.out != "bool":
        assert out.weak_type == weak, (out.aval, weak)


@pytest.mark.parametrize("spec", BINARY, ids=repr)
@settings(max_examples=12)
@given(data=st.data())
def test_binary_matches_numpy(spec, data):
    check(spec, data.draw(binary_args(spec)))


@pytest.mark.parametrize("spec", UNARY, ids=repr)
@settings(max_examples=10)
@given(data=st.data())
def test_unary_matches_numpy(spec, data):
    check(spec, data.draw(unary_args(spec)))


def a(values, dtype=None):
    return mnp.asarray(np.asarray(values, dtype=dtype))


# ---- weak typing and dtype rules -----------------------------------------------------------
def test_python_scalars_are_weak():
    x16 = a([1.0, 2.0], F16)
    assert mnp.multiply(x16, 2.0).dtype == F16
    assert mnp.add(a([1, 2], I8), 3).dtype == I8
    assert mnp.add(a([1, 2], I32), 1.5).dtype == F32
    assert mnp.add(a([1, 2], I32), a([1.0], F16)).dtype == F16  # JAX: ints join any float
    assert mnp.add(a([1], I8), a([1], U8)).dtype == I16
    out = mnp.add(1, 2.0)
    assert out.dtype == F32 and out.weak_type
    assert mnp.sqrt(a([4], I8)).dtype == F32  # NumPy: float16
    assert mnp.divide(a([1], I32), a([2], I32)).dtype == F32


def test_python_int_outside_a_narrow_dtype_wraps_as_in_jax():
    # literal results of JAX 0.10: the int is a weak int32 converted (wrapping) to int8/uint8
    x = a([1, 2], I8)
    assert_close(mnp.add(x, 1000), [-23, -22], dtype=I8)
    assert_close(mnp.multiply(a([1], U8), -1), [255], dtype=U8)
    assert_close(mnp.power(x, 300), [1, 0], dtype=I8)
    assert_close(mnp.power(a([3, -3], I8), 301), [83, -83], dtype=I8)
    with pytest.raises(OverflowError, match="multiply: Python integer -2147483649 does not fit"):
        mnp.multiply(x, -(2**31) - 1)


def test_comparison_with_out_of_range_python_int_wraps_as_in_jax():
    x = a([-128, 0, 127], I8)  # 1000 wraps to -24 and -1000 to 24 (JAX 0.10)
    jax = {("equal", 1000): ([False] * 3, [False] * 3),
           ("equal", -1000): ([False] * 3, [False] * 3),
           ("less", 1000): ([True, False, False], [False, True, True]),
           ("less", -1000): ([True, True, False], [False, False, True]),
           ("greater_equal", 1000): ([False, True, True], [True, False, False]),
           ("greater_equal", -1000): ([False, False, True], [True, True, False])}
    for (name, v), (right, left) in jax.items():
        assert_close(getattr(mnp, name)(x, v), right, dtype=BOOL)
        assert_close(getattr(mnp, name)(v, x), left, dtype=BOOL)
    assert_close(mnp.less(a([1, 2], U8), -1), [True, True], dtype=BOOL)


def test_bool_arithmetic_follows_numpy():
    t = a([True, False, True])
    u = a([True, True, False])
    assert_close(mnp.add(t, u), np.add(np.asarray(t), np.asarray(u)), dtype=BOOL)
    assert_close(mnp.multiply(t, u), [True, False, False], dtype=BOOL)
    with pytest.raises(TypeError, match="subtract: boolean subtract is not supported"):
        mnp.subtract(t, u)
    with pytest.raises(TypeError, match="negative: boolean negative"):
        mnp.negative(t)
    with pytest.raises(TypeError, match="sign: needs numeric arguments, got bool"):
        mnp.sign(t)
    assert_close(mnp.floor_divide(t, u), [1, 0, 0], dtype=I8)
    assert_close(mnp.power(t, u), [1, 0, 1], dtype=I8)


# ---- edge cases ----------------------------------------------------------------------------
def test_floor_divide_and_remainder_signs_and_zero():
    x = np.array([-7, 7, -7, 7, 0, 5, -5], np.int32)
    y = np.array([2, -2, -2, 2, 0, 0, 0], np.int32)
    with np.errstate(all="ignore"):
        assert_close(mnp.floor_divide(a(x), a(y)), np.floor_divide(x, y), dtype=I32)
        assert_close(mnp.remainder(a(x), a(y)), np.remainder(x, y), dtype=I32)
        assert_close(mnp.fmod(a(x), a(y)), np.fmod(x, y), dtype=I32)
    xf = np.array([-7.5, 7.5, -0.0, 1.0, -1.0, 0.0, np.inf, 5.0, -5.0, np.nan], np.float32)
    yf = np.array([2.0, -2.0, 3.0, 0.0, 0.0, 0.0, 2.0, np.inf, np.inf, 1.0], np.float32)
    with np.errstate(all="ignore"):
        q, r = mnp.divmod(a(xf), a(yf))
        assert_close(q, np.floor_divide(xf, yf), dtype=F32)
        assert_close(r, np.remainder(xf, yf), dtype=F32)
        # signs of zeros as NumPy: -0.0 // 3 is -0.0, -4 % 2 is +0.0
        np.testing.assert_array_equal(np.signbit(np.asarray(q)), np.signbit(np.floor_divide(
            xf, yf)))
        np.testing.assert_array_equal(np.signbit(np.asarray(r)), np.signbit(np.remainder(
            xf, yf)))
    assert_close(mnp.floor_divide(a([np.iinfo(np.int32).min], I32), -1),
                 [np.iinfo(np.int32).min], dtype=I32)  # wraps, as NumPy


def test_power_integer_rules():
    x = a([2, -3, 0, 1, -1], I32)
    assert_close(mnp.power(x, 3), [8, -27, 0, 1, -1], dtype=I32)
    e = np.array([31, 3, 0, 5, 7], np.int32)
    assert_close(mnp.power(x, a(e)), np.power(np.asarray(x), e), dtype=I32)
    # negative exponents: the integer part of 1 / x**|y| (NumPy raises ValueError)
    assert_close(mnp.power(x, -1), [0, 0, 0, 1, -1], dtype=I32)
    assert_close(mnp.power(x, a([-2] * 5, I32)), [0, 0, 0, 1, 1], dtype=I32)
    assert mnp.power(a([2.0], F16), 2).dtype == F16
    assert_close(mnp.power(a([2.0], F32), -2), [0.25], dtype=F32)
    assert_close(mnp.float_power(a([2], I8), 3), [8.0], dtype=F32)
    assert_close(mnp.pow(a([3], U8), a([5], U8)), [243], dtype=U8)


@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("decimals", [-2, -1, 0, 1, 2, 3])
def test_round_with_decimals(dtype, decimals):
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.675, 123.456, -98.765, 0.0, np.nan, np.inf],
                 np.float32).astype(dtype)
    out = mnp.round(a(x), decimals)
    assert_close(out, np.round(x, decimals), dtype=dtype, rtol=0, atol=0)
    assert_close(mnp.around(a(x), decimals), np.around(x, decimals), dtype=dtype, rtol=0,
                 atol=0)


@pytest.mark.parametrize("dtype", [I8, U8, I32])
def test_round_integers(dtype):
    x = np.array([0, 5, 15, 25, 35, 44, 45, 46, 55, 99, 100, 125], dtype)
    if dtype.kind == "i":
        x = np.concatenate([x, -x])
    for d in (-3, -2, -1, 0, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = np.round(x, d)
        assert_close(mnp.round(a(x), d), expected, dtype=dtype)
    assert_close(mnp.rint(a(x)), np.rint(x).astype(np.float32), dtype=F32)


def test_clip():
    x = np.array([-3.0, 0.5, 2.0, np.nan, np.inf], np.float32)
    assert_close(mnp.clip(a(x), 0.0, 1.0), np.clip(x, 0.0, 1.0), dtype=F32)
    assert_close(mnp.clip(a(x), None, 1.0), np.clip(x, None, 1.0), dtype=F32)
    assert_close(mnp.clip(a(x), 0.0, None), np.clip(x, 0.0, None), dtype=F32)
    assert_close(mnp.clip(a(x)), x, dtype=F32)
    assert_close(mnp.clip(a(x), min=0.0, max=1.0), np.clip(x, min=0.0, max=1.0), dtype=F32)
    assert_close(mnp.clip(a(x), 2.0, 1.0), np.clip(x, 2.0, 1.0), dtype=F32)
    i8 = np.array([-128, -3, 5, 127], np.int8)
    # JAX 0.10: the int bounds wrap into int8 (-1000 -> 24, 1000 -> -24) before clipping
    assert_close(mnp.clip(a(i8), -1000, 1000), [-24, -24, -24, -24], dtype=I8)
    assert_close(mnp.clip(a(i8), 0, 3), np.clip(i8, 0, 3), dtype=I8)
    assert mnp.clip(a(i8), 0.5, 2.5).dtype == F32
    lo, hi = np.array([0.0, 1.0, -5.0, 0.0, 0.0], np.float32), np.float32(2.0)
    assert_close(mnp.clip(a(x), a(lo), hi), np.clip(x, lo, hi), dtype=F32)
    with pytest.raises(ValueError, match="clip: pass each bound once"):
        mnp.clip(a(x), 0.0, min=1.0)


@settings(max_examples=20)
@given(data=st.data())
def test_where_three_args(data):
    (sc, s, sy), _ = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3,
                                                                   max_side=4))
    cond = data.draw(arrays(st.sampled_from([BOOL, I8, F32]), sc))
    dx, dy = data.draw(st.sampled_from(ALL)), data.draw(st.sampled_from(ALL))
    x, y = data.draw(arrays(dx, s, allow_nan=True)), data.draw(arrays(dy, sy))
    dtype, _ = jax_result(x, y)
    out = mnp.where(a(cond), a(x), a(y))
    expected = np.where(cond, x.astype(dtype), y.astype(dtype))
    assert_close(out, expected, dtype=dtype)
    w = mnp.where(a(cond), 1.0, 2.0)
    assert w.dtype == F32 and w.weak_type


def test_where_one_arg_and_errors():
    c = np.array([[0, 1], [2, 0]])
    out = mnp.where(a(c))
    for o, e in zip(out, np.where(c), strict=True):
        assert_close(o, e.astype(np.int32))
    with pytest.raises(ValueError, match="where: pass both x and y"):
        mnp.where(a(c), 1.0)


def test_nan_to_num():
    x16 = np.array([np.nan, np.inf, -np.inf, 1.5], np.float16)
    out = mnp.nan_to_num(a(x16))
    assert_close(out, np.nan_to_num(x16), dtype=F16)
    assert float(np.asarray(out)[1]) == 65504.0
    for dt in (F32, BF16):
        x = x16.astype(dt)
        assert_close(mnp.nan_to_num(a(x)), [0.0, float(ml_dtypes.finfo(dt).max),
                                            float(ml_dtypes.finfo(dt).min), 1.5], dtype=dt,
                     rtol=0, atol=0)
    assert_close(mnp.nan_to_num(a(x16), nan=-1.0, posinf=9.0, neginf=-9.0),
                 np.nan_to_num(x16, nan=-1.0, posinf=9.0, neginf=-9.0), dtype=F16)
    assert_close(mnp.nan_to_num(a([1, 2], I8)), [1, 2], dtype=I8)


def test_isclose_allclose_with_inf_and_nan():
    x = np.array([1.0, np.inf, np.inf, -np.inf, np.nan, 1.0, 1e10, 0.0], np.float32)
    y = np.array([1.0 + 1e-6, np.inf, -np.inf, 1.0, np.nan, np.inf, 1.00001e10, 1e-9],
                 np.float32)
    for equal_nan in (False, True):
        assert_close(mnp.isclose(a(x), a(y), equal_nan=equal_nan),
                     np.isclose(x, y, equal_nan=equal_nan), dtype=BOOL)
    assert_close(mnp.isclose(a(x), a(y), rtol=0.0, atol=0.0), np.isclose(x, y, 0.0, 0.0))
    assert bool(mnp.allclose(a(x[:2]), a(y[:2])))
    assert not bool(mnp.allclose(a(x), a(y)))
    assert bool(mnp.allclose(a(x[4:5]), a(y[4:5]), equal_nan=True))
    assert mnp.isclose(a([1.0], F16), 1.0).dtype == BOOL
    assert bool(mnp.array_equal(a([1, 2]), a([1.0, 2.0])))
    assert not bool(mnp.array_equal(a([1, 2]), a([1, 2, 3])))
    assert bool(mnp.array_equal(a([np.nan]), a([np.nan]), equal_nan=True))
    assert not bool(mnp.array_equal(a([np.nan]), a([np.nan])))
    assert bool(mnp.array_equiv(a([1, 2]), a([[1, 2], [1, 2]])))
    assert not bool(mnp.array_equiv(a([1, 2]), a([1, 2, 3])))


@settings(max_examples=20)
@given(data=st.data())
def test_ldexp_frexp_modf(data):
    dtype = data.draw(st.sampled_from(FL))
    s = data.draw(shapes(max_dims=2))
    x = data.draw(arrays(dtype, s, allow_nan=True, allow_inf=True))
    e = data.draw(arrays(st.sampled_from([I8, I32]), data.draw(broadcastable_shapes(s)),
                         min_value=-300, max_value=300))
    with np.errstate(all="ignore"):
        ref = np.ldexp(x.astype(np.float64), e.astype(np.int64)).astype(dtype)
    assert_close(mnp.ldexp(a(x), a(e)), ref, dtype=dtype, rtol=0, atol=0)
    m, ex = mnp.frexp(a(x))
    rm, rex = np.frexp(x.astype(np.float32))
    assert_close(m, rm.astype(dtype), dtype=dtype, rtol=0, atol=0)
    assert_close(ex, rex, dtype=I32)
    frac, whole = mnp.modf(a(x))
    rf, rw = np.modf(x.astype(np.float32))
    assert_close(frac, rf.astype(dtype), dtype=dtype)
    assert_close(whole, rw.astype(dtype), dtype=dtype)
    np.testing.assert_array_equal(np.signbit(np.asarray(frac)), np.signbit(rf))


def test_ldexp_frexp_extremes():
    tiny = np.array([1e-45, 1e-40, 1e-30, 3e38, 0.0, -0.0], np.float32)
    assert_close(mnp.ldexp(a(tiny), a([149, 130, 130, -277, 5, 5], I32)),
                 np.ldexp(tiny, [149, 130, 130, -277, 5, 5]), dtype=F32, rtol=0, atol=0)
    m, e = mnp.frexp(a(tiny))
    rm, re = np.frexp(tiny)
    assert_close(m, rm, dtype=F32, rtol=0, atol=0)
    assert_close(e, re, dtype=I32)
    assert mnp.ldexp(a([1], I32), 3).dtype == F32
    with pytest.raises(TypeError, match="ldexp: the exponent x2 must be an integer array"):
        mnp.ldexp(a([1.0]), a([1.0]))


def test_gcd_lcm_extremes():
    x = np.array([0, 0, 12, -12, 2**30, 2**31 - 1, 1836311903], np.int32)
    y = np.array([0, 7, -18, -18, 2**29 * 3, 2**31 - 2, 1134903170], np.int32)  # Fibonacci
    assert_close(mnp.gcd(a(x), a(y)), np.gcd(x, y), dtype=I32)
    assert_close(mnp.lcm(a(x), a(y)), np.lcm(x, y), dtype=I32)


def test_nextafter_low_precision():
    for dt in (F16, BF16):
        x = np.array([0.0, 1.0, -1.0, 65504.0 if dt == F16 else 1.0, np.inf, np.nan, 0.0],
                     np.float32).astype(dt)
        y = np.array([-1.0, 2.0, -2.0, np.inf, 0.0, 1.0, 0.0], np.float32).astype(dt)
        assert_close(mnp.nextafter(a(x), a(y)), np.nextafter(x, y), dtype=dt, rtol=0, atol=0)


# ---- errors --------------------------------------------------------------------------------
def test_incompatible_shapes_error_names_both():
    # ValueError, as JAX's (whatever the ranks)
    with pytest.raises(ValueError, match=r"add cannot broadcast f32\[3,4\] with f32\[5\]"):
        mnp.add(mnp.zeros((3, 4)), mnp.zeros(5))
    with pytest.raises(ValueError, match=r"hypot cannot broadcast \w+\[2\] with f32\[3\]"):
        mnp.hypot(mnp.zeros(2, I32), mnp.zeros(3))
    with pytest.raises(ValueError, match=r"add cannot broadcast f32\[3,4\] with f32\[2,5,4\]"):
        mnp.zeros((3, 4)) + mnp.zeros((2, 5, 4))
    with pytest.raises(ValueError, match=r"where cannot broadcast"):
        mnp.where(mnp.zeros(2, BOOL), mnp.zeros(3), 1.0)


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                                  "right_shift", "gcd", "lcm"])
def test_integer_only_functions_reject_floats(name):
    with pytest.raises(TypeError, match=rf"{name}: needs integer.*arguments, got f32\[2\]"):
        getattr(mnp, name)(mnp.zeros(2), mnp.zeros(2))


def test_invert_rejects_floats():
    with pytest.raises(TypeError, match=r"invert: needs integer or bool arguments"):
        mnp.invert(mnp.zeros(2))
    with pytest.raises(TypeError, match="cannot convert"):
        mnp.sin("abc")


# ---- tracing: every function traces, checks and evaluates like eager -----------------------
X = np.array([[0.5, -1.5, 2.0], [3.0, -0.25, 4.0]], np.float32)
Y = np.array([1.5, 2.0, -3.0], np.float32)
IA = np.array([[3, -4, 5], [6, 7, -8]], np.int32)
JA = np.array([2, 3, 1], np.int32)
TRACE_ARGS = {
    "clip": (X, 0.0, 1.0), "where": (X > 0, X, Y), "round": (X,), "around": (X,),
    "nan_to_num": (X,), "isclose": (X, Y), "allclose": (X, Y), "array_equal": (X, X),
    "array_equiv": (X, Y), "ldexp": (X, JA), "divmod": (X, Y), "frexp": (X,), "modf": (X,),
    "power": (IA, JA), "pow": (X, Y),
}
INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "invert", "bitwise_not",
            "bitwise_invert", "left_shift", "right_shift", "bitwise_left_shift",
            "bitwise_right_shift", "gcd", "lcm"}


def _trace_args(name):
    if name in TRACE_ARGS:
        return TRACE_ARGS[name]
    fn = getattr(ufuncs, name)
    nargs = fn.__code__.co_argcount - len(fn.__defaults__ or ())
    base = (IA, JA) if name in INT_ONLY else (X, Y)
    return base[:nargs]


@pytest.mark.parametrize("name", ufuncs.__all__)
def test_every_function_traces(name):
    fn = getattr(mnp, name)
    args = [mnp.asarray(v) for v in _trace_args(name)]
    arrays_in = [x for x in args if isinstance(x, mt.Array)]
    positions = [i for i, x in enumerate(args) if isinstance(x, mt.Array)]

    def f(*xs):
        full = list(args)
        for i, x in zip(positions, xs, strict=True):
            full[i] = x
        return fn(*full)

    closed = mt.make_jaxpr(f)(*arrays_in)
    eager = fn(*args)
    eager = eager if isinstance(eager, tuple) else (eager,)
    traced = closed(*arrays_in)
    assert len(traced) == len(eager)
    for t, e in zip(traced, eager, strict=True):
        assert_close(t, np.asarray(e), dtype=e.dtype, rtol=0, atol=0)


def test_trace_shapes_constants():
    closed = mt.make_jaxpr(lambda x: mnp.multiply(x, 2.0))(mnp.zeros(3, F16))
    assert "mul" in str(closed)
    assert not closed.consts  # the scalar is a literal
    assert closed.out_avals[0].dtype == F16


# ---- 64-bit --------------------------------------------------------------------------------
def test_float64_with_x64(x64):
    x = np.array([1.0, 2.0 ** 0.5, -3.25, np.nan], np.float64)
    y = np.array([0.3, -1.5, 2.0, 1.0], np.float64)
    for name in ["add", "floor_divide", "remainder", "hypot", "logaddexp", "nextafter",
                 "copysign", "arctan2"]:
        assert_close(getattr(mnp, name)(a(x), a(y)), getattr(np, name)(x, y), dtype=F64)
    for name in ["sqrt", "log2", "sinc", "exp", "rint"]:
        with np.errstate(all="ignore"):
            assert_close(getattr(mnp, name)(a(x)), getattr(np, name)(x), dtype=F64)
    assert mnp.divide(a([1], np.int64), 2).dtype == F64
    m, e = mnp.frexp(a(x))
    assert_close(m, np.frexp(x)[0], dtype=F64)
    assert_close(mnp.ldexp(a(x), a([1, 2, 1000, -1075], np.int32)),
                 np.ldexp(x, [1, 2, 1000, -1075]), dtype=F64, rtol=0, atol=0)
