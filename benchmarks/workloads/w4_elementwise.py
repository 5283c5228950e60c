"""W4: an elementwise chain `tanh(x)*0.5 + x*sigmoid(x) - 0.1*x**2` on 4M float32
elements (memory-bound: what fusion and buffer reuse are worth).

Ratios divide by the naive NumPy expression (one temporary array per operation). The
hand-tuned NumPy version (in-place ufuncs with out=, two preallocated buffers, one
division for x*sigmoid(x)) is a second row, the ratios of which divide by it instead.
mytorch / JAX: the naive expression under jit. PyTorch: the naive expression, eager.
"""

import numpy as np

from benchmarks.harness import Row, Workload
from benchmarks.workloads import _libs

KEY = "W4"
TITLE = "elementwise chain"
SIZES = {"full": dict(n=4 * 2**20), "tiny": dict(n=1000)}


def naive(xp, x):
    """The chain as anyone writes it, for a NumPy-like module `xp` (numpy, mytorch.numpy,
    jax.numpy, torch)."""
    return xp.tanh(x) * 0.5 + x * (1 / (1 + xp.exp(-x))) - 0.1 * x**2


def tuned(x, out, tmp):
    """The chain with every operation in place on two preallocated f32 buffers:
    out = 0.5 tanh(x); tmp = x / (1 + exp(-x)) (= x sigmoid(x)); out += tmp;
    tmp = 0.1 x*x; out -= tmp. Returns out."""
    np.tanh(x, out=out)
    out *= 0.5
    np.negative(x, out=tmp)
    np.exp(tmp, out=tmp)
    tmp += 1
    np.divide(x, tmp, out=tmp)
    out += tmp
    np.multiply(x, x, out=tmp)
    tmp *= 0.1
    out -= tmp
    return out


def _make_tuned(x):
    out, tmp = np.empty_like(x), np.empty_like(x)
    return lambda: tuned(x, out, tmp)


def _make_mytorch(x):
    import mytorch as mt
    import mytorch.numpy as mnp

    g = mt.jit(lambda x: naive(mnp, x))
    x = mnp.asarray(x)
    return lambda: g(x)


def _make_jax(x):
    jax = _libs.jax()
    g = jax.jit(lambda x: naive(jax.numpy, x))
    x = jax.numpy.asarray(x)
    return lambda: g(x).block_until_ready()


def _make_torch(x):
    torch = _libs.torch()
    x = torch.from_numpy(x)
    return lambda: naive(torch, x)


def build(size="full", libs=None):
    """The W4 workload at SIZES[size]."""
    n = SIZES[size]["n"]
    x = _libs.f32(np.random.default_rng(4), n)
    makers = {"numpy_naive": lambda: lambda: naive(np, x),
              "numpy_tuned": lambda: _make_tuned(x),
              "mytorch": lambda: _make_mytorch(x),
              "jax": lambda: _make_jax(x),
              "torch": lambda: _make_torch(x)}
    label = f"{n / 2**20:g}M" if n >= 2**20 else str(n)
    cells = {k: k for k in _libs.LIBS}
    return Workload(
        KEY, TITLE, _libs.contenders(makers, _libs.selected(libs)), naive(np, x),
        rows=[Row(f"W4 elementwise chain, {label} f32", "numpy_naive", cells,
                  base_label="NumPy naive"),
              Row("W4 (same, other base)", "numpy_tuned", cells,
                  base_label="NumPy in-place", base_vs="numpy_naive")],
        notes=["the first W4 row divides by the naive NumPy expression; the second by the "
               "hand-tuned in-place NumPy version (out=, preallocated buffers)."])
