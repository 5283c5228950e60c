"""Student's t distribution with `df` degrees of freedom, location and scale."""

import math

import mytorch.numpy as mnp
from mytorch.numpy._promote import promote_args_inexact
from mytorch.scipy import special

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
    """`log t(x; df, loc, scale) = gammaln((df+1)/2) - gammaln(df/2) - log(pi df scale**2)/2
    - (df+1)/2 log1p(((x - loc) / scale)**2 / df)`."""
    x, df, loc, scale = promote_args_inexact("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    half_df = df / 2
    half_df_plus_half = half_df + 0.5
    normalizer = (special.gammaln(half_df) + 0.5 * mnp.log(math.pi * df * scale * scale)
                  - special.gammaln(half_df_plus_half))
    return -(normalizer + half_df_plus_half * mnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1):
    """The t density `exp(logpdf(x, df, loc, scale))`."""
    return mnp.exp(logpdf(x, df, loc, scale))
