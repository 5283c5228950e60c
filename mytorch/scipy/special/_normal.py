"""The standard normal distribution: ndtr (its CDF Phi), ndtri (Phi's inverse) and log_ndtr
(log Phi), accurate over the whole line, with closed-form derivatives.

The derivatives are `custom_jvp` rules built on one helper, the ratio
`phi(x) / Phi(x)` (`_pdf_over_cdf`, the reciprocal of the Mills ratio of -x): directly where
both terms are representable, from the asymptotic series deep in the lower tail. Every
select in them has safe operands on both sides, so they differentiate again.

    log_ndtr'(x) = phi(x) / Phi(x)
    ndtri'(p)    = 1 / phi(ndtri(p)) = 1 / (p * phi(x) / Phi(x)),  x = ndtri(p)
"""

import math

import numpy as np

from mytorch import lax
from mytorch.custom_derivatives import custom_jvp
from mytorch.scipy.special._util import (
    _cast,
    _full,
    _inexact,
    _is_f32,
    _isnan,
    _like,
    _poly,
    _up,
    _where,
)

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_INV_SQRT_2PI = 1 / math.sqrt(2.0 * math.pi)
# x Phi(x) / -phi(x) ~ 1 - 1/x^2 + 3/x^4 - 15/x^6 + ... = sum (-1)^k (2k-1)!! / x^(2k);
# eleven terms leave a relative error below 1e-18 at |x| = 20 and 1e-11 at |x| = 10
_TAIL_SERIES = tuple((-1) ** k * math.prod(range(1, 2 * k, 2)) for k in range(11))


def _tail_cut(x):
    """Below this x the lower tail uses the asymptotic series."""
    return -10.0 if _is_f32(x) else -20.0


def _split(x):
    """x (clamped to +-1e4) as hi + lo with hi * hi exact (Veltkamp's split)."""
    xs = lax.clamp(_full((), -1e4, x.dtype), x, _full((), 1e4, x.dtype))
    t = lax.mul(xs, _like(x, 4097.0 if _is_f32(x) else 134217729.0))
    hi = lax.sub(t, lax.sub(t, xs))
    return xs, hi, lax.sub(xs, hi)


def _pdf(x):
    """phi(x) = exp(-x^2 / 2) / sqrt(2 pi). In float32 the rounding of x^2 alone would cost
    about x^2 ulps, so x^2 is taken as hi^2 (exact) + lo (2 hi + lo)."""
    if not _is_f32(x):
        return lax.mul(lax.exp(lax.mul(lax.mul(x, x), _like(x, -0.5))), _like(x, _INV_SQRT_2PI))
    _, hi, lo = _split(x)
    big = lax.exp(lax.mul(lax.mul(hi, hi), _like(x, -0.5)))
    small = lax.exp(lax.mul(lax.mul(lo, lax.add(lax.add(hi, hi), lo)), _like(x, -0.5)))
    return lax.mul(lax.mul(big, small), _like(x, _INV_SQRT_2PI))


def _ndtr(x):
    """Phi(x) = erfc(-x / sqrt(2)) / 2, accurate in the lower tail.

    In float32 the rounding of z = -x / sqrt(2) alone would cost about x**2 ulps of Phi
    deep in the tail, so the product's rounding error dz is computed exactly (Dekker's
    two-product) and removed to first order: erfc(z + dz) = erfc(z) - dz 2/sqrt(pi) e^-z^2.
    """
    if not _is_f32(x):  # float64: the rounding error is negligible
        return lax.mul(lax.erfc(lax.mul(x, _like(x, -1 / _SQRT2))), _like(x, 0.5))
    c_hi = float(np.float32(-1 / _SQRT2))
    c_lo = -1 / _SQRT2 - c_hi
    ch = float(np.float32(c_hi * 4097.0) - np.float32(np.float32(c_hi * 4097.0) - c_hi))
    cl = c_hi - ch
    z = lax.mul(x, _like(x, c_hi))
    xs, xh, xl = _split(x)
    zs = lax.mul(xs, _like(x, c_hi))
    err = lax.add(lax.add(lax.add(lax.sub(lax.mul(xh, _like(x, ch)), zs),
                                  lax.mul(xh, _like(x, cl))), lax.mul(xl, _like(x, ch))),
                  lax.mul(xl, _like(x, cl)))
    dz = lax.add(err, lax.mul(xs, _like(x, c_lo)))
    slope = lax.mul(lax.exp(lax.neg(lax.mul(z, z))), _like(x, 2 / math.sqrt(math.pi)))
    return lax.mul(lax.sub(lax.erfc(z), lax.mul(dz, slope)), _like(x, 0.5))


def _pdf_over_cdf(x):
    """phi(x) / Phi(x) (log_ndtr's derivative): ~ -x in the lower tail, 0 at +inf."""
    cut = _tail_cut(x)
    tail = lax.lt(x, _like(x, cut))
    xd = _where(tail, _like(x, 0), x)  # each branch sees only points where it is safe
    xt = _where(tail, x, _like(x, cut))
    direct = lax.div(_pdf(xd), _ndtr(xd))
    series = _poly(lax.div(_like(xt, 1), lax.mul(xt, xt)), _TAIL_SERIES)
    return _where(tail, lax.div(lax.neg(xt), series), direct)


def ndtr(x, /):
    """The standard normal CDF `Phi(x) = (1 + erf(x / sqrt(2))) / 2`, elementwise.

    Args:
      x: an array-like (ints give the default float).

    Returns:
      An array of x's shape and float dtype; its derivative is the normal density.
    """
    (v,) = _inexact("ndtr", x)
    return _cast(_ndtr(_up(v)), v.dtype, v.weak_type)


# ---- log_ndtr ----------------------------------------------------------------------------
@custom_jvp
def _log_ndtr(x):
    cut = _tail_cut(x)
    upper = lax.log1p(lax.neg(_ndtr(lax.neg(x))))
    middle = lax.log(_ndtr(x))
    # far tail: -x^2/2 - log(-x) - log(sqrt(2 pi)) + log(series(1 / x^2))
    far = lax.lt(x, _like(x, cut))
    xs = _where(far, x, _like(x, cut))
    series = _poly(lax.div(_like(xs, 1), lax.mul(xs, xs)), _TAIL_SERIES)
    tail = lax.sub(lax.sub(lax.mul(lax.mul(xs, xs), _like(xs, -0.5)), lax.log(lax.neg(xs))),
                   _like(xs, _LOG_SQRT_2PI))
    tail = lax.add(tail, lax.log(series))
    out = _where(lax.gt(x, _like(x, 0)), upper, middle)
    return _where(far, tail, out)


@_log_ndtr.defjvp
def _log_ndtr_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _log_ndtr(x), lax.mul(t, _pdf_over_cdf(x))


def log_ndtr(x, /):
    """`log(ndtr(x))`, elementwise, accurate in both tails: `log1p(-Phi(-x))` for x > 0 and
    an asymptotic series far in the lower tail (where Phi underflows).

    Args:
      x: an array-like (ints give the default float).

    Returns:
      An array of x's shape: -inf at -inf, 0 at +inf. The derivative `phi(x) / Phi(x)`
      is finite everywhere (about -x in the lower tail; +inf at -inf).

    >>> log_ndtr(np.float32(-40.0))
    Array(-804.60846, dtype=float32)
    """
    (v,) = _inexact("log_ndtr", x)
    return _cast(_log_ndtr(_up(v)), v.dtype, v.weak_type)


# ---- ndtri -------------------------------------------------------------------------------
@custom_jvp
def _ndtri(pv):
    central = lax.mul(lax.erf_inv(lax.sub(lax.add(pv, pv), _like(pv, 1))), _like(pv, _SQRT2))
    q = lax.min(pv, lax.sub(_like(pv, 1), pv))
    q = _where(lax.gt(q, _like(q, 0)), q, _like(q, 0.5))  # NaN and the ends: handled below
    t = lax.sqrt(lax.mul(lax.log(q), _like(q, -2.0)))
    num = _poly(t, (2.515517, 0.802853, 0.010328))
    den = _poly(t, (1.0, 1.432788, 0.189269, 0.001308))
    x = lax.neg(lax.sub(t, lax.div(num, den)))
    for _ in range(3 if _is_f32(pv) else 4):
        x = lax.sub(x, lax.div(lax.sub(_ndtr(x), q), _pdf(x)))
    tail = _where(lax.lt(pv, _like(pv, 0.5)), x, lax.neg(x))
    centre = lax.lt(lax.abs(lax.sub(pv, _like(pv, 0.5))), _like(pv, 0.25))
    out = _where(centre, central, tail)
    out = _where(lax.eq(pv, _like(pv, 0)), _like(pv, -math.inf), out)
    out = _where(lax.eq(pv, _like(pv, 1)), _like(pv, math.inf), out)
    bad = lax.bitwise_or(lax.bitwise_or(_isnan(pv), lax.lt(pv, _like(pv, 0))),
                         lax.gt(pv, _like(pv, 1)))
    return _where(bad, _like(pv, math.nan), out)


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    # 1 / phi(x) overflows in the rounding of x^2 long before the result does; instead
    # phi(x) = p * (phi/Phi)(x) for p < 1/2 and (1 - p) * (phi/Phi)(-x) above (1 - p is
    # exact there), both well conditioned. +inf at p = 0 and 1, NaN outside [0, 1].
    (p,), (t,) = primals, tangents
    ends = lax.bitwise_or(lax.eq(p, _like(p, 0)), lax.eq(p, _like(p, 1)))
    # x's own derivative is infinite at the ends: take it at a safe point there
    x = _ndtri(_where(ends, _like(p, 0.5), p))
    lower = lax.lt(p, _like(p, 0.5))
    use_lo = lax.bitwise_and(lower, lax.bitwise_not(ends))
    use_up = lax.bitwise_and(lax.bitwise_not(lower), lax.bitwise_not(ends))
    half, zero = _like(p, 0.5), _like(p, 0)
    d_lo = lax.mul(_where(use_lo, p, half), _pdf_over_cdf(_where(use_lo, x, zero)))
    d_up = lax.mul(lax.sub(_like(p, 1), _where(use_up, p, half)),
                   _pdf_over_cdf(lax.neg(_where(use_up, x, zero))))
    dens = _where(lower, d_lo, d_up)
    slope = _where(ends, _like(p, math.inf), lax.div(_like(p, 1), dens))
    return _ndtri(p), lax.mul(t, slope)


def ndtri(p, /):
    """The inverse of `ndtr`: the x with Phi(x) = p, elementwise.

    The centre (0.25 < p < 0.75) is `sqrt(2) * erfinv(2p - 1)` (2p - 1 is exact there);
    the tails start from Abramowitz & Stegun 26.2.23 and take Newton steps on Phi, which
    keeps full relative precision down to the smallest p.

    Args:
      p: an array-like of probabilities (ints give the default float).

    Returns:
      An array of p's shape: -inf at 0, +inf at 1, NaN outside [0, 1]. The derivative
      `sqrt(2 pi) exp(x^2 / 2)` is +inf at 0 and 1.
    """
    (v,) = _inexact("ndtri", p)
    return _cast(_ndtri(_up(v)), v.dtype, v.weak_type)
