"""The modified Bessel functions of the first kind of orders 0 and 1, and their
exponentially scaled forms: i0, i0e, i1, i1e.

For |x| <= 30 the power series `I_nu(x) = (x/2)^nu sum_k (x^2/4)^k / (k! (k + nu)!)` (all
terms positive: no cancellation; 56 terms reach float64 precision at 30); beyond, the
asymptotic series `I_nu(x) ~ e^x / sqrt(2 pi x) sum_k a_k(nu) / x^k` (20 terms: below 1e-17
there). Derivatives are closed forms (custom_jvp), as JAX's:

    i0' = i1      i1' = i0 - i1 / x (1/2 at 0)
    i0e' = i1e - sign(x) i0e      i1e' = i0e - (sign(x) + 1/x) i1e (1/2 at 0)
"""

import math

from mytorch import lax
from mytorch.custom_derivatives import custom_jvp
from mytorch.scipy.special._util import _cast, _inexact, _like, _up, _where

_CUT = 30.0
_SERIES_TERMS = 56


def _asymptotic_coeffs(nu, n=20):
    """a_k(nu) with I_nu(x) ~ e^x / sqrt(2 pi x) sum_k a_k / x^k."""
    out, a = [1.0], 1.0
    for k in range(1, n):
        a *= -(4 * nu * nu - (2 * k - 1) ** 2) / (k * 8)
        out.append(a)
    return tuple(out)


_ASYMPTOTIC = {0: _asymptotic_coeffs(0), 1: _asymptotic_coeffs(1)}


def _scaled(nu, x, over_x=False):
    """exp(-|x|) I_nu(|x|) (callers restore the sign of I_1); divided by |x| if over_x (for
    I_1: no division near 0, where the series holds it exactly)."""
    a = lax.abs(x)
    small = lax.le(a, _like(a, _CUT))
    # power series, nested: 1 + u/(1 (1+nu)) (1 + u/(2 (2+nu)) (1 + ...)), u = a^2 / 4
    s = _where(small, a, _like(a, _CUT))
    u = lax.mul(lax.mul(s, s), _like(s, 0.25))
    acc = _like(s, 1)
    for k in range(_SERIES_TERMS, 0, -1):
        acc = lax.add(_like(s, 1), lax.mul(acc, lax.div(u, _like(u, k * (k + nu)))))
    if nu == 1:
        acc = lax.mul(acc, _like(s, 0.5) if over_x else lax.mul(s, _like(s, 0.5)))
    series = lax.mul(acc, lax.exp(lax.neg(s)))
    # asymptotic series in 1/a
    b = _where(small, _like(a, _CUT), a)
    inv = lax.div(_like(b, 1), b)
    coeffs = _ASYMPTOTIC[nu]
    poly = _like(b, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        poly = lax.add(lax.mul(poly, inv), _like(b, c))
    asym = lax.mul(poly, lax.rsqrt(lax.mul(b, _like(b, 2 * math.pi))))
    if over_x:
        asym = lax.mul(asym, inv)
    return _where(small, series, asym)


def _odd(x, y):
    return _where(lax.lt(x, _like(x, 0)), lax.neg(y), y)


@custom_jvp
def _i0e(x):
    return _scaled(0, x)


@custom_jvp
def _i1e(x):
    return _odd(x, _scaled(1, x))


@_i0e.defjvp
def _i0e_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = _i0e(x)
    return y, lax.mul(t, lax.sub(_i1e(x), lax.mul(lax.sign(x), y)))


@_i1e.defjvp
def _i1e_jvp(primals, tangents):
    # i1e / x from the series itself: 1/2 at 0, no cancellation near it
    (x,), (t,) = primals, tangents
    y = _i1e(x)
    d = lax.sub(lax.sub(_i0e(x), lax.mul(lax.sign(x), y)), _scaled(1, x, over_x=True))
    return y, lax.mul(t, d)


def _unscale(x, scaled, odd):
    """e^|x| scaled, with the limit (+inf, or +-inf if odd; not inf * 0) at +-inf."""
    out = lax.mul(lax.exp(lax.abs(x)), scaled)
    limit = _odd(x, _like(x, math.inf)) if odd else _like(x, math.inf)
    return _where(lax.eq(lax.abs(x), _like(x, math.inf)), limit, out)


@custom_jvp
def _i0(x):
    return _unscale(x, _i0e(x), False)


@custom_jvp
def _i1(x):
    return _unscale(x, _i1e(x), True)


@_i0.defjvp
def _i0_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _i0(x), lax.mul(t, _i1(x))


@_i1.defjvp
def _i1_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    i1_over_x = _unscale(x, _scaled(1, x, over_x=True), False)
    return _i1(x), lax.mul(t, lax.sub(_i0(x), i1_over_x))


def _public(name, fn, doc):
    def f(x, /):
        (v,) = _inexact(name, x)
        return _cast(fn(_up(v)), v.dtype, v.weak_type)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


i0 = _public("i0", _i0, "The modified Bessel function I_0(x), elementwise (x's shape; +inf "
                        "once e^|x| overflows). Its derivative is i1(x).")
i0e = _public("i0e", _i0e, "`exp(-|x|) i0(x)`, elementwise, finite for every x. Its "
                           "derivative is `i1e(x) - sign(x) i0e(x)`.")
i1 = _public("i1", _i1, "The modified Bessel function I_1(x), elementwise (odd). Its "
                        "derivative is `i0(x) - i1(x) / x` (1/2 at 0).")
i1e = _public("i1e", _i1e, "`exp(-|x|) i1(x)`, elementwise. Its derivative is "
                           "`i0e(x) - (sign(x) + 1/x) i1e(x)` (1/2 at 0).")
