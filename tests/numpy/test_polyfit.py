"""mnp.vander and mnp.polyfit against NumPy; polyfit's derivative in y, vmap and jit."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp


@given(st.integers(1, 6), st.integers(0, 6), st.booleans())
def test_vander_matches_numpy(n, N, increasing):
    x = np.linspace(-2, 3, n).astype(np.float32)
    np.testing.assert_allclose(np.asarray(mnp.vander(x, N, increasing)),
                               np.vander(x, N, increasing), rtol=1e-6)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 4), st.integers(0, 1000), st.booleans())
def test_polyfit_matches_numpy(deg, seed, weighted):
    rng = np.random.default_rng(seed)
    n = deg + 1 + int(rng.integers(1, 12))
    x = np.sort(rng.uniform(-2, 2, n))
    y = rng.normal(size=n)
    w = rng.uniform(0.5, 2, n) if weighted else None
    with mt.config.override(enable_x64=True):
        got = mnp.polyfit(x, y, deg, w=w)
        full = mnp.polyfit(x, y, deg, w=w, full=True)
        c, cov = mnp.polyfit(x, y, deg, w=w, cov=True)
    want = np.polyfit(x, y, deg, w=w)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-8, atol=1e-10)
    want_full = np.polyfit(x, y, deg, w=w, full=True)
    np.testing.assert_allclose(np.asarray(full[1]).reshape(-1), want_full[1].reshape(-1),
                               rtol=1e-7, atol=1e-12)
    assert int(full[2]) == want_full[2]
    if n > deg + 1:
        _, want_cov = np.polyfit(x, y, deg, w=w, cov=True)
        np.testing.assert_allclose(np.asarray(cov), want_cov, rtol=1e-6, atol=1e-12)


def test_polyfit_of_several_columns_and_its_derivative_vmap_and_jit():
    x = np.linspace(-1, 1, 9).astype(np.float32)
    ys = np.stack([np.cos(x), x**3], 1).astype(np.float32)
    np.testing.assert_allclose(np.asarray(mnp.polyfit(x, ys, 3)), np.polyfit(x, ys, 3),
                               rtol=1e-4, atol=1e-5)
    # the fit is linear in y: the derivative of sum(coefficients) is that map's row sums
    g = mt.grad(lambda y: mnp.sum(mnp.polyfit(x, y, 2)))(ys[:, 0])
    want = np.linalg.pinv(np.vander(x.astype(np.float64), 3)).sum(0)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-4, atol=1e-5)
    vm = mt.vmap(lambda y: mnp.polyfit(x, y, 2), in_axes=1)(ys)
    np.testing.assert_allclose(np.asarray(vm), np.polyfit(x, ys, 2).T, rtol=1e-4, atol=1e-5)
    jitted = mt.jit(lambda y: mnp.polyfit(x, y, 2))(ys[:, 1])
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(mnp.polyfit(x, ys[:, 1], 2)),
                               rtol=1e-6, atol=1e-6)


def test_polyfit_errors():
    x = np.arange(4.0)
    with pytest.raises(ValueError, match="polyfit: deg must be non-negative"):
        mnp.polyfit(x, x, -1)
    with pytest.raises(TypeError, match=r"polyfit: y must be \[n\] or \[n, k\] with n = "
                                        r"len\(x\) = 4"):
        mnp.polyfit(x, np.ones(3), 1)
    with pytest.raises(ValueError, match="more points than the degree"):
        mnp.polyfit(x, x, 3, cov=True)
