"""conv_general_dilated against a direct loop reference (drawn strides, SAME/VALID/explicit
padding incl. negative, lhs/rhs dilation, feature and batch groups, NCHW/NHWC layouts, 1-D
to 3-D), reduce_window against a loop reference, padding helpers, errors and tracing."""

import itertools
from unittest import mock

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import mytorch as mt
from mytorch import lax
from mytorch.backends.numpy import convolution as conv_kernels
from mytorch.core.array import from_numpy
from tests.strategies import arrays, assert_close

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, I32 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int32)
# absolute slack: a subnormal of the output dtype, or float32 products that round to 0
_TINY = {F16: 6e-8, BF16: 1e-38, F32: 1e-42}
SPATIAL = "HWD"


def _dil(n, r):
    return 0 if n == 0 else (n - 1) * r + 1


def _same_pads(in_shape, window, strides):
    pads = []
    for n, w, s in zip(in_shape, window, strides):
        total = max((-(-n // s) - 1) * s + w - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def _assert_close_to(out, ref, abs_ref, dtype):
    """Within one rounding to `dtype` plus float32 accumulation error; ints exactly."""
    out = np.asarray(out)
    assert out.dtype == dtype and out.shape == ref.shape, (out.dtype, out.shape, ref.shape)
    if dtype.kind in "iub":
        np.testing.assert_array_equal(out, ref.astype(dtype))
        return
    info = ml_dtypes.finfo(dtype)
    bound = 2 * float(info.eps) * np.abs(ref) + 1e-5 * abs_ref + _TINY[dtype]
    assert (np.abs(out.astype(np.float64) - ref) <= bound).all(), (out, ref)


# ---- convolution reference ---------------------------------------------------------------
def _conv_ref(x, w, strides, pads, ld, rd, g, b):
    """Direct convolution of x f[N,C,*S] and w f[O,I,*K] in float64 (int64 for ints):
    one pass per output position and kernel tap, following XLA's definition."""
    wide = np.int64 if x.dtype.kind in "iu" else np.float64
    x, w = x.astype(wide), w.astype(wide)
    (n, c, *sp), (o, i, *ks) = x.shape, w.shape
    nb, og = n // b, o // (g * b)
    out_sp = [max(0, (_dil(s, l) + lo + hi - _dil(k, r)) // st + 1)
              for s, k, st, (lo, hi), l, r in zip(sp, ks, strides, pads, ld, rd)]
    out = np.zeros((nb, o, *out_sp), wide)
    for pos in itertools.product(*map(range, out_sp)):
        for tap in itertools.product(*map(range, ks)):
            idx = []
            for p, t, st, (lo, _), l, r, size in zip(pos, tap, strides, pads, ld, rd, sp):
                u = p * st - lo + t * r  # index into the dilated input
                if u % l or not 0 <= u // l < size:
                    break
                idx.append(u // l)
            else:
                xs = x[(slice(None), slice(None), *idx)]  # (N, C)
                ws = w[(slice(None), slice(None), *tap)]  # (O, I)
                for grp in range(g * b):
                    rows = xs[grp * nb:(grp + 1) * nb] if b > 1 else xs
                    cols = rows[:, grp * i:(grp + 1) * i] if g > 1 else rows
                    out[(slice(None), slice(grp * og, (grp + 1) * og), *pos)] += (
                        cols @ ws[grp * og:(grp + 1) * og].T)
    return out


@st.composite
def conv_cases(draw, dtypes=(F32, F32, F16, BF16, I32)):
    nsp = draw(st.sampled_from([1, 2, 2, 3]))
    mode = draw(st.sampled_from(["none", "feature", "batch"]))
    groups = draw(st.integers(1, 3)) if mode != "none" else 1
    g, b = (groups, 1) if mode == "feature" else (1, groups)
    nb = draw(st.integers(0 if b == 1 else 1, 2))
    i, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    side = 3 if nsp == 3 else 5
    sp = [draw(st.integers(1, side)) for _ in range(nsp)]
    ks = [draw(st.integers(1, 3)) for _ in range(nsp)]
    strides = [draw(st.integers(1, 3)) for _ in range(nsp)]
    ld = [draw(st.sampled_from([1, 1, 2])) for _ in range(nsp)]
    rd = [draw(st.sampled_from([1, 1, 2])) for _ in range(nsp)]
    padding = draw(st.sampled_from(["SAME", "VALID", "explicit"]))
    if padding == "explicit":
        padding = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(nsp)]
        assume(all(_dil(s, l) + lo + hi >= 0 for s, l, (lo, hi) in zip(sp, ld, padding)))
    dtype = draw(st.sampled_from(dtypes))
    lo, hi = (-5, 5) if dtype.kind == "i" else (-2, 2)
    x = draw(arrays(dtype, (nb * b, i * g, *sp), min_value=lo, max_value=hi))
    w = draw(arrays(dtype, (og * g * b, i, *ks), min_value=lo, max_value=hi))
    layout = draw(st.sampled_from(["NC", "channels_last", "mixed"]))
    return x, w, strides, padding, ld, rd, g, b, layout


def _layout(nsp, kind):
    s = SPATIAL[:nsp]
    if kind == "NC":
        return None
    if kind == "channels_last":
        return ("N" + s + "C", s + "IO", "N" + s + "C")
    return ("C" + s + "N", "I" + s + "O", s[::-1] + "CN")  # odd but valid layouts


def _to_layout(a, canonical, spec):
    """Transpose `a` from the canonical letters (e.g. "NCHW") to `spec`."""
    return np.ascontiguousarray(a.transpose([canonical.index(ch) for ch in spec]))


@given(conv_cases())
def test_conv_general_dilated_matches_reference(case):
    x, w, strides, padding, ld, rd, g, b, kind = case
    nsp = x.ndim - 2
    pads = padding
    if padding == "SAME":
        pads = _same_pads(x.shape[2:], [_dil(k, r) for k, r in zip(w.shape[2:], rd)], strides)
    elif padding == "VALID":
        pads = [(0, 0)] * nsp
    ref = _conv_ref(x, w, strides, pads, ld, rd, g, b)
    abs_ref = _conv_ref(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)), strides,
                        pads, ld, rd, g, b)
    dnums = _layout(nsp, kind)
    s = SPATIAL[:nsp]
    if dnums is None:
        lhs, rhs = x, w
    else:
        lhs, rhs = _to_layout(x, "NC" + s, dnums[0]), _to_layout(w, "OI" + s, dnums[1])
        ref = _to_layout(ref, "NC" + s, dnums[2])
        abs_ref = _to_layout(abs_ref, "NC" + s, dnums[2])
    out = lax.conv_general_dilated(from_numpy(lhs), from_numpy(rhs), strides, padding, ld, rd,
                                   dnums, feature_group_count=g, batch_group_count=b)
    _assert_close_to(out, ref, abs_ref, x.dtype)


@settings(max_examples=10)
@given(conv_cases(dtypes=(F16, BF16)))
def test_conv_preferred_element_type(case):
    x, w, strides, padding, ld, rd, g, b, _ = case
    pads = [(0, 0)] * (x.ndim - 2)
    out = lax.conv_general_dilated(from_numpy(x), from_numpy(w), strides, "VALID", ld, rd,
                                   feature_group_count=g, batch_group_count=b,
                                   preferred_element_type=np.float32)
    ref = _conv_ref(x, w, strides, pads, ld, rd, g, b)
    abs_ref = _conv_ref(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)), strides,
                        pads, ld, rd, g, b)
    _assert_close_to(out, ref, abs_ref, F32)


def test_conv_binders_and_known_values():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    w = np.ones((1, 1, 2, 2), np.float32)
    out = lax.conv(from_numpy(x), from_numpy(w), (2, 2), "VALID")
    assert_close(out, np.array([[[[10, 18], [42, 50]]]]), np.float32)
    out = lax.conv_with_general_padding(from_numpy(x), from_numpy(w), (1, 1), ((0, -1), (0, 0)),
                                        (1, 1), (2, 2))
    # taps 2 apart over a 4x4 image cropped to 3 rows: out[i, j] = x[i,j]+x[i,j+2]+x[i+2,j]+...
    ref = np.array([[x[0, 0, i, j] + x[0, 0, i, j + 2] + x[0, 0, i + 2, j] + x[0, 0, i + 2, j + 2]
                     for j in range(2)] for i in range(1)])
    assert_close(out, ref[None, None], np.float32)


def test_depthwise_convolution():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 5, 3)).astype(np.float32)  # NHWC
    w = rng.standard_normal((3, 3, 1, 6)).astype(np.float32)  # HWIO, multiplier 2
    out = lax.conv_general_dilated(from_numpy(x), from_numpy(w), (1, 1), "SAME",
                                   dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                   feature_group_count=3)
    ref = _conv_ref(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), (1, 1),
                    [(1, 1), (1, 1)], (1, 1), (1, 1), 3, 1).transpose(0, 2, 3, 1)
    assert_close(out, ref, np.float32, rtol=1e-5, atol=1e-5)


def test_conv_transpose():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)  # NHC
    w = rng.standard_normal((3, 3, 5)).astype(np.float32)  # HIO
    # JAX's pads for kernel 3, stride 2: VALID (2, 2) -> (4 - 1) * 2 + 3; SAME (2, 1) -> 4 * 2
    for padding, size, pads in (("VALID", 9, [(2, 2)]), ("SAME", 8, [(2, 1)])):
        out = lax.conv_transpose(from_numpy(x), from_numpy(w), (2,), padding)
        assert out.shape == (2, size, 5)
        ref = _conv_ref(x.transpose(0, 2, 1), w.transpose(2, 1, 0), (1,), pads, (2,), (1,), 1, 1)
        assert_close(out, ref.transpose(0, 2, 1), np.float32, rtol=1e-5, atol=1e-5)


def test_conv_transpose_kernel_is_the_adjoint():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 9, 7, 3))  # NHWC
    w = rng.standard_normal((3, 2, 3, 4))  # HWIO
    y = rng.standard_normal((2, 4, 6, 4))
    dn = ("NHWC", "HWIO", "NHWC")
    fwd = lax.conv_general_dilated(from_numpy(x), from_numpy(w), (2, 1), "VALID",
                                   dimension_numbers=dn)
    assert fwd.shape == y.shape
    bwd = lax.conv_transpose(from_numpy(y), from_numpy(w), (2, 1), "VALID", dimension_numbers=dn,
                             transpose_kernel=True)
    assert bwd.shape == x.shape
    np.testing.assert_allclose(np.vdot(np.asarray(fwd), y), np.vdot(x, np.asarray(bwd)),
                               rtol=1e-4)


def test_conv_dimension_numbers():
    cdn = lax.conv_dimension_numbers
    assert cdn((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC")) == (
        (0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert cdn((1, 3, 5, 5), (8, 3, 3, 3), None) == ((0, 1, 2, 3),) * 3
    assert cdn((1, 3, 5), (8, 3, 3), ("NCH", "OIH", "NCH")) == ((0, 1, 2),) * 3
    # spatial dims are ordered as in the rhs layout
    assert cdn((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "WHIO", "NHWC")) == (
        (0, 3, 2, 1), (3, 2, 0, 1), (0, 3, 2, 1))
    given_dn = lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert cdn((1, 5, 5, 3), (3, 3, 3, 8), given_dn) == given_dn


def test_padtype_to_pads():
    assert lax.padtype_to_pads((5, 6), (3, 3), (2, 1), "SAME") == ((1, 1), (1, 1))
    assert lax.padtype_to_pads((4,), (4,), (1,), "SAME") == ((1, 2),)
    assert lax.padtype_to_pads((4,), (4,), (1,), "SAME_LOWER") == ((2, 1),)
    assert lax.padtype_to_pads((4, 4), (4, 2), (3, 3), "valid") == ((0, 0), (0, 0))
    with pytest.raises(ValueError, match="padding must be 'SAME'"):
        lax.padtype_to_pads((4,), (4,), (1,), "FULL")


# ---- convolution errors ------------------------------------------------------------------
def _f32(*shape):
    return from_numpy(np.ones(shape, np.float32))


@pytest.mark.parametrize("lhs,rhs,kwargs,err,fragment", [
    ((1, 3, 5, 5), (4, 2, 3, 3), {}, TypeError,
     r"lhs f32\[1,3,5,5\] has 3 features but rhs f32\[4,2,3,3\] has 2 input features"),
    ((1, 4, 5, 5), (4, 2, 3, 3), dict(feature_group_count=3), ValueError,
     r"feature_group_count=3 must divide the 4 lhs features"),
    ((1, 4, 5, 5), (3, 2, 3, 3), dict(feature_group_count=2), ValueError,
     r"feature_group_count=2 must divide the 3 rhs output features"),
    ((3, 2, 5, 5), (4, 2, 3, 3), dict(batch_group_count=2), ValueError,
     r"batch_group_count=2 must divide the lhs batch size 3"),
    ((2, 2, 5, 5), (3, 2, 3, 3), dict(batch_group_count=2), ValueError,
     r"batch_group_count=2 must divide the 3 rhs output features"),
    ((2, 4, 5, 5), (4, 2, 3, 3), dict(batch_group_count=2, feature_group_count=2), ValueError,
     r"at most one of feature_group_count"),
    ((1, 3, 5, 5), (4, 3, 3), {}, TypeError, r"lhs and rhs of one rank"),
    ((1, 3, 5, 5), (4, 3, 3, 3), dict(padding="FULL"), ValueError,
     r"padding must be 'SAME', 'SAME_LOWER', 'VALID'"),
    ((1, 3, 5, 5), (4, 3, 3, 3), dict(padding=((0, 0),)), ValueError,
     r"padding must be a tuple of 2 \(low, high\) int pairs"),
    ((1, 3, 5, 5), (4, 3, 3, 3), dict(padding=((0, -6), (0, 0))), ValueError,
     r"to a negative size -1"),
    ((1, 3, 5, 5), (4, 3, 3, 3), dict(window_strides=(1,)), ValueError,
     r"window_strides must be a tuple of 2 ints"),
    ((1, 3, 5, 5), (4, 3, 3, 3), dict(window_strides=(1, 0)), ValueError,
     r"window_strides must be >= 1"),
    ((1, 3, 5, 5), (4, 3, 3, 3), dict(dimension_numbers=("NCHW", "OIHW")), TypeError,
     r"dimension_numbers must be None"),
    ((1, 3, 5, 5), (4, 3, 3, 3), dict(dimension_numbers=("NCHW", "OIHW", "NCH")), ValueError,
     r"layout 'NCH' has 3 letters"),
    ((1, 3, 5, 5), (4, 3, 3, 3), dict(dimension_numbers=("NCHW", "OIHX", "NCHW")), ValueError,
     r"spatial letters"),
])
def test_conv_errors(lhs, rhs, kwargs, err, fragment):
    kwargs = dict(kwargs)
    strides = kwargs.pop("window_strides", (1, 1))
    padding = kwargs.pop("padding", "VALID")
    with pytest.raises(err, match=fragment):
        lax.conv_general_dilated(_f32(*lhs), _f32(*rhs), strides, padding, **kwargs)


def test_conv_dtype_errors():
    with pytest.raises(TypeError, match=r"one dtype, got f32\[1,3,5,5\] and i32\[4,3,3,3\]"):
        lax.conv(_f32(1, 3, 5, 5), from_numpy(np.ones((4, 3, 3, 3), np.int32)), (1, 1), "SAME")


# ---- reduce_window -----------------------------------------------------------------------
_OPS = {
    "sum": (lax.reduce_window_sum, np.add),
    "max": (lax.reduce_window_max, np.maximum),
    "min": (lax.reduce_window_min, np.minimum),
}


def _identity(dtype, op):
    if op == "sum":
        return 0
    if dtype == np.bool_:
        return op == "min"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.max if op == "min" else info.min
    return np.inf if op == "min" else -np.inf


def _reduce_window_ref(x, op, window, strides, pads, bd, wd):
    """Loop over output positions and window taps; padding and holes hold the identity."""
    ufunc = _OPS[op][1]
    wide = x.astype(np.int64 if x.dtype.kind in "iu" else
                    bool if x.dtype == np.bool_ else np.float64)
    ident = _identity(x.dtype, op)
    out_shape = [max(0, (_dil(n, b) + lo + hi - _dil(w, r)) // s + 1)
                 for n, w, s, (lo, hi), b, r in zip(x.shape, window, strides, pads, bd, wd)]
    out, abs_out = np.full(out_shape, ident, wide.dtype), np.zeros(out_shape)
    for pos in itertools.product(*map(range, out_shape)):
        acc, acc_abs = wide.dtype.type(ident), 0.0
        for tap in itertools.product(*map(range, window)):
            idx = []
            for p, t, s, (lo, _), b, r, n in zip(pos, tap, strides, pads, bd, wd, x.shape):
                u = p * s - lo + t * r
                if u % b or not 0 <= u // b < n:
                    break
                idx.append(u // b)
            else:
                acc = ufunc(acc, wide[tuple(idx)])
                acc_abs += abs(float(wide[tuple(idx)]))
        out[pos], abs_out[pos] = acc, acc_abs
    return out, abs_out


@st.composite
def window_cases(draw):
    op = draw(st.sampled_from(["sum", "max", "min"]))
    dtypes = [F32, F16, BF16, I32, np.dtype(np.int8), np.dtype(np.uint8)]
    if op != "sum":
        dtypes.append(np.dtype(np.bool_))
    dtype = draw(st.sampled_from(dtypes))
    rank = draw(st.integers(0, 3))
    shape = [draw(st.integers(0 if rank < 3 else 1, 5)) for _ in range(rank)]
    window = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    bd = [draw(st.sampled_from([1, 1, 2])) for _ in range(rank)]
    wd = [draw(st.sampled_from([1, 1, 2])) for _ in range(rank)]
    padding = draw(st.sampled_from(["SAME", "VALID", "explicit"]))
    if padding == "explicit":
        padding = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(rank)]
        assume(all(_dil(n, b) + lo + hi >= 0 for n, b, (lo, hi) in zip(shape, bd, padding)))
    x = draw(arrays(dtype, tuple(shape), allow_nan=op != "sum"))
    return op, x, window, strides, padding, bd, wd


def _check_reduce_window(case):
    op, x, window, strides, padding, bd, wd = case
    pads = padding
    if padding == "SAME":
        pads = _same_pads(x.shape, [_dil(w, r) for w, r in zip(window, wd)], strides)
    elif padding == "VALID":
        pads = [(0, 0)] * x.ndim
    ref, abs_ref = _reduce_window_ref(x, op, window, strides, pads, bd, wd)
    out = _OPS[op][0](from_numpy(x), window, strides, padding, bd, wd)
    if op == "sum":
        _assert_close_to(out, ref, abs_ref, x.dtype)
    else:
        assert_close(out, ref.astype(x.dtype), x.dtype, rtol=0, atol=0)


@given(window_cases())
def test_reduce_window_matches_reference(case):
    _check_reduce_window(case)


@settings(max_examples=10)
@given(window_cases())
def test_reduce_window_large_window_path(case):
    with mock.patch.object(conv_kernels, "_MAX_TAPS", 0):  # sliding-window reduction
        _check_reduce_window(case)


def test_reduce_window_pooling_and_big_windows():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 12, 10)).astype(np.float32)
    out = lax.reduce_window_max(from_numpy(x), (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    assert_close(out, x.reshape(2, 3, 6, 2, 5, 2).max(axis=(3, 5)), np.float32)
    out = lax.reduce_window_sum(from_numpy(x), (1, 1, 12, 10), (1, 1, 1, 1), "VALID")  # 120 taps
    assert_close(out, x.sum(axis=(2, 3), keepdims=True), np.float32, rtol=1e-5, atol=1e-5)
    h = np.ones((1, 4096), np.float16)  # float16 sums accumulate in float32
    out = lax.reduce_window_sum(from_numpy(h), (1, 4096), (1, 1), "VALID")
    assert_close(out, np.full((1, 1), 4096.0), np.float16, rtol=0, atol=0)
    i8 = np.full((4,), 100, np.int8)  # integer sums wrap
    out = lax.reduce_window_sum(from_numpy(i8), (4,), (1,), "VALID")
    assert_close(out, np.array([400 - 512], np.int8), np.int8)


def test_generic_reduce_window_dispatch():
    x = from_numpy(np.array([3.0, -1.0, 2.0, 5.0, -4.0], np.float32))
    args = ((2,), (1,), "VALID")
    assert_close(lax.reduce_window(x, 0.0, lax.add, *args), [2, 1, 7, 1], np.float32)
    assert_close(lax.reduce_window(x, -np.inf, lax.max, *args), [3, 2, 5, 5], np.float32)
    assert_close(lax.reduce_window(x, np.inf, lax.min, *args), [-1, -1, 2, -4], np.float32)
    assert_close(lax.reduce_window(x, 2.5, lax.max, *args), [3, 2.5, 5, 5], np.float32)
    assert_close(lax.reduce_window(x, 0.0, lax.min, *args), [-1, -1, 0, -4], np.float32)
    i = from_numpy(np.array([1, 7, 3], np.int32))
    assert_close(lax.reduce_window(i, -np.inf, lax.max, (2,), (1,), "VALID"), [7, 7], np.int32)
    closed = mt.make_jaxpr(lambda x, v: lax.reduce_window(x, v, lax.max, *args))(
        x, from_numpy(np.float32(2.5)))  # a traced init value is combined with the result
    assert_close(closed(x, from_numpy(np.float32(2.5)))[0], [3, 2.5, 5, 5], np.float32)
    with pytest.raises(TypeError, match="lax.add, lax.max and lax.min"):
        lax.reduce_window(x, 1.0, lax.mul, *args)
    with pytest.raises(ValueError, match="lax.add needs init_value 0, got 1.0"):
        lax.reduce_window(x, 1.0, lax.add, *args)
    with pytest.raises(TypeError, match="scalar init_value"):
        lax.reduce_window(x, np.zeros(2), lax.add, *args)


def test_reduce_window_errors():
    x = _f32(4, 5)
    with pytest.raises(TypeError, match=r"reduce_window_sum needs integer or floating-point "
                                        r"operands, got bool\[3\]"):
        lax.reduce_window_sum(from_numpy(np.ones(3, bool)), (2,), (1,), "VALID")
    with pytest.raises(ValueError, match=r"window_dimensions must be a tuple of 2 ints"):
        lax.reduce_window_max(x, (2,), (1, 1), "VALID")
    with pytest.raises(ValueError, match=r"window_dimensions must be >= 1"):
        lax.reduce_window_max(x, (0, 1), (1, 1), ((0, 0), (0, 0)))
    with pytest.raises(ValueError, match=r"padding must be 'SAME'"):
        lax.reduce_window_min(x, (2, 2), (1, 1), "REFLECT")
    with pytest.raises(TypeError, match=r"padding must be 'SAME'.*int pairs"):
        lax.reduce_window_min(x, (2, 2), (1, 1), (1, 2))
    with pytest.raises(ValueError, match=r"to a negative size"):
        lax.reduce_window_min(x, (2, 2), (1, 1), ((0, -5), (0, 0)))


def test_reduce_window_properties():
    assert lax.reduce_window_sum_p.linear
    assert not lax.reduce_window_max_p.linear and not lax.reduce_window_min_p.linear
    assert not lax.dot_general_p.linear and not lax.conv_general_dilated_p.linear
    out = lax.reduce_window_max(2.0, (), (), "VALID")  # weak 0-d operand stays weak
    assert out.shape == () and out.weak_type and float(out) == 2.0


# ---- tracing -----------------------------------------------------------------------------
def test_traced_windowed_ops_evaluate_like_eager():
    rng = np.random.default_rng(4)
    x = from_numpy(rng.standard_normal((2, 6, 6, 3)).astype(np.float32))
    w = from_numpy(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))

    def f(x, w):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", rhs_dilation=(2, 1),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = lax.reduce_window_max(y, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        y = lax.reduce_window_sum(y, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")
        return lax.reduce_window_min(y, (1, 1, 2, 1), (1, 1, 1, 1), ((0, 0), (0, 1), (0, 0),
                                                                  (0, 0)))

    closed = mt.make_jaxpr(f)(x, w)
    text = str(closed)
    for name in ("conv_general_dilated", "reduce_window_max", "reduce_window_sum",
                 "reduce_window_min"):
        assert name in text
    assert_close(closed(x, w)[0], np.asarray(f(x, w)), np.float32, rtol=0, atol=0)
