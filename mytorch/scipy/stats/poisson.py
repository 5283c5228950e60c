"""The Poisson distribution with mean `mu`, shifted by `loc`."""

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.custom_derivatives import custom_jvp
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


@custom_jvp
def _cdf(n, mu):
    # sum_{j=0..n} exp(j log mu - mu - gammaln(j + 1)); each term in log space, so that
    # neither exp(-mu) nor mu**j over- or underflows on its own. One loop for the whole
    # array: it runs to the largest n and masks the terms past each element's own n.
    def cond(carry):
        j, _ = carry
        return mnp.any(j <= n)

    def body(carry):
        j, acc = carry
        term = mnp.exp(special.xlogy(j, mu) - mu - special.gammaln(j + 1))
        return j + 1, acc + mnp.where(j <= n, term, 0.0)

    init = (mnp.zeros((), n.dtype), mnp.zeros(mnp.broadcast_shapes(n.shape, mu.shape), mu.dtype))
    _, total = lax.while_loop(cond, body, init)
    return mnp.minimum(total, 1.0)


@_cdf.defjvp
def _cdf_jvp(primals, tangents):
    # d/dmu P(X <= n) = -P(X = n); the CDF is piecewise constant in n
    (n, mu), (_, t_mu) = primals, tangents
    d_mu = -mnp.exp(special.xlogy(n, mu) - mu - special.gammaln(n + 1))
    return _cdf(n, mu), t_mu * d_mu


def cdf(k, mu, loc=0):
    """`P(X <= k) = sum_{j <= floor(k - loc)} mu**j exp(-mu) / j!`; 0 below 0.

    The sum runs as a `lax.while_loop` over j (so it traces under jit and vmap, taking as
    many steps as the largest k); the derivative in `mu` is `-pmf(floor(k - loc), mu)`.
    """
    k, mu, loc = promote_args_inexact("poisson.cdf", k, mu, loc)
    x = mnp.floor(k - loc)
    below = x < 0
    n = mnp.where(below, 0.0, x)
    return mnp.where(below, 0.0, _cdf(n, mu))
