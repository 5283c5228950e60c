"""mt.scipy.linalg.solve_sylvester against scipy.linalg.solve_sylvester: values (real,
complex, batched), the residual a x + x b - c, float64 finite-difference derivatives,
vmap against a loop, jit against eager, and singular equations."""

import numpy as np
import pytest
import scipy.linalg as sl

import mytorch as mt
from mytorch.scipy import linalg as L
from tests.autodiff.fd import check_grads


def _inputs(rng, m, n, complex_, batch=()):
    def draw(*shape):
        x = rng.standard_normal(batch + shape)
        return x + 1j * rng.standard_normal(batch + shape) if complex_ else x
    return draw(m, m), draw(n, n), draw(m, n)


@pytest.mark.parametrize("m, n", [(1, 1), (3, 3), (4, 2), (1, 5)])
@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_values_match_scipy(x64, m, n, complex_, method):
    a, b, c = _inputs(np.random.default_rng(m * 10 + n), m, n, complex_)
    x = np.asarray(L.solve_sylvester(a, b, c, method=method))
    assert x.dtype == (np.complex128 if complex_ else np.float64)
    np.testing.assert_allclose(x, sl.solve_sylvester(a, b, c), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(a @ x + x @ b, c, atol=1e-10)


def test_batches_broadcast_and_vmap_and_jit(x64):
    rng = np.random.default_rng(1)
    a, _, c = _inputs(rng, 3, 3, False, (2,))
    b = rng.standard_normal((3, 3))
    want = np.stack([sl.solve_sylvester(a[i], b, c[i]) for i in range(2)])
    np.testing.assert_allclose(np.asarray(L.solve_sylvester(a, b, c)), want, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(mt.vmap(L.solve_sylvester, (0, None, 0))(a, b, c)),
                               want, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(mt.jit(L.solve_sylvester)(a, b, c)), want,
                               rtol=1e-9)


@pytest.mark.parametrize("complex_", [False, True])
def test_derivatives_match_finite_differences(x64, complex_):
    args = _inputs(np.random.default_rng(2), 3, 2, complex_)
    check_grads(L.solve_sylvester, args, order=1)


def test_singular_equations_give_nans_and_errors_name_the_function():
    # eig(a) = 1 and eig(b) = -1 sum to 0
    x = np.asarray(L.solve_sylvester(np.eye(2), -np.eye(2), np.ones((2, 2))))
    assert np.isnan(x).all()
    with pytest.raises(ValueError, match=r"solve_sylvester: c must be \[\.\.\., 2, 3\]"):
        L.solve_sylvester(np.eye(2), np.eye(3), np.ones((3, 2)))
    with pytest.raises(ValueError, match="solve_sylvester: method must be"):
        L.solve_sylvester(np.eye(2), np.eye(2), np.ones((2, 2)), method="bad")
