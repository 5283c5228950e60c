"""vmap of mytorch.numpy indexing (x[i], x[idx], x.at[idx].op(v), take, take_along_axis)
against the loop definition, with batched arrays and/or batched indices: these lower to
dynamic_slice, gather and scatter with every combination of batched operands."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from tests.batching.vmap_check import check_vmap


def _values(shape, lo=-8, hi=8, dtype=np.float32):
    n = int(np.prod(shape))
    return st.lists(st.integers(lo, hi), min_size=n, max_size=n).map(
        lambda v: (np.asarray(v, np.float64) / 2).astype(dtype).reshape(shape))


def _indices(shape, n):
    """Indices into a dim of size n: negative, out of bounds on both sides, repeated."""
    k = int(np.prod(shape))
    return st.lists(st.integers(-n - 2, n + 1), min_size=k, max_size=k).map(
        lambda v: np.asarray(v, np.int32).reshape(shape))


@st.composite
def _batched(draw, values, shape, size, mapped):
    """(array, in_axis) with the batch dim at a drawn position, or (array, None)."""
    if not mapped:
        return draw(values(shape)), None
    pos = draw(st.integers(0, len(shape)))
    full = shape[:pos] + (size,) + shape[pos:]
    return draw(values(full)), (pos - len(full) if draw(st.booleans()) else pos)


def _pattern(n):
    return st.lists(st.booleans(), min_size=n, max_size=n).filter(any)


@st.composite
def _array_and_axis(draw, min_side=1):
    shape = tuple(draw(st.lists(st.integers(min_side, 4), min_size=1, max_size=3)))
    return shape, draw(st.integers(0, len(shape) - 1))


@given(data=st.data())
def test_getitem_traced_scalar_index(data):
    # a batched scalar index is a dynamic_slice with a batched start (a gather)
    shape, axis = data.draw(_array_and_axis())
    size = data.draw(st.integers(0, 3))
    mx, mi = data.draw(_pattern(2))
    x, xa = data.draw(_batched(_values, shape, size, mx))
    n = shape[axis]
    i, ia = data.draw(_batched(lambda s: st.integers(-n, n - 1).map(
        lambda v: np.full(s, v, np.int32)), (), size, mi))

    def f(x, i):
        return mnp.asarray(x)[(slice(None),) * axis + (mnp.asarray(i),)]

    check_vmap(f, (x, i), in_axes=(xa, ia))


@given(data=st.data())
def test_getitem_index_arrays(data):
    shape, axis = data.draw(_array_and_axis(min_side=0))
    # an index into an empty axis is an IndexError: only the other axes may be empty
    shape = shape[:axis] + (max(shape[axis], 1),) + shape[axis + 1:]
    idx_shape = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    size = data.draw(st.integers(0, 3))
    mx, mi = data.draw(_pattern(2))
    # a second, non-adjacent index array moves the index dims to the front
    split = len(shape) == 3 and 0 not in shape and data.draw(st.booleans())
    mode = data.draw(st.sampled_from([None, "fill"]))
    x, xa = data.draw(_batched(_values, shape, size, mx))
    i, ia = data.draw(_batched(lambda s: _indices(s, shape[axis]), idx_shape, size, mi))

    def f(x, i):
        x, i = mnp.asarray(x), mnp.asarray(i)
        if split:
            return x.at[i % shape[0], :, i % shape[2]].get(mode=mode)
        return x.at[(slice(None),) * axis + (i,)].get(mode=mode)

    check_vmap(f, (x, i), in_axes=(xa, ia))


@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max"])
@settings(max_examples=15)
@given(data=st.data())
def test_at_updates(op, data):
    shape, axis = data.draw(_array_and_axis())
    idx_shape = tuple(data.draw(st.lists(st.integers(0, 4), max_size=2)))
    size = data.draw(st.integers(0, 3))
    mx, mi, mv = data.draw(_pattern(3))
    v_shape = shape[:axis] + idx_shape + shape[axis + 1:]
    if data.draw(st.booleans()):  # values that broadcast (a trailing slice of the shape)
        v_shape = v_shape[data.draw(st.integers(0, len(v_shape))):]
    x, xa = data.draw(_batched(_values, shape, size, mx))
    i, ia = data.draw(_batched(lambda s: _indices(s, shape[axis]), idx_shape, size, mi))
    v, va = data.draw(_batched(_values, v_shape, size, mv))

    def f(x, i, v):
        ref = mnp.asarray(x).at[(slice(None),) * axis + (mnp.asarray(i),)]
        return getattr(ref, op)(mnp.asarray(v))

    check_vmap(f, (x, i, v), in_axes=(xa, ia, va))


@given(data=st.data())
def test_take(data):
    shape, axis = data.draw(_array_and_axis())
    axis = data.draw(st.sampled_from([axis, axis - len(shape), None]))
    n = shape[axis] if axis is not None else int(np.prod(shape))
    idx_shape = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    size = data.draw(st.integers(0, 3))
    mode = data.draw(st.sampled_from([None, "clip", "wrap", "fill"]))
    mx, mi = data.draw(_pattern(2))
    x, xa = data.draw(_batched(_values, shape, size, mx))
    i, ia = data.draw(_batched(lambda s: _indices(s, n), idx_shape, size, mi))

    def f(x, i):
        return mnp.take(mnp.asarray(x), mnp.asarray(i), axis=axis, mode=mode)

    check_vmap(f, (x, i), in_axes=(xa, ia))


@given(data=st.data())
def test_take_along_axis(data):
    shape, axis = data.draw(_array_and_axis())
    idx_shape = tuple(s if d != axis else data.draw(st.integers(0, 4))
                      for d, s in enumerate(shape))
    size = data.draw(st.integers(0, 3))
    mx, mi = data.draw(_pattern(2))
    x, xa = data.draw(_batched(_values, shape, size, mx))
    i, ia = data.draw(_batched(lambda s: _indices(s, shape[axis]), idx_shape, size, mi))

    def f(x, i):
        return mnp.take_along_axis(mnp.asarray(x), mnp.asarray(i), axis)

    check_vmap(f, (x, i), in_axes=(xa, ia))


@settings(max_examples=15)
@given(data=st.data())
def test_vmap_of_grad_of_indexing(data):
    shape, axis = data.draw(_array_and_axis())
    idx_shape = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    size = data.draw(st.integers(1, 3))
    mx, mi = data.draw(_pattern(2))
    x, xa = data.draw(_batched(_values, shape, size, mx))
    i, ia = data.draw(_batched(lambda s: _indices(s, shape[axis]), idx_shape, size, mi))

    def g(x, i):
        def loss(x):
            y = mnp.asarray(x)[(slice(None),) * axis + (mnp.asarray(i),)]
            z = mnp.asarray(x).at[(slice(None),) * axis + (mnp.asarray(i),)].multiply(2.0)
            flat_y, flat_z = mnp.ravel(y), mnp.ravel(z)
            return mnp.dot(flat_y, mnp.sin(flat_y)) + mnp.dot(flat_z, flat_z)
        return mt.grad(loss)(x)

    check_vmap(g, (x, i), in_axes=(xa, ia), rtol=1e-5, atol=1e-5)
