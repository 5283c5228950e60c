"""Collectives under vmap(f, axis_name=...): psum, pmean, pmax, pmin, all_gather,
psum_scatter, all_to_all, ppermute and axis_index.

A collective is not a per-example function, so the reference is NumPy applied to the whole
stack of examples (`xs[k]` is example k): e.g. psum gives every example xs.sum(0). Drawn
shapes, batch sizes (0 and 1 included where defined), batch axes anywhere (negative too),
out_axes, unbatched operands; nested vmaps with two names; vmap(jvp), vmap(grad) and
grad/jvp of vmap against float64 central differences; make_jaxpr; error messages.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax, tree_util
from tests.autodiff.fd import check_grads
from tests.batching.vmap_check import assert_tree_close
from tests.strategies import arrays, shapes

F32, I32 = np.dtype(np.float32), np.dtype(np.int32)
TOL = {"rtol": 1e-5, "atol": 1e-4}  # batched sums may add in another order


# ---- helpers ------------------------------------------------------------------------------
def _vmap(f, args, in_axes=0, out_axes=0, axis_name="i", axis_size=None):
    """vmap(f)(*args), checked against the same vmap traced by make_jaxpr and evaluated."""
    vf = mt.vmap(f, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name,
                 axis_size=axis_size)
    got = vf(*args)
    closed = mt.make_jaxpr(vf)(*args)
    mt.check_jaxpr(closed.jaxpr)
    staged = mt.eval_jaxpr(closed.jaxpr, closed.consts,
                           *[mnp.asarray(a) for a in tree_util.tree_leaves(args)])
    assert_tree_close(staged, tree_util.tree_leaves(got), rtol=1e-6, atol=1e-6)
    return got


def _draw_batch(data, shape, n, dtype=F32, bound=10):
    """(stack, xs, in_axis): n examples of `shape` stacked along a drawn axis (maybe given
    as a negative number) and the same examples stacked along axis 0."""
    rank = len(shape)
    ax = data.draw(st.integers(0, rank), label="in_axis")
    xs = data.draw(arrays(dtype, (n, *shape), min_value=-bound, max_value=bound),
                   label="xs")
    neg = data.draw(st.booleans(), label="negative in_axis")
    return np.moveaxis(xs, 0, ax), xs, ax - (rank + 1) if neg else ax


def _draw_out_axis(data, rank):
    """An out_axis for per-example results of `rank` (negative half the time)."""
    ax = data.draw(st.integers(0, rank), label="out_axis")
    return ax - (rank + 1) if data.draw(st.booleans(), label="negative out_axis") else ax


def _check(got, stacked, out_axis, dtype=None, **tol):
    """`got` (batched along out_axis) equals `stacked` (the examples along axis 0)."""
    got = np.moveaxis(np.asarray(got), out_axis, 0)
    want = np.asarray(stacked)
    assert got.shape == want.shape, (got.shape, want.shape)
    if dtype is not None:
        assert got.dtype == dtype, (got.dtype, dtype)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, **(tol or TOL))
    else:
        np.testing.assert_array_equal(got, want)


def _every(n, value):
    """`value` given to each of n examples: stacked along a new axis 0."""
    value = np.asarray(value)
    return np.broadcast_to(value, (n, *value.shape))


# ---- psum, pmean, pmax, pmin ----------------------------------------------------------------
REDUCERS = {  # name: (binder, NumPy reduction over the examples, smallest batch)
    "psum": (lax.psum, lambda xs: xs.sum(0), 0),
    "pmax": (lax.pmax, lambda xs: xs.max(0), 1),
    "pmin": (lax.pmin, lambda xs: xs.min(0), 1),
    "pmean": (lax.pmean, lambda xs: xs.mean(0), 1),
}


@pytest.mark.parametrize("name", list(REDUCERS))
@given(data=st.data())
def test_reducers_match_numpy(name, data):
    binder, ref, smallest = REDUCERS[name]
    dtype = data.draw(st.sampled_from([F32, I32]), label="dtype")
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    n = data.draw(st.integers(smallest, 4), label="n")
    x, xs, in_axis = _draw_batch(data, shape, n, dtype)
    out_axis = _draw_out_axis(data, len(shape))
    got = _vmap(lambda v: binder(v, "i"), (x,), in_axis, out_axis)
    want = ref(xs.astype(np.float64)) if name == "pmean" else ref(xs)
    out_dtype = F32 if name == "pmean" else dtype
    _check(got, _every(n, want).astype(out_dtype), out_axis, out_dtype)


@pytest.mark.parametrize("name", list(REDUCERS))
@given(data=st.data())
@settings(max_examples=10)
def test_reducers_of_unbatched_values(name, data):
    """An unbatched value is the same on every example: psum gives n * y, pmax y."""
    binder, ref, smallest = REDUCERS[name]
    n = data.draw(st.integers(smallest, 4), label="n")
    y = data.draw(arrays(F32, (2,), min_value=-10, max_value=10), label="y")
    x = np.zeros((n, 3), np.float32)
    got = _vmap(lambda a, b: (binder(b, "i"), binder(2.0, "i")), (x, y), (0, None))
    _check(got[0], _every(n, ref(_every(n, y)) if n else y), 0)
    _check(got[1], _every(n, ref(np.full(n, 2.0)) if n else 2.0), 0)


def test_reducers_take_pytrees_and_keep_dtypes():
    x = {"a": np.arange(6.0, dtype=np.float32).reshape(3, 2),
         "b": np.array([1, 5, 2], np.int32)}
    got = _vmap(lambda t: lax.psum(t, "i"), (x,))
    _check(got["a"], _every(3, x["a"].sum(0)), 0, F32)
    _check(got["b"], _every(3, 8), 0, I32)
    got = _vmap(lambda t: lax.pmax(t, ("i",)), (x,))
    _check(got["b"], _every(3, 5), 0, I32)


def test_psum_of_int8_wraps_like_a_sum():
    y = np.array([100], np.int8)
    got = mt.vmap(lambda b: lax.psum(b, "i"), in_axes=None, axis_name="i", axis_size=3)(y)
    want = np.array([100, 100, 100], np.int8).sum(dtype=np.int8)
    _check(got, _every(3, [want]), 0)


# ---- axis_index -----------------------------------------------------------------------------
@given(n=st.integers(0, 5))
@settings(max_examples=6)
def test_axis_index(n):
    got = _vmap(lambda: lax.axis_index("i"), (), axis_size=n)
    _check(got, np.arange(n, dtype=np.int32), 0, I32)
    got = _vmap(lambda x: x + lax.axis_index("i").astype(np.float32), (np.zeros((n, 2)),),
                out_axes=1)
    _check(got, np.broadcast_to(np.arange(n, dtype=np.float32)[:, None], (n, 2)), 1)


# ---- all_gather, psum_scatter ---------------------------------------------------------------
def _gathered(xs, axis, tiled):
    """What every example gets from all_gather: the examples stacked at `axis` (or, tiled,
    concatenated along it)."""
    stacked = np.moveaxis(xs, 0, axis)
    if not tiled:
        return stacked
    shape = list(xs.shape[1:])
    shape[axis] *= xs.shape[0]
    return stacked.reshape(shape)


@given(data=st.data())
def test_all_gather_matches_numpy(data):
    tiled = data.draw(st.booleans(), label="tiled")
    shape = data.draw(shapes(min_dims=1 if tiled else 0, max_dims=3, max_side=3),
                      label="shape")
    n = data.draw(st.integers(0, 4), label="n")
    rank = len(shape)
    bound = rank if tiled else rank + 1
    axis = data.draw(st.integers(-bound, bound - 1), label="axis")
    batched = data.draw(st.booleans(), label="batched")
    if batched:
        x, xs, in_axis = _draw_batch(data, shape, n)
    else:
        xs = _every(n, data.draw(arrays(F32, shape, min_value=-9, max_value=9), label="y"))
        x, in_axis = xs[0] if n else np.zeros(shape, np.float32), None
        xs = _every(n, x)
    out_axis = _draw_out_axis(data, rank + (0 if tiled else 1))
    got = _vmap(lambda v: lax.all_gather(v, "i", axis=axis, tiled=tiled), (x,), in_axis,
                out_axis, axis_size=n)
    _check(got, _every(n, _gathered(xs, axis % bound, tiled)), out_axis, F32)


@given(data=st.data())
def test_psum_scatter_matches_numpy(data):
    tiled = data.draw(st.booleans(), label="tiled")
    n = data.draw(st.integers(1 if tiled else 0, 3), label="n")
    shape = list(data.draw(shapes(min_dims=1, max_dims=3, max_side=3), label="shape"))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="scatter_dimension")
    d = dim % len(shape)
    shape[d] = n * data.draw(st.integers(0, 2), label="block") if tiled else n
    dtype = data.draw(st.sampled_from([F32, I32]), label="dtype")
    x, xs, in_axis = _draw_batch(data, tuple(shape), n, dtype)
    out_rank = len(shape) - (0 if tiled else 1)
    out_axis = _draw_out_axis(data, out_rank)
    got = _vmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=dim, tiled=tiled),
                (x,), in_axis, out_axis)
    total = xs.sum(0)
    if tiled:
        want = np.stack(np.split(total, n, axis=d)) if n else None
    else:
        want = np.moveaxis(total, d, 0)
    _check(got, want, out_axis, dtype)


# ---- all_to_all ----------------------------------------------------------------------------
def _all_to_all_ref(xs, split, concat, tiled):
    """Example i gets block i of every example j's split axis, joined by j along concat."""
    n = xs.shape[0]
    outs = []
    for i in range(n):
        blocks = [np.split(xs[j], n, axis=split)[i] for j in range(n)]
        if tiled:
            outs.append(np.concatenate(blocks, concat))
        else:
            blocks = [np.squeeze(b, split) for b in blocks]
            outs.append(np.stack(blocks, concat))
    return np.stack(outs)


@given(data=st.data())
def test_all_to_all_matches_numpy(data):
    tiled = data.draw(st.booleans(), label="tiled")
    n = data.draw(st.integers(1, 3), label="n")
    shape = list(data.draw(shapes(min_dims=1, max_dims=3, max_side=3), label="shape"))
    rank = len(shape)
    split = data.draw(st.integers(-rank, rank - 1), label="split_axis")
    concat = data.draw(st.integers(-rank, rank - 1), label="concat_axis")
    shape[split % rank] = n * data.draw(st.integers(0, 2), label="block") if tiled else n
    dtype = data.draw(st.sampled_from([F32, I32]), label="dtype")
    x, xs, in_axis = _draw_batch(data, tuple(shape), n, dtype)
    out_axis = _draw_out_axis(data, rank)
    got = _vmap(lambda v: lax.all_to_all(v, "i", split, concat, tiled=tiled), (x,), in_axis,
                out_axis)
    _check(got, _all_to_all_ref(xs, split % rank, concat % rank, tiled), out_axis, dtype)


def test_all_to_all_of_an_unbatched_value():
    y = np.arange(6.0, dtype=np.float32).reshape(3, 2)  # split axis 0 into 3 blocks
    got = mt.vmap(lambda b: lax.all_to_all(b, "i", 0, 1, tiled=True), in_axes=None,
                  axis_name="i", axis_size=3)(y)
    _check(got, _all_to_all_ref(_every(3, y), 0, 1, True), 0)


# ---- ppermute ------------------------------------------------------------------------------
@st.composite
def _perms(draw, n):
    """Pairs (source, destination): a partial permutation of range(n)."""
    k = draw(st.integers(0, n), label="pairs")
    srcs = draw(st.permutations(range(n)), label="sources")[:k]
    dsts = draw(st.permutations(range(n)), label="destinations")[:k]
    return list(zip(srcs, dsts))


def _permuted(xs, perm):
    out = np.zeros_like(xs)
    for src, dst in perm:
        out[dst] = xs[src]
    return out


@given(data=st.data())
def test_ppermute_matches_numpy(data):
    n = data.draw(st.integers(0, 4), label="n")
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    perm = data.draw(_perms(n))
    dtype = data.draw(st.sampled_from([F32, I32, np.dtype(np.bool_)]), label="dtype")
    if dtype == np.bool_:
        xs = data.draw(arrays(dtype, (n, *shape)), label="xs")
        in_axis, x = 0, xs
    else:
        x, xs, in_axis = _draw_batch(data, shape, n, dtype)
    out_axis = _draw_out_axis(data, len(shape))
    got = _vmap(lambda v: lax.ppermute(v, "i", perm), (x,), in_axis, out_axis)
    _check(got, _permuted(xs, perm), out_axis, dtype)


@given(data=st.data())
@settings(max_examples=10)
def test_ppermute_of_an_unbatched_value(data):
    n = data.draw(st.integers(1, 4), label="n")
    perm = data.draw(_perms(n))
    y = np.array([1.5, -2.0], np.float32)
    got = mt.vmap(lambda b: lax.ppermute(b, "i", perm), in_axes=None, axis_name="i",
                  axis_size=n)(y)
    _check(got, _permuted(_every(n, y).copy(), perm), 0)


# ---- nested vmaps with two names -----------------------------------------------------------
def _nested(f, x, inner_axes=0):
    """vmap over 'i' (axis 0 of x) of vmap over 'j' (axis 0 of each example, or None)."""
    inner = mt.vmap(f, in_axes=inner_axes, axis_name="j",
                    axis_size=None if inner_axes is not None else 3)
    return mt.vmap(inner, axis_name="i")(x)


NESTED = {  # name: (f, reference on xs of shape (ni, nj, *s) -> result of the same layout)
    "psum_i": (lambda v: lax.psum(v, "i"), lambda xs: _tile(xs.sum(0, keepdims=True), xs)),
    "psum_j": (lambda v: lax.psum(v, "j"), lambda xs: _tile(xs.sum(1, keepdims=True), xs)),
    "psum_ij": (lambda v: lax.psum(v, ("i", "j")),
                lambda xs: _tile(xs.sum((0, 1), keepdims=True), xs)),
    "pmax_ji": (lambda v: lax.pmax(v, ("j", "i")),
                lambda xs: _tile(xs.max((0, 1), keepdims=True), xs)),
    "pmean_ij": (lambda v: lax.pmean(v, ("i", "j")),
                 lambda xs: _tile(xs.mean((0, 1), keepdims=True), xs)),
    "axis_index_ij": (lambda v: v * 0 + lax.axis_index(("i", "j")).astype(np.float32),
                      lambda xs: _tile(np.arange(xs.shape[0] * xs.shape[1]).reshape(
                          xs.shape[:2] + (1,) * (xs.ndim - 2)), xs)),
    "all_gather_i": (lambda v: lax.all_gather(v, "i"),
                     lambda xs: np.broadcast_to(xs.transpose(1, 0, 2)[None], (
                         xs.shape[0], *xs.shape[1:2], xs.shape[0], xs.shape[2]))),
    "all_gather_ij": (lambda v: lax.all_gather(v, ("i", "j")),
                      lambda xs: np.broadcast_to(xs.reshape(-1, xs.shape[2]), (
                          *xs.shape[:2], xs.shape[0] * xs.shape[1], xs.shape[2]))),
    "ppermute_j": (lambda v: lax.ppermute(v, "j", [(0, 1), (1, 2), (2, 0)]),
                   lambda xs: np.roll(xs, 1, axis=1)),
    "ppermute_i": (lambda v: lax.ppermute(v, "i", [(0, 1)]),
                   lambda xs: np.concatenate([0 * xs[:1], xs[:1]])),
    "psum_scatter_j": (lambda v: lax.psum_scatter(v, "j", scatter_dimension=0, tiled=True),
                       lambda xs: np.stack(np.split(xs.sum(1), 3, axis=1), 1)),
}


def _tile(reduced, xs):
    return np.broadcast_to(reduced, xs.shape)


@pytest.mark.parametrize("name", list(NESTED))
@pytest.mark.parametrize("inner_batched", [True, False])
def test_nested_vmaps_with_two_names(name, inner_batched):
    f, ref = NESTED[name]
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((2, 3, 3)).astype(np.float32)
    if not inner_batched:  # x is batched over 'i' only: the same for every 'j' example
        xs = np.broadcast_to(xs[:, :1], xs.shape).copy()
    got = _nested(f, xs[:, 0] if not inner_batched else xs, 0 if inner_batched else None)
    _check(got, ref(xs), 0)


def test_nested_collective_over_the_outer_name_of_an_inner_only_value():
    """x batched over 'j' only (the 'i' examples share it): psum over 'i' multiplies."""
    y = np.arange(3.0, dtype=np.float32)
    inner = mt.vmap(lambda v: lax.psum(v, "i"), axis_name="j")
    got = mt.vmap(inner, in_axes=None, axis_name="i", axis_size=2)(y)
    _check(got, _every(2, 2 * y), 0)


# ---- derivatives ---------------------------------------------------------------------------
GRAD_FNS = {  # per-example functions of f64[3] using collectives over 'i' (size 4)
    "psum": lambda x: mnp.sin(x) * lax.psum(x * x, "i"),
    "pmean": lambda x: lax.pmean(mnp.tanh(x), "i") * x,
    "pmax": lambda x: lax.pmax(x, "i") * mnp.cos(x),
    "pmin": lambda x: lax.pmin(x * x, ("i",)) + x,
    "all_gather": lambda x: mnp.sum(lax.all_gather(mnp.sin(x), "i") ** 2, 0) * x,
    "all_gather_tiled": lambda x: lax.all_gather(x, "i", axis=0, tiled=True)[2:5] * x,
    "ppermute": lambda x: lax.ppermute(x * x, "i", [(0, 2), (2, 1), (3, 0)]) * mnp.sin(x),
    "all_to_all": lambda x: lax.all_to_all(
        mnp.concatenate([x, x * x, x[:2]]).reshape(4, 2), "i", 0, 1).reshape(-1)[:3] * x,
    "psum_scatter": lambda x: lax.psum_scatter(
        mnp.concatenate([x, x * x, x[:2] ** 3]), "i", tiled=True) * x[:2],
    "axis_index": lambda x: x * x * lax.axis_index("i").astype(x.dtype),
}


def _batch_fn(name):
    return mt.vmap(GRAD_FNS[name], axis_name="i")


def _sample():
    return np.random.default_rng(1).standard_normal((4, 3))


def _numerical_grad(f, x, eps=1e-6):
    """Central differences of the scalar f at x, one coordinate at a time (float64)."""
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        g[idx] = (float(f(mnp.asarray(x + e))) - float(f(mnp.asarray(x - e)))) / (2 * eps)
    return g


@pytest.mark.parametrize("name", list(GRAD_FNS))
def test_jvp_and_vjp_of_vmap(name, x64):
    """grad/jvp of a function that calls vmap(f, axis_name): first and second order."""
    check_grads(_batch_fn(name), (_sample(),), order=2)


@pytest.mark.parametrize("name", list(GRAD_FNS))
def test_vmap_of_grad(name, x64):
    """vmap(grad(f)) gives example k the derivative of the summed per-example results
    with respect to x_k (the examples' losses add up, as for pmap)."""
    f = GRAD_FNS[name]
    x = _sample()
    got = mt.vmap(mt.grad(lambda v: mnp.sum(f(v))), axis_name="i")(x)
    total = _batch_fn(name)
    want = _numerical_grad(lambda v: mnp.sum(total(v)), x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)
    grad_of_vmap = mt.grad(lambda v: mnp.sum(total(v)))(mnp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), np.asarray(grad_of_vmap), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("name", ["psum", "pmax", "all_gather", "ppermute", "all_to_all"])
def test_vmap_of_jvp(name, x64):
    f = GRAD_FNS[name]
    x, t = _sample(), np.random.default_rng(2).standard_normal((4, 3))
    got = mt.vmap(lambda a, b: mt.jvp(f, (a,), (b,))[1], axis_name="i")(x, t)
    total = _batch_fn(name)
    eps = 1e-6
    want = (np.asarray(total(mnp.asarray(x + eps * t)))
            - np.asarray(total(mnp.asarray(x - eps * t)))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_psum_transpose_scales_an_unbatched_cotangent():
    """d/dx_k of sum_j psum(x)_j = n: the transpose of psum is psum, and a cotangent
    shared by the examples is summed n times."""
    got = mt.vmap(mt.grad(lambda v: lax.psum(v, "i")), axis_name="i")(np.ones(5, np.float32))
    _check(got, np.full(5, 5.0, np.float32), 0)


def test_pmax_pmin_ties_share_the_tangent(x64):
    x = np.array([1.0, 3.0, 3.0, 2.0])
    t = np.array([1.0, 2.0, 4.0, 8.0])
    outer = mt.jvp(mt.vmap(lambda v: lax.pmax(v, "i"), axis_name="i"), (x,), (t,))[1]
    _check(outer, np.full(4, 3.0), 0)
    inner = mt.vmap(lambda v, w: mt.jvp(lambda a: lax.pmax(a, "i"), (v,), (w,))[1],
                    axis_name="i")(x, t)
    _check(inner, np.full(4, 3.0), 0)
    low = mt.vmap(lambda v, w: mt.jvp(lambda a: lax.pmin(a, "i"), (v,), (w,))[1],
                  axis_name="i")(np.array([1.0, 3.0, 1.0, 2.0]), t)
    _check(low, np.full(4, 2.5), 0)


def test_grad_in_nested_vmaps_over_both_names(x64):
    def f(v):
        return mnp.sin(v) * lax.psum(v, ("i", "j")) + lax.pmax(v * v, "j")

    def total(x):
        return mt.vmap(mt.vmap(f, axis_name="j"), axis_name="i")(x)

    x = np.random.default_rng(3).standard_normal((2, 3, 2))
    check_grads(total, (x,), order=1)
    got = mt.vmap(mt.vmap(mt.grad(lambda v: mnp.sum(f(v))), axis_name="j"), axis_name="i")(x)
    want = _numerical_grad(lambda v: mnp.sum(total(v)), x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


# ---- make_jaxpr ----------------------------------------------------------------------------
def test_make_jaxpr_of_vmap_lowers_collectives_to_array_ops():
    def f(x):
        return lax.psum(x, "i") + lax.ppermute(x, "i", [(0, 1)]) + lax.axis_index("i")

    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    closed = mt.make_jaxpr(mt.vmap(f, axis_name="i"))(x)
    text = str(closed.jaxpr)
    assert "reduce_sum" in text and "gather" in text and "iota" in text
    assert "psum" not in text and "ppermute" not in text and "axis_index" not in text
    got = mt.eval_jaxpr(closed.jaxpr, closed.consts, mnp.asarray(x))[0]
    want = x.sum(0) + _permuted(x, [(0, 1)]) + np.arange(3.0)[:, None]
    _check(got, want, 0)


def test_make_jaxpr_inside_vmap_stages_the_collectives():
    staged = []

    def f(x):
        closed = mt.make_jaxpr(lambda v: lax.all_gather(lax.psum(v, "i"), "i", axis=1))(x)
        staged.append(str(closed.jaxpr))
        return mt.eval_jaxpr(closed.jaxpr, closed.consts, x)[0]

    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    got = mt.vmap(f, axis_name="i")(x)
    assert "psum[axis_name=('i',)]" in staged[0], staged[0]
    assert "all_gather[" in staged[0] and "axis_size=3" in staged[0], staged[0]
    _check(got, _every(3, np.broadcast_to(x.sum(0)[:, None], (2, 3))), 0)


# ---- errors --------------------------------------------------------------------------------
def _in_vmap(f, n=3, x=None):
    x = np.zeros((n, 4), np.float32) if x is None else x
    return mt.vmap(f, axis_name="i")(x)


def test_unbound_axis_name_is_a_name_error_at_the_users_line():
    with pytest.raises(NameError, match=r"psum: unbound axis name 'k'; the named axes here "
                       r"are \['i'\] .* axis_name='k'\) or pmap\n  at .*test_collectives.py"):
        _in_vmap(lambda v: lax.psum(v, "k"))
    with pytest.raises(NameError, match=r"axis_index: unbound axis name 'i'; the named axes "
                       r"here are \[\]"):
        lax.axis_index("i")
    with pytest.raises(NameError, match=r"pmean: unbound axis name 'j'"):
        _in_vmap(lambda v: lax.pmean(v, ("i", "j")))
    for binder in (lax.all_gather, lax.pmax, lax.pmin, lax.psum_scatter):
        with pytest.raises(NameError, match=f"{binder.__name__}: unbound axis name 'j'"):
            _in_vmap(lambda v, b=binder: b(v, "j"))


def test_bad_parameters_are_reported():
    with pytest.raises(ValueError, match=r"ppermute: perm .* is not a permutation: "
                       r"destination 1 appears more than once"):
        _in_vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (2, 1)]))
    with pytest.raises(ValueError, match=r"ppermute: perm .* source 0 appears more"):
        _in_vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (0, 2)]))
    with pytest.raises(ValueError, match=r"ppermute: the pair \(0, 3\) of perm is out of "
                       r"range for an axis of size 3"):
        _in_vmap(lambda v: lax.ppermute(v, "i", [(0, 3)]))
    with pytest.raises(TypeError, match=r"ppermute: each entry of perm must be a \(source, "):
        _in_vmap(lambda v: lax.ppermute(v, "i", [(0, 1, 2)]))
    with pytest.raises(ValueError, match=r"all_to_all: split_axis 1 of f32\[4,4\] has size "
                       r"4, which is not divisible by the axis size 3.*\n  at .*test_coll"):
        _in_vmap(lambda v: lax.all_to_all(v[None] * v[:, None], "i", 1, 0, tiled=True))
    with pytest.raises(ValueError, match=r"all_to_all: with tiled=False the split axis 0 of "
                       r"f32\[4\] must have the size of axis 'i', 3"):
        _in_vmap(lambda v: lax.all_to_all(v, "i", 0, 0))
    with pytest.raises(ValueError, match=r"all_gather: axis 3 is out of range: it must be "
                       r"in \[-2, 2\)"):
        _in_vmap(lambda v: lax.all_gather(v, "i", axis=3))
    with pytest.raises(ValueError, match=r"psum_scatter: the scatter dimension 0 of f32\[4\] "
                       r"has size 4; it must equal the axis size 3"):
        _in_vmap(lambda v: lax.psum_scatter(v, "i"))
    with pytest.raises(TypeError, match=r"psum needs integer, floating-point or complex operands, "
                       r"got bool\[4\]"):
        _in_vmap(lambda v: lax.psum(v > 0, "i"))
    with pytest.raises(ValueError, match=r"ppermute takes one axis name, got "
                       r"axis_name=\('i', 'i2'\)"):
        mt.vmap(lambda v: _in_vmap(lambda w: lax.ppermute(w, ("i", "i2"), [])),
                axis_name="i2")(np.zeros((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match=r"psum: axis_name \('i', 'i'\) names an axis more"):
        _in_vmap(lambda v: lax.psum(v, ("i", "i")))

