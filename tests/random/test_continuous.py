"""mt.random's derived distributions: gamma, loggamma, beta, dirichlet, chisquare, t, f,
multivariate_normal, orthogonal, and the small decompositions behind them.

References: JAX 0.10.2's draws for the same keys, written literally below (these samplers
are not bit-exact with JAX: XLA's float32 log/pow/sqrt and its QR round differently from
NumPy's, so they agree to about 1e-6 relative; a rejection decision that flips on such a
rounding would change a draw, which no key below does); closed-form moments and CDFs
(a Kolmogorov–Smirnov statistic with the CDF written here with math/NumPy); numpy.linalg
for the decompositions; float64 central differences of the gamma CDF for gamma's
derivative in `a`; the un-jitted function for jit; a loop over keys for vmap.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.random import _gamma_grad

A = np.array([0.1, 0.5, 1.0, 3.0, 20.0, 400.0], np.float32)
COV = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.3], [0.1, 0.3, 0.7]], np.float32)
MEAN = np.array([1.0, -1.0, 0.0], np.float32)
RTOL = 1e-5  # agreement with JAX's float32 draws


def key(seed=7):
    return mt.random.key(seed)


# ---- JAX's numbers ----------------------------------------------------------------------------
JAX_DRAWS = {  # jax.random.<name>(jax.random.key(7), ...) with JAX 0.10.2 on the CPU
    "gamma": (
        lambda k: mt.random.gamma(k, A, (2, 6)),
        [
            9.301836627440596e-20,
            0.3021133840084076,
            0.2527778446674347,
            5.003113746643066,
            16.05735206604004,
            389.5225830078125,
            0.05933403968811035,
            0.44575008749961853,
            0.3405802845954895,
            2.8820226192474365,
            22.074575424194336,
            422.3760681152344,
        ],
    ),
    "loggamma": (
        lambda k: mt.random.loggamma(k, A),
        [
            -43.82149124145508,
            -1.1969528198242188,
            -1.375244140625,
            1.610060453414917,
            2.7761669158935547,
            5.964921474456787,
        ],
    ),
    "beta": (
        lambda k: mt.random.beta(k, A, 2.0),
        [
            3.808195980781193e-09,
            0.2121131718158722,
            0.15362964570522308,
            0.6638502478599548,
            0.9345639944076538,
            0.9923650026321411,
        ],
    ),
    "dirichlet": (
        lambda k: mt.random.dirichlet(k, np.array([0.5, 1.0, 4.0]), (2,)),
        [
            8.541380520910025e-05,
            0.07965217530727386,
            0.9202624559402466,
            0.4422280490398407,
            0.0338268019258976,
            0.523945152759552,
        ],
    ),
    "chisquare": (
        lambda k: mt.random.chisquare(k, A),
        [
            0.0,
            0.24359194934368134,
            0.006083246786147356,
            5.77679967880249,
            14.415119171142578,
            385.0444030761719,
        ],
    ),
    "t": (
        lambda k: mt.random.t(k, A),
        [
            0.9392751455307007,
            4.227971076965332,
            -7.3854875564575195,
            -0.7760669589042664,
            2.4651947021484375,
            -0.7956300973892212,
        ],
    ),
    "f": (
        lambda k: mt.random.f(k, A, 3.0),
        [
            4.198508262634277,
            0.0015949109802022576,
            0.009346388280391693,
            0.9374486804008484,
            0.6503735184669495,
            0.7300267815589905,
        ],
    ),
    "multivariate_normal": (
        lambda k: mt.random.multivariate_normal(k, MEAN, COV, (2,)),
        [
            1.6381428241729736,
            0.9868217706680298,
            0.2034735530614853,
            0.8006803393363953,
            -0.4740854501724243,
            0.4317858815193176,
        ],
    ),
    "orthogonal": (
        lambda k: mt.random.orthogonal(k, 3),
        [
            0.9206920862197876,
            0.34078067541122437,
            -0.19024860858917236,
            -0.28757205605506897,
            0.9218922853469849,
            0.2596481144428253,
            -0.2638717591762543,
            0.1843457818031311,
            -0.946777880191803,
        ],
    ),
    "orthogonal_3x5": (
        lambda k: mt.random.orthogonal(k, 3, m=5),
        [
            0.29617440700531006,
            -0.09250809997320175,
            -0.08488402515649796,
            -0.8811067938804626,
            0.3466535210609436,
            0.6958798766136169,
            0.2346690446138382,
            -0.07547575235366821,
            -0.04815584421157837,
            -0.672804594039917,
            0.22354532778263092,
            0.28609326481819153,
            -0.7938942313194275,
            0.2789945900440216,
            0.40009018778800964,
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(JAX_DRAWS))
def test_matches_jax(name):
    fn, want = JAX_DRAWS[name]
    got = np.asarray(fn(key()))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.ravel(), want, rtol=RTOL, atol=1e-6)


def test_raw_and_typed_keys_agree_with_jax():
    # jax.random.gamma(jax.random.PRNGKey(0), 2.5, (4,))
    want = [2.0788419246673584, 2.272778272628784, 1.5440423488616943, 4.702054023742676]
    raw = np.asarray(mt.random.gamma(mt.random.PRNGKey(0), 2.5, (4,)))
    typed = np.asarray(mt.random.gamma(mt.random.key(0), 2.5, (4,)))
    np.testing.assert_array_equal(raw, typed)
    np.testing.assert_allclose(raw, want, rtol=RTOL)


def test_gamma_grad_matches_jax():
    # jax.grad(lambda a: jax.random.gamma(jax.random.key(7), a).sum())(A)
    want = [
        4.0367866421743394e-17,
        1.0138792991638184,
        0.5355213284492493,
        1.3502649068832397,
        0.9017030000686646,
        0.9872028231620789,
    ]
    got = mt.grad(lambda a: mt.random.gamma(key(), a).sum())(A)
    np.testing.assert_allclose(np.asarray(got), want, rtol=5e-5)


# ---- closed-form CDFs and the KS statistic ----------------------------------------------------
def _ks(samples, cdf):
    """sup |F_n - F| of the sample against the CDF `cdf` (vectorised over NumPy arrays)."""
    x = np.sort(np.asarray(samples, np.float64))
    n = len(x)
    f = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def _ks_ok(samples, cdf):
    # the 0.1% critical value of the one-sample KS statistic is about 1.95 / sqrt(n)
    assert _ks(samples, cdf) < 1.95 / math.sqrt(len(samples))


def _gamma_int_cdf(a):
    # integer a: P(a, x) = 1 - e^-x sum_{k<a} x^k / k!
    return lambda x: 1 - np.exp(-x) * sum(x**k / math.factorial(k) for k in range(a))


N = 4000
erf = np.vectorize(math.erf)

CDF_CASES = {
    "gamma(0.5)": (lambda k: mt.random.gamma(k, 0.5, (N,)), lambda x: erf(np.sqrt(x))),
    "gamma(1)": (lambda k: mt.random.gamma(k, 1.0, (N,)), _gamma_int_cdf(1)),
    "gamma(4)": (lambda k: mt.random.gamma(k, 4.0, (N,)), _gamma_int_cdf(4)),
    "exp(loggamma(3))": (lambda k: mnp.exp(mt.random.loggamma(k, 3.0, (N,))), _gamma_int_cdf(3)),
    # Beta(2, 3): density 12 x (1 - x)^2, so F(x) = 6 x^2 - 8 x^3 + 3 x^4
    "beta(2,3)": (
        lambda k: mt.random.beta(k, 2.0, 3.0, (N,)),
        lambda x: 6 * x**2 - 8 * x**3 + 3 * x**4,
    ),
    "chisquare(2)": (lambda k: mt.random.chisquare(k, 2.0, (N,)), lambda x: 1 - np.exp(-x / 2)),
    "t(1)": (lambda k: mt.random.t(k, 1.0, (N,)), lambda x: 0.5 + np.arctan(x) / np.pi),
    "f(2,2)": (lambda k: mt.random.f(k, 2.0, 2.0, (N,)), lambda x: x / (1 + x)),
}


@pytest.mark.parametrize("name", sorted(CDF_CASES))
def test_goodness_of_fit(name):
    draw, cdf = CDF_CASES[name]
    _ks_ok(draw(key(11)), cdf)


def test_ks_rejects_a_wrong_distribution():
    # the test has power: Gamma(4) draws against Gamma(3)'s CDF fail it
    assert _ks(mt.random.gamma(key(11), 4.0, (N,)), _gamma_int_cdf(3)) > 1.95 / math.sqrt(N)


@pytest.mark.parametrize("a", [0.2, 1.5, 30.0])
def test_gamma_moments(a):
    x = np.asarray(mt.random.gamma(key(3), a, (N,)), np.float64)
    assert (x >= 0).all()
    # mean a and variance a; the sample mean's sd is sqrt(a / N)
    assert abs(x.mean() - a) < 4 * math.sqrt(a / N)
    assert abs(x.var() / a - 1) < 0.15


def test_beta_moments():
    a, b = 0.7, 2.5
    x = np.asarray(mt.random.beta(key(4), a, b, (N,)), np.float64)
    assert ((x >= 0) & (x <= 1)).all()
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert abs(x.mean() - mean) < 4 * math.sqrt(var / N)
    assert abs(x.var() / var - 1) < 0.15


def test_dirichlet_moments():
    alpha = np.array([0.3, 1.0, 2.7])
    x = np.asarray(mt.random.dirichlet(key(5), alpha, (N,)), np.float64)
    assert x.shape == (N, 3)
    np.testing.assert_allclose(x.sum(-1), 1, rtol=1e-5)
    a0 = alpha.sum()
    mean, var = alpha / a0, alpha * (a0 - alpha) / (a0**2 * (a0 + 1))
    assert (np.abs(x.mean(0) - mean) < 4 * np.sqrt(var / N)).all()
    np.testing.assert_allclose(x.var(0), var, rtol=0.15)


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_covariance(method):
    x = np.asarray(mt.random.multivariate_normal(key(6), MEAN, COV, (N,), method=method))
    assert x.shape == (N, 3)
    np.testing.assert_allclose(x.mean(0), MEAN, atol=4 * math.sqrt(2.0 / N))
    np.testing.assert_allclose(np.cov(x.T), COV, atol=0.1)


@pytest.mark.parametrize("method", ["eigh", "svd"])
def test_multivariate_normal_singular_cov(method):
    # rank-1 covariance: draws lie on the line mean + t (1, 2); Cholesky would give NaN
    cov = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    x = np.asarray(mt.random.multivariate_normal(key(6), np.zeros(2), cov, (500,), method=method))
    assert np.isfinite(x).all()
    np.testing.assert_allclose(x[:, 1], 2 * x[:, 0], atol=1e-4)
    assert abs(x[:, 0].var() - 1) < 0.2


def test_multivariate_normal_batch_shapes():
    means = np.stack([MEAN, -MEAN])  # (2, 3) against one cov
    x = mt.random.multivariate_normal(key(), means, COV)
    assert x.shape == (2, 3)
    x = mt.random.multivariate_normal(key(), MEAN, np.stack([COV, 2 * COV]), (4, 2))
    assert x.shape == (4, 2, 3)


@pytest.mark.parametrize("n,m", [(4, 4), (5, 3), (3, 5), (1, 1)])
def test_orthogonal_is_orthogonal(n, m):
    q = np.asarray(mt.random.orthogonal(key(8), n, (3,), m=m), np.float64)
    assert q.shape == (3, n, m)
    if n >= m:
        np.testing.assert_allclose(
            np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(m), (3, m, m)), atol=1e-5
        )
    else:
        np.testing.assert_allclose(
            q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(n), (3, n, n)), atol=1e-5
        )


def test_orthogonal_is_haar():
    # Haar on O(n): det is +1 or -1 with probability 1/2, and every entry has mean 0 and
    # variance 1/n (a plain QR without the sign fix would bias the diagonal positive)
    n, count = 3, 2000
    q = np.asarray(mt.random.orthogonal(key(9), n, (count,)), np.float64)
    det = np.linalg.det(q)
    np.testing.assert_allclose(np.abs(det), 1, atol=1e-4)
    assert abs((det > 0).mean() - 0.5) < 4 * 0.5 / math.sqrt(count)
    assert (np.abs(q.mean(0)) < 4 * math.sqrt(1 / n / count)).all()
    np.testing.assert_allclose((q**2).mean(0), 1 / n, atol=0.03)
    # the diagonal is symmetric about 0 (the sign fix); compare with E|Q_ii| > 0
    assert abs((np.diagonal(q, axis1=1, axis2=2) > 0).mean() - 0.5) < 0.05


GRAD_A = np.array([0.4, 2.0, 7.0], np.float32)
GRAD_W = np.array([1.0, -2.0, 0.5], np.float32)
JAX_GRADS = {  # jax.grad(lambda a: (jax.random.<name>(jax.random.key(7), ...) * W).sum())(A)
    "beta_a": (lambda a: mt.random.beta(key(), a, 2.0),
               [0.09136568754911423, -0.30598628520965576, 0.01622418873012066]),
    "beta_b": (lambda b: mt.random.beta(key(), 1.5, b),
               [-0.955298900604248, 0.25894853472709656, -0.005947122350335121]),
    "dirichlet": (lambda a: mt.random.dirichlet(key(), a),
                  [9.27720611798577e-05, -0.24871166050434113, 0.05323656275868416]),
    "t": (lambda a: mt.random.t(key(), a),
          [-1.2714688777923584, 0.02440986968576908, -0.00013571640010923147]),
    "chisquare": (lambda a: mt.random.chisquare(key(), a),
                  [3.731832265430057e-08, -0.9746790528297424, 0.4023958146572113]),
    "f": (lambda a: mt.random.f(key(), a, 3.0),
          [5.348684310913086, -0.34942150115966797, -0.0011438727378845215]),
    "loggamma": (lambda a: mt.random.loggamma(key(), a),
                 [26.430587768554688, -1.5993849039077759, 0.08558778464794159]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(JAX_GRADS))
def test_grads_of_derived_samplers_match_jax(name):
    fn, want = JAX_GRADS[name]
    got = mt.grad(lambda a: (fn(a) * GRAD_W).sum())(GRAD_A)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-7)


def test_multivariate_normal_grads(x64):
    # the draw is mean + L z with the key fixed: smooth in mean and cov (through Cholesky)
    from tests.autodiff.fd import check_grads

    cov = COV.astype(np.float64)
    check_grads(
        lambda m, c: mt.random.multivariate_normal(key(), m, (c + c.T) / 2, (2,)),
        (MEAN, cov),
    )


# ---- the derivative of gamma in a ----------------------------------------------------------
def _gamma_grad_f64(a, x):
    """dx/da in float64 from the upper tail: P = 1 - int_x^inf p, so
    dx/da = -(dP/da) / p(x) = int_x^inf (p(t) / p(x)) (log t - digamma(a)) dt, with
    p(t) / p(x) = (t / x)^(a-1) e^-(t-x); Simpson's rule on [x, x + 80]."""
    a, x = float(a), float(x)
    t = np.linspace(x, x + 80.0, 800001)
    ratio = np.exp((a - 1) * np.log(t / x) - (t - x))
    f = ratio * (np.log(t) - _digamma(a))
    h = t[1] - t[0]
    return h / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())


def _digamma(a, h=1e-5):
    return (math.lgamma(a + h) - math.lgamma(a - h)) / (2 * h)


def _gamma_cdf64(a, x):
    """P(a, x) by its series in float64 (math only), enough terms for x < 60."""
    k = np.arange(400.0)
    log_terms = (a + k) * math.log(x) - x - np.array([math.lgamma(a + 1 + j) for j in k])
    with np.errstate(under="ignore"):
        return float(np.exp(log_terms).sum())


@pytest.mark.parametrize(
    "a,x,rtol",
    [
        (0.3, 0.05, 1e-6),  # the series (x < 1 or x < a) ...
        (1.0, 0.5, 1e-6),
        (9.0, 7.0, 1e-6),
        (0.3, 1.7, 1e-6),  # ... and the continued fraction (x > 1 and x > a)
        (2.5, 6.0, 1e-6),
        (25.0, 31.0, 1e-6),
        (1.0, 12.0, 1e-5),  # far tails: dP/da ~ 1e-5, so the differences lose digits
        (3.0, 16.0, 1e-5),
        (40.0, 55.0, 1e-5),
    ],
)
def test_gamma_sample_derivative_vs_cdf_differences(x64, a, x, rtol):
    # dx/da = -(dP/da) / (dP/dx), both by float64 central differences of the CDF
    h = 1e-5 if rtol < 1e-5 else 1e-4
    dp_da = (_gamma_cdf64(a + h, x) - _gamma_cdf64(a - h, x)) / (2 * h)
    dp_dx = (_gamma_cdf64(a, x + h) - _gamma_cdf64(a, x - h)) / (2 * h)
    got = _gamma_grad.sample_derivative(mnp.asarray([a]), mnp.asarray([x]))
    np.testing.assert_allclose(np.asarray(got)[0], -dp_da / dp_dx, rtol=rtol)


def test_gamma_sample_derivative_float32_tails():
    # where the series would cancel (x far above a), float32 agrees with the float64 value
    a = np.array([1.0, 10.0, 1000.0], np.float32)
    x = np.array([54.59815, 35.29822, 1158.1139], np.float32)
    want64 = [_gamma_grad_f64(ai, xi) for ai, xi in zip(a, x, strict=True)]
    got = np.asarray(_gamma_grad.sample_derivative(mnp.asarray(a), mnp.asarray(x)))
    np.testing.assert_allclose(got, want64, rtol=1e-5)


def test_gamma_sample_derivative_edges():
    got = np.asarray(
        _gamma_grad.sample_derivative(
            mnp.asarray([1.0, -1.0, 2.0, np.nan]), mnp.asarray([0.0, 1.0, -1.0, 1.0])
        )
    )
    assert got[0] == 0 and np.isnan(got[1:]).all()


def test_gamma_grad_is_the_sample_derivative():
    a = np.array([0.4, 2.0, 7.0], np.float32)
    x = mt.random.gamma(key(2), a)
    want = _gamma_grad.sample_derivative(mnp.asarray(a), x)
    _, jvp = mt.jvp(
        lambda a: mt.random.gamma(key(2), a), (mnp.asarray(a),), (mnp.ones(3, np.float32),)
    )
    np.testing.assert_allclose(np.asarray(jvp), np.asarray(want), rtol=1e-6)
    # loggamma's derivative is the gamma one divided by the sample
    g = mt.grad(lambda a: mt.random.loggamma(key(2), a).sum())(a)
    np.testing.assert_allclose(np.asarray(g), np.asarray(want) / np.asarray(x), rtol=1e-4)
    # and grad works under jit and vmap
    jg = mt.jit(mt.grad(lambda a: mt.random.gamma(key(2), a).sum()))(a)
    np.testing.assert_allclose(np.asarray(jg), np.asarray(want), rtol=1e-6)


# ---- transformations --------------------------------------------------------------------------
SAMPLERS = {
    "gamma": lambda k: mt.random.gamma(k, A),
    "loggamma": lambda k: mt.random.loggamma(k, A[:3], (2, 3)),
    "beta": lambda k: mt.random.beta(k, 0.5, A[:4]),
    "dirichlet": lambda k: mt.random.dirichlet(k, A[1:4], (2,)),
    "chisquare": lambda k: mt.random.chisquare(k, 3.0, (3,)),
    "t": lambda k: mt.random.t(k, A[1:]),
    "f": lambda k: mt.random.f(k, 2.0, A[2:]),
    "multivariate_normal": lambda k: mt.random.multivariate_normal(k, MEAN, COV, (2,)),
    "multivariate_normal_eigh": lambda k: mt.random.multivariate_normal(
        k, MEAN, COV, method="eigh"
    ),
    "orthogonal": lambda k: mt.random.orthogonal(k, 3, (2,)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_jit_equals_eager(name):
    fn = SAMPLERS[name]
    np.testing.assert_allclose(
        np.asarray(mt.jit(fn)(key(1))), np.asarray(fn(key(1))), rtol=1e-6, atol=1e-7
    )


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_vmap_over_keys_equals_loop(name):
    fn = SAMPLERS[name]
    keys = mt.random.split(key(1), 3)
    batched = np.asarray(mt.vmap(fn)(keys))
    looped = np.stack([np.asarray(fn(keys[i])) for i in range(3)])
    np.testing.assert_allclose(batched, looped, rtol=1e-6, atol=1e-7)


def test_vmap_over_parameters_equals_loop():
    keys = mt.random.split(key(1), 3)
    a = np.array([0.3, 2.0, 9.0], np.float32)
    batched = np.asarray(mt.vmap(lambda k, a: mt.random.gamma(k, a, (2,)))(keys, a))
    looped = np.stack([np.asarray(mt.random.gamma(keys[i], a[i], (2,))) for i in range(3)])
    np.testing.assert_array_equal(batched, looped)


@settings(max_examples=8, deadline=None)
@given(
    shape=st.lists(st.integers(0, 3), max_size=3).map(tuple), a=st.floats(0.0625, 50.0, width=32)
)
def test_gamma_shapes_and_support(shape, a):
    x = np.asarray(mt.random.gamma(key(0), a, shape))
    assert x.shape == shape and x.dtype == np.float32
    assert (x >= 0).all() and np.isfinite(x).all()
    b = np.asarray(mt.random.beta(key(0), a, 1.0, shape))
    assert b.shape == shape and ((b >= 0) & (b <= 1)).all()


def test_dtypes(x64):
    assert mt.random.gamma(key(), 2.0, (2,)).dtype == np.float64
    assert mt.random.gamma(key(), 2.0, (2,), dtype=np.float32).dtype == np.float32
    assert mt.random.beta(key(), 2.0, 1.0, dtype=np.float16).dtype == np.float16
    assert mt.random.orthogonal(key(), 2).dtype == np.float64
    assert mt.random.multivariate_normal(key(), MEAN, COV).dtype == np.float32  # mean's


def test_degenerate_parameters():
    x = np.asarray(mt.random.gamma(key(), np.array([0.0, np.nan], np.float32)))
    assert x[0] == 0 and np.isnan(x[1])
    assert mt.random.dirichlet(key(), np.ones(3), (0,)).shape == (0, 3)
    assert mt.random.orthogonal(key(), 0, (2,)).shape == (2, 0, 0)


# ---- errors -------------------------------------------------------------------------------------
def test_errors():
    with pytest.raises(
        ValueError,
        match=r"gamma: dtype argument must be a float dtype, got int32"
        r".*test_continuous.py",
    ):
        mt.random.gamma(key(), 2.0, dtype=np.int32)
    with pytest.raises(
        ValueError,
        match=r"beta: shape \(3,\) is not broadcast-compatible with "
        r"the parameter shapes \[\(2,\), \(\)\]",
    ):
        mt.random.beta(key(), np.ones(2), 1.0, (3,))
    with pytest.raises(ValueError, match=r"beta: parameter shapes \[\(2,\), \(3,\)\] do not"):
        mt.random.beta(key(), np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="dirichlet requires alpha.ndim >= 1"):
        mt.random.dirichlet(key(), 1.0)
    with pytest.raises(ValueError, match="method must be one of"):
        mt.random.multivariate_normal(key(), MEAN, COV, method="qr")
    with pytest.raises(ValueError, match=r"cov.shape == \(..., n, n\) for n=3.*\(2, 2\)"):
        mt.random.multivariate_normal(key(), MEAN, np.eye(2))
    with pytest.raises(ValueError, match="mean.ndim >= 1"):
        mt.random.multivariate_normal(key(), 0.0, COV)
    with pytest.raises(TypeError, match="orthogonal: n must be a non-negative Python int"):
        mt.random.orthogonal(key(), 2.5)
    with pytest.raises(TypeError, match="gamma: expected a PRNG key"):
        mt.random.gamma(0, 2.0)
