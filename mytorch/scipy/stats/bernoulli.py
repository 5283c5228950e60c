"""The Bernoulli distribution: `P(k = 1) = p`, shifted by `loc`."""

import mytorch.numpy as mnp
from mytorch.numpy._promote import promote_args_inexact
from mytorch.scipy import special

__all__ = ["cdf", "logpmf", "pmf"]


def logpmf(k, p, loc=0):
    """`k log p + (1 - k) log(1 - p)` at `k - loc`; -inf outside [0, 1] (JAX's values:
    non-integer k inside [0, 1] is not masked)."""
    k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
    x = k - loc
    log_probs = special.xlogy(x, p) + special.xlog1py(1 - x, -p)
    return mnp.where((x < 0) | (x > 1), -mnp.inf, log_probs)


def pmf(k, p, loc=0):
    """The probability mass `exp(logpmf(k, p, loc))`."""
    return mnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    """`P(X <= k)`: 0 below 0, `1 - p` on [0, 1), 1 from 1 on; NaN for NaN inputs or
    `p` outside [0, 1]."""
    k, p = promote_args_inexact("bernoulli.cdf", k, p)
    out = mnp.where(k < 0, 0.0, mnp.where(k < 1, 1 - p, 1.0))
    bad = mnp.isnan(k) | mnp.isnan(p) | (p < 0) | (p > 1)
    return mnp.where(bad, mnp.nan, out)
