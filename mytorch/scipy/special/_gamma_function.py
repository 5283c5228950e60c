"""The gamma function and its ratios: gamma, gammasgn, beta, factorial, poch.

Each is `sign * exp(log|value|)` from `lax.lgamma`, with SciPy's (Cephes') values at the
poles (0, -1, -2, ...). Where both arguments of a ratio are large, `log Gamma(a + m) -
log Gamma(a)` comes from Stirling's series written as a difference, so it keeps the
precision that subtracting two large lgamma values would lose (`poch(1e4, 2.5)`,
`beta(3e4, 2)`). `poch` with a small integer m is the product of its m factors, as
Cephes' recurrence: exact to rounding, and right beside the poles, where z + m may round
onto one.

Derivatives come from differentiating these formulas (gamma' = gamma digamma, and so
on); the values at poles and the sign are constants, so their derivative is zero.
"""

import math

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array
from mytorch.core.source_info import user_error
from mytorch.errors import TracerArrayConversionError
from mytorch.scipy.special._args import real_args
from mytorch.scipy.special._util import _cast, _up

_PRODUCT_UP_TO = 32  # poch with an integer |m| up to this is a product of m factors
_STIRLING_FROM = 15.0  # Stirling's series below (to x^-13) is exact to rounding from here
# the coefficients B_2k / (2k (2k - 1)) of log Gamma(x)'s Stirling series, k = 1..7
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)


def _nonpos_int(x):
    return (x <= 0) & (x == mnp.floor(x))


def _odd(k):
    """Whether the integer-valued k is odd (exact for |k| < 2^53)."""
    return k - 2 * mnp.floor(k / 2) == 1


def _gammasgn(x):
    # Gamma(x) < 0 exactly for x in (-1, 0), (-3, -2), ...: where floor(x) is odd; the sign
    # of a zero is its own (Gamma(-0) = -inf)
    neg = mnp.where(_odd(mnp.floor(x)), -1.0, 1.0)
    out = mnp.where(x > 0, 1.0, neg)
    out = mnp.where(x == 0, mnp.where(mnp.signbit(x), -1.0, 1.0), out)
    bad = mnp.isnan(x) | ((x < 0) & (x == mnp.floor(x)))
    return mnp.where(bad, np.nan, out).astype(x.dtype)


def _stirling_tail(x):
    """log Gamma(x) - ((x - 1/2) log x - x + log(2 pi)/2) for x >= 15."""
    r = 1 / x
    r2 = r * r
    out = mnp.full_like(x, _STIRLING[-1])
    for c in reversed(_STIRLING[:-1]):
        out = out * r2 + c
    return out * r


def _lgamma_diff(a, m):
    """`log|Gamma(a + m)| - log|Gamma(a)|` (finite where neither is a pole): by Stirling's
    series as a difference where a and a + m are both >= 15, else by lgamma."""
    big = (a >= _STIRLING_FROM) & (a + m >= _STIRLING_FROM)
    sa = mnp.where(big, a, _STIRLING_FROM)
    sm = mnp.where(big, m, 0.0)
    # (a+m-1/2) log(a+m) - (a-1/2) log a - m, regrouped to keep m's small contribution
    stirling = ((sa - 0.5) * mnp.log1p(sm / sa) + sm * mnp.log(sa + sm) - sm
                + _stirling_tail(sa + sm) - _stirling_tail(sa))
    direct = lax.lgamma(a + m) - lax.lgamma(a)
    return mnp.where(big, stirling, direct)


def _safe(ok, x, stand_in):
    """x where ok, `stand_in` elsewhere: the operand of a branch that a select discards,
    kept finite so that its derivative (zero there) stays zero rather than NaN."""
    return mnp.where(ok, x, stand_in)


def gammasgn(x, /):
    """The sign of the gamma function, elementwise.

    Args:
      x: an array-like of reals (ints give the default float).

    Returns:
      An array of x's shape: 1 or -1 (-1 on (-1, 0), (-3, -2), ... and at -0), NaN at the
      negative integers, -inf and NaN (SciPy's values).
    """
    (v,) = real_args("gammasgn", x)
    return _cast(_gammasgn(_up(v)), v.dtype, v.weak_type)


def gamma(x, /):
    """The gamma function, elementwise (real arguments, as in JAX).

    Args:
      x: an array-like of reals (ints give the default float).

    Returns:
      An array of x's shape: `gammasgn(x) * exp(gammaln(x))`; +inf at +0 and +inf, -inf
      at -0, NaN at the negative integers and -inf, +inf where it overflows (SciPy's
      values). Its derivative is `gamma(x) * digamma(x)`.

    >>> gamma(np.float32(5.0))
    Array(24., dtype=float32)
    """
    (v,) = real_args("gamma", x)
    u = _up(v)
    return _cast(_gammasgn(u) * mnp.exp(lax.lgamma(u)), v.dtype, v.weak_type)


def _beta_generic(a, b):
    """Gamma(a) Gamma(b) / Gamma(a + b) where neither a nor b is a pole (0 where a + b
    is)."""
    s = a + b
    sum_pole = _nonpos_int(s)
    hi, lo = mnp.maximum(a, b), mnp.minimum(a, b)
    hi, lo = _safe(~sum_pole, hi, 2.0), _safe(~sum_pole, lo, 2.0)
    sign = _gammasgn(hi) * _gammasgn(lo) * _gammasgn(hi + lo)
    value = sign * mnp.exp(lax.lgamma(lo) - _lgamma_diff(hi, lo))
    return mnp.where(sum_pole, 0.0, value)


def _beta(a, b):
    a_pole, b_pole = _nonpos_int(a), _nonpos_int(b)
    # +inf against a finite x: the limit x^... -> 0 for x > 0, sign(Gamma(x)) inf for x < 0
    a_inf, b_inf = mnp.isposinf(a), mnp.isposinf(b)
    at_inf = (a_inf | b_inf) & ~(a_pole | b_pole)
    plain = ~(a_pole | b_pole | at_inf)
    generic = _beta_generic(_safe(plain, a, 1.0), _safe(plain, b, 1.0))
    finite_side = mnp.where(a_inf, b, a)
    inf_value = mnp.where(finite_side > 0, 0.0, _gammasgn(_safe(finite_side < 0, finite_side,
                                                                -0.5)) * np.inf)
    inf_value = mnp.where(a_inf & b_inf, np.nan, inf_value)
    # at a pole a = -k the limit is finite only for a positive integer b < 1 + k:
    # (-1)^b B(1 - a - b, b) (Cephes' beta_negint; symmetric in a and b); a pole against
    # another one is (-1)^b inf, an infinite "pole" (-inf) gives +inf
    pole, other = mnp.where(a_pole, a, b), mnp.where(a_pole, b, a)
    pole, other = lax.stop_gradient(pole), lax.stop_gradient(other)
    finite = ((other > 0) & (other == mnp.floor(other)) & (1 - pole - other > 0)
              & mnp.isfinite(pole) & mnp.isfinite(other))
    limit = _beta_generic(_safe(finite, 1 - pole - other, 1.0), _safe(finite, other, 1.0))
    limit = mnp.where(_odd(_safe(finite, other, 0.0)), -limit, limit)
    both = _nonpos_int(other) & mnp.isfinite(other) & mnp.isfinite(pole)
    signed_inf = mnp.where(both & _odd(_safe(both, other, 0.0)), -np.inf, np.inf)
    at_pole = mnp.where(finite, limit, signed_inf)
    out = mnp.where(a_pole | b_pole, at_pole, mnp.where(at_inf, inf_value, generic))
    return mnp.where(mnp.isnan(a) | mnp.isnan(b), np.nan, out).astype(a.dtype)


def beta(a, b, /):
    """The beta function `Gamma(a) Gamma(b) / Gamma(a + b)`, elementwise with broadcasting.

    Args:
      a, b: array-likes of reals (ints give the default float).

    Returns:
      An array of the broadcast shape, with SciPy's values at the poles: at a = -k (k = 0,
      1, ...) the limit `(-1)^b B(1 - a - b, b)` for integer 0 < b < 1 + k, else +inf;
      0 where only a + b is a pole. Differentiable in a and b (away from the poles).
    """
    av, bv = real_args("beta", a, b)
    return _cast(_beta(_up(av), _up(bv)), bv.dtype, bv.weak_type)


def _poch(z, m):
    s = z + m
    z_pole, s_pole = _nonpos_int(z), _nonpos_int(s)
    ok = ~z_pole & ~s_pole
    sz, sm = _safe(ok, z, 1.0), _safe(ok, m, 0.0)
    sign = _gammasgn(sz + sm) * _gammasgn(sz)
    generic = sign * mnp.exp(_lgamma_diff(sz, sm))
    # both poles (m an integer): Gamma(z + m) / Gamma(z) -> (-1)^m Gamma(1-z) / Gamma(1-z-m);
    # a z + m that only rounds onto a pole (m not an integer) is finite: poch is 0
    both = z_pole & s_pole & (m == mnp.floor(m))
    bz, bm = lax.stop_gradient(_safe(both, z, 0.0)), lax.stop_gradient(_safe(both, m, 0.0))
    limit = mnp.exp(lax.lgamma(1 - bz) - lax.lgamma(1 - bz - bm))
    limit = mnp.where(_odd(bm), -limit, limit)
    out = mnp.where(both, limit, mnp.where(z_pole, 0.0, mnp.where(s_pole, np.inf, generic)))
    # a small integer m: the product z (z+1) ... (z+m-1) (or 1 / (z-1) ... (z+m)), exact
    # to rounding and right at and beside the poles, where z + m may round onto one (as
    # Cephes' recurrence); its m-derivative is the gamma ratio's, poch digamma(z + m)
    small = (m == mnp.floor(m)) & (mnp.abs(m) <= _PRODUCT_UP_TO) & mnp.isfinite(z)
    pz, pm = _safe(small, z, 1.0), lax.stop_gradient(_safe(small, m, 0.0))
    up, down = mnp.ones_like(pz), mnp.ones_like(pz)
    for k in range(_PRODUCT_UP_TO):
        up = up * mnp.where(k < pm, pz + k, 1.0)
        down = down * mnp.where(k < -pm, pz - (k + 1), 1.0)
    # zero, with the gamma ratio's derivatives in m (and mixed ones), none of its own in z
    in_m = generic - sign * mnp.exp(_lgamma_diff(sz, lax.stop_gradient(sm)))
    in_m = mnp.where(mnp.isfinite(in_m), in_m, 0.0)
    product = mnp.where(down == 0, np.inf, up / mnp.where(down == 0, 1.0, down))
    out = mnp.where(small, product + in_m, out)
    # z = +inf: Gamma(z + m) / Gamma(z) ~ z^m; m = -inf has no limit
    out = mnp.where(mnp.isposinf(z), mnp.where(m > 0, np.inf, 0.0), out)
    out = mnp.where(mnp.isnan(z) | mnp.isnan(m) | mnp.isneginf(m), np.nan, out)
    return mnp.where(m == 0, 1.0, out).astype(z.dtype)


def poch(z, m, /):
    """The Pochhammer symbol (rising factorial) `(z)_m = Gamma(z + m) / Gamma(z)`,
    elementwise with broadcasting.

    Args:
      z, m: array-likes of reals (ints give the default float).

    Returns:
      An array of the broadcast shape: 1 at m = 0; at the poles SciPy's values (0 where
      only z is a pole, +inf where only z + m is, `(-1)^m Gamma(1-z) / Gamma(1-z-m)` where
      both are). Differentiable in z and m: `poch (digamma(z + m) - digamma(z))` and
      `poch digamma(z + m)`.

    >>> poch(np.float32(3.0), np.float32(2.0))  # 3 * 4
    Array(12., dtype=float32)
    """
    zv, mv = real_args("poch", z, m)
    return _cast(_poch(_up(zv), _up(mv)), mv.dtype, mv.weak_type)


def _factorial_exact(n):
    if isinstance(n, Array):
        try:
            n = np.asarray(n)
        except TracerArrayConversionError:
            raise user_error(TypeError, "factorial: exact=True needs a concrete integer n "
                                        f"(got an abstract {n.aval.str_short()}); use "
                                        "exact=False under jit, grad or vmap") from None
    arr = np.asarray(n)
    if arr.dtype.kind not in "iub":
        raise user_error(ValueError, "factorial: exact=True needs integer n, got "
                                     f"{arr.dtype}; use exact=False for other values")
    dtype = np.dtype(dtypes.default_int())
    limit = np.iinfo(dtype).max
    values = [math.factorial(int(k)) if k >= 0 else 0 for k in arr.ravel()]
    if any(v > limit for v in values):
        raise user_error(OverflowError, f"factorial: exact=True with n up to {arr.max()} "
                                        f"overflows {dtype.name}; enable x64 for n <= 20 "
                                        "or use exact=False")
    return mnp.asarray(np.array(values, dtype).reshape(arr.shape))


def factorial(n, exact=False):
    """The factorial `n! = Gamma(n + 1)`, elementwise.

    Args:
      n: an array-like (ints give the default float).
      exact: False computes `gamma(n + 1)` in floating point (0 for n < 0, as SciPy;
        differentiable). True computes exact integers for a concrete integer n, as an
        array of the default int dtype.

    Returns:
      An array of n's shape.

    Raises:
      TypeError: exact=True with a traced n.
      ValueError: exact=True with non-integer n.
      OverflowError: exact=True and a value does not fit the default int dtype.
    """
    if exact:
        return _factorial_exact(n)
    (v,) = real_args("factorial", n)
    u = _up(v)
    neg = u < 0
    out = mnp.where(neg, 0.0, mnp.exp(lax.lgamma(_safe(~neg, u, 0.0) + 1)))
    return _cast(out.astype(u.dtype), v.dtype, v.weak_type)
