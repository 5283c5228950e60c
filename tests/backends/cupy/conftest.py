"""Fixtures for the GPU backend's tests without a GPU: `twin` makes the "gpu" platform the
CPU twin (generated CUDA kernels built by the host C++ compiler, NumPy buffers) for one
test and restores the probe after it. Nothing run on it stands for a GPU run."""

import shutil

import pytest

from mytorch.backends import cupy as gpu_backend
from mytorch.core import backend as core_backend


def _twin(count, tmp_path_factory, monkeypatch):
    if shutil.which("g++") is None:
        pytest.skip("the CPU twin needs a host C++ compiler (g++), which is absent")
    monkeypatch.setenv("MYTORCH_TWIN_CACHE", str(tmp_path_factory.getbasetemp() / "twin"))
    previous = core_backend._BACKENDS.get("gpu")
    devices = gpu_backend.use_twin(count)
    yield devices
    if previous is not None:
        core_backend.register_backend(previous)
    else:
        gpu_backend.stop_twin()


@pytest.fixture
def twin(tmp_path_factory, monkeypatch):
    """The twin's device 0 (a Device of platform "gpu" on the CPU twin)."""
    for devices in _twin(1, tmp_path_factory, monkeypatch):
        yield devices[0]


@pytest.fixture
def twin2(tmp_path_factory, monkeypatch):
    """Two twin devices (pmap's replicas on threads, the thread communicator)."""
    yield from _twin(2, tmp_path_factory, monkeypatch)
