"""gamma, gammasgn, beta, factorial, poch, expn, exp1, expi, spence, bernoulli and hyp1f1
against scipy.special (float64 references; mpmath where SciPy itself loses digits, and
exact rationals for the Bernoulli numbers), their derivatives against float64 central
differences, vmap against a loop, jit against eager calls, and their errors."""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import scipy.special as ss
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.scipy import special
from tests.autodiff.fd import check_grads

INF, NAN = np.inf, np.nan
X64_SETTINGS = settings(max_examples=25, deadline=None,
                        suppress_health_check=[HealthCheck.function_scoped_fixture])


def _draws(strategy, n=8):
    return st.lists(strategy, min_size=n, max_size=n).map(np.array)


def _floats(lo, hi):
    # no subnormals: there SciPy's Gamma(z) overflows and its ratios lose the value
    return st.floats(lo, hi, allow_subnormal=False)


def _close(got, ref, rtol, atol=0.0):
    got = np.asarray(got)
    with np.errstate(under="ignore"):  # rtol times a tiny reference
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True)


# ---- values, float64 ---------------------------------------------------------------------
@X64_SETTINGS
@given(_draws(_floats(-40.0, 170.0)))
def test_gamma_gammasgn_float64(x64, x):
    with np.errstate(all="ignore"):
        _close(special.gamma(x), ss.gamma(x), rtol=1e-12)
        _close(special.gammasgn(x), ss.gammasgn(x), rtol=0)
        _close(special.factorial(x), ss.factorial(x), rtol=1e-12)


@X64_SETTINGS
@given(_draws(_floats(-30.0, 150.0)), _draws(_floats(-30.0, 150.0)))
def test_beta_poch_float64(x64, a, b):
    # SciPy's poch(-1, 1e-38) is NaN (its recurrence meets the pole that -1 + 1e-38 rounds
    # to), where Gamma(-1 + m) / Gamma(-1) is 0: keep the draws away from such tiny values
    a, b = (np.where(np.abs(v) < 1e-6, 0.0, v) for v in (a, b))
    with np.errstate(all="ignore"):
        _close(special.beta(a, b), ss.beta(a, b), rtol=1e-10)
        m = np.clip(b, -25, 25)  # SciPy's poch loses digits past this through lgamma
        _close(special.poch(a, m), ss.poch(a, m), rtol=1e-10)


@pytest.mark.parametrize("a,b", [(7.3e5, 23.7), (3e4, 2.0), (1e6, 0.5), (2e3, 2e3)])
def test_beta_large_arguments_against_mpmath(x64, a, b):
    # SciPy subtracts lgamma values of ~1e7 here and keeps ~8 digits; Stirling's
    # difference keeps them all
    _close(special.beta(a, b), float(mpmath.beta(a, b)), rtol=1e-12)


@pytest.mark.parametrize("z,m", [(5e4, -23.3), (1e4, 2.5), (1e5, 7.0), (20.0, 30.5)])
def test_poch_large_arguments_against_mpmath(x64, z, m):
    _close(special.poch(z, m), float(mpmath.rf(z, m)), rtol=1e-12)


@X64_SETTINGS
@given(_draws(st.integers(0, 80)), _draws(_floats(1e-6, 700.0)))
def test_expn_float64(x64, n, x):
    _close(special.expn(n, x), ss.expn(n, x), rtol=1e-12, atol=1e-300)


@X64_SETTINGS
@given(_draws(_floats(-700.0, 700.0)))
def test_exp1_expi_float64(x64, x):
    with np.errstate(all="ignore"):
        _close(special.exp1(x), ss.exp1(x), rtol=1e-12, atol=1e-300)
        # Ei has a root at 0.3725...: the absolute error there is that of its terms
        _close(special.expi(x), ss.expi(x), rtol=1e-12, atol=1e-15)


@X64_SETTINGS
@given(_draws(_floats(0.0, 1e6)))
def test_spence_float64(x64, x):
    _close(special.spence(x), ss.spence(x), rtol=1e-13, atol=1e-300)


@X64_SETTINGS
@given(_draws(_floats(-10.0, 20.0)), _draws(_floats(0.1, 20.0)),
       _draws(_floats(-50.0, 50.0)))
def test_hyp1f1_float64(x64, a, b, x):
    x = np.where(np.abs(x) < 1e-100, 0.0, x)  # SciPy gives NaN at some tiny negative x
    ref = ss.hyp1f1(a, b, x)
    # where a > b and x << 0 the series cancels (documented): loose tolerance there
    loose = (a > b) & (x < 0)
    got = np.asarray(special.hyp1f1(a, b, x))
    _close(got[~loose], ref[~loose], rtol=1e-9)
    _close(got[loose], ref[loose], rtol=1e-5, atol=1e-5 * np.abs(ref[loose]).max(initial=0))


@pytest.mark.parametrize("x", [-800.0, -300.0, -120.0, 120.0, 300.0, 700.0])
def test_hyp1f1_large_x(x64, x):
    a = np.array([0.5, 1.0, 3.0, 7.5])
    b = np.array([1.5, 2.5, 9.0, 2.0])
    _close(special.hyp1f1(a, b, x), ss.hyp1f1(a, b, x), rtol=1e-10, atol=1e-300)


# ---- edge values -------------------------------------------------------------------------
EDGE = np.array([-INF, -3.0, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, INF, NAN])


def test_unary_edges(x64):
    with np.errstate(all="ignore"):
        for ours, ref in ((special.gamma, ss.gamma), (special.gammasgn, ss.gammasgn),
                          (special.factorial, ss.factorial), (special.exp1, ss.exp1),
                          (special.expi, ss.expi), (special.spence, ss.spence)):
            got = np.asarray(ours(EDGE))
            np.testing.assert_allclose(got, ref(EDGE), rtol=1e-14, err_msg=ours.__name__)
            number = ~np.isnan(got)  # (SciPy's NaN may carry either sign)
            assert np.array_equal(np.signbit(got[number]), np.signbit(ref(EDGE)[number])), \
                ours.__name__


def test_binary_edges(x64):
    """beta and poch on every pair of edge values, as SciPy; NaN in gives NaN out (where
    SciPy's Cephes checks a pole first: beta(0, NaN) is +inf there), and poch at infinite
    arguments is the limit of the ratio or NaN (where Cephes' loop gives 0 or NaN)."""
    a, b = (v.ravel() for v in np.meshgrid(EDGE, EDGE))
    with np.errstate(all="ignore"):
        ref = ss.beta(a, b)
        ref[np.isnan(a) | np.isnan(b)] = NAN
        _close(special.beta(a, b), ref, rtol=1e-14)
        finite = np.isfinite(a) & np.isfinite(b)
        ref = ss.poch(a, b)
        ref[np.isnan(a) | np.isnan(b)] = NAN
        ref[b == 0] = 1.0
        _close(np.asarray(special.poch(a, b))[finite], ref[finite], rtol=1e-14)
        np.testing.assert_array_equal(np.asarray(special.poch(INF, [2.5, -2.5, 0.0])),
                                      [INF, 0.0, 1.0])
        # a pole z and a non-integer m whose sum rounds onto another pole: 0
        np.testing.assert_array_equal(np.asarray(special.poch(-1.0, [1e-38, 0.5])),
                                      [0.0, 0.0])


@pytest.mark.filterwarnings("ignore:floating point number truncated:RuntimeWarning")
def test_expn_edges(x64):
    n = np.array([0, 1, 2, 3, -1, 1, 1.5, 60, 2, 2, 51, 0, 0.5, NAN, 3])
    x = np.array([0, 0, 0, 1, 1, -1, 1, 2, INF, NAN, 0, INF, 1, 1, 750])
    # (SciPy warns that it truncates 1.5 and 0.5)
    _close(special.expn(n, x), ss.expn(n, x), rtol=1e-14)


def test_hyp1f1_edges(x64):
    a = np.array([0, 1, 1, -2, -2, 2, NAN, 1, 1, 2.5, -3.0, 1.5])
    b = np.array([1, -1, -2, -3, -1, 2, 1, 0, 2, 2.5, 2.2, 1.5])
    x = np.array([1, 1, 1, 1, 1, 3.0, 1, 1, -INF, -2.0, -7.5, 0.0])
    _close(special.hyp1f1(a, b, x), ss.hyp1f1(a, b, x), rtol=1e-14)
    assert np.isnan(np.asarray(special.hyp1f1(1.0, 2.0, INF)))


# ---- float32 -----------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(_draws(_floats(0.05, 30.0)), _draws(_floats(-4.0, 4.0)))
def test_float32(a, m):
    with np.errstate(under="ignore"):
        a32, m32 = a.astype(np.float32), m.astype(np.float32)
    a64, m64 = a32.astype(np.float64), m32.astype(np.float64)
    # (away from the poles of poch and the cancellation of hyp1f1, where float32's own
    # rounding of z + m or of the terms is amplified: both arguments of poch positive,
    # b > a for hyp1f1)
    b32 = a32[::-1] / 5 + a32 / 10
    cases = [(special.gamma(a32), ss.gamma(a64)), (special.beta(a32, a32[::-1]),
                                                   ss.beta(a64, a64[::-1])),
             (special.poch(a32, np.abs(m32)), ss.poch(a64, np.abs(m64))),
             (special.factorial(a32), ss.factorial(a64)),
             (special.expn(3, a32), ss.expn(3, a64)), (special.exp1(a32), ss.exp1(a64)),
             (special.expi(-a32), ss.expi(-a64)), (special.spence(a32), ss.spence(a64)),
             (special.hyp1f1(a32 / 10, b32, m32),
              ss.hyp1f1((a32 / 10).astype(np.float64), b32.astype(np.float64), m64))]
    for out, ref in cases:
        assert out.dtype == np.float32
        _close(out, ref, rtol=5e-5, atol=1e-30)


def test_integers_and_broadcasting():
    out = special.poch(np.arange(1, 4)[:, None], np.arange(3))
    assert out.shape == (3, 3) and out.dtype == np.float32
    _close(out, ss.poch(np.arange(1, 4)[:, None], np.arange(3)), rtol=1e-6)
    assert special.expn(np.arange(4), np.float32(0.5)).shape == (4,)
    assert special.gamma(np.float16(3.0)).dtype == np.float16


# ---- bernoulli and exact factorial -------------------------------------------------------
def _bernoulli_exact(n):
    """B_0..B_n from the defining recurrence sum_{k<=m} C(m+1, k) B_k = 0 (B_1 = -1/2): a
    different construction from the library's (Akiyama-Tanigawa)."""
    out = [Fraction(1)]
    for m in range(1, n + 1):
        out.append(-sum(math.comb(m + 1, k) * out[k] for k in range(m)) / (m + 1))
    return out


def _rounded(v):
    try:
        return float(v)
    except OverflowError:
        return INF if v > 0 else -INF


@pytest.mark.parametrize("n", [0, 1, 2, 3, 10, 64, 150, 300])
def test_bernoulli(x64, n):
    out = special.bernoulli(n)
    assert out.shape == (n + 1,) and out.dtype == np.float64
    want = np.array([_rounded(v) for v in _bernoulli_exact(n)])
    np.testing.assert_array_equal(np.asarray(out), want)  # each rounded once
    # SciPy's float recurrence (within its own rounding)
    np.testing.assert_allclose(np.asarray(out), ss.bernoulli(n), rtol=1e-10)


def test_bernoulli_default_dtype_and_errors():
    assert special.bernoulli(4).dtype == np.float32
    assert np.isinf(np.asarray(special.bernoulli(70))[68])  # B_68 overflows float32
    with pytest.raises(ValueError, match="bernoulli: n must be >= 0"):
        special.bernoulli(-1)
    with pytest.raises(TypeError, match="bernoulli: n must be a Python int"):
        special.bernoulli(2.5)
    with pytest.raises(TypeError, match="bernoulli: n must be a Python int"):
        mt.jit(special.bernoulli)(3)


def test_factorial_exact():
    np.testing.assert_array_equal(np.asarray(special.factorial(np.array([0, 3, 12, -2]),
                                                               exact=True)),
                                  [1, 6, 479001600, 0])
    with pytest.raises(OverflowError, match="factorial: exact=True with n up to 13"):
        special.factorial(13, exact=True)  # int32 without x64
    with pytest.raises(ValueError, match="factorial: exact=True needs integer n"):
        special.factorial(np.array([2.5]), exact=True)
    with pytest.raises(TypeError, match="factorial: exact=True needs a concrete"):
        mt.jit(lambda n: special.factorial(n, exact=True))(np.int32(3))


def test_factorial_exact_x64(x64):
    out = special.factorial(np.array([20, 5]), exact=True)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(np.asarray(out), [math.factorial(20), 120])


# ---- derivatives -------------------------------------------------------------------------
UNARY_POINTS = np.array([0.3, 1.7, 4.2, 9.5])


@pytest.mark.parametrize("fn", [special.gamma, special.gammasgn, special.factorial,
                                special.exp1, special.spence, special.expi],
                         ids=lambda f: f.__name__)
def test_unary_derivatives(x64, fn):
    check_grads(fn, (UNARY_POINTS,), order=2)


def test_gamma_derivatives_negative(x64):
    check_grads(special.gamma, (np.array([-0.5, -1.3, -2.7]),), order=2)
    check_grads(special.expi, (np.array([-0.5, -3.0, -12.0]),), order=2)
    check_grads(special.spence, (np.array([1.0, 0.2, 3.5]),), order=2)


def test_binary_derivatives(x64):
    a = np.array([0.7, 2.5, 20.0, -1.5])
    b = np.array([1.3, 0.4, 3.0, 2.2])
    check_grads(special.beta, (a, b), order=2)
    check_grads(special.poch, (a, b), order=2)
    check_grads(special.poch, (np.array([3e4, 25.0]), np.array([2.5, -3.5])), order=1)


def test_expn_derivatives(x64):
    n = np.array([0.0, 1.0, 2.0, 5.0, 60.0, 3.0])
    x = np.array([0.5, 0.3, 2.5, 1.1, 4.0, 30.0])
    check_grads(lambda x: special.expn(n, x), (x,), order=2)
    # the order has no derivative: its tangent is ignored
    g = mt.grad(lambda n: special.expn(n, 1.5))(2.0)
    assert float(g) == 0.0


def test_hyp1f1_derivatives(x64):
    a = np.array([0.5, 1.5, 3.0, -2.5])
    b = np.array([1.5, 2.0, 0.7, 3.0])
    x = np.array([0.7, -3.0, 5.0, 2.0])
    check_grads(lambda x: special.hyp1f1(a, b, x), (x,), order=2)
    check_grads(special.hyp1f1, (a, b, x), order=1)
    # the expansion for large x and Kummer's transformation, each differentiated
    check_grads(special.hyp1f1, (np.array([0.5, 2.0]), np.array([1.5, 3.5]),
                                 np.array([150.0, -150.0])), order=1, rtol=1e-4)


# ---- vmap and jit ------------------------------------------------------------------------
FUNCTIONS = [
    ("gamma", lambda a, b, x: special.gamma(a)),
    ("gammasgn", lambda a, b, x: special.gammasgn(x)),
    ("beta", lambda a, b, x: special.beta(a, b)),
    ("factorial", lambda a, b, x: special.factorial(a)),
    ("poch", lambda a, b, x: special.poch(a, x)),
    ("expn", lambda a, b, x: special.expn(mnp.floor(b), a)),
    ("exp1", lambda a, b, x: special.exp1(a)),
    ("expi", lambda a, b, x: special.expi(x)),
    ("spence", lambda a, b, x: special.spence(a)),
    ("hyp1f1", lambda a, b, x: special.hyp1f1(a, b, x)),
]
A = np.array([0.5, 2.0, 1.1, 3.7, 12.0], np.float32)
B = np.array([1.5, 0.3, 4.0, 2.0, 7.5], np.float32)
X = np.array([-2.5, 0.4, 3.0, -0.7, 60.0], np.float32)


@pytest.mark.parametrize("name,fn", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_vmap_matches_loop_and_jit_matches_eager(name, fn):
    loop = np.array([np.asarray(fn(A[i], B[i], X[i])) for i in range(len(A))])
    np.testing.assert_allclose(np.asarray(mt.vmap(fn)(A, B, X)), loop, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(mt.jit(fn)(A, B, X)), np.asarray(fn(A, B, X)),
                               rtol=1e-6)


def test_vmap_of_grad(x64):
    a, x = np.array([0.5, 2.0, 3.5]), np.array([0.7, 3.0, 12.0])
    for fn in (special.gamma, special.spence, special.expi, lambda v: special.expn(2, v)):
        loop = [float(mt.grad(fn)(v)) for v in x]
        np.testing.assert_allclose(np.asarray(mt.vmap(mt.grad(fn))(x)), loop, rtol=1e-12)
    fn = mt.grad(special.hyp1f1, argnums=(0, 2))
    got = mt.vmap(fn)(a, a + 1, x)
    jitted = mt.jit(mt.vmap(fn))(a, a + 1, x)
    np.testing.assert_allclose(np.asarray(jitted[0]), np.asarray(got[0]), rtol=1e-12)
    for i in range(3):
        want = fn(a[i], a[i] + 1, x[i])
        np.testing.assert_allclose([float(got[0][i]), float(got[1][i])],
                                   [float(want[0]), float(want[1])], rtol=1e-10)


# ---- errors ------------------------------------------------------------------------------
@pytest.mark.parametrize("name,call", [
    ("gamma", lambda z: special.gamma(z)), ("beta", lambda z: special.beta(z, 1.0)),
    ("poch", lambda z: special.poch(1.0, z)), ("expn", lambda z: special.expn(1, z)),
    ("expi", lambda z: special.expi(z)), ("spence", lambda z: special.spence(z)),
    ("hyp1f1", lambda z: special.hyp1f1(1.0, 2.0, z))])
def test_complex_operands_are_an_error(name, call):
    z = mnp.asarray(np.array([1 + 1j], np.complex64))
    with pytest.raises(TypeError, match=rf"{name}: needs real floating-point operands.*"
                                        r"c64\[1\].*test_special_extras.py"):
        call(z)


# ---- Legendre functions and spherical harmonics -----------------------------------------
LEGENDRE_Z = np.array([0.3, -0.7, 0.0, 0.999, -0.2, 0.9, 1.0, -1.0])


@pytest.mark.parametrize("m,n", [(0, 0), (3, 3), (2, 5), (5, 2), (8, 8)])
def test_lpmn_against_scipy(x64, m, n):
    values, derivs = special.lpmn(m, n, LEGENDRE_Z)
    assert values.shape == derivs.shape == (m + 1, n + 1, len(LEGENDRE_Z))
    ref = ss.assoc_legendre_p_all(n, m, LEGENDRE_Z, diff_n=1)[:, :, : m + 1]
    _close(values, np.transpose(ref[0], (1, 0, 2)), rtol=1e-13, atol=1e-14)
    _close(derivs, np.transpose(ref[1], (1, 0, 2)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("m,n", [(3, 3), (4, 6), (10, 10)])
def test_lpmn_values_normalized(x64, m, n):
    values = np.asarray(special.lpmn_values(m, n, LEGENDRE_Z, is_normalized=True))
    raw = np.asarray(special.lpmn_values(m, n, LEGENDRE_Z, is_normalized=False))
    _close(raw, np.asarray(special.lpmn(m, n, LEGENDRE_Z)[0]), rtol=0)
    norm = np.array([[math.sqrt((2 * l + 1) / (4 * math.pi) * math.factorial(l - k)
                                / math.factorial(l + k)) if k <= l else 0.0
                      for l in range(n + 1)] for k in range(m + 1)])
    _close(values, norm[:, :, None] * raw, rtol=1e-12, atol=1e-15)
    # SciPy's orthonormal-on-[-1, 1] form, sqrt(2 pi) times larger (inside (-1, 1): at
    # +-1 SciPy's normalized values are off)
    inner = np.abs(LEGENDRE_Z) < 1
    ref = ss.assoc_legendre_p_all(n, m, LEGENDRE_Z[inner], norm=True)[0][:, : m + 1]
    _close(values[:, :, inner], np.transpose(ref, (1, 0, 2)) / math.sqrt(2 * math.pi),
           rtol=1e-12, atol=1e-15)


def test_sph_harm_against_scipy(x64):
    rng = np.random.default_rng(0)
    n = rng.integers(0, 7, 40)
    m = np.array([rng.integers(-k, k + 1) for k in n])
    theta, phi = rng.uniform(0, 2 * np.pi, 40), rng.uniform(0, np.pi, 40)
    out = special.sph_harm(m, n, theta, phi)
    assert out.dtype == np.complex128 and out.shape == (40,)
    _close(out, ss.sph_harm_y(n, m, phi, theta), rtol=1e-12, atol=1e-14)
    fn = mt.jit(lambda m, n, t, p: special.sph_harm(m, n, t, p, n_max=6))
    _close(fn(m, n, theta, phi), np.asarray(out), rtol=1e-14, atol=1e-15)
    loop = [complex(special.sph_harm(m[i], n[i], theta[i], phi[i], n_max=6)) for i in range(5)]
    got = mt.vmap(lambda *a: special.sph_harm(*a, n_max=6))(m[:5], n[:5], theta[:5], phi[:5])
    _close(got, np.array(loop), rtol=1e-14, atol=1e-15)


def test_legendre_float32_vmap_jit_and_derivatives(x64):
    z = LEGENDRE_Z[:6]
    v32 = special.lpmn_values(3, 4, z.astype(np.float32), is_normalized=True)
    assert v32.dtype == np.float32
    _close(v32, np.asarray(special.lpmn_values(3, 4, z, is_normalized=True)), rtol=1e-5,
           atol=1e-6)
    _close(mt.jit(lambda z: special.lpmn(3, 4, z)[1])(z),
           np.asarray(special.lpmn(3, 4, z)[1]), rtol=1e-14)
    # the derivatives that lpmn returns are those of its values
    d_auto = mt.jacfwd(lambda z: special.lpmn(3, 4, z)[0])(z)
    _close(np.einsum("abii->abi", np.asarray(d_auto)), np.asarray(special.lpmn(3, 4, z)[1]),
           rtol=1e-10, atol=1e-12)
    check_grads(lambda z: special.lpmn_values(2, 3, z, is_normalized=True), (z,), order=2)
    check_grads(lambda z: special.lpmn(2, 3, z), (z,), order=1)
    check_grads(lambda t, p: special.sph_harm(np.array([1, -2]), np.array([2, 3]), t, p),
                (np.array([0.4, 2.0]), np.array([1.1, 0.3])), order=1)


def test_legendre_errors():
    with pytest.raises(ValueError, match=r"lpmn: z must be a 1-D array of points, got "
                                         r"shape \(2, 2\)"):
        special.lpmn(2, 2, np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="lpmn_values: n must be >= 0"):
        special.lpmn_values(1, -1, np.zeros(3, np.float32), True)
    with pytest.raises(TypeError, match="lpmn: m must be a Python int"):
        special.lpmn(1.5, 2, np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="sph_harm: n_max must be given when n is traced"):
        mt.jit(lambda n: special.sph_harm(0, n, 0.1, 0.2))(np.int32(2))
    with pytest.raises(TypeError, match="sph_harm: m must be integers"):
        special.sph_harm(np.float32(1.0), 2, 0.1, 0.2)
