"""vmap of the shape, joining, splitting, tiling, padding and diagonal functions of
mytorch.numpy (and the matching array methods) against the loop definition.

Joining functions get operands that are each batched (at any axis) or not, with mixed
dtypes; static arguments (axes, shapes, pad widths, split points) are drawn per case.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch.numpy as mnp
from tests.batching.numpy_vmap_util import Op, vmap_case
from tests.numpy.test_manipulation import _pad_widths, _reshape_targets
from tests.strategies import axes, shapes

_DTYPES = st.sampled_from([np.float32, np.int32, np.int8, np.bool_, np.float16])


def _widths(data, ndim, hi):
    """A pad_width (NumPy's forms; a 0-d array needs a scalar width)."""
    if ndim == 0:
        return data.draw(st.integers(0, hi), label="pad_width")
    return data.draw(_pad_widths(ndim, hi=hi), label="pad_width")


def _perm(data, ndim):
    return tuple(data.draw(st.permutations(range(ndim)), label="perm"))


# ---- reshaping and transposing -------------------------------------------------------------
@settings(max_examples=12)
@given(data=st.data())
def test_reshape_ravel_transpose(data):
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    dt = data.draw(_DTYPES, label="dtype")
    x = [Op(shape, dt)]
    target = tuple(data.draw(_reshape_targets(shape), label="target"))
    if target and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(target) - 1))
        target = target[:i] + (-1,) + target[i + 1:] if 0 not in target else target
    perm = _perm(data, len(shape))
    vmap_case(data, lambda a: mnp.reshape(a, target), x)
    vmap_case(data, lambda a: mnp.asarray(a).reshape(*target), x)
    vmap_case(data, lambda a: (mnp.ravel(a), mnp.asarray(a).flatten()), x)
    vmap_case(data, lambda a: (mnp.transpose(a), mnp.transpose(a, perm),
                               mnp.permute_dims(a, perm), mnp.asarray(a).T,
                               mnp.asarray(a).transpose(*perm)), x)


@settings(max_examples=12)
@given(data=st.data())
def test_axis_moving(data):
    shape = data.draw(shapes(min_dims=1, max_dims=4, max_side=3), label="shape")
    nd = len(shape)
    a1, a2 = (data.draw(axes(nd, allow_none=False), label="axis") for _ in range(2))
    start = data.draw(st.integers(-nd, nd), label="start")
    x = [Op(shape, data.draw(_DTYPES, label="dtype"))]
    vmap_case(data, lambda a: (mnp.moveaxis(a, a1, a2), mnp.swapaxes(a, a1, a2),
                               mnp.rollaxis(a, a1, start),
                               mnp.asarray(a).swapaxes(a1, a2)), x)
    if nd >= 2:
        vmap_case(data, lambda a: (mnp.matrix_transpose(a), mnp.asarray(a).mT,
                                   mnp.linalg.matrix_transpose(a)), x)
    src = data.draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd), label="src")
    dst = data.draw(st.permutations(range(nd)), label="dst")[:len(src)]
    vmap_case(data, lambda a: mnp.moveaxis(a, src, dst), x)


@settings(max_examples=12)
@given(data=st.data())
def test_squeeze_expand_atleast(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    x = [Op(shape, data.draw(_DTYPES, label="dtype"))]
    ones = tuple(i for i, d in enumerate(shape) if d == 1)
    sq = data.draw(st.sampled_from([None] + [i - len(shape) for i in ones] + ([ones] if ones
                                                                               else [])))
    k = data.draw(st.integers(0, 2), label="k")
    new = tuple(data.draw(st.permutations(range(len(shape) + k)), label="new")[:k])
    new = tuple(a - (len(shape) + k) * data.draw(st.booleans()) for a in new)
    vmap_case(data, lambda a: (mnp.squeeze(a, sq), mnp.asarray(a).squeeze(),
                               mnp.expand_dims(a, new)), x)
    vmap_case(data, lambda a: (mnp.atleast_1d(a), mnp.atleast_2d(a), mnp.atleast_3d(a)), x)
    vmap_case(data, lambda a, b: mnp.atleast_2d(a, b), x + [Op((), np.int32)])


@settings(max_examples=12)
@given(data=st.data())
def test_broadcasting(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    extra = data.draw(shapes(max_dims=2, max_side=3), label="lead")
    small = tuple(1 if data.draw(st.booleans()) else d for d in shape)
    vmap_case(data, lambda a: mnp.broadcast_to(a, extra + shape), [Op(small)])
    vmap_case(data, lambda a, b: mnp.broadcast_arrays(a, b),
              [Op(small, np.int8), Op(extra + shape)])


@settings(max_examples=12)
@given(data=st.data())
def test_flip_roll_rot90(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4), label="shape")
    nd = len(shape)
    ax = data.draw(st.one_of(axes(nd), st.lists(st.integers(-nd, nd - 1), max_size=2,
                                                unique_by=lambda a: a % nd).map(tuple)))
    x = [Op(shape, data.draw(_DTYPES, label="dtype"))]
    vmap_case(data, lambda a: (mnp.flip(a, ax), mnp.flipud(a)), x)
    shift = data.draw(st.integers(-6, 6), label="shift")
    roll_ax = data.draw(axes(nd), label="roll_axis")
    vmap_case(data, lambda a: mnp.roll(a, shift, roll_ax), x)
    vmap_case(data, lambda a: mnp.roll(a, (shift, 1), (roll_ax or 0, -1)), x)
    # a traced shift, batched or not
    vmap_case(data, lambda a, s: mnp.roll(a, s, axis=roll_ax if roll_ax is not None else 0),
              x + [Op((), np.int32, min_value=-7, max_value=7)])
    if nd >= 2:
        k = data.draw(st.integers(-2, 5), label="k")
        pair = tuple(data.draw(st.permutations(range(nd)))[:2])
        vmap_case(data, lambda a: (mnp.rot90(a, k, pair), mnp.fliplr(a)), x)


# ---- joining and splitting -----------------------------------------------------------------
def _join_operands(data, shape, axis, k):
    """k operands whose shapes agree with `shape` except along `axis` (drawn lengths)."""
    ops = []
    for _ in range(k):
        s = list(shape)
        if axis is not None:
            s[axis] = data.draw(st.integers(0, 3), label="len")
        ops.append(Op(tuple(s), data.draw(st.sampled_from([np.float32, np.int32, np.int8]),
                                          label="dtype")))
    return ops


@settings(max_examples=15)
@given(data=st.data())
def test_concatenate_family(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=3), label="shape")
    nd = len(shape)
    ax = data.draw(st.integers(-nd, nd - 1), label="axis")
    k = data.draw(st.integers(1, 3), label="k")
    ops = _join_operands(data, shape, ax % nd, k)
    vmap_case(data, lambda *xs: mnp.concatenate(xs, axis=ax), ops)
    vmap_case(data, lambda *xs: mnp.concat(xs, axis=ax), ops)
    vmap_case(data, lambda *xs: mnp.concatenate(xs, axis=None, dtype=mnp.float32), ops)
    vmap_case(data, lambda *xs: mnp.append(xs[0], xs[-1], axis=ax), ops)
    vmap_case(data, lambda *xs: mnp.append(xs[0], xs[-1]), ops)


@settings(max_examples=15)
@given(data=st.data())
def test_stack_family(data):
    shape = data.draw(shapes(max_dims=2, max_side=3), label="shape")
    k = data.draw(st.integers(1, 3), label="k")
    ops = _join_operands(data, shape, None, k)
    ax = data.draw(st.integers(-len(shape) - 1, len(shape)), label="axis")
    vmap_case(data, lambda *xs: mnp.stack(xs, axis=ax), ops)
    vmap_case(data, lambda *xs: (mnp.hstack(xs), mnp.vstack(xs), mnp.row_stack(xs),
                                 mnp.dstack(xs)), ops)
    if len(shape) <= 2:
        vmap_case(data, lambda *xs: mnp.column_stack(xs), ops)
    vmap_case(data, lambda x, y: (mnp.array([x, y]), mnp.asarray([x, 2 * mnp.asarray(y)])),
              ops[:1] * 2)


@settings(max_examples=10)
@given(data=st.data())
def test_block(data):
    r, c1, c2 = (data.draw(st.integers(0, 3)) for _ in range(3))
    ops = [Op((r, c1)), Op((r, c2), np.int32), Op((2, c1 + c2))]
    vmap_case(data, lambda a, b, c: mnp.block([[a, b], [c]]), ops)
    vmap_case(data, lambda a, b: mnp.block([a, b]), [Op((c1,)), Op((c2,))])


@settings(max_examples=15)
@given(data=st.data())
def test_split_family(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4), label="shape")
    nd = len(shape)
    ax = data.draw(st.integers(-nd, nd - 1), label="axis")
    n = shape[ax]
    sections = data.draw(st.one_of(
        st.integers(1, 4), st.lists(st.integers(-n - 1, n + 1), max_size=3)), label="ios")
    x = [Op(shape, data.draw(_DTYPES, label="dtype"))]
    vmap_case(data, lambda a: mnp.array_split(a, sections, axis=ax), x)
    divisors = [d for d in range(1, 5) if n % d == 0] if n else [1, 2]
    d = data.draw(st.sampled_from(divisors), label="sections")
    vmap_case(data, lambda a: mnp.split(a, d, axis=ax), x)
    vmap_case(data, lambda a: mnp.unstack(a, axis=ax), x)
    if shape[-1 if nd == 1 else 1] % 2 == 0:
        vmap_case(data, lambda a: mnp.hsplit(a, 2), x)
    if nd >= 2 and shape[0] % 2 == 0:
        vmap_case(data, lambda a: mnp.vsplit(a, [1]), x)
    if nd >= 3:
        vmap_case(data, lambda a: mnp.dsplit(a, [1, 2]), x)


# ---- tiling, repeating, resizing, inserting -------------------------------------------------
@settings(max_examples=12)
@given(data=st.data())
def test_tile_repeat_resize(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    x = [Op(shape, data.draw(_DTYPES, label="dtype"))]
    reps = data.draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 2), max_size=4)
                               .map(tuple)), label="reps")
    vmap_case(data, lambda a: mnp.tile(a, reps), x)
    ax = data.draw(axes(len(shape)), label="axis")
    n = int(np.prod(shape)) if ax is None else (shape[ax] if shape else 1)
    r = data.draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), min_size=n,
                                                        max_size=n)), label="repeats")
    vmap_case(data, lambda a: (mnp.repeat(a, r, axis=ax), mnp.asarray(a).repeat(r, ax)), x)
    total = data.draw(st.integers(0, 7 if n else 0), label="total")
    vmap_case(data, lambda a: mnp.repeat(a, r, axis=ax, total_repeat_length=total), x)
    new = data.draw(st.one_of(st.integers(0, 7), shapes(max_dims=2, max_side=4)), label="new")
    vmap_case(data, lambda a: mnp.resize(a, new), x)


@settings(max_examples=12)
@given(data=st.data())
def test_repeat_traced_counts(data):
    shape = data.draw(shapes(min_dims=1, max_dims=2, min_side=1, max_side=3), label="shape")
    ax = data.draw(axes(len(shape), allow_none=False), label="axis")
    total = data.draw(st.integers(0, 8), label="total")
    ops = [Op(shape), Op((shape[ax],), np.int32, min_value=0, max_value=3)]
    vmap_case(data, lambda a, r: mnp.repeat(a, r, axis=ax, total_repeat_length=total), ops)


@settings(max_examples=12)
@given(data=st.data())
def test_delete_insert(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4), label="shape")
    ax = data.draw(axes(len(shape)), label="axis")
    n = int(np.prod(shape)) if ax is None else shape[ax]
    obj = data.draw(st.one_of(
        st.integers(-n, n - 1) if n else st.just([]),
        st.lists(st.integers(-n, n - 1), max_size=3) if n else st.just([]),
        st.builds(slice, st.integers(-n - 1, n + 1), st.none(), st.sampled_from([1, 2]))))
    x = [Op(shape, np.int32)]
    vmap_case(data, lambda a: mnp.delete(a, obj, axis=ax), x)
    pos = data.draw(st.integers(-n, n), label="pos")
    v_shape = data.draw(st.sampled_from([(), (1,)]), label="v_shape")
    vmap_case(data, lambda a, v: mnp.insert(a, pos, v, axis=ax), x + [Op(v_shape, np.int8)])
    many = data.draw(st.lists(st.integers(-n, n), min_size=2, max_size=3), label="many")
    vmap_case(data, lambda a, v: mnp.insert(a, many, v, axis=ax), x + [Op((), np.int8)])


# ---- padding -------------------------------------------------------------------------------
_MODES = ["constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "maximum",
          "minimum", "mean", "median", "empty"]


@pytest.mark.parametrize("mode", _MODES)
@settings(max_examples=4)
@given(data=st.data())
def test_pad_modes(mode, data):
    min_side = 0 if mode in ("constant", "empty") else 1
    shape = data.draw(shapes(max_dims=3, min_side=min_side, max_side=3), label="shape")
    width = _widths(data, len(shape), 3)
    kw = {}
    if mode in ("reflect", "symmetric"):
        kw["reflect_type"] = data.draw(st.sampled_from(["even", "odd"]))
    if mode == "linear_ramp":
        kw["end_values"] = data.draw(st.tuples(st.integers(-5, 5), st.integers(-5, 5)))
    if mode in ("maximum", "minimum", "mean", "median"):
        kw["stat_length"] = data.draw(st.one_of(st.none(), st.integers(1, 3)))
    if mode == "constant":
        kw["constant_values"] = data.draw(st.sampled_from([0, 3, ((1, 2),) * len(shape) or 4]))
    dt = np.float32 if mode in ("linear_ramp", "mean", "median") else data.draw(_DTYPES)
    vmap_case(data, lambda a: mnp.pad(a, width, mode, **kw),
              [Op(shape, dt, min_value=-50, max_value=50)], atol=1e-5)


@settings(max_examples=10)
@given(data=st.data())
def test_pad_traced_constant_values(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    width = _widths(data, len(shape), 2)
    cv_shape = data.draw(st.sampled_from([(), (len(shape), 2)]), label="cv_shape")
    vmap_case(data, lambda a, c: mnp.pad(a, width, constant_values=c),
              [Op(shape), Op(cv_shape, np.int32, min_value=-9, max_value=9)])


# ---- diagonals -----------------------------------------------------------------------------
@settings(max_examples=12)
@given(data=st.data())
def test_diagonal_trace_diag(data):
    shape = data.draw(shapes(min_dims=2, max_dims=3, max_side=4), label="shape")
    nd = len(shape)
    i, j = data.draw(st.permutations(range(nd)), label="axes")[:2]
    i -= data.draw(st.sampled_from([0, nd]))
    off = data.draw(st.integers(-3, 3), label="offset")
    x = [Op(shape, data.draw(st.sampled_from([np.float32, np.int8, np.bool_])))]
    vmap_case(data, lambda a: (mnp.diagonal(a, off, i, j), mnp.trace(a, off, i, j),
                               mnp.asarray(a).diagonal(off, i, j),
                               mnp.asarray(a).trace(off, i, j)), x)
    vmap_case(data, lambda a: (mnp.linalg.diagonal(a, offset=off),
                               mnp.linalg.trace(a, offset=off)), x)
    k = data.draw(st.integers(-2, 2), label="k")
    vmap_case(data, lambda v: (mnp.diag(v, k), mnp.diagflat(v, k)), [Op(shape[:1])])
    vmap_case(data, lambda m: mnp.diag(m, k), [Op(shape[:2])])
    vmap_case(data, lambda v: mnp.diagflat(v, k), [Op(shape[:2])])


@settings(max_examples=6)
@given(data=st.data())
def test_index_helpers_from_arrays(data):
    """Functions of the shape only: the result is the same for every example."""
    n, m = data.draw(st.integers(0, 4)), data.draw(st.integers(0, 4))
    k = data.draw(st.integers(-2, 2))
    vmap_case(data, lambda a: (mnp.tril_indices_from(a, k), mnp.triu_indices_from(a, k)),
              [Op((n, m))])
    vmap_case(data, lambda a: mnp.diag_indices_from(a), [Op((n, n, n))])
