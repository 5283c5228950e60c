"""NumPy-level parity with JAX: Python ints outside a narrow dtype, arrays made under x64
used without it, round(), mt.scipy, piecewise and vectorize.

Expected values written literally come from JAX 0.10; the others are NumPy references."""

import math
import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from tests.strategies import arrays, assert_close, shapes

I8, U8, I16, U16, I32, U32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16,
                                                     np.int32, np.uint32))
F16, F32, F64, I64, U64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int64,
                                                  np.uint64))
BOOL = np.dtype(np.bool_)
NARROW_INTS = [I8, U8, I16, U16, I32, U32]

pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")


# ---- Python ints outside a narrow dtype (issue 13, item 14) ---------------------------------
def test_out_of_range_python_ints_follow_jax():
    u8 = mnp.array([1, 2, 250], mnp.uint8)
    m = mnp.array([True, False, True])
    # JAX 0.10 results, literally
    assert_close(u8 + 256, [1, 2, 250], dtype=U8)
    assert_close(u8 + 257, [2, 3, 251], dtype=U8)
    assert_close(u8 + (-1), [0, 1, 249], dtype=U8)
    assert_close(mnp.int8(1) * 1000, -24, dtype=I8)
    assert_close(mnp.array([1, -2, 100], mnp.int8) * 1000, [-24, 48, -96], dtype=I8)
    assert_close(mnp.where(m, u8, -1), [1, 255, 250], dtype=U8)
    assert_close(mnp.add(u8, 300), [45, 46, 38], dtype=U8)
    assert_close(u8 == 256, [False] * 3, dtype=BOOL)
    assert_close(u8 < 256, [False] * 3, dtype=BOOL)
    assert_close(mnp.maximum(u8, 300), [44, 44, 250], dtype=U8)
    assert_close(mnp.full(3, 300, mnp.uint8), [44, 44, 44], dtype=U8)
    assert_close(mnp.full_like(u8, -1), [255, 255, 255], dtype=U8)
    assert_close(u8.at[0].set(300), [44, 2, 250], dtype=U8)
    assert_close(mnp.clip(u8, 0, 300), [1, 2, 44], dtype=U8)
    assert_close(mt.jit(lambda x: x + 256)(u8), [1, 2, 250], dtype=U8)
    assert_close(u8 % 256, [0, 0, 0], dtype=U8)
    assert_close(u8 ** 256, [1, 0, 0], dtype=U8)
    assert_close(u8 & 256, [0, 0, 0], dtype=U8)
    assert_close(mnp.power(u8, 257), [1, 0, 0], dtype=U8)
    assert_close(256 - u8, [255, 254, 6], dtype=U8)
    assert_close(mnp.select([u8 > 1], [u8], 300), [44, 2, 250], dtype=U8)
    assert_close(mnp.minimum(u8, -1), [1, 2, 250], dtype=U8)
    assert_close(mnp.isclose(u8, 256), [False] * 3, dtype=BOOL)
    assert_close(u8.at[0].add(300), [45, 2, 250], dtype=U8)
    assert_close(mnp.array([1], mnp.int16) + 40000, [-25535], dtype=I16)
    assert_close(mnp.pad(u8, 1, constant_values=300), [44, 1, 2, 250, 44], dtype=U8)
    assert_close(mnp.fmax(u8, 300), [44, 44, 250], dtype=U8)
    assert_close(mnp.uint32(1) + (-1), 0, dtype=U32)
    assert_close(mnp.float16(1) + 10**6, np.inf, dtype=F16)
    # functions with float results take the int straight to the float
    assert_close(mnp.true_divide(u8, 256), [0.00390625, 0.0078125, 0.9765625], dtype=F32)
    assert_close(u8 / 256, [0.00390625, 0.0078125, 0.9765625], dtype=F32)
    assert_close(mnp.heaviside(u8, 300), [1.0, 1.0, 1.0], dtype=F32)
    assert_close(mnp.logaddexp(u8, 256), [256.0, 256.0, 256.00247], dtype=F32, rtol=1e-6)
    assert_close(mnp.arctan2(u8, 256), [0.00390623, 0.00781234, 0.77354103], dtype=F32,
                 rtol=1e-6)


def test_python_ints_outside_the_default_int_overflow():
    # JAX 0.10 raises OverflowError for these (the int is a weak int32 without x64)
    u8 = mnp.array([1, 2, 250], mnp.uint8)
    for fn in (lambda: u8 + 2**31, lambda: mnp.int32(1) + 2**31, lambda: u8 + (-(2**31) - 1),
               lambda: mnp.float32(1) + 2**40, lambda: mnp.where(u8 > 1, u8, 2**31),
               lambda: u8 < 2**32, lambda: mnp.array(2**31)):
        with pytest.raises(OverflowError, match="2147483648|2147483649|4294967296|1099511627776"):
            fn()
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for uint8"):
        mnp.array(300, mnp.uint8)  # an explicit dtype: JAX raises too
    with pytest.raises(OverflowError, match="Python integer -1 out of bounds for uint8"):
        mnp.asarray(-1, mnp.uint8)
    with mt.config.override(enable_x64=True):  # then the default int is int64
        assert_close(u8 + 2**32, [1, 2, 250], dtype=U8)
        with pytest.raises(OverflowError):
            u8 + 2**63


BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
          "floordiv": operator.floordiv, "mod": operator.mod, "and": operator.and_,
          "or": operator.or_, "xor": operator.xor, "maximum": mnp.maximum,
          "minimum": mnp.minimum, "lt": operator.lt, "eq": operator.eq, "ge": operator.ge}
NP_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
             "floordiv": np.floor_divide, "mod": np.remainder, "and": np.bitwise_and,
             "or": np.bitwise_or, "xor": np.bitwise_xor, "maximum": np.maximum,
             "minimum": np.minimum, "lt": np.less, "eq": np.equal, "ge": np.greater_equal}


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_python_int_wraps_into_a_narrow_dtype(data):
    """Any int32-representable Python int meets a narrow int array as the int wrapped into
    the array's dtype (the reference: NumPy on the wrapped value)."""
    dt = data.draw(st.sampled_from(NARROW_INTS), label="dtype")
    x = data.draw(arrays(dt, shapes(max_dims=2)), label="x")
    v = data.draw(st.integers(-(2**31), 2**31 - 1), label="v")
    name = data.draw(st.sampled_from(sorted(BINARY)), label="op")
    reflected = data.draw(st.booleans(), label="reflected")
    wrapped = np.asarray(v).astype(dt)
    if name in ("floordiv", "mod") and wrapped == 0 and not reflected:
        return  # integer division by zero is unspecified
    if name in ("floordiv", "mod") and reflected and np.any(x == 0):
        x = np.where(x == 0, np.ones_like(x), x)
    lhs, rhs = (wrapped, x) if reflected else (x, wrapped)
    with np.errstate(all="ignore"):
        expected = NP_BINARY[name](lhs, rhs)
    xa = mnp.asarray(x)
    out = BINARY[name](v, xa) if reflected else BINARY[name](xa, v)
    assert_close(out, np.asarray(expected).astype(expected.dtype if expected.dtype == BOOL
                                                  else dt))
    jitted = mt.jit(lambda a: BINARY[name](v, a) if reflected else BINARY[name](a, v))(xa)
    assert_close(jitted, np.asarray(out), dtype=out.dtype)


# ---- arrays made under x64, used without it (issue 13, item 11) ------------------------------
def test_arrays_made_under_x64_narrow_on_use():
    with mt.config.override(enable_x64=True):
        b = mnp.arange(3, dtype=mnp.int64)
        f = mnp.ones(3, mnp.float64)
        u = mnp.ones(2, mnp.uint64)
    # JAX 0.10 gives these dtypes: a promotion with another type narrows to 32 bits
    assert_close(b + 1, [1, 2, 3], dtype=I32)
    assert_close(f + 1, [2, 2, 2], dtype=F32)
    assert_close(u + 1, [2, 2], dtype=U32)
    assert_close(b + mnp.int32(1), [1, 2, 3], dtype=I32)
    assert_close(f * mnp.float32(2), [2, 2, 2], dtype=F32)
    assert_close(mnp.maximum(b, 1), [1, 1, 2], dtype=I32)
    assert_close(b // 2, [0, 0, 1], dtype=I32)
    assert_close(b / 2, [0, 0.5, 1], dtype=F32)
    assert_close(mnp.where(b > 0, b, 0), [0, 1, 2], dtype=I32)
    assert_close(b > 1, [False, False, True], dtype=BOOL)
    assert_close(mt.jit(lambda x: x + 1)(b), [1, 2, 3], dtype=I32)
    assert_close(mt.jit(lambda x: x * 2)(f), [2, 2, 2], dtype=F32)
    assert_close(mt.vmap(lambda x: x * 2)(b), [0, 2, 4], dtype=I32)
    assert_close(mnp.clip(b, 0, 1), [0, 1, 1], dtype=I32)
    # ... while an operation within one 64-bit dtype keeps it (JAX 0.10: b * b is int64)
    assert_close(b * b, [0, 1, 4], dtype=I64)
    assert_close(f @ f, 3.0, dtype=F64)
    assert_close(mnp.sin(f), np.sin(np.ones(3)), dtype=F64)
    assert_close(mt.lax.add(b, 1), [1, 2, 3], dtype=I64)
    assert_close(mnp.mean(f), 1.0, dtype=F64)  # (JAX: float32) either way, no error
    # the gradient of such an array keeps its dtype (JAX 0.10: float64), with no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_close(mt.grad(lambda x: (x * x).sum())(f), [2, 2, 2], dtype=F64)
        # arrays like it and updates of it keep its dtype too (JAX 0.10: int64)
        assert_close(mnp.zeros_like(b), [0, 0, 0], dtype=I64)
        assert_close(mnp.full_like(b, 7), [7, 7, 7], dtype=I64)
        assert_close(b.at[0].set(5), [5, 1, 2], dtype=I64)
        assert_close(b.at[1].add(2), [0, 3, 2], dtype=I64)
        assert_close(mt.jit(lambda v: v.at[0].set(5))(b), [5, 1, 2], dtype=I64)


# ---- round, mt.scipy --------------------------------------------------------------------------
@settings(max_examples=50, deadline=None)
@given(v=st.floats(-6e4, 6e4, allow_nan=False), dt=st.sampled_from([F32, F16, I32, I8, BOOL]))
def test_round_of_a_0d_array_is_a_python_int(v, dt):
    with np.errstate(all="ignore"):
        x = mnp.asarray(np.asarray(v).astype(dt))
    out = round(x)
    assert type(out) is int and out == round(np.asarray(x).item())  # Python's own round
    if dt != BOOL:
        assert_close(round(x, 1), np.round(np.asarray(x), 1), dtype=x.dtype)


def test_round_of_arrays_and_tracers():
    # JAX 0.10: round(Array([1.5, 2.5])) is int32 [2, 2]; round(x) of a tracer is int32
    assert_close(round(mnp.array([1.5, 2.5])), [2, 2], dtype=I32)
    assert_close(mt.jit(lambda x: round(x))(2.7), 3, dtype=I32)
    assert round(mnp.array(2.5)) == 2 and round(mnp.array(True)) == 1
    assert math.floor(mnp.array(2.5)) == 2 and math.ceil(mnp.array(2.5)) == 3


def test_import_mytorch_makes_scipy_available():
    import subprocess
    import sys

    code = ("import mytorch as mt, numpy as np; "
            "print(float(mt.scipy.special.logsumexp(np.zeros(4, np.float32))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert abs(float(out.stdout) - math.log(4)) < 1e-6


# ---- piecewise, vectorize (issue 13, item 18) ---------------------------------------------
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_piecewise_matches_numpy(data):
    x = data.draw(arrays(F32, shapes(max_dims=2), min_value=-3, max_value=3), label="x")
    n = data.draw(st.integers(1, 3), label="conditions")
    cuts = data.draw(st.lists(st.floats(-3, 3, width=32), min_size=n, max_size=n))
    conds = [x < c for c in cuts]
    fns = [lambda v: v * 2, lambda v: -v, 7.5, lambda v: v * v][: n + data.draw(
        st.integers(0, 1))]
    if len(fns) < n:
        fns = fns + [1.0] * (n - len(fns))
    out = mnp.piecewise(mnp.asarray(x), [mnp.asarray(c) for c in conds], fns)
    assert_close(out, np.piecewise(x, conds, fns), dtype=F32)
    jitted = mt.jit(lambda v: mnp.piecewise(v, [v < c for c in cuts], fns))(mnp.asarray(x))
    assert_close(jitted, np.piecewise(x, conds, fns), dtype=F32)


def test_piecewise_details():
    x = np.array([-2.0, -0.5, 0.0, 0.5, 2.0], np.float32)
    # one condition given as an array, not a list; an int x keeps its dtype (as JAX)
    assert_close(mnp.piecewise(x, x > 0, [lambda v: v + 1]), np.piecewise(x, x > 0,
                 [lambda v: v + 1]), dtype=F32)
    xi = np.arange(-2, 3, dtype=np.int32)
    assert_close(mnp.piecewise(xi, [xi < 0], [lambda v: v * 1.7, 5]), [-3, -1, 5, 5, 5],
                 dtype=I32)
    # extra arguments reach the functions; gradients take the selected branch
    assert_close(mnp.piecewise(x, [x < 0], [lambda v, k: v * k, lambda v, k: v + k], 3.0),
                 np.where(x < 0, x * 3, x + 3), dtype=F32)
    g = mt.grad(lambda v: mnp.piecewise(v, [v < 0], [lambda t: -t, lambda t: t * t]).sum())
    assert_close(g(mnp.asarray(x)), np.where(x < 0, -1.0, 2 * x), dtype=F32)
    with pytest.raises(ValueError, match="piecewise: with 2 condition"):
        mnp.piecewise(x, [x < 0, x > 1], [1.0])


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_vectorize_matches_numpy_vectorize(data):
    s1 = data.draw(shapes(max_dims=3, max_side=3), label="s1")
    s2 = data.draw(st.sampled_from([s1, s1[1:], (1,) + s1[1:], ()]), label="s2")
    x = data.draw(arrays(F32, s1, min_value=-2, max_value=2))
    y = data.draw(arrays(F32, s2, min_value=-2, max_value=2))

    def f(a, b):
        return a * b + 1.0

    out = mnp.vectorize(f)(x, y)
    assert_close(out, np.vectorize(f, otypes=[np.float32])(x, y), dtype=F32, rtol=1e-6)
    sig = mnp.vectorize(lambda a, b: (a * b).sum(), signature="(n),(n)->()")
    m = data.draw(arrays(F32, s1 + (2,), min_value=-2, max_value=2))
    v = data.draw(arrays(F32, (2,), min_value=-2, max_value=2))
    ref = np.vectorize(lambda a, b: (a * b).sum(), signature="(n),(n)->()",
                       otypes=[np.float32])(m, v)
    assert_close(sig(m, v), ref.astype(np.float32), dtype=F32, rtol=1e-5, atol=1e-6)


def test_vectorize_signature_excluded_and_errors():
    calls = []

    def matvec(m, v):
        calls.append(m.shape)
        return m @ v

    mv = mnp.vectorize(matvec, signature="(m,n),(n)->(m)")
    m = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    v = np.ones((5, 1, 4), np.float32)
    ref = np.einsum("bmn,cxn->cbm", m, v)
    assert_close(mv(m, v), ref, dtype=F32)
    assert calls[-1] == (3, 4)  # called once on the core dims (traced under vmap)
    two = mnp.vectorize(lambda a: (a.min(), a.max()), signature="(n)->(),()")
    lo, hi = two(m)
    assert_close(lo, m.min(-1), dtype=F32) and assert_close(hi, m.max(-1), dtype=F32)
    scaled = mnp.vectorize(lambda a, k, *, p: a * k + p, excluded={1, "p"})
    assert_close(scaled(np.arange(3.0, dtype=np.float32), 2.0, p=1.0), [1, 3, 5], dtype=F32)
    pick = mnp.vectorize(lambda a, idx: a[idx], excluded={1}, signature="(n)->()")
    assert_close(pick(m, 2), m[..., 2], dtype=F32)
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'n'"):
        mv(m, np.ones(3, np.float32))
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        mnp.vectorize(matvec, signature="(m,n)(n)->(m)")(m, v)
    with pytest.raises(ValueError, match="output shape .* does not match"):
        mnp.vectorize(lambda a: a, signature="(n)->()")(m)
    with pytest.raises(TypeError, match="expected 2 positional arguments, got 1"):
        mv(m)
    with pytest.raises(TypeError, match="excluded must hold ints and strs"):
        mnp.vectorize(matvec, excluded={1.5})


def test_no_warnings_from_plain_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mnp.vectorize(lambda a: a + 1)(np.ones(3, np.float32))
        mnp.piecewise(np.ones(3, np.float32), [np.ones(3, bool)], [lambda v: v])
