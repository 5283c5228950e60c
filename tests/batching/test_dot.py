"""vmap of dot_general against the loop definition (tests/batching/vmap_check.py): drawn
batch/contracting/free dims in any order, lhs-only, rhs-only and both batched at any
(negative) position, batch sizes 0-3, integer and float dtypes, preferred_element_type;
vmap(grad) against the loop of grads (drawn problems and a per-example MLP), grad of vmap,
nested vmap, and the batched jaxpr is one dot_general."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from tests.batching.vmap_check import assert_tree_close, check_vmap, loop_reference

seeds = st.integers(0, 2**32 - 1)


def x64_settings(**kwargs):
    """Settings for tests using the x64 fixture (it only sets a flag for every example)."""
    return settings(suppress_health_check=[
        *settings.default.suppress_health_check, HealthCheck.function_scoped_fixture], **kwargs)



F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
I8, I32 = np.dtype(np.int8), np.dtype(np.int32)
# (operand dtype, preferred_element_type)
DTYPES = [(F32, None), (F32, None), (I32, None), (I8, I32), (F16, F32), (F32, F32)]


def _tol(dtype):
    """Batched and looped products may accumulate in different orders."""
    return {"rtol": 1e-3, "atol": 1e-3} if dtype == F16 else {"rtol": 1e-5, "atol": 1e-5}


def _values(rng, shape, dtype):
    """Small values: integer products cannot overflow, float sums stay well conditioned."""
    if dtype.kind in "iu":
        return rng.integers(-4, 5, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@st.composite
def dot_problems(draw, float_only=False):
    """One example's operand shapes and dimension numbers: batch, contracting and free
    dims in a drawn order for each operand."""
    nb, nc = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    nlf, nrf = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    side = st.integers(1, 3)
    batch = [draw(side) for _ in range(nb)]
    contract = [draw(side) for _ in range(nc)]
    # each operand: a list of (kind, index) in canonical order, then permuted
    lhs_kinds = [("b", k) for k in range(nb)] + [("c", k) for k in range(nc)] + [
        ("f", k) for k in range(nlf)]
    rhs_kinds = [("b", k) for k in range(nb)] + [("c", k) for k in range(nc)] + [
        ("f", k) for k in range(nrf)]
    lhs_kinds = [lhs_kinds[i] for i in draw(st.permutations(range(len(lhs_kinds))))]
    rhs_kinds = [rhs_kinds[i] for i in draw(st.permutations(range(len(rhs_kinds))))]
    lfree, rfree = [draw(side) for _ in range(nlf)], [draw(side) for _ in range(nrf)]

    def shape(kinds, free):
        sizes = {"b": batch, "c": contract, "f": free}
        return tuple(sizes[kind][k] for kind, k in kinds)

    def where(kinds, kind, n):
        return tuple(kinds.index((kind, k)) for k in range(n))

    dims = ((where(lhs_kinds, "c", nc), where(rhs_kinds, "c", nc)),
            (where(lhs_kinds, "b", nb), where(rhs_kinds, "b", nb)))
    dtype, pet = draw(st.sampled_from(DTYPES[:2] if float_only else DTYPES))
    return shape(lhs_kinds, lfree), shape(rhs_kinds, rfree), dims, dtype, pet


@st.composite
def batch_axes(draw, shapes, allow_unbatched=True):
    """An in_axes entry per operand (None or a possibly negative axis), at least one int."""
    axes = []
    for shape in shapes:
        n = len(shape) + 1
        ax = st.integers(-n, n - 1)
        axes.append(draw(st.one_of(st.none(), ax) if allow_unbatched else ax))
    if all(a is None for a in axes):
        k = draw(st.integers(0, len(shapes) - 1))
        axes[k] = draw(st.integers(-len(shapes[k]) - 1, len(shapes[k])))
    return tuple(axes)


def _with(shape, axis, size):
    """`shape` with a dim of `size` inserted at `axis` (negative counts from the end)."""
    full = list(shape)
    full.insert(axis % (len(shape) + 1), size)
    return tuple(full)


def _stacked(rng, shape, axis, size, dtype):
    """Values of `shape` (one example), with a batch dim of `size` at `axis` if not None."""
    return _values(rng, shape if axis is None else _with(shape, axis, size), dtype)


def _dot(dims, pet=None, precision=None):
    return lambda a, b: lax.dot_general(a, b, dims, precision=precision,
                                        preferred_element_type=pet)


@given(dot_problems(), st.data(), st.integers(0, 3), seeds)
def test_dot_general_vmap_matches_loop(problem, data, size, seed):
    lshape, rshape, dims, dtype, pet = problem
    in_axes = data.draw(batch_axes((lshape, rshape)))
    nc, nb = len(dims[0][0]), len(dims[1][0])
    out_ndim = len(lshape) + len(rshape) - 2 * nc - nb + 1  # with the vmapped dim
    out_axes = data.draw(st.integers(-out_ndim, out_ndim - 1))
    precision = data.draw(st.sampled_from([None, "highest"]))
    rng = np.random.default_rng(seed)
    args = tuple(_stacked(rng, s, a, size, dtype) for s, a in zip((lshape, rshape), in_axes))
    tol = _tol(dtype)
    check_vmap(_dot(dims, pet, precision), args, in_axes, out_axes, **tol)


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0), (2, 1), (None, -1)])
def test_dot_general_batched_jaxpr_is_one_dot(in_axes):
    dims = (((1,), (0,)), ((), ()))
    rng = np.random.default_rng(0)
    args = [_stacked(rng, s, a, 4, F32) for s, a in zip(((2, 3), (3, 5)), in_axes)]
    closed = mt.make_jaxpr(mt.vmap(_dot(dims), in_axes))(*args)
    names = [e.primitive.name for e in closed.jaxpr.eqns]
    assert names.count("dot_general") == 1, names
    # no operand is broadcast or moved: one dot_general, at most a transpose of its result
    assert set(names) <= {"dot_general", "transpose"}, names
    check_vmap(_dot(dims), tuple(args), in_axes)


def test_dot_general_unbatched_operand_stays_unbatched():
    """An unbatched operand keeps its shape in the batched jaxpr (no broadcasting)."""
    w = np.ones((3, 5), np.float32)
    xs = np.ones((7, 2, 3), np.float32)
    closed = mt.make_jaxpr(mt.vmap(_dot((((1,), (0,)), ((), ()))), (0, None)))(xs, w)
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "dot_general"]
    assert [v.aval.shape for v in eqn.invars] == [(7, 2, 3), (3, 5)]


def test_dot_and_batch_matmul_vmap():
    rng = np.random.default_rng(1)
    m, v = rng.standard_normal((4, 3, 5), np.float32), rng.standard_normal((5,), np.float32)
    check_vmap(lax.dot, (m, v), (0, None))
    check_vmap(lax.dot, (v, rng.standard_normal((5, 4, 2), np.float32)), (None, 1))
    a = rng.standard_normal((2, 6, 3, 4), np.float32)
    b = rng.standard_normal((6, 2, 4, 5), np.float32)
    check_vmap(lax.batch_matmul, (a, b), (1, 0))


# ---- composition with differentiation ----------------------------------------------------
def _loss_of(dims):
    def loss(a, b):
        return mnp.sum(mnp.sin(lax.dot_general(a, b, dims)))
    return loss


@x64_settings(max_examples=15)
@given(dot_problems(float_only=True), st.data(), st.integers(1, 3), seeds)
def test_vmap_of_grad_matches_loop_of_grads(x64, problem, data, size, seed):
    lshape, rshape, dims, _, _ = problem
    in_axes = data.draw(batch_axes((lshape, rshape)))
    rng = np.random.default_rng(seed)
    args = tuple(_stacked(rng, s, a, size, F64) for s, a in zip((lshape, rshape), in_axes))
    grads = mt.grad(_loss_of(dims), argnums=(0, 1))
    check_vmap(grads, args, in_axes, rtol=1e-10, atol=1e-12)


def _mlp_loss(params, x, y):
    w1, b1, w2 = params
    h = mnp.tanh(lax.dot(x, w1) + b1)
    return mnp.sum((lax.dot(h, w2) - y) ** 2)


def _mlp_problem(seed, n=5):
    rng = np.random.default_rng(seed)
    params = (rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((4, 2)))
    return params, rng.standard_normal((n, 3)), rng.standard_normal((n, 2))


def test_per_example_grads_of_mlp(x64):
    params, xs, ys = _mlp_problem(0)
    per_example = mt.vmap(mt.grad(_mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    want = loop_reference(mt.grad(_mlp_loss), (params, xs, ys), (None, 0, 0), 0)
    assert_tree_close(per_example, want, rtol=1e-10, atol=1e-12)
    # and the same with the batch at the end of each input
    got = mt.vmap(mt.grad(_mlp_loss), in_axes=(None, 1, 1))(params, xs.T, ys.T)
    assert_tree_close(got, want, rtol=1e-10, atol=1e-12)


def test_ensemble_grads_of_mlp(x64):
    """Per-member parameters and per-member data: every dot_general has both operands
    batched, in the forward and in the backward pass."""
    params, xs, ys = _mlp_problem(1)
    rng = np.random.default_rng(2)
    stacked = tuple(np.stack([p + 0.1 * rng.standard_normal(p.shape) for _ in range(5)])
                    for p in params)

    def grads(w1, b1, w2, x, y):
        return mt.grad(_mlp_loss)((w1, b1, w2), x, y)

    check_vmap(grads, (*stacked, xs, ys), 0, rtol=1e-10, atol=1e-12)


def test_grad_of_vmap_matches_summed_loop(x64):
    params, xs, ys = _mlp_problem(3)

    def total(p):
        return mnp.sum(mt.vmap(_mlp_loss, in_axes=(None, 0, 0))(p, xs, ys))

    got = mt.grad(total)(params)
    per = loop_reference(mt.grad(_mlp_loss), (params, xs, ys), (None, 0, 0), 0)
    want = tuple(np.sum(p, axis=0) for p in per)
    assert_tree_close(got, want, rtol=1e-10, atol=1e-12)


def test_jvp_of_vmap(x64):
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 2, 4)), rng.standard_normal((4, 5))
    ta, tb = rng.standard_normal(a.shape), rng.standard_normal(b.shape)
    f = mt.vmap(_dot((((1,), (0,)), ((), ()))), (0, None))
    out, tangent = mt.jvp(f, (a, b), (ta, tb))
    np.testing.assert_allclose(out, a @ b, rtol=1e-12)
    np.testing.assert_allclose(tangent, ta @ b + a @ tb, rtol=1e-12)


# ---- nested vmap -------------------------------------------------------------------------
def test_nested_vmap_outer_product_of_batches():
    rng = np.random.default_rng(5)
    xs = rng.standard_normal((3, 4, 5), np.float32)  # batch i
    ws = rng.standard_normal((5, 2, 6), np.float32)  # batch j at axis 1
    dot = _dot((((1,), (0,)), ((), ())))
    got = mt.vmap(mt.vmap(dot, (None, 1)), (0, None))(xs, ws)
    want = np.einsum("ikl,ljm->ijkm", xs, ws)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@given(dot_problems(), st.data(), st.integers(1, 3), st.integers(1, 3), seeds)
@settings(max_examples=15)
def test_nested_vmap_matches_nested_loop(problem, data, n_outer, n_inner, seed):
    lshape, rshape, dims, dtype, pet = problem
    inner = data.draw(batch_axes((lshape, rshape)))
    inner_shapes = [s if a is None else _with(s, a, n_inner)
                    for s, a in zip((lshape, rshape), inner)]
    outer = data.draw(batch_axes(inner_shapes))
    rng = np.random.default_rng(seed)
    args = tuple(_stacked(rng, s, a, n_outer, dtype) for s, a in zip(inner_shapes, outer))
    f = mt.vmap(_dot(dims, pet), inner)
    tol = _tol(dtype)
    # the reference loops over both levels: loop_reference of the inner loop reference
    got = mt.vmap(f, outer)(*args)
    want = loop_reference(lambda *a: loop_reference(_dot(dims, pet), a, inner, 0),
                          args, outer, 0)
    assert_tree_close(got, want, **tol)
