"""The Poisson distribution with mean `mu`, shifted by `loc`."""

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.numpy._promote import promote_args_inexact
from mytorch.scipy import special

__all__ = ["cdf", "logpmf", "pmf"]


def logpmf(k, mu, loc=0):
    """`k log mu - mu - gammaln(k + 1)` at `k - loc`; -inf below 0 and at non-integer k
    (JAX's values)."""
    k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
    x = k - loc
    log_probs = special.xlogy(x, mu) - special.gammaln(x + 1) - mu
    return mnp.where((x < 0) | (mnp.round(k) != k), -mnp.inf, log_probs)


def pmf(k, mu, loc=0):
    """The probability mass `exp(logpmf(k, mu, loc))`."""
    return mnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """`P(X <= k) = gammaincc(floor(k - loc) + 1, mu)`; 0 below 0.

    The derivative in `mu` is `-pmf(floor(k - loc), mu)` (gammaincc's derivative in x).
    """
    k, mu, loc = promote_args_inexact("poisson.cdf", k, mu, loc)
    x = mnp.floor(k - loc)
    below = x < 0
    n = mnp.where(below, 0.0, x)
    # n is piecewise constant in k: only mu's derivative flows
    return mnp.where(below, 0.0, special.gammaincc(lax.stop_gradient(n) + 1, mu))
