"""The public differentiation API (mytorch/autodiff.py): grad, value_and_grad, vjp, jvp,
linearize, jacfwd, jacrev, hessian: argnums, has_aux, pytrees in and out, keyword
arguments, symbolic zeros, Python control flow on concrete values, Jacobians against
float64 finite differences, and the error messages (what they name, and the user's line).
"""

import collections
import inspect
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax, tree_util
from tests.autodiff.fd import check_grads

_HC = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]
SETTINGS = settings(max_examples=max(3, settings.default.max_examples // 3),
                    suppress_health_check=_HC)

Point = collections.namedtuple("Point", ["x", "y"])
HERE = "test_api.py"


def arr(v, dtype=np.float64):
    return mnp.asarray(np.asarray(v, dtype))


def np_(x):
    return np.asarray(x, np.float64)


def assert_tree_close(got, want, rtol=1e-10, atol=1e-12):
    g_leaves, g_tree = tree_util.tree_flatten(got)
    w_leaves, w_tree = tree_util.tree_flatten(want)
    assert g_tree == w_tree, f"structure {g_tree} != {w_tree}"
    for g, w in zip(g_leaves, w_leaves):
        assert np.shape(g) == np.shape(w), f"shape {np.shape(g)} != {np.shape(w)}"
        np.testing.assert_allclose(np_(g), np_(w), rtol=rtol, atol=atol)


def fd_jacobian(f, x, eps=1e-6):
    """Central-difference Jacobian of f: R^shape -> R^out_shape, shaped out + in."""
    x = np.asarray(x, np.float64)
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = eps
        e = e.reshape(x.shape)
        cols.append((np_(f(arr(x + e))) - np_(f(arr(x - e)))) / (2 * eps))
    out_shape = np.shape(cols[0]) if cols else np.shape(np_(f(arr(x))))
    jac = np.stack(cols, axis=-1) if cols else np.zeros(out_shape + (0,))
    return jac.reshape(out_shape + x.shape)


def _line_after():
    """The number of the line after the caller's (where the call under test sits)."""
    return inspect.currentframe().f_back.f_lineno + 1


# ---- grad and value_and_grad: argnums, has_aux, kwargs -----------------------------------
def f3(x, y, z):
    return mnp.sin(x) * y + z ** 3


def test_grad_argnums_int_tuple_negative(x64):
    x, y, z = arr(0.5), arr(2.0), arr(-1.5)
    gx, gy, gz = math.cos(0.5) * 2.0, math.sin(0.5), 3 * 1.5 ** 2
    assert float(mt.grad(f3)(x, y, z)) == pytest.approx(gx)
    assert float(mt.grad(f3, argnums=1)(x, y, z)) == pytest.approx(gy)
    assert float(mt.grad(f3, argnums=-1)(x, y, z)) == pytest.approx(gz)
    g = mt.grad(f3, argnums=(0, 2))(x, y, z)
    assert isinstance(g, tuple) and len(g) == 2
    assert [float(v) for v in g] == pytest.approx([gx, gz])
    g = mt.grad(f3, argnums=(-1, 0))(x, y, z)  # the order of argnums is kept
    assert [float(v) for v in g] == pytest.approx([gz, gx])
    g = mt.grad(f3, argnums=(1,))(x, y, z)  # a 1-tuple gives a 1-tuple
    assert isinstance(g, tuple) and float(g[0]) == pytest.approx(gy)


def test_value_and_grad(x64):
    x, y, z = arr(0.5), arr(2.0), arr(-1.5)
    v, g = mt.value_and_grad(f3, argnums=(0, 1))(x, y, z)
    assert float(v) == pytest.approx(math.sin(0.5) * 2 - 1.5 ** 3)
    assert [float(t) for t in g] == pytest.approx([math.cos(0.5) * 2, math.sin(0.5)])
    v, g = mt.value_and_grad(f3, argnums=-2)(x, y, z)
    assert float(g) == pytest.approx(math.sin(0.5))


def test_has_aux(x64):
    def loss(w, x):
        pred = mnp.tanh(w * x)
        return mnp.sum((pred - 1.0) ** 2), {"pred": pred, "n": 3}

    w, x = arr([0.5, -0.25]), arr([1.0, 2.0])
    g, aux = mt.grad(loss, has_aux=True)(w, x)
    p = np.tanh(np_(w) * np_(x))
    np.testing.assert_allclose(np_(g), 2 * (p - 1) * (1 - p ** 2) * np_(x), rtol=1e-12)
    assert set(aux) == {"pred", "n"} and aux["n"] == 3
    np.testing.assert_allclose(np_(aux["pred"]), p, rtol=1e-12)
    # the aux output is a plain value, not a tracer
    assert isinstance(aux["pred"], mt.Array) and type(aux["pred"]).__name__ == "ArrayImpl"
    (v, aux2), g2 = mt.value_and_grad(loss, argnums=(0, 1), has_aux=True)(w, x)
    assert float(v) == pytest.approx(float(np.sum((p - 1) ** 2))) and aux2["n"] == 3
    np.testing.assert_allclose(np_(g2[0]), np_(g), rtol=1e-12)
    np.testing.assert_allclose(np_(g2[1]), 2 * (p - 1) * (1 - p ** 2) * np_(w), rtol=1e-12)


def test_kwargs_pass_through(x64):
    def f(x, *, scale, shift=0.0):
        return mnp.sin(x * scale) + shift

    x = arr(0.3)
    assert float(mt.grad(f)(x, scale=2.0)) == pytest.approx(2 * math.cos(0.6))
    assert float(mt.grad(f)(x, scale=arr(3.0), shift=arr(1.0))) == pytest.approx(
        3 * math.cos(0.9))
    v, _ = mt.value_and_grad(f)(x, scale=2.0, shift=5.0)
    assert float(v) == pytest.approx(math.sin(0.6) + 5.0)


def test_grad_of_pytree_inputs(x64):
    def f(params, data):
        a, (b, c) = params["layer"]
        pt = params["point"]
        return (mnp.sum(a * data) + mnp.sum(mnp.sin(b) * c) + pt.x * pt.y
                + mnp.sum(params["list"][0] ** 2))

    params = {
        "layer": [arr([1.0, 2.0]), (arr([[0.5, -0.5]]), arr(3.0))],
        "point": Point(arr(2.0), arr(-1.0)),
        "list": [arr([1.0, -2.0, 0.5]), None],
        "none": None,
    }
    data = arr([0.1, 0.2])
    g = mt.grad(f)(params, data)
    want = {
        "layer": [np_(data), (np.cos([[0.5, -0.5]]) * 3.0, np.sum(np.sin([[0.5, -0.5]])))],
        "point": Point(-1.0, 2.0),
        "list": [2 * np.array([1.0, -2.0, 0.5]), None],
        "none": None,
    }
    assert_tree_close(g, want)
    assert isinstance(g["point"], Point) and g["list"][1] is None and g["none"] is None
    gp, gd = mt.grad(f, argnums=(0, 1))(params, data)
    assert_tree_close(gp, want)
    np.testing.assert_allclose(np_(gd), [1.0, 2.0])


def test_python_scalars_and_numpy_inputs(x64):
    # Python floats and NumPy arrays are accepted as primals
    assert float(mt.grad(lambda x: x * x)(3.0)) == pytest.approx(6.0)
    g = mt.grad(lambda x: mnp.sum(x ** 2))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(np_(g), [2.0, 4.0])


# ---- symbolic zeros -----------------------------------------------------------------------
def test_unused_argument_has_exact_zero_gradient(x64):
    def f(x, unused, y):
        return mnp.sum(mnp.sin(x)) * y

    x, y = arr([0.1, 0.2, 0.3]), arr(2.0)
    unused32 = mnp.asarray(np.ones((2, 3), np.float32))
    _, gu, _ = mt.grad(f, argnums=(0, 1, 2))(x, unused32, y)
    assert gu.shape == (2, 3) and gu.dtype == np.float32
    assert not np.any(np.asarray(gu))
    # a pytree of unused leaves, and an argument that only feeds a stop_gradient
    g = mt.grad(lambda p, x: mnp.sum(x * lax.stop_gradient(p["a"])))(
        {"a": x, "b": [arr(1.0), arr([[2.0]])]}, x)
    assert g["b"][1].shape == (1, 1) and not np.any(np.asarray(g["a"]))
    assert float(g["b"][0]) == 0.0
    # forward mode: an output that does not depend on the input has a zero tangent
    _, t = mt.jvp(lambda x: (x * 2.0, arr([1.0, 2.0])), (x,), (x,))
    assert t[1].shape == (2,) and not np.any(np.asarray(t[1]))
    # vjp: a cotangent for an input the output ignores
    _, vjp_fn = mt.vjp(lambda a, b: a * 2.0, x, unused32)
    _, cb = vjp_fn(arr([1.0, 1.0, 1.0]))
    assert cb.shape == (2, 3) and cb.dtype == np.float32 and not np.any(np.asarray(cb))


def test_integer_primal_takes_zero_tangent(x64):
    k = mnp.asarray(np.int32(3))
    out, t = mt.jvp(lambda x, k: x * k.astype(mnp.float64), (arr(2.0), k), (arr(1.0), k))
    assert float(out) == 6.0 and float(t) == 3.0
    _, vjp_fn = mt.vjp(lambda x, k: x * k.astype(mnp.float64), arr(2.0), k)
    gx, gk = vjp_fn(arr(1.0))
    assert float(gx) == 3.0 and gk.shape == () and not np.any(np.asarray(gk))


# ---- control flow on concrete values ------------------------------------------------------
def test_python_control_flow_on_concrete_values(x64):
    def f(x):
        if x > 0:
            return x ** 2
        return -x ** 3

    assert float(mt.grad(f)(arr(2.0))) == 4.0
    assert float(mt.grad(f)(arr(-1.0))) == -3.0
    assert float(mt.grad(mt.grad(f))(arr(-1.0))) == 6.0

    def g(x):
        acc = x
        while acc < 10.0:  # a data-dependent loop: 3 doublings from 1.5
            acc = acc * 2.0
        return acc + float(x) * 0.0  # float() of a tracer with a concrete value

    assert float(mt.grad(g)(arr(1.5))) == 8.0
    assert float(mt.jvp(g, (arr(1.5),), (arr(1.0),))[1]) == 8.0
    np.testing.assert_allclose(np_(mt.jacrev(lambda v: v * (2.0 if v[0] > 0 else 3.0))(
        arr([1.0, -1.0]))), 2 * np.eye(2))
    np.testing.assert_allclose(np_(mt.hessian(f)(arr(-2.0))), 12.0)


# ---- jvp, linearize, vjp -----------------------------------------------------------------
def test_jvp_pytrees(x64):
    def f(p):
        return {"s": mnp.sin(p["a"]) * p["b"][0], "t": (p["a"] ** 2, p["b"][1] * 3.0)}

    p = {"a": arr([0.5, 1.0]), "b": (arr(2.0), arr([[1.0, 2.0]]))}
    v = {"a": arr([1.0, -1.0]), "b": (arr(0.5), arr([[0.0, 1.0]]))}
    out, t = mt.jvp(f, (p,), (v,))
    a = np.array([0.5, 1.0])
    assert_tree_close(out, {"s": np.sin(a) * 2.0, "t": (a ** 2, np.array([[3.0, 6.0]]))})
    assert_tree_close(t, {"s": np.cos(a) * [1.0, -1.0] * 2.0 + np.sin(a) * 0.5,
                          "t": (2 * a * [1.0, -1.0], np.array([[0.0, 3.0]]))})
    # primals as a list works as well
    _, t2 = mt.jvp(f, [p], [v])
    assert_tree_close(t2, t)
    _, t3, aux = mt.jvp(lambda p: (f(p), "aux"), (p,), (v,), has_aux=True)
    assert aux == "aux"
    assert_tree_close(t3, t)


def test_aux_outputs_are_values_not_tracers(x64):
    # JAX returns the primal value of aux (it carries no derivative): it must be usable
    # after the transformation ended
    x = arr([0.5, 1.0])

    def f(x):
        return mnp.sin(x), {"cos": mnp.cos(x)}

    want = np.cos([0.5, 1.0])
    _, _, aux = mt.jvp(f, (x,), (x,), has_aux=True)
    np.testing.assert_allclose(np_(aux["cos"] + 1.0), want + 1.0)
    _, _, aux = mt.vjp(f, x, has_aux=True)
    np.testing.assert_allclose(np_(aux["cos"] + 1.0), want + 1.0)
    _, _, aux = mt.linearize(f, x, has_aux=True)
    np.testing.assert_allclose(np_(aux["cos"] + 1.0), want + 1.0)
    _, aux = mt.grad(lambda x: (mnp.sum(f(x)[0]), f(x)[1]), has_aux=True)(x)
    np.testing.assert_allclose(np_(aux["cos"] + 1.0), want + 1.0)
    # under an outer transformation, aux is that transformation's value (here: a JVP
    # tracer of the outer jvp, which it differentiates)
    def outer(x):
        _, aux = mt.grad(lambda y: (mnp.sum(mnp.sin(y) * x), x * y), has_aux=True)(x)
        return aux
    _, t = mt.jvp(outer, (x,), (arr([1.0, 1.0]),))
    np.testing.assert_allclose(np_(t), 2 * np.array([0.5, 1.0]))


def test_linearize_matches_jvp(x64):
    def f(x, y):
        return {"u": mnp.tanh(x) * y, "w": mnp.exp(x * y)}

    x, y = arr([0.3, -0.2, 1.1]), arr(0.7)
    out, f_jvp = mt.linearize(f, x, y)
    assert_tree_close(out, f(x, y))
    rng = np.random.default_rng(0)
    for _ in range(3):
        tx, ty = arr(rng.standard_normal(3)), arr(rng.standard_normal())
        assert_tree_close(f_jvp(tx, ty), mt.jvp(f, (x, y), (tx, ty))[1])
    # linear in the tangents
    tx, ty = arr([1.0, 2.0, 3.0]), arr(-1.0)
    assert_tree_close(f_jvp(tx * 2.0, ty * 2.0),
                      tree_util.tree_map(lambda t: t * 2.0, f_jvp(tx, ty)))
    out, f_jvp, aux = mt.linearize(lambda x: (mnp.sin(x), x.shape), x, has_aux=True)
    assert aux == (3,)
    np.testing.assert_allclose(np_(f_jvp(arr([1.0, 0.0, 0.0]))), [math.cos(0.3), 0, 0])
    with pytest.raises(TypeError, match="f_jvp"):
        mt.linearize(f, x, y)[1](tx)


def test_vjp_pytree_cotangents_and_aux(x64):
    def f(p, s):
        return ({"a": mnp.sin(p[0]) * s, "b": [p[1] * p[0][0], s ** 2]},
                {"note": p[1] * 0.0})

    p = (arr([0.5, 1.5]), arr([[1.0, -1.0]]))
    s = arr(2.0)
    _, vjp_fn, aux = mt.vjp(f, p, s, has_aux=True)
    assert set(aux) == {"note"}
    ct = {"a": arr([1.0, 2.0]), "b": [arr([[0.5, 0.25]]), arr(3.0)]}
    cp, cs = vjp_fn(ct)
    assert isinstance(cp, tuple) and cp[0].shape == (2,) and cp[1].shape == (1, 2)
    # <ct, J v> == <vjp(ct), v> for random v, with J v from jvp
    rng = np.random.default_rng(1)
    for _ in range(2):
        vp = (arr(rng.standard_normal(2)), arr(rng.standard_normal((1, 2))))
        vs = arr(rng.standard_normal())
        _, t = mt.jvp(lambda p, s: f(p, s)[0], (p, s), (vp, vs))
        lhs = sum(float(np.sum(np_(a) * np_(b))) for a, b in
                  zip(tree_util.tree_leaves(ct), tree_util.tree_leaves(t)))
        rhs = sum(float(np.sum(np_(a) * np_(b))) for a, b in
                  zip(tree_util.tree_leaves((cp, cs)), tree_util.tree_leaves((vp, vs))))
        assert lhs == pytest.approx(rhs, rel=1e-12)
    # vjp_fn can be called several times
    cp2, _ = vjp_fn(tree_util.tree_map(lambda c: c * 2.0, ct))
    np.testing.assert_allclose(np_(cp2[0]), 2 * np_(cp[0]), rtol=1e-12)


# ---- Jacobians and Hessians against finite differences ------------------------------------
A = np.array([[0.5, -1.0, 0.25], [2.0, 0.1, -0.3]])


def vec_fn(x):
    return mnp.tanh(arr(A) @ x) + x[:2] ** 2


@pytest.mark.parametrize("jac", [mt.jacfwd, mt.jacrev])
def test_jacobian_vector_to_vector(x64, jac):
    x = np.array([0.3, -0.7, 1.2])
    J = jac(vec_fn)(arr(x))
    assert J.shape == (2, 3)
    np.testing.assert_allclose(np_(J), fd_jacobian(vec_fn, x), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("jac", [mt.jacfwd, mt.jacrev])
def test_jacobian_matrix_input(x64, jac):
    def f(X):
        return mnp.sin(X) @ X.T  # (2, 3) -> (2, 2)

    X = np.array([[0.1, 0.2, -0.3], [1.0, -0.5, 0.4]])
    J = jac(f)(arr(X))
    assert J.shape == (2, 2, 2, 3)
    np.testing.assert_allclose(np_(J), fd_jacobian(f, X), rtol=1e-7, atol=1e-9)
    # scalar input and scalar output
    assert jac(lambda t: mnp.sin(t) * arr([1.0, 2.0]))(arr(0.5)).shape == (2,)
    assert jac(lambda v: mnp.sum(v ** 2))(arr(X)).shape == (2, 3)


@SETTINGS
@given(data=st.data())
def test_jacobian_shapes_drawn(x64, data):
    in_shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    x = data.draw(hnp.arrays(np.float64, in_shape, elements=st.floats(-2, 2)))
    W = np.linspace(-1, 1, 6).reshape(2, 3)

    def f(v):
        s = mnp.sum(mnp.sin(v) * v)
        return {"vec": mnp.tanh(arr(W) * s), "sq": v ** 2}

    want_vec = fd_jacobian(lambda v: f(v)["vec"], x)
    want_sq = fd_jacobian(lambda v: f(v)["sq"], x)
    for jac in (mt.jacfwd, mt.jacrev):
        J = jac(f)(arr(x))
        assert J["vec"].shape == (2, 3) + in_shape and J["sq"].shape == in_shape * 2
        np.testing.assert_allclose(np_(J["vec"]), want_vec, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(np_(J["sq"]), want_sq, rtol=1e-6, atol=1e-8)


def test_jacobian_pytree_in_and_out_and_argnums(x64):
    def f(p, c):
        return (p["a"] * p["b"][0] * c, {"q": mnp.sin(p["b"][1])})

    p = {"a": arr([1.0, 2.0]), "b": (arr(3.0), arr([[0.5, -0.5, 0.25]]))}
    c = arr(2.0)
    for jac in (mt.jacfwd, mt.jacrev):
        J = jac(f)(p, c)
        # out tree of in trees, blocks shaped out.shape + in.shape
        assert J[0]["a"].shape == (2, 2) and J[0]["b"][0].shape == (2,)
        assert J[0]["b"][1].shape == (2, 1, 3) and J[1]["q"]["a"].shape == (1, 3, 2)
        assert J[1]["q"]["b"][1].shape == (1, 3, 1, 3)
        np.testing.assert_allclose(np_(J[0]["a"]), np.eye(2) * 6.0)
        np.testing.assert_allclose(np_(J[0]["b"][0]), [2.0, 4.0])
        assert not np.any(np_(J[0]["b"][1])) and not np.any(np_(J[1]["q"]["a"]))
        np.testing.assert_allclose(np_(J[1]["q"]["b"][1]).reshape(3, 3),
                                   np.diag(np.cos([0.5, -0.5, 0.25])))
        # a tuple of argnums: each output leaf gets a tuple (d/dp, d/dc)
        Jt = jac(f, argnums=(0, 1))(p, c)
        assert isinstance(Jt[0], tuple) and isinstance(Jt[1]["q"], tuple)
        assert_tree_close(Jt[0][0], J[0])
        assert_tree_close(Jt[1]["q"][0], J[1]["q"])
        np.testing.assert_allclose(np_(Jt[0][1]), [3.0, 6.0])
        assert Jt[1]["q"][1].shape == (1, 3) and not np.any(np_(Jt[1]["q"][1]))
        Jc_only = jac(f, argnums=-1)(p, c)
        np.testing.assert_allclose(np_(Jc_only[0]), [3.0, 6.0])


@pytest.mark.parametrize("jac", [mt.jacfwd, mt.jacrev])
def test_jacobian_has_aux(x64, jac):
    J_aux, aux = jac(lambda x: (x * 2.0, {"x": mnp.sin(x), "s": "static"}), has_aux=True)(
        arr([1.0, 2.0]))
    np.testing.assert_allclose(np_(J_aux), 2 * np.eye(2))
    assert aux["s"] == "static"
    np.testing.assert_allclose(np_(aux["x"]), np.sin([1.0, 2.0]))  # a value, not a tracer


def scalar_fn(x):
    return mnp.sum(mnp.sin(x) * x[::-1]) + mnp.prod(mnp.exp(x * 0.1))


def test_hessian_matches_fd_of_grad(x64):
    x = np.array([0.3, -0.7, 1.2, 0.4])
    H = mt.hessian(scalar_fn)(arr(x))
    assert H.shape == (4, 4)
    want = fd_jacobian(mt.grad(scalar_fn), x)
    np.testing.assert_allclose(np_(H), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(np_(H), np_(H).T, rtol=1e-12, atol=1e-14)
    # hessian == jacfwd(jacrev) == jacrev(jacrev) == jacfwd(jacfwd) == jacrev(jacfwd)
    for outer in (mt.jacfwd, mt.jacrev):
        for inner in (mt.jacfwd, mt.jacrev):
            np.testing.assert_allclose(np_(outer(inner(scalar_fn))(arr(x))), np_(H),
                                       rtol=1e-12, atol=1e-12)


def test_hessian_matrix_input_and_pytree(x64):
    def f(X):
        return mnp.sum(mnp.tanh(X) ** 2)

    X = np.array([[0.1, -0.4], [0.7, 0.2], [-0.3, 0.5]])
    H = mt.hessian(f)(arr(X))
    assert H.shape == (3, 2, 3, 2)
    np.testing.assert_allclose(np_(H), fd_jacobian(mt.grad(f), X), rtol=1e-7, atol=1e-9)

    def g(p):
        return mnp.sum(p["w"] ** 2 * p["b"]) + mnp.sin(p["b"])

    p = {"w": arr([1.0, 2.0]), "b": arr(0.5)}
    Hp = mt.hessian(g)(p)
    assert Hp["w"]["w"].shape == (2, 2) and Hp["w"]["b"].shape == (2,)
    assert Hp["b"]["w"].shape == (2,) and Hp["b"]["b"].shape == ()
    np.testing.assert_allclose(np_(Hp["w"]["w"]), np.diag([1.0, 1.0]))
    np.testing.assert_allclose(np_(Hp["w"]["b"]), [2.0, 4.0])
    np.testing.assert_allclose(np_(Hp["b"]["w"]), [2.0, 4.0])
    assert float(Hp["b"]["b"]) == pytest.approx(-math.sin(0.5))
    # has_aux and argnums
    (Ha, aux) = mt.hessian(lambda x, y: (mnp.sum(x ** 3) * y, "aux"), argnums=0,
                           has_aux=True)(arr([1.0, 2.0]), arr(2.0))
    assert aux == "aux"
    np.testing.assert_allclose(np_(Ha), np.diag([12.0, 24.0]))
    # a vector output: out.shape + in.shape + in.shape
    assert mt.hessian(lambda v: v ** 3)(arr([1.0, 2.0])).shape == (2, 2, 2)


def test_grad_check_grads_through_api(x64):
    # grad and jacrev are differentiable functions themselves (FD on the derivative)
    check_grads(mt.grad(scalar_fn), (np.array([0.3, -0.7, 1.2]),), order=2)
    check_grads(mt.jacrev(vec_fn), (np.array([0.3, -0.7, 1.2]),), order=1)


# ---- error messages -------------------------------------------------------------------------
def test_error_grad_of_nonscalar_output(x64):
    def my_fn(x):
        return x * 2.0

    with pytest.raises(TypeError, match=r"scalar output") as e:
        line = _line_after()
        mt.grad(my_fn)(arr([1.0, 2.0, 3.0]))
    msg = str(e.value)
    assert "f64[3]" in msg and "my_fn" in msg
    assert "vjp" in msg and "jacrev" in msg
    assert f"{HERE}:{line}" in msg
    with pytest.raises(TypeError, match=r"scalar output.*f64\[\], f64\[\]"):
        mt.grad(lambda x: (x, x))(arr(1.0))


def test_error_grad_of_integer_output(x64):
    with pytest.raises(TypeError, match=r"float.*output.*i32\[\]") as e:
        line = _line_after()
        mt.grad(lambda x: lax.convert_element_type(x, np.int32))(arr(1.5))
    assert f"{HERE}:{line}" in str(e.value)
    with pytest.raises(TypeError, match=r"float.*output.*bool\[\]"):
        mt.grad(lambda x: x > 0)(arr(1.5))


def test_error_grad_wrt_integer_input(x64):
    def f(x, k):
        return x * k

    with pytest.raises(TypeError, match=r"argument 1.*i32\[\]") as e:
        line = _line_after()
        mt.grad(f, argnums=1)(arr(1.5), mnp.asarray(np.int32(2)))
    assert f"{HERE}:{line}" in str(e.value) and "argnums" in str(e.value)
    with pytest.raises(TypeError, match=r"argument 0.*i64\[2\]"):
        mt.jacrev(lambda v: v * 2)(mnp.asarray(np.array([1, 2], np.int64)))
    with pytest.raises(TypeError, match=r"argument 0"):
        mt.jacfwd(lambda p: p["a"] * 2)({"a": mnp.asarray(np.array([1, 2], np.int32))})


def test_error_argnums_out_of_range(x64):
    with pytest.raises(ValueError, match=r"argnums 2 is out of range.*2 positional") as e:
        line = _line_after()
        mt.grad(lambda x, y: x * y, argnums=2)(arr(1.0), arr(2.0))
    assert f"{HERE}:{line}" in str(e.value)
    with pytest.raises(ValueError, match=r"argnums -3 is out of range"):
        mt.grad(lambda x, y: x * y, argnums=-3)(arr(1.0), arr(2.0))
    with pytest.raises(ValueError, match=r"argnums \(0, 5\) is out of range"):
        mt.value_and_grad(lambda x, y: x * y, argnums=(0, 5))(arr(1.0), arr(2.0))
    with pytest.raises(ValueError, match=r"argnums"):
        mt.jacrev(lambda x: x, argnums=1)(arr(1.0))


def test_error_has_aux_without_a_pair(x64):
    def my_loss(x):
        return x * 2.0

    with pytest.raises(TypeError, match=r"has_aux.*pair") as e:
        mt.grad(my_loss, has_aux=True)(arr(1.0))
    # the message names the user's function and the transformation they called
    assert "my_loss" in str(e.value) and "grad" in str(e.value)
    with pytest.raises(TypeError, match=r"has_aux.*pair.*tuple"):
        mt.grad(lambda x: (x, x, x), has_aux=True)(arr(1.0))
    with pytest.raises(TypeError, match=r"has_aux.*pair"):
        mt.vjp(my_loss, arr(1.0), has_aux=True)
    with pytest.raises(TypeError, match=r"has_aux.*pair"):
        mt.jvp(my_loss, (arr(1.0),), (arr(1.0),), has_aux=True)


def test_error_vjp_fn_wrong_cotangent(x64):
    _, vjp_fn = mt.vjp(lambda x: (x * 2.0, {"a": x}), arr([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"vjp_fn.*structure"):
        vjp_fn(arr([1.0, 1.0]))
    with pytest.raises(TypeError, match=r"vjp_fn.*structure"):
        vjp_fn((arr([1.0, 1.0]), {"b": arr([1.0, 1.0])}))
    with pytest.raises(ValueError, match=r"vjp_fn.*leaf 1.*f64\[3\].*f64\[2\]"):
        vjp_fn((arr([1.0, 1.0]), {"a": arr([1.0, 1.0, 1.0])}))
    # a cotangent of the wrong dtype is reported by vjp_fn itself (JAX: "Type of cotangent
    # input to vjp pullback function ... is not the expected tangent type")
    _, vjp_fn = mt.vjp(lambda x: x * 2.0, arr([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"vjp_fn.*cotangent.*f32\[2\].*f64\[2\]"):
        vjp_fn(mnp.asarray(np.array([1.0, 1.0], np.float32)))


def test_error_jvp_mismatched_tangents(x64):
    def f(x):
        return x * 2.0

    with pytest.raises(ValueError, match=r"jvp.*shapes.*f64\[2\].*f64\[3\]"):
        mt.jvp(f, (arr([1.0, 2.0]),), (arr([1.0, 2.0, 3.0]),))
    with pytest.raises(TypeError, match=r"jvp.*dtypes.*f64\[2\].*f32\[2\]"):
        mt.jvp(f, (arr([1.0, 2.0]),), (mnp.asarray(np.ones(2, np.float32)),))
    with pytest.raises(TypeError, match=r"jvp.*tree structure"):
        mt.jvp(lambda a, b: a * b, (arr(1.0), arr(2.0)), (arr(1.0),))
    with pytest.raises(TypeError, match=r"jvp.*tuples or lists"):
        mt.jvp(f, arr(1.0), arr(1.0))


def test_error_non_array_output(x64):
    def my_fn(x):
        return "not an array"

    with pytest.raises(TypeError, match=r"returned a str") as e:
        mt.grad(my_fn)(arr(1.0))
    assert "my_fn" in str(e.value)
