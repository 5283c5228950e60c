"""Shared helpers of the workloads: which libraries take part, their single-threaded
imports, random inputs and the standard contenders."""

import importlib.util

import numpy as np

from benchmarks.harness import Contender

LIBS = ("mytorch", "jax", "torch")


def installed(lib):
    """Whether `lib` can be imported (without importing it)."""
    return importlib.util.find_spec(lib) is not None


def selected(libs):
    """The libraries to compare with NumPy: `libs`, or mytorch and every installed one."""
    if libs is None:
        return tuple(lib for lib in LIBS if lib == "mytorch" or installed(lib))
    unknown = set(libs) - set(LIBS)
    if unknown:
        raise ValueError(f"unknown libraries {sorted(unknown)}; choose from {LIBS}")
    return tuple(libs)


def torch():
    """torch, limited to one intra-op and one inter-op thread."""
    import torch as t

    if t.get_num_threads() != 1:
        t.set_num_threads(1)
    return t


def jax():
    """jax on the CPU, 32-bit."""
    import jax as j

    j.config.update("jax_platforms", "cpu")
    return j


def f32(rng, shape, scale=1.0):
    """A float32 array of normal samples times `scale`."""
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def one_hot(rng, batch, classes):
    """f32[batch, classes] one-hot rows of random labels."""
    return np.eye(classes, dtype=np.float32)[rng.integers(0, classes, batch)]


def contenders(makers, libs):
    """Steady-state contenders: `makers` maps "numpy"/library names, or variants named
    "<library>_<variant>", to factories; the libraries not in `libs` and their variants are
    left out (NumPy and its variants always stay)."""
    return [Contender(name, make) for name, make in makers.items()
            if name.split("_")[0] in ("numpy", *libs)]


def copies(arrays):
    """Fresh copies of a list of NumPy arrays (each contender gets its own inputs, so
    in-place NumPy references cannot disturb the others)."""
    return [np.array(a, copy=True) for a in arrays]
