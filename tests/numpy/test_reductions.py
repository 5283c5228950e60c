"""mytorch.numpy reductions, statistics, quantiles and cumulative ops against NumPy.

Expected dtypes follow JAX's rules, written out here: sums and products of bool and narrow
ints give int32 (uint32 for narrow unsigned ints), float16/bfloat16 keep their dtype,
mean/var/std/quantile of integers give float32. References are computed by NumPy in
float64 (integers in int64) and cast to the expected dtype.
"""

import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from tests.strategies import TOL, arrays, assert_close, axes, axis_tuples, shapes

BOOL = np.dtype(np.bool_)
I8, U8, I32, U32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.uint32))
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
FL = [F32, F16, BF16]
IN = [I8, U8, I32]
ALL = [BOOL] + IN + FL


def _is_float(d):
    return d in (F16, F32, BF16, F64)


def sum_dtype(d):
    if d == BOOL:
        return I32
    if d in (I8,):
        return I32
    if d == U8:
        return U32
    return d


def same(d):
    return d


def inexact(d):
    return d if _is_float(d) else F32


def as_int32(d):
    return I32


def as_bool(d):
    return BOOL


def f64(x):
    """The NumPy input for a reference: floats in float64, ints in int64, bools as is."""
    x = np.asarray(x)
    if _is_float(x.dtype):
        return x.astype(F64)
    if x.dtype.kind in "iu":
        return x.astype(np.int64) if x.dtype.kind == "i" else x.astype(np.uint64)
    return x


def ref_cast(r, dtype):
    with np.errstate(all="ignore"):
        return np.asarray(r).astype(dtype)


def quiet(fn, *args, **kw):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


@st.composite
def axis_args(draw, ndim):
    """axis: None, an int (maybe negative) or a tuple of axes."""
    return draw(st.one_of(axes(ndim), axis_tuples(ndim)))


def rax(x, ax):
    """The reference's axis: NumPy's mean/var/median reject axis 0 of a 0-d array, which
    mytorch (like NumPy's ufunc reductions) takes to mean the whole array."""
    return None if np.ndim(x) == 0 else ax


def _scale(x, power=1):
    """A scale for absolute tolerances: accumulated rounding grows with the magnitudes."""
    x = f64(x).astype(F64)
    finite = x[np.isfinite(x)]
    return max(1.0, float(np.abs(finite).sum()) ** power if finite.size else 1.0)


# name, mnp fn, NumPy fn, dtypes, result dtype rule, value bounds, tolerance power
ROWS = [
    ("sum", mnp.sum, np.sum, ALL, sum_dtype, 10, 1),
    ("prod", mnp.prod, np.prod, ALL, sum_dtype, 1.15, 0),
    ("mean", mnp.mean, np.mean, ALL, inexact, 1000, 1),
    ("var", mnp.var, np.var, ALL, inexact, 30, 2),
    ("std", mnp.std, np.std, ALL, inexact, 30, 1),
    ("max", mnp.max, np.max, ALL, same, 1000, 0),
    ("min", mnp.min, np.min, ALL, same, 1000, 0),
    ("amax", mnp.amax, np.amax, ALL, same, 1000, 0),
    ("all", mnp.all, np.all, ALL, as_bool, 3, 0),
    ("any", mnp.any, np.any, ALL, as_bool, 3, 0),
    ("ptp", mnp.ptp, np.ptp, IN + FL, same, 1000, 0),
    ("count_nonzero", mnp.count_nonzero, np.count_nonzero, ALL, as_int32, 3, 0),
    ("nansum", mnp.nansum, np.nansum, ALL, sum_dtype, 10, 1),
    ("nanprod", mnp.nanprod, np.nanprod, ALL, sum_dtype, 1.15, 0),
    ("nanmean", mnp.nanmean, np.nanmean, ALL, inexact, 1000, 1),
    ("nanvar", mnp.nanvar, np.nanvar, ALL, inexact, 30, 2),
    ("nanstd", mnp.nanstd, np.nanstd, ALL, inexact, 30, 1),
    ("nanmax", mnp.nanmax, np.nanmax, ALL, same, 1000, 0),
    ("nanmin", mnp.nanmin, np.nanmin, ALL, same, 1000, 0),
]
_IDS = [r[0] for r in ROWS]
_INF_OK = {"nansum", "nanmax", "nanmin", "nanmean"}  # inf reaches the result exactly
_NEEDS_NONEMPTY = {"max", "min", "amax", "ptp", "nanmax", "nanmin"}


def _draw_input(data, row, allow_nan=None):
    name, _, _, dts, _, bound, _ = row
    dt = data.draw(st.sampled_from(dts), label="dtype")
    max_side = 4 if name in ("prod", "nanprod") else 5
    shape = data.draw(shapes(max_dims=3 if "prod" in name else 4, max_side=max_side),
                      label="shape")
    nan = name.startswith("nan") if allow_nan is None else allow_nan
    x = data.draw(arrays(dt, shape, min_value=-bound, max_value=bound, allow_nan=nan,
                         allow_inf=nan and name in _INF_OK), label="x")
    return dt, x


@pytest.mark.parametrize("row", ROWS, ids=_IDS)
@given(data=st.data())
def test_reduction_matches_numpy(row, data):
    name, fn, ref, _, rule, _, power = row
    dt, x = _draw_input(data, row)
    ax = data.draw(axis_args(x.ndim), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    ax_t = tuple(range(x.ndim)) if rax(x, ax) is None else (
        (ax,) if isinstance(ax, int) else ax)
    if name in _NEEDS_NONEMPTY and any(x.shape[a] == 0 for a in ax_t):
        with pytest.raises(ValueError, match="zero-size array to reduction"):
            fn(mnp.asarray(x), axis=ax, keepdims=keepdims)
        return
    got = fn(mnp.asarray(x), axis=ax, keepdims=keepdims)
    want_dt = rule(dt)
    xin = f64(x)
    if name in ("ptp",) and dt.kind == "u":
        expected = ref_cast(np.ptp(x, axis=ax, keepdims=keepdims), want_dt)
    else:
        expected = ref_cast(quiet(ref, xin, axis=rax(x, ax), keepdims=keepdims), want_dt)
    tol = TOL.get(want_dt, {})
    atol = tol.get("atol", 0) * (_scale(x, power) if power else 1)
    if name in ("var", "std", "nanvar", "nanstd"):
        atol = max(atol, tol.get("atol", 0) * _scale(x, 1) ** power)
    assert_close(got, expected, want_dt, **({"atol": atol} if tol else {}))


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std", "all", "any",
                                  "count_nonzero", "nansum", "nanmean"])
@given(data=st.data())
def test_reduction_where(name, data):
    dt = data.draw(st.sampled_from([F32, I32, BOOL, F16]))
    shape = data.draw(shapes(min_dims=1, max_dims=3))
    x = data.draw(arrays(dt, shape, min_value=-3, max_value=3))
    wshape = data.draw(st.sampled_from([shape, shape[1:], ()]))
    w = data.draw(arrays(BOOL, wshape))
    ax = data.draw(axis_args(x.ndim))
    fn, ref = getattr(mnp, name), getattr(np, name)
    if name == "count_nonzero":
        return  # no where= in NumPy's count_nonzero
    got = fn(mnp.asarray(x), axis=ax, where=mnp.asarray(w))
    expected = quiet(ref, f64(x), axis=ax, where=w)
    rule = {"sum": sum_dtype, "prod": sum_dtype, "nansum": sum_dtype, "all": as_bool,
            "any": as_bool}.get(name, inexact)
    assert_close(got, ref_cast(expected, rule(dt)), rule(dt), atol=0.05 if dt == F16 else 1e-4)


@given(data=st.data())
def test_max_min_initial_and_where(data):
    dt = data.draw(st.sampled_from([F32, I32, U8, BOOL, BF16]))
    shape = data.draw(shapes(max_dims=3))
    x = data.draw(arrays(dt, shape, min_value=0, max_value=50))
    w = data.draw(arrays(BOOL, shape))
    ax = data.draw(axis_args(x.ndim))
    init = True if dt == BOOL else 7
    for fn, ref in ((mnp.max, np.max), (mnp.min, np.min)):
        got = fn(mnp.asarray(x), axis=ax, initial=init, where=mnp.asarray(w))
        want = ref(f64(x), axis=ax, initial=init, where=w)
        assert_close(got, ref_cast(want, dt), dt)
        got = fn(mnp.asarray(x), axis=ax, initial=init)
        assert_close(got, ref_cast(ref(f64(x), axis=ax, initial=init), dt), dt)


def test_sum_prod_initial_and_dtype():
    x = np.arange(1, 7, dtype=np.int8).reshape(2, 3)
    assert_close(mnp.sum(x, initial=10), np.int32(31), I32)
    assert_close(mnp.prod(x, axis=1, initial=2), np.array([12, 240], np.int32), I32)
    assert_close(mnp.sum(x, dtype=np.float16), np.float16(21), F16)
    assert_close(mnp.sum(x, promote_integers=False), np.int8(21), I8)
    assert_close(mnp.sum(x.astype(bool), dtype=bool), np.True_, BOOL)
    assert_close(mnp.mean(x, axis=0, dtype=np.float16), np.array([2.5, 3.5, 4.5], F16), F16)
    # float16 sums accumulate in float32: 4096 ones is exact although 2049 is not in f16
    assert_close(mnp.sum(np.ones(4097, F16)), np.float16(4096), F16)
    assert_close(mnp.mean(np.full(3000, 1000.0, F16)), np.float16(1000), F16)


def test_weak_types():
    assert mnp.sum(2.0).weak_type and mnp.sum(2.0).dtype == F32
    assert mnp.sum(2).dtype == I32
    assert not mnp.sum(np.float32(2)).weak_type
    assert mnp.argmax(mnp.asarray([1.0, 2.0])).dtype == I32


@pytest.mark.parametrize("name", ["var", "std", "nanvar", "nanstd"])
@given(data=st.data())
def test_var_ddof(name, data):
    dt = data.draw(st.sampled_from([F32, I32, F16]))
    x = data.draw(arrays(dt, shapes(min_dims=1, max_dims=3), min_value=-20, max_value=20,
                         allow_nan=name.startswith("nan")))
    ax = data.draw(axis_args(x.ndim))
    ddof = data.draw(st.integers(0, 3))
    fn, ref = getattr(mnp, name), getattr(np, name)
    out_size = np.asarray(np.sum(np.ones(x.shape), axis=rax(x, ax))).size
    n = x.size // out_size if out_size else 0  # elements per reduced slice
    if not name.startswith("nan") and n <= ddof:
        # N - ddof <= 0 divides by zero: 0/0 or rounding residue/0, NaN or inf either way
        got = np.asarray(fn(mnp.asarray(x), axis=ax, ddof=ddof), np.float64)
        assert not np.isfinite(got).any()
        return
    want = ref_cast(quiet(ref, f64(x), axis=rax(x, ax), ddof=ddof), inexact(dt))
    got = fn(mnp.asarray(x), axis=ax, ddof=ddof)
    assert_close(got, want, inexact(dt), atol=0.05 if dt == F16 else 2e-3)
    got = fn(mnp.asarray(x), axis=ax, correction=ddof)
    assert_close(got, want, inexact(dt), atol=0.05 if dt == F16 else 2e-3)


def test_var_mean_argument_and_errors():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    mu = np.mean(x, axis=1, keepdims=True)
    assert_close(mnp.var(x, axis=1, mean=mu), np.var(x, axis=1), F32)
    with pytest.raises(ValueError, match="ddof and correction"):
        mnp.var(x, ddof=1, correction=1)


@pytest.mark.parametrize("name", ["argmax", "argmin", "nanargmax", "nanargmin"])
@given(data=st.data())
def test_argmax_argmin(name, data):
    dt = data.draw(st.sampled_from(ALL))
    shape = data.draw(shapes(min_dims=0, max_dims=3, min_side=1))
    nan = dt.kind == "f" or dt == BF16
    x = data.draw(arrays(dt, shape, elements=st.sampled_from([0, 1, 2]) if not nan else
                         st.sampled_from([0.0, 1.0, -1.0, np.nan, np.inf]))
                  if dt != BOOL else arrays(dt, shape))
    ax = data.draw(axes(x.ndim))
    keepdims = data.draw(st.booleans())
    fn, ref = getattr(mnp, name), getattr(np, name)
    if name.startswith("nan") and nan:
        all_nan = np.all(np.isnan(f64(x)), axis=ax, keepdims=keepdims)
        filled = np.where(np.isnan(f64(x)), 0.0, f64(x))
        xr = np.where(np.all(np.isnan(f64(x)), axis=ax, keepdims=True), filled, f64(x))
        want = np.where(all_nan, -1, quiet(ref, xr, axis=ax, keepdims=keepdims))
    else:
        want = ref(f64(x), axis=ax, keepdims=keepdims)
    got = fn(mnp.asarray(x), axis=ax, keepdims=keepdims)
    assert_close(got, ref_cast(want, I32), I32)


def test_nanargmax_all_nan_gives_minus_one():
    x = np.array([[np.nan, np.nan], [1.0, np.nan]], np.float32)
    assert_close(mnp.nanargmax(x, axis=1), np.array([-1, 0], np.int32), I32)
    assert_close(mnp.nanargmin(x, axis=1), np.array([-1, 0], np.int32), I32)


def test_empty_reductions():
    e = np.zeros((0, 3), np.float32)
    assert_close(mnp.sum(e, axis=0), np.zeros(3, np.float32), F32)
    assert_close(mnp.prod(e, axis=0), np.ones(3, np.float32), F32)
    assert_close(mnp.max(e, axis=1), np.zeros(0, np.float32), F32)
    assert_close(mnp.max(e, axis=0, initial=-1.0), np.full(3, -1.0, np.float32), F32)
    assert np.isnan(np.asarray(mnp.mean(e)))
    assert_close(mnp.all(e), np.True_, BOOL)
    assert_close(mnp.any(e), np.False_, BOOL)


def test_reduction_errors():
    x = mnp.asarray(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"sum: axis 3 is out of bounds for f32\[2,3\]"):
        mnp.sum(x, axis=3)
    with pytest.raises(ValueError, match="repeats an axis"):
        mnp.mean(x, axis=(0, -2))
    with pytest.raises(TypeError, match="axis must be None, an int or a tuple"):
        mnp.sum(x, axis=1.5)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        mnp.max(np.zeros((3, 0), np.float32), axis=1)
    with pytest.raises(ValueError, match="zero-size array to reduction operation minimum"):
        mnp.min(np.zeros(0, np.int32))
    with pytest.raises(ValueError, match="does not have an identity.*initial"):
        mnp.max(x, where=np.ones((2, 3), bool))
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        mnp.argmax(np.zeros((2, 0)), axis=1)
    with pytest.raises(TypeError, match="where= must be a bool array"):
        mnp.sum(x, where=np.ones((2, 3), np.int32))
    with pytest.raises(ValueError, match="where= of shape"):
        mnp.sum(x, where=np.ones((3, 2), bool))
    with pytest.raises(TypeError, match="ptp: a bool array"):
        mnp.ptp(np.ones(3, bool))
    with pytest.raises(ValueError, match="out= is not supported"):
        mnp.sum(x, out=x)
    with pytest.raises(ValueError, match="initial= must be a scalar"):
        mnp.sum(x, initial=np.ones(2))


# ---- cumulative ---------------------------------------------------------------------------
def cum_dtype(d):
    """JAX's cumsum/cumprod keep narrow ints (they wrap); bool counts in int32."""
    return I32 if d == BOOL else d


CUM = [("cumsum", cum_dtype), ("cumprod", cum_dtype), ("nancumsum", cum_dtype),
       ("nancumprod", cum_dtype)]


@pytest.mark.parametrize("name,rule", CUM, ids=[c[0] for c in CUM])
@given(data=st.data())
def test_cumulative(name, rule, data):
    dt = data.draw(st.sampled_from(ALL))
    prod = "prod" in name
    shape = data.draw(shapes(max_dims=3, max_side=4 if prod else 5))
    bound = 1.15 if prod else 10
    x = data.draw(arrays(dt, shape, min_value=-bound, max_value=bound,
                         allow_nan=name.startswith("nan")))
    ax = data.draw(axes(x.ndim))
    got = getattr(mnp, name)(mnp.asarray(x), axis=ax)
    want = ref_cast(quiet(getattr(np, name), f64(x), axis=ax), rule(dt))
    assert_close(got, want, rule(dt), atol=TOL.get(rule(dt), {}).get("atol", 0) * 100)


@given(data=st.data())
def test_cumulative_sum_prod(data):
    dt = data.draw(st.sampled_from([F32, I8, BOOL]))
    x = data.draw(arrays(dt, shapes(min_dims=1, max_dims=3, max_side=4), min_value=-3,
                         max_value=3))
    ax = data.draw(axes(x.ndim, allow_none=x.ndim == 1))
    inc = data.draw(st.booleans())
    # JAX: cumulative_sum widens narrow ints as sum does; cumulative_prod keeps them
    for name, rule in (("cumulative_sum", sum_dtype), ("cumulative_prod", cum_dtype)):
        got = getattr(mnp, name)(mnp.asarray(x), axis=ax, include_initial=inc)
        want = getattr(np, name)(f64(x), axis=ax, include_initial=inc)
        assert_close(got, ref_cast(want, rule(dt)), rule(dt))


def test_cumulative_errors():
    with pytest.raises(ValueError, match="axis is required"):
        mnp.cumulative_sum(np.ones((2, 2)))
    with pytest.raises(ValueError, match="cumsum: axis 2 is out of bounds"):
        mnp.cumsum(np.ones((2, 2)), axis=2)
    assert_close(mnp.cumsum(np.float32(3)), np.array([3.0], np.float32), F32)


# ---- diff, ediff1d, trapezoid, average -------------------------------------------------------
@given(data=st.data())
def test_diff(data):
    dt = data.draw(st.sampled_from([F32, I32, U8, BOOL, F16]))
    x = data.draw(arrays(dt, shapes(min_dims=1, max_dims=3), min_value=0, max_value=100))
    ax = data.draw(axes(x.ndim, allow_none=False))
    n = data.draw(st.integers(0, 3))
    kw = {}
    if data.draw(st.booleans()):
        kw["prepend"] = 1 if dt != BOOL else True
    if data.draw(st.booleans()):
        edge_shape = list(x.shape)
        edge_shape[ax] = 2
        kw["append"] = data.draw(arrays(dt, tuple(edge_shape), min_value=0, max_value=100))
    got = mnp.diff(mnp.asarray(x), n=n, axis=ax,
                   **{k: (mnp.asarray(v) if isinstance(v, np.ndarray) else v)
                      for k, v in kw.items()})
    with np.errstate(all="ignore"):  # a Python scalar is weak: it takes x's dtype
        want = np.diff(x, n=n, axis=ax, **{k: np.asarray(v, dt) for k, v in kw.items()})
    assert_close(got, want.astype(dt), dt)


def test_diff_errors_and_ediff1d():
    with pytest.raises(ValueError, match="at least one dimensional"):
        mnp.diff(np.float32(1))
    with pytest.raises(ValueError, match="order must be non-negative"):
        mnp.diff(np.ones(3), n=-1)
    x = np.array([[1, 4], [9, 16]], np.int32)
    assert_close(mnp.ediff1d(x), np.ediff1d(x), I32)
    assert_close(mnp.ediff1d(x, to_end=[7, 8], to_begin=-1),
                 np.ediff1d(x, to_end=[7, 8], to_begin=-1), I32)
    assert_close(mnp.ediff1d(np.zeros(0, np.float32), to_begin=2.0), np.array([2.0], F32), F32)


@given(data=st.data())
def test_trapezoid(data):
    dt = data.draw(st.sampled_from([F32, I32]))
    y = data.draw(arrays(dt, shapes(min_dims=1, max_dims=3), min_value=-50, max_value=50))
    ax = data.draw(axes(y.ndim, allow_none=False))
    mode = data.draw(st.sampled_from(["dx", "x1d", "xfull"]))
    if mode == "dx":
        dx = data.draw(st.sampled_from([1.0, 0.5, 2.0]))
        got, want = mnp.trapezoid(y, dx=dx, axis=ax), np.trapezoid(f64(y), dx=dx, axis=ax)
    else:
        xs = np.sort(data.draw(arrays(F32, (y.shape[ax],), min_value=-5, max_value=5)))
        if mode == "xfull":
            shape = [1] * y.ndim
            shape[ax] = -1
            xs = np.broadcast_to(xs.reshape(shape), y.shape).copy()
        got = mnp.trapezoid(y, mnp.asarray(xs), axis=ax)
        want = np.trapezoid(f64(y), f64(xs), axis=ax)
    assert_close(got, ref_cast(want, F32), F32, atol=1e-3)


@given(data=st.data())
def test_average(data):
    dt = data.draw(st.sampled_from([F32, I32, F16]))
    x = data.draw(arrays(dt, shapes(min_dims=1, max_dims=3, min_side=1), min_value=-20,
                         max_value=20))
    mode = data.draw(st.sampled_from(["none", "full", "1d"]))
    returned = data.draw(st.booleans())
    keepdims = data.draw(st.booleans())
    if mode == "none":
        ax = data.draw(axis_args(x.ndim))
        w = None
    elif mode == "full":
        ax = data.draw(axis_args(x.ndim))
        w = data.draw(arrays(F32, x.shape, min_value=0.5, max_value=3))
    else:
        ax = data.draw(axes(x.ndim, allow_none=False))
        w = data.draw(arrays(F32, (x.shape[ax],), min_value=0.5, max_value=3))
    got = mnp.average(mnp.asarray(x), axis=ax, weights=None if w is None else mnp.asarray(w),
                      returned=returned, keepdims=keepdims)
    want = np.average(f64(x), axis=rax(x, ax), weights=None if w is None else f64(w),
                      returned=returned, keepdims=keepdims)
    out_dt = inexact(dt) if w is None else (F32 if dt != F16 else F32)
    tol = dict(atol=0.05, rtol=2e-3) if out_dt == F16 else dict(atol=1e-4)
    if returned:
        assert_close(got[0], ref_cast(want[0], out_dt), out_dt, **tol)
        assert_close(got[1], ref_cast(want[1], out_dt), out_dt, **tol)
    else:
        assert_close(got, ref_cast(want, out_dt), out_dt, **tol)


def test_average_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="axis must be specified"):
        mnp.average(x, weights=np.ones(3, np.float32))
    with pytest.raises(ValueError, match="must be consistent"):
        mnp.average(x, axis=1, weights=np.ones(2, np.float32))


# ---- quantiles ----------------------------------------------------------------------------
METHODS = ["linear", "lower", "higher", "nearest", "midpoint"]
Q_VALUES = st.sampled_from([0.0, 0.1, 0.25, 0.3, 0.5, 0.6, 0.75, 0.9, 1.0, 1 / 3])


@given(data=st.data())
def test_quantile(data):
    dt = data.draw(st.sampled_from([F32, I32, F16, U8, BF16]))
    x = data.draw(arrays(dt, shapes(max_dims=3, min_side=1), min_value=0, max_value=100,
                         allow_nan=_is_float(dt) and data.draw(st.booleans())))
    ax = data.draw(axis_args(x.ndim))
    method = data.draw(st.sampled_from(METHODS))
    keepdims = data.draw(st.booleans())
    q = data.draw(st.one_of(Q_VALUES, st.lists(Q_VALUES, max_size=3).map(np.array)))
    got = mnp.quantile(mnp.asarray(x), q, axis=ax, method=method, keepdims=keepdims)
    want = quiet(np.quantile, f64(x), q, axis=rax(x, ax), method=method, keepdims=keepdims)
    out = inexact(dt)
    assert_close(got, ref_cast(want, out), out, atol=2 * TOL[out]["atol"] * 100)
    # percentile of the same (NumPy's percentile as reference: q * 100 / 100 can round
    # across an index boundary, e.g. q = 1/3 with method="lower"), and q as an array
    got = mnp.percentile(mnp.asarray(x), np.asarray(q) * 100, axis=ax, method=method,
                         keepdims=keepdims)
    want_p = quiet(np.percentile, f64(x), np.asarray(q) * 100, axis=rax(x, ax),
                   method=method, keepdims=keepdims)
    assert_close(got, ref_cast(want_p, out), out, atol=2 * TOL[out]["atol"] * 100)
    if dt == F32:
        got = mnp.quantile(mnp.asarray(x), mnp.asarray(np.asarray(q, np.float32)), axis=ax,
                           method=method, keepdims=keepdims)
        assert_close(got, ref_cast(want, out), out, atol=1e-4)


@given(data=st.data())
def test_median(data):
    dt = data.draw(st.sampled_from([F32, I32, F16]))
    x = data.draw(arrays(dt, shapes(max_dims=3, min_side=1), min_value=-100, max_value=100,
                         allow_nan=dt != I32 and data.draw(st.booleans())))
    ax = data.draw(axis_args(x.ndim))
    keepdims = data.draw(st.booleans())
    got = mnp.median(mnp.asarray(x), axis=ax, keepdims=keepdims)
    want = quiet(np.median, f64(x), axis=rax(x, ax), keepdims=keepdims)
    assert_close(got, ref_cast(want, inexact(dt)), inexact(dt))


@pytest.mark.parametrize("name", ["nanquantile", "nanpercentile", "nanmedian"])
@given(data=st.data())
def test_nan_quantiles(name, data):
    x = data.draw(arrays(F32, shapes(max_dims=3, min_side=1), min_value=-100, max_value=100,
                         allow_nan=True, allow_inf=False))
    ax = data.draw(axis_args(x.ndim))
    keepdims = data.draw(st.booleans())
    kw = dict(axis=rax(x, ax), keepdims=keepdims)
    if name != "nanmedian":
        kw["method"] = data.draw(st.sampled_from(METHODS))
        q = data.draw(Q_VALUES)
        args = (q * 100 if name == "nanpercentile" else q,)
    else:
        args = ()
    want = quiet(getattr(np, name), f64(x), *args, **kw)
    got = getattr(mnp, name)(mnp.asarray(x), *args, **{**kw, "axis": ax})
    assert_close(got, ref_cast(want, F32), F32, atol=1e-4)


# q values NumPy's float64 index arithmetic must round exactly: k/m (1/3, 2/3, 1/7, ...: not
# exactly representable) and arbitrary floats
FRACTIONS = st.builds(lambda k, m: min(k, m) / m, st.integers(0, 12), st.integers(1, 12))
ANY_Q = st.one_of(FRACTIONS, st.floats(0, 1))


def test_quantile_index_rounding_example():
    """q = 1/3 of 4 values: the index (n - 1) q is 1 in float64 arithmetic (NumPy: 1)."""
    x = np.array([0, 1, 1, 1], F32)
    for method in METHODS:
        assert float(mnp.quantile(x, 1 / 3, method=method)) == 1.0
        assert float(mnp.quantile(x, [1 / 3, 2 / 3], method=method)[1]) == 1.0
    assert float(mnp.quantile(np.arange(4, dtype=F32), 2 / 3, method="lower")) == 2.0
    # percentile divides by 100 first, as NumPy: 100/3 / 100 * 3 rounds up to exactly 1
    assert float(mnp.percentile(np.arange(4, dtype=F32), 100 / 3, method="lower")) == 1.0
    assert float(mnp.percentile(x, np.float64(1 / 3) * 100, method="lower")) == 0.0


@given(n=st.integers(1, 40), qs=st.lists(ANY_Q, min_size=1, max_size=4),
       method=st.sampled_from(METHODS), seed=st.integers(0, 9))
def test_quantile_index_rounding_matches_numpy(n, qs, method, seed):
    """Every method at many q, against NumPy's quantile, percentile and nanquantile (whose
    index depends on each row's count of numbers)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, size=(2, n)).astype(F32)
    q = np.array(qs)
    assert_close(mnp.quantile(x, q, axis=1, method=method),
                 np.quantile(x.astype(F64), q, axis=1, method=method).astype(F32), F32,
                 rtol=0, atol=1e-5)
    p = q * 100
    assert_close(mnp.percentile(x, p, axis=1, method=method),
                 np.percentile(x.astype(F64), p, axis=1, method=method).astype(F32), F32,
                 rtol=0, atol=1e-5)
    xn = np.where(rng.random(x.shape) < 0.3, np.nan, x).astype(F32)
    want = quiet(np.nanquantile, xn.astype(F64), q, axis=1, method=method)
    assert_close(mnp.nanquantile(xn, q, axis=1, method=method), want.astype(F32), F32,
                 rtol=0, atol=1e-5)


@given(n=st.integers(1, 40), qs=st.lists(ANY_Q, min_size=1, max_size=4),
       method=st.sampled_from(["lower", "higher", "nearest"]))
def test_traced_quantile_index_in_float32(n, qs, method):
    """A traced q is a float32 array: the index is (n - 1) * q rounded to float32 (as JAX
    computes it), then floored, ceiled or rounded half to even."""
    q32 = np.array(qs, F32)
    virtual = (np.float32(n - 1) * q32).astype(F32)
    want = {"lower": np.floor, "higher": np.ceil, "nearest": np.rint}[method](virtual)
    got = mt.jit(lambda v, q: mnp.quantile(v, q, method=method))(np.arange(n, dtype=F32), q32)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_quantile_special_values_and_errors():
    assert_close(mnp.quantile(np.array([1.0, np.nan, 3.0], F32), 0.0), np.float32(np.nan), F32)
    assert_close(mnp.median(np.zeros(0, F32)), np.float32(np.nan), F32)
    for v in ([np.inf, np.inf], [-np.inf, 1.0, 2.0], [1.0, np.inf]):  # NumPy's lerp with inf
        v = np.array(v, F32)
        assert_close(mnp.quantile(v, [0.0, 0.25, 0.5, 1.0]),
                     quiet(np.quantile, v, [0.0, 0.25, 0.5, 1.0]), F32)
    with pytest.raises(ValueError, match=r"quantiles must be in the range \[0, 1\]"):
        mnp.quantile(np.ones(3), 1.5)
    with pytest.raises(ValueError, match=r"percentiles must be in the range \[0, 100\]"):
        mnp.percentile(np.ones(3), -1)
    with pytest.raises(ValueError, match="method must be one of"):
        mnp.quantile(np.ones(3), 0.5, method="weibull")
    with pytest.raises(ValueError, match="q must be a scalar or 1-D"):
        mnp.quantile(np.ones(3), np.full((2, 2), 0.5))


# ---- tracing -----------------------------------------------------------------------------
X = np.array([[3.0, -1.0, 2.5, np.nan], [0.5, 4.0, -2.0, 1.0], [7.0, 7.0, 0.0, -3.0]], F32)
XN = np.nan_to_num(X)
TRACED = [
    ("sum", lambda x: mnp.sum(x, axis=1, where=x > 0), XN),
    ("prod", lambda x: mnp.prod(x, axis=0, keepdims=True), XN),
    ("mean", lambda x: mnp.mean(x, axis=(0, 1)), XN),
    ("var", lambda x: mnp.var(x, axis=1, ddof=1), XN),
    ("std", lambda x: mnp.std(x, axis=-1, where=x > 0), XN),
    ("max", lambda x: mnp.max(x, axis=0, initial=1.0), XN),
    ("min", lambda x: mnp.min(x, axis=1), XN),
    ("argmax", lambda x: mnp.argmax(x, axis=1, keepdims=True), X),
    ("argmin", lambda x: mnp.argmin(x), X),
    ("all", lambda x: mnp.all(x > -5, axis=0), XN),
    ("any", lambda x: mnp.any(x, axis=0), XN),
    ("ptp", lambda x: mnp.ptp(x, axis=1), XN),
    ("count_nonzero", lambda x: mnp.count_nonzero(x, axis=1), XN),
    ("average", lambda x: mnp.average(x, axis=1, weights=mnp.abs(x) + 1.0), XN),
    ("median", lambda x: mnp.median(x, axis=0), X),
    ("quantile", lambda x: mnp.quantile(x, mnp.asarray([0.2, 0.9], F32), axis=1), XN),
    ("percentile", lambda x: mnp.percentile(x, 40, axis=1, method="nearest"), XN),
    ("nanmedian", lambda x: mnp.nanmedian(x, axis=1), X),
    ("nanquantile", lambda x: mnp.nanquantile(x, 0.3, axis=1, method="lower"), X),
    ("nanpercentile", lambda x: mnp.nanpercentile(x, [10, 90]), X),
    ("nansum", lambda x: mnp.nansum(x, axis=1), X),
    ("nanprod", lambda x: mnp.nanprod(x, axis=1), X),
    ("nanmean", lambda x: mnp.nanmean(x, axis=1), X),
    ("nanvar", lambda x: mnp.nanvar(x, axis=0), X),
    ("nanstd", lambda x: mnp.nanstd(x), X),
    ("nanmax", lambda x: mnp.nanmax(x, axis=1), X),
    ("nanmin", lambda x: mnp.nanmin(x, axis=0), X),
    ("nanargmax", lambda x: mnp.nanargmax(x, axis=1), X),
    ("nanargmin", lambda x: mnp.nanargmin(x, axis=1), X),
    ("cumsum", lambda x: mnp.cumsum(x, axis=1), XN),
    ("cumprod", lambda x: mnp.cumprod(x), XN),
    ("nancumsum", lambda x: mnp.nancumsum(x, axis=0), X),
    ("nancumprod", lambda x: mnp.nancumprod(x, axis=1), X),
    ("cumulative_sum", lambda x: mnp.cumulative_sum(x, axis=1, include_initial=True), XN),
    ("cumulative_prod", lambda x: mnp.cumulative_prod(x, axis=0), XN),
    ("diff", lambda x: mnp.diff(x, n=2, prepend=0.0), XN),
    ("ediff1d", lambda x: mnp.ediff1d(x, to_begin=1.0), XN),
    ("trapezoid", lambda x: mnp.trapezoid(x, dx=0.5, axis=0), XN),
    ("amax", lambda x: mnp.amax(x), XN),
    ("amin", lambda x: mnp.amin(x), XN),
]


@pytest.mark.parametrize("name,fn,x", TRACED, ids=[t[0] for t in TRACED])
def test_traced_matches_eager(name, fn, x):
    closed = mt.make_jaxpr(fn)(x)
    eager = fn(mnp.asarray(x))
    assert_close(closed(x)[0], np.asarray(eager), eager.dtype)


def test_every_function_is_traced():
    from mytorch.numpy import reductions

    assert set(reductions.__all__) <= {t[0] for t in TRACED}


def test_traced_where_mask():
    def f(x, m):
        return mnp.mean(x, axis=1, where=m)

    m = np.array([[True, False, True, True], [False] * 4, [True] * 4])
    closed = mt.make_jaxpr(f)(XN, m)
    want = quiet(np.mean, XN, axis=1, where=m)
    assert_close(closed(XN, m)[0], want.astype(F32), F32)


def test_float64_with_x64(x64):
    x = np.linspace(0, 1, 11)
    assert_close(mnp.sum(x), np.sum(x), F64)
    assert_close(mnp.var(x, ddof=1), np.var(x, ddof=1), F64)
    assert_close(mnp.quantile(x, [0.33, 0.5]), np.quantile(x, [0.33, 0.5]), F64)
    assert mnp.sum(np.arange(3, dtype=np.int8)).dtype == np.int64
    assert mnp.mean(np.arange(3, dtype=np.int8)).dtype == F64
