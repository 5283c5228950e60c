"""Smaller Optax pieces: conditional wrappers, flattening, update normalisation, fromage,
apply_every, scale_gradient, and the state/type aliases Optax exports."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import mytorch.numpy as mnp
from mytorch import custom_vjp, lax, tree_util
from mytorch.optim import transforms as T
from mytorch.optim import tree_utils as tu
from mytorch.optim.base import (
    EmptyState,
    GradientTransformation,
    GradientTransformationExtraArgs,
    as_extra_args,
    init_empty_state,
    safe_increment,
)
from mytorch.optim.wrappers import chain

__all__ = [
    "AdaptiveGradClipState",
    "AddDecayedWeightsState",
    "ApplyEvery",
    "ClipByGlobalNormState",
    "ClipState",
    "ConditionallyMaskState",
    "ConditionallyTransformState",
    "MaskOrFn",
    "NonNegativeParamsState",
    "ScaleByTrustRatioState",
    "ScaleState",
    "TransformInitFn",
    "TransformUpdateExtraArgsFn",
    "TransformUpdateFn",
    "apply_every",
    "bias_correction",
    "conditionally_mask",
    "conditionally_transform",
    "flatten",
    "fromage",
    "normalize_by_update_norm",
    "scale_gradient",
    "update_infinity_moment",
    "update_moment",
    "update_moment_per_elem_norm",
]

# the states of stateless transformations, by Optax's names
AddDecayedWeightsState = ClipState = ClipByGlobalNormState = ScaleState = EmptyState
ScaleByTrustRatioState = NonNegativeParamsState = AdaptiveGradClipState = EmptyState
MaskOrFn = Any
TransformInitFn = Callable[[Any], Any]
TransformUpdateFn = Callable[..., tuple]
TransformUpdateExtraArgsFn = Callable[..., tuple]

update_moment = tu.tree_update_moment
update_moment_per_elem_norm = tu.tree_update_moment_per_elem_norm
update_infinity_moment = tu.tree_update_infinity_moment
bias_correction = tu.tree_bias_correction


class ConditionallyTransformState(NamedTuple):
    """`conditionally_transform`: the inner state and the step (int32)."""
    inner_state: Any
    step: Any


def conditionally_transform(inner, should_transform_fn, forward_extra_args=False):
    """Runs `inner` only on steps where `should_transform_fn(step)` is True (a bool
    scalar); other steps pass the updates through unchanged and keep the inner state."""
    inner = as_extra_args("conditionally_transform", inner)

    def init(params):
        return ConditionallyTransformState(inner.init(params), mnp.zeros([], mnp.int32))

    def update(updates, state, params=None, **extra_args):
        cond_kwargs = extra_args if forward_extra_args else {}
        new, inner_state = lax.cond(
            should_transform_fn(state.step, **cond_kwargs),
            lambda ops: inner.update(ops[0], ops[1], ops[2], **extra_args),
            lambda ops: (ops[0], ops[1]),
            (updates, state.inner_state, params))
        return new, ConditionallyTransformState(inner_state, safe_increment(state.step))

    return GradientTransformationExtraArgs(init, update)


class ConditionallyMaskState(NamedTuple):
    """`conditionally_mask`: the step (int32) and the inner state."""
    step: Any
    inner_state: Any


def conditionally_mask(inner, should_transform_fn, forward_extra_args=False):
    """Runs `inner` only on steps where `should_transform_fn(step)` is True; other steps
    give zero updates and keep the inner state."""
    inner = as_extra_args("conditionally_mask", inner)

    def init(params):
        return ConditionallyMaskState(mnp.zeros([], mnp.int32), inner.init(params))

    def update(updates, state, params=None, **extra_args):
        cond_kwargs = extra_args if forward_extra_args else {}
        new, inner_state = lax.cond(
            should_transform_fn(state.step, **cond_kwargs),
            lambda ops: inner.update(ops[0], ops[1], ops[2], **extra_args),
            lambda ops: (tu.tree_zeros_like(ops[0]), ops[1]),
            (updates, state.inner_state, params))
        return new, ConditionallyMaskState(safe_increment(state.step), inner_state)

    return GradientTransformationExtraArgs(init, update)


def flatten(inner):
    """Runs `inner` on one flat vector made of all leaves (fewer, larger operations for
    trees of many small arrays); updates come back in the original structure."""
    inner = as_extra_args("flatten", inner)

    def to_flat(tree):
        leaves = tree_util.tree_leaves(tree)
        return mnp.concatenate([mnp.reshape(x, (-1,)) for x in leaves]) if leaves else \
            mnp.zeros((0,))

    def from_flat(like, flat):
        leaves, treedef = tree_util.tree_flatten(like)
        out, start = [], 0
        for x in leaves:
            n = int(np.prod(mnp.shape(x), dtype=np.int64))
            out.append(mnp.reshape(flat[start:start + n], mnp.shape(x)))
            start += n
        return tree_util.tree_unflatten(treedef, out)

    def init(params):
        return inner.init(to_flat(params))

    def update(updates, state, params=None, **extra_args):
        flat_params = None if params is None else to_flat(params)
        flat, state = inner.update(to_flat(updates), state, flat_params, **extra_args)
        return from_flat(updates, flat), state

    return GradientTransformationExtraArgs(init, update)


def normalize_by_update_norm(scale_factor=1.0, eps=1e-6):
    """Divides all updates by `(global_norm(updates) + eps) / scale_factor`."""
    def update(updates, state, params=None):
        del params
        g_norm = (tu.tree_norm(updates) + eps) / scale_factor
        return tree_util.tree_map(lambda g: g / g_norm, updates), state

    return GradientTransformation(init_empty_state, update)


def fromage(learning_rate, min_norm=1e-6):
    """Fromage: the trust-ratio step `lr / sqrt(1 + lr**2)` with the matching shrinkage of
    the weights. Needs params in `update`."""
    if not callable(learning_rate):
        mult = 1 / (1 + learning_rate ** 2) ** 0.5
        return chain(T.scale_by_trust_ratio(min_norm),
                     T.scale_by_learning_rate(learning_rate * mult),
                     T.add_decayed_weights(mult - 1))

    def mult_lr(c):
        return 1 / (1 + learning_rate(c) ** 2) ** 0.5

    return chain(T.scale_by_trust_ratio(min_norm),
                 T.scale_by_learning_rate(lambda c: mult_lr(c) * learning_rate(c)),
                 T.add_decayed_weights(lambda c: mult_lr(c) - 1))


class ApplyEvery(NamedTuple):
    """`apply_every`: the step within the period (int32) and the summed gradients."""
    count: Any
    grad_acc: Any


def apply_every(k=1):
    """Sums `k` successive updates and emits the sum every `k`-th step (zeros in between);
    `MultiSteps` is the fuller form of this."""
    def init(params):
        return ApplyEvery(mnp.zeros([], mnp.int32), tu.tree_zeros_like(params))

    def update(updates, state, params=None):
        del params
        c = state.count % k
        keep = c != 0
        acc = tree_util.tree_map(lambda g, a: keep * a + g, updates, state.grad_acc)
        emit = c == (k - 1)
        out = tree_util.tree_map(lambda a: emit * a, acc)
        return out, ApplyEvery(safe_increment(state.count) % k, acc)

    return GradientTransformation(init, update)


def scale_gradient(inputs, scale):
    """`inputs` unchanged in the forward pass, with gradients multiplied by `scale` in the
    backward pass (leaf by leaf)."""
    if scale == 1.0:
        return inputs
    if scale == 0.0:
        return tree_util.tree_map(lax.stop_gradient, inputs)
    @custom_vjp
    def identity(x):
        return x

    def fwd(x):
        return x, None

    def bwd(_, g):
        return (tree_util.tree_map(lambda g_: g_ * scale, g),)

    identity.defvjp(fwd, bwd)
    return identity(inputs)
