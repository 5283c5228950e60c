"""The beta distribution on `[loc, loc + scale]` with shapes `a` and `b`."""

import mytorch.numpy as mnp
from mytorch.numpy._promote import promote_args_inexact
from mytorch.scipy import special

__all__ = ["cdf", "logpdf", "pdf", "sf"]


def logpdf(x, a, b, loc=0, scale=1):
    """`(a-1) log y + (b-1) log(1-y) - betaln(a, b) - log(scale)` with
    `y = (x - loc) / scale`; -inf outside `[loc, loc + scale]`, NaN where `a`, `b` or
    `scale` is not positive (JAX's values)."""
    x, a, b, loc, scale = promote_args_inexact("beta.logpdf", x, a, b, loc, scale)
    y = (x - loc) / scale
    # xlogy/xlog1py give 0 (not NaN) for the 0 * log 0 at the ends when a or b is 1
    log_probs = (special.xlogy(a - 1, y) + special.xlog1py(b - 1, -y)
                 - special.betaln(a, b) - mnp.log(scale))
    out = mnp.where((x < loc) | (x > loc + scale), -mnp.inf, log_probs)
    return mnp.where((a <= 0) | (b <= 0) | (scale <= 0), mnp.nan, out)


def pdf(x, a, b, loc=0, scale=1):
    """The beta density `exp(logpdf(x, a, b, loc, scale))`."""
    return mnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    """`P(X <= x) = betainc(a, b, (x - loc) / scale)`, clipped to [0, 1] outside the
    support. Differentiable in x, loc and scale; a and b are constants to differentiation
    (see `special.betainc`)."""
    x, a, b, loc, scale = promote_args_inexact("beta.cdf", x, a, b, loc, scale)
    return special.betainc(a, b, mnp.clip((x - loc) / scale, 0, 1))


def sf(x, a, b, loc=0, scale=1):
    """The survival function `P(X > x) = betainc(b, a, 1 - y)`, `y = (x - loc) / scale`
    (accurate in the upper tail)."""
    x, a, b, loc, scale = promote_args_inexact("beta.sf", x, a, b, loc, scale)
    return special.betainc(b, a, mnp.clip(1 - (x - loc) / scale, 0, 1))
