"""Cheap elementwise chains moved after their broadcast (backends/numpy/sink_broadcasts.py):
logsumexp's guard of its row maximum and a softmax backward's `g / sum` are computed in the
compiled loop that reads their broadcast. Results must be the same bits as without the move
(a NaN's sign and payload aside, which compiled loops do not keep), match NumPy and float64
central differences, and only cheap chains read by nothing else may move.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.backends.numpy import native, peephole, sink_broadcasts
from mytorch.scipy.special import logsumexp
from tests.strategies import assert_same_bits

pytestmark = pytest.mark.skipif(not native.available(),
                                reason=f"no compiled loops here: {native.unavailable_reason()}")


def _prepared(f, *args):
    mt.clear_caches()
    return peephole.prepare(mt.jit(f).lower(*args).compile().jaxpr.jaxpr)


def _small_ops(jaxpr, prim_name, ndim):
    """The equations of primitive `prim_name` with results of `ndim` dims."""
    return [e for e in jaxpr.eqns if e.primitive.name == prim_name
            and len(e.outvars[0].aval.shape) == ndim]


def _run(f, args, moved):
    with pytest.MonkeyPatch.context() as mp:
        if not moved:
            mp.setattr(sink_broadcasts, "MAX_RATIO", 0)
        mt.clear_caches()
        out = mt.jit(f)(*args)
    mt.clear_caches()
    return out


def _xent(x, y):
    """Softmax cross-entropy of logits x against y, summed: logsumexp's guarded maximum in
    the forward pass, `g / sum` in the backward pass."""
    return mnp.sum(logsumexp(x, axis=1) - mnp.sum(x * y, axis=1))


def _np_xent_grad(x, y):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) - y


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 70), st.integers(8, 40), st.sampled_from([np.float32, np.float64]),
       st.sampled_from(["finite", "inf row", "nan", "-inf row"]))
def test_softmax_xent_and_gradient_are_the_same_bits(rows, cols, dtype, special):
    rng = np.random.default_rng(rows * 100 + cols)
    x = (rng.standard_normal((rows, cols)) * 4).astype(dtype)
    y = np.eye(cols, dtype=dtype)[rng.integers(0, cols, rows)]
    if special == "inf row":
        x[0] = np.inf
    elif special == "-inf row":
        x[-1] = -np.inf
    elif special == "nan":
        x[rows // 2, cols // 3] = np.nan
    mt.config.update("enable_x64", dtype == np.float64)  # reset after the test (conftest)
    for f in (_xent, mt.grad(_xent)):
        got, plain = _run(f, (x, y), True), _run(f, (x, y), False)
        assert_same_bits(got, plain)
    if special == "finite":
        g = np.asarray(_run(mt.grad(_xent), (x, y), True))
        np.testing.assert_allclose(g, _np_xent_grad(x.astype(np.float64), y), rtol=1e-4,
                                   atol=1e-5 if dtype == np.float32 else 1e-12)


def test_the_guard_and_the_scaling_move_into_the_loops():
    x = np.random.default_rng(0).standard_normal((128, 10)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[np.arange(128) % 10]
    moved = _prepared(mt.grad(_xent), x, y)
    assert not _small_ops(moved, "is_finite", 1) and _small_ops(moved, "is_finite", 2)
    assert not _small_ops(moved, "div", 1) and _small_ops(moved, "div", 2)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sink_broadcasts, "MAX_RATIO", 0)
        kept = _prepared(mt.grad(_xent), x, y)
    assert _small_ops(kept, "is_finite", 1) and _small_ops(kept, "div", 1)


def test_gradient_matches_central_differences(x64):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 16)) * 3
    y = np.eye(16)[rng.integers(0, 16, 64)]
    g = np.asarray(mt.jit(mt.grad(_xent))(x, y))

    def loss(x):
        m = x.max(axis=1, keepdims=True)
        return np.sum(np.log(np.exp(x - m).sum(axis=1)) + m[:, 0] - (x * y).sum(axis=1))

    h = 1e-6
    for i, j in [(0, 0), (31, 7), (63, 15)]:
        e = np.zeros_like(x)
        e[i, j] = h
        fd = (loss(x + e) - loss(x - e)) / (2 * h)
        assert abs(g[i, j] - fd) <= 1e-7 * max(1.0, abs(fd))


def _rows(v, shape):
    """v f32[n] broadcast along the rows of `shape` [n, m] (one broadcast_in_dim)."""
    return lax.broadcast_in_dim(v, shape, (0,))


def test_a_moved_chain_reads_as_before():
    x = np.random.default_rng(5).standard_normal((128, 32)).astype(np.float32)

    def f(x):
        return x - _rows(mnp.max(x, axis=1) * 2.0, x.shape)

    assert not _small_ops(_prepared(f, x), "mul", 1) and _small_ops(_prepared(f, x), "mul", 2)
    np.testing.assert_array_equal(np.asarray(mt.jit(f)(x)), x - 2 * x.max(axis=1)[:, None])


def test_what_stays_before_the_broadcast():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((128, 32)).astype(np.float32)
    w = rng.standard_normal((32, 32)).astype(np.float32)
    cases = {  # (function, primitive expected on the small shape, its rank)
        "a transcendental function": (lambda x, w: x - mnp.exp(mnp.max(x, axis=1))[:, None],
                                      "exp", 1),
        "read again": (lambda x, w: (x - (mnp.max(x, axis=1) * 2.0)[:, None],
                                     mnp.max(x, axis=1) * 2.0), "mul", 1),
        "an output": (lambda x, w: _rows(mnp.max(x, axis=1) * 2.0, x.shape), "mul", 1),
        "read by a product": (lambda x, w: _rows(mnp.max(x, axis=1) * 2.0, x.shape) @ w,
                              "mul", 1),
    }
    for name, (f, prim, ndim) in cases.items():
        prepared = _prepared(f, x, w)
        if prim is not None:
            assert _small_ops(prepared, prim, ndim), name
        got = mt.jit(f)(x, w)
        want = f(mnp.asarray(x), mnp.asarray(w))
        for a, b in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


def test_nothing_moves_without_compiled_loops(monkeypatch):
    x = np.ones((128, 10), np.float32)
    y = np.eye(10, dtype=np.float32)[np.arange(128) % 10]
    monkeypatch.setattr(native, "available", lambda: False)
    assert _small_ops(_prepared(mt.grad(_xent), x, y), "is_finite", 1)
