"""W5: per-example gradients `vmap(grad(loss))` of logistic regression, dim 256, batch
512: d loss_i / d w f32[batch, dim] and d loss_i / d b f32[batch].

NumPy: the closed form r_i = sigmoid(x_i . w + b) - y_i, dw_i = r_i x_i, db_i = r_i.
mytorch / JAX: `jit(vmap(grad(loss, argnums=(0, 1)), in_axes=(None, None, 0, 0)))`.
PyTorch: `torch.func.vmap(torch.func.grad(...))`, eager.

This supersedes `benchmarks/per_example_grads.py` (which has no bias and times eager
mytorch on its own); that script is kept as it was.
"""

import numpy as np

from benchmarks.harness import Row, Workload
from benchmarks.workloads import _libs

KEY = "W5"
TITLE = "per-example gradients"
SIZES = {"full": dict(dim=256, batch=512), "tiny": dict(dim=5, batch=7)}
IN_AXES = (None, None, 0, 0)


def loss(xp, w, b, x, y):
    """Logistic loss of one example (x f32[dim], y a 0/1 label) for a NumPy-like `xp`."""
    z = xp.dot(x, w) + b
    return xp.logaddexp(0.0, z) - y * z


def numpy_per_example_grads(w, b, xs, ys):
    """(dw f32[batch, dim], db f32[batch]) in closed form, the sigmoid computed in place."""
    r = xs @ w
    r += b
    np.negative(r, out=r)
    np.exp(r, out=r)
    r += 1
    np.reciprocal(r, out=r)
    r -= ys
    return r[:, None] * xs, r


def _per_example(vmap, grad, xp):
    return vmap(grad(lambda w, b, x, y: loss(xp, w, b, x, y), argnums=(0, 1)), IN_AXES)


def _make_mytorch(args):
    import mytorch as mt
    import mytorch.numpy as mnp

    f = mt.jit(_per_example(mt.vmap, mt.grad, mnp))
    args = [mnp.asarray(a) for a in args]
    return lambda: f(*args)


def _make_jax(args):
    jax = _libs.jax()
    f = jax.jit(_per_example(jax.vmap, jax.grad, jax.numpy))
    args = [jax.numpy.asarray(a) for a in args]
    return lambda: jax.block_until_ready(f(*args))


def _make_torch(args):
    torch = _libs.torch()
    from torch.func import grad, vmap

    def tloss(w, b, x, y):
        z = torch.dot(x, w) + b
        return torch.nn.functional.softplus(z) - y * z  # softplus(z) = logaddexp(0, z)

    f = vmap(grad(tloss, argnums=(0, 1)), in_dims=IN_AXES)
    args = [torch.from_numpy(a) for a in args]
    return lambda: f(*args)


def build(size="full", libs=None):
    """The W5 workload at SIZES[size]."""
    s = SIZES[size]
    rng = np.random.default_rng(5)
    w = _libs.f32(rng, s["dim"], 1 / np.sqrt(s["dim"]))
    b = np.float32(0.1)
    xs = _libs.f32(rng, (s["batch"], s["dim"]))
    ys = (rng.random(s["batch"]) > 0.5).astype(np.float32)
    args = (w, np.asarray(b), xs, ys)
    makers = {"numpy": lambda: lambda: numpy_per_example_grads(w, b, xs, ys),
              "mytorch": lambda: _make_mytorch(args),
              "jax": lambda: _make_jax(args),
              "torch": lambda: _make_torch(args)}
    return Workload(
        KEY, TITLE, _libs.contenders(makers, _libs.selected(libs)),
        numpy_per_example_grads(w, b, xs, ys),
        rows=[Row(f"W5 per-example grads, logistic regression dim {s['dim']}, "
                  f"batch {s['batch']}", "numpy", {k: k for k in _libs.LIBS})],
        notes=["PyTorch: torch.func.vmap(grad) eager, softplus for logaddexp(0, z)."])
