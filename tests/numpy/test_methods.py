"""Array operators and methods against NumPy: dtypes by the JAX weak-type rules, Python
scalars / NumPy arrays / lists on either side, NotImplemented, immutability, tracing."""

import operator
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.core import dtypes
from mytorch.core.array import Array, from_numpy
from mytorch.errors import X64Warning
from tests.strategies import arrays, assert_close, broadcastable_shapes, shapes

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F16, I32, I8, U8, BOOL = (np.dtype(t) for t in (np.float32, np.float16, np.int32,
                                                      np.int8, np.uint8, np.bool_))
DTYPES = [F32, F16, BF16, I32, I8, U8, np.dtype(np.int16), np.dtype(np.uint32), BOOL]
ERRORS = (ValueError, TypeError, OverflowError)


def _promote(*operands):
    """The promoted dtype by the lattice: arrays are strong, Python scalars weak."""
    dt, weak = None, False
    for v in operands:
        if isinstance(v, np.ndarray):
            d, w = dtypes.canonicalize(v.dtype), False
        else:
            d, w = dtypes.python_scalar_dtype(v)
        dt, weak = (d, w) if dt is None else dtypes.promote(dt, weak, d, w)
    return dt


def _divisor(v, dt):
    """Replace integer zeros (integer division by zero is unspecified garbage)."""
    if isinstance(v, np.ndarray):
        return np.where(v == 0, np.ones_like(v), v) if v.dtype.kind in "iub" else v
    return v if v or dtypes.is_float(dt) else 1


# name, Python operator, NumPy function, allowed dtype kinds, kind of result
BINARY = [
    ("add", operator.add, np.add, "biuf", None),
    ("sub", operator.sub, np.subtract, "iuf", None),
    ("mul", operator.mul, np.multiply, "biuf", None),
    ("truediv", operator.truediv, np.true_divide, "biuf", "float"),
    ("floordiv", operator.floordiv, np.floor_divide, "iuf", None),
    ("mod", operator.mod, np.remainder, "iuf", None),
    ("pow", operator.pow, np.power, "iuf", None),
    ("and", operator.and_, np.bitwise_and, "biu", None),
    ("or", operator.or_, np.bitwise_or, "biu", None),
    ("xor", operator.xor, np.bitwise_xor, "biu", None),
    ("lshift", operator.lshift, np.left_shift, "iu", None),
    ("rshift", operator.rshift, np.right_shift, "iu", None),
    ("eq", operator.eq, np.equal, "biuf", "bool"),
    ("ne", operator.ne, np.not_equal, "biuf", "bool"),
    ("lt", operator.lt, np.less, "biuf", "bool"),
    ("le", operator.le, np.less_equal, "biuf", "bool"),
    ("gt", operator.gt, np.greater, "biuf", "bool"),
    ("ge", operator.ge, np.greater_equal, "biuf", "bool"),
]


def _kind(dt):
    return "f" if dtypes.is_float(dt) else np.dtype(dt).kind


def _expected(name, np_fn, result, lhs, rhs, dt):
    """NumPy's answer computed in the promoted dtype (the JAX rules) and its dtype."""
    if result == "float" and not dtypes.is_float(dt):
        dt = dtypes.default_float()
    cast = [np.asarray(v).astype(dt) for v in (lhs, rhs)]
    with np.errstate(all="ignore"):
        if dt == BF16:  # ml_dtypes: compute in float32, round once
            out = np_fn(*[c.astype(np.float32) for c in cast])
            return (out if out.dtype == BOOL else out.astype(BF16)), (
                BOOL if out.dtype == BOOL else BF16)
        out = np_fn(*cast)
    out_dt = BOOL if result == "bool" else dt
    return np.asarray(out).astype(out_dt), out_dt


def _operands(data, name, kinds):
    dt1 = data.draw(st.sampled_from([d for d in DTYPES if _kind(d) in kinds]), label="dt1")
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    small = name in ("pow", "lshift", "rshift")
    bounds = dict(min_value=0, max_value=4) if small else {}
    a = data.draw(arrays(dt1, shape, **bounds), label="a")
    other = data.draw(st.sampled_from(["same", "array", "scalar", "numpy", "list"]),
                      label="other")
    if other in ("same", "array", "numpy", "list"):
        dt2 = dt1 if other == "same" else data.draw(
            st.sampled_from([d for d in DTYPES if _kind(d) in kinds]), label="dt2")
        s2 = shape if other == "same" else data.draw(broadcastable_shapes(shape, max_dims=3))
        b = data.draw(arrays(dt2, s2, **bounds), label="b")
        return a, b, other
    if "f" in kinds and data.draw(st.booleans()):
        s = data.draw(st.floats(0 if small else -100, 4 if small else 100, width=16))
    elif "i" in kinds:
        s = data.draw(st.integers(0 if small else -130, 4 if small else 300))
    else:
        s = data.draw(st.booleans())
    return a, s, other


def _as_operand(v, other):
    """The mytorch-side operand: an Array, a NumPy value, a list, or the Python scalar."""
    if other in ("same", "array"):
        return from_numpy(v)
    if other == "list":
        return v.tolist()
    return v


@pytest.mark.parametrize("name, op, np_fn, kinds, result", BINARY, ids=[b[0] for b in BINARY])
@settings(max_examples=30)
@given(data=st.data())
def test_binary_operators(name, op, np_fn, kinds, result, data):
    a, b, other = _operands(data, name, kinds)
    if name in ("lshift", "rshift"):
        b = np.minimum(b, 7) if isinstance(b, np.ndarray) else min(b, 7)
    if other == "list":  # lists become strongly typed default-int/float/bool arrays
        kind = "f" if dtypes.is_float(b.dtype) else b.dtype.kind
        b = b.astype({"f": np.float32, "b": np.bool_}.get(kind, np.int32)).reshape(
            b.shape or (1,))
    reflected = data.draw(st.booleans(), label="reflected")
    lhs, rhs = (b, a) if reflected else (a, b)
    try:
        dt = _promote(lhs, rhs)
    except TypeError:
        return
    if name in ("truediv", "floordiv", "mod"):
        rhs = _divisor(rhs, dt)
    if name == "pow" and not dtypes.is_float(dt) and np.any(np.asarray(rhs) < 0):
        return
    a, b = (rhs, lhs) if reflected else (lhs, rhs)
    x, y = from_numpy(a), _as_operand(b, other)
    call = (lambda: op(y, x)) if reflected else (lambda: op(x, y))
    try:
        # a Python int outside a narrow dtype wraps into it first (uint8_array < 256
        # compares with 0), as in JAX; _expected casts it the same way
        expected, out_dt = _expected(name, np_fn, result, lhs, rhs, dt)
        if name == "sub" and dt == BOOL:
            raise TypeError("boolean subtract")
    except ERRORS:
        with pytest.raises(ERRORS):
            call()
        return
    out = call()  # true division takes a Python int straight to the float, as in JAX
    assert isinstance(out, Array), type(out)
    tol = {}
    if name == "pow":
        tol = {"rtol": 1e-2, "atol": 1e-2} if out_dt in (F16, BF16) else {"rtol": 1e-5}
    assert_close(out, expected, dtype=out_dt, **tol)


def test_weak_type_rules():
    x_f16 = from_numpy(np.ones(3, np.float16))
    x_i8 = from_numpy(np.ones(3, np.int8))
    x_i32 = from_numpy(np.arange(3, dtype=np.int32))
    assert (x_f16 + 1.0).dtype == np.float16 and not (x_f16 + 1.0).weak_type
    assert (2.0 * x_f16).dtype == np.float16
    assert (1 + x_i8).dtype == np.int8
    assert (x_i8 * 2).dtype == np.int8
    assert (x_i32 / 2).dtype == np.float32
    assert (x_i32 + 1.5).dtype == np.float32
    assert (x_i32 // 2).dtype == np.int32
    assert (x_f16 < 1).dtype == np.bool_ and (1 < x_f16).dtype == np.bool_
    assert (x_i8 == x_i8).dtype == np.bool_
    assert (x_i8 + from_numpy(np.ones(3, np.uint8))).dtype == np.int16
    assert (x_f16 + from_numpy(np.ones(3, np.float32))).dtype == np.float32
    assert (x_f16 + np.ones(3)).dtype == np.float32  # a NumPy float64 array is strong
    assert (x_f16 ** 2).dtype == np.float16
    assert (x_i32 ** 2).dtype == np.int32
    weak = mnp.expand_dims(2.0, 0)
    assert (weak + weak).weak_type and (weak * x_f16).dtype == np.float16


def test_bool_arithmetic():
    t = from_numpy(np.array([True, False]))
    assert_close(t + t, np.array([True, False]), dtype=np.bool_)
    assert_close(t * t, np.array([True, False]), dtype=np.bool_)
    with pytest.raises(TypeError, match="boolean subtract"):
        t - t
    with pytest.raises(TypeError):
        -t
    assert_close(~t, np.array([False, True]), dtype=np.bool_)


def test_python_int_outside_a_narrow_dtype_wraps():
    # JAX 0.10: int8 ones + 300 == [45, 45]; uint8 ones - (-1) == [2, 2]; the int must fit
    # the default int (int32 here)
    x = from_numpy(np.ones(2, np.int8))
    assert_close(x + 300, [45, 45], dtype=I8)
    assert_close(from_numpy(np.ones(2, np.uint8)) - (-1), [2, 2], dtype=U8)
    with pytest.raises(OverflowError, match="add: Python integer 2147483648 does not fit"):
        x + 2**31


@pytest.mark.parametrize("dt", [F32, F16, BF16, I32, I8, U8, BOOL])
def test_unary_operators(dt):
    a = np.array([[-3, 0, 2], [5, -1, 7]]).astype(dt)
    x = from_numpy(a)
    for op, np_fn in [(operator.neg, np.negative), (operator.pos, np.positive),
                      (abs, np.abs), (operator.invert, np.invert)]:
        try:
            with np.errstate(all="ignore"):
                expected = np_fn(a.astype(np.float32) if dt == BF16 else a)
            if dt == BF16:
                expected = expected.astype(BF16)
        except TypeError:
            with pytest.raises(TypeError):
                op(x)
            continue
        assert_close(op(x), expected, dtype=dt)


def test_numpy_operands_on_the_left():
    x = from_numpy(np.arange(3, dtype=np.float32))
    out = np.ones(3, np.float32) + x
    assert isinstance(out, Array) and out.dtype == np.float32
    assert_close(out, np.arange(3) + 1.0)
    out = np.ones(3, np.float64) * x  # float64 NumPy array: strong, canonicalised to f32
    assert isinstance(out, Array) and out.dtype == np.float32
    out = np.ones(3, np.float32) < x
    assert isinstance(out, Array) and out.dtype == np.bool_
    out = [1, 2, 3] - x
    assert isinstance(out, Array)
    assert_close(out, np.array([1, 1, 1], np.float32))
    h = from_numpy(np.arange(3, dtype=np.float16))
    for scalar, dt in [(np.float32(2), np.float32), (np.int8(3), np.float16),
                       (np.float64(1.5), np.float32), (np.bool_(True), np.float16)]:
        out = scalar + h  # NumPy scalars are strongly typed
        assert isinstance(out, Array) and out.dtype == dt, (scalar, out.dtype)
        assert_close(out, np.arange(3) + np.float64(scalar), dtype=dt)
        assert isinstance(scalar < h, Array)


def test_unsupported_operands_return_not_implemented():
    x = from_numpy(np.arange(3, dtype=np.float32))

    class Reflector:
        def __radd__(self, other):
            return "radd"

        def __rmatmul__(self, other):
            return "rmatmul"

        def __rlt__(self, other):  # not a real protocol: comparisons mirror instead
            return "never"

        def __gt__(self, other):
            return "gt"

    assert x + Reflector() == "radd"
    assert x @ Reflector() == "rmatmul"
    assert (x < Reflector()) == "gt"
    assert x.__add__(object()) is NotImplemented
    assert x.__radd__("a") is NotImplemented
    assert x.__mul__(b"a") is NotImplemented
    assert (x * 1j).dtype == np.complex64  # complex scalars are operands
    with pytest.raises(TypeError):
        x + object()
    with pytest.raises(TypeError):
        x + "a"
    assert (x == None) is False  # noqa: E711 (identity fallback)
    assert (x != "a") is True


def test_setitem_raises_and_points_at_at():
    x = from_numpy(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match=r"\.at\["):
        x[0] = 1.0
    with pytest.raises(TypeError, match=r"\.at\["):
        x[...] = 2.0


def test_getitem_and_at():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = from_numpy(a)
    assert_close(x[1], a[1])
    assert_close(x[..., 1:3], a[..., 1:3])
    y = x.at[0, 1].set(-1.0)
    expected = a.copy()
    expected[0, 1] = -1.0
    assert_close(y, expected)
    assert_close(x, a)  # unchanged
    assert_close(x.at[1].add(1.0), a + np.array([[0], [1], [0]], np.float32))


def test_matmul_operator():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    x, y = from_numpy(a), from_numpy(b)
    assert_close(x @ y, a @ b)
    assert_close(a @ y, a @ b)
    assert_close(x @ b, a @ b)
    assert_close(x.dot(y), a @ b)


# ---- shape methods --------------------------------------------------------------------------
def test_shape_methods():
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    x = from_numpy(a)
    assert_close(x.reshape(6, 4), a.reshape(6, 4))
    assert_close(x.reshape((4, -1)), a.reshape((4, -1)))
    assert_close(x.reshape([24]), a.reshape(24))
    assert_close(x.reshape(24), a.reshape(24))
    assert_close(x.reshape(shape=(3, 8)), a.reshape(3, 8))
    assert_close(x.reshape(4, 6, order="F"), a.reshape(4, 6, order="F"))
    assert_close(x.transpose(), a.transpose())
    assert_close(x.transpose(2, 0, 1), a.transpose(2, 0, 1))
    assert_close(x.transpose((1, 0, 2)), a.transpose((1, 0, 2)))
    assert_close(x.transpose(None), a.transpose(None))
    assert_close(x.T, a.T)
    assert_close(x.mT, np.swapaxes(a, -1, -2))
    assert_close(x.swapaxes(0, 2), a.swapaxes(0, 2))
    assert_close(x.flatten(), a.flatten())
    assert_close(x.ravel(), a.ravel())
    assert_close(x.ravel("F"), a.ravel("F"))
    assert_close(x[None].squeeze(), a)
    assert_close(x[:, :1].squeeze(1), a[:, :1].squeeze(1))
    assert_close(x.diagonal(1, 1, 2), a.diagonal(1, 1, 2))
    assert_close(x.repeat(2, axis=1), a.repeat(2, axis=1))
    assert_close(x.trace(), a.trace().astype(np.int32))
    assert x.itemsize == 4 and x.nbytes == 96
    with pytest.raises(TypeError, match="cannot reshape"):  # JAX's class
        x.reshape(5, 5)


def test_astype():
    a = np.array([1.7, -2.5, 0.0], np.float32)
    x = from_numpy(a)
    assert_close(x.astype(np.int8), a.astype(np.int8), dtype=np.int8)
    assert_close(x.astype(bool), a.astype(bool), dtype=np.bool_)
    assert_close(x.astype(np.float16), a.astype(np.float16), dtype=np.float16)
    assert x.astype(BF16).dtype == BF16
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.astype(float).dtype == np.float32  # Python types mean the defaults
        assert x.astype(int).dtype == np.int32
    with pytest.warns(X64Warning, match="float64"):
        y = x.astype(np.float64)
    assert y.dtype == np.float32
    with pytest.warns(X64Warning):
        assert x.astype("int64").dtype == np.int32
    weak = mnp.expand_dims(2.0, 0)
    assert weak.weak_type and not weak.astype(np.float32).weak_type


def test_astype_x64(x64):
    x = from_numpy(np.array([1.5, 2.5], np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = x.astype(np.float64)
    assert y.dtype == np.float64
    assert_close(y, np.array([1.5, 2.5]), dtype=np.float64)
    assert x.astype(float).dtype == np.float64


def test_view_is_not_supported():
    x = from_numpy(np.zeros(3, np.float32))
    with pytest.raises(NotImplementedError, match="bitcast_convert_type"):
        x.view(np.int32)


def test_sort_returns_a_new_array():
    a = np.array([[3, 1, 2], [0, 5, 4]], np.int32)
    x = from_numpy(a)
    s = x.sort()
    assert_close(s, np.sort(a))
    assert_close(x, a)  # unchanged: arrays are immutable
    assert_close(x.sort(axis=0), np.sort(a, axis=0))
    assert_close(x.argsort(), np.argsort(a).astype(np.int32), dtype=np.int32)


# ---- reduction-like methods delegate to mytorch.numpy ---------------------------------------
METHODS = [
    ("sum", {}), ("sum", {"axis": 1}), ("sum", {"axis": (0, 1), "keepdims": True}),
    ("prod", {"axis": 0}), ("mean", {}), ("mean", {"axis": -1}), ("var", {"axis": 0}),
    ("std", {"ddof": 1}), ("max", {"axis": 1}), ("min", {}), ("argmax", {}),
    ("argmin", {"axis": 0}), ("all", {}), ("any", {"axis": 1}), ("cumsum", {"axis": 1}),
    ("cumprod", {}), ("ptp", {"axis": 0}), ("round", {}), ("conj", {}), ("conjugate", {}),
    ("take", {"indices": [0, 2]}), ("nonzero", {}), ("clip", {"min": 1, "max": 3}),
]


@pytest.mark.parametrize("dt", [F32, I32, F16, U8])
@pytest.mark.parametrize("name, kwargs", METHODS, ids=[f"{m[0]}{m[1]}" for m in METHODS])
def test_methods_delegate_and_match_numpy(name, kwargs, dt):
    a = np.array([[1, 0, 3], [4, 2, 2]]).astype(dt)
    x = from_numpy(a)
    ours = getattr(x, name)(**kwargs)
    fn_name = "conjugate" if name == "conj" else name
    theirs = getattr(mnp, fn_name)(x, **kwargs)
    with np.errstate(all="ignore"):
        ref = getattr(np, fn_name)(a, **kwargs)
    if isinstance(ours, tuple):
        assert len(ours) == len(ref)
        for o, t, r in zip(ours, theirs, ref, strict=True):
            assert_close(o, t)
            assert_close(o, r.astype(np.asarray(o).dtype))
        return
    assert_close(ours, theirs, dtype=np.asarray(theirs).dtype)
    assert_close(ours, np.asarray(ref).astype(np.asarray(ours).dtype), rtol=2e-3, atol=2e-3)


def test_choose_searchsorted_nonzero():
    a = np.array([0, 2, 1, 2], np.int32)
    x = from_numpy(a)
    choices = [np.arange(4, dtype=np.int32), np.full(4, 7, np.int32), np.full(4, -1, np.int32)]
    assert_close(x.choose(choices), a.choose(choices))
    s = from_numpy(np.array([1.0, 2.0, 4.0], np.float32))
    assert_close(s.searchsorted(3.0), np.int32(2))
    (nz,) = x.nonzero()
    assert_close(nz, np.array([1, 2, 3], np.int32))


def test_real_imag_round_contains():
    a = np.array([1.25, -2.5, 3.75], np.float32)
    x = from_numpy(a)
    assert_close(x.real, a)
    assert_close(x.imag, np.zeros(3, np.float32))
    assert_close(round(x), np.round(a))
    assert_close(round(x, 1), np.round(a, 1))
    assert 3.75 in x and 7.0 not in x
    assert x.item(1) == -2.5 and x.tolist() == [1.25, -2.5, 3.75]


# ---- tracing --------------------------------------------------------------------------------
def _prims(closed):
    return [e.primitive.name for e in closed.eqns]


def test_fast_paths_trace_to_one_equation():
    x = from_numpy(np.ones((2, 3), np.float32))
    assert _prims(mt.make_jaxpr(lambda a, b: a + b)(x, x)) == ["add"]
    assert _prims(mt.make_jaxpr(lambda a: a * 2.0)(x)) == ["mul"]
    assert _prims(mt.make_jaxpr(lambda a: 1 - a)(x)) == ["sub"]
    assert _prims(mt.make_jaxpr(lambda a: a ** 2)(x)) == ["integer_pow"]
    assert _prims(mt.make_jaxpr(lambda a: a < 0.5)(x)) == ["lt"]
    assert _prims(mt.make_jaxpr(lambda a: -a)(x)) == ["neg"]
    h = from_numpy(np.ones(3, np.float16))
    closed = mt.make_jaxpr(lambda a: a * 2.0)(h)
    assert _prims(closed) == ["mul"] and closed.out_avals[0].dtype == np.float16


OPS = [
    ("add", lambda a, b: a + b), ("radd", lambda a, b: 2 + a), ("sub", lambda a, b: a - b),
    ("rsub", lambda a, b: 1.5 - a), ("mul", lambda a, b: a * b), ("rmul", lambda a, b: 3 * a),
    ("truediv", lambda a, b: a / b), ("rtruediv", lambda a, b: 1 / a),
    ("floordiv", lambda a, b: a // b), ("rfloordiv", lambda a, b: 7 // a),
    ("mod", lambda a, b: a % b), ("rmod", lambda a, b: 7 % a),
    ("divmod", lambda a, b: divmod(a, b)[1]), ("rdivmod", lambda a, b: divmod(7, a)[0]),
    ("pow", lambda a, b: a ** b), ("rpow", lambda a, b: 2 ** a),
    ("matmul", lambda a, b: a @ b.T), ("rmatmul", lambda a, b: np.ones((2, 2)) @ a),
    ("and", lambda a, b: a.astype(np.int32) & 3), ("rand", lambda a, b: 3 & a.astype(np.int32)),
    ("or", lambda a, b: (a > 1) | (b > 1)), ("ror", lambda a, b: True | (a > 1)),
    ("xor", lambda a, b: a.astype(np.int8) ^ b.astype(np.int8)),
    ("rxor", lambda a, b: 1 ^ a.astype(np.int8)),
    ("lshift", lambda a, b: a.astype(np.int32) << 2), ("rlshift", lambda a, b: 1 << b.astype(
        np.int32)),
    ("rshift", lambda a, b: a.astype(np.int32) >> 1), ("rrshift", lambda a, b: 64 >> a.astype(
        np.int32)),
    ("neg", lambda a, b: -a), ("pos", lambda a, b: +a), ("abs", lambda a, b: abs(a - b)),
    ("invert", lambda a, b: ~(a > b)),
    ("eq", lambda a, b: a == b), ("ne", lambda a, b: a != 2.0), ("lt", lambda a, b: a < b),
    ("le", lambda a, b: 2 <= a), ("gt", lambda a, b: a > b), ("ge", lambda a, b: a >= 1),
    ("getitem", lambda a, b: a[1, ::-1]), ("at", lambda a, b: a.at[0].set(b[1])),
    ("T", lambda a, b: a.T), ("mT", lambda a, b: a.mT), ("reshape", lambda a, b: a.reshape(3, 2)),
    ("transpose", lambda a, b: a.transpose(1, 0)), ("swapaxes", lambda a, b: a.swapaxes(0, 1)),
    ("squeeze", lambda a, b: a[None].squeeze(0)), ("flatten", lambda a, b: a.flatten()),
    ("ravel", lambda a, b: a.ravel()), ("astype", lambda a, b: a.astype(np.int8)),
    ("sum", lambda a, b: a.sum(1)), ("prod", lambda a, b: a.prod()),
    ("mean", lambda a, b: a.mean(0)), ("var", lambda a, b: mnp.var(a)),
    ("std", lambda a, b: a.std()), ("max", lambda a, b: a.max(0)), ("min", lambda a, b: a.min()),
    ("argmax", lambda a, b: a.argmax()), ("argmin", lambda a, b: a.argmin(1)),
    ("all", lambda a, b: (a > 0).all()), ("any", lambda a, b: (a > 0).any(0)),
    ("cumsum", lambda a, b: a.cumsum(1)), ("cumprod", lambda a, b: a.cumprod()),
    ("ptp", lambda a, b: a.ptp()), ("clip", lambda a, b: a.clip(1, 2)),
    ("round", lambda a, b: a.round()), ("conj", lambda a, b: a.conj()),
    ("real", lambda a, b: a.real), ("imag", lambda a, b: a.imag),
    ("dot", lambda a, b: a.dot(b.T)), ("sort", lambda a, b: b.sort()),
    ("argsort", lambda a, b: b.argsort()), ("take", lambda a, b: a.take(np.array([0, 4]))),
    ("repeat", lambda a, b: a.repeat(2)), ("diagonal", lambda a, b: a.diagonal()),
    ("trace", lambda a, b: a.trace()),
]


@pytest.mark.parametrize("name, fn", OPS, ids=[o[0] for o in OPS])
def test_make_jaxpr_of_operators_and_methods(name, fn):
    a = from_numpy(np.array([[1.0, 2.5, 3.0], [0.5, 2.0, 4.0]], np.float32))
    b = from_numpy(np.array([[2.0, 1.0, 3.0], [1.5, 0.5, 2.0]], np.float32))
    closed = mt.make_jaxpr(fn)(a, b)
    eager = fn(a, b)
    assert_close(closed(a, b)[0], eager, dtype=np.asarray(eager).dtype)
