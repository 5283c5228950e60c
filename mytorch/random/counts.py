"""Count distributions drawn by whole-array loops: poisson and binomial.

Both follow jax.random's algorithms and key use exactly: each loop iteration splits one
key and draws uniforms of the whole result shape, and runs until every element is done
(so an element's draw depends on the result shape, as in JAX). Small means use a direct
method (Knuth's product of uniforms; the sum of geometric waiting times), large ones a
transformed rejection (Hörmann's PTRS; Kachitvichyanukul and Schmeiser's BTRS), chosen
per element by `where`, with both branches drawn from the same key.
"""

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core import dtypes
from mytorch.random._common import float_dtype, int_dtype, raw_key, result_shape
from mytorch.random.keys import split
from mytorch.random.uniform import uniform

__all__ = ["binomial", "poisson"]


# ---- poisson ------------------------------------------------------------------------------------
def _poisson_knuth(key, lam, shape, dtype, max_iters):
    # count uniforms until their product falls below e^-lam

    def body(carry):
        i, k, key, log_prod = carry
        key, sub = split(key)
        k = mnp.where(log_prod > -lam, k + 1, k)
        u = uniform(sub, shape, np.float32)
        return i + 1, k, key, log_prod + mnp.log(u)

    def cond(carry):
        i, _, _, log_prod = carry
        return mnp.any(log_prod > -lam) & (i < max_iters)

    init = (mnp.zeros((), np.int32), mnp.zeros(shape, dtype), key, mnp.zeros(shape, np.float32))
    k = lax.while_loop(cond, body, init)[1]
    return (k - 1).astype(dtype)


def _poisson_rejection(key, lam, shape, dtype, max_iters):
    # Hörmann (1993), transformed rejection with squeeze
    log_lam = mnp.log(lam)
    b = 0.931 + 2.53 * mnp.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry):
        i, k_out, accepted, key = carry
        key, sub0, sub1 = split(key, 3)
        u = uniform(sub0, shape, lam.dtype) - 0.5
        v = uniform(sub1, shape, lam.dtype)
        us = 0.5 - mnp.abs(u)
        k = mnp.floor((2 * a / us + b) * u + lam + 0.43)
        s = mnp.log(v * inv_alpha / (a / (us * us) + b))
        t = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (us >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((us < 0.013) & (v > us))
        accept = accept1 | (~reject & (s <= t))
        return i + 1, mnp.where(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, _, accepted, _ = carry
        return mnp.any(~accepted) & (i < max_iters)

    init = (mnp.zeros((), np.int32), mnp.full(shape, -1, lam.dtype), mnp.zeros(shape, bool), key)
    return lax.while_loop(cond, body, init)[1].astype(dtype)


def poisson(key, lam, shape=None, dtype=None):
    """Poisson(lam) counts: `P(k) = lam^k e^-lam / k!`.

    Args:
      key: a PRNG key.
      lam: rate(s) `>= 0` (the mean), broadcast-compatible with `shape`; computed in float32.
      shape: result shape (default `lam`'s shape); `lam` must broadcast to it.
      dtype: integer dtype (default int32, int64 with x64).

    Returns:
      An integer array of `shape`: Knuth's method where `lam < 10`, transformed rejection
      otherwise (as jax.random.poisson); 0 where `lam == 0`, -1 where `lam` is NaN.

    Raises:
      ValueError: a non-integer dtype, or a shape `lam` does not broadcast to.

    >>> import mytorch as mt
    >>> k = mt.random.poisson(mt.random.key(0), 3.0, (4,))
    >>> k.shape, k.dtype
    ((4,), dtype('int32'))
    """
    key = raw_key("poisson", key)
    dtype = int_dtype("poisson", dtype)
    lam = mnp.asarray(lam)
    shape = result_shape("poisson", shape, lam.shape)
    lam = lax.convert_element_type(mnp.broadcast_to(lam, shape), np.float32)
    use_knuth = mnp.isnan(lam) | (lam < 10)
    lam_knuth = mnp.where(use_knuth, lam, 0.0)
    # rejection's acceptance rate is highest for large lam: park Knuth's elements there
    lam_rejection = mnp.where(use_knuth, 1e5, lam)
    max_iters = np.iinfo(np.int32).max  # a bound never reached (JAX's is the dtype's max)
    out = mnp.where(
        use_knuth,
        _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
        _poisson_rejection(key, lam_rejection, shape, dtype, max_iters),
    )
    return mnp.where(lam == 0, 0, out).astype(dtype)


# ---- binomial -----------------------------------------------------------------------------------
_STIRLING_TAIL = np.array([  # log k! - (Stirling's formula), k = 0..9
    0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
    0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
    0.00925546218271273, 0.00833056343336287,
])  # fmt: skip


def _stirling_tail(k):
    small = k <= 9
    k = mnp.clip(k, 0, 9)  # the series below is only taken where k > 9
    kp1sq = (k + 1) * (k + 1)
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    table = mnp.asarray(_STIRLING_TAIL.astype(k.dtype))[mnp.floor(k).astype(np.int32)]
    return mnp.where(small, table, series)


def _binomial_inversion(key, count, prob, shape, max_iters):
    # the number of geometric(prob) waiting times that fit in `count` trials
    log1m_prob = mnp.log1p(-prob)

    def body(carry):
        i, num_geom, geom_sum, key = carry
        sub, key = split(key)
        num_geom = mnp.where(geom_sum <= count, num_geom + 1, num_geom)
        u = uniform(sub, shape, prob.dtype)
        geom_sum = geom_sum + mnp.ceil(mnp.log(u) / log1m_prob)
        return i + 1, num_geom, geom_sum, key

    def cond(carry):
        i, _, geom_sum, _ = carry
        return mnp.any(geom_sum <= count) & (i < max_iters)

    zeros = mnp.zeros(shape, prob.dtype)
    k = lax.while_loop(cond, body, (mnp.zeros((), np.int32), zeros, zeros, key))[1]
    return k - 1


def _btrs(key, count, prob, shape, max_iters):
    # Kachitvichyanukul and Schmeiser's BTRS (1993): transformed rejection with squeeze
    stddev = mnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    ratio = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = mnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, key = carry
        key, sub0, sub1 = split(key, 3)
        u = uniform(sub0, shape, prob.dtype) - 0.5
        v = uniform(sub1, shape, prob.dtype)
        us = 0.5 - mnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = mnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        log_v = mnp.log(v * alpha / (a / (us * us) + b))
        bound = (
            (m + 0.5) * mnp.log((m + 1) / (ratio * (count - m + 1)))
            + (count + 1) * mnp.log((count - m + 1) / (count - k + 1))
            + (k + 0.5) * mnp.log(ratio * (count - k + 1) / (k + 1))
            + _stirling_tail(m)
            + _stirling_tail(count - m)
            - _stirling_tail(k)
            - _stirling_tail(count - k)
        )
        accept = accept1 | (~reject & (log_v <= bound))
        return i + 1, mnp.where(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, _, accepted, _ = carry
        return mnp.any(~accepted) & (i < max_iters)

    init = (mnp.zeros((), np.int32), mnp.full(shape, -1, prob.dtype), mnp.zeros(shape, bool), key)
    return lax.while_loop(cond, body, init)[1]


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts (as floats): successes in `n` trials of probability `p`.

    Args:
      key: a PRNG key.
      n: trial counts (floored; NaN or negative gives NaN, +inf gives +inf).
      p: success probabilities in [0, 1] (NaN or negative gives NaN).
      shape: result shape (default: the broadcast of `n` and `p`).
      dtype: float dtype of the result (default float32, float64 with x64).

    Returns:
      A float array of `shape`: inversion (geometric waiting times) where `n q <= 10`,
      BTRS otherwise, with `q = min(p, 1 - p)` (as jax.random.binomial).

    >>> import mytorch as mt
    >>> x = mt.random.binomial(mt.random.key(0), 10, 0.3, (1000,))
    >>> bool(((x >= 0) & (x <= 10)).all())
    True
    """
    key = raw_key("binomial", key)
    dtype = float_dtype("binomial", dtype)
    n, p = mnp.asarray(n), mnp.asarray(p)
    shape = result_shape("binomial", shape, n.shape, p.shape)
    if not dtypes.is_float(p.dtype):
        p = p.astype(dtypes.default_float())
    count = mnp.broadcast_to(n.astype(p.dtype), shape)
    prob = mnp.broadcast_to(p, shape)
    p_lt_half = prob < 0.5
    q = mnp.where(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = mnp.isnan(count) | (count < 0.0)
    count_inf = mnp.isinf(count)
    q_is_nan, q_neg = mnp.isnan(q), q < 0.0
    q = mnp.where(q_is_nan | q_neg, 0.01, q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = mnp.floor(count)
    count_inv = mnp.where(use_inversion, count, 0.0)
    count_btrs = mnp.where(use_inversion, 1e4, count)
    q_btrs = mnp.where(use_inversion, 0.5, q)
    max_iters = np.iinfo(np.int32).max
    samples = mnp.where(
        use_inversion,
        _binomial_inversion(key, count_inv, q, shape, max_iters),
        _btrs(key, count_btrs, q_btrs, shape, max_iters),
    ).astype(dtype)
    invalid = q_neg | q_is_nan | count_nan_or_neg
    samples = mnp.where(invalid, np.nan, samples)
    samples = mnp.where(count_inf & ~invalid, np.inf, samples)
    flip = ~(p_lt_half | count_nan_or_neg | q_is_nan | count_inf)
    return mnp.where(flip, count.astype(dtype) - samples, samples).astype(dtype)
