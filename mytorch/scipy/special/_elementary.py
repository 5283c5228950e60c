"""The logistic pair (expit, logit), the error function family and the entropy-like
functions (xlogy, xlog1py, entr, rel_entr, kl_div).

Functions whose derivative has a closed form but whose plain differentiation would go
through an unsafe branch of a select (a NaN cotangent times zero is NaN) carry a
`custom_jvp` rule; the rules are written with lax operations (selects with safe operands),
so they differentiate, batch and compile again.
"""

import math

from mytorch import lax
from mytorch.custom_derivatives import custom_jvp
from mytorch.scipy.special._util import _inexact, _isnan, _like, _where


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
                "The inverse of `erf` on [-1, 1]: +-inf at +-1, NaN outside; its derivative "
                "`sqrt(pi)/2 exp(erfinv(x)**2)` is +inf at +-1.")


# ---- logit -------------------------------------------------------------------------------
@custom_jvp
def _logit(p):
    one = _like(p, 1)
    q = lax.sub(one, p)
    # near p = 1/2 the quotient p/q is close to 1 and its log loses relative precision;
    # there 2p - 1 is exact and log1p((2p - 1)/q) keeps it
    centre = lax.lt(lax.abs(lax.sub(p, _like(p, 0.5))), _like(p, 0.25))
    near = lax.log1p(lax.div(lax.sub(lax.add(p, p), one), q))
    return _where(centre, near, lax.log(lax.div(p, q)))


@_logit.defjvp
def _logit_jvp(primals, tangents):
    # d logit = 1 / (p (1 - p)): +inf at 0 and 1 (as JAX)
    (p,), (t,) = primals, tangents
    return _logit(p), lax.div(t, lax.mul(p, lax.sub(_like(p, 1), p)))


def logit(x, /):
    """The inverse of `expit`: `log(x / (1 - x))`, elementwise.

    Args:
      x: an array-like of probabilities (ints give the default float).

    Returns:
      An array of x's shape: -inf at 0, +inf at 1, NaN outside [0, 1]. The derivative
      `1 / (x (1 - x))` is +inf at 0 and 1.

    >>> logit(np.float32(0.75))
    Array(1.0986123, dtype=float32)
    """
    (v,) = _inexact("logit", x)
    return _logit(v)


# ---- x log y -----------------------------------------------------------------------------
def _x_log_rule(log_fn, shift):
    """x * log_fn(y) with 0 where x == 0 (unless y is NaN), as a custom_jvp function.

    d/dx = log_fn(y) (-inf at the log's pole, NaN past it, as JAX); d/dy = x / (y + shift),
    and 0 where x == 0: the function is 0 all along x == 0, so that partial derivative is
    exactly 0 there (JAX's x / y gives NaN at x = y = 0).
    """
    @custom_jvp
    def f(x, y):
        zero = lax.bitwise_and(lax.eq(x, _like(x, 0)), lax.bitwise_not(_isnan(y)))
        safe_y = _where(zero, _like(y, 1), y)  # no 0 * inf (a NaN debug_nans would report)
        return _where(zero, _like(x, 0), lax.mul(x, log_fn(safe_y)))

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        d = lax.add(y, _like(y, shift)) if shift else y
        pole = lax.bitwise_and(lax.eq(x, _like(x, 0)), lax.eq(d, _like(d, 0)))
        dy = lax.div(x, _where(pole, _like(d, 1), d))  # x / d, safe at x = d = 0
        return f(x, y), lax.add(lax.mul(tx, log_fn(y)), lax.mul(ty, dy))

    return f


_xlogy = _x_log_rule(lax.log, 0.0)
_xlog1py = _x_log_rule(lax.log1p, 1.0)


def xlogy(x, y, /):
    """`x * log(y)`, elementwise with broadcasting; 0 where x == 0 (also for y == 0), NaN
    if y is NaN (SciPy's rule).

    Args:
      x, y: array-likes broadcastable to one shape.

    Returns:
      An array of the broadcast shape. Derivatives: `log(y)` in x (-inf at y == 0) and
      `x / y` in y (0 where x == 0).
    """
    return _xlogy(*_inexact("xlogy", x, y))


def xlog1py(x, y, /):
    """`x * log1p(y)`, elementwise with broadcasting; 0 where x == 0 (also for y == -1),
    NaN if y is NaN. Derivatives: `log1p(y)` in x, `x / (1 + y)` in y (0 where x == 0)."""
    return _xlog1py(*_inexact("xlog1py", x, y))


# ---- entropies ---------------------------------------------------------------------------
@custom_jvp
def _entr(v):
    pos = lax.gt(v, _like(v, 0))
    safe = _where(pos, v, _like(v, 1))
    out = _where(pos, lax.neg(lax.mul(safe, lax.log(safe))), _like(v, 0))
    out = _where(lax.lt(v, _like(v, 0)), _like(v, -math.inf), out)
    return _where(_isnan(v), v, out)


@_entr.defjvp
def _entr_jvp(primals, tangents):
    # d entr = -(log x + 1): +inf at 0, NaN for x < 0 (where entr is the constant -inf), as
    # JAX; its derivative -1/x is -inf at 0
    (v,), (t,) = primals, tangents
    return _entr(v), lax.neg(lax.mul(t, lax.add(lax.log(v), _like(v, 1))))


def entr(x, /):
    """The entropy term `-x * log(x)`, elementwise.

    Args:
      x: an array-like.

    Returns:
      An array of x's shape: 0 at 0, -inf for x < 0, NaN for NaN. The derivative
      `-(log(x) + 1)` is +inf at 0.
    """
    (v,) = _inexact("entr", x)
    return _entr(v)


def _xlogx(x):
    """x log x for x > 0 (callers select away the rest: x must be positive)."""
    return lax.mul(x, lax.log(x))


def rel_entr(p, q, /):
    """The relative entropy term, elementwise with broadcasting:
    `p log(p / q)` for p, q > 0; 0 for p == 0, q >= 0; +inf otherwise (SciPy's cases).

    Args:
      p, q: array-likes broadcastable to one shape.

    Returns:
      An array of the broadcast shape. Derivatives (as JAX): `log(p/q) + 1` in p and
      `-p/q` in q where p, q > 0; 0 elsewhere.
    """
    x, y = _inexact("rel_entr", p, q)
    zero = _like(x, 0)
    both = lax.bitwise_and(lax.gt(x, zero), lax.gt(y, zero))
    edge = lax.bitwise_and(lax.eq(x, zero), lax.ge(y, zero))
    sx, sy = _where(both, x, _like(x, 1)), _where(both, y, _like(y, 1))
    inner = lax.sub(_xlogx(sx), lax.mul(sx, lax.log(sy)))
    return _where(both, inner, _where(edge, zero, _like(x, math.inf)))


def kl_div(p, q, /):
    """The Kullback-Leibler divergence term, elementwise with broadcasting:
    `p log(p / q) - p + q` for p, q > 0; q for p == 0, q >= 0; +inf otherwise.

    Args:
      p, q: array-likes broadcastable to one shape.

    Returns:
      An array of the broadcast shape (`rel_entr(p, q) - p + q`).
    """
    x, y = _inexact("kl_div", p, q)
    return lax.add(lax.sub(rel_entr(x, y), x), y)
