"""mytorch.numpy manipulation functions against NumPy: shapes (rank 0, size-0 axes),
negative axes, dtypes, error cases; every function traced once with make_jaxpr."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.core import dtypes
from mytorch.core.array import from_numpy
from mytorch.errors import ConcretizationTypeError
from tests.strategies import arrays, assert_close, shapes

BF16 = np.dtype(ml_dtypes.bfloat16)
STRUCT_DTYPES = st.sampled_from(
    [np.dtype(t) for t in (np.float32, np.float16, np.int32, np.int8, np.uint8, np.bool_)]
    + [BF16]
)
ERRORS = (ValueError, IndexError, TypeError)


def _arr(data, shape=None, dtype=None, **kw):
    """Draw a NumPy array (shape/dtype drawn when not given) and its mytorch copy."""
    shape = data.draw(shapes(), label="shape") if shape is None else shape
    dtype = data.draw(STRUCT_DTYPES, label="dtype") if dtype is None else dtype
    a = data.draw(arrays(dtype, shape, **kw), label="a")
    return a, from_numpy(a)


def _check(mt_thunk, np_thunk, **tol):
    """Compare results (values, shape, dtype); when NumPy rejects the input, so must we."""
    try:
        expected = np_thunk()
    except ERRORS:
        with pytest.raises(ERRORS):
            mt_thunk()
        return
    actual = mt_thunk()
    if isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_close(a, e, dtype=np.asarray(e).dtype, **tol)
    else:
        assert_close(actual, expected, dtype=np.asarray(expected).dtype, **tol)


def _axis_or_none(data, ndim, extra=0):
    """An axis in [-ndim - extra, ndim + extra), or None."""
    n = ndim + extra
    return data.draw(st.one_of(st.none(), st.integers(-n, max(n - 1, 0))), label="axis")


# ---- reshaping and transposing --------------------------------------------------------------
def _reshape_targets(shape):
    dims = list(shape)

    def variants(draw_ops):
        ds = list(dims)
        for op, i in draw_ops:
            if op == "merge" and len(ds) >= 2:
                i %= len(ds) - 1
                ds[i:i + 2] = [ds[i] * ds[i + 1]]
            elif op == "one":
                ds.insert(i % (len(ds) + 1), 1)
            elif op == "split" and ds and ds[i % len(ds)] % 2 == 0 and ds[i % len(ds)]:
                j = i % len(ds)
                ds[j:j + 1] = [2, ds[j] // 2]
        return ds

    ops = st.lists(st.tuples(st.sampled_from(["merge", "one", "split"]), st.integers(0, 9)),
                   max_size=4)
    return ops.map(variants)


@given(data=st.data())
def test_reshape(data):
    a, x = _arr(data)
    target = data.draw(_reshape_targets(a.shape), label="target")
    if target and data.draw(st.booleans(), label="unknown"):
        target[data.draw(st.integers(0, len(target) - 1))] = -1
    if len(target) == 1 and data.draw(st.booleans()):
        target = target[0]
    order = data.draw(st.sampled_from(["C", "F"]), label="order")
    _check(lambda: mnp.reshape(x, target, order=order),
           lambda: np.reshape(a, target, order=order))


@given(data=st.data())
def test_reshape_invalid_shapes(data):
    a, x = _arr(data)
    target = data.draw(st.lists(st.integers(-2, 6), max_size=4), label="target")
    _check(lambda: mnp.reshape(x, target), lambda: np.reshape(a, target))


def test_reshape_error_message():
    x = mnp.zeros((2, 3))
    with pytest.raises(TypeError, match=r"cannot reshape f32\[2,3\] \(6 elements\) into shape "
                                        r"\(4, -1\)"):  # JAX's class
        mnp.reshape(x, (4, -1))
    with pytest.raises(TypeError, match="only specify one unknown"):
        mnp.reshape(x, (-1, -1))
    with pytest.raises(ValueError, match="order"):
        mnp.reshape(x, (6,), order="K")


@given(data=st.data())
def test_ravel(data):
    a, x = _arr(data)
    order = data.draw(st.sampled_from(["C", "F"]))
    _check(lambda: mnp.ravel(x, order), lambda: np.ravel(a, order))


@given(data=st.data())
def test_transpose_family(data):
    a, x = _arr(data)
    nd = a.ndim
    perm = data.draw(st.permutations(range(nd)), label="perm")
    perm = [p - nd if data.draw(st.booleans()) else p for p in perm]
    _check(lambda: mnp.transpose(x), lambda: np.transpose(a))
    _check(lambda: mnp.transpose(x, perm), lambda: np.transpose(a, perm))
    _check(lambda: mnp.permute_dims(x, perm), lambda: np.permute_dims(a, perm))
    _check(lambda: mnp.matrix_transpose(x), lambda: np.matrix_transpose(a))
    if nd:
        i, j = (data.draw(st.integers(-nd, nd - 1)) for _ in range(2))
        _check(lambda: mnp.swapaxes(x, i, j), lambda: np.swapaxes(a, i, j))
        start = data.draw(st.integers(-nd - 1, nd + 1))
        _check(lambda: mnp.rollaxis(x, i, start), lambda: np.rollaxis(a, i, start))


@given(data=st.data())
def test_moveaxis(data):
    a, x = _arr(data, shape=data.draw(shapes(min_dims=1)))
    nd = a.ndim
    k = data.draw(st.integers(1, nd))
    src = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=k, max_size=k))
    dst = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=k, max_size=k))
    _check(lambda: mnp.moveaxis(x, src, dst), lambda: np.moveaxis(a, src, dst))
    _check(lambda: mnp.moveaxis(x, src[0], dst[0]), lambda: np.moveaxis(a, src[0], dst[0]))


@given(data=st.data())
def test_squeeze(data):
    shape = data.draw(shapes(max_side=2))
    a, x = _arr(data, shape=shape)
    nd = a.ndim
    _check(lambda: mnp.squeeze(x), lambda: np.squeeze(a))
    axes = data.draw(st.lists(st.integers(-max(nd, 1), max(nd, 1) - 1), max_size=3))
    _check(lambda: mnp.squeeze(x, tuple(axes)), lambda: np.squeeze(a, tuple(axes)))
    if axes:
        _check(lambda: mnp.squeeze(x, axes[0]), lambda: np.squeeze(a, axes[0]))


@given(data=st.data())
def test_expand_dims(data):
    a, x = _arr(data)
    n = a.ndim + 2
    axes = tuple(data.draw(st.lists(st.integers(-n - 1, n), min_size=1, max_size=2)))
    _check(lambda: mnp.expand_dims(x, axes), lambda: np.expand_dims(a, axes))
    _check(lambda: mnp.expand_dims(x, axes[0]), lambda: np.expand_dims(a, axes[0]))


@given(data=st.data())
def test_atleast(data):
    pairs = [_arr(data, shape=data.draw(shapes(max_dims=4))) for _ in range(data.draw(
        st.integers(1, 3)))]
    nps, mts = [p[0] for p in pairs], [p[1] for p in pairs]
    for mfn, nfn in [(mnp.atleast_1d, np.atleast_1d), (mnp.atleast_2d, np.atleast_2d),
                     (mnp.atleast_3d, np.atleast_3d)]:
        _check(lambda: mfn(*mts), lambda: nfn(*nps))


def test_atleast_python_scalar_keeps_weak_type():
    y = mnp.atleast_2d(2.0)
    assert y.shape == (1, 1) and y.dtype == np.float32 and y.weak_type


# ---- broadcasting ---------------------------------------------------------------------------
@given(data=st.data())
def test_broadcast_to(data):
    target = data.draw(shapes(max_dims=4), label="target")
    shape = data.draw(st.one_of(hnp.broadcastable_shapes(target, min_side=0, max_side=5),
                                shapes()),
                      label="shape")
    a, x = _arr(data, shape=shape)
    _check(lambda: mnp.broadcast_to(x, target), lambda: np.broadcast_to(a, target))


@given(data=st.data())
def test_broadcast_arrays_and_shapes(data):
    shps = data.draw(st.one_of(
        hnp.mutually_broadcastable_shapes(num_shapes=3, max_side=4).map(lambda r: r.input_shapes),
        st.lists(shapes(max_dims=3, max_side=3), min_size=1, max_size=3).map(tuple)))
    pairs = [_arr(data, shape=s) for s in shps]
    nps, mts = [p[0] for p in pairs], [p[1] for p in pairs]
    _check(lambda: mnp.broadcast_arrays(*mts), lambda: np.broadcast_arrays(*nps))
    try:
        expected = np.broadcast_shapes(*shps)
    except ValueError:
        with pytest.raises(ValueError, match="incompatible"):
            mnp.broadcast_shapes(*shps)
    else:
        assert mnp.broadcast_shapes(*shps) == expected


def test_broadcast_errors():
    with pytest.raises(ValueError, match=r"cannot broadcast f32\[3\] to shape \(4,\)"):
        mnp.broadcast_to(mnp.zeros(3), (4,))
    assert mnp.broadcast_shapes(3, (2, 1)) == (2, 3)


# ---- joining --------------------------------------------------------------------------------
def _lattice(*dts):
    out = dts[0]
    for d in dts[1:]:
        out = dtypes.promote_types(out, d)
    return out


@given(data=st.data())
def test_concatenate(data):
    base = list(data.draw(shapes(min_dims=1, max_dims=3, max_side=3), label="base"))
    axis = data.draw(st.integers(-len(base), len(base) - 1), label="axis")
    n = data.draw(st.integers(1, 4), label="n")
    nps = []
    for _ in range(n):
        s = list(base)
        s[axis] = data.draw(st.integers(0, 3))
        nps.append(data.draw(arrays(STRUCT_DTYPES, tuple(s))))
    mts = [from_numpy(a) for a in nps]
    dt = _lattice(*[a.dtype for a in nps])
    expected = np.concatenate([a.astype(dt) for a in nps], axis)
    assert_close(mnp.concatenate(mts, axis), expected, dtype=dt)
    assert_close(mnp.concat(mts, axis=axis), expected, dtype=dt)
    flat = np.concatenate([a.astype(dt).ravel() for a in nps])
    assert_close(mnp.concatenate(mts, axis=None), flat, dtype=dt)
    assert_close(mnp.concatenate(mts, axis, dtype=np.float32),
                 np.concatenate([a.astype(np.float32) for a in nps], axis), dtype=np.float32)
    first, last = (a.astype(_lattice(nps[0].dtype, nps[-1].dtype)) for a in (nps[0], nps[-1]))
    assert_close(mnp.append(mts[0], mts[-1], axis), np.append(first, last, axis))
    assert_close(mnp.append(mts[0], mts[-1]), np.append(first, last))


def test_concatenate_of_an_array_and_errors():
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    assert_close(mnp.concatenate(from_numpy(a)), np.concatenate(a))
    b = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
    assert_close(mnp.concatenate(from_numpy(b), axis=1), np.concatenate(b, axis=1))
    with pytest.raises(ValueError, match="zero-dimensional"):
        mnp.concatenate([mnp.zeros(()), mnp.zeros(())])
    with pytest.raises(TypeError, match=r"f32\[2,3\] and f32\[2,4\] differ along axis 1"):
        mnp.concatenate([mnp.zeros((2, 3)), mnp.zeros((2, 4))])  # JAX's class
    with pytest.raises(TypeError, match="same number of dimensions"):
        mnp.concatenate([mnp.zeros((2, 3)), mnp.zeros(3)])
    with pytest.raises(ValueError, match="at least one array"):
        mnp.concatenate([])
    with pytest.raises(ValueError, match=r"concatenate: axis 2 is out of bounds for f32\[2,3\]"
                                         r" \(rank 2\)"):
        mnp.concatenate([mnp.zeros((2, 3))], axis=2)


def test_concatenate_weak_types():
    weak = mnp.expand_dims(1.0, 0)
    assert weak.weak_type
    assert mnp.concatenate([weak, weak]).weak_type
    strong = mnp.concatenate([weak, from_numpy(np.ones(2, np.float16))])
    assert strong.dtype == np.float16 and not strong.weak_type


@given(data=st.data())
def test_stack_family(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    n = data.draw(st.integers(1, 3))
    nps = [data.draw(arrays(STRUCT_DTYPES, shape)) for _ in range(n)]
    mts = [from_numpy(a) for a in nps]
    dt = _lattice(*[a.dtype for a in nps])
    cast = [a.astype(dt) for a in nps]
    axis = data.draw(st.integers(-len(shape) - 2, len(shape) + 1), label="axis")
    _check(lambda: mnp.stack(mts, axis), lambda: np.stack(cast, axis))
    for mfn, nfn in [(mnp.hstack, np.hstack), (mnp.vstack, np.vstack), (mnp.dstack, np.dstack),
                     (mnp.column_stack, np.column_stack), (mnp.row_stack, np.vstack)]:
        _check(lambda: mfn(mts), lambda: nfn(cast))
    _check(lambda: mnp.unstack(mts[0], axis=axis), lambda: np.unstack(nps[0], axis=axis))


def test_stack_errors_and_array_input():
    with pytest.raises(ValueError, match=r"same shape, got f32\[2\] and f32\[3\]"):
        mnp.stack([mnp.zeros(2), mnp.zeros(3)])
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert_close(mnp.stack(from_numpy(a), axis=1), np.stack(a, axis=1))
    assert_close(mnp.hstack([1, 2.5]), np.array([1, 2.5], np.float32))


def test_block():
    a = np.ones((2, 2), np.float32)
    b = np.zeros((2, 3), np.float32)
    c = np.full((1, 5), 2, np.int32)
    m = [from_numpy(v) for v in (a, b, c)]
    assert_close(mnp.block([[m[0], m[1]], [m[2]]]),
                 np.block([[a, b], [c.astype(np.float32)]]))
    assert_close(mnp.block([m[0], m[0]]), np.block([a, a]))
    assert_close(mnp.block([1, 2, 3]), np.array([1, 2, 3], np.int32))
    with pytest.raises(ValueError, match="depths are mismatched"):
        mnp.block([[m[0]], m[1]])


# ---- splitting ------------------------------------------------------------------------------
@given(data=st.data())
def test_split_family(data):
    a, x = _arr(data, shape=data.draw(shapes(min_dims=1, max_dims=3, max_side=7)))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    spec = data.draw(st.one_of(
        st.integers(1, 5),
        st.lists(st.integers(-9, 9), max_size=4),
        st.lists(st.integers(0, 8), max_size=4).map(sorted)), label="spec")
    _check(lambda: mnp.split(x, spec, axis), lambda: np.split(a, spec, axis))
    _check(lambda: mnp.array_split(x, spec, axis), lambda: np.array_split(a, spec, axis))
    for mfn, nfn in [(mnp.hsplit, np.hsplit), (mnp.vsplit, np.vsplit),
                     (mnp.dsplit, np.dsplit)]:
        _check(lambda: mfn(x, spec), lambda: nfn(a, spec))


def test_split_errors():
    x = mnp.arange(10.0)
    with pytest.raises(ValueError, match="array split does not result in an equal division"):
        mnp.split(x, 3)
    assert [p.shape for p in mnp.array_split(x, 3)] == [(4,), (3,), (3,)]
    with pytest.raises(ValueError, match="larger than 0"):
        mnp.array_split(x, 0)
    with pytest.raises(ValueError, match="rank >= 2"):
        mnp.vsplit(x, 2)


# ---- tiling and repeating -------------------------------------------------------------------
@given(data=st.data())
def test_tile(data):
    a, x = _arr(data, shape=data.draw(shapes(max_dims=3, max_side=3)))
    reps = data.draw(st.one_of(st.integers(0, 3),
                               st.lists(st.integers(0, 3), max_size=4).map(tuple)))
    _check(lambda: mnp.tile(x, reps), lambda: np.tile(a, reps))


def _np_repeat_total(a, repeats, axis, total):
    """JAX's total_repeat_length: cut, or pad with the input's last element on the axis."""
    out = np.repeat(a, repeats, axis)
    if axis is None or a.ndim == 0:
        a, ax = a.ravel(), 0
    else:
        ax = axis
    n = out.shape[ax]
    if total <= n:
        return np.take(out, np.arange(total), axis=ax)
    last = np.take(a, [a.shape[ax] - 1] * (total - n), axis=ax)
    return np.concatenate([out, last], axis=ax)


@given(data=st.data())
def test_repeat(data):
    a, x = _arr(data, shape=data.draw(shapes(max_dims=3, max_side=4)))
    axis = _axis_or_none(data, a.ndim)
    n = a.size if axis is None else (a.shape[axis] if a.ndim else 1)
    repeats = data.draw(st.one_of(
        st.integers(0, 3),
        st.lists(st.integers(0, 3), min_size=n, max_size=n),
        st.lists(st.integers(0, 3), min_size=1, max_size=1),
        st.lists(st.integers(-1, 3), max_size=4)), label="repeats")
    _check(lambda: mnp.repeat(x, repeats, axis), lambda: np.repeat(a, repeats, axis))
    if min(np.asarray(repeats).reshape(-1), default=0) >= 0 and (
            np.asarray(repeats).ndim == 0 or len(repeats) in (1, n)):
        total = data.draw(st.integers(0, 8), label="total")
        expected_len = np.repeat(a, repeats, axis).shape[0 if axis is None else axis % max(
            a.ndim, 1)]
        if expected_len or not total:
            _check(lambda: mnp.repeat(x, repeats, axis, total_repeat_length=total),
                   lambda: _np_repeat_total(a, repeats, axis, total))


def test_repeat_many_pieces_uses_a_gather():
    a = np.arange(40, dtype=np.float32).reshape(20, 2)
    reps = np.arange(20) % 3
    assert_close(mnp.repeat(from_numpy(a), reps, axis=0), np.repeat(a, reps, axis=0))
    assert_close(mnp.repeat(from_numpy(a), list(reps), axis=0), np.repeat(a, reps, axis=0))


@settings(max_examples=10)
@given(data=st.data())
def test_repeat_traced(data):
    a, x = _arr(data, shape=data.draw(shapes(min_dims=1, max_dims=2, max_side=4)),
                dtype=np.float32)
    n = a.shape[0]
    reps = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int32)
    total = int(reps.sum()) + data.draw(st.integers(-1, 2)) if n else 0
    total = max(total, 0)
    if n == 0:
        return
    closed = mt.make_jaxpr(lambda v, r: mnp.repeat(v, r, axis=0,
                                                   total_repeat_length=total))(x, reps)
    out = closed(x, from_numpy(reps))[0]
    assert_close(out, _np_repeat_total(a, reps, 0, total))
    with pytest.raises(ConcretizationTypeError, match="total_repeat_length"):
        mt.make_jaxpr(lambda v, r: mnp.repeat(v, r, axis=0))(x, reps)


# ---- reordering -----------------------------------------------------------------------------
@given(data=st.data())
def test_flip(data):
    a, x = _arr(data)
    nd = a.ndim
    axis = data.draw(st.one_of(st.none(), st.integers(-nd - 1, nd),
                               st.lists(st.integers(-max(nd, 1), max(nd, 1) - 1),
                                        max_size=2).map(tuple)))
    _check(lambda: mnp.flip(x, axis), lambda: np.flip(a, axis))
    _check(lambda: mnp.fliplr(x), lambda: np.fliplr(a))
    _check(lambda: mnp.flipud(x), lambda: np.flipud(a))


@given(data=st.data())
def test_roll(data):
    a, x = _arr(data)
    nd = a.ndim
    if nd and data.draw(st.booleans()):
        k = data.draw(st.integers(1, 3))
        axis = tuple(data.draw(st.lists(st.integers(-nd, nd - 1), min_size=k, max_size=k)))
        shift = data.draw(st.one_of(st.integers(-12, 12),
                                    st.lists(st.integers(-12, 12), min_size=k,
                                             max_size=k).map(tuple)))
    else:
        axis = _axis_or_none(data, nd)
        shift = data.draw(st.integers(-12, 12))
    _check(lambda: mnp.roll(x, shift, axis), lambda: np.roll(a, shift, axis))


@settings(max_examples=15)
@given(data=st.data())
def test_roll_traced_shift(data):
    a, x = _arr(data, shape=data.draw(shapes(min_dims=1, max_dims=3)))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    shift = data.draw(st.integers(-12, 12))
    closed = mt.make_jaxpr(lambda v, s: mnp.roll(v, s, axis))(x, np.int32(shift))
    assert_close(closed(x, from_numpy(np.int32(shift)))[0], np.roll(a, shift, axis))
    closed = mt.make_jaxpr(lambda v, s: mnp.roll(v, s))(x, np.int32(shift))
    assert_close(closed(x, from_numpy(np.int32(shift)))[0], np.roll(a, shift))


@given(data=st.data())
def test_rot90(data):
    a, x = _arr(data, shape=data.draw(shapes(min_dims=2, max_dims=4, max_side=4)))
    nd = a.ndim
    k = data.draw(st.integers(-5, 5))
    axes = tuple(data.draw(st.lists(st.integers(-nd, nd - 1), min_size=2, max_size=2)))
    _check(lambda: mnp.rot90(x, k, axes), lambda: np.rot90(a, k, axes))
    _check(lambda: mnp.rot90(x), lambda: np.rot90(a))


# ---- padding --------------------------------------------------------------------------------
def _pad_widths(ndim, hi=7):
    w = st.integers(0, hi)
    return st.one_of(
        w, st.tuples(w), st.tuples(w, w), st.tuples(st.tuples(w, w)),
        st.lists(st.tuples(w, w), min_size=ndim, max_size=ndim).map(tuple),
        st.lists(st.tuples(w), min_size=ndim, max_size=ndim).map(tuple))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap",
                                  "linear_ramp", "maximum", "minimum", "mean", "median",
                                  "empty"])
@settings(max_examples=20)
@given(data=st.data())
def test_pad(mode, data):
    numeric = mode in ("linear_ramp", "mean", "median")
    dts = [np.float32, np.int32, np.int16, np.uint8, np.float16] if numeric else [
        np.float32, np.float16, np.int32, np.int8, np.uint8, np.bool_, BF16]
    dtype = np.dtype(data.draw(st.sampled_from(dts), label="dtype"))
    a, x = _arr(data, shape=data.draw(shapes(max_dims=3, max_side=4)), dtype=dtype,
                min_value=-100 if numeric else None, max_value=100 if numeric else None)
    width = data.draw(_pad_widths(a.ndim), label="pad_width")
    kwargs = {}
    if mode == "constant" and data.draw(st.booleans()):
        v = st.integers(0, 9)
        kwargs["constant_values"] = data.draw(st.one_of(
            v, st.tuples(v, v),
            st.lists(st.tuples(v, v), min_size=a.ndim, max_size=a.ndim).map(tuple)))
    if mode in ("reflect", "symmetric"):
        kwargs["reflect_type"] = data.draw(st.sampled_from(["even", "odd"]))
        if kwargs["reflect_type"] == "odd" and dtype in (np.bool_, BF16):
            kwargs["reflect_type"] = "even"
    if mode == "linear_ramp":
        v = st.integers(-50, 50)
        kwargs["end_values"] = data.draw(st.one_of(v, st.tuples(v, v)))
    if mode in ("maximum", "minimum", "mean", "median"):
        kwargs["stat_length"] = data.draw(st.one_of(
            st.none(), st.integers(1, 5), st.tuples(st.integers(1, 5), st.integers(1, 5))))
    tol = {"atol": 1.0} if dtype == np.float16 and numeric else {}
    if mode == "linear_ramp" and dtype == np.float32:
        tol = {"rtol": 1e-5, "atol": 1e-4}  # NumPy computes the ramp in float64
    if mode == "empty":
        try:
            expected = np.pad(a, width, mode)
        except ERRORS:
            with pytest.raises(ERRORS):
                mnp.pad(x, width, mode)
            return
        out = mnp.pad(x, width, mode)
        assert out.shape == expected.shape and out.dtype == expected.dtype
        return
    _check(lambda: mnp.pad(x, width, mode, **kwargs), lambda: np.pad(a, width, mode, **kwargs),
           **tol)


def test_pad_array_constant_values_and_errors():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = from_numpy(a)
    assert_close(mnp.pad(x, 1, constant_values=from_numpy(np.float32(7))),
                 np.pad(a, 1, constant_values=7))
    cv = np.array([[1, 2], [3, 4]], np.float32)
    assert_close(mnp.pad(x, ((1, 2), (2, 1)), constant_values=from_numpy(cv)),
                 np.pad(a, ((1, 2), (2, 1)), constant_values=cv))
    with pytest.raises(ValueError, match="mode 'bogus' is not supported"):
        mnp.pad(x, 1, "bogus")
    with pytest.raises(ValueError, match="unsupported keyword"):
        mnp.pad(x, 1, "edge", constant_values=3)
    with pytest.raises(ValueError, match="non-negative"):
        mnp.pad(x, -1)
    with pytest.raises(ValueError, match="can't extend the empty axis"):
        mnp.pad(mnp.zeros((0, 3)), 1, "wrap")
    with pytest.raises(ValueError, match=r"cannot be broadcast to \(2, 2\)"):
        mnp.pad(x, ((1, 2, 3),))


def test_pad_traced():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = from_numpy(np.float32(-3))
    closed = mt.make_jaxpr(lambda v, cv: mnp.pad(v, 2, constant_values=cv))(from_numpy(a), c)
    assert_close(closed(from_numpy(a), c)[0], np.pad(a, 2, constant_values=-3))
    for mode in ("constant", "reflect", "wrap", "mean", "linear_ramp"):
        closed = mt.make_jaxpr(lambda v: mnp.pad(v, ((1, 3), (4, 0)), mode))(from_numpy(a))
        assert_close(closed(from_numpy(a))[0], np.pad(a, ((1, 3), (4, 0)), mode))


# ---- diagonals ------------------------------------------------------------------------------
@given(data=st.data())
def test_diagonal_and_trace(data):
    a, x = _arr(data, shape=data.draw(shapes(min_dims=2, max_dims=4, max_side=4)))
    nd = a.ndim
    offset = data.draw(st.integers(-5, 5))
    ax1, ax2 = (data.draw(st.integers(-nd, nd - 1)) for _ in range(2))
    _check(lambda: mnp.diagonal(x, offset, ax1, ax2), lambda: np.diagonal(a, offset, ax1, ax2))
    if a.dtype in (np.float32, np.int32):
        _check(lambda: mnp.trace(x, offset, ax1, ax2),
               lambda: np.trace(a, offset, ax1, ax2).astype(a.dtype), rtol=1e-5)


@given(data=st.data())
def test_diag(data):
    a, x = _arr(data, shape=data.draw(shapes(max_dims=3, max_side=5)))
    k = data.draw(st.integers(-6, 6))
    _check(lambda: mnp.diag(x, k), lambda: np.diag(a, k))
    _check(lambda: mnp.diagflat(x, k), lambda: np.diagflat(a, k))


def test_trace_dtypes():
    x = from_numpy(np.arange(9, dtype=np.int8).reshape(3, 3))
    assert mnp.trace(x).dtype == np.int32 and int(mnp.trace(x)) == 12
    assert mnp.trace(x, dtype=np.float32).dtype == np.float32
    assert mnp.trace(from_numpy(np.eye(3, dtype=np.float16))).dtype == np.float16


@given(n=st.integers(0, 5), k=st.integers(-4, 4), m=st.one_of(st.none(), st.integers(0, 5)))
def test_triangle_and_diag_indices(n, k, m):
    for mfn, nfn in [(mnp.tril_indices, np.tril_indices), (mnp.triu_indices, np.triu_indices)]:
        got, want = mfn(n, k, m), nfn(n, k, m)
        assert len(got) == 2
        for g, w in zip(got, want, strict=True):
            assert_close(g, w.astype(np.int32), dtype=np.int32)
    a = np.zeros((n, n if m is None else m))
    for mfn, nfn in [(mnp.tril_indices_from, np.tril_indices_from),
                     (mnp.triu_indices_from, np.triu_indices_from)]:
        for g, w in zip(mfn(from_numpy(a), k), nfn(a, k), strict=True):
            assert_close(g, w.astype(np.int32), dtype=np.int32)
    for g, w in zip(mnp.diag_indices(n, 3), np.diag_indices(n, 3), strict=True):
        assert_close(g, w.astype(np.int32), dtype=np.int32)
    with pytest.raises(ValueError, match="must be 2-D"):
        mnp.tril_indices_from(mnp.zeros(3))


# ---- resize, insert, delete, trim_zeros -----------------------------------------------------
@given(data=st.data())
def test_resize(data):
    a, x = _arr(data, shape=data.draw(shapes(max_dims=3, max_side=3)))
    new = data.draw(st.one_of(st.integers(0, 10), shapes(max_dims=3, max_side=4)))
    _check(lambda: mnp.resize(x, new), lambda: np.resize(a, new))


def _obj(data, n):
    return data.draw(st.one_of(
        st.integers(-n - 2, n + 2),
        st.lists(st.integers(-n - 1, n + 1), max_size=4),
        st.lists(st.booleans(), min_size=n, max_size=n).map(np.array),
        st.builds(slice, st.one_of(st.none(), st.integers(-n, n)),
                  st.one_of(st.none(), st.integers(-n, n)),
                  st.one_of(st.none(), st.sampled_from([1, 2, -1, 3])))), label="obj")


@given(data=st.data())
def test_delete(data):
    a, x = _arr(data, shape=data.draw(shapes(max_dims=3, max_side=5)))
    axis = _axis_or_none(data, a.ndim) if a.ndim else None
    n = a.size if axis is None else a.shape[axis]
    obj = _obj(data, n)
    _check(lambda: mnp.delete(x, obj, axis), lambda: np.delete(a, obj, axis))


@given(data=st.data())
def test_insert(data):
    a, x = _arr(data, shape=data.draw(shapes(max_dims=3, max_side=4)), dtype=np.int32)
    axis = _axis_or_none(data, a.ndim) if a.ndim else None
    n = a.size if axis is None else a.shape[axis]
    obj = _obj(data, n)
    values = data.draw(st.one_of(st.integers(-9, 9),
                                 st.lists(st.integers(-9, 9), min_size=1, max_size=3)))
    if isinstance(obj, list) and len(obj) > 1 and any(not -n <= i <= n for i in obj):
        with pytest.raises(IndexError, match="out of bounds"):  # NumPy wraps these around
            mnp.insert(x, obj, values, axis)
        return
    _check(lambda: mnp.insert(x, obj, values, axis), lambda: np.insert(a, obj, values, axis))


@given(data=st.data())
def test_trim_zeros(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=5))
    a, x = _arr(data, shape=shape, dtype=np.int32, elements=st.sampled_from([0, 0, 0, 1, 2]))
    trim = data.draw(st.sampled_from(["fb", "f", "b", "BF"]))
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)))
    _check(lambda: mnp.trim_zeros(x, trim, axis), lambda: np.trim_zeros(a, trim, axis))


def test_trim_zeros_is_eager_only():
    with pytest.raises(ConcretizationTypeError, match="trim_zeros"):
        mt.make_jaxpr(mnp.trim_zeros)(mnp.zeros(3))


# ---- errors ---------------------------------------------------------------------------------
def test_axis_and_shape_errors():
    x = mnp.zeros((2, 3))
    with pytest.raises(ValueError, match=r"squeeze: cannot squeeze axis 1 of f32\[2,3\]"):
        mnp.squeeze(x, 1)
    with pytest.raises(ValueError, match=r"swapaxes: axis 3 is out of bounds for f32\[2,3\] "
                                         r"\(rank 2\)"):
        mnp.swapaxes(x, 0, 3)
    with pytest.raises(ValueError, match="result rank 3"):
        mnp.expand_dims(x, 3)
    with pytest.raises(ValueError, match="repeated axis"):
        mnp.expand_dims(x, (0, 0))
    with pytest.raises(TypeError, match="don't match"):  # JAX's class for transpose
        mnp.transpose(x, (0,))
    with pytest.raises(TypeError, match="repeated axis"):
        mnp.transpose(x, (1, 1))
    with pytest.raises(ValueError, match="same number of elements"):
        mnp.moveaxis(x, (0, 1), 0)
    with pytest.raises(ValueError, match="rank >= 2"):
        mnp.diagonal(mnp.zeros(3))
    with pytest.raises(ValueError, match="cannot be the same"):
        mnp.diagonal(x, 0, 1, -1)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        mnp.diag(mnp.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="axes must be different"):
        mnp.rot90(x, 1, (0, -2))
    with pytest.raises(ValueError, match="3 repeats for an axis of size 2"):
        mnp.repeat(x, [1, 2, 3], axis=0)
    with pytest.raises(ValueError, match="non-negative"):
        mnp.tile(x, -1)
    with pytest.raises(IndexError, match="out of bounds"):
        mnp.delete(x, 7)
    with pytest.raises(TypeError, match="axis must be an int"):
        mnp.flip(x, 1.5)


def test_static_arguments_must_be_concrete():
    x = mnp.zeros((4, 3))
    with pytest.raises(ConcretizationTypeError, match="indices_or_sections"):
        mt.make_jaxpr(lambda v, k: mnp.split(v, k))(x, np.int32(2))
    with pytest.raises(ConcretizationTypeError, match="reps"):
        mt.make_jaxpr(lambda v, r: mnp.tile(v, r))(x, np.int32(2))


# ---- tracing: every function once -----------------------------------------------------------
_A = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
_M = np.arange(12, dtype=np.float32).reshape(3, 4)
_V = np.arange(5, dtype=np.float32)
TRACED = [
    ("reshape", lambda x: mnp.reshape(x, (4, -1), order="F"), _A),
    ("ravel", mnp.ravel, _A),
    ("transpose", lambda x: mnp.transpose(x, (2, 0, 1)), _A),
    ("permute_dims", lambda x: mnp.permute_dims(x, (1, 0, 2)), _A),
    ("matrix_transpose", mnp.matrix_transpose, _A),
    ("moveaxis", lambda x: mnp.moveaxis(x, 0, -1), _A),
    ("swapaxes", lambda x: mnp.swapaxes(x, 0, 2), _A),
    ("rollaxis", lambda x: mnp.rollaxis(x, 2), _A),
    ("squeeze", lambda x: mnp.squeeze(mnp.expand_dims(x, 1), 1), _A),
    ("expand_dims", lambda x: mnp.expand_dims(x, (0, -1)), _A),
    ("atleast_1d", mnp.atleast_1d, np.float32(3)),
    ("atleast_2d", mnp.atleast_2d, _V),
    ("atleast_3d", mnp.atleast_3d, _M),
    ("broadcast_to", lambda x: mnp.broadcast_to(x, (2, 3, 5)), _V),
    ("broadcast_arrays", lambda x: mnp.broadcast_arrays(x, _M[:, :1])[1], _V[:4]),
    ("concatenate", lambda x: mnp.concatenate([x, x], axis=-1), _M),
    ("concat", lambda x: mnp.concat([x, x]), _M),
    ("stack", lambda x: mnp.stack([x, x], axis=1), _M),
    ("unstack", lambda x: mnp.unstack(x, axis=1)[2], _M),
    ("hstack", lambda x: mnp.hstack([x, x]), _M),
    ("vstack", lambda x: mnp.vstack([x, x]), _V),
    ("dstack", lambda x: mnp.dstack([x, x]), _M),
    ("column_stack", lambda x: mnp.column_stack([x, x]), _V),
    ("block", lambda x: mnp.block([[x, x], [x, x]]), _M),
    ("append", lambda x: mnp.append(x, x, axis=0), _M),
    ("split", lambda x: mnp.split(x, [1, 3], axis=1)[1], _M),
    ("array_split", lambda x: mnp.array_split(x, 3, axis=1)[0], _M),
    ("hsplit", lambda x: mnp.hsplit(x, 2)[1], _M),
    ("vsplit", lambda x: mnp.vsplit(x, 3)[2], _M),
    ("dsplit", lambda x: mnp.dsplit(x, 2)[0], _A),
    ("tile", lambda x: mnp.tile(x, (2, 1, 3)), _M),
    ("repeat", lambda x: mnp.repeat(x, [1, 0, 2], axis=0), _M),
    ("repeat_int", lambda x: mnp.repeat(x, 2), _M),
    ("flip", lambda x: mnp.flip(x, (0, 2)), _A),
    ("fliplr", mnp.fliplr, _M),
    ("flipud", mnp.flipud, _M),
    ("roll", lambda x: mnp.roll(x, (1, -2), (0, 1)), _M),
    ("rot90", lambda x: mnp.rot90(x, 3, (2, 0)), _A),
    ("pad", lambda x: mnp.pad(x, ((0, 1), (2, 3)), "symmetric", reflect_type="odd"), _M),
    ("diagonal", lambda x: mnp.diagonal(x, 1, 2, 1), _A),
    ("diag", lambda x: mnp.diag(x, -2), _V),
    ("diagflat", lambda x: mnp.diagflat(x, 1), _M[:2, :2]),
    ("trace", lambda x: mnp.trace(x, -1), _M),
    ("resize", lambda x: mnp.resize(x, (5, 7)), _M),
    ("insert", lambda x: mnp.insert(x, [0, 2, 2], -1.0, axis=1), _M),
    ("delete", lambda x: mnp.delete(x, slice(0, 4, 2), axis=1), _M),
]


@pytest.mark.parametrize("name, fn, arg", TRACED, ids=[t[0] for t in TRACED])
def test_make_jaxpr(name, fn, arg):
    x = from_numpy(arg)
    closed = mt.make_jaxpr(fn)(x)
    assert closed.jaxpr.eqns, name
    assert_close(closed(x)[0], fn(x))


def test_all_public_names_are_traced():
    traced = {t[0] for t in TRACED}
    others = {"broadcast_shapes", "tril_indices", "triu_indices", "tril_indices_from",
              "triu_indices_from", "diag_indices", "diag_indices_from", "trim_zeros",
              "row_stack"}
    assert set(mnp.manipulation.__all__) <= traced | others


def test_float64_with_x64(x64):
    a = np.arange(12, dtype=np.float64).reshape(3, 4) / 7
    x = from_numpy(a)
    assert x.dtype == np.float64
    for mfn, nfn in [
        (lambda v: mnp.pad(v, ((1, 2), (3, 1)), "linear_ramp", end_values=(-1, 2)),
         lambda v: np.pad(v, ((1, 2), (3, 1)), "linear_ramp", end_values=(-1, 2))),
        (lambda v: mnp.pad(v, 2, "mean"), lambda v: np.pad(v, 2, "mean")),
        (lambda v: mnp.roll(v, 5, 1), lambda v: np.roll(v, 5, 1)),
        (lambda v: mnp.repeat(v, [1, 3, 0], axis=0), lambda v: np.repeat(v, [1, 3, 0], axis=0)),
        (lambda v: mnp.diag(mnp.diagonal(v, 1), -1), lambda v: np.diag(np.diagonal(v, 1), -1)),
        (lambda v: mnp.trace(v), lambda v: np.trace(v)),
    ]:
        assert_close(mfn(x), nfn(a), dtype=np.float64)
    mixed = mnp.concatenate([x, from_numpy(np.ones((1, 4), np.float32))])
    assert mixed.dtype == np.float64
    ints = mnp.concatenate([from_numpy(np.ones(2, np.int64)), from_numpy(np.ones(2, np.uint32))])
    assert ints.dtype == np.int64
    idx = mnp.tril_indices(3)
    assert idx[0].dtype == np.int64
