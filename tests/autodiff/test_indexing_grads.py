"""Derivatives of the indexing primitives (dynamic_slice, dynamic_update_slice, gather,
scatter, scatter_add, scatter_mul, scatter_min, scatter_max) and of mytorch.numpy indexing
built on them, against float64 central finite differences, to second order in forward and
reverse mode; with repeated and out-of-bounds indices in every mode. Exact values check
the conventions that finite differences cannot see: which overwritten values get no
gradient, ties of scatter_min/max sharing the tangent (JAX's rule), dropped windows."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.ad_util import UndefinedPrimal
from mytorch.core.aval import ShapedArray
from tests.autodiff.fd import check_grads
from tests.strategies import shapes

pytestmark = pytest.mark.usefixtures("x64")

GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers


def _seed():
    return st.integers(0, 2**32 - 1)


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _distinct(shape, seed):
    """Values of `shape` at least 0.25 apart (no ties: min/max are differentiable)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    vals = (rng.permutation(n) - n / 2) * 0.5 + rng.uniform(0.0, 0.2, n)
    return vals.reshape(shape)


def _idx(values):
    return mnp.asarray(np.asarray(values, np.int32))


# ---- dynamic_slice, dynamic_update_slice -----------------------------------------------------
@st.composite
def _dynamic_slices(draw):
    """(shape, starts, sizes): starts may be negative or past the end (they are clamped)."""
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
    sizes = tuple(draw(st.integers(0, n)) for n in shape)
    starts = tuple(draw(st.integers(-n - 2, n + 2)) for n in shape)
    return shape, starts, sizes


@given(_dynamic_slices(), _seed(), st.booleans())
def test_dynamic_slice(case, seed, traced_starts):
    shape, starts, sizes = case
    if traced_starts:
        starts = [_idx(s) for s in starts]
    check_grads(lambda x: lax.dynamic_slice(x, starts, sizes), (_rand(shape, seed),), order=2)


@given(_dynamic_slices(), _seed())
def test_dynamic_update_slice(case, seed):
    shape, starts, sizes = case
    x, u = _rand(shape, seed), _rand(sizes, seed + 1)
    check_grads(lambda x, u: lax.dynamic_update_slice(x, u, starts), (x, u), order=2)
    check_grads(lambda x, u: lax.dynamic_update_slice(x * x, u * u, starts), (x, u), order=2)


def test_dynamic_update_slice_exact():
    # start 3 is clamped to 2: the update covers x[2:4], which gets no gradient
    f = lambda x, u: lax.dynamic_update_slice(x, u, (_idx(3),))
    _, vjp = mt.vjp(f, mnp.ones(4), mnp.ones(2))
    gx, gu = vjp(mnp.asarray(np.array([1.0, 2.0, 3.0, 4.0])))
    np.testing.assert_array_equal(np.asarray(gx), [1.0, 2.0, 0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(gu), [3.0, 4.0])
    g = mt.grad(lambda x: mnp.sum(lax.dynamic_slice(x, (_idx(-1),), (2,)) * 10.0))(mnp.ones(4))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0, 10.0, 10.0])


def test_dynamic_update_slice_transpose_keeps_types():
    rule = lax.dynamic_update_slice_p.rule("transpose")
    x_aval = ShapedArray((4,), np.dtype(np.float32), True)
    u_aval = ShapedArray((2,), np.dtype(np.float32), False)
    gx, gu, gs = rule(mnp.ones(4, dtype=np.float32), UndefinedPrimal(x_aval),
                      UndefinedPrimal(u_aval), _idx(1))
    assert gx.weak_type is True and gu.weak_type is False and gs is None
    np.testing.assert_array_equal(np.asarray(gx), [1.0, 0.0, 0.0, 1.0])


# ---- gather ----------------------------------------------------------------------------------
@st.composite
def _row_gathers(draw):
    """x[idx] along axis 0 with windows over the other dims: (shape, idx, slice_sizes),
    indices possibly repeated and out of bounds."""
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    n = shape[0]
    batch = draw(shapes(min_dims=0, max_dims=2, max_side=3))
    idx = np.asarray(draw(st.lists(st.integers(-2, n + 1), min_size=int(np.prod(batch)),
                                   max_size=int(np.prod(batch)))), np.int32).reshape(batch)
    sizes = (1,) + tuple(draw(st.integers(0, m)) for m in shape[1:])
    return shape, idx, sizes


@given(_row_gathers(), st.sampled_from(["clip", "fill", "promise_in_bounds"]), _seed())
def test_gather(case, mode, seed):
    shape, idx, sizes = case
    if mode == "promise_in_bounds":
        idx = np.clip(idx, 0, shape[0] - 1)
    nb = idx.ndim
    dn = GDN(offset_dims=tuple(range(nb, nb + len(shape) - 1)), collapsed_slice_dims=(0,),
             start_index_map=(0,))
    # fill with a finite value so finite differences stay finite
    f = lambda x: lax.gather(x, _idx(idx[..., None]), dn, sizes, mode=mode,
                             fill_value=-3.0)
    check_grads(f, (_rand(shape, seed),), order=2)


@given(st.integers(0, 3), st.integers(-2, 4), st.sampled_from(["clip", "fill"]), _seed())
def test_gather_windows(start0, start1, mode, seed):
    # 2-d windows of size (2, 2) from a 4x3 operand, starting at (start0, start1)
    dn = GDN(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))
    starts = _idx([[start0, start1], [1, 0], [start0, 1]])
    f = lambda x: lax.gather(x, starts, dn, (2, 2), mode=mode, fill_value=0.5)
    check_grads(f, (_rand((4, 3), seed),), order=2)


def test_gather_batching_dims():
    # take_along_axis-style: operand dim 0 indexed by the indices' batch dim 0
    dn = GDN(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
             operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    idx = _idx([[[2], [0], [2]], [[1], [1], [5]]])
    for mode in ("clip", "fill"):
        f = lambda x, mode=mode: lax.gather(x, idx, dn, (1, 1), mode=mode,
                                            fill_value=0.0)
        check_grads(f, (_rand((2, 4), 3),), order=2)


def test_gather_transpose_modes_exact():
    dn = GDN(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    idx = _idx([[1], [1], [7], [-1]])
    ct = mnp.asarray(np.array([1.0, 2.0, 4.0, 8.0]))
    # clip: out-of-range rows read (and get the cotangent of) the clamped rows
    _, vjp = mt.vjp(lambda x: lax.gather(x, idx, dn, (1,), mode="clip"), mnp.ones(3))
    np.testing.assert_array_equal(np.asarray(vjp(ct)[0]), [8.0, 3.0, 4.0])
    # fill: out-of-range rows read the fill value: no cotangent reaches the operand
    _, vjp = mt.vjp(lambda x: lax.gather(x, idx, dn, (1,), mode="fill"), mnp.ones(3))
    np.testing.assert_array_equal(np.asarray(vjp(ct)[0]), [0.0, 3.0, 0.0])
    out, t = mt.jvp(lambda x: lax.gather(x, idx, dn, (1,), mode="fill"), (mnp.ones(3),),
                    (mnp.ones(3),))
    assert np.isnan(np.asarray(out)[2]) and np.asarray(t)[2] == 0.0


# ---- scatter_add -----------------------------------------------------------------------------
@st.composite
def _row_scatters(draw, max_index_extra=1):
    """Updates of rows of an operand along axis 0: (shape, idx, updates shape), indices
    repeated and (up to `max_index_extra`) out of bounds; windows may be partial rows."""
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    n = shape[0]
    batch = draw(shapes(min_dims=0, max_dims=2, max_side=3))
    k = int(np.prod(batch))
    idx = np.asarray(draw(st.lists(st.integers(-max_index_extra, n - 1 + max_index_extra),
                                   min_size=k, max_size=k)), np.int32).reshape(batch)
    window = tuple(draw(st.integers(0, m)) for m in shape[1:])
    return shape, idx, batch + window


def _row_dnums(batch_ndim, operand_ndim):
    return SDN(update_window_dims=tuple(range(batch_ndim, batch_ndim + operand_ndim - 1)),
               inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))


@given(_row_scatters(), st.sampled_from(["clip", "drop", "promise_in_bounds"]), _seed())
def test_scatter_add(case, mode, seed):
    shape, idx, ushape = case
    if mode == "promise_in_bounds":
        idx = np.clip(idx, 0, shape[0] - 1)
    dn = _row_dnums(idx.ndim, len(shape))
    f = lambda x, u: lax.scatter_add(x, _idx(idx[..., None]), u, dn, mode=mode)
    check_grads(f, (_rand(shape, seed), _rand(ushape, seed + 1)), order=2)


def test_scatter_add_exact():
    dn = _row_dnums(1, 1)
    idx = _idx([[0], [2], [0], [5]])
    for mode, want in (("drop", [1.0 + 3.0, 2.0, 0.0]), ("clip", [4.0, 2.0, 4.0])):
        _, vjp = mt.vjp(lambda x, u, mode=mode: lax.scatter_add(x, idx, u, dn, mode=mode),
                        mnp.ones(3), mnp.ones(4))
        gx, gu = vjp(mnp.asarray(np.array([1.0, 2.0, 4.0])))
        np.testing.assert_array_equal(np.asarray(gx), [1.0, 2.0, 4.0])
        u_want = [1.0, 4.0, 1.0, 0.0] if mode == "drop" else [1.0, 4.0, 1.0, 4.0]
        np.testing.assert_array_equal(np.asarray(gu), u_want)
        out = lax.scatter_add(mnp.zeros(3), idx, mnp.ones(4), dn, mode=mode)
        assert np.asarray(out).sum() == (3.0 if mode == "drop" else 4.0), want


# ---- scatter (replace) -----------------------------------------------------------------------
@given(_row_scatters(), st.sampled_from(["clip", "drop"]), _seed())
def test_scatter(case, mode, seed):
    shape, idx, ushape = case
    dn = _row_dnums(idx.ndim, len(shape))
    f = lambda x, u: lax.scatter(x, _idx(idx[..., None]), u, dn, mode=mode)
    check_grads(f, (_rand(shape, seed), _rand(ushape, seed + 1)), order=2)
    g = lambda x, u: lax.scatter(x * x, _idx(idx[..., None]), u * u, dn, mode=mode)
    check_grads(g, (_rand(shape, seed), _rand(ushape, seed + 1)), order=2)


@given(st.data(), st.sampled_from(["clip", "drop"]), _seed())
def test_scatter_unique_indices(data, mode, seed):
    n = data.draw(st.integers(1, 5))
    k = data.draw(st.integers(0, n))
    rows = np.asarray(data.draw(st.permutations(range(n)))[:k], np.int32)
    dn = _row_dnums(1, 2)
    f = lambda x, u: lax.scatter(x, _idx(rows[:, None]), u, dn, mode=mode,
                                 unique_indices=True)
    check_grads(f, (_rand((n, 2), seed), _rand((k, 2), seed + 1)), order=2)


def test_scatter_exact():
    dn = _row_dnums(1, 1)
    idx = _idx([[1], [1], [4]])
    x, u = mnp.asarray(np.array([1.0, 2.0, 3.0])), mnp.asarray(np.array([5.0, 6.0, 7.0]))
    out, vjp = mt.vjp(lambda x, u: lax.scatter(x, idx, u, dn), x, u)
    winner = 0 if float(np.asarray(out)[1]) == 5.0 else 1  # which one wins is the kernel's
    gx, gu = vjp(mnp.asarray(np.array([1.0, 10.0, 100.0])))
    np.testing.assert_array_equal(np.asarray(gx), [1.0, 0.0, 100.0])
    want = [0.0, 0.0, 0.0]
    want[winner] = 10.0
    np.testing.assert_array_equal(np.asarray(gu), want)  # the dropped update gets nothing
    # the transpose of the unique-indices JVP zeroes the overwritten operand elements
    _, vjp = mt.vjp(lambda x, u: lax.scatter(x, _idx([[2], [0]]), u, dn, unique_indices=True),
                    x, mnp.ones(2))
    gx, gu = vjp(mnp.asarray(np.array([1.0, 2.0, 3.0])))
    np.testing.assert_array_equal(np.asarray(gx), [0.0, 2.0, 0.0])
    np.testing.assert_array_equal(np.asarray(gu), [3.0, 1.0])


# ---- scatter_mul -----------------------------------------------------------------------------
def _with_zeros(shape, seed, zeros):
    """Values of magnitude in [0.5, 1.5] with `zeros` of them (at most) exactly 0."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    vals = rng.uniform(0.5, 1.5, n) * rng.choice([-1.0, 1.0], n)
    vals[rng.permutation(n)[:zeros]] = 0.0
    return vals.reshape(shape)


@given(_row_scatters(), st.sampled_from(["clip", "drop"]), st.integers(0, 3), _seed())
def test_scatter_mul(case, mode, zeros, seed):
    # exact zeros among repeated updates: the product is a polynomial, so finite
    # differences are exact there and the second derivatives must be too
    shape, idx, ushape = case
    dn = _row_dnums(idx.ndim, len(shape))
    f = lambda x, u: lax.scatter_mul(x, _idx(idx[..., None]), u, dn, mode=mode)
    check_grads(f, (_rand(shape, seed), _with_zeros(ushape, seed + 1, zeros)), order=2)


def test_scatter_mul_unique_and_third_order():
    dn = _row_dnums(1, 1)
    f = lambda x, u: lax.scatter_mul(x, _idx([[2], [0]]), u, dn,
                                     unique_indices=True)
    check_grads(f, (_rand(3, 0), _with_zeros(2, 1, 1)), order=2)
    # two updates of one element, one of them zero: exact to third order
    g = lambda x, u: lax.scatter_mul(x, _idx([[1], [1], [1]]), u, dn)
    check_grads(g, (_rand(2, 0), np.array([0.0, 0.7, -1.2])), order=3)
    check_grads(g, (_rand(2, 0), np.array([0.0, 0.0, -1.2])), order=3)


def test_scatter_mul_exact():
    dn = _row_dnums(1, 1)
    idx = _idx([[0], [0], [0]])
    x, u = mnp.asarray(np.array([3.0])), mnp.asarray(np.array([2.0, 0.0, 5.0]))
    gx, gu = mt.grad(lambda x, u: mnp.sum(lax.scatter_mul(x, idx, u, dn)), (0, 1))(x, u)
    assert float(gx[0]) == 0.0
    np.testing.assert_array_equal(np.asarray(gu), [0.0, 3.0 * 10.0, 0.0])


# ---- scatter_min, scatter_max ----------------------------------------------------------------
@given(_row_scatters(), st.sampled_from(["clip", "drop"]),
       st.sampled_from([lax.scatter_min, lax.scatter_max]), _seed())
def test_scatter_min_max(case, mode, op, seed):
    shape, idx, ushape = case
    n_x = int(np.prod(shape))
    vals = _distinct((n_x + int(np.prod(ushape)),), seed)
    x, u = vals[:n_x].reshape(shape), vals[n_x:].reshape(ushape)
    dn = _row_dnums(idx.ndim, len(shape))
    f = lambda x, u: op(x, _idx(idx[..., None]), u, dn, mode=mode)
    check_grads(f, (x, u), order=2)


def test_scatter_min_max_ties_share_the_tangent():
    dn = _row_dnums(1, 1)
    idx = _idx([[0], [0], [1], [1]])
    x = mnp.asarray(np.array([1.0, 0.0, 4.0]))
    u = mnp.asarray(np.array([1.0, 1.0, 2.0, 2.0]))
    _, t = mt.jvp(lambda x, u: lax.scatter_max(x, idx, u, dn), (x, u),
                  (mnp.asarray(np.array([3.0, 30.0, 300.0])),
                   mnp.asarray(np.array([6.0, 9.0, 60.0, 90.0]))))
    # element 0: operand 1 ties with two updates of 1; element 1: two updates of 2 win
    np.testing.assert_allclose(np.asarray(t), [(3.0 + 6.0 + 9.0) / 3, (60.0 + 90.0) / 2,
                                               300.0])
    # min: element 0 ties three ways again; element 1 keeps the operand's 0
    g = mt.grad(lambda u: mnp.sum(lax.scatter_min(x, idx, u, dn)))(u)
    np.testing.assert_allclose(np.asarray(g), [1 / 3, 1 / 3, 0.0, 0.0])


# ---- mytorch.numpy indexing -----------------------------------------------------------------
@given(st.data(), _seed())
def test_mnp_getitem(data, seed):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    n = shape[0]
    i = data.draw(st.integers(-n, n - 1))
    rows = np.asarray(data.draw(st.lists(st.integers(-n, n - 1), max_size=4)), np.int32)
    x = _rand(shape, seed)
    check_grads(lambda x: x[i], (x,), order=2)
    check_grads(lambda x: x[rows], (x,), order=2)
    check_grads(lambda x: x[_idx(rows)], (x,), order=2)
    check_grads(lambda x: x[..., None][i], (x,), order=2)
    check_grads(lambda x: x[_idx(i)] * x[0], (x,), order=2)


@given(st.data(), st.sampled_from(["set", "add", "mul", "min", "max"]), _seed())
def test_mnp_at_updates(data, op, seed):
    shape = data.draw(shapes(min_dims=1, max_dims=2, min_side=1, max_side=4))
    n = shape[0]
    rows = np.asarray(data.draw(st.lists(st.integers(-n, n - 1), max_size=4)), np.int32)
    vals = _distinct((int(np.prod(shape)) + len(rows) * int(np.prod(shape[1:])),), seed)
    x = vals[:int(np.prod(shape))].reshape(shape)
    v = vals[int(np.prod(shape)):].reshape((len(rows),) + shape[1:])
    f = lambda x, v: getattr(x.at[_idx(rows)], op)(v)
    check_grads(f, (x, v), order=2)
    i = data.draw(st.integers(-n, n - 1))
    g = lambda x, v: getattr(x.at[i], op)(v[0] if len(v) else 1.0)
    check_grads(g, (x, v), order=2)


def test_mnp_at_set_gradient_exact():
    x = mnp.asarray(np.array([1.0, 2.0, 3.0, 4.0]))
    g = mt.grad(lambda x: mnp.sum(x.at[1:3].set(0.0) * x))(x)
    np.testing.assert_array_equal(np.asarray(g), [2.0, 0.0, 0.0, 8.0])
    g = mt.grad(lambda v: mnp.sum(x.at[_idx([0, 9])].set(v) ** 2))(mnp.asarray(np.ones(2)))
    np.testing.assert_array_equal(np.asarray(g), [2.0, 0.0])  # index 9 is dropped


@given(st.data(), st.sampled_from([None, "clip", "wrap", "fill"]), _seed())
def test_mnp_take(data, mode, seed):
    shape = data.draw(shapes(min_dims=1, max_dims=2, min_side=1, max_side=4))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    hi = n + 2 if mode in ("clip", "wrap", "fill") else n - 1
    idx = np.asarray(data.draw(st.lists(st.integers(-n, hi), max_size=4)), np.int32)
    x = _rand(shape, seed)
    check_grads(lambda x: mnp.take(x, _idx(idx), axis=axis, mode=mode, fill_value=0.0),
                (x,), order=2)
    check_grads(lambda x: mnp.take(x, _idx(idx), mode=mode, fill_value=0.0), (x,), order=2)


@given(st.data(), _seed())
def test_mnp_take_along_axis(data, seed):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    ishape = list(shape)
    ishape[axis] = data.draw(st.integers(0, 4))
    idx = np.random.default_rng(seed).integers(0, shape[axis], ishape).astype(np.int32)
    check_grads(lambda x: mnp.take_along_axis(x, _idx(idx), axis), (_rand(shape, seed),),
                order=2)


def test_mnp_take_along_axis_exact():
    x = mnp.asarray(np.arange(6.0).reshape(2, 3))
    idx = _idx([[2, 2], [0, 1]])
    g = mt.grad(lambda x: mnp.sum(mnp.take_along_axis(x, idx, 1)))(x)
    np.testing.assert_array_equal(np.asarray(g), [[0.0, 0.0, 2.0], [1.0, 1.0, 0.0]])


# ---- reverse over reverse --------------------------------------------------------------------
_ROWS = _idx([[2], [0], [2], [7]])
_REVERSE_CASES = {
    "dynamic_slice": lambda x, u: lax.dynamic_slice(x * u[0], (_idx(1), 0), (2, 2)),
    "dynamic_update_slice": lambda x, u: lax.dynamic_update_slice(x, u[1:3, :2] ** 2,
                                                                  (_idx(2), 0)),
    "gather": lambda x, u: lax.gather(x, _ROWS, GDN((1,), (0,), (0,)), (1, 2), mode="fill",
                                      fill_value=0.0) * u,
    "scatter_add": lambda x, u: lax.scatter_add(x, _ROWS, u * u, _row_dnums(1, 2)),
    "scatter": lambda x, u: lax.scatter(x, _ROWS, u * u, _row_dnums(1, 2), mode="clip"),
    "scatter_mul": lambda x, u: lax.scatter_mul(x, _ROWS, u, _row_dnums(1, 2)),
    "scatter_max": lambda x, u: lax.scatter_max(x, _ROWS, u, _row_dnums(1, 2)),
}


@pytest.mark.parametrize("name", sorted(_REVERSE_CASES))
def test_grad_of_grad(name):
    f = _REVERSE_CASES[name]
    vals = _distinct((20,), 7)
    x, u = vals[:8].reshape(4, 2), vals[8:].reshape(4, 3)[:, :2]
    g = mt.grad(lambda x, u: mnp.sum(mnp.sin(f(x, u))), (0, 1))
    check_grads(g, (x, u), order=1)
