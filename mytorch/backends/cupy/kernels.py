"""The GPU backend's eager kernels, keyed by primitive.

Each kernel is `fn(*buffers, **params) -> buffer or list of buffers`, as on the CPU. They
are written once for any array module: `xp_of(*buffers)` is CuPy for CuPy buffers and NumPy
for NumPy ones, so the same code runs on a GPU and, with NumPy buffers, on the backend's CPU
twin (`mytorch.backends.cupy.twin`), where the tests check its logic. Elementwise
primitives have no entry here: they run as generated kernels (one-equation fusions).

Modules `kernels_<family>.py` register their kernels with `register(prim)` when imported.
"""

import sys

import numpy as np

KERNELS = {}


def register(*prims):
    """Decorator: `fn` is the eager GPU kernel of each of `prims`."""

    def deco(fn):
        for prim in prims:
            KERNELS[prim] = fn
        return fn

    return deco


def xp_of(*bufs):
    """The array module of `bufs`: `cupy` where any is a CuPy array, else `numpy`."""
    for b in bufs:
        if type(b).__module__.startswith("cupy"):
            return sys.modules["cupy"]
    return np
