"""Pytree node types for mytorch.core.tree_util: the handler of each node type (builtins,
namedtuples, registered types), the registry that maps types to handlers, and the
recursions that flatten, unflatten and match structures through it."""

import collections

from mytorch.core.tree_paths import DictKey, GetAttrKey, SequenceKey

# Node handlers and the registry --------------------------------------------------------------

class _Node:
    """How one node type flattens; `ident` means flatten(x) is (x, None), as for tuples."""

    __slots__ = ("type", "flatten", "flatten_with_keys", "unflatten", "describe", "fmt", "ident",
                 "fields")

    def __init__(self, typ, flatten, flatten_with_keys, unflatten, describe, fmt, ident=False):
        self.type, self.flatten, self.flatten_with_keys = typ, flatten, flatten_with_keys
        self.unflatten, self.describe, self.fmt, self.ident = unflatten, describe, fmt, ident
        self.fields = None  # see declare_fields


_registry = {}  # explicitly registered node types (builtins included) -> _Node


class _Dispatch(dict):
    """type -> _Node, or None for a leaf type; a type is classified once, on first sight."""

    def __missing__(self, typ):
        node = _registry.get(typ)
        if node is None and issubclass(typ, tuple):
            fields = getattr(typ, "_fields", None)
            if isinstance(fields, tuple) and all(isinstance(f, str) for f in fields):
                node = _namedtuple_node(typ, fields)
        self[typ] = node
        return node


_dispatch = _Dispatch()


def _qualname(typ):
    return f"{typ.__module__}.{typ.__qualname__}"


def _add(node):
    if node.type in _registry:
        raise ValueError(f"Duplicate pytree node registration for type {_qualname(node.type)}")
    _registry[node.type] = _dispatch[node.type] = node


def _sorted_keys(d):
    try:
        return tuple(sorted(d))
    except TypeError:  # mixed key types: still deterministic
        return tuple(sorted(d, key=lambda k: (type(k).__qualname__, repr(k))))


def _dict_flatten(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], keys


def _dict_with_keys(d):
    keys = _sorted_keys(d)
    return [(DictKey(k), d[k]) for k in keys], keys


def _ddict_flatten(d):
    children, keys = _dict_flatten(d)
    return children, (d.default_factory, keys)


def _fmt_dict(keys, parts):
    return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(keys, parts)) + "}"


def _ident(x):
    return x, None


def _seq_with_keys(x):
    return [(SequenceKey(i), c) for i, c in enumerate(x)], None


_add(_Node(tuple, _ident, _seq_with_keys, lambda _, c: tuple(c),
           lambda _, n: f"a tuple of length {n}",
           lambda _, p: "(" + ", ".join(p) + ("," if len(p) == 1 else "") + ")", ident=True))
_add(_Node(list, _ident, _seq_with_keys, lambda _, c: list(c),
           lambda _, n: f"a list of length {n}", lambda _, p: "[" + ", ".join(p) + "]",
           ident=True))
_add(_Node(dict, _dict_flatten, _dict_with_keys, lambda keys, c: dict(zip(keys, c)),
           lambda keys, _: f"a dict with keys {keys!r}", _fmt_dict))
_add(_Node(type(None), lambda x: ((), None), lambda x: ((), None), lambda _, c: None,
           lambda _, n: "None", lambda _, p: "None"))
_add(_Node(collections.OrderedDict, lambda d: (list(d.values()), tuple(d)),
           lambda d: ([(DictKey(k), v) for k, v in d.items()], tuple(d)),
           lambda keys, c: collections.OrderedDict(zip(keys, c)),
           lambda keys, _: f"an OrderedDict with keys {keys!r}",
           lambda keys, p: f"OrderedDict({_fmt_dict(keys, p)})"))
_add(_Node(collections.defaultdict, _ddict_flatten,
           lambda d: (_dict_with_keys(d)[0], (d.default_factory, _sorted_keys(d))),
           lambda aux, c: collections.defaultdict(aux[0], zip(aux[1], c)),
           lambda aux, _: f"a defaultdict with keys {aux[1]!r}",
           lambda aux, p: f"defaultdict({getattr(aux[0], '__name__', repr(aux[0]))}, "
                          f"{_fmt_dict(aux[1], p)})"))
_DICT_NODE = _registry[dict]


def declare_fields(typ, data, meta):
    """Declare that the registered node type `typ` flattens as ``([x.__dict__[n] for n in
    data], tuple(x.__dict__[n] for n in meta))`` and unflattens to a new instance (made
    without ``__init__``) whose ``__dict__`` holds the meta then the data fields, so that
    generated code (jit_trees) may read and build its instances directly."""
    _registry[typ].fields = (tuple(data), tuple(meta))


def _namedtuple_node(typ, fields):
    return _Node(
        typ, _ident, lambda x: ([(GetAttrKey(f), c) for f, c in zip(fields, x)], None),
        lambda _, c: typ(*c), lambda _, n: f"a namedtuple {typ.__name__} with fields {fields!r}",
        lambda _, p: f"{typ.__name__}(" + ", ".join(f"{f}={s}" for f, s in zip(fields, p)) + ")",
        ident=True)


def _custom_node(typ, flatten, flatten_with_keys, unflatten):
    name = typ.__name__
    return _Node(typ, flatten, flatten_with_keys, unflatten,
                 lambda aux, n: f"a {name} node with {n} children and aux data {aux!r}",
                 lambda aux, p: f"CustomNode({name}[{aux!r}], [{', '.join(p)}])")


# Recursions over structures (explicit loops: faster than comprehensions here) ---------------

def _flatten(x, leaves):
    node = _dispatch[type(x)]
    if node is None:
        leaves.append(x)
        return None
    if node.ident:
        children, aux = x, None
    elif node is _DICT_NODE:
        try:
            aux = tuple(sorted(x))
        except TypeError:
            aux = _sorted_keys(x)
        children = map(x.__getitem__, aux)
    else:
        children, aux = node.flatten(x)
    kids = []
    for c in children:
        kids.append(_flatten(c, leaves))
    return (node, aux, tuple(kids))


def _flatten_is_leaf(x, leaves, is_leaf):
    node = None if is_leaf(x) else _dispatch[type(x)]
    if node is None:
        leaves.append(x)
        return None
    children, aux = node.flatten(x)
    kids = []
    for c in children:
        kids.append(_flatten_is_leaf(c, leaves, is_leaf))
    return (node, aux, tuple(kids))


def _flatten_path(x, path, out, is_leaf):
    node = None if is_leaf is not None and is_leaf(x) else _dispatch[type(x)]
    if node is None:
        out.append((path, x))
        return None
    pairs, aux = node.flatten_with_keys(x)
    return (node, aux, tuple([_flatten_path(c, path + (k,), out, is_leaf) for k, c in pairs]))


def _flatten_any(tree, is_leaf):
    leaves = []
    node = _flatten(tree, leaves) if is_leaf is None else _flatten_is_leaf(tree, leaves, is_leaf)
    return leaves, node


def _unflatten(node, nxt):
    if node is None:
        return nxt()
    h, aux, kids = node
    children = []
    for k in kids:
        children.append(nxt() if k is None else _unflatten(k, nxt))
    return h.unflatten(aux, children)


def _count(node):
    """``(num_leaves, num_nodes)`` of a structure."""
    if node is None:
        return 1, 1
    leaves = nodes = 0
    for k in node[2]:
        a, b = _count(k)
        leaves, nodes = leaves + a, nodes + b
    return leaves, nodes + 1


def _fmt(node):
    return "*" if node is None else node[0].fmt(node[1], [_fmt(k) for k in node[2]])


class _Mismatch(Exception):
    def __init__(self, node, x):
        super().__init__()
        self.node, self.x, self.frames = node, x, []


def _up_to(node, x, out):
    h, aux, kids = node
    if _dispatch[type(x)] is not h:
        raise _Mismatch(node, x)
    if h.ident:
        children = x
    else:
        children, xaux = h.flatten(x)
        children = list(children)
        if xaux != aux:
            raise _Mismatch(node, x)
    if len(children) != len(kids):
        raise _Mismatch(node, x)
    i = 0
    try:
        for k in kids:
            if k is None:
                out.append(children[i])
            else:
                _up_to(k, children[i], out)
            i += 1
    except _Mismatch as e:
        e.frames.append((h, x, i))
        raise


# Hashing structures ---------------------------------------------------------------------------

def structure_hash(node):
    """A hash of a structure consistent with its equality, also when aux data is not
    hashable (a dict or list a registered type keeps as its aux data): such values are
    hashed through a canonical frozen form (a dict as the frozenset of its items, a list as
    a tuple); other unhashable values by their type alone, leaving the rest to equality."""
    try:
        return hash(node)
    except TypeError:
        pass
    if node is None:
        return hash(None)
    h, aux, kids = node
    return hash((h, _frozen_hash(aux), tuple(structure_hash(k) for k in kids)))


def _frozen_hash(x):
    try:
        return hash(x)
    except TypeError:
        pass
    if isinstance(x, dict):  # keys are hashable; a dict equals an OrderedDict of its items
        return hash(("dict", frozenset((k, _frozen_hash(v)) for k, v in x.items())))
    if isinstance(x, (list, tuple)):  # a tuple equals a namedtuple of its items
        return hash((type(x) is list, tuple(_frozen_hash(v) for v in x)))
    if isinstance(x, (set, frozenset)):
        return hash(frozenset(x))
    return hash(type(x).__qualname__)
