"""Special functions (`jax.scipy.special`'s counterpart): logsumexp, softmax, the error
function family, the gamma family and the normal distribution's CDF and its inverse.

Every function promotes its inputs to a float dtype (integers to the default float), works
elementwise with NumPy broadcasting, and traces. float16/bfloat16 compute in float32 where
precision needs it and return their own dtype.

    logsumexp(f32[3,4], axis=1) -> f32[3]     ndtri(f32[5]) -> f32[5]
"""

import math

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.numpy._promote import promote_args_inexact
from mytorch.numpy._reduce_util import _axes, _bcast, _cast, _full, _isnan, _keep, _mask

__all__ = [
    "logsumexp", "softmax", "log_softmax", "expit", "logit", "erf", "erfc", "erfinv",
    "gammaln", "digamma", "betaln", "multigammaln", "xlogy", "xlog1py", "entr", "ndtr",
    "ndtri", "log_ndtr",
]

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _inexact(name, *args):
    """The arguments promoted to one float dtype and broadcast to one shape."""
    out = promote_args_inexact(name, *args)
    shape = next((a.shape for a in out if a.ndim), ())
    return [_bcast(a, shape) if a.shape != shape else a for a in out]


def _up(x):
    """x in a dtype precise enough to compute in (float16/bfloat16 -> float32)."""
    if x.dtype in (dtypes.float16, dtypes.bfloat16):
        return _cast(x, dtypes.float32, x.weak_type)
    return x


def _like(x, value):
    return _full(x.shape, value, x.dtype)


def _where(pred, on_true, on_false):
    return lax.select_n(pred, on_false, on_true)


# ---- log-sum-exp and softmax -------------------------------------------------------------
def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """`log(sum(b * exp(a)))` over `axis`, computed stably (the maximum is subtracted first).

    Args:
      a: an array-like.
      axis: None (all axes), an int or a tuple of ints.
      b: scale factors broadcastable with `a` (entries with b == 0 are ignored).
      keepdims: keep the reduced axes with size 1.
      return_sign: also return the sign of the sum, and the log of its absolute value.
      where: a bool array: only those elements take part.

    Returns:
      The reduction (a float dtype): -inf where everything is -inf (or empty), +inf if an
      element is +inf; with `return_sign`, (log|sum|, sign). Without it a negative sum
      gives NaN.

    >>> logsumexp(np.array([1000.0, 1000.0], np.float32))
    Array(1000.6932, dtype=float32)
    """
    if b is None:
        (x,) = _inexact("logsumexp", a)
    else:
        x, bv = _inexact("logsumexp", a, b)
        x = _where(lax.ne(bv, _like(bv, 0)), x, _like(x, -math.inf))
    dt, x = x.dtype, _up(x)
    axes = _axes("logsumexp", x, axis)
    if where is not None:
        x = _where(_mask("logsumexp", where, x), x, _like(x, -math.inf))
    # the shift cancels mathematically: stopping its gradient keeps the derivative exactly
    # softmax (no tie-splitting noise) and saves the max's backward pass
    amax = lax.stop_gradient(lax.reduce_max(x, axes))
    amax = _where(lax.is_finite(amax), amax, _like(amax, 0))
    shifted = lax.sub(x, _bcast(_keep(amax, x.shape, axes, True), x.shape))
    e = lax.exp(shifted)
    if b is not None:
        e = lax.mul(e, _cast(bv, x.dtype, False))
        if where is not None:
            e = _where(_mask("logsumexp", where, e), e, _like(e, 0))
    s = lax.reduce_sum(e, axes)
    if return_sign:
        sign = lax.sign(s)
        s = lax.abs(s)
    out = lax.add(lax.log(s), amax)
    out = _cast(_keep(out, x.shape, axes, keepdims), dt, False)
    if return_sign:
        return out, _cast(_keep(sign, x.shape, axes, keepdims), dt, False)
    return out


def _max_keep(x, axes):
    m = lax.stop_gradient(lax.reduce_max(x, axes))  # a shift that cancels: no derivative
    return _bcast(_keep(m, x.shape, axes, True), x.shape)


def softmax(x, /, *, axis=None):
    """`exp(x) / sum(exp(x))` over `axis` (None: all axes, as SciPy and JAX), computed
    stably.

    Args:
      x: an array-like.
      axis: None, an int or a tuple of ints.

    Returns:
      An array of x's shape (a float dtype) whose entries sum to 1 over `axis`.
    """
    (v,) = _inexact("softmax", x)
    dt, v = v.dtype, _up(v)
    axes = _axes("softmax", v, axis)
    e = lax.exp(lax.sub(v, _max_keep(v, axes)))
    total = _bcast(_keep(lax.reduce_sum(e, axes), v.shape, axes, True), v.shape)
    return _cast(lax.div(e, total), dt, False)


def log_softmax(x, /, *, axis=None):
    """`x - logsumexp(x)` over `axis` (None: all axes), computed stably; x's shape."""
    (v,) = _inexact("log_softmax", x)
    dt, v = v.dtype, _up(v)
    axes = _axes("log_softmax", v, axis)
    shifted = lax.sub(v, _max_keep(v, axes))
    lse = lax.log(lax.reduce_sum(lax.exp(shifted), axes))
    return _cast(lax.sub(shifted, _bcast(_keep(lse, v.shape, axes, True), v.shape)), dt, False)


# ---- elementwise functions ---------------------------------------------------------------
def _unary(name, fn, doc):
    def f(x, /):
        (v,) = _inexact(name, x)
        return fn(v)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


expit = _unary("expit", lax.logistic,
               "The logistic sigmoid `1 / (1 + exp(-x))`, elementwise (a float dtype).")
erf = _unary("erf", lax.erf, "The error function `2/sqrt(pi) * int_0^x exp(-t**2) dt`.")
erfc = _unary("erfc", lax.erfc, "`1 - erf(x)`, accurate where erf(x) is close to 1.")
erfinv = _unary("erfinv", lax.erf_inv,
                "The inverse of `erf` on [-1, 1]: +-inf at +-1, NaN outside.")
gammaln = _unary("gammaln", lax.lgamma,
                 "`log|Gamma(x)|`, elementwise; +inf at the poles (0, -1, -2, ...).")
digamma = _unary("digamma", lax.digamma,
                 "The digamma function `d/dx log Gamma(x)`; NaN at the poles.")


def logit(x, /):
    """The inverse of `expit`: `log(x / (1 - x))`; -inf at 0, +inf at 1, NaN outside."""
    (v,) = _inexact("logit", x)
    return lax.log(lax.div(v, lax.sub(_like(v, 1), v)))


def betaln(a, b, /):
    """`log|Beta(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)`, elementwise."""
    x, y = _inexact("betaln", a, b)
    return lax.sub(lax.add(lax.lgamma(x), lax.lgamma(y)), lax.lgamma(lax.add(x, y)))


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension `d` (a static int >= 1):
    `d(d-1)/4 log(pi) + sum_{j=1..d} gammaln(a + (1 - j) / 2)`."""
    if not isinstance(d, int) or isinstance(d, bool) or d < 1:
        raise ValueError(f"multigammaln: d must be a positive Python int, got {d!r}")
    (x,) = _inexact("multigammaln", a)
    out = _like(x, d * (d - 1) / 4 * math.log(math.pi))
    for j in range(1, d + 1):
        out = lax.add(out, lax.lgamma(lax.add(x, _like(x, (1 - j) / 2))))
    return out


def _x_log(name, x, y, log_fn):
    """x * log_fn(y), and 0 where x == 0 (unless y is NaN)."""
    xv, yv = _inexact(name, x, y)
    # x == 0 needs the select only where log_fn(y) is not finite (y <= 0 for xlogy,
    # y <= -1 for xlog1py, +inf): elsewhere x * log_fn(y) is 0 by itself there, and its
    # derivative in x is log_fn(y), as JAX's custom JVP gives
    zero = lax.bitwise_and(lax.eq(xv, _like(xv, 0)), lax.bitwise_not(_isnan(yv)))
    bad = lax.bitwise_and(zero, lax.bitwise_not(lax.is_finite(log_fn(yv))))
    safe_y = _where(bad, _like(yv, 1), yv)
    return _where(bad, _like(xv, 0), lax.mul(xv, log_fn(safe_y)))


def xlogy(x, y, /):
    """`x * log(y)`, and 0 where x == 0 (also for y == 0); NaN if y is NaN (SciPy's rule)."""
    return _x_log("xlogy", x, y, lax.log)


def xlog1py(x, y, /):
    """`x * log1p(y)`, and 0 where x == 0 (also for y == -1); NaN if y is NaN."""
    return _x_log("xlog1py", x, y, lax.log1p)


def entr(x, /):
    """The entropy term `-x * log(x)` for x > 0; 0 at 0; -inf for x < 0; NaN for NaN."""
    (v,) = _inexact("entr", x)
    pos = lax.gt(v, _like(v, 0))
    safe = _where(pos, v, _like(v, 1))
    out = _where(pos, lax.neg(lax.mul(safe, lax.log(safe))), _like(v, 0))
    out = _where(lax.lt(v, _like(v, 0)), _like(v, -math.inf), out)
    return _where(_isnan(v), v, out)


# ---- the standard normal distribution ----------------------------------------------------
def _ndtr(x):
    """Phi(x) = erfc(-x / sqrt(2)) / 2, accurate in the lower tail.

    In float32 the rounding of z = -x / sqrt(2) alone would cost about x**2 ulps of Phi
    deep in the tail, so the product's rounding error dz is computed exactly (Dekker's
    two-product) and removed to first order: erfc(z + dz) = erfc(z) - dz 2/sqrt(pi) e^-z^2.
    """
    if x.dtype != dtypes.float32:  # float64: the rounding error is negligible
        return lax.mul(lax.erfc(lax.mul(x, _like(x, -1 / _SQRT2))), _like(x, 0.5))
    c_hi = float(np.float32(-1 / _SQRT2))
    c_lo = -1 / _SQRT2 - c_hi
    ch = float(np.float32(c_hi * 4097.0) - np.float32(np.float32(c_hi * 4097.0) - c_hi))
    cl = c_hi - ch
    z = lax.mul(x, _like(x, c_hi))
    xs = lax.clamp(_full((), -1e4, x.dtype), x, _full((), 1e4, x.dtype))
    t = lax.mul(xs, _like(x, 4097.0))  # split xs into two 12-bit halves
    xh = lax.sub(t, lax.sub(t, xs))
    xl = lax.sub(xs, xh)
    zs = lax.mul(xs, _like(x, c_hi))
    err = lax.add(lax.add(lax.add(lax.sub(lax.mul(xh, _like(x, ch)), zs),
                                  lax.mul(xh, _like(x, cl))), lax.mul(xl, _like(x, ch))),
                  lax.mul(xl, _like(x, cl)))
    dz = lax.add(err, lax.mul(xs, _like(x, c_lo)))
    slope = lax.mul(lax.exp(lax.neg(lax.mul(z, z))), _like(x, 2 / math.sqrt(math.pi)))
    return lax.mul(lax.sub(lax.erfc(z), lax.mul(dz, slope)), _like(x, 0.5))


def ndtr(x, /):
    """The standard normal CDF `Phi(x) = (1 + erf(x / sqrt(2))) / 2`, elementwise."""
    (v,) = _inexact("ndtr", x)
    return _cast(_ndtr(_up(v)), v.dtype, v.weak_type)


def ndtri(p, /):
    """The inverse of `ndtr`: the x with Phi(x) = p, for p in [0, 1] (+-inf at the ends,
    NaN outside).

    The centre (0.25 < p < 0.75) is `sqrt(2) * erfinv(2p - 1)` (2p - 1 is exact there);
    the tails start from Abramowitz & Stegun 26.2.23 and take Newton steps on Phi, which
    keeps full relative precision down to the smallest p.
    """
    (v,) = _inexact("ndtri", p)
    dt, pv = v.dtype, _up(v)
    central = lax.mul(lax.erf_inv(lax.sub(lax.add(pv, pv), _like(pv, 1))), _like(pv, _SQRT2))
    q = lax.min(pv, lax.sub(_like(pv, 1), pv))
    q = _where(lax.gt(q, _like(q, 0)), q, _like(q, 0.5))  # NaN and the ends: handled below
    t = lax.sqrt(lax.mul(lax.log(q), _like(q, -2.0)))
    num = _poly(t, (2.515517, 0.802853, 0.010328))
    den = _poly(t, (1.0, 1.432788, 0.189269, 0.001308))
    x = lax.neg(lax.sub(t, lax.div(num, den)))
    for _ in range(3 if pv.dtype == dtypes.float32 else 4):
        pdf = lax.mul(lax.exp(lax.mul(lax.mul(x, x), _like(x, -0.5))),
                      _like(x, 1 / math.sqrt(2 * math.pi)))
        x = lax.sub(x, lax.div(lax.sub(_ndtr(x), q), pdf))
    tail = _where(lax.lt(pv, _like(pv, 0.5)), x, lax.neg(x))
    centre = lax.lt(lax.abs(lax.sub(pv, _like(pv, 0.5))), _like(pv, 0.25))
    out = _where(centre, central, tail)
    out = _where(lax.eq(pv, _like(pv, 0)), _like(pv, -math.inf), out)
    out = _where(lax.eq(pv, _like(pv, 1)), _like(pv, math.inf), out)
    bad = lax.bitwise_or(lax.bitwise_or(_isnan(pv), lax.lt(pv, _like(pv, 0))),
                         lax.gt(pv, _like(pv, 1)))
    return _cast(_where(bad, _like(pv, math.nan), out), dt, v.weak_type)


def _poly(t, coeffs):
    """coeffs[0] + coeffs[1] t + ... by Horner's rule."""
    out = _like(t, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        out = lax.add(lax.mul(out, t), _like(t, c))
    return out


def log_ndtr(x, /):
    """`log(ndtr(x))`, accurate in both tails: `log1p(-Phi(-x))` for x > 0 and an
    asymptotic series far in the lower tail (where Phi underflows)."""
    (v,) = _inexact("log_ndtr", x)
    dt, xv = v.dtype, _up(v)
    cut = -20.0 if xv.dtype == dtypes.float64 else -10.0
    upper = lax.log1p(lax.neg(_ndtr(lax.neg(xv))))
    middle = lax.log(_ndtr(xv))
    # far tail: -x^2/2 - log(-x) - log(sqrt(2 pi)) + log(1 - 1/x^2 + 3/x^4 - 15/x^6 ...)
    far = lax.lt(xv, _like(xv, cut))
    xs = _where(far, xv, _like(xv, cut))
    inv2 = lax.div(_like(xs, 1), lax.mul(xs, xs))
    series = _poly(inv2, (1.0, -1.0, 3.0, -15.0, 105.0, -945.0, 10395.0))
    tail = lax.sub(lax.sub(lax.mul(lax.mul(xs, xs), _like(xs, -0.5)), lax.log(lax.neg(xs))),
                   _like(xs, _LOG_SQRT_2PI))
    tail = lax.add(tail, lax.log(series))
    out = _where(lax.gt(xv, _like(xv, 0)), upper, middle)
    return _cast(_where(far, tail, out), dt, v.weak_type)
