"""vmap of indexing in mytorch.numpy against the loop definition: `x[idx]` and
`x.at[idx].<op>(v)` for random NumPy index expressions whose integer parts (arrays and
ints) are traced and batched or not; the take family (take, take_along_axis,
put_along_axis, choose, compress, extract, ix_, unravel_index, ravel_multi_index, place,
put).

Traced index values are drawn in [-5, 5]: out-of-bounds ones clamp (gathers) or are
dropped (scatters) in the same way for the batched and the per-example computation.
Static boolean masks are closed over; traced masks are not traceable (not tested here).
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.core.array import from_numpy
from mytorch.errors import ConcretizationTypeError, NonConcreteBooleanIndexError
from tests.batching.numpy_vmap_util import Op, shapes_broadcasting_to, vmap_case
from tests.numpy.test_indexing import _traceable, index_exprs
from tests.strategies import axes, shapes

_IDX = {"min_value": -5, "max_value": 5}


@st.composite
def advanced_indices(draw, shape):
    """An index of integer arrays (broadcasting together, at least one) mixed with slices,
    ints, None and Ellipsis: the gather/scatter paths, which index_exprs draws rarely."""
    base = draw(shapes(max_dims=2, max_side=3), label="base")
    comps = []
    for n in shape:
        kind = draw(st.sampled_from(["arr", "arr", "slice", "int"] if n else ["slice"]))
        if kind == "arr":
            sub = draw(st.integers(0, len(base)))
            s = tuple(d if draw(st.booleans()) else 1 for d in base[len(base) - sub:])
            comps.append(np.zeros(s, np.int32))
        elif kind == "int":
            comps.append(draw(st.integers(-n, n - 1)))
        else:
            comps.append(slice(draw(st.sampled_from([None, 1, -2])), None,
                               draw(st.sampled_from([None, 2, -1]))))
    if not any(isinstance(c, np.ndarray) for c in comps) and shape and shape[0]:
        comps[0] = np.zeros(base, np.int32)
    if draw(st.booleans()):
        comps.insert(draw(st.integers(0, len(comps))), None)
    if comps and isinstance(comps[-1], slice) and draw(st.booleans()):
        comps[-1] = Ellipsis
    return tuple(comps)


def _index_case(data, max_dims=3):
    """(x shape, build(index arrays) -> index, the index operands, result shape)."""
    shape = data.draw(shapes(max_dims=max_dims, max_side=4), label="shape")
    if data.draw(st.booleans(), label="advanced"):
        idx = data.draw(advanced_indices(shape), label="idx")
    else:
        idx = data.draw(index_exprs(shape, bools_ok=True), label="idx")
    build, args = _traceable(idx)
    ops = [Op(a.shape, np.int32, **_IDX) for a in args]
    try:
        np.zeros(shape, np.float32)[idx]  # NumPy's verdict on the index itself
        probe = from_numpy(np.zeros(shape, np.float32))[build(args)]
    except IndexError:  # an invalid index (NumPy rejects it too), as the eager tests check
        assume(False)
    return shape, build, ops, probe.shape


def _index(build, arrs):
    # Arrays, not NumPy values: the loop reference passes NumPy 0-d ints, which would be
    # static (bounds-checked) indices, where the traced ones clamp
    return build([mnp.asarray(a) for a in arrs])


@settings(max_examples=40)
@given(data=st.data())
def test_getitem(data):
    shape, build, ops, _ = _index_case(data, max_dims=4)
    dt = data.draw(st.sampled_from([np.float32, np.int8, np.bool_]), label="dtype")
    if data.draw(st.booleans(), label="function"):
        vmap_case(data, lambda x, *a: mnp.getitem(x, _index(build, a)), [Op(shape, dt)] + ops)
    else:
        vmap_case(data, lambda x, *a: mnp.asarray(x)[_index(build, a)], [Op(shape, dt)] + ops)


@settings(max_examples=15)
@given(data=st.data())
def test_getitem_modes(data):
    shape, build, ops, _ = _index_case(data)
    mode = data.draw(st.sampled_from(["fill", "clip", "promise_in_bounds"]), label="mode")
    if mode == "promise_in_bounds":
        mode = None
    vmap_case(data, lambda x, *a: mnp.asarray(x).at[_index(build, a)].get(
        mode=mode, fill_value=-1.0), [Op(shape)] + ops)


_OPS = ["set", "add", "subtract", "multiply", "min", "max", "divide", "power", "apply"]


@pytest.mark.parametrize("op", _OPS)
@settings(max_examples=12)
@given(data=st.data())
def test_at_updates(op, data):
    shape, build, ops, res_shape = _index_case(data)
    has_arrays = any(o.shape for o in ops)
    # repeated indices: `set` keeps an unspecified one of the values, so give one value
    v_shape = () if op in ("set", "apply") and has_arrays else shapes_broadcasting_to(
        data, res_shape)
    dt = np.float32 if op in ("divide", "power") else data.draw(
        st.sampled_from([np.float32, np.int32]), label="dtype")
    vals = {"min_value": 1, "max_value": 3} if op in ("divide", "power") else {}

    def f(x, v, *a):
        ref = mnp.asarray(x).at[_index(build, a)]
        if op == "apply":
            return ref.apply(lambda t: t * 2)
        return getattr(ref, op)(v)

    vmap_case(data, f, [Op(shape, dt, min_value=-4, max_value=4), Op(v_shape, dt, **vals)]
              + ops, rtol=1e-5, atol=1e-5)


@settings(max_examples=15)
@given(data=st.data())
def test_take(data):
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    ax = data.draw(axes(len(shape)) if shape else st.none(), label="axis")
    n = int(np.prod(shape)) if ax is None else shape[ax]
    i_shape = data.draw(shapes(max_dims=2, max_side=3), label="i_shape")
    mode = data.draw(st.sampled_from([None, "clip", "wrap", "fill"]), label="mode")
    if n == 0 and np.prod(i_shape):
        return  # nothing to take from (an error per example)
    ops = [Op(shape), Op(i_shape, np.int32, **_IDX)]
    vmap_case(data, lambda x, i: mnp.take(x, i, axis=ax, mode=mode, fill_value=7.0), ops)
    if mode is None:
        vmap_case(data, lambda x, i: mnp.asarray(x).take(i, axis=ax), ops)


@settings(max_examples=15)
@given(data=st.data())
def test_take_along_axis_put_along_axis(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), label="shape")
    ax = data.draw(axes(len(shape), allow_none=False), label="axis")
    k = data.draw(st.integers(0, 3), label="k")
    i_shape = tuple(k if d == ax % len(shape) else data.draw(st.sampled_from([s, 1]))
                    for d, s in enumerate(shape))
    mode = data.draw(st.sampled_from([None, "clip", "fill"]), label="mode")
    ops = [Op(shape), Op(i_shape, np.int32, **_IDX)]
    vmap_case(data, lambda x, i: mnp.take_along_axis(x, i, ax, mode=mode, fill_value=-1.0),
              ops)
    if k <= 1:  # one index per slice: no repeated positions for put
        a = ax % len(shape)
        out = tuple(max(s, t) for s, t in zip(shape, i_shape, strict=True))
        out = out[:a] + (k,) + out[a + 1:]
        vals = Op(shapes_broadcasting_to(data, out))
        vmap_case(data, lambda x, i, v: mnp.put_along_axis(x, i, v, ax, inplace=False),
                  ops + [vals])
    flat = [Op((int(np.prod(shape)),)), Op((k,), np.int32, **_IDX)]
    vmap_case(data, lambda x, i: mnp.take_along_axis(x, i, None), flat)


@settings(max_examples=12)
@given(data=st.data())
def test_choose_and_select_index_arrays(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    k = data.draw(st.integers(1, 3), label="k")
    mode = data.draw(st.sampled_from(["clip", "wrap"]), label="mode")
    ops = [Op(shapes_broadcasting_to(data, shape), np.int32, **_IDX)] + [
        Op(shapes_broadcasting_to(data, shape), data.draw(st.sampled_from(
            [np.float32, np.int8]))) for _ in range(k)]
    vmap_case(data, lambda i, *cs: mnp.choose(i, cs, mode=mode), ops)
    vmap_case(data, lambda i, *cs: mnp.asarray(i).choose(cs, mode=mode), ops)


@settings(max_examples=12)
@given(data=st.data())
def test_compress_extract_place(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4), label="shape")
    ax = data.draw(axes(len(shape)), label="axis")
    n = int(np.prod(shape)) if ax is None else shape[ax]
    cond = data.draw(st.lists(st.booleans(), max_size=n), label="cond")
    x = [Op(shape)]
    vmap_case(data, lambda a: mnp.compress(cond, a, axis=ax), x)
    size = data.draw(st.integers(0, 4 if n else 0), label="size")  # none from an empty axis
    vmap_case(data, lambda c, a: mnp.compress(c, a, axis=ax, size=size, fill_value=-2.0),
              [Op((n,), np.bool_)] + x)
    mask = data.draw(st.lists(st.booleans(), min_size=int(np.prod(shape)),
                              max_size=int(np.prod(shape))), label="mask")
    mask = np.array(mask, bool).reshape(shape)
    vmap_case(data, lambda a: mnp.extract(mask, a), x)
    if np.prod(shape) or not size:
        vmap_case(data, lambda c, a: mnp.extract(c, a, size=size), [Op(shape, np.bool_)] + x)
    vmap_case(data, lambda a, v: mnp.place(a, mask, v, inplace=False),
              x + [Op((data.draw(st.integers(1, 3)),))])


@settings(max_examples=12)
@given(data=st.data())
def test_index_arithmetic(data):
    dims = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), label="dims")
    i_shape = data.draw(shapes(max_dims=2, max_side=3), label="i_shape")
    total = int(np.prod(dims))
    vmap_case(data, lambda i: mnp.unravel_index(i, dims),
              [Op(i_shape, np.int32, min_value=-total - 2, max_value=total + 2)])
    mode = data.draw(st.sampled_from(["clip", "wrap"]), label="mode")
    order = data.draw(st.sampled_from(["C", "F"]), label="order")
    vmap_case(data, lambda *ix: mnp.ravel_multi_index(ix, dims, mode=mode, order=order),
              [Op(i_shape, np.int32, **_IDX) for _ in dims])
    vmap_case(data, lambda a, b: mnp.ix_(a, b), [Op((2,), np.int32), Op((3,), np.int32)])


@settings(max_examples=12)
@given(data=st.data())
def test_put(data):
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    k = data.draw(st.integers(0, 3), label="k")
    mode = data.draw(st.sampled_from([None, "clip", "wrap"]), label="mode")
    size = int(np.prod(shape))
    if size == 0 and k:
        return  # nothing to put into (an error per example, as in NumPy)
    # one value for repeated positions: put keeps an unspecified one of them
    vmap_case(data, lambda a, i, v: mnp.put(a, i, v, mode=mode, inplace=False),
              [Op(shape), Op((k,), np.int32, **_IDX), Op(())])
    uniq = data.draw(st.lists(st.integers(0, max(size - 1, 0)), unique=True, max_size=3)
                     if size else st.just([]), label="positions")
    vmap_case(data, lambda a, v: mnp.put(a, np.array(uniq, np.int32), v, inplace=False),
              [Op(shape), Op((len(uniq),))])


def test_value_dependent_shapes_raise_under_vmap():
    """What cannot be vectorised: a traced boolean mask, and functions whose result shape
    depends on the values without a static size (the loop would give ragged results)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(NonConcreteBooleanIndexError, match="needs a concrete mask"):
        mt.vmap(lambda a: mnp.asarray(a)[a > 1])(x)
    cases = [
        (lambda a: mnp.trim_zeros(a), "trim_zeros"),
        (lambda a: mnp.nonzero(a), "size"),
        (lambda a: mnp.unique(a), "size"),
        (lambda a: mnp.compress(a > 1, a), "compress"),
    ]
    for fn, fragment in cases:
        with pytest.raises(ConcretizationTypeError, match=fragment):
            mt.vmap(fn)(x)


def test_concrete_and_traced_indices_agree():
    """Regressions found by the loop comparison: an index read from a concrete 0-d array
    honours mode="fill" as a traced one does, and a scatter into an empty axis drops its
    updates (every position is out of bounds) instead of raising."""
    x = mnp.asarray(np.array([5.0, 6.0], np.float32))
    i = mnp.asarray(np.array(2, np.int32))
    assert float(x.at[i].get(mode="fill", fill_value=-1.0)) == -1.0
    traced = mt.make_jaxpr(lambda x, i: x.at[i].get(mode="fill", fill_value=-1.0))(x, i)
    assert float(traced(x, i)[0]) == -1.0
    assert float(x.at[i].get()) == 6.0  # the default clamps
    empty = mnp.zeros((0, 3))
    idx = mnp.asarray(np.array([0, 1], np.int32))
    assert empty.at[idx].add(1.0).shape == (0, 3)
    np.testing.assert_array_equal(np.asarray(mnp.bincount(idx, length=0)), np.zeros(0))
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        empty[idx]  # a gather from an empty axis has nothing to read
