"""mytorch.numpy.linalg vs numpy.linalg: norms and the array-API helpers."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
from mytorch.core import dtypes
from mytorch.core.array import from_numpy
from mytorch.numpy import linalg as LA
from tests.strategies import arrays, assert_close, shapes

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16]
DTYPES = FLOATS + [np.dtype(np.int32), np.dtype(np.int8), np.dtype(np.bool_)]
INF = np.inf
VECTOR_ORDS = [None, 2, 1, INF, -INF, 0, 3, 0.5, -1, -2.5]
MATRIX_ORDS = [None, "fro", 1, -1, INF, -INF]


def _out_dtype(x):
    return x.dtype if dtypes.is_float(x.dtype) else dtypes.default_float()


def _reference(x, ord, axis, keepdims):
    with np.errstate(all="ignore"):
        return np.linalg.norm(x.astype(np.float64), ord=ord, axis=axis, keepdims=keepdims)


def _check(x, ord, axis, keepdims, fn=None):
    dt = _out_dtype(x)
    got = (fn or (lambda a: LA.norm(a, ord, axis, keepdims)))(from_numpy(x))
    expected = _reference(x, ord, axis, keepdims)
    tol = dict(rtol=2e-5, atol=1e-5) if dt == np.float32 else {}
    assert_close(got, np.asarray(expected).astype(dt), dtype=dt, **tol)


def _nonempty_for(ord, x, axes):
    """min based norms need non-empty reduced axes (as NumPy); max based ones over an empty
    axis are 0 (as JAX: a max of values >= 0 starts at 0), where NumPy raises."""
    return ord not in (INF, -INF, 1, -1) or all(x.shape[a] for a in axes)


def _empty_max_is_zero(x, ord, axes, keepdims, norm):
    got = np.asarray(norm(from_numpy(x), ord, axes, keepdims))
    # the same reduction with a sum (0 over the empty axis) gives the shape
    want = np.sum(np.abs(x), axis=axes, keepdims=keepdims)
    assert got.shape == want.shape and not got.any()


@settings(max_examples=60)
@given(data=st.data())
def test_vector_norms_match_numpy(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4))
    x = data.draw(arrays(st.sampled_from(DTYPES), shape, min_value=-10, max_value=10))
    ord = data.draw(st.sampled_from(VECTOR_ORDS))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    keepdims = data.draw(st.booleans())
    if ord == INF and x.shape[axis] == 0:
        _empty_max_is_zero(x, ord, axis, keepdims, LA.norm)
        return
    if ord == -INF and x.shape[axis] == 0:
        with pytest.raises(ValueError, match="non-empty"):
            LA.norm(from_numpy(x), ord, axis, keepdims)
        return
    _check(x, ord, axis, keepdims)
    _check(x, ord, axis, keepdims,
           lambda a: LA.vector_norm(a, axis=axis, keepdims=keepdims, ord=2 if ord is None
                                    else ord))


@settings(max_examples=60)
@given(data=st.data())
def test_matrix_norms_match_numpy(data):
    shape = data.draw(shapes(min_dims=2, max_dims=4, max_side=4))
    x = data.draw(arrays(st.sampled_from(DTYPES), shape, min_value=-10, max_value=10))
    ord = data.draw(st.sampled_from(MATRIX_ORDS))
    axes = data.draw(st.permutations(range(x.ndim)))[:2]
    axes = tuple(a - x.ndim if data.draw(st.booleans()) else a for a in axes)
    keepdims = data.draw(st.booleans())
    if ord in (1, INF, 2, "nuc") and any(x.shape[a] == 0 for a in axes):
        _empty_max_is_zero(x, ord, axes, keepdims, LA.norm)
        return
    if not _nonempty_for(ord, x, [axes[1] if ord in (1, -1) else axes[0]]):
        with pytest.raises(ValueError, match="non-empty"):
            LA.norm(from_numpy(x), ord, axes, keepdims)
        return
    _check(x, ord, axes, keepdims)
    last = (x.ndim - 2, x.ndim - 1)
    if _nonempty_for(ord, x, last):
        _check(x, ord, last, keepdims,
               lambda a: LA.matrix_norm(a, keepdims=keepdims, ord="fro" if ord is None
                                        else ord))


@settings(max_examples=30)
@given(data=st.data())
def test_norm_axis_none(data):
    shape = data.draw(shapes(min_dims=0, max_dims=3, max_side=4))
    x = data.draw(arrays(st.sampled_from(DTYPES), shape, min_value=-10, max_value=10))
    keepdims = data.draw(st.booleans())
    _check(x, None, None, keepdims)
    _check(x, None, None, keepdims, lambda a: LA.vector_norm(a, keepdims=keepdims))
    if x.ndim in (1, 2):
        ords = VECTOR_ORDS if x.ndim == 1 else MATRIX_ORDS
        ord = data.draw(st.sampled_from(ords))
        if _nonempty_for(ord, x, range(x.ndim)):
            _check(x, ord, None, keepdims)
    if x.ndim >= 2:  # vector norms over several axes at once
        axes = (0, x.ndim - 1)
        got = LA.vector_norm(from_numpy(x), axis=axes, keepdims=keepdims)
        wide = x.astype(np.float64)
        expected = np.sqrt(np.sum(wide * wide, axis=axes, keepdims=keepdims))
        tol = dict(rtol=2e-5, atol=1e-5) if _out_dtype(x) == np.float32 else {}
        assert_close(got, expected.astype(_out_dtype(x)), dtype=_out_dtype(x), **tol)


def test_norm_x64(x64):
    x = np.array([[3.0, -4.0], [1e-200, 12.0]])
    assert_close(LA.norm(from_numpy(x)), np.linalg.norm(x), dtype=np.float64)
    assert_close(LA.norm(from_numpy(x), 1), np.linalg.norm(x, 1), dtype=np.float64)
    assert_close(LA.norm(from_numpy(np.arange(5)), 3), np.linalg.norm(np.arange(5), 3),
                 dtype=np.float64)


def test_norm_errors():
    x = from_numpy(np.ones((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match="invalid norm order 3 for matrices"):
        LA.norm(x, 3, axis=(0, 1))
    with pytest.raises(ValueError, match="invalid norm order 'fro' for vectors"):
        LA.norm(x, "fro", axis=0)
    with pytest.raises(ValueError, match="needs a 1-D or 2-D array"):
        LA.norm(x, 1)
    with pytest.raises(ValueError, match=r"axis 3 is out of bounds for f32\[2,3,4\]"):
        LA.norm(x, axis=3)
    with pytest.raises(ValueError, match="duplicate axes"):
        LA.norm(x, axis=(1, -2))
    with pytest.raises(ValueError, match="int or a pair"):
        LA.norm(x, axis=(0, 1, 2))
    with pytest.raises(ValueError, match="rank >= 2"):
        LA.matrix_norm(from_numpy(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match="1-D"):
        LA.outer(x, x)


def test_array_api_helpers():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y = rng.standard_normal((4, 5)).astype(np.float32)
    X = from_numpy(x)
    assert_close(LA.matrix_transpose(X), np.swapaxes(x, -1, -2))
    assert_close(LA.trace(X), np.trace(x, axis1=-2, axis2=-1), rtol=1e-5, atol=1e-5)
    assert_close(LA.trace(X, offset=1), np.trace(x, 1, axis1=-2, axis2=-1), rtol=1e-5,
                 atol=1e-5)
    assert_close(LA.diagonal(X, offset=-1), np.diagonal(x, -1, axis1=-2, axis2=-1))
    assert_close(LA.vecdot(X, from_numpy(x[0])), np.vecdot(x, x[0]), rtol=1e-5, atol=1e-5)
    assert_close(LA.outer(from_numpy(x[0, 0]), from_numpy(y[0])), np.outer(x[0, 0], y[0]))
    assert_close(LA.tensordot(X, from_numpy(y), axes=1), np.tensordot(x, y, 1), rtol=1e-5,
                 atol=1e-5)
    assert_close(LA.matmul(X, from_numpy(y)), x @ y, rtol=1e-5, atol=1e-5)
    v = rng.standard_normal((4, 3)).astype(np.float32)
    assert_close(LA.cross(from_numpy(v), from_numpy(v[::-1])), np.cross(v, v[::-1]),
                 rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="3 components"):
        LA.cross(X, X)


def test_linalg_traces():
    x = from_numpy(np.arange(1, 13, dtype=np.float32).reshape(3, 4))
    fns = [LA.norm, lambda a: LA.norm(a, 1), lambda a: LA.norm(a, -INF, axis=1),
           lambda a: LA.norm(a, 0.5, axis=0, keepdims=True), LA.vector_norm, LA.matrix_norm,
           lambda a: LA.matrix_norm(a, ord=INF), LA.matrix_transpose, LA.trace, LA.diagonal,
           lambda a: LA.vecdot(a, a), lambda a: LA.tensordot(a, a, axes=2),
           lambda a: LA.outer(a[0], a[1]), lambda a: LA.matmul(a, LA.matrix_transpose(a)),
           lambda a: LA.cross(a[:, :3], a[:, 1:])]
    for fn in fns:
        closed = mt.make_jaxpr(fn)(x)
        assert_close(closed(x)[0], fn(x))


@pytest.mark.parametrize("shape", [(0, 2), (2, 0), (0, 0), (3, 0, 2)])
@pytest.mark.parametrize("ord", [1, 2, INF, "fro", "nuc"])
def test_norms_of_empty_matrices_are_zero(shape, ord):
    # the sum (nuc, fro) or the max (1, 2, inf) of no values >= 0 is 0, as JAX
    got = LA.matrix_norm(np.zeros(shape, np.complex64), ord=ord)
    assert got.dtype == np.float32 and got.shape == shape[:-2] and not np.asarray(got).any()
    assert not np.asarray(LA.vector_norm(np.zeros((0,)), ord=ord if ord in (1, 2) else INF))
