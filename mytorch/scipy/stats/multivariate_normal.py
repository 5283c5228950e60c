"""The multivariate normal distribution `N(mean, cov)` over the last axis of `x`."""

import math

import mytorch.numpy as mnp
from mytorch.core.source_info import user_error
from mytorch.lax import linalg
from mytorch.numpy._promote import promote_dtypes_inexact

__all__ = ["logpdf", "pdf"]

_LOG_TWO_PI = math.log(2 * math.pi)


def _lower_solve(low, y):
    """`z` with `low @ z == y` for `low` `(..., n, n)` lower triangular and `y` `(..., n)`,
    batched over leading dimensions."""
    n = low.shape[-1]
    if low.ndim == 2:
        # one factor for every point: a single solve with the points as columns
        cols = mnp.reshape(y, (-1, n)).T
        z = linalg.triangular_solve(low, cols, left_side=True, lower=True)
        return mnp.reshape(z.T, y.shape)
    batch = mnp.broadcast_shapes(low.shape[:-2], y.shape[:-1])
    low = mnp.broadcast_to(low, batch + (n, n))
    rows = mnp.broadcast_to(y, batch + (n,))[..., None, :]
    # z^T low^T = y^T, one row per batch element
    z = linalg.triangular_solve(low, rows, left_side=False, lower=True, transpose_a=True)
    return z[..., 0, :]


def logpdf(x, mean, cov, allow_singular=None):
    """`log N(x; mean, cov)`, reduced over the last axis of `x`.

    Args:
      x: `(..., n)` points (or scalars when `mean` is a scalar).
      mean: `(..., n)`, broadcast against x.
      cov: `(..., n, n)` symmetric positive-definite (lower triangle read), or a scalar
        for `cov * I`. The Cholesky factor reads its symmetric part `(cov + cov^T) / 2`,
        so derivatives with respect to cov are symmetric.
      allow_singular: unsupported, as in JAX (must be None).

    Returns:
      `(...)`: `-|L^-1 (x - mean)|^2 / 2 - n log(2 pi) / 2 - sum(log diag L)` with
      `L L^T = cov` (a Cholesky factor).
    """
    if allow_singular is not None:
        raise user_error(ValueError, "multivariate_normal.logpdf: allow_singular is not supported")
    x, mean, cov = promote_dtypes_inexact("multivariate_normal", x, mean, cov)
    if not mean.shape:
        return -0.5 * mnp.square(x - mean) / cov - 0.5 * (_LOG_TWO_PI + mnp.log(cov))
    n = mean.shape[-1]
    y = x - mean
    if not cov.shape:
        return (-0.5 * mnp.einsum("...i,...i->...", y, y) / cov
                - n / 2 * (_LOG_TWO_PI + mnp.log(cov)))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise user_error(
            ValueError,
            f"multivariate_normal.logpdf: cov must be (..., {n}, {n}) for mean of shape "
            f"{mean.shape}, got {cov.shape}")
    low = linalg.cholesky(cov)
    z = _lower_solve(low, y)
    return (-0.5 * mnp.einsum("...i,...i->...", z, z) - n / 2 * _LOG_TWO_PI
            - mnp.sum(mnp.log(mnp.diagonal(low, axis1=-2, axis2=-1)), axis=-1))


def pdf(x, mean, cov):
    """The density `exp(logpdf(x, mean, cov))`."""
    return mnp.exp(logpdf(x, mean, cov))
