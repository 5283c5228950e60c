"""mt.vmap's interface: in_axes/out_axes forms, keyword arguments, axis_size, errors, and
composition with grad, jacobians, checkpoint and custom rules (against loop references)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.errors import ConcretizationTypeError, UnexpectedTracerError
from tests.batching.vmap_check import assert_tree_close, check_vmap

rng = np.random.default_rng(0)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- in_axes / out_axes ------------------------------------------------------------------
@given(st.integers(1, 4), st.integers(0, 3), st.integers(-3, 2), st.data())
def test_in_and_out_axes_positions(n, where, out_axis, data):
    shape = [2, 3]
    shape.insert(where % 3, n)
    x = rand(*shape)
    in_axis = data.draw(st.sampled_from([where % 3, where % 3 - 3]))
    check_vmap(lambda a: mnp.sin(a) * 2.0, (x,), in_axes=in_axis, out_axes=out_axis)


def test_none_in_axes_and_python_scalars():
    x, w = rand(5, 3), rand(3)
    check_vmap(lambda a, b, c: a * b + c, (x, w, 2.0), in_axes=(0, None, None))


def test_list_in_axes_is_a_tuple():
    x, y = rand(3, 4), rand(4, 3)
    got = mt.vmap(lambda a, b: a + b, in_axes=[0, 1])(x, y)
    np.testing.assert_allclose(np.asarray(got), x + y.T, rtol=1e-6)


def test_pytree_prefix_in_axes():
    params = {"w": rand(3, 2), "b": rand(2)}
    xs = rand(4, 3)

    def f(p, x):
        return x @ p["w"] + p["b"]

    got = mt.vmap(f, in_axes=({"w": None, "b": None}, 0))(params, xs)
    np.testing.assert_allclose(np.asarray(got), xs @ params["w"] + params["b"], rtol=1e-5)
    got2 = mt.vmap(f, in_axes=(None, 0))(params, xs)
    assert_tree_close(got2, got)
    # batch only the bias
    bs = rand(4, 2)
    got3 = mt.vmap(f, in_axes=({"w": None, "b": 0}, 0))({"w": params["w"], "b": bs}, xs)
    np.testing.assert_allclose(np.asarray(got3), xs @ params["w"] + bs, rtol=1e-5)


def test_out_axes_pytree_and_none():
    xs, c = rand(4, 3), rand(3)

    def f(x):
        return {"y": x * 2.0, "c": mnp.asarray(c)}

    got = mt.vmap(f, out_axes={"y": 1, "c": None})(xs)
    np.testing.assert_allclose(np.asarray(got["y"]), (xs * 2).T, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got["c"]), c)
    # an unbatched output with an int out_axis is broadcast along the new axis
    got = mt.vmap(f)(xs)
    np.testing.assert_allclose(np.asarray(got["c"]), np.broadcast_to(c, (4, 3)))


def test_keyword_arguments_map_over_axis_0():
    xs, ys = rand(4, 3), rand(4, 3)
    got = mt.vmap(lambda x, *, y: x * y, in_axes=0)(xs, y=ys)
    np.testing.assert_allclose(np.asarray(got), xs * ys, rtol=1e-6)


def test_axis_size_without_mapped_arguments():
    got = mt.vmap(lambda x: x + 1.0, in_axes=None, axis_size=3)(mnp.ones(2))
    np.testing.assert_allclose(np.asarray(got), np.full((3, 2), 2.0))


def test_size_zero_batch():
    got = mt.vmap(lambda x: mnp.sum(mnp.exp(x)))(np.zeros((0, 3), np.float32))
    assert got.shape == (0,)


def test_nested_vmap_over_two_axes():
    x = rand(2, 3, 4)
    got = mt.vmap(mt.vmap(lambda v: mnp.sum(v * v)), in_axes=1)(x)
    np.testing.assert_allclose(np.asarray(got), np.sum(x * x, axis=2).T, rtol=1e-5)
    # outer product by nesting with unmapped operands
    a, b = rand(3), rand(4)
    outer = mt.vmap(mt.vmap(lambda s, t: s * t, in_axes=(None, 0)), in_axes=(0, None))(a, b)
    np.testing.assert_allclose(np.asarray(outer), np.outer(a, b), rtol=1e-6)


def test_no_loop_hidden_the_jaxpr_does_not_grow_with_the_batch():
    def f(w, x):
        return mnp.sum(mnp.tanh(x @ w) ** 2)

    w = rand(3, 2)
    sizes = [len(mt.make_jaxpr(mt.vmap(mt.grad(f), in_axes=(None, 0)))(w, rand(n, 5, 3))
                 .jaxpr.eqns) for n in (1, 7, 64)]
    assert sizes[0] == sizes[1] == sizes[2]


def test_unbatched_work_stays_unbatched():
    w = rand(3, 3)
    jaxpr = mt.make_jaxpr(mt.vmap(lambda w, x: mnp.exp(w) @ x, in_axes=(None, 0)))(w, rand(5, 3))
    exp_eqn = next(e for e in jaxpr.jaxpr.eqns if e.primitive.name == "exp")
    assert exp_eqn.outvars[0].aval.shape == (3, 3)


# ---- errors --------------------------------------------------------------------------------
def test_error_inconsistent_sizes_names_arguments():
    def f(x, params):
        return x

    with pytest.raises(ValueError, match=r"inconsistent sizes") as e:
        mt.vmap(f)(np.ones((3, 2)), {"w": np.ones((4,))})
    msg = str(e.value)
    assert "argument x of type f32[3,2] has size 3" in msg
    assert "argument params['w'] of type f32[4] has size 4" in msg
    assert "test_api.py" in msg


def test_error_names_keyword_and_variadic_arguments():
    with pytest.raises(ValueError, match=r"keyword argument y\['a'\] of type f32\[4\] has size 4"):
        mt.vmap(lambda x, *, y: x)(np.ones((3, 2)), y={"a": np.ones(4)})
    with pytest.raises(ValueError, match=r"argument args\[1\] of type f32\[4\] has size 4"):
        mt.vmap(lambda *xs: xs[0])(np.ones((3, 2)), np.ones(4))


def test_error_axis_out_of_range_names_argument():
    with pytest.raises(ValueError, match=r"map argument y of type f32\[3\] along axis 1"):
        mt.vmap(lambda x, y: x + y, in_axes=(0, 1))(np.ones((3, 3)), np.ones(3))


def test_error_scalar_argument_cannot_be_mapped():
    with pytest.raises(ValueError, match=r"argument x of type f32\[\] along axis 0"):
        mt.vmap(lambda x: x)(np.float32(1.0))


def test_error_in_axes_length():
    with pytest.raises(ValueError, match=r"in_axes has 1 entries but the function was called "
                                         r"with 2 positional arguments"):
        mt.vmap(lambda x, y: x, in_axes=(0,))(np.ones(3), np.ones(3))


def test_error_in_axes_not_a_prefix():
    with pytest.raises(ValueError, match=r"in_axes .*tree prefix of the arguments"):
        mt.vmap(lambda p: p["a"], in_axes=({"b": 0},))({"a": np.ones(3)})


def test_error_bad_in_axes_types():
    with pytest.raises(TypeError, match=r"in_axes must be an int, None, or a tuple"):
        mt.vmap(lambda x: x, in_axes={"x": 0})
    with pytest.raises(TypeError, match=r"in_axes must be built of ints and None"):
        mt.vmap(lambda x: x, in_axes=(0.5,))


def test_error_inconsistent_axis_size():
    with pytest.raises(ValueError, match=r"axis_size=5"):
        mt.vmap(lambda x: x, axis_size=5)(np.ones((3,)))


def test_error_nothing_to_map():
    with pytest.raises(ValueError, match=r"no argument to map over.*axis_size"):
        mt.vmap(lambda x: x, in_axes=None)(np.ones(3))


def test_error_mapped_output_with_out_axes_none():
    with pytest.raises(ValueError, match=r"depends on the mapped axis, but out_axes is None"):
        mt.vmap(lambda x: x * 2.0, out_axes=None)(np.ones((3, 2)))


def test_error_non_array_output():
    with pytest.raises(TypeError, match=r"outputs must be arrays"):
        mt.vmap(lambda x: "text")(np.ones(3))


def test_error_bool_of_batched_value():
    def f(x):
        return x if x > 0 else -x

    with pytest.raises(ConcretizationTypeError, match=r"vmap\(f\)"):
        mt.vmap(f)(np.ones(3))


def test_error_leaked_batched_tracer():
    leaked = []
    mt.vmap(lambda x: leaked.append(x) or x)(np.ones(3))
    with pytest.raises(UnexpectedTracerError, match=r"vmap"):
        leaked[0] + 1.0


# ---- composition with differentiation --------------------------------------------------
def _logistic_loss(w, x, y):
    z = mnp.dot(x, w)
    return mnp.logaddexp(0.0, z) - y * z


def test_per_example_gradients_match_loop():
    w, xs, ys = rand(6), rand(8, 6), (rng.random(8) > 0.5).astype(np.float32)
    check_vmap(mt.grad(_logistic_loss), (w, xs, ys), in_axes=(None, 0, 0), rtol=1e-5)
    # against the closed form (sigmoid(z) - y) x
    z = xs @ w
    want = (1 / (1 + np.exp(-z)) - ys)[:, None] * xs
    got = mt.vmap(mt.grad(_logistic_loss), in_axes=(None, 0, 0))(w, xs, ys)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_grad_of_function_using_vmap(x64):
    w, xs, ys = rng.standard_normal(4), rng.standard_normal((5, 4)), rng.random(5)

    def total(w):
        return mnp.sum(mt.vmap(_logistic_loss, in_axes=(None, 0, 0))(w, xs, ys))

    def total_loop(w):
        return sum(_logistic_loss(w, xs[i], ys[i]) for i in range(5))

    np.testing.assert_allclose(np.asarray(mt.grad(total)(w)), np.asarray(mt.grad(total_loop)(w)),
                               rtol=1e-12)
    from tests.autodiff.fd import check_grads
    check_grads(total, (w,), order=2)


def test_vmap_of_jvp_and_vjp():
    x = rand(4, 3)
    ts = rand(4, 3)
    out, t_out = mt.vmap(lambda a, t: mt.jvp(mnp.sin, (a,), (t,)))(x, ts)
    np.testing.assert_allclose(np.asarray(t_out), np.cos(x) * ts, rtol=1e-6)

    def pull(a, c):
        return mt.vjp(mnp.tanh, a)[1](c)[0]

    check_vmap(pull, (x, ts))


def test_jacobians_are_one_batched_pass():
    def f(x):
        return mnp.sin(x) * mnp.sum(x)

    x = rand(5)
    for jac in (mt.jacfwd, mt.jacrev):
        jaxpr = mt.make_jaxpr(jac(f))(x)
        # no per-column repetition: the program is independent of the input size
        assert len(jaxpr.jaxpr.eqns) == len(mt.make_jaxpr(jac(f))(rand(40)).jaxpr.eqns)
    want = np.diag(np.cos(x) * x.sum()) + np.sin(x)[:, None]
    for jac in (mt.jacfwd, mt.jacrev):
        np.testing.assert_allclose(np.asarray(jac(f)(x)), want, rtol=1e-5, atol=1e-6)


def test_jacobian_of_pytree_function_with_mixed_leaves():
    def f(p):
        return {"u": p["a"] * p["b"][0, 0], "v": mnp.sum(p["a"] ** 2)}

    p = {"a": rand(3), "b": rand(2, 2)}
    jf, jr = mt.jacfwd(f)(p), mt.jacrev(f)(p)
    assert_tree_close(jf, jr, rtol=1e-5)
    assert jf["u"]["b"].shape == (3, 2, 2)
    np.testing.assert_allclose(np.asarray(jf["u"]["a"]), np.diag(np.full(3, p["b"][0, 0])),
                               rtol=1e-6)


def test_vmap_of_jacobians():
    xs = rand(4, 3)
    per = mt.vmap(mt.jacrev(mnp.tanh))(xs)
    want = np.stack([np.diag(1 - np.tanh(x) ** 2) for x in xs])
    np.testing.assert_allclose(np.asarray(per), want, rtol=1e-5, atol=1e-6)


# ---- call primitives -----------------------------------------------------------------------
@mt.custom_jvp
def _soft(x, k):
    return mnp.log1p(mnp.exp(k * x)) / k


@_soft.defjvp
def _soft_jvp(primals, tangents):
    x, k = primals
    tx, tk = tangents
    s = mt.lax.logistic(k * x)
    ans = _soft(x, k)
    return ans, s * tx + (x * s - ans) / k * tk


@mt.custom_vjp
def _clip_grad(x, y):
    return x * y


def _clip_fwd(x, y):
    return x * y, (x, y)


def _clip_bwd(res, g):
    x, y = res
    return (mnp.clip(g * y, -1.0, 1.0), g * x)


_clip_grad.defvjp(_clip_fwd, _clip_bwd)


@pytest.mark.parametrize("fn", [_soft, _clip_grad], ids=["custom_jvp", "custom_vjp"])
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, 0)])
def test_custom_rules_under_vmap(fn, in_axes):
    x = rand(3, 3) if in_axes[0] is not None else rand(3)
    y = rand(3, 3) if in_axes[1] is not None else rand(3)
    y = np.abs(y) + 0.5
    check_vmap(fn, (x, y), in_axes=in_axes)

    def loss(a, b):
        return mnp.sum(fn(a, b) * 3.0)

    check_vmap(mt.grad(loss, argnums=(0, 1)), (x, y), in_axes=in_axes, out_axes=0)

    def total(a, b):
        return mnp.sum(mt.vmap(loss, in_axes=in_axes)(a, b))

    def total_loop(a, b):
        n = 3
        take = [(lambda v, i, d=d: v if d is None else mnp.take(v, i, axis=d))
                for d in in_axes]
        return sum(loss(take[0](a, i), take[1](b, i)) for i in range(n))

    assert_tree_close(mt.grad(total, argnums=(0, 1))(x, y),
                      mt.grad(total_loop, argnums=(0, 1))(x, y), rtol=1e-5, atol=1e-6)


def test_jacfwd_of_vmapped_custom_jvp():
    x, k = rand(4), np.float32(2.0)
    J = mt.jacfwd(lambda v: mt.vmap(_soft, in_axes=(0, None))(v, k))(x)
    want = np.diag(1 / (1 + np.exp(-k * x)))
    np.testing.assert_allclose(np.asarray(J), want, rtol=1e-5, atol=1e-6)


def test_checkpoint_under_vmap():
    f = mt.checkpoint(lambda w, x: mnp.sum(mnp.tanh(x @ w)))
    w, xs = rand(3, 2), rand(4, 5, 3)
    check_vmap(f, (w, xs), in_axes=(None, 0))
    check_vmap(mt.grad(f), (w, xs), in_axes=(None, 0), rtol=1e-5)
    g = mt.grad(lambda w: mnp.sum(mt.vmap(f, in_axes=(None, 0))(w, xs)))(w)
    want = sum(np.asarray(mt.grad(f)(w, xs[i])) for i in range(4))
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5)
    jaxpr = mt.make_jaxpr(mt.vmap(f, in_axes=(None, 0)))(w, xs)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["checkpoint"]
