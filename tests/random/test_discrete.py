"""randint, bernoulli, gumbel, exponential, categorical, permutation, choice and the simple
transforms: JAX 0.10's draws written literally (integers exactly, floats to float32
rounding), chi-square goodness of fit on fixed seeds, jit/vmap, and errors."""

import numpy as np
import pytest

import mytorch as mt

R = mt.random
K5 = R.key(5)
LOGITS = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))


def ints(x):
    return np.asarray(x).tolist()


def test_randint_matches_jax():
    assert ints(R.randint(K5, (8,), 0, 10)) == [1, 8, 3, 6, 4, 1, 9, 3]
    assert ints(R.randint(K5, (5,), -2**31, 2**31 - 1)) == [
        -1787507967, -1163020224, -1664956169, -994140664, -1625109188]
    lo, hi = np.array([0, 10, 100]), np.array([5, 20, 1000])
    assert ints(R.randint(K5, (2, 3), lo, hi)) == [[1, 18, 103], [1, 14, 701]]
    assert R.randint(K5, (2,), 0, 3).dtype == np.int32


def test_randint_small_dtypes_match_jax():
    i8 = R.randint(K5, (6,), -128, 128, "int8")
    assert i8.dtype == np.int8 and ints(i8) == [-127, -64, 119, -120, -68, -75]
    u8 = R.randint(K5, (6,), 0, 256, "uint8")
    assert u8.dtype == np.uint8 and ints(u8) == [1, 64, 247, 8, 60, 53]


def test_randint_int64_x64(x64):
    out = R.randint(K5, (3,), -2**62, 2**62, "int64")
    assert ints(out) == [-987051902791744889, 3934491568298764156, 2941600515744621282]


def test_randint_goodness_of_fit():
    draws = np.asarray(R.randint(R.key(11), (30000,), -3, 7))
    assert draws.min() == -3 and draws.max() == 6
    counts = np.bincount(draws + 3, minlength=10)
    # chi-square with 9 degrees of freedom; its 99.9% quantile is 27.9
    assert ((counts - 3000.0) ** 2 / 3000.0).sum() < 27.9


def test_bernoulli_matches_jax():
    assert ints(R.bernoulli(K5, 0.3, (8,))) == [False, False, False, True, False, False,
                                                True, True]
    assert ints(R.bernoulli(K5, np.array([0.1, 0.5, 0.9], np.float32))) == [False, False, True]
    assert ints(R.bernoulli(K5, 0.3, (8,), mode="high")) == [False, False, False, True,
                                                             False, False, True, True]
    frac = np.asarray(R.bernoulli(R.key(2), 0.25, (20000,))).mean()
    assert abs(frac - 0.25) < 0.015


def test_gumbel_and_exponential_match_jax():
    np.testing.assert_allclose(R.gumbel(K5, (4,)), [
        0.27081865072250366, 2.49587345123291, 1.1816141605377197, -0.8557001948356628],
        rtol=1e-6)
    np.testing.assert_allclose(R.gumbel(K5, (3,), mode="high"), [
        0.465101957321167, -0.9309044480323792, -0.2859961688518524], rtol=1e-6)
    np.testing.assert_allclose(R.exponential(K5, (4,)), [
        0.6280710697174072, 2.5368025302886963, 1.331087350845337, 0.09991033375263214],
        rtol=1e-6)
    e = np.asarray(R.exponential(R.key(1), (20000,)))
    assert e.min() >= 0 and abs(e.mean() - 1) < 0.03


def test_categorical_matches_jax():
    assert ints(R.categorical(K5, LOGITS)) == [1, 1]
    assert ints(R.categorical(K5, LOGITS, shape=(4, 2))) == [[1, 1], [2, 0], [2, 2], [2, 0]]
    assert ints(R.categorical(K5, LOGITS, axis=0, shape=(3, 3))) == [
        [1, 1, 0], [1, 0, 0], [0, 0, 0]]
    assert ints(R.categorical(K5, LOGITS, shape=(3, 2), replace=False)) == [
        [1, 1], [2, 2], [0, 0]]


def test_categorical_goodness_of_fit():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    draws = np.asarray(R.categorical(R.key(4), np.log(p).astype(np.float32), shape=(20000,)))
    counts = np.bincount(draws, minlength=4)
    # chi-square with 3 degrees of freedom; its 99.9% quantile is 16.27
    assert ((counts - 20000 * p) ** 2 / (20000 * p)).sum() < 16.27


def test_permutation_matches_jax():
    assert ints(R.permutation(K5, 10)) == [9, 0, 2, 4, 8, 1, 3, 5, 7, 6]
    x = np.arange(12).reshape(3, 4)
    assert ints(R.permutation(K5, x, axis=1)) == [[0, 2, 1, 3], [4, 6, 5, 7], [8, 10, 9, 11]]
    assert ints(R.permutation(K5, x, independent=True)) == [
        [0, 9, 10, 3], [4, 1, 2, 7], [8, 5, 6, 11]]
    assert sorted(ints(R.permutation(R.key(1), 100))) == list(range(100))


def test_choice_matches_jax():
    assert ints(R.choice(K5, 10, (5,))) == [1, 8, 3, 6, 4]
    assert ints(R.choice(K5, 10, (5,), replace=False)) == [9, 0, 2, 4, 8]
    a = np.arange(20).reshape(4, 5)
    assert ints(R.choice(K5, a, (2,), axis=1)) == [[1, 3], [6, 8], [11, 13], [16, 18]]
    p = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    assert ints(R.choice(K5, 4, (6,), p=p)) == [2, 0, 1, 3, 0, 2]
    assert ints(R.choice(K5, 4, (3,), replace=False, p=p)) == [1, 2, 3]
    assert R.choice(K5, 4, (0,)).shape == (0,)


@pytest.mark.parametrize("name,call,expected", [
    ("laplace", lambda k: R.laplace(k, (4,)), [2.50646, -2.73528, 0.17471, 1.58931]),
    ("logistic", lambda k: R.logistic(k, (4,)), [-3.15798, 3.39545, -0.32338, -2.17483]),
    ("cauchy", lambda k: R.cauchy(k, (4,)), [-7.76314, 9.7789, -0.25725, -3.01207]),
    ("rademacher", lambda k: R.rademacher(k, (6,)), [1, -1, 1, 1, 1, -1]),
    ("maxwell", lambda k: R.maxwell(k, (4,)), [2.54611, 1.75038, 2.15284, 0.51802]),
    ("double_sided_maxwell", lambda k: R.double_sided_maxwell(k, 1.0, 2.0, (4,)),
     [5.49655, 4.61122, -1.71801, 4.56918]),
    ("rayleigh", lambda k: R.rayleigh(k, 2.0, (4,)), [5.05934, 0.51362, 2.63492, 4.27313]),
    ("pareto", lambda k: R.pareto(k, 3.0, (4,)), [1.01397, 3.13556, 1.199, 1.03653]),
    ("weibull_min", lambda k: R.weibull_min(k, 2.0, 1.5, (4,)),
     [0.24024, 4.54737, 1.33356, 0.45251]),
    ("wald", lambda k: R.wald(k, 1.5, (4,)), [1.31928, 0.46763, 0.1894, 0.9463]),
    ("geometric", lambda k: R.geometric(k, 0.3, (6,)), [9, 1, 3, 7, 5, 1]),
    ("triangular", lambda k: R.triangular(k, 0.0, 1.0, 3.0, (4,)),
     [0.34976, 2.55883, 1.13429, 0.55326]),
    ("lognormal", lambda k: R.lognormal(k, 0.5, (4,)), [0.41859, 2.51697, 0.90381, 0.52992]),
    ("generalized_normal", lambda k: R.generalized_normal(k, 1.5, (4,)),
     [0.24209, 1.7145, -0.00762, 0.33981]),
    ("ball", lambda k: R.ball(k, 3, shape=(2,)),
     [[-0.38318, -0.22841, -0.82486], [-0.06198, 0.26028, 0.85965]]),
    ("ball_l1", lambda k: R.ball(k, 2, p=1.0), [-0.41744, -0.1746]),
])
def test_simple_samplers_match_jax(name, call, expected):
    out = call(R.key(9))
    np.testing.assert_allclose(np.asarray(out, np.float64), expected, rtol=2e-5, atol=1e-5)
    np.testing.assert_array_equal(mt.jit(call)(R.key(9)), out)


def test_double_sided_maxwell_shape():
    out = R.double_sided_maxwell(R.key(9), np.zeros(2, np.float32), 1.0, (3,))
    np.testing.assert_allclose(out, [[2.24827, 1.80561], [-1.359, 1.78459],
                                     [-1.07479, -1.2108]], rtol=2e-5)


def test_jit_and_vmap():
    def f(k):
        return (R.randint(k, (3,), 0, 100), R.bernoulli(k, 0.5, (3,)),
                R.categorical(k, LOGITS), R.permutation(k, 6), R.choice(k, 5, (2,)))

    for a, b in zip(f(K5), mt.jit(f)(K5), strict=True):
        np.testing.assert_array_equal(a, b)
    keys = R.split(K5, 4)
    batched = mt.vmap(f)(keys)
    for i, k in enumerate(keys):
        for a, b in zip(batched, f(k), strict=True):
            np.testing.assert_array_equal(a[i], b)
    hi = np.array([5, 10, 20, 40])
    draws = mt.vmap(lambda k, h: R.randint(k, (2,), 0, h))(keys, hi)
    np.testing.assert_array_equal(draws, np.stack(
        [R.randint(k, (2,), 0, h) for k, h in zip(keys, hi)]))


def test_errors():
    with pytest.raises(ValueError, match=r"randint: minval must be < maxval, got minval=5 "
                                         r"and maxval=5.*test_discrete.py"):
        R.randint(K5, (3,), 5, 5)
    with pytest.raises(ValueError, match=r"randint: minval must be < maxval.*index \(1,\)"):
        R.randint(K5, (2,), np.array([0, 3]), np.array([1, 2]))
    with pytest.raises(TypeError, match="randint: dtype must be an integer dtype"):
        R.randint(K5, (3,), 0, 4, np.float32)
    with pytest.raises(ValueError, match=r"choice: p must be None or a 1-d vector.*\(3,\)"):
        R.choice(K5, 4, (2,), p=np.ones(3, np.float32) / 3)
    with pytest.raises(ValueError, match=r"choice: cannot take a larger sample \(size 6\)"):
        R.choice(K5, 5, (6,), replace=False)
    with pytest.raises(ValueError, match="categorical: cannot draw 4 samples without"):
        R.categorical(K5, LOGITS, shape=(4, 2), replace=False)
    with pytest.raises(ValueError, match=r"categorical: shape \(3,\) must end with the batch"):
        R.categorical(K5, LOGITS, shape=(3,))
    with pytest.raises(TypeError, match="bernoulli: the probability p must have a float"):
        R.bernoulli(K5, 1, (2,))
    with pytest.raises(ValueError, match="gumbel: dtype must be a float dtype"):
        R.gumbel(K5, (2,), np.int32)
    with pytest.raises(OverflowError, match=r"randint: the bound 2147483648 does not fit"):
        R.randint(K5, (2,), 0, 2**31)
    with pytest.raises(TypeError, match="ball: d must be a non-negative Python int"):
        R.ball(K5, 2.5)
    with pytest.raises(TypeError, match=r"split: expected a PRNG key.*i32\[2\]"):
        R.split(np.array([0, 1], np.int32))
    with pytest.raises(TypeError, match="permutation: expected a PRNG key, got int"):
        R.permutation(3, 4)


def test_permutation_positions_are_uniform():
    # where element 0 lands, over 5000 independent shuffles of 5 items: chi-square, 4 dof
    # (99.9% quantile 18.47)
    keys = R.split(R.key(21), 5000)
    perms = np.asarray(mt.vmap(lambda k: R.permutation(k, 5))(keys))
    counts = np.bincount(np.argmax(perms == 0, axis=1), minlength=5)
    assert ((counts - 1000.0) ** 2 / 1000.0).sum() < 18.47


def test_choice_with_p_frequencies():
    p = np.array([0.05, 0.15, 0.3, 0.5], np.float32)
    draws = np.asarray(R.choice(R.key(8), 4, (20000,), p=p))
    counts = np.bincount(draws, minlength=4)
    # chi-square with 3 degrees of freedom; its 99.9% quantile is 16.27
    assert ((counts - 20000 * p) ** 2 / (20000 * p)).sum() < 16.27
