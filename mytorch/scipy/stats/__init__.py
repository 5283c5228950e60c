"""Probability distributions (`jax.scipy.stats`'s counterpart), one module per family:

    from mytorch.scipy.stats import norm, multivariate_normal
    norm.logpdf(x, loc=0.0, scale=1.0)
    multivariate_normal.logpdf(x, mean, cov)      # x (..., n), mean (n,), cov (n, n)

Every function promotes its arguments to one float dtype (integers to the default float),
broadcasts them with NumPy's rules, traces (jit, vmap, grad) and takes SciPy's and JAX's
parameter names. Outside the support a log-density is -inf and a density 0, as in JAX.
"""

from mytorch.scipy.stats import bernoulli, beta, gamma, multivariate_normal, norm, poisson, t

__all__ = ["bernoulli", "beta", "gamma", "multivariate_normal", "norm", "poisson", "t"]
