"""Edges of the elementwise operators that ported JAX and NumPy code meets: spacing of the
16-bit floats (NumPy's own rules per dtype), polyval with N-d coefficient arrays, binary
operators deferring to NamedTuple operands, and lax.broadcast_shapes. Checked against NumPy,
under jit against eager, and under vmap against a loop."""

import operator
from typing import NamedTuple

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from tests.strategies import arrays


# ---- spacing --------------------------------------------------------------------------------
_EDGES = [-1.0, -0.5, -0.0, 0.0, 1.0, -6e-8, 6e-8, -3.0, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_spacing_matches_numpy_at_the_edges(dtype):
    # float16 steps towards +inf (positive results for negative x); bfloat16 keeps the
    # sign of -0; float32 gives +smallest subnormal at -0: NumPy's kernels differ by dtype
    info = ml_dtypes.finfo(dtype)
    x = np.array(_EDGES + [float(info.max), -float(info.max), float(info.tiny)], dtype)
    with np.errstate(all="ignore"):
        ref = np.spacing(x)
    for got in (mnp.spacing(x), mt.jit(mnp.spacing)(x)):
        got = np.asarray(got)
        assert got.dtype == ref.dtype
        # (as float32: NumPy's array comparison does not see bfloat16 NaNs as equal)
        np.testing.assert_array_equal(got.astype(np.float32), ref.astype(np.float32))
        np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]),
                                      np.signbit(ref[~np.isnan(ref)]))


@given(arrays(np.float16, (7,), allow_inf=True, allow_nan=True))
def test_spacing_float16_matches_numpy(x):
    with np.errstate(all="ignore"):
        ref = np.spacing(x)
    np.testing.assert_array_equal(mnp.spacing(x), ref)


# ---- polyval with N-d coefficients ---------------------------------------------------------
@pytest.mark.parametrize("p_shape,x_shape", [
    ((3, 4), (4,)), ((3, 1), (2, 4)), ((2, 3, 4), ()), ((3, 1, 4), (2, 1)), ((1,), (3,)),
])
def test_polyval_nd_coefficients_match_numpy(p_shape, x_shape):
    rng = np.random.default_rng(0)
    p = rng.standard_normal(p_shape).astype(np.float32)
    x = rng.standard_normal(x_shape).astype(np.float32)
    ref = np.polyval(p, x)
    for got in (mnp.polyval(p, x), mt.jit(mnp.polyval)(p, x)):
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_polyval_nd_coefficients_vmap_matches_loop():
    rng = np.random.default_rng(1)
    p = rng.standard_normal((5, 3, 4)).astype(np.float32)  # batch of (3, 4) coefficients
    x = rng.standard_normal((4,)).astype(np.float32)
    got = mt.vmap(mnp.polyval, in_axes=(0, None))(p, x)
    np.testing.assert_allclose(got, np.stack([np.polyval(pi, x) for pi in p]), rtol=1e-5)


def test_polyval_scalar_coefficients_raise():
    with pytest.raises(ValueError, match=r"polyval.*at least 1-D.*f32\[\]"):
        mnp.polyval(np.float32(2.0), 1.0)


# ---- binary operators and NamedTuple operands ----------------------------------------------
class _Boxed(NamedTuple):
    arr: object

    def __mul__(self, other):
        return _Boxed(self.arr * other)

    def __rmul__(self, other):
        return _Boxed(other * self.arr)


@pytest.mark.parametrize("jit", [False, True])
def test_operators_defer_to_namedtuple_operands(jit):
    a, b = _Boxed(mnp.ones(4)), mnp.ones(4)
    mul = mt.jit(operator.mul) if jit else operator.mul
    assert isinstance(mul(a, b), _Boxed)
    assert isinstance(mul(b, a), _Boxed)
    np.testing.assert_array_equal(mul(b, a).arr, np.ones(4))


def test_operators_still_convert_plain_lists_and_tuples():
    x = mnp.arange(3.0)
    np.testing.assert_array_equal(x + [1.0, 2.0, 3.0], np.arange(3.0) + [1.0, 2.0, 3.0])
    np.testing.assert_array_equal((1, 2, 3) * x, np.array([1, 2, 3]) * np.arange(3.0))


# ---- lax.broadcast_shapes -------------------------------------------------------------------
@given(st.lists(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=4).map(tuple),
                min_size=1, max_size=4))
def test_lax_broadcast_shapes_matches_numpy(shapes):
    try:
        ref = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError, match="broadcast_shapes"):
            lax.broadcast_shapes(*shapes)
        return
    assert lax.broadcast_shapes(*shapes) == ref
