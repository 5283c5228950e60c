"""NumPy implementations of the special functions NumPy lacks: erf, erfc, erf_inv, lgamma,
digamma. They compute in float64 and are accurate to a few ulps of float64; callers cast.
"""

import math

import numpy as np

_erf_scalar = np.frompyfunc(math.erf, 1, 1)
_erfc_scalar = np.frompyfunc(math.erfc, 1, 1)


def _lgamma1(v):
    if math.isnan(v):
        return v
    try:
        return math.lgamma(v)
    except OverflowError:  # |x| near float64's max: the result is beyond it
        return math.inf


_lgamma_scalar = np.frompyfunc(_lgamma1, 1, 1)


def _f64(x):
    return np.asarray(x, dtype=np.float64)


def erf(x):
    """The error function (libm's erf, element by element)."""
    return np.asarray(_erf_scalar(_f64(x)), dtype=np.float64)


def erfc(x):
    """The complementary error function 1 - erf(x), accurate in the tails."""
    return np.asarray(_erfc_scalar(_f64(x)), dtype=np.float64)


def lgamma(x):
    """log|Gamma(x)|; +inf at the poles (non-positive integers)."""
    x = _f64(x)
    out = np.empty_like(x)
    poles = (x <= 0) & (x == np.floor(x))
    out[poles] = np.inf
    rest = ~poles
    out[rest] = np.asarray(_lgamma_scalar(x[rest]), dtype=np.float64)
    return out


def erf_inv(x):
    """The inverse of erf on [-1, 1]: +-inf at +-1, NaN outside."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        # Winitzki's closed form (relative error ~2e-3), then Newton steps on erf/erfc.
        a = 0.147
        ln = np.log1p(-x * x)
        t = 2.0 / (np.pi * a) + ln / 2.0
        y = np.sign(x) * np.sqrt(np.sqrt(t * t - ln / a) - t)
        ax = np.abs(x)
        tail = ax > 0.5
        for _ in range(4):
            # the tail uses erfc(|y|) = 1 - |x| to keep precision near +-1
            err = np.where(tail, np.sign(x) * (erfc(np.abs(y)) - (1.0 - ax)) * -1.0, erf(y) - x)
            y = y - err / (2.0 / np.sqrt(np.pi) * np.exp(-y * y))
        y = np.where(ax == 1.0, np.sign(x) * np.inf, y)
        return np.where((ax > 1.0) | np.isnan(x), np.nan, y)


def digamma(x):
    """The logarithmic derivative of Gamma. At the poles SciPy's values: -inf at +0, +inf
    at -0 (the one-sided limits), NaN at the negative integers."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        poles = (x <= 0) & (x == np.floor(x))
        # reflection for x < 0.5: psi(x) = psi(1 - x) - pi / tan(pi x); tan has period pi,
        # so tan(pi r) with r = x - round(x) in [-1/2, 1/2] keeps full precision for large |x|
        reflect = x < 0.5
        z = np.where(reflect, 1.0 - x, x)
        shift = np.zeros_like(z)
        for _ in range(10):  # recurrence psi(z) = psi(z + 1) - 1/z until z >= 10
            small = z < 10.0
            if not small.any():
                break
            shift = shift - np.where(small, 1.0 / z, 0.0)
            z = np.where(small, z + 1.0, z)
        inv2 = 1.0 / (z * z)
        # asymptotic series: ln z - 1/2z - sum B_2k / (2k z^2k)
        series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
            1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 / 12.0))))))
        psi = np.log(z) - 0.5 / z - series + shift
        r = x - np.round(x)
        psi = np.where(reflect, psi - np.pi / np.tan(np.pi * r), psi)
        psi = np.where(poles, np.nan, psi)
        return np.where(x == 0, np.copysign(np.inf, -np.copysign(1.0, x)), psi)
