"""mytorch.scipy.fft (dct, idct, dctn, idctn of types 2 and 3) against scipy.fft: values
for every norm, length and axis, derivatives against float64 finite differences, vmap
against a loop, jit against eager, and scipy's errors."""

import numpy as np
import pytest
import scipy.fft as sfft
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
from mytorch.scipy import fft
from tests.autodiff.fd import check_grads

NORMS = [None, "backward", "ortho", "forward"]


def _settings(n):
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _check(got, want, single):
    got = np.asarray(got)
    assert got.shape == want.shape
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    tol = 1e-4 if single else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("name", ["dct", "idct"])
@pytest.mark.parametrize("type", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128, np.int32])
@_settings(20)
@given(data=st.data())
def test_one_axis_matches_scipy(x64, name, type, dtype, data):
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = data.draw(st.one_of(st.none(), st.integers(1, 9)))
    norm = data.draw(st.sampled_from(NORMS))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal(shape)
    if dtype == np.complex128:
        x = x + 1j * rng.standard_normal(shape)
    x = x.astype(dtype) if dtype != np.int32 else rng.integers(-4, 5, shape).astype(dtype)
    got = getattr(fft, name)(x, type=type, n=n, axis=axis, norm=norm)
    want = getattr(sfft, name)(x, type=type, n=n, axis=axis, norm=norm)
    assert got.dtype == (np.float32 if dtype == np.float32 else want.dtype)
    _check(got, want, dtype == np.float32)


@pytest.mark.parametrize("name", ["dctn", "idctn"])
@pytest.mark.parametrize("type", [2, 3])
@_settings(20)
@given(data=st.data())
def test_n_axes_match_scipy(x64, name, type, data):
    ndim = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    k = data.draw(st.integers(1, ndim))
    axes = data.draw(st.one_of(st.none(), st.permutations(range(ndim)).map(
        lambda p: [a - ndim if a % 2 else a for a in p[:k]])))
    s = data.draw(st.one_of(st.none(), st.lists(st.integers(1, 5), min_size=k, max_size=k)))
    norm = data.draw(st.sampled_from(NORMS))
    x = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).standard_normal(shape)
    got = getattr(fft, name)(x, type=type, s=s, axes=axes, norm=norm)
    want = getattr(sfft, name)(x, type=type, s=s, axes=axes, norm=norm)
    _check(got, want, False)


@pytest.mark.parametrize("type", [2, 3])
@pytest.mark.parametrize("norm", NORMS)
def test_idct_inverts_dct(type, norm):
    x = np.random.default_rng(0).standard_normal((3, 7)).astype(np.float32)
    y = fft.idctn(fft.dctn(x, type=type, norm=norm), type=type, norm=norm)
    _check(y, x.astype(np.float64), True)


@pytest.mark.parametrize("name", ["dct", "idct", "dctn", "idctn"])
@pytest.mark.parametrize("type", [2, 3])
def test_derivatives_match_finite_differences(x64, name, type):
    x = np.random.default_rng(1).standard_normal((4, 5))
    kwargs = dict(n=7, axis=0, norm="ortho") if name in ("dct", "idct") else dict(s=(3, 6))
    check_grads(lambda v: getattr(fft, name)(v, type=type, **kwargs), (x,), order=2)
    z = x + 1j * np.random.default_rng(2).standard_normal(x.shape)
    check_grads(lambda v: getattr(fft, name)(v, type=type), (z,), order=1)


def test_vmap_and_jit():
    xs = np.random.default_rng(3).standard_normal((4, 3, 6)).astype(np.float32)
    f = lambda v: fft.dctn(v, type=3, norm="ortho")  # noqa: E731
    got = mt.vmap(f, in_axes=1)(xs)
    want = np.stack([np.asarray(f(xs[:, i])) for i in range(xs.shape[1])])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(mt.jit(f)(xs)), np.asarray(f(xs)), rtol=1e-6,
                               atol=1e-6)


def test_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="dct: DCT type 1 is not supported; types 2 and 3"):
        fft.dct(x, type=1)
    with pytest.raises(ValueError, match="idctn: invalid norm value 'x'"):
        fft.idctn(x, norm="x")
    with pytest.raises(ValueError, match=r"dct: invalid number of data points \(0\)"):
        fft.dct(x, n=0)
    with pytest.raises(ValueError, match="dctn: repeated axis"):
        fft.dctn(x, axes=(1, -1))
    with pytest.raises(ValueError, match="dctn: shape and axes have different lengths"):
        fft.dctn(x, s=(2, 3), axes=(0,))
    with pytest.raises(ValueError, match=r"idct: axis 2 is out of bounds for f32\[2,3\]"):
        fft.idct(x, axis=2)
