"""jit's API behaves as JAX's: functions of no arguments; static arguments passing untouched
through every transformation; pytrees with dict aux data, and the functions vjp and
linearize return (`tree_util.Partial` pytrees of their residuals), as jit inputs and
outputs; one compilation cache per function (not per `jit` wrapper); and the ahead-of-time
`jit(f).trace(...)` stage. Expected values are closed forms, or JAX's outputs written in.
"""

import functools
import gc
import weakref

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.trace import to_concrete
from mytorch.tree_util import (
    Partial,
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
)
from tests.jit.test_codegen import assert_same


def _arange(*shape):
    return mnp.asarray(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))


# ---- no arguments -----------------------------------------------------------------------------
@pytest.mark.parametrize("fn,want", [
    (lambda: mnp.ones(3) * 2, np.full(3, 2.0, np.float32)),
    (lambda: 2.0, np.float32(2.0)),
    (lambda: (mnp.arange(3), {"a": mnp.zeros((2, 0))}),
     (np.arange(3, dtype=np.int32), {"a": np.zeros((2, 0), np.float32)})),
    (lambda: [mnp.eye(2) @ mnp.ones(2)], [np.ones(2, np.float32)]),
    (lambda: lax.fori_loop(0, 4, lambda i, c: c * 2, 1.0), np.float32(16.0)),
])
def test_function_of_no_arguments(fn, want):
    jitted = mt.jit(fn)
    for _ in range(3):  # traced, then the fast path of cache hits
        got = jitted()  # a Python scalar the function returns comes back a weak array
        assert_same(got, tree_map(lambda w: w if isinstance(w, mt.Array) else to_concrete(w),
                                  fn()))
        for g, w in zip(tree_leaves(got), tree_leaves(want)):
            np.testing.assert_array_equal(np.asarray(g), w)
    assert "def " in jitted.lower().as_text()


# ---- static arguments through transformations -------------------------------------------------
def _scale(x, n):
    return x * n


def test_static_argument_passes_through_every_transformation():
    """jf(x, 2) = 2 x; with n static, n reaches `_scale` as the Python int 2 each time."""
    seen = []

    def f(x, n):
        seen.append(type(n))
        return _scale(x, n)

    jf = mt.jit(f, static_argnums=1)
    x, xs = _arange(3), _arange(2, 3)
    eye2 = 2 * np.eye(3, dtype=np.float32)
    _, vjp_fn = mt.vjp(jf, x, 2)
    np.testing.assert_array_equal(vjp_fn(mnp.ones(3))[0], np.full(3, 2.0))
    np.testing.assert_array_equal(mt.vmap(jf, in_axes=(0, None))(xs, 2), 2 * np.asarray(xs))
    _, t = mt.jvp(jf, (x, 2), (mnp.ones(3), 0))
    np.testing.assert_array_equal(t, np.full(3, 2.0))
    _, f_jvp = mt.linearize(jf, x, 2)
    np.testing.assert_array_equal(f_jvp(mnp.ones(3), 0), np.full(3, 2.0))
    np.testing.assert_array_equal(mt.jacfwd(jf)(x, 2), eye2)
    np.testing.assert_array_equal(mt.jacrev(jf)(x, 2), eye2)
    np.testing.assert_array_equal(mt.grad(lambda x, n: jf(x, n).sum())(x, 2), np.full(3, 2.0))
    np.testing.assert_array_equal(mt.checkpoint(jf)(x, 2), 2 * np.asarray(x))
    np.testing.assert_array_equal(
        mt.grad(lambda x: mt.checkpoint(jf, static_argnums=(1,))(x, 2).sum())(x), [2, 2, 2])
    np.testing.assert_array_equal(mt.hessian(lambda x, n: (jf(x, n) ** 2).sum())(x, 2),
                                  8 * np.eye(3))
    np.testing.assert_array_equal(
        mt.vmap(lambda x: mt.vjp(jf, x, 3)[1](mnp.ones(3))[0])(xs), np.full((2, 3), 3.0))
    np.testing.assert_array_equal(
        mt.vmap(mt.vmap(jf, in_axes=(0, None)), in_axes=(0, None))(_arange(2, 2, 3), 2),
        2 * np.asarray(_arange(2, 2, 3)))
    np.testing.assert_array_equal(mt.jit(lambda x: mt.vmap(jf, in_axes=(0, None))(x, 3))(xs),
                                  3 * np.asarray(xs))
    assert set(seen) == {int}


def test_static_argument_through_custom_rules_with_nondiff_argnums():
    jf = mt.jit(_scale, static_argnums=1)

    @functools.partial(mt.custom_jvp, nondiff_argnums=(1,))
    def cj(x, n):
        return jf(x, n)

    cj.defjvp(lambda n, p, t: (jf(p[0], n), jf(t[0], n)))

    @functools.partial(mt.custom_vjp, nondiff_argnums=(1,))
    def cv(x, n):
        return jf(x, n)

    cv.defvjp(lambda x, n: (jf(x, n), None), lambda n, r, ct: (jf(ct, n),))
    x = _arange(3)
    for g in (cj, cv):
        np.testing.assert_array_equal(mt.grad(lambda x, g=g: g(x, 3).sum())(x), np.full(3, 3.0))
        np.testing.assert_array_equal(mt.vjp(g, x, 3)[1](mnp.ones(3))[0], np.full(3, 3.0))
    np.testing.assert_array_equal(mt.vmap(cj, in_axes=(0, None))(_arange(2, 3), 2),
                                  2 * np.asarray(_arange(2, 3)))


def test_unmapped_vmap_arguments_are_passed_as_given():
    """As in JAX: an in_axes=None leaf reaches the function untouched, whatever it is."""
    got = mt.vmap(lambda x, s, k: x * len(s) + k, in_axes=(0, None, None))(
        _arange(2), "abc", 1)
    np.testing.assert_array_equal(got, [1.0, 4.0])


def test_vjp_cotangents_for_integer_primals():
    _, vjp_fn = mt.vjp(lambda x, n: x * n, _arange(3), 4)
    ct_x, ct_n = vjp_fn(mnp.ones(3))
    np.testing.assert_array_equal(ct_x, np.full(3, 4.0))
    assert ct_n.shape == () and float(ct_n) == 0


# ---- pytrees: dict aux data, vjp functions ----------------------------------------------------
class Tagged:
    """A node whose aux data is a dict (with a list inside): unhashable as it is."""

    def __init__(self, value, meta):
        self.value, self.meta = value, meta


register_pytree_node(Tagged, lambda t: ((t.value,), t.meta), lambda m, c: Tagged(c[0], m))


def test_jit_of_pytrees_with_dict_aux_data():
    traces = []

    def f(t):
        traces.append(1)
        return Tagged(t.value * t.meta["scale"], dict(t.meta, seen=True))

    jf = mt.jit(f)
    for _ in range(3):
        out = jf(Tagged(_arange(3), {"scale": 2.0, "tags": ["a", "b"]}))
        np.testing.assert_array_equal(out.value, [0.0, 2.0, 4.0])
        assert out.meta == {"scale": 2.0, "tags": ["a", "b"], "seen": True}
    assert len(traces) == 1  # equal aux data: a cache hit
    jf(Tagged(_arange(3), {"scale": 3.0, "tags": ["a", "b"]}))
    assert len(traces) == 2  # other aux data: traced again
    a = tree_structure(Tagged(0, {"x": [1, {"y": 2}], "z": 3}))
    b = tree_structure(Tagged(1, {"z": 3, "x": [1, {"y": 2}]}))
    assert a == b and hash(a) == hash(b)
    np.testing.assert_array_equal(mt.grad(lambda t: mnp.sum(f(t).value))(
        Tagged(_arange(3), {"scale": 2.0})).value, np.full(3, 2.0))


def _f(x):
    return mnp.sin(x) * x


def _df(x):  # d/dx x sin x
    return np.sin(x) + x * np.cos(x)


def test_vjp_function_is_a_pytree_of_its_residuals():
    x = _arange(3) / 3
    _, vjp_fn = mt.vjp(_f, x)
    assert isinstance(vjp_fn, Partial)
    leaves, treedef = tree_flatten(vjp_fn)
    assert leaves and all(isinstance(r, mt.Array) for r in leaves)
    rebuilt = treedef.unflatten([r * 1 for r in leaves])
    np.testing.assert_allclose(rebuilt(mnp.ones(3))[0], _df(np.asarray(x)), rtol=1e-6)


def test_vjp_and_linearize_functions_through_jit():
    x = _arange(3) / 3
    ones = mnp.ones(3)
    want = _df(np.asarray(x))
    y, vjp_fn = mt.jit(lambda x: mt.vjp(_f, x))(x)  # returned from jit
    np.testing.assert_allclose(y, np.asarray(_f(x)), rtol=1e-6)
    np.testing.assert_allclose(vjp_fn(ones)[0], want, rtol=1e-6)
    apply = mt.jit(lambda fn, ct: fn(ct))  # passed into jit
    np.testing.assert_allclose(apply(vjp_fn, ones)[0], want, rtol=1e-6)
    np.testing.assert_allclose(apply(mt.vjp(_f, x)[1], ones)[0], want, rtol=1e-6)
    _, f_jvp = mt.jit(lambda x: mt.linearize(_f, x))(x)
    np.testing.assert_allclose(f_jvp(ones), want, rtol=1e-6)
    np.testing.assert_allclose(apply(f_jvp, ones), want, rtol=1e-6)
    # the same residual structure again: no new trace for the second application
    n = len(apply._entries)
    apply(vjp_fn, 2 * ones)
    assert len(apply._entries) == n


def test_partial_is_functools_partial_as_a_pytree():
    p = Partial(max, 1, 2)
    assert tree_leaves(p) == [1, 2] and p(3) == 3
    q = Partial(functools.partial(lambda a, b, c: a + 10 * b + 100 * c, 1), 2)
    assert tree_leaves(q) == [2] and q(3) == 321  # the inner partial's 1 is not a leaf
    k = Partial(lambda x, scale: x * scale, scale=_arange(2))
    assert len(tree_leaves(k)) == 1
    np.testing.assert_array_equal(mt.jit(lambda k, x: k(x))(k, mnp.ones(2)), [0.0, 1.0])
    assert tree_structure(Partial(max, 1)) == tree_structure(Partial(max, 5))


# ---- one cache per function -----------------------------------------------------------------
def test_rewrapping_a_function_reuses_its_compilation():
    traces = []

    def f(x):
        traces.append(1)
        return mnp.tanh(x) * 2.0

    x = _arange(4)
    for _ in range(50):
        out = mt.jit(f)(x)
    np.testing.assert_allclose(out, np.tanh(np.asarray(x)) * 2, rtol=1e-6)
    assert len(traces) == 1
    mt.jit(f)(_arange(5))  # a new shape is a new signature
    assert len(traces) == 2
    for n in (1, 2, 1, 2):  # static arguments are part of the key
        np.testing.assert_array_equal(mt.jit(_scale, static_argnums=1)(x, n),
                                      n * np.asarray(x))
    mt.jit(f, donate_argnums=0)(x * 1)  # other options: a cache of their own
    assert len(traces) == 3
    mt.clear_caches()
    mt.jit(f)(x)
    assert len(traces) == 4
    with mt.disable_jit():
        mt.jit(f)(x)
    assert len(traces) == 5


def test_cache_of_bound_methods_is_per_object_and_dies_with_it():
    traces = []

    class Model:
        def __init__(self, k):
            self.k = k

        def apply(self, x):
            traces.append(self.k)
            return x * self.k

    x = _arange(3)
    a, b = Model(2.0), Model(3.0)
    for _ in range(3):
        np.testing.assert_array_equal(mt.jit(a.apply)(x), 2 * np.asarray(x))
        np.testing.assert_array_equal(mt.jit(b.apply)(x), 3 * np.asarray(x))
    assert traces == [2.0, 3.0]
    del a
    gc.collect()
    for k in (5.0, 7.0, 11.0):  # new objects (possibly at a freed address) trace anew
        np.testing.assert_array_equal(mt.jit(Model(k).apply)(x), k * np.asarray(x))
    assert traces == [2.0, 3.0, 5.0, 7.0, 11.0]


def test_cache_does_not_keep_the_function_alive():
    def g(x):
        return x + 1.0

    mt.jit(g)(_arange(2))
    ref = weakref.ref(g)
    del g
    gc.collect()
    assert ref() is None


def test_partial_objects_and_callables_are_cached_on_themselves():
    traces = []

    def f(x, s):
        traces.append(s)
        return x * s

    p = functools.partial(f, s=3.0)
    for _ in range(3):
        np.testing.assert_array_equal(mt.jit(p)(_arange(2)), [0.0, 3.0])
    assert traces == [3.0]
    np.testing.assert_array_equal(mt.jit(functools.partial(f, s=4.0))(_arange(2)), [0.0, 4.0])
    assert traces == [3.0, 4.0]
    np.testing.assert_allclose(mt.jit(mnp.sin)(_arange(2)), np.sin([0.0, 1.0]), rtol=1e-6)


# ---- jit(f).trace ---------------------------------------------------------------------------
def test_trace_stage_like_jax():
    """Compared with JAX 0.10.2's `jax.jit(f, static_argnums=1).trace(ones(3), 2)`."""
    f = mt.jit(lambda x, n: (x * n, {"a": x}), static_argnums=1)
    traced = f.trace(mnp.ones(3), 2)
    assert str(traced.jaxpr) == ("{ lambda ; a:f32[3]. let\n    b:f32[3] = mul a 2.0:f32[]\n"
                                 "  in (b, a) }")
    assert traced.fun_name == "<lambda>" and traced.donate_argnums == ()
    assert str(traced.in_tree) == "PyTreeDef(((*,), {}))"
    assert str(traced.out_tree) == "PyTreeDef((*, {'a': *}))"
    (info,), kw = traced.args_info
    assert kw == {} and info.shape == (3,) and info.dtype == np.float32 and not info.donated
    (aval,), _ = traced.in_avals
    assert aval.shape == (3,) and aval.dtype == np.float32
    out, d = traced.out_info
    assert (out.shape, out.dtype, d["a"].shape) == ((3,), np.float32, (3,))
    lowered = traced.lower()
    assert "def " in lowered.as_text() and lowered.out_tree == traced.out_tree
    got = lowered.compile()(mnp.ones(3))
    np.testing.assert_array_equal(got[0], [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(got[1]["a"], [1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="compiled for arguments of structure"):
        lowered.compile()(mnp.ones(3), 2)


def test_trace_takes_shape_dtype_structs_and_fills_the_cache():
    traces = []

    def f(x, y):
        traces.append(1)
        return x @ y

    jf = mt.jit(f, donate_argnums=1)
    traced = jf.trace(mt.ShapeDtypeStruct((2, 3), np.float32),
                      mt.ShapeDtypeStruct((3,), np.float32))
    assert str(traced.jaxpr).count("dot_general") == 1
    assert [i.donated for i in traced.args_info[0]] == [False, True]
    assert traced.donate_argnums == (1,)
    out = jf(mnp.ones((2, 3)), mnp.ones(3))
    np.testing.assert_array_equal(out, [3.0, 3.0])
    assert len(traces) == 1
    assert str(mt.jit(lambda: mnp.ones(2)).trace().jaxpr).startswith("{ lambda ; . let")
    weak = mt.jit(lambda x: x * 2).trace(3.0).jaxpr.in_avals[0]
    assert weak.weak_type and weak.dtype == np.float32
