"""The GPU backend's CPU twin for a test (generated CUDA kernels built by the host C++
compiler, NumPy buffers): `twin_devices(count, cache)` registers it as the "gpu" platform and
restores what was there afterwards. Nothing run on it stands for a GPU run."""

import contextlib
import shutil

import pytest

from mytorch.backends import cupy as gpu_backend
from mytorch.core import backend as core_backend


@contextlib.contextmanager
def twin_devices(count, cache):
    """`count` twin devices inside the block, built libraries cached in `cache` (skips the
    test where there is no host C++ compiler)."""
    if shutil.which("g++") is None:
        pytest.skip("the CPU twin needs a host C++ compiler (g++), which is absent")
    patch = pytest.MonkeyPatch()
    patch.setenv("MYTORCH_TWIN_CACHE", str(cache))
    previous = core_backend._BACKENDS.get("gpu")
    try:
        yield gpu_backend.use_twin(count)
    finally:
        if previous is not None:
            core_backend.register_backend(previous)
        else:
            gpu_backend.stop_twin()
        patch.undo()
