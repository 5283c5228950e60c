"""mnp.ufunc: add, subtract, multiply, maximum, minimum, logaddexp(2), the logical and bitwise
and/or/xor and negative carry NumPy's reduce/accumulate/outer/at, checked against NumPy's
ufunc methods on drawn arrays, axes and masks, and under jit and grad."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from tests.strategies import arrays

FLOAT_UFUNCS = ["add", "subtract", "multiply", "maximum", "minimum", "logaddexp", "logaddexp2"]
INT_UFUNCS = ["add", "subtract", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or",
              "bitwise_xor"]
BOOL_UFUNCS = ["logical_and", "logical_or", "logical_xor"]
shapes = st.sampled_from([(4,), (2, 3), (3, 1, 2), (2, 0, 3)])


def _axis(data, ndim):
    return data.draw(st.sampled_from([None, 0, -1, tuple(range(ndim))]))


@given(st.sampled_from(FLOAT_UFUNCS), arrays(np.float32, shapes, min_value=-2, max_value=2),
       st.data())
def test_float_reduce_and_accumulate_match_numpy(name, x, data):
    f, ref = getattr(mnp, name), getattr(np, name)
    axis = _axis(data, x.ndim)
    identity_free = name in ("subtract", "maximum", "minimum")
    several = x.ndim > 1 and (axis is None or isinstance(axis, tuple))
    if name == "subtract" and several:
        with pytest.raises(ValueError, match="subtract is not reorderable"):
            f.reduce(x, axis=axis)
    elif not (x.size == 0 and identity_free):
        want = ref.reduce(x.astype(np.float64), axis=axis)
        np.testing.assert_allclose(f.reduce(x, axis=axis), want, rtol=1e-4, atol=1e-4)
    ax = data.draw(st.integers(-x.ndim, x.ndim - 1))
    np.testing.assert_allclose(f.accumulate(x, axis=ax),
                               ref.accumulate(x.astype(np.float64), axis=ax), rtol=1e-4,
                               atol=1e-4)


@given(st.sampled_from(INT_UFUNCS), arrays(np.int32, shapes, min_value=-9, max_value=9),
       st.data())
def test_int_reduce_accumulate_outer_match_numpy(name, x, data):
    f, ref = getattr(mnp, name), getattr(np, name)
    axis = data.draw(st.sampled_from([0, -1]))
    if x.size or name not in ("subtract", "maximum", "minimum"):
        np.testing.assert_array_equal(f.reduce(x, axis=axis), ref.reduce(x, axis=axis))
    np.testing.assert_array_equal(f.accumulate(x, axis=axis), ref.accumulate(x, axis=axis))
    y = x.ravel()[:3]
    np.testing.assert_array_equal(f.outer(x, y), ref.outer(x, y))


@given(st.sampled_from(BOOL_UFUNCS), arrays(np.bool_, shapes), st.data())
def test_logical_reduce_matches_numpy(name, x, data):
    axis = _axis(data, x.ndim)
    np.testing.assert_array_equal(getattr(mnp, name).reduce(x, axis=axis),
                                  getattr(np, name).reduce(x, axis=axis))


@given(arrays(np.float32, (3, 4), min_value=-5, max_value=5),
       arrays(np.bool_, (3, 4)), st.booleans())
def test_reduce_where_initial_keepdims(x, mask, keepdims):
    for name, initial in (("add", 10.0), ("multiply", 2.0), ("maximum", -7.0),
                          ("minimum", 7.0)):
        want = getattr(np, name).reduce(x, axis=1, where=mask, initial=initial,
                                        keepdims=keepdims)
        got = getattr(mnp, name).reduce(x, axis=1, where=mask, initial=initial,
                                        keepdims=keepdims)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_at_matches_numpy_including_repeated_indices():
    idx = np.array([0, 0, 2, 3, 3, 3])
    for name in ("add", "multiply", "maximum", "minimum", "subtract"):
        ref = np.arange(1.0, 6.0)
        getattr(np, name).at(ref, idx, 2.0)
        got = getattr(mnp, name).at(mnp.arange(1.0, 6.0), idx, 2.0, inplace=False)
        np.testing.assert_allclose(got, ref)
    np.testing.assert_allclose(mnp.negative.at(mnp.arange(3.0), 1, inplace=False),
                               [0.0, -1.0, 2.0])
    with pytest.raises(ValueError, match="add.at: mytorch arrays are immutable"):
        mnp.add.at(mnp.zeros(3), 0, 1.0)


@pytest.mark.parametrize("name", ["negative", "subtract", "logaddexp", "logical_xor"])
@pytest.mark.parametrize("index", [
    np.array([0, 0, 2]), [3, 3, 3], 1, np.array([[1, 1], [0, 1]]),
    (np.array([0, 0]), np.array([1, 1])), (np.array([2, 2, 0]), slice(None)),
])
def test_at_without_a_scatter_applies_once_per_occurrence(name, index):
    # generic updates (no x.at[] method) fold over the positions: a repeated index applies
    # repeatedly, as NumPy's unbuffered at
    f, ref_f = getattr(mnp, name), getattr(np, name)
    x = np.arange(12.0).reshape(4, 3)
    if name == "logical_xor":
        x = x.astype(np.int32) % 3 == 0
    b = np.array([True, False, True]) if name == "logical_xor" else np.array([0.5, -1.0, 2.0])
    if x[index].shape[-1:] != (3,):
        b = b[0]
    operands = () if f.nin == 1 else (b,)
    want = x.copy()
    ref_f.at(want, index, *operands)
    eager = f.at(x, index, *operands, inplace=False)
    jitted = mt.jit(lambda v, *o: f.at(v, index, *o, inplace=False))(x, *operands)
    for got in (eager, jitted):
        np.testing.assert_allclose(got, want, rtol=1e-6)


@given(st.sampled_from(FLOAT_UFUNCS), arrays(np.float32, (5, 3), min_value=-2, max_value=2),
       st.data())
def test_reduceat_matches_numpy(name, x, data):
    axis = data.draw(st.sampled_from([0, 1, -1]))
    n = x.shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=6)), dtype=np.int32)
    f = getattr(mnp, name)
    want = getattr(np, name).reduceat(x.astype(np.float64), idx, axis=axis)
    got = f.reduceat(x, idx, axis=axis)
    jitted = mt.jit(lambda v, i: f.reduceat(v, i, axis=axis))(x, idx)  # traced indices
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jitted, want, rtol=1e-5, atol=1e-5)


def test_reduceat_vmaps_and_differentiates():
    x = np.arange(1.0, 13.0).reshape(3, 4)
    idx = np.array([0, 2, 1])
    got = mt.vmap(lambda r: mnp.add.reduceat(r, idx))(x)
    np.testing.assert_allclose(got, np.stack([np.add.reduceat(r, idx) for r in x]))
    g = mt.grad(lambda r: mnp.multiply.reduceat(r, idx).sum())(x[0])
    # the segments are r0 r1, r2 (2 >= 1) and r1 r2 r3 (to the end)
    r0, r1, r2, r3 = x[0]
    np.testing.assert_allclose(g, [r1, r0 + r2 * r3, 1.0 + r1 * r3, r1 * r2])


def _scalar_sub(x, y):
    assert np.shape(x) == np.shape(y) == ()  # frompyfunc maps over scalars
    return x - y


def test_frompyfunc_matches_numpy_object_ufunc():
    f = mnp.frompyfunc(_scalar_sub, nin=2, nout=1, identity=None)
    ref = np.frompyfunc(_scalar_sub, nin=2, nout=1, identity=None)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((3,))
    mask = rng.random((4, 3)) < 0.5
    with mt.config.override(enable_x64=True):
        cases = [
            (f(x, y), ref(x, y)),
            (mt.jit(f)(x, y), ref(x, y)),
            (f.reduce(x, axis=0), ref.reduce(x, axis=0)),
            (f.reduce(x, axis=1, where=mask, initial=1.0),
             ref.reduce(x, axis=1, where=mask, initial=1.0)),
            (f.accumulate(x, axis=1), ref.accumulate(x, axis=1)),
            (f.outer(y, y), ref.outer(y, y)),
            (f.reduceat(x, [0, 2, 1], axis=0), ref.reduceat(x, [0, 2, 1], axis=0)),
            (f.at(x, [0, 0, 3], y, inplace=False), _np_at(ref, x, [0, 0, 3], y)),
        ]
        for got, want in cases:
            np.testing.assert_allclose(got, want.astype(np.float64), rtol=1e-12)
    assert f == mnp.frompyfunc(_scalar_sub, nin=2, nout=1, identity=None)
    assert hash(f) == hash(mnp.frompyfunc(_scalar_sub, nin=2, nout=1, identity=None))
    assert f != mnp.frompyfunc(mnp.add, nin=2, nout=1, identity=0)
    assert (f.nin, f.nout, f.nargs, f.identity) == (2, 1, 2, None)


def _np_at(uf, x, index, b):
    out = x.copy().astype(object)
    uf.at(out, index, b)
    return out


def test_masked_reduce_of_a_ufunc_without_identity_skips_masked_elements():
    x = np.arange(1.0, 13.0).reshape(3, 4)
    mask = np.array([[True, False, True, True]] * 3)
    for axis in (0, 1):
        np.testing.assert_allclose(
            mnp.subtract.reduce(x, axis=axis, where=mask, initial=1.0),
            np.subtract.reduce(x, axis=axis, where=mask, initial=1.0))


def test_ufunc_attributes_are_read_only_and_nargs_counts_inputs():
    for f in (mnp.add, mnp.negative, mnp.logaddexp):
        assert f.nargs == f.nin == getattr(np, f.__name__).nargs - 1  # NumPy counts `out`
        for attr in ("nin", "nout", "nargs", "identity", "_func"):
            with pytest.raises(AttributeError):
                setattr(f, attr, None)
    assert mnp.negative.nin == 1 and mnp.add.identity == 0


def test_ufuncs_are_still_functions_and_transform():
    assert isinstance(mnp.add, mnp.ufunc) and mnp.add.nin == 2 and mnp.add.identity == 0
    assert mnp.maximum.identity is None and mnp.negative.nin == 1
    np.testing.assert_allclose(mnp.add(1.0, mnp.ones(2)), [2.0, 2.0])
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(mt.jit(lambda v: mnp.subtract.reduce(v, axis=1))(x),
                               np.subtract.reduce(x, axis=1))
    g = mt.grad(lambda v: mnp.logaddexp.reduce(v))(np.arange(3.0, dtype=np.float32))
    e = np.exp(np.arange(3.0))
    np.testing.assert_allclose(g, e / e.sum(), rtol=1e-5)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        mnp.maximum.reduce(mnp.ones((0,)))
