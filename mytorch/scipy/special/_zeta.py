"""The Hurwitz zeta function and the polygamma functions.

    zeta(s, q) = sum_k (q + k)^-s          (s > 1, q > 0)
    polygamma(n, x) = d^n/dx^n digamma(x) = (-1)^(n+1) n! zeta(n + 1, x)   (n >= 1)

zeta sums twelve terms and then the Euler-Maclaurin tail (Cephes' scheme, to a few ulps).
polygamma reflects negative x: psi_n(x) = (-1)^n psi_n(1 - x) - pi d^n/dx^n cot(pi x), the
n-th derivative of cot written as a polynomial in cot; its derivative is polygamma(n + 1).
"""

import math

import numpy as np

from mytorch import lax
from mytorch.core.array import Array
from mytorch.custom_derivatives import custom_jvp
from mytorch.errors import TracerArrayConversionError
from mytorch.lax._utils import asarray
from mytorch.scipy.special._util import _bcast, _cast, _inexact, _isnan, _like, _up, _where

# (2k)! / B_2k for k = 1..12: the Euler-Maclaurin coefficients
_EM = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
       7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
       -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)
_TERMS = 12


def _hurwitz(s, q):
    """zeta(s, q) for q > 0 (callers select the rest away: q must be positive)."""
    ns = lax.neg(s)
    total = lax.pow(q, ns)
    a = q
    for _ in range(_TERMS):
        a = lax.add(a, _like(a, 1))
        total = lax.add(total, lax.pow(a, ns))
    w, b = a, lax.pow(a, ns)
    total = lax.add(total, lax.div(lax.mul(b, w), lax.sub(s, _like(s, 1))))
    total = lax.sub(total, lax.mul(b, _like(b, 0.5)))
    fac, k = _like(s, 1), 0.0
    for coeff in _EM:
        fac = lax.mul(fac, lax.add(s, _like(s, k)))
        b = lax.div(b, w)
        total = lax.add(total, lax.div(lax.mul(fac, b), _like(b, coeff)))
        fac = lax.mul(fac, lax.add(s, _like(s, k + 1)))
        b = lax.div(b, w)
        k += 2
    return total


def zeta(x, q=None):
    """The Hurwitz zeta function `sum_{k>=0} (q + k)^-x`, elementwise with broadcasting
    (Riemann's zeta when q is None).

    Args:
      x: the exponent, an array-like (> 1 for a finite value).
      q: the shift, an array-like (> 0), or None for 1.

    Returns:
      An array of the broadcast shape: +inf at x == 1 and where q is 0 or a negative
      integer; NaN for x < 1 and for other negative q (as SciPy for non-integer x).
    """
    if q is None:
        (s,) = _inexact("zeta", x)
        qv = _like(s, 1)
    else:
        s, qv = _inexact("zeta", x, q)
    ok = lax.bitwise_and(lax.gt(qv, _like(qv, 0)), lax.gt(s, _like(s, 1)))
    value = _hurwitz(_where(ok, s, _like(s, 2)), _where(ok, qv, _like(qv, 1)))
    pole = lax.bitwise_or(lax.eq(s, _like(s, 1)),
                          lax.bitwise_and(lax.le(qv, _like(qv, 0)),
                                          lax.eq(qv, lax.floor(qv))))
    bad = lax.bitwise_or(_isnan(s), _isnan(qv))
    out = _where(ok, value, _where(pole, _like(s, math.inf), _like(s, math.nan)))
    return _where(bad, _like(s, math.nan), out)


def _cot_derivative_poly(n):
    """Coefficients (lowest first) of P_n with d^n/dt^n cot(t) = P_n(cot t)."""
    p = np.array([0.0, 1.0])  # cot
    for _ in range(n):
        dp = np.polynomial.polynomial.polyder(p)
        p = -np.polynomial.polynomial.polymul(dp, [1.0, 0.0, 1.0])  # d cot = -(1 + cot^2)
    return tuple(float(c) for c in p)


def _polygamma_value(n, x):
    if n == 0:
        return lax.digamma(x)
    sign_n = (-1.0) ** (n + 1) * math.factorial(n)
    neg = lax.lt(x, _like(x, 0))
    xs = _where(neg, lax.sub(_like(x, 1), x), x)  # >= 1 where reflected
    pos_val = lax.mul(_hurwitz(_like(x, n + 1.0), _where(lax.gt(xs, _like(xs, 0)), xs,
                                                          _like(xs, 1))), _like(x, sign_n))
    # reflection: psi_n(x) = (-1)^n psi_n(1 - x) - pi^(n+1) P_n(cot(pi x)), cot's period 1
    # (a primal of a custom_jvp: its selects need not be safe for differentiation)
    r = _where(neg, lax.sub(x, lax.round(x)), _like(x, 0.5))
    ar = lax.abs(r)
    # cot(pi r) = sign(r) tan(pi (1/2 - |r|)): exact 0 at the half-integers, where pi r's
    # rounding would leave cos(pi r) ~ 1e-8 (float32) times a large P_n'
    near_half = lax.gt(ar, _like(ar, 0.25))
    c_half = lax.mul(lax.sign(r), lax.tan(lax.mul(lax.sub(_like(ar, 0.5), ar),
                                                    _like(ar, math.pi))))
    pr = lax.mul(r, _like(r, math.pi))
    c = _where(near_half, c_half, lax.div(lax.cos(pr), lax.sin(pr)))
    coeffs = _cot_derivative_poly(n)
    poly = _like(c, coeffs[-1])
    for coeff in reversed(coeffs[:-1]):
        poly = lax.add(lax.mul(poly, c), _like(c, coeff))
    reflected = lax.sub(lax.mul(pos_val, _like(x, (-1.0) ** n)),
                        lax.mul(poly, _like(poly, math.pi ** (n + 1))))
    out = _where(neg, reflected, pos_val)
    pole = lax.bitwise_and(lax.le(x, _like(x, 0)), lax.eq(x, lax.floor(x)))
    return _where(pole, _like(x, math.inf if n % 2 else -math.inf), out)


_polygamma = custom_jvp(_polygamma_value, nondiff_argnums=(0,))


@_polygamma.defjvp
def _polygamma_jvp(n, primals, tangents):
    # d/dx psi_n = psi_(n+1)
    (x,), (t,) = primals, tangents
    return _polygamma(n, x), lax.mul(t, _polygamma(n + 1, x))


def _static_order(n):
    if isinstance(n, Array):
        try:
            n = np.asarray(n)
        except TracerArrayConversionError:
            raise TypeError("polygamma: the order n must be concrete (a Python int or a "
                            "concrete integer array), got an abstract "
                            f"{n.aval.str_short()}; pass it as a static argument") from None
    arr = np.asarray(n)
    if arr.dtype.kind not in "iub" and not (arr.dtype.kind == "f"
                                            and np.all(arr == np.floor(arr))):
        raise TypeError(f"polygamma: the order n must hold integers, got {arr.dtype}")
    if np.any(arr < 0):
        raise ValueError(f"polygamma: the order n must be >= 0, got {n!r}")
    return arr.astype(np.int64)


def polygamma(n, x):
    """The polygamma function of order n, `d^n/dx^n digamma(x)`, elementwise.

    Args:
      n: the order: a non-negative int, or a concrete integer array broadcastable with x.
      x: an array-like (ints give the default float).

    Returns:
      An array of the broadcast shape. At the poles (0, -1, -2, ...): +inf for odd n, -inf
      for even n >= 2 (SciPy's values); n = 0 is digamma. Its derivative is
      polygamma(n + 1, x).

    >>> polygamma(1, np.float32(1.0))  # pi^2 / 6
    Array(1.644934, dtype=float32)
    """
    orders = _static_order(n)
    (v,) = _inexact("polygamma", x)
    dt, v = v.dtype, _up(v)
    if orders.ndim == 0:
        return _cast(_polygamma(int(orders), v), dt, v.weak_type)
    shape = np.broadcast_shapes(orders.shape, v.shape)
    if v.shape != shape:
        v = _bcast(v, shape)
    orders = np.broadcast_to(orders, shape)
    out = _like(v, 0)
    for k in np.unique(orders):
        out = _where(_bcast(asarray(orders == k), shape), _polygamma(int(k), v), out)
    return _cast(out, dt, v.weak_type)
