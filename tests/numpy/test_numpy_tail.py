"""The rest of NumPy's namespace a notebook reaches for: window functions, i0, unwrap,
polydiv, the named unique_* results, fromfunction, mask_indices, frombuffer/fromstring,
bitwise_count, matvec/vecmat, the conversion helpers, print options and the C-type scalar
names. Values against NumPy, derivatives against float64 finite differences, jit against
eager and vmap against a loop; and every public NumPy name mnp lacks is listed, with its
reason, in docs/numpy.md."""

import math
import pathlib
import re
import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.errors import ConcretizationTypeError
from tests.autodiff.fd import check_grads
from tests.strategies import arrays

WINDOWS = ["bartlett", "blackman", "hamming", "hanning"]


# ---- windows ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("M", [-2, 0, 1, 2, 3, 8, 51])
def test_windows_match_numpy(name, M):
    got = getattr(mnp, name)(M)
    assert got.dtype == np.float32 and got.shape == (max(M, 0),)
    np.testing.assert_allclose(got, getattr(np, name)(M), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", WINDOWS + ["kaiser"])
def test_windows_in_float64_with_x64(name, x64):
    args = (12, 4.5) if name == "kaiser" else (12,)
    got = getattr(mnp, name)(*args)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, getattr(np, name)(*args), rtol=1e-13, atol=1e-15)


@given(st.integers(-1, 40), st.floats(0, 40))
def test_kaiser_matches_numpy(M, beta):
    got = mnp.kaiser(M, beta)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.kaiser(M, beta), rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("M", [2, 5, 8])
def test_kaiser_derivative_in_beta(M, x64):
    check_grads(lambda b: mnp.kaiser(M, b), (np.array(3.7),), order=2)
    check_grads(lambda b: mnp.kaiser(M, b), (np.array(0.3),), order=1)


def test_kaiser_traced_beta_jit_and_vmap():
    betas = np.array([0.0, 1.5, 6.0, 14.0], np.float32)
    f = lambda b: mnp.kaiser(9, b)  # noqa: E731
    for b in betas:
        np.testing.assert_allclose(mt.jit(f)(b), f(b), rtol=1e-6)
    np.testing.assert_allclose(mt.vmap(f)(betas), np.stack([f(b) for b in betas]), rtol=1e-6)


def test_window_errors():
    with pytest.raises(ConcretizationTypeError, match="hanning: the window length M must be "
                                                      "static"):
        mt.jit(mnp.hanning)(4)
    with pytest.raises(TypeError, match="bartlett: the window length M must be an int"):
        mnp.bartlett(None)
    with pytest.raises(TypeError, match=r"kaiser: beta must be a real scalar, got f32\[2\]"):
        mnp.kaiser(4, np.ones(2, np.float32))


# ---- i0 ---------------------------------------------------------------------------------
def _i1_series(x):
    """I_1(x) in float64 from its power series (the reference for i0's derivative)."""
    x = np.asarray(x, np.float64)
    return sum((x / 2) ** (2 * k + 1) / (math.factorial(k) * math.factorial(k + 1))
               for k in range(80))


@given(arrays(np.float32, hnp.array_shapes(min_dims=0, max_dims=2, max_side=4),
              min_value=-60, max_value=60))
def test_i0_matches_numpy(x):
    got = mnp.i0(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_allclose(got, np.i0(x.astype(np.float64)), rtol=2e-5)


def test_i0_dtypes_and_errors():
    assert mnp.i0(np.arange(3)).dtype == np.float32
    assert mnp.i0(np.ones(2, np.float16)).dtype == np.float16
    with pytest.raises(TypeError, match=r"i0: complex values are not supported.*c64\[2\]"):
        mnp.i0(np.ones(2, np.complex64))


def test_i0_derivative_is_i1(x64):
    x = np.array([-31.0, -4.2, -0.7, 0.0, 0.3, 2.5, 12.0, 45.0])
    check_grads(mnp.i0, (x,), order=2, rtol=1e-6)
    g = mt.vmap(mt.grad(mnp.i0))(x)
    np.testing.assert_allclose(g, _i1_series(x), rtol=1e-12)


def test_i0_jit_and_vmap():
    x = np.linspace(-35, 35, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(mt.jit(mnp.i0)(x), mnp.i0(x), rtol=1e-6)
    np.testing.assert_allclose(mt.vmap(mnp.i0)(x), np.stack([mnp.i0(r) for r in x]), rtol=1e-6)


# ---- unwrap ------------------------------------------------------------------------------
@given(arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6),
              min_value=-20, max_value=20),
       st.integers(-3, 2), st.sampled_from([None, 1.0, 4.0]),
       st.sampled_from([2 * math.pi, math.pi, 5.0]))
def test_unwrap_matches_numpy(p, axis, discont, period):
    axis = axis % p.ndim
    got = mnp.unwrap(p, discont, axis, period=period)
    want = np.unwrap(p.astype(np.float64), discont, axis, period=period)
    assert got.dtype == np.float32 and got.shape == p.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-4)


def test_unwrap_ties_integers_and_errors():
    # a jump of exactly period/2 keeps its sign, as NumPy
    np.testing.assert_array_equal(mnp.unwrap(np.array([0.0, 2.0, 4.0, 6.0]), period=4.0),
                                  np.unwrap(np.array([0.0, 2.0, 4.0, 6.0]), period=4.0))
    got = mnp.unwrap(np.array([0, 5, 10]))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.unwrap(np.array([0, 5, 10])), rtol=1e-6)
    assert mnp.unwrap(np.zeros((2, 0)), axis=1).shape == (2, 0)
    with pytest.raises(TypeError, match="unwrap: complex input is not supported"):
        mnp.unwrap(np.ones(3, np.complex64))
    with pytest.raises(ValueError, match=r"unwrap: p must be at least 1-D, got f32\[\]"):
        mnp.unwrap(np.float32(1.0))
    with pytest.raises(mt.errors.AxisError, match="unwrap: axis 2"):
        mnp.unwrap(np.ones((2, 2)), axis=2)


def test_unwrap_derivatives(x64):
    rng = np.random.default_rng(1)
    p = rng.uniform(-12, 12, (3, 5))
    check_grads(lambda p: mnp.unwrap(p, axis=1), (p,), order=2)
    check_grads(lambda p, period: mnp.unwrap(p, period=period), (p, np.array(5.0)))


def test_unwrap_jit_and_vmap():
    p = np.random.default_rng(2).uniform(-12, 12, (4, 7)).astype(np.float32)
    f = lambda p, d: mnp.unwrap(p, discont=d)  # noqa: E731
    np.testing.assert_allclose(mt.jit(f)(p, 3.5), f(p, 3.5), rtol=1e-6)
    np.testing.assert_allclose(mt.vmap(f, (0, None))(p, 3.5),
                               np.stack([f(r, 3.5) for r in p]), rtol=1e-6)


# ---- polydiv -----------------------------------------------------------------------------
def _pad_left(r, n):
    return np.concatenate([np.zeros(n - len(r)), r])


@given(st.integers(1, 7), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_polydiv_matches_numpy(nu, nv, seed):
    rng = np.random.default_rng(seed)
    u = rng.uniform(-2, 2, nu).astype(np.float32)
    v = rng.uniform(-2, 2, nv).astype(np.float32)
    v[0] = np.sign(v[0]) * (0.5 + abs(v[0]))  # a leading coefficient away from 0
    q, r = mnp.polydiv(u, v)
    q_ref, r_ref = np.polydiv(u.astype(np.float64), v.astype(np.float64))
    assert q.dtype == r.dtype == np.float32 and r.shape == (nu,)
    np.testing.assert_allclose(q, q_ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(r, _pad_left(r_ref, nu), rtol=1e-4, atol=1e-4)
    # u = q v + r, at a few points
    t = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(np.polyval(q, t) * np.polyval(v, t) + np.polyval(r, t),
                               np.polyval(u, t), rtol=1e-4, atol=1e-4)


def test_polydiv_trimmed_like_numpy_and_complex():
    u, v = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 1.0])
    q, r = mnp.polydiv(u, v, trim_leading_zeros=True)
    q_ref, r_ref = np.polydiv(u, v)
    np.testing.assert_allclose(q, q_ref, rtol=1e-6)
    np.testing.assert_allclose(r, r_ref, rtol=1e-6)
    q, r = mnp.polydiv(np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(q, [0.0])
    np.testing.assert_array_equal(r, [1.0, 2.0])
    uc, vc = np.array([1 + 1j, 2, 3j], np.complex64), np.array([2j, 1], np.complex64)
    qc, rc = mnp.polydiv(uc, vc, trim_leading_zeros=True)
    qc_ref, rc_ref = np.polydiv(uc.astype(np.complex128), vc.astype(np.complex128))
    assert qc.dtype == np.complex64
    np.testing.assert_allclose(qc, qc_ref, rtol=1e-5)
    np.testing.assert_allclose(rc, rc_ref, rtol=1e-5)


def test_polydiv_jit_grad_vmap_and_errors(x64):
    u, v = np.array([1.0, -2.0, 0.5, 3.0]), np.array([1.5, 0.5, -1.0])
    q, r = mnp.polydiv(u, v)
    qj, rj = mt.jit(mnp.polydiv)(u, v)
    np.testing.assert_allclose(qj, q, rtol=1e-14)
    np.testing.assert_allclose(rj, r, rtol=1e-14, atol=1e-15)
    check_grads(mnp.polydiv, (u, v), order=2)
    us = np.stack([u, 2 * u, u - 1])
    qs, rs = mt.vmap(mnp.polydiv, (0, None))(us, v)
    for i, row in enumerate(us):
        np.testing.assert_allclose(qs[i], mnp.polydiv(row, v)[0], rtol=1e-14)
        np.testing.assert_allclose(rs[i], mnp.polydiv(row, v)[1], rtol=1e-14, atol=1e-15)
    with pytest.raises(ConcretizationTypeError, match="polydiv: trim_leading_zeros=True "
                                                      "needs concrete coefficients"):
        mt.jit(lambda a, b: mnp.polydiv(a, b, trim_leading_zeros=True))(u, v)
    with pytest.raises(ValueError, match=r"polydiv: v must be a non-empty 1-D coefficient "
                                         r"array, got f64\[0\]"):
        mnp.polydiv(u, np.zeros(0))


# ---- unique_* ----------------------------------------------------------------------------
small_2d = hnp.arrays(np.int32, hnp.array_shapes(min_dims=1, max_dims=2, min_side=0,
                                                 max_side=5),
                      elements=st.integers(-3, 3))


@given(small_2d)
def test_unique_named_results_match_numpy(x):
    got, want = mnp.unique_all(x), np.unique_all(x)
    assert type(got).__name__ == "UniqueAllResult" and got._fields == want._fields
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(mnp.unique_values(x), np.sort(np.unique_values(x)))
    counts = mnp.unique_counts(x)
    np.testing.assert_array_equal(counts.values, np.unique_counts(x).values)
    np.testing.assert_array_equal(counts.counts, np.unique_counts(x).counts)
    inv = mnp.unique_inverse(x)
    assert inv.inverse_indices.shape == x.shape
    np.testing.assert_array_equal(np.asarray(inv.values)[np.asarray(inv.inverse_indices)], x)


def test_unique_named_results_count_each_nan():
    x = np.array([np.nan, 1.0, np.nan, 1.0], np.float32)
    np.testing.assert_array_equal(mnp.unique_values(x), np.sort(np.unique_values(x)))
    np.testing.assert_array_equal(mnp.unique_counts(x).counts, [2, 1, 1])


@given(small_2d, st.integers(1, 8))
def test_unique_named_results_under_jit_with_size(x, size):
    got = mt.jit(lambda x: mnp.unique_all(x, size=size, fill_value=-9))(x)
    want = np.unique_all(x)
    k = min(size, len(want.values))
    np.testing.assert_array_equal(got.values[:k], want.values[:k])
    np.testing.assert_array_equal(got.values[k:], -9)
    np.testing.assert_array_equal(got.indices[:k], want.indices[:k])
    np.testing.assert_array_equal(got.counts[:k], want.counts[:k])
    np.testing.assert_array_equal(got.counts[k:], 0)
    if size >= len(want.values):
        np.testing.assert_array_equal(got.inverse_indices, want.inverse_indices)
    with pytest.raises(ConcretizationTypeError, match="unique"):
        mt.jit(mnp.unique_values)(x)


# ---- fromfunction, mask_indices, frombuffer, fromstring ---------------------------------
@pytest.mark.parametrize("shape", [(3,), (2, 4), (2, 3, 2), (0, 2)])
def test_fromfunction_matches_numpy(shape):
    f = lambda *ix: sum((k + 1) * i for k, i in enumerate(ix)) + 0.5  # noqa: E731
    got = mnp.fromfunction(f, shape)
    want = np.fromfunction(f, shape)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want)
    got = mnp.fromfunction(lambda *ix: ix[0] * 2, shape, dtype=int)
    np.testing.assert_array_equal(got, np.fromfunction(lambda *ix: ix[0] * 2, shape, dtype=int))
    assert got.dtype == np.int32


def test_fromfunction_traced_and_kwargs():
    f = lambda s: mnp.fromfunction(lambda i, j, scale: (i - j) * scale, (3, 3), scale=s)  # noqa: E731
    np.testing.assert_allclose(mt.jit(f)(2.0), f(2.0))
    np.testing.assert_allclose(f(2.0), np.fromfunction(lambda i, j: (i - j) * 2.0, (3, 3)))
    assert mt.grad(lambda s: mnp.sum(f(s)))(1.0) == 0.0


@pytest.mark.parametrize("k", [-1, 0, 2])
@pytest.mark.parametrize("mask", ["triu", "tril"])
def test_mask_indices_match_numpy(mask, k):
    got = mnp.mask_indices(4, getattr(mnp, mask), k)
    for g, w in zip(got, np.mask_indices(4, getattr(np, mask), k), strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.complex64])
def test_frombuffer_matches_numpy(dtype):
    data = np.arange(12).astype(dtype).tobytes()
    np.testing.assert_array_equal(mnp.frombuffer(data, dtype), np.frombuffer(data, dtype))
    np.testing.assert_array_equal(mnp.frombuffer(data, dtype, count=3, offset=2 * np.dtype(
        dtype).itemsize), np.frombuffer(data, dtype, count=3, offset=2 * np.dtype(dtype).itemsize))


def test_frombuffer_fromstring_default_float_and_errors(x64):
    data = np.arange(3.0).tobytes()
    got = mnp.frombuffer(data)  # Python float reads float64, as NumPy
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(mnp.fromstring("1.5, 2, -3", sep=","), [1.5, 2.0, -3.0])
    got = mnp.fromstring("1 2 3 4", dtype=int, count=3, sep=" ")
    assert got.dtype == np.int64 and got.tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="frombuffer: buffer size must be a multiple"):
        mnp.frombuffer(b"abc", np.float32)
    with pytest.raises(ValueError, match=r"fromstring: sep='' \(the binary mode\)"):
        mnp.fromstring(b"\x00\x01", dtype=np.uint8, sep="")


def test_frombuffer_narrows_without_x64():
    got = mnp.frombuffer(np.arange(3.0).tobytes())
    assert got.dtype == np.float32 and got.tolist() == [0.0, 1.0, 2.0]


# ---- bitwise_count ---------------------------------------------------------------------
@given(st.sampled_from([np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32]),
       st.data())
def test_bitwise_count_matches_numpy(dtype, data):
    info = np.iinfo(dtype)
    x = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=2, max_side=5),
                             elements=st.integers(int(info.min), int(info.max))))
    got = mnp.bitwise_count(x)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, np.bitwise_count(x))


def test_bitwise_count_bool_int64_jit_vmap_and_errors(x64):
    x = np.array([0, -1, 2**40 + 3, -(2**63)], np.int64)
    np.testing.assert_array_equal(mnp.bitwise_count(x), np.bitwise_count(x))
    np.testing.assert_array_equal(mnp.bitwise_count([True, False]), [1, 0])
    y = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(mt.jit(mnp.bitwise_count)(y), np.bitwise_count(y))
    np.testing.assert_array_equal(mt.vmap(mnp.bitwise_count)(y), np.bitwise_count(y))
    with pytest.raises(TypeError, match=r"bitwise_count: expected an integer or bool array, "
                                        r"got f32\[2\]"):
        mnp.bitwise_count(np.ones(2, np.float32))


# ---- matvec, vecmat --------------------------------------------------------------------
@given(st.sampled_from([((3, 4), (4,)), ((2, 1, 3, 4), (5, 4)), ((3, 2), (4, 1, 2)),
                        ((0, 2, 3), (3,)), ((2, 0), (0,))]),
       st.sampled_from([np.float32, np.complex64]), st.integers(0, 2**31 - 1))
def test_matvec_vecmat_match_numpy(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    (ms, vs) = shapes

    def draw(shape):
        x = rng.standard_normal(shape)
        return (x + 1j * rng.standard_normal(shape) if dtype == np.complex64 else x).astype(dtype)

    m, v = draw(ms), draw(vs)
    got = mnp.matvec(m, v)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, np.matvec(m, v), rtol=1e-5, atol=1e-5)
    mt_ = np.swapaxes(m, -1, -2)  # (..., n, m): vecmat contracts its second-to-last dim
    got = mnp.vecmat(v, mt_)
    np.testing.assert_allclose(got, np.vecmat(v, mt_), rtol=1e-5, atol=1e-5)


def test_matvec_vecmat_derivatives_jit_and_errors(x64):
    rng = np.random.default_rng(3)
    m = rng.standard_normal((2, 3, 4)) + 1j * rng.standard_normal((2, 3, 4))
    v = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    w = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    check_grads(mnp.matvec, (m, v))
    check_grads(mnp.vecmat, (w, m))
    np.testing.assert_allclose(mt.jit(mnp.vecmat)(w, m), np.vecmat(w, m), rtol=1e-12)
    np.testing.assert_allclose(mt.vmap(mnp.matvec, (0, None))(m, v), np.matvec(m, v),
                               rtol=1e-12)
    with pytest.raises(ValueError, match=r"matvec: the contracted dimension differs: the "
                                         r"matrix has 4, the vector 3 \(c128\[2,3,4\] and "
                                         r"c128\[3\]\)"):
        mnp.matvec(m, w)
    with pytest.raises(ValueError, match="vecmat: expected a matrix"):
        mnp.vecmat(w, w)


# ---- conversions and inspection ---------------------------------------------------------
def test_real_if_close_matches_numpy(x64):
    for x in (np.array([1 + 1e-15j, 2 - 1e-15j]), np.array([1 + 1e-3j]), np.array([1.5, 2.0]),
              np.array([1 + 1e-10j]), np.array([1 + 1e-10j])):
        got, want = mnp.real_if_close(x), np.real_if_close(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert mnp.real_if_close(np.array([1 + 1e-10j]), tol=1e-9).dtype == np.float64
    with pytest.raises(ConcretizationTypeError, match="real_if_close: its result depends on "
                                                      "the values"):
        mt.jit(mnp.real_if_close)(np.array([1 + 0j]))


def test_asarray_chkfinite():
    np.testing.assert_array_equal(mnp.asarray_chkfinite([1, 2]), [1, 2])
    assert mnp.asarray_chkfinite([1, 2], dtype=mnp.float32).dtype == np.float32
    with pytest.raises(ValueError, match=r"asarray_chkfinite: array must not contain infs or "
                                         r"NaNs \(2 of f32\[3\]\)"):
        mnp.asarray_chkfinite([1.0, np.nan, -np.inf])
    with pytest.raises(ConcretizationTypeError, match="asarray_chkfinite"):
        mt.jit(mnp.asarray_chkfinite)(np.ones(2, np.float32))


def test_layout_helpers_and_iterable():
    for fn in (mnp.ascontiguousarray, mnp.asfortranarray):
        for x in (5.0, [1, 2], np.ones((2, 3))):
            got, want = fn(x), getattr(np, fn.__name__)(x)
            assert got.shape == want.shape
            np.testing.assert_array_equal(got, want)
        assert fn([1, 2], dtype=mnp.float32).dtype == np.float32
    assert mnp.require([1, 2], mnp.float32, ["C", "ALIGNED", "w"]).dtype == np.float32
    with pytest.raises(ValueError, match="require: unknown requirement 'X'"):
        mnp.require([1], requirements="X")
    assert mnp.isfortran(mnp.ones((2, 3))) is False
    for y in (mnp.ones(2), mnp.array(1.0), [1], 3, "ab", np.array(1), (i for i in ())):
        assert mnp.iterable(y) == np.iterable(y)


@pytest.mark.parametrize("dts", [(np.float32,), (np.float16,), (np.int8,),
                                 (np.float16, np.float32), (np.complex64, np.float16),
                                 (np.int32, np.complex64)])
def test_common_type_matches_numpy(dts, x64):
    arrays_ = [np.ones(2, d) for d in dts]
    got, want = mnp.common_type(*arrays_), np.common_type(*arrays_)
    assert got == want and np.dtype(got) == np.dtype(want)


def test_common_type_default_float_and_errors():
    assert mnp.common_type(np.ones(2, np.int8)) == mnp.float32
    assert mnp.common_type(np.ones(2, np.float16), mnp.ones(2, mnp.bfloat16)) == mnp.float32
    with pytest.raises(TypeError, match="common_type: can't get a common type"):
        mnp.common_type(np.ones(2, bool))


def test_printoptions_reach_arrays():
    x = mnp.array([1.23456, 2.0])
    with mnp.printoptions(precision=2):
        assert "1.23," in repr(x) and mnp.get_printoptions()["precision"] == 2
    assert "1.23456" in repr(x)
    assert mnp.set_printoptions is np.set_printoptions


# ---- scalar types ----------------------------------------------------------------------
C_TYPES = ["intp", "uintp", "intc", "uintc", "byte", "ubyte", "short", "ushort", "longlong",
           "ulonglong", "half"]


@pytest.mark.parametrize("name", C_TYPES)
def test_c_type_names_are_numpys_widths(name, x64):
    ours, theirs = getattr(mnp, name), getattr(np, name)
    assert ours == theirs and np.dtype(ours) == np.dtype(theirs)
    assert ours(3).dtype == np.dtype(theirs)


def test_c_type_names_narrow_without_x64():
    with pytest.warns(mt.errors.X64Warning):
        assert mnp.intp(3).dtype == np.int32
    assert mnp.intc(3).dtype == np.int32 and mnp.half(1.5).dtype == np.float16


# ---- what mnp leaves out is documented -------------------------------------------------
def _missing_names():
    """The one-liner of docs/numpy.md's last section: NumPy's public callables and modules
    that mnp lacks."""
    return sorted(n for n in dir(np) if not n.startswith("_") and not hasattr(mnp, n)
                  and (callable(getattr(np, n)) or isinstance(getattr(np, n), types.ModuleType)))


def test_every_missing_numpy_name_is_listed_with_its_reason():
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "numpy.md").read_text()
    section = text.split("## Left out, and why", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", section))
    unlisted = [n for n in _missing_names() if n not in listed]
    assert not unlisted, f"docs/numpy.md 'Left out, and why' does not list {unlisted}"
