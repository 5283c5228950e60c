"""The reference for vmap tests: the loop definition.

`check_vmap(f, args, in_axes, out_axes)` compares `vmap(f, in_axes, out_axes)(*args)`
with `stack([f(*example_i) for i in range(n)], axis=out_axes)` computed one example at a
time, and with the same vmap traced by make_jaxpr and evaluated (the abstract path).
Arguments are NumPy arrays (or Python scalars for unmapped ones); f takes and returns
mytorch arrays, or tuples/lists of them.
"""

import numpy as np

import mytorch as mt
from mytorch.core import tree_util


def _take(a, i, axis):
    return a if axis is None else np.take(np.asarray(a), i, axis=axis)


def _as_np(x):
    return np.asarray(x)


def loop_reference(f, args, in_axes, out_axes, size=None):
    """The stacked per-example results of f (a pytree of NumPy arrays)."""
    if not isinstance(in_axes, (tuple, list)):
        in_axes = (in_axes,) * len(args)
    if size is None:
        size = next(np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None)
    per = [tree_util.tree_map(_as_np, f(*[_take(a, i, d) for a, d in zip(args, in_axes)]))
           for i in range(size)]
    if size == 0:
        return None
    leaves0, tree = tree_util.tree_flatten(per[0])
    outs_axes = out_axes if isinstance(out_axes, (tuple, list)) else (out_axes,) * len(leaves0)
    stacked = []
    for k in range(len(leaves0)):
        items = [tree_util.tree_leaves(p)[k] for p in per]
        ax = outs_axes[k]
        if ax is None:
            stacked.append(items[0])
        else:
            stacked.append(np.stack(items, axis=ax))
    return tree_util.tree_unflatten(tree, stacked)


def assert_tree_close(got, want, rtol=1e-5, atol=1e-6, check_dtype=True):
    g_leaves, g_tree = tree_util.tree_flatten(got)
    w_leaves, w_tree = tree_util.tree_flatten(want)
    assert g_tree == w_tree, f"structure {g_tree} != {w_tree}"
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"shape {g.shape} != {w.shape}"
        if check_dtype:
            assert g.dtype == w.dtype, f"dtype {g.dtype} != {w.dtype}"
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:  # floats, including float16 and bfloat16 (compared in float64)
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                       rtol=rtol, atol=atol, equal_nan=True)


def check_vmap(f, args, in_axes=0, out_axes=0, rtol=1e-5, atol=1e-6, size=None,
               check_dtype=True):
    """vmap(f) agrees with the loop of f, eagerly and through make_jaxpr."""
    vf = mt.vmap(f, in_axes=in_axes, out_axes=out_axes, axis_size=size)
    got = vf(*args)
    want = loop_reference(f, args, in_axes, out_axes, size)
    if want is None:  # size 0: only shapes can be compared
        return got
    assert_tree_close(got, want, rtol, atol, check_dtype)
    closed = mt.make_jaxpr(vf)(*args)
    flat = [mt.numpy.asarray(a) for a in tree_util.tree_leaves(args)]
    staged = mt.eval_jaxpr(closed.jaxpr, closed.consts, *flat)
    assert_tree_close(staged, tree_util.tree_leaves(want), rtol, atol, check_dtype)
    return got
