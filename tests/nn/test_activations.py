"""mt.nn's functions (jax.nn): values against NumPy and against JAX 0.10's numbers written
literally, derivatives against central differences (and JAX's at the kinks), dtypes and
weak types as JAX, jit == eager, vmap == loop, and the errors users see."""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from tests.autodiff.fd import check_grads
from tests.strategies import arrays, assert_close, shapes

nan, inf = math.nan, math.inf
X = np.array([-1e4, -6, -1, -0.5, 0, 0.5, 1, 6, 1e4, inf, -inf, nan], np.float32)

# jax.nn.<name>(X) and vmap(grad(jax.nn.<name>))(X), float32, from JAX 0.10.2
JAX = {
    "celu": ([-1, -0.99752122, -0.63212055, -0.39346933, 0, 0.5, 1, 6, 1e4, inf, -1, nan],
             [0, 0.0024787784, 0.36787945, 0.60653067, 1, 1, 1, 1, 1, 1, 0, nan]),
    "elu": ([-1, -0.99752122, -0.63212055, -0.39346933, 0, 0.5, 1, 6, 1e4, inf, -1, nan],
            [0, 0.0024787784, 0.36787945, 0.60653067, 1, 1, 1, 1, 1, 1, 0, nan]),
    "gelu": ([-0, -0, -0.15880796, -0.154286, 0, 0.345714, 0.84119201, 6, 1e4, inf, nan, nan],
             [0, 0, -0.08296407, 0.13263011, 0.5, 0.86736995, 1.0829639, 1, 1, nan, nan, nan]),
    "hard_sigmoid": (
        [0, 0, 0.33333334, 0.41666669, 0.5, 0.58333337, 0.66666669, 1, 1, 1, 0, nan],
        [0, 0, 0.16666667, 0.16666667, 0.16666667, 0.16666667, 0.16666667, 0, 0, 0, 0, 0]),
    "hard_silu": (
        [-0, -0, -0.33333334, -0.20833334, 0, 0.29166669, 0.66666669, 6, 1e4, inf, nan, nan],
        [0, 0, 0.16666667, 0.33333334, 0.5, 0.66666669, 0.83333337, 1, 1, 1, 0, nan]),
    "hard_tanh": ([-1, -1, -1, -0.5, 0, 0.5, 1, 1, 1, 1, -1, nan],
                  [0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1]),
    "leaky_relu": ([-100, -0.06, -0.01, -0.005, 0, 0.5, 1, 6, 1e4, inf, -inf, nan],
                   [0.01, 0.01, 0.01, 0.01, 1, 1, 1, 1, 1, 1, 0.01, 0.01]),
    "log_sigmoid": (
        [-1e4, -6.0024757, -1.3132617, -0.97407699, -0.69314718, -0.47407699, -0.31326169,
         -0.0024756852, -0, -0, -inf, nan],
        [1, 0.9975273, 0.73105854, 0.62245935, 0.5, 0.37754068, 0.2689414, 0.002472623, 0, 0,
         1, nan]),
    "mish": (
        [-0, -0.014854079, -0.30340144, -0.22074378, 0, 0.37524524, 0.86509848, 5.999927, 1e4,
         inf, nan, nan],
        [0, -0.012359967, 0.059216753, 0.28951067, 0.60000002, 0.88642442, 1.0490361,
         1.0001334, 1, nan, nan, nan]),
    "relu": ([0, 0, 0, 0, 0, 0.5, 1, 6, 1e4, inf, 0, nan], [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0]),
    "relu6": ([0, 0, 0, 0, 0, 0.5, 1, 6, 6, 6, 0, nan], [0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]),
    "selu": (
        [-1.7580993, -1.7537414, -1.1113307, -0.69175822, 0, 0.52535051, 1.050701, 6.3042059,
         10507.01, inf, -1.7580993, nan],
        [0, 0.0043579387, 0.64676863, 1.0663412, 1.7580993, 1.050701, 1.050701, 1.050701,
         1.050701, 1.050701, 0, nan]),
    "sigmoid": (
        [0, 0.002472623, 0.26894143, 0.37754068, 0.5, 0.62245935, 0.7310586, 0.99752742, 1, 1,
         0, nan],
        [0, 0.0024665091, 0.19661194, 0.23500371, 0.25, 0.23500371, 0.19661193, 0.0024664658,
         0, 0, 0, nan]),
    "silu": (
        [-0, -0.014835738, -0.26894143, -0.18877034, 0, 0.31122968, 0.7310586, 5.9851646, 1e4,
         inf, nan, nan],
        [0, -0.012326431, 0.072329491, 0.26003882, 0.5, 0.73996121, 0.92767054, 1.0123262, 1,
         nan, nan, nan]),
    "soft_sign": (
        [-0.99989998, -0.85714287, -0.5, -0.33333334, 0, 0.33333334, 0.5, 0.85714287,
         0.99989998, nan, nan, nan],
        [9.9971658e-09, 0.020408168, 0.25, 0.44444448, 1, 0.44444448, 0.25, 0.020408168,
         9.9971658e-09, nan, nan, nan]),
    "softplus": (
        [0, 0.0024756852, 0.31326169, 0.47407699, 0.69314718, 0.97407699, 1.3132617, 6.0024757,
         1e4, inf, 0, nan],
        [0, 0.002472623, 0.2689414, 0.37754068, 0.5, 0.62245935, 0.73105854, 0.9975273, 1, 1,
         0, nan]),
    "sparse_plus": ([0, 0, 0, 0.0625, 0.25, 0.5625, 1, 6, 1e4, inf, 0, nan],
                    [0, 0, 0, 0.25, 0.5, 0.75, 1, 1, 1, nan, nan, nan]),
    "sparse_sigmoid": ([0, 0, 0, 0.25, 0.5, 0.75, 1, 1, 1, 1, 0, nan],
                       [0, 0, 0.25, 0.5, 0.5, 0.5, 0.25, 0, 0, 0, 0, 0]),
    "squareplus": (
        [0, 0.1622777, 0.61803401, 0.78077638, 1, 1.2807764, 1.618034, 6.1622777, 1e4, inf,
         nan, nan],
        [1.2631062e-08, 0.025658354, 0.2763932, 0.37873217, 0.5, 0.6212678, 0.72360682,
         0.97434163, 1, nan, nan, nan]),
    "tanh": (
        [-1, -0.9999876, -0.76159418, -0.46211717, 0, 0.46211717, 0.76159418, 0.9999876, 1, 1,
         -1, nan],
        [0, 2.4795532e-05, 0.41997433, 0.78644776, 1, 0.7864477, 0.41997433, 2.4795379e-05, 0,
         0, 0, nan]),
}
ELEMENTWISE = sorted(JAX)


def _sig(x):
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(
        -np.abs(x))))


def _softplus(x):
    return np.logaddexp(x, 0)


_A, _S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
# NumPy references (float64), the definitions written out
NUMPY = {
    "celu": lambda x: np.maximum(x, 0) + np.expm1(np.minimum(x, 0)),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "log_sigmoid": lambda x: -_softplus(-x),
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "selu": lambda x: _S * np.where(x > 0, x, _A * np.expm1(np.minimum(x, 0))),
    "sigmoid": _sig,
    "silu": lambda x: x * _sig(x),
    "soft_sign": lambda x: x / (np.abs(x) + 1),
    "softplus": _softplus,
    "sparse_plus": lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
    "sparse_sigmoid": lambda x: np.clip((x + 1) / 2, 0, 1),
    "squareplus": lambda x: (x + np.sqrt(x * x + 4)) / 2,
    "tanh": np.tanh,
}
KINKED = {"hard_sigmoid", "hard_silu", "hard_tanh", "leaky_relu", "relu", "relu6",
          "sparse_plus", "sparse_sigmoid", "elu", "celu", "selu"}


def _fn(name):
    return getattr(mt.nn, name)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_values_and_grads_match_jax(name):
    f = _fn(name)
    want, dwant = JAX[name]
    np.testing.assert_allclose(np.asarray(f(X)), np.float32(want), rtol=1e-5, atol=1e-6)
    got = np.asarray(mt.vmap(mt.grad(f))(X))
    np.testing.assert_allclose(got, np.float32(dwant), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ELEMENTWISE)
@settings(max_examples=8, deadline=None)
@given(x=arrays(np.float32, shapes(max_dims=3), min_value=-30, max_value=30))
def test_values_match_numpy(name, x):
    want = NUMPY[name](x.astype(np.float64))
    assert_close(_fn(name)(x), want, dtype=np.float32, rtol=1e-5,
                 atol=1e-6)


# derivatives at the kinks, from JAX 0.10.2 at [0, 6, 1, -1, -3, 3]
KINKS = np.array([0, 6, 1, -1, -3, 3], np.float32)
JAX_KINK_GRADS = {
    "relu": [0, 1, 1, 0, 0, 1],
    "relu6": [0, 0, 1, 0, 0, 1],
    "hard_tanh": [1, 0, 1, 1, 0, 0],
    "leaky_relu": [1, 1, 1, 0.01, 0.01, 1],
    "elu": [1, 1, 1, 0.36787945, 0.049787045, 1],
    "celu": [1, 1, 1, 0.36787945, 0.049787045, 1],
    "hard_sigmoid": [0.16666667, 0, 0.16666667, 0.16666667, 0, 0],
    "hard_silu": [0.5, 1, 0.83333337, 0.16666667, 0, 1],
    "sparse_plus": [0.5, 1, 1, 0, 0, 1],
    "selu": [1.7580993, 1.050701, 1.050701, 0.64676863, 0.087530568, 1.050701],
}


@pytest.mark.parametrize("name", sorted(JAX_KINK_GRADS))
def test_grads_at_kinks_match_jax(name):
    got = mt.vmap(mt.grad(_fn(name)))(KINKS)
    # the derivative of elu's expm1 branch is expm1(x) + 1, as in JAX; NumPy's float32
    # expm1 differs from XLA's by an ulp on some SIMD paths, which is 1.2e-7 absolute
    # at expm1(-3) = -0.95 (an ulp of 6e-8), so the sum is compared to that precision
    np.testing.assert_allclose(np.asarray(got), np.float32(JAX_KINK_GRADS[name]),
                               rtol=1e-6, atol=1.2e-7)
    # jit and the custom rules agree with the eager ones
    np.testing.assert_array_equal(np.asarray(mt.jit(mt.vmap(mt.grad(_fn(name))))(KINKS)),
                                  np.asarray(got))


def _away_from_kinks(shape, seed):
    x = np.random.default_rng(seed).uniform(-4, 4, shape)
    kinks = np.array([-3.0, -1.0, 0.0, 1.0, 3.0, 6.0])
    near = np.min(np.abs(x[..., None] - kinks), axis=-1) < 0.05
    return np.where(near, x + 0.1, x)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_grads_match_finite_differences(name, x64):
    order = 1 if name in KINKED else 2
    check_grads(_fn(name), (_away_from_kinks((3, 4), 1),), order=order)


@pytest.mark.parametrize("name", ["gelu_exact", "glu", "log1mexp", "softmax", "log_softmax",
                                  "standardize", "logmeanexp", "squareplus_b"])
def test_grads_of_the_others_match_finite_differences(name, x64):
    x = np.random.default_rng(2).uniform(0.2, 3, (3, 4))
    f = {"gelu_exact": lambda v: mt.nn.gelu(v, approximate=False),
         "glu": lambda v: mt.nn.glu(v, axis=0 if v.shape[0] % 2 == 0 else -1),
         "log1mexp": mt.nn.log1mexp,
         "softmax": lambda v: mt.nn.softmax(v, axis=0),
         "log_softmax": lambda v: mt.nn.log_softmax(v, axis=(0, 1)),
         "standardize": lambda v: mt.nn.standardize(v, algorithm="stable"),
         "logmeanexp": lambda v: mt.nn.logmeanexp(v, axis=1),
         "squareplus_b": lambda v: mt.nn.squareplus(v, b=0.5)}[name]
    check_grads(f, (x,), order=2)


def test_second_derivatives_are_jax_s():
    # d2/dx2 sigmoid = s (1 - s)(1 - 2 s); d2 softplus = sigmoid'
    x = np.array([-2.0, 0.0, 0.5, 3.0], np.float32)
    s = _sig(x.astype(np.float64))
    got = mt.vmap(mt.grad(mt.grad(mt.nn.sigmoid)))(x)
    np.testing.assert_allclose(np.asarray(got), s * (1 - s) * (1 - 2 * s), rtol=1e-5,
                               atol=1e-7)
    got = mt.vmap(mt.grad(mt.grad(mt.nn.softplus)))(x)
    np.testing.assert_allclose(np.asarray(got), s * (1 - s), rtol=1e-5, atol=1e-7)
    # relu'' is 0 everywhere (its custom derivative is piecewise constant)
    np.testing.assert_array_equal(np.asarray(mt.vmap(mt.grad(mt.grad(mt.nn.relu)))(x)), 0)


def test_gelu_exact_and_log1mexp_match_jax():
    got = mt.nn.gelu(X, approximate=False)
    want = [-0, -5.9195377e-09, -0.15865527, -0.15426877, 0, 0.34573123, 0.84134471, 6, 1e4,
            inf, nan, nan]
    np.testing.assert_allclose(np.asarray(got), np.float32(want), rtol=1e-5, atol=1e-7)
    dwant = [0, -3.546878e-08, -0.083315477, 0.13250488, 0.5, 0.86749512, 1.0833155, 1, 1,
             nan, nan, nan]
    dgot = mt.vmap(mt.grad(lambda v: mt.nn.gelu(v, approximate=False)))(X)
    np.testing.assert_allclose(np.asarray(dgot), np.float32(dwant), rtol=1e-4, atol=1e-7)
    x2 = np.array([0, 0.5, 1, 2, 30, 1e4, inf, -1, nan], np.float32)
    want = [-inf, -0.93275213, -0.45867515, -0.14541346, -9.3576229e-14, -0, -0, nan, nan]
    np.testing.assert_allclose(np.asarray(mt.nn.log1mexp(x2)), np.float32(want), rtol=1e-6)
    dwant = [inf, 1.541494, 0.58197671, 0.15651764, 9.3576236e-14, 0, 0, -1.5819768, nan]
    dgot = mt.vmap(mt.grad(mt.nn.log1mexp))(x2)
    np.testing.assert_allclose(np.asarray(dgot), np.float32(dwant), rtol=1e-6)


def test_aliases_and_identity():
    assert mt.nn.swish is mt.nn.silu and mt.nn.hard_swish is mt.nn.hard_silu
    x = np.arange(-3, 3, dtype=np.int32)
    assert_close(mt.nn.identity(x), x, dtype=np.int32)
    assert_close(mt.nn.leaky_relu(X[:9], negative_slope=0.2),
                 np.where(X[:9] >= 0, X[:9], 0.2 * X[:9]))
    assert_close(mt.nn.elu(X[:9], alpha=2.0), np.where(X[:9] > 0, X[:9], 2 * np.expm1(
        np.minimum(X[:9], 0))))
    assert_close(mt.nn.celu(X[:9], alpha=0.5), np.maximum(X[:9], 0) + 0.5 * np.expm1(
        np.minimum(X[:9], 0) / 0.5))


# ---- dtypes (results of JAX 0.10.2: dtype and weak type) -------------------------------
BF16, F16 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)
WEAK_FROM_PY_FLOAT = set(ELEMENTWISE) - {"gelu"}
WEAK_FROM_INT = {"celu", "elu", "hard_sigmoid", "hard_silu", "leaky_relu", "relu6", "selu",
                 "sparse_plus", "sparse_sigmoid"}
KEEP_INT = {"relu", "hard_tanh"}


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_dtypes_and_weak_types_as_jax(name):
    f = _fn(name)
    for dt in (BF16, F16, np.dtype(np.float32)):
        out = f(np.array([-1.5, 0.25, 2.0], dt))
        assert out.dtype == dt and not out.weak_type
        ref = NUMPY[name](np.array([-1.5, 0.25, 2.0], np.float64))
        assert_close(out, ref.astype(dt))
    out = f(2.0)
    assert out.dtype == np.float32 and out.weak_type == (name in WEAK_FROM_PY_FLOAT)
    out = f(np.array([1, 2], np.int32))
    if name in KEEP_INT:
        assert out.dtype == np.int32
    else:
        assert out.dtype == np.float32 and out.weak_type == (name in WEAK_FROM_INT)


def test_weak_float_stays_weak_under_arithmetic():
    y = mt.nn.relu(3.0) * np.ones(2, ml_dtypes.bfloat16)
    assert y.dtype == BF16
    for name in ("softmax", "log_softmax", "standardize"):  # reductions: strong, as JAX
        out = _fn(name)(2.0, axis=None)
        assert out.dtype == np.float32 and not out.weak_type


@pytest.mark.parametrize("name", ELEMENTWISE + ["softmax", "log_softmax", "standardize",
                                                "glu"])
def test_jit_equals_eager_and_vmap_equals_loop(name):
    x = np.random.default_rng(3).normal(size=(3, 4, 6)).astype(np.float32) * 3
    f = _fn(name)
    np.testing.assert_allclose(np.asarray(mt.jit(f)(x)), np.asarray(f(x)), rtol=1e-6,
                               atol=1e-7)
    loop = np.stack([np.asarray(f(x[i])) for i in range(3)])
    np.testing.assert_allclose(np.asarray(mt.vmap(f)(x)), loop, rtol=1e-6, atol=1e-7)
    loop1 = np.stack([np.asarray(f(x[:, i])) for i in range(4)], axis=1)
    np.testing.assert_allclose(np.asarray(mt.vmap(f, in_axes=1, out_axes=1)(x)), loop1,
                               rtol=1e-6, atol=1e-7)


# ---- softmax, log_softmax, logsumexp, logmeanexp ---------------------------------------
def _np_softmax(x, axis, where=None):
    x = np.asarray(x, np.float64)
    if where is not None:
        x = np.where(where, x, -np.inf)
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    with np.errstate(invalid="ignore"):  # a fully masked row: -inf - -inf, masked below
        e = np.exp(x - m)
        out = e / np.sum(e, axis=axis, keepdims=True)
    return out if where is None else np.where(where, out, 0)


def _np_log_softmax(x, axis):
    x = np.asarray(x, np.float64)
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


@st.composite
def _array_and_axis(draw, min_dims=1):
    shape = draw(shapes(min_dims=min_dims, max_dims=3, min_side=1))
    x = draw(arrays(np.float32, shape, min_value=-50, max_value=50))
    nd = len(shape)
    axis = draw(st.one_of(st.integers(-nd, nd - 1), st.none(),
                          st.lists(st.integers(0, nd - 1), unique=True, min_size=1).map(
                              lambda a: tuple(i - nd if i % 2 else i for i in a))))
    return x, axis


@settings(max_examples=25, deadline=None)
@given(xa=_array_and_axis(), use_where=st.booleans())
def test_softmax_and_log_softmax_match_numpy(xa, use_where):
    x, axis = xa
    ax = axis if axis is not None else tuple(range(x.ndim))
    where = (np.arange(x.size).reshape(x.shape) % 3 != 1) if use_where else None
    assert_close(mt.nn.softmax(x, axis=axis, where=where), _np_softmax(x, ax, where),
                 dtype=np.float32, rtol=1e-5, atol=1e-6)
    if where is None:
        assert_close(mt.nn.log_softmax(x, axis=axis), _np_log_softmax(x, ax),
                     dtype=np.float32, rtol=1e-5, atol=1e-4)
        assert_close(mt.nn.logsumexp(x, axis=axis), np.log(np.sum(np.exp(
            x.astype(np.float64)), axis=ax)), rtol=1e-5, atol=1e-5)
        n = np.prod([x.shape[a] for a in np.atleast_1d(ax)])
        assert_close(mt.nn.logmeanexp(x, axis=axis), np.log(np.sum(np.exp(
            x.astype(np.float64)), axis=ax)) - np.log(n), rtol=1e-5, atol=1e-5)


ROWS = np.array([[1, 2, 3], [-inf, -inf, -inf], [inf, 1, 2], [nan, 1, 2], [1e4, -1e4, 0],
                 [-inf, 0, 1]], np.float32)


def test_softmax_special_values_and_grads_match_jax():
    want = [[0.090030573, 0.24472848, 0.66524094], [nan] * 3, [nan] * 3, [nan] * 3, [1, 0, 0],
            [0, 0.26894143, 0.7310586]]
    np.testing.assert_allclose(np.asarray(mt.nn.softmax(ROWS)), np.float32(want), rtol=1e-6)
    want = [[-2.4076059, -1.4076059, -0.40760595], [nan] * 3, [nan] * 3, [nan] * 3,
            [0, -20000, -10000], [-inf, -1.3132616, -0.31326163]]
    np.testing.assert_allclose(np.asarray(mt.nn.log_softmax(ROWS)), np.float32(want),
                               rtol=1e-6)
    w = np.arange(3.0, dtype=np.float32)
    gs = mt.vmap(mt.grad(lambda v: mnp.sum(mt.nn.softmax(v) * w)))(ROWS)
    want = [[-0.14181709, -0.14077038, 0.28258741], [nan] * 3, [nan] * 3, [nan] * 3, [0, 0, 0],
            [0, -0.19661202, 0.19661176]]
    np.testing.assert_allclose(np.asarray(gs), np.float32(want), rtol=1e-5, atol=1e-7)
    gl = mt.vmap(mt.grad(lambda v: mnp.sum(mt.nn.log_softmax(v) * w)))(ROWS)
    want = [[-0.27009171, 0.26581457, 0.0042771101], [nan] * 3, [nan] * 3, [nan] * 3,
            [-3, 1, 2], [0, 0.19317569, -0.19317579]]
    np.testing.assert_allclose(np.asarray(gl), np.float32(want), rtol=1e-5, atol=1e-7)


def test_softmax_where_matches_jax():
    w = np.array([True, False, True])
    got = mt.nn.softmax(ROWS[[0, 4]], where=w)
    np.testing.assert_allclose(np.asarray(got), [[0.11920291, 0, 0.880797], [1, 0, 0]],
                               rtol=1e-6)
    got = mt.nn.log_softmax(ROWS[[0, 4]], where=w)
    np.testing.assert_allclose(np.asarray(got), [[-2.1269281, -inf, -0.12692805],
                                                 [0, -inf, -1e4]], rtol=1e-6)
    # masked-out entries get no gradient, and the gradient is finite
    g = mt.grad(lambda v: mnp.sum(mt.nn.softmax(v, where=w) * np.arange(3.0)))(ROWS[0])
    assert float(g[1]) == 0 and np.all(np.isfinite(np.asarray(g)))


def test_softmax_low_precision_and_size_zero():
    x = np.random.default_rng(4).normal(size=(5, 7)).astype(np.float32) * 4
    for dt in (BF16, F16):
        out = mt.nn.softmax(x.astype(dt))
        assert out.dtype == dt
        assert_close(out, _np_softmax(x.astype(dt), -1), rtol=2e-2, atol=2e-3)
        assert mt.nn.log_softmax(x.astype(dt)).dtype == dt
    assert mt.nn.softmax(np.zeros((2, 0), np.float32)).shape == (2, 0)
    assert mt.nn.log_softmax(np.zeros((0, 3), np.float32), axis=0).shape == (0, 3)
    assert_close(mt.nn.softmax(np.float32(5.0), axis=None), np.float32(1))


# ---- one_hot, standardize, glu ------------------------------------------------------------
@settings(max_examples=20, deadline=None)
@given(shape=shapes(max_dims=3), data=st.data())
def test_one_hot_matches_numpy(shape, data):
    x = data.draw(arrays(np.int32, shape, min_value=-4, max_value=6))
    n = data.draw(st.integers(0, 5))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    want = np.moveaxis((x[..., None] == np.arange(n)).astype(np.float32), -1, axis)
    assert_close(mt.nn.one_hot(x, n, axis=axis), want, dtype=np.float32)
    assert_close(mt.jit(lambda v: mt.nn.one_hot(v, n, axis=axis))(x), want)


def test_one_hot_along_a_named_axis():
    idx = np.array([[2, 0], [1, 1], [0, 2]])
    got = mt.vmap(lambda i: mt.nn.one_hot(i, 3, axis="c"), axis_name="c")(idx)
    # member c of the named axis holds (idx[c] == c); JAX 0.10.2 gives the same
    assert_close(got, np.float32([[0, 1], [1, 1], [0, 1]]))
    assert_close(got, (idx == np.arange(3)[:, None]).astype(np.float32))
    with pytest.raises(ValueError, match=r"one_hot: num_classes 4 must equal the size 3 of "
                                         r"the axis 'c'"):
        mt.vmap(lambda i: mt.nn.one_hot(i, 4, axis="c"), axis_name="c")(idx)


def test_one_hot_dtype_and_out_of_range_as_jax():
    got = mt.nn.one_hot(np.array([0, 2, -1, 3]), 3, dtype=mnp.int8)
    want = [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]]
    assert_close(got, np.array(want, np.int8), dtype=np.int8)
    assert_close(mt.nn.one_hot(np.array([0.5, 1.0, nan]), 3),
                 np.float32([[0, 0, 0], [0, 1, 0], [0, 0, 0]]))
    assert_close(mt.vmap(lambda i: mt.nn.one_hot(i, 4))(np.array([3, 0])),
                 np.eye(4, dtype=np.float32)[[3, 0]])


@settings(max_examples=20, deadline=None)
@given(xa=_array_and_axis(), stable=st.booleans())
def test_standardize_matches_numpy(xa, stable):
    x, axis = xa
    ax = axis if axis is not None else tuple(range(x.ndim))
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=ax, keepdims=True)
    want = (x64 - mean) / np.sqrt(x64.var(axis=ax, keepdims=True) + 1e-5)
    got = mt.nn.standardize(x, axis=axis, algorithm="stable" if stable else "fast")
    assert_close(got, want, dtype=np.float32, rtol=1e-3, atol=2e-3)


def test_standardize_with_statistics_and_where():
    x = np.random.default_rng(5).normal(size=(4, 6)).astype(np.float32)
    assert_close(mt.nn.standardize(x, mean=1.0, variance=2.0, epsilon=0.0),
                 (x - 1) / np.sqrt(2.0), rtol=1e-6)
    w = np.arange(24).reshape(4, 6) % 4 != 0
    m = np.array([x[i][w[i]].mean() for i in range(4)])[:, None]
    v = np.array([x[i][w[i]].var() for i in range(4)])[:, None]
    assert_close(mt.nn.standardize(x, where=w), (x - m) / np.sqrt(v + 1e-5), rtol=1e-4,
                 atol=1e-4)


def test_glu_matches_numpy():
    x = np.random.default_rng(6).normal(size=(4, 6)).astype(np.float32)
    assert_close(mt.nn.glu(x), x[:, :3] * _sig(x[:, 3:].astype(np.float64)), rtol=1e-6)
    assert_close(mt.nn.glu(x, axis=0), x[:2] * _sig(x[2:].astype(np.float64)), rtol=1e-6)
    assert_close(mt.nn.glu(x, axis=-2), x[:2] * _sig(x[2:].astype(np.float64)), rtol=1e-6)


# ---- errors -------------------------------------------------------------------------------
def test_errors_name_the_function_the_input_and_the_line():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match=r"one_hot: num_classes must be a Python int .*3\.0"):
        mt.nn.one_hot(np.array([1]), 3.0)
    with pytest.raises(TypeError, match=r"one_hot: num_classes must be a Python int"):
        mt.nn.one_hot(np.array([1]), mnp.array(3.0))
    with pytest.raises(mt.errors.ConcretizationTypeError,
                       match=r"one_hot: num_classes must be a concrete int .*traced"):
        mt.jit(lambda i, n: mt.nn.one_hot(i, n))(np.array([1]), 3)
    assert_close(mt.nn.one_hot(np.array([1]), mnp.array(3)), np.float32([[0, 1, 0]]))
    assert_close(mt.nn.one_hot(np.array([1]), np.int64(2)), np.float32([[0, 1]]))
    with pytest.raises(ValueError, match=r"one_hot: axis 3 is out of bounds .*i32\[2\]"):
        mt.nn.one_hot(np.array([1, 2], np.int32), 3, axis=3)
    with pytest.raises(ValueError, match=r"softmax: axis 2 is out of bounds for f32\[2,3\] "
                                         r"at test_activations.py:\d+"):
        mt.nn.softmax(x, axis=2)
    with pytest.raises(ValueError, match=r"log_softmax: repeated axis"):
        mt.nn.log_softmax(x, axis=(0, -2))
    with pytest.raises(ValueError, match=r"glu: the size of axis -1 of f32\[2,3\] must be even"):
        mt.jit(mt.nn.glu)(x)
    with pytest.raises(ValueError, match=r"standardize: unknown algorithm 'exact'"):
        mt.nn.standardize(x, algorithm="exact")
    with pytest.raises(TypeError, match=r"softmax: `where` must be a bool array, got f32"):
        mt.nn.softmax(x, where=np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"softmax: `where` bool\[4\] does not broadcast to "
                                         r"the input f32\[2,3\]"):
        mt.nn.softmax(x, where=np.ones(4, bool))


@pytest.mark.parametrize("name", ELEMENTWISE + ["softmax", "log_softmax", "standardize"])
def test_finite_inputs_make_no_nan_anywhere(name, debug_nans):
    # debug_nans raises on the first NaN of any equation, forward or backward: the stable
    # forms (softplus, masked expm1, shifted softmax) never make one for finite inputs
    f = _fn(name)
    x = X[:9]
    assert np.all(np.isfinite(np.asarray(f(x))))
    g = mt.jit(mt.grad(lambda v: mnp.sum(f(v))))(x)
    assert np.all(np.isfinite(np.asarray(g)))


def test_batched_masks_under_vmap_equal_the_loop():
    x = np.random.default_rng(8).normal(size=(3, 5)).astype(np.float32)
    w = x > 0
    for f in (lambda a, b: mt.nn.softmax(a, where=b),
              lambda a, b: mt.nn.log_softmax(a, where=b),
              lambda a, b: mt.nn.standardize(a, where=b),
              lambda a, b: mt.nn.logmeanexp(a, where=b)):
        loop = np.stack([np.asarray(f(x[i], w[i])) for i in range(3)])
        np.testing.assert_allclose(np.asarray(mt.jit(mt.vmap(f))(x, w)), loop, rtol=1e-6)
