"""The beta distribution on `[loc, loc + scale]` with shapes `a` and `b`.

No `cdf`: it needs the regularized incomplete beta function, which mytorch.scipy.special
does not have yet.
"""

import mytorch.numpy as mnp
from mytorch.numpy._promote import promote_args_inexact
from mytorch.scipy import special

__all__ = ["logpdf", "pdf"]


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
