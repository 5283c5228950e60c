"""mytorch.numpy sorting, searching and counting against NumPy: values, dtypes, stability,
NaN placement, value-dependent shapes eagerly and with `size=` under make_jaxpr."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.errors import ConcretizationTypeError
from tests.strategies import arrays, assert_close, axes, shapes

BOOL = np.dtype(np.bool_)
I8, U8, I32 = np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
ALL = [BOOL, I8, U8, I32, F32, F16, BF16]
FLOATS = (F32, F16, BF16)


def f64(x):
    x = np.asarray(x)
    return x.astype(F64) if x.dtype in FLOATS else x


def values(dt, nan=True):
    """Few distinct values (many duplicates), NaN and inf for floats."""
    if dt == BOOL:
        return st.booleans()
    if dt in FLOATS:
        special = [np.nan, np.inf, -np.inf, -0.0] if nan else []
        return st.sampled_from([0.0, 1.0, -1.5, 2.0, 3.0] + special)
    return st.sampled_from([0, 1, 2, 5, 100])


@st.composite
def dup_arrays(draw, min_dims=0, max_dims=3, dtypes=ALL, nan=True, min_side=0):
    dt = draw(st.sampled_from(dtypes))
    shape = draw(shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side))
    return draw(arrays(dt, shape, elements=values(dt, nan)))


def sort_axis(draw, x):
    return draw(axes(x.ndim, allow_none=True)) if x.ndim else None


# ---- sort / argsort / lexsort / partition -------------------------------------------------
@given(data=st.data())
def test_sort(data):
    x = data.draw(dup_arrays())
    ax = sort_axis(data.draw, x)
    desc = data.draw(st.booleans())
    got = mnp.sort(mnp.asarray(x), axis=ax, descending=desc)
    want = np.sort(f64(x), axis=ax, kind="stable")
    if desc:
        want = np.flip(want, axis=0 if ax is None else ax)
    assert_close(got, want.astype(x.dtype), x.dtype)


@given(data=st.data())
def test_argsort_is_stable(data):
    x = data.draw(dup_arrays())
    ax = sort_axis(data.draw, x)
    got = mnp.argsort(mnp.asarray(x), axis=ax)
    assert_close(got, np.argsort(f64(x), axis=ax, kind="stable").astype(I32), I32)


@given(data=st.data())
def test_argsort_descending_keeps_ties_in_order(data):
    x = data.draw(dup_arrays(min_dims=1))
    ax = data.draw(axes(x.ndim, allow_none=False))
    got = mnp.argsort(mnp.asarray(x), axis=ax, descending=True)
    n = x.shape[ax]
    rev = np.flip(f64(x), axis=ax)
    want = np.flip(n - 1 - np.argsort(rev, axis=ax, kind="stable"), axis=ax)
    assert_close(got, want.astype(I32), I32)
    # the values it selects are in descending order (NaN first)
    picked = np.take_along_axis(f64(x), np.asarray(got).astype(np.int64), axis=ax)
    assert_close(picked, np.flip(np.sort(f64(x), axis=ax), axis=ax))


def test_sort_nan_placement_and_errors():
    x = np.array([np.nan, 1.0, -np.inf, np.inf, -0.0, 0.0], F32)
    assert_close(mnp.sort(x), np.sort(x), F32)
    assert_close(mnp.argsort(x), np.argsort(x, kind="stable").astype(I32), I32)
    with pytest.raises(ValueError, match="order= is not supported"):
        mnp.sort(x, order="f")
    with pytest.raises(ValueError, match="axis -1 is out of bounds for the 0-d"):
        mnp.sort(np.float32(1))
    assert_close(mnp.sort(np.float32(1), axis=None), np.array([1.0], F32), F32)


@given(data=st.data())
def test_lexsort(data):
    k = data.draw(st.integers(1, 3))
    shape = data.draw(shapes(min_dims=1, max_dims=2))
    keys = [data.draw(arrays(data.draw(st.sampled_from(ALL)), shape,
                             elements=None)) for _ in range(k)]
    keys = [np.asarray(np.where(np.isnan(f64(kk)), 0, kk) if kk.dtype in FLOATS else kk)
            .astype(kk.dtype) for kk in keys]
    keys = [(kk % 3).astype(kk.dtype) if kk.dtype.kind in "iu" else kk for kk in keys]
    ax = data.draw(axes(len(shape), allow_none=False))
    got = mnp.lexsort([mnp.asarray(kk) for kk in keys], axis=ax)
    want = np.lexsort([f64(kk) for kk in keys], axis=ax)
    assert_close(got, want.astype(I32), I32)


def test_lexsort_2d_keys_and_errors():
    keys = np.array([[1, 1, 0, 0], [3, 2, 3, 2]], np.int32)
    assert_close(mnp.lexsort(keys), np.lexsort(keys).astype(I32), I32)
    with pytest.raises(TypeError, match="len > 0"):
        mnp.lexsort([])
    with pytest.raises(ValueError, match="same shape"):
        mnp.lexsort([np.ones(3), np.ones(4)])


@given(data=st.data())
def test_partition_is_valid(data):
    x = data.draw(dup_arrays(min_dims=1, min_side=1, nan=False))
    ax = data.draw(axes(x.ndim, allow_none=False))
    kth = data.draw(st.integers(-x.shape[ax], x.shape[ax] - 1))
    got = np.asarray(mnp.partition(mnp.asarray(x), kth, axis=ax)).astype(F64)
    s = np.sort(f64(x), axis=ax)
    k = kth % x.shape[ax]
    pivot = np.take(s, [k], axis=ax)
    assert np.array_equal(np.take(got, [k], axis=ax), pivot)
    assert np.all(np.take(got, range(k), axis=ax) <= pivot)
    assert np.all(np.take(got, range(k + 1, x.shape[ax]), axis=ax) >= pivot)
    idx = np.asarray(mnp.argpartition(mnp.asarray(x), kth, axis=ax)).astype(np.int64)
    assert np.array_equal(np.take_along_axis(f64(x), idx, axis=ax), got)


def test_partition_errors():
    with pytest.raises(ValueError, match=r"kth\(=5\) out of bounds \(3\)"):
        mnp.partition(np.ones(3), 5)
    with pytest.raises(ValueError, match=r"kth\(=-4\) out of bounds"):
        mnp.argpartition(np.ones(3), -4)


# ---- searchsorted / digitize ------------------------------------------------------------
METHODS = ["scan", "scan_unrolled", "sort", "compare_all"]


@pytest.mark.parametrize("method", METHODS)
@given(data=st.data())
def test_searchsorted(method, data):
    dt = data.draw(st.sampled_from(ALL))
    a = data.draw(arrays(dt, shapes(min_dims=1, max_dims=1, max_side=9), elements=values(dt)))
    a = np.sort(f64(a)).astype(dt)  # NumPy's order (ml_dtypes' own sort misplaces NaN)
    v = data.draw(arrays(dt, shapes(max_dims=2), elements=values(dt)))
    side = data.draw(st.sampled_from(["left", "right"]))
    got = mnp.searchsorted(mnp.asarray(a), mnp.asarray(v), side=side, method=method)
    want = np.searchsorted(f64(a), f64(v), side=side)
    assert_close(got, np.asarray(want).astype(I32), I32)


@given(data=st.data())
def test_searchsorted_sorter(data):
    a = data.draw(arrays(F32, shapes(min_dims=1, max_dims=1), elements=values(F32)))
    v = data.draw(arrays(F32, (4,), elements=values(F32)))
    sorter = np.argsort(a, kind="stable")
    side = data.draw(st.sampled_from(["left", "right"]))
    got = mnp.searchsorted(mnp.asarray(a), mnp.asarray(v), side=side,
                           sorter=mnp.asarray(sorter.astype(np.int32)))
    assert_close(got, np.searchsorted(a, v, side=side, sorter=sorter).astype(I32), I32)


def test_searchsorted_errors_and_promotion():
    a = np.array([1, 2, 3], np.int32)
    assert_close(mnp.searchsorted(a, 2.5), np.int32(2), I32)
    assert_close(mnp.searchsorted(a, np.array([[0, 9]], np.int8), side="right"),
                 np.array([[0, 3]], np.int32), I32)
    with pytest.raises(ValueError, match="side must be 'left' or 'right'"):
        mnp.searchsorted(a, 1, side="middle")
    with pytest.raises(ValueError, match="a must be 1-D"):
        mnp.searchsorted(np.ones((2, 2)), 1.0)
    with pytest.raises(ValueError, match="method must be one of"):
        mnp.searchsorted(a, 1, method="bogus")


@given(data=st.data())
def test_digitize(data):
    bins = np.unique(data.draw(arrays(F32, (data.draw(st.integers(1, 6)),),
                                      elements=st.sampled_from([-2.0, 0.0, 1.0, 2.5, 4.0]))))
    if data.draw(st.booleans()):
        bins = bins[::-1].copy()
    x = data.draw(arrays(F32, shapes(max_dims=2), elements=values(F32)))
    right = data.draw(st.booleans())
    got = mnp.digitize(mnp.asarray(x), mnp.asarray(bins), right=right)
    assert_close(got, np.digitize(x, bins, right=right).astype(I32), I32)


# ---- value-dependent shapes -------------------------------------------------------------
@given(data=st.data())
def test_unique(data):
    x = data.draw(dup_arrays())
    flags = data.draw(st.tuples(st.booleans(), st.booleans(), st.booleans()))
    got = mnp.unique(mnp.asarray(x), *flags)
    want = np.unique(f64(x), *flags)
    if not any(flags):
        got, want = (got,), (want,)
    for g, w, dt in zip(got, want, [x.dtype] + [I32] * 3, strict=False):
        assert_close(g, np.asarray(w).astype(dt), dt)


@given(data=st.data())
def test_unique_axis(data):
    x = data.draw(arrays(I8, shapes(min_dims=1, max_dims=3, min_side=1),
                         elements=st.integers(0, 1)))
    ax = data.draw(axes(x.ndim, allow_none=False))
    got = mnp.unique(mnp.asarray(x), return_index=True, return_inverse=True,
                     return_counts=True, axis=ax)
    want = np.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=ax)
    assert_close(got[0], want[0], I8)
    for g, w in zip(got[1:], want[1:], strict=True):
        assert_close(g, w.astype(I32), I32)


def test_unique_equal_nan():
    x = np.array([np.nan, 1.0, np.nan, 1.0], F32)
    assert_close(mnp.unique(x), np.unique(x), F32)
    assert_close(mnp.unique(x, equal_nan=False), np.unique(x, equal_nan=False), F32)


def test_unique_with_size_traces():
    x = np.array([3, 1, 3, 2, 1, 3], np.int32)

    def f(v):
        return mnp.unique(v, return_index=True, return_inverse=True, return_counts=True,
                          size=5, fill_value=-1)

    closed = mt.make_jaxpr(f)(x)
    vals, idx, inv, cnt = closed(x)
    assert_close(vals, np.array([1, 2, 3, -1, -1], np.int32), I32)
    assert_close(idx, np.array([1, 3, 0, 0, 0], np.int32), I32)
    assert_close(inv, np.array([2, 0, 2, 1, 0, 2], np.int32), I32)
    assert_close(cnt, np.array([2, 1, 3, 0, 0], np.int32), I32)
    eager = f(mnp.asarray(x))
    for g, w in zip(eager, (vals, idx, inv, cnt), strict=True):
        assert_close(g, np.asarray(w), I32)
    # truncation and the default fill (the smallest value)
    assert_close(mnp.unique(x, size=2), np.array([1, 2], np.int32), I32)
    assert_close(mnp.unique(x, size=4), np.array([1, 2, 3, 1], np.int32), I32)


@pytest.mark.parametrize("fn", [
    lambda x: mnp.unique(x),
    lambda x: mnp.nonzero(x),
    lambda x: mnp.argwhere(x),
    lambda x: mnp.flatnonzero(x),
    lambda x: mnp.bincount(x),
], ids=["unique", "nonzero", "argwhere", "flatnonzero", "bincount"])
def test_value_dependent_shapes_need_size_under_tracing(fn):
    x = np.array([0, 2, 0, 1], np.int32)
    with pytest.raises(ConcretizationTypeError, match=r"(size|length)="):
        mt.make_jaxpr(fn)(x)
    fn(mnp.asarray(x))  # fine eagerly


@given(data=st.data())
def test_nonzero_argwhere_flatnonzero(data):
    x = data.draw(dup_arrays(nan=True))
    want = np.argwhere(x)
    assert_close(mnp.argwhere(mnp.asarray(x)), want.astype(I32), I32)
    assert_close(mnp.flatnonzero(mnp.asarray(x)), np.flatnonzero(x).astype(I32), I32)
    if x.ndim:
        for g, w in zip(mnp.nonzero(mnp.asarray(x)), np.nonzero(x), strict=True):
            assert_close(g, w.astype(I32), I32)
    size = data.draw(st.integers(0, 6))
    fill = data.draw(st.integers(-1, 2))
    got = mnp.argwhere(mnp.asarray(x), size=size, fill_value=fill)
    padded = np.full((size, x.ndim), fill, np.int32)
    k = min(size, len(want))
    padded[:k] = want[:k]
    assert_close(got, padded, I32)


def test_nonzero_with_size_traces_and_errors():
    x = np.array([[0, 3, 0], [4, 0, 5]], np.int32)

    def f(v):
        return mnp.nonzero(v, size=4, fill_value=(-1, -2))

    closed = mt.make_jaxpr(f)(x)
    rows, cols = closed(x)
    assert_close(rows, np.array([0, 1, 1, -1], np.int32), I32)
    assert_close(cols, np.array([1, 0, 2, -2], np.int32), I32)
    closed = mt.make_jaxpr(lambda v: mnp.flatnonzero(v, size=2))(x)
    assert_close(closed(x)[0], np.array([1, 3], np.int32), I32)
    with pytest.raises(ValueError, match="0d arrays is not allowed"):
        mnp.nonzero(np.float32(1))
    with pytest.raises(ValueError, match="out of bounds for the 0-d"):
        mnp.unique(np.float32(1), axis=0)
    assert not mnp.bincount(np.array([1, 1], np.int32)).weak_type
    assert_close(mnp.argwhere(np.float32(2)), np.zeros((1, 0), np.int32), I32)
    with pytest.raises(ValueError, match="one value per axis"):
        mnp.nonzero(x, size=2, fill_value=(0, 0, 0))


@given(data=st.data())
def test_bincount(data):
    x = data.draw(arrays(data.draw(st.sampled_from([I32, U8, I8, BOOL])),
                         shapes(min_dims=1, max_dims=1, max_side=8), min_value=0,
                         max_value=6))
    minlength = data.draw(st.integers(0, 9))
    weighted = data.draw(st.booleans())
    w = data.draw(arrays(F32, x.shape, min_value=-3, max_value=3)) if weighted else None
    got = mnp.bincount(mnp.asarray(x), None if w is None else mnp.asarray(w),
                       minlength=minlength)
    want = np.bincount(x, w, minlength=minlength)
    dt = F32 if weighted else I32
    assert_close(got, want.astype(dt), dt)


def test_bincount_length_traces_and_errors():
    x = np.array([1, 1, 4, -2, 9], np.int32)
    closed = mt.make_jaxpr(lambda v: mnp.bincount(v, length=5))(x)
    # negatives count in bin 0 and values past `length` are dropped (JAX's rules)
    assert_close(closed(x)[0], np.array([1, 2, 0, 0, 1], np.int32), I32)
    with pytest.raises(TypeError, match="integer array"):
        mnp.bincount(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="must be 1-D"):
        mnp.bincount(np.ones((2, 2), np.int32))


@given(data=st.data())
def test_histogram(data):
    x = data.draw(arrays(F32, shapes(max_dims=2), min_value=-10, max_value=10))
    mode = data.draw(st.sampled_from(["int", "edges", "range"]))
    weighted = data.draw(st.booleans())
    density = data.draw(st.booleans()) and x.size > 0
    w = data.draw(arrays(F32, x.shape, min_value=0.5, max_value=2)) if weighted else None
    if mode == "edges":
        bins = np.unique(data.draw(arrays(F32, (data.draw(st.integers(2, 5)),),
                                          min_value=-12, max_value=12)))
        if bins.size < 2:
            bins = np.array([-1.0, 1.0], F32)
        kw = dict(bins=bins)
    else:
        kw = dict(bins=data.draw(st.integers(1, 6)))
        if mode == "range":
            kw["range"] = (-5.0, 5.0)
    got_h, got_e = mnp.histogram(mnp.asarray(x), weights=None if w is None else
                                 mnp.asarray(w), density=density, **kw)
    want_e = np.histogram_bin_edges(x, bins=kw["bins"], range=kw.get("range"))
    assert_close(got_e, want_e.astype(F32), F32, rtol=1e-6, atol=1e-5)
    # counts against NumPy with the same (float32) edges: edge placement is then exact
    with np.errstate(all="ignore"):  # NumPy's density divides by zero for empty data
        want_h, _ = np.histogram(x, bins=np.asarray(got_e), weights=w, density=density)
    assert_close(got_h, want_h.astype(F32), F32, atol=1e-5)  # float counts, as JAX's


def test_histogram_traces():
    x = np.array([0.5, 1.5, 1.5, 3.0, -4.0], F32)
    closed = mt.make_jaxpr(lambda v: mnp.histogram(v, bins=3))(x)
    h, e = closed(x)
    want_h, want_e = np.histogram(x, bins=3)
    assert_close(h, want_h.astype(F32), F32)
    assert_close(e, want_e.astype(F32), F32)
    with pytest.raises(ValueError, match="max must be larger than min"):
        mnp.histogram(x, bins=3, range=(2.0, 1.0))


def test_select():
    x = np.arange(6, dtype=np.int32)
    got = mnp.select([x < 2, x > 4], [x, x * 10.0], default=-1)
    want = np.select([x < 2, x > 4], [x, x * 10.0], default=-1)
    assert_close(got, want.astype(F32), F32)
    with pytest.raises(ValueError, match="same length"):
        mnp.select([x < 2], [x, x])
    with pytest.raises(TypeError, match="must be bool"):
        mnp.select([x], [x])


# ---- every function traces --------------------------------------------------------------
XS = np.array([[3.0, np.nan, 1.0, 1.0], [0.0, -2.0, 5.0, 2.0]], F32)
TRACED = [
    ("sort", lambda x: mnp.sort(x, axis=0, descending=True)),
    ("argsort", lambda x: mnp.argsort(x, axis=1)),
    ("sort_complex", lambda x: mnp.sort_complex(x * 1j + x[::-1])),
    ("lexsort", lambda x: mnp.lexsort([x[0], x[1]])),
    ("partition", lambda x: mnp.partition(x, 1)),
    ("argpartition", lambda x: mnp.argpartition(x, -1, axis=0)),
    ("searchsorted", lambda x: mnp.searchsorted(mnp.sort(x[1]), x, side="right")),
    ("unique", lambda x: mnp.unique(x, size=8, return_counts=True)),
    ("nonzero", lambda x: mnp.nonzero(x, size=3)),
    ("argwhere", lambda x: mnp.argwhere(x, size=3)),
    ("flatnonzero", lambda x: mnp.flatnonzero(x, size=9, fill_value=-1)),
    ("bincount", lambda x: mnp.bincount(mnp.argsort(x[0]), weights=x[1], length=4)),
    ("digitize", lambda x: mnp.digitize(x, mnp.asarray([0.0, 1.0, 2.5], F32))),
    ("histogram", lambda x: mnp.histogram(x, bins=4, range=(-2.0, 5.0))),
    ("histogram_bin_edges", lambda x: mnp.histogram_bin_edges(x[1], bins=3)),
    ("select", lambda x: mnp.select([x > 1.0, x < 0.0], [x, -x])),
]


@pytest.mark.parametrize("name,fn", TRACED, ids=[t[0] for t in TRACED])
def test_traced_matches_eager(name, fn):
    closed = mt.make_jaxpr(fn)(XS)
    traced = closed(XS)
    eager = fn(mnp.asarray(XS))
    eager = eager if isinstance(eager, tuple) else (eager,)
    for t, e in zip(traced, eager, strict=True):
        assert_close(t, np.asarray(e), e.dtype)


def test_every_function_is_traced():
    from mytorch.numpy import sorting

    assert set(sorting.__all__) <= {t[0] for t in TRACED}
