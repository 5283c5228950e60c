"""mytorch.scipy.stats against scipy.stats (float64 references), parameter gradients
against float64 central differences, and vmap/jit against eager per-example calls."""

import numpy as np
import pytest
import scipy.stats as ss
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.scipy import stats
from tests.strategies import assert_close

F32 = np.float32
RNG = np.random.default_rng(0)


def _f32(*xs):
    return [np.asarray(x, F32) for x in xs]


# (mytorch function, scipy function, argument builder); the arguments broadcast together
# and include points outside the support where the family has edges.
X = np.linspace(-4, 4, 17)
CASES = {
    "norm.logpdf": (stats.norm.logpdf, ss.norm.logpdf, (X, 0.5, np.array([[0.5], [2.0]]))),
    "norm.pdf": (stats.norm.pdf, ss.norm.pdf, (X, -1.0, 1.5)),
    "norm.cdf": (stats.norm.cdf, ss.norm.cdf, (X, 0.5, 2.0)),
    "norm.logcdf": (stats.norm.logcdf, ss.norm.logcdf, (np.linspace(-30, 5, 15), 0.0, 1.0)),
    "norm.sf": (stats.norm.sf, ss.norm.sf, (X, 0.5, 2.0)),
    "norm.logsf": (stats.norm.logsf, ss.norm.logsf, (np.linspace(-5, 30, 15), 0.0, 1.0)),
    "norm.ppf": (stats.norm.ppf, ss.norm.ppf, (np.array([0, 1e-6, 0.1, 0.5, 0.9, 1]), 1.0, 2.0)),
    "norm.isf": (stats.norm.isf, ss.norm.isf, (np.array([1e-6, 0.1, 0.5, 0.9]), 1.0, 2.0)),
    "t.logpdf": (stats.t.logpdf, ss.t.logpdf, (X, np.array([[1.0], [3.5], [30.0]]), 0.5, 2.0)),
    "t.pdf": (stats.t.pdf, ss.t.pdf, (X, 4.0, -0.5, 1.5)),
    "beta.logpdf": (stats.beta.logpdf, ss.beta.logpdf,
                    (np.array([-0.1, 0.0, 0.2, 0.5, 0.9, 1.0, 1.3]),
                     np.array([[1.0], [2.0], [3.5]]),
                     np.array([1.0, 1.5, 2.0, 5.0, 1.0, 1.0, 2.5]))),
    "beta.pdf": (stats.beta.pdf, ss.beta.pdf, (np.linspace(-1, 4, 11), 2.0, 3.0, -1.0, 4.0)),
    "gamma.logpdf": (stats.gamma.logpdf, ss.gamma.logpdf,
                     (np.array([-1.0, 0.5, 1.0, 3.0, 10.0]), np.array([[1.0], [2.5]]), 0.0, 2.0)),
    "gamma.pdf": (stats.gamma.pdf, ss.gamma.pdf, (np.linspace(-1, 8, 10), 3.0, -0.5, 1.5)),
    "gamma.cdf": (stats.gamma.cdf, ss.gamma.cdf,
                  (np.array([-1.0, 0.0, 0.5, 1.0, 3.0, 10.0, 40.0]), np.array([[0.5], [2.5], [9.0]]),
                   0.0, 2.0)),
    "gamma.sf": (stats.gamma.sf, ss.gamma.sf, (np.linspace(-1, 30, 12), 3.0, -0.5, 1.5)),
    "beta.cdf": (stats.beta.cdf, ss.beta.cdf,
                 (np.array([-0.1, 0.0, 0.2, 0.5, 0.9, 1.0, 1.3]), np.array([[0.5], [2.0], [30.0]]),
                  np.array([0.7, 1.5, 2.0, 5.0, 1.0, 1.0, 2.5]))),
    "beta.sf": (stats.beta.sf, ss.beta.sf, (np.linspace(-1, 4, 11), 2.0, 3.0, -1.0, 4.0)),
    "poisson.logpmf": (stats.poisson.logpmf, ss.poisson.logpmf,
                       (np.array([-1.0, 0.0, 1.0, 2.5, 4.0, 20.0]), np.array([[0.5], [4.0]]))),
    "poisson.pmf": (stats.poisson.pmf, ss.poisson.pmf, (np.array([0.0, 3.0, 7.0]), 3.0, 1.0)),
    "poisson.cdf": (stats.poisson.cdf, ss.poisson.cdf,
                    (np.array([-1.0, 0.0, 1.0, 2.5, 4.0, 30.0]), np.array([[0.5], [4.0], [25.0]]))),
    "bernoulli.logpmf": (stats.bernoulli.logpmf, ss.bernoulli.logpmf,
                         (np.array([-1.0, 0.0, 1.0, 2.0]), np.array([[0.2], [0.7]]))),
    "bernoulli.pmf": (stats.bernoulli.pmf, ss.bernoulli.pmf, (np.array([0.0, 1.0, 2.0]), 0.3, 1.0)),
    "bernoulli.cdf": (stats.bernoulli.cdf, ss.bernoulli.cdf,
                      (np.array([-1.0, 0.0, 0.5, 1.0, 2.0]), np.array([[0.2], [0.7]]))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_against_scipy(name):
    ours, ref, args = CASES[name]
    out = ours(*_f32(*args))
    assert out.dtype == F32
    expected = ref(*args)
    assert out.shape == np.shape(expected)
    assert_close(out, expected, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_float64(name, x64):
    ours, ref, args = CASES[name]
    out = ours(*[np.asarray(a, np.float64) for a in args])
    assert out.dtype == np.float64
    np.testing.assert_allclose(np.asarray(out), ref(*args), rtol=1e-10, atol=1e-12)


def test_jax_edge_values():
    # outside the support, and non-positive shapes for beta (JAX's NaN)
    assert np.isneginf(stats.beta.logpdf(1.5, 2.0, 2.0))
    assert np.isnan(stats.beta.logpdf(0.5, -1.0, 2.0))
    assert np.isnan(stats.beta.logpdf(0.5, 2.0, 2.0, 0.0, -1.0))
    assert np.isneginf(stats.gamma.logpdf(-0.1, 2.0))
    assert np.isneginf(stats.poisson.logpmf(1.5, 2.0))
    assert stats.poisson.cdf(-0.5, 2.0) == 0
    assert np.isnan(stats.bernoulli.cdf(0.5, 1.5))
    assert np.isneginf(stats.norm.ppf(0.0)) and np.isposinf(stats.norm.ppf(1.0))
    # integer arguments promote to the default float
    assert stats.norm.logpdf(1, 0, 1).dtype == F32
    assert stats.poisson.logpmf(mnp.arange(3), 2).dtype == F32


def _central_difference(fn, args, i, eps=1e-6):
    up = list(args)
    down = list(args)
    up[i] = args[i] + eps
    down[i] = args[i] - eps
    return (fn(*up) - fn(*down)) / (2 * eps)


# (function, float64 arguments at a smooth point, which arguments to differentiate)
GRAD_CASES = {
    "norm.logpdf": (stats.norm.logpdf, (0.3, -0.2, 1.7), (0, 1, 2)),
    "norm.logcdf": (stats.norm.logcdf, (-3.0, 0.5, 1.2), (0, 1, 2)),
    "norm.logsf": (stats.norm.logsf, (2.0, 0.5, 1.2), (0, 1, 2)),
    "norm.ppf": (stats.norm.ppf, (0.2, 0.5, 1.2), (0, 1, 2)),
    "t.logpdf": (stats.t.logpdf, (0.7, 3.5, 0.1, 1.3), (0, 1, 2, 3)),
    "beta.logpdf": (stats.beta.logpdf, (0.3, 2.5, 1.5), (0, 1, 2)),
    "gamma.logpdf": (stats.gamma.logpdf, (1.7, 2.5, 0.1, 1.5), (0, 1, 2, 3)),
    "poisson.logpmf": (stats.poisson.logpmf, (3.0, 2.5), (1,)),
    "gamma.cdf": (stats.gamma.cdf, (1.7, 2.5, 0.1, 1.5), (0, 1, 2, 3)),
    "gamma.sf": (stats.gamma.sf, (4.0, 2.5, 0.1, 1.5), (0, 1, 2, 3)),
    "beta.cdf": (stats.beta.cdf, (0.3, 2.5, 1.5, -0.2, 1.1), (0, 3, 4)),
    "beta.sf": (stats.beta.sf, (0.7, 2.5, 1.5), (0,)),
    "poisson.cdf": (stats.poisson.cdf, (3.0, 2.5), (1,)),
    "bernoulli.logpmf": (stats.bernoulli.logpmf, (1.0, 0.3), (1,)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_against_finite_differences(name, x64):
    fn, args, wrt = GRAD_CASES[name]
    args = tuple(np.float64(a) for a in args)
    for i in wrt:
        got = mt.grad(fn, argnums=i)(*args)
        want = _central_difference(lambda *a: float(fn(*a)), args, i)
        np.testing.assert_allclose(float(got), want, rtol=1e-6, atol=1e-8)


def _spd(n, rng):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_multivariate_normal_values(n):
    rng = np.random.default_rng(n)
    cov = _spd(n, rng)
    mean = rng.standard_normal(n)
    x = rng.standard_normal((5, n))
    expected = ss.multivariate_normal.logpdf(x, mean, cov)
    assert_close(stats.multivariate_normal.logpdf(*_f32(x, mean, cov)), expected,
                 rtol=1e-5, atol=1e-5)
    assert_close(stats.multivariate_normal.pdf(*_f32(x, mean, cov)), np.exp(expected),
                 rtol=1e-5, atol=1e-7)
    # one point gives a scalar
    one = stats.multivariate_normal.logpdf(*_f32(x[0], mean, cov))
    assert one.shape == ()


def test_multivariate_normal_scalar_forms():
    x = np.array([0.3, -1.0, 2.0])
    # scalar mean and cov: the univariate normal, elementwise
    assert_close(stats.multivariate_normal.logpdf(*_f32(x, 0.5, 2.0)),
                 ss.norm.logpdf(x, 0.5, np.sqrt(2.0)), rtol=1e-6)
    # vector mean, scalar cov: cov * I
    assert_close(stats.multivariate_normal.logpdf(*_f32(x, np.zeros(3), 2.0)),
                 ss.multivariate_normal.logpdf(x, np.zeros(3), 2.0 * np.eye(3)), rtol=1e-6)


def test_multivariate_normal_batched_cov():
    rng = np.random.default_rng(7)
    covs = np.stack([_spd(3, rng) for _ in range(4)])
    means = rng.standard_normal((4, 3))
    x = rng.standard_normal((4, 3))
    expected = [ss.multivariate_normal.logpdf(x[i], means[i], covs[i]) for i in range(4)]
    assert_close(stats.multivariate_normal.logpdf(*_f32(x, means, covs)), expected,
                 rtol=1e-5, atol=1e-5)


def test_multivariate_normal_bad_shape():
    with pytest.raises(ValueError, match=r"multivariate_normal.logpdf: cov must be"):
        stats.multivariate_normal.logpdf(np.zeros(3, F32), np.zeros(3, F32), np.eye(2, dtype=F32))


def test_multivariate_normal_gradients(x64):
    rng = np.random.default_rng(3)
    cov = _spd(3, rng)
    mean = rng.standard_normal(3)
    x = rng.standard_normal(3)
    fn = stats.multivariate_normal.logpdf
    ref = ss.multivariate_normal.logpdf
    eps = 1e-6
    for i, arg in enumerate((x, mean, cov)):
        got = np.asarray(mt.grad(fn, argnums=i)(x, mean, cov))
        for idx in np.ndindex(arg.shape):
            # directional derivatives; along symmetric directions for cov (a covariance
            # stays symmetric), where the gradient's pairing is sum(got * e)
            e = np.zeros_like(arg)
            e[idx] = eps
            if i == 2:
                e[idx[::-1]] = eps
            up, down = [x, mean, cov], [x, mean, cov]
            up[i], down[i] = arg + e, arg - e
            want = (ref(*up) - ref(*down)) / (2 * eps)
            np.testing.assert_allclose(np.sum(got * e) / eps, want, rtol=1e-5, atol=1e-7)


@settings(deadline=None, max_examples=15)
@given(st.lists(st.floats(0.1, 5.0), min_size=1, max_size=4),
       st.floats(-2.0, 2.0), st.floats(0.5, 3.0))
def test_vmap_and_jit_match_eager(mus, loc, scale):
    mus = np.asarray(mus, F32)
    x = np.linspace(-1, 6, 8).astype(F32)
    fns = [
        lambda m: stats.norm.logpdf(x, m, scale),
        lambda m: stats.t.logpdf(x, m + 1, loc, scale),
        lambda m: stats.gamma.logpdf(x, m, loc, scale),
        lambda m: stats.poisson.cdf(mnp.round(x), m),
        lambda m: stats.poisson.logpmf(mnp.round(x), m),
        lambda m: stats.bernoulli.logpmf(mnp.round(x), m / 6),
    ]
    for fn in fns:
        eager = np.stack([np.asarray(fn(m)) for m in mus])
        assert_close(mt.vmap(fn)(mus), eager, rtol=1e-6, atol=1e-6)
        assert_close(mt.jit(mt.vmap(fn))(mus), eager, rtol=1e-6, atol=1e-6)


def test_multivariate_normal_vmap_jit():
    rng = np.random.default_rng(11)
    cov = _spd(3, rng).astype(F32)
    means = rng.standard_normal((5, 3)).astype(F32)
    x = rng.standard_normal(3).astype(F32)
    fn = lambda m: stats.multivariate_normal.logpdf(x, m, cov)  # noqa: E731
    eager = np.stack([np.asarray(fn(m)) for m in means])
    assert_close(mt.vmap(fn)(means), eager, rtol=1e-6, atol=1e-6)
    assert_close(mt.jit(mt.vmap(fn))(means), eager, rtol=1e-6, atol=1e-6)
    assert_close(mt.jit(mt.grad(lambda m: stats.multivariate_normal.logpdf(x, m, cov)))(means[0]),
                 mt.grad(lambda m: stats.multivariate_normal.logpdf(x, m, cov))(means[0]),
                 rtol=1e-6, atol=1e-6)
