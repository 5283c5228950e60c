"""Transformations built from other transformations: chain, masked, apply_if_finite,
MultiSteps (gradient accumulation), inject_hyperparams and multi_transform."""

from __future__ import annotations

import inspect
from typing import Any, NamedTuple

import numpy as np

import mytorch.numpy as mnp
from mytorch import eval_shape, lax, tree_util
from mytorch.core.source_info import user_error
from mytorch.optim import tree_utils as tu
from mytorch.optim.base import (
    GradientTransformationExtraArgs,
    as_extra_args,
    safe_increment,
    set_to_zero,
    tree_map_checked,
    with_extra_args_support,
)

__all__ = [
    "ApplyIfFiniteState",
    "InjectHyperparamsState",
    "MaskedNode",
    "MaskedState",
    "MultiSteps",
    "MultiStepsState",
    "MultiTransformState",
    "PartitionState",
    "apply_if_finite",
    "chain",
    "freeze",
    "inject_hyperparams",
    "masked",
    "multi_transform",
    "named_chain",
    "partition",
    "selective_transform",
    "skip_large_updates",
    "skip_not_finite",
]


def chain(*args):
    """Applies transformations in order; the state is the tuple of their states.

    Example:
        >>> tx = chain(clip_by_global_norm(1.0), scale_by_adam(), scale(-1e-3))
    """
    txs = [as_extra_args("chain", t) for t in args]

    def init(params):
        return tuple(t.init(params) for t in txs)

    def update(updates, state, params=None, **extra_args):
        if not isinstance(state, tuple) or len(state) != len(txs):
            got = f"{len(state)} states" if isinstance(state, tuple) else type(state).__name__
            raise user_error(ValueError, f"chain: {len(txs)} transformations but the state "
                             f"holds {got}; pass the state that this chain's init returned")
        new_state = []
        for s, t in zip(state, txs, strict=True):
            updates, s = t.update(updates, s, params, **extra_args)
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformationExtraArgs(init, update)


def named_chain(*transforms):
    """`chain` of `(name, transformation)` pairs whose state is a dict keyed by name."""
    names = [n for n, _ in transforms]
    txs = {n: as_extra_args("named_chain", t) for n, t in transforms}

    def init(params):
        return {n: txs[n].init(params) for n in names}

    def update(updates, state, params=None, **extra_args):
        new_state = {}
        for n in names:
            updates, new_state[n] = txs[n].update(updates, state[n], params, **extra_args)
        return updates, new_state

    return GradientTransformationExtraArgs(init, update)


# ---- masked --------------------------------------------------------------------------------------

class MaskedNode(NamedTuple):
    """Stands where a masked-out leaf was: a pytree node with no leaves."""


class MaskedState(NamedTuple):
    """`masked`: the inner transformation's state over the masked-in leaves."""
    inner_state: Any


def _resolve_mask(mask, tree):
    if callable(mask) and not isinstance(mask, (bool, np.bool_)):
        return mask(tree)
    return mask


def _mask_tree(tree, mask_tree, fname):
    return tree_map_checked(fname, ("mask", "params"),
                            lambda m, p: p if _flag(m, fname) else MaskedNode(),
                            mask_tree, tree)


def _flag(m, fname):
    if isinstance(m, (bool, np.bool_)):
        return bool(m)
    if getattr(m, "shape", None) == () and getattr(m, "dtype", None) == np.bool_:
        return bool(m)
    raise user_error(TypeError, f"{fname}: mask leaves must be Python bools, got "
                     f"{type(m).__name__} {m!r}")


def masked(inner, mask):
    """Applies `inner` only to the leaves where `mask` is True; the other updates pass
    through unchanged. `mask` is a pytree of bools with the params' structure (or a prefix
    of it), or a callable `params -> mask`.

    Example:
        >>> tx = masked(add_decayed_weights(1e-4), {'w': True, 'b': False})
    """
    inner = as_extra_args("masked", inner)

    def init(params):
        mask_tree = _resolve_mask(mask, params)
        return MaskedState(inner_state=inner.init(_mask_tree(params, mask_tree, "masked")))

    def update(updates, state, params=None, **extra_args):
        mask_tree = _resolve_mask(mask, updates)
        masked_updates = _mask_tree(updates, mask_tree, "masked")
        masked_params = None if params is None else _mask_tree(params, mask_tree, "masked")
        new, inner_state = inner.update(masked_updates, state.inner_state, masked_params,
                                        **extra_args)
        out = tree_util.tree_map(lambda m, n, o: n if m else o, mask_tree, new, updates)
        return out, MaskedState(inner_state=inner_state)

    return GradientTransformationExtraArgs(init, update)


# ---- apply_if_finite -----------------------------------------------------------------------------

class ApplyIfFiniteState(NamedTuple):
    """`apply_if_finite`: consecutive non-finite steps (int32), whether the last step was
    finite (bool), all non-finite steps so far (int32), and the inner state."""
    notfinite_count: Any
    last_finite: Any
    total_notfinite: Any
    inner_state: Any


def _all_finite(tree):
    leaves = tree_util.tree_leaves(tree)
    ok = mnp.array(True)
    for x in leaves:
        ok = mnp.logical_and(ok, mnp.all(mnp.isfinite(x)))
    return ok


def apply_if_finite(inner, max_consecutive_errors):
    """Runs `inner` only on steps whose updates are all finite; a step with a NaN or inf
    gives zero updates and keeps the inner state, unless more than
    `max_consecutive_errors` such steps came in a row (then `inner` runs anyway)."""
    inner = as_extra_args("apply_if_finite", inner)

    def init(params):
        return ApplyIfFiniteState(mnp.zeros([], mnp.int32), mnp.array(True),
                                  mnp.zeros([], mnp.int32), inner.init(params))

    def update(updates, state, params=None, **extra_args):
        isfinite = _all_finite(updates)
        notfinite_count = mnp.where(isfinite, mnp.zeros([], mnp.int32),
                                    safe_increment(state.notfinite_count))

        def do_update(operands):
            u, s, p = operands
            return inner.update(u, s, p, **extra_args)

        def reject_update(operands):
            s = operands[1]
            shapes = eval_shape(do_update, operands)[0]
            zeros = tree_util.tree_map(lambda x: mnp.zeros(x.shape, x.dtype), shapes)
            return zeros, s

        new_updates, inner_state = lax.cond(
            mnp.logical_or(isfinite, notfinite_count > max_consecutive_errors),
            do_update, reject_update, (updates, state.inner_state, params))
        total = mnp.where(isfinite, state.total_notfinite,
                          safe_increment(state.total_notfinite))
        return new_updates, ApplyIfFiniteState(notfinite_count, isfinite, total, inner_state)

    return GradientTransformationExtraArgs(init, update)


# ---- MultiSteps ----------------------------------------------------------------------------------

class MultiStepsState(NamedTuple):
    """`MultiSteps`: the mini-step within the current accumulation (int32), the number of
    inner updates made (int32), the inner state, the accumulated gradients and the
    state of `should_skip_update_fn`."""
    mini_step: Any
    gradient_step: Any
    inner_opt_state: Any
    acc_grads: Any
    skip_state: Any = ()


def skip_not_finite(updates, gradient_step, params):
    """A `should_skip_update_fn` for MultiSteps: skip when any update is NaN or inf."""
    del gradient_step, params
    counts = [mnp.sum(mnp.logical_not(mnp.isfinite(p))) for p in tree_util.tree_leaves(updates)]
    num = sum(counts[1:], counts[0]) if counts else mnp.asarray(0)
    should_skip = num > 0
    return should_skip, {"should_skip": should_skip, "num_not_finite": num}


def skip_large_updates(updates, gradient_step, params, max_squared_norm):
    """A `should_skip_update_fn` for MultiSteps (bind `max_squared_norm` with
    functools.partial): skip when the squared global norm is not below it (or is NaN)."""
    del gradient_step, params
    norm_sq = tu.tree_norm(updates, squared=True)
    should_skip = mnp.logical_not(norm_sq < max_squared_norm)
    return should_skip, {"should_skip": should_skip, "norm_squared": norm_sq}


def _no_skip(*args, **kwargs):
    return mnp.array(False), ()


class MultiSteps:
    """Gradient accumulation: feeds `opt` the mean (or, without `use_grad_mean`, the sum)
    of `k` successive gradients, `k = every_k_schedule(gradient_step)`, and returns zero
    updates on the `k - 1` steps in between.

    Use `.init`/`.update` directly, or `.gradient_transformation()` as a
    GradientTransformation. `has_updated(state)` says whether the last step applied one.

    Example:
        >>> opt = MultiSteps(adam(1e-3), every_k_schedule=4)
        >>> state = opt.init(params); updates, state = opt.update(grads, state, params)
    """

    def __init__(self, opt, every_k_schedule, use_grad_mean=True,
                 should_skip_update_fn=None, accumulator_dtype=mnp.float32):
        self._opt = as_extra_args("MultiSteps", opt)
        if isinstance(every_k_schedule, (bool, np.bool_)) or not (
                isinstance(every_k_schedule, (int, np.integer)) or callable(every_k_schedule)):
            raise user_error(TypeError, "MultiSteps: every_k_schedule must be a positive int "
                             "or a callable step -> k, got "
                             f"{type(every_k_schedule).__name__} {every_k_schedule!r}")
        if isinstance(every_k_schedule, (int, np.integer)):
            if every_k_schedule < 1:
                raise user_error(ValueError, "MultiSteps: every_k_schedule must be at least "
                                 f"1 (the number of steps to accumulate), got "
                                 f"{every_k_schedule}")
            k = int(every_k_schedule)
            self._every_k_schedule = lambda step: k
        else:
            self._every_k_schedule = every_k_schedule
        self._use_grad_mean = use_grad_mean
        self._acc_dtype = None if accumulator_dtype is None else mnp.dtype(accumulator_dtype)
        self._should_skip = should_skip_update_fn or _no_skip

    @property
    def inner_opt(self):
        """The wrapped transformation."""
        return self._opt

    def _acc(self, grad, acc, n_acc):
        if self._use_grad_mean:
            return acc + (grad - acc) / (n_acc + 1)
        return grad + acc

    def init(self, params):
        """The initial MultiStepsState for `params`."""
        gradient_step = mnp.zeros([], mnp.int32)
        _, skip_state = self._should_skip(tu.tree_zeros_like(params), gradient_step, params)
        return MultiStepsState(
            mini_step=mnp.zeros([], mnp.int32), gradient_step=gradient_step,
            inner_opt_state=self._opt.init(params),
            acc_grads=tu.tree_zeros_like(params, dtype=self._acc_dtype),
            skip_state=skip_state)

    def update(self, updates, state, params=None, **extra_args):
        """Accumulates `updates`; on every k-th call returns the inner optimiser's update
        of the accumulated gradient (zeros otherwise)."""
        k_steps = self._every_k_schedule(state.gradient_step)
        should_skip, skip_state = self._should_skip(updates, state.gradient_step, params)
        should_skip = mnp.asarray(should_skip)
        if should_skip.shape != () or should_skip.dtype != mnp.bool_:
            raise user_error(ValueError, "MultiSteps: should_skip_update_fn must return a "
                             f"bool scalar first, got {should_skip.dtype}{list(should_skip.shape)}")

        def do_update(operands):
            updates, state, params = operands
            acc = tree_map_checked(
                "MultiSteps.update", ("updates", "state.acc_grads"),
                lambda g, a: self._acc(g, a, state.mini_step), updates, state.acc_grads)
            final, new_inner = self._opt.update(tu.tree_cast_like(acc, updates),
                                                state.inner_opt_state, params, **extra_args)
            emit = state.mini_step == (k_steps - 1)
            inner_state = tree_util.tree_map(
                lambda s, n: mnp.where(emit, n, s).astype(mnp.asarray(s).dtype),
                state.inner_opt_state, new_inner)
            acc = tree_util.tree_map(
                lambda a: mnp.where(emit, mnp.zeros_like(a), a).astype(
                    self._acc_dtype or a.dtype), acc)
            gradient_step = mnp.where(emit, safe_increment(state.gradient_step),
                                      state.gradient_step)
            new_state = MultiStepsState(safe_increment(state.mini_step) % k_steps,
                                        gradient_step, inner_state, acc, skip_state)
            final = tree_util.tree_map(lambda u: mnp.where(emit, u, mnp.zeros_like(u)), final)
            return final, new_state

        def skip_update(operands):
            state = operands[1]
            shapes = eval_shape(do_update, operands)[0]
            zeros = tree_util.tree_map(lambda x: mnp.zeros(x.shape, x.dtype), shapes)
            return zeros, state._replace(skip_state=skip_state)

        operands = (updates, state, params)
        if self._should_skip is _no_skip:
            return do_update(operands)
        return lax.cond(should_skip, skip_update, do_update, operands)

    def has_updated(self, state):
        """Whether the last `update` applied the inner optimiser (a bool 0-d array)."""
        return mnp.logical_and(state.mini_step == 0, state.gradient_step > 0)

    def gradient_transformation(self):
        """This MultiSteps as a GradientTransformationExtraArgs."""
        return GradientTransformationExtraArgs(self.init, self.update)


# ---- inject_hyperparams --------------------------------------------------------------------------

class InjectHyperparamsState(NamedTuple):
    """`inject_hyperparams`: the step `count` (int32), the current numeric hyperparameters
    (a dict of 0-d arrays, which may be replaced between steps) and the inner state."""
    count: Any
    hyperparams: Any
    inner_state: Any


def _highest_float(params):
    dts = [mnp.asarray(x).dtype for x in tree_util.tree_leaves(params)]
    floats = [d for d in dts if mnp.issubdtype(d, mnp.floating)]
    return mnp.result_type(*floats) if floats else mnp.dtype(mnp.float32)


def _convert(value, dtype):
    value = mnp.asarray(value)
    if mnp.issubdtype(value.dtype, mnp.floating):
        return value.astype(dtype)
    return value


def inject_hyperparams(inner_factory, static_args=(), hyperparam_dtype=None):
    """Wraps an optimiser factory (e.g. `adam`) so that its numeric hyperparameters live
    in the state (`state.hyperparams['learning_rate']`, changeable between steps) and
    callable ones are schedules of the step count evaluated at each update.

    Example:
        >>> opt = inject_hyperparams(sgd)(learning_rate=0.1)
        >>> state = opt.init(params); state.hyperparams['learning_rate']  # Array(0.1)
    """
    static_args = {static_args} if isinstance(static_args, str) else set(static_args)
    sig = inspect.signature(inner_factory)
    if not static_args.issubset(sig.parameters):
        raise user_error(ValueError, f"inject_hyperparams: static_args {sorted(static_args)} "
                         f"must name parameters of {inner_factory.__name__}, which has "
                         f"{list(sig.parameters)}")

    def wrapped(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        sched, numeric, other = {}, {}, {}
        for name, value in bound.arguments.items():
            if name in static_args or isinstance(value, bool):
                other[name] = value
            elif callable(value):
                sched[name] = value
            elif isinstance(value, (int, float, np.ndarray, mnp.ndarray)):
                numeric[name] = value
            else:
                other[name] = value

        def dtype_of(params):
            return mnp.dtype(hyperparam_dtype) if hyperparam_dtype is not None \
                else _highest_float(params)

        def init(params):
            dtype = dtype_of(params)
            count = mnp.zeros([], mnp.int32)
            hps = {k: _convert(v, dtype) for k, v in numeric.items()}
            hps.update({k: _convert(f(count), dtype) for k, f in sched.items()})
            return InjectHyperparamsState(count, hps, inner_factory(**other, **hps).init(params))

        def update(updates, state, params=None, **extra_args):
            dtype = dtype_of(params if params is not None else updates)
            hps = {k: _convert(v, dtype) for k, v in state.hyperparams.items()}
            hps.update({k: _convert(f(state.count), dtype) for k, f in sched.items()})
            inner = with_extra_args_support(inner_factory(**other, **hps))
            updates, inner_state = inner.update(updates, state.inner_state, params,
                                                **extra_args)
            return updates, InjectHyperparamsState(safe_increment(state.count), hps,
                                                   inner_state)

        return GradientTransformationExtraArgs(init, update)

    wrapped.__name__ = getattr(inner_factory, "__name__", "wrapped")
    wrapped.__doc__ = inner_factory.__doc__
    return wrapped


# ---- multi_transform -----------------------------------------------------------------------------

class PartitionState(NamedTuple):
    """`partition` / `multi_transform`: one inner state per label (a dict)."""
    inner_states: Any


MultiTransformState = PartitionState


def partition(transforms, param_labels):
    """Applies `transforms[label]` to the parameters labelled `label`; `param_labels` is a
    pytree of labels with the params' structure (or a callable `params -> labels`).

    Example:
        >>> opt = partition({'train': adam(1e-3), 'frozen': set_to_zero()},
        ...                 {'encoder': 'frozen', 'head': 'train'})
    """
    transforms = {k: as_extra_args("partition", t) for k, t in transforms.items()}

    def labels_of(tree):
        labels = param_labels(tree) if callable(param_labels) else param_labels
        missing = set(tree_util.tree_leaves(labels)) - set(transforms)
        if missing:
            raise user_error(ValueError, f"multi_transform: labels {sorted(missing)} have no "
                             f"transformation (transforms has {sorted(transforms)})")
        return labels

    def mask_for(labels, group):
        return tree_util.tree_map(lambda lab: lab == group, labels)

    def init(params):
        labels = labels_of(params)
        return PartitionState({
            g: masked(t, mask_for(labels, g)).init(params) for g, t in transforms.items()})

    def update(updates, state, params=None, **extra_args):
        labels = labels_of(updates)
        new_states = {}
        for g, t in transforms.items():
            updates, new_states[g] = masked(t, mask_for(labels, g)).update(
                updates, state.inner_states[g], params, **extra_args)
        return updates, PartitionState(new_states)

    return GradientTransformationExtraArgs(init, update)


multi_transform = partition


def freeze(mask):
    """Zero updates for the parameters where `mask` is True (a bool, a pytree of bools
    or a prefix of the params' structure); the others pass through unchanged."""
    return masked(set_to_zero(), mask)


def selective_transform(optimizer, *, freeze_mask):
    """`optimizer` on the parameters where `freeze_mask` is False; zero updates (and no
    optimiser state) for the frozen ones."""
    def labels(params):
        del params
        return tree_util.tree_map(lambda m: "freeze" if m else "train", freeze_mask)

    return partition({"train": optimizer, "freeze": set_to_zero()}, labels)
