"""dot_general against np.einsum for drawn dimension numbers (ranks 0-4, size-0 dims,
float32/float16/bfloat16/int32), preferred_element_type, bool and integer wrap-around, the
dot and batch_matmul binders, error messages, and tracing."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
from mytorch import lax
from mytorch.core.array import from_numpy
from tests.strategies import arrays, assert_close

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, I32 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int32)
# absolute slack: a subnormal of the output dtype, or float32 products that round to 0
_TINY = {F16: 6e-8, BF16: 1e-38, F32: 1e-42}
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _einsum_spec(lhs_ndim, rhs_ndim, dimension_numbers):
    """The einsum subscripts of a dot_general, in XLA's output order."""
    (lc, rc), (lb, rb) = dimension_numbers
    letters = iter(LETTERS)
    lhs = [next(letters) for _ in range(lhs_ndim)]
    rhs = [None] * rhs_ndim
    for l, r in zip(lc + lb, rc + rb, strict=True):
        rhs[r] = lhs[l]
    rhs = [c if c is not None else next(letters) for c in rhs]
    lfree = [lhs[i] for i in range(lhs_ndim) if i not in lc + lb]
    rfree = [rhs[i] for i in range(rhs_ndim) if i not in rc + rb]
    out = [lhs[i] for i in lb] + lfree + rfree
    return f"{''.join(lhs)},{''.join(rhs)}->{''.join(out)}"


def _reference(lhs, rhs, dimension_numbers):
    """(value, sum of |products|) in float64 (int64 for integers)."""
    spec = _einsum_spec(lhs.ndim, rhs.ndim, dimension_numbers)
    wide = np.int64 if lhs.dtype.kind in "iub" else np.float64
    a, b = lhs.astype(wide), rhs.astype(wide)
    return np.einsum(spec, a, b), np.einsum(spec, np.abs(a), np.abs(b))


def _assert_contraction_close(out, ref, abs_ref, dtype):
    """Within one rounding to `dtype` plus float32 accumulation error."""
    out = np.asarray(out)
    assert out.dtype == dtype and out.shape == ref.shape, (out.dtype, out.shape, ref.shape)
    if dtype.kind in "iub":
        np.testing.assert_array_equal(out, ref.astype(dtype))
        return
    got = out.astype(np.float64)
    info = ml_dtypes.finfo(dtype)
    bound = 2 * float(info.eps) * np.abs(ref) + 1e-5 * abs_ref + _TINY[dtype]
    assert (np.abs(got - ref) <= bound).all(), (got, ref)


@st.composite
def dot_cases(draw, dtypes=(F32, F16, BF16, I32)):
    lrank, rrank = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    nb = draw(st.integers(0, min(lrank, rrank)))
    nc = draw(st.integers(0, min(lrank, rrank) - nb))
    lperm = draw(st.permutations(range(lrank)))
    rperm = draw(st.permutations(range(rrank)))
    lb, lc = tuple(lperm[:nb]), tuple(lperm[nb:nb + nc])
    rb, rc = tuple(rperm[:nb]), tuple(rperm[nb:nb + nc])
    side = st.integers(0, 3)
    lshape = [draw(side) for _ in range(lrank)]
    rshape = [draw(side) for _ in range(rrank)]
    for l, r in zip(lb + lc, rb + rc, strict=True):
        rshape[r] = lshape[l]
    dtype = draw(st.sampled_from(dtypes))
    lo, hi = (-8, 8) if dtype.kind == "i" else (-10, 10)
    lhs = draw(arrays(dtype, tuple(lshape), min_value=lo, max_value=hi))
    rhs = draw(arrays(dtype, tuple(rshape), min_value=lo, max_value=hi))
    return lhs, rhs, ((lc, rc), (lb, rb))


@given(dot_cases())
def test_dot_general_matches_einsum(case):
    lhs, rhs, dnums = case
    out = lax.dot_general(from_numpy(lhs), from_numpy(rhs), dnums)
    ref, abs_ref = _reference(lhs, rhs, dnums)
    _assert_contraction_close(out, ref, abs_ref, lhs.dtype)
    assert not out.weak_type


@settings(max_examples=15)
@given(dot_cases(dtypes=(F16, BF16, I32)), st.sampled_from([F32, np.dtype(np.int32)]))
def test_preferred_element_type(case, pet):
    lhs, rhs, dnums = case
    if lhs.dtype.kind == "f" or lhs.dtype == BF16:
        pet = F32
    out = lax.dot_general(from_numpy(lhs), from_numpy(rhs), dnums, preferred_element_type=pet)
    ref, abs_ref = _reference(lhs, rhs, dnums)
    _assert_contraction_close(out, ref, abs_ref, pet)


@settings(max_examples=15)
@given(dot_cases(dtypes=(np.dtype(np.bool_),)))
def test_bool_dot_is_or_of_ands(case):
    lhs, rhs, dnums = case
    out = lax.dot_general(from_numpy(lhs), from_numpy(rhs), dnums)
    ref, _ = _reference(lhs, rhs, dnums)
    assert_close(out, ref > 0, dtype=np.bool_)


def test_integer_products_wrap_like_xla():
    rng = np.random.default_rng(0)
    # int8: every result wraps modulo 2**8
    a = rng.integers(-128, 128, (5, 7)).astype(np.int8)
    b = rng.integers(-128, 128, (7, 3)).astype(np.int8)
    out = lax.dot(from_numpy(a), from_numpy(b))
    assert_close(out, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int8), np.int8)
    # int32 products too large for exact float64 sums take the int64 path
    a = rng.integers(-2**30, 2**30, (4, 64)).astype(np.int32)
    b = rng.integers(-2**30, 2**30, (64, 5)).astype(np.int32)
    out = lax.dot(from_numpy(a), from_numpy(b))
    assert_close(out, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), np.int32)
    # uint32 wraps modulo 2**32
    a = rng.integers(0, 2**32, (3, 9), dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, (9, 2), dtype=np.uint64).astype(np.uint32)
    ref = (a.astype(np.uint64) @ b.astype(np.uint64)).astype(np.uint32)
    assert_close(lax.dot(from_numpy(a), from_numpy(b)), ref, np.uint32)


def test_half_precision_accumulates_in_float32():
    # 4096 ones: a float16 running sum would stop at 2048
    a = np.ones((1, 4096), np.float16)
    out = lax.dot(from_numpy(a), from_numpy(a.T))
    assert_close(out, np.array([[4096.0]]), np.float16, rtol=0, atol=0)
    b = np.ones((2, 512), BF16)
    out = lax.dot(from_numpy(b), from_numpy(b.T))
    assert_close(out, np.full((2, 2), 512.0), BF16, rtol=0, atol=0)


@pytest.mark.parametrize("dnums", [
    (((1,), (0,)), ((), ())),  # a @ b
    (((0,), (0,)), ((), ())),  # a.T @ b
    (((1,), (1,)), ((), ())),  # a @ b.T
    (((0,), (1,)), ((), ())),  # a.T @ b.T
])
def test_transposed_layouts_of_large_matrices(dnums):
    rng = np.random.default_rng(1)
    (lc, rc), _ = dnums
    a = rng.standard_normal((96, 80) if lc == (1,) else (80, 96)).astype(np.float32)
    b = rng.standard_normal((80, 64) if rc == (0,) else (64, 80)).astype(np.float32)
    out = lax.dot_general(from_numpy(a), from_numpy(b), dnums)
    ref, abs_ref = _reference(a, b, dnums)
    _assert_contraction_close(out, ref, abs_ref, F32)


def test_batch_dims_in_the_middle_and_several_contractions():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)
    b = rng.standard_normal((6, 5, 7, 4)).astype(np.float32)
    dnums = (((3,), (0,)), ((1,), (3,)))
    out = lax.dot_general(from_numpy(a), from_numpy(b), dnums)
    assert out.shape == (4, 3, 5, 5, 7)
    ref, abs_ref = _reference(a, b, dnums)
    _assert_contraction_close(out, ref, abs_ref, F32)
    dnums = (((3, 2), (0, 1)), ((1,), (3,)))
    out = lax.dot_general(from_numpy(a), from_numpy(b), dnums)
    ref, abs_ref = _reference(a, b, dnums)
    assert out.shape == (4, 3, 7)
    _assert_contraction_close(out, ref, abs_ref, F32)


# ---- binders -----------------------------------------------------------------------------
@pytest.mark.parametrize("lshape,rshape", [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)),
                                           ((3, 4), (4, 5)), ((0, 4), (4, 2))])
def test_dot_matches_numpy(lshape, rshape):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(lshape).astype(np.float32)
    b = rng.standard_normal(rshape).astype(np.float32)
    assert_close(lax.dot(from_numpy(a), from_numpy(b)), np.dot(a, b), np.float32, rtol=1e-5)


def test_batch_matmul_matches_numpy():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    assert_close(lax.batch_matmul(from_numpy(a), from_numpy(b)), a @ b, np.float32, rtol=1e-5)


def test_scalars_and_weak_types():
    out = lax.dot_general(2.0, 3.0, (((), ()), ((), ())))
    assert out.shape == () and out.weak_type and float(out) == 6.0
    x = from_numpy(np.arange(3, dtype=np.float32))
    out = lax.dot_general(x, 2.0, (((), ()), ((), ())))
    assert_close(out, np.arange(3) * 2.0, np.float32)
    assert not out.weak_type


# ---- errors ------------------------------------------------------------------------------
def _f32(*shape):
    return from_numpy(np.ones(shape, np.float32))


@pytest.mark.parametrize("lhs,rhs,dnums,err,fragment", [
    ((3, 4), (5, 2), (((1,), (0,)), ((), ())), TypeError,
     r"dot_general cannot contract f32\[3,4\] dim 1 \(size 4\) with f32\[5,2\] dim 0 "
     r"\(size 5\)"),
    ((2, 3, 4), (5, 4, 3), (((2,), (1,)), ((0,), (0,))), TypeError,
     r"cannot batch f32\[2,3,4\] dim 0 \(size 2\) with f32\[5,4,3\] dim 0 \(size 5\)"),
    # the classes are JAX's
    ((3, 4), (4, 4), (((1, 1), (0, 1)), ((), ())), TypeError, r"repeat a dimension"),
    ((3, 4), (4, 5), (((2,), (0,)), ((), ())), TypeError,
     r"lhs contracting dimension 2 is out of range for f32\[3,4\]"),
    ((3, 4), (4, 5), (((-1,), (0,)), ((), ())), TypeError, r"out of range"),
    ((3, 4), (4, 5), (((1,), (0, 1)), ((), ())), TypeError,
     r"as many lhs as rhs contracting dimensions"),
    ((3, 4), (3, 4), (((0,), (0,)), ((0,), (0,))), TypeError,
     r"both a contracting and a batch dimension"),
    ((3, 4), (4, 5), ((1,), (0,), ()), TypeError, r"dimension_numbers must be"),
    ((3, 4), (4, 5), (((1.5,), (0,)), ((), ())), TypeError, r"sequence of ints"),
])
def test_dot_general_errors(lhs, rhs, dnums, err, fragment):
    with pytest.raises(err, match=fragment):
        lax.dot_general(_f32(*lhs), _f32(*rhs), dnums)


def test_dtype_errors():
    i = from_numpy(np.ones((4, 5), np.int32))
    with pytest.raises(TypeError, match=r"one dtype, got f32\[3,4\] and i32\[4,5\]"):
        lax.dot(_f32(3, 4), i)
    out = lax.dot(_f32(3, 4), i, preferred_element_type=np.float32)  # mixed: allowed
    assert_close(out, np.full((3, 5), 4.0), np.float32)
    f16 = from_numpy(np.ones((3, 4), np.float16))
    with pytest.raises(TypeError, match="narrower"):
        lax.dot(_f32(3, 4), _f32(4, 5), preferred_element_type=np.float16)
    with pytest.raises(TypeError, match="floating-point operands need"):
        lax.dot(f16, from_numpy(np.ones((4, 2), np.float16)), preferred_element_type=np.int32)


def test_binder_errors():
    with pytest.raises(TypeError, match=r"dot needs 1-D or 2-D operands"):
        lax.dot(_f32(2, 3, 4), _f32(4))
    with pytest.raises(TypeError, match=r"batch_matmul needs equal batch dims"):
        lax.batch_matmul(_f32(2, 3, 4), _f32(3, 4, 5))
    with pytest.raises(TypeError, match=r"batch_matmul needs operands of one rank"):
        lax.batch_matmul(_f32(3, 4), _f32(2, 4, 5))


# ---- tracing -----------------------------------------------------------------------------
def test_traced_dot_general_evaluates_like_eager():
    rng = np.random.default_rng(5)
    a = from_numpy(rng.standard_normal((2, 3, 4)).astype(np.float32))
    b = from_numpy(rng.standard_normal((2, 4, 5)).astype(np.float32))
    v = from_numpy(rng.standard_normal((5,)).astype(np.float32))

    def f(a, b, v):
        return lax.dot_general(lax.batch_matmul(a, b), v, (((2,), (0,)), ((), ())))

    closed = mt.make_jaxpr(f)(a, b, v)
    assert "dot_general" in str(closed)
    assert_close(closed(a, b, v)[0], np.asarray(f(a, b, v)), np.float32, rtol=0, atol=0)
    half = from_numpy(np.ones((3, 4), np.float16))
    other = from_numpy(np.ones((4, 2), np.float16))
    closed = mt.make_jaxpr(lambda x, y: lax.dot(x, y, preferred_element_type=np.float32))(
        half, other)
    assert closed.jaxpr.outvars[0].aval.dtype == np.float32
    assert_close(closed(half, other)[0], np.full((3, 2), 4.0), np.float32)
