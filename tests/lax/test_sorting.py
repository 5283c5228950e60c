"""sort (one or several operands, lexicographic keys) and top_k against NumPy references:
drawn shapes, negative dimensions, several dtypes, NaN/inf/-0.0, ties; errors; tracing."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
from mytorch import lax
from mytorch.core.array import Array, from_numpy
from tests.strategies import arrays, assert_close, shapes

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16]
INTS = [np.dtype(t) for t in (np.int32, np.int8, np.uint8, np.uint32)]
BOOL = [np.dtype(np.bool_)]
SPECIAL = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, np.nan, np.inf, -np.inf])


def _is_float(dtype):
    return dtype.kind == "f" or dtype == BF16


def _values(data, dtype, shape):
    """Arrays with many ties; floats with NaN, inf and both zeros."""
    if _is_float(dtype):
        return data.draw(st.one_of(arrays(dtype, shape, elements=SPECIAL),
                                   arrays(dtype, shape, allow_nan=True, allow_inf=True)))
    if dtype == np.bool_:
        return data.draw(arrays(dtype, shape))
    return data.draw(st.one_of(arrays(dtype, shape, min_value=0, max_value=3),
                               arrays(dtype, shape)))


def _np_key(x):
    return x.astype(np.float32) if x.dtype == BF16 else x


def _assert_same_bits(actual, expected):
    """Equal shape, dtype and bit patterns (so -0.0 vs 0.0 and NaN positions count)."""
    actual = np.asarray(actual)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if actual.dtype.itemsize > 1 or actual.dtype.kind == "f":
        view = np.dtype(f"u{actual.dtype.itemsize}")
        np.testing.assert_array_equal(actual.view(view), expected.view(view))
    else:
        np.testing.assert_array_equal(actual, expected)


# ---- sort --------------------------------------------------------------------------------
@given(data=st.data())
def test_sort_one_operand_matches_numpy(data):
    dtype = data.draw(st.sampled_from(FLOATS + INTS + BOOL))
    shape = data.draw(shapes(min_dims=1, max_dims=4))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = _values(data, dtype, shape)
    out = lax.sort(from_numpy(x), dimension=dim)
    assert isinstance(out, Array)
    expected = np.sort(_np_key(x), axis=dim, kind="stable").astype(dtype)
    _assert_same_bits(out, expected)


@given(data=st.data())
def test_sort_several_operands_matches_lexsort(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = data.draw(st.integers(1, 3))
    num_keys = data.draw(st.integers(1, n))
    dts = [data.draw(st.sampled_from(FLOATS + INTS + BOOL)) for _ in range(n)]
    xs = [_values(data, dt, shape) for dt in dts]
    # a last operand of positions along `dim` shows the permutation (and so stability)
    pos = np.broadcast_to(np.arange(shape[dim]).reshape(
        [-1 if i == dim % len(shape) else 1 for i in range(len(shape))]), shape)
    xs.append(pos.astype(np.int32))
    out = lax.sort([from_numpy(x) for x in xs], dimension=dim, num_keys=num_keys)
    assert isinstance(out, tuple) and len(out) == len(xs)
    keys = [np.moveaxis(_np_key(x), dim, -1) for x in xs[:num_keys]]
    perm = np.moveaxis(np.lexsort(keys[::-1], axis=-1), -1, dim)
    for got, x in zip(out, xs, strict=True):
        _assert_same_bits(got, np.take_along_axis(x, perm, axis=dim))


def test_sort_orders_nan_last_and_is_stable():
    k = from_numpy(np.array([np.nan, 1.0, -0.0, np.inf, 0.0, -np.inf, np.nan, 1.0], np.float32))
    v = from_numpy(np.arange(8, dtype=np.int32))
    keys, vals = lax.sort_key_val(k, v)
    assert vals.tolist() == [5, 2, 4, 1, 7, 3, 0, 6]
    assert np.signbit(np.asarray(keys)).tolist() == [True, True] + [False] * 6
    a = from_numpy(np.array([1, 0, 1, 0], np.int32))
    b = from_numpy(np.array([2.0, 3.0, 1.0, 3.0], np.float32))
    v = from_numpy(np.arange(4, dtype=np.int32))
    out = lax.sort((a, b, v), num_keys=2)
    assert [o.tolist() for o in out] == [[0, 0, 1, 1], [3.0, 3.0, 1.0, 2.0], [1, 3, 2, 0]]
    out = lax.sort((a, b, v), num_keys=1)
    assert out[2].tolist() == [1, 3, 0, 2]


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.int8, BF16])
def test_sort_and_top_k_are_stable_on_long_rows(dtype):
    # long rows with many ties: an unstable (SIMD quicksort) order would show here
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 4, size=(3, 500)).astype(dtype)
    pos = np.broadcast_to(np.arange(500, dtype=np.int32), keys.shape)
    k, v = lax.sort_key_val(from_numpy(keys), from_numpy(pos))
    assert_close(v, np.argsort(_np_key(keys), axis=-1, kind="stable"), dtype=np.int32)
    values, indices = lax.top_k(from_numpy(keys), 300)
    assert_close(indices, _ref_top_k(keys, 300)[1], dtype=np.int32)


def test_sort_key_val_along_a_dimension():
    keys = np.array([[3, 1, 2], [0, 2, 1]], np.int8)
    vals = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float16)
    k, v = lax.sort_key_val(from_numpy(keys), from_numpy(vals), dimension=0)
    assert_close(k, np.array([[0, 1, 1], [3, 2, 2]], np.int8), dtype=np.int8)
    assert_close(v, np.array([[4.0, 2.0, 6.0], [1.0, 5.0, 3.0]], np.float16), dtype=np.float16)


def test_sort_keeps_weak_types():
    x = from_numpy(np.array([2.0, 1.0], np.float32), weak_type=True)
    i = from_numpy(np.array([0, 1], np.int32))
    sx, si = lax.sort((x, i))
    assert sx.weak_type and not si.weak_type
    assert sx.tolist() == [1.0, 2.0] and si.tolist() == [1, 0]


def test_sort_errors():
    x = from_numpy(np.ones((3, 4), np.float32))
    with pytest.raises(TypeError, match=r"sort needs operands of one shape, got f32\[3,4\], "
                                        r"i32\[4\]"):
        lax.sort((x, from_numpy(np.ones(4, np.int32))))
    with pytest.raises(ValueError, match=r"num_keys must be an int in \[1, 2\].*got 3"):
        lax.sort((x, x), num_keys=3)
    with pytest.raises(ValueError, match=r"num_keys must be an int in \[1, 1\].*got 0"):
        lax.sort(x, num_keys=0)
    with pytest.raises(ValueError, match=r"dimension 2 is out of bounds for f32\[3,4\]"):
        lax.sort(x, dimension=2)
    with pytest.raises(ValueError, match=r"dimension -3 is out of bounds"):
        lax.sort(x, dimension=-3)
    with pytest.raises(ValueError, match=r"rank >= 1, got the 0-d f32\[\]"):
        lax.sort(from_numpy(np.float32(1.0)))
    with pytest.raises(ValueError, match="at least one operand"):
        lax.sort([])
    with pytest.raises(TypeError, match="dimension must be an int"):
        lax.sort(x, dimension=0.5)


# ---- top_k -------------------------------------------------------------------------------
def _ref_top_k(x, k):
    """Descending, NaN above everything, lower index first on ties: two stable argsorts."""
    key = np.asarray(x).astype(np.float64)
    order = np.argsort(-key, axis=-1, kind="stable")  # NaNs (and -NaN) last
    nan_sorted = np.take_along_axis(np.isnan(key), order, axis=-1)
    order = np.take_along_axis(order, np.argsort(~nan_sorted, axis=-1, kind="stable"), -1)
    idx = order[..., :k]
    return np.take_along_axis(x, idx, axis=-1), idx.astype(np.int32)


@given(data=st.data())
def test_top_k_matches_a_stable_argsort_reference(data):
    dtype = data.draw(st.sampled_from(FLOATS + INTS + BOOL))
    shape = data.draw(shapes(min_dims=1, max_dims=3))
    k = data.draw(st.integers(0, shape[-1]))
    x = _values(data, dtype, shape)
    values, indices = lax.top_k(from_numpy(x), k)
    ref_values, ref_indices = _ref_top_k(x, k)
    assert_close(indices, ref_indices, dtype=np.int32)
    _assert_same_bits(values, ref_values)


def test_top_k_nan_first_ties_by_index():
    x = from_numpy(np.array([[1.0, np.inf, np.nan, 3.0, np.inf, np.nan]], np.float32))
    values, indices = lax.top_k(x, 4)
    assert indices.tolist() == [[2, 5, 1, 4]]
    assert_close(values, np.array([[np.nan, np.nan, np.inf, np.inf]], np.float32))
    ints = from_numpy(np.array([-128, 127, 0, 127, -128], np.int8))
    values, indices = lax.top_k(ints, 5)
    assert values.tolist() == [127, 127, 0, -128, -128] and indices.tolist() == [1, 3, 2, 0, 4]
    assert values.dtype == np.int8 and indices.dtype == np.int32
    u = from_numpy(np.array([0, 4294967295, 7], np.uint32))
    assert lax.top_k(u, 2)[1].tolist() == [1, 2]


def test_top_k_shapes_and_weak_type():
    x = from_numpy(np.zeros((2, 3, 5), np.float32), weak_type=True)
    values, indices = lax.top_k(x, 2)
    assert values.shape == indices.shape == (2, 3, 2)
    assert values.weak_type and not indices.weak_type
    empty_v, empty_i = lax.top_k(from_numpy(np.zeros((4, 0), np.float32)), 0)
    assert empty_v.shape == empty_i.shape == (4, 0)


def test_top_k_errors():
    x = from_numpy(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"top_k: k=5 is larger than the last axis of "
                                        r"f32\[3,4\] \(size 4\)"):
        lax.top_k(x, 5)
    with pytest.raises(ValueError, match="k must be non-negative, got -1"):
        lax.top_k(x, -1)
    with pytest.raises(ValueError, match=r"rank >= 1, got the 0-d f32\[\]"):
        lax.top_k(from_numpy(np.float32(1.0)), 1)
    with pytest.raises(TypeError, match="k must be an int"):
        lax.top_k(x, 1.5)


# ---- tracing -----------------------------------------------------------------------------
@settings(max_examples=10)
@given(x=arrays(np.float32, shapes(min_dims=2, max_dims=3, min_side=2), allow_nan=True))
def test_traced_jaxpr_evaluates_like_eager(x):
    def f(x):
        keys, vals = lax.sort_key_val(x, lax.neg(x), dimension=0)
        return (lax.sort(x), keys, vals, *lax.top_k(x, 2),
                *lax.sort((x, lax.neg(x)), dimension=-2, num_keys=2))

    closed = mt.make_jaxpr(f)(x)
    text = str(closed)
    assert "sort[dimension=0, is_stable=True, num_keys=1]" in text
    assert f"sort[dimension={x.ndim - 2}, is_stable=True, num_keys=2]" in text
    assert "top_k[k=2]" in text
    eager = f(from_numpy(x))
    traced = closed(from_numpy(x))
    assert len(traced) == len(eager)
    for a, b in zip(traced, eager, strict=True):
        _assert_same_bits(np.asarray(a), np.asarray(b))
