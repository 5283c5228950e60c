"""mt.nn.Module: pytree registration, frozen fields, static fields, transformations over
modules, filtering (filter/partition/combine/tree_at), filtered transformations and state."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import nn
from mytorch.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_leaves
from tests.autodiff.fd import check_grads


class Affine(nn.Module):
    weight: mt.Array
    bias: mt.Array
    size: int = nn.field(static=True, default=3)

    def __call__(self, x):
        return self.weight @ x + self.bias


class Stack(nn.Module):
    layers: list
    activation: object = nn.static_field(default=mnp.tanh)

    def __call__(self, x):
        for layer in self.layers:
            x = self.activation(layer(x))
        return x


class HandInit(nn.Module):
    w: mt.Array
    scale: float = nn.field(static=True)
    name: str = nn.field(static=True, default="hand")

    def __init__(self, n, scale=2.0):
        self.w = mnp.arange(n, dtype=mnp.float32)
        self.scale = scale


def _stack():
    rng = np.random.default_rng(0)
    a = Affine(mnp.asarray(rng.normal(size=(4, 3)), dtype=mnp.float32), mnp.zeros(4))
    b = Affine(mnp.asarray(rng.normal(size=(2, 4)), dtype=mnp.float32), mnp.ones(2), size=4)
    return Stack([a, b])


def test_pytree_round_trip_and_key_paths():
    model = _stack()
    leaves, treedef = tree_flatten(model)
    assert len(leaves) == 4
    again = mt.tree_util.tree_unflatten(treedef, leaves)
    assert type(again) is Stack and again == model
    paths = [keystr(p) for p, _ in tree_flatten_with_path(model)[0]]
    assert paths == [".layers[0].weight", ".layers[0].bias", ".layers[1].weight",
                     ".layers[1].bias"]


def test_static_fields_live_in_the_treedef():
    model = _stack()
    other = mt.tree_util.tree_map(lambda x: x, model)
    assert mt.tree_util.tree_structure(model) == mt.tree_util.tree_structure(other)
    changed = Stack(model.layers, activation=mnp.sin)
    assert mt.tree_util.tree_structure(model) != mt.tree_util.tree_structure(changed)
    assert not any(callable(x) for x in tree_leaves(model))
    a, b = Affine(mnp.ones((3, 3)), mnp.ones(3)), Affine(mnp.ones((3, 3)), mnp.ones(3), size=4)
    assert mt.tree_util.tree_structure(a) != mt.tree_util.tree_structure(b)


def test_static_field_must_be_hashable():
    with pytest.raises(TypeError, match=r"Affine: static field 'size' must be hashable.*list"):
        Affine(mnp.ones((3, 3)), mnp.ones(3), size=[1, 2])


def test_fields_are_frozen_after_init():
    model = _stack()
    with pytest.raises(dataclasses.FrozenInstanceError,
                       match=r"cannot assign to field 'layers' of Stack.*tree_at.*test_module"):
        model.layers = []
    with pytest.raises(dataclasses.FrozenInstanceError, match="delete"):
        del model.layers


def test_hand_written_init_and_defaults():
    m = HandInit(3)
    assert m.scale == 2.0 and m.name == "hand"
    np.testing.assert_array_equal(m.w, [0, 1, 2])
    assert tree_flatten(m)[1] == tree_flatten(HandInit(5))[1]
    assert tree_flatten(m)[1] != tree_flatten(HandInit(3, scale=1.0))[1]


def test_init_must_set_every_field_and_only_fields():
    class Missing(nn.Module):
        a: mt.Array

        def __init__(self):
            pass

    class Extra(nn.Module):
        a: mt.Array

        def __init__(self):
            self.a = mnp.ones(1)
            self.b = 2

    with pytest.raises(TypeError, match=r"Missing.__init__ did not set the field 'a'"):
        Missing()
    with pytest.raises(AttributeError, match=r"Extra.__init__ set 'b', which is not a field"):
        Extra()


def test_check_init_and_converter():
    class Positive(nn.Module):
        x: mt.Array = nn.field(converter=mnp.asarray)

        def __check_init__(self):
            if float(mnp.min(self.x)) <= 0:
                raise ValueError("Positive: x must be > 0")

    assert isinstance(Positive([1.0, 2.0]).x, mt.Array)
    with pytest.raises(ValueError, match="must be > 0"):
        Positive([1.0, -1.0])


def test_subclass_inherits_generated_and_hand_written_init():
    class Child(HandInit):
        pass

    class Wider(Affine):
        extra: mt.Array = None

    c = Child(2)
    assert c.scale == 2.0 and c.w.shape == (2,)
    w = Wider(mnp.ones((1, 1)), mnp.ones(1), 1, mnp.zeros(1))
    assert [keystr(p) for p, _ in tree_flatten_with_path(w)[0]] == [".weight", ".bias",
                                                                     ".extra"]


def test_repr_shows_shapes_and_statics():
    model = _stack()
    text = repr(model)
    assert text == ("Stack(\n  layers=[Affine(weight=f32[4,3], bias=f32[4], size=3), "
                    "Affine(weight=f32[2,4], bias=f32[2], size=4)],\n"
                    "  activation=<function tanh>\n)")
    assert repr(model.layers[0]) == "Affine(weight=f32[4,3], bias=f32[4], size=3)"


def test_equality_and_hash():
    a = Affine(mnp.ones((2, 2)), mnp.zeros(2))
    b = Affine(mnp.ones((2, 2)), mnp.zeros(2))
    c = Affine(mnp.ones((2, 2)), mnp.ones(2))
    assert a == b and a != c and a != Affine(mnp.ones((2, 2)), mnp.zeros(2), size=2)
    with pytest.raises(TypeError, match="Affine is unhashable: it holds arrays"):
        hash(a)

    class Flag(nn.Module):
        on: bool = nn.field(static=True, default=True)

    assert hash(Flag()) == hash(Flag()) and Flag() == Flag() and Flag() != Flag(False)


def test_jit_grad_vmap_over_modules():
    model = _stack()
    x = mnp.asarray(np.linspace(-1, 1, 3), dtype=mnp.float32)

    def loss(m, x):
        return mnp.sum(m(x) ** 2)

    np.testing.assert_allclose(mt.jit(loss)(model, x), loss(model, x), rtol=1e-6)
    grads = mt.grad(loss)(model, x)
    assert type(grads) is Stack and grads.layers[0].weight.shape == (4, 3)
    jit_grads = mt.jit(mt.grad(loss))(model, x)
    for g, h in zip(tree_leaves(grads), tree_leaves(jit_grads), strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-5, atol=1e-6)
    xs = mnp.asarray(np.random.default_rng(1).normal(size=(5, 3)), dtype=mnp.float32)
    batched = mt.vmap(model)(xs)
    looped = mnp.stack([model(xs[i]) for i in range(5)])
    np.testing.assert_allclose(batched, looped, rtol=1e-6)
    np.testing.assert_allclose(mt.jit(model.__call__)(x), model(x), rtol=1e-6)
    # an SGD step with plain tree_map keeps the module type
    new = mt.tree_util.tree_map(lambda p, g: p - 0.1 * g, model, grads)
    assert type(new) is Stack and new.activation is model.activation
    # vmap over a stack of models (ensembles)
    models = mt.tree_util.tree_map(lambda p: mnp.stack([p, 2 * p]), model)
    out = mt.vmap(lambda m: m(x))(models)
    np.testing.assert_allclose(out[1], mt.tree_util.tree_map(lambda p: 2 * p, model)(x),
                               rtol=1e-6)


def test_grad_of_module_matches_finite_differences(x64):
    model = _stack()
    leaves, treedef = tree_flatten(mt.tree_util.tree_map(
        lambda p: mnp.asarray(p, dtype=mnp.float64), model))
    x = np.array([0.3, -0.2, 0.5])

    def f(*params):
        return mnp.sum(mt.tree_util.tree_unflatten(treedef, params)(x) ** 2)

    check_grads(f, [np.asarray(p) for p in leaves], order=1)


def test_filter_partition_combine():
    tree = [mnp.ones(2), 3, "a", np.zeros(3), mnp.arange(2), (None, 1.5)]
    assert tree_leaves(nn.filter(tree, nn.is_array))[1].shape == (3,)
    kept = nn.filter(tree, nn.is_inexact_array)
    assert kept[1] is None and kept[2] is None and kept[4] is None and kept[3] is not None
    dropped = nn.filter(tree, nn.is_array, inverse=True, replace=0)
    assert dropped[0] == 0 and dropped[1] == 3 and dropped[5] == (None, 1.5)
    spec = [True, False, True, False, True, False]
    assert nn.filter(tree, spec)[2] == "a" and nn.filter(tree, spec)[1] is None
    dyn, static = nn.partition(tree, nn.is_array)
    assert static[1] == 3 and dyn[1] is None and static[0] is None
    back = nn.combine(dyn, static)
    assert back[1:3] == [3, "a"] and back[0] is tree[0] and back[5] == (None, 1.5)
    with pytest.raises(TypeError, match="filter: the leaves of filter_spec must be bools"):
        nn.filter(tree, 3)


def test_filter_spec_as_module_prefix_freezes_a_layer():
    model = _stack()
    spec = mt.tree_util.tree_map(lambda _: False, model)
    spec = nn.tree_at(lambda m: m.layers[1], spec, replace=True)
    trainable, frozen = nn.partition(model, spec)
    assert trainable.layers[0].weight is None and trainable.layers[1].weight is not None

    def loss(train, frozen, x):
        return mnp.sum(nn.combine(train, frozen)(x))

    grads = mt.grad(loss)(trainable, frozen, mnp.ones(3))
    assert grads.layers[0].weight is None and grads.layers[1].weight.shape == (2, 4)


def test_tree_at():
    model = _stack()
    w = mnp.zeros((4, 3))
    new = nn.tree_at(lambda m: m.layers[0].weight, model, w)
    assert new.layers[0].weight is w and model.layers[0].weight is not w
    assert new.layers[1] is not model.layers[1] and new.layers[1] == model.layers[1]
    both = nn.tree_at(lambda m: (m.layers[0].bias, m.layers[1].bias), model,
                      replace=(mnp.ones(4), mnp.zeros(2)))
    np.testing.assert_array_equal(both.layers[1].bias, [0, 0])
    doubled = nn.tree_at(lambda m: m.layers[1], model,
                         replace_fn=lambda l: mt.tree_util.tree_map(lambda p: 2 * p, l))
    np.testing.assert_array_equal(doubled.layers[1].bias, [2, 2])
    swapped = nn.tree_at(lambda m: m.layers, model, replace=model.layers[::-1])
    assert swapped.layers[0] is model.layers[1]
    one = nn.tree_at(lambda m: m.layers, model, replace=[model.layers[0]])
    assert len(one.layers) == 1
    both_layers = nn.tree_at(lambda m: [m.layers[0], m.layers[1]], model,
                             replace=[model.layers[1], model.layers[0]])
    assert both_layers.layers[1] is model.layers[0]
    assert nn.tree_at(lambda t: t[1], (1, 2, 3), replace=20) == (1, 20, 3)
    with_none = nn.tree_at(lambda t: t[0], (None, 1), replace=5, is_leaf=lambda x: x is None)
    assert with_none == (5, 1)
    with pytest.raises(ValueError, match="tree_at: `where` must return nodes"):
        nn.tree_at(lambda m: mnp.ones(2), model, replace=1)
    with pytest.raises(ValueError, match="selected 2 nodes but replace holds 1"):
        nn.tree_at(lambda m: [m.layers[0].bias, m.layers[1].bias], model, replace=[1])
    with pytest.raises(TypeError, match="exactly one of replace= and replace_fn="):
        nn.tree_at(lambda m: m.layers, model)


def test_filter_jit_with_non_array_leaves():
    calls = []

    @nn.filter_jit
    def f(x, n, name, act):
        calls.append(1)
        return act(x) * n, name + "!"

    x = mnp.ones(3)
    out, tag = f(x, 2, "a", mnp.tanh)
    np.testing.assert_allclose(out, 2 * np.tanh(1.0) * np.ones(3), rtol=1e-6)
    assert tag == "a!"
    f(x + 1, 2, "a", mnp.tanh)
    assert len(calls) == 1
    f(x, 3, "a", mnp.tanh)
    assert len(calls) == 2
    model = _stack()
    np.testing.assert_allclose(nn.filter_jit(model)(mnp.ones(3)), model(mnp.ones(3)),
                               rtol=1e-6)
    np.testing.assert_allclose(nn.filter_jit(model.__call__)(mnp.ones(3)), model(mnp.ones(3)),
                               rtol=1e-6)
    shape_of = nn.filter_jit(lambda x: (x * 2, x.shape))
    for n in (3, 4, 3):
        doubled, shape = shape_of(mnp.ones(n))
        assert shape == (n,) and doubled.shape == (n,)
    with pytest.raises(TypeError, match="filter_jit: every non-array argument must be hash"):
        f(x, 2, {"unhashable"}, mnp.tanh)


def test_filter_grad_and_value_and_grad():
    class WithInt(nn.Module):
        w: mt.Array
        steps: mt.Array
        label: str

    m = WithInt(mnp.array([1.0, 2.0]), mnp.array(3), "x")

    def loss(m, x):
        return mnp.sum(m.w ** 2) * x + m.steps

    g = nn.filter_grad(loss)(m, 2.0)
    np.testing.assert_allclose(g.w, [4.0, 8.0])
    assert g.steps is None and g.label is None
    v, g2 = nn.filter_value_and_grad(loss)(m, 2.0)
    np.testing.assert_allclose(v, 13.0)
    np.testing.assert_allclose(g2.w, g.w)
    (v, aux), g3 = nn.filter_value_and_grad(lambda m: (loss(m, 1.0), "aux"), has_aux=True)(m)
    np.testing.assert_allclose(g3.w, [2.0, 4.0])
    assert aux == "aux" and float(v) == 8.0
    with pytest.raises(TypeError, match="filter_grad: the first argument has no floating"):
        nn.filter_grad(loss)(WithInt(mnp.array([1, 2]), mnp.array(3), "x"), 1.0)


def test_count_params():
    model = _stack()
    assert nn.count_params(model) == 4 * 3 + 4 + 2 * 4 + 2
    assert nn.parameter_count([mnp.ones((2, 2)), mnp.arange(3)], nn.is_inexact_array) == 4


def test_inference_mode_flips_every_inference_field():
    class Drop(nn.Module):
        w: mt.Array
        inference: bool = nn.field(static=True, default=False)

    model = [Drop(mnp.ones(1)), {"inner": Stack([Drop(mnp.ones(1))])}]
    on = nn.inference_mode(model)
    assert on[0].inference and on[1]["inner"].layers[0].inference
    assert not model[0].inference
    off = nn.inference_mode(on, value=False)
    assert not off[0].inference and off[0].w is model[0].w


def test_state_and_state_index():
    class Counter(nn.StatefulLayer):
        index: nn.StateIndex

        def __init__(self):
            self.index = nn.StateIndex(mnp.zeros((), dtype=mnp.int32))

        def __call__(self, x, state):
            n = state.get(self.index)
            return x + n, state.set(self.index, n + 1)

    model, state = nn.make_with_state(Counter)()
    assert model.index.init is None and tree_leaves(model) == []
    assert len(tree_leaves(state)) == 1
    step = mt.jit(lambda m, x, s: m(x, s))
    y, state = step(model, mnp.ones(2), state)
    y, state = step(model, mnp.ones(2), state)
    np.testing.assert_array_equal(y, [2, 2])
    assert int(state.get(model.index)) == 2
    with pytest.raises(ValueError, match="State.set: the new value float32"):
        state.set(model.index, mnp.zeros(3))
    with pytest.raises(AttributeError, match="State is immutable"):
        state.x = 1
    with pytest.raises(ValueError, match="already moved out"):
        nn.State(model)


def test_decorated_methods():
    class Scaled(nn.Module):
        w: mt.Array
        n: int = nn.field(static=True, default=2)

        @nn.filter_jit
        def __call__(self, x):
            return self.w * x * self.n

        @mt.jit
        def shifted(self, x):
            return self.w + x

    m = Scaled(mnp.ones(2))
    np.testing.assert_array_equal(m(mnp.arange(2.0)), [0.0, 2.0])
    np.testing.assert_array_equal(m.shifted(1.0), [2.0, 2.0])
    g = nn.filter_grad(lambda m, x: mnp.sum(m(x)))(m, mnp.arange(2.0))
    np.testing.assert_array_equal(g.w, [0.0, 2.0])


_leaf = st.one_of(st.integers(-3, 3), st.text(max_size=2), st.none(),
                  st.lists(st.floats(-2, 2, width=32), min_size=0, max_size=3).map(
                      lambda v: mnp.asarray(np.asarray(v, np.float32))),
                  st.integers(0, 3).map(lambda n: mnp.arange(n)))
_trees = st.recursive(_leaf, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.tuples(kids, kids),
    st.dictionaries(st.sampled_from("abc"), kids, max_size=2)), max_leaves=6)


@settings(max_examples=30, deadline=None)
@given(tree=_trees)
def test_partition_combine_round_trip(tree):
    dyn, static = nn.partition(tree, nn.is_array)
    assert all(nn.is_array(x) for x in tree_leaves(dyn))
    assert not any(nn.is_array(x) for x in tree_leaves(static))
    back = nn.combine(dyn, static)
    assert nn.tree_equal(back, tree)
    assert mt.tree_util.tree_structure(back) == mt.tree_util.tree_structure(tree)
    n = sum(int(np.size(x)) for x in tree_leaves(tree) if nn.is_array(x))
    assert nn.count_params(tree) == n
    inexact = nn.filter(tree, nn.is_inexact_array)
    assert all(np.dtype(x.dtype).kind == "f" for x in tree_leaves(inexact))


def test_key_arrays_are_array_leaves():
    key = mt.random.key(0)
    tree = {"w": mnp.ones(4), "key": key, "keys": mt.random.split(key, 3), "n": 3}
    assert nn.is_array(key) and not nn.is_inexact_array(key)
    dyn, static = nn.partition(tree, nn.is_array)
    assert dyn["key"] is key and static["key"] is None and static["n"] == 3
    assert nn.combine(dyn, static)["keys"] is tree["keys"]
    assert nn.count_params(tree) == 4 + 1 + 3

    def loss(params, key):
        return mnp.sum(nn.Dropout(0.5)(params["w"], key=key))

    grads = nn.filter_grad(loss)(tree, key)
    assert grads["key"] is None and grads["keys"] is None
    np.testing.assert_array_equal(grads["w"], [0, 0, 2, 2])
    jitted = nn.filter_jit(lambda tree: nn.Dropout(0.5)(tree["w"], key=tree["key"]))
    np.testing.assert_array_equal(jitted(tree), [0, 0, 2, 2])


def test_a_model_holding_custom_jvp_activations_pickles():
    """mt.nn.relu is a custom_jvp function; like a plain function it pickles by reference,
    so a model holding it (as MLP's activation) round-trips through pickle."""
    import pickle

    assert pickle.loads(pickle.dumps(mt.nn.relu)) is mt.nn.relu
    model = mt.nn.MLP(3, 2, width_size=4, depth=2, key=mt.random.key(0))
    again = pickle.loads(pickle.dumps(model))
    x = np.linspace(-1, 1, 3).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(again(x)), np.asarray(model(x)))
