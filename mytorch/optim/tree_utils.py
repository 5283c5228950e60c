"""Pytree arithmetic for optimisers (Optax's `optax.tree_utils` names).

Every function maps leaf by leaf over pytrees of arrays; reductions return 0-d arrays.
"""

from __future__ import annotations

import mytorch.numpy as mnp
from mytorch import tree_util
from mytorch.optim.base import _abs_sq, _is_complex, tree_map_checked

__all__ = [
    "tree_add",
    "tree_add_scale",
    "tree_bias_correction",
    "tree_cast",
    "tree_cast_like",
    "tree_clip",
    "tree_div",
    "tree_full_like",
    "tree_get_all_with_path",
    "tree_l2_norm",
    "tree_max",
    "tree_min",
    "tree_mul",
    "tree_norm",
    "tree_ones_like",
    "tree_scale",
    "tree_size",
    "tree_sub",
    "tree_sum",
    "tree_update_infinity_moment",
    "tree_update_moment",
    "tree_update_moment_per_elem_norm",
    "tree_vdot",
    "tree_where",
    "tree_zeros_like",
]


def tree_zeros_like(tree, dtype=None):
    """Zeros of each leaf's shape (and dtype, unless `dtype` is given)."""
    return tree_util.tree_map(lambda x: mnp.zeros_like(x, dtype=dtype), tree)


def tree_ones_like(tree, dtype=None):
    """Ones of each leaf's shape (and dtype, unless `dtype` is given)."""
    return tree_util.tree_map(lambda x: mnp.ones_like(x, dtype=dtype), tree)


def tree_full_like(tree, fill_value, dtype=None):
    """`fill_value` in each leaf's shape (and dtype, unless `dtype` is given)."""
    return tree_util.tree_map(lambda x: mnp.full_like(x, fill_value, dtype=dtype), tree)


def tree_cast(tree, dtype):
    """Each leaf cast to `dtype`; `dtype=None` returns the tree unchanged."""
    if dtype is None:
        return tree
    return tree_util.tree_map(lambda x: mnp.asarray(x).astype(dtype), tree)


def tree_cast_like(tree, other):
    """Each leaf of `tree` cast to the dtype of the matching leaf of `other`."""
    return tree_map_checked("tree_cast_like", ("tree", "other"),
                            lambda x, o: mnp.asarray(x).astype(mnp.asarray(o).dtype),
                            tree, other)


def _binary(name, op):
    def f(tree_x, tree_y):
        return tree_map_checked(name, ("tree_x", "tree_y"), op, tree_x, tree_y)
    f.__name__ = name
    f.__doc__ = f"Leafwise `{name[5:]}` of two pytrees of the same structure."
    return f


tree_sub = _binary("tree_sub", lambda x, y: x - y)
tree_mul = _binary("tree_mul", lambda x, y: x * y)
tree_div = _binary("tree_div", lambda x, y: x / y)


def tree_add(tree_x, tree_y, *others):
    """Leafwise sum of two or more pytrees of the same structure."""
    names = ("tree_x", "tree_y") + tuple(f"tree {i + 3}" for i in range(len(others)))
    return tree_map_checked("tree_add", names, lambda *xs: sum(xs[1:], xs[0]),
                            tree_x, tree_y, *others)


def tree_scale(scalar, tree):
    """`scalar * x` for every leaf."""
    return tree_util.tree_map(lambda x: scalar * x, tree)


def tree_add_scale(tree_x, scalar, tree_y):
    """`x + scalar * y` leaf by leaf."""
    return tree_map_checked("tree_add_scale", ("tree_x", "tree_y"),
                            lambda x, y: x + scalar * y, tree_x, tree_y)


def tree_vdot(tree_x, tree_y):
    """Sum over leaves of `vdot(x, y)` (conjugating x): a 0-d array."""
    prods = tree_map_checked("tree_vdot", ("tree_x", "tree_y"),
                             lambda x, y: mnp.sum(mnp.conj(x) * y), tree_x, tree_y)
    return tree_sum(prods)


def tree_sum(tree):
    """The sum of all elements of all leaves (0 for an empty tree)."""
    leaves = tree_util.tree_leaves(tree)
    if not leaves:
        return mnp.asarray(0.0)
    return sum((mnp.sum(x) for x in leaves[1:]), mnp.sum(leaves[0]))


def tree_max(tree):
    """The largest element over all leaves (-inf for an empty tree)."""
    leaves = tree_util.tree_leaves(tree)
    if not leaves:
        return mnp.asarray(-mnp.inf)
    out = mnp.max(leaves[0])
    for x in leaves[1:]:
        out = mnp.maximum(out, mnp.max(x))
    return out


def tree_min(tree):
    """The smallest element over all leaves (inf for an empty tree)."""
    leaves = tree_util.tree_leaves(tree)
    if not leaves:
        return mnp.asarray(mnp.inf)
    out = mnp.min(leaves[0])
    for x in leaves[1:]:
        out = mnp.minimum(out, mnp.min(x))
    return out


def tree_norm(tree, ord=None, squared=False):
    """The norm of all leaves together: `ord` None/2 (L2, `squared` for its square), 1,
    or inf (largest magnitude)."""
    if ord is None or ord == 2:
        sq = tree_sum(tree_util.tree_map(_abs_sq, tree))
        return sq if squared else mnp.sqrt(sq)
    if ord == 1:
        return tree_sum(tree_util.tree_map(mnp.abs, tree))
    if ord == mnp.inf or ord in ("inf", "infinity"):
        return tree_max(tree_util.tree_map(mnp.abs, tree))
    raise ValueError(f"tree_norm: unsupported ord {ord!r}; use None, 1, 2 or inf")


def tree_l2_norm(tree, squared=False):
    """The L2 norm of all leaves together (its square with `squared`)."""
    return tree_norm(tree, squared=squared)


def tree_size(tree):
    """The total number of elements over all leaves (a Python int)."""
    return sum(int(mnp.size(x)) for x in tree_util.tree_leaves(tree))


def tree_where(condition, tree_x, tree_y):
    """`where(condition, x, y)` leaf by leaf with one scalar condition."""
    return tree_map_checked("tree_where", ("tree_x", "tree_y"),
                            lambda x, y: mnp.where(condition, x, y), tree_x, tree_y)


def tree_clip(tree, min_value=None, max_value=None):
    """Each leaf clipped to `[min_value, max_value]`."""
    return tree_util.tree_map(lambda x: mnp.clip(x, min_value, max_value), tree)


def _none_leaf(x):
    return x is None


def tree_update_moment(updates, moments, decay, order):
    """The exponential moving average `(1 - decay) * g**order + decay * m`."""
    return tree_map_checked(
        "tree_update_moment", ("updates", "moments"),
        lambda g, t: None if g is None else (1 - decay) * (g ** order) + decay * t,
        updates, moments, is_leaf=_none_leaf)


def tree_update_moment_per_elem_norm(updates, moments, decay, order):
    """The moving average of `|g|**order` (complex leaves use their modulus)."""
    def norm(g):
        if not _is_complex(g):
            return g ** order
        half = order / 2
        return _abs_sq(g) ** (int(half) if float(half).is_integer() else half)

    return tree_map_checked(
        "tree_update_moment_per_elem_norm", ("updates", "moments"),
        lambda g, t: None if g is None else (1 - decay) * norm(g) + decay * t,
        updates, moments, is_leaf=_none_leaf)


def tree_update_infinity_moment(updates, moments, decay, eps):
    """The decaying running maximum `max(|g| + eps, decay * m)` (Adamax's norm)."""
    return tree_map_checked(
        "tree_update_infinity_moment", ("updates", "moments"),
        lambda g, t: None if g is None else mnp.maximum(mnp.abs(g) + eps, decay * t),
        updates, moments, is_leaf=_none_leaf)


def tree_bias_correction(moment, decay, count):
    """`m / (1 - decay**count)` leaf by leaf; the correction is computed in float32 and
    cast to each leaf's dtype (so a bfloat16 moment stays bfloat16 without `decay**count`
    rounding to 1)."""
    correction = 1 - decay ** count
    return tree_util.tree_map(lambda t: t / mnp.asarray(correction).astype(t.dtype), moment)


def tree_get_all_with_path(tree, key):
    """All `(path, value)` pairs of `tree`'s nodes that are NamedTuples with a field
    `key` (e.g. `'count'` in an optimiser state), as `(path, getattr(node, key))`."""
    found = []

    def visit(path, node):
        if isinstance(node, tuple) and hasattr(node, "_fields"):
            if key in node._fields:
                found.append((path, getattr(node, key)))
            for name, child in zip(node._fields, node, strict=True):
                visit(path + (tree_util.GetAttrKey(name),), child)
        elif isinstance(node, (tuple, list)):
            for i, child in enumerate(node):
                visit(path + (tree_util.SequenceKey(i),), child)
        elif isinstance(node, dict):
            for k in sorted(node):
                visit(path + (tree_util.DictKey(k),), node[k])

    visit((), tree)
    return found
