"""Spence's function (the dilogarithm), `spence(x) = int_1^x log t / (1 - t) dt =
Li_2(1 - x)` for real x >= 0 (SciPy's convention).

Li_2(z) for z in [-1, 1/2] is the series in u = -log(1 - z) with Bernoulli-number
coefficients, `Li_2 = sum_n B_n u^(n+1) / (n+1)!` (|u| <= log 2, so a dozen terms reach
float64's precision); the rest of x >= 0 maps into that range by the reflection
`Li_2(z) = pi^2/6 - log z log(1-z) - Li_2(1-z)` (x < 1/2) and the inversion
`Li_2(z) = -pi^2/6 - log^2(-z)/2 - Li_2(1/z)` (x > 2). The derivative is the closed form
`log(x) / (1 - x)` (-1 at x = 1), itself differentiable.
"""

import math
from fractions import Fraction

import numpy as np

import mytorch.numpy as mnp
from mytorch.custom_derivatives import custom_jvp
from mytorch.scipy.special._args import real_args
from mytorch.scipy.special._util import _cast, _up

_TERMS = 13
_SLOPE_TERMS = 10


def _li2_coefficients(count):
    """B_2k / (2k+1)! for k = 1..count (exact rationals, rounded once)."""
    n = 2 * count
    a, b = [Fraction(0)] * (n + 1), []
    for m in range(n + 1):  # Akiyama-Tanigawa: B_m (with B_1 = +1/2)
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        b.append(a[0])
    return tuple(float(b[2 * k] / math.factorial(2 * k + 1)) for k in range(1, count + 1))


_C = _li2_coefficients(_TERMS)
_ZETA2 = math.pi ** 2 / 6


def _li2_series(u):
    """Li_2(z) from u = -log(1 - z), |u| <= log 2: u - u^2/4 + sum_k C_k u^(2k+1)."""
    u2 = u * u
    total = mnp.full_like(u, _C[-1])
    for c in reversed(_C[:-1]):
        total = total * u2 + c
    return u - u2 / 4 + u * u2 * total


def _spence_value(x):
    low, high = x < 0.5, x > 2
    mid = ~low & ~high
    # each branch evaluates a stand-in where another one is used
    xl = mnp.where(low, x, 0.25)
    xm = mnp.where(mid, x, 1.0)
    xh = mnp.where(high, x, 4.0)
    safe_low = mnp.where(xl == 0, 0.25, xl)
    value_low = _ZETA2 - mnp.log(safe_low) * mnp.log1p(-xl) - _li2_series(-mnp.log1p(-xl))
    value_low = mnp.where(xl == 0, _ZETA2, value_low)
    value_mid = _li2_series(-mnp.log(xm))
    value_high = (-_ZETA2 - 0.5 * mnp.log(xh - 1) ** 2 - _li2_series(mnp.log1p(-1 / xh)))
    out = mnp.where(low, value_low, mnp.where(high, value_high, value_mid))
    out = mnp.where(x == 1, 0.0, out)  # +0 (the series of u = -log 1 = -0 gives -0)
    # SciPy's values: NaN for x < 0 (complex there), at +inf and NaN
    return mnp.where((x < 0) | mnp.isnan(x) | mnp.isposinf(x), np.nan, out)


@custom_jvp
def _spence(x):
    return _spence_value(x)


@_spence.defjvp
def _spence_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    # log(x) / (1 - x) = -log1p(d) / d, d = x - 1: near x = 1 its Taylor series
    # -sum_k (-d)^k / (k + 1) (to d^9 < 1e-18), which keeps the derivatives of the slope
    d = x - 1
    near = mnp.abs(d) < 1e-2
    dn = mnp.where(near, d, 0.0)
    series = mnp.zeros_like(x)
    for k in reversed(range(_SLOPE_TERMS)):
        series = series * (-dn) + 1.0 / (k + 1)
    safe = mnp.where(near, 2.0, x)
    slope = mnp.where(near, -series, mnp.log(safe) / (1 - safe))
    return _spence(x), t * slope


def spence(x, /):
    """Spence's function `int_1^x log(t) / (1 - t) dt` (the dilogarithm Li_2(1 - x)),
    elementwise, for real x >= 0 (as JAX).

    Args:
      x: an array-like (ints give the default float).

    Returns:
      An array of x's shape: pi^2/6 at 0, 0 at 1, NaN for x < 0, +inf and NaN (SciPy's
      values). Differentiable: `log(x) / (1 - x)`.

    >>> spence(np.float32(2.0))  # -pi^2 / 12
    Array(-0.822467, dtype=float32)
    """
    (xv,) = real_args("spence", x)
    u = _up(xv)
    return _cast(_spence(u), xv.dtype, xv.weak_type)
