"""vmap of the structural primitives against the loop definition (check_vmap): drawn shapes
(rank 0, size-0 axes), batch sizes 0 to 3, batch axes anywhere (negative in_axes too),
out_axes, operands batched or not; vmap(grad), grad of vmap, and nested vmap."""

import itertools

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.transforms.batching import BatchAxis
from tests.batching.vmap_check import assert_tree_close, check_vmap, loop_reference
from tests.strategies import arrays, axis_tuples, shapes

DTYPES = [np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.bool_)]
GRAD_TOL = {"rtol": 1e-4, "atol": 1e-5}


# ---- helpers ------------------------------------------------------------------------------
def _values(data, shape, dtype):
    return data.draw(arrays(dtype, shape, min_value=-10, max_value=10), label="values")


def _batched(data, shape, dtype, size, unbatched=False):
    """(array, in_axis): examples of `shape` stacked along a drawn axis, given as a negative
    number half the time; with `unbatched`, (one example, None)."""
    if unbatched:
        return _values(data, shape, dtype), None
    rank = len(shape)
    ax = data.draw(st.integers(0, rank), label="in_axis")
    x = _values(data, (*shape[:ax], size, *shape[ax:]), dtype)
    return x, ax - (rank + 1) if data.draw(st.booleans(), label="negative") else ax


def _batched_args(data, shapes_, dtypes_, size):
    """Arguments of which a drawn non-empty subset is batched."""
    flags = data.draw(st.lists(st.booleans(), min_size=len(shapes_), max_size=len(shapes_)),
                      label="batched")
    if not any(flags):
        flags[0] = True
    pairs = [_batched(data, s, d, size, unbatched=not f)
             for s, d, f in zip(shapes_, dtypes_, flags)]
    return [p[0] for p in pairs], tuple(p[1] for p in pairs)


def _out_axis(data, rank):
    return data.draw(st.integers(-(rank + 1), rank), label="out_axes")


def _size(data, min_size=0):
    return data.draw(st.integers(min_size, 3), label="size")


def _take(a, i, axis):
    return a if axis is None else np.take(a, i, axis=axis)


def _loss(g):
    """A scalar of g's float result whose gradient depends on the operands."""
    return lambda *a: mnp.sum(mnp.sin(g(*a)))


def check_batched_grads(g, args, in_axes, argnums=0):
    """vmap(grad(loss)) equals the loop of per-example gradients, and the gradient of the
    summed vmapped loss equals them stacked along each input's axis (summed over the
    examples for an unbatched input). Needs a batch of size >= 1."""
    loss = _loss(g)
    check_vmap(mt.grad(loss, argnums), args, in_axes, **GRAD_TOL)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    size = next(np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None)
    per = [mt.grad(loss, nums)(*[_take(a, i, d) for a, d in zip(args, in_axes)])
           for i in range(size)]
    got = mt.grad(lambda *a: mnp.sum(mnp.sin(mt.vmap(g, in_axes)(*a))), nums)(*args)
    for k, j in enumerate(nums):
        rows = [np.asarray(p[k]) for p in per]
        d = in_axes[j]
        want = np.sum(rows, axis=0) if d is None else np.stack(rows, axis=d)
        assert_tree_close(got[k], want.astype(np.float32), **GRAD_TOL)


def check_nested(g, args, inner, outer):
    """vmap(vmap(g, inner), outer) equals the double loop (results stacked at axis 0)."""
    got = mt.vmap(mt.vmap(g, inner), outer)(*args)
    want = loop_reference(lambda *a: loop_reference(g, a, inner, 0), args, outer, 0)
    assert_tree_close(got, want)


# ---- broadcast_in_dim ---------------------------------------------------------------------
@st.composite
def _broadcast_case(draw, max_dims=3):
    shape = draw(shapes(max_dims=max_dims, max_side=3))
    rank = draw(st.integers(len(shape), len(shape) + 2))
    dims = tuple(sorted(draw(st.permutations(range(rank)))[:len(shape)]))
    target = [draw(st.integers(0, 3)) for _ in range(rank)]
    for i, d in enumerate(dims):
        if shape[i] != 1 or draw(st.booleans()):
            target[d] = shape[i]
    return shape, tuple(target), dims


@given(data=st.data(), case=_broadcast_case(), dtype=st.sampled_from(DTYPES))
def test_broadcast_in_dim(data, case, dtype):
    shape, target, dims = case
    size = _size(data)
    x, ax = _batched(data, shape, dtype, size)
    check_vmap(lambda v: lax.broadcast_in_dim(v, target, dims), (x,), (ax,),
               _out_axis(data, len(target)))


@settings(max_examples=15)
@given(data=st.data(), case=_broadcast_case(max_dims=2))
def test_broadcast_in_dim_grads(data, case):
    shape, target, dims = case
    x, ax = _batched(data, shape, np.float32, _size(data, 1))
    check_batched_grads(lambda v: lax.broadcast_in_dim(v, target, dims), (x,), (ax,))


# ---- concatenate --------------------------------------------------------------------------
@st.composite
def _concatenate_case(draw):
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=3))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    sizes = draw(st.lists(st.integers(0, 3), min_size=2, max_size=3))
    parts = [tuple(n if i == dim % len(shape) else s for i, s in enumerate(shape))
             for n in sizes]
    return parts, dim


@given(data=st.data(), case=_concatenate_case(), dtype=st.sampled_from(DTYPES))
def test_concatenate(data, case, dtype):
    parts, dim = case
    args, in_axes = _batched_args(data, parts, [dtype] * len(parts), _size(data))
    check_vmap(lambda *xs: lax.concatenate(xs, dim), args, in_axes,
               _out_axis(data, len(parts[0])))


@settings(max_examples=15)
@given(data=st.data(), case=_concatenate_case())
def test_concatenate_grads(data, case):
    parts, dim = case
    args, in_axes = _batched_args(data, parts, [np.float32] * len(parts), _size(data, 1))
    check_batched_grads(lambda *xs: lax.concatenate(xs, dim), args, in_axes,
                        tuple(range(len(args))))


# ---- iota ---------------------------------------------------------------------------------
def test_iota_rule_is_unbatched():
    """iota has no operands: its rule binds it as is and reports no batch dimension."""
    rule = lax.iota_p.rule("batching")
    out, out_dim = rule(BatchAxis(3, None), [], [], dtype=np.dtype(np.int32), shape=(2, 4),
                        dimension=1)
    assert out_dim is None
    np.testing.assert_array_equal(np.asarray(out), np.broadcast_to(np.arange(4), (2, 4)))


@given(data=st.data())
def test_iota_beside_batched_values(data):
    size = _size(data)
    x, ax = _batched(data, (2, 3), np.float32, size)
    check_vmap(lambda v: v + lax.broadcasted_iota(np.float32, (2, 3), 1), (x,), (ax,))


# ---- pad ----------------------------------------------------------------------------------
@st.composite
def _pad_case(draw, max_dims=3):
    shape = draw(shapes(max_dims=max_dims, max_side=3))
    config = []
    for n in shape:
        interior = draw(st.integers(0, 2))
        lo, hi = draw(st.integers(-3, 3)), draw(st.integers(-3, 3))
        assume(lo + hi + n + max(n - 1, 0) * interior >= 0)
        config.append((lo, hi, interior))
    return shape, tuple(config)


@given(data=st.data(), case=_pad_case(), dtype=st.sampled_from(DTYPES))
def test_pad(data, case, dtype):
    """Operand and padding value each batched or not (a batched value needs a select)."""
    shape, config = case
    args, in_axes = _batched_args(data, [shape, ()], [dtype, dtype], _size(data))
    check_vmap(lambda v, p: lax.pad(v, p, config), args, in_axes, _out_axis(data, len(shape)))


@settings(max_examples=15)
@given(data=st.data(), case=_pad_case(max_dims=2))
def test_pad_grads(data, case):
    shape, config = case
    args, in_axes = _batched_args(data, [shape, ()], [np.float32] * 2, _size(data, 1))
    check_batched_grads(lambda v, p: lax.pad(v, p, config), args, in_axes, (0, 1))


def test_pad_batched_value_keeps_weak_type():
    """pad is weak only when both operands are: the select path must keep that."""
    out = mt.vmap(lambda p: lax.pad(lax.full((2,), 1.0), p, ((1, 1, 1),)))(
        lax.full((3,), 5.0))
    assert out.aval.weak_type
    np.testing.assert_array_equal(np.asarray(out), [[5, 1, 5, 1, 5]] * 3)


# ---- reshape ------------------------------------------------------------------------------
_FACTORS = {2: [2], 3: [3], 4: [2, 2]}


@st.composite
def _reshape_case(draw):
    shape = draw(shapes(max_dims=3, max_side=4))
    if 0 in shape:
        new = draw(shapes(min_dims=1, max_dims=3, max_side=3).filter(lambda s: 0 in s))
    else:
        factors = draw(st.permutations([f for n in shape for f in _FACTORS.get(n, [])]))
        cuts = sorted(draw(st.lists(st.integers(0, len(factors)), max_size=3)))
        bounds = [0, *cuts, len(factors)]
        new = tuple(int(np.prod(factors[a:b])) for a, b in itertools.pairwise(bounds))
    dims = draw(st.none() | st.permutations(range(len(shape))).map(tuple))
    return shape, tuple(new), dims


@given(data=st.data(), case=_reshape_case(), dtype=st.sampled_from(DTYPES))
def test_reshape(data, case, dtype):
    shape, new, dims = case
    x, ax = _batched(data, shape, dtype, _size(data))
    check_vmap(lambda v: lax.reshape(v, new, dims), (x,), (ax,), _out_axis(data, len(new)))


@settings(max_examples=15)
@given(data=st.data(), case=_reshape_case())
def test_reshape_grads(data, case):
    shape, new, dims = case
    x, ax = _batched(data, shape, np.float32, _size(data, 1))
    check_batched_grads(lambda v: lax.reshape(v, new, dims), (x,), (ax,))


# ---- rev, transpose, squeeze, slice -------------------------------------------------------
@given(data=st.data(), shape=shapes(max_dims=3, max_side=3), dtype=st.sampled_from(DTYPES))
def test_rev(data, shape, dtype):
    dims = data.draw(axis_tuples(len(shape)), label="dims")
    x, ax = _batched(data, shape, dtype, _size(data))
    check_vmap(lambda v: lax.rev(v, dims), (x,), (ax,), _out_axis(data, len(shape)))


@given(data=st.data(), shape=shapes(max_dims=3, max_side=3), dtype=st.sampled_from(DTYPES))
def test_transpose(data, shape, dtype):
    perm = data.draw(st.permutations(range(len(shape))), label="perm")
    x, ax = _batched(data, shape, dtype, _size(data))
    check_vmap(lambda v: lax.transpose(v, perm), (x,), (ax,), _out_axis(data, len(shape)))


@st.composite
def _squeeze_case(draw):
    shape = tuple(draw(st.lists(st.sampled_from([1, 1, 0, 2, 3]), max_size=4)))
    ones = [i for i, n in enumerate(shape) if n == 1]
    dims = draw(st.lists(st.sampled_from(ones), unique=True) if ones else st.just([]))
    return shape, tuple(d - len(shape) if draw(st.booleans()) else d for d in dims)


@given(data=st.data(), case=_squeeze_case(), dtype=st.sampled_from(DTYPES))
def test_squeeze(data, case, dtype):
    shape, dims = case
    x, ax = _batched(data, shape, dtype, _size(data))
    check_vmap(lambda v: lax.squeeze(v, dims), (x,), (ax,),
               _out_axis(data, len(shape) - len(dims)))


@st.composite
def _slice_case(draw, max_dims=3):
    shape = draw(shapes(max_dims=max_dims, max_side=4))
    starts, limits = [], []
    for n in shape:
        starts.append(draw(st.integers(0, n)))
        limits.append(draw(st.integers(starts[-1], n)))
    strides = draw(st.none() | st.tuples(*[st.integers(1, 3) for _ in shape]))
    return shape, tuple(starts), tuple(limits), strides


@given(data=st.data(), case=_slice_case(), dtype=st.sampled_from(DTYPES))
def test_slice(data, case, dtype):
    shape, starts, limits, strides = case
    x, ax = _batched(data, shape, dtype, _size(data))
    check_vmap(lambda v: lax.slice(v, starts, limits, strides), (x,), (ax,),
               _out_axis(data, len(shape)))


@settings(max_examples=15)
@given(data=st.data(), case=_slice_case(max_dims=2))
def test_slice_rev_transpose_squeeze_grads(data, case):
    """A chain of the remaining structural primitives, differentiated and batched."""
    shape, starts, limits, strides = case
    x, ax = _batched(data, shape, np.float32, _size(data, 1))
    rank = len(shape)

    def g(v):
        s = lax.rev(lax.slice(v, starts, limits, strides), tuple(range(rank)))
        s = lax.transpose(s, tuple(reversed(range(rank))))
        return lax.squeeze(lax.reshape(s, (1, *s.shape)), (0,))

    check_batched_grads(g, (x,), (ax,))


# ---- nested vmap --------------------------------------------------------------------------
def _nest(data, shape, sizes):
    """(array, inner_axis, outer_axis): examples of `shape` batched twice."""
    inner = data.draw(st.integers(0, len(shape)), label="inner")
    x_shape = (*shape[:inner], sizes[0], *shape[inner:])
    outer = data.draw(st.integers(0, len(x_shape)), label="outer")
    x_shape = (*x_shape[:outer], sizes[1], *x_shape[outer:])
    return _values(data, x_shape, np.float32), inner, outer


@settings(max_examples=15)
@given(data=st.data(), case=_pad_case(max_dims=2), value_level=st.sampled_from([0, 1, 2]))
def test_nested_vmap(data, case, value_level):
    """Two batch dims through pad (the value batched at no, one or both levels), transpose,
    reshape and concatenate."""
    shape, config = case
    sizes = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    x, inner, outer = _nest(data, shape, sizes)
    if value_level == 2:
        p, p_inner, p_outer = _nest(data, (), sizes)
    else:  # batched along the inner (0) or the outer (1) level only
        p = _values(data, (sizes[value_level],), np.float32)
        p_inner, p_outer = (0, None) if value_level == 0 else (None, 0)

    def g(v, value):
        padded = lax.pad(v, value, config)
        flat = lax.reshape(lax.transpose(padded, tuple(reversed(range(padded.ndim)))),
                           (int(np.prod(padded.shape)),))
        return lax.concatenate([flat, lax.reshape(value, (1,))], 0)

    check_nested(g, (x, p), (inner, p_inner), (outer, p_outer))
