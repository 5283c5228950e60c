"""`p - c * (a @ b)` and its kin as one GEMM with beta = 1 (backends/numpy/dot_update.py):
rewritten only where p's buffer may be overwritten (a donated input or an intermediate, read
nowhere later), equal to the float64 reference to float rounding, exact where it falls back
to the separate operations, and never writing into an operand it reads.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.backends.numpy import blas

pytestmark = pytest.mark.skipif(not blas.available(np.float32),
                                reason="NumPy's BLAS has no ILP64 cblas_sgemm64_ here")

# (source of the update, its float64 reference)
FORMS = {
    "p - c*g": (lambda p, g, c: p - c * g, lambda p, g, c: p - c * g),
    "p - g*c": (lambda p, g, c: p - g * c, lambda p, g, c: p - g * c),
    "p + c*g": (lambda p, g, c: p + c * g, lambda p, g, c: p + c * g),
    "c*g + p": (lambda p, g, c: c * g + p, lambda p, g, c: c * g + p),
    "p - g": (lambda p, g, c: p - g, lambda p, g, c: p - g),
    "g + p": (lambda p, g, c: g + p, lambda p, g, c: g + p),
}


def _text(f, *args, **jit_kw):
    mt.clear_caches()
    return mt.jit(f, **jit_kw).lower(*args).compile().as_text()


def _check(got, p, a, b, c, form, dtype):
    p64, a64, b64 = (x.astype(np.float64) for x in (p, a, b))
    want = FORMS[form][1](p64, a64 @ b64, float(c))
    scale = np.abs(p64) + abs(float(c)) * (np.abs(a64) @ np.abs(b64)) + np.abs(a64 @ b64)
    tol = 4 * (a.shape[1] + 2) * np.finfo(dtype).eps * scale
    got = np.asarray(got)
    assert got.dtype == dtype and got.shape == want.shape
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(got), finite)
    assert np.all(np.abs(got - want)[finite] <= tol[finite])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 24), st.integers(1, 24), st.integers(1, 24),
       st.sampled_from(sorted(FORMS)), st.sampled_from([np.float32, np.float64]),
       st.sampled_from([0.01, -3.0, 1.0]), st.booleans(), st.booleans())
def test_donated_updates_run_as_one_gemm(m, k, n, form, dtype, c, a_transposed, with_inf):
    mt.config.update("enable_x64", dtype == np.float64)  # reset after the test (conftest)
    rng = np.random.default_rng(m * 577 + k * 31 + n)
    p = rng.standard_normal((m, n)).astype(dtype)
    if with_inf:
        p[0, 0] = np.inf
    a = rng.standard_normal((k, m) if a_transposed else (m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    source = FORMS[form][0]
    c_val = dtype(c)

    def f(p, a, b):
        return source(p, (a.T if a_transposed else a) @ b, c_val)

    assert "_dot_update(" in _text(f, p, a, b, donate_argnums=0)
    got = mt.jit(f, donate_argnums=0)(mnp.asarray(p), a, b)
    _check(got, p, a.T if a_transposed else a, b, c_val if "c" in form else 1.0, form, dtype)


def test_updates_of_inputs_not_donated_stay_as_written():
    rng = np.random.default_rng(0)
    p, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((8, 6), (8, 5), (5, 6)))

    def f(p, a, b):
        return p - 0.1 * (a @ b)

    assert "_dot_update(" not in _text(f, p, a, b)
    assert "_dot_update(" in _text(f, p, a, b, donate_argnums=0)


def test_intermediates_are_updated_in_place_and_values_read_later_are_not():
    rng = np.random.default_rng(1)
    p, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((8, 6), (8, 5), (5, 6)))

    def intermediate(p, a, b):
        q = mnp.tanh(p)
        return q - 0.5 * (a @ b)

    def read_later(p, a, b):
        q = mnp.tanh(p)
        return q - 0.5 * (a @ b), q * 2.0

    def product_returned(p, a, b):
        g = a @ b
        return p - 0.5 * g, g

    assert "_dot_update(" in _text(intermediate, p, a, b)
    _check(mt.jit(intermediate)(p, a, b), np.tanh(p), a, b, np.float32(0.5), "p - c*g",
           np.float32)
    assert "_dot_update(" not in _text(read_later, p, a, b)
    assert "_dot_update(" not in _text(product_returned, p, a, b, donate_argnums=0)
    got, g = mt.jit(product_returned, donate_argnums=0)(mnp.asarray(p), a, b)
    np.testing.assert_array_equal(np.asarray(g), a @ b)


def test_a_zero_scale_keeps_nan_from_an_infinite_product():
    """GEMM may skip the product when alpha is 0: the update then runs as written, so
    0 * inf is NaN as in NumPy."""
    p = np.ones((4, 3), np.float32)
    a = np.full((4, 2), np.inf, np.float32)
    b = np.ones((2, 3), np.float32)

    def f(p, a, b, c):
        return p - c * (a @ b)

    got = np.asarray(mt.jit(f, donate_argnums=0)(mnp.asarray(p), a, b, np.float32(0.0)))
    assert np.isnan(got).all()


def test_the_fallback_computes_the_operations_as_written(monkeypatch):
    """Where GEMM cannot take the operands, the rewritten equation runs the product, the
    scaling and the subtraction as the unrewritten program does: the same bits."""
    rng = np.random.default_rng(2)
    p, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((16, 12), (16, 9), (9, 12)))

    def f(p, a, b):
        return p - np.float32(0.03) * (a @ b)

    want = np.asarray(mt.jit(f)(p, a, b))  # not donated: not rewritten
    monkeypatch.setattr(blas, "gemm_update", lambda *args: False)
    mt.clear_caches()
    got = np.asarray(mt.jit(f, donate_argnums=0)(mnp.asarray(p), a, b))
    np.testing.assert_array_equal(got, want)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9),
       st.sampled_from(["C", "F", "rows2", "cols2", "neg"]), st.sampled_from(["C", "F"]))
def test_gemm_update_takes_contiguous_rows_or_columns_only(m, k, n, a_layout, b_layout):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    base = rng.standard_normal((2 * m, 2 * k)).astype(np.float32)
    a = {"C": base[:m, :k].copy(), "F": np.asfortranarray(base[:m, :k]),
         "rows2": base[::2, :k], "cols2": base[:m, ::2], "neg": base[:m, :k][::-1]}[a_layout]
    b = rng.standard_normal((k, n)).astype(np.float32)
    b = b.copy() if b_layout == "C" else np.asfortranarray(b)
    p = rng.standard_normal((m, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    done = blas.gemm_update(c, a, b, -0.5, p)
    strided = a_layout == "cols2" and k > 1 and m > 1 or a_layout == "neg" and m > 1
    assert done != strided
    if done:
        want = p.astype(np.float64) - 0.5 * (a.astype(np.float64) @ b)
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5 * k)
    else:
        assert np.isnan(c).all()  # nothing written


def test_gemm_update_refuses_a_result_sharing_memory_with_an_operand():
    a = np.ones((4, 4), np.float32)
    b = np.ones((4, 4), np.float32)
    assert not blas.gemm_update(a, a, b, 1.0)
    assert not blas.gemm_update(b, a, b.T, 1.0)
    np.testing.assert_array_equal(a, 1.0)


def test_products_in_loop_bodies_are_left_to_the_loop_passes():
    """An RNN step `x_t @ Wx + h @ Wh` adds a product into an intermediate, but inside a
    scan body the loop passes hoist `x_t @ Wx` out of the loop (all steps in one product):
    rewriting the sum into a dot_update there would defeat that (W7 ran 2.2x slower)."""
    rng = np.random.default_rng(4)
    xs = rng.standard_normal((50, 8, 16)).astype(np.float32)
    wx, wh = (rng.standard_normal((16, 16)).astype(np.float32) / 4 for _ in range(2))
    h0 = np.zeros((8, 16), np.float32)

    def loss(wx, wh):
        def step(h, x):
            h = mnp.tanh(x @ wx + h @ wh)
            return h, mnp.sum(h * h)

        _, ys = mt.lax.scan(step, h0, xs)
        return mnp.sum(ys)

    text = _text(mt.grad(loss, argnums=(0, 1)), wx, wh)
    assert "_dot_update(" not in text
    got = mt.jit(mt.grad(loss, argnums=(0, 1)))(wx, wh)
    want = mt.grad(loss, argnums=(0, 1))(wx, wh)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)


def test_without_the_blas_the_update_is_not_rewritten(monkeypatch):
    """Where NumPy's ILP64 GEMM is not found, the update keeps its fused form (a product
    and one compiled pass) rather than a rewritten equation running the operations one by
    one."""
    rng = np.random.default_rng(6)
    p, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((8, 6), (8, 5), (5, 6)))

    def f(p, a, b):
        return p - 0.1 * (a @ b)

    monkeypatch.setattr(blas, "available", lambda dtype: False)
    assert "_dot_update(" not in _text(f, p, a, b, donate_argnums=0)
    mt.clear_caches()
