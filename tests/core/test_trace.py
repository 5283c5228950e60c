"""Traces: concretization errors, escaped tracers, nested tracing, errors with user lines."""

import pickle

import numpy as np
import pytest

import mytorch as mt
from mytorch import lax
from mytorch.core.array import from_numpy
from mytorch.errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    UnexpectedTracerError,
)


def f32(*shape):
    return from_numpy(np.ones(shape, np.float32))


@pytest.mark.parametrize("convert,what", [
    (bool, "bool()"), (int, "int()"), (float, "float()"),
    (lambda t: t.item(), ".item()"), (lambda t: range(t), "index"),
])
def test_concretization_errors_name_value_trace_and_line(convert, what):
    def f(x):
        return convert(lax.sin(x))  # the offending line

    with pytest.raises(ConcretizationTypeError) as info:
        mt.make_jaxpr(f)(f32())
    msg = str(info.value)
    assert "abstract f32[]" in msg and "make_jaxpr(f)" in msg
    assert "test_trace.py" in msg and "static_argnums" in msg


def test_python_if_on_traced_value_suggests_cond():
    def f(x):
        if lax.gt(x, 0.0):
            return x
        return lax.neg(x)

    with pytest.raises(ConcretizationTypeError, match=r"abstract bool\[\].*lax.cond"):
        mt.make_jaxpr(f)(f32())


def test_numpy_conversion_of_tracer_is_a_clear_error():
    with pytest.raises(TracerArrayConversionError, match="mytorch.numpy functions"):
        mt.make_jaxpr(lambda x: np.sin(np.asarray(x)))(f32(2))


def test_escaped_tracer_is_caught_eagerly_and_when_traced_again():
    stash = []

    def leak(x):
        y = lax.exp(x)
        stash.append(y)
        return y

    mt.make_jaxpr(leak)(f32(3))
    with pytest.raises(UnexpectedTracerError, match=r"f32\[3\] value created in make_jaxpr\(leak\)"):
        lax.add(stash[0], 1.0)
    with pytest.raises(UnexpectedTracerError, match="was used after that transformation ended"):
        mt.make_jaxpr(lambda x: lax.add(x, stash[0]))(f32(3))


def test_nested_tracing_closes_over_outer_tracer_as_constant():
    def outer(x):
        inner = mt.make_jaxpr(lambda y: lax.mul(y, x))(f32(2))
        assert len(inner.consts) == 1  # x is a tracer of the outer trace: a constvar
        return lax.add(x, 1.0)

    closed = mt.make_jaxpr(outer)(f32(2))
    assert [e.primitive.name for e in closed.eqns] == ["add"]


def test_shape_error_names_op_shapes_and_user_line():
    with pytest.raises(TypeError) as info:
        lax.add(f32(3), f32(4))  # user line
    msg = str(info.value)
    assert msg.startswith("add needs operands of equal shapes")
    assert "f32[3], f32[4]" in msg and "test_trace.py" in msg


def test_dtype_error_under_tracing_names_user_line():
    def f(x):
        return lax.sin(lax.convert_element_type(x, np.int32))

    with pytest.raises(TypeError, match=r"sin needs floating-point or complex operands, got i32\[2\]"):
        mt.make_jaxpr(f)(f32(2))


def test_array_is_immutable_and_exports_read_only():
    x = f32(3)
    with pytest.raises(TypeError, match=r"\.at\[idx\]\.set"):
        x[0] = 2.0
    view = np.asarray(x)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 5.0
    assert np.asarray(x, copy=True).flags.writeable


def test_array_protocols():
    x = from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.dtype == np.float32
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert from_numpy(np.float32(2.5)).item() == 2.5
    np.testing.assert_array_equal(np.from_dlpack(x), np.asarray(x))
    y = pickle.loads(pickle.dumps(x))
    np.testing.assert_array_equal(y, x)
    assert "Array([[0., 1., 2.]," in repr(x) and "dtype=float32" in repr(x)
    assert repr(lax.add(from_numpy(np.float32(1)), 1.0)).endswith("dtype=float32)")
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d array"):
        len(from_numpy(np.float32(1)))
    assert isinstance(x, mt.Array)


def test_tracers_are_arrays_with_avals():
    seen = []

    def f(x):
        seen.append((isinstance(x, mt.Array), x.shape, x.dtype, x.ndim, repr(x)))
        return x

    mt.make_jaxpr(f)(f32(2, 5))
    assert seen == [(True, (2, 5), np.float32, 2, "Traced<f32[2,5]> in make_jaxpr(f)")]


def test_debug_nans_names_the_primitive_and_line_eagerly():
    x = from_numpy(np.array([1.0, -1.0], np.float32))
    mt.config.update("debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match=r"log produced a NaN .*test_trace.py"):
            lax.log(x)
        nan = from_numpy(np.array([np.nan], np.float32))
        lax.add(nan, 1.0)  # NaN in, NaN out: not where it first appeared
    finally:
        mt.config.update("debug_nans", False)
    assert np.isnan(np.asarray(lax.log(x))[1])
