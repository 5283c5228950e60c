"""Distributions built from uniform/normal draws: gamma (and loggamma), beta, dirichlet,
chisquare, t, f, multivariate_normal, orthogonal.

Each follows jax.random's algorithm and key handling (which key is split how often and in
which order), so that a key gives JAX's numbers wherever the underlying arithmetic agrees.
Gamma is Marsaglia and Tsang's rejection sampler (with the `a < 1` boost), one independent
rejection loop per element: a per-element `lax.while_loop` that `vmap` turns into one
vectorised loop, so it jits and vmaps like any other traced code.
"""

from functools import partial

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.lax import linalg as lax_linalg
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.custom_derivatives import custom_jvp
from mytorch.jit import jit
from mytorch.random import _gamma_grad
from mytorch.random._common import float_dtype, quiet_call, raw_key, result_shape
from mytorch.random.counts import binomial, poisson  # exported here with the others
from mytorch.random.keys import canonical_shape, split
from mytorch.random.uniform import normal, uniform
from mytorch.vectorize import vmap

__all__ = [
    "beta",
    "binomial",
    "chisquare",
    "dirichlet",
    "f",
    "gamma",
    "loggamma",
    "multivariate_normal",
    "orthogonal",
    "poisson",
    "t",
]


def _as_param(x, dtype):
    return lax.convert_element_type(mnp.asarray(x), dtype)


# ---- gamma: Marsaglia–Tsang -----------------------------------------------------------------
def _gamma_one(key, alpha, log_space):
    """One Gamma(alpha) draw (0-d `alpha`) from its own key, as jax.random draws it."""
    dtype = alpha.dtype
    one = np.array(1, dtype)
    # alpha < 1: draw Gamma(alpha + 1) and scale by U^(1/alpha)
    boost_mask = alpha >= one
    alpha_orig = alpha
    alpha = mnp.where(boost_mask, alpha, alpha + one)
    d = alpha - np.array(1 / 3, dtype)
    c = np.array(1 / 3, dtype) / mnp.sqrt(d)

    def reject(kxvu):
        _, x, v, u = kxvu
        # accept when u < 1 - 0.0331 x^4, or log u < x^2/2 + d (1 - v + log v)
        squeeze = u >= one - np.array(0.0331, dtype) * (x * x)
        full = mnp.log(u) >= x * np.array(0.5, dtype) + d * ((one - v) + mnp.log(v))
        return squeeze & full

    def propose(kxvu):
        def next_xv(kxv):
            k, sub = split(kxv[0])
            x = normal(sub, (), dtype=dtype)
            return k, x, one + x * c

        k, x_key, u_key = split(kxvu[0], 3)
        zero = mnp.zeros((), dtype)
        _, x, v = lax.while_loop(lambda kxv: kxv[2] <= 0, next_xv, (x_key, zero, -one))
        u = uniform(u_key, (), dtype=dtype)
        return k, x * x, v * v * v, u

    key, subkey = split(key)
    init = (key, mnp.zeros((), dtype), mnp.ones((), dtype), mnp.full((), 2, dtype))
    _, _, v, _ = lax.while_loop(reject, propose, init)
    if log_space:
        u = uniform(subkey, (), dtype=dtype)
        log_u = mnp.log1p(-u)  # -Exponential: log of a uniform on (0, 1]
        log_boost = mnp.where(boost_mask | (log_u == 0), 0, log_u * (one / alpha_orig))
        return (mnp.log(d) + mnp.log(v)) + log_boost
    u = one - uniform(subkey, (), dtype=dtype)
    boost = mnp.where(boost_mask, one, u ** (one / alpha_orig))
    return (d * v) * boost


@partial(jit, static_argnums=(2,))
def _gamma_compiled(keys, a, log_space):
    # compiled once per size, dtype and log_space (as JAX jits its samplers): eager calls
    # then skip re-tracing the rejection loops
    return vmap(partial(_gamma_one, log_space=log_space))(keys, a)


@partial(custom_jvp, nondiff_argnums=(2,))
def _gamma_flat(keys, a, log_space):
    """Gamma(a[i]) drawn from keys[i], for 1-d `a` and raw keys `(len(a), 2)`."""
    if a.size == 0:
        return mnp.zeros(a.shape, a.dtype)
    return quiet_call(_gamma_compiled, keys, a, log_space)


@_gamma_flat.defjvp
def _gamma_flat_jvp(log_space, primals, tangents):
    keys, a = primals
    a_dot = tangents[1]
    out = _gamma_flat(keys, a, log_space)
    # implicit reparameterisation: d sample / d a = -(dP(a, x)/da) / p(x; a)
    sample = mnp.exp(out) if log_space else out
    grad = _gamma_grad.sample_derivative(a, sample)
    if log_space:
        tiny = np.array(np.finfo(a.dtype).tiny, a.dtype)
        grad = grad / mnp.where(sample == 0, tiny, sample)
    return out, a_dot * grad


def _gamma_draws(key, a, log_space, *more):
    """Gamma(a) for every element of `a`, each element from its own split of `key` (as
    jax.random splits it); `more` = (key2, a2, ...) draws further arrays the same way in
    the same vectorised loop, and all results are returned."""
    pairs = [(key, a), *zip(more[::2], more[1::2], strict=True)]
    sizes = [x.size for _, x in pairs]
    if sum(sizes) == 0:
        outs = [mnp.zeros(x.shape, x.dtype) for _, x in pairs]
    else:
        keys = [split(k, n) for (k, _), n in zip(pairs, sizes, strict=True) if n]
        flat_a = [mnp.reshape(x, (-1,)) for _, x in pairs]
        flat = _gamma_flat(mnp.concatenate(keys), mnp.concatenate(flat_a), log_space)
        starts = np.cumsum([0, *sizes])
        outs = [
            mnp.reshape(flat[lo:hi], x.shape)
            for (_, x), lo, hi in zip(pairs, starts[:-1], starts[1:], strict=True)
        ]
    return outs[0] if not more else tuple(outs)


def _gamma(name, key, a, shape, dtype, log_space):
    key = raw_key(name, key)
    dtype = float_dtype(name, dtype)
    a = _as_param(a, dtype)
    shape = result_shape(name, shape, a.shape)
    return _gamma_draws(key, mnp.broadcast_to(a, shape), log_space)


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a) draws with unit scale: density `x^(a-1) e^(-x) / Gamma(a)` on `x > 0`.

    Args:
      key: a PRNG key.
      a: shape parameter(s) `a > 0`, broadcast-compatible with `shape`.
      shape: result shape (default: `a`'s shape); `a` must broadcast to it.
      dtype: float dtype (default float32, float64 with x64).

    Returns:
      An array of `shape` and `dtype`; divide by a rate (or multiply by a scale) for other
      scales. Differentiable in `a` (implicit reparameterisation, as jax.random.gamma).

    Raises:
      ValueError: a non-float dtype, or a `shape` the parameters do not broadcast to.

    >>> import mytorch as mt
    >>> mt.random.gamma(mt.random.key(0), 2.0, (3,)).shape
    (3,)
    """
    return _gamma("gamma", key, a, shape, dtype, log_space=False)


def loggamma(key, a, shape=None, dtype=None):
    """log of Gamma(a) draws, computed in log space: `exp(loggamma(k, a)) ~= gamma(k, a)`,
    but accurate where the draws underflow (`a << 1`).

    Args / Returns / Raises: as `gamma`.
    """
    return _gamma("loggamma", key, a, shape, dtype, log_space=True)


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) draws on [0, 1], as `G_a / (G_a + G_b)` of two independent gammas.

    Args:
      key: a PRNG key (split in two: the first half draws G_a, the second G_b).
      a, b: parameters `> 0`, broadcast-compatible with `shape`.
      shape: result shape (default: the broadcast of `a` and `b`).
      dtype: float dtype (default float32, float64 with x64).

    Returns:
      An array of `shape` and `dtype`.

    >>> import mytorch as mt
    >>> x = mt.random.beta(mt.random.key(0), 2.0, 5.0, (1000,))
    >>> bool(((x >= 0) & (x <= 1)).all())
    True
    """
    key = raw_key("beta", key)
    dtype = float_dtype("beta", dtype)
    a, b = _as_param(a, dtype), _as_param(b, dtype)
    shape = result_shape("beta", shape, a.shape, b.shape)
    key_a, key_b = split(key)
    # both gammas in one vectorised loop
    log_ga, log_gb = _gamma_draws(
        key_a, mnp.broadcast_to(a, shape), True, key_b, mnp.broadcast_to(b, shape)
    )
    # G_a / (G_a + G_b) from the logs, scaled by the larger so neither underflows
    log_max = mnp.maximum(log_ga, log_gb)
    ga, gb = mnp.exp(log_ga - log_max), mnp.exp(log_gb - log_max)
    return ga / (ga + gb)


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) draws: points of the simplex, `x_i >= 0`, `sum_i x_i = 1`.

    Args:
      key: a PRNG key.
      alpha: concentrations `(..., n)`, all `> 0`.
      shape: batch shape of the result (default `alpha.shape[:-1]`), which
        `alpha.shape[:-1]` must broadcast to.
      dtype: float dtype (default float32, float64 with x64).

    Returns:
      An array of shape `shape + (n,)`: the softmax of n log-gamma draws.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> p = mt.random.dirichlet(mt.random.key(0), mnp.array([1.0, 2.0, 3.0]), (4,))
    >>> p.shape, bool(mnp.allclose(p.sum(-1), 1.0))
    ((4, 3), True)
    """
    key = raw_key("dirichlet", key)
    dtype = float_dtype("dirichlet", dtype)
    alpha = _as_param(alpha, dtype)
    if alpha.ndim < 1:
        raise user_error(
            ValueError, f"dirichlet requires alpha.ndim >= 1, got alpha of shape {alpha.shape}"
        )
    batch = result_shape("dirichlet", shape, alpha.shape[:-1])
    log_g = _gamma_draws(key, mnp.broadcast_to(alpha, batch + alpha.shape[-1:]), True)
    log_g = log_g - mnp.max(log_g, axis=-1, keepdims=True)
    g = mnp.exp(log_g)
    return g / mnp.sum(g, axis=-1, keepdims=True)


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square(df) draws: `2 * Gamma(df / 2)` (drawn in log space).

    Args:
      key: a PRNG key. df: degrees of freedom `> 0`, broadcast-compatible with `shape`.
      shape: result shape (default `df`'s shape). dtype: float dtype.

    Returns:
      An array of `shape` and `dtype`.
    """
    key = raw_key("chisquare", key)
    dtype = float_dtype("chisquare", dtype)
    df = _as_param(df, dtype)
    shape = result_shape("chisquare", shape, df.shape)
    half = mnp.broadcast_to(df / np.array(2, dtype), shape)
    return mnp.exp(_gamma_draws(key, half, True)) * np.array(2, dtype)


def t(key, df, shape=None, dtype=None):
    """Student's t(df) draws: `N * sqrt(df / 2 / Gamma(df / 2))`.

    Args:
      key: a PRNG key (split: normal from the first, gamma from the second).
      df: degrees of freedom `> 0`, broadcast-compatible with `shape`.
      shape: result shape (default `df`'s shape). dtype: float dtype.

    Returns:
      An array of `shape` and `dtype`.
    """
    key = raw_key("t", key)
    dtype = float_dtype("t", dtype)
    df = _as_param(df, dtype)
    shape = result_shape("t", shape, df.shape)
    key_n, key_g = split(key)
    n = normal(key_n, shape, dtype)
    half_df = df / np.array(2, dtype)
    g = _gamma_draws(key_g, mnp.broadcast_to(half_df, shape), False)
    return n * mnp.sqrt(half_df / g)


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F(dfnum, dfden) draws: `(X1 / dfnum) / (X2 / dfden)` of two chi-squares.

    Args:
      key: a PRNG key (split: the denominator's chi-square from the first half).
      dfnum, dfden: degrees of freedom `> 0`, broadcast-compatible with `shape`.
      shape: result shape (default: their broadcast). dtype: float dtype.

    Returns:
      An array of `shape` and `dtype`.
    """
    key = raw_key("f", key)
    dtype = float_dtype("f", dtype)
    dfnum, dfden = _as_param(dfnum, dtype), _as_param(dfden, dtype)
    shape = result_shape("f", shape, dfnum.shape, dfden.shape)
    key_den, key_num = split(key)
    two = np.array(2, dtype)
    # the two chi-squares (2 Gamma(df / 2), in log space) in one vectorised loop
    log_num, log_den = _gamma_draws(
        key_num, mnp.broadcast_to(dfnum / two, shape), True,
        key_den, mnp.broadcast_to(dfden / two, shape),
    )  # fmt: skip
    num = mnp.exp(log_num) * two / dfnum
    den = mnp.exp(log_den) * two / dfden
    return num / den


# ---- multivariate normal and orthogonal -------------------------------------------------------
_MVN_METHODS = ("cholesky", "eigh", "svd")


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Draws from N(mean, cov): `mean + factor @ z` with `factor @ factor^T == cov`.

    Args:
      key: a PRNG key.
      mean: `(..., n)` mean vector(s).
      cov: `(..., n, n)` symmetric positive (semi-)definite covariance(s); batch dims
        broadcast with `mean`'s.
      shape: batch shape of the result (default: the broadcast of `mean.shape[:-1]` and
        `cov.shape[:-2]`, which must broadcast to it).
      dtype: float dtype of the draws (default: `mean`'s dtype after promotion with `cov`).
      method: how `cov` is factored: 'cholesky' (default; positive-definite `cov`), 'eigh'
        or 'svd' (`V sqrt(W)`; these accept singular `cov`).

    Returns:
      An array of shape `shape + (n,)`.

    Raises:
      ValueError: an unknown method, `mean.ndim < 1`, `cov` not `(..., n, n)`, or shapes
      that do not broadcast.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> mt.random.multivariate_normal(mt.random.key(0), mnp.zeros(2), mnp.eye(2), (5,)).shape
    (5, 2)
    """
    if method not in _MVN_METHODS:
        raise user_error(
            ValueError,
            f"multivariate_normal: method must be one of {set(_MVN_METHODS)}, got {method!r}",
        )
    key = raw_key("multivariate_normal", key)
    mean, cov = mnp.asarray(mean), mnp.asarray(cov)
    common = dtypes.promote_types(mean.dtype, cov.dtype)
    if not dtypes.is_float(common):
        common = dtypes.default_float()
    mean, cov = mean.astype(common), cov.astype(common)
    dtype = common if dtype is None else float_dtype("multivariate_normal", dtype)
    if mean.ndim < 1:
        raise user_error(
            ValueError, f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}"
        )
    n = mean.shape[-1]
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise user_error(
            ValueError,
            f"multivariate_normal requires cov.shape == (..., n, n) for n={n} (mean's last "
            f"dim), but got cov.shape == {cov.shape}",
        )
    batch = result_shape("multivariate_normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method == "cholesky":
        factor = lax_linalg.cholesky(cov)
    else:
        # for a symmetric cov the SVD's U sqrt(S) and the eigen V sqrt(W) agree (up to
        # column signs and order); |W| keeps round-off negatives of a singular cov at 0
        v, w = lax_linalg.eigh(cov)
        w = mnp.abs(w) if method == "svd" else w
        factor = v * mnp.sqrt(w)[..., None, :]
    z = normal(key, batch + (n,), dtype)
    return mean + mnp.einsum("...ij,...j->...i", factor, z)


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Haar-distributed orthogonal matrices (semi-orthogonal when `m != n`).

    QR of a normal matrix with the signs of R's diagonal moved into Q (Mezzadri 2007),
    as jax.random.orthogonal: equal to JAX's draw for the same key up to float round-off.

    Args:
      key: a PRNG key.
      n: rows. shape: batch dims of the result. dtype: float dtype.
      m: columns (default `n`); if `n <= m` the rows are orthonormal, else the columns.

    Returns:
      An array of shape `shape + (n, m)`.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> q = mt.random.orthogonal(mt.random.key(0), 3)
    >>> bool(mnp.allclose(q.T @ q, mnp.eye(3), atol=1e-5))
    True
    """
    key = raw_key("orthogonal", key)
    dtype = float_dtype("orthogonal", dtype)
    shape = canonical_shape("orthogonal", shape)
    m = n if m is None else m
    for what, v in (("n", n), ("m", m)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise user_error(
                TypeError if not isinstance(v, (int, np.integer)) else ValueError,
                f"orthogonal: {what} must be a non-negative Python int, got {v!r}",
            )
    n, m = int(n), int(m)
    z = normal(key, shape + (max(n, m), min(n, m)), dtype)
    if z.size == 0:
        return mnp.zeros(shape + (n, m), dtype)
    q, r = lax_linalg.qr(z, full_matrices=False)
    d = mnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * mnp.expand_dims(mnp.sign(d), -2)
    return mnp.swapaxes(x, -1, -2) if n < m else x
