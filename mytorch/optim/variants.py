"""More Adam-family and averaging transformations: AMSGrad, Adamax, RAdam, AdaBelief,
NovoGrad and the exponential moving average (Optax's names and formulas)."""

from __future__ import annotations

from typing import Any, NamedTuple

import mytorch.numpy as mnp
from mytorch import tree_util
from mytorch.optim import tree_utils as tu
from mytorch.optim.base import GradientTransformation, _abs_sq, safe_increment
from mytorch.optim.transforms import (
    ScaleByAdamState,
    _check_like,
    _dtype,
    _need_params,
    _nesterov_mu_hat,
    _zero_count,
)

__all__ = [
    "EmaState",
    "ScaleByAmsgradState",
    "ScaleByBeliefState",
    "ScaleByNovogradState",
    "ema",
    "scale_by_adamax",
    "scale_by_amsgrad",
    "scale_by_belief",
    "scale_by_novograd",
    "scale_by_radam",
]


class ScaleByAmsgradState(NamedTuple):
    """AMSGrad: Adam's state plus the running maximum `nu_max` of the second moment."""
    count: Any
    mu: Any
    nu: Any
    nu_max: Any


def scale_by_amsgrad(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None):
    """AMSGrad: Adam with the running maximum of the bias-corrected second moment."""
    mu_dtype = _dtype(mu_dtype)

    def init(params):
        return ScaleByAmsgradState(_zero_count(), tu.tree_zeros_like(params, dtype=mu_dtype),
                                   tu.tree_zeros_like(params), tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        _check_like("scale_by_amsgrad", updates, state.mu, "mu")
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        nu = tu.tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = safe_increment(state.count)
        mu_hat = tu.tree_bias_correction(mu, b1, count_inc)
        nu_max = tree_util.tree_map(mnp.maximum, state.nu_max,
                                    tu.tree_bias_correction(nu, b2, count_inc))
        updates = tree_util.tree_map(lambda m, v: m / (mnp.sqrt(v + eps_root) + eps),
                                     mu_hat, nu_max)
        return updates, ScaleByAmsgradState(count_inc, tu.tree_cast(mu, mu_dtype), nu, nu_max)

    return GradientTransformation(init, update)


def scale_by_adamax(b1=0.9, b2=0.999, eps=1e-8):
    """Adamax: `m_hat / u` with `u <- max(|g| + eps, b2 * u)` (the infinity norm)."""
    def init(params):
        return ScaleByAdamState(_zero_count(), tu.tree_zeros_like(params),
                                tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        _check_like("scale_by_adamax", updates, state.mu, "mu")
        count_inc = safe_increment(state.count)
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        nu = tu.tree_update_infinity_moment(updates, state.nu, b2, eps)
        mu_hat = tu.tree_bias_correction(mu, b1, count_inc)
        return tree_util.tree_map(lambda m, v: m / v, mu_hat, nu), \
            ScaleByAdamState(count_inc, mu, nu)

    return GradientTransformation(init, update)


def scale_by_radam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, threshold=5.0, *,
                   nesterov=False):
    """Rectified Adam: Adam's step times the variance rectification `r_t` once the
    approximated SMA length `rho_t` reaches `threshold`; before that, `m_hat` alone."""
    rho_inf = 2.0 / (1.0 - b2) - 1.0

    def init(params):
        return ScaleByAdamState(_zero_count(), tu.tree_zeros_like(params),
                                tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        _check_like("scale_by_radam", updates, state.mu, "mu")
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        nu = tu.tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = safe_increment(state.count)
        b2t = b2 ** count_inc
        rho = rho_inf - 2 * count_inc * b2t / (1 - b2t)
        if nesterov:
            mu_hat = _nesterov_mu_hat(mu, updates, b1, count_inc)
        else:
            mu_hat = tu.tree_bias_correction(mu, b1, count_inc)
        nu_hat = tu.tree_bias_correction(nu, b2, count_inc)
        r = mnp.sqrt((rho - 4.0) * (rho - 2.0) * rho_inf
                     / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho))
        out = tree_util.tree_map(
            lambda m, v: mnp.where(
                rho >= threshold, r.astype(m.dtype) * m / (mnp.sqrt(v + eps_root) + eps), m),
            mu_hat, nu_hat)
        return out, ScaleByAdamState(count_inc, mu, nu)

    return GradientTransformation(init, update)

class ScaleByBeliefState(NamedTuple):
    """AdaBelief: `count` (int32), `mu` (mean of g) and `nu` (variance of g around mu)."""
    count: Any
    mu: Any
    nu: Any


def scale_by_belief(b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, *, nesterov=False):
    """AdaBelief's rescaling: Adam with `nu` the moving average of `(g - mu)**2 + eps_root`."""
    def init(params):
        return ScaleByBeliefState(_zero_count(), tu.tree_zeros_like(params),
                                  tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        _check_like("scale_by_belief", updates, state.mu, "mu")
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        err = tu.tree_sub(updates, mu)
        nu = tu.tree_update_moment_per_elem_norm(err, state.nu, b2, 2)
        nu = tree_util.tree_map(lambda v: v + eps_root, nu)
        count_inc = safe_increment(state.count)
        if nesterov:
            mu_hat = _nesterov_mu_hat(mu, updates, b1, count_inc)
        else:
            mu_hat = tu.tree_bias_correction(mu, b1, count_inc)
        nu_hat = tu.tree_bias_correction(nu, b2, count_inc)
        out = tree_util.tree_map(lambda m, v: m / (mnp.sqrt(v) + eps), mu_hat, nu_hat)
        return out, ScaleByBeliefState(count=count_inc, mu=mu, nu=nu)

    return GradientTransformation(init, update)

class EmaState(NamedTuple):
    """`ema`: the step `count` (int32) and the moving average `ema`."""
    count: Any
    ema: Any


def ema(decay, debias=True, accumulator_dtype=None):
    """Exponential moving average of the updates, `e <- (1 - decay) g + decay e`; the
    update is `e` (bias-corrected with `debias`)."""
    acc_dtype = _dtype(accumulator_dtype)

    def init(params):
        return EmaState(_zero_count(), tu.tree_zeros_like(params, dtype=acc_dtype))

    def update(updates, state, params=None):
        del params
        _check_like("ema", updates, state.ema, "ema")
        updates = new = tu.tree_update_moment(updates, state.ema, decay, 1)
        count_inc = safe_increment(state.count)
        if debias:
            updates = tu.tree_bias_correction(new, decay, count_inc)
        return updates, EmaState(count_inc, tu.tree_cast(new, acc_dtype))

    return GradientTransformation(init, update)


class ScaleByNovogradState(NamedTuple):
    """NovoGrad: `count` (int32), the momentum `mu` and per-leaf 0-d second moments `nu`."""
    count: Any
    mu: Any
    nu: Any


def scale_by_novograd(b1=0.9, b2=0.25, eps=1e-8, eps_root=0.0, weight_decay=0.0,
                      mu_dtype=None):
    """NovoGrad's layer-wise rescaling: `nu` tracks each leaf's squared gradient norm
    (`b2`), `mu <- b1 mu + g / (sqrt(nu + eps_root) + eps) + weight_decay p` (the first
    step initialises both directly). Needs params."""
    mu_dtype = _dtype(mu_dtype)

    def init(params):
        return ScaleByNovogradState(
            _zero_count(), tu.tree_zeros_like(params, dtype=mu_dtype),
            tree_util.tree_map(lambda p: mnp.asarray(0.0, dtype=mnp.asarray(p).dtype), params))

    def update(updates, state, params=None):
        _need_params("scale_by_novograd", params)
        count_inc = safe_increment(state.count)
        first = count_inc == 1
        sq = tree_util.tree_map(lambda g: mnp.sum(_abs_sq(g)), updates)
        nu = tree_util.tree_map(
            lambda s, n: mnp.where(first, s.astype(n.dtype), (1 - b2) * s + b2 * n),
            sq, state.nu)
        step = tree_util.tree_map(
            lambda g, p, n: g / (mnp.sqrt(n + eps_root) + eps) + weight_decay * p,
            updates, params, nu)
        mu = tree_util.tree_map(lambda m, s: mnp.where(first, s, b1 * m + s), state.mu, step)
        mu = tu.tree_cast(mu, mu_dtype)
        return mu, ScaleByNovogradState(count_inc, mu, nu)

    return GradientTransformation(init, update)
