"""jit(f)(args) equals the un-jitted f(args) — values, dtypes, shapes and weak types — for
every primitive (the NumPy code generator against the eager kernels), with the generator's
risky parts tested directly: buffer reuse through `out=` and in place, outputs that are
views of inputs or of each other, 0-d results, Python-scalar literals, integer division,
logistic's tails, float->int saturation, select_n and clamp. Inputs are never modified.

The example programs live in tests/jit/jit_cases.py (one or more per primitive).
"""

import contextlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax, tree_util
from mytorch.core.array import scalar_array
from mytorch.core.primitive import Primitive, registry
from tests.jit import jit_cases
from tests.jit.jit_cases import BF16, BOOL, CASES, DTYPES, F16, F32, F64, I32, U8, X64_DTYPES
from tests.strategies import arrays, shapes

_TOL = {F32: 2e-6, F64: 1e-12, F16: 1e-3, BF16: 8e-3, np.dtype(np.complex64): 2e-6,
        np.dtype(np.complex128): 1e-12}


# ---- comparing a jitted call with the eager one --------------------------------------------
@contextlib.contextmanager
def recording_binds():
    """The names of the primitives bound while the block runs."""
    seen, bind = set(), Primitive.bind

    def recording(self, *args, **params):
        seen.add(self.name)
        return bind(self, *args, **params)

    Primitive.bind = recording
    try:
        yield seen
    finally:
        Primitive.bind = bind


def _float64(a):
    """Floats as float64; complex values as float64 pairs (real, imaginary) on a new last
    axis, so each part gets the float tolerance (NumPy's complex loops round differently
    on its vectorised and scalar paths, an ulp apart)."""
    a = np.asarray(a)
    if a.dtype.kind == "c":
        return np.stack([a.real, a.imag], axis=-1).astype(np.float64)
    return a.astype(np.float64) if a.dtype.kind == "f" or a.dtype == BF16 else a


def assert_same(got, want, tol=None, what=""):
    """Same pytree, and per leaf the same shape, dtype, weak type and values (floats within
    a few ulps of the leaf's dtype; NaN where NaN, infinities equal)."""
    g_leaves, g_tree = tree_util.tree_flatten(got)
    w_leaves, w_tree = tree_util.tree_flatten(want)
    assert g_tree == w_tree, f"{what}: output structure {g_tree} != {w_tree}"
    for i, (g, w) in enumerate(zip(g_leaves, w_leaves)):
        where = f"{what} output {i}"
        assert isinstance(g, mt.Array), f"{where}: got {type(g).__name__}"
        assert (g.shape, g.dtype) == (w.shape, w.dtype), (
            f"{where}: {g.dtype}{list(g.shape)} != {w.dtype}{list(w.shape)}")
        assert g.weak_type == w.weak_type, f"{where}: weak_type {g.weak_type} != {w.weak_type}"
        ga, wa = _float64(g), _float64(w)
        if ga.dtype != np.float64:
            np.testing.assert_array_equal(ga, wa, err_msg=where)
            continue
        t = tol if tol is not None else _TOL.get(np.dtype(g.dtype), 1e-6)
        finite = np.isfinite(wa)
        scale = max(1.0, float(np.max(np.abs(wa[finite]), initial=0.0)))
        np.testing.assert_array_equal(np.isnan(ga), np.isnan(wa), err_msg=f"{where}: NaNs")
        np.testing.assert_array_equal(ga[~finite & ~np.isnan(wa)], wa[~finite & ~np.isnan(wa)],
                                      err_msg=f"{where}: infinities")
        np.testing.assert_allclose(ga[finite], wa[finite], rtol=t, atol=t * scale,
                                   err_msg=where)


def _as_arg(a):
    return mnp.asarray(a) if isinstance(a, np.ndarray | np.generic) else a


def _eager_arg(x):
    """What jit makes of an argument: Python scalars become weakly typed 0-d arrays."""
    return scalar_array(x) if isinstance(x, bool | int | float) else x


def check_jit(fn, args, tol=None, **jit_kwargs):
    """jit(fn)(*args) equals fn(*args) on the first (tracing) and second (cached) call, and
    leaves its inputs untouched. Returns the names of the primitives bound by the first
    calls of fn and jit(fn)."""
    xs = [_as_arg(a) for a in args]
    before = [np.array(x, copy=True) if isinstance(x, mt.Array) else None for x in xs]
    jitted = mt.jit(fn, **jit_kwargs)
    with recording_binds() as seen:  # jit inside fn may trace during the eager call
        want = fn(*[_eager_arg(x) for x in xs])
        got = jitted(*xs)
    assert_same(got, want, tol, "first call")
    assert_same(jitted(*xs), want, tol, "second call")
    for i, (x, b) in enumerate(zip(xs, before)):
        if b is not None:
            assert np.asarray(x).tobytes() == b.tobytes(), f"input {i} was modified"
    return seen


def with_buffers(fn, args, draw):
    """`fn` with some operands first routed through `x + zero` (a fresh intermediate the
    code generator owns and may overwrite in place) and some operands also returned (so
    they stay live after the primitive). `zero` is an extra input, so nothing folds it."""
    n = len(args)
    own = draw(st.lists(st.booleans(), min_size=n, max_size=n), label="owned operands")
    keep = draw(st.lists(st.booleans(), min_size=n, max_size=n), label="kept operands")
    zero_at, extra = {}, []
    for a, o in zip(args, own):
        if o and np.dtype(a.dtype) not in zero_at:
            zero_at[np.dtype(a.dtype)] = n + len(extra)
            extra.append(np.zeros((), a.dtype))

    def wrapped(*xs):
        ys = [_plus_zero(x, xs[zero_at[np.dtype(x.dtype)]]) if o else x
              for x, o in zip(xs[:n], own)]
        out = fn(*ys)
        kept = tuple(y for y, k in zip(ys, keep) if k)
        return (out, kept) if kept else out

    return wrapped, [*args, *extra]


def _plus_zero(x, zero):
    return lax.bitwise_or(x, zero) if x.dtype == BOOL else lax.add(x, zero)


# ---- every primitive ----------------------------------------------------------------------
CASE_IDS = [(name, i) for name in sorted(CASES) for i in range(len(CASES[name]))]


def test_every_primitive_has_a_jit_case():
    # primitives that test modules define for themselves are named test_* (test_passes.py);
    # a backend's own primitives appear only in the jaxprs its code generator rewrites
    # (tested with their rewrites: test_dot_update.py)
    missing = sorted(n for n, p in registry().items()
                     if n not in CASES and not n.startswith("test_") and p.kind != "backend")
    assert not missing, (
        f"primitives without a jit test case: {missing}; add example programs for them to "
        "CASES in tests/jit/jit_cases.py")


@pytest.mark.parametrize("name,i", CASE_IDS, ids=[f"{n}-{i}" for n, i in CASE_IDS])
@settings(max_examples=8)
@given(data=st.data())
def test_jit_matches_eager(name, i, data):
    fn, args = CASES[name][i](data.draw, DTYPES)
    fn, args = with_buffers(fn, args, data.draw)
    seen = check_jit(fn, args)
    assert name in seen, f"the example program for {name} does not bind it"


_X64_IDS = [c for c in CASE_IDS if c[0] not in jit_cases.COLLECTIVES]


@pytest.mark.parametrize("name,i", _X64_IDS, ids=[f"{n}-{i}" for n, i in _X64_IDS])
@settings(max_examples=3, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_jit_matches_eager_x64(x64, name, i, data):
    fn, args = CASES[name][i](data.draw, X64_DTYPES)
    fn, args = with_buffers(fn, args, data.draw)
    check_jit(fn, args)


@settings(max_examples=3)
@given(data=st.data())
def test_debug_callback_runs_every_call_with_the_runtime_values(data):
    log = jit_cases.CALLBACK_LOG
    fn, _ = jit_cases._debug_callback(data.draw, DTYPES)
    jitted = mt.jit(fn)
    log.clear()
    for k in range(3):
        jitted(mnp.full((2,), float(k)))
    assert [v.tolist() for v in log] == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]


# ---- buffer reuse, views and aliasing -------------------------------------------------------
def _reuse_programs():
    """name -> (fn, number of (n, n) float32 inputs)."""
    def later_use(x):  # y dies after z: z must not be written into y
        y = mnp.sin(x)
        z = mnp.exp(y)
        return z + y

    def view_then_inplace(x):  # t views y; cos(y) must not overwrite y
        y = mnp.sin(x)
        t = y.T
        return t, mnp.cos(y)

    def broadcast_of_dying(x):
        y = mnp.sin(x[0])
        b = mnp.broadcast_to(y, x.shape)
        return b, mnp.cos(y) * 2.0

    def slice_of_dying(x):
        y = mnp.exp(x)
        s = y[1:, ::2]
        return s, y * 3.0

    def pool_chain(x, w):
        a = mnp.sin(x)
        b = mnp.cos(a)
        c = a * b
        d = mnp.tanh(c) + b
        e = d * 0.5 - a
        f = mnp.exp(-e * e)
        return f, c, mnp.sum(d, axis=0)

    def ipow_view(x):
        y = mnp.sin(x)
        p = registry()["integer_pow"].bind(y, y=1)
        g = registry()["stop_gradient"].bind(y)
        return p, g, mnp.exp(y)

    def matmul_reuse(x, w):
        h = mnp.tanh(x @ w)
        g = h @ w.T
        return g + h, h

    def reshape_chain(x):
        y = mnp.sin(x)
        r = y.reshape(-1)
        return y, r, mnp.cos(r).reshape(x.shape)

    def logistic_dying(x):
        y = x * 3.0
        return lax.logistic(y), lax.logistic(x)

    def select_dying(x, w):
        a, b = mnp.sin(x), mnp.cos(w)
        return lax.select(a > b, a, b) * 2.0, a

    def select_bool_which_dying(x, w):  # bool cases: `which` has the output's dtype
        return lax.select_n(x > w, x > 0.5, w < 0.0)

    def select_which_is_a_case(x, w):
        m = x > w
        return lax.select_n(m, m, w < 0.0), lax.select_n(m, x < 0.0, m)

    def select_scalar_which(x, w):
        return lax.select_n(mnp.sum(x) > 0, mnp.sin(x), mnp.cos(w))

    def clamp_hi_dying(x, w):  # hi is an intermediate dying at clamp
        return lax.clamp(np.float32(0.0), x, mnp.sin(w))

    def clamp_lo_dying(x, w):
        return lax.clamp(mnp.sin(w) - 0.5, x, np.float32(0.5))

    def clamp_same_var(x):  # clamp(lo, y, y) == y whenever lo <= y or not
        y = mnp.sin(x)
        return lax.clamp(np.float32(0.25), y, y)

    def clamp_all_dying(x, w):
        lo, y, hi = mnp.sin(x) - 1.0, mnp.cos(x + w) * 2.0, mnp.sin(w) + 1.0
        return lax.clamp(lo, y, hi)

    def dot_kept_operand(x, w):
        a = mnp.sin(x)
        return a @ w, a + 1.0

    def scalar_results(x):
        return mnp.sum(x), x[0, 0] * 2.0, mnp.max(x) + 1.0, mnp.sum(x) * mnp.min(x)

    fns = [later_use, view_then_inplace, broadcast_of_dying, slice_of_dying, pool_chain,
           ipow_view, matmul_reuse, reshape_chain, logistic_dying, select_dying,
           select_bool_which_dying, select_which_is_a_case, select_scalar_which,
           clamp_hi_dying, clamp_lo_dying, clamp_same_var, clamp_all_dying, dot_kept_operand,
           scalar_results,
           lambda x: (x.T, x), lambda x: (x, x * 2.0), lambda x: x,
           lambda x: (mnp.sin(x), mnp.sin(x).reshape(-1)),
           lambda x: (x[::-1], x, x.reshape(-1), x.T * 1.0)]
    return {getattr(f, "__name__", "<lambda>") + str(k): f for k, f in enumerate(fns)}


REUSE = _reuse_programs()


@pytest.mark.parametrize("name", sorted(REUSE))
@settings(max_examples=6)
@given(n=st.integers(1, 4), data=st.data())
def test_buffer_reuse_programs(name, n, data):
    fn = REUSE[name]
    nargs = fn.__code__.co_argcount
    args = [data.draw(arrays(F32, (n, n), min_value=-3, max_value=3)) for _ in range(nargs)]
    check_jit(fn, args)


@settings(max_examples=10)
@given(data=st.data())
def test_same_input_passed_twice(data):
    x = data.draw(arrays(F32, (3, 3), min_value=-3, max_value=3))
    xa = mnp.asarray(x)
    for fn in (lambda a, b: a * b + a, lambda a, b: mnp.sin(a).T + mnp.cos(b),
               lambda a, b: (a, b, a - b), lambda a, b: (mnp.exp(a), b @ mnp.exp(a))):
        assert_same(mt.jit(fn)(xa, xa), fn(xa, xa))


def test_closed_over_constants_are_never_overwritten():
    c = mnp.asarray(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    k = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)

    def f(x):
        a = mnp.sin(c) * 2.0  # folds to a constant; later ops must not write into it
        b = a + x
        return b * k, a, mnp.exp(c + 0.0)

    jitted = mt.jit(f)
    x = mnp.ones((2, 3))
    want = f(x)
    for _ in range(3):
        assert_same(jitted(x), want)


def test_numpy_inputs_are_copied_not_aliased():
    n = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    jitted = mt.jit(lambda x: (x.T, x * 2.0))
    t, d = jitted(n)
    n[0, 0] = 100.0
    np.testing.assert_array_equal(np.asarray(t), np.arange(6.0).reshape(2, 3).T)
    np.testing.assert_array_equal(np.asarray(d), 2 * np.arange(6.0).reshape(2, 3))


# ---- literals, weak types and scalars -------------------------------------------------------
LITERAL_FNS = [
    lambda x: x * 2, lambda x: 2 - x, lambda x: x / 3, lambda x: x ** 2, lambda x: x + 1,
    lambda x: (x * 2.5, x > 1), lambda x: mnp.where(x > 0, x, 0), lambda x: x - 1 + x * 3,
    lambda x: mnp.maximum(x, 0) * 0.5, lambda x: -x * 1e30, lambda x: x + float("inf"),
    lambda x: mnp.where(x > 0, x, float("nan")), lambda x: (x * 0.0, mnp.sum(x) + 1),
]


@settings(max_examples=25)
@given(fn=st.sampled_from(LITERAL_FNS),
       dt=st.sampled_from([F32, F16, BF16, I32, U8]), shape=shapes(max_dims=2), data=st.data())
def test_python_scalar_literals_keep_dtypes_and_weak_types(fn, dt, shape, data):
    x = data.draw(arrays(dt, shape, min_value=-20, max_value=20))
    check_jit(fn, [x])


@pytest.mark.parametrize("value", [2.0, 3, True, -0.0, float("inf")])
def test_python_scalar_arguments_are_weak(value):
    for fn in (lambda a: a * 2, lambda a: (a, a + mnp.ones(2, np.float16)), lambda a: a == a):
        check_jit(fn, [value])


def test_zero_d_results_are_arrays_of_the_right_dtype():
    fns = [lambda x: mnp.sum(x), lambda x: x[1] * 2, lambda x: (x[0], x[0] + x[1]),
           lambda x: mnp.argmax(x), lambda x: mnp.all(x > 0), lambda x: x[0] > 0]
    for dt in (F32, I32, U8, F16):
        for fn in fns:
            check_jit(fn, [np.arange(3).astype(dt)])


# ---- numerics the generator must get right -------------------------------------------------
def _c_div(x, y):
    """Integer division rounding toward zero (C/XLA), on Python ints; 0 for y == 0."""
    return 0 if y == 0 else abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)


@settings(max_examples=20)
@given(dt=st.sampled_from([I32, U8, np.dtype(np.int8)]), shape=shapes(max_dims=2),
       data=st.data())
def test_integer_division_and_remainder(dt, shape, data):
    x = data.draw(arrays(dt, shape, min_value=-100, max_value=100))
    y = data.draw(arrays(dt, shape, min_value=-7, max_value=7))
    q, r = mt.jit(lambda a, b: (lax.div(a, b), lax.rem(a, b)))(x, y)
    want_q = np.array([_c_div(int(a), int(b)) for a, b in zip(x.flat, y.flat)]).reshape(shape)
    want_r = np.array([0 if b == 0 else int(a) - _c_div(int(a), int(b)) * int(b)
                       for a, b in zip(x.flat, y.flat)]).reshape(shape)
    np.testing.assert_array_equal(np.asarray(q), want_q.astype(dt))
    np.testing.assert_array_equal(np.asarray(r), want_r.astype(dt))
    safe = np.where(y == 0, 1, y).astype(dt)
    fq, fr = mt.jit(lambda a, b: (a // b, a % b))(x, safe)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.asarray(fq), np.floor_divide(x, safe))
        np.testing.assert_array_equal(np.asarray(fr), np.mod(x, safe))


def test_float_remainder_follows_fmod_and_mod():
    x = np.array([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, np.inf, 3.0], np.float32)
    y = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 2.0, np.inf], np.float32)
    r, m = mt.jit(lambda a, b: (lax.rem(a, b), a % b))(x, y)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.asarray(r), np.fmod(x, y))
        np.testing.assert_array_equal(np.signbit(np.asarray(r)), np.signbit(np.fmod(x, y)))
        np.testing.assert_array_equal(np.asarray(m)[:6], np.mod(x, y)[:6])


@pytest.mark.parametrize("dt", [F32, F64])
def test_logistic_tails(dt, request):
    if dt == F64:
        request.getfixturevalue("x64")
    x = np.array([-1000, -100, -88, -80, -30, -1, 0, 1, 30, 80, 100, 1000, np.inf, -np.inf,
                  np.nan], dt)
    with np.errstate(all="ignore"):
        wide = x.astype(np.float64)
        want = np.where(wide < 0, np.exp(wide) / (1 + np.exp(wide)), 1 / (1 + np.exp(-wide)))
    tiny = np.finfo(dt).tiny
    zero = np.zeros_like(x)
    # on the input, and on an intermediate (x + 0, computed in place)
    for fn in (lambda a, z: lax.logistic(a), lambda a, z: lax.logistic(a + z)):
        got = np.asarray(mt.jit(fn)(x, zero)).astype(np.float64)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(np.isnan(got), np.isnan(x))
        ok = ~np.isnan(x)
        assert np.all((got[ok] >= 0) & (got[ok] <= 1))
        np.testing.assert_allclose(got[ok], want[ok], rtol=4 * np.finfo(dt).eps, atol=tiny)


def _saturate(x, dt):
    """float -> integer dtype: truncate, NaN -> 0, clip to the dtype's range."""
    info = np.iinfo(dt)
    out = []
    for v in np.asarray(x, np.float64).flat:
        if np.isnan(v):
            out.append(0)
        elif v >= info.max:
            out.append(info.max)
        elif v <= info.min:
            out.append(info.min)
        else:
            out.append(int(np.trunc(v)))
    return np.array(out, dtype=dt).reshape(np.shape(x))


@pytest.mark.parametrize("src", [F32, F16, BF16])
@pytest.mark.parametrize("dst", [I32, U8, np.dtype(np.int8), np.dtype(np.uint32), BOOL])
def test_float_to_int_conversion_saturates(src, dst):
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 300.0, -300.0, 255.9, -1.5, -0.5, 0.5,
                  2.7, -0.0, 127.5, 65504.0], np.float32).astype(src)
    for fn in (lambda a: lax.convert_element_type(a, dst),
               lambda a: lax.convert_element_type(a * 1.0, dst)):
        got = np.asarray(mt.jit(fn)(x))
        assert got.dtype == dst
        want = (x.astype(np.float64) != 0) if dst == BOOL else _saturate(x, dst)
        np.testing.assert_array_equal(got, want)


def test_float64_to_int64_conversion_saturates(x64):
    x = np.array([np.nan, np.inf, -np.inf, 1e19, -1e19, 2.0 ** 62, -2.5], np.float64)
    for dst in (np.dtype(np.int64), np.dtype(np.int32)):
        got = np.asarray(mt.jit(lambda a: lax.convert_element_type(a, dst))(x))
        np.testing.assert_array_equal(got, _saturate(x, dst))


@settings(max_examples=20)
@given(dt=st.sampled_from([F32, I32, U8, F16]), shape=shapes(max_dims=2), data=st.data())
def test_select_n_and_clamp_against_numpy(dt, shape, data):
    which = data.draw(arrays(BOOL, shape))
    a, b = (data.draw(arrays(dt, shape, min_value=0, max_value=50, allow_nan=True))
            for _ in range(2))
    lo, hi = np.asarray(10, dt), np.asarray(40, dt)
    sel, cl = mt.jit(lambda w, p, q: (lax.select(w, p, q), lax.clamp(lo, p * 1, hi)))(
        which, a, b)
    np.testing.assert_array_equal(np.asarray(sel), np.where(which, a, b))
    with np.errstate(all="ignore"):
        want = np.minimum(np.maximum(a, lo), hi)
    np.testing.assert_array_equal(np.asarray(cl), want)


# ---- the generated text --------------------------------------------------------------------
def test_generated_code_calls_numpy_and_reuses_buffers():
    f = mt.jit(lambda x, w: mnp.tanh(x @ w) * 2.0 + 1.0)
    text = f.lower(mnp.ones((3, 4)), mnp.ones((4, 5))).as_text()
    assert "def " in text and "np.matmul" in text and "np_tanh(" in text
    assert "out=" in text  # the dead product is overwritten in place
