"""Indexing lax primitives: dynamic_slice / dynamic_update_slice against clamp-then-slice,
gather and the scatter family against loop references written from XLA's semantics, over
drawn dimension numbers (take-like, x[idx]-like, take_along_axis-like, batched and general
configurations), in- and out-of-bounds indices in every mode, duplicate indices, size-0
axes and rank 0; error messages; tracing."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
from mytorch import lax
from mytorch.core.array import from_numpy
from mytorch.lax import GatherDimensionNumbers as GDN
from mytorch.lax import ScatterDimensionNumbers as SDN
from tests.strategies import assert_close, shapes

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(t) for t in (np.float32, np.float16, np.int8, np.uint8, np.int32,
                                np.bool_)] + [BF16]
INDEX_DTYPES = [np.dtype(t) for t in (np.int32, np.int8, np.uint8, np.int16)]


def _exact(out, ref):
    assert_close(out, ref, ref.dtype, rtol=0, atol=0)


def _distinct(dtype, shape):
    """Distinct values (bools alternate), so a gather that reads the wrong place shows."""
    n = int(np.prod(shape, dtype=np.int64))
    values = np.arange(n) % 2 if dtype == np.bool_ else np.arange(n) - n // 2
    return values.astype(dtype).reshape(shape)


def _varied(data, dtype, shape, lo=-4, hi=4):
    """Pseudo-random values in [lo, hi] (hypothesis' arrays repeat one value a lot)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    lo, hi = (0, 1) if dtype == np.bool_ else (max(lo, 0), hi) if dtype.kind == "u" else (lo, hi)
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def _index_array(data, values, dtype):
    if dtype.kind == "u":
        values = np.maximum(values, 0)
    return values.astype(dtype)


# ---- dynamic_slice, dynamic_update_slice --------------------------------------------------
def _ref_starts(starts, shape, sizes):
    """JAX's convention: wrap a negative start once, then clamp into [0, dim - size]."""
    out = []
    for s, n, k in zip(starts, shape, sizes, strict=True):
        s = int(s)
        s = s + n if s < 0 else s
        out.append(min(max(s, 0), n - k))
    return out


def _draw_starts(data, shape):
    starts, as_arrays = [], []
    for n in shape:
        s = data.draw(st.integers(-n - 3, n + 3), label="start")
        kind = data.draw(st.sampled_from(["int", "i32", "i8", "u8"]), label="kind")
        starts.append(s)
        if kind == "int":
            as_arrays.append(s)
        else:
            dt = {"i32": np.int32, "i8": np.int8, "u8": np.uint8}[kind]
            s = max(s, 0) if dt is np.uint8 else s
            starts[-1] = s
            as_arrays.append(from_numpy(np.asarray(s, dt)))
    return starts, as_arrays


@given(data=st.data())
def test_dynamic_slice_clamps_like_xla(data):
    x = _distinct(data.draw(st.sampled_from(DTYPES), label="dtype"), data.draw(shapes()))
    sizes = [data.draw(st.integers(0, n)) for n in x.shape]
    starts, args = _draw_starts(data, x.shape)
    begin = _ref_starts(starts, x.shape, sizes)
    ref = x[tuple(slice(b, b + k) for b, k in zip(begin, sizes, strict=True))]
    _exact(lax.dynamic_slice(from_numpy(x), args, sizes), ref)


@given(data=st.data())
def test_dynamic_update_slice_clamps_like_xla(data):
    x = _distinct(data.draw(st.sampled_from(DTYPES), label="dtype"), data.draw(shapes()))
    usize = [data.draw(st.integers(0, n)) for n in x.shape]
    update = _varied(data, x.dtype, tuple(usize), 100, 120)
    starts, args = _draw_starts(data, x.shape)
    begin = _ref_starts(starts, x.shape, usize)
    ref = x.copy()
    ref[tuple(slice(b, b + k) for b, k in zip(begin, usize, strict=True))] = update
    _exact(lax.dynamic_update_slice(from_numpy(x), from_numpy(update), args), ref)


def test_dynamic_slice_large_dim_with_narrow_negative_index():
    x = np.arange(300, dtype=np.float32)
    i = from_numpy(np.int8(-2))
    _exact(lax.dynamic_slice(from_numpy(x), [i], (2,)), x[298:])
    closed = mt.make_jaxpr(lambda a, j: lax.dynamic_slice(a, [j], (2,)))(from_numpy(x), i)
    _exact(closed(from_numpy(x), i)[0], x[298:])


def test_dynamic_in_dim_helpers():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = from_numpy(x)
    i = from_numpy(np.int32(2))
    _exact(lax.dynamic_slice_in_dim(a, i, 2, axis=-1), x[:, :, 2:4])
    _exact(lax.dynamic_slice_in_dim(a, 5, 2, axis=1), x[:, 1:3])
    _exact(lax.dynamic_index_in_dim(a, -1, 1, keepdims=False), x[:, 2])
    _exact(lax.dynamic_index_in_dim(a, i, 2), x[:, :, 2:3])
    u = np.full((2, 3, 1), -1, np.float32)
    ref = x.copy()
    ref[:, :, 3:4] = u
    _exact(lax.dynamic_update_slice_in_dim(a, from_numpy(u), 9, axis=2), ref)
    ref = x.copy()
    ref[1] = 0
    _exact(lax.dynamic_update_index_in_dim(a, from_numpy(np.zeros((3, 4), np.float32)),
                                           from_numpy(np.int8(-1)), 0), ref)
    _exact(lax.dynamic_slice(a, from_numpy(np.array([1, 1, 1], np.int32)), (1, 2, 3)),
           x[1:2, 1:3, 1:4])


def test_dynamic_slice_traced_starts():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def f(a, i, j):
        return lax.dynamic_update_slice(a, lax.dynamic_slice(a, (i, j), (2, 2)), (j, i))

    args = [from_numpy(x), from_numpy(np.int32(-1)), from_numpy(np.int32(1))]
    closed = mt.make_jaxpr(f)(*args)
    assert "dynamic_slice" in str(closed) and "dynamic_update_slice" in str(closed)
    _exact(closed(*args)[0], np.asarray(f(*args)))
    ref = x.copy()
    ref[1:3, 2:4] = x[1:3, 1:3]
    _exact(np.asarray(f(*args)), ref)


# ---- drawing gather/scatter configurations ------------------------------------------------
@st.composite
def index_cases(draw, kinds=("take", "getitem", "take_along", "batched", "general")):
    """(operand shape, indices values, GatherDimensionNumbers, slice_sizes) of one kind."""
    kind = draw(st.sampled_from(kinds))
    if kind == "take":
        shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
        a = draw(st.integers(0, len(shape) - 1))
        shape = shape[:a] + (max(shape[a], 1),) + shape[a + 1:]
        ishape = draw(shapes(max_dims=2, max_side=4))
        b = len(ishape)
        offset = tuple(range(a)) + tuple(range(a + b, len(shape) - 1 + b))
        dn = GDN(offset, (a,), (a,))
        sizes = shape[:a] + (1,) + shape[a + 1:]
        batch = ishape
    elif kind == "getitem":
        shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
        k = draw(st.integers(1, len(shape)))
        shape = tuple(max(d, 1) for d in shape[:k]) + shape[k:]
        batch = draw(shapes(max_dims=2, max_side=4))
        b = len(batch)
        dn = GDN(tuple(range(b, b + len(shape) - k)), tuple(range(k)), tuple(range(k)))
        sizes = (1,) * k + shape[k:]
    elif kind == "take_along":
        shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
        a = draw(st.integers(0, len(shape) - 1))
        shape = shape[:a] + (max(shape[a], 1),) + shape[a + 1:]
        others = tuple(d for d in range(len(shape)) if d != a)
        dn = GDN((), (a,), (a,), others, others)
        sizes = tuple(1 if d == a else min(shape[d], 1) for d in range(len(shape)))
        batch = shape[:a] + (draw(st.integers(0, 4)),) + shape[a + 1:]
    else:
        return draw(_general_case(min_batching=1 if kind == "batched" else 0))
    hi = [shape[d] - sizes[d] for d in dn.start_index_map]
    return shape, _draw_indices(draw, batch, hi), dn, sizes


@st.composite
def _general_case(draw, min_batching=0):
    shape = draw(shapes(min_dims=min_batching, max_dims=3, max_side=4))
    n = len(shape)
    roles = []
    for d in range(n):
        options = ["offset", "batch"] + (["collapsed"] if shape[d] >= 1 else [])
        roles.append(draw(st.sampled_from(options)))
    if min_batching and "batch" not in roles:
        roles[draw(st.integers(0, n - 1))] = "batch"
    obatch = tuple(d for d in range(n) if roles[d] == "batch")
    collapsed = tuple(d for d in range(n) if roles[d] == "collapsed")
    sizes = tuple(1 if r == "collapsed" else min(shape[d], 1) if r == "batch"
                  else draw(st.integers(0, shape[d])) for d, r in enumerate(roles))
    free = [d for d in range(n) if roles[d] != "batch"]
    index_map = tuple(draw(st.permutations(free))[:draw(st.integers(0, len(free)))])
    b = len(obatch) + draw(st.integers(0, 2))
    ibatch = tuple(draw(st.permutations(range(b)))[:len(obatch)])
    batch = [draw(st.integers(0, 3)) for _ in range(b)]
    for o, i in zip(obatch, ibatch, strict=True):
        batch[i] = shape[o]
    n_offset = n - len(obatch) - len(collapsed)
    offset = tuple(sorted(draw(st.permutations(range(n_offset + b)))[:n_offset]))
    dn = GDN(offset, collapsed, index_map, obatch, ibatch)
    hi = [shape[d] - sizes[d] for d in index_map]
    return shape, _draw_indices(draw, tuple(batch), hi), dn, sizes


def _draw_indices(draw, batch, hi):
    """Index vectors for `batch`: entry k in [-2, hi[k] + 2] (mostly in bounds) or, when
    drawn so, all in bounds."""
    in_bounds = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cols = []
    for h in hi:
        lo, top = (0, h) if in_bounds else (-2, h + 2)
        cols.append(rng.integers(lo, top + 1, size=batch).astype(np.int32))
    return np.stack(cols, -1) if cols else np.zeros(tuple(batch) + (0,), np.int32)


def _out_shape(batch, dn, sizes):
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    window = iter([s for d, s in enumerate(sizes) if d not in dropped])
    rank = len(dn.offset_dims) + len(batch)
    it = iter(batch)
    return tuple(next(window) if d in dn.offset_dims else next(it) for d in range(rank))


def _start(x_shape, vec, index_map, sizes, obatch, ibatch, g):
    """The window start of one index vector (clamped) and whether it was out of bounds."""
    start, oob = [0] * len(x_shape), False
    for k, d in enumerate(index_map):
        s = int(vec[k])
        if s < 0 or s > x_shape[d] - sizes[d]:
            oob = True
        start[d] = min(max(s, 0), x_shape[d] - sizes[d])
    for o, i in zip(obatch, ibatch, strict=True):
        start[o] = g[i]
    return start, oob


def _gather_ref(x, idx, dn, sizes, mode, fill):
    out_shape = _out_shape(idx.shape[:-1], dn, sizes)
    out = np.empty(out_shape, x.dtype)
    batch_pos = [d for d in range(len(out_shape)) if d not in dn.offset_dims]
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    window = [d for d in range(x.ndim) if d not in dropped]
    for o in np.ndindex(*out_shape):
        g = [o[p] for p in batch_pos]
        start, oob = _start(x.shape, idx[tuple(g)], dn.start_index_map, sizes,
                            dn.operand_batching_dims, dn.start_indices_batching_dims, g)
        for k, d in enumerate(window):
            start[d] += o[dn.offset_dims[k]]
        out[o] = fill if mode == "fill" and oob else x[tuple(start)]
    return out


def _default_fill(dtype):
    if dtype.kind == "f" or dtype == BF16:
        return np.nan
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return True


# ---- gather -------------------------------------------------------------------------------
@settings(max_examples=60)
@given(case=index_cases(), dtype=st.sampled_from(DTYPES),
       index_dtype=st.sampled_from(INDEX_DTYPES),
       mode=st.sampled_from([None, "clip", "fill", "promise_in_bounds"]), data=st.data())
def test_gather_matches_loop_reference(case, dtype, index_dtype, mode, data):
    shape, idx, dn, sizes = case
    x = _distinct(dtype, shape)
    idx = _index_array(data, idx, index_dtype)
    out = lax.gather(from_numpy(x), from_numpy(idx), dn, sizes, mode=mode)
    ref_mode = "fill" if mode == "fill" else "clip"
    _exact(out, _gather_ref(x, idx, dn, sizes, ref_mode, _default_fill(dtype)))


@settings(max_examples=15)
@given(case=index_cases(kinds=("take", "general")), data=st.data())
def test_gather_fill_value(case, data):
    shape, idx, dn, sizes = case
    x = _distinct(np.dtype(np.float32), shape)
    out = lax.gather(from_numpy(x), from_numpy(idx), dn, sizes, mode="fill", fill_value=-70)
    _exact(out, _gather_ref(x, idx, dn, sizes, "fill", -70))


def test_gather_named_patterns():
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    idx = np.array([1, 4, 0, 1], np.int32)
    out = lax.gather(from_numpy(x), from_numpy(idx[:, None]), GDN((1,), (0,), (0,)), (1, 3))
    _exact(out, x[idx])
    along = np.array([[0, 2], [1, 1], [2, 0], [0, 0], [1, 2]], np.int32)
    dn = GDN((), (1,), (1,), (0,), (0,))
    out = lax.gather(from_numpy(x), from_numpy(along[..., None]), dn, (1, 1))
    _exact(out, np.take_along_axis(x, along, 1))
    # rank-0 operand: every index vector is empty
    s = from_numpy(np.float32(3))
    out = lax.gather(s, from_numpy(np.zeros((4, 0), np.int32)), GDN((), (), ()), ())
    _exact(out, np.full(4, 3, np.float32))


def test_gather_default_mode_clamps_and_weak_type():
    x = lax.broadcast_in_dim(lax.full((), 2.0), (4,), ())
    assert x.weak_type
    out = lax.gather(x, from_numpy(np.array([[9], [-5]], np.int32)), GDN((), (0,), (0,)),
                     (1,))
    assert out.weak_type
    _exact(out, np.array([2, 2], np.float32))
    y = from_numpy(np.arange(4, dtype=np.int32))
    out = lax.gather(y, from_numpy(np.array([[9], [-5], [2]], np.int32)), GDN((), (0,), (0,)),
                     (1,))
    _exact(out, np.array([3, 0, 2], np.int32))


# ---- scatter ------------------------------------------------------------------------------
COMBINE = {"scatter": None, "scatter_add": np.add, "scatter_mul": np.multiply,
           "scatter_min": np.minimum, "scatter_max": np.maximum}


def _to_scatter(dn):
    return SDN(dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
               dn.operand_batching_dims, dn.start_indices_batching_dims)


def _scatter_ref(x, idx, upd, dn, mode, combine):
    """The result, and for each operand position the list of updates written to it."""
    wide = np.float32 if x.dtype.kind == "f" or x.dtype == BF16 else x.dtype
    out = x.astype(wide)
    written = {}
    scatter_pos = [d for d in range(upd.ndim) if d not in dn.update_window_dims]
    dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    window = [d for d in range(x.ndim) if d not in dropped]
    sizes = [1] * x.ndim
    for d, u in zip(window, dn.update_window_dims, strict=True):
        sizes[d] = upd.shape[u]
    for u in np.ndindex(*upd.shape):
        g = [u[p] for p in scatter_pos]
        start, oob = _start(x.shape, idx[tuple(g)], dn.scatter_dims_to_operand_dims, sizes,
                            dn.operand_batching_dims, dn.scatter_indices_batching_dims, g)
        if oob and mode == "drop":
            continue
        for k, d in enumerate(window):
            start[d] += u[dn.update_window_dims[k]]
        pos = tuple(start)
        written.setdefault(pos, []).append(upd[u])
        with np.errstate(all="ignore"):
            out[pos] = upd[u] if combine is None else combine(out[pos], upd[u].astype(wide))
    return out.astype(x.dtype), written


@settings(max_examples=60)
@given(case=index_cases(), dtype=st.sampled_from(DTYPES),
       name=st.sampled_from(sorted(COMBINE)), index_dtype=st.sampled_from(INDEX_DTYPES),
       mode=st.sampled_from([None, "clip", "drop", "promise_in_bounds"]), data=st.data())
def test_scatter_matches_loop_reference(case, dtype, name, index_dtype, mode, data):
    shape, idx, gdn, sizes = case
    dn = _to_scatter(gdn)
    x = _varied(data, dtype, shape)
    upd = _varied(data, dtype, _out_shape(idx.shape[:-1], gdn, sizes))
    idx = _index_array(data, idx, index_dtype)
    out = getattr(lax, name)(from_numpy(x), from_numpy(idx), from_numpy(upd), dn, mode=mode)
    ref_mode = "clip" if mode == "clip" else "drop"
    ref, written = _scatter_ref(x, idx, upd, dn, ref_mode, COMBINE[name])
    if name != "scatter":
        assert_close(out, ref, dtype)
        return
    # overlapping windows: any one of the updates written to a position may win
    out = np.asarray(out)
    assert out.dtype == dtype and out.shape == x.shape
    for pos in np.ndindex(*x.shape):
        got = out[pos]
        options = written.get(pos, [x[pos]])
        assert any(got == v or (np.isnan(float(v)) and np.isnan(float(got)))
                   if dtype.kind == "f" or dtype == BF16 else got == v for v in options)


def test_scatter_duplicates_and_bounds():
    x = np.zeros(5, np.float32)
    idx = np.array([[1], [1], [7], [-1], [4]], np.int32)
    upd = np.array([1, 2, 3, 4, 5], np.float32)
    dn = SDN((), (0,), (0,))
    add = lax.scatter_add(from_numpy(x), from_numpy(idx), from_numpy(upd), dn)
    _exact(add, np.array([0, 3, 0, 0, 5], np.float32))
    add = lax.scatter_add(from_numpy(x), from_numpy(idx), from_numpy(upd), dn, mode="clip")
    _exact(add, np.array([4, 3, 0, 0, 8], np.float32))
    mx = lax.scatter_max(from_numpy(x), from_numpy(idx), from_numpy(-upd), dn)
    _exact(mx, np.zeros(5, np.float32))
    mn = lax.scatter_min(from_numpy(x), from_numpy(idx), from_numpy(-upd), dn)
    _exact(mn, np.array([0, -2, 0, 0, -5], np.float32))
    # a window partly out of bounds is dropped whole
    y = np.zeros((4, 3), np.int32)
    win = lax.scatter(from_numpy(y), from_numpy(np.array([[3], [1]], np.int32)),
                      from_numpy(np.ones((2, 2, 3), np.int32)), SDN((1, 2), (), (0,)))
    ref = y.copy()
    ref[1:3] = 1
    _exact(win, ref)


def test_scatter_weak_type_and_python_scalar_updates():
    x = lax.broadcast_in_dim(lax.full((), 1.0), (3,), ())
    out = lax.scatter_add(x, from_numpy(np.array([[0], [0]], np.int32)),
                          lax.full((2,), 2.0), SDN((), (0,), (0,)))
    assert out.weak_type
    _exact(out, np.array([5, 1, 1], np.float32))
    out = lax.scatter(from_numpy(np.zeros(3, np.int8)), from_numpy(np.array([2], np.int32)),
                      5, SDN((), (0,), (0,)))
    _exact(out, np.array([0, 0, 5], np.int8))


def test_half_precision_scatter_add_accumulates_in_float32():
    x = np.zeros(1, np.float16)
    upd = np.full(4096, 1, np.float16)
    out = lax.scatter_add(from_numpy(x), from_numpy(np.zeros((4096, 1), np.int32)),
                          from_numpy(upd), SDN((), (0,), (0,)))
    _exact(out, np.array([4096], np.float16))  # float16 steps of 1 would stop at 2048


def test_gather_and_scatter_on_empty_axes():
    x = np.zeros((0, 3), np.float32)
    out = lax.gather(from_numpy(x), from_numpy(np.zeros((2, 1), np.int32)),
                     GDN((1, 2), (), (1,)), (0, 2))
    _exact(out, np.zeros((2, 0, 2), np.float32))
    out = lax.scatter_add(from_numpy(x), from_numpy(np.zeros((2, 1), np.int32)),
                          from_numpy(np.ones((2, 3), np.float32)), SDN((1,), (0,), (0,)))
    _exact(out, x)


# ---- errors -------------------------------------------------------------------------------
def _f32(*shape):
    return from_numpy(np.zeros(shape, np.float32))


def _i32(*shape):
    return from_numpy(np.zeros(shape, np.int32))


ERRORS = [
    (lambda: lax.dynamic_slice(_f32(4), (1, 2), (2,)), TypeError, "one start index per dim"),
    (lambda: lax.dynamic_slice(_f32(4), (_f32(),), (2,)), TypeError, "0-d integer start"),
    (lambda: lax.dynamic_slice(_f32(4), (_i32(1),), (2,)), TypeError, "0-d integer start"),
    (lambda: lax.dynamic_slice(_f32(4), (0,), (5,)), TypeError, "slice_sizes (5,)"),
    (lambda: lax.dynamic_update_slice(_f32(4), _f32(5), (0,)), TypeError, "fits inside"),
    (lambda: lax.dynamic_update_slice(_f32(4), _i32(2), (0,)), TypeError, "dtype"),
    (lambda: lax.gather(_f32(5, 3), from_numpy(np.zeros((2, 1), np.float32)),
                        GDN((1,), (0,), (0,)), (1, 3)), TypeError, "integer indices"),
    (lambda: lax.gather(_f32(5, 3), _i32(2, 1), GDN((1,), (0,), (0,)), (2, 3)), TypeError,
     "slice size 1"),
    (lambda: lax.gather(_f32(5, 3), _i32(2, 1), GDN((1,), (0,), (0,)), (1, 4)), TypeError,
     "[0, dim]"),
    (lambda: lax.gather(_f32(5, 3), _i32(2, 2), GDN((1,), (0,), (0,)), (1, 3)), TypeError,
     "start_index_map (0,) has 1 entries"),
    (lambda: lax.gather(_f32(5, 3), _i32(2, 1), GDN((2,), (0,), (0,)), (1, 3)), ValueError,
     "offset_dims"),
    (lambda: lax.gather(_f32(5, 3), _i32(2, 1), GDN((1,), (1, 0), (0,)), (1, 1)), ValueError,
     "sorted"),
    (lambda: lax.gather(_f32(5, 3), _i32(2, 1), GDN((), (0, 2), (0,)), (1, 1)), ValueError,
     "collapsed_slice_dims (0, 2) must lie in [0, 2)"),
    (lambda: lax.gather(_f32(5, 3), _i32(2, 1), GDN((1,), (), (0,)), (1, 3)), TypeError,
     "neither collapsed nor batching"),
    (lambda: lax.gather(_f32(5, 3), _i32(4, 1), GDN((), (1,), (1,), (0,), (0,)), (1, 1)),
     TypeError, "differ in size"),
    (lambda: lax.gather(_f32(5, 3), _i32(5, 1), GDN((), (0,), (0,), (0,), (0,)), (1, 1)),
     ValueError, "overlap"),
    (lambda: lax.gather(_f32(5, 3), _i32(2, 1), GDN((1,), (0,), (0,)), (1, 3), mode="wrap"),
     ValueError, "unknown mode 'wrap'"),
    (lambda: lax.gather(_f32(5), _i32(), GDN((), (0,), (0,)), (1,)), TypeError,
     "trailing dim"),
    (lambda: lax.scatter_add(_f32(5), _i32(2, 1), _i32(2), SDN((), (0,), (0,))), TypeError,
     "updates of the operand's dtype"),
    (lambda: lax.scatter_add(_f32(5), _i32(2, 1), _f32(3), SDN((), (0,), (0,))), TypeError,
     "must equal the batch dims"),
    (lambda: lax.scatter_add(_f32(5), _i32(2, 1), _f32(2, 6), SDN((1,), (), (0,))),
     TypeError, "larger than operand dim"),
    (lambda: lax.scatter_mul(_f32(5, 3), _i32(2, 1), _f32(2), SDN((), (0,), (0,))),
     TypeError, "neither inserted nor batching"),
    (lambda: lax.scatter_min(_f32(5), _i32(2, 1), _f32(2), SDN((), (0,), (0,)), mode="fill"),
     None, None),
]


@pytest.mark.parametrize("fn,cls,fragment", ERRORS)
def test_errors(fn, cls, fragment):
    if cls is None:  # "fill" is accepted for scatters as JAX's FILL_OR_DROP
        assert fn().shape == (5,)
        return
    with pytest.raises(cls) as info:
        fn()
    assert fragment in str(info.value)


def test_dimension_numbers_are_hashable_params():
    dn = lax.GatherDimensionNumbers([1], (0,), (0,))
    x = from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    closed = mt.make_jaxpr(lambda a, i: lax.gather(a, i, dn, [1, 3]))(x, _i32(2, 1))
    params = closed.jaxpr.eqns[0].params
    hash(tuple(sorted(params.items())))
    assert params["dimension_numbers"] == GDN((1,), (0,), (0,))
    assert params["mode"] == "clip" and params["slice_sizes"] == (1, 3)
    assert hash(SDN((0,), (1,), (1,))) == hash(SDN((0,), (1,), (1,)))


# ---- tracing ------------------------------------------------------------------------------
def test_make_jaxpr_gather_scatter_evaluate_like_eager():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([[3], [0], [3], [9]], np.int32)

    def f(a, i):
        g = lax.gather(a, i, GDN((1,), (0,), (0,)), (1, 3), mode="fill", fill_value=0.0)
        s = lax.scatter_add(a, i, g, SDN((1,), (0,), (0,)))
        return lax.scatter_max(s, i, g, SDN((1,), (0,), (0,)), mode="clip")

    args = (from_numpy(x), from_numpy(idx))
    closed = mt.make_jaxpr(f)(*args)
    text = str(closed)
    assert "gather" in text and "scatter_add" in text and "scatter_max" in text
    _exact(closed(*args)[0], np.asarray(f(*args)))
