"""The other ways to give a user-defined primitive its derivative and batching rule
(tests/extend/ops.py): a hand-written backward pass (def_vjp), a linear primitive
(def_linear), no derivative (top_k_indices; def_zero_derivative), several results. Values
against NumPy, derivatives against float64 central differences, vmap against a loop, jit
against the un-jitted function."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import extend as mx
from mytorch import lax
from tests.autodiff.fd import check_grads
from tests.extend.ops import (
    cumsum_last_p, sincos_p, softplus_vjp_p, top_k_indices, top_k_ref,
)


def softplus(x):
    return softplus_vjp_p.bind(x)


def cumsum_last(x):
    return cumsum_last_p.bind(x)


def sincos(x):
    return sincos_p.bind(x)


# ---- top_k_indices: values, vmap, jit ----------------------------------------------------------
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), seed=st.integers(0, 99),
       data=st.data())
def test_top_k_matches_numpy_eager_jit_vmap(shape, seed, data):
    x = np.random.default_rng(seed).integers(-3, 4, shape).astype(np.float32)  # with ties
    k = data.draw(st.integers(0, shape[-1]))
    want = top_k_ref(x, k)
    np.testing.assert_array_equal(np.asarray(top_k_indices(x, k)), want)
    np.testing.assert_array_equal(np.asarray(mt.jit(lambda x: top_k_indices(x, k))(x)), want)
    if len(shape) > 1:
        got = mt.vmap(lambda r: top_k_indices(r, k), in_axes=len(shape) - 2)(x)
        loop = np.stack([top_k_ref(np.take(x, i, axis=len(shape) - 2), k)
                         for i in range(shape[-2])])
        np.testing.assert_array_equal(np.asarray(got), loop)


def test_differentiating_top_k_says_how_to_fix_it():
    x = mnp.asarray(np.arange(6.0, dtype=np.float32).reshape(2, 3))

    def loss(x):
        return mnp.sum(mnp.take_along_axis(x, top_k_indices(x, 2), axis=-1))

    with pytest.raises(NotImplementedError) as info:
        mt.grad(loss)(x)
    msg = str(info.value)
    for fragment in ("'jvp' rule of primitive 'top_k_indices'", "mx.def_jvp(prim, rule)",
                     "mx.def_zero_derivative(prim)", "lax.stop_gradient(x)", "ops.py"):
        assert fragment in msg, msg
    with pytest.raises(NotImplementedError, match="top_k_indices"):
        mt.jit(mt.grad(loss))(x)

    def stopped(x):  # the fix the message names: the indices need no derivative
        return mnp.sum(mnp.take_along_axis(x, top_k_indices(lax.stop_gradient(x), 2), -1))

    g = np.asarray(mt.grad(stopped)(x))
    np.testing.assert_array_equal(g, [[0, 1, 1], [0, 1, 1]])


def test_zero_derivative_lets_grad_flow_around():
    p = mx.primitive("test_ext_argmax_last")
    p.def_abstract_eval(lambda x: mx.ShapedArray(x.shape[:-1], np.int32))
    mx.def_numpy_kernel(p, lambda x: np.argmax(x, -1).astype(np.int32))
    mx.def_zero_derivative(p)
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], np.float32)

    def loss(x):
        return mnp.sum(mnp.take_along_axis(x, p.bind(x)[:, None], axis=-1) ** 2)

    np.testing.assert_array_equal(np.asarray(mt.grad(loss)(x)), [[0, 10, 0], [14, 0, 0]])
    np.testing.assert_array_equal(np.asarray(mt.jit(mt.grad(loss))(x)), np.asarray(
        mt.grad(loss)(x)))


# ---- def_vjp -------------------------------------------------------------------------------------
def test_vjp_defined_op_grad_jacrev_and_reverse_over_reverse(x64):
    x = np.random.default_rng(0).standard_normal(5)
    np.testing.assert_allclose(np.asarray(softplus(x)), np.logaddexp(0, x), rtol=1e-14)
    check_grads(softplus, (x,), order=1, modes=("rev",))
    s = 1 / (1 + np.exp(-x))  # reverse over reverse: bwd is differentiated again
    hess = np.asarray(mt.jacrev(mt.grad(lambda v: mnp.sum(softplus(v))))(x))
    np.testing.assert_allclose(hess, np.diag(s * (1 - s)), rtol=1e-12)
    check_grads(lambda v: mnp.sum(softplus(v) ** 2), (x,), order=1, modes=("rev",))
    jac = np.asarray(mt.jacrev(softplus)(x))
    np.testing.assert_allclose(jac, np.diag(s), rtol=1e-12)
    g = mt.grad(lambda v: mnp.sum(softplus(v)))
    np.testing.assert_allclose(np.asarray(mt.jit(g)(x)), np.asarray(g(x)), rtol=1e-14)
    per_row = mt.vmap(g)(np.stack([x, -x]))
    np.testing.assert_allclose(np.asarray(per_row), np.stack([g(x), g(-x)]), rtol=1e-14)


def test_vjp_defined_op_refuses_forward_mode():
    with pytest.raises(NotImplementedError, match=r"forward-mode .* of 'softplus_vjp' needs "
                                                  r"its JVP"):
        mt.jvp(softplus, (mnp.ones(3),), (mnp.ones(3),))


# ---- def_linear ----------------------------------------------------------------------------------
def test_linear_op_transposes(x64):
    x = np.random.default_rng(1).standard_normal((2, 4))
    np.testing.assert_allclose(np.asarray(cumsum_last(x)), np.cumsum(x, -1))
    check_grads(cumsum_last, (x,), order=2)
    check_grads(lambda v: mnp.sin(cumsum_last(v)), (x,), order=1)
    g = mt.grad(lambda v: mnp.sum(cumsum_last(v) * mnp.arange(4.0)))
    np.testing.assert_allclose(np.asarray(mt.jit(g)(x)), np.asarray(g(x)))
    got = mt.vmap(cumsum_last, in_axes=1)(x)
    np.testing.assert_allclose(np.asarray(got), np.stack([np.cumsum(x[:, i]) for i in range(4)]))


# ---- several results -----------------------------------------------------------------------------
def test_several_results(x64):
    x = np.random.default_rng(2).standard_normal((3, 2))
    s, c = sincos(x)
    np.testing.assert_allclose(np.asarray(s), np.sin(x))
    np.testing.assert_allclose(np.asarray(c), np.cos(x))
    check_grads(lambda v: sincos(v), (x,), order=2)
    got = mt.vmap(lambda v: sincos(v)[1], in_axes=1)(x)
    np.testing.assert_allclose(np.asarray(got), np.cos(x).T)
    jitted = mt.jit(lambda v: sincos(v)[0] * sincos(v)[1])(x)
    np.testing.assert_allclose(np.asarray(jitted), np.sin(x) * np.cos(x))


# ---- pmap ----------------------------------------------------------------------------------------
def test_pmap_runs_the_kernel_on_each_replica():
    from tests.extend.ops import bias_gelu, bias_gelu_ref

    before = mt.config.num_cpu_devices
    mt.config.update("num_cpu_devices", 2)
    try:
        x = np.random.default_rng(4).standard_normal((2, 3, 4)).astype(np.float32)
        b = np.random.default_rng(5).standard_normal(4).astype(np.float32)

        def step(x, b):
            g = mt.grad(lambda b: mnp.sum(bias_gelu(x, b)))(b)
            return bias_gelu(x, b), lax.psum(g, "i")

        out, g = mt.pmap(step, axis_name="i", in_axes=(0, None))(x, b)
        np.testing.assert_allclose(np.asarray(out), bias_gelu_ref(x, b), rtol=2e-6, atol=2e-6)
        want = sum(np.asarray(mt.grad(lambda b: mnp.sum(bias_gelu(xi, b)))(b)) for xi in x)
        np.testing.assert_allclose(np.asarray(g), np.stack([want, want]), rtol=1e-5)
    finally:
        mt.config.update("num_cpu_devices", before)


def test_symbolic_zero_tangents(x64):
    p = mx.primitive("test_ext_mul_sym")
    p.def_abstract_eval(lambda x, y: mx.ShapedArray(x.shape, x.dtype))
    mx.def_numpy_kernel(p, np.multiply)
    seen = []

    @mx.def_jvp(p, symbolic_zeros=True)
    def _(primals, tangents):
        (x, y), (dx, dy) = primals, tangents
        seen.append(tuple(type(t) is mx.Zero for t in tangents))
        out = 0
        if type(dx) is not mx.Zero:
            out = out + dx * y
        if type(dy) is not mx.Zero:
            out = out + x * dy
        return p.bind(x, y), out

    x, y = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    g = mt.grad(lambda x: mnp.sum(p.bind(x, y)))(x)
    np.testing.assert_allclose(np.asarray(g), y)
    assert seen == [(False, True)]
    check_grads(lambda x, y: p.bind(x, y), (x, y), order=1)


@pytest.mark.parametrize("wrap", ["jit", "checkpoint", "scan"])
def test_vjp_defined_op_inside_call_and_loop_primitives(x64, wrap):
    x = np.random.default_rng(5).standard_normal((3, 4))

    def f(v):
        return mnp.sum(softplus(v) ** 2)

    wrapped = {
        "jit": mt.jit(f),
        "checkpoint": mt.checkpoint(f),
        "scan": lambda v: lax.scan(lambda c, r: (c + f(r), None), 0.0, v)[0],
    }[wrap]
    s = 1 / (1 + np.exp(-x))
    want = 2 * np.logaddexp(0, x) * s
    np.testing.assert_allclose(np.asarray(mt.grad(wrapped)(x)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(mt.jit(mt.grad(wrapped))(x)), want, rtol=1e-12)
