"""mytorch.numpy indexing vs NumPy: x[idx], x.at[idx].<op>(v), take & friends."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mytorch as mt
from mytorch.core.array import Array, from_numpy
from mytorch.errors import ConcretizationTypeError, NonConcreteBooleanIndexError
from mytorch.numpy import indexing as I
from tests.strategies import arrays, assert_close, shapes

DTYPES = [np.dtype(t) for t in (np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.uint8,
                                 np.bool_, np.int32)]


def _prims(closed):
    return [str(e.primitive) for e in closed.jaxpr.eqns]


# ---- random index expressions -------------------------------------------------------------
@st.composite
def index_exprs(draw, shape, arrays_ok=True, masks_ok=True, bools_ok=True):
    """A random NumPy index for an array of `shape`: a tuple of ints, slices, None,
    Ellipsis, integer arrays (broadcast-compatible, negative values too) and masks."""
    base = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    comps, kinds, ax, has_mask = [], [], 0, False
    while ax < len(shape):
        n = shape[ax]
        options = ["slice", "full"] + (["int"] if n else [])
        if arrays_ok and n:
            options.append("array")
        if masks_ok and not has_mask:
            options.append("mask")
        kind = draw(st.sampled_from(options))
        if kind == "int":
            comps.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-n - 3, n + 3))
            step = st.one_of(st.none(), st.sampled_from([-3, -2, -1, 1, 2, 3]))
            comps.append(slice(draw(bound), draw(bound), draw(step)))
        elif kind == "full":
            comps.append(slice(None))
        elif kind == "array":
            ishape = draw(hnp.broadcastable_shapes(base, min_dims=0, max_dims=len(base),
                                                   max_side=3))
            a = draw(hnp.arrays(np.int64, ishape, elements=st.integers(-n, n - 1)))
            form = draw(st.sampled_from(["numpy", "list", "mytorch"]))
            comps.append(a.tolist() if form == "list" and a.ndim else
                         from_numpy(a.astype(np.int32)) if form == "mytorch" else a)
        else:
            k = draw(st.integers(1, min(2, len(shape) - ax)))
            comps.append(draw(hnp.arrays(np.bool_, shape[ax:ax + k])))
            has_mask = True
            ax += k - 1
        kinds.append(kind)
        ax += 1
    # trailing full slices may be dropped, or a run of full slices replaced by Ellipsis
    if draw(st.booleans()):
        while kinds and kinds[-1] == "full":
            kinds.pop()
            comps.pop()
    if draw(st.booleans()):
        runs = [i for i, k in enumerate(kinds) if k == "full"]
        if runs:
            i = draw(st.sampled_from(runs))
            j = i
            while j + 1 < len(kinds) and kinds[j + 1] == "full":
                j += 1
            comps[i:j + 1] = [Ellipsis]
            kinds[i:j + 1] = ["ell"]
        else:
            pos = draw(st.integers(0, len(comps)))
            comps.insert(pos, Ellipsis)
            kinds.insert(pos, "ell")
    for _ in range(draw(st.integers(0, 2))):
        comps.insert(draw(st.integers(0, len(comps))), None)
    if bools_ok and draw(st.integers(0, 4)) == 0 and not has_mask:
        comps.insert(draw(st.integers(0, len(comps))), draw(st.booleans()))
    if len(comps) == 1 and draw(st.booleans()):
        return comps[0]
    return tuple(comps)


def _np_index(idx):
    """The same index with mytorch arrays replaced by NumPy ones."""
    conv = lambda i: np.asarray(i) if isinstance(i, Array) else i  # noqa: E731
    return tuple(map(conv, idx)) if isinstance(idx, tuple) else conv(idx)


def _numpy_result(x, idx):
    try:
        return x[_np_index(idx)], None
    except IndexError as err:
        return None, err


@st.composite
def array_and_index(draw, dtypes=DTYPES, **kw):
    shape = draw(shapes(max_dims=4, max_side=4))
    x = draw(arrays(st.sampled_from(dtypes), shape))
    return x, draw(index_exprs(shape, **kw))


@settings(max_examples=150)
@given(array_and_index())
def test_getitem_matches_numpy(case):
    x, idx = case
    expected, err = _numpy_result(x, idx)
    if err is not None:
        if "out of bounds" in str(err) and "with size 0" not in str(err):
            return  # where NumPy raises, JAX clamps: tests/numpy/test_index_bounds.py
        with pytest.raises(IndexError):
            I.getitem(from_numpy(x), idx)
        return
    assert_close(I.getitem(from_numpy(x), idx), expected, dtype=x.dtype)


def _traceable(idx):
    """Split an index into a builder and its array parts (to pass them traced)."""
    parts = list(idx) if isinstance(idx, tuple) else [idx]
    slots = [k for k, p in enumerate(parts) if isinstance(p, (np.ndarray, list, Array))
             and np.asarray(p).dtype != np.bool_ or type(p) is int]
    args = [from_numpy(np.asarray(parts[k], dtype=np.int32)) for k in slots]

    def build(arrs):
        new = list(parts)
        for k, a in zip(slots, arrs, strict=True):
            new[k] = a
        return tuple(new) if isinstance(idx, tuple) else new[0]

    return build, args


@settings(max_examples=60)
@given(array_and_index(dtypes=[np.dtype(np.float32)]))
def test_getitem_traced_indices_match_numpy(case):
    """Integer arrays and ints passed as traced arguments: gather / dynamic_slice paths."""
    x, idx = case
    expected, err = _numpy_result(x, idx)
    assume(err is None)
    build, args = _traceable(idx)
    closed = mt.make_jaxpr(lambda x, *a: I.getitem(x, build(a)))(from_numpy(x), *args)
    assert_close(closed(from_numpy(x), *args)[0], expected, dtype=x.dtype)


def test_basic_indexing_lowers_without_gather():
    x = from_numpy(np.arange(60, dtype=np.float32).reshape(3, 4, 5))
    closed = mt.make_jaxpr(lambda x: I.getitem(x, (1, slice(None, None, -2), None, 3)))(x)
    prims = _prims(closed)
    assert "gather" not in prims and {"slice", "rev", "squeeze"} <= set(prims)
    assert_close(closed(x)[0], np.asarray(x)[1, ::-2, None, 3])


def test_traced_int_is_dynamic_slice():
    x = from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    i = from_numpy(np.asarray(-1, np.int32))
    closed = mt.make_jaxpr(lambda x, i: I.getitem(x, i))(x, i)
    prims = _prims(closed)
    assert "dynamic_slice" in prims and "squeeze" in prims and "gather" not in prims
    for k in (-3, -1, 0, 2):
        assert_close(closed(x, from_numpy(np.asarray(k, np.int32)))[0], np.asarray(x)[k])
    # out of bounds clamps (negative ones wrap once first)
    assert_close(closed(x, from_numpy(np.asarray(7, np.int32)))[0], np.asarray(x)[2])
    assert_close(closed(x, from_numpy(np.asarray(-9, np.int32)))[0], np.asarray(x)[0])


def test_advanced_indexing_is_one_gather():
    x = from_numpy(np.arange(60, dtype=np.float32).reshape(3, 4, 5))
    i = from_numpy(np.asarray([[0, 2], [1, 1]], np.int32))
    idx = lambda i: (i, slice(1, None, 2), np.array([4, -1]))  # noqa: E731
    closed = mt.make_jaxpr(lambda x, i: I.getitem(x, idx(i)))(x, i)
    assert _prims(closed).count("gather") == 1
    expected = np.asarray(x)[np.asarray(i), 1::2, np.array([4, -1])]
    assert_close(closed(x, i)[0], expected)


def test_out_of_bounds_array_indices_clamp():
    x = np.arange(5, dtype=np.float32)
    got = I.getitem(from_numpy(x), from_numpy(np.array([7, -1, -6, 2], np.int32)))
    assert_close(got, x[[4, 4, 0, 2]])
    filled = I.IndexUpdateHelper(from_numpy(x))[np.array([7, 1])].get(mode="fill",
                                                                      fill_value=-1.0)
    assert_close(filled, np.array([-1.0, 1.0], np.float32))


def test_scalar_bool_indices():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for idx in [True, False, (Ellipsis, True), (slice(None), True, [0, 2]),
                (np.array(True), 1), (0, False)]:
        assert_close(I.getitem(from_numpy(x), idx), x[idx])


def test_numpy_special_cases():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    # an Ellipsis standing for no axes still separates advanced indices
    for idx in [(slice(None), [0], Ellipsis, 0), (slice(None), [0], 0, Ellipsis),
                ([1, 0], None, [2, 1]), (np.array([], bool), Ellipsis),
                (Ellipsis, np.zeros((3, 0), bool)), (np.int64(-1), [[0], [2]], slice(1, 3))]:
        assert_close(I.getitem(from_numpy(x), idx), x[idx])
    assert I.unravel_index(7, (2, 5))[0].weak_type is False


def test_getitem_x64(x64):
    x = np.arange(12.0).reshape(3, 4)
    i = from_numpy(np.array([2, -1, 0], np.int64))
    closed = mt.make_jaxpr(lambda x, i: I.getitem(x, (i, slice(None, None, -1))))(
        from_numpy(x), i)
    assert_close(closed(from_numpy(x), i)[0], x[[2, -1, 0], ::-1], dtype=np.float64)
    got = I.IndexUpdateHelper(from_numpy(x))[np.array([0, 0]), 1].add(1.5)
    ref = x.copy()
    ref[0, 1] += 3.0
    assert_close(got, ref, dtype=np.float64)


def test_index_errors():
    x = from_numpy(np.zeros((2, 3), np.float32))
    # static out-of-bounds ints clamp (tests/numpy/test_index_bounds.py); only an empty axis
    # has nothing to clamp to
    with pytest.raises(IndexError, match="index 1 is out of bounds for axis 0 with size 0"):
        I.getitem(from_numpy(np.zeros((0, 2), np.float32)), 1)
    with pytest.raises(IndexError, match="index -1 is out of bounds for axis 1 with size 0"):
        I.IndexUpdateHelper(from_numpy(np.zeros((2, 0), np.float32)))[:, -1].set(1.0)
    with pytest.raises(IndexError, match="too many indices for array: array is 2-dimensional"):
        I.getitem(x, (0, 0, 0))
    with pytest.raises(IndexError, match="single ellipsis"):
        I.getitem(x, (Ellipsis, Ellipsis))
    with pytest.raises(IndexError, match="boolean index did not match"):
        I.getitem(x, np.array([True, False, True]))
    with pytest.raises(IndexError, match="only integers, slices"):
        I.getitem(x, 1.0)
    with pytest.raises(IndexError, match="only integers, slices"):
        I.getitem(x, from_numpy(np.array([0.0], np.float32)))
    with pytest.raises(IndexError, match="shape mismatch"):
        I.getitem(x, ([0, 1], [0, 1, 2]))
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        I.getitem(from_numpy(np.zeros((0, 2), np.float32)), np.array([0]))


def test_traced_bool_mask_raises():
    """JAX's class (an IndexError), with the fix and the user's line in the message."""
    x = from_numpy(np.arange(4, dtype=np.float32))
    with pytest.raises(NonConcreteBooleanIndexError, match="size=") as info:
        mt.make_jaxpr(lambda x: I.getitem(x, _gt(x)))(x)
    assert isinstance(info.value, IndexError) and not isinstance(info.value, TypeError)
    assert "mnp.where" in str(info.value) and "test_indexing.py" in str(info.value)
    for fn in (lambda x: x[x > 1.0], lambda x: x.at[x > 1.0].set(0.0),
               lambda x: x[[True, False, True, False] & (x > 1.0)]):
        with pytest.raises(IndexError, match="boolean mask indexing needs a concrete mask"):
            mt.jit(fn)(x)
        with pytest.raises(IndexError, match="boolean mask"):
            mt.vmap(fn)(from_numpy(np.ones((2, 4), np.float32)))


def _gt(x):
    from mytorch import lax

    return lax.gt(x, 1.0)


def test_traced_slice_bounds_raise():
    x = from_numpy(np.arange(4, dtype=np.float32))
    i = from_numpy(np.asarray(1, np.int32))
    with pytest.raises(ConcretizationTypeError, match="dynamic_slice"):
        mt.make_jaxpr(lambda x, i: I.getitem(x, slice(i, None)))(x, i)


# ---- x.at[idx] ----------------------------------------------------------------------------
def _positions(shape, idx):
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[_np_index(idx)]


def shapes_broadcasting_to(shape):
    """Shapes that broadcast to `shape` (a suffix of it with some dims set to 1)."""
    return st.integers(0, len(shape)).flatmap(lambda k: st.tuples(*[
        st.sampled_from([d, 1]) for d in shape[len(shape) - k:]]))


_NP_AT = {"add": np.add.at, "multiply": np.multiply.at, "min": np.minimum.at,
          "max": np.maximum.at}


@settings(max_examples=80)
@given(data=st.data())
def test_at_updates_match_numpy(data):
    dtype = data.draw(st.sampled_from([np.dtype(t) for t in (np.float32, np.float16, np.int32,
                                                             np.int8, np.uint8)]))
    shape = data.draw(shapes(max_dims=3, max_side=4))
    x = data.draw(arrays(dtype, shape, min_value=-10, max_value=10))
    idx = data.draw(index_exprs(shape))
    try:
        pos = _positions(shape, idx)
    except IndexError:
        return
    vshape = data.draw(shapes_broadcasting_to(pos.shape))
    vals = data.draw(arrays(dtype, vshape, min_value=-3, max_value=3))
    op = data.draw(st.sampled_from(["set", "add", "multiply", "min", "max"]))
    flat = x.reshape(-1).copy()
    v = np.broadcast_to(vals, pos.shape).reshape(-1)
    if op == "set":
        assume(len(np.unique(pos)) == pos.size)
        flat[pos.reshape(-1)] = v
    else:
        with np.errstate(over="ignore"):
            _NP_AT[op](flat, pos.reshape(-1), v)
    ref = I.IndexUpdateHelper(from_numpy(x))[idx]
    got = getattr(ref, op)(from_numpy(vals))
    assert_close(got, flat.reshape(shape), dtype=dtype)


def test_at_out_of_bounds_updates_are_dropped():
    x = np.arange(5, dtype=np.float32)
    idx = np.array([0, 7, -1, -9, 2, 2])
    vals = np.array([1, 2, 3, 4, 5, 6], np.float32)
    keep = (idx >= -5) & (idx < 5)
    for op, ufunc in [("add", np.add), ("max", np.maximum), ("min", np.minimum)]:
        ref = x.copy()
        ufunc.at(ref, idx[keep], vals[keep])
        got = getattr(I.IndexUpdateHelper(from_numpy(x))[idx], op)(from_numpy(vals))
        assert_close(got, ref)
    got = I.IndexUpdateHelper(from_numpy(x))[np.array([1, 9])].set(from_numpy(vals[:2]))
    assert_close(got, np.array([0, 1, 2, 3, 4], np.float32))
    clipped = I.IndexUpdateHelper(from_numpy(x))[np.array([9])].set(-1.0, mode="clip")
    assert_close(clipped, np.array([0, 1, 2, 3, -1], np.float32))


def test_at_other_ops_and_casting():
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    at = I.IndexUpdateHelper(from_numpy(x))
    ref = x.copy()
    ref[:, [0, 2]] -= 2
    assert_close(at[:, [0, 2]].subtract(2.0), ref)
    ref = x.copy()
    np.divide.at(ref, (0, [1, 1]), np.float32(2))
    assert_close(at[0, [1, 1]].divide(2.0), ref)
    ref = x.copy()
    ref[1] **= 2
    assert_close(at[1].power(2.0), ref)
    assert_close(at[0].apply(lambda v: lax_mul(v, 10.0)), np.concatenate([x[:1] * 10, x[1:]]))
    assert_close(at[1, 1].get(), x[1, 1])
    # values are cast to x's dtype; the result keeps x's dtype
    xi = from_numpy(np.zeros(3, np.int32))
    assert_close(I.IndexUpdateHelper(xi)[1].set(2.7), np.array([0, 2, 0], np.int32),
                 dtype=np.int32)
    assert_close(I.IndexUpdateHelper(xi)[[0, 0]].add(1), np.array([2, 0, 0], np.int32))
    with pytest.raises(ValueError, match="cannot broadcast the update values f32\\[3\\]"):
        at[0, :2].set(from_numpy(np.ones(3, np.float32)))
    with pytest.raises(TypeError, match="floating-point"):
        I.IndexUpdateHelper(xi)[0].divide(2)


def test_at_traced_lowerings():
    x = from_numpy(np.zeros((4, 3), np.float32))
    v = from_numpy(np.ones(3, np.float32))
    closed = mt.make_jaxpr(lambda x, v: I.IndexUpdateHelper(x)[1:3].add(v))(x, v)
    assert "dynamic_update_slice" in _prims(closed) and "scatter_add" not in _prims(closed)
    assert_close(closed(x, v)[0], np.array([[0] * 3, [1] * 3, [1] * 3, [0] * 3], np.float32))
    i = from_numpy(np.array([3, 3, 0], np.int32))
    closed = mt.make_jaxpr(lambda x, i, v: I.IndexUpdateHelper(x)[i].add(v))(x, i, v)
    assert "scatter_add" in _prims(closed)
    expected = np.zeros((4, 3), np.float32)
    np.add.at(expected, [3, 3, 0], 1.0)
    assert_close(closed(x, i, v)[0], expected)
    closed = mt.make_jaxpr(lambda x, i: I.IndexUpdateHelper(x)[i, 0].set(5.0))(x, i)
    assert "scatter" in _prims(closed)


# ---- take and friends ---------------------------------------------------------------------
@given(data=st.data())
def test_take_matches_numpy(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(st.sampled_from(DTYPES), shape))
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = x.size if axis is None else shape[axis]
    ishape = data.draw(shapes(max_dims=2, max_side=3))
    mode = data.draw(st.sampled_from([None, "clip", "wrap"]))
    lo, hi = (-n, n - 1) if mode is None else (-2 * n, 2 * n)
    idx = data.draw(hnp.arrays(np.int64, ishape, elements=st.integers(lo, hi)))
    expected = np.take(x, idx, axis=axis, mode=mode or "raise")
    traced = data.draw(st.booleans())
    if traced:
        closed = mt.make_jaxpr(lambda x, i: I.take(x, i, axis=axis, mode=mode))(
            from_numpy(x), from_numpy(idx.astype(np.int32)))
        got = closed(from_numpy(x), from_numpy(idx.astype(np.int32)))[0]
    else:
        got = I.take(from_numpy(x), idx, axis=axis, mode=mode)
    assert_close(got, expected, dtype=x.dtype)


def test_take_fill_mode():
    x = from_numpy(np.arange(4, dtype=np.float32))
    got = I.take(x, np.array([0, 4, -1, -5]), mode="fill", fill_value=-7.0)
    assert_close(got, np.array([0, -7, 3, -7], np.float32))
    with pytest.raises(ValueError, match="mode"):
        I.take(x, np.array([0]), mode="raise")


@given(data=st.data())
def test_take_along_axis_matches_numpy(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(np.float32, shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    ishape = list(data.draw(hnp.broadcastable_shapes(shape, min_dims=len(shape),
                                                     max_dims=len(shape), max_side=4)))
    ishape[axis] = data.draw(st.integers(0, 4))
    n = shape[axis]
    idx = data.draw(hnp.arrays(np.int64, tuple(ishape), elements=st.integers(-n, n - 1)))
    expected = np.take_along_axis(x, idx, axis=axis)
    assert_close(I.take_along_axis(from_numpy(x), idx, axis), expected)
    closed = mt.make_jaxpr(lambda x, i: I.take_along_axis(x, i, axis))(
        from_numpy(x), from_numpy(idx.astype(np.int32)))
    assert_close(closed(from_numpy(x), from_numpy(idx.astype(np.int32)))[0], expected)
    vals = np.arange(idx.size, dtype=np.float32).reshape(idx.shape) + 100
    ref = x.copy()
    np.put_along_axis(ref, idx, vals, axis)
    got = I.put_along_axis(from_numpy(x), idx, from_numpy(vals), axis)
    flat = _positions(shape, tuple(np.take_along_axis(
        np.indices(shape)[d], idx, axis) for d in range(len(shape))))
    if len(np.unique(flat)) == flat.size:  # duplicate targets: NumPy keeps the last
        assert_close(got, ref)


def test_take_along_axis_none_and_errors():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_close(I.take_along_axis(from_numpy(x), np.array([5, 0]), None),
                 np.take_along_axis(x, np.array([5, 0]), None))
    with pytest.raises(ValueError, match="same number of dimensions"):
        I.take_along_axis(from_numpy(x), np.array([0]), 1)


def test_compress_extract_choose():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    cond = np.array([True, False, True])
    assert_close(I.compress(cond, from_numpy(x), axis=0), np.compress(cond, x, axis=0))
    assert_close(I.compress([0, 1], from_numpy(x), axis=1), np.compress([0, 1], x, axis=1))
    assert_close(I.compress(cond, from_numpy(x)), np.compress(cond, x))
    mask = x % 3 == 0
    assert_close(I.extract(mask, from_numpy(x)), np.extract(mask, x))
    # traced condition with size=
    c = from_numpy(np.array([False, True, True, False]))
    closed = mt.make_jaxpr(lambda c, x: I.compress(c, x, axis=1, size=3, fill_value=-1))(
        c, from_numpy(x))
    expected = np.concatenate([x[:, 1:3], -np.ones((3, 1), np.float32)], axis=1)
    assert_close(closed(c, from_numpy(x))[0], expected)
    with pytest.raises(ConcretizationTypeError, match="size="):
        mt.make_jaxpr(lambda c, x: I.compress(c, x))(c, from_numpy(x[0]))
    a = np.array([0, 2, 1, 3])
    choices = [np.arange(4) * k for k in range(1, 4)]
    assert_close(I.choose(a, choices, mode="clip"), np.choose(a, choices, mode="clip"))
    assert_close(I.choose(a, choices, mode="wrap"), np.choose(a, choices, mode="wrap"))
    assert_close(I.choose(a[:3], [c[:3] for c in choices]),
                 np.choose(a[:3], [c[:3] for c in choices]))
    with pytest.raises(ValueError, match="invalid entry"):
        I.choose(a, choices)


def test_ix_unravel_ravel_place_put():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    rows, cols = I.ix_([0, 3], np.array([True, False, True, False, True]))
    nrows, ncols = np.ix_([0, 3], np.array([True, False, True, False, True]))
    assert_close(rows, nrows.astype(np.int32))
    assert_close(cols, ncols.astype(np.int32))
    assert_close(I.getitem(from_numpy(x), (rows, cols)), x[nrows, ncols])
    flat = np.array([0, 7, 19, 13])
    for got, want in zip(I.unravel_index(flat, (4, 5)), np.unravel_index(flat, (4, 5)),
                         strict=True):
        assert_close(got, want.astype(np.int32))
    got = I.unravel_index(np.array([-1, 25]), (4, 5))
    assert [np.asarray(g).tolist() for g in got] == [[3, 3], [4, 4]]
    coords = (np.array([0, 3, 1]), np.array([4, 0, 2]))
    for order in ("C", "F"):
        assert_close(I.ravel_multi_index(coords, (4, 5), order=order),
                     np.ravel_multi_index(coords, (4, 5), order=order).astype(np.int32))
    bad = (np.array([0, 5]), np.array([1, -1]))
    assert_close(I.ravel_multi_index(bad, (4, 5), mode="clip"),
                 np.ravel_multi_index(bad, (4, 5), mode="clip").astype(np.int32))
    assert_close(I.ravel_multi_index(bad, (4, 5), mode="wrap"),
                 np.ravel_multi_index(bad, (4, 5), mode="wrap").astype(np.int32))
    with pytest.raises(ValueError, match="invalid entry"):
        I.ravel_multi_index(bad, (4, 5))
    mask = x > 12
    ref = x.copy()
    np.place(ref, mask, [-1, -2, -3])
    assert_close(I.place(from_numpy(x), mask, np.array([-1, -2, -3], np.float32)), ref)
    ref = x.copy()
    np.put(ref, [0, 19, 3], [7, 8])
    assert_close(I.put(from_numpy(x), np.array([0, 19, 3]), np.array([7, 8], np.float32)),
                 ref)
    ref = x.copy()
    np.put(ref, [22, -1], [7, 8], mode="wrap")
    assert_close(I.put(from_numpy(x), np.array([22, -1]), np.array([7, 8], np.float32),
                       mode="wrap"), ref)


def test_functions_trace():
    x = from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    i = from_numpy(np.array([2, 0], np.int32))
    fns = [
        lambda x, i: I.take(x, i, axis=1),
        lambda x, i: I.take(x, i),
        lambda x, i: I.take_along_axis(x, lax_reshape(i, (1, 2)), 1),
        lambda x, i: I.put_along_axis(x, lax_reshape(i, (1, 2)), 9.0, 1),
        lambda x, i: I.unravel_index(i, (3, 4))[1],
        lambda x, i: I.ravel_multi_index((i, i), (3, 4), mode="clip"),
        lambda x, i: I.put(x, i, 5.0),
        lambda x, i: I.choose(i, [i, lax_add(i, i)], mode="clip"),
        lambda x, i: I.getitem(x, I.ix_(i, i)),
        lambda x, i: I.extract(_gt(x), x, size=5, fill_value=0.0),
        lambda x, i: I.place(x, np.eye(3, 4, dtype=bool), lax_reshape(i, (2,))),
        lambda x, i: I.compress(np.array([1, 0, 1]), x, axis=0),
    ] + [
        (lambda op: lambda x, i: getattr(I.IndexUpdateHelper(x)[i, 1:], op)(2.0))(op)
        for op in ("set", "add", "subtract", "multiply", "divide", "power", "min", "max")
    ] + [
        lambda x, i: I.IndexUpdateHelper(x)[i, 1:].get(),
        lambda x, i: I.IndexUpdateHelper(x)[::2, i].apply(lambda v: lax_mul(v, v)),
        lambda x, i: I.IndexUpdateHelper(x)[i].get(mode="fill", fill_value=1.0),
    ]
    for fn in fns:
        closed = mt.make_jaxpr(fn)(x, i)
        assert_close(closed(x, i)[0], fn(x, i))


def lax_reshape(x, shape):
    from mytorch import lax

    return lax.reshape(x, shape)


def lax_add(x, y):
    from mytorch import lax

    return lax.add(x, y)


def lax_mul(x, y):
    from mytorch import lax

    return lax.mul(x, y)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_place_with_a_traced_mask_matches_numpy(data):
    """A traced mask (as in JAX): the k-th true position gets vals[k % len(vals)]."""
    shape = data.draw(shapes(max_dims=3, max_side=4))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    mask = data.draw(hnp.arrays(np.bool_, shape))
    vals = -1.0 - np.arange(data.draw(st.integers(1, 3)), dtype=np.float32)
    ref = x.copy()
    np.place(ref, mask, vals)
    f = lambda x, m, v: I.place(x, m, v)  # noqa: E731
    assert_close(f(from_numpy(x), mask, from_numpy(vals)), ref)
    assert_close(mt.jit(f)(from_numpy(x), from_numpy(mask), from_numpy(vals)), ref)
    got = mt.vmap(f, (0, 0, None))(from_numpy(np.stack([x, x])),
                                   from_numpy(np.stack([mask, ~mask])), from_numpy(vals))
    ref2 = x.copy()
    np.place(ref2, ~mask, vals)
    assert_close(got, np.stack([ref, ref2]))
