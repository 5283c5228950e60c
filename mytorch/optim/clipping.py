"""Transformations that bound or sanitise updates: clipping, NaN zeroing, gradient noise."""

from __future__ import annotations

from typing import Any, NamedTuple

import mytorch.numpy as mnp
from mytorch import tree_util
from mytorch.core.source_info import user_error
from mytorch.optim import tree_utils as tu
from mytorch.optim.base import GradientTransformation, _abs_sq, init_empty_state, safe_increment

__all__ = [
    "AddNoiseState",
    "ZeroNansState",
    "adaptive_grad_clip",
    "add_noise",
    "clip",
    "clip_by_block_rms",
    "clip_by_global_norm",
    "clip_by_value",
    "keep_params_nonnegative",
    "per_example_global_norm_clip",
    "unitwise_clip",
    "unitwise_norm",
    "zero_nans",
]


def _check_non_negative(fname, name, value):
    if isinstance(value, (int, float)) and not value >= 0:
        raise user_error(ValueError, f"{fname}: {name} must be non-negative, got {value!r}")


def clip(max_delta):
    """Clips every update element to `[-max_delta, max_delta]`; no state.

    Example:
        >>> u, _ = clip(1.0).update(mnp.array([-3.0, 0.5]), EmptyState())  # [-1., 0.5]
    """
    def update(updates, state, params=None):
        del params
        return tu.tree_clip(updates, -max_delta, max_delta), state

    return GradientTransformation(init_empty_state, update)


clip_by_value = clip


def clip_by_global_norm(max_norm):
    """Rescales all updates together so that their global L2 norm is at most `max_norm`:
    `u * max_norm / global_norm(u)` when `global_norm(u) >= max_norm`, else unchanged.

    Args:
      max_norm: the bound (a non-negative number or 0-d array).
    Returns:
      A stateless GradientTransformation; updates keep their shapes and dtypes.

    Example:
        >>> u, _ = clip_by_global_norm(1.0).update([mnp.array([3.0, 4.0])], EmptyState())
        >>> # u == [Array([0.6, 0.8])]
    """
    _check_non_negative("clip_by_global_norm", "max_norm", max_norm)

    def update(updates, state, params=None):
        del params
        if not tree_util.tree_leaves(updates):
            return updates, state
        g_norm = tu.tree_norm(updates)
        trigger = g_norm < max_norm

        def one(t):
            return mnp.where(trigger, t, (t / g_norm.astype(t.dtype)) * max_norm)

        return tree_util.tree_map(one, updates), state

    return GradientTransformation(init_empty_state, update)


def clip_by_block_rms(threshold):
    """Rescales each update (block) whose RMS exceeds `threshold` down to RMS `threshold`:
    `u / max(1, rms(u) / threshold)`."""
    _check_non_negative("clip_by_block_rms", "threshold", threshold)

    def update(updates, state, params=None):
        del params

        def one(u):
            return u / mnp.maximum(1.0, mnp.sqrt(mnp.mean(_abs_sq(u))) / threshold)

        return tree_util.tree_map(one, updates), state

    return GradientTransformation(init_empty_state, update)


class ZeroNansState(NamedTuple):
    """`zero_nans`: per leaf, a bool scalar saying whether that update held a NaN."""
    found_nan: Any


def zero_nans():
    """Replaces NaN update elements by 0 and records, per leaf, whether any was found."""
    def init(params):
        return ZeroNansState(tree_util.tree_map(lambda p: mnp.array(False), params))

    def update(updates, state, params=None):
        del params, state
        found = tree_util.tree_map(lambda u: mnp.any(mnp.isnan(u)), updates)
        clean = tree_util.tree_map(lambda u: mnp.where(mnp.isnan(u), mnp.zeros_like(u), u),
                                   updates)
        return clean, ZeroNansState(found_nan=found)

    return GradientTransformation(init, update)


class AddNoiseState(NamedTuple):
    """`add_noise`: the step `count` (int32) and the PRNG key."""
    count: Any
    rng_key: Any


def add_noise(eta, gamma, key=0):
    """Adds Gaussian noise of standard deviation `sqrt(eta / (1 + count)**gamma)` to each
    update (annealed gradient noise). `key` is an int seed or a key from `mt.random`."""
    from mytorch import random as mrandom

    def init(params):
        del params
        k = mrandom.PRNGKey(key) if isinstance(key, int) else key
        return AddNoiseState(count=mnp.zeros([], mnp.int32), rng_key=k)

    def update(updates, state, params=None):
        del params
        count_inc = safe_increment(state.count)
        std = mnp.sqrt(eta / count_inc ** gamma)
        rng_key, sample_key = mrandom.split(state.rng_key)
        leaves, treedef = tree_util.tree_flatten(updates)
        keys = mrandom.split(sample_key, len(leaves))
        noisy = [u + std * mrandom.normal(keys[i], mnp.shape(u), dtype=u.dtype)
                 for i, u in enumerate(leaves)]
        return tree_util.tree_unflatten(treedef, noisy), AddNoiseState(count_inc, rng_key)

    return GradientTransformation(init, update)


def keep_params_nonnegative():
    """Changes each update so that `p + u >= 0` (negative results land on 0). Needs
    params."""
    def update(updates, state, params=None):
        if params is None:
            raise user_error(ValueError, "keep_params_nonnegative: update needs params")
        out = tree_util.tree_map(lambda u, p: mnp.where((p + u) < 0.0, -p, u), updates, params)
        return out, state

    return GradientTransformation(init_empty_state, update)


def unitwise_norm(x, axis=None):
    """The L2 norm of each unit of `x`, broadcast to `x.shape`: the whole array for
    scalars and vectors, per output column for rank 2-3 (`[in, out]` weights), per output
    channel for rank 4-5 (`HWIO`/`DHWIO` kernels); `axis` overrides the reduced axes."""
    x = mnp.asarray(x)
    if axis is not None:
        sq = mnp.sum(_abs_sq(x), axis=axis, keepdims=True)
    elif mnp.ndim(mnp.squeeze(x)) <= 1:
        sq = mnp.sum(_abs_sq(x), keepdims=True)
    elif x.ndim in (2, 3):
        sq = mnp.sum(_abs_sq(x), axis=0, keepdims=True)
    elif x.ndim in (4, 5):
        sq = mnp.sum(_abs_sq(x), axis=tuple(range(x.ndim - 1)), keepdims=True)
    else:
        raise user_error(ValueError, f"unitwise_norm: expected a parameter of rank 0 to 5, "
                         f"got shape {x.shape}; pass axis= to choose the reduced axes")
    return mnp.broadcast_to(mnp.sqrt(sq), x.shape)


def unitwise_clip(g_norm, max_norm, grad, div_eps=1e-6):
    """`grad` where `g_norm < max_norm`, else `grad * max_norm / max(g_norm, div_eps)`."""
    clipped = grad * (max_norm / mnp.maximum(g_norm, div_eps))
    return mnp.where(g_norm < max_norm, grad, clipped)


def adaptive_grad_clip(clipping, eps=1e-3, axis=None):
    """Adaptive gradient clipping (AGC): clips each unit's gradient norm to
    `clipping * max(||p_unit||, eps)`. Needs params."""
    def update(updates, state, params=None):
        if params is None:
            raise user_error(ValueError, "adaptive_grad_clip: update needs params")
        g_norm = tree_util.tree_map(lambda x: unitwise_norm(x, axis), updates)
        p_norm = tree_util.tree_map(lambda x: unitwise_norm(x, axis), params)
        max_norm = tree_util.tree_map(lambda x: clipping * mnp.maximum(x, eps), p_norm)
        return tree_util.tree_map(unitwise_clip, g_norm, max_norm, updates), state

    return GradientTransformation(init_empty_state, update)


def per_example_global_norm_clip(grads, l2_norm_clip):
    """Clips each example's gradient (leading axis of every leaf) to global norm
    `l2_norm_clip` and sums over examples (as in DP-SGD).

    Returns:
      `(summed_grads, num_clipped)`: leaves without the batch axis, and an int count.
    """
    leaves = tree_util.tree_leaves(grads)
    if not leaves or any(mnp.ndim(g) < 1 or g.shape[0] != leaves[0].shape[0]
                         for g in leaves):
        raise user_error(ValueError, "per_example_global_norm_clip: every leaf needs the same "
                         "batch size on axis 0, got shapes "
                         f"{[tuple(g.shape) for g in leaves]}")
    sq = sum(mnp.sum(_abs_sq(g).reshape(g.shape[0], -1), axis=1) for g in leaves)
    norms = mnp.sqrt(sq)
    mult = mnp.nan_to_num(mnp.minimum(l2_norm_clip / norms, 1.0), nan=1.0)
    num_clipped = mnp.sum(mult < 1.0)
    summed = tree_util.tree_map(lambda g: mnp.tensordot(mult, g, axes=1), grads)
    return summed, num_clipped
