"""Shared parameters and gradients for the optimiser tests (a small two-leaf pytree)."""

import numpy as np

import mytorch as mt
import mytorch.numpy as mnp

P0 = {"b": np.array([0.5, -1.0], np.float32),
      "w": np.array([[1.0, -2.0], [0.25, 3.0]], np.float32)}
GRADS = [
    {"b": np.array([0.1, -0.2], np.float32),
     "w": np.array([[0.3, -0.1], [0.05, 0.4]], np.float32)},
    {"b": np.array([-0.3, 0.1], np.float32),
     "w": np.array([[0.2, 0.2], [-0.1, 0.0]], np.float32)},
    {"b": np.array([0.05, 0.5], np.float32),
     "w": np.array([[-0.4, 0.1], [0.3, -0.2]], np.float32)},
    {"b": np.array([0.2, -0.1], np.float32),
     "w": np.array([[0.1, -0.3], [0.2, 0.1]], np.float32)},
]


def as_mt(tree, dtype=None):
    return mt.tree_util.tree_map(lambda x: mnp.asarray(x, dtype=dtype), tree)


def as_np(tree):
    return mt.tree_util.tree_map(lambda x: np.asarray(x, dtype=np.float64), tree)


def run(opt, grads=GRADS, params=P0, jit=True, dtype=None):
    """Runs `opt` over `grads` from `params`; returns (params, state) after the last step."""
    p = as_mt(params, dtype)
    state = opt.init(p)
    update = mt.jit(opt.update) if jit else opt.update
    for g in grads:
        u, state = update(as_mt(g, dtype), state, p)
        p = mt.optim.apply_updates(p, u)
    return p, state
