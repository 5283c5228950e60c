"""Derivatives of sort (one or several operands, several keys) and top_k, and of the
mytorch.numpy functions built on them (sort, argsort, median, quantile), against float64
central finite differences to second order in forward and reverse mode; plus exact
permuted tangents (JAX's rules: the tangents follow the permutation; indices get zero)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from tests.autodiff.fd import check_grads
from tests.strategies import shapes

pytestmark = pytest.mark.usefixtures("x64")


def _distinct(shape, seed):
    """Values of `shape` at least 0.25 apart: no ties, so the order is locally constant."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    vals = (rng.permutation(n) - n / 2) * 0.5 + rng.uniform(0.0, 0.2, n)
    return vals.reshape(shape)


def _seed():
    return st.integers(0, 2**32 - 1)


@st.composite
def _shape_axis(draw, min_side=0, max_side=4):
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=min_side, max_side=max_side))
    return shape, draw(st.integers(-len(shape), len(shape) - 1))


# ---- sort ------------------------------------------------------------------------------------
@given(_shape_axis(), _seed())
def test_sort(sa, seed):
    shape, axis = sa
    check_grads(lambda x: lax.sort(x, dimension=axis), (_distinct(shape, seed),), order=2)


@given(_shape_axis(), _seed(), st.booleans())
def test_sort_key_with_payloads(sa, seed, int_payload):
    """One float key carrying a float payload (and an int one): every float output follows
    the key's permutation, in the key and in the payload."""
    shape, axis = sa
    rng = np.random.default_rng(seed)
    keys, vals = _distinct(shape, seed), rng.standard_normal(shape)
    ints = mnp.asarray(rng.integers(0, 5, shape).astype(np.int32))

    def f(k, v):
        ops = (k, v, ints) if int_payload else (k, v)
        return lax.sort(ops, dimension=axis, num_keys=1)[:2]

    check_grads(f, (keys, vals), order=2)


@given(_shape_axis(min_side=1), _seed())
def test_sort_two_keys(sa, seed):
    """Two keys: an integer primary key with ties, a float secondary key that breaks them
    (distinct, so the order does not move under small perturbations), and a payload."""
    shape, axis = sa
    rng = np.random.default_rng(seed)
    primary = mnp.asarray(rng.integers(0, 2, shape).astype(np.int32))
    secondary, payload = _distinct(shape, seed), rng.standard_normal(shape)

    def f(k, v):
        return lax.sort((primary, k, v), dimension=axis, num_keys=2)[1:]

    check_grads(f, (secondary, payload), order=2)


def test_sort_jvp_permutes_tangents():
    k = mnp.asarray(np.array([[3.0, 1.0, 2.0], [0.0, 5.0, -1.0]]))
    v = mnp.asarray(np.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]]))
    idx = mnp.asarray(np.array([[0, 1, 2], [0, 1, 2]], np.int32))
    tk = mnp.asarray(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    (_, sv, si), (tk_out, tv_out, ti_out) = mt.jvp(
        lambda k, v: lax.sort((k, v, idx), dimension=1, num_keys=1), (k, v), (tk, v))
    np.testing.assert_array_equal(np.asarray(si), [[1, 2, 0], [2, 0, 1]])
    np.testing.assert_array_equal(np.asarray(tk_out), [[2.0, 3.0, 1.0], [6.0, 4.0, 5.0]])
    np.testing.assert_array_equal(np.asarray(tv_out), np.asarray(sv))
    np.testing.assert_array_equal(np.asarray(ti_out), 0)
    # reverse mode scatters the cotangent back through the permutation
    g = mt.grad(lambda k: lax.reduce_sum(lax.mul(lax.sort(k, dimension=0),
                                                 mnp.asarray(np.array([1.0, 2.0, 3.0]))),
                                         (0,)))(mnp.asarray(np.array([3.0, 1.0, 2.0])))
    np.testing.assert_array_equal(np.asarray(g), [3.0, 1.0, 2.0])


# ---- top_k -----------------------------------------------------------------------------------
@st.composite
def _top_k_case(draw):
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    return shape, draw(st.integers(0, shape[-1]))


@given(_top_k_case(), _seed())
def test_top_k(case, seed):
    shape, k = case
    check_grads(lambda x: lax.top_k(x, k)[0], (_distinct(shape, seed),), order=2)


def test_top_k_jvp_gathers_tangents():
    x = mnp.asarray(np.array([[1.0, 4.0, 2.0, 3.0], [8.0, 5.0, 7.0, 6.0]]))
    t = mnp.asarray(np.array([[10.0, 20.0, 30.0, 40.0], [50.0, 60.0, 70.0, 80.0]]))
    (_, idx), (t_vals, t_idx) = mt.jvp(lambda x: lax.top_k(x, 2), (x,), (t,))
    np.testing.assert_array_equal(np.asarray(idx), [[1, 3], [0, 2]])
    np.testing.assert_array_equal(np.asarray(t_vals), [[20.0, 40.0], [50.0, 70.0]])
    np.testing.assert_array_equal(np.asarray(t_idx), 0)
    g = mt.grad(lambda x: lax.reduce_sum(lax.top_k(x, 2)[0], (0, 1)))(x)
    np.testing.assert_array_equal(np.asarray(g), [[0, 1, 0, 1], [1, 0, 1, 0]])


# ---- through mytorch.numpy -------------------------------------------------------------------
@given(_shape_axis(min_side=1), _seed(), st.booleans(), st.booleans())
def test_numpy_sort(sa, seed, descending, flat):
    shape, axis = sa
    axis = None if flat else axis
    check_grads(lambda x: mnp.sort(x, axis=axis, descending=descending),
                (_distinct(shape, seed),), order=2)


def test_numpy_argsort_has_zero_derivative():
    x = _distinct((3, 4), 3)

    def f(x):
        order = lax.convert_element_type(mnp.argsort(x, axis=-1), x.dtype)
        return lax.mul(order, x)

    check_grads(f, (x,), order=2)
    _, t = mt.jvp(lambda x: mnp.argsort(x, axis=0), (mnp.asarray(x),), (mnp.ones((3, 4)),))
    np.testing.assert_array_equal(np.asarray(t), 0)


@given(_shape_axis(min_side=1), _seed(), st.booleans())
def test_numpy_median(sa, seed, keepdims):
    shape, axis = sa
    check_grads(lambda x: mnp.median(x, axis=axis, keepdims=keepdims),
                (_distinct(shape, seed),), order=2)


@given(_shape_axis(min_side=1), _seed(),
       st.lists(st.floats(0.0, 1.0), min_size=1, max_size=3),
       st.sampled_from(["linear", "lower", "higher", "nearest", "midpoint"]))
def test_numpy_quantile(sa, seed, q, method):
    shape, axis = sa
    q = np.array(q)
    check_grads(lambda x: mnp.quantile(x, q, axis=axis, method=method),
                (_distinct(shape, seed),), order=2)


def test_numpy_median_exact():
    x = mnp.asarray(np.array([5.0, 1.0, 4.0, 2.0]))
    np.testing.assert_allclose(np.asarray(mt.grad(mnp.median)(x)), [0, 0, 0.5, 0.5])
    g = mt.grad(lambda x: mnp.quantile(x, 0.25))(x)  # position 0.75 between 1.0 and 2.0
    np.testing.assert_allclose(np.asarray(g), [0, 0.25, 0, 0.75])
