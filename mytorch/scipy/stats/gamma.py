"""The gamma distribution with shape `a`, location and scale.

No `cdf`: it needs the regularized lower incomplete gamma function, which
mytorch.scipy.special does not have yet.
"""

import mytorch.numpy as mnp
from mytorch.numpy._promote import promote_args_inexact
from mytorch.scipy import special

__all__ = ["logpdf", "pdf"]


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
