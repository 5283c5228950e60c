"""Gradient transformations that rescale updates (Optax's `scale_by_*`, `trace`, ...).

Each function returns a GradientTransformation; its state is a NamedTuple of arrays (step
counts are int32 0-d arrays), so states pass through `jit`, `tree_map` and checkpoints.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import mytorch.numpy as mnp
from mytorch import lax, tree_util
from mytorch.core.source_info import user_error
from mytorch.optim import tree_utils as tu
from mytorch.optim.base import (
    NO_PARAMS_MSG,
    EmptyState,
    GradientTransformation,
    _abs_sq,
    identity,
    init_empty_state,
    safe_increment,
    safe_norm,
    safe_root_mean_squares,
    tree_map_checked,
)

__all__ = [
    "ScaleByAdamState",
    "ScaleByLionState",
    "ScaleByRStdDevState",
    "ScaleByRStdDevWithCountState",
    "ScaleByRmsState",
    "ScaleByRmsWithCountState",
    "ScaleByRssState",
    "ScaleByScheduleState",
    "TraceState",
    "WeightDecaySchedule",
    "add_decayed_weights",
    "centralize",
    "scale",
    "scale_by_adam",
    "scale_by_learning_rate",
    "scale_by_lion",
    "scale_by_param_block_norm",
    "scale_by_param_block_rms",
    "scale_by_rms",
    "scale_by_rss",
    "scale_by_schedule",
    "scale_by_sign",
    "scale_by_stddev",
    "scale_by_trust_ratio",
    "trace",
]


def _zero_count():
    return mnp.zeros([], mnp.int32)


def _dtype(dtype):
    return None if dtype is None else mnp.dtype(dtype)


def _check_like(name, updates, moments, field):
    """Raise, naming `name` and the first differing path, when `updates` does not have the
    structure of the state's `field` (a state made by `init` of other params)."""
    if tree_util.tree_structure(updates) != tree_util.tree_structure(moments):
        tree_map_checked(name, ("updates", f"state.{field}"), lambda *a: None, updates,
                         moments, is_leaf=lambda x: x is None)


def _need_params(name, params):
    if params is None:
        raise user_error(ValueError, NO_PARAMS_MSG.format(name=name))


class TraceState(NamedTuple):
    """`trace`: the momentum buffer, one leaf per parameter."""
    trace: Any


def trace(decay, nesterov=False, accumulator_dtype=None):
    """Momentum: `t <- g + decay * t`; the update is `t` (or `g + decay * t` with
    `nesterov`). The buffer is kept in `accumulator_dtype` (default: the params' dtypes).

    Example:
        >>> tx = trace(0.9); s = tx.init(mnp.zeros(2)); u, s = tx.update(mnp.ones(2), s)
    """
    acc_dtype = _dtype(accumulator_dtype)

    def init(params):
        return TraceState(trace=tu.tree_zeros_like(params, dtype=acc_dtype))

    def update(updates, state, params=None):
        del params
        step = lambda g, t: g + decay * t
        new_trace = tree_map_checked("trace", ("updates", "state.trace"),
                                     lambda g, t: None if g is None else step(g, t),
                                     updates, state.trace, is_leaf=lambda g: g is None)
        updates = tree_util.tree_map(step, updates, new_trace) if nesterov else new_trace
        return updates, TraceState(trace=tu.tree_cast(new_trace, acc_dtype))

    return GradientTransformation(init, update)


def scale(step_size):
    """Multiplies every update by `step_size` (a number or 0-d array); no state."""
    def update(updates, state, params=None):
        del params
        return tree_util.tree_map(lambda g: step_size * g, updates), state

    return GradientTransformation(init_empty_state, update)


class ScaleByScheduleState(NamedTuple):
    """`scale_by_schedule`: the number of updates so far (int32)."""
    count: Any


def scale_by_schedule(step_size_fn):
    """Multiplies updates by `step_size_fn(count)` (cast to each update's dtype), with
    `count` = 0, 1, ... the number of earlier updates."""
    if not callable(step_size_fn):
        raise user_error(TypeError, "scale_by_schedule: step_size_fn must be a callable "
                         f"count -> step size, got {type(step_size_fn).__name__}")

    def init(params):
        del params
        return ScaleByScheduleState(count=_zero_count())

    def update(updates, state, params=None):
        del params
        step = step_size_fn(state.count)
        updates = tree_util.tree_map(lambda g: mnp.asarray(step, dtype=g.dtype) * g, updates)
        return updates, ScaleByScheduleState(count=safe_increment(state.count))

    return GradientTransformation(init, update)


def scale_by_learning_rate(learning_rate=None, *, flip_sign=True):
    """Scales by `-learning_rate` (by `+learning_rate` without `flip_sign`); a callable
    learning rate is a schedule of the step count. `None` gives `identity()`."""
    if learning_rate is None:
        return identity()
    m = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: m * learning_rate(count))
    if isinstance(learning_rate, (str, bytes)) or not _is_scalar(learning_rate):
        raise user_error(TypeError, "scale_by_learning_rate: learning_rate must be a number, "
                         f"a 0-d array or a schedule (count -> value), got {learning_rate!r}")
    return scale(m * learning_rate)


def _is_scalar(x):
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return True
    return getattr(x, "shape", None) == () and not isinstance(x, str)


class ScaleByAdamState(NamedTuple):
    """Adam-style state: step `count` (int32), first moment `mu`, second moment `nu`."""
    count: Any
    mu: Any
    nu: Any


def _nesterov_mu_hat(mu, updates, b1, count_inc):
    return tree_util.tree_map(
        lambda m, g: b1 * m + (1 - b1) * g,
        tu.tree_bias_correction(mu, b1, safe_increment(count_inc)),
        tu.tree_bias_correction(updates, b1, count_inc))


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *,
                  nesterov=False):
    """Adam's rescaling: `m_hat / (sqrt(v_hat + eps_root) + eps)` with bias-corrected
    moving averages `m` (of g, kept in `mu_dtype`) and `v` (of g**2); `nesterov` gives
    NAdam's look-ahead first moment."""
    mu_dtype = _dtype(mu_dtype)

    def init(params):
        return ScaleByAdamState(count=_zero_count(),
                                mu=tu.tree_zeros_like(params, dtype=mu_dtype),
                                nu=tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        _check_like("scale_by_adam", updates, state.mu, "mu")
        mu = tu.tree_update_moment(updates, state.mu, b1, 1)
        nu = tu.tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = safe_increment(state.count)
        if nesterov:
            mu_hat = _nesterov_mu_hat(mu, updates, b1, count_inc)
        else:
            mu_hat = tu.tree_bias_correction(mu, b1, count_inc)
        nu_hat = tu.tree_bias_correction(nu, b2, count_inc)
        updates = tree_util.tree_map(lambda m, v: m / (mnp.sqrt(v + eps_root) + eps),
                                     mu_hat, nu_hat)
        mu = tu.tree_cast(mu, mu_dtype)
        nu = tu.tree_cast_like(nu, state.nu)
        return updates, ScaleByAdamState(count=count_inc, mu=mu, nu=nu)

    return GradientTransformation(init, update)


class ScaleByRmsState(NamedTuple):
    """RMSProp: the moving average `nu` of the squared gradients."""
    nu: Any


class ScaleByRmsWithCountState(NamedTuple):
    """RMSProp with bias correction: step `count` (int32) and `nu`."""
    count: Any
    nu: Any


def _rms_scaling(nu_hat, eps, eps_in_sqrt, mu_hat=None):
    def one(n, m=None):
        var = n if m is None else n - _abs_sq(m)
        return lax.rsqrt(var + eps) if eps_in_sqrt else \
            1 / (mnp.sqrt(var) + eps)
    if mu_hat is None:
        return tree_util.tree_map(one, nu_hat)
    return tree_util.tree_map(lambda m, n: one(n, m), mu_hat, nu_hat)


def scale_by_rms(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True,
                 bias_correction=False):
    """RMSProp's rescaling `g / sqrt(nu + eps)` (or `g / (sqrt(nu) + eps)` without
    `eps_in_sqrt`), `nu` the moving average of `g**2` starting at `initial_scale`."""
    def init(params):
        nu = tu.tree_full_like(params, initial_scale)
        if bias_correction:
            return ScaleByRmsWithCountState(count=_zero_count(), nu=nu)
        return ScaleByRmsState(nu=nu)

    def update(updates, state, params=None):
        del params
        _check_like("scale_by_rms", updates, state.nu, "nu")
        nu = tu.tree_update_moment_per_elem_norm(updates, state.nu, decay, 2)
        if bias_correction:
            count_inc = safe_increment(state.count)
            nu_hat = tu.tree_bias_correction(nu, decay, count_inc)
        else:
            nu_hat = nu
        scaling = _rms_scaling(nu_hat, eps, eps_in_sqrt)
        updates = tree_util.tree_map(lambda s, g: s * g, scaling, updates)
        if bias_correction:
            return updates, ScaleByRmsWithCountState(count=count_inc, nu=nu)
        return updates, ScaleByRmsState(nu=nu)

    return GradientTransformation(init, update)


class ScaleByRStdDevState(NamedTuple):
    """Centred RMSProp: moving averages `mu` of g and `nu` of g**2."""
    mu: Any
    nu: Any


class ScaleByRStdDevWithCountState(NamedTuple):
    """Centred RMSProp with bias correction: `count` (int32), `mu`, `nu`."""
    count: Any
    mu: Any
    nu: Any


def scale_by_stddev(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True,
                    bias_correction=False):
    """Centred RMSProp's rescaling `g / sqrt(nu - mu**2 + eps)`: divides by the moving
    standard deviation of the gradients."""
    def init(params):
        mu, nu = tu.tree_zeros_like(params), tu.tree_full_like(params, initial_scale)
        if bias_correction:
            return ScaleByRStdDevWithCountState(count=_zero_count(), mu=mu, nu=nu)
        return ScaleByRStdDevState(mu=mu, nu=nu)

    def update(updates, state, params=None):
        del params
        _check_like("scale_by_stddev", updates, state.nu, "nu")
        mu = tu.tree_update_moment(updates, state.mu, decay, 1)
        nu = tu.tree_update_moment_per_elem_norm(updates, state.nu, decay, 2)
        if bias_correction:
            count_inc = safe_increment(state.count)
            mu_hat = tu.tree_bias_correction(mu, decay, count_inc)
            nu_hat = tu.tree_bias_correction(nu, decay, count_inc)
        else:
            mu_hat, nu_hat = mu, nu
        scaling = _rms_scaling(nu_hat, eps, eps_in_sqrt, mu_hat)
        updates = tree_util.tree_map(lambda s, g: s * g, scaling, updates)
        if bias_correction:
            return updates, ScaleByRStdDevWithCountState(count=count_inc, mu=mu, nu=nu)
        return updates, ScaleByRStdDevState(mu=mu, nu=nu)

    return GradientTransformation(init, update)


class ScaleByRssState(NamedTuple):
    """Adagrad: the running sum of squared gradients."""
    sum_of_squares: Any


def scale_by_rss(initial_accumulator_value=0.1, eps=1e-7):
    """Adagrad's rescaling `g / sqrt(s + eps)` with `s` the running sum of `g**2` (started
    at `initial_accumulator_value`); 0 where `s` is 0."""
    def init(params):
        return ScaleByRssState(tu.tree_full_like(params, initial_accumulator_value))

    def update(updates, state, params=None):
        del params
        sos = tree_map_checked("scale_by_rss", ("updates", "state.sum_of_squares"),
                               lambda g, t: _abs_sq(g) + t, updates, state.sum_of_squares)
        inv = tree_util.tree_map(
            lambda t: mnp.where(t > 0, lax.rsqrt(t + eps), 0.0), sos)
        return tu.tree_mul(inv, updates), ScaleByRssState(sum_of_squares=sos)

    return GradientTransformation(init, update)


class ScaleByLionState(NamedTuple):
    """Lion: step `count` (int32) and the momentum `mu`."""
    count: Any
    mu: Any


def scale_by_lion(b1=0.9, b2=0.99, mu_dtype=None):
    """Lion's update `sign((1 - b1) * g + b1 * m)`, then `m <- (1 - b2) * g + b2 * m`."""
    mu_dtype = _dtype(mu_dtype)

    def init(params):
        return ScaleByLionState(_zero_count(), tu.tree_zeros_like(params, dtype=mu_dtype))

    def update(updates, state, params=None):
        del params
        new = tree_map_checked("scale_by_lion", ("updates", "state.mu"),
                               lambda g, m: mnp.sign((1.0 - b1) * g + b1 * m),
                               updates, state.mu)
        mu = tu.tree_cast(tu.tree_update_moment(updates, state.mu, b2, 1), mu_dtype)
        return new, ScaleByLionState(count=safe_increment(state.count), mu=mu)

    return GradientTransformation(init, update)


def scale_by_trust_ratio(min_norm=0.0, trust_coefficient=1.0, eps=0.0):
    """LARS/LAMB's layer-wise scaling: each update times
    `trust_coefficient * ||p|| / (||u|| + eps)` (1 where either norm is 0). Needs params."""
    def update(updates, state, params=None):
        _need_params("scale_by_trust_ratio", params)

        def one(u, p):
            p_norm, u_norm = safe_norm(p, min_norm), safe_norm(u, min_norm)
            ratio = trust_coefficient * p_norm / (u_norm + eps)
            zero = mnp.logical_or(p_norm == 0.0, u_norm == 0.0)
            return u * mnp.where(zero, mnp.asarray(1.0, dtype=p.dtype), ratio)

        return tree_map_checked("scale_by_trust_ratio", ("updates", "params"), one,
                                updates, params), state

    return GradientTransformation(init_empty_state, update)


def scale_by_sign():
    """Replaces every update by its sign."""
    def update(updates, state, params=None):
        del params
        return tree_util.tree_map(mnp.sign, updates), state

    return GradientTransformation(init_empty_state, update)


def scale_by_param_block_norm(min_scale=1e-3):
    """Scales each update by its parameter's L2 norm (at least `min_scale`). Needs params."""
    def update(updates, state, params=None):
        _need_params("scale_by_param_block_norm", params)
        return tree_map_checked("scale_by_param_block_norm", ("updates", "params"),
                                lambda u, p: u * safe_norm(p, min_scale), updates,
                                params), state

    return GradientTransformation(init_empty_state, update)


def scale_by_param_block_rms(min_scale=1e-3):
    """Scales each update by its parameter's RMS (at least `min_scale`). Needs params."""
    def update(updates, state, params=None):
        _need_params("scale_by_param_block_rms", params)
        return tree_map_checked("scale_by_param_block_rms", ("updates", "params"),
                                lambda u, p: u * safe_root_mean_squares(p, min_scale),
                                updates, params), state

    return GradientTransformation(init_empty_state, update)


class WeightDecaySchedule(NamedTuple):
    """`add_decayed_weights` with a scheduled weight decay: the step `count` (int32)."""
    count: Any


def add_decayed_weights(weight_decay=0.0, mask=None):
    """Adds `weight_decay * p` to each update (decoupled weight decay, as in AdamW).
    `weight_decay` may be a schedule; `mask` (a pytree of bools or a callable
    `params -> mask`) limits it to some parameters. Needs params."""
    def init(params):
        del params
        if callable(weight_decay):
            return WeightDecaySchedule(count=_zero_count())
        return EmptyState()

    def update(updates, state, params=None):
        _need_params("add_decayed_weights", params)
        if callable(weight_decay):
            new_state = WeightDecaySchedule(safe_increment(state.count))
        else:
            new_state = state
        if isinstance(weight_decay, (int, float)) and weight_decay == 0.0:
            return updates, new_state
        s = weight_decay(state.count) if callable(weight_decay) else weight_decay
        updates = tree_map_checked("add_decayed_weights", ("updates", "params"),
                                   lambda g, p: None if g is None else g + s * p,
                                   updates, params, is_leaf=lambda x: x is None)
        return updates, new_state

    tx = GradientTransformation(init, update)
    if mask is not None:
        from mytorch.optim.wrappers import masked
        return masked(tx, mask)
    return tx


def centralize():
    """Gradient centralisation: subtracts from each update of rank > 1 its mean over all
    axes but the first."""
    def one(g):
        if mnp.ndim(g) > 1:
            return g - mnp.mean(g, axis=tuple(range(1, mnp.ndim(g))), keepdims=True)
        return g

    def update(updates, state, params=None):
        del params
        return tree_util.tree_map(one, updates), state

    return GradientTransformation(init_empty_state, update)
