"""Samplers that transform one or two uniform or normal draws, with JAX 0.10's formulas:
laplace, logistic, cauchy, rademacher, maxwell, double_sided_maxwell, rayleigh, pareto,
weibull_min, wald, geometric, triangular, lognormal; and, from gamma draws,
generalized_normal and ball.
"""

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.random.discrete import _split2
from mytorch.random.keys import canonical_shape, check_key
from mytorch.random.uniform import (
    _normal,
    _uniform,
    as_dtype,
    broadcast_params,
    check_param_shapes,
    float_dtype,
)

__all__ = [
    "cauchy",
    "double_sided_maxwell",
    "geometric",
    "laplace",
    "logistic",
    "lognormal",
    "maxwell",
    "pareto",
    "rademacher",
    "rayleigh",
    "triangular",
    "wald",
    "weibull_min",
]


def _setup(name, key, shape, dtype, *params):
    """(key words, shape, dtype): `shape=None` means the parameters' broadcast shape."""
    data, _ = check_key(name, key)
    dtype = float_dtype(name, dtype)
    if shape is None:
        shape = broadcast_params(*params) if params else ()
    else:
        shape = check_param_shapes(name, canonical_shape(name, shape), *params)
    return data, shape, dtype


def laplace(key, shape=(), dtype=None):
    """Standard Laplace floats (density exp(-|x|)/2), as `jax.random.laplace`."""
    data, shape, dtype = _setup("laplace", key, shape, dtype)
    u = _uniform(data, shape, dtype, -1.0 + float(dtypes.finfo(dtype).epsneg), 1.0)
    return mnp.sign(u) * mnp.log1p(-mnp.abs(u))


def logistic(key, shape=(), dtype=None):
    """Standard logistic floats `log(u) - log1p(-u)`, as `jax.random.logistic`."""
    data, shape, dtype = _setup("logistic", key, shape, dtype)
    u = _uniform(data, shape, dtype, float(dtypes.finfo(dtype).tiny), 1.0)
    return mnp.log(u) - mnp.log1p(-u)


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy floats `tan(pi (u - 1/2))`, as `jax.random.cauchy`."""
    data, shape, dtype = _setup("cauchy", key, shape, dtype)
    u = _uniform(data, shape, dtype, float(dtypes.finfo(dtype).eps), 1.0)
    return mnp.tan(lax.full((), np.pi, dtype) * (u - 0.5))


def rademacher(key, shape=(), dtype=None):
    """-1 or +1 with equal probability (default dtype int32), as `jax.random.rademacher`."""
    data, _ = check_key("rademacher", key)
    shape = canonical_shape("rademacher", shape)
    dtype = dtypes.canonicalize(int if dtype is None else dtype, explicit=dtype is not None)
    draws = _uniform(data, shape, dtypes.canonicalize(float), 0.0, 1.0) < 0.5
    return (2 * draws.astype(dtype) - 1).astype(dtype)


def maxwell(key, shape=(), dtype=None):
    """One-sided Maxwell floats: the norm of three standard normals, as `jax.random.maxwell`.
    """
    data, shape, dtype = _setup("maxwell", key, shape, dtype)
    z = _normal(data, (*shape, 3), dtype)
    return mnp.sqrt((z * z).sum(axis=-1))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell floats `loc + scale * sign * maxwell`; the result shape is
    `shape + broadcast(loc, scale)` (as `jax.random.double_sided_maxwell`)."""
    data, _ = check_key("double_sided_maxwell", key)
    dtype = float_dtype("double_sided_maxwell", dtype)
    params = broadcast_params(loc, scale)
    shape = canonical_shape("double_sided_maxwell", shape)
    shape = (*shape, *params) if shape else params
    k1, k2 = _split2(data)
    z = _normal(k1, (*shape, 3), dtype)
    magnitude = mnp.sqrt((z * z).sum(axis=-1))
    sign = (2 * (_uniform(k2, shape, dtypes.canonicalize(float), 0.0, 1.0) < 0.5)
            .astype(dtype) - 1).astype(dtype)
    return sign * magnitude * as_dtype(scale, dtype) + as_dtype(loc, dtype)


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh floats `scale * sqrt(-2 log u)`, as `jax.random.rayleigh`."""
    data, shape, dtype = _setup("rayleigh", key, shape, dtype, scale)
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    return mnp.broadcast_to(as_dtype(scale, dtype), shape) * mnp.sqrt(mnp.log(u) * -2.0)


def pareto(key, b, shape=None, dtype=None):
    """Pareto floats `exp(e / b)` of a standard exponential `e`, as `jax.random.pareto`."""
    data, shape, dtype = _setup("pareto", key, shape, dtype, b)
    e = -mnp.log1p(-_uniform(data, shape, dtype, 0.0, 1.0))
    return mnp.exp(e / as_dtype(b, dtype))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull floats `scale * (-log1p(-u)) ** (1 / concentration)`, as
    `jax.random.weibull_min`."""
    data, shape, dtype = _setup("weibull_min", key, shape, dtype, scale, concentration)
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    return mnp.power(-mnp.log1p(-u), 1.0 / as_dtype(concentration, dtype)) * as_dtype(
        scale, dtype)


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian, unit shape) floats, as `jax.random.wald`."""
    data, shape, dtype = _setup("wald", key, shape, dtype, mean)
    k1, k2 = _split2(data)
    mean = mnp.broadcast_to(as_dtype(mean, dtype), shape)
    v = _normal(k1, shape, dtype)
    z = _uniform(k2, shape, dtype, 0.0, 1.0)
    y = v * v
    mean_sq = mean * mean
    sqrt_term = mnp.sqrt(4 * mean * y + mean_sq * (y * y))
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return mnp.where(z <= mean / (mean + x), x, mean_sq / x)


def geometric(key, p, shape=None, dtype=None):
    """Trials up to the first success, each succeeding with probability `p` (ints, default
    int32), as `jax.random.geometric`."""
    data, _ = check_key("geometric", key)
    p = mnp.asarray(p)
    if not dtypes.is_float(p.dtype):
        p = p.astype(float)
    if shape is None:
        shape = tuple(p.shape)
    else:
        shape = check_param_shapes("geometric", canonical_shape("geometric", shape), p)
    dtype = dtypes.canonicalize(int if dtype is None else dtype, explicit=dtype is not None)
    if not dtypes.is_int(dtype):
        raise user_error(TypeError, f"geometric: dtype must be an integer dtype, got {dtype}")
    u = _uniform(data, shape, p.dtype, 0.0, 1.0)
    u = mnp.where(u == 0, lax.full((), 1, p.dtype), u)
    g = mnp.floor(mnp.log(u) / mnp.broadcast_to(mnp.log1p(-p), shape)) + 1
    return g.astype(dtype)


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular floats on [left, right] peaking at `mode`, as `jax.random.triangular`."""
    data, shape, dtype = _setup("triangular", key, shape, dtype, left, mode, right)
    left, mode, right = (mnp.broadcast_to(as_dtype(v, dtype), shape)
                         for v in (left, mode, right))
    fc = (mode - left) / (right - left)
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    out1 = left + mnp.sqrt(u * (right - left) * (mode - left))
    out2 = right - mnp.sqrt((1 - u) * (right - left) * (right - mode))
    return mnp.where(u < fc, out1, out2)


def lognormal(key, sigma=1.0, shape=None, dtype=None):
    """Log-normal floats `exp(sigma * z)`, as `jax.random.lognormal`."""
    data, shape, dtype = _setup("lognormal", key, shape, dtype, sigma)
    return mnp.exp(_normal(data, shape, dtype) * as_dtype(sigma, dtype))


def _rademacher_float(data, shape, dtype):
    draws = _uniform(data, shape, dtypes.canonicalize(float), 0.0, 1.0) < 0.5
    return (2 * draws.astype(dtype) - 1).astype(dtype)


def _generalized_normal(data, p, shape, dtype):
    from mytorch.random.continuous import gamma  # continuous.py imports this package

    k1, k2 = _split2(data)
    g = gamma(k1, 1 / p, shape, dtype)
    return _rademacher_float(k2, shape, dtype) * g ** (1 / p)


def generalized_normal(key, p, shape=(), dtype=None):
    """Generalized normal floats (density proportional to exp(-|x|**p)): a random sign
    times `gamma(1/p) ** (1/p)`, as `jax.random.generalized_normal`.

    Args:
      key: a single key. p: the (positive) exponent. shape: the result shape.
      dtype: a float dtype (default float32).
    """
    data, shape, dtype = _setup("generalized_normal", key, shape, dtype)
    return _generalized_normal(data, p, shape, dtype)


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the unit `p`-norm ball of dimension `d`: shape `(*shape, d)`, as
    `jax.random.ball` (Barthe et al.'s generalized-normal construction).

    Args:
      key: a single key. d: the dimension (a static int). p: the norm's exponent.
      shape: the batch shape. dtype: a float dtype (default float32).
    """
    data, shape, dtype = _setup("ball", key, shape, dtype)
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
        raise user_error(TypeError, f"ball: d must be a non-negative Python int, got {d!r}")
    k1, k2 = _split2(data)
    g = _generalized_normal(k1, p, (*shape, int(d)), dtype)
    e = -mnp.log1p(-_uniform(k2, shape, dtype, 0.0, 1.0))
    return g / (((mnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]
