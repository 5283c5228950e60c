"""W8: reverse-mode gradient through a `lax.while_loop` whose trip count depends on the data
(a fixed-point iteration run to convergence), under jit.

Iteration: h <- tanh(x Wx + h Wh + b) from h = 0 until max|h_new - h| < 1e-5 (47
steps here), batch 8, input 16, hidden 32; loss = sum(h_final^2). Gradients with respect
to (Wx, Wh, b) through every iteration (backpropagation through the loop, not the
implicit-function derivative).
NumPy: the loop keeping every h, then backpropagation by hand.
mytorch: `jit(grad(loss))` with the iteration as `lax.while_loop` (the compiled forward
loop records each step's residuals on a tape that the compiled backward loop reads back),
and the same with `checkpoint_every=16` (every 16th carry kept, segments replayed).
JAX cannot differentiate a while_loop in reverse mode. PyTorch: eager autograd of the
Python loop (its predicate read on the host every step).
"""

import numpy as np

from benchmarks.harness import Row, Workload
from benchmarks.workloads import _libs

KEY = "W8"
TITLE = "while-loop gradient"
# libraries with no version of this workload, and why (the smoke test checks the claim)
CANNOT = {"jax": "JAX cannot reverse-differentiate lax.while_loop"}
TOL = 1e-5
SIZES = {"full": dict(batch=8, n_in=16, hidden=32, max_steps=2000),
         "tiny": dict(batch=2, n_in=3, hidden=4, max_steps=50)}


def numpy_grads(wx, wh, b, x, max_steps):
    """(dWx, dWh, db) of sum(h_final^2) by the forward loop and a manual backward pass."""
    u = x @ wx + b  # the loop-invariant part of the pre-activation
    hs = [np.zeros((x.shape[0], wh.shape[0]), np.float32)]
    while len(hs) <= max_steps:
        h = np.tanh(u + hs[-1] @ wh)
        done = np.abs(h - hs[-1]).max() < TOL
        hs.append(h)
        if done:
            break
    dh = 2.0 * hs[-1]
    du, dwh = np.zeros_like(u), np.zeros_like(wh)
    for t in range(len(hs) - 1, 0, -1):
        dz = dh * (1.0 - hs[t] * hs[t])
        du += dz
        dwh += hs[t - 1].T @ dz
        dh = dz @ wh.T
    return x.T @ du, dwh, du.sum(axis=0)


def loss(xp, while_loop, wx, wh, b, x, max_steps, **kw):
    """sum(h_final^2) of the iteration, for a NumPy-like `xp` and its `while_loop`."""
    u = x @ wx + b
    h0 = xp.zeros((x.shape[0], wh.shape[0]), np.float32)

    def cond(c):
        i, h, delta = c
        return (delta >= TOL) & (i < max_steps)

    def body(c):
        i, h, _ = c
        new = xp.tanh(u + h @ wh)
        return i + 1, new, xp.max(xp.abs(new - h))

    _, h, _ = while_loop(cond, body, (0, h0, xp.asarray(np.float32(np.inf))), **kw)
    return xp.sum(h * h)


def _make_mytorch(args, **kw):
    import mytorch as mt
    import mytorch.numpy as mnp
    from mytorch import lax

    *arrays, max_steps = args
    g = mt.jit(mt.grad(lambda *a: loss(mnp, lax.while_loop, *a, max_steps, **kw),
                       argnums=(0, 1, 2)))
    arrays = [mnp.asarray(a) for a in arrays]
    return lambda: g(*arrays)


def _make_torch(args):
    torch = _libs.torch()
    *arrays, max_steps = args
    wx, wh, b, x = [torch.from_numpy(a.copy()) for a in arrays]
    params = [p.requires_grad_() for p in (wx, wh, b)]

    def step():
        u = x @ params[0] + params[2]
        h = torch.zeros((x.shape[0], wh.shape[0]))
        for _ in range(max_steps):
            new = torch.tanh(u + h @ params[1])
            done = (new - h).abs().max().item() < TOL
            h = new
            if done:
                break
        return torch.autograd.grad((h * h).sum(), params)

    return step


def build(size="full", libs=None):
    """The W8 workload at SIZES[size]."""
    s = SIZES[size]
    rng = np.random.default_rng(8)
    q, _ = np.linalg.qr(rng.standard_normal((s["hidden"], s["hidden"])))
    args = (_libs.f32(rng, (s["n_in"], s["hidden"]), 0.3),
            q.astype(np.float32),  # orthogonal: with tanh, the iteration converges
            _libs.f32(rng, (s["hidden"],), 0.1),
            _libs.f32(rng, (s["batch"], s["n_in"])),
            s["max_steps"])
    makers = {"numpy": lambda: lambda: numpy_grads(*args),
              "mytorch": lambda: _make_mytorch(args),
              "mytorch_ckpt": lambda: _make_mytorch(args, checkpoint_every=16),
              "torch": lambda: _make_torch(args)}
    return Workload(
        KEY, TITLE, _libs.contenders(makers, _libs.selected(libs)), numpy_grads(*args),
        rows=[Row(f"W8 fixed point (hidden {s['hidden']}) to convergence, jit(grad)",
                  "numpy", {"mytorch": "mytorch", "torch": "torch"}),
              Row("W8 the same with checkpoint_every=16", "numpy",
                  {"mytorch": "mytorch_ckpt"})],
        notes=["JAX has no reverse mode for while_loop (column empty). NumPy: the loop "
               "keeping every iterate and backpropagation by hand; PyTorch: eager autograd "
               "of the Python loop."],
        rtol=1e-3, atol=1e-3)
