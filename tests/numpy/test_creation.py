"""mytorch.numpy array creation and dtype utilities against NumPy."""

import math
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.errors import ConcretizationTypeError, X64Warning
from mytorch.numpy import creation
from tests.strategies import arrays, assert_close, shapes

# NumPy references warn about their own overflows (the kernels are checked in check())
pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")

BOOL = np.dtype(np.bool_)
I8, U8, I32, I64 = (np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.int64))
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [BOOL, I8, U8, I32, F16, BF16, F32]


def a(values, dtype=None):
    return mnp.asarray(np.asarray(values, dtype=dtype))


# ---- array / asarray -------------------------------------------------------------------------
def test_array_from_data():
    assert_close(mnp.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]]), dtype=I32)
    assert_close(mnp.array([1.5, 2.0]), [1.5, 2.0], dtype=F32)
    assert_close(mnp.array([True, False]), [True, False], dtype=BOOL)
    assert_close(mnp.array(np.arange(3.0)), np.arange(3.0), dtype=F32)  # float64 narrows
    assert_close(mnp.array([1, 2], dtype=F16), [1, 2], dtype=F16)
    assert_close(mnp.array(3.5, ndmin=2), [[3.5]], dtype=F32)
    assert mnp.array(np.zeros((2, 3)), ndmin=4).shape == (1, 1, 2, 3)
    x = a([1.0, 2.0])
    assert mnp.array(x, copy=False) is x
    assert_close(mnp.array(x, dtype=I32), [1, 2], dtype=I32)
    assert_close(mnp.array([a(1.0), a(2.0)]), [1.0, 2.0], dtype=F32)  # arrays in lists


def test_scalars_are_weak():
    s = mnp.array(1.0)
    assert s.dtype == F32 and s.weak_type and s.shape == ()
    assert mnp.asarray(3).weak_type and mnp.asarray(3).dtype == I32
    assert not mnp.asarray(True).weak_type
    assert not mnp.asarray(np.float32(1.0)).weak_type
    assert not mnp.asarray(2.0, dtype=F32).weak_type
    assert not mnp.array([1.0]).weak_type


def test_asarray_and_copy():
    x = a([1, 2, 3], I8)
    assert mnp.asarray(x) is x
    assert mnp.asarray(x, dtype=I8) is x
    assert_close(mnp.asarray(x, dtype=F32), [1, 2, 3], dtype=F32)
    assert_close(mnp.copy(x), [1, 2, 3], dtype=I8)
    assert_close(mnp.copy([1.0, 2.0]), [1.0, 2.0], dtype=F32)
    with pytest.warns(X64Warning):
        assert mnp.asarray([1.0], dtype=np.float64).dtype == F32
    with pytest.raises(TypeError, match="cannot convert"):
        mnp.asarray({"a": 1})


# ---- foreign array-likes (issue 13, item 9) --------------------------------------------------
class _WithArray:
    """A torch-tensor-like: only `__array__`."""

    def __init__(self, value):
        self.value = value

    def __array__(self, dtype=None, copy=None):
        return self.value if dtype is None else self.value.astype(dtype)


class _WithInterface:
    """Only the NumPy array interface (as many C extensions expose)."""

    def __init__(self, value):
        self.value = value
        self.__array_interface__ = value.__array_interface__


class _WithDLPack:
    """Only DLPack (a tensor from another framework); counts the exports."""

    def __init__(self, value):
        self.value, self.exports = value, 0

    def __dlpack__(self, **kwargs):
        self.exports += 1
        return self.value.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.value.__dlpack_device__()


# NumPy dtypes that every foreign protocol carries (bfloat16 only through __array__)
FOREIGN_DTYPES = [BOOL, I8, U8, I32, F16, F32]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_asarray_reads_foreign_array_likes(data):
    dt = data.draw(st.sampled_from(FOREIGN_DTYPES), label="dtype")
    value = data.draw(arrays(dt, shapes(max_dims=3)), label="value")
    kind = data.draw(st.sampled_from(["__array__", "interface", "memoryview", "dlpack"]))
    wrapped = {"__array__": _WithArray, "interface": _WithInterface,
               "memoryview": memoryview, "dlpack": _WithDLPack}[kind](value)
    out = mnp.asarray(wrapped)
    assert isinstance(out, mt.Array) and not out.weak_type
    assert_close(out, value, dtype=dt)  # reference: the NumPy array itself, exactly
    assert_close(mnp.array(wrapped, dtype=F32), value.astype(F32), dtype=F32)
    if kind == "dlpack":
        assert wrapped.exports == 2  # read through DLPack, not a fallback
    assert_close(mt.jit(lambda x: x)(mnp.asarray(wrapped)), value, dtype=dt)


def test_asarray_foreign_edge_cases():
    # bfloat16 through __array__; float64 narrows silently as NumPy arrays do
    assert_close(mnp.asarray(_WithArray(np.ones(2, BF16))), [1, 1], dtype=BF16)
    assert_close(mnp.asarray(_WithArray(np.arange(3.0))), [0, 1, 2], dtype=F32)
    # JAX 0.10: asarray(memoryview(b"ab")) is uint8 [97, 98]
    assert_close(mnp.asarray(memoryview(b"ab")), [97, 98], dtype=U8)
    assert_close(mnp.asarray(bytearray(b"\x01\x02")), [1, 2], dtype=U8)
    # JAX 0.10: asarray(range(2, 7, 2)) is int32 [2, 4, 6]; range(0) is int32 (empty)
    assert_close(mnp.asarray(range(2, 7, 2)), [2, 4, 6], dtype=I32)
    assert_close(mnp.array(range(3), dtype=F16), [0, 1, 2], dtype=F16)
    assert mnp.asarray(range(0)).shape == (0,)
    assert_close(mnp.asarray([_WithArray(np.ones(2, I8)), np.zeros(2, I8)]).shape, (2, 2))
    with pytest.raises(TypeError, match="cannot convert object"):
        mnp.asarray(object())


def test_dlpack_both_ways():
    x = mnp.arange(6.0).reshape(2, 3)
    y = np.from_dlpack(x)  # zero-copy and read-only: arrays are immutable
    assert_close(y, np.arange(6.0).reshape(2, 3), dtype=F32)
    assert np.shares_memory(y, np.asarray(x)) and not y.flags.writeable
    assert np.from_dlpack(x, copy=True).flags.writeable
    assert x.__dlpack_device__() == (1, 0)  # kDLCPU
    for v in (np.arange(4, dtype=np.int8), np.ones((2, 0), np.float16), np.float32(2.5)):
        out = mnp.from_dlpack(np.asarray(v))
        assert_close(out, v, dtype=np.asarray(v).dtype)
    assert_close(mt.dlpack.from_dlpack(np.arange(3.0)), [0, 1, 2], dtype=F32)
    assert mnp.from_dlpack(x) is x
    assert_close(mnp.from_dlpack(_WithDLPack(np.arange(3, dtype=U8))), [0, 1, 2], dtype=U8)
    with pytest.raises(TypeError, match="from_dlpack: list has no __dlpack__"):
        mnp.from_dlpack([1, 2])


def test_array_of_weak_arrays_is_strong():
    # JAX 0.10: jnp.array([w]) and jnp.array([w, 1.0]) are strong float32 for a weak w;
    # jnp.array(w) stays weak; jnp.array([wi, 1]) is strong int32
    w, wi = mnp.asarray(2.0), mnp.asarray(3)
    assert w.weak_type and mnp.array(w).weak_type
    for out, dt in ((mnp.array([w]), F32), (mnp.array([w, 1.0]), F32),
                    (mnp.array((w, w)), F32), (mnp.array([[w], [w]]), F32),
                    (mnp.array([wi, 1]), I32), (mnp.array([w, wi]), F32)):
        assert out.dtype == dt and not out.weak_type
    assert (mnp.array([w]) * np.float16(1)).dtype == F32  # strong: no longer adapts
    assert mt.jit(lambda v: mnp.array([v, v]))(2.0).weak_type is False
    # JAX 0.10: jnp.array([jnp.int8(1), 1000]) raises OverflowError
    with pytest.raises(OverflowError, match="array: Python integer 1000 out of bounds"):
        mnp.array([mnp.int8(1), 1000])


# ---- filled arrays ---------------------------------------------------------------------------
@settings(max_examples=20)
@given(shape=shapes(max_dims=3), dtype=st.sampled_from(DTYPES + [None]),
       as_int=st.booleans())
def test_zeros_ones_empty_full(shape, dtype, as_int):
    spec = shape[0] if as_int and len(shape) == 1 else shape
    expected_dtype = F32 if dtype is None else dtype
    for mfn, value in ((mnp.zeros, 0), (mnp.ones, 1), (mnp.empty, 0)):
        out = mfn(spec, dtype)
        assert_close(out, np.full(shape, value, expected_dtype), dtype=expected_dtype)
        assert not out.weak_type
    out = mnp.full(spec, 7, dtype)
    assert_close(out, np.full(shape, 7).astype(expected_dtype if dtype else I32),
                 dtype=expected_dtype if dtype else I32)
    assert out.weak_type == (dtype is None)  # a Python scalar fill is weak, as in JAX


def test_full_with_array_fill_and_dtypes():
    assert_close(mnp.full((2, 3), a([1, 2, 3], I8)), np.full((2, 3), [1, 2, 3]), dtype=I8)
    assert_close(mnp.full((2,), np.float16(1.5)), [1.5, 1.5], dtype=F16)
    assert_close(mnp.full((2,), 1.5, dtype=I32), [1, 1], dtype=I32)
    assert_close(mnp.full((), True), True, dtype=BOOL)
    assert_close(mnp.full((2,), 2.7, dtype=U8), np.full((2,), 2.7, dtype=np.uint8), dtype=U8)
    assert_close(mnp.full((2,), 300, dtype=U8), [44, 44], dtype=U8)  # wraps, as in JAX
    assert_close(mnp.full((2,), 2**31), [-(2**31)] * 2, dtype=I32)  # JAX 0.10 too
    with pytest.raises(ValueError, match=r"full: cannot broadcast i32\[3\] to shape \(2,\)"):
        mnp.full((2,), a([1, 2, 3]))


def test_shape_errors():
    with pytest.raises(TypeError, match=r"zeros: negative dimensions are not allowed"):
        mnp.zeros((2, -1))
    with pytest.raises(TypeError, match=r"ones: shape must be an int or a tuple of ints"):
        mnp.ones((2.5,))
    with pytest.raises(TypeError, match="negative"):  # JAX's class
        mnp.zeros_like(a([1.0]), shape=(-2,))


@settings(max_examples=20)
@given(shape=shapes(max_dims=3), dtype=st.sampled_from(DTYPES),
       new_dtype=st.sampled_from(DTYPES + [None]), new_shape=st.none() | shapes(max_dims=2))
def test_like_functions(shape, dtype, new_dtype, new_shape):
    x = np.zeros(shape, dtype)
    out_dtype = dtype if new_dtype is None else new_dtype
    out_shape = shape if new_shape is None else new_shape
    for mfn, nfn in ((mnp.zeros_like, np.zeros_like), (mnp.ones_like, np.ones_like),
                     (mnp.empty_like, np.zeros_like)):
        out = mfn(a(x), dtype=new_dtype, shape=new_shape)
        assert_close(out, nfn(x, dtype=out_dtype, shape=out_shape), dtype=out_dtype)
    out = mnp.full_like(a(x), 3, dtype=new_dtype, shape=new_shape)
    assert_close(out, np.full_like(x, 3, dtype=out_dtype, shape=out_shape), dtype=out_dtype)


def test_like_keeps_weak_type():
    w = mnp.asarray(2.0)
    assert mnp.zeros_like(w).weak_type and mnp.zeros_like(w).dtype == F32
    assert not mnp.ones_like(w, dtype=F32).weak_type
    assert_close(mnp.full_like(a([1, 2], I8), -7.5), np.full_like(np.zeros(2, np.int8), -7.5),
                 dtype=I8)
    assert_close(mnp.full_like(a([1, 2], I8), 300), [44, 44], dtype=I8)  # JAX: [44, 44]
    assert_close(mnp.full_like(a([[1, 2], [3, 4]], F16), a([1.0, 2.0])),
                 [[1.0, 2.0], [1.0, 2.0]], dtype=F16)
    assert_close(mnp.zeros_like([1, 2]), [0, 0], dtype=I32)


# ---- ranges ----------------------------------------------------------------------------------
@settings(max_examples=50)
@given(start=st.integers(-50, 50), stop=st.none() | st.integers(-50, 50),
       step=st.none() | st.integers(-7, 7).filter(lambda s: s != 0),
       dtype=st.sampled_from([None, I8, I32, F32, F16]))
def test_arange_ints(start, stop, step, dtype):
    if stop is None:
        step = None
    args = (start,) if stop is None else (start, stop) if step is None else (start, stop, step)
    out = mnp.arange(*args, dtype=dtype)
    expected = np.arange(*args, dtype=dtype)
    assert_close(out, expected.astype(dtype or I32), dtype=dtype or I32, rtol=0, atol=0)


@settings(max_examples=50)
@given(start=st.floats(-100, 100), length=st.floats(0, 100),
       step=st.floats(0.01, 10) | st.floats(-10, -0.01),
       dtype=st.sampled_from([None, F32, F16, BF16]))
def test_arange_floats(start, length, step, dtype):
    stop = start + math.copysign(length, step)
    out = mnp.arange(start, stop, step, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = np.arange(start, stop, step, dtype=dtype or F32)
    assert out.shape == expected.shape  # incl. NumPy's 1 element when the length underflows
    tol = dict(rtol=1e-5) if dtype in (None, F32) else {}
    assert_close(out, expected.astype(dtype or F32), dtype=dtype or F32, **tol)


def test_arange_examples_and_errors():
    assert_close(mnp.arange(5), np.arange(5), dtype=I32)
    assert_close(mnp.arange(2, 11, 3), np.arange(2, 11, 3), dtype=I32)
    assert_close(mnp.arange(10, 0, -3), np.arange(10, 0, -3), dtype=I32)
    assert_close(mnp.arange(0, 1, 0.25), np.arange(0, 1, 0.25), dtype=F32)
    assert_close(mnp.arange(3.0), [0.0, 1.0, 2.0], dtype=F32)
    assert_close(mnp.arange(np.int64(4)), [0, 1, 2, 3], dtype=I32)
    assert_close(mnp.arange(0.5, 5, 1.5, dtype=I32), np.arange(0.5, 5, 1.5, dtype=np.int32))
    assert mnp.arange(5, 2).shape == (0,)
    assert_close(mnp.arange(2, dtype=bool), [False, True], dtype=BOOL)
    with pytest.raises(ValueError, match="arange: step must not be zero"):
        mnp.arange(0, 5, 0)
    with pytest.raises(ConcretizationTypeError, match="arange: stop must be a static number"):
        mt.make_jaxpr(lambda n: mnp.arange(n))(a(3))


@settings(max_examples=40)
@given(start=st.floats(-100, 100), stop=st.floats(-100, 100), num=st.integers(0, 12),
       endpoint=st.booleans(), dtype=st.sampled_from([None, F32, F16, BF16]))
def test_linspace_scalars(start, stop, num, endpoint, dtype):
    out, step = mnp.linspace(start, stop, num, endpoint, retstep=True, dtype=dtype)
    expected, estep = np.linspace(start, stop, num, endpoint, retstep=True)
    od = dtype or F32
    assert_close(out, expected.astype(od), dtype=od, **(dict(atol=1e-4) if od == F32 else {}))
    assert_close(step, np.asarray(estep).astype(od), dtype=od)


@settings(max_examples=30)
@given(s1=shapes(max_dims=2, max_side=3), num=st.integers(0, 6), endpoint=st.booleans(),
       data=st.data())
def test_linspace_arrays_and_axis(s1, num, endpoint, data):
    s2 = data.draw(st.sampled_from([s1, s1[1:], ()]))
    start = data.draw(st.lists(st.floats(-10, 10), min_size=math.prod(s1),
                               max_size=math.prod(s1)))
    start = np.asarray(start, np.float32).reshape(s1)
    stop = np.full(s2, 3.0, np.float32)
    axis = data.draw(st.integers(-len(s1) - 1, len(s1)))
    out = mnp.linspace(a(start), a(stop), num, endpoint, axis=axis)
    expected = np.linspace(start, stop, num, endpoint, axis=axis)
    assert_close(out, expected.astype(F32), dtype=F32, atol=1e-5)


def test_linspace_details():
    assert_close(mnp.linspace(0, 1, 5), [0.0, 0.25, 0.5, 0.75, 1.0], dtype=F32)
    assert_close(mnp.linspace(0, 20, 11, dtype=I32), np.linspace(0, 20, 11, dtype=np.int32),
                 dtype=I32)
    assert_close(mnp.linspace(-5, 5, 7, dtype=I32), np.linspace(-5, 5, 7, dtype=np.int32),
                 dtype=I32)  # floors as NumPy 2
    assert mnp.linspace(a([1.0], F16), 2.0, 3).dtype == F16
    assert mnp.linspace(0, 1).shape == (50,)
    out, step = mnp.linspace(1.0, 2.0, 1, retstep=True)
    assert_close(out, [1.0], dtype=F32)
    assert math.isnan(float(step))
    with pytest.raises(ValueError, match="linspace: number of samples, -1, must be non-neg"):
        mnp.linspace(0, 1, -1)
    with pytest.raises(ValueError, match="linspace: axis 3 is out of bounds"):
        mnp.linspace(a([1.0, 2.0]), 3.0, 4, axis=3)


def test_logspace_and_geomspace():
    assert_close(mnp.logspace(0, 3, 4), np.logspace(0, 3, 4), dtype=F32)
    assert_close(mnp.logspace(0, 3, 4, base=2.0, endpoint=False),
                 np.logspace(0, 3, 4, base=2.0, endpoint=False), dtype=F32)
    base = np.array([2.0, 10.0], np.float32)
    assert_close(mnp.logspace(a([0.0, 1.0]), 2.0, 3, base=a(base), axis=1),
                 np.logspace([0.0, 1.0], 2.0, 3, base=base, axis=1), dtype=F32)
    assert_close(mnp.logspace(0, 2, 3, dtype=I32), np.logspace(0, 2, 3, dtype=np.int32))
    for args in [(1, 1000, 4), (-1, -1000, 4), (1000, 1, 5), (2, 64, 6, False)]:
        assert_close(mnp.geomspace(*args), np.geomspace(*args), dtype=F32)
    out = mnp.geomspace(3.0, 7.0, 5)
    assert float(out[0]) == 3.0 and float(out[-1]) == 7.0  # exact endpoints
    assert_close(mnp.geomspace(a([1.0, 2.0]), a([100.0, 32.0]), 3, axis=-1),
                 np.geomspace([1.0, 2.0], [100.0, 32.0], 3, axis=-1), dtype=F32)
    with pytest.raises(ValueError, match="geomspace: a geometric sequence cannot include zero"):
        mnp.geomspace(0, 10)


# ---- matrices --------------------------------------------------------------------------------
@settings(max_examples=30)
@given(n=st.integers(0, 5), m=st.none() | st.integers(0, 5), k=st.integers(-6, 6),
       dtype=st.sampled_from([None, BOOL, I8, F16, BF16, F32]))
def test_eye_tri(n, m, k, dtype):
    od = dtype or F32
    assert_close(mnp.eye(n, m, k, dtype), np.eye(n, m, k, dtype=od), dtype=od)
    assert_close(mnp.tri(n, m, k, dtype), np.tri(n, m, k, dtype=od), dtype=od)
    assert_close(mnp.identity(n, dtype), np.identity(n, dtype=od), dtype=od)


@settings(max_examples=30)
@given(shape=shapes(min_dims=1, max_dims=4), k=st.integers(-4, 4),
       dtype=st.sampled_from(DTYPES))
def test_tril_triu(shape, k, dtype):
    x = (np.arange(math.prod(shape)).reshape(shape) % 7 + 1).astype(dtype)
    assert_close(mnp.tril(a(x), k), np.tril(x, k), dtype=dtype)
    assert_close(mnp.triu(a(x), k), np.triu(x, k), dtype=dtype)


def test_tril_errors_and_weak():
    with pytest.raises(ValueError, match=r"tril: needs an array of rank >= 1, got f32\[\]"):
        mnp.tril(a(1.0, F32))
    assert mnp.triu(mnp.full((2, 2), 1.0)).weak_type


@settings(max_examples=30)
@given(sizes=st.lists(st.integers(0, 4), max_size=4), indexing=st.sampled_from(["xy", "ij"]),
       sparse=st.booleans(), dtype=st.sampled_from([I8, F32, BF16]))
def test_meshgrid(sizes, indexing, sparse, dtype):
    xs = [np.arange(n).astype(dtype) for n in sizes]
    out = mnp.meshgrid(*[a(x) for x in xs], indexing=indexing, sparse=sparse)
    expected = np.meshgrid(*xs, indexing=indexing, sparse=sparse)
    assert isinstance(out, tuple) and len(out) == len(expected)
    for o, e in zip(out, expected, strict=True):
        assert_close(o, e, dtype=dtype)


def test_meshgrid_flattens_and_errors():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for o, e in zip(mnp.meshgrid(a(x), a([1, 2])), np.meshgrid(x, [1, 2]), strict=True):
        assert_close(o, e.astype(o.dtype))
    with pytest.raises(ValueError, match="meshgrid: indexing must be 'xy' or 'ij'"):
        mnp.meshgrid(a([1.0]), indexing="yx")


@settings(max_examples=20)
@given(dims=shapes(max_dims=3, max_side=4), sparse=st.booleans(),
       dtype=st.sampled_from([None, I8, F32]))
def test_indices(dims, sparse, dtype):
    od = dtype or I32
    out = mnp.indices(dims, dtype=dtype, sparse=sparse)
    expected = np.indices(dims, dtype=od, sparse=sparse)
    if sparse:
        assert len(out) == len(expected)
        for o, e in zip(out, expected, strict=True):
            assert_close(o, e, dtype=od)
    else:
        assert_close(out, expected, dtype=od)


# ---- dtype utilities -------------------------------------------------------------------------
def test_dtype_and_info():
    assert mnp.dtype("float64") == F32 and mnp.dtype(float) == F32 and mnp.dtype(int) == I32
    assert mnp.dtype(np.int8) == I8 and mnp.dtype("bfloat16") == BF16
    assert mnp.dtype(a([1], U8)) == U8 and mnp.dtype(1.0) == F32
    assert float(mnp.finfo(mnp.float16).max) == 65504.0
    assert float(mnp.finfo(BF16).eps) == 2.0 ** -7 and mnp.finfo(BF16).bits == 16
    assert float(mnp.finfo(a([1.0])).eps) == float(np.finfo(np.float32).eps)
    assert mnp.iinfo(mnp.int8).max == 127 and mnp.iinfo(U8).min == 0
    assert mnp.iinfo(a([1], I32)).bits == 32
    with pytest.raises(ValueError, match="finfo: int32 is not a floating-point dtype"):
        mnp.finfo(I32)
    with pytest.raises(ValueError, match="iinfo: float32 is not an integer dtype"):
        mnp.iinfo(F32)


def test_x64_dtype_canonicalisation(x64):
    assert mnp.dtype("float64") == F64 and mnp.dtype(int) == I64
    assert mnp.zeros(2).dtype == F64
    assert mnp.arange(3).dtype == I64 and mnp.arange(1.5).dtype == F64
    assert_close(mnp.linspace(0, 1, 4), np.linspace(0, 1, 4), dtype=F64)
    assert_close(mnp.arange(0, 1, 0.1), np.arange(0, 1, 0.1), dtype=F64)


def test_issubdtype_can_cast_promote_types():
    assert mnp.issubdtype(BF16, mnp.floating) and mnp.issubdtype(BF16, mnp.inexact)
    assert not mnp.issubdtype(BF16, mnp.integer) and mnp.issubdtype(BF16, BF16)
    assert mnp.issubdtype(I8, mnp.signedinteger) and mnp.issubdtype(U8, mnp.unsignedinteger)
    assert mnp.issubdtype(F16, mnp.number) and not mnp.issubdtype(BOOL, mnp.number)
    assert mnp.issubdtype(BOOL, mnp.bool_) and mnp.issubdtype(a([1.0]).dtype, np.float32)
    assert mnp.can_cast(I8, I32) and not mnp.can_cast(F32, I32)
    assert mnp.can_cast(F32, I32, casting="unsafe") and mnp.can_cast(a([1], U8), I32)
    assert mnp.promote_types(I8, U8) == np.dtype(np.int16)
    assert mnp.promote_types(I32, F16) == F16  # the JAX lattice, not NumPy's float64
    assert mnp.promote_types(F16, BF16) == F32
    assert mnp.promote_types(np.int64, F32) == F32


def test_shape_queries():
    x = mnp.zeros((2, 3, 4))
    assert mnp.ndim(x) == 3 and mnp.shape(x) == (2, 3, 4) and mnp.size(x) == 24
    assert mnp.size(x, 1) == 3 and mnp.size(x, -1) == 4 and mnp.size(x, (0, 2)) == 8
    assert mnp.ndim([[1, 2]]) == 2 and mnp.shape([[1, 2]]) == (1, 2) and mnp.size(3.0) == 1
    with pytest.raises(ValueError, match=r"size: axis 3 is out of bounds for shape \(2, 3, 4\)"):
        mnp.size(x, 3)
    assert mnp.isscalar(1.0) and mnp.isscalar(np.float32(2)) and mnp.isscalar(mnp.asarray(1))
    assert not mnp.isscalar(x) and not mnp.isscalar([1])


# ---- tracing ---------------------------------------------------------------------------------
def test_zeros_traces_to_a_broadcast_of_a_literal():
    closed = mt.make_jaxpr(lambda x: mnp.add(x, mnp.zeros((300, 400))))(mnp.ones((300, 400)))
    assert not closed.consts
    text = str(closed)
    assert "broadcast_in_dim" in text
    closed = mt.make_jaxpr(lambda x: mnp.add(x, mnp.arange(1000)))(mnp.ones(1000, I32))
    assert not closed.consts and "iota" in str(closed)


TRACED = {
    "array": lambda x: mnp.array(x, ndmin=3), "asarray": lambda x: mnp.asarray(x, F16),
    "copy": mnp.copy,
    "zeros": lambda x: mnp.zeros((2, 3), I8), "ones": lambda x: mnp.ones(4),
    "full": lambda x: mnp.full((2, 3), x), "empty": lambda x: mnp.empty((2,)),
    "zeros_like": mnp.zeros_like, "ones_like": lambda x: mnp.ones_like(x, shape=(2, 2)),
    "full_like": lambda x: mnp.full_like(x, 5.0), "empty_like": mnp.empty_like,
    "arange": lambda x: mnp.arange(1, 10, 2.5), "linspace": lambda x: mnp.linspace(x, 10.0, 5),
    "logspace": lambda x: mnp.logspace(x, 2.0, 4), "geomspace": lambda x: mnp.geomspace(
        1.0, mnp.add(x, 100.0), 4),
    "eye": lambda x: mnp.eye(3, 4, 1), "identity": lambda x: mnp.identity(3, I32),
    "tri": lambda x: mnp.tri(3, 2, -1), "tril": lambda x: mnp.tril(mnp.full((3, 3), x)),
    "triu": lambda x: mnp.triu(mnp.full((2, 3, 3), x), 1),
    "meshgrid": lambda x: mnp.meshgrid(mnp.full((2,), x), mnp.arange(3)),
    "indices": lambda x: mnp.indices((2, 3)),
    "from_dlpack": lambda x: mnp.from_dlpack(np.arange(3.0)) * x,
    "astype": lambda x: mnp.astype(x, mnp.float16),
}
NOT_FUNCTIONS = {"number", "integer", "signedinteger", "unsignedinteger", "floating", "inexact",
                 "generic", "complexfloating"}
STATIC_ONLY = {"dtype", "isdtype", "finfo", "iinfo", "issubdtype", "can_cast", "promote_types",
               "isscalar", "ndim", "shape", "size", "iscomplexobj", "isrealobj"}


def test_every_creation_function_is_traced():
    assert set(creation.__all__) == set(TRACED) | NOT_FUNCTIONS | STATIC_ONLY


@pytest.mark.parametrize("name", sorted(TRACED))
def test_traced_equals_eager(name):
    fn = TRACED[name]
    x = mnp.asarray(np.float32(1.5))
    closed = mt.make_jaxpr(fn)(x)
    eager = fn(x)
    eager = eager if isinstance(eager, tuple) else (eager,)
    traced = closed(x)
    assert len(traced) == len(eager)
    for t, e in zip(traced, eager, strict=True):
        assert_close(t, np.asarray(e), dtype=e.dtype, rtol=0, atol=0)


def test_static_utilities_work_on_tracers():
    def f(x):
        assert mnp.shape(x) == (2, 3) and mnp.ndim(x) == 2 and mnp.size(x) == 6
        assert mnp.dtype(x) == F32 and mnp.issubdtype(x.dtype, mnp.floating)
        return x

    mt.make_jaxpr(f)(mnp.zeros((2, 3)))
