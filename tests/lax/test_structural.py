"""Structural lax primitives against NumPy: broadcast_in_dim, reshape, squeeze/expand_dims,
transpose, rev, pad (interior padding and negative edges), concatenate, slice, iota and
full; drawn shapes (rank 0, size-0 axes), negative axes, several dtypes; weak types; skipped
no-op binds; error messages; tracing."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import mytorch as mt
from mytorch import lax
from mytorch.core.array import from_numpy
from mytorch.lax._utils import weak_scalar
from tests.strategies import assert_close, axis_tuples, shapes

DTYPES = [np.dtype(t) for t in (np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.uint8,
                                np.int32, np.bool_)]
dtypes_ = st.sampled_from(DTYPES)


def _draw_array(data, shape=None, dtype=None):
    """Values that differ from element to element (hypothesis' arrays often repeat one
    value), so that an element in the wrong place shows; bools alternate."""
    shape = data.draw(shapes(), label="shape") if shape is None else shape
    dtype = data.draw(dtypes_, label="dtype") if dtype is None else dtype
    n = int(np.prod(shape, dtype=np.int64))
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    perm = np.random.default_rng(seed).permutation(n)
    values = perm % 2 if dtype == np.bool_ else perm - n // 2
    return values.astype(dtype).reshape(shape)


def _exact(out, ref):
    assert_close(out, ref, ref.dtype, rtol=0, atol=0)


# ---- broadcast_in_dim, broadcast, expand_dims --------------------------------------------
@given(data=st.data())
def test_broadcast_in_dim_matches_numpy(data):
    x = _draw_array(data, shape=data.draw(shapes(max_dims=3)))
    rank = data.draw(st.integers(x.ndim, x.ndim + 2), label="rank")
    dims = sorted(data.draw(st.permutations(range(rank)), label="dims")[:x.ndim])
    shape = [data.draw(st.integers(0, 4)) for _ in range(rank)]
    for i, d in enumerate(dims):
        if x.shape[i] != 1 or data.draw(st.booleans()):
            shape[d] = x.shape[i]
    expanded = [1] * rank
    for i, d in enumerate(dims):
        expanded[d] = x.shape[i]
    out = lax.broadcast_in_dim(from_numpy(x), tuple(shape), tuple(dims))
    _exact(out, np.broadcast_to(x.reshape(expanded), shape))


@given(data=st.data())
def test_broadcast_and_expand_dims(data):
    x = _draw_array(data, shape=data.draw(shapes(max_dims=3)))
    sizes = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2), label="sizes"))
    _exact(lax.broadcast(from_numpy(x), sizes), np.broadcast_to(x, sizes + x.shape))
    _exact(lax.broadcast_to_rank(from_numpy(x), x.ndim + 2), x.reshape((1, 1) + x.shape))
    n_new = data.draw(st.integers(0, 2), label="n_new")
    out_rank = x.ndim + n_new
    pos = data.draw(st.permutations(range(out_rank)), label="pos")[:n_new]
    dims = tuple(data.draw(st.sampled_from([p, p - out_rank])) for p in pos)
    _exact(lax.expand_dims(from_numpy(x), dims), np.expand_dims(x, dims))


def test_broadcast_weak_type_and_noop():
    w = weak_scalar(2.0, np.float32)
    out = lax.broadcast_in_dim(w, (2, 3), ())
    assert out.weak_type and out.shape == (2, 3)
    x = from_numpy(np.ones((2, 3), np.float32))
    assert lax.broadcast_in_dim(x, (2, 3), (0, 1)) is x
    assert lax.broadcast(x, ()) is x and lax.expand_dims(x, ()) is x


# ---- reshape, squeeze ---------------------------------------------------------------------
@given(data=st.data())
def test_reshape_matches_numpy(data):
    x = _draw_array(data)
    dims = None
    if x.ndim and data.draw(st.booleans(), label="use dimensions"):
        dims = tuple(data.draw(st.permutations(range(x.ndim)), label="dimensions"))
    src = list(x.shape if dims is None else np.transpose(x, dims).shape)
    new = list(data.draw(st.permutations(src), label="permuted"))
    for _ in range(data.draw(st.integers(0, 2), label="ones")):
        new.insert(data.draw(st.integers(0, len(new))), 1)
    if len(new) >= 2 and data.draw(st.booleans(), label="merge"):
        new[:2] = [new[0] * new[1]]
    ref = np.reshape(x if dims is None else np.transpose(x, dims), new)
    _exact(lax.reshape(from_numpy(x), tuple(new), dims), ref)


def test_reshape_noop_and_weak():
    x = from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert lax.reshape(x, (2, 3)) is x and lax.reshape(x, [2, 3], (0, 1)) is x
    w = lax.broadcast_in_dim(weak_scalar(1, np.int32), (2, 3), ())
    assert lax.reshape(w, (6,)).weak_type


@given(data=st.data())
def test_squeeze_matches_numpy(data):
    shape = data.draw(st.lists(st.sampled_from([0, 1, 1, 2, 3]), max_size=4), label="shape")
    x = _draw_array(data, shape=tuple(shape))
    ones = [i for i, d in enumerate(shape) if d == 1]
    chosen = data.draw(st.lists(st.sampled_from(ones), unique=True), label="axes") if ones else []
    dims = tuple(data.draw(st.sampled_from([a, a - x.ndim])) for a in chosen)
    _exact(lax.squeeze(from_numpy(x), dims), np.squeeze(x, tuple(chosen)))


# ---- transpose, rev -----------------------------------------------------------------------
@given(data=st.data())
def test_transpose_matches_numpy(data):
    x = _draw_array(data)
    perm = tuple(data.draw(st.permutations(range(x.ndim)), label="perm"))
    _exact(lax.transpose(from_numpy(x), perm), np.transpose(x, perm))


@given(data=st.data())
def test_rev_matches_numpy(data):
    x = _draw_array(data)
    dims = data.draw(axis_tuples(x.ndim), label="dims")
    _exact(lax.rev(from_numpy(x), dims), np.flip(x, dims) if dims else x)


# ---- pad ----------------------------------------------------------------------------------
def _pad_reference(x, value, config):
    """Interior padding by placing each element, edges with np.pad, then cropping."""
    inner = [n + max(n - 1, 0) * i for n, (_, _, i) in zip(x.shape, config, strict=True)]
    spread = np.full(inner, value, dtype=x.dtype)
    for idx in np.ndindex(*x.shape):
        spread[tuple(k * (c[2] + 1) for k, c in zip(idx, config, strict=True))] = x[idx]
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi, _ in config]
    out = np.pad(spread, widths, constant_values=value) if x.ndim else spread
    crop = tuple(slice(max(-lo, 0), out.shape[d] - max(-hi, 0))
                 for d, (lo, hi, _) in enumerate(config))
    return out[crop]


@given(data=st.data())
def test_pad_matches_reference(data):
    x = _draw_array(data, shape=data.draw(shapes(max_dims=3, max_side=4)))
    value = np.asarray(data.draw(st.sampled_from([-100, 100])), np.int32).astype(x.dtype)
    config = []
    for n in x.shape:
        interior = data.draw(st.integers(0, 2))
        inner = n + max(n - 1, 0) * interior
        lo = data.draw(st.integers(-inner - 1, 3))
        hi = data.draw(st.integers(-inner - 1, 3))
        assume(lo + hi + inner >= 0)
        config.append((lo, hi, interior))
    out = lax.pad(from_numpy(x), from_numpy(value), tuple(config))
    _exact(out, _pad_reference(x, value, config))


def test_pad_scalar_value_and_weak_type():
    x = from_numpy(np.array([1, 2, 3], np.int8))
    _exact(lax.pad(x, -1, ((1, 2, 1),)), np.array([-1, 1, -1, 2, -1, 3, -1, -1], np.int8))
    _exact(lax.pad(x, 0, ((-1, -1, 0),)), np.array([2], np.int8))
    w = lax.broadcast_in_dim(weak_scalar(1.0, np.float32), (2,), ())
    assert lax.pad(w, 0.0, ((1, 1, 0),)).weak_type
    assert not lax.pad(w, from_numpy(np.float32(0)), ((1, 1, 0),)).weak_type


# ---- concatenate, slice -------------------------------------------------------------------
@given(data=st.data())
def test_concatenate_matches_numpy(data):
    base = data.draw(shapes(min_dims=1, max_dims=3), label="base")
    axis = data.draw(st.integers(-len(base), len(base) - 1), label="axis")
    dtype = data.draw(dtypes_, label="dtype")
    xs = []
    for _ in range(data.draw(st.integers(1, 4), label="count")):
        shape = list(base)
        shape[axis] = data.draw(st.integers(0, 3))
        xs.append(_draw_array(data, tuple(shape), dtype))
    _exact(lax.concatenate([from_numpy(x) for x in xs], axis), np.concatenate(xs, axis))


@given(data=st.data())
def test_slice_matches_numpy(data):
    x = _draw_array(data)
    starts, limits, strides = [], [], []
    for n in x.shape:
        a = data.draw(st.integers(0, n))
        starts.append(a)
        limits.append(data.draw(st.integers(a, n)))
        strides.append(data.draw(st.integers(1, 3)))
    ref = x[tuple(slice(a, b, c) for a, b, c in zip(starts, limits, strides, strict=True))]
    _exact(lax.slice(from_numpy(x), starts, limits, strides), ref)
    plain = x[tuple(slice(a, b) for a, b in zip(starts, limits, strict=True))]
    _exact(lax.slice(from_numpy(x), starts, limits), plain)


@given(data=st.data())
def test_slice_and_index_in_dim(data):
    x = _draw_array(data, shape=data.draw(shapes(min_dims=1, min_side=1)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    n = x.shape[axis]
    start = data.draw(st.one_of(st.none(), st.integers(-n, n)), label="start")
    limit = data.draw(st.one_of(st.none(), st.integers(-n, n)), label="limit")
    a = 0 if start is None else start % n if start < 0 else start
    b = n if limit is None else limit % n if limit < 0 else limit
    assume(a <= b)
    stride = data.draw(st.integers(1, 3), label="stride")
    ref = np.moveaxis(np.moveaxis(x, axis, 0)[a:b:stride], 0, axis)
    _exact(lax.slice_in_dim(from_numpy(x), start, limit, stride, axis), ref)
    i = data.draw(st.integers(-n, n - 1), label="index")
    _exact(lax.index_in_dim(from_numpy(x), i, axis, keepdims=False), np.take(x, i, axis))
    _exact(lax.index_in_dim(from_numpy(x), i, axis), np.take(x, [i], axis))


def test_slice_noop():
    x = from_numpy(np.zeros((2, 3), np.float32))
    assert lax.slice(x, (0, 0), (2, 3)) is x and lax.slice(x, (0, 0), (2, 3), (1, 1)) is x
    assert lax.slice(x, (0, 0), (2, 3), (2, 1)).shape == (1, 3)


# ---- iota, full ---------------------------------------------------------------------------
IOTA_DTYPES = [np.dtype(t) for t in (np.int32, np.uint8, np.int8, np.float32, np.float16,
                                     ml_dtypes.bfloat16)]


@given(dtype=st.sampled_from(IOTA_DTYPES), shape=shapes(min_dims=1), data=st.data())
def test_iota_matches_numpy(dtype, shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dimension")
    out = lax.broadcasted_iota(dtype, shape, dim)
    expanded = [1] * len(shape)
    expanded[dim] = shape[dim]
    ref = np.broadcast_to(np.arange(shape[dim]).astype(dtype).reshape(expanded), shape)
    _exact(out, ref)
    assert not out.weak_type
    _exact(lax.iota(dtype, shape[0]), np.arange(shape[0]).astype(dtype))


def test_iota_large_float16_is_rounded_from_exact_integers():
    _exact(lax.iota(np.float16, 3000), np.arange(3000).astype(np.float16))


def test_full_and_friends():
    out = lax.full((2, 3), 1.5)
    _exact(out, np.full((2, 3), 1.5, np.float32))
    assert out.weak_type
    out = lax.full((2,), 3, np.int8)
    _exact(out, np.full((2,), 3, np.int8))
    assert not out.weak_type
    _exact(lax.full((), True), np.array(True))
    x = from_numpy(np.ones((2, 2), np.float16))
    _exact(lax.full_like(x, 7), np.full((2, 2), 7, np.float16))
    _exact(lax.full_like(x, 7, np.int32, shape=(3,)), np.full((3,), 7, np.int32))
    w = lax.full((4,), 2.0)
    z = lax.zeros_like_array(w)
    _exact(z, np.zeros(4, np.float32))
    assert z.weak_type
    assert lax.full_like(x.aval, 0).shape == (2, 2)
    assert not lax.zeros_like_array(x).weak_type


# ---- errors -------------------------------------------------------------------------------
def _f32(*shape):
    return from_numpy(np.zeros(shape, np.float32))


ERRORS = [  # the classes are JAX's
    (lambda: lax.reshape(_f32(2, 3), (4,)), TypeError,
     "reshape cannot turn f32[2,3] (6 elements) into shape (4,) (4 elements)"),
    (lambda: lax.reshape(_f32(2, 3), (3, 2), (0, 0)), TypeError, "permutation"),
    (lambda: lax.transpose(_f32(2, 3), (0, 0)), TypeError, "not a permutation of (0, 1)"),
    (lambda: lax.transpose(_f32(2, 3), (1, 2)), TypeError, "f32[2,3]"),
    (lambda: lax.concatenate([_f32(2), from_numpy(np.zeros(2, np.int32))], 0), TypeError,
     "one dtype, got f32[2], i32[2]"),
    (lambda: lax.concatenate([_f32(2, 3), _f32(2, 4)], 0), TypeError,
     "other dims are equal, got f32[2,3], f32[2,4]"),
    (lambda: lax.concatenate([_f32(2, 3)], 5), TypeError, "out of range"),
    (lambda: lax.concatenate([_f32(), _f32()], 0), TypeError, "0-d"),
    (lambda: lax.concatenate([], 0), ValueError, "non-empty"),
    (lambda: lax.broadcast_in_dim(_f32(2, 3), (2, 3, 4), (1, 0)), TypeError,
     "strictly increasing"),
    (lambda: lax.broadcast_in_dim(_f32(2, 3), (2, 4), (0, 1)), TypeError,
     "operand dim 1 has size 3 but target dim 1 has size 4"),
    (lambda: lax.broadcast_in_dim(_f32(2, 3), (2, 3), (0,)), TypeError, "one target dim"),
    (lambda: lax.broadcast_in_dim(_f32(3), (3,), (1,)), TypeError, "[0, 1)"),
    (lambda: lax.squeeze(_f32(2, 1), (0,)), ValueError, "size 2 at dimension 0"),
    (lambda: lax.squeeze(_f32(2, 1), (2,)), ValueError, "out of bounds"),
    (lambda: lax.expand_dims(_f32(2), (0, 0)), ValueError, "repeat"),
    (lambda: lax.rev(_f32(2, 1), (0, 0)), TypeError, "more than once"),
    (lambda: lax.pad(_f32(2), 0.0, ((-3, 0, 0),)), ValueError, "negative size"),
    (lambda: lax.pad(_f32(2), 0.0, ((0, 0, -1),)), ValueError, "interior"),
    (lambda: lax.pad(_f32(2), 0.0, ((0, 0),)), ValueError, "(low, high, interior)"),
    (lambda: lax.pad(_f32(2), _f32(1), ((0, 0, 0),)), TypeError, "0-d padding_value"),
    (lambda: lax.pad(_f32(2), from_numpy(np.int32(0)), ((0, 0, 0),)), TypeError, "dtype"),
    (lambda: lax.slice(_f32(4), (3,), (2,)), TypeError, "0 <= start <= limit <= 4"),
    (lambda: lax.slice(_f32(4), (0,), (5,)), TypeError, "limit 5"),
    (lambda: lax.slice(_f32(4), (0,), (4,), (0,)), TypeError, "positive"),
    (lambda: lax.slice(_f32(4, 2), (0,), (4,)), TypeError, "one entry per dim"),
    (lambda: lax.index_in_dim(_f32(4), 4), IndexError, "out of bounds"),
    (lambda: lax.iota(np.bool_, 3), TypeError, "integer or floating-point"),
    (lambda: lax.broadcasted_iota(np.int32, (2, 3), 2), ValueError, "out of bounds"),
    (lambda: lax.full((2,), _f32(2)), TypeError, "scalar fill_value"),
    (lambda: lax.reshape(_f32(2), (2.5,)), TypeError, "sequence of ints"),
    (lambda: lax.reshape(_f32(2, 3), (-1,)), ValueError, "contains -1"),
]


@pytest.mark.parametrize("fn,cls,fragment", ERRORS)
def test_errors(fn, cls, fragment):
    with pytest.raises(cls) as info:
        fn()
    assert fragment in str(info.value)


def test_abstract_eval_rejects_bad_params_directly():
    aval = _f32(2, 3).aval
    with pytest.raises(TypeError, match="tuple of Python ints"):
        lax.reshape_p.abstract_eval(aval, new_sizes=[3, 2], dimensions=None)
    with pytest.raises(TypeError, match="negative dimension"):
        lax.broadcast_in_dim_p.abstract_eval(aval, shape=(2, -3), broadcast_dimensions=(0, 1))


# ---- tracing ------------------------------------------------------------------------------
def test_make_jaxpr_traces_and_evaluates():
    def f(x, v):
        y = lax.pad(lax.rev(x, (0,)), v, ((1, -1, 1), (0, 2, 0)))
        y = lax.concatenate([y, lax.slice(y, (0, 0), (y.shape[0], 2))], 1)
        y = lax.transpose(lax.reshape(y, (y.shape[1], y.shape[0])), (1, 0))
        z = lax.broadcast_in_dim(lax.squeeze(lax.expand_dims(v, (0,)), (0,)), y.shape, ())
        i = lax.convert_element_type(lax.broadcasted_iota(np.int32, y.shape, 1), y.dtype)
        return lax.add(lax.add(y, z), i)

    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    v = np.float32(-1)
    closed = mt.make_jaxpr(f)(from_numpy(x), from_numpy(v))
    text = str(closed)
    for name in ("pad", "rev", "concatenate", "slice", "reshape", "transpose",
                 "broadcast_in_dim", "squeeze", "iota"):
        assert name in text
    eager = f(from_numpy(x), from_numpy(v))
    assert_close(closed(from_numpy(x), from_numpy(v))[0], np.asarray(eager), np.float32,
                 rtol=0, atol=0)


@settings(max_examples=10)
@given(data=st.data())
def test_traced_reshape_and_transpose_match_eager(data):
    x = _draw_array(data, dtype=np.dtype(np.float32))
    perm = tuple(data.draw(st.permutations(range(x.ndim)), label="perm"))

    def f(a):
        return lax.reshape(lax.transpose(a, perm), (x.size,))

    closed = mt.make_jaxpr(f)(from_numpy(x))
    _exact(closed(from_numpy(x))[0], np.transpose(x, perm).reshape(-1))
