"""Pytrees: nested containers of leaves, with the names and semantics of jax.tree_util.

Nodes are tuple, list, dict (children in sorted-key order), None (a node with no children),
namedtuple types, collections.OrderedDict (insertion order), collections.defaultdict (sorted
keys) and types registered with `register_pytree_node`, `register_pytree_with_keys` or
`register_dataclass`. Node types match exactly (a subclass of list is a leaf); anything else
is a leaf.

Internally a structure is a nested tuple ``(handler, aux_data, children)`` per node and
``None`` per leaf; `PyTreeDef` wraps one together with its precomputed hash (dicts and
lists held as aux data are hashed through a frozen form, so every treedef hashes).

The key path entries live in tree_paths.py (re-exported here), the node handlers, the
registry and the recursions over structures in tree_nodes.py.
"""

import dataclasses
import functools

from mytorch.core.tree_nodes import (
    _add,
    _count,
    _custom_node,
    _dispatch,
    _flatten_any,
    _flatten_path,
    _fmt,
    _Mismatch,
    _qualname,
    _registry,
    _unflatten,
    _up_to,
    structure_hash,
)
from mytorch.core.tree_paths import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey

__all__ = [
    "PyTreeDef", "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey",
    "register_pytree_node", "register_pytree_with_keys", "register_dataclass", "tree_flatten",
    "tree_unflatten", "tree_leaves", "tree_structure", "tree_map", "tree_flatten_with_path",
    "tree_leaves_with_path", "tree_map_with_path", "keystr", "tree_all", "tree_reduce",
    "tree_transpose", "treedef_is_leaf", "all_leaves", "treedef_children", "treedef_tuple",
    "broadcast_prefix", "flatten_up_to",
]


# Key paths -----------------------------------------------------------------------------------

def _simple_str(k):
    for cls, attr in ((SequenceKey, "idx"), (DictKey, "key"), (GetAttrKey, "name"),
                      (FlattenedIndexKey, "key")):
        if isinstance(k, cls):
            return str(getattr(k, attr))
    return str(k)


def keystr(keys, *, simple=False, separator=""):
    """Render a key path as a string.

    Args:
        keys: a sequence of key entries, as produced by `tree_flatten_with_path`.
        simple: render each entry bare (``0``, ``a``, ``x``) instead of JAX style.
        separator: placed between entries.
    Returns:
        The rendered path; ``''`` for the empty path.

    Example:
        >>> keystr((SequenceKey(1), DictKey('b'), GetAttrKey('x')))
        "[1]['b'].x"
        >>> keystr((SequenceKey(1), DictKey('b')), simple=True, separator='/')
        '1/b'
    """
    return separator.join(_simple_str(k) if simple else str(k) for k in keys)


# Registering node types ----------------------------------------------------------------------

def register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None):
    """Register `nodetype` as a pytree node type.

    Args:
        nodetype: the class; only instances of exactly this type are nodes.
        flatten_func: ``x -> (children, aux_data)``; `aux_data` must be hashable and
            comparable, since it is part of the treedef.
        unflatten_func: ``(aux_data, children) -> x``.
        flatten_with_keys_func: optional ``x -> ([(key, child), ...], aux_data)``; without it
            children are keyed by `FlattenedIndexKey`.
    Raises:
        ValueError: if `nodetype` is already registered.

    Example:
        >>> class Box:
        ...     def __init__(self, v): self.v = v
        >>> register_pytree_node(Box, lambda b: ((b.v,), None), lambda _, c: Box(*c))
        >>> tree_leaves([Box(1), Box((2, 3))])
        [1, 2, 3]
    """
    if flatten_with_keys_func is None:
        def flatten_with_keys_func(x):
            children, aux = flatten_func(x)
            return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux
    _add(_custom_node(nodetype, flatten_func, flatten_with_keys_func, unflatten_func))


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    """Register `nodetype` as a pytree node whose children carry their own path keys.

    Args:
        nodetype: the class to register.
        flatten_with_keys: ``x -> (iterable of (key, child), aux_data)``.
        unflatten_func: ``(aux_data, children) -> x``.
        flatten_func: optional faster ``x -> (children, aux_data)``; derived when omitted.
    Raises:
        ValueError: if `nodetype` is already registered.

    Example:
        >>> class P:
        ...     def __init__(self, a): self.a = a
        >>> register_pytree_with_keys(P, lambda p: ([(GetAttrKey('a'), p.a)], None),
        ...                           lambda _, c: P(*c))
        >>> keystr(tree_leaves_with_path([P(5)])[0][0])
        '[0].a'
    """
    if flatten_func is None:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    _add(_custom_node(nodetype, flatten_func, flatten_with_keys, unflatten_func))


def register_dataclass(nodetype, data_fields=None, meta_fields=None):
    """Register a dataclass-like class: data fields are children, meta fields aux data.

    Used bare (``@register_dataclass``) on a dataclass, the init fields declared with
    ``field(metadata=dict(static=True))`` are meta fields and the rest data fields. Given one
    list, the other is the remaining init fields. Unflattening calls ``nodetype(**fields)``.

    Args:
        nodetype: the class.
        data_fields: names of the fields holding children.
        meta_fields: names of the static fields (hashable; part of the treedef).
    Returns:
        `nodetype`, so that this works as a decorator.
    Raises:
        TypeError: if fields must be inferred but `nodetype` is not a dataclass.
        ValueError: if the lists overlap or miss init fields, or `nodetype` is registered.

    Example:
        >>> @register_dataclass
        ... @dataclasses.dataclass
        ... class Pt:
        ...     x: float
        ...     tag: str = dataclasses.field(default='p', metadata=dict(static=True))
        >>> tree_flatten(Pt(1.0))
        ([1.0], PyTreeDef(CustomNode(Pt[('p',)], [*])))
    """
    init = None
    if dataclasses.is_dataclass(nodetype):
        fields = [f for f in dataclasses.fields(nodetype) if f.init]
        init = [f.name for f in fields]
        static = [f.name for f in fields if f.metadata.get("static", False)]
    if data_fields is None or meta_fields is None:
        if init is None:
            raise TypeError(f"register_dataclass: {_qualname(nodetype)} is not a dataclass; "
                            "pass data_fields and meta_fields")
        if data_fields is None:
            meta_fields = static if meta_fields is None else meta_fields
            data_fields = [n for n in init if n not in meta_fields]
        else:
            meta_fields = [n for n in init if n not in data_fields]
    data, meta = tuple(data_fields), tuple(meta_fields)
    if set(data) & set(meta):
        raise ValueError(f"register_dataclass: {sorted(set(data) & set(meta))} listed as both "
                         "data and meta fields")
    if init is not None and set(data) | set(meta) != set(init):
        raise ValueError(f"register_dataclass: data_fields {data} and meta_fields {meta} must "
                         f"together be the init fields {tuple(init)} of {nodetype.__name__}")

    def flatten(x):
        return [getattr(x, n) for n in data], tuple([getattr(x, n) for n in meta])

    def flatten_with_keys(x):
        return [(GetAttrKey(n), getattr(x, n)) for n in data], tuple([getattr(x, n) for n in meta])

    def unflatten(aux, children):
        kwargs = dict(zip(meta, aux))
        kwargs.update(zip(data, children))
        return nodetype(**kwargs)

    _add(_custom_node(nodetype, flatten, flatten_with_keys, unflatten))
    return nodetype


# Matching a structure against a tree ---------------------------------------------------------

def _describe_value(x):
    h = _dispatch[type(x)]
    if h is None:
        return f"a leaf of type {type(x).__name__}"
    children, aux = h.flatten(x)
    return h.describe(aux, len(list(children)))


def _flatten_up_to(node, tree, fname, left, right):
    if node is None:
        return [tree]
    out = []
    try:
        _up_to(node, tree, out)
    except _Mismatch as e:
        path = tuple(list(h.flatten_with_keys(x)[0])[i][0] for h, x, i in reversed(e.frames))
        n = e.node
        raise ValueError(
            f"{fname}: structure mismatch at {keystr(path) or 'the root'}: {left} has "
            f"{n[0].describe(n[1], len(n[2]))} but {right} has {_describe_value(e.x)}"
        ) from None
    return out


# PyTreeDef -----------------------------------------------------------------------------------

class PyTreeDef:
    """The immutable, hashable structure of a pytree (everything but its leaves).

    Treedefs are equal iff they have the same node types, aux data (dict keys, namedtuple
    types, registered aux data) and shape. Get one from `tree_flatten` or `tree_structure`.

    Example:
        >>> tree_structure((1, [2, 3], {'a': 4, 'b': None}))
        PyTreeDef((*, [*, *], {'a': *, 'b': None}))
    """

    __slots__ = ("_node", "_num_leaves", "_hash")

    def __new__(cls, *args, **kwargs):
        raise TypeError("PyTreeDef cannot be built directly; use tree_structure or tree_flatten")

    def __setattr__(self, name, value):
        raise AttributeError("PyTreeDef is immutable")

    __delattr__ = __setattr__

    @property
    def num_leaves(self):
        """Number of leaves."""
        return self._num_leaves

    @property
    def num_nodes(self):
        """Number of nodes, leaves and None nodes included."""
        return _count(self._node)[1]

    def children(self):
        """Treedefs of the root's children (``[]`` for a leaf or None).

        Example:
            >>> tree_structure((1, [2, 3])).children()
            [PyTreeDef(*), PyTreeDef([*, *])]
        """
        return [] if self._node is None else [_treedef(k) for k in self._node[2]]

    def node_data(self):
        """``(node_type, aux_data)`` of the root, or None if the root is a leaf."""
        return None if self._node is None else (self._node[0].type, self._node[1])

    def unflatten(self, leaves):
        """Build the pytree of this structure with `leaves` (see `tree_unflatten`)."""
        leaves = list(leaves)
        if len(leaves) != self._num_leaves:
            raise ValueError(f"Wrong number of leaves for {self!r}: expected "
                             f"{self._num_leaves}, got {len(leaves)}")
        return _unflatten(self._node, iter(leaves).__next__)

    def flatten_up_to(self, tree):
        """The subtrees of `tree` at this treedef's leaves (see `flatten_up_to`)."""
        return _flatten_up_to(self._node, tree, "flatten_up_to", "the treedef", "the tree")

    def compose(self, inner):
        """This structure with each leaf replaced by the structure `inner`.

        Example:
            >>> tree_structure((1, 2)).compose(tree_structure([0]))
            PyTreeDef(([*], [*]))
        """
        def sub(node):
            return inner._node if node is None else (node[0], node[1], tuple(map(sub, node[2])))
        return _treedef(sub(self._node), self._num_leaves * inner._num_leaves)

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return self._hash == other._hash and self._node == other._node

    def __hash__(self):  # aux data that is not hashable counts through a frozen form
        return self._hash

    def __repr__(self):
        return f"PyTreeDef({_fmt(self._node)})"


_new_object = object.__new__
_set_node, _set_num_leaves, _set_hash = (
    PyTreeDef._node.__set__, PyTreeDef._num_leaves.__set__, PyTreeDef._hash.__set__)


def _treedef(node, num_leaves=None):
    td = _new_object(PyTreeDef)
    _set_node(td, node)
    _set_num_leaves(td, _count(node)[0] if num_leaves is None else num_leaves)
    _set_hash(td, structure_hash(node))
    return td


# Public functions ----------------------------------------------------------------------------

def tree_flatten(tree, is_leaf=None):
    """Flatten a pytree into its list of leaves and its structure.

    Args:
        tree: the pytree.
        is_leaf: optional predicate; a subtree for which it returns True is taken as a leaf.
    Returns:
        ``(leaves, treedef)``.

    Example:
        >>> tree_flatten((1, {'b': 2, 'a': [3]}))
        ([1, 3, 2], PyTreeDef((*, {'a': [*], 'b': *})))
    """
    leaves, node = _flatten_any(tree, is_leaf)
    return leaves, _treedef(node, len(leaves))


def tree_unflatten(treedef, leaves):
    """Build the pytree of structure `treedef` whose leaves are `leaves`.

    Args:
        treedef: a `PyTreeDef`.
        leaves: an iterable of exactly ``treedef.num_leaves`` values.
    Returns:
        The pytree.
    Raises:
        ValueError: on a wrong number of leaves (the message gives expected and got).

    Example:
        >>> tree_unflatten(tree_structure({'a': 0, 'b': (0, 0)}), [1, 2, 3])
        {'a': 1, 'b': (2, 3)}
    """
    return treedef.unflatten(leaves)


def tree_leaves(tree, is_leaf=None):
    """The leaves of `tree` in flattening order; `is_leaf` as in `tree_flatten`.

    Example:
        >>> tree_leaves([1, None, (2, {'x': 3})])
        [1, 2, 3]
    """
    return _flatten_any(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    """The `PyTreeDef` of `tree`; `is_leaf` as in `tree_flatten`.

    Example:
        >>> tree_structure([1, (2, None)])
        PyTreeDef([*, (*, None)])
    """
    return tree_flatten(tree, is_leaf)[1]


def _rest_leaves(node, rest, fname):
    return [_flatten_up_to(node, r, fname, "the first tree", f"tree {i + 2}")
            for i, r in enumerate(rest)]


def tree_map(f, tree, *rest, is_leaf=None):
    """Apply `f` leafwise to one or more pytrees.

    `tree` fixes the structure: each tree in `rest` must have the same structure, except that
    where `tree` has a leaf it may hold any subtree, which `f` receives whole.

    Args:
        f: called as ``f(leaf, *subtrees_of_rest)`` for each leaf of `tree`.
        tree: the first pytree.
        *rest: further pytrees having `tree`'s structure as a prefix.
        is_leaf: optional predicate marking extra leaves of `tree`.
    Returns:
        A pytree with the structure of `tree` holding the results of `f`.
    Raises:
        ValueError: on a structure mismatch, naming the key path and what each side has.

    Example:
        >>> tree_map(lambda x, y: x + y, (1, {'a': 2}), (10, {'a': 20}))
        (11, {'a': 22})
        >>> tree_map(lambda x, y: (x, y), [1], [[2, 3]])
        [(1, [2, 3])]
    """
    leaves, node = _flatten_any(tree, is_leaf)
    if rest:
        out = list(map(f, leaves, *_rest_leaves(node, rest, "tree_map")))
    else:
        out = list(map(f, leaves))
    return _unflatten(node, iter(out).__next__)


def tree_flatten_with_path(tree, is_leaf=None):
    """Flatten `tree`, pairing each leaf with its key path.
    Returns:
        ``([(key_path, leaf), ...], treedef)``; a key path is a tuple of `SequenceKey`,
        `DictKey`, `GetAttrKey`, `FlattenedIndexKey` or user-defined keys.

    Example:
        >>> pairs, _ = tree_flatten_with_path({'a': [5]})
        >>> [(keystr(p), x) for p, x in pairs]
        [("['a'][0]", 5)]
    """
    out = []
    node = _flatten_path(tree, (), out, is_leaf)
    return out, _treedef(node, len(out))


def tree_leaves_with_path(tree, is_leaf=None):
    """``[(key_path, leaf), ...]`` for `tree` (see `tree_flatten_with_path`).

    Example:
        >>> tree_leaves_with_path((7,))
        [((SequenceKey(idx=0),), 7)]
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f, tree, *rest, is_leaf=None):
    """Like `tree_map`, with `f` called as ``f(key_path, leaf, *subtrees_of_rest)``.

    Example:
        >>> tree_map_with_path(lambda p, x: keystr(p), {'a': 1, 'b': (2,)})
        {'a': "['a']", 'b': ("['b'][0]",)}
    """
    pairs = []
    node = _flatten_path(tree, (), pairs, is_leaf)
    leaves = [x for _, x in pairs]
    out = list(map(f, [p for p, _ in pairs], leaves,
                   *_rest_leaves(node, rest, "tree_map_with_path")))
    return _unflatten(node, iter(out).__next__)


_NO_INIT = object()


def tree_reduce(function, tree, initializer=_NO_INIT, is_leaf=None):
    """Fold `function` over the leaves of `tree` from the left, like functools.reduce.
    Raises:
        TypeError: if `tree` has no leaves and no `initializer` is given.

    Example:
        >>> tree_reduce(lambda a, b: a + b, [1, (2, 3)], initializer=10)
        16
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INIT:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, *, is_leaf=None):
    """Whether every leaf of `tree` is truthy (True when there are no leaves).

    Example:
        >>> tree_all([True, (1, None)]), tree_all({'a': 0})
        (True, False)
    """
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turn an outer-structured tree of inner-structured trees into the converse.

    Args:
        outer_treedef: the outer structure.
        inner_treedef: the structure of each subtree at an outer leaf, or None to take the
            structure of the first such subtree.
        pytree_to_transpose: a pytree with ``outer_treedef.compose(inner_treedef)``'s structure.
    Returns:
        A pytree of structure ``inner_treedef.compose(outer_treedef)``.
    Raises:
        ValueError: if `pytree_to_transpose` does not have the composed structure.

    Example:
        >>> outer, inner = tree_structure([0, 0]), tree_structure((0, 0))
        >>> tree_transpose(outer, inner, [(1, 2), (3, 4)])
        ([1, 3], [2, 4])
    """
    if inner_treedef is None:
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
        if not subtrees:
            raise ValueError("tree_transpose: cannot infer inner_treedef: no outer leaves")
        inner_treedef = tree_structure(subtrees[0])
    full = outer_treedef.compose(inner_treedef)
    flat = _flatten_up_to(full._node, pytree_to_transpose, "tree_transpose",
                          "the composed treedef", "the tree")
    n = inner_treedef.num_leaves
    return inner_treedef.unflatten([outer_treedef.unflatten(flat[j::n]) for j in range(n)])


def treedef_is_leaf(treedef):
    """Whether `treedef` is the structure of a single leaf.

    Example:
        >>> treedef_is_leaf(tree_structure(1)), treedef_is_leaf(tree_structure(None))
        (True, False)
    """
    return treedef._node is None


def all_leaves(iterable, is_leaf=None):
    """Whether every element of `iterable` is a leaf (None is not a leaf).

    Example:
        >>> all_leaves([1, 2.0, 'x']), all_leaves([1, (2,)])
        (True, False)
    """
    for x in iterable:
        if (is_leaf is None or not is_leaf(x)) and _dispatch[type(x)] is not None:
            return False
    return True


def treedef_children(treedef):
    """The treedefs of the root's children, as ``treedef.children()``.

    Example:
        >>> treedef_children(tree_structure({'a': 1, 'b': (2, 3)}))
        [PyTreeDef(*), PyTreeDef((*, *))]
    """
    return treedef.children()


def treedef_tuple(treedefs):
    """The treedef of a tuple whose children have the given treedefs.

    Example:
        >>> treedef_tuple([tree_structure(1), tree_structure([1, 2])])
        PyTreeDef((*, [*, *]))
    """
    treedefs = list(treedefs)
    return _treedef((_registry[tuple], None, tuple(t._node for t in treedefs)),
                    sum(t._num_leaves for t in treedefs))


def flatten_up_to(treedef, full_tree):
    """The subtrees of `full_tree` at the leaf positions of `treedef`.

    Args:
        treedef: a structure that must be a prefix of `full_tree`'s.
        full_tree: the pytree to cut.
    Returns:
        A list of ``treedef.num_leaves`` subtrees.
    Raises:
        ValueError: if `treedef` is not a prefix of `full_tree`'s structure, naming the path.

    Example:
        >>> flatten_up_to(tree_structure((0, 0)), ([1, 2], {'a': 3}))
        [[1, 2], {'a': 3}]
    """
    return treedef.flatten_up_to(full_tree)


def broadcast_prefix(prefix_tree, full_tree, is_leaf=None):
    """For each leaf of `full_tree`, the leaf of `prefix_tree` whose position covers it.

    Args:
        prefix_tree: a pytree whose structure is a prefix of `full_tree`'s.
        full_tree: the pytree to broadcast against.
        is_leaf: optional predicate marking extra leaves of `prefix_tree` (e.g. None).
    Returns:
        A list with one entry per leaf of `full_tree`.
    Raises:
        ValueError: if `prefix_tree` is not a prefix of `full_tree`, naming the key path.

    Example:
        >>> broadcast_prefix((0, 1), ([5, 6], 7))
        [0, 0, 1]
    """
    return broadcast_prefix_named(prefix_tree, full_tree, is_leaf, "broadcast_prefix",
                                  "the prefix tree", "the full tree")


def broadcast_prefix_named(prefix_tree, full_tree, is_leaf, fname, left, right):
    """`broadcast_prefix` whose mismatch error says `fname: ... left has ... but right has`."""
    leaves, node = _flatten_any(prefix_tree, is_leaf)
    subtrees = _flatten_up_to(node, full_tree, fname, left, right)
    result = []
    for x, sub in zip(leaves, subtrees):
        result.extend([x] * len(tree_leaves(sub)))
    return result
