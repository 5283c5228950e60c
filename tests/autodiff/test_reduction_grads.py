"""Derivatives of the reductions (lax.reduce_*, argmax/argmin, cumulative reductions) and of
the mytorch.numpy functions built on them, against float64 central finite differences, to
second order in forward and reverse mode; plus exact values at ties and zeros (JAX's
conventions)."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.scipy.special import logsumexp
from tests.autodiff.fd import check_grads
from tests.strategies import shapes

pytestmark = pytest.mark.usefixtures("x64")


# ---- values ----------------------------------------------------------------------------------
def _distinct(shape, seed):
    """Values of `shape` at least 0.25 apart (no ties: max/min/sort are differentiable)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    vals = (rng.permutation(n) - n / 2) * 0.5 + rng.uniform(0.0, 0.2, n)
    return vals.reshape(shape)


def _with_zeros(shape, seed, zeros):
    """Values of magnitude in [0.5, 1.5] with `zeros` of them (at most) set to exactly 0."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    vals = rng.uniform(0.5, 1.5, n) * rng.choice([-1.0, 1.0], n)
    vals[rng.permutation(n)[:zeros]] = 0.0
    return vals.reshape(shape)


@st.composite
def _shape_axes(draw, min_side=0, max_dims=3, max_side=3):
    """(shape, axes): axes a tuple of distinct axes (negative ones too) of the shape."""
    shape = draw(shapes(max_dims=max_dims, min_side=min_side, max_side=max_side))
    nd = len(shape)
    picked = draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd)) if nd else []
    axes = tuple(draw(st.sampled_from([a, a - nd])) for a in picked)
    return shape, axes


def _norm(axes, nd):
    return tuple(a % nd for a in axes)


def _seed():
    return st.integers(0, 2**32 - 1)


# ---- reduce_sum ------------------------------------------------------------------------------
@given(_shape_axes(), _seed())
def test_reduce_sum(sa, seed):
    shape, axes = sa
    x = np.random.default_rng(seed).standard_normal(shape)
    check_grads(lambda x: lax.reduce_sum(x, axes), (x,), order=2)


def test_reduce_sum_transpose_broadcasts():
    _, vjp = mt.vjp(lambda x: lax.reduce_sum(x, (0, 2)), mnp.ones((2, 3, 4)))
    (ct,) = vjp(mnp.asarray(np.array([1.0, 2.0, 3.0])))
    np.testing.assert_array_equal(np.asarray(ct), np.broadcast_to(
        np.array([1.0, 2.0, 3.0])[None, :, None], (2, 3, 4)))


# ---- reduce_max / reduce_min -----------------------------------------------------------------
@given(_shape_axes(), _seed(), st.sampled_from([lax.reduce_max, lax.reduce_min]))
def test_reduce_max_min(sa, seed, op):
    shape, axes = sa
    assume(all(shape[a] > 0 for a in axes))  # an empty max is the constant -inf
    x = _distinct(shape, seed)
    check_grads(lambda x: op(x, axes), (x,), order=2)


@pytest.mark.parametrize("op", [lax.reduce_max, lax.reduce_min])
def test_reduce_max_ties_share_the_tangent(op):
    # JAX: the tangent is averaged over every position equal to the result
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    if op is lax.reduce_min:
        x = -x
    t = np.array([[10.0, 20.0, 40.0], [3.0, 6.0, 9.0]])
    _, dy = mt.jvp(lambda x: op(x, (1,)), (mnp.asarray(x),), (mnp.asarray(t),))
    np.testing.assert_allclose(np.asarray(dy), [30.0, 6.0])
    g = mt.grad(lambda x: lax.reduce_sum(op(x, (1,)), (0,)))(mnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])


# ---- reduce_prod -----------------------------------------------------------------------------
@given(_shape_axes(), _seed(), st.integers(0, 3))
def test_reduce_prod(sa, seed, zeros):
    shape, axes = sa
    x = _with_zeros(shape, seed, zeros)
    check_grads(lambda x: lax.reduce_prod(x, axes), (x,), order=2)


def test_reduce_prod_exact_with_zeros():
    def prod(x):
        return lax.reduce_prod(x, (0,))

    def grad(x):
        return np.asarray(mt.grad(prod)(mnp.asarray(np.array(x))))

    np.testing.assert_array_equal(grad([2.0, 5.0, 3.0]), [15.0, 6.0, 10.0])
    np.testing.assert_array_equal(grad([2.0, 0.0, 3.0]), [0.0, 6.0, 0.0])
    np.testing.assert_array_equal(grad([0.0, 0.0, 3.0]), [0.0, 0.0, 0.0])
    # the second derivative sees the pair of zeros: d2/dx0 dx1 = x2
    h = np.asarray(mt.hessian(prod)(mnp.asarray(np.array([0.0, 0.0, 3.0]))))
    np.testing.assert_array_equal(h, [[0, 3, 0], [3, 0, 0], [0, 0, 0]])
    h = np.asarray(mt.hessian(prod)(mnp.asarray(np.array([0.0, 2.0, 3.0]))))
    np.testing.assert_array_equal(h, [[0, 3, 2], [3, 0, 0], [2, 0, 0]])


# ---- zero derivatives ------------------------------------------------------------------------
def test_logical_and_arg_reductions_have_zero_derivatives():
    x = _distinct((3, 4), 0)

    def f(x):
        pos = lax.gt(x, 0.0)
        w = (lax.convert_element_type(lax.argmax(x, 1), x.dtype)
             + lax.convert_element_type(lax.argmin(x, -1), x.dtype)
             + lax.convert_element_type(lax.reduce_or(pos, (1,)), x.dtype)
             + lax.convert_element_type(lax.reduce_and(pos, (1,)), x.dtype)
             + lax.convert_element_type(lax.reduce_xor(pos, (1,)), x.dtype))
        return lax.mul(w, lax.reduce_sum(x, (1,)))

    check_grads(f, (x,), order=2)
    _, t = mt.jvp(lambda x: lax.argmax(x, 0), (mnp.asarray(x),), (mnp.ones((3, 4)),))
    np.testing.assert_array_equal(np.asarray(t), 0)


# ---- cumulative reductions -------------------------------------------------------------------
@st.composite
def _shape_axis(draw, min_side=0, max_side=4):
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=min_side, max_side=max_side))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return shape, axis


@given(_shape_axis(max_side=5), _seed(), st.booleans())
def test_cumsum(sa, seed, reverse):
    shape, axis = sa
    x = np.random.default_rng(seed).standard_normal(shape)
    check_grads(lambda x: lax.cumsum(x, axis, reverse), (x,), order=2)


def test_cumsum_transpose_is_a_reverse_cumsum():
    _, vjp = mt.vjp(lambda x: lax.cumsum(x, 0), mnp.zeros(4))
    (ct,) = vjp(mnp.asarray(np.array([1.0, 2.0, 3.0, 4.0])))
    np.testing.assert_array_equal(np.asarray(ct), [10.0, 9.0, 7.0, 4.0])


@given(_shape_axis(max_side=6), _seed(), st.booleans(), st.integers(0, 3))
def test_cumprod(sa, seed, reverse, zeros):
    shape, axis = sa
    x = _with_zeros(shape, seed, zeros)
    check_grads(lambda x: lax.cumprod(x, axis, reverse), (x,), order=2)


def test_cumprod_exact_with_zeros():
    x = mnp.asarray(np.array([2.0, 0.0, 3.0, 0.0, 5.0]))
    jac = np.asarray(mt.jacfwd(lambda x: lax.cumprod(x, 0))(x))
    want = np.array([[1, 0, 0, 0, 0],
                     [0, 2, 0, 0, 0],
                     [0, 6, 0, 0, 0],
                     [0, 0, 0, 0, 0],
                     [0, 0, 0, 0, 0]], float)
    np.testing.assert_array_equal(jac, want)
    np.testing.assert_array_equal(np.asarray(mt.jacrev(lambda x: lax.cumprod(x, 0))(x)), want)


@given(_shape_axis(max_side=6), _seed(), st.booleans(),
       st.sampled_from([lax.cummax, lax.cummin]))
def test_cummax_cummin(sa, seed, reverse, op):
    shape, axis = sa
    x = _distinct(shape, seed)
    check_grads(lambda x: op(x, axis, reverse), (x,), order=2)


def test_cummax_tangent_follows_the_running_max():
    x = mnp.asarray(np.array([1.0, 3.0, 2.0, 5.0, 4.0]))
    t = mnp.asarray(np.array([10.0, 20.0, 30.0, 40.0, 50.0]))
    _, dy = mt.jvp(lambda x: lax.cummax(x, 0), (x,), (t,))
    np.testing.assert_array_equal(np.asarray(dy), [10.0, 20.0, 20.0, 40.0, 40.0])
    _, dy = mt.jvp(lambda x: lax.cummin(x, 0, reverse=True), (x,), (t,))
    np.testing.assert_array_equal(np.asarray(dy), [10.0, 30.0, 30.0, 50.0, 50.0])


@given(_shape_axis(max_side=6), _seed(), st.booleans())
def test_cumlogsumexp(sa, seed, reverse):
    shape, axis = sa
    x = 3 * np.random.default_rng(seed).standard_normal(shape)
    check_grads(lambda x: lax.cumlogsumexp(x, axis, reverse), (x,), order=2)


def test_cumlogsumexp_exact():
    x = np.array([0.5, -np.inf, 1.0, 700.0, -1.0])
    g = np.asarray(mt.grad(lambda x: lax.cumlogsumexp(x, 0)[2])(mnp.asarray(x)))
    e = np.exp([0.5, 1.0]) / np.exp([0.5, 1.0]).sum()
    np.testing.assert_allclose(g, [e[0], 0.0, e[1], 0.0, 0.0], rtol=1e-14)
    g = np.asarray(mt.grad(lambda x: lax.cumlogsumexp(x, 0)[4])(mnp.asarray(x)))
    np.testing.assert_allclose(g, [0, 0, 0, 1, 0], atol=1e-300)
    # leading -inf entries give -inf results with a zero (not NaN) derivative, so a masked
    # loss stays finite
    x = mnp.asarray(np.array([-np.inf, -np.inf, 0.0, 1.0]))
    g = mt.grad(lambda x: lax.reduce_sum(lax.mul(lax.cumlogsumexp(x, 0)[2:], 1.0), (0,)))(x)
    assert np.isfinite(np.asarray(g)).all()
    h = mt.hessian(lambda x: lax.cumlogsumexp(x, 0)[-1])(mnp.asarray(np.array([0.0, 0.0])))
    np.testing.assert_allclose(np.asarray(h), [[0.25, -0.25], [-0.25, 0.25]], rtol=1e-14)


# ---- through mytorch.numpy -------------------------------------------------------------------
@st.composite
def _np_axis(draw, min_side=1):
    """(shape, axis) with axis None, an int or a tuple (negatives too)."""
    shape, axes = draw(_shape_axes(min_side=min_side))
    if draw(st.booleans()):
        return shape, None
    if len(axes) == 1 and draw(st.booleans()):
        return shape, axes[0]
    return shape, axes


_SMOOTH = {
    "sum": mnp.sum, "mean": mnp.mean, "var": mnp.var, "prod": mnp.prod,
    "logsumexp": logsumexp,
}


@given(_np_axis(), _seed(), st.booleans(), st.sampled_from(sorted(_SMOOTH)))
def test_numpy_smooth_reductions(sa, seed, keepdims, name):
    shape, axis = sa
    x = _with_zeros(shape, seed, 0) if name == "prod" else \
        np.random.default_rng(seed).standard_normal(shape)
    fn = _SMOOTH[name]
    check_grads(lambda x: fn(x, axis=axis, keepdims=keepdims), (x,), order=2)


@given(_np_axis(), _seed(), st.booleans())
def test_numpy_std(sa, seed, keepdims):
    shape, axis = sa
    n = int(np.prod([shape[a] for a in ([axis] if isinstance(axis, int) else
                                        axis if axis is not None else range(len(shape)))]))
    assume(n >= 2)  # std of one value is 0: sqrt is not differentiable there
    x = _distinct(shape, seed)
    check_grads(lambda x: mnp.std(x, axis=axis, keepdims=keepdims), (x,), order=2)


@given(_np_axis(), _seed(), st.booleans(),
       st.sampled_from([mnp.max, mnp.min, mnp.amax]))
def test_numpy_max_min(sa, seed, keepdims, fn):
    shape, axis = sa
    x = _distinct(shape, seed)
    check_grads(lambda x: fn(x, axis=axis, keepdims=keepdims), (x,), order=2)


@pytest.mark.parametrize("name", ["sum", "mean", "var", "prod", "max", "min", "logsumexp"])
def test_numpy_reductions_with_where(name):
    x = _distinct((3, 4), 1)
    where = np.array([[True, False, True, True], [False, True, True, False],
                      [True, True, False, True]])
    fns = dict(_SMOOTH, max=mnp.max, min=mnp.min)
    kw = {"max": {"initial": -10.0}, "min": {"initial": 10.0}}.get(name, {})
    fn = fns[name]
    check_grads(lambda x: fn(x, axis=-1, where=where, **kw), (x,), order=2)
    # the masked-out entries get no gradient
    g = np.asarray(mt.grad(lambda x: mnp.sum(fn(x, axis=1, where=where, **kw)))(
        mnp.asarray(x)))
    assert (g[~where] == 0).all()


@given(_shape_axis(min_side=1), _seed())
def test_numpy_cumsum_cumprod(sa, seed):
    shape, axis = sa
    x = _with_zeros(shape, seed, 1)
    check_grads(lambda x: mnp.cumsum(x, axis=axis), (x,), order=2)
    check_grads(lambda x: mnp.cumprod(x, axis=axis), (x,), order=2)
    check_grads(lambda x: mnp.cumprod(x), (x,), order=1)


def test_numpy_exact_derivatives():
    x = mnp.asarray(np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_allclose(np.asarray(mt.grad(lambda x: mnp.mean(x))(x)), 0.25)
    np.testing.assert_allclose(np.asarray(mt.grad(lambda x: mnp.var(x))(x)),
                               2 * (np.asarray(x) - 2.5) / 4)
    np.testing.assert_allclose(np.asarray(mt.grad(lambda x: mnp.prod(x))(x)),
                               [[24, 12], [8, 6]])
    sm = np.exp(np.asarray(x)) / np.exp(np.asarray(x)).sum()
    np.testing.assert_allclose(np.asarray(mt.grad(lambda x: logsumexp(x))(x)), sm)


@given(_shape_axes(min_side=1), _seed(), st.booleans(), st.sampled_from([None, 1, 2, 3]))
def test_numpy_vector_norm(sa, seed, keepdims, ord):
    shape, axes = sa
    assume(len(shape) >= 1)
    axis = axes[0] if axes else -1
    x = _distinct(shape, seed)  # distinct values: no zero entries for ord=1's |x|
    x = np.where(np.abs(x) < 0.05, 0.3, x)
    check_grads(lambda x: mnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims), (x,),
                order=2)


@given(st.integers(2, 3), st.integers(2, 3), _seed(), st.sampled_from([None, "fro", 1, np.inf]))
def test_numpy_matrix_norm(m, n, seed, ord):
    x = _distinct((m, n), seed)
    x = np.where(np.abs(x) < 0.05, 0.3, x)
    check_grads(lambda x: mnp.linalg.norm(x, ord=ord), (x,), order=2)
