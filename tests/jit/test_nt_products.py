"""`a @ b.T` with a transposed C-contiguous `b` (backends/numpy/dot_nt.py): with few rows in
`a`, computed as `b @ a.T` and transposed back by a compiled generalized ufunc; with a small
float32 `b`, as `a @ b.T.copy()`, the copy made by the same transpose. The transpose must be
exact for any shape, stride and dtype; the products must match NumPy's float64 product to
float rounding, eager and jitted, and fall back to the plain product for operands in other
layouts.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.backends.numpy import dot_nt, native

pytestmark = pytest.mark.skipif(not native.available(),
                                reason=f"no compiled loops here: {native.unavailable_reason()}")

_DTYPES = st.sampled_from([np.float32, np.float64])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 70), st.integers(0, 70), st.integers(1, 3), st.integers(1, 2),
       st.booleans(), _DTYPES)
def test_transposer_copies_any_matrix_transposed(n, m, batch, step, fortran_out, dtype):
    rng = np.random.default_rng(n * 71 + m)
    a = rng.standard_normal((batch, n, m * step)).astype(dtype)[:, :, ::step]
    a[..., :1] = np.nan  # values are copied, not computed
    tr = dot_nt.transposer(dtype)
    want = np.swapaxes(a, -1, -2)
    np.testing.assert_array_equal(tr(a), want)
    out = np.empty((batch, m, n), dtype, order="F" if fortran_out else "C")
    assert tr(a, out=out) is out
    np.testing.assert_array_equal(out, want)


def _nt_args(rng, m, n, k, dtype):
    return (rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((n, k)).astype(dtype))


def _close(got, a, b):
    want = a.astype(np.float64) @ b.astype(np.float64).T
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64).T
    eps = np.finfo(a.dtype).eps
    assert got.dtype == a.dtype and got.shape == want.shape
    assert np.all(np.abs(got - want) <= 4 * a.shape[1] * eps * scale + 1e-30)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40), st.integers(1, 300), st.integers(1, 64), _DTYPES)
def test_nt_product_matches_the_float64_product(m, n, k, dtype):
    a, b = _nt_args(np.random.default_rng(m * n + k), m, n, k, dtype)
    _close(dot_nt.matmul(a, b.T), a, b)
    out = np.full((m, n), np.nan, dtype)
    assert dot_nt.matmul(a, b.T, out=out) is out
    _close(out, a, b)


def test_operands_in_other_layouts_take_the_plain_product():
    rng = np.random.default_rng(0)
    a, b = _nt_args(rng, 16, 96, 40, np.float32)
    for x, y in ((np.asfortranarray(a), b), (a, b[:, ::1].copy(order="F")), (a[:, :20], b[:, 20:])):
        np.testing.assert_array_equal(dot_nt.matmul(x, y.T), np.matmul(x, y.T))


def test_the_rule_takes_few_rows_against_many():
    assert dot_nt.pays(128, 512, 512, np.float32)
    assert dot_nt.pays(64, 1024, 256, np.float64)
    assert not dot_nt.pays(512, 512, 512, np.float32)  # as fast as the NT product
    assert not dot_nt.pays(128, 256, 256, np.float32)  # n < 4 m
    assert not dot_nt.pays(8, 64, 64, np.float32)  # too little work
    assert not dot_nt.pays(128, 512, 512, np.int32)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40), st.integers(1, 300), st.integers(1, 64))
def test_copied_product_matches_the_float64_product(m, n, k):
    a, b = _nt_args(np.random.default_rng(m * n + k + 1), m, n, k, np.float32)
    _close(dot_nt.matmul_copied(a, b.T), a, b)
    out = np.full((m, n), np.nan, np.float32)
    assert dot_nt.matmul_copied(a, b.T, out=out) is out
    _close(out, a, b)
    at = np.asfortranarray(a)  # any layout of a: the plain product reads it
    _close(dot_nt.matmul_copied(at, b.T), a, b)


def test_copied_product_of_other_layouts_is_the_plain_product(monkeypatch):
    rng = np.random.default_rng(1)
    a, w = _nt_args(rng, 64, 96, 40, np.float32)  # a @ w.T: w [96, 40]
    used = []
    transposer = dot_nt.transposer
    monkeypatch.setattr(dot_nt, "transposer", lambda dt: used.append(dt) or transposer(dt))
    # right operands [40, 96] whose transpose is not C-contiguous: taken as they are
    for y in (np.ascontiguousarray(w.T), np.asfortranarray(w).T):
        assert not y.T.flags.c_contiguous
        np.testing.assert_array_equal(dot_nt.matmul_copied(a, y), np.matmul(a, y))
    strided = rng.standard_normal((96, 80)).astype(np.float32)[:, ::2]
    np.testing.assert_array_equal(dot_nt.matmul_copied(a, strided.T), np.matmul(a, strided.T))
    assert not used
    c = rng.standard_normal((96, 40))  # mixed dtypes: NumPy's product
    np.testing.assert_array_equal(dot_nt.matmul_copied(a, c.T), np.matmul(a, c.T))


def test_the_copy_rule_takes_small_float32_operands():
    assert dot_nt.copies(128, 256, 256, np.float32)  # a hidden layer's dz @ W.T
    assert dot_nt.copies(128, 512, 10, np.float32)  # the output layer's
    assert not dot_nt.copies(128, 512, 512, np.float32)  # swapped instead (pays)
    assert dot_nt.pays(128, 512, 512, np.float32)
    assert not dot_nt.copies(128, 256, 256, np.float64)  # NT dgemm is as fast
    assert not dot_nt.copies(128, 1024, 64, np.float32)  # n too large
    assert not dot_nt.copies(256, 512, 512, np.float32)  # b (n * k) too large
    assert not dot_nt.copies(32, 10, 512, np.float32)  # too little work
    assert not dot_nt.copies(16, 256, 256, np.float32)  # too few rows
    assert not dot_nt.copies(128, 256, 256, None)  # mixed dtypes


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 33), st.integers(1, 90), st.integers(1, 40), _DTYPES)
def test_jitted_and_eager_nt_products_match_the_float64_product(m, n, k, dtype):
    a, b = _nt_args(np.random.default_rng(m + 7 * n + 11 * k), m, n, k, dtype)

    def f(a, b):
        return mnp.maximum(a @ b.T, 0.0) * 2.0  # a consumer reading the product

    mt.config.update("enable_x64", dtype == np.float64)  # reset after the test (conftest)
    with pytest.MonkeyPatch.context() as mp:  # the rule taking every NT product
        mp.setattr(dot_nt, "MIN_WORK", 0)
        mp.setattr(dot_nt, "MIN_RATIO", 0)
        mt.clear_caches()
        text = mt.jit(f).lower(a, b).compile().as_text()
        if min(m, n, k) > 1:  # (degenerate shapes have their own lowerings)
            assert "_matmul_or_swapped(" in text
        got = np.asarray(mt.jit(f)(a, b))
        eager = np.asarray(f(mnp.asarray(a), mnp.asarray(b)))
    mt.clear_caches()
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64).T, 0) * 2
    tol = 8 * k * np.finfo(dtype).eps * (np.abs(a) @ np.abs(b).T).astype(np.float64)
    assert got.dtype == eager.dtype == dtype
    assert np.all(np.abs(got - want) <= tol) and np.all(np.abs(eager - want) <= tol)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 33), st.integers(1, 90), st.integers(1, 40))
def test_jitted_and_eager_copied_products_match_the_float64_product(m, n, k):
    a, b = _nt_args(np.random.default_rng(m + 5 * n + 13 * k), m, n, k, np.float32)

    def f(a, b):
        return mnp.maximum(a @ b.T, 0.0) * 2.0

    with pytest.MonkeyPatch.context() as mp:  # the copy rule taking every float32 NT product
        mp.setattr(dot_nt, "MAX_ROWS", -1)
        for name in ("COPY_MIN_ROWS", "COPY_MIN_WORK"):
            mp.setattr(dot_nt, name, 0)
        copied = []
        transposer = dot_nt.transposer
        mp.setattr(dot_nt, "transposer", lambda dt: copied.append(dt) or transposer(dt))
        mt.clear_caches()
        text = mt.jit(f).lower(a, b).compile().as_text()
        if min(m, n, k) > 1:
            assert "_matmul_copied(" in text
        got = np.asarray(mt.jit(f)(a, b))
        eager = np.asarray(f(mnp.asarray(a), mnp.asarray(b)))
        assert copied or min(m, n, k) == 1
    mt.clear_caches()
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64).T, 0) * 2
    tol = 8 * k * np.finfo(np.float32).eps * (np.abs(a) @ np.abs(b).T).astype(np.float64)
    assert got.dtype == eager.dtype == np.float32
    assert np.all(np.abs(got - want) <= tol) and np.all(np.abs(eager - want) <= tol)


def test_gradient_through_a_wide_layer_matches_finite_differences(x64, monkeypatch):
    """The backward pass of x @ W with few rows in x has the NT product dz @ W.T (the rule's
    real shape, not forced): its gradient against float64 central differences."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 512))
    w = rng.standard_normal((512, 256)) / 16

    def loss(x):
        return mnp.sum(mnp.tanh(x @ w) ** 2)

    mt.clear_caches()
    assert dot_nt.pays(64, 512, 256, np.float64)
    text = mt.jit(mt.grad(loss)).lower(x).compile().as_text()
    assert "_matmul_or_swapped(" in text
    swapped = []  # the runtime takes the swapped product (dz and W are C-contiguous)
    transposer = dot_nt.transposer
    monkeypatch.setattr(dot_nt, "transposer", lambda dt: swapped.append(dt) or transposer(dt))
    g = np.asarray(mt.jit(mt.grad(loss))(x))
    assert swapped
    np.testing.assert_allclose(g, np.asarray(mt.grad(loss)(x)), rtol=1e-12, atol=1e-12)
    h = 1e-4  # the loss sums 16384 terms: smaller steps drown in its rounding
    for i, j in [(0, 0), (17, 300), (63, 511)]:
        e = np.zeros_like(x)
        e[i, j] = h
        fd = (float(loss(x + e)) - float(loss(x - e))) / (2 * h)
        assert abs(g[i, j] - fd) <= 1e-6 * max(1.0, abs(fd))


def test_gradient_through_a_hidden_layer_takes_the_copied_product(monkeypatch):
    """A float32 MLP's hidden layer (batch 128, width 256): the backward product dz @ W.T
    runs with W.T copied; the gradient matches the float64 computation and central
    differences of it."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((128, 256)).astype(np.float32)
    w1 = (rng.standard_normal((256, 256)) / 16).astype(np.float32)

    def loss(x, w1, w2):
        return mnp.sum(mnp.tanh(mnp.tanh(x @ w1) @ w2) ** 2)

    w2 = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
    mt.clear_caches()
    assert dot_nt.copies(128, 256, 256, np.float32)
    text = mt.jit(mt.grad(loss)).lower(x, w1, w2).compile().as_text()
    assert "_matmul_copied(" in text
    copied = []
    transposer = dot_nt.transposer
    monkeypatch.setattr(dot_nt, "transposer", lambda dt: copied.append(dt) or transposer(dt))
    g = np.asarray(mt.jit(mt.grad(loss))(x, w1, w2))
    assert len(copied) == 2 and all(d == np.float32 for d in copied)  # dz @ W.T, both layers
    x64, a64, b64 = x.astype(np.float64), w1.astype(np.float64), w2.astype(np.float64)

    def loss64(x):
        return np.sum(np.tanh(np.tanh(x @ a64) @ b64) ** 2)

    h1 = np.tanh(x64 @ a64)
    z = np.tanh(h1 @ b64)
    dh1 = ((2 * z * (1 - z ** 2)) @ b64.T) * (1 - h1 ** 2)
    want = dh1 @ a64.T
    np.testing.assert_allclose(g, want, rtol=2e-3, atol=2e-3 * np.abs(want).max())
    h = 1e-6
    for i, j in [(0, 0), (77, 200)]:
        e = np.zeros_like(x64)
        e[i, j] = h
        fd = (loss64(x64 + e) - loss64(x64 - e)) / (2 * h)
        assert abs(want[i, j] - fd) <= 1e-5 * max(1.0, abs(fd))
