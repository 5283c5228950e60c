"""Errors about the user's input: JAX's exception class, the operation's name, the operands'
shapes and the user's own file:line (the line of the offending call in this file).

Each case is a one-line lambda, so its `co_firstlineno` is the line the message must name.
The expected classes are JAX's (jax 0.10), written out.
"""

import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.errors import AxisError, ConcretizationTypeError

HERE = os.path.basename(__file__)
A = mnp.ones((3, 4))
B = mnp.ones((5, 2))


def check(fn, cls, *fragments):
    """fn() raises exactly `cls` (or a subclass) naming `fragments` and fn's line here."""
    with pytest.raises(cls) as info:
        fn()
    msg = str(info.value)
    where = f"{HERE}:{fn.__code__.co_firstlineno}"
    assert where in msg, f"{where!r} not in {msg!r}"
    for f in fragments:
        assert f in msg, f"{f!r} not in {msg!r}"
    return info.value


# (call, JAX's class, fragments of the message)
NUMPY_CASES = [
    (lambda: mnp.matmul(A, B), TypeError, "matmul", "f32[3,4]", "f32[5,2]", "4 vs 5"),
    (lambda: A @ B, TypeError, "matmul", "f32[3,4]", "f32[5,2]"),
    (lambda: mnp.matmul(mnp.ones((2, 3, 4)), mnp.ones((3, 4, 2))), ValueError, "matmul",
     "f32[2,3,4]", "f32[3,4,2]"),
    (lambda: mnp.dot(A, B), TypeError, "dot", "f32[3,4]", "f32[5,2]"),
    (lambda: mnp.tensordot(A, B, 1), TypeError, "tensordot", "f32[3,4]", "f32[5,2]"),
    (lambda: mnp.inner(A, B), TypeError, "inner", "f32[3,4]"),
    (lambda: mnp.einsum("ij,jk", A, B), ValueError, "einsum", "'j'"),
    (lambda: mnp.reshape(A, (5,)), TypeError, "reshape", "f32[3,4]", "(5,)"),
    (lambda: A.reshape(5, -1), TypeError, "reshape", "f32[3,4]"),
    (lambda: mnp.reshape(A, (-1, -1)), TypeError, "reshape", "(-1, -1)"),
    (lambda: mnp.concatenate([A, B]), TypeError, "concatenate", "f32[3,4]", "f32[5,2]"),
    (lambda: mnp.concatenate([A, mnp.ones(3)]), TypeError, "concatenate", "f32[3]"),
    (lambda: mnp.vstack([A, B]), TypeError, "concatenate", "f32[5,2]"),
    (lambda: mnp.stack([A, B]), ValueError, "stack", "f32[3,4]", "f32[5,2]"),
    (lambda: mnp.sum(A, axis=2), ValueError, "sum", "axis 2", "f32[3,4]"),
    (lambda: mnp.mean(A, axis=-3), IndexError, "mean", "axis -3", "f32[3,4]"),
    (lambda: mnp.argmax(A, axis=3), IndexError, "argmax", "axis 3", "f32[3,4]"),
    (lambda: mnp.var(A, axis=3), IndexError, "var", "f32[3,4]"),
    (lambda: mnp.cumsum(A, axis=2), ValueError, "cumsum", "f32[3,4]"),
    (lambda: mnp.quantile(A, 0.5, axis=2), ValueError, "quantile", "f32[3,4]"),
    (lambda: mnp.swapaxes(A, 0, 5), IndexError, "swapaxes", "f32[3,4]"),
    (lambda: mnp.sum(A, axis=(0, 0)), ValueError, "sum", "(0, 0)"),
    (lambda: mnp.transpose(A, (0, 0)), TypeError, "transpose", "f32[3,4]"),
    (lambda: mnp.transpose(A, (0,)), TypeError, "transpose", "f32[3,4]"),
    (lambda: mnp.squeeze(A, 0), ValueError, "squeeze", "f32[3,4]"),
    (lambda: mnp.expand_dims(A, 5), ValueError, "expand_dims", "f32[3,4]"),
    (lambda: mnp.broadcast_to(A, (5, 4)), ValueError, "broadcast_to", "f32[3,4]", "(5, 4)"),
    (lambda: A + mnp.ones(5), ValueError, "add", "f32[3,4]", "f32[5]"),
    (lambda: A * mnp.ones((2, 5, 4)), ValueError, "multiply", "f32[3,4]", "f32[2,5,4]"),
    (lambda: mnp.where(A > 0, A, mnp.ones((2, 5, 4))), ValueError, "where", "f32[2,5,4]"),
    (lambda: mnp.split(A, 5), ValueError, "split", "f32[3,4]"),
    (lambda: mnp.average(A, axis=0, weights=mnp.ones(4)), ValueError, "average", "f32[4]"),
    (lambda: mnp.diagonal(A, 0, 5), IndexError, "diagonal", "f32[3,4]"),
]

LAX_CASES = [
    (lambda: lax.dot_general(A, B, (((1,), (0,)), ((), ()))), TypeError, "dot_general",
     "f32[3,4]", "f32[5,2]"),
    (lambda: lax.dot_general(A, A, (((5,), (0,)), ((), ()))), TypeError, "dot_general"),
    (lambda: lax.reshape(A, (5,)), TypeError, "reshape", "f32[3,4]"),
    (lambda: lax.concatenate([A, B], 0), TypeError, "concatenate", "f32[5,2]"),
    (lambda: lax.concatenate([A, A], 3), TypeError, "concatenate"),
    (lambda: lax.reduce_sum(A, (2,)), ValueError, "reduce_sum", "f32[3,4]"),
    (lambda: lax.reduce_max(A, (0, 0)), ValueError, "reduce_max", "f32[3,4]"),
    (lambda: lax.transpose(A, (0, 0)), TypeError, "transpose", "f32[3,4]"),
    (lambda: lax.squeeze(A, (0,)), ValueError, "squeeze", "f32[3,4]"),
    (lambda: lax.slice(A, (0, 0), (5, 5)), TypeError, "slice", "f32[3,4]"),
    (lambda: lax.rev(A, (0, 0)), TypeError, "rev"),
    (lambda: lax.rev(A, (3,)), TypeError, "rev"),
    (lambda: lax.broadcast_in_dim(A, (5, 4), (0, 1)), TypeError, "broadcast_in_dim",
     "f32[3,4]"),
    (lambda: lax.cumsum(A, axis=3), ValueError, "cumsum", "f32[3,4]"),
    (lambda: lax.argmax(A, 3, np.int32), ValueError, "argmax", "f32[3,4]"),
    (lambda: lax.add(A, mnp.ones((5, 4))), TypeError, "add", "f32[3,4]", "f32[5,4]"),
]

JIT_CASES = [  # the line is the one inside the traced function
    (lambda: mt.jit(lambda x: mnp.reshape(x, (5,)))(A), TypeError, "reshape", "f32[3,4]"),
    (lambda: mt.jit(lambda x, y: x @ y)(A, B), TypeError, "matmul", "f32[5,2]"),
    (lambda: mt.jit(lambda x: mnp.sum(x, axis=4))(A), ValueError, "sum", "f32[3,4]"),
    (lambda: mt.grad(lambda x: mnp.sum(mnp.concatenate([x, B])))(A), TypeError,
     "concatenate"),
    (lambda: mt.vmap(lambda x: mnp.sum(x, axis=1))(A), ValueError, "sum", "f32[4]"),
]

# the rest of mytorch.numpy: indexing helpers, padding, sorting, linalg, signal and
# polynomial helpers, set-up functions (JAX's classes, checked with jax 0.10)
MORE_NUMPY_CASES = [
    (lambda: mnp.take(A, mnp.array([0]), mode="bogus"), ValueError, "take", "'bogus'"),
    (lambda: mnp.take_along_axis(A, mnp.ones((3,), int), axis=1), ValueError,
     "take_along_axis", "f32[3,4]"),
    (lambda: mnp.pad(A, ((1, 2), (1, 2), (1, 1))), ValueError, "pad"),
    (lambda: mnp.searchsorted(A, 1.0), ValueError, "searchsorted", "f32[3,4]"),
    (lambda: mnp.nonzero(mnp.array(1.0)), ValueError, "nonzero"),
    (lambda: mnp.linalg.norm(A, ord="bad"), ValueError, "norm", "'bad'"),
    (lambda: mnp.convolve(A, mnp.ones(3)), ValueError, "convolve", "f32[3,4]"),
    (lambda: mnp.interp(1.0, mnp.ones(3), mnp.ones(4)), ValueError, "interp", "f32[3]",
     "f32[4]"),
    (lambda: mnp.cov(mnp.ones((2, 3, 4))), ValueError, "cov", "f32[2,3,4]"),
    (lambda: mnp.fill_diagonal(mnp.ones(3), 1.0, inplace=False), ValueError, "fill_diagonal",
     "f32[3]"),
    (lambda: mnp.packbits(mnp.ones(3)), TypeError, "packbits", "f32[3]"),
    (lambda: mnp.zeros((2, -1)), TypeError, "zeros", "(2, -1)"),
    (lambda: mnp.subtract.reduce(A, axis=None), ValueError, "subtract.reduce", "f32[3,4]"),
    (lambda: mt.jit(lambda x: mnp.convolve(x, x))(A), ValueError, "convolve", "f32[3,4]"),
    # a traced slice bound: JAX's IndexError, and still a ConcretizationTypeError
    (lambda: mt.jit(lambda x, n: x[:n])(A, 2), IndexError, "slice bounds must be static",
     "static_argnums"),
    (lambda: mt.jit(lambda x, n: x[n:])(A, 2), ConcretizationTypeError, "i32[]"),
]


@pytest.mark.parametrize("case", NUMPY_CASES + MORE_NUMPY_CASES + LAX_CASES + JIT_CASES,
                         ids=lambda c: str(c[0].__code__.co_firstlineno))
def test_error_names_op_shapes_line_and_has_jaxs_class(case):
    fn, cls, *fragments = case
    check(fn, cls, *fragments)


def test_axis_errors_match_both_valueerror_and_indexerror():
    """JAX raises ValueError for some out-of-bounds axes and IndexError for others; NumPy's
    AxisError is both, so ported `except` clauses of either kind match."""
    for fn in (lambda: mnp.sum(A, axis=2), lambda: mnp.mean(A, axis=-3),
               lambda: mnp.moveaxis(A, 0, 5), lambda: mnp.flip(A, axis=3)):
        err = check(fn, AxisError)
        assert isinstance(err, ValueError) and isinstance(err, IndexError)
        assert isinstance(err, np.exceptions.AxisError)


@given(m=st.integers(1, 6), k=st.integers(1, 6), k2=st.integers(1, 6), n=st.integers(1, 6))
def test_matmul_mismatch_any_shapes(m, k, k2, n):
    if k == k2:
        return
    a, b = mnp.ones((m, k)), mnp.ones((k2, n))
    check(lambda: a @ b, TypeError, "matmul", f"f32[{m},{k}]", f"f32[{k2},{n}]")


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), extra=st.integers(1, 5))
def test_reshape_and_reduction_axis_any_shapes(shape, extra):
    x = mnp.ones(tuple(shape))
    size = int(np.prod(shape))
    desc = "f32[" + ",".join(map(str, shape)) + "]"
    check(lambda: mnp.reshape(x, (size + extra,)), TypeError, "reshape", desc)
    check(lambda: mnp.sum(x, axis=len(shape) - 1 + extra), AxisError, "sum", desc)
    check(lambda: mnp.concatenate([x, mnp.ones(tuple(shape) + (1,))]), TypeError,
          "concatenate", desc)


def test_traced_shapes_say_shapes_must_be_static():
    for fn in (lambda: mt.jit(lambda x, n: x.reshape(n))(A, 12),
               lambda: mt.jit(lambda x, n: mnp.broadcast_to(x, (n, 3, 4)))(A, 2),
               lambda: mt.jit(lambda n: mnp.eye(n))(3),
               lambda: mt.jit(lambda n: mnp.zeros((n, 2)))(3),
               lambda: mt.jit(lambda n: mnp.full(n, 1.0))(3),
               lambda: mt.jit(lambda n: [i for i in range(n)])(3)):
        err = check(fn, ConcretizationTypeError, "must be static", "static_argnums",
                    "i32[]", "jit(<lambda>)")
        assert isinstance(err, TypeError)  # JAX's class
        assert "as an index" not in str(err)
    # the advice works: a static argument
    out = mt.jit(lambda x, n: x.reshape(n), static_argnums=1)(A, 12)
    assert out.shape == (12,)


def test_grad_of_a_pair_suggests_has_aux():
    def loss(x):
        return mnp.sum(x), {"x": x}

    err = check(lambda: mt.grad(loss)(A), TypeError, "scalar output", "has_aux=True")
    assert "f32[], f32[3,4]" in str(err)
    check(lambda: mt.value_and_grad(loss)(A), TypeError, "has_aux=True")
    g, aux = mt.grad(loss, has_aux=True)(A)  # as suggested
    np.testing.assert_allclose(np.asarray(g), np.ones((3, 4)))
    np.testing.assert_allclose(np.asarray(aux["x"]), np.ones((3, 4)))
    # a non-scalar output that is no (loss, aux) pair gets no such hint
    with pytest.raises(TypeError) as info:
        mt.grad(lambda x: x)(A)
    assert "has_aux=True" not in str(info.value)
