"""vmap of sort and top_k against the loop definition (check_vmap): several operands sorted
together, each batched along its own axis or not at all, several keys, ties (stability),
NaNs, size-0 axes, batch sizes 0 to 3, out_axes; top_k with the batch axis last; vmap(grad),
grad of vmap, and nested vmap."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from tests.batching.vmap_check import assert_tree_close, check_vmap, loop_reference
from tests.strategies import arrays, shapes

F32, I32 = np.dtype(np.float32), np.dtype(np.int32)
GRAD_TOL = {"rtol": 1e-4, "atol": 1e-5}


# ---- helpers ------------------------------------------------------------------------------
def _values(data, shape, dtype, nan=True):
    """Floats with NaN and infinities; ints from a small range, so keys tie."""
    if dtype == I32:
        return data.draw(arrays(dtype, shape, min_value=0, max_value=2), label="values")
    return data.draw(arrays(dtype, shape, min_value=-10, max_value=10, allow_nan=nan,
                            allow_inf=nan), label="values")


def _batched(data, shape, dtype, size, unbatched=False, nan=True):
    """(array, in_axis): examples of `shape` stacked along a drawn axis, given as a negative
    number half the time; with `unbatched`, (one example, None)."""
    if unbatched:
        return _values(data, shape, dtype, nan), None
    rank = len(shape)
    ax = data.draw(st.integers(0, rank), label="in_axis")
    x = _values(data, (*shape[:ax], size, *shape[ax:]), dtype, nan)
    return x, ax - (rank + 1) if data.draw(st.booleans(), label="negative") else ax


def _size(data, min_size=0):
    return data.draw(st.integers(min_size, 3), label="size")


def _out_axis(data, rank):
    return data.draw(st.integers(-(rank + 1), rank), label="out_axes")


def _take(a, i, axis):
    return a if axis is None else np.take(a, i, axis=axis)


def _distinct(data, shape):
    """Floats at least 0.25 apart (no ties: the sort order is locally constant)."""
    n = int(np.prod(shape))
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    vals = (rng.permutation(n) - n / 2) * 0.5 + rng.uniform(0.0, 0.2, n)
    return vals.reshape(shape).astype(np.float32)


def check_batched_grads(g, args, in_axes, argnums):
    """vmap(grad(loss)) equals the loop of per-example gradients, and the gradient of the
    summed vmapped loss equals them stacked along each input's axis (summed over the
    examples for an unbatched input)."""
    def loss(*a):
        return sum(mnp.sum(mnp.sin(o)) for o in g(*a))

    check_vmap(mt.grad(loss, argnums), args, in_axes, **GRAD_TOL)
    size = next(np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None)
    per = [mt.grad(loss, argnums)(*[_take(a, i, d) for a, d in zip(args, in_axes)])
           for i in range(size)]
    got = mt.grad(lambda *a: sum(mnp.sum(mnp.sin(o)) for o in mt.vmap(g, in_axes)(*a)),
                  argnums)(*args)
    for k, j in enumerate(argnums):
        rows = [np.asarray(p[k]) for p in per]
        d = in_axes[j]
        want = np.sum(rows, axis=0) if d is None else np.stack(rows, axis=d)
        assert_tree_close(got[k], want.astype(np.float32), **GRAD_TOL)


# ---- sort ---------------------------------------------------------------------------------
@st.composite
def _sort_case(draw):
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
    dimension = draw(st.integers(-len(shape), len(shape) - 1))
    dtypes = draw(st.lists(st.sampled_from([F32, I32]), min_size=1, max_size=3))
    num_keys = draw(st.integers(1, len(dtypes)))
    return shape, dimension, dtypes, num_keys


@given(data=st.data(), case=_sort_case())
def test_sort(data, case):
    """Operands batched at different axes, or not at all, sort together."""
    shape, dimension, dtypes, num_keys = case
    size = _size(data)
    flags = data.draw(st.lists(st.booleans(), min_size=len(dtypes), max_size=len(dtypes)),
                      label="batched")
    if not any(flags):
        flags[data.draw(st.integers(0, len(dtypes) - 1))] = True
    pairs = [_batched(data, shape, d, size, unbatched=not f) for d, f in zip(dtypes, flags)]
    args, in_axes = [p[0] for p in pairs], tuple(p[1] for p in pairs)
    check_vmap(lambda *xs: lax.sort(xs, dimension=dimension, num_keys=num_keys), args,
               in_axes, _out_axis(data, len(shape)))


@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3, max_side=4))
def test_sort_single_operand(data, shape):
    dimension = data.draw(st.integers(-len(shape), len(shape) - 1), label="dimension")
    x, ax = _batched(data, shape, F32, _size(data))
    check_vmap(lambda v: lax.sort(v, dimension=dimension), (x,), (ax,),
               _out_axis(data, len(shape)))


def test_sort_stable_with_unbatched_keys():
    """Unbatched tied keys, a batched payload: each example keeps its tied order."""
    keys = np.array([1, 0, 1, 0], np.int32)
    payload = np.arange(8, dtype=np.float32).reshape(4, 2)  # batch axis last
    got = mt.vmap(lambda k, p: lax.sort_key_val(k, p)[1], in_axes=(None, 1))(keys, payload)
    np.testing.assert_array_equal(np.asarray(got), [[2, 6, 0, 4], [3, 7, 1, 5]])


@settings(max_examples=15)
@given(data=st.data(), shape=shapes(min_dims=1, max_dims=2, min_side=1, max_side=3),
       batched_keys=st.booleans())
def test_sort_grads(data, shape, batched_keys):
    """A float key carrying a float payload; the key batched or shared."""
    dimension = data.draw(st.integers(-len(shape), len(shape) - 1), label="dimension")
    size = _size(data, 1)
    payload, p_ax = _batched(data, shape, F32, size, nan=False)
    if batched_keys:
        keys = _distinct(data, (size, *shape))
        k_ax = data.draw(st.integers(0, len(shape)), label="key_axis")
        keys = np.moveaxis(keys, 0, k_ax)
    else:
        keys, k_ax = _distinct(data, shape), None
    check_batched_grads(lambda k, p: lax.sort((k, p), dimension=dimension, num_keys=1),
                        (keys, payload), (k_ax, p_ax), (0, 1))


# ---- top_k --------------------------------------------------------------------------------
@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3, max_side=4))
def test_top_k(data, shape):
    """The batch axis anywhere, the last position included."""
    k = data.draw(st.integers(0, shape[-1]), label="k")
    x, ax = _batched(data, shape, data.draw(st.sampled_from([F32, I32])), _size(data))
    check_vmap(lambda v: lax.top_k(v, k), (x,), (ax,), _out_axis(data, len(shape)))


@settings(max_examples=15)
@given(data=st.data(), shape=shapes(min_dims=1, max_dims=2, min_side=1, max_side=4))
def test_top_k_grads(data, shape):
    k = data.draw(st.integers(0, shape[-1]), label="k")
    size = _size(data, 1)
    ax = data.draw(st.integers(0, len(shape)), label="in_axis")
    x = np.moveaxis(_distinct(data, (size, *shape)), 0, ax)
    check_batched_grads(lambda v: lax.top_k(v, k)[:1], (x,), (ax,), (0,))


# ---- nested vmap --------------------------------------------------------------------------
@settings(max_examples=15)
@given(data=st.data(), shape=shapes(min_dims=1, max_dims=2, max_side=3))
def test_nested_vmap(data, shape):
    """Two batch dims through a two-operand sort (the payload batched on the outer level
    only) and a top_k."""
    dimension = data.draw(st.integers(-len(shape), len(shape) - 1), label="dimension")
    n_in, n_out = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    inner = data.draw(st.integers(0, len(shape)), label="inner")
    outer = data.draw(st.integers(0, len(shape) + 1), label="outer")
    full = list(shape)
    full.insert(inner, n_in)
    full.insert(outer, n_out)
    x = _values(data, tuple(full), F32)
    payload = _values(data, (n_out, *shape), I32)
    k = data.draw(st.integers(0, shape[-1]), label="k")

    def g(v, p):
        return (*lax.sort((v, p), dimension=dimension), *lax.top_k(v, k))

    got = mt.vmap(mt.vmap(g, (inner, None)), (outer, 0))(x, payload)
    want = loop_reference(lambda *a: loop_reference(g, a, (inner, None), 0), (x, payload),
                          (outer, 0), 0)
    assert_tree_close(got, want)
