"""`mytorch.scipy`: SciPy-style functions over mytorch arrays (JAX's `jax.scipy`).

    from mytorch.scipy import fft, linalg, optimize, special, stats
    fft.dct(x, type=2, norm="ortho")
    linalg.solve_triangular(a, b, lower=True)
    special.logsumexp(x, axis=-1)
    stats.norm.logpdf(x, loc=0.0, scale=1.0)
    optimize.minimize(f, x0, method="BFGS")
"""

from mytorch.scipy import fft, linalg, optimize, special, stats

__all__ = ["fft", "linalg", "optimize", "special", "stats"]
