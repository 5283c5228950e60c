"""The exponential integrals: expn, exp1 and expi.

    E_n(x) = int_1^inf e^(-x t) / t^n dt      exp1(x) = E_1(x)
    Ei(x)  = -PV int_-x^inf e^-t / t dt       (Ei(x) = -E_1(-x) for x < 0)

E_n as Cephes computes it: e^-x / x for n = 0, the asymptotic expansion in 1/n (DLMF
8.20(ii)) for n > 50, the continued fraction (DLMF 8.19.17) for x > 1 and the power
series (DLMF 8.19.8) below. Ei for x > 0 as SciPy (Zhang and Jin's EIX): its power
series up to x = 40, the asymptotic series above. The series and fractions run for the
whole array at once (`lax.while_loop` until every element has converged, or a fixed
number of terms where that bound suffices).

Derivatives are `custom_jvp` rules in closed form, d/dx E_n = -E_(n-1) (with
E_-1(x) = e^-x (x + 1) / x^2) and d/dx Ei = e^x / x, so they differentiate again. The
order n is integer-valued: it has no derivative (its tangent is ignored).
"""

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.custom_derivatives import custom_jvp
from mytorch.scipy.special._args import real_args
from mytorch.scipy.special._util import _cast, _up

_MAX_STEPS = 2000  # Cephes' bound on the loops; they stop once every element converged
_LARGE_N = 50  # above it, the expansion in 1/n (Cephes' switch)
_SERIES_TERMS = 24  # x <= 1: x^k / k! is below float64's eps relative to the sum by k = 20
_EULER = 0.57721566490153286061


def _asymptotic_polys(count):
    """The polynomials A_k(l) of DLMF 8.20.3 (lowest coefficient first), k < count:
    A_0 = A_1 = 1, A_(k+1) = (1 - 2k l) A_k + l (l + 1) A_k'."""
    poly = np.polynomial.polynomial
    out = [np.array([1.0]), np.array([1.0])]
    for k in range(1, count - 1):
        a = out[-1]
        nxt = poly.polyadd(poly.polymul([1.0, -2.0 * k], a),
                           poly.polymul([0.0, 1.0, 1.0], poly.polyder(a)))
        out.append(nxt)
    return [tuple(float(c) for c in p) for p in out]


_A = _asymptotic_polys(13)


def _eps(x):
    return np.array(np.finfo(x.dtype).eps, x.dtype)


def _series(n, x):
    """E_n(x) for 1 <= n <= 50 and 0 < x <= 1: sum_(k != n-1) (-x)^k / (k! (k+1-n)) gives
    E_n = (-x)^(n-1) (digamma(n) - log x) / (n-1)! - sum."""
    total = mnp.where(n == 1, 0.0, 1 / mnp.where(n == 1, 2.0, 1 - n))
    yk = mnp.ones_like(x)
    for k in range(1, _SERIES_TERMS):
        yk = yk * (-x) / k
        pk = k + 1 - n
        total = total + mnp.where(pk == 0, 0.0, yk / mnp.where(pk == 0, 1.0, pk))
    odd_power = (n - 1) - 2 * mnp.floor((n - 1) / 2) == 1
    scale = mnp.exp((n - 1) * mnp.log(x) - lax.lgamma(n))
    lead = mnp.where(odd_power, -scale, scale) * (lax.digamma(n) - mnp.log(x))
    return lead - total


def _fraction(n, x):
    """E_n(x) for x > 1: e^-x / (x + n / (1 + 1 / (x + (n+1) / (1 + 2 / (x + ...))))), by
    its convergents p_k / q_k (rescaled while large, as Cephes)."""
    eps = _eps(x)
    big, biginv = 4.503599627370496e15, 2.22044604925031308085e-16

    def more(state):
        return (state[0] < _MAX_STEPS) & ~mnp.all(state[-1])

    def step(state):
        k, pkm2, pkm1, qkm2, qkm1, ans, done = state
        k = k + 1
        odd = k - 2 * mnp.floor(k / 2) == 1
        yk = mnp.where(odd, 1.0, x)
        xk = mnp.where(odd, n + (k - 1) / 2, k / 2)
        pk = pkm1 * yk + pkm2 * xk
        qk = qkm1 * yk + qkm2 * xk
        nonzero = qk != 0
        r = pk / mnp.where(nonzero, qk, 1.0)
        t = mnp.where(nonzero, mnp.abs((ans - r) / r), 1.0)
        ans = mnp.where(done | ~nonzero, ans, r)
        scale = mnp.where(mnp.abs(pk) > big, biginv, 1.0)
        return (k, pkm1 * scale, pk * scale, qkm1 * scale, qk * scale, ans,
                done | (t <= eps))

    one = mnp.ones_like(x)
    init = (mnp.ones((), x.dtype), one, one, x, x + n, one / (x + n),
            mnp.zeros(x.shape, bool))
    return lax.while_loop(more, step, init)[5] * mnp.exp(-x)


def _large_n(n, x):
    """E_n(x) for n > 50: e^(-x) / (x + n) sum_k A_k(x/n) / (n^k (x/n + 1)^(2k))."""
    lam = x / n
    multiplier = 1 / (n * (lam + 1) ** 2)
    total, fac = mnp.ones_like(x), mnp.ones_like(x)
    for coeffs in _A[1:]:
        fac = fac * multiplier
        poly = mnp.full_like(x, coeffs[-1])
        for c in reversed(coeffs[:-1]):
            poly = poly * lam + c
        total = total + fac * poly
    return mnp.exp(-x) / (x + n) * total


def _expn_value(n, x):
    maxlog = np.log(np.finfo(x.dtype).max)
    bad = (n < 0) | (x < 0) | mnp.isnan(n) | mnp.isnan(x)
    zero_x = x == 0
    n0 = n == 0
    large = n > _LARGE_N
    frac = x > 1
    inner = ~bad & ~zero_x & ~n0 & (x <= maxlog)
    # each branch evaluates stand-in inputs where another one is used
    use_large = inner & large
    use_frac = inner & ~large & frac
    use_series = inner & ~large & ~frac
    one = mnp.ones_like(x)
    value_large = _large_n(mnp.where(use_large, n, 60.0), mnp.where(use_large, x, one))
    value_frac = _fraction(mnp.where(use_frac, n, one), mnp.where(use_frac, x, 2 * one))
    value_series = _series(mnp.where(use_series, n, one), mnp.where(use_series, x, one / 2))
    safe_x = mnp.where(zero_x, one, x)
    out = mnp.where(use_large, value_large, mnp.where(use_frac, value_frac, value_series))
    out = mnp.where(inner, out, 0.0)  # x > maxlog: underflows to 0
    out = mnp.where(n0, mnp.exp(-safe_x) / safe_x, out)
    at_zero = mnp.where(n < 2, np.inf, 1 / mnp.where(n < 2, 2.0, n - 1))
    out = mnp.where(zero_x, at_zero, out)
    return mnp.where(bad, np.nan, out)


@custom_jvp
def _expn(n, x):
    return _expn_value(n, x)


def _expn_dx(n, x):
    """d/dx E_n(x) = -E_(n-1)(x); for n = 0, -e^-x (x + 1) / x^2."""
    n0 = n == 0
    safe_x = mnp.where(x == 0, 1.0, x)
    e_minus_one = mnp.exp(-safe_x) * (safe_x + 1) / (safe_x * safe_x)
    e_minus_one = mnp.where(x == 0, np.inf, e_minus_one)
    return -mnp.where(n0, e_minus_one, _expn(mnp.where(n0, 1.0, n - 1), x))


@_expn.defjvp
def _expn_jvp(primals, tangents):
    (n, x), (_, t_x) = primals, tangents  # n is integer-valued: no derivative
    return _expn(n, x), t_x * _expn_dx(n, x)


def expn(n, x, /):
    """The generalized exponential integral `E_n(x) = int_1^inf e^(-x t) / t^n dt`,
    elementwise with broadcasting.

    Args:
      n: the order, an array-like of non-negative integers (non-integer values are
        truncated toward zero, as SciPy does).
      x: an array-like >= 0.

    Returns:
      An array of the broadcast shape, in the float dtype of n and x promoted: +inf at
      x = 0 for n < 2, 1/(n-1) there for n >= 2, 0 at x = inf, NaN for n < 0, x < 0 or
      NaN inputs (SciPy's values). Differentiable in x: `-expn(n - 1, x)`.

    >>> expn(2, np.float32(1.0))
    Array(0.14849555, dtype=float32)
    """
    nv, xv = real_args("expn", n, x)
    u = _up(xv)
    order = mnp.trunc(lax.stop_gradient(_up(nv)))
    return _cast(_expn(order, u), xv.dtype, xv.weak_type)


def exp1(x, /):
    """The exponential integral `E_1(x) = int_x^inf e^-t / t dt`, elementwise.

    Args:
      x: an array-like (ints give the default float).

    Returns:
      An array of x's shape: +inf at 0, 0 at +inf, NaN for x < 0 (a complex value there)
      and NaN. Differentiable: `-exp(-x) / x`.
    """
    (xv,) = real_args("exp1", x)
    u = _up(xv)
    return _cast(_expn(mnp.ones_like(u), u), xv.dtype, xv.weak_type)


def _ei_positive(x):
    """Ei(x) for x > 0: gamma + log x + sum_k x^k / (k k!) up to 40, and
    e^x / x (1 + sum_(k=1..20) k! / x^k) above (Zhang and Jin's EIX)."""
    eps = _eps(x)
    small = x <= 40
    xs = mnp.where(small, x, 1.0)

    def more(state):
        return (state[0] < _MAX_STEPS) & ~mnp.all(state[-1])

    def step(state):
        k, r, total, done = state
        k = k + 1
        r = r * k * xs / ((k + 1) ** 2)
        total = mnp.where(done, total, total + r)
        return k, r, total, done | (mnp.abs(r) <= eps * mnp.abs(total))

    # the terms r_k = x^k / (k k!), each from the last: r_(k+1) = r_k k x / (k + 1)^2
    init = (mnp.zeros((), x.dtype), xs, xs, mnp.zeros(x.shape, bool))
    series = _EULER + mnp.log(xs) + lax.while_loop(more, step, init)[2]
    xl = mnp.where(small, 50.0, x)
    term, total = mnp.ones_like(x), mnp.ones_like(x)
    for k in range(1, 21):
        term = term * k / xl
        total = total + term
    # e^x / x as exp(x - log x): finite as long as the result is
    asymptotic = mnp.exp(xl - mnp.log(xl)) * total
    return mnp.where(small, series, asymptotic)


def _expi_value(x):
    pos = x > 0
    neg = x < 0
    value_pos = _ei_positive(mnp.where(pos, x, 1.0))
    value_neg = -_expn_value(mnp.ones_like(x), mnp.where(neg, -x, 1.0))
    out = mnp.where(pos, value_pos, mnp.where(neg, value_neg, -np.inf))
    out = mnp.where(mnp.isposinf(x), np.inf, out)
    return mnp.where(mnp.isnan(x), np.nan, out)


@custom_jvp
def _expi(x):
    return _expi_value(x)


@_expi.defjvp
def _expi_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    safe = mnp.where(x == 0, 1.0, x)
    slope = mnp.where(x == 0, np.inf, mnp.exp(safe) / safe)
    return _expi(x), t * slope


def expi(x, /):
    """The exponential integral `Ei(x) = PV int_-inf^x e^t / t dt`, elementwise.

    Args:
      x: an array-like (ints give the default float).

    Returns:
      An array of x's shape: -inf at 0, +inf at +inf, -0 at -inf, `-exp1(-x)` for x < 0
      (SciPy's values). Differentiable: `exp(x) / x`.
    """
    (xv,) = real_args("expi", x)
    u = _up(xv)
    return _cast(_expi(u), xv.dtype, xv.weak_type)
