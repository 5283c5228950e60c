"""Public names a user porting from JAX reaches for: mt.tree, the pytree class decorators,
mt.block_until_ready, lax.Precision and the primitive objects exported from lax."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.primitive import Primitive
from mytorch.tree_util import (
    GetAttrKey, keystr, register_pytree_node_class, register_pytree_with_keys_class,
)

trees = st.recursive(
    st.integers(-5, 5) | st.none(),
    lambda kids: st.lists(kids, max_size=3) | st.tuples(kids, kids)
    | st.dictionaries(st.sampled_from("abc"), kids, max_size=3),
    max_leaves=8,
)


@given(trees)
def test_tree_namespace_matches_tree_util(tree):
    tu = mt.tree_util
    assert mt.tree.leaves(tree) == tu.tree_leaves(tree)
    leaves, treedef = mt.tree.flatten(tree)
    assert treedef == mt.tree.structure(tree)
    assert mt.tree.unflatten(treedef, leaves) == tree
    assert mt.tree.map(lambda x: x * 2, tree) == tu.tree_map(lambda x: x * 2, tree)
    assert mt.tree.reduce(lambda a, b: a + b, tree, 0) == sum(leaves)
    assert mt.tree.all(tree) == all(leaves)
    paths = [keystr(p) for p, _ in mt.tree.leaves_with_path(tree)]
    assert paths == [keystr(p) for p, _ in tu.tree_flatten_with_path(tree)[0]]


def test_tree_broadcast_and_transpose():
    assert mt.tree.broadcast((0, 1), ([5, 6], {"a": 7, "b": 8})) == ([0, 0], {"a": 1, "b": 1})
    outer, inner = mt.tree.structure([0, 0]), mt.tree.structure((0, 0))
    assert mt.tree.transpose(outer, inner, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
    with pytest.raises(ValueError, match="tree.broadcast"):
        mt.tree.broadcast((0, 1, 2), ([5], 6))


@register_pytree_node_class
class Affine:
    def __init__(self, w, b, name="affine"):
        self.w, self.b, self.name = w, b, name

    def tree_flatten(self):
        return (self.w, self.b), self.name

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, name=aux)

    def __call__(self, x):
        return x * self.w + self.b


@register_pytree_with_keys_class
class Scale:
    def __init__(self, s):
        self.s = s

    def tree_flatten_with_keys(self):
        return [(GetAttrKey("s"), self.s)], None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def test_pytree_node_class_through_transformations():
    m = Affine(mnp.array(2.0), mnp.array(1.0), name="layer")
    xs = np.array([0.5, -1.0, 3.0], np.float32)
    loss = lambda m: mnp.sum(m(xs) ** 2)  # noqa: E731
    g = mt.jit(mt.grad(loss))(m)
    assert isinstance(g, Affine) and g.name == "layer"
    pred = 2.0 * xs + 1.0
    np.testing.assert_allclose(g.w, np.sum(2 * pred * xs), rtol=1e-6)
    np.testing.assert_allclose(g.b, np.sum(2 * pred), rtol=1e-6)
    batched = mt.vmap(lambda m: m(mnp.array(1.0)))(Affine(mnp.arange(3.0), mnp.ones(3)))
    np.testing.assert_allclose(batched, np.arange(3.0) + 1)


def test_pytree_with_keys_class_paths_and_flatten():
    (path, leaf), = mt.tree.leaves_with_path({"k": Scale(4)})
    assert keystr(path) == "['k'].s" and leaf == 4
    assert mt.tree.map(lambda v: v + 1, Scale(1)).s == 2
    np.testing.assert_allclose(mt.grad(lambda s: s.s ** 3)(Scale(mnp.array(2.0))).s, 12.0)


def test_class_decorators_reject_a_class_without_the_methods():
    with pytest.raises(TypeError, match="register_pytree_node_class: Bare must define"):
        register_pytree_node_class(type("Bare", (), {}))
    with pytest.raises(TypeError, match="tree_flatten_with_keys"):
        register_pytree_with_keys_class(type("Bare2", (), {"tree_unflatten": classmethod(
            lambda cls, a, c: cls())}))


def test_block_until_ready_returns_its_argument():
    tree = {"x": mnp.ones(3) * 2, "n": 3, "s": "text", "none": None}
    assert mt.block_until_ready(tree) is tree
    y = mt.jit(lambda a: a + 1)(mnp.ones(2))
    assert mt.block_until_ready(y) is y


def test_precision_names():
    P = lax.Precision
    assert [P("highest"), P("float32"), P("tensorfloat32"), P("bfloat16"), P("default")] == [
        P.HIGHEST, P.HIGHEST, P.HIGH, P.DEFAULT, P.DEFAULT]
    with pytest.raises(ValueError, match="unknown precision 'double'"):
        P("double")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for prec in (P.HIGHEST, "highest", (P.HIGH, P.HIGH), None):
        out = mt.jit(lambda x: lax.dot(x, x.T, precision=prec))(a)
        np.testing.assert_allclose(out, a @ a.T)
        np.testing.assert_allclose(mnp.matmul(a, a.T, precision=prec), a @ a.T)


def test_lax_exports_the_primitives_equations_use():
    def f(x, i):
        y = mnp.exp(x) @ x.T
        y = lax.cond(i > 0, lambda: y, lambda: -y)
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, y))[1]

    jaxpr = mt.make_jaxpr(f)(mnp.ones((2, 2)), 1).jaxpr
    seen = {eqn.primitive for eqn in jaxpr.eqns}
    for prim in seen:
        assert getattr(lax, f"{prim.name}_p") is prim
    for name in ("exp_p", "dot_general_p", "cond_p", "while_p", "scan_p", "add_p", "sin_p",
                 "reduce_sum_p", "gather_p", "scatter_add_p", "psum_p", "sort_p"):
        assert isinstance(getattr(lax, name), Primitive), name
