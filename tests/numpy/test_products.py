"""mytorch.numpy products (matmul, dot, tensordot, einsum, ...) vs NumPy."""

import importlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mytorch as mt
from mytorch.core import dtypes
from mytorch.core.array import from_numpy
from mytorch.numpy import products as P
from tests.strategies import arrays, assert_close

# the module (mytorch.numpy.einsum the attribute is the function it defines)
E = importlib.import_module("mytorch.numpy.einsum")
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(t) for t in (np.float32, np.float16, np.int32, np.int8, np.bool_)] + [BF16]


def _draw(data, dtype, shape):
    return data.draw(arrays(dtype, shape, min_value=-4, max_value=4))


def _ref(fn, expected_dtype, *xs):
    """NumPy's result computed in float64 (int64 for ints), cast to the expected dtype."""
    wide = [x.astype(np.float64) if dtypes.is_float(x.dtype) else x.astype(np.int64)
            for x in xs]
    out = fn(*wide)
    if expected_dtype == np.bool_:
        return np.asarray(out) != 0
    with np.errstate(under="ignore"):
        return np.asarray(out).astype(expected_dtype)


def _expected_dtype(*xs):
    d = xs[0].dtype
    for x in xs[1:]:
        d = dtypes.promote_types(d, x.dtype)
    return d


def _prims(closed):
    return [str(e.primitive) for e in closed.jaxpr.eqns]


# ---- matmul -------------------------------------------------------------------------------
def _broadcasting_to(shape):
    """Shapes that broadcast to `shape`: a suffix of it with some dims set to 1."""
    return st.integers(0, len(shape)).flatmap(lambda k: st.tuples(*[
        st.sampled_from([d, 1]) for d in shape[len(shape) - k:]]))


@st.composite
def matmul_shapes(draw):
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    ba, bb = draw(_broadcasting_to(batch)), draw(_broadcasting_to(batch))
    n, k, m = (draw(st.integers(0, 4)) for _ in range(3))
    sa = (k,) if draw(st.integers(0, 4)) == 0 else ba + (n, k)
    sb = (k,) if draw(st.integers(0, 4)) == 0 else bb + (k, m)
    return sa, sb


@settings(max_examples=60)
@given(data=st.data())
def test_matmul_matches_numpy(data):
    sa, sb = data.draw(matmul_shapes())
    da, db = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    a, b = _draw(data, da, sa), _draw(data, db, sb)
    dt = _expected_dtype(a, b)
    assert_close(P.matmul(from_numpy(a), from_numpy(b)), _ref(np.matmul, dt, a, b), dtype=dt)


def test_matmul_traces_to_one_dot_general():
    a = from_numpy(np.ones((2, 1, 3, 4), np.float32))
    b = from_numpy(np.arange(120, dtype=np.float32).reshape(5, 4, 6))
    closed = mt.make_jaxpr(P.matmul)(a, b)
    assert _prims(closed).count("dot_general") == 1
    assert_close(closed(a, b)[0], np.asarray(a) @ np.asarray(b))


def test_matmul_errors():
    f = lambda *s: from_numpy(np.ones(s, np.float32))  # noqa: E731
    msg = r"matmul: contracting dims differ: f32\[2,3\] @ f32\[4,5\] \(3 vs 4\)"
    with pytest.raises(TypeError, match=msg):
        P.matmul(f(2, 3), f(4, 5))
    with pytest.raises(ValueError, match="batch dims .* cannot broadcast"):  # JAX's class
        P.matmul(f(2, 3, 4), f(3, 4, 5))
    with pytest.raises(ValueError, match="at least 1-D"):
        P.matmul(f(), f(3))


# ---- dot, vdot, inner, outer, tensordot, kron, cross, vecdot -------------------------------
@settings(max_examples=40)
@given(data=st.data())
def test_dot_family_matches_numpy(data):
    da, db = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    k = data.draw(st.integers(0, 3))
    sa = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3)).__add__(
        (k,)) if data.draw(st.booleans()) else ()
    lead = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    sb = (lead + (k, data.draw(st.integers(0, 3)))) if data.draw(st.booleans()) else (k,)
    if not sa:
        sb = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3))
    a, b = _draw(data, da, sa), _draw(data, db, sb)
    dt = _expected_dtype(a, b)
    assert_close(P.dot(from_numpy(a), from_numpy(b)), _ref(np.dot, dt, a, b), dtype=dt)
    if a.ndim and b.ndim:
        bi = np.swapaxes(b, -1, -2) if b.ndim > 1 else b
        assert_close(P.inner(from_numpy(a), from_numpy(bi)), _ref(np.inner, dt, a, bi),
                     dtype=dt)
    assert_close(P.outer(from_numpy(a), from_numpy(b)), _ref(np.outer, dt, a, b), dtype=dt)
    c = _draw(data, db, a.shape)
    assert_close(P.vdot(from_numpy(a), from_numpy(c)), _ref(np.vdot, dt, a.ravel(), c.ravel()),
                 dtype=dt)


@settings(max_examples=40)
@given(data=st.data())
def test_tensordot_matches_numpy(data):
    shape_a = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, max_side=3))
    dt = data.draw(st.sampled_from([np.dtype(np.float32), np.dtype(np.int32)]))
    a = _draw(data, dt, shape_a)
    if data.draw(st.booleans()):
        n = data.draw(st.integers(0, a.ndim))
        extra = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
        b = _draw(data, dt, shape_a[a.ndim - n:] + extra)
        axes = n
    else:
        ax_a = data.draw(st.permutations(range(a.ndim)).map(
            lambda p: p[:data.draw(st.integers(0, a.ndim))]))
        perm = data.draw(st.permutations(range(len(ax_a))))
        extra = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
        b_shape = [a.shape[ax_a[i]] for i in perm] + list(extra)
        b = _draw(data, dt, tuple(b_shape))
        ax_b = [perm.index(i) for i in range(len(ax_a))]
        neg = data.draw(st.booleans())
        axes = ([x - a.ndim if neg else x for x in ax_a], ax_b)
    assert_close(P.tensordot(from_numpy(a), from_numpy(b), axes),
                 _ref(lambda x, y: np.tensordot(x, y, axes), dt, a, b), dtype=dt)


def test_kron_cross_vecdot():
    rng = np.random.default_rng(0)
    for sa, sb in [((2, 3), (4, 1)), ((3,), (2, 2)), ((), (3,)), ((2, 0), (1, 3))]:
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.integers(-3, 3, sb).astype(np.int8)
        assert_close(P.kron(from_numpy(a), from_numpy(b)), np.kron(a, b.astype(np.float32)),
                     dtype=np.float32)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal((2, 1, 3)).astype(np.float32)
    assert_close(P.cross(from_numpy(a), from_numpy(b)), np.cross(a, b), rtol=1e-5, atol=1e-5)
    a2 = rng.standard_normal((4, 2)).astype(np.float32)
    z = a2[:, 0] * a2[::-1, 1] - a2[:, 1] * a2[::-1, 0]  # NumPy 2 deprecates 2-vectors
    assert_close(P.cross(from_numpy(a2), from_numpy(a2[::-1])), z, rtol=1e-5, atol=1e-5)
    assert_close(P.cross(from_numpy(a.T), from_numpy(a.T[:, ::-1]), axis=0),
                 np.cross(a.T, a.T[:, ::-1], axis=0), rtol=1e-5, atol=1e-5)
    assert_close(P.vecdot(from_numpy(b), from_numpy(a)), np.vecdot(b, a), rtol=1e-5, atol=1e-5)
    assert_close(P.vecdot(from_numpy(a.T), from_numpy(a.T), axis=0), np.vecdot(a.T, a.T, axis=0),
                 rtol=1e-5, atol=1e-5)


def test_product_errors():
    f = lambda *s: from_numpy(np.ones(s, np.float32))  # noqa: E731
    with pytest.raises(TypeError, match=r"dot: contracting dims differ: f32\[2,3\]"):
        P.dot(f(2, 3), f(2, 3))
    with pytest.raises(TypeError, match="tensordot: contracting dims differ"):
        P.tensordot(f(2, 3), f(2, 3), axes=([1], [0]))
    with pytest.raises(ValueError, match="axes lists must have equal lengths"):
        P.tensordot(f(2, 3), f(3, 2), axes=([1], [0, 1]))
    with pytest.raises(ValueError, match="axes=3"):
        P.tensordot(f(2, 3), f(3, 2), axes=3)
    with pytest.raises(TypeError, match="vdot: operands need equal sizes"):
        P.vdot(f(2), f(3))
    with pytest.raises(TypeError, match="inner: the last dims differ"):
        P.inner(f(2), f(3))
    with pytest.raises(ValueError, match="2 or 3 components"):
        P.cross(f(4), f(4))


def test_products_trace():
    a = from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    fns = [P.matmul, P.dot, lambda a, b: P.tensordot(a, b, 1), P.outer, P.kron,
           lambda a, b: P.inner(a, a), lambda a, b: P.vdot(a, a), lambda a, b: P.vecdot(a, a),
           lambda a, b: P.einsum("ij,jk,kl->il", a, b, P.tensordot(b, a, ([0], [1]))),
           lambda a, b: P.cross(a, a[::-1])]
    for fn in fns:
        closed = mt.make_jaxpr(fn)(a, b)
        assert_close(closed(a, b)[0], fn(a, b))


# ---- einsum -------------------------------------------------------------------------------
@st.composite
def einsum_cases(draw):
    """Random subscripts with 1-4 operands, repeated and summed labels, optional ellipsis and
    implicit or explicit output, with matching NumPy operands."""
    n_ops = draw(st.integers(1, 4))
    labels = "abcdef"[:draw(st.integers(1, 6))]
    sizes = {c: draw(st.integers(0, 3) if draw(st.integers(0, 9)) == 0 else st.integers(1, 3))
             for c in labels}
    terms = ["".join(draw(st.lists(st.sampled_from(labels), max_size=4))) for _ in range(n_ops)]
    ell = draw(st.booleans())
    ell_shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    shapes, subs = [], []
    for t in terms:
        shape = tuple(sizes[c] for c in t)
        if ell:
            own = draw(hnp.broadcastable_shapes(ell_shape, max_dims=len(ell_shape), max_side=3))
            own = tuple(1 if d != e else d for d, e in zip(own, ell_shape[len(ell_shape)
                                                                          - len(own):]))
            at = draw(st.integers(0, len(t)))
            t = t[:at] + "..." + t[at:]
            shape = shape[:at] + own + shape[at:]
        subs.append(t)
        shapes.append(shape)
    used = sorted(set("".join(terms)))
    if draw(st.booleans()):
        out = "".join(draw(st.permutations(used)).__getitem__(slice(
            0, draw(st.integers(0, len(used))))))
        if ell:
            at = draw(st.integers(0, len(out)))
            out = out[:at] + "..." + out[at:]
        text = ",".join(subs) + "->" + out
    else:
        text = ",".join(subs)
    dt = draw(st.sampled_from([np.dtype(np.float32), np.dtype(np.int32)]))
    ops = [draw(arrays(dt, s, min_value=-3, max_value=3)) for s in shapes]
    return text, ops


@settings(max_examples=120)
@given(einsum_cases(), st.sampled_from([True, False, "greedy"]))
def test_einsum_matches_numpy(case, optimize):
    text, ops = case
    wide = [o.astype(np.float64) if o.dtype.kind == "f" else o.astype(np.int64) for o in ops]
    with np.errstate(under="ignore"):
        expected = np.einsum(text, *wide).astype(ops[0].dtype)
    got = P.einsum(text, *[from_numpy(o) for o in ops], optimize=optimize)
    assert_close(got, expected, dtype=ops[0].dtype, rtol=1e-5, atol=1e-4)


def test_einsum_each_pair_is_one_dot_general():
    ops = [from_numpy(np.ones(s, np.float32)) for s in [(2, 3), (3, 4), (4, 5), (5, 2)]]
    closed = mt.make_jaxpr(lambda *o: P.einsum("ij,jk,kl,lm->im", *o))(*ops)
    assert _prims(closed).count("dot_general") == 3
    assert_close(closed(*ops)[0], np.full((2, 2), 60, np.float32))
    # batch dims: labels kept by both operands and in the output
    x = from_numpy(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    closed = mt.make_jaxpr(lambda x: P.einsum("bij,bkj->bik", x, x))(x)
    eqn = next(e for e in closed.jaxpr.eqns if str(e.primitive) == "dot_general")
    assert eqn.params["dimension_numbers"] == (((2,), (2,)), ((0,), (0,)))
    xn = np.asarray(x)
    assert_close(closed(x)[0], np.einsum("bij,bkj->bik", xn, xn))


def test_einsum_forms_and_dtypes():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.int8).reshape(3, 4)
    got = P.einsum(from_numpy(a), [0, 1], from_numpy(b), [1, 2], [0, 2])
    assert_close(got, a @ b.astype(np.float32), dtype=np.float32)
    assert_close(P.einsum("ij,jk", from_numpy(a), from_numpy(b),
                          preferred_element_type=np.float32), a @ b, dtype=np.float32)
    bools = np.array([[True, False], [False, False]])
    assert_close(P.einsum("ij,jk->ik", from_numpy(bools), from_numpy(bools)),
                 np.einsum("ij,jk->ik", bools, bools), dtype=np.bool_)
    assert_close(P.einsum("i i", from_numpy(np.eye(3, dtype=np.float32))), np.float32(3))
    assert_close(P.einsum("i,i", from_numpy(np.ones(1, np.float32)),
                          from_numpy(np.ones(3, np.float32))), np.float32(3))


def test_einsum_errors():
    a = from_numpy(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="operand 0 has rank 2 but subscripts 'i' name 1"):
        P.einsum("i", a)
    with pytest.raises(ValueError, match="name 2 operands but 1 were given"):
        P.einsum("ij,jk", a)
    with pytest.raises(ValueError, match="label 'j' .* has size 3 in one operand but 2"):
        P.einsum("ij,jk", a, a)
    with pytest.raises(ValueError, match="output label 'k'"):
        P.einsum("ij->k", a)
    with pytest.raises(ValueError, match="repeat a label"):
        P.einsum("ij->ii", a)
    with pytest.raises(ValueError, match="has no '...'"):
        P.einsum("...j->j", from_numpy(np.ones((2, 2, 3), np.float32)))
    with pytest.raises(ValueError, match="any character but"):
        P.einsum("i-,j", a, a)


def test_einsum_digit_and_symbol_labels():
    # JAX 0.10 accepts any label character but ",->."; the implicit output sorts by code
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    y = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    a, b = from_numpy(x), from_numpy(y)
    for spec in ("i1,1j->ij", "01,12->02", "a1,1b", "i_,_j", "...1,1k->...k"):
        assert_close(P.einsum(spec, a, b), x @ y, dtype=np.float32)
    assert_close(P.einsum("21", a), x.T, dtype=np.float32)  # JAX: the transpose
    assert_close(P.einsum("1,1->", a[0], a[0]), 5.0, dtype=np.float32)
    assert_close(mt.jit(lambda u, v: P.einsum("i1,1j", u, v))(a, b), x @ y, dtype=np.float32)


def test_einsum_path_beats_left_to_right_on_a_chain():
    shapes = [(40, 50), (50, 3), (3, 60), (60, 2)]
    rng = np.random.default_rng(0)
    ops = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    text = "ij,jk,kl,lm->im"
    path, report = P.einsum_path(text, *ops)
    assert path[0] == "einsum_path" and len(path) == 4
    assert "Complete contraction:  ij,jk,kl,lm->im" in report and "scaling" in report
    spec = E._parse(text, shapes)
    terms = E._reduced_terms(spec.terms, spec.out)
    greedy = E._path_cost(terms, spec.out, spec.sizes, path[1:])[0]
    naive = E._path_cost(terms, spec.out, spec.sizes, E._left_to_right_path(4))[0]
    assert greedy <= naive and greedy < naive / 2
    lr_path, _ = P.einsum_path(text, *ops, optimize=False)
    assert E._path_cost(terms, spec.out, spec.sizes, lr_path[1:])[0] == naive
    args = [from_numpy(o) for o in ops]
    expected = np.einsum(text, *[o.astype(np.float64) for o in ops])
    for optimize in (True, False, path):
        assert_close(P.einsum(text, *args, optimize=optimize), expected, rtol=1e-4, atol=1e-3)


def test_products_x64(x64):
    a = np.arange(6.0).reshape(2, 3) / 7
    b = np.arange(12).reshape(3, 4)
    assert_close(P.matmul(from_numpy(a), from_numpy(b)), a @ b, dtype=np.float64)
    assert_close(P.einsum("ij,jk->ki", from_numpy(b.T), from_numpy(b)),
                 np.einsum("ij,jk->ki", b.T, b), dtype=np.int64)
