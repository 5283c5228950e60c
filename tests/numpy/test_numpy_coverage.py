"""NumPy functions a ported notebook reaches for beyond the core: index tricks, set
operations, convolve/correlate/interp/gradient, polynomials, cov/corrcoef, multi-d
histograms, apply_along_axis, fill_diagonal, spacing, packbits. Each is checked against
NumPy on drawn inputs, and under jit (and vmap where batching applies) against itself."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from tests.autodiff.fd import check_grads
from tests.strategies import arrays

small_ints = st.lists(st.integers(-4, 4), min_size=0, max_size=8).map(np.array)
floats_1d = lambda lo=1, hi=8: arrays(np.float32, st.integers(lo, hi).map(lambda n: (n,)))  # noqa: E731


# ---- index tricks ---------------------------------------------------------------------------
def test_mgrid_ogrid_match_numpy():
    for key in [np.s_[0:2, 0:3], np.s_[-1:2:0.5, 1:4], np.s_[0:1:5j, 2:3:3j], np.s_[3:0:-1]]:
        dense, sparse = mnp.mgrid[key], mnp.ogrid[key]
        ref_d, ref_s = np.mgrid[key], np.ogrid[key]
        np.testing.assert_allclose(dense, ref_d, rtol=1e-6)
        if isinstance(ref_s, (list, tuple)):
            for a, b in zip(sparse, ref_s, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-6)
        else:
            np.testing.assert_allclose(sparse, ref_s, rtol=1e-6)
    assert mnp.mgrid[0:2, 0:3].dtype == np.int32 and mnp.mgrid[0:1:3j].dtype == np.float32


@pytest.mark.parametrize("directive", ["0,2,0", "1,2,0", "-1,3,1", "0,3,-1", "1,3,0", "0,2"])
def test_r_directives_match_numpy(directive):
    a, b = [1, 2, 3], np.arange(3.0)
    np.testing.assert_array_equal(mnp.r_[directive, a, b], np.r_[directive, a, b])


def test_r_c_join_arrays_scalars_and_slices():
    np.testing.assert_array_equal(mnp.r_[mnp.array([1, 2]), 3, 4], np.r_[np.array([1, 2]), 3, 4])
    np.testing.assert_allclose(mnp.r_[0:3, 5, 0:1:3j], np.r_[0:3, 5, 0:1:3j])
    np.testing.assert_array_equal(mnp.c_[mnp.array([1, 2]), mnp.array([3, 4])],
                                  np.c_[np.array([1, 2]), np.array([3, 4])])
    np.testing.assert_array_equal(mnp.c_[np.ones((2, 2)), np.zeros((2, 1))],
                                  np.c_[np.ones((2, 2)), np.zeros((2, 1))])
    assert mnp.s_[1:2, ::3] == np.s_[1:2, ::3] and mnp.index_exp[1] == (1,)
    with pytest.raises(ValueError, match="r_: unknown directive 'x'"):
        mnp.r_["x", [1]]


@given(st.sampled_from([(3, 4), (5, 3), (3, 3, 3), (2, 2), (4, 1)]), st.booleans(),
       st.integers(1, 5))
def test_fill_diagonal_matches_numpy(shape, wrap, nval):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    val = np.arange(nval, dtype=np.float32) + 100
    ref = a.copy()
    np.fill_diagonal(ref, val, wrap=wrap)
    np.testing.assert_array_equal(mnp.fill_diagonal(a, val, wrap=wrap, inplace=False), ref)
    with pytest.raises(ValueError, match="inplace=False"):
        mnp.fill_diagonal(a, 1.0)


# ---- set operations ---------------------------------------------------------------------------
@given(small_ints, small_ints)
def test_set_operations_match_numpy(a, b):
    np.testing.assert_array_equal(mnp.isin(a, b), np.isin(a, b))
    np.testing.assert_array_equal(mnp.isin(a, b, invert=True), np.isin(a, b, invert=True))
    for name in ("setdiff1d", "union1d", "intersect1d", "setxor1d"):
        got, ref = getattr(mnp, name)(a, b), getattr(np, name)(a, b)
        np.testing.assert_array_equal(got, ref.astype(np.int32), err_msg=name)
    got = mnp.intersect1d(a, b, return_indices=True)
    for g, r in zip(got, np.intersect1d(a, b, return_indices=True), strict=True):
        np.testing.assert_array_equal(g, r)


@given(small_ints.filter(len), small_ints, st.integers(1, 10))
def test_set_operations_with_size_under_jit(a, b, size):
    """Under jit the size is static; the real entries equal NumPy's and the rest padding."""
    for name, default_fill in (("setdiff1d", 0), ("union1d", None), ("intersect1d", None),
                               ("setxor1d", None)):
        ref = getattr(np, name)(a, b)
        got = mt.jit(lambda x, y: getattr(mnp, name)(x, y, size=size))(a, b)  # noqa: B023
        k = min(size, len(ref))
        np.testing.assert_array_equal(got[:k], ref[:k], err_msg=name)
        if size > len(ref):
            fill = default_fill if default_fill is not None else (ref[0] if len(ref) else 0)
            np.testing.assert_array_equal(got[k:], np.full(size - k, fill), err_msg=name)


def test_isin_nan_and_shapes():
    x = np.array([[1.0, np.nan], [3.0, 4.0]], np.float32)
    np.testing.assert_array_equal(mnp.isin(x, [np.nan, 4.0]), np.isin(x, [np.nan, 4.0]))
    np.testing.assert_array_equal(mnp.isin(x, []), np.zeros((2, 2), bool))


# ---- convolve, correlate, interp, gradient --------------------------------------------------
@given(floats_1d(), floats_1d(), st.sampled_from(["full", "same", "valid"]))
def test_convolve_correlate_match_numpy(a, v, mode):
    a64, v64 = a.astype(np.float64), v.astype(np.float64)
    scale = np.abs(a64).sum() * np.abs(v64).max() + 1
    got = mnp.convolve(a, v, mode)
    np.testing.assert_allclose(got, np.convolve(a64, v64, mode), atol=1e-6 * scale)
    got = mnp.correlate(a, v, mode)
    np.testing.assert_allclose(got, np.correlate(a64, v64, mode), atol=1e-6 * scale)
    assert mnp.convolve(a.astype(np.int32), v.astype(np.int32)).dtype == np.float32


def test_convolve_derivatives(x64):
    rng = np.random.default_rng(0)
    a, v = rng.normal(size=5), rng.normal(size=3)
    for mode in ("full", "same", "valid"):
        check_grads(lambda p, q: mnp.convolve(p, q, mode), (a, v))  # noqa: B023
        check_grads(lambda p, q: mnp.correlate(q, p, mode), (a, v))  # noqa: B023


@given(arrays(np.float32, (12,), min_value=-3, max_value=3),
       st.lists(st.floats(-2, 2), min_size=2, max_size=6, unique=True))
def test_interp_matches_numpy(x, xp):
    xp = np.sort(np.array(xp, np.float32))
    assume(len(np.unique(xp)) == len(xp))  # equal sample positions have no slope
    fp = np.cos(np.arange(len(xp), dtype=np.float32))
    np.testing.assert_allclose(mnp.interp(x, xp, fp), np.interp(x, xp, fp), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(mnp.interp(x, xp, fp, left=-7, right=9),
                               np.interp(x, xp, fp, left=-7, right=9), rtol=1e-5, atol=1e-5)
    reduced = np.sort(xp.astype(np.float64) % 2.5)
    gaps = np.diff(np.concatenate([reduced, reduced[:1] + 2.5]))
    if gaps.min() > 1e-3:  # positions float32 rounding cannot merge modulo the period
        np.testing.assert_allclose(mnp.interp(x, xp, fp, period=2.5),
                                   np.interp(x, xp, fp, period=2.5), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mt.jit(mnp.interp)(x, xp, fp), np.interp(x, xp, fp),
                               rtol=1e-5, atol=1e-5)


@given(st.sampled_from([(5,), (4, 6), (3, 4, 5)]), st.sampled_from([1, 2]),
       st.sampled_from(["none", "scalar", "coords"]), st.data())
def test_gradient_matches_numpy(shape, edge_order, spacing, data):
    f = np.random.default_rng(len(shape)).normal(size=shape)
    if spacing == "none":
        args = ()
    elif spacing == "scalar":
        args = tuple(data.draw(st.floats(0.1, 3)) for _ in shape)
    else:
        args = tuple(np.cumsum(np.random.default_rng(n).random(n) + 0.2) for n in shape)
    ref = np.gradient(f, *args, edge_order=edge_order)
    got = mnp.gradient(f.astype(np.float32), *args, edge_order=edge_order)
    for g, r in zip(got if len(shape) > 1 else [got], ref if len(shape) > 1 else [ref],
                    strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)
    ax = len(shape) - 1
    np.testing.assert_allclose(mnp.gradient(f.astype(np.float32), axis=-1),
                               np.gradient(f, axis=ax), rtol=1e-4, atol=1e-4)


def test_gradient_errors():
    with pytest.raises(ValueError, match="edge_order must be 1 or 2"):
        mnp.gradient(mnp.ones(4), edge_order=3)
    with pytest.raises(ValueError, match="at least 3 samples"):
        mnp.gradient(mnp.ones(2), edge_order=2)


# ---- polynomials ---------------------------------------------------------------------------
coeffs = st.lists(st.integers(-5, 5), min_size=1, max_size=5).map(
    lambda c: np.array(c, np.float32))


@given(coeffs, coeffs, arrays(np.float32, (4,), min_value=-2, max_value=2))
def test_polynomials_match_numpy(p, q, x):
    np.testing.assert_allclose(mnp.polyval(p, x), np.polyval(p, x), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(mnp.polyadd(p, q), np.polyadd(p, q))
    np.testing.assert_allclose(mnp.polysub(p, q), np.polysub(p, q))
    np.testing.assert_allclose(mnp.polymul(p, q), np.convolve(p, q), atol=1e-5)
    for m in (1, 2):
        np.testing.assert_allclose(mnp.polyder(p, m), np.polyder(p, m), atol=1e-5)
        np.testing.assert_allclose(mnp.polyint(p, m), np.polyint(p, m), rtol=1e-6)
    np.testing.assert_allclose(mnp.polyint(p, 2, k=[1.0, 2.0]), np.polyint(p, 2, k=[1, 2]),
                               rtol=1e-6)


def test_polyval_dtypes_and_grad():
    assert mnp.polyval(mnp.array([1, 2, 3]), 2).dtype == np.int32
    assert int(mnp.polyval(mnp.array([1, 2, 3]), 2)) == 11
    assert mnp.polymul(mnp.array([1, 2]), mnp.array([3])).dtype == np.float32
    g = mt.grad(lambda x: mnp.polyval(mnp.array([1.0, -2.0, 3.0, 4.0]), x))(1.5)
    np.testing.assert_allclose(g, 3 * 1.5 ** 2 - 4 * 1.5 + 3, rtol=1e-6)


# ---- covariance and histograms --------------------------------------------------------------
@given(st.integers(1, 4), st.integers(2, 9), st.booleans(), st.booleans())
def test_cov_corrcoef_match_numpy(nvar, nobs, rowvar, weighted):
    rng = np.random.default_rng(nvar * 10 + nobs)
    x = rng.normal(size=(nvar, nobs) if rowvar else (nobs, nvar))
    y = rng.normal(size=x.shape)
    kw = dict(fweights=rng.integers(1, 4, nobs), aweights=rng.random(nobs) + 0.1) \
        if weighted else {}
    np.testing.assert_allclose(mnp.cov(x, rowvar=rowvar, **kw), np.cov(x, rowvar=rowvar, **kw),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mnp.cov(x, y, rowvar=rowvar, bias=True),
                               np.cov(x, y, rowvar=rowvar, bias=True), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mnp.corrcoef(x, y, rowvar=rowvar),
                               np.corrcoef(x, y, rowvar=rowvar), rtol=1e-4, atol=1e-5)


@given(st.integers(1, 3), st.sampled_from([3, [2, 3, 4]]), st.booleans(), st.booleans())
def test_histogramdd_matches_numpy(d, bins, weighted, density):
    rng = np.random.default_rng(d)
    s = rng.normal(size=(40, d))
    bins = bins if isinstance(bins, int) else bins[:d]
    w = rng.random(40) if weighted else None
    ref, ref_edges = np.histogramdd(s, bins=bins, weights=w, density=density)
    got, edges = mnp.histogramdd(s.astype(np.float32), bins=bins, weights=w, density=density)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-6)
    for e, r in zip(edges, ref_edges, strict=True):
        np.testing.assert_allclose(e, r, rtol=1e-5, atol=1e-6)
    if not weighted and not density:
        assert got.dtype == np.int32  # integer counts, as JAX's histogramdd


def test_histogram2d_matches_numpy():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=30), rng.normal(size=30)
    ref = np.histogram2d(x, y, bins=(3, 4), range=[(-2, 2), (-1, 1)])
    got = mnp.histogram2d(x, y, bins=(3, 4), range=[(-2, 2), (-1, 1)])
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)


# ---- apply_along_axis, spacing, packbits ----------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_apply_along_axis_matches_numpy(axis):
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    for f in (lambda v: v.sum(), lambda v: v[:2] * 2, lambda v: mnp.outer(v, v)):
        ref = np.apply_along_axis(lambda v: np.asarray(f(mnp.asarray(v))), axis, x)  # noqa: B023
        np.testing.assert_allclose(mnp.apply_along_axis(f, axis, x), ref)
    np.testing.assert_allclose(mnp.apply_over_axes(mnp.sum, x, [0, 2]),
                               np.apply_over_axes(np.sum, x, [0, 2]))


@given(arrays(np.float32, (6,), allow_inf=True, allow_nan=True))
def test_spacing_matches_numpy(x):
    np.testing.assert_array_equal(mnp.spacing(x), np.spacing(x))


@given(arrays(np.int8, st.sampled_from([(9,), (3, 10), (2, 3, 17)]), min_value=0,
              max_value=2), st.data(), st.sampled_from(["big", "little"]))
def test_packbits_roundtrip_matches_numpy(a, data, bitorder):
    axis = data.draw(st.sampled_from([None] + list(range(a.ndim))))
    packed = mnp.packbits(a, axis=axis, bitorder=bitorder)
    ref = np.packbits(a, axis=axis, bitorder=bitorder)
    np.testing.assert_array_equal(packed, ref)
    count = data.draw(st.sampled_from([None, 3, -2]))
    np.testing.assert_array_equal(
        mnp.unpackbits(ref, axis=axis, count=count, bitorder=bitorder),
        np.unpackbits(ref, axis=axis, count=count, bitorder=bitorder))
