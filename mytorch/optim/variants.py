"""More adaptive transformations: AMSGrad, Adamax, RAdam, AdaBelief, NovoGrad, Yogi, Adan,
AdaDelta, Rprop and the exponential moving average (Optax's names and formulas)."""

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
    "ScaleByAdaDeltaState",
    "ScaleByAdanState",
    "ScaleByAmsgradState",
    "ScaleByBeliefState",
    "ScaleByNovogradState",
    "ScaleByRpropState",
    "ema",
    "scale_by_adadelta",
    "scale_by_adamax",
    "scale_by_adan",
    "scale_by_amsgrad",
    "scale_by_belief",
    "scale_by_novograd",
    "scale_by_radam",
    "scale_by_rprop",
    "scale_by_yogi",
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


def scale_by_yogi(b1=0.9, b2=0.999, eps=1e-3, eps_root=0.0, initial_accumulator_value=1e-6):
    """Yogi: Adam whose second moment moves additively,
    `v <- v - (1 - b2) * sign(v - g**2) * g**2`; both moments start at
    `initial_accumulator_value`."""
    def init(params):
        return ScaleByAdamState(_zero_count(),
                                tu.tree_full_like(params, initial_accumulator_value),
                                tu.tree_full_like(params, initial_accumulator_value))

    def update(updates, state, params=None):
        del params
        _check_like("scale_by_yogi", updates, state.mu, "mu")
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        nu = tree_util.tree_map(
            lambda g, v: v - (1 - b2) * mnp.sign(v - _abs_sq(g)) * _abs_sq(g),
            updates, state.nu)
        count_inc = safe_increment(state.count)
        mu_hat = tu.tree_bias_correction(mu, b1, count_inc)
        nu_hat = tu.tree_bias_correction(nu, b2, count_inc)
        out = tree_util.tree_map(lambda m, v: m / (mnp.sqrt(v + eps_root) + eps),
                                 mu_hat, nu_hat)
        return out, ScaleByAdamState(count_inc, mu, nu)

    return GradientTransformation(init, update)


class ScaleByAdaDeltaState(NamedTuple):
    """AdaDelta: moving averages of squared gradients `e_g` and squared updates `e_x`."""
    e_g: Any
    e_x: Any


def scale_by_adadelta(rho=0.9, eps=1e-6):
    """AdaDelta's rescaling `sqrt(e_x + eps) / sqrt(e_g + eps) * g`."""
    def init(params):
        return ScaleByAdaDeltaState(tu.tree_zeros_like(params), tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        _check_like("scale_by_adadelta", updates, state.e_g, "e_g")
        e_g = tu.tree_update_moment(updates, state.e_g, rho, 2)
        out = tree_util.tree_map(
            lambda g, eg, ex: mnp.sqrt(ex + eps) / mnp.sqrt(eg + eps) * g,
            updates, e_g, state.e_x)
        e_x = tu.tree_update_moment(out, state.e_x, rho, 2)
        return out, ScaleByAdaDeltaState(e_g, e_x)

    return GradientTransformation(init, update)


class ScaleByAdanState(NamedTuple):
    """Adan: moments `m` (of g), `v` (of g's change), `n` (of the corrected g squared),
    the previous gradient `g` and the step `t` (int32)."""
    m: Any
    v: Any
    n: Any
    g: Any
    t: Any


def scale_by_adan(b1=0.98, b2=0.92, b3=0.99, eps=1e-8, eps_root=0.0):
    """Adan's rescaling (Nesterov momentum on gradients and their differences)."""
    def init(params):
        z = tu.tree_zeros_like
        return ScaleByAdanState(z(params), z(params), z(params), z(params), _zero_count())

    def update(updates, state, params=None):
        del params
        _check_like("scale_by_adan", updates, state.m, "m")
        g = updates
        diff = tu.tree_where(state.t == 0, tu.tree_zeros_like(g), tu.tree_sub(g, state.g))
        m = tu.tree_update_moment(g, state.m, b1, 1)
        v = tu.tree_update_moment(diff, state.v, b2, 1)
        sq = tu.tree_add_scale(g, 1 - b2, diff)
        n = tu.tree_update_moment_per_elem_norm(sq, state.n, b3, 2)
        t = safe_increment(state.t)
        m_hat = tu.tree_bias_correction(m, b1, t)
        v_hat = tu.tree_bias_correction(v, b2, t)
        n_hat = tu.tree_bias_correction(n, b3, t)
        u = tu.tree_add_scale(m_hat, 1 - b2, v_hat)
        u = tree_util.tree_map(lambda a, nh: a / (mnp.sqrt(nh + eps_root) + eps), u, n_hat)
        return u, ScaleByAdanState(m, v, n, g, t)

    return GradientTransformation(init, update)


class ScaleByRpropState(NamedTuple):
    """Rprop: per-element step sizes and the previous updates."""
    step_sizes: Any
    prev_updates: Any


def scale_by_rprop(learning_rate, eta_minus=0.5, eta_plus=1.2, min_step_size=1e-6,
                   max_step_size=50.0):
    """Rprop: each element's step grows by `eta_plus` while its gradient keeps its sign and
    shrinks by `eta_minus` when it flips (clipped to `[min_step_size, max_step_size]`).
    As Optax 0.2.8, the update returned is the `step * sign(g)` recorded at the previous
    call (0 at the first call and right after a flip)."""
    def init(params):
        return ScaleByRpropState(tu.tree_full_like(params, learning_rate),
                                 tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        _check_like("scale_by_rprop", updates, state.prev_updates, "prev_updates")
        sign = tree_util.tree_map(lambda g, pg: g * pg, updates, state.prev_updates)
        steps = tree_util.tree_map(
            lambda s, st: mnp.where(s == 0, st, mnp.clip(
                st * mnp.where(s > 0, eta_plus, eta_minus), min_step_size, max_step_size)),
            sign, state.step_sizes)
        prev = tree_util.tree_map(
            lambda s, g, st: mnp.where(s < 0, mnp.zeros_like(g), st * mnp.sign(g)),
            sign, updates, steps)
        # as Optax 0.2.8: the step applied now is the one recorded at the previous call
        out = tree_util.tree_map(
            lambda s, pg: mnp.where(s < 0, mnp.zeros_like(pg), pg), sign, state.prev_updates)
        return out, ScaleByRpropState(steps, prev)

    return GradientTransformation(init, update)
