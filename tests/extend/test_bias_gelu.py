"""The worked example `bias_gelu` (tests/extend/ops.py, docs/extend.md) under every
transformation: values against NumPy, derivatives against float64 central differences,
vmap against a Python loop, jit against the un-jitted function."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from tests.autodiff.fd import check_grads
from tests.extend.ops import bias_gelu, bias_gelu_p, bias_gelu_ref

# (x shape, b shape) pairs that broadcast: bias on the last axis, scalars, leading ones
SHAPES = [((3, 4), (4,)), ((2, 3, 5), (5,)), ((4,), ()), ((3, 1), (1, 6)), ((0, 3), (3,)),
          ((), ()), ((2, 3), (1, 3))]


@st.composite
def operands(draw, dtype=np.float32):
    rank = draw(st.integers(0, 3))
    out = draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank))
    tail = draw(st.integers(0, rank))  # b covers the trailing `tail` axes, some of size 1
    b_shape = [d if draw(st.booleans()) else 1 for d in out[rank - tail:]]
    x_shape = [d if draw(st.booleans()) or i >= rank - tail else 1 for i, d in enumerate(out)]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    return (rng.standard_normal(x_shape).astype(dtype) * 2,
            rng.standard_normal(b_shape).astype(dtype))


@given(operands())
def test_matches_numpy_eager_and_jit(args):
    x, b = args
    want = bias_gelu_ref(x.astype(np.float64), b.astype(np.float64))
    got = bias_gelu(mnp.asarray(x), mnp.asarray(b))
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=2e-6)
    jitted = mt.jit(lambda x, b: bias_gelu(x, b))  # a new function: no retrace warnings
    np.testing.assert_array_equal(np.asarray(jitted(x, b)), np.asarray(got))


def test_jaxpr_shows_the_primitive():
    text = str(mt.make_jaxpr(bias_gelu)(np.ones((2, 3), np.float32), np.ones(3, np.float32)))
    assert "bias_gelu a b" in text


@pytest.mark.parametrize("x_shape,b_shape", SHAPES)
def test_derivatives_match_finite_differences(x64, x_shape, b_shape):
    rng = np.random.default_rng(0)
    x, b = rng.standard_normal(x_shape), rng.standard_normal(b_shape)
    check_grads(bias_gelu, (x, b), order=2)


def test_grad_under_jit_equals_eager(x64):
    rng = np.random.default_rng(1)
    x, b = rng.standard_normal((3, 4)), rng.standard_normal(4)

    def loss(x, b):
        return mnp.sum(bias_gelu(x, b) ** 2)

    g = mt.grad(loss, argnums=(0, 1))
    eager, jitted = g(x, b), mt.jit(g)(x, b)
    for e, j in zip(eager, jitted, strict=True):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-12)
    # the reverse pass is the transposed JVP: only known primitives besides the forward op
    jaxpr = mt.make_jaxpr(g)(x, b)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns].count("bias_gelu") == 1


def _slice(a, axis, i):
    return a if axis is None else np.take(a, i, axis=axis)


@pytest.mark.parametrize("in_axes,x_shape,b_shape", [
    ((0, None), (3, 2, 5), (5,)), ((None, 0), (2, 5), (3, 5)), ((0, 0), (3, 5), (3, 5)),
    ((1, 0), (2, 3, 5), (3, 1)), ((None, 1), (4,), (4, 3)),
])
def test_vmap_matches_a_loop(in_axes, x_shape, b_shape):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(x_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    got = mt.vmap(bias_gelu, in_axes=in_axes)(x, b)
    want = np.stack([np.asarray(bias_gelu(_slice(x, in_axes[0], i), _slice(b, in_axes[1], i)))
                     for i in range(3)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_per_example_gradients_jit_vmap_grad(x64):
    rng = np.random.default_rng(3)
    xs, b = rng.standard_normal((4, 6)), rng.standard_normal(6)

    def loss(b, x):
        return mnp.sum(bias_gelu(x, b))

    per_example = mt.jit(mt.vmap(mt.grad(loss), in_axes=(None, 0)))(b, xs)
    want = np.stack([np.asarray(mt.grad(loss)(b, x)) for x in xs])
    np.testing.assert_allclose(np.asarray(per_example), want, rtol=1e-12)


def test_half_precision_runs_through_the_numpy_kernel():
    x = np.linspace(-3, 3, 8).astype(np.float16)
    got = mt.jit(bias_gelu)(x, np.float16(0.5) * np.ones(8, np.float16))
    assert got.dtype == np.float16
    np.testing.assert_allclose(np.asarray(got, np.float64), bias_gelu_ref(x, 0.5), atol=4e-3)


def test_bad_operands_name_the_primitive():
    with pytest.raises(TypeError, match=r"bias_gelu: x and b must have one floating dtype"):
        bias_gelu(mnp.ones(3), mnp.ones(3, dtype=np.int32))
    assert bias_gelu_p.kind == "extension"
