"""Derivatives of dot_general (drawn dimension numbers: contracting and batch dims in any
positions, size-0 and scalar results), its transpose rules' dtypes and parameters, and the
mytorch.numpy contractions built on it (matmul with broadcasting, dot, vdot, inner, outer,
tensordot, einsum), against float64 finite differences (tests/autodiff/fd.py)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.ad_util import UndefinedPrimal
from mytorch.core.aval import ShapedArray
from mytorch.lax.dot import dot_general_p
from tests.autodiff.fd import check_grads

seeds = st.integers(0, 2**32 - 1)
# the x64 fixture only sets a flag, which holds for every drawn example
x64_settings = settings(suppress_health_check=[
    *settings.default.suppress_health_check, HealthCheck.function_scoped_fixture])


def _normal(seed, *shapes):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(s) for s in shapes)


@st.composite
def dot_problems(draw, max_side=3):
    """(lhs shape, rhs shape, dimension_numbers) with each kind of dim at drawn positions."""
    nb, nc = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    nfl, nfr = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    side = st.integers(0, max_side) if draw(st.booleans()) else st.integers(1, max_side)
    batch = [draw(side) for _ in range(nb)]
    contract = [draw(side) for _ in range(nc)]
    lhs_pos = draw(st.permutations(range(nb + nc + nfl)))
    rhs_pos = draw(st.permutations(range(nb + nc + nfr)))

    def layout(pos, free):
        shape = [0] * len(pos)
        sizes = batch + contract + [draw(side) for _ in range(free)]
        for p, s in zip(pos, sizes):
            shape[p] = s
        return tuple(shape), tuple(pos[:nb]), tuple(pos[nb:nb + nc])

    lshape, lb, lc = layout(lhs_pos, nfl)
    rshape, rb, rc = layout(rhs_pos, nfr)
    return lshape, rshape, ((lc, rc), (lb, rb))


@x64_settings
@given(dot_problems(), seeds)
def test_dot_general_grads(x64, problem, seed):
    lshape, rshape, dims = problem
    x, y = _normal(seed, lshape, rshape)
    check_grads(lambda a, b: lax.dot_general(a, b, dims), (x, y), order=2)


@x64_settings
@given(dot_problems(), seeds, st.booleans())
def test_dot_general_grads_one_operand(x64, problem, seed, wrt_lhs):
    # only one linear operand: each transpose rule on its own, the other operand a constant
    lshape, rshape, dims = problem
    x, y = _normal(seed, lshape, rshape)
    if wrt_lhs:
        yc = mnp.asarray(y)
        check_grads(lambda a: lax.dot_general(a, yc, dims), (x,), order=2)
    else:
        xc = mnp.asarray(x)
        check_grads(lambda b: lax.dot_general(xc, b, dims), (y,), order=2)


@x64_settings
@given(dot_problems(), seeds)
def test_dot_general_grad_of_grad(x64, problem, seed):
    # reverse over reverse: the transposed products transpose again
    lshape, rshape, dims = problem
    x, y = _normal(seed, lshape, rshape)

    def loss(a, b):
        out = lax.dot_general(a, b, dims)
        return lax.reduce_sum(lax.sin(out), tuple(range(out.ndim)))

    check_grads(mt.grad(loss, argnums=(0, 1)), (x, y), order=1)


def test_dot_general_known_grads(x64):
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4) - 5
    ga, gb = mt.grad(lambda p, q: lax.reduce_sum(lax.dot(p, q), (0, 1)), argnums=(0, 1))(
        mnp.asarray(a), mnp.asarray(b))
    np.testing.assert_array_equal(np.asarray(ga), np.ones((2, 4)) @ b.T)
    np.testing.assert_array_equal(np.asarray(gb), a.T @ np.ones((2, 4)))
    # d/dx (x . y) = y; the second derivative of x . x is 2 I
    x, y = mnp.asarray(np.array([1.0, -2.0, 3.0])), mnp.asarray(np.array([4.0, 5.0, 6.0]))
    np.testing.assert_array_equal(np.asarray(mt.grad(lambda u: lax.dot(u, y))(x)),
                                  [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(np.asarray(mt.hessian(lambda u: lax.dot(u, u))(x)),
                                  2 * np.eye(3))


def test_dot_general_preferred_element_type_and_precision(x64):
    # float32 operands contracted in float64: the cotangents come back as float32, and
    # precision / preferred_element_type pass through to the transposed products
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((2, 4, 5)).astype(np.float32)
    dims = (((2,), (1,)), ((0,), (0,)))

    def f(p, q):
        return lax.dot_general(p, q, dims, precision="highest",
                               preferred_element_type=np.float64)

    out, vjp_fn = mt.vjp(f, mnp.asarray(a), mnp.asarray(b))
    assert out.dtype == np.float64
    ct = rng.standard_normal(out.shape)
    ga, gb = vjp_fn(mnp.asarray(ct))
    assert ga.dtype == np.float32 and gb.dtype == np.float32
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(np.asarray(ga), np.einsum("bik,bjk->bij", ct, b64), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(gb), np.einsum("bij,bik->bjk", a64, ct), rtol=1e-5)
    jaxpr = mt.make_jaxpr(vjp_fn)(mnp.asarray(ct))
    dots = [e for e in jaxpr.jaxpr.eqns if e.primitive is dot_general_p]
    assert len(dots) == 2
    assert all(e.params["precision"] == "highest" for e in dots)
    assert all(e.params["preferred_element_type"] == np.float64 for e in dots)
    # forward mode keeps the output dtype
    _, t = mt.jvp(f, (mnp.asarray(a), mnp.asarray(b)), (mnp.asarray(a), mnp.asarray(b)))
    assert t.dtype == np.float64


def test_dot_general_integer_operand(x64):
    # an integer operand contracted into floats has no tangent; the other one does
    k = mnp.asarray(np.array([[1, 2], [3, -1], [0, 2]], np.int32))
    w = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]])

    def f(q):
        return lax.dot_general(k, q, (((1,), (0,)), ((), ())), preferred_element_type=np.float64)

    check_grads(f, (w,), order=2)
    g = mt.grad(lambda q: lax.reduce_sum(f(q), (0, 1)))(mnp.asarray(w))
    np.testing.assert_array_equal(np.asarray(g), np.asarray(k).T @ np.ones((3, 3)))


def test_dot_general_transpose_needs_one_linear_operand():
    rule = dot_general_p.rule("transpose")
    a = ShapedArray((2, 3), np.dtype(np.float32))
    b = ShapedArray((3, 4), np.dtype(np.float32))
    ct = mnp.ones((2, 4), np.float32)
    with pytest.raises(TypeError, match="linear in each operand separately"):
        rule(ct, UndefinedPrimal(a), UndefinedPrimal(b),
             dimension_numbers=(((1,), (0,)), ((), ())), precision=None,
             preferred_element_type=None)
    assert not dot_general_p.linear


# ---- mytorch.numpy contractions --------------------------------------------------------------
_batch = st.lists(st.integers(1, 3), min_size=0, max_size=2)


@st.composite
def matmul_shapes(draw):
    """Operand shapes of `a @ b`: 1-D operands, and batch dims that broadcast."""
    n, k, m = (draw(st.integers(1, 3)) for _ in range(3))
    batch = draw(_batch)
    ba = tuple(1 if draw(st.booleans()) else s for s in batch)
    bb = tuple(1 if draw(st.booleans()) else s for s in batch)
    ba, bb = ba[draw(st.integers(0, len(ba))):], bb[draw(st.integers(0, len(bb))):]
    a = (k,) if draw(st.booleans()) else ba + (n, k)
    b = (k,) if draw(st.booleans()) else bb + (k, m)
    return a, b


@x64_settings
@given(matmul_shapes(), seeds)
def test_matmul_grads(x64, shapes, seed):
    a, b = _normal(seed, *shapes)
    check_grads(lambda p, q: p @ q, (a, b), order=2)


@pytest.mark.parametrize("name, shapes", [
    ("dot", [(3,), (3,)]), ("dot", [(2, 3), (3,)]), ("dot", [(2, 3), (4, 3, 2)]),
    ("dot", [(), (2, 3)]), ("vdot", [(2, 3), (3, 2)]), ("inner", [(2, 3), (4, 3)]),
    ("inner", [(3,), (3,)]), ("outer", [(2, 2), (3,)]),
])
def test_numpy_products_grads(x64, name, shapes):
    args = _normal(7, *shapes)
    check_grads(getattr(mnp, name), args, order=2)


_TENSORDOT = {1: (4, 2), 2: (3, 4, 2), ((0, 2), (2, 0)): (4, 3, 2), ((-1,), (0,)): (4, 3)}


@x64_settings
@given(seeds, st.sampled_from(list(_TENSORDOT)))
def test_tensordot_grads(x64, seed, axes):
    a, b = _normal(seed, (2, 3, 4), _TENSORDOT[axes])
    check_grads(lambda p, q: mnp.tensordot(p, q, axes), (a, b), order=2)


@pytest.mark.parametrize("spec, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bki", [(2, 2, 3), (2, 3, 2)]),
    ("ij,ij->", [(2, 3), (2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 4)]),
    ("abc,cd,bd->ad", [(2, 3, 2), (2, 3), (3, 3)]),
    ("ii->i", [(3, 3)]),
])
def test_einsum_grads(x64, spec, shapes):
    args = _normal(11, *shapes)
    check_grads(lambda *xs: mnp.einsum(spec, *xs), args, order=2)
