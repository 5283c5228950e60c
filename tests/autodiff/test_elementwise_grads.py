"""Derivatives of every elementwise primitive (mytorch/lax/elementwise.py) and of the
elementwise functions of mytorch.numpy / mytorch.scipy.special, against float64 central
finite differences (tests/autodiff/fd.py), forward and reverse mode, up to order 2 (3 for
a handful); exact checks for the zero-derivative ops and for the conventions at the
awkward points (which follow JAX's rules in jax/_src/lax/lax.py unless noted).

Shapes are drawn by hypothesis (0-d included, and size-0 axes); binary operands are either
of one shape or one of them is 0-d beside a shaped one (our lax ops broadcast a 0-d
operand). Values are drawn inside each function's smooth domain, away from kinks, ties,
poles and branch cuts by construction.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mytorch as mt
import mytorch.numpy as mnp
import mytorch.scipy.special as msp
from mytorch import lax, tree_util
from mytorch.core.primitive import Primitive
from mytorch.lax import elementwise as ew
from tests.autodiff.fd import check_grads

_HC = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]
_DEFAULT = settings.default.max_examples
# the per-primitive tests run once per op: a share of the profile's examples each
OP_SETTINGS = settings(max_examples=max(4, _DEFAULT * 2 // 5), suppress_health_check=_HC)
FEW_SETTINGS = settings(max_examples=max(3, _DEFAULT // 5), suppress_health_check=_HC)


# ---- value strategies ---------------------------------------------------------------------
def shapes(max_dims=3, max_side=3):
    return hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=0, max_side=max_side)


def interval(lo, hi):
    """Strategy factory: shape -> float64 arrays with entries in [lo, hi]."""
    def make(shape):
        return hnp.arrays(np.float64, shape, elements=st.floats(lo, hi))
    return make


def signed(lo, hi):
    """Strategy factory: entries with |x| in [lo, hi] and either sign (away from 0)."""
    def make(shape):
        return st.tuples(interval(lo, hi)(shape), hnp.arrays(np.bool_, shape)).map(
            lambda p: np.where(p[1], -p[0], p[0]))
    return make


def off_integers(lo, hi):
    """Entries k + f with integer k in [lo, hi) and f in [0.15, 0.85] (away from poles and
    rounding jumps)."""
    def make(shape):
        return st.tuples(hnp.arrays(np.int64, shape, elements=st.integers(lo, hi - 1)),
                         interval(0.15, 0.85)(shape)).map(lambda p: p[0] + p[1])
    return make


def off_halves(lo, hi):
    """Entries k + f with integer k in [lo, hi) and f in [-0.35, 0.35] (away from the
    half-integers, where round jumps)."""
    def make(shape):
        return st.tuples(hnp.arrays(np.int64, shape, elements=st.integers(lo, hi - 1)),
                         interval(-0.35, 0.35)(shape)).map(lambda p: p[0] + p[1])
    return make


def _binary_shapes(draw):
    """(shape of x, shape of y): equal, or one of them 0-d beside a shaped one."""
    shape = draw(shapes())
    mode = draw(st.sampled_from(["same", "x0", "y0"]))
    return (() if mode == "x0" else shape), (() if mode == "y0" else shape)


# ---- unary primitives with a smooth derivative ---------------------------------------------
# name: (lax function, value strategy factory, order)
UNARY = {
    "neg": (lax.neg, interval(-3, 3), 2),
    "abs": (lax.abs, signed(0.2, 3), 2),
    "exp": (lax.exp, interval(-3, 3), 3),
    "exp2": (lax.exp2, interval(-3, 3), 2),
    "log": (lax.log, interval(0.2, 5), 3),
    "log1p": (lax.log1p, interval(-0.7, 3), 2),
    "expm1": (lax.expm1, interval(-3, 3), 2),
    "sqrt": (lax.sqrt, interval(0.2, 5), 3),
    "rsqrt": (lax.rsqrt, interval(0.2, 5), 2),
    "cbrt": (lax.cbrt, signed(0.2, 5), 2),
    "sin": (lax.sin, interval(-3, 3), 3),
    "cos": (lax.cos, interval(-3, 3), 2),
    "tan": (lax.tan, interval(-1.2, 1.2), 2),
    "asin": (lax.asin, interval(-0.9, 0.9), 2),
    "acos": (lax.acos, interval(-0.9, 0.9), 2),
    "atan": (lax.atan, interval(-3, 3), 2),
    "sinh": (lax.sinh, interval(-2, 2), 2),
    "cosh": (lax.cosh, interval(-2, 2), 2),
    "tanh": (lax.tanh, interval(-2, 2), 3),
    "asinh": (lax.asinh, interval(-3, 3), 2),
    "acosh": (lax.acosh, interval(1.2, 4), 2),
    "atanh": (lax.atanh, interval(-0.9, 0.9), 2),
    "logistic": (lax.logistic, interval(-4, 4), 3),
    "erf": (lax.erf, interval(-2, 2), 2),
    "erfc": (lax.erfc, interval(-2, 2), 2),
    "erf_inv": (lax.erf_inv, interval(-0.9, 0.9), 2),
    "lgamma": (lax.lgamma, interval(0.3, 6), 2),
    "digamma": (lax.digamma, interval(0.3, 8), 2),
    "square": (lax.square, interval(-3, 3), 2),
    "reciprocal": (lax.reciprocal, signed(0.3, 3), 2),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@OP_SETTINGS
@given(data=st.data())
def test_unary(x64, name, data):
    fn, values, order = UNARY[name]
    x = data.draw(values(data.draw(shapes())), label="x")
    check_grads(fn, (x,), order=order)


@pytest.mark.parametrize("name", ["lgamma", "digamma"])
@OP_SETTINGS
@given(data=st.data())
def test_gamma_family_negative_arguments(x64, name, data):
    # between the poles at the non-positive integers (the reflection branches)
    fn = getattr(lax, name)
    x = data.draw(off_integers(-3, 0)(data.draw(shapes())), label="x")
    check_grads(fn, (x,), order=2)


@OP_SETTINGS
@given(data=st.data(), y=st.integers(-3, 6))
def test_integer_pow(x64, data, y):
    values = signed(0.3, 2) if y < 0 else interval(-2, 2)
    x = data.draw(values(data.draw(shapes())), label="x")
    check_grads(lambda v: lax.integer_pow(v, y), (x,), order=3 if y in (-2, 5) else 2)


# ---- binary primitives ---------------------------------------------------------------------
def _pair(vx, vy):
    """Strategy factory from independent value factories for x and y."""
    def make(sx, sy):
        return st.tuples(vx(sx), vy(sy))
    return make


def _distinct(sx, sy):
    # y = x + d with |d| >= 0.1 elementwise: no ties (max/min are not differentiable there)
    def build(p):
        base, gap = p
        if sx == () and sy != ():
            return base, base + gap
        if sy == () and sx != ():
            return base + gap, base
        return base, base + gap
    big = sx if sx != () else sy
    base_shape = () if (sx == () or sy == ()) else big
    return st.tuples(interval(-2, 2)(base_shape), signed(0.1, 1)(big)).map(build)


def _rem_values(sx, sy):
    # x / y = +-(k + f) with f in [0.15, 0.85]: away from the integers (rem's jumps)
    if sx == () and sy != ():
        def build(p):
            x, q, s = p
            return x, np.where(s, -1.0, 1.0) * x / q
        return st.tuples(signed(0.5, 2)(()), off_integers(0, 3)(sy),
                         hnp.arrays(np.bool_, sy)).map(build)

    def build(p):
        y, q, s = p
        return np.where(s, -1.0, 1.0) * np.abs(y) * q, y
    return st.tuples(signed(0.5, 2)(sy), off_integers(0, 3)(sx),
                     hnp.arrays(np.bool_, sx)).map(build)


BINARY = {
    "add": (lax.add, _pair(interval(-3, 3), interval(-3, 3)), 2),
    "sub": (lax.sub, _pair(interval(-3, 3), interval(-3, 3)), 2),
    "mul": (lax.mul, _pair(interval(-3, 3), interval(-3, 3)), 3),
    "div": (lax.div, _pair(interval(-3, 3), signed(0.3, 3)), 3),
    "rem": (lax.rem, _rem_values, 2),
    "pow": (lax.pow, _pair(interval(0.3, 3), interval(-2, 2)), 3),
    "max": (lax.max, _distinct, 2),
    "min": (lax.min, _distinct, 2),
    # atan2(x, y) is the angle of (y, x): keep x away from 0 (the cut along y < 0)
    "atan2": (lax.atan2, _pair(signed(0.2, 2), interval(-2, 2)), 3),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@OP_SETTINGS
@given(data=st.data())
def test_binary(x64, name, data):
    fn, values, order = BINARY[name]
    sx, sy = _binary_shapes(data.draw)
    x, y = data.draw(values(sx, sy), label="x, y")
    check_grads(fn, (x, y), order=order)


@OP_SETTINGS
@given(data=st.data())
def test_binary_one_operand_fixed(x64, data):
    # differentiate with respect to one operand while the other is a closed-over constant
    # (a known value to the JVP trace): both positions, 0-d or shaped constants
    sx, sy = _binary_shapes(data.draw)
    x = data.draw(interval(0.3, 3)(sx), label="x")
    y = data.draw(interval(-2, 2)(sy), label="y")
    cy, cx = mnp.asarray(y), mnp.asarray(x)
    check_grads(lambda a: lax.pow(a, cy), (x,), order=2)
    check_grads(lambda b: lax.pow(cx, b), (y,), order=2)
    check_grads(lambda a: lax.div(cy, a), (x,), order=2)
    check_grads(lambda a: lax.mul(a, cy), (x,), order=2)
    check_grads(lambda b: lax.sub(cx, b), (y,), order=2)


# ---- select_n, clamp, convert_element_type -------------------------------------------------
@OP_SETTINGS
@given(data=st.data(), n=st.integers(1, 3), which_0d=st.booleans(), use_bool=st.booleans())
def test_select_n(x64, data, n, which_0d, use_bool):
    shape = data.draw(shapes())
    wshape = () if which_0d else shape
    if use_bool and n <= 2:
        which = data.draw(hnp.arrays(np.bool_, wshape), label="which")
        if n == 1:
            which = np.zeros(wshape, np.bool_)
    else:
        which = data.draw(hnp.arrays(np.int32, wshape, elements=st.integers(0, n - 1)),
                          label="which")
    cases = [data.draw(interval(-3, 3)(shape), label=f"case{i}") for i in range(n)]
    w = mnp.asarray(which)
    check_grads(lambda *cs: lax.select_n(w, *cs), tuple(cases), order=2)
    # a nonlinear function of the selected case, so order 2 sees second derivatives
    check_grads(lambda *cs: lax.select_n(w, *[lax.sin(c) for c in cs]), tuple(cases), order=2)


def _clamp_values(bound_0d):
    def make(shape):
        bshape = () if bound_0d else shape
        lo = interval(-2, -0.5)(bshape)
        hi = interval(0.5, 2)(bshape)
        where = hnp.arrays(np.int8, shape, elements=st.integers(0, 2))
        t = interval(0, 1)(shape)

        def build(p):
            lo, hi, region, t = p
            lo_b, hi_b = np.broadcast_to(lo, shape), np.broadcast_to(hi, shape)
            inside = lo_b + 0.1 + t * (hi_b - lo_b - 0.2)
            x = np.where(region == 0, lo_b - 0.1 - t, np.where(region == 1, inside,
                                                                hi_b + 0.1 + t))
            return lo, np.asarray(x, np.float64), hi
        return st.tuples(lo, hi, where, t).map(build)
    return make


@OP_SETTINGS
@given(data=st.data(), bound_0d=st.booleans())
def test_clamp(x64, data, bound_0d):
    lo, x, hi = data.draw(_clamp_values(bound_0d)(data.draw(shapes())), label="lo, x, hi")
    check_grads(lax.clamp, (lo, x, hi), order=2)
    check_grads(lambda a, v, b: lax.clamp(lax.sin(a), lax.sin(v), lax.sin(b)),
                (lo, x, hi), order=2)


@OP_SETTINGS
@given(data=st.data())
def test_convert_element_type_float(x64, data):
    x = data.draw(interval(-3, 3)(data.draw(shapes())), label="x")
    # float64 -> float64 (weak): the identity, differentiated to second order
    check_grads(lambda v: lax.sin(lax.convert_element_type(v, np.float64, weak_type=True)),
                (x,), order=2)
    # float64 -> float32 -> float64: the tangent and cotangent are converted exactly
    xs, t = mnp.asarray(x), mnp.asarray(np.cos(x))
    _, t_out = mt.jvp(lambda v: lax.convert_element_type(v, np.float32), (xs,), (t,))
    assert t_out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(t_out), np.cos(x).astype(np.float32))
    _, vjp_fn = mt.vjp(lambda v: lax.convert_element_type(v, np.float32), xs)
    ct = np.sin(x).astype(np.float32)
    (g,) = vjp_fn(mnp.asarray(ct))
    assert g.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(g), ct.astype(np.float64))


@OP_SETTINGS
@given(data=st.data())
def test_convert_element_type_to_int_is_flat(x64, data):
    # x * float(int(x)): d/dx = trunc(x) (the conversion to int has zero derivative)
    x = data.draw(off_integers(-3, 3)(data.draw(shapes())), label="x")

    def f(v):
        return lax.mul(v, lax.convert_element_type(lax.convert_element_type(v, np.int32),
                                                   np.float64))

    check_grads(f, (x,), order=2)
    assert_zero_derivative(lambda v: lax.convert_element_type(v, np.int32), (x,))


# ---- zero-derivative primitives ------------------------------------------------------------
def _zeros_of(tree):
    return [np.asarray(x) for x in tree_util.tree_leaves(tree)]


def _ones_cotangent(out):
    return tree_util.tree_map(
        lambda o: mnp.asarray(np.ones(o.shape, o.dtype if np.dtype(o.dtype).kind == "f"
                                      else np.float64)), out)


def assert_zero_derivative(f, args, order=2):
    """jvp and vjp of f are exactly zero (and so are the derivatives of its jvp)."""
    xs = tuple(mnp.asarray(a) for a in args)
    ts = tuple(mnp.asarray(np.full(np.shape(a), 1.5)) for a in args)
    _, t_out = mt.jvp(f, xs, ts)
    for t in _zeros_of(t_out):
        assert not np.any(t), f"jvp of a zero-derivative op gave {t}"
    out, vjp_fn = mt.vjp(f, *xs)
    for c in _zeros_of(vjp_fn(_ones_cotangent(out))):
        assert not np.any(c), f"vjp of a zero-derivative op gave {c}"
    if order > 1:
        assert_zero_derivative(lambda *v: mt.jvp(f, v, ts)[1], args, order - 1)


ZERO_UNARY = {
    "sign": (lax.sign, signed(0.2, 3)),
    "floor": (lax.floor, off_integers(-3, 3)),
    "ceil": (lax.ceil, off_integers(-3, 3)),
    "round": (lax.round, off_halves(-3, 3)),
    "round_even": (lambda v: lax.round(v, 1), off_halves(-3, 3)),
    "is_finite": (lax.is_finite, interval(-3, 3)),
    "stop_gradient": (lax.stop_gradient, interval(-3, 3)),
    "bitcast_convert_type": (lambda v: lax.bitcast_convert_type(v, np.int64),
                             interval(-3, 3)),
}


@pytest.mark.parametrize("name", sorted(ZERO_UNARY))
@OP_SETTINGS
@given(data=st.data())
def test_zero_derivative_unary(x64, name, data):
    fn, values = ZERO_UNARY[name]
    x = data.draw(values(data.draw(shapes())), label="x")
    assert_zero_derivative(fn, (x,))


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "round_even"])
@OP_SETTINGS
@given(data=st.data())
def test_piecewise_constant_times_x(x64, name, data):
    # x * c(x) for a piecewise-constant c: d/dx = c(x) away from the jumps, which FD sees
    fn, values = ZERO_UNARY[name]
    x = data.draw(values(data.draw(shapes())), label="x")
    check_grads(lambda v: lax.mul(v, fn(v)), (x,), order=2)


ZERO_BINARY = ["eq", "ne", "lt", "le", "gt", "ge", "nextafter"]


@pytest.mark.parametrize("name", ZERO_BINARY)
@OP_SETTINGS
@given(data=st.data())
def test_zero_derivative_binary(x64, name, data):
    fn = getattr(lax, name)
    sx, sy = _binary_shapes(data.draw)
    x, y = data.draw(_distinct(sx, sy), label="x, y")
    assert_zero_derivative(fn, (x, y))


@pytest.mark.parametrize("name", ["lt", "le", "gt", "ge", "eq", "ne"])
@OP_SETTINGS
@given(data=st.data())
def test_comparison_in_select(x64, data, name):
    # the comparison only picks a branch: the derivative is the chosen branch's
    sx, sy = _binary_shapes(data.draw)
    x, y = data.draw(_distinct(sx, sy), label="x, y")
    cmp = getattr(lax, name)

    def f(a, b):
        a_full = lax.add(a, lax.mul(b, 0.0)) if a.ndim < b.ndim else a
        b_full = lax.add(b, lax.mul(a, 0.0)) if b.ndim < a.ndim else b
        return lax.select(cmp(a_full, b_full), lax.mul(a_full, b_full),
                          lax.sin(lax.sub(a_full, b_full)))

    check_grads(f, (x, y), order=2)


def test_is_finite_in_select(x64):
    x = np.array([0.5, -1.25, 2.0])
    check_grads(lambda v: lax.select(lax.is_finite(lax.log(v)), lax.log(v), lax.neg(v)),
                (np.abs(x),), order=2)


@OP_SETTINGS
@given(data=st.data())
def test_integer_operands_get_zero_cotangents(x64, data):
    # bitwise and shift ops take only integers: a float function that reads them has a
    # zero cotangent for them, and the float argument's derivative is unaffected
    shape = data.draw(shapes())
    x = data.draw(interval(-2, 2)(shape), label="x")
    k = data.draw(hnp.arrays(np.int32, shape, elements=st.integers(0, 7)), label="k")
    ki = mnp.asarray(k)

    def ints(k):
        a = lax.bitwise_xor(lax.bitwise_or(lax.bitwise_and(k, 5), 2), lax.bitwise_not(k))
        b = lax.shift_right_arithmetic(lax.shift_left(a, 1), 1)
        return lax.add(b, lax.shift_right_logical(k, 1))

    def f(v, k):
        return lax.mul(lax.sin(v), lax.convert_element_type(ints(k), np.float64))

    check_grads(lambda v: f(v, ki), (x,), order=2)
    _, vjp_fn = mt.vjp(f, mnp.asarray(x), ki)
    _, gk = vjp_fn(mnp.asarray(np.ones(shape)))
    assert gk.shape == k.shape and not np.any(np.asarray(gk))
    _, t = mt.jvp(lambda k: lax.bitwise_not(k), (ki,), (ki,))
    assert not np.any(np.asarray(t))


# ---- every elementwise primitive is covered ------------------------------------------------
COVERED = (set(UNARY) | {"integer_pow"} | set(BINARY) | {"select_n", "clamp"}
           | {"convert_element_type"} | set(ZERO_UNARY) | set(ZERO_BINARY)
           | {"not", "and", "or", "xor", "shift_left", "shift_right_arithmetic",
              "shift_right_logical"}
           | {"real", "imag", "conj", "complex"})  # test_complex_grads.py


def test_every_elementwise_primitive_is_tested():
    prims = {v.name for v in vars(ew).values() if isinstance(v, Primitive)}
    missing = prims - COVERED
    assert not missing, f"elementwise primitives without a derivative test: {sorted(missing)}"


# ---- exact conventions at the awkward points -----------------------------------------------
def _grad(f, argnums=0):
    return mt.grad(f, argnums=argnums)


def _f64(v):
    return mnp.asarray(np.float64(v))


def test_abs_derivative_at_zero_is_one(x64):
    # JAX's convention: _abs_jvp_rule is select(x >= 0, g, -g), so d|x| at 0 (and -0) is 1
    for z in (0.0, -0.0):
        assert float(_grad(lax.abs)(_f64(z))) == 1.0
        assert float(mt.jvp(lax.abs, (_f64(z),), (_f64(1.0),))[1]) == 1.0
        assert float(_grad(mnp.abs)(_f64(z))) == 1.0
    _, vjp_fn = mt.vjp(lax.abs, mnp.asarray(np.array([0.0, 1.5, -2.0])))
    np.testing.assert_array_equal(np.asarray(vjp_fn(mnp.asarray(np.ones(3)))[0]),
                                  [1.0, 1.0, -1.0])


def test_max_min_ties_split_the_derivative(x64):
    # JAX's _balanced_eq: a tie gives half the tangent to each operand
    for fn in (lax.max, lax.min, mnp.maximum, mnp.minimum):
        gx, gy = mt.grad(fn, argnums=(0, 1))(_f64(1.5), _f64(1.5))
        assert (float(gx), float(gy)) == (0.5, 0.5)
        assert float(_grad(lambda v, fn=fn: fn(v, v))(_f64(-0.25))) == 1.0
        _, t = mt.jvp(fn, (_f64(2.0), _f64(2.0)), (_f64(1.0), _f64(3.0)))
        assert float(t) == 2.0
    # 0-d operand beside a shaped one, ties at some positions
    x = mnp.asarray(np.array([0.0, 1.0, 2.0, 1.0]))
    _, vjp_fn = mt.vjp(lax.max, x, _f64(1.0))
    gx, gy = vjp_fn(mnp.asarray(np.ones(4)))
    np.testing.assert_array_equal(np.asarray(gx), [0.0, 0.5, 1.0, 0.5])
    assert float(gy) == 2.0  # 1 (where y wins) + 0.5 + 0.5 (ties)


def test_sqrt_derivative_at_zero_is_inf(x64):
    # JAX: g * 0.5 / sqrt(x): +inf at 0
    assert float(_grad(lax.sqrt)(_f64(0.0))) == math.inf
    assert float(_grad(mnp.sqrt)(_f64(0.0))) == math.inf
    assert float(mt.jvp(lax.sqrt, (_f64(0.0),), (_f64(1.0),))[1]) == math.inf


@pytest.mark.parametrize("power", [lax.pow, mnp.power])
def test_pow_conventions(x64, power):
    # JAX's _pow_jvp_lhs (integer-exponent branch) / _pow_jvp_rhs: d/dx is 0 where y == 0,
    # d/dy is 0 where x == 0 (log(x) replaced by log(1))
    dx = mt.grad(power, argnums=0)
    dy = mt.grad(power, argnums=1)
    for x in (2.0, -1.5, 0.5):
        assert float(dx(_f64(x), _f64(0.0))) == 0.0
    assert float(dx(_f64(0.0), _f64(0.0))) == 0.0
    for y in (2.0, 0.5, 3.0):
        assert float(dy(_f64(0.0), _f64(y))) == 0.0
    # and the regular values beside them
    np.testing.assert_allclose(float(dx(_f64(2.0), _f64(3.0))), 12.0)
    np.testing.assert_allclose(float(dy(_f64(2.0), _f64(3.0))), 8 * math.log(2.0))
    np.testing.assert_allclose(float(dx(_f64(0.0), _f64(2.0))), 0.0)
    # elementwise over arrays, with 0-d y
    xs = mnp.asarray(np.array([0.0, 1.0, 2.0]))
    _, vjp_fn = mt.vjp(lambda a: power(a, _f64(0.0)), xs)
    np.testing.assert_array_equal(np.asarray(vjp_fn(mnp.asarray(np.ones(3)))[0]), [0, 0, 0])


@pytest.mark.parametrize("x", [0.0, 2.0, -3.0])
def test_integer_pow_zero_exponent(x64, x):
    for fn in (lambda v: lax.integer_pow(v, 0), lambda v: mnp.power(v, 0)):
        assert float(_grad(fn)(_f64(x))) == 0.0
        assert float(_grad(_grad(fn))(_f64(x))) == 0.0
        assert float(mt.jvp(fn, (_f64(x),), (_f64(1.0),))[1]) == 0.0
    # exponent 1 at 0, exponent 2 at 0: the regular values 1 and 0
    assert float(_grad(lambda v: lax.integer_pow(v, 1))(_f64(0.0))) == 1.0
    assert float(_grad(lambda v: lax.integer_pow(v, 2))(_f64(0.0))) == 0.0


def test_stop_gradient(x64):
    x = _f64(1.7)
    assert float(_grad(lax.stop_gradient)(x)) == 0.0
    assert float(_grad(lambda v: lax.mul(v, lax.stop_gradient(v)))(x)) == 1.7
    assert float(_grad(_grad(lambda v: lax.mul(v, lax.stop_gradient(lax.mul(v, v)))))(x)) == 0
    # a pytree: every float leaf is stopped, integer leaves pass through
    tree = {"a": x, "b": (mnp.asarray(np.array([1.0, 2.0])), mnp.asarray(np.int32(3)))}
    out = lax.stop_gradient(tree)
    assert out["b"][1].dtype == np.int32
    g = mt.grad(lambda t: lax.mul(lax.stop_gradient(t)["a"], t["a"]))(
        {"a": x, "b": tree["b"][0]})
    assert float(g["a"]) == 1.7 and not np.any(np.asarray(g["b"]))


def test_zero_derivative_ops_exactly_zero(x64):
    x = _f64(2.5)
    for fn in (lax.sign, lax.floor, lax.ceil, lax.round, lax.stop_gradient,
               lambda v: lax.nextafter(v, _f64(3.0))):
        assert float(_grad(fn)(x)) == 0.0
        assert float(_grad(_grad(fn))(x)) == 0.0


# ---- mytorch.numpy elementwise functions ----------------------------------------------------
def _np_broadcast_pair(draw):
    """Two NumPy-broadcastable shapes (including rank differences and size-1 axes)."""
    shape = draw(shapes(max_dims=3))
    other = draw(hnp.broadcastable_shapes(shape, min_dims=0, max_dims=3, max_side=3))
    return (shape, other) if draw(st.booleans()) else (other, shape)


MNP_UNARY = {
    "sin": interval(-3, 3), "cos": interval(-3, 3), "tan": interval(-1.2, 1.2),
    "exp": interval(-3, 3), "exp2": interval(-3, 3), "expm1": interval(-3, 3),
    "log": interval(0.2, 5), "log2": interval(0.2, 5), "log10": interval(0.2, 5),
    "log1p": interval(-0.7, 3), "sqrt": interval(0.2, 5), "cbrt": signed(0.2, 5),
    "arcsin": interval(-0.9, 0.9), "arccos": interval(-0.9, 0.9), "arctan": interval(-3, 3),
    "sinh": interval(-2, 2), "cosh": interval(-2, 2), "tanh": interval(-2, 2),
    "arcsinh": interval(-3, 3), "arccosh": interval(1.2, 4), "arctanh": interval(-0.9, 0.9),
    "deg2rad": interval(-90, 90), "rad2deg": interval(-3, 3), "degrees": interval(-3, 3),
    "radians": interval(-90, 90), "negative": interval(-3, 3), "positive": interval(-3, 3),
    "abs": signed(0.2, 3), "absolute": signed(0.2, 3), "fabs": signed(0.2, 3),
    "reciprocal": signed(0.3, 3), "square": interval(-3, 3), "sinc": signed(0.1, 2.4),
    "conjugate": interval(-3, 3), "real": interval(-3, 3),
    "nan_to_num": interval(-3, 3),
}


@pytest.mark.parametrize("name", sorted(MNP_UNARY))
@FEW_SETTINGS
@given(data=st.data())
def test_mnp_unary(x64, name, data):
    x = data.draw(MNP_UNARY[name](data.draw(shapes())), label="x")
    check_grads(getattr(mnp, name), (x,), order=2)


def _mnp_pair(vx, vy):
    return lambda sx, sy: st.tuples(vx(sx), vy(sy))


def _np_distinct(sx, sy):
    # x on the grid k/5 and y on k/5 + 0.1: every broadcast pair is >= 0.1 apart (no ties)
    return st.tuples(interval(-2, 2)(sx), interval(-2, 2)(sy)).map(
        lambda p: (np.round(p[0] * 5) / 5, np.round(p[1] * 5) / 5 + 0.1))


def _np_distinct_abs(sx, sy):
    # |x| != |y| everywhere (hypot's max/min of |x|, |y| tie there, and a tie gives a
    # wrong second derivative, as in JAX's jnp.hypot), both away from 0
    def build(p):
        (x, sx_), (y, sy_) = p
        x = np.maximum(np.round(np.abs(x) * 5), 1) / 5
        y = np.round(np.abs(y) * 5) / 5 + 0.1
        return np.where(sx_, -x, x), np.where(sy_, -y, y)
    return st.tuples(st.tuples(interval(0.2, 2)(sx), hnp.arrays(np.bool_, sx)),
                     st.tuples(interval(0.2, 2)(sy), hnp.arrays(np.bool_, sy))).map(build)


MNP_BINARY = {
    "add": _mnp_pair(interval(-3, 3), interval(-3, 3)),
    "subtract": _mnp_pair(interval(-3, 3), interval(-3, 3)),
    "multiply": _mnp_pair(interval(-3, 3), interval(-3, 3)),
    "divide": _mnp_pair(interval(-3, 3), signed(0.3, 3)),
    "true_divide": _mnp_pair(interval(-3, 3), signed(0.3, 3)),
    "power": _mnp_pair(interval(0.3, 3), interval(-2, 2)),
    "float_power": _mnp_pair(interval(0.3, 3), interval(-2, 2)),
    "maximum": _np_distinct, "minimum": _np_distinct, "fmax": _np_distinct,
    "fmin": _np_distinct,
    "arctan2": _mnp_pair(signed(0.2, 2), interval(-2, 2)),
    "hypot": _np_distinct_abs,
    "logaddexp": _np_distinct, "logaddexp2": _np_distinct,
    "copysign": _mnp_pair(signed(0.2, 2), signed(0.2, 2)),
}


@pytest.mark.parametrize("name", sorted(MNP_BINARY))
@FEW_SETTINGS
@given(data=st.data())
def test_mnp_binary(x64, name, data):
    sx, sy = _np_broadcast_pair(data.draw)
    x, y = data.draw(MNP_BINARY[name](sx, sy), label="x, y")
    check_grads(getattr(mnp, name), (x, y), order=2)


@FEW_SETTINGS
@given(data=st.data())
def test_mnp_where_and_clip(x64, data):
    sx, sy = _np_broadcast_pair(data.draw)
    x, y = data.draw(_np_distinct(sx, sy), label="x, y")
    cond = mnp.asarray(data.draw(hnp.arrays(np.bool_, sx), label="cond"))
    check_grads(lambda a, b: mnp.where(cond, mnp.sin(a), b * b), (x, y), order=2)
    # clip with array bounds: x on a grid, bounds between grid points
    lo, hi = mnp.asarray(np.float64(-0.55)), mnp.asarray(np.float64(0.75))
    check_grads(lambda a: mnp.clip(a, lo, hi), (x,), order=2)
    check_grads(lambda a: mnp.clip(a, -0.55, 0.75), (x,), order=2)
    check_grads(lambda a: mnp.clip(a, None, 0.75), (x,), order=2)


def test_mnp_python_scalar_operands(x64):
    x = np.array([[0.5, 1.5, 2.5]])
    check_grads(lambda v: 2.0 * v ** 3 - v / 4.0 + 1.0, (x,), order=3)
    check_grads(lambda v: mnp.power(v, 2.5) + mnp.power(2.0, v), (x,), order=2)
    check_grads(lambda v: mnp.power(v, -2), (x,), order=2)
    check_grads(lambda v: -v + abs(v - 3.0), (x,), order=2)


def test_logaddexp_tie(x64):
    # logaddexp(x, x): JAX's custom JVP gives exp(x - out) = 1/2 to each operand, and
    # differentiates again: d2/dx2 = s (1 - s) = 1/4 with s = 1/2
    for fn in (mnp.logaddexp, mnp.logaddexp2):
        gx, gy = mt.grad(fn, argnums=(0, 1))(_f64(0.3), _f64(0.3))
        np.testing.assert_allclose([float(gx), float(gy)], [0.5, 0.5], rtol=1e-12)
    np.testing.assert_allclose(float(_grad(_grad(mnp.logaddexp))(_f64(0.3), _f64(0.3))),
                               0.25, rtol=1e-12)


def test_sinc_at_zero(x64):
    # JAX's _sinc_maclaurin: sinc'(0) = 0, sinc''(0) = -pi^2/3, sinc'''(0) = 0
    assert float(_grad(mnp.sinc)(_f64(0.0))) == 0.0
    np.testing.assert_allclose(float(_grad(_grad(mnp.sinc))(_f64(0.0))), -math.pi ** 2 / 3,
                               rtol=1e-12)
    assert float(_grad(_grad(_grad(mnp.sinc)))(_f64(0.0))) == 0.0


def test_clip_and_maximum_at_the_bounds(x64):
    # clip is maximum then minimum, so a value on a bound takes half (lax.max/min ties)
    assert float(_grad(lambda v: mnp.clip(v, 0.0, 1.0))(_f64(0.0))) == 0.5
    assert float(_grad(lambda v: mnp.clip(v, 0.0, 1.0))(_f64(1.0))) == 0.5
    assert float(_grad(lambda v: mnp.maximum(v, 0.0))(_f64(0.0))) == 0.5


MNP_ZERO_UNARY = {
    "floor": off_integers(-3, 3), "ceil": off_integers(-3, 3), "trunc": off_integers(-3, 3),
    "fix": off_integers(-3, 3), "rint": off_halves(-3, 3), "round": off_halves(-3, 3),
    "around": off_halves(-3, 3), "sign": signed(0.2, 3), "signbit": signed(0.2, 3),
    "isnan": interval(-3, 3), "isinf": interval(-3, 3), "isfinite": interval(-3, 3),
    "isposinf": interval(-3, 3), "isneginf": interval(-3, 3), "imag": interval(-3, 3),
    "angle": signed(0.2, 3), "logical_not": signed(0.2, 3),
}


@pytest.mark.parametrize("name", sorted(MNP_ZERO_UNARY))
@FEW_SETTINGS
@given(data=st.data())
def test_mnp_zero_derivative_unary(x64, name, data):
    x = data.draw(MNP_ZERO_UNARY[name](data.draw(shapes())), label="x")
    assert_zero_derivative(getattr(mnp, name), (x,))


MNP_ZERO_BINARY = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                   "logical_and", "logical_or", "logical_xor", "isclose", "nextafter",
                   "floor_divide", "heaviside"]


@pytest.mark.parametrize("name", MNP_ZERO_BINARY)
@FEW_SETTINGS
@given(data=st.data())
def test_mnp_zero_derivative_binary(x64, name, data):
    sx, sy = _np_broadcast_pair(data.draw)
    x, y = data.draw(_np_distinct(sx, sy), label="x, y")
    if name in ("floor_divide", "heaviside"):  # x / y off the integers; x != 0
        x, y = np.abs(x) + 0.05, np.abs(y) + 0.3
    assert_zero_derivative(getattr(mnp, name), (x, y))


@pytest.mark.parametrize("name", ["remainder", "mod", "fmod", "divmod"])
@FEW_SETTINGS
@given(data=st.data())
def test_mnp_remainders(x64, name, data):
    # d/dx = 1 and d/dy = -floor(x / y) (-trunc for fmod) away from the jumps
    sx, sy = _binary_shapes(data.draw)
    x, y = data.draw(_rem_values(sx, sy), label="x, y")
    check_grads(getattr(mnp, name), (x, y), order=2)


@FEW_SETTINGS
@given(data=st.data())
def test_mnp_modf(x64, data):
    x = data.draw(off_integers(-3, 3)(data.draw(shapes())), label="x")
    check_grads(mnp.modf, (x,), order=2)  # (frac, whole): derivatives 1 and 0


def test_mnp_heaviside_at_zero(x64):
    # heaviside(0, x2) = x2: the derivative in x2 is 1 there and 0 elsewhere
    x1 = mnp.asarray(np.array([-1.0, 0.0, 2.0]))
    _, vjp_fn = mt.vjp(mnp.heaviside, x1, mnp.asarray(np.array([0.5, 0.5, 0.5])))
    g1, g2 = vjp_fn(mnp.asarray(np.ones(3)))
    np.testing.assert_array_equal(np.asarray(g1), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(g2), [0.0, 1.0, 0.0])


# functions of mytorch.numpy.ufuncs whose derivatives are not checked here, and why
MNP_NOT_CHECKED = {
    # integer / bool only
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "invert", "bitwise_invert",
    "left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm",
    # return Python / 0-d bools of the whole array
    "allclose", "array_equal", "array_equiv",
    # bool results of complex parts (tests/numpy/test_complex.py checks their values)
    "iscomplex", "isreal",
    # bit-level float decomposition (built on bitcasts, whose derivative is 0)
    "frexp", "ldexp",
}
MNP_ALIASES = {"pow": "power", "conj": "conjugate", "asin": "arcsin", "acos": "arccos",
               "atan": "arctan", "atan2": "arctan2", "asinh": "arcsinh",
               "acosh": "arccosh", "atanh": "arctanh"}


def test_every_mnp_ufunc_is_covered():
    from mytorch.numpy import ufuncs

    covered = (set(MNP_UNARY) | set(MNP_BINARY) | set(MNP_ZERO_UNARY) | set(MNP_ZERO_BINARY)
               | {"where", "clip", "remainder", "mod", "fmod", "divmod", "modf"}
               | MNP_NOT_CHECKED | set(MNP_ALIASES))
    missing = set(ufuncs.__all__) - covered
    assert not missing, f"mytorch.numpy ufuncs without a derivative test: {sorted(missing)}"
    for alias, name in MNP_ALIASES.items():
        assert getattr(mnp, alias) is getattr(mnp, name)


# ---- mytorch.scipy.special ---------------------------------------------------------------
SPECIAL_UNARY = {
    "expit": interval(-4, 4), "logit": interval(0.1, 0.9), "erf": interval(-2, 2),
    "erfc": interval(-2, 2), "erfinv": interval(-0.9, 0.9), "gammaln": interval(0.3, 6),
    "digamma": interval(0.3, 6), "entr": interval(0.2, 3), "ndtr": interval(-3, 3),
    "ndtri": interval(0.05, 0.95), "log_ndtr": interval(-4, 4), "i0": interval(-4, 4),
    "i0e": interval(0.2, 4), "i1": interval(-4, 4), "i1e": interval(0.2, 4),
}


@pytest.mark.parametrize("name", sorted(SPECIAL_UNARY))
@FEW_SETTINGS
@given(data=st.data())
def test_special_unary(x64, name, data):
    x = data.draw(SPECIAL_UNARY[name](data.draw(shapes())), label="x")
    check_grads(getattr(msp, name), (x,), order=2)


@FEW_SETTINGS
@given(data=st.data())
def test_special_binary(x64, data):
    sx, sy = _np_broadcast_pair(data.draw)
    x, y = data.draw(_mnp_pair(interval(0.3, 3), interval(0.3, 3))(sx, sy), label="x, y")
    check_grads(msp.betaln, (x, y), order=2)
    check_grads(msp.xlogy, (x, y), order=2)
    check_grads(msp.xlog1py, (x, y), order=2)
    check_grads(msp.rel_entr, (x, y), order=2)
    check_grads(msp.kl_div, (x, y), order=2)
    check_grads(lambda v, w: msp.zeta(v + 1.0, w), (x, y), order=2)
    check_grads(lambda v: msp.polygamma(2, v), (x,), order=2)
    check_grads(lambda v: msp.multigammaln(v + 1.0, 3), (x,), order=2)


@FEW_SETTINGS
@given(data=st.data())
def test_special_reductions(x64, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    x = data.draw(interval(-3, 3)(shape), label="x")
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    check_grads(lambda v: msp.logsumexp(v, axis=axis), (x,), order=2)
    check_grads(msp.logsumexp, (x,), order=2)
    check_grads(lambda v: msp.softmax(v, axis=axis), (x,), order=2)
    check_grads(lambda v: msp.log_softmax(v, axis=axis), (x,), order=2)


def test_xlogy_at_zero(x64):
    # JAX's _xlogy_jvp / _xlog1py_jvp: d/dx = log(y) (log1p(y)), d/dy = x / y, also at x == 0
    gx, gy = mt.grad(msp.xlogy, argnums=(0, 1))(_f64(0.0), _f64(2.0))
    assert float(gy) == 0.0
    np.testing.assert_allclose(float(gx), math.log(2.0), rtol=1e-12)
    gx, gy = mt.grad(msp.xlog1py, argnums=(0, 1))(_f64(0.0), _f64(2.0))
    assert float(gy) == 0.0
    np.testing.assert_allclose(float(gx), math.log(3.0), rtol=1e-12)


def test_every_special_function_is_covered():
    covered = (set(SPECIAL_UNARY) | {"betaln", "xlogy", "xlog1py", "multigammaln",
                                     "rel_entr", "kl_div", "zeta", "polygamma",
                                     "logsumexp", "softmax", "log_softmax"}
               # derivatives checked in tests/scipy/test_incomplete.py
               | {"gammainc", "gammaincc", "betainc"}
               # and in tests/scipy/test_special_extras.py (bernoulli takes a static int)
               | {"gamma", "gammasgn", "beta", "factorial", "poch", "expn", "exp1", "expi",
                  "spence", "hyp1f1", "lpmn", "lpmn_values", "sph_harm", "bernoulli"})
    missing = set(msp.__all__) - covered
    assert not missing, f"mytorch.scipy.special functions without a derivative test: {missing}"
