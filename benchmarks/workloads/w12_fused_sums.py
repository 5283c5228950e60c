"""W12: sums at the end of an elementwise chain, on 16 MiB of float32 per operand: a row
of squared distances `sum((x - y)**2, axis=-1)` over 4096x1024 (a loss, k-means), and the
bias gradient of a ReLU layer `sum(dh * (h > 0), axis=0)` over 256x16384 (memory-bound:
what computing the sum in the loop that computes its operand is worth).

Ratios divide by the naive NumPy expression (a temporary array per operation); the tuned
NumPy rows (in place, and `np.einsum` for the squared distances, which never writes the
squares) are second rows dividing by those instead. mytorch / JAX: the naive expressions
under jit. PyTorch: eager.
"""

import numpy as np

from benchmarks.harness import Row, Workload
from benchmarks.workloads import _libs

KEY = "W12"
TITLE = "sums ending an elementwise chain"
SIZES = {"full": dict(rows=4096, cols=1024, batch=256, width=16384),
         "tiny": dict(rows=8, cols=64, batch=8, width=64)}


def naive(xp, x, y, dh, h):
    """(squared distances f32[rows], bias gradient f32[width]) for a NumPy-like `xp`."""
    d = x - y
    return xp.sum(d * d, axis=-1), xp.sum(dh * (h > 0), axis=0)


def tuned(x, y, dh, h, tmp, tmp2):
    """The same in NumPy at its best: the difference in a preallocated buffer, its squares
    summed by einsum without being written; the masked product in place, summed."""
    np.subtract(x, y, out=tmp)
    dist = np.einsum("ij,ij->i", tmp, tmp)
    np.greater(h, 0, out=tmp2)
    np.multiply(dh, tmp2, out=tmp2)
    return dist, tmp2.sum(axis=0)


def _make_tuned(x, y, dh, h):
    tmp, tmp2 = np.empty_like(x), np.empty_like(dh)
    return lambda: tuned(x, y, dh, h, tmp, tmp2)


def _make_mytorch(args):
    import mytorch as mt
    import mytorch.numpy as mnp

    g = mt.jit(lambda *a: naive(mnp, *a))
    args = [mnp.asarray(a) for a in args]
    return lambda: g(*args)


def _make_jax(args):
    jax = _libs.jax()
    g = jax.jit(lambda *a: naive(jax.numpy, *a))
    args = [jax.numpy.asarray(a) for a in args]
    return lambda: jax.block_until_ready(g(*args))


def _make_torch(args):
    torch = _libs.torch()
    args = [torch.from_numpy(a) for a in args]
    return lambda: naive(torch, *args)


def build(size="full", libs=None):
    """The W12 workload at SIZES[size]."""
    s = SIZES[size]
    rng = np.random.default_rng(12)
    args = (_libs.f32(rng, (s["rows"], s["cols"])), _libs.f32(rng, (s["rows"], s["cols"])),
            _libs.f32(rng, (s["batch"], s["width"])), _libs.f32(rng, (s["batch"], s["width"])))
    makers = {"numpy_naive": lambda: lambda: naive(np, *args),
              "numpy_tuned": lambda: _make_tuned(*args),
              "mytorch": lambda: _make_mytorch(args),
              "jax": lambda: _make_jax(args),
              "torch": lambda: _make_torch(args)}
    cells = {k: k for k in _libs.LIBS}
    label = (f"{s['rows']}x{s['cols']} distances + {s['batch']}x{s['width']} bias "
             "gradient, f32")
    return Workload(
        KEY, TITLE, _libs.contenders(makers, _libs.selected(libs)), naive(np, *args),
        rows=[Row(f"W12 sums ending a chain, {label}", "numpy_naive", cells,
                  base_label="NumPy naive"),
              Row("W12 (same, other base)", "numpy_tuned", cells,
                  base_label="NumPy tuned", base_vs="numpy_naive")],
        notes=["the first W12 row divides by the naive NumPy expressions; the second by "
               "NumPy at its best (preallocated buffers, einsum for the squared distances)."])
