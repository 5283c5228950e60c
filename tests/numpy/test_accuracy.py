"""Rounding error of float32 sums and running sums, against float64 references.

NumPy's own float32 `cumsum` and its sums along a strided axis add one element after another,
so their error grows like n (a 1e6-long cumsum: 2.3e-5 relative; `sum(axis=0)` of a
(10000, 10) array: 3e-6). mytorch sums in blocks, so the error grows like log n, as JAX's
(about 2e-7 on the same data); the bounds below sit between the two.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp

F32 = np.float32


def rel_err(got, want):
    """Largest absolute error relative to the largest magnitude of the reference."""
    got = np.asarray(got, np.float64)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def both(fn):
    """fn eagerly and under jit."""
    return [fn, mt.jit(fn)]


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_long_cumsum(mode):
    x = np.random.default_rng(0).random(10**6).astype(F32)
    fn = both(mnp.cumsum)[mode == "jit"]
    assert rel_err(fn(x), np.cumsum(x.astype(np.float64))) < 1e-6  # sequential: 2.3e-5


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("axis,shape", [(0, (10000, 10)), (1, (10, 20000)), (1, (3, 700, 2))])
def test_cumsum_along_any_axis(mode, axis, shape):
    x = np.random.default_rng(1).random(shape).astype(F32)
    fn = both(lambda v: mnp.cumsum(v, axis=axis))[mode == "jit"]
    assert rel_err(fn(x), np.cumsum(x.astype(np.float64), axis=axis)) < 1e-6


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("name,axis,shape", [
    ("sum", 0, (10000, 10)),         # NumPy adds the 10000 rows one after another: 3e-6
    ("mean", 0, (10000, 10)),
    ("sum", (0, 1), (100, 100, 10)),
    ("mean", (0, 2), (3000, 3, 40)),
    ("sum", 1, (4, 5000, 6)),
    ("var", 0, (20000, 3)),
])
def test_sum_along_strided_axes(mode, name, axis, shape):
    x = (np.random.default_rng(2).random(shape) + 0.5).astype(F32)
    fn = both(lambda v: getattr(mnp, name)(v, axis=axis))[mode == "jit"]
    want = getattr(np, name)(x.astype(np.float64), axis=axis)
    assert rel_err(fn(x), want) < 1e-6


def test_sum_of_a_transposed_view_and_float16():
    x = np.random.default_rng(3).random((10, 20000)).astype(F32)
    got = mnp.sum(mnp.asarray(x).T, axis=0)
    assert rel_err(got, x.astype(np.float64).sum(1)) < 1e-6
    h = (np.random.default_rng(3).random((4000, 3)) + 0.5).astype(np.float16)
    got = mnp.sum(h, axis=0)  # accumulated in float32, rounded once to float16
    want = h.astype(np.float64).sum(0)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-3)


@given(n=st.integers(1, 3000), reverse=st.booleans(), op=st.sampled_from(
    ["cumsum", "cumprod", "cumlogsumexp"]), inner=st.integers(1, 3))
@settings(deadline=None)
def test_blocked_scans_match_numpy(n, reverse, op, inner):
    """Every length around the block size (128), both directions, a trailing axis."""
    rng = np.random.default_rng(n)
    x = (1 + (rng.random((n, inner)) - 0.5) * 1e-2).astype(F32)
    got = getattr(mt.lax, op)(mnp.asarray(x), axis=0, reverse=reverse)
    x64 = x.astype(np.float64)[::-1] if reverse else x.astype(np.float64)
    fn = {"cumsum": np.cumsum, "cumprod": np.cumprod,
          "cumlogsumexp": np.logaddexp.accumulate}[op]
    want = fn(x64, axis=0)
    want = want[::-1] if reverse else want
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=3e-6 * np.log2(n + 1))


@given(shape=st.lists(st.integers(1, 700), min_size=1, max_size=3).filter(
    lambda s: np.prod(s) <= 200000), data=st.data())
@settings(deadline=None)
def test_blocked_sums_match_numpy(shape, data):
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(F32)
    got = mnp.sum(x, axis=tuple(axes))
    want = x.astype(np.float64).sum(tuple(axes))
    scale = np.abs(x).astype(np.float64).sum(tuple(axes))  # the error bound's scale
    assert np.all(np.abs(np.asarray(got, np.float64) - want) <= 1e-6 * scale + 1e-30)


def test_integer_scans_and_sums_stay_exact():
    x = np.arange(-3000, 3000, dtype=np.int32).reshape(600, 10)
    np.testing.assert_array_equal(mnp.cumsum(x, axis=0), np.cumsum(x, axis=0))
    np.testing.assert_array_equal(mnp.sum(x, axis=0), x.sum(0))
    i8 = np.full(1000, 3, np.int8)  # wraps as NumPy's int8 cumsum does
    np.testing.assert_array_equal(mnp.cumsum(i8), np.cumsum(i8, dtype=np.int8))
