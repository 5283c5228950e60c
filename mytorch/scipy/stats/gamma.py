"""The gamma distribution with shape `a`, location and scale."""

import mytorch.numpy as mnp
from mytorch.numpy._promote import promote_args_inexact
from mytorch.scipy import special

__all__ = ["cdf", "logpdf", "pdf", "sf"]


def logpdf(x, a, loc=0, scale=1):
    """`(a-1) log y - y - gammaln(a) - log(scale)` with `y = (x - loc) / scale`; -inf
    below `loc` (JAX's values)."""
    x, a, loc, scale = promote_args_inexact("gamma.logpdf", x, a, loc, scale)
    y = (x - loc) / scale
    log_probs = special.xlogy(a - 1, y) - y - (special.gammaln(a) + mnp.log(scale))
    return mnp.where(x < loc, -mnp.inf, log_probs)


def pdf(x, a, loc=0, scale=1):
    """The gamma density `exp(logpdf(x, a, loc, scale))`."""
    return mnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    """`P(X <= x) = gammainc(a, (x - loc) / scale)`; 0 below `loc`."""
    x, a, loc, scale = promote_args_inexact("gamma.cdf", x, a, loc, scale)
    y = (x - loc) / scale
    return special.gammainc(a, mnp.maximum(y, 0))


def sf(x, a, loc=0, scale=1):
    """The survival function `P(X > x) = gammaincc(a, (x - loc) / scale)` (no
    cancellation in the upper tail); 1 below `loc`."""
    x, a, loc, scale = promote_args_inexact("gamma.sf", x, a, loc, scale)
    y = (x - loc) / scale
    return special.gammaincc(a, mnp.maximum(y, 0))
