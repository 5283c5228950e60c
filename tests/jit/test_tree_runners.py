"""Cache hits of jitted functions taking pytrees (modules, optimiser states, dicts): the
generated, guarded flattener (mytorch/jit_trees.py) gives what the traced call gives,
declines every call whose structure, static fields or leaf types differ from the ones it
was generated for (which then retrace or hit another signature, as before), and is what a
training loop's calls run."""

import collections
import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import nn, tree_util

jit_module = importlib.import_module("mytorch.jit")

Pair = collections.namedtuple("Pair", ["left", "right"])


class Scaled(nn.Module):
    weight: object
    bias: object
    scale: float = nn.field(static=True, default=1.0)


class Box:
    """A registered node type with aux data (through register_pytree_node)."""

    def __init__(self, items, tag):
        self.items, self.tag = items, tag


tree_util.register_pytree_node(Box, lambda b: (b.items, b.tag), lambda tag, c: Box(list(c), tag))


def _double(tree):
    return tree_util.tree_map(lambda x: x * 2 + 1, tree)


def _np(tree):
    return tree_util.tree_map(lambda x: np.asarray(x), tree)


def _array(rng, shape, dtype=np.float32):
    return mnp.asarray(rng.standard_normal(shape).astype(dtype))


def _assert_same(out, expected):
    assert tree_util.tree_structure(out) == tree_util.tree_structure(expected)
    for a, e in zip(tree_util.tree_leaves(out), tree_util.tree_leaves(expected), strict=True):
        assert a.dtype == e.dtype
        assert a.weak_type == getattr(e, "weak_type", False)  # NumPy results: not weak
        np.testing.assert_array_equal(np.asarray(a), np.asarray(e))


def _counting(fun):
    traces = []

    def counted(*args):
        traces.append(1)
        return fun(*args)

    return mt.jit(counted), traces


def _tree_runners(f):
    return f._fast.get(jit_module.TREES) or []


# -- structures drawn by hypothesis ------------------------------------------------------------
def _leaf_shapes():
    """Leaves as NumPy arrays of drawn shapes (the test fills in new values)."""
    return st.lists(st.integers(0, 3), min_size=0, max_size=2).map(
        lambda s: np.zeros(s, np.float32))


def _trees(leaf):
    def extend(children):
        return st.one_of(
            st.lists(children, max_size=3),
            st.lists(children, max_size=3).map(tuple),
            st.dictionaries(st.sampled_from("abcd"), children, max_size=3),
            st.tuples(children, children).map(lambda p: Pair(*p)),
            st.tuples(children, children, st.sampled_from([1.0, 2.0])).map(
                lambda t: Scaled(t[0], t[1], scale=t[2])),
            st.tuples(st.lists(children, max_size=2), st.sampled_from(["x", "y"])).map(
                lambda t: Box(*t)),
        )
    return st.recursive(st.one_of(leaf, st.none()), extend, max_leaves=8)


@settings(max_examples=40, deadline=None)
@given(structure=_trees(_leaf_shapes()), seed=st.integers(0, 2**16))
def test_drawn_pytrees_match_the_unjitted_function_on_every_call(structure, seed):
    rng = np.random.default_rng(seed)

    def fill(leaf):
        return _array(rng, leaf.shape)

    f = mt.jit(lambda tree: _double(tree))  # a new function: a cache of its own
    for _ in range(4):  # trace, runner, tree runner generated, tree runner used
        tree = tree_util.tree_map(fill, structure)
        _assert_same(f(tree), _double(tree))


@pytest.mark.parametrize("change", [
    "dict keys", "list length", "static field", "aux data", "leaf shape", "leaf dtype",
    "weak type", "numpy leaf", "container type", "none for a leaf", "namedtuple for tuple"])
def test_a_changed_call_is_declined_and_retraces(change):
    """Each change makes the generated flattener decline; the general path then traces
    anew, except for a NumPy array in place of an array of the same type (the same
    signature once converted: the existing compiled code runs)."""
    rng = np.random.default_rng(0)

    def make():
        return {"model": Scaled(_array(rng, (3, 2)), _array(rng, (2,)), scale=2.0),
                "state": (Box([_array(rng, (2,))], "adam"), [_array(rng, ())]),
                "extra": Pair(_array(rng, (4,)), None)}

    f, traces = _counting(_double)
    for _ in range(3):
        tree = make()
        _assert_same(f(tree), _double(tree))
    assert len(traces) == 1 and len(_tree_runners(f)) == 1
    tree = make()
    if change == "dict keys":
        tree["other"] = tree.pop("extra")
    elif change == "list length":
        tree["state"][1].append(_array(rng, ()))
    elif change == "static field":
        tree["model"] = Scaled(tree["model"].weight, tree["model"].bias, scale=3.0)
    elif change == "aux data":
        tree["state"] = (Box(tree["state"][0].items, "sgd"), tree["state"][1])
    elif change == "leaf shape":
        tree["extra"] = Pair(_array(rng, (5,)), None)
    elif change == "leaf dtype":
        tree["extra"] = Pair(tree["extra"].left.astype(mnp.int32), None)
    elif change == "weak type":
        tree["state"][1][0] = mnp.asarray(1.5)  # from a Python float: weakly typed
    elif change == "numpy leaf":
        tree["extra"] = Pair(np.ones(4, np.float32), None)
    elif change == "container type":
        tree["state"] = list(tree["state"])
    elif change == "none for a leaf":
        tree["extra"] = Pair(None, None)
    else:
        tree["extra"] = tuple(tree["extra"])
    _assert_same(f(tree), _double(tree))
    assert len(traces) == (1 if change == "numpy leaf" else 2)


class _MLP(nn.Module):
    first: nn.Linear
    last: nn.Linear

    def __call__(self, x):
        return self.last(mt.nn.relu(self.first(x)))


def test_a_training_loop_runs_the_generated_flattener(monkeypatch):
    """After the first calls, no call of the loop flattens its arguments generically."""
    rng = np.random.default_rng(1)
    model = _MLP(nn.Linear(4, 8, key=mt.random.key(0)), nn.Linear(8, 2, key=mt.random.key(1)))
    opt = mt.optim.adam(1e-2)
    state = opt.init(model)
    x = rng.standard_normal((16, 4)).astype(np.float32)  # NumPy batches, as a loader gives
    y = rng.standard_normal((16, 2)).astype(np.float32)

    def loss(m, x, y):
        return mnp.mean((m(x) - y) ** 2)

    @mt.jit
    def step(m, s, x, y):
        value, grads = mt.value_and_grad(loss)(m, x, y)
        updates, s = opt.update(grads, s, m)
        return mt.optim.apply_updates(m, updates), s, value

    reference_m, reference_s = model, state
    for _ in range(3):
        model, state, value = step(model, state, x, y)
    flattened = []
    real = jit_module.tree_util.tree_flatten
    monkeypatch.setattr(jit_module.tree_util, "tree_flatten",
                        lambda *a, **k: flattened.append(1) or real(*a, **k))
    for _ in range(3):
        model, state, value = step(model, state, x, y)
    assert flattened == []
    monkeypatch.undo()
    with mt.disable_jit():  # the same six steps op by op
        for _ in range(6):
            reference_m, reference_s, reference_value = step(reference_m, reference_s, x, y)
    for a, e in zip(tree_util.tree_leaves((model, state, value)),
                    tree_util.tree_leaves((reference_m, reference_s, reference_value)),
                    strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-5, atol=1e-6)


def test_numpy_and_python_scalar_leaves_convert_as_the_general_path_does():
    f, traces = _counting(lambda t: {"n": t["n"] * 2, "s": t["s"] + 1, "i": t["i"]})
    for k in range(4):
        tree = {"n": np.arange(3, dtype=np.float64) + k, "s": 0.5 + k, "i": np.arange(2) + k}
        out = f(tree)
        assert out["n"].dtype == mnp.float32 and out["i"].dtype == mnp.int32
        assert out["s"].weak_type
        np.testing.assert_array_equal(np.asarray(out["n"]), (np.arange(3) + k) * 2)
        np.testing.assert_array_equal(np.asarray(out["s"]), 1.5 + k)
    assert len(traces) == 1 and _tree_runners(f)
    out = f({"n": np.arange(3, dtype=np.float64), "s": 2, "i": np.arange(2)})  # an int
    assert len(traces) == 2 and out["s"].dtype == mnp.int32


def test_donated_pytrees_are_invalidated_on_tree_runner_calls():
    f = mt.jit(lambda m: Scaled(m.weight * 2, m.bias + 1, scale=m.scale), donate_argnums=0)
    for _ in range(4):
        m = Scaled(mnp.ones((2, 2)), mnp.zeros(2), scale=1.0)
        out = f(m)
        np.testing.assert_array_equal(np.asarray(out.weight), 2 * np.ones((2, 2)))
        with pytest.raises(RuntimeError):
            np.asarray(m.weight)
    assert _tree_runners(f)


def test_outputs_are_built_with_their_structure_and_types():
    def fun(m):
        return {"b": [m.bias, (m.weight, None)],
                "a": Pair(m, Box([m.bias * 2], "t")),
                "c": collections.OrderedDict(z=m.weight, y=m.bias)}

    f = mt.jit(fun)
    m = Scaled(mnp.ones((2, 3)), mnp.arange(3.0), scale=4.0)
    for _ in range(3):
        out = f(m)
    expected = fun(m)
    assert tree_util.tree_structure(out) == tree_util.tree_structure(expected)
    assert type(out["a"].left) is Scaled and out["a"].left.scale == 4.0
    assert list(out["c"]) == ["z", "y"] and isinstance(out["a"].right, Box)
    _assert_same(out, expected)


def test_errors_on_declined_calls_come_from_the_general_path():
    f = mt.jit(_double)
    tree = {"a": mnp.ones(2)}
    for _ in range(3):
        f(tree)
    with pytest.raises(TypeError, match="not an array"):
        f({"a": "text"})


def test_config_changes_and_disable_jit_drop_the_tree_runners():
    f, traces = _counting(_double)
    tree = [Pair(mnp.ones(2), mnp.zeros(1))]
    for _ in range(3):
        f(tree)
    assert _tree_runners(f)
    with mt.disable_jit():
        f(tree)
    assert len(traces) == 2  # ran op by op
    with mt.config.override(debug_nans=True):
        f(tree)
    assert len(traces) == 3
