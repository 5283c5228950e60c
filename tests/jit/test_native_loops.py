"""Compiled loops for large fused runs (backends/numpy/native.py) against the un-jitted
program: every fusable elementwise primitive and dtype (one compile per dtype, the primitives
side by side in one run), edge values, broadcast, strided and 0-d operands, results written
over donated inputs, random programs, and the fallback to NumPy ufunc blocks.

Arithmetic, comparisons, conversions and bit operations must match the eager NumPy kernels
bit for bit; functions computed by a vector math library (exp, tanh, ...) within a few ulp.
"""

import functools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.backends.numpy import fusion, fusion_c, native
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import registry

pytestmark = pytest.mark.skipif(not native.available(),
                                reason=f"no compiled loops here: {native.unavailable_reason()}")

N = fusion.MIN_SIZE  # the smallest run that is fused
P = registry()
# computed by libm / libmvec (or from them), not exactly rounded: compared within ULPS
TRANSCENDENTAL = {"acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "cos",
                  "cosh", "digamma", "erf", "erf_inv", "erfc", "exp", "exp2", "expm1",
                  "lgamma", "log", "log1p", "logistic", "pow", "sin", "sinh", "tan", "tanh",
                  "rsqrt",
                  "integer_pow3"}  # x*x*x under jit (NumPy's square times x), pow eagerly
ULPS = {np.dtype(np.float32): 4, np.dtype(np.float64): 4}
# the dtypes NumPy computes natively (the code generator computes float16 and bfloat16 in
# float32 and rounds, outside fused runs)
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int8, np.uint16, np.bool_]


def _edge_values(dt, rng):
    """N values of `dt`: edge cases first (NaN, infinities, signed zeros, extremes), then
    random ones."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, N).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        edge = np.array([0, 1, info.max, info.min, info.max - 1, 2, 3, 7], dtype=dt)
        out = rng.integers(info.min, int(info.max) + 1, N, dtype=dt)
        if dt.kind == "i":
            edge = np.concatenate([edge, np.array([-1, -2, -7], dtype=dt)])
    else:
        real = np.dtype(np.float32) if dt.kind == "c" else dt
        info = np.finfo(real)
        edge = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, info.max,
                         -info.max, info.tiny, info.smallest_subnormal, 2.0, 3.0, 1e-3],
                        dtype=real)
        out = (rng.standard_normal(N) * 3).astype(real)
        if dt.kind == "c":
            edge = edge + 1j * edge[::-1]
            out = out + 1j * (rng.standard_normal(N) * 3).astype(real)
    out = out.astype(dt)
    out[:edge.size] = edge
    return out


def _accepts(prim, dt, n, params):
    try:
        prim.abstract_eval(*[ShapedArray((), dt)] * n, **params)
    except (TypeError, ValueError):
        return False
    return True


def _ops(dt):
    """[(label, name, nargs, params)] of the elementwise primitives taking `dt` operands."""
    dt = np.dtype(dt)
    out = []
    for name in sorted(p.name for p in P.values() if p.kind == "elementwise"):
        prim = P[name]
        variants = [{}]
        if name == "integer_pow":
            variants = [{"y": 2}, {"y": 3}]
        elif name == "round":
            variants = [{"rounding_method": 0}, {"rounding_method": 1}]
        elif name == "convert_element_type":
            variants = [{"new_dtype": np.dtype(t), "weak_type": False}
                        for t in (np.float32, np.int32, np.bool_, np.float64) if t != dt]
        elif name in ("bitcast_convert_type", "select_n", "clamp", "complex"):
            continue  # other operand dtypes or counts: checked separately below
        for params in variants:
            for n in (1, 2):
                if _accepts(prim, dt, n, params) and _has_c(prim, dt, n, params):
                    label = name + (str(params["y"]) if name == "integer_pow" else "")
                    out.append((label, name, n, params))
                    break
    return out


def _has_c(prim, dt, n, params):
    """Whether the primitive has a C expression for `dt` (complex dtypes are not tested:
    runs of them are not compiled)."""
    from mytorch.backends.cupy import expressions as cx

    out = prim.abstract_eval(*[ShapedArray((), dt)] * n, **params)
    out = out[0] if isinstance(out, (list, tuple)) else out
    try:
        cx.expression(prim, [dt] * n, out.dtype, **params)
    except TypeError:
        assert dt.kind == "c", f"{prim.name} has no C expression for {dt}"
        return False
    return True


def _ulps(a, b):
    """|a - b| in units in the last place of their float dtype (NaN where either is)."""
    width = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia, ib = (x.view(width).astype(np.int64) for x in (a, b))
    top = np.int64(np.iinfo(width).min)
    ia = np.where(ia < 0, top - ia, ia)
    ib = np.where(ib < 0, top - ib, ib)
    return np.abs(ia - ib)


def _assert_matches(name, got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, name
    if got.dtype.kind == "c":
        for part in (np.real, np.imag):
            _assert_matches(name, part(got), part(want))
        return
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{name}: NaN positions")
    if name not in TRANSCENDENTAL:
        np.testing.assert_array_equal(got.view(f"u{got.dtype.itemsize}")[~nan],
                                      want.view(f"u{want.dtype.itemsize}")[~nan],
                                      err_msg=f"{name}: not bit for bit")
        return
    ulps = _ulps(got[~nan], want[~nan])
    worst = int(ulps.max()) if ulps.size else 0
    assert worst <= ULPS[got.dtype], f"{name}: {worst} ulp from eager"


def _jit_matches_eager(f, args, names):
    """Run `f` eagerly and jitted; check a compiled loop ran and each output matches."""
    mt.clear_caches()
    want = f(*args)
    jf = mt.jit(f)
    text = jf.lower(*args).compile().as_text()
    assert "_nat" in text, text
    got = jf(*args)
    for name, g, w in zip(names, got, want, strict=True):
        _assert_matches(name, g, w)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_elementwise_primitive_matches_eager(dt, request):
    if np.dtype(dt).itemsize == 8 or np.dtype(dt) == np.complex128:
        request.getfixturevalue("x64")
    rng = np.random.default_rng(0)
    x, y = _edge_values(dt, rng), _edge_values(dt, rng)[::-1].copy()
    if np.dtype(dt).kind in "iu":  # shift amounts and powers in range as well as outside
        y[N // 2:] = rng.integers(0, 9, N - N // 2).astype(dt)
    ops = _ops(dt)
    assert len(ops) > 10
    for lo in range(0, len(ops), 24):  # operands of one ufunc are limited (native.MAX_ARGS)
        chunk = ops[lo:lo + 24]

        def f(x, y, chunk=chunk):
            return [P[name].bind(*(x, y)[:n], **params) for _, name, n, params in chunk]

        _jit_matches_eager(f, [mnp.asarray(x), mnp.asarray(y)], [c[0] for c in chunk])


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.uint8], ids=lambda d: np.dtype(d).name)
def test_select_clamp_bitcast_and_mixed_dtypes(dt):
    rng = np.random.default_rng(1)
    x, y = _edge_values(dt, rng), _edge_values(dt, rng)[::-1].copy()
    c = rng.integers(0, 2, N).astype(bool)
    k = rng.integers(0, 3, N).astype(np.int32)
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize]

    def f(x, y, c, k):
        lo = mnp.minimum(x, y)
        return [lax.select_n(c, x, y), lax.select_n(k, x, y, lo), lax.clamp(lo, x, y),
                lax.bitcast_convert_type(x, width), mnp.where(c, x.astype(np.float32), 0.5),
                x.astype(np.float64) * 2, (x > y) & c]

    _jit_matches_eager(f, [mnp.asarray(a) for a in (x, y, c, k)], list("scbbwmc"))


def test_broadcast_zero_d_and_strided_operands():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((512, 1024)).astype(np.float32)
    b = rng.standard_normal(1024).astype(np.float32)
    col = rng.standard_normal((512, 1)).astype(np.float32)
    s = np.float32(0.75)

    def f(x, b, col, s):
        h = mnp.maximum(x + b, 0.0) * s - col
        return [h, mnp.tanh(h) + x * x, h > s]

    args = [x, b, col, s]
    _jit_matches_eager(f, [mnp.asarray(a) for a in args], ["h", "tanh", "gt"])
    # the same compiled function on a transposed (Fortran-ordered) and a sliced input
    jf = mt.jit(f)
    for xs in (np.asfortranarray(x), rng.standard_normal((512, 2048)).astype(np.float32)[:, ::2]):
        for g, w in zip(jf(xs, b, col, s), f(mnp.asarray(xs), b, col, s), strict=True):
            _assert_matches("strided", g, w)


def test_results_written_over_donated_inputs():
    """An Adam-like update with donated state: outputs may be written over inputs the loop
    has finished reading; three distinct results that match eager."""
    rng = np.random.default_rng(3)
    shape = (N // 256, 256)
    p, m, v, g = (rng.standard_normal(shape).astype(np.float32) for _ in range(4))
    v = np.abs(v)

    def adam(p, m, v, g):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        return p - 0.01 * m / (mnp.sqrt(v) + 1e-8), m, v

    want = adam(*(mnp.asarray(a) for a in (p, m, v, g)))
    step = mt.jit(adam, donate_argnums=(0, 1, 2))
    assert "_nat" in step.lower(p, m, v, g).compile().as_text()
    for _ in range(2):
        got = step(*(mnp.asarray(a.copy()) for a in (p, m, v)), mnp.asarray(g))
        assert len({np.asarray(o).ctypes.data for o in got}) == 3
        for name, a, b in zip("pmv", got, want, strict=True):
            _assert_matches(name, a, b)


# well-conditioned steps only: a chain compiled with libmvec differs from eager by a few ulp
# per transcendental step, which a discontinuous step (floor, a compare) or a division by
# a value near zero would magnify without bound
UNARY = [mnp.tanh, lambda x: mnp.exp(mnp.tanh(x)), lambda x: mnp.sin(mnp.tanh(x)),
         lax.logistic, mnp.abs, mnp.negative, lambda x: mnp.sqrt(mnp.abs(x) + 1.0),
         lambda x: x * 0.5, lambda x: 1.0 - x]
BINARY = [mnp.add, mnp.subtract, lambda a, b: mnp.tanh(a) * b, mnp.maximum, mnp.minimum,
          lambda a, b: a / (1.0 + b * b), lambda a, b: mnp.maximum(a, b * 0.5)]


@settings(max_examples=6, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, len(UNARY) - 1),
                                st.integers(0, len(BINARY) - 1), st.integers(0, 10 ** 6)),
                      min_size=2, max_size=6),
       n_out=st.integers(1, 3), dt=st.sampled_from([np.float32, np.float64]))
def test_random_chains_match_eager(steps, n_out, dt):
    """Chains of unary and binary ops (some intermediates escape the run) compiled into one
    loop match the un-jitted chain to a few ulp per transcendental step."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal(N).astype(dt)
    y = rng.standard_normal(N).astype(dt)

    def f(x, y):
        vals = [x, y]
        for u, b, pick in steps:
            a = UNARY[u](vals[pick % len(vals)])
            vals.append(BINARY[b](a, vals[(pick // 7) % len(vals)]))
        return tuple(vals[-n_out:])

    with mt.config.override(enable_x64=dt == np.float64):
        want = f(mnp.asarray(x), mnp.asarray(y))
        got = mt.jit(f)(x, y)
    tol = 1e-5 if dt == np.float32 else 1e-12
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype == dt
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        finite = np.isfinite(w)  # a difference of a few ulp, cancelled, is absolute
        scale = np.abs(w[finite]).max() if finite.any() else 1.0
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale)


def test_failed_build_falls_back(monkeypatch):
    """A compiler failure warns once, naming the reason; the function compiled with loops
    computes them with the eager kernels instead, and later compiles use NumPy ufunc
    blocks; the values match eager throughout."""
    def fail(*args, **kwargs):
        raise native.NativeCompileError("loop.cc:1: error: simulated")

    monkeypatch.setattr(native, "_build", fail)
    monkeypatch.setattr(native, "_LIBS", {})
    monkeypatch.setattr(native, "_FAILED", [])
    mt.clear_caches()
    x = np.linspace(-3, 3, N, dtype=np.float32)

    def f(x):
        return mnp.tanh(x) * 0.5 + x

    jf = mt.jit(f)
    assert "_nat" in jf.lower(x).compile().as_text()
    with pytest.warns(RuntimeWarning, match="simulated"):
        got = jf(x)
    want = f(mnp.asarray(x))
    _assert_matches("fallback", got, want)
    assert not native.available()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once only
        _assert_matches("again", jf(x), want)
        g = mt.jit(lambda x: f(x) - 1.0)
        assert "_blk" in g.lower(x).compile().as_text()
        _assert_matches("blocks", g(x), f(mnp.asarray(x)) - 1.0)
    mt.clear_caches()


def test_turned_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("MYTORCH_NATIVE", "0")
    native.unavailable_reason.cache_clear()
    try:
        assert native.unavailable_reason() == "turned off by MYTORCH_NATIVE=0"
        assert not native.available()
        mt.clear_caches()
        text = mt.jit(lambda x: mnp.exp(x) + x).lower(np.ones(N, np.float32)).compile().as_text()
        assert "_nat" not in text and "_blk" in text
    finally:
        monkeypatch.delenv("MYTORCH_NATIVE")
        native.unavailable_reason.cache_clear()
        mt.clear_caches()


@pytest.mark.parametrize("dt", [np.float32, np.int8, np.uint8, np.int32], ids=str)
def test_literal_operands_keep_eager_types(dt):
    """Python and NumPy scalar literals inside a compiled loop: the eager result's dtypes
    and values (the programs of test_dtype_parity, many side by side in one run)."""
    from tests.jit.test_dtype_parity import LITERAL_PROGRAMS, _check_parity, _operand

    x = _operand(np.dtype(dt), (N,))
    fns = []
    for name in ["add", "mul", "chain", "where", "select_n", "clip_lo", "pow", "square",
                 "maximum", "lt", "xor"]:
        for s in (2, 2.5, np.float32(0.5), True):
            op = LITERAL_PROGRAMS[name]
            fn = lambda x, s=s, op=op: op(op(x, s), s)  # noqa: E731
            try:
                fn(x)
            except Exception:  # noqa: BLE001 - eager errors are test_dtype_parity's
                continue
            fns.append(fn)
    for lo in range(0, len(fns), 12):
        group = fns[lo:lo + 12]
        mt.clear_caches()
        text = mt.jit(lambda x, g=group: [f(x) for f in g]).lower(x).compile().as_text()
        assert "_nat" in text
        _check_parity(lambda x, g=group: [f(x) for f in g], [x], f"{dt} literals {lo}")


def test_size_threshold():
    """Runs of at least NATIVE_MIN_SIZE elements compile (one call instead of one per
    operation); smaller ones stay NumPy ufunc calls (no compiler run for small programs)."""
    def f(x, s):
        return mnp.exp(x - s) * 0.5 + mnp.maximum(x, s)

    s = np.float32(0.25)
    for size, compiled in ((fusion.NATIVE_MIN_SIZE, True), (fusion.NATIVE_MIN_SIZE - 1, False)):
        x = np.linspace(-4, 4, size, dtype=np.float32).reshape(-1, 1 if size % 2 else 2)
        mt.clear_caches()
        text = mt.jit(f).lower(x, s).compile().as_text()
        assert ("_nat" in text) == compiled, text
        assert ("a compiled loop (sub exp mul max add)" in text) == compiled, text
        _assert_matches("exp", mt.jit(f)(x, s), f(mnp.asarray(x), s))


@settings(max_examples=30, deadline=None)
@given(lead=st.one_of(st.tuples(st.integers(1, 160)),
                     st.tuples(st.integers(1, 4), st.integers(16, 80))),
       width=st.integers(fusion_c.ROW_MIN, fusion_c.ROW_MIN + 40),
       layout=st.sampled_from(["C", "F", "sliced"]), seed=st.integers(0, 2**16))
def test_runs_reading_a_bias_row_loop_over_rows_in_c(lead, width, layout, seed):
    """A run reading a row broadcast along its leading axes (a bias) has a second, row by
    row form, taken when every array's rows are contiguous; both give what eager gives
    (the plain loop runs each row), and other layouts take the plain ufunc."""
    rng = np.random.default_rng(seed)
    shape = (*lead, width)
    x = rng.standard_normal(shape).astype(np.float32)
    if layout == "F":
        x = np.asfortranarray(x)
    elif layout == "sliced":
        x = rng.standard_normal((*lead, 2 * width)).astype(np.float32)[..., ::2]
    b = rng.standard_normal(width).astype(np.float32)

    def f(x, b):
        h = x + b
        return mnp.maximum(h, 0.0), (h > 0).astype(mnp.float32) * 2.0 - h

    mt.clear_caches()
    jf = mt.jit(f)
    text = jf.lower(x, b).compile().as_text()
    rows = math.prod(lead)
    if rows * width >= fusion.NATIVE_MIN_SIZE:  # compiled; a row form from ROW_MIN_ROWS rows
        assert "_nat" in text, text
        assert ("(by rows)" in text) == (rows >= fusion_c.ROW_MIN_ROWS), text
    for name, got, want in zip(["relu", "mask"], jf(x, b), f(mnp.asarray(x), b), strict=True):
        _assert_matches(name, got, want)


def test_long_small_runs_join_a_library_built_anyway():
    """In a function that compiles a large run, a run of at least NATIVE_SMALL_LENGTH
    equations on small arrays (an optimiser's bias updates) is compiled too; a shorter one,
    or one in a function with no large run, stays NumPy ufunc calls."""
    def update(w, gw, b, gb, long):
        w2 = w * mnp.exp(gw * 0.1) * 0.5  # products only: no cancellation magnifies ulps
        b2 = b - 0.1 * gb
        if long:  # an Adam-like update of the small array: eight more equations
            b2 = mnp.sqrt(mnp.abs(b2) + 1e-3) * mnp.sign(b2) / (1.0 + b2 * b2) - gb * 0.5
        return w2, b2

    rng = np.random.default_rng(0)
    big = [rng.standard_normal((64, 64)).astype(np.float32) for _ in range(2)]
    small = [rng.standard_normal(10).astype(np.float32) for _ in range(2)]
    for with_big, long, loops in ((True, True, 2), (True, False, 1), (False, True, 0)):
        w, gw = big if with_big else [a[:1, :4] for a in big]
        f = functools.partial(update, long=long)
        mt.clear_caches()
        text = mt.jit(f).lower(w, gw, *small).compile().as_text()
        assert text.count(": a compiled loop (") == loops, text
        want = f(*[mnp.asarray(a) for a in (w, gw, *small)])
        for got, expected in zip(mt.jit(f)(w, gw, *small), want, strict=True):
            _assert_matches("exp", got, expected)  # exp and sqrt: within a few ulp


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 9), min_size=0, max_size=3).map(tuple),
       key_shape=st.sampled_from(["scalar", "row", "full"]), seed=st.integers(0, 2**32 - 1))
def test_compiled_threefry_gives_the_numpy_kernels_bits(shape, key_shape, seed):
    """threefry2x32 through the compiled ufunc (one key or keys broadcast against counters,
    contiguous or not) equals the whole-array NumPy rounds bit for bit."""
    from mytorch.backends.numpy import prng

    rng = np.random.default_rng(seed)
    u32 = lambda s: rng.integers(0, 2**32, s, dtype=np.uint64).astype(np.uint32)  # noqa: E731
    x1, x2 = u32(shape), u32(shape)
    if x2.ndim:
        x2 = x2[..., ::-1]  # a strided operand
    k_shape = {"scalar": (), "row": shape[-1:], "full": shape}[key_shape]
    k1, k2 = u32(k_shape), u32(k_shape)
    assert prng._compiled() is not None
    got = prng._threefry2x32(k1, k2, x1, x2)
    compiled = prng._compiled
    try:
        prng._compiled = lambda: None
        want = prng._threefry2x32(k1, k2, x1, x2)
    finally:
        prng._compiled = compiled
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.uint32 and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_compiled_threefry_known_answer():
    """Random123's known-answer vector for threefry2x32 with 20 rounds (counters beyond the
    scalar shortcut, so the compiled loop computes them)."""
    from mytorch.backends.numpy import prng

    zeros = np.zeros(16, np.uint32)
    x, y = prng._threefry2x32(np.uint32(0), np.uint32(0), zeros, zeros)
    assert int(x[0]) == 0x6B200159 and int(y[0]) == 0x99BA4EFE
    ones = np.full(16, 0xFFFFFFFF, np.uint32)
    x, y = prng._threefry2x32(np.uint32(0xFFFFFFFF), np.uint32(0xFFFFFFFF), ones, ones)
    assert int(x[3]) == 0x1CB996FC and int(y[3]) == 0xBB002BE7


@pytest.mark.parametrize("dt", [np.complex64, np.float16], ids=str)
def test_complex_and_half_runs_stay_numpy(dt):
    """Complex runs (NumPy's complex128 division rounds differently from Smith's algorithm)
    and float16 (computed in float32 and rounded by the emitters) are not compiled."""
    x = (np.linspace(-2, 2, N) + (1j if np.dtype(dt).kind == "c" else 0)).astype(dt)

    def f(x):
        return (x * x + 1) / (x - 3)

    mt.clear_caches()
    assert "_nat" not in mt.jit(f).lower(x).compile().as_text()
    np.testing.assert_allclose(np.asarray(mt.jit(f)(x)), np.asarray(f(mnp.asarray(x))),
                               rtol=1e-6 if np.dtype(dt).kind == "c" else 1e-3)


def test_first_calls_from_threads_build_once():
    """Replicas (pmap's threads) may make the first call of a function together: its loops
    are built once and every thread gets the right values."""
    import threading

    mt.clear_caches()
    x = np.linspace(-2, 2, N, dtype=np.float32)

    def f(x):
        return mnp.exp(-x * x) * 3.0 + 1.0  # no cancellation: ulp of exp carry over

    jf = mt.jit(f)
    want = np.asarray(f(mnp.asarray(x)))
    results, errors = [], []

    def call():
        try:
            results.append(np.asarray(jf(x)))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 4
    for r in results:
        _assert_matches("exp", r, want)


def test_interleaved_shapes_make_one_run_each():
    """An optimiser's update written parameter by parameter for parameters of three shapes,
    interleaved, becomes one compiled run per shape (equations of other shapes are
    scheduled around a run), with eager's values."""
    rng = np.random.default_rng(5)
    shapes = [(64, 32), (600,), (64, 32), (24, 30), (600,)]
    ps = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    gs = [rng.standard_normal(s).astype(np.float32) for s in shapes]

    def update(ps, gs):
        m = [0.1 * g for g in gs]
        v = [0.001 * g * g for g in gs]
        return [p - 0.01 * mi / (mnp.sqrt(vi) + 1e-8) for p, mi, vi in zip(ps, m, v)]

    mt.clear_caches()
    text = mt.jit(update).lower(ps, gs).compile().as_text()
    calls = [line for line in text.splitlines() if "_nat" in line and "out=" in line]
    assert len(calls) == 3, text
    for g, w in zip(mt.jit(update)(ps, gs), update(ps, gs), strict=True):
        _assert_matches("sqrt", g, w)  # sqrt and division are exact: bit for bit


def test_run_with_too_many_operands_runs_eagerly(monkeypatch):
    """A run formed for a compiled loop (a shift and a bitcast: no blocked-ufunc form) whose
    operands exceed what one ufunc takes is computed by the eager kernels, correctly."""
    monkeypatch.setattr(native, "MAX_ARGS", 2)
    mt.clear_caches()
    rng = np.random.default_rng(6)
    bits = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    x = rng.standard_normal(N).astype(np.float32)

    def f(bits, x):
        u = lax.bitcast_convert_type(lax.shift_right_logical(bits, np.uint32(9))
                                     | np.uint32(0x3F800000), np.float32) - 1.0
        return mnp.where(u < 0.8, x / 0.8, 0.0)

    text = mt.jit(f).lower(bits, x).compile().as_text()
    assert "_nat" not in text and "_run" in text
    _assert_matches("where", mt.jit(f)(bits, x), f(mnp.asarray(bits), mnp.asarray(x)))
    mt.clear_caches()


def test_independent_parts_loop_in_turn():
    """A run of independent updates (five parameters' Adam steps) loops over each part in
    turn in one compiled call, with eager's values (sqrt and division are exact)."""
    rng = np.random.default_rng(7)
    ps, ms, vs, gs = ([rng.standard_normal((32, 64)).astype(np.float32) for _ in range(5)]
                      for _ in range(4))
    vs = [np.abs(v) for v in vs]

    def adam(ps, ms, vs, gs):
        ms = [0.9 * m + 0.1 * g for m, g in zip(ms, gs)]
        vs = [0.999 * v + 0.001 * g * g for v, g in zip(vs, gs)]
        return [p - 1e-3 * m / (mnp.sqrt(v) + 1e-8) for p, m, v in zip(ps, ms, vs)], ms, vs

    mt.clear_caches()
    text = mt.jit(adam).lower(ps, ms, vs, gs).compile().as_text()
    assert len([line for line in text.splitlines() if "_nat" in line and "out=" in line]) == 1
    assert "if (split) {" in text and text.count("#pragma omp simd") >= 5 + 1, text
    got, want = mt.jit(adam)(ps, ms, vs, gs), adam(ps, ms, vs, gs)
    for g, w in zip(mt.tree_util.tree_leaves(got), mt.tree_util.tree_leaves(want), strict=True):
        _assert_matches("sqrt", g, w)


def test_parts_writing_over_each_others_inputs_loop_together():
    """Two independent parts whose results are written over each other's dying inputs
    (the product buffers u and x): looping over one part before the other would read an
    overwritten input, so the loop checks for that and runs both parts together."""
    rng = np.random.default_rng(8)
    p, q = (rng.standard_normal((64, 16)).astype(np.float32) for _ in range(2))
    w = rng.standard_normal((16, 32)).astype(np.float32)

    def f(p, q, w):
        u, x = p @ w, q @ w
        a = u * 2.0
        b = x * 3.0
        return a + 1.0, b

    mt.clear_caches()
    text = mt.jit(f).lower(p, q, w).compile().as_text()
    assert "if (split) {" in text, text
    for g, e in zip(mt.jit(f)(p, q, w), f(*(mnp.asarray(a) for a in (p, q, w))), strict=True):
        _assert_matches("mul", g, e)

