"""The normal distribution `N(loc, scale**2)`: densities, CDF, survival function and
quantile function, elementwise with broadcasting."""

import math

import mytorch.numpy as mnp
from mytorch.numpy._promote import promote_args_inexact
from mytorch.scipy import special

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


def logpdf(x, loc=0, scale=1):
    """`log N(x; loc, scale**2) = -((x - loc) / scale)**2 / 2 - log(scale) - log(2 pi) / 2`."""
    x, loc, scale = promote_args_inexact("norm.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return -0.5 * z * z - (mnp.log(scale) + _HALF_LOG_TWO_PI)


def pdf(x, loc=0, scale=1):
    """The normal density `exp(logpdf(x, loc, scale))`."""
    return mnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """`P(X <= x) = ndtr((x - loc) / scale)`."""
    x, loc, scale = promote_args_inexact("norm.cdf", x, loc, scale)
    return special.ndtr((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
    """`log P(X <= x)`, accurate far in the lower tail (log_ndtr)."""
    x, loc, scale = promote_args_inexact("norm.logcdf", x, loc, scale)
    return special.log_ndtr((x - loc) / scale)


def sf(x, loc=0, scale=1):
    """The survival function `P(X > x) = ndtr((loc - x) / scale)` (no cancellation in
    the upper tail, unlike `1 - cdf`)."""
    x, loc, scale = promote_args_inexact("norm.sf", x, loc, scale)
    return special.ndtr((loc - x) / scale)


def logsf(x, loc=0, scale=1):
    """`log P(X > x)`, accurate far in the upper tail."""
    x, loc, scale = promote_args_inexact("norm.logsf", x, loc, scale)
    return special.log_ndtr((loc - x) / scale)


def ppf(q, loc=0, scale=1):
    """The quantile function, inverse of cdf: `loc + scale * ndtri(q)`; -inf at 0, +inf at
    1, NaN outside [0, 1]."""
    q, loc, scale = promote_args_inexact("norm.ppf", q, loc, scale)
    return special.ndtri(q) * scale + loc


def isf(q, loc=0, scale=1):
    """The inverse survival function, `ppf(1 - q)` computed as `loc - scale * ndtri(q)`."""
    q, loc, scale = promote_args_inexact("norm.isf", q, loc, scale)
    return loc - special.ndtri(q) * scale
