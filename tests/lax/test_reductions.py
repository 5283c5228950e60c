"""Reductions, argmax/argmin and cumulative reductions against NumPy: drawn shapes (rank 0,
size-0 axes), negative axes, several dtypes, NaN/inf; XLA identities for empty axes;
float32 accumulation of half-precision sums; error messages; tracing."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
from mytorch import lax
from mytorch.core.array import from_numpy
from mytorch.errors import X64Warning
from tests.strategies import arrays, assert_close, axis_tuples, shapes

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
FLOATS = [F32, F16, BF16]
INTS = [np.dtype(t) for t in (np.int32, np.int8, np.uint8, np.uint32)]
BOOL = [np.dtype(np.bool_)]


def _f64(x):
    return np.asarray(x).astype(np.float64)


def _wide(x):
    """x in a type whose arithmetic is exact or wraps like the 64-bit integers."""
    if x.dtype.kind == "u":
        return x.astype(np.uint64)
    if x.dtype.kind == "i":
        return x.astype(np.int64)
    return x


def _assert_sum_close(out, ref64, abs_ref64, dtype):
    """A float sum within its error bound: a few eps times the sum of magnitudes (plus one
    rounding to the output dtype); equal infinities and NaNs match."""
    out = np.asarray(out)
    assert out.dtype == dtype and out.shape == np.shape(ref64)
    got = _f64(out)
    with np.errstate(all="ignore"):
        ref = _f64(np.asarray(ref64).astype(dtype))
        same = (got == ref) | (np.isnan(got) & np.isnan(ref))
        bound = 10 * float(ml_dtypes.finfo(dtype).eps) * abs_ref64 + 1e-30
        ok = same | (np.abs(got - ref) <= bound)
    assert ok.all(), (got[~ok], ref[~ok])


def _identity(dtype, largest):
    if dtype == np.bool_:
        return largest
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.max if largest else info.min
    return np.inf if largest else -np.inf


# ---- reductions over axes ----------------------------------------------------------------
def _ref_max(x, axes):
    return np.max(_f64(x) if x.dtype.kind == "f" or x.dtype == BF16 else x, axis=axes,
                  initial=_identity(x.dtype, False))


def _ref_min(x, axes):
    return np.min(_f64(x) if x.dtype.kind == "f" or x.dtype == BF16 else x, axis=axes,
                  initial=_identity(x.dtype, True))


def _ref_logical(bool_fn, int_ufunc):
    def ref(x, axes):
        return bool_fn(x, axis=axes) if x.dtype == np.bool_ else int_ufunc.reduce(x, axis=axes)

    return ref


CHOOSERS = [
    ("reduce_max", _ref_max, FLOATS + INTS + BOOL),
    ("reduce_min", _ref_min, FLOATS + INTS + BOOL),
    ("reduce_and", _ref_logical(np.all, np.bitwise_and), INTS + BOOL),
    ("reduce_or", _ref_logical(np.any, np.bitwise_or), INTS + BOOL),
    ("reduce_xor", _ref_logical(lambda x, axis: np.bitwise_xor.reduce(x, axis=axis),
                                np.bitwise_xor), INTS + BOOL),
]


@pytest.mark.parametrize("name,ref,dts", CHOOSERS, ids=[c[0] for c in CHOOSERS])
@given(data=st.data())
def test_exact_reductions_match_numpy(name, ref, dts, data):
    dtype = data.draw(st.sampled_from(dts))
    shape = data.draw(shapes(max_dims=4))
    axes = data.draw(axis_tuples(len(shape)))
    x = data.draw(arrays(dtype, shape, allow_nan=True, allow_inf=True))
    out = getattr(lax, name)(from_numpy(x), axes)
    expected = np.asarray(ref(x, axes)).astype(dtype)
    assert_close(out, expected, dtype=dtype, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@given(data=st.data())
def test_reduce_sum_matches_numpy(dtype, data):
    shape = data.draw(shapes(max_dims=4))
    axes = data.draw(axis_tuples(len(shape)))
    x = data.draw(arrays(dtype, shape, allow_nan=True, allow_inf=True))
    out = lax.reduce_sum(from_numpy(x), axes)
    if dtype.kind in "iu":  # integers wrap: sum in 64 bits, then wrap to dtype
        assert_close(out, np.sum(_wide(x), axis=axes).astype(dtype), dtype=dtype)
    else:
        with np.errstate(all="ignore"):
            _assert_sum_close(out, np.sum(_f64(x), axis=axes),
                              np.sum(np.abs(_f64(x)), axis=axes), dtype)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@given(data=st.data())
def test_reduce_prod_matches_numpy(dtype, data):
    shape = data.draw(shapes(max_dims=3))
    axes = data.draw(axis_tuples(len(shape)))
    x = data.draw(arrays(dtype, shape, min_value=-2, max_value=2,
                         allow_nan=dtype.kind == "f", allow_inf=dtype.kind == "f"))
    out = lax.reduce_prod(from_numpy(x), axes)
    with np.errstate(all="ignore"):
        if dtype.kind in "iu":
            expected = np.prod(_wide(x), axis=axes).astype(dtype)
        else:
            expected = np.prod(_f64(x), axis=axes).astype(dtype)
    assert_close(out, expected, dtype=dtype)


def test_empty_axes_give_the_xla_identities():
    e = np.zeros((0, 3), np.float32)
    for name, value in [("reduce_sum", 0), ("reduce_prod", 1), ("reduce_max", -np.inf),
                        ("reduce_min", np.inf)]:
        assert_close(getattr(lax, name)(from_numpy(e), (0,)), np.full(3, value, np.float32))
    for dt in (np.int8, np.uint8, np.int32, np.uint32):
        info = np.iinfo(dt)
        ei = from_numpy(np.zeros((2, 0), dt))
        assert_close(lax.reduce_max(ei, (1,)), np.full(2, info.min, dt), dtype=dt)
        assert_close(lax.reduce_min(ei, (-1,)), np.full(2, info.max, dt), dtype=dt)
        assert_close(lax.reduce_and(ei, (1,)), np.full(2, ~dt(0), dt), dtype=dt)
        assert_close(lax.reduce_or(ei, (1,)), np.zeros(2, dt), dtype=dt)
    eb = from_numpy(np.zeros((0,), bool))
    assert lax.reduce_and(eb, (0,)).item() is True
    assert lax.reduce_or(eb, (0,)).item() is False
    assert lax.reduce_xor(eb, (0,)).item() is False
    assert_close(lax.reduce_max(from_numpy(np.zeros((0,), BF16)), (0,)),
                 np.array(-np.inf, BF16), dtype=BF16)


def test_reduce_max_propagates_nan():
    x = from_numpy(np.array([[1.0, np.nan, 3.0], [np.inf, 2.0, -np.inf]], np.float32))
    assert_close(lax.reduce_max(x, (1,)), np.array([np.nan, np.inf], np.float32))
    assert_close(lax.reduce_min(x, (1,)), np.array([np.nan, -np.inf], np.float32))


@pytest.mark.parametrize("dtype,big,n", [(F16, 2048.0, 1024), (BF16, 256.0, 256)])
def test_half_precision_sums_accumulate_in_float32(dtype, big, n):
    # adding 1 to `big` rounds away in the half type; a float32 accumulator keeps every 1
    x = np.concatenate([[big], np.ones(n)]).astype(dtype)
    assert_close(lax.reduce_sum(from_numpy(x), (0,)), np.array(big + n, dtype), dtype=dtype,
                 rtol=0, atol=0)
    got = lax.cumsum(from_numpy(x))
    assert_close(got, (big + np.arange(n + 1)).astype(dtype), dtype=dtype, rtol=0, atol=0)


def test_integer_sums_wrap_in_the_operand_dtype():
    x = from_numpy(np.array([100, 100, 100], np.int8))
    assert_close(lax.reduce_sum(x, (0,)), np.array(44, np.int8), dtype=np.int8)
    assert_close(lax.cumsum(x), np.array([100, -56, 44], np.int8), dtype=np.int8)
    u = from_numpy(np.array([200, 100], np.uint8))
    assert_close(lax.reduce_sum(u, (0,)), np.array(44, np.uint8), dtype=np.uint8)
    assert_close(lax.reduce_prod(u, (0,)), np.array(32, np.uint8), dtype=np.uint8)


def test_bitwise_reductions_on_integers():
    x = from_numpy(np.array([[0b1100, 0b1010, 0b0110]], np.uint8))
    assert lax.reduce_and(x, (1,)).tolist() == [0b0000]
    assert lax.reduce_or(x, (1,)).tolist() == [0b1110]
    assert lax.reduce_xor(x, (1,)).tolist() == [0b0000]
    b = from_numpy(np.array([True, True, True]))
    assert lax.reduce_xor(b, (0,)).item() is True


def test_reductions_keep_weak_type_and_drop_axes():
    x = from_numpy(np.ones((2, 3, 4), np.float32), weak_type=True)
    for name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
        out = getattr(lax, name)(x, (0, -1))
        assert out.shape == (3,) and out.dtype == np.float32 and out.weak_type
    assert not lax.reduce_sum(from_numpy(np.ones(3, np.float32)), (0,)).weak_type
    assert lax.reduce_sum(2.0, ()).weak_type
    assert lax.cumsum(x, 1).weak_type
    assert not lax.argmax(x, 0, np.int32).weak_type


def test_reduction_errors():
    x = from_numpy(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"reduce_sum: axis 2 is out of bounds for f32\[3,4\]"):
        lax.reduce_sum(x, (2,))
    with pytest.raises(ValueError, match=r"axis -3 is out of bounds.*\[-2, 2\)"):
        lax.reduce_max(x, (-3,))
    with pytest.raises(ValueError, match="more than once"):
        lax.reduce_sum(x, (0, -2))
    with pytest.raises(TypeError, match="axis must be an int"):
        lax.reduce_sum(x, (0.5,))
    with pytest.raises(ValueError, match="non-negative axes"):
        lax.reduce_sum_p.bind(x, axes=(-1,))
    with pytest.raises(ValueError, match="0-d operand"):
        lax.reduce_sum(from_numpy(np.float32(1)), (0,))
    with pytest.raises(TypeError, match=r"reduce_and needs bool or integer operands, got "
                                        r"f32\[3,4\]; compare first"):
        lax.reduce_and(x, (0,))
    with pytest.raises(TypeError, match=r"reduce_or needs bool or integer"):
        lax.reduce_or(x, (0,))
    with pytest.raises(TypeError, match=r"reduce_sum needs integer, floating-point or complex operands, "
                                        r"got bool\[2\]; convert"):
        lax.reduce_sum(from_numpy(np.ones(2, bool)), (0,))
    with pytest.raises(TypeError, match="reduce_prod needs integer, floating-point or complex"):
        lax.reduce_prod(from_numpy(np.ones(2, bool)), (0,))


# ---- argmax / argmin ---------------------------------------------------------------------
SPECIAL = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, np.nan, np.inf, -np.inf])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(data=st.data())
def test_argmax_argmin_match_numpy(name, data):
    dtype = data.draw(st.sampled_from(FLOATS + INTS + BOOL))
    shape = data.draw(shapes(min_dims=1, max_dims=4))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    shape = tuple(max(d, 1) if i == axis % len(shape) else d for i, d in enumerate(shape))
    if dtype.kind == "f" or dtype == BF16:
        x = data.draw(st.one_of(arrays(dtype, shape, elements=SPECIAL),
                                arrays(dtype, shape, allow_nan=True, allow_inf=True)))
    else:
        x = data.draw(arrays(dtype, shape, min_value=0, max_value=3))  # many ties
    index_dtype = data.draw(st.sampled_from([np.int32, np.int16, np.uint8]))
    out = getattr(lax, name)(from_numpy(x), axis, index_dtype)
    ref_x = x.astype(np.float32) if dtype == BF16 else x
    expected = getattr(np, name)(ref_x, axis=axis).astype(index_dtype)
    assert_close(out, expected, dtype=index_dtype)


def test_argmax_nan_and_ties_follow_numpy():
    x = from_numpy(np.array([[1.0, 3.0, 3.0, np.nan, np.nan], [np.inf, 0.0, np.inf, 0, 1]],
                            np.float32))
    assert lax.argmax(x, 1, np.int32).tolist() == [3, 0]
    assert lax.argmin(x, 1, np.int32).tolist() == [3, 1]
    assert lax.argmax(x, -2, np.int32).tolist() == [1, 0, 1, 0, 0]


def test_argmax_index_dtype_and_x64(x64):
    x = from_numpy(np.arange(6.0).reshape(2, 3))
    out = lax.argmax(x, 0, np.int64)
    assert out.dtype == np.int64 and out.tolist() == [1, 1, 1]


def test_argmax_int64_index_narrows_with_a_warning():
    x = from_numpy(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    with pytest.warns(X64Warning):
        out = lax.argmax(x, 1, np.int64)
    assert out.dtype == np.int32 and out.tolist() == [2, 2]


def test_argmax_errors():
    with pytest.raises(ValueError, match=r"argmax: axis 1 of f32\[3,0\] is empty"):
        lax.argmax(from_numpy(np.ones((3, 0), np.float32)), 1, np.int32)
    with pytest.raises(ValueError, match=r"argmin: axis 0 of f32\[0\] is empty"):
        lax.argmin(from_numpy(np.ones((0,), np.float32)), -1, np.int32)
    x = from_numpy(np.ones((3, 4), np.float32))
    with pytest.raises(TypeError, match="index_dtype must be an integer dtype, got float32"):
        lax.argmax(x, 0, np.float32)
    with pytest.raises(ValueError, match=r"axis 2 is out of bounds for f32\[3,4\]"):
        lax.argmax(x, 2, np.int32)
    with pytest.raises(ValueError, match="0-d operand"):
        lax.argmin(from_numpy(np.float32(1)), 0, np.int32)


# ---- cumulative reductions ---------------------------------------------------------------
def _along(fn, x, axis, reverse):
    if reverse:
        return np.flip(fn(np.flip(x, axis), axis), axis)
    return fn(x, axis)


CUMULATIVE = [
    ("cumsum", lambda x, a: np.cumsum(x, axis=a)),
    ("cumprod", lambda x, a: np.cumprod(x, axis=a)),
    ("cummax", lambda x, a: np.maximum.accumulate(x, axis=a)),
    ("cummin", lambda x, a: np.minimum.accumulate(x, axis=a)),
]


@pytest.mark.parametrize("name,ref", CUMULATIVE, ids=[c[0] for c in CUMULATIVE])
@given(data=st.data())
def test_cumulative_match_numpy(name, ref, data):
    dtype = data.draw(st.sampled_from(FLOATS + INTS))
    shape = data.draw(shapes(min_dims=1, max_dims=3))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    reverse = data.draw(st.booleans())
    floating = dtype.kind == "f" or dtype == BF16
    rng = dict(min_value=-2, max_value=2) if name == "cumprod" else {}
    x = data.draw(arrays(dtype, shape, allow_nan=floating, allow_inf=floating, **rng))
    out = getattr(lax, name)(from_numpy(x), axis, reverse)
    with np.errstate(all="ignore"):
        if not floating:
            assert_close(out, _along(ref, _wide(x), axis, reverse).astype(dtype), dtype=dtype)
        elif name == "cumsum":
            _assert_sum_close(out, _along(ref, _f64(x), axis, reverse),
                              _along(ref, np.abs(_f64(x)), axis, reverse), dtype)
        else:
            exact = dict(rtol=0, atol=0) if name in ("cummax", "cummin") else {}
            expected = _along(ref, _f64(x), axis, reverse).astype(dtype)
            assert_close(out, expected, dtype=dtype, **exact)


def _ref_cumlogsumexp(x, axis):
    """float64, shifted by the running maximum at each position."""
    x = np.moveaxis(x, axis, -1)
    out = np.empty_like(x)
    for i in range(x.shape[-1]):
        prefix = x[..., : i + 1]
        m = np.max(prefix, axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        out[..., i] = np.log(np.sum(np.exp(prefix - m), axis=-1)) + m[..., 0]
    return np.moveaxis(out, -1, axis)


@given(data=st.data())
def test_cumlogsumexp_matches_a_float64_reference(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(shapes(min_dims=1, max_dims=3))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    reverse = data.draw(st.booleans())
    x = data.draw(arrays(dtype, shape, allow_nan=True, allow_inf=True))
    out = lax.cumlogsumexp(from_numpy(x), axis, reverse)
    with np.errstate(all="ignore"):
        expected = _along(_ref_cumlogsumexp, _f64(x), axis, reverse).astype(dtype)
    assert_close(out, expected, dtype=dtype)


def test_cumlogsumexp_is_stable():
    x = from_numpy(np.array([1000.0, 1000.0, -np.inf, 1000.0], np.float32))
    expected = 1000.0 + np.log([1.0, 2.0, 2.0, 3.0])
    assert_close(lax.cumlogsumexp(x), expected.astype(np.float32))
    ninf = from_numpy(np.array([-np.inf, -np.inf, 0.0], np.float32))
    assert_close(lax.cumlogsumexp(ninf), np.array([-np.inf, -np.inf, 0.0], np.float32))
    assert_close(lax.cumlogsumexp(ninf, reverse=True), np.zeros(3, np.float32))
    h = from_numpy(np.array([20.0, 20.0], np.float16))  # exp(20) overflows float16
    assert_close(lax.cumlogsumexp(h), np.array([20.0, 20.0 + np.log(2.0)], np.float16),
                 dtype=np.float16)


def test_cumulative_nan_propagates():
    x = from_numpy(np.array([1.0, np.nan, 3.0, 0.0], np.float32))
    assert_close(lax.cummax(x), np.array([1.0, np.nan, np.nan, np.nan], np.float32))
    assert_close(lax.cummin(x, reverse=True), np.array([np.nan, np.nan, 0.0, 0.0], np.float32))


def test_cumulative_errors():
    x = from_numpy(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"cumsum: axis 2 is out of bounds for f32\[3,4\]"):
        lax.cumsum(x, 2)
    with pytest.raises(ValueError, match="0-d operand"):
        lax.cummax(from_numpy(np.float32(1.0)))
    with pytest.raises(TypeError, match=r"cumlogsumexp needs floating-point operands, "
                                        r"got i32\[3\]"):
        lax.cumlogsumexp(from_numpy(np.ones(3, np.int32)))
    with pytest.raises(TypeError, match=r"cumsum needs integer, floating-point or complex.*bool\[3\]"):
        lax.cumsum(from_numpy(np.ones(3, bool)))
    with pytest.raises(ValueError, match="reverse must be a bool"):
        lax.cumsum_p.bind(x, axis=0, reverse=1)


# ---- tracing -----------------------------------------------------------------------------
def test_primitive_properties():
    assert lax.reduce_sum_p.linear and lax.cumsum_p.linear
    assert not lax.reduce_max_p.linear and not lax.cumprod_p.linear
    assert lax.reduce_sum_p.kind == "reduction"


@settings(max_examples=10)
@given(x=arrays(np.float32, shapes(min_dims=2, max_dims=3, min_side=1), allow_nan=True))
def test_traced_jaxpr_evaluates_like_eager(x):
    def f(x):
        return (lax.reduce_sum(x, (0, -1)), lax.reduce_max(x, (1,)), lax.argmin(x, -1, np.int32),
                lax.cumsum(x, 1, reverse=True), lax.cumlogsumexp(x, 0), lax.cummax(x, -1))

    closed = mt.make_jaxpr(f)(x)
    text = str(closed)
    for fragment in ("reduce_sum[axes=(0, ", "reduce_max[axes=(1,)]", "index_dtype=int32",
                     "cumsum[axis=1, reverse=True]", "cumlogsumexp[axis=0, reverse=False]"):
        assert fragment in text
    eager = f(from_numpy(x))
    traced = closed(from_numpy(x))
    assert len(traced) == len(eager)
    for a, b in zip(traced, eager, strict=True):
        assert_close(a, np.asarray(b), dtype=b.dtype, rtol=0, atol=0)
