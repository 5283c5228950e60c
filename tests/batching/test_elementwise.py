"""Batching of every elementwise primitive against the loop definition, with drawn shapes,
dtypes, batched/unbatched operands, 0-d operands and in/out axes; plus vmap of grad."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
from mytorch import lax
from mytorch.core.primitive import registry
from tests.batching.vmap_check import check_vmap
from tests.lax.test_elementwise import BINARY, UNARY
from tests.strategies import arrays, shapes


def _batched_operand(data, dtype, shape, n, batched, **kw):
    """(array, in_axis): the operand with a batch axis of n at a drawn position, or not."""
    if not batched:
        return data.draw(arrays(dtype, shape, **kw)), None
    axis = data.draw(st.integers(0, len(shape)))
    full = shape[:axis] + (n,) + shape[axis:]
    x = data.draw(arrays(dtype, full, **kw))
    return x, data.draw(st.sampled_from([axis, axis - len(full)]))


def _value_range(rng):
    return {} if rng is None else dict(min_value=rng[0], max_value=rng[1])


@pytest.mark.parametrize("name,ref,dts,rng", UNARY, ids=[u[0] for u in UNARY])
@settings(max_examples=12)
@given(data=st.data())
def test_unary(name, ref, dts, rng, data):
    dtype = data.draw(st.sampled_from(dts))
    shape = data.draw(shapes(max_dims=3))
    n = data.draw(st.integers(0, 3))
    x, ax = _batched_operand(data, dtype, shape, n, True, **_value_range(rng))
    out_axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    check_vmap(getattr(lax, name), (x,), in_axes=(ax,), out_axes=out_axis, rtol=1e-5,
               atol=1e-6)


@pytest.mark.parametrize("name,ref,dts", BINARY, ids=[b[0] for b in BINARY])
@settings(max_examples=12)
@given(data=st.data())
def test_binary(name, ref, dts, data):
    dtype = data.draw(st.sampled_from(dts))
    shape = data.draw(shapes(max_dims=3))
    n = data.draw(st.integers(1, 3))
    kw = dict(min_value=0.1, max_value=10) if name == "pow" else {}
    if dtype.kind in "iu" and name in ("div", "rem"):
        kw = dict(min_value=-100 if dtype.kind == "i" else 0, max_value=100)
    which = data.draw(st.sampled_from([(True, True), (True, False), (False, True)]))
    # either operand may be 0-d while the other is not (lax allows 0-d operands)
    scalar = data.draw(st.sampled_from([None, 0, 1]))
    ops = []
    for k, batched in enumerate(which):
        s = () if scalar == k else shape
        ops.append(_batched_operand(data, dtype, s, n, batched, **kw))
    fn = getattr(lax, name)
    check_vmap(fn, (ops[0][0], ops[1][0]), in_axes=(ops[0][1], ops[1][1]), rtol=1e-5,
               atol=1e-6)


@given(data=st.data())
def test_select_n_and_clamp(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3))
    n = data.draw(st.integers(1, 3))
    flags = data.draw(st.lists(st.booleans(), min_size=4, max_size=4).filter(any))
    which_shape = data.draw(st.sampled_from([shape, ()]))
    which = _batched_operand(data, np.int32, which_shape, n, flags[0], min_value=0,
                             max_value=2)
    cases = [_batched_operand(data, np.float32, shape, n, f) for f in flags[1:]]
    check_vmap(lax.select_n, (which[0], *[c[0] for c in cases]),
               in_axes=(which[1], *[c[1] for c in cases]))
    lo_shape = data.draw(st.sampled_from([shape, ()]))
    lo = _batched_operand(data, np.float32, lo_shape, n, flags[0], min_value=-2,
                          max_value=0)
    x = _batched_operand(data, np.float32, shape, n, True)
    check_vmap(lambda a, b: lax.clamp(a, b, np.float32(1.5)), (lo[0], x[0]),
               in_axes=(lo[1], x[1]))


@given(data=st.data())
def test_parameterised_ops(data):
    shape = data.draw(shapes(max_dims=3))
    n = data.draw(st.integers(1, 3))
    x, ax = _batched_operand(data, np.float32, shape, n, True, min_value=-50,
                             max_value=50)
    check_vmap(lambda v: lax.integer_pow(v, 3), (x,), in_axes=(ax,), rtol=1e-5)
    check_vmap(lambda v: lax.convert_element_type(v, np.int32), (x,), in_axes=(ax,))
    check_vmap(lambda v: lax.round(v, 1), (x,),
               in_axes=(ax,))
    check_vmap(lax.stop_gradient, (x,), in_axes=(ax,))


@given(data=st.data())
def test_bitcast_changing_the_trailing_dimension(data):
    shape = data.draw(shapes(max_dims=2))
    n = data.draw(st.integers(1, 3))
    x, ax = _batched_operand(data, np.float32, shape, n, True)
    check_vmap(lambda v: lax.bitcast_convert_type(v, np.uint8), (x,), in_axes=(ax,))
    wide, ax = _batched_operand(data, np.uint8, shape + (4,), n, True)
    check_vmap(lambda v: lax.bitcast_convert_type(v, np.float32), (wide,), in_axes=(ax,))


@pytest.mark.parametrize("name", ["real", "imag", "conj", "complex", "exp", "abs", "mul",
                                  "div", "sqrt"])
@settings(max_examples=12)
@given(data=st.data())
def test_complex_operands(name, data):
    """The complex-part primitives, and complex operands of the rows that take them."""
    shape = data.draw(shapes(max_dims=3))
    n = data.draw(st.integers(0, 3))
    nargs = 2 if name in ("complex", "mul", "div") else 1
    dtype = np.float32 if name == "complex" else np.complex64
    ops = [_batched_operand(data, dtype, shape, n, data.draw(st.booleans()) or k == 0,
                            min_value=-10, max_value=10) for k in range(nargs)]
    check_vmap(getattr(lax, name), tuple(o[0] for o in ops), in_axes=tuple(o[1] for o in ops),
               rtol=1e-5, atol=1e-6)


def test_every_elementwise_primitive_is_covered():
    tested = {u[0] for u in UNARY} | {b[0] for b in BINARY} | {
        "select_n", "clamp", "integer_pow", "convert_element_type", "round",
        "stop_gradient", "bitcast_convert_type", "real", "imag", "conj", "complex"}
    names = {"bitwise_not": "not", "bitwise_and": "and", "bitwise_or": "or",
             "bitwise_xor": "xor"}
    tested = {names.get(t, t) for t in tested}
    for extra in ("shift_left", "shift_right_arithmetic", "shift_right_logical"):
        tested.add(extra)  # covered by test_shifts below
    elementwise = {p.name for p in registry().values() if p.kind == "elementwise"}
    assert elementwise <= tested, f"untested: {sorted(elementwise - tested)}"


@pytest.mark.parametrize("name", ["shift_left", "shift_right_arithmetic",
                                  "shift_right_logical"])
def test_shifts(name):
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, (4, 3)).astype(np.int32)
    s = rng.integers(0, 40, (3,)).astype(np.int32)
    check_vmap(getattr(lax, name), (x, s), in_axes=(0, None))
    check_vmap(getattr(lax, name), (x[0], np.stack([s] * 2)), in_axes=(None, 0))


def test_vmap_of_grad_of_elementwise_chain(x64):
    def f(x, y):
        return mt.numpy.sum(lax.tanh(x) * lax.exp(y) / (1.0 + x * x) + lax.max(x, y))

    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((5, 4)), rng.standard_normal(4)
    check_vmap(mt.grad(f, argnums=(0, 1)), (x, y), in_axes=(0, None), rtol=1e-12)
    check_vmap(mt.grad(f, argnums=(0, 1)), (x, y[None].repeat(5, 0).T), in_axes=(0, 1),
               rtol=1e-12)
