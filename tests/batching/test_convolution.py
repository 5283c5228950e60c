"""vmap of conv_general_dilated and reduce_window_{sum,max,min} against the loop definition
(tests/batching/vmap_check.py).

Convolutions are drawn with 1 or 2 spatial dims, any layout (random dimension numbers or
layout strings), strides, SAME/SAME_LOWER/VALID/explicit (negative) padding, lhs and rhs
dilation, feature and batch groups, integer operands and preferred_element_type; lhs-only,
rhs-only and both batched at any (negative) position, batch sizes 0-3. Also vmap(grad)
against the loop of grads (drawn problems, per-example gradients of a small conv net and of
an ensemble of nets), grad of vmap, nested vmap, and the batched jaxpr holding one
convolution. Window reductions: drawn windows, strides, padding and dilations, through
vmap, vmap(grad) and nested vmap.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.lax.convolution import ConvDimensionNumbers
from tests.batching.vmap_check import assert_tree_close, check_vmap, loop_reference

seeds = st.integers(0, 2**32 - 1)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
I32 = np.dtype(np.int32)
# (operand dtype, preferred_element_type)
DTYPES = [(F32, None), (F32, None), (F32, None), (I32, None), (F16, F32)]
TOL = {"rtol": 1e-4, "atol": 1e-4}
TOL64 = {"rtol": 1e-10, "atol": 1e-12}


def x64_settings(**kwargs):
    """Settings for tests using the x64 fixture (it only sets a flag for every example)."""
    return settings(suppress_health_check=[
        *settings.default.suppress_health_check, HealthCheck.function_scoped_fixture], **kwargs)


def _dil(n, r):
    return 0 if n == 0 else (n - 1) * r + 1


def _layout(spec, sizes):
    """The shape whose dim spec[i] has size sizes[i]."""
    shape = [0] * len(spec)
    for d, s in zip(spec, sizes):
        shape[d] = s
    return tuple(shape)


def _with(shape, axis, size):
    """`shape` with a dim of `size` inserted at `axis` (negative counts from the end)."""
    full = list(shape)
    full.insert(axis % (len(shape) + 1), size)
    return tuple(full)


def _values(rng, shape, dtype):
    if dtype.kind in "iu":
        return rng.integers(-4, 5, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _stacked(rng, shape, axis, size, dtype):
    """Values of `shape` (one example), with a batch dim of `size` at `axis` if not None."""
    return _values(rng, shape if axis is None else _with(shape, axis, size), dtype)


@st.composite
def batch_axes(draw, shapes):
    """An in_axes entry per operand (None or a possibly negative axis), at least one int."""
    axes = [draw(st.one_of(st.none(), st.integers(-len(s) - 1, len(s)))) for s in shapes]
    if all(a is None for a in axes):
        k = draw(st.integers(0, len(shapes) - 1))
        axes[k] = draw(st.integers(-len(shapes[k]) - 1, len(shapes[k])))
    return tuple(axes)


# ---- conv_general_dilated ----------------------------------------------------------------
_STRING_LAYOUTS = {1: [("NWC", "WIO", "NWC"), ("NCW", "OIW", "NCW"), ("WCN", "IWO", "CNW")],
                   2: [("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW"),
                       ("CHWN", "IHWO", "WHCN")]}


@st.composite
def conv_problems(draw, float_only=False):
    """One example's conv: (lhs shape, rhs shape, params, dtype)."""
    nsp = draw(st.integers(1, 2))
    ndim = nsp + 2
    g, b = draw(st.sampled_from([(1, 1), (1, 1), (2, 1), (3, 1), (1, 2), (1, 3)]))
    groups = g * b
    n = b * draw(st.integers(0 if b == 1 else 1, 2))
    i, o = draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    sp = [draw(st.integers(1, 5)) for _ in range(nsp)]
    ks = [draw(st.integers(1, 3)) for _ in range(nsp)]
    strides = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    lhs_dil = tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(nsp))
    rhs_dil = tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(nsp))
    padding = draw(st.sampled_from(["SAME", "SAME_LOWER", "VALID", "explicit"]))
    if padding == "explicit":
        padding = tuple((draw(st.integers(-1, 2)), draw(st.integers(-1, 2)))
                        for _ in range(nsp))
        assume(all(_dil(s, r) + lo + hi >= 0 for s, r, (lo, hi) in zip(sp, lhs_dil, padding)))
    if draw(st.booleans()):
        layout = draw(st.sampled_from(_STRING_LAYOUTS[nsp]))
        dnums = lax.conv_dimension_numbers((0,) * ndim, (0,) * ndim, layout)
    else:
        layout = dnums = ConvDimensionNumbers(*(tuple(draw(st.permutations(range(ndim))))
                                                for _ in range(3)))
    lhs = _layout(dnums.lhs_spec, (n, i * g, *sp))
    rhs = _layout(dnums.rhs_spec, (o, i, *ks))
    dtype, pet = draw(st.sampled_from(DTYPES[:1] if float_only else DTYPES))
    params = {"window_strides": strides, "padding": padding, "lhs_dilation": lhs_dil,
              "rhs_dilation": rhs_dil, "dimension_numbers": layout, "feature_group_count": g,
              "batch_group_count": b, "preferred_element_type": pet}
    return lhs, rhs, params, dtype


def _conv(params):
    return lambda x, w: lax.conv_general_dilated(x, w, **params)


@settings(max_examples=40)
@given(conv_problems(), st.data(), st.integers(0, 3), seeds)
def test_conv_vmap_matches_loop(problem, data, size, seed):
    lhs, rhs, params, dtype = problem
    in_axes = data.draw(batch_axes((lhs, rhs)))
    out_axes = data.draw(st.integers(-len(lhs) - 1, len(lhs)))
    rng = np.random.default_rng(seed)
    args = tuple(_stacked(rng, s, a, size, dtype) for s, a in zip((lhs, rhs), in_axes))
    check_vmap(_conv(params), args, in_axes, out_axes, **TOL)


@pytest.mark.parametrize("groups", [(1, 1), (2, 1), (1, 2)])
@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0), (3, 1), (-1, None)])
def test_conv_batched_jaxpr_is_one_conv(groups, in_axes):
    """No loop over examples: one convolution, the rest reshapes and transposes."""
    g, b = groups
    rng = np.random.default_rng(0)
    shapes = ((2 * b, 2 * g, 5, 4), (2 * g * b, 2, 3, 2))
    args = tuple(_stacked(rng, s, a, 3, F32) for s, a in zip(shapes, in_axes))
    f = _conv({"window_strides": (1, 2), "padding": "SAME", "feature_group_count": g,
               "batch_group_count": b})
    closed = mt.make_jaxpr(mt.vmap(f, in_axes))(*args)
    names = [e.primitive.name for e in closed.jaxpr.eqns]
    assert names.count("conv_general_dilated") == 1, names
    assert set(names) <= {"conv_general_dilated", "reshape", "transpose"}, names
    check_vmap(f, args, in_axes, **TOL)


def test_conv_unbatched_operand_stays_unbatched():
    xs = np.ones((7, 1, 2, 5, 5), np.float32)
    w = np.ones((4, 2, 3, 3), np.float32)
    closed = mt.make_jaxpr(mt.vmap(lambda x, k: lax.conv(x, k, (1, 1), "SAME"),
                                   (0, None)))(xs, w)
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "conv_general_dilated"]
    assert eqn.invars[1].aval.shape == (4, 2, 3, 3)
    assert eqn.invars[0].aval.shape == (7, 2, 5, 5)  # the vmap batch folded into N


def test_conv_both_batched_known_values():
    """Each example convolves its own input with its own kernel (a hand-checked case)."""
    x = np.arange(2 * 1 * 1 * 4, dtype=np.float32).reshape(2, 1, 1, 4)  # B, N, C, W
    w = np.array([[[[1.0, 1.0]]], [[[1.0, -1.0]]]], np.float32)  # B, O, I, K
    got = mt.vmap(lambda a, k: lax.conv(a, k, (1,), "VALID"))(x, w)
    want = np.array([[[[1.0, 3.0, 5.0]]], [[[-1.0, -1.0, -1.0]]]], np.float32)
    np.testing.assert_array_equal(got, want)


# ---- conv: composition with differentiation ----------------------------------------------
def _conv_loss(params):
    def loss(x, w):
        return mnp.sum(mnp.sin(lax.conv_general_dilated(x, w, **params)))
    return loss


@x64_settings(max_examples=15)
@given(conv_problems(float_only=True), st.data(), st.integers(1, 3), seeds)
def test_vmap_of_conv_grad_matches_loop_of_grads(x64, problem, data, size, seed):
    lhs, rhs, params, _ = problem
    in_axes = data.draw(batch_axes((lhs, rhs)))
    rng = np.random.default_rng(seed)
    args = tuple(_stacked(rng, s, a, size, F64) for s, a in zip((lhs, rhs), in_axes))
    check_vmap(mt.grad(_conv_loss(params), argnums=(0, 1)), args, in_axes, **TOL64)


def _net_loss(w1, w2, x, y):
    """A small conv net on one example x f[C,H,W]: conv, tanh, 2x2 max pool, dense."""
    h = lax.conv(mnp.expand_dims(x, 0), w1, (1, 1), "SAME")  # f[1,4,6,6]
    h = mnp.tanh(h)
    h = lax.reduce_window(h, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    out = lax.dot(mnp.reshape(h, (-1,)), w2)  # f[3]
    return mnp.sum((out - y) ** 2)


def _net_problem(seed, n=4):
    rng = np.random.default_rng(seed)
    w1, w2 = rng.standard_normal((4, 2, 3, 3)), 0.3 * rng.standard_normal((36, 3))
    return w1, w2, rng.standard_normal((n, 2, 6, 6)), rng.standard_normal((n, 3))


def test_per_example_grads_of_conv_net(x64):
    w1, w2, xs, ys = _net_problem(0)
    grads = mt.grad(_net_loss, argnums=(0, 1))
    check_vmap(grads, (w1, w2, xs, ys), (None, None, 0, 0), **TOL64)
    # the batch at the end of each input
    got = mt.vmap(grads, (None, None, -1, 1))(w1, w2, np.moveaxis(xs, 0, -1), ys.T)
    want = loop_reference(grads, (w1, w2, xs, ys), (None, None, 0, 0), 0)
    assert_tree_close(got, want, **TOL64)


def test_ensemble_grads_of_conv_net(x64):
    """Per-member weights and data: both conv operands batched, forward and backward."""
    w1, w2, xs, ys = _net_problem(1)
    rng = np.random.default_rng(2)
    w1s = w1 + 0.1 * rng.standard_normal((4, *w1.shape))
    w2s = np.moveaxis(w2 + 0.1 * rng.standard_normal((4, *w2.shape)), 0, 2)
    check_vmap(mt.grad(_net_loss, argnums=(0, 1)), (w1s, w2s, xs, ys), (0, 2, 0, 0), **TOL64)

    # grad of vmap: the backward pass transposes the grouped convolutions the rule built
    def total(a, b):
        return mnp.sum(mt.vmap(_net_loss, (0, 2, 0, 0))(a, b, xs, ys))

    got = mt.grad(total, argnums=(0, 1))(w1s, w2s)
    want = loop_reference(mt.grad(_net_loss, argnums=(0, 1)), (w1s, w2s, xs, ys),
                          (0, 2, 0, 0), (0, 2))
    assert_tree_close(got, want, **TOL64)


def test_grad_of_vmap_of_conv_net(x64):
    w1, w2, xs, ys = _net_problem(3)

    def total(a, b):
        return mnp.sum(mt.vmap(_net_loss, (None, None, 0, 0))(a, b, xs, ys))

    got = mt.grad(total, argnums=(0, 1))(w1, w2)
    per = loop_reference(mt.grad(_net_loss, argnums=(0, 1)), (w1, w2, xs, ys),
                         (None, None, 0, 0), 0)
    assert_tree_close(got, tuple(np.sum(p, axis=0) for p in per), **TOL64)


@settings(max_examples=12)
@given(conv_problems(), st.data(), st.integers(1, 3), st.integers(1, 2), seeds)
def test_nested_vmap_of_conv_matches_nested_loop(problem, data, n_outer, n_inner, seed):
    lhs, rhs, params, dtype = problem
    inner = data.draw(batch_axes((lhs, rhs)))
    shapes = [s if a is None else _with(s, a, n_inner) for s, a in zip((lhs, rhs), inner)]
    outer = data.draw(batch_axes(shapes))
    rng = np.random.default_rng(seed)
    args = tuple(_stacked(rng, s, a, n_outer, dtype) for s, a in zip(shapes, outer))
    got = mt.vmap(mt.vmap(_conv(params), inner), outer)(*args)
    want = loop_reference(lambda *a: loop_reference(_conv(params), a, inner, 0),
                          args, outer, 0)
    assert_tree_close(got, want, **TOL)


# ---- reduce_window_{sum,max,min} ---------------------------------------------------------
_WINDOW_OPS = {"sum": lax.reduce_window_sum, "max": lax.reduce_window_max,
               "min": lax.reduce_window_min}


@st.composite
def window_problems(draw):
    """One example's operand shape and window parameters."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(0 if ndim > 1 else 1, 4)) for _ in range(ndim))
    window = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
    strides = tuple(draw(st.integers(1, 2)) for _ in range(ndim))
    base = tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(ndim))
    wdil = tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(ndim))
    padding = draw(st.sampled_from(["SAME", "VALID", "explicit"]))
    if padding == "explicit":
        padding = tuple((draw(st.integers(-1, 2)), draw(st.integers(-1, 2)))
                        for _ in range(ndim))
        assume(all(_dil(s, r) + lo + hi >= 0 for s, r, (lo, hi) in zip(shape, base, padding)))
    return shape, {"window_dimensions": window, "window_strides": strides,
                   "padding": padding, "base_dilation": base, "window_dilation": wdil}


@given(window_problems(), st.sampled_from(sorted(_WINDOW_OPS)), st.sampled_from([F32, I32]),
       st.data(), st.integers(0, 3), seeds)
def test_reduce_window_vmap_matches_loop(problem, op, dtype, data, size, seed):
    shape, params = problem
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    out_axes = data.draw(st.integers(-len(shape) - 1, len(shape)))
    x = _stacked(np.random.default_rng(seed), shape, axis, size, dtype)
    check_vmap(lambda a: _WINDOW_OPS[op](a, **params), (x,), axis, out_axes, **TOL)


def test_reduce_window_batched_jaxpr_is_one_reduction():
    x = np.ones((5, 4, 6), np.float32)
    f = mt.vmap(lambda a: lax.reduce_window_max(a, (2, 3), (1, 2), "SAME"), 1, 1)
    closed = mt.make_jaxpr(f)(x)
    names = [e.primitive.name for e in closed.jaxpr.eqns]
    assert names == ["reduce_window_max"], names
    (eqn,) = closed.jaxpr.eqns
    assert eqn.params["window_dimensions"] == (2, 1, 3)
    assert eqn.params["window_strides"] == (1, 1, 2)
    assert eqn.params["padding"][1] == (0, 0)


def test_reduce_window_with_init_value_vmap():
    x = np.random.default_rng(0).standard_normal((3, 7)).astype(np.float32)
    check_vmap(lambda a: lax.reduce_window(a, 0.5, lax.max, (3,), (2,), "SAME"), (x,), 0)
    check_vmap(lambda a: lax.reduce_window(a, 0.0, lax.add, (2,), (1,), "VALID"), (x,), 1)


@x64_settings(max_examples=15)
@given(window_problems(), st.sampled_from(sorted(_WINDOW_OPS)), st.data(),
       st.integers(1, 3), seeds)
def test_vmap_of_reduce_window_grad_matches_loop(x64, problem, op, data, size, seed):
    shape, params = problem
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    # distinct values, so that the max/min (and its gradient) is unambiguous
    rng = np.random.default_rng(seed)
    full = _with(shape, axis, size)
    x = rng.permutation(np.prod(full, dtype=int)).reshape(full) / 7.0

    def loss(a):
        return mnp.sum(mnp.sin(_WINDOW_OPS[op](a, **params)))

    check_vmap(mt.grad(loss), (x,), axis, **TOL64)


def test_nested_vmap_of_reduce_window():
    x = np.random.default_rng(1).standard_normal((2, 5, 3, 4)).astype(np.float32)
    def pool(a):
        return lax.reduce_window_sum(a, (2, 2), (2, 1), ((1, 0), (0, 1)))

    got = mt.vmap(mt.vmap(pool, 1), 0)(x)  # examples (i, j) are x[i, :, j, :]
    want = loop_reference(lambda a: loop_reference(pool, (a,), 1, 0), (x,), 0, 0)
    assert_tree_close(got, want, **TOL)
