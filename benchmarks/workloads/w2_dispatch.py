"""W2: per-call overhead: `x * 2 + 1` on 8 float32 elements, where the arithmetic is
negligible and the time is what a call costs (argument checks, cache lookup, dispatch).

NumPy: the bare expression. mytorch / JAX: a jitted function (JAX waits for the result).
PyTorch: the eager expression.
"""

import numpy as np

from benchmarks.harness import Row, Workload
from benchmarks.workloads import _libs

KEY = "W2"
TITLE = "jit call overhead"
SIZES = {"full": dict(n=8), "tiny": dict(n=8)}


def f(x):
    """The function every library runs."""
    return x * 2 + 1


def _make_mytorch(x):
    import mytorch as mt
    import mytorch.numpy as mnp

    g = mt.jit(f)
    x = mnp.asarray(x)
    return lambda: g(x)


def _make_jax(x):
    jax = _libs.jax()
    g = jax.jit(f)
    x = jax.numpy.asarray(x)
    return lambda: g(x).block_until_ready()


def _make_torch(x):
    torch = _libs.torch()
    x = torch.from_numpy(x)
    return lambda: f(x)


def build(size="full", libs=None):
    """The W2 workload at SIZES[size]."""
    n = SIZES[size]["n"]
    x = np.arange(n, dtype=np.float32) / n
    makers = {"numpy": lambda: lambda: f(x),
              "mytorch": lambda: _make_mytorch(x),
              "jax": lambda: _make_jax(x),
              "torch": lambda: _make_torch(x)}
    return Workload(
        KEY, TITLE, _libs.contenders(makers, _libs.selected(libs)), f(x),
        rows=[Row(f"W2 jitted x*2+1, {n} f32 (per call)", "numpy",
                  {k: k for k in _libs.LIBS})],
        notes=["NumPy and PyTorch run the bare expression eagerly (two operations); mytorch "
               "and JAX call one jitted function."])
