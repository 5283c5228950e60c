"""The regularized incomplete gamma and beta functions: gammainc, gammaincc, betainc.

    P(a, x) = gammainc(a, x)  = int_0^x t^(a-1) e^-t dt / Gamma(a)
    Q(a, x) = gammaincc(a, x) = 1 - P(a, x)
    I_x(a, b) = betainc(a, b, x) = int_0^x t^(a-1) (1-t)^(b-1) dt / B(a, b)

Values follow Cephes (and XLA): P by its power series where x <= 1 or x < a, Q by
Legendre's continued fraction elsewhere, the other one as the complement (each is then at
most about 1/2 or has no cancellation); I_x by its continued fraction, on the side of the
mean where it converges fast (`I_x(a, b) = 1 - I_(1-x)(b, a)` on the other). The series
and fractions run in one `lax.while_loop` for the whole array, until every element has
converged to working precision (each element stops changing once it has).

Derivatives are `custom_jvp` rules: in x the integrand, in closed form (so they
differentiate again); in a (gammainc and gammaincc) the series/continued fraction of
dP/da that the gamma sampler's implicit derivative uses (_gamma_da.py),
a first derivative only. betainc's derivatives in a and b are not implemented (an error).
"""

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.source_info import user_error
from mytorch.core.trace import is_differentiated
from mytorch.custom_derivatives import custom_jvp
from mytorch.scipy.special._gamma_da import gamma_sample_da
from mytorch.scipy.special._util import _cast, _inexact, _up
from mytorch.vectorize import vmap

_MAX_STEPS = 2000  # Cephes' MAXITER; the loops stop as soon as every element converged


def _consts(x):
    info = np.finfo(x.dtype)
    return np.array(info.eps, x.dtype), np.array(info.tiny, x.dtype) * 16


def _log_prefactor(a, x):
    """`a log x - x - log Gamma(a)`: log of x^a e^-x / Gamma(a), both P's and Q's scale."""
    return a * mnp.log(x) - x - lax.lgamma(a)


def _lower_series(a, x):
    """P(a, x) = x^a e^-x / Gamma(a+1) * sum_n x^n / ((a+1) ... (a+n)) (fast for x < a+1)."""
    eps, _ = _consts(x)

    def more(state):
        i, _, _, done = state
        return (i < _MAX_STEPS) & ~mnp.all(done)

    def step(state):
        i, term, total, done = state
        term = term * x / (a + i + 1)
        total = mnp.where(done, total, total + term)
        return i + 1, term, total, done | (term <= eps * total)

    one = mnp.ones_like(x)
    init = (mnp.zeros((), x.dtype), one, one, mnp.zeros(x.shape, bool))
    total = lax.while_loop(more, step, init)[2]
    return mnp.exp(_log_prefactor(a, x)) * total / a


def _upper_fraction(a, x):
    """Q(a, x) = x^a e^-x / Gamma(a) * 1/(x+1-a- 1(1-a)/(x+3-a- 2(2-a)/(x+5-a- ...))), by
    the modified Lentz method (fast for x > 1, x >= a)."""
    eps, tiny = _consts(x)

    def guard(v):
        return mnp.where(mnp.abs(v) < tiny, tiny, v)

    def more(state):
        i, _, _, _, _, done = state
        return (i < _MAX_STEPS) & ~mnp.all(done)

    def step(state):
        i, b, c, d, h, done = state
        i = i + 1
        an = -i * (i - a)
        b = b + 2
        d = 1 / guard(an * d + b)
        c = guard(b + an / c)
        delta = c * d
        h = mnp.where(done, h, h * delta)
        return i, b, c, d, h, done | (mnp.abs(delta - 1) <= eps)

    b = x + 1 - a
    d = 1 / guard(b)
    init = (mnp.zeros((), x.dtype), b, mnp.full(x.shape, 1 / tiny, x.dtype), d, d,
            mnp.zeros(x.shape, bool))
    h = lax.while_loop(more, step, init)[4]
    return mnp.exp(_log_prefactor(a, x)) * h


def _gamma_pair(a, x):
    """(P, Q) on a > 0, 0 < x < inf; each branch sees stand-in inputs where it is unused."""
    use_series = (x <= 1) | (x < a)
    one = mnp.ones_like(x)
    p = _lower_series(mnp.where(use_series, a, one), mnp.where(use_series, x, one / 2))
    q = _upper_fraction(mnp.where(use_series, one, a), mnp.where(use_series, 2 * one, x))
    return mnp.where(use_series, p, 1 - q), mnp.where(use_series, 1 - p, q)


def _gamma_edges(a, x, inner, lower):
    """SciPy's values at the edges of the domain around `inner` (P if `lower`, else Q):
    NaN for a < 0, x < 0, NaN inputs, a = x = 0 and a = x = inf; P = 0 at x = 0 or a = inf,
    P = 1 at a = 0 or x = inf."""
    p_zero = (x == 0) | (a == mnp.inf)
    p_one = ((a == 0) | (x == mnp.inf)) & ~p_zero
    out = mnp.where(p_zero, 0.0 if lower else 1.0, inner)
    out = mnp.where(p_one, 1.0 if lower else 0.0, out)
    bad = ((a < 0) | (x < 0) | mnp.isnan(a) | mnp.isnan(x) | ((a == 0) & (x == 0))
           | ((a == mnp.inf) & (x == mnp.inf)))
    return mnp.where(bad, np.nan, out)


def _gamma_inner(a, x):
    """(P, Q) with the edge points replaced by safe ones (their values come from
    `_gamma_edges`)."""
    ok = (a > 0) & (x > 0) & (a < mnp.inf) & (x < mnp.inf)
    one = mnp.ones_like(x)
    return _gamma_pair(mnp.where(ok, a, one), mnp.where(ok, x, one))


def _gamma_density(a, x):
    """dP/dx = x^(a-1) e^-x / Gamma(a) (0 where P is constant or undefined in x)."""
    ok = (a > 0) & (x > 0) & (a < mnp.inf) & (x < mnp.inf)
    safe_x = mnp.where(ok, x, mnp.ones_like(x))
    safe_a = mnp.where(ok, a, mnp.ones_like(a))
    dens = mnp.exp((safe_a - 1) * mnp.log(safe_x) - safe_x - lax.lgamma(safe_a))
    return mnp.where(ok, dens, 0.0)


def _dp_da(a, x):
    """dP/da = -(dx/da at fixed P) * dP/dx, dx/da from the gamma sampler's series."""
    flat = vmap(gamma_sample_da)(mnp.reshape(a, (-1,)), mnp.reshape(x, (-1,)))
    return -mnp.reshape(flat, x.shape) * _gamma_density(a, x)


@custom_jvp
def _gammainc(a, x):
    return _gamma_edges(a, x, _gamma_inner(a, x)[0], lower=True)


@_gammainc.defjvp
def _gammainc_jvp(primals, tangents):
    (a, x), (t_a, t_x) = primals, tangents
    return _gammainc(a, x), t_x * _gamma_density(a, x) + t_a * _dp_da(a, x)


@custom_jvp
def _gammaincc(a, x):
    return _gamma_edges(a, x, _gamma_inner(a, x)[1], lower=False)


@_gammaincc.defjvp
def _gammaincc_jvp(primals, tangents):
    (a, x), (t_a, t_x) = primals, tangents
    return _gammaincc(a, x), -(t_x * _gamma_density(a, x) + t_a * _dp_da(a, x))


def gammainc(a, x, /):
    """The regularized lower incomplete gamma function
    `P(a, x) = int_0^x t^(a-1) e^-t dt / Gamma(a)`, elementwise with broadcasting.

    Args:
      a: shape, an array-like >= 0 (ints give the default float).
      x: an array-like >= 0.

    Returns:
      An array of the broadcast shape: 0 at x = 0 and a = inf, 1 at a = 0 (x > 0) and
      x = inf, NaN for negative or NaN inputs and at a = x = 0 and a = x = inf (SciPy's
      values). Differentiable in x (closed form) and, once, in a.

    >>> gammainc(np.float32(2.0), np.float32(1.0))
    Array(0.26424113, dtype=float32)
    """
    av, xv = _inexact("gammainc", a, x)
    return _cast(_gammainc(_up(av), _up(xv)), xv.dtype, xv.weak_type)


def gammaincc(a, x, /):
    """The regularized upper incomplete gamma function `Q(a, x) = 1 - P(a, x)`, computed
    directly where it is the smaller one (no cancellation in the upper tail).

    Args:
      a: shape, an array-like >= 0 (ints give the default float).
      x: an array-like >= 0.

    Returns:
      An array of the broadcast shape: 1 - gammainc(a, x) at the edges (NaN where it is
      NaN). Differentiable in x (closed form) and, once, in a.
    """
    av, xv = _inexact("gammaincc", a, x)
    return _cast(_gammaincc(_up(av), _up(xv)), xv.dtype, xv.weak_type)


# ---- betainc -----------------------------------------------------------------------------
def _beta_fraction(a, b, x):
    """The continued fraction of I_x(a, b) / (x^a (1-x)^b / (a B(a, b))), by the modified
    Lentz method (Numerical Recipes' betacf; fast for x < (a+1)/(a+b+2))."""
    eps, tiny = _consts(x)

    def guard(v):
        return mnp.where(mnp.abs(v) < tiny, tiny, v)

    def more(state):
        m, _, _, _, done = state
        return (m < _MAX_STEPS) & ~mnp.all(done)

    def step(state):
        m, c, d, h, done = state
        m = m + 1
        m2 = 2 * m
        even = m * (b - m) * x / ((a - 1 + m2) * (a + m2))
        d = 1 / guard(1 + even * d)
        c = guard(1 + even / c)
        h_even = h * d * c
        odd = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2))
        d = 1 / guard(1 + odd * d)
        c = guard(1 + odd / c)
        delta = d * c
        h = mnp.where(done, h, h_even * delta)
        return m, c, d, h, done | (mnp.abs(delta - 1) <= eps)

    d = 1 / guard(1 - (a + b) * x / (a + 1))
    init = (mnp.zeros((), x.dtype), mnp.ones_like(x), d, d, mnp.zeros(x.shape, bool))
    return lax.while_loop(more, step, init)[3]


def _betainc_inner(a, b, x):
    """I_x(a, b) for a, b > 0 finite and 0 < x < 1."""
    flip = x > (a + 1) / (a + b + 2)
    aa, bb = mnp.where(flip, b, a), mnp.where(flip, a, b)
    xx = mnp.where(flip, 1 - x, x)
    log_front = aa * mnp.log(xx) + bb * mnp.log1p(-xx) - _betaln(aa, bb)
    value = mnp.exp(log_front) * _beta_fraction(aa, bb, xx) / aa
    return mnp.where(flip, 1 - value, value)


def _betaln(a, b):
    return lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)


def _beta_ok(a, b, x):
    return (a > 0) & (b > 0) & (a < mnp.inf) & (b < mnp.inf) & (x > 0) & (x < 1)


@custom_jvp
def _betainc(a, b, x):
    ok = _beta_ok(a, b, x)
    one, half = mnp.ones_like(x), mnp.full(x.shape, 0.5, x.dtype)
    inner = _betainc_inner(mnp.where(ok, a, one), mnp.where(ok, b, one), mnp.where(ok, x, half))
    # SciPy's values at the edges, in order of precedence
    out = mnp.where(b == mnp.inf, 1.0, mnp.where(a == mnp.inf, 0.0, inner))
    out = mnp.where(b == 0, 0.0, mnp.where(a == 0, 1.0, out))
    out = mnp.where(x == 1, 1.0, mnp.where(x == 0, 0.0, out))
    bad = ((a < 0) | (b < 0) | (x < 0) | (x > 1) | ((a == 0) & (b == 0))
           | ((a == mnp.inf) & (b == mnp.inf)) | mnp.isnan(a) | mnp.isnan(b) | mnp.isnan(x))
    return mnp.where(bad, np.nan, out)


@_betainc.defjvp
def _betainc_jvp(primals, tangents):
    (a, b, x), (_, _, t_x) = primals, tangents  # a and b: see betainc
    ok = _beta_ok(a, b, x)
    one, half = mnp.ones_like(x), mnp.full(x.shape, 0.5, x.dtype)
    sa, sb, sx = mnp.where(ok, a, one), mnp.where(ok, b, one), mnp.where(ok, x, half)
    dens = mnp.exp((sa - 1) * mnp.log(sx) + (sb - 1) * mnp.log1p(-sx) - _betaln(sa, sb))
    return _betainc(a, b, x), t_x * mnp.where(ok, dens, 0.0)


def betainc(a, b, x, /):
    """The regularized incomplete beta function
    `I_x(a, b) = int_0^x t^(a-1) (1-t)^(b-1) dt / B(a, b)`, elementwise with broadcasting.

    Args:
      a, b: shapes, array-likes >= 0 (ints give the default float).
      x: an array-like in [0, 1].

    Returns:
      An array of the broadcast shape: 0 at x = 0, 1 at x = 1, 1 at a = 0, 0 at b = 0,
      0 at a = inf, 1 at b = inf; NaN outside [0, 1], for negative or NaN inputs and at
      a = b = 0 or a = b = inf (SciPy's values). Differentiable in x (the beta density).

    Raises:
      ValueError: a or b is being differentiated (their derivatives are not implemented,
      as in JAX); pass them through `lax.stop_gradient` to differentiate in x only.
    """
    if is_differentiated(a) or is_differentiated(b):
        raise user_error(ValueError, "betainc: derivatives with respect to a and b are not "
                                     "implemented (only x); wrap a and b in "
                                     "lax.stop_gradient to differentiate in x alone")
    av, bv, xv = _inexact("betainc", a, b, x)
    return _cast(_betainc(_up(av), _up(bv), _up(xv)), xv.dtype, xv.weak_type)
