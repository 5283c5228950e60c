"""Values and derivatives of mytorch.scipy.special (and mnp.sinc) over their whole domain:
far tails, poles and endpoints, where plain differentiation through a select used to give
NaN or a wrong finite number.

References are independent of the implementation: float64 numbers written in literally
(computed once with SciPy: log_ndtr, ndtri, polygamma(1, x), and the normal hazard
phi/Phi as sqrt(2/pi) / erfcx(-x/sqrt(2))), closed forms evaluated with `math`, a
continued fraction for the Mills ratio, and float64 central differences (check_grads, or
differences of the first derivative for the second).
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.scipy import special
from tests.autodiff.fd import check_grads

INF, NAN = math.inf, math.nan


def _grad(f, x, dtype=np.float64):
    return float(mt.grad(f)(mnp.asarray(np.asarray(x, dtype))))


def _grad2(f, x, dtype=np.float64):
    return float(mt.grad(mt.grad(f))(mnp.asarray(np.asarray(x, dtype))))


def _value(f, x, dtype=np.float64):
    return float(f(mnp.asarray(np.asarray(x, dtype))))


def _close(got, want, rtol, atol=0.0, what=""):
    if math.isnan(want) or math.isinf(want):
        assert got == want or (math.isnan(got) and math.isnan(want)), f"{what}: {got} != {want}"
    else:
        assert abs(got - want) <= atol + rtol * abs(want), f"{what}: {got!r} != {want!r}"


def _use(request, dtype):
    """Turn x64 on for a float64 case (so the inputs stay float64)."""
    if dtype == np.float64:
        request.getfixturevalue("x64")


def _fd_of_grad(f, x, h):
    """Central difference of mytorch's first derivative (for second derivatives)."""
    return (_grad(f, x + h) - _grad(f, x - h)) / (2 * h)


# ---- log_ndtr ------------------------------------------------------------------------------
# x, log_ndtr(x), phi(x) / Phi(x)
LOG_NDTR = [
    (-1e5, -5000000012.431865, 100000.00001),
    (-1000.0, -500007.8266948122, 1000.0009999979998),
    (-100.0, -5005.524208694205, 100.00999800099926),
    (-40.0, -804.6084420137539, 40.02496884720727),
    (-38.0, -726.5572160188201, 38.026279466575865),
    (-30.0, -454.32124395634327, 30.033259667433672),
    (-21.0, -224.4657158314145, 21.047405496518667),
    (-20.0, -203.9171553710973, 20.049753068527853),
    (-19.5, -194.01696577749752, 19.55101580258062),
    (-10.0, -53.23128515051248, 10.098093233962512),
    (-5.6, -18.351379495909335, 5.768666604297135),
    (-5.0, -15.064998393988727, 5.186503967125843),
    (-1.0, -1.8410216450092634, 1.5251352761609813),
    (0.0, -0.6931471805599453, 0.7978845608028654),
    (1.0, -0.1727537790234499, 0.28759997093917844),
    (5.0, -2.8665161296376294e-07, 1.4867199409049086e-06),
    (8.0, -6.220960574271742e-16, 5.052271083536931e-15),
    (10.0, -7.61985302416047e-24, 7.694598626706475e-23),
    (38.0, -2.8854e-316, 0.0),  # -Phi(-38) (SciPy rounds it to -0.0)
]


@pytest.mark.parametrize("x,value,slope", LOG_NDTR)
def test_log_ndtr_value_and_derivative_float64(x64, x, value, slope):
    _close(_value(special.log_ndtr, x), value, 5e-14, 1e-319, what="log_ndtr")
    _close(_grad(special.log_ndtr, x), slope, 1e-12, 1e-300, what="log_ndtr'")


@pytest.mark.parametrize("x,value,slope", [r for r in LOG_NDTR if -50 <= r[0] <= 10])
def test_log_ndtr_derivative_float32(x, value, slope):
    g = _grad(special.log_ndtr, x, np.float32)
    _close(g, slope, 4e-6, 1e-30, what="float32 log_ndtr'")


def _hazard(x):
    """phi(x) / Phi(x) in float64, independently: directly, or by the Mills-ratio continued
    fraction Phi(-t)/phi(t) = 1/(t + 1/(t + 2/(t + 3/(t + ...)))) deep in the tail."""
    if x > -8:
        return math.exp(-x * x / 2) / math.sqrt(2 * math.pi) / (0.5 * math.erfc(-x / 2**0.5))
    t, tail = -x, 0.0
    for k in range(300, 0, -1):
        tail = k / (t + tail)
    return t + tail


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(x=st.floats(-1e6, 40, allow_nan=False))
def test_log_ndtr_derivative_finite_everywhere(x64, x):
    g = _grad(special.log_ndtr, x)
    assert math.isfinite(g)
    _close(g, _hazard(x), 1e-11, 1e-300, what=f"log_ndtr'({x})")


@pytest.mark.parametrize("x", [-1e4, -100.0, -25.0, -20.0, -15.0, -9.0, -3.0, 0.5, 6.0])
def test_log_ndtr_second_derivative(x64, x):
    # d2 log Phi = -h (x + h) with h = phi/Phi; from the float64 hazard where that does
    # not cancel, else against differences of the first derivative
    h = _hazard(x)
    want = -h * (x + h) if x > -5 else _fd_of_grad(special.log_ndtr, x, 1e-4 * max(1, abs(x)))
    _close(_grad2(special.log_ndtr, x), want, 1e-6, 1e-12, what="log_ndtr''")


def test_log_ndtr_infinities(x64):
    assert _value(special.log_ndtr, -INF) == -INF
    assert _value(special.log_ndtr, INF) == 0.0
    assert _grad(special.log_ndtr, INF) == 0.0
    assert _grad(special.log_ndtr, -INF) == INF  # the limit of -x
    assert math.isnan(_grad(special.log_ndtr, NAN))


def test_probit_likelihood_gradient_is_finite(x64):
    # a probit model's log likelihood, with margins far in the tail
    def loglik(w):
        margins = mnp.asarray([-30.0, -8.0, 2.0, 12.0]) * w
        return mnp.sum(special.log_ndtr(margins))

    for w in (0.5, 1.0, 3.0):
        g = _grad(loglik, w)
        want = sum(m * _hazard(m * w) for m in (-30.0, -8.0, 2.0, 12.0))
        _close(g, want, 1e-11, what="probit gradient")


# ---- ndtri ---------------------------------------------------------------------------------
NDTRI = [
    (1e-300, -37.0470962993612),
    (1e-100, -21.273453560965322),
    (1e-20, -9.262340089798409),
    (1e-09, -5.9978070150076865),
    (1e-08, -5.612001244174789),
    (0.001, -3.090232306167813),
    (0.02, -2.053748910631823),
    (0.3, -0.5244005127080409),
    (0.5, 0.0),
    (0.7, 0.5244005127080407),
    (0.98, 2.0537489106318225),
    (0.999999999, 5.997807019601637),
    (0.999999999999999, 7.941444487415979),
]


@pytest.mark.parametrize("p,x", NDTRI)
def test_ndtri_value_and_derivative_float64(x64, p, x):
    _close(_value(special.ndtri, p), x, 1e-13, 1e-15, what="ndtri")
    # d ndtri = sqrt(2 pi) exp(x^2 / 2) (x^2 rounds with ~x^2 ulps: the tolerance)
    _close(_grad(special.ndtri, p), math.sqrt(2 * math.pi) * math.exp(x * x / 2),
           1e-12 * max(1.0, x * x), what="ndtri'")


@pytest.mark.parametrize("p,x", [r for r in NDTRI if r[0] >= 1e-30 and r[0] <= 0.98])
def test_ndtri_second_derivative(x64, p, x):
    # d2 ndtri = 2 pi x exp(x^2)
    _close(_grad2(special.ndtri, p), 2 * math.pi * x * math.exp(x * x), 1e-10, 1e-12,
           what="ndtri''")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ndtri_ends_and_outside(request, dtype):
    _use(request, dtype)
    for p, value, slope in [(0.0, -INF, INF), (1.0, INF, INF)]:
        assert _value(special.ndtri, p, dtype) == value
        assert _grad(special.ndtri, p, dtype) == slope
    for p in (-0.5, 1.5, NAN):
        assert math.isnan(_value(special.ndtri, p, dtype))
        assert math.isnan(_grad(special.ndtri, p, dtype))


@pytest.mark.parametrize("p,x", [r for r in NDTRI if r[0] >= 1e-30 and np.float32(r[0]) < 1])
def test_ndtri_derivative_float32(p, x):
    want = math.sqrt(2 * math.pi) * math.exp(x * x / 2)
    _close(_grad(special.ndtri, p, np.float32), want, 1e-5, what="float32 ndtri'")


# ---- logit, expit, erf family ------------------------------------------------------------
@pytest.mark.parametrize("p", [1e-300, 1e-12, 0.01, 0.3, 0.5, 0.5 + 1e-9, 0.9, 1 - 1e-12])
def test_logit_value_and_derivatives(x64, p):
    q = 1 - p  # exact for these p
    _close(_value(special.logit, p), math.log(p) - math.log1p(-p) if p < 0.25 or p > 0.75
           else math.log1p((2 * p - 1) / q), 1e-14, 1e-300, what="logit")
    _close(_grad(special.logit, p), 1 / (p * q), 1e-14, what="logit'")
    if p > 1e-100:
        _close(_grad2(special.logit, p), -(q - p) / (p * q) ** 2, 1e-12, 1e-12,
               what="logit''")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_logit_endpoints(request, dtype):
    _use(request, dtype)
    assert _value(special.logit, 0.0, dtype) == -INF
    assert _value(special.logit, 1.0, dtype) == INF
    assert _grad(special.logit, 0.0, dtype) == INF
    assert _grad(special.logit, 1.0, dtype) == INF
    assert math.isnan(_value(special.logit, 1.5, dtype))


@pytest.mark.parametrize("x", [-800.0, -40.0, -INF, 0.0, 40.0, 800.0, INF])
def test_expit_derivative_in_the_tails(x64, x):
    e = 0.0 if abs(x) == INF else math.exp(-abs(x))
    _close(_grad(special.expit, x), e / (1 + e) ** 2, 1e-14, what="expit'")


@pytest.mark.parametrize("x", [-1.0, -0.999999, 0.0, 0.5, 0.9999999, 1.0])
def test_erfinv_derivative_to_the_ends(x64, x):
    y = _value(special.erfinv, x)
    assert math.isinf(y) == (abs(x) == 1)
    _close(_grad(special.erfinv, x), math.sqrt(math.pi) / 2 * math.exp(y * y), 1e-14,
           what="erfinv'")


@pytest.mark.parametrize("x", [-30.0, -5.0, 0.0, 5.0, 27.0, INF])
def test_erf_erfc_derivatives_in_the_tails(x64, x):
    d = 0.0 if x == INF else 2 / math.sqrt(math.pi) * math.exp(-x * x)
    _close(_grad(special.erf, x), d, 1e-14, what="erf'")
    _close(_grad(special.erfc, x), -d, 1e-14, what="erfc'")


# ---- gamma family: poles -----------------------------------------------------------------
TRIGAMMA = [
    (-100.5, 9.859703491870086),
    (-2.5, 9.539246644989124),
    (-0.5, 8.934802200544679),
    (-0.001, 1000001.6473414316),
    (0.001, 1000001.6425331959),
    (0.5, 4.93480220054468),
    (1.0, 1.6449340668482266),
    (10.0, 0.10516633568168576),
    (100000.0, 1.0000050000166665e-05),
]


@pytest.mark.parametrize("x,want", TRIGAMMA)
def test_digamma_derivative_is_trigamma(x64, x, want):
    _close(_grad(special.digamma, x), want, 1e-12, what="digamma'")
    _close(_grad2(special.gammaln, x), want, 1e-12, what="gammaln''")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pole", [0.0, -1.0, -2.0, -7.0, -50.0])
def test_digamma_at_the_poles(request, dtype, pole):
    _use(request, dtype)
    # values as SciPy: -inf at +0, +inf at -0, NaN at the negative integers; the
    # derivative is +inf (the two-sided limit of trigamma), not a large finite number
    if pole == 0.0:
        assert _value(special.digamma, 0.0, dtype) == -INF
        assert _value(special.digamma, -0.0, dtype) == INF
        assert _grad(special.gammaln, 0.0, dtype) == -INF
    else:
        assert math.isnan(_value(special.digamma, pole, dtype))
    assert _grad(special.digamma, pole, dtype) == INF
    assert _grad2(special.gammaln, pole, dtype) == INF
    assert _value(special.gammaln, pole, dtype) == INF


def test_digamma_far_left_keeps_precision(x64):
    # reflection with a reduced argument: psi(x) = psi(1 - x) - pi / tan(pi x)
    for x, want in [(-100.5, 4.615124601338064), (-99999.5, 11.512925464974396)]:
        _close(_value(special.digamma, x), want, 1e-12, what="digamma")


# ---- entropy terms -----------------------------------------------------------------------
def test_entr_derivatives(x64):
    for x in (1e-300, 0.5, 1.0, 7.0):
        _close(_grad(special.entr, x), -(math.log(x) + 1), 1e-14, what="entr'")
        _close(_grad2(special.entr, x), -1 / x, 1e-14, what="entr''")
    assert _grad(special.entr, 0.0) == INF
    assert _grad2(special.entr, 0.0) == -INF
    assert math.isnan(_grad(special.entr, -1.0))  # entr is the constant -inf there


def _grads2(f, x, y):
    gx, gy = mt.grad(f, argnums=(0, 1))(mnp.asarray(np.float64(x)), mnp.asarray(np.float64(y)))
    return float(gx), float(gy)


@pytest.mark.parametrize("fn,shift", [(special.xlogy, 0.0), (special.xlog1py, 1.0)])
def test_xlogy_derivatives(x64, fn, shift):
    log = math.log
    for x, y in [(2.0, 3.0), (-1.5, 0.25), (0.0, 2.0), (0.0, 0.5)]:
        gx, gy = _grads2(fn, x, y - shift)
        _close(gx, log(y), 1e-14, 1e-300, what="d/dx")
        _close(gy, x / y, 1e-14, what="d/dy")
    # at the log's pole: d/dx = -inf; the function is 0 all along x = 0, so d/dy = 0
    assert _grads2(fn, 0.0, -shift) == (-INF, 0.0)
    gx, gy = _grads2(fn, 0.0, -1.0 - shift)
    assert math.isnan(gx) and gy == 0.0
    # the mixed second derivative at x = 0 is 1/y
    h = mt.hessian(lambda v: fn(v[0], v[1]))(mnp.asarray([0.0, 4.0 - shift]))
    np.testing.assert_allclose(np.asarray(h), [[0.0, 0.25], [0.25, 0.0]], rtol=1e-14)


# p, q, rel_entr(p, q), kl_div(p, q) (SciPy)
ENTROPIES = [
    (0.5, 0.25, 0.34657359027997264, 0.09657359027997264),
    (2.0, 3.0, -0.8109302162163288, 0.18906978378367123),
    (1e-300, 1.0, -6.907755278982137e-298, 1.0),
    (0.0, 1.0, 0.0, 1.0),
    (0.0, 0.0, 0.0, 0.0),
    (1.0, 0.0, INF, INF),
    (-1.0, 1.0, INF, INF),
    (1.0, -1.0, INF, INF),
]


@pytest.mark.parametrize("p,q,rel,kl", ENTROPIES)
def test_rel_entr_and_kl_div(x64, p, q, rel, kl):
    a, b = mnp.asarray(np.float64(p)), mnp.asarray(np.float64(q))
    _close(float(special.rel_entr(a, b)), rel, 1e-14, what="rel_entr")
    _close(float(special.kl_div(a, b)), kl, 1e-14, what="kl_div")
    gr, gk = _grads2(special.rel_entr, p, q), _grads2(special.kl_div, p, q)
    if p > 0 and q > 0:
        want = (math.log(p / q) + 1, -p / q)
    else:  # JAX's convention outside the interior: no derivative through the cases
        want = (0.0, 0.0)
    for g, w in zip(gr, want):
        _close(g, w, 1e-13, what="rel_entr'")
    for g, w in zip(gk, (want[0] - 1, want[1] + 1)):
        _close(g, w, 1e-13, what="kl_div'")


def test_logsumexp_negative_sum_has_zero_derivative(x64):
    # log of a negative sum is NaN; as JAX, the derivative there is 0, not 1/sum
    def f(a, b):
        return special.logsumexp(a, b=b)

    a, b = mnp.asarray([1.0, 2.0]), mnp.asarray([1.0, -1.0])
    assert math.isnan(float(f(a, b)))
    ga, gb = mt.grad(f, argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(np.asarray(ga), [0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(gb), [0.0, 0.0])


# ---- sinc ----------------------------------------------------------------------------------
def _sinc_prime(x):
    """d/dx sin(pi x)/(pi x), from the Maclaurin series for small t = pi x (40 terms)."""
    t = math.pi * x
    if abs(t) > 1:
        return math.pi * (t * math.cos(t) - math.sin(t)) / (t * t)
    s = sum((-1) ** k * 2 * k * t ** (2 * k - 1) / math.factorial(2 * k + 1)
            for k in range(1, 40))
    return math.pi * s


@pytest.mark.parametrize("x", [0.0, 1e-10, 1e-4, 0.05, 0.159, 0.16, 0.3, 1.0, 2.5])
def test_sinc_derivative_near_zero(x64, x):
    _close(_grad(mnp.sinc, x), _sinc_prime(x), 1e-12, 1e-300, what="sinc'")
    _close(_grad(mnp.sinc, x, np.float32), _sinc_prime(float(np.float32(x))), 2e-5, 1e-12,
           what="float32 sinc'")
    check_grads(mnp.sinc, (np.array([x, -x]),), order=2, eps=1e-5, rtol=1e-6)


# ---- derivatives away from the awkward points, and under jit / vmap ----------------------
INTERIOR = [
    (special.log_ndtr, np.array([-30.0, -7.0, -0.3, 2.0, 6.0])),
    (special.ndtri, np.array([0.01, 0.1, 0.45, 0.55, 0.97])),
    (special.logit, np.array([1e-3, 0.2, 0.5, 0.9])),
    (special.entr, np.array([1e-3, 0.2, 3.0])),
    (special.digamma, np.array([-2.5, -0.3, 0.7, 12.0])),
    (lambda v: special.xlogy(v, v + 1.5), np.array([-0.5, 0.4, 2.0])),
    (lambda v: special.xlog1py(v * v, v), np.array([-0.5, 0.4, 2.0])),
]


@pytest.mark.parametrize("fn,x", INTERIOR)
def test_interior_derivatives_match_finite_differences(x64, fn, x):
    check_grads(fn, (x,), order=2, eps=1e-6 * max(1.0, float(np.abs(x).max())), rtol=1e-5)


AWKWARD = [
    (special.log_ndtr, [-1e4, -40.0, -19.0, -5.0, 0.0, 40.0]),
    (special.ndtri, [0.0, 1e-200, 1e-9, 0.5, 1.0 - 1e-12, 1.0]),
    (special.logit, [0.0, 1e-20, 0.5, 1.0]),
    (special.entr, [0.0, 1e-20, 2.0]),
    (special.digamma, [0.0, -1.0, -2.5, 3.0]),
    (mnp.sinc, [0.0, 1e-8, 0.1, 2.0]),
]


@pytest.mark.parametrize("fn,pts", AWKWARD)
def test_grad_under_jit_and_vmap_matches_eager(x64, fn, pts):
    xs = np.asarray(pts, np.float64)
    eager = np.array([_grad(fn, x) for x in xs])
    eager2 = np.array([_grad2(fn, x) for x in xs])
    g = mt.grad(fn)
    np.testing.assert_array_equal(np.asarray(mt.vmap(g)(mnp.asarray(xs))), eager)
    np.testing.assert_array_equal(np.asarray(mt.jit(mt.vmap(g))(mnp.asarray(xs))), eager)
    np.testing.assert_array_equal(np.asarray(mt.vmap(mt.grad(g))(mnp.asarray(xs))), eager2)
    jit_g = mt.jit(g)
    np.testing.assert_array_equal(np.array([float(jit_g(mnp.asarray(x))) for x in xs]), eager)


# ---- mytorch.numpy functions built from selects -------------------------------------------
@pytest.mark.parametrize("ddof", [0, 1])
def test_nanvar_nanstd_derivatives_skip_the_nans(x64, ddof):
    x = np.array([1.0, np.nan, 3.0, 6.0, np.nan])
    ok = ~np.isnan(x)
    n, mean = ok.sum(), x[ok].mean()
    var = ((x[ok] - mean) ** 2).sum() / (n - ddof)
    want_var = np.where(ok, 2 * (x - mean) / (n - ddof), 0.0)
    got = mt.grad(lambda v: mnp.nanvar(v, ddof=ddof))(mnp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), want_var, rtol=1e-14, atol=1e-15)
    got = mt.grad(lambda v: mnp.nanstd(v, ddof=ddof))(mnp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), want_var / (2 * math.sqrt(var)), rtol=1e-14,
                               atol=1e-15)
    # a masked-out NaN (where=) is skipped the same way by var
    got = mt.grad(lambda v: mnp.var(v, ddof=ddof, where=mnp.asarray(ok)))(mnp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), want_var, rtol=1e-14, atol=1e-15)


def test_floor_divide_has_zero_derivative_also_at_zero_divisor(x64):
    a, b = mnp.asarray([5.0, -7.0, 5.0, 0.0]), mnp.asarray([3.0, 2.0, 0.0, 0.0])
    for f in (lambda u, v: mnp.sum(mnp.floor_divide(u, v)),
              lambda u, v: mnp.sum(mnp.divmod(u, v)[0])):
        ga, gb = mt.grad(f, argnums=(0, 1))(a, b)
        np.testing.assert_array_equal(np.asarray(ga), np.zeros(4))
        np.testing.assert_array_equal(np.asarray(gb), np.zeros(4))


# ---- polygamma and zeta --------------------------------------------------------------------
PG_X = [-7.75, -2.3, -0.3, 1e-3, 0.5, 1.0, 3.7, 20.0, 1e4]
POLYGAMMA = {  # SciPy's polygamma(n, PG_X)
    1: [19.61814433435229, 14.725912160961292, 13.945160267805724, 1000001.6425331959,
        4.93480220054468, 1.6449340668482266, 0.31003785767003833, 0.051270822935203124,
        0.00010000500016666666],
    2: [-124.03974558822777, 68.71379252927028, 67.63908119988314, -2000000002.3976321,
        -16.828796644234316, -2.404113806319188, -0.09539530872855405, -0.0026281224023146543,
        -1.0001000050000002e-08],
    3: [1558.5419205916073, 768.9350646661426, 766.6198904191684, 6000000000006.467,
        97.40909103400242, 6.493939402266829, 0.05827921795656364, 0.00026937422133963896,
        2.0003000200000004e-12],
    4: [-24481.576062438246, 9738.671736569251, 9731.83495623352, -2.400000000000002e+16,
        -771.4742498266678, -24.88626612344089, -0.053038611107953965, -4.140597772639668e-05,
        -6.0012001e-16],
}


@pytest.mark.parametrize("n", [1, 2, 3])
def test_polygamma_values_and_derivatives(x64, n):
    x = mnp.asarray(np.array(PG_X))
    np.testing.assert_allclose(np.asarray(special.polygamma(n, x)), POLYGAMMA[n], rtol=1e-12)
    g = mt.vmap(mt.grad(lambda v: special.polygamma(n, v)))(x)
    np.testing.assert_allclose(np.asarray(g), POLYGAMMA[n + 1], rtol=1e-12)
    # digamma's derivatives are polygamma's
    if n == 1:
        np.testing.assert_allclose(np.asarray(mt.vmap(mt.grad(special.digamma))(x)),
                                   POLYGAMMA[1], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_polygamma_poles_orders_and_dtypes(request, dtype):
    _use(request, dtype)
    for pole in (0.0, -1.0, -4.0):
        assert _value(lambda v: special.polygamma(1, v), pole, dtype) == INF
        assert _value(lambda v: special.polygamma(2, v), pole, dtype) == -INF
        assert _grad(lambda v: special.polygamma(1, v), pole, dtype) == -INF
    x = np.array(PG_X[4:8], dtype)
    got = special.polygamma(np.array([[1], [2], [3]]), x)
    want = np.array([POLYGAMMA[k][4:8] for k in (1, 2, 3)])
    assert got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(np.asarray(special.polygamma(0, x)),
                               np.asarray(special.digamma(x)), rtol=0)
    assert special.polygamma(1, np.float16(2.0)).dtype == np.float16
    with pytest.raises(TypeError, match="polygamma: the order n must be concrete"):
        mt.jit(special.polygamma)(1, 2.0)
    with pytest.raises(ValueError, match="polygamma: the order n must be >= 0"):
        special.polygamma(-1, 2.0)


# s, q, zeta(s, q) (SciPy)
ZETA = [
    (2.0, 1.0, 1.6449340668482266),
    (3.0, 0.3, 37.636268294363006),
    (1.5, 2.0, 1.6123753486854886),
    (10.0, 1000.0, 1.116119444426111e-28),
    (4.5, 0.001, 31622776601684.836),
    (2.0, 50.0, 0.020201333226697128),
]


def test_zeta(x64):
    s, q, want = (np.array(c) for c in zip(*ZETA))
    np.testing.assert_allclose(np.asarray(special.zeta(s, q)), want, rtol=1e-13)
    # d/dq zeta(s, q) = -s zeta(s + 1, q)
    g = mt.vmap(mt.grad(special.zeta, argnums=1))(mnp.asarray(s), mnp.asarray(q))
    np.testing.assert_allclose(np.asarray(g), -s * np.asarray(special.zeta(s + 1, q)),
                               rtol=1e-12)
    check_grads(special.zeta, (np.array([2.5, 4.0]), np.array([0.7, 3.0])), order=2)
    edge = special.zeta(np.array([1.0, 0.5, 2.0, 2.0, 2.0]), np.array([1.0, 1.0, 0.0, -3.0, -0.5]))
    np.testing.assert_array_equal(np.asarray(edge), [INF, NAN, INF, INF, NAN])
    np.testing.assert_allclose(float(special.zeta(2.0)), math.pi**2 / 6, rtol=1e-15)


# ---- Bessel functions i0, i1 and their scaled forms ------------------------------------------
BESSEL_X = [0.0, 1e-8, 0.5, -1.0, 5.0, -15.0, 29.5, 31.0, -50.0, 700.0]
BESSEL = {  # SciPy's values at BESSEL_X
    "i0e": [1.0, 0.9999999900000003, 0.64503527044915, 0.46575960759364043,
            0.18354081260932834, 0.1038995314488227, 0.07376861727872859, 0.07194649669698383,
            0.056561626647454184, 0.015081295651531355],
    "i1e": [0.0, 4.999999950000002e-09, 0.15642080318487173, -0.2079104153497085,
            0.16397226694454234, -0.10037417504516664, 0.07250732615718372, 0.07077639283438569,
            -0.055993123892895395, 0.015070519444716846],
    "i0": [1.0, 1.0000000000000002, 1.0634833707413234, 1.2660658777520082, 27.239871823604442,
           339649.3732979138, 478144163888.0398, 2089962966491.9038, 2.9325537838493355e+20,
           1.5295933476718735e+302],
    "i1": [0.0, 5.000000000000001e-09, 0.25789430539089636, -0.5651591039924851,
           24.335642142450524, -328124.92197020643, 469968885416.2772, 2055972795294.565,
           -2.9030785901035566e+20, 1.5285003902339006e+302],
}


def test_bessel_values_and_derivatives(x64):
    x = np.array(BESSEL_X)
    v = {k: np.array(w) for k, w in BESSEL.items()}
    for name, want in v.items():
        np.testing.assert_allclose(np.asarray(getattr(special, name)(x)), want, rtol=1e-14,
                                   atol=1e-300, err_msg=name)
    grads = {k: np.asarray(mt.vmap(mt.grad(getattr(special, k)))(mnp.asarray(x))) for k in v}
    safe = np.where(x == 0, 1.0, x)
    s = np.sign(x)
    # as JAX: i0' = i1, i1' = i0 - i1/x, i0e' = i1e - sign i0e, i1e' = i0e - (sign + 1/x) i1e
    # (cancellation in the scaled forms' closed forms far out: rtol 1e-10)
    np.testing.assert_allclose(grads["i0"], v["i1"], rtol=1e-14)
    np.testing.assert_allclose(grads["i1"], np.where(x == 0, 0.5, v["i0"] - v["i1"] / safe),
                               rtol=1e-13)
    np.testing.assert_allclose(grads["i0e"], v["i1e"] - s * v["i0e"], rtol=1e-10, atol=1e-17)
    np.testing.assert_allclose(grads["i1e"], np.where(x == 0, 0.5, v["i0e"] - (s + 1 / safe)
                                                      * v["i1e"]), rtol=1e-10, atol=1e-17)
    check_grads(special.i0e, (np.array([-3.0, 0.4, 40.0]),), order=2, rtol=1e-5)
    check_grads(special.i1e, (np.array([-3.0, 0.4, 40.0]),), order=2, rtol=1e-5)
    assert float(mt.grad(mt.grad(special.i1))(mnp.asarray(0.0))) == 0.0  # i1 is odd
    inf = np.array([INF, -INF])
    np.testing.assert_array_equal(np.asarray(special.i0(inf)), [INF, INF])
    np.testing.assert_array_equal(np.asarray(special.i1(inf)), [INF, -INF])
    np.testing.assert_array_equal(np.asarray(special.i0e(inf)), [0.0, 0.0])


def test_bessel_float32():
    x = np.array(BESSEL_X[:-1], np.float32)
    for name in ("i0e", "i1e", "i0", "i1"):
        got = getattr(special, name)(x)
        assert got.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), BESSEL[name][:-1], rtol=2e-6, atol=1e-30,
                                   err_msg=name)


DEBUG_NANS_CASES = [
    (special.log_ndtr, [-1e5, -40.0, -20.0, 0.0, 40.0, INF, -INF]),
    (special.ndtri, [0.0, 1e-300, 0.5, 1.0]),
    (special.logit, [0.0, 0.5, 1.0]),
    (special.entr, [0.0, 2.0]),
    (lambda v: special.xlogy(v, 2.0), [0.0, 1.0]),
    (lambda v: special.xlogy(0.0, v), [2.0]),
    (mnp.sinc, [0.0, 1e-10, 2.0]),
    (special.i0e, [0.0, 50.0]),
    (special.i1, [0.0, -50.0]),
    (lambda v: special.polygamma(2, v), [0.0, -2.0, -1.5, 3.0]),
]


@pytest.mark.parametrize("fn,pts", DEBUG_NANS_CASES)
def test_valid_points_make_no_intermediate_nan(x64, fn, pts):
    # debug_nans raises at the first primitive that turns NaN-free inputs into a NaN: the
    # unselected branches must not compute one
    mt.config.update("debug_nans", True)
    try:
        for x in pts:
            _value(fn, x)
            _grad(fn, x)
    finally:
        mt.config.update("debug_nans", False)
