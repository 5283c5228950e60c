"""The GradientTransformation design: an `(init, update)` pair of pure functions.

`init(params) -> state` builds the state (a pytree of arrays, usually a NamedTuple);
`update(updates, state, params=None) -> (updates, state)` transforms a pytree of gradients
into a pytree of updates. `apply_updates(params, updates)` adds them to the parameters.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import mytorch.numpy as mnp
from mytorch import tree_util
from mytorch.core.source_info import user_error

__all__ = [
    "EmptyState",
    "GradientTransformation",
    "GradientTransformationExtraArgs",
    "OptState",
    "Params",
    "ScalarOrSchedule",
    "Schedule",
    "Updates",
    "apply_updates",
    "global_norm",
    "identity",
    "incremental_update",
    "init_empty_state",
    "periodic_update",
    "safe_increment",
    "safe_int32_increment",
    "safe_norm",
    "safe_root_mean_squares",
    "set_to_zero",
    "stateless",
    "stateless_with_tree_map",
    "with_extra_args_support",
]

Params = Any
Updates = Any
OptState = Any
Schedule = Callable[[Any], Any]
ScalarOrSchedule = float | Any | Schedule

NO_PARAMS_MSG = (
    "{name}: this transformation needs the current params: call "
    "update(updates, state, params) with params, not update(updates, state)"
)


class GradientTransformation(NamedTuple):
    """A pair of pure functions `init(params) -> state` and
    `update(updates, state, params=None) -> (updates, state)`.

    Example:
        >>> tx = GradientTransformation(init_empty_state, lambda u, s, p=None: (u, s))
    """

    init: Callable
    update: Callable


class GradientTransformationExtraArgs(GradientTransformation):
    """A GradientTransformation whose `update` also accepts keyword arguments
    (`update(updates, state, params=None, **extra_args)`), which it may ignore."""


class EmptyState(NamedTuple):
    """The state of a transformation that keeps none: a pytree with no leaves."""


def init_empty_state(params):
    """`init` of a stateless transformation: returns `EmptyState()`."""
    del params
    return EmptyState()


def with_extra_args_support(tx):
    """`tx` as a GradientTransformationExtraArgs: an `update` without `**extra_args` is
    wrapped to drop them."""
    return as_extra_args("with_extra_args_support", tx)


def as_extra_args(fname, tx):
    """`with_extra_args_support(tx)` whose error for a non-transformation names `fname`."""
    if isinstance(tx, GradientTransformationExtraArgs):
        return tx
    if not isinstance(tx, GradientTransformation):
        init, update = getattr(tx, "init", None), getattr(tx, "update", None)
        if not (callable(init) and callable(update)):
            raise user_error(TypeError, f"{fname}: expected a GradientTransformation (an "
                             f"(init, update) pair of functions), got {type(tx).__name__} "
                             f"{tx!r:.60}")
        tx = GradientTransformation(init, update)  # e.g. a MultiSteps object
        if _takes_extra_args(update):
            return GradientTransformationExtraArgs(*tx)

    def update(updates, state, params=None, **extra_args):
        del extra_args
        return tx.update(updates, state, params)

    return GradientTransformationExtraArgs(tx.init, update)


def _takes_extra_args(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def identity():
    """Leaves updates unchanged; no state.

    Example:
        >>> identity().update({'w': 1.0}, EmptyState())
        ({'w': 1.0}, EmptyState())
    """
    def update(updates, state, params=None):
        del params
        return updates, state

    return GradientTransformation(init_empty_state, update)


def set_to_zero():
    """Replaces every update by zeros of its shape and dtype (freezes parameters; use
    with `masked` or `multi_transform`-style masks)."""
    def update(updates, state, params=None):
        del params
        return tree_util.tree_map(mnp.zeros_like, updates), state

    return GradientTransformation(init_empty_state, update)


def stateless(f):
    """A stateless transformation from `f(updates, params) -> updates` (whole trees)."""
    def update(updates, state, params=None):
        del state
        return f(updates, params), EmptyState()

    return GradientTransformation(init_empty_state, update)


def stateless_with_tree_map(f):
    """A stateless transformation applying `f(g, p) -> g` leaf by leaf (`p` is None when no
    params are given)."""
    def update(updates, state, params=None):
        del state
        if params is None:
            new = tree_util.tree_map(lambda g: f(g, None), updates)
        else:
            new = tree_map_checked("stateless_with_tree_map", ("updates", "params"), f,
                                   updates, params)
        return new, EmptyState()

    return GradientTransformation(init_empty_state, update)


# ---- tree maps whose errors name the trees ----------------------------------------------

def tree_map_checked(fname, names, f, tree, *rest, is_leaf=None):
    """`tree_map(f, tree, *rest)` whose structure errors name `fname` and the trees
    (`names`), and the path where they first differ."""
    try:
        return tree_util.tree_map(f, tree, *rest, is_leaf=is_leaf)
    except ValueError as e:
        msg = str(e)
        if not msg.startswith("tree_map: structure mismatch"):
            raise
        detail = msg[len("tree_map: structure mismatch "):]
        detail = detail.replace("the first tree", names[0])
        for i, name in enumerate(names[1:]):
            detail = detail.replace(f"tree {i + 2}", name)
        raise user_error(ValueError, f"{fname}: {' and '.join(names)} differ in structure "
                         f"{detail}") from None


def _fmt(x):
    return f"{mnp.dtype(x.dtype).name}{list(x.shape)}".replace(" ", "")


def apply_updates(params, updates):
    """`params + updates` leaf by leaf, each result cast back to its parameter's dtype.

    Args:
      params: a pytree of arrays (None leaves stay None).
      updates: a pytree of the same structure, each leaf of its parameter's shape.
    Returns:
      The new params, same structure, shapes and dtypes as `params`.
    Raises:
      ValueError: the structures or a leaf's shapes differ (naming the first path).

    Example:
        >>> apply_updates({'w': mnp.ones(2)}, {'w': mnp.full(2, -0.5)})['w']
        Array([0.5, 0.5], dtype=float32)
    """
    _check_shapes("apply_updates", params, updates)

    def add(p, u):
        if p is None:
            return None
        p = mnp.asarray(p)
        return mnp.asarray(p + u).astype(p.dtype)

    return tree_map_checked("apply_updates", ("params", "updates"), add, params, updates,
                            is_leaf=lambda x: x is None)


def _check_shapes(fname, params, updates):
    tree_map_checked(fname, ("params", "updates"), lambda p, u: None, params, updates,
                     is_leaf=lambda x: x is None)
    p_leaves = tree_util.tree_leaves_with_path(params)
    u_leaves = tree_util.tree_leaves(updates)
    if len(p_leaves) != len(u_leaves):  # an update is None where its parameter is not
        def check(path, p, u):
            if p is not None and u is None:
                raise user_error(ValueError, f"{fname}: the update at "
                                 f"{tree_util.keystr(path) or 'the root'} is None but its "
                                 "parameter is an array")
        tree_util.tree_map_with_path(check, params, updates, is_leaf=lambda x: x is None)
        return
    for (path, p), u in zip(p_leaves, u_leaves, strict=True):
        ps, us = mnp.shape(p), mnp.shape(u)
        if ps != us and not _broadcasts_to(us, ps):
            raise user_error(ValueError, f"{fname}: the update at "
                             f"{tree_util.keystr(path) or 'the root'} has shape {us} but its "
                             f"parameter has shape {ps}")


def _broadcasts_to(shape, target):
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


def incremental_update(new_tensors, old_tensors, step_size):
    """`step_size * new + (1 - step_size) * old` leaf by leaf (a Polyak average step, used
    for target networks)."""
    return tree_map_checked("incremental_update", ("new_tensors", "old_tensors"),
                            lambda n, o: step_size * n + (1.0 - step_size) * o,
                            new_tensors, old_tensors)


def periodic_update(new_tensors, old_tensors, steps, update_period):
    """`new_tensors` when `steps % update_period == 0`, else `old_tensors`."""
    take = steps % update_period == 0
    return tree_map_checked("periodic_update", ("new_tensors", "old_tensors"),
                            lambda n, o: mnp.where(take, n, o), new_tensors, old_tensors)


def global_norm(updates):
    """The L2 norm of all leaves together: `sqrt(sum_i sum(|x_i|**2))` (a 0-d array).

    Example:
        >>> global_norm({'a': mnp.array([3.0]), 'b': mnp.array([4.0])})
        Array(5., dtype=float32)
    """
    leaves = tree_util.tree_leaves(updates)
    if not leaves:
        return mnp.asarray(0.0)
    total = sum(mnp.sum(_abs_sq(x)) for x in leaves)
    return mnp.sqrt(total)


def _is_complex(x):
    return np.issubdtype(np.dtype(mnp.result_type(x)), np.complexfloating)


def _abs_sq(x):
    x = mnp.asarray(x)
    if _is_complex(x):
        return mnp.real(x) ** 2 + mnp.imag(x) ** 2
    return x * x


def safe_increment(count):
    """`count + 1`, staying at the dtype's maximum instead of overflowing."""
    count = mnp.asarray(count)
    if mnp.issubdtype(count.dtype, mnp.integer):
        top = mnp.iinfo(count.dtype).max
    elif mnp.issubdtype(count.dtype, mnp.floating):
        top = mnp.finfo(count.dtype).max
    else:
        raise user_error(ValueError, f"safe_increment: cannot increment a count of dtype "
                         f"{count.dtype}; use an integer or floating dtype")
    top = mnp.asarray(top, count.dtype)
    return mnp.where(count < top, count + mnp.asarray(1, count.dtype), top)


safe_int32_increment = safe_increment


def safe_norm(x, min_norm):
    """`max(||x||_2, min_norm)` over all elements, with a zero (not NaN) gradient where
    the norm is at most `min_norm`."""
    x = mnp.asarray(x)
    norm = mnp.sqrt(mnp.sum(_abs_sq(x)))
    small = norm <= min_norm
    x = mnp.where(small, mnp.ones_like(x), x)
    return mnp.where(small, min_norm, mnp.sqrt(mnp.sum(_abs_sq(x))))


def safe_root_mean_squares(x, min_rms):
    """`max(sqrt(mean(|x|**2)), min_rms)` with a zero (not NaN) gradient below `min_rms`."""
    x = mnp.asarray(x)
    rms = mnp.sqrt(mnp.mean(_abs_sq(x)))
    small = rms <= min_rms
    x = mnp.where(small, mnp.ones_like(x), x)
    return mnp.where(small, min_rms, mnp.sqrt(mnp.mean(_abs_sq(x))))
