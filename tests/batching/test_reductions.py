"""vmap of the reductions, argmax/argmin and cumulative reductions against the loop
definition (check_vmap): drawn shapes (rank 0, size-0 axes), axes (negative too), batch
sizes 0 to 3, batch axes anywhere, out_axes, NaN inputs; vmap(grad), grad of vmap, and
nested vmap."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from tests.batching.vmap_check import assert_tree_close, check_vmap, loop_reference
from tests.strategies import arrays, axis_tuples, shapes

F32, I32, BOOL = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.bool_)
GRAD_TOL = {"rtol": 1e-4, "atol": 1e-5}
# sums may add in another order once batched: tolerate float32 rounding
TOL = {"rtol": 1e-5, "atol": 1e-4}

REDUCERS = [  # (binder, dtypes, value bound, NaNs allowed)
    (lax.reduce_sum, [F32, I32], 10, False),
    (lax.reduce_prod, [F32, I32], 2, False),
    (lax.reduce_max, [F32, I32, BOOL], 10, True),
    (lax.reduce_min, [F32, I32, BOOL], 10, True),
    (lax.reduce_and, [BOOL, I32], 10, False),
    (lax.reduce_or, [BOOL, I32], 10, False),
    (lax.reduce_xor, [BOOL, I32], 10, False),
]
CUMULATIVE = [
    (lax.cumsum, [F32, I32], 10, False),
    (lax.cumprod, [F32, I32], 2, False),
    (lax.cummax, [F32, I32], 10, True),
    (lax.cummin, [F32, I32], 10, True),
    (lax.cumlogsumexp, [F32], 10, True),
]


def _id(spec):
    return spec[0].__name__


# ---- helpers ------------------------------------------------------------------------------
def _values(data, shape, dtype, bound=10, nan=False):
    """Values in [-bound, bound] (NaN and infinities too with `nan`)."""
    return data.draw(arrays(dtype, shape, min_value=-bound, max_value=bound, allow_nan=nan,
                            allow_inf=nan), label="values")


def _batched(data, shape, dtype, size, **kw):
    """(array, in_axis): examples of `shape` stacked along a drawn axis, given as a negative
    number half the time."""
    rank = len(shape)
    ax = data.draw(st.integers(0, rank), label="in_axis")
    x = _values(data, (*shape[:ax], size, *shape[ax:]), dtype, **kw)
    return x, ax - (rank + 1) if data.draw(st.booleans(), label="negative") else ax


def _out_axis(data, rank):
    return data.draw(st.integers(-(rank + 1), rank), label="out_axes")


def _size(data, min_size=0):
    return data.draw(st.integers(min_size, 3), label="size")


def check_batched_grads(g, x, ax):
    """vmap(grad(loss)) equals the loop of per-example gradients, and the gradient of the
    summed vmapped loss equals them stacked along the batch axis."""
    def loss(v):
        return mnp.sum(mnp.sin(g(v)))

    check_vmap(mt.grad(loss), (x,), (ax,), **GRAD_TOL)
    got = mt.grad(lambda v: mnp.sum(mnp.sin(mt.vmap(g, ax)(v))))(x)
    rows = [np.asarray(mt.grad(loss)(np.take(x, i, axis=ax))) for i in range(x.shape[ax])]
    assert_tree_close(got, np.stack(rows, axis=ax), **GRAD_TOL)


# ---- reductions over axes -----------------------------------------------------------------
@pytest.mark.parametrize("spec", REDUCERS, ids=_id)
@given(data=st.data(), shape=shapes(max_dims=3, max_side=3))
def test_reduce(spec, data, shape):
    fn, dtypes, bound, nan = spec
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    axes = data.draw(axis_tuples(len(shape)), label="axes")
    x, ax = _batched(data, shape, dtype, _size(data), bound=bound, nan=nan)
    check_vmap(lambda v: fn(v, axes), (x,), (ax,), _out_axis(data, len(shape) - len(axes)),
               **TOL)


@pytest.mark.parametrize("spec", REDUCERS[:4], ids=_id)
@settings(max_examples=10)
@given(data=st.data(), shape=shapes(max_dims=2, min_side=1, max_side=3))
def test_reduce_grads(spec, data, shape):
    fn = spec[0]
    axes = data.draw(axis_tuples(len(shape)), label="axes")
    x, ax = _batched(data, shape, F32, _size(data, 1), bound=2)
    check_batched_grads(lambda v: fn(v, axes), x, ax)


def test_reduce_max_grad_ties():
    """Tied maxima share the tangent, per example."""
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [0.0, 5.0, 1.0]], np.float32)
    got = mt.vmap(mt.grad(lambda v: lax.reduce_max(v, (0,))))(x)
    np.testing.assert_allclose(np.asarray(got), [[0, .5, .5], [1 / 3] * 3, [0, 1, 0]],
                               rtol=1e-6)


# ---- argmax / argmin ----------------------------------------------------------------------
@pytest.mark.parametrize("fn", [lax.argmax, lax.argmin], ids=lambda f: f.__name__)
@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3, max_side=3),
       dtype=st.sampled_from([F32, I32, BOOL]),
       index_dtype=st.sampled_from([np.int32, np.int8, np.uint8]))
def test_argmax_argmin(fn, data, shape, dtype, index_dtype):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    shape = tuple(max(n, 1) if i == axis % len(shape) else n for i, n in enumerate(shape))
    x, ax = _batched(data, shape, dtype, _size(data), bound=3, nan=True)
    check_vmap(lambda v: fn(v, axis, index_dtype), (x,), (ax,),
               _out_axis(data, len(shape) - 1))


def test_argmax_nan_per_example():
    """The first NaN wins in each example, wherever the batch axis is."""
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 0.0, np.nan], [4.0, 2.0, 1.0]], np.float32)
    got = mt.vmap(lambda v: lax.argmax(v, 0, np.int32), in_axes=1)(x)
    np.testing.assert_array_equal(np.asarray(got), [1, 0, 1])  # columns


# ---- cumulative reductions ----------------------------------------------------------------
@pytest.mark.parametrize("spec", CUMULATIVE, ids=_id)
@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3, max_side=3),
       reverse=st.booleans())
def test_cumulative(spec, data, shape, reverse):
    fn, dtypes, bound, nan = spec
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    x, ax = _batched(data, shape, dtype, _size(data), bound=bound, nan=nan)
    check_vmap(lambda v: fn(v, axis, reverse), (x,), (ax,), _out_axis(data, len(shape)),
               **TOL)


@pytest.mark.parametrize("spec", CUMULATIVE, ids=_id)
@settings(max_examples=8)
@given(data=st.data(), shape=shapes(min_dims=1, max_dims=2, max_side=3),
       reverse=st.booleans())
def test_cumulative_grads(spec, data, shape, reverse):
    """The JVPs of cumprod/cummax/cummin/cumlogsumexp run a prefix scan of slices,
    concatenations and reshapes: batching those is exercised here too."""
    fn = spec[0]
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    x, ax = _batched(data, shape, F32, _size(data, 1), bound=2)
    check_batched_grads(lambda v: fn(v, axis, reverse), x, ax)


# ---- nested vmap --------------------------------------------------------------------------
@settings(max_examples=15)
@given(data=st.data(), shape=shapes(min_dims=1, max_dims=2, min_side=1, max_side=3))
def test_nested_vmap(data, shape):
    """Two batch dims through a sum, an argmax and a cummax (with NaNs)."""
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    inner = data.draw(st.integers(0, len(shape)), label="inner")
    outer = data.draw(st.integers(0, len(shape) + 1), label="outer")
    full = list(shape)
    full.insert(inner, data.draw(st.integers(1, 3)))
    full.insert(outer, data.draw(st.integers(1, 3)))
    x = _values(data, tuple(full), F32, nan=True)

    def g(v):
        return (lax.reduce_sum(v, (axis,)), lax.argmax(v, axis, np.int32),
                lax.cummax(v, axis, reverse=True))

    got = mt.vmap(mt.vmap(g, inner), outer)(x)
    want = loop_reference(lambda xi: loop_reference(g, (xi,), inner, 0), (x,), outer, 0)
    assert_tree_close(got, want, **TOL)
