"""Derivatives of conv_general_dilated (drawn 1-D/2-D problems: any layouts, strides,
SAME/SAME_LOWER/VALID/explicit asymmetric and negative padding, lhs and rhs dilation, feature
and batch groups, size-0 dims) and of reduce_window_sum/max/min (drawn windows, strides,
padding, base and window dilation), plus pooling through lax.reduce_window, against float64
finite differences (tests/autodiff/fd.py)."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.ad_util import UndefinedPrimal, Zero
from mytorch.core.aval import ShapedArray
from mytorch.lax.convolution import (
    ConvDimensionNumbers,
    conv_general_dilated_p,
    reduce_window_max_p,
    reduce_window_sum_p,
)
from tests.autodiff.fd import check_grads

seeds = st.integers(0, 2**32 - 1)
# the x64 fixture only sets a flag, which holds for every drawn example
x64_settings = settings(suppress_health_check=[
    *settings.default.suppress_health_check, HealthCheck.function_scoped_fixture])


def _dil(n, r):
    return 0 if n == 0 else (n - 1) * r + 1


def _layout(spec, sizes):
    """The shape whose dim spec[i] has size sizes[i]."""
    shape = [0] * len(spec)
    for d, s in zip(spec, sizes):
        shape[d] = s
    return tuple(shape)


# ---- conv_general_dilated ----------------------------------------------------------------
@st.composite
def conv_problems(draw, allow_empty=False):
    nsp = draw(st.integers(1, 2))
    ndim = nsp + 2
    g, b = draw(st.sampled_from([(1, 1), (2, 1), (1, 2)]))
    groups = g * b
    n = b * draw(st.integers(1, 2))
    i = draw(st.integers(1, 2))  # input features per group
    o = groups * draw(st.integers(1, 2))
    if allow_empty:
        which = draw(st.sampled_from(["n", "i", "o"]))
        n, i, o = (0 if which == "n" else n), (0 if which == "i" else i), (
            0 if which == "o" else o)
    sp = [draw(st.integers(1, 5)) for _ in range(nsp)]
    ks = [draw(st.integers(1, 3)) for _ in range(nsp)]
    strides = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    lhs_dil = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    rhs_dil = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    kind = draw(st.sampled_from(["SAME", "SAME_LOWER", "VALID", "explicit"]))
    if kind == "explicit":
        padding = tuple((draw(st.integers(-1, 2)), draw(st.integers(-1, 2)))
                        for _ in range(nsp))
        sizes = [_dil(s, r) + lo + hi for s, r, (lo, hi) in zip(sp, lhs_dil, padding)]
        assume(all(s >= 0 for s in sizes))
    else:
        padding = kind
        sizes = [_dil(s, r) for s, r in zip(sp, lhs_dil)]  # SAME pads keep these >= window
    if not allow_empty:
        # a non-empty output (an empty one is tested separately)
        assume(kind in ("SAME", "SAME_LOWER") or all(
            s >= _dil(k, r) for s, k, r in zip(sizes, ks, rhs_dil)))
    dnums = ConvDimensionNumbers(*(tuple(draw(st.permutations(range(ndim))))
                                   for _ in range(3)))
    lhs = _layout(dnums.lhs_spec, (n, i * g, *sp))
    rhs = _layout(dnums.rhs_spec, (o, i, *ks))
    params = {"window_strides": strides, "padding": padding, "lhs_dilation": lhs_dil,
              "rhs_dilation": rhs_dil, "dimension_numbers": dnums, "feature_group_count": g,
              "batch_group_count": b}
    return lhs, rhs, params


def _conv(params):
    return lambda x, w: lax.conv_general_dilated(x, w, **params)


@x64_settings
@given(conv_problems(), seeds)
def test_conv_grads(x64, problem, seed):
    lhs, rhs, params = problem
    rng = np.random.default_rng(seed)
    check_grads(_conv(params), (rng.standard_normal(lhs), rng.standard_normal(rhs)),
                order=2)


@x64_settings
@given(conv_problems(), seeds, st.booleans())
def test_conv_grads_one_operand(x64, problem, seed, wrt_lhs):
    # one linear operand at a time, the other a constant: each transpose rule on its own
    lhs, rhs, params = problem
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(lhs), rng.standard_normal(rhs)
    if wrt_lhs:
        wc = mnp.asarray(w)
        check_grads(lambda a: lax.conv_general_dilated(a, wc, **params), (x,), order=2)
    else:
        xc = mnp.asarray(x)
        check_grads(lambda k: lax.conv_general_dilated(xc, k, **params), (w,), order=2)


@x64_settings
@given(conv_problems(), seeds)
def test_conv_grad_of_grad(x64, problem, seed):
    # reverse over reverse: the transpose rules' own convolutions transpose again
    lhs, rhs, params = problem
    rng = np.random.default_rng(seed)

    def loss(x, w):
        return lax.reduce_sum(lax.tanh(lax.conv_general_dilated(x, w, **params)),
                              tuple(range(len(lhs))))

    check_grads(mt.grad(loss, argnums=(0, 1)),
                (rng.standard_normal(lhs), rng.standard_normal(rhs)), order=1)


@x64_settings
@given(conv_problems(allow_empty=True), seeds)
def test_conv_grads_size_zero(x64, problem, seed):
    lhs, rhs, params = problem
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(lhs), rng.standard_normal(rhs)
    check_grads(_conv(params), (x, w), order=2)
    out, vjp_fn = mt.vjp(_conv(params), mnp.asarray(x), mnp.asarray(w))
    gx, gw = vjp_fn(mnp.asarray(rng.standard_normal(out.shape)))
    assert gx.shape == lhs and gw.shape == rhs


@pytest.mark.parametrize("layouts", [("NCH", "OIH", "NCH"), ("NHC", "HIO", "NHC"),
                                     ("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"),
                                     ("CWNH", "WHOI", "HCWN")])
def test_conv_layout_strings(x64, layouts):
    nsp = len(layouts[0]) - 2
    dnums = lax.conv_dimension_numbers((1,) * (nsp + 2), (1,) * (nsp + 2), layouts)
    lhs = _layout(dnums.lhs_spec, (2, 4, *[5] * nsp))
    rhs = _layout(dnums.rhs_spec, (6, 2, *[3] * nsp))
    rng = np.random.default_rng(3)
    f = lambda x, w: lax.conv_general_dilated(
        x, w, (2,) * nsp, "SAME", rhs_dilation=(2,) * nsp, dimension_numbers=layouts,
        feature_group_count=2)
    check_grads(f, (rng.standard_normal(lhs), rng.standard_normal(rhs)), order=2)


def test_conv_known_grads(x64):
    # 1-D VALID correlation y[j] = sum_k x[j + k] w[k]: d sum(y) / dx[i] sums the taps that
    # touch x[i], and d sum(y) / dw[k] sums the inputs each tap sees
    x = np.arange(1.0, 7.0)
    w = np.array([2.0, -1.0, 0.5])

    def loss(p, q):
        out = lax.conv_general_dilated(lax.reshape(p, (1, 1, 6)), lax.reshape(q, (1, 1, 3)),
                                       (1,), "VALID")
        return lax.reduce_sum(out, (0, 1, 2))

    gx, gw = mt.grad(loss, argnums=(0, 1))(mnp.asarray(x), mnp.asarray(w))
    want_x = [sum(w[k] for k in range(3) if 0 <= i - k <= 3) for i in range(6)]
    np.testing.assert_allclose(np.asarray(gx), want_x)
    np.testing.assert_allclose(np.asarray(gw), [x[k:k + 4].sum() for k in range(3)])
    # the gradient w.r.t. lhs is the transposed convolution of the cotangent
    xs = np.random.default_rng(0).standard_normal((1, 5, 5, 2))
    ws = np.random.default_rng(1).standard_normal((3, 3, 2, 4))
    dn = ("NHWC", "HWIO", "NHWC")
    out, vjp_fn = mt.vjp(lambda a: lax.conv_general_dilated(a, mnp.asarray(ws), (1, 1), "SAME",
                                                            dimension_numbers=dn),
                         mnp.asarray(xs))
    ct = np.random.default_rng(2).standard_normal(out.shape)
    (gx,) = vjp_fn(mnp.asarray(ct))
    want = lax.conv_transpose(mnp.asarray(ct), mnp.asarray(ws), (1, 1), "SAME",
                              dimension_numbers=dn, transpose_kernel=True)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(want), rtol=1e-12, atol=1e-12)


def test_conv_preferred_element_type(x64):
    # float32 operands convolved in float64: cotangents come back as float32
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 6)).astype(np.float32)
    w = rng.standard_normal((4, 2, 3)).astype(np.float32)

    def f(p, q):
        return lax.conv_general_dilated(p, q, (2,), ((1, 0),), feature_group_count=2,
                                        precision="highest", preferred_element_type=np.float64)

    out, vjp_fn = mt.vjp(f, mnp.asarray(x), mnp.asarray(w))
    assert out.dtype == np.float64
    ct = mnp.asarray(rng.standard_normal(out.shape))
    gx, gw = vjp_fn(ct)
    assert gx.dtype == np.float32 and gw.dtype == np.float32
    _, vjp64 = mt.vjp(f, mnp.asarray(x.astype(np.float64)), mnp.asarray(w.astype(np.float64)))
    for got, want in zip((gx, gw), vjp64(ct)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    jaxpr = mt.make_jaxpr(vjp_fn)(ct)
    convs = [e for e in jaxpr.jaxpr.eqns if e.primitive is conv_general_dilated_p]
    assert len(convs) == 2
    assert all(e.params["precision"] == "highest" for e in convs)
    _, t = mt.jvp(f, (mnp.asarray(x), mnp.asarray(w)), (mnp.asarray(x), mnp.asarray(w)))
    assert t.dtype == np.float64


def test_conv_transpose_needs_one_linear_operand():
    rule = conv_general_dilated_p.rule("transpose")
    a = ShapedArray((1, 1, 4), np.dtype(np.float32))
    b = ShapedArray((1, 1, 2), np.dtype(np.float32))
    dn = ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))
    with pytest.raises(TypeError, match="linear in each operand separately"):
        rule(mnp.ones((1, 1, 3), np.float32), UndefinedPrimal(a), UndefinedPrimal(b),
             window_strides=(1,), padding=((0, 0),), lhs_dilation=(1,), rhs_dilation=(1,),
             dimension_numbers=dn, feature_group_count=1, batch_group_count=1,
             precision=None, preferred_element_type=None)
    assert not conv_general_dilated_p.linear


# ---- reduce_window -------------------------------------------------------------------------
@st.composite
def window_problems(draw):
    """(operand shape, reduce_window params), rank 0 to 3, padding a string or pairs."""
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(ndim))
    window = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
    strides = tuple(draw(st.integers(1, 2)) for _ in range(ndim))
    base = tuple(draw(st.integers(1, 2)) for _ in range(ndim))
    wdil = tuple(draw(st.integers(1, 2)) for _ in range(ndim))
    kind = draw(st.sampled_from(["SAME", "VALID", "explicit"]))
    if kind == "explicit":
        padding = tuple((draw(st.integers(-1, 2)), draw(st.integers(-1, 2)))
                        for _ in range(ndim))
        assume(all(_dil(n, r) + lo + hi >= 0 for n, r, (lo, hi) in zip(shape, base, padding)))
    else:
        padding = kind
    return shape, {"window_dimensions": window, "window_strides": strides, "padding": padding,
                   "base_dilation": base, "window_dilation": wdil}


def _distinct(seed, shape):
    """Values 0.1 apart at least (no ties for max/min), in a drawn order."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.1 - 0.05 * n + rng.uniform(0, 0.02, n)).reshape(shape)


@x64_settings
@given(window_problems(), seeds)
def test_reduce_window_sum_grads(x64, problem, seed):
    shape, params = problem
    x = np.random.default_rng(seed).standard_normal(shape)
    check_grads(lambda a: lax.reduce_window_sum(a, **params), (x,), order=2)


@x64_settings
@given(window_problems(), seeds, st.sampled_from(["max", "min"]))
def test_reduce_window_max_min_grads(x64, problem, seed, which):
    shape, params = problem
    fn = lax.reduce_window_max if which == "max" else lax.reduce_window_min
    x = _distinct(seed, shape)
    # every window must hold an operand element (not only padding and dilation holes)
    assume(np.isfinite(np.asarray(fn(mnp.asarray(x), **params))).all())
    check_grads(lambda a: fn(a, **params), (x,), order=2)


@x64_settings
@given(window_problems(), seeds, st.sampled_from(["sum", "max", "min"]))
def test_reduce_window_grad_of_grad(x64, problem, seed, which):
    shape, params = problem
    fn = {"sum": lax.reduce_window_sum, "max": lax.reduce_window_max,
          "min": lax.reduce_window_min}[which]
    x = _distinct(seed, shape)
    assume(np.isfinite(np.asarray(fn(mnp.asarray(x), **params))).all())

    def loss(a):
        return lax.reduce_sum(lax.sin(fn(a, **params)), tuple(range(len(shape))))

    check_grads(mt.grad(loss), (x,), order=1)


def test_reduce_window_max_picks_the_maximum(x64):
    # exact: each window's tangent is the tangent at its maximum; overlapping windows that
    # share a maximum count it once each in the gradient
    x = np.array([[1.0, 5.0, 2.0, 0.0], [3.0, 4.0, 9.0, 8.0], [7.0, 6.0, -1.0, 2.5]])
    args = {"window_dimensions": (2, 2), "window_strides": (1, 1), "padding": "VALID"}
    t = np.arange(12.0).reshape(3, 4)
    out, tan = mt.jvp(lambda a: lax.reduce_window_max(a, **args), (mnp.asarray(x),),
                      (mnp.asarray(t),))
    np.testing.assert_array_equal(np.asarray(out), [[5, 9, 9], [7, 9, 9]])
    np.testing.assert_array_equal(np.asarray(tan), [[t[0, 1], t[1, 2], t[1, 2]],
                                                    [t[2, 0], t[1, 2], t[1, 2]]])
    g = mt.grad(lambda a: lax.reduce_sum(lax.reduce_window_max(a, **args), (0, 1)))(
        mnp.asarray(x))
    want = np.zeros((3, 4))
    want[0, 1], want[1, 2], want[2, 0] = 1, 4, 1
    np.testing.assert_array_equal(np.asarray(g), want)
    g = mt.grad(lambda a: lax.reduce_sum(lax.reduce_window_min(a, **args), (0, 1)))(
        mnp.asarray(x))
    want = np.zeros((3, 4))
    want[0, 0], want[0, 2], want[0, 3], want[1, 0], want[2, 2] = 1, 1, 1, 1, 2
    np.testing.assert_array_equal(np.asarray(g), want)


def test_reduce_window_sum_known_grad(x64):
    # the gradient of the total of overlapping window sums counts the windows covering each
    # element (strided, padded windows included)
    x = mnp.asarray(np.zeros((5, 4)))
    args = {"window_dimensions": (3, 2), "window_strides": (2, 1), "padding": ((1, 1), (0, 1))}
    g = mt.grad(lambda a: lax.reduce_sum(lax.reduce_window_sum(a, **args), (0, 1)))(x)
    counts = np.zeros((5, 4))
    out = lax.reduce_window_sum(x, **args).shape
    for i, j in itertools.product(range(out[0]), range(out[1])):
        for di, dj in itertools.product(range(3), range(2)):
            r, c = i * 2 - 1 + di, j + dj
            if 0 <= r < 5 and 0 <= c < 4:
                counts[r, c] += 1
    np.testing.assert_array_equal(np.asarray(g), counts)


@pytest.mark.parametrize("pool", ["max", "avg", "min"])
def test_pooling_grads(x64, pool):
    # NHWC pooling as users write it, through lax.reduce_window
    x = _distinct(5, (2, 5, 4, 3))

    def f(a):
        if pool == "max":
            return lax.reduce_window(a, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")
        if pool == "min":
            return lax.reduce_window(a, np.inf, lax.min, (1, 3, 3, 1), (1, 1, 1, 1), "VALID")
        s = lax.reduce_window(a, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        return s / 9.0

    check_grads(f, (x,), order=2)
    out = f(mnp.asarray(x))
    g = mt.grad(lambda a: mnp.sum(f(a) ** 2))(mnp.asarray(x))
    assert g.shape == x.shape and out.dtype == np.float64


def test_reduce_window_integer_operands_have_no_tangent(x64):
    # the rules themselves (jvp hands integer inputs symbolic zeros before they run)
    k = mnp.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    params = {"window_dimensions": (1, 2), "window_strides": (1, 1),
              "padding": ((0, 0), (0, 0)), "base_dilation": (1, 1), "window_dilation": (1, 1)}
    for prim in (reduce_window_sum_p, reduce_window_max_p):
        out, t = prim.rule("jvp")((k,), (k,), **params)
        assert out.dtype == np.int32 and type(t) is Zero
