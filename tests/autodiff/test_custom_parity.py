"""custom_jvp / custom_vjp run what JAX runs under each transformation (call counts from
JAX 0.10, written literally), so a primal with Python control flow on values
differentiates; closures; vmap against the loop definition; linear_transpose and
closure_convert against closed forms."""

import functools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp

CALLS = Counter()


def _make(kind):
    """A fresh custom function (no cache may hide a call) that counts its calls."""
    if kind == "jvp":
        @mt.custom_jvp
        def f(x):
            CALLS["f"] += 1
            return mnp.sin(x)

        @f.defjvp
        def f_jvp(primals, tangents):
            CALLS["jvp"] += 1
            (x,), (t,) = primals, tangents
            return mnp.sin(x), mnp.cos(x) * t

        return f

    @mt.custom_vjp
    def g(x):
        CALLS["f"] += 1
        return mnp.sin(x)

    def g_fwd(x):
        CALLS["fwd"] += 1
        return mnp.sin(x), x

    def g_bwd(x, ct):
        CALLS["bwd"] += 1
        return (mnp.cos(x) * ct,)

    g.defvjp(g_fwd, g_bwd)
    return g


X, XS = mnp.array(0.5), mnp.ones(3)
CASES = {
    "eager": lambda h: h(X),
    "jvp": lambda h: mt.jvp(h, (X,), (X,)),
    "grad": lambda h: mt.grad(h)(X),
    "vjp": lambda h: mt.vjp(h, X)[1](X),
    "vjp_only": lambda h: mt.vjp(h, X),
    "jit(grad)": lambda h: mt.jit(mt.grad(h))(X),
    "grad(jit)": lambda h: mt.grad(mt.jit(h))(X),
    "vmap(grad)": lambda h: mt.vmap(mt.grad(h))(XS),
    "grad(vmap)": lambda h: mt.grad(lambda v: mt.vmap(h)(v).sum())(XS),
    "grad(grad)": lambda h: mt.grad(mt.grad(h))(X),
    "jit": lambda h: mt.jit(h)(X),
    "vmap": lambda h: mt.vmap(h)(XS),
    "make_jaxpr": lambda h: mt.make_jaxpr(h)(X),
    "jvp(grad)": lambda h: mt.jvp(mt.grad(h), (X,), (X,)),
    "jvp(jit)": lambda h: mt.jvp(mt.jit(h), (X,), (X,)),
    "jit(jvp)": lambda h: mt.jit(lambda x: mt.jvp(h, (x,), (x,)))(X),
    "jit(vmap(grad))": lambda h: mt.jit(mt.vmap(mt.grad(h)))(XS),
    "linearize": lambda h: mt.linearize(h, X)[1](X),
    "grad(grad(jit))": lambda h: mt.grad(mt.grad(mt.jit(h)))(X),
    "vmap(jvp)": lambda h: mt.vmap(lambda v: mt.jvp(h, (v,), (v,)))(XS),
    "jacfwd": lambda h: mt.jacfwd(h)(XS),
    "jacrev": lambda h: mt.jacrev(h)(XS),
    "hessian": lambda h: mt.hessian(lambda v: h(v).sum())(XS),
    "grad_of_constant_call": lambda h: mt.grad(lambda y: h(X) * y)(X),
}
# printed by the same cases run with jax 0.10.2 (jax.custom_jvp / jax.custom_vjp)
JAX_JVP_COUNTS = {
    "eager": {"f": 1}, "jvp": {"jvp": 1}, "grad": {"jvp": 1}, "vjp": {"jvp": 1},
    "vjp_only": {"jvp": 1}, "jit(grad)": {"jvp": 1}, "grad(jit)": {"f": 1, "jvp": 1},
    "vmap(grad)": {"jvp": 1}, "grad(vmap)": {"jvp": 1}, "grad(grad)": {"jvp": 1},
    "jit": {"f": 1}, "vmap": {"f": 1}, "make_jaxpr": {"f": 1}, "jvp(grad)": {"jvp": 1},
    "jvp(jit)": {"f": 1, "jvp": 1}, "jit(jvp)": {"jvp": 1}, "jit(vmap(grad))": {"jvp": 1},
    "linearize": {"jvp": 1}, "grad(grad(jit))": {"f": 1, "jvp": 1}, "vmap(jvp)": {"jvp": 1},
    "jacfwd": {"jvp": 1}, "jacrev": {"jvp": 1}, "hessian": {"jvp": 1},
    "grad_of_constant_call": {"f": 1},
}
FB = {"fwd": 1, "bwd": 1}
JAX_VJP_COUNTS = {  # "error": forward mode of a custom_vjp function raises TypeError
    "eager": {"f": 1}, "jvp": ("error", {"fwd": 1}), "grad": FB, "vjp": FB,
    "vjp_only": {"fwd": 1}, "jit(grad)": FB, "grad(jit)": {"f": 1, **FB},
    "vmap(grad)": FB, "grad(vmap)": FB, "grad(grad)": FB, "jit": {"f": 1}, "vmap": {"f": 1},
    "make_jaxpr": {"f": 1}, "jvp(grad)": FB, "jvp(jit)": ("error", {"f": 1, "fwd": 1}),
    "jit(jvp)": ("error", {"fwd": 1}), "jit(vmap(grad))": FB,
    "linearize": ("error", {"fwd": 1}), "grad(grad(jit))": {"f": 1, **FB},
    "vmap(jvp)": ("error", {"fwd": 1}), "jacfwd": ("error", {"fwd": 1}), "jacrev": FB,
    "hessian": FB, "grad_of_constant_call": {"f": 1},
}


@pytest.mark.parametrize("kind,expected", [("jvp", JAX_JVP_COUNTS), ("vjp", JAX_VJP_COUNTS)])
@pytest.mark.parametrize("case", list(CASES))
def test_call_counts_match_jax(kind, expected, case):
    CALLS.clear()
    want = expected[case]
    if isinstance(want, tuple):
        with pytest.raises(TypeError, match="forward-mode"):
            CASES[case](_make(kind))
        want = want[1]
    else:
        CASES[case](_make(kind))
    assert dict(CALLS) == want


# ---- a primal with Python control flow on values --------------------------------------
@mt.custom_jvp
def piecewise(x):
    return mnp.sin(x) if x > 0 else mnp.cos(x)


@piecewise.defjvp
def _piecewise_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    if x > 0:
        return mnp.sin(x), mnp.cos(x) * t
    return mnp.cos(x), -mnp.sin(x) * t


@mt.custom_vjp
def piecewise_vjp(x):
    return mnp.sin(x) if x > 0 else mnp.cos(x)


def _pw_fwd(x):
    return (mnp.sin(x) if x > 0 else mnp.cos(x)), x


def _pw_bwd(x, ct):
    return ((mnp.cos(x) if x > 0 else -mnp.sin(x)) * ct,)


piecewise_vjp.defvjp(_pw_fwd, _pw_bwd)


def _pw(x):
    return np.sin(x) if x > 0 else np.cos(x)


def _dpw(x):
    return np.cos(x) if x > 0 else -np.sin(x)


def _d2pw(x):
    return -np.sin(x) if x > 0 else -np.cos(x)


@pytest.mark.parametrize("fn", [piecewise, piecewise_vjp], ids=["custom_jvp", "custom_vjp"])
@given(x=st.floats(-3.0, 3.0).filter(lambda v: abs(v) > 1e-3))
def test_control_flow_on_values_under_grad(fn, x):
    with _x64():
        xa = mnp.asarray(np.float64(x))
        np.testing.assert_allclose(fn(xa), _pw(x), rtol=1e-12)
        np.testing.assert_allclose(mt.grad(fn)(xa), _dpw(x), rtol=1e-12)
        (ct,) = mt.vjp(fn, xa)[1](mnp.asarray(2.0))
        np.testing.assert_allclose(ct, 2 * _dpw(x), rtol=1e-12)
        np.testing.assert_allclose(mt.grad(mt.grad(fn))(xa), _d2pw(x), rtol=1e-12, atol=1e-15)
        v, g = mt.value_and_grad(lambda x: fn(x) * 3.0)(xa)
        np.testing.assert_allclose([v, g], [3 * _pw(x), 3 * _dpw(x)], rtol=1e-12)
        if fn is piecewise:
            y, t = mt.jvp(fn, (xa,), (mnp.asarray(0.5),))
            np.testing.assert_allclose([y, t], [_pw(x), 0.5 * _dpw(x)], rtol=1e-12)


class _x64:
    def __enter__(self):
        mt.config.update("enable_x64", True)

    def __exit__(self, *exc):
        mt.config.update("enable_x64", False)


def test_control_flow_on_values_under_jit_is_a_concretization_error():
    # under jit the primal is traced with abstract values, as in JAX
    with pytest.raises(mt.ConcretizationTypeError):
        mt.jit(mt.grad(piecewise))(mnp.array(0.5))


# ---- closures ---------------------------------------------------------------------------
def _closing_jvp(y):
    @mt.custom_jvp
    def f(x):
        return x * y

    f.defjvp(lambda p, t: (f(*p), t[0] * y))
    return f(mnp.array(2.0))


def _closing_vjp(y):
    @mt.custom_vjp
    def f(x):
        return x * y

    f.defvjp(lambda x: (x * y, None), lambda r, g: (g * y,))
    return f(mnp.array(2.0))


def _closing_bwd_only(y):
    @mt.custom_vjp
    def f(x):
        return x * 2.0

    f.defvjp(lambda x: (x * 2.0, None), lambda r, g: (g * y,))
    return f(y)


@pytest.mark.parametrize("outer", [_closing_jvp, _closing_vjp, _closing_bwd_only])
@pytest.mark.parametrize("transform", ["grad", "jit(grad)", "grad(jit)", "vjp"])
def test_closing_over_a_differentiated_value_is_a_clear_error(outer, transform):
    run = {"grad": lambda: mt.grad(outer)(mnp.array(3.0)),
           "jit(grad)": lambda: mt.jit(mt.grad(outer))(mnp.array(3.0)),
           "grad(jit)": lambda: mt.grad(mt.jit(outer))(mnp.array(3.0)),
           "vjp": lambda: mt.vjp(outer, mnp.array(3.0))[1](mnp.array(1.0))}[transform]
    with pytest.raises(TypeError, match="closes over a value that is being differentiated"):
        run()


def test_closure_error_names_the_function_and_the_line():
    with pytest.raises(TypeError) as info:
        mt.grad(_closing_vjp)(mnp.array(3.0))
    assert "custom_vjp function f" in str(info.value)
    assert "test_custom_parity.py" in str(info.value)


def test_closing_over_a_constant_or_a_batched_value_works():
    # values that are not differentiated may be closed over, batched ones included
    # (jax: vmap(outer)(ys, xs) = [0, 1.6829419, 2.7278922] and the derivatives below)
    def outer(y, x):
        @mt.custom_jvp
        def f(x):
            return mnp.sin(x) * y

        f.defjvp(lambda p, t: (f(*p), mnp.cos(p[0]) * t[0] * y * 10))
        return f(x)

    xs, ys = mnp.arange(3.0), mnp.arange(3.0) + 1
    x, y = np.arange(3.0), np.arange(3.0) + 1
    np.testing.assert_allclose(mt.vmap(outer)(ys, xs), np.sin(x) * y, rtol=1e-6)
    want = 10 * y * np.cos(x)
    np.testing.assert_allclose(mt.vmap(mt.grad(outer, 1))(ys, xs), want, rtol=1e-6)
    np.testing.assert_allclose(
        mt.grad(lambda x: mt.vmap(outer)(ys, x).sum())(xs), want, rtol=1e-6)
    np.testing.assert_allclose(
        mt.grad(lambda x: mt.vmap(outer, (0, None))(ys, x).sum())(mnp.array(1.0)),
        (10 * y * np.cos(1.0)).sum(), rtol=1e-6)
    np.testing.assert_allclose(
        mt.vmap(lambda y: mt.grad(outer, 1)(y, mnp.array(1.0)))(ys), 10 * y * np.cos(1.0),
        rtol=1e-6)


# ---- vmap equals the loop ---------------------------------------------------------------
@mt.custom_vjp
def scaled_mul(x, w):
    return x * w


scaled_mul.defvjp(lambda x, w: (x * w, (x, w)),
                  lambda res, g: (2.0 * g * res[1], 3.0 * g * res[0]))


@mt.custom_jvp
def scaled_sin(x, w):
    return mnp.sin(x) * w


scaled_sin.defjvp(lambda p, t: (scaled_sin(*p),
                                2.0 * mnp.cos(p[0]) * p[1] * t[0] + 3.0 * mnp.sin(p[0]) * t[1]))


@pytest.mark.parametrize("fn", [scaled_mul, scaled_sin], ids=["custom_vjp", "custom_jvp"])
@given(n=st.integers(0, 4), m=st.integers(1, 3), axes=st.sampled_from([(0, 0), (0, None),
                                                                          (None, 0), (1, 0)]),
       seed=st.integers(0, 100))
def test_vmap_of_grad_and_grad_of_vmap_equal_the_loop(fn, n, m, axes, seed):
    rng = np.random.default_rng(seed)
    shape = lambda ax: (m,) if ax is None else ((n, m) if ax == 0 else (m, n))
    x, w = (rng.standard_normal(shape(a)).astype(np.float32) for a in axes)
    take = lambda v, ax, i: v if ax is None else np.take(v, i, axis=ax)
    loss = lambda x, w: fn(x, w).sum()
    got = mt.vmap(mt.grad(loss, argnums=(0, 1)), in_axes=axes)(mnp.asarray(x), mnp.asarray(w))
    for i in range(n):
        gx, gw = mt.grad(loss, argnums=(0, 1))(mnp.asarray(take(x, axes[0], i)),
                                                mnp.asarray(take(w, axes[1], i)))
        np.testing.assert_allclose(got[0][i], gx, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1][i], gw, rtol=1e-5, atol=1e-6)
    # reverse mode through the vectorised call: unbatched operands collect the batch's sum
    gx, gw = mt.grad(lambda x, w: mt.vmap(fn, in_axes=axes)(x, w).sum(), argnums=(0, 1))(
        mnp.asarray(x), mnp.asarray(w))
    wx = np.zeros_like(x)
    ww = np.zeros_like(w)
    for i in range(n):
        xi, wi = take(x, axes[0], i), take(w, axes[1], i)
        a, b = mt.grad(loss, argnums=(0, 1))(mnp.asarray(xi), mnp.asarray(wi))
        if axes[0] is None:
            wx += np.asarray(a)
        else:
            np.moveaxis(wx, axes[0], 0)[i] += np.asarray(a)
        if axes[1] is None:
            ww += np.asarray(b)
        else:
            np.moveaxis(ww, axes[1], 0)[i] += np.asarray(b)
    np.testing.assert_allclose(gx, wx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw, ww, rtol=1e-5, atol=1e-6)


def test_vmap_of_a_call_on_unbatched_values_is_not_broadcast():
    # the function's output does not vary along the axis: it stays unbatched
    c = mnp.ones(3)
    out = mt.vmap(lambda x: scaled_sin(c, 2.0), out_axes=None)(mnp.ones((4, 2)))
    np.testing.assert_allclose(out, 2 * np.sin(1.0) * np.ones(3), rtol=1e-6)


# ---- linear_transpose --------------------------------------------------------------------
def test_linear_transpose_matches_the_matrix_transpose():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    f_t = mt.linear_transpose(lambda x: mnp.asarray(a) @ x, mnp.ones(4))
    ct = rng.standard_normal(3).astype(np.float32)
    (got,) = f_t(mnp.asarray(ct))
    np.testing.assert_allclose(got, a.T @ ct, rtol=1e-5)


def test_linear_transpose_pytrees_and_jax_values():
    # jax: linear_transpose(lambda x, y: (2*x + y, x - y), 1., 2.)((1., 3.)) == (5., -2.)
    f_t = mt.linear_transpose(lambda x, y: (2 * x + y, x - y), 1.0, 2.0)
    assert [float(v) for v in f_t((1.0, 3.0))] == [5.0, -2.0]
    # jax: transposing x.sum(0) broadcasts back: [[0,1,2],[0,1,2]]
    (g,) = mt.linear_transpose(lambda x: x.sum(0), mnp.ones((2, 3)))(mnp.arange(3.0))
    np.testing.assert_array_equal(g, [[0, 1, 2], [0, 1, 2]])
    (d,) = mt.linear_transpose(lambda d: {"a": d["x"] * 3.0}, {"x": mnp.ones(2)})(
        {"a": mnp.ones(2)})
    np.testing.assert_array_equal(d["x"], [3.0, 3.0])
    # adding a constant leaves the transpose alone (jax: 1.0); integers map to integers
    assert float(mt.linear_transpose(lambda x: x + 1.0, 1.0)(1.0)[0]) == 1.0
    assert int(mt.linear_transpose(lambda x: x * 2, 1)(3)[0]) == 6


def test_linear_transpose_under_jit_and_grad():
    f_t = mt.linear_transpose(lambda x: mnp.cumsum(x) * 2.0, mnp.ones(4))
    ct = mnp.arange(4.0)
    want = 2 * np.cumsum(np.arange(4.0)[::-1])[::-1]
    np.testing.assert_allclose(f_t(ct)[0], want)
    np.testing.assert_allclose(mt.jit(f_t)(ct)[0], want)
    np.testing.assert_allclose(mt.grad(lambda c: f_t(c)[0].sum())(ct), 2 * np.arange(1, 5.0))


@pytest.mark.parametrize("fn,what", [(lambda x: x * x, "mul"), (mnp.sin, "sin"),
                                     (lambda x: mnp.exp(x) + x, "exp")])
def test_linear_transpose_rejects_nonlinear_functions(fn, what):
    with pytest.raises(TypeError, match=f"is not linear: {what}.*test_custom_parity.py"):
        mt.linear_transpose(fn, 1.0)


def test_linear_transpose_checks_cotangents_and_dtypes():
    f_t = mt.linear_transpose(lambda x, y: (2 * x + y, x - y), 1.0, 2.0)
    with pytest.raises(TypeError, match="cotangent has structure"):
        f_t((1.0,))
    with pytest.raises(TypeError, match=r"cotangent f32\[2\] for an output f32\[\]"):
        f_t((mnp.ones(2), 1.0))
    with pytest.raises(TypeError, match="inexact inputs and outputs"):
        mt.linear_transpose(lambda x: x.astype(mnp.int32), 1.0)


# ---- closure_convert ---------------------------------------------------------------------
def test_closure_convert_hoists_only_traced_values():
    seen = []

    def outer(y):
        def f(x):
            return mnp.sin(x) * y + mnp.ones(2).sum()

        cf, consts = mt.closure_convert(f, mnp.array(1.0))
        seen.append(len(consts))
        return cf(mnp.array(2.0), *consts)

    np.testing.assert_allclose(outer(mnp.array(3.0)), np.sin(2.0) * 3 + 2, rtol=1e-6)
    np.testing.assert_allclose(mt.grad(outer)(mnp.array(3.0)), np.sin(2.0), rtol=1e-6)
    np.testing.assert_allclose(mt.jit(outer)(mnp.array(3.0)), np.sin(2.0) * 3 + 2, rtol=1e-6)
    # jax: no constant eagerly (y is a Python float there); one under grad and under jit
    assert seen == [0, 1, 1]


def test_closure_convert_makes_a_custom_vjp_closure_differentiable():
    def outer(y):
        def f(x):
            return x * y

        cf, consts = mt.closure_convert(f, mnp.array(1.0))

        @mt.custom_vjp
        def g(x, *consts):
            return cf(x, *consts)

        def fwd(x, *consts):
            return cf(x, *consts), (x, consts)

        def bwd(res, ct):
            x, consts = res
            _, pullback = mt.vjp(cf, x, *consts)
            return pullback(ct)

        g.defvjp(fwd, bwd)
        return g(mnp.array(2.0), *consts)

    # d/dy (2 y) = 2, through the hoisted constant
    np.testing.assert_allclose(mt.grad(outer)(mnp.array(3.0)), 2.0)


# ---- the usual patterns: a rule calling f, pytrees, nondiff_argnums -----------------------
def _make_tree_jvp():
    @mt.custom_jvp
    def f(x, y):
        CALLS["f"] += 1
        return {"a": x * y, "b": mnp.sin(x)}

    @f.defjvp
    def f_jvp(p, t):
        CALLS["jvp"] += 1
        (x, y), (tx, ty) = p, t
        return f(x, y), {"a": tx * y + x * ty, "b": mnp.cos(x) * tx}

    return f


def _make_nondiff_vjp():
    @functools.partial(mt.custom_vjp, nondiff_argnums=(0,))
    def g(n, x, w):
        CALLS["f"] += 1
        return (x * w) ** n

    def fwd(n, x, w):
        CALLS["fwd"] += 1
        return g(n, x, w), (x, w)

    def bwd(n, res, ct):
        CALLS["bwd"] += 1
        x, w = res
        d = n * (x * w) ** (n - 1) * ct
        return (d * w, d * x)

    g.defvjp(fwd, bwd)
    return g


_x, _y = mnp.array(0.7), mnp.array(1.3)
_xs, _ws = mnp.arange(3.0) / 3 + 0.1, mnp.arange(3.0) / 2 + 0.2
# (case, jax's counts, jax's values flattened and rounded to 4 digits)
PATTERNS = [
    ("jvp_grad", lambda: mt.grad(lambda x, y: _make_tree_jvp()(x, y)["a"]
                                 + _make_tree_jvp()(x, y)["b"], (0, 1))(_x, _y),
     {"jvp": 2, "f": 2}, [2.0648, 0.7]),
    ("jvp_jvp", lambda: mt.jvp(_make_tree_jvp(), (_x, _y), (mnp.array(1.0), mnp.array(0.0))),
     {"jvp": 1, "f": 1}, [0.91, 0.6442, 1.3, 0.7648]),
    ("jvp_vmap_grad", lambda: mt.vmap(mt.grad(lambda x, y: _make_tree_jvp()(x, y)["a"]),
                                      (0, None))(_xs, _y),
     {"jvp": 1, "f": 1}, [1.3, 1.3, 1.3]),
    ("jvp_hessian", lambda: mt.hessian(lambda x: _make_tree_jvp()(x, _y)["b"])(_x),
     {"jvp": 2, "f": 1}, [-0.6442]),
    ("jvp_jit_grad", lambda: mt.jit(mt.grad(lambda x: _make_tree_jvp()(x, _y)["b"]))(_x),
     {"jvp": 1, "f": 1}, [0.7648]),
    ("jvp_grad_jit", lambda: mt.grad(mt.jit(lambda x: _make_tree_jvp()(x, _y)["b"]))(_x),
     {"f": 2, "jvp": 1}, [0.7648]),
    ("vjp_grad", lambda: mt.grad(lambda x, w: _make_nondiff_vjp()(3, x, w), (0, 1))(_x, _y),
     {"fwd": 1, "f": 1, "bwd": 1}, [3.2296, 1.739]),
    ("vjp_vmap_grad", lambda: mt.vmap(mt.grad(lambda x, w: _make_nondiff_vjp()(3, x, w),
                                              (0, 1)), (0, None))(_xs, _y),
     {"fwd": 1, "f": 1, "bwd": 1}, [0.0659, 1.2376, 3.874, 0.0051, 0.4125, 2.2847]),
    ("vjp_grad_vmap", lambda: mt.grad(lambda x, w: mt.vmap(
        _make_nondiff_vjp(), (None, 0, None))(3, x, w).sum(), (0, 1))(_xs, _y),
     {"fwd": 1, "f": 1, "bwd": 1}, [0.0659, 1.2376, 3.874, 2.7023]),
    ("vjp_jacrev", lambda: mt.jacrev(lambda x: mt.vmap(_make_nondiff_vjp(), (None, 0, 0))(
        2, x, _ws))(_xs),
     {"fwd": 1, "f": 1, "bwd": 1}, [0.008, 0.0, 0.0, 0.0, 0.4247, 0.0, 0.0, 0.0, 2.208]),
    ("vjp_grad_grad", lambda: mt.grad(mt.grad(lambda x: _make_nondiff_vjp()(3, x, _y)))(_x),
     {"fwd": 2, "f": 1, "bwd": 1}, [9.2274]),
    ("vjp_jit_vmap", lambda: mt.jit(mt.vmap(mt.grad(lambda x, w: _make_nondiff_vjp()(2, x, w)),
                                            (0, 0)))(_xs, _ws),
     {"fwd": 1, "f": 1, "bwd": 1}, [0.008, 0.4247, 2.208]),
    ("vjp_vmap_vmap", lambda: mt.vmap(mt.vmap(mt.grad(
        lambda x, w: _make_nondiff_vjp()(2, x, w)), (0, None)), (None, 0))(_xs, _ws),
     {"fwd": 1, "f": 1, "bwd": 1},
     [0.008, 0.0347, 0.0613, 0.098, 0.4247, 0.7513, 0.288, 1.248, 2.208]),
]


@pytest.mark.parametrize("case,run,counts,values", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_usual_patterns_match_jax(case, run, counts, values):
    CALLS.clear()
    out = run()
    assert dict(CALLS) == counts
    flat = np.concatenate([np.ravel(np.asarray(v)) for v in mt.tree_util.tree_leaves(out)])
    np.testing.assert_allclose(flat, values, atol=2e-4)


# linear maps of a (3, 4) array, each with a NumPy reference
LINEAR_OPS = {
    "scale": (lambda x: -2.5 * x, lambda x: -2.5 * x),
    "transpose": (lambda x: x.T, lambda x: x.T),
    "reshape": (lambda x: x.reshape(4, 3), lambda x: x.reshape(4, 3)),
    "slice": (lambda x: x[1:, ::2], lambda x: x[1:, ::2]),
    "sum": (lambda x: x.sum(0, keepdims=True) + x, lambda x: x.sum(0, keepdims=True) + x),
    "cumsum": (lambda x: mnp.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1)),
    "matmul": (lambda x: mnp.asarray(np.arange(9.0).reshape(3, 3) / 9) @ x,
               lambda x: np.arange(9.0).reshape(3, 3) / 9 @ x),
    "concat": (lambda x: mnp.concatenate([x, 3.0 * x], 0),
               lambda x: np.concatenate([x, 3.0 * x], 0)),
    "pad": (lambda x: mnp.pad(x, ((1, 0), (0, 2))), lambda x: np.pad(x, ((1, 0), (0, 2)))),
    "named": (lambda x: mt.ad_checkpoint.checkpoint_name(x, "n") * 2.0, lambda x: 2.0 * x),
}


@given(names=st.lists(st.sampled_from(sorted(LINEAR_OPS)), min_size=1, max_size=3),
       seed=st.integers(0, 1000))
def test_linear_transpose_is_the_adjoint(names, seed):
    """<f(x), c> == <x, f_t(c)> for chains of linear ops, with f checked against NumPy."""
    with _x64():
        rng = np.random.default_rng(seed)

        def chain(x, which):
            pad = np.pad if which else mnp.pad
            for name in names:  # each result is brought back to (3, 4): linear too
                flat = LINEAR_OPS[name][which](x).reshape(-1)[:12]
                x = pad(flat, (0, 12 - flat.shape[0])).reshape(3, 4)
            return x

        x = rng.standard_normal((3, 4))
        y = chain(x, 1)
        np.testing.assert_allclose(chain(mnp.asarray(x), 0), y, rtol=1e-12, atol=1e-12)
        c = rng.standard_normal(y.shape)
        (xt,) = mt.linear_transpose(lambda v: chain(v, 0), mnp.zeros((3, 4)))(mnp.asarray(c))
        np.testing.assert_allclose(np.vdot(y, c), np.vdot(x, np.asarray(xt)), rtol=1e-10)
