"""Compositions of vmap with differentiation and with itself, over mytorch.numpy and
mytorch.scipy.special functions: `vmap(grad(f))` against the loop of `grad(f)` (it
batches the primitives that the JVP and transpose rules emit), `grad` of a summed
`vmap(f)` against the stacked per-example gradients, `vmap(jvp)`, and nested `vmap`."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.scipy import special
from tests.batching.numpy_vmap_util import Op, draw_n, draw_values, vmap_case
from tests.batching.vmap_check import assert_tree_close, check_vmap

_TOL = {"rtol": 1e-4, "atol": 1e-5}
_IDX = np.array([[2, 0], [1, 1]], np.int32)


def _q(x):
    """A float32 weight that varies per position (so gradients are not all equal)."""
    return mnp.arange(x.size, dtype=mnp.float32).reshape(x.shape) * 0.1 + 1.0


# name, f (returns a float scalar), per-example operands: (shape, dtype) with floats first;
# the gradient is taken with respect to every float operand
CASES = [
    ("elementwise", lambda x: mnp.sum(mnp.sin(x) * mnp.exp(x / 4) + x ** 3), [(3, 4)]),
    ("tanh_where", lambda x: mnp.sum(mnp.where(x > 0, mnp.tanh(x), x * x)), [(3, 4)]),
    ("clip_abs", lambda x: mnp.sum(mnp.clip(x, -0.5, 0.7) * mnp.abs(x) * _q(x)), [(5,)]),
    ("norm", lambda x: mnp.linalg.norm(x), [(3, 4)]),
    ("matrix_norm", lambda x: mnp.linalg.norm(x, ord=1, axis=(0, 1)), [(3, 4)]),
    ("var_std", lambda x: mnp.var(x, axis=0).sum() + mnp.std(x), [(3, 4)]),
    ("max_min", lambda x: mnp.max(x, axis=1).sum() - mnp.min(x), [(3, 4)]),
    ("prod_cumsum", lambda x: mnp.prod(x, axis=0).sum() + (mnp.cumsum(x, 1) * _q(x)).sum(),
     [(3, 4)]),
    ("cumprod", lambda x: (mnp.cumprod(x, axis=-1) * _q(x)).sum(), [(2, 4)]),
    ("logsumexp", lambda x: special.logsumexp(x, axis=-1).sum(), [(3, 4)]),
    ("softmax", lambda x: (special.softmax(x, axis=0) * _q(x)).sum(), [(3, 4)]),
    ("log_softmax", lambda x: (special.log_softmax(x, axis=-1) * _q(x)).sum(), [(3, 4)]),
    ("special", lambda x: mnp.sum(special.erf(x) + special.expit(x) + special.gammaln(
        x * x + 1) + special.log_ndtr(x)), [(4,)]),
    ("matmul", lambda a, b: mnp.sum((a @ b) ** 2), [(3, 4), (4, 2)]),
    ("einsum", lambda a, b: mnp.einsum("ij,jk,ik->", a, b, a @ b), [(3, 4), (4, 3)]),
    ("tensordot_outer", lambda a, b: mnp.tensordot(a, b, 1).sum() + mnp.outer(a, b).max(),
     [(3, 4), (4,)]),
    ("kron_cross", lambda a, b: mnp.kron(a, b).sum() + mnp.cross(a, b).sum() ** 2,
     [(3,), (3,)]),
    ("sort", lambda x: (mnp.sort(x, axis=-1) * _q(x)).sum(), [(3, 4)]),
    ("median_quantile", lambda x: mnp.median(x, axis=0).sum() + mnp.quantile(x, 0.3),
     [(3, 4)]),
    ("take_getitem", lambda x, i: mnp.sum(x[i] * 2) + mnp.sum(mnp.take(x, i, axis=1) ** 2),
     [(3, 4), ((2, 2), np.int32)]),
    ("take_along", lambda x, i: mnp.sum(mnp.take_along_axis(x, i, axis=0) ** 2),
     [(3, 2), ((2, 2), np.int32)]),
    ("at_updates", lambda x, v: mnp.sum(x.at[_IDX].add(v) ** 2 + x.at[1:, 0].set(v[0, 0])
                                        * x.at[0].multiply(3.0)), [(3, 2), (2, 2, 2)]),
    ("dynamic_index", lambda x, i: mnp.sum(x[i[0, 0]] ** 2) + x[1:, None, ::2].sum(),
     [(3, 4), ((2, 2), np.int32)]),
    ("structure", lambda x: mnp.sum(mnp.pad(x, 1, mode="reflect") * _q(mnp.ones((5, 6))))
     + mnp.sum(mnp.tile(x, 2)[:, :4] ** 2) + mnp.trace(x)
     + mnp.roll(mnp.flip(x, 0), 1).T[0, 1] + mnp.concatenate([x, x * 2], 1).max(),
     [(3, 4)]),
    ("split_stack", lambda x: mnp.stack(mnp.split(x, 2, axis=1), -1).prod()
     + mnp.repeat(x, 2, axis=0).var(), [(3, 4)]),
    ("diff_average", lambda x, w: mnp.diff(x, 2).sum() ** 2 + mnp.average(x, 1, w).sum(),
     [(3, 4), (4,)]),
]
_IDS = [c[0] for c in CASES]


def _ops(shapes):
    """Op list: floats in [-2, 2]; int operands are indices into the leading axes."""
    ops = []
    for s in shapes:
        if isinstance(s[-1], type):
            ops.append(Op(s[0], s[1], min_value=-3, max_value=2))
        else:
            ops.append(Op(s, min_value=-2, max_value=2))
    return ops


def _argnums(ops):
    return tuple(k for k, op in enumerate(ops) if op.dtype.kind == "f")


@pytest.mark.parametrize("name, f, shapes", CASES, ids=_IDS)
@settings(max_examples=3)
@given(data=st.data())
def test_vmap_of_grad(name, f, shapes, data):
    ops = _ops(shapes)
    vmap_case(data, mt.grad(f, argnums=_argnums(ops)), ops, min_n=1, **_TOL)


@pytest.mark.parametrize("name, f, shapes", CASES[1::2], ids=_IDS[1::2])
@settings(max_examples=2)
@given(data=st.data())
def test_grad_of_summed_vmap(name, f, shapes, data):
    """d/dxs sum_i f(xs[i], rest) = stacked grad f(xs[i], rest): examples are independent."""
    ops = _ops(shapes)
    n = draw_n(data, 1)
    xs = draw_values(data, np.float32, (n,) + ops[0].shape, min_value=-2, max_value=2)
    rest = [mnp.asarray(draw_values(data, op.dtype, op.shape, **op.kw)) for op in ops[1:]]
    in_axes = (0,) + (None,) * len(rest)

    def total(x):
        return mnp.sum(mt.vmap(f, in_axes=in_axes)(x, *rest))

    got = mt.grad(total)(mnp.asarray(xs))
    want = np.stack([np.asarray(mt.grad(f)(mnp.asarray(x), *rest)) for x in xs])
    assert_tree_close(got, want, **_TOL)


@pytest.mark.parametrize("name, f, shapes", CASES[::3], ids=_IDS[::3])
@settings(max_examples=3)
@given(data=st.data())
def test_vmap_of_jvp(name, f, shapes, data):
    ops = _ops(shapes)
    nums = _argnums(ops)

    def jvp_all(*args):
        primals = list(args[:len(ops)])
        tangents = args[len(ops):]

        def g(*fl):
            full = list(primals)
            for k, v in zip(nums, fl, strict=True):
                full[k] = v
            return f(*full)

        return mt.jvp(g, tuple(primals[k] for k in nums), tuple(tangents))

    vmap_case(data, jvp_all, ops + [ops[k] for k in nums], min_n=1, **_TOL)


@settings(max_examples=10)
@given(data=st.data())
def test_nested_vmap(data):
    """vmap(vmap(f)) with drawn in_axes at both levels against the loop of vmap(f)."""
    n, m = draw_n(data), draw_n(data, 1)
    inner_axes = data.draw(st.sampled_from([(0, None), (1, 0), (-1, None), (0, 0)]))
    _name, f, shapes = data.draw(st.sampled_from(
        [c for c in CASES if len(c[2]) == 2 and c[2][1][-1] is not np.int32]), label="case")
    ops = _ops(shapes)

    def inner_shape(op, ax):
        if ax is None:
            return op.shape
        pos = ax % (len(op.shape) + 1)
        return op.shape[:pos] + (m,) + op.shape[pos:]

    inner = mt.vmap(f, in_axes=inner_axes)
    outer_ops = [Op(inner_shape(op, ax), op.dtype, **op.kw)
                 for op, ax in zip(ops, inner_axes, strict=True)]
    vmap_case(data, inner, outer_ops, n=n, **_TOL)
    vmap_case(data, mt.vmap(mt.grad(f, argnums=(0, 1)), in_axes=inner_axes), outer_ops,
              n=n, **_TOL)


@settings(max_examples=6)
@given(data=st.data())
def test_nested_vmap_out_axes_and_keyword_arguments(data):
    """Keyword arguments are mapped over axis 0; out_axes at both levels."""
    n, m = draw_n(data, 1), draw_n(data, 1)
    out_in = data.draw(st.sampled_from([0, -1]), label="inner out_axes")
    out_out = data.draw(st.sampled_from([0, 1, -1]), label="outer out_axes")

    def f(x, *, w):
        return mnp.average(x, axis=-1, weights=w), special.softmax(x * w, axis=-1)

    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.uniform(-2, 2, (n, m, 4)).astype(np.float32)
    w = rng.uniform(0.5, 2, (n, m, 4)).astype(np.float32)
    inner = mt.vmap(f, out_axes=out_in)
    got = mt.vmap(inner, out_axes=out_out)(x, w=w)
    per = [[f(mnp.asarray(x[i, j]), w=mnp.asarray(w[i, j])) for j in range(m)]
           for i in range(n)]
    for k in range(2):
        rows = [np.stack([np.asarray(p[k]) for p in row], axis=out_in) for row in per]
        assert_tree_close(got[k], np.stack(rows, axis=out_out), **_TOL)
    check_vmap(lambda x, w: inner(x, w=w), (x, w), out_axes=out_out, **_TOL)


@settings(max_examples=10)
@given(data=st.data())
def test_nested_vmap_of_indexing(data):
    """Gathers and scatters whose operand and indices are batched at two levels (two
    batching dimension pairs), and the gradient of a gather (a scatter-add)."""
    n, m = draw_n(data), draw_n(data, 1)
    ax_x, ax_i = data.draw(st.sampled_from([(0, 0), (1, 0), (0, None), (None, 1)]))

    def f(x, i):
        x = mnp.asarray(x)
        return (x[i], mnp.take_along_axis(x, mnp.tile(i[:, None] % 3, (2, 1)), 1),
                x.at[i].add(1.0),
                mt.grad(lambda x: mnp.sum(x[i] ** 2))(x))

    def level_shape(shape, ax):
        return shape if ax is None else shape[:ax] + (m,) + shape[ax:]

    inner = mt.vmap(f, in_axes=(ax_x, ax_i))
    ops = [Op(level_shape((4, 3), ax_x), min_value=-2, max_value=2),
           Op(level_shape((2,), ax_i), np.int32, min_value=-5, max_value=5)]
    vmap_case(data, inner, ops, n=n, **_TOL)
