"""Hypothesis strategies shared by the test suite: shapes, dtypes, arrays, axes.

Shapes include scalars (rank 0) and size-0 axes; values include NaN/inf where asked.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ml_dtypes

FLOAT_DTYPES = [np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]
INT_DTYPES = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.uint8, np.uint32)]
ALL_DTYPES = [np.dtype(np.bool_)] + INT_DTYPES + FLOAT_DTYPES
# float tolerance by dtype, for comparing with NumPy computed in the same dtype or float64
TOL = {
    np.dtype(np.float16): dict(rtol=2e-3, atol=2e-3),
    np.dtype(ml_dtypes.bfloat16): dict(rtol=2e-2, atol=2e-2),
    np.dtype(np.float32): dict(rtol=2e-6, atol=1e-6),
    np.dtype(np.float64): dict(rtol=1e-12, atol=1e-12),
}


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=5):
    """Array shapes, rank 0 to max_dims, sides 0..max_side (size-0 axes included)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def arrays(dtype, shape, *, elements=None, allow_nan=False, allow_inf=False, min_value=None,
           max_value=None):
    """NumPy arrays of `dtype` (a dtype, or a strategy of dtypes) and `shape` (a tuple or a
    strategy). bfloat16 values are drawn as float32 and rounded."""
    def build(dt, shp):
        dt = np.dtype(dt)
        draw_dt = np.dtype(np.float32) if dt == np.dtype(ml_dtypes.bfloat16) else dt
        if elements is not None:
            elems = elements
        elif draw_dt.kind == "f":
            lo, hi = _representable(-1e3 if min_value is None else min_value,
                                    1e3 if max_value is None else max_value, draw_dt)
            elems = st.floats(lo, hi, allow_nan=False, allow_infinity=False,
                              width=8 * draw_dt.itemsize)
            if allow_nan or allow_inf:
                specials = ([np.nan] if allow_nan else []) + ([np.inf, -np.inf] if allow_inf
                                                               else [])
                elems = st.one_of(elems, st.sampled_from(specials))
        elif draw_dt.kind == "c":  # each part as a float of half the width
            part = np.dtype(f"f{draw_dt.itemsize // 2}")
            lo, hi = _representable(-1e3 if min_value is None else min_value,
                                    1e3 if max_value is None else max_value, part)
            parts = st.floats(lo, hi, allow_nan=False, allow_infinity=False,
                              width=8 * part.itemsize)
            if allow_nan or allow_inf:
                parts = st.one_of(parts, st.sampled_from(
                    ([np.nan] if allow_nan else []) + ([np.inf, -np.inf] if allow_inf else [])))
            elems = st.builds(complex, parts, parts)
        elif draw_dt.kind in "iu":
            info = np.iinfo(draw_dt)
            lo = info.min if min_value is None else max(info.min, int(min_value))
            hi = info.max if max_value is None else min(info.max, int(max_value))
            elems = st.integers(lo, hi)
        else:
            elems = None
        return hnp.arrays(draw_dt, shp, elements=elems).map(lambda a: a.astype(dt))

    dts = dtype if isinstance(dtype, st.SearchStrategy) else st.just(dtype)
    shps = shape if isinstance(shape, st.SearchStrategy) else st.just(tuple(shape))
    return st.tuples(dts, shps).flatmap(lambda p: build(*p))


def _representable(lo, hi, dtype):
    """Bounds moved inward to values exactly representable in `dtype` (hypothesis needs it)."""
    lo_r, hi_r = dtype.type(lo), dtype.type(hi)
    if lo_r < lo:
        lo_r = np.nextafter(lo_r, dtype.type(np.inf))
    if hi_r > hi:
        hi_r = np.nextafter(hi_r, dtype.type(-np.inf))
    return float(lo_r), float(hi_r)


def broadcastable_shapes(shape, min_dims=0, max_dims=4):
    """Shapes that broadcast against `shape` (NumPy rules)."""
    return hnp.broadcastable_shapes(shape, min_dims=min_dims, max_dims=max_dims, max_side=5)


def axes(ndim, allow_none=True, allow_negative=True):
    """An axis of an array of rank `ndim` (negative allowed), or None."""
    if ndim == 0:
        return st.sampled_from([None, 0, -1] if allow_none else [0, -1])
    lo = -ndim if allow_negative else 0
    ax = st.integers(lo, ndim - 1)
    return st.one_of(st.none(), ax) if allow_none else ax


def axis_tuples(ndim):
    """A tuple of distinct axes of an array of rank `ndim` (negative allowed)."""
    if ndim == 0:
        return st.just(())
    return st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).flatmap(
        lambda ax: st.tuples(*[st.sampled_from([a, a - ndim]) for a in ax])
    )


def assert_close(actual, expected, dtype=None, **tol):
    """Compare a mytorch result with a NumPy reference: values, shape and dtype."""
    actual_np = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual_np.shape == expected.shape, (actual_np.shape, expected.shape)
    if dtype is not None:
        assert actual_np.dtype == np.dtype(dtype), (actual_np.dtype, dtype)
    if actual_np.dtype.kind == "f" or actual_np.dtype == np.dtype(ml_dtypes.bfloat16):
        t = dict(TOL.get(actual_np.dtype, {}))
        t.update(tol)
        np.testing.assert_allclose(actual_np.astype(np.float64), expected.astype(np.float64),
                                   equal_nan=True, **t)
    else:
        np.testing.assert_array_equal(actual_np, expected)


def assert_same_bits(actual, expected):
    """Equal bit for bit (signed zeros included), shape and dtype too, except a NaN's sign
    and payload, which compiled loops do not keep (the C compiler may turn x * -0.0 into a
    sign flip): NaN where the other has NaN."""
    a, b = np.asarray(actual), np.asarray(expected)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    nan = np.isnan(a)
    np.testing.assert_array_equal(nan, np.isnan(b))
    bits = np.dtype(f"u{a.dtype.itemsize}")
    np.testing.assert_array_equal(a[~nan].view(bits), b[~nan].view(bits))
