"""Weak types through grad / value_and_grad / jacfwd / jacrev / hessian, and allow_int.

As in JAX: a gradient (and a jacrev block) has its argument's dtype and weak type, a jacfwd
block its output's. The expected dtypes, weak types and values are JAX's (0.10), written
out; derivatives are also checked against float64 finite differences."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from tests.autodiff.fd import numerical_jvp

h16 = mnp.arange(3, dtype=mnp.float16)


def _leaves(out):
    return [(str(v.dtype), bool(v.weak_type), np.asarray(v).tolist())
            for v in mt.tree_util.tree_leaves(out)]


JAX_CASES = {
    "grad_python_float": (lambda: mt.grad(lambda x: x * 2.0)(1.0), [("float32", True, 2.0)]),
    "grad_tuple": (lambda: mt.grad(lambda x, y: x * y, argnums=(0, 1))(1.0, mnp.float32(2.0)),
                   [("float32", True, 2.0), ("float32", False, 1.0)]),
    "grad_pytree": (lambda: mt.grad(lambda d: d["a"] * d["b"])({"a": 1.0, "b": mnp.float32(2)}),
                    [("float32", True, 2.0), ("float32", False, 1.0)]),
    "grad_weak_in_strong_out": (lambda: mt.grad(lambda x: (mnp.ones(2) * x).sum())(2.0),
                                [("float32", True, 2.0)]),
    "grad_weak_in_f16_out": (lambda: mt.grad(lambda x: (h16 * x).sum())(2.0),
                             [("float32", True, 3.0)]),
    "value_and_grad_f16": (lambda: mt.value_and_grad(lambda x: (h16 * x).sum())(2.0),
                           [("float16", False, 6.0), ("float32", True, 3.0)]),
    "value_and_grad_weak": (lambda: mt.value_and_grad(lambda x: x * 2.0)(1.0),
                            [("float32", True, 2.0), ("float32", True, 2.0)]),
    "grad_in_jit": (lambda: mt.jit(lambda z: mt.grad(lambda x: x * 2.0)(z))(1.0),
                    [("float32", True, 2.0)]),
    "grad_under_vmap": (lambda: mt.vmap(mt.grad(lambda x: x * 2.0))(mnp.ones(2)),
                        [("float32", False, [2.0, 2.0])]),
    "grad_numpy_scalar": (lambda: mt.grad(lambda x: x * 2.0)(np.float32(1.0)),
                          [("float32", False, 2.0)]),
    "grad_f16": (lambda: mt.grad(lambda w: w * 2.0)(mnp.float16(1)), [("float16", False, 2.0)]),
    "jacfwd_weak": (lambda: mt.jacfwd(lambda x: x * 2.0)(1.0), [("float32", True, 2.0)]),
    "jacrev_weak": (lambda: mt.jacrev(lambda x: x * 2.0)(1.0), [("float32", True, 2.0)]),
    "hessian_weak": (lambda: mt.hessian(lambda x: x * x * 2.0)(1.0), [("float32", True, 4.0)]),
    "jacfwd_takes_the_output_type": (lambda: mt.jacfwd(lambda x: h16 * x)(2.0),
                                     [("float16", False, [0.0, 1.0, 2.0])]),
    "jacrev_takes_the_input_type": (lambda: mt.jacrev(lambda x: h16 * x)(2.0),
                                    [("float32", True, [0.0, 1.0, 2.0])]),
    "jacfwd_strong_output": (lambda: mt.jacfwd(lambda x: mnp.ones(2) * x)(2.0),
                             [("float32", False, [1.0, 1.0])]),
    "jacrev_weak_input": (lambda: mt.jacrev(lambda x: mnp.ones(2) * x)(2.0),
                          [("float32", True, [1.0, 1.0])]),
    "jacrev_strong": (lambda: mt.jacrev(lambda x: x * 2.0)(mnp.ones(2)),
                      [("float32", False, [[2.0, 0.0], [0.0, 2.0]])]),
    "hessian_f16_terms": (lambda: mt.hessian(lambda x: (h16 * x * x).sum())(2.0),
                          [("float32", True, 6.0)]),
    "grad_allow_int": (lambda: mt.grad(lambda x, y: x * y, argnums=(0, 1), allow_int=True)(
        3, 2.0)[1], [("float32", True, 3.0)]),
    "value_and_grad_allow_int": (lambda: mt.value_and_grad(
        lambda x, y: x * y, argnums=(0, 1), allow_int=True)(3, 2.0)[0],
        [("float32", True, 6.0)]),
    "jacrev_allow_int": (lambda: mt.jacrev(lambda x: x * 2.0, allow_int=True)(1),
                         [("int32", True, 0)]),
}


@pytest.mark.parametrize("name", sorted(JAX_CASES))
def test_matches_jax(name):
    program, expected = JAX_CASES[name]
    assert _leaves(program()) == expected


def test_weak_gradient_keeps_the_other_operands_dtype():
    """The point of the weak type: f16_arr * grad(f)(2.) stays float16."""
    g = mt.grad(lambda x: x * x)(2.0)
    assert (h16 * g).dtype == np.float16
    _, g2 = mt.value_and_grad(lambda x: x * x)(2.0)
    assert (h16 * g2).dtype == np.float16
    assert (h16 * mt.jacfwd(lambda x: x * x)(2.0)).dtype == np.float16
    assert (h16 * mt.jacrev(lambda x: x * x)(2.0)).dtype == np.float16
    assert (h16 * mt.hessian(lambda x: x * x * x)(2.0)).dtype == np.float16


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(x=st.floats(-3.0, 3.0), which=st.sampled_from(["grad", "jacfwd", "jacrev"]))
def test_derivative_of_python_scalar_matches_finite_differences(x64, x, which):
    def f(v):
        return mnp.sin(v) * v + 0.5 * v * v

    d = getattr(mt, which)(f)(x)
    assert d.weak_type and d.dtype == np.float64  # a Python float's derivative stays weak
    want = numerical_jvp(f, [np.float64(x)], [np.float64(1.0)], 1e-6)[0]
    np.testing.assert_allclose(float(d), want, rtol=1e-6, atol=1e-8)
    h = mt.hessian(f)(x)
    assert h.weak_type
    want2 = numerical_jvp(mt.grad(f), [np.float64(x)], [np.float64(1.0)], 1e-5)[0]
    np.testing.assert_allclose(float(h), want2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("value", [3, True, np.zeros((2, 3), np.uint8), np.arange(4)])
def test_allow_int_gives_float0_zeros(value):
    g = mt.grad(lambda x, y: y * 2.0, argnums=(0, 1), allow_int=True)(value, 1.0)
    assert isinstance(g[0], np.ndarray) and g[0].dtype == mt.float0
    assert g[0].shape == np.shape(value)
    assert _leaves(g[1]) == [("float32", True, 2.0)]
    tree = mt.grad(lambda d: (d["a"] * d["b"]).sum(), allow_int=True)(
        {"a": value, "b": mnp.float32(2)})
    assert tree["a"].dtype == mt.float0 and tree["a"].shape == np.shape(value)
    assert float(mt.tree_util.tree_leaves(tree["b"])[0].sum()) == float(np.sum(value))
    # under jit too: the float0 zeros are part of the output structure (as JAX's jit)
    jitted = mt.jit(mt.grad(lambda x, y: y * mnp.sum(x), argnums=(0, 1), allow_int=True))
    g0, g1 = jitted(value, 1.0)
    assert isinstance(g0, np.ndarray) and g0.dtype == mt.float0
    assert g0.shape == np.shape(value)
    assert float(g1) == float(np.sum(value))


@pytest.mark.parametrize("fn", [mt.grad, mt.value_and_grad, mt.jacrev])
def test_integer_input_without_allow_int_is_an_error(fn):
    with pytest.raises(TypeError) as e:
        fn(lambda x: x * 2.0)(1)
    msg = str(e.value)
    assert "requires float or complex inputs" in msg and "i32[]" in msg
    assert "allow_int=True" in msg and "test_weak_types.py" in msg


def test_jacfwd_has_no_allow_int_and_says_how_to_fix():
    with pytest.raises(TypeError) as e:
        mt.jacfwd(lambda x: x * 2.0)(mnp.arange(3))
    msg = str(e.value)
    assert "jacfwd" in msg and "i32[3]" in msg and "astype" in msg and "pass allow_int" not in msg
