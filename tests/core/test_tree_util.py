"""Tests for mytorch.core.tree_util.

The helpers below (kind, children_of, same_structure, rebuild, ...) describe pytree structure
independently of the module under test, so that its results can be checked against them.
"""

import ast
import collections
import dataclasses
import doctest
import re
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from mytorch.core import tree_util as tu
from mytorch.core.tree_util import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    PyTreeDef,
    SequenceKey,
    all_leaves,
    broadcast_prefix,
    flatten_up_to,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_with_keys,
    tree_all,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_structure,
    tree_transpose,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
    treedef_tuple,
)

settings.register_profile(
    "tree_util", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("tree_util")
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


# Node types used in the trees -----------------------------------------------------------------

class Point(NamedTuple):
    x: Any
    y: Any


class Other(NamedTuple):  # same fields as Point, different type
    x: Any
    y: Any


class Box:
    """A registered custom node: children are `items`, aux data is `tag`."""

    def __init__(self, items, tag):
        self.items, self.tag = list(items), tag

    def __eq__(self, other):
        return type(other) is Box and self.items == other.items and self.tag == other.tag

    __hash__ = None

    def __repr__(self):
        return f"Box({self.items!r}, {self.tag!r})"


register_pytree_node(Box, lambda b: (b.items, b.tag), lambda tag, ch: Box(ch, tag))


@register_dataclass
@dataclasses.dataclass
class DC:
    a: Any
    b: Any
    name: str = dataclasses.field(default="dc", metadata=dict(static=True))


class Label:
    """An unregistered leaf type."""

    def __init__(self, *v):
        self.v = v

    def __eq__(self, other):
        return type(other) is Label and self.v == other.v

    def __hash__(self):
        return hash(self.v)

    def __repr__(self):
        return f"Label{self.v!r}"


# An independent model of pytree structure ---------------------------------------------------

_KINDS = {tuple: "tuple", list: "list", dict: "dict", type(None): "none", Point: "point",
          Other: "other", collections.OrderedDict: "odict", collections.defaultdict: "ddict",
          Box: "box", DC: "dc"}


def kind(t):
    return _KINDS.get(type(t))


def children_of(t):
    """([(token, child), ...], aux) in flattening order; tokens are (kind, value) pairs."""
    k = kind(t)
    if k in ("tuple", "list"):
        return [(("idx", i), c) for i, c in enumerate(t)], len(t)
    if k in ("dict", "ddict"):
        keys = sorted(t)
        aux = tuple(keys) if k == "dict" else (t.default_factory, tuple(keys))
        return [(("key", key), t[key]) for key in keys], aux
    if k == "odict":
        return [(("key", key), v) for key, v in t.items()], tuple(t)
    if k in ("point", "other"):
        return [(("attr", "x"), t.x), (("attr", "y"), t.y)], None
    if k == "box":
        return [(("flat", i), c) for i, c in enumerate(t.items)], t.tag
    if k == "dc":
        return [(("attr", "a"), t.a), (("attr", "b"), t.b)], t.name
    assert k == "none"
    return [], None


def rebuild(t, new):
    """A node of the same kind and aux data as `t` with children `new`."""
    k = kind(t)
    keys = [tok[1] for tok, _ in children_of(t)[0]]
    if k == "tuple":
        return tuple(new)
    if k == "list":
        return list(new)
    if k == "dict":
        return dict(zip(keys, new))
    if k == "odict":
        return collections.OrderedDict(zip(keys, new))
    if k == "ddict":
        return collections.defaultdict(t.default_factory, zip(keys, new))
    if k in ("point", "other"):
        return type(t)(*new)
    if k == "box":
        return Box(new, t.tag)
    if k == "dc":
        return DC(*new, name=t.name)
    return None


def same_structure(a, b):
    if kind(a) != kind(b):
        return False
    if kind(a) is None:
        return True
    (ca, auxa), (cb, auxb) = children_of(a), children_of(b)
    return (auxa == auxb and len(ca) == len(cb)
            and all(same_structure(x, y) for (_, x), (_, y) in zip(ca, cb)))


def top_sig(t):
    if kind(t) is None:
        return None
    ch, aux = children_of(t)
    return kind(t), aux, len(ch)


def walk(t, path=(), stop=lambda x: False):
    """Yield (path_tokens, subtree, is_leaf) for every position of `t`, in preorder."""
    if kind(t) is None or stop(t):
        yield path, t, True
        return
    yield path, t, False
    for tok, c in children_of(t)[0]:
        yield from walk(c, path + (tok,), stop)


def expected_leaves(t, stop=lambda x: False):
    return [(p, x) for p, x, is_leaf in walk(t, stop=stop) if is_leaf]


def relabel(t, fn, path=()):
    """`t` with every leaf x at path p replaced by fn(p, x)."""
    if kind(t) is None:
        return fn(path, t)
    return rebuild(t, [relabel(c, fn, path + (tok,)) for tok, c in children_of(t)[0]])


def replace_at(t, path, new):
    if not path:
        return new
    return rebuild(t, [replace_at(c, path[1:], new) if tok == path[0] else c
                       for tok, c in children_of(t)[0]])


def get_at(t, path):
    for kind_, v in path:
        if kind_ == "idx":
            t = t[v]
        elif kind_ == "key":
            t = t[v]
        elif kind_ == "attr":
            t = getattr(t, v)
        else:
            t = t.items[v]
    return t


def assert_same_objects(orig, res):
    """`res` rebuilt from `orig`: same types everywhere, canonical key order, same leaves."""
    assert type(res) is type(orig)
    k = kind(orig)
    if k is None:
        assert res is orig
        return
    if k in ("dict", "ddict"):
        assert list(res) == sorted(orig)
    if k == "odict":
        assert list(res) == list(orig)
    if k == "ddict":
        assert res.default_factory is orig.default_factory
    (co, auxo), (cr, auxr) = children_of(orig), children_of(res)
    assert auxo == auxr and len(co) == len(cr)
    for (_, x), (_, y) in zip(co, cr):
        assert_same_objects(x, y)


_TOKEN = re.compile(r"\.(\w+)|\[<flat index (\d+)>\]|\[(-?\d+)\]")


def parse_keystr(s):
    """Parse a JAX-style key string such as "[0]['a'].x[<flat index 1>]" into tokens."""
    out, i = [], 0
    while i < len(s):
        if s[i] == "[" and s[i + 1] in "'\"":
            quote, j = s[i + 1], i + 2
            while s[j] != quote:
                j += 2 if s[j] == "\\" else 1
            assert s[j + 1] == "]", s
            out.append(("key", ast.literal_eval(s[i + 1:j + 1])))
            i = j + 2
            continue
        m = _TOKEN.match(s, i)
        assert m, f"cannot parse {s!r} at {i}"
        if m.group(1) is not None:
            out.append(("attr", m.group(1)))
        elif m.group(2) is not None:
            out.append(("flat", int(m.group(2))))
        else:
            out.append(("idx", int(m.group(3))))
        i = m.end()
    return tuple(out)


def render(tokens):
    fmt = {"idx": "[{!r}]", "key": "[{!r}]", "attr": ".{}", "flat": "[<flat index {}>]"}
    return "".join(fmt[k].format(v) for k, v in tokens)


def describe(t):
    k = kind(t)
    if k is None:
        return f"a leaf of type {type(t).__name__}"
    names = {"tuple": "a tuple", "list": "a list"}
    if k in names:
        return f"{names[k]} of length {len(t)}"
    if k in ("dict", "ddict"):
        return f"a {'dict' if k == 'dict' else 'defaultdict'} with keys {tuple(sorted(t))!r}"
    if k == "odict":
        return f"an OrderedDict with keys {tuple(t)!r}"
    if k in ("point", "other"):
        return f"a namedtuple {type(t).__name__} with fields ('x', 'y')"
    if k == "box":
        return f"a Box node with {len(t.items)} children and aux data {t.tag!r}"
    if k == "dc":
        return f"a DC node with 2 children and aux data {(t.name,)!r}"
    return "None"


# Strategies ------------------------------------------------------------------------------------

KEYS = st.text(alphabet="ab'\"[]. \\", max_size=3)


def make_trees(leaf, keys=KEYS, max_leaves=12, size=3):
    def extend(ch):
        return st.one_of(
            st.lists(ch, max_size=size).map(tuple),
            st.lists(ch, max_size=size),
            st.dictionaries(keys, ch, max_size=size),
            st.builds(Point, ch, ch),
            st.builds(Other, ch, ch),
            st.lists(st.tuples(keys, ch), max_size=size, unique_by=lambda kv: kv[0]).map(
                collections.OrderedDict),
            st.dictionaries(keys, ch, max_size=size).map(
                lambda d: collections.defaultdict(list, d)),
            st.builds(Box, st.lists(ch, max_size=size), st.sampled_from(["p", "q"])),
            st.builds(DC, ch, ch, st.sampled_from(["u", "v"])),
        )
    return st.recursive(st.one_of(leaf, st.none()), extend, max_leaves=max_leaves)


NUMBERS = st.one_of(st.integers(), st.floats(allow_nan=False))
TREES = make_trees(NUMBERS)
INT_TREES = make_trees(st.integers(-1000, 1000))
SUBTREES = make_trees(NUMBERS, max_leaves=4)
SMALL_TREES = make_trees(st.just(0), st.sampled_from(["a", "b"]), max_leaves=3, size=2)


# Properties ------------------------------------------------------------------------------------

@given(TREES)
def test_flatten_unflatten_roundtrip(t):
    leaves, td = tree_flatten(t)
    assert [x for _, x in expected_leaves(t)] == leaves
    assert all(x is y for (_, x), y in zip(expected_leaves(t), leaves))
    assert td.num_leaves == len(leaves)
    assert td.num_nodes == sum(1 for _ in walk(t))
    res = tree_unflatten(td, leaves)
    assert res == t
    assert_same_objects(t, res)
    assert tree_leaves(t) == leaves
    assert tree_structure(t) == td


@given(SMALL_TREES, SMALL_TREES)
def test_treedef_equality_iff_same_structure(a, b):
    ta, tb = tree_structure(a), tree_structure(b)
    same = same_structure(a, b)
    note(f"same={same}")
    assert (ta == tb) is same
    assert (ta != tb) is not same
    if same:
        assert hash(ta) == hash(tb)
        assert repr(ta) == repr(tb)


@given(TREES)
def test_relabelled_tree_has_equal_treedef(t):
    u = relabel(t, lambda p, x: Label(p))
    assert tree_structure(u) == tree_structure(t)
    assert hash(tree_structure(u)) == hash(tree_structure(t))
    assert {tree_structure(u): 1}[tree_structure(t)] == 1


def test_treedef_equality_examples():
    td = tree_structure
    assert td((1, [2, 3])) == td(("x", ["y", Label()]))
    assert td({"a": 1, "b": 2}) == td({"b": 0, "a": 0})
    assert td({"a": 1}) != td({"b": 1})
    assert td((1, 2)) != td([1, 2])
    assert td(None) != td(1)
    assert td(Point(1, 2)) != td(Other(1, 2))
    assert td(Point(1, 2)) != td((1, 2))
    assert td(Box([1], "p")) != td(Box([1], "q"))
    assert td(DC(1, 2, "u")) != td(DC(1, 2, "v"))
    od = collections.OrderedDict
    assert td(od(a=1, b=2)) != td(od(b=1, a=2))
    assert td(od(a=1)) != td({"a": 1})
    assert td(collections.defaultdict(list, a=1)) != td(collections.defaultdict(dict, a=1))
    assert td(1) != "PyTreeDef(*)"


@given(INT_TREES)
def test_tree_map_several_trees(t):
    b = relabel(t, lambda p, x: 2 * x)
    c = relabel(t, lambda p, x: Label(p))
    res = tree_map(lambda x, y, z: (x + y, z), t, b, c)
    assert res == relabel(t, lambda p, x: (3 * x, Label(p)))
    assert tree_map(lambda x: -x, t) == relabel(t, lambda p, x: -x)


@given(TREES, st.data())
def test_tree_map_with_prefix(a, data):
    subs = {p: data.draw(SUBTREES) for p, _ in expected_leaves(a)}
    b = relabel(a, lambda p, x: subs[p])
    res = tree_map(lambda x, s: Label(x, s), a, b)
    assert res == relabel(a, lambda p, x: Label(x, subs[p]))
    paths = [p for p, _ in expected_leaves(a)]
    assert flatten_up_to(tree_structure(a), b) == [subs[p] for p in paths]
    assert tree_structure(a).flatten_up_to(b) == [subs[p] for p in paths]
    expected = [x for p, x in expected_leaves(a) for _ in expected_leaves(subs[p])]
    assert broadcast_prefix(a, b) == expected


@given(TREES)
def test_is_leaf(t):
    leaves, td = tree_flatten(t, is_leaf=lambda x: type(x) is list)
    expected = [x for _, x in expected_leaves(t, stop=lambda x: type(x) is list)]
    assert len(leaves) == len(expected) and all(x is y for x, y in zip(leaves, expected))
    assert tree_unflatten(td, leaves) == t
    seen = []
    tree_map(lambda x: seen.append(x), t, is_leaf=lambda x: x is None)
    assert seen == [x for _, x in expected_leaves(t, stop=lambda x: x is None)]


@given(TREES)
def test_paths_index_back_to_leaves(t):
    pairs, td = tree_flatten_with_path(t)
    assert td == tree_structure(t)
    expected = expected_leaves(t)
    assert len(pairs) == len(expected)
    for (path, leaf), (tokens, x) in zip(pairs, expected):
        assert leaf is x
        assert parse_keystr(keystr(path)) == tokens
        assert get_at(t, parse_keystr(keystr(path))) is leaf
    res = tree_map_with_path(lambda p, x: Label(keystr(p), x), t)
    assert res == relabel(t, lambda p, x: Label(render(p), x))


@given(TREES, st.data())
def test_mismatch_error_names_path(a, data):
    a = [a] if kind(a) is None else a
    node_paths = [p for p, _, is_leaf in walk(a) if not is_leaf]
    path = data.draw(st.sampled_from(node_paths))
    orig = get_at(a, path)
    candidates = [0, None, (0,), [0, 0], {"zz": 0}, Point(0, 0), Box([0], "other"),
                  DC(0, 0, "w"), collections.OrderedDict(zz=1)]
    cand = data.draw(st.sampled_from([c for c in candidates if top_sig(c) != top_sig(orig)]))
    b = replace_at(a, path, cand)
    with pytest.raises(ValueError) as info:
        tree_map(lambda *xs: None, a, a, b)
    m = re.fullmatch(r"tree_map: structure mismatch at (.*?): the first tree has (.*) "
                     r"but tree 3 has (.*)", str(info.value), re.S)
    assert m, str(info.value)
    assert (() if m.group(1) == "the root" else parse_keystr(m.group(1))) == path
    assert m.group(2) == describe(orig)
    assert m.group(3) == describe(cand)
    with pytest.raises(ValueError, match="^broadcast_prefix: structure mismatch at "):
        broadcast_prefix(a, b)


@given(make_trees(st.integers(), max_leaves=6), make_trees(st.integers(), max_leaves=4))
def test_tree_transpose(outer, inner):
    pt = relabel(outer, lambda p, x: relabel(inner, lambda q, y: Label(p, q)))
    expected = relabel(inner, lambda q, y: relabel(outer, lambda p, x: Label(p, q)))
    res = tree_transpose(tree_structure(outer), tree_structure(inner), pt)
    assert res == expected
    assert tree_structure(res) == tree_structure(inner).compose(tree_structure(outer))


@given(TREES)
def test_children_and_treedef_tuple(t):
    td = tree_structure(t)
    kids = [c for _, c in children_of(t)[0]] if kind(t) is not None else []
    assert td.children() == treedef_children(td) == [tree_structure(c) for c in kids]
    assert treedef_tuple(tree_structure(c) for c in kids) == tree_structure(tuple(kids))
    assert treedef_is_leaf(td) is (kind(t) is None)


# Examples and errors -------------------------------------------------------------------------

def test_repr():
    td = tree_structure((1, [2, 3], {"a": 4, "b": None}))
    assert repr(td) == "PyTreeDef((*, [*, *], {'a': *, 'b': None}))"
    assert repr(tree_structure((1,))) == "PyTreeDef((*,))"
    assert repr(tree_structure(Point(1, 2))) == "PyTreeDef(Point(x=*, y=*))"
    assert repr(tree_structure(Box([1, 2], "p"))) == "PyTreeDef(CustomNode(Box['p'], [*, *]))"


def test_mismatch_message_example():
    msg = ("tree_map: structure mismatch at [1]['b']: the first tree has a dict with keys "
           "('b',) but tree 2 has a list of length 2")
    with pytest.raises(ValueError) as info:
        tree_map(lambda x, y: x, [0, {"b": {"b": 1}}], [0, {"b": [1, 2]}])
    assert str(info.value) == msg
    with pytest.raises(ValueError, match=r"at the root: the first tree has a tuple of length 2 "
                                         r"but tree 2 has a tuple of length 3"):
        tree_map(lambda x, y: x, (1, 2), (1, 2, 3))
    with pytest.raises(ValueError, match=r"at \.x: the first tree has None but tree 2 has a leaf"):
        tree_map(lambda x, y: x, Point(None, 1), Point(3, 1))


def test_flatten_up_to_and_broadcast_prefix_errors():
    td = tree_structure({"a": (0, 0)})
    with pytest.raises(ValueError, match=r"^flatten_up_to: .* at \['a'\]: the treedef has a tuple "
                                         r"of length 2 but the tree has a list of length 2$"):
        td.flatten_up_to({"a": [1, 2]})
    with pytest.raises(ValueError, match=r"at \['a'\]\[1\]: the prefix tree has a list .* but "
                                         r"the full tree has a leaf of type int"):
        broadcast_prefix({"a": (0, [1])}, {"a": (5, 6)})
    assert broadcast_prefix((0, None), ([1, 2], None)) == [0, 0]
    assert broadcast_prefix((0, None), ([1, 2], 3), is_leaf=lambda x: x is None) == [0, 0, None]
    assert flatten_up_to(tree_structure(7), [1, (2,)]) == [[1, (2,)]]


def test_unflatten_wrong_count():
    td = tree_structure((1, [2, 3]))
    with pytest.raises(ValueError, match="expected 3, got 2"):
        tree_unflatten(td, [1, 2])
    with pytest.raises(ValueError, match="expected 3, got 4"):
        td.unflatten(iter([1, 2, 3, 4]))
    assert td.unflatten(iter("abc")) == ("a", ["b", "c"])


def test_register_twice_raises():
    with pytest.raises(ValueError, match="Box"):
        register_pytree_node(Box, lambda b: (b.items, b.tag), lambda tag, ch: Box(ch, tag))
    with pytest.raises(ValueError, match="DC"):
        register_dataclass(DC)
    with pytest.raises(ValueError, match="tuple"):
        register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c))
    with pytest.raises(ValueError, match="OrderedDict"):
        register_pytree_with_keys(collections.OrderedDict, None, None)


def test_register_dataclass_explicit_fields():
    @dataclasses.dataclass
    class Pair:
        lo: Any
        hi: Any
        unit: str = "m"

    register_dataclass(Pair, data_fields=["hi", "lo"], meta_fields=["unit"])
    leaves, td = tree_flatten(Pair(1, 2, "cm"))
    assert leaves == [2, 1]
    assert td != tree_structure(Pair(1, 2, "m"))
    assert tree_unflatten(td, [20, 10]) == Pair(10, 20, "cm")
    keys = [keystr(p) for p, _ in tree_flatten_with_path(Pair(1, 2))[0]]
    assert keys == [".hi", ".lo"]

    class Plain:
        pass

    with pytest.raises(TypeError, match="not a dataclass"):
        register_dataclass(Plain)

    @dataclasses.dataclass
    class Bad:
        a: Any

    with pytest.raises(ValueError, match="both"):
        register_dataclass(Bad, data_fields=["a"], meta_fields=["a"])


def test_register_with_keys_and_late_registration():
    class Node:
        def __init__(self, left, right):
            self.left, self.right = left, right

    n = Node(1, 2)
    assert tree_leaves([n]) == [n]  # a leaf until registered
    register_pytree_with_keys(
        Node, lambda t: ([(GetAttrKey("left"), t.left), (GetAttrKey("right"), t.right)], None),
        lambda _, c: Node(*c))
    assert tree_leaves([n]) == [1, 2]
    assert [keystr(p) for p, _ in tree_flatten_with_path([n])[0]] == ["[0].left", "[0].right"]
    doubled = tree_map(lambda x: 2 * x, n)
    assert (type(doubled), doubled.left, doubled.right) == (Node, 2, 4)


def test_keys_and_keystr():
    assert str(SequenceKey(0)) == "[0]"
    assert str(DictKey("a")) == "['a']"
    assert str(GetAttrKey("name")) == ".name"
    assert str(FlattenedIndexKey(2)) == "[<flat index 2>]"
    path = (SequenceKey(1), DictKey("b"), GetAttrKey("x"))
    assert keystr(path) == "[1]['b'].x"
    assert keystr(path, simple=True, separator="/") == "1/b/x"
    assert SequenceKey(1) == SequenceKey(1) and hash(DictKey("a")) == hash(DictKey("a"))
    paths = [p for p, _ in tree_flatten_with_path(Box([5, 6], "p"))[0]]
    assert paths == [(FlattenedIndexKey(0),), (FlattenedIndexKey(1),)]


def test_leaf_types_and_special_dicts():
    class MyList(list):
        pass

    assert tree_leaves([MyList([1, 2]), (3,)]) == [MyList([1, 2]), 3]
    assert tree_leaves({1: "x", "a": "y", 0: "z"}) == tree_leaves({0: "z", "a": "y", 1: "x"})
    assert tree_structure(None).num_leaves == 0 and tree_structure(None).num_nodes == 1
    assert tree_leaves([None, (), {}]) == []
    dd = collections.defaultdict(list, {"b": 1, "a": 2})
    out = tree_map(lambda x: x + 1, dd)
    assert type(out) is collections.defaultdict and out.default_factory is list
    assert list(out.items()) == [("a", 3), ("b", 2)]


def test_treedef_is_immutable_and_not_constructible():
    td = tree_structure((1, 2))
    with pytest.raises(AttributeError):
        td._node = None
    with pytest.raises(AttributeError):
        td.num_leaves = 5
    with pytest.raises(TypeError):
        PyTreeDef()
    assert td.node_data() == (tuple, None) and tree_structure(1).node_data() is None


def test_unhashable_aux_data_hashes_through_a_frozen_form():
    class Holder:
        def __init__(self, v, meta):
            self.v, self.meta = v, meta

    register_pytree_node(Holder, lambda h: ((h.v,), h.meta), lambda m, c: Holder(c[0], m))
    a, b = tree_structure(Holder(1, [1])), tree_structure(Holder(2, [1]))
    assert a == b and a != tree_structure(Holder(1, [2]))
    assert hash(a) == hash(b)  # equal treedefs hash equal, as cache keys need
    d1 = tree_structure(Holder(1, {"k": [1, {"j": 2}], "a": 0}))
    d2 = tree_structure(Holder(5, {"a": 0, "k": [1, {"j": 2}]}))
    assert d1 == d2 and hash(d1) == hash(d2) and len({d1, d2, a}) == 2


def test_transpose_examples_and_errors():
    outer, inner = tree_structure([0, 0]), tree_structure({"a": 0, "b": 0})
    pt = [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert tree_transpose(outer, inner, pt) == {"a": [1, 3], "b": [2, 4]}
    assert tree_transpose(outer, None, pt) == {"a": [1, 3], "b": [2, 4]}
    with pytest.raises(ValueError, match=r"tree_transpose: .* at \[1\]"):
        tree_transpose(outer, inner, [{"a": 1, "b": 2}, (3, 4)])


def test_small_helpers():
    assert tree_all([True, (1, None)]) and not tree_all({"a": 0, "b": 1})
    assert tree_all(None) is True
    assert tree_reduce(lambda a, b: a + b, [1, (2, 3)]) == 6
    assert tree_reduce(lambda a, b: a + [b], {"b": 1, "a": 2}, initializer=[]) == [2, 1]
    with pytest.raises(TypeError):
        tree_reduce(lambda a, b: a, [])
    assert all_leaves([1, "x", 2.0]) and not all_leaves([1, None])
    assert all_leaves([1, [2]], is_leaf=lambda x: isinstance(x, list))
    assert tree_structure((1, 2)).compose(tree_structure([0, 0])).num_leaves == 4


def test_docstring_examples():
    result = doctest.testmod(tu, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted >= 25
