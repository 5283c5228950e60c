"""uniform, normal, truncated_normal: JAX 0.10's draws written literally (uniform bit for
bit, normal to float32 rounding), moments, jit/vmap/grad, and errors."""

import ml_dtypes
import numpy as np
import pytest

import mytorch as mt

R = mt.random
K42 = R.key(42)


@pytest.mark.parametrize("dtype,expected", [
    ("float32", [0.48870956897735596, 0.6797971725463867, 0.6162714958190918,
                 0.5610160827636719, 0.4506446123123169, 0.58586585521698]),
    ("float16", [0.076171875, 0.1904296875, 0.9755859375, 0.7568359375, 0.44921875,
                 0.3076171875]),
    ("bfloat16", [0.6328125, 0.84375, 0.96875, 0.8359375, 0.078125, 0.84375]),
])
def test_uniform_bit_exact(dtype, expected):
    out = R.uniform(K42, (6,), dtype)
    assert out.dtype == np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    np.testing.assert_array_equal(np.asarray(out).astype(np.float32), expected)
    np.testing.assert_array_equal(R.uniform(R.PRNGKey(42), (6,), dtype), out)


def test_uniform_bounds_bit_exact():
    # JAX's compiled a * b + c is fused (one rounding): reproduced to the bit
    out = R.uniform(K42, (2, 3), minval=np.array([-1.0, 0.0, 1.0], np.float32), maxval=5.0)
    np.testing.assert_array_equal(out, np.array(
        [[1.9322574138641357, 3.3989858627319336, 3.465085983276367],
         [2.3660964965820312, 2.253222942352295, 3.34346342086792]], np.float32))
    big = R.uniform(R.key(7), (3,), minval=-1e30, maxval=1e30)
    np.testing.assert_array_equal(big, np.array(
        [3.481798163294559e+29, 9.492338197779803e+29, -3.943128789531325e+29], np.float32))


def test_uniform_float64_x64(x64):
    out = R.uniform(K42, (4,), "float64")
    np.testing.assert_array_equal(out, [0.4267275666499091, 0.015010069515314584,
                                        0.5741444178995352, 0.7298188969046309])
    bounded = R.uniform(R.key(7), (3,), "float64", -2.0, 3.0)
    np.testing.assert_array_equal(bounded, [2.220534725411764, -1.7729370743667177,
                                            -0.8750768715357309])
    assert R.uniform(K42).dtype == np.float64  # the default float with x64


def test_uniform_range_and_moments():
    u = np.asarray(R.uniform(R.key(0), (20000,), minval=-2.0, maxval=3.0))
    assert u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 0.05 and abs(u.var() - 25 / 12) < 0.1
    # chi-square goodness of fit over 10 equal bins (9 dof; 99.9% quantile 27.9)
    counts = np.histogram(u, bins=10, range=(-2.0, 3.0))[0]
    assert ((counts - 2000.0) ** 2 / 2000.0).sum() < 27.9


def test_uniform_shapes():
    assert R.uniform(K42).shape == ()
    assert R.uniform(K42, (0, 3)).shape == (0, 3)
    assert R.uniform(K42, [2, 1]).shape == (2, 1)


def test_normal_matches_jax():
    # erf_inv is XLA's float32 polynomial, so these draws are JAX's to the bit (over many
    # draws ~99% are; the rest differ by an ulp where log1p rounds differently)
    np.testing.assert_array_equal(R.normal(K42, (6,)), np.array([
        -0.02830461598932743, 0.4671318531036377, 0.2957029640674591, 0.15354591608047485,
        -0.12403281778097153, 0.21692314743995667], np.float32))
    half = R.normal(K42, (4,), "float16")
    assert half.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(half, np.float32),
                                  [-1.4296875, -0.87548828125, 1.974609375, 0.69677734375])
    bf = R.normal(R.key(3), (4,), "bfloat16")
    assert bf.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(np.asarray(bf, np.float32),
                                  [-0.0146484375, 0.73046875, 1.125, -0.87890625])


def test_erf_inv_against_numpy():
    from mytorch.random.uniform import erf_inv

    x = np.linspace(-0.999999, 0.999999, 2001).astype(np.float32)
    ref = np.array([_erf_inv_ref(v) for v in x.astype(np.float64)])
    np.testing.assert_allclose(erf_inv(mt.numpy.asarray(x)), ref, rtol=3e-6, atol=1e-7)


def _erf_inv_ref(v):
    """Bisection on math.erf (math.erfc in the tails, where 1 - |v| is exact): an
    independent float64 erf_inv."""
    import math

    if v < 0:
        return -_erf_inv_ref(-v)
    if v > 0.5:
        target, f = 1.0 - v, math.erfc  # decreasing
        lo, hi = 0.0, 9.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) > target else (lo, mid)
        return (lo + hi) / 2
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
    return (lo + hi) / 2


def test_normal_float64_x64(x64):
    np.testing.assert_allclose(R.normal(R.key(7), (3,), "float64"), [
        1.0114813355590866, -1.6910609087906374, -0.7554662899926428], rtol=1e-15)
    np.testing.assert_allclose(R.truncated_normal(R.key(7), -1.0, 2.0, (3,), "float64"), [
        1.034876278399035, -0.8566117260155717, -0.404761387816821], rtol=1e-15)
    z = np.asarray(R.normal(R.key(8), (20000,), "float64"))
    assert np.isfinite(z).all() and abs(z.mean()) < 0.04 and abs(z.var() - 1) < 0.05


def test_erf_inv_float64_against_bisection(x64):
    from mytorch.random.uniform import erf_inv

    # the three regions of the polynomial: w = -log(1 - x^2) < 6.25, < 16, >= 16
    x = np.concatenate([np.linspace(-0.999, 0.999, 301),
                        1 - np.logspace(-3, -15, 40), -(1 - np.logspace(-7, -15, 9))])
    ref = np.array([_erf_inv_ref(v) for v in x])
    # near +-1 the polynomial's w = -log1p(-x*x) inherits the rounding of x*x: a relative
    # error of about eps / (1 - |x|), as in XLA's evaluation of the same formula
    bound = (1e-13 + 2.3e-16 / (1 - np.abs(x))) * np.abs(ref) + 1e-15
    assert (np.abs(np.asarray(erf_inv(mt.numpy.asarray(x))) - ref) <= bound).all()


def test_normal_moments():
    z = np.asarray(R.normal(R.key(1), (20000,)), np.float64)
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 0.04 and abs(z.var() - 1) < 0.05
    assert abs((z**3).mean()) < 0.1 and abs((z**4).mean() - 3) < 0.2


def test_truncated_normal_matches_jax():
    np.testing.assert_allclose(R.truncated_normal(K42, -1.0, 2.0, (6,)), [
        0.14770005643367767, 0.5684449076652527, 0.42102551460266113, 0.29997000098228455,
        0.0691138207912445, 0.3537633717060089], rtol=1e-5)
    lower, upper = np.array([-3.0, 0.0], np.float32), np.array([3.0, 0.1], np.float32)
    out = R.truncated_normal(R.key(7), lower, upper)
    assert out.shape == (2,)
    np.testing.assert_allclose(out, [0.4499310553073883, 0.0974535197019577], rtol=1e-5)


def test_truncated_normal_inside_bounds():
    x = np.asarray(R.truncated_normal(R.key(3), -0.5, 0.25, (5000,)))
    assert x.min() > -0.5 and x.max() < 0.25
    x = np.asarray(R.truncated_normal(R.key(3), 4.0, 5.0, (100,)))  # far in the tail
    assert np.isfinite(x).all() and x.min() > 4.0 and x.max() < 5.0


def test_jit_and_vmap():
    def f(k):
        return R.uniform(k, (3,)), R.normal(k, (2,)), R.truncated_normal(k, -1.0, 1.0, (2,))

    for a, b in zip(f(K42), mt.jit(f)(K42), strict=True):
        np.testing.assert_array_equal(a, b)
    keys = R.split(K42, 5)
    batched = mt.vmap(lambda k: R.uniform(k, (3,)))(keys)
    np.testing.assert_array_equal(batched, np.stack([R.uniform(k, (3,)) for k in keys]))
    bounds = np.arange(5, dtype=np.float32)
    shifted = mt.vmap(lambda k, lo: R.uniform(k, (2,), minval=lo, maxval=lo + 1))(keys, bounds)
    np.testing.assert_array_equal(shifted, np.stack(
        [R.uniform(k, (2,), minval=lo, maxval=lo + 1) for k, lo in zip(keys, bounds)]))


def test_grad_through_sampling():
    g = mt.grad(lambda x: (x * R.normal(K42, (3,))).sum())(np.ones(3, np.float32))
    np.testing.assert_array_equal(g, R.normal(K42, (3,)))
    # the reparameterised bounds of uniform are differentiable: d/dmax = u
    g = mt.grad(lambda hi: R.uniform(K42, (), minval=0.0, maxval=hi))(2.0)
    np.testing.assert_allclose(g, R.uniform(K42), rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="uniform: dtype must be a float dtype.*int32"):
        R.uniform(K42, (2,), np.int32)
    with pytest.raises(TypeError, match=r"uniform: shape must be a tuple of ints"):
        R.uniform(K42, (2.0, 3))
    with pytest.raises(ValueError, match="normal: shape must have non-negative entries"):
        R.normal(K42, (-1,))
    with pytest.raises(TypeError, match="normal: expected a PRNG key, got int 0"):
        R.normal(0, (2,))
    with pytest.raises(ValueError, match=r"uniform: the parameter shapes.*\(3,\).*\(2,\)"):
        R.uniform(K42, (2,), minval=np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="truncated_normal: dtype must be a float dtype"):
        R.truncated_normal(K42, -1.0, 1.0, (2,), np.uint8)


def test_erf_inv_derivative():
    from mytorch.random.uniform import erf_inv

    # d erf_inv(x)/dx = sqrt(pi)/2 * exp(erf_inv(x)**2); finite in both regions
    for x in (0.0, 0.3, -0.9, 0.99999):
        expected = np.sqrt(np.pi) / 2 * np.exp(_erf_inv_ref(x) ** 2)
        np.testing.assert_allclose(mt.grad(erf_inv)(np.float32(x)), expected, rtol=2e-3)


def test_complex_normal_is_two_halves_over_sqrt2():
    """JAX's construction: (normal(k1) + 1j normal(k2)) / sqrt(2) for the key's split."""
    key = mt.random.key(3)
    z = np.asarray(mt.random.normal(key, (2000,), np.complex64))
    k1, k2 = mt.random.split(key)
    re = np.asarray(mt.random.normal(k1, (2000,)))
    im = np.asarray(mt.random.normal(k2, (2000,)))
    assert z.dtype == np.complex64
    np.testing.assert_allclose(z, (re + 1j * im) / np.sqrt(2), rtol=1e-6)
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.1
