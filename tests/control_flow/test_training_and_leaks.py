"""Control flow in use: an RNN trained with scan (against NumPy backpropagation through
time), and tracers that leak out of loop bodies and branches."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.errors import UnexpectedTracerError


def _rnn_loss(params, xs, h0):
    wx, wh, b = params

    def cell(h, x):
        h = mnp.tanh(x @ wx + h @ wh + b)
        return h, mnp.sum(h * h)

    _, per_step = lax.scan(cell, h0, xs)
    return mnp.sum(per_step)


def _numpy_bptt(wx, wh, b, xs, h0):
    hs = [h0]
    for x in xs:
        hs.append(np.tanh(x @ wx + hs[-1] @ wh + b))
    grads = [np.zeros_like(wx), np.zeros_like(wh), np.zeros_like(b)]
    dh = np.zeros_like(h0)
    for t in range(len(xs) - 1, -1, -1):
        dh = dh + 2.0 * hs[t + 1]
        dz = dh * (1.0 - hs[t + 1] ** 2)
        grads[0] += xs[t].T @ dz
        grads[1] += hs[t].T @ dz
        grads[2] += dz.sum(axis=0)
        dh = dz @ wh.T
    return grads


def test_rnn_trained_with_scan_follows_numpy_backprop_through_time(x64):
    rng = np.random.default_rng(0)
    params = [rng.standard_normal((3, 5)) * 0.4, rng.standard_normal((5, 5)) * 0.4,
              rng.standard_normal(5) * 0.1]
    xs, h0 = rng.standard_normal((20, 2, 3)), np.zeros((2, 5))
    step = mt.jit(lambda p, xs, h0: [w - 0.01 * g for w, g in
                                     zip(p, mt.grad(_rnn_loss)(p, xs, h0))])
    mine = [mnp.asarray(p) for p in params]
    ref = [p.copy() for p in params]
    losses = []
    for _ in range(10):
        losses.append(float(_rnn_loss(mine, mnp.asarray(xs), mnp.asarray(h0))))
        mine = step(mine, mnp.asarray(xs), mnp.asarray(h0))
        ref = [w - 0.01 * g for w, g in zip(ref, _numpy_bptt(*ref, xs, h0))]
    for got, want in zip(mine, ref):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-12)
    assert losses[-1] < losses[0]  # training lowers the loss


@pytest.mark.parametrize("which", ["scan", "while_loop", "cond"])
def test_a_tracer_leaked_from_a_body_is_reported(which):
    leaked = []

    def keep(v):
        leaked.append(v)
        return v

    x = mnp.ones(3)
    if which == "scan":
        lax.scan(lambda c, t: (keep(c) + t, c), x, mnp.ones((2, 3)))
    elif which == "while_loop":
        lax.while_loop(lambda c: c[1] < 2, lambda c: (keep(c[0]) * 2.0, c[1] + 1), (x, 0))
    else:
        lax.cond(True, lambda v: keep(v) + 1.0, lambda v: v, x)
    with pytest.raises(UnexpectedTracerError,
                       match=rf"created in lax\.{which}.*used after that transformation ended"):
        leaked[0] + 1.0
