"""vmap of the reductions and statistics of mytorch.numpy against the loop definition.

Every row of tests/numpy/test_reductions.py (sum ... nanmin) with drawn axis (None, an
int, negative, a tuple) and keepdims; where= masks batched or not; arg-reductions,
cumulative reductions, diff/ediff1d/trapezoid, average and the order statistics with
constant and traced (batched) quantiles.
"""

import functools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch.numpy as mnp
from tests.batching.numpy_vmap_util import Op, shapes_broadcasting_to, vmap_case
from tests.numpy.test_reductions import ROWS, axis_args
from tests.strategies import axes, shapes

pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")

_EPS = {"float32": 1.2e-7, "float16": 1e-3, "bfloat16": 1e-2}
_NEEDS_NONEMPTY = {"max", "min", "amax", "ptp", "nanmax", "nanmin"}


def _reduced_count(shape, ax):
    if ax is None or not shape:
        return math.prod(shape)
    return math.prod(shape[a] for a in ((ax,) if isinstance(ax, int) else ax))


def _tol(dtype, bound, power, count):
    """Rounding of a sum of `count` terms of magnitude `bound ** power` (the batched
    reduction may add in another order than the per-example one)."""
    eps = _EPS.get(str(np.dtype(dtype)), 0.0)  # exact for ints and bools
    mag = max(1.0, float(bound) ** max(power, 1))
    return {"rtol": max(4 * eps, 1e-6), "atol": 4 * eps * mag * max(count, 1) + 1e-6}


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
@settings(max_examples=5)
@given(data=st.data())
def test_reduction_rows(row, data):
    name, fn, _, dts, _, bound, power = row
    dt = data.draw(st.sampled_from(dts), label="dtype")
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    ax = data.draw(axis_args(len(shape)), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    axes_t = range(len(shape)) if ax is None else ((ax,) if isinstance(ax, int) else ax)
    if name in _NEEDS_NONEMPTY and 0 in shape and (ax is None or any(
            shape[a] == 0 for a in axes_t)):
        return  # an error per example, as the eager tests check
    nan = name.startswith("nan")
    op = Op(shape, dt, min_value=-bound, max_value=bound, allow_nan=nan)
    tol = _tol(dt, bound, power, _reduced_count(shape, ax))
    vmap_case(data, functools.partial(fn, axis=ax, keepdims=keepdims), [op], **tol)


_WHERE = ["sum", "prod", "mean", "var", "std", "all", "any", "max", "amin", "nansum",
          "nanmean", "nanvar", "nanmax"]


@pytest.mark.parametrize("name", _WHERE)
@settings(max_examples=4)
@given(data=st.data())
def test_where_masks(name, data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4), label="shape")
    mask_shape = shapes_broadcasting_to(data, shape)
    ax = data.draw(axes(len(shape)), label="axis")
    kw = {"axis": ax, "where": None}
    if name in ("max", "amin", "nanmax"):
        kw["initial"] = -3.0 if name != "amin" else 3.0

    def f(x, m):
        return getattr(mnp, name)(x, **{**kw, "where": m})

    vmap_case(data, f, [Op(shape, min_value=-2, max_value=2), Op(mask_shape, np.bool_)],
              rtol=1e-5, atol=1e-5)


@settings(max_examples=10)
@given(data=st.data())
def test_sum_prod_dtype_initial_and_methods(data):
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    ax = data.draw(axes(len(shape)), label="axis")
    dt = data.draw(st.sampled_from([np.int8, np.uint8, np.bool_]), label="dtype")
    op = Op(shape, dt, min_value=0, max_value=3)
    vmap_case(data, lambda x: mnp.sum(x, axis=ax, dtype=mnp.float32, initial=2), [op])
    vmap_case(data, lambda x: mnp.prod(x, axis=ax, dtype=mnp.int32), [op])
    vmap_case(data, lambda x: mnp.mean(x, axis=ax, dtype=mnp.float32), [op])
    # array methods reach the same functions
    x = Op(shape, np.float32, min_value=-3, max_value=3, batch=True)
    vmap_case(data, lambda x: _methods(mnp.asarray(x), ax), [x], rtol=1e-5, atol=1e-4)


def _methods(x, ax):
    """Reductions as array methods (the loop reference passes NumPy arrays: asarray)."""
    return (x.sum(axis=ax), x.mean(), x.var(axis=ax, ddof=0), x.std(), x.any(),
            x.all(axis=ax), x.prod(axis=ax), x.max(axis=ax, initial=-9.0), x.min(initial=9.0))


@settings(max_examples=8)
@given(data=st.data())
def test_var_std_ddof_and_mean(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), label="shape")
    ax = data.draw(axes(len(shape)), label="axis")
    ddof = data.draw(st.integers(0, 2), label="ddof")
    fn = data.draw(st.sampled_from([mnp.var, mnp.std, mnp.nanvar, mnp.nanstd]), label="fn")
    vmap_case(data, lambda x: fn(x, axis=ax, ddof=ddof, keepdims=True),
              [Op(shape, min_value=-5, max_value=5)], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("name", ["argmax", "argmin", "nanargmax", "nanargmin"])
@settings(max_examples=8)
@given(data=st.data())
def test_arg_reductions(name, data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), label="shape")
    ax = data.draw(axes(len(shape)), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    dt = data.draw(st.sampled_from([np.float32, np.int8, np.bool_]), label="dtype")
    # small value ranges make ties: the first index must win in both paths
    op = Op(shape, dt, min_value=-2, max_value=2, allow_nan=name.startswith("nan"))
    vmap_case(data, lambda x: getattr(mnp, name)(x, axis=ax, keepdims=keepdims), [op])
    if name in ("argmax", "argmin"):
        vmap_case(data, lambda x: getattr(mnp.asarray(x), name)(axis=ax),
                  [Op(shape, dt, batch=True)])


_CUM = ["cumsum", "cumprod", "nancumsum", "nancumprod"]


@pytest.mark.parametrize("name", _CUM)
@settings(max_examples=8)
@given(data=st.data())
def test_cumulative(name, data):
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    ax = data.draw(axes(len(shape)), label="axis")
    dt = data.draw(st.sampled_from([np.float32, np.int8, np.bool_]), label="dtype")
    op = Op(shape, dt, min_value=-2, max_value=2, allow_nan=name.startswith("nan"))
    vmap_case(data, lambda x: getattr(mnp, name)(x, axis=ax), [op], rtol=1e-5, atol=1e-4)


@settings(max_examples=10)
@given(data=st.data())
def test_cumulative_sum_prod_and_method(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4), label="shape")
    ax = data.draw(axes(len(shape), allow_none=len(shape) == 1), label="axis")
    inc = data.draw(st.booleans(), label="include_initial")
    fn = data.draw(st.sampled_from([mnp.cumulative_sum, mnp.cumulative_prod]), label="fn")
    op = Op(shape, min_value=-2, max_value=2)
    vmap_case(data, lambda x: fn(x, axis=ax, include_initial=inc), [op], atol=1e-4)
    vmap_case(data, lambda x: mnp.asarray(x).cumsum(axis=ax), [op], atol=1e-4)


@settings(max_examples=12)
@given(data=st.data())
def test_diff_with_prepend_append(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4), label="shape")
    ax = data.draw(axes(len(shape), allow_none=False), label="axis")
    n = data.draw(st.integers(0, 3), label="n")
    edge = tuple(1 if i == ax % len(shape) else d for i, d in enumerate(shape))
    dt = data.draw(st.sampled_from([np.float32, np.int32, np.bool_]), label="dtype")
    x = Op(shape, dt, min_value=-9, max_value=9)
    vmap_case(data, lambda x: mnp.diff(x, n=n, axis=ax), [x])
    vmap_case(data, lambda x, p, a: mnp.diff(x, n=n, axis=ax, prepend=p, append=a),
              [x, Op(edge, dt, min_value=-9, max_value=9), Op(edge, np.int8)])
    vmap_case(data, lambda x, p: mnp.diff(x, axis=ax, prepend=p), [x, Op((), dt)])


@settings(max_examples=10)
@given(data=st.data())
def test_ediff1d_and_trapezoid(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4), label="shape")
    ax = data.draw(axes(len(shape), allow_none=False), label="axis")
    x = Op(shape, min_value=-9, max_value=9)
    vmap_case(data, mnp.ediff1d, [x])
    vmap_case(data, lambda x, b, e: mnp.ediff1d(x, to_end=e, to_begin=b),
              [x, Op((2,)), Op((), np.int32)])
    vmap_case(data, lambda y: mnp.trapezoid(y, dx=0.5, axis=ax), [x], atol=1e-4)
    xs = Op((shape[ax],), min_value=-9, max_value=9)
    vmap_case(data, lambda y, t: mnp.trapezoid(y, t, axis=ax), [x, xs], atol=1e-3)
    vmap_case(data, lambda y, t: mnp.trapezoid(y, t, axis=ax), [x, x], atol=1e-3)


@settings(max_examples=12)
@given(data=st.data())
def test_average_weights(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4), label="shape")
    ax = data.draw(axes(len(shape), allow_none=False), label="axis")
    returned = data.draw(st.booleans(), label="returned")
    keepdims = data.draw(st.booleans(), label="keepdims")
    w_shape = data.draw(st.sampled_from([shape, (shape[ax],)]), label="w_shape")
    kw = {"axis": ax, "returned": returned, "keepdims": keepdims}
    x = Op(shape, min_value=-5, max_value=5)
    vmap_case(data, lambda x, w: mnp.average(x, weights=w, **kw),
              [x, Op(w_shape, min_value=0.5, max_value=2)], rtol=1e-5, atol=1e-5)
    vmap_case(data, lambda x: mnp.average(x, **kw), [x], atol=1e-5)


_QUANTILES = ["quantile", "percentile", "nanquantile", "nanpercentile"]


@pytest.mark.parametrize("name", _QUANTILES)
@settings(max_examples=8)
@given(data=st.data())
def test_quantiles(name, data):
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    ax = data.draw(st.one_of(axes(len(shape)), st.just(None)), label="axis")
    method = data.draw(st.sampled_from(["linear", "lower", "higher", "nearest", "midpoint"]))
    keepdims = data.draw(st.booleans(), label="keepdims")
    scale = 100 if "percentile" in name else 1
    fn = functools.partial(getattr(mnp, name), axis=ax, method=method, keepdims=keepdims)
    x = Op(shape, min_value=-9, max_value=9, allow_nan=name.startswith("nan"))
    q_static = data.draw(st.sampled_from([0.5, [0.0, 0.3, 1.0], 0.25]), label="q")
    q_static = np.asarray(q_static) * scale
    vmap_case(data, lambda x: fn(x, q_static), [x], atol=1e-5)
    # traced quantiles, batched or not
    q_shape = data.draw(st.sampled_from([(), (2,)]), label="q_shape")
    q = Op(q_shape, min_value=0, max_value=scale)
    vmap_case(data, fn, [x, q], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@settings(max_examples=8)
@given(data=st.data())
def test_medians(name, data):
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    ax = data.draw(st.one_of(axes(len(shape)), axis_args(len(shape))), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    x = Op(shape, min_value=-9, max_value=9, allow_nan=True)
    vmap_case(data, lambda x: getattr(mnp, name)(x, axis=ax, keepdims=keepdims), [x])
