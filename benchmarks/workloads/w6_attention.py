"""W6: attention forward and backward: batch 4, 8 heads, sequence 256, head dim 64,
float32. out = softmax(q k^T / sqrt(d)) v, loss = sum(out * g) for a fixed g; the result
is the gradient with respect to (q, k, v).

NumPy: forward and a hand-written backward with batched matmuls, softmax in place.
mytorch / JAX: `jit(grad(loss, argnums=(0, 1, 2)))` with scipy.special / jax.nn softmax.
PyTorch: eager autograd of the same explicit formulation (not scaled_dot_product_attention).
"""

import numpy as np

from benchmarks.harness import Row, Workload
from benchmarks.workloads import _libs

KEY = "W6"
TITLE = "attention fwd+bwd"
SIZES = {"full": dict(batch=4, heads=8, seq=256, dim=64),
         "tiny": dict(batch=2, heads=3, seq=5, dim=4)}


def loss(xp, softmax, q, k, v, g):
    """sum(attention(q, k, v) * g) for f32[batch, heads, seq, dim] inputs."""
    s = q @ xp.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    return xp.sum((softmax(s, axis=-1) @ v) * g)


def numpy_grads(q, k, v, g):
    """(dq, dk, dv) by hand: p = softmax(s); dv = p^T g; dp = g v^T;
    ds = p * (dp - rowsum(dp * p)) / sqrt(d); dq = ds k; dk = ds^T q."""
    scale = 1.0 / np.sqrt(q.shape[-1])
    p = q @ k.swapaxes(-1, -2)
    p *= scale
    p -= p.max(axis=-1, keepdims=True)
    np.exp(p, out=p)
    p /= p.sum(axis=-1, keepdims=True)
    dv = p.swapaxes(-1, -2) @ g
    ds = g @ v.swapaxes(-1, -2)
    row = np.einsum("...ij,...ij->...i", ds, p)[..., None]
    ds -= row
    ds *= p
    ds *= scale
    return ds @ k, ds.swapaxes(-1, -2) @ q, dv


def _make_mytorch(args):
    import mytorch as mt
    import mytorch.numpy as mnp
    from mytorch.scipy.special import softmax

    f = mt.jit(mt.grad(lambda q, k, v, g: loss(mnp, softmax, q, k, v, g), argnums=(0, 1, 2)))
    args = [mnp.asarray(a) for a in args]
    return lambda: f(*args)


def _make_jax(args):
    jax = _libs.jax()
    f = jax.jit(jax.grad(lambda q, k, v, g: loss(jax.numpy, jax.nn.softmax, q, k, v, g),
                         argnums=(0, 1, 2)))
    args = [jax.numpy.asarray(a) for a in args]
    return lambda: jax.block_until_ready(f(*args))


def _make_torch(args):
    torch = _libs.torch()
    q, k, v = [torch.from_numpy(a).requires_grad_() for a in args[:3]]
    g = torch.from_numpy(args[3])

    def step():
        s = q @ k.transpose(-1, -2) / np.sqrt(q.shape[-1])
        out = torch.softmax(s, dim=-1) @ v
        return torch.autograd.grad((out * g).sum(), (q, k, v))

    return step


def build(size="full", libs=None):
    """The W6 workload at SIZES[size]."""
    s = SIZES[size]
    rng = np.random.default_rng(6)
    shape = (s["batch"], s["heads"], s["seq"], s["dim"])
    args = tuple(_libs.f32(rng, shape) for _ in range(4))
    makers = {"numpy": lambda: lambda: numpy_grads(*args),
              "mytorch": lambda: _make_mytorch(args),
              "jax": lambda: _make_jax(args),
              "torch": lambda: _make_torch(args)}
    return Workload(
        KEY, TITLE, _libs.contenders(makers, _libs.selected(libs)), numpy_grads(*args),
        rows=[Row(f"W6 attention fwd+bwd, {s['batch']}x{s['heads']} heads, seq "
                  f"{s['seq']}, d {s['dim']}", "numpy", {k: k for k in _libs.LIBS})],
        rtol=1e-3, atol=1e-4)
