"""`mytorch.tree`: the short pytree namespace (``mt.tree.map``, ``mt.tree.leaves``, ...).

The same functions as `mytorch.tree_util`, under the names `jax.tree` uses, so code written
as ``jax.tree.map(f, params)`` ports by changing the import.
"""

from mytorch.core import tree_util as _tu

__all__ = [
    "all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map",
    "map_with_path", "reduce", "structure", "transpose", "unflatten",
]

flatten = _tu.tree_flatten
unflatten = _tu.tree_unflatten
leaves = _tu.tree_leaves
structure = _tu.tree_structure
map = _tu.tree_map  # noqa: A001  (the name jax.tree uses)
reduce = _tu.tree_reduce
all = _tu.tree_all  # noqa: A001
transpose = _tu.tree_transpose
flatten_with_path = _tu.tree_flatten_with_path
leaves_with_path = _tu.tree_leaves_with_path
map_with_path = _tu.tree_map_with_path


def broadcast(prefix_tree, full_tree, is_leaf=None):
    """`prefix_tree` repeated so that it has `full_tree`'s structure.

    Each leaf of `prefix_tree` is copied to every leaf of the subtree of `full_tree` at its
    position.

    Raises:
        ValueError: if `prefix_tree`'s structure is not a prefix of `full_tree`'s.

    Example:
        >>> broadcast((0, 1), ([5, 6], 7))
        ([0, 0], 1)
    """
    leaves_ = _tu.broadcast_prefix_named(prefix_tree, full_tree, is_leaf, "tree.broadcast",
                                         "the prefix tree", "the full tree")
    return _tu.tree_structure(full_tree).unflatten(leaves_)
