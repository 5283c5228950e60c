"""Type promotion against JAX's published promotion table, x64 narrowing, weak types; every
dtype utility with every way of naming a dtype; config's JAX option names."""

import itertools
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.core import dtypes
from mytorch.errors import X64Warning

B1, U8, U16, U32, U64 = "b1", "u8", "u16", "u32", "u64"
I8, I16, I32, I64 = "i8", "i16", "i32", "i64"
BF16, F16, F32, F64 = "bf16", "f16", "f32", "f64"
C64, C128 = "c64", "c128"
IW, FW, CW = "i*", "f*", "c*"
ORDER = [B1, U8, U16, U32, U64, I8, I16, I32, I64, BF16, F16, F32, F64, C64, C128, IW, FW, CW]
# JAX's documented promotion table (jax.numpy type promotion semantics).
TABLE = """
b1   b1   u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*
u8   u8   u8   u16  u32  u64  i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128 u8   f*   c*
u16  u16  u16  u16  u32  u64  i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128 u16  f*   c*
u32  u32  u32  u32  u32  u64  i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128 u32  f*   c*
u64  u64  u64  u64  u64  u64  f*   f*   f*   f*   bf16 f16  f32  f64  c64  c128 u64  f*   c*
i8   i8   i16  i32  i64  f*   i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i8   f*   c*
i16  i16  i16  i32  i64  f*   i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128 i16  f*   c*
i32  i32  i32  i32  i64  f*   i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128 i32  f*   c*
i64  i64  i64  i64  i64  f*   i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128 i64  f*   c*
bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32  f32  f64  c64  c128 bf16 bf16 c64
f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f16  f32  f64  c64  c128 f16  f16  c64
f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  c64  c128 f32  f32  c64
f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  c128 c128 f64  f64  c128
c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c128 c64  c128 c64  c64  c64
c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128
i*   i*   u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*
f*   f*   f*   f*   f*   f*   f*   f*   f*   f*   bf16 f16  f32  f64  c64  c128 f*   f*   c*
c*   c*   c*   c*   c*   c*   c*   c*   c*   c*   c64  c64  c64  c128 c64  c128 c*   c*   c*
"""
NP = {B1: np.bool_, U8: np.uint8, U16: np.uint16, U32: np.uint32, U64: np.uint64,
      I8: np.int8, I16: np.int16, I32: np.int32, I64: np.int64, BF16: ml_dtypes.bfloat16,
      F16: np.float16, F32: np.float32, F64: np.float64, C64: np.complex64,
      C128: np.complex128}


def _typed(code):
    """(dtype, weak) for a table code, with x64 on."""
    if code == IW:
        return np.dtype(np.int64), True
    if code == FW:
        return np.dtype(np.float64), True
    if code == CW:
        return np.dtype(np.complex128), True
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


@pytest.mark.parametrize("code64,code32", [(I64, I32), (U64, U32), (F64, F32), (C128, C64)])
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
    with pytest.raises(TypeError, match="does not support dtype <U3"):
        dtypes.canonicalize(np.dtype("U3"))
    with pytest.raises(TypeError, match="does not support dtype float128|longdouble"):
        dtypes.canonicalize(np.longdouble)


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


# ---- every way of naming a dtype, in every dtype utility ----------------------------------
STRONG = [c for c in ORDER if c not in (IW, FW, CW)]


def _forms(code):
    """Ways a user names the dtype of a table code (weak codes: Python types and values)."""
    if code == IW:
        return [("type int", int), ("value 3", 3), ("weak array", mnp.asarray(3))]
    if code == FW:
        return [("type float", float), ("value 2.5", 2.5), ("weak array", mnp.asarray(2.5))]
    if code == CW:
        return [("type complex", complex), ("value 1j", 1j), ("weak array", mnp.asarray(1j))]
    d = np.dtype(NP[code])
    forms = [("np.dtype", d), ("name", d.name), ("scalar type", NP[code]),
             ("mnp type", getattr(mnp, d.name)), ("mt array", mnp.zeros((2,), d)),
             ("np array", np.zeros(2, d))]
    if code != BF16:  # bfloat16 has no NumPy type code
        forms += [("code", d.str), ("char", d.char)]
    if code == B1:
        forms += [("type bool", bool), ("value True", True)]
    return forms


def _expected(code):
    """The dtype a table code stands for with x64 on (weak codes: the default types)."""
    return _typed(code)[0]


@settings(max_examples=300, deadline=None)
@given(a=st.sampled_from(ORDER), b=st.sampled_from(ORDER), data=st.data())
def test_result_type_accepts_every_dtype_form(a, b, data):
    # reference: JAX's published table (TABLE); mnp.int8 etc. were rejected before
    with mt.config.override(enable_x64=True):
        label_a, fa = data.draw(st.sampled_from(_forms(a)), label="form a")
        label_b, fb = data.draw(st.sampled_from(_forms(b)), label="form b")
        assert mnp.result_type(fa, fb) == _expected(_rows()[a][b]), (label_a, label_b)
    # without x64 the inputs narrow first, then the result (JAX 0.10: result_type(uint64,
    # int8) is int32, not float32)
    narrow = {I64: I32, U64: U32, F64: F32, C128: C64}
    plain = {IW: int, FW: float, CW: complex}
    fa, fb = (plain.get(c) or np.dtype(NP[c]) for c in (a, b))
    joined = _rows()[narrow.get(a, a)][narrow.get(b, b)]
    joined = {IW: I32, FW: F32, CW: C64}.get(joined, joined)  # weak results: the defaults
    assert mnp.result_type(fa, fb) == np.dtype(NP[narrow.get(joined, joined)])


@settings(max_examples=200, deadline=None)
@given(a=st.sampled_from(ORDER), b=st.sampled_from(ORDER), data=st.data())
def test_promote_types_accepts_every_dtype_form(a, b, data):
    # JAX: promote_types(int, int8) is int8: the Python types are weak, as in result_type
    with mt.config.override(enable_x64=True):
        fa = data.draw(st.sampled_from([f for _, f in _forms(a)[:4] if not _is_value(f)]))
        fb = data.draw(st.sampled_from([f for _, f in _forms(b)[:4] if not _is_value(f)]))
        assert mnp.promote_types(fa, fb) == _expected(_rows()[a][b])


def _is_value(f):
    return isinstance(f, (int, float, complex, mt.Array, np.ndarray)) and not isinstance(f, type)


@settings(max_examples=200, deadline=None)
@given(code=st.sampled_from(STRONG), data=st.data())
def test_dtype_utilities_accept_every_form(code, data):
    d = np.dtype(NP[code])
    with mt.config.override(enable_x64=True):
        forms = [(n, f) for n, f in _forms(code) if not n.startswith("value")]
        label, form = data.draw(st.sampled_from(forms), label="form")
        assert mnp.dtype(form) == d, label
        for other in (np.int8, np.float16, np.float32, np.uint32, ml_dtypes.bfloat16):
            # reference: NumPy's can_cast, which knows ml_dtypes' bfloat16 casts
            assert mnp.can_cast(form, other) == np.can_cast(d, other), (label, other)
        for kind in (mnp.floating, mnp.integer, mnp.signedinteger, mnp.unsignedinteger,
                     mnp.number, mnp.inexact, mnp.generic):
            ref = kind in (np.floating, np.inexact, np.number, np.generic) if code == BF16 \
                else np.issubdtype(d, kind)  # JAX: bfloat16 is a floating type
            assert mnp.issubdtype(form, kind) == ref, (label, kind)
        assert mnp.issubdtype(form, d) and mnp.isdtype(form, d)
        if code in (C64, C128):
            assert mnp.finfo(form).eps == np.finfo(d).eps
            assert mnp.isdtype(form, "complex floating") and mnp.isdtype(form, "numeric")
        elif code in (BF16, F16, F32, F64):
            ref = ml_dtypes.finfo(d)
            assert mnp.finfo(form).eps == ref.eps and mnp.finfo(form).bits == ref.bits
            assert mnp.isdtype(form, "real floating")
        elif code != B1:
            assert mnp.iinfo(form).max == np.iinfo(d).max and mnp.isdtype(form, "integral")
        else:
            assert mnp.isdtype(form, "bool") and not mnp.isdtype(form, "numeric")
        made = [mnp.zeros(2, form), mnp.ones((), dtype=form), mnp.array([1, 0], dtype=form),
                mnp.asarray(1, dtype=form), mnp.full(2, 1, dtype=form),
                mnp.arange(2, dtype=form), mnp.ones(2).astype(form), mnp.astype([1.0], form),
                mt.lax.convert_element_type(mnp.ones(2), form), mnp.zeros_like([1.0], form)]
        for x in made:
            assert x.dtype == d and not x.weak_type, (label, x)


def test_python_types_name_the_default_dtypes():
    assert dtypes.to_dtype(int) == np.int32 and dtypes.to_dtype(float) == np.float32
    assert dtypes.to_dtype(bool) == np.bool_
    assert mnp.zeros(2, int).dtype == np.int32 and mnp.ones(2).astype(float).dtype == np.float32
    # JAX 0.10: result_type(int, int8) int8; result_type(float, float16) float16;
    # result_type(int, float) float32; promote_types(int, int8) int8
    assert mnp.result_type(int, np.int8) == np.int8
    assert mnp.result_type(float, "f2") == np.float16
    assert mnp.result_type(int, float) == np.float32
    assert mnp.result_type(mnp.int8, mnp.float16) == np.float16  # issue 13, item 8
    assert mnp.promote_types(int, mnp.int8) == np.int8
    # issubdtype and can_cast read Python types as NumPy does (float is float64), as JAX:
    # issubdtype(float, float32) False, issubdtype(float, float64) True, can_cast(float,
    # float16) False, can_cast(float32, float) True
    assert not mnp.issubdtype(float, mnp.float32) and mnp.issubdtype(float, mnp.float64)
    assert not mnp.can_cast(float, mnp.float16) and mnp.can_cast(mnp.float32, float)
    assert mnp.zeros(2, complex).dtype == np.complex64 and dtypes.to_dtype(complex) == np.complex64
    assert mnp.result_type(complex, np.float16) == np.complex64
    with pytest.raises(TypeError, match="does not name a dtype"):
        mnp.zeros(2, "not_a_dtype")
    with pytest.raises(TypeError, match="does not name a dtype"):
        mnp.result_type(mnp.floating)


def test_scalar_type_aliases_of_jax():
    # classes, as JAX's: jnp.float32 == np.float32 and == "float32"; NumPy scalars are
    # instances; they pickle by name
    import pickle

    assert isinstance(mnp.float32, type) and mnp.float32 == np.float32 and mnp.float32 == "f4"
    assert mnp.int8 != mnp.int16 and mnp.float64 != None
    assert isinstance(np.float32(1), mnp.float32) and not isinstance(1.0, mnp.float32)
    assert pickle.loads(pickle.dumps(mnp.bfloat16)) is mnp.bfloat16
    assert repr(mnp.bool) == "<class 'mytorch.numpy.bool'>"
    assert mnp.bool is mnp.bool_ and mnp.bool(3).dtype == np.bool_ and bool(mnp.bool(3))
    assert mnp.bool_([0, 2]).tolist() == [False, True]
    assert mnp.single.dtype == np.float32 and mnp.double.dtype == np.float64
    assert mnp.int_.dtype == np.int64 and mnp.float_.dtype == np.float64
    assert mnp.uint.dtype == np.uint64
    with pytest.warns(X64Warning):
        assert mnp.int_(2).dtype == np.int32  # JAX: int32 with a warning, without x64
    with mt.config.override(enable_x64=True):
        assert mnp.int_(2).dtype == np.int64 and mnp.double(1.5).dtype == np.float64


def test_config_takes_jax_option_names():
    mt.config.update("jax_enable_x64", True)
    assert mt.config.enable_x64 and mt.config.jax_enable_x64
    assert mnp.zeros(1).dtype == np.float64
    mt.config.update("jax_enable_x64", False)
    assert not mt.config.enable_x64 and mnp.zeros(1).dtype == np.float32
    with mt.config.override(jax_debug_nans=True):
        assert mt.config.debug_nans and mt.config.jax_debug_nans
    assert not mt.config.debug_nans
    mt.config.update("jax_platform_name", "cpu")
    assert mt.config.default_backend == "cpu" and mt.config.jax_platforms == "cpu"
    with mt.config.override(jax_platforms="cpu"):
        assert mt.config.default_backend == "cpu"
    with pytest.raises(ValueError, match="no option 'jax_not_an_option'"):
        mt.config.update("jax_not_an_option", 1)
    with pytest.raises(AttributeError, match="no option 'jax_nope'"):
        mt.config.jax_nope  # noqa: B018
