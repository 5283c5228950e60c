"""Memory-saving second-moment estimates: Adafactor's factored RMS and SM3 (Optax's names
and formulas)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax, tree_util
from mytorch.optim import transforms as T
from mytorch.optim import tree_utils as tu
from mytorch.optim.base import GradientTransformation, _abs_sq, safe_increment
from mytorch.optim.clipping import clip_by_block_rms
from mytorch.optim.variants import ema
from mytorch.optim.wrappers import chain

__all__ = [
    "FactoredState",
    "ScaleBySM3State",
    "adafactor",
    "scale_by_factored_rms",
    "scale_by_sm3",
    "sm3",
]


class FactoredState(NamedTuple):
    """Adafactor: the step `count` (int32) and, per parameter, the row and column
    statistics `v_row`, `v_col` of a factored leaf or the full `v` of an unfactored one
    (the unused slots hold a `[1]`-shaped zero)."""
    count: Any
    v_row: Any
    v_col: Any
    v: Any


def _decay_rate_pow(i, exponent=0.8):
    t = mnp.asarray(i + 1, mnp.float32)
    return 1.0 - t ** (-exponent)


def _factored_dims(shape, factored, min_dim_size_to_factor):
    """The two largest axes (second largest first), or None when the leaf is not
    factored (rank < 2 or the second largest side below the threshold)."""
    if not factored or len(shape) < 2:
        return None
    order = np.argsort(shape)
    if shape[order[-2]] < min_dim_size_to_factor:
        return None
    return int(order[-2]), int(order[-1])


def scale_by_factored_rms(factored=True, decay_rate=0.8, step_offset=0,
                          min_dim_size_to_factor=128, epsilon=1e-30,
                          decay_rate_fn=_decay_rate_pow):
    """Adafactor's rescaling: for a matrix-like leaf (two sides >= `min_dim_size_to_factor`)
    the second moment is the outer product of its row and column moving averages;
    otherwise a full moving average. The decay at step t is `decay_rate_fn(t, decay_rate)`
    (`1 - (t + 1)**-0.8` by default). Needs params."""
    def init(params):
        def one(p):
            p = mnp.asarray(p)
            dims = _factored_dims(p.shape, factored, min_dim_size_to_factor)
            pad = mnp.zeros((1,), p.dtype)
            if dims is None:
                return (pad, pad, mnp.zeros_like(p))
            d1, d0 = dims
            row = mnp.zeros(tuple(s for i, s in enumerate(p.shape) if i != d0), p.dtype)
            col = mnp.zeros(tuple(s for i, s in enumerate(p.shape) if i != d1), p.dtype)
            return (row, col, pad)

        return _to_state(mnp.zeros([], mnp.int32), params, tree_util.tree_map(one, params))

    def update(grads, state, params=None):
        T._need_params("scale_by_factored_rms", params)
        decay = decay_rate_fn(state.count - step_offset, decay_rate)

        def one(g, v_row, v_col, v, p):
            dtype = p.dtype
            pad = mnp.zeros((1,), dtype)
            g_sq = _abs_sq(g) + epsilon
            dims = _factored_dims(p.shape, factored, min_dim_size_to_factor)
            if dims is None:
                new_v = (decay * v + (1.0 - decay) * g_sq).astype(dtype)
                return g * new_v ** -0.5, pad, pad, new_v
            d1, d0 = dims
            new_row = (decay * v_row + (1.0 - decay) * mnp.mean(g_sq, axis=d0)).astype(dtype)
            new_col = (decay * v_col + (1.0 - decay) * mnp.mean(g_sq, axis=d1)).astype(dtype)
            reduced_d1 = d1 - 1 if d1 > d0 else d1
            row_factor = (new_row / mnp.mean(new_row, axis=reduced_d1, keepdims=True)) ** -0.5
            col_factor = new_col ** -0.5
            u = g * mnp.expand_dims(row_factor, d0) * mnp.expand_dims(col_factor, d1)
            return u, new_row, new_col, pad

        out = tree_util.tree_map(lambda g, r, c, v, p: one(g, r, c, v, mnp.asarray(p)),
                                 grads, state.v_row, state.v_col, state.v, params)
        leaves_struct = tree_util.tree_structure(grads)
        outs = leaves_struct.flatten_up_to(out)
        updates = tree_util.tree_unflatten(leaves_struct, [o[0] for o in outs])
        return updates, _to_state(safe_increment(state.count), grads,
                                  tree_util.tree_unflatten(leaves_struct,
                                                           [o[1:] for o in outs]))

    return GradientTransformation(init, update)


def _to_state(count, like, per_leaf):
    treedef = tree_util.tree_structure(like)
    parts = treedef.flatten_up_to(per_leaf)
    return FactoredState(count=count,
                         v_row=tree_util.tree_unflatten(treedef, [x[0] for x in parts]),
                         v_col=tree_util.tree_unflatten(treedef, [x[1] for x in parts]),
                         v=tree_util.tree_unflatten(treedef, [x[-1] for x in parts]))


def adafactor(learning_rate=None, min_dim_size_to_factor=128, decay_rate=0.8,
              decay_offset=0, multiply_by_parameter_scale=True, clipping_threshold=1.0,
              momentum=None, dtype_momentum=mnp.float32, weight_decay_rate=None, eps=1e-30,
              factored=True, weight_decay_mask=None):
    """Adafactor: factored second moments, update clipping by block RMS, steps relative to
    each parameter's RMS (`multiply_by_parameter_scale`), optional momentum and weight
    decay. Needs params in `update`."""
    txs = [scale_by_factored_rms(factored, decay_rate, decay_offset, min_dim_size_to_factor,
                                 eps)]
    if clipping_threshold is not None:
        txs.append(clip_by_block_rms(clipping_threshold))
    if learning_rate is not None:
        txs.append(T.scale_by_learning_rate(learning_rate, flip_sign=False))
    if multiply_by_parameter_scale:
        txs.append(T.scale_by_param_block_rms())
    if momentum is not None:
        txs.append(ema(momentum, debias=False, accumulator_dtype=dtype_momentum))
    if weight_decay_rate is not None:
        txs.append(T.add_decayed_weights(weight_decay_rate, mask=weight_decay_mask))
    txs.append(T.scale(-1))
    return chain(*txs)


class ScaleBySM3State(NamedTuple):
    """SM3: per leaf, a list of one accumulator per axis (`mu`) and the momentum `nu`."""
    mu: Any
    nu: Any


def scale_by_sm3(b1=0.9, b2=1.0, eps=1e-8):
    """SM3's rescaling: the second moment of each element is bounded by the minimum of
    per-axis maxima (one vector per axis instead of a full accumulator), then momentum
    `b1` on the rescaled update."""
    def init(params):
        def per_axis(p):
            p = mnp.asarray(p)
            return [mnp.zeros((p.shape[i],), p.dtype) for i in range(p.ndim)]
        return ScaleBySM3State(tree_util.tree_map(per_axis, params),
                               tu.tree_zeros_like(params))

    def accum(g, vs):
        c0, c1 = ((1.0 - b2) if b2 != 1.0 else 1.0), b2
        if g.ndim < 2:
            return c0 * g ** 2 + c1 * vs[0]
        low = vs[0]
        for v in vs[1:]:
            low = mnp.minimum(low, v)
        return c0 * g ** 2 + c1 * low

    def update(updates, state, params=None):
        del params
        leaves, treedef = tree_util.tree_flatten(updates)
        mus = treedef.flatten_up_to(state.mu)
        nus = tree_util.tree_leaves(state.nu)
        new_mu, new_nu, out = [], [], []
        for g, mu, nu in zip(leaves, mus, nus, strict=True):
            shaped = [mnp.reshape(mu[i], [1] * i + [g.shape[i]] + [1] * (g.ndim - i - 1))
                      for i in range(g.ndim)]
            acc = accum(g, shaped) if g.ndim else g ** 2
            inv = mnp.where(acc > 0, lax.rsqrt(acc + eps), 0.0)
            n = (1 - b1) * (g * inv) + b1 * nu
            out.append(n)
            new_nu.append(n)
            if g.ndim < 2:
                new_mu.append([acc] if g.ndim else [])
            else:
                new_mu.append([mnp.max(acc, axis=tuple(j for j in range(g.ndim) if j != i))
                               for i in range(g.ndim)])
        return tree_util.tree_unflatten(treedef, out), ScaleBySM3State(
            tree_util.tree_unflatten(treedef, new_mu), tree_util.tree_unflatten(treedef, new_nu))

    return GradientTransformation(init, update)


def sm3(learning_rate, momentum=0.9):
    """SM3 with a constant learning rate: `chain(scale_by_sm3(momentum), scale(-lr))`."""
    return chain(scale_by_sm3(momentum), T.scale(-learning_rate))
