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
    "tree_get",
    "tree_get_all_with_path",
    "tree_l2_norm",
    "tree_max",
    "tree_min",
    "tree_mul",
    "tree_norm",
    "tree_ones_like",
    "tree_scale",
    "tree_set",
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


def _children(node):
    """(key entry, name, child) triples of a container node, or None for a leaf."""
    if isinstance(node, tuple) and hasattr(node, "_fields"):
        return [(tree_util.GetAttrKey(f), f, c) for f, c in zip(node._fields, node, strict=True)]
    if isinstance(node, (tuple, list)):
        return [(tree_util.SequenceKey(i), None, c) for i, c in enumerate(node)]
    if isinstance(node, dict):
        return [(tree_util.DictKey(k), k, node[k]) for k in sorted(node)]
    return None


def tree_get_all_with_path(tree, key, filtering=None):
    """All `(path, value)` pairs in `tree` under the dict key or NamedTuple field `key`
    (or whose NamedTuple type is named `key`), e.g. `'count'` or `'learning_rate'` in an
    optimiser state; `filtering(path, value) -> bool` narrows them."""
    found = []

    def visit(path, node):
        named = isinstance(node, tuple) and hasattr(node, "_fields")
        if named and type(node).__name__ == key and (filtering is None or filtering(path, node)):
            found.append((path, node))
        for entry, name, child in _children(node) or ():
            if name == key and (filtering is None or filtering(path + (entry,), child)):
                found.append((path + (entry,), child))
            visit(path + (entry,), child)

    visit((), tree)
    return found


def tree_get(tree, key, default=None, filtering=None):
    """The one value under `key` in `tree` (see `tree_get_all_with_path`), or `default`
    when there is none.

    Raises:
      KeyError: `key` occurs more than once.
    """
    found = tree_get_all_with_path(tree, key, filtering)
    if len(found) > 1:
        paths = ", ".join(tree_util.keystr(p) for p, _ in found)
        raise KeyError(f"tree_get: {key!r} occurs {len(found)} times ({paths}); pass "
                       "filtering= to choose one")
    return found[0][1] if found else default


def tree_set(tree, filtering=None, /, **kwargs):
    """A copy of `tree` where every value under each key of `kwargs` is replaced by the
    given value (e.g. `tree_set(state, learning_rate=mnp.asarray(1e-4))`).

    Raises:
      KeyError: a key occurs nowhere in `tree`.
    """
    for key in kwargs:
        if not tree_get_all_with_path(tree, key, filtering):
            raise KeyError(f"tree_set: {key!r} is not a key or field of the tree")

    def rebuild(path, node):
        children = _children(node)
        if children is None:
            return node
        new = []
        for entry, name, child in children:
            if name in kwargs and (filtering is None or filtering(path + (entry,), child)):
                new.append(kwargs[name])
            else:
                new.append(rebuild(path + (entry,), child))
        if isinstance(node, dict):
            return {entry.key: v for (entry, _, _), v in zip(children, new, strict=True)}
        if hasattr(node, "_fields"):
            return type(node)(*new)
        return type(node)(new)

    return rebuild((), tree)
