"""Masks kept as uint8 codes (backends/numpy/narrow_masks.py): a stored select_n tree of
constants (ReLU's derivative) is stored as the index of its constant and decoded by the loop
that reads it. The values must be the same bits as without the rewrite (ties, NaN, signed
zeros and infinite constants included; a NaN's sign and payload, which compiled loops do
not keep, aside), and the rewrite must apply only where the mask is
stored and every reader can decode it.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.backends.numpy import narrow_masks, native, peephole
from tests.strategies import assert_same_bits

pytestmark = pytest.mark.skipif(not native.available(),
                                reason=f"no compiled loops here: {native.unavailable_reason()}")


def _prepared(f, *args):
    mt.clear_caches()
    return peephole.prepare(mt.jit(f).lower(*args).compile().jaxpr.jaxpr)


def _stored_codes(jaxpr):
    """The uint8 arrays a prepared jaxpr computes."""
    return [v for e in jaxpr.eqns for v in e.outvars if v.aval.dtype == np.uint8]


def _run(f, args, narrowed):
    with pytest.MonkeyPatch.context() as mp:
        if not narrowed:
            mp.setattr(narrow_masks, "MIN_SIZE", 1 << 62)
        mt.clear_caches()
        out = mt.jit(f)(*args)
    mt.clear_caches()
    return out


def _mlp_loss(params, x):
    w0, b0, w1 = params
    h = mnp.maximum(x @ w0 + b0, 0.0)
    return mnp.sum((h @ w1) ** 2)


def _mlp_with_ties(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 64)).astype(dtype)
    w0 = rng.standard_normal((64, 256)).astype(dtype) / 8
    b0 = rng.standard_normal(256).astype(dtype) / 8
    w0[:, :16] = 0  # z == 0 exactly in 16 columns: ReLU's tie, gradient 0.5
    b0[:16] = 0
    w1 = rng.standard_normal((256, 32)).astype(dtype) / 16
    return [w0, b0, w1], x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_gradient_is_the_same_bits_and_matches_central_differences(dtype, x64):
    params, x = _mlp_with_ties(dtype)
    grad = mt.grad(_mlp_loss)
    assert _stored_codes(_prepared(grad, params, x))  # the mask is stored as codes
    got = _run(grad, (params, x), True)
    plain = _run(grad, (params, x), False)
    for a, b in zip(got, plain, strict=True):
        assert_same_bits(a, b)
    eager = grad([mnp.asarray(p) for p in params], mnp.asarray(x))
    for a, b in zip(got, eager, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    if dtype == np.float64:  # the tie's 0.5 is the central difference of max(z, 0) at 0
        p64 = [p.astype(np.float64) for p in params]

        def loss(w0):
            h = np.maximum(x @ w0 + p64[1], 0.0)
            return np.sum((h @ p64[2]) ** 2)

        h = 1e-6
        for i, j in [(0, 3), (5, 100), (7, 200)]:  # tied columns 3 (w0[:, :16] = 0) and others
            e = np.zeros_like(p64[0])
            e[i, j] = h
            fd = (loss(p64[0] + e) - loss(p64[0] - e)) / (2 * h)
            assert abs(np.asarray(got[0])[i, j] - fd) <= 1e-6 * max(1.0, abs(fd))


_CONSTS = st.sampled_from([0.0, -0.0, 0.5, 1.0, -2.5, np.inf, -np.inf, np.nan, 3e38, 1e-40])


@settings(max_examples=25, deadline=None)
@given(st.lists(_CONSTS, min_size=3, max_size=3), st.sampled_from([np.float32, np.float64,
                                                                    np.float16]),
       st.integers(128, 160), st.integers(128, 140))
def test_constant_trees_read_after_a_product_are_the_same_bits(consts, dtype, n, k):
    """where(x > 0, c1, where(x == 0, c2, c3)) computed before a product and multiplied into
    its result: with the rewrite and without, the same bits."""
    rng = np.random.default_rng(n * 1000 + k)
    x = rng.standard_normal((n, k)).astype(dtype)
    x[::7, ::3] = 0
    x[1, 1] = np.nan
    w = rng.standard_normal((k, k)).astype(dtype) / 16
    c1, c2, c3 = consts

    def f(x, w):
        full = [mnp.full_like(x, c) for c in (c1, c2, c3)]
        m = mnp.where(x > 0, full[0], mnp.where(x == 0, full[1], full[2]))
        return ((x @ w) @ w.T) * m + m

    mt.config.update("enable_x64", dtype == np.float64)  # reset after the test (conftest)
    # (float16 loops compute in float32 through NumPy: no compiled reader decodes codes)
    assert bool(_stored_codes(_prepared(f, x, w))) == (dtype != np.float16)
    got, plain = _run(f, (x, w), True), _run(f, (x, w), False)
    assert_same_bits(got, plain)
    assert np.asarray(got).dtype == dtype


def test_masks_not_stored_or_not_decodable_stay_as_they_are():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((128, 256)).astype(np.float32)
    w = rng.standard_normal((256, 256)).astype(np.float32)

    def mask(x):
        return mnp.where(x > 0, 1.0, mnp.where(x == 0, 0.5, 0.0))

    cases = {
        "read in its own loop": lambda x, w: (x * mask(x)) @ w,
        "an output": lambda x, w: (x @ w, mask(x)),
        "read by a product": lambda x, w: (x @ w) @ mask(x).T,
        "read by a reduction": lambda x, w: mnp.sum(x @ w) * mnp.sum(mask(x), axis=0),
        "too small": lambda x, w: (x[:8, :8] @ w[:8, :8]) * mask(x[:8, :8]),
    }
    for name, f in cases.items():
        assert not _stored_codes(_prepared(f, x, w)), name
        got = np.asarray(mt.jit(f)(x, w)[0] if name == "an output" else mt.jit(f)(x, w))
        want = f(mnp.asarray(x), mnp.asarray(w))
        want = np.asarray(want[0] if name == "an output" else want)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    def stored(x, w):  # the same mask computed before a product and read after it
        m = mask(x)
        return (x @ w) * m

    assert _stored_codes(_prepared(stored, x, w))
    assert not _stored_codes(_prepared(lambda x, w: (x @ w) * mask(x), x, w))  # one loop


def test_no_rewrite_without_compiled_loops(monkeypatch):
    params, x = _mlp_with_ties(np.float32)
    monkeypatch.setattr(native, "available", lambda: False)
    assert not _stored_codes(_prepared(mt.grad(_mlp_loss), params, x))
