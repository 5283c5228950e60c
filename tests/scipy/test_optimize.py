"""mytorch.scipy.optimize.minimize (BFGS) on problems with known minima: Rosenbrock and
convex quadratics from hypothesis-drawn starts, eagerly, under jit and vmapped over x0
(each vmapped problem against its own eager run)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.scipy.optimize import OptimizeResults, line_search, minimize
from tests.strategies import assert_close

F32 = np.float32


def rosenbrock(x):
    return mnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _quadratic(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n))
    h = (a @ a.T + n * np.eye(n)).astype(F32)
    b = rng.standard_normal(n).astype(F32)
    return h, b


def quadratic(x, h, b):
    return 0.5 * x @ h @ x - b @ x


starts = st.lists(st.floats(-2.0, 2.0, width=32), min_size=2, max_size=2)
fixture_ok = settings(deadline=None, max_examples=8,
                      suppress_health_check=[HealthCheck.function_scoped_fixture])

# float32 gradients carry roundoff of about |f''| |x| 1e-7, and near the optimum f stops
# decreasing at float32 resolution: the default gtol of 1e-5 can be out of reach there (the
# line search then fails at the optimum, as in JAX). float32 runs use a tolerance it can
# meet; float64 runs keep the default.
F32_TOL = 1e-3


@fixture_ok
@given(starts)
def test_rosenbrock_float64(x64, x0):
    res = minimize(rosenbrock, np.asarray(x0, np.float64), method="BFGS")
    assert isinstance(res, OptimizeResults)
    assert bool(res.success) and int(res.status) == 0
    # BFGS stops once max|grad| < gtol = 1e-5; near the minimum x - 1 ~ H^-1 grad, and the
    # Hessian there ([[802, -400], [-400, 200]]) has its smallest eigenvalue at 0.399, so x
    # may still be |grad|_2 / 0.399 <= sqrt(2) 1e-5 / 0.399 = 3.5e-5 away (a drawn start,
    # x0 = [0, 0.9217...], stops 1.08e-5 away)
    np.testing.assert_allclose(np.asarray(res.x), np.ones(2), atol=3.6e-5)
    assert float(res.fun) < 1e-10
    assert np.max(np.abs(np.asarray(res.jac))) < 1e-5
    assert int(res.nfev) >= int(res.nit) >= 1


@settings(deadline=None, max_examples=8)
@given(starts)
def test_rosenbrock_float32(x0):
    res = minimize(rosenbrock, np.asarray(x0, F32), method="BFGS", tol=F32_TOL)
    assert res.x.dtype == F32
    assert bool(res.success) and int(res.status) == 0
    assert_close(res.x, np.ones(2), rtol=0, atol=2e-3)
    assert float(res.fun) < 1e-5


@fixture_ok
@given(st.lists(st.floats(-10.0, 10.0), min_size=4, max_size=4), st.integers(0, 1000))
def test_quadratic_float64(x64, x0, seed):
    h, b = (v.astype(np.float64) for v in _quadratic(4, seed))
    res = minimize(quadratic, np.asarray(x0, np.float64), args=(h, b), method="bfgs")
    x_star = np.linalg.solve(h, b)
    assert bool(res.success)
    # |grad| < gtol = 1e-5 and the smallest eigenvalue of h is above n = 4 bound the errors:
    # |x - x*| < gtol / 4, f - f* < |grad|^2 / 8
    np.testing.assert_allclose(np.asarray(res.x), x_star, atol=1e-5)
    np.testing.assert_allclose(float(res.fun), -0.5 * b @ x_star, rtol=0, atol=1e-10)
    # on a quadratic, BFGS with strong Wolfe steps learns the inverse Hessian quickly
    assert int(res.nit) <= 20


@settings(deadline=None, max_examples=8)
@given(st.lists(st.floats(-10.0, 10.0, width=32), min_size=4, max_size=4),
       st.integers(0, 1000))
def test_quadratic_float32(x0, seed):
    h, b = _quadratic(4, seed)
    res = minimize(quadratic, np.asarray(x0, F32), args=(h, b), tol=F32_TOL)
    x_star = np.linalg.solve(h.astype(np.float64), b.astype(np.float64))
    assert bool(res.success)
    assert_close(res.x, x_star, rtol=0, atol=1e-3)
    assert_close(res.fun, -0.5 * b @ x_star, rtol=1e-5, atol=1e-5)


def test_float64_rosenbrock_and_hess_inv(x64):
    res = minimize(rosenbrock, np.array([-1.2, 1.0]), options=dict(gtol=1e-10))
    assert res.x.dtype == np.float64
    np.testing.assert_allclose(np.asarray(res.x), [1.0, 1.0], atol=1e-8)
    # the inverse Hessian estimate approaches the true inverse Hessian at (1, 1)
    hess = np.array([[802.0, -400.0], [-400.0, 200.0]])
    np.testing.assert_allclose(np.asarray(res.hess_inv), np.linalg.inv(hess), rtol=0.2, atol=0.05)


def test_options_maxiter_and_tol():
    res = minimize(rosenbrock, np.array([-1.2, 1.0], F32), options=dict(maxiter=3))
    assert int(res.nit) == 3 and int(res.status) == 1 and not bool(res.success)
    loose = minimize(rosenbrock, np.array([-1.2, 1.0], F32), tol=1e-1)
    tight = minimize(rosenbrock, np.array([-1.2, 1.0], F32))
    assert int(loose.nit) < int(tight.nit)
    assert np.max(np.abs(np.asarray(loose.jac))) < 1e-1


def test_jit_and_vmap_over_x0():
    x0s = np.array([[-1.2, 1.0], [0.0, 0.0], [2.0, 2.0], [-0.5, 1.5]], F32)
    eager = [minimize(rosenbrock, x0, tol=F32_TOL) for x0 in x0s]
    jitted = mt.jit(lambda x0: minimize(rosenbrock, x0, tol=F32_TOL))(x0s[0])
    assert_close(jitted.x, eager[0].x, rtol=1e-6, atol=1e-6)
    assert int(jitted.nit) == int(eager[0].nit)
    solve = lambda x0: minimize(rosenbrock, x0, tol=F32_TOL)  # noqa: E731
    for batched in (mt.vmap(solve), mt.jit(mt.vmap(solve))):
        res = batched(x0s)
        assert res.x.shape == (4, 2) and res.hess_inv.shape == (4, 2, 2)
        assert_close(res.x, np.stack([np.asarray(r.x) for r in eager]), rtol=1e-5, atol=1e-5)
        # each problem stops at its own iteration count
        assert [int(k) for k in res.nit] == [int(r.nit) for r in eager]
        assert np.all(np.asarray(res.success))


def test_vmap_over_problem_data():
    hs, bs = zip(*[_quadratic(3, s) for s in range(3)])
    hs, bs = np.stack(hs), np.stack(bs)
    res = mt.vmap(lambda h, b: minimize(quadratic, mnp.zeros(3), args=(h, b), tol=F32_TOL))(hs, bs)
    want = np.stack([np.linalg.solve(h.astype(np.float64), b) for h, b in zip(hs, bs)])
    assert_close(res.x, want, rtol=0, atol=1e-4)


def test_line_search_strong_wolfe():
    x = np.array([-1.2, 1.0], F32)
    g = np.asarray(mt.grad(rosenbrock)(x))
    p = -g / np.linalg.norm(g)
    res = line_search(rosenbrock, x, p)
    assert not bool(res.failed)
    a = float(res.a_k)
    f0, d0 = float(rosenbrock(x)), float(g @ p)
    f1 = float(rosenbrock(x + a * p))
    d1 = float(np.asarray(mt.grad(rosenbrock)(x + a * p)) @ p)
    assert f1 <= f0 + 1e-4 * a * d0 + 1e-6
    assert abs(d1) <= 0.9 * abs(d0) + 1e-6
    assert_close(res.f_k, f1, rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="minimize: method 'Nelder-Mead'"):
        minimize(rosenbrock, np.zeros(2, F32), method="Nelder-Mead")
    with pytest.raises(TypeError, match="minimize: args must be a tuple"):
        minimize(quadratic, np.zeros(2, F32), args=[1, 2])
    with pytest.raises(ValueError, match=r"minimize: x0 must be 1-dimensional"):
        minimize(rosenbrock, np.zeros((2, 2), F32))
