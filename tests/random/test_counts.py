"""mt.random.poisson and mt.random.binomial: bit-exact with JAX 0.10.2 (its numbers for the
same keys written literally), moments and a chi-square goodness-of-fit against the pmf
computed here with math, both algorithm branches, special values, jit and vmap."""

import math

import numpy as np
import pytest

import mytorch as mt

LAM = np.array([0.0, 0.5, 3.0, 9.9, 10.0, 55.0, 1000.0, np.nan], np.float32)
N_TRIALS = np.array([0, 5, 20, 100, 1000, 50, np.inf, -1, 30], np.float32)
P = np.array([0.3, 0.9, 0.5, 0.2, 0.7, 0.05, 0.3, 0.5, np.nan], np.float32)


def test_poisson_matches_jax():
    # jax.random.poisson(jax.random.key(3), LAM, (3, 8))
    want = [0, 0, 2, 12, 13, 46, 958, -1, 0, 1, 3, 12, 9, 61, 1030, -1, 0, 0, 2, 11, 9, 63,
            964, -1]  # fmt: skip
    got = mt.random.poisson(mt.random.key(3), LAM, (3, 8))
    assert got.dtype == np.int32 and got.shape == (3, 8)
    np.testing.assert_array_equal(np.asarray(got).ravel(), want)
    # jax.random.poisson(jax.random.PRNGKey(0), 4.0, (6,))
    raw = mt.random.poisson(mt.random.PRNGKey(0), 4.0, (6,))
    np.testing.assert_array_equal(np.asarray(raw), [0, 1, 5, 5, 2, 2])


def test_binomial_matches_jax():
    # jax.random.binomial(jax.random.key(3), N_TRIALS, P, (2, 9))
    want = [0.0, 5.0, 9.0, 19.0, 688.0, 5.0, np.inf, np.nan, np.nan, 0.0, 5.0, 7.0, 18.0,
            688.0, 3.0, np.inf, np.nan, np.nan]  # fmt: skip
    got = mt.random.binomial(mt.random.key(3), N_TRIALS, P, (2, 9))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got).ravel(), np.asarray(want, np.float32))


def _chi2_ok(samples, pmf, lo, hi):
    """Pearson's chi-square over the bins lo..hi (tails merged into the end bins) is below
    the 0.1% critical value, approximated by Wilson–Hilferty."""
    x = np.asarray(samples)
    ks = np.arange(lo, hi + 1)
    probs = np.array([pmf(k) for k in ks])
    probs[0] += sum(pmf(k) for k in range(lo))
    probs[-1] = 1 - probs[:-1].sum()
    counts = np.array([np.sum(x <= lo)] + [np.sum(x == k) for k in ks[1:-1]] + [np.sum(x >= hi)])
    expected = probs * len(x)
    stat = np.sum((counts - expected) ** 2 / expected)
    dof = len(ks) - 1
    crit = dof * (1 - 2 / (9 * dof) + 3.09 * math.sqrt(2 / (9 * dof))) ** 3
    assert stat < crit, (stat, crit)


def _poisson_pmf(lam):
    return lambda k: math.exp(k * math.log(lam) - lam - math.lgamma(k + 1))


def _binomial_pmf(n, p):
    return lambda k: math.comb(n, k) * p**k * (1 - p) ** (n - k)


@pytest.mark.parametrize(
    "lam,lo,hi", [(0.7, 0, 4), (4.0, 0, 10), (30.0, 20, 40), (200.0, 180, 220)]
)
def test_poisson_fit(lam, lo, hi):
    x = np.asarray(mt.random.poisson(mt.random.key(5), lam, (4000,)))
    assert abs(x.mean() - lam) < 4 * math.sqrt(lam / len(x))
    assert abs(x.var() / lam - 1) < 0.15
    _chi2_ok(x, _poisson_pmf(lam), lo, hi)


@pytest.mark.parametrize("n,p,lo,hi", [(10, 0.3, 0, 7), (200, 0.4, 65, 95), (60, 0.9, 48, 58)])
def test_binomial_fit(n, p, lo, hi):
    # (10, 0.3): inversion; (200, 0.4): BTRS; (60, 0.9): BTRS on q = 0.1 then n - k
    x = np.asarray(mt.random.binomial(mt.random.key(6), n, p, (4000,)))
    var = n * p * (1 - p)
    assert abs(x.mean() - n * p) < 4 * math.sqrt(var / len(x))
    assert abs(x.var() / var - 1) < 0.15
    _chi2_ok(x, _binomial_pmf(n, p), lo, hi)


def test_jit_vmap():
    fns = [
        lambda k: mt.random.poisson(k, LAM[:7], (2, 7)),
        lambda k: mt.random.binomial(k, N_TRIALS[:7], P[:7]),
    ]
    keys = mt.random.split(mt.random.key(1), 3)
    for fn in fns:
        np.testing.assert_array_equal(np.asarray(mt.jit(fn)(keys[0])), np.asarray(fn(keys[0])))
        looped = np.stack([np.asarray(fn(keys[i])) for i in range(3)])
        np.testing.assert_array_equal(np.asarray(mt.vmap(fn)(keys)), looped)


def test_dtypes_and_empty(x64):
    assert mt.random.poisson(mt.random.key(0), 3.0, (2,)).dtype == np.int64
    assert mt.random.poisson(mt.random.key(0), 3.0, (2,), dtype=np.int16).dtype == np.int16
    assert mt.random.binomial(mt.random.key(0), 5, 0.5, (2,)).dtype == np.float64
    assert mt.random.poisson(mt.random.key(0), 3.0, (0, 2)).shape == (0, 2)


def test_errors():
    with pytest.raises(
        ValueError,
        match=r"poisson: dtype argument must be an integer dtype"
        r".*test_counts.py",
    ):
        mt.random.poisson(mt.random.key(0), 3.0, dtype=np.float32)
    with pytest.raises(ValueError, match="binomial: dtype argument must be a float dtype"):
        mt.random.binomial(mt.random.key(0), 3, 0.5, dtype=np.int32)
    with pytest.raises(ValueError, match=r"poisson: shape \(2,\) is not broadcast-compatible"):
        mt.random.poisson(mt.random.key(0), np.ones(3), (2,))
    with pytest.raises(TypeError, match="binomial: expected a PRNG key"):
        mt.random.binomial(3, 3, 0.5)
