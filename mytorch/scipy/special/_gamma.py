"""The gamma family: gammaln, digamma, betaln, multigammaln.

Poles follow SciPy: gammaln is +inf at 0, -1, -2, ...; digamma is -inf at +0, +inf at -0
and NaN at the negative integers. Derivatives come from the primitives' rules: gammaln'
is digamma, digamma' is the trigamma function (+inf at every pole, its two-sided limit).
"""

import math

from mytorch import lax
from mytorch.scipy.special._util import _inexact, _like


def gammaln(x, /):
    """`log|Gamma(x)|`, elementwise.

    Args:
      x: an array-like (ints give the default float).

    Returns:
      An array of x's shape: +inf at the poles (0, -1, -2, ...). Its derivative is
      digamma(x).
    """
    (v,) = _inexact("gammaln", x)
    return lax.lgamma(v)


def digamma(x, /):
    """The digamma function `d/dx log Gamma(x)`, elementwise.

    Args:
      x: an array-like (ints give the default float).

    Returns:
      An array of x's shape: -inf at +0, +inf at -0, NaN at the negative integers (SciPy's
      values). Its derivative, polygamma(1, x), is +inf at every pole.

    >>> digamma(np.float32(1.0))  # -Euler's gamma
    Array(-0.5772157, dtype=float32)
    """
    (v,) = _inexact("digamma", x)
    return lax.digamma(v)


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
