"""Every collective under pmap: against its NumPy definition and against vmap(axis_name=),
and under grad, jvp and vmap."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# (name, fn of the per-device value, NumPy definition of the result from the global x)
def _pshuffle_ref(x):
    n = x.shape[0]
    perm = [(i + 1) % n for i in range(n)]
    return x[perm]


def _ppermute_ref(x):
    out = np.zeros_like(x)
    out[1:] = x[:-1]
    return out


def _all_to_all_ref(x):  # x: (n, n, 3): device i gets [x[j, i] for j]
    return np.swapaxes(x, 0, 1)


def _psum_scatter_ref(x):  # x: (n, n, 3): device i gets sum_j x[j, i]
    return np.broadcast_to(x.sum(0), x.shape[1:])


CASES = [
    ("psum", lambda x: lax.psum(x, "i"), lambda x: np.broadcast_to(x.sum(0), x.shape)),
    ("pmax", lambda x: lax.pmax(x, "i"), lambda x: np.broadcast_to(x.max(0), x.shape)),
    ("pmin", lambda x: lax.pmin(x, "i"), lambda x: np.broadcast_to(x.min(0), x.shape)),
    ("pmean", lambda x: lax.pmean(x, "i"), lambda x: np.broadcast_to(x.mean(0), x.shape)),
    ("all_gather", lambda x: lax.all_gather(x, "i"),
     lambda x: np.broadcast_to(x, (x.shape[0], *x.shape))),
    ("all_gather_axis1", lambda x: lax.all_gather(x, "i", axis=1),
     lambda x: np.broadcast_to(np.moveaxis(x, 0, 1), (x.shape[0], *np.moveaxis(x, 0, 1).shape))),
    ("all_gather_tiled", lambda x: lax.all_gather(x, "i", tiled=True),
     lambda x: np.broadcast_to(x.reshape(-1, *x.shape[2:]),
                               (x.shape[0], x.shape[0] * x.shape[1], *x.shape[2:]))),
    ("psum_scatter", lambda x: lax.psum_scatter(x, "i"), None),
    ("psum_scatter_tiled", lambda x: lax.psum_scatter(x, "i", tiled=True), None),
    ("all_to_all", lambda x: lax.all_to_all(x, "i", 0, 0), None),
    ("all_to_all_split0_concat1", lambda x: lax.all_to_all(x, "i", 0, 1), None),
    ("ppermute", lambda x: lax.ppermute(x, "i", [(j, j + 1) for j in range(x_n() - 1)]),
     None),
    ("pshuffle", lambda x: lax.pshuffle(x, "i", [(j + 1) % x_n() for j in range(x_n())]),
     None),
    ("axis_index", lambda x: x * lax.axis_index("i"),
     lambda x: x * np.arange(x.shape[0]).reshape(-1, *[1] * (x.ndim - 1))),
    ("axis_size", lambda x: x * lax.axis_size("i"), lambda x: x * x.shape[0]),
]
_N = [4]


def x_n():
    return _N[0]


def _input(name, n):
    # the collectives that split an axis among the devices need it of size n
    if name.startswith(("psum_scatter", "all_to_all")):
        return rand(n, n, 3)
    return rand(n, 2, 3)


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("name,fn,ref", CASES, ids=[c[0] for c in CASES])
def test_collective_matches_vmap_and_numpy(name, fn, ref, n):
    _N[0] = n
    x = _input(name, n)
    got = mt.pmap(fn, axis_name="i")(x)
    assert isinstance(got, mt.Array) and got.shape[0] == n
    want = mt.vmap(fn, axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    refs = {"ppermute": _ppermute_ref, "pshuffle": _pshuffle_ref,
            "all_to_all": _all_to_all_ref, "psum_scatter": _psum_scatter_ref}
    ref = ref or refs.get(name)
    if ref is not None:
        np.testing.assert_allclose(np.asarray(got), ref(x), rtol=1e-5, atol=1e-6)


DIFFERENTIABLE = [c for c in CASES if c[0] != "axis_size"]


@pytest.mark.parametrize("name,fn,ref", DIFFERENTIABLE, ids=[c[0] for c in DIFFERENTIABLE])
def test_collective_grad_jvp_vmap_match_vmap(name, fn, ref):
    _N[0] = n = 4
    x = _input(name, n)
    w = rand(*mt.eval_shape(mt.vmap(fn, axis_name="i"), x).shape)
    pf, vf = mt.pmap(fn, axis_name="i"), mt.vmap(fn, axis_name="i")

    def loss(f):
        return lambda x: mnp.sum(mnp.tanh(f(x)) * w)

    np.testing.assert_allclose(mt.grad(loss(pf))(x), mt.grad(loss(vf))(x), rtol=1e-4,
                               atol=1e-5)
    t = rand(*x.shape)
    (p1, t1), (p2, t2) = mt.jvp(pf, (x,), (t,)), mt.jvp(vf, (x,), (t,))
    np.testing.assert_allclose(np.asarray(p1), np.asarray(p2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(t1), np.asarray(t2), rtol=1e-4, atol=1e-5)
    xb = np.stack([x, 2 * x, -x])
    np.testing.assert_allclose(np.asarray(mt.vmap(pf)(xb)), np.asarray(mt.vmap(vf)(xb)),
                               rtol=1e-5, atol=1e-6)
    # pmap inside grad inside pmap (grad of each replica's own loss)
    g_p = mt.pmap(mt.grad(lambda v: mnp.sum(mnp.tanh(fn(v)))), axis_name="i")(x)
    g_v = mt.vmap(mt.grad(lambda v: mnp.sum(mnp.tanh(fn(v)))), axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(g_p), np.asarray(g_v), rtol=1e-4, atol=1e-5)


def test_multi_axis_psum_with_vmap_inside():
    x = rand(4, 3, 5)

    def f(v):  # v: (3, 5) on each device
        return mt.vmap(lambda r: lax.psum(r, ("i", "j")) + lax.axis_index(("i", "j")),
                       axis_name="j")(v)

    got = mt.pmap(f, axis_name="i")(x)
    want = x.sum((0, 1)) + np.arange(12).reshape(4, 3, 1)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got), mt.vmap(f, axis_name="i")(x), rtol=1e-5)


def test_vmap_outside_with_its_own_axis_name():
    x = rand(3, 4, 2)  # vmap over 3, pmap over 4

    def f(v):
        return lax.psum(v, "i") * lax.psum(v, "k")

    got = mt.vmap(mt.pmap(f, axis_name="i"), axis_name="k")(x)
    want = mt.vmap(mt.vmap(f, axis_name="i"), axis_name="k")(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)


@settings(max_examples=15, deadline=None)
@given(n=st.sampled_from([1, 2, 4, 8]), rest=st.lists(st.integers(1, 3), max_size=2),
       axis=st.integers(0, 2), tiled=st.booleans())
def test_all_gather_shapes_and_axes(n, rest, axis, tiled):
    x = rand(n, 2, *rest)
    axis = axis % (x.ndim - (1 if tiled else 0))
    fn = lambda v: lax.all_gather(v, "i", axis=axis, tiled=tiled)  # noqa: E731
    np.testing.assert_array_equal(np.asarray(mt.pmap(fn, "i")(x)),
                                  np.asarray(mt.vmap(fn, axis_name="i")(x)))


@pytest.mark.parametrize("n", [2, 4])
def test_psum_scatter_to_a_scalar_per_device(n):
    """A non-tiled psum_scatter of an (n,) operand leaves one 0-d value per device."""
    x = rand(n, n)
    got = mt.pmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(got), x.sum(axis=0), rtol=1e-5)
