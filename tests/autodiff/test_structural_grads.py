"""Derivatives of the structural primitives (broadcast_in_dim, reshape, squeeze, transpose,
rev, pad, concatenate, slice, iota) and of the mytorch.numpy functions built on them,
against float64 central finite differences, to second order in forward and reverse mode;
plus exact transposes (sums over broadcast dims, zeros where a slice or pad did not read,
the padding value's share) and the cotangents' dtypes and weak types."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.ad_util import UndefinedPrimal
from mytorch.core.aval import ShapedArray
from tests.autodiff.fd import check_grads
from tests.strategies import shapes

pytestmark = pytest.mark.usefixtures("x64")


def _seed():
    return st.integers(0, 2**32 - 1)


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _signed(draw, axis, ndim):
    """`axis` or its negative spelling."""
    return draw(st.sampled_from([axis, axis - ndim]))


# ---- broadcast_in_dim ------------------------------------------------------------------------
@st.composite
def _broadcasts(draw):
    """(operand shape, target shape, broadcast_dimensions), with size-1 dims stretched."""
    shape = draw(shapes(max_dims=3, max_side=3))
    out_rank = len(shape) + draw(st.integers(0, 2))
    dims = sorted(draw(st.lists(st.integers(0, out_rank - 1), min_size=len(shape),
                                max_size=len(shape), unique=True))) if shape else []
    target = [draw(st.integers(0, 3)) for _ in range(out_rank)]
    for n, d in zip(shape, dims):
        target[d] = draw(st.integers(0, 3)) if n == 1 else n
    return shape, tuple(target), tuple(dims)


@given(_broadcasts(), _seed())
def test_broadcast_in_dim(case, seed):
    shape, target, dims = case
    check_grads(lambda x: lax.broadcast_in_dim(x, target, dims), (_rand(shape, seed),),
                order=2)


def test_broadcast_in_dim_transpose_sums():
    # f32[3,1] -> f32[2,3,4]: the cotangent sums over the new dim 0 and the stretched dim 2
    f = lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2))
    _, vjp = mt.vjp(f, mnp.ones((3, 1)))
    ct = np.arange(24.0).reshape(2, 3, 4)
    (g,) = vjp(mnp.asarray(ct))
    np.testing.assert_array_equal(np.asarray(g), ct.sum(axis=(0, 2))[:, None])
    assert g.shape == (3, 1)


@pytest.mark.parametrize("weak", [False, True])
def test_broadcast_in_dim_transpose_keeps_operand_type(weak):
    rule = lax.broadcast_in_dim_p.rule("transpose")
    aval = ShapedArray((3,), np.dtype(np.float32), weak)
    (ct,) = rule(mnp.ones((2, 3), dtype=np.float32), UndefinedPrimal(aval), shape=(2, 3),
                 broadcast_dimensions=(1,))
    assert (ct.shape, ct.dtype, ct.weak_type) == ((3,), np.dtype(np.float32), weak)
    np.testing.assert_array_equal(np.asarray(ct), [2.0, 2.0, 2.0])


def test_grad_of_broadcast_scalar():
    g = mt.grad(lambda x: mnp.sum(lax.broadcast_in_dim(x, (4, 5), ()) ** 2))(mnp.asarray(3.0))
    assert float(g) == 2 * 3.0 * 20


# ---- reshape, squeeze ------------------------------------------------------------------------
@st.composite
def _reshapes(draw):
    shape = draw(shapes(max_dims=3, max_side=4))
    n = int(np.prod(shape))
    options = [(n,), (1, n), shape[::-1]]
    if n and n % 2 == 0:
        options.append((2, n // 2))
    new = draw(st.sampled_from(options))
    dims = None
    if len(shape) > 1 and draw(st.booleans()):
        dims = tuple(draw(st.permutations(range(len(shape)))))
    return shape, tuple(new), dims


@given(_reshapes(), _seed())
def test_reshape(case, seed):
    shape, new, dims = case
    check_grads(lambda x: lax.reshape(x, new, dims), (_rand(shape, seed),), order=2)


@st.composite
def _squeezes(draw):
    shape = list(draw(shapes(max_dims=3, max_side=3)))
    for _ in range(draw(st.integers(1, 2))):  # insert size-1 dims to remove
        shape.insert(draw(st.integers(0, len(shape))), 1)
    ones = [i for i, n in enumerate(shape) if n == 1]
    picked = draw(st.lists(st.sampled_from(ones), unique=True, min_size=1))
    return tuple(shape), tuple(_signed(draw, d, len(shape)) for d in picked)


@given(_squeezes(), _seed())
def test_squeeze(case, seed):
    shape, dims = case
    check_grads(lambda x: lax.squeeze(x, dims), (_rand(shape, seed),), order=2)


# ---- transpose, rev --------------------------------------------------------------------------
@given(st.data(), _seed())
def test_transpose(data, seed):
    shape = data.draw(shapes(max_dims=4, max_side=3))
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    check_grads(lambda x: lax.transpose(x, perm), (_rand(shape, seed),), order=2)


@given(st.data(), _seed())
def test_rev(data, seed):
    shape = data.draw(shapes(max_dims=3, max_side=4))
    nd = len(shape)
    picked = data.draw(st.lists(st.integers(0, nd - 1), unique=True)) if nd else []
    dims = tuple(_signed(data.draw, d, nd) for d in picked)
    check_grads(lambda x: lax.rev(x, dims), (_rand(shape, seed),), order=2)


def test_transpose_vjp_inverts_permutation():
    x = mnp.asarray(np.arange(24.0).reshape(2, 3, 4))
    _, vjp = mt.vjp(lambda x: lax.transpose(x, (2, 0, 1)), x)
    (g,) = vjp(mnp.asarray(np.arange(24.0).reshape(4, 2, 3)))
    np.testing.assert_array_equal(np.asarray(g),
                                  np.arange(24.0).reshape(4, 2, 3).transpose(1, 2, 0))


# ---- pad -------------------------------------------------------------------------------------
@st.composite
def _pads(draw):
    shape = draw(shapes(max_dims=3, max_side=3))
    config = []
    for n in shape:
        interior = draw(st.integers(0, 2))
        inner = n + max(n - 1, 0) * interior
        lo = draw(st.integers(-min(inner, 2), 2))
        hi = draw(st.integers(-min(inner + lo, 2), 2))  # keep the size >= 0
        config.append((lo, hi, interior))
    return shape, tuple(config)


@given(_pads(), _seed())
def test_pad(case, seed):
    shape, config = case
    x, v = _rand(shape, seed), np.asarray(_rand((), seed + 1))
    check_grads(lambda x, v: lax.pad(x, v, config), (x, v), order=2)


def test_pad_transpose_exact():
    # [v, x0, v, x1, v, x2, v, v] (low 1, interior 1, high 2) cropped by -1 at the low end
    config = ((0, 2, 1),)
    f = lambda x, v: lax.pad(x, v, config)
    _, vjp = mt.vjp(f, mnp.ones(3), mnp.asarray(0.0))
    ct = np.arange(1.0, 8.0)  # [x0, v, x1, v, x2, v, v]
    gx, gv = vjp(mnp.asarray(ct))
    np.testing.assert_array_equal(np.asarray(gx), [1.0, 3.0, 5.0])
    assert float(gv) == 2.0 + 4.0 + 6.0 + 7.0
    # negative low padding crops x0: it gets a zero cotangent
    _, vjp = mt.vjp(lambda x: lax.pad(x, 0.0, ((-1, 0, 0),)), mnp.ones(3))
    (gx,) = vjp(mnp.asarray(np.array([5.0, 7.0])))
    np.testing.assert_array_equal(np.asarray(gx), [0.0, 5.0, 7.0])


def test_pad_padding_value_keeps_its_weak_type():
    rule = lax.pad_p.rule("transpose")
    x_aval = ShapedArray((2,), np.dtype(np.float32), False)
    v_aval = ShapedArray((), np.dtype(np.float32), True)
    gx, gv = rule(mnp.ones(4, dtype=np.float32), UndefinedPrimal(x_aval),
                  UndefinedPrimal(v_aval), padding_config=((1, 1, 0),))
    assert gx.weak_type is False and gv.weak_type is True and gv.shape == ()
    assert float(gv) == 2.0


# ---- concatenate -----------------------------------------------------------------------------
@given(st.data(), _seed())
def test_concatenate(data, seed):
    base = list(data.draw(shapes(min_dims=1, max_dims=3, max_side=3)))
    nd = len(base)
    axis = data.draw(st.integers(0, nd - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    args = []
    for k, n in enumerate(sizes):
        shape = list(base)
        shape[axis] = n
        args.append(_rand(tuple(shape), seed + k))
    dim = _signed(data.draw, axis, nd)
    check_grads(lambda *xs: lax.concatenate(xs, dim), tuple(args), order=2)


def test_concatenate_with_constant_operand():
    c = mnp.asarray(np.arange(4.0).reshape(2, 2))
    check_grads(lambda x: lax.concatenate([c, x * x, c], 1), (_rand((2, 3), 0),), order=2)


# ---- slice -----------------------------------------------------------------------------------
@st.composite
def _slices(draw):
    shape = draw(shapes(max_dims=3, max_side=5))
    starts, limits, strides = [], [], []
    for n in shape:
        s = draw(st.integers(0, n))
        starts.append(s)
        limits.append(draw(st.integers(s, n)))
        strides.append(draw(st.integers(1, 3)))
    return shape, tuple(starts), tuple(limits), tuple(strides)


@given(_slices(), _seed())
def test_slice(case, seed):
    shape, starts, limits, strides = case
    check_grads(lambda x: lax.slice(x, starts, limits, strides), (_rand(shape, seed),),
                order=2)


def test_slice_transpose_fills_zeros():
    _, vjp = mt.vjp(lambda x: lax.slice(x, (1,), (7,), (3,)), mnp.ones(8))
    (g,) = vjp(mnp.asarray(np.array([10.0, 20.0])))
    np.testing.assert_array_equal(np.asarray(g), [0, 10, 0, 0, 20, 0, 0, 0])


# ---- iota ------------------------------------------------------------------------------------
def test_iota_has_zero_derivative():
    assert "jvp" in lax.iota_p.rules
    rule = lax.iota_p.rule("jvp")
    out, t = rule([], [], dtype=np.dtype(np.float64), shape=(3,), dimension=0)
    assert type(t).__name__ == "Zero" and t.aval.shape == (3,)
    np.testing.assert_array_equal(np.asarray(out), [0.0, 1.0, 2.0])
    f = lambda x: x * lax.iota(np.float64, 4)
    check_grads(f, (_rand((4,), 0),), order=2)
    g = mt.grad(lambda x: mnp.sum(f(x)))(mnp.ones(4))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 1.0, 2.0, 3.0])


# ---- mytorch.numpy functions built on these --------------------------------------------------
@given(st.data(), _seed())
def test_mnp_reshape_transpose_moveaxis(data, seed):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=3))
    nd = len(shape)
    src = data.draw(st.integers(-nd, nd - 1))
    dst = data.draw(st.integers(-nd, nd - 1))
    x = _rand(shape, seed)
    check_grads(lambda x: mnp.reshape(x, (-1,)), (x,), order=2)
    check_grads(lambda x: mnp.transpose(x), (x,), order=2)
    check_grads(lambda x: mnp.moveaxis(x, src, dst), (x,), order=2)


@given(st.data(), _seed())
def test_mnp_flip_roll(data, seed):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4))
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    shift = data.draw(st.integers(-5, 5))
    x = _rand(shape, seed)
    check_grads(lambda x: mnp.flip(x, axis), (x,), order=2)
    check_grads(lambda x: mnp.roll(x, shift, axis), (x,), order=2)
    check_grads(lambda x: mnp.roll(x, shift), (x,), order=2)


@given(st.data(), _seed())
def test_mnp_tile_repeat_broadcast_to(data, seed):
    shape = data.draw(shapes(max_dims=2, max_side=3))
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)))
    repeats = data.draw(st.integers(0, 3))
    x = _rand(shape, seed)
    check_grads(lambda x: mnp.tile(x, reps), (x,), order=2)
    check_grads(lambda x: mnp.repeat(x, repeats), (x,), order=2)
    check_grads(lambda x: mnp.broadcast_to(x, (2,) + shape), (x,), order=2)


def test_mnp_repeat_per_element_and_axis():
    x = _rand((3, 2), 1)
    check_grads(lambda x: mnp.repeat(x, np.array([2, 0, 1]), axis=0), (x,), order=2)
    g = mt.grad(lambda x: mnp.sum(mnp.repeat(x, 3) * mnp.repeat(x, 3)))(mnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), 6 * x)


@given(st.data(), _seed())
def test_mnp_squeeze_expand_dims(data, seed):
    shape = data.draw(shapes(max_dims=2, max_side=3))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    x = _rand(shape, seed)
    check_grads(lambda x: mnp.squeeze(mnp.expand_dims(x, axis), axis), (x,), order=2)
    check_grads(lambda x: mnp.expand_dims(x, axis) * 2.0, (x,), order=2)
    check_grads(lambda x: x[..., None], (x,), order=2)


@given(st.data(), _seed())
def test_mnp_concatenate_stack_split(data, seed):
    shape = data.draw(shapes(min_dims=1, max_dims=2, max_side=4))
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    a, b = _rand(shape, seed), _rand(shape, seed + 1)
    check_grads(lambda a, b: mnp.concatenate([a, b * b], axis=axis), (a, b), order=2)
    stack_axis = data.draw(st.integers(-nd - 1, nd))
    check_grads(lambda a, b: mnp.stack([a, b], axis=stack_axis), (a, b), order=2)
    n = shape[axis]
    points = sorted(data.draw(st.lists(st.integers(0, n), max_size=2)))
    check_grads(lambda a: mnp.split(a, points, axis=axis), (a,), order=2)
    assume(n % 2 == 0)
    check_grads(lambda a: mnp.split(a, 2, axis=axis)[1] ** 2, (a,), order=2)


@given(st.data(), _seed())
def test_mnp_pad(data, seed):
    shape = data.draw(shapes(min_dims=1, max_dims=2, min_side=1, max_side=3))
    widths = tuple((data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2)))
                   for _ in shape)
    x = _rand(shape, seed)
    check_grads(lambda x: mnp.pad(x, widths), (x,), order=2)
    check_grads(lambda x: mnp.pad(x, widths, constant_values=1.5) ** 2, (x,), order=2)
    check_grads(lambda x: mnp.pad(x, widths, mode="edge"), (x,), order=2)


def test_mnp_static_slices():
    x = _rand((7, 3), 2)
    check_grads(lambda x: x[1:5:2], (x,), order=2)
    check_grads(lambda x: x[::-2, 1:], (x,), order=2)
    check_grads(lambda x: x[2], (x,), order=2)
    g = mt.grad(lambda x: mnp.sum(x[1:5:2] ** 2))(mnp.asarray(x))
    want = np.zeros_like(x)
    want[1:5:2] = 2 * x[1:5:2]
    np.testing.assert_allclose(np.asarray(g), want)


# ---- reverse over reverse --------------------------------------------------------------------
_REVERSE_CASES = {
    "broadcast_in_dim": lambda x, v: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)) * v,
    "reshape": lambda x, v: lax.reshape(x * v, (4, 3), (1, 0)),
    "pad": lambda x, v: lax.pad(x, v, ((1, -1, 1), (0, 2, 0))) ** 2,
    "concatenate": lambda x, v: lax.concatenate([x, x * v], 0),
    "slice": lambda x, v: lax.slice(x * v, (0, 1), (3, 4), (2, 2)),
    "rev_transpose": lambda x, v: lax.transpose(lax.rev(x * v, (0,)), (1, 0)),
}


@pytest.mark.parametrize("name", sorted(_REVERSE_CASES))
def test_grad_of_grad(name):
    f = _REVERSE_CASES[name]
    g = mt.grad(lambda x, v: mnp.sum(mnp.sin(f(x, v))), (0, 1))
    check_grads(g, (_rand((3, 4), 0), np.asarray(0.7)), order=1)
