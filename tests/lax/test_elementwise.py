"""Elementwise lax primitives against NumPy (float64 references), over drawn shapes,
dtypes and values including NaN/inf; parameters, n-ary ops and errors."""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
from mytorch import lax
from mytorch.core.array import from_numpy
from tests.strategies import FLOAT_DTYPES, arrays, assert_close, shapes

F = FLOAT_DTYPES
SIGNED = [np.dtype(np.int8), np.dtype(np.int32)]
UNSIGNED = [np.dtype(np.uint8), np.dtype(np.uint32)]
INTS = SIGNED + UNSIGNED
BOOL = [np.dtype(np.bool_)]


def _vec(fn):
    return np.frompyfunc(fn, 1, 1)


def _erfinv(y):
    # bisection on math.erf: an independent reference
    if not -1 <= y <= 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    lo, hi = -6.0, 6.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return (lo + hi) / 2


def _digamma(x):
    # central difference of math.lgamma: an independent reference (to ~1e-8)
    if x <= 0 and x == math.floor(x):
        return math.nan
    h = 1e-5 * max(1.0, abs(x))
    return (math.lgamma(x + h) - math.lgamma(x - h)) / (2 * h)


def _round_away(x):
    return np.where(np.abs(x - np.trunc(x)) >= 0.5, np.trunc(x) + np.sign(x), np.trunc(x))


# name, reference on float64/int values, dtypes, value range
UNARY = [
    ("neg", np.negative, F + SIGNED, None), ("abs", np.abs, F + SIGNED, None),
    ("sign", np.sign, F + SIGNED + UNSIGNED, None), ("floor", np.floor, F, None),
    ("ceil", np.ceil, F, None), ("exp", np.exp, F, (-20, 20)), ("exp2", np.exp2, F, (-20, 20)),
    ("log", np.log, F, (1e-3, 1e3)), ("log1p", np.log1p, F, (-0.9, 1e3)),
    ("expm1", np.expm1, F, (-20, 20)), ("sqrt", np.sqrt, F, (0, 1e3)),
    ("rsqrt", lambda x: 1 / np.sqrt(x), F, (1e-3, 1e3)), ("cbrt", np.cbrt, F, None),
    ("sin", np.sin, F, (-10, 10)), ("cos", np.cos, F, (-10, 10)), ("tan", np.tan, F, (-1.4, 1.4)),
    ("asin", np.arcsin, F, (-1, 1)), ("acos", np.arccos, F, (-1, 1)), ("atan", np.arctan, F, None),
    ("sinh", np.sinh, F, (-10, 10)), ("cosh", np.cosh, F, (-10, 10)), ("tanh", np.tanh, F, None),
    ("asinh", np.arcsinh, F, None), ("acosh", np.arccosh, F, (1, 1e3)),
    ("atanh", np.arctanh, F, (-0.99, 0.99)), ("logistic", lambda x: 1 / (1 + np.exp(-x)), F, None),
    ("erf", _vec(math.erf), F, (-5, 5)), ("erfc", _vec(math.erfc), F, (-5, 5)),
    ("erf_inv", _vec(_erfinv), F, (-0.999, 0.999)), ("lgamma", _vec(math.lgamma), F, (0.1, 50)),
    ("digamma", _vec(_digamma), F, (0.1, 50)), ("is_finite", np.isfinite, F, None),
    ("bitwise_not", lambda x: np.logical_not(x) if x.dtype == bool else np.invert(x),
     BOOL + INTS, None),
    ("square", np.square, F + SIGNED, (-100, 100)), ("reciprocal", np.reciprocal, F, (0.5, 100)),
]


def _reference(ref, x, dtype):
    wide = x.astype(np.float64) if dtype.kind == "f" or dtype == ml_dtypes.bfloat16 else x
    with np.errstate(all="ignore"):
        out = np.asarray(ref(wide))
        if out.dtype != np.bool_:
            out = out.astype(dtype)  # round to the output dtype (overflow to inf included)
    return out.astype(np.float64) if out.dtype.kind == "f" or out.dtype == dtype == \
        ml_dtypes.bfloat16 else out


@pytest.mark.parametrize("name,ref,dts,rng", UNARY, ids=[u[0] for u in UNARY])
@given(data=st.data())
def test_unary_matches_numpy(name, ref, dts, rng, data):
    dtype = data.draw(st.sampled_from(dts))
    lo, hi = rng if rng else (None, None)
    x = data.draw(arrays(dtype, shapes(max_dims=3), min_value=lo, max_value=hi))
    out = getattr(lax, name)(from_numpy(x))
    expected = _reference(ref, x, dtype)
    out_dtype = np.bool_ if name == "is_finite" else dtype
    assert out.dtype == out_dtype and out.shape == x.shape
    if out_dtype == np.bool_ or dtype.kind in "iu":
        np.testing.assert_array_equal(np.asarray(out), expected.astype(out_dtype))
    else:
        tol = {np.float32: 3e-6, np.float16: 2e-3}.get(dtype.type, 2e-2)
        if name in ("digamma",):
            tol = max(tol, 1e-5)
        np.testing.assert_allclose(np.asarray(out).astype(np.float64), expected, rtol=tol,
                                   atol=tol, equal_nan=True)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "logistic", "is_finite", "erf"])
def test_unary_non_finite_inputs_follow_numpy(name):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)
    ref = dict(UNARY_REF)[name]
    with np.errstate(all="ignore"):
        expected = np.asarray(ref(x.astype(np.float64)))
    expected = expected if expected.dtype == np.bool_ else expected.astype(np.float64)
    got = np.asarray(getattr(lax, name)(from_numpy(x)))
    np.testing.assert_array_equal(got.astype(expected.dtype), expected)


UNARY_REF = [(u[0], u[1]) for u in UNARY]


def _c_div(x, y):
    if x.dtype.kind in "iu":
        q = np.trunc(x.astype(np.float64) / y)
        return q.astype(x.dtype)
    return x / y


BINARY = [
    ("add", np.add, F + INTS), ("sub", np.subtract, F + INTS), ("mul", np.multiply, F + INTS),
    ("div", _c_div, F + INTS), ("rem", np.fmod, F + INTS), ("pow", np.power, F),
    ("max", np.maximum, F + INTS + BOOL), ("min", np.minimum, F + INTS + BOOL),
    ("atan2", np.arctan2, F), ("nextafter", np.nextafter, [np.dtype(np.float32)]),
    ("bitwise_and", np.bitwise_and, BOOL + INTS), ("bitwise_or", np.bitwise_or, BOOL + INTS),
    ("bitwise_xor", np.bitwise_xor, BOOL + INTS),
    ("eq", np.equal, F + INTS + BOOL), ("ne", np.not_equal, F + INTS + BOOL),
    ("lt", np.less, F + INTS + BOOL), ("le", np.less_equal, F + INTS + BOOL),
    ("gt", np.greater, F + INTS + BOOL), ("ge", np.greater_equal, F + INTS + BOOL),
]


@pytest.mark.parametrize("name,ref,dts", BINARY, ids=[b[0] for b in BINARY])
@given(data=st.data())
def test_binary_matches_numpy(name, ref, dts, data):
    dtype = data.draw(st.sampled_from(dts))
    shape = data.draw(shapes(max_dims=3))
    kw = dict(min_value=0.1, max_value=10) if name == "pow" else {}
    kw = dict(min_value=-100, max_value=100) if dtype.kind in "iu" and name in (
        "mul", "div", "rem") else kw
    x = data.draw(arrays(dtype, shape, **kw))
    y_shape = data.draw(st.sampled_from([shape, ()]))  # equal shapes, or a 0-d operand
    y = data.draw(arrays(dtype, y_shape, **kw))
    if name in ("div", "rem") and dtype.kind in "iu":
        y = np.where(y == 0, 1, y).astype(dtype)
    out = getattr(lax, name)(from_numpy(x), from_numpy(y))
    wide = (lambda a: a.astype(np.float64)) if dtype.kind == "f" or dtype == ml_dtypes.bfloat16 \
        else (lambda a: a)
    with np.errstate(all="ignore"):
        expected = np.asarray(ref(wide(x), wide(y)))
    assert out.shape == np.broadcast_shapes(x.shape, y.shape)
    if expected.dtype == np.bool_ or dtype.kind in "iub":
        assert out.dtype == expected.dtype if expected.dtype == np.bool_ else dtype
        np.testing.assert_array_equal(np.asarray(out), expected.astype(out.dtype))
    else:
        assert out.dtype == dtype
        # rounded to the operand dtype first: results beyond its range are inf in both
        with np.errstate(over="ignore"):
            assert_close(out, expected.astype(dtype).astype(np.float64))


def test_integer_division_by_zero_gives_zero_not_an_exception():
    x = from_numpy(np.array([7, -7], np.int32))
    zero = from_numpy(np.array([0, 0], np.int32))
    np.testing.assert_array_equal(np.asarray(lax.div(x, zero)), [0, 0])
    np.testing.assert_array_equal(np.asarray(lax.rem(x, zero)), [0, 0])


def test_shifts_follow_xla_out_of_range_semantics():
    x = from_numpy(np.array([1, -8, 5, -1], np.int32))
    s = from_numpy(np.array([3, 1, 40, 31], np.int32))
    np.testing.assert_array_equal(np.asarray(lax.shift_left(x, s)), [8, -16, 0, -(2 ** 31)])
    np.testing.assert_array_equal(np.asarray(lax.shift_right_arithmetic(x, s)), [0, -4, 0, -1])
    np.testing.assert_array_equal(np.asarray(lax.shift_right_logical(x, s)), [0, 2147483644, 0, 1])


def test_round_methods():
    x = from_numpy(np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997], np.float32))
    np.testing.assert_array_equal(np.asarray(lax.round(x)), _round_away(np.asarray(x)))
    np.testing.assert_array_equal(np.asarray(lax.round(x, 1)), np.round(np.asarray(x)))


@given(x=arrays(np.float32, shapes(max_dims=2), min_value=-3, max_value=3),
       y=st.integers(-4, 5))
def test_integer_pow(x, y):
    out = lax.integer_pow(from_numpy(x), y)
    with np.errstate(all="ignore"):
        expected = (x.astype(np.float64) ** y).astype(np.float32)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-5)


@given(data=st.data())
def test_select_n_and_clamp(data):
    shape = data.draw(shapes(max_dims=3))
    cases = [data.draw(arrays(np.float32, shape)) for _ in range(3)]
    which = data.draw(arrays(np.int32, shape, min_value=0, max_value=2))
    out = lax.select_n(from_numpy(which), *map(from_numpy, cases))
    np.testing.assert_array_equal(np.asarray(out), np.choose(which, cases))
    pred = data.draw(arrays(np.bool_, data.draw(st.sampled_from([shape, ()]))))
    out = lax.select(from_numpy(pred), from_numpy(cases[0]), from_numpy(cases[1]))
    np.testing.assert_array_equal(np.asarray(out), np.where(pred, cases[0], cases[1]))
    out = lax.clamp(-1.0, from_numpy(cases[2]), 2.0)
    np.testing.assert_array_equal(np.asarray(out), np.clip(cases[2], -1, 2))


@given(x=arrays(np.float32, shapes(max_dims=2), allow_nan=True, allow_inf=True))
def test_convert_float_to_int_saturates_and_zeroes_nan(x):
    out = np.asarray(lax.convert_element_type(from_numpy(x), np.int32))
    with np.errstate(all="ignore"):
        expected = np.clip(np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0),
                           -(2 ** 31), 2 ** 31 - 1).astype(np.int32)
    np.testing.assert_array_equal(out, expected)


def test_convert_element_type_weak_flag_and_bool():
    x = from_numpy(np.array([0.0, 2.5, -1.0], np.float32))
    assert lax.convert_element_type(x, np.bool_).tolist() == [False, True, True]
    assert lax.convert_element_type(x, np.float16, weak_type=True).weak_type


def test_bitcast_convert_type_round_trips():
    x = np.array([1.0, -2.5, np.inf], np.float32)
    bits = lax.bitcast_convert_type(from_numpy(x), np.int32)
    np.testing.assert_array_equal(np.asarray(bits), x.view(np.int32))
    narrow = lax.bitcast_convert_type(from_numpy(x), np.uint8)
    assert narrow.shape == (3, 4)
    back = lax.bitcast_convert_type(narrow, np.float32)
    np.testing.assert_array_equal(np.asarray(back), x)


def test_weak_type_propagates():
    x = from_numpy(np.ones(3, np.float16))
    s = lax.add(from_numpy(np.float16(1)), 1.0)
    assert not s.weak_type
    assert lax.mul(x, 2.0).dtype == np.float16 and not lax.mul(x, 2.0).weak_type
    w = lax.exp(lax.convert_element_type(from_numpy(np.float32(1)), np.float32, weak_type=True))
    assert w.weak_type


def test_elementwise_errors():
    f = from_numpy(np.ones(3, np.float32))
    i = from_numpy(np.ones(3, np.int32))
    with pytest.raises(TypeError, match=r"add needs operands of one dtype, got f32\[3\], i32\[3\]"):
        lax.add(f, i)
    with pytest.raises(TypeError, match=r"exp needs floating-point or complex operands, got i32\[3\]"):
        lax.exp(i)
    with pytest.raises(TypeError, match="shift_left needs .*integer"):
        lax.shift_left(f, f)
    with pytest.raises(TypeError, match="negative exponent"):
        lax.integer_pow(i, -1)
    with pytest.raises(TypeError, match="select_n"):
        lax.select_n(from_numpy(np.ones(2, bool)), f, f)


def test_traced_elementwise_program_evaluates_like_eager():
    def f(x, y):
        z = lax.add(lax.mul(lax.tanh(x), 0.5), lax.logistic(y))
        return lax.select(lax.gt(z, 0.5), z, lax.neg(z))

    x = from_numpy(np.linspace(-2, 2, 7).astype(np.float32))
    y = from_numpy(np.linspace(1, -1, 7).astype(np.float32))
    closed = mt.make_jaxpr(f)(x, y)
    np.testing.assert_allclose(closed(x, y)[0], f(x, y), rtol=1e-6)
