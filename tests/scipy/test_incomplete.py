"""gammainc, gammaincc and betainc against scipy.special (float64 references), their
derivatives against float64 central differences, and vmap/jit against eager calls."""

import mpmath
import numpy as np
import pytest
import scipy.special as ss
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.scipy import special

SHAPE = st.floats(0.05, 60.0)
POINT = st.floats(0.0, 120.0)
UNIT = st.floats(0.0, 1.0)


def _draws(strategy, n=8):
    return st.lists(strategy, min_size=n, max_size=n).map(np.array)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # x64 holds throughout
@given(_draws(SHAPE), _draws(POINT))
def test_gamma_float64(x64, a, x):
    for ours, ref in ((special.gammainc, ss.gammainc), (special.gammaincc, ss.gammaincc)):
        out = ours(a, x)
        assert out.dtype == np.float64
        np.testing.assert_allclose(np.asarray(out), ref(a, x), rtol=1e-10, atol=1e-300)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # x64 holds throughout
@given(_draws(SHAPE), _draws(SHAPE), _draws(UNIT))
def test_betainc_float64(x64, a, b, x):
    out = special.betainc(a, b, x)
    assert out.dtype == np.float64
    ref = ss.betainc(a, b, x)
    # SciPy loses accuracy at subnormal x (betainc(0.5, 0.25, 5e-324) is 2 % off): there
    # the reference is mpmath's
    a_, b_, x_ = np.broadcast_arrays(a, b, x)
    for i in zip(*np.nonzero((x_ > 0) & (x_ < np.finfo(np.float64).tiny))):
        if a_[i] > 0 and b_[i] > 0:
            ref[i] = float(mpmath.betainc(a_[i], b_[i], 0, mpmath.mpf(float(x_[i])),
                                          regularized=True))
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-10, atol=1e-300)


@settings(max_examples=25, deadline=None)
@given(_draws(st.floats(0.05, 30.0)), _draws(st.floats(0.0, 60.0)), _draws(UNIT))
def test_float32(a, x, u):
    with np.errstate(under="ignore"):  # drawn subnormal float64 values flush to zero
        a32, x32, u32 = (v.astype(np.float32) for v in (a, x, u))
    a64, x64_, u64 = (v.astype(np.float64) for v in (a32, x32, u32))
    for out, ref in ((special.gammainc(a32, x32), ss.gammainc(a64, x64_)),
                     (special.gammaincc(a32, x32), ss.gammaincc(a64, x64_)),
                     (special.betainc(a32, a32[::-1], u32), ss.betainc(a64, a64[::-1], u64))):
        assert out.dtype == np.float32
        np.testing.assert_allclose(np.asarray(out), ref, rtol=2e-4, atol=1e-30)


def test_broadcasting_and_ints():
    a = np.array([[0.5], [2.0], [7.0]])
    x = np.linspace(0, 10, 5)
    out = special.gammainc(a, x)
    assert out.shape == (3, 5) and out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), ss.gammainc(a, x), rtol=1e-5, atol=1e-7)
    assert special.betainc(2, 3, np.array([0.5, 0.25])).shape == (2,)


INF, NAN = np.inf, np.nan
GAMMA_EDGES = [(0, 0), (0, 1), (1, 0), (1, INF), (INF, 1), (INF, INF), (-1, 1), (1, -1),
               (0, INF), (NAN, 1), (1, NAN)]
BETA_EDGES = [(0, 1, 0.5), (1, 0, 0.5), (0, 0, 0.5), (1, 1, 0), (1, 1, 1), (1, 1, 1.5),
              (-1, 1, 0.5), (0, 1, 0), (1, 0, 1), (INF, 1, 0.5), (1, INF, 0.5),
              (2, 3, -0.1), (NAN, 1, 0.5), (1, 1, NAN)]


def test_edge_values(x64):
    a, x = (np.array(v, float) for v in zip(*GAMMA_EDGES))
    np.testing.assert_array_equal(np.asarray(special.gammainc(a, x)), ss.gammainc(a, x))
    np.testing.assert_array_equal(np.asarray(special.gammaincc(a, x)), ss.gammaincc(a, x))
    a, b, x = (np.array(v, float) for v in zip(*BETA_EDGES))
    np.testing.assert_array_equal(np.asarray(special.betainc(a, b, x)), ss.betainc(a, b, x))


def _fd(fn, args, i, eps=1e-6):
    up = list(args)
    dn = list(args)
    up[i] = args[i] + eps
    dn[i] = args[i] - eps
    return (fn(*up) - fn(*dn)) / (2 * eps)


POINTS = [(0.3, 0.2), (0.7, 2.5), (2.5, 1.7), (5.0, 9.0), (40.0, 37.0), (1.0, 0.5)]


@pytest.mark.parametrize("a,x", POINTS)
def test_gamma_derivatives(x64, a, x):
    for ours, ref in ((special.gammainc, ss.gammainc), (special.gammaincc, ss.gammaincc)):
        for i in (0, 1):
            got = mt.grad(ours, argnums=i)(a, x)
            np.testing.assert_allclose(float(got), _fd(ref, (a, x), i), rtol=1e-6, atol=1e-10)
    # the x-derivative is the density, itself differentiable
    d2 = mt.grad(mt.grad(special.gammainc, argnums=1), argnums=1)(a, x)
    d1 = lambda a, x: np.exp((a - 1) * np.log(x) - x - ss.gammaln(a))  # noqa: E731
    np.testing.assert_allclose(float(d2), _fd(d1, (a, x), 1), rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("a,b,x", [(0.5, 0.7, 0.3), (2.0, 3.0, 0.6), (30.0, 12.0, 0.75)])
def test_betainc_x_derivative(x64, a, b, x):
    got = mt.grad(special.betainc, argnums=2)(a, b, x)
    np.testing.assert_allclose(float(got), _fd(ss.betainc, (a, b, x), 2), rtol=1e-6)


def test_vmap_and_jit_match_eager():
    a = mnp.asarray(np.array([0.5, 2.0, 9.0, 30.0], np.float32))
    x = mnp.asarray(np.array([0.1, 3.0, 8.0, 31.0], np.float32))
    u = mnp.asarray(np.array([0.2, 0.5, 0.7, 0.99], np.float32))
    fns = [lambda a, x, u: special.gammainc(a, x), lambda a, x, u: special.gammaincc(a, x),
           lambda a, x, u: special.betainc(a, x, u)]
    for fn in fns:
        eager = np.array([np.asarray(fn(a[i], x[i], u[i])) for i in range(4)])
        np.testing.assert_allclose(np.asarray(mt.vmap(fn)(a, x, u)), eager, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(mt.jit(fn)(a, x, u)), np.asarray(fn(a, x, u)),
                                   rtol=1e-6)
    g = mt.vmap(mt.grad(special.gammainc, argnums=(0, 1)))(a, x)
    for i in range(4):
        e = mt.grad(special.gammainc, argnums=(0, 1))(a[i], x[i])
        np.testing.assert_allclose([float(g[0][i]), float(g[1][i])], [float(e[0]), float(e[1])],
                                   rtol=1e-5)


def test_betainc_refuses_derivatives_in_a_and_b():
    """As in JAX: betainc differentiates in x only; a or b being differentiated is an error
    (never a silent zero), and stop_gradient says they are constants."""
    from mytorch import lax

    with pytest.raises(ValueError, match="betainc: derivatives with respect to a and b"):
        mt.grad(lambda a: special.betainc(a, 3.0, 0.3))(2.0)
    with pytest.raises(ValueError, match="betainc: derivatives with respect to a and b"):
        mt.jit(mt.grad(lambda b: special.betainc(2.0, b, 0.3)))(3.0)
    g = mt.grad(lambda a: special.betainc(lax.stop_gradient(a), 3.0, 0.3) * a)(2.0)
    np.testing.assert_allclose(np.asarray(g), np.asarray(special.betainc(2.0, 3.0, 0.3)),
                               rtol=1e-6)
