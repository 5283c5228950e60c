"""vmap of sorting, searching and counting in mytorch.numpy against the loop definition:
sort/argsort (ties, NaNs, descending), lexsort, partition, searchsorted (every method,
sorted array and values batched or not), digitize, nonzero/argwhere/flatnonzero/unique
with a static size, bincount, histogram and select."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch.numpy as mnp
from tests.batching.numpy_vmap_util import Op, shapes_broadcasting_to, vmap_case
from tests.strategies import axes, shapes

# few distinct values: ties decide stability, NaNs their placement
_DUPS = {"min_value": -2, "max_value": 2}
_DTYPES = st.sampled_from([np.float32, np.int8, np.bool_, np.float16])


def _sorted_rows(x):
    """Sorted 1-D input for searchsorted (sorting inside f keeps the examples sorted)."""
    return mnp.sort(x)


@settings(max_examples=15)
@given(data=st.data())
def test_sort_argsort(data):
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    ax = data.draw(axes(len(shape)) if shape else st.none(), label="axis")
    desc = data.draw(st.booleans(), label="descending")
    dt = data.draw(_DTYPES, label="dtype")
    x = [Op(shape, dt, allow_nan=True, **_DUPS)]
    vmap_case(data, lambda a: (mnp.sort(a, axis=ax, descending=desc),
                               mnp.argsort(a, axis=ax, descending=desc)), x)
    if shape:
        vmap_case(data, lambda a: (mnp.asarray(a).sort(), mnp.asarray(a).argsort(axis=ax)), x)
        pax = -1 if ax is None else ax
        kth = data.draw(st.integers(-shape[pax], max(shape[pax] - 1, 0)), label="kth")
        if shape[pax]:
            vmap_case(data, lambda a: (mnp.partition(a, kth, axis=pax),
                                       mnp.argpartition(a, kth, axis=pax)), x)


@settings(max_examples=12)
@given(data=st.data())
def test_lexsort(data):
    shape = data.draw(shapes(min_dims=1, max_dims=2, max_side=4), label="shape")
    k = data.draw(st.integers(1, 3), label="keys")
    ax = data.draw(axes(len(shape), allow_none=False), label="axis")
    ops = [Op(shape, data.draw(_DTYPES), **_DUPS) for _ in range(k)]
    vmap_case(data, lambda *ks: mnp.lexsort(ks, axis=ax), ops)
    vmap_case(data, lambda ks: mnp.lexsort(ks, axis=ax), [Op((k,) + shape, np.int8, **_DUPS)])


_METHODS = ["scan", "scan_unrolled", "sort", "compare_all"]


@pytest.mark.parametrize("method", _METHODS)
@settings(max_examples=6)
@given(data=st.data())
def test_searchsorted(method, data):
    n = data.draw(st.integers(0, 5), label="len")
    v_shape = data.draw(shapes(max_dims=2, max_side=3), label="v_shape")
    side = data.draw(st.sampled_from(["left", "right"]), label="side")
    dt = data.draw(st.sampled_from([np.float32, np.int32]), label="dtype")
    ops = [Op((n,), dt, allow_nan=True, **_DUPS), Op(v_shape, dt, allow_nan=True, **_DUPS)]
    vmap_case(data, lambda a, v: mnp.searchsorted(_sorted_rows(a), v, side=side,
                                                  method=method), ops)
    # sorter: the permutation that sorts a
    vmap_case(data, lambda a, v: mnp.searchsorted(a, v, side=side, method=method,
                                                  sorter=mnp.argsort(a)), ops)
    if method == "scan":
        vmap_case(data, lambda a, v: mnp.asarray(_sorted_rows(a)).searchsorted(v), ops)


@settings(max_examples=12)
@given(data=st.data())
def test_digitize(data):
    n = data.draw(st.integers(0, 4), label="bins")
    x_shape = data.draw(shapes(max_dims=2, max_side=3), label="x_shape")
    right = data.draw(st.booleans(), label="right")
    decreasing = data.draw(st.booleans(), label="decreasing")

    def f(x, b):
        b = mnp.sort(b)
        return mnp.digitize(x, mnp.flip(b) if decreasing else b, right=right)

    vmap_case(data, f, [Op(x_shape, **_DUPS), Op((n,), **_DUPS)])


@settings(max_examples=8)
@given(data=st.data())
def test_nonzero_family(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4), label="shape")
    size = data.draw(st.integers(0, 5), label="size")
    fill = data.draw(st.sampled_from([None, -1, (7,) * len(shape)]), label="fill")
    x = [Op(shape, data.draw(st.sampled_from([np.bool_, np.int8, np.float32])),
            min_value=0, max_value=1)]
    vmap_case(data, lambda a: mnp.nonzero(a, size=size, fill_value=fill), x)
    vmap_case(data, lambda a: mnp.asarray(a).nonzero(size=size), x)
    fill1 = None if isinstance(fill, tuple) else fill
    vmap_case(data, lambda a: (mnp.flatnonzero(a, size=size, fill_value=fill1),
                               mnp.argwhere(a, size=size, fill_value=fill1)), x)


@settings(max_examples=10)
@given(data=st.data())
def test_unique(data):
    shape = data.draw(shapes(min_dims=1, max_dims=2, max_side=4), label="shape")
    size = data.draw(st.integers(1, 5), label="size")
    flags = data.draw(st.tuples(st.booleans(), st.booleans(), st.booleans()), label="flags")
    ax = data.draw(st.one_of(st.none(), axes(len(shape), allow_none=False)), label="axis")
    if ax is not None and shape[ax] == 0:
        return
    x = [Op(shape, data.draw(st.sampled_from([np.float32, np.int8])), allow_nan=True,
            **_DUPS)]
    equal_nan = data.draw(st.booleans(), label="equal_nan")
    vmap_case(data, lambda a: mnp.unique(a, *flags, axis=ax, size=size, fill_value=None,
                                         equal_nan=equal_nan), x)
    vmap_case(data, lambda a: mnp.unique(a, size=size, fill_value=-9), x)


@settings(max_examples=12)
@given(data=st.data())
def test_bincount(data):
    n = data.draw(st.integers(0, 6), label="n")
    length = data.draw(st.integers(0, 6), label="length")
    ops = [Op((n,), np.int32, min_value=-1, max_value=7)]
    vmap_case(data, lambda i: mnp.bincount(i, length=length), ops)
    vmap_case(data, lambda i, w: mnp.bincount(i, w, minlength=length, length=length),
              ops + [Op((n,), min_value=0, max_value=3)], atol=1e-5)


@settings(max_examples=6)
@given(data=st.data())
def test_histogram(data):
    shape = data.draw(shapes(max_dims=2, max_side=4), label="shape")
    bins = data.draw(st.integers(1, 4), label="bins")
    x = Op(shape, min_value=-3, max_value=3)
    rng = data.draw(st.sampled_from([None, (-2.0, 2.0)]), label="range")
    density = data.draw(st.sampled_from([None, True]), label="density")
    vmap_case(data, lambda a: mnp.histogram(a, bins=bins, range=rng, density=density), [x],
              atol=1e-5)
    vmap_case(data, lambda a, w: mnp.histogram(a, bins=bins, weights=w), [x, Op(shape)],
              atol=1e-5)
    vmap_case(data, lambda a, lo, hi: mnp.histogram(a, bins, range=(lo, lo + hi)),
              [x, Op((), min_value=-3, max_value=0), Op((), min_value=0.5, max_value=3)],
              atol=1e-5)
    vmap_case(data, lambda a, e: mnp.histogram(a, bins=mnp.sort(e)), [x, Op((bins + 1,))])
    vmap_case(data, lambda a: mnp.histogram_bin_edges(a, bins=bins), [x], atol=1e-5)


@settings(max_examples=12)
@given(data=st.data())
def test_select(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    k = data.draw(st.integers(1, 3), label="k")
    conds = [Op(shapes_broadcasting_to(data, shape), np.bool_) for _ in range(k)]
    choices = [Op(shapes_broadcasting_to(data, shape), data.draw(st.sampled_from(
        [np.float32, np.int32]))) for _ in range(k)]
    vmap_case(data, lambda *a: mnp.select(list(a[:k]), list(a[k:]), default=-1),
              conds + choices)
    vmap_case(data, lambda *a: mnp.select(list(a[:k]), list(a[k:-1]), default=a[-1]),
              conds + choices + [Op(())])
