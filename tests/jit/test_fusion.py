"""Blocked evaluation of fused elementwise runs (backends/numpy/fusion.py) against the
un-jitted program. The size threshold and block size are lowered so that small hypothesis
arrays take the blocked path, including a partial tail block, and compiled loops (the path
taken where a C++ compiler is present, tested in test_native_loops.py) are turned off."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.backends.numpy import fusion, native


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(fusion, "MIN_SIZE", 4)
    monkeypatch.setattr(fusion, "BLOCK_BYTES", 16)  # 4 float32 values per block
    monkeypatch.setattr(fusion, "MIN_BLOCK", 1)
    monkeypatch.setattr(native, "available", lambda: False)
    mt.clear_caches()
    yield
    mt.clear_caches()


# tolerances: float32 chains differ by a few ulps (x**3 is x*x*x compiled, pow eagerly),
# amplified by exp
UNARY = [mnp.tanh, mnp.exp, mnp.sin, lax.logistic, mnp.abs, mnp.negative, mnp.sqrt,
         lambda x: x ** 2, lambda x: x ** 3, lambda x: x * 0.5, lambda x: 1.0 - x]
BINARY = [mnp.add, mnp.subtract, mnp.multiply, mnp.maximum, mnp.minimum, lambda a, b: a / b,
          lambda a, b: mnp.where(a > b, a, b * 0.5), lambda a, b: mnp.where(a > 1.0, b, a)]


@st.composite
def programs(draw):
    """A chain of unary/binary ops over one or two inputs, returning one or more values
    (so some intermediates escape the run and others stay inside a block)."""
    steps = draw(st.lists(st.tuples(st.integers(0, len(UNARY) - 1),
                                    st.integers(0, len(BINARY) - 1),
                                    st.integers(0, 10 ** 6)), min_size=2, max_size=8))
    n_out = draw(st.integers(1, 3))

    def f(x, y, s):
        vals = [x, y]
        for u, b, pick in steps:
            a = UNARY[u](vals[pick % len(vals)])
            vals.append(BINARY[b](a, vals[(pick // 7) % len(vals)] * s))
        return tuple(vals[-n_out:]) + (vals[2],)

    return f


def _in_float64(fn, *args):
    """`fn` evaluated eagerly on float64 copies of `args`: the reference both the eager and
    the compiled float32 results are measured against."""
    mt.config.update("enable_x64", True)
    try:
        return [np.asarray(o) for o in fn(*[mnp.asarray(np.asarray(a, np.float64))
                                            for a in args])]
    finally:
        mt.config.update("enable_x64", False)


def assert_as_accurate(got, want, ref, rtol=2e-5, atol=1e-6):
    """The compiled result `got` is within a few times the eager result's own rounding
    error of the float64 reference (chains such as exp(x**3 - y) amplify a one-ulp
    difference between x*x*x and pow beyond any fixed tolerance), and within the usual
    tolerance where the program is well conditioned."""
    for g, w, r in zip(got, want, ref, strict=True):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        assert g.shape == w.shape == r.shape
        both_nan = np.isnan(g) & np.isnan(w)
        err_got, err_want = np.abs(g - r), np.abs(w - r)
        bound = 4 * err_want + rtol * np.abs(r) + atol
        ok = both_nan | (err_got <= bound) | (g == w) | np.isclose(g, w, rtol, atol)
        assert ok.all(), (f"compiled {g[~ok]} vs eager {w[~ok]}, float64 reference "
                          f"{r[~ok]}")


@settings(max_examples=40, deadline=None)
@given(f=programs(), n=st.integers(4, 23), seed=st.integers(0, 2 ** 16))
def test_fused_runs_match_eager(f, n, seed):
    rng = np.random.default_rng(seed)
    x = mnp.asarray(rng.uniform(0.5, 2.0, n).astype(np.float32))
    y = mnp.asarray(rng.uniform(0.5, 2.0, n).astype(np.float32))
    s = mnp.asarray(np.float32(0.75))
    x_before = np.array(x)
    want = f(x, y, s)
    got = mt.jit(f)(x, y, s)
    for g, w in zip(got, want, strict=True):
        assert (g.dtype, g.weak_type, g.shape) == (w.dtype, w.weak_type, w.shape)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(x), x_before)  # inputs are never written


@settings(max_examples=30, deadline=None)
@given(f=programs(), rows=st.integers(2, 9), cols=st.integers(1, 5),
       seed=st.integers(0, 2 ** 16))
def test_fused_rows_of_views_match_eager(f, rows, cols, seed):
    """2-D runs are blocked by rows: operands may be transposed or broadcast views, and
    intermediates computed before the run (pooled buffers) may be F-ordered."""
    rng = np.random.default_rng(seed)
    x = mnp.asarray(rng.uniform(0.5, 2.0, (cols, rows)).astype(np.float32))
    b = mnp.asarray(rng.uniform(0.5, 2.0, cols).astype(np.float32))
    s = mnp.asarray(np.float32(1.25))

    def g(x, b, s):
        xt = mnp.exp(x.T) * 1.0  # an F-ordered intermediate
        return f(xt, mnp.broadcast_to(b, (rows, cols)) + xt * 0.0, s)

    want = g(x, b, s)
    got = mt.jit(g)(x, b, s)
    assert_as_accurate(got, want, _in_float64(g, x, b, s))


def test_the_blocked_path_is_taken():
    f = mt.jit(lambda x: mnp.tanh(x) * 0.5 + x * lax.logistic(x) - 0.1 * x ** 2)
    x = mnp.asarray(np.linspace(-100, 100, 10, dtype=np.float32))
    text = f.lower(x).as_text()
    assert "def _blk0(" in text and "for _i in range(" in text
    xn = np.asarray(x).astype(np.float64)
    want = np.tanh(xn) * 0.5 + xn / (1 + np.exp(-xn)) - 0.1 * xn ** 2
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-5)


def test_select_writing_over_its_operands():
    """The branch-free select reads its false case twice: writing its result over that
    operand (in place, as dead buffers are reused) must not change the answer."""
    f = lambda x: mnp.sum(mnp.maximum(x, 0.0) * x)  # noqa: E731
    x = mnp.asarray(np.array([[1, -2, np.nan], [0, 3, -1]], np.float32))
    np.testing.assert_array_equal(np.asarray(mt.jit(mt.grad(f))(x)), np.asarray(mt.grad(f)(x)))
