"""vmap of the products (matmul, dot, vdot, inner, outer, vecdot, tensordot, kron, cross,
einsum) and of mytorch.numpy.linalg against the loop definition, with each operand
batched (at any axis) or not."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mytorch.numpy as mnp
from tests.batching.numpy_vmap_util import Op, vmap_case
from tests.numpy.test_linalg import MATRIX_ORDS, VECTOR_ORDS
from tests.numpy.test_products import einsum_cases, matmul_shapes
from tests.strategies import shapes

_DT = st.sampled_from([np.float32, np.int32, np.int8])
_SMALL = {"min_value": -3, "max_value": 3}
_TOL = {"rtol": 1e-5, "atol": 1e-4}


def _ops(data, *shapes_):
    return [Op(s, data.draw(_DT, label="dtype"), **_SMALL) for s in shapes_]


@settings(max_examples=15)
@given(data=st.data())
def test_matmul(data):
    sa, sb = data.draw(matmul_shapes(), label="shapes")
    ops = _ops(data, sa, sb)
    vmap_case(data, mnp.matmul, ops, **_TOL)
    vmap_case(data, lambda a, b: mnp.asarray(a) @ b, ops, **_TOL)
    vmap_case(data, mnp.linalg.matmul, ops, **_TOL)


@settings(max_examples=15)
@given(data=st.data())
def test_dot_inner_outer_vdot(data):
    k = data.draw(st.integers(0, 3), label="k")
    sa = data.draw(st.sampled_from([(), (k,), (2, k), (1, 2, k)]), label="sa")
    sb = data.draw(st.sampled_from([(), (k,), (k, 3), (2, k, 2)]), label="sb")
    ops = _ops(data, sa, sb)
    vmap_case(data, mnp.dot, ops, **_TOL)
    vmap_case(data, lambda a, b: mnp.asarray(a).dot(b), ops, **_TOL)
    vmap_case(data, mnp.outer, ops, **_TOL)
    if sa and sb:
        vmap_case(data, lambda a, b: mnp.inner(a, mnp.swapaxes(b, -1, -2) if len(sb) > 1
                                               else b), ops, **_TOL)
    vmap_case(data, mnp.vdot, _ops(data, sa, sa), **_TOL)
    vmap_case(data, mnp.linalg.outer, _ops(data, (k,), (2,)), **_TOL)


@settings(max_examples=15)
@given(data=st.data())
def test_vecdot(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=3), label="shape")
    other = tuple(1 if data.draw(st.booleans()) else d for d in shape)
    ax = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    other = tuple(shape[i] if i == ax % len(shape) else d for i, d in enumerate(other))
    ops = _ops(data, shape, other)
    vmap_case(data, lambda a, b: mnp.vecdot(a, b, axis=ax), ops, **_TOL)
    vmap_case(data, lambda a, b: mnp.linalg.vecdot(a, b, axis=ax), ops, **_TOL)


@settings(max_examples=20)
@given(data=st.data())
def test_tensordot(data):
    shape_a = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3), label="sa")
    extra = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), label="extra")
    if data.draw(st.booleans()):
        n = data.draw(st.integers(0, len(shape_a)), label="n")
        shape_b, axes = shape_a[len(shape_a) - n:] + extra, n
    else:
        ax_a = data.draw(st.permutations(range(len(shape_a))), label="ax_a")
        ax_a = ax_a[:data.draw(st.integers(0, len(shape_a)))]
        perm = data.draw(st.permutations(range(len(ax_a))), label="perm")
        shape_b = tuple(shape_a[ax_a[i]] for i in perm) + extra
        ax_b = [perm.index(i) for i in range(len(ax_a))]
        axes = ([a - len(shape_a) for a in ax_a], ax_b)
    ops = _ops(data, shape_a, shape_b)
    vmap_case(data, lambda a, b: mnp.tensordot(a, b, axes), ops, **_TOL)
    if isinstance(axes, int):
        vmap_case(data, lambda a, b: mnp.linalg.tensordot(a, b, axes=axes), ops, **_TOL)


@settings(max_examples=10)
@given(data=st.data())
def test_kron_cross(data):
    sa = data.draw(shapes(max_dims=2, max_side=3), label="sa")
    sb = data.draw(shapes(max_dims=3, max_side=2), label="sb")
    vmap_case(data, mnp.kron, _ops(data, sa, sb), **_TOL)
    lead = data.draw(shapes(max_dims=2, max_side=3), label="lead")
    na, nb = data.draw(st.sampled_from([2, 3])), data.draw(st.sampled_from([2, 3]))
    pa = data.draw(st.integers(0, len(lead)), label="axisa")
    pb = data.draw(st.integers(0, len(lead)), label="axisb")
    ops = _ops(data, lead[:pa] + (na,) + lead[pa:], lead[:pb] + (nb,) + lead[pb:])
    axisc = -1 if na == nb == 2 else data.draw(st.integers(-len(lead) - 1, len(lead)))
    vmap_case(data, lambda a, b: mnp.cross(a, b, axisa=pa, axisb=pb - len(lead) - 1,
                                           axisc=axisc), ops, **_TOL)
    ops3 = _ops(data, lead + (3,), lead + (3,))
    vmap_case(data, lambda a, b: mnp.linalg.cross(a, b), ops3, **_TOL)


@pytest.mark.parametrize("optimize", [True, False])
@settings(max_examples=15)
@given(data=st.data())
def test_einsum(optimize, data):
    text, arrs = data.draw(einsum_cases(), label="case")
    ops = [Op(a.shape, a.dtype, **_SMALL) for a in arrs]
    vmap_case(data, lambda *xs: mnp.einsum(text, *xs, optimize=optimize), ops, rtol=1e-5,
              atol=1e-3)


@settings(max_examples=8)
@given(data=st.data())
def test_einsum_interleaved_and_path(data):
    n, k, m = (data.draw(st.integers(0, 3)) for _ in range(3))
    ops = _ops(data, (n, k), (k, m), (m,))

    def f(a, b, c):
        path, _ = mnp.einsum_path("ij,jk,k->i", a, b, c, optimize="greedy")
        return (mnp.einsum(a, [0, 1], b, [1, 2], [0, 2]),
                mnp.einsum("ij,jk,k->i", a, b, c, optimize=path))

    vmap_case(data, f, ops, **_TOL)


_NORM_DT = st.sampled_from([np.float32, np.int32, np.float16])


@settings(max_examples=20)
@given(data=st.data())
def test_vector_norms(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4), label="shape")
    ord_ = data.draw(st.sampled_from(VECTOR_ORDS), label="ord")
    ax = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    if ord_ in (np.inf, -np.inf) and shape[ax] == 0:
        return  # an error per example, as the eager tests check
    x = [Op(shape, data.draw(_NORM_DT), min_value=-10, max_value=10)]
    vmap_case(data, lambda a: mnp.linalg.norm(a, ord_, ax, keepdims), x, rtol=2e-3,
              atol=1e-3)
    vmap_case(data, lambda a: mnp.linalg.vector_norm(a, axis=ax, keepdims=keepdims,
                                                     ord=2 if ord_ is None else ord_),
              x, rtol=2e-3, atol=1e-3)
    vmap_case(data, lambda a: mnp.linalg.norm(a), x, rtol=2e-3, atol=1e-3)


@settings(max_examples=20)
@given(data=st.data())
def test_matrix_norms(data):
    shape = data.draw(shapes(min_dims=2, max_dims=3, min_side=1, max_side=4), label="shape")
    ord_ = data.draw(st.sampled_from(MATRIX_ORDS), label="ord")
    axes = tuple(data.draw(st.permutations(range(len(shape))), label="axes")[:2])
    axes = tuple(a - len(shape) if data.draw(st.booleans()) else a for a in axes)
    keepdims = data.draw(st.booleans(), label="keepdims")
    x = [Op(shape, data.draw(_NORM_DT), min_value=-10, max_value=10)]
    vmap_case(data, lambda a: mnp.linalg.norm(a, ord_, axes, keepdims), x, rtol=2e-3,
              atol=1e-3)
    vmap_case(data, lambda a: mnp.linalg.matrix_norm(a, keepdims=keepdims,
                                                     ord="fro" if ord_ is None else ord_),
              x, rtol=2e-3, atol=1e-3)
