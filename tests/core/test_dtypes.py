"""Type promotion against JAX's published promotion table, x64 narrowing, weak types."""

import itertools
import warnings

import ml_dtypes
import numpy as np
import pytest

import mytorch as mt
from mytorch.core import dtypes
from mytorch.errors import X64Warning

B1, U8, U16, U32, U64 = "b1", "u8", "u16", "u32", "u64"
I8, I16, I32, I64 = "i8", "i16", "i32", "i64"
BF16, F16, F32, F64 = "bf16", "f16", "f32", "f64"
IW, FW = "i*", "f*"
ORDER = [B1, U8, U16, U32, U64, I8, I16, I32, I64, BF16, F16, F32, F64, IW, FW]
# JAX's documented promotion table (jax.numpy type promotion semantics), complex omitted.
TABLE = """
b1  b1  u8  u16 u32 u64 i8  i16 i32 i64 bf16 f16 f32 f64 i*  f*
u8  u8  u8  u16 u32 u64 i16 i16 i32 i64 bf16 f16 f32 f64 u8  f*
u16 u16 u16 u16 u32 u64 i32 i32 i32 i64 bf16 f16 f32 f64 u16 f*
u32 u32 u32 u32 u32 u64 i64 i64 i64 i64 bf16 f16 f32 f64 u32 f*
u64 u64 u64 u64 u64 u64 f*  f*  f*  f*  bf16 f16 f32 f64 u64 f*
i8  i8  i16 i32 i64 f*  i8  i16 i32 i64 bf16 f16 f32 f64 i8  f*
i16 i16 i16 i32 i64 f*  i16 i16 i32 i64 bf16 f16 f32 f64 i16 f*
i32 i32 i32 i32 i64 f*  i32 i32 i32 i64 bf16 f16 f32 f64 i32 f*
i64 i64 i64 i64 i64 f*  i64 i64 i64 i64 bf16 f16 f32 f64 i64 f*
bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32 f32 f64 bf16 bf16
f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f32 f16 f32 f64 f16 f16
f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f64 f32 f32
f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64
i*  i*  u8  u16 u32 u64 i8  i16 i32 i64 bf16 f16 f32 f64 i*  f*
f*  f*  f*  f*  f*  f*  f*  f*  f*  f*  bf16 f16 f32 f64 f*  f*
"""
NP = {B1: np.bool_, U8: np.uint8, U16: np.uint16, U32: np.uint32, U64: np.uint64,
      I8: np.int8, I16: np.int16, I32: np.int32, I64: np.int64, BF16: ml_dtypes.bfloat16,
      F16: np.float16, F32: np.float32, F64: np.float64}


def _typed(code):
    """(dtype, weak) for a table code, with x64 on."""
    if code == IW:
        return np.dtype(np.int64), True
    if code == FW:
        return np.dtype(np.float64), True
    return np.dtype(NP[code]), False


def _rows():
    rows = {}
    for line in TABLE.strip().splitlines():
        head, *cells = line.split()
        rows[head] = dict(zip(ORDER, cells, strict=True))
    return rows


@pytest.mark.parametrize("a,b", list(itertools.product(ORDER, ORDER)))
def test_promotion_matches_jax_table(a, b, x64):
    expected = _rows()[a][b]
    got = dtypes.promote(*_typed(a), *_typed(b))
    assert got == _typed(expected), (a, b, got, expected)


def test_table_is_symmetric():
    rows = _rows()
    for a, b in itertools.product(ORDER, ORDER):
        assert rows[a][b] == rows[b][a]


@pytest.mark.parametrize("code64,code32", [(I64, I32), (U64, U32), (F64, F32)])
def test_without_x64_results_narrow(code64, code32):
    d, w = dtypes.promote(*_typed(code64), *_typed(B1))
    assert (d, w) == (np.dtype(NP[code32]), False)


def test_weak_scalars_adopt_the_array_dtype():
    assert dtypes.promote(np.dtype(np.float16), False, *dtypes.python_scalar_dtype(2.0)) == (
        np.dtype(np.float16), False)
    assert dtypes.promote(np.dtype(np.int8), False, *dtypes.python_scalar_dtype(3)) == (
        np.dtype(np.int8), False)
    # int array with a Python float: the default float, weakly typed
    assert dtypes.promote(np.dtype(np.int32), False, *dtypes.python_scalar_dtype(2.5)) == (
        np.dtype(np.float32), True)
    assert dtypes.python_scalar_dtype(True) == (np.dtype(np.bool_), False)


def test_explicit_64_bit_request_warns_and_narrows():
    with pytest.warns(X64Warning, match="enable_x64"):
        assert dtypes.canonicalize(np.float64, explicit=True) == np.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dtypes.canonicalize(np.float64) == np.float32  # implicit: silent


def test_x64_keeps_64_bit(x64):
    assert dtypes.canonicalize(np.int64, explicit=True) == np.int64
    assert dtypes.default_float() == np.float64


def test_unsupported_dtype_is_a_clear_error():
    with pytest.raises(TypeError, match="does not support dtype complex64"):
        dtypes.canonicalize(np.complex64)


def test_config_rejects_unknown_options_and_bad_values():
    with pytest.raises(ValueError, match="no option 'enable_x65'"):
        mt.config.update("enable_x65", True)
    with pytest.raises(ValueError, match="must be one of"):
        mt.config.update("default_backend", "tpu")
    with pytest.raises(AttributeError, match="mt.config.update"):
        mt.config.enable_x64 = True


def test_config_override_restores():
    with mt.config.override(enable_x64=True):
        assert mt.config.enable_x64
    assert not mt.config.enable_x64
