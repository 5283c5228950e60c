"""lax functions built from other lax functions: associative_scan over pytrees, reduce with
any computation, collapse, population_count and clz; checked against NumPy and Python's
own integer bit counts, under jit, vmap and grad."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from tests.autodiff.fd import check_grads
from tests.strategies import arrays


@given(arrays(np.float32, st.sampled_from([(1,), (5,), (3, 4), (2, 3, 5)]), min_value=-3,
              max_value=3), st.booleans(), st.data())
def test_associative_scan_matches_cumulative_numpy(x, reverse, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
    ref = flip(np.cumsum(flip(x.astype(np.float64)), axis=axis))
    np.testing.assert_allclose(lax.associative_scan(lax.add, x, reverse, axis), ref,
                               rtol=1e-5, atol=1e-5)
    pair = lax.associative_scan(lambda a, b: (a[0] + b[0], lax.max(a[1], b[1])),
                                (x, x * 2), reverse, axis)
    np.testing.assert_allclose(pair[0], ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pair[1], flip(np.maximum.accumulate(flip(x * 2), axis=axis)))


def test_associative_scan_of_affine_maps_is_a_linear_recurrence():
    """h_t = a_t h_{t-1} + b_t as a scan of (a, b) pairs, against the loop."""
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.5, 1, 7).astype(np.float32), rng.normal(size=7).astype(np.float32)
    combine = lambda l, r: (l[0] * r[0], r[0] * l[1] + r[1])  # noqa: E731
    _, h = mt.jit(lambda a, b: lax.associative_scan(combine, (a, b)))(a, b)
    ref, acc = [], 0.0
    for t in range(7):
        acc = a[t] * acc + b[t]
        ref.append(acc)
    np.testing.assert_allclose(h, ref, rtol=1e-5)


def test_associative_scan_derivatives_and_vmap(x64):
    x = np.random.default_rng(1).normal(size=(3, 6))
    check_grads(lambda v: lax.associative_scan(lax.mul, v, axis=1), (x,))
    got = mt.vmap(lambda v: lax.associative_scan(lax.add, v))(x)
    np.testing.assert_allclose(got, np.cumsum(x, axis=1))


@given(arrays(np.float32, st.sampled_from([(4,), (3, 5), (2, 3, 4)]), min_value=-2,
              max_value=2), st.data())
def test_reduce_monoids_and_general_computations(x, data):
    dims = tuple(data.draw(st.sets(st.integers(0, x.ndim - 1), min_size=1)))
    np.testing.assert_allclose(lax.reduce(x, 0.0, lax.add, dims), x.sum(axis=dims), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(lax.reduce(x, -np.inf, mnp.maximum, dims), x.max(axis=dims))
    # a computation lax does not recognise goes through the pairwise tree
    np.testing.assert_allclose(lax.reduce(x, 0.0, lambda a, b: a + b, dims),
                               x.sum(axis=dims), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lax.reduce(x, 5.0, lambda a, b: mnp.minimum(a, b), dims),
                               np.minimum(x.min(axis=dims), 5.0))
    s, m = lax.reduce((x, x), (0.0, -np.inf),
                      lambda a, b: (a[0] + b[0], mnp.maximum(a[1], b[1])), dims)
    np.testing.assert_allclose(s, x.sum(axis=dims), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(m, x.max(axis=dims))


def test_reduce_lowers_a_monoid_to_its_primitive_and_differentiates(x64):
    jaxpr = mt.make_jaxpr(lambda x: lax.reduce(x, 0.0, lax.add, (0,)))(mnp.ones(3))
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["reduce_sum"]
    x = np.random.default_rng(2).normal(size=(3, 4))
    check_grads(lambda v: lax.reduce(v, 1.0, lambda a, b: a * b, (1,)), (x,))
    with pytest.raises(TypeError, match="same structure"):
        lax.reduce((x, x), 0.0, lax.add, (0,))


def test_collapse():
    x = mnp.ones((2, 3, 4, 5))
    assert lax.collapse(x, 0, 2).shape == (6, 4, 5)
    assert lax.collapse(x, 1).shape == (2, 60)
    assert lax.collapse(x, 1, -1).shape == (2, 12, 5)
    with pytest.raises(ValueError, match="collapse"):
        lax.collapse(x, 3, 1)


@given(st.sampled_from([np.int8, np.uint8, np.int16, np.int32, np.uint32]), st.data())
def test_population_count_and_clz_match_python(dtype, data):
    info = np.iinfo(dtype)
    vals = np.array(data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=1,
                                       max_size=8)), dtype)
    bits = 8 * vals.itemsize
    as_unsigned = [int(v) & ((1 << bits) - 1) for v in vals]
    pc = mt.jit(lax.population_count)(vals)
    cz = lax.clz(vals)
    assert pc.dtype == dtype and cz.dtype == dtype
    assert pc.tolist() == [bin(u).count("1") for u in as_unsigned]
    assert cz.tolist() == [bits - u.bit_length() for u in as_unsigned]
    with pytest.raises(TypeError, match="population_count: expected an integer array"):
        lax.population_count(mnp.ones(2))
