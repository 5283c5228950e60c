"""The jaxpr IR: golden printer output, check_jaxpr catching ill-typed programs, eval_jaxpr,
constants and literals, source lines on equations."""

import numpy as np
import pytest

import mytorch as mt
from mytorch import lax
from mytorch.core import jaxpr as core_jaxpr
from mytorch.core.array import from_numpy
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import Jaxpr, JaxprEqn, Literal, Var, check_jaxpr
from mytorch.errors import JaxprTypeError


def f32(*shape):
    return from_numpy(np.ones(shape, np.float32))


def test_printer_golden_single_output():
    closed = mt.make_jaxpr(lambda x: lax.mul(lax.sin(x), 2.0))(f32(3))
    assert str(closed) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = sin a\n"
        "    c:f32[3] = mul b 2.0:f32[]\n"
        "  in (c,) }"
    )


def test_printer_golden_consts_params_and_several_outputs():
    w = from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))

    def f(x, y):
        return lax.add(lax.exp(x), w), lax.integer_pow(y, 3), x

    closed = mt.make_jaxpr(f)(f32(2, 3), f32())
    assert str(closed) == (
        "{ lambda a:f32[2,3]; b:f32[2,3] c:f32[]. let\n"
        "    d:f32[2,3] = exp b\n"
        "    e:f32[2,3] = add d a\n"
        "    f:f32[] = integer_pow[y=3] c\n"
        "  in (e, f, b) }"
    )
    assert len(closed.consts) == 1 and closed.consts[0] is w


def test_printer_golden_empty_body_and_literal_kinds():
    closed = mt.make_jaxpr(lambda x: x)(f32(2))
    assert str(closed) == "{ lambda ; a:f32[2]. let  in (a,) }"
    i = from_numpy(np.arange(3, dtype=np.int32))
    closed = mt.make_jaxpr(lambda x: lax.lt(x, 2))(i)
    assert "lt a 2:i32[]" in str(closed)


def test_variable_names_continue_past_z():
    def f(x):
        for _ in range(30):
            x = lax.neg(x)
        return x

    text = str(mt.make_jaxpr(f)(f32()))
    assert "ba:f32[] = neg z" in text and "be:f32[] = neg bd" in text


def test_equations_record_the_user_line():
    def f(x):
        return lax.exp(x)  # this line

    closed = mt.make_jaxpr(f)(f32(2))
    info = closed.jaxpr.eqns[0].source_info
    assert info.filename == __file__ and info.function == "f"
    with open(__file__) as fh:
        assert "# this line" in fh.readlines()[info.lineno - 1]


def test_eval_jaxpr_matches_eager():
    def f(x, y):
        return lax.add(lax.tanh(x), lax.mul(y, 3.0))

    x = from_numpy(np.linspace(-1, 1, 5).astype(np.float32))
    y = from_numpy(np.arange(5, dtype=np.float32))
    closed = mt.make_jaxpr(f)(x, y)
    np.testing.assert_allclose(closed(x, y)[0], np.tanh(np.asarray(x)) + 3 * np.asarray(y),
                               rtol=1e-6)


def _eqn(prim, ins, outs):
    return JaxprEqn(prim, ins, {}, outs)


def test_check_jaxpr_rejects_wrong_output_type():
    a, b = Var(ShapedArray((3,), np.float32)), Var(ShapedArray((4,), np.float32))
    bad = Jaxpr([], [a], [_eqn(lax.elementwise.exp_p, [a], [b])], [b])
    with pytest.raises(JaxprTypeError, match=r"output typed f32\[4\] but exp gives f32\[3\]"):
        check_jaxpr(bad)


def test_check_jaxpr_rejects_unbound_and_rebound_variables():
    a, b = Var(ShapedArray((3,), np.float32)), Var(ShapedArray((3,), np.float32))
    unbound = Jaxpr([], [a], [_eqn(lax.elementwise.exp_p, [b], [a])], [a])
    with pytest.raises(JaxprTypeError, match="read before it is bound"):
        check_jaxpr(unbound)
    rebound = Jaxpr([], [a], [_eqn(lax.elementwise.exp_p, [a], [a])], [a])
    with pytest.raises(JaxprTypeError, match="bound twice"):
        check_jaxpr(rebound)


def test_check_jaxpr_rejects_ill_typed_operands():
    a = Var(ShapedArray((3,), np.float32))
    i = Var(ShapedArray((3,), np.int32))
    out = Var(ShapedArray((3,), np.float32))
    bad = Jaxpr([], [a, i], [_eqn(lax.elementwise.add_p, [a, i], [out])], [out])
    with pytest.raises(JaxprTypeError, match="one dtype"):
        check_jaxpr(bad)


def test_check_jaxpr_checks_literals_and_consts():
    a = Var(ShapedArray((), np.float32))
    lit = Literal(from_numpy(np.ones(2, np.float32)), ShapedArray((), np.float32))
    out = Var(ShapedArray((), np.float32))
    with pytest.raises(JaxprTypeError, match="literal"):
        check_jaxpr(Jaxpr([], [a], [_eqn(lax.elementwise.add_p, [a, lit], [out])], [out]))
    c = Var(ShapedArray((2,), np.float32))
    closed = core_jaxpr.ClosedJaxpr(Jaxpr([c], [], [], [c]), [f32(3)])
    with pytest.raises(JaxprTypeError, match="constant"):
        check_jaxpr(closed)


def test_make_jaxpr_static_argnums_and_pytrees():
    def f(params, n, scale=1.0):
        for _ in range(n):
            params = {k: lax.mul(v, scale) for k, v in params.items()}
        return params["b"], [params["a"]]

    closed, shapes = mt.make_jaxpr(f, static_argnums=1, return_shape=True)(
        {"a": f32(2), "b": f32(3)}, 2, scale=2.0)
    assert [e.primitive.name for e in closed.eqns] == ["mul"] * 4
    assert len(closed.jaxpr.invars) == 3  # a, b, and the keyword scale
    assert shapes[0].shape == (3,) and shapes[1][0].shape == (2,)


def test_make_jaxpr_rejects_non_array_arguments():
    with pytest.raises(TypeError, match="static_argnums"):
        mt.make_jaxpr(lambda s, x: x)("hello", f32(1))
    with pytest.raises(ValueError, match="out of range"):
        mt.make_jaxpr(lambda x: x, static_argnums=3)(f32(1))
