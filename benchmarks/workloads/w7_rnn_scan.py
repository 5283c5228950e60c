"""W7: gradient of a small RNN unrolled by `lax.scan` over 1,000 steps (the control-flow
issue's target: jit(grad) within 2x of NumPy with a hand-written backward pass).

Cell: h_t = tanh(x_t Wx + h_{t-1} Wh + b), batch 8, input 16, hidden 32; loss = sum over
steps of sum(h_t^2). Gradients with respect to (Wx, Wh, b).
NumPy: forward loop keeping every h_t, then backpropagation through time by hand.
mytorch / JAX: `jit(grad(loss))` with the recurrence written as `lax.scan`.
PyTorch: eager autograd of the Python loop.
"""

import numpy as np

from benchmarks.harness import Row, Workload
from benchmarks.workloads import _libs

KEY = "W7"
TITLE = "RNN scan gradient"
SIZES = {"full": dict(steps=1000, batch=8, n_in=16, hidden=32),
         "tiny": dict(steps=5, batch=2, n_in=3, hidden=4)}


def numpy_grads(wx, wh, b, xs, h0):
    """(dWx, dWh, db) of the loss by a forward loop and a manual backward pass."""
    hs = [h0]
    for x in xs:
        hs.append(np.tanh(x @ wx + hs[-1] @ wh + b))
    dwx, dwh, db = np.zeros_like(wx), np.zeros_like(wh), np.zeros_like(b)
    dh = np.zeros_like(h0)
    for t in range(len(xs) - 1, -1, -1):
        h = hs[t + 1]
        dh += 2.0 * h  # d sum(h_t^2) / d h_t
        dz = dh * (1.0 - h * h)
        dwx += xs[t].T @ dz
        dwh += hs[t].T @ dz
        db += dz.sum(axis=0)
        dh = dz @ wh.T
    return dwx, dwh, db


def loss(xp, scan, wx, wh, b, xs, h0):
    """sum_t sum(h_t^2) of the RNN, for a NumPy-like `xp` and its library's `scan`."""
    def cell(h, x):
        h = xp.tanh(x @ wx + h @ wh + b)
        return h, xp.sum(h * h)

    _, per_step = scan(cell, h0, xs)
    return xp.sum(per_step)


def _make_mytorch(args):
    import mytorch as mt
    import mytorch.numpy as mnp
    from mytorch import lax

    g = mt.jit(mt.grad(lambda *a: loss(mnp, lax.scan, *a), argnums=(0, 1, 2)))
    args = [mnp.asarray(a) for a in args]
    return lambda: g(*args)


def _make_jax(args):
    jax = _libs.jax()
    g = jax.jit(jax.grad(lambda *a: loss(jax.numpy, jax.lax.scan, *a), argnums=(0, 1, 2)))
    args = [jax.numpy.asarray(a) for a in args]
    return lambda: jax.block_until_ready(g(*args))


def _make_torch(args):
    torch = _libs.torch()
    wx, wh, b, xs, h0 = [torch.from_numpy(a.copy()) for a in args]
    params = [p.requires_grad_() for p in (wx, wh, b)]

    def step():
        h, total = h0, 0.0
        for x in xs:
            h = torch.tanh(x @ params[0] + h @ params[1] + params[2])
            total = total + (h * h).sum()
        return torch.autograd.grad(total, params)

    return step


def build(size="full", libs=None):
    """The W7 workload at SIZES[size]."""
    s = SIZES[size]
    rng = np.random.default_rng(7)
    args = (_libs.f32(rng, (s["n_in"], s["hidden"]), 0.3),
            _libs.f32(rng, (s["hidden"], s["hidden"]), 0.3),
            _libs.f32(rng, (s["hidden"],), 0.1),
            _libs.f32(rng, (s["steps"], s["batch"], s["n_in"])),
            np.zeros((s["batch"], s["hidden"]), np.float32))
    makers = {"numpy": lambda: lambda: numpy_grads(*args),
              "mytorch": lambda: _make_mytorch(args),
              "jax": lambda: _make_jax(args),
              "torch": lambda: _make_torch(args)}
    return Workload(
        KEY, TITLE, _libs.contenders(makers, _libs.selected(libs)), numpy_grads(*args),
        rows=[Row(f"W7 RNN (hidden {s['hidden']}) {s['steps']}-step scan, jit(grad)",
                  "numpy", {k: k for k in _libs.LIBS})],
        notes=["NumPy: forward loop and backpropagation through time by hand; PyTorch: "
               "eager autograd of the Python loop."],
        rtol=1e-3, atol=5e-3)  # 1,000 float32 steps: libraries round differently
