"""Out-of-bounds integer indices, static or traced: gathers clamp (or fill with
mode="fill"), scatters drop (or clamp with mode="clip"); negative indices count from the
end once first; slices keep NumPy's clipping. One NumPy reference of these rules (written
here, independently of the library) checks four ways of passing the same index: eager with
Python ints and NumPy arrays, eager with mytorch arrays, jit with the index closed over,
and jit with the index as traced arguments. Literal values are JAX 0.10's results."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mytorch as mt
import mytorch.numpy as mnp
from tests.autodiff.fd import check_grads
from tests.strategies import assert_close

FILL = -7.5


# ---- the reference ------------------------------------------------------------------------
def _axes_of(idx, ndim):
    """The axis of x that each component of the tuple `idx` indexes (None: None/...)."""
    used = sum(c is not None and c is not Ellipsis for c in idx)
    out, ax = [], 0
    for c in idx:
        if c is None or c is Ellipsis:
            out.append(None)
            ax += (ndim - used) if c is Ellipsis else 0
        else:
            out.append(ax)
            ax += 1
    return out


def _reference_index(x, idx, mode, pad_value):
    """(x padded, index) such that NumPy's `padded[index]` reads what JAX reads: each integer
    index wraps once if negative, then is clamped ("clip") or, if still out of bounds,
    points at one padding element appended to its axis ("fill"/"drop")."""
    pad, new = [(0, 0)] * x.ndim, []
    for c, ax in zip(idx, _axes_of(idx, x.ndim), strict=True):
        if ax is None or isinstance(c, slice):
            new.append(c)
            continue
        n = x.shape[ax]
        v = np.asarray(c, np.int64)
        v = np.where(v < 0, v + n, v)
        if mode == "clip":
            v = np.clip(v, 0, n - 1)
        else:
            v = np.where((v >= 0) & (v < n), v, n)
            pad[ax] = (0, 1)
        new.append(int(v) if v.ndim == 0 else v)
    return np.pad(x, pad, constant_values=pad_value), tuple(new)


def _unpad(xp, shape):
    return xp[tuple(slice(0, n) for n in shape)]


def ref_get(x, idx, mode="clip", fill_value=np.nan):
    xp, new = _reference_index(x, idx, mode, fill_value)
    return xp[new]


def ref_update(x, idx, vals, op, mode="drop"):
    xp, new = _reference_index(x, idx, mode, 0)
    if op == "set":
        xp[new] = vals
    else:
        {"add": np.add, "max": np.maximum}[op].at(xp, new, vals)
    return _unpad(xp, x.shape)


def _targets(x, idx, mode):
    """How many updates land on each element of x (for `set`, which keeps any one)."""
    count = np.zeros(x.shape, np.int64)
    cp, new = _reference_index(count, idx, mode, 0)
    np.add.at(cp, new, 1)
    return _unpad(cp, x.shape)


# ---- index expressions --------------------------------------------------------------------
@st.composite
def cases(draw):
    """(x, idx): idx a tuple of ints (often out of bounds), integer arrays, slices, None and
    an Ellipsis; the integer parts only on non-empty axes."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 1
    base = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    comps = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "array", "slice", "full"] if n else
                                    ["slice", "full"]))
        oob = st.integers(-3 * n - 3, 3 * n + 3)
        if kind == "int":
            comps.append(draw(oob))
        elif kind == "array":
            # a shape broadcasting *to* base (each trailing dim 1 or base's), so that all
            # the index arrays broadcast together (base's 1s would let (2,) meet (3,))
            k = draw(st.integers(0, len(base)))
            ishape = tuple(draw(st.sampled_from([1, d])) for d in base[len(base) - k:])
            comps.append(draw(hnp.arrays(np.int64, ishape, elements=oob)))
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-n - 3, n + 3))
            step = st.one_of(st.none(), st.sampled_from([-2, -1, 1, 2]))
            comps.append(slice(draw(bound), draw(bound), draw(step)))
        else:
            comps.append(slice(None))
    if draw(st.booleans()):
        k = draw(st.integers(0, len(comps)))
        j = draw(st.integers(k, min(k + 1, len(comps))))
        if all(isinstance(c, slice) and c == slice(None) for c in comps[k:j]):
            comps[k:j] = [Ellipsis]
    for _ in range(draw(st.integers(0, 1))):
        comps.insert(draw(st.integers(0, len(comps))), None)
    return x, tuple(comps)


def _is_int_part(c):
    return isinstance(c, (int, np.ndarray))


def _as_arrays(idx, python_ints=False):
    """The integer parts as int32 mytorch arrays (or Python ints left alone)."""
    return tuple(c if python_ints and isinstance(c, int) else
                 mnp.asarray(np.asarray(c, np.int32)) if _is_int_part(c) else c for c in idx)


def four_ways(fn, x, idx, *args):
    """fn(x, *args, idx) eager static, eager with array indices, jit static and jit traced."""
    slots = [k for k, c in enumerate(idx) if _is_int_part(c)]

    def rebuild(parts):
        new = list(idx)
        for k, p in zip(slots, parts, strict=True):
            new[k] = p
        return tuple(new)

    xs = (mnp.asarray(x),) + tuple(mnp.asarray(a) for a in args)
    traced = [p for k, p in enumerate(_as_arrays(idx, python_ints=True)) if k in slots]
    return {
        "eager static": fn(*xs, idx),
        "eager arrays": fn(*xs, _as_arrays(idx)),
        "jit static": mt.jit(lambda *a: fn(*a, idx))(*xs),
        "jit traced": mt.jit(lambda *a: fn(*a[:len(xs)], rebuild(a[len(xs):])))(*xs, *traced),
    }


def _shifted(idx):
    return tuple(c + 1 if _is_int_part(c) else c for c in idx)


def check_vmap(fn, ref, x, idx, *args):
    """vmap over the examples (x, idx) and (-x, idx + 1) equals the loop: with the index
    static (the same for both) and with its integer parts batched."""
    slots = [k for k, c in enumerate(idx) if _is_int_part(c)]
    xs = [mnp.asarray(np.stack([x, -x]))] + [mnp.asarray(np.stack([a, a])) for a in args]
    got = mt.vmap(lambda *a: fn(*a, idx))(*xs)
    assert_close(got, np.stack([ref(x, idx, *args), ref(-x, idx, *args)]), dtype=x.dtype)
    idx2 = _shifted(idx)
    parts = [mnp.asarray(np.stack([np.asarray(idx[k]), np.asarray(idx2[k])]).astype(np.int32))
             for k in slots]

    def per_example(*a):
        new = list(idx)
        for k, p in zip(slots, a[len(xs):], strict=True):
            new[k] = p
        return fn(*a[:len(xs)], tuple(new))

    got = mt.vmap(per_example)(*xs, *parts)
    assert_close(got, np.stack([ref(x, idx, *args), ref(-x, idx2, *args)]), dtype=x.dtype)


def _check_all(results, expected, dtype=np.float32):
    for way, got in results.items():
        try:
            assert_close(got, expected, dtype=dtype)
        except AssertionError as err:
            raise AssertionError(f"{way}: {err}") from None


# ---- property tests -----------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(cases(), st.sampled_from(["clip", "fill"]))
def test_gather_static_and_traced_agree_with_reference(case, mode):
    x, idx = case
    if mode == "clip":
        fn = lambda x, i: x[i]  # noqa: E731
    else:
        fn = lambda x, i: x.at[i].get(mode="fill", fill_value=FILL)  # noqa: E731
    ref = lambda x, i: ref_get(x, i, mode, FILL)  # noqa: E731
    _check_all(four_ways(fn, x, idx), ref(x, idx))
    check_vmap(fn, ref, x, idx)


@settings(max_examples=60, deadline=None)
@given(cases(), st.sampled_from(["set", "add", "max"]), st.sampled_from(["drop", "clip"]),
       st.integers(0, 2**32 - 1))
def test_scatter_static_and_traced_agree_with_reference(case, op, mode, seed):
    x, idx = case
    shape = ref_get(x, idx).shape
    vals = (np.random.default_rng(seed).integers(-20, 20, shape) * 10).astype(np.float32)
    if op == "set":  # set keeps an unspecified one of repeated updates
        assume(_targets(x, idx, mode).max(initial=0) <= 1)
        assume(_targets(x, _shifted(idx), mode).max(initial=0) <= 1)
    fn = lambda x, v, i: getattr(x.at[i], op)(v, mode=mode)  # noqa: E731
    _check_all(four_ways(fn, x, idx, vals), ref_update(x, idx, vals, op, mode))
    check_vmap(lambda x, v, i: fn(x, v, i), lambda x, i, v: ref_update(x, i, v, op, mode),
               x, idx, vals)


# ---- literal JAX results ------------------------------------------------------------------
def test_static_out_of_bounds_matches_jax():
    x, y = mnp.arange(5.0), mnp.arange(12.0).reshape(3, 4)
    cases = [
        (lambda x, y: x.at[10].set(1.0), [0, 1, 2, 3, 4]),
        (lambda x, y: x.at[-6].add(1.0), [0, 1, 2, 3, 4]),
        (lambda x, y: x[11], 4.0),
        (lambda x, y: x[-6], 0.0),
        (lambda x, y: x[-100], 0.0),
        (lambda x, y: mnp.ones((3, 4))[2:, 5], [1.0]),
        (lambda x, y: x.at[11].get(mode="fill", fill_value=np.nan), np.nan),
        (lambda x, y: x.at[-6].get(mode="fill"), np.nan),
        (lambda x, y: x.at[7].get(mode="drop"), np.nan),
        (lambda x, y: x.at[7].get(mode="promise_in_bounds"), 4.0),
        (lambda x, y: x.at[11].set(9.0, mode="clip"), [0, 1, 2, 3, 9]),
        (lambda x, y: x.at[-6].set(9.0, mode="clip"), [9, 1, 2, 3, 4]),
        (lambda x, y: x[np.array([0, 7, -6])], [0, 4, 0]),
        (lambda x, y: x.at[np.array([0, 7, -6])].get(mode="fill"), [0, np.nan, np.nan]),
        (lambda x, y: x.at[np.array([0, 7, -6])].add(1.0), [1, 1, 2, 3, 4]),
        (lambda x, y: y[5], [8, 9, 10, 11]),
        (lambda x, y: y[1:, 9], [7, 11]),
        (lambda x, y: y[::2, 7], [3, 11]),
        (lambda x, y: y[5, np.array([0, 1])], [8, 9]),
        (lambda x, y: y[5, None, -9], [8]),
        (lambda x, y: y[-4, ..., 1], 1.0),
        (lambda x, y: y.at[1:, 9].set(1.0), np.arange(12.0).reshape(3, 4)),
        (lambda x, y: y.at[5, 1:3].get(mode="fill", fill_value=-1.0), [-1, -1]),
        (lambda x, y: y.at[5, ::-1].get(mode="fill", fill_value=-1.0), [-1, -1, -1, -1]),
        (lambda x, y: y.at[1, 5:9].get(mode="fill", fill_value=-1.0), np.zeros(0)),
        (lambda x, y: y.at[3].get(mode="fill", fill_value=2), [2, 2, 2, 2]),
        (lambda x, y: y.at[-4, 1].set(100.0, mode="clip"),
         [[0, 100, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]),
        (lambda x, y: y.at[5, 1:3].set(100.0, mode="clip"),
         [[0, 1, 2, 3], [4, 5, 6, 7], [8, 100, 100, 11]]),
        (lambda x, y: mnp.zeros((0, 3))[:, 5], np.zeros(0)),
        (lambda x, y: mnp.zeros((2, 0))[5], np.zeros(0)),
        (lambda x, y: mnp.zeros((2, 0)).at[5].set(1.0), np.zeros((2, 0))),
    ]
    for fn, want in cases:
        assert_close(fn(x, y), np.asarray(want, np.float32), dtype=np.float32)
        assert_close(mt.jit(fn)(x, y), np.asarray(want, np.float32), dtype=np.float32)


def test_fill_defaults_match_jax():
    """fill_value defaults: NaN, the int minimum, the uint maximum, True; a Python
    fill_value is cast to the array's dtype."""
    i32 = np.iinfo(np.int32).min
    cases = [
        (mnp.arange(3), None, i32),
        (mnp.arange(3, dtype=mnp.uint8), None, 255),
        (mnp.arange(3) > 0, None, True),
        (mnp.arange(3, dtype=mnp.float16), None, np.nan),
        (mnp.arange(3, dtype=mnp.bfloat16), None, np.nan),
        (mnp.arange(3.0), 5, 5.0),
        (mnp.arange(3), 2.7, 2),
    ]
    for x, fill, want in cases:
        dtype = np.asarray(x).dtype
        for got in (x.at[7].get(mode="fill", fill_value=fill),
                    mt.jit(lambda x, i: x.at[i].get(mode="fill", fill_value=fill))(x, 7),
                    mt.jit(lambda x: x.at[np.array([7, -4])].get(mode="fill",
                                                                 fill_value=fill))(x)):
            assert_close(got, np.broadcast_to(np.asarray(want, dtype), np.shape(got)),
                         dtype=dtype)


def test_only_an_empty_axis_raises():
    """An integer index into an empty axis has nothing to clamp to: IndexError, static or
    traced, read or update (JAX too); an index array there reads nothing (error) but an
    update drops everything."""
    e = mnp.zeros((0,))
    for fn in (lambda a, i: a[i], lambda a, i: a.at[i].set(1.0),
               lambda a, i: a.at[i].get(mode="fill")):
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
            fn(e, 0)
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
            mt.jit(fn)(e, 0)
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
            fn(e, mnp.asarray(np.int32(3)))
    with pytest.raises(IndexError, match="size 0"):
        mnp.zeros((0, 3))[0]
    with pytest.raises(IndexError, match="size 0"):
        e[np.array([0])]
    assert_close(e.at[np.array([0])].set(1.0), np.zeros(0, np.float32))
    assert_close(e[np.array([], np.int64)], np.zeros(0, np.float32))


def test_bad_mode_is_rejected_whatever_the_index():
    x = mnp.arange(5.0)
    for idx in (1, 7, np.array([1])):
        with pytest.raises(ValueError, match="mode"):
            x.at[idx].get(mode="wrap")
        with pytest.raises(ValueError, match="at\\[\\].add: unknown mode"):
            x.at[idx].add(1.0, mode="wrap")


# ---- take, take_along_axis, put -----------------------------------------------------------
def test_take_defaults_to_fill_like_jax():
    idx = np.array([0, 7, -1, -6])
    i32 = np.iinfo(np.int32).min
    x = mnp.arange(5.0)
    xi = mnp.arange(5)
    expectations = [
        (lambda x, xi: mnp.take(x, idx), np.array([0, np.nan, 4, np.nan], np.float32)),
        (lambda x, xi: mnp.take(xi, idx), np.array([0, i32, 4, i32], np.int32)),
        (lambda x, xi: mnp.take(xi.astype(mnp.uint8), idx), np.array([0, 255, 4, 255], np.uint8)),
        (lambda x, xi: mnp.take(xi > 2, idx), np.array([False, True, True, True])),
        (lambda x, xi: mnp.take(x, idx, mode="clip"), np.array([0, 4, 0, 0], np.float32)),
        (lambda x, xi: mnp.take(x, idx, mode="wrap"), np.array([0, 2, 4, 4], np.float32)),
        (lambda x, xi: mnp.take(x, 7), np.float32(np.nan)),
        (lambda x, xi: mnp.take(x, np.array([-1, 9]), fill_value=-3.0),
         np.array([4, -3], np.float32)),
        (lambda x, xi: mnp.take(x.astype(mnp.float16), np.array([0, 7])),
         np.array([0, np.nan], np.float16)),
        (lambda x, xi: mnp.take(mnp.arange(12.0).reshape(3, 4), np.array([[0, 4], [-5, -4]]),
                                axis=1),
         np.array([[[0, np.nan], [np.nan, 0]], [[4, np.nan], [np.nan, 4]],
                   [[8, np.nan], [np.nan, 8]]], np.float32)),
        (lambda x, xi: mnp.take_along_axis(x, idx, axis=0),
         np.array([0, np.nan, 4, np.nan], np.float32)),
        (lambda x, xi: mnp.take_along_axis(xi, idx, axis=0), np.array([0, i32, 4, i32], np.int32)),
        (lambda x, xi: mnp.take_along_axis(x, idx, axis=0, mode="clip"),
         np.array([0, 4, 4, 0], np.float32)),
        (lambda x, xi: mnp.take_along_axis(x, np.array([-1, -7, 9]), axis=0, mode="clip"),
         np.array([4, 0, 4], np.float32)),
        (lambda x, xi: mnp.take_along_axis(x, np.array([-1, 2]), 0, mode="promise_in_bounds"),
         np.array([0, 2], np.float32)),
        (lambda x, xi: mnp.take_along_axis(mnp.arange(12.0).reshape(3, 4),
                                     np.array([[0, 4], [-5, -4], [1, 2]]), axis=1),
         np.array([[0, np.nan], [np.nan, 4], [9, 10]], np.float32)),
        (lambda x, xi: mnp.take_along_axis(mnp.zeros((2, 0)), np.zeros((2, 3), np.int32), axis=1),
         np.zeros((2, 3), np.float32)),
        (lambda x, xi: mnp.put(x, np.array([-1, 9, -6]), 7.0, inplace=False),
         np.array([7, 1, 2, 3, 7], np.float32)),
        (lambda x, xi: mnp.put(mnp.zeros((2, 3)), np.array([7, -7, 6, -8, 100]),
                         np.array([1.0, 2, 3, 4, 5]), inplace=False),
         np.array([[4, 0, 0], [0, 0, 5]], np.float32)),
        (lambda x, xi: mnp.put(mnp.zeros((2, 3)), np.array([-1]), 1.0, mode="clip", inplace=False),
         np.array([[1, 0, 0], [0, 0, 0]], np.float32)),
    ]
    for fn, want in expectations:
        assert_close(fn(x, xi), want, dtype=want.dtype)
        assert_close(mt.jit(fn)(x, xi), want, dtype=want.dtype)
    with pytest.raises(IndexError, match="size 0"):
        mnp.take(mnp.zeros((2, 0)), np.array([0]), axis=1)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_take_family_static_and_traced_agree(data):
    """take and take_along_axis in every mode, static and traced indices, against NumPy
    written with JAX's rules (fill: wrap negatives once, fill the rest)."""
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    mode = data.draw(st.sampled_from([None, "fill", "clip", "wrap"]))
    oob = st.integers(-3 * n, 3 * n)
    ishape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    idx = data.draw(hnp.arrays(np.int64, ishape, elements=oob))
    ref = {None: "fill", "fill": "fill", "clip": "clip", "wrap": "wrap"}[mode]
    wrapped = np.where(idx < 0, idx + n, idx)
    if ref == "fill":
        xp = np.moveaxis(x, axis, -1)
        xp = np.moveaxis(np.concatenate([xp, np.full(xp.shape[:-1] + (1,), FILL,
                                                     np.float32)], -1), -1, axis)
        want = np.take(xp, np.where((wrapped >= 0) & (wrapped < n), wrapped, n), axis=axis)
    else:
        want = np.take(x, idx, axis=axis, mode=ref)  # NumPy's clip does not wrap negatives
    got = [mnp.take(mnp.asarray(x), idx, axis=axis, mode=mode, fill_value=FILL),
           mt.jit(lambda a, i: mnp.take(a, i, axis=axis, mode=mode, fill_value=FILL))(
               mnp.asarray(x), mnp.asarray(idx.astype(np.int32)))]
    for g in got:
        assert_close(g, want, dtype=np.float32)
    # take_along_axis: indices of x's rank; clip wraps negatives first (JAX)
    ishape = list(shape)
    ishape[axis] = data.draw(st.integers(0, 4))
    idx = data.draw(hnp.arrays(np.int64, tuple(ishape), elements=oob))
    wrapped = np.where(idx < 0, idx + n, idx)
    if ref == "fill":
        ok = (wrapped >= 0) & (wrapped < n)
        want = np.where(ok, np.take_along_axis(x, np.clip(wrapped, 0, n - 1), axis), FILL)
    elif ref == "clip":
        want = np.take_along_axis(x, np.clip(wrapped, 0, n - 1), axis)
    else:
        want = np.take_along_axis(x, idx % n, axis)
    got = [mnp.take_along_axis(mnp.asarray(x), idx, axis, mode=mode, fill_value=FILL),
           mt.jit(lambda a, i: mnp.take_along_axis(a, i, axis, mode=mode, fill_value=FILL))(
               mnp.asarray(x), mnp.asarray(idx.astype(np.int32)))]
    for g in got:
        assert_close(g, want.astype(np.float32), dtype=np.float32)


# ---- derivatives --------------------------------------------------------------------------
GRAD_CASES = [
    ((5,), (7,)), ((5,), (-6,)), ((5,), (np.array([0, 7, -6, 2]),)),
    ((3, 4), (slice(1, None), 9)), ((3, 4), (5, slice(None, None, -1))),
    ((3, 4), (Ellipsis, -9)), ((3, 4), (None, 4, np.array([[1], [-1]]))), ((3, 4), (2, 7)),
    ((3, 4), (np.array([2, 2, -1]), slice(None))),
]


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("shape, idx", GRAD_CASES, ids=str)
@pytest.mark.parametrize("how", ["eager static", "eager arrays", "jit static", "jit traced"])
def test_grads_of_clamped_gathers_and_dropped_scatters(shape, idx, how):
    """Against float64 central differences, and exactly: a clamped read sends its cotangent
    to the element it read; a dropped update sends none to the update and leaves x's."""
    x = np.random.default_rng(0).standard_normal(shape)
    slots = [k for k, c in enumerate(idx) if _is_int_part(c)]
    parts = [mnp.asarray(np.asarray(idx[k], np.int32)) for k in slots]

    def index(parts):
        if how.endswith("static"):
            return idx
        new = list(idx)
        for k, p in zip(slots, parts, strict=True):
            new[k] = p
        return tuple(new)

    shape = ref_get(x, idx).shape
    v = np.random.default_rng(1).standard_normal(shape)
    wrap = mt.jit if how.startswith("jit") else (lambda f: f)
    get = wrap(lambda x, *p: x[index(p)])
    fill = wrap(lambda x, *p: x.at[index(p)].get(mode="fill", fill_value=0.0))
    add = wrap(lambda x, v, *p: x.at[index(p)].add(v))
    set_ = wrap(lambda x, v, *p: x.at[index(p)].set(v))
    check_grads(lambda x: get(x, *parts), (x,), order=2)
    check_grads(lambda x: fill(x, *parts), (x,), order=2)
    check_grads(lambda x, v: add(x, v, *parts), (x, v), order=2)
    if _targets(x, idx, "drop").max(initial=0) <= 1:
        check_grads(lambda x, v: set_(x, v, *parts), (x, v), order=2)
    # exact: the cotangent of a clamped read lands where it read; filled reads send none
    w = np.random.default_rng(2).standard_normal(shape)
    g = mt.grad(lambda x: mnp.sum(get(x, *parts) * w))(mnp.asarray(x))
    want = ref_update(np.zeros_like(x), idx, w, "add", mode="clip")
    assert_close(g, want, dtype=np.float64)
    g = mt.grad(lambda x: mnp.sum(fill(x, *parts) * w))(mnp.asarray(x))
    assert_close(g, ref_update(np.zeros_like(x), idx, w, "add", mode="drop"), dtype=np.float64)
    # a dropped update gets no cotangent; a kept one gets the cotangent at its target
    ct = np.random.default_rng(3).standard_normal(x.shape)
    gv = mt.grad(lambda v: mnp.sum(add(mnp.asarray(x), v, *parts) * ct))(mnp.asarray(v))
    assert_close(gv, ref_get(ct, idx, "drop", 0.0), dtype=np.float64)


def test_fill_keeps_low_precision_dtypes():
    """A filled read keeps low-precision dtypes."""
    x = mnp.asarray(np.arange(4, dtype=ml_dtypes.bfloat16))
    got = x.at[np.array([1, 9])].get(mode="fill", fill_value=-1)
    assert_close(got, np.array([1, -1], ml_dtypes.bfloat16), dtype=ml_dtypes.bfloat16)
